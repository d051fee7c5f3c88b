"""Deliberately wrong split-merge moves: the errors the exactness checks must catch.

``moves.propose_split_merge`` makes its proposals from named steps (choose the anchors, lay out
S, the proposal's log ratio, the acceptance ratio, accept and write back). A mutant here is the
same loop over the same steps with one step swapped for a wrong one, so that the production
kernel tests no flag:

* ``merge_without_reverse_q`` (mutation 1): the merge's acceptance ratio without the probability
  of its reverse split (q_SA, or q of the final scan): -ln pi(S1) pi(S2)/pi(S1 u S2) instead of
  -(that - ln q);
* ``depm_without_label_factor`` (mutation 2): the DEPM's ratio without its label-choice factor
  ln(T - K+) (split) and -ln(T - K+ + 1) (merge); a factor 1 when T = 2;
* ``block_merge_not_rejected`` (mutation 3): a block merge of atoms that share a block laid out
  and evaluated as a customer merge instead of rejected (its reverse block split has probability
  0, so the merge's flow becomes positive and its reverse's stays 0).

Each takes the arguments of ``moves.propose_split_merge``; ``split_merge_idepm`` and
``split_merge_depm`` are the library's moves with a mutant's loop (``mutation``: 1, 2 or 3; 0
gives the exact moves, draw for draw). Used by ``epm_lib.exactness`` and ``epm_lib.geweke`` (the
checks' power against these errors), ``tests/test_moves.py`` and chapters 13b and 14b.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .common import seat_counts
from . import moves
from .moves import (_FREE, _K_PLUS, UNIT_CUSTOMER, N_STATS, Proposal, customer_cells,
                    depm_target, _idepm_n_labels, idepm_target, _renumber)

__all__ = ["MUTATIONS", "merge_without_reverse_q", "depm_without_label_factor",
           "block_merge_not_rejected", "split_merge_idepm", "split_merge_depm"]

#: the mutations by name (0: none, the exact moves)
MUTATIONS = {
    "none": 0,
    "merge_without_reverse_q": 1,
    "depm_without_label_factor": 2,
    "block_merge_not_rejected": 3,
}


@njit(cache=True)
def _log_acceptance_without_reverse_q(split, log_r, log_pi, T, n_free):
    """``moves._log_acceptance`` with -ln pi for a merge: its reverse split's q dropped."""
    if split:
        log_a = log_r
        if T > 0:
            log_a += math.log(n_free)
    else:
        log_a = -log_pi
        if T > 0:
            log_a -= math.log(n_free + 1)
    return log_a


@njit(cache=True)
def _log_acceptance_without_label_factor(split, log_r, log_pi, T, n_free):
    """``moves._log_acceptance`` without the DEPM's label factor."""
    return log_r if split else -log_r


