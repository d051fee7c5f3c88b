"""``epm_lib.estimator.EdgePartitionModel`` and ``FitResult.memberships``, ``predict_links``,
``__repr__`` (fast: small matrices, few sweeps)."""
import inspect
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import epm_lib
from epm_lib import EdgePartitionModel
from epm_lib import result as result_module

pytestmark = pytest.mark.filterwarnings("ignore::epm_lib.diagnose.DegenerateFitWarning")

FAST = dict(n_iter=60, n_avg=20)


def _quiet_fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kw)


@pytest.fixture(scope="module")
def karate():
    G = nx.karate_club_graph()
    return G, _quiet_fit(EdgePartitionModel(**FAST), G)


@pytest.fixture(scope="module")
def named():
    G = nx.karate_club_graph()
    H = nx.relabel_nodes(G, {v: f"m{v}" for v in G})
    return H, _quiet_fit(EdgePartitionModel(**FAST), H)


@pytest.fixture(scope="module")
def small():
    """A 15 x 12 random matrix with an empty row (3) and an empty column (11)."""
    rng = np.random.default_rng(1)
    X = (rng.random((15, 12)) < 0.3).astype(np.int8)
    X[3, :] = 0
    X[:, 11] = 0
    return X


# ---------------------------------------------------------------------------------------------
# scikit-learn's parameter protocol
# ---------------------------------------------------------------------------------------------

def test_params_clone_set_params():
    est = EdgePartitionModel(model="DEPM", T=8, n_iter=30, random_state=np.random.SeedSequence(3))
    names = set(inspect.signature(EdgePartitionModel.__init__).parameters) - {"self"}
    assert set(est.get_params()) == names
    twin = clone(est)
    assert twin is not est
    a, b = est.get_params(), twin.get_params()
    assert {k: v for k, v in a.items() if k != "random_state"} == \
        {k: v for k, v in b.items() if k != "random_state"}
    assert b["random_state"].entropy == a["random_state"].entropy
    assert est.set_params(n_iter=50) is est and est.n_iter == 50
    assert EdgePartitionModel().get_params() == dict(model="IDEPM", T=None, n_iter=1500, n_avg=500, init=None, rank="heldout",
                                                     split_merge=None, symmetric=None, random_state=0)


def test_not_fitted():
    est = EdgePartitionModel()
    for call in (lambda: est.predict_proba([0], [1]), est.transform, est.predict_links,
                 lambda: est.score([[0, 1]], [1])):
        with pytest.raises(NotFittedError):
            call()


# ---------------------------------------------------------------------------------------------
# a network: Zachary's karate club
# ---------------------------------------------------------------------------------------------

def test_fit_graph(karate):
    G, est = karate
    assert est.symmetric_ is True
    assert est.nodes_ == list(G.nodes)
    assert (est.n_rows_, est.n_cols_) == (34, 34)
    assert est.result_.settings["symmetric"] is True
    assert est.result_.settings["n_masked"] == 34          # the diagonal
    assert est.result_.settings["nnz"] == 2 * G.number_of_edges()
    p = est.predict_proba([0, 1], [33, 2])
    assert p.shape == (2,) and np.all((p > 0) & (p < 1))
    assert np.allclose(p, est.result_.predict(np.array([0, 1]), np.array([33, 2])))


def test_names(karate, named):
    (_, est), (H, est_named) = karate, named
    p = est.predict_proba([0, 1], [33, 2])
    # same matrix, same seed: the same chain
    assert np.array_equal(est_named.predict_proba(["m0", "m1"], ["m33", "m2"]), p)
    assert np.array_equal(est_named.predict_proba(["m0", 1], [33, "m2"]), p)    # indices too
    assert np.array_equal(est_named.predict_proba("m0", "m33"), p[:1])
    with pytest.raises(ValueError, match="m99"):
        est_named.predict_proba(["m0"], ["m99"])
    with pytest.raises(ValueError, match="'x'"):
        est.predict_proba(["x"], [1])
    s = est_named.score([["m0", "m33"], ["m0", "m1"]], [0, 1])
    assert np.isfinite(s) and s < 0
    assert s == pytest.approx(est.score(np.array([[0, 33], [0, 1]]), np.array([0, 1])))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        est.score([0, 1], [1])


def test_transform(karate):
    _, est = karate
    W = est.transform()
    lam = est.result_.state["lam"]
    assert W.shape == (34, int(np.count_nonzero(lam > 0)))
    assert np.allclose(W.sum(axis=1), 1.0)
    assert np.array_equal(est.transform(nx.karate_club_graph()), W)
    with pytest.raises(ValueError, match="34"):
        est.transform(np.zeros((5, 5)))


