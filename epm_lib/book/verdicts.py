"""The verdicts on H1-H3: chapter 26's criteria applied to the records of one data set, under
either protocol.

:func:`verdict_parts` decides each part of :data:`PART_ORDER` from paired fold differences
(:func:`compare`; clear when the paired mean exceeds 2 SE), :func:`verdict_label` and
:func:`verdict_table` print them, :func:`verdict_changes` sets the 600-sweep verdicts beside the
converged protocol's on the same folds (with :func:`h3_level`, the DEPM the IDEPM meets in H3), and
:func:`at_start_share` is the share of runs still holding (almost) every atom of the paper's start.
"""
from __future__ import annotations

import numpy as np

from ..experiments import PAPER_T
from .records import CONVERGED_MODELS, EXPECTED_FOLDS, TRUNCATED, common_folds, on_folds, values
from .tables import best_T, check_digits, md_table, paired

__all__ = ["PART_ORDER", "compare", "verdict_parts", "verdict_label", "verdict_table", "at_start_share",
           "h3_level", "verdict_changes"]


#: the parts of chapter 26's verdict table, in its order
PART_ORDER = ("H1", "H1 K", "H1 K grows", "H1 K converges", "H1 TDLL", "H1 TDAUC-PR",
              "H2", "H2 TDLL", "H2 TDAUC-PR", "H2 K", "H2 DEPM-128 best", "H3 (TDLL, TDAUC-PR)",
              "H3 TDLL", "H3 TDAUC-PR")


def compare(recs, a, Ta, b, Tb, metric):
    """Paired difference a - b of a metric: (mean, SE, folds)."""
    return paired(values(recs, a, Ta, metric), values(recs, b, Tb, metric))


def _diff(label, d, se, digits):
    """'label +d ± se', the SE with two significant digits (at least ``digits`` decimals), so that
    whether |d| > 2 SE can be checked from the printed numbers."""
    digits = check_digits(se, digits, significant=2)
    return f"{label} {d:+.{digits}f} ± {se:.{digits}f}"


def _above(res, digits, label):
    d, se, n = res
    return (n > 1 and d > 2 * se), _diff(label, d, se, digits), n


def verdict_parts(recs, epm="EPM", h3_T="best"):
    """Chapter 26's criteria applied to the records of one data set (either protocol).

    Returns {part: (supported: True/False, or None when a model it needs has fewer than two
    folds; the numbers, 'mean ± SE' of the paired fold differences; the number of folds)} for the
    parts of :data:`PART_ORDER`. A difference is clear when the paired mean exceeds 2 SE
    (:func:`clear`). ``epm``: "EPM" (exact a-update) or "EPMpaper". ``h3_T``: the DEPM the IDEPM
    meets in H3: "best" (the T with the highest fold mean of the metric, every DEPM-T needed;
    then "H2 DEPM-128 best" is decided too) or a truncation level such as 128 (for records that
    hold only that T; "H2 DEPM-128 best" is then undecided)."""
    out = {}

    def put(name, *checks):
        ns = [c[2] for c in checks]
        ok = None if min(ns) < 2 else all(c[0] for c in checks)
        if ok is None:
            checks = [(None, "", 0)]
        out[name] = (ok, "; ".join(c[1] for c in checks), min(ns))
    put("H1 K", _above(compare(recs, epm, 128, "CEPM", 128, "K_mean"), 1, f"{epm}−CEPM"),
        _above(compare(recs, epm, 128, "DEPM", 128, "K_mean"), 1, f"{epm}−DEPM"))
    put("H1 K grows", _above(compare(recs, epm, 128, epm, 32, "K_mean"), 1, "T=128 − T=32"))
    c = [compare(recs, m, 128, m, 64, "K_mean") for m in ("CEPM", "DEPM")]
    put("H1 K converges", *[(not (n > 1 and d > 2 * se), _diff(f"{m} T=128 − T=64", d, se, 1), n)
                           for m, (d, se, n) in zip(("CEPM", "DEPM"), c)])
    for metric, name, dg in (("tdll", "TDLL", 4), ("tdauc_pr", "TDAUC-PR", 3)):
        put(f"H1 {name}", _above(compare(recs, "CEPM", 128, epm, 128, metric), dg, f"CEPM−{epm}"),
            _above(compare(recs, "DEPM", 128, epm, 128, metric), dg, f"DEPM−{epm}"))
    d, se, n = compare(recs, "CEPM", 128, "DEPM", 128, "K_mean")
    put("H2 K", (n > 1 and d > 2 * se, _diff("CEPM−DEPM", d, se, 1), n))
    for metric, name, dg in (("tdll", "TDLL", 4), ("tdauc_pr", "TDAUC-PR", 3)):
        put(f"H2 {name}", _above(compare(recs, "DEPM", 128, "CEPM", 128, metric), dg, "DEPM−CEPM"))
    if h3_T == "best":
        full = min(len(values(recs, "DEPM", T, "tdll")) for T in PAPER_T) > 1   # every DEPM-T present
    else:
        full = len(values(recs, "DEPM", h3_T, "tdll")) > 1
    checks = []
    for metric, name, dg in (("tdll", "TDLL", 4), ("tdauc_pr", "TDAUC-PR", 3)):
        if h3_T != "best":
            TD = h3_T
            checks.append((None, "", 0))
        else:
            TD = best_T(recs, "DEPM", metric)[0] if full else None
            if TD == 128:                       # the best fold mean is T = 128's own
                checks.append((True, f"{name}: best at T=128", len(values(recs, "DEPM", 128, metric))))
            else:
                d, se, n = compare(recs, "DEPM", 128, "DEPM", TD, metric) if full else (np.nan, np.nan, 0)
                checks.append((not (n > 1 and d < -2 * se),
                               _diff(f"{name}: DEPM-128−DEPM-{TD}", d, se, dg), n))
        put(f"H3 {name}", _above(compare(recs, "IDEPM", None, "DEPM", TD, metric), dg, f"IDEPM−DEPM-{TD}")
            if full else (False, "", 0))
    put("H2 DEPM-128 best", *checks)
    for h, ps in (("H1", [p for p in out if p.startswith("H1")]), ("H2", ["H2 TDLL", "H2 TDAUC-PR"]),
                  ("H3 (TDLL, TDAUC-PR)", ["H3 TDLL", "H3 TDAUC-PR"])):
        oks = [out[p][0] for p in ps]
        out[h] = (None if None in oks else all(oks), "", min(out[p][2] for p in ps))
    return out


