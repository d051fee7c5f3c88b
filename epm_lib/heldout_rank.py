r"""``epm_lib.heldout_rank``: the data's start's number of atoms chosen by held-out likelihood.

Why (issue 30, item 1)
----------------------
``nmf.choose_rank`` counts the singular values (undirected: positive eigenvalues) of X above a
spectral noise edge, floored at ``nmf.K_FLOOR`` = 4 atoms. A group is seen only if it is strong
against the noise of the whole matrix (Baik-Ben Arous-Peche): on a sparse network of many small
groups -- a few hundred nodes, about three edges per node -- *every* group is below the edge, so
the count is the floor, 4, whatever the number of groups. The samplers then start far from the
mode and grow atoms slowly: on such a network (20% of the pairs held out and masked, 1500 sweeps)
the IDEPM's held-out AUC-PR was 0.30 from the data's start's 4 atoms against 0.47 forced to 10 atoms
and 0.44 at 40, the DEPM-100's 0.49 against 0.54 / 0.55. The spectrum cannot resolve the groups,
but a factorisation *with* enough components can still predict the held-out entries better; that is
something the data can be asked directly.

The rule
--------
Hold out a tenth of the observed entries (``HELDOUT_FRACTION``), ones and zeros stratified (the same
fraction of each; undirected networks: pairs, both directions left out together; ``missing`` entries
are never held out and stay missing), fit ``nmf.kl_nmf`` on the rest at a grid of K, score the
held-out entries by the model's own Bernoulli-Poisson likelihood, p_ij = 1 - exp(-r_ij), and keep the
best K. The grid starts at the spectral count (at least ``K_FLOOR``; what ``init="data"`` uses today)
and doubles up to the cap min(``K_CAP``, min(I, J) // 2, T, the ones), the cap itself its last point.
So the rule never picks fewer atoms than the spectral rule, and where the spectral count already
reaches the cap (MovieLens100K and MovieLens1M: 40) it costs nothing (no factorisation is fitted).

The rate scored is not W H itself but W H shrunk toward the training density d:
r_ij = (1 - eps) (W H)_ij + eps d (pair: the mean of the two directions' W H), eps in [0, 1] the one
number per K that maximises the held-out likelihood (``heldout_loglik``). The KL NMF is a maximum-
likelihood fit without a prior: its multiplicative updates set many W_ik, H_kj to zero, so a held-out one
whose row and column share no training atom gets r = 0 and ln p = ln 1e-300 = -690 nats; a few such
ones outweigh everything else, and the raw score jumped up and down along K (on 40 groups of six nodes:
-0.90, -0.66, -1.02, -1.33 nats per entry at K = 4, 8, 12, 16, then -0.54 at 80). The samplers'
priors smooth exactly there (the Dirichlet's alpha1, alpha2 keep every phi_ik, psi_jk positive), and the
shrinkage is the cheapest stand-in for them: with it the curve is smooth and peaks near the number of
groups (12 groups of 10: at 12; 8 groups of 20: 6-8; 40 groups of 6: 24-40; MovieLens1M rises to 40).

Which K: the largest K of the grid whose score is within one standard error of the best one (the
standard error of the paired per-entry differences to the best K, over all held-out entries), at most
``STEPS_ABOVE`` = 1 grid point (one doubling) above the best. The samplers shed spare atoms quickly but
grow missing ones slowly (``starts``' module docstring, "Too few atoms"), so between Ks the held-out
entries cannot tell apart the larger is the safer start. Measured (``benchmarks/bench_small_groups.py``):
on 40 groups of 6 nodes the scores of K = 8, 16, 32 are often within a standard error of one another, and
the plain best (fold 2: K = 8) left the IDEPM and DEPM-100 at chance (AUC-PR 0.014), where from the 32
atoms within a standard error they reach 0.077 and 0.084. The one-doubling limit: on a tiny network the
standard error is wide and the whole grid can be within it; without the limit the karate club (chapter
30's zeros protocol, fold 1) started at 17 atoms for 34 nodes and lost 0.10-0.20 AUC-PR in all three
models.

Several splits: on a small network a few per cent of the pairs hold a few dozen ones, so the score
of one split is noisy; up to ``MAX_SPLITS`` disjoint splits are scored and their scores averaged,
as many as the work budget ``SPLIT_WORK`` allows (one on MovieLens-sized data).

Large matrices: per split at most ``MAX_HELD_ONES`` ones are held out, and the zeros at the same
fraction but at most ``ZEROS_PER_ONE`` per held-out one (at least ``MIN_HELD_ZEROS``); the zeros'
term is reweighted by the ratio of the two fractions, so that the score estimates the same mean
log-likelihood per observed entry as a stratified hold-out would.

Determinism: the splits and every factorisation are drawn from ``seed`` (``kl_nmf``'s random starts
without BLAS); scores within ``REL_TOL`` (relative) of the best count as ties and the smaller K wins,
so a last-bit difference of a LAPACK-made NNDSVDa start cannot change the choice.

``fit(X, model, init="data", rank="heldout")`` uses it (``starts.data_start(..., rank="heldout")``);
after the choice the factorisation is refitted on all observed entries, as for the spectral count.

Measured (``benchmarks/bench_small_groups.py``; 5 pair folds, a fifth of the pairs held out and masked,
1500 sweeps, mean held-out AUC-PR spectral / held-out rule / seated at the true groups; SVD baseline):

* 40 groups of 6 nodes (p_in 0.5, p_out 0.005; 240 nodes, 450 edges): K 4 -> 40/32/32/16/32; IDEPM
  0.015 / 0.082 / 0.084, DEPM-100 0.015 / 0.097 / 0.111, EPM-100 0.015 / 0.103 / 0.104; SVD 0.071;
* LFR, 32 communities of 5-15 nodes (250 nodes, 560 edges): K 12/5/11/9/10 -> 24/40/40/18/20; IDEPM
  0.354 / 0.379 / 0.396, DEPM-100 0.262 / 0.348 / 0.400, EPM-100 0.279 / 0.369 / 0.392; SVD 0.233 (on the
  two folds at 18-20 atoms the DEPM-100 reaches 0.25 and 0.40, from 32 atoms 0.38 and 0.43);
* elsewhere (``--part others``): ``bench_starts.py``'s five community networks within -0.002..+0.009 of
  the spectral rule (lfr: the same K, the same chains), toy90 and Enron09 the same K (6/8/5, 12);
  chapter 30's three networks (four chains per fold) Davis -0.026..+0.012, karate -0.013..+0.009, Les
  Miserables 0..+0.019. MovieLens100K and MovieLens1M: the spectral count is the cap, the rule fits nothing.

Cost: 1-4 s per start on these 250-node networks (the spectral start: 0.2-0.6 s); on MovieLens1M
(575,281 ones) the whole grid K = 4..40 in one split would take 35-48 s (it is not run there).
"""
from __future__ import annotations

