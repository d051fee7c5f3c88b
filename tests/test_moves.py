"""Split-merge moves (``epm_lib.models.moves``) against the exact conditional P(z | m, h).

(a) On tiny instances (M = 5 or 6 distinguishable customers) every set partition (IDEPM) or
    label map (DEPM, T = 2 or 3) is enumerated, P(z | m, h) computed from the product-partition
    form, and a chain of moves alone is compared with it by a chi-square test. The chain is
    thinned by ``THIN`` proposals, well beyond the autocorrelation time (at most ~16 proposals
    for the state indicators of these instances, measured when the test was written; lag-50
    correlations are below 0.01), so the thinned states are close to independent.
    Block units (rows, columns, and the default mixture with customers) are tested the same
    way on instances where several customers share a row or a column in one atom; a chain of
    row (column) blocks alone cannot leave the block-consistent states reachable from one atom
    (every row's customers in one atom), so it is compared with P(z | m, h) conditioned on them
    (and is checked never to leave them).
(b) A deliberately wrong ratio (the merge without the reverse split's q_SA; the DEPM without
    the label-choice factor; a block merge of atoms that share a block evaluated as a customer
    merge instead of rejected) fails the same test.
(c) Bookkeeping: counts equal ``idepm.seat_counts`` of the returned z, labels contiguous, the
    customer index consistent, the same seed gives the same output.
(d) The target agrees with ``theory.log_joint_counts`` (Eq. 41) and
    ``theory.log_partition_likelihood`` (Theorem 4) for states with the same m.
"""
import math

import numpy as np
import pytest

from epm_lib import exactness, theory
from epm_lib.models import idepm, moves, moves_mutants

THIN = exactness.THIN  # proposals between recorded states
N_SAMPLES = 30_000   # recorded states per chain (1.5M proposals)
N_SAMPLES_BLOCKS = 20_000   # the same for block units (1M proposals)
P_OK = 1e-3
P_BAD = 1e-6


# ------------------------------------------------------------------------------------ helpers
# The enumeration machinery (the chain of moves alone, the exact conditional, the pooled
# chi-square test) lives in epm_lib.exactness, which chapter 15 calls too.
INSTANCES = exactness.INSTANCES
CUSTOMER, ROW, COLUMN, MIXED = (moves.UNIT_CUSTOMER, moves.UNIT_ROW, moves.UNIT_COLUMN,
                                moves.UNITS_MIXED)


def _run(instance, T, a1, a2, g0, mutation, seed, n_scans=0, units=CUSTOMER,
         n_samples=N_SAMPLES):
    res = exactness.partition_test("IDEPM" if T == 0 else "DEPM", instance, alpha1=a1, alpha2=a2,
                                   gamma0=g0, T=None if T == 0 else T, n_scans=n_scans,
                                   units=units, mutation=mutation, n_samples=n_samples,
                                   thin=THIN, seed=seed)
    return res.p, res.cells, res.stats


def _unit_stats(stats, unit):
    base = moves.N_GLOBAL_STATS + moves.N_UNIT_STATS * unit
    return stats[base:base + moves.N_UNIT_STATS]


EXACT_CASES = [   # (instance, T (0 = IDEPM), alpha1, alpha2, gamma0)
    ("3x2_M5", 0, 1.0, 1.0, 1.0),
    ("3x2_M5", 0, 0.05, 0.05, 1.0),
    ("3x2_M5", 0, 1.0, 1.0, 5.0),
    ("3x2_M5", 0, 0.5, 2.0, 20.0),
    ("2x2_M6", 0, 0.05, 1.0, 0.3),
    ("2x2_M6", 0, 2.0, 0.05, 50.0),
    ("3x2_M5", 3, 1.0, 1.0, 1.0),
    ("3x2_M5", 3, 0.05, 0.05, 2.0),
    ("3x2_M5", 3, 0.5, 2.0, 10.0),
    ("2x2_M6", 2, 0.5, 0.05, 3.0),
    ("2x2_M6", 2, 0.05, 1.0, 0.5),
]
# Note: with T = 2 and a large gamma0 the chain of moves alone sits at K+ = T (splits blocked)
# and rarely merges, so its states are correlated far beyond THIN; such cases are left out.


