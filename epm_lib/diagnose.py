"""``epm_lib.diagnose``: is a fit degenerate? Flat atoms, dust, predictions at chance.

A chain can settle where its start left it rather than where the data are (issue 20; the
chapter "Where a chain starts"): from the paper's start on a 12-group planted-partition network
the IDEPM spreads 1,124 customers over about 450 atoms ("dust") and the truncated models keep
flat atoms (shape parameters alpha or a above 1, every atom spread over every row); their
predictions of the *training* matrix are then near chance (in-sample AUC-ROC 0.55-0.63), while a
truncated SVD of the same matrix scores 0.95 and the data's start 0.97-0.99. ``check`` measures
three things after a run and ``fit`` warns (``DegenerateFitWarning``) when one of them is off:

* **chance** (or **poor fit**, when the AUC is 0.7 or more): the in-sample AUC-ROC of the fit's
  posterior mean (kept samples) at the ones of X against as many sampled zeros (never a masked
  entry) is more than ``AUC_GAP`` below that of the rank-K truncated SVD of X (K from
  ``starts.choose_rank``) at the same entries;
* **dust**: the mean number of active atoms over the averaged iterations is at least
  ``DUST_FRACTION`` of the ones of X;
* **flat** (reported with the others, not alone): shape parameters (alpha1, alpha2; a1, a2) above
  ``FLAT_SHAPE``.

Matrices with fewer than ``MIN_ONES`` ones are not checked (too few entries for the AUC to mean
anything), nor is the AUC compared where the rank-K SVD has more than ``SVD_DOF_FRACTION`` of the
entries as free parameters (it then fits the noise too: no yardstick; ``check``). The sampled entries come from a generator of their own (``SEED``), so that the check
changes no draw of the chain, and the numbers in a warning are rounded to two decimals.
"""
from __future__ import annotations

import warnings

from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

from .metrics import auc_roc
from .models import common

__all__ = ["DegenerateFitWarning", "check", "warn_if_degenerate", "in_sample_loglik", "AUC_GAP", "DUST_FRACTION",
           "FLAT_SHAPE", "MIN_ONES", "SVD_DOF_FRACTION"]

#: in-sample AUC-ROC this far below the truncated SVD's counts as predicting at chance
AUC_GAP = 0.15
#: active atoms >= this fraction of the ones: dust
DUST_FRACTION = 0.2
#: shape parameters above this: flat atoms
FLAT_SHAPE = 1.0
#: fewest ones of X for a check
MIN_ONES = 200
#: the chance check compares with the rank-K truncated SVD only when its K (I + J - K) free
#: parameters are at most this fraction of the I J entries (``check``)
SVD_DOF_FRACTION = 0.5
#: most ones (and as many zeros) the AUC looks at
MAX_ENTRIES = 20_000
#: the check's own random stream
SEED = 20171204
#: how many of the kept samples the in-sample prediction averages (the last ones)
MAX_SAMPLES = 10


class DegenerateFitWarning(UserWarning):
    """A fit whose atoms are flat or dust, or whose in-sample predictions are near chance."""


def _entries(rows, cols, I, J, excluded, rng):
    """Up to ``MAX_ENTRIES`` of the ones (rows, cols) and as many uniformly drawn zeros of an
    I x J matrix, none of them in ``excluded`` (flat keys i J + j: the ones and masked entries)."""
    n = min(rows.shape[0], MAX_ENTRIES)
    pick = np.sort(rng.choice(rows.shape[0], n, replace=False)) if n < rows.shape[0] else np.arange(n)
    zr, zc = np.zeros(0, np.int64), np.zeros(0, np.int64)
    for _ in range(20):                     # rejection: zeros are most entries of a sparse matrix
        r = rng.integers(0, I, 4 * n)
        c = rng.integers(0, J, 4 * n)
        ok = ~np.isin(r * J + c, excluded)
        zr, zc = np.concatenate([zr, r[ok]]), np.concatenate([zc, c[ok]])
        if zr.shape[0] >= n:
            break
    return rows[pick], cols[pick], zr[:n], zc[:n]


def _svd_scores(info, K, at_rows, at_cols):
    """The rank-K truncated SVD of X (``choose_rank``'s factors in ``info``) at the given entries."""
    U, s, Vt = info["U"][:, :K], info["values"][:K], info["Vt"][:K]
    return np.einsum("ek,ek->e", U[at_rows] * s, Vt.T[at_cols])


#: The truncated SVDs of the last few matrices diagnosed (digest of the ones -> choose_rank's
#: answer): a chain run in segments (``chains.run_until_agree``), or several chains of one matrix,
#: compute the SVD once, not after every segment (deterministic, so the answer is the same).
_SVD_CACHE: "OrderedDict[str, tuple]" = OrderedDict()
SVD_CACHE_SIZE = 4


