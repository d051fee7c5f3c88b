"""The committed outputs a reader sees hold no warning, no stderr and no error (issue 21).

nbval compares every output with a rerun, so an output that is a warning would be compared too;
this test says plainly that none may be there at all: a fit the library flags as degenerate is
reported by the chapter in its own words (``FitResult.diagnosis``), never as a stray warning.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb")) + [ROOT / "intro.ipynb"]
WARNING_LINE = re.compile(r"\.py:\d+: \w*Warning")   # the warnings module's "file.py:NN: XWarning"


def _texts(output):
    if output.get("output_type") == "stream":
        yield "".join(output.get("text", ""))
    for key in ("text/plain", "text/html", "text/markdown"):
        v = output.get("data", {}).get(key)
        if v:
            yield "".join(v)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_warning_stderr_or_error_in_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{path.name} cell {i}: an error output"
            assert not (out.get("output_type") == "stream" and out.get("name") == "stderr"), \
                f"{path.name} cell {i}: stderr output {''.join(out.get('text', ''))[:200]!r}"
            for text in _texts(out):
                m = WARNING_LINE.search(text)
                assert m is None, f"{path.name} cell {i}: a warning in an output: {text[max(0, m.start() - 80):m.end() + 120]!r}"


GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::[^`]*)?`")
HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
MAX_VISIBLE_ASSERTS = 5


def _glued(nb):
    names = set()
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                names.add(name)
    return names


@pytest.mark.parametrize("path", NOTEBOOKS[:-1], ids=lambda p: p.name)
def test_chapter_opens_with_computed_findings_and_ends_with_summary(path):
    """Issue 21: the reader meets the result first. The first markdown cell holds the box
    "What this chapter finds" whose numbers are pasted ({glue:text}) from the chapter's own
    outputs; every pasted name was glued by a cell of the chapter; a Summary section ends it."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    first = md[0]
    assert "What this chapter finds" in first, \
        f"{path.name}: the first markdown cell has no 'What this chapter finds' box"
    opening = GLUE_ROLE.findall(first)
    assert opening, f"{path.name}: the opening box pastes no computed number ({{glue:text}}`name`)"
    missing = {n for text in md for n in GLUE_ROLE.findall(text)} - _glued(nb)
    assert not missing, f"{path.name}: pasted but never glued (key_result) in the outputs: {sorted(missing)}"
    assert any(re.search(r"^#+ .*Summary", text, re.M) for text in md), f"{path.name}: no Summary section"


def test_landing_page_opens_with_computed_findings():
    """The landing page's findings are a Markdown output computed from the stored records, before any
    figure or section of prose about the book."""
    nb = json.loads((ROOT / "intro.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).lstrip().startswith("## "):
            pytest.fail("intro.ipynb: a section starts before the computed findings")
        if any("text/markdown" in out.get("data", {}) for out in cell.get("outputs", [])):
            return
    pytest.fail("intro.ipynb: no computed findings (a Markdown output)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_checks_fold(path):
    """Issue 21: checks and bookkeeping fold; a reader sees at most a handful of assert lines."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    visible = [line for cell in nb["cells"] if cell["cell_type"] == "code"
               and not HIDDEN & set(cell.get("metadata", {}).get("tags", []))
               for line in "".join(cell["source"]).splitlines() if line.strip().startswith("assert")]
    assert len(visible) <= MAX_VISIBLE_ASSERTS, \
        f"{path.name}: {len(visible)} visible assert lines (fold the checks: tag the cell hide-input)"
