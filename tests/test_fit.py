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
    # phi is kept for the rows with a one (a) or with a one or a test entry (b)
    assert a.state["phi"].shape == (a.state["row_ids"].shape[0], a.K[-1])
    assert b.state["phi"].shape == (X.shape[0], a.K[-1]) and np.array_equal(b.state["row_ids"], np.arange(X.shape[0]))
    assert np.array_equal(a.state["row_ids"], np.flatnonzero(X.any(axis=1)))


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


@pytest.mark.parametrize("init", ["random", None])
def test_idepm_finds_the_five_classes_of_the_toy_example(toy, init):
    """From the paper's start (random seating over 100 atoms) and from the default (the data's)."""
    r = fit(toy, "IDEPM", n_iter=150, n_avg=50, seed=0, init=init)
    if init == "random":                            # it starts from about DEFAULT_K_INIT atoms and shrinks
        assert r.K[0] > epm_lib.DEFAULT_K_INIT // 2
    else:
        assert r.settings["init"] == "data" and r.settings["K_start"] <= 8
    # five atoms, and now and then a transient sixth (from the data's 7 atoms, seed 0: median 6)
    assert np.median(r.K[-50:]) in ((5,) if init == "random" else (5, 5.5, 6)), r.K[-50:]
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


@pytest.mark.parametrize("model", ["EPM", "CEPM", "DEPM"])
def test_truncated_k_init(model):
    """K_init = T is the paper's start (init="paper", draw for draw); K_init = k seats the first
    m-step's customers at the first k atoms only."""
    X, _ = small_problem(4)
    a = fit(X, model, T=6, n_iter=3, n_avg=1, seed=0, init="paper")
    b = fit(X, model, T=6, n_iter=3, n_avg=1, seed=0, K_init=6)
    assert np.array_equal(a.K, b.K) and np.array_equal(a.hyper["gamma0"], b.hyper["gamma0"])
    one = fit(X, model, T=6, n_iter=1, n_avg=1, seed=0, K_init=2)
    assert one.K[0] <= 2 and one.settings["K_init"] == 2
    assert np.all(one.state["m_k"][2:] == 0)


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
    (dict(model="DEPM", T=3, a_update="exact"), "only for the EPM and CEPM"),
    (dict(model="IDEPM", a_update="exact"), "only for the EPM and CEPM"),
    (dict(model="DEPM", T=3, m_step="exact"), "only for the IDEPM"),
    (dict(model="EPM", T=3, m_step="paper"), "only for the IDEPM"),
    (dict(model="DEPM", T=3, K_init=4), "K_init = 4 exceeds the truncation level T = 3"),
    (dict(model="EPM", T=3, K_init=0), "K_init must be"),
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


@pytest.mark.slow
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


# ----------------------------------------------------------------------------------------------
# hostile inputs (issue "Any machine, any input")
# ----------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("model", ["EPM"])
def test_exploded_rates_stop_with_a_clear_error(toy, model):
    """e0 = 1e10 puts the hyperprior's mass on huge hyperparameters: the m-step used to seat
    ~10^12 customers one by one (minutes, deaf to Ctrl-C); now it stops and says why."""
    with pytest.raises(ValueError, match=r"latent counts exploded.*Gamma\(e0, f0\)"):
        fit(toy, model, T=4, e0=1e10, n_iter=50, n_avg=1, seed=0)


@pytest.mark.slow
def test_m_step_guard_returns_the_entry(toy):
    from epm_lib.models import common
    X = sp.csr_matrix(toy)
    _, _, rows, cols = fit_module.prepare_matrix(X)
    I, J = X.shape
    R, C, lam = np.full((I, 2), 1e4), np.full((J, 2), 1e4), np.full(2, 1e2)
    m_ik, m_jk, m_k = np.zeros((I, 2), np.int64), np.zeros((J, 2), np.int64), np.zeros(2, np.int64)
    code = common.sample_latent_counts(np.random.default_rng(0), rows, cols, R, C, lam, m_ik, m_jk, m_k)
    assert code == -1                              # the first one: rate 2e10 > 10^6 customers
    err = common.m_step_error(code, rows, cols, "EPM")
    assert f"({rows[0]}, {cols[0]})" in str(err)


