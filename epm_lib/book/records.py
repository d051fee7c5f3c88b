"""The stored records of the paper's protocol and of the converged one, read back and checked
for the Part III chapters (22-26, 31) and the landing page (``intro.ipynb``).

Records are read with ``epm_lib.experiments.load_results`` (their format: ``results/README.md``),
kept when they follow Sec. 5's protocol (:func:`paper_protocol`: 600 iterations, the last 100
averaged, ten folds) and checked (:func:`check_records`; ``load_present`` does both); the baselines
scored on the same folds (``epm_lib.experiments.run_baselines``) with :func:`load_baselines_present`.
The converged protocol (``epm_lib.experiments.run_converged``: several chains from dispersed starts,
run until split-R-hat <= 1.01 or a cap) has records of its own: :func:`load_converged_present`,
checked by :func:`check_converged`. A metric of one (model, T) per fold: :func:`values`,
:func:`baseline_values`; the records of some folds: :func:`on_folds`, :func:`common_folds`.
The numbers over folds and the tables are in ``tables``, the verdicts of chapter 26 in ``verdicts``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..chains import agree
from ..experiments import PAPER_T, load_baselines, load_converged, load_results
from ..fit_options import DEFAULT_K_INIT
from .notebook import Choice, Dir, ListOf, check_parameters

__all__ = ["PART3_DATASETS", "check_part3_parameters", "EXPECTED_FOLDS", "TRUNCATED", "METRICS",
           "DATASET_NAMES", "paper_protocol", "check_records", "load_present", "load_baselines_present",
           "baseline_values", "values", "hyper_end", "n_grid", "completeness", "load_protocols",
           "CONVERGED_MODELS", "CONVERGED_SPLIT_MERGE", "check_converged", "load_converged_present",
           "on_folds", "common_folds", "start_means", "rhat_max", "paper_runs"]


EXPECTED_FOLDS = 10
TRUNCATED = ("EPM", "EPMpaper", "CEPM", "DEPM")
METRICS = {"K_mean": "K", "tdll": "TDLL", "tdauc_pr": "TDAUC-PR"}
#: How the figures and tables name the data sets of Sec. 5.
DATASET_NAMES = {"enron09": "Enron09", "movielens100k": "MovieLens100K", "movielens1m": "MovieLens1M"}


#: The data sets of Sec. 5, in the paper's order: the ``datasets`` parameter of chapters 22, 23, 26.
PART3_DATASETS = ("enron09", "movielens100k", "movielens1m")


def check_part3_parameters(namespace):
    """Check the papermill parameters of a Part III chapter (``results_dir``: an existing folder;
    ``datasets``: distinct names among :data:`PART3_DATASETS`), ``notebook.check_parameters``."""
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


#: the (model, T) the converged protocol can have records of, in table order: the EPM (exact
#: a-update), CEPM and DEPM at every T of Fig. 2, then the IDEPM. The printed EPM update (EPMpaper)
#: is left out: its chain targets another distribution (errata E3, E4), so its converged records
#: (chapter 23 reads them on their own) say nothing about the EPM's posterior.
CONVERGED_MODELS = tuple((m, T) for m in ("EPM", "CEPM", "DEPM") for T in PAPER_T) + (("IDEPM", None),)


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


def common_folds(conv, models=CONVERGED_MODELS):
    """The folds on which every (model, T) of ``models`` that has converged records has one."""
    sets = [{r["fold"] for r in conv if r["model"] == m and r["T"] == T} for m, T in models]
    sets = [x for x in sets if x]
    return sorted(set.intersection(*sets)) if sets else []


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
