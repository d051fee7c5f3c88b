"""epm_lib.book's records, tables, verdicts and figures (through epm_lib.results and epm_lib.figures,
the names the chapters import): the helpers of the Part III chapters, on the committed
Enron09 records and on small synthetic record lists."""
import copy
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from epm_lib import figures as F  # noqa: E402
from epm_lib import results as R  # noqa: E402
from epm_lib.chains import agree  # noqa: E402
from epm_lib.experiments import PAPER_T  # noqa: E402
from epm_lib.fit_options import DEFAULT_K_INIT  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.fixture(scope="module")
def enron():
    data = R.load_present(RESULTS, ["enron09", "no-such-data"])
    assert list(data) == ["enron09"]
    return data["enron09"]


def test_grid_is_complete_and_checked(enron):
    assert R.completeness(enron, ("EPM", "CEPM", "DEPM")) == ((3 * len(PAPER_T) + 1) * 10,) * 2
    assert R.n_grid(enron) == (4 * len(PAPER_T) + 1) * 10
    assert R.check_records(enron) == len(enron)


def test_values_means_and_pairs(enron):
    v = R.values(enron, "DEPM", 16, "tdll")
    assert sorted(v) == list(range(10)) and all(x < 0 for x in v.values())
    mu, se, n = R.mean_se(v)
    a = np.array(list(v.values()))
    assert n == 10 and mu == pytest.approx(a.mean()) and se == pytest.approx(a.std(ddof=1) / np.sqrt(10))
    d, dse, dn = R.paired(v, v)
    assert (d, dse, dn) == (0.0, 0.0, 10)
    assert R.mean_se({}) [2] == 0 and np.isnan(R.mean_se({0: 1.0})[1])
    best, mus = R.best_T(enron, "DEPM", "tdll")
    assert best in PAPER_T and mus[best] == max(mus.values())
    assert R.clear(1.0, 0.1) == "clearly higher" and R.clear(-1.0, 0.1) == "clearly lower"
    assert R.clear(0.1, 0.1) == "no clear difference" and R.clear(np.nan, 0.1) == "not enough folds"
    h = R.hyper_end(enron, "DEPM", 16, "gamma0")
    assert len(h) == 10 and all(x > 0 for x in h.values())


def test_tables_and_figure(enron):
    t = R.number_table(enron, ("DEPM", "IDEPM"))
    lines = t.splitlines()
    assert lines[0].startswith("| model | T | folds |") and len(lines) == 2 + len(PAPER_T) + 1
    assert "∞" in lines[-1]
    assert R.fmt(np.nan, 1.0, 2) == "-" and R.fmt(1.23456, np.nan, 2) == "1.23"
    assert R.fmt(1.0, 0.5, 1) == "1.0 ± 0.5"
    fig = F.fig2_figure({"enron09": enron}, models=("EPM", "DEPM"), metrics=("K_mean",))
    assert len(fig.axes) == 1 and fig.axes[0].get_xscale() == "log"
    plt.close(fig)


def test_check_records_names_the_problem(enron):
    bad = copy.deepcopy(enron[:3])
    bad[1]["K_mean"] += 1.0
    with pytest.raises(ValueError, match="K_mean != its trace"):
        R.check_records(bad)
    dup = copy.deepcopy([enron[0], enron[0]])
    with pytest.raises(ValueError, match="duplicate run"):
        R.check_records(dup)
    other = copy.deepcopy(enron[:2])
    other[1]["data"]["fingerprint"] = "x"
    with pytest.raises(ValueError, match="runs of different data"):
        R.check_records(other)


def test_baselines_in_fig2_and_protocol_filter(enron):
    """The committed Enron09 baseline records (10 folds): values per fold, lines in the TDLL and
    TDAUC-PR panels at their fold means (not in the K panel); a masked run is not Sec. 5's."""
    b = R.load_baselines_present(RESULTS, ["enron09", "no-such-data"])
    assert list(b) == ["enron09"] and len(b["enron09"]) == R.EXPECTED_FOLDS
    v = R.baseline_values(b["enron09"], "popularity", "tdll")
    assert sorted(v) == list(range(10)) and all(x < 0 for x in v.values())
    assert R.baseline_values(b["enron09"], "svd-auto", "auc_roc", heldout="missing")
    fig = F.fig2_figure({"enron09": enron}, b, ("DEPM",))
    for ax, (metric, n_lines) in zip(fig.axes, (("K_mean", 0), ("tdll", 2), ("tdauc_pr", 2))):
        labels = [ln.get_label() for ln in ax.get_lines()]
        got = [lab for lab in labels if lab in ("popularity", "SVD (rank chosen)")]
        assert len(got) == n_lines, (metric, labels)
        if n_lines:
            line = ax.get_lines()[labels.index("popularity")]
            assert line.get_ydata()[0] == pytest.approx(R.mean_se(R.baseline_values(
                b["enron09"], "popularity", metric))[0])
    plt.close(fig)
    rec = copy.deepcopy(enron[0])
    assert R.paper_protocol(rec)
    rec["settings"]["heldout"] = "missing"
    assert not R.paper_protocol(rec)


def test_baseline_table(enron):
    b = R.load_baselines_present(RESULTS, ["enron09"])["enron09"]
    t = R.baseline_table(enron, b).splitlines()
    assert t[0].startswith("| predictor | folds | TDLL |") and len(t) == 2 + 3 + 2
    d, se, n = R.paired(R.values(enron, "IDEPM", None, "tdll"), R.baseline_values(b, "svd-auto", "tdll"))
    assert n == 10 and t[-1].startswith("| IDEPM | 10 |") and R.fmt(d, se, 4) in t[-1]


