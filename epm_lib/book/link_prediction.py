"""Chapter 30b's link prediction: the IDEPM, DEPM and EPM against two baselines on held-out pairs
of small networks, under two protocols for the held-out pairs (missing, or observed zeros), as a
tidy table of scores: one row per network x protocol x method x fold.

- :func:`fit_and_check`: ``epm_lib.fit``, keeping a ``DegenerateFitWarning`` (reported by the
  chapter) and passing any other warning on;
- :func:`link_prediction_scores`: the folds, the fits and the baselines -> a :class:`LinkScores`
  (the scores table, the warnings kept, the split-merge counts, the held-out links per network);
- :func:`score_lines` and :func:`paired_lines`: the tables the chapter prints (mean ± SE over the
  folds; the best model against the better baseline, and missing against zeros, paired over folds);
- :func:`link_claims` and :func:`box_numbers`: the claims of the chapter's reading (by name) and
  the numbers of its opening box.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..baselines import score_baselines
from ..diagnose import DegenerateFitWarning
from ..experiments import hold_out, pair_folds
from ..fit import fit

__all__ = ["SCORE_COLUMNS", "BASELINES", "LinkScores", "fit_and_check", "link_prediction_scores", "score_array",
           "score_lines", "paired_lines", "link_claims", "box_numbers"]

#: the columns of :attr:`LinkScores.scores`
SCORE_COLUMNS = ["network", "protocol", "method", "fold", "auc_pr", "auc_roc", "tdll"]
#: the baselines, and the key of each in ``baselines.score_baselines``'s result
BASELINES = {"SVD": "svd-auto", "popularity": "popularity"}
_METRICS = ("auc_pr", "auc_roc", "tdll")


@dataclass
class LinkScores:
    """What :func:`link_prediction_scores` returns: ``scores`` (tidy, :data:`SCORE_COLUMNS`; folds
    numbered from 0 in the order held out), ``flagged`` (the messages of the DegenerateFitWarnings),
    ``move_stats`` (splits proposed, accepted, merges proposed, accepted, summed over the fits with
    split-merge moves), ``n_moved`` (those fits) and ``held_links`` ({network: held-out links})."""
    scores: pd.DataFrame
    flagged: list = field(default_factory=list)
    move_stats: np.ndarray = None
    n_moved: int = 0
    held_links: dict = field(default_factory=dict)


def fit_and_check(*args, flagged, **kw):
    """``epm_lib.fit(*args, **kw)``; the message of a DegenerateFitWarning is appended to ``flagged``,
    any other warning passed on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = fit(*args, **kw)
    for w in caught:
        if issubclass(w.category, DegenerateFitWarning):
            flagged.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return f


def link_prediction_scores(networks, models, n_iter, n_avg, seed, n_folds, protocols=("missing", "zeros")):
    """For each network of ``networks`` ({name: (binary matrix, undirected?)}) and each of the first
    ``n_folds`` of ten folds of pairs (``experiments.pair_folds`` with ``seed``; ``hold_out``), each
    protocol ("missing": the held-out pairs masked; "zeros": observed zeros) and each model of
    ``models`` ({name: options of ``fit``}): one fit (``n_iter``, ``n_avg``, ``seed``), then the
    baselines (``baselines.score_baselines``, SVD rank "auto"). Returns a :class:`LinkScores`; the
    split-merge counts are those of the fits of every model but the EPM."""
    rows, flagged, moved, held_links = [], [], [], {}
    for name, (M, undirected) in networks.items():
        held_links[name] = 0
        for k, fold in enumerate(pair_folds(M.shape, 10, seed, symmetric=undirected)[:n_folds]):
            X_train, test, miss = hold_out(M, fold, symmetric=undirected)
            held_links[name] += int(test[2].sum())
            for protocol in protocols:
                m = miss if protocol == "missing" else None
                for model, kw in models.items():
                    f = fit_and_check(X_train, model, symmetric=undirected, test=test, mask=m, n_iter=n_iter,
                                      n_avg=n_avg, seed=seed, flagged=flagged, **kw)
                    rows.append((name, protocol, model, k, f.tdauc_pr, f.tdauc_roc, f.tdll))
                    if model != "EPM":
                        moved.append(f.move_stats.sum(axis=0))
                b = score_baselines(X_train, test, mask=m, seed=seed, k="auto", symmetric=undirected)
                for method, key in BASELINES.items():
                    rows.append((name, protocol, method, k, b[key]["tdauc_pr"], b[key]["auc_roc"], b[key]["tdll"]))
    scores = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    return LinkScores(scores, flagged, sum(moved), len(moved), held_links)


def score_array(scores, network, protocol, method):
    """The folds x (AUC-PR, AUC-ROC, TDLL) array of one network, protocol and method, folds in order."""
    s = scores[(scores.network == network) & (scores.protocol == protocol) & (scores.method == method)]
    return s.sort_values("fold")[list(_METRICS)].to_numpy()


def _cell(v, d):
    return f"{v.mean():.{d}f}±{v.std(ddof=1) / np.sqrt(v.size):.{d}f}"