def test_m_step_flushes_subnormal_weights_without_changing_draws():
    """Weights below the smallest normal double are stored as 0 (subnormal arithmetic is slow);
    the m-step's draws are those of the same state with those atoms' lambda exactly 0."""
    from epm_lib.models import common
    rng = np.random.default_rng(3)
    I, J, T = 6, 7, 9
    X = (rng.random((I, J)) < 0.5).astype(np.int8)
    rows, cols = (a.astype(np.int64) for a in np.nonzero(X))
    R, C = rng.uniform(0.01, 0.99, (I, T)), rng.uniform(0.01, 0.99, (J, T))   # phi, psi < 1
    lam = rng.gamma(1.0, 1.0, T)
    lam[[1, 4, 5]] = common.TINY              # switched-off atoms at the floor: R * lam is subnormal
    Rl = common._scaled_rows(R, lam)
    assert np.all(Rl[:, [1, 4, 5]] == 0.0) and np.all(Rl[:, [0, 2, 3, 6, 7, 8]] > 0)
    assert not np.any((Rl > 0) & (Rl < common.TINY))
    lam0 = lam.copy()
    lam0[[1, 4, 5]] = 0.0
    outs = []
    for lm in (lam, lam0):
        m = [np.zeros((I, T), np.int64), np.zeros((J, T), np.int64), np.zeros(T, np.int64)]
        M = common.sample_latent_counts(np.random.default_rng(5), rows, cols, R, C, lm, *m)
        outs.append((M, *m))
    assert outs[0][0] == outs[1][0] > 0
    for a, b in zip(outs[0][1:], outs[1][1:]):
        assert np.array_equal(a, b)
    assert np.all(outs[0][3][[1, 4, 5]] == 0)


import importlib
fit_module = importlib.import_module("epm_lib.fit")


def _padded(X, extra_rows, extra_cols):
    """X with empty rows and columns interleaved (every (k+1)-th row/column of the result is X's)."""
    I, J = X.shape
    rmap = np.arange(I) * (extra_rows + 1)
    cmap = np.arange(J) * (extra_cols + 1)
    r, c = np.nonzero(X)
    Y = sp.csr_matrix((np.ones(r.size, np.int8), (rmap[r], cmap[c])),
                      shape=(I * (extra_rows + 1), J * (extra_cols + 1)))
    return Y, rmap, cmap


@pytest.mark.slow
def test_idepm_on_used_rows_only_is_the_same_chain():
    """The IDEPM keeps count tables only for rows/columns with ones or test entries; the chain
    must be the one of the full tables (the kernels see I and J), draw for draw."""
    from epm_lib.models import idepm
    X, test = small_problem(2)
    Y, rmap, cmap = _padded(X, 3, 2)
    I, J = Y.shape
    r = fit(Y, "IDEPM", n_iter=15, n_avg=5, seed=4, K_init=5)
    assert r.state["row_ids"].shape[0] == np.unique(np.nonzero(X)[0]).shape[0]
    # reference: the same sweeps on full-size tables
    rows, cols = r.state["rows"], r.state["cols"]
    rng = np.random.default_rng(4)
    st = fit_module.init_state("IDEPM", rng, I, J, rows, cols, K_init=5)
    rng.spawn(1)
    counts = idepm.seat_counts(rows, cols, st["offsets"], st["z"], I, J, int(st["z"].max()) + 1)
    off, z, h = st["offsets"], st["z"], st["h"]
    Ks = []
    for _ in range(15):
        off, z, *counts, Kp = idepm.idepm_sweep(rng, rows, cols, off, z, *counts, I, J, h, 0.01, 0.01, True, 1)
        Ks.append(Kp)
    assert counts[0].shape[0] == I
    assert np.array_equal(r.K, Ks) and np.array_equal(r.state["z"], z)
    assert np.array_equal(r.hyper["gamma0"][-1], h[idepm.GAMMA0])
    # predictions at entries of rows/columns without ones work (they are kept in the tables)
    rt = fit(Y, "IDEPM", n_iter=10, n_avg=5, seed=4, test=(np.array([1, 0]), np.array([1, 3]), np.array([0, 1])))
    assert np.all(np.isfinite(rt.test_prob)) and rt.state["phi"].shape[0] == rt.state["row_ids"].shape[0]
    assert 1 in rt.state["row_ids"] and 1 in rt.state["col_ids"]


