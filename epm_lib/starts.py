r"""``epm_lib.starts``: a data-driven start for the four samplers (``fit(..., init="data")``).

Why Poisson (Kullback-Leibler) NMF
----------------------------------
Every model of the book links a one of X to latent counts (Eq. (1)):
x_ij = 1(m_ij. >= 1), m_ij. = sum_k m_ijk, m_ijk ~ Poisson(R_ik lambda_k C_jk), with
(R, C) = (U, V) for the EPM/CEPM and (phi, psi) for the DEPM/IDEPM. Replace the latent
count of each entry by its smallest value consistent with the data, m_ij. = x_ij (one
customer per one, none at a zero). The log-likelihood of the rates r_ij = sum_k W_ik H_kj,
with W_ik H_kj = R_ik lambda_k C_jk, is then

    sum_ij [ x_ij ln r_ij - r_ij ]  =  - D_KL(X || W H) + const,

the generalised Kullback-Leibler divergence. So the maximum-likelihood point of the Poisson
model of the counts, prior left out, is the KL non-negative matrix factorisation of X: the
EPM's maximum-likelihood counterpart, fitted by Lee & Seung's multiplicative updates
(``kl_nmf``; the updates of scikit-learn's ``NMF(beta_loss="kullback-leibler", solver="mu")``,
here as a numba kernel over the ones of X, with missing entries, about 5 times faster per update on
MovieLens-sized data, from an NNDSVDa start as scikit-learn's). The multiplicative update is the EM
algorithm of that Poisson model (Lee & Seung 2001; Cemgil 2009): the E-step splits each one
over the atoms in proportion to W_ik H_kj -- exactly the m-step's multinomial seating of the
samplers -- and the M-step sets W, H to the expected counts. The factorisation is therefore a
seating of the customers and a set of parameters at once, and maps into every model's state:

* write W_ik H_kj = lambda_k phi_ik psi_jk with phi_.k = W_.k / sum_i W_ik,
  psi_.k = H_k. / sum_j H_kj and lambda_k = (sum_i W_ik)(sum_j H_kj), the mass of atom k
  (at the KL optimum sum_k lambda_k = sum_ij x_ij: the masses are expected customers);
* DEPM: phi, psi, lambda as they are, on the first K of the T atoms; the others get
  lambda_k = 0 (no customer goes there in the first m-step; their lambda is redrawn from
  Gamma(gamma0/T, c0 + 1) in that sweep, so the sampler can grow) and uniform columns;
* EPM/CEPM: U_.k = (I a1/b1) phi_.k, V_.k = (J a2/b2) psi_.k (columns with the prior mean
  a1/b1, a2/b2 per entry; the CEPM has b1 = I a1, so U = phi there) and lambda_k the mass
  divided by sum_i U_ik sum_j V_jk, so that the rates U lambda V^T equal W H; unused atoms:
  lambda_k = 0 and U, V at their prior mean;
* IDEPM: each one (i, j) -- each customer -- is seated at the atom argmax_k W_ik H_kj (the
  E-step's most probable atom); atoms nobody chose are dropped.

The mapping is one function, ``factors_state(model, W, H, ...)``; it draws nothing. The data's start
feeds it the KL NMF; ``fit(init=labels)`` (``labels_start``) feeds it known groups of the rows, e.g. the
true communities of a benchmark network: W the one-hot memberships, H its maximum-likelihood partner
given W (for one-hot W the KL NMF splits into one Poisson mean per group and column, H_gj = the ones of
group g's rows in column j over its observed entries), so a chain "seated at the true communities" is
built exactly as the data's start is.

Hyperparameters (the first sweep redraws every one of them from its conditional):
alpha1 by moments of the Dirichlet, E[sum_i phi_ik^2] = (alpha1 + 1)/(I alpha1 + 1), so
alpha1 = (1 - s)/(I s - 1) with s the mean of sum_i phi_ik^2 over the K atoms (sharp
atoms give a small alpha1, the mode of the community networks); the same for alpha2 from
psi; the EPM's shape a1 the same way (Gamma(a1, a1) has E[(I phi)^2] = 1 + 1/a1, so
a1 = 1/(I s - 1): the same estimate to a factor 1 - s), b1 = a1 (CEPM: b1 = I a1). gamma0 solves gamma0 ln(1 + M/gamma0) = K
(the number of atoms a gamma process of mass gamma0 seats M customers at, with
c0 = gamma0 / M the prior mean of the total mass gamma0/c0 = M customers); c0 = gamma0/M
for the DEPM/IDEPM and gamma0 / sum_k lambda_k for the EPM/CEPM (clipped to [1e-8, 1e8]; the
others to [1e-3, 1e3]).

How many atoms (K)
------------------
Singular value thresholding (Chatterjee 2015): a noise matrix of independent entries has its
singular values below an edge, and a signal component shows as a singular value above it only
if it is strong enough (Baik-Ben Arous-Peche). K is the number of singular values of X above
the edge (times 1 + ``MARGIN``), at least 1, at most ``K_MAX`` (and T for truncated models).
For one variance sigma^2 in every entry the edge is sigma (sqrt(I) + sqrt(J)); relational
data are far from that. On toy90 (Fig. 1's five overlapping blocks, zeros outside them) the
variance 0.09 lives inside the blocks and none outside: the pooled variance puts the edge
under the noise of the blocks themselves and counts 19 atoms for five blocks, and a start
with 19 atoms holds the DEPM-30 and EPM-30 at K 18 with a held-out TDLL of -0.38, against
-0.23 from the paper's start. So the edge is that of a *variance profile* v_ij = p_ij (1 - p_ij):
the spectral norm of a noise matrix with such a profile is set by its row and column sums
r_i = sum_j v_ij, c_j = sum_i v_ij (Bandeira & van Handel 2016, Ann. Probab. 44: about
max_i sqrt(r_i) + max_j sqrt(c_j) at most), and the edge used here, sqrt(r) + sqrt(c)
(symmetric: 2 sqrt(r)), takes the typical sums where the variance lives, the variance-weighted
means r = sum_i r_i^2 / sum_i r_i and c likewise (for one variance everywhere, exactly the edge
above; for blocks, the edge of the blocks rather than of their average over the matrix).
The sums need no I x J matrix: r_i = sum_j p_ij - sum_j p_ij^2, the first estimated by the ones
of row i, the second by the squared norm of row i of the rank-K reconstruction U_K diag(s_K)
(``_profile_sums``, O((I + J) K)). K and the profile are iterated from K = 1 (all signal counted
as noise, the highest edge) until K repeats, the smallest K that explains itself. Measured: toy90
7, the 12-group planted partition 12, 8 groups of 25 at p_in 0.3, p_out 0.02: 8, karate 2, Les
Miserables 5, Enron09 12, MovieLens100K and MovieLens1M 40 (the cap).
Too few atoms: a floor. On a small matrix the noise edge sits above all but the first one or two
singular values, since a component must be strong against the noise of few entries to be seen
(Baik-Ben Arous-Peche), while the models keep atoms that the spectrum cannot resolve: chapter 30's karate
club less a tenth of its pairs has an edge count of 1 or 2 (Davis's 18 x 14 matrix 2), and the
samplers end at 6-8 atoms from every start. Growing atoms is what the samplers do slowly -- the EPM
from the karate club's one atom is still at K 2.2 (mean of the last 250 of 500 sweeps; from the paper's
32 atoms 8.2) -- while shrinking spare atoms is quick, and spare *NMF* atoms are not the flat atoms of
the paper's start: each is a component fitted to the data. So the data's start gives the sampler at least
``K_FLOOR`` = 4 atoms (capped by T, the ones and min(I, J)): nothing changes where the edge counts four
or more (toy90 7, the planted partitions 8-12, Les Miserables 4-5, Enron09 12, MovieLens 40). On
chapter 30's karate club (``benchmarks/bench_starts.py --part chapter30``: 5 folds, held-out pairs
missing, 500 sweeps) the mean held-out AUC-PR of the IDEPM, DEPM-32 and EPM-32 goes from 0.465, 0.493,
0.471 (the edge's 1-2 atoms) to 0.472, 0.518, 0.503 (the paper's start: 0.472, 0.458, 0.456), the
EPM's atoms (mean of the averaged sweeps) on folds 0-2 from 2.2, 4.3, 3.1 to 8.0, 5.2, 5.2.
``choose_rank`` reports the edge's own count.

Undirected networks (``symmetric=True``): the model's rate matrix sum_k lambda_k phi_ik phi_jk
is positive semidefinite, so K counts the *positive eigenvalues* above the noise radius
2 sqrt(r) (the negative ones are noise), not the singular values.

Missing entries (``mask``): the rank choice sees them as zeros (their share of the entries,
usually a few per cent, only lowers the density). The factorisation leaves them out exactly,
by EM: at every update a missing entry is set to its expectation (W H)_ij, i.e. its ratio
x_ij / (W H)_ij in the multiplicative update is 1, while an observed zero contributes only to
the denominators; the fixed point is the maximum-likelihood factorisation of the observed
entries alone, at a cost O((ones + missing) K) per update.

Local optima: the multiplicative updates from NNDSVDa can stop in a poor local optimum (on the
12-group planted partition, two groups merged); when cheap (``RESTART_WORK``) ``N_RANDOM``
random starts run beside it and the most likely factorisation (observed-data Poisson
likelihood) is kept. Random starts often reach the same optimum, their log-likelihoods then equal to
1e-13 (relative) and the first strictly largest wins; they are drawn from the seed and fitted without
BLAS, so that choice is the same on every machine. The NNDSVDa start alone comes from LAPACK (its last
bits can differ between CPUs and BLAS builds): on chapter 30's three networks and the planted partition
(5 folds, K = 2-12, 135 fits) its log-likelihood was never within 4.8e-13 (relative) of the best
random start's, far above the last-bit differences a BLAS leaves (about 1e-16 relative per number).

Undirected networks: X is symmetric and the model is the bipartite one fitted to both
directions; the start uses one factor for rows and columns, phi = psi = the average of
W's and H^T's normalised columns (its atoms' masses unchanged), so (i, j) and (j, i) sit at
the same atom.

Everything is deterministic given the ``numpy.random.Generator`` passed in (the seed of
``fit``): it draws the starting vectors of the SVD and the random NMF starts. Cost: a
truncated SVD of ``K_MAX`` components and at most ``MAX_ITER`` multiplicative updates,
O(nnz K) each (on a random 6040 x 3706 matrix with 1,000,209 ones, MovieLens1M's size: about
3 s for the SVD and under a second for K = 1, 14 s for a forced K = 20).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from .fit_data import _check_symmetric, prepare_matrix

__all__ = ["choose_rank", "kl_nmf", "data_start", "factors_state", "labels_start", "Labels", "check_labels", "enough", "check_enough", "INITS", "K_MAX", "MARGIN", "K_FLOOR", "MIN_ONES"]

#: the start options of ``fit(init=...)`` per model, the paper's first (``init=None``, the default,
#: is "data" where X allows it, else the paper's)
INITS = {"EPM": ("paper", "data", "scaled"), "CEPM": ("paper", "data", "scaled"), "DEPM": ("paper", "data", "scaled"),
         "IDEPM": ("random", "data")}
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
_CLIP = (1e-3, 1e3)
_C0_CLIP = (1e-8, 1e8)


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
    from .fit_options import check_bool
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
            den = np.zeros(K)
            for x in range(B.shape[0]):
                for k in range(K):
                    den[k] += B[x, k]
            for x in range(A.shape[0]):
                for k in range(K):
                    A[x, k] = A[x, k] * num[x, k] / den[k] if den[k] > 0 else 0.0
    _rates(rows, cols, W, Ht, wh)
    total = 0.0
    sw = np.zeros(K)
    sh = np.zeros(K)
    for x in range(W.shape[0]):
        for k in range(K):
            sw[k] += W[x, k]
    for x in range(Ht.shape[0]):
        for k in range(K):
            sh[k] += Ht[x, k]
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


def _moment_alpha(cols, n):
    """Dirichlet concentration by E[sum_i phi_i^2] = (alpha + 1)/(n alpha + 1), pooled over columns."""
    s = float(np.mean(np.sum(cols ** 2, axis=0)))
    if n * s <= 1.0 + 1e-12:
        return _CLIP[1]
    return float(np.clip((1.0 - s) / (n * s - 1.0), *_CLIP))


def _gamma0(K, M):
    """gamma0 with gamma0 ln(1 + M/gamma0) = K (bisection on a monotone function)."""
    lo, hi = 1e-6, max(float(K), 1.0) * 10 + 10
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid * math.log1p(M / mid) < K:
            lo = mid
        else:
            hi = mid
    return float(np.clip(0.5 * (lo + hi), *_CLIP))


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


def data_start(model, rng, I, J, rows, cols, T=None, missing=None, symmetric=False, K=None, rank="spectral"):
    """The initial state of ``model`` from the data (module docstring): a dict like
    ``fit.init_state``'s. ``rows``, ``cols``: the ones of X; ``missing``: (rows, cols) of the
    masked entries or None; ``K``: the number of atoms (default: ``choose_rank``'s, at least
    ``K_FLOOR``; a given K is used as it is), capped at T, the ones and min(I, J).
    ``rank`` (``fit(rank=...)``; when ``K`` is None): "spectral" (the default, as above), "heldout"
    (``epm_lib.heldout_rank``: the KL NMF's held-out likelihood at the spectral count and its
    doublings, for networks of many small groups below the noise edge) or an integer (that K).
    Both rules draw the same two seeds from ``rng``, so the chain's random stream is the same."""
    from .heldout_rank import check_rank, heldout_rank
    rank = check_rank(rank)
    if K is not None and rank != "spectral":
        raise ValueError(f"give K or rank, not both (got K={K!r}, rank={rank!r})")
    nnz = int(rows.shape[0])
    check_enough(I, J, nnz)
    seed_svd, seed_nmf = (int(v) for v in rng.integers(0, 2 ** 31 - 1, size=2))
    X = sp.csr_matrix((np.ones(nnz), (rows, cols)), shape=(I, J))
    if K is None and not isinstance(rank, str):
        K = rank
    if K is None:
        K, _ = choose_rank(X, symmetric=symmetric, seed=seed_svd)
        K = max(K, K_FLOOR)                 # spare atoms where the edge sees one or two (docstring)
        if rank == "heldout":
            K, _ = heldout_rank(X, missing=missing, symmetric=symmetric, seed=seed_nmf, T=T, k_start=K)
    K = max(1, min(int(K), nnz, min(I, J), T if T is not None else nnz))
    W, H, _ = kl_nmf(X, K, seed_nmf, missing=missing, symmetric=symmetric)
    return factors_state(model, W, H, I, J, rows, cols, T=T, symmetric=symmetric)


