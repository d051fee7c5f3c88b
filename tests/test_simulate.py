"""Tests of epm_lib.simulate: shapes, exact moments, Dirichlet columns, CEPM defaults, validation.

Moment checks compare a sample mean (or variance) with its exact value using
the exact standard error of that estimate, computed from the distribution's
own moments, and a tolerance of 5 SE: for a fixed seed the test is
deterministic, and for a fresh seed a correct sampler fails one such check
with probability about 6e-7 (normal approximation, good at these sample sizes).
"""
from __future__ import annotations

import numpy as np
import pytest

from epm_lib import simulate as sim
from epm_lib import theory

Z = 5.0  # tolerance in standard errors


def gamma_moments(shape, rate):
    """Mean, variance and fourth central moment of Gamma(shape, rate)."""
    mean = shape / rate
    var = shape / rate**2
    mu4 = 3.0 * shape * (shape + 2.0) / rate**4
    return mean, var, mu4


def check_mean(x, mean, var, label=""):
    x = np.ravel(x)
    se = np.sqrt(var / x.size)
    assert abs(x.mean() - mean) < Z * se, f"{label}: mean {x.mean()} vs {mean} (SE {se})"


def check_var(x, var, mu4, label=""):
    """Sample variance vs exact; Var(s^2) ~ (mu4 - var^2) / n for large n."""
    x = np.ravel(x)
    se = np.sqrt((mu4 - var**2) / x.size)
    assert abs(x.var(ddof=1) - var) < Z * se, f"{label}: var {x.var(ddof=1)} vs {var} (SE {se})"


# ----------------------------------------------------------------------------- EPM prior
def test_epm_prior_shapes_and_keys():
    d = sim.sample_epm_prior(np.random.default_rng(0), 4, 5, 6, 1.0, 2.0, 0.5, 3.0, 2.0, 1.5)
    assert set(d) == {"U", "V", "lam"}
    assert d["U"].shape == (4, 6) and d["V"].shape == (5, 6) and d["lam"].shape == (6,)
    for v in d.values():
        assert v.dtype == np.float64 and np.all(v >= 0) and np.all(np.isfinite(v))


@pytest.mark.parametrize("a1,b1,a2,b2", [(2.0, 3.0, 0.5, 0.25), (0.1, 0.5, 10.0, 4.0)])
def test_epm_prior_gamma_moments_rate_parameterisation(a1, b1, a2, b2):
    # rates != 1, so a shape/scale mix-up would move the mean by a factor b^2
    d = sim.sample_epm_prior(np.random.default_rng(1), 200, 300, 200, a1, b1, a2, b2, 3.0, 2.0)
    for x, (a, b), lab in ((d["U"], (a1, b1), "U"), (d["V"], (a2, b2), "V")):
        mean, var, mu4 = gamma_moments(a, b)
        check_mean(x, mean, var, lab)
        check_var(x, var, mu4, lab)


def test_gamma_process_moments_and_total():
    # lambda_k ~ Gamma(gamma0/T, c0); sum_k lambda_k ~ Gamma(gamma0, c0) for every T
    gamma0, c0, T, n = 3.0, 2.0, 50, 4000
    rng = np.random.default_rng(2)
    lam = np.array([sim.sample_epm_prior(rng, 1, 1, T, 1.0, 1.0, 1.0, 1.0, gamma0, c0)["lam"] for _ in range(n)])
    mean, var, _ = gamma_moments(gamma0 / T, c0)
    check_mean(lam, mean, var, "lambda_k")
    mean, var, mu4 = gamma_moments(gamma0, c0)
    check_mean(lam.sum(axis=1), mean, var, "sum lambda")
    check_var(lam.sum(axis=1), var, mu4, "sum lambda")


@pytest.mark.slow
def test_epm_intensity_mean_theorem1_small():
    # E[sum_k U_ik V_jk lambda_k] = (a1/b1)(a2/b2)(gamma0/c0); summands are independent across k
    a1, b1, a2, b2, gamma0, c0, T, n = 2.0, 4.0, 3.0, 1.5, 2.0, 0.5, 20, 20000
    rng = np.random.default_rng(3)
    s = np.array([sim.intensity(**_uv(sim.sample_epm_prior(rng, 1, 1, T, a1, b1, a2, b2, gamma0, c0)))[0, 0]
                  for _ in range(n)])
    exact = theory.epm_intensity_mean(a1, b1, a2, b2, gamma0, c0)
    g = gamma0 / T
    var = T * ((a1 * (a1 + 1) / b1**2) * (a2 * (a2 + 1) / b2**2) * (g * (g + 1) / c0**2)
               - (a1 / b1 * a2 / b2 * g / c0) ** 2)
    check_mean(s, exact, var, "intensity")


def _uv(d):
    return {"row_factors": d["U"], "col_factors": d["V"], "lam": d["lam"]}


