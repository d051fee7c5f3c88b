"""epm_lib.chains: several chains, ArviZ's split-R-hat and ESS."""
import numpy as np
import pytest

import epm_lib
from epm_lib import chains


def small(seed=0, I=25, J=20):
    rng = np.random.default_rng(seed)
    return (rng.random((I, J)) < 0.15).astype(np.int8)


def test_fit_chains_traces_and_seeds():
    X = small()
    cs = epm_lib.fit_chains(X, "IDEPM", starts=(1, 30), n_iter=40, n_avg=5)
    assert cs.seeds == [0, 1] and cs.starts == [1, 30]
    post = cs.idata.posterior
    assert dict(post.sizes)["chain"] == 2 and dict(post.sizes)["draw"] == 40
    assert set(post.data_vars) == {"K", "M", "alpha1", "alpha2", "gamma0", "c0"}
    # every chain is exactly the run of fit with its start and seed
    one = epm_lib.fit(X, "IDEPM", K_init=30, seed=1, n_iter=40, n_avg=5)
    assert np.array_equal(post["K"].values[1], one.K)
    assert np.array_equal(post["gamma0"].values[1], one.hyper["gamma0"])


def test_parallel_chains_equal_serial():
    X = small(1)
    a = epm_lib.fit_chains(X, "DEPM", T=6, starts=(1, 6), n_iter=20, n_avg=5)
    b = epm_lib.fit_chains(X, "DEPM", T=6, starts=(1, 6), n_iter=20, n_avg=5, n_jobs=2)
    for ra, rb in zip(a.results, b.results):
        assert np.array_equal(ra.K, rb.K) and np.array_equal(ra.hyper["c0"], rb.hyper["c0"])


def test_diagnostics_match_arviz_and_detect_disagreement():
    az = chains._arviz()
    rng = np.random.default_rng(0)
    same = rng.normal(size=(4, 1000))
    shifted = same + np.array([[0.0], [0.0], [3.0], [3.0]])
    idata = az.from_dict(posterior={"same": same, "shifted": shifted})
    d = chains.diagnostics(idata, burn_in=0)
    assert d["same"]["rhat"] < 1.01 and d["shifted"]["rhat"] > 1.5
    assert d["same"]["rhat"] == pytest.approx(float(az.rhat(same)))
    assert d["same"]["ess_bulk"] == pytest.approx(float(az.ess(same, method="bulk")))
    # burn-in drops the first draws of every chain
    d2 = chains.diagnostics(idata, burn_in=0.5, var_names=["same"])
    assert d2["same"]["rhat"] == pytest.approx(float(az.rhat(same[:, 500:])))


def test_tdll_traced_with_a_test_set():
    X = small(2)
    zeros = np.argwhere(X == 0)[:20]
    test = (zeros[:, 0], zeros[:, 1], np.zeros(20, dtype=int))
    cs = epm_lib.fit_chains(X, "IDEPM", starts=(1, 20), n_iter=12, n_avg=4, test=test)
    assert "tdll" in cs.idata.posterior.data_vars
    d = cs.diagnostics(burn_in=4, var_names=["K", "tdll"])
    assert set(d) == {"K", "tdll"} and all(np.isfinite(d["tdll"][k]) for k in d["tdll"])


@pytest.mark.parametrize("kwargs,msg", [
    (dict(starts=(1,)), "at least two starts"),
    (dict(starts=(1, 5), seeds=(0,)), "one seed per start"),
    (dict(starts=(1, 5), seeds=(3, 3)), "different seeds"),
    (dict(starts=(1, 5), K_init=3), "through starts/seeds"),
])
def test_fit_chains_refuses(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        epm_lib.fit_chains(small(), "IDEPM", n_iter=2, n_avg=1, **kwargs)


def test_diagnostics_refuses_bad_burn_in():
    cs = epm_lib.fit_chains(small(), "IDEPM", starts=(1, 5), n_iter=10, n_avg=1)
    for bad, msg in ((1.0, "fraction"), (8, "fewer than 4"), ("x", "fraction or a number")):
        with pytest.raises(ValueError, match=msg):
            cs.diagnostics(burn_in=bad)
    with pytest.raises(ValueError, match="unknown variable"):
        cs.diagnostics(var_names=["nope"])
