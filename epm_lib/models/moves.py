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

Acceptance in practice (measured when this module was written, one Gibbs sweep then one call
with the defaults per iteration). Enron (149 x 149, 441 ones, M ~ 600, K+ ~ 23): about 20
sequential-allocation proposals per sweep, 2 % of the splits and 0.2-0.3 % of the merges
accepted; K+ wanders between 15 and 35 from every start. MovieLens100K (943 x 1682, M ~ 75 000):
from a 2-atom state splits are taken with s >= 5 (about 1 in 30-50; never with s = 0), but in
states with 11 or 22 atoms none of thousands of proposals was accepted, for any s up to 20: the
log ratios of the best splits are about -10, of the best merges -300 and below (median -1000 and
-3000 or worse). There these moves leave the chain where it is, exactly but uselessly.

Derived in ``chapters/13_depm_sampler`` (DEPM) and ``chapters/14_idepm_sampler`` (IDEPM).

References: S. Jain, R. M. Neal (2004), J. Comput. Graph. Stat. 13, 158-182; D. B. Dahl (2005),
Tech. Rep. 1086, Univ. Wisconsin; C. Wang, D. M. Blei (2012), NIPS; J. Chang, J. W. Fisher III
(2013), NIPS.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import gammaln

from .common import seat_counts

__all__ = ["DEFAULT_N_PROPOSALS", "DEFAULT_N_SCANS", "WORK_PER_SWEEP",
           "split_merge_idepm", "split_merge_depm", "log_seating_target"]

#: default number of proposals per call: -1, as many as fit in the work of about one Gibbs sweep
DEFAULT_N_PROPOSALS = -1
#: that work, in customer visits per customer and atom (a Gibbs sweep visits M K+ customer-atom
#: pairs; a proposal visits its |S| customers n_scans + 4 times); calibrated on MovieLens100K
WORK_PER_SWEEP = 0.7
#: default number of restricted Gibbs scans per proposal (0: the sequential allocation alone)
DEFAULT_N_SCANS = 5

# indices into the statistics returned by the moves
SPLIT_PROPOSED, SPLIT_ACCEPTED, MERGE_PROPOSED, MERGE_ACCEPTED, SPLIT_BLOCKED = range(5)


# ---------------------------------------------------------------------------------------------
# Index of the customers by atom
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _customer_cells(rows, cols, offsets):
    """Row and column of every customer."""
    M = offsets[rows.shape[0]]
    ci = np.empty(M, np.int64)
    cj = np.empty(M, np.int64)
    for e in range(rows.shape[0]):
        for s in range(offsets[e], offsets[e + 1]):
            ci[s] = rows[e]
            cj[s] = cols[e]
    return ci, cj


@njit(cache=True)
def _build_index(z, n_labels):
    """Counting sort of the customers by label: the customers of label k are
    ``buf[start[k]:start[k] + size[k]]``; ``buf`` has room for 2M + 2 entries. Returns
    ``(buf, start, size, tail)``, tail the first unused slot."""
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
    return buf, start, size, M


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
# The passes over the customers of S (scratch counts c1*, c2* of S1 and S2 per row and column)
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _atom_factor_table(n_max, a_c, Ia1, Ja2):
    """g[n] = (a_c + n)/((I a1 + n)(J a2 + n)), the atom part of (*), for n = 0..n_max."""
    g = np.empty(n_max + 1)
    for n in range(n_max + 1):
        g[n] = (a_c + n) / ((Ia1 + n) * (Ja2 + n))
    return g


# Products of many weights are kept as a double and a log: the double is folded into the log
# when it leaves [1e-100, 1e100] (so no division or log per customer).
@njit(cache=True, inline="always")
def _fold(x, log_x):
    if x < 1e-100 or x > 1e100:
        return 1.0, log_x + math.log(x)
    return x, log_x