@pytest.mark.slow
def test_protocol_table():
    zeros, missing, brecs = R.load_protocols(RESULTS, "enron09")
    assert missing and all(r["settings"]["heldout"] == "missing" for r in missing)
    assert all("heldout" not in r["settings"] for r in zeros)
    table, folds = R.protocol_table(zeros, missing, brecs)
    assert folds == sorted({r["fold"] for r in missing})
    lines = table.splitlines()
    assert lines[0].startswith("| predictor | TDLL (zeros) |") and len(lines) == 2 + 4 + 2
    idepm = [r for r in missing if r["model"] == "IDEPM" and r["fold"] in folds]
    assert f"{np.mean([r['tdll'] for r in idepm]):.4f}" in lines[5]
    assert R.load_protocols(RESULTS, "no-such-data") == ([], [], [])


def test_part3_parameters_and_versions(tmp_path):
    from epm_lib.notebook import versions
    ok = {"results_dir": str(tmp_path), "datasets": ["enron09", "movielens1m"]}
    R.check_part3_parameters(ok)
    for bad, msg in (({"datasets": ["enron09", "enron09"]}, "distinct|twice|repeat"),
                     ({"datasets": ["nope"]}, "nope"),
                     ({"results_dir": str(tmp_path / "missing")}, "missing")):
        with pytest.raises(ValueError, match=msg):
            R.check_part3_parameters({**ok, **bad})
    import numba
    import scipy
    v = versions()
    assert v.startswith("python ") and f"numpy {np.__version__}" in v and f"scipy {scipy.__version__}" in v
    assert f"numba {numba.__version__}" in v and v.split(", ")[-1].startswith("epm_lib ")
    assert versions(pytest).endswith(f"pytest {pytest.__version__}")


def test_verdict_parts_reproduce_chapter_26(enron):
    """The criteria of chapter 26 (now in the library) decide Enron09's parts as the chapter says."""
    v = R.verdict_parts(enron, "EPM")
    assert set(v) == set(R.PART_ORDER)
    assert [v[p][0] for p in ("H1", "H2", "H3 (TDLL, TDAUC-PR)")] == [False, False, False]
    assert [v[p][0] for p in ("H1 K", "H1 K grows", "H1 K converges", "H1 TDLL", "H1 TDAUC-PR")] == \
        [False, True, False, False, False]
    assert [v[p][0] for p in ("H3 TDLL", "H3 TDAUC-PR")] == [False, True]
    assert all(v[p][2] == 10 for p in R.PART_ORDER)
    vp = R.verdict_parts(enron, "EPMpaper")
    assert [vp[p][0] for p in ("H1 K", "H1 K grows", "H1 K converges", "H1 TDLL", "H1 TDAUC-PR")] == \
        [True, True, False, True, True]
    # an H1 K number is the paired EPM - CEPM difference of the records
    d, se, n = R.paired(R.values(enron, "EPM", 128, "K_mean"), R.values(enron, "CEPM", 128, "K_mean"))
    assert f"EPM−CEPM {d:+.1f} ± {se:.1f}" in v["H1 K"][1] and n == 10
    # H3 against a fixed T: the IDEPM against DEPM-128; 'DEPM-128 best' is then undecided
    v128 = R.verdict_parts(enron, "EPM", h3_T=128)
    assert "IDEPM−DEPM-128" in v128["H3 TDLL"][1] and v128["H2 DEPM-128 best"][0] is None
    assert R.verdict_label(v["H1 K grows"]).startswith("✓ **supported** (")
    assert R.verdict_label((True, "x", 3)) == "✓ **supported** [3 folds] (x)"
    assert R.verdict_label((False, "x", 10)) == "✗ **not supported** (x)"
    assert R.verdict_label((None, "", 0)) == "incomplete"
    res, table = R.verdict_table({"enron09": enron}, ["enron09", "movielens1m"])
    assert table.splitlines()[0] == "| part | enron09 | movielens1m |" and "not run" in table
    assert len(table.splitlines()) == 2 + len(R.PART_ORDER)
    # with two folds only, every part is decided on two folds; with one, nothing is decided
    two = R.on_folds(enron, [0, 1])
    assert {r["fold"] for r in two} == {0, 1}
    assert all(x[2] == 2 for p, x in R.verdict_parts(two).items() if x[0] is not None)
    assert all(x[0] is None for x in R.verdict_parts(R.on_folds(enron, [0])).values())


@pytest.fixture(scope="module")
def converged():
    conv = R.load_converged_present(RESULTS, ["enron09", "no-such-data"])
    assert list(conv) == ["enron09"]
    return conv["enron09"]


