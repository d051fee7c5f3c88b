r"""Split-merge Metropolis-Hastings moves for the seating of the IDEPM and the DEPM.

The collapsed Gibbs sampler of the IDEPM (``idepm.idepm_sweep``, Eq. (6)) moves one customer at a
time; to create a new atom it must seat one customer alone, and to remove one it must empty it
customer by customer, through states of low probability. Chains started from 2, 10 or 100 atoms
therefore stay at different numbers of atoms for thousands of sweeps. The moves here change the
number of atoms in one step: the sequentially-allocated merge-split sampler of Dahl (2005)
(``n_scans=0``), optionally refined by restricted Gibbs scans as in Jain & Neal (2004)
(``n_scans >= 1``); see also Wang & Blei (2012) and Chang & Fisher (2013).

The target
----------
Each one (i, j) of X has m_ij. >= 1 customers; the customers of entry e are
``z[offsets[e]:offsets[e+1]]``, each seated at an atom. With the customers distinguishable and m
fixed, Appendix D (Eq. (41), Lemma 1 with phi, psi, lambda integrated out) gives the conditional
of the assignments z as a product over the atoms that carry customers (n_k > 0)::

    P(z | m, h)  oc  prod_k  C(n_k) D1(k) D2(k),
        D1(k) = G(I a1)/G(I a1 + n_k) prod_i G(a1 + n_ik)/G(a1),
        D2(k) = G(J a2)/G(J a2 + n_k) prod_j G(a2 + n_jk)/G(a2),

n_ik, n_jk, n_k the customers of atom k in row i, column j and in all (rows without customers
contribute 1, so the count tables may hold a subset of the rows; I and J are the dimensions of X).
The factors prod 1/m_ij.!, (c0/(c0+1))^gamma0 and (c0+1)^(-M) are fixed when m is. The cohesion
C(n) is

* truncated DEPM, T labelled atoms, a = gamma0/T (Eq. (41)): C(n) = G(a + n)/G(a), over maps
  customer -> label in 0..T-1; empty atoms contribute 1, and the labels matter;
* IDEPM, T -> inf (Theorem 4, Eq. (5), the limit of Eq. (42)): C(n) = gamma0 G(n), over set
  partitions of the customers (atoms unlabelled).

Both are C(1) * prod_{l=1}^{n-1} (a_c + l) with (C(1), a_c) = (gamma0, 0) for the IDEPM and
(a, a) for the DEPM, and D1 D2 of a singleton is (a1/(I a1)) (a2/(J a2)) = 1/(I J). Adding a
customer of entry (i, j) to a set S of n customers multiplies pi(S) = C D1 D2 by

    w_S(i, j) = (a_c + n) (a1 + n_iS)(a2 + n_jS) / ((I a1 + n)(J a2 + n)),          (*)

the weight of the z-step (Eq. (6), with J a2 in the second denominator), so that
pi(S) = pi({s}) prod of (*) when S is built one customer at a time, in any order.

The proposal (Dahl 2005)
------------------------
Pick two distinct customers s1, s2 uniformly (the anchors) and a uniformly random order sigma of
the other customers of their atom(s), S = S_{z(s1)} u S_{z(s2)} minus the anchors.

* Same atom, S: propose a split. Start S1 = {s1}, S2 = {s2}; then, in the order sigma, put each
  customer c in S1 or S2 with probability proportional to w_S1(c), w_S2(c), the counts of S1, S2
  being those of the customers placed so far. q_SA(S1, S2 | sigma) is the product of these
  probabilities. The merged set is built in the same pass: S12 = S1 u S2 is the union so far,
  whose counts are the sums of those of S1 and S2.
* Different atoms: propose to merge them. The reverse split must reproduce the current S1, S2:
  the same pass with each customer's side forced to its present atom gives q_SA(S1, S2 | sigma).

Given (s1, s2, sigma), drawn independently of the state, the split and the merge are each
other's reverse (s1 stays in S1), so mixing over them leaves pi invariant when each is accepted
with probability min(1, r), r = pi(new)/pi(old) x q(old | new)/q(new | old), and the anchor and
order probabilities cancel. For the split (the merge uses 1/r of the same quantities):

    r = pi(S1) pi(S2) / pi(S1 u S2) x 1 / q_SA(S1, S2 | sigma)

By (*), pi(S1) pi(S2)/pi(S1 u S2) = pi({s2}) / w_{s1}(s2) x prod_c w_chosen(c)/w_S12(c) and
q_SA = prod_c w_chosen(c)/(w_S1(c) + w_S2(c)), so the chosen weight cancels:

    ln r = ln(C(1)/(I J)) - ln w_{{s1}}(s2) + sum_c ln[(w_S1(c) + w_S2(c)) / w_S12(c)],      (**)

w_{{s1}}(s2) = (a_c + 1)(a1 + [i2 = i1])(a2 + [j2 = j1])/((I a1 + 1)(J a2 + 1)): one pass over S,
no log-gamma function, three counts per customer and side. C(1)/(I J) is gamma0/(I J), the weight
of a new atom in Eq. (6), for the IDEPM and a/(I J) for the DEPM.

Restricted Gibbs scans (Jain & Neal 2004), ``n_scans = s >= 1``. The sequential allocation
above, drawn for a merge as for a split, is now only the launch; s - 1 restricted Gibbs scans
follow (each customer of S in the order sigma leaves its side and is put in S1 or S2 with
probability proportional to w_S1, w_S2, the anchors staying put), and the proposal is one more
scan, whose probability q_scan(S1, S2 | launch) is the product of its conditionals (for a merge:
of those that put every customer back on its present side). The launch depends only on S, the
anchors, sigma and the random numbers, not on how S is split, so it is one more auxiliary
variable and

    ln r = ln pi(S1) pi(S2)/pi(S1 u S2) - ln q_scan(S1, S2 | launch),

the first term evaluated by (*) while the customers are taken out again one at a time. A scan
costs about one pass of (**).

Labels (DEPM). A state is a labelled map, so the split also chooses the label of S2 uniformly
among the T - K+ empty labels (S1 keeps the atom's label) and the merge keeps the label of s1's
atom. Then q(split) = q_SA/(T - K+) and q(merge) = 1, and

    split:  ln r_DEPM = (**) + ln(T - K+),       merge: ln r_DEPM = -(**) - ln(T - K+ + 1)

with K+ the number of atoms before the move (the merged state of the merge has K+ - 1 atoms, from
which T - K+ + 1 empty labels are available). With K+ = T a split is impossible: the proposal is
"stay" (counted in ``stats[4]``), which is still a valid MH step, and the merge into a state with
K+ = T - 1 uses ln(1) for its reverse label choice, consistently.

For the IDEPM the state is a partition: labels carry no weight, the returned labels are
renumbered 0..K+-1 (a split adds the label K+; a merge removes the label of s2's atom and the
larger labels move down by one).

Block units (``units``)
-----------------------
An atom of the EPM is a bi-cluster (a profile over rows and one over columns), and a large atom
split one customer at a time starts nearly at random; the scans, moving one customer at a time,
do not find its block structure. A proposal may instead move BLOCKS: with the unit "row", the
customers of S in one row i, B_i = {c in S : row(c) = i}, move together (with "column", those in
one column). The unit of a proposal is fixed by ``units`` (``UNIT_CUSTOMER``, ``UNIT_ROW``,
``UNIT_COLUMN``) or drawn for each proposal, independently of the state, with probabilities
``MIXED_UNIT_PROBS`` (``UNITS_MIXED``). The default, ``DEFAULT_UNITS``, is single customers. The blocks are a function of S and of the
unit only, so they are the same in the merged state and in every split of S.

* The anchors are drawn as before; B1, B2 are their blocks. A split with B1 = B2 (anchors in one
  row) cannot separate them: the proposal is "stay" (counted as ``SPLIT_IMPOSSIBLE``).
* Split: S1 = B1, S2 = B2, then the other blocks, in a uniformly random order sigma, each to S1
  or S2 with probability proportional to w_S1(B), w_S2(B), where w_S(B) = pi(S u B)/pi(S) is the
  product of the weights (*) of B's customers added one after the other (in any order; one pass
  over B, with per-row and per-column counts of the customers of B already added). Restricted
  Gibbs scans move whole blocks in the same way (the anchors' blocks stay put).
* Only block-consistent splits can be proposed (every block wholly in S1 or in S2). A merge
  whose current (S1, S2) is not block-consistent (a row with customers in both atoms) is
  rejected at once (``MERGE_INCONSISTENT``); otherwise the reverse split is replayed, block by
  block, as for customers.

The ratio is (**) with blocks for customers: building S1 u S2 from B1, then B2, then the blocks,

    ln r = ln pi(B2) - ln w_B1(B2) + sum_B ln[(w_S1(B) + w_S2(B)) / w_S12(B)]             (***)

for the sequential allocation (and ln pi(S1) pi(S2)/pi(S1 u S2) - ln q_scan as above with
scans); pi(B2) = w_{empty}(B2), with C(1)/(I a1 J a2) in place of the atom factor at n = 0. With
B1 = {s1}, B2 = {s2} this is (**).

Exactness. Fix the unit u and the anchors (their probabilities do not depend on the state), so
S, the blocks and the law of sigma are fixed. Let x_m be the state with S one atom and x_s one
with S split into S1 (holding s1) and S2. If x_s is block-consistent, the split from x_m
proposes it with probability q(x_s | x_m) > 0, the merge from x_s proposes x_m, and min(1, r)
with r from (***) is the Metropolis-Hastings acceptance of this pair, as for customers. If x_s
is not block-consistent, q(x_s | x_m) = 0: the Metropolis-Hastings ratio of the merge from x_s,
pi(x_m) q(x_s | x_m) / (pi(x_s) x 1), is 0, so the merge is rejected, and the flow from x_m to
x_s is 0 as well; detailed balance pi(x_m) P(x_m -> x_s) = pi(x_s) P(x_s -> x_m) holds with both
sides 0. So the kernel of each (u, s1, s2) is reversible with respect to pi, and so is their
mixture with state-independent weights (over the anchors, and over the units with
``MIXED_UNIT_PROBS``). Each block kernel alone is not irreducible (rows alone, from one atom,
keep every row's customers in one atom); the customer component and the Gibbs sweep are.
Forgetting the rejection (evaluating such a merge as a customer merge,
``moves_mutants.block_merge_not_rejected``) makes the merge's flow positive and its reverse
zero: the enumeration tests in ``tests/test_moves.py`` catch it, as they catch a merge without
its reverse q.

Cost of a block proposal: the customers of S are grouped by row (column) in two passes, with a
scratch table per row (column) reset on the rows (columns) touched; the allocation and each scan
take three passes over S (weights, then remove / add), with logarithms per block only. So a
block proposal is O(|S|) as well (its work is counted as ``BLOCK_WORK`` times a customer
proposal's per customer of S), and a merge rejected as not block-consistent stops at the first
shared block.

Cost. A call builds, in O(M), the row and column of every customer and an index of the
customers by atom (counting sort into a buffer of 2M slots; a split rewrites its atom's block in
place, a merge appends the merged block, and the buffer is compacted when full, O(M) every >= M
appended customers). A proposal then costs O(|S|) (s + 4 passes over S): the passes use scratch
counts of S1, S2 per row and column, left at zero again, products of weights are folded into
logs only when they leave [1e-100, 1e100], and the atom factor of (*) comes from a table, so a
pass has no division and no logarithm per customer. The count tables are rebuilt once at the
end of the call (``seat_counts``, O(M + (I + J) K+)). By default (``n_proposals < 0``) a call
makes proposals until their work, sum |S| (s + 4), reaches ``WORK_PER_SWEEP`` x M K+, about the
cost of one Gibbs sweep of Eq. (6) (which visits M K+ customer-atom pairs); the number of
proposals is then random but reproducible.

The code
--------
``propose_split_merge`` makes the proposals of one call on labels ``z`` (changed in place);
``split_merge_idepm`` and ``split_merge_depm`` wrap it for the samplers (a seating and its
counts in, new labels and counts out). What the kernels share travels as a few namedtuples:
``Customers`` (the row and column of each customer, ``customer_cells``), ``Target`` (X's
dimensions, alpha1, alpha2, ln C(1), a_c and T: ``idepm_target``, ``depm_target``),
``LabelIndex`` (the customers by label, the free labels), ``Weights`` (alpha1, alpha2 and the
atom factors of (*)), ``SideCounts`` (the two candidate atoms' scratch counts per row and
column), ``Layout`` (S in proposal order, the side of each customer or block) and ``Blocks``
(the scratch of block units). A proposal is five steps, each its own kernel:

1. the anchors, ``_choose``: the unit, s1 and s2, split or merge (a ``Proposal``); a split that
   cannot separate them is "stay" (``_split_impossible``, ``_stay``);
2. S laid out, ``_lay_out``: its customers in random order (``_lay_out_customers``) or its
   blocks (``_gather_blocks``); a block merge that is not block-consistent is rejected here
   (``_reject_inconsistent``);
3. the proposal and its log ratio, ``_log_ratio``: the sequential allocation, or the launch
   state and the restricted Gibbs scans (``_customer_log_ratio``, ``_launch_and_scan``,
   ``_block_log_ratio``, over the passes ``_allocate``, ``_scan``, ``_unwind`` and their block
   versions ``_ballocate``, ``_bscan``, ``_bunwind``): ln pi(S1) pi(S2)/pi(S1 u S2) and ln q;
4. the acceptance ratio, ``_log_acceptance``: a split's or a merge's, with the DEPM's label
   factor;
5. accept or reject, ``_accepted``, and write an accepted proposal back to z and the index
   (``_write_back``: ``_take_free_label``, ``_write_split``, ``_write_merge``).

``moves_mutants`` runs the same steps with one swapped for a deliberately wrong one (the checks
must fail on these), so that the kernel of the samplers tests no flag.

What the moves achieve on real data (acceptance rates, the log ratios of the best splits and merges,
chains from few and many atoms) is measured in ``benchmarks/move_diagnostics.py`` and shown in
``chapters/14c_idepm_movielens``.

Derived in ``chapters/13b_depm_moves`` (DEPM) and ``chapters/14b_idepm_moves`` (IDEPM); on MovieLens100K
in ``chapters/14c_idepm_movielens``.

References: S. Jain, R. M. Neal (2004), J. Comput. Graph. Stat. 13, 158-182; D. B. Dahl (2005),
Tech. Rep. 1086, Univ. Wisconsin; C. Wang, D. M. Blei (2012), NIPS; J. Chang, J. W. Fisher III
(2013), NIPS.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit
from scipy.special import gammaln

from .common import seat_counts

__all__ = ["DEFAULT_N_PROPOSALS", "DEFAULT_N_SCANS", "WORK_PER_SWEEP",
           "split_merge_idepm", "split_merge_depm", "propose_split_merge", "customer_cells",
           "idepm_target", "depm_target", "Customers", "Target", "log_seating_target",
           "proposal_trace", "UNIT_NAMES"]

#: default number of proposals per call: -1, as many as fit in the work of about one Gibbs sweep
DEFAULT_N_PROPOSALS = -1
#: that work, in customer visits per customer and atom (a Gibbs sweep visits M K+ customer-atom
#: pairs; a proposal visits its |S| customers n_scans + 4 times); calibrated on MovieLens100K
WORK_PER_SWEEP = 0.7
#: default number of restricted Gibbs scans per proposal (0: the sequential allocation alone)
DEFAULT_N_SCANS = 5

#: allocation units of a proposal (``units=``): single customers, the customers of the involved
#: atom(s) in one row ("row blocks"), or in one column; ``UNITS_MIXED`` draws one per proposal
UNIT_CUSTOMER, UNIT_ROW, UNIT_COLUMN, UNITS_MIXED = range(4)
#: probabilities of (customer, row, column) units under ``UNITS_MIXED`` (read when compiled)
MIXED_UNIT_PROBS = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
#: default unit of every proposal: single customers (``UNIT_CUSTOMER``)
DEFAULT_UNITS = UNIT_CUSTOMER
#: work of a block proposal per customer of S and pass, relative to a customer proposal's
BLOCK_WORK = 1.0

# indices into the statistics returned by the moves: stats[0:5] over all proposals, then six per
# unit (customer, row, column) from N_GLOBAL_STATS on: stats[N_GLOBAL_STATS + N_UNIT_STATS * u + x]
# with x = SPLIT_PROPOSED, SPLIT_ACCEPTED, MERGE_PROPOSED, MERGE_ACCEPTED, SPLIT_IMPOSSIBLE (K+ = T,
# or the anchors in one block), MERGE_INCONSISTENT (a block merge rejected: the atoms share a block)
SPLIT_PROPOSED, SPLIT_ACCEPTED, MERGE_PROPOSED, MERGE_ACCEPTED, SPLIT_BLOCKED = range(5)
SPLIT_IMPOSSIBLE, MERGE_INCONSISTENT = 4, 5
N_GLOBAL_STATS, N_UNIT_STATS = 5, 6
N_STATS = N_GLOBAL_STATS + 3 * N_UNIT_STATS


# ---------------------------------------------------------------------------------------------
# The structures the kernels pass (namedtuples: numba passes them by value, their arrays by
# reference, so a kernel that writes into an array of one writes into the caller's)
# ---------------------------------------------------------------------------------------------
#: the customers: the row and the column of each (``customer_cells``), and the sizes of the
#: scratch tables per row and per column (at least one more than the largest row, column)
Customers = namedtuple("Customers", ["row", "col", "n_rows", "n_cols"])
#: the target P(z | m, h) of the module docstring: X's dimensions I, J, alpha1, alpha2,
#: ln C(1), a_c of (*) and T (0: the IDEPM, its atoms unlabelled; T > 0: the DEPM's T
#: labels); made by ``idepm_target`` and ``depm_target``
Target = namedtuple("Target", ["I", "J", "alpha1", "alpha2", "log_c1", "a_c", "T"])
#: what the weights (*) need: alpha1, alpha2, the atom factors g[n] = (a_c + n)/((I a1 + n)
#: (J a2 + n)) (g[0] = C(1)/(I a1 J a2), so that w_{empty}(B) = pi(B)) and ln pi({s}) =
#: ln C(1)/(I J), the weight of a new atom
Weights = namedtuple("Weights", ["alpha1", "alpha2", "g", "log_c1_IJ"])
#: the two candidate atoms' scratch counts: the customers of S1 per row (r1) and column (c1),
#: those of S2 (r2, c2); every pass leaves them at zero again
SideCounts = namedtuple("SideCounts", ["r1", "r2", "c1", "c2"])
#: S laid out for a proposal: its customers in proposal order, the row and column of each, its
#: side (0: S1, 1: S2) and, for a merge, its current side (the one the replay must reproduce);
#: for block units, per block (``Blocks.pos``) the side and the current side
Layout = namedtuple("Layout", ["order", "row", "col", "side", "cur"])
#: scratch of block units (empty arrays when no proposal uses blocks): the block of each row
#: (column), -1 if none; the customers of a block already added, per row (di) and column (dj);
#: per block its first position in ``Layout`` (``pos``, one more entry for the end), its row or
#: column (``key``), its count then fill pointer (``cnt``), the random order (``perm``), the
#: rank of each block in it (``rank``) and a buffer of sides (``tmp``)
Blocks = namedtuple("Blocks", ["of_row", "of_col", "di", "dj", "pos", "key", "cnt", "perm",
                               "rank", "tmp"])
#: the customers by label: those of label k are ``buf[start[k]:start[k] + size[k]]``; the free
#: (empty) labels ``pool[:n[_FREE]]``, ``ppos`` the position of each in it (-1: in use); ``n``
#: = [first unused slot of ``buf``, number of free labels, K+]
LabelIndex = namedtuple("LabelIndex", ["buf", "start", "size", "pool", "ppos", "n"])
_TAIL, _FREE, _K_PLUS = 0, 1, 2
#: one proposal: its unit, where its unit's statistics start (``us``), the anchors s1, s2,
#: their atoms k1, k2 and whether it is a split (k1 = k2)
Proposal = namedtuple("Proposal", ["unit", "us", "s1", "s2", "k1", "k2", "split"])

_NO = np.bool_(False)     # (not the literal False: one compiled version of each pass)


@njit(cache=True)
def idepm_target(I, J, alpha1, alpha2, gamma0):
    """The ``Target`` of the IDEPM's moves: C(n) = gamma0 G(n), so ln C(1) = ln gamma0, a_c = 0."""
    return Target(np.float64(I), np.float64(J), np.float64(alpha1), np.float64(alpha2),
                  math.log(gamma0), 0.0, np.int64(0))


