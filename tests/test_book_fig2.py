"""epm_lib.book.fig2: the numbers behind Fig. 2 (chapter 22) as tidy tables, on small synthetic
records with hand-computed values and on the committed Enron09 records (the numbers chapter 22 prints)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epm_lib.book import fig2
from epm_lib.experiments import PAPER_T
from epm_lib.fit_options import DEFAULT_K_INIT
from epm_lib.results import load_converged_present, load_present, mean_se, protocol_comparison, values

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _rec(model, T, fold, K, tdll, auc, K_init=None, K_trace=None):
    """A record of Sec. 5's protocol as ``records.values`` reads it (the fields these functions read)."""
    return {"model": model, "T": T, "fold": fold, "K_init": K_init, "K_mean": K, "tdll": tdll, "tdauc_pr": auc,
            "traces": {"K": K_trace if K_trace is not None else [K] * 3}}


def _small():
    """EPM at T=2 on folds 0-2 and at T=4 on folds 0-1; DEPM at T=2 on fold 0 and at T=4 on folds 1-2;
    the IDEPM from its default start on folds 0-1 (and one from another start, to be left out)."""
    return [_rec("EPM", 2, 0, 2.0, -0.1, 0.1), _rec("EPM", 2, 1, 2.0, -0.2, 0.2), _rec("EPM", 2, 2, 1.0, -0.3, 0.3),
            _rec("EPM", 4, 0, 4.0, -0.05, 0.4), _rec("EPM", 4, 1, 3.0, -0.15, 0.2),
            _rec("DEPM", 2, 0, 2.0, -0.12, 0.15),
            _rec("DEPM", 4, 1, 3.0, -0.25, 0.1), _rec("DEPM", 4, 2, 4.0, -0.35, 0.3),
            _rec("IDEPM", None, 0, 5.0, -0.08, 0.5, K_init=DEFAULT_K_INIT, K_trace=[10, 6, 5]),
            _rec("IDEPM", None, 1, 7.0, -0.09, 0.4, K_init=DEFAULT_K_INIT, K_trace=[12, 8, 7]),
            _rec("IDEPM", None, 0, 50.0, -0.5, 0.0, K_init=1, K_trace=[1, 1, 1])]


def test_summary_means_and_standard_errors_per_point():
    s = fig2.fig2_summary(_small(), Ts=(2, 4, 8))
    assert list(s.columns) == fig2.SUMMARY_COLUMNS == ["model", "T", "folds", "K_mean", "K_mean_se", "tdll",
                                                      "tdll_se", "tdauc_pr", "tdauc_pr_se"]
    # rows in the order of the models, then of T; no row for a point without records (CEPM, T = 8)
    assert list(zip(s.model, s["T"])) == [("EPM", 2), ("EPM", 4), ("DEPM", 2), ("DEPM", 4), ("IDEPM", None)]
    assert s["T"].dtype == object and s["T"].iloc[-1] is None and list(s.folds) == [3, 2, 1, 2, 2]
    epm2 = fig2.point(s, "EPM", 2)
    assert epm2.K_mean == pytest.approx(5 / 3) and epm2.K_mean_se == pytest.approx(np.sqrt(1 / 3) / np.sqrt(3))
    assert epm2.tdll == pytest.approx(-0.2) and epm2.tdll_se == pytest.approx(0.1 / np.sqrt(3))
    assert epm2.tdauc_pr == pytest.approx(0.2) and epm2.tdauc_pr_se == pytest.approx(0.1 / np.sqrt(3))
    one = fig2.point(s, "DEPM", 2)
    assert one.tdll == pytest.approx(-0.12) and np.isnan(one.tdll_se)          # one fold: no SE
    idepm = fig2.point(s, "IDEPM")                   # the default start only (K_init=1 left out)
    assert (idepm.K_mean, idepm.tdll, idepm.tdauc_pr) == pytest.approx((6.0, -0.085, 0.45))
    assert idepm.K_mean_se == pytest.approx(1.0)
    # the same numbers as tables.mean_se over records.values, exactly
    for p in s.itertuples():
        for k in ("K_mean", "tdll", "tdauc_pr"):
            assert getattr(p, k) == mean_se(values(_small(), p.model, p.T, k))[0]


def test_summary_of_no_records_has_the_columns():
    s = fig2.fig2_summary([])
    assert s.empty and list(s.columns) == fig2.SUMMARY_COLUMNS
    assert fig2.select(s, ["EPM", ("IDEPM", None)]).empty and fig2.by_point(s, "tdll") == {}


