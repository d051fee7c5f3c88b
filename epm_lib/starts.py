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
Many small groups: on a sparse network of many small groups every group is below the edge and the count
is the floor, however many groups there are (40 groups of 6 nodes, p_in 0.5, p_out 0.005, a fifth of the
pairs masked: 4 atoms; the IDEPM, DEPM-100 and EPM-100 from there stay at chance, held-out AUC-PR 0.015,
against 0.08-0.11 from the true groups). ``fit(..., rank="heldout")`` (``data_start(rank="heldout")``,
``epm_lib.heldout_rank``) chooses K by the KL NMF's held-out likelihood at the count and its doublings
instead (there 16-40 atoms, AUC-PR 0.082-0.103; ``benchmarks/bench_small_groups.py``); opt-in.

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

from .heldout_rank import check_rank, heldout_rank
# the rank and the factorisation (epm_lib.nmf), re-exported: starts.choose_rank, starts.kl_nmf, ... stand
from .nmf import (K_FLOOR, K_MAX, MARGIN, MIN_ONES, _profile_sums, check_enough, choose_rank,  # noqa: F401
                  enough, kl_nmf)

__all__ = ["choose_rank", "kl_nmf", "data_start", "factors_state", "labels_start", "Labels", "check_labels", "enough", "check_enough", "INITS", "K_MAX", "MARGIN", "K_FLOOR", "MIN_ONES"]

#: the start options of ``fit(init=...)`` per model, the paper's first (``init=None``, the default,
#: is "data" where X allows it, else the paper's)
INITS = {"EPM": ("paper", "data", "scaled"), "CEPM": ("paper", "data", "scaled"), "DEPM": ("paper", "data", "scaled"),
         "IDEPM": ("random", "data")}
_CLIP = (1e-3, 1e3)
_C0_CLIP = (1e-8, 1e8)


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


def data_start(model, rng, I, J, rows, cols, T=None, missing=None, symmetric=False, K=None, rank="spectral"):
    """The initial state of ``model`` from the data (module docstring): a dict like
    ``fit.init_state``'s. ``rows``, ``cols``: the ones of X; ``missing``: (rows, cols) of the
    masked entries or None; ``K``: the number of atoms (default: ``choose_rank``'s, at least
    ``K_FLOOR``; a given K is used as it is), capped at T, the ones and min(I, J).
    ``rank`` (``fit(rank=...)``; when ``K`` is None): "spectral" (the default, as above), "heldout"
    (``epm_lib.heldout_rank``: the KL NMF's held-out likelihood at the spectral count and its
    doublings, for networks of many small groups below the noise edge) or an integer (that K).
    Both rules draw the same two seeds from ``rng``, so the chain's random stream is the same."""
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
