"""Chapter 23's numbers (does the EPM really overfit?): the exact EPM against the EPM with the printed
a-update ("EPMpaper", erratum E3), read from the stored records as tidy tables.

- :func:`gmean_end`, :func:`hyper_slope`: a hyperparameter at the end of the runs (geometric mean over
  the folds of its mean over the last 100 iterations) and the slope of log gamma0 on log T;
  :func:`hyper_table`: both, one row per data set x model (the chapter's table of gamma0, a1, a2);
- :func:`paired_by_T`: paired fold differences a - b of K, TDLL, TDAUC-PR at each T, one row per
  T x metric; :func:`diff_table` writes it as the chapter's markdown table (clear ones in bold);
- :func:`enron_overfit`, :func:`movielens1m_overfit`: the numbers of the 600-sweep readings of
  Enron09 and MovieLens1M, with the lines the chapter prints and the claims it asserts;
- :func:`converged_by_T`: the EPM against the DEPM at every T under both protocols, and
  :func:`converged_readings` the claims about the converged EPM-128;
- :func:`printed_converged`: the printed update's converged runs beside the exact EPM's.

A claim is returned as ``{name: bool}`` (``claims``); the chapter asserts that all hold.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import PAPER_T
from .records import EXPECTED_FOLDS, hyper_end, on_folds, start_means, values
from .tables import fmt, md_table, mean_se, paired
from .verdicts import compare

__all__ = ["DIFF_METRICS", "gmean_end", "hyper_slope", "hyper_table", "paired_by_T", "diff_table",
           "enron_overfit", "movielens1m_overfit", "converged_readings", "converged_by_T",
           "converged_by_T_table", "printed_converged", "printed_converged_table", "printed_growth"]

#: the metrics of the difference tables, with their decimals
DIFF_METRICS = (("K_mean", 1), ("tdll", 4), ("tdauc_pr", 3))
_PAIR_COLUMNS = ["T", "metric", "difference", "se", "folds"]


def gmean_end(recs, m, T, name):
    """Geometric mean over the folds of a hyperparameter's mean over the last 100 iterations
    (``records.hyper_end``) of model ``m`` at ``T``; NaN if there is no record."""
    return np.exp(np.mean(np.log(list(hyper_end(recs, m, T, name).values()) or [np.nan])))


def hyper_slope(recs, m):
    """Least-squares slope of the fold mean of log gamma0 (at the end of the runs) on log T, over the
    T with records: 0 for gamma0 fixed, 1 for Theorem 2's family gamma0 = T gamma0-hat; NaN below two T."""
    T = np.array([t for t in PAPER_T if hyper_end(recs, m, t, "gamma0")], dtype=float)
    y = [np.mean(np.log(list(hyper_end(recs, m, int(t), "gamma0").values()))) for t in T]
    return np.polyfit(np.log(T), y, 1)[0] if T.size > 1 else np.nan


def hyper_table(data, models=("EPM", "EPMpaper", "CEPM")):
    """One row per data set of ``data`` ({name: records}) x model: ``dataset``, ``model``, ``gamma0_2``,
    ``gamma0_128`` (:func:`gmean_end` at T = 2 and 128), ``a1_2``, ``a1_128``, ``a2_128`` and ``slope``
    (:func:`hyper_slope`)."""
    rows = []
    for d, recs in data.items():
        for m in models:
            rows.append({"dataset": d, "model": m, "gamma0_2": gmean_end(recs, m, 2, "gamma0"),
                         "gamma0_128": gmean_end(recs, m, 128, "gamma0"), "a1_2": gmean_end(recs, m, 2, "a1"),
                         "a1_128": gmean_end(recs, m, 128, "a1"), "a2_128": gmean_end(recs, m, 128, "a2"),
                         "slope": hyper_slope(recs, m)})
    return pd.DataFrame(rows, columns=["dataset", "model", "gamma0_2", "gamma0_128", "a1_2", "a1_128", "a2_128",
                                       "slope"])