def test_select_point_and_by_point_read_a_table():
    s = fig2.fig2_summary(_small())
    got = fig2.select(s, [("DEPM", 4), "EPM", ("CEPM", 2), ("IDEPM", None)])     # CEPM: not in the table
    assert list(zip(got.model, got["T"])) == [("DEPM", 4), ("EPM", 2), ("EPM", 4), ("IDEPM", None)]
    assert list(got.index) == [0, 1, 2, 3]
    assert fig2.by_point(fig2.select(s, ["EPM"]), "K_mean") == pytest.approx({("EPM", 2): 5 / 3, ("EPM", 4): 3.5})
    assert fig2.by_point(s, "folds")[("IDEPM", None)] == 2
    with pytest.raises(KeyError, match="0 rows of CEPM-2"):
        fig2.point(s, "CEPM", 2)
    with pytest.raises(KeyError, match="2 rows of EPM-2"):
        fig2.point(pd.concat([s, s]), "EPM", 2)
    assert fig2.point_label("DEPM", 128) == "DEPM-128" and fig2.point_label("IDEPM") == "IDEPM"


def test_paired_differences_over_the_folds_both_have():
    recs = _small()
    p = fig2.paired_differences(recs, [("EPM", "DEPM"), (("EPM", 4), ("EPM", 2)), ("IDEPM", ("EPM", 2))],
                                "tdll", T=4)
    assert list(p.columns) == fig2.PAIR_COLUMNS
    assert list(zip(p.a, p.T_a, p.b, p.T_b)) == [("EPM", 4, "DEPM", 4), ("EPM", 4, "EPM", 2), ("IDEPM", None, "EPM", 2)]
    assert set(p.metric) == {"tdll"} and p.T_a.dtype == object
    # EPM-4 - DEPM-4: fold 1 only (-0.15 + 0.25): one fold, no SE
    assert p.difference[0] == pytest.approx(0.10) and np.isnan(p.se[0]) and p.folds[0] == 1
    assert p.reading[0] == "not enough folds"
    # EPM-4 - EPM-2 on folds 0, 1: 0.05 and 0.05 -> 0.05 ± 0
    assert (p.difference[1], p.se[1], p.folds[1]) == pytest.approx((0.05, 0.0, 2))
    assert p.reading[1] == "clearly higher"
    # IDEPM - EPM-2 on folds 0, 1: 0.02 and 0.11
    assert (p.difference[2], p.se[2]) == pytest.approx((0.065, 0.045))
    assert p.reading[2] == "no clear difference"
    k = fig2.paired_differences(recs, [("DEPM", "EPM")], "K_mean", T=2).iloc[0]
    assert (k.difference, k.folds, k.reading) == (0.0, 1, "not enough folds")
    assert fig2.paired_differences(recs, [], "tdll").empty


def test_best_Ts_is_the_first_T_of_the_highest_mean():
    recs = _small() + [_rec("DEPM", 8, 0, 8.0, -0.3, 0.4)]
    b = fig2.best_Ts(recs, "tdauc_pr", models=("EPM", "CEPM", "DEPM"))
    assert list(b.columns) == ["model", "metric", "best_T", "best"]
    assert list(b.model) == ["EPM", "DEPM"]                  # the CEPM has no records: no row
    # EPM: 0.2 at T = 2 and 0.3 at T = 4; DEPM: 0.15, 0.2 and 0.4 at T = 8
    assert list(b.best_T) == [4, 8] and b.best.tolist() == pytest.approx([0.3, 0.4])
    tie = [_rec("EPM", 2, 0, 2.0, -0.1, 0.5), _rec("EPM", 4, 0, 2.0, -0.1, 0.5)]
    assert fig2.best_Ts(tie, "tdll", ("EPM",)).best_T[0] == 2


def test_mean_trace_averages_the_folds_per_iteration():
    assert fig2.mean_trace(_small()).tolist() == [11.0, 7.0, 6.0]                 # the default start only
    assert fig2.mean_trace(_small(), K_init=1).tolist() == [1.0, 1.0, 1.0]
    assert fig2.mean_trace(_small(), "EPM", 4).tolist() == [3.5, 3.5, 3.5]
    assert fig2.mean_trace(_small(), "CEPM", 4).size == 0


def _conv(model, T, fold, K, tdll, converged, starts_K, rhat=1.05):
    """A converged-protocol record: chains from 1 and 2 atoms, each pair's mean K in ``starts_K``."""
    return {"run_id": f"{model}-{T}-{fold}", "model": model, "T": T, "fold": fold, "K_mean": K, "tdll": tdll,
            "tdauc_pr": 0.3, "converged": converged, "settings": {"starts": [1, 1, 2, 2]},
            "K_mean_per_chain": [starts_K[0], starts_K[0], starts_K[1], starts_K[1]],
            "diagnostics": {"K": {"rhat": rhat}, "tdll": {"rhat": 1.0}}}


