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
