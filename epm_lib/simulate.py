"""Forward simulation from the generative models (EPM, CEPM, DEPM): prior draws, counts, links.

Plain numpy, dense arrays, for the small and medium sizes of the Part I
chapters and of the tests (this is not the sampler). Every function takes an
explicit ``numpy.random.Generator``; gamma distributions are shape/*rate*, as
in the paper, so ``Gamma(a, b)`` has mean ``a / b`` (numpy's ``gamma`` takes
``scale = 1 / rate``).

Derived and used in:

- ``chapters/01_epm``: the EPM's generative process (Eq. 1, Eq. 9 of
  Appendix A), the noisy-OR link and the latent counts
  (``sample_epm_prior``, ``sample_counts``, ``binarize``, ``intensity``);
- ``chapters/02_theorem1``: Monte Carlo check of Theorem 1 (Eq. 2);
- ``chapters/04_cepm_depm_theorem3``: the CEPM (Sec. 4.1) and the DEPM
  (Eqs. 3-4), with the Monte Carlo check of Theorem 3
  (``sample_cepm_prior``, ``sample_depm_prior``).

Values of a draw below the smallest positive double (which happen often for
the tiny shape ``gamma0 / T`` of the truncated gamma process) are returned as
zero, which is their correctly rounded value; moments are unaffected.
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "sample_epm_prior",
    "sample_cepm_prior",
    "sample_depm_prior",
    "sample_counts",
    "binarize",
    "intensity",
]

#: Largest number of latent counts m_ijk that ``sample_counts`` materialises
#: densely (I * J * T); beyond it use the samplers, which only touch the ones.
MAX_DENSE = 10**8


# ----------------------------------------------------------------------------- validation
def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def _generator(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng


def _factors(row_factors, col_factors, lam):
    """Check shapes (I, T), (J, T), (T,) and that all entries are finite and non-negative."""
    arrays = []
    for name, value, ndim in (("row_factors", row_factors, 2), ("col_factors", col_factors, 2), ("lam", lam, 1)):
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim != ndim:
            raise ValueError(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(arr < 0):
            raise ValueError(f"{name} must be non-negative; found {int((arr < 0).sum())} negative entries")
        arrays.append(arr)
    row, col, lam = arrays
    T = lam.shape[0]
    if row.shape[1] != T or col.shape[1] != T:
        raise ValueError(
            f"factor shapes disagree on the number of atoms: row_factors {row.shape}, "
            f"col_factors {col.shape}, lam {lam.shape} (need (I, T), (J, T), (T,))")
    return row, col, lam


# ----------------------------------------------------------------------------- priors
def _gamma_process(rng, T, gamma0, c0):
    """lambda_k ~ Gamma(gamma0 / T, rate c0), k = 1..T: the truncated gamma process (Sec. 2)."""
    return rng.gamma(gamma0 / T, 1.0 / c0, size=T)


def sample_epm_prior(rng, I, J, T, a1, b1, a2, b2, gamma0, c0) -> dict:
    """One draw of the EPM's parameters from its prior (Eq. 1; Eq. 9, Appendix A).

    U_ik ~ Gamma(a1, b1), V_jk ~ Gamma(a2, b2) and, for the gamma process
    truncated at T atoms, lambda_k ~ Gamma(gamma0 / T, c0), all independent
    (shape/rate). Returns ``{"U": (I, T), "V": (J, T), "lam": (T,)}``.
    Derived in ``chapters/01_epm``; Theorem 1 is checked with it in
    ``chapters/02_theorem1``.
    """
    rng = _generator(rng)
    I, J, T = _positive_int("I", I), _positive_int("J", J), _positive_int("T", T)
    a1, b1, a2, b2 = (_positive(n, v) for n, v in (("a1", a1), ("b1", b1), ("a2", a2), ("b2", b2)))
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    U = rng.gamma(a1, 1.0 / b1, size=(I, T))
    V = rng.gamma(a2, 1.0 / b2, size=(J, T))
    lam = _gamma_process(rng, T, gamma0, c0)
    return {"U": U, "V": V, "lam": lam}


def sample_cepm_prior(rng, I, J, T, a1, a2, gamma0, c0, C1=None, C2=None) -> dict:
    """One prior draw of the CEPM (Sec. 4.1): the EPM with rates constrained to b1 = C1 a1, b2 = C2 a2.

    Then E[U_ik] = 1 / C1 and E[V_jk] = 1 / C2 whatever a1 and a2, so the
    intensity mean is gamma0 / (C1 C2 c0). ``C1`` defaults to I and ``C2``
    to J, the paper's choice, which gives the DEPM's mean (Theorem 3).
    Returns ``{"U", "V", "lam"}`` as ``sample_epm_prior``, from which it
    draws (same generator stream). Derived in ``chapters/04_cepm_depm_theorem3``.
    """
    I, J = _positive_int("I", I), _positive_int("J", J)
    a1, a2 = _positive("a1", a1), _positive("a2", a2)
    C1 = float(I) if C1 is None else _positive("C1", C1)
    C2 = float(J) if C2 is None else _positive("C2", C2)
    return sample_epm_prior(rng, I, J, T, a1, C1 * a1, a2, C2 * a2, gamma0, c0)


def sample_depm_prior(rng, I, J, T, alpha1, alpha2, gamma0, c0) -> dict:
    """One prior draw of the DEPM's parameters (Eqs. 3-4, Sec. 4.2).

    Each column {phi_ik}_{i=1..I} ~ Dirichlet(alpha1, ..., alpha1) and each
    column {psi_jk}_{j=1..J} ~ Dirichlet(alpha2, ..., alpha2), so that every
    column sums to one (the l1 constraints of Eq. 3); lambda_k ~
    Gamma(gamma0 / T, c0). Returns ``{"phi": (I, T), "psi": (J, T), "lam": (T,)}``.

    Uses numpy's Dirichlet, which switches to a stick-breaking construction
    for concentrations below 0.1, so columns stay finite and sum to one even
    for tiny alpha (components below 1e-308 are then exact zeros). Derived in
    ``chapters/04_cepm_depm_theorem3``.
    """
    rng = _generator(rng)
    I, J, T = _positive_int("I", I), _positive_int("J", J), _positive_int("T", T)
    alpha1, alpha2 = _positive("alpha1", alpha1), _positive("alpha2", alpha2)
    gamma0, c0 = _positive("gamma0", gamma0), _positive("c0", c0)
    phi = np.ascontiguousarray(rng.dirichlet(np.full(I, alpha1), size=T).T)
    psi = np.ascontiguousarray(rng.dirichlet(np.full(J, alpha2), size=T).T)
    lam = _gamma_process(rng, T, gamma0, c0)
    return {"phi": phi, "psi": psi, "lam": lam}


# ----------------------------------------------------------------------------- counts and links
def intensity(row_factors, col_factors, lam) -> np.ndarray:
    """The (I, J) intensity sum_k row_ik col_jk lam_k of Eq. (1) (or of Eq. 4 with phi, psi).

    ``row_factors`` is U (or phi), ``col_factors`` is V (or psi). Derived in
    ``chapters/01_epm``; its mean is Theorem 1 (``chapters/02_theorem1``)
    and Theorem 3 (``chapters/04_cepm_depm_theorem3``).
    """
    row, col, lam = _factors(row_factors, col_factors, lam)
    return (row * lam) @ col.T


def sample_counts(rng, row_factors, col_factors, lam) -> np.ndarray:
    """Latent counts m_ijk ~ Poisson(row_ik col_jk lam_k), independent; shape (I, J, T), int64.

    The edge partition of Eq. (1): m_ij. = sum_k m_ijk is then
    Poisson(sum_k row_ik col_jk lam_k). Dense, so I * J * T must stay below
    ``MAX_DENSE``. Derived in ``chapters/01_epm``.
    """
    rng = _generator(rng)
    row, col, lam = _factors(row_factors, col_factors, lam)
    I, J, T = row.shape[0], col.shape[0], lam.shape[0]
    if I * J * T > MAX_DENSE:
        raise ValueError(
            f"I * J * T = {I * J * T} latent counts exceed MAX_DENSE = {MAX_DENSE}; "
            "sample_counts is a dense simulator for small and medium sizes")
    rates = row[:, None, :] * col[None, :, :] * lam[None, None, :]
    return rng.poisson(rates).astype(np.int64, copy=False)


def binarize(m) -> np.ndarray:
    """The observed matrix x_ij = 1(m_ij. >= 1) of Eq. (1), as int8.

    ``m`` is the (I, J, T) array of m_ijk (summed over atoms here) or an
    (I, J) array of totals m_ij.; counts must be non-negative integers.
    Derived in ``chapters/01_epm``.
    """
    arr = np.asarray(m)
    if arr.ndim not in (2, 3):
        raise ValueError(f"m must be an (I, J, T) array of m_ijk or an (I, J) array of m_ij., got shape {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"m must hold non-negative integer counts, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        raise ValueError("m must hold non-negative integer counts; found non-integer or non-finite values")
    if np.any(arr < 0):
        raise ValueError(f"m must be non-negative; found {int((arr < 0).sum())} negative entries")
    totals = arr.sum(axis=2) if arr.ndim == 3 else arr
    return (totals >= 1).astype(np.int8)
