"""Chapter 24's comparison of the IDEPM with the DEPM at each T (H3: "mixes better, faster"), over
the chapter's per-fold mixing numbers and settling times, as a tidy table.

The chapter computes, per data set and run (``cfg`` = ("IDEPM", None) or ("DEPM", T)):

- ``mix[ds, cfg]``: {fold: {"ess_tdll", "ess_K", "s_per_it", "ess_per_s"}} (the ESS of the TDLL and
  of K over the last iterations, seconds per iteration, ESS of the TDLL per second);
- ``conv[ds, cfg]``: {"it_tdll", "s_tdll", "it_K", "s_K"} (the iteration and the sampler seconds at
  which the fold-mean trace of the TDLL, and of K, settled).

From them :func:`idepm_vs_depm` builds one row per data set x T, :func:`comparison_lines` prints a
data set's rows as the chapter does, :func:`h3_claims` gives the claims the chapter's summary makes
(``{name: bool}``; the chapter asserts that all hold) and :func:`box_numbers` the numbers of its
opening box.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import PAPER_T

__all__ = ["H3_COLUMNS", "fold_mean_se", "fold_summary", "paired_z", "idepm_vs_depm", "comparison_lines",
           "h3_claims", "box_numbers"]

IDEPM = ("IDEPM", None)
#: the columns of :func:`idepm_vs_depm`
H3_COLUMNS = ["dataset", "T", "d_ess", "d_ess_se", "z_ess", "ess_per_s", "tdll_it", "tdll_s", "K_it", "K_s"]


def fold_mean_se(v):
    """(mean, standard error, n) of the finite values of ``v`` (NaN, NaN, 0 if none; the SE NaN for one)."""
    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), 0
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan"), v.size


def fold_summary(per_fold, key):
    """:func:`fold_mean_se` of one number over the folds of ``per_fold`` ({fold: {key: value}})."""
    return fold_mean_se([v[key] for v in per_fold.values()])


def paired_z(a, b, key):
    """a - b of ``key`` over the folds both per-fold dicts have: (mean, SE, z = mean / SE; NaN if SE is 0)."""
    d = [a[f][key] - b[f][key] for f in sorted(set(a) & set(b))]
    m, se, n = fold_mean_se(d)
    return m, se, m / se if se > 0 else float("nan")


def idepm_vs_depm(mix, conv, datasets, Ts=PAPER_T):
    """One row per data set x T where both the IDEPM and the DEPM-T have runs: ``dataset``, ``T``,
    ``d_ess``, ``d_ess_se``, ``z_ess`` (:func:`paired_z` of the ESS of the TDLL, IDEPM - DEPM-T),
    ``ess_per_s`` (the IDEPM's fold mean of ESS(TDLL) per second over the DEPM-T's) and the DEPM-T's
    settling over the IDEPM's, in iterations and in seconds, of the TDLL (``tdll_it``, ``tdll_s``)
    and of K (``K_it``, ``K_s``). Ratios above 1 favour the IDEPM."""
    rows = []
    for ds in datasets:
        if (ds, IDEPM) not in mix:
            continue
        idc = conv[ds, IDEPM]
        for T in Ts:
            if (ds, ("DEPM", T)) not in mix:
                continue
            dc = conv[ds, ("DEPM", T)]
            d = paired_z(mix[ds, IDEPM], mix[ds, ("DEPM", T)], "ess_tdll")
            r = fold_summary(mix[ds, IDEPM], "ess_per_s")[0] / fold_summary(mix[ds, ("DEPM", T)], "ess_per_s")[0]
            rows.append({"dataset": ds, "T": T, "d_ess": d[0], "d_ess_se": d[1], "z_ess": d[2], "ess_per_s": r,
                         "tdll_it": dc["it_tdll"] / idc["it_tdll"], "tdll_s": dc["s_tdll"] / idc["s_tdll"],
                         "K_it": dc["it_K"] / idc["it_K"], "K_s": dc["s_K"] / idc["s_K"]})
    return pd.DataFrame(rows, columns=H3_COLUMNS)


def comparison_lines(table, ds):
    """The lines the chapter prints for data set ``ds`` of :func:`idepm_vs_depm`'s ``table``."""
    out = [f"{ds}: IDEPM against DEPM-T; ratios > 1 favour the IDEPM",
           f"  {'T':>4} {'ΔESS/iter (z)':>18} {'ESS/s ratio':>11} {'TDLL settles: iter':>18} {'s':>6} "
           f"{'K settles: iter':>16} {'s':>6}"]
    for p in table[table.dataset == ds].itertuples():
        v = (p.tdll_it, p.tdll_s, p.K_it, p.K_s)
        out.append(f"  {p.T:4d} {p.d_ess:7.1f}±{p.d_ess_se:4.1f} ({p.z_ess:4.1f}) {p.ess_per_s:11.2f} "
                   + " ".join(f"{x:{w}.2f}" for x, w in zip(v, (18, 6, 16, 6))))
    return out


def _by_T(table, ds):
    return {p.T: p for p in table[table.dataset == ds].itertuples()}


