"""The benchmarks of the starts (``benchmarks/bench_starts.py``), read for chapters 29 and 29b: its
JSON files as {label: {fold: score}} (:func:`planted_scores`, :func:`network_scores`), and the
default start against the paper's on chapter 30's networks (:func:`start_differences`, with the
keys' :func:`start_tag`; a key read back into its named parts: :func:`parse_start_key`). The values
feed ``tables.mean_se`` like those of ``records.values``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from .tables import paired

__all__ = ["planted_scores", "network_scores", "START_METRICS", "START_SEED", "START_SWEEPS", "start_tag",
           "StartKey", "parse_start_key", "start_differences", "rule_differences"]


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


def network_scores(bench, metric="tdauc_pr"):
    """{network: {label: {fold: score}}} of ``benchmarks/bench_starts.py``'s five community networks
    (its ``starts_networks.json`` as a dict, keys "network/fold/model/start" and "network/fold/SVD"):
    one label per model and start ("IDEPM/default", "DEPM/truth", "EPM/paper", ...) and "SVD", the
    better of the two truncated SVDs (``score_baselines``' "svd-auto" and "svd-k16") on each fold, as the
    benchmark's table reads it; the networks' "info" records are left out. Also reads
    ``benchmarks/bench_small_groups.py``'s ``small_groups.json`` (the same keys; its "ranks" records,
    without scores, are left out, and "network/fold/estimator", ``EdgePartitionModel()`` with its
    defaults, is the label "estimator"). Feeds :func:`mean_se`."""
    out = {}
    for key, rec in bench.items():
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == "SVD":
            net, fold, label = parts[0], int(parts[1]), "SVD"
            score = max(rec["svd-auto"][metric], rec["svd-k16"][metric])
        elif len(parts) == 3 and parts[2] == "estimator" and metric in rec:
            net, fold, label = parts[0], int(parts[1]), "estimator"
            score = rec[metric]
        elif len(parts) == 4 and metric in rec:     # ("ranks" records hold no score)
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
    seed and "~sweeps" unless its 500 sweeps (``benchmarks/bench_starts.py`` writes it;
    :func:`parse_start_key` reads it back)."""
    return start + ("" if seed == START_SEED else f"@{seed}") + ("" if sweeps == START_SWEEPS else f"~{sweeps}")


class StartKey(NamedTuple):
    """The parts of a key of ``starts_chapter30.json`` (:func:`parse_start_key`)."""
    network: str
    protocol: str                #: how the fold's pairs were held out: "missing" or "zeros"
    fold: int
    model: str                   #: "SVD" for the baselines' record of the fold
    start: Optional[str]         #: "default" or "paper"; None for "SVD"
    seed: Optional[int]          #: the chain's seed (:data:`START_SEED` when the key has no "@seed")
    sweeps: Optional[int]        #: its length (:data:`START_SWEEPS` when the key has no "~sweeps")


def parse_start_key(key):
    """A key of ``starts_chapter30.json`` ("network/protocol/fold/model/" + :func:`start_tag`, or
    "network/protocol/fold/SVD") as its named parts, a :class:`StartKey`: e.g.
    "Davis/zeros/0/EPM/paper@2018~5000" -> network "Davis", protocol "zeros", fold 0, model "EPM",
    start "paper", seed 2018, sweeps 5000. ``ValueError`` naming the key for any other form."""
    parts = key.split("/")
    if len(parts) == 4 and parts[3] == "SVD" and parts[2].isdigit():
        return StartKey(parts[0], parts[1], int(parts[2]), "SVD", None, None, None)
    if len(parts) == 5 and parts[2].isdigit() and parts[3] != "SVD":
        rest, tilde, sweeps = parts[4].partition("~")
        start, at, seed = rest.partition("@")
        if start and (not at or seed.isdigit()) and (not tilde or sweeps.isdigit()):
            return StartKey(parts[0], parts[1], int(parts[2]), parts[3], start,
                            int(seed) if seed else START_SEED, int(sweeps) if sweeps else START_SWEEPS)
    raise ValueError(f"{key!r} is not a key of starts_chapter30.json "
                     "('network/protocol/fold/model/start[@seed][~sweeps]' or 'network/protocol/fold/SVD')")


def start_differences(bench, seeds, sweeps=START_SWEEPS, metrics=START_METRICS):
    """Default start minus the paper's on chapter 30's networks (``benchmarks/bench_starts.py --part
    chapter30``; its ``starts_chapter30.json`` as a dict, keys "network/protocol/fold/model/" + :func:`start_tag`):
    each fold's scores averaged over the chains of ``seeds`` first (a fold counts only when every chain
    of both starts is stored), then the paired differences over the folds.

    Returns {(network, protocol, model): {metric: (mean difference, SE, folds, mean default, mean
    paper)}}, in the records' order."""
    out = {}
    keys = []
    for k in bench:
        try:
            keys.append(parse_start_key(k))
        except ValueError:
            continue
    cells = dict.fromkeys((p.network, p.protocol, p.model) for p in keys if p.start is not None)
    for net, protocol, model in cells:
        per_fold = {}
        for f in sorted({p.fold for p in keys if (p.network, p.protocol) == (net, protocol)}):
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


def rule_differences(others, *defaults, metric="tdauc_pr"):
    """The held-out rank rule against the stored default (spectral) runs, a tidy ``pandas.DataFrame``
    with one row per network (and protocol) and model: ``network``, ``model``, ``pairs`` (fold and
    chain-seed pairs compared), ``default`` and ``heldout`` (their mean ``metric``), ``difference``
    (heldout - default) and ``same_K`` (pairs whose start had the same number of atoms, hence the same
    chain). ``others``: ``benchmarks/small_groups_others.json`` (keys ".../model/heldout" or
    ".../model/heldout@seed"); ``defaults``: the files that hold the default runs under the same key
    with "default" for "heldout" (``starts_networks.json``, ``starts_chapter30.json``). A key without
    its default is left out."""
    import pandas as pd
    rows = []
    for key, rec in others.items():
        head, _, start = key.rpartition("/")
        if not start.startswith("heldout") or metric not in rec:
            continue
        dkey = f"{head}/default{start[len('heldout'):]}"
        base = next((d[dkey] for d in defaults if dkey in d), None)
        if base is None:
            continue
        parts = head.split("/")             # network[/protocol]/fold/model
        network = "/".join(parts[:-2])
        rows.append((network, parts[-1], float(base[metric]), float(rec[metric]), bool(rec.get("same_K"))))
    t = pd.DataFrame(rows, columns=["network", "model", "default", "heldout", "same_K"])
    g = t.groupby(["network", "model"], sort=True)
    out = g.agg(pairs=("default", "size"), default=("default", "mean"), heldout=("heldout", "mean"),
                same_K=("same_K", "sum")).reset_index()
    out["difference"] = out["heldout"] - out["default"]
    return out[["network", "model", "pairs", "default", "heldout", "difference", "same_K"]]
