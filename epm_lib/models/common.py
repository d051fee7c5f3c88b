"""What the samplers share: the structures their kernels take, the m-step, the categorical draw,
the test likelihood and the auxiliary draws of a Dirichlet concentration.

The binary matrix enters as the row and column indices of its ones (CSR order, :class:`Ones`);
latent counts are only ever drawn for these entries (zeros of X have m_ij. = 0 with probability
one, Eq. (10)), and only their aggregates m_i.k (I x T), m_.jk (J x T) and m_..k (T) are kept
(:class:`Counts`). Derived in ``chapters/11_epm_sampler``.

The kernels take the model's state as a few named tuples of arrays (numba compiles a
``collections.namedtuple`` of arrays as a tuple: no copy, no boxing, the arrays updated in place):

- :class:`Ones` ``(rows, cols, n_ones)``: the entries a sweep visits, the ones of X in CSR order,
  then the missing entries of ``fit(mask=...)`` (``e >= n_ones``);
- :class:`Counts` ``(m_ik, m_jk, m_k)``: the aggregates of the latent counts (int64);
- :class:`Factors` ``(R, C, lam, h)``: the truncated models' parameters, R = U or phi (I x T),
  C = V or psi (J x T), lambda (T) and the hyperparameters ``h`` (the order of ``HYPER_NAMES`` of
  ``gamma_epm`` or ``depm``);
- :class:`Prior` ``(e0, f0)``: the Gamma(e0, f0) hyperprior of every hyperparameter (Sec. 5).

One m-step (:func:`m_step`, Eqs. (10)-(11); it keeps each customer's atom when asked) and one
categorical draw (:func:`draw_categorical`, the inversion of a cdf summed in blocks of four, which
the IDEPM's z-step uses too).
"""
from __future__ import annotations

import math
import threading
from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange

from ..distributions import sample_ztp, sample_crt, sample_log_beta

__all__ = [
    "Ones", "Counts", "Factors", "Prior",
    "row_dot", "m_step", "sample_latent_counts", "sample_latent_seating", "block_cdf", "first_block_above", "draw_categorical", "seat_counts",
    "m_step_error", "link_rates", "crt_sum", "dirichlet_multinomial_aux", "tdll_from_rates", "split_test",
    "test_loglik_sum", "parallel_threads",
]

#: the entries a sweep visits: ``rows``, ``cols`` (int64, the ones of X in CSR order, then the
#: missing entries) and ``n_ones`` (an int: the entries ``e >= n_ones`` are missing, not ones)
Ones = namedtuple("Ones", ["rows", "cols", "n_ones"])
#: the aggregates of the latent counts: m_i.k (I x T), m_.jk (J x T), m_..k (T), int64
Counts = namedtuple("Counts", ["m_ik", "m_jk", "m_k"])
#: the truncated models' parameters: R (U or phi, I x T), C (V or psi, J x T), lambda (T) and the
#: hyperparameters ``h`` (float64; the order of ``gamma_epm.HYPER_NAMES`` or ``depm.HYPER_NAMES``)
Factors = namedtuple("Factors", ["R", "C", "lam", "h"])
#: the Gamma(e0, f0) hyperprior of every hyperparameter (Sec. 5: e0 = f0 = 0.01)
Prior = namedtuple("Prior", ["e0", "f0"])


def ones_of(rows, cols, n_ones=-1):
    """:class:`Ones` of the entries ``rows``, ``cols``; ``n_ones`` = -1 (default): all are ones."""
    return Ones(rows, cols, int(rows.shape[0] if n_ones < 0 else n_ones))