@njit(cache=True)
def depm_target(I, J, alpha1, alpha2, gamma0, T):
    """The ``Target`` of the truncated DEPM's moves, T labels: C(n) = G(a + n)/G(a), a = gamma0/T."""
    a = gamma0 / T
    return Target(np.float64(I), np.float64(J), np.float64(alpha1), np.float64(alpha2),
                  math.log(a), np.float64(a), np.int64(T))


# ---------------------------------------------------------------------------------------------
# Index of the customers by atom
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def customer_cells(rows, cols, offsets, n_rows, n_cols):
    """The ``Customers`` of a seating: the row and column of every customer (those of entry e
    are ``offsets[e]:offsets[e+1]``), with ``n_rows``, ``n_cols`` the sizes of the scratch tables
    (at least one more than the largest row and column; e.g. I and J)."""
    M = offsets[rows.shape[0]]
    ci = np.empty(M, np.int64)
    cj = np.empty(M, np.int64)
    for e in range(rows.shape[0]):
        for s in range(offsets[e], offsets[e + 1]):
            ci[s] = rows[e]
            cj[s] = cols[e]
    return Customers(ci, cj, np.int64(n_rows), np.int64(n_cols))


@njit(cache=True)
def _build_index(z, n_labels):
    """The ``LabelIndex`` of the labels ``z`` (``0..n_labels-1``): a counting sort of the
    customers by label into a buffer with room for 2M + 2 entries, and the pool of empty labels
    (in decreasing order, so that the IDEPM takes the smallest first)."""
    M = z.shape[0]
    size = np.zeros(n_labels, np.int64)
    for s in range(M):
        size[z[s]] += 1
    start = np.zeros(n_labels, np.int64)
    acc = 0
    for k in range(n_labels):
        start[k] = acc
        acc += size[k]
    buf = np.empty(2 * M + 2, np.int64)
    fill = start.copy()
    for s in range(M):
        k = z[s]
        buf[fill[k]] = s
        fill[k] += 1
    pool = np.empty(n_labels, np.int64)
    ppos = np.full(n_labels, -1, np.int64)
    n_pool = 0
    for k in range(n_labels - 1, -1, -1):
        if size[k] == 0:
            pool[n_pool] = k
            ppos[k] = n_pool
            n_pool += 1
    n = np.empty(3, np.int64)
    n[_TAIL] = M
    n[_FREE] = n_pool
    n[_K_PLUS] = n_labels - n_pool
    return LabelIndex(buf, start, size, pool, ppos, n)


