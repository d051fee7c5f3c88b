"""The truly infinite DEPM (Sec. 4.3, Theorem 4, Appendix E): a collapsed Gibbs sampler.

Derived step by step in ``chapters/14_idepm_sampler``. Hyperparameters travel
as ``h = [alpha1, alpha2, gamma0, c0]`` (the indices of ``depm``).

The state is the seating of customers (:class:`Seating`): each one of X, (i, j), has m_ij.
customers (the customers of entry e are ``z[offsets[e]:offsets[e+1]]``), each seated at an
atom, with the int64 counts n_ik (I' x K), n_jk (J' x K) and n_k (K). Within a sweep the z-step
and the exact m-step work on :class:`Tables`: a float64 copy of the counts with room for new
atoms, a per-atom factor (see the comment above ``atom_factor``) and the list of the active atom
ids, ``active[:n_active]`` (``pos`` maps id -> place), the order in which their weights enter
the draws; the weights depend on :class:`ZParams`. ``sample_assignments`` and
``birth_death_customers`` take and return the int64 form with its active list.

One sweep (``sweep(rng, ones, seating, I, J, h, prior, exact_m, n_moves)``, with ``common.Ones``
and ``common.Prior``; ``idepm_sweep`` takes the same arguments one by one):

1. z-step (Eq. 6, with J alpha2 in the second denominator -- the paper
   prints I alpha2): every customer is removed and reseated at an active atom
   k with weight n_k (alpha1 + n_ik)/(I alpha1 + n_k) (alpha2 + n_jk)/(J alpha2 + n_k),
   or at a new atom with weight gamma0/(I J);
2. m-step. Exact (default): one Metropolis-Hastings birth-or-death move of a
   customer at each one of X (``birth_death_customers``), which accounts for the
   atoms not in use. ``sweep`` runs steps 1 and 2 in one pass over the ones
   (``_seating_pass``): at each one, its customers are reseated, then its move is
   made, while its counts are in cache; each kernel leaves Theorem 4's posterior
   invariant, so this order is as valid as two passes. As in the paper (Eqs. (7)-(8),
   ``exact_m=False``): phi_.k ~ Dir(alpha1 + n_.k), psi_.k ~ Dir(alpha2 + n_.k),
   lambda_k ~ Gamma(n_k, c0 + 1) for the K+ active atoms, then every m_ij. is
   redrawn from ZTP(sum_k phi_ik psi_jk lambda_k) and reseated by the multinomial;
   this ignores the mass of the atoms not in use (erratum E6);
3. alpha1, alpha2 as in the DEPM (Eqs. (32)-(34));
4. gamma0 ~ Gamma(e0 + K+, f0 - ln(c0/(c0+1))) (Eq. 43);
5. c0 via lambda_k ~ Gamma(n_k, c0+1), lambda_rest ~ Gamma(gamma0, c0+1),
   c0 ~ Gamma(e0 + gamma0, f0 + lambda_rest + sum_k lambda_k) (Eqs. (44)-(46)).

The chain needs no phi, psi, lambda; predictions draw the active atoms' from their
conditional given the seating (``sample_active_parameters``).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..distributions import sample_ztp, sample_gamma, sample_dirichlet, sample_categorical
from .common import Ones, Prior, block_cdf, draw_categorical, first_block_above, seat_counts
from .depm import ALPHA1, ALPHA2, GAMMA0, C0, HYPER_NAMES, sample_concentration

__all__ = ["ALPHA1", "ALPHA2", "GAMMA0", "C0", "HYPER_NAMES", "Seating", "Tables", "ZParams", "z_params",
           "seat_counts", "atom_factor", "to_float_seating", "to_int_seating", "seat_weights", "blocked_total",
           "draw_seat",
           "sample_assignments", "birth_death_customers", "sample_active_parameters",
           "resample_customers", "sample_gamma0_idepm", "sample_c0_idepm", "sweep", "idepm_sweep", "log_joint"]




# ---------------------------------------------------------------------------------------------
# The seating as used by the z-step and the exact m-step (``Tables``)
#
# Atoms have ids (the columns of the count arrays, which are float64 holding exact integers);
# the active ids, in the order in which their weights enter the categorical draws, are
# ``active[:n_active]`` and ``pos[id]`` is the place of an id in that list (-1: free). Closing an
# atom moves the last active id into its place (a swap-remove); opening one appends the smallest
# free id. For speed each atom also carries the factor
#     g_k = c_k / ((I alpha1 + c_k)(J alpha2 + c_k)),   so that   f_k = g_k (alpha1 + c_ik)(alpha2 + c_jk)
# (Eq. 6 with J alpha2, erratum E5), updated whenever c_k changes. The weights are computed in
# the order of the active list, four atoms at a time (``_weights``, inlined into the loops), and
# a customer's atom is drawn by ``common.draw_categorical`` (the m-step's draw; the seating pass
# inlines it as ``_draw``, the same draw with its search within a block unrolled).
# ---------------------------------------------------------------------------------------------

#: the seating of the IDEPM's chain: ``offsets`` (nnz + 1) and ``z`` (M atom labels; the customers
#: of the entry e are ``z[offsets[e]:offsets[e+1]]``) with their int64 counts ``n_ik`` (I' x K),
#: ``n_jk`` (J' x K), ``n_k`` (K) (``seat_counts``; ``sweep`` returns them with K = K+)
Seating = namedtuple("Seating", ["offsets", "z", "n_ik", "n_jk", "n_k"])
#: the seating as the z-step and the exact m-step change it: the counts as float64 ``C_i``, ``C_j``,
#: ``C_k`` (room for more atoms than are active), the atom factors ``g``, the active list
#: ``active`` and ``pos`` (id -> place in it, -1: free); see ``to_float_seating``
Tables = namedtuple("Tables", ["C_i", "C_j", "C_k", "g", "active", "pos"])
#: what the z-step weights (Eq. 6) and the birth-death moves depend on: ``Ia1`` = I alpha1,
#: ``Ja2`` = J alpha2, alpha1, alpha2, ``w_new`` = gamma0/(I J) (a new atom's weight) and c0
ZParams = namedtuple("ZParams", ["Ia1", "Ja2", "alpha1", "alpha2", "w_new", "c0"])


@intrinsic
def _prefetch(typingctx, arr, i, k):
    """Ask the processor to start loading the cache line of ``arr[i, k]`` (2-d array; LLVM's
    ``llvm.prefetch``: a read, kept in every cache level). A hint only: no value changes."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], sig.args[1], types.intp),
               context.cast(builder, args[2], sig.args[2], types.intp)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx)
        i32 = llvm_ir.IntType(32)
        fnty = llvm_ir.FunctionType(llvm_ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, i, k), codegen


