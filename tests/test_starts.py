"""epm_lib.starts and fit(init=..., hold=...): the data-driven start (issue 20, step 1)."""
import networkx as nx
import numpy as np
import epm_lib
import pytest
import scipy.sparse as sp

from epm_lib import concat, fit, starts
from epm_lib.experiments import hold_out, pair_folds
from epm_lib.fit import init_state, prepare_matrix

ALL = [("EPM", 8), ("CEPM", 8), ("DEPM", 8), ("IDEPM", None)]


@pytest.fixture(scope="module")
def planted():
    """12 groups of 10 nodes, p_in 0.7, p_out 0.03, nodes shuffled; and its fold 0."""
    G = nx.planted_partition_graph(12, 10, 0.7, 0.03, seed=1)
    perm = np.random.default_rng(0).permutation(G.number_of_nodes())
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=[int(v) for v in perm], format="csr")).astype(np.int8)
    blocks = np.array([G.nodes[int(v)]["block"] for v in perm])
    fold = pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)[0]
    return A, blocks, hold_out(A, fold, symmetric=True)


def small(seed=0, I=30, J=20):
    rng = np.random.default_rng(seed)
    return (rng.random((I, J)) < 0.2).astype(np.int8)


def _state(model, T, X, seed=0, missing=None, symmetric=False):
    I, J, rows, cols = prepare_matrix(X)
    return init_state(model, np.random.default_rng(seed), I, J, rows, cols, T=T, init="data",
                      missing=missing, symmetric=symmetric), (I, J, rows, cols)


def _check_valid(model, T, st, I, J, nnz):
    assert np.all(np.isfinite(st["h"])) and np.all(st["h"] > 0)
    if model == "IDEPM":
        assert st["h"].shape == (4,)
        assert np.array_equal(st["offsets"], np.arange(nnz + 1))   # every one of X seated, once
        z = st["z"]
        assert z.shape == (nnz,) and z.dtype == np.int64 and z.min() == 0
        assert np.all(np.bincount(z) > 0)                           # labels 0..K-1, each in use
        return int(z.max()) + 1
    R, C = ("phi", "psi") if model == "DEPM" else ("U", "V")
    assert st[R].shape == (I, T) and st[C].shape == (J, T) and st["lam"].shape == (T,)
    for a in (st[R], st[C], st["lam"]):
        assert a.dtype == np.float64 and np.all(np.isfinite(a)) and np.all(a >= 0)
    K = int(np.count_nonzero(st["lam"]))
    assert np.all(st["lam"][:K] > 0) and np.all(st["lam"][K:] == 0)   # unused atoms: no mass
    if model == "DEPM":
        assert np.allclose(st[R].sum(axis=0), 1) and np.allclose(st[C].sum(axis=0), 1)
    else:
        assert st["h"].shape == (6,)
    return K


@pytest.mark.parametrize("model,T", ALL)
def test_start_valid_and_deterministic(model, T):
    X = small()
    st, (I, J, rows, cols) = _state(model, T, X, seed=5)
    K = _check_valid(model, T, st, I, J, rows.size)
    assert 1 <= K <= (T or rows.size)
    again, _ = _state(model, T, X, seed=5)
    assert st.keys() == again.keys()
    for n in st:
        assert np.array_equal(st[n], again[n]), n
    # and through fit: the same seed, the same chain
    a = fit(X, model, T=T, n_iter=4, n_avg=2, seed=3, init="data")
    b = fit(X, model, T=T, n_iter=4, n_avg=2, seed=3, init="data")
    assert np.array_equal(a.K, b.K) and np.array_equal(a.M, b.M)
    assert all(np.array_equal(a.hyper[n], b.hyper[n]) for n in a.hyper)
    assert a.settings["init"] == "data" and a.settings["K_start"] >= 1 and a.settings["K_init"] is None


