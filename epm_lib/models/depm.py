"""The DEPM (Sec. 4.2, Appendix C): Dirichlet columns phi, psi and a truncated gamma process.

Derived step by step in ``chapters/13_depm_sampler``. Hyperparameters travel
as ``h = [alpha1, alpha2, gamma0, c0]`` (indices ``ALPHA1 .. C0``).

One sweep (``sweep(rng, ones, factors, counts, prior, n_split_merge, move_stats)``, with the
structures of ``common``: ``Ones``, ``Factors`` (phi, psi, lambda, h), ``Counts``, ``Prior``;
``depm_sweep`` takes them one by one):

1. m-step, Eqs. (10)-(11) with (U, V) replaced by (phi, psi) (``common.m_step``); then, when
   asked, split-merge moves on the labels of its customers (``moves.split_merge_depm``, Eq. (41));
2. alpha1 | m (collapsed over phi; Eqs. (32)-(34)), then phi | - (Eq. 30);
3. alpha2, then psi (Eq. 31);
4. c0 | lambda, gamma0 (Eq. 20); gamma0 | m, c0 (collapsed over lambda;
   Eqs. (35)-(36)); lambda_k ~ Gamma(gamma0/T + m_..k, c0 + 1) (Eq. 17 with
   sum_i phi_ik = sum_j psi_jk = 1).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..distributions import sample_gamma, sample_dirichlet
from .common import Counts, Factors, Ones, Prior, m_step, dirichlet_multinomial_aux
from .moves import split_merge_depm
from .gamma_epm import sample_c0, sample_gamma0, sample_lambda

ALPHA1, ALPHA2, GAMMA0, C0 = range(4)
HYPER_NAMES = ("alpha1", "alpha2", "gamma0", "c0")

__all__ = ["ALPHA1", "ALPHA2", "GAMMA0", "C0", "HYPER_NAMES",
           "sample_dirichlet_columns", "sample_concentration", "sweep", "depm_sweep"]


#: atoms per block of ``sample_dirichlet_columns`` (one 64-byte cache line of a row of counts)
_COLUMN_BLOCK = 8


@njit(cache=True)
def sample_dirichlet_columns(rng, m_xk, alpha, out):
    """{phi_ik}_i ~ Dirichlet({alpha1 + m_i.k}_i) for every atom k (Eqs. (30)-(31)); written into ``out``.

    The columns are drawn in the order k = 0, 1, ..., each by ``sample_dirichlet``. The counts and
    ``out`` are read and written by rows, ``_COLUMN_BLOCK`` atoms at a time (through a small
    transposed buffer), not down one column per atom."""
    n, T = out.shape
    B = _COLUMN_BLOCK
    conc = np.empty((B, n))
    col = np.empty((B, n))
    for k0 in range(0, T, B):
        kb = min(B, T - k0)
        for x in range(n):
            for b in range(kb):
                conc[b, x] = alpha + m_xk[x, k0 + b]
        for b in range(kb):
            sample_dirichlet(rng, conc[b], col[b])
        for x in range(n):
            for b in range(kb):
                out[x, k0 + b] = col[b, x]


@njit(cache=True)
def sample_concentration(rng, m_xk, m_k, alpha, n_rows, e0, f0):
    """alpha1 | m with phi collapsed (Eqs. (32)-(34)).

    v_k ~ Beta(I alpha1, m_..k), w_ik ~ Antoniak(m_i.k, alpha1),
    alpha1 ~ Gamma(e0 + sum w, f0 - I sum_k ln v_k).
    """
    slv, w = dirichlet_multinomial_aux(rng, m_xk, m_k, alpha, n_rows)
    return sample_gamma(rng, e0 + w, f0 - n_rows * slv)


@njit(cache=True)
def sweep(rng, ones, f, counts, prior, n_split_merge, move_stats):
    """One Gibbs sweep of the truncated DEPM, the steps 1-4 of the module docstring, on the entries
    ``ones`` (``common.Ones``). Updates the factors ``f`` (``common.Factors``: phi, psi, lambda, h)
    and the aggregates ``counts`` (``common.Counts``) in place. Returns M (negative: the m-step
    stopped on exploded rates, see ``common.m_step``). ``prior``: ``common.Prior`` (e0, f0).

    ``n_split_merge > 0``: right after the m-step (which then keeps each customer's atom, the same
    draws), that many split-merge proposals on the labels of the customers with phi, psi, lambda
    integrated out (``moves.split_merge_depm``, Eq. (41)); phi, psi and lambda are then drawn given
    the new counts, so the sweep is a valid partially collapsed Gibbs sweep. ``move_stats`` (5
    int64) accumulates the proposals and acceptances.
    """
    phi, psi, lam, h = f.R, f.C, f.lam, f.h
    m_ik, m_jk, m_k = counts.m_ik, counts.m_jk, counts.m_k
    e0, f0 = prior.e0, prior.f0
    I, T = phi.shape
    J = psi.shape[0]
    M, offsets, z = m_step(rng, ones, phi, psi, lam, counts, n_split_merge > 0)    # 1: Eqs. (10)-(11)
    if M < 0:                           # exploded rates: stop, fit raises (common.m_step_error)
        return M
    if n_split_merge > 0:
        z, a, b, c, Kp, stats = split_merge_depm(rng, ones.rows, ones.cols, offsets, z, m_ik, m_jk, m_k, I, J,
                                                 h[ALPHA1], h[ALPHA2], h[GAMMA0], T, n_split_merge)
        m_ik[:, :] = a
        m_jk[:, :] = b
        m_k[:] = c
        for q in range(5):
            move_stats[q] += stats[q]
    h[ALPHA1] = sample_concentration(rng, m_ik, m_k, h[ALPHA1], I, e0, f0)     # 2: Eqs. (32)-(34), (30)
    sample_dirichlet_columns(rng, m_ik, h[ALPHA1], phi)
    h[ALPHA2] = sample_concentration(rng, m_jk, m_k, h[ALPHA2], J, e0, f0)     # 3: Eq. (31)
    sample_dirichlet_columns(rng, m_jk, h[ALPHA2], psi)
    ones_T = np.ones(T)                 # 4: sum_i phi_ik = sum_j psi_jk = 1
    h[C0] = sample_c0(rng, h[GAMMA0], lam.sum(), e0, f0)
    h[GAMMA0] = sample_gamma0(rng, m_k, h[GAMMA0], h[C0], ones_T, e0, f0)
    sample_lambda(rng, m_k, h[GAMMA0] / T, h[C0] + ones_T, lam)
    return M


@njit(cache=True)
def depm_sweep(rng, rows, cols, phi, psi, lam, h, m_ik, m_jk, m_k, e0, f0, n_split_merge=0,
               move_stats=None, n_ones=-1):
    """:func:`sweep` with its arguments one by one, as the chapters of Part II call it: the entries
    (``rows``, ``cols``; ``n_ones`` = -1, the default: all are ones), phi, psi, lam, h, the
    aggregates and the hyperprior (e0, f0); ``move_stats`` None: the moves' counts are dropped."""
    stats = np.zeros(5, dtype=np.int64) if move_stats is None else move_stats
    return sweep(rng, Ones(rows, cols, n_ones if n_ones >= 0 else rows.shape[0]), Factors(phi, psi, lam, h),
                 Counts(m_ik, m_jk, m_k), Prior(e0, f0), n_split_merge, stats)
