"""The IDEPM's z-step kernels (``epm_lib.models.idepm``) against their exact definitions.

The sampler keeps float64 counts and a per-atom factor g_k (updated only when a customer
moves), sums the weights of Eq. (6) in blocks of four and draws a seat by inverting the
blocked cumulative sums (``common.draw_categorical``, the m-step's draw). These tests pin each
piece to the plain formula: the law of ``draw_seat`` (chi-square, zero weights, extreme ranges, every block boundary), the weights of
``seat_weights`` (own-atom shortcut = explicit removal; = Eq. (6) with J alpha2), and the
round trip of the seating representations. The whole sampler is checked against Theorem 4 by
the Geweke test and by enumeration in ``chapters/14_idepm_sampler``.
"""
import numpy as np
import pytest
from numba import njit

from epm_lib.models import common, idepm
from epm_lib.models.common import ones_of as _ones
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


@pytest.mark.slow
def test_seat_weights_equal_eq6_and_own_atom_shortcut():
    rng = np.random.default_rng(5)
    I, J, K = 7, 5, 9
    a1, a2, g0 = 0.3, 1.7, 2.5
    Ia1, Ja2, w_new = I * a1, J * a2, g0 / (I * J)
    n_ik, n_jk, n_k = _random_seating(rng, I, J, K)
    active = rng.permutation(K).astype(np.int64)   # any order of the active list
    pos = np.argsort(active).astype(np.int64)
    C_i, C_j, C_k, g, act, ps = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, K, Ia1, Ja2)
    assert np.array_equal(act[:K], active) and np.array_equal(ps[:K], pos)
    w = np.empty(K + 2)
    for i in range(I):
        for j in range(J):
            tot = idepm.seat_weights(i, j, C_i, C_j, g, act, K, a1, a2, w_new, w)
            f = n_k * (a1 + n_ik[i]) / (Ia1 + n_k) * (a2 + n_jk[j]) / (Ja2 + n_k)   # Eq. (6), J alpha2
            np.testing.assert_allclose(w[:K], f[active], rtol=1e-14)
            assert w[K] == w_new and tot == pytest.approx(f.sum() + w_new, rel=1e-14)
            for k in range(K):                     # the customer of (i, j) sitting at k, not yet removed
                if n_ik[i, k] == 0 or n_jk[j, k] == 0 or n_k[k] < 2:
                    continue
                w_own = np.empty(K + 1)
                saved = C_i.copy(), C_j.copy(), g.copy()
                tot_own = idepm.seat_weights(i, j, C_i, C_j, g, act, K, a1, a2, w_new, w_own,
                                             k, idepm.atom_factor(C_k[k] - 1.0, Ia1, Ja2))
                for x, y in zip(saved, (C_i, C_j, g)):   # the counts were changed for the loop only
                    assert np.array_equal(x, y)
                D_i, D_j, D_k = C_i.copy(), C_j.copy(), C_k.copy()
                D_i[i, k] -= 1; D_j[j, k] -= 1; D_k[k] -= 1
                gd = idepm.atom_factor(D_k, Ia1, Ja2)
                w_rm = np.empty(K + 1)
                tot_rm = idepm.seat_weights(i, j, D_i, D_j, gd, act, K, a1, a2, w_new, w_rm)
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


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 6, 7, 8, 11])
def test_blocked_total_is_the_total_of_seat_weights(K):
    # the fused pass recomputes the birth move's total from the weights of the last reseating
    # with blocked_total; it must be the very number seat_weights returns (same blocks, same order)
    rng = np.random.default_rng(40 + K)
    I, J = 4, 3
    n_ik, n_jk, n_k = _random_seating(rng, I, J, K)
    active, pos, n_active = idepm.active_from_counts(n_k)
    C_i, C_j, C_k, g, act, ps = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, 1.3, 0.4)
    w = np.empty(K + 1)
    for i in range(I):
        for j in range(J):
            tot = idepm.seat_weights(i, j, C_i, C_j, g, act, n_active, 0.7, 0.2, 1e-3, w)
            assert tot == idepm.blocked_total(w, n_active + 1)


