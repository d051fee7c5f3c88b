"""Rewritten kernels draw exactly what the plain forms they replace draw (issue 31: faster sweeps,
same chains). Each test runs a plain reference (a binary search and a scan that stop at the first
sum above u, a column-by-column Dirichlet draw, ...) and the library's kernel on the same inputs
and random stream, and asks for identical results; ``benchmarks/golden_chains.py`` checks whole
chains."""
import math

import numpy as np
import pytest
from numba import njit

from epm_lib.distributions import _standard_gamma_small, sample_dirichlet, sample_ztp
from epm_lib.models import common


@njit
def _reference_draw_atom(rng, s, P, G, T, ri, cj):
    """The m-step's seating before issue 31: binary search over the groups, scan within."""
    if s > 0.0:
        u = rng.random() * s
        lo = 0
        hi = G
        while lo < hi:
            mid = (lo + hi) // 2
            if P[mid + 1] > u:
                hi = mid
            else:
                lo = mid + 1
        k0 = 4 * lo
        k1 = min(k0 + 4, T) if lo < G else T
        a = P[lo]
        k = -1
        for kk in range(k0, k1):
            a += ri[kk] * cj[kk]
            if u < a:
                k = kk
                break
        if k < 0 or ri[k] * cj[k] <= 0.0:
            k = k1 - 1
            while k > k0 and ri[k] * cj[k] <= 0.0:
                k -= 1
        return k
    return int(rng.random() * T)


@njit
def _reference_group_sums(ri, cj, P, G, T):
    """The m-step's block sums before issue 31, item 4 (products summed as they are made)."""
    acc = 0.0
    P[0] = 0.0
    for g in range(G):
        k = 4 * g
        acc += (ri[k] * cj[k] + ri[k + 1] * cj[k + 1]) + (ri[k + 2] * cj[k + 2] + ri[k + 3] * cj[k + 3])
        P[g + 1] = acc
    for k in range(4 * G, T):
        acc += ri[k] * cj[k]
    P[G + 1] = acc
    return acc


@njit
def _reference_draw_seat(rng, w, n, total):
    """The IDEPM's draw before issue 31, item 4: a scan over the blocks of four, then within."""
    u = rng.random() * total
    cum = 0.0
    b = 0
    while b + 4 <= n:
        nxt = cum + ((w[b] + w[b + 1]) + (w[b + 2] + w[b + 3]))
        if u < nxt:
            for a in range(b, b + 4):
                cum += w[a]
                if u < cum:
                    return a
            for a in range(b + 3, -1, -1):
                if w[a] > 0.0:
                    return a
            return b + 3
        cum = nxt
        b += 4
    while b < n:
        cum += w[b]
        if u < cum:
            return b
        b += 1
    for a in range(n - 1, -1, -1):
        if w[a] > 0.0:
            return a
    return n - 1


@njit
def _draws(rng, ri, cj, n, reference):
    T = ri.shape[0]
    G = T // 4
    P = np.empty(G + 2)
    w = ri * cj
    if reference:
        s = _reference_group_sums(ri, cj, P, G, T)
    else:
        s = common.block_cdf(w, T, P)
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        out[t] = _reference_draw_atom(rng, s, P, G, T, ri, cj) if reference else \
            common.draw_categorical(rng, w, T, P, s)
    return out