def test_idepm_aggregated_dirichlet_has_the_right_mean():
    """phi_.k ~ Dir(alpha1 + n_.k) over all I rows, drawn on I' rows plus one aggregate: the
    mass of the I' rows has mean (I' alpha1 + n_k)/(I alpha1 + n_k)."""
    from epm_lib.models import idepm
    n_ik = np.array([[3], [0], [1]], dtype=np.int64)
    n_jk = np.array([[4]], dtype=np.int64)
    n_k = np.array([4], dtype=np.int64)
    rng = np.random.default_rng(0)
    I, J, a1, a2 = 50, 7, 0.3, 0.8
    s_i, s_j = [], []
    for _ in range(4000):
        phi, psi, lam = idepm.sample_active_parameters(rng, n_ik, n_jk, n_k, np.array([0]), 1, a1, a2, 1.0, I, J)
        s_i.append(phi[:, 0]); s_j.append(psi[0, 0])
    s_i = np.array(s_i)
    want = (a1 + n_ik[:, 0]) / (I * a1 + 4)
    se = np.sqrt(want * (1 - want) / (I * a1 + 4 + 1) / 4000)
    assert np.all(np.abs(s_i.mean(axis=0) - want) < 5 * se)
    wj = (a2 + 4) / (J * a2 + 4)
    assert abs(np.mean(s_j) - wj) < 5 * np.sqrt(wj * (1 - wj) / (J * a2 + 5) / 4000)


@pytest.mark.slow
def test_idepm_memory_follows_the_used_rows():
    """A 10^7 x 10^7 matrix with 60 ones: full count tables would need tens of GB ('Allocation
    failed'); the IDEPM now sizes them by the used rows and columns."""
    rng = np.random.default_rng(0)
    n = 10_000_000
    r, c = rng.choice(n, 60, replace=False), rng.choice(n, 60, replace=False)
    X = sp.csr_matrix((np.ones(60, np.int8), (r, c)), shape=(n, n))
    res = fit(X, "IDEPM", n_iter=5, n_avg=1, seed=0, K_init=50)
    assert res.state["phi"].shape == (60, res.K[-1])


def test_duplicate_entries_are_refused_for_every_sparse_format():
    X = sp.coo_matrix((np.ones(3), ([0, 1, 0], [1, 2, 1])), shape=(3, 3))
    for Y in (X, sp.csr_matrix((np.ones(3), np.array([1, 1, 2]), np.array([0, 2, 3, 3])),
                                                     shape=(3, 3))):
        with pytest.raises(ValueError, match=r"more than once, e.g. \(0, 1\) 2 times"):
            fit(Y, "DEPM", T=2, n_iter=2, n_avg=1)


def test_explicit_zeros_of_a_sparse_matrix_are_fine():
    X = sp.coo_matrix((np.array([1.0, 0.0, 1.0]), ([0, 1, 2], [1, 2, 0])), shape=(3, 3))
    r = fit(X, "DEPM", T=2, n_iter=2, n_avg=1)
    assert r.settings["nnz"] == 2


@pytest.mark.parametrize("seed", [-1, "abc", 1.5, True, None, [1, -2]])
def test_bad_seed_names_seed(seed):
    X, _ = small_problem()
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, seed=seed)


def test_test_entry_listed_twice_is_refused():
    X, (tr, tc, tl) = small_problem()
    tr, tc = np.r_[tr, tr[0]], np.r_[tc, tc[0]]
    tl = np.r_[tl, 1 - tl[0]]
    with pytest.raises(ValueError, match=r"test lists 1 entries more than once"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, test=(tr, tc, tl))


# ----------------------------------------------------------------------------------------------
# resumable chains
# ----------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("model,T,extra", [("EPM", 4, {}), ("CEPM", 4, {}), ("DEPM", 5, {}), ("IDEPM", None, {}),
                                           ("IDEPM", None, dict(split_merge=3)), ("DEPM", 5, dict(split_merge=3))])