@pytest.mark.slow
@pytest.mark.parametrize("model,T", ALL)
def test_start_valid_on_planted_network_with_mask(planted, model, T):
    """symmetric=True with the fold's pairs and the diagonal missing: a valid state, the same
    factors for rows and columns, and fit runs from it."""
    _, _, (X, test, mask) = planted
    T = None if T is None else 20
    I, J, rows, cols = prepare_matrix(X)
    m = sp.coo_matrix(mask)
    st, _ = _state(model, T, X, missing=(m.row.astype(np.int64), m.col.astype(np.int64)), symmetric=True)
    K = _check_valid(model, T, st, I, J, rows.size)
    assert K >= 8
    if model in ("EPM", "CEPM", "DEPM"):
        R, C = ("phi", "psi") if model == "DEPM" else ("U", "V")
        assert np.allclose(st[R], st[C])          # one factor for rows and columns
    else:                                          # (i, j) and (j, i) sit at the same atom
        z = dict(zip(zip(rows.tolist(), cols.tolist()), st["z"].tolist()))
        assert all(z[(i, j)] == z[(j, i)] for (i, j) in z)
    r = fit(X, model, T=T, n_iter=3, n_avg=1, test=test, mask=mask, symmetric=True, init="data")
    assert r.settings["K_start"] == K and np.isfinite(r.tdauc_pr)


def test_rank_is_the_number_of_planted_groups(planted):
    A, blocks, _ = planted
    K, info = starts.choose_rank(A, symmetric=True)
    assert K == blocks.max() + 1 == 12
    assert info["edge"] < info["values"][11] and info["values"][12] < info["edge"]
    # pure noise of the same density: one atom (the mean)
    rng = np.random.default_rng(0)
    noise = (rng.random((150, 100)) < A.nnz / A.shape[0] ** 2).astype(np.int8)
    assert starts.choose_rank(noise)[0] == 1


def test_profile_sums_are_exact_for_a_low_rank_profile():
    """sum_j p_ij (1 - p_ij) = sum_j p_ij - ||row i of U_K diag(s_K)||^2 when p has rank K and the
    row sums of p are given (the estimator of the noise edge, at its expectation)."""
    rng = np.random.default_rng(3)
    W, H = rng.uniform(0, 0.5, (40, 3)), rng.uniform(0, 0.5, (3, 30))
    P = W @ H / 3
    U, s, Vt = np.linalg.svd(P, full_matrices=False)
    r, c = starts._profile_sums(U, s, Vt, 3, P.sum(axis=1), P.sum(axis=0))
    assert np.allclose(r, (P * (1 - P)).sum(axis=1)) and np.allclose(c, (P * (1 - P)).sum(axis=0))


def test_rank_of_blocks_with_empty_regions():
    """toy90 (five overlapping blocks at 0.9, zeros outside): one variance for every entry,
    estimated without the signal, would put the edge at 2.8 and count 19 atoms; the variance
    profile's edge counts a handful (the samplers settle at 5-7), growing from K = 1."""
    X = epm_lib.datasets.load("toy90").X
    K, info = starts.choose_rank(X)
    assert 5 <= K <= 8 and info["edge"] > 3.5, info["rounds"]
    assert info["rounds"][0] == 1 and info["rounds"][-1] == info["rounds"][-2] == K
    assert np.count_nonzero(info["values"] > 2.76 * 1.05) == 19   # the old edge, 2.76 (sigma^2 0.021)


def test_planted_start_recovers_the_groups(planted):
    """The IDEPM's start seats the links of a group together: each group's within links at one atom."""
    A, blocks, _ = planted
    st, (I, J, rows, cols) = _state("IDEPM", None, A, symmetric=True)
    assert int(st["z"].max()) + 1 == 12
    inside = blocks[rows] == blocks[cols]
    top, hit = [], 0
    for g in range(12):
        counts = np.bincount(st["z"][inside & (blocks[rows] == g)], minlength=12)
        top.append(int(counts.argmax()))
        hit += counts.max()
        assert counts.max() >= 0.75 * counts.sum()
    assert len(set(top)) == 12 and hit >= 0.9 * inside.sum()     # one atom per group


def test_start_respects_T():
    X = small()
    for model in ("EPM", "CEPM", "DEPM"):
        st, _ = _state(model, 2, X)
        assert np.count_nonzero(st["lam"]) <= 2


