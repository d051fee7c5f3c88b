"""FitResult.to_inference_data, chains.to_inference_data, ChainSet.idata: ArviZ groups for loo/compare."""
import warnings

import numpy as np
import pytest

import epm_lib
from epm_lib import chains
from epm_lib.fit import missing_mask
from epm_lib.result import MAX_LOGLIK_ENTRIES

az = chains._arviz()


def held_out(seed=0, I=30, J=25, n_ones=10, n_zeros=40):
    """A random 0/1 matrix (density 0.2) with n_ones ones and n_zeros zeros held out."""
    rng = np.random.default_rng(seed)
    X = (rng.random((I, J)) < 0.2).astype(np.int8)
    ones, zeros = np.argwhere(X == 1), np.argwhere(X == 0)
    po = ones[rng.choice(len(ones), n_ones, replace=False)]
    pz = zeros[rng.choice(len(zeros), n_zeros, replace=False)]
    pick = np.concatenate([po, pz])
    labels = np.r_[np.ones(n_ones, np.int8), np.zeros(n_zeros, np.int8)]
    X_train = X.copy()
    X_train[po[:, 0], po[:, 1]] = 0
    return X_train, (pick[:, 0], pick[:, 1], labels)


@pytest.fixture(scope="module")
def data():
    return held_out()


@pytest.fixture(scope="module")
def idepm(data):
    X, test = data
    return epm_lib.fit(X, "IDEPM", n_iter=30, n_avg=10, test=test, seed=0)


@pytest.fixture(scope="module")
def depm(data):
    X, test = data
    return epm_lib.fit(X, "DEPM", T=6, n_iter=30, n_avg=10, test=test, seed=0)


def likelihood_of_labels(prob, labels):
    return np.where(labels != 0, prob, 1.0 - prob)


def test_groups_shapes_and_the_posterior_mean(idepm, data):
    _, (rows, cols, labels) = data
    idata = idepm.to_inference_data(test=(rows, cols, labels))
    for g in ("posterior", "warmup_posterior", "sample_stats", "warmup_sample_stats", "observed_data",
              "log_likelihood"):
        assert hasattr(idata, g), g
    post, warm = idata.posterior, idata.warmup_posterior
    # the draws are the kept samples (all n_avg here), the warmup the iterations before
    assert dict(post.sizes) == {"chain": 1, "draw": 10} and dict(warm.sizes) == {"chain": 1, "draw": 20}
    assert list(post.draw.values) == list(range(20, 30)) and list(warm.draw.values) == list(range(20))
    assert {"K", "M", "tdll", "log_joint", "alpha1", "alpha2", "gamma0", "c0"} <= set(post.data_vars)
    assert np.array_equal(post["K"].values[0], idepm.K[20:].astype(float))
    assert np.array_equal(warm["gamma0"].values[0], idepm.hyper["gamma0"][:20])
    assert set(idata.sample_stats.data_vars) >= {"M", "log_joint"}
    assert np.array_equal(idata.sample_stats["log_joint"].values[0], idepm.log_joint[20:])
    # observed data: the held-out labels; log likelihood (chain, draw, pair)
    assert np.array_equal(idata.observed_data["y"].values, labels)
    assert np.array_equal(idata.observed_data["row"].values, rows)
    ll = idata.log_likelihood["y"].values
    assert ll.shape == (1, 10, labels.size) and np.all(np.isfinite(ll)) and np.all(ll <= 0)
    # per sample: the mean over the pairs is the iteration's TDLL (the iterations are the right ones)
    assert np.allclose(ll[0].mean(axis=1), idepm.tdll_trace[20:], rtol=0, atol=1e-12)
    # over the samples: the posterior mean probability is test_prob (all n_avg kept)
    assert np.allclose(np.exp(ll[0]).mean(axis=0), likelihood_of_labels(idepm.test_prob, labels),
                       rtol=0, atol=1e-12)
    assert np.allclose(np.exp(ll[0]).mean(axis=0), likelihood_of_labels(idepm.predict(rows, cols), labels),
                       rtol=0, atol=1e-12)