class Labels:
    """``fit(init=labels)``: a start seated at known groups of the rows (``labels_start``); holds
    the labels as a 1-D int64 array (``check_labels``)."""

    def __init__(self, labels):
        self.labels = labels

    def __repr__(self):
        return f"Labels({self.labels.size} rows, {np.unique(self.labels).size} groups)"


def check_labels(labels) -> Labels:
    """``fit(init=...)`` given as an array: a group label (an integer >= 0) for every row of X;
    ``ValueError`` otherwise (the number of rows is checked against X by ``labels_start``)."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"init as an array must be one group label per row of X (1-D, integers >= 0), "
                         f"got an array of shape {arr.shape}")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValueError(f"init as an array must hold integer group labels >= 0, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError(f"init's group labels must be integers >= 0, got {int(arr.min())}")
    return Labels(arr.astype(np.int64))


def labels_start(model, labels, I, J, rows, cols, T=None, missing=None, symmetric=False):
    """The state of ``model`` seated at known groups of the rows (``fit(init=labels)``): W the
    one-hot memberships of the rows (``labels``: one group per row, any integers, relabelled
    0..G-1 in increasing order), H its maximum-likelihood partner given W (for one-hot W the KL
    NMF splits into one Poisson mean per group and column: H_gj = the ones of group g's rows in
    column j over its observed entries, ``missing`` left out), mapped by ``factors_state`` as the
    data's start is. No random draw. Undirected networks (``symmetric``): the rows are the nodes."""
    lab = labels.labels if isinstance(labels, Labels) else check_labels(labels).labels
    if lab.size != I:
        raise ValueError(f"init has {lab.size} group labels; X has {I} rows (one label per row)")
    _, g = np.unique(lab, return_inverse=True)
    G = int(g.max()) + 1
    if T is not None and G > T:
        raise ValueError(f"init has {G} groups, more than the truncation level T = {T}")
    W = np.zeros((I, G))
    W[np.arange(I), g] = 1.0
    ones = np.zeros((G, J))
    np.add.at(ones, (g[rows], cols), 1.0)
    observed = np.repeat(np.bincount(g, minlength=G).astype(np.float64)[:, None], J, axis=1)
    if missing is not None and len(missing[0]):
        np.add.at(observed, (g[np.asarray(missing[0])], np.asarray(missing[1])), -1.0)
    H = ones / np.maximum(observed, 1.0)
    return factors_state(model, W, H, I, J, rows, cols, T=T, symmetric=symmetric)