def verdict_label(res, expected_folds=EXPECTED_FOLDS):
    """A verdict for a table: '✓ **supported**' / '✗ **not supported**' with its numbers and, below
    ``expected_folds``, its number of folds; 'incomplete' when undecided."""
    ok, numbers, n = res
    if ok is None or n < 2:
        return "incomplete"
    word = "✓ **supported**" if ok else "✗ **not supported**"
    if n < expected_folds:
        word += f" [{n} folds]"
    return word + (f" ({numbers})" if numbers else "")


def verdict_table(data, datasets, epm="EPM", part_names=PART_ORDER, h3_T="best", marks=None):
    """({data set: verdict_parts}, markdown table: one row per part, one column per data set;
    'not run' for a data set without records). ``marks``: {data set: marker}, appended to every
    decided verdict of that data set (e.g. "†" with a note under the table that the records rest
    on chains the book shows unconverged), so that no verdict stands without its caveat."""
    res = {d: verdict_parts(data[d], epm, h3_T) for d in data}
    marks = marks or {}

    def label(d, p):
        text = verdict_label(res[d][p])
        if text == "incomplete" or not marks.get(d):
            return text
        word, sep, rest = text.partition(" (")
        return f"{word} {marks[d]}{sep}{rest}"
    rows = [[p] + [label(d, p) if d in res else "not run" for d in datasets] for p in part_names]
    return res, md_table(["part"] + list(datasets), rows)


def at_start_share(recs, T=128, share=0.99):
    """The fraction of the truncated models' runs (EPM, EPMpaper, CEPM, DEPM) at truncation level
    ``T`` whose mean K over the averaged iterations is at least ``share`` of T: chains still
    holding (almost) every atom of the paper's start (NaN without such runs)."""
    ks = [r["K_mean"] >= share * T for r in recs if r["model"] in TRUNCATED and r["T"] == T]
    return float(np.mean(ks)) if ks else float("nan")


def h3_level(conv, folds):
    """The ``h3_T`` of :func:`verdict_parts` that converged records support on the given folds:
    ``"best"`` when every DEPM-T of Fig. 2 has a record on each of them (at least two folds),
    otherwise 128 (the IDEPM then meets the DEPM-128, and "H2 DEPM-128 best" stays undecided)."""
    full = len(folds) > 1 and all(set(folds) <= set(values(conv, "DEPM", T, "tdll")) for T in PAPER_T)
    return "best" if full else 128


def verdict_changes(paper, conv, epm="EPM", h3_T="auto", models=CONVERGED_MODELS):
    """The H1-H3 parts that the converged records decide, under both protocols on the same folds
    (:func:`common_folds`: every model with converged records has one there), by the same
    criterion (``verdict_parts(..., h3_T=h3_T)``; ``"auto"``: :func:`h3_level`, i.e. the best
    DEPM-T once the converged records hold every T). Returns (markdown table of part, 600-sweep
    verdict, converged-protocol verdict (runs converged or capped), the latter as ✓ / ✗, '**changes**'
    or ''; the parts that change; the folds used; and the
    two ``verdict_parts`` results, (600 sweeps, converged), on those folds)."""
    folds = common_folds(conv, models)
    if h3_T == "auto":
        h3_T = h3_level(on_folds(conv, folds), folds)
    a = verdict_parts(on_folds(paper, folds), epm, h3_T)
    b = verdict_parts(on_folds(conv, folds), epm, h3_T)
    rows, flips = [], []
    for p in PART_ORDER:
        if b[p][0] is None:                  # not decided by the converged records
            continue
        changed = a[p][0] is not None and a[p][0] != b[p][0]
        if changed:
            flips.append(p)
        rows.append([p, verdict_label(a[p]), verdict_label(b[p]), "✓" if b[p][0] else "✗",
                     "**changes**" if changed else "same"])
    return (md_table(["part", "600 sweeps (same folds)", "run to agreement or the cap", "verdict", "between the protocols"],
                     rows),
            flips, folds, (a, b))
