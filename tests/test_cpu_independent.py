"""The SVD baseline gives the same numbers on every CPU and BLAS (project issue 19).

The truncated SVD's factors come out of BLAS (scikit-learn's randomized SVD: matrix products,
QR, LU), whose kernels and summation order differ between CPU families and thread counts, so
they differ in their last bits from one machine to another. A CPU is emulated here by
multiplying the factors by ``1 + 1e-15 * noise`` (a few units in the last place, what another
BLAS does): the baseline snaps its scores onto a power-of-two grid (``baselines._snap``), so
that scores equal in exact arithmetic are exact ties whatever the rounding, and the scores, the
rank chosen, TDAUC-PR and AUC-ROC must come out bit for bit the same. Without the grid the same
perturbations change the ranking metrics of Les Miserables (structurally equivalent characters,
and both directions of each pair), as OPENBLAS_CORETYPE=Haswell did to chapter 30.

TDLL and the probabilities are compared to 1e-9: on this machine they are bit for bit the same
too, but one of the ~10^5 calibration scores of a run may, on some other CPU, lie within rounding
noise of a midpoint of the grid (about 1e-7 per score here), and the calibration map then moves
in its last digits -- which no printed TDLL (three decimals) can show, and which does not move a
rank (the map is increasing and applied to the same snapped scores).
"""
import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from epm_lib import baselines as bl
from epm_lib.experiments import hold_out, pair_folds

SEED = 2017
NOISE_SEEDS = range(4)


def _lesmis_folds(n=1):
    A = sp.csr_matrix((nx.to_scipy_sparse_array(nx.les_miserables_graph()) > 0).astype(np.int8))
    return [hold_out(A, fold, symmetric=True) for fold in pair_folds(A.shape, 10, SEED, symmetric=True)[:n]]


@pytest.fixture(scope="module")
def lesmis():
    return _lesmis_folds()


def _perturbed_factors(monkeypatch, noise_seed):
    """Every SVD's factors times (1 + 1e-15 * standard normal noise): the last bits of another
    CPU's BLAS."""
    real = bl._factors
    rng = np.random.default_rng(noise_seed)

    def factors(*args):
        US, V = real(*args)
        return (US * (1 + 1e-15 * rng.standard_normal(US.shape)),
                np.ascontiguousarray(V * (1 + 1e-15 * rng.standard_normal(V.shape))))
    monkeypatch.setattr(bl, "_factors", factors)


def _run(folds):
    out = []
    for X_train, test, miss in folds:
        for mask in (miss, None):
            out.append(bl.score_baselines(X_train, test, mask=mask, seed=SEED, k=(8, "auto"),
                                          symmetric=True))
    return out


def _assert_same(got, ref):
    """Ranks (TDAUC-PR, AUC-ROC) and chosen k bit for bit; TDLL to 1e-9 (see the module doc)."""
    assert [{n: set(v) for n, v in r.items()} for r in got] == [{n: set(v) for n, v in r.items()} for r in ref]
    for g, r in zip(got, ref):
        for name in r:
            assert {m: v for m, v in g[name].items() if m != "tdll"} == \
                   {m: v for m, v in r[name].items() if m != "tdll"}, name
            assert g[name]["tdll"] == pytest.approx(r[name]["tdll"], rel=0, abs=1e-9), name


def _svd_scores(folds, **kw):
    X_train, (rows, cols, _), miss = folds[0]
    return bl.svd_scores(X_train, rows, cols, k=8, mask=miss, seed=SEED, return_scores=True, **kw)


@pytest.mark.slow
def test_last_bits_of_the_factors_change_nothing(lesmis, monkeypatch):
    ref = _run(lesmis)
    p_ref, s_ref = _svd_scores(lesmis)
    for noise_seed in NOISE_SEEDS:
        with monkeypatch.context() as m:
            _perturbed_factors(m, noise_seed)
            _assert_same(_run(lesmis), ref)
            p, s = _svd_scores(lesmis)
        np.testing.assert_array_equal(s, s_ref)                      # the snapped scores
        np.testing.assert_allclose(p, p_ref, rtol=1e-9, atol=0)
    # also with Platt scaling and with the calibration on the training ones
    for kw in (dict(calibrator="logistic"), dict(calibration="train")):
        p_ref, s_ref = _svd_scores(lesmis, **kw)
        with monkeypatch.context() as m:
            _perturbed_factors(m, 0)
            p, s = _svd_scores(lesmis, **kw)
        np.testing.assert_array_equal(s, s_ref)
        np.testing.assert_allclose(p, p_ref, rtol=1e-9, atol=0)


@pytest.mark.slow
def test_without_the_grid_the_ranking_metrics_depend_on_the_last_bits(lesmis, monkeypatch):
    """The test above has teeth: the same perturbations, scores not snapped, change TDAUC-PR or
    AUC-ROC of the SVD (ties between equal scores are broken by rounding noise)."""
    monkeypatch.setattr(bl, "_snap", lambda s, q: s)
    ref = _run(lesmis)

    def ranks(runs):
        return [(r[name]["tdauc_pr"], r[name]["auc_roc"]) for r in runs for name in ("svd-k8", "svd-auto")]
    changed = 0
    for noise_seed in NOISE_SEEDS:
        with monkeypatch.context() as m:
            _perturbed_factors(m, noise_seed)
            changed += ranks(_run(lesmis)) != ranks(ref)
    assert changed >= 1


def test_scores_lie_on_a_power_of_two_grid(lesmis):
    p, s = _svd_scores(lesmis)
    q = bl._quantum(s)
    assert q is not None and math.frexp(q)[0] == 0.5                  # a power of two
    assert np.all(s / q == np.rint(s / q))
    # and the grid is about 1e-9 of the scores' scale
    assert 2.0 ** -bl.SNAP_BITS <= q / np.max(np.abs(s)) <= 2.0 ** (2 - bl.SNAP_BITS)
    # the probabilities are an increasing map of the snapped scores: equal scores, equal p
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(p[order]) >= 0)
    same = np.diff(s[order]) == 0
    assert same.any() and np.all(np.diff(p[order])[same] == 0)


def test_the_grid_does_not_jump_at_powers_of_two():
    """A reconstruction of a 0/1 matrix is often 1 up to rounding: max|s| = 1 - 1 ulp and
    1 + 1 ulp give the same grid, and snapping is exact."""
    below, above = np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0)
    assert bl._quantum(np.array([below])) == bl._quantum(np.array([above])) == 2.0 ** (1 - bl.SNAP_BITS)
    assert bl._quantum(np.array([0.0, -0.0])) is None and bl._quantum(np.array([])) is None
    q = bl._quantum(np.array([0.3, -0.7]))
    s = np.array([0.1, 0.1 + 1e-16, 0.1 - 1e-16, -0.25, q / 2 * 0.999, 2.0])
    got = bl._snap(s, q)
    assert got[0] == got[1] == got[2] and got[3] == -0.25 and got[4] == 0 and got[5] == 2.0
    assert bl._snap(s, None) is s