def test_converged_records_and_protocol_comparison(enron, converged):
    assert R.check_converged(converged) == len(converged)
    assert {r["data"]["fingerprint"] for r in converged} == {enron[0]["data"]["fingerprint"]}
    assert all(r["settings"]["split_merge"] == (20 if r["model"] in ("IDEPM", "DEPM") else 0)
               for r in converged)
    table, out = R.protocol_comparison(enron, converged)
    present = {(r["model"], r["T"]) for r in converged} & set(R.CONVERGED_MODELS)
    assert set(out) == present and ("IDEPM", None) in out and ("DEPM", 128) in out
    assert len(table.splitlines()) == 2 + len(present)
    for (m, T), e in out.items():
        cv = [r for r in converged if r["model"] == m and r["T"] == T]
        assert e["folds"] == sorted(r["fold"] for r in cv)
        paper = np.mean([R.values(enron, m, T, "K_mean")[f] for f in e["folds"]])
        assert e["K_mean"][0] == pytest.approx(paper)
        assert e["K_mean"][1] == pytest.approx(np.mean([r["K_mean"] for r in cv]))
        assert e["K_mean"][2][0] == pytest.approx(e["K_mean"][1] - e["K_mean"][0])
        assert e["converged"] == sum(r["converged"] for r in cv)
    # the verdicts on the same folds under both protocols
    vt, flips, folds, (before, after) = R.verdict_changes(enron, converged)
    assert vt.splitlines()[0].startswith("| part | 600 sweeps (same folds) | run to agreement or the cap | verdict |")
    assert all(row.split("|")[4].strip() in ("✓", "✗") for row in vt.splitlines()[2:])
    assert set(flips) <= set(R.PART_ORDER)
    assert folds == R.common_folds(converged) and all(
        f in {r["fold"] for r in converged if (r["model"], r["T"]) == mt} for f in folds for mt in present)
    # a part is listed only when the converged records decide it; both columns use those folds
    h3 = R.h3_level(R.on_folds(converged, folds), folds)
    decided = R.verdict_parts(R.on_folds(converged, folds), "EPM", h3)
    assert after == decided and before == R.verdict_parts(R.on_folds(enron, folds), "EPM", h3)
    # the start groups of a record: chains from the fewest and from the most atoms
    r = dict(converged[0], settings=dict(converged[0]["settings"], starts=[1, 50, 1, 50]),
             K_mean_per_chain=[2.0, 10.0, 4.0, 12.0])
    assert R.start_means(r) == (3.0, 11.0)
    listed = [line.split(" | ")[0].removeprefix("| ") for line in vt.splitlines()[2:]]
    assert listed == [p for p in R.PART_ORDER if decided[p][0] is not None]
    for p in flips:
        assert decided[p][0] != R.verdict_parts(R.on_folds(enron, folds), "EPM", h3)[p][0]
    assert R.common_folds([]) == []
    two = [dict(r, fold=f) for r in converged[:1] for f in (3, 4)]
    assert R.common_folds(two) == [3, 4]


def test_check_converged_names_the_problem(converged):
    bad = copy.deepcopy(converged[0])
    with pytest.raises(ValueError, match="second converged record"):
        R.check_converged([converged[0], bad])
    bad["converged"] = not bad["converged"]
    with pytest.raises(ValueError, match="disagrees with its R-hat"):
        R.check_converged([bad])
    # R-hat undefined: accepted only for a K that is one value in every chain
    bad = copy.deepcopy(next(r for r in converged if not r["diagnostics"]["K"].get("constant")))
    bad["diagnostics"]["K"]["rhat"] = None
    with pytest.raises(ValueError, match="R-hat or ESS missing"):
        R.check_converged([bad])
    bad["diagnostics"]["K"]["constant"] = True
    bad["K_mean_per_chain"] = [2.0, 2.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="K constant in every chain"):
        R.check_converged([bad])
    bad["K_mean_per_chain"] = [2.0] * 4
    bad["converged"] = agree(bad["diagnostics"]["tdll"], bad["settings"]["rhat"])
    assert R.check_converged([bad]) == 1
    bad = copy.deepcopy(converged[0])
    bad["tdll"] = 0.5
    with pytest.raises(ValueError, match="TDLL"):
        R.check_converged([bad])
    bad = copy.deepcopy(converged[0])
    bad["data"]["fingerprint"] = "other"
    with pytest.raises(ValueError, match="different data"):
        R.check_converged([converged[0], dict(bad, fold=99)])


def test_verdict_changes_decides_the_T_parts_with_their_records(enron, converged):
    """With converged records of the EPM-32 and the CEPM-64, DEPM-64 (here: copies of the T = 128 ones
    with K changed), "H1 K grows" and "H1 K converges" are decided, on the folds every model has."""
    base = [r for r in converged if r["T"] == 128 or r["model"] == "IDEPM"]
    folds = R.common_folds(base)
    assert len(folds) >= 2
    extra = []
    for r in base:
        if r["model"] == "EPM" and r["fold"] in folds:
            extra.append(dict(copy.deepcopy(r), T=32, K_mean=r["K_mean"] - 10.0 - r["fold"] % 2))
        if r["model"] in ("CEPM", "DEPM") and r["fold"] in folds:
            extra.append(dict(copy.deepcopy(r), T=64, K_mean=r["K_mean"] + 0.1 * (r["fold"] % 3 - 1)))
    before = R.verdict_changes(enron, base)[0]
    assert "H1 K grows" not in before and "H1 K converges" not in before
    table, flips, used, _ = R.verdict_changes(enron, base + extra)
    assert used == folds
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in table.splitlines()[2:]}
    assert "**supported**" in rows["H1 K grows"].split(" | ")[2]          # K(128) - K(32) = 10.5 atoms
    assert "**supported**" in rows["H1 K converges"].split(" | ")[2]      # K(128) - K(64) about 0
    # without the DEPM-64 on one fold, that fold leaves every part
    fewer = [r for r in base + extra if not (r["model"] == "DEPM" and r["T"] == 64 and r["fold"] == folds[0])]
    assert R.verdict_changes(enron, fewer)[2] == folds[1:]
    # the comparison table lists the new (model, T) in CONVERGED_MODELS order
    t, out = R.protocol_comparison(enron, base + extra)
    names = [line.split(" | ")[0].removeprefix("| ") for line in t.splitlines()[2:]]
    present = {(r["model"], r["T"]) for r in base + extra}
    assert names == [m if T is None else f"{m}-{T}" for m, T in R.CONVERGED_MODELS if (m, T) in present]


