"""Open every chapter page of the built book in headless Chromium and check what a reader sees.

Fails (exit 1) when a chapter page has no equation rendered by MathJax
(``<mjx-container``), or when a figure is missing: an ``<img>`` whose file is
absent or empty, or fewer images on the page than image outputs in the
chapter's notebook. Usage: ``python .ci/check_site.py _build/html``.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

NO_MATH = {"bibliography"}          # pages that legitimately hold no equation
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-quic", "--virtual-time-budget=5000", "--dump-dom",
]


def dump_dom(page: Path) -> str:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(
            ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or "<html" not in out.stdout:
        raise RuntimeError(f"chromium failed on {page}: {out.stderr[-2000:]}")
    return out.stdout


def notebook_images(nb_path: Path) -> int:
    if not nb_path.exists():
        return 0
    nb = json.loads(nb_path.read_text())
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if "image/png" in o.get("data", {}))


def main(site: str) -> int:
    site_dir = Path(site)
    pages = sorted((site_dir / "chapters").glob("*.html"))
    if not pages:
        print(f"no chapter pages under {site_dir / 'chapters'}")
        return 1
    failures = []
    for page in pages:
        dom = dump_dom(page)
        n_math = dom.count("<mjx-container")
        imgs = re.findall(r'<img[^>]*\ssrc="([^"]+)"', dom)
        missing = []
        for src in imgs:
            url = urlparse(src)
            if url.scheme in ("http", "https"):
                missing.append(f"{src} (remote)")
                continue
            if url.scheme == "data":
                continue
            target = Path(unquote(url.path)) if url.scheme == "file" else (page.parent / unquote(url.path))
            if not target.is_file() or target.stat().st_size == 0:
                missing.append(src)
        expected = notebook_images(Path("chapters") / (page.stem + ".ipynb"))
        problems = []
        if n_math == 0 and page.stem not in NO_MATH:
            problems.append("no rendered equation (<mjx-container)")
        if missing:
            problems.append(f"missing image files: {missing}")
        if len(imgs) < expected:
            problems.append(f"{len(imgs)} images on the page, {expected} figures in the notebook")
        status = "FAIL" if problems else "ok"
        print(f"{status:4s} {page.name}: {n_math} equations, {len(imgs)} images (notebook figures: {expected})"
              + ("; " + "; ".join(problems) if problems else ""))
        if problems:
            failures.append(page.name)
    print(f"site check: {len(pages)} chapter pages, {len(failures)} with problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "_build/html"))