@njit(cache=True)
def atom_factor(c, Ia1, Ja2):
    """g = c / ((I alpha1 + c)(J alpha2 + c)): the atom part of the z-step weight (Eq. 6)."""
    return c / ((Ia1 + c) * (Ja2 + c))


@njit(cache=True)
def z_params(I, J, alpha1, alpha2, gamma0, c0):
    """:class:`ZParams` of a matrix with I rows and J columns (the count tables may hold fewer)."""
    return ZParams(I * alpha1, J * alpha2, alpha1, alpha2, gamma0 / (I * J), c0)


@njit(cache=True)
def to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, Ia1, Ja2, cap=0):
    """The seating of ``seat_counts``/``active_from_counts`` as :class:`Tables`: float64 counts plus
    atom factors, ``(C_i, C_j, C_k, g, active, pos)`` (copies, with room for at least ``cap`` atoms)."""
    cap = max(n_k.shape[0], n_active + 1, cap)
    C_i = np.zeros((n_ik.shape[0], cap))
    C_i[:, :n_k.shape[0]] = n_ik
    C_j = np.zeros((n_jk.shape[0], cap))
    C_j[:, :n_k.shape[0]] = n_jk
    C_k = np.zeros(cap)
    g = np.zeros(cap)
    act = np.zeros(cap, dtype=np.int64)
    ps = np.full(cap, -1, dtype=np.int64)
    for a in range(n_active):
        k = active[a]
        act[a] = k
        ps[k] = a
        C_k[k] = n_k[k]
        g[k] = atom_factor(C_k[k], Ia1, Ja2)
    return Tables(C_i, C_j, C_k, g, act, ps)


@njit(cache=True)
def to_int_seating(C_i, C_j, C_k, active, pos, n_active):
    """Back to int64 counts: ``(n_ik, n_jk, n_k, active, pos, n_active)`` (copies)."""
    n_ik = np.empty(C_i.shape, dtype=np.int64)
    n_ik[:, :] = C_i
    n_jk = np.empty(C_j.shape, dtype=np.int64)
    n_jk[:, :] = C_j
    n_k = np.empty(C_k.shape[0], dtype=np.int64)
    n_k[:] = C_k
    return n_ik, n_jk, n_k, active.copy(), pos.copy(), n_active


@njit(cache=True)
def _grow(tab):
    """The tables with twice the room (the new atoms' columns zero, their ids free)."""
    cap = tab.C_k.shape[0]
    new = 2 * cap
    a = np.zeros((tab.C_i.shape[0], new))
    a[:, :cap] = tab.C_i
    b = np.zeros((tab.C_j.shape[0], new))
    b[:, :cap] = tab.C_j
    c = np.zeros(new)
    c[:cap] = tab.C_k
    d = np.zeros(new)
    d[:cap] = tab.g
    e = np.zeros(new, dtype=np.int64)
    e[:cap] = tab.active
    f = np.full(new, -1, dtype=np.int64)
    f[:cap] = tab.pos
    return Tables(a, b, c, d, e, f)


@njit(cache=True, inline="always")
def _open_atom(active, pos, n_active):
    """Append the smallest free atom id to the active list (there must be room: n_active below the
    capacity). Returns the new id."""
    knew = 0
    while pos[knew] >= 0:                   # fewer than capacity ids are in use
        knew += 1
    active[n_active] = knew
    pos[knew] = n_active
    return knew


@njit(cache=True)
def _new_atom(tab, n_active):
    """Open an empty atom with the smallest free id, appended to the active list (the tables grow
    when full). Returns the tables, n_active + 1 and the new id."""
    if n_active == tab.C_k.shape[0]:
        tab = _grow(tab)
    knew = _open_atom(tab.active, tab.pos, n_active)
    return tab, n_active + 1, knew


@njit(cache=True, inline="always")
def _add_customer(i, j, k, tab, zp):
    tab.C_i[i, k] += 1.0
    tab.C_j[j, k] += 1.0
    tab.C_k[k] += 1.0
    tab.g[k] = atom_factor(tab.C_k[k], zp.Ia1, zp.Ja2)


@njit(cache=True, inline="always")
def _remove_customer(i, j, k, tab, n_active, zp):
    """Take a customer of entry (i, j) off atom k; an emptied atom is closed (swap-remove from the
    active list; its counts are all zero, so nothing moves). Returns the new n_active."""
    C_k, g, active, pos = tab.C_k, tab.g, tab.active, tab.pos
    tab.C_i[i, k] -= 1.0
    tab.C_j[j, k] -= 1.0
    C_k[k] -= 1.0
    if C_k[k] > 0.0:
        g[k] = atom_factor(C_k[k], zp.Ia1, zp.Ja2)
        return n_active
    g[k] = 0.0
    p = pos[k]
    last = active[n_active - 1]
    active[p] = last
    pos[last] = p
    pos[k] = -1
    return n_active - 1


