"""The numbers over folds and the markdown tables of the Part III chapters and the landing page.

Means with standard errors over folds (:func:`mean_se`), paired fold differences (:func:`paired`),
our criterion of a clear difference (:func:`clear`), the best truncation level (:func:`best_T`), the
spread between the models' curves (:func:`model_spread`); numbers printed as 'mean ± SE' with the
digits the SE needs (:func:`fmt`), markdown tables (:func:`md_table`) and a table's key columns
(:func:`narrow`, :data:`PROTOCOL_KEY_COLUMNS`); the tables of Fig. 2's numbers
(:func:`number_table`), of the baselines (:func:`baseline_table`), of the two held-out protocols
(:func:`protocol_table`) and of the 600-sweep protocol beside the converged one
(:func:`protocol_comparison`).
"""
from __future__ import annotations

import numpy as np

from ..experiments import PAPER_T
from ..fit_options import DEFAULT_K_INIT
from .records import CONVERGED_MODELS, METRICS, baseline_values, on_folds, rhat_max, start_means, values
from .style import BASELINE_STYLE

__all__ = ["mean_se", "paired", "best_T", "clear", "model_spread", "check_digits", "fmt", "md_table",
           "PROTOCOL_KEY_COLUMNS", "narrow", "number_table", "baseline_table", "PROTOCOL_MODELS",
           "protocol_table", "protocol_comparison"]


def mean_se(v):
    """Mean, standard error over folds (NaN for fewer than 2), number of folds."""
    a = np.array(list(v.values()), dtype=float)
    if a.size == 0:
        return np.nan, np.nan, 0
    return a.mean(), (a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else np.nan), a.size


def paired(va, vb):
    """Mean and SE of the paired fold differences a - b over the folds both have, and their number."""
    common = sorted(set(va) & set(vb))
    return mean_se({f: va[f] - vb[f] for f in common})


def best_T(recs, m, metric):
    """The T with the highest fold mean of a metric (None if no T has results), and all fold means."""
    mus = {T: mean_se(values(recs, m, T, metric))[0] for T in PAPER_T}
    ok = [T for T in PAPER_T if np.isfinite(mus[T])]
    return (max(ok, key=lambda T: mus[T]) if ok else None), mus


def clear(d, se):
    """Our criterion: a paired difference is clear when |mean| > 2 SE of the paired fold differences."""
    if not (np.isfinite(d) and np.isfinite(se)):
        return "not enough folds"
    return "clearly higher" if d > 2 * se else ("clearly lower" if d < -2 * se else "no clear difference")


def model_spread(recs, models, metric, Ts=PAPER_T):
    """{T: largest minus smallest fold mean of ``metric`` among ``models`` at T}, for the T at which
    every model has records: how far apart the models' curves of Fig. 2 lie (the landing page and
    chapter 22 read it off the converged records, where the EPM, CEPM and DEPM draw one curve)."""
    out = {}
    for T in Ts:
        mus = [mean_se(values(recs, m, T, metric))[0] for m in models]
        if all(np.isfinite(mus)):
            out[T] = float(max(mus) - min(mus))
    return out


def check_digits(se, digits, significant=1):
    """At least ``digits`` decimals, more where needed for a positive ``se`` to show ``significant``
    significant digits (at most 8 decimals): no "± 0.0000" for an SE of 3e-5."""
    if not (np.isfinite(se) and se > 0):
        return digits
    return int(min(8, max(digits, -np.floor(np.log10(se)) + significant - 1)))


def fmt(mu, se, digits):
    """'mean ± SE' with ``digits`` decimals, or more where the SE would round to zero
    (:func:`check_digits`; '-' for NaN; the SE left out when it is NaN)."""
    if not np.isfinite(mu):
        return "-"
    digits = check_digits(se, digits)
    return f"{mu:.{digits}f}" + (f" ± {se:.{digits}f}" if np.isfinite(se) else "")


