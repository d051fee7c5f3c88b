"""Tests of ``epm_lib.distributions`` against the EXACT laws of its kernels.

Every statistical check runs on a fixed seed, so the file is deterministic.
The thresholds are set by the sample size:

- goodness of fit: Pearson chi-square (cells pooled until every expected
  count is >= 5) or Kolmogorov-Smirnov, failing when p < 1e-4;
- moments: |estimate - exact| < 5 SE, where SE is the exact standard error
  sqrt(Var / N) of the estimate (or, for covariances, its plug-in estimate);
- rare events (probabilities far below 1 / N): an exact binomial tail,
  failing when the observed count has probability < 1e-4.

With a correct kernel each check fails with probability about 1e-4 (5 SE:
6e-7) for a random seed; with the seeds fixed here they pass. The
``test_mutant_*`` tests run the same checks on deliberately wrong kernels
(shape-boosting exponent ``log(U)*a``, scale instead of rate, shifted
Poisson instead of ZTP, CRT off by one customer) and assert that the checks
reject them, so the checks have power where it matters.

Chapters: ``chapters/10_building_blocks`` (ZTP, multinomial, CRT) and ``chapters/10b_log_space`` (gamma,
beta, Dirichlet, grid Gibbs).
"""
from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest
from numba import njit
from scipy import special, stats

from epm_lib.exactness import adjacent_chisquare as pooled_chisquare
from epm_lib.distributions import (
    TINY, cepm_grid, partition_count, sample_categorical, sample_crt,
    sample_dirichlet, sample_gamma, sample_log_beta, sample_log_gamma,
    sample_log_weights, sample_ztp,
)

P_MIN = 1e-4     # goodness-of-fit p-value threshold
Z_MAX = 5.0      # moment checks: |estimate - exact| < Z_MAX * SE


# ---------------------------------------------------------------- draw loops
# The kernels draw one value per call; these loops (compiled once, cached)
# draw many values without the ~10 us Python-to-numba call overhead.

@njit(cache=True)
def _ztp_many(rng, rate, size):
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = sample_ztp(rng, rate)
    return out


@njit(cache=True)
def _crt_many(rng, n, r, size):
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = sample_crt(rng, n, r)
    return out


@njit(cache=True)
def _categorical_many(rng, weights, total, size):
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = sample_categorical(rng, weights, total)
    return out


@njit(cache=True)
def _partition_many(rng, n, weights, total, size):
    out = np.zeros((size, weights.shape[0]), np.int64)
    for i in range(size):
        partition_count(rng, n, weights, total, out[i])
    return out


@njit(cache=True)
def _log_gamma_many(rng, shape, size):
    out = np.empty(size)
    for i in range(size):
        out[i] = sample_log_gamma(rng, shape)
    return out


@njit(cache=True)
def _gamma_many(rng, shape, rate, size):
    out = np.empty(size)
    for i in range(size):
        out[i] = sample_gamma(rng, shape, rate)
    return out


@njit(cache=True)
def _log_beta_many(rng, a, b, size):
    out = np.empty(size)
    for i in range(size):
        out[i] = sample_log_beta(rng, a, b)
    return out


@njit(cache=True)
def _dirichlet_many(rng, alpha, size):
    out = np.empty((size, alpha.shape[0]))
    for i in range(size):
        sample_dirichlet(rng, alpha, out[i])
    return out


@njit(cache=True)
def _log_weights_many(rng, logw, size):
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = sample_log_weights(rng, logw)
    return out


# ------------------------------------------------- mutants (wrong on purpose)

@njit(cache=True)
def _mutant_log_gamma_many(rng, shape, size):
    """Shape boosting with the wrong exponent: log G(a+1) + a*log(U)."""
    out = np.empty(size)
    for i in range(size):
        u = rng.random()
        out[i] = math.log(rng.standard_gamma(shape + 1.0)) + math.log(u) * shape
    return out


@njit(cache=True)
def _mutant_gamma_many(rng, shape, rate, size):
    """Scale/rate mix-up: multiplies by the rate instead of dividing."""
    out = np.empty(size)
    for i in range(size):
        out[i] = rng.standard_gamma(shape) * rate
    return out


@njit(cache=True)
def _mutant_ztp_many(rng, rate, size):
    """1 + Poisson(rate): positive, but not the zero-truncated Poisson."""
    out = np.empty(size, np.int64)
    for i in range(size):
        out[i] = 1 + rng.poisson(rate)
    return out


@njit(cache=True)
def _mutant_crt_many(rng, n, r, size):
    """CRT with Bernoulli(r / (r + p)) for p = 1..n (off by one customer)."""
    out = np.empty(size, np.int64)
    for i in range(size):
        w = 0
        for p in range(1, n + 1):
            if rng.random() * (r + p) < r:
                w += 1
        out[i] = w
    return out


# ------------------------------------------------------------- exact laws

