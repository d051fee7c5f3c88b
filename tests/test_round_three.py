"""Issue 30's third hostile round: the BAD cases, each refused with a clear error before any numba call."""
import warnings

import numpy as np
import pytest

import epm_lib
from epm_lib import starts
from epm_lib.chains import ChainSet


def small(seed=0, I=20, J=20):
    return (np.random.default_rng(seed).random((I, J)) < 0.3).astype(np.int8)


@pytest.mark.parametrize("missing, msg", [
    ((np.array([10 ** 8]), np.array([10 ** 8])), r"row index 100000000 \(entry 0\) is outside 0..19"),
    ((np.array([-1]), np.array([0])), r"row index -1 \(entry 0\) is outside 0..19"),
    ((np.array([0]), np.array([25])), r"column index 25 \(entry 0\) is outside 0..19"),
    ((np.array([0, 1]), np.array([0])), "two 1-d integer arrays of one length"),
    ((np.array([0.5]), np.array([1.0])), "two 1-d integer arrays of one length"),
])
def test_kl_nmf_refuses_missing_entries_outside_the_matrix(missing, msg):
    """BAD 1: an index out of range segfaulted or silently wrapped in the numba kernel."""
    with pytest.raises(ValueError, match=msg):
        starts.kl_nmf(small(), 2, 0, missing=missing)


@pytest.mark.parametrize("K", [0, -1, 2.5, 21, True])
def test_kl_nmf_refuses_a_bad_number_of_components(K):
    with pytest.raises(ValueError, match=r"K must be an integer number of components in 1..min\(I, J\) = 20"):
        starts.kl_nmf(small(), K, 0)


def test_best_by_tdll_without_a_test_set_is_an_error_not_chain_zero():
    """BAD 2: the argmax over NaNs returned chain 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cs = epm_lib.fit_chains(small(), "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5)
    with pytest.raises(ValueError, match="no chain has a finite 'tdll': the chains were fitted without a test set"):
        cs.best("tdll")
    assert cs.best() == cs.best("loglik")
    with pytest.raises(ValueError, match="by must be 'tdll', 'loglik' or 'tdauc_pr'"):
        cs.best("auc")


@pytest.mark.parametrize("kw, msg", [
    (dict(seed=7), r"seed = 7 \(the chain's: 1; it continues its own random stream\)"),
    (dict(K_init=3), r"K_init = 3 \(the chain started with None\)"),
    (dict(hold=(10, 0.1)), r"hold = \(10, 0.1\) \(the chain's: \(15, 0.1\)\)"),
])
def test_a_resumed_chain_refuses_another_seed_start_or_hold(kw, msg, tmp_path):
    """BAD 3: fit(resume=...) accepted another hold, seed or K_init, and concat recorded settings the
    chain never ran with."""
    X = small(1)
    a = epm_lib.fit(X, "DEPM", T=6, n_iter=20, n_avg=5, seed=1, hold=(15, 0.1))
    a.save(tmp_path / "a.npz")
    for resume in (a, tmp_path / "a.npz"):
        with pytest.raises(ValueError, match=msg):
            epm_lib.fit(X, "DEPM", T=6, n_iter=20, n_avg=5, resume=resume, **kw)


def test_a_resumed_chain_records_the_settings_it_ran_with():
    X = small(2)
    a = epm_lib.fit(X, "DEPM", T=6, n_iter=20, n_avg=5, seed=1, hold=(15, 0.1))
    b = epm_lib.fit(X, "DEPM", T=6, n_iter=20, n_avg=5, resume=a)
    same = epm_lib.fit(X, "DEPM", T=6, n_iter=20, n_avg=5, resume=a, seed=1, hold=(15, 0.1))   # its own: allowed
    whole = epm_lib.fit(X, "DEPM", T=6, n_iter=40, n_avg=5, seed=1, hold=(15, 0.1))
    c = epm_lib.concat(a, b)
    assert np.array_equal(c.K, whole.K) and np.array_equal(same.K, b.K)
    for k in ("seed", "hold", "K_init", "init", "K_start"):
        assert c.settings[k] == whole.settings[k], k


# ----------------------------------------------------------------------------------------------
# round three, the remaining defects (issue 30, item 6)
# ----------------------------------------------------------------------------------------------

def quiet_chains(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return epm_lib.fit_chains(*args, **kwargs)


@pytest.mark.parametrize("model, T", [("IDEPM", None), ("DEPM", 4), ("EPM", 4)])
@pytest.mark.parametrize("cap", [1e-200, 1e-300, 1e-4, 0.0009])
def test_a_hold_cap_too_small_to_recover_from_is_refused(model, T, cap):
    """1e-200 divided by zero in the IDEPM's kernel; 1e-300 left alpha1 near 4e-261 for good."""
    with pytest.raises(ValueError, match=r"hold's cap must be a number >= 0\.001 .*got " + repr(cap)):
        epm_lib.fit(small(), model, T=T, n_iter=20, n_avg=5, hold=(10, cap))