@pytest.mark.parametrize("model,T", ALL)
def test_default_start(model, T):
    """init=None is the data's start draw for draw; with K_init given, or on a matrix too small
    to factorise, it is the paper's ("random" for the IDEPM), draw for draw."""
    X = small()
    ref = fit(X, model, T=T, n_iter=5, n_avg=2, seed=7, init="data")
    paper = starts.INITS[model][0]
    K0 = 3 if T is None else T
    same = lambda r, s: (np.array_equal(r.K, s.K) and np.array_equal(r.M, s.M)  # noqa: E731
                         and all(np.array_equal(r.hyper[n], s.hyper[n]) for n in s.hyper))
    r = fit(X, model, T=T, n_iter=5, n_avg=2, seed=7)
    assert same(r, ref) and r.settings["init"] == ref.settings["init"] == "data"
    assert r.settings["K_init"] is None and r.settings["hold"] is None
    r = fit(X, model, T=T, n_iter=5, n_avg=2, seed=7, K_init=K0)
    s = fit(X, model, T=T, n_iter=5, n_avg=2, seed=7, K_init=K0, init=paper)
    assert same(r, s) and r.settings["init"] == paper and r.settings["K_init"] == K0
    assert not same(r, ref)
    tiny = np.zeros((3, 1), dtype=np.int8)          # a single column: nothing to factorise
    tiny[:2, 0] = 1
    r = fit(tiny, model, T=T, n_iter=3, n_avg=1, seed=7)
    s = fit(tiny, model, T=T, n_iter=3, n_avg=1, seed=7, init=paper)
    assert same(r, s) and r.settings["init"] == paper
    with pytest.raises(ValueError, match="too few for init='data'"):
        fit(tiny, model, T=T, n_iter=3, n_avg=1, seed=7, init="data")


def test_bad_options():
    X = small()
    with pytest.raises(ValueError, match="unknown init 'kmeans'.*'paper', 'data'"):
        fit(X, "DEPM", T=4, init="kmeans")
    with pytest.raises(ValueError, match="unknown init 'random' for the DEPM"):
        fit(X, "DEPM", T=4, init="random")
    with pytest.raises(ValueError, match="unknown init 'paper' for the IDEPM.*'random', 'data'"):
        fit(X, "IDEPM", init="paper")
    with pytest.raises(ValueError, match="unknown init 3"):
        fit(X, "EPM", T=4, init=3)
    with pytest.raises(ValueError, match="K_init must not be given"):
        fit(X, "IDEPM", init="data", K_init=5)
    with pytest.raises(ValueError, match="K_init must not be given"):
        fit(X, "EPM", T=4, init="data", K_init=2)
    r = fit(X, "DEPM", T=4, n_iter=2, n_avg=1)
    with pytest.raises(ValueError, match="init must not be given"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, resume=r, init="data")
    few = np.zeros((5, 5), dtype=np.int8)
    few[0, 0] = few[1, 2] = 1
    with pytest.raises(ValueError, match="has 2 ones: too few for init='data'"):
        fit(few, "IDEPM", init="data")
    with pytest.raises(ValueError, match="too few for init='data'"):
        fit(np.ones((1, 8), dtype=np.int8), "DEPM", T=3, init="data")
    for hold in ((0, 0.1), (10, 0.0), (10, -1), (10, float("nan")), (10,), "300", (1.5, 0.1), (True, 0.1)):
        with pytest.raises(ValueError, match="hold"):
            fit(X, "IDEPM", n_iter=20, n_avg=5, hold=hold)
    with pytest.raises(ValueError, match="reach into the last n_avg"):
        fit(X, "IDEPM", n_iter=20, n_avg=5, hold=(16, 0.1))


@pytest.mark.parametrize("model,T", ALL)
def test_hold_caps_the_shapes_then_releases(model, T):
    X = small()
    cap = 0.05
    r = fit(X, model, T=T, n_iter=30, n_avg=5, seed=1, hold=(10, cap))
    names = ("a1", "a2") if model in ("EPM", "CEPM") else ("alpha1", "alpha2")
    for n in names:
        assert np.all(r.hyper[n][:10] <= cap)
    assert max(r.hyper[n][10:].max() for n in names) > cap     # released: the exact kernel again
    if model == "CEPM":
        I, J = X.shape
        assert np.allclose(r.hyper["b1"][:10], I * r.hyper["a1"][:10])
    assert r.settings["hold"] == [10, cap]
    free = fit(X, model, T=T, n_iter=30, n_avg=5, seed=1)
    assert not np.array_equal(free.hyper[names[0]], r.hyper[names[0]])
    # resumed: the chain keeps its hold (another is refused), and the pieces are the uninterrupted chain
    a = fit(X, model, T=T, n_iter=12, n_avg=1, seed=1, hold=(10, cap))
    b = fit(X, model, T=T, n_iter=18, n_avg=5, resume=a)
    assert np.all(a.hyper[names[0]][:10] <= cap)
    assert b.settings["init"] == a.settings["init"] and b.settings["hold"] == [10, cap]
    whole = concat(a, b)
    assert np.array_equal(whole.hyper[names[0]], r.hyper[names[0]]) and whole.settings["hold"] == [10, cap]
    with pytest.raises(ValueError, match=r"a resumed chain keeps its own seed, start and burn-in hold"):
        fit(X, model, T=T, n_iter=18, n_avg=5, resume=a, hold=(20, cap))