def test_predict_links(karate, named):
    G, est = karate
    links = est.predict_links(top=5)
    assert list(links.columns) == ["row", "col", "probability"] and len(links) == 5
    assert not any(G.has_edge(a, b) for a, b in zip(links["row"], links["col"]))
    assert all(a < b for a, b in zip(links["row"], links["col"]))
    assert np.all(np.diff(links["probability"].to_numpy()) <= 0)
    # brute force: every non-edge i < j
    I, J = np.triu_indices(34, 1)
    A = nx.to_numpy_array(G, weight=None)
    I, J = I[A[I, J] == 0], J[A[I, J] == 0]
    p = est.predict_proba(I, J)
    order = np.lexsort((J, I, -p))[:5]
    assert links["row"].tolist() == I[order].tolist() and links["col"].tolist() == J[order].tolist()
    assert np.allclose(links["probability"], p[order])
    H, est_named = named
    by_name = est_named.predict_links(top=5)
    assert by_name["row"].tolist() == [f"m{i}" for i in links["row"]]
    assert by_name["col"].tolist() == [f"m{j}" for j in links["col"]]
    assert not any(H.has_edge(a, b) for a, b in zip(by_name["row"], by_name["col"]))


def test_predict_links_chunks_and_checks(karate, monkeypatch):
    _, est = karate
    whole = est.result_.predict_links(top=12)
    monkeypatch.setattr(result_module, "_PREDICT_CHUNK", 40)      # one row per block
    assert whole.equals(est.result_.predict_links(top=12))
    n_pairs = 34 * 33 // 2 - 78
    assert len(est.result_.predict_links(top=10 ** 6)) == n_pairs     # all candidates
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="top"):
            est.result_.predict_links(top=bad)


def test_predict_links_directed(small):
    est = _quiet_fit(EdgePartitionModel("EPM", T=5, n_iter=30, n_avg=10), small)
    assert est.symmetric_ is False
    links = est.predict_links(top=20)
    assert not np.any(small[links["row"], links["col"]])
    I, J = np.nonzero(small == 0)
    p = est.predict_proba(I, J)
    order = np.lexsort((J, I, -p))[:20]
    assert links["row"].tolist() == I[order].tolist() and links["col"].tolist() == J[order].tolist()


# ---------------------------------------------------------------------------------------------
# seeds, symmetry detection, options
# ---------------------------------------------------------------------------------------------

def test_random_state(small):
    runs = [_quiet_fit(EdgePartitionModel(n_iter=20, n_avg=5, random_state=rs), small)
            for rs in (7, 7, np.random.SeedSequence(7), np.random.default_rng(7))]
    assert np.array_equal(runs[0].result_.K, runs[1].result_.K)
    assert runs[0].seed_ == 7 == runs[0].result_.settings["seed"]
    ss_seed = int(np.random.SeedSequence(7).generate_state(1, dtype=np.uint64)[0])
    assert runs[2].seed_ == ss_seed
    assert runs[3].seed_ == int(np.random.default_rng(7).integers(2 ** 63))
    for bad in (-1, "x", 1.5, True):
        with pytest.raises(ValueError, match="random_state"):
            EdgePartitionModel(n_iter=5, n_avg=1, random_state=bad).fit(small)


def test_symmetry_detection(small):
    A = nx.to_numpy_array(nx.karate_club_graph(), weight=None, dtype=np.int8)
    est = _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), A)
    assert est.symmetric_ is True and est.nodes_ is None
    assert est.result_.settings["n_masked"] == 34
    est = _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), sp.csr_matrix(A))
    assert est.symmetric_ is True
    est = _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5, symmetric=False), A)
    assert est.symmetric_ is False and est.result_.settings["n_masked"] == 0
    assert _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), small).symmetric_ is False   # not square
    B = A.copy()
    B[0, 1], B[1, 0] = 1, 0
    assert _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), B).symmetric_ is False
    D = nx.DiGraph(nx.karate_club_graph())
    assert _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), D).symmetric_ is False
    A[2, 2] = 1                        # a self-loop with the diagonal masked
    with pytest.raises(ValueError, match="diagonal"):
        EdgePartitionModel(n_iter=10, n_avg=5).fit(A)
    G = nx.MultiGraph(nx.karate_club_graph())
    G.add_edge(2, 2)                   # a graph's self-loops are dropped,
    G.add_edge(0, 1)                   # parallel edges are one link
    est = _quiet_fit(EdgePartitionModel(n_iter=10, n_avg=5), G)
    assert est.result_.settings["nnz"] == 156


