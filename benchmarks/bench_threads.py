#!/usr/bin/env python
"""One fit on one and on two threads: the same chain, and what the second core buys.

Usage::

    python benchmarks/bench_threads.py [--data-dir DIR] [--dataset movielens100k] [--model DEPM]
                                       [--T 128] [--n-iter 600] [--n-avg 100] [--threads 1 2]
                                       [--json benchmarks/threads_movielens100k.json]

The fit is the paper's protocol on fold 0 of the data set (``epm_lib.experiments``: ten folds of
all entries, the fold's entries held out as zeros of the training matrix and scored after every
sweep), run once per thread count, each in a fresh process started with ``NUMBA_NUM_THREADS``
set (numba reads it when it starts). Only the held-out scoring runs on several threads
(``epm_lib.models.common.link_rates`` and ``test_loglik_sum``: no random draws, the same numbers
at any thread count); the Gibbs sweep itself is one stream of random draws and stays serial.

Printed and written (``--json``): per thread count the wall-clock and CPU seconds of the whole fit
(compilation excluded: every kernel is compiled by a two-sweep fit first), the seconds of the
data's start (``settings["init_seconds"]``) and of the sweeps alone (``FitResult.seconds``), the
held-out scoring's share (the rest), and a sha256 of the
chain's traces, its kept samples and its predictions -- equal for every thread count, or the
script exits 1.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

_CHILD = r"""
import hashlib, json, sys, time
import numpy as np
import epm_lib
from epm_lib import datasets
from epm_lib.experiments.folds import cv_fold, split
from epm_lib.models import common

name, model, T, n_iter, n_avg, data_dir = sys.argv[1:7]
T, n_iter, n_avg = (None if T == "none" else int(T)), int(n_iter), int(n_avg)
d = datasets.load(name, data_dir=None if data_dir == "-" else data_dir)
X_train, test = split(d.X, cv_fold(d.X.shape, 0))
kw = dict(model=model, T=T, test=test, seed=0)
epm_lib.fit(X_train, n_iter=2, n_avg=1, **kw)              # compile every kernel first
w, c = time.perf_counter(), time.process_time()
r = epm_lib.fit(X_train, n_iter=n_iter, n_avg=n_avg, **kw)
wall, cpu = time.perf_counter() - w, time.process_time() - c
h = hashlib.sha256()
for a in [r.K, r.M, r.tdll_trace, r.test_prob] + [np.asarray(v) for v in r.hyper.values()] + \
         [a for s in r.samples for a in s]:
    a = np.ascontiguousarray(a)
    h.update(str((a.dtype.str, a.shape)).encode()); h.update(a.tobytes())
print(json.dumps(dict(threads=common.parallel_threads(10 ** 12), wall=wall, cpu=cpu,
                      sweeps=float(r.seconds[-1]), start=float(r.settings["init_seconds"]),
                      K=float(r.K[-n_avg:].mean()), tdll=r.tdll, sha256=h.hexdigest())))
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None, help="folder with the data (default $EPM_DATA_DIR)")
    p.add_argument("--dataset", default="movielens100k")
    p.add_argument("--model", default="DEPM", choices=["EPM", "CEPM", "DEPM", "IDEPM"])
    p.add_argument("--T", type=int, default=128)
    p.add_argument("--n-iter", type=int, default=600)
    p.add_argument("--n-avg", type=int, default=100)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    a = p.parse_args(argv)
    if any(t < 1 for t in a.threads):
        p.error("--threads: thread counts must be at least 1")
    if a.n_iter < 1 or not 1 <= a.n_avg <= a.n_iter:
        p.error("--n-iter must be positive and --n-avg between 1 and --n-iter")
    rows = []
    for t in a.threads:
        env = dict(os.environ, NUMBA_NUM_THREADS=str(t))
        proc = subprocess.run([sys.executable, "-c", _CHILD, a.dataset, a.model,
                               "none" if a.model == "IDEPM" else str(a.T), str(a.n_iter), str(a.n_avg),
                               a.data_dir or "-"], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"the fit on {t} thread(s) failed:\n{proc.stderr[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["requested"] = t
        rows.append(r)
        print(f"{t} thread(s) (scoring on {r['threads']}): wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, "
              f"start {r['start']:.1f} s, sweeps {r['sweeps']:.1f} s, held-out scoring and the rest "
              f"{r['wall'] - r['sweeps'] - r['start']:.1f} s; "
              f"K {r['K']:.1f}, TDLL {r['tdll']:.5f}, chain {r['sha256'][:16]}", flush=True)
    same = len({r["sha256"] for r in rows}) == 1
    print("the same chain and predictions on every thread count" if same else "CHAINS DIFFER")
    if a.json:
        import numba
        import numpy as np

        import epm_lib
        out = dict(dataset=a.dataset, model=a.model, T=None if a.model == "IDEPM" else a.T, n_iter=a.n_iter,
                   n_avg=a.n_avg, fold=0, runs=rows, identical=same, cpu_count=os.cpu_count(),
                   date=datetime.date.today().isoformat(),
                   versions=dict(python=sys.version.split()[0], numpy=np.__version__, numba=numba.__version__,
                                 epm_lib=epm_lib.__version__),
                   load_average=os.getloadavg()[0])
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print("wrote", a.json)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