def ztp_logpmf(k, rate):
    """log P(k) = k log(rate) - rate - log k! - log(1 - e^-rate), k >= 1."""
    k = np.asarray(k, dtype=float)
    return k * math.log(rate) - rate - special.gammaln(k + 1) - math.log(-math.expm1(-rate))


def ztp_mean_var(rate):
    """Mean rate / (1 - e^-rate) and variance mean * (1 + rate - mean), cancellation-free."""
    one_minus = -math.expm1(-rate)
    mean = rate / one_minus
    # 1 + rate - mean = (1 - e^-rate (1 + rate)) / (1 - e^-rate) = P(Poisson >= 2) / P(Poisson >= 1)
    var = mean * special.gammainc(2.0, rate) / one_minus
    return mean, var


def unsigned_stirling1(n_max):
    """|s(n, w)| for 0 <= w <= n <= n_max as exact Python integers (c(n+1,w) = n c(n,w) + c(n,w-1))."""
    c = [[1]]
    for n in range(n_max):
        row = [0] * (n + 2)
        for w in range(n + 2):
            row[w] = (n * c[n][w] if w <= n else 0) + (c[n][w - 1] if w >= 1 else 0)
        c.append(row)
    return c


STIRLING = unsigned_stirling1(60)


def crt_logpmf(n, r):
    """Antoniak law: log P(w) = log|s(n,w)| + w log r + log Gamma(r) - log Gamma(r+n), w = 0..n."""
    w = np.arange(n + 1)
    logs = np.array([math.log(s) if s > 0 else -np.inf for s in STIRLING[n]])
    return w, logs + w * math.log(r) + special.gammaln(r) - special.gammaln(r + n)


def crt_mean_var(n, r):
    """Mean sum_p r/(r+p-1) and variance sum_p q_p (1 - q_p) of the sum of Bernoullis."""
    q = r / (r + np.arange(n, dtype=float))          # r / (r + p - 1), p = 1..n
    return float(q.sum()), float((q * (1.0 - q)).sum())


def log_gamma_cdf(logx, a):
    """P(G <= exp(logx)) for G ~ Gamma(a, 1), valid where exp(logx) underflows.

    For x = exp(logx) < 1e-10 it uses P(a, x) = x^a / Gamma(a+1) (1 - a x / (a+1) + O(x^2)),
    i.e. exp(a logx - lgamma(a+1)) to relative accuracy 1e-10; otherwise scipy's gammainc.
    """
    logx = np.asarray(logx, dtype=float)
    small = logx < math.log(1e-10)
    out = np.empty_like(logx)
    out[small] = np.exp(a * logx[small] - special.gammaln(a + 1.0))
    out[~small] = special.gammainc(a, np.exp(logx[~small]))
    return out


# ------------------------------------------------------------- test helpers

def binomial_upper_p(count, n, q):
    """P(Binomial(n, q) >= count): the probability of seeing at least ``count`` rare events."""
    return float(stats.binom.sf(count - 1, n, q))


def mean_z(x, mean, var):
    """|mean(x) - mean| / SE, or 0 when N Var < 25: then the sample sum is far from normal
    (a handful of rare events), and the chi-square / binomial-tail checks carry the test."""
    if len(x) * var < 25.0:
        return 0.0
    return abs(float(np.mean(x)) - mean) / math.sqrt(var / len(x))


def assert_mean(x, mean, var, label=""):
    se = math.sqrt(var / len(x))
    est = float(np.mean(x))
    assert abs(est - mean) < Z_MAX * se, f"{label}: mean {est!r}, exact {mean!r}, SE {se!r}"


# ====================================================================== ZTP

ZTP_RATES = [1e-12, 1e-6, 0.01, 0.5, 0.999, 1.0, 1.001, 3.0, 50.0, 1e4]


def ztp_check(draws, rate):
    """(ok, message): chi-square against the exact ZTP pmf, mean within 5 SE, and support >= 1."""
    N = len(draws)
    mean, var = ztp_mean_var(rate)
    if draws.min() < 1:
        return False, "a draw below 1"
    kmax = int(max(draws.max(), rate + 12.0 * math.sqrt(rate) + 30))
    k = np.arange(1, kmax + 1)
    probs = np.exp(ztp_logpmf(k, rate))
    counts = np.bincount(draws, minlength=kmax + 1)[1:]
    p, cells = pooled_chisquare(np.append(counts, 0.0), np.append(probs, max(0.0, 1.0 - probs.sum())))
    # rare-event check where the chi-square pools everything: P(k >= 2) = 1 - p_1
    q2 = -math.expm1(float(ztp_logpmf(1, rate)))  # 1 - rate/(e^rate - 1), without cancellation
    n2 = int((draws >= 2).sum())
    p_rare = binomial_upper_p(n2, N, q2) if n2 > 0 else 1.0
    z = mean_z(draws, mean, var)
    ok = p > P_MIN and p_rare > P_MIN and z < Z_MAX
    return ok, f"rate {rate}: chi2 p {p:.3g} ({cells} cells), rare p {p_rare:.3g}, z {z:.2f}"


