"""The truly infinite DEPM (Sec. 4.3, Theorem 4, Appendix E): a collapsed Gibbs sampler.

Derived step by step in ``chapters/14_idepm_sampler``. Hyperparameters travel
as ``h = [alpha1, alpha2, gamma0, c0]`` (the indices of ``depm``).

The state is the seating of customers: each one of X, (i, j), has m_ij.
customers (``m_e``; the customers of entry e are ``z[offsets[e]:offsets[e+1]]``),
each seated at an atom. Atom ids index the count arrays n_ik (I x Kcap),
n_jk (J x Kcap) and n_k (Kcap); an atom is active while n_k > 0, and the
active ids are kept in ``active[:n_active]`` (``pos`` maps id -> place), the
order in which their weights enter the draws. The z-step and the exact m-step
work on a float64 copy of the counts plus a per-atom factor (``to_float_seating``,
see the comment above ``atom_factor``); ``sample_assignments`` and
``birth_death_customers`` take and return the int64 form.

One sweep (``idepm_sweep``):

1. z-step (Eq. 6, with J alpha2 in the second denominator -- the paper
   prints I alpha2): every customer is removed and reseated at an active atom
   k with weight n_k (alpha1 + n_ik)/(I alpha1 + n_k) (alpha2 + n_jk)/(J alpha2 + n_k),
   or at a new atom with weight gamma0/(I J);
2. m-step. Exact (default): one Metropolis-Hastings birth-or-death move of a
   customer at each one of X (``birth_death_customers``), which accounts for the
   atoms not in use. ``idepm_sweep`` runs steps 1 and 2 in one pass over the ones
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

import numpy as np
from numba import njit

from ..distributions import sample_ztp, sample_gamma, sample_dirichlet
from .common import seat_counts
from .depm import ALPHA1, ALPHA2, GAMMA0, C0, HYPER_NAMES, sample_concentration

__all__ = ["ALPHA1", "ALPHA2", "GAMMA0", "C0", "HYPER_NAMES",
           "seat_counts", "atom_factor", "to_float_seating", "to_int_seating", "seat_weights", "blocked_total",
           "draw_seat",
           "sample_assignments", "birth_death_customers", "sample_active_parameters",
           "resample_customers", "sample_gamma0_idepm", "sample_c0_idepm", "idepm_sweep", "log_joint"]




# ---------------------------------------------------------------------------------------------
# The seating as used by the z-step and the exact m-step
#
# Atoms have ids (the columns of the count arrays, which are float64 holding exact integers);
# the active ids, in the order in which their weights enter the categorical draws, are
# ``active[:n_active]`` and ``pos[id]`` is the place of an id in that list (-1: free). Closing an
# atom moves the last active id into its place (a swap-remove); opening one appends the smallest
# free id. For speed each atom also carries the factor
#     g_k = c_k / ((I alpha1 + c_k)(J alpha2 + c_k)),   so that   f_k = g_k (alpha1 + c_ik)(alpha2 + c_jk)
# (Eq. 6 with J alpha2, erratum E5), updated whenever c_k changes. The weights are computed in
# the order of the active list, four atoms at a time (``seat_weights``, inlined into the loops).
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def atom_factor(c, Ia1, Ja2):
    """g = c / ((I alpha1 + c)(J alpha2 + c)): the atom part of the z-step weight (Eq. 6)."""
    return c / ((Ia1 + c) * (Ja2 + c))


@njit(cache=True)
def to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, Ia1, Ja2, cap=0):
    """The seating of ``seat_counts``/``active_from_counts`` as float64 counts plus atom factors:
    ``(C_i, C_j, C_k, g, active, pos)`` (copies, with room for at least ``cap`` atoms)."""
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
    return C_i, C_j, C_k, g, act, ps


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
def _grow(C_i, C_j, C_k, g, active, pos):
    cap = C_k.shape[0]
    new = 2 * cap
    a = np.zeros((C_i.shape[0], new))
    a[:, :cap] = C_i
    b = np.zeros((C_j.shape[0], new))
    b[:, :cap] = C_j
    c = np.zeros(new)
    c[:cap] = C_k
    d = np.zeros(new)
    d[:cap] = g
    e = np.zeros(new, dtype=np.int64)
    e[:cap] = active
    f = np.full(new, -1, dtype=np.int64)
    f[:cap] = pos
    return a, b, c, d, e, f


@njit(cache=True)
def _new_atom(C_i, C_j, C_k, g, active, pos, n_active):
    """Open an empty atom with the smallest free id, appended to the active list (the arrays grow
    when full). Returns the arrays, n_active + 1 and the new id."""
    if n_active == C_k.shape[0]:
        C_i, C_j, C_k, g, active, pos = _grow(C_i, C_j, C_k, g, active, pos)
    knew = 0
    while pos[knew] >= 0:                   # fewer than capacity ids are in use
        knew += 1
    active[n_active] = knew
    pos[knew] = n_active
    return C_i, C_j, C_k, g, active, pos, n_active + 1, knew


@njit(cache=True)
def _add_customer(i, j, k, C_i, C_j, C_k, g, Ia1, Ja2):
    C_i[i, k] += 1.0
    C_j[j, k] += 1.0
    C_k[k] += 1.0
    g[k] = atom_factor(C_k[k], Ia1, Ja2)


@njit(cache=True)
def _remove_customer(i, j, k, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2):
    """Take a customer of entry (i, j) off atom k; an emptied atom is closed (swap-remove from the
    active list; its counts are all zero, so nothing moves). Returns the new n_active."""
    C_i[i, k] -= 1.0
    C_j[j, k] -= 1.0
    C_k[k] -= 1.0
    if C_k[k] > 0.0:
        g[k] = atom_factor(C_k[k], Ia1, Ja2)
        return n_active
    g[k] = 0.0
    p = pos[k]
    last = active[n_active - 1]
    active[p] = last
    pos[last] = p
    pos[k] = -1
    return n_active - 1


@njit(cache=True, inline="always")
def seat_weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w, own=-1, g_own=0.0):
    """The z-step weights of Eq. (6) for a customer of entry (i, j) (counts without it).

    ``w[a] = g_k (alpha1 + c_ik)(alpha2 + c_jk)`` for the atom ``k = active[a]``, in the order of
    the active list, and ``w[n_active] = w_new`` (= gamma0/(I J)). If ``own >= 0``, the counts
    still include the customer, who sits at atom ``own``: its weight uses the counts minus one and
    ``g_own`` = g of c_own - 1 (the arrays are changed for the loop and restored). Returns the sum
    of the weights, taken in blocks of four (fixed order), the blocks that :func:`draw_seat` scans.
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
    b = 0
    while b + 4 <= n_active:
        k0 = active[b]
        k1 = active[b + 1]
        k2 = active[b + 2]
        k3 = active[b + 3]
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
    for a in range(b, n_active):
        k = active[a]
        w[a] = g[k] * (alpha1 + ci[k]) * (alpha2 + cj[k])
    w[n_active] = w_new
    if n_active + 1 - b == 4:
        total += (w[b] + w[b + 1]) + (w[b + 2] + w[b + 3])
    else:
        for a in range(b, n_active + 1):
            total += w[a]
    if own >= 0:
        ci[own] = ci_own
        cj[own] = cj_own
        g[own] = g_keep
    return total