@njit(cache=True)
def _allocate(rng, oi, oj, m, side, forced, c1i, c2i, c1j, c2j, alpha1, alpha2, g, want_q):
    """Sequential allocation of the customers ``0..m-1`` of S (rows ``oi``, columns ``oj``) to S1
    or S2, whose counts hold the anchors only. ``forced``: the sides are read from ``side``
    (replay); else drawn and written there. Returns ``(ln prod (w_S1 + w_S2)/w_S12, ln q_SA, n1,
    n2)``, ln q_SA only if ``want_q``; the counts are left those of S1 and S2."""
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
def _scan(rng, oi, oj, m, side, target, forced, n1, n2, c1i, c2i, c1j, c2j, alpha1, alpha2, g):
    """One restricted Gibbs scan (Jain & Neal 2004): each customer ``t = 0..m-1`` of S in turn
    leaves its side and is put in S1 or S2 with probability proportional to w_S1, w_S2 of (*)
    (the anchors never move); ``forced``: it is put at ``target[t]`` instead. Updates ``side``
    and the counts; returns ``(ln q, n1, n2)``, q the probability of the scan's outcome."""
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
def _unwind(oi, oj, m, side, n1, n2, c1i, c2i, c1j, c2j, alpha1, alpha2, g):
    """Remove the customers ``m-1..0`` of S from their sides (the counts are left holding the
    anchors only) and return sum ln(w_side/w_S12), so that, by (*),
    ln pi(S1) pi(S2)/pi(S1 u S2) = ln pi({s2}) - ln w_{s1}(s2) + the returned sum."""
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
# The proposals
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _split_merge_core(rng, ci, cj, z, n_labels, n_rows, n_cols, I, J, alpha1, alpha2, log_c1, a_c,
                      T, n_proposals, n_scans, mutation, trace):
    """``n_proposals`` split-merge proposals on the labels ``z`` (changed in place).

    Labels are ``0..n_labels-1``, of which the empty ones form the pool of free labels. ``T = 0``:
    IDEPM (a split takes the last free label, no label factor); ``T > 0``: DEPM with
    ``n_labels = T`` (a split draws its label uniformly from the T - K+ empty ones, with the
    factor of the module docstring). ``log_c1`` = ln C(1), ``a_c`` as in (*). ``n_scans``: 0,
    the sequential allocation is the proposal (Dahl); s >= 1, it is the launch, followed by s - 1
    intermediate restricted Gibbs scans, and the proposal is one more scan (Jain & Neal).
    ``n_proposals < 0``: proposals until their work, sum of (|S| (n_scans + 4)), reaches
    ``WORK_PER_SWEEP`` M K+ (K+ at the start of the call), about that of one Gibbs sweep.

    ``mutation`` (tests only; 0 = the exact move): 1 drops the reverse-proposal probability
    (q_SA, or q of the final scan) from the merge's ratio; 2 drops the label-choice factor of
    the DEPM. ``trace``: float64 array (rows, 3); for the proposals ``it`` < rows, row ``it`` gets
    (log acceptance ratio, 1 for a split / 0 for a merge, |S|) of proposal ``it`` (log ratio
    NaN for a blocked split), for diagnostics.
    Returns ``(K+, stats, buf, start, size)`` (the last three: the index of customers by label,
    for tests).
    """
    M = z.shape[0]
    stats = np.zeros(5, np.int64)
    buf, start, size, tail = _build_index(z, n_labels)
    # pool of empty labels, with positions for the swap-remove
    pool = np.empty(n_labels, np.int64)
    ppos = np.full(n_labels, -1, np.int64)
    n_pool = 0
    for k in range(n_labels - 1, -1, -1):        # IDEPM: the smallest free label is taken first
        if size[k] == 0:
            pool[n_pool] = k
            ppos[k] = n_pool
            n_pool += 1
    Kp = n_labels - n_pool
    if M < 2:
        return Kp, stats, buf, start, size
    g = _atom_factor_table(M + 1, a_c, I * alpha1, J * alpha2)
    log_c1_IJ = log_c1 - math.log(I) - math.log(J)
    c1i = np.zeros(n_rows)
    c2i = np.zeros(n_rows)
    c1j = np.zeros(n_cols)
    c2j = np.zeros(n_cols)
    order = np.empty(M, np.int64)
    oi = np.empty(M, np.int64)
    oj = np.empty(M, np.int64)
    side = np.empty(M, np.int8)
    cur = np.empty(M, np.int8)
    budget = WORK_PER_SWEEP * M * max(Kp, 1)
    work = 0.0
    it = -1
    while True:
        it += 1
        if n_proposals >= 0:
            if it >= n_proposals:
                break
        elif work >= budget:
            break
        record = it < trace.shape[0]
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
        if split:
            stats[SPLIT_PROPOSED] += 1
            if n_pool == 0:                  # DEPM with K+ = T (the IDEPM always has a free label)
                stats[SPLIT_BLOCKED] += 1
                work += size[k1] + 2
                if record:
                    trace[it, 0] = np.nan
                    trace[it, 1] = 1.0
                    trace[it, 2] = size[k1]
                continue
        else:
            stats[MERGE_PROPOSED] += 1
        # the other customers of the atom(s), in uniformly random order (inside-out shuffle)
        m = 0
        st = start[k1]
        for p in range(st, st + size[k1]):
            c = buf[p]
            if c != s1 and c != s2:
                u = int(rng.random() * (m + 1))
                if u > m:
                    u = m
                order[m] = order[u]
                order[u] = c
                m += 1
        if not split:
            st = start[k2]
            for p in range(st, st + size[k2]):
                c = buf[p]
                if c != s2:
                    u = int(rng.random() * (m + 1))
                    if u > m:
                        u = m
                    order[m] = order[u]
                    order[u] = c
                    m += 1
        work += (m + 2) * (n_scans + 4)
        for t in range(m):
            c = order[t]
            oi[t] = ci[c]
            oj[t] = cj[c]
            if not split:
                cur[t] = 1 if z[c] == k2 else 0
        i1 = ci[s1]
        j1 = cj[s1]
        i2 = ci[s2]
        j2 = cj[s2]
        c1i[i1] += 1.0
        c1j[j1] += 1.0
        c2i[i2] += 1.0
        c2j[j2] += 1.0
        w_first = (g[1] * (alpha1 + (1.0 if i1 == i2 else 0.0))
                   * (alpha2 + (1.0 if j1 == j2 else 0.0)))
        log_r = log_c1_IJ - math.log(w_first)
        if n_scans == 0:
            # (**): the sequential allocation is the proposal (drawn, or replayed for a merge)
            if not split:
                side[:m] = cur[:m]
            lsum, log_q, n1, n2 = _allocate(rng, oi, oj, m, side, not split, c1i, c2i, c1j, c2j,
                                            alpha1, alpha2, g, mutation == 1)
            log_r += lsum                       # = ln pi(S1)pi(S2)/pi(S) - ln q_SA
            log_pi = log_r + log_q              # (only used by the mutation)
            for t in range(m):
                c1i[oi[t]] = 0.0
                c2i[oi[t]] = 0.0
                c1j[oj[t]] = 0.0
                c2j[oj[t]] = 0.0
        else:
            # the launch: sequential allocation and n_scans - 1 restricted Gibbs scans (drawn, for
            # a merge as for a split); the proposal: one more scan, replayed for a merge
            _, _, n1, n2 = _allocate(rng, oi, oj, m, side, False, c1i, c2i, c1j, c2j,
                                     alpha1, alpha2, g, False)
            for _s in range(n_scans - 1):
                _, n1, n2 = _scan(rng, oi, oj, m, side, cur, False, n1, n2, c1i, c2i, c1j, c2j,
                                  alpha1, alpha2, g)
            log_q, n1, n2 = _scan(rng, oi, oj, m, side, cur, not split, n1, n2, c1i, c2i, c1j,
                                  c2j, alpha1, alpha2, g)
            log_pi = log_r + _unwind(oi, oj, m, side, n1, n2, c1i, c2i, c1j, c2j, alpha1, alpha2,
                                     g)
            log_r = log_pi - log_q
        c1i[i1] = 0.0
        c1j[j1] = 0.0
        c2i[i2] = 0.0
        c2j[j2] = 0.0
        # log_r = ln pi(split)/pi(merged) - ln q(split); the acceptance of a merge uses -log_r
        if split:
            log_a = log_r
            if T > 0 and mutation != 2:
                log_a += math.log(n_pool)
        else:
            log_a = -log_r
            if mutation == 1:                 # wrong on purpose: q of the reverse split dropped
                log_a = -log_pi
            if T > 0 and mutation != 2:
                log_a -= math.log(n_pool + 1)
        if record:
            trace[it, 0] = log_a
            trace[it, 1] = 1.0 if split else 0.0
            trace[it, 2] = m + 2
        if not (log_a >= 0.0 or math.log(rng.random()) < log_a):
            continue
        if split:
            stats[SPLIT_ACCEPTED] += 1
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
            n_pool -= 1
            Kp += 1
            # rewrite the block of k1: S1 first (keeps k1), then S2 (the new label)
            st = start[k1]
            q = st
            buf[q] = s1
            q += 1
            for t in range(m):
                if side[t] == 0:
                    buf[q] = order[t]
                    q += 1
            size[k1] = q - st
            start[lab] = q
            buf[q] = s2
            z[s2] = lab
            q += 1
            for t in range(m):
                if side[t] == 1:
                    c = order[t]
                    buf[q] = c
                    z[c] = lab
                    q += 1
            size[lab] = q - start[lab]
        else:
            stats[MERGE_ACCEPTED] += 1
            n = size[k1] + size[k2]
            if tail + n > buf.shape[0]:
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
            size[k1] = n
            tail = q
            size[k2] = 0
            pool[n_pool] = k2
            ppos[k2] = n_pool
            n_pool += 1
            Kp -= 1
    return Kp, stats, buf, start, size


