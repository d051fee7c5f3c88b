""".ci/check_site.py: the static checks of a built page (the browser measurements run in CI)."""
import importlib.util
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
