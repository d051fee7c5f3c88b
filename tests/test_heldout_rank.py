"""epm_lib.heldout_rank and fit(init="data", rank=...): the data's start's number of atoms by held-out
likelihood (issue 30, item 1)."""
import numpy as np
import pytest
import scipy.sparse as sp

from epm_lib import fit, starts
from epm_lib.example_networks import planted_partition
from epm_lib.experiments import hold_out, pair_folds
from epm_lib.fit import init_state, prepare_matrix
from epm_lib.fit_data import mask_entries
from epm_lib.heldout_rank import STEPS_ABOVE, check_rank, heldout_loglik, heldout_rank, heldout_split


@pytest.fixture(scope="module")
def small_groups():
    """24 groups of 6 nodes, p_in 0.5, p_out 0.005 (231 edges): every group below the spectral noise edge."""
    A, blocks = planted_partition(24, 6, 0.5, 0.005, seed=1)
    return A, blocks


def _missing(mask, shape):
    mk = mask_entries(mask, shape)
    return mk // shape[1], mk % shape[1]


def test_finds_the_small_groups_the_spectrum_misses(small_groups):
    A, blocks = small_groups
    k_spec, _ = starts.choose_rank(A, symmetric=True)
    assert k_spec < starts.K_FLOOR                    # the spectral rule's floor: 4 atoms
    K, info = heldout_rank(A, symmetric=True, seed=0)
    assert info["grid"][:3] == [4, 8, 16] and info["k_spectral"] == k_spec
    assert 16 <= K <= 40                              # 24 true groups; the grid is 4, 8, 16, 32, 40
    assert info["scores"][K] > info["scores"][4]
    assert set(info["scores"]) == {4, 8, 16, 32, 40}  # the whole grid scored
    # the largest K within one standard error of the best; "best" takes the best itself
    assert info["best"] <= K and info["scores"][K] >= info["scores"][info["best"]] - info["se"][K]
    grid = list(info["scores"])
    assert grid.index(K) - grid.index(info["best"]) <= STEPS_ABOVE
    assert all(info["scores"][k] < info["scores"][info["best"]] - info["se"][k]
               or grid.index(k) - grid.index(info["best"]) > STEPS_ABOVE for k in grid if k > K)
    best, _ = heldout_rank(A, symmetric=True, seed=0, select="best")
    assert best == info["best"]


def test_deterministic(small_groups):
    A, _ = small_groups
    X, test, mask = hold_out(A, pair_folds(A.shape, 5, 0, symmetric=True)[0], symmetric=True)
    miss = _missing(mask, X.shape)
    a = heldout_rank(X, missing=miss, symmetric=True, seed=3, n_splits=1, grid=[4, 8])
    b = heldout_rank(X, missing=miss, symmetric=True, seed=3, n_splits=1, grid=[4, 8])
    assert a[0] == b[0] and a[1]["scores"] == b[1]["scores"]


def test_split_respects_missing_and_symmetry(small_groups):
    A, _ = small_groups
    X, test, mask = hold_out(A, pair_folds(A.shape, 5, 0, symmetric=True)[0], symmetric=True)
    I, J = X.shape
    mr, mc = _missing(mask, X.shape)
    miss = set((np.minimum(mr, mc) * J + np.maximum(mr, mc)).tolist())
    splits, sizes = heldout_split(X, 3, 0, missing=(mr, mc), symmetric=True, fraction=0.1)
    assert len(splits) == 3
    Xd = sp.csr_matrix(X).toarray()
    seen = set()
    for ones, zeros, w0 in splits:
        for keys, value in ((ones, 1), (zeros, 0)):
            r, c = keys // J, keys % J
            assert np.all(r <= c)                                  # pairs, each once
            assert np.all(Xd[r, c] == value)
            assert not (set(keys.tolist()) & miss)                 # never a missing entry
            assert not (set(keys.tolist()) & seen)                 # the splits are disjoint
            seen |= set(keys.tolist())
        assert ones.size == sizes["held_ones"] and zeros.size == sizes["held_zeros"]
        assert w0 == pytest.approx(1.0, rel=0.05)                  # stratified: the same fraction of each
    assert sizes["held_ones"] == round(0.1 * sizes["n_ones"])
    n_pairs = I * (I + 1) // 2
    assert sizes["n_zeros"] == n_pairs - sizes["n_ones"] - len(miss)