def test_h3_level_and_verdicts_against_the_best_depm(enron, converged):
    """Once the converged records hold every DEPM-T, the IDEPM meets the best DEPM and "H2 DEPM-128
    best" is decided (here the other T are copies of the DEPM-128 with their TDLL shifted)."""
    base = [r for r in converged if r["T"] == 128 or r["model"] == "IDEPM"]
    folds = R.common_folds(base)
    assert R.h3_level(base, folds) == 128
    table = R.verdict_changes(enron, base)[0]
    assert "H2 DEPM-128 best" not in table
    shift = {T: 0.001 * (T == 16) - 0.002 * (T < 16) for T in PAPER_T if T != 128}
    extra = [dict(copy.deepcopy(r), T=T, tdll=r["tdll"] + dt + 1e-5 * (r["fold"] % 3))
             for r in base if r["model"] == "DEPM" and r["fold"] in folds for T, dt in shift.items()]
    assert R.h3_level(base + extra, folds) == "best"
    assert R.h3_level(base + extra, folds[:1]) == 128            # one fold decides nothing
    missing_fold = [r for r in extra if not (r["T"] == 2 and r["fold"] == folds[0])]
    assert R.h3_level(base + missing_fold, folds) == 128
    table, flips, used, _ = R.verdict_changes(enron, base + extra)
    assert used == folds
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in table.splitlines()[2:]}
    # the DEPM-16 is 0.001 nats ahead of the DEPM-128 on every fold: not the best, clearly
    assert "**not supported**" in rows["H2 DEPM-128 best"][2] and "DEPM-128−DEPM-16" in rows["H2 DEPM-128 best"][2]
    assert "IDEPM−DEPM-16" in rows["H3 TDLL"][2]
    assert R.verdict_changes(enron, base + extra, h3_T=128)[0] == R.verdict_changes(enron, base)[0]


def test_protocols_figure(enron, converged):
    fig = F.protocols_figure(enron, converged)
    axes = fig.axes
    assert len(axes) == 6 and len(fig.legends) == 1
    n = len({r["fold"] for r in converged})
    assert [ax.get_title() for ax in axes] == [f"{name}, {p} ({n} folds)" for name in ("K", "TDLL", "TDAUC-PR")
                                               for p in ("600 sweeps", "agreement or cap")]
    assert [ax.get_xlabel() for ax in axes] == [""] * 4 + ["truncation level $T$"] * 2
    # a common y-axis per row: each protocol's panels of one metric share their limits
    assert all(axes[i].get_ylim() == axes[i + 1].get_ylim() for i in (0, 2, 4))
    # the IDEPM band sits at the fold mean of each protocol's records
    idepm = [line for line in axes[1].get_lines() if line.get_label() == "IDEPM"]
    assert idepm and idepm[0].get_ydata()[0] == pytest.approx(R.mean_se(R.values(converged, "IDEPM", None, "K_mean"))[0])
    plt.close(fig)


def test_model_spread(enron, converged):
    """The largest minus the smallest fold mean among the models, per T; a T some model lacks is left out."""
    ms = ("EPM", "CEPM", "DEPM")
    spread = R.model_spread(converged, ms, "K_mean")
    assert list(spread) == list(PAPER_T)
    mus = [R.mean_se(R.values(converged, m, 64, "K_mean"))[0] for m in ms]
    assert spread[64] == pytest.approx(max(mus) - min(mus)) and spread[64] >= 0
    assert spread[2] == pytest.approx(0.0, abs=1e-3)                # K = T = 2 in every chain
    # the 600-sweep records at T = 128: CEPM 41.6, DEPM 15.9 atoms (chapter 22)
    assert R.model_spread(enron, ms, "K_mean", Ts=(128,))[128] > 20
    assert R.model_spread([r for r in converged if r["T"] != 32], ms, "tdll", Ts=(16, 32)).keys() == {16}
    assert R.model_spread(converged, ("EPM",), "tdll") == {T: 0.0 for T in PAPER_T}


def test_planted_scores():
    """benchmarks/starts_planted.json: five pair folds of each model and start, and the SVD's."""
    import json
    bench = json.loads((RESULTS.parent / "benchmarks" / "starts_planted.json").read_text())
    s = R.planted_scores(bench)
    assert "SVD" in s and "IDEPM/data" in s and "DEPM/paper" in s and not any("toy90" in k for k in s)
    assert all(list(v) == [0, 1, 2, 3, 4] for v in s.values())
    assert s["SVD"][0] == bench["0/SVD"]["svd-auto"]["tdauc_pr"]
    assert s["EPM/data+hold"][3] == bench["3/EPM/data+hold"]["tdauc_pr"]
    assert R.planted_scores(bench, "tdll")["IDEPM/paper"][1] == bench["1/IDEPM/paper"]["tdll"]
    mu = {k: R.mean_se(v)[0] for k, v in s.items()}
    assert all(mu[f"{m}/paper"] < 0.1 < 0.4 < mu["SVD"] < mu[f"{m}/data"] for m in ("IDEPM", "DEPM", "EPM"))
    assert R.planted_scores({"network": {}, "toy90/0/EPM/data": {"tdauc_pr": 1.0}}) == {}


