"""epm_lib.stacking: the weights maximise the held-out log score (Yao, Vehtari & Gelman 2022)."""
import numpy as np
import pytest
from scipy.optimize import minimize

from epm_lib.stacking import log_score, stacking_weights


def _problem(n, k, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(int)
    P = np.clip(0.2 + 0.15 * rng.standard_normal((n, k)) + 0.3 * y[:, None] * rng.random(k), 1e-3, 1 - 1e-3)
    return P, y


def _best_by_scipy(P, y):
    k = P.shape[1]
    f = lambda z: -log_score(P, y, np.exp(z) / np.exp(z).sum())  # noqa: E731
    z = minimize(f, np.zeros(k), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}).x
    return np.exp(z) / np.exp(z).sum()


@pytest.mark.parametrize("k, seed", [(2, 0), (2, 1), (3, 2)])
def test_weights_maximise_the_log_score(k, seed):
    P, y = _problem(2000, k, seed)
    w = stacking_weights(P, y)
    assert w.shape == (k,) and np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    ref = _best_by_scipy(P, y)
    assert log_score(P, y, w) >= log_score(P, y, ref) - 1e-9
    for e in np.eye(k):                     # no vertex, no small step, does better
        assert log_score(P, y, w) >= log_score(P, y, 0.999 * w + 0.001 * e) - 1e-12


def test_two_chains_exact_and_at_the_boundary():
    P, y = _problem(5000, 2, 3)
    w = stacking_weights(P, y)
    grid = np.linspace(0, 1, 2001)
    scores = [log_score(P, y, [a, 1 - a]) for a in grid]
    assert abs(w[0] - grid[int(np.argmax(scores))]) <= 1e-3
    good = np.column_stack([np.where(y == 1, 0.9, 0.1), np.full(y.size, 0.5)])   # chain 0 dominates everywhere
    assert stacking_weights(good, y).tolist() == [1.0, 0.0]
    assert stacking_weights(good[:, ::-1], y).tolist() == [0.0, 1.0]