def test_options_reach_fit(small):
    est = _quiet_fit(EdgePartitionModel("DEPM", n_iter=5, n_avg=2, split_merge=2, init="paper"), small)
    assert est.result_.T == 100 and est.result_.settings["split_merge"] == 2
    assert est.result_.settings["init"] == "paper"
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2), small)
    assert est.result_.settings["n_iter"] == 5 and est.result_.settings["init"] == "data"
    with pytest.raises(ValueError, match="XYZ"):
        EdgePartitionModel("XYZ", n_iter=5, n_avg=2).fit(small)
    with pytest.raises(ValueError, match="T"):
        EdgePartitionModel("IDEPM", T=5, n_iter=5, n_avg=2).fit(small)
    with pytest.raises(ValueError, match="n_avg"):
        EdgePartitionModel(n_iter=5, n_avg=10).fit(small)


def test_rank_default_heldout(small):
    """The estimator's data's start counts its atoms by the held-out rule (issue 30, item 1):
    fit(rank="heldout") where the chain starts from the data, nothing where it does not."""
    assert EdgePartitionModel().get_params()["rank"] == "heldout"
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2), small)
    assert est.result_.settings["init"] == "data" and est.result_.settings["rank"] == "heldout"
    same = epm_lib.fit(small, "IDEPM", n_iter=5, n_avg=2, seed=0, rank="heldout")
    assert est.result_.settings["K_start"] == same.settings["K_start"]
    assert np.array_equal(est.result_.K, same.K)
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2, rank="spectral"), small)
    assert est.result_.settings["rank"] == "spectral"
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2, rank=None), small)
    assert "rank" not in est.result_.settings and est.result_.settings["init"] == "data"
    # another start: the default rule is not used; an explicit one is an error naming the clash
    est = _quiet_fit(EdgePartitionModel("DEPM", T=6, n_iter=5, n_avg=2, init="paper"), small)
    assert "rank" not in est.result_.settings and est.result_.settings["init"] == "paper"
    with pytest.raises(ValueError, match="rank"):
        EdgePartitionModel("DEPM", T=6, n_iter=5, n_avg=2, init="paper", rank="spectral").fit(small)
    with pytest.raises(ValueError, match="rank"):
        EdgePartitionModel(n_iter=5, n_avg=2, rank="widest").fit(small)


def test_predict_proba_is_the_posterior_mean(small):
    """predict_proba averages the n_avg sweeps (fit(keep_samples="auto")), the IDEPM's too, which
    without a test set would otherwise keep only the final draw; the chain is fit's own."""
    est = _quiet_fit(EdgePartitionModel(n_iter=20, n_avg=8), small)
    assert len(est.result_.samples) == 8
    same = epm_lib.fit(small, "IDEPM", n_iter=20, n_avg=8, seed=0, rank="heldout", keep_samples="auto")
    assert np.array_equal(est.result_.K, same.K)
    rows, cols = np.array([0, 1, 2]), np.array([1, 2, 0])
    mean = np.mean([-np.expm1(-epm_lib.models.common.link_rates(*_compact_pairs(same, rows, cols), *s))
                    for s in same.samples], axis=0)
    assert np.allclose(est.predict_proba(rows, cols), mean)


def _compact_pairs(r, rows, cols):
    """The IDEPM's compact indices of (rows, cols) (rows that carry parameters)."""
    from epm_lib.result_checks import _to_compact
    return _to_compact(rows, r.state["row_ids"], "row"), _to_compact(cols, r.state["col_ids"], "column")


def test_rank_default_small_matrix():
    """A matrix too small for the data's start: init=None gives the paper's (random) start, and the
    default rank is left out rather than forcing init='data' (which would refuse the matrix)."""
    X = np.zeros((4, 4), dtype=np.int8)
    X[0, 1] = X[1, 2] = X[2, 3] = 1
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2, symmetric=False), X)
    assert est.result_.settings["init"] == "random" and "rank" not in est.result_.settings
    X[3, 0] = 1                                         # 4 ones: enough for the data's start
    est = _quiet_fit(EdgePartitionModel(n_iter=5, n_avg=2, symmetric=False), X)
    assert est.result_.settings["init"] == "data" and est.result_.settings["rank"] == "heldout"


