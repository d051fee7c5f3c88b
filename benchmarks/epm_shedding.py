#!/usr/bin/env python
"""How fast the EPM-128 sheds its surplus atoms on MovieLens100K, by update and by the start's scale.

Usage::

    EPM_DATA_DIR=/path/to/data python benchmarks/epm_shedding.py [--n-iter 1000] [--seed 0]
        [--fold 0] [--thin 5] [--chains paper-updates paper scaled data]
        [--out results/k_traces/epm_shedding_movielens100k.json]

MovieLens100K (``epm_lib.datasets.load("movielens100k")``, verified against its fingerprint), fold 0
of the paper's ten held out (``cv_fold``, ``split``: Sec. 5's protocol, the test entries observed
zeros), ``fit(X, "EPM", T=128, n_iter, n_avg=100, seed, test)`` from four starts, one after the other on
one core (``NUMBA_NUM_THREADS=1``):

* ``paper-updates``: the paper's start (all 128 atoms equal, ``init="paper"``) and the paper's a1, a2
  updates as printed (``a_update="paper"``, Eq. (25) without lambda_k);
* ``paper``: the paper's start, the library's updates (a1 with U integrated out, gamma0 with lambda:
  partially collapsed, ``epm_lib.models.gamma_epm``);
* ``scaled``: the same 128 equal atoms, U and V, with lambda scaled so that the model expects as many
  counts as X has ones (``init="scaled"``; the paper's start expects I J, 32 times the ones here);
* ``data``: ``fit``'s default, the data's start (``init="data"``).

Issue 20 (item 5) reported that an independent sampler with partially collapsed updates takes the
EPM-128 from all 128 atoms to about 30 by sweep 1000 while this library's was at 73; this benchmark
separates the two things that differ: the updates and the start's scale.

Per chain the JSON file holds traces thinned to every ``--thin``-th sweep of K (atoms with customers),
a1, a2, gamma0 and the TDLL of each sweep's sample; K at sweeps 50, 100, 500 and the last; the
posterior-mean TDLL over the last 100 sweeps; the mean K there; wall seconds. Each finished chain is
written at once (atomically); a rerun with the same settings skips the chains already there.
Read by ``chapters/29_where_a_chain_starts``. Cost: about 4 CPU minutes per chain of 1000 sweeps.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib.experiments import DataSpec, cv_fold, split  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from k_traces import git_commit, rounded, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "k_traces" / "epm_shedding_movielens100k.json"
#: chain name -> fit options
CHAINS = {"paper-updates": dict(init="paper", a_update="paper"), "paper": dict(init="paper"),
          "scaled": dict(init="scaled"), "data": dict(init="data")}
T, N_AVG = 128, 100


def run_chain(X, test, name, n_iter, seed, thin):
    res = epm_lib.fit(X, "EPM", T=T, n_iter=n_iter, n_avg=N_AVG, seed=seed, test=test, **CHAINS[name])
    if res.tdll_trace.shape != (n_iter,) or not np.all(np.isfinite(res.tdll_trace)):
        raise RuntimeError(f"{name}: incomplete or non-finite TDLL trace")
    keep = np.arange(thin - 1, n_iter, thin)
    return dict(options=CHAINS[name], K_start=int(res.settings["K_start"]),
                sweep=[int(s) + 1 for s in keep], K=[int(k) for k in res.K[keep]],
                tdll=[rounded(v, 5) for v in res.tdll_trace[keep]],
                **{n: [rounded(v, 5) for v in res.hyper[n][keep]] for n in ("a1", "a2", "gamma0")},
                K_at={str(s): int(res.K[s - 1]) for s in (50, 100, 500, n_iter) if s <= n_iter},
                K_mean=rounded(res.K_mean, 2), tdll_final=rounded(res.tdll, 5),
                seconds=rounded(res.seconds[-1], 1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-iter", type=int, default=1000, help="sweeps per chain")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fold", type=int, default=0, help="fold of the ten held out (Sec. 5)")
    p.add_argument("--thin", type=int, default=5, help="keep every thin-th sweep in the traces")
    p.add_argument("--chains", nargs="+", choices=list(CHAINS), default=list(CHAINS))
    p.add_argument("--data-dir", default=None, help="MovieLens directory (default $EPM_DATA_DIR)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="JSON file (written after each chain)")
    a = p.parse_args(argv)
    if a.thin < 1 or a.n_iter < max(2 * N_AVG, a.thin) or not 0 <= a.fold < 10:
        p.error(f"need thin >= 1, n_iter >= {2 * N_AVG} (the last {N_AVG} sweeps are averaged) and a fold 0-9")
    spec = DataSpec("movielens100k", data_dir=a.data_dir)
    ds = spec.load()                                  # verified against its recorded fingerprint
    X, test = split(ds.X, cv_fold(ds.shape, a.fold))
    settings = dict(dataset="movielens100k", fingerprint=spec.fingerprint(), shape=list(ds.shape),
                    fold=a.fold, train_nnz=int(X.nnz), model="EPM", T=T, n_iter=a.n_iter, n_avg=N_AVG,
                    seed=a.seed, thin=a.thin)
    out = Path(a.out)
    chains = {}
    if out.exists():                                  # resume: keep the chains of the same settings
        old = json.loads(out.read_text())
        if old.get("settings") == settings:
            chains = old["chains"]
    for name in a.chains:
        if name in chains:
            continue
        chains[name] = run_chain(X, test, name, a.n_iter, a.seed, a.thin)
        machine = dict(python=platform.python_version(), numpy=np.__version__, epm_lib=epm_lib.__version__,
                       commit=git_commit(), numba_threads=os.environ["NUMBA_NUM_THREADS"])
        write_json(out, dict(settings=settings, machine=machine, chains=chains))
        c = chains[name]
        print(f"{name:14s} K from {c['K_start']}: at sweeps {c['K_at']}, mean {c['K_mean']:.1f}; "
              f"TDLL {c['tdll_final']:.5f}; {c['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