@njit(cache=True, inline="always")
def blocked_total(w, n):
    """Sum of w[:n] in blocks of four (the order of :func:`seat_weights` and :func:`draw_seat`)."""
    total = 0.0
    b = 0
    while b + 4 <= n:
        total += (w[b] + w[b + 1]) + (w[b + 2] + w[b + 3])
        b += 4
    while b < n:
        total += w[b]
        b += 1
    return total


@njit(cache=True, inline="always")
def draw_seat(rng, w, n, total):
    """Index a < n drawn with probability w[a] / total, ``total`` from :func:`seat_weights`:
    one uniform, inverted through the cumulative sums of the same blocks of four."""
    u = rng.random() * total
    cum = 0.0
    b = 0
    while b + 4 <= n:
        nxt = cum + ((w[b] + w[b + 1]) + (w[b + 2] + w[b + 3]))
        if u < nxt:
            for a in range(b, b + 4):
                cum += w[a]
                if u < cum:
                    return a
            return _last_positive(w, b + 4)     # rounding inside the block
        cum = nxt
        b += 4
    while b < n:
        cum += w[b]
        if u < cum:
            return b
        b += 1
    return _last_positive(w, n)                 # rounding put u at the very top


@njit(cache=True)
def _last_positive(w, top):
    for a in range(top - 1, -1, -1):
        if w[a] > 0.0:
            return a
    return top - 1


