"""The numbers behind Fig. 2 (chapter 22) as tidy tables: pandas DataFrames with one row per point
(model x T) of the figure, or per pair of points, or per run, and columns named for what they hold.

A point is ``(model, T)``; the IDEPM's T is ``None`` (it has no truncation level), so the ``T``
columns hold Python ints and ``None`` (dtype ``object``), as :func:`records.values` takes them.

- :func:`fig2_summary`: mean and standard error over folds of K, TDLL and TDAUC-PR per point, with
  the number of folds (the numbers of ``tables.number_table``, unformatted);
- :func:`paired_differences`: paired fold differences a - b between points (two models at one T,
  one model at two T), with our criterion's reading (``tables.clear``);
- :func:`best_Ts`: each model's best T of a metric (``tables.best_T``) and its fold mean there;
- :func:`mean_trace`: a trace (K by default) averaged over the folds, iteration by iteration;
- :func:`comparison_frame`: ``tables.protocol_comparison``'s numbers (600 sweeps against the
  converged protocol) per point; :func:`converged_runs`: one row per converged-protocol record
  (converged or not, R-hat of K, the gap between the mean K of its starts);
- reading a table: :func:`select` (some points, in a given order), :func:`point` (one point's
  row), :func:`by_point` ({(model, T): value} of one column), :func:`point_label` ("DEPM-128").

The spread between the models' curves at each T is ``tables.model_spread``. The asserts of the
chapter's claims stay in the chapter: these functions compute, the chapter reads and checks.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import PAPER_T
from ..fit_options import DEFAULT_K_INIT
from .records import METRICS, start_means, values
from .tables import best_T, clear, mean_se, paired

__all__ = ["FIG2_TRUNCATED", "FIG2_MODELS", "SUMMARY_COLUMNS", "PAIR_COLUMNS", "point_label", "fig2_summary",
           "select", "point", "by_point", "paired_differences", "best_Ts", "mean_trace", "comparison_frame",
           "converged_runs"]

#: the truncated models whose curves Fig. 2 draws (the printed EPM update, "EPMpaper", is chapter 23's)
FIG2_TRUNCATED = ("EPM", "CEPM", "DEPM")
#: Fig. 2's models: the truncated ones, then the IDEPM (its line of no T)
FIG2_MODELS = FIG2_TRUNCATED + ("IDEPM",)
#: the columns of :func:`fig2_summary`
SUMMARY_COLUMNS = ["model", "T", "folds"] + [c for k in METRICS for c in (k, f"{k}_se")]
#: the columns of :func:`paired_differences`
PAIR_COLUMNS = ["a", "T_a", "b", "T_b", "metric", "difference", "se", "folds", "reading"]
_RUN_COLUMNS = ["run_id", "model", "T", "fold", "converged", "rhat_K", "start_gap"]
_COMPARISON_COLUMNS = (["model", "T", "label", "n_folds", "folds", "converged", "rhat_max", "start_gap"]
                       + [f"{k}_{s}" for k in METRICS for s in ("600", "conv", "diff", "diff_se")])


def _frame(rows, columns, objects=("T",)):
    """A DataFrame of ``rows`` (dicts) with ``columns`` (also when there is no row); the columns of
    ``objects`` keep their Python values (ints and None), not floats with NaN."""
    df = pd.DataFrame(rows, columns=columns)
    for c in objects:
        df[c] = pd.Series([r[c] for r in rows], index=df.index, dtype=object)
    return df


def point_label(model, T=None):
    """How the book names a point: "DEPM-128", or the model alone where T is None ("IDEPM")."""
    return model if T is None else f"{model}-{T}"


def _as_point(p, T=None):
    """(model, T) of a point given as (model, T) or as a model's name (at ``T``; the IDEPM at None)."""
    return (p, None if p == "IDEPM" else T) if isinstance(p, str) else tuple(p)


def fig2_summary(recs, models=FIG2_MODELS, Ts=PAPER_T):
    """One row per point of Fig. 2 that has records: ``model``, ``T`` (None for the IDEPM),
    ``folds`` (the folds with a K), then for each of K, TDLL and TDAUC-PR (``K_mean``, ``tdll``,
    ``tdauc_pr``) its mean over folds and the standard error (``K_mean_se``, ...; NaN for one fold),
    computed by ``tables.mean_se`` from ``records.values`` (the IDEPM from its default start). Rows
    in the order of ``models``, then of ``Ts``. Works on converged-protocol records too."""
    rows = []
    for m in models:
        for T in ((None,) if m == "IDEPM" else Ts):
            stats = {k: mean_se(values(recs, m, T, k)) for k in METRICS}
            if stats["K_mean"][2] == 0:
                continue
            row = {"model": m, "T": T, "folds": stats["K_mean"][2]}
            for k, (mu, se, _n) in stats.items():
                row[k], row[f"{k}_se"] = mu, se
            rows.append(row)
    return _frame(rows, SUMMARY_COLUMNS)


def select(table, points):
    """The rows of ``table`` (with columns ``model`` and ``T``) of the given points, in their order:
    a point is (model, T), or a model's name for all its rows. Points the table lacks are skipped
    (compare the length with what was asked for)."""
    keys = list(zip(table["model"], table["T"]))
    rows = []
    for p in points:
        rows += [i for i, k in enumerate(keys) if (k[0] == p if isinstance(p, str) else k == tuple(p))]
    return table.iloc[rows].reset_index(drop=True)