@njit(cache=True)
def _split_merge_idepm(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, alpha1, alpha2, gamma0,
                       n_proposals, n_scans, mutation):
    K = n_k.shape[0]
    M = z.shape[0]
    # room for every label that can be in use: K+ plus one per split, at most M
    n_labels = (min(K + n_proposals, max(M, K)) if n_proposals >= 0 else max(M, K)) + 1
    ci, cj = _customer_cells(rows, cols, offsets)
    zz = z.copy()
    Kp, stats, _, _, _ = _split_merge_core(rng, ci, cj, zz, n_labels, n_ik.shape[0], n_jk.shape[0],
                                           I, J, alpha1, alpha2, math.log(gamma0), 0.0, 0,
                                           n_proposals, n_scans, mutation, np.empty((0, 3)))
    # labels -> 0..K+-1, in increasing order of the old label
    used = np.zeros(n_labels, np.bool_)
    for s in range(M):
        used[zz[s]] = True
    new = np.full(n_labels, -1, np.int64)
    r = 0
    for k in range(n_labels):
        if used[k]:
            new[k] = r
            r += 1
    for s in range(M):
        zz[s] = new[zz[s]]
    a, b, c = seat_counts(rows, cols, offsets, zz, n_ik.shape[0], n_jk.shape[0], max(Kp, 1))
    return zz, a, b, c, Kp, stats