def test_missing_entries_are_left_out_of_the_fits(small_groups):
    """A missing entry is neither scored nor fitted: the rule on X with a missing block gives the same
    choice whatever X holds there (X's ones under the block removed by hand, and the block missing)."""
    A, _ = small_groups
    X = sp.lil_matrix(A.astype(np.float64))
    rows = np.repeat(np.arange(10), 10)
    cols = np.tile(np.arange(20, 30), 10)
    keys = np.unique(np.concatenate([rows * A.shape[1] + cols, cols * A.shape[1] + rows]))
    mr, mc = keys // A.shape[1], keys % A.shape[1]
    X[mr, mc] = 0
    X = sp.csr_matrix(X)
    with pytest.raises(ValueError, match="missing entry"):
        heldout_rank(A, missing=(mr, mc), symmetric=True, seed=0, n_splits=1, grid=[4, 8])
    a = heldout_rank(X, missing=(mr, mc), symmetric=True, seed=0, n_splits=1, grid=[4, 8], patience=None)
    # one direction listed only: symmetrised inside, the same rule
    upper = mr <= mc
    b = heldout_rank(X, missing=(mr[upper], mc[upper]), symmetric=True, seed=0, n_splits=1, grid=[4, 8],
                     patience=None)
    assert a[1]["scores"] == b[1]["scores"]


def test_loglik_shrinks_toward_the_background():
    W = np.array([[1.0, 0.0], [0.0, 1.0]])
    H = np.array([[1.0, 0.0], [0.0, 1.0]])
    ones = np.array([0 * 2 + 1])              # (0, 1): rate 0 under W H
    zeros = np.array([0 * 2 + 0])             # (0, 0): rate 1
    raw, eps0 = heldout_loglik(W, H, ones, zeros, 2)
    assert eps0 == 0.0 and raw < -300        # (ln 1e-300 - 1) / 2
    ll, eps = heldout_loglik(W, H, ones, zeros, 2, background=0.5)
    assert 0 < eps <= 1 and ll > raw


def test_grid_stops_at_the_cap_and_costs_nothing_there():
    X = (np.random.default_rng(0).random((30, 20)) < 0.3).astype(np.int8)
    K, info = heldout_rank(X, seed=0, T=3)
    assert K == 3 and info["grid"] == [3] and info["scores"] == {}
    K, info = heldout_rank(X, seed=0, k_start=8, k_cap=8)
    assert K == 8 and info["scores"] == {}


@pytest.mark.parametrize("bad,match", [
    (dict(fraction=0.0), "fraction"), (dict(fraction=0.7), "fraction"), (dict(seed=-1), "seed"),
    (dict(seed=1.5), "seed"), (dict(T=0), "T"), (dict(k_cap=True), "k_cap"), (dict(grid=[8, 4]), "grid"),
    (dict(grid=[]), "grid"), (dict(patience=0), "patience"), (dict(symmetric=1), "symmetric"),
    (dict(missing=([0], [99])), "outside"), (dict(n_splits=0), "n_splits"), (dict(select="max"), "select"),
])
def test_bad_input(bad, match):
    X = (np.random.default_rng(0).random((30, 20)) < 0.3).astype(np.int8)
    with pytest.raises(ValueError, match=match):
        heldout_rank(X, **bad)


def test_bad_matrices():
    with pytest.raises(ValueError, match="binary"):
        heldout_rank(np.full((5, 5), 2.0))
    with pytest.raises(ValueError, match="symmetric"):
        heldout_rank(np.triu(np.ones((6, 6), dtype=np.int8), 1), symmetric=True)
    with pytest.raises(ValueError, match="too few"):
        heldout_rank(np.zeros((6, 6), dtype=np.int8))