def test_verdict_table_marks_every_decided_verdict_and_at_start_share():
    from epm_lib.results import at_start_share, verdict_table
    recs = []
    for fold in range(3):
        for model, T, K in (("EPM", 128, 128.0), ("EPM", 32, 31.0), ("CEPM", 128, 20.0), ("DEPM", 128, 10.0),
                            ("CEPM", 64, 20.0), ("DEPM", 64, 10.0)):
            recs.append(dict(model=model, T=T, fold=fold, K_mean=K + fold, tdll=-0.1 - 0.01 * fold,
                             tdauc_pr=0.5 + 0.01 * fold))
    _, plain = verdict_table({"x": recs}, ["x", "y"], part_names=["H1 K grows"])
    _, marked = verdict_table({"x": recs}, ["x", "y"], part_names=["H1 K grows"], marks={"x": "†"})
    assert "**supported** [3 folds] (T=128" in plain and "**supported** [3 folds] † (T=128" in marked
    assert "not run" in marked and marked.count("†") == 1
    # at T = 128: EPM at 128-130 atoms (at the start), CEPM at 20-22 and DEPM at 10-12 (not)
    assert at_start_share(recs) == pytest.approx(3 / 9)
    # at T = 32: the EPM at 31, 32, 33 atoms: two of three at >= 0.99 T
    assert at_start_share(recs, T=32) == pytest.approx(2 / 3)
    assert np.isnan(at_start_share([dict(model="IDEPM", T=None, K_mean=3.0)]))


# ---------------------------------------------------------------------------------------------
# narrow and the figures of epm_lib.figures, on small synthetic record lists
# ---------------------------------------------------------------------------------------------
def test_narrow_keeps_the_key_columns_in_order():
    table = R.md_table(["model", "folds", "R-hat ≤ target", "K 600", "K conv."],
                       [["CEPM-128", 10, "7 of 10", "41.6", "25.5"], ["IDEPM", 10, "10 of 10", "24.4", "26.1"]])
    got = R.narrow(table, {"model": "model", "K conv.": "K (conv.)", "R-hat ≤ target": "R̂ ≤ 1.01"})
    assert got.splitlines() == ["| model | K (conv.) | R̂ ≤ 1.01 |", "|---|---|---|",
                                "| CEPM\u2011128 | 25.5 | 7/10 |", "| IDEPM | 26.1 | 10/10 |"]
    # the default: the key columns of protocol_comparison's table, in PROTOCOL_KEY_COLUMNS' order
    recs = [dict(model="EPM", T=2, fold=f, K_mean=2.0, tdll=-0.1 - 0.01 * f, tdauc_pr=0.5, converged=True,
                 settings={"starts": [1, 1, 2, 2]}, K_mean_per_chain=[2.0, 2.0 - 0.1 * f, 2.0, 2.0],
                 diagnostics={"K": {"rhat": None}, "tdll": {"rhat": 1.0 + 0.001 * f}}) for f in range(3)]
    wide, _ = R.protocol_comparison(recs, recs, models=(("EPM", 2),))
    head = R.narrow(wide).splitlines()[0]
    assert head == "| " + " | ".join(R.PROTOCOL_KEY_COLUMNS.values()) + " |"
    assert R.narrow(wide).splitlines()[2].startswith("| EPM\u20112 | 3/3 | 1.002 | 0.1 |")   # the starts' largest gap


def test_narrow_refuses_an_unknown_column():
    table = R.md_table(["model", "K 600"], [["EPM-2", "2.0"]])
    with pytest.raises(ValueError, match=r"no column 'K conv\.' in the table \(its columns: 'model', 'K 600'\)"):
        R.narrow(table, {"model": "model", "K conv.": "K"})
    with pytest.raises(ValueError, match="no column to keep"):
        R.narrow(table, {})


def _synthetic(n_folds=R.EXPECTED_FOLDS, models=("EPM", "CEPM", "DEPM"), shift=0.0):
    """Records of a small grid: every model at every T of Fig. 2 plus the IDEPM, on n_folds folds."""
    recs = []
    for f in range(n_folds):
        for m in models:
            for T in PAPER_T:
                recs.append(dict(model=m, T=T, fold=f, K_mean=min(T, 20) - 0.1 * f,
                                 tdll=-0.1 + 0.001 * np.log2(T) + 0.0005 * f + shift,
                                 tdauc_pr=0.2 + 0.01 * np.log2(T) + 0.002 * f))
        recs.append(dict(model="IDEPM", T=None, fold=f, K_init=DEFAULT_K_INIT, K_mean=15.0 + f,
                         tdll=-0.09 + 0.0005 * f + shift, tdauc_pr=0.3 + 0.002 * f))
    return recs


def test_style_is_okabe_ito():
    """The book's figures draw every model in the Okabe-Ito colours (chapters 22, 23, the landing page)."""
    assert R.OKABE_ITO == ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
    assert {m: st["color"] for m, st in R.STYLE.items()} == {
        "EPM": "#D55E00", "EPMpaper": "#CC79A7", "CEPM": "#0072B2", "DEPM": "#009E73", "IDEPM": "k"}
    assert list(R.STYLE) == ["EPM", "EPMpaper", "CEPM", "DEPM", "IDEPM"]          # the legend's order
    assert R.BASELINE_STYLE["svd-auto"]["color"] == "#CC79A7"