# ---------------------------------------------------------------------------------------------
# FitResult.memberships and __repr__
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model,T", [("EPM", 6), ("DEPM", 6), ("IDEPM", None)])
def test_memberships(small, model, T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = epm_lib.fit(small, model, T=T, n_iter=30, n_avg=10)
    st = r.state
    lam = st["lam"]
    active = np.flatnonzero((st["m_k"] > 0) & (lam > 0)) if "m_k" in st else np.flatnonzero(lam > 0)
    if "m_k" in st:                                   # the atoms in use: those K counts
        assert active.size == r.K[-1] and active.size <= T
    order = active[np.argsort(-lam[active], kind="stable")]
    for side, n in (("row", 15), ("col", 12)):
        W = r.memberships(side)
        assert W.shape == (n, active.size)
        if model == "IDEPM":
            ids = st["row_ids" if side == "row" else "col_ids"]
            missing = np.setdiff1d(np.arange(n), ids)
            assert missing.tolist() == ([3] if side == "row" else [11])
            assert np.all(np.isnan(W[missing]))
            R = st["phi" if side == "row" else "psi"]
            W = W[ids]
        else:
            R = st[("U" if side == "row" else "V") if model == "EPM" else ("phi" if side == "row" else "psi")]
        assert np.allclose(W.sum(axis=1), 1.0)
        expect = R[:, order] * lam[order]
        assert np.allclose(W, expect / expect.sum(axis=1, keepdims=True))
    with pytest.raises(ValueError, match="side"):
        r.memberships(side="x")


def test_repr(karate, small):
    _, est = karate
    text = repr(est.result_)
    assert text.startswith("FitResult(IDEPM, 34x34 symmetric, 156 ones, 60 sweeps, K ")
    assert "\n" not in text and len(text) < 200 and "array(" not in text and "TDLL" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = epm_lib.fit(small, "EPM", T=4, n_iter=10, n_avg=5, test=([3], [0], [0]))
    text = repr(r)
    assert text.startswith("FitResult(EPM T=4, 15x12, ") and "TDLL -" in text and len(text) < 200
    assert str(r) == text


def test_directed_graph_links():
    D = nx.relabel_nodes(nx.DiGraph(nx.karate_club_graph()), {v: f"m{v}" for v in range(34)})
    D.remove_edges_from([("m0", v) for v in list(D.successors("m0"))])    # no longer symmetric
    est = _quiet_fit(EdgePartitionModel(n_iter=20, n_avg=5), D)
    assert est.symmetric_ is False and est.nodes_ == list(D.nodes)
    links = est.predict_links(top=40)
    assert len(links) == 40
    assert all(a != b and not D.has_edge(a, b) for a, b in zip(links["row"], links["col"]))
    assert np.all(np.diff(links["probability"].to_numpy()) <= 0)
    with pytest.raises(ValueError, match="top"):
        est.predict_links(top=0)


def test_practitioners_path_on_karate():
    """Issue 30's practitioner's path on Zachary's karate club, one step after another: a Generator seed,
    an estimator cloned, fitted on the graph, predict_proba and predict_links by name, transform, and
    az.loo on the fit's InferenceData (the kept draws of the estimator's posterior mean)."""
    from epm_lib.notebook import import_arviz

    az = import_arviz()
    G = nx.relabel_nodes(nx.karate_club_graph(), {v: f"m{v}" for v in nx.karate_club_graph()})
    proto = EdgePartitionModel(n_iter=60, n_avg=20, random_state=np.random.default_rng(5))
    est = _quiet_fit(clone(proto), G)
    assert est.get_params()["rank"] == "heldout" and est.result_.settings["rank"] == "heldout"
    p = est.predict_proba(["m0", "m0"], ["m33", "m1"])
    assert p.shape == (2,) and np.all((p > 0) & (p < 1))
    links = est.predict_links(top=3)
    assert list(links.columns) == ["row", "col", "probability"] and all(str(v).startswith("m") for v in links["row"])
    assert not any(G.has_edge(a, b) for a, b in zip(links["row"], links["col"]))
    W = est.transform()
    assert W.shape[0] == 34 and np.allclose(W.sum(axis=1), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loo = az.loo(est.to_inference_data(), pointwise=True)      # the fit's mask (its diagonal) passed
    assert np.isfinite(float(loo.elpd_loo)) and loo.n_samples == 20
    assert loo.pareto_k.size == 34 * 33 // 2                  # each pair i < j once, the diagonal masked
    with pytest.raises(ValueError, match="mask"):
        est.result_.to_inference_data()                 # the result alone does not know the mask