@njit(cache=True, inline="always")
def _weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, P, own, g_own):
    """The z-step weights of Eq. (6) for a customer of entry (i, j) (counts without it), and their
    block sums for ``common.draw_categorical``.

    ``w[a] = g_k (alpha1 + c_ik)(alpha2 + c_jk)`` for the atom ``k = active[a]``, in the order of
    the active list, and ``w[n_active] = w_new`` (= gamma0/(I J)); ``P`` the block sums of
    ``common.block_cdf`` over w[:n_active + 1], made in the same loop. If ``own >= 0``, the counts
    still include the customer, who sits at atom ``own``: its weight uses the counts minus one and
    ``g_own`` = g of c_own - 1 (the arrays are changed for the loop and restored). Returns the sum
    of the weights (``block_cdf``'s total).
    """
    ci = C_i[i]
    cj = C_j[j]
    ci_own = cj_own = g_keep = 0.0
    if own >= 0:
        ci_own = ci[own]
        cj_own = cj[own]
        g_keep = g[own]
        ci[own] = ci_own - 1.0
        cj[own] = cj_own - 1.0
        g[own] = g_own
    total = 0.0
    P[0] = 0.0
    b = 0
    # the ids are read as unsigned (np.uintp): numba then indexes with them without a test for
    # negative indices (same loads, same values)
    while b + 4 <= n_active:
        k0 = np.uintp(active[b])
        k1 = np.uintp(active[b + 1])
        k2 = np.uintp(active[b + 2])
        k3 = np.uintp(active[b + 3])
        x0 = g[k0] * (alpha1 + ci[k0]) * (alpha2 + cj[k0])
        x1 = g[k1] * (alpha1 + ci[k1]) * (alpha2 + cj[k1])
        x2 = g[k2] * (alpha1 + ci[k2]) * (alpha2 + cj[k2])
        x3 = g[k3] * (alpha1 + ci[k3]) * (alpha2 + cj[k3])
        w[b] = x0
        w[b + 1] = x1
        w[b + 2] = x2
        w[b + 3] = x3
        total += (x0 + x1) + (x2 + x3)
        b += 4
        P[b // 4] = total
    for a in range(b, n_active):
        k = np.uintp(active[a])
        w[a] = g[k] * (alpha1 + ci[k]) * (alpha2 + cj[k])
    w[n_active] = w_new
    if n_active + 1 - b == 4:
        total += (w[b] + w[b + 1]) + (w[b + 2] + w[b + 3])
        P[b // 4 + 1] = total
    else:
        for a in range(b, n_active + 1):
            total += w[a]
    if own >= 0:
        ci[own] = ci_own
        cj[own] = cj_own
        g[own] = g_keep
    return total


@njit(cache=True)
def seat_weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, own=-1, g_own=0.0):
    """The z-step weights of Eq. (6) for a customer of entry (i, j) into ``w`` (see ``_weights``, the
    form the sweep inlines); returns their sum, taken in blocks of four (fixed order)."""
    P = np.empty((n_active + 1) // 4 + 1)
    return _weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, P, own, g_own)


@njit(cache=True)
def blocked_total(w, n):
    """Sum of w[:n] in blocks of four (the order of ``seat_weights`` and ``common.block_cdf``)."""
    return block_cdf(w, n, np.empty(n // 4 + 1))


@njit(cache=True, inline="always")
def _draw(rng, w, n, P, total):
    """``common.draw_categorical(rng, w, n, P, total)`` (the same uniform, the same index), with the
    search within the block unrolled: its four running sums P[g] + w[4g] + ... are made in the same
    order, and those past n (in a last, partial block) are made but not counted, so ``w`` needs room
    for n + 3 values. The loop of the general form ran four times or n - 4G times depending on the
    block drawn, a jump that the processor often mispredicted."""
    if total > 0.0:
        u = rng.random() * total
        lo = first_block_above(P, n // 4, u)
        k0 = 4 * lo
        m = min(4, n - k0)      # the weights in that block
        a0 = P[lo] + w[k0]
        a1 = a0 + w[k0 + 1]
        a2 = a1 + w[k0 + 2]
        a3 = a2 + w[k0 + 3]
        c = ((a0 <= u) & (m > 0)) + ((a1 <= u) & (m > 1)) + ((a2 <= u) & (m > 2)) + ((a3 <= u) & (m > 3))
        if c < m:
            return k0 + c
        for k in range(k0 + m - 1, -1, -1):     # rounding: the last positive weight
            if w[k] > 0.0:
                return k
        return k0 + m - 1
    return int(rng.random() * n)


@njit(cache=True)
def draw_seat(rng, w, n, total):
    """Index a < n drawn with probability w[a] / total (``total`` from :func:`seat_weights`):
    ``common.draw_categorical`` through the block sums of w[:n]."""
    P = np.empty(n // 4 + 1)
    block_cdf(w, n, P)
    return draw_categorical(rng, w, n, P, total)


@njit(cache=True)
def _zero_padded(x, n):
    out = np.zeros(n)
    out[:x.shape[0]] = x
    return out


@njit(cache=True)
def _seating_pass(rng, ones, offsets, z, tab, n_active, zp, reseat, n_moves):
    """One pass over the entries ``ones`` (``common.Ones``) in CSR order. At each one (i, j): if
    ``reseat``, the z-step (Eq. 6, J alpha2) reseats each of its customers in turn; then ``n_moves``
    birth-or-death moves of the exact m-step (see ``birth_death_customers``) change its number of
    customers. Each is a kernel that leaves Theorem 4's posterior invariant, so any fixed order of
    them does too; ``sweep`` runs both at each one while its counts are in cache (one pass, not two).

    ``offsets``, ``z``: the seating (atom ids); ``tab``: its :class:`Tables` with ``n_active``
    active atoms (changed in place, or replaced when they grow); ``zp``: :class:`ZParams`.
    Returns ``(offsets, z, tab, n_active)`` with new ``offsets``/``z``.

    Missing entries (``fit(mask=...)``): the entries ``e >= ones.n_ones`` are unobserved; their
    count follows the Poisson of Eq. (1) without the truncation at 1 that x_ij = 1 imposes, so a
    death may remove their last customer (and a birth start from none).
    """
    C_i, C_j, C_k, g, active, pos = tab
    Ia1, Ja2 = zp.Ia1, zp.Ja2
    # While a customer is out for reseating, g_k stays the factor of the full count; the weight of
    # the customer's own atom uses gm_k = factor(c_k - 1) instead. Both change only when the
    # customer moves, so most reseatings need no division on their critical path.
    gm = np.zeros(C_k.shape[0])
    for a in range(n_active):
        k = active[a]
        gm[k] = atom_factor(C_k[k] - 1.0, Ia1, Ja2)
    w = np.empty(C_k.shape[0] + 4)         # weights (room for _draw's reads past them)
    P = np.empty(C_k.shape[0] // 4 + 2)     # block sums of w (common.block_cdf)
    nnz = ones.rows.shape[0]
    new_off = np.empty(nnz + 1, dtype=np.int64)
    new_z = np.empty(z.shape[0] + nnz * n_moves + 16, dtype=np.int64)
    new_off[0] = 0
    at = np.zeros(_AT_SIZE, dtype=np.int64)  # where _seat_ones stopped (see there)
    at[_AT_S] = offsets[0]
    at[_AT_K] = -1
    at[_AT_N] = n_active
    while not _seat_ones(rng, ones, offsets, z, new_off, new_z, C_i, C_j, C_k, g, active, pos, gm, w, P,
                         zp, reseat, n_moves, at):
        # the tables are full and the next step may open an atom: twice the room (w is kept: a
        # birth reuses the weights of its one's last reseating)
        C_i, C_j, C_k, g, active, pos = _grow(Tables(C_i, C_j, C_k, g, active, pos))
        gm = _zero_padded(gm, C_k.shape[0])
        w = _zero_padded(w, C_k.shape[0] + 4)
        P = np.empty(C_k.shape[0] // 4 + 2)
    M = at[_AT_M]
    return new_off, new_z[:M].copy(), Tables(C_i, C_j, C_k, g, active, pos), at[_AT_N]


#: the places in ``_seat_ones``' position array ``at``: the entry, the next customer (index into z),
#: the next move, the number of customers written, the first of the entry's, the atom of the
#: entry's last reseated customer (-1: none yet) and the number of active atoms
_AT_E, _AT_S, _AT_MOVE, _AT_M, _AT_START, _AT_K, _AT_N, _AT_SIZE = 0, 1, 2, 3, 4, 5, 6, 7


@njit(cache=True, _nrt=False)
def _seat_ones(rng, ones, offsets, z, new_off, new_z, C_i, C_j, C_k, g, active, pos, gm, w, P, zp, reseat,
               n_moves, at):
    """The loop of ``_seating_pass``, from the place ``at`` (see ``_AT_E``...) to the end of the ones,
    on arrays that it never replaces: it stops, returning False with ``at`` saying where, before a
    reseating or a move when the tables are full (the step might open an atom); ``_seating_pass``
    then grows them and calls it again. Returns True at the end (``at`` holds M and n_active).

    Compiled without numba's reference counting (``_nrt=False``: it allocates nothing): with it, the
    arrays passed to the inlined helpers were counted at every customer."""
    rows, cols, n_ones = ones.rows, ones.cols, ones.n_ones
    Ia1, Ja2, alpha1, alpha2, w_new, c0 = zp
    cap = C_k.shape[0]
    nnz = rows.shape[0]
    e, s0, move0, M, start, k, n_active = (at[_AT_E], at[_AT_S], at[_AT_MOVE], at[_AT_M], at[_AT_START],
                                          at[_AT_K], at[_AT_N])
    while e < nnz:
        i = rows[e]
        j = cols[e]
        if e + 1 < nnz:
            # the next one's column counts, a row at random (often not in cache): the lines of its
            # first 16 atom ids (the active ids after each sweep's relabel)
            jn = cols[e + 1]
            _prefetch(C_j, jn, 0)
            _prefetch(C_j, jn, min(8, cap - 1))
            _prefetch(C_j, jn, min(15, cap - 1))
        if s0 == offsets[e] and move0 == 0:
            start = M
        for s in range(s0, offsets[e + 1]):
            if reseat and n_active == cap:
                at[_AT_E], at[_AT_S], at[_AT_MOVE], at[_AT_M], at[_AT_START], at[_AT_K], at[_AT_N] = (
                    e, s, 0, M, start, k, n_active)
                return False
            kold = z[s]
            new_z[M] = kold
            M += 1
            if not reseat:
                continue
            closed = C_k[kold] == 1.0
            if closed:                          # its only customer: close the atom (swap-remove)
                n_active = _remove_customer(i, j, kold, Tables(C_i, C_j, C_k, g, active, pos), n_active, zp)
                gm[kold] = 0.0
                total = _weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, P, -1, 0.0)
            else:                               # counts still include the customer; see _weights
                total = _weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, P, kold,
                                 gm[kold])
            a = _draw(rng, w, n_active + 1, P, total)
            if a == n_active:                   # open a new atom (there is room)
                k = _open_atom(active, pos, n_active)
                n_active += 1
            else:
                k = active[a]
            if k == kold and not closed:        # stays: nothing changes
                continue
            new_z[M - 1] = k
            if not closed:
                C_i[i, kold] -= 1.0
                C_j[j, kold] -= 1.0
                C_k[kold] -= 1.0
                g[kold] = gm[kold]
                gm[kold] = atom_factor(C_k[kold] - 1.0, Ia1, Ja2)
            C_i[i, k] += 1.0
            C_j[j, k] += 1.0
            C_k[k] += 1.0
            gm[k] = g[k]
            g[k] = atom_factor(C_k[k], Ia1, Ja2)
        s0 = offsets[e + 1]
        for move in range(move0, n_moves):
            if n_active == cap:
                at[_AT_E], at[_AT_S], at[_AT_MOVE], at[_AT_M], at[_AT_START], at[_AT_K], at[_AT_N] = (
                    e, s0, move, M, start, k, n_active)
                return False
            n = M - start
            u = rng.random()
            if u < 0.5:                                             # birth
                if reseat and move == 0 and offsets[e + 1] > offsets[e]:
                    # w still holds the weights of the last reseating, which differ from the
                    # birth weights only at that customer's atom k (counts without -> with it)
                    p = pos[k]
                    w[p] = g[k] * (alpha1 + C_i[i, k]) * (alpha2 + C_j[j, k])
                    w[n_active] = w_new
                    F = block_cdf(w, n_active + 1, P)
                else:
                    F = _weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, P, -1, 0.0)
                if (u + u) * (c0 + 1.0) * (n + 1) < F:             # 2u ~ U(0, 1) given u < 1/2
                    a = _draw(rng, w, n_active + 1, P, F)
                    if a == n_active:
                        k = _open_atom(active, pos, n_active)
                        n_active += 1
                    else:
                        k = active[a]
                    gm[k] = g[k]
                    _add_customer(i, j, k, Tables(C_i, C_j, C_k, g, active, pos), zp)
                    new_z[M] = k
                    M += 1
            elif n >= 2 or (n == 1 and e >= n_ones):                # death (a one keeps one)
                s = start + int((u + u - 1.0) * n)                  # 2u - 1 ~ U(0, 1) given u >= 1/2
                kd = new_z[s]
                n_minus = _remove_customer(i, j, kd, Tables(C_i, C_j, C_k, g, active, pos), n_active, zp)
                Fm = _weights(i, j, C_i, C_j, g, active, n_minus, alpha1, alpha2, w_new, w, P, -1, 0.0)
                if rng.random() * Fm < (c0 + 1.0) * n:
                    new_z[s] = new_z[M - 1]
                    M -= 1
                    n_active = n_minus
                    gm[kd] = atom_factor(C_k[kd] - 1.0, Ia1, Ja2) if C_k[kd] > 0.0 else 0.0
                else:                                               # restore the customer
                    if n_minus < n_active:                          # its atom was closed: reopen it last
                        active[n_minus] = kd
                        pos[kd] = n_minus
                    _add_customer(i, j, kd, Tables(C_i, C_j, C_k, g, active, pos), zp)
        new_off[e + 1] = M
        move0 = 0
        e += 1
    at[_AT_E], at[_AT_S], at[_AT_MOVE], at[_AT_M], at[_AT_START], at[_AT_K], at[_AT_N] = (
        e, s0, 0, M, start, k, n_active)
    return True


@njit(cache=True)
def _int_seating_pass(rng, ones, seat, active, pos, n_active, hyper, reseat, n_moves):
    """``_seating_pass`` (``reseat``, ``n_moves``) on the int64 seating ``seat`` (:class:`Seating`) of
    ``seat_counts`` / ``active_from_counts``, through its float form (``to_float_seating``, with the
    count tables' I x J as the matrix; then ``to_int_seating``). ``hyper``: (alpha1, alpha2, gamma0,
    c0). Returns the new :class:`Seating` and ``(active, pos, n_active)``, new arrays."""
    alpha1, alpha2, gamma0, c0 = hyper
    zp = z_params(seat.n_ik.shape[0], seat.n_jk.shape[0], alpha1, alpha2, gamma0, c0)
    tab = to_float_seating(seat.n_ik, seat.n_jk, seat.n_k, active, pos, n_active, zp.Ia1, zp.Ja2)
    off, new_z, tab, n_active = _seating_pass(rng, ones, seat.offsets, seat.z, tab, n_active, zp, reseat,
                                              n_moves)
    n_ik, n_jk, n_k, act, ps, n_active = to_int_seating(tab.C_i, tab.C_j, tab.C_k, tab.active, tab.pos,
                                                        n_active)
    return Seating(off, new_z, n_ik, n_jk, n_k), act, ps, n_active


@njit(cache=True)
def sample_assignments(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
                       alpha1, alpha2, gamma0):
    """The z-step, Eq. (6) (corrected: J alpha2, not I alpha2): reseat every customer once.

    Takes and returns the seating of ``seat_counts``/``active_from_counts``
    ``(n_ik, n_jk, n_k, active, pos, n_active)`` (``z`` is updated in place; the arrays
    returned are new). ``sweep`` runs the same kernel on the float form directly.
    """
    seat, act, ps, n_active = _int_seating_pass(
        rng, Ones(rows, cols, rows.shape[0]), Seating(offsets, z, n_ik, n_jk, n_k), active, pos, n_active,
        (alpha1, alpha2, gamma0, 0.0), True, 0)
    z[:] = seat.z
    return seat.n_ik, seat.n_jk, seat.n_k, act, ps, n_active


#: atoms per block of ``sample_active_parameters`` (one 64-byte cache line of a row of counts)
_ATOM_BLOCK = 8


@njit(cache=True)
def sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active, alpha1, alpha2, c0, I=0, J=0):
    """phi, psi, lambda of the K+ active atoms given the seating (Sec. 4.3, 'Sampling m'):
    phi_.k ~ Dir(alpha1 + n_.k), psi_.k ~ Dir(alpha2 + n_.k), lambda_k ~ Gamma(n_k, c0 + 1)
    (Eqs. (7)-(8)), drawn atom by atom in that order.

    Returns phi (I' x K+), psi (J' x K+), lam (K+) in the order of ``active[:n_active]``, for the
    I' = ``n_ik.shape[0]`` rows and J' columns of the count tables. When the tables hold only some
    of the matrix's ``I`` rows (``I`` > I'; the others carry no customers), each column
    phi_.k ~ Dir(alpha1 + n_.k) over all I rows is drawn exactly through I' + 1 components: the
    I' rows and the rest, whose total concentration is (I - I') alpha1 (aggregation property of
    the Dirichlet); the rest's component is dropped. Same for psi. ``I = 0`` (default): I = I'.
    The counts are read, and phi, psi written, by rows, ``_ATOM_BLOCK`` atoms at a time (through
    small transposed buffers), not down one column per atom.
    """
    Ic = n_ik.shape[0]
    Jc = n_jk.shape[0]
    rest_i = max(I - Ic, 0) * alpha1
    rest_j = max(J - Jc, 0) * alpha2
    ni = Ic + 1 if rest_i > 0.0 else Ic
    nj = Jc + 1 if rest_j > 0.0 else Jc
    K = n_active
    B = _ATOM_BLOCK
    phi = np.empty((Ic, K))
    psi = np.empty((Jc, K))
    lam = np.empty(K)
    ci = np.empty((B, ni))              # the concentrations of a block of atoms, one row per atom
    cj = np.empty((B, nj))
    col_i = np.empty((B, ni))
    col_j = np.empty((B, nj))
    for a0 in range(0, K, B):
        kb = min(B, K - a0)
        for i in range(Ic):
            for b in range(kb):
                ci[b, i] = alpha1 + n_ik[i, active[a0 + b]]
        for j in range(Jc):
            for b in range(kb):
                cj[b, j] = alpha2 + n_jk[j, active[a0 + b]]
        for b in range(kb):
            if ni > Ic:
                ci[b, Ic] = rest_i
            if nj > Jc:
                cj[b, Jc] = rest_j
            sample_dirichlet(rng, ci[b], col_i[b])
            sample_dirichlet(rng, cj[b], col_j[b])
            lam[a0 + b] = sample_gamma(rng, float(n_k[active[a0 + b]]), c0 + 1.0)
        for i in range(Ic):
            for b in range(kb):
                phi[i, a0 + b] = col_i[b, i]
        for j in range(Jc):
            for b in range(kb):
                psi[j, a0 + b] = col_j[b, j]
    return phi, psi, lam


@njit(cache=True)
def resample_customers(rng, rows, cols, phi, psi, lam):
    """Eqs. (7)-(8): m_ij. ~ ZTP(sum_k phi_ik psi_jk lambda_k) over the K+ active atoms,
    seated by the multinomial (``distributions.sample_categorical``, the cdf summed atom by atom).
    Returns (offsets, z) with atom labels 0..K+-1."""
    nnz = rows.shape[0]
    K = lam.shape[0]
    offsets = np.empty(nnz + 1, dtype=np.int64)
    cap = 2 * nnz + 16
    z = np.empty(cap, dtype=np.int64)
    w = np.empty(K)
    M = 0
    offsets[0] = 0
    for e in range(nnz):
        i = rows[e]
        j = cols[e]
        s = 0.0
        for k in range(K):
            w[k] = phi[i, k] * psi[j, k] * lam[k]
            s += w[k]
        n = sample_ztp(rng, s)
        if M + n > cap:
            while M + n > cap:
                cap *= 2
            znew = np.empty(cap, dtype=np.int64)
            znew[:M] = z[:M]
            z = znew
        for _ in range(n):
            z[M] = sample_categorical(rng, w, s) if s > 0.0 else int(rng.random() * K)
            M += 1
        offsets[e + 1] = M
    return offsets, z[:M].copy()


@njit(cache=True)
def sample_gamma0_idepm(rng, n_active, c0, e0, f0):
    """gamma0 ~ Gamma(e0 + K+, f0 - ln(c0/(c0+1))) (Eq. 43), lambda collapsed."""
    return sample_gamma(rng, e0 + n_active, f0 + math.log1p(1.0 / c0))


@njit(cache=True)
def sample_c0_idepm(rng, n_k, active, n_active, gamma0, c0, e0, f0):
    """c0 by Eqs. (44)-(46): draw the active lambda_k and the unused mass, then c0 | lambda."""
    tot = sample_gamma(rng, gamma0, c0 + 1.0)
    for a in range(n_active):
        tot += sample_gamma(rng, float(n_k[active[a]]), c0 + 1.0)
    return sample_gamma(rng, e0 + gamma0, f0 + tot)


@njit(cache=True)
def active_from_counts(n_k):
    Kcap = n_k.shape[0]
    active = np.zeros(Kcap, dtype=np.int64)
    pos = np.full(Kcap, -1, dtype=np.int64)
    n_active = 0
    for k in range(Kcap):
        if n_k[k] > 0:
            active[n_active] = k
            pos[k] = n_active
            n_active += 1
    return active, pos, n_active


@njit(cache=True)
def birth_death_customers(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
                          alpha1, alpha2, gamma0, c0, n_moves):
    """The exact m-step of the collapsed sampler: Metropolis-Hastings moves on each m_ij. (x_ij = 1).

    With the customers' atoms unlabelled, Theorem 4 gives the target
    pi(m) ∝ prod_ijk 1/m_ijk! x (the atom factors of Eq. 5). A *birth* adds a
    customer to entry (i, j), seated at atom k with probability f_k / F
    (f_k the z-step weights of Eq. 6, f_new = gamma0/(I J), F their sum); a
    *death* removes a customer chosen uniformly (never the last one, since
    x_ij = 1 needs m_ij. >= 1). Each is proposed with probability 1/2, and the
    acceptance probabilities reduce to
        birth: min(1, F / ((c0 + 1)(m_ij. + 1))),
        death: min(1, (c0 + 1) m_ij. / F'),   F' computed without the removed customer,
    independent of the atom. Unlike the paper's m-step (Eqs. (7)-(8)) this
    accounts for the atoms not yet in use. ``n_moves`` moves per entry.
    Takes the id-indexed seating; returns (offsets, z, n_ik, n_jk, n_k, active, pos, n_active).
    """
    seat, act, ps, n_active = _int_seating_pass(
        rng, Ones(rows, cols, rows.shape[0]), Seating(offsets, z, n_ik, n_jk, n_k), active, pos, n_active,
        (alpha1, alpha2, gamma0, c0), False, n_moves)
    return seat.offsets, seat.z, seat.n_ik, seat.n_jk, seat.n_k, act, ps, n_active


@njit(cache=True)
def _gather_counts(tab, n_active):
    """int64 counts of the active atoms, in active-list order (column a = atom ``active[a]``)."""
    C_i, C_j, C_k, active = tab.C_i, tab.C_j, tab.C_k, tab.active
    K = max(n_active, 1)
    n_ik = np.zeros((C_i.shape[0], K), dtype=np.int64)
    n_jk = np.zeros((C_j.shape[0], K), dtype=np.int64)
    n_k = np.zeros(K, dtype=np.int64)
    for a in range(n_active):
        k = active[a]
        n_k[a] = C_k[k]
    for i in range(C_i.shape[0]):
        for a in range(n_active):
            n_ik[i, a] = C_i[i, active[a]]
    for j in range(C_j.shape[0]):
        for a in range(n_active):
            n_jk[j, a] = C_j[j, active[a]]
    return n_ik, n_jk, n_k


@njit(cache=True)
def _relabel(z, active, n_active, Kcap):
    """Map atom ids to 0..K+-1 in the order of the active list."""
    mp = np.full(Kcap, -1, dtype=np.int64)
    for a in range(n_active):
        mp[active[a]] = a
    out = np.empty_like(z)
    for s in range(z.shape[0]):
        out[s] = mp[z[s]]
    return out


@njit(cache=True)
def sweep(rng, ones, seat, I, J, h, prior, exact_m, n_moves):
    """One sweep of the IDEPM's collapsed Gibbs sampler (steps 1-5 of the module docstring).

    ``ones``: the entries (``common.Ones``); ``seat``: the :class:`Seating` (atom labels in ``z``
    below ``n_k.shape[0]``). ``I`` and ``J`` are the matrix's dimensions, which enter the weights
    (Eq. 6) and the concentration updates; the count tables may hold only the I' <= I rows and
    J' <= J columns that carry ones (``ones`` indexes those), since a row without customers
    contributes a factor 1 to Eq. (5): memory O(M + (I' + J') K+). ``h`` (alpha1, alpha2, gamma0,
    c0) is updated in place; ``prior``: ``common.Prior`` (e0, f0).

    Returns ``(seating, K+)``: the new :class:`Seating`, its atoms relabelled 0..K+-1 in the order
    of the active list (count tables K+ wide).

    ``exact_m=True``: z-step and exact m-step in one pass over the ones (``_seating_pass``: at each
    one, its customers are reseated by Eq. (6), then ``n_moves`` birth-or-death moves, see
    ``birth_death_customers``); the missing entries ``e >= ones.n_ones`` may then lose their last
    customer. ``exact_m=False``: the z-step, then the paper's m-step (Eqs. (7)-(8)). Then alpha1,
    alpha2 (Eqs. (32)-(34)), gamma0 (Eq. 43), c0 (Eqs. (44)-(46)).

    The collapsed chain needs no phi, psi, lambda; for predictions, draw the active atoms'
    parameters from their conditional given the returned seating with
    ``sample_active_parameters(rng, n_ik, n_jk, n_k, np.arange(K), K, alpha1, alpha2, c0, I, J)``.
    """
    rows, cols = ones.rows, ones.cols
    offsets, z, n_ik, n_jk, n_k = seat
    e0, f0 = prior.e0, prior.f0
    active, pos, n_active = active_from_counts(n_k)
    zp = ZParams(I * h[ALPHA1], J * h[ALPHA2], h[ALPHA1], h[ALPHA2], h[GAMMA0] / (I * J), h[C0])
    tab = to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, zp.Ia1, zp.Ja2, n_active + 16)
    if exact_m:                          # 1-2: z-step and birth-death moves in one pass over the ones
        offsets, z, tab, n_active = _seating_pass(rng, ones, offsets, z, tab, n_active, zp, True, n_moves)
        for s in range(z.shape[0]):          # atom ids -> places 0..K+-1 in the active list
            z[s] = tab.pos[z[s]]
        n_ik, n_jk, n_k = _gather_counts(tab, n_active)
    else:                                # 1: z-step; 2: the paper's m-step, Eqs. (7)-(8)
        offsets, z, tab, n_active = _seating_pass(rng, ones, offsets, z, tab, n_active, zp, True, 0)
        n_ik, n_jk, n_k, active, pos, n_active = to_int_seating(tab.C_i, tab.C_j, tab.C_k, tab.active,
                                                                tab.pos, n_active)
        phi, psi, lam = sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active,
                                                 h[ALPHA1], h[ALPHA2], h[C0], I, J)
        offsets, z = resample_customers(rng, rows, cols, phi, psi, lam)
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, n_ik.shape[0], n_jk.shape[0],
                                      max(lam.shape[0], 1))
    active, pos, n_active = active_from_counts(n_k)
    if n_active < n_k.shape[0]:          # atoms emptied by the m-step: relabel to 0..K+-1
        z = _relabel(z, active, n_active, n_k.shape[0])
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, n_ik.shape[0], n_jk.shape[0], max(n_active, 1))
        active, pos, n_active = active_from_counts(n_k)
    h[ALPHA1] = sample_concentration(rng, n_ik, n_k, h[ALPHA1], I, e0, f0)     # 3: Eqs. (32)-(34)
    h[ALPHA2] = sample_concentration(rng, n_jk, n_k, h[ALPHA2], J, e0, f0)
    h[GAMMA0] = sample_gamma0_idepm(rng, n_active, h[C0], e0, f0)              # 4: Eq. (43)
    h[C0] = sample_c0_idepm(rng, n_k, active, n_active, h[GAMMA0], h[C0], e0, f0)  # 5: Eqs. (44)-(46)
    return Seating(offsets, z, n_ik, n_jk, n_k), n_active