def test_fig2_figure_one_row_per_data_set():
    data = {"enron09": _synthetic(), "movielens1m": _synthetic(shift=0.01), "mine": _synthetic(2, ("DEPM",))}
    fig = F.fig2_figure(data)
    axes = np.array(fig.axes).reshape(3, 3)
    assert fig.get_size_inches() == pytest.approx((7.5, 3 * 2.25 + 0.5))
    assert [[ax.get_title() for ax in row] for row in axes] == [
        [f"{name}: {m}" for m in ("K", "TDLL", "TDAUC-PR")] for name in ("Enron09", "MovieLens1M", "mine")]
    assert [ax.get_xlabel() for ax in axes.flat] == [""] * 6 + ["truncation level $T$"] * 3
    assert all(ax.get_legend() is None for ax in axes.flat) and len(fig.legends) == 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # each model once; "mine" has 2 folds only, so its IDEPM line says so
    assert sorted(legend) == ["CEPM", "DEPM", "EPM", "IDEPM", "IDEPM (2 folds)"]
    assert [t.get_text() for t in axes[0, 0].get_xticklabels()] == ["2", "", "8", "", "32", "", "128"]
    # the IDEPM line lies inside its panel (ylim widened): K at 19.5, the fold mean of 15 ... 24
    idepm = [ln for ln in axes[0, 0].get_lines() if ln.get_label() == "IDEPM"][0]
    lo, hi = axes[0, 0].get_ylim()
    assert idepm.get_ydata()[0] == pytest.approx(19.5) and lo < 19.5 < hi
    plt.close(fig)


def test_fig2_figure_legend_order_labels_and_baselines():
    data = {"enron09": _synthetic(models=("DEPM", "EPMpaper", "EPM"))}
    base = {"enron09": [{"fold": f, "heldout": {"zeros": {
        "popularity": {"tdll": -0.2, "tdauc_pr": 0.05}, "svd-auto": {"tdll": -0.12, "tdauc_pr": 0.25}}}}
        for f in range(R.EXPECTED_FOLDS)]}
    fig = F.fig2_figure(data, base, models=("DEPM", "EPMpaper", "EPM"), labels={"EPMpaper": "printed"})
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # six entries in three columns, to be read row by row: the models in STYLE's order (EPM,
    # EPMpaper under its label, DEPM), then IDEPM and the baselines; matplotlib fills column by column
    assert legend == ["EPM", "IDEPM", "printed", "popularity", "DEPM", "SVD (rank chosen)"]
    assert fig.legends[0]._ncols == 3
    assert len(fig.axes) == 3 and [ax.get_title() for ax in fig.axes] == ["Enron09: K", "Enron09: TDLL",
                                                                          "Enron09: TDAUC-PR"]
    plt.close(fig)


def test_finish_figure_widens_the_y_range_to_hold_every_line():
    fig, axes = plt.subplots(1, 2, layout="constrained", squeeze=False)
    for ax in axes.flat:
        ax.plot(PAPER_T, np.linspace(0, 1, len(PAPER_T)), label="model")
        ax.axhline(1.5, label="band")
        ax.set_ylim(0, 1)                         # the horizontal line off the panel
    F.finish_figure(fig, axes)
    for ax in axes.flat:
        lo, hi = ax.get_ylim()
        assert lo == pytest.approx(-0.06 * 1.5) and hi == pytest.approx(1.5 + 0.06 * 1.5)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["model", "band"]
    plt.close(fig)


def test_finish_figure_without_ylim_keeps_the_limits():
    fig, axes = plt.subplots(1, 2, layout="constrained", squeeze=False)
    for ax in axes.flat:
        ax.plot(PAPER_T, [1.0 / t for t in PAPER_T], label="slope")
        ax.set(xscale="log", yscale="log", ylim=(0.1, 0.2))
    F.finish_figure(fig, axes, ylim=False)
    assert [ax.get_ylim() for ax in axes.flat] == [pytest.approx((0.1, 0.2))] * 2
    assert all(len(ax.get_xticks(minor=True)) == 0 for ax in axes.flat)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["slope"]
    plt.close(fig)


def test_network_scores_reads_the_networks_benchmark():
    """network_scores: per network, one label per model/start and 'SVD' = the better of the two SVDs per
    fold; 'info' records skipped; on the stored benchmark every network has five folds of each label."""
    import json
    from epm_lib.results import network_scores

    bench = {"net/info": {"nodes": 3},
             "net/0/SVD": {"svd-auto": {"tdauc_pr": 0.2}, "svd-k16": {"tdauc_pr": 0.3}, "popularity": {"tdauc_pr": 0.1}},
             "net/1/SVD": {"svd-auto": {"tdauc_pr": 0.5}, "svd-k16": {"tdauc_pr": 0.4}, "popularity": {"tdauc_pr": 0.1}},
             "net/1/IDEPM/default": {"tdauc_pr": 0.6}, "net/0/IDEPM/default": {"tdauc_pr": 0.7}}
    got = network_scores(bench)
    assert got == {"net": {"IDEPM/default": {0: 0.7, 1: 0.6}, "SVD": {0: 0.3, 1: 0.5}}}
    stored = network_scores(json.loads((Path(__file__).resolve().parent.parent / "benchmarks" /
                                        "starts_networks.json").read_text()))
    assert set(stored) == {"planted", "unequal", "sparse", "lfr-docs", "lfr"}
    for net, labels in stored.items():
        for m in ("IDEPM", "DEPM", "EPM"):
            assert len(labels[f"{m}/default"]) == 5 and len(labels[f"{m}/truth"]) == 5, (net, m)
        assert len(labels["SVD"]) == 5


