"""The truly infinite DEPM (Sec. 4.3, Theorem 4, Appendix E): a collapsed Gibbs sampler.

Derived step by step in ``chapters/14_idepm_sampler``. Hyperparameters travel
as ``h = [alpha1, alpha2, gamma0, c0]`` (the indices of ``depm``).

The state is the seating of customers: each one of X, (i, j), has m_ij.
customers (``m_e``; the customers of entry e are ``z[offsets[e]:offsets[e+1]]``),
each seated at an atom. Atom ids index the count arrays n_ik (I x Kcap),
n_jk (J x Kcap) and n_k (Kcap); an atom is active while n_k > 0, and the
active ids are kept in ``active[:n_active]`` (``pos`` maps id -> place).

One sweep (``idepm_sweep``):

1. z-step (Eq. 6, with J alpha2 in the second denominator -- the paper
   prints I alpha2): every customer is removed and reseated at an active atom
   k with weight n_k (alpha1 + n_ik)/(I alpha1 + n_k) (alpha2 + n_jk)/(J alpha2 + n_k),
   or at a new atom with weight gamma0/(I J);
2. m-step (Eqs. (7)-(8)): phi_.k ~ Dir(alpha1 + n_.k), psi_.k ~ Dir(alpha2 + n_.k),
   lambda_k ~ Gamma(n_k, c0 + 1) for the K+ active atoms, then every m_ij. is
   redrawn from ZTP(sum_k phi_ik psi_jk lambda_k) and reseated by the multinomial.
   As in the paper, this step ignores the mass of the atoms not in use;
3. alpha1, alpha2 as in the DEPM (Eqs. (32)-(34));
4. gamma0 ~ Gamma(e0 + K+, f0 - ln(c0/(c0+1))) (Eq. 43);
5. c0 via lambda_k ~ Gamma(n_k, c0+1), lambda_rest ~ Gamma(gamma0, c0+1),
   c0 ~ Gamma(e0 + gamma0, f0 + lambda_rest + sum_k lambda_k) (Eqs. (44)-(46)).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..distributions import sample_ztp, sample_gamma, sample_dirichlet, sample_categorical
from .depm import ALPHA1, ALPHA2, GAMMA0, C0, HYPER_NAMES, sample_concentration

__all__ = ["ALPHA1", "ALPHA2", "GAMMA0", "C0", "HYPER_NAMES",
           "seat_counts", "sample_assignments", "sample_active_parameters",
           "resample_customers", "sample_gamma0_idepm", "sample_c0_idepm", "idepm_sweep"]


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


@njit(cache=True)
def _grow(n_ik, n_jk, n_k, active, pos):
    Kcap = n_k.shape[0]
    new = 2 * Kcap
    a = np.zeros((n_ik.shape[0], new), dtype=np.int64)
    a[:, :Kcap] = n_ik
    b = np.zeros((n_jk.shape[0], new), dtype=np.int64)
    b[:, :Kcap] = n_jk
    c = np.zeros(new, dtype=np.int64)
    c[:Kcap] = n_k
    d = np.zeros(new, dtype=np.int64)
    d[:Kcap] = active
    p = np.full(new, -1, dtype=np.int64)
    p[:Kcap] = pos
    return a, b, c, d, p


@njit(cache=True)
def sample_assignments(rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
                       alpha1, alpha2, gamma0):
    """The z-step, Eq. (6) (corrected: J alpha2, not I alpha2): reseat every customer once.

    Returns (n_ik, n_jk, n_k, active, pos, n_active); the arrays are new ones
    when the atom capacity had to grow.
    """
    I = n_ik.shape[0]
    J = n_jk.shape[0]
    Ia1 = I * alpha1
    Ja2 = J * alpha2
    w_new = gamma0 / (I * J)
    w = np.empty(n_k.shape[0] + 1)
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        for s in range(offsets[e], offsets[e + 1]):
            n_active = _remove_customer(i, j, z[s], n_ik, n_jk, n_k, active, pos, n_active)
            total = _seat_weights(i, j, n_ik, n_jk, n_k, active, n_active, Ia1, Ja2, alpha1, alpha2, w_new, w)
            a = sample_categorical(rng, w[:n_active + 1], total)
            if a == n_active:                   # open a new atom
                n_ik, n_jk, n_k, active, pos, n_active, k = _new_atom(n_ik, n_jk, n_k, active, pos, n_active)
                if w.shape[0] < n_k.shape[0] + 1:
                    w = np.empty(n_k.shape[0] + 1)
            else:
                k = active[a]
            z[s] = k
            n_ik[i, k] += 1
            n_jk[j, k] += 1
            n_k[k] += 1
    return n_ik, n_jk, n_k, active, pos, n_active


@njit(cache=True)
def sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active, alpha1, alpha2, c0):
    """phi, psi, lambda of the K+ active atoms given the seating (Sec. 4.3, 'Sampling m').

    Returns phi (I x K+), psi (J x K+), lam (K+) in the order of ``active[:n_active]``.
    """
    I = n_ik.shape[0]
    J = n_jk.shape[0]
    K = n_active
    phi = np.empty((I, K))
    psi = np.empty((J, K))
    lam = np.empty(K)
    ci = np.empty(I)
    cj = np.empty(J)
    col_i = np.empty(I)
    col_j = np.empty(J)
    for a in range(K):
        k = active[a]
        for i in range(I):
            ci[i] = alpha1 + n_ik[i, k]
        sample_dirichlet(rng, ci, col_i)
        phi[:, a] = col_i
        for j in range(J):
            cj[j] = alpha2 + n_jk[j, k]
        sample_dirichlet(rng, cj, col_j)
        psi[:, a] = col_j
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
def _active_from_counts(n_k):
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
def _new_atom(n_ik, n_jk, n_k, active, pos, n_active):
    """Open an atom: take a free id (growing the arrays if none is left) and append it to the active list."""
    if n_active == n_k.shape[0]:
        n_ik, n_jk, n_k, active, pos = _grow(n_ik, n_jk, n_k, active, pos)
    knew = -1
    for kk in range(n_k.shape[0]):
        if pos[kk] < 0 and n_k[kk] == 0:
            knew = kk
            break
    active[n_active] = knew
    pos[knew] = n_active
    return n_ik, n_jk, n_k, active, pos, n_active + 1, knew


@njit(cache=True)
def _remove_customer(i, j, k, n_ik, n_jk, n_k, active, pos, n_active):
    n_ik[i, k] -= 1
    n_jk[j, k] -= 1
    n_k[k] -= 1
    if n_k[k] == 0:
        p = pos[k]
        last = active[n_active - 1]
        active[p] = last
        pos[last] = p
        pos[k] = -1
        n_active -= 1
    return n_active


@njit(cache=True)
def _seat_weights(i, j, n_ik, n_jk, n_k, active, n_active, Ia1, Ja2, alpha1, alpha2, w_new, w):
    total = 0.0
    for a in range(n_active):
        kk = active[a]
        nk = n_k[kk]
        wk = nk * (alpha1 + n_ik[i, kk]) / (Ia1 + nk) * (alpha2 + n_jk[j, kk]) / (Ja2 + nk)
        w[a] = wk
        total += wk
    w[n_active] = w_new
    return total + w_new


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
    Returns (offsets, z, n_ik, n_jk, n_k, active, pos, n_active).
    """
    I = n_ik.shape[0]
    J = n_jk.shape[0]
    Ia1 = I * alpha1
    Ja2 = J * alpha2
    w_new = gamma0 / (I * J)
    nnz = rows.shape[0]
    new_off = np.empty(nnz + 1, dtype=np.int64)
    cap = z.shape[0] + nnz * n_moves + 16
    new_z = np.empty(cap, dtype=np.int64)
    w = np.empty(n_k.shape[0] + 1)
    M = 0
    new_off[0] = 0
    for e in range(nnz):
        i = rows[e]
        j = cols[e]
        start = M
        for s in range(offsets[e], offsets[e + 1]):
            new_z[M] = z[s]
            M += 1
        for _ in range(n_moves):
            n = M - start
            if w.shape[0] < n_k.shape[0] + 1:
                w = np.empty(n_k.shape[0] + 1)
            if rng.random() < 0.5:                                  # birth
                F = _seat_weights(i, j, n_ik, n_jk, n_k, active, n_active, Ia1, Ja2, alpha1, alpha2, w_new, w)
                if rng.random() * (c0 + 1.0) * (n + 1) < F:
                    a = sample_categorical(rng, w[:n_active + 1], F)
                    if a == n_active:
                        n_ik, n_jk, n_k, active, pos, n_active, k = _new_atom(n_ik, n_jk, n_k, active, pos, n_active)
                    else:
                        k = active[a]
                    n_ik[i, k] += 1
                    n_jk[j, k] += 1
                    n_k[k] += 1
                    new_z[M] = k
                    M += 1
            elif n >= 2:                                            # death
                s = start + int(rng.random() * n)
                k = new_z[s]
                n_active_minus = _remove_customer(i, j, k, n_ik, n_jk, n_k, active, pos, n_active)
                if w.shape[0] < n_k.shape[0] + 1:
                    w = np.empty(n_k.shape[0] + 1)
                Fm = _seat_weights(i, j, n_ik, n_jk, n_k, active, n_active_minus, Ia1, Ja2, alpha1, alpha2,
                                   w_new, w)
                if rng.random() * Fm < (c0 + 1.0) * n:
                    new_z[s] = new_z[M - 1]
                    M -= 1
                    n_active = n_active_minus
                else:                                               # restore the customer
                    if n_k[k] == 0:
                        active[n_active_minus] = k
                        pos[k] = n_active_minus
                    n_ik[i, k] += 1
                    n_jk[j, k] += 1
                    n_k[k] += 1
        new_off[e + 1] = M
    return new_off, new_z[:M].copy(), n_ik, n_jk, n_k, active, pos, n_active


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
def idepm_sweep(rng, rows, cols, offsets, z, I, J, h, e0, f0, exact_m=True, n_moves=1):
    """One sweep of the IDEPM's collapsed Gibbs sampler.

    Takes the seating (offsets, z) and returns the new one together with the
    active atoms' (phi, psi, lambda) drawn from their posterior given the new
    seating (used for test predictions) and K+: ``(offsets, z, phi, psi, lam, K)``;
    atom labels in ``z`` are 0..K+-1, the columns of phi and psi.
    ``exact_m=True`` updates m by ``birth_death_customers`` (exact);
    ``exact_m=False`` uses the paper's m-step (Eqs. (7)-(8)).
    """
    K0 = 0
    for s in range(z.shape[0]):
        if z[s] + 1 > K0:
            K0 = z[s] + 1
    Kcap = max(2 * K0, K0 + 16)
    n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, I, J, Kcap)
    active, pos, n_active = _active_from_counts(n_k)
    n_ik, n_jk, n_k, active, pos, n_active = sample_assignments(
        rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
        h[ALPHA1], h[ALPHA2], h[GAMMA0])
    if exact_m:
        offsets, z, n_ik, n_jk, n_k, active, pos, n_active = birth_death_customers(
            rng, rows, cols, offsets, z, n_ik, n_jk, n_k, active, pos, n_active,
            h[ALPHA1], h[ALPHA2], h[GAMMA0], h[C0], n_moves)
        z = _relabel(z, active, n_active, n_k.shape[0])
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, I, J, max(n_active, 1))
    else:
        phi, psi, lam = sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active,
                                                 h[ALPHA1], h[ALPHA2], h[C0])
        offsets, z = resample_customers(rng, rows, cols, phi, psi, lam)
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, I, J, max(lam.shape[0], 1))
    active, pos, n_active = _active_from_counts(n_k)
    if n_active < n_k.shape[0]:          # atoms emptied by the m-step: relabel to 0..K+-1
        z = _relabel(z, active, n_active, n_k.shape[0])
        n_ik, n_jk, n_k = seat_counts(rows, cols, offsets, z, I, J, max(n_active, 1))
        active, pos, n_active = _active_from_counts(n_k)
    h[ALPHA1] = sample_concentration(rng, n_ik, n_k, h[ALPHA1], I, e0, f0)
    h[ALPHA2] = sample_concentration(rng, n_jk, n_k, h[ALPHA2], J, e0, f0)
    h[GAMMA0] = sample_gamma0_idepm(rng, n_active, h[C0], e0, f0)
    h[C0] = sample_c0_idepm(rng, n_k, active, n_active, h[GAMMA0], h[C0], e0, f0)
    phi, psi, lam = sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active,
                                             h[ALPHA1], h[ALPHA2], h[C0])
    return offsets, z, phi, psi, lam, n_active


#: public names of two helpers the IDEPM chapter uses to show the z-step weights
seat_weights = _seat_weights
active_from_counts = _active_from_counts