@pytest.mark.parametrize("i, rate", list(enumerate(ZTP_RATES)))
def test_ztp_exact_law(i, rate):
    draws = _ztp_many(np.random.default_rng(1000 + i), rate, 100_000)
    ok, msg = ztp_check(draws, rate)
    assert ok, msg


def test_ztp_tiny_rate_gives_one():
    # P(k >= 2) = 5e-13 at rate 1e-12: 10^5 draws are all 1
    draws = _ztp_many(np.random.default_rng(1), 1e-12, 100_000)
    assert np.all(draws == 1)


@njit(cache=True)
def _ztp_by_inversion(rng, rate, size):
    """sample_ztp's draws for 0 < rate < 1 by the plain inversion (p_1 computed for every draw)."""
    out = np.empty(size, np.int64)
    for n in range(size):
        u = rng.random()
        k = 1
        p = rate / math.expm1(rate)
        cum = p
        while u > cum and p > 0.0:
            k += 1
            p *= rate / k
            cum += p
        out[n] = k
    return out


def test_ztp_shortcut_is_the_inversion():
    """sample_ztp returns 1 without p_1 when u < (1 - 1e-15) - rate/2: that bound lies below the
    computed p_1 = rate/expm1(rate) at every rate in (0, 1) (checked on a dense grid, tiny rates to
    1 - 1e-16), and the draws are the plain inversion's, draw for draw, generator state included."""
    from epm_lib.distributions import _ZTP_ONE_SURE_A
    rates = np.concatenate([np.logspace(-300, -1, 30001), np.linspace(0.1, 1.0, 300001)[:-1],
                            1.0 - np.logspace(-16, -1, 1001)])
    p1 = rates / np.expm1(rates)
    assert np.all(_ZTP_ONE_SURE_A - 0.5 * rates < p1)
    for rate in (1e-12, 1e-3, 0.2, 0.5, 0.9, 0.999999):
        a, b = np.random.default_rng(11), np.random.default_rng(11)
        assert np.array_equal(_ztp_many(a, rate, 20000), _ztp_by_inversion(b, rate, 20000)), rate
        assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("rate", [0.0, -1.0, 5e-324])
def test_ztp_zero_rate_gives_one(rate):
    rng = np.random.default_rng(2)
    assert all(sample_ztp(rng, rate) == 1 for _ in range(100))


def test_ztp_large_rate_runtime_bounded():
    rng = np.random.default_rng(3)
    _ztp_many(rng, 1e4, 10)  # compiled already; warm
    t0 = time.perf_counter()
    draws = _ztp_many(rng, 1e4, 100_000)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, f"10^5 ZTP(1e4) draws took {elapsed:.2f} s"
    big = _ztp_many(rng, 1e9, 1000)          # also far beyond the paper's rates
    assert abs(big.mean() - 1e9) < Z_MAX * math.sqrt(1e9 / 1000)
    assert draws.min() >= 1


_ZTP_BAD_RATES = """
import numpy as np
from epm_lib.distributions import sample_ztp
rng = np.random.default_rng(0)
for rate in (float("nan"), float("inf"), 1e19, 1e300):
    try:
        sample_ztp(rng, rate)
    except ValueError:
        print("ValueError")
    else:
        print("returned")
print(sample_ztp(rng, 9e18) > 0)
"""