@njit(cache=True)
def _zero_padded(x, n):
    out = np.zeros(n)
    out[:x.shape[0]] = x
    return out


@njit(cache=True)
def _seating_pass(rng, rows, cols, offsets, z, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2,
                  alpha1, alpha2, w_new, c0, reseat, n_moves, n_ones=-1):
    """One pass over the ones of X in CSR order. At each one (i, j): if ``reseat``, the z-step
    (Eq. 6, J alpha2) reseats each of its customers in turn; then ``n_moves`` birth-or-death moves
    of the exact m-step (see ``birth_death_customers``) change its number of customers. Each is a
    kernel that leaves Theorem 4's posterior invariant, so any fixed order of them does too;
    ``idepm_sweep`` runs both at each one while its counts are in cache (one pass, not two).

    The seating is the float form of ``to_float_seating``. Returns ``(offsets, z, C_i, C_j, C_k, g,
    active, pos, n_active)`` with new ``offsets``/``z`` (atom ids).

    Missing entries (``fit(mask=...)``): the entries ``e >= n_ones`` are unobserved; their count
    follows the Poisson of Eq. (1) without the truncation at 1 that x_ij = 1 imposes, so a death
    may remove their last customer (and a birth start from none). Default -1: all are ones.
    """
    if n_ones < 0:
        n_ones = rows.shape[0]
    # While a customer is out for reseating, g_k stays the factor of the full count; the weight of
    # the customer's own atom uses gm_k = factor(c_k - 1) instead. Both change only when the
    # customer moves, so most reseatings need no division on their critical path.
    nnz = rows.shape[0]
    cap = C_k.shape[0]
    gm = np.zeros(cap)
    for a in range(n_active):
        k = active[a]
        gm[k] = atom_factor(C_k[k] - 1.0, Ia1, Ja2)
    w = np.empty(cap + 1)
    new_off = np.empty(nnz + 1, dtype=np.int64)
    new_z = np.empty(z.shape[0] + nnz * n_moves + 16, dtype=np.int64)
    M = 0
    new_off[0] = 0
    k = -1
    for e in range(nnz):
        i = rows[e]
        j = cols[e]
        start = M
        for s in range(offsets[e], offsets[e + 1]):
            kold = z[s]
            new_z[M] = kold
            M += 1
            if not reseat:
                continue
            closed = C_k[kold] == 1.0
            if closed:                          # its only customer: close the atom (swap-remove)
                n_active = _remove_customer(i, j, kold, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2)
                gm[kold] = 0.0
                total = seat_weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new,
                                     w, -1, 0.0)
            else:                               # counts still include the customer; see seat_weights
                total = seat_weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new,
                                     w, kold, gm[kold])
            a = draw_seat(rng, w, n_active + 1, total)
            if a == n_active:                   # open a new atom
                C_i, C_j, C_k, g, active, pos, n_active, k = _new_atom(C_i, C_j, C_k, g, active, pos,
                                                                       n_active)
                if gm.shape[0] < C_k.shape[0]:      # the arrays grew (w is kept: see the birth)
                    gm = _zero_padded(gm, C_k.shape[0])
                    w = _zero_padded(w, C_k.shape[0] + 1)
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
        for move in range(n_moves):
            n = M - start
            u = rng.random()
            if u < 0.5:                                             # birth
                if reseat and move == 0 and offsets[e + 1] > offsets[e]:
                    # w still holds the weights of the last reseating, which differ from the
                    # birth weights only at that customer's atom k (counts without -> with it)
                    p = pos[k]
                    w[p] = g[k] * (alpha1 + C_i[i, k]) * (alpha2 + C_j[j, k])
                    w[n_active] = w_new
                    F = blocked_total(w, n_active + 1)
                else:
                    F = seat_weights(i, j, C_i, C_j, g, active, n_active, alpha1, alpha2, w_new, w)
                if (u + u) * (c0 + 1.0) * (n + 1) < F:             # 2u ~ U(0, 1) given u < 1/2
                    a = draw_seat(rng, w, n_active + 1, F)
                    if a == n_active:
                        C_i, C_j, C_k, g, active, pos, n_active, k = _new_atom(C_i, C_j, C_k, g, active,
                                                                               pos, n_active)
                        if gm.shape[0] < C_k.shape[0]:
                            gm = _zero_padded(gm, C_k.shape[0])
                            w = np.empty(C_k.shape[0] + 1)
                    else:
                        k = active[a]
                    gm[k] = g[k]
                    _add_customer(i, j, k, C_i, C_j, C_k, g, Ia1, Ja2)
                    new_z[M] = k
                    M += 1
            elif n >= 2 or (n == 1 and e >= n_ones):                # death (a one keeps one)
                s = start + int((u + u - 1.0) * n)                  # 2u - 1 ~ U(0, 1) given u >= 1/2
                kd = new_z[s]
                n_minus = _remove_customer(i, j, kd, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2)
                Fm = seat_weights(i, j, C_i, C_j, g, active, n_minus, alpha1, alpha2, w_new, w)
                if rng.random() * Fm < (c0 + 1.0) * n:
                    new_z[s] = new_z[M - 1]
                    M -= 1
                    n_active = n_minus
                    gm[kd] = atom_factor(C_k[kd] - 1.0, Ia1, Ja2) if C_k[kd] > 0.0 else 0.0
                else:                                               # restore the customer
                    if n_minus < n_active:                          # its atom was closed: reopen it last
                        active[n_minus] = kd
                        pos[kd] = n_minus
                    _add_customer(i, j, kd, C_i, C_j, C_k, g, Ia1, Ja2)
        new_off[e + 1] = M
    return new_off, new_z[:M].copy(), C_i, C_j, C_k, g, active, pos, n_active


