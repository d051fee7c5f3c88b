"""``epm_lib.nmf``: the two computations the data's start is made of, apart from the start itself.

* ``choose_rank``: how many atoms the data show, by singular value thresholding against the noise
  edge of a Bernoulli matrix with the variance profile of X (at least ``K_FLOOR`` in the start);
* ``kl_nmf``: the Poisson (Kullback-Leibler) non-negative matrix factorisation of X, the maximum
  likelihood point of the models' Poisson counts, by Lee & Seung's multiplicative updates over the
  ones of X, with missing entries left out by EM;

and ``enough`` / ``check_enough``, whether X can be factorised at all. Why each is done as it is
(the variance profile, the floor, the random restarts, missing entries, undirected networks) is
derived in the docstring of ``epm_lib.starts``, which turns a factorisation into every model's
state and re-exports these names; ``epm_lib.heldout_rank`` chooses the rank on held-out entries
with the same factorisation.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from .checks import check_bool
from .fit_data import _check_symmetric, prepare_matrix

__all__ = ["choose_rank", "kl_nmf", "enough", "check_enough", "K_MAX", "MARGIN", "K_FLOOR", "MIN_ONES",
           "MAX_ITER", "TOL", "MIN_ITER", "N_RANDOM", "RESTART_WORK"]

#: most singular values the rank choice computes ("a few dozen")
K_MAX = 40
#: a singular value counts as signal if it exceeds the noise edge by this fraction
MARGIN = 0.05
#: fewest atoms of the data's start when the rank is chosen (``data_start``; ``choose_rank`` itself
#: reports the edge's count): small matrices put the edge above all but one or two components
#: (module docstring, "Too few atoms")
K_FLOOR = 4
#: fewest ones of X for init="data" (a factorisation needs something to factorise)
MIN_ONES = 4
#: most multiplicative updates of the NMF; it stops earlier when 10 updates gain less than TOL
#: (relative) in log-likelihood
MAX_ITER = 200
TOL = 1e-5
MIN_ITER = 50
#: random starts of the NMF beside NNDSVDa (the most likely wins), when (entries x K x MAX_ITER x
#: starts) is at most RESTART_WORK (small data: the multiplicative updates find local optima)
N_RANDOM = 5
RESTART_WORK = 5e8


def _spectrum(Xc, symmetric, k, seed):
    """The k largest singular triplets of Xc, (U, s, Vt) (symmetric: its k largest eigenvalues,
    signed, with U = Vt.T their eigenvectors), values in decreasing order."""
    n_min = min(Xc.shape)
    if n_min <= 2 * k + 10 or Xc.shape[0] * Xc.shape[1] <= 250_000:   # small: exact, dense
        A = Xc.toarray().astype(np.float64)
        if symmetric:
            w, U = np.linalg.eigh(A)
            order = np.argsort(w)[::-1][:k]
            return U[:, order], w[order], U[:, order].T
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        return U[:, :k], s[:k], Vt[:k]
    v0 = np.random.default_rng(seed).uniform(0.5, 1.5, size=Xc.shape[1])  # deterministic ARPACK start
    from scipy.sparse.linalg import eigsh, svds
    A = Xc.astype(np.float64)
    if symmetric:
        w, U = eigsh(A, k=k, which="LA", v0=v0)
        order = np.argsort(w)[::-1]
        return U[:, order], w[order], U[:, order].T
    U, s, Vt = svds(A, k=k, v0=v0[:min(Xc.shape)] if Xc.shape[0] < Xc.shape[1] else v0)
    order = np.argsort(s)[::-1]
    return U[:, order], s[order], Vt[order]


def _profile_sums(U, s, Vt, K, row_ones, col_ones):
    """Row and column sums of the variance profile p (1 - p) of X: sum_j p_ij (1 - p_ij) =
    sum_j p_ij - sum_j p_ij^2, the first estimated by the ones of row i (unbiased), the second by
    the squared norm of row i of the rank-K reconstruction U_K diag(s_K) (V_K orthonormal); O((I + J) K),
    no I x J matrix and no clipping (a clipped reconstruction overstates the variance of the
    sparse regions, where p is near 0)."""
    r = row_ones - np.sum((U[:, :K] * s[:K]) ** 2, axis=1)
    c = col_ones - np.sum((Vt[:K].T * s[:K]) ** 2, axis=1)
    return np.maximum(r, 0.0), np.maximum(c, 0.0)


def choose_rank(X, symmetric=False, k_max=K_MAX, seed=0, margin=MARGIN):
    """Number of atoms for the data start: singular values (symmetric: positive eigenvalues) of
    the binary matrix ``X`` (missing entries as zeros) above the noise edge of a Bernoulli matrix
    with the variance profile of its rank-K reconstruction (module docstring). Returns
    ``(K, info)``, ``info`` a dict with the values, the edge, the profile's typical row and
    column variance sums, the K of each round and the singular vectors (``U``, ``Vt``: X is
    about ``U diag(values) Vt``).

    Checked first (``ValueError`` naming what is wrong): ``X`` a 2-d binary (0/1) matrix, dense or
    scipy.sparse, with at least one one (no counts, no NaN); with ``symmetric=True`` square and
    symmetric; ``symmetric`` True or False; ``k_max`` an integer >= 1; ``margin`` a finite number
    >= 0; ``seed`` a non-negative integer."""
    symmetric = check_bool("symmetric", symmetric)
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1:
        raise ValueError(f"k_max must be an integer >= 1 (the most singular values computed), got {k_max!r}")
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) \
            or not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0 (the fraction by which a singular value must "
                         f"exceed the noise edge, default {MARGIN}), got {margin!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    I, J, rows, cols = prepare_matrix(X)        # 2-d, binary, no NaN, at least one one
    if symmetric:
        _check_symmetric(I, J, rows, cols)
    Xc = sp.csr_matrix(X)
    k = max(1, min(int(k_max), min(I, J) - 1))
    U, s, Vt = _spectrum(Xc, symmetric, k, seed)
    row_ones = np.diff(Xc.indptr).astype(np.float64)
    col_ones = np.bincount(Xc.indices, minlength=J).astype(np.float64)
    # the variance profile p (1 - p) through its typical row and column sums (module docstring),
    # estimated with the rank-K reconstruction, from K = 1 (all signal counted as noise: the
    # highest edge) until K repeats: the smallest K that explains itself
    K, seen = 1, []
    while K not in seen:
        seen.append(K)
        r, cs = _profile_sums(U, s, Vt, K, row_ones, col_ones)
        row = float(r @ r / max(r.sum(), 1e-300))
        col = float(cs @ cs / max(cs.sum(), 1e-300))
        edge = 2.0 * math.sqrt(row) if symmetric else math.sqrt(row) + math.sqrt(col)
        K = max(1, int(np.count_nonzero(s > edge * (1 + margin))))
    return K, dict(values=s, edge=edge, row_variance=row, col_variance=col, rounds=seen + [K], K=K,
                   U=U, Vt=Vt)


@njit(cache=True)
def _rates(rows, cols, W, Ht, out):
    for e in range(rows.shape[0]):
        i, j = rows[e], cols[e]
        t = 0.0
        for k in range(W.shape[1]):
            t += W[i, k] * Ht[j, k]
        out[e] = t


@njit(cache=True)
def _column_sums(A):
    """sum_x A[x, k] for every k, row after row (a fixed order)."""
    out = np.zeros(A.shape[1])
    for x in range(A.shape[0]):
        for k in range(A.shape[1]):
            out[k] += A[x, k]
    return out


@njit(cache=True)
def _kl_mu(rows, cols, n_ones, W, Ht, n_iter):
    """``n_iter`` multiplicative updates (Lee & Seung) of the KL NMF X ~ W Ht^T, in place: ``rows``,
    ``cols`` list the ones of X (``e < n_ones``) and then its missing entries, whose ratio
    x/(W H)_e is 1 (EM: a missing entry at its expectation); the zeros enter only through the
    denominators sum_j H_kj, sum_i W_ik. Returns the observed-data log-likelihood
    sum_ones ln (W H)_e - sum_observed (W H)_ij after the last update."""
    n, K = rows.shape[0], W.shape[1]
    wh = np.empty(n)
    for _ in range(n_iter):
        for side in range(2):
            A, B = (W, Ht) if side == 0 else (Ht, W)   # update A given B
            ia, ib = (rows, cols) if side == 0 else (cols, rows)
            _rates(rows, cols, W, Ht, wh)
            num = np.zeros(A.shape)
            for e in range(n):
                r = 1.0 / max(wh[e], 1e-300) if e < n_ones else 1.0
                a, b = ia[e], ib[e]
                for k in range(K):
                    num[a, k] += r * B[b, k]
            den = _column_sums(B)
            for x in range(A.shape[0]):
                for k in range(K):
                    A[x, k] = A[x, k] * num[x, k] / den[k] if den[k] > 0 else 0.0
    _rates(rows, cols, W, Ht, wh)
    total = 0.0
    sw = _column_sums(W)
    sh = _column_sums(Ht)
    for k in range(K):
        total += sw[k] * sh[k]
    ll_ones = 0.0
    miss = 0.0
    for e in range(n):
        if e < n_ones:
            ll_ones += math.log(max(wh[e], 1e-300))
        else:
            miss += wh[e]
    return ll_ones - (total - miss)


def _nndsvda(Xc, K, symmetric, seed):
    """NNDSVD start of the NMF (Boutsidis & Gallopoulos 2008), zeros filled with the mean of X
    (the "a" variant): each of the K leading singular pairs (symmetric: positive eigenpairs)
    split into the positive and negative parts, the larger kept."""
    I, J = Xc.shape
    A = Xc.astype(np.float64)
    small = min(I, J) <= 2 * K + 10 or I * J <= 250_000
    if symmetric:
        if small:
            ev, U = np.linalg.eigh(A.toarray())
            idx = np.argsort(ev)[::-1][:K]
            ev, U = ev[idx], U[:, idx]
        else:
            from scipy.sparse.linalg import eigsh
            v0 = np.random.default_rng(seed).uniform(0.5, 1.5, size=I)
            ev, U = eigsh(A, k=K, which="LA", v0=v0)
            idx = np.argsort(ev)[::-1]
            ev, U = ev[idx], U[:, idx]
        S, V = np.maximum(ev, 0.0), U
    else:
        if small:
            U, S, Vt = np.linalg.svd(A.toarray(), full_matrices=False)
            U, S, V = U[:, :K], S[:K], Vt[:K].T
        else:
            from scipy.sparse.linalg import svds
            v0 = np.random.default_rng(seed).uniform(0.5, 1.5, size=min(I, J))
            U, S, Vt = svds(A, k=K, v0=v0)
            idx = np.argsort(S)[::-1]
            U, S, V = U[:, idx], S[idx], Vt[idx].T
    W = np.zeros((I, K))
    Ht = np.zeros((J, K))
    for k in range(K):
        u, v = U[:, k], V[:, k]
        up, vp, un, vn = np.maximum(u, 0), np.maximum(v, 0), np.maximum(-u, 0), np.maximum(-v, 0)
        mp = np.linalg.norm(up) * np.linalg.norm(vp)
        mn = np.linalg.norm(un) * np.linalg.norm(vn)
        (x, y, m) = (up, vp, mp) if mp >= mn else (un, vn, mn)
        if m <= 0:
            continue
        W[:, k] = np.sqrt(S[k] * m) * x / np.linalg.norm(x)
        Ht[:, k] = np.sqrt(S[k] * m) * y / np.linalg.norm(y)
    avg = Xc.nnz / (I * J)
    W[W == 0] = avg / 100
    Ht[Ht == 0] = avg / 100
    return W, Ht


def _check_missing(missing, I, J):
    """``missing`` = (rows, cols) as int64 arrays of one length, every index inside the I x J matrix
    (checked before the numba kernel indexes with them); ``ValueError`` naming the first bad one."""
    try:
        mr, mc = (np.asarray(a) for a in missing)
    except (TypeError, ValueError):
        raise ValueError(f"missing must be (rows, cols), two arrays of indices, got {missing!r}") from None
    if mr.ndim != 1 or mc.ndim != 1 or mr.shape != mc.shape or \
            (mr.size and not (np.issubdtype(mr.dtype, np.integer) and np.issubdtype(mc.dtype, np.integer))):
        raise ValueError(f"missing must be (rows, cols), two 1-d integer arrays of one length, got shapes "
                         f"{mr.shape} and {mc.shape} of {mr.dtype} and {mc.dtype}")
    for name, a, n in (("row", mr, I), ("column", mc, J)):
        bad = np.flatnonzero((a < 0) | (a >= n))
        if bad.size:
            raise ValueError(f"missing: {name} index {a[bad[0]]} (entry {bad[0]}) is outside 0..{n - 1}")
    return mr.astype(np.int64), mc.astype(np.int64)


def kl_nmf(X, K, seed, missing=None, symmetric=False, max_iter=MAX_ITER, n_random=N_RANDOM, tol=TOL):
    """Poisson (KL) NMF of the binary matrix ``X`` with ``K`` components: ``(W, H, loglik)``,
    ``W`` (I, K), ``H`` (K, J), ``loglik`` the observed-data Poisson log-likelihood of W H.
    ``missing``: (rows, cols) of entries left out of the fit (EM, module docstring).
    Candidates: the NNDSVDa start and, when cheap (``RESTART_WORK``), ``n_random`` random ones
    (from ``seed``); each runs up to ``max_iter`` updates, stopping (after ``MIN_ITER``) when 10 updates gain
    less than ``tol`` (relative) in log-likelihood; the most likely is returned."""
    Xc = sp.csr_matrix(X)
    I, J = Xc.shape
    if not (isinstance(K, (int, np.integer)) and not isinstance(K, bool) and 1 <= K <= min(I, J)):
        raise ValueError(f"K must be an integer number of components in 1..min(I, J) = {min(I, J)}, got {K!r}")
    rows = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
    cols = Xc.indices.astype(np.int64)
    n_ones = rows.shape[0]
    if missing is not None and len(missing[0]):
        mr, mc = _check_missing(missing, I, J)
        rows = np.concatenate([rows, mr])
        cols = np.concatenate([cols, mc])
    rng = np.random.default_rng(seed)
    cands = [_nndsvda(Xc, K, symmetric, int(rng.integers(2 ** 31 - 1)))]
    if rows.shape[0] * K * max_iter * (n_random + 1) <= RESTART_WORK:
        scale = math.sqrt(n_ones / (I * J) / K)
        for _ in range(n_random):
            cands.append((rng.uniform(0, 2 * scale, (I, K)), rng.uniform(0, 2 * scale, (J, K))))
    best = None
    for W, Ht in cands:
        W, Ht = np.ascontiguousarray(W), np.ascontiguousarray(Ht)
        done, ll = 0, -np.inf
        while done < max_iter:
            step = min(10, max_iter - done)
            new = _kl_mu(rows, cols, n_ones, W, Ht, step)
            done += step
            if done >= MIN_ITER and new - ll < tol * abs(new):
                ll = new
                break
            ll = new
        if best is None or ll > best[2]:
            best = (W, Ht, ll)
    W, Ht, ll = best
    return W, np.ascontiguousarray(Ht.T), ll


def enough(I, J, nnz) -> bool:
    """Whether X (I x J with ``nnz`` ones) can be factorised for ``init="data"``."""
    return nnz >= MIN_ONES and min(I, J) >= 2


def check_enough(I, J, nnz):
    """``ValueError`` when X is too small or has too few ones for ``init="data"``."""
    if not enough(I, J, nnz):
        raise ValueError(f"X ({I} x {J}) has {nnz} ones: too few for init='data' (a factorisation needs "
                         f"at least {MIN_ONES} ones and two rows and columns); start from K_init atoms instead: "
                         f"fit(..., K_init=k), the paper's start (init='paper' for the EPM, CEPM, DEPM; "
                         f"init='random' for the IDEPM); with fit_chains or run_until_agree give numbers of atoms "
                         f"as starts, e.g. starts=(1, 4)")
