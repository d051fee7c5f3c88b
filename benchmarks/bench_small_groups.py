"""Issue 30, item 1: sparse networks of many small groups, where the spectral rank rule of the data's
start (``starts.choose_rank``) sees no group above the noise edge and gives its floor of 4 atoms. Does
the held-out rank rule (``fit(..., rank="heldout")``, ``epm_lib.heldout_rank``) close the gap to a chain
seated at the true groups?

``--part small`` (the default): two generated networks, nodes shuffled (``default_rng(0).permutation``):

* "groups40": ``networkx.planted_partition_graph(40, 6, 0.5, 0.005, seed=1)``, 40 groups of 6 nodes
  (240 nodes, about 3.7 edges per node);
* "lfr-small": ``networkx.LFR_benchmark_graph(250, 3, 1.5, 0.1, average_degree=5, max_degree=10,
  min_community=5, max_community=15, seed=s)``, communities of 5-15 nodes; s = 1, 2, ... until one
  generates (without ``max_degree`` a node's degree can exceed what a community of 15 holds and the
  generator fails for every seed tried; seed 1 generates).

Pair folds ``pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)`` (20% of the pairs each), held out
with ``hold_out`` (the fold's pairs and the diagonal masked); ``fit(X, model, test=test, mask=mask,
symmetric=True, n_iter=1500, n_avg=500, seed=0)`` of the IDEPM, DEPM-100 and EPM-100 from three starts:
"spectral" (``init="data"``: today's default), "heldout" (``init="data", rank="heldout"``) and "truth"
(``init=<the true groups>``, ``starts.labels_start``); beside ``score_baselines``'s SVDs (the table shows
the better of "svd-auto" and "svd-k16" per fold, as ``bench_starts.py`` does). Held-out AUC-PR by
scikit-learn's ``average_precision_score`` (``fit``'s ``tdauc_pr``).

``--part estimator``: ``EdgePartitionModel(random_state=0)``, every other option at its default (the
IDEPM, the data's start with the held-out rule, 1500 sweeps, 500 averaged), on the same networks and folds, against the
chain seated at the truth and the SVD (records "network/fold/estimator" in ``small_groups.json``).

``--part others`` (issue 30 item 1, "no worse elsewhere"): the five community networks of
``bench_starts.py --part networks`` (planted, unequal, sparse, lfr-docs, lfr; the same folds, models,
sweeps and seed) and chapter 30's three networks under its protocol (``bench_starts.py --part chapter30``:
5 folds, missing and zeros, IDEPM and DEPM-32 with split_merge=20, EPM-32, 500 sweeps, seed 2017) from the
held-out rule, against the stored default ("spectral") runs of ``starts_networks.json`` and
``starts_chapter30.json``. The held-out rule draws the same two seeds from the chain's generator as the
spectral rule, so where it chooses the same K the chain is the stored one, draw for draw: only the runs
where the Ks differ are fitted (records say ``same_K``). Records: key "network/fold/model/heldout"
(chapter 30: "network/protocol/fold/model/heldout").

``--part movielens``: the rule's choice and cost on MovieLens100K and MovieLens1M (no chains): the K it
picks, and for information the held-out log-likelihood of the KL NMF at K = 4 ... 80 (one split).

Each run is written as it finishes, so an interrupted run resumes: ``benchmarks/small_groups.json``
(``--part small``), ``small_groups_others.json``, ``small_groups_movielens.json``.

Usage::

    python benchmarks/bench_small_groups.py [--part small|estimator|others|movielens] [--folds 0 1 2]
                                            [--models IDEPM DEPM EPM] [--networks groups40] [--table]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

from epm_lib import fit
from epm_lib.atomic import atomic_write_text
from epm_lib.baselines import score_baselines
from epm_lib.experiments import hold_out, pair_folds
from epm_lib.fit_data import mask_entries
from epm_lib.heldout_rank import heldout_rank

OUTS = {"small": "small_groups.json", "estimator": "small_groups.json", "others": "small_groups_others.json",
        "movielens": "small_groups_movielens.json"}
OUT = None       # the part's file (main)
MODELS = {"IDEPM": None, "DEPM": 100, "EPM": 100}
STARTS = ("spectral", "heldout", "truth")
#: further starts run only when asked (``--starts``): the held-out rule with the burn-in hold of chapter 29b
EXTRA_STARTS = ("heldout+hold",)
N_ITER, N_AVG, SEED = 1500, 500, 0


def _lfr_small():
    """The LFR network of small communities: the first seed 1, 2, ... that generates."""
    for s in range(1, 50):
        try:
            return nx.LFR_benchmark_graph(250, 3, 1.5, 0.1, average_degree=5, max_degree=10, min_community=5,
                                          max_community=15, seed=s), s
        except nx.ExceededMaxIterations:
            continue
    raise RuntimeError("LFR_benchmark_graph failed for seeds 1..49")


NETWORKS = {
    "groups40": lambda: (nx.planted_partition_graph(40, 6, 0.5, 0.005, seed=1), 1),
    "lfr-small": _lfr_small,
}


def _labels(G):
    """Group labels 0.. of G's nodes in sorted order (LFR: a community is a set of nodes, named by
    its smallest node)."""
    key = "block" if "block" in G.nodes[next(iter(G))] else "community"
    vals = [G.nodes[v][key] for v in sorted(G)]
    if isinstance(vals[0], (set, frozenset)):
        names = {}
        vals = [names.setdefault(min(c), len(names)) for c in vals]
    return np.asarray(vals, dtype=np.int64)


def network(name):
    """(A, labels, generator seed): the binary symmetric adjacency matrix without self-loops, nodes
    shuffled by ``default_rng(0).permutation``, and the true group of each row."""
    G, s = NETWORKS[name]()
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    nodes = sorted(G)
    labels = _labels(G)
    perm = np.random.default_rng(0).permutation(len(nodes))
    A = nx.to_scipy_sparse_array(G, nodelist=[nodes[p] for p in perm], format="csr")
    return sp.csr_matrix((sp.csr_matrix(A) > 0).astype(np.int8)), labels[perm], s


def _save(results):
    atomic_write_text(OUT, json.dumps(results, indent=1, sort_keys=True))


def _record(r, t0):
    return dict(tdauc_pr=float(r.tdauc_pr), tdauc_roc=float(r.tdauc_roc), tdll=float(r.tdll),
                K_start=r.settings["K_start"], K_mean=float(r.K_mean), init_seconds=float(r.settings["init_seconds"]),
                seconds=time.perf_counter() - t0, init=r.settings["init"], rank=r.settings.get("rank"))


def _start_options(start, labels):
    return {"spectral": dict(init="data"), "heldout": dict(init="data", rank="heldout"),
            "truth": dict(init=labels), "heldout+hold": dict(init="data", rank="heldout", hold=(300, 0.1))}[start]


def start_ranks(X, mask, symmetric, seed, T):
    """The data's start's K under both rules, as ``fit(X, ..., seed=seed, mask=mask, init="data")`` computes
    them (``starts.data_start``: the chain's generator ``default_rng(seed)`` draws the SVD's and the NMF's
    seeds; the spectral count at least ``K_FLOOR``; the held-out rule from the NMF's seed; both capped at T,
    the ones and min(I, J)): dict(spectral=..., heldout=..., grid, scores, seconds of the held-out rule)."""
    from epm_lib.starts import K_FLOOR, choose_rank
    I, J = X.shape
    seed_svd, seed_nmf = (int(v) for v in np.random.default_rng(seed).integers(0, 2 ** 31 - 1, size=2))
    Xc = sp.csr_matrix(X)
    Xc = sp.csr_matrix((np.ones(Xc.nnz), Xc.nonzero()), shape=(I, J))
    miss = None
    if mask is not None:
        mk = mask_entries(mask, X.shape)
        miss = (mk // J, mk % J)
    k_spec = max(choose_rank(Xc, symmetric=symmetric, seed=seed_svd)[0], K_FLOOR)
    t0 = time.perf_counter()
    k_held, info = heldout_rank(Xc, missing=miss, symmetric=symmetric, seed=seed_nmf, T=T, k_start=k_spec)
    seconds = time.perf_counter() - t0

    def cap(K):
        return max(1, min(int(K), Xc.nnz, min(I, J), T if T is not None else Xc.nnz))
    return dict(spectral=cap(k_spec), heldout=cap(k_held), grid=info["grid"],
                scores={str(k): v for k, v in info["scores"].items()}, splits=info["splits"], seconds=seconds)


def run_small(results, args):
    for name in args.networks or list(NETWORKS):
        A, labels, s = network(name)
        deg = np.asarray(A.sum(axis=1)).ravel()
        from epm_lib.starts import choose_rank
        results[f"{name}/info"] = dict(nodes=int(A.shape[0]), edges=int(A.nnz // 2), generator_seed=s,
                                       groups=int(labels.max() + 1), group_sizes=np.bincount(labels).tolist(),
                                       degree_min_mean_max=[int(deg.min()), float(deg.mean()), int(deg.max())],
                                       K_spectral_full=int(choose_rank(A, symmetric=True)[0]))
        _save(results)
        folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
        for f in args.folds:
            X, test, mask = hold_out(A, folds[f], symmetric=True)
            key = f"{name}/{f}/SVD"
            if key not in results:
                base = score_baselines(X, test, mask=mask, symmetric=True)
                results[key] = {b: {k: float(v) for k, v in d.items()} for b, d in base.items()}
                _save(results)
            for model in args.models:
                key = f"{name}/{f}/{model}/ranks"
                if key not in results:
                    results[key] = start_ranks(X, mask, True, SEED, MODELS[model])
                    _save(results)
                for start in args.starts or STARTS:
                    key = f"{name}/{f}/{model}/{start}"
                    if key in results:
                        continue
                    t0 = time.perf_counter()
                    r = fit(X, model, T=MODELS[model], test=test, mask=mask, symmetric=True, n_iter=N_ITER,
                            n_avg=N_AVG, seed=SEED, **_start_options(start, labels))
                    results[key] = _record(r, t0)
                    _save(results)
                    print(f"{name:9s} fold {f} {model:5s} {start:8s} AUC-PR {r.tdauc_pr:.3f}  K_start "
                          f"{r.settings['K_start']:3d}  K {r.K_mean:6.1f}  start {r.settings['init_seconds']:5.1f} s  "
                          f"{time.perf_counter() - t0:6.1f} s", flush=True)
    small_table(results, args)


def _mean(vals):
    return f"{np.mean(vals):.3f}" if len(vals) else "-"


def small_table(results, args):
    names = args.networks or list(NETWORKS)
    print(f"\nheld-out AUC-PR, mean over folds {list(args.folds)} (per fold in brackets); SVD: the better of "
          f"svd-auto and svd-k16 per fold. Bar: spectral/heldout >= truth - 0.02 and >= SVD")
    for name in names:
        info = results.get(f"{name}/info")
        if info:
            print(f"{name}: {info['nodes']} nodes, {info['edges']} edges, {info['groups']} groups, degree "
                  f"{info['degree_min_mean_max']}, spectral K on the full network {info['K_spectral_full']}")
        svd = [max(results[f"{name}/{f}/SVD"][b]["tdauc_pr"] for b in ("svd-auto", "svd-k16"))
               for f in args.folds if f"{name}/{f}/SVD" in results]
        for model in MODELS:
            label = model + (f"-{MODELS[model]}" if MODELS[model] else "")
            cells, ks = [], []
            vals = {}
            for start in [*STARTS, *(st for st in EXTRA_STARTS if any(
                    f"{name}/{f}/{model}/{st}" in results for f in args.folds))]:
                recs = [results[k] for k in (f"{name}/{f}/{model}/{start}" for f in args.folds) if k in results]
                vals[start] = [r["tdauc_pr"] for r in recs]
                ks.append("/".join(str(r["K_start"]) for r in recs))
                cells.append(f"{start} {_mean(vals[start])} [{' '.join(f'{v:.2f}' for v in vals[start])}] "
                             f"K0 {ks[-1]}")
            if not vals["spectral"]:
                continue
            bar = ""
            if vals["truth"] and svd:
                t, b = np.mean(vals["truth"]), np.mean(svd)
                bar = "  bar: " + ", ".join(
                    f"{st} {'ok' if np.mean(vals[st]) >= t - 0.02 and np.mean(vals[st]) >= b else 'NO'}"
                    for st in ("spectral", "heldout") if vals[st])
            print(f"  {label:9s} " + " | ".join(cells) + bar)
        print(f"  {'SVD':9s} {_mean(svd)} [{' '.join(f'{v:.2f}' for v in svd)}]")


# ----------------------------------------------------------------------------------------------
# --part estimator: EdgePartitionModel() with its defaults on the same folds
# ----------------------------------------------------------------------------------------------

def run_estimator(results, args):
    """``EdgePartitionModel(random_state=SEED)`` with every other option at its default (the IDEPM,
    the data's start with the held-out rank rule, 1500 sweeps, 500 averaged) fitted to each fold's
    training matrix and mask (``est.fit(X, mask=mask)``: X is symmetric, so fitted as an undirected
    network), scored on the fold's held-out pairs with ``predict_proba`` and scikit-learn's
    ``average_precision_score``; key "network/fold/estimator"."""
    from sklearn.metrics import average_precision_score

    from epm_lib import EdgePartitionModel
    for name in args.networks or list(NETWORKS):
        A, labels, s = network(name)
        folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
        for f in args.folds:
            key = f"{name}/{f}/estimator"
            if key in results:
                continue
            X, (rows, cols, y), mask = hold_out(A, folds[f], symmetric=True)
            t0 = time.perf_counter()
            est = EdgePartitionModel(random_state=SEED).fit(X, mask=mask)
            p = est.predict_proba(rows, cols)
            r = est.result_
            results[key] = dict(tdauc_pr=float(average_precision_score(y, p)), model=r.settings["model"],
                                rank=r.settings.get("rank"), K_start=r.settings["K_start"], K_mean=float(r.K_mean),
                                symmetric=bool(est.symmetric_), n_iter=r.settings["n_iter"],
                                n_avg=r.settings["n_avg"], seconds=time.perf_counter() - t0)
            _save(results)
            print(f"{name:9s} fold {f} estimator AUC-PR {results[key]['tdauc_pr']:.3f}  K_start "
                  f"{r.settings['K_start']:3d}  K {r.K_mean:6.1f}  {time.perf_counter() - t0:6.1f} s", flush=True)
    estimator_table(results, args)


def estimator_table(results, args):
    print(f"\nEdgePartitionModel() defaults, held-out AUC-PR, mean over folds {list(args.folds)} (per fold in "
          f"brackets), against the IDEPM seated at the true groups (1500 sweeps) and the SVD (better of svd-auto "
          f"and svd-k16 per fold). Bar: >= truth - 0.02 and >= SVD")
    for name in args.networks or list(NETWORKS):
        est = [results[f"{name}/{f}/estimator"]["tdauc_pr"] for f in args.folds if f"{name}/{f}/estimator" in results]
        truth = [results[f"{name}/{f}/IDEPM/truth"]["tdauc_pr"] for f in args.folds
                 if f"{name}/{f}/IDEPM/truth" in results]
        svd = [max(results[f"{name}/{f}/SVD"][b]["tdauc_pr"] for b in ("svd-auto", "svd-k16"))
               for f in args.folds if f"{name}/{f}/SVD" in results]
        ks = "/".join(str(results[f"{name}/{f}/estimator"]["K_start"]) for f in args.folds
                      if f"{name}/{f}/estimator" in results)
        ok = (est and truth and svd and np.mean(est) >= np.mean(truth) - 0.02 and np.mean(est) >= np.mean(svd))
        print(f"  {name:9s} estimator {_mean(est)} [{' '.join(f'{v:.2f}' for v in est)}] K0 {ks} | IDEPM at the "
              f"truth {_mean(truth)} | SVD {_mean(svd)}  bar: {'ok' if ok else 'NO'}")


# ----------------------------------------------------------------------------------------------
# --part others: bench_starts' five networks and chapter 30's three, held-out rule vs stored default
# ----------------------------------------------------------------------------------------------

def _bench_starts():
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_starts
    return bench_starts


def _memo(memo, key, make):
    """The ranks of one training matrix and seed, computed once for the models that share them (T = 100 and
    the IDEPM's None both cap the grid at K_CAP = 40)."""
    from epm_lib.heldout_rank import K_CAP
    key = key[:-1] + (min(key[-1] or K_CAP, K_CAP),)
    if key not in memo:
        memo[key] = make()
    return memo[key]


def run_others(results, args):
    bs = _bench_starts()
    memo = {}
    stored = json.loads(Path(__file__).with_name("starts_networks.json").read_text())
    names = [n for n in bs.NETWORKS if args.networks is None or n in args.networks]
    for name in names:
        A, labels = bs.community_network(name)
        folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
        for f in args.folds:
            X, test, mask = hold_out(A, folds[f], symmetric=True)
            for model, T in bs.MODELS:
                if model not in args.models:
                    continue
                key = f"{name}/{f}/{model}/heldout"
                if key in results:
                    continue
                old = stored.get(f"{name}/{f}/{model}/default")
                ks = _memo(memo, (name, f, T), lambda: start_ranks(X, mask, True, 0, T))
                if old is not None and ks["spectral"] == ks["heldout"]:   # the same K: the same chain
                    results[key] = dict(old, same_K=True, ranks=ks)
                else:
                    t0 = time.perf_counter()
                    r = fit(X, model, T=T, test=test, mask=mask, symmetric=True, n_iter=bs.N_ITER, n_avg=bs.N_AVG,
                            seed=0, init="data", rank="heldout")
                    results[key] = dict(_record(r, t0), same_K=False, ranks=ks)
                _save(results)
                rec = results[key]
                print(f"{name:9s} fold {f} {model:5s} K {ks['spectral']} -> {ks['heldout']} ({ks['seconds']:.1f} s)  "
                      f"AUC-PR {old['tdauc_pr'] if old else float('nan'):.3f} -> {rec['tdauc_pr']:.3f}", flush=True)
    run_chapter30(results, args, bs, memo)
    others_table(results, args, bs)


def run_chapter30(results, args, bs, memo):
    stored = json.loads(Path(__file__).with_name("starts_chapter30.json").read_text())
    nets = bs.chapter30_networks()
    for name, (M, undirected) in nets.items():
        if args.networks is not None and name not in args.networks:
            continue
        for f, fold in enumerate(pair_folds(M.shape, 10, bs.CH30_SEED, symmetric=undirected)[:5]):
            if f not in args.folds_ch30:
                continue
            X, test, miss = hold_out(M, fold, symmetric=undirected)
            for protocol in bs.CH30_PROTOCOLS:
                mask = miss if protocol == "missing" else None
                for model, kw in bs.CH30_MODELS.items():
                    if model not in args.models:
                        continue
                    for seed in [bs.CH30_SEED, *args.chain_seeds]:
                        tag = "heldout" if seed == bs.CH30_SEED else f"heldout@{seed}"
                        key = f"{name}/{protocol}/{f}/{model}/{tag}"
                        if key in results:
                            continue
                        old = stored.get(f"{name}/{protocol}/{f}/{model}/" + tag.replace("heldout", "default"))
                        ks = _memo(memo, (name, protocol, f, seed, kw.get("T")),
                                   lambda: start_ranks(X, mask, undirected, seed, kw.get("T")))
                        if old is not None and ks["spectral"] == ks["heldout"]:   # the same K: the same chain
                            results[key] = dict(old, same_K=True, ranks=ks)
                        else:
                            t0 = time.perf_counter()
                            r = fit(X, model, symmetric=undirected, test=test, mask=mask, n_iter=bs.CH30_SWEEPS,
                                    n_avg=bs.CH30_SWEEPS // 2, seed=seed, init="data", rank="heldout", **kw)
                            results[key] = dict(_record(r, t0), same_K=False, ranks=ks)
                        _save(results)
                        rec = results[key]
                        print(f"{name:8s} {protocol:7s} fold {f} {model:5s} {tag:13s} K {ks['spectral']} -> "
                              f"{ks['heldout']}  AUC-PR {old['tdauc_pr'] if old else float('nan'):.3f} -> "
                              f"{rec['tdauc_pr']:.3f}  TDLL {old['tdll'] if old else float('nan'):.4f} -> "
                              f"{rec['tdll']:.4f}", flush=True)


def others_table(results, args, bs):
    nets = json.loads(Path(__file__).with_name("starts_networks.json").read_text())
    ch30 = json.loads(Path(__file__).with_name("starts_chapter30.json").read_text())
    print(f"\nbench_starts' networks, folds {list(args.folds)}: held-out AUC-PR and TDLL, mean over folds, stored default "
          f"(spectral) -> held-out rule; the start's K per fold; 'same' = same K, so the same chain")
    for name in bs.NETWORKS:
        for model, T in bs.MODELS:
            pairs = [(nets[f"{name}/{f}/{model}/default"], results[k]) for f in args.folds
                     if (k := f"{name}/{f}/{model}/heldout") in results]
            if pairs:
                _pair_line(f"{name} {model}" + (f"-{T}" if T else ""), pairs)
    for seeds in ([bs.CH30_SEED], [bs.CH30_SEED, *args.chain_seeds]) if args.chain_seeds else ([bs.CH30_SEED],):
        print(f"\nchapter 30's networks, folds {list(args.folds_ch30)}, chains of seeds {seeds} (each pair of chains "
              f"counted once): the same, default -> held-out rule")
        for name in bs.chapter30_networks():
            for protocol in bs.CH30_PROTOCOLS:
                for model in bs.CH30_MODELS:
                    pairs = []
                    for f in args.folds_ch30:
                        for seed in seeds:
                            tag = "" if seed == bs.CH30_SEED else f"@{seed}"
                            k = f"{name}/{protocol}/{f}/{model}/heldout{tag}"
                            if k in results and f"{name}/{protocol}/{f}/{model}/default{tag}" in ch30:
                                pairs.append((ch30[f"{name}/{protocol}/{f}/{model}/default{tag}"], results[k]))
                    if pairs:
                        _pair_line(f"{name} {protocol} {model}", pairs)


def _pair_line(label, pairs):
    a = np.array([[o["tdauc_pr"], n["tdauc_pr"], o["tdll"], n["tdll"]] for o, n in pairs])
    same = sum(bool(n.get("same_K")) for _, n in pairs)
    ks = " ".join(f"{n['ranks']['spectral']}->{n['ranks']['heldout']}" for _, n in pairs)
    print(f"  {label:26s} AUC-PR {a[:, 0].mean():.3f} -> {a[:, 1].mean():.3f} ({a[:, 1].mean() - a[:, 0].mean():+.3f})"
          f"  TDLL {a[:, 2].mean():.4f} -> {a[:, 3].mean():.4f}  K0 {ks}  same {same}/{len(pairs)}")


# ----------------------------------------------------------------------------------------------
# --part movielens: the rule's K and cost on MovieLens (no chains)
# ----------------------------------------------------------------------------------------------

def run_movielens(results, args):
    from epm_lib.datasets import load
    for name, grid in (("movielens100k", [4, 8, 16, 32, 40, 80]), ("movielens1m", [4, 8, 16, 32, 40])):
        key = f"{name}/rule"
        if key not in results:
            X = load(name).X
            t0 = time.perf_counter()
            K, info = heldout_rank(X, seed=0)
            t_rule = time.perf_counter() - t0
            t0 = time.perf_counter()
            Kg, ginfo = heldout_rank(X, seed=0, grid=grid, patience=None, n_splits=1)
            results[key] = dict(shape=list(X.shape), ones=int(X.nnz), K=K, k_spectral=info["k_spectral"],
                                rule_seconds=t_rule, grid=grid, grid_best=Kg,
                                grid_scores={str(k): v for k, v in ginfo["scores"].items()},
                                grid_eps={str(k): v for k, v in ginfo["eps"].items()},
                                held_ones=ginfo["held_ones"], held_zeros=ginfo["held_zeros"],
                                grid_seconds=time.perf_counter() - t0)
            _save(results)
        r = results[key]
        print(f"{name}: {r['shape']} {r['ones']} ones; spectral K {r['k_spectral']}, held-out rule K {r['K']} "
              f"({r['rule_seconds']:.1f} s); the whole grid {r['grid']} (one split, {r['grid_seconds']:.0f} s): "
              + ", ".join(f"{k}: {v:.5f}" for k, v in r["grid_scores"].items()) + f" -> best {r['grid_best']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("small", "estimator", "others", "movielens"), default="small")
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--folds-ch30", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--chain-seeds", type=int, nargs="+", default=[],
                    help="--part others: chapter 30's chains of these seeds too (keys '...heldout@seed'), against the "
                         "stored 'default@seed' chains")
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--networks", nargs="+", default=None)
    ap.add_argument("--starts", nargs="+", choices=[*STARTS, *EXTRA_STARTS], default=None,
                    help="--part small: only these starts (default: spectral, heldout, truth)")
    ap.add_argument("--table", action="store_true", help="only print the tables of the stored records")
    args = ap.parse_args(argv)
    global OUT
    OUT = Path(__file__).with_name(OUTS[args.part])
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.part == "small":
        return small_table(results, args) if args.table else run_small(results, args)
    if args.part == "estimator":
        return estimator_table(results, args) if args.table else run_estimator(results, args)
    if args.part == "others":
        return others_table(results, args, _bench_starts()) if args.table else run_others(results, args)
    run_movielens(results, args)


if __name__ == "__main__":
    main()