def paired_by_T(recs, a, b, metrics=tuple(m for m, _ in DIFF_METRICS), Ts=PAPER_T, Tb=None):
    """Paired fold differences a - b (``tables.paired``), one row per T x metric: ``T``, ``metric``,
    ``difference``, ``se``, ``folds`` (0 where the two have no fold in common). ``b`` at the same T,
    or at ``Tb`` if given."""
    rows = []
    for T in Ts:
        for k in metrics:
            d, se, n = paired(values(recs, a, T, k), values(recs, b, T if Tb is None else Tb, k))
            rows.append({"T": T, "metric": k, "difference": d, "se": se, "folds": n})
    return pd.DataFrame(rows, columns=_PAIR_COLUMNS)


def _at(table, T, metric):
    """(difference, se, folds) of one row of a :func:`paired_by_T` table."""
    row = table[(table["T"] == T) & (table["metric"] == metric)].iloc[0]
    return row["difference"], row["se"], int(row["folds"])


def diff_table(recs, a, b):
    """Markdown table of the paired fold differences a - b per T (:func:`paired_by_T`) of K, TDLL and
    TDAUC-PR ("mean ± SE"); those beyond two SE in bold; a T without common folds left out."""
    p = paired_by_T(recs, a, b)
    rows = []
    for T in PAPER_T:
        row = [T]
        for metric, dg in DIFF_METRICS:
            dd, se, n = _at(p, T, metric)
            cell = f"{dd:+.{dg}f} ± {se:.{dg}f}"
            row.append(f"**{cell}**" if np.isfinite(se) and abs(dd) > 2 * se else cell)
        if n:
            rows.append(row)
    return md_table(["T", "ΔK", "ΔTDLL", "ΔTDAUC-PR"], rows)


def _mean(recs, m, T, k):
    return mean_se(values(recs, m, T, k))[0]


def enron_overfit(r):
    """The 600-sweep reading of Enron09 (``r``: its records): returns ``(numbers, lines, claims)``.
    ``numbers``: K and TDLL fold means per (model, T) (``K``, ``ll``), the paired differences
    EPMpaper - EPM at T = 128 of K and TDLL (``dK``, ``dll``: (mean, SE, folds)), ``gap`` (the largest
    |TDLL(EPM) - TDLL(DEPM)| over T), gamma0 per model and T, a1 and a2 at T = 128 (:func:`gmean_end`)
    and the slopes (:func:`hyper_slope`); ``lines``: what the chapter prints; ``claims``: the page's
    statements, each True when it holds."""
    two = ("EPM", "EPMpaper")
    K = {(m, T): _mean(r, m, T, "K_mean") for m in two for T in (32, 64, 128)}
    ll = {m: _mean(r, m, 128, "tdll") for m in two + ("DEPM",)}
    dK = paired(values(r, "EPMpaper", 128, "K_mean"), values(r, "EPM", 128, "K_mean"))
    dll = paired(values(r, "EPMpaper", 128, "tdll"), values(r, "EPM", 128, "tdll"))
    gap = max(abs(_mean(r, "EPM", T, "tdll") - _mean(r, "DEPM", T, "tdll")) for T in PAPER_T)
    g = {m: {T: gmean_end(r, m, T, "gamma0") for T in PAPER_T} for m in two}
    a = {m: gmean_end(r, m, 128, "a1") for m in two}
    a2 = {m: gmean_end(r, m, 128, "a2") for m in two}
    s = {m: hyper_slope(r, m) for m in two}
    n = dict(K=K, ll=ll, dK=dK, dll=dll, gap=gap, g=g, a=a, a2=a2, s=s)
    lines = [
        f"K at T = 32, 64, 128: EPMpaper {K['EPMpaper', 32]:.1f}, {K['EPMpaper', 64]:.1f}, {K['EPMpaper', 128]:.1f}; "
        f"EPM {K['EPM', 32]:.1f}, {K['EPM', 64]:.1f}, {K['EPM', 128]:.1f}",
        f"T = 128: EPMpaper - EPM: K {dK[0]:+.1f} ± {dK[1]:.1f}, TDLL {dll[0]:+.4f} ± {dll[1]:.4f}; "
        f"TDLL EPM {ll['EPM']:.4f}, EPMpaper {ll['EPMpaper']:.4f}, DEPM {ll['DEPM']:.4f}",
        f"largest |TDLL(EPM) - TDLL(DEPM)| over T: {gap:.4f}",
        f"gamma0 from T=2 to T=128: EPM {g['EPM'][2]:.1f} -> {g['EPM'][128]:.1f}, "
        f"EPMpaper {g['EPMpaper'][2]:.1f} -> {g['EPMpaper'][128]:.1f}; gamma0/T at T=128: "
        f"EPM {g['EPM'][128] / 128:.3f}, EPMpaper {g['EPMpaper'][128] / 128:.3f}",
        f"a1 at T=128: EPM {a['EPM']:.4f}, EPMpaper {a['EPMpaper']:.4f} (ratio {a['EPM'] / a['EPMpaper']:.1f}); "
        f"a2 ratio {a2['EPM'] / a2['EPMpaper']:.1f}; slope of log gamma0 on log T: EPM {s['EPM']:.2f}, "
        f"EPMpaper {s['EPMpaper']:.2f}"]
    claims = {
        "the printed formula's K runs away": bool(dK[0] > 10 * dK[1] and K["EPMpaper", 128] > 2.5 * K["EPM", 128]),
        "... roughly in proportion to T": bool(K["EPMpaper", 128] > 1.4 * K["EPMpaper", 64] > 1.4 * K["EPMpaper", 32]),
        "its TDLL loss; the exact EPM ~ DEPM": bool(dll[0] < -5 * dll[1] and gap < 0.003),
        "gamma0 grows with T for the printed update only":
            bool(g["EPMpaper"][128] > 10 * g["EPM"][128] and s["EPMpaper"] > 0.5 > abs(s["EPM"])),
        "a1 and a2 far smaller with the printed update": bool(a["EPM"] > 4 * a["EPMpaper"] and a2["EPM"] > 4 * a2["EPMpaper"])}
    return n, lines, claims