@njit(cache=True)
def row_dot(a, b):
    """sum_k a[k] b[k] with four interleaved accumulators.

    The summation order is fixed by the code (not by the compiler, as with
    fastmath), so results are bit-identical on every CPU, while the four
    independent chains run about four times faster than one.
    """
    T = a.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = 0
    while k + 4 <= T:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    while k < T:
        s0 += a[k] * b[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


#: buffered m_jk increments per flush in :func:`m_step` (32 KiB)
_JK_BUFFER = 4096

#: Guards of the m-step against exploded rates (a hyperprior with its mass on huge values, e.g.
#: e0 = 1e10): a one whose ZTP draw exceeds ``MAX_CUSTOMERS_PER_ONE`` customers, or a sweep whose
#: total exceeds ``MAX_CUSTOMERS_TOTAL`` + ``MAX_CUSTOMERS_PER_ONE_AVG`` x (ones), stops the m-step
#: (``m_step`` returns a negative code) instead of seating them one by one for hours.
#: A rate of 10^6 means P(x = 1) = 1 - exp(-10^6): no data set needs a count anywhere near it.
#: the smallest normal double; smaller weights are flushed to 0 in the m-step (``_scale_row``)
TINY = float(np.finfo(np.float64).tiny)
MAX_CUSTOMERS_PER_ONE = 1_000_000
MAX_CUSTOMERS_TOTAL = 100_000_000
MAX_CUSTOMERS_PER_ONE_AVG = 100


@njit(cache=True)
def _scaled_rows(R, lam):
    """R_ik lam_k for every row (I x T; a product below ``TINY`` stored as 0): the rows of
    :func:`_scale_row`, for the parallel scoring kernel and the tests. The m-step and the serial
    scoring kernel scale one row at a time instead (no I x T array per call)."""
    I, T = R.shape
    Rl = np.empty((I, T))
    for i in range(I):
        _scale_row(R, lam, i, Rl[i])
    return Rl


@njit(cache=True, inline="always")
def _scale_row(R, lam, i, out):
    """out[k] = R_ik lam_k, the factor of a one's rates that depends on its row, with a product below
    the smallest normal double (``TINY``) stored as 0. Atoms that are switched off carry such values
    (a lambda at the floor ``TINY`` times a factor below one), and subnormal operands make every
    later product slow on x86 CPUs (the m-step of the DEPM-128 on MovieLens100K from 4 atoms ran 3
    times slower). The draws do not change: a weight below TINY is absorbed in every sum it enters,
    and the inversion of the cdf selects it only for a uniform of exactly 0 (probability 2^-53)."""
    for k in range(R.shape[1]):
        v = R[i, k] * lam[k]
        out[k] = v if v >= TINY else 0.0


# ---------------------------------------------------------------------------------------------
# The categorical draw of every sweep
#
# A customer's atom (the m-step, Eq. (11); the IDEPM's z-step, Eq. (6), and its births) is drawn
# by inverting the cdf of its weights w[:n], summed in blocks of four in a fixed order: P[g] is
# the sum of the blocks before block g ((w0 + w1) + (w2 + w3) per block, the n - 4G weights after
# the G = n // 4 full blocks added one by one), so the results are the same on every CPU.
# ---------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def block_cdf(w, n, P):
    """P[g] = sum of the blocks of four of w[:n] before block g (g = 0..G, G = n // 4); returns the
    total, which also adds the last n - 4G weights one by one (``P`` needs n // 4 + 1 entries)."""
    G = n // 4
    acc = 0.0
    P[0] = 0.0
    for g in range(G):
        k = 4 * g
        acc += (w[k] + w[k + 1]) + (w[k + 2] + w[k + 3])
        P[g + 1] = acc
    for k in range(4 * G, n):
        acc += w[k]
    return acc


@njit(cache=True, inline="always")
def first_block_above(P, G, u):
    """The first block g with P[g + 1] > u (G if none), for the block sums ``P`` of :func:`block_cdf`:
    the number of block sums <= u, counted instead of searched (no mispredicted jumps)."""
    lo = 0
    for g in range(1, G + 1):
        lo += P[g] <= u
    return lo


@njit(cache=True, inline="always")
def draw_categorical(rng, w, n, P, total):
    """Index a < n drawn with probability w[a] / total: one uniform u = U total, inverted through
    the block sums ``P`` of :func:`block_cdf` (``total`` its return value): the block is the first g
    with P[g + 1] > u (the last, partial block if none), the index the first a of the block whose
    running sum P[g] + w[4g] + ... + w[a] exceeds u.

    The weights are >= 0, so the running sums never decrease, and the first index whose sum
    exceeds u is the number of sums <= u: both searches count instead of branching (no
    mispredicted jumps; a compare per block, which the compiler vectorises), the same index as a
    binary search and a scan that stop at the first sum above u. Rounding (a block sum above u,
    its running sums not): the last positive weight of the block. ``total`` = 0 (every weight
    underflowed): uniform, the limit of the law."""
    if total > 0.0:
        u = rng.random() * total
        G = n // 4
        lo = first_block_above(P, G, u)
        k0 = 4 * lo
        k1 = min(k0 + 4, n) if lo < G else n
        a = P[lo]
        c = 0                   # running sums within the block that are <= u
        for kk in range(k0, k1):
            a += w[kk]
            c += a <= u
        if c < k1 - k0:
            return k0 + c
        for k in range(k1 - 1, -1, -1):     # rounding: the last positive weight
            if w[k] > 0.0:
                return k
        return k1 - 1
    return int(rng.random() * n)


@njit(cache=True, inline="always")
def _weights_pair(ri, cj, w, rj, dj, w2, T):
    """w[k] = ri[k] cj[k] and w2[k] = rj[k] dj[k]: the weights of two ones at once, side by side."""
    for k in range(T):
        w[k] = ri[k] * cj[k]
        w2[k] = rj[k] * dj[k]


@njit(cache=True, inline="always")
def _block_cdf_pair(w, P, w2, Q, T):
    """:func:`block_cdf` of two weight vectors at once, computed side by side so that the two chains
    of dependent additions overlap: the same sums in the same order for each. Returns both totals."""
    G = T // 4
    acc = 0.0
    acc2 = 0.0
    P[0] = 0.0
    Q[0] = 0.0
    for g in range(G):
        k = 4 * g
        acc += (w[k] + w[k + 1]) + (w[k + 2] + w[k + 3])
        acc2 += (w2[k] + w2[k + 1]) + (w2[k + 2] + w2[k + 3])
        P[g + 1] = acc
        Q[g + 1] = acc2
    for k in range(4 * G, T):
        acc += w[k]
        acc2 += w2[k]
    return acc, acc2


@njit(cache=True)
def m_step(rng, ones, R, C, lam, counts, keep_seating=False):
    """The m-step, Eqs. (10)-(11): for every one of X, m_ij. ~ ZTP(sum_k R_ik C_jk lam_k),
    then its partition over atoms ~ Multinomial(m_ij.; R_ik C_jk lam_k / sum).

    ``ones``: the entries (:class:`Ones`); ``R`` is U (EPM/CEPM) or phi (DEPM), ``C`` is V or psi.
    The aggregates m_i.k, m_.jk, m_..k are written into ``counts`` (:class:`Counts`, overwritten).
    Returns ``(M, offsets, z)``: M the total number of customers; with ``keep_seating`` each
    customer's atom too, for moves that need the seating (``moves.split_merge_depm``): the customers
    of the entry ``e`` are ``z[offsets[e]:offsets[e+1]]`` (without it both are empty). Cost
    O(nnz x T): one pass over the entries, no dense I x J x T array, no I x T one (each row of
    R lam is scaled when the pass reaches it, ``_scale_row``).

    For speed the weights of two entries are made side by side, and their block sums too
    (``_block_cdf_pair``: the cdf in blocks of four, in a fixed order, so results are the same on
    every CPU); each customer is then seated by :func:`draw_categorical`, the inversion of the
    exact categorical cdf. The increments of m_.jk (a random row j per one: a cache miss each on a
    large matrix) are collected in a small buffer and applied in a separate tight loop, where
    many misses overlap; counts are integers, so the order of the increments changes no result.

    Guard: if the draw of one entry exceeds ``MAX_CUSTOMERS_PER_ONE`` customers, or the running
    total exceeds ``MAX_CUSTOMERS_TOTAL + MAX_CUSTOMERS_PER_ONE_AVG * nnz``, the m-step stops and
    returns M = ``-(e + 1)`` for the entry ``e`` where it stopped (the aggregates are then partial
    and must not be used); :func:`m_step_error` turns the code into a message.

    Missing entries (``fit(mask=...)``): the entries ``e >= ones.n_ones`` are unobserved, not ones;
    their x_ij is unknown, so their count is the plain Poisson of Eq. (1),
    m_ij. ~ Poisson(sum_k R_ik C_jk lam_k) (zero allowed), partitioned the same way: the
    complete-data likelihood stays the Poisson factorisation over all entries, so every other
    update is unchanged.
    """
    rows, cols, n_ones = ones.rows, ones.cols, ones.n_ones
    m_ik, m_jk, m_k = counts.m_ik, counts.m_jk, counts.m_k
    T = R.shape[1]
    nnz = rows.shape[0]
    m_ik[:, :] = 0
    m_jk[:, :] = 0
    m_k[:] = 0
    G = T // 4                      # full blocks of four atoms; atoms 4G..T-1 form block G
    P = np.empty(G + 1)             # P[g] = sum of the weights of blocks < g
    Q = np.empty(G + 1)             # the same for the next entry, computed with this one's
    w = np.empty(T)                 # the weights of this entry and of the next
    w2 = np.empty(T)
    cur = np.empty(T)               # R_i. lam of the rows i_cur and i_nxt (this entry's, the next's)
    nxt = np.empty(T)
    i_cur = -1
    i_nxt = -1
    offsets = np.empty(nnz + 1 if keep_seating else 1, dtype=np.int64)
    offsets[0] = 0
    z = np.empty(2 * nnz + 16 if keep_seating else 0, dtype=np.int64)
    M = 0
    max_total = MAX_CUSTOMERS_TOTAL + MAX_CUSTOMERS_PER_ONE_AVG * nnz
    buf = np.empty(_JK_BUFFER, dtype=np.int64)    # pending increments of m_jk, as flat indices j T + k
    nb = 0
    flat_jk = m_jk.reshape(m_jk.shape[0] * T)
    s_next = 0.0
    have_next = False               # w2, Q, s_next hold the weights and sums of the entry e
    for e in range(nnz):
        i = rows[e]
        j = cols[e]
        if i != i_cur:              # the next entry's row is usually this one's, or was just scaled
            if i == i_nxt:
                cur, nxt = nxt, cur
                i_cur, i_nxt = i_nxt, i_cur
            else:
                _scale_row(R, lam, i, cur)
                i_cur = i
        if have_next:
            P, Q = Q, P
            w, w2 = w2, w
            s = s_next
            have_next = False
        elif e + 1 < nnz:
            i2 = rows[e + 1]
            if i2 != i_cur and i2 != i_nxt:
                _scale_row(R, lam, i2, nxt)
                i_nxt = i2
            _weights_pair(cur, C[j], w, cur if i2 == i_cur else nxt, C[cols[e + 1]], w2, T)
            s, s_next = _block_cdf_pair(w, P, w2, Q, T)
            have_next = True
        else:
            for k in range(T):
                w[k] = cur[k] * C[j, k]
            s = block_cdf(w, T, P)
        if not s <= 9.2e18:             # NaN, inf or past int64: the ZTP cannot be drawn
            return -(e + 1), offsets, z[:0]
        n = sample_ztp(rng, s) if e < n_ones else rng.poisson(s)
        if n > MAX_CUSTOMERS_PER_ONE or M + n > max_total:
            return -(e + 1), offsets, z[:0]
        if keep_seating and M + n > z.shape[0]:
            bigger = np.empty(2 * (M + n), dtype=np.int64)
            bigger[:M] = z[:M]
            z = bigger
        for _ in range(n):
            k = draw_categorical(rng, w, T, P, s)
            if keep_seating:
                z[M] = k
            M += 1
            m_ik[i, k] += 1
            m_k[k] += 1
            if nb == _JK_BUFFER:
                for b in range(nb):
                    flat_jk[buf[b]] += 1
                nb = 0
            buf[nb] = j * T + k
            nb += 1
        if keep_seating:
            offsets[e + 1] = M
    for b in range(nb):
        flat_jk[buf[b]] += 1
    return M, offsets, z[:M].copy() if keep_seating else z


@njit(cache=True)
def sample_latent_counts(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k, n_ones=-1):
    """:func:`m_step` with its arguments one by one (as the chapters of Part II call it): the
    aggregates into ``m_ik``, ``m_jk``, ``m_k``; returns M (negative: the guard stopped the m-step).
    ``n_ones`` = -1 (default): every entry is a one."""
    M, _, _ = m_step(rng, Ones(rows, cols, n_ones if n_ones >= 0 else rows.shape[0]), R, C, lam,
                     Counts(m_ik, m_jk, m_k), False)
    return M


@njit(cache=True)
def sample_latent_seating(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k, n_ones=-1):
    """:func:`m_step` keeping each customer's atom, with its arguments one by one (the name
    ``chapters/13b_depm_moves`` cites): returns ``(M, offsets, z)``, the aggregates as there."""
    return m_step(rng, Ones(rows, cols, n_ones if n_ones >= 0 else rows.shape[0]), R, C, lam,
                  Counts(m_ik, m_jk, m_k), True)


def m_step_error(code, rows, cols, model):
    """The ``ValueError`` for a negative return code of :func:`m_step` (exploded rates)."""
    e = -int(code) - 1
    return ValueError(
        f"{model}: the latent counts exploded at the one ({int(rows[e])}, {int(cols[e])}) (the m-step drew "
        f"more than {MAX_CUSTOMERS_PER_ONE:,} customers for one entry, or more than "
        f"{MAX_CUSTOMERS_TOTAL + MAX_CUSTOMERS_PER_ONE_AVG * rows.shape[0]:,} in all): the link rates "
        f"sum_k R_ik C_jk lambda_k are absurdly large. This happens when the hyperprior Gamma(e0, f0) puts "
        f"its mass on huge hyperparameters (its mean e0/f0); use the paper's e0 = f0 = 0.01 or keep e0/f0 "
        f"moderate.")


@njit(cache=True)
def seat_counts(rows, cols, offsets, z, I, J, Kcap):
    """Count arrays n_ik, n_jk, n_k of a seating ``z`` (atom ids < Kcap)."""
    n_ik = np.zeros((I, Kcap), dtype=np.int64)
    n_jk = np.zeros((J, Kcap), dtype=np.int64)
    n_k = np.zeros(Kcap, dtype=np.int64)
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        for s in range(offsets[e], offsets[e + 1]):
            k = z[s]
            n_ik[i, k] += 1
            n_jk[j, k] += 1
            n_k[k] += 1
    return n_ik, n_jk, n_k


#: Held-out scoring (``link_rates``, ``test_loglik_sum``) draws no random numbers, so it runs on
#: every core numba is given (``NUMBA_NUM_THREADS``, default: all) when it has at least this much
#: work (entries x atoms): each entry's rate, and each row's sum over its test zeros, is computed by
#: the same code in the same order on any thread, and the sums over entries and rows are then added
#: serially in the serial kernel's order, so the result is bit-identical at any thread count.
PARALLEL_MIN_WORK = 200_000


def parallel_threads(work):
    """Threads the scoring kernels use for ``work`` (entries x atoms): numba's thread count when the
    work is large enough and the call comes from the main thread (numba's default threading layer,
    workqueue, must not be entered by two Python threads at once, as a thread-based Dask worker or
    joblib backend could), else 1 (the serial kernel)."""
    if work < PARALLEL_MIN_WORK or threading.current_thread() is not threading.main_thread():
        return 1
    return numba.get_num_threads()


@njit(cache=True)
def _link_rates_serial(rows, cols, R, C, lam):
    T = R.shape[1]
    Rl = np.empty(T)                # R_i. lam of the row ``last`` (entries come sorted by row)
    last = -1
    out = np.empty(rows.shape[0])
    for e in range(rows.shape[0]):
        if rows[e] != last:
            last = rows[e]
            _scale_row(R, lam, last, Rl)
        out[e] = row_dot(Rl, C[cols[e]])
    return out


@njit(cache=True, parallel=True)
def _link_rates_parallel(rows, cols, R, C, lam):
    I, T = R.shape
    Rl = np.empty((I, T))
    for i in prange(I):
        _scale_row(R, lam, i, Rl[i])
    out = np.empty(rows.shape[0])
    for e in prange(rows.shape[0]):
        out[e] = row_dot(Rl[rows[e]], C[cols[e]])
    return out


def link_rates(rows, cols, R, C, lam):
    """Poisson rates sum_k R_ik C_jk lam_k at the given entries only (Eq. 1).

    O(len(rows) x T); fastest when the entries are sorted by row (as ``fit``
    sorts the test entries), so that each row of R lam stays in cache. On several cores
    (``parallel_threads``) the entries are shared out; every rate is the same number.
    """
    if parallel_threads(rows.shape[0] * R.shape[1]) > 1:
        return _link_rates_parallel(rows, cols, R, C, lam)
    return _link_rates_serial(rows, cols, R, C, lam)


@njit(cache=True)
def tdll_from_rates(rates, labels):
    """Mean Bernoulli log likelihood of 0/1 ``labels`` under P(x = 1) = 1 - exp(-rate)."""
    s = 0.0
    for e in range(rates.shape[0]):
        r = rates[e]
        if labels[e] != 0:
            s += math.log(-math.expm1(-r)) if r > 0.0 else -np.inf
        else:
            s -= r
    return s / rates.shape[0] if rates.shape[0] > 0 else np.nan


def split_test(t_rows, t_cols, t_labels, I):
    """Arrange held-out entries (sorted by row) for :func:`test_loglik_sum`.

    Returns ``(z_ptr, z_cols, o_rows, o_cols)``: the test zeros as CSR (row
    pointers of length I + 1 and their columns) and the test ones as (row,
    col) pairs.
    """
    t_rows = np.asarray(t_rows)
    zero = np.asarray(t_labels) == 0
    z_ptr = np.zeros(I + 1, dtype=np.int64)
    np.cumsum(np.bincount(t_rows[zero], minlength=I), out=z_ptr[1:])
    return (z_ptr, np.ascontiguousarray(t_cols[zero], dtype=np.int64),
            np.ascontiguousarray(t_rows[~zero]), np.ascontiguousarray(t_cols[~zero]))


@njit(cache=True)
def _zeros_rate_sum(i, z_ptr, z_cols, R, C, lam, W):
    """sum_k R_ik lam_k W_ik with W_ik = sum_{j in the test zeros of row i} C_jk (``W`` a scratch
    vector of length T): minus the log likelihood of row i's test zeros."""
    T = R.shape[1]
    for k in range(T):
        W[k] = 0.0
    for e in range(z_ptr[i], z_ptr[i + 1]):
        j = z_cols[e]
        for k in range(T):
            W[k] += C[j, k]
    s = 0.0
    for k in range(T):
        s += R[i, k] * lam[k] * W[k]
    return s


@njit(cache=True)
def _one_loglik(i, j, last, R, C, lam, Rl):
    """ln(1 - exp(-rate_ij)) of a test one; ``Rl`` holds R_i. lam for row ``last`` and is refilled
    when i differs (test ones come sorted by row)."""
    if i != last:
        for k in range(R.shape[1]):
            Rl[k] = R[i, k] * lam[k]
    r = row_dot(Rl, C[j])
    return math.log(-math.expm1(-r)) if r > 0.0 else -np.inf


@njit(cache=True)
def _test_loglik_sum_serial(z_ptr, z_cols, o_rows, o_cols, R, C, lam):
    I, T = R.shape
    W = np.empty(T)
    total = 0.0
    for i in range(I):
        if z_ptr[i] != z_ptr[i + 1]:
            total -= _zeros_rate_sum(i, z_ptr, z_cols, R, C, lam, W)
    Rl = np.empty(T)
    last = -1
    for e in range(o_rows.shape[0]):
        total += _one_loglik(o_rows[e], o_cols[e], last, R, C, lam, Rl)
        last = o_rows[e]
    return total


#: rows (test zeros) and test ones per task of the parallel scoring kernel
_CHUNK = 64


@njit(cache=True, parallel=True)
def _test_loglik_sum_parallel(z_ptr, z_cols, o_rows, o_cols, R, C, lam):
    """``_test_loglik_sum_serial`` with the rows' sums over their test zeros and the test ones' log
    likelihoods computed in parallel, chunk by chunk, each by the serial kernel's own functions,
    then added in the serial kernel's order: the same total, bit for bit, at any thread count."""
    I, T = R.shape
    row_sum = np.zeros(I)
    for b in prange((I + _CHUNK - 1) // _CHUNK):
        W = np.empty(T)
        for i in range(b * _CHUNK, min(I, (b + 1) * _CHUNK)):
            if z_ptr[i] != z_ptr[i + 1]:
                row_sum[i] = _zeros_rate_sum(i, z_ptr, z_cols, R, C, lam, W)
    n1 = o_rows.shape[0]
    term = np.empty(n1)
    for b in prange((n1 + _CHUNK - 1) // _CHUNK):
        Rl = np.empty(T)
        last = -1
        for e in range(b * _CHUNK, min(n1, (b + 1) * _CHUNK)):
            term[e] = _one_loglik(o_rows[e], o_cols[e], last, R, C, lam, Rl)
            last = o_rows[e]
    total = 0.0
    for i in range(I):
        if z_ptr[i] != z_ptr[i + 1]:
            total -= row_sum[i]
    for e in range(n1):
        total += term[e]
    return total


def test_loglik_sum(z_ptr, z_cols, o_rows, o_cols, R, C, lam):
    """Sum of the Bernoulli log likelihoods of the held-out entries (Eq. 1 link).

    A test zero contributes ln P(x = 0) = -rate_ij = -sum_k R_ik lam_k C_jk,
    so the zeros of row i only enter through W_ik = sum_{j in zeros(i)} C_jk:
    their sum is -sum_i sum_k R_ik lam_k W_ik. Accumulating W is an
    element-wise vector addition (the compiler vectorises it without changing
    any summation order), about three times faster than a dot product per
    entry; the test ones (a few percent of the entries) get their own rate and
    ln(1 - exp(-rate)). Cost O(test entries x T); no dense array.
    Equals ``n_test * tdll_from_rates(link_rates(...), labels)`` up to rounding.
    
    On several cores (``parallel_threads``) the rows and the test ones are shared out and their
    terms added in the serial order: the same number at any thread count.
    """
    if parallel_threads((z_cols.shape[0] + o_rows.shape[0]) * R.shape[1]) > 1:
        return _test_loglik_sum_parallel(z_ptr, z_cols, o_rows, o_cols, R, C, lam)
    return _test_loglik_sum_serial(z_ptr, z_cols, o_rows, o_cols, R, C, lam)


@njit(cache=True)
def crt_sum(rng, counts, r):
    """sum over the entries of ``counts`` (any shape, flattened) of CRT(count, r): Eqs. (24), (26), (33)."""
    flat = counts.ravel()
    w = 0
    for x in range(flat.shape[0]):
        if flat[x] > 0:
            w += sample_crt(rng, flat[x], r)
    return w


@njit(cache=True)
def dirichlet_multinomial_aux(rng, m_xk, m_k, alpha, n_rows):
    """Auxiliary draws for a symmetric Dirichlet concentration (Appendix C, Eqs. (32)-(34)).

    For each atom with m_..k > 0: ln v_k with v_k ~ Beta(n_rows alpha, m_..k), and
    w_xk ~ CRT(m_xk, alpha). Returns (sum_k ln v_k, sum_xk w_xk); then
    alpha | - ~ Gamma(e0 + sum w, f0 - n_rows sum_k ln v_k).
    """
    T = m_k.shape[0]
    slv = 0.0
    for k in range(T):
        if m_k[k] > 0:
            slv += sample_log_beta(rng, n_rows * alpha, float(m_k[k]))
    w = crt_sum(rng, m_xk, alpha)
    return slv, w
