"""The EPM (Appendix A) and the CEPM (Appendix B): gamma-distributed factors U, V.

Derived step by step in ``chapters/11_epm_sampler`` (EPM) and
``chapters/12_cepm_sampler`` (CEPM). Hyperparameters travel as a float
array ``h = [a1, b1, a2, b2, gamma0, c0]`` (indices ``A1 .. C0``).

One sweep (``sweep(rng, ones, factors, counts, prior, options)``, with the structures of
``common``: ``Ones``, ``Factors`` (U, V, lambda, h), ``Counts``, ``Prior``, and
:class:`GammaOptions`; ``epm_sweep`` takes the same arguments one by one), in this order;
steps marked *collapsed* sample a hyperparameter with the factor it governs integrated out, so
that factor is redrawn right after (a partially collapsed Gibbs step, which keeps the chain
exact):

1. m-step, Eqs. (10)-(11);
2. b1 | U, a1 (Eq. 18, with U where the paper prints phi);
   a1 | m, V, lambda, b1 (collapsed over U; Eqs. (23)-(25) with the
   erratum ln(b1/(b1 + lambda_k sum_j V_jk)); the CEPM instead draws a1 by
   grid Gibbs, Eq. (28), with b1 = C1 a1 and the extra factor
   (b1 + q_k)^(-m_..k)); U | - (Eq. 15);
3. the same for b2, a2, V (Eqs. (16), (19));
4. c0 | lambda, gamma0 (Eq. 20); gamma0 | m, U, V, c0 (collapsed over
   lambda; Eqs. (26)-(27)); lambda | - (Eq. 17).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..distributions import TINY, _standard_gamma_small, sample_gamma, sample_log_weights
from .common import Counts, Factors, Ones, Prior, m_step, crt_sum

A1, B1, A2, B2, GAMMA0, C0 = range(6)
HYPER_NAMES = ("a1", "b1", "a2", "b2", "gamma0", "c0")

__all__ = [
    "A1", "B1", "A2", "B2", "GAMMA0", "C0", "HYPER_NAMES",
    "sample_factors", "sample_lambda", "sample_rate_hyper", "sample_c0",
    "sample_shape_augmented", "shape_grid_log_weights", "sample_shape_grid",
    "sample_gamma0", "GammaOptions", "sweep", "epm_sweep",
]


@njit(cache=True)
def sample_factors(rng, m_xk, a, b, other_sum, lam, out):
    """U_ik ~ Gamma(a1 + m_i.k, b1 + lambda_k sum_j V_jk) (Eq. 15); same form for V (Eq. 16).

    Most counts are 0, so most draws have the shape a1: when a1 < 1 these go through
    ``_standard_gamma_small`` with 1/a1 computed once (the same draws as ``sample_gamma``)."""
    n, T = out.shape
    rate = np.empty(T)
    for k in range(T):
        rate[k] = b + other_sum[k] * lam[k]
    small = 0.0 < a < 1.0
    inv_a = 1.0 / a
    one_minus_a = 1.0 - a
    for x in range(n):
        for k in range(T):
            m = m_xk[x, k]
            if m == 0 and small:            # sample_gamma(rng, a, rate[k]), 1/a made once
                g = _standard_gamma_small(rng, a, inv_a, one_minus_a) / rate[k]
                out[x, k] = g if g > TINY else TINY
            else:
                out[x, k] = sample_gamma(rng, a + m, rate[k])


@njit(cache=True)
def sample_lambda(rng, m_k, shape0, rate_k, out):
    """lambda_k ~ Gamma(gamma0/T + m_..k, rate_k) (Eq. 17; rate_k = c0 + sum_i U_ik sum_j V_jk)."""
    for k in range(out.shape[0]):
        out[k] = sample_gamma(rng, shape0 + m_k[k], rate_k[k])


@njit(cache=True)
def sample_rate_hyper(rng, n_params, a, factor_sum, e0, f0):
    """b1 ~ Gamma(e0 + I T a1, f0 + sum_ik U_ik) (Eq. 18); also b2 (Eq. 19)."""
    return sample_gamma(rng, e0 + n_params * a, f0 + factor_sum)


@njit(cache=True)
def sample_c0(rng, gamma0, lam_sum, e0, f0):
    """c0 ~ Gamma(e0 + gamma0, f0 + sum_k lambda_k) (Eq. 20)."""
    return sample_gamma(rng, e0 + gamma0, f0 + lam_sum)


@njit(cache=True)
def sample_shape_augmented(rng, m_xk, a, b, q, n_rows, e0, f0):
    """EPM shape update, U collapsed (Eqs. (23)-(25), corrected).

    w_xk ~ Antoniak(m_x.k, a); a ~ Gamma(e0 + sum w, f0 + n_rows sum_k ln(1 + q_k / b)),
    where q_k = lambda_k sum_j V_jk is the exposure of U_.k in Eq. (12). Passing
    q_k = sum_j V_jk (without lambda_k) gives the update as printed in the paper.
    """
    w = crt_sum(rng, m_xk, a)
    rate = f0
    for k in range(q.shape[0]):
        rate += n_rows * math.log1p(q[k] / b)
    return sample_gamma(rng, e0 + w, rate)


@njit(cache=True)
def shape_grid_log_weights(grid, m_xk, m_k, q, C, n_rows, e0, f0, keep_count_factor):
    """Log weights of the CEPM grid Gibbs step for a1 (Eq. 28, corrected), with b1 = C a1.

    log P(a | -) = (e0 - 1) ln a - f0 a
                   + sum_k [ n_rows a ln(b/(b + q_k)) - m_..k ln(b + q_k) ]
                   + sum_xk [ ln G(a + m_x.k) - ln G(a) ],   b = C a.
    The term -m_..k ln(b + q_k) depends on a through b; the paper's proportionality
    (Eq. 23) drops it, which is only valid when b does not depend on a.
    ``keep_count_factor=False`` reproduces the paper's printed form.
    """
    maxm = 0
    n, T = m_xk.shape
    for x in range(n):
        for k in range(T):
            if m_xk[x, k] > maxm:
                maxm = m_xk[x, k]
    hist = np.zeros(maxm + 1, dtype=np.int64)
    for x in range(n):
        for k in range(T):
            hist[m_xk[x, k]] += 1
    out = np.empty(grid.shape[0])
    for g in range(grid.shape[0]):
        a = grid[g]
        b = C * a
        lw = (e0 - 1.0) * math.log(a) - f0 * a
        for k in range(T):
            lw -= n_rows * a * math.log1p(q[k] / b)
            if keep_count_factor:
                lw -= m_k[k] * math.log(b + q[k])
        lga = math.lgamma(a)
        for v in range(1, maxm + 1):
            if hist[v] > 0:
                lw += hist[v] * (math.lgamma(a + v) - lga)
        out[g] = lw
    return out


@njit(cache=True)
def sample_shape_grid(rng, grid, m_xk, m_k, q, C, n_rows, e0, f0, keep_count_factor):
    """Grid Gibbs draw of a1 for the CEPM (Appendix B), U collapsed. Returns the grid value."""
    lw = shape_grid_log_weights(grid, m_xk, m_k, q, C, n_rows, e0, f0, keep_count_factor)
    return grid[sample_log_weights(rng, lw)]


@njit(cache=True)
def sample_gamma0(rng, m_k, gamma0, c0, exposure, e0, f0):
    """gamma0 update, lambda collapsed (Eqs. (26)-(27)).

    w_k ~ Antoniak(m_..k, gamma0/T); gamma0 ~ Gamma(e0 + sum w, f0 + (1/T) sum_k ln(1 + S_k/c0)),
    S_k = sum_i U_ik sum_j V_jk (= 1 for the DEPM, giving Eq. (36)).
    """
    T = m_k.shape[0]
    w = crt_sum(rng, m_k, gamma0 / T)
    rate = f0
    for k in range(T):
        rate += math.log1p(exposure[k] / c0) / T
    return sample_gamma(rng, e0 + w, rate)


#: the EPM's and CEPM's choices of a sweep: ``cepm`` (b1 = C1 a1, b2 = C2 a2, the shapes by grid
#: Gibbs on ``grid``, Eq. (28)) and ``paper_a`` (the a-updates as printed: Eq. (25) without
#: lambda_k, Eq. (28) without the factor (b + q_k)^(-m_..k)); ``C1``, ``C2`` are floats (I, J)
GammaOptions = namedtuple("GammaOptions", ["cepm", "C1", "C2", "paper_a", "grid"])


@njit(cache=True)
def _sample_side(rng, side, F, m_xk, other_sum, f, counts, prior, opt, q):
    """Step 2 (``side`` 0: U, with a1, b1, C1, m_i.k, ``other_sum`` = sum_j V_jk) or step 3 (``side``
    1: V, with a2, b2, C2, m_.jk, sum_i U_ik) of the sweep for the factor ``F`` (n x T): b, then a
    collapsed over F (Eqs. (23)-(25); the CEPM: a by grid Gibbs, Eq. (28), and b = C a), then
    F | - (Eqs. (15)-(16)), in place (``f.h``, ``F``; ``q`` is scratch)."""
    h, lam = f.h, f.lam
    ia, ib = (A1, B1) if side == 0 else (A2, B2)
    C = opt.C1 if side == 0 else opt.C2
    n, T = F.shape
    for k in range(T):
        q[k] = other_sum[k] if (opt.paper_a and not opt.cepm) else lam[k] * other_sum[k]
    if opt.cepm:
        h[ia] = sample_shape_grid(rng, opt.grid, m_xk, counts.m_k, q, C, n, prior.e0, prior.f0, not opt.paper_a)
        h[ib] = C * h[ia]
    else:
        h[ib] = sample_rate_hyper(rng, n * T, h[ia], F.sum(), prior.e0, prior.f0)
        h[ia] = sample_shape_augmented(rng, m_xk, h[ia], h[ib], q, n, prior.e0, prior.f0)
    sample_factors(rng, m_xk, h[ia], h[ib], other_sum, lam, F)


@njit(cache=True)
def sweep(rng, ones, f, counts, prior, opt):
    """One Gibbs sweep of the EPM (``opt.cepm`` False) or the CEPM (True): the steps 1-4 of the
    module docstring on the entries ``ones`` (``common.Ones``).

    Updates the factors ``f`` (``common.Factors``: U, V, lambda, h) and the aggregates ``counts``
    (``common.Counts``) in place; returns M, the number of customers (negative: the m-step stopped
    on exploded rates and nothing else was updated, see ``common.m_step``). ``prior`` is
    ``common.Prior`` (e0, f0), ``opt`` a :class:`GammaOptions`.
    Totals (sum_i U_ik, sum_k lambda_k, ...) are numba's sequential sums; a step-by-step
    rebuild that wants bit-identical results must add in the same order (not numpy's
    pairwise ``sum``).
    """
    U, V, lam, h = f.R, f.C, f.lam, f.h
    e0, f0 = prior.e0, prior.f0
    T = U.shape[1]
    M, _, _ = m_step(rng, ones, U, V, lam, counts, False)     # 1: Eqs. (10)-(11)
    if M < 0:                           # exploded rates: stop, fit raises (common.m_step_error)
        return M
    q = np.empty(T)
    sumV = V.sum(axis=0)                # 2: b1, a1, U
    _sample_side(rng, 0, U, counts.m_ik, sumV, f, counts, prior, opt, q)
    sumU = U.sum(axis=0)                # 3: b2, a2, V
    _sample_side(rng, 1, V, counts.m_jk, sumU, f, counts, prior, opt, q)
    sumV = V.sum(axis=0)                # 4: c0 (Eq. 20), gamma0 (Eqs. (26)-(27)), lambda (Eq. 17)
    S = sumU * sumV
    h[C0] = sample_c0(rng, h[GAMMA0], lam.sum(), e0, f0)
    h[GAMMA0] = sample_gamma0(rng, counts.m_k, h[GAMMA0], h[C0], S, e0, f0)
    rate = h[C0] + S
    sample_lambda(rng, counts.m_k, h[GAMMA0] / T, rate, lam)
    return M


@njit(cache=True)
def epm_sweep(rng, rows, cols, U, V, lam, h, m_ik, m_jk, m_k, e0, f0,
              cepm, C1, C2, paper_a, grid, n_ones=-1):
    """:func:`sweep` with its arguments one by one, as the chapters of Part II call it: the entries
    (``rows``, ``cols``; ``n_ones`` = -1, the default: all are ones), the factors U, V, lam, h, the
    aggregates, the hyperprior (e0, f0) and the options of :class:`GammaOptions`. Returns M."""
    return sweep(rng, Ones(rows, cols, n_ones if n_ones >= 0 else rows.shape[0]), Factors(U, V, lam, h),
                 Counts(m_ik, m_jk, m_k), Prior(e0, f0), GammaOptions(cepm, C1, C2, paper_a, grid))