def test_tiny_shape_gives_finite_draws():
    d = sim.sample_epm_prior(np.random.default_rng(4), 3, 3, 1000, 0.01, 1.0, 0.01, 1.0, 1.0, 1.0)
    assert all(np.all(np.isfinite(v)) and np.all(v >= 0) for v in d.values())


# ----------------------------------------------------------------------------- CEPM prior
def test_cepm_defaults_are_I_and_J():
    I, J, T, a1, a2 = 7, 11, 9, 0.3, 4.0
    got = sim.sample_cepm_prior(np.random.default_rng(5), I, J, T, a1, a2, 2.0, 1.0)
    ref = sim.sample_epm_prior(np.random.default_rng(5), I, J, T, a1, I * a1, a2, J * a2, 2.0, 1.0)
    assert set(got) == {"U", "V", "lam"}
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])


def test_cepm_explicit_constants():
    got = sim.sample_cepm_prior(np.random.default_rng(6), 3, 4, 5, 2.0, 0.5, 1.0, 1.0, C1=2.5, C2=0.2)
    ref = sim.sample_epm_prior(np.random.default_rng(6), 3, 4, 5, 2.0, 5.0, 0.5, 0.1, 1.0, 1.0)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])


@pytest.mark.parametrize("a1", [0.2, 5.0])
def test_cepm_factor_means_free_of_shape(a1):
    I, J = 40, 25
    d = sim.sample_cepm_prior(np.random.default_rng(7), I, J, 500, a1, a1, 1.0, 1.0)
    mean, var, _ = gamma_moments(a1, I * a1)
    check_mean(d["U"], 1.0 / I, var, "U")
    mean, var, _ = gamma_moments(a1, J * a1)
    check_mean(d["V"], 1.0 / J, var, "V")


# ----------------------------------------------------------------------------- DEPM prior
@pytest.mark.parametrize("alpha", [0.001, 0.05, 0.5, 20.0])
def test_depm_columns_on_simplex(alpha):
    d = sim.sample_depm_prior(np.random.default_rng(8), 30, 12, 200, alpha, alpha, 1.0, 1.0)
    assert set(d) == {"phi", "psi", "lam"}
    assert d["phi"].shape == (30, 200) and d["psi"].shape == (12, 200) and d["lam"].shape == (200,)
    for x in (d["phi"], d["psi"]):
        assert np.all(np.isfinite(x)) and np.all(x >= 0)
        np.testing.assert_allclose(x.sum(axis=0), 1.0, rtol=0, atol=1e-12)


def test_depm_single_row_is_one():
    d = sim.sample_depm_prior(np.random.default_rng(9), 1, 3, 4, 0.5, 0.5, 1.0, 1.0)
    np.testing.assert_array_equal(d["phi"], np.ones((1, 4)))


@pytest.mark.parametrize("alpha", [0.1, 2.0])
def test_depm_dirichlet_moments(alpha):
    # marginal phi_ik ~ Beta(alpha, (I-1) alpha): mean 1/I, variance (1/I)(1 - 1/I)/(I alpha + 1)
    I = 8
    d = sim.sample_depm_prior(np.random.default_rng(10), I, I, 20000, alpha, alpha, 1.0, 1.0)
    var = (1 / I) * (1 - 1 / I) / (I * alpha + 1)
    for x, lab in ((d["phi"][0], "phi"), (d["psi"][3], "psi")):   # one row: independent across columns
        check_mean(x, 1 / I, var, lab)


# ----------------------------------------------------------------------------- counts, links
def test_intensity_matches_einsum():
    rng = np.random.default_rng(11)
    U, V, lam = rng.random((4, 3)), rng.random((5, 3)), rng.random(3)
    np.testing.assert_allclose(sim.intensity(U, V, lam), np.einsum("ik,jk,k->ij", U, V, lam), rtol=1e-14)


@pytest.mark.slow
def test_sample_counts_shape_dtype_and_means():
    rng = np.random.default_rng(12)
    U, V, lam = rng.gamma(1.0, 1.0, (3, 4)), rng.gamma(1.0, 1.0, (2, 4)), rng.gamma(1.0, 1.0, 4)
    n = 20000
    m = np.array([sim.sample_counts(rng, U, V, lam) for _ in range(n)])
    assert m.shape == (n, 3, 2, 4) and m.dtype == np.int64
    rate = U[:, None, :] * V[None, :, :] * lam
    se = np.sqrt(rate / n)                       # Poisson: variance = mean
    assert np.all(np.abs(m.mean(axis=0) - rate) < Z * se + 1e-12)


@pytest.mark.slow
def test_noisy_or_link_probability():
    # P(x_ij = 1 | U, V, lambda) = 1 - exp(-intensity): binomial SE per entry, 5 SE (12 entries)
    rng = np.random.default_rng(13)
    U, V, lam = rng.gamma(0.5, 1.0, (3, 5)), rng.gamma(0.5, 1.0, (4, 5)), rng.gamma(0.5, 1.0, 5)
    n = 20000
    freq = np.mean([sim.binarize(sim.sample_counts(rng, U, V, lam)) for _ in range(n)], axis=0)
    p = 1.0 - np.exp(-sim.intensity(U, V, lam))
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) < Z * se + 1e-12)