def point(table, model, T=None):
    """The row (a Series) of one point; ``KeyError`` naming it if the table has none or several.
    (Read ``row["T"]``, not ``row.T``, which is the Series transposed.)"""
    rows = select(table, [(model, T)])
    if len(rows) != 1:
        raise KeyError(f"{len(rows)} rows of {point_label(model, T)} in the table")
    return rows.iloc[0]


def by_point(table, column):
    """{(model, T): value} of one column of ``table``, in the table's order."""
    return dict(zip(zip(table["model"], table["T"]), table[column]))


def paired_differences(recs, pairs, metric, T=None):
    """One row per pair (a, b) of points: the mean and standard error of the paired fold differences
    a - b of ``metric`` over the folds both have (``tables.paired``) and their number, with our
    criterion's reading (``tables.clear``: "clearly higher", "clearly lower", "no clear difference",
    "not enough folds"). A point of a pair is (model, T) or a model's name at ``T`` (the IDEPM's
    name: its T of None): e.g. ``[("CEPM", "EPM")]`` with ``T=128``, ``[(("EPM", 128), ("EPM", 64))]``,
    ``[("IDEPM", ("DEPM", 16))]``. Columns :data:`PAIR_COLUMNS`; rows in the order of ``pairs``."""
    rows = []
    for a, b in pairs:
        (ma, Ta), (mb, Tb) = _as_point(a, T), _as_point(b, T)
        d, se, n = paired(values(recs, ma, Ta, metric), values(recs, mb, Tb, metric))
        rows.append({"a": ma, "T_a": Ta, "b": mb, "T_b": Tb, "metric": metric, "difference": d, "se": se,
                     "folds": n, "reading": clear(d, se)})
    return _frame(rows, PAIR_COLUMNS, objects=("T_a", "T_b"))


def best_Ts(recs, metric, models=FIG2_TRUNCATED):
    """One row per model that has records: ``model``, ``metric``, ``best_T`` (the T of the highest
    fold mean, ``tables.best_T``; the first such T of ``PAPER_T`` on a tie) and ``best`` (that mean)."""
    rows = []
    for m in models:
        T, mus = best_T(recs, m, metric)
        if T is not None:
            rows.append({"model": m, "metric": metric, "best_T": T, "best": mus[T]})
    return _frame(rows, ["model", "metric", "best_T", "best"], objects=("best_T",))


def mean_trace(recs, model="IDEPM", T=None, trace="K", K_init=DEFAULT_K_INIT):
    """The trace ``trace`` (``"K"``, ``"tdll"``, ...) of one point averaged over its folds, iteration
    by iteration (an array as long as the traces; empty if the point has no records). Records as
    ``records.values`` picks them (the IDEPM: T=None and its ``K_init``)."""
    traces = [r["traces"][trace] for r in recs if r["model"] == model and r["T"] == T
              and (T is not None or r.get("K_init", K_init) == K_init)]
    return np.mean(traces, axis=0) if traces else np.array([])


def comparison_frame(comparison):
    """``tables.protocol_comparison``'s numbers ({(model, T): entry}, its second return value) as a
    table, one row per point in the dict's order: ``model``, ``T``, ``label`` (:func:`point_label`),
    ``n_folds`` and ``folds`` (a tuple of the converged records' folds), ``converged`` (how many of
    them reached the R-hat target), ``rhat_max``, ``start_gap``; then for each of K, TDLL, TDAUC-PR
    (``K_mean``, ``tdll``, ``tdauc_pr``) the fold means after 600 sweeps (``K_mean_600``) and on
    converged chains (``K_mean_conv``) over those folds, and the paired difference converged - 600
    sweeps with its SE (``K_mean_diff``, ``K_mean_diff_se``)."""
    rows = []
    for (m, T), e in comparison.items():
        row = {"model": m, "T": T, "label": point_label(m, T), "n_folds": len(e["folds"]),
               "folds": tuple(e["folds"]), "converged": e["converged"], "rhat_max": e["rhat_max"],
               "start_gap": e["start_gap"]}
        for k in METRICS:
            before, after, (d, se, _n) = e[k]
            row.update({f"{k}_600": before, f"{k}_conv": after, f"{k}_diff": d, f"{k}_diff_se": se})
        rows.append(row)
    return _frame(rows, _COMPARISON_COLUMNS)


def converged_runs(conv, points=None):
    """One row per converged-protocol record (of ``points``, as :func:`select` takes them; all if
    None), in the records' order: ``run_id``, ``model``, ``T``, ``fold``, ``converged`` (its chains
    reached the R-hat target), ``rhat_K`` (split-R-hat of K; NaN where K was one constant value in
    every chain) and ``start_gap`` (how far apart the mean K of the chains from the fewest and from
    the most atoms lie, ``records.start_means``)."""
    wanted = None if points is None else [p if isinstance(p, str) else tuple(p) for p in points]

    def keep(r):
        return wanted is None or any(r["model"] == p if isinstance(p, str) else (r["model"], r["T"]) == p
                                     for p in wanted)

    rows = []
    for r in conv:
        if keep(r):
            rhat = r["diagnostics"]["K"]["rhat"]
            rows.append({"run_id": r["run_id"], "model": r["model"], "T": r["T"], "fold": r["fold"],
                         "converged": bool(r["converged"]), "rhat_K": np.nan if rhat is None else rhat,
                         "start_gap": float(abs(np.subtract(*start_means(r))))})
    df = _frame(rows, _RUN_COLUMNS)
    return df.astype({"converged": bool, "rhat_K": float, "start_gap": float})
