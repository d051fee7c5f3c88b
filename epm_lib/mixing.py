"""How well a single chain mixes: the integrated autocorrelation time and effective sample size of a
trace (chapters ``24_convergence_mixing``, which derives and checks the estimator, and
``24b_chains_agree``, which sets it beside ArviZ's).

For a stationary chain y_1..y_n with autocorrelations rho_t, Var(mean) ~ sigma^2 tau / n with
tau = 1 + 2 sum_{t>=1} rho_t and ESS = n / tau. The sum is cut by Geyer's (1992) initial monotone
sequence: the sums of adjacent pairs Gamma_m = rho_2m + rho_2m+1 are kept up to the last positive one
and replaced by their running minimum; tau = 2 sum_m Gamma_m - 1. A constant trace has no tau (NaN).
(Several chains, rank-normalised: ``epm_lib.chains.diagnostics``, ArviZ.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["iat", "ess"]


def iat(y):
    # integrated autocorrelation time, Geyer's initial monotone sequence; NaN for a constant trace
    y = np.asarray(y, dtype=float) - np.mean(y)
    n = y.size
    if not np.any(y):
        return float("nan")
    f = np.fft.rfft(y, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[:n]
    rho = acov / acov[0]
    gam = rho[0:n - 1:2] + rho[1:n:2]              # Gamma_m = rho_2m + rho_2m+1
    stop = np.flatnonzero(gam <= 0)
    gam = gam[:stop[0]] if stop.size else gam       # initial positive sequence
    gam = np.minimum.accumulate(gam)                # initial monotone sequence
    return float(2 * gam.sum() - 1)


def ess(y):
    # effective sample size n / tau
    return len(y) / iat(y)
