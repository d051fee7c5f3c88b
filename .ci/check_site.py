"""Open every chapter page of the built book, and its landing page (``intro.html``, from
``intro.ipynb``), in headless Chromium and check what a reader sees.

Fails (exit 1) when a page

* has no equation rendered by MathJax (``<mjx-container``), or shows a MathJax
  error (``mjx-merror``);
* misses a figure: an ``<img>`` whose file is absent or empty, or fewer images on
  the page than image outputs in the chapter's notebook;
* prints on stderr, an error or a Python warning in an output (issue 21, item 2);
* (the site as a whole) lacks the source archive ``epm-book-source.tar.gz`` in its root, holding
  every chapter, ``epm_lib`` and the records, linked from ``chapters/get_the_code.html``;
* shows a Markdown table as raw text (a paragraph starting with ``|`` that holds a ``|---|``
  row: a ``text/markdown`` output not rendered as a table);
* is longer than ``MAX_SCREENS`` screens of a 1280 x 1000 px window (issue 21, item 4);
* overflows (issue 21, item 2), measured in the browser after MathJax has
  typeset the page:

  - at a 1280 px window, a display equation (``mjx-container[display="true"]``)
    whose content is wider than its box (the theme then scrolls it, and a reader
    sees it cut): split it over aligned lines;
  - at 1280 px, a printed output (``<pre>``) wider than the column outside a cell tagged
    ``text-table`` (printed lines wrap, ``_static/overflow.css``; issue 29);
  - at 1280 px and at 390 px (a phone), a table or a printed output (``<pre>``
    of a code cell) wider than the content column or than its box, unless a box
    between it and the column scrolls sideways (``overflow-x: auto|scroll``); a
    box that clips (``hidden``/``clip``) or nothing at all fails;
  - at 390 px, a display equation wider than its box that does not scroll in it,
    or a page that scrolls sideways;
  - at 390 px, a figure of a code cell shown narrower than ``MIN_FIGURE`` px (or its own width),
    whose text would be too small to read, or wider than the column outside a scrolling box
    (issue 32).

The measurement runs in a copy of each page (a hidden file ``.check-*.html`` next
to it, removed afterwards) with a script added before ``</body>``; the 390 px
view is the same copy in a 390 px ``<iframe>`` (headless Chromium does not open a
window narrower than 500 px).  The script waits for ``MathJax.startup.promise``
(pages without MathJax are measured at once) and gives up after 20 s, which is
itself a failure.  Usage: ``python .ci/check_site.py _build/html``.
"""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlparse

NO_MATH = {"bibliography", "get_the_code"}   # pages that legitimately hold no equation
ARCHIVE = "epm-book-source.tar.gz"  # the source archive built with the site (epm_lib.book.source_archive)
#: what the archive must hold for any chapter to run
ARCHIVE_NEEDS = ("epm-book/requirements.txt", "epm-book/epm_lib/__init__.py", "epm-book/intro.ipynb",
                 "epm-book/chapters/30_your_network.ipynb", "epm-book/results/README.md")
LANDING = "intro.html"              # the landing page (root of _toc.yml), built from intro.ipynb
WIDE, NARROW = 1280, 390            # window widths measured (px)
SLACK = 1                           # px of rounding allowed
SCREEN = 1000                       # px: the height of the 1280 px window, one screen
MAX_SCREENS = 12                    # issue 21: a chapter runs to about 12 screens at most
#: px: the least width of a code cell's figure at 390 px (the figures are drawn at 150 dpi with 10 pt
#: text, 20.8 px; at 540 px of a 1,050 px figure the text is about 11 px)
MIN_FIGURE = 540
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-quic", "--virtual-time-budget=30000", "--dump-dom",
]
REPORT_ID = "site-check-report"

