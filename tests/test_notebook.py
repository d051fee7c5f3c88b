"""epm_lib.notebook: the check of a chapter's parameters (and one papermill run of a chapter)."""
import os
from pathlib import Path

import pytest

from epm_lib.notebook import (Choice, Dir, Float, Int, ListOf, Optional, Satisfies, Str,
                              check_parameters, injected_names)

ROOT = Path(__file__).resolve().parent.parent


def ns(**values):
    """A notebook namespace: the values, and IPython's list of executed sources without papermill."""
    return {"In": ["", "import numpy as np", "n_draws = 5000"], **values}


def test_valid_values_pass_and_return_none():
    space = ns(n_draws=5000, T=1000, T_grid=[1, 10], eps=0.01, name="enron09", data_dir=None, path="x")
    assert check_parameters(space, n_draws=Int(min=100), T=Int(min=1), T_grid=ListOf(Int(min=1)),
                            eps=Float(gt=0), name=Choice("enron09", "movielens100k"),
                            data_dir=Optional(Str()), path=Str()) is None


@pytest.mark.parametrize("value", [1, 99, -5, 5000.0, "5000", True, None])
def test_int_refuses_and_names_parameter_value_and_rule(value):
    with pytest.raises(ValueError) as e:
        check_parameters(ns(n_draws=value), n_draws=Int(min=100))
    msg = str(e.value)
    assert f"n_draws = {value!r}" in msg and "an integer >= 100" in msg


def test_int_accepts_numpy_integers_and_bounds_inclusive():
    np = pytest.importorskip("numpy")
    check_parameters(ns(n=np.int64(100), m=7), n=Int(min=100, max=100), m=Int(min=7, max=7))


def test_bound_naming_another_parameter():
    check_parameters(ns(n_iter=600, n_avg=600), n_iter=Int(min=1), n_avg=Int(min=1, max="n_iter"))
    with pytest.raises(ValueError, match=r"n_avg = 700 .* <= n_iter \(= 600\)"):
        check_parameters(ns(n_iter=600, n_avg=700), n_iter=Int(min=1), n_avg=Int(min=1, max="n_iter"))


def test_strict_bounds_and_several_rules():
    spec = Float(gt=-1, lt=1)
    check_parameters(ns(rho=0.8), rho=spec)
    with pytest.raises(ValueError, match=r"rho = 1 .*a finite number > -1 and < 1$"):
        check_parameters(ns(rho=1), rho=spec)
    with pytest.raises(ValueError, match=r"n_tail = 600 .*an integer >= 10 and < n_iter \(= 600\)$"):
        check_parameters(ns(n_iter=600, n_tail=600), n_tail=Int(min=10, lt="n_iter"))


def test_float():
    check_parameters(ns(a=1, b=0.5), a=Float(gt=0), b=Float(min=0, max=1))
    for bad in (0, -1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match=r"a = .* a finite number > 0"):
            check_parameters(ns(a=bad), a=Float(gt=0))


def test_choice_and_list_of_choices():
    spec = ListOf(Choice("enron09", "movielens100k"), distinct=True)
    check_parameters(ns(datasets=["movielens100k"]), datasets=spec)
    for bad in (["enron"], [], "enron09", ["enron09", "enron09"]):
        with pytest.raises(ValueError, match=r"datasets = .*one of 'enron09', 'movielens100k'"):
            check_parameters(ns(datasets=bad), datasets=spec)


def test_list_message_tells_how_to_pass_a_list_with_papermill():
    # `papermill -p T_grid "[1, 10]"` passes the string "[1, 10]"
    with pytest.raises(ValueError, match=r"T_grid = '\[1, 10\]' .*list.*-y"):
        check_parameters(ns(T_grid="[1, 10]"), T_grid=ListOf(Int(min=1)))
    with pytest.raises(ValueError, match="at least 2"):
        check_parameters(ns(T_grid=[10]), T_grid=ListOf(Int(min=1), min_len=2))
    check_parameters(ns(T_grid=(1, 10)), T_grid=ListOf(Int(min=1), min_len=2))