def test_split_merge_acceptance_in_sample_stats(depm):
    ss = depm.to_inference_data(test=None).sample_stats
    if depm.settings["split_merge"]:
        moves = depm.move_stats[20:]
        assert np.array_equal(ss["split_proposed"].values[0], moves[:, 0])
        assert np.array_equal(ss["merge_accepted"].values[0], moves[:, 3])
        rate = ss["acceptance_rate"].values[0]
        prop = moves[:, 0] + moves[:, 2]
        assert np.allclose(rate[prop > 0], ((moves[:, 1] + moves[:, 3]) / np.maximum(prop, 1))[prop > 0])
        assert np.all(np.isnan(rate[prop == 0]))
    a = epm_lib.fit(held_out()[0], "EPM", T=4, n_iter=6, n_avg=3)
    assert "acceptance_rate" not in a.to_inference_data().sample_stats.data_vars   # no moves


def test_thinned_samples_are_the_iterations_fit_kept(data):
    X, test = data
    r = epm_lib.fit(X, "DEPM", T=6, n_iter=25, n_avg=10, test=test, keep_samples=4, seed=2)
    idata = r.to_inference_data(test=test)
    its = idata.posterior.draw.values
    assert len(its) == 4 and its[-1] == 24 and its[0] == 15          # evenly spaced, the last always
    assert idata.warmup_posterior.sizes["draw"] == 15
    ll = idata.log_likelihood["y"].values[0]
    assert ll.shape == (4, test[0].size)
    assert np.allclose(ll.mean(axis=1), r.tdll_trace[its], rtol=0, atol=1e-12)
    assert np.allclose(np.exp(ll).mean(axis=0), likelihood_of_labels(r.predict(*test[:2]), test[2]),
                       rtol=0, atol=1e-12)


