"""Held-out scoring on several cores (issue 31, item 2): ``common.link_rates`` and
``common.test_loglik_sum`` give the same numbers, bit for bit, at one and two threads and as the
serial kernels; a fit's test scores do not depend on ``NUMBA_NUM_THREADS``."""
import json
import os
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest

from epm_lib.models import common


def _problem(seed, I=900, J=700, T=48, n=9000, dead_row=False):
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.integers(0, I, n))
    cols = rng.integers(0, J, n)
    labels = (rng.random(n) < 0.06).astype(np.int64)
    R, C = rng.gamma(0.3, 1, (I, T)), rng.gamma(0.3, 1, (J, T))
    lam = rng.gamma(0.5, 1, T)
    lam[:3] = 1e-310                    # switched-off atoms: subnormal products, flushed in link_rates
    if dead_row:                        # a row with rate 0 at a held-out one: -inf
        R[rows[labels == 1][0], :] = 0.0
    return rows, cols, labels, R, C, lam


@pytest.fixture
def threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba was given one thread")
@pytest.mark.parametrize("seed,dead_row", [(0, False), (1, False), (2, True)])
def test_scoring_identical_at_one_and_two_threads(seed, dead_row, threads):
    rows, cols, labels, R, C, lam = _problem(seed, dead_row=dead_row)
    assert common.parallel_threads(rows.shape[0] * R.shape[1]) >= 1
    parts = common.split_test(rows, cols, labels, R.shape[0])
    serial = (common._link_rates_serial(rows, cols, R, C, lam),
              common._test_loglik_sum_serial(*parts, R, C, lam))
    got = {}
    for nt in (1, 2):
        numba.set_num_threads(nt)
        got[nt] = (common._link_rates_parallel(rows, cols, R, C, lam),
                   common._test_loglik_sum_parallel(*parts, R, C, lam),
                   common.link_rates(rows, cols, R, C, lam), common.test_loglik_sum(*parts, R, C, lam))
    for nt in (1, 2):
        np.testing.assert_array_equal(got[nt][0], serial[0])
        np.testing.assert_array_equal(got[nt][2], serial[0])
        assert got[nt][1] == serial[1] and got[nt][3] == serial[1]
    assert np.isinf(serial[1]) == dead_row
    # and the parallel sum is the per-entry one, as test_fit checks for the serial kernel
    want = rows.size * common.tdll_from_rates(serial[0], labels)
    if not dead_row:
        assert abs(serial[1] - want) <= 1e-9 * abs(want)


def test_rows_without_test_zeros_and_no_test_ones(threads):
    rows, cols, labels, R, C, lam = _problem(3, I=300, n=6000)
    keep = rows % 3 != 0                 # every third row has no held-out entry
    rows, cols = rows[keep], cols[keep]
    labels = np.zeros(rows.size, dtype=np.int64)
    parts = common.split_test(rows, cols, labels, R.shape[0])
    assert common._test_loglik_sum_parallel(*parts, R, C, lam) == common._test_loglik_sum_serial(*parts, R, C, lam)


def test_small_work_and_other_threads_stay_serial():
    assert common.parallel_threads(10) == 1
    seen = []
    t = threading.Thread(target=lambda: seen.append(common.parallel_threads(10 ** 9)))
    t.start()
    t.join()
    assert seen == [1]                   # workqueue must not be entered from two Python threads
    assert common.parallel_threads(10 ** 9) == numba.get_num_threads()


_FIT = """
import json, sys, numpy as np, epm_lib
from epm_lib.models import common
rng = np.random.default_rng(0)
X = (rng.random((400, 300)) < 0.05).astype(np.int8)
rows, cols = np.nonzero(rng.random(X.shape) < 0.05)
test = (rows, cols, X[rows, cols])
X[rows, cols] = 0
r = epm_lib.fit(X, model="DEPM", T=48, n_iter=30, n_avg=10, test=test, seed=3)
assert common.parallel_threads(rows.size * 48) == int(sys.argv[1])
print(json.dumps({"tdll_trace": r.tdll_trace.tolist(), "test_prob": r.test_prob.tolist(), "K": r.K.tolist()}))
"""


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core")
def test_fit_scores_do_not_depend_on_the_thread_count():
    out = {}
    for nt in (1, 2):
        env = dict(os.environ, NUMBA_NUM_THREADS=str(nt))
        p = subprocess.run([sys.executable, "-c", _FIT, str(nt)], env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        out[nt] = json.loads(p.stdout.strip().splitlines()[-1])
    assert out[1] == out[2]
