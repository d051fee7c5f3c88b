"""Rewritten kernels draw exactly what the plain forms they replace draw (issue 31: faster sweeps,
same chains). Each test runs a plain reference (a binary search and a scan that stop at the first
sum above u, a column-by-column Dirichlet draw, ...) and the library's kernel on the same inputs
and random stream, and asks for identical results; ``benchmarks/golden_chains.py`` checks whole
chains."""
import numpy as np
import pytest
from numba import njit

from epm_lib.distributions import sample_ztp
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
def _draws(rng, ri, cj, n, reference):
    T = ri.shape[0]
    G = T // 4
    P = np.empty(G + 2)
    s = common._group_sums(ri, cj, P, G, T)
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        out[t] = _reference_draw_atom(rng, s, P, G, T, ri, cj) if reference else \
            common._draw_atom(rng, s, P, G, T, ri, cj)
    return out


@pytest.mark.parametrize("T", [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 64, 67, 128])
def test_draw_atom_equals_binary_search_and_scan(T):
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


@njit
def _reference_latent_counts(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k):
    """The m-step with one one at a time (``_group_sums``) and the reference seating."""
    I, T = R.shape
    Rl = common._scaled_rows(R, lam)
    G = T // 4
    P = np.empty(G + 2)
    M = 0
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        s = common._group_sums(Rl[i], C[j], P, G, T)
        n = sample_ztp(rng, s)
        M += n
        for _ in range(n):
            k = _reference_draw_atom(rng, s, P, G, T, Rl[i], C[j])
            m_ik[i, k] += 1
            m_jk[j, k] += 1
            m_k[k] += 1
    return M


@pytest.mark.parametrize("T,nnz", [(1, 1), (5, 2), (8, 3), (13, 200), (128, 501)])
def test_latent_counts_equal_one_at_a_time(T, nnz):
    rng = np.random.default_rng(nnz)
    I, J = 30, 40
    key = np.sort(rng.choice(I * J, nnz, replace=False))
    rows, cols = key // J, key % J
    R, C, lam = rng.gamma(0.5, 1.0, (I, T)), rng.gamma(0.5, 1.0, (J, T)), rng.gamma(1.0, 1.0, T)
    lam[rng.random(T) < 0.3] = 1e-300
    out = []
    for fn in (_reference_latent_counts, common.sample_latent_counts):
        g = np.random.default_rng(7)
        m = (np.zeros((I, T), np.int64), np.zeros((J, T), np.int64), np.zeros(T, np.int64))
        M = fn(g, rows, cols, R, C, lam, *m)
        out.append((M, *m, g.bit_generator.state))
    assert out[0][0] == out[1][0] and out[0][4] == out[1][4]
    for a, b in zip(out[0][1:4], out[1][1:4]):
        np.testing.assert_array_equal(a, b)
