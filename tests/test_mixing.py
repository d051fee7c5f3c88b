"""epm_lib.mixing (chapters 24 and 24b): the integrated autocorrelation time of a trace."""
import numpy as np

from epm_lib.mixing import ess, iat


def _ar1(rng, n, rho, reps):
    y = np.empty((reps, n))
    y[:, 0] = rng.standard_normal(reps) / np.sqrt(1 - rho ** 2)
    eps = rng.standard_normal((reps, n))
    for t in range(1, n):
        y[:, t] = rho * y[:, t - 1] + eps[:, t]
    return y


def test_iat_of_ar1_is_its_exact_value():
    """AR(1) with rho: tau = (1 + rho) / (1 - rho) exactly; the mean estimate over 200 chains of 5000 lies
    within 4 standard errors plus the estimator's downward bias 2 tau^2 / n (chapter 24's check). White
    noise (tau = 1): the initial positive sequence keeps a few noise pairs, an upward bias of a few per cent."""
    rng = np.random.default_rng(3)
    white = np.array([iat(y) for y in _ar1(rng, 5000, 0.0, 200)])
    assert 1 <= white.mean() < 1.05, white.mean()
    for rho in (0.5, 0.9):
        est = np.array([iat(y) for y in _ar1(rng, 5000, rho, 200)])
        tau = (1 + rho) / (1 - rho)
        assert abs(est.mean() - tau) < 4 * est.std(ddof=1) / np.sqrt(est.size) + 2 * tau ** 2 / 5000, (rho, est.mean())


def test_iat_of_constant_trace_is_nan_and_ess_is_n_over_tau():
    assert np.isnan(iat(np.full(50, 3.0)))
    y = np.random.default_rng(0).standard_normal(1000)
    assert ess(y) == len(y) / iat(y)


def test_paper_runs_reads_the_stored_grid():
    """results.paper_runs: every DEPM truncation level and the default IDEPM, ten folds, on Enron09."""
    from pathlib import Path
    from epm_lib.experiments import PAPER_T
    from epm_lib.results import paper_runs

    runs = paper_runs(Path(__file__).resolve().parent.parent / "results", "enron09")
    assert set(runs) == {("DEPM", T) for T in PAPER_T} | {("IDEPM", None)}
    assert all(sorted(v) == list(range(10)) for v in runs.values())
    assert paper_runs(Path(__file__).resolve().parent.parent / "results", "no-such-data") == {}
