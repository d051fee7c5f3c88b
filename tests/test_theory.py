"""Tests of ``epm_lib.theory`` (derived in chapters 02, 04 and 05 of the book).

Every closed form is compared with something computed *without* it:

- the intensity means (Theorems 1 and 3, Sec. 4.1) with hand values and with a
  Monte Carlo average over the truncated priors (tolerance: 5 Monte Carlo SE);
- ``log_joint_counts`` (Eq. 41) with a hand value, with the law of the counts
  read off the generative process (Eq. 4) -- given theta the customers are a
  Poisson(sum_k lambda_k) number of independent draws of (i, j, k), so the
  total is negative binomial and, given it, the atom totals and the rows and
  columns within an atom are Dirichlet-multinomial (``scipy.stats``) -- and
  with a Monte Carlo average of the direct likelihood over the prior;
- ``log_partition_likelihood`` (Eq. 42 / Theorem 4, Eq. 5) with Eq. 41 times
  T!/(T-K+)!, with a brute-force enumeration of labelled assignments, with the
  normalisation of the partition law (summing over all set partitions of all
  small data sets gives the negative binomial law of the total) and with the
  first-order term of its 1/T convergence;
- Lemma 1 (Eq. 37): the factorised form equals the direct Poisson x
  categorical product exactly on the simplex and differs by the predicted
  amount off it; the direct form equals ``scipy.stats.poisson`` x categorical.
Invalid arguments must raise ``ValueError`` with a message naming the argument.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, gammaln, polygamma

from epm_lib import theory as th
from epm_lib.exactness import set_partitions   # tested in tests/test_exactness.py


# --------------------------------------------------------------------------- helpers
def compositions(n, cells):
    """All tuples of ``cells`` non-negative integers summing to ``n`` (stars and bars)."""
    for bars in itertools.combinations(range(n + cells - 1), cells - 1):
        edges = (-1, *bars, n + cells - 1)
        yield tuple(edges[r + 1] - edges[r] - 1 for r in range(cells))


def nb_pmf(n, gamma0, c0):
    """Law of the total M ~ Poisson(sum_k lambda_k), sum_k lambda_k ~ Gamma(gamma0, rate c0)."""
    return stats.nbinom.pmf(n, gamma0, c0 / (c0 + 1.0))


def log_multinomial_coef(m):
    """log prod_ij m_ij.! / prod_k m_ijk!: the number of labelled z giving the counts m."""
    m = np.asarray(m)
    return float(np.sum(gammaln(m.sum(axis=2) + 1)) - np.sum(gammaln(m + 1)))


def count_arrays(I, J, T, n):
    """All (I, J, T) count arrays m_ijk with total n."""
    for c in compositions(n, I * J * T):
        yield np.array(c, dtype=np.int64).reshape(I, J, T)


def prior_draw(rng, I, J, T, alpha1, alpha2, gamma0, c0, size):
    """phi (size, I, T), psi (size, J, T), lambda (size, T) from the DEPM prior, Eq. (4)."""
    phi = rng.dirichlet(np.full(I, alpha1), size=(size, T)).transpose(0, 2, 1)
    psi = rng.dirichlet(np.full(J, alpha2), size=(size, T)).transpose(0, 2, 1)
    lam = rng.gamma(gamma0 / T, 1.0 / c0, size=(size, T))     # numpy: scale = 1/rate
    return phi, psi, lam


# --------------------------------------------------------------------------- intensity means
def test_intensity_means_hand_values():
    assert th.epm_intensity_mean(2, 4, 3, 6, 5, 10) == pytest.approx(0.125, rel=1e-15)
    exact = Fraction(3, 2) * Fraction(5, 7) * Fraction(11, 13)
    assert th.epm_intensity_mean(3, 2, 5, 7, 11, 13) == pytest.approx(float(exact), rel=1e-15)
    assert th.cepm_intensity_mean(2, 5, 3, 4) == pytest.approx(3 / 40, rel=1e-15)
    assert th.depm_intensity_mean(3, 4, 6, 2) == pytest.approx(0.25, rel=1e-15)
    # CEPM = EPM with b1 = C1 a1, b2 = C2 a2; DEPM = CEPM with C1 = I, C2 = J (Sec. 4.2)
    a1, a2, C1, C2 = 0.7, 3.1, 2.5, 0.4
    assert th.cepm_intensity_mean(C1, C2, 1.3, 0.9) == pytest.approx(
        th.epm_intensity_mean(a1, C1 * a1, a2, C2 * a2, 1.3, 0.9), rel=1e-14)
    assert th.depm_intensity_mean(7, 3, 1.3, 0.9) == pytest.approx(
        th.cepm_intensity_mean(7, 3, 1.3, 0.9), rel=1e-14)


def _assert_mc_mean(draws, exact, n_se=5.0):
    est, se = draws.mean(), draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(est - exact) < n_se * se, (est, exact, se)
    return est, se


def test_epm_and_cepm_intensity_means_monte_carlo():
    # E[sum_k U_ik V_jk lambda_k] over a T-atom truncation is exactly Theorem 1's value
    rng = np.random.default_rng(20170101)
    n, T = 200_000, 8
    a1, b1, a2, b2, g0, c0 = 2.0, 4.0, 3.0, 1.5, 5.0, 2.0
    U = rng.gamma(a1, 1 / b1, size=(n, T))
    V = rng.gamma(a2, 1 / b2, size=(n, T))
    lam = rng.gamma(g0 / T, 1 / c0, size=(n, T))
    _assert_mc_mean((U * V * lam).sum(axis=1), th.epm_intensity_mean(a1, b1, a2, b2, g0, c0))
    C1, C2 = 3.0, 0.5
    U = rng.gamma(a1, 1 / (C1 * a1), size=(n, T))
    V = rng.gamma(a2, 1 / (C2 * a2), size=(n, T))
    _assert_mc_mean((U * V * lam).sum(axis=1), th.cepm_intensity_mean(C1, C2, g0, c0))


def test_depm_intensity_mean_monte_carlo():
    rng = np.random.default_rng(20170102)
    I, J, T, n = 3, 5, 6, 100_000
    phi, psi, lam = prior_draw(rng, I, J, T, 0.5, 2.0, 4.0, 0.5, n)
    exact = th.depm_intensity_mean(I, J, 4.0, 0.5)
    assert exact == pytest.approx(4.0 / (3 * 5 * 0.5))
    for i, j in [(0, 0), (2, 4)]:
        _assert_mc_mean((phi[:, i, :] * psi[:, j, :] * lam).sum(axis=1), exact)


# --------------------------------------------------------------------------- log_joint_counts (Eq. 41)
def test_log_joint_counts_hand_values():
    g0, c0 = 1.7, 0.6
    # I = J = T = 1, one customer: E[lambda e^-lambda] = g0 c0^g0 / (c0 + 1)^(g0 + 1)
    assert th.log_joint_counts([[[1]]], 0.3, 0.8, g0, c0) == pytest.approx(
        math.log(g0 * c0 ** g0 / (c0 + 1) ** (g0 + 1)), rel=1e-13)
    # I = 2, J = 1, T = 1, one customer in each row: E[phi_1 phi_2] = a^2 / (2a (2a + 1))
    a = 0.5
    e_phi = a * a / (2 * a * (2 * a + 1))                      # = 1/8
    e_lam = g0 * (g0 + 1) * c0 ** g0 / (c0 + 1) ** (g0 + 2)
    assert th.log_joint_counts([[[1]], [[1]]], a, 5.0, g0, c0) == pytest.approx(
        math.log(e_phi * e_lam), rel=1e-13)
    # with T = 2 and both customers on atom 2: the empty atom contributes (c0/(c0+1))^(g0/2)
    t = g0 / 2
    e_lam2 = (c0 / (c0 + 1)) ** t * t * (t + 1) * c0 ** t / (c0 + 1) ** (t + 2)
    assert th.log_joint_counts([[[0, 1]], [[0, 1]]], a, 5.0, g0, c0) == pytest.approx(
        math.log(e_phi * e_lam2), rel=1e-13)


def test_log_joint_counts_one_entry_is_negative_binomial_times_dirichlet_multinomial():
    # I = J = 1: phi = psi = 1, so m_11. ~ NB(g0, c0/(c0+1)) and, given it, the atom
    # counts ~ Dirichlet-multinomial(g0/T, ..., g0/T); alpha1, alpha2 play no role.
    g0, c0, T = 2.3, 0.7, 3
    for n in range(0, 7):
        for c in compositions(n, T):
            m = np.array(c).reshape(1, 1, T)
            got = log_multinomial_coef(m) + th.log_joint_counts(m, 0.4, 3.0, g0, c0)
            want = math.log(nb_pmf(n, g0, c0))
            if n > 0:
                want += stats.dirichlet_multinomial.logpmf(c, np.full(T, g0 / T), n)
            assert got == pytest.approx(want, abs=1e-12)
            assert th.log_joint_counts(m, 9.0, 0.1, g0, c0) == pytest.approx(
                th.log_joint_counts(m, 0.4, 3.0, g0, c0), abs=1e-12)


def test_log_joint_counts_marginals_follow_the_generative_process():
    # Given theta, the M ~ Poisson(sum_k lambda_k) customers choose k w.p. lambda_k / sum lambda,
    # then i ~ phi_.k and j ~ psi_.k independently.  Summing P(m) = coef x P(m, z) over all
    # (I, J, T) arrays with total n must give, for the (i, k) and (j, k) margins,
    # NB(n) x DirMult(m_..k; g0/T) x prod_k DirMult(m_i.k; alpha1) (resp. m_.jk; alpha2).
    I, J, T = 2, 3, 2
    a1, a2, g0, c0 = 0.6, 2.5, 1.4, 0.8
    for n in range(0, 5):
        total, by_ik, by_jk = 0.0, {}, {}
        for m in count_arrays(I, J, T, n):
            p = math.exp(log_multinomial_coef(m) + th.log_joint_counts(m, a1, a2, g0, c0))
            total += p
            key_ik, key_jk = tuple(m.sum(axis=1).ravel()), tuple(m.sum(axis=0).ravel())
            by_ik[key_ik] = by_ik.get(key_ik, 0.0) + p
            by_jk[key_jk] = by_jk.get(key_jk, 0.0) + p
        assert total == pytest.approx(nb_pmf(n, g0, c0), rel=1e-12)
        for table, size, alpha in ((by_ik, I, a1), (by_jk, J, a2)):
            for key, p in table.items():
                mk = np.array(key).reshape(size, T)
                want = nb_pmf(n, g0, c0)
                if n > 0:
                    want *= stats.dirichlet_multinomial.pmf(mk.sum(axis=0), np.full(T, g0 / T), n)
                for k in range(T):
                    if mk[:, k].sum() > 0:
                        want *= stats.dirichlet_multinomial.pmf(mk[:, k], np.full(size, alpha),
                                                                mk[:, k].sum())
                assert p == pytest.approx(want, rel=1e-11)


@pytest.mark.slow
def test_log_joint_counts_matches_monte_carlo_over_the_prior():
    # P(m, z) = E_prior[P(m, z | phi, psi, lambda)]; average the likelihood ratio
    # exp(log_lemma1_direct - log_joint_counts), whose mean is exactly 1.
    rng = np.random.default_rng(20170103)
    I, J, T, n = 2, 2, 2, 20_000
    a1, a2, g0, c0 = 0.5, 2.0, 3.0, 1.5
    m = np.array([[[1, 0], [0, 2]], [[1, 1], [0, 0]]])
    exact = th.log_joint_counts(m, a1, a2, g0, c0)
    phi, psi, lam = prior_draw(rng, I, J, T, a1, a2, g0, c0, n)
    w = np.array([math.exp(th.log_lemma1_direct(m, phi[s], psi[s], lam[s]) - exact) for s in range(n)])
    est, se = _assert_mc_mean(w, 1.0)
    assert se < 0.05                         # the check has power: a 20% error is > 4 SE


# --------------------------------------------------------------------------- log_partition_likelihood (Eq. 42, Eq. 5)
M_ACTIVE = np.array([[[2, 0, 1], [1, 1, 0]],
                     [[0, 3, 0], [1, 0, 2]]])           # I = J = 2, K+ = 3, m_..k = (4, 4, 3)
PARS = dict(alpha1=0.7, alpha2=1.9, gamma0=2.5, c0=0.4)


@pytest.mark.parametrize("T", [3, 4, 7, 50, 1000])
def test_partition_likelihood_is_labelled_joint_times_falling_factorial(T):
    K = M_ACTIVE.shape[2]
    padded = np.concatenate([M_ACTIVE, np.zeros((2, 2, T - K), dtype=int)], axis=2)
    padded = padded[:, :, np.random.default_rng(T).permutation(T)]   # empty atoms anywhere
    want = th.log_joint_counts(padded, **PARS) + gammaln(T + 1) - gammaln(T - K + 1)
    assert th.log_partition_likelihood(M_ACTIVE, T=T, **PARS) == pytest.approx(want, abs=1e-10)


def test_partition_likelihood_infinite_hand_value():
    # I = J = 1, three customers in blocks of sizes 2 and 1:
    # 1/3! * g0^2 (c0/(c0+1))^g0 * Gamma(2) Gamma(1) / (c0+1)^3
    g0, c0 = 1.3, 0.5
    want = math.log(g0 ** 2 * (c0 / (c0 + 1)) ** g0 / (c0 + 1) ** 3 / 6)
    assert th.log_partition_likelihood([[[2, 1]]], 0.2, 4.0, g0, c0, math.inf) == pytest.approx(want, rel=1e-13)
    assert th.log_partition_likelihood([[[2, 1]]], 0.2, 4.0, g0, c0, np.inf) == pytest.approx(want, rel=1e-13)


def test_partition_likelihood_converges_like_one_over_T():
    # log P_T - log P_inf = c1/T + c2/T^2 + ..., with
    # c1 = g0 sum_k (digamma(m_..k) - digamma(1)) - K+(K+-1)/2  (from Eq. 42 term by term).
    m_k = M_ACTIVE.sum(axis=(0, 1))
    K, g0 = len(m_k), PARS["gamma0"]
    c1 = g0 * np.sum(digamma(m_k) - digamma(1)) - K * (K - 1) / 2
    c2 = -np.sum(np.arange(K) ** 2) / 2 + g0 ** 2 / 2 * np.sum(polygamma(1, m_k) - polygamma(1, 1))
    assert abs(c1) > 1.0
    log_inf = th.log_partition_likelihood(M_ACTIVE, T=math.inf, **PARS)
    Ts = np.array([10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6])
    err = np.array([th.log_partition_likelihood(M_ACTIVE, T=int(T), **PARS) - log_inf for T in Ts])
    for T, e in zip(Ts, err):
        assert abs(T * e - c1) < 2 * abs(c2) / T + 1e-6
    slope = np.polyfit(np.log(Ts), np.log(np.abs(err)), 1)[0]
    assert slope == pytest.approx(-1.0, abs=0.01)


def test_falling_factorial_counts_labellings_by_enumeration():
    # Four labelled customers (I = 2, J = 1; entries hold 3 and 1), T = 4 atoms: every one
    # of the 4^4 labelled assignments z, grouped by the partition it induces.  Each partition
    # with K+ blocks is hit by exactly T!/(T-K+)! assignments, and the sum of P(m, z) over
    # them is P(m, [z]).
    I, J, T = 2, 1, 4
    entry = [(0, 0), (0, 0), (0, 0), (1, 0)]
    groups = {}
    for z in itertools.product(range(T), repeat=len(entry)):
        blocks = frozenset(frozenset(s for s in range(len(z)) if z[s] == k) for k in set(z))
        m = np.zeros((I, J, T), dtype=int)
        for (i, j), k in zip(entry, z):
            m[i, j, k] += 1
        groups.setdefault(blocks, []).append(th.log_joint_counts(m, **PARS))
    assert len(groups) == 15                               # Bell(4) set partitions
    for blocks, logps in groups.items():
        K = len(blocks)
        assert len(logps) == math.factorial(T) // math.factorial(T - K)
        assert np.ptp(logps) < 1e-12                        # the same P(m, z) for all of them
        m = np.zeros((I, J, K), dtype=int)
        for k, block in enumerate(sorted(blocks, key=min)):
            for s in block:
                m[entry[s][0], entry[s][1], k] += 1
        assert th.log_partition_likelihood(m, T=T, **PARS) == pytest.approx(
            np.logaddexp.reduce(logps), abs=1e-12)


@pytest.mark.parametrize("T", [3, 4, math.inf])
def test_partition_likelihood_normalises_to_negative_binomial(T):
    # Sum over all (m_ij.) arrays with total n (I = J = 2) and all set partitions of the
    # n labelled customers (at most T blocks) of P(m, [z]) = P(M = n) = NB(n; g0, c0/(c0+1)).
    # For T = inf this is Theorem 4's law summing to the IDEPM's law of the total.
    I, J = 2, 2
    for n in range(1, 5):
        total = 0.0
        for m_ij in compositions(n, I * J):
            entry = [(e // J, e % J) for e, c in enumerate(m_ij) for _ in range(c)]
            for z in set_partitions(n):         # z[s]: the block of customer s
                if max(z) + 1 > T:
                    continue
                m = np.zeros((I, J, max(z) + 1), dtype=int)
                for s, k in enumerate(z):
                    m[entry[s][0], entry[s][1], k] += 1
                total += math.exp(th.log_partition_likelihood(m, T=T, **PARS))
        assert total == pytest.approx(nb_pmf(n, PARS["gamma0"], PARS["c0"]), rel=1e-12)


# --------------------------------------------------------------------------- Lemma 1 (Eq. 37)
def _random_instance(rng, I, J, T, normalised=True):
    m = rng.poisson(0.8, size=(I, J, T))
    phi = rng.gamma(1.0, 1.0, size=(I, T))
    psi = rng.gamma(1.0, 1.0, size=(J, T))
    if normalised:
        phi, psi = phi / phi.sum(axis=0), psi / psi.sum(axis=0)
    return m, phi, psi, rng.gamma(2.0, 1.5, size=T)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 4), (5, 2, 3), (4, 4, 6)])
def test_lemma1_factorised_equals_direct_on_the_simplex(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        m, phi, psi, lam = _random_instance(rng, *shape)
        assert th.log_lemma1_factorised(m, phi, psi, lam) == pytest.approx(
            th.log_lemma1_direct(m, phi, psi, lam), abs=1e-10)


def test_lemma1_direct_is_poisson_times_categorical():
    rng = np.random.default_rng(7)
    m, phi, psi, lam = _random_instance(rng, 3, 2, 4, normalised=False)
    want = 0.0
    for i in range(3):
        for j in range(2):
            rate = phi[i] * psi[j] * lam
            want += stats.poisson.logpmf(m[i, j].sum(), rate.sum())
            for k in range(4):
                want += m[i, j, k] * math.log(rate[k] / rate.sum())
    assert th.log_lemma1_direct(m, phi, psi, lam) == pytest.approx(want, abs=1e-10)


def test_lemma1_fails_without_the_l1_constraint():
    # Off the simplex the two differ by exactly sum_k lambda_k [1 - (sum_i phi_ik)(sum_j psi_jk)]
    # (Eq. 40 versus Eq. 37).
    rng = np.random.default_rng(8)
    for _ in range(10):
        m, phi, psi, lam = _random_instance(rng, 3, 4, 2, normalised=False)
        diff = th.log_lemma1_direct(m, phi, psi, lam) - th.log_lemma1_factorised(m, phi, psi, lam)
        want = np.sum(lam * (1.0 - phi.sum(axis=0) * psi.sum(axis=0)))
        assert abs(want) > 1e-3
        assert diff == pytest.approx(want, abs=1e-10)


def test_lemma1_zero_parameters():
    m = np.array([[[1, 0]], [[0, 0]]])                         # I = 2, J = 1, T = 2
    phi = np.array([[1.0, 0.0], [0.0, 1.0]])
    psi = np.ones((1, 2))
    lam = np.array([0.5, 0.0])
    for f in (th.log_lemma1_direct, th.log_lemma1_factorised):
        with np.errstate(all="raise"):
            assert f(m, phi, psi, lam) == pytest.approx(math.log(0.5) - 0.5, abs=1e-14)
            assert f(m[::-1], phi, psi, lam) == -math.inf      # the customer sits where phi = 0


# --------------------------------------------------------------------------- invalid arguments
BAD_REALS = [0, -1.0, float("nan"), float("inf"), -float("inf"), True, False, "1", None, 1j]
GOOD_COUNTS = np.array([[[1, 0], [2, 1]]])                  # I = 1, J = 2, T = 2


@pytest.mark.parametrize("bad", BAD_REALS)
@pytest.mark.parametrize("pos", range(6))
def test_epm_intensity_mean_rejects(bad, pos):
    args = [1.0] * 6
    args[pos] = bad
    name = ["a1", "b1", "a2", "b2", "gamma0", "c0"][pos]
    with pytest.raises(ValueError, match=name):
        th.epm_intensity_mean(*args)


@pytest.mark.parametrize("bad", BAD_REALS)
@pytest.mark.parametrize("pos", range(4))
def test_cepm_intensity_mean_rejects(bad, pos):
    args = [1.0] * 4
    args[pos] = bad
    with pytest.raises(ValueError, match=["C1", "C2", "gamma0", "c0"][pos]):
        th.cepm_intensity_mean(*args)


@pytest.mark.parametrize("bad", BAD_REALS)
@pytest.mark.parametrize("pos", [2, 3])
def test_depm_intensity_mean_rejects_parameters(bad, pos):
    args = [2, 3, 1.0, 1.0]
    args[pos] = bad
    with pytest.raises(ValueError, match=["I", "J", "gamma0", "c0"][pos]):
        th.depm_intensity_mean(*args)


@pytest.mark.parametrize("bad", [0, -2, 2.5, 2.0, True, "3", None, float("nan")])
@pytest.mark.parametrize("pos", [0, 1])
def test_depm_intensity_mean_rejects_sizes(bad, pos):
    args = [2, 3, 1.0, 1.0]
    args[pos] = bad
    with pytest.raises(ValueError, match=["I", "J"][pos] + " must be a positive integer"):
        th.depm_intensity_mean(*args)


BAD_COUNTS = [
    (np.array([[[1, -1]]]), "non-negative"),
    (np.array([[[1.0, 0.5]]]), "integers"),
    (np.array([[[1.0, np.nan]]]), "NaN"),
    (np.array([[[1.0, np.inf]]]), "NaN or infinite"),
    (np.array([[1, 2]]), "3-d"),
    (np.ones((1, 1, 1, 2), dtype=int), "3-d"),
    (np.array(3), "3-d"),
    (np.array([[[True, False]]]), "integers"),
    (np.array([[["a", "b"]]]), "integers"),
    (np.zeros((0, 1, 2), dtype=int), "empty"),
]


@pytest.mark.parametrize("counts, msg", BAD_COUNTS)
def test_count_functions_reject_bad_counts(counts, msg):
    with pytest.raises(ValueError, match=msg):
        th.log_joint_counts(counts, 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=msg):
        th.log_partition_likelihood(counts, 1.0, 1.0, 1.0, 1.0, T=math.inf)
    with pytest.raises(ValueError, match=msg):
        th.log_lemma1_direct(counts, np.full((1, 2), 0.5), np.full((1, 2), 0.5), np.ones(2))
    with pytest.raises(ValueError, match=msg):
        th.log_lemma1_factorised(counts, np.full((1, 2), 0.5), np.full((1, 2), 0.5), np.ones(2))


@pytest.mark.parametrize("bad", BAD_REALS)
@pytest.mark.parametrize("name", ["alpha1", "alpha2", "gamma0", "c0"])
def test_count_functions_reject_bad_parameters(bad, name):
    pars = dict(alpha1=1.0, alpha2=1.0, gamma0=1.0, c0=1.0)
    pars[name] = bad
    with pytest.raises(ValueError, match=name):
        th.log_joint_counts(GOOD_COUNTS, **pars)
    with pytest.raises(ValueError, match=name):
        th.log_partition_likelihood(GOOD_COUNTS, T=5, **pars)


@pytest.mark.parametrize("T, msg", [
    (1, "smaller than the number of active atoms K\\+ = 2"),
    (0, "smaller than the number of active atoms"),
    (-3, "smaller than the number of active atoms"),
    (2.5, "T must be an integer"),
    (3.0, "T must be an integer"),
    (float("nan"), "T must be an integer"),
    (-math.inf, "T must be an integer"),
    (True, "T must be an integer"),
    ("4", "T must be an integer"),
    (None, "T must be an integer"),
])
def test_partition_likelihood_rejects_bad_T(T, msg):
    with pytest.raises(ValueError, match=msg):
        th.log_partition_likelihood(GOOD_COUNTS, 1.0, 1.0, 1.0, 1.0, T=T)


def test_partition_likelihood_rejects_empty_atoms():
    counts = np.array([[[1, 0, 2], [0, 0, 1]]])
    with pytest.raises(ValueError, match=r"atom\(s\) \[1\] have no customers"):
        th.log_partition_likelihood(counts, 1.0, 1.0, 1.0, 1.0, T=10)


def test_partition_likelihood_accepts_numpy_integer_T():
    a = th.log_partition_likelihood(GOOD_COUNTS, 1.0, 1.0, 1.0, 1.0, T=np.int64(5))
    assert a == th.log_partition_likelihood(GOOD_COUNTS, 1.0, 1.0, 1.0, 1.0, T=5)


PHI, PSI, LAM = np.full((1, 2), 0.5), np.full((2, 2), 0.5), np.ones(2)   # match GOOD_COUNTS


@pytest.mark.parametrize("phi, psi, lam, msg", [
    (np.array([0.5, 0.5]), PSI, LAM, "phi must have shape \\(1, 2\\)"),
    (np.full((2, 2), 0.5), PSI, LAM, "phi must have shape"),
    (PHI, np.full((2, 1), 0.5), LAM, "psi must have shape \\(2, 2\\)"),
    (PHI, PSI, np.ones(1), "lam must have shape \\(2,\\)"),
    (PHI, PSI, np.ones((1, 2)), "lam must have shape"),
    (np.array([[-0.5, 1.5]]), PSI, LAM, "phi must hold finite non-negative"),
    (PHI, np.array([[np.nan, 0.5], [0.5, 0.5]]), LAM, "psi must hold finite non-negative"),
    (PHI, PSI, np.array([1.0, np.inf]), "lam must hold finite non-negative"),
    (PHI, PSI, np.array([1.0, -1.0]), "lam must hold finite non-negative"),
    (PHI, PSI, np.array([True, True]), "lam must be a real array"),
    (np.array([["a", "b"]]), PSI, LAM, "phi must be a real array"),
])
def test_lemma1_rejects_bad_parameters(phi, psi, lam, msg):
    for f in (th.log_lemma1_direct, th.log_lemma1_factorised):
        with pytest.raises(ValueError, match=msg):
            f(GOOD_COUNTS, phi, psi, lam)