@njit(cache=True)
def _int_seating_pass(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active, alpha1,
                      alpha2, gamma0, c0, reseat, n_moves):
    """``_seating_pass`` (``reseat``, ``n_moves``, ``c0``) on the int64 seating of ``seat_counts``
    / ``active_from_counts``, through its float form (``to_float_seating`` with I alpha1, J alpha2,
    I x J the count tables, and the new atom's weight gamma0/(I J); then ``to_int_seating``).
    Returns ``(offsets, z, n_ik, n_jk, n_k, active, pos, n_active)``, new arrays."""
    I = n_ik.shape[0]
    J = n_jk.shape[0]
    Ia1 = I * alpha1
    Ja2 = J * alpha2
    C_i, C_j, C_k, g, act, ps = to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, Ia1, Ja2)
    off, new_z, C_i, C_j, C_k, g, act, ps, n_active = _seating_pass(
        rng, rows, cols, offsets, z, C_i, C_j, C_k, g, act, ps, n_active, Ia1, Ja2, alpha1, alpha2,
        gamma0 / (I * J), c0, reseat, n_moves)
    n_ik, n_jk, n_k, act, ps, n_active = to_int_seating(C_i, C_j, C_k, act, ps, n_active)
    return off, new_z, n_ik, n_jk, n_k, act, ps, n_active


@njit(cache=True)
def sample_assignments(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
                       alpha1, alpha2, gamma0):
    """The z-step, Eq. (6) (corrected: J alpha2, not I alpha2): reseat every customer once.

    Takes and returns the seating of ``seat_counts``/``active_from_counts``
    ``(n_ik, n_jk, n_k, active, pos, n_active)`` (``z`` is updated in place; the arrays
    returned are new). ``idepm_sweep`` runs the same kernel on the float form directly.
    """
    _, new_z, n_ik, n_jk, n_k, act, ps, n_active = _int_seating_pass(
        rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active, alpha1, alpha2, gamma0,
        0.0, True, 0)
    z[:] = new_z
    return n_ik, n_jk, n_k, act, ps, n_active