# Runs in the page.  Writes a JSON report into <pre id=REPORT_ID>, or, inside the
# 390 px iframe, posts it to the parent page, which writes it there.
MEASURE_JS = r"""
<script>
(function () {
  var SLACK = %(slack)d, LIMIT_MS = 20000;
  function texOf(container) {
    try {
      var items = MathJax.startup.document.math.toArray ? MathJax.startup.document.math.toArray()
                                                        : Array.from(MathJax.startup.document.math);
      for (var i = 0; i < items.length; i++)
        if (items[i].typesetRoot === container) return items[i].math;
    } catch (e) {}
    return (container.getAttribute('aria-label') || container.textContent || '');
  }
  function clean(s) { return s.replace(/\s+/g, ' ').trim().slice(0, 160); }
  function scroller(el, stop) {
    // the first box from el (inclusive) up to stop that does not let content
    // overflow visibly: 'scroll' if it scrolls sideways, 'clip' if it cuts
    for (var a = el; a && a !== stop.parentElement; a = a.parentElement) {
      var o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return {kind: 'scroll', box: a};
      if (o === 'hidden' || o === 'clip') return {kind: 'clip', box: a};
    }
    return {kind: 'none', box: null};
  }
  function measure(status) {
    var col = document.querySelector('.bd-article') || document.querySelector('article')
              || document.querySelector('main') || document.body;
    var W = col.getBoundingClientRect().width, out = [];
    var wide = window.innerWidth >= 1000;
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (e) {
      var inner = e.querySelector('mjx-math');
      var w = Math.max(e.scrollWidth, inner ? inner.getBoundingClientRect().width : 0);
      var box = e.clientWidth || e.getBoundingClientRect().width;
      if (w <= box + SLACK) return;
      var s = scroller(e, col);
      if (wide || s.kind !== 'scroll' || s.box.clientWidth > W + SLACK) {
        var d = e.closest('div.math'), label = d && d.id ? d.id.replace(/^equation-/, '') : '';
        out.push({kind: 'equation', width: Math.round(w), box: Math.round(box), label: label,
                  text: clean(texOf(e))});
      }
    });
    document.querySelectorAll('mjx-merror').forEach(function (e) {
      var c = e.closest('mjx-container');
      out.push({kind: 'mathjax-error', text: clean((e.getAttribute('data-mjx-error') || '') + ' in '
                                                   + (c ? texOf(c) : e.textContent))});
    });
    var boxes = Array.from(col.querySelectorAll('table'))
        .concat(Array.from(col.querySelectorAll('.cell_output pre')));
    boxes.forEach(function (t) {
      var r = t.getBoundingClientRect(), w = Math.max(r.width, t.scrollWidth);
      var s = scroller(t, col);
      var tooWideForColumn = w > W + SLACK;
      var cut = s.kind !== 'none' && w > s.box.clientWidth + SLACK;
      if (!tooWideForColumn && !cut) return;
      if (wide && t.tagName === 'PRE' && tooWideForColumn && !t.closest('.tag_text-table')) {
        // issue 29: printed numbers wrap at the column (_static/overflow.css); only a text table scrolls
        out.push({kind: 'output', width: Math.round(w), column: Math.round(W),
                  how: 'a printed output wider than the column: print shorter lines or a table, or tag the cell text-table',
                  text: clean(t.textContent)});
        return;
      }
      if (s.kind === 'scroll' && s.box.clientWidth <= W + SLACK) return;   // scrolls in its own box
      out.push({kind: t.tagName === 'TABLE' ? 'table' : 'output', width: Math.round(w),
                column: Math.round(W), how: s.kind === 'clip' ? 'cut by a clipping box'
                                          : 'wider than the column, no scrolling box',
                text: clean(t.textContent)});
    });
    if (!wide) {
      // issue 32: a figure of a code cell keeps MIN_FIGURE px (text about 11 px) on a phone, in a box
      // that scrolls sideways (_static/overflow.css), instead of shrinking to the screen
      col.querySelectorAll('.cell_output img').forEach(function (im) {
        if (!im.naturalWidth) return;                     // absent files are reported elsewhere
        var w = im.getBoundingClientRect().width, need = Math.min(im.naturalWidth, %(min_figure)d);
        var s = scroller(im.parentElement, col);
        if (w + SLACK < need)
          out.push({kind: 'figure', width: Math.round(w), natural: im.naturalWidth,
                    text: 'a figure shown ' + Math.round(w) + ' px wide (its text ' +
                          (w / im.naturalWidth * 20.8).toFixed(1) + ' px): ' + (im.getAttribute('src') || '').slice(-40)});
        else if (w > W + SLACK && s.kind !== 'scroll')
          out.push({kind: 'figure', width: Math.round(w), natural: im.naturalWidth,
                    text: 'a figure wider than the column without a scrolling box: ' + (im.getAttribute('src') || '').slice(-40)});
      });
    }
    var page = document.documentElement.scrollWidth;
    if (page > window.innerWidth + SLACK) {
      // name the outermost elements that stick out of the window
      var culprits = [];
      document.querySelectorAll('body *').forEach(function (e) {
        if (culprits.length >= 3 || e.getBoundingClientRect().right <= window.innerWidth + SLACK) return;
        var cs = getComputedStyle(e);
        if (cs.position === 'fixed' || cs.visibility === 'hidden' || cs.display === 'none') return;
        for (var a = e.parentElement; a && a !== document.body; a = a.parentElement) {
          if (a.getBoundingClientRect().right > window.innerWidth + SLACK) return;   // not the outermost
          if (getComputedStyle(a).overflowX !== 'visible') return;                  // inside a box that holds it
        }
        culprits.push(e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined && e.className
                      ? '.' + e.className.split(/\s+/).join('.') : '') + ' "' + clean(e.textContent).slice(0, 60) + '"');
      });
      out.push({kind: 'page', width: page, window: window.innerWidth,
                text: 'the page scrolls sideways; sticking out: ' + culprits.join('; ')});
    }
    return {status: status, window: window.innerWidth, column: Math.round(W), problems: out,
            equations: document.querySelectorAll('mjx-container').length,
            height: document.documentElement.scrollHeight};
  }
  function report(status) {
    var r = measure(status), text = JSON.stringify(r);
    if (window.parent !== window) { window.parent.postMessage({siteCheck: text}, '*'); return; }
    var pre = document.createElement('pre'); pre.id = '%(id)s'; pre.textContent = text;
    document.body.appendChild(pre);
  }
  var started = Date.now(), done = false;
  function finish(status) { if (!done) { done = true; setTimeout(function () { report(status); }, 200); } }
  function wait() {
    var usesMathJax = document.querySelector('script[src*="mathjax"], script[id^="MathJax"]');
    if (!usesMathJax) return finish('no-mathjax');
    if (window.MathJax && MathJax.startup && MathJax.startup.promise)
      return MathJax.startup.promise.then(function () { finish('ok'); },
                                          function (e) { finish('mathjax-failed: ' + e); });
    if (Date.now() - started > LIMIT_MS) return finish('timeout');
    setTimeout(wait, 100);
  }
  setTimeout(function () { if (!done) finish('timeout'); }, LIMIT_MS + 2000);
  if (document.readyState === 'complete') wait(); else window.addEventListener('load', wait);
})();
</script>
""" % {"slack": SLACK, "id": REPORT_ID, "min_figure": MIN_FIGURE}