import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from . import nmf

__all__ = ["heldout_rank", "heldout_split", "heldout_loglik", "RANK_RULES", "check_rank",
           "HELDOUT_FRACTION", "K_CAP", "MAX_SPLITS", "SPLIT_WORK", "MAX_HELD_ONES", "ZEROS_PER_ONE",
           "MIN_HELD_ZEROS", "REL_TOL", "EPS_TOL", "STEPS_ABOVE", "GRID_RANDOM"]

#: the rules of ``data_start(rank=...)`` / ``fit(rank=...)``: "spectral" (the default) or "heldout";
#: an integer forces that many atoms
RANK_RULES = ("spectral", "heldout")
#: fraction of the observed entries (ones and zeros alike) held out by one split
HELDOUT_FRACTION = 0.1
#: the grid's largest K (further capped by min(I, J) // 2, T and the ones); = ``nmf.K_MAX``
K_CAP = nmf.K_MAX
#: most splits scored (disjoint; their scores averaged)
MAX_SPLITS = 3
#: splits are added while (entries fitted) x (sum of the grid's K) x MAX_ITER x splits stays below this
SPLIT_WORK = 2e9
#: most ones held out by one split, and the zeros held out at most this many per held-out one
#: (at least MIN_HELD_ZEROS): large matrices need not leave out 10% of their zeros
MAX_HELD_ONES = 20_000
ZEROS_PER_ONE = 4
MIN_HELD_ZEROS = 20_000
#: held-out scores within this (relative) of the best are ties: the smaller K wins
REL_TOL = 1e-9
#: random starts of each grid factorisation beside NNDSVDa (``kl_nmf``'s n_random; the refit at the
#: chosen K keeps its own five). None: on seven community networks x 2 folds (``bench_small_groups.py``'s
#: two and ``bench_starts.py``'s five, 20% of the pairs masked) the same K as with five, in a third of the time
GRID_RANDOM = 0
#: the K chosen is at most this many grid points (doublings) above the best-scoring one
STEPS_ABOVE = 1
#: precision of the shrinkage eps of ``heldout_loglik``
EPS_TOL = 1e-4