@pytest.mark.slow
def test_ztp_bad_rate_raises_instead_of_hanging():
    """Regression: numba's Poisson returns 0 for NaN and INT64_MIN for rates past ~9.2e18, so the
    rejection loop of sample_ztp never ended (the original kernel hung here). Run in a subprocess
    so that a hang fails the test after 60 s instead of blocking the suite."""
    out = subprocess.run([sys.executable, "-c", _ZTP_BAD_RATES], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ValueError"] * 4 + ["True"]


# ====================================================================== CRT

CRT_SMALL = [(n, r) for n in (1, 2, 5, 20, 60) for r in (1e-6, 0.1, 1.0, 7.5, 1e4)]


def test_stirling_expansion_eq22():
    """Eq. (22): Gamma(u+n)/Gamma(u) = sum_w |s(n,w)| u^w, exactly, for integer u (rising factorial)."""
    for n in range(0, 61):
        for u in (1, 2, 3, 10):
            rising = math.prod(range(u, u + n))
            assert sum(s * u ** w for w, s in enumerate(STIRLING[n])) == rising
    # and the unsigned Stirling numbers: |s(n,1)| = (n-1)!, |s(n,n-1)| = C(n,2)
    assert STIRLING[10][1] == math.factorial(9) and STIRLING[10][9] == 45


def crt_small_check(draws, n, r):
    w, logp = crt_logpmf(n, r)
    probs = np.exp(logp)
    assert abs(probs.sum() - 1.0) < 1e-9, "exact Antoniak pmf does not sum to 1"
    counts = np.bincount(draws, minlength=n + 1)
    if len(counts) > n + 1 or counts[0] > 0:
        return False, "draw outside 1..n"
    p, cells = pooled_chisquare(counts, probs)
    mean, var = crt_mean_var(n, r)
    # rare-event check where the chi-square pools everything: P(w >= 2) = 1 - P(w = 1)
    q2 = -math.expm1(logp[1]) if n >= 2 else 0.0
    n2 = int((draws >= 2).sum())
    p_rare = binomial_upper_p(n2, len(draws), q2) if n2 > 0 else 1.0
    z = mean_z(draws, mean, var)
    ok = p > P_MIN and p_rare > P_MIN and z < Z_MAX
    return ok, f"n {n}, r {r}: chi2 p {p:.3g} ({cells} cells), rare p {p_rare:.3g}, z {z:.2f}"


@pytest.mark.parametrize("i, n, r", [(i, n, r) for i, (n, r) in enumerate(CRT_SMALL)])
def test_crt_exact_antoniak_pmf(i, n, r):
    draws = _crt_many(np.random.default_rng(2000 + i), n, r, 20_000)
    ok, msg = crt_small_check(draws, n, r)
    assert ok, msg


@pytest.mark.parametrize("i, r", list(enumerate([1e-2, 1.0, 100.0, 1e4])))
def test_crt_large_n_mean(i, r):
    n = 100_000
    draws = _crt_many(np.random.default_rng(2100 + i), n, r, 400)
    mean, var = crt_mean_var(n, r)
    assert abs(mean - r * (special.digamma(r + n) - special.digamma(r))) < 1e-8 * mean
    assert_mean(draws, mean, var, f"CRT({n}, {r})")
    assert draws.min() >= 1 and draws.max() <= n


def test_crt_large_n_tiny_r():
    """n = 10^5, r = 1e-6: P(w = 1) = (n-1)! r Gamma(r)/Gamma(r+n) = 1 - 1.2e-5; count the exceptions."""
    n, r, N = 100_000, 1e-6, 400
    draws = _crt_many(np.random.default_rng(2200), n, r, N)
    log_p1 = special.gammaln(n) + math.log(r) + special.gammaln(r) - special.gammaln(r + n)
    q2 = -math.expm1(log_p1)
    assert abs(q2 / (crt_mean_var(n, r)[0] - 1.0) - 1.0) < 1e-3   # P(w>=2) ~ E[w] - 1 here
    assert binomial_upper_p(int((draws >= 2).sum()), N, q2) > P_MIN
    assert draws.min() == 1


def test_crt_zero_and_one_customer():
    rng = np.random.default_rng(4)
    assert sample_crt(rng, 0, 1.0) == 0 and sample_crt(rng, 0, 1e-6) == 0 and sample_crt(rng, -3, 2.0) == 0
    assert np.all(_crt_many(rng, 1, 1e4, 1000) == 1)
    assert np.all(_crt_many(rng, 1, 1e-6, 1000) == 1)


# ====================================================== categorical / partition

def test_categorical_multinomial_law_and_zero_weights():
    w = np.array([0.1, 0.0, 0.3, 0.6, 0.0, 2.5e-3])
    draws = _categorical_many(np.random.default_rng(3000), w, w.sum(), 200_000)
    counts = np.bincount(draws, minlength=len(w))
    assert counts[1] == 0 and counts[4] == 0
    p, _ = pooled_chisquare(counts[w > 0], w[w > 0])
    assert p > P_MIN, p


def test_categorical_zero_weight_first_and_last():
    w = np.array([0.0, 1.0, 2.0, 0.0])
    draws = _categorical_many(np.random.default_rng(3001), w, w.sum(), 100_000)
    assert set(np.unique(draws)) == {1, 2}
    w1 = np.array([0.0, 0.0, 1.0])
    assert np.all(_categorical_many(np.random.default_rng(3002), w1, 1.0, 1000) == 2)


def test_categorical_huge_dynamic_range():
    # P(index 0) = 1e-300: never seen; the atom of weight 1 always
    w = np.array([1e-300, 1.0, 0.0])
    draws = _categorical_many(np.random.default_rng(3003), w, w.sum(), 100_000)
    assert np.all(draws == 1)
    # all weights tiny (no underflow in u = U * total): still the right law
    w = np.array([1e-300, 2e-300, 3e-300, 4e-300])
    draws = _categorical_many(np.random.default_rng(3004), w, w.sum(), 100_000)
    p, _ = pooled_chisquare(np.bincount(draws, minlength=4), w / w.sum())
    assert p > P_MIN, p
    # huge weights (no overflow)
    w = np.array([1e300, 3e300])
    draws = _categorical_many(np.random.default_rng(3005), w, w.sum(), 100_000)
    p, _ = pooled_chisquare(np.bincount(draws, minlength=2), [0.25, 0.75])
    assert p > P_MIN, p


@pytest.mark.slow
def test_partition_count_joint_multinomial():
    """n = 4 customers over 3 atoms: chi-square over all 15 compositions against the multinomial pmf."""
    w = np.array([0.2, 0.5, 0.3])
    n, N = 4, 50_000
    out = _partition_many(np.random.default_rng(3100), n, w * 7.0, 7.0, N)   # unnormalised weights
    assert np.all(out.sum(axis=1) == n)
    comps = [(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)]
    index = {c: j for j, c in enumerate(comps)}
    counts = np.bincount([index[tuple(row)] for row in out], minlength=len(comps))
    probs = [stats.multinomial.pmf(c, n, w) for c in comps]
    p, cells = pooled_chisquare(counts, probs)
    assert cells >= 10 and p > P_MIN, p


def test_partition_count_marginals_large_n():
    """n = 200: each atom's count is Binomial(n, w_k); zero weight gets nothing; counts are added into out."""
    w = np.array([1e-3, 0.0, 0.25, 0.749])
    n, N = 200, 5000
    out = _partition_many(np.random.default_rng(3101), n, w, w.sum(), N)
    assert np.all(out[:, 1] == 0) and np.all(out.sum(axis=1) == n)
    for k in (0, 2, 3):
        assert_mean(out[:, k], n * w[k], n * w[k] * (1 - w[k]), f"atom {k}")
        p, _ = pooled_chisquare(np.bincount(out[:, k], minlength=n + 1), stats.binom.pmf(np.arange(n + 1), n, w[k]))
        assert p > P_MIN, (k, p)
    acc = np.array([5, 0, 1, 0], np.int64)
    partition_count(np.random.default_rng(3102), 10, w, w.sum(), acc)
    assert acc.sum() == 16 and acc[0] >= 5 and acc[1] == 0
    partition_count(np.random.default_rng(3102), 0, w, w.sum(), acc)
    assert acc.sum() == 16


# ================================================================ log-gamma

LOG_GAMMA_SHAPES = [1e-3, 0.1, 0.5, 1.0, 2.5, 100.0]


def log_gamma_check(logg, a):
    """KS of U = F(G) (computed from log G, so it works where G underflows) and the
    exact moments of log G: E = digamma(a), Var = trigamma(a), 4th central moment
    psi'''(a) + 3 trigamma(a)^2 (cumulants of log G are polygamma(k-1, a))."""
    if not np.all(np.isfinite(logg)):
        return False, "non-finite log draw"
    N = len(logg)
    u = log_gamma_cdf(logg, a)
    p_ks = float(stats.kstest(u, "uniform").pvalue)
    m, v = special.digamma(a), special.polygamma(1, a)
    z_mean = abs(logg.mean() - m) / math.sqrt(v / N)
    mu4 = special.polygamma(3, a) + 3.0 * v ** 2
    z_var = abs(logg.var(ddof=1) - v) / math.sqrt((mu4 - v ** 2) / N)
    ok = p_ks > P_MIN and z_mean < Z_MAX and z_var < Z_MAX
    return ok, f"a {a}: KS p {p_ks:.3g}, z(mean) {z_mean:.2f}, z(var) {z_var:.2f}"


@pytest.mark.parametrize("i, a", list(enumerate(LOG_GAMMA_SHAPES)))
def test_log_gamma_exact_law(i, a):
    logg = _log_gamma_many(np.random.default_rng(4000 + i), a, 20_000)
    ok, msg = log_gamma_check(logg, a)
    assert ok, msg


@pytest.mark.parametrize("i, a", list(enumerate([0.1, 0.5, 1.0, 2.5, 100.0])))
def test_log_gamma_exp_matches_scipy_gamma(i, a):
    """Where exp(draw) is representable, it is KS-indistinguishable from scipy.stats.gamma(a)."""
    g = np.exp(_log_gamma_many(np.random.default_rng(4100 + i), a, 20_000))
    assert g.min() > 0.0
    assert stats.kstest(g, stats.gamma(a).cdf).pvalue > P_MIN


def test_log_gamma_tiny_shape_underflow_region():
    """a = 1e-3: half of all Gamma(a,1) draws lie below 1e-308. P(log G < log TINY) = TINY^a/Gamma(1+a)."""
    a, N = 1e-3, 20_000
    logg = _log_gamma_many(np.random.default_rng(4200), a, N)
    q = math.exp(a * math.log(TINY) - special.gammaln(1.0 + a))
    below = int((logg < math.log(TINY)).sum())
    assert abs(below - N * q) < Z_MAX * math.sqrt(N * q * (1 - q)), (below, N * q)
    assert np.all(np.isfinite(logg)) and (np.exp(logg) == 0.0).sum() > 0.4 * N  # exp would underflow


@pytest.mark.slow
def test_mutant_shape_boost_exponent_is_caught():
    for i, a in enumerate([1e-3, 0.1, 0.5]):
        ok, msg = log_gamma_check(_mutant_log_gamma_many(np.random.default_rng(4300 + i), a, 20_000), a)
        assert not ok, "the check accepted log(U)*a: " + msg


# ==================================================================== gamma

GAMMA_CASES = [(1e-3, 1.0), (1e-3, 10.0), (0.3, 4.0), (1.0, 0.5), (2.5, 4.0), (100.0, 0.01), (7.0, 1e6)]


def gamma_check(g, shape, rate):
    """The sample sum of N iid Gamma(shape, rate) is exactly Gamma(N shape, rate): two-sided p-value;
    plus KS against scipy.stats.gamma(shape, scale=1/rate) when shape >= 0.1."""
    N = len(g)
    cdf = stats.gamma(N * shape, scale=1.0 / rate).cdf(g.sum())
    p_sum = 2.0 * min(cdf, 1.0 - cdf)
    p_ks = float(stats.kstest(g, stats.gamma(shape, scale=1.0 / rate).cdf).pvalue) if shape >= 0.1 else 1.0
    ok = p_sum > P_MIN and p_ks > P_MIN
    return ok, f"Gamma({shape}, rate {rate}): sum p {p_sum:.3g}, KS p {p_ks:.3g}, mean {g.mean():.4g}, exact {shape / rate:.4g}"


@pytest.mark.parametrize("i, shape, rate", [(i, s, r) for i, (s, r) in enumerate(GAMMA_CASES)])
def test_gamma_rate_parameterisation(i, shape, rate):
    g = _gamma_many(np.random.default_rng(5000 + i), shape, rate, 20_000)
    ok, msg = gamma_check(g, shape, rate)
    assert ok, msg


def test_gamma_floor_tiny_shape():
    a, N = 1e-3, 20_000
    g = _gamma_many(np.random.default_rng(5100), a, 1.0, N)
    assert np.all(np.isfinite(g)) and np.all(g >= TINY) and not np.any(g == 0.0)
    # the floor is hit exactly when the true draw is below TINY: P = P(a, TINY) = TINY^a / Gamma(1 + a)
    q = math.exp(a * math.log(TINY) - special.gammaln(1.0 + a))
    floored = int((g == TINY).sum())
    assert abs(floored - N * q) < Z_MAX * math.sqrt(N * q * (1 - q)), (floored, N * q)
    assert np.all(g[g != TINY] > TINY)
    assert not np.any(np.isnan(g))


def test_mutant_scale_rate_mixup_is_caught():
    for i, (shape, rate) in enumerate([(2.5, 4.0), (1.0, 0.5)]):
        ok, msg = gamma_check(_mutant_gamma_many(np.random.default_rng(5200 + i), shape, rate, 20_000), shape, rate)
        assert not ok, "the check accepted a scale/rate mix-up: " + msg


# ===================================================================== beta

BETA_CASES = [(0.5, 0.5), (2.0, 3.0), (1e-3, 1e-3), (1e-3, 1.0), (1.0, 1e-3), (0.01, 5.0), (50.0, 1e-2)]


@pytest.mark.parametrize("i, a, b", [(i, a, b) for i, (a, b) in enumerate(BETA_CASES)])
def test_log_beta_moments(i, a, b):
    N = 40_000
    lb = _log_beta_many(np.random.default_rng(6000 + i), a, b, N)
    assert np.all(np.isfinite(lb)) and np.all(lb <= 0.0)
    x = np.exp(lb)
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1.0))
    assert_mean(x, mean, var, f"Beta({a},{b}) mean")
    # E[B^2] = a(a+1)/((a+b)(a+b+1)); its SE from the exact 4th moment E[B^4]
    m2 = a * (a + 1) / ((a + b) * (a + b + 1))
    m4 = np.prod([(a + j) / (a + b + j) for j in range(4)])
    assert_mean(x ** 2, m2, m4 - m2 ** 2, f"Beta({a},{b}) 2nd moment")
    # log scale: E[log B] = digamma(a) - digamma(a+b), Var = trigamma(a) - trigamma(a+b)
    assert_mean(lb, special.digamma(a) - special.digamma(a + b),
                special.polygamma(1, a) - special.polygamma(1, a + b), f"Beta({a},{b}) log mean")
    if min(a, b) >= 0.5:
        assert stats.kstest(x, stats.beta(a, b).cdf).pvalue > P_MIN


