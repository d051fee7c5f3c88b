"""Issue 20: does the data-driven start (``fit(init="data")``) and the burn-in hold
(``fit(hold=(300, 0.1))``) take the samplers to the community mode of a planted-partition network,
and does it cost anything on the paper's synthetic toy90?

The network: networkx ``planted_partition_graph(12, 10, 0.7, 0.03, seed=1)`` (12 groups of 10
nodes), nodes shuffled (``default_rng(0).permutation``); 5 pair folds
(``pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)``), each held out with ``hold_out``
(the fold's pairs and the diagonal masked), ``fit(X, model, test=test, mask=mask, symmetric=True,
n_iter=1500, n_avg=500)`` of the IDEPM, DEPM-100 and EPM-100 from the paper's start
(``init="paper"``, the IDEPM's ``"random"`` over 100 atoms), the paper's start with
``hold=(300, 0.1)``, ``init="data"`` and ``init="data", hold=(300, 0.1)``, beside
``score_baselines``'s SVD.

toy90 (``datasets.load("toy90")``, Fig. 1's 90 x 90 matrix of five overlapping blocks): folds 0-2
of Sec. 5's ten (``cv_fold``, ``split``: held-out entries observed zeros), ``fit(X, model,
test=test, n_iter=600, n_avg=100, seed=fold)`` of the IDEPM, DEPM-30 and EPM-30 from the
paper's start and from the data's.

Each run is written to ``benchmarks/starts_planted.json`` as it finishes (key
"fold/model/start", toy90's "toy90/fold/model/start"), so an interrupted run resumes where it
stopped.

``--part networks`` (issue 20's first "done when"): five community networks generated with
networkx, nodes shuffled (``default_rng(0).permutation``), 120-250 nodes (``NETWORKS``): the planted
partition above; unequal groups (``random_partition_graph([40, 25, 15, 10, 10, 8, 6, 6], 0.5, 0.02)``);
a sparser planted partition (8 groups of 20, p_in 0.25, p_out 0.01); two degree-heterogeneous LFR
benchmarks (``LFR_benchmark_graph``: the networkx docs' example, 250 nodes, three communities and a
hub of degree 155; and one with 7 communities of 24-48 nodes, degrees 5-42). Same folds and fits as
above, from three starts: "default" (``fit`` without ``init``: what a user gets), "paper" (``init="paper"``,
the IDEPM's "random") and "truth" (``init=<the true communities>``: one-hot memberships mapped into the
state as the data's start maps its factorisation, ``starts.labels_start``), beside ``score_baselines``
(the table shows the better of its SVDs, "svd-auto" and "svd-k16", per fold). Records in
``benchmarks/starts_networks.json``, key "network/fold/model/start" (and "network/fold/SVD",
"network/info").

``--part chapter30``: chapter 30's three networks (Davis, karate, Les Miserables) under chapter 30's
protocol (``pair_folds(shape, 10, 2017, symmetric=undirected)[:5]``, held-out pairs missing and as
zeros, IDEPM and DEPM-32 with ``split_merge=20``, EPM-32, ``n_iter=500, n_avg=250, seed=2017``),
from the default start and from the paper's. Records in ``benchmarks/starts_chapter30.json``, key
"network/protocol/fold/model/start" (and ".../SVD").

``--chain-seeds 2018 2019 2020`` (chapter30): chains of other seeds too (keys ".../start@seed"), and a
second table with each fold's scores averaged over the chains first (``results.start_differences``): on
networks this small one chain of 500 sweeps per fold leaves differences of a few hundredths between starts
to chance. The stored records (shown in chapter 29b) hold seeds 2017-2028 (``--chain-seeds 2018 ... 2028``),
and for Davis under the zeros protocol chains of 5000 sweeps (``--networks Davis --protocols zeros
--models DEPM EPM --sweeps 5000 --chain-seeds 2018 2019 2020``).

``--sweeps 5000`` (chapter30): chains of that many sweeps (the last half averaged; keys ".../start[@seed]~5000")
instead of chapter 30's 500, to see whether a difference between the starts outlives the burn-in;
``--protocols zeros`` runs one protocol only, ``--models DEPM EPM`` those models only.

``--part holds`` (issue 20's item 2: which burn-in hold works across networks and models): the paper's
start (``init="paper"``, the IDEPM's "random" over 100 atoms) with each schedule of ``HOLDS``
(``hold=(sweeps, cap)``: the shape parameters capped at ``cap`` for the first ``sweeps`` sweeps, the
exact kernel after) on the five networks of ``--part networks`` (same folds, fits and seed; their
unheld paper's start is in ``starts_networks.json``), and on toy90 (folds 0-2, 600 sweeps, as
``--part planted``; with the unheld paper's start beside, key "toy90/fold/model/paper"), where the
blocks overlap and sharp atoms could cost; and the data's start with the hold ``DATA_HOLD``
(key ".../data+hold300x0.1"; unheld, "default" in ``starts_networks.json``, toy90's ".../data" here).
Records in ``benchmarks/starts_holds.json``, key "network/fold/model/hold<sweeps>x<cap>". Saving merges with what is on disk under a lock, so two
processes (``--networks planted unequal sparse`` and ``--networks lfr-docs lfr toy90``) can fill one
file on two cores.

``--redo START`` drops the stored records of a start first (e.g. after a change of the default; also
"default@2018" etc.).
Usage::

    python benchmarks/bench_starts.py [--part planted|networks|chapter30|holds|all] [--folds 0 1 2 3 4]
                                      [--out FILE] [--redo default]
                                      [--chain-seeds 2018 2019 2020] [--starts default] [--table]
                                      [--sweeps 5000] [--protocols missing zeros] [--models DEPM EPM]
"""
from __future__ import annotations