NARROW_WRAPPER = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe src="%(src)s" style="width:%(w)dpx;height:1000px;border:0"></iframe>
<script>
window.addEventListener('message', function (ev) {
  if (!ev.data || !ev.data.siteCheck) return;
  var pre = document.createElement('pre'); pre.id = '%(id)s'; pre.textContent = ev.data.siteCheck;
  document.body.appendChild(pre);
});
</script></body></html>
"""


def dump_dom(url: str, width: int = WIDE) -> str:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(
            ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},1000", url],
            capture_output=True, text=True, timeout=180)
    if out.returncode != 0 or "<html" not in out.stdout:
        raise RuntimeError(f"chromium failed on {url}: {out.stderr[-2000:]}")
    return out.stdout


def read_report(dom: str) -> dict | None:
    m = re.search(rf'<pre id="{REPORT_ID}"[^>]*>(.*?)</pre>', dom, flags=re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def notebook_images(nb_path: Path) -> int:
    if not nb_path.exists():
        return 0
    nb = json.loads(nb_path.read_text())
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if "image/png" in o.get("data", {}))


def describe(p: dict) -> str:
    if p["kind"] == "equation":
        return f"equation {p['label'] or '(no label)'} {p['width']} px in a {p['box']} px box: {p['text']}"
    if p["kind"] in ("table", "output"):
        return f"{p['kind']} {p['width']} px, column {p['column']} px, {p['how']}: {p['text'][:90]}"
    if p["kind"] == "page":
        return f"page {p['width']} px wide in a {p['window']} px window: {p['text']}"
    return f"{p['kind']}: {p['text']}"


_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", flags=re.S)
_RULE_ROW = re.compile(r"\|\s*:?(?:-{3,}|[\u2014\u2013]+):?\s*\|")


def raw_tables(source: str) -> list[str]:
    """Markdown tables that did not render: paragraphs of the page whose text starts with ``|`` and
    holds a ``|---|`` row (smart quotes may have made its hyphens dashes). Returns their starts."""
    found = []
    for m in _PARAGRAPH.finditer(source):
        text = html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()
        if text.startswith("|") and _RULE_ROW.search(text):
            found.append(" ".join(text.split())[:80])
    return found


def check_page(page: Path) -> tuple[str, list[str]]:
    """Return (summary line, problems) for one page (a chapter or the landing page)."""
    copy = page.with_name(f".check-{page.name}")
    wrapper = page.with_name(f".check{NARROW}-{page.name}")
    source = page.read_text(encoding="utf-8")
    if "</body>" not in source:
        return f"{page.name}: no </body>", ["page has no </body>"]
    copy.write_text(source.replace("</body>", MEASURE_JS + "</body>", 1), encoding="utf-8")
    wrapper.write_text(NARROW_WRAPPER % {"src": copy.name, "w": NARROW, "id": REPORT_ID}, encoding="utf-8")
    problems: list[str] = []
    try:
        try:
            dom = dump_dom(copy.resolve().as_uri(), WIDE)
            narrow_dom = dump_dom(wrapper.resolve().as_uri(), 500)
        except subprocess.TimeoutExpired:
            return f"{page.name}: chromium timed out", ["chromium timed out"]
    finally:
        copy.unlink(missing_ok=True)
        wrapper.unlink(missing_ok=True)

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
    notebook = Path(page.stem + ".ipynb") if page.name == LANDING else Path("chapters") / (page.stem + ".ipynb")
    expected = notebook_images(notebook)
    if n_math == 0 and page.stem not in NO_MATH:
        problems.append("no rendered equation (<mjx-container)")
    if missing:
        problems.append(f"missing image files: {missing}")
    if len(imgs) < expected:
        problems.append(f"{len(imgs)} images on the page, {expected} figures in the notebook")
    # a warning or an error printed by a cell (myst-nb renders stderr streams and tracebacks with
    # these classes), or a Python warning's "file.py:NN: SomethingWarning" line in any output
    n_stderr = len(re.findall(r'class="[^"]*\b(?:stderr|output traceback|output error)\b', source))
    if n_stderr:
        problems.append(f"{n_stderr} outputs on stderr or errors (a warning a reader should not see)")
    if re.search(r"\.py:\d+: \w*Warning", source):
        problems.append("a Python warning printed in an output")
    problems += [f"a Markdown table shown as raw text, not rendered: {t}" for t in raw_tables(source)]

    screens = None
    for width, d in ((WIDE, dom), (NARROW, narrow_dom)):
        rep = read_report(d)
        if rep is None:
            problems.append(f"{width} px: no overflow report (the page did not finish loading)")
            continue
        if rep["status"] not in ("ok", "no-mathjax"):
            problems.append(f"{width} px: MathJax {rep['status']}")
        problems += [f"{width} px: {describe(p)}" for p in rep["problems"]]
        if width == WIDE:
            screens = rep["height"] / SCREEN
            if screens > MAX_SCREENS:
                problems.append(f"{screens:.1f} screens long at {WIDE} x {SCREEN} px (at most {MAX_SCREENS}: "
                                "fold checks, trim outputs or split the chapter)")
    line = (f"{page.name}: {n_math} equations, {len(imgs)} images (notebook figures: {expected})"
            + (f", {screens:.1f} screens" if screens is not None else ""))
    return line, problems


def check_archive(site_dir: Path) -> list[str]:
    """The source archive: present in the site's root, a readable tar.gz holding :data:`ARCHIVE_NEEDS` and
    every chapter notebook, no MovieLens file, and linked from the page ``chapters/get_the_code.html``."""
    import tarfile
    path, problems = site_dir / ARCHIVE, []
    if not path.is_file() or path.stat().st_size == 0:
        return [f"{ARCHIVE}: missing or empty in {site_dir}"]
    try:
        with tarfile.open(path, "r:gz") as tar:
            names = set(tar.getnames())
    except (tarfile.TarError, OSError, EOFError) as e:
        return [f"{ARCHIVE}: not a readable tar.gz ({e})"]
    chapters = {f"epm-book/chapters/{p.name}" for p in Path("chapters").glob("*.ipynb")}
    problems += [f"{ARCHIVE}: lacks {n}" for n in sorted(set(ARCHIVE_NEEDS) | chapters) if n not in names]
    problems += [f"{ARCHIVE}: holds a MovieLens file {n}" for n in sorted(names) if "/ml-100k/" in n or "/ml-1m/" in n]
    page = site_dir / "chapters" / "get_the_code.html"
    if not page.is_file() or f'href="../{ARCHIVE}"' not in page.read_text(encoding="utf-8"):
        problems.append(f"chapters/get_the_code.html does not link ../{ARCHIVE}")
    return problems


def main(site: str) -> int:
    site_dir = Path(site)
    pages = sorted(p for p in (site_dir / "chapters").glob("*.html") if not p.name.startswith("."))
    if not pages:
        print(f"no chapter pages under {site_dir / 'chapters'}")
        return 1
    if not (site_dir / LANDING).is_file():
        print(f"no landing page {site_dir / LANDING}")
        return 1
    pages.append(site_dir / LANDING)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(check_page, pages))
    failures = []
    for page, (line, problems) in zip(pages, results):
        print(f"{'FAIL' if problems else 'ok':4s} {line}")
        for p in problems:
            print(f"       {p}")
        if problems:
            failures.append(page.name)
    archive = check_archive(site_dir)
    print(f"{'FAIL' if archive else 'ok':4s} {ARCHIVE}" + "".join(f"\n       {p}" for p in archive))
    if archive:
        failures.append(ARCHIVE)
    print(f"site check: {len(pages) - 1} chapter pages and the landing page, {len(failures)} with problems"
          f" (overflow measured at {WIDE} px and {NARROW} px)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "_build/html"))