@njit(cache=True)
def _compact(buf, start, size):
    """Move the blocks of all labels to the front of ``buf`` (in label order); returns the tail."""
    tmp = np.empty(buf.shape[0], np.int64)
    t = 0
    for k in range(size.shape[0]):
        n = size[k]
        if n > 0:
            st = start[k]
            for p in range(n):
                tmp[t + p] = buf[st + p]
            start[k] = t
            t += n
    buf[:t] = tmp[:t]
    return t


# ---------------------------------------------------------------------------------------------
# The passes over the customers of S (scratch counts of S1 and S2 per row and column)
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _atom_factor_table(n_max, a_c, Ia1, Ja2):
    """g[n] = (a_c + n)/((I a1 + n)(J a2 + n)), the atom part of (*), for n = 0..n_max."""
    g = np.empty(n_max + 1)
    for n in range(n_max + 1):
        g[n] = (a_c + n) / ((Ia1 + n) * (Ja2 + n))
    return g


@njit(cache=True, inline="always")
def _weights(target, M):
    """The ``Weights`` of ``target`` for up to M customers in an atom."""
    I, J, alpha1, alpha2 = target.I, target.J, target.alpha1, target.alpha2
    g = _atom_factor_table(M + 1, target.a_c, I * alpha1, J * alpha2)
    # g[0] (never used by the customer passes): C(1)/(I a1 J a2), so that w_{empty}(B) = pi(B)
    g[0] = math.exp(target.log_c1) / (I * alpha1 * J * alpha2)
    return Weights(alpha1, alpha2, g, target.log_c1 - math.log(I) - math.log(J))


# Products of many weights are kept as a double and a log: the double is folded into the log
# when it leaves [1e-100, 1e100] (so no division or log per customer).
@njit(cache=True, inline="always")
def _fold(x, log_x):
    if x < 1e-100 or x > 1e100:
        return 1.0, log_x + math.log(x)
    return x, log_x


@njit(cache=True)
def _allocate(rng, lay, m, forced, cnt, w, want_q):
    """Sequential allocation of the customers ``0..m-1`` of S (``lay``) to S1 or S2, whose
    counts ``cnt`` hold the anchors only. ``forced``: the sides are read from ``lay.side``
    (replay); else drawn and written there. Returns ``(ln prod (w_S1 + w_S2)/w_S12, ln q_SA, n1,
    n2)``, ln q_SA only if ``want_q``; the counts are left those of S1 and S2."""
    oi, oj, side = lay.row, lay.col, lay.side
    c1i, c2i, c1j, c2j = cnt.r1, cnt.r2, cnt.c1, cnt.c2
    alpha1, alpha2, g = w.alpha1, w.alpha2, w.g
    n1 = 1
    n2 = 1
    p_sum, l_sum = 1.0, 0.0        # prod (w_S1 + w_S2)
    p_12, l_12 = 1.0, 0.0          # prod w_S12
    p_ch, l_ch = 1.0, 0.0          # prod w_chosen
    for t in range(m):
        i = oi[t]
        j = oj[t]
        x1i = c1i[i]
        x2i = c2i[i]
        x1j = c1j[j]
        x2j = c2j[j]
        w1 = g[n1] * (alpha1 + x1i) * (alpha2 + x1j)
        w2 = g[n2] * (alpha1 + x2i) * (alpha2 + x2j)
        wsum = w1 + w2
        p_sum *= wsum
        p_12 *= g[n1 + n2] * (alpha1 + x1i + x2i) * (alpha2 + x1j + x2j)
        if forced:
            to2 = side[t] == 1
        else:
            to2 = rng.random() * wsum >= w1
            side[t] = 1 if to2 else 0
        if to2:
            c2i[i] = x2i + 1.0
            c2j[j] = x2j + 1.0
            n2 += 1
            if want_q:
                p_ch *= w2
        else:
            c1i[i] = x1i + 1.0
            c1j[j] = x1j + 1.0
            n1 += 1
            if want_q:
                p_ch *= w1
        p_sum, l_sum = _fold(p_sum, l_sum)
        p_12, l_12 = _fold(p_12, l_12)
        p_ch, l_ch = _fold(p_ch, l_ch)
    l_sum += math.log(p_sum)
    log_q = l_ch + math.log(p_ch) - l_sum if want_q else 0.0
    return l_sum - l_12 - math.log(p_12), log_q, n1, n2