def check_rank(rank):
    """``rank`` of ``data_start`` / ``fit``: None (the default, "spectral"), "spectral", "heldout" or
    an integer >= 1 (that many atoms, capped as ``data_start`` caps K); returns it normalised
    ("spectral" for None). ``ValueError`` otherwise."""
    if rank is None:
        return "spectral"
    if isinstance(rank, str):
        if rank not in RANK_RULES:
            raise ValueError(f"rank must be one of {', '.join(map(repr, RANK_RULES))} or an integer >= 1 "
                             f"(the number of atoms), got {rank!r}")
        return rank
    if isinstance(rank, Integral) and not isinstance(rank, bool) and rank >= 1:
        return int(rank)
    raise ValueError(f"rank must be one of {', '.join(map(repr, RANK_RULES))} or an integer >= 1 "
                     f"(the number of atoms), got {rank!r}")


def _keys(rows, cols, J, symmetric):
    """Entry keys i * J + j (symmetric: of the pair, min * J + max)."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if symmetric:
        rows, cols = np.minimum(rows, cols), np.maximum(rows, cols)
    return rows * J + cols


def heldout_split(X, n_splits, seed, missing=None, symmetric=False, fraction=HELDOUT_FRACTION):
    """``n_splits`` disjoint held-out sets of the observed entries of the binary matrix ``X``:
    a list of ``(ones, zeros, w_zero)``, ``ones`` and ``zeros`` int64 keys i * J + j of the held-out
    ones and zeros (symmetric: pairs, key min * J + max, the diagonal a pair of its own), ``w_zero`` the
    weight of the zeros' term (the held-out fraction of the ones over that of the zeros, 1 when both
    are ``fraction``). ``missing`` entries are never held out. Deterministic given ``seed``."""
    Xc = sp.csr_matrix(X)
    I, J = Xc.shape
    rng = np.random.default_rng(seed)
    r1 = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
    c1 = Xc.indices.astype(np.int64)
    if symmetric:
        keep = r1 <= c1
        r1, c1 = r1[keep], c1[keep]
    one_keys = np.unique(r1 * J + c1)
    if missing is not None and len(missing[0]):
        mr, mc = nmf._check_missing(missing, I, J)
        miss_keys = np.unique(_keys(mr, mc, J, symmetric))
    else:
        miss_keys = np.zeros(0, dtype=np.int64)
    n_entries = I * (I + 1) // 2 if symmetric else I * J
    n_zeros = n_entries - one_keys.size - miss_keys.size
    n1 = min(int(round(fraction * one_keys.size)), MAX_HELD_ONES)
    f1 = n1 / max(one_keys.size, 1)
    n0 = min(int(round(f1 * n_zeros)), max(ZEROS_PER_ONE * n1, MIN_HELD_ZEROS), int(round(fraction * n_zeros)))
    n_splits = max(1, min(int(n_splits), one_keys.size // max(n1, 1), n_zeros // max(n0, 1)))
    ones = rng.permutation(one_keys)[:n_splits * n1]
    zeros = _sample_zeros(rng, n_splits * n0, I, J, symmetric, np.union1d(one_keys, miss_keys), n_entries,
                          n_zeros)
    w_zero = (n1 / max(one_keys.size, 1)) / (n0 / n_zeros) if n0 and n_zeros else 1.0
    return [(np.sort(ones[s * n1:(s + 1) * n1]), np.sort(zeros[s * n0:(s + 1) * n0]), float(w_zero))
            for s in range(n_splits)], dict(n_ones=int(one_keys.size), n_zeros=int(n_zeros), held_ones=n1,
                                            held_zeros=n0)


def _sample_zeros(rng, n, I, J, symmetric, taken, n_entries, n_zeros):
    """``n`` distinct keys of observed zeros (not in the sorted ``taken``) drawn uniformly, in draw
    order: all of them enumerated when the matrix is small, else by rejection."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    if n_entries <= 4_000_000 or n > n_zeros // 4:
        if symmetric:
            r, c = np.triu_indices(I)
            allk = r.astype(np.int64) * J + c
        else:
            allk = np.arange(I * J, dtype=np.int64)
        free = allk[~_isin_sorted(allk, taken)]
        return free[rng.permutation(free.size)[:n]]
    out = np.zeros(0, dtype=np.int64)
    while out.size < n:
        m = int(1.2 * (n - out.size)) + 64
        i = rng.integers(0, I, size=m)
        j = rng.integers(0, J, size=m)
        k = _keys(i, j, J, symmetric)
        k = k[~_isin_sorted(k, taken)]
        cand = np.concatenate([out, k])
        _, first = np.unique(cand, return_index=True)
        out = cand[np.sort(first)]
    return out[:n]