def score_lines(scores, network, methods, protocols=("missing", "zeros")):
    """The chapter's table of one network: per method, mean ± SE over the folds of AUC-PR, AUC-ROC
    (2 decimals) and TDLL (3) under each protocol, as lines of text."""
    out = [f"{'':11}" + "".join(f"{'held-out pairs ' + p:^38}" for p in protocols),
           f"{'method':11}" + f"{'AUC-PR':>11}{'AUC-ROC':>12}{'TDLL':>15}" * len(protocols)]
    for method in methods:
        a = {p: score_array(scores, network, p, method) for p in protocols}
        out.append(f"{method:11}" + "".join(f"{_cell(a[p][:, 0], 2):>11}{_cell(a[p][:, 1], 2):>12}"
                                            f"{_cell(a[p][:, 2], 3):>15}" for p in protocols))
    return out


def _paired(a, b):
    d = a - b
    return d.mean(), d.std(ddof=1) / np.sqrt(d.size), int(np.sum(d > 0))


def _mean_of(scores, network, method, j, protocol="missing"):
    return score_array(scores, network, protocol, method)[:, j].mean()


def paired_lines(scores, models, n_folds):
    """Per network: the best model (highest mean AUC-PR, missing protocol) against the better
    baseline, paired over the folds, in AUC-PR and TDLL; the IDEPM's and the DEPM's TDLL with the
    pairs missing against zeros; "wins": the folds on which the first is better. Lines of text."""
    out = []
    for name in dict.fromkeys(scores.network):
        sc = {m: score_array(scores, name, "missing", m) for m in (*models, *BASELINES)}
        best = max(models, key=lambda m: sc[m][:, 0].mean())
        base = max(BASELINES, key=lambda m: sc[m][:, 0].mean())
        for j, metric, d in ((0, "AUC-PR", 2), (2, "TDLL", 3)):      # the table's decimals
            mean, se, wins = _paired(sc[best][:, j], sc[base][:, j])
            out.append(f"{name:8} {metric:6}: {best} - {base} = {mean:+.{d}f} ± {se:.{d}f}, wins {wins}/{n_folds}")
        for model in ("IDEPM", "DEPM"):
            mean, se, wins = _paired(score_array(scores, name, "missing", model)[:, 2],
                                     score_array(scores, name, "zeros", model)[:, 2])
            out.append(f"{name:8} TDLL  : {model} missing - zeros = {mean:+.3f} ± {se:.3f}, wins {wins}/{n_folds}")
    return out


def link_claims(scores, models):
    """The claims of chapter 30b's reading ({statement: bool}): on karate and Les Mis every model
    beats both baselines in mean AUC-PR and TDLL (missing protocol); on Davis the SVD's means lie
    between the models'; every model's TDLL is higher with the pairs missing than as zeros."""
    mo = lambda n, j, p="missing": [_mean_of(scores, n, m, j, p) for m in models]          # noqa: E731
    ba = lambda n, j: [_mean_of(scores, n, b, j) for b in BASELINES]                        # noqa: E731
    claims = {}
    for name in ("karate", "Les Mis"):
        claims[f"{name}: every model above both baselines in AUC-PR"] = bool(min(mo(name, 0)) > max(ba(name, 0)))
        claims[f"{name}: every model above both baselines in TDLL"] = bool(min(mo(name, 2)) > max(ba(name, 2)))
    for j, metric in ((0, "AUC-PR"), (2, "TDLL")):
        claims[f"Davis: the SVD's {metric} between the models'"] = \
            bool(min(mo("Davis", j)) < _mean_of(scores, "Davis", "SVD", j) < max(mo("Davis", j)))
    claims["every model's TDLL higher with the pairs missing"] = all(
        _mean_of(scores, n, m, 2, "missing") > _mean_of(scores, n, m, 2, "zeros")
        for n in dict.fromkeys(scores.network) for m in models)
    return claims


def box_numbers(scores, models):
    """The numbers of chapter 30b's opening box as ``[(name, value, digits), ...]``: the models' mean
    AUC-PR (lowest, highest) and the better baseline's on karate and Les Mis, the SVD's and the
    models' on Davis (missing protocol); how many model x network pairs have a higher TDLL with the
    pairs missing than as zeros, of how many."""
    models_pr = {n: [_mean_of(scores, n, m, 0) for m in models] for n in dict.fromkeys(scores.network)}
    base_pr = {n: max(_mean_of(scores, n, b, 0) for b in BASELINES) for n in models_pr}
    better = [_mean_of(scores, n, m, 2, "missing") > _mean_of(scores, n, m, 2, "zeros") for n in models_pr
              for m in models]
    return [("kar_lo", min(models_pr["karate"]), 2), ("kar_hi", max(models_pr["karate"]), 2),
            ("kar_base", base_pr["karate"], 2), ("lm_lo", min(models_pr["Les Mis"]), 2),
            ("lm_hi", max(models_pr["Les Mis"]), 2), ("lm_base", base_pr["Les Mis"], 2),
            ("dv_svd", _mean_of(scores, "Davis", "SVD", 0), 2), ("dv_lo", min(models_pr["Davis"]), 2),
            ("dv_hi", max(models_pr["Davis"]), 2), ("miss_better", int(sum(better)), None),
            ("miss_total", len(better), None)]
