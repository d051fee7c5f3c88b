"""epm_lib.book.mixing_h3: chapter 24's IDEPM-against-DEPM table, on small hand-made mixing numbers
and on the committed Enron09 records (the numbers chapter 24 prints, with the chapter's own ESS and
settling rules re-stated here)."""
from pathlib import Path

import numpy as np
import pytest

from epm_lib.book import mixing_h3
from epm_lib.experiments import PAPER_T
from epm_lib.mixing import ess
from epm_lib.results import paper_runs

RESULTS = Path(__file__).resolve().parents[1] / "results"
ID = ("IDEPM", None)


def test_fold_mean_se_drops_non_finite_values():
    assert mixing_h3.fold_mean_se([1.0, np.nan, 3.0, np.inf]) == pytest.approx((2.0, 1.0, 2))
    m, se, n = mixing_h3.fold_mean_se([np.nan])
    assert np.isnan(m) and np.isnan(se) and n == 0
    assert np.isnan(mixing_h3.fold_mean_se([4.0])[1])
    assert mixing_h3.fold_summary({0: {"x": 1.0}, 1: {"x": 3.0}}, "x")[0] == 2.0


def test_paired_z_over_common_folds():
    a = {0: {"e": 10.0}, 1: {"e": 14.0}, 2: {"e": 99.0}}
    b = {0: {"e": 8.0}, 1: {"e": 10.0}}
    assert mixing_h3.paired_z(a, b, "e") == pytest.approx((3.0, 1.0, 3.0))
    assert np.isnan(mixing_h3.paired_z({0: {"e": 1.0}, 1: {"e": 2.0}}, {0: {"e": 0.0}, 1: {"e": 1.0}}, "e")[2])


def _toy():
    """One data set: the IDEPM and DEPM-2, DEPM-8 on two folds (DEPM-8 only on fold 0 of another data set)."""
    mix = {("d", ID): {0: dict(ess_tdll=50.0, ess_per_s=100.0, s_per_it=0.001),
                       1: dict(ess_tdll=60.0, ess_per_s=300.0, s_per_it=0.003)},
           ("d", ("DEPM", 2)): {0: dict(ess_tdll=40.0, ess_per_s=400.0), 1: dict(ess_tdll=30.0, ess_per_s=400.0)},
           ("d", ("DEPM", 8)): {0: dict(ess_tdll=50.0, ess_per_s=50.0), 1: dict(ess_tdll=60.0, ess_per_s=50.0)}}
    conv = {("d", ID): dict(it_tdll=100, s_tdll=0.1, it_K=50, s_K=0.05),
            ("d", ("DEPM", 2)): dict(it_tdll=26, s_tdll=0.01, it_K=26, s_K=0.01),
            ("d", ("DEPM", 8)): dict(it_tdll=200, s_tdll=0.4, it_K=100, s_K=0.2)}
    return mix, conv


def test_idepm_vs_depm_one_row_per_data_set_and_T():
    mix, conv = _toy()
    t = mixing_h3.idepm_vs_depm(mix, conv, ["d", "other"])
    assert list(t.columns) == mixing_h3.H3_COLUMNS and t["T"].tolist() == [2, 8] and set(t.dataset) == {"d"}
    r2, r8 = t.iloc[0], t.iloc[1]
    assert (r2.d_ess, r2.d_ess_se, r2.z_ess) == pytest.approx((20.0, 10.0, 2.0)) and np.isnan(r8.z_ess)   # SE 0: no z
    assert r2.ess_per_s == pytest.approx(0.5) and r8.ess_per_s == pytest.approx(4.0)
    assert (r8.tdll_it, r8.tdll_s, r8.K_it, r8.K_s) == pytest.approx((2.0, 4.0, 2.0, 4.0))
    lines = mixing_h3.comparison_lines(t, "d")
    assert lines[0] == "d: IDEPM against DEPM-T; ratios > 1 favour the IDEPM" and len(lines) == 4
    assert lines[3] == "     8     0.0± 0.0 ( nan)        4.00               2.00   4.00             2.00   4.00"
    assert mixing_h3.h3_claims(t, "d") == ({}, [])            # claims only for the data sets of Sec. 5


def _mixing(rec, n_tail=100):
    """Chapter 24's per-fold mixing numbers (its cell `mixing`)."""
    td, K = (np.array(rec["traces"][k][-n_tail:], float) for k in ("tdll", "K"))
    sec = np.array(rec["traces"]["seconds"], float)
    return dict(ess_tdll=ess(td), ess_K=ess(K), s_per_it=sec[-1] / sec.size,
                ess_per_s=ess(td) / (sec[-1] - sec[-n_tail - 1]))


def _settle(trace, tol, n_avg=100, smooth=51):
    """Chapter 24's settling iteration (its cell `settle`)."""
    final = trace[-n_avg:].mean()
    sm = np.convolve(trace, np.ones(smooth) / smooth, mode="valid")
    bad = np.flatnonzero(np.abs(sm - final) > tol * abs(final))
    return (0 if bad.size == 0 else bad[-1] + 1) + smooth // 2 + 1


def test_enron09_claims_of_chapter_24():
    runs = paper_runs(RESULTS, "enron09")
    mix, conv = {}, {}
    for cfg in [ID] + [("DEPM", T) for T in PAPER_T]:
        mix["enron09", cfg] = {f: _mixing(r) for f, r in runs[cfg].items()}
        tr = {k: np.array([runs[cfg][f]["traces"][k] for f in sorted(runs[cfg])], float).mean(0)
              for k in ("tdll", "K", "seconds")}
        t1, t2 = _settle(tr["tdll"], 0.02), _settle(tr["K"], 0.2)
        conv["enron09", cfg] = dict(it_tdll=t1, s_tdll=tr["seconds"][t1 - 1], it_K=t2, s_K=tr["seconds"][t2 - 1])
    t = mixing_h3.idepm_vs_depm(mix, conv, ["enron09"])
    assert len(t) == len(PAPER_T)
    lines = mixing_h3.comparison_lines(t, "enron09")
    assert lines[-1].startswith("   128    33.1± 7.7 ( 4.3)")
    claims, printed = mixing_h3.h3_claims(t, "enron09")
    assert len(claims) == 6 and all(claims.values())
    assert printed == ["enron09: DEPM-128 vs IDEPM: ESS/iter z = 4.3, ESS/s ratio 40.5, TDLL settling seconds "
                       "ratio 10.2, iterations ratio 0.56"]
    assert conv["enron09", ID]["it_tdll"] == 416
