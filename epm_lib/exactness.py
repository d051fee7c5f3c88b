"""Exactness of the split-merge moves against the enumerated conditional (``chapters/15b_checking_moves``).

The split-merge moves of ``models.moves`` are Metropolis-Hastings kernels meant to leave the
conditional of the seating, P(z | m, h) (the product-partition form of the ``moves`` module
docstring: Eq. (41) for the DEPM, Theorem 4 for the IDEPM), invariant. On a tiny instance
(M = 5-7 distinguishable customers) every state can be listed -- every set partition of the
customers (IDEPM) or every map customer -> label in 0..T-1 (DEPM) -- and P(z | m, h) computed
exactly. ``partition_test`` runs a chain of moves alone (no Gibbs sweep) from the state with one
atom, records its state every ``thin`` proposals, and compares the frequencies with the exact
probabilities by a chi-square test (cells pooled, from the least probable, until each expects at
least 5 draws). A kernel that is exact gives a uniform p-value; a wrong acceptance ratio (a
mutant of ``models.moves_mutants``, wrong on purpose) moves the chain to another stationary law
and, with enough draws, a tiny p-value.

The thinning makes the recorded states nearly independent: on the instances of ``INSTANCES``
the autocorrelation time of the state indicators is at most ~16 proposals (lag-50 correlations
below 0.01, measured when the tests were written), so the chi-square test's independence
assumption holds to a good approximation at ``thin=50``.

Block units (``units=moves.UNIT_ROW`` or ``UNIT_COLUMN`` alone) cannot leave the states in which
every row's (column's) customers share an atom, when started from one atom; the chain is then
compared with P(z | m, h) conditioned on those states (and checked never to leave them).

The tests are in ``tests/test_moves.py`` and ``tests/test_exactness.py``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from numba import njit
from scipy.stats import chisquare

from .models import idepm, moves, moves_mutants
from .interrupt import deferred_sigint

__all__ = ["INSTANCES", "MUTATIONS", "THIN", "ExactnessTest", "partition_test",
           "exact_conditional", "set_partitions", "pooled_chisquare", "pool_cells", "adjacent_chisquare"]

#: proposals between recorded states (well beyond the autocorrelation time on ``INSTANCES``)
THIN = 50

#: tiny instances: entries (rows, cols) of the ones, customers per entry m_ij., and the dimensions
#: I, J of X (larger than the rows / columns that hold ones: empty rows and columns must
#: contribute 1 to the target)
INSTANCES = {
    # 5 customers in three entries (52 set partitions, 3^5 = 243 label maps with T = 3)
    "3x2_M5": (np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([2, 2, 1]), 4, 3),
    # 6 customers (203 set partitions, 64 label maps with T = 2)
    "2x2_M6": (np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([3, 2, 1]), 2, 2),
    # every row and column holds 3 customers (blocks of 1-3 customers in an atom)
    "2x2_full": (np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([2, 1, 1, 2]), 2, 2),
    # four rows (15 row-consistent partitions), rows and columns of 1-3 customers; and its transpose
    "4x2_M7": (np.array([0, 1, 1, 2, 3, 3]), np.array([0, 0, 1, 1, 0, 1]),
               np.array([2, 1, 1, 1, 1, 1]), 4, 2),
    "2x4_M7": (np.array([0, 0, 1, 1, 0, 1]), np.array([0, 1, 1, 2, 3, 3]),
               np.array([2, 1, 1, 1, 1, 1]), 2, 4),
}

#: the deliberate errors of ``models.moves_mutants`` by name: 1, the merge's ratio without the
#: probability of its reverse split, q_SA (or q_scan); 2, the DEPM's ratio without the
#: label-choice factor ln(T - K+) (a factor 1 when T = 2); 3, a block merge of atoms that share
#: a block evaluated as a customer merge, not rejected
MUTATIONS = moves_mutants.MUTATIONS


class ExactnessTest(NamedTuple):
    """Result of ``partition_test``."""
    chi2: float           #: the chi-square statistic over the pooled cells
    p: float              #: its p-value (cells - 1 degrees of freedom)
    table: pd.DataFrame   #: one row per state: K, exact probability, expected and observed counts
    cells: int            #: number of pooled cells
    stats: np.ndarray     #: the moves' statistics summed over the chain (``moves.N_STATS``)


# ------------------------------------------------------------------------------- the chain
@njit(cache=True)
def _chain_codes(rng, rows, cols, offsets, z, I, J, a1, a2, g0, T, n_samples, thin, n_scans,
                 mutation, units):
    """Codes of the states after every ``thin`` proposals: the restricted-growth string of the
    partition (T = 0, IDEPM) or the label map (T > 0, DEPM), read as a base-M (base-T) number."""
    M = z.shape[0]
    n_rows = rows.max() + 1
    n_cols = cols.max() + 1
    if T == 0:
        c = idepm.seat_counts(rows, cols, offsets, z, n_rows, n_cols, z.max() + 1)
    else:
        c = idepm.seat_counts(rows, cols, offsets, z, n_rows, n_cols, T)
    n_ik, n_jk, n_k = c
    codes = np.empty(n_samples, np.int64)
    stats = np.zeros(moves.N_STATS, np.int64)
    for it in range(n_samples):
        if T == 0 and mutation == 0:
            z, n_ik, n_jk, n_k, K, st = moves.split_merge_idepm(
                rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, a1, a2, g0, thin, n_scans,
                units)
        elif T == 0:
            z, n_ik, n_jk, n_k, K, st = moves_mutants.split_merge_idepm(
                rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, a1, a2, g0, thin, n_scans,
                units, mutation)
        elif mutation == 0:
            z, n_ik, n_jk, n_k, K, st = moves.split_merge_depm(
                rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, a1, a2, g0, T, thin, n_scans,
                units)
        else:
            z, n_ik, n_jk, n_k, K, st = moves_mutants.split_merge_depm(
                rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, a1, a2, g0, T, thin, n_scans,
                units, mutation)
        stats += st
        code = 0
        if T == 0:
            first = np.full(M + 1, -1, np.int64)
            nxt = 0
            for s in range(M):
                if first[z[s]] < 0:
                    first[z[s]] = nxt
                    nxt += 1
                code = code * M + first[z[s]]
        else:
            for s in range(M):
                code = code * T + z[s]
        codes[it] = code
    return codes, stats


# --------------------------------------------------------------------------- the states
def set_partitions(M):
    """Every set partition of ``M`` labelled customers (items), Bell(M) of them, as restricted-growth
    strings in lexicographic order: ``z[s]`` is the block (atom) of customer ``s``, the blocks numbered
    in order of first appearance (``z[0] = 0``, each label at most one more than the largest before
    it), so that ``max(z) + 1`` is the number of blocks. ``set_partitions(3)`` is
    ``[[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]``; that of no customers, ``[[]]``."""
    if M == 0:
        return [[]]
    out = []

    def rec(prefix, top):
        if len(prefix) == M:
            out.append(prefix)
            return
        for v in range(top + 2):
            rec(prefix + [v], max(top, v))

    rec([0], 0)
    return out


def _states(M, T):
    if T == 0:
        return set_partitions(M), M
    return [list(t) for t in np.ndindex(*(T,) * M)], T


def _code(state, base):
    c = 0
    for v in state:
        c = c * base + v
    return c


def _block_consistent(state, key):
    """Every block (customers with the same ``key``) in one atom."""
    state = np.asarray(state)
    return all(np.unique(state[key == k]).size == 1 for k in np.unique(key))


def _instance(instance):
    if isinstance(instance, str):
        instance = INSTANCES[instance]
    rows, cols, m, I, J = instance
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    m = np.asarray(m, np.int64)
    if not (rows.shape == cols.shape == m.shape) or m.min() < 1:
        raise ValueError("instance: rows, cols and m must have one entry per one, m >= 1")
    offsets = np.concatenate([[0], np.cumsum(m)]).astype(np.int64)
    return rows, cols, m, offsets, int(I), int(J)


def _model_T(model, T):
    if model == "IDEPM":
        if T is not None:
            raise ValueError("the IDEPM has no truncation T")
        return 0
    if model == "DEPM":
        if T is None or int(T) < 2:
            raise ValueError("the DEPM needs a truncation T >= 2")
        return int(T)
    raise ValueError(f"model must be 'IDEPM' or 'DEPM', not {model!r}")


def exact_conditional(model, instance, *, alpha1, alpha2, gamma0, T=None,
                      units=moves.UNIT_CUSTOMER):
    """Every state of ``instance`` and its exact probability P(z | m, h).

    Returns ``(states, probs)``: the restricted-growth strings (IDEPM) or label maps (DEPM, labels
    0..T-1) as lists, and their probabilities from ``moves.log_seating_target``, normalised.
    With ``units`` ``moves.UNIT_ROW`` (``UNIT_COLUMN``) the law is conditioned on the states in
    which every row's (column's) customers share an atom, the closed class of those moves.
    """
    Tm = _model_T(model, T)
    rows, cols, m, offsets, I, J = _instance(instance)
    states, _ = _states(int(offsets[-1]), Tm)
    logp = np.array([moves.log_seating_target(rows, cols, offsets, np.array(s), I, J, alpha1,
                                              alpha2, gamma0, None if Tm == 0 else Tm)
                     for s in states])
    probs = np.exp(logp - logp.max())
    if units in (moves.UNIT_ROW, moves.UNIT_COLUMN):
        key = np.repeat(rows if units == moves.UNIT_ROW else cols, m)
        probs *= np.array([_block_consistent(s, key) for s in states])
    return states, probs / probs.sum()


# ------------------------------------------------------------------------------- the test
def _by_probability(probs):
    """Indices of ``probs`` from the least probable up, ties in the order of the states.

    Many states are equally probable by symmetry (relabellings, exchangeable customers), and
    their computed probabilities differ in the last bits with the CPU's exp (numpy's SIMD loops);
    an unstable sort of the raw values would pool different cells on different machines. The
    probabilities are therefore rounded to 12 decimals and sorted stably.
    """
    return np.argsort(np.round(probs, 12), kind="stable")


def pool_cells(counts, expected, min_expected=5.0):
    """Pool adjacent cells, left to right, until each pooled cell expects >= ``min_expected``
    draws; a remainder joins the last pooled cell (all cells in one if none reaches it).
    Returns the pooled ``(observed, expected)`` lists (also used by the distribution tests)."""
    obs_b, exp_b, o, e = [], [], 0.0, 0.0
    for oi, ei in zip(counts, expected):
        o += oi
        e += ei
        if e >= min_expected:
            obs_b.append(o)
            exp_b.append(e)
            o = e = 0.0
    if obs_b:
        obs_b[-1] += o
        exp_b[-1] += e
    else:
        obs_b, exp_b = [o], [e]
    return obs_b, exp_b


def adjacent_chisquare(counts, probs):
    """Pearson chi-square test of observed ``counts`` against cell probabilities ``probs`` (normalised
    here), for cells with a natural order (the values of a draw: 0, 1, 2, ...): adjacent cells are pooled
    left to right until each expects >= 5 draws, a remainder joins the last pooled cell
    (:func:`pool_cells`). Returns ``(p, n_cells)``; p = 1.0 when fewer than two cells remain. Used by the
    building-block chapters (``10_building_blocks``, ``10b_log_space``) and ``tests/test_distributions.py``."""
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    obs_b, exp_b = pool_cells(counts, probs / probs.sum() * counts.sum())
    if len(obs_b) < 2:
        return 1.0, len(obs_b)
    return float(chisquare(obs_b, exp_b).pvalue), len(obs_b)


def pooled_chisquare(counts, probs):
    """Chi-square test of ``counts`` against ``probs``, the cells pooled from the least probable
    up until each expects >= 5 draws (the last remainder joins the last cell; equally probable
    states in their given order, so the pooling does not depend on the CPU).

    Returns ``(chi2, p, cells)``.
    """
    counts = np.asarray(counts)
    probs = np.asarray(probs)
    n = counts.sum()
    exp = probs * n
    order = _by_probability(probs)
    obs_b, exp_b = pool_cells(counts[order], exp[order])
    res = chisquare(obs_b, exp_b)
    return float(res.statistic), float(res.pvalue), len(obs_b)


def partition_test(model, instance, *, alpha1=1.0, alpha2=1.0, gamma0=1.0, T=None, n_scans=0,
                   units=moves.UNIT_CUSTOMER, mutation=None, n_samples=30_000, thin=THIN,
                   seed=0) -> ExactnessTest:
    """Chi-square test of a chain of split-merge moves alone against the enumerated P(z | m, h).

    ``model``: ``"IDEPM"`` (states: set partitions; ``T`` must be None) or ``"DEPM"`` (states:
    label maps to 0..T-1). ``instance``: a key of ``INSTANCES`` or a tuple ``(rows, cols, m, I,
    J)``. ``alpha1, alpha2, gamma0``: the hyperparameters h. ``n_scans`` and ``units`` as for
    ``moves.split_merge_idepm``. ``mutation``: None (the exact kernel) or a key or value of
    ``MUTATIONS``, a deliberately wrong acceptance ratio. The chain starts with every customer at
    one atom and records its state after every ``thin`` proposals, ``n_samples`` times (seeded
    by ``seed``); the first record is kept (at ``thin`` = 50 the start is forgotten).

    Returns an ``ExactnessTest`` (chi2, p, table, cells, stats): ``table`` has one row per state
    with positive probability (``state``: the labels of the customers, ``K``: atoms in use,
    ``prob``, ``expected`` and ``observed`` counts), most probable first (ties in reverse order). Raises ``RuntimeError``
    if the chain visits a state of probability 0 (a block chain leaving its closed class).
    """
    Tm = _model_T(model, T)
    mut = MUTATIONS.get(mutation, -1) if isinstance(mutation, str) else int(mutation or 0)
    if mut not in MUTATIONS.values():
        raise ValueError(f"mutation must be one of {list(MUTATIONS)}")
    if n_samples < 1 or thin < 1:
        raise ValueError("n_samples and thin must be >= 1")
    rows, cols, m, offsets, I, J = _instance(instance)
    M = int(offsets[-1])
    states, probs = exact_conditional(model, (rows, cols, m, I, J), alpha1=alpha1, alpha2=alpha2,
                                      gamma0=gamma0, T=T, units=units)
    base = M if Tm == 0 else Tm
    index = {_code(s, base): n for n, s in enumerate(states)}
    z0 = np.zeros(M, np.int64)
    with deferred_sigint():     # one kernel call: Ctrl-C is delivered when it returns
        codes, stats = _chain_codes(np.random.default_rng(seed), rows, cols, offsets, z0, I, J,
                                    float(alpha1), float(alpha2), float(gamma0), np.int64(Tm),
                                    np.int64(n_samples), np.int64(thin), np.int64(n_scans),
                                    np.int64(mut), np.int64(units))
    counts = np.bincount(np.array([index[c] for c in codes]), minlength=len(states))
    if counts[probs == 0].sum():
        raise RuntimeError("the chain left the closed class of its moves")
    keep = probs > 0
    chi2, p, cells = pooled_chisquare(counts[keep], probs[keep])
    kept = [s for s, k in zip(states, keep) if k]
    order = _by_probability(probs[keep])[::-1]
    table = pd.DataFrame({
        "state": ["".join(map(str, s)) for s in kept],
        "K": [len(set(s)) for s in kept],
        "prob": probs[keep],
        "expected": probs[keep] * n_samples,
        "observed": counts[keep],
    }).iloc[order].reset_index(drop=True)
    return ExactnessTest(chi2, p, table, cells, stats)