def _isin_sorted(a, sorted_b):
    if sorted_b.size == 0:
        return np.zeros(a.shape, dtype=bool)
    pos = np.searchsorted(sorted_b, a)
    pos[pos == sorted_b.size] = 0
    return sorted_b[pos] == a


def _directions(keys, J, symmetric):
    """(rows, cols) of the entries of ``keys`` (symmetric: both directions of each pair, the diagonal once)."""
    r, c = keys // J, keys % J
    if not symmetric:
        return r, c
    off = r != c
    return np.concatenate([r, c[off]]), np.concatenate([c, r[off]])


def _rates(W, H, keys, J, symmetric):
    """(W H) at the entries of ``keys`` (symmetric: the mean of the two directions), without BLAS."""
    r, c = keys // J, keys % J
    rate = np.sum(W[r] * H[:, c].T, axis=1)
    if symmetric:
        rate = 0.5 * (rate + np.sum(W[c] * H[:, r].T, axis=1))
    return rate


def heldout_loglik(W, H, ones, zeros, J, symmetric=False, w_zero=1.0, background=None, pointwise=False):
    """Bernoulli-Poisson log-likelihood per held-out entry (keys i * J + j; symmetric: pairs) of the
    factorisation W H shrunk toward a flat ``background`` rate: r = (1 - eps) (W H)_ij + eps background
    (pair: the mean of both directions' (W H)), p = 1 - exp(-r); the ones' sum of ln p plus ``w_zero``
    times the zeros' sum of -r, over (ones + w_zero zeros), at the eps in [0, 1] that maximises it
    (bounded Brent search, ``EPS_TOL``). Returns ``(loglik, eps)``, and with ``pointwise`` the entries'
    own terms too (the ones' ln p, then the zeros' -r, unweighted). ``background`` None: no shrinkage
    (eps = 0; a held-out one at a rate of 0 then scores ln 1e-300)."""
    r1 = _rates(W, H, ones, J, symmetric)
    r0 = _rates(W, H, zeros, J, symmetric)
    n = max(ones.size + w_zero * zeros.size, 1e-300)

    def terms(eps):
        a = (1.0 - eps) * r1 + eps * background if background is not None else r1
        b = (1.0 - eps) * r0 + eps * background if background is not None else r0
        return np.log(-np.expm1(-np.maximum(a, 1e-300))), -b

    def ll(eps):
        t1, t0 = terms(eps)
        return (float(np.sum(t1)) + w_zero * float(np.sum(t0))) / n

    eps = 0.0
    if background is not None:
        from scipy.optimize import minimize_scalar
        res = minimize_scalar(lambda e: -ll(e), bounds=(0.0, 1.0), method="bounded", options=dict(xatol=EPS_TOL))
        eps = float(res.x)
    if pointwise:
        return ll(eps), eps, np.concatenate(terms(eps))
    return ll(eps), eps


def _grid(k_start, cap):
    g = [min(k_start, cap)]
    while g[-1] < cap:
        g.append(min(2 * g[-1], cap))
    return g