@pytest.mark.parametrize("with_test", [False, True])
def test_resumed_chain_equals_uninterrupted(model, T, extra, with_test, tmp_path):
    X, test = small_problem(6)
    test = test if with_test else None
    kw = dict(T=T, n_avg=5, test=test, **extra)
    full = fit(X, model, n_iter=30, seed=9, **kw)
    a = fit(X, model, n_iter=12, seed=9, **kw)
    a.save(tmp_path / "a.npz")
    b = fit(X, model, n_iter=10, resume=tmp_path / "a.npz", **kw)       # from the saved file
    c = fit(X, model, n_iter=8, resume=b, **kw)                           # from the object
    assert b.settings["start_iter"] == 12 and c.settings["start_iter"] == 22
    j = fit_module.concat(a, b, c)
    assert np.array_equal(j.K, full.K) and np.array_equal(j.M, full.M)
    if model == "IDEPM":
        assert np.array_equal(j.log_joint, full.log_joint)
        assert np.array_equal(fit_module.load_result(tmp_path / "a.npz").log_joint, a.log_joint)
    else:
        assert j.log_joint is None and full.log_joint is None
    for n in full.hyper:
        assert np.array_equal(j.hyper[n], full.hyper[n]), n
    for n in fit_module.CHAIN_STATE[model]:
        assert np.array_equal(j.state[n], full.state[n]), n
    for n in ("phi", "psi", "lam") if model == "IDEPM" else ("m_ik", "m_jk", "m_k"):
        assert np.array_equal(j.state[n], full.state[n]), n
    if with_test:
        assert np.array_equal(j.test_prob, full.test_prob) and j.tdll == full.tdll
        assert np.allclose(j.tdll_trace, full.tdll_trace, rtol=1e-12, atol=0)
    assert np.all(np.diff(j.seconds) >= 0) and j.settings["n_iter"] == 30


def test_resume_refuses_other_settings_or_data(tmp_path):
    X, test = small_problem(6)
    a = fit(X, "DEPM", T=4, n_iter=3, n_avg=1, seed=1)
    with pytest.raises(ValueError, match=r"other settings or data: T \(chain: 4, now: 5\)"):
        fit(X, "DEPM", T=5, n_iter=3, n_avg=1, resume=a)
    Y = X.copy()
    Y[0, 0] = 1 - Y[0, 0]
    with pytest.raises(ValueError, match="data_digest"):
        fit(Y, "DEPM", T=4, n_iter=3, n_avg=1, resume=a)
    with pytest.raises(ValueError, match="model"):
        fit(X, "EPM", T=4, n_iter=3, n_avg=1, resume=a)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a saved FitResult"):
        fit(X, "DEPM", T=4, n_iter=3, n_avg=1, resume=tmp_path / "junk.npz")
    with pytest.raises(ValueError, match="not consecutive"):
        fit_module.concat(a, a)


@pytest.mark.slow
@pytest.mark.parametrize("model,T", [("DEPM", 16), ("IDEPM", None)])
def test_split_merge_moves_leave_one_atom(toy, model, T):
    """From one atom the DEPM's plain Gibbs chain stays near one atom on the 90 x 90 example (the
    IDEPM's opens atoms one customer at a time there); with the split-merge moves both reach the
    five classes' region in a few sweeps (and say how often a proposal was taken)."""
    plain = fit(toy, model, T=T, n_iter=30, n_avg=5, seed=0, K_init=1, split_merge=0)
    moved = fit(toy, model, T=T, n_iter=30, n_avg=5, seed=0, K_init=1, split_merge=5)
    assert plain.acceptance["proposals"] == 0 and np.all(plain.move_stats == 0)
    if model == "DEPM":
        assert plain.K[-1] <= 2
    assert moved.acceptance["proposals"] == 150 and moved.acceptance["accepted"] >= 2
    assert moved.K[-1] >= 4
    assert moved.settings["split_merge"] == 5
    with pytest.raises(ValueError, match="split_merge exists only for the IDEPM and DEPM"):
        fit(toy, "EPM", T=4, n_iter=2, n_avg=1, split_merge=2)


# ----------------------------------------------------------------------------------------------
# missing entries
# ----------------------------------------------------------------------------------------------

