"""The README's Python examples run as written, in order, in a fresh folder.

A reader copies them into a session; a renamed option or a name that only a chapter defines
would fail here first.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_examples():
    assert len(python_blocks(README.read_text(encoding="utf-8"))) >= 3


@pytest.mark.slow
def test_readme_python_examples_run_as_written(tmp_path):
    code = "\n".join(python_blocks(README.read_text(encoding="utf-8")))
    script = tmp_path / "readme_examples.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, f"README examples failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert (tmp_path / "chain.npz").exists()
    # every fit of the examples starts from the data (fit's default) or from K_init atoms; none is degenerate
    assert "DegenerateFitWarning" not in proc.stderr, proc.stderr[-4000:]
