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
objective at every step and converges to its maximum (the objective is concave in w).
"""
from __future__ import annotations

import numpy as np

__all__ = ["stacking_weights", "log_score"]


def log_score(probs, labels, weights) -> float:
    """Mean log predictive density of the 0/1 ``labels`` under the mixture ``probs @ weights``
    (``probs``: (n, chains) probabilities of a one)."""
    y = np.asarray(labels) != 0
    p = np.asarray(probs, float) @ np.asarray(weights, float)
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
    dens = np.maximum(dens, 1e-300)
    k = P.shape[1]
    w = np.full(k, 1.0 / k)
    prev = -np.inf
    for _ in range(max_iter):
        mix = dens @ w
        obj = float(np.mean(np.log(mix)))
        w = w * (dens / mix[:, None]).mean(axis=0)
        w /= w.sum()
        if obj - prev <= tol * max(1.0, abs(obj)):
            break
        prev = obj
    return w