@njit(cache=True)
def _scan(rng, lay, m, forced, n1, n2, cnt, w):
    """One restricted Gibbs scan (Jain & Neal 2004): each customer ``t = 0..m-1`` of S in turn
    leaves its side and is put in S1 or S2 with probability proportional to w_S1, w_S2 of (*)
    (the anchors never move); ``forced``: it is put at ``lay.cur[t]`` instead. Updates
    ``lay.side`` and the counts; returns ``(ln q, n1, n2)``, q the probability of the scan's
    outcome."""
    oi, oj, side, target = lay.row, lay.col, lay.side, lay.cur
    c1i, c2i, c1j, c2j = cnt.r1, cnt.r2, cnt.c1, cnt.c2
    alpha1, alpha2, g = w.alpha1, w.alpha2, w.g
    p_ch, l_ch = 1.0, 0.0
    p_sum, l_sum = 1.0, 0.0
    for t in range(m):
        i = oi[t]
        j = oj[t]
        if side[t] == 1:
            c2i[i] -= 1.0
            c2j[j] -= 1.0
            n2 -= 1
        else:
            c1i[i] -= 1.0
            c1j[j] -= 1.0
            n1 -= 1
        w1 = g[n1] * (alpha1 + c1i[i]) * (alpha2 + c1j[j])
        w2 = g[n2] * (alpha1 + c2i[i]) * (alpha2 + c2j[j])
        wsum = w1 + w2
        if forced:
            to2 = target[t] == 1
        else:
            to2 = rng.random() * wsum >= w1
        p_sum *= wsum
        if to2:
            p_ch *= w2
            side[t] = 1
            c2i[i] += 1.0
            c2j[j] += 1.0
            n2 += 1
        else:
            p_ch *= w1
            side[t] = 0
            c1i[i] += 1.0
            c1j[j] += 1.0
            n1 += 1
        p_sum, l_sum = _fold(p_sum, l_sum)
        p_ch, l_ch = _fold(p_ch, l_ch)
    return l_ch + math.log(p_ch) - l_sum - math.log(p_sum), n1, n2


@njit(cache=True)
def _unwind(lay, m, n1, n2, cnt, w):
    """Remove the customers ``m-1..0`` of S from their sides (the counts are left holding the
    anchors only) and return sum ln(w_side/w_S12), so that, by (*),
    ln pi(S1) pi(S2)/pi(S1 u S2) = ln pi({s2}) - ln w_{s1}(s2) + the returned sum."""
    oi, oj, side = lay.row, lay.col, lay.side
    c1i, c2i, c1j, c2j = cnt.r1, cnt.r2, cnt.c1, cnt.c2
    alpha1, alpha2, g = w.alpha1, w.alpha2, w.g
    p_s, l_s = 1.0, 0.0
    p_12, l_12 = 1.0, 0.0
    for t in range(m - 1, -1, -1):
        i = oi[t]
        j = oj[t]
        if side[t] == 1:
            c2i[i] -= 1.0
            c2j[j] -= 1.0
            n2 -= 1
            p_s *= g[n2] * (alpha1 + c2i[i]) * (alpha2 + c2j[j])
        else:
            c1i[i] -= 1.0
            c1j[j] -= 1.0
            n1 -= 1
            p_s *= g[n1] * (alpha1 + c1i[i]) * (alpha2 + c1j[j])
        p_12 *= g[n1 + n2] * (alpha1 + c1i[i] + c2i[i]) * (alpha2 + c1j[j] + c2j[j])
        p_s, l_s = _fold(p_s, l_s)
        p_12, l_12 = _fold(p_12, l_12)
    return l_s + math.log(p_s) - l_12 - math.log(p_12)


# ---------------------------------------------------------------------------------------------
# Block units: the customers of S grouped by row (or column); the passes move whole blocks
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _count_blocks(key, blk, index, prop, bl):
    """Number the blocks of S = S_k1 (u S_k2) by ``key`` (their row or column; ``blk``: -1 for
    every key): ``blk[key]`` its block, ``bl.key``, ``bl.cnt`` its key and size, ``bl.rank`` its
    atom's side for now (0: k1, 1: k2). Returns the number of blocks, or -1 (``blk`` reset) if
    S is not block-consistent (a block with customers in both atoms; only for a merge)."""
    buf, start, size = index.buf, index.start, index.size
    bkey, bcnt, brank = bl.key, bl.cnt, bl.rank
    nb = 0
    for q in range(1 if prop.split else 2):   # the customers of k1, then (merge) those of k2
        kq = prop.k1 if q == 0 else prop.k2
        st = start[kq]
        for p in range(st, st + size[kq]):
            kk = key[buf[p]]
            b = blk[kk]
            if b < 0:                    # a new block, on side q
                b = nb
                blk[kk] = b
                bkey[nb] = kk
                bcnt[nb] = 0
                brank[nb] = q
                nb += 1
            elif brank[b] != q:          # a block with customers in both atoms: not consistent
                for bb in range(nb):
                    blk[bkey[bb]] = -1
                return -1
            bcnt[b] += 1
    return nb


@njit(cache=True)
def _order_blocks(rng, key, blk, nb, prop, lay, bl):
    """The layout of the ``nb`` blocks: the anchors' blocks at positions 0 (s1's) and 1 (s2's),
    then the others in uniformly random order (inside-out shuffle); block t is ``bl.pos[t]:
    bl.pos[t + 1]``, ``lay.cur[t]`` its atom's side; ``bl.cnt`` becomes each block's fill
    pointer."""
    bcur = lay.cur
    bpos, bcnt, bperm, brank, btmp = bl.pos, bl.cnt, bl.perm, bl.rank, bl.tmp
    b1 = blk[key[prop.s1]]
    b2 = blk[key[prop.s2]]
    for b in range(nb):              # brank held the side; bcur gets it in layout order below
        bcur[b] = brank[b]
    bperm[0] = b1
    bperm[1] = b2
    mm = 2
    for b in range(nb):
        if b != b1 and b != b2:      # inside-out shuffle of the other blocks
            u = 2 + int(rng.random() * (mm - 1))
            if u > mm:
                u = mm
            bperm[mm] = bperm[u]
            bperm[u] = b
            mm += 1
    acc = 0
    for t in range(nb):
        b = bperm[t]
        brank[b] = t
        bpos[t] = acc
        acc += bcnt[b]
    bpos[nb] = acc
    for b in range(nb):              # bcnt becomes the fill pointer of block b
        bcnt[b] = bpos[brank[b]]
    for t in range(nb):              # the sides in layout order
        btmp[t] = bcur[bperm[t]]
    for t in range(nb):
        bcur[t] = btmp[t]


@njit(cache=True)
def _fill_blocks(key, blk, nb, index, prop, cust, lay, bl):
    """Put the customers of S, with their rows and columns, at their blocks' places in ``lay``;
    ``blk`` is reset to -1."""
    buf, start, size = index.buf, index.start, index.size
    order, oi, oj = lay.order, lay.row, lay.col
    bcnt = bl.cnt
    for q in range(2 if not prop.split else 1):
        kq = prop.k1 if q == 0 else prop.k2
        st = start[kq]
        for p in range(st, st + size[kq]):
            c = buf[p]
            b = blk[key[c]]
            f = bcnt[b]
            order[f] = c
            oi[f] = cust.row[c]
            oj[f] = cust.col[c]
            bcnt[b] = f + 1
    for b in range(nb):
        blk[bl.key[b]] = -1


@njit(cache=True)
def _gather_blocks(rng, key, blk, index, prop, cust, lay, bl):
    """Group the customers of S = S_k1 (u S_k2) (the atoms of ``prop``) by ``key`` (their row or
    column; ``blk``, ``bl.of_row`` or ``bl.of_col``: -1 for every key, left so) into blocks laid
    out in ``lay``: the anchors' blocks at positions 0 (s1's) and 1 (s2's), then the others in
    uniformly random order; block t is ``bl.pos[t]:bl.pos[t + 1]``, ``lay.cur[t]`` its atom's
    side (0: k1, 1: k2) for a merge. Returns the number of blocks, or -1 if S is not
    block-consistent (a block with customers in both atoms; only for a merge). O(|S|)."""
    nb = _count_blocks(key, blk, index, prop, bl)
    if nb < 0:
        return nb
    _order_blocks(rng, key, blk, nb, prop, lay, bl)
    _fill_blocks(key, blk, nb, index, prop, cust, lay, bl)
    return nb


@njit(cache=True)
def _bweights(lay, a, b, n1, n2, cnt, bl, w):
    """ln w_S1(B), ln w_S2(B), ln w_S12(B) of the block B = customers ``a..b-1``: the products of
    (*) over its customers added one after the other (``bl.di``, ``bl.dj`` count those already
    added; they are left dirty: ``_badd`` resets them, or the caller). O(|B|)."""
    oi, oj = lay.row, lay.col
    c1i, c2i, c1j, c2j = cnt.r1, cnt.r2, cnt.c1, cnt.c2
    di, dj = bl.di, bl.dj
    alpha1, alpha2, g = w.alpha1, w.alpha2, w.g
    p1, l1 = 1.0, 0.0
    p2, l2 = 1.0, 0.0
    p12, l12 = 1.0, 0.0
    for t in range(a, b):
        i = oi[t]
        j = oj[t]
        u = t - a
        xi = di[i]
        xj = dj[j]
        p1 *= g[n1 + u] * (alpha1 + c1i[i] + xi) * (alpha2 + c1j[j] + xj)
        p2 *= g[n2 + u] * (alpha1 + c2i[i] + xi) * (alpha2 + c2j[j] + xj)
        p12 *= g[n1 + n2 + u] * (alpha1 + c1i[i] + c2i[i] + xi) * (alpha2 + c1j[j] + c2j[j] + xj)
        di[i] = xi + 1.0
        dj[j] = xj + 1.0
        p1, l1 = _fold(p1, l1)
        p2, l2 = _fold(p2, l2)
        p12, l12 = _fold(p12, l12)
    return l1 + math.log(p1), l2 + math.log(p2), l12 + math.log(p12)


@njit(cache=True)
def _badd(lay, a, b, ci_, cj_, bl, d):
    """Add (d = 1) or remove (d = -1) the block ``a..b-1`` to/from the counts ``ci_``, ``cj_`` (of
    S1 or S2), and reset ``bl.di``, ``bl.dj`` on its rows and columns."""
    oi, oj, di, dj = lay.row, lay.col, bl.di, bl.dj
    for t in range(a, b):
        i = oi[t]
        j = oj[t]
        ci_[i] += d
        cj_[j] += d
        di[i] = 0.0
        dj[j] = 0.0


