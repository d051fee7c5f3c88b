"""epm_lib.baselines: the degree-product and truncated-SVD baselines, checked by hand on 3x3
matrices, on the toy example's fold 0 (SVD beats popularity) and on MovieLens100K (runs)."""
import math
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from epm_lib import baselines as bl
from epm_lib import datasets
from epm_lib import experiments as ex
from epm_lib.fit import missing_mask
from epm_lib.metrics import bernoulli_tdll, tdauc_pr

X3 = np.array([[1, 1, 0],
               [0, 1, 0],
               [0, 0, 1]])


@pytest.fixture(scope="module")
def toy_fold():
    X = datasets.load("toy90").X
    X_train, test = ex.split(X, ex.cv_fold(X.shape, 0, 10, 0))
    return X, X_train, test


def _all_entries(I, J):
    r, c = np.divmod(np.arange(I * J), J)
    return r, c


# ---------------------------------------------------------------------------------------------
# popularity
# ---------------------------------------------------------------------------------------------
def test_popularity_hand_computed():
    # row degrees 2, 1, 1; column degrees 1, 2, 1; D = 4; pseudo s = 0.5 on every degree and
    # the normaliser D + s (I + J) / 2 = 4 + 0.5 * 3 = 5.5
    rows, cols = np.array([0, 0, 2, 1]), np.array([2, 0, 1, 1])
    p = bl.popularity(X3, rows, cols)
    expected = [1 - math.exp(-(2 + .5) * (1 + .5) / 5.5),
                1 - math.exp(-(2 + .5) * (1 + .5) / 5.5),
                1 - math.exp(-(1 + .5) * (2 + .5) / 5.5),
                1 - math.exp(-(1 + .5) * (2 + .5) / 5.5)]
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    # without smoothing it is the degree product 1 - exp(-d_i d_j / D)
    p0 = bl.popularity(X3, rows, cols, pseudo=1e-12)
    np.testing.assert_allclose(p0, [1 - math.exp(-2 * 1 / 4), 1 - math.exp(-2 * 1 / 4),
                                    1 - math.exp(-1 * 2 / 4), 1 - math.exp(-1 * 2 / 4)], rtol=1e-9)


def test_popularity_zero_degree_row_gets_the_pseudo_count():
    X = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0]])     # row 1 has no ones
    # d_row = 2, 0, 1; d_col = 2, 1, 0; D = 3; normaliser 3 + 0.5 * 3 = 4.5
    p = bl.popularity(X, [1, 1], [0, 2])
    np.testing.assert_allclose(p, [1 - math.exp(-0.5 * 2.5 / 4.5), 1 - math.exp(-0.5 * 0.5 / 4.5)])
    assert np.all((p > 0) & (p < 1))


def test_popularity_mask_hand_computed_dense_and_sparse():
    # unobserved: the zeros (0, 2) and (2, 0); degrees d_row = 2, 1, 1 and d_col = 1, 2, 1
    mask = np.zeros((3, 3), bool)
    mask[0, 2] = mask[2, 0] = True
    # observed entries per row 2, 3, 2 -> degrees 2 * 3/2, 1, 1 * 3/2
    # observed entries per column 2, 3, 2 -> degrees 1 * 3/2, 2, 1 * 3/2
    # D = 4 ones among 7 observed of 9 entries -> 4 * 9 / 7; normaliser D + 0.5 * (3 + 3) / 2
    d_row, d_col, D = [3.0, 1.0, 1.5], [1.5, 2.0, 1.5], 36 / 7
    rows, cols = np.array([0, 2, 1, 0]), np.array([2, 0, 0, 1])
    expected = [1 - math.exp(-(d_row[i] + .5) * (d_col[j] + .5) / (D + 1.5)) for i, j in zip(rows, cols)]
    np.testing.assert_allclose(bl.popularity(X3, rows, cols, mask=mask), expected, rtol=1e-12)
    np.testing.assert_allclose(bl.popularity(sp.csr_matrix(X3), rows, cols, mask=sp.csr_matrix(mask)),
                               expected, rtol=1e-12)
    np.testing.assert_allclose(bl.popularity(X3, rows, cols, mask=mask.astype(np.int8)), expected, rtol=1e-12)
    np.testing.assert_allclose(bl.popularity(X3, rows, cols, mask=missing_mask((3, 3), [0, 2], [2, 0])),
                               expected, rtol=1e-12)