@njit(cache=True)
def sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active, alpha1, alpha2, c0, I=0, J=0):
    """phi, psi, lambda of the K+ active atoms given the seating (Sec. 4.3, 'Sampling m').

    Returns phi (I' x K+), psi (J' x K+), lam (K+) in the order of ``active[:n_active]``, for the
    I' = ``n_ik.shape[0]`` rows and J' columns of the count tables. When the tables hold only some
    of the matrix's ``I`` rows (``I`` > I'; the others carry no customers), each column
    phi_.k ~ Dir(alpha1 + n_.k) over all I rows is drawn exactly through I' + 1 components: the
    I' rows and the rest, whose total concentration is (I - I') alpha1 (aggregation property of
    the Dirichlet); the rest's component is dropped. Same for psi. ``I = 0`` (default): I = I'.
    """
    Ic = n_ik.shape[0]
    Jc = n_jk.shape[0]
    rest_i = max(I - Ic, 0) * alpha1
    rest_j = max(J - Jc, 0) * alpha2
    ni = Ic + 1 if rest_i > 0.0 else Ic
    nj = Jc + 1 if rest_j > 0.0 else Jc
    K = n_active
    phi = np.empty((Ic, K))
    psi = np.empty((Jc, K))
    lam = np.empty(K)
    ci = np.empty(ni)
    cj = np.empty(nj)
    col_i = np.empty(ni)
    col_j = np.empty(nj)
    if ni > Ic:
        ci[Ic] = rest_i
    if nj > Jc:
        cj[Jc] = rest_j
    for a in range(K):
        k = active[a]
        for i in range(Ic):
            ci[i] = alpha1 + n_ik[i, k]
        sample_dirichlet(rng, ci, col_i)
        phi[:, a] = col_i[:Ic]
        for j in range(Jc):
            cj[j] = alpha2 + n_jk[j, k]
        sample_dirichlet(rng, cj, col_j)
        psi[:, a] = col_j[:Jc]
        lam[a] = sample_gamma(rng, float(n_k[k]), c0 + 1.0)
    return phi, psi, lam


@njit(cache=True)
def resample_customers(rng, rows, cols, phi, psi, lam):
    """Eqs. (7)-(8): m_ij. ~ ZTP(sum_k phi_ik psi_jk lambda_k) over the K+ active atoms,
    seated by the multinomial. Returns (offsets, z) with atom labels 0..K+-1."""
    nnz = rows.shape[0]
    K = lam.shape[0]
    offsets = np.empty(nnz + 1, dtype=np.int64)
    cap = 2 * nnz + 16
    z = np.empty(cap, dtype=np.int64)
    cum = np.empty(K)
    M = 0
    offsets[0] = 0
    for e in range(nnz):
        i = rows[e]
        j = cols[e]
        s = 0.0
        for k in range(K):
            s += phi[i, k] * psi[j, k] * lam[k]
            cum[k] = s
        n = sample_ztp(rng, s)
        if M + n > cap:
            while M + n > cap:
                cap *= 2
            znew = np.empty(cap, dtype=np.int64)
            znew[:M] = z[:M]
            z = znew
        for _ in range(n):
            if s > 0.0:
                u = rng.random() * s
                lo = 0
                hi = K - 1
                while lo < hi:
                    mid = (lo + hi) // 2
                    if cum[mid] > u:
                        hi = mid
                    else:
                        lo = mid + 1
                k = lo
            else:
                k = int(rng.random() * K)
            z[M] = k
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
    return _int_seating_pass(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
                             alpha1, alpha2, gamma0, c0, False, n_moves)


