"""The IDEPM's z-step kernels (``epm_lib.models.idepm``) against their exact definitions.

The sampler keeps float64 counts and a per-atom factor g_k (updated only when a customer
moves), sums the weights of Eq. (6) in blocks of four and draws a seat by inverting the
blocked cumulative sums. These tests pin each piece to the plain formula: the law of
``draw_seat`` (chi-square, zero weights, extreme ranges, every block boundary), the weights of
``seat_weights`` (own-atom shortcut = explicit removal; = Eq. (6) with J alpha2), and the
round trip of the seating representations. The whole sampler is checked against Theorem 4 by
the Geweke test and by enumeration in ``chapters/14_idepm_sampler``.
"""
import numpy as np
import pytest
from numba import njit

from epm_lib.models import idepm
from test_distributions import P_MIN, pooled_chisquare


@njit(cache=True)
def _draw_many(rng, w, n, total, size):
    out = np.empty(size, np.int64)
    for s in range(size):
        out[s] = idepm.draw_seat(rng, w, n, total)
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17])
def test_draw_seat_law_every_block_shape(n):
    rng = np.random.default_rng(100 + n)
    w = rng.gamma(0.7, 1.0, n)
    w[rng.random(n) < 0.25] = 0.0                 # zero weights anywhere, incl. block edges
    if w.sum() == 0:
        w[-1] = 1.0
    total = w.sum()
    draws = _draw_many(np.random.default_rng(7 + n), w, n, total, 100_000)
    counts = np.bincount(draws, minlength=n)
    assert np.all(counts[w == 0] == 0)
    if np.count_nonzero(w) > 1:
        p, _ = pooled_chisquare(counts[w > 0], w[w > 0] / total)
        assert p > P_MIN, p


def test_draw_seat_extremes_and_rounding():
    # u can land at the very top (rounding): the last positive weight is returned, never a zero one
    w = np.array([1.0, 2.0, 0.0, 0.0, 3.0, 0.0])
    assert np.all(_draw_many(np.random.default_rng(1), w, 6, np.nextafter(6.0, 7.0) * 1.0000001, 20_000)
                  != 2)
    top = _draw_many(np.random.default_rng(2), w, 6, 1e9, 1000)      # total far too large: u beyond all
    assert np.all(top == 4)
    # huge dynamic range and tiny weights
    w = np.array([1e-300, 1.0, 0.0, 0.0, 1e-300])
    assert np.all(_draw_many(np.random.default_rng(3), w, 5, w.sum(), 50_000) == 1)
    w = np.array([1e-300, 2e-300, 3e-300, 4e-300, 5e-300])
    d = _draw_many(np.random.default_rng(4), w, 5, w.sum(), 100_000)
    p, _ = pooled_chisquare(np.bincount(d, minlength=5), w / w.sum())
    assert p > P_MIN, p


def _random_seating(rng, I, J, K):
    n_ik = rng.integers(0, 4, (I, K)).astype(np.int64)
    n_jk = np.zeros((J, K), np.int64)
    for k in range(K):                             # column sums must agree: spread n_.k over the columns
        tot = n_ik[:, k].sum()
        if tot == 0:
            n_ik[0, k] = tot = 1
        n_jk[:, k] = rng.multinomial(tot, np.ones(J) / J)
    return n_ik, n_jk, n_ik.sum(axis=0)


def test_seat_weights_equal_eq6_and_own_atom_shortcut():
    rng = np.random.default_rng(5)
    I, J, K = 7, 5, 9
    a1, a2, g0 = 0.3, 1.7, 2.5
    Ia1, Ja2, w_new = I * a1, J * a2, g0 / (I * J)
    n_ik, n_jk, n_k = _random_seating(rng, I, J, K)
    active = rng.permutation(K).astype(np.int64)   # any order of the active list
    pos = np.argsort(active).astype(np.int64)
    C_i, C_j, C_k, g, act, ps, hw = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, K, Ia1, Ja2)
    assert hw == K and np.array_equal(act[:K], active) and np.array_equal(ps[:K], pos)
    w, w_id = np.empty(K + 2), np.empty(K + 1)
    for i in range(I):
        for j in range(J):
            tot = idepm.seat_weights(i, j, C_i, C_j, g, act, K, hw, a1, a2, w_new, w_id, w)
            f = n_k * (a1 + n_ik[i]) / (Ia1 + n_k) * (a2 + n_jk[j]) / (Ja2 + n_k)   # Eq. (6), J alpha2
            np.testing.assert_allclose(w[:K], f[active], rtol=1e-14)
            assert w[K] == w_new and tot == pytest.approx(f.sum() + w_new, rel=1e-14)
            for k in range(K):                     # the customer of (i, j) sitting at k, not yet removed
                if n_ik[i, k] == 0 or n_jk[j, k] == 0 or n_k[k] < 2:
                    continue
                w_own = np.empty(K + 1)
                tot_own = idepm.seat_weights(i, j, C_i, C_j, g, act, K, hw, a1, a2, w_new, w_id, w_own,
                                             k, idepm.atom_factor(C_k[k] - 1.0, Ia1, Ja2))
                D_i, D_j, D_k = C_i.copy(), C_j.copy(), C_k.copy()
                D_i[i, k] -= 1; D_j[j, k] -= 1; D_k[k] -= 1
                gd = idepm.atom_factor(D_k, Ia1, Ja2)
                w_rm = np.empty(K + 1)
                tot_rm = idepm.seat_weights(i, j, D_i, D_j, gd, act, K, hw, a1, a2, w_new, w_id, w_rm)
                assert np.array_equal(w_own, w_rm) and tot_own == tot_rm      # bit-identical


def test_float_seating_round_trip():
    rng = np.random.default_rng(6)
    n_ik, n_jk, n_k = _random_seating(rng, 6, 4, 5)
    n_k = n_k.copy()
    active, pos, n_active = idepm.active_from_counts(n_k)
    seat = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, 1.0, 1.0)
    back = idepm.to_int_seating(seat[0], seat[1], seat[2], seat[4], seat[5], n_active)
    for a, b in zip(back[:3], (n_ik, n_jk, n_k)):
        assert np.array_equal(a[:, :b.shape[-1]] if a.ndim == 2 else a[:b.shape[0]], b)
    assert back[5] == n_active and np.array_equal(back[3][:n_active], active[:n_active])