@njit
def _seat_draws(rng, w, n, size):
    P = np.empty(n // 4 + 1)
    s = common.block_cdf(w, n, P)
    a = np.empty(size, dtype=np.int64)
    for t in range(size):
        a[t] = common.draw_categorical(rng, w, n, P, s)
    return a, s


@pytest.mark.slow
@pytest.mark.parametrize("T", [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 64, 67, 128])
def test_draw_categorical_equals_binary_search_and_scan(T):
    # the one categorical draw of the sweeps (issue 31, item 4) against the m-step's former draw
    # (binary search over the block sums, then a scan) and the IDEPM's former draw (a scan)
    rng = np.random.default_rng(T)
    for trial in range(20):
        ri = rng.gamma(0.3, 1.0, T) * 10.0 ** rng.integers(-300, 5, T)
        cj = rng.gamma(0.3, 1.0, T)
        ri[rng.random(T) < 0.3] = 0.0             # switched-off atoms, groups of zeros
        if trial == 0:
            ri[:] = 0.0
            ri[-1] = 1.0                           # all mass on the last atom (rounding at the top)
        if trial == 1:
            ri[:] = 1e-320                         # subnormal products underflow to 0: s = 0
        a = _draws(np.random.default_rng(trial), ri, cj, 2000, True)
        b = _draws(np.random.default_rng(trial), ri, cj, 2000, False)
        np.testing.assert_array_equal(a, b)
        w = ri * cj
        if w.sum() > 0:
            c, s = _seat_draws(np.random.default_rng(trial), w, T, 2000)
            g = np.random.default_rng(trial)
            d = np.array([_reference_draw_seat(g, w, T, s) for _ in range(2000)])
            np.testing.assert_array_equal(c, d)


@njit
def _reference_latent_counts(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k, n_ones=-1):
    """The m-step with one one at a time (the former ``_group_sums``) and the reference seating;
    the entries e >= n_ones (when n_ones >= 0) are missing: a Poisson count, zero allowed."""
    I, T = R.shape
    Rl = common._scaled_rows(R, lam)
    G = T // 4
    P = np.empty(G + 2)
    M = 0
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        s = _reference_group_sums(Rl[i], C[j], P, G, T)
        n = sample_ztp(rng, s) if n_ones < 0 or e < n_ones else rng.poisson(s)
        M += n
        for _ in range(n):
            k = _reference_draw_atom(rng, s, P, G, T, Rl[i], C[j])
            m_ik[i, k] += 1
            m_jk[j, k] += 1
            m_k[k] += 1
    return M


def _keeping_seating(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k, n_ones=-1):
    M, off, z = common.m_step(rng, common.ones_of(rows, cols, n_ones), R, C, lam, common.Counts(m_ik, m_jk, m_k),
                              True)
    assert off.shape[0] == rows.shape[0] + 1 and z.shape[0] == M == off[-1]
    assert np.array_equal(np.bincount(z, minlength=m_k.shape[0]), m_k)     # the seating is the counts'
    return M


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("T,nnz", [(1, 1), (5, 2), (8, 3), (13, 200), (128, 501)])
def test_latent_counts_equal_one_at_a_time(T, nnz, missing):
    """The m-step (common.m_step, its pair of entries at a time, blocked sums and buffered m_jk)
    gives the reference's counts, customers and generator state: rates below and above 1 (the
    factors are Gamma(0.5) and Gamma(1)), atoms switched off, missing entries (a Poisson count)."""
    rng = np.random.default_rng(nnz)
    I, J = 30, 40
    key = np.sort(rng.choice(I * J, nnz, replace=False))
    rows, cols = key // J, key % J
    R, C, lam = rng.gamma(0.5, 1.0, (I, T)), rng.gamma(0.5, 1.0, (J, T)), rng.gamma(1.0, 1.0, T)
    lam[rng.random(T) < 0.3] = 1e-300
    n_ones = nnz // 2 if missing else -1
    out = []
    def seating_by_name(*args):                    # the former name, kept for chapter 13b
        return common.sample_latent_seating(*args)[0]

    for fn in (_reference_latent_counts, common.sample_latent_counts, _keeping_seating, seating_by_name):
        g = np.random.default_rng(7)
        m = (np.zeros((I, T), np.int64), np.zeros((J, T), np.int64), np.zeros(T, np.int64))
        M = fn(g, rows, cols, R, C, lam, *m, n_ones)
        out.append((M, *m, g.bit_generator.state))
    for other in out[1:]:
        assert out[0][0] == other[0] and out[0][4] == other[4]
        for a, b in zip(out[0][1:4], other[1:4]):
            np.testing.assert_array_equal(a, b)


@njit
def _reference_log_joint(offsets, z, n_ik, n_jk, n_k, K, I, J, h, e0, f0):
    """``idepm.log_joint`` before issue 31: one lgamma per count."""
    a1, a2, g0, c0 = h[0], h[1], h[2], h[3]
    out = 0.0
    M = 0
    for e in range(offsets.shape[0] - 1):
        m = offsets[e + 1] - offsets[e]
        M += m
        out -= math.lgamma(m + 1.0)
    lg_a1, lg_a2, lg_Ia1, lg_Ja2 = math.lgamma(a1), math.lgamma(a2), math.lgamma(I * a1), math.lgamma(J * a2)
    for k in range(K):
        n = float(n_k[k])
        out += lg_Ia1 - math.lgamma(I * a1 + n) + lg_Ja2 - math.lgamma(J * a2 + n) + math.lgamma(n)
    for i in range(n_ik.shape[0]):
        for k in range(K):
            if n_ik[i, k] > 0:
                out += math.lgamma(a1 + n_ik[i, k]) - lg_a1
    for j in range(n_jk.shape[0]):
        for k in range(K):
            if n_jk[j, k] > 0:
                out += math.lgamma(a2 + n_jk[j, k]) - lg_a2
    log1p_c0 = math.log1p(c0)
    out += K * math.log(g0) + g0 * (math.log(c0) - log1p_c0) - M * log1p_c0
    for v in (a1, a2, g0, c0):
        out += e0 * math.log(f0) - math.lgamma(e0) + (e0 - 1.0) * math.log(v) - f0 * v
    return out


@pytest.mark.parametrize("big", [False, True])
def test_log_joint_table_equals_one_lgamma_per_count(big):
    from epm_lib.models import idepm
    rng = np.random.default_rng(3)
    I, J, K, nnz = 7, 9, 4, 30
    key = np.sort(rng.choice(I * J, nnz, replace=False))
    rows, cols = key // J, key % J
    m = rng.integers(1, 600 if big else 5, nnz)            # past the tables' 256 counts when big
    offsets = np.concatenate([[0], np.cumsum(m)]).astype(np.int64)
    z = rng.integers(0, K, offsets[-1]).astype(np.int64)
    z[:K] = np.arange(K)
    n_ik, n_jk, n_k = common.seat_counts(rows, cols, offsets, z, I, J, K)
    h = np.array([0.3, 1.7, 2.2, 0.9])
    a = idepm.log_joint(offsets, z, n_ik, n_jk, n_k, K, I, J, h, 0.01, 0.01)
    b = _reference_log_joint(offsets, z, n_ik, n_jk, n_k, K, I, J, h, 0.01, 0.01)
    assert a == b


@njit
def _reference_dirichlet_columns(rng, m_xk, alpha, out):
    """``depm.sample_dirichlet_columns`` before issue 31: one column at a time."""
    n, T = out.shape
    conc = np.empty(n)
    col = np.empty(n)
    for k in range(T):
        for x in range(n):
            conc[x] = alpha + m_xk[x, k]
        sample_dirichlet(rng, conc, col)
        for x in range(n):
            out[x, k] = col[x]


@pytest.mark.parametrize("T", [1, 7, 8, 9, 20])
def test_dirichlet_columns_blocked_equal_one_column_at_a_time(T):
    from epm_lib.models import depm
    m_xk = np.random.default_rng(T).poisson(0.7, (33, T)).astype(np.int64)
    out = []
    for fn in (_reference_dirichlet_columns, depm.sample_dirichlet_columns):
        g = np.random.default_rng(1)
        phi = np.empty((33, T))
        fn(g, m_xk, 0.05, phi)
        out.append((phi, g.bit_generator.state))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1] == out[1][1]


@njit
def _gammas(rng, shapes, reps, mine):
    out = np.empty(shapes.shape[0] * reps)
    t = 0
    for s in shapes:
        for _ in range(reps):
            out[t] = _standard_gamma_small(rng, s, 1.0 / s, 1.0 - s) if mine else rng.standard_gamma(s)
            t += 1
    return out


def test_standard_gamma_small_equals_the_generators():
    """gamma_epm.sample_factors draws the many zero-count factors through _standard_gamma_small,
    with 1/shape made once; it must give the generator's own draws, and leave it in the same state."""
    shapes = np.array([1e-8, 0.01, 0.0665, 0.3, 0.5, 0.9, 0.999999, 1.0 - 2 ** -52])
    a_rng, b_rng = np.random.default_rng(5), np.random.default_rng(5)
    a = _gammas(a_rng, shapes, 3000, False)
    b = _gammas(b_rng, shapes, 3000, True)
    np.testing.assert_array_equal(a, b)
    assert a_rng.bit_generator.state == b_rng.bit_generator.state