def _pit_of_missing_row(masked, n_sweeps=6000, thin=5):
    """PIT values Gamma(a1, b1).cdf(U_0k) of the EPM's first row along a chain (kernel level)."""
    from scipy import stats
    from epm_lib.distributions import cepm_grid
    from epm_lib.models import gamma_epm
    rng = np.random.default_rng(3)
    X = (rng.random((12, 10)) < 0.35).astype(np.int8)
    X[0, :] = 0
    I, J, T = 12, 10, 3
    rows, cols = (a.astype(np.int64) for a in np.nonzero(X))
    n_ones = rows.size
    if masked:
        rows = np.concatenate([rows, np.zeros(J, np.int64)])
        cols = np.concatenate([cols, np.arange(J, dtype=np.int64)])
    st = fit_module.init_state("EPM", rng, I, J, rows, cols, T=T)
    m_ik, m_jk, m_k = np.zeros((I, T), np.int64), np.zeros((J, T), np.int64), np.zeros(T, np.int64)
    grid = cepm_grid()
    pit = []
    for t in range(n_sweeps):
        gamma_epm.epm_sweep(rng, rows, cols, st["U"], st["V"], st["lam"], st["h"], m_ik, m_jk, m_k,
                            1.0, 1.0, False, float(I), float(J), False, grid, n_ones)
        if t >= 500 and t % thin == 0:
            a1, b1 = st["h"][0], st["h"][1]
            pit.extend(stats.gamma.cdf(st["U"][0], a1, scale=1.0 / b1))
    return stats.kstest(np.array(pit)[::3], "uniform").pvalue


@pytest.mark.slow
def test_fully_missing_row_keeps_its_prior():
    """No data on row 0: U_0k | a1, b1 must stay Gamma(a1, b1) (PIT uniform); observed zeros
    in that row (no mask) pull U_0k down, and the same check sees it."""
    p_masked = _pit_of_missing_row(True)
    p_zeros = _pit_of_missing_row(False)
    print(f"KS p-value, row 0 missing: {p_masked:.3f}; row 0 observed zeros: {p_zeros:.1e}")
    assert p_masked > 1e-3 and p_zeros < 1e-6


@pytest.mark.parametrize("model,T", ALL)
def test_mask_runs_and_predicts(model, T):
    X, (tr, tc, tl) = small_problem(7)
    mask = fit_module.missing_mask(X.shape, tr, tc)
    r = fit(X, model, T=T, n_iter=20, n_avg=5, seed=0, test=(tr, tc, tl), mask=mask)
    assert r.settings["n_masked"] == tr.size and np.all((r.test_prob > 0) & (r.test_prob < 1))
    # a dense boolean mask is the same mask
    r2 = fit(X, model, T=T, n_iter=20, n_avg=5, seed=0, test=(tr, tc, tl), mask=mask.toarray())
    assert np.array_equal(r.K, r2.K) and np.array_equal(r.test_prob, r2.test_prob)
    # an empty mask is no mask, draw for draw
    a = fit(X, model, T=T, n_iter=10, n_avg=5, seed=0, mask=np.zeros(X.shape, bool))
    b = fit(X, model, T=T, n_iter=10, n_avg=5, seed=0)
    assert np.array_equal(a.K, b.K) and np.array_equal(a.M, b.M)


def test_mask_errors_and_helper():
    X, (tr, tc, tl) = small_problem(7)
    ones = np.argwhere(X == 1)[0]
    bad = np.zeros(X.shape, bool)
    bad[tuple(ones)] = True
    with pytest.raises(ValueError, match=r"ones of X are under the mask"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, mask=bad)
    with pytest.raises(ValueError, match=r"mask must have the shape of X"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, mask=np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match=r"mask contains NaN"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, mask=np.full(X.shape, np.nan))
    with pytest.raises(ValueError, match=r"mask must be boolean"):
        fit(X, "DEPM", T=2, n_iter=2, n_avg=1, mask=np.full(X.shape, 2))
    with pytest.raises(ValueError, match=r"exact m-step"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, m_step="paper", mask=fit_module.missing_mask(X.shape, tr, tc))
    m = fit_module.missing_mask((4, 4), [0, 0], [1, 1], diagonal=True)
    assert m.nnz == 5 and m[0, 1] and m[2, 2]
    with pytest.raises(ValueError, match="square"):
        fit_module.missing_mask((4, 5), [0], [1], diagonal=True)
    a = fit(X, "DEPM", T=3, n_iter=3, n_avg=1, mask=fit_module.missing_mask(X.shape, tr, tc))
    with pytest.raises(ValueError, match="data_digest"):        # resume with another mask
        fit(X, "DEPM", T=3, n_iter=3, n_avg=1, resume=a)


