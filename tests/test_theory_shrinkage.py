"""Tests of the shrinkage closed forms of epm_lib.theory (Theorem 2, ``chapters/03_theorem2``).

``expected_atoms_above``, ``expected_active_atoms`` and ``epm_expected_active_atoms``
are checked against brute-force quadrature (independent adaptive integration of
the same expectations), against Monte Carlo forward simulation, in their
T -> inf limits, and for argument validation.

Monte Carlo checks compare a sample mean with the exact value using the sample
standard error and a tolerance of 5 SE (as ``tests/test_simulate.py``): for
the fixed seeds the tests are deterministic, and for a fresh seed a correct
formula fails one check with probability about 6e-7 (normal approximation,
good at these sample sizes).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from epm_lib import simulate as sim
from epm_lib import theory

Z = 5.0  # tolerance in standard errors


def check_mc(samples, exact, label=""):
    samples = np.asarray(samples, dtype=float)
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    assert abs(samples.mean() - exact) < Z * se, f"{label}: MC {samples.mean()} vs exact {exact} (SE {se})"


# ----------------------------------------------------------------------------- brute-force references
def brute_atoms_above(eps, gamma0, c0, T):
    """T * P(lambda > eps), lambda ~ Gamma(gamma0/T, c0), by adaptive quadrature of the density."""
    a = gamma0 / T
    dens = lambda x: math.exp(a * math.log(c0) + (a - 1.0) * math.log(x) - c0 * x - special.gammaln(a))
    return T * integrate.quad(dens, eps, np.inf, epsabs=0.0, epsrel=1e-12, limit=400)[0]


def brute_levy_tail(eps, gamma0, c0):
    """nu((eps, inf)) for the Levy measure nu(dx) = gamma0 x^-1 e^(-c0 x) dx."""
    return integrate.quad(lambda x: gamma0 * math.exp(-c0 * x) / x, eps, np.inf,
                          epsabs=0.0, epsrel=1e-12, limit=400)[0]


def brute_active(gamma0, c0, T, s):
    """T * (1 - E[exp(-lambda s)]), by quadrature of the gamma density in u = ln(lambda)."""
    a = gamma0 / T
    f = lambda u: math.exp(a * (u + math.log(c0)) - c0 * math.exp(u) - special.gammaln(a)) * -math.expm1(-s * math.exp(u))
    lo = math.log(max(stats.gamma.ppf(1e-16, a, scale=1 / c0), 1e-300))
    hi = math.log(stats.gamma.isf(1e-16, a, scale=1 / c0))
    return T * integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=500)[0]


def _log_bounds(shape):
    lo, hi = stats.gamma.ppf(1e-15, shape), stats.gamma.isf(1e-15, shape)
    return (math.log(lo) if lo > 1e-300 else -690.0), math.log(hi)


def brute_epm_active(I, J, T, a1, b1, a2, b2, gamma0, c0):
    """Nested adaptive quadrature of E[h(ln X + ln Y)], X ~ Gamma(I a1, 1), Y ~ Gamma(J a2, 1)."""
    alpha, beta = I * a1, J * a2
    log_theta = math.log(b1 * b2 * c0)

    def h(log_xy):
        L = float(np.logaddexp(0.0, log_xy - log_theta))
        return gamma0 * L if math.isinf(T) else -T * math.expm1(-(gamma0 / T) * L)

    dens = lambda s, u: math.exp(s * u - math.exp(u) - special.gammaln(s))
    bx, by = _log_bounds(alpha), _log_bounds(beta)
    inner = lambda u: integrate.quad(lambda v: dens(beta, v) * h(u + v), *by,
                                     epsabs=0.0, epsrel=1e-12, limit=500)[0]
    return integrate.quad(lambda u: dens(alpha, u) * inner(u), *bx, epsabs=0.0, epsrel=1e-11, limit=500)[0]


# ----------------------------------------------------------------------------- expected_atoms_above
@pytest.mark.parametrize("eps,gamma0,c0,T", [
    (0.01, 5.0, 1.0, 10), (0.01, 5.0, 1.0, 100000), (1e-4, 0.3, 2.5, 7),
    (2.0, 40.0, 0.5, 3), (0.05, 1e-3, 10.0, 1000),
])
def test_atoms_above_matches_quadrature(eps, gamma0, c0, T):
    exact = theory.expected_atoms_above(eps, gamma0, c0, T)
    assert exact == pytest.approx(brute_atoms_above(eps, gamma0, c0, T), rel=1e-9)


@pytest.mark.parametrize("eps,gamma0,c0", [(0.01, 5.0, 1.0), (1e-5, 0.2, 3.0), (3.0, 50.0, 0.1)])
def test_atoms_above_limit_is_levy_tail(eps, gamma0, c0):
    limit = theory.expected_atoms_above(eps, gamma0, c0, math.inf)
    assert limit == pytest.approx(gamma0 * special.exp1(c0 * eps), rel=1e-14)
    assert limit == pytest.approx(brute_levy_tail(eps, gamma0, c0), rel=1e-9)
    # finite T approaches the limit at rate O(1/T)
    gaps = [abs(theory.expected_atoms_above(eps, gamma0, c0, T) - limit) for T in (10**3, 10**5, 10**7)]
    assert gaps[1] < gaps[0] / 50 and gaps[2] < gaps[1] / 50
    assert gaps[2] < 1e-5 * limit


def test_atoms_above_linear_when_gamma0_scales_with_T():
    eps, g_hat, c0 = 0.01, 0.5, 1.0
    per_atom = special.gammaincc(g_hat, c0 * eps)
    for T in (1, 10, 1000, 10**6):
        assert theory.expected_atoms_above(eps, T * g_hat, c0, T) == pytest.approx(T * per_atom, rel=1e-13)


@pytest.mark.parametrize("gamma0,T", [(5.0, 50), (5.0, 2000), (100.0, 200)])
def test_atoms_above_monte_carlo(gamma0, T):
    rng = np.random.default_rng(20170 + T)
    eps, c0, R = 0.01, 1.0, 4000
    lam = rng.gamma(gamma0 / T, 1.0 / c0, size=(R, T))
    check_mc((lam > eps).sum(axis=1), theory.expected_atoms_above(eps, gamma0, c0, T), f"T={T}")


# ----------------------------------------------------------------------------- expected_active_atoms
@pytest.mark.parametrize("gamma0,c0,T,s", [
    (5.0, 1.0, 10, 1.0), (4.5, 0.01, 1000, 1.0), (0.3, 2.0, 3, 7.5), (50.0, 0.5, 100000, 0.02),
])
def test_active_matches_quadrature(gamma0, c0, T, s):
    exact = theory.expected_active_atoms(gamma0, c0, T, exposure=s)
    assert exact == pytest.approx(brute_active(gamma0, c0, T, s), rel=1e-9)
    assert exact == pytest.approx(T * (1.0 - (c0 / (c0 + s)) ** (gamma0 / T)), rel=1e-9)


def test_active_limit_monotone_and_bound():
    gamma0, c0, s = 5.0, 0.1, 2.0
    limit = theory.expected_active_atoms(gamma0, c0, math.inf, exposure=s)
    x = gamma0 * math.log1p(s / c0)
    assert limit == pytest.approx(x, rel=1e-15)
    # the Levy-measure (Frullani) integral of 1 - exp(-lambda s)
    levy = integrate.quad(lambda t: gamma0 * -math.expm1(-s * t) * math.exp(-c0 * t) / t, 0, np.inf,
                          epsabs=0.0, epsrel=1e-12, limit=400)[0]
    assert limit == pytest.approx(levy, rel=1e-9)
    values = [theory.expected_active_atoms(gamma0, c0, T, exposure=s) for T in (1, 2, 5, 10, 100, 10**4, 10**10)]
    assert all(v1 < v2 for v1, v2 in zip(values, values[1:]))           # increasing in T
    for T, v in zip((1, 2, 5, 10, 100, 10**4, 10**10), values):
        assert v < limit and limit - v <= x**2 / (2 * T) * (1 + 1e-12)  # 0 < gap <= x^2 / (2T)
    assert values[-1] == pytest.approx(limit, rel=1e-8)


def test_active_linear_when_gamma0_scales_with_T():
    g_hat, c0, s = 0.5, 1.0, 1.0
    per_atom = 1.0 - (c0 / (c0 + s)) ** g_hat
    for T in (1, 10, 1000, 10**6):
        assert theory.expected_active_atoms(T * g_hat, c0, T, exposure=s) == pytest.approx(T * per_atom, rel=1e-12)


@pytest.mark.parametrize("gamma0,c0,T,s", [(5.0, 1.0, 100, 1.0), (3.0, 0.05, 500, 0.4), (40.0, 1.0, 40, 3.0)])
def test_active_monte_carlo(gamma0, c0, T, s):
    rng = np.random.default_rng(7 + T)
    R = 4000
    lam = rng.gamma(gamma0 / T, 1.0 / c0, size=(R, T))
    n = rng.poisson(lam * s)
    check_mc((n > 0).sum(axis=1), theory.expected_active_atoms(gamma0, c0, T, exposure=s), f"T={T}")


def test_depm_active_monte_carlo_full_forward_simulation():
    """DEPM prior + dense latent counts: m_..k > 0 has the exposure-1 law (Lemma 1)."""
    rng = np.random.default_rng(31)
    I, J, T, gamma0, c0, R = 6, 5, 40, 4.0, 0.2, 1500
    active = np.empty(R)
    for r in range(R):
        d = sim.sample_depm_prior(rng, I, J, T, 0.5, 2.0, gamma0, c0)
        m = sim.sample_counts(rng, d["phi"], d["psi"], d["lam"])
        active[r] = (m.sum(axis=(0, 1)) > 0).sum()
    check_mc(active, theory.expected_active_atoms(gamma0, c0, T), "DEPM")


# ----------------------------------------------------------------------------- epm_expected_active_atoms
EPM_CASES = [
    (30, 30, 100, 1.0, 30.0, 1.0, 30.0, 4.5, 0.01),
    (5, 7, 10, 0.3, 2.0, 2.0, 0.5, 3.0, 1.5),
    (30, 30, 1000, 1.0, 3333.3, 1.0, 30.0, 500.0, 0.01),
    (3, 2, math.inf, 0.1, 1.0, 0.05, 2.0, 2.0, 0.7),
    (50, 40, 7, 2.0, 0.1, 3.0, 5.0, 1e-3, 10.0),
    (1, 1, 20, 0.02, 1.0, 0.5, 0.01, 2.0, 1.0),
]


@pytest.mark.parametrize("args", EPM_CASES)
def test_epm_active_matches_nested_quadrature(args):
    assert theory.epm_expected_active_atoms(*args) == pytest.approx(brute_epm_active(*args), rel=1e-9)


@pytest.mark.parametrize("I,J,T,a1,b1,a2,b2,gamma0,c0", [
    (6, 5, 30, 0.7, 1.5, 1.2, 3.0, 4.0, 0.3),
    (8, 8, 60, 1.0, 0.2, 0.5, 4.0, 60.0, 1.0),     # gamma0 = T * 1: the i.i.d. regime of Theorem 2
])
def test_epm_active_monte_carlo_full_forward_simulation(I, J, T, a1, b1, a2, b2, gamma0, c0):
    rng = np.random.default_rng(2017 + T)
    R = 1500
    active = np.empty(R)
    for r in range(R):
        d = sim.sample_epm_prior(rng, I, J, T, a1, b1, a2, b2, gamma0, c0)
        m = sim.sample_counts(rng, d["U"], d["V"], d["lam"])
        active[r] = (m.sum(axis=(0, 1)) > 0).sum()
    check_mc(active, theory.epm_expected_active_atoms(I, J, T, a1, b1, a2, b2, gamma0, c0), f"EPM T={T}")


def test_epm_active_reduces_to_fixed_exposure():
    # I a1 and J a2 huge with I a1 / b1 = J a2 / b2 = 1: the exposure is 1 up to O(1/sqrt(I a1))
    gamma0, c0, T = 3.0, 0.2, 50
    near = theory.epm_expected_active_atoms(1, 1, T, 1e8, 1e8, 1e8, 1e8, gamma0, c0)
    assert near == pytest.approx(theory.expected_active_atoms(gamma0, c0, T), rel=1e-6)


def test_epm_active_limit_monotone_and_total_count_bound():
    I, J, a1, b1, a2, b2, gamma0, c0 = 10, 12, 0.5, 2.0, 2.0, 1.0, 6.0, 0.05
    limit = theory.epm_expected_active_atoms(I, J, math.inf, a1, b1, a2, b2, gamma0, c0)
    values = [theory.epm_expected_active_atoms(I, J, T, a1, b1, a2, b2, gamma0, c0)
              for T in (1, 3, 10, 100, 10**4, 10**10)]
    assert all(v1 < v2 for v1, v2 in zip(values, values[1:])) and values[-1] < limit
    assert values[-1] == pytest.approx(limit, rel=1e-7)
    # active atoms <= total count M, and E[M] = I J x (Theorem 1's mean)
    assert limit < I * J * theory.epm_intensity_mean(a1, b1, a2, b2, gamma0, c0)


def test_epm_theorem2_family_tends_to_expected_total_count():
    # gamma0 = T * g_hat, a1/b1 scaled down to keep the intensity mean C fixed: E[#active] -> I J C
    I, J, C, c0, g_hat = 30, 30, 0.5, 0.01, 0.5
    values = []
    for T in (10, 1000, 10**5, 10**7):
        gamma0 = T * g_hat
        b1 = I * gamma0 / (I * J * C * c0)           # a1 = a2 = 1, b2 = J
        assert theory.epm_intensity_mean(1.0, b1, 1.0, J, gamma0, c0) == pytest.approx(C, rel=1e-12)
        values.append(theory.epm_expected_active_atoms(I, J, T, 1.0, b1, 1.0, J, gamma0, c0))
    assert all(v1 < v2 for v1, v2 in zip(values, values[1:]))
    assert values[-1] < I * J * C and values[-1] == pytest.approx(I * J * C, rel=1e-3)


# ----------------------------------------------------------------------------- validation
BAD_POSITIVE = [0.0, -1.0, math.nan, math.inf, True, "1", None]
BAD_T = [0, -3, 2.5, True, -math.inf, math.nan, "10", None, 1.0]


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_invalid_real_arguments(bad):
    with pytest.raises(ValueError):
        theory.expected_atoms_above(bad, 1.0, 1.0, 10)
    with pytest.raises(ValueError):
        theory.expected_atoms_above(0.1, bad, 1.0, 10)
    with pytest.raises(ValueError):
        theory.expected_atoms_above(0.1, 1.0, bad, 10)
    with pytest.raises(ValueError):
        theory.expected_active_atoms(bad, 1.0, 10)
    with pytest.raises(ValueError):
        theory.expected_active_atoms(1.0, bad, 10)
    with pytest.raises(ValueError):
        theory.expected_active_atoms(1.0, 1.0, 10, exposure=bad)
    for pos in range(3, 9):
        args = [3, 4, 10, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
        args[pos] = bad
        with pytest.raises(ValueError):
            theory.epm_expected_active_atoms(*args)


@pytest.mark.parametrize("bad", BAD_T)
def test_invalid_truncation(bad):
    with pytest.raises(ValueError):
        theory.expected_atoms_above(0.1, 1.0, 1.0, bad)
    with pytest.raises(ValueError):
        theory.expected_active_atoms(1.0, 1.0, bad)
    with pytest.raises(ValueError):
        theory.epm_expected_active_atoms(3, 4, bad, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)


@pytest.mark.parametrize("I,J", [(0, 3), (3, 0), (2.0, 3), (3, True), (-1, 2)])
def test_invalid_sizes(I, J):
    with pytest.raises(ValueError):
        theory.epm_expected_active_atoms(I, J, 10, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)


def test_numpy_integer_T_accepted_and_exported():
    assert theory.expected_active_atoms(2.0, 1.0, np.int64(10)) == theory.expected_active_atoms(2.0, 1.0, 10)
    assert theory.expected_atoms_above(0.1, 2.0, 1.0, np.inf) == theory.expected_atoms_above(0.1, 2.0, 1.0, math.inf)
    for name in ("expected_atoms_above", "expected_active_atoms", "epm_expected_active_atoms"):
        assert name in theory.__all__