def heldout_rank(X, missing=None, symmetric=False, seed=0, T=None, k_start=None, k_cap=K_CAP,
                 fraction=HELDOUT_FRACTION, n_splits=None, grid=None, patience=None, n_random=GRID_RANDOM,
                 select="within-se"):
    """The number of atoms of the data's start by held-out likelihood (module docstring).

    ``X``: the binary matrix (scipy.sparse or dense; undirected networks ``symmetric=True``, X square and
    symmetric); ``missing``: (rows, cols) of its missing entries (never held out, left out of every fit);
    ``seed``: an integer seed of the splits and factorisations; ``T``: the truncation level (caps K);
    ``k_start``: the grid's first K (default: ``nmf.choose_rank``'s count, at least ``nmf.K_FLOOR``);
    ``k_cap``: the grid's largest K before the caps min(I, J) // 2, T and the ones; ``fraction``: held out
    per split, in (0, 0.5]; ``n_splits``: disjoint splits (default: up to ``MAX_SPLITS`` within
    ``SPLIT_WORK``); ``grid``: the Ks to score, increasing (default: ``k_start`` doubling up to the cap);
    ``patience``: stop after this many grid points in a row score below the best (None, the default:
    score them all); ``n_random``: random starts of each grid factorisation (``GRID_RANDOM``);
    ``select``: "within-se" (the default: the largest K within one standard error of the best, at most
    ``STEPS_ABOVE`` grid points above it) or
    "best" (the best score; ties within ``REL_TOL``: the smaller K).

    Returns ``(K, info)``: ``info`` holds the grid scored, each K's mean held-out log-likelihood per
    entry (``scores``), its shrinkage (``eps``) and the standard error of its difference to the best
    (``se``), the best K (``best``), the spectral count, the splits' sizes and the seconds taken.
    """
    t0 = time.perf_counter()
    Xc = sp.csr_matrix(X)
    if Xc.ndim != 2:
        raise ValueError(f"X must be a matrix, got shape {Xc.shape}")
    I, J = Xc.shape
    if Xc.nnz and not np.all((Xc.data == 0) | (Xc.data == 1)):
        raise ValueError("X must be binary (0/1)")
    Xc.eliminate_zeros()
    if not isinstance(symmetric, (bool, np.bool_)):
        raise ValueError(f"symmetric must be True or False, got {symmetric!r}")
    symmetric = bool(symmetric)
    if symmetric and (I != J or (Xc != Xc.T).nnz):
        raise ValueError("symmetric=True needs a square, symmetric X")
    nmf.check_enough(I, J, Xc.nnz)
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not (isinstance(fraction, (float, int)) and not isinstance(fraction, bool) and 0 < fraction <= 0.5):
        raise ValueError(f"fraction must be a number in (0, 0.5], got {fraction!r}")
    for name, v in (("T", T), ("k_start", k_start), ("k_cap", k_cap), ("n_splits", n_splits)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, Integral) or v < 1):
            raise ValueError(f"{name} must be None or an integer >= 1, got {v!r}")
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, Integral) or patience < 1):
        raise ValueError(f"patience must be None or an integer >= 1, got {patience!r}")
    if select not in ("within-se", "best"):
        raise ValueError(f"select must be 'within-se' or 'best', got {select!r}")
    if missing is not None and len(missing[0]):
        mr, mc = nmf._check_missing(missing, I, J)
        if symmetric:                       # a missing pair is missing in both directions
            key = np.unique(np.concatenate([mr * J + mc, mc * J + mr]))
            mr, mc = key // J, key % J
        missing = (mr, mc)
        on_one = np.flatnonzero(np.asarray(Xc[mr, mc]).ravel())
        if on_one.size:
            raise ValueError(f"({mr[on_one[0]]}, {mc[on_one[0]]}) is a missing entry and a one of X: a missing "
                             f"entry must be a zero of X (its value unknown)")
    else:
        missing = None
    ss = np.random.SeedSequence(int(seed))
    seed_svd, seed_split, seed_fit = (int(s.generate_state(1)[0]) for s in ss.spawn(3))
    k_spectral = None
    if k_start is None:
        k_spectral, _ = nmf.choose_rank(Xc, symmetric=symmetric, seed=seed_svd)
        k_start = max(k_spectral, nmf.K_FLOOR)
    cap = max(1, min(int(k_cap), min(I, J) // 2 if min(I, J) >= 2 else 1, Xc.nnz, T if T is not None else Xc.nnz))
    k_start = max(1, min(int(k_start), cap))
    if grid is None:
        grid = _grid(k_start, cap)
    else:
        grid = [int(k) for k in grid]
        if not grid or any(b <= a for a, b in zip(grid, grid[1:])) or grid[0] < 1 or grid[-1] > min(I, J):
            raise ValueError(f"grid must be increasing integers in 1..min(I, J) = {min(I, J)}, got {grid!r}")
    info = dict(grid=grid, scores={}, eps={}, se={}, k_spectral=k_spectral, k_start=k_start, cap=cap, splits=0, seconds=0.0)
    if len(grid) == 1:                      # nothing to choose (the spectral count is at the cap)
        info.update(K=grid[0], seconds=time.perf_counter() - t0)
        return grid[0], info
    entries = Xc.nnz + (missing[0].size if missing is not None else 0)
    if n_splits is None:
        per_split = max(entries, 1) * (1 + 2 * fraction) * sum(grid) * nmf.MAX_ITER
        n_splits = int(max(1, min(MAX_SPLITS, SPLIT_WORK // per_split)))
    splits, sizes = heldout_split(Xc, n_splits, seed_split, missing=missing, symmetric=symmetric, fraction=fraction)
    info.update(splits=len(splits), **sizes)
    fit_seeds = np.random.SeedSequence(seed_fit).generate_state(len(grid) * len(splits))
    xr = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
    xc = Xc.indices.astype(np.int64)
    xkeys = _keys(xr, xc, J, symmetric)
    train = []
    for ones, zeros, w0 in splits:           # the split's entries left out: missing in its fits
        hr, hc = _directions(np.concatenate([ones, zeros]), J, symmetric)
        if missing is not None:
            hr, hc = np.concatenate([missing[0], hr]), np.concatenate([missing[1], hc])
        keep = ~_isin_sorted(xkeys, ones)
        Xt = sp.csr_matrix((np.ones(int(keep.sum())), (xr[keep], xc[keep])), shape=(I, J))
        train.append((Xt, (hr, hc), ones, zeros, w0))
    # the entries' weights: 1 for a held-out one, w0 for a held-out zero (the splits in turn)
    w = np.concatenate([np.concatenate([np.ones(ones.size), np.full(zeros.size, w0)])
                        for _, _, ones, zeros, w0 in train])
    terms = {}
    best_k, best, worse = None, -np.inf, 0
    for g, K in enumerate(grid):
        vals = []
        for s, (Xt, miss, ones, zeros, w0) in enumerate(train):
            W, H, _ = nmf.kl_nmf(Xt, int(min(K, Xt.nnz, min(I, J))), int(fit_seeds[g * len(train) + s]),
                                    missing=miss, symmetric=symmetric, n_random=n_random)
            vals.append(heldout_loglik(W, H, ones, zeros, J, symmetric, w0, background=Xt.nnz / max(
                I * J - miss[0].size, 1), pointwise=True))
        terms[K] = np.concatenate([v[2] for v in vals])
        score = float(np.sum(w * terms[K]) / np.sum(w))
        info["scores"][K] = score
        info["eps"][K] = float(np.mean([v[1] for v in vals]))
        if best_k is None or score > best + REL_TOL * abs(best):
            best_k, best, worse = K, score, 0
        else:
            worse += 1
            if patience is not None and worse >= patience:
                break
    # the largest K within one standard error of the best (paired over the held-out entries): spare
    # atoms are cheap for the samplers, missing ones dear (module docstring, "Which K")
    # and at most STEPS_ABOVE grid points above it (on a tiny network the standard error is wide)
    K_chosen = best_k
    scored = list(info["scores"])
    for K in scored:
        d = terms[K] - terms[best_k]
        mean = float(np.sum(w * d) / np.sum(w))
        se = float(np.sqrt(np.sum(w ** 2 * (d - mean) ** 2)) / np.sum(w))
        info["se"][K] = se
        if select == "within-se" and K > K_chosen and info["scores"][K] >= best - se - REL_TOL * abs(best) \
                and scored.index(K) - scored.index(best_k) <= STEPS_ABOVE:
            K_chosen = K
    info.update(K=K_chosen, best=best_k, seconds=time.perf_counter() - t0)
    return K_chosen, info