def test_binarize_exact():
    m = np.zeros((2, 3, 2), dtype=np.int64)
    m[0, 1, 0] = 2
    m[1, 2, 1] = 1
    m[1, 0, :] = 1
    X = sim.binarize(m)
    assert X.dtype == np.int8
    np.testing.assert_array_equal(X, [[0, 1, 0], [1, 0, 1]])
    np.testing.assert_array_equal(sim.binarize(m.sum(axis=2)), X)
    np.testing.assert_array_equal(sim.binarize(m.astype(float)), X)


def test_zero_factor_gives_zero_counts():
    m = sim.sample_counts(np.random.default_rng(14), np.zeros((2, 3)), np.ones((2, 3)), np.ones(3))
    assert not m.any() and not sim.binarize(m).any()


# ----------------------------------------------------------------------------- validation
GOOD_EPM = dict(I=2, J=3, T=4, a1=1.0, b1=1.0, a2=1.0, b2=1.0, gamma0=1.0, c0=1.0)


@pytest.mark.parametrize("name", ["a1", "b1", "a2", "b2", "gamma0", "c0"])
@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf, "1", True])
def test_epm_rejects_bad_parameters(name, bad):
    with pytest.raises(ValueError, match=name):
        sim.sample_epm_prior(np.random.default_rng(0), **{**GOOD_EPM, name: bad})


@pytest.mark.parametrize("name", ["I", "J", "T"])
@pytest.mark.parametrize("bad", [0, -2, 2.5, 3.0, True])
def test_rejects_bad_sizes(name, bad):
    with pytest.raises(ValueError, match=name):
        sim.sample_epm_prior(np.random.default_rng(0), **{**GOOD_EPM, name: bad})
    kw = dict(I=2, J=3, T=4, alpha1=1.0, alpha2=1.0, gamma0=1.0, c0=1.0)
    with pytest.raises(ValueError, match=name):
        sim.sample_depm_prior(np.random.default_rng(0), **{**kw, name: bad})


@pytest.mark.parametrize("name", ["a1", "a2", "gamma0", "c0", "C1", "C2"])
def test_cepm_rejects_non_positive(name):
    kw = dict(I=2, J=3, T=4, a1=1.0, a2=1.0, gamma0=1.0, c0=1.0, C1=None, C2=None)
    with pytest.raises(ValueError, match=name):
        sim.sample_cepm_prior(np.random.default_rng(0), **{**kw, name: 0.0})


@pytest.mark.parametrize("name", ["alpha1", "alpha2", "gamma0", "c0"])
def test_depm_rejects_non_positive(name):
    kw = dict(I=2, J=3, T=4, alpha1=1.0, alpha2=1.0, gamma0=1.0, c0=1.0)
    with pytest.raises(ValueError, match=name):
        sim.sample_depm_prior(np.random.default_rng(0), **{**kw, name: -0.5})


def test_rejects_non_generator():
    with pytest.raises(ValueError, match="Generator"):
        sim.sample_epm_prior(0, **GOOD_EPM)
    with pytest.raises(ValueError, match="Generator"):
        sim.sample_counts(np.random.RandomState(0), np.ones((1, 1)), np.ones((1, 1)), np.ones(1))


def test_factor_validation():
    U, V, lam = np.ones((2, 3)), np.ones((4, 3)), np.ones(3)
    with pytest.raises(ValueError, match="atoms"):
        sim.intensity(U, np.ones((4, 2)), lam)
    with pytest.raises(ValueError, match="lam"):
        sim.intensity(U, V, np.ones((3, 1)))
    with pytest.raises(ValueError, match="non-negative"):
        sim.sample_counts(np.random.default_rng(0), -U, V, lam)
    with pytest.raises(ValueError, match="NaN"):
        sim.intensity(U, V, np.array([1.0, np.nan, 1.0]))


def test_binarize_validation():
    with pytest.raises(ValueError, match="shape"):
        sim.binarize(np.ones(3, dtype=int))
    with pytest.raises(ValueError, match="non-negative"):
        sim.binarize(-np.ones((2, 2), dtype=int))
    with pytest.raises(ValueError, match="integer"):
        sim.binarize(np.full((2, 2), 0.5))


def test_dense_limit():
    big = np.ones((1000, 1)), np.ones((1000, 1)), np.ones(1)
    with pytest.raises(ValueError, match="MAX_DENSE"):
        sim.sample_counts(np.random.default_rng(0), np.ones((2000, 30)), np.ones((2000, 30)), np.ones(30))
    assert sim.sample_counts(np.random.default_rng(0), *big).shape == (1000, 1000, 1)
