"""epm_lib.book.overfit: chapter 23's numbers (the exact EPM against the printed a-update), on small
synthetic records with hand-computed values and on the committed Enron09 and MovieLens1M records
(the numbers chapter 23 prints)."""
from pathlib import Path

import numpy as np
import pytest

from epm_lib.book import overfit
from epm_lib.experiments import PAPER_T
from epm_lib.results import load_converged_present, load_present

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _rec(model, T, fold, K=1.0, tdll=-0.1, auc=0.5, gamma0=1.0, a1=0.1, a2=0.2):
    return {"model": model, "T": T, "fold": fold, "K_init": None, "K_mean": K, "tdll": tdll, "tdauc_pr": auc,
            "traces": {"hyper": {"gamma0": [99.0] + [gamma0] * 100, "a1": [a1] * 100, "a2": [a2] * 100}}}


def _conv(model, T, fold, K, tdll, auc, converged, per_chain=(1.0, 1.0, 2.0, 2.0)):
    r = _rec(model, T, fold, K, tdll, auc)
    r.update(converged=converged, settings={"starts": [1, 1, T, T]}, K_mean_per_chain=list(per_chain))
    return r


def test_gmean_end_and_slope():
    # gamma0 = c T (Theorem 2's family): slope 1; gamma0 fixed: slope 0; geometric mean over folds
    recs = [_rec("EPM", T, f, gamma0=3.0 * T * (f + 1), a1=[1.0, 4.0][f]) for T in PAPER_T for f in (0, 1)]
    recs += [_rec("DEPM", T, 0, gamma0=5.0) for T in PAPER_T]
    assert overfit.gmean_end(recs, "EPM", 8, "a1") == pytest.approx(2.0)         # sqrt(1 * 4)
    assert overfit.gmean_end(recs, "EPM", 8, "gamma0") == pytest.approx(24 * np.sqrt(2))   # the last 100 only
    assert np.isnan(overfit.gmean_end(recs, "CEPM", 8, "a1"))
    assert overfit.hyper_slope(recs, "EPM") == pytest.approx(1.0)
    assert overfit.hyper_slope(recs, "DEPM") == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(overfit.hyper_slope([_rec("EPM", 2, 0)], "EPM"))             # one T: no slope
    h = overfit.hyper_table({"x": recs}, models=("EPM", "DEPM"))
    assert list(h.columns) == ["dataset", "model", "gamma0_2", "gamma0_128", "a1_2", "a1_128", "a2_128", "slope"]
    assert h.model.tolist() == ["EPM", "DEPM"] and h.gamma0_128.tolist() == pytest.approx([384 * np.sqrt(2), 5.0])


def test_paired_by_T_and_diff_table():
    recs = [_rec("A", 2, f, K=3.0 + f, tdll=-0.1 + 0.01 * f, auc=0.5) for f in range(3)]
    recs += [_rec("B", 2, f, K=1.0, tdll=-0.1, auc=0.5 + 0.1 * f) for f in range(3)]
    p = overfit.paired_by_T(recs, "A", "B", Ts=(2, 4))
    assert list(p.columns) == ["T", "metric", "difference", "se", "folds"] and len(p) == 6
    k2 = p[(p["T"] == 2) & (p.metric == "K_mean")].iloc[0]
    assert (k2.difference, k2.se, k2.folds) == pytest.approx((3.0, 1 / np.sqrt(3), 3))
    assert p[p["T"] == 4].folds.tolist() == [0, 0, 0]
    md = overfit.diff_table(recs, "A", "B").splitlines()
    assert md[0] == "| T | ΔK | ΔTDLL | ΔTDAUC-PR |" and len(md) == 3        # T = 4: no common fold, no row
    assert md[2] == "| 2 | **+3.0 ± 0.6** | +0.0100 ± 0.0058 | -0.100 ± 0.058 |"   # 0.01 < 2 SE: not bold


def test_converged_readings_and_by_T():
    paper = [_rec(m, T, f, K=(30.0 if m == "EPM" else 20.0) + f, tdll=-0.07) for m in ("EPM", "DEPM", "CEPM")
             for T in PAPER_T for f in range(10)]
    conv = [_conv(m, T, f, K=25.0 + (0.1 * f if m == "EPM" else 0), tdll=-0.07, auc=0.3, converged=True)
            for m in ("EPM", "DEPM", "CEPM") for T in PAPER_T for f in range(10)]
    n, lines, claims = overfit.converged_readings(paper, conv)
    assert n["folds"] == list(range(10)) and n["d6"][0] == pytest.approx(10.0) and n["d6"][1] == 0
    assert n["dc"][0] == pytest.approx(0.45) and all(claims.values())
    assert lines == ["EPM-128 − DEPM-128 in K on folds [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]: +10.0 ± 0.0 (600 sweeps), "
                     "+0.5 ± 0.1 (converged)"]
    assert overfit.converged_readings(paper, [r for r in conv if r["fold"] != 3]) is None
    t = overfit.converged_by_T(paper, conv)
    assert len(t) == 4 * len(PAPER_T) and set(t.protocol) == {"600 sweeps", "converged"}
    md = overfit.converged_by_T_table(t).splitlines()
    assert md[2] == "| 2 | 10.0 ± 0.0 | 0.0000 ± 0.0000 | 0.45 ± 0.10 | 0.0000 ± 0.0000 |"   # tables.fmt
    assert overfit.converged_by_T(paper, [r for r in conv if r["fold"] < 9]) is None     # 9 folds: not drawn


