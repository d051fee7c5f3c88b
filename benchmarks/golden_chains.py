#!/usr/bin/env python
"""Golden chains: fingerprints of every sampler's draws, to check that a change to the kernels
leaves every chain bit-identical for a given seed.

Usage::

    python benchmarks/golden_chains.py --write /tmp/golden.json   # record the current code's chains
    python benchmarks/golden_chains.py /tmp/golden.json           # compare; exit 1 naming what differs
    python benchmarks/golden_chains.py /tmp/golden.json --only ml100k

Each run is an ``epm_lib.fit`` of about 40 sweeps with a fixed seed, on (a) a small synthetic
matrix and (b) MovieLens100K (``epm_lib.datasets``, from ``$EPM_DATA_DIR``; skipped with a
note when it cannot be loaded): the EPM, CEPM and DEPM at T = 8 and T = 64, the DEPM with its
split-merge moves, the IDEPM with and without split-merge moves and with the paper's m-step,
and the EPM, DEPM and IDEPM with their test entries masked (missing entries), all with a test
set; the truncated models from the paper's start and from the data's start. For each run the
sha256 of the raw bytes (with dtype and shape) of every trace (K, M, the hyperparameters,
tdll_trace, log_joint, move_stats), of the predictions (test_prob, tdll, tdauc_pr, tdauc_roc),
of every final state array (and the random streams' states) and of every kept sample is
recorded. Wall-clock times (``seconds``, ``init_seconds``) are left out.

The book's committed outputs depend on the exact draws, so a speed-up of a kernel must pass
this comparison: a summation order or a random draw that moves changes the hashes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import epm_lib
from epm_lib import datasets

N_ITER = 40
N_AVG = 10


def digest(x) -> str:
    """sha256 of an array's raw bytes (with its dtype and shape), or of a value's JSON/repr."""
    h = hashlib.sha256()
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        a = np.ascontiguousarray(x)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(x, float):
        h.update(np.float64(x).tobytes())
    elif isinstance(x, dict):
        h.update(json.dumps(x, sort_keys=True, default=repr).encode())
    else:
        h.update(repr(x).encode())
    return h.hexdigest()


def fingerprint(r) -> dict:
    """name -> sha256 of every draw-dependent part of a FitResult."""
    out = {"K": digest(r.K), "M": digest(r.M), "tdll_trace": digest(r.tdll_trace),
           "move_stats": digest(r.move_stats), "tdll": digest(float(r.tdll)),
           "tdauc_pr": digest(float(r.tdauc_pr)), "tdauc_roc": digest(float(r.tdauc_roc))}
    if r.test_prob is not None:
        out["test_prob"] = digest(r.test_prob)
    if r.log_joint is not None:
        out["log_joint"] = digest(r.log_joint)
    for name, v in r.hyper.items():
        out[f"hyper.{name}"] = digest(v)
    for name, v in sorted(r.state.items()):
        out[f"state.{name}"] = digest(v if not isinstance(v, list) else np.asarray(v))
    for s, sample in enumerate(r.samples or []):
        for n, a in zip(("R", "C", "lam"), sample):
            out[f"sample{s}.{n}"] = digest(a)
    out["diagnosis"] = digest(sorted(str(d) for d in (r.diagnosis or [])))
    return out


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------

def synthetic(seed=0, I=60, J=50, K=4):
    """A small planted-block binary matrix (each row and column in one of K groups)."""
    rng = np.random.default_rng(seed)
    gi = rng.integers(0, K, I)
    gj = rng.integers(0, K, J)
    p = np.where(gi[:, None] == gj[None, :], 0.5, 0.05)
    X = (rng.random((I, J)) < p).astype(np.int8)
    X[np.arange(min(I, J)), np.arange(min(I, J))] = 1      # no empty row or column
    return X


def split(X, frac=0.1, seed=1):
    """(training matrix, test set): a fraction ``frac`` of the ones and as many zeros held out."""
    X = sp.csr_matrix(X).astype(np.int8)
    X.eliminate_zeros()
    I, J = X.shape
    rng = np.random.default_rng(seed)
    coo = X.tocoo()
    ones = np.flatnonzero(rng.random(coo.nnz) < frac)
    key_ones = set((coo.row * J + coo.col).tolist())
    zeros = []
    while len(zeros) < ones.size:
        k = int(rng.integers(0, I * J))
        if k not in key_ones and k not in zeros:
            zeros.append(k)
    zeros = np.array(zeros, dtype=np.int64)
    tr = np.concatenate([coo.row[ones], zeros // J]).astype(np.int64)
    tc = np.concatenate([coo.col[ones], zeros % J]).astype(np.int64)
    tl = np.concatenate([np.ones(ones.size), np.zeros(zeros.size)]).astype(np.int8)
    Xtr = X.tolil()
    Xtr[coo.row[ones], coo.col[ones]] = 0
    Xtr = sp.csr_matrix(Xtr)
    Xtr.eliminate_zeros()
    return Xtr, (tr, tc, tl)


def data_sets(only):
    out = {}
    if only in (None, "small"):
        out["small"] = split(synthetic())
    if only in (None, "ml100k"):
        try:
            out["ml100k"] = split(datasets.load("movielens100k").X, frac=0.02)
        except datasets.DataError as err:
            print(f"# MovieLens100K not available ({type(err).__name__}): skipped", file=sys.stderr)
    return out


# ------------------------------------------------------------------------------------------
# runs
# ------------------------------------------------------------------------------------------

def runs():
    """name -> fit keyword arguments (besides X and test)."""
    out = {}
    for model in ("EPM", "CEPM", "DEPM"):
        for T in (8, 64):
            out[f"{model}-{T}"] = dict(model=model, T=T, init="paper", seed=11)
            out[f"{model}-{T}-data"] = dict(model=model, T=T, init="data", seed=12)
    out["DEPM-8-split-merge"] = dict(model="DEPM", T=8, init="paper", split_merge=3, seed=13)
    out["IDEPM"] = dict(model="IDEPM", seed=14, K_init=20)
    out["IDEPM-data"] = dict(model="IDEPM", seed=15, init="data")
    out["IDEPM-split-merge"] = dict(model="IDEPM", seed=16, K_init=20, split_merge=5)
    out["IDEPM-paper-m"] = dict(model="IDEPM", seed=17, K_init=20, m_step="paper")
    out["EPM-8-masked"] = dict(model="EPM", T=8, init="paper", seed=18, masked=True)
    out["DEPM-64-masked"] = dict(model="DEPM", T=64, init="paper", seed=19, masked=True)
    out["IDEPM-masked"] = dict(model="IDEPM", seed=20, K_init=20, masked=True, split_merge=2)
    return out


def run_all(only=None, pattern=None):
    res = {}
    for dname, (X, test) in data_sets(only).items():
        for rname, kw in runs().items():
            if pattern and pattern not in rname:
                continue
            kw = dict(kw)
            mask = epm_lib.fit_data.missing_mask(X.shape, test[0], test[1]) if kw.pop("masked", False) else None
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = epm_lib.fit(X, test=test, mask=mask, n_iter=N_ITER, n_avg=N_AVG, **kw)
            res[f"{dname}/{rname}"] = fingerprint(r)
            print(f"{dname}/{rname}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return res


def compare(golden, now) -> list:
    """Lines naming every run and field that differs (or is missing) between two fingerprint sets."""
    bad = []
    for run, fields in now.items():
        if run not in golden:
            bad.append(f"{run}: not in the golden file")
            continue
        g = golden[run]
        diff = [f for f in sorted(set(g) | set(fields)) if g.get(f) != fields.get(f)]
        if diff:
            bad.append(f"{run}: differs in {', '.join(diff)}")
    return bad


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="the golden JSON file")
    p.add_argument("--write", action="store_true", help="write the fingerprints instead of comparing")
    p.add_argument("--only", choices=["small", "ml100k"], default=None, help="one data set only")
    p.add_argument("--runs", default=None, help="only the runs whose name contains this string")
    a = p.parse_args(argv)
    now = run_all(a.only, a.runs)
    if a.write:
        with open(a.path, "w") as f:
            json.dump(now, f, indent=1, sort_keys=True)
        print(f"wrote {len(now)} runs to {a.path}")
        return 0
    with open(a.path) as f:
        golden = json.load(f)
    bad = compare(golden, now)
    if bad:
        print("DIFFERENT:\n  " + "\n  ".join(bad))
        return 1
    print(f"identical: {len(now)} runs, {sum(len(v) for v in now.values())} fingerprints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
