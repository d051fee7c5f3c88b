"""epm_lib.diagnose (degenerate fits warned, in-sample log likelihood), epm_lib.stacking, and
fit_chains with the data's start beside the paper's (issue 20, items 3 and 4)."""
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import epm_lib
from epm_lib import diagnose, fit, fit_chains, load_result
from epm_lib.diagnose import DegenerateFitWarning
from epm_lib.experiments import hold_out, pair_folds
from epm_lib.stacking import log_score, stacking_weights


@pytest.fixture(scope="module")
def planted():
    G = nx.planted_partition_graph(12, 10, 0.7, 0.03, seed=1)
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, format="csr")).astype(np.int8)
    X, test, mask = hold_out(A, pair_folds(A.shape, n_folds=5, seed=0, symmetric=True)[0], symmetric=True)
    return X, test, mask


@pytest.mark.slow
@pytest.mark.parametrize("model,T,init", [("IDEPM", None, "random"), ("DEPM", 50, "paper"), ("EPM", 50, "paper")])
def test_paper_start_on_communities_is_flagged_and_data_start_is_not(planted, model, T, init):
    X, test, mask = planted
    kw = dict(T=T, test=test, mask=mask, symmetric=True, n_iter=400, n_avg=100)
    with pytest.warns(DegenerateFitWarning, match=r"looks degenerate: .*chance: in-sample AUC-ROC 0\.[0-6]\d.*Try: "
                                                  r"start from the data"):
        bad = fit(X, model, init=init, **kw)
    assert any(d.startswith("chance") for d in bad.diagnosis) and bad.tdauc_roc < 0.6
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        good = fit(X, model, **kw)                       # the default: the data's start
    assert good.settings["init"] == "data" and good.diagnosis == [] and good.tdauc_roc > 0.75


@pytest.mark.slow
def test_dust_is_named(planted):
    X, test, mask = planted
    with pytest.warns(DegenerateFitWarning, match="dust: \\d+ active atoms on average for 900 ones"):
        fit(X, "IDEPM", init="random", symmetric=True, mask=mask, test=test, n_iter=300, n_avg=100)


@pytest.mark.slow
def test_small_matrices_and_good_fits_are_not_checked_or_flagged():
    X = np.zeros((12, 10), dtype=np.int8)
    X[:6, :5] = 1                                        # 30 ones: below MIN_ONES, not checked
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)
        r = fit(X, "DEPM", T=4, n_iter=5, n_avg=2, init="paper")
        assert r.diagnosis == []
        toy = epm_lib.datasets.load("toy90").X
        for model, T in (("IDEPM", None), ("DEPM", 20), ("EPM", 20), ("CEPM", 20)):
            assert fit(toy, model, T=T, n_iter=200, n_avg=50).diagnosis == []


def test_too_few_atoms_advises_a_larger_T():
    toy = epm_lib.datasets.load("toy90").X                # five blocks
    with pytest.warns(DegenerateFitWarning, match="poor fit: .*a larger truncation level"):
        r = fit(toy, "DEPM", T=1, n_iter=50, n_avg=10)
    assert r.diagnosis[0].startswith("poor fit")


def test_diagnosis_is_saved_and_loaded(planted, tmp_path):
    X, test, mask = planted
    with pytest.warns(DegenerateFitWarning):
        r = fit(X, "DEPM", T=50, init="paper", symmetric=True, mask=mask, n_iter=200, n_avg=50)
    back = load_result(r.save(tmp_path / "r.npz"))
    assert back.diagnosis == r.diagnosis and back.diagnosis


def test_in_sample_loglik_is_the_bernoulli_likelihood_of_the_training_matrix():
    rng = np.random.default_rng(0)
    X = (rng.random((15, 12)) < 0.3).astype(np.int8)
    mask = np.zeros_like(X, dtype=bool)
    mask[rng.random(X.shape) < 0.1] = True
    X[mask] = 0
    for model, T in (("EPM", 4), ("DEPM", 4), ("IDEPM", None)):
        r = fit(X, model, T=T, n_iter=20, n_avg=5, keep_samples=3, mask=mask)
        got = diagnose.in_sample_loglik(r, mask)
        ll = []
        for R, C, lam in r.samples:
            P = -np.expm1(-(R * lam) @ C.T)
            rid = r.state.get("row_ids", np.arange(15))
            cid = r.state.get("col_ids", np.arange(12))
            x, m = X[np.ix_(rid, cid)], mask[np.ix_(rid, cid)]
            ll.append(np.sum(np.where(x == 1, np.log(P), np.log1p(-P))[~m]) / (~m).sum())
        assert np.isclose(got, np.mean(ll), rtol=1e-10), (model, got, np.mean(ll))


