"""epm_lib.fit: the public API, input validation, reproducibility and basic behaviour."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import epm_lib
from epm_lib import fit


@pytest.fixture(scope="module")
def toy():
    X, _, _ = epm_lib.datasets.make_toy90(seed=0)
    return X


def small_problem(seed=0, I=20, J=15):
    rng = np.random.default_rng(seed)
    X = (rng.random((I, J)) < 0.2).astype(np.int8)
    zeros = np.argwhere(X == 0)
    pick = zeros[rng.choice(len(zeros), 30, replace=False)]
    labels = rng.integers(0, 2, 30)
    return X, (pick[:, 0], pick[:, 1], labels)


ALL = [("EPM", 4), ("CEPM", 4), ("DEPM", 4), ("IDEPM", None)]


@pytest.mark.parametrize("model,T", ALL)
def test_result_fields(model, T):
    X, test = small_problem()
    r = fit(X, model, T=T, n_iter=30, n_avg=10, seed=3, test=test)
    assert r.K.shape == r.seconds.shape == r.tdll_trace.shape == r.M.shape == (30,)
    assert np.all(np.diff(r.seconds) >= 0)
    assert np.all(np.isfinite(r.tdll_trace)) and np.all(r.tdll_trace < 0)
    assert r.test_prob.shape == (30,) and np.all((r.test_prob > 0) & (r.test_prob < 1))
    assert math.isfinite(r.tdll) and r.tdll < 0
    assert 0.0 <= r.tdauc_pr <= 1.0
    assert all(v.shape == (30,) and np.all(v > 0) for v in r.hyper.values())
    assert np.all(r.M >= X.sum())                 # every one carries at least one customer
    if T is not None:
        assert np.all(r.K <= T)
        assert r.K[-1] == np.count_nonzero(r.state["m_k"])
    else:
        assert r.K[-1] == r.state["lam"].shape[0]


@pytest.mark.parametrize("model,T", ALL)
def test_same_seed_bit_identical_and_seed_matters(model, T):
    X, test = small_problem(1)
    a = fit(X, model, T=T, n_iter=25, n_avg=5, seed=7, test=test)
    b = fit(X, model, T=T, n_iter=25, n_avg=5, seed=7, test=test)
    c = fit(X, model, T=T, n_iter=25, n_avg=5, seed=8, test=test)
    for name in a.hyper:
        assert np.array_equal(a.hyper[name], b.hyper[name])
    assert np.array_equal(a.tdll_trace, b.tdll_trace) and np.array_equal(a.K, b.K)
    assert np.array_equal(a.test_prob, b.test_prob)
    assert not np.array_equal(a.tdll_trace, c.tdll_trace)


def test_idepm_chain_does_not_depend_on_the_test_set():
    # the collapsed chain has no phi, psi, lambda; those for predictions come from a child stream
    X, test = small_problem(5)
    a = fit(X, "IDEPM", n_iter=30, n_avg=5, seed=2)
    b = fit(X, "IDEPM", n_iter=30, n_avg=5, seed=2, test=test)
    assert np.array_equal(a.K, b.K) and np.array_equal(a.M, b.M)
    assert np.array_equal(a.state["z"], b.state["z"]) and np.array_equal(a.state["offsets"], b.state["offsets"])
    for name in a.hyper:
        assert np.array_equal(a.hyper[name], b.hyper[name])
    assert a.state["phi"].shape == b.state["phi"].shape == (X.shape[0], a.K[-1])


def test_dense_and_sparse_inputs_agree():
    X, test = small_problem(2)
    a = fit(X, "DEPM", T=3, n_iter=10, n_avg=5, seed=1, test=test)
    for Xs in (sp.csr_matrix(X), sp.coo_matrix(X), sp.csc_matrix(X.astype(float)), X.astype(bool)):
        b = fit(Xs, "DEPM", T=3, n_iter=10, n_avg=5, seed=1, test=test)
        assert np.array_equal(a.tdll_trace, b.tdll_trace)


def test_paper_a_update_runs_and_differs():
    X, _ = small_problem(3)
    a = fit(X, "EPM", T=4, n_iter=20, n_avg=5, seed=1)
    b = fit(X, "EPM", T=4, n_iter=20, n_avg=5, seed=1, a_update="paper")
    assert b.settings["a_update"] == "paper"
    assert not np.array_equal(a.hyper["a1"], b.hyper["a1"])


def test_idepm_finds_the_five_classes_of_the_toy_example(toy):
    r = fit(toy, "IDEPM", n_iter=150, n_avg=50, seed=0)
    assert r.K[0] > epm_lib.DEFAULT_K_INIT // 2     # it starts from about DEFAULT_K_INIT atoms and shrinks
    assert np.median(r.K[-50:]) == 5, r.K[-50:]
    # the five largest atoms hold (almost) all customers: extra atoms are transient singletons
    z = r.state["z"]
    sizes = np.sort(np.bincount(z))[::-1]
    assert sizes[:5].sum() >= 0.99 * z.size, sizes


def test_idepm_k_init():
    X, _ = small_problem(4)
    r = fit(X, "IDEPM", n_iter=1, n_avg=1, seed=0, K_init=1)
    assert r.settings["K_init"] == 1
    r = fit(X, "IDEPM", n_iter=1, n_avg=1, seed=0, K_init=10_000)   # capped at the number of ones
    assert r.K[0] <= X.sum() + 10


@pytest.mark.parametrize("kwargs,msg", [
    (dict(model="XPM", T=3), "unknown model"),
    (dict(model="EPM"), "give T"),
    (dict(model="EPM", T=0), "T must be an integer >= 1"),
    (dict(model="EPM", T=2.5), "T must be an integer"),
    (dict(model="EPM", T=True), "T must be an integer"),
    (dict(model="IDEPM", T=5), "T must be None"),
    (dict(model="DEPM", T=3, n_iter=5, n_avg=6), "n_avg = 6 exceeds n_iter = 5"),
    (dict(model="DEPM", T=3, n_avg=0), "n_avg must be"),
    (dict(model="EPM", T=3, a_update="fancy"), "a_update must be"),
    (dict(model="DEPM", T=3, a_update="paper"), "only for the EPM and CEPM"),
    (dict(model="IDEPM", K_init=0), "K_init must be"),
    (dict(model="IDEPM", m_step="x"), "m_step must be"),
    (dict(model="DEPM", T=3, e0=0.0), "e0 must be"),
])
def test_invalid_arguments(kwargs, msg):
    X, _ = small_problem()
    with pytest.raises(ValueError, match=msg):
        fit(X, **kwargs)


@pytest.mark.parametrize("X,msg", [
    (np.array([[0, 2], [1, 0]]), "must be binary"),
    (np.array([[0, np.nan], [1, 0]]), "NaN"),
    (np.ones((2, 2, 2)), "2-d"),
    (np.zeros((3, 3)), "no ones"),
    (sp.csr_matrix(np.array([[0, 3.0], [1, 0]])), "must be binary"),
    (sp.csr_matrix(np.array([[0, np.nan], [1, 0]])), "NaN"),
    (np.array([["a", "b"]]), "numeric"),
])
def test_invalid_matrix(X, msg):
    with pytest.raises(ValueError, match=msg):
        fit(X, "DEPM", T=2, n_iter=1, n_avg=1)


def test_invalid_test_entries():
    X, (r, c, l) = small_problem()
    one = np.argwhere(X == 1)[0]
    bad = [
        ((np.r_[r, one[0]], np.r_[c, one[1]], np.r_[l, 1]), "ones of the training matrix"),
        ((np.r_[r, 99], np.r_[c, 0], np.r_[l, 0]), "out of range"),
        ((r, c[:-1], l), "same length"),
        ((r, c, l + 2), "labels must be 0 or 1"),
        ((r, c), "tuple"),
        ((r.astype(float) + 0.5, c, l), "integer"),
    ]
    for test, msg in bad:
        with pytest.raises(ValueError, match=msg):
            fit(X, "DEPM", T=2, n_iter=1, n_avg=1, test=test)


@pytest.mark.parametrize("T", [1, 3, 4, 9])
def test_test_loglik_sum_equals_per_entry_sum(T):
    """The row-sum evaluation of the test likelihood (zeros through W_ik) equals the per-entry one."""
    from epm_lib.models import common
    rng = np.random.default_rng(T)
    I, J, n = 30, 25, 400
    lin = rng.choice(I * J, n, replace=False)
    rows, cols = (lin // J).astype(np.int32), (lin % J).astype(np.int32)
    labels = (rng.random(n) < 0.2).astype(np.int8)
    order = np.lexsort((cols, rows))
    rows, cols, labels = rows[order], cols[order], labels[order]
    R, C = rng.gamma(0.5, 1.0, (I, T)), rng.gamma(0.5, 1.0, (J, T))
    R[3] = 0.0                                    # a row with zero rates: its zeros add nothing
    lam = rng.gamma(1.0, 1.0, T)
    parts = common.split_test(rows, cols, labels, I)
    got = common.test_loglik_sum(*parts, R, C, lam)
    want = n * common.tdll_from_rates(common.link_rates(rows, cols, R, C, lam), labels)
    if np.any(labels[rows == 3] == 1):
        assert got == want == -np.inf              # a one with rate 0 has likelihood 0
    else:
        assert got == pytest.approx(want, rel=1e-12)
    # only zeros, only ones
    for keep in (labels == 0, labels == 1):
        r, c, l = rows[keep & (rows != 3)], cols[keep & (rows != 3)], labels[keep & (rows != 3)]
        got = common.test_loglik_sum(*common.split_test(r, c, l, I), R, C, lam)
        want = r.size * common.tdll_from_rates(common.link_rates(r, c, R, C, lam), l)
        assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("model,T", ALL)
def test_tdll_trace_same_with_either_evaluation(model, T):
    """Test evaluation draws no random numbers: the chain is the same whatever n_avg is, and the
    trace from row sums (before the averaging window) equals the per-entry one (inside it)."""
    X, test = small_problem(2)
    a = fit(X, model, T=T, n_iter=20, n_avg=20, seed=5, test=test)    # per-entry throughout
    b = fit(X, model, T=T, n_iter=20, n_avg=1, seed=5, test=test)     # row sums for 19 iterations
    assert np.array_equal(a.K, b.K) and np.array_equal(a.M, b.M)
    np.testing.assert_allclose(b.tdll_trace, a.tdll_trace, rtol=1e-12)