def test_popularity_fully_masked_row_keeps_the_pseudo_count():
    X = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 0]])
    mask = np.zeros((3, 3), bool)
    mask[2] = True
    # row 2 unobserved: d_row = 2, 2, 0; observed entries per column 2, 2, 2 -> d_col = 1.5, 3, 1.5
    # D = 4 ones among 6 observed -> 4 * 9 / 6 = 6; normaliser 6 + 1.5
    p = bl.popularity(X, [2, 1], [1, 1], mask=mask)
    np.testing.assert_allclose(p, [1 - math.exp(-0.5 * 3.5 / 7.5), 1 - math.exp(-2.5 * 3.5 / 7.5)])


# ---------------------------------------------------------------------------------------------
# truncated SVD
# ---------------------------------------------------------------------------------------------
XB = np.array([[1, 1, 0],
               [1, 1, 0],
               [0, 0, 1]])     # singular values 2 (the 2x2 block) and 1 (the single one)


@pytest.mark.slow
def test_svd_scores_hand_computed():
    r, c = _all_entries(3, 3)
    # rank 1: the 2x2 block of ones; rank 2: the matrix itself
    _, s1 = bl.svd_scores(XB, r, c, k=1, calibration="train", return_scores=True)
    np.testing.assert_allclose(s1.reshape(3, 3), [[1, 1, 0], [1, 1, 0], [0, 0, 0]], atol=1e-9)
    _, s2 = bl.svd_scores(XB, r, c, k=2, calibration="train", return_scores=True)
    np.testing.assert_allclose(s2.reshape(3, 3), XB, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("calibrator", bl.CALIBRATORS)
def test_svd_calibration_hand_computed(calibrator):
    # calibration on the training entries (all four zeros enumerated, weight 1) of the rank-1
    # scores: at score 0 lie the one (2, 2) and the four zeros, so p = 1/5; at score 1 only
    # ones: p -> 1
    p = bl.svd_scores(XB, [2, 0, 1], [0, 2, 1], k=1, calibration="train", calibrator=calibrator)
    np.testing.assert_allclose(p[:2], [0.2, 0.2], atol=1e-4)
    assert p[2] > 0.999
    assert np.all((p > 0) & (p < 1))


@pytest.mark.slow
def test_monotone_calibration_keeps_the_ranking_and_beats_platt_on_tdll(toy_fold):
    _, X_train, (r, c, lab) = toy_fold
    p, s = bl.svd_scores(X_train, r, c, k=8, return_scores=True)
    assert np.all(np.diff(p[np.argsort(s, kind="stable")]) >= 0)      # non-decreasing in s
    assert tdauc_pr(lab, p) == pytest.approx(tdauc_pr(lab, s), abs=1e-12)
    p_platt = bl.svd_scores(X_train, r, c, k=8, calibrator="logistic")
    assert bernoulli_tdll(lab, p) > bernoulli_tdll(lab, p_platt)


@pytest.mark.slow
@pytest.mark.parametrize("calibrator", bl.CALIBRATORS)
def test_svd_train_calibration_matches_the_density_in_the_large(calibrator):
    # maximum likelihood with a free intercept: the mean probability over the calibration set
    # (all entries of the training matrix when the zeros are enumerated) equals the density
    X = datasets.load("toy90").X
    r, c = _all_entries(*X.shape)
    p = bl.svd_scores(X, r, c, k=4, calibration="train", calibrator=calibrator, n_neg=10**6)
    assert p.mean() == pytest.approx(X.nnz / (X.shape[0] * X.shape[1]), rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["holdout", "train"])
@pytest.mark.parametrize("calibrator", bl.CALIBRATORS)
def test_svd_deterministic_and_in_unit_interval(toy_fold, calibration, calibrator):
    _, X_train, (r, c, _) = toy_fold
    p1 = bl.svd_scores(X_train, r, c, k=8, seed=3, calibration=calibration, calibrator=calibrator)
    p2 = bl.svd_scores(X_train, r, c, k=8, seed=3, calibration=calibration, calibrator=calibrator)
    np.testing.assert_array_equal(p1, p2)
    assert p1.dtype == np.float64 and p1.shape == r.shape
    assert np.all((p1 > 0) & (p1 < 1))
    # dense input gives the same probabilities as sparse input
    p3 = bl.svd_scores(X_train.toarray(), r, c, k=8, seed=3, calibration=calibration,
                       calibrator=calibrator)
    np.testing.assert_allclose(p1, p3, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_select_k_deterministic(toy_fold):
    _, X_train, _ = toy_fold
    k1, ap1 = bl.select_k(X_train, seed=0, return_scores=True)
    k2, ap2 = bl.select_k(X_train, seed=0, return_scores=True)
    assert k1 == k2 and ap1 == ap2
    assert k1 in bl.DEFAULT_KS and set(ap1) == set(bl.DEFAULT_KS)
    # ranks not below min(I, J) are dropped
    assert set(bl.select_k(X_train, ks=(2, 4, 90, 200), return_scores=True)[1]) == {2, 4}


# ---------------------------------------------------------------------------------------------
# scoring on held-out entries
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_toy90_svd_beats_popularity(toy_fold):
    X, X_train, test = toy_fold
    res = bl.score_baselines(X_train, test, seed=0)
    assert set(res) == {"popularity", f"svd-k{bl.DEFAULT_K}", "svd-auto"}
    for name, r in res.items():
        assert all(math.isfinite(r[m]) for m in ("tdll", "tdauc_pr", "auc_roc")), name
        assert 0 <= r["tdauc_pr"] <= 1 and 0 <= r["auc_roc"] <= 1
    pop = res["popularity"]
    for name in (f"svd-k{bl.DEFAULT_K}", "svd-auto"):
        assert res[name]["tdauc_pr"] > pop["tdauc_pr"] + 0.1, res
        assert res[name]["auc_roc"] > pop["auc_roc"], res
        assert res[name]["tdll"] > pop["tdll"], res
    # the same seed gives the same scores
    assert bl.score_baselines(X_train, test, seed=0) == res


def test_masked_test_entries(toy_fold):
    # the test entries declared unobserved (fit's convention): scores finite, the SVD's ranking
    # unchanged (the factorised matrix is the same), the popularity's degrees rescaled
    X, X_train, test = toy_fold
    mask = missing_mask(X.shape, test[0], test[1])
    a = bl.score_baselines(X_train, test, mask=mask, k=8)
    b = bl.score_baselines(X_train, test, k=8)
    assert a == bl.score_baselines(X_train, test, mask=mask.toarray(), k=8)
    assert a["svd-k8"]["tdauc_pr"] == pytest.approx(b["svd-k8"]["tdauc_pr"], abs=1e-9)
    assert a["popularity"]["tdll"] != b["popularity"]["tdll"]
    assert all(math.isfinite(v) for r in a.values() for v in r.values())
    # the held-out ones of X under the mask: refused as by fit (an entry is observed or missing)
    with pytest.raises(ValueError, match="under the mask"):
        bl.score_baselines(X, test, mask=mask)
    # without the mask the held-out ones of X would leak: refused
    with pytest.raises(ValueError, match="ones of X_train"):
        bl.score_baselines(X, test)


def test_single_class_test_gives_nan_auc_roc():
    X = np.array([[1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]])
    res = bl.score_baselines(X, ([0, 1], [1, 2], [0, 0]), k=1)
    assert math.isnan(res["popularity"]["auc_roc"]) and math.isnan(res["popularity"]["tdauc_pr"])
    assert math.isfinite(res["popularity"]["tdll"])


@pytest.mark.slow
def test_sparse_path_does_not_densify():
    # a 6000 x 4000 matrix with 20000 ones: a dense float64 copy would take 192 MB; what the
    # baselines hold is O(ones + test entries + (I + J) k)
    rng = np.random.default_rng(0)
    I, J, n = 6000, 4000, 20000
    key = np.unique(rng.integers(0, I * J, n))
    X = sp.csr_matrix((np.ones(key.size, np.int8), (key // J, key % J)), shape=(I, J))
    tkey = np.setdiff1d(np.unique(rng.integers(0, I * J, 5000)), key)
    test = (tkey // J, tkey % J, np.zeros(tkey.size, np.int8))
    test[2][:10] = 1                                   # labels are not checked against X
    bl.score_baselines(X3, ([0], [2], [0]), k=1)       # imports scikit-learn outside the trace
    tracemalloc.start()
    try:
        res = bl.score_baselines(X, test, k=8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(math.isfinite(v) for r_ in res.values() for v in r_.values())
    assert peak < 0.1 * I * J * 8, f"peak {peak / 2**20:.1f} MB"


@pytest.mark.slow
def test_movielens100k_runs():
    try:
        X = datasets.load("movielens100k").X
    except datasets.DataError as e:
        pytest.skip(f"MovieLens100K not available: {e}")
    X_train, test = ex.split(X, ex.cv_fold(X.shape, 0, 10, 0))
    res = bl.score_baselines(X_train, test, k=8)
    assert set(res) == {"popularity", "svd-k8"}
    for r in res.values():
        assert all(math.isfinite(v) for v in r.values())
        assert r["tdll"] < 0 and 0 < r["tdauc_pr"] < 1 and 0.5 < r["auc_roc"] < 1


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["popularity", "svd"])
def test_validation_errors(fn):
    def call(X=X3, rows=(0,), cols=(2,), **kw):
        if fn == "popularity":
            return bl.popularity(X, rows, cols, **kw)
        return bl.svd_scores(X, rows, cols, **{"k": 1, **kw})

    with pytest.raises(ValueError, match="2-d"):
        call(X=np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="binary"):
        call(X=np.array([[1, 2], [0, 1]]))
    with pytest.raises(ValueError, match="binary"):
        call(X=sp.csr_matrix(np.array([[1., .5], [0, 1]])))
    with pytest.raises(ValueError, match="same length"):
        call(rows=[0, 1], cols=[1])
    with pytest.raises(ValueError, match="1-d"):
        call(rows=[[0]], cols=[[1]])
    with pytest.raises(ValueError, match="out of range"):
        call(rows=[3], cols=[0])
    with pytest.raises(ValueError, match="out of range"):
        call(rows=[0], cols=[-1])
    with pytest.raises(ValueError, match="integer indices"):
        call(rows=[0.5], cols=[1])
    with pytest.raises(ValueError, match="shape of X"):
        call(mask=np.zeros((3, 4), bool))
    with pytest.raises(ValueError, match="shape of X"):
        call(mask=sp.csr_matrix((2, 3), dtype=bool))
    with pytest.raises(ValueError, match="under the mask"):
        call(mask=np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="boolean"):
        call(mask=np.full((3, 3), 2))
    with pytest.raises(ValueError, match="every entry"):
        call(mask=np.ones((3, 3), bool))


@pytest.mark.parametrize("k", [0, -1, 3, 5, 1.5, True])
def test_svd_rank_out_of_range(k):
    with pytest.raises(ValueError, match="1 <= k < min"):
        bl.svd_scores(X3, [0], [2], k=k)


def test_other_argument_errors():
    with pytest.raises(ValueError, match="pseudo"):
        bl.popularity(X3, [0], [2], pseudo=0)
    with pytest.raises(ValueError, match="calibration"):
        bl.svd_scores(X3, [0], [2], k=1, calibration="isotonic")
    with pytest.raises(ValueError, match="calibrator"):
        bl.svd_scores(X3, [0], [2], k=1, calibrator="isotonic")
    with pytest.raises(ValueError, match="n_pieces"):
        bl.svd_scores(X3, [0], [2], k=1, n_pieces=0)
    with pytest.raises(ValueError, match="holdout"):
        bl.svd_scores(X3, [0], [2], k=1, holdout=1.0)
    with pytest.raises(ValueError, match="no rank"):
        bl.select_k(X3, ks=(3, 4))
    with pytest.raises(ValueError, match="sequence of integers"):
        bl.select_k(X3, ks=(1, 1.5))
    with pytest.raises(ValueError, match="sequence of integers"):
        bl.select_k(X3, ks=2)
    with pytest.raises(ValueError, match="'auto'"):
        bl.score_baselines(X3, ([0], [2], [0]), k=1.5)
    with pytest.raises(ValueError, match="ones of X_train"):
        bl.score_baselines(X3, ([0], [0], [1]), k=1)
    with pytest.raises(ValueError, match="tuple"):
        bl.score_baselines(X3, ([0], [2]), k=1)
    with pytest.raises(ValueError, match="labels"):
        bl.score_baselines(X3, ([0, 1], [2, 0], [1]), k=1)
    with pytest.raises(ValueError, match="0 or 1"):
        bl.score_baselines(X3, ([0], [2], [2]), k=1)
    with pytest.raises(ValueError, match="more than once"):
        bl.score_baselines(X3, ([0, 0], [2, 2], [0, 1]), k=1)
    with pytest.raises(ValueError, match="'auto'"):
        bl.score_baselines(X3, ([0], [2], [0]), k="best")


# ------------------------------------------------------------------ undirected networks
def _network(n=30, p=0.15, seed=3):
    rng = np.random.default_rng(seed)
    U = np.triu((rng.random((n, n)) < p).astype(np.int8), 1)
    return sp.csr_matrix(U + U.T)


def test_pair_folds_partition_the_pairs_once():
    folds = ex.pair_folds((30, 30), n_folds=7, seed=1, symmetric=True)
    keys = np.concatenate([r * 30 + c for r, c in folds])
    r, c = np.triu_indices(30, 1)
    assert np.array_equal(np.sort(keys), r * 30 + c)                  # every pair i < j exactly once
    sizes = [f[0].size for f in folds]
    assert max(sizes) - min(sizes) <= 1
    again = ex.pair_folds((30, 30), n_folds=7, seed=1, symmetric=True)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(folds, again))
    bip = ex.pair_folds((5, 4), n_folds=3, seed=0)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(bip, ex.cv_folds((5, 4), 3, 0)))
    with pytest.raises(ValueError, match="square"):
        ex.pair_folds((4, 5), symmetric=True)


def test_hold_out_undirected():
    A = _network()
    fold = ex.pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)[2]
    X_train, (r, c, y), mask = ex.hold_out(A, fold, symmetric=True)
    assert (X_train != X_train.T).nnz == 0                              # both directions zeroed
    assert np.all(np.asarray(X_train[r, c]).ravel() == 0) and np.all(np.asarray(X_train[c, r]).ravel() == 0)
    assert np.array_equal(y, np.asarray(A[r, c]).ravel()) and y.sum() > 0
    assert (A - X_train).nnz == 2 * y.sum()                             # nothing else removed
    M = mask.toarray()
    assert M[r, c].all() and np.diag(M).all() and M.sum() == r.size + A.shape[0]
    _, _, m2 = ex.hold_out(A, fold, symmetric=True, diagonal=False)
    assert m2.sum() == r.size
    with pytest.raises(ValueError, match="symmetric X"):
        ex.hold_out(sp.csr_matrix(np.triu(A.toarray())), fold, symmetric=True)
    with pytest.raises(ValueError, match="held out once"):
        ex.hold_out(A, (np.r_[fold[0], fold[1][:1]], np.r_[fold[1], fold[0][:1]]), symmetric=True)


def test_symmetric_baselines_average_both_directions():
    """symmetric=True: a pair is scored by (p_ij + p_ji)/2 with the mask symmetrised -- the same
    numbers as scoring both directions by hand; the pair's orientation does not matter."""
    A = _network(40, 0.2, seed=5)
    fold = ex.pair_folds(A.shape, n_folds=4, seed=0, symmetric=True)[0]
    X_train, test, mask = ex.hold_out(A, fold, symmetric=True)
    r, c, y = test
    got = bl.score_baselines(X_train, test, mask=mask, seed=0, k=4, symmetric=True)
    both = mask.maximum(mask.T)
    for name, fn in (("popularity", lambda a, b: bl.popularity(X_train, a, b, mask=both)),
                     ("svd-k4", lambda a, b: bl.svd_scores(X_train, a, b, k=4, mask=both, seed=0))):
        p = 0.5 * (fn(r, c) + fn(c, r))
        assert got[name]["tdll"] == pytest.approx(bernoulli_tdll(y, p), rel=1e-12, abs=1e-15)
        assert got[name]["tdauc_pr"] == pytest.approx(tdauc_pr(y, p), rel=1e-12)
    flipped = bl.score_baselines(X_train, (c, r, y), mask=mask, seed=0, k=4, symmetric=True)
    for name in got:
        assert flipped[name]["tdll"] == pytest.approx(got[name]["tdll"], rel=1e-12)
    with pytest.raises(ValueError, match="symmetric X"):
        bl.score_baselines(sp.csr_matrix(np.triu(X_train.toarray())), test, symmetric=True, k=4)
    with pytest.raises(ValueError, match="more than once"):
        bl.score_baselines(X_train, (np.r_[r, c[:1]], np.r_[c, r[:1]], np.r_[y, y[:1]]), k=4,
                           symmetric=True)
