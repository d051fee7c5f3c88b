"""epm_lib.chains: several chains, ArviZ's split-R-hat and ESS."""
import json

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
    assert set(post.data_vars) == {"K", "M", "log_joint", "alpha1", "alpha2", "gamma0", "c0"}
    assert np.array_equal(post["log_joint"].values[0], cs.results[0].log_joint)
    # every chain is exactly the run of fit with its start and seed
    one = epm_lib.fit(X, "IDEPM", K_init=30, seed=1, n_iter=40, n_avg=5)
    assert np.array_equal(post["K"].values[1], one.K)
    assert np.array_equal(post["gamma0"].values[1], one.hyper["gamma0"])


@pytest.mark.slow
def test_parallel_chains_equal_serial():
    X = small(1)
    a = epm_lib.fit_chains(X, "DEPM", T=6, starts=(1, 6), n_iter=20, n_avg=5)
    b = epm_lib.fit_chains(X, "DEPM", T=6, starts=(1, 6), n_iter=20, n_avg=5, n_jobs=2)
    for ra, rb in zip(a.results, b.results):
        assert np.array_equal(ra.K, rb.K) and np.array_equal(ra.hyper["c0"], rb.hyper["c0"])
    assert "log_joint" not in a.idata.posterior.data_vars      # the truncated models trace none


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


# ----------------------------------------------------------------------------- run_until_agree
def _test_set(X, n=40, seed=3):
    rng = np.random.default_rng(seed)
    zeros = np.argwhere(X == 0)
    pick = zeros[rng.choice(len(zeros), n, replace=False)]
    return pick[:, 0], pick[:, 1], np.zeros(n, np.int8)


def test_run_until_agree_stops_and_equals_one_long_chain():
    X = small(2)
    test = _test_set(X)
    # an R-hat threshold every pair of chains meets: stops after the first segment
    cs, s = chains.run_until_agree(X, "IDEPM", starts=(1, 20), segment=10, max_sweeps=50, rhat=100.0,
                                   test=test)
    assert s["stopped"] == "converged" and s["converged"] and s["sweeps"] == 10
    # an impossible one: stops at the cap, after whole segments
    cs, s = chains.run_until_agree(X, "IDEPM", starts=(1, 20), segment=10, max_sweeps=30, rhat=0.5,
                                   test=test)
    assert s["stopped"] == "max_sweeps" and not s["converged"] and s["sweeps"] == 30
    assert set(s) >= {"K", "tdll", "seconds"} and np.isfinite(s["K"]["ess_bulk"])
    # each chain is the uninterrupted chain of fit (n_avg = segment // 2 by default): the same
    # states; the TDLL of a sweep's sample is summed in another order inside the averaging window
    # of a segment, hence equal to rounding only
    one = epm_lib.fit(X, "IDEPM", K_init=20, seed=1, n_iter=30, n_avg=5, test=test)
    r = cs.results[1]
    assert np.array_equal(r.K, one.K) and np.array_equal(r.M, one.M)
    assert np.array_equal(r.hyper["gamma0"], one.hyper["gamma0"])
    assert np.allclose(r.tdll_trace, one.tdll_trace, rtol=0, atol=1e-12)


def test_constant_variable_agrees_exactly():
    """A variable that is one value in every chain has no R-hat (NaN) but agrees exactly; one that
    is constant within each chain at different values does not."""
    az = chains._arviz()
    same = np.full((4, 60), 2.0)
    apart = np.repeat([[2.0], [2.0], [3.0], [3.0]], 60, axis=1)
    d = chains.diagnostics(az.from_dict(posterior={"same": same, "apart": apart}), burn_in=0.5)
    assert np.isnan(d["same"]["rhat"]) and d["same"]["constant"] and chains.agree(d["same"])
    assert not d["apart"]["constant"] and not chains.agree(d["apart"], rhat=1.01)
    assert chains.agree({"rhat": 1.005, "constant": False}) and not chains.agree({"rhat": 1.02})
    assert not chains.agree({"rhat": None})                     # undefined and not constant
    # a DEPM with one atom: K = 1 in every chain, so the chains agree on K after the first segment
    X = small(2)
    cs, s = chains.run_until_agree(X, "DEPM", T=1, starts=(1, 1), segment=10, max_sweeps=50,
                                   var_names=("K",))
    assert s["stopped"] == "converged" and s["sweeps"] == 10 and s["K"]["constant"]


def test_run_until_agree_names_a_non_finite_tdll(monkeypatch):
    """A sample that gives a held-out entry probability 0 or 1 has TDLL -inf; R-hat is then
    undefined, and the run stops with an error naming the chain and the sweep."""
    real_fit = chains.fit

    def broken(*args, **kwargs):
        r = real_fit(*args, **kwargs)
        if kwargs.get("seed") == 1:
            r.tdll_trace[3] = -np.inf
        return r
    monkeypatch.setattr(chains, "fit", broken)
    X = small(2)
    with pytest.raises(ValueError, match=r"chain 1 \(from 20 atoms, seed 1\) has a non-finite test log likelihood "
                                         r"at sweep 4"):
        chains.run_until_agree(X, "IDEPM", starts=(1, 20), segment=10, max_sweeps=30, test=_test_set(X))