def md_table(head, rows):
    """A markdown table (rendered by the book; plain text in a terminal)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


#: The key columns of :func:`protocol_comparison`'s table {its header: a shorter one}, for
#: :func:`narrow`: the model, its runs at split-R-hat <= 1.01, the largest R-hat, the largest gap
#: between the mean K of the two starts in one of its runs, and the means of K,
#: TDLL and TDAUC-PR under the two protocols (the paired differences left out).
#: The long chains' columns say "long" (run to agreement or the cap), not "converged": most capped.
PROTOCOL_KEY_COLUMNS = {"model": "model", "R-hat ≤ target": "R̂ ≤ 1.01", "largest R-hat": "max R̂",
                        "largest start gap": "K gap", "K 600": "K 600", "K conv.": "K long",
                        "TDLL 600": "TDLL 600", "TDLL conv.": "TDLL long", "TDAUC-PR 600": "AUC-PR 600",
                        "TDAUC-PR conv.": "AUC-PR long"}


def narrow(table, keep=PROTOCOL_KEY_COLUMNS):
    """The columns ``keep`` ({old header: new header}) of a markdown table (:func:`md_table`), in
    the order of ``keep``, under their new headers, so that a wide table fits the book's column: the
    first column's hyphens become non-breaking ('CEPM-128' is not broken over two lines) and
    'n of m' in the other columns becomes 'n/m'. ``ValueError`` naming the column and the table's
    columns if a header of ``keep`` is not in the table."""
    if not keep:
        raise ValueError("narrow: no column to keep")
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table.splitlines()]
    missing = [k for k in keep if k not in cells[0]]
    if missing:
        raise ValueError(f"narrow: no column {', '.join(map(repr, missing))} in the table "
                         f"(its columns: {', '.join(map(repr, cells[0]))})")
    idx = [cells[0].index(k) for k in keep]
    rows = [[r[idx[0]].replace("-", "\u2011")] + [r[i].replace(" of ", "/") for i in idx[1:]]
            for r in cells[2:]]
    return md_table(list(keep.values()), rows)


def number_table(recs, models):
    """Markdown table: mean ± SE over folds of K, TDLL, TDAUC-PR per (model, T), with the number of folds."""
    rows = []
    for m in models:
        for T in (PAPER_T if m != "IDEPM" else (None,)):
            stats = {k: mean_se(values(recs, m, T, k)) for k in METRICS}
            n = stats["K_mean"][2]
            if n == 0:
                continue
            rows.append([m, "∞" if T is None else T, n, fmt(*stats["K_mean"][:2], 2),
                         fmt(*stats["tdll"][:2], 4), fmt(*stats["tdauc_pr"][:2], 4)])
    return md_table(["model", "T", "folds", "K", "TDLL", "TDAUC-PR"], rows)


def baseline_table(recs, brecs, models=(("DEPM", 128), ("IDEPM", None))):
    """Markdown table: the baselines of :data:`BASELINE_STYLE` and ``"svd-k16"`` next to some
    models, TDLL and TDAUC-PR mean ± SE over folds (held-out entries as zeros, Sec. 5), and
    for each model its paired fold difference to the SVD of chosen rank."""
    rows = []
    for name in ("popularity", "svd-k16", "svd-auto"):
        st = {k: mean_se(baseline_values(brecs, name, k)) for k in ("tdll", "tdauc_pr")}
        if st["tdll"][2]:
            rows.append([BASELINE_STYLE.get(name, {}).get("label", name.replace("svd-k", "SVD rank ")),
                         st["tdll"][2], fmt(*st["tdll"][:2], 4), fmt(*st["tdauc_pr"][:2], 4), "", ""])
    for m, T in models:
        st = {k: mean_se(values(recs, m, T, k)) for k in ("tdll", "tdauc_pr")}
        if not st["tdll"][2]:
            continue
        d = {k: paired(values(recs, m, T, k), baseline_values(brecs, "svd-auto", k))
             for k in ("tdll", "tdauc_pr")}
        rows.append([m if T is None else f"{m}-{T}", st["tdll"][2], fmt(*st["tdll"][:2], 4),
                     fmt(*st["tdauc_pr"][:2], 4), fmt(*d["tdll"][:2], 4), fmt(*d["tdauc_pr"][:2], 4)])
    return md_table(["predictor", "folds", "TDLL", "TDAUC-PR", "TDLL − SVD", "TDAUC-PR − SVD"], rows)


PROTOCOL_MODELS = (("EPM", 128), ("CEPM", 128), ("DEPM", 128), ("IDEPM", None))


def protocol_table(zeros, missing, brecs, models=PROTOCOL_MODELS, digits=(4, 3, 3)):
    """Markdown table of the two held-out protocols side by side, on the folds the ``missing``
    records have (means over them): per model and baseline, TDLL, AUC-PR and AUC-ROC with the
    held-out entries as observed zeros (Sec. 5) and as missing (masked). Returns (table, folds).
    A number a record lacks (AUC-ROC of records older than the field) shows as '-'."""
    folds = sorted({r["fold"] for r in missing})
    rows = []

    def mean_of(d):
        v = [d[f] for f in folds if f in d and d[f] is not None]
        return float(np.mean(v)) if len(v) == len(folds) and folds else np.nan

    def model_vals(recs, m, T, metric):
        return {r["fold"]: r.get(metric) for r in recs if r["model"] == m and r["T"] == T
                and (T is not None or r["K_init"] == DEFAULT_K_INIT)}

    for m, T in models:
        cells = []
        for recs in (zeros, missing):
            for metric, dg in zip(("tdll", "tdauc_pr", "tdauc_roc"), digits):
                cells.append(fmt(mean_of(model_vals(recs, m, T, metric)), np.nan, dg))
        rows.append([m if T is None else f"{m}-{T}"] + cells)
    for name in ("popularity", "svd-auto"):
        cells = []
        for h in ("zeros", "missing"):
            for metric, dg in zip(("tdll", "tdauc_pr", "auc_roc"), digits):
                cells.append(fmt(mean_of(baseline_values(brecs, name, metric, h)), np.nan, dg))
        rows.append([BASELINE_STYLE[name]["label"]] + cells)
    head = ["predictor"] + [f"{m} ({h})" for h in ("zeros", "missing")
                            for m in ("TDLL", "AUC-PR", "AUC-ROC")]
    return md_table(head, rows), folds


def protocol_comparison(paper, conv, models=CONVERGED_MODELS, digits=(1, 4, 3)):
    """The paper's 600-sweep protocol beside the converged one, per (model, T) that has converged
    records, on the folds those records have: for K, TDLL and TDAUC-PR the fold means under both
    protocols and the paired difference converged − 600 sweeps (mean ± SE); the folds; how many
    of them reached split-R-hat <= target on K and TDLL, the largest R-hat, and the largest
    difference between the mean K of the chains from the fewest and from the most atoms in one run
    (:func:`start_means`; what a capped run's K is known to).

    Returns (markdown table, {(model, T): {metric: (mean 600, mean converged, (diff, SE, n))},
    "folds": [...], "converged": n, "rhat_max": x, "start_gap": x}}).
    """
    rows, out = [], {}
    for m, T in models:
        cv = [r for r in conv if r["model"] == m and r["T"] == T]
        if not cv:
            continue
        folds = sorted(r["fold"] for r in cv)
        pp = on_folds(paper, folds)
        entry = {"folds": folds, "converged": sum(r["converged"] for r in cv),
                 "rhat_max": max((x for x in map(rhat_max, cv) if np.isfinite(x)), default=np.nan),
                 "start_gap": max(abs(np.subtract(*start_means(r))) for r in cv)}
        cells = []
        for metric, dg in zip(METRICS, digits):
            a, b = values(pp, m, T, metric), values(cv, m, T, metric)
            diff = paired(b, a)
            entry[metric] = (mean_se(a)[0], mean_se(b)[0], diff)
            cells += [fmt(entry[metric][0], np.nan, dg), fmt(entry[metric][1], np.nan, dg), fmt(*diff[:2], dg)]
        out[(m, T)] = entry
        rows.append([m if T is None else f"{m}-{T}", len(folds), f"{entry['converged']} of {len(folds)}",
                     fmt(entry["rhat_max"], np.nan, 3), fmt(entry["start_gap"], np.nan, 1)] + cells)
    head = ["model", "folds", "R-hat ≤ target", "largest R-hat", "largest start gap"]
    for name in METRICS.values():
        head += [f"{name} 600", f"{name} conv.", f"{name} conv. − 600"]
    return md_table(head, rows), out