@njit(cache=True, inline="always")
def _logaddexp(x, y):
    if x >= y:
        return x + math.log1p(math.exp(y - x))
    return y + math.log1p(math.exp(x - y))


@njit(cache=True)
def _bseed(lay, cnt, bl, w):
    """Put the anchors' blocks B1 (position 0) in S1 and B2 (position 1) in S2; returns
    ln pi(B1) pi(B2)/pi(B1 u B2) = ln pi(B2) - ln w_B1(B2) (g[0] = C(1)/(I a1 J a2), so that
    w_{empty}(B) = pi(B))."""
    bpos = bl.pos
    _badd(lay, bpos[0], bpos[1], cnt.r1, cnt.c1, bl, 1.0)
    n1 = bpos[1] - bpos[0]
    lw1, lw2, _ = _bweights(lay, bpos[1], bpos[2], n1, np.int64(0), cnt, bl, w)
    _badd(lay, bpos[1], bpos[2], cnt.r2, cnt.c2, bl, 1.0)
    return lw2 - lw1


@njit(cache=True)
def _ballocate(rng, lay, nb, forced, cnt, bl, w):
    """Sequential allocation of the blocks 2..nb-1 (after ``_bseed``) to S1 or S2 with
    probabilities proportional to w_S1(B), w_S2(B); ``forced``: replay ``lay.side``. Returns
    ``(ln prod w_chosen/w_S12, ln q_SA, n1, n2)``."""
    side, bpos = lay.side, bl.pos
    n1 = bpos[1] - bpos[0]
    n2 = bpos[2] - bpos[1]
    lpi = 0.0
    lq = 0.0
    for t in range(2, nb):
        a = bpos[t]
        b = bpos[t + 1]
        lw1, lw2, lw12 = _bweights(lay, a, b, n1, n2, cnt, bl, w)
        lse = _logaddexp(lw1, lw2)
        if forced:
            to2 = side[t] == 1
        else:
            to2 = rng.random() >= math.exp(lw1 - lse)
            side[t] = 1 if to2 else 0
        if to2:
            lpi += lw2 - lw12
            lq += lw2 - lse
            _badd(lay, a, b, cnt.r2, cnt.c2, bl, 1.0)
            n2 += b - a
        else:
            lpi += lw1 - lw12
            lq += lw1 - lse
            _badd(lay, a, b, cnt.r1, cnt.c1, bl, 1.0)
            n1 += b - a
    return lpi, lq, n1, n2


@njit(cache=True)
def _bscan(rng, lay, nb, forced, n1, n2, cnt, bl, w):
    """One restricted Gibbs scan over the blocks 2..nb-1 (the anchors' blocks stay put); as
    ``_scan``. Returns ``(ln q, n1, n2)``."""
    side, target, bpos = lay.side, lay.cur, bl.pos
    lq = 0.0
    for t in range(2, nb):
        a = bpos[t]
        b = bpos[t + 1]
        if side[t] == 1:
            _badd(lay, a, b, cnt.r2, cnt.c2, bl, -1.0)
            n2 -= b - a
        else:
            _badd(lay, a, b, cnt.r1, cnt.c1, bl, -1.0)
            n1 -= b - a
        lw1, lw2, _ = _bweights(lay, a, b, n1, n2, cnt, bl, w)
        lse = _logaddexp(lw1, lw2)
        if forced:
            to2 = target[t] == 1
        else:
            to2 = rng.random() >= math.exp(lw1 - lse)
        if to2:
            lq += lw2 - lse
            side[t] = 1
            _badd(lay, a, b, cnt.r2, cnt.c2, bl, 1.0)
            n2 += b - a
        else:
            lq += lw1 - lse
            side[t] = 0
            _badd(lay, a, b, cnt.r1, cnt.c1, bl, 1.0)
            n1 += b - a
    return lq, n1, n2


@njit(cache=True)
def _bunwind(lay, nb, n1, n2, cnt, bl, w):
    """Remove the blocks nb-1..2 and then the anchors' blocks (the counts are left at zero);
    returns sum ln(w_side(B)/w_S12(B)) over the blocks 2..nb-1, so that
    ln pi(S1) pi(S2)/pi(S1 u S2) = (``_bseed``'s value) + the returned sum."""
    oi, oj, side, bpos, di, dj = lay.row, lay.col, lay.side, bl.pos, bl.di, bl.dj
    out = 0.0
    for t in range(nb - 1, 1, -1):
        a = bpos[t]
        b = bpos[t + 1]
        if side[t] == 1:
            _badd(lay, a, b, cnt.r2, cnt.c2, bl, -1.0)
            n2 -= b - a
        else:
            _badd(lay, a, b, cnt.r1, cnt.c1, bl, -1.0)
            n1 -= b - a
        lw1, lw2, lw12 = _bweights(lay, a, b, n1, n2, cnt, bl, w)
        out += (lw2 if side[t] == 1 else lw1) - lw12
        for u in range(a, b):
            di[oi[u]] = 0.0
            dj[oj[u]] = 0.0
    _badd(lay, bpos[0], bpos[1], cnt.r1, cnt.c1, bl, -1.0)
    _badd(lay, bpos[1], bpos[2], cnt.r2, cnt.c2, bl, -1.0)
    return out


# ---------------------------------------------------------------------------------------------
# The steps of a proposal
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _unit_probs(units):
    """(p_row, p_col) of a proposal's unit: 0 or 1 for a fixed unit, ``MIXED_UNIT_PROBS``
    for ``UNITS_MIXED``."""
    if units == UNIT_CUSTOMER:
        return 0.0, 0.0
    if units == UNIT_ROW:
        return 1.0, 0.0
    if units == UNIT_COLUMN:
        return 0.0, 1.0
    return MIXED_UNIT_PROBS[1], MIXED_UNIT_PROBS[2]


# (inline="always" on _scratch, _weights and the chain _log_ratio -> _customer_log_ratio /
# _block_log_ratio -> _launch_and_scan: the passes then run in the compiled function that
# allocates their scratch arrays, where LLVM knows the arrays are distinct; called through
# separate functions, the scans of customer units were 7% slower)
@njit(cache=True, inline="always")
def _scratch(cust, M, blocks):
    """The scratch of a call: the two sides' counts, the layout of S (room for M customers) and,
    if some proposal may use ``blocks``, the blocks' tables (else empty ones)."""
    cnt = SideCounts(np.zeros(cust.n_rows), np.zeros(cust.n_rows), np.zeros(cust.n_cols),
                     np.zeros(cust.n_cols))
    lay = Layout(np.empty(M, np.int64), np.empty(M, np.int64), np.empty(M, np.int64),
                 np.empty(M, np.int8), np.empty(M, np.int8))
    if blocks:
        bl = Blocks(np.full(cust.n_rows, -1, np.int64), np.full(cust.n_cols, -1, np.int64),
                    np.zeros(cust.n_rows), np.zeros(cust.n_cols), np.empty(M + 1, np.int64),
                    np.empty(M, np.int64), np.empty(M, np.int64), np.empty(M, np.int64),
                    np.empty(M, np.int64), np.empty(M, np.int8))
    else:
        none = np.empty(0, np.int64)
        bl = Blocks(none, none, np.empty(0), np.empty(0), none, none, none, none, none,
                    np.empty(0, np.int8))
    return cnt, lay, bl


@njit(cache=True)
def _choose(rng, z, units, p_row, p_col, stats):
    """Choose the anchors: the unit (drawn independently of the state, only with
    ``UNITS_MIXED``), then two distinct customers s1, s2 uniformly; a split if they share an
    atom, else a merge (counted as proposed in ``stats``). Returns the ``Proposal``."""
    M = z.shape[0]
    unit = units
    if units == UNITS_MIXED:
        uu = rng.random()
        unit = UNIT_ROW if uu < p_row else (UNIT_COLUMN if uu < p_row + p_col else
                                            UNIT_CUSTOMER)
    us = N_GLOBAL_STATS + N_UNIT_STATS * unit       # this unit's statistics
    s1 = int(rng.random() * M)
    if s1 >= M:
        s1 = M - 1
    s2 = int(rng.random() * (M - 1))
    if s2 >= M - 1:
        s2 = M - 2
    if s2 >= s1:
        s2 += 1
    k1 = z[s1]
    k2 = z[s2]
    split = k1 == k2
    x = SPLIT_PROPOSED if split else MERGE_PROPOSED
    stats[x] += 1
    stats[us + x] += 1
    return Proposal(unit, us, s1, s2, k1, k2, split)


@njit(cache=True)
def _split_impossible(prop, cust, index):
    """Whether no split can separate the anchors: the DEPM with K+ = T (the IDEPM always has a
    free label), or the anchors in one block."""
    if not prop.split:
        return False
    same_block = ((prop.unit == UNIT_ROW and cust.row[prop.s1] == cust.row[prop.s2])
                  or (prop.unit == UNIT_COLUMN and cust.col[prop.s1] == cust.col[prop.s2]))
    return index.n[_FREE] == 0 or same_block


@njit(cache=True)
def _stay(prop, index, stats, trace, it):
    """The proposal is "stay" (``_split_impossible``): counted, traced; returns its work."""
    if index.n[_FREE] == 0:
        stats[SPLIT_BLOCKED] += 1
    stats[prop.us + SPLIT_IMPOSSIBLE] += 1
    if it < trace.shape[0]:
        trace[it, 0] = np.nan
        trace[it, 1] = 1.0
        trace[it, 2] = index.size[prop.k1]
    return 2


