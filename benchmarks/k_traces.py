#!/usr/bin/env python
"""K traces on MovieLens100K: chains from few and from many atoms, with and without split-merge moves.

Usage::

    EPM_DATA_DIR=/path/to/data python benchmarks/k_traces.py [--n-iter 1000] [--split-merge 20]
        [--seed 0] [--fold 0] [--T 128] [--only IDEPM-1-0 ...] [--out results/k_traces/movielens100k.json]

MovieLens100K (``epm_lib.datasets.load("movielens100k")``, verified against its fingerprint) with
fold 0 of the paper's ten folds held out (``epm_lib.experiments.cv_fold`` and ``split``: the test
entries are observed zeros in training, Sec. 5). Eight chains, one after the other on one core
(``NUMBA_NUM_THREADS=1``), all with ``seed``:

* the IDEPM from ``K_init`` = 1 and 100 atoms, with ``split_merge`` = 0 (the paper's collapsed
  Gibbs sampler) and ``--split-merge`` proposals per sweep (``epm_lib.models.moves``: Dahl's
  sequential allocation launching five restricted Gibbs scans, single-customer units);
* the DEPM truncated at ``--T`` from ``K_init`` = 4 and from all T atoms, the same two ways.

Per chain the JSON file holds the settings, the trace of K (active atoms) and of the test-data
log likelihood of each sweep's sample, the split and merge proposals and acceptances (totals, and
the sweeps at which moves were accepted), the
sampler's wall seconds (``FitResult.seconds``) and the process CPU seconds of the whole fit, and
the final K mean and TDLL (posterior mean over the last ``--n-avg`` sweeps); the file also
records the data's fingerprint, shape and number of ones, and the fold. Floats are rounded.
Read by ``chapters/14c_idepm_movielens`` and ``chapters/13b_depm_moves`` (the chapters need only
this file, not MovieLens).

Cost (measured on a shared 2-core machine): about 0.8 CPU seconds for one sweep of all eight
chains, so the default 1000 sweeps take about 13 minutes of CPU and about 20 minutes of wall
time when the machine is busy. The
DEPM chains from 4 atoms were the slowest in the stored run (about 0.2 s a sweep, against 0.04 s
from 128 atoms): their empty atoms have lambda at the smallest normal double, and the m-step's
products phi_ik psi_jk lambda_k were subnormal numbers, which the CPU handles slowly. The m-step
now stores such products as 0 (``epm_lib.models.common._scale_row``; the draws are the same),
which makes those sweeps about 3 times faster.

Fails loudly: a data or checksum error, a chain that does not finish, or a trace with a
non-finite value stops the script with an exception and no file is written.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib.experiments import DataSpec, cv_fold, split  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "k_traces" / "movielens100k.json"


def chain_plan(T, split_merge):
    """The chains: (name, model, T, K_init, split_merge)."""
    plan = []
    for model, starts in (("IDEPM", (1, 100)), ("DEPM", (4, T))):
        for K0 in starts:
            for sm in (0, split_merge):
                name = f"{model}-{K0}-{sm}"
                plan.append((name, model, None if model == "IDEPM" else T, K0, sm))
    return plan


def rounded(x, digits):
    """A float rounded to ``digits`` decimals; refuses NaN and infinities."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite value {x}")
    return round(x, digits)


def sweeps_of(accepted):
    """The sweeps (1-based) at which moves were accepted, a sweep repeated once per accepted move."""
    return [int(t) + 1 for t in np.repeat(np.arange(accepted.size), accepted)]