def movielens1m_overfit(r):
    """The 600-sweep reading of MovieLens1M (``r``: its records): returns ``(numbers, lines, claims)``
    as :func:`enron_overfit`; ``numbers["dP"]`` is :func:`paired_by_T` of EPMpaper - EPM (TDLL and
    TDAUC-PR), ``first`` the first T where the TDLL difference is below -2 SE."""
    two = ("EPM", "EPMpaper")
    K = {(m, T): _mean(r, m, T, "K_mean") for m in two for T in (32, 64, 128)}
    dP = paired_by_T(r, "EPMpaper", "EPM", ("tdll", "tdauc_pr"))
    at = {(T, k): _at(dP, T, k) for T in PAPER_T for k in ("tdll", "tdauc_pr")}
    gap = max(abs(_mean(r, "EPM", T, "tdll") - _mean(r, "DEPM", T, "tdll")) for T in PAPER_T)
    a = {m: gmean_end(r, m, 128, "a1") for m in two}
    g = {m: {T: gmean_end(r, m, T, "gamma0") for T in PAPER_T} for m in two}
    first = min(T for T in PAPER_T if at[T, "tdll"][0] < -2 * at[T, "tdll"][1])
    sl = {m: hyper_slope(r, m) for m in two + ("CEPM",)}
    n = dict(K=K, dP=dP, gap=gap, a=a, g=g, first=first, slopes=sl, tdll_128=at[128, "tdll"][0])
    lines = [
        "K at T = 32, 64, 128: " + "; ".join(f"{m} " + ", ".join(f"{K[m, T]:.1f}" for T in (32, 64, 128)) for m in two),
        "EPMpaper - EPM, TDLL: " + ", ".join(f"T={T} {at[T, 'tdll'][0]:+.4f}" for T in PAPER_T)
        + f" (clear from T = {first}); TDAUC-PR at T=128 {at[128, 'tdauc_pr'][0]:+.3f} ± {at[128, 'tdauc_pr'][1]:.3f}",
        f"largest |TDLL(EPM) - TDLL(DEPM)| over T: {gap:.5f}; a1 at T=128: EPM {a['EPM']:.4f}, "
        f"EPMpaper {a['EPMpaper']:.4f}; gamma0 T=2 -> 128: EPM {g['EPM'][2]:.1f} -> {g['EPM'][128]:.1f}, "
        f"EPMpaper {g['EPMpaper'][2]:.1f} -> {g['EPMpaper'][128]:.1f}",
        "slope of log gamma0 on log T: " + ", ".join(f"{m} {v:.2f}" for m, v in sl.items())]
    td = {T: at[T, "tdll"] for T in PAPER_T}
    claims = {
        "no shrinkage in 600 iterations": all(K[m, 64] == 64 and K[m, 128] > 127 for m in two),
        "the printed update's TDLL clearly lower from T = 16": all(td[T][0] < -2 * td[T][1] for T in (16, 32, 64, 128)),
        "... and further behind with T": bool(td[128][0] < td[64][0] < td[32][0] < td[16][0]),
        "its TDAUC-PR clearly lower at T = 128": bool(at[128, "tdauc_pr"][0] < -2 * at[128, "tdauc_pr"][1]),
        "the exact EPM ~ DEPM; a1 smaller; gamma0 grows for every sampler":
            bool(gap < 2e-4 and a["EPMpaper"] < a["EPM"] / 2 and min(sl.values()) > 0.5)}
    return n, lines, claims