@njit(cache=True)
def idepm_sweep(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, h, e0, f0, exact_m=True, n_moves=1,
                n_ones=-1):
    """:func:`sweep` with its arguments one by one, as the chapters call it: the entries (``rows``,
    ``cols``; ``n_ones`` = -1, the default: all are ones), the seating and its counts, I, J, h and
    the hyperprior (e0, f0). Returns ``(offsets, z, n_ik, n_jk, n_k, K+)``."""
    seat, K = sweep(rng, Ones(rows, cols, n_ones if n_ones >= 0 else rows.shape[0]),
                    Seating(offsets, z, n_ik, n_jk, n_k), I, J, h, Prior(e0, f0), exact_m, n_moves)
    return seat.offsets, seat.z, seat.n_ik, seat.n_jk, seat.n_k, K


#: counts below this have their lgamma terms looked up in ``log_joint`` (tables built per call)
_LGAMMA_TABLE = 256


@njit(cache=True)
def log_joint(offsets, z, n_ik, n_jk, n_k, K, I, J, h, e0, f0):
    """ln P(m, [z] | h) + ln p(h) at a seating: the log of the collapsed chain's target.

    P(m, [z] | h) is Theorem 4 (Eq. 5, Appendix D; ``theory.log_partition_likelihood`` with
    T = inf): the customers of an entry distinguishable, the K = K+ atoms unlabelled,

        prod_ij 1/m_ij.!  x gamma0^K (c0/(c0+1))^gamma0  x prod_k G(n_k) (c0+1)^(-n_k)
        x prod_k G(I a1)/G(I a1 + n_k) prod_i G(a1 + n_ik)/G(a1)   (the same with J, a2, n_jk),

    and p(h) the Gamma(e0, f0) hyperprior of alpha1, alpha2, gamma0 and c0 (Sec. 5). ``n_ik``,
    ``n_jk``, ``n_k`` are the counts of atoms 0..K-1 (``idepm_sweep`` returns them so); rows and
    columns without customers contribute 0. Cost O(M + (I' + J') K); the lgamma of the small counts
    (below ``_LGAMMA_TABLE``) are looked up in tables made once per call, the same values added in
    the same order as one lgamma per count.
    """
    a1, a2, g0, c0 = h[ALPHA1], h[ALPHA2], h[GAMMA0], h[C0]
    L = _LGAMMA_TABLE
    lg_m1 = np.empty(L)                 # lgamma(m + 1), lgamma(a1 + m), lgamma(a2 + m) for m < L
    lg_a1m = np.empty(L)
    lg_a2m = np.empty(L)
    for m in range(L):
        lg_m1[m] = math.lgamma(m + 1.0)
        lg_a1m[m] = math.lgamma(a1 + m)
        lg_a2m[m] = math.lgamma(a2 + m)
    out = 0.0
    M = 0
    for e in range(offsets.shape[0] - 1):
        m = offsets[e + 1] - offsets[e]
        M += m
        out -= lg_m1[m] if m < L else math.lgamma(m + 1.0)
    lg_a1 = math.lgamma(a1)
    lg_a2 = math.lgamma(a2)
    lg_Ia1 = math.lgamma(I * a1)
    lg_Ja2 = math.lgamma(J * a2)
    for k in range(K):
        n = float(n_k[k])
        out += lg_Ia1 - math.lgamma(I * a1 + n) + lg_Ja2 - math.lgamma(J * a2 + n) + math.lgamma(n)
    for i in range(n_ik.shape[0]):
        for k in range(K):
            v = n_ik[i, k]
            if v > 0:
                out += (lg_a1m[v] if v < L else math.lgamma(a1 + v)) - lg_a1
    for j in range(n_jk.shape[0]):
        for k in range(K):
            v = n_jk[j, k]
            if v > 0:
                out += (lg_a2m[v] if v < L else math.lgamma(a2 + v)) - lg_a2
    log1p_c0 = math.log1p(c0)
    out += K * math.log(g0) + g0 * (math.log(c0) - log1p_c0) - M * log1p_c0
    for v in (a1, a2, g0, c0):
        out += e0 * math.log(f0) - math.lgamma(e0) + (e0 - 1.0) * math.log(v) - f0 * v
    return out


#: the former name of ``active_from_counts``
_active_from_counts = active_from_counts