def run_chain(X, test, model, T, K0, sm, n_iter, n_avg, seed):
    """One chain; returns its JSON record."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    res = epm_lib.fit(X, model, T=T, K_init=K0, split_merge=sm, n_iter=n_iter, n_avg=n_avg,
                      seed=seed, test=test)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if res.K.shape != (n_iter,) or not np.all(np.isfinite(res.tdll_trace)):
        raise RuntimeError(f"{model} K_init={K0} split_merge={sm}: incomplete or non-finite traces")
    totals = res.move_stats.sum(axis=0)
    acc = res.acceptance
    return dict(
        model=model, T=T, K_init=K0, split_merge=sm, seed=seed, n_iter=n_iter, n_avg=n_avg,
        K=[int(k) for k in res.K],
        tdll=[rounded(v, 5) for v in res.tdll_trace],
        splits_proposed=int(totals[0]), splits_accepted=int(totals[1]),
        split_sweeps=sweeps_of(res.move_stats[:, 1]), merge_sweeps=sweeps_of(res.move_stats[:, 3]),
        merges_proposed=int(totals[2]), merges_accepted=int(totals[3]),
        split_acceptance=None if math.isnan(acc["split"]) else rounded(acc["split"], 6),
        merge_acceptance=None if math.isnan(acc["merge"]) else rounded(acc["merge"], 6),
        sampler_seconds=rounded(res.seconds[-1], 1), wall_seconds=rounded(wall, 1),
        cpu_seconds=rounded(cpu, 1),
        K_mean=rounded(res.K_mean, 2), tdll_final=rounded(res.tdll, 5),
        tdauc_pr_final=rounded(res.tdauc_pr, 4),
        gamma0_final=rounded(res.hyper["gamma0"][-1], 4), M_final=int(res.M[-1]))


def write_json(path, obj, indent=None):
    """Write ``obj`` as JSON to ``path`` (folders created) atomically: a temporary file, then a
    rename, so an interrupted run never leaves a truncated file. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=indent, separators=None if indent else (",", ":")) + "\n")
    tmp.replace(path)
    return path


def git_commit():
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-iter", type=int, default=1000, help="sweeps per chain")
    p.add_argument("--n-avg", type=int, default=100, help="final sweeps averaged for K_mean and TDLL")
    p.add_argument("--split-merge", type=int, default=20, help="proposals per sweep of the moved chains")
    p.add_argument("--T", type=int, default=128, help="truncation level of the DEPM")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fold", type=int, default=0, help="fold of the ten held out (Sec. 5)")
    p.add_argument("--data-dir", default=None, help="MovieLens directory (default $EPM_DATA_DIR)")
    p.add_argument("--only", nargs="+", default=None,
                   help="run only these chains (names MODEL-K_init-split_merge, e.g. IDEPM-1-20)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="JSON file written at the end")
    a = p.parse_args(argv)
    if a.n_iter < 1 or not 1 <= a.n_avg <= a.n_iter or a.split_merge < 1 or a.T < 4:
        p.error("need n_iter >= 1, 1 <= n_avg <= n_iter, split_merge >= 1, T >= 4")

    spec = DataSpec("movielens100k", data_dir=a.data_dir)
    ds = spec.load()                                  # verified against its recorded fingerprint
    X, test = split(ds.X, cv_fold(ds.shape, a.fold))
    plan = chain_plan(a.T, a.split_merge)
    if a.only is not None:
        unknown = sorted(set(a.only) - {c[0] for c in plan})
        if unknown:
            p.error(f"unknown chain(s) {unknown}; known: {[c[0] for c in plan]}")
        plan = [c for c in plan if c[0] in a.only]
    print(f"movielens100k {ds.shape}, {ds.X.nnz} ones, fold {a.fold}: {X.nnz} training ones, "
          f"{test[0].size} test entries; {len(plan)} chains of {a.n_iter} sweeps", flush=True)

    started = time.perf_counter()
    chains = {}
    for name, model, T, K0, sm in plan:
        rec = run_chain(X, test, model, T, K0, sm, a.n_iter, a.n_avg, a.seed)
        chains[name] = rec
        print(f"{name:14s} K: first {rec['K'][0]}, last {rec['K'][-1]}, mean of last {a.n_avg} "
              f"{rec['K_mean']}; TDLL {rec['tdll_final']}; splits {rec['splits_accepted']}/"
              f"{rec['splits_proposed']}, merges {rec['merges_accepted']}/{rec['merges_proposed']}; "
              f"{rec['sampler_seconds'] / a.n_iter * 1e3:.1f} ms per sweep, "
              f"{rec['cpu_seconds']:.0f} CPU s", flush=True)
    out = dict(
        dataset="movielens100k", fingerprint=spec.fingerprint(), shape=list(ds.shape),
        nnz=int(ds.X.nnz), fold=a.fold, n_folds=10, train_nnz=int(X.nnz), n_test=int(test[0].size),
        n_iter=a.n_iter, n_avg=a.n_avg, seed=a.seed,
        total_seconds=rounded(time.perf_counter() - started, 0),
        machine=dict(python=platform.python_version(), numpy=np.__version__,
                     epm_lib=epm_lib.__version__, commit=git_commit(),
                     numba_threads=os.environ["NUMBA_NUM_THREADS"]),
        chains=chains)
    path = write_json(a.out, out)
    print(f"wrote {path} ({path.stat().st_size} bytes) after {out['total_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