def _common_folds(recs, a, b):
    return sorted({r["fold"] for r in recs if r["model"] == a} & {r["fold"] for r in recs if r["model"] == b})


def converged_readings(paper, conv):
    """The EPM-128 against the DEPM-128 (and the CEPM-128) on Enron09's converged records ``conv``
    and the 600-sweep records ``paper`` of the same folds (those where both the EPM and the DEPM
    have converged records). Returns ``(numbers, lines, claims)``, or None when those folds do not
    include 0-4: ``d6``, ``dc`` (K, EPM-128 - DEPM-128, 600 sweeps and converged: (mean, SE, folds)),
    ``lc`` (TDLL, EPM-128 - CEPM-128 and - DEPM-128, converged)."""
    folds = _common_folds(conv, "EPM", "DEPM")
    if folds[:5] != [0, 1, 2, 3, 4]:
        return None
    d6 = compare(on_folds(paper, folds), "EPM", 128, "DEPM", 128, "K_mean")
    dc = compare(conv, "EPM", 128, "DEPM", 128, "K_mean")
    lc = [compare(conv, "EPM", 128, m, 128, "tdll") for m in ("CEPM", "DEPM")]
    lines = [f"EPM-128 − DEPM-128 in K on folds {folds}: {d6[0]:+.1f} ± {d6[1]:.1f} (600 sweeps), "
             f"{dc[0]:+.1f} ± {dc[1]:.1f} (converged)"]
    claims = {"clearly more atoms after 600 sweeps": bool(d6[0] > 5 and d6[0] > 2 * d6[1]),
              "about the same number on converged chains": bool(abs(dc[0]) < 2),
              "level in TDLL with the CEPM and the DEPM": all(abs(d) < 0.002 for d, se, n in lc)}
    return dict(folds=folds, d6=d6, dc=dc, lc=lc), lines, claims


def converged_by_T(paper, conv, a="EPM", b="DEPM"):
    """a - b at every T under both protocols, on the folds of the converged records ``conv``: one
    row per T x protocol ("600 sweeps": ``paper`` on those folds; "converged": ``conv``) x metric
    (K, TDLL): ``T``, ``protocol``, ``metric``, ``difference``, ``se``, ``folds``. None unless every T
    has converged records of both on :data:`~epm_lib.book.records.EXPECTED_FOLDS` folds."""
    if not all(compare(conv, a, T, b, T, "K_mean")[2] == EXPECTED_FOLDS for T in PAPER_T):
        return None
    same = on_folds(paper, sorted({r["fold"] for r in conv}))
    rows = []
    for T in PAPER_T:
        for name, rr in (("600 sweeps", same), ("converged", conv)):
            for k in ("K_mean", "tdll"):
                d, se, n = compare(rr, a, T, b, T, k)
                rows.append({"T": T, "protocol": name, "metric": k, "difference": d, "se": se, "folds": n})
    return pd.DataFrame(rows, columns=["T", "protocol", "metric", "difference", "se", "folds"])


def converged_by_T_table(table):
    """:func:`converged_by_T` as the chapter's markdown table (ΔK to 1, ΔTDLL to 4 decimals, "± SE")."""
    rows = []
    for T, g in table.groupby("T", sort=False):
        cells = [fmt(r.difference, r.se, 1 if r.metric == "K_mean" else 4) for r in g.itertuples()]
        rows.append([T] + cells)
    return md_table(["T", "ΔK, 600 sweeps", "ΔTDLL, 600 sweeps", "ΔK, converged", "ΔTDLL, converged"], rows)