@njit(cache=True)
def _propose_mutant(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units,
                    mutation):
    """``moves.propose_split_merge`` with the step of ``mutation`` swapped (see the module
    docstring); the same steps in the same order otherwise."""
    M = z.shape[0]
    stats = np.zeros(N_STATS, np.int64)
    index = moves._build_index(z, n_labels)
    if M < 2:
        return index.n[_K_PLUS], stats, index
    w = moves._weights(target, M)
    p_row, p_col = moves._unit_probs(units)
    cnt, lay, bl = moves._scratch(cust, M, p_row + p_col > 0.0)
    budget = moves._budget(index, M)
    work = 0.0
    it = -1
    while True:
        it += 1
        if n_proposals >= 0:
            if it >= n_proposals:
                break
        elif work >= budget:
            break
        prop = moves._choose(rng, z, units, p_row, p_col, stats)
        if it < trace.shape[0] and trace.shape[1] > 3:
            trace[it, 3] = prop.unit
        if moves._split_impossible(prop, cust, index):
            work += moves._stay(prop, index, stats, trace, it)
            continue
        n = moves._lay_out(rng, prop, z, cust, index, lay, bl)
        if n < 0:
            if mutation != 3:
                work += moves._reject_inconsistent(prop, index, stats, trace, it)
                continue
            # mutation 3: laid out as a customer merge (its statistics stay its unit's)
            prop = Proposal(np.int64(UNIT_CUSTOMER), prop.us, prop.s1, prop.s2, prop.k1, prop.k2,
                            prop.split)
            n = moves._lay_out(rng, prop, z, cust, index, lay, bl)
        want_q = mutation == 1 or (it < trace.shape[0] and trace.shape[1] > 5)
        size_S, cost, log_r, log_pi, log_q = moves._log_ratio(rng, prop, n, n_scans, want_q, cust,
                                                              lay, cnt, bl, w)
        work += cost
        if mutation == 1:
            log_a = _log_acceptance_without_reverse_q(prop.split, log_r, log_pi, target.T,
                                                      index.n[_FREE])
        elif mutation == 2:
            log_a = _log_acceptance_without_label_factor(prop.split, log_r, log_pi, target.T,
                                                         index.n[_FREE])
        else:
            log_a = moves._log_acceptance(prop.split, log_r, log_pi, target.T, index.n[_FREE])
        moves._record(trace, it, log_a, prop.split, size_S, log_pi, log_q)
        if moves._accepted(rng, log_a):
            moves._write_back(rng, prop, n, z, index, lay, bl, target.T, stats)
    return index.n[_K_PLUS], stats, index


@njit(cache=True)
def merge_without_reverse_q(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units):
    """``moves.propose_split_merge`` with the merge's ratio without q of its reverse split."""
    return _propose_mutant(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units,
                           np.int64(1))


@njit(cache=True)
def depm_without_label_factor(rng, cust, z, n_labels, target, n_proposals, n_scans, trace,
                              units):
    """``moves.propose_split_merge`` with the DEPM's ratio without its label-choice factor."""
    return _propose_mutant(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units,
                           np.int64(2))


@njit(cache=True)
def block_merge_not_rejected(rng, cust, z, n_labels, target, n_proposals, n_scans, trace,
                             units):
    """``moves.propose_split_merge`` with a block merge of atoms that share a block evaluated as
    a customer merge instead of rejected."""
    return _propose_mutant(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units,
                           np.int64(3))


@njit(cache=True)
def split_merge_idepm(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, alpha1, alpha2, gamma0,
                      n_proposals, n_scans, units, mutation):
    """``moves.split_merge_idepm`` with the proposals of ``_propose_mutant(..., mutation)``."""
    zz = z.copy()
    n_labels = _idepm_n_labels(n_k.shape[0], zz.shape[0], n_proposals)
    Kp, stats, _ = _propose_mutant(
        rng, customer_cells(rows, cols, offsets, n_ik.shape[0], n_jk.shape[0]), zz, n_labels,
        idepm_target(I, J, alpha1, alpha2, gamma0), n_proposals, n_scans, np.empty((0, 3)),
        units, mutation)
    _renumber(zz, n_labels)
    a, b, c = seat_counts(rows, cols, offsets, zz, n_ik.shape[0], n_jk.shape[0], max(Kp, 1))
    return zz, a, b, c, Kp, stats


@njit(cache=True)
def split_merge_depm(rng, rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, alpha1, alpha2, gamma0, T,
                     n_proposals, n_scans, units, mutation):
    """``moves.split_merge_depm`` with the proposals of ``_propose_mutant(..., mutation)``."""
    zz = z.copy()
    Kp, stats, _ = _propose_mutant(
        rng, customer_cells(rows, cols, offsets, m_ik.shape[0], m_jk.shape[0]), zz, np.int64(T),
        depm_target(I, J, alpha1, alpha2, gamma0, T), n_proposals, n_scans, np.empty((0, 3)),
        units, mutation)
    x, y, w = seat_counts(rows, cols, offsets, zz, m_ik.shape[0], m_jk.shape[0], T)
    return zz, x, y, w, Kp, stats