def _svd_of(rows, cols, I, J):
    """``starts.choose_rank`` of the binary matrix with ones at (rows, cols), cached by a digest
    of its ones (:data:`_SVD_CACHE`)."""
    import hashlib
    from .starts import choose_rank
    h = hashlib.sha256(np.array([I, J], np.int64).tobytes())
    h.update(np.ascontiguousarray(rows, np.int64).tobytes())
    h.update(np.ascontiguousarray(cols, np.int64).tobytes())
    key = h.hexdigest()
    if key in _SVD_CACHE:
        _SVD_CACHE.move_to_end(key)
        return _SVD_CACHE[key]
    X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(I, J))
    out = choose_rank(X, seed=SEED)
    _SVD_CACHE[key] = out
    while len(_SVD_CACHE) > SVD_CACHE_SIZE:
        _SVD_CACHE.popitem(last=False)
    return out


def check(result, rows, cols, shape, missing=None, row_ids=None, col_ids=None) -> list[str]:
    """What is degenerate about ``result`` (a ``FitResult`` with kept samples), as sentences
    (empty: nothing). ``rows``, ``cols``: the ones of X; ``missing``: (rows, cols) of masked
    entries or None; ``row_ids``, ``col_ids``: the IDEPM's rows and columns with parameters
    (``state["row_ids"]``), None for the truncated models."""
    I, J = shape
    if rows.shape[0] < MIN_ONES or not result.samples:
        return []
    found = []
    n_avg = result.settings["n_avg"]
    K_mean = float(result.K[-n_avg:].mean())
    if K_mean >= DUST_FRACTION * rows.shape[0]:
        found.append(f"dust: {K_mean:.0f} active atoms on average for {rows.shape[0]} ones")
    # in-sample AUC against a truncated SVD, on entries that have parameters
    K_svd, info = _svd_of(rows, cols, I, J)
    # The yardstick is in sample, and a rank-K SVD has K (I + J - K) free parameters: it overfits at
    # any rank (on noise of the planted network's size and density the rank-17 SVD scores 0.97 in
    # sample; AUC_GAP leaves room for that), and once they are half of the I J entries or more it
    # reproduces whatever matrix it is given. On a 5 x 400 matrix of pure noise the noise edge lets K
    # reach 4 of the 5 rows (0.8 of the entries): in-sample AUC 1.00, against 0.64-0.84 for fits
    # that are sound, a false "chance" alarm. There the comparison cannot tell a fit that missed
    # structure from one that rightly found none, so it is not made (chapter 29's planted network:
    # K 17-21 of 120 x 120, 0.26-0.32 of the entries; toy90 at K 7: 0.15)
    if K_svd * (I + J - K_svd) <= SVD_DOF_FRACTION * I * J:
        found += _chance(result, rows, cols, I, J, missing, row_ids, col_ids, K_svd, info)
    if found:
        names = ("a1", "a2") if result.model in ("EPM", "CEPM") else ("alpha1", "alpha2")
        shapes = [float(result.hyper[n][-n_avg:].mean()) for n in names]
        if max(shapes) > FLAT_SHAPE:
            found.append(f"flat atoms: {names[0]} {shapes[0]:.2f}, {names[1]} {shapes[1]:.2f} (above "
                         f"{FLAT_SHAPE:g}: every atom spread over many rows and columns)")
    return found


def _chance(result, rows, cols, I, J, missing, row_ids, col_ids, K_svd, info) -> list[str]:
    """``check``'s "chance" / "poor fit" finding (a list of at most one sentence): the in-sample
    AUC-ROC of the fit against the rank-``K_svd`` truncated SVD's."""
    excluded = rows * J + cols
    if missing is not None and missing[0].size:
        excluded = np.concatenate([excluded, missing[0] * J + missing[1]])
    if row_ids is not None:                 # the IDEPM: parameters only where ones, tests or masks are
        ok_r, ok_c = np.zeros(I, bool), np.zeros(J, bool)
        ok_r[row_ids], ok_c[col_ids] = True, True
    rng = np.random.default_rng(SEED)
    o_r, o_c, z_r, z_c = _entries(rows, cols, I, J, np.unique(excluded), rng)
    if row_ids is not None:
        keep = ok_r[z_r] & ok_c[z_c]
        z_r, z_c = z_r[keep], z_c[keep]
    if z_r.size == 0:
        return []
    at_r, at_c = np.concatenate([o_r, z_r]), np.concatenate([o_c, z_c])
    y = np.concatenate([np.ones(o_r.size), np.zeros(z_r.size)])
    def to_r(a):                            # full row index -> the model's row (the IDEPM's compact ones)
        return a if row_ids is None else np.searchsorted(row_ids, a)

    def to_c(a):
        return a if col_ids is None else np.searchsorted(col_ids, a)

    directions = [(to_r(at_r), to_c(at_c))]   # undirected: both directions, each mapped in full indices
    if result.settings.get("symmetric"):
        directions.append((to_r(at_c), to_c(at_r)))
    p = np.zeros(y.size)
    samples = result.samples[-MAX_SAMPLES:]
    for R, C, lam in samples:
        for a, b in directions:
            p += -np.expm1(-common.link_rates(a, b, R, C, lam))
    auc_fit = auc_roc(y, p)
    auc_svd = auc_roc(y, _svd_scores(info, K_svd, at_r, at_c))
    if auc_fit < auc_svd - AUC_GAP:
        return [f"{'chance' if auc_fit < 0.7 else 'poor fit'}: in-sample AUC-ROC {auc_fit:.2f}, against "
                f"{auc_svd:.2f} for a rank-{K_svd} truncated SVD of the same matrix"]
    return []