def test_loo_and_compare_rank_two_models(idepm, depm, data):
    _, test = data
    a, b = idepm.to_inference_data(test=test), depm.to_inference_data(test=test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # few draws: Pareto k warnings
        loo = az.loo(a)
        assert np.isfinite(loo.elpd_loo) and loo.n_data_points == test[0].size
        table = az.compare({"IDEPM": a, "DEPM": b})
    assert set(table.index) == {"IDEPM", "DEPM"} and sorted(table["rank"]) == [0, 1]


def test_training_entries_without_a_test_set(data):
    X, _ = data
    r = epm_lib.fit(X, "EPM", T=4, n_iter=8, n_avg=4, seed=1)
    idata = r.to_inference_data()
    y = idata.observed_data["y"].values
    assert y.size == X.size and y.sum() == X.sum()
    rows, cols = idata.observed_data["row"].values, idata.observed_data["col"].values
    assert np.array_equal(X[rows, cols], y)
    ll = idata.log_likelihood["y"].values[0]
    assert ll.shape == (4, X.size)
    assert np.allclose(np.exp(ll).mean(axis=0), likelihood_of_labels(r.predict(rows, cols), y),
                       rtol=0, atol=1e-12)
    # a masked fit: the missing entries are left out, and the mask must be given
    mask = missing_mask(X.shape, [0, 1, 2], [3, 3, 3])
    X0 = X.copy()
    X0[[0, 1, 2], [3, 3, 3]] = 0
    m = epm_lib.fit(X0, "EPM", T=4, n_iter=4, n_avg=2, mask=mask)
    with pytest.raises(ValueError, match="pass mask="):
        m.to_inference_data()
    assert m.to_inference_data(mask=mask).observed_data.sizes["pair"] == X.size - 3


def test_symmetric_fit_one_pair_per_held_out_pair():
    rng = np.random.default_rng(4)
    A = np.triu(rng.random((24, 24)) < 0.25, 1)
    X = (A | A.T).astype(np.int8)
    rows, cols = np.nonzero(np.triu(np.ones_like(X), 1))
    pick = rng.choice(rows.size, 30, replace=False)
    tr, tc = rows[pick], cols[pick]
    labels = X[tr, tc].copy()
    X[tr, tc] = X[tc, tr] = 0
    r = epm_lib.fit(X, "DEPM", T=5, n_iter=10, n_avg=5, test=(tr, tc, labels), symmetric=True)
    idata = r.to_inference_data(test=(tr, tc, labels))
    assert idata.log_likelihood["y"].shape == (1, 5, 30) and idata.observed_data.sizes["pair"] == 30
    p = np.exp(idata.log_likelihood["y"].values[0]).mean(axis=0)
    assert np.allclose(p, likelihood_of_labels(r.test_prob, labels), rtol=0, atol=1e-12)
    # without a test set: each pair i <= j once
    assert r.to_inference_data().observed_data.sizes["pair"] == 24 * 25 // 2


def test_chains_stack_and_keep_diagnostics(data):
    X, test = data
    cs = epm_lib.fit_chains(X, "DEPM", T=6, starts=(1, 6), n_iter=12, n_avg=4, test=test)
    idata = cs.idata
    # the posterior holds every iteration (what diagnostics reads), the log likelihood the kept draws
    assert dict(idata.posterior.sizes) == {"chain": 2, "draw": 12}
    assert idata.log_likelihood["y"].shape == (2, 4, test[0].size)
    assert list(idata.log_likelihood.draw.values) == [8, 9, 10, 11]
    d = chains.diagnostics(idata, burn_in=4, var_names=["K", "tdll"])
    same = cs.diagnostics(burn_in=4, var_names=["K", "tdll"])
    assert set(d) == {"K", "tdll"} and all(np.allclose([d[v][k] for k in d[v]], [same[v][k] for k in d[v]],
                                                       equal_nan=True) for v in d)
    # the layout for loo: posterior at the kept samples, the rest as warmup
    kept = cs.to_inference_data()
    assert dict(kept.posterior.sizes) == {"chain": 2, "draw": 4} and kept.warmup_posterior.sizes["draw"] == 8
    assert np.array_equal(kept.log_likelihood["y"].values, idata.log_likelihood["y"].values)
    for c, r in enumerate(cs.results):
        one = r.to_inference_data(test=test)
        assert np.array_equal(kept.log_likelihood["y"].values[c], one.log_likelihood["y"].values[0])
        assert np.array_equal(kept.posterior["K"].values[c], one.posterior["K"].values[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(az.loo(kept).elpd_loo)
    # chains keeping other iterations cannot be stacked
    other = epm_lib.fit(X, "DEPM", T=6, n_iter=12, n_avg=6, test=test, seed=5)
    with pytest.raises(ValueError, match=r"kept samples \[4, 6\], n_avg \[4, 6\]"):
        chains.to_inference_data([cs.results[0], other], test=test, draws="kept")


@pytest.mark.slow
def test_too_large_without_test_is_refused():
    rng = np.random.default_rng(0)
    I, J = 450, 450
    assert I * J > MAX_LOGLIK_ENTRIES
    X = (rng.random((I, J)) < 0.01).astype(np.int8)
    r = epm_lib.fit(X, "DEPM", T=2, K_init=2, n_iter=4, n_avg=2)
    with pytest.raises(ValueError, match="pass test="):
        r.to_inference_data()
    zeros = np.argwhere(X == 0)[:5]
    ok = r.to_inference_data(test=(zeros[:, 0], zeros[:, 1], np.zeros(5, int)))
    assert ok.log_likelihood["y"].shape == (1, 2, 5)
    # ChainSet.idata leaves the group out (and says why) instead of failing
    cs = chains.ChainSet(results=[r, r], starts=[2, 2], seeds=[0, 1])
    idata = cs.idata
    assert not hasattr(idata, "log_likelihood") and "pass test=" in idata.attrs["log_likelihood"]
    assert idata.posterior.sizes["draw"] == 4
    assert not hasattr(chains.to_inference_data([r, r]), "log_likelihood")    # draws="all": the same
    with pytest.raises(ValueError, match="pass test="):
        chains.to_inference_data([r, r], draws="kept")
    # so does it for chains of one kept sample each (an IDEPM without a test set)
    X, _ = held_out()
    cs = epm_lib.fit_chains(X, "IDEPM", starts=(1, 5), n_iter=4, n_avg=2)
    assert "one sample" in cs.idata.attrs["log_likelihood"] and not hasattr(cs.idata, "log_likelihood")


def test_bad_arguments(idepm, data):
    _, (rows, cols, labels) = data
    with pytest.raises(ValueError, match="same|one length"):
        idepm.to_inference_data(test=(rows, cols[:-1], labels))
    with pytest.raises(ValueError, match="0 or 1"):
        idepm.to_inference_data(test=(rows, cols, labels + 2))
    with pytest.raises(ValueError, match="draws must be"):
        idepm.to_inference_data(test=(rows, cols, labels), draws="some")
    all_draws = idepm.to_inference_data(test=(rows, cols, labels), draws="all")
    assert all_draws.posterior.sizes["draw"] == 30 and not hasattr(all_draws, "warmup_posterior")
