"""A Sphinx extension of the book's build: the source archive a reader of the website downloads.

Every page of the site cites ``epm_lib``, ``results/``, ``benchmarks/`` and ``tests/``, and a
downloaded ``.ipynb`` runs only beside ``epm_lib``. So the build writes
``epm-book-source.tar.gz`` into the site's root: the repository's files as ``git ls-files`` lists
them (or, outside a git checkout, the folders and files of :data:`INCLUDE`), under one folder
``epm-book/``, with fixed times, owners and order, so that the same sources give the same archive.
MovieLens is never in it (its terms forbid redistribution; ``data/`` holds only its provenance).
The page ``chapters/get_the_code`` links to it; ``.ci/check_site.py`` checks that it is there and
holds what a chapter needs.

Enabled in ``_config.yml`` (``sphinx: local_extensions``).
"""
from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

#: the archive's name, in the site's root
ARCHIVE = "epm-book-source.tar.gz"
#: what the archive holds outside a git checkout (relative to the book's root)
INCLUDE = ("README.md", "ARCHITECTURE.md", "requirements.txt", "pyproject.toml", "_config.yml", "_toc.yml",
           "references.bib", "intro.ipynb", "_static", "chapters", "epm_lib", "results", "benchmarks", "data",
           "tests", ".ci")
#: never archived: builds, environments, caches, MovieLens files
EXCLUDE_PARTS = {"_build", ".venv", ".venv2", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
                 ".jupyter_cache", ".chains", "ml-100k", "ml-1m"}


def source_files(root: Path) -> list[Path]:
    """The files of the book at ``root``, sorted: ``git ls-files`` in a checkout, else :data:`INCLUDE`."""
    root = Path(root)
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60)
        files = [root / f for f in out.stdout.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = []
        for name in INCLUDE:
            p = root / name
            files += [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    keep = [f for f in files if f.is_file() and not (set(f.relative_to(root).parts) & EXCLUDE_PARTS)]
    return sorted(keep, key=lambda f: f.relative_to(root).as_posix())


def write_archive(root: Path, target: Path) -> int:
    """Write the source archive of the book at ``root`` to ``target``; returns the number of files."""
    files = source_files(root)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in files:
            info = tarfile.TarInfo(f"epm-book/{f.relative_to(root).as_posix()}")
            data = f.read_bytes()
            info.size, info.mtime, info.mode = len(data), 0, 0o755 if f.stat().st_mode & 0o111 else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buf.getvalue())
    return len(files)


def _build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util import logging
    n = write_archive(Path(app.srcdir), Path(app.outdir) / ARCHIVE)
    logging.getLogger(__name__).info(f"epm-book: wrote {ARCHIVE} ({n} files)")


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
