"""``epm_lib.estimator``: the edge partition models as a scikit-learn-style estimator.

``EdgePartitionModel`` wraps ``epm_lib.fit`` for a binary matrix or a networkx graph: its
constructor holds the options (``get_params``, ``set_params`` and ``sklearn.base.clone`` work),
``fit`` runs one chain and keeps the ``FitResult`` in ``result_``; ``predict_proba`` gives link
probabilities, ``predict_links`` the most probable missing links, ``transform`` the nodes'
memberships of the atoms, ``score`` the mean log likelihood of labelled pairs and
``to_inference_data`` the fit for ArviZ.

The defaults: the IDEPM (no truncation), ``fit``'s default start (the data's start,
``init="data"``, where the matrix allows one) with its atoms counted by the held-out rule
(``rank="heldout"``, ``epm_lib.heldout_rank``: the spectral count finds no group of a sparse network
of many small groups, the held-out rule does; ``benchmarks/bench_small_groups.py``), 1500 sweeps of
which the last 500 are averaged (``predict_proba`` is their posterior mean), ``fit``'s default
split-merge moves, seed 0. An undirected network (a ``networkx.Graph``, or a square matrix equal to
its transpose) is fitted with ``symmetric=True`` and its diagonal masked (a network without
self-loops).

Example::

    import networkx as nx
    from epm_lib import EdgePartitionModel

    G = nx.karate_club_graph()
    est = EdgePartitionModel(n_iter=500, n_avg=100, random_state=2017).fit(G)
    est.predict_proba([0, 0], [33, 1])      # P(link 0-33), P(link 0-1), by node name
    est.predict_links(top=5)                # the five most probable non-edges
    W = est.transform()                     # (34, K) memberships, rows summing to 1
"""
from __future__ import annotations

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .fit import fit as _fit
from .fit_data import missing_mask, prepare_matrix
from .fit_options import as_seed
from .metrics import bernoulli_tdll
from .nmf import enough

__all__ = ["EdgePartitionModel", "DEFAULT_T"]

#: truncation level of the EPM, CEPM and DEPM when ``T`` is not given
DEFAULT_T = 100

_TRUNCATED = ("EPM", "CEPM", "DEPM")


def _is_graph(A):
    """A networkx graph (checked without importing networkx)."""
    return hasattr(A, "is_directed") and hasattr(A, "nodes") and hasattr(A, "adj")


def _seed_from(random_state):
    """``fit``'s seed (a non-negative int) from ``random_state``: an int as is (None: fresh
    entropy, ``SeedSequence().entropy``), a ``numpy.random.SeedSequence`` its first 64-bit word
    (``generate_state(1, dtype=uint64)[0]``), a ``numpy.random.Generator`` or ``RandomState`` one
    draw from [0, 2**63) (which advances it)."""
    rs = random_state
    if rs is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(rs, np.random.RandomState):
        return int(rs.randint(0, 2 ** 63 - 1, dtype=np.int64))
    if isinstance(rs, (Integral, np.random.SeedSequence, np.random.Generator)) and not isinstance(rs, bool):
        try:
            return as_seed(rs)              # fit's own conversion (a negative int is refused below)
        except ValueError:
            pass
    raise ValueError(f"random_state must be a non-negative integer, a numpy.random.SeedSequence, a "
                     f"numpy.random.Generator, a numpy.random.RandomState or None, got {rs!r}")