@pytest.mark.parametrize("model,T", ALL)
def test_start_with_mask_bipartite(model, T):
    """A directed (bipartite) matrix with missing entries: a valid start, and fit runs from it."""
    X = small(seed=2)
    rng = np.random.default_rng(0)
    zeros = np.argwhere(X == 0)
    pick = zeros[rng.choice(len(zeros), 40, replace=False)]
    mask = np.zeros(X.shape, dtype=bool)
    mask[pick[:, 0], pick[:, 1]] = True
    st, (I, J, rows, cols) = _state(model, T, X, missing=(pick[:, 0], pick[:, 1]))
    _check_valid(model, T, st, I, J, rows.size)
    r = fit(X, model, T=T, n_iter=3, n_avg=1, mask=mask, init="data")
    assert r.settings["n_masked"] == 40 and r.settings["init"] == "data"


def test_nmf_leaves_missing_entries_out():
    """EM: a missing entry is not a zero, so its fitted rate exceeds the zero-filled fit's."""
    A = np.kron(np.eye(3), np.ones((8, 8))).astype(np.int8)      # three dense blocks
    miss = (np.array([0, 1, 9, 17]), np.array([1, 0, 10, 20]))    # inside the blocks
    A[miss] = 0
    W0, H0, _ = starts.kl_nmf(A, 3, 0)
    W1, H1, _ = starts.kl_nmf(A, 3, 0, missing=miss)
    r0 = np.einsum("ek,ke->e", W0[miss[0]], H0[:, miss[1]])
    r1 = np.einsum("ek,ke->e", W1[miss[0]], H1[:, miss[1]])
    assert np.all(r1 > r0) and np.all(r1 > 0.8)


# ------------------------------------------------------------------------------------------------
# the factors-to-state mapping shared by the data's start and the labels' start (init=<labels>)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model,T", ALL)
def test_data_start_is_factors_state_of_its_nmf(model, T):
    """data_start = choose_rank + kl_nmf + factors_state, draw for draw (the mapping draws nothing)."""
    X = small(seed=4)
    I, J, rows, cols = prepare_matrix(X)
    st = starts.data_start(model, np.random.default_rng(11), I, J, rows, cols, T=T)
    rng = np.random.default_rng(11)
    seed_svd, seed_nmf = (int(v) for v in rng.integers(0, 2 ** 31 - 1, size=2))
    Xc = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(I, J))
    K = min(max(starts.choose_rank(Xc, seed=seed_svd)[0], starts.K_FLOOR), T or rows.size, min(I, J))
    W, H, _ = starts.kl_nmf(Xc, K, seed_nmf)
    ref = starts.factors_state(model, W, H, I, J, rows, cols, T=T)
    assert st.keys() == ref.keys() and all(np.array_equal(st[n], ref[n]) for n in st)