@njit(cache=True)
def _reject_inconsistent(prop, index, stats, trace, it):
    """A block merge of atoms that share a block: rejected (its reverse split has probability
    0); counted, traced; returns its work."""
    stats[prop.us + MERGE_INCONSISTENT] += 1
    n = index.size[prop.k1] + index.size[prop.k2]
    if it < trace.shape[0]:
        trace[it, 0] = -np.inf
        trace[it, 1] = 0.0
        trace[it, 2] = n
    return n


@njit(cache=True, inline="always")
def _shuffle_in(rng, order, m, customers, skip1, skip2):
    """Inside-out shuffle step: the ``customers`` other than ``skip1`` and ``skip2`` added to the
    uniformly random order ``order[:m]``, one uniform each; returns the new length."""
    for c in customers:
        if c != skip1 and c != skip2:
            u = int(rng.random() * (m + 1))
            if u > m:
                u = m
            order[m] = order[u]
            order[u] = c
            m += 1
    return m


@njit(cache=True)
def _lay_out_customers(rng, prop, z, cust, index, lay):
    """S for customer units: the customers of the atom(s) other than the anchors, in uniformly
    random order (inside-out shuffle), with their rows, columns and (merge) current sides.
    Returns their number m."""
    buf, start, size = index.buf, index.start, index.size
    order = lay.order
    k1, k2, s1, s2, split = prop.k1, prop.k2, prop.s1, prop.s2, prop.split
    m = _shuffle_in(rng, order, np.int64(0), buf[start[k1]:start[k1] + size[k1]], s1, s2)
    if not split:
        m = _shuffle_in(rng, order, m, buf[start[k2]:start[k2] + size[k2]], s2, s2)
    for t in range(m):
        c = order[t]
        lay.row[t] = cust.row[c]
        lay.col[t] = cust.col[c]
        if not split:
            lay.cur[t] = 1 if z[c] == k2 else 0
    return m


@njit(cache=True)
def _lay_out(rng, prop, z, cust, index, lay, bl):
    """S laid out in ``lay`` for the proposal's unit: the number m of customers other than the
    anchors (customer units) or the number of blocks (block units; -1: a merge of atoms that
    share a block)."""
    if prop.unit == UNIT_CUSTOMER:
        return _lay_out_customers(rng, prop, z, cust, index, lay)
    if prop.unit == UNIT_ROW:
        return _gather_blocks(rng, cust.row, bl.of_row, index, prop, cust, lay, bl)
    return _gather_blocks(rng, cust.col, bl.of_col, index, prop, cust, lay, bl)


@njit(cache=True, inline="always")
def _launch_and_scan(rng, lay, m, n_scans, forced, cnt, w):
    """Restricted Gibbs scans (customers): the launch, a sequential allocation and n_scans - 1
    scans (drawn, for a merge as for a split), then the proposal's scan (replayed with
    ``forced``). Returns ``(ln q_scan, n1, n2)``."""
    _, _, n1, n2 = _allocate(rng, lay, m, _NO, cnt, w, _NO)
    for _s in range(n_scans - 1):
        _, n1, n2 = _scan(rng, lay, m, _NO, n1, n2, cnt, w)
    return _scan(rng, lay, m, forced, n1, n2, cnt, w)


@njit(cache=True, inline="always")
def _customer_log_ratio(rng, prop, m, n_scans, want_q, cust, lay, cnt, w):
    """The proposal of customer units and its log ratio: the split drawn (or, for a merge,
    replayed) by the sequential allocation (``n_scans = 0``, (**)) or by restricted Gibbs scans.
    Returns ``(ln r, ln pi, ln q)``: ln r = ln pi - ln q, ln pi = ln pi(S1) pi(S2)/pi(S1 u S2),
    ln q that of the split (computed for ``n_scans = 0`` only if ``want_q``; ln r does not need
    it). The scratch counts are left at zero."""
    split = prop.split
    i1 = cust.row[prop.s1]
    j1 = cust.col[prop.s1]
    i2 = cust.row[prop.s2]
    j2 = cust.col[prop.s2]
    cnt.r1[i1] += 1.0
    cnt.c1[j1] += 1.0
    cnt.r2[i2] += 1.0
    cnt.c2[j2] += 1.0
    w_first = (w.g[1] * (w.alpha1 + (1.0 if i1 == i2 else 0.0))
               * (w.alpha2 + (1.0 if j1 == j2 else 0.0)))
    log_r = w.log_c1_IJ - math.log(w_first)
    if n_scans == 0:
        if not split:
            lay.side[:m] = lay.cur[:m]
        lsum, log_q, n1, n2 = _allocate(rng, lay, m, not split, cnt, w, want_q)
        log_r += lsum                       # = ln pi(S1)pi(S2)/pi(S) - ln q_SA
        log_pi = log_r + log_q
        for t in range(m):
            cnt.r1[lay.row[t]] = 0.0
            cnt.r2[lay.row[t]] = 0.0
            cnt.c1[lay.col[t]] = 0.0
            cnt.c2[lay.col[t]] = 0.0
    else:
        log_q, n1, n2 = _launch_and_scan(rng, lay, m, n_scans, not split, cnt, w)
        log_pi = log_r + _unwind(lay, m, n1, n2, cnt, w)
        log_r = log_pi - log_q
    cnt.r1[i1] = 0.0
    cnt.c1[j1] = 0.0
    cnt.r2[i2] = 0.0
    cnt.c2[j2] = 0.0
    return log_r, log_pi, log_q


@njit(cache=True, inline="always")
def _block_log_ratio(rng, split, nb, n_scans, lay, cnt, bl, w):
    """The same for block units, (***): the anchors' blocks seeded, then the sequential
    allocation of the blocks 2..nb-1 or the launch and the scans. Returns ``(ln r, ln pi,
    ln q)``; the scratch counts are left at zero."""
    log_r = _bseed(lay, cnt, bl, w)
    if n_scans == 0:
        if not split:
            lay.side[:nb] = lay.cur[:nb]
        lpi, log_q, n1, n2 = _ballocate(rng, lay, nb, not split, cnt, bl, w)
    else:
        _, _, n1, n2 = _ballocate(rng, lay, nb, _NO, cnt, bl, w)
        for _s in range(n_scans - 1):
            _, n1, n2 = _bscan(rng, lay, nb, _NO, n1, n2, cnt, bl, w)
        log_q, n1, n2 = _bscan(rng, lay, nb, not split, n1, n2, cnt, bl, w)
    lpi = _bunwind(lay, nb, n1, n2, cnt, bl, w)
    log_pi = log_r + lpi
    return log_pi - log_q, log_pi, log_q


@njit(cache=True, inline="always")
def _log_ratio(rng, prop, n, n_scans, want_q, cust, lay, cnt, bl, w):
    """The proposal's split (drawn, or replayed for a merge) and its log ratio, for the
    proposal's unit (``n`` from ``_lay_out``). Returns ``(|S|, work, ln r, ln pi, ln q)``:
    ln r = ln pi(split)/pi(merged) - ln q(split)."""
    if prop.unit == UNIT_CUSTOMER:
        log_r, log_pi, log_q = _customer_log_ratio(rng, prop, n, n_scans, want_q, cust, lay,
                                                   cnt, w)
        return n + 2, float((n + 2) * (n_scans + 4)), log_r, log_pi, log_q
    size_S = bl.pos[n]
    log_r, log_pi, log_q = _block_log_ratio(rng, prop.split, n, n_scans, lay, cnt, bl, w)
    return size_S, BLOCK_WORK * size_S * (n_scans + 4), log_r, log_pi, log_q


@njit(cache=True)
def _log_acceptance(split, log_r, log_pi, T, n_free):
    """ln of the Metropolis-Hastings ratio: ln r for a split, -ln r for a merge, with the DEPM's
    label factor (T > 0): + ln(T - K+) for a split, - ln(T - K+ + 1) for a merge (``n_free`` =
    T - K+). (``log_pi`` is not needed: the deliberately wrong ratios of ``moves_mutants`` use
    it.)"""
    if split:
        log_a = log_r
        if T > 0:
            log_a += math.log(n_free)
    else:
        log_a = -log_r
        if T > 0:
            log_a -= math.log(n_free + 1)
    return log_a


@njit(cache=True)
def _record(trace, it, log_a, split, size_S, log_pi, log_q):
    """Row ``it`` of ``trace`` (if it has one): ln of the acceptance ratio, split or merge, |S|
    and, with 6 columns, ln pi(S1) pi(S2)/pi(S1 u S2) and ln q."""
    if it < trace.shape[0]:
        trace[it, 0] = log_a
        trace[it, 1] = 1.0 if split else 0.0
        trace[it, 2] = size_S
        if trace.shape[1] > 5:
            trace[it, 4] = log_pi
            trace[it, 5] = log_q


@njit(cache=True)
def _accepted(rng, log_a):
    """Accept with probability min(1, exp(log_a)) (no draw when log_a >= 0)."""
    return log_a >= 0.0 or math.log(rng.random()) < log_a