def test_stacking_weights_maximise_the_log_score():
    rng = np.random.default_rng(1)
    probs = rng.uniform(0.01, 0.99, size=(300, 4))
    labels = (rng.random(300) < probs[:, 2]).astype(int)       # chain 2 is the truth
    w = stacking_weights(probs, labels)
    assert np.all(w >= 0) and np.isclose(w.sum(), 1.0) and np.argmax(w) == 2
    # against a general optimiser over the simplex (softmax parameters)
    obj = lambda a: -log_score(probs, labels, np.exp(a) / np.exp(a).sum())  # noqa: E731
    a = minimize(obj, np.zeros(4), method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12, maxiter=20000)).x
    assert log_score(probs, labels, w) >= -obj(a) - 1e-6
    # one chain predicting exactly as another: the two share their weight equally
    twin = np.column_stack([probs[:, 2], probs[:, 2], probs[:, 0]])
    w2 = stacking_weights(twin, labels)
    assert w2[0] == w2[1] and w2[0] + w2[1] > 0.8
    for bad in (dict(probs=probs[:, :2] * 2, labels=labels), dict(probs=probs, labels=labels[:10]),
                dict(probs=probs, labels=labels + 1)):
        with pytest.raises(ValueError):
            stacking_weights(**bad)


@pytest.mark.slow
def test_fit_chains_with_the_data_start_table_best_and_stacking(planted):
    X, test, mask = planted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateFitWarning)
        cs = fit_chains(X, "IDEPM", starts=("data", 100), n_iter=300, n_avg=100, symmetric=True, test=test,
                        mask=mask, keep_samples=10)
    t = cs.table()
    assert list(t["start"]) == ["data", 100] and t["K_start"][1] == 100
    assert set(t.columns) >= {"K", "M", "loglik", "tdll", "tdauc_pr", "tdauc_roc", "degenerate"}
    assert t["tdll"][0] > t["tdll"][1] and t["loglik"][0] > t["loglik"][1]
    assert t["degenerate"][0] == "" and "chance" in t["degenerate"][1]
    assert cs.best() == 0 and cs.best("loglik") == 0
    half = np.arange(test[0].size) < test[0].size // 2
    w = cs.stacking_weights(test[0][half], test[1][half], test[2][half])
    assert w[0] > 0.9
    p = cs.predict(test[0], test[1], w)
    assert p.shape == test[0].shape and np.all((p >= 0) & (p <= 1))
    with pytest.raises(ValueError, match="weights must be 2 non-negative numbers"):
        cs.predict(test[0], test[1], [0.5, 0.6])
    with pytest.raises(ValueError, match="starts must be integers >= 1 .* or 'data'"):
        fit_chains(X, "IDEPM", starts=("kmeans", 1))
    with pytest.raises(ValueError, match="pass init through starts"):
        fit_chains(X, "IDEPM", starts=(1, 100), init="data")


def test_the_svd_of_a_matrix_is_computed_once_for_its_chains_and_segments(monkeypatch):
    """diagnose.check after every fit: the truncated SVD of one matrix is cached (segments of a
    chain, several chains), and the diagnosis is the one computed afresh."""
    from epm_lib import diagnose, starts
    rng = np.random.default_rng(3)
    X = (rng.random((40, 30)) < 0.2).astype(np.int8)
    diagnose._SVD_CACHE.clear()
    fresh = epm_lib.fit(X, "DEPM", T=4, n_iter=20, n_avg=5, seed=1, init="paper").diagnosis
    calls = []
    real = starts.choose_rank
    monkeypatch.setattr(starts, "choose_rank", lambda *a, **k: calls.append(1) or real(*a, **k))
    for seed in (1, 2, 3):
        r = epm_lib.fit(X, "DEPM", T=4, n_iter=20, n_avg=5, seed=seed, init="paper")
        if seed == 1:
            assert r.diagnosis == fresh
    assert calls == []                                   # the cached SVD served all three
    diagnose._SVD_CACHE.clear()
    assert epm_lib.fit(X, "DEPM", T=4, n_iter=20, n_avg=5, seed=1, init="paper").diagnosis == fresh and calls == [1]
