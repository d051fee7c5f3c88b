"""Geweke "getting it right" tests of the four samplers (epm_lib.geweke).

Each sampler must reproduce the prior's joint law of (parameters, data) when
its sweep alternates with fresh data draws; the same test must FAIL for the
updates as printed in the paper (EPM and CEPM a-updates, IDEPM m-step), which
shows the test has the power to catch a wrong conditional.

Threshold: each model contributes about 20-30 z-scores; under the null each is
approximately N(0, 1), so P(max |z| > 4.5) < 30 * 6.8e-6 = 2e-4.
"""
import numpy as np
import pytest

from epm_lib import geweke

Z_MAX = 4.5
N = {"EPM": 20000, "CEPM": 20000, "DEPM": 20000, "IDEPM": 6000}


def _max_z(model, n, **kw):
    prior = geweke.prior_draws(model, n, seed=11)
    succ = geweke.successive_draws(model, n, seed=12, **kw)
    rows = geweke.compare(prior, succ)
    return max(abs(r[4]) for r in rows), rows


@pytest.mark.slow
@pytest.mark.parametrize("model", ["EPM", "CEPM", "DEPM", "IDEPM"])
def test_sampler_gets_it_right(model):
    zmax, rows = _max_z(model, N[model])
    worst = max(rows, key=lambda r: abs(r[4]))
    assert zmax < Z_MAX, f"{model}: Geweke test failed, worst statistic {worst}"


@pytest.mark.slow
@pytest.mark.parametrize("model,kw", [("EPM", {"a_update": "paper"}),
                                      ("CEPM", {"a_update": "paper"}),
                                      ("IDEPM", {"m_step": "paper"})])
def test_paper_updates_are_caught(model, kw):
    zmax, rows = _max_z(model, N[model] if model != "IDEPM" else 12000, **kw)
    assert zmax > Z_MAX, f"{model} {kw}: the test did not detect the paper's update (max |z| = {zmax:.2f})"


@pytest.mark.slow
@pytest.mark.parametrize("model", ["DEPM", "IDEPM"])
def test_sampler_with_split_merge_moves_gets_it_right(model):
    """The same test with the split-merge moves of models.moves in every sweep (3 proposals)."""
    zmax, rows = _max_z(model, N[model], split_merge=3)
    worst = max(rows, key=lambda r: abs(r[4]))
    assert zmax < Z_MAX, f"{model} with split-merge: Geweke test failed, worst statistic {worst}"


MASK = np.zeros((4, 3), dtype=bool)
MASK[0, :] = True          # a fully missing row
MASK[2, 1] = True          # and one missing entry


@pytest.mark.slow
@pytest.mark.parametrize("model,kw", [("EPM", {}), ("CEPM", {}), ("DEPM", {}), ("IDEPM", {}),
                                      ("IDEPM", {"split_merge": 3})])
def test_sampler_with_missing_entries_gets_it_right(model, kw):
    """Missing entries (fit(mask=...)) are left out of the likelihood exactly: the successive
    chain, whose data hide the masked entries, still reproduces the prior's joint law."""
    zmax, rows = _max_z(model, N[model] // 2 if model != "IDEPM" else N[model], mask=MASK, **kw)
    worst = max(rows, key=lambda r: abs(r[4]))
    assert zmax < Z_MAX, f"{model} {kw} with a mask: Geweke test failed, worst statistic {worst}"


@pytest.mark.slow
def test_compare_has_no_false_alarm_between_two_prior_samples():
    a = geweke.prior_draws("DEPM", 5000, seed=1)
    b = geweke.prior_draws("DEPM", 5000, seed=2)
    rows = geweke.compare(a, b)
    assert max(abs(r[4]) for r in rows) < Z_MAX


@pytest.mark.slow
def test_moves_mutation_switch():
    """``moves_mutation=0`` is the exact move (the same draws as without it); a mutation changes
    the chain; it exists only for the IDEPM with moves."""
    a = geweke.successive_draws("IDEPM", 300, seed=5, split_merge=3)
    b = geweke.successive_draws("IDEPM", 300, seed=5, split_merge=3, moves_mutation=0)
    c = geweke.successive_draws("IDEPM", 300, seed=5, split_merge=3, moves_mutation=1)
    assert all(np.array_equal(a[s], b[s]) for s in a)
    assert not all(np.array_equal(a[s], c[s]) for s in a)
    for kw in ({"model": "DEPM", "split_merge": 3}, {"model": "IDEPM", "split_merge": 0}):
        with pytest.raises(ValueError):
            geweke.successive_draws(n=10, moves_mutation=1, **kw)