@njit(cache=True)
def _take_free_label(rng, index, T):
    """A label for S2: the last free one (the IDEPM: the smallest free label, or the one freed
    last) or one drawn uniformly among the T - K+ free ones (the DEPM); removed from the pool."""
    pool, ppos, n = index.pool, index.ppos, index.n
    n_pool = n[_FREE]
    if T > 0:
        p = int(rng.random() * n_pool)
        if p >= n_pool:
            p = n_pool - 1
    else:
        p = n_pool - 1
    lab = pool[p]
    last = pool[n_pool - 1]
    pool[p] = last
    ppos[last] = p
    ppos[lab] = -1
    n[_FREE] = n_pool - 1
    n[_K_PLUS] += 1
    return lab


@njit(cache=True)
def _write_split(prop, n, lab, z, index, lay, bl):
    """Write an accepted split: the block of k1 in ``index.buf`` rewritten in place, S1 first
    (keeps k1), then S2 (the new label ``lab``, also in ``z``)."""
    buf, start, size = index.buf, index.start, index.size
    order, side = lay.order, lay.side
    k1 = prop.k1
    st = start[k1]
    q = st
    if prop.unit == UNIT_CUSTOMER:
        m = n
        buf[q] = prop.s1
        q += 1
        for t in range(m):
            if side[t] == 0:
                buf[q] = order[t]
                q += 1
        size[k1] = q - st
        start[lab] = q
        buf[q] = prop.s2
        z[prop.s2] = lab
        q += 1
        for t in range(m):
            if side[t] == 1:
                c = order[t]
                buf[q] = c
                z[c] = lab
                q += 1
    else:
        nb = n
        bpos = bl.pos
        side[0] = 0
        side[1] = 1
        for t in range(nb):
            if side[t] == 0:
                for p in range(bpos[t], bpos[t + 1]):
                    buf[q] = order[p]
                    q += 1
        size[k1] = q - st
        start[lab] = q
        for t in range(nb):
            if side[t] == 1:
                for p in range(bpos[t], bpos[t + 1]):
                    c = order[p]
                    buf[q] = c
                    z[c] = lab
                    q += 1
    size[lab] = q - start[lab]


@njit(cache=True)
def _write_merge(prop, z, index):
    """Write an accepted merge: the customers of k1 and k2 appended to ``index.buf`` as k1's
    block (compacting the buffer when full), k2 freed."""
    buf, start, size, n = index.buf, index.start, index.size, index.n
    k1, k2 = prop.k1, prop.k2
    nn = size[k1] + size[k2]
    tail = n[_TAIL]
    if tail + nn > buf.shape[0]:
        tail = _compact(buf, start, size)
    q = tail
    st = start[k1]
    for p in range(st, st + size[k1]):
        buf[q] = buf[p]
        q += 1
    st = start[k2]
    for p in range(st, st + size[k2]):
        c = buf[p]
        buf[q] = c
        z[c] = k1
        q += 1
    start[k1] = tail
    size[k1] = nn
    n[_TAIL] = q
    size[k2] = 0
    n_pool = n[_FREE]
    index.pool[n_pool] = k2
    index.ppos[k2] = n_pool
    n[_FREE] = n_pool + 1
    n[_K_PLUS] -= 1


@njit(cache=True)
def _write_back(rng, prop, n, z, index, lay, bl, T, stats):
    """An accepted proposal: counted, and written to ``z`` and the index."""
    if prop.split:
        stats[SPLIT_ACCEPTED] += 1
        stats[prop.us + SPLIT_ACCEPTED] += 1
        _write_split(prop, n, _take_free_label(rng, index, T), z, index, lay, bl)
    else:
        stats[MERGE_ACCEPTED] += 1
        stats[prop.us + MERGE_ACCEPTED] += 1
        _write_merge(prop, z, index)


# ---------------------------------------------------------------------------------------------
# The proposals
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _budget(index, M):
    """The work after which a call with ``n_proposals < 0`` stops: ``WORK_PER_SWEEP`` M K+."""
    return WORK_PER_SWEEP * M * max(index.n[_K_PLUS], 1)


@njit(cache=True)
def propose_split_merge(rng, cust, z, n_labels, target, n_proposals, n_scans, trace, units):
    """``n_proposals`` split-merge Metropolis-Hastings proposals on the labels ``z`` (changed in
    place), the kernel behind ``split_merge_idepm`` and ``split_merge_depm``.

    ``cust``: the ``Customers`` of the seating (``customer_cells``). Labels are
    ``0..n_labels-1``, of which the empty ones are free: the DEPM's ``n_labels = T``; the IDEPM
    needs room for every label in use and one more per split (``M + 1`` always does).
    ``target``: ``idepm_target`` (a split takes the smallest free label, no label factor) or
    ``depm_target`` (a split draws its label uniformly among the T - K+ empty ones, with the
    factor of the module docstring). ``n_scans``: 0, the sequential allocation is the proposal
    (Dahl); s >= 1, it is the launch, followed by s - 1 intermediate restricted Gibbs scans, and
    the proposal is one more scan (Jain & Neal). ``n_proposals < 0``: proposals until their
    work, sum of (|S| (n_scans + 4)) (block units: ``BLOCK_WORK`` times that), reaches
    ``WORK_PER_SWEEP`` M K+ (K+ at the start of the call), about that of one Gibbs sweep.
    ``units``: ``UNIT_CUSTOMER``, ``UNIT_ROW``, ``UNIT_COLUMN`` (every proposal with that unit)
    or ``UNITS_MIXED`` (each proposal draws its unit, with probabilities ``MIXED_UNIT_PROBS``).

    ``trace``: float64 array (rows, 3, 4 or 6), e.g. ``np.empty((0, 3))`` for none; for the
    proposals ``it`` < rows, row ``it`` gets (log acceptance ratio, 1 for a split / 0 for a
    merge, |S|[, unit[, ln pi(S1) pi(S2)/pi(S1 u S2), ln q]]) of proposal ``it`` (log ratio NaN
    for a blocked or impossible split, -inf for a merge rejected as not block-consistent; ln q
    is that of the split, proposed or replayed), for diagnostics and checks.

    Returns ``(K+, stats, index)``: ``stats`` as described at ``N_STATS``, ``index`` the
    ``LabelIndex`` of the customers by label (for tests).
    """
    M = z.shape[0]
    stats = np.zeros(N_STATS, np.int64)
    index = _build_index(z, n_labels)
    if M < 2:
        return index.n[_K_PLUS], stats, index
    w = _weights(target, M)
    p_row, p_col = _unit_probs(units)
    cnt, lay, bl = _scratch(cust, M, p_row + p_col > 0.0)
    budget = _budget(index, M)
    work = 0.0
    it = -1
    while True:
        it += 1
        if n_proposals >= 0:
            if it >= n_proposals:
                break
        elif work >= budget:
            break
        prop = _choose(rng, z, units, p_row, p_col, stats)
        if it < trace.shape[0] and trace.shape[1] > 3:
            trace[it, 3] = prop.unit
        if _split_impossible(prop, cust, index):
            work += _stay(prop, index, stats, trace, it)
            continue
        n = _lay_out(rng, prop, z, cust, index, lay, bl)
        if n < 0:
            work += _reject_inconsistent(prop, index, stats, trace, it)
            continue
        want_q = it < trace.shape[0] and trace.shape[1] > 5
        size_S, cost, log_r, log_pi, log_q = _log_ratio(rng, prop, n, n_scans, want_q, cust, lay,
                                                        cnt, bl, w)
        work += cost
        log_a = _log_acceptance(prop.split, log_r, log_pi, target.T, index.n[_FREE])
        _record(trace, it, log_a, prop.split, size_S, log_pi, log_q)
        if _accepted(rng, log_a):
            _write_back(rng, prop, n, z, index, lay, bl, target.T, stats)
    return index.n[_K_PLUS], stats, index


@njit(cache=True)
def _idepm_n_labels(K, M, n_proposals):
    """Labels an IDEPM call needs, from K+ = ``K`` labels in use: one more per split, at most M
    in use, and one more."""
    return (min(K + n_proposals, max(M, K)) if n_proposals >= 0 else max(M, K)) + 1


@njit(cache=True)
def _renumber(z, n_labels):
    """Relabel ``z`` (in place) 0..K+-1, in increasing order of the old label."""
    used = np.zeros(n_labels, np.bool_)
    for s in range(z.shape[0]):
        used[z[s]] = True
    new = np.full(n_labels, -1, np.int64)
    r = 0
    for k in range(n_labels):
        if used[k]:
            new[k] = r
            r += 1
    for s in range(z.shape[0]):
        z[s] = new[z[s]]



