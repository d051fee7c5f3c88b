"""The recipe of the chapter "Your own network" runs alone, as written, in a fresh folder.

The chapter says its recipe is the cell to copy; a name that only an earlier cell defines (a
parameter, an import, the chapter's seed) would fail here first. The cell is the code cell
right after the heading "## The recipe".
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "30_your_network.ipynb"


def recipe_source():
    cells = json.loads(CHAPTER.read_text(encoding="utf-8"))["cells"]
    for k, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(r"^## The recipe\s*$", "".join(cell["source"]), flags=re.M):
            code = next(c for c in cells[k + 1:] if c["cell_type"] == "code")
            return "".join(code["source"])
    raise AssertionError(f"no '## The recipe' section in {CHAPTER.name}")


def test_recipe_is_plain_python():
    src = recipe_source()
    compile(src, "recipe", "exec")                       # no notebook magics
    assert "names.index(" in src                         # predictions for pairs given by name
    code = "\n".join(line.split("#")[0] for line in src.splitlines())
    assert "init=" not in code                           # the library's default start


@pytest.mark.slow
def test_recipe_runs_alone(tmp_path):
    script = tmp_path / "recipe.py"
    script.write_text(recipe_source(), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"the recipe failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "DegenerateFitWarning" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"\d+ held-out pairs, \d+ of them links: AUC-PR [\d.]+, AUC-ROC [\d.]+, TDLL -?[\d.]+", lines[0])
    pairs = [re.fullmatch(r"P\(link (\S+)-(\S+)\) = (0\.\d\d|1\.00)", line) for line in lines[1:]]
    assert len(pairs) >= 1 and all(pairs), proc.stdout
