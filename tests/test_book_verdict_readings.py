"""epm_lib.book.verdict_readings: the readings of chapters 26 and 26b, on small synthetic inputs and on
the committed records (the numbers the chapters print and glue)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epm_lib.book import regions, verdict_readings as vr
from epm_lib.experiments import PAPER_T
from epm_lib.results import PART_ORDER, load_converged_present, load_present, verdict_parts

from test_book_regions import _grid, _paper, grows

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _flat_records(n_folds=3):
    """Every model of the grid at every T with the same scores on every fold: no difference anywhere."""
    recs = [{"model": m, "T": T, "fold": f, "K_init": None, "K_mean": 10.0, "tdll": -0.1, "tdauc_pr": 0.3}
            for m in ("EPM", "EPMpaper", "CEPM", "DEPM") for T in PAPER_T for f in range(n_folds)]
    return recs + [{"model": "IDEPM", "T": None, "fold": f, "K_init": 100, "K_mean": 10.0, "tdll": -0.1,
                    "tdauc_pr": 0.3} for f in range(n_folds)]


def test_enron_verdict_reading_follows_the_verdicts_given():
    recs = _flat_records()
    v = {p: (False, "", 3) for p in PART_ORDER} | {"H1 K grows": (True, "", 3), "H3 TDAUC-PR": (True, "", 3),
                                                   "H2 TDLL": (True, "", 3), "H2 K": (True, "", 3)}
    vp = {p: (p in ("H1 K", "H1 K grows", "H1 TDLL", "H1 TDAUC-PR"), "", 3) for p in PART_ORDER}
    n, lines, claims = vr.enron_verdict_reading(recs, v, vp)
    ok = {c for c, x in claims.items() if x}
    assert ok == {"H1, H2, H3 not supported", "H3 on TDAUC-PR only", "H1's parts, exact samplers",
                  "H1's parts, printed update", "H2 on TDLL and K only"}     # the numbers: no difference at all
    assert n["dI"] == (0.0, 0.0, 3) and lines[0].endswith("by +0.0000 ± 0.0000")
    v["H2"] = (True, "", 3)
    assert not vr.enron_verdict_reading(recs, v, vp)[2]["H1, H2, H3 not supported"]


def test_changes_outputs_per_data_set():
    table = pd.DataFrame([{"dataset": "a", "folds": (0, 1), "runs": 4, "converged": 3, "capped": 1,
                           "max_sweeps": 20000, "start_gap": 1.25, "decided": True, "changes": ("H2 K",)},
                          {"dataset": "b", "folds": (0,), "runs": 2, "converged": 0, "capped": 2,
                           "max_sweeps": 500, "start_gap": 3.0, "decided": False, "changes": ()}],
                         columns=vr.CHANGES_COLUMNS)
    out = vr.changes_outputs(table, {"a": ("| part |\n|---|\n| H2 K |", ["H2 K"], [0, 1], None)}, ["a", "b", "c"])
    assert [k for k, _ in out] == ["markdown", "print", "print", "print"]
    assert out[0][1].startswith("**a**, folds 0, 1 (those with a record of every model present): 3 of 4 runs "
                                "*converged* (split-R̂ ≤ 1.01), 1 *capped* at 20,000 sweeps") and "up to 1.2 atoms" in out[0][1]
    assert out[1][1] == "a: parts that change between the protocols: H2 K"
    assert out[2][1].startswith("b: converged-protocol records for fold(s) [0] only (0 of 2 runs")
    assert out[3][1] == "c: no converged-protocol records"


def test_region_reading_on_a_synthetic_grid():
    flat = lambda m, T, f: 2.0 + f * 0.1                                        # noqa: E731
    recs = _grid(grows, flat, noise=1e-3)
    table = regions.region_verdicts(_paper(recs), recs)[0]
    n, lines, claims, box = vr.region_reading(recs, table, regions.preference(recs))
    assert n["trapped"] == pytest.approx({"EPM": 2.1, "DEPM": 2.1, "IDEPM": 2.1})
    assert list(n["K"].columns) == ["model", "T", "fold", "start", "K"] and len(n["K"]) == 2 * len(recs)
    assert n["K"]["T"].dtype == object and n["agree_data"] == 0                # R-hat 1.2: no start agrees
    assert claims["one atom traps the EPM, DEPM and IDEPM, not the CEPM"] is False    # the CEPM trapped as well
    assert lines[3] == f"runs whose two data-start chains agree (split-R-hat <= 1.01 on K and TDLL): 0 of {len(recs)}"
    assert dict((k, v) for k, v, _ in box)["ml_runs"] == len(recs)


# ---------------------------------------------------------------------------------------------
# the committed records
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return load_present(RESULTS, ["enron09", "movielens100k", "movielens1m"])


@pytest.fixture(scope="module")
def conv():
    return load_converged_present(RESULTS, ["enron09", "movielens100k", "movielens1m"])


def test_enron09_reading_of_chapter_26(data):
    e = data["enron09"]
    n, lines, claims = vr.enron_verdict_reading(e, verdict_parts(e), verdict_parts(e, "EPMpaper"))
    assert len(claims) == 11 and all(claims.values())
    assert lines[0].endswith("on TDLL the IDEPM leads the best DEPM by +0.0005 ± 0.0009")


def test_converged_changes_and_reading_of_chapter_26b(data, conv):
    datasets = ["enron09", "movielens100k", "movielens1m"]
    table, details = vr.converged_changes(data, conv, datasets)
    assert table.dataset.tolist() == ["enron09", "movielens100k"]
    e = table.set_index("dataset").loc["enron09"]
    assert e.folds == tuple(range(10)) and e.decided and set(e.changes) == {"H2 TDLL", "H2 K", "H2 DEPM-128 best",
                                                                              "H3 TDAUC-PR"}
    out = vr.changes_outputs(table, details, datasets)
    assert out[-2:] == [("print", "movielens100k: converged-protocol records for fold(s) [0] only (0 of 2 runs reached "
                                  "split-R-hat <= 1.01): no part is decided (a part needs two folds)"),
                        ("print", "movielens1m: no converged-protocol records")]
    _, flips, common, parts = details["enron09"]
    n, lines, claims, box = vr.converged_reading(data["enron09"], conv["enron09"], flips, common, parts)
    assert all(claims.values()) and n["h3"] == "best"
    assert lines[-2:] == ["best DEPM-T for TDLL: 600 sweeps T = 16, converged T = 16",
                          "best DEPM-T for TDAUC-PR: 600 sweeps T = 32, converged T = 128"]
    b = {k: v for k, v, _ in box}
    assert b["supported"] == '"K grows" and "DEPM-128 best"' and round(b["k_grow"], 1) == 2.3
    assert round(b["gap"], 1) == 0.5 and b["n_flip"] == 4


def test_region_reading_of_movielens100k(data):
    R = regions.load_datastart(RESULTS, "movielens100k")
    table = regions.region_verdicts(data["movielens100k"], R)[0]
    n, lines, claims, box = vr.region_reading(R, table, regions.preference(R))
    assert len(claims) == 5 and all(claims.values())
    assert lines[0] == "decided 14 of 14 parts (9 by both regions, 5 by the preferred region's chains), open 0: none"
    assert lines[1] == "K from one atom at T = 128 (the IDEPM: untruncated): EPM 2.4, DEPM 2.4, IDEPM 2.7; CEPM-128 22.2"
    b = {k: v for k, v, _ in box}
    assert (b["ml_runs"], b["ml_conv"], b["ml_data_agree"]) == (66, 8, 18) and np.isclose(b["ml_trap"], 2.7, atol=0.05)
