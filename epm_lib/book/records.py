"""Reading and summarising stored experiment records (``results/``) for the Part III chapters.

The chapters 22 (Fig. 2), 23 (does the EPM overfit?) and 26 (the verdict), and the landing page
(``intro.ipynb``), share these helpers: loading the records of the paper's protocol (Sec. 5: 600
iterations, the last 100 averaged, ten folds) with integrity checks, per-fold values of a metric,
means with standard errors over folds, paired fold differences, one panel of Fig. 2
(:func:`plot_metric`, in the book's Okabe-Ito colours :data:`STYLE`) and the tables (:func:`narrow`
keeps a table's key columns). The whole figures (Fig. 2 one data set per row, both protocols side by
side) and their shared layout are in ``epm_lib.figures``.
Records are read with ``epm_lib.experiments.load_results`` (their format: ``results/README.md``);
the baselines scored on the same folds (``epm_lib.experiments.run_baselines``) with
``load_baselines_present`` and drawn in Fig. 2 as horizontal lines.

The converged protocol (``epm_lib.experiments.run_converged``: several chains from dispersed
starts, run until split-R-hat <= 1.01 or a cap) has records of its own; ``load_converged_present``
reads them, ``protocol_comparison`` sets them beside the 600-sweep records of the same folds, and
``verdict_parts`` / ``verdict_table`` (the H1-H3 criteria of chapter 26) apply to either.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .experiments import PAPER_T, load_baselines, load_results
from .chains import agree
from .fit import DEFAULT_K_INIT

__all__ = ["PART3_DATASETS", "check_part3_parameters", "EXPECTED_FOLDS", "TRUNCATED", "STYLE", "METRICS", "paper_protocol", "check_records",
           "load_present", "load_baselines_present", "baseline_values", "BASELINE_STYLE", "values", "mean_se", "paired", "hyper_end", "n_grid", "completeness",
           "plot_metric", "OKABE_ITO", "DATASET_NAMES", "fmt", "check_digits", "md_table", "narrow", "PROTOCOL_KEY_COLUMNS", "number_table", "baseline_table", "load_protocols", "protocol_table", "best_T", "clear",
           "load_converged_present", "check_converged", "CONVERGED_SPLIT_MERGE", "on_folds", "protocol_comparison",
           "compare", "verdict_parts", "verdict_label", "verdict_table", "PART_ORDER", "verdict_changes", "common_folds",
           "CONVERGED_MODELS", "h3_level", "rhat_max", "start_means", "model_spread",
           "planted_scores", "network_scores", "paper_runs"]

EXPECTED_FOLDS = 10
TRUNCATED = ("EPM", "EPMpaper", "CEPM", "DEPM")
#: The Okabe-Ito palette (colour-blind safe; Okabe & Ito 2008) the book's figures draw with.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
#: Colour, marker and line of each model in Fig. 2 and the Part III figures (:func:`plot_metric`);
#: the order of the keys is the order of the models in a figure's legend (``epm_lib.figures``).
STYLE = {"EPM": dict(color=OKABE_ITO[1], marker="o", ls="-"), "EPMpaper": dict(color=OKABE_ITO[3], marker="v", ls="--"),
         "CEPM": dict(color=OKABE_ITO[0], marker="s", ls="-"), "DEPM": dict(color=OKABE_ITO[2], marker="^", ls="-"),
         "IDEPM": dict(color="k")}
METRICS = {"K_mean": "K", "tdll": "TDLL", "tdauc_pr": "TDAUC-PR"}
#: How the figures and tables name the data sets of Sec. 5.
DATASET_NAMES = {"enron09": "Enron09", "movielens100k": "MovieLens100K", "movielens1m": "MovieLens1M"}


#: The data sets of Sec. 5, in the paper's order: the ``datasets`` parameter of chapters 22, 23, 26.
PART3_DATASETS = ("enron09", "movielens100k", "movielens1m")


def check_part3_parameters(namespace):
    """Check the papermill parameters of a Part III chapter (``results_dir``: an existing folder;
    ``datasets``: distinct names among :data:`PART3_DATASETS`), ``epm_lib.notebook.check_parameters``."""
    from .notebook import Choice, Dir, ListOf, check_parameters
    return check_parameters(namespace, results_dir=Dir(),
                            datasets=ListOf(Choice(*PART3_DATASETS), distinct=True))


def paper_protocol(rec):
    """True for a run of Sec. 5's protocol: 600 iterations, last 100 averaged, seed 0, 10 folds of
    seed 0, held-out entries as observed zeros (not masked)."""
    s = rec["settings"]
    return (s["n_iter"], s["n_avg"], rec["seed"], s["n_folds"], s["cv_seed"],
            s.get("heldout", "zeros")) == (600, 100, 0, 10, 0, "zeros")


def _require(ok, what):
    if not ok:
        raise ValueError(what)


def check_records(recs):
    """Check the integrity of the records of one data set (paper's protocol: 600 iterations, the
    last 100 averaged); ``ValueError`` naming the run otherwise. Returns the number checked."""
    _require(len({r["data"]["fingerprint"] for r in recs}) == 1, "runs of different data")
    seen = set()
    for r in recs:
        rid = r["run_id"]
        _require(len(r["traces"]["K"]) == 600 and len(r["traces"]["tdll"]) == 600, f"{rid}: traces")
        _require(all(len(v) == 600 for v in r["traces"]["hyper"].values()), f"{rid}: hyperparameter traces")
        _require(r["settings"]["n_avg"] == 100 and r["settings"]["n_iter"] == 600, f"{rid}: not 600/100")
        _require(abs(np.mean(r["traces"]["K"][-100:]) - r["K_mean"]) < 1e-9, f"{rid}: K_mean != its trace")
        _require(np.isfinite(r["tdll"]) and r["tdll"] < 0 and 0 <= r["K_mean"] <= (r["T"] or np.inf),
                 f"{rid}: TDLL or K out of range")
        key = (r["model"], r["T"], r["K_init"], r["fold"])
        _require(key not in seen, f"duplicate run {key}")   # folds distinct within each (model, T)
        seen.add(key)
    return len(recs)


def load_present(results_dir, datasets):
    """{data set: records of the paper's protocol} for the data sets that have results."""
    out = {}
    for d in datasets:
        if (Path(results_dir) / d).is_dir():
            recs = [r for r in load_results(results_dir, dataset=d) if paper_protocol(r)]
            if recs:
                check_records(recs)
                out[d] = recs
    return out


#: The baselines drawn in Fig. 2 (name in the baseline records -> label, line style).
BASELINE_STYLE = {"popularity": dict(label="popularity", color="0.45", ls=":", lw=1.3),
                  "svd-auto": dict(label="SVD (rank chosen)", color=OKABE_ITO[3], ls="-.", lw=1.2)}


def load_baselines_present(results_dir, datasets):
    """{data set: baseline records (one per fold, ``epm_lib.experiments.load_baselines``)} for the
    data sets that have them; ``ValueError`` if two records of a data set are of different data."""
    out = {}
    for d in datasets:
        recs = load_baselines(results_dir, d)
        if recs:
            _require(len({r["data"]["fingerprint"] for r in recs}) == 1,
                     f"{d}: baseline records of different data")
            out[d] = recs
    return out


def baseline_values(brecs, name, metric="tdll", heldout="zeros"):
    """{fold: value} of one baseline (``"popularity"``, ``"svd-k16"``, ``"svd-auto"``) and metric
    (``"tdll"``, ``"tdauc_pr"``, ``"auc_roc"``) under a held-out protocol."""
    return {r["fold"]: r["heldout"][heldout][name][metric] for r in brecs
            if name in r["heldout"][heldout] and r["heldout"][heldout][name][metric] is not None}


def values(recs, model, T=None, metric="tdll", K_init=DEFAULT_K_INIT):
    """{fold: value} of one (model, T) (the IDEPM: T=None and its K_init; a converged-protocol
    record has no single K_init and always matches)."""
    return {r["fold"]: r[metric] for r in recs if r["model"] == model and r["T"] == T
            and (T is not None or r.get("K_init", K_init) == K_init) and r[metric] is not None}


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


def hyper_end(recs, model, T, name, n_avg=100):
    """{fold: mean of a hyperparameter trace over the last n_avg iterations}."""
    return {r["fold"]: float(np.mean(r["traces"]["hyper"][name][-n_avg:])) for r in recs
            if r["model"] == model and r["T"] == T}


def n_grid(recs):
    """Records of the Sec. 5 grid (the truncated models and the IDEPM with the default K_init); other
    records (e.g. other K_init) are checked too but not counted, so the count does not change with them."""
    return sum(r["model"] in TRUNCATED or (r["model"] == "IDEPM" and r["K_init"] == DEFAULT_K_INIT)
               for r in recs)


def completeness(recs, models=TRUNCATED):
    """Runs present out of the expected grid (models x PAPER_T x 10 folds + IDEPM x 10 folds)."""
    present = sum(len(values(recs, m, T, "K_mean")) for m in models for T in PAPER_T)
    present += len(values(recs, "IDEPM", None, "K_mean"))
    return present, (len(models) * len(PAPER_T) + 1) * EXPECTED_FOLDS


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


def load_protocols(results_dir, dataset):
    """(records of Sec. 5's protocol, records with the held-out entries missing, baseline records)
    of one data set; the first two from ``load_results(heldout=...)``, the last from
    ``load_baselines`` (empty lists for what is not there)."""
    folder = Path(results_dir) / dataset
    if not folder.is_dir():
        return [], [], []
    return (load_results(results_dir, dataset=dataset), load_results(results_dir, dataset=dataset,
                                                                     heldout="missing"),
            load_baselines(results_dir, dataset))


PROTOCOL_MODELS = (("EPM", 128), ("CEPM", 128), ("DEPM", 128), ("IDEPM", None))
#: the (model, T) the converged protocol can have records of, in table order: the EPM (exact
#: a-update), CEPM and DEPM at every T of Fig. 2, then the IDEPM. The printed EPM update (EPMpaper)
#: is left out: its chain targets another distribution (errata E3, E4), so its converged records
#: (chapter 23 reads them on their own) say nothing about the EPM's posterior.
CONVERGED_MODELS = tuple((m, T) for m in ("EPM", "CEPM", "DEPM") for T in PAPER_T) + (("IDEPM", None),)


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

# ---------------------------------------------------------------------------------------------
# The converged protocol beside the paper's
# ---------------------------------------------------------------------------------------------
#: split-merge proposals per sweep of the book's converged runs of the IDEPM and the DEPM (the
#: EPM and the CEPM have no such moves: 0)
CONVERGED_SPLIT_MERGE = 20


def check_converged(recs):
    """Check the converged-protocol records of one data set: one data fingerprint, at most one
    record per (model, T, fold), K within 0..T, finite negative TDLL, R-hat and ESS present for K
    and TDLL, a ``converged`` flag consistent with the R-hat target. ``ValueError`` naming the
    run otherwise; returns the number checked."""
    _require(len({r["data"]["fingerprint"] for r in recs}) <= 1, "converged runs of different data")
    seen = set()
    for r in recs:
        rid = r["run_id"]
        key = (r["model"], r["T"], r["fold"])
        _require(key not in seen, f"{rid}: a second converged record of {key} (other settings?)")
        seen.add(key)
        _require(r["tdll"] is not None and np.isfinite(r["tdll"]) and r["tdll"] < 0, f"{rid}: TDLL")
        _require(0 <= r["K_mean"] <= (r["T"] or np.inf), f"{rid}: K out of range")
        d = r["diagnostics"]
        _require(all((d[v]["rhat"] is not None or d[v].get("constant")) and d[v]["ess_bulk"] > 0
                     for v in ("K", "tdll")), f"{rid}: R-hat or ESS missing")
        _require(not d["K"].get("constant") or len(set(r["K_mean_per_chain"])) == 1,
                 f"{rid}: K constant in every chain, but the chains' mean K differ")
        target = r["settings"]["rhat"]
        _require(r["converged"] == all(agree(d[v], target) for v in ("K", "tdll")),
                 f"{rid}: 'converged' disagrees with its R-hat")
    return len(recs)


def load_converged_present(results_dir, datasets, split_merge=CONVERGED_SPLIT_MERGE):
    """{data set: converged-protocol records} for the data sets that have them
    (``epm_lib.experiments.load_converged``), keeping the IDEPM and DEPM runs with ``split_merge``
    proposals per sweep (the EPM's and CEPM's have none) whose chains start from one atom and from
    many (the runs with chains from the data's start are ``epm_lib.book.regions``'), checked by
    :func:`check_converged`."""
    from .experiments import load_converged
    out = {}
    for d in datasets:
        recs = [r for r in load_converged(results_dir, d)
                if r["settings"]["split_merge"] == (split_merge if r["model"] in ("IDEPM", "DEPM") else 0)
                and "data" not in r["settings"]["starts"]]
        if recs:
            check_converged(recs)
            out[d] = recs
    return out


def on_folds(recs, folds):
    """The records of the given folds only (to compare two protocols on the same folds)."""
    folds = set(folds)
    return [r for r in recs if r["fold"] in folds]


def start_means(rec):
    """(mean K of the chains that started from the fewest atoms, mean K of those from the most) of a
    converged record, from each chain's mean K over its second half (``K_mean_per_chain``) grouped
    by the chain's start (``settings.starts``): how far the starts still are apart."""
    starts, k = rec["settings"]["starts"], rec["K_mean_per_chain"]
    few = [x for s, x in zip(starts, k) if s == min(starts)]
    many = [x for s, x in zip(starts, k) if s == max(starts)]
    return float(np.mean(few)), float(np.mean(many))


def rhat_max(rec):
    """The larger split-R-hat of K and TDLL of a converged record, leaving out an undefined one
    (K one constant value in every chain, e.g. at T = 2); NaN if neither is defined."""
    r = [d["rhat"] for d in (rec["diagnostics"]["K"], rec["diagnostics"]["tdll"]) if d["rhat"] is not None]
    return max(r) if r else float("nan")


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


def planted_scores(bench, metric="tdauc_pr"):
    """{label: {fold: score}} of ``benchmarks/bench_starts.py``'s planted-partition runs (its JSON file,
    ``benchmarks/starts_planted.json``, as a dict): one label per model and start ("IDEPM/data",
    "DEPM/paper", "EPM/data+hold", ...), and "SVD" for the truncated SVD of chosen rank
    (``score_baselines``' "svd-auto") on the same folds; toy90's runs and the network's description
    are left out. The values feed :func:`mean_se` like those of :func:`values`."""
    out = {}
    for key, rec in bench.items():
        fold, _, name = key.partition("/")
        if not fold.isdigit():
            continue
        label, score = ("SVD", rec["svd-auto"][metric]) if name == "SVD" else (name, rec[metric])
        out.setdefault(label, {})[int(fold)] = float(score)
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def paper_runs(results_dir, dataset, n_iter=600, n_avg=100, n_folds=10):
    """{(model, T): {fold: record}} of the DEPM at every T and the IDEPM from its default start
    (K_init = 100) under the paper's protocol (``n_iter`` iterations, the last ``n_avg`` averaged,
    ``n_folds`` folds of seed 0, sampler seed 0): the runs chapters 24 and 24b read; {} when the data
    set has no records."""
    folder = Path(results_dir) / dataset
    recs = load_results(results_dir, dataset=dataset) if folder.is_dir() else []
    runs = {}
    for r in recs:
        s = r["settings"]
        if (s["n_iter"], s["n_avg"], s["n_folds"], s["cv_seed"], r["seed"]) != (n_iter, n_avg, n_folds, 0, 0):
            continue
        if r["model"] == "DEPM" or (r["model"] == "IDEPM" and r["K_init"] == DEFAULT_K_INIT):
            runs.setdefault((r["model"], r["T"]), {})[r["fold"]] = r
    return runs


def network_scores(bench, metric="tdauc_pr"):
    """{network: {label: {fold: score}}} of ``benchmarks/bench_starts.py``'s five community networks
    (its ``starts_networks.json`` as a dict, keys "network/fold/model/start" and "network/fold/SVD"):
    one label per model and start ("IDEPM/default", "DEPM/truth", "EPM/paper", ...) and "SVD", the
    better of the two truncated SVDs (``score_baselines``' "svd-auto" and "svd-k16") on each fold, as the
    benchmark's table reads it; the networks' "info" records are left out. Feeds :func:`mean_se`."""
    out = {}
    for key, rec in bench.items():
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == "SVD":
            net, fold, label = parts[0], int(parts[1]), "SVD"
            score = max(rec["svd-auto"][metric], rec["svd-k16"][metric])
        elif len(parts) == 4:
            net, fold, label = parts[0], int(parts[1]), f"{parts[2]}/{parts[3]}"
            score = rec[metric]
        else:
            continue
        out.setdefault(net, {}).setdefault(label, {})[fold] = float(score)
    return {n: {k: dict(sorted(v.items())) for k, v in sorted(d.items())} for n, d in out.items()}


#: chapter 30's metrics in ``benchmarks/starts_chapter30.json``, in the order its tables show them
START_METRICS = ("tdauc_pr", "tdauc_roc", "tdll")
#: chapter 30's seed and chain length: records of other seeds or lengths carry a tag (``start_tag``)
START_SEED, START_SWEEPS = 2017, 500


def start_tag(start, seed=START_SEED, sweeps=START_SWEEPS):
    """The last part of a ``starts_chapter30.json`` key: the start, then "@seed" unless chapter 30's
    seed and "~sweeps" unless its 500 sweeps (``benchmarks/bench_starts.py`` writes it, and
    :func:`start_differences` reads it)."""
    return start + ("" if seed == START_SEED else f"@{seed}") + ("" if sweeps == START_SWEEPS else f"~{sweeps}")


def start_differences(bench, seeds, sweeps=START_SWEEPS, metrics=START_METRICS):
    """Default start minus the paper's on chapter 30's networks (``benchmarks/bench_starts.py --part
    chapter30``; its ``starts_chapter30.json`` as a dict, keys "network/protocol/fold/model/" + :func:`start_tag`):
    each fold's scores averaged over the chains of ``seeds`` first (a fold counts only when every chain
    of both starts is stored), then the paired differences over the folds.

    Returns {(network, protocol, model): {metric: (mean difference, SE, folds, mean default, mean
    paper)}}, in the records' order."""
    out = {}
    cells = dict.fromkeys(tuple(k.split("/")[i] for i in (0, 1, 3)) for k in bench
                          if k.count("/") == 4 and k.split("/")[3] != "SVD")
    for net, protocol, model in cells:
        per_fold = {}
        for f in sorted({int(k.split("/")[2]) for k in bench if k.startswith(f"{net}/{protocol}/")}):
            base = f"{net}/{protocol}/{f}/{model}/"
            recs = {st: [bench.get(base + start_tag(st, s, sweeps)) for s in seeds] for st in ("default", "paper")}
            if all(r is not None for rs in recs.values() for r in rs):
                per_fold[f] = {st: {m: float(np.mean([r[m] for r in rs])) for m in metrics}
                               for st, rs in recs.items()}
        if per_fold:
            out[(net, protocol, model)] = {}
            for m in metrics:
                d, se, n = paired({f: v["default"][m] for f, v in per_fold.items()},
                                  {f: v["paper"][m] for f, v in per_fold.items()})
                out[(net, protocol, model)][m] = (float(d), float(se), int(n),
                                                  float(np.mean([v["default"][m] for v in per_fold.values()])),
                                                  float(np.mean([v["paper"][m] for v in per_fold.values()])))
    return out


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


# ---------------------------------------------------------------------------------------------
# The verdicts on H1-H3 (chapter 26's criteria)
# ---------------------------------------------------------------------------------------------
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


def common_folds(conv, models=CONVERGED_MODELS):
    """The folds on which every (model, T) of ``models`` that has converged records has one."""
    sets = [{r["fold"] for r in conv if r["model"] == m and r["T"] == T} for m, T in models]
    sets = [x for x in sets if x]
    return sorted(set.intersection(*sets)) if sets else []


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