def h3_claims(table, ds):
    """The claims of chapter 24's summary for data set ``ds`` (Enron09, MovieLens100K, MovieLens1M;
    {} for another), from :func:`idepm_vs_depm`'s ``table`` at every T of ``PAPER_T``: returns
    ``(claims, lines)``, ``claims`` {statement: bool}, ``lines`` what the chapter prints."""
    v = _by_T(table, ds)
    if ds == "enron09":
        claims = {
            "more ESS per iteration than DEPM-16, DEPM-128": v[16].z_ess > 2 and v[128].z_ess > 2,
            "... the same as DEPM-2, DEPM-4": all(abs(v[T].z_ess) < 1 for T in (2, 4)),
            "more ESS per second than the DEPM from T = 4, not T = 2":
                v[2].ess_per_s < 1 and all(v[T].ess_per_s > 1 for T in (4, 8, 16, 32, 64, 128)),
            "TDLL settles sooner in seconds from T = 8": all(v[T].tdll_s > 1 for T in (8, 16, 32, 64, 128)),
            "... not than DEPM-2, DEPM-4": all(v[T].tdll_s < 1 and v[T].tdll_it < 1 for T in (2, 4)),
            "later in iterations": v[128].tdll_it < 1 and all(v[T].K_it < 1 for T in PAPER_T)}
        lines = [f"{ds}: DEPM-128 vs IDEPM: ESS/iter z = {v[128].z_ess:.1f}, ESS/s ratio {v[128].ess_per_s:.1f}, "
                 f"TDLL settling seconds ratio {v[128].tdll_s:.1f}, iterations ratio {v[128].tdll_it:.2f}"]
    elif ds == "movielens100k":
        claims, lines = {}, []
        for T in (64, 128):
            claims[f"better mixing per second than DEPM-{T}"] = v[T].ess_per_s > 1
            claims[f"settles sooner than DEPM-{T}, in iterations and seconds"] = \
                min(v[T].tdll_it, v[T].tdll_s, v[T].K_it, v[T].K_s) > 1
            lines.append(f"{ds}: DEPM-{T} vs IDEPM: ESS/iter z = {v[T].z_ess:.1f}, ESS/s ratio {v[T].ess_per_s:.1f}, "
                         f"the DEPM's TDLL settles {v[T].tdll_it:.1f} times later in iterations, "
                         f"{v[T].tdll_s:.1f} times in seconds")
        claims["more ESS per iteration than DEPM-64"] = v[64].z_ess > 2
        claims["DEPM-2 to DEPM-8 ahead per second"] = all(v[T].ess_per_s < 1 and v[T].tdll_s < 1 for T in (2, 4, 8))
        claims["the IDEPM ahead per second from T = 32"] = \
            all(v[T].ess_per_s > 1 and v[T].tdll_s > 1 for T in (32, 64, 128))
        claims["the IDEPM's TDLL settles sooner in iterations from T = 8"] = \
            all(v[T].tdll_it > 1 for T in (8, 16, 32, 64, 128))
    elif ds == "movielens1m":
        claims = {
            "more ESS per iteration than DEPM-64, DEPM-128": v[64].z_ess > 2 and v[128].z_ess > 2,
            "ahead per second of DEPM-128 only":
                v[128].ess_per_s > 1 and all(v[T].ess_per_s < 1 for T in (2, 4, 8, 16, 32)),
            "TDLL settles sooner than DEPM-128's ...": v[128].tdll_it > 1 and v[128].tdll_s > 1,
            "... but later in seconds than the others'": all(v[T].tdll_s < 1 for T in (2, 4, 8, 16, 32, 64))}
        lines = [f"{ds}: DEPM-128 vs IDEPM: ESS/iter z = {v[128].z_ess:.1f}, ESS/s ratio {v[128].ess_per_s:.1f}, "
                 f"the DEPM's TDLL settles {v[128].tdll_it:.1f} times later in iterations, {v[128].tdll_s:.1f} "
                 f"times in seconds; against DEPM-64: ESS/s ratio {v[64].ess_per_s:.2f}, seconds ratio {v[64].tdll_s:.2f}"]
    else:
        return {}, []
    return {k: bool(ok) for k, ok in claims.items()}, lines


def box_numbers(mix, conv, table):
    """The numbers of chapter 24's opening box as ``[(name, value, digits), ...]`` (for
    ``notebook.key_result``), from the three data sets of Sec. 5 (``mix``, ``conv`` and
    :func:`idepm_vs_depm`'s ``table`` as above)."""
    v = {ds: _by_T(table, ds) for ds in ("enron09", "movielens100k", "movielens1m")}

    def ess_of(ds, T):
        return fold_summary(mix[ds, IDEPM if T is None else ("DEPM", T)], "ess_tdll")[0]

    ml, m1 = v["movielens100k"], v["movielens1m"]
    return [("en_ess_id", ess_of("enron09", None), 0), ("en_ess_128", ess_of("enron09", 128), 0),
            ("en_z_128", v["enron09"][128].z_ess, 1), ("en_esss_128", v["enron09"][128].ess_per_s, 0),
            ("en_s_128", v["enron09"][128].tdll_s, 0),
            ("en_it_id", conv["enron09", IDEPM]["it_tdll"], None),
            ("en_it_128", conv["enron09", ("DEPM", 128)]["it_tdll"], None),
            ("en_esss_2", v["enron09"][2].ess_per_s, 1),
            ("ml_esss_lo", min(ml[T].ess_per_s for T in (2, 4, 8)), 1),
            ("ml_esss_hi", max(ml[T].ess_per_s for T in (2, 4, 8)), 1),
            ("ml_it_64", ml[64].tdll_it, 1), ("ml_it_128", ml[128].tdll_it, 1),
            ("ml_esss_64", ml[64].ess_per_s, 1), ("ml_esss_128", ml[128].ess_per_s, 1),
            ("m1_z_64", m1[64].z_ess, 1), ("m1_z_128", m1[128].z_ess, 1),
            ("m1_esss_64", m1[64].ess_per_s, 1), ("m1_esss_128", m1[128].ess_per_s, 1),
            ("m1_ms_id", 1000 * fold_summary(mix["movielens1m", IDEPM], "s_per_it")[0], 0)]
