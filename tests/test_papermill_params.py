"""Chapters 29, 29b and 31 run with papermill parameters (issue 30 item 6, round three 16): values
the chapter cannot use, missing or empty stored files and results folders without the records are
refused in the chapter's checking cell with a clear error naming the parameter, what is allowed and
the command that makes a missing file; allowed values run. tests/test_notebook.py runs one chapter
(04) to test epm_lib.notebook.check_parameters itself; these are the chapters' own checks.

Each test starts a kernel and runs part of a chapter (the full runs: tens of seconds to two
minutes): marked slow."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def execute(tmp_path, chapter, **parameters):
    """Run chapters/<chapter> with papermill (from chapters/, as the book does); returns the
    PapermillExecutionError, or None when every cell ran."""
    papermill = pytest.importorskip("papermill")
    try:
        papermill.execute_notebook(str(ROOT / "chapters" / chapter), str(tmp_path / "out.ipynb"),
                                   parameters=parameters, cwd=str(ROOT / "chapters"), progress_bar=False,
                                   kernel_name="python3")
    except papermill.PapermillExecutionError as e:
        return e
    return None


def test_chapter_29_runs_with_short_chains(tmp_path):
    """-p n_iter 200 -p n_avg 50 gave a raw IndexError: the check of the paper start's chain read the
    first finding, which short chains make 'dust'; it now reads the 'chance' finding."""
    err = execute(tmp_path, "29_where_a_chain_starts.ipynb", n_iter=200, n_avg=50)
    assert err is None, f"{err.ename}: {err.evalue}"


def test_chapter_29_names_a_missing_benchmark_file_and_its_command(tmp_path):
    err = execute(tmp_path, "29_where_a_chain_starts.ipynb", bench_file=str(tmp_path / "none.json"))
    assert err.ename == "FileNotFoundError", err.evalue
    assert "bench_file = " in err.evalue and "python benchmarks/bench_starts.py --part planted" in err.evalue


def test_chapter_29b_refuses_runs_too_short_for_its_hold(tmp_path):
    """n_iter = 400 was allowed (>= 200) and failed late, on the hold=(300, 0.1) of a later section."""
    err = execute(tmp_path, "29b_checking_starts.ipynb", n_iter=400, n_avg=200)
    assert err.ename == "ValueError", err.evalue
    assert "n_iter = 400 with n_avg = 200: n_iter - n_avg must be at least 300" in err.evalue
    assert "hold=(300, 0.1)" in err.evalue


def test_chapter_29b_runs_at_the_shortest_allowed_chains(tmp_path):
    err = execute(tmp_path, "29b_checking_starts.ipynb", n_iter=400, n_avg=100)
    assert err is None, f"{err.ename}: {err.evalue}"


def test_chapter_31_names_the_records_it_needs(tmp_path):
    """A results folder without Enron09's converged records gave a KeyError."""
    (tmp_path / "results").mkdir()
    err = execute(tmp_path, "31_practitioners_guide.ipynb", results_dir=str(tmp_path / "results"))
    assert err.ename == "FileNotFoundError", err.evalue
    assert "holds no converged Enron09 records" in err.evalue and "--converged" in err.evalue


def test_chapter_31_refuses_an_empty_benchmark_file(tmp_path):
    """An empty bench_file gave a JSONDecodeError."""
    empty = tmp_path / "empty.json"
    empty.write_text("")
    err = execute(tmp_path, "31_practitioners_guide.ipynb", bench_file=str(empty))
    assert err.ename == "ValueError", err.evalue
    assert "bench_file = " in err.evalue and "is not the JSON file that" in err.evalue
    assert "python benchmarks/bench_starts.py --part planted" in err.evalue
