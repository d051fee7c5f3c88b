"""The Part III figures, readable at the book's column width (7.5 in, 10 pt text).

One layout for every figure of chapters 22 and 23: titled panels in a grid, one legend for the
whole figure above the panels (outside them), the truncation levels T = 2 ... 128 on a log2 axis
labelled 2, 8, 32, 128, and the x label on the bottom row only (:func:`finish_figure`). The panels
are :func:`plot_metric`'s (mean ± SE over the folds, the IDEPM as a band, the baselines as
horizontal lines) in the Okabe-Ito colours of :data:`~epm_lib.book.style.STYLE`.

- :func:`plot_metric`: one panel of Fig. 2, one metric of one data set against T;
- :func:`fig2_figure`: the paper's Fig. 2 (K, TDLL and TDAUC-PR against T), one data set per row;
- :func:`protocols_figure`: Fig. 2 of one data set under the paper's 600-sweep protocol and the
  converged one, side by side on the same folds;
- :func:`hyper_figure`: chapter 23's gamma0/T and a1 at the end of the runs against T.

Text sizes follow ``matplotlib.rcParams`` (the chapters set ``font.size`` 10 and ``figure.dpi`` 150).
"""
from __future__ import annotations

import numpy as np

from ..experiments import PAPER_T
from .overfit import gmean_end
from .records import DATASET_NAMES, EXPECTED_FOLDS, METRICS, baseline_values, hyper_end, on_folds, values
from .style import BASELINE_STYLE, STYLE
from .tables import mean_se

__all__ = ["plot_metric", "finish_figure", "fig2_figure", "protocols_figure", "hyper_figure", "T_TICKS"]

#: The truncation levels labelled on the T axis (the others keep an unlabelled tick).
T_TICKS = (2, 8, 32, 128)


def plot_metric(ax, recs, metric, models, baselines=None):
    """One panel of Fig. 2: mean +/- SE over folds against T (log2, models dodged sideways by a few
    percent so that their bars do not overlap), the IDEPM as a band, and with ``baselines`` (the
    data set's baseline records) the fold means of :data:`BASELINE_STYLE`'s baselines as
    horizontal lines (TDLL and TDAUC-PR only; same folds, held-out entries as zeros).
    Points with fewer than 10 folds are hollow and labelled with their number of folds."""
    for i, m in enumerate(models):
        stats = [(T, *mean_se(values(recs, m, T, metric))) for T in PAPER_T]
        stats = [s for s in stats if s[3] > 0]
        if not stats:
            continue
        T, mu, se, n = map(np.array, zip(*stats))
        T = T * 2.0 ** (0.05 * (i - (len(models) - 1) / 2))    # dodge the models sideways
        st = STYLE[m]
        ax.errorbar(T, mu, yerr=np.nan_to_num(se), color=st["color"], ls=st["ls"], marker=st["marker"],
                    ms=4, capsize=2, lw=1, label=m)
        few = n < EXPECTED_FOLDS
        ax.plot(T[few], mu[few], ls="none", marker=st["marker"], ms=7, mfc="w", color=st["color"])
        for t, y, k in zip(T[few], mu[few], n[few]):
            ax.annotate(str(k), (t, y), textcoords="offset points", xytext=(3, 3), fontsize=7,
                        color=st["color"])
    mu, se, n = mean_se(values(recs, "IDEPM", None, metric))
    if n:
        ax.axhline(mu, color="k", lw=1, label="IDEPM" + ("" if n == EXPECTED_FOLDS else f" ({n} folds)"))
        if np.isfinite(se):
            ax.axhspan(mu - se, mu + se, color="k", alpha=0.12, lw=0)
    if baselines and metric in ("tdll", "tdauc_pr"):
        for name, st in BASELINE_STYLE.items():
            mu, _, n = mean_se(baseline_values(baselines, name, metric))
            if n:
                ax.axhline(mu, **{**st, "label": st["label"] + ("" if n == EXPECTED_FOLDS
                                                                 else f" ({n} folds)")})
    ax.set_xscale("log", base=2)
    ax.set_xticks(PAPER_T, [str(t) for t in PAPER_T])
    ax.set_xlim(PAPER_T[0] / 1.25, PAPER_T[-1] * 1.25)
    ax.set_xlabel("truncation level T")