class EdgePartitionModel(BaseEstimator):
    """An edge partition model (EPM, CEPM, DEPM or IDEPM) fitted to a binary matrix or a network.

    Parameters
    ----------
    model : "EPM", "CEPM", "DEPM" or "IDEPM" (the default, no truncation).
    T : truncation level of the EPM, CEPM, DEPM; None gives ``DEFAULT_T`` = 100 for them (the
        IDEPM takes none).
    n_iter, n_avg : Gibbs sweeps, and how many final ones are averaged (1500 and 500: the
        chains of ``benchmarks/bench_small_groups.py``; the paper's 600 sweeps leave many chains at their
        start, chapter 31).
    init : the chain's start (``epm_lib.fit``'s ``init``); None: ``fit``'s default, the data's start
        where X allows one.
    rank : how the data's start counts its atoms (``epm_lib.fit``'s ``rank``): "heldout" (the
        default: the KL NMF's likelihood on held-out entries at the spectral count and its doublings,
        ``epm_lib.heldout_rank``), "spectral" (singular values above the noise edge, ``fit``'s own
        default), an integer, or None (``fit``'s default). It applies to the data's start only: with
        another ``init``, or a matrix too small for the data's start (``init=None`` then gives the
        paper's start), "heldout" and None are not used; "spectral" or an integer there raise
        ``ValueError``.
    split_merge : split-merge proposals per sweep (IDEPM, DEPM); None: ``fit``'s default.
    symmetric : None: detected. A networkx ``Graph`` is undirected (True), a ``DiGraph`` directed;
        a matrix is taken as an undirected network when it is square and equal to its transpose:
        pass ``symmetric=False`` to fit a symmetric matrix as a directed network (or a bipartite
        one). An undirected fit models both directions of every link (``fit(symmetric=True)``)
        and, when no ``mask`` is given, masks the diagonal (no self-loops).
    random_state : the seed: a non-negative int (used as ``fit``'s seed), a
        ``numpy.random.SeedSequence`` (its first 64-bit word, ``generate_state(1, dtype=np.uint64)[0]``),
        a ``numpy.random.Generator`` or ``numpy.random.RandomState`` (one integer drawn from it, which
        advances it), or None (fresh OS entropy). The seed used is ``seed_`` (and
        ``result_.settings["seed"]``); the same int gives bit-identical fits.

    Attributes (after ``fit``)
    --------------------------
    result_ : the ``FitResult`` of the chain.
    n_rows_, n_cols_ : the matrix's shape (for a network: its number of nodes, twice).
    symmetric_ : whether it was fitted as an undirected network.
    nodes_ : for a networkx graph, its nodes in the order of the matrix's rows; None for a matrix.
    seed_ : the seed given to ``epm_lib.fit``.
    mask_ : the mask given to ``epm_lib.fit`` (None, yours, or the diagonal of an undirected fit).
    """

    def __init__(self, model="IDEPM", T=None, n_iter=1500, n_avg=500, init=None, rank="heldout",
                 split_merge=None, symmetric=None, random_state=0):
        self.model = model
        self.T = T
        self.n_iter = n_iter
        self.n_avg = n_avg
        self.init = init
        self.rank = rank
        self.split_merge = split_merge
        self.symmetric = symmetric
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    # fitting
    # ------------------------------------------------------------------------------------------

    def fit(self, A, mask=None):
        """Fit the model to ``A`` and return self.

        ``A``: a 0/1 numpy array, a scipy.sparse matrix or a networkx ``Graph`` / ``DiGraph``. A
        graph becomes its (binary, unweighted) adjacency matrix over ``list(G.nodes)`` with its
        self-loops dropped; its nodes are kept in ``nodes_`` and name the results. ``mask``: None,
        or a boolean matrix of A's shape (graph: nodes in ``G.nodes`` order) marking missing
        entries (``epm_lib.fit``'s ``mask``). With ``mask=None`` an undirected fit masks the
        diagonal: a symmetric matrix with ones on its diagonal (self-loops) is then refused; set
        them to 0, pass ``symmetric=False``, or pass a mask of your own (an all-False one keeps the
        diagonal observed). ``ValueError`` for bad options or data (``epm_lib.fit``'s messages)."""
        model, T = self.model, self.T
        if isinstance(model, str) and model in _TRUNCATED and T is None:
            T = DEFAULT_T
        seed = _seed_from(self.random_state)
        if self.symmetric is not None and not isinstance(self.symmetric, (bool, np.bool_)):
            raise ValueError(f"symmetric must be None, True or False, got {self.symmetric!r}")
        nodes = None
        if _is_graph(A):
            import networkx as nx
            nodes = list(A.nodes)
            if not nodes:
                raise ValueError("the graph has no nodes")
            C = nx.to_scipy_sparse_array(A, nodelist=nodes, weight=None, format="coo")
            keep = (C.row != C.col) & (C.data != 0)        # self-loops dropped
            X = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (C.row[keep], C.col[keep])),
                              shape=C.shape)
            X.sum_duplicates()                  # a multigraph's parallel edges: one link
            X.data[:] = 1
            symmetric = (not A.is_directed()) if self.symmetric is None else bool(self.symmetric)
        else:
            X = A
            if self.symmetric is None:
                I, J, rows, cols = prepare_matrix(X)        # checks X (binary, 2-d, some ones)
                symmetric = I == J and np.array_equal(np.sort(rows * J + cols), np.sort(cols * J + rows))
            else:
                symmetric = bool(self.symmetric)
        shape = X.shape
        if symmetric and mask is None and shape[0] == shape[1]:
            diag = np.asarray(X.diagonal() if sp.issparse(X) else np.diagonal(np.asarray(X)))
            if np.any(diag != 0):
                raise ValueError(f"X has {int(np.count_nonzero(diag))} ones on its diagonal (self-loops); "
                                 f"an undirected fit without a mask masks the diagonal: set them to 0, pass "
                                 f"symmetric=False, or give a mask")
            mask = missing_mask(shape, [], [], diagonal=True)
        options = dict(T=T, n_iter=self.n_iter, n_avg=self.n_avg, init=self.init,
                       split_merge=self.split_merge, mask=mask, rank=self._rank_option(X),
                       keep_samples="auto")    # predict_proba: the posterior mean over the n_avg sweeps
        options = {k: v for k, v in options.items() if v is not None}
        result = _fit(X, model, seed=seed, symmetric=bool(symmetric), **options)
        if nodes is not None:
            result.node_names = (nodes, nodes)
        self.result_ = result
        self.mask_ = mask
        self.n_rows_, self.n_cols_ = int(shape[0]), int(shape[1])
        self.symmetric_ = bool(symmetric)
        self.nodes_ = nodes
        self.seed_ = seed
        self._index = None if nodes is None else {v: i for i, v in enumerate(nodes)}
        return self

    def _rank_option(self, X):
        """``fit``'s ``rank``: the estimator's ``rank`` where the chain starts from the data
        (``init`` "data", or None on a matrix that allows the data's start), else None (the
        default "heldout" left out; "spectral" or an integer given with another start: fit's
        ValueError names the clash)."""
        rank = self.rank
        if rank is None:
            return None
        data_start = self.init == "data" if isinstance(self.init, str) else self.init is None
        if data_start and self.init is None:           # fit's choice: the data's start where X allows one
            I, J, rows, _ = prepare_matrix(X)           # (a one under the mask is refused by fit)
            data_start = enough(I, J, rows.size)
        if data_start or not (isinstance(rank, str) and rank == "heldout"):
            return rank
        return None

    def to_inference_data(self, test=None, draws="kept"):
        """The fit as an ``arviz.InferenceData`` for ``az.loo`` / ``az.compare``
        (``FitResult.to_inference_data``): ``test = (rows, cols, labels)`` scores those held-out
        pairs (integer indices); without it the training pairs, less the entries the fit left out
        (the ``mask`` given to ``fit``, or the diagonal an undirected fit masked), passed here."""
        check_is_fitted(self, "result_")
        if test is not None:
            return self.result_.to_inference_data(test, draws=draws)
        return self.result_.to_inference_data(mask=self.mask_, draws=draws)

    def fit_transform(self, A, mask=None):
        """``fit(A, mask)``, then the row memberships (``transform``)."""
        return self.fit(A, mask=mask).transform()

    # ------------------------------------------------------------------------------------------
    # predictions
    # ------------------------------------------------------------------------------------------

    def _indices(self, nodes, what):
        """Integer indices of ``nodes``: when fitted on a graph, node names map to their rows;
        integers are indices unless some node name is an integer (then every value is a name)."""
        if self._index is None:
            return np.atleast_1d(np.asarray(nodes))
        index = self._index
        int_names = any(isinstance(v, Integral) and not isinstance(v, bool) for v in index)
        if isinstance(nodes, np.ndarray):
            seq = nodes.reshape(-1).tolist() if nodes.ndim <= 1 else list(nodes)
        elif isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
            seq = [nodes]                   # a single node
        else:
            seq = list(nodes)
        out = np.empty(len(seq), dtype=np.int64)
        for n, v in enumerate(seq):
            try:
                i = index.get(v)
            except TypeError:               # unhashable: no node
                i = None
            if i is None:
                if int_names or not isinstance(v, Integral) or isinstance(v, bool):
                    raise ValueError(f"{what}: unknown node {v!r} (not a node of the fitted graph)")
                i = int(v)
            out[n] = i
        return out

    def predict_proba(self, rows, cols):
        """Posterior mean link probabilities at the pairs (rows[n], cols[n]), a 1-d array
        (``FitResult.predict``; per pair for an undirected fit). ``rows`` and ``cols`` are integer
        indices, or, when fitted on a graph, node names (integers count as indices only when no
        node name is an integer); an unknown name raises ``ValueError`` naming it."""
        check_is_fitted(self, "result_")
        r, c = self._indices(rows, "rows"), self._indices(cols, "cols")
        return self.result_.predict(r, c)

    def predict_links(self, top=10):
        """The ``top`` most probable links among the zeros of the training matrix, a DataFrame
        (``row``, ``col``, ``probability``; node names for a graph): ``FitResult.predict_links``.
        For a graph fitted as directed, self-pairs (v, v) are left out too (its self-loops were
        dropped); an undirected fit lists each pair once, row < col."""
        check_is_fitted(self, "result_")
        if not isinstance(top, Integral) or isinstance(top, bool) or top < 1:
            raise ValueError(f"top must be a positive integer, got {top!r}")
        if self.nodes_ is None:
            return self.result_.predict_links(top)
        if self.symmetric_:
            return self.result_.predict_links(top, names=(self.nodes_, self.nodes_))
        links = self.result_.predict_links(int(top) + self.n_rows_,     # room for the self-pairs
                                           names=(self.nodes_, self.nodes_))
        self_pair = np.array([a == b for a, b in zip(links["row"], links["col"])], dtype=bool)
        return links[~self_pair].head(int(top)).reset_index(drop=True)

    def transform(self, X=None):
        """The row memberships of the atoms at the final sample (``FitResult.memberships("row")``):
        one row per node (row of the matrix) summing to 1, one column per atom, atoms by decreasing
        lambda. ``X`` is not used (the memberships are those of the fitted nodes; it is there for
        the scikit-learn API); if given, its number of rows (nodes) must be the fitted one."""
        check_is_fitted(self, "result_")
        if X is not None:
            n = X.number_of_nodes() if _is_graph(X) else np.shape(X)[0]
            if n != self.n_rows_:
                raise ValueError(f"transform gives the memberships of the {self.n_rows_} fitted nodes; "
                                 f"X has {n}")
        return self.result_.memberships("row")

    def score(self, X, y):
        """Mean Bernoulli log likelihood of the labels ``y`` (0/1) of the pairs ``X`` (an (n, 2)
        array of (row, col), indices or node names as in ``predict_proba``) under the predicted
        probabilities: mean of y log p + (1 - y) log(1 - p) (``epm_lib.metrics.bernoulli_tdll``,
        the paper's TDLL; higher is better, 0 is perfect). Pairs held out of the fit (a mask)
        give an out-of-sample score; pairs of the training matrix an in-sample one."""
        check_is_fitted(self, "result_")
        pairs = np.asarray(X, dtype=object if self._index is not None else None)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"X must be an (n, 2) array of (row, col) pairs, got shape {pairs.shape}")
        labels = np.asarray(y)
        if labels.shape != (pairs.shape[0],):
            raise ValueError(f"y must hold one label per pair: {pairs.shape[0]} pairs, y of shape {labels.shape}")
        if np.any((labels != 0) & (labels != 1)):
            raise ValueError("y must hold 0/1 labels")
        p = self.predict_proba(pairs[:, 0], pairs[:, 1])
        return bernoulli_tdll(labels, p)