@njit(cache=True)
def _gather_counts(C_i, C_j, C_k, active, n_active):
    """int64 counts of the active atoms, in active-list order (column a = atom ``active[a]``)."""
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
def idepm_sweep(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, I, J, h, e0, f0, exact_m=True, n_moves=1,
                n_ones=-1):
    """One sweep of the IDEPM's collapsed Gibbs sampler.

    Takes the seating ``(offsets, z)`` with its counts ``(n_ik, n_jk, n_k)`` (``seat_counts``; atom
    labels in ``z`` below ``n_k.shape[0]``). ``I`` and ``J`` are the matrix's dimensions, which enter
    the weights (Eq. 6) and the concentration updates; the count tables may hold only the
    I' <= I rows and J' <= J columns that carry ones (``rows``, ``cols`` index those), since a row
    without customers contributes a factor 1 to Eq. (5): memory O(M + (I' + J') K+) and returns the new seating with its counts, the atoms
    relabelled 0..K+-1 in the order of the active list: ``(offsets, z, n_ik, n_jk, n_k, K+)``.
    ``h`` (alpha1, alpha2, gamma0, c0) is updated in place.

    ``n_ones``: the entries ``e >= n_ones`` of ``rows``, ``cols`` are missing entries, whose
    customers may number zero (``_seating_pass``); only with ``exact_m``. Default -1: all are ones.

    ``exact_m=True``: z-step and exact m-step in one pass over the ones (``_seating_pass``: at each
    one, its customers are reseated by Eq. (6), then one birth-or-death move, see
    ``birth_death_customers``); ``exact_m=False``: the z-step, then the paper's m-step (Eqs. (7)-(8)).
    Then alpha1, alpha2 (Eqs. (32)-(34)), gamma0 (Eq. 43), c0 (Eqs. (44)-(46)).

    The collapsed chain needs no phi, psi, lambda; for predictions, draw the active atoms'
    parameters from their conditional given the returned seating with
    ``sample_active_parameters(rng, n_ik, n_jk, n_k, np.arange(K), K, alpha1, alpha2, c0)``.
    """
    active, pos, n_active = _active_from_counts(n_k)
    alpha1, alpha2, gamma0 = h[ALPHA1], h[ALPHA2], h[GAMMA0]
    Ia1 = I * alpha1
    Ja2 = J * alpha2
    w_new = gamma0 / (I * J)
    C_i, C_j, C_k, g, active, pos = to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, Ia1, Ja2,
                                                     n_active + 16)
    if exact_m:                          # z-step and birth-death moves in one pass over the ones
        offsets, z, C_i, C_j, C_k, g, active, pos, n_active = _seating_pass(
            rng, rows, cols, offsets, z, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2,
            alpha1, alpha2, w_new, h[C0], True, n_moves, n_ones)
        for s in range(z.shape[0]):          # atom ids -> places 0..K+-1 in the active list
            z[s] = pos[z[s]]
        n_ik, n_jk, n_k = _gather_counts(C_i, C_j, C_k, active, n_active)
    else:
        offsets, z, C_i, C_j, C_k, g, active, pos, n_active = _seating_pass(
            rng, rows, cols, offsets, z, C_i, C_j, C_k, g, active, pos, n_active, Ia1, Ja2,
            alpha1, alpha2, w_new, h[C0], True, 0)
        n_ik, n_jk, n_k, active, pos, n_active = to_int_seating(C_i, C_j, C_k, active, pos, n_active)
        phi, psi, lam = sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active,
                                                 h[ALPHA1], h[ALPHA2], h[C0], I, J)
        offsets, z = resample_customers(rng, rows, cols, phi, psi, lam)
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, n_ik.shape[0], n_jk.shape[0],
                                      max(lam.shape[0], 1))
    active, pos, n_active = _active_from_counts(n_k)
    if n_active < n_k.shape[0]:          # atoms emptied by the m-step: relabel to 0..K+-1
        z = _relabel(z, active, n_active, n_k.shape[0])
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, n_ik.shape[0], n_jk.shape[0], max(n_active, 1))
        active, pos, n_active = _active_from_counts(n_k)
    h[ALPHA1] = sample_concentration(rng, n_ik, n_k, h[ALPHA1], I, e0, f0)
    h[ALPHA2] = sample_concentration(rng, n_jk, n_k, h[ALPHA2], J, e0, f0)
    h[GAMMA0] = sample_gamma0_idepm(rng, n_active, h[C0], e0, f0)
    h[C0] = sample_c0_idepm(rng, n_k, active, n_active, h[GAMMA0], h[C0], e0, f0)
    return offsets, z, n_ik, n_jk, n_k, n_active


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
