"""Cross-validation folds and hold-outs: the seeded permutation of a matrix's entries
(:func:`cv_permutation`), its folds (:func:`cv_folds`, :func:`cv_fold`), the held-out pairs of a
network (:func:`pair_folds`), and the training matrix with a fold held out (:func:`split`,
:func:`hold_out`), with the checks of shapes and fold numbers."""
from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from ..fit import missing_mask, prepare_matrix


def _int(name, v, lo=0):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _check_shape(shape):
    """``(I, J)`` as ints: a pair of integers >= 1 (numpy integers too; no floats, no bools)."""
    try:
        I, J = shape
    except (TypeError, ValueError):
        raise ValueError(f"shape must be a pair (I, J) of integers, got {shape!r}") from None
    for name, v in (("I", I), ("J", J)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"shape must be a pair (I, J) of integers, got {shape!r} "
                             f"({name} = {v!r} is a {type(v).__name__}; a float is not truncated)")
    if I < 1 or J < 1:
        raise ValueError(f"shape must be positive, got {(int(I), int(J))}")
    return int(I), int(J)


def cv_permutation(shape, seed=0) -> np.ndarray:
    """The seeded permutation of the linear indices ``i * J + j`` that defines the folds.

    Equal to ``np.random.default_rng(seed).permutation(I * J)`` but held as int32 when
    ``I * J < 2**31`` (MovieLens1M: 22.4 million entries, 90 MB instead of 180 MB).
    """
    I, J = _check_shape(shape)
    n = I * J
    perm = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    np.random.default_rng(seed).shuffle(perm)
    return perm


def _fold_bounds(n, n_folds, fold):
    q, r = divmod(n, n_folds)
    start = fold * q + min(fold, r)
    return start, start + q + (fold < r)


def _check_folds(shape, n_folds, fold=None):
    I, J = _check_shape(shape)
    n_folds = _int("n_folds", n_folds, 2)
    if n_folds > I * J:
        raise ValueError(f"n_folds = {n_folds} exceeds the {I * J} entries of a {I} x {J} matrix")
    if fold is not None:
        if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) \
                or not 0 <= fold < n_folds:
            raise ValueError(f"fold {fold!r} is out of range: folds are 0..{n_folds - 1} "
                             f"(n_folds = {n_folds})")
    return I, J, n_folds


def _entries(linear, J):
    linear = np.sort(linear)
    return linear // J, linear % J


def cv_folds(shape, n_folds=10, seed=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split all ``I * J`` entries of a matrix into ``n_folds`` test folds (Sec. 5: 10-fold CV).

    The folds are consecutive pieces of :func:`cv_permutation` (sizes differ by at most one),
    so every entry lies in exactly one fold and the same ``(shape, n_folds, seed)`` gives the
    same folds on every machine. Returns a list of ``(rows, cols)``, each sorted row-major
    (the order ``fit`` evaluates test entries fastest in), int32 when ``I * J < 2**31``.
    For one fold of a large matrix use :func:`cv_fold`.
    """
    I, J, n_folds = _check_folds(shape, n_folds)
    perm = cv_permutation((I, J), seed)
    return [_entries(perm[slice(*_fold_bounds(perm.size, n_folds, f))], J) for f in range(n_folds)]


_PERM_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def cv_fold(shape, fold, n_folds=10, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Fold number ``fold`` of :func:`cv_folds` (the permutation is cached: one per process)."""
    I, J, n_folds = _check_folds(shape, n_folds, fold)
    key = (I, J, int(seed))
    with _CACHE_LOCK:
        perm = _PERM_CACHE.get(key)
        if perm is None:
            perm = cv_permutation((I, J), seed)
            _PERM_CACHE.clear()                       # keep one permutation (90 MB for ML1M)
            _PERM_CACHE[key] = perm
    return _entries(perm[slice(*_fold_bounds(perm.size, n_folds, int(fold)))], J)


#: Largest I * J for which :func:`split` uses boolean lookup tables (beyond: sorting).
_TABLE_MAX = 2**28


def split(X, fold):
    """Hold out the entries of a fold: ``(X_train, test)`` as in Sec. 5.

    ``fold = (rows, cols)``: the test entries (e.g. from :func:`cv_fold`). ``X_train`` is
    ``X`` (a binary matrix, dense or sparse) with those entries set to zero, as a CSR matrix of
    int8 ones; ``test = (rows, cols, labels)`` with ``labels[e] = X[rows[e], cols[e]]`` (int8),
    the ``test`` argument of :func:`epm_lib.fit` (the test entries are zeros of ``X_train``).
    """
    I, J, xr, xc = prepare_matrix(X)
    if not isinstance(fold, (tuple, list)) or len(fold) != 2:
        raise ValueError("fold must be a pair (rows, cols) of test entries, e.g. from cv_fold")
    rows, cols = (np.asarray(a) for a in fold)
    if rows.ndim != 1 or rows.shape != cols.shape:
        raise ValueError(f"fold rows and cols must be 1-d of the same length, got shapes "
                         f"{rows.shape} and {cols.shape}")
    if rows.size == 0:
        raise ValueError("the fold holds no entries")
    if rows.dtype.kind not in "iu" or cols.dtype.kind not in "iu":
        raise ValueError(f"fold rows and cols must be integer arrays, got {rows.dtype}, {cols.dtype}")
    if rows.min() < 0 or rows.max() >= I or cols.min() < 0 or cols.max() >= J:
        raise ValueError(f"fold entries out of range for a matrix of shape {(I, J)}")
    tkey = rows.astype(np.int64) * J + cols
    xkey = xr * J + xc
    if I * J <= _TABLE_MAX:                 # one byte per entry: O(n) lookups (MovieLens1M: 22 MB)
        in_test = np.zeros(I * J, dtype=bool)
        in_test[tkey] = True
        n_distinct = int(np.count_nonzero(in_test))
        keep = ~in_test[xkey]
        del in_test
        in_x = np.zeros(I * J, dtype=bool)
        in_x[xkey] = True
        labels = in_x[tkey].astype(np.int8)
    else:
        n_distinct = np.unique(tkey).size
        labels = np.isin(tkey, xkey, kind="sort").astype(np.int8)
        keep = ~np.isin(xkey, tkey, kind="sort")
    if n_distinct != tkey.size:
        raise ValueError("the fold lists some entry more than once")
    X_train = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (xr[keep], xc[keep])),
                            shape=(I, J))
    X_train.sort_indices()
    return X_train, (rows, cols, labels)