def factors_state(model, W, H, I, J, rows, cols, T=None, symmetric=False):
    """The state of ``model`` (a dict like ``fit.init_state``'s) from non-negative factors
    X ~ W H, ``W`` (I, K), ``H`` (K, J): the mapping of the module docstring (phi, psi, lambda;
    U, V; the IDEPM's argmax seating; hyperparameters by moments), shared by the data's start
    (``data_start``, W H a KL NMF of X) and the labels' start (``labels_start``, W one-hot
    memberships). No random draw. ``rows``, ``cols``: the ones of X; ``T``: the truncation level
    (K <= T), None for the IDEPM; ``symmetric``: one factor for rows and columns."""
    K = W.shape[1]
    nnz = int(rows.shape[0])
    tiny = 1e-300
    wsum, hsum = W.sum(axis=0), H.sum(axis=1)
    phi = W / np.maximum(wsum, tiny)
    psi = (H / np.maximum(hsum, tiny)[:, None]).T
    mass = wsum * hsum
    dead = (wsum <= 0) | (hsum <= 0)       # a component the NMF switched off: uniform, no mass
    phi[:, dead], psi[:, dead], mass[dead] = 1.0 / I, 1.0 / J, 0.0
    if symmetric:                           # one factor for rows and columns
        phi = psi = 0.5 * (phi + psi)
    M = float(nnz)
    gamma0 = _gamma0(int((mass > 0).sum()) or 1, M)
    if model == "IDEPM":
        score = (phi[rows] * mass) * psi[cols]                      # W_ik H_kj of each one
        z = np.argmax(score, axis=1)
        _, z = np.unique(z, return_inverse=True)                    # atoms in use: 0..K'-1
        K_used = int(z.max()) + 1
        h = np.array([_moment_alpha(phi, I), _moment_alpha(psi, J), _gamma0(K_used, M), 0.0])
        h[3] = float(np.clip(h[2] / M, *_C0_CLIP))
        return dict(offsets=np.arange(nnz + 1, dtype=np.int64), z=z.astype(np.int64), h=h)
    full_phi = np.full((I, T), 1.0 / I)
    full_psi = np.full((J, T), 1.0 / J)
    full_phi[:, :K], full_psi[:, :K] = phi, psi
    lam = np.zeros(T)
    if model == "DEPM":
        lam[:K] = mass
        h = np.array([_moment_alpha(phi, I), _moment_alpha(psi, J), gamma0,
                      float(np.clip(gamma0 / M, *_C0_CLIP))])
        return dict(phi=np.ascontiguousarray(full_phi), psi=np.ascontiguousarray(full_psi), lam=lam, h=h)
    a1, a2 = _moment_alpha(phi, I), _moment_alpha(psi, J)
    b1, b2 = (I * a1, J * a2) if model == "CEPM" else (a1, a2)
    cu, cv = I * a1 / b1, J * a2 / b2       # sum_i U_ik, sum_j V_jk of a used atom
    U = np.full((I, T), a1 / b1)
    V = np.full((J, T), a2 / b2)
    U[:, :K], V[:, :K] = cu * phi, cv * psi
    lam[:K] = mass / (cu * cv)
    c0 = float(np.clip(gamma0 / max(lam.sum(), tiny), *_C0_CLIP))
    return dict(U=np.ascontiguousarray(U), V=np.ascontiguousarray(V), lam=lam,
                h=np.array([a1, b1, a2, b2, gamma0, c0]))
