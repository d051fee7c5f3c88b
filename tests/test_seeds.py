"""Seeds (issue 30, item 5): fit takes an int, a SeedSequence or a Generator; fit_chains spawns its
chains' seeds from one seed; integer seeds keep today's draws."""
import numpy as np
import pytest

import epm_lib
from epm_lib.chains import fit_chains, spawn_seeds
from epm_lib.datasets import make_toy90
from epm_lib.fit_options import as_seed

X = make_toy90(0)[0]


def _same(a, b):
    return (np.array_equal(a.K, b.K) and np.array_equal(a.tdll_trace, b.tdll_trace, equal_nan=True)
            and all(np.array_equal(a.hyper[k], b.hyper[k]) for k in a.hyper))


def test_as_seed():
    assert as_seed(7) == 7 and as_seed(np.int64(7)) == 7 and as_seed([1, 2]) == [1, 2]
    ss = np.random.SeedSequence(5)
    assert as_seed(ss) == int(ss.generate_state(1, dtype=np.uint64)[0]) == as_seed(np.random.SeedSequence(5))
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert as_seed(g1) == as_seed(g2) and as_seed(g1) != as_seed(np.random.default_rng(3))   # a draw advances it
    for bad in (-1, 1.5, True, None, "7", [], [1, -2], np.random.RandomState(0)):
        with pytest.raises(ValueError, match="SeedSequence or a numpy.random.Generator"):
            as_seed(bad)


@pytest.mark.slow
@pytest.mark.parametrize("model, kw", [("DEPM", dict(T=8)), ("IDEPM", {})])
def test_fit_takes_a_seed_sequence_or_a_generator(model, kw):
    ss = np.random.SeedSequence(2017)
    a = epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=ss, **kw)
    b = epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=as_seed(np.random.SeedSequence(2017)), **kw)
    assert _same(a, b) and a.settings["seed"] == b.settings["seed"]            # the record reproduces it
    c = epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=np.random.default_rng(4), **kw)
    d = epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=np.random.default_rng(4), **kw)
    assert _same(c, d) and isinstance(c.settings["seed"], int)
    e = epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=c.settings["seed"], **kw)
    assert _same(c, e)
    with pytest.raises(ValueError, match="seed must be"):
        epm_lib.fit(X, model, n_iter=20, n_avg=5, seed=-3, **kw)


def test_fit_chains_spawns_from_one_seed_and_keeps_integer_seeds():
    s = spawn_seeds(11, 3)
    assert len(set(s)) == 3 and s == spawn_seeds(11, 3) == spawn_seeds(np.random.SeedSequence(11), 3)
    assert spawn_seeds(12, 3) != s
    cs = fit_chains(X, "IDEPM", starts=(1, 100), seed=11, n_iter=15, n_avg=5)
    assert cs.seeds == spawn_seeds(11, 2)
    for r, sd in zip(cs.results, cs.seeds):
        assert _same(r, epm_lib.fit(X, "IDEPM", K_init=r.settings["K_init"], n_iter=15, n_avg=5, seed=sd))
    plain = fit_chains(X, "IDEPM", starts=(1, 100), n_iter=15, n_avg=5)       # today's default: seeds 0, 1
    assert plain.seeds == [0, 1]
    assert _same(plain.results[1], epm_lib.fit(X, "IDEPM", K_init=100, n_iter=15, n_avg=5, seed=1))
    with pytest.raises(ValueError, match="not both"):
        fit_chains(X, "IDEPM", starts=(1, 100), seeds=(0, 1), seed=3, n_iter=15, n_avg=5)