# ---------------------------------------------------------------------------- (a) exactness
@pytest.mark.parametrize("n_scans", [0, 2])
@pytest.mark.parametrize("instance, T, a1, a2, g0", EXACT_CASES)
def test_moves_leave_the_exact_conditional_invariant(instance, T, a1, a2, g0, n_scans):
    p, cells, stats = _run(instance, T, a1, a2, g0, 0, 12345, n_scans)
    print(f"{instance} T={T} alpha=({a1}, {a2}) gamma0={g0} n_scans={n_scans}: chi2 p = {p:.4g} "
          f"({cells} cells), stats {stats.tolist()}")
    assert stats[moves.SPLIT_ACCEPTED] > 100 and stats[moves.MERGE_ACCEPTED] > 100
    if T > 0:
        assert stats[moves.SPLIT_BLOCKED] > 0           # the K+ = T edge is exercised
    assert p > P_OK, p


# ------------------------------------------------------------------------------ (b) mutation
@pytest.mark.parametrize("instance, T, a1, a2, g0, mutation, n_scans", [
    # 1: the merge's ratio without the probability of its reverse split (visible where merges
    #    are not always accepted anyway); 2: the DEPM without the label-choice factor (1 when
    #    T = 2)
    ("3x2_M5", 0, 0.05, 0.05, 1.0, 1, 0),
    ("2x2_M6", 0, 0.05, 1.0, 0.3, 1, 0),
    ("3x2_M5", 0, 0.5, 2.0, 20.0, 1, 0),
    ("3x2_M5", 3, 0.05, 0.05, 2.0, 1, 0),
    ("2x2_M6", 2, 0.05, 1.0, 0.5, 1, 0),
    ("3x2_M5", 3, 1.0, 1.0, 1.0, 2, 0),
    ("3x2_M5", 3, 0.5, 2.0, 10.0, 2, 0),
    ("3x2_M5", 0, 0.05, 0.05, 1.0, 1, 2),
    ("2x2_M6", 2, 0.05, 1.0, 0.5, 1, 2),
    ("3x2_M5", 3, 0.5, 2.0, 10.0, 2, 2),
])
def test_a_wrong_ratio_fails(instance, T, a1, a2, g0, mutation, n_scans):
    p, cells, stats = _run(instance, T, a1, a2, g0, mutation, 12345, n_scans)
    print(f"mutation {mutation}: {instance} T={T} alpha=({a1}, {a2}) gamma0={g0} "
          f"n_scans={n_scans}: chi2 p = {p:.3g} ({cells} cells)")
    assert p < P_BAD, p


# ------------------------------------------------------------------- (a, b) block units
BLOCK_CASES = [   # (instance, T, alpha1, alpha2, gamma0, units)
    ("2x2_full", 0, 0.5, 0.5, 1.0, MIXED),
    ("2x2_full", 0, 0.05, 0.05, 1.0, MIXED),
    ("4x2_M7", 0, 0.3, 0.3, 1.0, MIXED),
    ("2x2_full", 2, 0.5, 0.5, 2.0, MIXED),
    ("3x2_M5", 3, 0.05, 0.05, 2.0, MIXED),
    ("4x2_M7", 0, 0.3, 0.3, 1.0, ROW),
    ("2x4_M7", 0, 0.5, 0.05, 2.0, COLUMN),
    ("4x2_M7", 3, 0.3, 1.0, 3.0, ROW),
]


@pytest.mark.slow
@pytest.mark.parametrize("n_scans", [0, 2])
@pytest.mark.parametrize("instance, T, a1, a2, g0, units", BLOCK_CASES)
def test_block_moves_leave_the_exact_conditional_invariant(instance, T, a1, a2, g0, units, n_scans):
    p, cells, stats = _run(instance, T, a1, a2, g0, 0, 2024, n_scans, units, N_SAMPLES_BLOCKS)
    print(f"{instance} T={T} alpha=({a1}, {a2}) gamma0={g0} units={units} n_scans={n_scans}: "
          f"chi2 p = {p:.4g} ({cells} cells), per unit "
          f"{[_unit_stats(stats, u).tolist() for u in (CUSTOMER, ROW, COLUMN)]}")
    blocks = (ROW, COLUMN) if units == MIXED else (units,)
    for u in blocks:
        st = _unit_stats(stats, u)
        assert st[moves.SPLIT_ACCEPTED] > 100 and st[moves.MERGE_ACCEPTED] > 100
        assert st[moves.SPLIT_IMPOSSIBLE] > 0                 # anchors in one block
        if units == MIXED:
            assert st[moves.MERGE_INCONSISTENT] > 100         # atoms sharing a block
    # the global statistics are the sums of the units'
    per_unit = sum(_unit_stats(stats, u)[:4] for u in (CUSTOMER, ROW, COLUMN))
    assert np.array_equal(per_unit, stats[:4])
    assert p > P_OK, p