def test_the_smallest_hold_cap_allowed_runs():
    r = epm_lib.fit(small(), "IDEPM", n_iter=20, n_avg=5, hold=(10, 0.001))
    assert r.settings["hold"] == [10, 0.001] and np.isfinite(r.hyper["alpha1"]).all()


@pytest.mark.parametrize("flag", [np.True_, np.False_, True, False])
def test_symmetric_accepts_numpy_booleans(flag):
    X = small(3)
    X = ((X + X.T) > 0).astype(np.int8)
    r = epm_lib.fit(X, "DEPM", T=3, n_iter=4, n_avg=2, symmetric=flag)
    assert r.settings["symmetric"] is bool(flag)


@pytest.mark.parametrize("flag", [1, 0, "yes", None, np.array([True])])
def test_symmetric_refuses_what_is_not_a_boolean(flag):
    with pytest.raises(ValueError, match="symmetric must be True or False"):
        epm_lib.fit(small(), "DEPM", T=3, n_iter=4, n_avg=2, symmetric=flag)


def test_score_baselines_accepts_numpy_booleans_for_symmetric():
    from epm_lib.baselines import score_baselines
    X = small(3)
    X = ((X + X.T) > 0).astype(np.int8)
    zeros = np.argwhere(np.triu(X == 0, 1))[:8]
    test = (zeros[:, 0], zeros[:, 1], np.zeros(8, int))
    a = score_baselines(X, test, symmetric=np.True_, k=(2,))
    assert repr(a) == repr(score_baselines(X, test, symmetric=True, k=(2,)))   # NaN AUCs: no test one
    with pytest.raises(ValueError, match="symmetric must be True or False"):
        score_baselines(X, test, symmetric=1, k=(2,))


def test_choose_rank_refuses_what_is_not_a_binary_matrix():
    X = small(4)
    with pytest.raises(ValueError, match="X must be binary"):
        starts.choose_rank(X * 3)
    nan = X.astype(float)
    nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        starts.choose_rank(nan)
    with pytest.raises(ValueError, match="symmetric=True needs a symmetric X"):
        starts.choose_rank(X, symmetric=True)
    with pytest.raises(ValueError, match="symmetric=True needs a square matrix"):
        starts.choose_rank(X[:, :10], symmetric=True)
    with pytest.raises(ValueError, match="symmetric must be True or False"):
        starts.choose_rank(X, symmetric="no")


@pytest.mark.parametrize("kw, msg", [
    (dict(margin=-1), r"margin must be a finite number >= 0"),
    (dict(margin=float("nan")), r"margin must be a finite number >= 0"),
    (dict(margin="0.05"), r"margin must be a finite number >= 0"),
    (dict(k_max=0), r"k_max must be an integer >= 1"),
    (dict(k_max=2.5), r"k_max must be an integer >= 1"),
])
def test_choose_rank_refuses_bad_options(kw, msg):
    with pytest.raises(ValueError, match=msg):
        starts.choose_rank(small(), **kw)