# ================================================================ Dirichlet

def test_dirichlet_means_covariance_sum():
    alpha = np.array([0.5, 1.0, 2.0, 3.5])
    a0, N = alpha.sum(), 40_000
    x = _dirichlet_many(np.random.default_rng(7000), alpha, N)
    assert np.all(np.abs(x.sum(axis=1) - 1.0) < 1e-12)
    mu = alpha / a0
    cov = (np.diag(mu) - np.outer(mu, mu)) / (a0 + 1.0)
    for k in range(len(alpha)):
        assert_mean(x[:, k], mu[k], cov[k, k], f"component {k}")
    xc = x - mu
    for i in range(len(alpha)):
        for j in range(i, len(alpha)):
            prod = xc[:, i] * xc[:, j]
            se = prod.std(ddof=1) / math.sqrt(N)
            assert abs(prod.mean() - cov[i, j]) < Z_MAX * se, (i, j, prod.mean(), cov[i, j], se)


def test_dirichlet_tiny_alpha_no_zeros():
    K, N = 10, 20_000
    alpha = np.full(K, 1e-3)
    x = _dirichlet_many(np.random.default_rng(7100), alpha, N)
    assert not np.any(x == 0.0) and np.all(x >= TINY) and np.all(np.isfinite(np.log(x)))
    assert np.all(np.abs(x.sum(axis=1) - 1.0) < 1e-12)
    mu = alpha / alpha.sum()
    var = mu * (1 - mu) / (alpha.sum() + 1.0)
    for k in range(K):
        assert_mean(x[:, k], mu[k], var[k], f"component {k}")
    # floored components are exactly those with X_k < TINY, X_k ~ Beta(a, a0 - a):
    # P(X_k < t) = t^a (1 + O(t)) / (a B(a, a0 - a))
    a, b = alpha[0], alpha.sum() - alpha[0]
    q = math.exp(a * math.log(TINY) - math.log(a) - special.betaln(a, b))
    floored = int((x == TINY).sum())
    n = N * K          # components are dependent, so use a 5-SE bound inflated by sqrt(K)
    assert abs(floored - n * q) < Z_MAX * math.sqrt(K * n * q * (1 - q)), (floored, n * q)
    # numpy's own Dirichlet gives exact zeros here (the reason for the log-space kernel)
    assert (np.random.default_rng(7101).dirichlet(alpha, size=1000) == 0.0).any()