@njit(cache=True)
def split_merge_idepm(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, alpha1, alpha2, gamma0,
                      n_proposals=DEFAULT_N_PROPOSALS, n_scans=DEFAULT_N_SCANS,
                      units=DEFAULT_UNITS):
    """``n_proposals`` split-merge Metropolis-Hastings moves of the IDEPM's seating (Theorem 4).

    Takes the seating ``(offsets, z)`` (labels 0..K+-1, all in use) with its int64 counts
    ``n_ik`` (I' x K+), ``n_jk`` (J' x K+), ``n_k`` (K+) as returned by ``idepm.idepm_sweep``, the
    dimensions I, J of X and alpha1, alpha2, gamma0 (c0 does not enter: m is fixed). Returns
    ``(z, n_ik, n_jk, n_k, K+, stats)``, new arrays with labels 0..K+-1 (a split adds the label
    K+, a merge removes one and renumbers the larger ones), and ``stats`` (``N_STATS`` int64) =
    [splits proposed, splits accepted, merges proposed, merges accepted, 0, then six per unit:
    see ``N_GLOBAL_STATS``]. ``offsets`` and the inputs are unchanged. Each proposal leaves
    P(z | m, h) invariant; see the module docstring for the ratio.

    ``n_proposals``: the number of proposals; negative (the default): as many as fit in about
    the work of one Gibbs sweep (``WORK_PER_SWEEP``). ``n_scans``: 0, Dahl's sequential
    allocation is the proposal; s >= 1, it launches s - 1 restricted Gibbs scans and the
    proposal is one more scan (Jain & Neal), at about (s + 4)/4 times the cost per proposal.
    ``units``: what a proposal allocates: single customers (``UNIT_CUSTOMER``, the default), the
    blocks of customers of the atom(s) in one row (``UNIT_ROW``) or one column
    (``UNIT_COLUMN``), or, for each proposal, one of these drawn with probabilities
    ``MIXED_UNIT_PROBS`` (``UNITS_MIXED``); see "Block units" in the module docstring.
    """
    # (np.int64: an omitted argument would otherwise compile the kernel once more)
    n_prop = np.int64(n_proposals)
    zz = z.copy()
    n_labels = _idepm_n_labels(n_k.shape[0], zz.shape[0], n_prop)
    Kp, stats, _ = propose_split_merge(
        rng, customer_cells(rows, cols, offsets, n_ik.shape[0], n_jk.shape[0]), zz, n_labels,
        idepm_target(I, J, alpha1, alpha2, gamma0), n_prop, np.int64(n_scans), np.empty((0, 3)),
        np.int64(units))
    _renumber(zz, n_labels)
    a, b, c = seat_counts(rows, cols, offsets, zz, n_ik.shape[0], n_jk.shape[0], max(Kp, 1))
    return zz, a, b, c, Kp, stats


@njit(cache=True)
def split_merge_depm(rng, rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, alpha1, alpha2, gamma0, T,
                     n_proposals=DEFAULT_N_PROPOSALS, n_scans=DEFAULT_N_SCANS, units=DEFAULT_UNITS):
    """``n_proposals`` split-merge Metropolis-Hastings moves of the truncated DEPM's labels (Eq. 41)

    ``z`` holds labels in 0..T-1 and ``m_ik`` (I' x T), ``m_jk`` (J' x T), ``m_k`` (T) its int64
    counts; phi, psi, lambda are integrated out (Lemma 1), so the move leaves
    P(z | m, h) = P(m, z)/P(m) of Eq. (41) invariant, with a = gamma0/T. A split keeps the
    atom's label for the customers with the first anchor and gives the others a label drawn
    uniformly among the T - K+ empty ones (no split when K+ = T: ``stats[4]`` counts these); a
    merge keeps the label of the first anchor's atom. Returns ``(z, m_ik, m_jk, m_k, K+, stats)``
    (new arrays; ``stats`` as for ``split_merge_idepm``, plus the blocked splits in
    ``stats[4]``). ``n_proposals``, ``n_scans`` and ``units`` as for ``split_merge_idepm``.
    """
    zz = z.copy()
    Kp, stats, _ = propose_split_merge(
        rng, customer_cells(rows, cols, offsets, m_ik.shape[0], m_jk.shape[0]), zz, np.int64(T),
        depm_target(I, J, alpha1, alpha2, gamma0, T), np.int64(n_proposals), np.int64(n_scans),
        np.empty((0, 3)), np.int64(units))
    x, y, w = seat_counts(rows, cols, offsets, zz, m_ik.shape[0], m_jk.shape[0], T)
    return zz, x, y, w, Kp, stats


# ---------------------------------------------------------------------------------------------
# Diagnostics: why proposals are (not) accepted
# ---------------------------------------------------------------------------------------------
#: names of the allocation units, by their number
UNIT_NAMES = ("customer", "row", "column")


def proposal_trace(rows, cols, offsets, z, I, J, alpha1, alpha2, gamma0, *, n_proposals=200,
                   n_scans=DEFAULT_N_SCANS, units=DEFAULT_UNITS, seed=0, T=None):
    """Run ``n_proposals`` split-merge proposals of the IDEPM (``T=None``) or the DEPM (``T``) from
    a seating and say, per proposal, why it was accepted or not.

    ``rows, cols, offsets, z``: the seating (e.g. ``FitResult.state`` of an IDEPM fit: its
    ``rows``, ``cols``, ``offsets``, ``z``), ``I, J`` the dimensions of X, ``alpha1, alpha2,
    gamma0`` the hyperparameters (any values: e.g. another chain's, to see how the moves depend
    on them). The proposals run one after the other as in a sweep (an accepted one changes the
    state the next one starts from); the input ``z`` is not changed.

    Returns a dict of arrays, one entry per proposal: ``split`` (True: a split was proposed;
    False: a merge), ``unit`` (0, 1, 2: customer, row or column units, :data:`UNIT_NAMES`),
    ``size`` (|S|, the customers of the atom(s) involved), ``log_ratio`` (ln of the MH acceptance
    ratio r; NaN for a split that could not be proposed, -inf for a block merge of atoms that share
    a block), ``log_target`` (ln pi(S1) pi(S2) / pi(S1 u S2): how much better the split state is
    than the merged one under the target, whichever was proposed), ``log_q`` (ln of the
    probability of proposing that split, or of replaying it for a merge); and ``stats`` (the
    ``N_STATS`` counters, accepted splits and merges among them) and ``K`` (atoms at the end).
    For a split ln r = log_target - log_q (IDEPM), for a merge ln r = log_q - log_target (module
    docstring, Eq. (**) and the scans); the DEPM adds its label factor.
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    zz = np.array(z, dtype=np.int64)
    if rows.shape != cols.shape or offsets.shape != (rows.shape[0] + 1,) or zz.shape != (offsets[-1],):
        raise ValueError("rows, cols (one per one of X), offsets (one more) and z (one per customer) "
                         "do not fit together")
    if zz.size and zz.min() < 0:
        raise ValueError("z holds negative labels")
    if min(alpha1, alpha2, gamma0) <= 0 or not all(np.isfinite((alpha1, alpha2, gamma0))):
        raise ValueError("alpha1, alpha2 and gamma0 must be positive and finite")
    if not isinstance(n_proposals, (int, np.integer)) or n_proposals < 1:
        raise ValueError(f"n_proposals must be an integer >= 1, got {n_proposals!r}")
    if units not in (UNIT_CUSTOMER, UNIT_ROW, UNIT_COLUMN, UNITS_MIXED):
        raise ValueError(f"units must be one of {UNIT_CUSTOMER}, {UNIT_ROW}, {UNIT_COLUMN}, "
                         f"{UNITS_MIXED} (mixed), got {units!r}")
    M = zz.shape[0]
    if T is None:
        n_labels, log_c1, a_c, t = max(M, int(zz.max(initial=0)) + 1) + 1, math.log(gamma0), 0.0, 0
    else:
        if zz.size and zz.max() >= T:
            raise ValueError(f"z holds labels >= T = {T}")
        n_labels, log_c1, a_c, t = int(T), math.log(gamma0 / T), gamma0 / T, int(T)
    cust = customer_cells(rows, cols, offsets, int(rows.max(initial=0)) + 1,
                          int(cols.max(initial=0)) + 1)
    target = Target(float(I), float(J), float(alpha1), float(alpha2), log_c1, a_c, np.int64(t))
    trace = np.full((n_proposals, 6), np.nan)
    Kp, stats, _ = propose_split_merge(np.random.default_rng(seed), cust, zz, n_labels, target,
                                       np.int64(n_proposals), np.int64(n_scans), trace,
                                       np.int64(units))
    return dict(split=trace[:, 1] == 1, unit=trace[:, 3].astype(np.int64), size=trace[:, 2],
                log_ratio=trace[:, 0], log_target=trace[:, 4], log_q=trace[:, 5], stats=stats,
                K=int(Kp))


# ---------------------------------------------------------------------------------------------
# The target, for tests and checks (plain numpy)
# ---------------------------------------------------------------------------------------------
def log_seating_target(rows, cols, offsets, z, I, J, alpha1, alpha2, gamma0, T=None) -> float:
    """ln P(z | m, h) up to a constant that depends on m only: the product-partition form of the
    module docstring. ``T=None``: the IDEPM (C(n) = gamma0 G(n), a function of the partition);
    an int T: the DEPM with labels 0..T-1 (C(n) = G(a + n)/G(a), a = gamma0/T)."""
    rows = np.asarray(rows)
    cols = np.asarray(cols)
    offsets = np.asarray(offsets)
    z = np.asarray(z)
    m_e = np.diff(offsets)
    ri = np.repeat(rows, m_e)
    cj = np.repeat(cols, m_e)
    labels, zc = np.unique(z, return_inverse=True)
    K = labels.size
    n_ik = np.zeros((int(ri.max()) + 1, K))
    np.add.at(n_ik, (ri, zc), 1)
    n_jk = np.zeros((int(cj.max()) + 1, K))
    np.add.at(n_jk, (cj, zc), 1)
    n_k = n_ik.sum(axis=0)
    out = np.sum(gammaln(I * alpha1) - gammaln(I * alpha1 + n_k))
    out += np.sum(gammaln(alpha1 + n_ik) - gammaln(alpha1))
    out += np.sum(gammaln(J * alpha2) - gammaln(J * alpha2 + n_k))
    out += np.sum(gammaln(alpha2 + n_jk) - gammaln(alpha2))
    if T is None:
        out += K * math.log(gamma0) + np.sum(gammaln(n_k))
    else:
        a = gamma0 / T
        out += np.sum(gammaln(a + n_k) - gammaln(a))
    return float(out)