import argparse
import fcntl
import json
import time
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

from epm_lib import fit
from epm_lib.atomic import atomic_write_text
from epm_lib.datasets import load
from epm_lib.experiments import cv_fold, split
from epm_lib.baselines import score_baselines
from epm_lib.experiments import hold_out, pair_folds
from epm_lib.example_networks import planted_partition
from epm_lib.results import START_SEED, START_SWEEPS, start_differences, start_tag
from epm_lib.starts import INITS, choose_rank

MODELS = [("IDEPM", None), ("DEPM", 100), ("EPM", 100)]
STARTS = {"paper": dict(init="paper"), "paper+hold": dict(init="paper", hold=(300, 0.1)),
          "data": dict(init="data"), "data+hold": dict(init="data", hold=(300, 0.1))}
TOY_MODELS = [("IDEPM", None), ("DEPM", 30), ("EPM", 30)]
TOY_FOLDS = (0, 1, 2)


def _init(model, opts):
    """The options of a start for ``model`` ("paper" is the IDEPM's "random")."""
    return dict(opts, init=INITS[model][0]) if opts.get("init") == "paper" else opts
N_ITER, N_AVG = 1500, 500


def planted_network():
    """Chapter 29's planted partition (``epm_lib.example_networks.planted_partition``): (A, blocks)."""
    return planted_partition()