def test_dirichlet_mixed_and_large_alpha():
    alpha = np.array([1e-3, 0.2, 1e4])
    N = 20_000
    x = _dirichlet_many(np.random.default_rng(7200), alpha, N)
    a0 = alpha.sum()
    mu = alpha / a0
    for k in range(3):
        assert_mean(x[:, k], mu[k], mu[k] * (1 - mu[k]) / (a0 + 1.0), f"component {k}")
    assert np.all(x > 0.0)


# ============================================================ log weights

def test_log_weights_softmax_extreme():
    logw = np.array([0.0, -1000.0, 700.0, 699.0, 698.5, -np.inf])
    draws = _log_weights_many(np.random.default_rng(8000), logw, 100_000)
    counts = np.bincount(draws, minlength=len(logw))
    assert counts[0] == 0 and counts[1] == 0 and counts[5] == 0
    sm = special.softmax(logw[2:5])
    p, _ = pooled_chisquare(counts[2:5], sm)
    assert p > P_MIN, p


def test_log_weights_all_very_negative_and_grid():
    logw = np.array([-1000.0, -1001.0, -1000.5, -1e4])
    draws = _log_weights_many(np.random.default_rng(8001), logw, 100_000)
    p, _ = pooled_chisquare(np.bincount(draws, minlength=4), special.softmax(logw))
    assert p > P_MIN, p
    # a 99-point grid with a smooth, peaked log weight (as in the grid Gibbs step)
    g = np.arange(1, 100) / 100.0
    logw = stats.beta(20.0, 40.0).logpdf(g) + 500.0
    draws = _log_weights_many(np.random.default_rng(8002), logw, 100_000)
    p, cells = pooled_chisquare(np.bincount(draws, minlength=99), special.softmax(logw))
    assert cells > 20 and p > P_MIN, p


