"""Issue 19: bad input gets a clear error naming the problem (never a silent wrong answer, a raw
traceback or a crash), and long runs are safe (checkpoints, results folders, stale data)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import epm_lib
from epm_lib import chains
from epm_lib import experiments as ex


def small(seed=0, I=25, J=20):
    rng = np.random.default_rng(seed)
    return (rng.random((I, J)) < 0.15).astype(np.int8)


def network(n=12, seed=0, loop=None):
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n, n)) < 0.3).astype(np.int8), 1)
    A = A + A.T
    if loop is not None:
        A[loop, loop] = 1
    return A


# ------------------------------------------------------------------ 1. hold_out and self-loops
def test_hold_out_refuses_self_loops_when_the_diagonal_is_masked():
    A = network(loop=4)
    fold = ex.pair_folds(A.shape, n_folds=4, seed=0, symmetric=True)[0]
    with pytest.raises(ValueError, match=r"self-loop\(s\) .*e\.g\. \(4, 4\).*diagonal=False"):
        ex.hold_out(A, fold, symmetric=True)
    with pytest.raises(ValueError, match=r"e\.g\. \(4, 4\)"):
        ex.hold_out(A, fold, diagonal=True)
    # the documented ways out: keep the diagonal observed, or remove the self-loops
    X_train, test, mask = ex.hold_out(A, fold, symmetric=True, diagonal=False)
    r = epm_lib.fit(X_train, "IDEPM", n_iter=3, n_avg=1, test=test, mask=mask, symmetric=True)
    assert np.isfinite(r.tdll)
    B = A.copy()
    np.fill_diagonal(B, 0)
    X_train, test, mask = ex.hold_out(B, fold, symmetric=True)
    assert np.isfinite(epm_lib.fit(X_train, "IDEPM", n_iter=3, n_avg=1, test=test, mask=mask,
                                   symmetric=True).tdll)


# ------------------------------------------------------------------ 2. shapes are integers
@pytest.mark.parametrize("shape", [(10.7, 10.2), (10.0, 10), (True, 5), (5, np.float64(4.0)), "ab",
                                   (5,), (5, 4, 3)])
@pytest.mark.parametrize("symmetric", [False, True])
def test_pair_folds_refuses_non_integer_shapes(shape, symmetric):
    with pytest.raises(ValueError, match="shape must be a pair"):
        ex.pair_folds(shape, 3, symmetric=symmetric)


@pytest.mark.parametrize("shape", [(-3, 4), (0, 5), (4, -1)])
def test_folds_refuse_non_positive_shapes(shape):
    with pytest.raises(ValueError, match="shape must be positive"):
        ex.pair_folds(shape, 2)
    with pytest.raises(ValueError, match="shape must be positive"):
        ex.cv_fold(shape, 0, 2)


def test_numpy_integer_shapes_are_accepted():
    a = ex.pair_folds((np.int64(10), np.int32(10)), 3, symmetric=True)
    b = ex.pair_folds((10, 10), 3, symmetric=True)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert len(ex.cv_folds(np.array([4, 5]), 3)) == 3


# ------------------------------------------------------------------ 3. starts and seeds
@pytest.mark.parametrize("kwargs, msg", [
    (dict(starts=2), "starts must be a sequence of integers >= 1"),
    (dict(starts="15"), "starts must be a sequence"),
    (dict(starts=(1, 2.5)), r"starts must be integers >= 1 .*got 2\.5"),
    (dict(starts=(0, 5)), "starts must be integers >= 1"),
    (dict(starts=(True, 5)), "starts must be integers >= 1"),
    (dict(starts=(1, 5), seeds=3), "seeds must be a sequence of non-negative integers"),
    (dict(starts=(1, 5), seeds=(0, -1)), r"seeds must be non-negative integers .*got -1"),
    (dict(starts=(1, 5), seeds=(0, 1.5)), "seeds must be non-negative integers"),
    (dict(starts=(1, 5), seeds=(0, 1, 2)), "one seed per start"),
])
def test_fit_chains_checks_starts_and_seeds(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        epm_lib.fit_chains(small(), "IDEPM", n_iter=2, n_avg=1, **kwargs)


def test_fit_chains_accepts_numpy_starts_and_seeds():
    cs = epm_lib.fit_chains(small(), "IDEPM", starts=np.array([1, 5]), seeds=np.array([3, 4]),
                            n_iter=2, n_avg=1)
    assert cs.starts == [1, 5] and cs.seeds == [3, 4] and type(cs.starts[0]) is int