@pytest.mark.parametrize("model,T", ALL)
def test_labels_start_seats_the_groups(planted, model, T):
    """init=<labels> on the planted partition (fold 0, pairs and diagonal missing): one atom per
    group, every within-group one at its group's atom, a valid state, no random draw."""
    A, blocks, (X, test, mask) = planted
    T = None if T is None else 20
    I, J, rows, cols = prepare_matrix(X)
    m = sp.coo_matrix(mask)
    missing = (m.row.astype(np.int64), m.col.astype(np.int64))
    st = starts.labels_start(model, blocks, I, J, rows, cols, T=T, missing=missing, symmetric=True)
    assert _check_valid(model, T, st, I, J, rows.size) == 12
    inside = blocks[rows] == blocks[cols]
    if model == "IDEPM":
        z = st["z"]
        for g in range(12):
            assert np.unique(z[inside & (blocks[rows] == g)]).size == 1
        assert np.unique(z[inside]).size == 12
    else:
        R = st["phi"] if model == "DEPM" else st["U"]
        assert np.allclose(R, st["psi"] if model == "DEPM" else st["V"])       # one factor (symmetric)
        dom = R[:, :12].argmax(axis=1)                                         # each node's atom: its group
        assert all(np.unique(dom[blocks == g]).size == 1 for g in range(12))
        assert np.unique(dom).size == 12
    again = starts.labels_start(model, list(blocks + 5), I, J, rows, cols, T=T, missing=missing, symmetric=True)
    assert all(np.array_equal(st[n], again[n]) for n in st)     # labels relabelled 0..G-1, no draw
    r = fit(X, model, T=T, n_iter=4, n_avg=2, test=test, mask=mask, symmetric=True, init=blocks, seed=1)
    s = fit(X, model, T=T, n_iter=4, n_avg=2, test=test, mask=mask, symmetric=True, init=blocks, seed=1)
    assert r.settings["init"] == "labels" and r.settings["K_init"] is None
    assert r.settings["K_start"] == 12 and np.array_equal(r.K, s.K) and np.array_equal(r.M, s.M)


def test_labels_start_bipartite_ml_partner():
    """Bipartite X: H is the maximum-likelihood partner of the one-hot W (the mean of each group's
    rows per column), so the DEPM's lambda_g psi_jg is the count of group g's ones in column j."""
    X = small(seed=6, I=12, J=9)
    labels = np.repeat([0, 1, 2], 4)
    I, J, rows, cols = prepare_matrix(X)
    st = starts.labels_start("DEPM", labels, I, J, rows, cols, T=5)
    counts = np.stack([X[labels == g].sum(axis=0) for g in range(3)])      # (3, J)
    assert np.allclose(st["lam"][:3, None] * st["psi"][:, :3].T, counts)
    assert np.allclose(st["phi"][:, :3], np.eye(3)[labels] / 4)
    assert np.all(st["lam"][3:] == 0)


def test_labels_start_errors():
    X = small()                         # 30 x 20
    ok = np.arange(30) % 3
    with pytest.raises(ValueError, match="init has 29 group labels; X has 30 rows"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, init=ok[:29])
    with pytest.raises(ValueError, match="one group label per row of X.*shape \\(30, 1\\)"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, init=ok[:, None])
    with pytest.raises(ValueError, match="one group label per row of X.*shape \\(0,\\)"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, init=[])
    with pytest.raises(ValueError, match="integers >= 0, got -1"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, init=ok - 1)
    with pytest.raises(ValueError, match="integer group labels >= 0, got dtype float64"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, init=ok + 0.5)
    with pytest.raises(ValueError, match="integer group labels >= 0, got dtype bool"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, init=ok > 0)
    with pytest.raises(ValueError, match="integer group labels >= 0, got dtype <U"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, init=["a"] * 30)
    with pytest.raises(ValueError, match="init has 3 groups, more than the truncation level T = 2"):
        fit(X, "EPM", T=2, n_iter=2, n_avg=1, init=ok)
    with pytest.raises(ValueError, match="K_init must not be given"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, init=ok, K_init=3)
    r = fit(X, "DEPM", T=4, n_iter=2, n_avg=1, init=ok.astype(float))      # whole numbers as floats: fine
    assert r.settings["init"] == "labels" and r.settings["K_start"] == 3
    with pytest.raises(ValueError, match="init must not be given"):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, resume=r, init=ok)


