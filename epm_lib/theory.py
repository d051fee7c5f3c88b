"""Closed forms of the paper's theory (Theorems 1-4, Lemma 1, Appendix D).

Derived and checked numerically in Part I of the book:
``chapters/02_theorem1`` (Theorem 1), ``chapters/04_cepm_depm_theorem3``
(Theorem 3 of the book = the paper's ``theorem2`` label) and
``chapters/05_theorem4`` (Lemma 1, the truncated marginal likelihood of
Appendix D and Theorem 4).

Gamma distributions are parameterised by shape and *rate*, as in the paper.
All functions are plain numpy/scipy; they are not on a hot path.
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln, xlogy

__all__ = [
    "epm_intensity_mean",
    "cepm_intensity_mean",
    "depm_intensity_mean",
    "log_joint_counts",
    "log_partition_likelihood",
    "log_lemma1_factorised",
    "log_lemma1_direct",
]


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not (value > 0.0) or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def epm_intensity_mean(a1, b1, a2, b2, gamma0, c0) -> float:
    """Theorem 1 (Eq. 2): E[sum_k U_ik V_jk lambda_k] = (a1/b1)(a2/b2)(gamma0/c0).

    ``U_ik ~ Gamma(a1, b1)``, ``V_jk ~ Gamma(a2, b2)``, ``lambda_k`` from a
    gamma process with concentration ``gamma0`` and rate ``c0``.
    """
    a1, b1, a2, b2 = (_positive(n, v) for n, v in
                      (("a1", a1), ("b1", b1), ("a2", a2), ("b2", b2)))
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    return (a1 / b1) * (a2 / b2) * (gamma0 / c0)


def cepm_intensity_mean(C1, C2, gamma0, c0) -> float:
    """Sec. 4.1: with b1 = C1 a1 and b2 = C2 a2 the EPM mean becomes gamma0/(C1 C2 c0)."""
    C1, C2 = _positive("C1", C1), _positive("C2", C2)
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    return gamma0 / (C1 * C2 * c0)


def depm_intensity_mean(I, J, gamma0, c0) -> float:
    """Theorem 3 (the paper's Theorem 2 label, Sec. 4.2): E[sum_k phi_ik psi_jk lambda_k] = gamma0/(I J c0)."""
    I, J = _positive_int("I", I), _positive_int("J", J)
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    return gamma0 / (I * J * c0)


def _check_counts(counts, name="counts") -> np.ndarray:
    arr = np.asarray(counts)
    if arr.ndim != 3:
        raise ValueError(f"{name} must be a 3-d array (I, J, T) of m_ijk, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must hold non-negative integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold integers; found non-integer values")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative; found {int((arr < 0).sum())} negative entries")
    return arr.astype(np.int64)


def _log_dirichlet_multinomial_terms(m, alpha1, alpha2):
    """The phi and psi factors of Appendix D, summed over the atoms present in ``m``.

    sum_k [ln G(I a1) - ln G(I a1 + m_..k) + sum_i (ln G(a1 + m_i.k) - ln G(a1))] + (same for psi).
    """
    I, J, _ = m.shape
    m_i_k = m.sum(axis=1)          # (I, T)
    m_j_k = m.sum(axis=0)          # (J, T)
    m_k = m_i_k.sum(axis=0)        # (T,)
    out = np.sum(gammaln(I * alpha1) - gammaln(I * alpha1 + m_k))
    out += np.sum(gammaln(alpha1 + m_i_k) - gammaln(alpha1))
    out += np.sum(gammaln(J * alpha2) - gammaln(J * alpha2 + m_k))
    out += np.sum(gammaln(alpha2 + m_j_k) - gammaln(alpha2))
    return out, m_k


def log_joint_counts(counts, alpha1, alpha2, gamma0, c0) -> float:
    """log P(m, z) of the truncated DEPM (Eq. 41, Appendix D).

    ``counts[i, j, k]`` is m_ijk, the number of the m_ij. customers of entry
    (i, j) seated at atom k; ``T = counts.shape[2]``. ``z`` is any labelled
    assignment of customers consistent with these counts (the probability
    is the same for all of them)::

        P(m, z) = prod_ij 1/m_ij.!
                  x prod_k G(I a1)/G(I a1 + m_..k) prod_i G(a1 + m_i.k)/G(a1)
                  x prod_k G(J a2)/G(J a2 + m_..k) prod_j G(a2 + m_.jk)/G(a2)
                  x prod_k G(g0/T + m_..k) c0^(g0/T) / (G(g0/T) (c0+1)^(g0/T + m_..k))
    """
    m = _check_counts(counts)
    alpha1, alpha2 = _positive("alpha1", alpha1), _positive("alpha2", alpha2)
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    T = m.shape[2]
    a = gamma0 / T
    out = -np.sum(gammaln(m.sum(axis=2) + 1.0))
    dm, m_k = _log_dirichlet_multinomial_terms(m, alpha1, alpha2)
    out += dm
    out += np.sum(gammaln(a + m_k) - gammaln(a) + a * math.log(c0) - (a + m_k) * math.log1p(c0))
    return float(out)


def log_partition_likelihood(counts, alpha1, alpha2, gamma0, c0, T) -> float:
    """log P(m, [z]) for truncation ``T`` (Eq. 42, Appendix D) or its limit T -> inf (Theorem 4, Eq. 5).

    ``counts`` is (I, J, K+) and holds only the K+ active atoms (every atom
    must carry at least one customer). ``T`` is an int >= K+ or ``math.inf``.

    With a = gamma0/T the truncated form is::

        P(m,[z]) = T!/(T-K+)! P(m, z)
                 = prod_ij 1/m_ij.! x (Dirichlet-multinomial factors of the K+ atoms)
                   x T!/((T-K+)! T^K+) x gamma0^K+ (c0/(c0+1))^gamma0
                   x prod_k prod_{l=1}^{m_..k - 1} (l + a) / (c0+1)^m_..k

    It is evaluated stably as sum_r log1p(-r/T) and
    ln G(m + a) - ln G(1 + a) (= ln prod_{l<m}(l + a)), so that T = 10^6 or
    ``math.inf`` (where both reduce to Theorem 4's ln G(m)) lose no accuracy.
    """
    m = _check_counts(counts)
    alpha1, alpha2 = _positive("alpha1", alpha1), _positive("alpha2", alpha2)
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    K = m.shape[2]
    m_k = m.sum(axis=(0, 1))
    empty = np.flatnonzero(m_k == 0)
    if empty.size:
        raise ValueError(
            f"counts must hold only active atoms: atom(s) {empty.tolist()} have no customers "
            "(drop them; the partition likelihood counts empty atoms through T)")
    if isinstance(T, bool):
        raise ValueError(f"T must be an integer >= K+ = {K} or math.inf, got {T!r}")
    if isinstance(T, Real) and not isinstance(T, Integral) and math.isinf(T) and T > 0:
        a = 0.0
        log_falling = 0.0
    elif isinstance(T, Integral):
        if T < K:
            raise ValueError(f"T = {T} is smaller than the number of active atoms K+ = {K}")
        a = gamma0 / T
        log_falling = float(np.sum(np.log1p(-np.arange(K) / T)))
    else:
        raise ValueError(f"T must be an integer >= K+ = {K} or math.inf, got {T!r}")
    out = -np.sum(gammaln(m.sum(axis=2) + 1.0))
    dm, _ = _log_dirichlet_multinomial_terms(m, alpha1, alpha2)
    out += dm
    out += log_falling + K * math.log(gamma0) + gamma0 * (math.log(c0) - math.log1p(c0))
    out += np.sum(gammaln(m_k + a) - gammaln(1.0 + a) - m_k * math.log1p(c0))
    return float(out)


def _check_lemma1_parameters(m, phi, psi, lam):
    """phi (I, T), psi (J, T) and lambda (T,) as finite non-negative float arrays matching m (I, J, T)."""
    I, J, T = m.shape
    out = []
    for name, value, shape in (("phi", phi, (I, T)), ("psi", psi, (J, T)), ("lam", lam, (T,))):
        arr = np.asarray(value)
        if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise ValueError(f"{name} must be a real array, got dtype {arr.dtype}")
        if arr.shape != shape:
            raise ValueError(f"{name} must have shape {shape} to match counts of shape {m.shape}, got {arr.shape}")
        arr = arr.astype(float)
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError(f"{name} must hold finite non-negative values")
        out.append(arr)
    return out


def log_lemma1_direct(counts, phi, psi, lam) -> float:
    """log P(m, z | phi, psi, lambda) as the product of Poisson totals and categorical labels.

    The left-hand side of Lemma 1 (Appendix D): for every entry,
    Poisson(m_ij. ; sum_k phi_ik psi_jk lambda_k) times, for each of its
    customers, the probability phi_ik psi_jk lambda_k / sum_k' (...) of its atom.
    ``phi`` is (I, T), ``psi`` (J, T), ``lam`` (T,), all finite and non-negative;
    a customer on an atom of zero rate gives ``-inf``.
    """
    m = _check_counts(counts)
    phi, psi, lam = _check_lemma1_parameters(m, phi, psi, lam)
    rate_ijk = phi[:, None, :] * psi[None, :, :] * lam[None, None, :]
    if np.any((m > 0) & (rate_ijk == 0.0)):
        return -math.inf
    rate_ij = rate_ijk.sum(axis=2)
    m_ij = m.sum(axis=2)
    out = np.sum(xlogy(m_ij, rate_ij) - rate_ij - gammaln(m_ij + 1.0))
    seated = m > 0                 # there rate_ijk > 0, hence rate_ij > 0 (checked above)
    logp = np.log(np.where(seated, rate_ijk, 1.0)) - np.log(np.where(seated, rate_ij[:, :, None], 1.0))
    out += np.sum(m * logp)
    return float(out)


def log_lemma1_factorised(counts, phi, psi, lam) -> float:
    """Lemma 1 (Eq. 37, Appendix D): the fully factorised form, valid when columns of phi and psi sum to one.

    prod_ij 1/m_ij.! prod_ik phi_ik^m_i.k prod_jk psi_jk^m_.jk prod_k lambda_k^m_..k e^(-lambda_k).
    Shapes and values as for ``log_lemma1_direct``; the constraint itself is not checked.
    """
    m = _check_counts(counts)
    phi, psi, lam = _check_lemma1_parameters(m, phi, psi, lam)
    m_i_k, m_j_k = m.sum(axis=1), m.sum(axis=0)
    m_k = m_i_k.sum(axis=0)
    out = -np.sum(gammaln(m.sum(axis=2) + 1.0))
    out += np.sum(xlogy(m_i_k, phi)) + np.sum(xlogy(m_j_k, psi))
    out += np.sum(xlogy(m_k, lam) - lam)
    return float(out)