def advice(result, found=()) -> str:
    """What to try, for a warning about the findings ``found``."""
    tips = []
    if result.settings.get("init") != "data":
        tips.append("start from the data (fit's default, init='data')")
    if result.T is not None and result.K[-result.settings["n_avg"]:].mean() >= result.T - 0.5:
        tips.append(f"a larger truncation level (every one of the T = {result.T} atoms is in use)")
    # advice that runs as written: a hold must end before the averaged n_avg sweeps, and the truncated
    # models' chains start on at most T atoms (starts=('data', 1, 100) failed for T < 100)
    n_avg = result.settings["n_avg"]
    hold = "hold=(300, 0.1)" + ("" if result.settings["n_iter"] - n_avg >= 300 else f" with n_iter >= {300 + n_avg}")
    tips.append(f"hold the shape parameters small during burn-in ({hold})")
    T = result.T
    many = tuple(dict.fromkeys(("data", 1, 100 if T is None else min(T, 100))))
    tips.append("run several chains from different starts and compare them "
                f"(fit_chains(X, model{'' if T is None else f', T={T}'}, starts={many!r}).table())")
    return "; ".join(tips)


def warn_if_degenerate(result, rows, cols, shape, missing=None, row_ids=None, col_ids=None, stacklevel=3):
    """``check`` and, if something is found, a ``DegenerateFitWarning`` saying what and what to try.
    Returns the findings."""
    found = check(result, rows, cols, shape, missing, row_ids, col_ids)
    if found:
        label = result.model + (f"-{result.T}" if result.T else "")
        warnings.warn(f"the {label} fit (init={result.settings.get('init')!r}) looks degenerate: "
                      + "; ".join(found) + ". Try: " + advice(result, found) + ".",
                      DegenerateFitWarning, stacklevel=stacklevel)
    return found


def in_sample_loglik(result, mask=None) -> float:
    """The Bernoulli log likelihood of the training matrix per entry, averaged over the last
    ``MAX_SAMPLES`` kept samples: ones log(1 - exp(-r_ij)), zeros -r_ij (through sums: the rates of
    all entries, sum_k lambda_k (sum_i R_ik)(sum_j C_jk), minus those of the ones and of the
    masked entries, which are left out). For the IDEPM only the rows and columns with parameters
    count (``state["row_ids"]``: all, unless some carry neither a one nor a test or masked
    entry). NaN when the result kept no samples. Compares chains of one data set."""
    if not result.samples:
        return float("nan")
    I, J = result.settings["shape"]
    rows, cols = result.state["rows"], result.state["cols"]
    row_ids, col_ids = result.state.get("row_ids"), result.state.get("col_ids")
    n_rows, n_cols = (I, J) if row_ids is None else (row_ids.shape[0], col_ids.shape[0])
    to_r = (lambda a: a) if row_ids is None else (lambda a: np.searchsorted(row_ids, a))  # noqa: E731
    to_c = (lambda a: a) if col_ids is None else (lambda a: np.searchsorted(col_ids, a))  # noqa: E731
    miss_r = miss_c = np.zeros(0, np.int64)
    if mask is not None:
        from .fit_data import mask_entries
        key = mask_entries(mask, (I, J))
        if result.settings.get("symmetric"):
            key = np.unique(np.concatenate([key, (key % J) * J + key // J]))
        miss_r, miss_c = key // J, key % J
    r1, c1, mr, mc = to_r(rows), to_c(cols), to_r(miss_r), to_c(miss_c)
    n_entries = n_rows * n_cols - mr.shape[0]
    total = 0.0
    samples = result.samples[-MAX_SAMPLES:]
    for R, C, lam in samples:
        rate_ones = common.link_rates(r1, c1, R, C, lam)
        rate_all = float(np.sum(lam * R.sum(axis=0) * C.sum(axis=0)))
        rate_miss = float(common.link_rates(mr, mc, R, C, lam).sum()) if mr.size else 0.0
        total += float(np.sum(np.log(-np.expm1(-np.maximum(rate_ones, 1e-300))))) \
            - (rate_all - float(rate_ones.sum()) - rate_miss)
    return total / (len(samples) * n_entries)