# ================================================================= the grid

def test_cepm_grid():
    a = cepm_grid()
    assert a.shape == (99,) and np.all(a > 0) and np.all(np.diff(a) < 0)
    np.testing.assert_allclose(1.0 / (1.0 + a), np.arange(1, 100) / 100.0, rtol=0, atol=1e-14)
    assert abs(a[0] - 99.0) < 1e-12 and abs(a[-1] - 1.0 / 99.0) < 1e-14


# ===================================================== reproducibility

def _sequence(seed):
    rng = np.random.default_rng(seed)
    w = np.array([0.2, 0.0, 0.8])
    out = [
        _ztp_many(rng, 0.3, 50).astype(float), _ztp_many(rng, 30.0, 50).astype(float),
        _crt_many(rng, 40, 2.0, 50).astype(float), _categorical_many(rng, w, 1.0, 50).astype(float),
        _partition_many(rng, 7, w, 1.0, 20).ravel().astype(float),
        _log_gamma_many(rng, 1e-3, 50), _log_gamma_many(rng, 3.0, 50),
        _gamma_many(rng, 0.5, 2.0, 50), _log_beta_many(rng, 0.01, 2.0, 50),
        _dirichlet_many(rng, np.array([1e-3, 1.0, 5.0]), 20).ravel(),
        _log_weights_many(rng, np.array([0.0, 700.0, 699.0]), 50).astype(float),
        np.array([sample_ztp(rng, 2.0), sample_crt(rng, 10, 0.5), sample_gamma(rng, 2.0, 3.0)], dtype=float),
    ]
    return np.concatenate(out)