def test_floor_on_the_number_of_atoms():
    """The edge sees one or two atoms on the karate club less a tenth of its pairs (chapter 30's
    fold 0); the data's start gives the sampler K_FLOOR = 4 NMF atoms there, a given K is kept, T
    caps the floor, and where the edge counts more (the planted partition) nothing changes."""
    A = sp.csr_matrix(nx.to_scipy_sparse_array(nx.karate_club_graph()) > 0).astype(np.int8)
    fold = pair_folds(A.shape, n_folds=10, seed=2017, symmetric=True)[0]
    X, test, mask = hold_out(A, fold, symmetric=True)
    assert starts.choose_rank(X, symmetric=True)[0] <= 2 and starts.K_FLOOR == 4
    I, J, rows, cols = prepare_matrix(X)
    m = sp.coo_matrix(mask)
    missing = (m.row.astype(np.int64), m.col.astype(np.int64))
    for model, T in ALL:
        T = None if T is None else 32
        st = starts.data_start(model, np.random.default_rng(0), I, J, rows, cols, T=T, missing=missing, symmetric=True)
        K = _check_valid(model, T, st, I, J, rows.size)
        assert K == 4 if model != "IDEPM" else 2 <= K <= 4       # the IDEPM: atoms some one chose
        one = starts.data_start(model, np.random.default_rng(0), I, J, rows, cols, T=T, missing=missing,
                                symmetric=True, K=1)
        assert _check_valid(model, T, one, I, J, rows.size) == 1
    st = starts.data_start("DEPM", np.random.default_rng(0), I, J, rows, cols, T=3, missing=missing, symmetric=True)
    assert _check_valid("DEPM", 3, st, I, J, rows.size) == 3
    r = fit(X, "EPM", T=32, n_iter=3, n_avg=1, test=test, mask=mask, symmetric=True)
    assert r.settings["init"] == "data" and r.settings["K_start"] == 4


def test_floor_leaves_larger_ranks_alone(planted):
    A, _, (X, _, mask) = planted
    I, J, rows, cols = prepare_matrix(X)
    m = sp.coo_matrix(mask)
    K, _ = starts.choose_rank(X, symmetric=True, seed=int(np.random.default_rng(0).integers(0, 2 ** 31 - 1)))
    st = starts.data_start("DEPM", np.random.default_rng(0), I, J, rows, cols, T=40,
                           missing=(m.row.astype(np.int64), m.col.astype(np.int64)), symmetric=True)
    assert K > starts.K_FLOOR and np.count_nonzero(st["lam"]) == K


@pytest.mark.parametrize("model,T", [m for m in ALL if m[1] is not None])
@pytest.mark.parametrize("K_init", [None, 3])
def test_scaled_start_expects_the_ones_of_X(model, T, K_init):
    """init="scaled": the paper's state draw for draw (same factors, same atoms with mass), its
    lambda multiplied so that the model's expected count equals the ones of X; "paper" expects
    I J counts from the EPM and CEPM, one from the DEPM."""
    X = small()
    I, J, rows, cols = prepare_matrix(X)
    paper = init_state(model, np.random.default_rng(4), I, J, rows, cols, T=T, K_init=K_init, init="paper")
    scaled = init_state(model, np.random.default_rng(4), I, J, rows, cols, T=T, K_init=K_init, init="scaled")
    R, C = ("phi", "psi") if model == "DEPM" else ("U", "V")

    def expected(st):
        return float(st["lam"] @ (st[R].sum(axis=0) * st[C].sum(axis=0)))
    for n in (R, C, "h"):
        assert np.array_equal(paper[n], scaled[n])
    assert np.array_equal(paper["lam"] > 0, scaled["lam"] > 0)
    assert np.count_nonzero(scaled["lam"]) == (T if K_init is None else K_init)
    assert expected(scaled) == pytest.approx(rows.shape[0], rel=1e-12)
    if model == "DEPM":
        assert expected(paper) == pytest.approx(1.0)
    else:                                   # U, V of mean 1, mass 1 in all: about I J counts
        assert 0.5 * I * J < expected(paper) < 2 * I * J
    assert _check_valid(model, T, scaled, I, J, rows.shape[0]) == np.count_nonzero(paper["lam"])
    r = fit(X, model, T=T, n_iter=3, n_avg=1, seed=4, init="scaled", K_init=K_init)
    assert r.settings["init"] == "scaled" and r.settings["K_start"] == np.count_nonzero(paper["lam"])


def test_scaled_start_is_for_truncated_models():
    with pytest.raises(ValueError, match="unknown init 'scaled' for the IDEPM.*'random', 'data'"):
        fit(small(), "IDEPM", init="scaled")
    with pytest.raises(ValueError, match="X has no ones"):          # refused before any start is drawn
        fit(np.zeros((4, 3), dtype=np.int8), "EPM", T=3, init="scaled")