@njit(cache=True)
def split_merge_idepm(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, alpha1, alpha2, gamma0,
                      n_proposals=DEFAULT_N_PROPOSALS, n_scans=DEFAULT_N_SCANS):
    """``n_proposals`` split-merge Metropolis-Hastings moves of the IDEPM's seating (Theorem 4).

    Takes the seating ``(offsets, z)`` (labels 0..K+-1, all in use) with its int64 counts
    ``n_ik`` (I' x K+), ``n_jk`` (J' x K+), ``n_k`` (K+) as returned by ``idepm.idepm_sweep``, the
    dimensions I, J of X and alpha1, alpha2, gamma0 (c0 does not enter: m is fixed). Returns
    ``(z, n_ik, n_jk, n_k, K+, stats)``, new arrays with labels 0..K+-1 (a split adds the label
    K+, a merge removes one and renumbers the larger ones), and ``stats`` = [splits proposed,
    splits accepted, merges proposed, merges accepted, 0]. ``offsets`` and the inputs are
    unchanged. Each proposal leaves P(z | m, h) invariant; see the module docstring for the ratio.

    ``n_proposals``: the number of proposals; negative (the default): as many as fit in about
    the work of one Gibbs sweep (``WORK_PER_SWEEP``). ``n_scans``: 0, Dahl's sequential
    allocation is the proposal; s >= 1, it launches s - 1 restricted Gibbs scans and the
    proposal is one more scan (Jain & Neal), at about (s + 4)/4 times the cost per proposal.
    """
    return _split_merge_idepm(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, alpha1, alpha2,
                              gamma0, n_proposals, n_scans, 0)


@njit(cache=True)
def _split_merge_depm(rng, rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, alpha1, alpha2, gamma0, T,
                      n_proposals, n_scans, mutation):
    ci, cj = _customer_cells(rows, cols, offsets)
    zz = z.copy()
    a = gamma0 / T
    Kp, stats, _, _, _ = _split_merge_core(rng, ci, cj, zz, T, m_ik.shape[0], m_jk.shape[0], I, J,
                                           alpha1, alpha2, math.log(a), a, T, n_proposals, n_scans,
                                           mutation, np.empty((0, 3)))
    x, y, w = seat_counts(rows, cols, offsets, zz, m_ik.shape[0], m_jk.shape[0], T)
    return zz, x, y, w, Kp, stats


@njit(cache=True)
def split_merge_depm(rng, rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, alpha1, alpha2, gamma0, T,
                     n_proposals=DEFAULT_N_PROPOSALS, n_scans=DEFAULT_N_SCANS):
    """``n_proposals`` split-merge Metropolis-Hastings moves of the truncated DEPM's labels (Eq. 41)

    ``z`` holds labels in 0..T-1 and ``m_ik`` (I' x T), ``m_jk`` (J' x T), ``m_k`` (T) its int64
    counts; phi, psi, lambda are integrated out (Lemma 1), so the move leaves
    P(z | m, h) = P(m, z)/P(m) of Eq. (41) invariant, with a = gamma0/T. A split keeps the
    atom's label for the customers with the first anchor and gives the others a label drawn
    uniformly among the T - K+ empty ones (no split when K+ = T: ``stats[4]`` counts these); a
    merge keeps the label of the first anchor's atom. Returns ``(z, m_ik, m_jk, m_k, K+, stats)``
    (new arrays; ``stats`` as for ``split_merge_idepm``, plus the blocked splits).
    ``n_proposals`` and ``n_scans`` as for ``split_merge_idepm``.
    """
    return _split_merge_depm(rng, rows, cols, offsets, z, m_ik, m_jk, m_k, I, J, alpha1, alpha2,
                             gamma0, T, n_proposals, n_scans, 0)


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