def test_network_scores_reads_the_small_groups_benchmark():
    """network_scores on bench_small_groups.py's records: "ranks" records (no score) left out, the
    estimator's "network/fold/estimator" read as the label "estimator"; on the stored file both
    networks have five folds of every model's three starts, the SVD and the estimator."""
    import json
    from epm_lib.book.start_benchmarks import network_scores

    bench = {"g/0/IDEPM/ranks": {"spectral": 4, "heldout": 32}, "g/0/IDEPM/heldout": {"tdauc_pr": 0.1},
             "g/0/estimator": {"tdauc_pr": 0.2, "K_start": 32}, "g/info": {"nodes": 240}}
    assert network_scores(bench) == {"g": {"IDEPM/heldout": {0: 0.1}, "estimator": {0: 0.2}}}
    stored = network_scores(json.loads((Path(__file__).resolve().parent.parent / "benchmarks" /
                                        "small_groups.json").read_text()))
    assert set(stored) == {"groups40", "lfr-small"}
    for net, labels in stored.items():
        for m in ("IDEPM", "DEPM", "EPM"):
            for start in ("spectral", "heldout", "truth"):
                assert len(labels[f"{m}/{start}"]) == 5, (net, m, start)
        assert len(labels["SVD"]) == 5 and len(labels["estimator"]) == 5, net


def test_start_differences_pairs_folds_after_averaging_chains():
    """start_differences: each fold's chains (seed 2017 untagged, others '@seed', other lengths '~sweeps')
    averaged per start first, then default - paper paired over the folds that have every chain; SVD records
    and folds with a chain missing are left out."""
    from epm_lib.results import start_differences

    def rec(v):
        return {"tdauc_pr": v, "tdauc_roc": v / 2, "tdll": -v}

    bench = {"n/zeros/0/SVD": {"svd-auto": rec(0.9)},
             "n/zeros/0/EPM/default": rec(0.5), "n/zeros/0/EPM/default@2018": rec(0.7),
             "n/zeros/0/EPM/paper": rec(0.4), "n/zeros/0/EPM/paper@2018": rec(0.4),
             "n/zeros/1/EPM/default": rec(0.3), "n/zeros/1/EPM/default@2018": rec(0.3),
             "n/zeros/1/EPM/paper": rec(0.2), "n/zeros/1/EPM/paper@2018": rec(0.4),
             "n/zeros/2/EPM/default": rec(0.3), "n/zeros/2/EPM/paper": rec(0.3),       # no @2018 chains
             "n/zeros/0/EPM/default~5000": rec(0.1), "n/zeros/0/EPM/paper~5000": rec(0.2)}
    got = start_differences(bench, seeds=(2017, 2018))
    assert list(got) == [("n", "zeros", "EPM")]
    d, se, n, a, b = got[("n", "zeros", "EPM")]["tdauc_pr"]
    assert n == 2 and d == pytest.approx(0.1) and se == pytest.approx(0.1) and (a, b) == pytest.approx((0.45, 0.35))
    assert got[("n", "zeros", "EPM")]["tdll"][0] == pytest.approx(-0.1)
    assert start_differences(bench, seeds=(2017,))[("n", "zeros", "EPM")]["tdauc_pr"][:3] == \
        pytest.approx((0.2 / 3, np.std([0.1, 0.1, 0.0], ddof=1) / np.sqrt(3), 3))
    long = start_differences(bench, seeds=(2017,), sweeps=5000)[("n", "zeros", "EPM")]["tdauc_pr"]
    assert long[:3] == pytest.approx((-0.1, np.nan, 1), nan_ok=True)


def test_start_tag_is_the_benchmarks_key_convention():
    """start_tag: chapter 30's seed and 500 sweeps untagged; other seeds '@seed', other lengths '~sweeps';
    every stored record of starts_chapter30.json ends in one."""
    import json
    from epm_lib.results import start_tag

    assert start_tag("default") == "default" and start_tag("paper", 2018) == "paper@2018"
    assert start_tag("default", 2017, 5000) == "default~5000" and start_tag("paper", 2019, 5000) == "paper@2019~5000"
    bench = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "starts_chapter30.json").read_text())
    tags = {start_tag(st, s, n) for st in ("default", "paper") for s in range(2017, 2029) for n in (500, 5000)}
    assert all(k.rsplit("/", 1)[1] in tags for k in bench if k.count("/") == 4 and k.split("/")[3] != "SVD")