def test_printed_converged_and_growth():
    paper = [_rec(m, T, f, K=50.0) for m in ("EPM", "EPMpaper") for T in (32, 128) for f in range(4)]
    conv = [_conv("EPMpaper", T, f, K=0.7 * T + f, tdll=-0.1 - 0.01 * f, auc=0.2, converged=f == 0,
                  per_chain=(0.7 * T, 0.7 * T, 0.7 * T + 1, 0.7 * T + 1)) for T in (32, 128) for f in (0, 1, 3)]
    conv += [_conv("EPM", T, f, K=22.0 + T / 64 + f % 2, tdll=-0.07, auc=0.3, converged=True) for T in (32, 128)
             for f in range(4)]
    pc = overfit.printed_converged(paper, conv)
    assert pc["T"].tolist() == [32, 128] and pc.folds.tolist() == [(0, 1, 3), (0, 1, 3)]
    assert pc.agree.tolist() == [1, 1] and pc.runs.tolist() == [3, 3] and pc.K600.tolist() == [50.0, 50.0]
    assert pc.K.tolist() == pytest.approx([0.7 * 32 + 4 / 3, 0.7 * 128 + 4 / 3])
    assert (pc.many - pc.few).tolist() == pytest.approx([1.0, 1.0])
    assert overfit.printed_converged_table(pc).splitlines()[2].startswith("| 32 | 0,1,3 | 1/3 | 50.0 | 23.7 |")
    gp, ge, common, claims = overfit.printed_growth(paper, conv, pc)
    assert common == [0, 1, 3] and gp[0] == pytest.approx(0.7 * 96) and ge[0] == pytest.approx(1.5)
    # at T = 32 the printed update holds about the exact EPM's K (22.4 + fold against 22.5 + fold % 2)
    assert [c for c, ok in claims.items() if not ok] == ["T=32: more atoms than exact"]
    assert overfit.printed_growth(paper, conv, pc[pc["T"] == 32]) is None


# ---------------------------------------------------------------------------------------------
# the committed records: the numbers chapter 23 prints
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return load_present(RESULTS, ["enron09", "movielens1m"])


@pytest.fixture(scope="module")
def conv():
    return load_converged_present(RESULTS, ["enron09"])["enron09"]


def test_enron09_overfit_reading(data):
    n, lines, claims = overfit.enron_overfit(data["enron09"])
    assert all(claims.values()) and len(claims) == 5
    assert lines[0] == "K at T = 32, 64, 128: EPMpaper 30.7, 58.0, 93.6; EPM 24.7, 30.9, 32.5"
    assert lines[2] == "largest |TDLL(EPM) - TDLL(DEPM)| over T: 0.0025"
    assert f"{n['s']['EPMpaper']:.2f}" == "0.75" and f"{n['a']['EPM'] / n['a']['EPMpaper']:.1f}" == "8.5"
    h = overfit.hyper_table({"enron09": data["enron09"]})
    assert [f"{s:.2f}" for s in h.slope] == ["-0.08", "0.75", f"{overfit.hyper_slope(data['enron09'], 'CEPM'):.2f}"]


def test_movielens1m_overfit_reading(data):
    n, lines, claims = overfit.movielens1m_overfit(data["movielens1m"])
    assert all(claims.values()) and n["first"] == 4 and f"{n['tdll_128']:+.4f}" == "-0.0037"
    assert lines[3] == "slope of log gamma0 on log T: EPM 0.77, EPMpaper 1.14, CEPM 0.95"


def test_enron09_converged_readings(data, conv):
    n, lines, claims = overfit.converged_readings(data["enron09"], conv)
    assert all(claims.values()) and f"{n['d6'][0]:+.1f} ± {n['d6'][1]:.1f}" == "+16.6 ± 1.7"
    t = overfit.converged_by_T(data["enron09"], conv)
    c = t[t.protocol == "converged"]
    assert (c.folds == 10).all() and c[c.metric == "K_mean"].difference.abs().max() < 1
    pc = overfit.printed_converged(data["enron09"], conv)
    assert pc["T"].tolist() == [32, 128] and pc.folds.tolist() == [(0, 1, 3, 4), (0, 1, 2, 3)]
    gp, ge, common, claims = overfit.printed_growth(data["enron09"], conv, pc)
    assert common == [0, 1, 3] and all(claims.values())
    assert f"{gp[0]:+.1f} ± {gp[1]:.1f}" == "+57.1 ± 1.3" and f"{ge[0]:+.1f} ± {ge[1]:.1f}" == "+2.6 ± 0.9"