def test_reproducible_bit_identical():
    a, b, c = _sequence(123), _sequence(123), _sequence(124)
    assert np.array_equal(a.view(np.int64), b.view(np.int64))
    assert not np.array_equal(a, c)


def test_kernels_advance_the_shared_generator():
    """A kernel call consumes the Python Generator's state (one stream drives a whole run)."""
    rng = np.random.default_rng(9)
    x1 = sample_gamma(rng, 2.0, 1.0)
    x2 = sample_gamma(rng, 2.0, 1.0)
    assert x1 != x2
    rng2 = np.random.default_rng(9)
    sample_gamma(rng2, 2.0, 1.0)
    assert sample_gamma(rng2, 2.0, 1.0) == x2


# ================================================================ mutants

@pytest.mark.slow
def test_mutant_shifted_poisson_is_caught():
    for i, rate in enumerate([0.5, 3.0]):
        ok, msg = ztp_check(_mutant_ztp_many(np.random.default_rng(9000 + i), rate, 100_000), rate)
        assert not ok, "the check accepted 1 + Poisson: " + msg


def test_mutant_crt_off_by_one_is_caught():
    for i, (n, r) in enumerate([(20, 1.0), (60, 7.5)]):
        ok, msg = crt_small_check(_mutant_crt_many(np.random.default_rng(9100 + i), n, r, 20_000), n, r)
        assert not ok, "the check accepted an off-by-one CRT: " + msg


@njit(cache=True)
def _dirichlet_reference(rng, alpha, out):
    """sample_dirichlet as specified: one sample_log_gamma per component, then log-sum-exp."""
    K = alpha.shape[0]
    mx = -np.inf
    for k in range(K):
        out[k] = sample_log_gamma(rng, alpha[k])
        mx = max(mx, out[k])
    s = 0.0
    for k in range(K):
        out[k] = np.exp(out[k] - mx)
        s += out[k]
    for k in range(K):
        out[k] = max(out[k] / s, TINY)


def test_dirichlet_fast_path_is_bit_identical_to_the_reference():
    """sample_dirichlet caches the constants of the boosted gamma draw over runs of equal
    concentrations below 1; its draws and the generator's state must equal the plain form's."""
    rng0 = np.random.default_rng(77)
    cases = [np.full(50, 0.2), np.full(5, 1e-17), np.full(5, 1.0), np.array([0.3, 0.3, 2.0, 0.3, 1e-20, 0.3]),
             10 ** rng0.uniform(-17, 4, 200), 0.05 + rng0.integers(0, 3, 300) * (rng0.random(300) < 0.3)]
    for t, a in enumerate(cases):
        o1, o2 = np.empty(a.size), np.empty(a.size)
        r1, r2 = np.random.default_rng(t), np.random.default_rng(t)
        _dirichlet_reference(r1, a, o1)
        sample_dirichlet(r2, a, o2)
        assert np.array_equal(o1, o2) and r1.random() == r2.random(), t


def test_adjacent_chisquare_pools_left_to_right_and_has_power():
    """exactness.adjacent_chisquare (the building-block chapters' test): pooling, p=1 for one cell,
    uniform-looking p for draws of the stated law, tiny p for draws of another."""
    from epm_lib.exactness import adjacent_chisquare
    # expected 4, 4, 4 for 12 draws: cells 1+2 pool (8 >= 5), cell 3 (4 < 5) joins them: one cell
    assert adjacent_chisquare([1, 1, 10], [1, 1, 1]) == (1.0, 1)
    assert adjacent_chisquare([30, 30, 40], [0.3, 0.3, 0.4]) == (1.0, 3)        # exactly as expected
    rng = np.random.default_rng(5)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    p_ok, cells = adjacent_chisquare(np.bincount(rng.choice(4, 20_000, p=w), minlength=4), w * 7)   # normalised
    p_bad, _ = adjacent_chisquare(np.bincount(rng.choice(4, 20_000, p=w[::-1]), minlength=4), w)
    assert cells == 4 and p_ok > 1e-3 and p_bad < 1e-12


def test_draw_many_is_the_loop_of_single_draws():
    from epm_lib.distributions import draw_many
    a = draw_many(sample_ztp, np.random.default_rng(1), 2.5, size=50)
    rng = np.random.default_rng(1)
    assert a.shape == (50,) and np.array_equal(a, [sample_ztp(rng, 2.5) for _ in range(50)])