def _bench_starts():
    """benchmarks/bench_starts.py as a module (the benchmarks are scripts, not a package)."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_starts.py"
    spec = importlib.util.spec_from_file_location("bench_starts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stored_hold_schedules_are_complete():
    """benchmarks/starts_holds.json (bench_starts.py --part holds): every schedule of HOLDS from the paper's
    start and the data's start held, five folds of each community network and model, toy90's three folds
    (holds longer than its 500 burn-in sweeps skipped), each with finite scores; chapter 29b reads it."""
    import json
    from epm_lib.results import network_scores

    B = _bench_starts()
    held = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "starts_holds.json").read_text())
    auc, tdll = network_scores(held), network_scores(held, "tdll")
    assert set(auc) == {*B.NETWORKS, "toy90"}
    labels = [B.hold_tag(h) for h in B.HOLDS] + ["data+" + B.hold_tag(B.DATA_HOLD)]
    for net in B.NETWORKS:
        for m in ("IDEPM", "DEPM", "EPM"):
            for lab in labels:
                assert sorted(auc[net][f"{m}/{lab}"]) == [0, 1, 2, 3, 4], (net, m, lab)
    for m in ("IDEPM", "DEPM", "EPM"):
        for lab in ["paper", "data", *(lab for lab, h in zip(labels, [*B.HOLDS, B.DATA_HOLD]) if h[0] <= 500)]:
            assert sorted(tdll["toy90"][f"{m}/{lab}"]) == list(B.TOY_FOLDS), (m, lab)
        assert f"{m}/{B.hold_tag((600, 0.1))}" not in tdll["toy90"]
    assert all(np.isfinite(v) for d in (auc, tdll) for n in d.values() for f in n.values() for v in f.values())
    assert B.hold_tag((300, 0.1)) == "hold300x0.1" and B.hold_tag((50, 1.0)) == "hold50x1"


def test_bench_starts_save_merges_what_another_process_wrote(tmp_path):
    """bench_starts._save: records another process wrote to the file meanwhile are kept (and added to the
    caller's dict); the caller's own records win on a shared key; merge=False (--redo) overwrites."""
    import json

    B = _bench_starts()
    out = tmp_path / "starts.json"
    mine = {"a/0/EPM/paper": {"tdll": -1.0}}
    B._save(mine, out)
    other = {"b/0/EPM/paper": {"tdll": -2.0}, "a/0/EPM/paper": {"tdll": -9.0}}
    B._save(other, out)                           # a second process, started before the first record
    assert json.loads(out.read_text()) == {"a/0/EPM/paper": {"tdll": -9.0}, "b/0/EPM/paper": {"tdll": -2.0}}
    mine["c/0/EPM/paper"] = {"tdll": -3.0}
    B._save(mine, out)
    assert json.loads(out.read_text()) == {"a/0/EPM/paper": {"tdll": -1.0}, "b/0/EPM/paper": {"tdll": -2.0},
                                           "c/0/EPM/paper": {"tdll": -3.0}}
    assert "b/0/EPM/paper" in mine
    B._save({"c/0/EPM/paper": {"tdll": -3.0}}, out, merge=False)
    assert json.loads(out.read_text()) == {"c/0/EPM/paper": {"tdll": -3.0}}


def test_stored_epm_shedding_record():
    """results/k_traces/epm_shedding_movielens100k.json (benchmarks/epm_shedding.py; read by chapter 29):
    the four chains, their thinned traces whole and finite, K at the recorded sweeps equal to the trace's."""
    import json

    rec = json.loads((RESULTS / "k_traces" / "epm_shedding_movielens100k.json").read_text())
    s = rec["settings"]
    assert set(rec["chains"]) == {"paper-updates", "paper", "scaled", "data"} and s["T"] == 128
    for name, c in rec["chains"].items():
        n = s["n_iter"] // s["thin"]
        assert c["sweep"] == list(range(s["thin"], s["n_iter"] + 1, s["thin"]))
        for v in ("K", "tdll", "a1", "a2", "gamma0"):
            assert len(c[v]) == n and np.all(np.isfinite(c[v])), (name, v)
        for sweep, k in c["K_at"].items():
            assert c["K"][c["sweep"].index(int(sweep))] == k
        assert max(c["K"]) <= s["T"] and np.isfinite(c["tdll_final"])


def test_rule_differences_pairs_heldout_with_default():
    """rule_differences: each '.../heldout[@seed]' record against the '.../default[@seed]' record of the same
    key in any of the default files, averaged per network (and protocol) and model; records without a
    default are left out; on the stored files the comparisons cover the five networks and chapter 30's three."""
    import json
    from epm_lib.book.start_benchmarks import rule_differences

    others = {"n/0/IDEPM/heldout": {"tdauc_pr": 0.5, "same_K": True},
              "n/1/IDEPM/heldout": {"tdauc_pr": 0.7, "same_K": False},
              "k/zeros/0/EPM/heldout@2018": {"tdauc_pr": 0.2}, "k/zeros/0/EPM/heldout": {"tdauc_pr": 0.3},
              "n/2/IDEPM/heldout": {"tdauc_pr": 0.9},                      # no default: left out
              "n/0/IDEPM/ranks": {"heldout": 8}}
    nets = {"n/0/IDEPM/default": {"tdauc_pr": 0.5}, "n/1/IDEPM/default": {"tdauc_pr": 0.4}}
    ch30 = {"k/zeros/0/EPM/default@2018": {"tdauc_pr": 0.1}, "k/zeros/0/EPM/default": {"tdauc_pr": 0.3}}
    t = rule_differences(others, nets, ch30).set_index(["network", "model"])
    assert list(t.index) == [("k/zeros", "EPM"), ("n", "IDEPM")]
    assert t.loc[("n", "IDEPM"), "pairs"] == 2 and t.loc[("n", "IDEPM"), "same_K"] == 1
    assert np.isclose(t.loc[("n", "IDEPM"), "difference"], 0.15)
    assert np.isclose(t.loc[("k/zeros", "EPM"), "default"], 0.2) and np.isclose(t.loc[("k/zeros", "EPM"), "difference"], 0.05)
    bench = Path(__file__).resolve().parent.parent / "benchmarks"
    stored = rule_differences(*(json.loads((bench / n).read_text()) for n in
                                ("small_groups_others.json", "starts_networks.json", "starts_chapter30.json")))
    nets_seen = {n.split("/")[0] for n in stored.network}
    assert nets_seen == {"planted", "unequal", "sparse", "lfr-docs", "lfr", "Davis", "karate", "Les Mis"}
    assert len(stored) == 33 and stored.difference.abs().max() < 0.05