def _random_ones_seating(rng, I, J, density, K):
    """Ones of a random I x J matrix (CSR order) with 1-3 customers each, seated at random at K
    atoms: (rows, cols, offsets, z) and the id-indexed counts (n_ik, n_jk, n_k, active, pos, n_active)."""
    rows, cols = np.nonzero(rng.random((I, J)) < density)
    rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    m = rng.integers(1, 4, rows.size)
    off = np.concatenate([[0], np.cumsum(m)]).astype(np.int64)
    z = rng.integers(0, K, off[-1]).astype(np.int64)
    n_ik, n_jk, n_k = idepm.seat_counts(rows, cols, off, z, I, J, K)
    return (rows, cols, off, z), (n_ik, n_jk, n_k, *idepm.active_from_counts(n_k))


@pytest.mark.slow
def test_seating_pass_keeps_the_counts_of_its_seating():
    # after the fused pass (z-step + birth-death moves) the float counts are those of the new z
    rng = np.random.default_rng(9)
    I, J = 6, 5
    (rows, cols, off, z), (n_ik, n_jk, n_k, active, pos, n_active) = _random_ones_seating(rng, I, J, 0.6, 3)
    a1, a2, g0, c0 = 0.4, 0.9, 3.0, 0.2
    seat = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, I * a1, J * a2, 4)
    for sweep in range(30):
        off, z, seat, n_active = idepm._seating_pass(rng, _ones(rows, cols), off, z, seat, n_active,
                                                     idepm.z_params(I, J, a1, a2, g0, c0), True, 1)
        C_i, C_j, C_k, g, act, ps = seat
        cap = C_k.shape[0]
        r_ik, r_jk, r_k = idepm.seat_counts(rows, cols, off, z, I, J, cap)
        assert np.array_equal(C_i, r_ik) and np.array_equal(C_j, r_jk) and np.array_equal(C_k, r_k)
        assert np.all(np.diff(off) >= 1)                         # every one keeps a customer
        assert sorted(act[:n_active]) == sorted(np.flatnonzero(r_k))
        assert np.all(ps[act[:n_active]] == np.arange(n_active))
        np.testing.assert_array_equal(g, np.where(C_k > 0, idepm.atom_factor(C_k, I * a1, J * a2), 0.0))