@pytest.mark.parametrize("model,T", ALL)
def test_predict_matches_test_prob(model, T):
    X, test = small_problem(8)
    r = fit(X, model, T=T, n_iter=20, n_avg=6, seed=2, test=test)
    assert len(r.samples) == 6
    assert np.allclose(r.predict(test[0], test[1]), r.test_prob, rtol=1e-12, atol=0)
    from sklearn.metrics import roc_auc_score
    assert r.tdauc_roc == pytest.approx(roc_auc_score(test[2], r.test_prob))
    # any pairs: the ones of X, too
    ones = np.argwhere(X == 1)[:5]
    p = r.predict(ones[:, 0], ones[:, 1])
    assert p.shape == (5,) and np.all((p > 0) & (p < 1))
    assert r.sweep_seconds.shape == (20,) and np.all(r.sweep_seconds >= 0)
    assert np.isclose(r.sweep_seconds.sum(), r.seconds[-1])
    with pytest.raises(ValueError, match="out of range"):
        r.predict(np.array([100]), np.array([0]))


def test_keep_samples_option():
    X, test = small_problem(8)
    r = fit(X, "DEPM", T=4, n_iter=20, n_avg=10, seed=2, keep_samples=3)
    assert len(r.samples) == 3
    r = fit(X, "IDEPM", n_iter=20, n_avg=10, seed=2)                 # no test: the final sample only
    assert len(r.samples) == 1
    r2 = fit(X, "IDEPM", n_iter=20, n_avg=10, seed=2, keep_samples=4)
    assert len(r2.samples) == 4 and np.array_equal(r.K, r2.K)       # the chain is the same
    empty_row = int(np.flatnonzero(~X.any(axis=1))[0]) if (~X.any(axis=1)).any() else None
    if empty_row is not None:
        with pytest.raises(ValueError, match="drew no parameters"):
            r2.predict(np.array([empty_row]), np.array([0]))
    with pytest.raises(ValueError, match="keep_samples must be"):
        fit(X, "DEPM", T=4, n_iter=5, n_avg=2, keep_samples=0)
    # "auto": all n_avg (as far as KEEP_BYTES allows), the IDEPM's without a test set too, same chain
    r3 = fit(X, "IDEPM", n_iter=20, n_avg=10, seed=2, keep_samples="auto")
    assert len(r3.samples) == 10 and np.array_equal(r.K, r3.K)
    assert np.array_equal(r3.hyper["gamma0"], r.hyper["gamma0"])
    r4 = fit(X, "DEPM", T=4, n_iter=20, n_avg=10, seed=2, keep_samples="auto")
    assert len(r4.samples) == 10
    for bad in ("all", "AUTO"):
        with pytest.raises(ValueError, match="keep_samples must be None, 'auto'"):
            fit(X, "DEPM", T=4, n_iter=5, n_avg=2, keep_samples=bad)


def _undirected(seed=0, n=16, p=0.25):
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n, n)) < p).astype(np.int8), 1)
    A = A + A.T
    zeros = np.argwhere(np.triu(A == 0, 1))
    pick = zeros[rng.choice(len(zeros), 12, replace=False)]
    return A, pick


@pytest.mark.parametrize("model,T", ALL)
def test_symmetric_predictions_are_symmetric(model, T):
    A, pick = _undirected()
    labels = np.r_[np.ones(4, int), np.zeros(8, int)]
    r = fit(A, model, T=T, n_iter=15, n_avg=5, seed=1, symmetric=True, test=(pick[:, 0], pick[:, 1], labels),
            mask=fit_module.missing_mask(A.shape, pick[:, 0], pick[:, 1]))
    assert r.test_prob.shape == (12,) and r.settings["n_test"] == 12 and r.settings["n_masked"] == 24
    assert np.allclose(r.predict(pick[:, 0], pick[:, 1]), r.test_prob, rtol=1e-12)
    assert np.allclose(r.predict(pick[:, 0], pick[:, 1]), r.predict(pick[:, 1], pick[:, 0]), rtol=1e-12)


