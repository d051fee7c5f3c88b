"""``epm_lib.stacking``: weights for chains that do not mix (Yao, Vehtari & Gelman 2022).

When chains from different starts settle in different regions and no sampler crosses between
them (MovieLens, chapters 24-25), their pooled draws are no posterior sample, and the chain
with the highest likelihood need not predict best. Stacking (Yao, Vehtari & Gelman 2022,
"Stacking for non-mixing Bayesian computations: the curse and blessing of multimodal
posteriors", JMLR 23(79)) combines the chains' predictive distributions with weights w on the
simplex that maximise the log score on data the chains did not see:

    max_w  sum_n log sum_c w_c p_c(y_n),    w_c >= 0, sum_c w_c = 1,

a concave problem. They score by leave-one-out; here the validation points are held-out
entries of the matrix (pairs left out of every chain's likelihood, ``fit(mask=...)``, and other
than the pairs the stacked prediction is then scored on). The weights are found by the EM
iteration for mixture weights, w_c <- mean_n w_c p_cn / sum_c' w_c' p_c'n, which increases the
objective at every step and converges to its maximum (the objective is concave in w); for two
chains (or two regions), the common case, the one free weight is found exactly, by bisection on
the objective's derivative.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stacking_weights", "log_score", "check_weights"]

#: how far the weights' sum may be from 1 (rounding of weights computed elsewhere)
WEIGHT_SUM_TOL = 1e-6


def check_weights(weights, n, per="chain") -> np.ndarray:
    """``weights`` as a float array if they are a sequence (list, tuple, 1-d array) of ``n`` finite
    non-negative numbers, one per ``per``, summing to 1 within ``WEIGHT_SUM_TOL``; else a
    ``ValueError`` saying so and what was wrong (a mixture with weights off the simplex is no
    predictive distribution: its log score was NaN or meaningless)."""
    from collections.abc import Mapping
    head = (f"weights must be {n} non-negative numbers, one per {per}, summing to 1, as a sequence (a "
            f"list, tuple or 1-d array, e.g. stacking_weights' answer, or [1/{n}] * {n} for equal weights)")
    if isinstance(weights, (str, bytes, Mapping)):
        raise ValueError(f"{head}; got a {type(weights).__name__}: {weights!r}")
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{head}; got {weights!r}") from None
    if w.shape != (n,):
        raise ValueError(f"{head}; got shape {w.shape}: {weights!r}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{head}; got a negative or non-finite weight: {weights!r}")
    if abs(w.sum() - 1.0) > WEIGHT_SUM_TOL:
        raise ValueError(f"{head}; they sum to {w.sum():.6g}, not 1: {weights!r}")
    return w


def log_score(probs, labels, weights) -> float:
    """Mean log predictive density of the 0/1 ``labels`` under the mixture ``probs @ weights``
    (``probs``: (n, chains) probabilities of a one; ``weights``: one per column, on the simplex,
    :func:`check_weights`)."""
    y = np.asarray(labels) != 0
    P = np.asarray(probs, float)
    if P.ndim != 2:
        raise ValueError(f"probs must be an (n, chains) array of probabilities, got shape {P.shape}")
    p = P @ check_weights(weights, P.shape[1], "column of probs")
    return float(np.mean(np.log(np.where(y, p, 1.0 - p))))


def stacking_weights(probs, labels, max_iter=10_000, tol=1e-12) -> np.ndarray:
    """Stacking weights (module docstring) of chains whose predicted probabilities of a one at n
    validation entries are the columns of ``probs`` (n, chains); ``labels`` the entries' 0/1
    values. Returns the weights (chains,), non-negative, summing to 1."""
    P = np.asarray(probs, dtype=float)
    y = np.asarray(labels)
    if P.ndim != 2 or P.shape[0] != y.shape[0] or P.shape[0] == 0:
        raise ValueError(f"probs must be (n, chains) with n = len(labels) > 0, got {P.shape} and {y.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0) or np.any(P > 1):
        raise ValueError("probs must be probabilities in [0, 1]")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("labels must be 0 or 1")
    dens = np.where(y[:, None] != 0, P, 1.0 - P)            # p_c(y_n)
    dens = np.ascontiguousarray(np.maximum(dens, 1e-300))
    k = P.shape[1]
    if k == 2:                              # one free weight: the exact maximum (_two_weights)
        return _two_weights(dens)
    w = np.full(k, 1.0 / k)
    prev = -np.inf
    acc = np.empty(k)
    for _ in range(max_iter):
        obj = _em_pass(dens, w, acc)        # mean log mixture density; acc = mean_n p_cn / mix_n
        w = w * acc
        w /= w.sum()
        if obj - prev <= tol * max(1.0, abs(obj)):
            break
        prev = obj
    return w


def _two_weights(dens) -> np.ndarray:
    """The maximum for two chains, to rounding: the objective's derivative in the first weight w,
    g(w) = mean_n (p_1n - p_2n) / (p_2n + w (p_1n - p_2n)), is decreasing (the objective is concave),
    so the maximum is at w = 0 if g(0) <= 0, at w = 1 if g(1) >= 0, and otherwise at the root of g,
    found by bisection to the last bit (EM needs thousands of passes when a weight nears 0 or 1)."""
    lo, hi = 0.0, 1.0
    if _slope(dens, lo) <= 0:
        return np.array([0.0, 1.0])
    if _slope(dens, hi) >= 0:
        return np.array([1.0, 0.0])
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if _slope(dens, mid) > 0:
            lo = mid
        else:
            hi = mid
    w = 0.5 * (lo + hi)
    return np.array([w, 1.0 - w])


@njit(cache=True)
def _slope(dens, w):
    """g(w) of ``_two_weights``: the derivative of the mean log score of w p_1 + (1 - w) p_2."""
    n = dens.shape[0]
    g = 0.0
    for i in range(n):
        d = dens[i, 0] - dens[i, 1]
        g += d / (dens[i, 1] + w * d)
    return g / n


@njit(cache=True)
def _em_pass(dens, w, acc):
    """One pass of the EM iteration over the n validation entries: returns the objective
    mean_n log sum_c w_c p_cn at ``w`` and writes mean_n p_cn / sum_c' w_c' p_c'n into ``acc``
    (the factor each weight is multiplied by). One pass and no temporaries: on MovieLens1M's
    220,000 held-out entries the iteration was most of a converged-protocol run's CPU time."""
    n, k = dens.shape
    for c in range(k):
        acc[c] = 0.0
    obj = 0.0
    for i in range(n):
        mix = 0.0
        for c in range(k):
            mix += w[c] * dens[i, c]
        obj += np.log(mix)
        for c in range(k):
            acc[c] += dens[i, c] / mix
    for c in range(k):
        acc[c] /= n
    return obj / n