def pair_folds(shape, n_folds=10, seed=0, symmetric=False) -> list[tuple[np.ndarray, np.ndarray]]:
    """Folds of held-out pairs for link prediction.

    ``symmetric=False``: all ``I * J`` entries, i.e. :func:`cv_folds`. ``symmetric=True`` (an
    undirected network, a square matrix): the ``I (I - 1) / 2`` pairs ``i < j`` (each pair once,
    no self-loops), cut the same way: consecutive pieces of ``default_rng(seed).permutation``,
    sizes differing by at most one, each fold sorted row-major. Returns ``[(rows, cols), ...]``.
    """
    if not symmetric:
        return cv_folds(shape, n_folds, seed)
    I, J = _check_shape(shape)
    if I != J:
        raise ValueError(f"symmetric=True needs a square matrix, got shape {(I, J)}")
    n = I * (I - 1) // 2
    n_folds = _int("n_folds", n_folds, 2)
    if n_folds > n:
        raise ValueError(f"n_folds = {n_folds} exceeds the {n} pairs of a {I}-node network")
    r, c = np.triu_indices(I, 1)
    perm = np.random.default_rng(seed).permutation(n)
    out = []
    for f in range(n_folds):
        idx = np.sort(perm[slice(*_fold_bounds(n, n_folds, f))])
        out.append((r[idx], c[idx]))
    return out


def hold_out(X, fold, symmetric=False, diagonal=None):
    """The practitioners' protocol for one fold: ``(X_train, test, mask)``.

    As :func:`split` (the fold's entries set to zero in ``X_train``, ``test = (rows, cols,
    labels)``), and with ``symmetric=True`` (an undirected network, ``X`` symmetric) each held-out
    pair zeroed in both directions; ``mask`` is ``epm_lib.fit.missing_mask`` of the fold, plus the
    diagonal when ``diagonal`` (default: ``symmetric``, a network without self-loops). Pass all
    three to ``epm_lib.fit(X_train, ..., test=test, mask=mask, symmetric=symmetric)`` and to
    ``epm_lib.baselines.score_baselines``; ``test`` alone (without ``mask``) is Sec. 5's protocol.

    Self-loops: with the diagonal masked (``symmetric=True`` by default) a one on the diagonal of
    ``X`` would be an observed one under the mask, which ``fit`` refuses; ``hold_out`` refuses it
    first (``ValueError`` naming a self-loop): remove the self-loops (e.g. ``X.setdiag(0)``) for a
    network without them, or pass ``diagonal=False`` to keep the diagonal as observed entries.
    """
    if not isinstance(fold, (tuple, list)) or len(fold) != 2:
        raise ValueError("fold must be a pair (rows, cols) of test entries, e.g. from pair_folds")
    rows, cols = (np.asarray(a) for a in fold)
    diag = symmetric if diagonal is None else bool(diagonal)
    if diag:
        I, J, xr, xc = prepare_matrix(X)
        loops = np.flatnonzero(xr == xc)
        if loops.size:
            i = int(xr[loops[0]])
            why = "symmetric=True masks the diagonal (a network without self-loops)" \
                if diagonal is None else "diagonal=True masks the diagonal"
            raise ValueError(f"X has {loops.size} self-loop(s) (ones on the diagonal, e.g. ({i}, {i})), "
                             f"but {why}: remove the self-loops (e.g. X.setdiag(0)) or pass "
                             f"diagonal=False to keep the diagonal as observed entries")
    if symmetric:
        I, J, xr, xc = prepare_matrix(X)
        if I != J or not np.array_equal(np.sort(xr * J + xc), np.sort(xc * J + xr)):
            raise ValueError("symmetric=True needs a square, symmetric X")
        key = np.minimum(rows, cols).astype(np.int64) * J + np.maximum(rows, cols)
        if np.unique(key).size != key.size:
            raise ValueError("the fold lists some pair twice (as (i, j) and (j, i) or repeated); "
                             "an undirected pair is held out once")
        off = rows != cols
        both = (np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]]))
        X_train, _ = split(X, both)
        _, test = split(X, (rows, cols))
    else:
        X_train, test = split(X, (rows, cols))
    return X_train, test, missing_mask(X_train.shape, test[0], test[1], diagonal=diag)