def test_optional_dir_and_satisfies(tmp_path):
    check_parameters(ns(d=None, r=str(tmp_path)), d=Optional(Dir()), r=Dir())
    with pytest.raises(ValueError, match="r = .*an existing folder"):
        check_parameters(ns(r=str(tmp_path / "missing")), r=Dir())
    spec = Satisfies(ListOf(Int(min=1)), lambda v: 100 in v, "including 100")
    check_parameters(ns(T=[10, 100]), T=spec)
    with pytest.raises(ValueError, match="including 100"):
        check_parameters(ns(T=[10, 1000]), T=spec)


def test_checks_follow_the_order_of_the_specs():
    with pytest.raises(ValueError, match="^parameter a "):
        check_parameters(ns(a=-1, b=-1), a=Int(min=0), b=Int(min=0))


def test_spec_of_an_undefined_name_is_an_error():
    with pytest.raises(ValueError, match="parameter n_draw is not defined"):
        check_parameters(ns(n_draws=1), n_draw=Int(min=1))


# papermill's injected cell, as papermill 2.7 writes it (-p a 5 -p zz x -p n None -p f 5e3)
INJECTED = '# Parameters\nn_drawz = 10\nT = 5\nname = "x"\nn = None\nf = 5000.0\n'


def test_injected_names_read_from_the_latest_parameters_cell():
    assert injected_names({"In": ["", "n_draws = 1", INJECTED, "check(...)"]}) == \
        ["n_drawz", "T", "name", "n", "f"]
    assert injected_names({"In": ["", "# Parameters\na = 1", "# Parameters\nb = 2"]}) == ["b"]
    assert injected_names({"In": ["", "n_draws = 1"]}) is None      # no papermill: nothing injected
    assert injected_names({}) is None                                # plain Python: no In


def test_unknown_injected_name_is_refused_with_the_known_ones():
    space = {"In": ["", "n_draws = 5000\nT = 1000", INJECTED], "n_draws": 5000, "T": 5,
             "n_drawz": 10, "name": "x", "n": None, "f": 5000.0}
    with pytest.raises(ValueError) as e:
        check_parameters(space, n_draws=Int(min=100), T=Int(min=1))
    msg = str(e.value)
    assert msg.startswith("unknown parameters n_drawz, name, n, f:")
    assert "this chapter's parameters are n_draws, T" in msg


def test_known_injected_names_pass():
    space = {"In": ["", "n_draws = 5000", "# Parameters\nn_draws = 200\n"], "n_draws": 200}
    check_parameters(space, n_draws=Int(min=100))


# --- one real papermill run of the cheapest chapter with parameters ------------------------

CHAPTER = "04_cepm_depm_theorem3.ipynb"


def run_chapter(tmp_path, **parameters):
    papermill = pytest.importorskip("papermill")
    with pytest.raises(papermill.PapermillExecutionError) as e:
        papermill.execute_notebook(str(ROOT / "chapters" / CHAPTER), str(tmp_path / "out.ipynb"),
                                   parameters=parameters, cwd=str(ROOT / "chapters"),
                                   progress_bar=False, kernel_name="python3")
    return e.value


@pytest.mark.slow
def test_papermill_refuses_unknown_parameter_and_invalid_value(tmp_path):
    err = run_chapter(tmp_path, n_drawz=10)
    assert err.ename == "ValueError"
    assert "unknown parameter n_drawz" in err.evalue and "n_draws" in err.evalue
    err = run_chapter(tmp_path, n_draws=1)
    assert err.ename == "ValueError"
    assert "n_draws = 1" in err.evalue and "an integer >=" in err.evalue


QUIET_CHILD = """
import sys, threading, time
class NowTimer(threading.Timer):           # matplotlib's 'building the font cache' notice waits
    def __init__(self, interval, fn, *a, **k):   # 5 s; here it fires at once, as on a slow machine
        super().__init__(0.0, fn, *a, **k)
threading.Timer = NowTimer
if sys.argv[1] == "quiet":
    from epm_lib.notebook import quiet_first_run
    quiet_first_run()
import matplotlib.pyplot
time.sleep(0.3)
"""