def _save(results, out, merge=True):
    """Write ``results`` to ``out`` atomically. ``merge``: first add the records another process
    wrote to ``out`` meanwhile (under an exclusive lock on ``out`` + ".lock"), so that two processes
    can fill one file; ``results`` then holds them too. ``--redo`` saves with ``merge=False``."""
    if not merge:
        atomic_write_text(out, json.dumps(results, indent=1, sort_keys=True))
        return
    with open(str(out) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if Path(out).exists():
            on_disk = json.loads(Path(out).read_text())
            results.update({k: v for k, v in on_disk.items() if k not in results})
        atomic_write_text(out, json.dumps(results, indent=1, sort_keys=True))


def _baselines_once(results, key, X, test, mask, out):
    """score_baselines' popularity and SVDs of one held-out fold into results[key], unless already there."""
    if key not in results:
        base = score_baselines(X, test, mask=mask, symmetric=True)
        results[key] = {b: {k: float(v) for k, v in d.items()} for b, d in base.items()}
        _save(results, out)


def _record(r, t0):
    return dict(tdauc_pr=float(r.tdauc_pr), tdauc_roc=float(r.tdauc_roc), tdll=float(r.tdll),
                K_start=r.settings["K_start"], K_mean=r.K_mean, init_seconds=r.settings["init_seconds"],
                seconds=time.perf_counter() - t0, hyper_last={n: float(v[-1]) for n, v in r.hyper.items()})


OUTS = {"planted": "starts_planted.json", "networks": "starts_networks.json", "chapter30": "starts_chapter30.json",
        "holds": "starts_holds.json"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=[*OUTS, "all"], default="all")
    ap.add_argument("--folds", type=int, nargs="+", default=list(range(5)))
    ap.add_argument("--networks", nargs="+", default=None, help="--part networks/chapter30/holds: only these")
    ap.add_argument("--out", type=Path, default=None, help="the JSON file of a single part")
    ap.add_argument("--redo", nargs="+", default=(), help="drop the stored records of these starts first")
    ap.add_argument("--starts", nargs="+", default=None, help="--part networks/chapter30: only these starts")
    ap.add_argument("--chain-seeds", type=int, nargs="+", default=[],
                    help="--part chapter30: chains of these seeds too (keys '...@seed'), beside the chapter's 2017")
    ap.add_argument("--sweeps", type=int, default=CH30_SWEEPS,
                    help="--part chapter30: sweeps of each chain (keys '...~N' unless chapter 30's 500)")
    ap.add_argument("--protocols", nargs="+", choices=CH30_PROTOCOLS, default=list(CH30_PROTOCOLS),
                    help="--part chapter30: only these protocols")
    ap.add_argument("--models", nargs="+", choices=CH30_MODELS, default=list(CH30_MODELS),
                    help="--part chapter30: only these models")
    ap.add_argument("--table", action="store_true", help="only print the tables of the stored records")
    args = ap.parse_args(argv)
    parts = list(OUTS) if args.part == "all" else [args.part]
    if args.out is not None and len(parts) > 1:
        ap.error("--out needs a single --part")
    for part in parts:
        out = args.out or Path(__file__).with_name(OUTS[part])
        results = json.loads(out.read_text()) if out.exists() else {}
        if args.redo:
            results = {k: v for k, v in results.items() if k.rsplit("/", 1)[-1] not in args.redo}
            _save(results, out, merge=False)
        {"planted": run_planted, "networks": run_networks, "chapter30": run_chapter30,
         "holds": run_holds}[part](results, out, args)


def run_planted(results, out, args):
    """The planted partition from the four starts of ``STARTS``, and toy90."""
    if args.table:
        return table(results, args.folds)
    args.out = out
    A, blocks = planted_network()
    results["network"] = dict(nodes=int(A.shape[0]), edges=int(A.nnz // 2), groups=int(blocks.max() + 1),
                              K_chosen_full=int(choose_rank(A, symmetric=True)[0]))
    folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
    for f in args.folds:
        X, test, mask = hold_out(A, folds[f], symmetric=True)
        _baselines_once(results, f"{f}/SVD", X, test, mask, args.out)
        for model, T in MODELS:
            for start, opts in STARTS.items():
                key = f"{f}/{model}/{start}"
                if key in results:
                    continue
                t0 = time.perf_counter()
                r = fit(X, model, T=T, test=test, mask=mask, symmetric=True, n_iter=N_ITER, n_avg=N_AVG,
                        seed=0, **_init(model, opts))
                results[key] = _record(r, t0)
                _save(results, args.out)
                print(f"fold {f} {model:5s} {start:9s} AUC-PR {r.tdauc_pr:.3f}  K_start {r.settings['K_start']}"
                      f"  K {r.K_mean:.1f}", flush=True)
    toy = load("toy90").X
    for f in TOY_FOLDS:
        X, test = split(toy, cv_fold(toy.shape, f))
        for model, T in TOY_MODELS:
            for start in ("paper", "data"):
                key = f"toy90/{f}/{model}/{start}"
                if key in results:
                    continue
                t0 = time.perf_counter()
                r = fit(X, model, T=T, test=test, n_iter=600, n_avg=100, seed=f, **_init(model, STARTS[start]))
                results[key] = _record(r, t0)
                _save(results, args.out)
                print(f"toy90 fold {f} {model:5s} {start:6s} TDLL {r.tdll:.4f}  K_start {r.settings['K_start']}"
                      f"  K {r.K_mean:.1f}", flush=True)
    table(results, args.folds)


def table(results, folds):
    print(f"\nheld-out AUC-PR, folds {folds} (mean [min, max]); network {results['network']}")
    rows = [("SVD (svd-auto)", [results[f"{f}/SVD"]["svd-auto"]["tdauc_pr"] for f in folds])]
    rows += [("SVD (svd-k16)", [results[f"{f}/SVD"]["svd-k16"]["tdauc_pr"] for f in folds])]
    for model, T in MODELS:
        name = model + (f"-{T}" if T else "")
        for start in STARTS:
            vals = [results[f"{f}/{model}/{start}"]["tdauc_pr"] for f in folds if f"{f}/{model}/{start}" in results]
            rows.append((f"{name} {start}", vals))
    for name, vals in rows:
        if vals:
            print(f"{name:24s} {np.mean(vals):.3f} [{np.min(vals):.3f}, {np.max(vals):.3f}]  "
                  + " ".join(f"{v:.3f}" for v in vals))
    print(f"\ntoy90, folds {list(TOY_FOLDS)}: held-out TDLL, AUC-PR and K (means)")
    for model, T in TOY_MODELS:
        for start in ("paper", "data"):
            recs = [results[k] for k in (f"toy90/{f}/{model}/{start}" for f in TOY_FOLDS) if k in results]
            if recs:
                name = model + (f"-{T}" if T else "")
                print(f"{name + ' ' + start:24s} TDLL {np.mean([r['tdll'] for r in recs]):.4f}  AUC-PR "
                      f"{np.mean([r['tdauc_pr'] for r in recs]):.3f}  K {np.mean([r['K_mean'] for r in recs]):.1f}"
                      f"  (from {np.mean([r['K_start'] for r in recs]):.1f})")


# ----------------------------------------------------------------------------------------------
# --part networks: community networks with known groups, default / paper / truth starts
# ----------------------------------------------------------------------------------------------

def _labels(G, key):
    """Group labels 0.. of G's nodes in sorted order (LFR: the community, a set of nodes, named by its
    smallest node)."""
    vals = [G.nodes[v][key] for v in sorted(G)]
    if isinstance(vals[0], (set, frozenset)):
        names = {}
        vals = [names.setdefault(min(c), len(names)) for c in vals]
    return np.asarray(vals, dtype=np.int64)


#: name -> (networkx generator, its node attribute of the groups); all seeded
NETWORKS = {
    "planted": (lambda: nx.planted_partition_graph(12, 10, 0.7, 0.03, seed=1), "block"),
    "unequal": (lambda: nx.random_partition_graph([40, 25, 15, 10, 10, 8, 6, 6], 0.5, 0.02, seed=2), "block"),
    "sparse": (lambda: nx.planted_partition_graph(8, 20, 0.25, 0.01, seed=3), "block"),
    "lfr-docs": (lambda: nx.LFR_benchmark_graph(250, 3, 1.5, 0.1, average_degree=5, min_community=20, seed=10),
                 "community"),
    "lfr": (lambda: nx.LFR_benchmark_graph(250, 2.5, 1.5, 0.15, average_degree=10, min_community=20,
                                           max_community=50, max_degree=50, seed=3), "community"),
}
NET_STARTS = ("default", "truth", "paper")


def community_network(name):
    """(A, labels): the binary symmetric adjacency matrix (no self-loops) with the nodes shuffled
    (``default_rng(0).permutation``) and the true group of each row."""
    make, key = NETWORKS[name]
    G = make()
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    nodes = sorted(G)                   # 0..n-1 (the planted partition: the matrix of planted_network)
    labels = _labels(G, key)
    perm = np.random.default_rng(0).permutation(len(nodes))
    A = nx.to_scipy_sparse_array(G, nodelist=[nodes[p] for p in perm], format="csr")
    return sp.csr_matrix((sp.csr_matrix(A) > 0).astype(np.int8)), labels[perm]


def _start_options(model, start, labels):
    if start == "default":
        return {}
    if start == "paper":
        return dict(init=INITS[model][0])
    return dict(init=labels)


def _network_fits(results, out, name, A, fold_ids, tag, options, baselines=False):
    """The three samplers (``MODELS``) on the given pair folds of one network, held-out pairs missing,
    ``N_ITER`` sweeps, seed 0, with ``options(model)`` (the start, a hold), each written as
    "name/fold/model/tag" as it finishes and skipped when already there; ``baselines``: the fold's
    SVDs first ("name/fold/SVD")."""
    folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
    for f in fold_ids:
        X, test, mask = hold_out(A, folds[f], symmetric=True)
        if baselines:
            _baselines_once(results, f"{name}/{f}/SVD", X, test, mask, out)
        for model, T in MODELS:
            key = f"{name}/{f}/{model}/{tag}"
            if key in results:
                continue
            t0 = time.perf_counter()
            r = fit(X, model, T=T, test=test, mask=mask, symmetric=True, n_iter=N_ITER, n_avg=N_AVG, seed=0,
                    **options(model))
            results[key] = dict(_record(r, t0), init=r.settings["init"])
            _save(results, out)
            print(f"{name:8s} fold {f} {model:5s} {tag:16s} AUC-PR {r.tdauc_pr:.3f}  K_start "
                  f"{r.settings['K_start']}  K {r.K_mean:.1f}  {time.perf_counter() - t0:.1f} s", flush=True)


def run_networks(results, out, args):
    names = args.networks or list(NETWORKS)
    if not args.table:
        nets = {name: community_network(name) for name in names}
        for name, (A, labels) in nets.items():
            deg = np.asarray(A.sum(axis=1)).ravel()
            results[f"{name}/info"] = dict(nodes=int(A.shape[0]), edges=int(A.nnz // 2),
                                           group_sizes=np.bincount(labels).tolist(),
                                           degree_min_mean_max=[int(deg.min()), float(deg.mean()), int(deg.max())],
                                           K_chosen_full=int(choose_rank(A, symmetric=True)[0]))
            _save(results, out)
        # the cheap starts first on every network, the paper's (slow where it turns to dust) last
        for start in [st for st in NET_STARTS if args.starts is None or st in args.starts]:
            for name, (A, labels) in nets.items():
                _network_fits(results, out, name, A, args.folds, start,
                              lambda model: _start_options(model, start, labels), baselines=True)
    network_table(results, names, args.folds)


def _span(vals, d=3):
    return f"{np.mean(vals):.{d}f} [{np.min(vals):.{d}f}, {np.max(vals):.{d}f}]" if len(vals) else "-"


def network_table(results, names, folds):
    """Held-out AUC-PR, mean [min, max] over the folds, per network, model and start, and the
    issue's two checks on the default (the means): >= the best SVD, and >= truth - 0.03."""
    print(f"\nheld-out AUC-PR, folds {list(folds)}: mean [min, max]; SVD: the better of svd-auto, svd-k16 per fold")
    print(f"{'network':9s} {'model':9s} " + " ".join(f"{st:>21s}" for st in NET_STARTS) + f" {'SVD':>21s}  "
          f"K_start (default)  default >= SVD, >= truth - 0.03")
    for name in names:
        svd = [max(results[f"{name}/{f}/SVD"][b]["tdauc_pr"] for b in ("svd-auto", "svd-k16"))
               for f in folds if f"{name}/{f}/SVD" in results]
        for model, T in MODELS:
            label = model + (f"-{T}" if T else "")
            vals = {st: [results[k]["tdauc_pr"] for k in (f"{name}/{f}/{model}/{st}" for f in folds) if k in results]
                    for st in NET_STARTS}
            ks = [results[k]["K_start"] for k in (f"{name}/{f}/{model}/default" for f in folds) if k in results]
            ok = ""
            if vals["default"] and vals["truth"] and svd:
                d = np.mean(vals["default"])
                ok = f"{'yes' if d >= np.mean(svd) else 'NO':>5s}  {'yes' if d >= np.mean(vals['truth']) - 0.03 else 'NO':>5s}"
            print(f"{name:9s} {label:9s} " + " ".join(f"{_span(vals[st]):>21s}" for st in NET_STARTS)
                  + f" {_span(svd):>21s}  {','.join(map(str, ks)):8s} {ok}")


# ----------------------------------------------------------------------------------------------
# --part chapter30: chapter 30's networks and protocol, default start against the paper's
# ----------------------------------------------------------------------------------------------

CH30_SEED, CH30_SWEEPS = START_SEED, START_SWEEPS
CH30_PROTOCOLS = ("missing", "zeros")
CH30_MODELS = {"IDEPM": dict(split_merge=20), "DEPM": dict(T=32, split_merge=20), "EPM": dict(T=32)}


def chapter30_networks():
    """Chapter 30's three networks: name -> (binary matrix, undirected?)."""
    def binary(M):
        return sp.csr_matrix((sp.csr_matrix(M) > 0).astype(np.int8))
    davis = nx.davis_southern_women_graph()
    return {"Davis": (binary(nx.bipartite.biadjacency_matrix(davis, davis.graph["top"], davis.graph["bottom"])),
                      False),
            "karate": (binary(nx.to_scipy_sparse_array(nx.karate_club_graph())), True),
            "Les Mis": (binary(nx.to_scipy_sparse_array(nx.les_miserables_graph())), True)}


def run_chapter30(results, out, args):
    nets = chapter30_networks()
    names = [n for n in nets if args.networks is None or n in args.networks]
    if not args.table:
        for name in names:
            M, undirected = nets[name]
            for f, fold in enumerate(pair_folds(M.shape, 10, CH30_SEED, symmetric=undirected)[:5]):
                if f not in args.folds:
                    continue
                X, test, miss = hold_out(M, fold, symmetric=undirected)
                for protocol in args.protocols:
                    mask = miss if protocol == "missing" else None
                    key = f"{name}/{protocol}/{f}/SVD"
                    if key not in results:
                        b = score_baselines(X, test, mask=mask, seed=CH30_SEED, k="auto", symmetric=undirected)
                        results[key] = {m: {k: float(v) for k, v in d.items()} for m, d in b.items()}
                        _save(results, out)
                    for model, kw in [(m, k) for m, k in CH30_MODELS.items() if m in args.models]:
                        for start in [st for st in ("default", "paper") if args.starts is None or st in args.starts]:
                            for seed in [CH30_SEED, *args.chain_seeds]:
                                key = f"{name}/{protocol}/{f}/{model}/" + start_tag(start, seed, args.sweeps)
                                if key in results:
                                    continue
                                t0 = time.perf_counter()
                                r = fit(X, model, symmetric=undirected, test=test, mask=mask, n_iter=args.sweeps,
                                        n_avg=args.sweeps // 2,
                                        seed=seed, **kw, **_start_options(model, start, None))
                                results[key] = dict(_record(r, t0), init=r.settings["init"])
                                _save(results, out)
    chapter30_table(results, names, args.folds, sweeps=args.sweeps)
    if args.chain_seeds:
        chapter30_table(results, names, args.folds, seeds=[CH30_SEED, *args.chain_seeds], sweeps=args.sweeps)


def chapter30_table(results, names, folds, seeds=(CH30_SEED,), sweeps=CH30_SWEEPS):
    """Default start minus the paper's, per network, protocol, model and metric: the mean of the
    paired differences over the folds, its SE, and the two means (``seeds``: each fold's scores
    averaged over the chains of these seeds first; ``results.start_differences``)."""
    print(f"\nchapter 30's protocol, {sweeps} sweeps, folds {list(folds)}, chains of seeds {list(seeds)} (averaged per "
          f"fold): default - paper (mean ± SE of the paired differences, '-' below 0, '!' below -2 SE; means default / "
          f"paper)")
    diffs = start_differences({k: v for k, v in results.items() if int(k.split("/")[2]) in folds}, seeds, sweeps)
    shown = [(key, cell) for key, cell in diffs.items() if key[0] in names]
    for (name, protocol, model), cell in sorted(shown, key=lambda kc: (names.index(kc[0][0]), kc[0][1:])):
        parts = []
        for m, (d, se, _n, a, b) in cell.items():
            flag = "!" if d < -2 * se else ("-" if d < 0 else " ")
            parts.append(f"{m} {d:+.3f}±{se:.3f}{flag}({a:.3f} / {b:.3f})")
        print(f"{name:8s} {protocol:7s} {model:5s} " + "  ".join(parts) + f"  folds {cell['tdll'][2]}")


# ----------------------------------------------------------------------------------------------
# --part holds: burn-in hold schedules from the paper's start, across networks and models
# ----------------------------------------------------------------------------------------------

#: (sweeps, cap): how long and how low the shape parameters are held; (300, 0.1) is chapter 29b's
HOLDS = ((50, 0.1), (100, 0.1), (300, 0.1), (600, 0.1), (300, 0.03), (300, 0.3), (300, 1.0))
#: the data's start is also run with this hold (key "data+hold300x0.1"); unheld, it is "default" in
#: starts_networks.json, and toy90's "data" here
DATA_HOLD = (300, 0.1)


def hold_tag(hold):
    """The start's name in the records: 'hold<sweeps>x<cap>', e.g. 'hold300x0.1'."""
    return f"hold{hold[0]}x{hold[1]:g}"


def run_holds(results, out, args):
    names = args.networks or [*NETWORKS, "toy90"]
    unknown = [n for n in names if n not in NETWORKS and n != "toy90"]
    if unknown:
        raise SystemExit(f"--part holds: unknown network(s) {unknown}; choose from {[*NETWORKS, 'toy90']}")
    if not args.table:
        runs = [("paper", hold) for hold in HOLDS] + [("data", DATA_HOLD)]
        for init, hold in runs:                   # every network at one schedule before the next
            tag = hold_tag(hold) if init == "paper" else "data+" + hold_tag(hold)
            for name in names:
                if name == "toy90":
                    _toy90_holds(results, out, hold, init)
                    continue
                A, _labels_ = community_network(name)
                _network_fits(results, out, name, A, args.folds, tag,
                              lambda model: dict(init=INITS[model][0] if init == "paper" else "data", hold=hold))
    holds_table(results, names, args.folds)


def _toy90_holds(results, out, hold, init="paper"):
    """toy90's chains are 600 sweeps with the last 100 averaged: holds of more than 500 sweeps are skipped.
    Each hold beside the unheld chain of the same start ("paper", "data")."""
    if hold[0] > 500:
        return
    toy = load("toy90").X
    pre = "" if init == "paper" else "data+"
    for f in TOY_FOLDS:
        X, test = split(toy, cv_fold(toy.shape, f))
        for model, T in TOY_MODELS:
            for start, kw in ((init, {}), (pre + hold_tag(hold), dict(hold=hold))):
                key = f"toy90/{f}/{model}/{start}"
                if key in results:
                    continue
                t0 = time.perf_counter()
                r = fit(X, model, T=T, test=test, n_iter=600, n_avg=100, seed=f,
                        init=INITS[model][0] if init == "paper" else "data", **kw)
                results[key] = dict(_record(r, t0), init=r.settings["init"])
                _save(results, out)
                print(f"toy90    fold {f} {model:5s} {start:12s} TDLL {r.tdll:.4f}  K {r.K_mean:.1f}", flush=True)


def holds_table(results, names, folds):
    """Per network and model, the mean held-out AUC-PR (toy90: TDLL) over the folds of each hold
    schedule, beside the paper's start without a hold (networks: from ``starts_networks.json``)."""
    nets = Path(__file__).with_name(OUTS["networks"])
    unheld = json.loads(nets.read_text()) if nets.exists() else {}
    cols = ["paper", *map(hold_tag, HOLDS), "data", "data+" + hold_tag(DATA_HOLD)]
    print("\nheld-out AUC-PR (toy90: TDLL), mean over the folds; the paper's start with each hold (sweeps x cap), and the data's start without and with a hold")
    print(f"{'network':9s} {'model':9s} " + " ".join(f"{c:>12s}" for c in cols))
    for name in names:
        metric, fs = ("tdll", TOY_FOLDS) if name == "toy90" else ("tdauc_pr", folds)
        for model, T in (TOY_MODELS if name == "toy90" else MODELS):
            cells = []
            for c in cols:
                src = unheld if (c in ("paper", "data") and name != "toy90") else results
                c = "default" if (c == "data" and name != "toy90") else c
                vals = [src[k][metric] for k in (f"{name}/{f}/{model}/{c}" for f in fs) if k in src]
                cells.append(f"{np.mean(vals):12.3f}" if len(vals) == len(fs) else f"{'-':>12s}")
            print(f"{name:9s} {model + (f'-{T}' if T else ''):9s} " + " ".join(cells))


if __name__ == "__main__":
    main()
