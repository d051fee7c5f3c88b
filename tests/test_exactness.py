"""epm_lib.exactness: the enumeration test of the split-merge moves (its statistical power and
size are tested on many instances in tests/test_moves.py; here its interface and bookkeeping)."""
import math

import numpy as np
import pytest

from epm_lib import exactness
from epm_lib.models import moves


def test_set_partitions_are_counted_by_the_bell_numbers():
    assert [len(exactness.set_partitions(M)) for M in range(0, 7)] == [1, 1, 2, 5, 15, 52, 203]
    assert exactness.set_partitions(0) == [[]]
    assert exactness.set_partitions(3) == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    # restricted-growth strings in lexicographic order: each label at most one more than the largest
    # before it, so that no two strings are one partition with its blocks named otherwise
    five = exactness.set_partitions(5)
    assert five == sorted(five) and len({tuple(s) for s in five}) == 52
    for s in five:
        assert s[0] == 0 and all(s[i] <= max(s[:i]) + 1 for i in range(1, 5))
    # every partition of 5 customers once: the blocks {s: z[s] = k} over all labellings seen
    blocks = {frozenset(frozenset(s for s in range(5) if z[s] == k) for k in range(max(z) + 1)) for z in five}
    assert len(blocks) == 52


@pytest.mark.parametrize("model, T, n_states", [("IDEPM", None, 52), ("DEPM", 3, 243)])
def test_exact_conditional(model, T, n_states):
    states, probs = exactness.exact_conditional(model, "3x2_M5", alpha1=0.5, alpha2=2.0,
                                                gamma0=3.0, T=T)
    assert len(states) == n_states and probs.sum() == pytest.approx(1.0) and probs.min() > 0
    if model == "DEPM":       # relabelling the atoms does not change the probability
        p = dict(zip(map(tuple, states), probs))
        for s in states[:40]:
            swapped = tuple({0: 1, 1: 0}.get(v, v) for v in s)
            assert p[tuple(s)] == pytest.approx(p[swapped])


def test_row_units_condition_on_row_consistent_states():
    states, probs = exactness.exact_conditional("IDEPM", "4x2_M7", alpha1=0.3, alpha2=0.3,
                                                gamma0=1.0, units=moves.UNIT_ROW)
    assert np.count_nonzero(probs) == 15            # the set partitions of the four rows


def test_pooled_chisquare():
    probs = np.array([0.5, 0.3, 0.15, 0.04, 0.01])
    chi2, p, cells = exactness.pooled_chisquare(probs * 1000, probs)
    assert chi2 == pytest.approx(0.0, abs=1e-12) and p == pytest.approx(1.0)
    assert cells == 5
    chi2, p, cells = exactness.pooled_chisquare(np.round(probs * 100), probs)
    assert cells == 4                               # the 1-expected cell joins the 4-expected one


@pytest.mark.slow
def test_partition_test_table_and_determinism():
    kw = dict(alpha1=0.5, alpha2=0.5, gamma0=2.0, T=3, n_samples=400, seed=3)
    a = exactness.partition_test("DEPM", "3x2_M5", **kw)
    b = exactness.partition_test("DEPM", "3x2_M5", **kw)
    assert a.p == b.p and a.table.equals(b.table) and np.array_equal(a.stats, b.stats)
    t = a.table
    assert len(t) == 243 and t["observed"].sum() == 400
    assert t["expected"].sum() == pytest.approx(400) and np.all(np.diff(np.round(t["prob"], 12)) <= 0)
    assert t["K"].between(1, 3).all() and 0 <= a.p <= 1 and a.chi2 >= 0
    # a mutation given by name or by number is the same kernel
    c = exactness.partition_test("DEPM", "3x2_M5", mutation="depm_without_label_factor", **kw)
    d = exactness.partition_test("DEPM", "3x2_M5", mutation=2, **kw)
    assert c.p == d.p and not math.isclose(c.p, a.p)


def test_partition_test_accepts_an_instance_tuple():
    inst = exactness.INSTANCES["3x2_M5"]
    a = exactness.partition_test("IDEPM", inst, n_samples=200, seed=1)
    b = exactness.partition_test("IDEPM", "3x2_M5", n_samples=200, seed=1)
    assert a.p == b.p and len(a.table) == 52


@pytest.mark.parametrize("kw", [dict(model="EPM"), dict(model="IDEPM", T=3),
                                dict(model="DEPM"), dict(model="DEPM", T=1),
                                dict(model="IDEPM", mutation="no_such_mutation"),
                                dict(model="IDEPM", mutation=7),
                                dict(model="IDEPM", n_samples=0)])
def test_partition_test_refuses_bad_arguments(kw):
    with pytest.raises(ValueError):
        exactness.partition_test(instance="3x2_M5", **kw)
