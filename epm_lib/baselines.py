"""Baselines: what a practitioner would try before an edge partition model.

The EPM family of Part II predicts a held-out entry of a binary matrix by a posterior mean link
probability, and Sec. 5 scores it by TDLL and TDAUC-PR (``epm_lib.metrics``). Whether that is
worth the Gibbs sampler depends on how much simpler predictors already achieve on the *same*
held-out entries; this module provides two of them, scored by the same measures:

- :func:`popularity`: the degree-product ("preferential attachment", Chung-Lu) model,
  ``p_ij = 1 - exp(-d_i d_j / D)`` -- no latent structure at all, only how many ones each row
  and column has;
- :func:`svd_scores`: a rank-``k`` truncated SVD of the (sparse) training matrix (scikit-learn's
  ``TruncatedSVD``, "PureSVD"), whose reconstruction is turned into probabilities by an
  increasing map fitted on the training matrix only;
- :func:`select_k`: the SVD's rank chosen on the training matrix alone (inner hold-out);
- :func:`score_baselines`: TDLL, TDAUC-PR and AUC-ROC of each on a fold's test entries.

Conventions (those of ``epm_lib.experiments.split`` and ``epm_lib.fit``): ``X_train`` is an
``(I, J)`` binary matrix, dense or ``scipy.sparse``; held-out entries are given as
``rows, cols`` (and, for scoring, ``test = (rows, cols, labels)``). The paper's protocol sets
the held-out entries to *zero* in the training matrix ("we set all the selected test entries as
zero during the inference period"), and the stored EPM results follow it; the baselines do the
same by default, so they are compared on equal terms. A practitioner would rather declare the
held-out entries *unobserved*: the optional ``mask`` (a boolean ``(I, J)`` matrix, dense or
sparse, ``True`` = unobserved; the convention of ``epm_lib.fit(mask=...)``, parsed by
``epm_lib.fit.mask_entries``) does that -- masked entries are zeros of ``X_train`` that the
baselines count neither as ones nor as zeros (a one under the mask is an error, as for ``fit``).
For the fold protocol the mask of the test entries is
``epm_lib.fit.missing_mask(X.shape, rows, cols)``, a sparse matrix.

Memory: everything is O(nnz + number of scored entries + (I + J) k); the training matrix is
never made dense (MovieLens1M, 6040 x 3706, would be 180 MB as float64), and the SVD's factors
are gathered at the scored entries a chunk at a time.

The same numbers on every CPU: the SVD's factors come out of BLAS, whose kernels and summation
order differ between CPU families and thread counts, so its scores differ in their last bits
from one machine to another, and entries whose scores are equal in exact arithmetic (nodes with
the same neighbours, the two directions of a pair of an undirected network) would be ranked by
rounding noise -- TDAUC-PR and AUC-ROC then depend on the CPU. The SVD's scores are therefore
snapped to a power-of-two grid about 1e-9 of their scale (``SNAP_BITS``, :func:`_snap`) before
the calibration and the ranking, so that such near-ties are exact ties on every CPU.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .fit_data import _check_symmetric, _symmetric_test, mask_entries, prepare_matrix
from .checks import check_bool
from .metrics import auc_roc, bernoulli_tdll, tdauc_pr

__all__ = [
    "DEFAULT_K", "DEFAULT_PSEUDO", "PROB_EPS",
    "DEFAULT_KS", "DEFAULT_PIECES", "MIN_ONES_PER_PIECE", "CALIBRATORS",
    "popularity", "svd_scores", "select_k", "score_baselines",
]

#: Default rank of :func:`svd_scores`.
DEFAULT_K = 16
#: Default pseudo-degree of :func:`popularity` (added to every row and column degree).
DEFAULT_PSEUDO = 0.5
#: Probabilities are kept in [PROB_EPS, 1 - PROB_EPS] so that every log likelihood is finite.
PROB_EPS = 1e-12
#: Floats gathered at once by the k-dim dot products (two arrays of 2 MB at most).
_CHUNK_FLOATS = 1 << 18
#: The SVD's scores are snapped to multiples of 2**-SNAP_BITS times their scale (:func:`_snap`).
SNAP_BITS = 30


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
def _train_matrix(X_train):
    """Validate a binary matrix: (I, J, sorted int64 keys i*J + j of its ones)."""
    I, J, r, c = prepare_matrix(X_train)       # binary, 2-d, no duplicates, at least one one
    return I, J, r * J + c                       # CSR order: sorted


def _entries(rows, cols, I, J, what="entries"):
    rows, cols = np.asarray(rows), np.asarray(cols)
    if rows.ndim != 1 or cols.ndim != 1 or rows.shape != cols.shape:
        raise ValueError(f"{what}: rows and cols must be 1-d arrays of the same length, got shapes "
                         f"{rows.shape} and {cols.shape}")
    for name, a in (("rows", rows), ("cols", cols)):
        if a.size and a.dtype.kind not in "iu":
            if a.dtype.kind != "f" or not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
                raise ValueError(f"{what}: {name} must be integer indices, got dtype {a.dtype}")
    rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= I or cols.min() < 0 or cols.max() >= J):
        bad = int(np.flatnonzero((rows < 0) | (rows >= I) | (cols < 0) | (cols >= J))[0])
        raise ValueError(f"{what} out of range for a matrix of shape {(I, J)}: e.g. "
                         f"({rows[bad]}, {cols[bad]})")
    return rows, cols


def _mask_keys(mask, I, J, ones):
    """Sorted unique int64 keys i*J + j of the True (unobserved) entries of ``mask`` (or None),
    parsed by ``epm_lib.fit.mask_entries``; as for ``fit(mask=...)``, a one of ``X_train`` under
    the mask is an error (an entry is observed, 0 or 1, or missing)."""
    if mask is None:
        return None
    keys = mask_entries(mask, (I, J))
    if keys.size == I * J:
        raise ValueError("mask marks every entry as unobserved: there is nothing to learn from")
    clash = np.isin(keys, ones, assume_unique=True)
    if clash.any():
        e = int(keys[np.flatnonzero(clash)[0]])
        raise ValueError(f"{int(clash.sum())} ones of X_train are under the mask (e.g. ({e // J}, "
                         f"{e % J})); an entry is either observed (0 or 1) or missing: set held-out "
                         f"ones to 0 in X_train (epm_lib.experiments.split), as for epm_lib.fit")
    return keys


def _clip(p):
    return np.clip(p, PROB_EPS, 1.0 - PROB_EPS)


# ---------------------------------------------------------------------------------------------
# popularity (degree product)
# ---------------------------------------------------------------------------------------------
def popularity(X_train, rows, cols, mask=None, pseudo=DEFAULT_PSEUDO):
    """Degree-product link probabilities ``p_ij = 1 - exp(-d_i d_j / D)`` at the given entries.

    Which form and why: the EPM's link is Bernoulli-Poisson, ``p = 1 - exp(-rate)``. Read a
    binary matrix as Poisson counts with a rank-one rate ``r_i c_j`` (an EPM with a single atom
    and no prior); the maximum-likelihood rate is ``r_i c_j = d_i d_j / D`` (its row sums are the
    row degrees ``d_i``, its column sums the column degrees ``d_j``, ``D`` = number of ones:
    the Chung-Lu / "preferential attachment" model), and the same link turns it into a
    probability. So this is the EPM with one latent class and no shrinkage, and it differs from
    the models of Part II only by their latent structure.

    Smoothing: a row or column without ones would get ``p = 0`` and a test one there a log
    likelihood of ``-inf``; every degree therefore gets a pseudo-count ``pseudo`` (default 0.5,
    must be > 0), and the normaliser ``pseudo * (I + J) / 2`` (the mean of the added row and
    column totals), so that ``rate_ij = (d_i + s)(d_j + s) / (D + s (I + J) / 2)``. With
    ``pseudo`` small against the degrees this is ``d_i d_j / D``. Probabilities are clipped to
    ``[PROB_EPS, 1 - PROB_EPS]``.

    With ``mask`` (boolean ``(I, J)``, dense or sparse, True = unobserved; no one of
    ``X_train`` may be masked): each degree is divided by the observed fraction of its row
    (``n_i / J``, ``n_i`` = observed entries of row i) or column (``n_j / I``); ``D`` by the
    observed fraction of the matrix. That is, a degree estimates what the row or column would
    have if all its entries were observed (the missing entries assumed missing at random within
    a row or column), so a row with many held-out entries is not mistaken for an unpopular one.
    A row or column that is entirely masked keeps only the pseudo-count.

    Returns a float64 array of probabilities in (0, 1), one per entry ``(rows[e], cols[e])``.
    """
    I, J, ones = _train_matrix(X_train)
    rows, cols = _entries(rows, cols, I, J)
    if not (isinstance(pseudo, (int, float, np.integer, np.floating)) and not isinstance(pseudo, bool)
            and math.isfinite(pseudo) and pseudo > 0):
        raise ValueError(f"pseudo must be a finite number > 0, got {pseudo!r}")
    d_row, d_col, D = _degrees(ones, _mask_keys(mask, I, J, ones), I, J)
    rate = (d_row[rows] + pseudo) * (d_col[cols] + pseudo) / (D + pseudo * (I + J) / 2)
    return _clip(-np.expm1(-rate))


def _degrees(ones, mkeys, I, J):
    """Row and column degrees and total of the observed ones, scaled by the observed fractions."""
    obs = ones
    d_row = np.bincount(obs // J, minlength=I).astype(float)
    d_col = np.bincount(obs % J, minlength=J).astype(float)
    D = float(obs.size)
    if mkeys is not None and mkeys.size:
        n_row = J - np.bincount(mkeys // J, minlength=I)     # observed entries per row
        n_col = I - np.bincount(mkeys % J, minlength=J)
        with np.errstate(divide="ignore", invalid="ignore"):
            d_row = np.where(n_row > 0, d_row * J / np.maximum(n_row, 1), 0.0)
            d_col = np.where(n_col > 0, d_col * I / np.maximum(n_col, 1), 0.0)
        D = D * (I * J) / (I * J - mkeys.size)
    return d_row, d_col, D


# ---------------------------------------------------------------------------------------------
# truncated SVD + logistic calibration
# ---------------------------------------------------------------------------------------------
def _factors(I, J, obs, k, seed, n_iter):
    from sklearn.decomposition import TruncatedSVD

    A = sp.csr_matrix((np.ones(obs.size, dtype=np.float64), (obs // J, obs % J)), shape=(I, J))
    svd = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=n_iter, random_state=seed)
    US = svd.fit_transform(A)                    # (I, k) = U_k Sigma_k
    V = svd.components_.T                        # (J, k)
    return US, np.ascontiguousarray(V)


def _reconstruct(US, V, rows, cols, k=None):
    """(U_k Sigma_k V_k^T)[rows[e], cols[e]] for every e (the first ``k`` components, default
    all), in chunks of at most ``_CHUNK_FLOATS`` gathered floats: no I x J array, no n x k one."""
    if k is not None and k < US.shape[1]:
        US, V = np.ascontiguousarray(US[:, :k]), np.ascontiguousarray(V[:, :k])
    k = US.shape[1]
    out = np.empty(rows.size)
    step = max(1, _CHUNK_FLOATS // k)
    for s in range(0, rows.size, step):
        e = slice(s, s + step)
        out[e] = np.einsum("ek,ek->e", US[rows[e]], V[cols[e]])
    return out


def _quantum(s):
    """The grid step of :func:`_snap` for the scores ``s``: ``2**-SNAP_BITS`` times their scale,
    the least power of two above ``max|s| * (1 + 2**-20)`` -- a power of two, so that snapping
    is exact arithmetic. The factor moves the one place where the scale jumps away from the
    powers of two themselves (a reconstruction of a 0/1 matrix is often 1 up to rounding, and
    ``max|s|`` = 1 - 1e-16 or 1 + 1e-16 must give the same grid)."""
    m = float(np.max(np.abs(s), initial=0.0))
    if not (math.isfinite(m) and m > 0):
        return None
    return math.ldexp(1.0, math.frexp(m * (1 + 2.0 ** -20))[1] - SNAP_BITS)


def _snap(s, q):
    """``s`` rounded to the nearest multiple of ``q`` (a power of two; None: unchanged).

    Why: the scores are sums of products of factors that BLAS computes (the randomized SVD's
    products, QR and LU), whose kernels and summation order differ between CPUs and thread
    counts; the scores then differ in their last bits from one CPU to another. Entries whose
    scores are equal in exact arithmetic (structurally equivalent nodes, the two directions of
    a pair of an undirected network) would be ranked by rounding noise, and TDAUC-PR and AUC-ROC
    would change with the CPU. On the grid they are exact ties on every CPU (unless a score lies
    within rounding noise of a midpoint of the grid, about one in 10^6). ``s / q`` and the
    product with ``q`` are exact (``q`` is a power of two), so snapping adds no rounding."""
    if q is None:
        return s
    return np.rint(s / q) * q


def _sample_zeros(ones_all, mkeys, I, J, n_neg, rng):
    """Keys of observed zeros (neither ones nor masked): all of them if there are at most
    ``n_neg``, else ``n_neg`` drawn uniformly with replacement (rejection sampling of linear
    indices). Returns (keys, weight), ``weight`` = (number of observed zeros) / (number returned).
    No one is masked (``_mask_keys``)."""
    n_zero = I * J - ones_all.size - (0 if mkeys is None else mkeys.size)
    if n_zero <= 0:
        return np.empty(0, np.int64), 1.0
    excluded = ones_all if mkeys is None else np.union1d(ones_all, mkeys)

    def is_zero(keys):
        pos = np.searchsorted(excluded, keys)
        pos[pos == excluded.size] = 0
        return excluded[pos] != keys

    block = 1 << 22                                          # 32 MB of int64 at most
    if n_zero <= n_neg:                                      # enumerate, block by block
        parts = []
        for a in range(0, I * J, block):
            keys = np.arange(a, min(a + block, I * J), dtype=np.int64)
            parts.append(keys[is_zero(keys)])
        return np.concatenate(parts), 1.0
    frac = n_zero / (I * J)
    got, need = [], n_neg
    while need > 0:
        draw = rng.integers(0, I * J, size=min(int(need / frac * 1.1) + 16, block), dtype=np.int64)
        draw = draw[is_zero(draw)][:need]
        got.append(draw)
        need -= draw.size
    keys = np.concatenate(got)
    return keys, n_zero / keys.size


#: Calibration maps of :func:`svd_scores`.
CALIBRATORS = ("monotone", "logistic")
#: Most pieces of the monotone calibration map (knots at quantiles of the calibration scores),
#: and the least number of calibration ones per piece (fewer pieces on small matrices).
DEFAULT_PIECES, MIN_ONES_PER_PIECE = 10, 100
#: Least slope of the monotone map's logit across a piece: the map is strictly increasing.
_MIN_SLOPE = 1e-6


def _fit_logistic(s_cal, y, w):
    """1-d logistic regression p = sigmoid(a + b s) with sample weights: the function s -> p."""
    from sklearn.linear_model import LogisticRegression

    mu, sd = float(s_cal.mean()), float(s_cal.std()) or 1.0     # standardised: lbfgs converges fast
    # C huge = no penalty (penalty=None is deprecated from scikit-learn 1.8 on)
    lr = LogisticRegression(C=1e10, solver="lbfgs", max_iter=1000, tol=1e-10)
    lr.fit(((s_cal - mu) / sd)[:, None], y, sample_weight=w * (w.size / w.sum()))
    a, b = float(lr.intercept_[0]), float(lr.coef_[0, 0])
    return lambda s: _clip(expit(a + b * (s - mu) / sd))


def _pieces(x, t):
    """Piece index (0 .. M-1) of every x among the knots t_0 < ... < t_M, and its position
    (x - t_p) / (t_{p+1} - t_p) in it: in [0, 1] inside, < 0 below t_0, > 1 above t_M."""
    p = np.clip(np.searchsorted(t, x, side="right") - 1, 0, t.size - 2)
    return p, (x - t[p]) / (t[p + 1] - t[p])


def _fit_monotone(s_cal, y, w, n_pieces=None):
    """Weighted maximum-likelihood fit of a strictly increasing, piecewise-linear logit:
    ``logit p(s) = a + sum_{j < piece(s)} b_j + b_piece(s) * position(s)``, knots at ``n_pieces + 1``
    quantiles of ``s_cal`` (default: ``DEFAULT_PIECES``, fewer if there are fewer than
    ``MIN_ONES_PER_PIECE`` ones per piece), every ``b_j >= _MIN_SLOPE`` (L-BFGS-B), extended linearly beyond the
    first and last knot. Returns the function s -> p. O(n) memory: the gradient is accumulated
    per piece (``np.bincount``), no n x pieces basis matrix."""
    from scipy.optimize import minimize

    if n_pieces is None:                # at least MIN_ONES_PER_PIECE ones per piece on average
        n_pieces = int(min(DEFAULT_PIECES, max(1, np.count_nonzero(y) // MIN_ONES_PER_PIECE)))
    t = np.unique(np.quantile(s_cal, np.linspace(0, 1, n_pieces + 1)))
    if t.size > 1:       # knots closer than rounding noise would let the map separate ties
        keep = np.concatenate([[True], np.diff(t) > 1e-9 * (t[-1] - t[0])])
        t = t[keep]
        t[-1] = max(t[-1], float(s_cal.max()))
    ww = w * (w.size / w.sum())
    base = float(np.sum(ww * y) / np.sum(ww))
    a0 = math.log(base / (1 - base))
    if t.size < 2:                                  # one score value: the base rate
        return lambda s: _clip(np.full(np.shape(s), base))
    M = t.size - 1
    piece, pos = _pieces(s_cal, t)
    n = float(y.size)

    def loss(theta):
        a, b = theta[0], theta[1:]
        z = a + np.concatenate([[0.0], np.cumsum(b)[:-1]])[piece] + b[piece] * pos
        val = np.sum(ww * (np.logaddexp(0.0, z) - y * z)) / n
        g = ww * (expit(z) - y) / n
        per = np.bincount(piece, weights=g, minlength=M)
        above = np.concatenate([np.cumsum(per[::-1])[::-1][1:], [0.0]])   # sum over later pieces
        grad_b = np.bincount(piece, weights=g * pos, minlength=M) + above
        return val, np.concatenate([[g.sum()], grad_b])

    theta0 = np.concatenate([[a0], np.full(M, 0.1)])
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B",
                   bounds=[(None, None)] + [(_MIN_SLOPE, None)] * M,
                   options={"maxiter": 2000, "ftol": 1e-13, "gtol": 1e-9})
    a, b = float(res.x[0]), res.x[1:]
    left = np.concatenate([[0.0], np.cumsum(b)[:-1]])

    def to_prob(s):
        s = np.asarray(s, dtype=float)
        out = np.empty(s.size)
        for k0 in range(0, s.size, 1 << 20):
            p_, x_ = _pieces(s[k0:k0 + (1 << 20)], t)
            out[k0:k0 + (1 << 20)] = expit(a + left[p_] + b[p_] * x_)
        return _clip(out)
    return to_prob


def svd_scores(X_train, rows, cols, k=DEFAULT_K, mask=None, seed=0, calibration="holdout",
               calibrator="monotone", holdout=0.1, n_neg=None, n_pieces=None, n_iter=7,
               return_scores=False):
    """Rank-``k`` truncated-SVD link probabilities at the given entries, calibrated on the training matrix.

    1. Factorise: scikit-learn's ``TruncatedSVD`` (randomized, ``n_iter`` power iterations,
       ``random_state=seed``) of the sparse training matrix, the ones of observed entries as
       1.0 and everything else 0 ("PureSVD": unobserved and held-out entries are zeros of the
       factorised matrix, as for the EPM). The score of (i, j) is the reconstruction
       ``s_ij = (U_k Sigma_k V_k^T)_ij``, computed only at the entries asked for, and rounded to
       a multiple of ``2**-SNAP_BITS`` (about 1e-9) times the scale of the calibration scores
       (the least power of two above their largest magnitude; one grid for the calibration and
       the scored entries): scores equal in exact arithmetic, which BLAS leaves unequal in
       their last bits differently on every CPU, become exact ties, so that the ranking and the
       metrics do not depend on the CPU. Distinct scores closer than that are ties too.
    2. Calibrate: a reconstruction is not a probability (it can be negative or above 1), so
       TDLL would be meaningless on it. A map from scores to probabilities is fitted by
       weighted maximum likelihood:

       - ``calibrator="monotone"`` (default): a strictly increasing logit, piecewise linear in
         ``s`` with ``n_pieces`` pieces between quantiles of the calibration scores (linear
         beyond them), every slope >= 1e-6 (scipy's L-BFGS-B). Default ``n_pieces``: 10, or
         one per 100 calibration ones if that is fewer (one piece = Platt scaling, on Enron09),
         so that the map does not fit the noise of a few held-out ones. Strictly increasing, so the
         ranking of the entries -- hence TDAUC-PR and AUC-ROC -- is that of the raw scores
         (but for ties where probabilities are clipped to ``[PROB_EPS, 1 - PROB_EPS]``);
         flexible, because the log-odds of a one are far from linear in a reconstruction.
       - ``calibrator="logistic"``: Platt scaling, a one-dimensional logistic regression
         ``p = sigmoid(a + b s)`` (scikit-learn's ``LogisticRegression``, lbfgs, no penalty):
         the same ranking, but its TDLL is markedly worse (MovieLens100K fold 0, k = 16:
         -0.095 against -0.086).

       Either is fitted on the training matrix only, to ones and to ``n_neg`` zeros drawn
       uniformly from the observed zeros (with replacement, ``numpy.random.default_rng(seed)``;
       default ``n_neg = max(2 * ones, 20000)``; all zeros when there are fewer), the zeros
       weighted by (observed zeros) / (zeros drawn) so that the intercept is that of the whole
       matrix, not of the subsample. Which ones and which scores:

       - ``calibration="holdout"`` (default; cross-fitting): a random share ``holdout`` of the
         training ones is set to zero, the SVD is fitted to the rest, and the regression is
         fitted to *those* ones (label 1, each weighted 1 / share hidden) and the zeros (label
         0), scored by that SVD; the final SVD is then fitted to all training ones and the
         calibration applied to its scores. This mimics the fold protocol one level down: test
         entries are a random share of all entries, zeros of the factorised matrix whatever
         their label, and their share of ones is the density. The hidden ones' weight restores
         that base rate (the hidden ones stand for the ones of a random share of *all* entries,
         whose zeros look like any other zero). An SVD scores its own training ones far higher
         than ones it has not seen, so calibrating on ones it has not seen is what keeps large
         ``k`` from being over-confident on the held-out ones. Two SVDs.
       - ``calibration="train"``: the regression is fitted to the training ones themselves and
         the zeros, scored by the SVD of the whole training matrix (one SVD). Simpler, but the
         SVD has fitted exactly those ones: the larger ``k``, the more over-confident the
         probabilities of held-out entries, and TDLL collapses (toy90, fold 0, k = 16: -1.6
         against -0.36 with ``"holdout"``).

       Held-out (test) entries are zeros of the training matrix unless masked, and enter the
       calibration as zeros like any other zero: nothing about their labels is used.

    ``mask`` (boolean ``(I, J)``, dense or sparse, True = unobserved; no one of ``X_train`` may
    be masked): masked entries stay zeros of the factorised matrix (the SVD cannot tell missing
    from zero: "PureSVD" zero-filling) but are left out of the calibration and of the zeros it
    draws.

    Requires ``1 <= k < min(I, J)``. Deterministic given ``seed``. Returns a float64 array of
    probabilities in ``[PROB_EPS, 1 - PROB_EPS]``; with ``return_scores=True`` the pair
    ``(probabilities, reconstructions on the grid)``. Memory: O((I + J) k + nnz + entries).
    """
    I, J, ones = _train_matrix(X_train)
    rows, cols = _entries(rows, cols, I, J)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < min(I, J):
        raise ValueError(f"k must be an integer with 1 <= k < min(I, J) = {min(I, J)}, got {k!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 0:
        raise ValueError(f"n_iter must be an integer >= 0, got {n_iter!r}")
    if calibration not in ("holdout", "train"):
        raise ValueError(f"calibration must be 'holdout' or 'train', got {calibration!r}")
    if calibrator not in CALIBRATORS:
        raise ValueError(f"calibrator must be one of {', '.join(CALIBRATORS)}, got {calibrator!r}")
    if n_pieces is not None and (isinstance(n_pieces, bool) or not isinstance(n_pieces, (int, np.integer))
                                 or n_pieces < 1):
        raise ValueError(f"n_pieces must be an integer >= 1, got {n_pieces!r}")
    if calibration == "holdout" and not (isinstance(holdout, (float, int)) and not isinstance(holdout, bool)
                                         and 0 < holdout < 1):
        raise ValueError(f"holdout must be a number strictly between 0 and 1, got {holdout!r}")
    mkeys = _mask_keys(mask, I, J, ones)
    obs = ones
    if n_neg is None:
        n_neg = max(2 * obs.size, 20000)
    elif isinstance(n_neg, bool) or not isinstance(n_neg, (int, np.integer)) or n_neg < 1:
        raise ValueError(f"n_neg must be an integer >= 1, got {n_neg!r}")

    rng = np.random.default_rng(seed)
    zeros, w0 = _sample_zeros(ones, mkeys, I, J, int(n_neg), rng)
    if zeros.size == 0:
        raise ValueError("X_train has no observed zeros: the calibration needs both labels")
    if calibration == "holdout":
        if obs.size < 2:
            raise ValueError("calibration='holdout' needs at least two observed ones")
        hide = rng.random(obs.size) < holdout
        if not hide.any() or hide.all():                 # tiny matrices: hide exactly one
            hide = np.zeros(obs.size, bool)
            hide[rng.integers(obs.size)] = True
        US, V = _factors(I, J, obs[~hide], int(k), int(seed), int(n_iter))
        pos = obs[hide]
    else:
        US, V = _factors(I, J, obs, int(k), int(seed), int(n_iter))
        pos = obs
    cal = np.concatenate([pos, zeros])
    s_cal = _reconstruct(US, V, cal // J, cal % J)
    q = _quantum(s_cal)                   # one grid for the calibration and the scored entries
    s_cal = _snap(s_cal, q)
    y = np.concatenate([np.ones(pos.size, np.int8), np.zeros(zeros.size, np.int8)])
    # ones weighted 1 / (share hidden): the hidden ones stand for the ones among a random share
    # of all entries, so the base rate is the training matrix's density (that of test entries)
    w = np.concatenate([np.full(pos.size, obs.size / pos.size), np.full(zeros.size, w0)])
    to_prob = (_fit_monotone(s_cal, y, w, n_pieces) if calibrator == "monotone"
               else _fit_logistic(s_cal, y, w))
    if calibration == "holdout":
        US, V = _factors(I, J, obs, int(k), int(seed), int(n_iter))

    s = _snap(_reconstruct(US, V, rows, cols), q)
    p = to_prob(s)
    return (p, s) if return_scores else p


#: Ranks :func:`select_k` chooses from by default.
DEFAULT_KS = (2, 4, 8, 16, 32, 64)


def select_k(X_train, ks=DEFAULT_KS, mask=None, seed=0, holdout=0.1, n_neg=None, n_iter=7,
             return_scores=False):
    """The rank of :func:`svd_scores` a practitioner would choose: best inner-validation AUC-PR.

    Done on the training matrix only, the way ``calibration="holdout"`` is: a random share
    ``holdout`` of the training ones is set to zero, one SVD of rank ``max(ks)`` is fitted to
    the rest (``TruncatedSVD``, ``random_state=seed``), and for each ``k`` in ``ks`` (those with
    ``1 <= k < min(I, J)``) the rank-``k`` truncation of it scores the hidden ones against
    ``n_neg`` zeros drawn uniformly (weighted as in :func:`svd_scores`, so that the ones' share
    is the density), its scores snapped to the grid of :func:`svd_scores` (one grid per ``k``).
    Returns the ``k`` of highest weighted average precision (the smallest on a tie); with
    ``return_scores=True`` the pair ``(k, {k: average precision})``.
    """
    from sklearn.metrics import average_precision_score

    I, J, ones = _train_matrix(X_train)
    try:
        ks = list(ks)
    except TypeError:
        raise ValueError(f"ks must be a sequence of integers, got {ks!r}") from None
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) for k in ks):
        raise ValueError(f"ks must be a sequence of integers, got {ks!r}")
    ks = sorted({int(k) for k in ks if 1 <= k < min(I, J)})
    if not ks:
        raise ValueError(f"ks holds no rank with 1 <= k < min(I, J) = {min(I, J)}")
    if not (isinstance(holdout, (float, int)) and not isinstance(holdout, bool) and 0 < holdout < 1):
        raise ValueError(f"holdout must be a number strictly between 0 and 1, got {holdout!r}")
    mkeys = _mask_keys(mask, I, J, ones)
    obs = ones
    if obs.size < 2:
        raise ValueError("select_k needs at least two observed ones")
    if n_neg is None:
        n_neg = max(2 * obs.size, 20000)
    elif isinstance(n_neg, bool) or not isinstance(n_neg, (int, np.integer)) or n_neg < 1:
        raise ValueError(f"n_neg must be an integer >= 1, got {n_neg!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    zeros, w0 = _sample_zeros(ones, mkeys, I, J, int(n_neg), rng)
    if zeros.size == 0:
        raise ValueError("X_train has no observed zeros: nothing to validate on")
    hide = rng.random(obs.size) < holdout
    if not hide.any() or hide.all():
        hide = np.zeros(obs.size, bool)
        hide[rng.integers(obs.size)] = True
    US, V = _factors(I, J, obs[~hide], max(ks), int(seed), int(n_iter))
    pos = obs[hide]
    cal = np.concatenate([pos, zeros])
    r, c = cal // J, cal % J
    y = np.concatenate([np.ones(pos.size, np.int8), np.zeros(zeros.size, np.int8)])
    w = np.concatenate([np.full(pos.size, obs.size / pos.size), np.full(zeros.size, w0)])
    ap = {}
    for k in ks:
        s = _reconstruct(US, V, r, c, k)
        ap[k] = float(average_precision_score(y, _snap(s, _quantum(s)), sample_weight=w))
    best = max(ks, key=lambda k: (ap[k], -k))
    return (best, ap) if return_scores else best


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------
def _check_test(test, I, J, ones, mkeys):
    if not isinstance(test, (tuple, list)) or len(test) != 3:
        raise ValueError("test must be a tuple (rows, cols, labels) of held-out entries, e.g. from "
                         "epm_lib.experiments.split")
    rows, cols = _entries(test[0], test[1], I, J, "test entries")
    labels = np.asarray(test[2])
    if labels.shape != rows.shape:
        raise ValueError(f"test labels must be 1-d of the length of rows and cols ({rows.size}), "
                         f"got shape {labels.shape}")
    if rows.size == 0:
        raise ValueError("test holds no entries")
    if labels.dtype.kind not in "biuf" or np.any((labels != 0) & (labels != 1)):
        raise ValueError("test labels must be 0 or 1")
    key = rows * J + cols
    if np.unique(key).size != key.size:
        raise ValueError("test lists some entry more than once")
    leak = np.isin(key, ones)
    if leak.any():
        e = int(np.flatnonzero(leak)[0])
        raise ValueError(f"{int(leak.sum())} test entries are ones of X_train (e.g. "
                         f"({rows[e]}, {cols[e]})); held-out entries must be set to zero in "
                         f"X_train (epm_lib.experiments.split), and may also be masked")
    return rows, cols, (labels != 0).astype(np.int8)


def _scores(labels, prob):
    try:
        roc = auc_roc(labels, prob)
    except ValueError:                          # one class only: undefined (like TDAUC-PR's NaN)
        roc = float("nan")
    return {"tdll": bernoulli_tdll(labels, prob), "tdauc_pr": tdauc_pr(labels, prob), "auc_roc": roc}


def score_baselines(X_train, test, mask=None, seed=0, k=(DEFAULT_K, "auto"), pseudo=DEFAULT_PSEUDO,
                    calibration="holdout", calibrator="monotone", symmetric=False) -> dict:
    """TDLL, TDAUC-PR and AUC-ROC of every baseline on the held-out entries ``test``.

    ``test = (rows, cols, labels)`` as returned by ``epm_lib.experiments.split`` (the
    ``test`` argument of ``epm_lib.fit``): the held-out entries must be zeros of ``X_train``
    (and may be masked: ``mask=epm_lib.fit.missing_mask(X_train.shape, rows, cols)``). ``k``: the rank(s) of the SVD baseline, an int, ``"auto"`` (chosen on the
    training matrix by :func:`select_k`) or a sequence of them; default ``(16, "auto")``.
    ``pseudo`` is the popularity's pseudo-degree, ``seed`` the seed of the SVD, its
    calibration and ``select_k``; ``calibration`` and ``calibrator``: how the SVD's scores
    become probabilities (:func:`svd_scores`).

    Returns ``{name: {"tdll": ..., "tdauc_pr": ..., "auc_roc": ...}}`` with names
    ``"popularity"``, ``"svd-k<k>"`` for a fixed rank and ``"svd-auto"`` (whose dict also holds
    the chosen ``"k"``). AUC-ROC is NaN (rather than an error) when the test labels hold one
    class only, as TDAUC-PR is NaN without a test one.

    ``symmetric=True``: an undirected network, as ``epm_lib.fit(symmetric=True)``: ``X_train``
    square and symmetric, each test pair listed once (as (i, j) or (j, i)), the mask symmetrised
    (a masked pair is missing in both directions), and a pair scored by (p_ij + p_ji) / 2.
    """
    I, J, ones = _train_matrix(X_train)
    symmetric = check_bool("symmetric", symmetric)
    if symmetric:
        _check_symmetric(I, J, ones // J, ones % J)
        if mask is not None:
            mk = mask_entries(mask, (I, J))
            mk = np.unique(np.concatenate([mk, (mk % J) * J + mk // J]))
            mask = sp.csr_matrix((np.ones(mk.size, dtype=bool), (mk // J, mk % J)), shape=(I, J))
    mkeys = _mask_keys(mask, I, J, ones)
    rows, cols, labels = _check_test(test, I, J, ones, mkeys)
    if symmetric:
        (er, ec, _), (n_pairs, partner) = _symmetric_test((rows, cols, labels), J)
        rows, cols = er, ec            # both directions; averaged back to the pairs below

    def pairs(p):
        if not symmetric:
            return p
        q = p[:n_pairs].copy()
        two = partner >= 0
        q[two] = 0.5 * (q[two] + p[partner[two]])
        return q
    try:
        ks = [k] if isinstance(k, (int, np.integer, str)) else list(k)
    except TypeError:
        raise ValueError(f"k must be an integer, 'auto' or a sequence of them, got {k!r}") from None
    for kk in ks:
        if isinstance(kk, str) and kk != "auto":
            raise ValueError(f"k must be an integer, 'auto' or a sequence of them, got {kk!r}")
    out = {"popularity": _scores(labels, pairs(popularity(X_train, rows, cols, mask=mask,
                                                          pseudo=pseudo)))}
    for kk in ks:
        chosen = select_k(X_train, mask=mask, seed=seed) if kk == "auto" else kk
        res = _scores(labels, pairs(svd_scores(X_train, rows, cols, k=chosen, mask=mask, seed=seed,
                                               calibration=calibration, calibrator=calibrator)))
        if kk == "auto":
            out["svd-auto"] = {**res, "k": int(chosen)}
        else:
            out[f"svd-k{kk}"] = res
    return out