def test_choose_rank_still_accepts_numpy_booleans_and_sparse_matrices():
    import scipy.sparse as sp
    X = small(5)
    S = ((X + X.T) > 0).astype(np.int8)
    assert starts.choose_rank(sp.csr_matrix(S), symmetric=np.True_)[0] == starts.choose_rank(S, symmetric=True)[0]


@pytest.fixture(scope="module")
def two_chains():
    return quiet_chains(small(), "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5)


@pytest.mark.parametrize("weights", [{0: 1}, {0: 0.5, 1: 0.5}, "ab", 1.0, [[0.5, 0.5]], [0.5, None], [0.7, 0.7],
                                     [1.5, -0.5], [np.nan, 1.0]])
def test_chainset_predict_refuses_weights_that_are_not_one_number_per_chain(two_chains, weights):
    with pytest.raises(ValueError, match=r"weights must be 2 non-negative numbers, one per chain, summing to 1, "
                                         r"as a sequence"):
        two_chains.predict(np.array([0]), np.array([1]), weights=weights)
    assert two_chains.predict(np.array([0]), np.array([1]), weights=np.array([0.25, 0.75])).shape == (1,)


def test_a_chainset_of_chains_of_different_data_refuses_to_mix_them():
    a = quiet_chains(small(6), "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5)
    b = quiet_chains(small(7), "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5)
    mixed = ChainSet(results=[a.results[0], b.results[0]], starts=[1, 1], seeds=[0, 1])
    rows, cols, labels = np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([0, 1, 0])
    for call in (lambda: mixed.predict(rows, cols), lambda: mixed.stacking_weights(rows, cols, labels),
                 lambda: mixed.best(), lambda: mixed.best("loglik")):
        with pytest.raises(ValueError, match=r"chains 0 and 1 were fitted to different data .*one ChainSet"):
            call()


def test_a_chainset_of_chains_of_different_test_sets_refuses_to_mix_them():
    X = small(8)
    zeros = np.argwhere(X == 0)
    t1 = (zeros[:6, 0], zeros[:6, 1], np.zeros(6, int))
    t2 = (zeros[6:12, 0], zeros[6:12, 1], np.zeros(6, int))
    a = quiet_chains(X, "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5, test=t1)
    b = quiet_chains(X, "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5, test=t2)
    mixed = ChainSet(results=[a.results[0], b.results[1]], starts=[1, 4], seeds=[0, 1])
    with pytest.raises(ValueError, match="chains 0 and 1 were fitted to different data"):
        mixed.best("tdll")


def test_a_chainset_of_different_models_of_one_data_set_labels_them():
    X = small(9)
    a = quiet_chains(X, "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5)
    b = quiet_chains(X, "EPM", T=3, starts=(1, 3), n_iter=10, n_avg=5)
    mixed = ChainSet(results=[a.results[0], b.results[0]], starts=[1, 1], seeds=[0, 1])
    t = mixed.table()
    assert list(t["model"]) == ["DEPM-4", "EPM-3"]
    assert mixed.predict(np.array([0]), np.array([1])).shape == (1,)      # one data set: may be mixed
    assert "model" not in a.table().columns                               # one model: as before


def test_fit_chains_checks_every_start_against_T_before_any_chain_runs(monkeypatch):
    from epm_lib import chains
    ran = []
    monkeypatch.setattr(chains, "fit", lambda *a, **k: ran.append(k))
    with pytest.raises(ValueError, match=r"starts: 5 atoms \(chain 1\) exceed the truncation level T = 4"):
        epm_lib.fit_chains(small(), "DEPM", T=4, starts=(1, 5), n_iter=10, n_avg=5)
    with pytest.raises(ValueError, match=r"hold = \(300, 0.1\): its 300 sweeps reach into the last n_avg"):
        epm_lib.fit_chains(small(), "DEPM", T=4, starts=(1, 4), n_iter=10, n_avg=5, hold=(300, 0.1))
    with pytest.raises(ValueError, match="n_avg = 50 exceeds n_iter = 10"):
        epm_lib.fit_chains(small(), "IDEPM", starts=(1, 4), n_iter=10, n_avg=50)
    assert ran == []


def test_a_matrix_too_small_for_the_data_start_gets_advice_that_works():
    tiny = np.zeros((5, 5), np.int8)
    tiny[0, 0] = tiny[1, 1] = 1
    for call in (lambda: epm_lib.fit_chains(tiny, "DEPM", T=2, starts=("data", 1), n_iter=4, n_avg=2),
                 lambda: epm_lib.run_until_agree(tiny, "DEPM", T=2, starts=("data", 1), max_sweeps=8,
                                                 var_names=("K",))):
        with pytest.raises(ValueError, match=r"too few for the data's start .*starts=\(1, 2\)") as e:
            call()
        assert "init=" not in str(e.value)
    with pytest.raises(ValueError, match=r"too few for init='data' .*K_init") as e:
        epm_lib.fit(tiny, "DEPM", T=2, init="data", n_iter=4, n_avg=2)
    assert "fit_chains" in str(e.value) and "starts=" in str(e.value)
    r = quiet_chains(tiny, "DEPM", T=2, starts=(1, 2), n_iter=4, n_avg=2)     # what the advice says: runs
    assert len(r.results) == 2


@pytest.mark.parametrize("kw", [dict(init="data"), dict(init="paper"), dict(K_init=3)])
def test_run_until_agree_names_starts_for_the_start(kw):
    with pytest.raises(ValueError, match=r"run_until_agree sets each chain's start from starts=.*"
                                         r"e\.g\. starts=\('data', 'data', 1, 4\)"):
        epm_lib.run_until_agree(small(), "DEPM", T=4, max_sweeps=10, **kw)


def test_run_until_agree_says_which_segment_a_hold_needs():
    with pytest.raises(ValueError) as e:
        epm_lib.run_until_agree(small(), "DEPM", T=4, hold=(300, 0.1), max_sweeps=600, var_names=("K",))
    msg = str(e.value)
    assert "hold = (300, 0.1)" in msg and "segment = 250" in msg and "segment >= 599" in msg, msg
    with pytest.raises(ValueError, match=r"segment = 400 .* n_avg = 150.*segment >= 450"):
        epm_lib.run_until_agree(small(), "DEPM", T=4, hold=(300, 0.1), max_sweeps=600, var_names=("K",),
                                segment=400, n_avg=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cs, summary = epm_lib.run_until_agree(small(), "DEPM", T=4, hold=(300, 0.1), segment=599,
                                              max_sweeps=599, var_names=("K",), starts=(1, 4))
    assert summary["sweeps"] == 599 and cs.results[0].settings["hold"] == [300, 0.1]


@pytest.mark.parametrize("weights, msg", [
    ([0.7, 0.7], "sum to 1"), ([1.5, -0.5], "non-negative"), ([np.nan, 1.0], "non-negative"),
    ([1.0], "one per column of probs"), ({0: 1}, "a sequence"), ("ab", "a sequence"),
])
def test_log_score_refuses_weights_off_the_simplex(weights, msg):
    from epm_lib import stacking
    with pytest.raises(ValueError, match=r"weights must be .*" + msg):
        stacking.log_score(np.array([[0.5, 0.2], [0.1, 0.3]]), [1, 0], weights)
    assert np.isfinite(stacking.log_score(np.array([[0.5, 0.2], [0.1, 0.3]]), [1, 0], [0.25, 0.75]))


@pytest.mark.parametrize("model, T, expect", [("DEPM", 4, "starts=('data', 1, 4)"), ("EPM", 1, "starts=('data', 1)"),
                                              ("IDEPM", None, "starts=('data', 1, 100)")])
def test_degenerate_advice_names_starts_that_fit_the_truncation(model, T, expect):
    from epm_lib import diagnose
    r = epm_lib.fit(small(), model, T=T, n_iter=10, n_avg=5)
    tip = diagnose.advice(r)
    assert expect in tip, tip
    if T is not None:
        assert "100" not in tip, tip


def test_degenerate_advice_says_how_long_a_held_run_must_be():
    from epm_lib import diagnose
    r = epm_lib.fit(small(), "DEPM", T=4, n_iter=50, n_avg=20)
    assert "hold=(300, 0.1) with n_iter >= 320" in diagnose.advice(r)
    r = epm_lib.fit(small(), "DEPM", T=4, n_iter=400, n_avg=100)
    assert "hold=(300, 0.1))" in diagnose.advice(r)


@pytest.fixture(scope="module")
def toy90():
    return epm_lib.datasets.load("toy90").X


@pytest.mark.slow
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_warnings_of_fit_chains_point_at_the_callers_line(toy90, n_jobs):
    from epm_lib.diagnose import DegenerateFitWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cs = epm_lib.fit_chains(toy90, "DEPM", T=1, starts=(1, 1), n_iter=30, n_avg=10, n_jobs=n_jobs)
    degenerate = [w for w in caught if issubclass(w.category, DegenerateFitWarning)]
    assert len(degenerate) == 2 and all(r.diagnosis for r in cs.results)
    assert all(w.filename == __file__ for w in degenerate), [w.filename for w in degenerate]


def test_warnings_of_fit_point_at_the_callers_line(toy90):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        epm_lib.fit(toy90, "DEPM", T=1, n_iter=30, n_avg=10)
    assert caught and all(w.filename == __file__ for w in caught), [(w.filename, str(w.message)) for w in caught]


@pytest.mark.parametrize("seed, p", [(0, 0.1), (1, 0.3), (2, 0.3), (2, 0.5)])
def test_no_chance_alarm_on_a_small_noise_matrix(seed, p):
    """5 x 400 noise: the noise edge of choose_rank put K at 4 of 5 rows, and a rank-4 SVD of five
    rows reproduces them (in-sample AUC 1.00): no yardstick for the fit's in-sample AUC."""
    X = (np.random.default_rng(seed).random((5, 400)) < p).astype(np.int8)
    for model, T in (("DEPM", 4), ("IDEPM", None)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = epm_lib.fit(X, model, T=T, n_iter=100, n_avg=50)
        assert not any(d.startswith(("chance", "poor fit")) for d in r.diagnosis), (model, r.diagnosis)


# --- the command line -----------------------------------------------------------------------

@pytest.mark.parametrize("args, msg", [
    (["--jobs", "0"], "--jobs must be an integer >= 1 (processes) or -1 (every core), got 0"),
    (["--dask-local", "0"], "--dask-local must be a number of worker processes >= 1, got 0"),
    (["--data-dir", "/nowhere"], "--data-dir is where MovieLens is read from; enron09 is not read from it"),
    (["--converged", "--jobs", "0"], "--jobs must be an integer >= 1"),
])
def test_command_line_refuses_at_parse_time(args, msg, capsys, tmp_path):
    import epm_lib.experiments as ex
    with pytest.raises(SystemExit) as info:         # no --dry-run: nothing may run before the refusal
        ex.main(["--dataset", "enron09", "--folds", "0", "--models", "DEPM", "--T", "2",
                 "--results", str(tmp_path)] + args)
    assert info.value.code == 2 and msg in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_command_line_uses_data_dir_with_movielens(tmp_path, capsys):
    import epm_lib.experiments as ex
    code = ex.main(["--dataset", "movielens100k", "enron09", "--models", "DEPM", "--T", "2", "--folds", "0",
                    "--data-dir", str(tmp_path / "nowhere"), "--results", str(tmp_path), "--no-progress"])
    assert code == 1 and "u.data" in capsys.readouterr().err