@pytest.mark.slow
@pytest.mark.parametrize("instance, T, a1, a2, g0, units, mutation, n_scans", [
    # 3: a block merge of atoms that share a block evaluated as a customer merge (instead of
    #    rejected: its reverse block split has probability 0)
    ("2x2_full", 0, 0.5, 0.5, 1.0, MIXED, 3, 0),
    ("4x2_M7", 0, 0.3, 0.3, 1.0, MIXED, 3, 2),
    ("2x2_full", 2, 0.5, 0.5, 2.0, MIXED, 3, 0),
    # 1: the block merge without the probability of its reverse block split
    ("4x2_M7", 0, 0.3, 0.3, 1.0, ROW, 1, 0),
    ("4x2_M7", 0, 0.3, 0.3, 1.0, ROW, 1, 2),
    ("4x2_M7", 3, 0.3, 1.0, 3.0, ROW, 1, 0),
])
def test_a_wrong_block_ratio_fails(instance, T, a1, a2, g0, units, mutation, n_scans):
    p, cells, stats = _run(instance, T, a1, a2, g0, mutation, 2024, n_scans, units,
                           N_SAMPLES_BLOCKS)
    print(f"mutation {mutation}: {instance} T={T} alpha=({a1}, {a2}) gamma0={g0} units={units} "
          f"n_scans={n_scans}: chi2 p = {p:.3g} ({cells} cells)")
    assert p < P_BAD, p