def test_converged_runs_one_row_per_record():
    conv = [_conv("EPM", 2, 0, 2.0, -0.1, True, (2.0, 2.0), rhat=None),
            _conv("EPM", 4, 0, 3.5, -0.1, False, (3.0, 4.5)),
            _conv("IDEPM", None, 0, 6.0, -0.1, False, (7.0, 5.0), rhat=1.2)]
    r = fig2.converged_runs(conv)
    assert list(r.columns) == ["run_id", "model", "T", "fold", "converged", "rhat_K", "start_gap"]
    assert r.converged.tolist() == [True, False, False] and r.converged.dtype == bool
    assert np.isnan(r.rhat_K[0]) and r.rhat_K[1:].tolist() == [1.05, 1.2]
    assert r.start_gap.tolist() == [0.0, 1.5, 2.0]
    some = fig2.converged_runs(conv, [("IDEPM", None), ("EPM", 4)])      # the records' order
    assert some.run_id.tolist() == ["EPM-4-0", "IDEPM-None-0"]
    assert fig2.converged_runs(conv, ["EPM"]).run_id.tolist() == ["EPM-2-0", "EPM-4-0"]
    assert fig2.converged_runs([]).empty


def test_comparison_frame_holds_protocol_comparisons_numbers():
    paper = [_rec("EPM", 4, f, 4.0, -0.2 - 0.01 * f, 0.3) for f in range(3)]
    conv = [_conv("EPM", 4, f, 3.0 + f, -0.1, f < 2, (3.0, 3.0 + f)) for f in range(2)]
    _, out = protocol_comparison(paper, conv, models=(("EPM", 4), ("DEPM", 4)))
    c = fig2.comparison_frame(out)
    assert len(c) == 1 and (c.model[0], c["T"][0], c.label[0]) == ("EPM", 4, "EPM-4")
    assert c.folds[0] == (0, 1) and c.n_folds[0] == 2 and c.converged[0] == 2
    assert c.start_gap[0] == 1.0 and c.rhat_max[0] == pytest.approx(1.05)
    # K: 4.0 after 600 sweeps on folds 0, 1; 3.5 converged; converged - 600: -1 and 0
    assert (c.K_mean_600[0], c.K_mean_conv[0]) == (4.0, 3.5)
    assert (c.K_mean_diff[0], c.K_mean_diff_se[0]) == pytest.approx((-0.5, 0.5))
    assert (c.tdll_600[0], c.tdll_conv[0], c.tdll_diff[0]) == pytest.approx((-0.205, -0.1, 0.105))
    empty = fig2.comparison_frame({})
    assert empty.empty and {"label", "folds", "K_mean_conv", "tdll_diff_se"} <= set(empty.columns)


# ---------------------------------------------------------------------------------------------
# the committed Enron09 records: the numbers chapter 22 prints
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def enron():
    return load_present(RESULTS, ["enron09"])["enron09"]


def test_enron09_summary_is_the_grid_of_fig2(enron):
    s = fig2.fig2_summary(enron)
    assert len(s) == 3 * len(PAPER_T) + 1 and s.folds.sum() == 220 and (s.folds == 10).all()
    K = fig2.by_point(s, "K_mean")
    assert [round(K[m, 128], 1) for m in ("EPM", "CEPM", "DEPM")] == [32.5, 41.6, 15.9]
    assert round(fig2.point(s, "IDEPM").K_mean, 1) == 24.3
    assert fig2.best_Ts(enron, "tdll").best_T.tolist() == [8, 16, 16]
    p = fig2.paired_differences(enron, [("CEPM", "EPM"), ("CEPM", "DEPM")], "tdll", T=128)
    assert [f"{d:+.4f} ± {se:.4f}" for d, se in zip(p.difference, p.se)] == ["-0.0040 ± 0.0010", "-0.0065 ± 0.0006"]
    assert p.reading.tolist() == ["clearly lower"] * 2 and p.folds.tolist() == [10, 10]


def test_enron09_converged_runs_and_comparison(enron):
    conv = load_converged_present(RESULTS, ["enron09"])["enron09"]
    runs = fig2.converged_runs(conv, fig2.FIG2_MODELS)
    assert len(runs) == 220 and runs.converged.sum() == 112
    assert round(runs.start_gap[~runs.converged].max(), 1) == 2.9
    _, out = protocol_comparison(enron, conv)
    c = fig2.select(fig2.comparison_frame(out), [("EPM", 128), ("CEPM", 128), ("DEPM", 128), ("IDEPM", None)])
    assert [f"{x:.1f}" for x in c.K_mean_conv] == ["25.8", "25.4", "25.4", "26.0"]
    assert [f"{d:+.1f} ± {se:.1f}" for d, se in zip(c.K_mean_diff, c.K_mean_diff_se)] == \
        ["-6.7 ± 1.4", "-16.2 ± 1.0", "+9.6 ± 1.5", "+1.7 ± 0.7"]