@pytest.mark.slow
def test_quiet_first_run_silences_the_font_cache_notice(tmp_path):
    """A chapter's first cell calls quiet_first_run before %matplotlib inline: on a fresh machine
    (no font cache) whose cache takes long to build, nothing reaches stderr; without it, the
    notice does (so the test can fail)."""
    import subprocess
    import sys
    errs = {}
    for mode in ("quiet", "plain"):
        env = dict(os.environ, MPLCONFIGDIR=str(tmp_path / mode))
        proc = subprocess.run([sys.executable, "-c", QUIET_CHILD, mode], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        errs[mode] = proc.stderr
    assert errs["quiet"] == ""
    assert "building the font cache" in errs["plain"]


def test_key_result_stores_plain_rounded_values(monkeypatch):
    """key_result glues plain Python values, rounded, so the stored text is the same on every CPU."""
    import numpy as np
    import myst_nb
    from epm_lib.notebook import key_result

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.update({name: (value, display)}))
    assert key_result("a", np.float64(0.123456), 3) == 0.123
    assert key_result("b", np.int64(7)) == 7 and type(glued["b"][0]) is int
    assert key_result("c", 3.6, 0) == 4 and type(glued["c"][0]) is int
    assert key_result("d", -1e-9, 2) == 0.0 and str(glued["d"][0]) == "0.0"
    assert key_result("e", "IDEPM") == "IDEPM"
    assert type(glued["a"][0]) is float and all(d is False for _, d in glued.values())
    for bad, digits in ((float("nan"), 2), (np.inf, 1), ([1, 2], None), (2.5, None)):
        with pytest.raises(ValueError, match="key_result"):
            key_result("x", bad, digits)


def test_book_style_sets_the_figure_style_and_returns_the_palette():
    """book_style: the chapters' one setup call sets BOOK_RC and hands back the Okabe-Ito palette as a
    fresh list (a chapter may extend its copy without touching the library's)."""
    import matplotlib.pyplot as plt
    from epm_lib.notebook import BOOK_RC, book_style
    from epm_lib.results import OKABE_ITO

    with plt.rc_context({"figure.dpi": 72, "font.size": 14}):    # leaves the process's rcParams as they were
        pal = book_style()
        assert all(plt.rcParams[k] == v for k, v in BOOK_RC.items())
        assert pal == list(OKABE_ITO) and len(pal) == 7
        pal.append("#999999")
        assert book_style() == list(OKABE_ITO)


def test_every_chapter_sets_the_style_through_book_style():
    """No chapter pastes the palette or the rcParams any more: setup cells call book_style()."""
    import json
    root = Path(__file__).resolve().parent.parent
    for path in sorted((root / "chapters").glob("*.ipynb")):
        src = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert 'OKABE_ITO = ["#' not in src and "rcParams.update" not in src, path.name


def test_setup_chapter_quiets_switches_inline_then_styles(monkeypatch):
    """setup_chapter: quiet_first_run, then '%matplotlib inline' through the IPython shell when there
    is one, then book_style (its rcParams and palette), in that order; outside IPython only the rest."""
    import IPython
    import matplotlib.pyplot as plt
    from epm_lib.book import notebook      # the module itself: epm_lib.notebook only re-exports it
    from epm_lib.results import OKABE_ITO

    calls = []

    class Shell:
        def run_line_magic(self, name, line):
            calls.append(("magic", name, line))
            plt.rcParams["figure.dpi"] = 72.0      # what the inline backend does when switched on

    monkeypatch.setattr(notebook, "quiet_first_run", lambda: calls.append(("quiet",)))
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    with plt.rc_context():
        assert notebook.setup_chapter() == list(OKABE_ITO)
        assert calls == [("quiet",), ("magic", "matplotlib", "inline")]
        assert plt.rcParams["figure.dpi"] == notebook.BOOK_RC["figure.dpi"]    # the style after the backend
    calls.clear()
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with plt.rc_context():
        assert notebook.setup_chapter() == list(OKABE_ITO) and calls == [("quiet",)]