@pytest.mark.parametrize("rank", ["foo", 0, -2, True, 1.5, "Heldout"])
def test_fit_rejects_bad_rank(rank):
    X = (np.random.default_rng(0).random((20, 15)) < 0.3).astype(np.int8)
    with pytest.raises(ValueError, match="rank must be"):
        fit(X, "DEPM", T=8, n_iter=2, n_avg=1, rank=rank)
    with pytest.raises(ValueError, match="rank must be"):
        check_rank(rank)


def test_fit_rank_needs_the_data_start():
    X = (np.random.default_rng(0).random((20, 15)) < 0.3).astype(np.int8)
    with pytest.raises(ValueError, match="needs init='data'"):
        fit(X, "DEPM", T=8, n_iter=2, n_avg=1, init="paper", rank="heldout")
    with pytest.raises(ValueError, match="needs init='data'"):
        fit(X, "IDEPM", n_iter=2, n_avg=1, init=np.zeros(20, dtype=int), rank=5)
    with pytest.raises(ValueError, match="K_init must not be given"):
        fit(X, "DEPM", T=8, n_iter=2, n_avg=1, K_init=3, rank="heldout")
    r = fit(X, "DEPM", T=8, n_iter=2, n_avg=1)
    with pytest.raises(ValueError, match="rank must not be given"):
        fit(X, "DEPM", T=8, n_iter=2, n_avg=1, resume=r, rank="heldout")
    I, J, rows, cols = prepare_matrix(X)
    with pytest.raises(ValueError, match="not both"):
        starts.data_start("DEPM", np.random.default_rng(0), I, J, rows, cols, T=8, K=3, rank="heldout")


def test_fit_records_the_rule_and_a_forced_rank():
    X = (np.random.default_rng(1).random((25, 18)) < 0.3).astype(np.int8)
    r = fit(X, "DEPM", T=12, n_iter=3, n_avg=1, rank=7)
    assert r.settings["rank"] == 7 and r.settings["K_start"] == 7 and r.settings["init"] == "data"
    d = fit(X, "DEPM", T=12, n_iter=3, n_avg=1)
    assert "rank" not in d.settings               # the default records what it always did


def test_same_K_same_chain():
    """Both rules draw the same seeds from the chain's generator: where they choose the same K
    (here T = 4 caps both), the chain is the same, draw for draw."""
    X = (np.random.default_rng(2).random((25, 18)) < 0.3).astype(np.int8)
    for model, T in (("DEPM", 4), ("EPM", 4)):
        a = fit(X, model, T=T, n_iter=5, n_avg=2, seed=3)
        b = fit(X, model, T=T, n_iter=5, n_avg=2, seed=3, rank="heldout")
        assert np.array_equal(a.K, b.K) and np.array_equal(a.M, b.M)
        assert all(np.array_equal(a.hyper[n], b.hyper[n]) for n in a.hyper)
        assert np.array_equal(a.state["lam"], b.state["lam"])


def test_data_start_heldout_on_small_groups(small_groups):
    """fit(rank="heldout") on the masked network: the start has the held-out rule's atoms, more than the
    spectral floor, and the state is valid."""
    A, _ = small_groups
    X, test, mask = hold_out(A, pair_folds(A.shape, 5, 0, symmetric=True)[0], symmetric=True)
    I, J, rows, cols = prepare_matrix(X)
    mr, mc = _missing(mask, X.shape)
    keys = np.unique(np.concatenate([mr * J + mc, mc * J + mr]))
    st = init_state("DEPM", np.random.default_rng(0), I, J, rows, cols, T=50, init="data",
                    missing=(keys // J, keys % J), symmetric=True, rank="heldout")
    K = int(np.count_nonzero(st["lam"]))
    spec = init_state("DEPM", np.random.default_rng(0), I, J, rows, cols, T=50, init="data",
                      missing=(keys // J, keys % J), symmetric=True)
    assert int(np.count_nonzero(spec["lam"])) == starts.K_FLOOR
    assert K > starts.K_FLOOR
    assert np.allclose(st["phi"].sum(axis=0), 1) and np.all(np.isfinite(st["h"]))