def test_run_until_agree_checkpoint_resumes_bit_identically(tmp_path):
    X = small(3)
    kw = dict(T=6, starts=(1, 6), segment=8, rhat=0.5, var_names=("K", "gamma0"))
    whole, s_whole = chains.run_until_agree(X, "DEPM", max_sweeps=32, **kw)
    part, s_part = chains.run_until_agree(X, "DEPM", max_sweeps=16, checkpoint=tmp_path, **kw)
    assert s_part["sweeps"] == 16 and sorted(p.name for p in tmp_path.iterdir()) == \
        ["chain0.npz", "chain1.npz", "run.json"]
    # interrupted between the two chains' saves: chain 1 is one segment behind
    short = epm_lib.fit(X, "DEPM", T=6, K_init=6, seed=1, n_iter=8, n_avg=4)
    short.save(tmp_path / "chain1.npz")
    rest, s_rest = chains.run_until_agree(X, "DEPM", max_sweeps=32, checkpoint=tmp_path, **kw)
    assert s_rest["sweeps"] == 32 and s_rest["K"] == s_whole["K"]
    for a, b in zip(whole.results, rest.results):
        assert np.array_equal(a.K, b.K) and np.array_equal(a.hyper["gamma0"], b.hyper["gamma0"])
    # a folder of other settings or other data is refused
    with pytest.raises(ValueError, match="other settings"):
        chains.run_until_agree(X, "DEPM", max_sweeps=32, checkpoint=tmp_path, **{**kw, "segment": 16})
    with pytest.raises(ValueError, match="other settings"):
        chains.run_until_agree(small(4), "DEPM", max_sweeps=32, checkpoint=tmp_path, **kw)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(starts=(1,), max_sweeps=10), "at least two starts"),
    (dict(max_sweeps=None), "give max_sweeps or cap_seconds"),
    (dict(max_sweeps=10, segment=2), "segment must be an integer >= 4"),
    (dict(max_sweeps=10, n_iter=5), "n_iter is set by run_until_agree"),
    (dict(max_sweeps=10, var_names=("K", "tdll")), "give test="),
    (dict(max_sweeps=10, seeds=(0, 0)), "distinct seed"),
])
def test_run_until_agree_refuses(kwargs, msg):
    kw = dict(starts=(1, 5), var_names=("K",))
    kw.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        chains.run_until_agree(small(), "IDEPM", **kw)


def test_run_until_agree_in_parallel_is_the_serial_run(tmp_path):
    """n_jobs=2: the chains of each segment in two processes; the chains, their checkpoint files
    and the summary are those of n_jobs=1, bit for bit."""
    X = small(5)
    kw = dict(T=6, starts=("data", "data", 1, 1), segment=8, max_sweeps=24, rhat=1.0001,
              var_names=("K", "gamma0"))
    a, sa = chains.run_until_agree(X, "DEPM", checkpoint=tmp_path / "a", **kw)
    b, sb = chains.run_until_agree(X, "DEPM", checkpoint=tmp_path / "b", n_jobs=2, **kw)
    timeless = lambda s: {k: v for k, v in s.items() if k != "seconds"}      # noqa: E731 (wall time)
    assert timeless(sa) == timeless(sb) and sa["sweeps"] == 24
    for ra, rb in zip(a.results, b.results):
        assert np.array_equal(ra.K, rb.K) and np.array_equal(ra.hyper["gamma0"], rb.hyper["gamma0"])
    for c in range(4):
        za, zb = np.load(tmp_path / "a" / f"chain{c}.npz"), np.load(tmp_path / "b" / f"chain{c}.npz")
        assert sorted(za.files) == sorted(zb.files) and len(za.files) > 5
        assert all(za[k].tobytes() == zb[k].tobytes() for k in za.files if k != "__meta__" and "seconds" not in k)
        timeless_meta = lambda z: {k: v for k, v in json.loads(str(z["__meta__"])).items() if k != "settings"} | {  # noqa: E731
            "settings": {k: v for k, v in json.loads(str(z["__meta__"]))["settings"].items() if "seconds" not in k}}
        assert timeless_meta(za) == timeless_meta(zb)
    # R-hat within each start's chains: the groups of the summary are diagnostics of those chains alone
    assert set(sa["groups"]) == {"data", "1"} and sa["groups"]["data"]["chains"] == [0, 1]
    own = chains.diagnostics(chains.to_inference_data(a.results[2:]), var_names=["K", "gamma0"])
    assert sa["groups"]["1"]["gamma0"] == own["gamma0"]


@pytest.mark.parametrize("n_jobs", [0, -2, 1.5, True, "2"])
def test_run_until_agree_refuses_a_bad_n_jobs_before_any_sweep(n_jobs):
    with pytest.raises(ValueError, match=r"n_jobs must be an integer >= 1 \(processes\) or -1"):
        chains.run_until_agree(small(), "IDEPM", starts=(1, 5), var_names=("K",), max_sweeps=10, n_jobs=n_jobs)
