#!/usr/bin/env python
"""CPU seconds until chains from opposite starts agree: split-R-hat <= 1.01 on K and on the TDLL.

Usage::

    python benchmarks/bench_convergence.py [--datasets enron09 movielens100k movielens1m]
        [--models IDEPM DEPM] [--T 128] [--split-merge 0 20] [--few 1] [--many 100]
        [--segment 100] [--cap-seconds 600] [--rhat 1.01] [--test-fraction 0.01] [--json PATH]

For each data set, model and number of split-merge proposals per sweep, four chains run
(``epm_lib.chains.run_until_agree``): two from ``--few`` atoms and two from ``--many`` (the DEPM from
min(--many, T)), each with its own seed, on the matrix with a random ``--test-fraction`` of its
entries held out (fold 0 of ``epm_lib.experiments.cv_fold`` with 1/fraction folds). They run in
segments of ``--segment`` sweeps (continued with ``fit(..., resume=...)``, so a segmented chain
is the uninterrupted one); after each segment the rank-normalised split-R-hat of K and of the
test log likelihood is computed by ArviZ on the second half of the chains. The run stops when
both are <= ``--rhat`` or when a chain has used ``--cap-seconds`` CPU seconds. The table gives,
per chain (one core each), the sampler seconds and sweeps used, R-hat and bulk ESS at the end,
and the mean K of each start group over the second half. Chains run one after the other on one
core (``NUMBA_NUM_THREADS=1``): seconds are the samplers' own (``FitResult.seconds``).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402

from epm_lib import chains, datasets  # noqa: E402
from epm_lib.experiments import cv_fold, split  # noqa: E402


def converge(X, test, model, T, sm, starts, segment, cap, target):
    """Run the chains segment by segment until R-hat(K), R-hat(tdll) <= target or the cap
    (``epm_lib.chains.run_until_agree``)."""
    kw = dict(T=T, test=test)
    if model in ("IDEPM", "DEPM"):
        kw["split_merge"] = sm
    cs, s = chains.run_until_agree(X, model, starts=starts, seeds=list(range(len(starts))), segment=segment,
                                   cap_seconds=cap, rhat=target, var_names=("K", "tdll"), **kw)
    runs = cs.results
    half = runs[0].K.shape[0] // 2
    return dict(model=model if T is None else f"{model}-{T}", split_merge=sm, converged=s["converged"],
                sweeps=s["sweeps"], cpu_per_chain=s["seconds"],
                rhat_K=s["K"]["rhat"], rhat_tdll=s["tdll"]["rhat"], ess_K=s["K"]["ess_bulk"],
                ess_tdll=s["tdll"]["ess_bulk"],
                K_few=float(np.mean([r.K[half:].mean() for r, k in zip(runs, starts) if k == starts[0]])),
                K_many=float(np.mean([r.K[half:].mean() for r, k in zip(runs, starts) if k != starts[0]])),
                acceptance=runs[0].acceptance)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["enron09", "movielens100k"])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--models", nargs="+", default=["IDEPM", "DEPM"])
    p.add_argument("--T", type=int, default=128, help="truncation of the DEPM")
    p.add_argument("--split-merge", type=int, nargs="+", default=[0, 20],
                   help="split-merge proposals per sweep (0: the paper's plain Gibbs sampler)")
    p.add_argument("--few", type=int, default=1)
    p.add_argument("--many", type=int, default=100)
    p.add_argument("--segment", type=int, default=100, help="sweeps between R-hat checks")
    p.add_argument("--cap-seconds", type=float, default=600.0, help="CPU seconds per chain at most")
    p.add_argument("--rhat", type=float, default=1.01)
    p.add_argument("--test-fraction", type=float, default=0.01)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    out = []
    print("| data | model | split-merge | agree | sweeps | CPU s per chain | R-hat K | R-hat TDLL | "
          "ESS K | K (few) | K (many) | split / merge acceptance |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in a.datasets:
        ds = datasets.load(name, data_dir=a.data_dir) if name != "toy90" else datasets.load(name)
        fold = cv_fold(ds.shape, 0, int(round(1 / a.test_fraction)), 0)
        X, test = split(ds.X, fold)
        for model in a.models:
            T = a.T if model != "IDEPM" else None
            many = a.many if T is None else min(a.many, T)
            for sm in (a.split_merge if model in ("IDEPM", "DEPM") else [0]):
                r = converge(X, test, model, T, sm, [a.few, a.few, many, many], a.segment, a.cap_seconds, a.rhat)
                r["dataset"] = name
                out.append(r)
                acc = r["acceptance"]
                print(f"| {name} | {r['model']} | {sm} | {'yes' if r['converged'] else 'no (cap)'} | {r['sweeps']} | "
                      f"{r['cpu_per_chain']:.0f} | {r['rhat_K']:.3f} | {r['rhat_tdll']:.3f} | {r['ess_K']:.0f} | "
                      f"{r['K_few']:.1f} | {r['K_many']:.1f} | {acc['split']:.2g} / {acc['merge']:.2g} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
