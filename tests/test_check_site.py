""".ci/check_site.py: the static checks of a built page (the browser measurements run in CI)."""
import importlib.util
import shutil
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("check_site", Path(__file__).parents[1] / ".ci" / "check_site.py")
check_site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_site)


@pytest.mark.parametrize("html, found", [
    ("<p>| part | enron09 |\n|---|---|\n| H1 | ✓ |</p>", 1),                      # CommonMark's paragraph
    ("<p>| part | enron09 |\n|—|—|\n| H1 | ✓ |</p>", 1),                          # smart dashes
    ("<p class=\"x\">| a | b |\n| :--- | ---: |</p>", 1),
    ("<table><tr><td>| a |</td></tr><tr><td>|---|</td></tr></table>", 0),        # a rendered table
    ("<p>a | b |---| c</p>", 0),                                                   # not at the start
    ("<p>| a lone pipe</p>", 0),
])
def test_a_markdown_table_shown_as_raw_text_is_found(html, found):
    assert len(check_site.raw_tables(html)) == found


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>%(css)s</style></head><body>
<div class="bd-article" style="width: 700px">
<div class="cell %(tag)s"><div class="cell_output"><div class="output stream"><pre>%(line)s</pre></div></div></div>
</div></body></html>"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="the browser check needs chromium (CI installs it)")
@pytest.mark.parametrize("tag, css, found", [
    ("", "", True),                                   # a printed line running past the column
    ("tag_text-table", "", False),                    # a text table: scrolls in its box, allowed
    ("", "BOOK_CSS", False),                          # the book's CSS wraps printed lines
])
def test_a_printed_output_wider_than_the_column_is_found(tmp_path, tag, css, found):
    """Issue 29: printed numbers wrap at the column; only a cell tagged text-table may scroll."""
    css = (Path(__file__).parents[1] / "_static" / "overflow.css").read_text() if css == "BOOK_CSS" else \
        ".bd-article .cell_output .output { max-width: 100%; overflow-x: auto; }"
    line = "K from one atom at T = 128 (the IDEPM: untruncated): EPM 2.4, DEPM 2.4, IDEPM 2.7; " * 3
    page = tmp_path / "page.html"
    page.write_text(PAGE % {"css": css, "tag": tag, "line": line}, encoding="utf-8")
    _, problems = check_site.check_page(page)
    assert any("a printed output wider than the column" in p for p in problems) == found, problems


FIGURE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
img { max-width: 100%%; height: auto; } %(css)s</style></head><body>
<div class="bd-article"><div class="cell"><div class="cell_output"><figure>
<img src="figure.png"><figcaption>Fig. 1</figcaption></figure></div></div></div></body></html>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="the browser check needs chromium (CI installs it)")
@pytest.mark.parametrize("css, found", [("", True), ("BOOK_CSS", False)])
def test_a_figure_shrunk_on_a_phone_is_found(tmp_path, css, found):
    """Issue 32: a 1,050 px figure shrunk to a 390 px screen has 6 px text; the book's CSS keeps
    it 600 px wide in a box that scrolls sideways."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3), dpi=150)
    ax.plot([0, 1], [0, 1])
    fig.savefig(tmp_path / "figure.png", dpi=150)
    plt.close(fig)
    css = (Path(__file__).parents[1] / "_static" / "overflow.css").read_text() if css == "BOOK_CSS" else ""
    page = tmp_path / "page.html"
    page.write_text(FIGURE_PAGE % {"css": css}, encoding="utf-8")
    _, problems = check_site.check_page(page)
    assert any(p.startswith("390 px: figure:") for p in problems) == found, problems
    assert not any("page scrolls sideways" in p for p in problems), problems