def printed_converged(paper, conv):
    """The printed update's (EPMpaper's) converged runs on Enron09 beside the exact EPM's, one row per
    T it was run at: ``T``, ``folds`` (a tuple), ``runs``, ``agree`` (runs that reached the R-hat
    target), ``K600`` and ``K`` (EPMpaper's fold mean of K after 600 sweeps and converged, on those
    folds), ``few`` / ``many`` (mean K of the chains from the fewest and the most atoms,
    ``records.start_means``, averaged over the runs), ``K_exact`` (the exact EPM's converged K), and
    the paired differences printed - exact of K, TDLL, TDAUC-PR (``d_K_mean``, ``d_K_mean_se``, ...)."""
    rp = [r for r in conv if r["model"] == "EPMpaper"]
    rows = []
    for T in sorted({r["T"] for r in rp}):
        mine = [r for r in rp if r["T"] == T]
        folds = sorted(r["fold"] for r in mine)
        ce, six = on_folds(conv, folds), on_folds(paper, folds)
        few, many = np.mean([start_means(r) for r in mine], axis=0)
        row = {"T": T, "folds": tuple(folds), "runs": len(mine), "agree": sum(r["converged"] for r in mine),
               "K600": _mean(six, "EPMpaper", T, "K_mean"), "K": _mean(ce, "EPMpaper", T, "K_mean"),
               "few": few, "many": many, "K_exact": _mean(ce, "EPM", T, "K_mean")}
        for k in ("K_mean", "tdll", "tdauc_pr"):
            row[f"d_{k}"], row[f"d_{k}_se"], _ = compare(ce, "EPMpaper", T, "EPM", T, k)
        rows.append(row)
    return pd.DataFrame(rows, columns=["T", "folds", "runs", "agree", "K600", "K", "few", "many", "K_exact"]
                        + [f"d_{k}{s}" for k in ("K_mean", "tdll", "tdauc_pr") for s in ("", "_se")])


def printed_converged_table(pc):
    """:func:`printed_converged` as the chapter's markdown table."""
    rows = [[p.T, ",".join(map(str, p.folds)), f"{p.agree}/{p.runs}", fmt(p.K600, np.nan, 1), fmt(p.K, np.nan, 1),
             f"{p.few:.1f} / {p.many:.1f}", fmt(p.K_exact, np.nan, 1), fmt(p.d_tdll, p.d_tdll_se, 4),
             fmt(p.d_tdauc_pr, p.d_tdauc_pr_se, 3)] for p in pc.itertuples()]
    return md_table(["T", "folds", "agree", "K 600 sweeps", "K conv.", "K from 1 / from T", "K exact (conv.)",
                     "ΔTDLL", "ΔTDAUC-PR"], rows)


def printed_growth(paper, conv, pc):
    """K(128) - K(32) on converged chains, EPMpaper and the exact EPM, on the folds both T of the
    printed update share (``pc``: :func:`printed_converged`); returns ``(gp, ge, common, claims)``
    with the claims of chapter 23's reading, or None unless both T = 32 and 128 were run."""
    by = pc.set_index("T")
    if not {32, 128} <= set(by.index):
        return None
    common = sorted(set(by.loc[32, "folds"]) & set(by.loc[128, "folds"]))
    ce = on_folds(conv, common)
    gp = compare(ce, "EPMpaper", 128, "EPMpaper", 32, "K_mean")
    ge = compare(ce, "EPM", 128, "EPM", 32, "K_mean")
    claims = {}
    for T in (32, 128):
        p = by.loc[T]
        claims[f"T={T}: more atoms than exact"] = bool(p.d_K_mean > 2 * p.d_K_mean_se and p.d_K_mean > 5)
        claims[f"T={T}: a worse TDLL"] = bool(p.d_tdll < -2 * p.d_tdll_se)
        claims[f"T={T}: whatever the start"] = bool(abs(p.few - p.many) < 3)
    claims["K grows with T for the printed update only"] = bool(by.loc[128, "K"] > 80 and gp[0] > 40 and ge[0] < 5)
    return gp, ge, common, claims
