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
stopped. Usage::

    python benchmarks/bench_starts.py [--folds 0 1 2 3 4] [--out benchmarks/starts_planted.json]
"""
from __future__ import annotations

import argparse
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
    G = nx.planted_partition_graph(12, 10, 0.7, 0.03, seed=1)
    perm = np.random.default_rng(0).permutation(G.number_of_nodes())
    A = nx.to_scipy_sparse_array(G, nodelist=[int(v) for v in perm], format="csr")
    return sp.csr_matrix(A).astype(np.int8), np.array([G.nodes[int(v)]["block"] for v in perm])


def _save(results, out):
    atomic_write_text(out, json.dumps(results, indent=1, sort_keys=True))


def _record(r, t0):
    return dict(tdauc_pr=float(r.tdauc_pr), tdauc_roc=float(r.tdauc_roc), tdll=float(r.tdll),
                K_start=r.settings["K_start"], K_mean=r.K_mean, init_seconds=r.settings["init_seconds"],
                seconds=time.perf_counter() - t0, hyper_last={n: float(v[-1]) for n, v in r.hyper.items()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folds", type=int, nargs="+", default=list(range(5)))
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("starts_planted.json"))
    args = ap.parse_args(argv)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    A, blocks = planted_network()
    results["network"] = dict(nodes=int(A.shape[0]), edges=int(A.nnz // 2), groups=int(blocks.max() + 1),
                              K_chosen_full=int(choose_rank(A, symmetric=True)[0]))
    folds = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)
    for f in args.folds:
        X, test, mask = hold_out(A, folds[f], symmetric=True)
        key = f"{f}/SVD"
        if key not in results:
            base = score_baselines(X, test, mask=mask, symmetric=True)
            results[key] = {name: {k: float(v) for k, v in d.items()} for name, d in base.items()}
            _save(results, args.out)
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


if __name__ == "__main__":
    main()