def _reference_pass(rng, rows, cols, offsets, z, C_i, C_j, C_k, active, pos, n_active, Ia1, Ja2,
                    a1, a2, w_new, c0):
    """The fused pass written plainly: every atom factor recomputed from the counts when used (no
    cached g or g of c - 1), every weight vector computed afresh by seat_weights (no reuse of the
    last reseating's weights for the birth move), the same random numbers in the same order."""
    def factors():
        return np.where(C_k > 0, idepm.atom_factor(C_k, Ia1, Ja2), 0.0)

    zp = idepm.ZParams(Ia1, Ja2, a1, a2, w_new, c0)

    new_z, new_off = [], [0]
    for e in range(rows.size):
        i, j = rows[e], cols[e]
        mine = []
        for s in range(offsets[e], offsets[e + 1]):
            kold = z[s]
            w = np.empty(C_k.size + 2)
            if C_k[kold] == 1.0:
                n_active = idepm._remove_customer(i, j, kold, idepm.Tables(C_i, C_j, C_k, factors(), active, pos),
                                                  n_active, zp)
                total = idepm.seat_weights(i, j, C_i, C_j, factors(), active, n_active, a1, a2, w_new, w)
                moved = True
            else:
                D_i, D_j, D_k = C_i.copy(), C_j.copy(), C_k.copy()
                D_i[i, kold] -= 1; D_j[j, kold] -= 1; D_k[kold] -= 1
                g = np.where(D_k > 0, idepm.atom_factor(D_k, Ia1, Ja2), 0.0)
                total = idepm.seat_weights(i, j, D_i, D_j, g, active, n_active, a1, a2, w_new, w)
                moved = False
            a = idepm.draw_seat(rng, w, n_active + 1, total)
            if a == n_active:
                (C_i, C_j, C_k, _, active, pos), n_active, k = idepm._new_atom(
                    idepm.Tables(C_i, C_j, C_k, factors(), active, pos), n_active)
            else:
                k = active[a]
            if k != kold or moved:
                if not moved:
                    C_i[i, kold] -= 1; C_j[j, kold] -= 1; C_k[kold] -= 1
                C_i[i, k] += 1; C_j[j, k] += 1; C_k[k] += 1
            mine.append(k)
        n = len(mine)
        u = rng.random()
        w = np.empty(C_k.size + 2)
        if u < 0.5:
            F = idepm.seat_weights(i, j, C_i, C_j, factors(), active, n_active, a1, a2, w_new, w)
            if (u + u) * (c0 + 1.0) * (n + 1) < F:
                a = idepm.draw_seat(rng, w, n_active + 1, F)
                if a == n_active:
                    (C_i, C_j, C_k, _, active, pos), n_active, k = idepm._new_atom(
                        idepm.Tables(C_i, C_j, C_k, factors(), active, pos), n_active)
                else:
                    k = active[a]
                C_i[i, k] += 1; C_j[j, k] += 1; C_k[k] += 1
                mine.append(k)
        elif n >= 2:
            s = int((u + u - 1.0) * n)
            kd = mine[s]
            n_minus = idepm._remove_customer(i, j, kd, idepm.Tables(C_i, C_j, C_k, factors(), active, pos),
                                             n_active, zp)
            Fm = idepm.seat_weights(i, j, C_i, C_j, factors(), active, n_minus, a1, a2, w_new, w)
            if rng.random() * Fm < (c0 + 1.0) * n:
                mine[s] = mine[-1]
                mine.pop()
                n_active = n_minus
            else:
                if n_minus < n_active:
                    active[n_minus] = kd
                    pos[kd] = n_minus
                C_i[i, kd] += 1; C_j[j, kd] += 1; C_k[kd] += 1
        new_z += mine
        new_off.append(len(new_z))
    return np.array(new_off), np.array(new_z), C_i, C_j, C_k, active, pos, n_active


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_pass_equals_the_plain_reference(seed):
    # the caches (g, g of c - 1, the reused weights of the birth move) change no number
    rng = np.random.default_rng(seed)
    I, J = 5, 6
    (rows, cols, off, z), (n_ik, n_jk, n_k, active, pos, n_active) = _random_ones_seating(rng, I, J, 0.5, 4)
    a1, a2, g0, c0 = 0.5, 0.8, 4.0, 0.3          # a large gamma0: atoms open and close often
    Ia1, Ja2 = I * a1, J * a2
    fast = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, Ia1, Ja2)
    ref = [x.copy() for x in fast]
    zf, offf, zr, offr, nf, nr = z.copy(), off.copy(), z.copy(), off.copy(), n_active, n_active
    rf, rr = np.random.default_rng(100 + seed), np.random.default_rng(100 + seed)
    for sweep in range(40):
        offf, zf, fast, nf = idepm._seating_pass(rf, _ones(rows, cols), offf, zf, fast, nf,
                                                 idepm.ZParams(Ia1, Ja2, a1, a2, g0 / (I * J), c0), True, 1)
        offr, zr, C_i, C_j, C_k, act, ps, nr = _reference_pass(
            rr, rows, cols, offr, zr, ref[0], ref[1], ref[2], ref[4], ref[5], nr, Ia1, Ja2,
            a1, a2, g0 / (I * J), c0)
        ref = [C_i, C_j, C_k, None, act, ps]
        assert nf == nr and np.array_equal(offf, offr) and np.array_equal(zf, zr)
        for x, y in zip(fast[:3], ref[:3]):
            assert np.array_equal(x[..., :y.shape[-1]], y)
    assert rf.random() == rr.random()                 # the same number of draws


@njit(cache=True)
def _both_draws(rs, r1, r2, N):
    """N random weight vectors (n = 1..30: every shape of the last block; zeros, all-zero vectors,
    weights over many orders of magnitude, NaN in the room past n): the index of common.draw_categorical and of
    idepm._draw, each from its own generator of the same seed. Returns the number that differ."""
    bad = 0
    for _ in range(N):
        n = 1 + rs.integers(0, 30)
        w = np.empty(n + 3)
        for k in range(n + 3):
            w[k] = np.nan if k >= n else (0.0 if rs.random() < 0.3 else rs.random() ** 8 * 10.0 ** rs.integers(-20, 5))
        if rs.random() < 0.05:
            w[:n] = 0.0
        P = np.empty(n // 4 + 1)
        total = common.block_cdf(w, n, P)
        bad += common.draw_categorical(r1, w, n, P, total) != idepm._draw(r2, w, n, P, total)
    return bad


def test_unrolled_draw_equals_draw_categorical():
    """The seating pass draws through idepm._draw, common.draw_categorical with the search within a
    block unrolled: the same index for the same uniform, and the same number of draws."""
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    assert _both_draws(np.random.default_rng(1), r1, r2, 200_000) == 0
    assert r1.bit_generator.state == r2.bit_generator.state