def test_symmetric_input_checks():
    A, pick = _undirected()
    B = A.copy()
    B[0, 1], B[1, 0] = 1, 0
    with pytest.raises(ValueError, match="needs a symmetric X"):
        fit(B, "DEPM", T=2, n_iter=2, n_avg=1, symmetric=True)
    with pytest.raises(ValueError, match="square"):
        fit(np.ones((2, 3)), "DEPM", T=2, n_iter=2, n_avg=1, symmetric=True)
    tr = np.r_[pick[:2, 0], pick[0, 1]]
    tc = np.r_[pick[:2, 1], pick[0, 0]]
    with pytest.raises(ValueError, match="more than once"):
        fit(A, "DEPM", T=2, n_iter=2, n_avg=1, symmetric=True, test=(tr, tc, np.zeros(3, int)))
    with pytest.raises(ValueError, match="symmetric must be True or False"):
        fit(A, "DEPM", T=2, n_iter=2, n_avg=1, symmetric="yes")


# ----------------------------------------------------------------------------------------------
# the IDEPM's log joint trace
# ----------------------------------------------------------------------------------------------

def _dense_counts(state, I, J):
    rows, cols, off, z = state["rows"], state["cols"], state["offsets"], state["z"]
    counts = np.zeros((I, J, int(z.max()) + 1))
    for e in range(off.size - 1):
        # the entries after the ones are missing entries (fit's mask), listed in state["missing"]
        i, j = (rows[e], cols[e]) if e < rows.size else state["_missing"][e - rows.size]
        for s in range(off[e], off[e + 1]):
            counts[i, j, z[s]] += 1
    return counts[:, :, counts.sum(axis=(0, 1)) > 0]


@pytest.mark.parametrize("extra", [dict(), dict(split_merge=3), dict(m_step="paper"), dict(K_init=1)])
def test_idepm_log_joint_is_theorem4_plus_hyperpriors(extra):
    """FitResult.log_joint[-1] = ln P(m, [z] | h) (Theorem 4, theory.log_partition_likelihood with
    T = inf) + the Gamma(e0, f0) log densities of the four hyperparameters, at the final state."""
    from scipy.stats import gamma as gamma_dist
    from epm_lib import theory
    rng = np.random.default_rng(3)
    I, J = 9, 7
    X = (rng.random((I, J)) < 0.35).astype(np.int8)
    for e0, f0 in ((0.01, 0.01), (2.0, 3.0)):
        r = fit(X, "IDEPM", n_iter=25, n_avg=5, seed=4, e0=e0, f0=f0, **extra)
        assert r.log_joint.shape == (25,) and np.all(np.isfinite(r.log_joint))
        h = {n: r.hyper[n][-1] for n in r.hyper}
        counts = _dense_counts(r.state, I, J)
        assert counts.shape[2] == r.K[-1]
        want = theory.log_partition_likelihood(counts, h["alpha1"], h["alpha2"], h["gamma0"], h["c0"], math.inf)
        want += sum(gamma_dist.logpdf(h[n], e0, scale=1.0 / f0) for n in ("alpha1", "alpha2", "gamma0", "c0"))
        assert r.log_joint[-1] == pytest.approx(want, rel=1e-12, abs=1e-9)


def test_idepm_log_joint_with_missing_entries():
    """With a mask, the missing entries' customers (zero allowed) enter P(m, [z]) like the ones'."""
    from scipy.stats import gamma as gamma_dist
    from epm_lib import theory
    rng = np.random.default_rng(5)
    I, J = 8, 6
    X = (rng.random((I, J)) < 0.35).astype(np.int8)
    zeros = np.argwhere(X == 0)[:5]
    mask = np.zeros((I, J), bool)
    mask[zeros[:, 0], zeros[:, 1]] = True
    r = fit(X, "IDEPM", n_iter=20, n_avg=5, seed=2, mask=mask)
    state = dict(r.state, _missing=[tuple(x) for x in np.argwhere(mask)])   # fit's order: row-major
    h = {n: r.hyper[n][-1] for n in r.hyper}
    counts = _dense_counts(state, I, J)
    want = theory.log_partition_likelihood(counts, h["alpha1"], h["alpha2"], h["gamma0"], h["c0"], math.inf)
    want += sum(gamma_dist.logpdf(h[n], 0.01, scale=100.0) for n in ("alpha1", "alpha2", "gamma0", "c0"))
    assert r.log_joint[-1] == pytest.approx(want, rel=1e-12, abs=1e-9)
