"""``epm_lib.fit_data``: the data side of ``fit``, checked and turned into index arrays.

``prepare_matrix`` reduces a binary matrix to its ones in CSR order (latent counts exist only
there); ``prepare`` adds the test entries, the mask of missing entries and the symmetry of an
undirected network, and returns the ``FitData`` the sweeps see. Every problem of the input is a
``ValueError`` that names it. The options are ``epm_lib.fit_options``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["FitData", "prepare", "prepare_matrix", "missing_mask", "mask_entries"]


@dataclass
class FitData:
    """What the sweeps see of the data (``prepare``)."""
    I: int
    J: int
    rows: np.ndarray            # the ones of X in CSR order
    cols: np.ndarray
    test: tuple | None          # (rows, cols, labels) of the test entries (both directions if symmetric)
    pairs: tuple | None         # symmetric: (n_pairs, partner index or -1) of the test entries
    mrows: np.ndarray           # the missing entries (mask), row-major
    mcols: np.ndarray
    digest: str                 # of the matrix, missing and test entries (a resumed chain checks it)

    @property
    def nnz(self) -> int:
        return self.rows.shape[0]

    @property
    def e_rows(self) -> np.ndarray:
        """The entries the sweeps visit: the ones of X, then the missing ones (``e_rows[:nnz]``
        are the ones; a missing entry's count comes from the Poisson of Eq. (1), zero allowed)."""
        return self.rows if not self.mrows.size else np.concatenate([self.rows, self.mrows])

    @property
    def e_cols(self) -> np.ndarray:
        return self.cols if not self.mcols.size else np.concatenate([self.cols, self.mcols])


def prepare(X, test, mask, symmetric, model, m_step) -> FitData:
    """Check X, the test entries and the mask (``fit``'s docstring says what each may be) and
    return the ``FitData``; ``model`` and ``m_step`` only for the IDEPM's paper m-step, which
    cannot take a mask."""
    I, J, rows, cols = prepare_matrix(X)
    test = _check_test(test, I, J, rows, cols)
    pairs = None
    if symmetric:
        _check_symmetric(I, J, rows, cols)
        if test is not None:
            test, pairs = _symmetric_test(test, J)
    mrows, mcols = _check_mask(mask, I, J, rows, cols)
    if symmetric and mrows.size:        # a masked pair is missing in both directions
        key = np.unique(np.concatenate([mrows * J + mcols, mcols * J + mrows]))
        mrows, mcols = key // J, key % J
    if mrows.size and model == "IDEPM" and m_step == "paper":
        raise ValueError("mask needs the IDEPM's exact m-step (m_step='exact'): the paper's m-step "
                         "redraws every count from a zero-truncated Poisson")
    data = FitData(I=I, J=J, rows=rows, cols=cols, test=test, pairs=pairs, mrows=mrows, mcols=mcols, digest="")
    data.digest = _data_digest(I, J, data.e_rows, data.e_cols, test, rows.shape[0])
    return data


def _check_values(values):
    """``ValueError`` unless the entries ``values`` (a sparse matrix's stored ones or a dense array) are
    numbers or booleans, all 0 or 1."""
    if values.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric or boolean, got dtype {values.dtype}")
    if values.dtype.kind == "f" and np.isnan(values).any():
        raise ValueError("X contains NaN; a binary matrix must hold only 0 and 1")
    bad = (values != 0) & (values != 1)
    if bad.any():
        raise ValueError(f"X must be binary (0/1); found {int(bad.sum())} entries with other values, "
                         f"e.g. {values[bad][0]!r}")


def prepare_matrix(X):
    """Validate a binary matrix and return (I, J, rows, cols) of its ones in CSR order."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-d matrix, got {X.ndim} dimensions")
        # COO (and unsorted CSR/CSC) may list an entry more than once, and converting adds the
        # duplicates up: check the entries as the user wrote them, then refuse repeated ones
        Xo = sp.coo_matrix(X, copy=True)
        data = Xo.data
        _check_values(data)
        stored = data != 0
        key = Xo.row[stored].astype(np.int64) * Xo.shape[1] + Xo.col[stored]
        uniq, first, times = np.unique(key, return_index=True, return_counts=True)
        if uniq.shape[0] < key.shape[0]:
            e = int(np.flatnonzero(times > 1)[0])
            i, j = divmod(int(uniq[e]), Xo.shape[1])
            raise ValueError(f"X lists {int((times > 1).sum())} entries more than once, e.g. ({i}, {j}) "
                             f"{int(times[e])} times (a sparse matrix adds repeated entries up); "
                             f"drop the duplicates, e.g. X = (X != 0).astype(np.int8) after X.sum_duplicates()")
        Xc = sp.csr_matrix(Xo)
        Xc.sum_duplicates()
        Xc.eliminate_zeros()
        Xc.sort_indices()
        I, J = Xc.shape
        rows = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
        cols = Xc.indices.astype(np.int64)
    else:
        A = np.asarray(X)
        if A.ndim != 2:
            raise ValueError(f"X must be a 2-d matrix, got shape {A.shape}")
        _check_values(A)
        I, J = A.shape
        rows, cols = np.nonzero(A)
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    if I < 1 or J < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {(I, J)}")
    if rows.size == 0:
        raise ValueError("X has no ones: there is nothing to partition")
    return I, J, rows, cols


def _check_test(test, I, J, rows, cols):
    if test is None:
        return None
    if not isinstance(test, (tuple, list)) or len(test) != 3:
        raise ValueError("test must be None or a tuple (rows, cols, labels) of held-out entries")
    tr, tc, tl = (np.asarray(a) for a in test)
    for name, a in (("test rows", tr), ("test cols", tc), ("test labels", tl)):
        if a.ndim != 1:
            raise ValueError(f"{name} must be a 1-d array, got shape {a.shape}")
        if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and not np.all(np.isfinite(a))):
            raise ValueError(f"{name} must hold finite numbers, got dtype {a.dtype}")
    if not (tr.shape == tc.shape == tl.shape):
        raise ValueError(f"test rows, cols and labels must have the same length, got "
                         f"{tr.shape[0]}, {tc.shape[0]}, {tl.shape[0]}")
    if tr.size == 0:
        raise ValueError("test holds no entries")
    if np.any(tr != np.round(tr)) or np.any(tc != np.round(tc)):
        raise ValueError("test rows and cols must be integer indices")
    tr, tc = tr.astype(np.int64), tc.astype(np.int64)
    if tr.min() < 0 or tr.max() >= I or tc.min() < 0 or tc.max() >= J:
        raise ValueError(f"test entries out of range for X of shape {(I, J)}")
    if np.any((tl != 0) & (tl != 1)):
        raise ValueError("test labels must be 0 or 1")
    key_x = rows * J + cols
    key_t = tr * J + tc
    uniq, times = np.unique(key_t, return_counts=True)
    if uniq.shape[0] < key_t.shape[0]:
        e = int(np.flatnonzero(times > 1)[0])
        raise ValueError(f"test lists {int((times > 1).sum())} entries more than once, e.g. "
                         f"({int(uniq[e]) // J}, {int(uniq[e]) % J}) {int(times[e])} times; each held-out "
                         f"entry must appear once")
    clash = np.isin(key_t, key_x)
    if clash.any():
        e = int(np.flatnonzero(clash)[0])
        raise ValueError(f"{int(clash.sum())} test entries are ones of the training matrix X "
                         f"(e.g. ({tr[e]}, {tc[e]})); held-out entries must be set to zero in X")
    return tr, tc, tl.astype(np.int8)


def missing_mask(shape, rows, cols, diagonal=False):
    """A ``mask`` for ``fit``: the entries (rows, cols) (e.g. the held-out ones of a test set) and,
    with ``diagonal=True`` for a square matrix (a network without self-loops), the diagonal, as a
    boolean scipy.sparse CSR matrix of ``shape``."""
    I, J = shape
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError("rows and cols must be 1-d arrays of the same length")
    if rows.size and (rows.min() < 0 or rows.max() >= I or cols.min() < 0 or cols.max() >= J):
        raise ValueError(f"entries out of range for shape {(I, J)}")
    if diagonal:
        if I != J:
            raise ValueError(f"diagonal=True needs a square matrix, got shape {(I, J)}")
        rows = np.concatenate([rows, np.arange(I)])
        cols = np.concatenate([cols, np.arange(I)])
    m = sp.csr_matrix((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(I, J))
    m.sum_duplicates()
    m.data[:] = True
    return m


def _check_symmetric(I, J, rows, cols):
    if I != J:
        raise ValueError(f"symmetric=True needs a square matrix, got shape {(I, J)}")
    a = np.sort(rows * J + cols)
    b = np.sort(cols * J + rows)
    if not np.array_equal(a, b):
        e = int(np.setdiff1d(a, b)[0])
        raise ValueError(f"symmetric=True needs a symmetric X: ({e // J}, {e % J}) is a one but "
                         f"({e % J}, {e // J}) is not")


def _symmetric_test(test, J):
    """Test pairs of an undirected network -> both directions: the pairs, then the reversed
    off-diagonal ones; returns the expanded test and (n_pairs, partner index or -1)."""
    tr, tc, tl = test
    key = np.minimum(tr, tc) * J + np.maximum(tr, tc)
    uniq, times = np.unique(key, return_counts=True)
    if uniq.shape[0] < key.shape[0]:
        e = int(uniq[np.flatnonzero(times > 1)[0]])
        raise ValueError(f"test lists the pair ({e // J}, {e % J}) more than once (as (i, j) and (j, i) or "
                         f"repeated); in an undirected network each pair is held out once")
    off = np.flatnonzero(tr != tc)
    n = tr.shape[0]
    partner = np.full(n, -1, dtype=np.int64)
    partner[off] = n + np.arange(off.size)
    ext = (np.concatenate([tr, tc[off]]), np.concatenate([tc, tr[off]]), np.concatenate([tl, tl[off]]))
    return ext, (n, partner)


def mask_entries(mask, shape):
    """The entries marked True in ``mask`` (boolean or 0/1, dense or scipy.sparse, of ``shape``) as
    flat keys i J + j, sorted and unique; ``ValueError`` for a wrong shape, NaN or other values."""
    I, J = shape
    if sp.issparse(mask):
        Mo = sp.coo_matrix(mask)
        d, got = Mo.data, Mo.shape
    else:
        A = np.asarray(mask)
        d, got = A.ravel(), A.shape
    if got != (I, J):
        raise ValueError(f"mask must have the shape of X {(I, J)}, got {got}")
    if d.dtype.kind == "f" and np.isnan(d).any():
        raise ValueError("mask contains NaN; it must be boolean (True: the entry is missing)")
    if d.dtype.kind not in "biuf" or np.any((d != 0) & (d != 1)):
        raise ValueError("mask must be boolean or 0/1 (True: the entry is missing)")
    if sp.issparse(mask):
        keep = d != 0
        return np.unique(Mo.row[keep].astype(np.int64) * J + Mo.col[keep])
    return np.flatnonzero(d != 0).astype(np.int64)


def _check_mask(mask, I, J, rows, cols):
    """The missing entries of ``fit(mask=...)`` as (rows, cols) in row-major order (empty arrays
    without a mask). A one of X under the mask is an error: an entry is observed or missing."""
    empty = np.zeros(0, dtype=np.int64)
    if mask is None:
        return empty, empty
    key = mask_entries(mask, (I, J))
    clash = np.isin(key, rows * J + cols)
    if clash.any():
        e = int(key[np.flatnonzero(clash)[0]])
        raise ValueError(f"{int(clash.sum())} ones of X are under the mask (e.g. ({e // J}, {e % J})); "
                         f"an entry is either observed (0 or 1) or missing: set held-out ones to 0 in X")
    return key // J, key % J


def _data_digest(I, J, rows, cols, test, nnz):
    """A digest of the training matrix, its missing entries and the test entries (a resumed
    chain must see the same)."""
    h = hashlib.sha256(np.array([I, J, nnz], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(cols, dtype=np.int64).tobytes())
    if test is not None:
        for a in test:
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:32]


def _compact(idx, test_idx, n):
    """The sorted ids of the rows (or columns) used by the ones ``idx`` or by the test entries,
    and both index arrays renumbered 0..n'-1 in that order (unchanged when every id is used)."""
    used = np.zeros(n, dtype=bool)
    used[idx] = True
    if test_idx is not None:
        used[test_idx] = True
    ids = np.flatnonzero(used)
    if ids.shape[0] == n:
        return ids, idx, test_idx
    new = np.full(n, -1, dtype=np.int64)
    new[ids] = np.arange(ids.shape[0])
    return ids, new[idx], None if test_idx is None else new[test_idx]