# --------------------------------------------------------------------------- (c) bookkeeping
def _random_state(seed, I=30, J=40, nnz=150, K=6):
    rng = np.random.default_rng(seed)
    flat = np.sort(rng.choice(I * J, nnz, replace=False))
    rows, cols = (flat // J).astype(np.int64), (flat % J).astype(np.int64)
    m = rng.integers(1, 5, nnz)
    offsets = np.concatenate([[0], np.cumsum(m)]).astype(np.int64)
    z = rng.integers(0, K, offsets[-1]).astype(np.int64)
    return rows, cols, offsets, z


@pytest.mark.slow
def test_idepm_counts_labels_and_determinism():
    rows, cols, offsets, z = _random_state(1)
    I, J = 32, 41
    n_ik, n_jk, n_k = idepm.seat_counts(rows, cols, offsets, z, I, J, 6)
    z_in = z.copy()
    args = (rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, 0.3, 0.7, 5.0, 400)
    out1 = moves.split_merge_idepm(np.random.default_rng(3), *args)
    out2 = moves.split_merge_idepm(np.random.default_rng(3), *args)
    assert np.array_equal(z, z_in)                       # the input is not changed
    for a, b in zip(out1[:5], out2[:5]):
        assert np.array_equal(a, b)
    assert np.array_equal(out1[5], out2[5])
    z1, a, b, c, K, st = out1
    assert K == 6 + st[moves.SPLIT_ACCEPTED] - st[moves.MERGE_ACCEPTED]
    assert st[moves.SPLIT_ACCEPTED] > 0 and st[moves.MERGE_ACCEPTED] > 0
    assert st[moves.SPLIT_PROPOSED] + st[moves.MERGE_PROPOSED] == 400
    assert set(np.unique(z1)) == set(range(K))           # contiguous labels, all in use
    for x, y in zip((a, b, c), idepm.seat_counts(rows, cols, offsets, z1, I, J, K)):
        assert x.dtype == np.int64 and np.array_equal(x, y)
    # the default: proposals until about the work of a Gibbs sweep, the same as that number given
    out3 = moves.split_merge_idepm(np.random.default_rng(3), *args[:-1])
    n_prop = int(out3[5][moves.SPLIT_PROPOSED] + out3[5][moves.MERGE_PROPOSED])
    assert 1 <= n_prop < moves.WORK_PER_SWEEP * z.size * 6
    out4 = moves.split_merge_idepm(np.random.default_rng(3), *args[:-1], n_prop)
    for a, b in zip(out3, out4):
        assert np.array_equal(a, b)


def test_depm_counts_labels_and_determinism():
    rows, cols, offsets, z = _random_state(2, K=4)
    I, J, T = 30, 40, 7
    m_ik, m_jk, m_k = idepm.seat_counts(rows, cols, offsets, z, I, J, T)
    args = (rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, 0.3, 0.7, 5.0, T, 400)
    out1 = moves.split_merge_depm(np.random.default_rng(4), *args)
    out2 = moves.split_merge_depm(np.random.default_rng(4), *args)
    for a, b in zip(out1, out2):
        assert np.array_equal(a, b)
    z1, a, b, c, K, st = out1
    assert z1.min() >= 0 and z1.max() < T
    assert K == np.count_nonzero(c) == 4 + st[moves.SPLIT_ACCEPTED] - st[moves.MERGE_ACCEPTED]
    for x, y in zip((a, b, c), idepm.seat_counts(rows, cols, offsets, z1, I, J, T)):
        assert x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize("units", [CUSTOMER, MIXED])
@pytest.mark.parametrize("T", [0, 5])
def test_customer_index_stays_consistent(T, units):
    """Many accepted moves in one call (blocks rewritten, merged blocks appended, the buffer
    compacted): the index of customers by label still lists exactly the customers of z."""
    rows, cols, offsets, z = _random_state(5, nnz=60, K=3)
    cust = moves.customer_cells(rows, cols, offsets, 30, 40)
    M = z.shape[0]
    n_labels = M + 1 if T == 0 else T
    g0 = 3.0
    target = (moves.idepm_target(30, 40, 1.0, 1.0, g0) if T == 0 else
              moves.depm_target(30, 40, 1.0, 1.0, g0, T))
    zz = z.copy()
    n = 3000 if units == CUSTOMER else 9000          # a third of these merges customers
    trace = np.zeros((n, 4))
    K, st, (buf, start, size, *_) = moves.propose_split_merge(
        np.random.default_rng(6), cust, zz, n_labels, target, n, 2, trace, units)
    assert st[moves.MERGE_ACCEPTED] > 3 * M // 10          # the buffer was compacted
    for k in range(n_labels):
        members = np.sort(buf[start[k]:start[k] + size[k]])
        assert np.array_equal(members, np.flatnonzero(zz == k))
    assert K == np.count_nonzero(size)
    # the trace's unit column matches the per-unit statistics; merges rejected as not
    # block-consistent have log ratio -inf
    for u in (CUSTOMER, ROW, COLUMN):
        us = _unit_stats(st, u)
        assert np.count_nonzero(trace[:, 3] == u) == us[moves.SPLIT_PROPOSED] + \
            us[moves.MERGE_PROPOSED]
        assert np.count_nonzero((trace[:, 3] == u) & (trace[:, 0] == -np.inf)) == \
            us[moves.MERGE_INCONSISTENT]
    if units == MIXED:
        assert _unit_stats(st, ROW)[moves.MERGE_ACCEPTED] > 0
        assert _unit_stats(st, COLUMN)[moves.SPLIT_ACCEPTED] > 0


@pytest.mark.parametrize("units", [ROW, COLUMN])
def test_block_moves_keep_blocks_whole(units):
    """From one atom, row (column) blocks alone only ever reach states in which the customers of
    every row (column) share an atom; from a random state, no block merge of atoms sharing a
    row (column) is accepted."""
    rows, cols, offsets, _ = _random_state(7, I=12, J=15, nnz=80)
    cust = moves.customer_cells(rows, cols, offsets, 12, 15)
    M = int(offsets[-1])
    key = cust.row if units == ROW else cust.col
    zz = np.zeros(M, np.int64)
    target = moves.idepm_target(12, 15, 0.5, 0.5, 2.0)
    K, st, _ = moves.propose_split_merge(np.random.default_rng(8), cust, zz, M + 1, target, 2000, 1,
                                         np.empty((0, 3)), units)
    us = _unit_stats(st, units)
    assert us[moves.SPLIT_ACCEPTED] > 20 and us[moves.MERGE_ACCEPTED] > 20
    assert us[moves.MERGE_INCONSISTENT] == 0 and K > 1
    assert all(np.unique(zz[key == k]).size == 1 for k in np.unique(key))
    # a random state (its atoms share rows and columns), one proposal at a time: a block merge
    # of atoms that share a block is never taken
    rng = np.random.default_rng(9)
    zz = rng.integers(0, 3, M)
    trace = np.zeros((1, 4))
    n_rejected = 0
    for _ in range(300):
        before = zz.copy()
        moves.propose_split_merge(rng, cust, zz, M + 1, target, 1, 1, trace, units)
        if trace[0, 0] == -np.inf:
            n_rejected += 1
            assert trace[0, 1] == 0 and trace[0, 3] == units
            assert np.array_equal(zz, before)
    assert n_rejected > 50


def test_tiny_inputs():
    rows, cols, offsets = np.array([0]), np.array([0]), np.array([0, 1])
    z = np.zeros(1, np.int64)
    n_ik, n_jk, n_k = idepm.seat_counts(rows, cols, offsets, z, 1, 1, 1)
    z1, a, b, c, K, st = moves.split_merge_idepm(np.random.default_rng(0), rows, cols, offsets, z,
                                                 n_ik, n_jk, n_k, 1, 1, 1.0, 1.0, 1.0, 10)
    assert K == 1 and np.array_equal(z1, z) and st.sum() == 0


# --------------------------------------------------------------- (d) the target vs the theory
def _counts3(rows, cols, offsets, z, I, J, K):
    out = np.zeros((I, J, K), np.int64)
    for e in range(rows.size):
        for s in range(offsets[e], offsets[e + 1]):
            out[rows[e], cols[e], z[s]] += 1
    return out


@pytest.mark.parametrize("seed", range(4))
def test_target_agrees_with_theory(seed):
    rng = np.random.default_rng(seed)
    I, J, T = 5, 6, 4
    rows, cols, offsets, _ = _random_state(seed, I=I - 1, J=J - 2, nnz=7)   # empty rows/cols too
    M = int(offsets[-1])
    a1, a2, g0, c0 = rng.gamma(1.0, 1.0, 4) + 0.05
    zs = [rng.integers(0, T, M) for _ in range(2)]
    # DEPM: labelled states, Eq. (41)
    lt = [moves.log_seating_target(rows, cols, offsets, z, I, J, a1, a2, g0, T) for z in zs]
    lj = [theory.log_joint_counts(_counts3(rows, cols, offsets, z, I, J, T), a1, a2, g0, c0)
          for z in zs]
    assert lt[1] - lt[0] == pytest.approx(lj[1] - lj[0], abs=1e-9)
    # IDEPM: partitions, Theorem 4 (Eq. (42) with T = inf)
    lt = [moves.log_seating_target(rows, cols, offsets, z, I, J, a1, a2, g0) for z in zs]
    lp = []
    for z in zs:
        _, zc = np.unique(z, return_inverse=True)
        c3 = _counts3(rows, cols, offsets, zc, I, J, zc.max() + 1)
        lp.append(theory.log_partition_likelihood(c3, a1, a2, g0, c0, math.inf))
    assert lt[1] - lt[0] == pytest.approx(lp[1] - lp[0], abs=1e-9)
    # relabelling a DEPM state does not change it; relabelling is invisible to the IDEPM target
    perm = rng.permutation(T)
    assert moves.log_seating_target(rows, cols, offsets, perm[zs[0]], I, J, a1, a2, g0, T) == \
        pytest.approx(moves.log_seating_target(rows, cols, offsets, zs[0], I, J, a1, a2, g0, T))


# ------------------------------------------------------------- (e) the diagnostic trace
def test_proposal_trace_explains_each_proposal():
    """proposal_trace: ln r = ln pi-ratio - ln q for a split (its reverse for a merge), and the
    pi-ratio it reports is the change of the exact target when a proposal is accepted."""
    rows, cols, offsets, z = _random_state(11, I=10, J=12, nnz=40, K=3)
    I, J, a1, a2, g0 = 10, 12, 0.7, 0.4, 2.0
    n_changed = 0
    for seed in range(150):
        units = (CUSTOMER, ROW, COLUMN)[seed % 3]
        t = moves.proposal_trace(rows, cols, offsets, z, I, J, a1, a2, g0, n_proposals=1,
                                 n_scans=2, units=units, seed=seed)
        assert t["unit"][0] == units and t["size"][0] >= 2
        lr, lt, lq = t["log_ratio"][0], t["log_target"][0], t["log_q"][0]
        if not np.isfinite(lr):
            continue
        assert lr == pytest.approx(lt - lq if t["split"][0] else lq - lt, abs=1e-9)
        # replay the proposal on the same stream: the state it leads to
        z_new, *_, K, st = moves.split_merge_idepm(
            np.random.default_rng(seed), rows, cols, offsets, z, *idepm.seat_counts(rows, cols, offsets, z, I, J, 3),
            I, J, a1, a2, g0, 1, 2, units)
        assert K == t["K"] and np.array_equal(st, t["stats"])
        if K != 3:
            n_changed += 1
            before = moves.log_seating_target(rows, cols, offsets, z, I, J, a1, a2, g0)
            after = moves.log_seating_target(rows, cols, offsets, z_new, I, J, a1, a2, g0)
            assert (after - before) * (1 if t["split"][0] else -1) == pytest.approx(lt, abs=1e-8)
    assert n_changed >= 5
    t = moves.proposal_trace(rows, cols, offsets, z, I, J, a1, a2, g0, n_proposals=50, seed=1)
    assert t["split"].shape == (50,) and t["K"] == 3 + t["stats"][moves.SPLIT_ACCEPTED] - \
        t["stats"][moves.MERGE_ACCEPTED]
    with pytest.raises(ValueError, match="positive"):
        moves.proposal_trace(rows, cols, offsets, z, I, J, 0.0, a2, g0)
    with pytest.raises(ValueError, match="n_proposals"):
        moves.proposal_trace(rows, cols, offsets, z, I, J, a1, a2, g0, n_proposals=0)
    with pytest.raises(ValueError, match="fit together"):
        moves.proposal_trace(rows, cols, offsets[:-1], z, I, J, a1, a2, g0)
    with pytest.raises(ValueError, match="units"):
        moves.proposal_trace(rows, cols, offsets, z, I, J, a1, a2, g0, units=7)
    with pytest.raises(ValueError, match=">= T"):
        moves.proposal_trace(rows, cols, offsets, z, I, J, a1, a2, g0, T=2)


# --------------------------------------------------------------- (f) the mutants' loop
@pytest.mark.parametrize("units", [CUSTOMER, MIXED])
@pytest.mark.parametrize("T", [0, 9])
def test_mutants_run_the_same_steps(T, units):
    """``moves_mutants`` with nothing swapped (mutation 0) is the library's kernel draw for draw;
    each named mutant is its mutation; a mutant changes the chain."""
    rows, cols, offsets, z = _random_state(3, nnz=60, K=3)
    I, J, a1, a2, g0 = 30, 40, 0.3, 0.6, 2.0
    counts = idepm.seat_counts(rows, cols, offsets, z, I, J, 3 if T == 0 else T)
    args = (rows, cols, offsets, z, *counts, I, J, a1, a2, g0) + (() if T == 0 else (T,))
    exact = moves.split_merge_idepm if T == 0 else moves.split_merge_depm
    mutant = moves_mutants.split_merge_idepm if T == 0 else moves_mutants.split_merge_depm
    a = exact(np.random.default_rng(4), *args, 400, 2, units)
    b = mutant(np.random.default_rng(4), *args, 400, 2, units, 0)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    c = mutant(np.random.default_rng(4), *args, 400, 2, units, 1)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    # the named mutants are the mutations, with the arguments of propose_split_merge
    cust = moves.customer_cells(rows, cols, offsets, I, J)
    target = (moves.idepm_target(I, J, a1, a2, g0) if T == 0 else
              moves.depm_target(I, J, a1, a2, g0, T))
    n_labels = z.size + 1 if T == 0 else T
    for mutation, kernel in ((1, moves_mutants.merge_without_reverse_q),
                             (2, moves_mutants.depm_without_label_factor),
                             (3, moves_mutants.block_merge_not_rejected)):
        z1, z2 = z.copy(), z.copy()
        t1, t2 = np.zeros((50, 6)), np.zeros((50, 6))
        k1, s1, _ = kernel(np.random.default_rng(5), cust, z1, n_labels, target, 200, 1, t1, units)
        k2, s2, _ = moves_mutants._propose_mutant(np.random.default_rng(5), cust, z2, n_labels,
                                                  target, 200, 1, t2, units, mutation)
        assert k1 == k2 and np.array_equal(s1, s2) and np.array_equal(z1, z2)
        assert np.array_equal(t1, t2, equal_nan=True)