def finish_figure(fig, axes, ylim=True, labels=None):
    """Finish a grid of T panels: ticks at every T of :data:`~epm_lib.experiments.PAPER_T`, labelled
    at :data:`T_TICKS` only (no minor ticks), "truncation level T" under the bottom row only, and one
    legend for the whole figure above the panels (``loc="outside upper center"``: the figure needs
    ``layout="constrained"``), each label once: the models in the order of
    :data:`~epm_lib.book.style.STYLE`, then the other lines (IDEPM with fewer folds, baselines), read
    row by row in at most three columns. ``ylim``: widen each panel's y-range to hold every line
    with a margin of 6 % (``axhline`` does not widen it by itself, so an IDEPM band or a baseline
    could sit on the frame); ``labels``: {label: text shown in the legend}. Returns ``fig``."""
    axes = np.atleast_2d(axes)
    for ax in axes.flat:
        ax.set_xticks(PAPER_T, [str(t) if t in T_TICKS else "" for t in PAPER_T])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("")
        if ylim:
            ys = np.concatenate([np.ravel(ln.get_ydata()).astype(float) for ln in ax.get_lines()] or [[]])
            ys = ys[np.isfinite(ys)]
            if ys.size:
                pad, (lo, hi) = 0.06 * (ys.max() - ys.min()), ax.get_ylim()
                ax.set_ylim(min(lo, ys.min() - pad), max(hi, ys.max() + pad))
    for ax in axes[-1]:
        ax.set_xlabel("truncation level $T$")
    seen = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    order = [lab for lab in STYLE if lab in seen] + [lab for lab in seen if lab not in STYLE]
    if order:
        nc = 3 if len(order) > 4 else len(order)
        nr = -(-len(order) // nc)
        order = [order[r * nc + c] for c in range(nc) for r in range(nr) if r * nc + c < len(order)]  # read by rows
        fig.legend([seen[lab] for lab in order], [(labels or {}).get(lab, lab) for lab in order],
                   loc="outside upper center", ncols=nc, frameon=False)
    return fig


def fig2_figure(data, baselines=None, models=("EPM", "CEPM", "DEPM"), metrics=tuple(METRICS), labels=None,
                width=7.5, row_height=2.25):
    """The paper's Fig. 2 (Ohama et al. 2017, Fig. 2: K, TDLL and TDAUC-PR against the truncation
    level T): one row per data set of ``data`` ({data set: records}, in its order), one column per
    metric, each panel titled "<data set>: <metric>" (:data:`~epm_lib.book.records.DATASET_NAMES`);
    ``baselines`` ({data set: baseline records}) adds the baselines to the TDLL and TDAUC-PR panels.
    ``width`` x (``row_height`` per row + 0.5) inches, the legend above the panels
    (:func:`finish_figure`, with ``labels``). Returns the figure."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(data), len(metrics), figsize=(width, row_height * len(data) + 0.5),
                             layout="constrained", squeeze=False)
    for row, (d, recs) in zip(axes, data.items()):
        for ax, metric in zip(row, metrics):
            plot_metric(ax, recs, metric, models, (baselines or {}).get(d))
            ax.set_title(f"{DATASET_NAMES.get(d, d)}: {METRICS[metric]}")
    return finish_figure(fig, axes, labels=labels)


def protocols_figure(paper, conv, models=("EPM", "CEPM", "DEPM"), metrics=tuple(METRICS), width=7.5,
                     columns=None):
    """Fig. 2 (Ohama et al. 2017) of one data set under both protocols, on the folds of the converged
    records ``conv``: one row per metric, the paper's 600-sweep records ``paper`` of those folds on
    the left and the converged records on the right, a common y-axis per row, each panel titled
    "<metric>, <protocol> (<n> folds)", the legend above the panels (:func:`finish_figure`).
    The converged protocol's column is titled "agreement or cap" (run to agreement or the cap): most of its runs at large T
    stop at the cap. ``columns``: instead of it, several columns ``[(name, records), ...]`` after the
    600-sweep one (e.g. the chains from the data's start and from one atom,
    ``epm_lib.book.regions.region_records``). Returns the figure."""
    import matplotlib.pyplot as plt
    columns = [("agreement or cap", conv)] if columns is None else list(columns)
    folds = sorted({r["fold"] for _, recs in columns for r in recs})
    panels = [("600 sweeps", on_folds(paper, folds))] + columns
    fig, axes = plt.subplots(len(metrics), len(panels), figsize=(width, 7.0 * len(metrics) / 3), sharey="row",
                             layout="constrained", squeeze=False)
    for row, metric in zip(axes, metrics):
        for ax, (name, recs) in zip(row, panels):
            plot_metric(ax, recs, metric, models)
            ax.set_title(f"{METRICS[metric]}, {name} ({len(folds)} folds)" if len(panels) == 2
                         else f"{METRICS[metric]}, {name}")
    return finish_figure(fig, axes)


def hyper_figure(data, models=("EPM", "EPMpaper", "CEPM"), labels=None):
    """Chapter 23's figure: gamma0/T and a1 at the end of the runs (``overfit.gmean_end``: geometric
    mean over the folds of the mean over the last 100 iterations) against T, one data set of ``data``
    ({name: records}) per row, log-log; dotted: slope -1 (gamma0 fixed). ``labels`` as in
    :func:`finish_figure`. Returns the figure."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(data), 2, figsize=(7.5, 2.3 * len(data) + 0.5), layout="constrained",
                             squeeze=False)
    for row, (d, recs) in zip(axes, data.items()):
        for ax, name in zip(row, ("gamma0", "a1")):
            for m in models:
                T = np.array([t for t in PAPER_T if hyper_end(recs, m, t, "a1")])
                if T.size:
                    y = np.array([gmean_end(recs, m, int(t), name) for t in T])
                    y = y / T if name == "gamma0" else y
                    st = STYLE[m]
                    ax.plot(T, y, color=st["color"], ls=st["ls"], marker=st["marker"], ms=4, lw=1, label=m)
            if name == "gamma0":
                ax.plot(PAPER_T, [1 / t for t in PAPER_T], "k:", lw=0.8, label="slope −1")
            ax.set(xscale="log", yscale="log")
            ax.set_title(f"{DATASET_NAMES.get(d, d)}: " + (r"$\gamma_0/T$" if name == "gamma0" else r"$a_1$"))
    return finish_figure(fig, axes, ylim=False, labels=labels)
