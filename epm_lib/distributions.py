"""Numba building blocks of the samplers (derived in ``chapters/10_building_blocks``).

Every function here is an ``@njit(cache=True)`` kernel that takes a
``numpy.random.Generator`` as its first argument, so that one generator,
seeded once by ``epm_lib.fit(seed=...)``, drives a whole run and reruns are
bit-identical. Each is exact (no approximation) unless its docstring says
otherwise, and is tested against its exact law in ``tests/test_distributions.py``.

- ``sample_ztp``: zero-truncated Poisson, Eq. (10) (Appendix A).
- ``sample_crt``: Chinese restaurant table / Antoniak counts, Eqs. (24), (26).
- ``sample_categorical``, ``partition_count``: multinomial partition, Eq. (11).
- ``sample_log_gamma``, ``sample_gamma``, ``sample_log_beta``,
  ``sample_dirichlet``: gamma, beta and Dirichlet draws that stay finite and
  positive for tiny shapes (Eqs. (30), (31), (32)).
- ``sample_log_weights``: one draw from unnormalised log weights (grid Gibbs,
  Eq. (28), Appendix B).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "TINY", "sample_ztp", "sample_crt", "sample_categorical", "partition_count",
    "sample_log_gamma", "sample_gamma", "sample_log_beta", "sample_dirichlet",
    "sample_log_weights", "cepm_grid", "draw_many",
]

#: Smallest positive normal double; gamma and Dirichlet draws are floored here
#: so that logs and ratios of them stay finite (see ``sample_gamma``).
TINY = np.finfo(np.float64).tiny


#: 1 - 1e-15: ``sample_ztp`` returns 1 at once for a uniform below this - rate/2 (< p_1)
_ZTP_ONE_SURE_A = 1.0 - 1e-15


@njit(cache=True)
def sample_ztp(rng, rate):
    """One draw of the zero-truncated Poisson, P(k) = rate^k e^-rate / (k! (1 - e^-rate)), k >= 1.

    For rate < 1 it inverts the cdf, with p_1 = rate / expm1(rate) computed
    without cancellation, so a rate of 1e-12 gives 1 (as it should, with
    probability 1 - 5e-13). Most uniforms fall below p_1 > 1 - rate/2 (its series
    1 - x/2 + x^2/12 - ..., above 1 - x/2 on 0 < x < 1): below 1 - rate/2 - 1e-15 (room
    for the few ulps by which the computed p_1 can miss the exact one) the draw is 1 without
    computing p_1, the same draw as the inversion's. For rate >= 1 it draws Poisson(rate) until the
    draw is positive (acceptance >= 1 - 1/e), which stays fast for rates of
    1e4 and beyond. A rate <= 0 returns 1, the limit as rate -> 0.
    A rate that is NaN, infinite or above 9.2e18 (past int64; numba's
    Poisson then returns 0 or INT64_MIN, so the loop would never end)
    raises ValueError.
    """
    if rate < 1.0:
        if rate <= 0.0:
            return 1
        u = rng.random()
        if u < _ZTP_ONE_SURE_A - 0.5 * rate:    # below p_1 for sure: 1, without the expm1
            return 1
        k = 1
        p = rate / math.expm1(rate)
        cum = p
        while u > cum and p > 0.0:
            k += 1
            p *= rate / k
            cum += p
        return k
    if not rate <= 9.2e18:
        raise ValueError("sample_ztp: rate is NaN, infinite or above 9.2e18")
    while True:
        k = rng.poisson(rate)
        if k > 0:
            return k


@njit(cache=True)
def sample_crt(rng, n, r):
    """Number of tables after n customers of a CRP with concentration r: CRT(n, r) = Antoniak(n, r).

    w = sum_{p=1}^n Bernoulli(r / (r + p - 1)) (Appendix A); exact, O(n).
    Returns 0 for n = 0; the first customer always opens a table.
    """
    if n <= 0:
        return 0
    w = 1
    for p in range(1, n):
        if rng.random() * (r + p) < r:
            w += 1
    return w


@njit(cache=True)
def sample_categorical(rng, weights, total):
    """Index k drawn with probability weights[k] / total (weights >= 0, total = their sum > 0)."""
    u = rng.random() * total
    K = weights.shape[0]
    cum = 0.0
    for k in range(K):
        cum += weights[k]
        if u < cum:
            return k
    # rounding put u at the very top: return the last atom with positive weight
    for k in range(K - 1, -1, -1):
        if weights[k] > 0.0:
            return k
    return K - 1


@njit(cache=True)
def partition_count(rng, n, weights, total, out):
    """Multinomial(n; weights/total) partition of a count over atoms, added into ``out``.

    Eq. (11) (Appendix A): the n customers of an entry are seated one by one,
    each independently on atom k with probability weights[k]/total, which is
    exactly the multinomial law. ``out`` (int64, same length) is incremented.
    """
    for _ in range(n):
        out[sample_categorical(rng, weights, total)] += 1


@njit(cache=True)
def sample_log_gamma(rng, shape):
    """log of a Gamma(shape, 1) draw, exact and finite for any shape > 0.

    For shape < 1 it uses G(a) = G(a + 1) U^(1/a) (the shape-boosting
    identity, Marsaglia and Tsang 2000), i.e. log G = log G(a + 1) + log(U)/a,
    which never underflows even for a = 1e-3, where half of all Gamma(a, 1)
    draws are below 1e-308.
    """
    if shape >= 1.0:
        return math.log(rng.standard_gamma(shape))
    u = rng.random()
    while u <= 0.0:
        u = rng.random()
    return math.log(rng.standard_gamma(shape + 1.0)) + math.log(u) / shape


@njit(cache=True)
def sample_gamma(rng, shape, rate):
    """A Gamma(shape, rate) draw (rate parameterisation, mean shape/rate), floored at ``TINY``.

    Exact except that values below 2.2e-308 (which, in double precision,
    would be zero or subnormal) are returned as 2.2e-308, so that the
    samplers never divide by zero or take log(0). (numpy's generator is exact
    down to underflow; use ``sample_log_gamma`` when the log of a tiny draw matters.)
    """
    g = rng.standard_gamma(shape) / rate
    return g if g > TINY else TINY


@njit(cache=True)
def sample_log_beta(rng, a, b):
    """log of a Beta(a, b) draw, computed as log G_a - log(G_a + G_b) in log space (finite for tiny a, b)."""
    la = sample_log_gamma(rng, a)
    lb = sample_log_gamma(rng, b)
    mx = la if la > lb else lb
    return la - (mx + math.log(math.exp(la - mx) + math.exp(lb - mx)))


@njit(cache=True, inline="always")
def _standard_gamma_small(rng, shape, inv_shape, one_minus_shape):
    """``rng.standard_gamma(shape)`` for 0 < shape < 1, given ``inv_shape`` = 1/shape and
    ``one_minus_shape`` = 1 - shape.

    The rejection loop of numpy's generator for shapes below 1 (``random_standard_gamma``, as
    numba compiles it), with the generator's own ``random`` and ``standard_exponential`` draws,
    written out so that the division 1/shape is made once for many draws at the same shape: the
    draws are bit-identical to ``standard_gamma``.
    """
    while True:
        U = rng.random()
        V = rng.standard_exponential()
        if U <= one_minus_shape:
            X = pow(U, inv_shape)
            if X <= V:
                return X
        else:
            Y = -np.log((1 - U) / shape)
            X = pow(one_minus_shape + shape * Y, inv_shape)
            if X <= (V + Y):
                return X


@njit(cache=True)
def _standard_gamma_bc(rng, b, c):
    """``rng.standard_gamma(shape)`` for shape > 1, given b = shape - 1/3 and c = 1/sqrt(9 b).

    The Marsaglia-Tsang loop of numpy's generator (``random_standard_gamma``, as numba
    compiles it), written out so that b and c, a square root and a division, can be computed
    once for many draws at the same shape: the draws are bit-identical to ``standard_gamma``.
    """
    while True:
        while True:
            X = rng.standard_normal()
            V = 1.0 + c * X
            if V > 0.0:
                break
        V = V * V * V
        U = rng.random()
        if U < 1.0 - 0.0331 * (X * X) * (X * X):
            return b * V
        if math.log(U) < 0.5 * X * X + b * (1. - V + math.log(V)):
            return b * V


@njit(cache=True)
def sample_dirichlet(rng, alpha, out):
    """Dirichlet(alpha) draw written into ``out``; robust to tiny concentrations.

    Draws log-gammas, normalises with log-sum-exp and floors each component
    at ``TINY`` (Eqs. (30), (31), Appendix C). The floor only moves
    components that are below 2.2e-308, so the draw sums to 1 to within
    rounding and has no exact zeros. Each log-gamma is exactly
    ``sample_log_gamma(rng, alpha[k])``; for concentrations below 1 (in the
    samplers mostly the same value, alpha plus a zero count) the constants of
    the boosted Gamma(alpha + 1) draw are computed once per run of equal values.
    """
    K = alpha.shape[0]
    mx = -np.inf
    last = -1.0
    b = 0.0
    c = 0.0
    for k in range(K):
        a = alpha[k]
        s1 = a + 1.0
        if a >= 1.0 or s1 == 1.0:          # the general path (s1 == 1: numpy's exponential branch)
            lg = sample_log_gamma(rng, a)
        else:                               # as sample_log_gamma: G(a) = G(a + 1) U^(1/a)
            u = rng.random()
            while u <= 0.0:
                u = rng.random()
            if s1 != last:
                last = s1
                b = s1 - 1. / 3.
                c = 1. / math.sqrt(9 * b)
            lg = math.log(_standard_gamma_bc(rng, b, c)) + math.log(u) / a
        out[k] = lg
        if lg > mx:
            mx = lg
    s = 0.0
    for k in range(K):
        out[k] = math.exp(out[k] - mx)
        s += out[k]
    for k in range(K):
        v = out[k] / s
        out[k] = v if v > TINY else TINY


@njit(cache=True)
def sample_log_weights(rng, logw):
    """Index k drawn with probability proportional to exp(logw[k]) (grid Gibbs, Appendix B)."""
    K = logw.shape[0]
    mx = -np.inf
    for k in range(K):
        if logw[k] > mx:
            mx = logw[k]
    w = np.empty(K)
    total = 0.0
    for k in range(K):
        w[k] = math.exp(logw[k] - mx)
        total += w[k]
    return sample_categorical(rng, w, total)


def cepm_grid():
    """The grid of Appendix B: a such that 1/(1 + a) = 0.01, 0.02, ..., 0.99 (so a from 99 down to 1/99)."""
    g = np.arange(1, 100) / 100.0
    return 1.0 / g - 1.0


def draw_many(kernel, rng, *args, size):
    """``size`` independent draws of a scalar numba kernel ``kernel(rng, *args)`` as an array, one Python
    call each (about 10 us): how the building-block chapters and tests sample a kernel's distribution."""
    return np.array([kernel(rng, *args) for _ in range(size)])
