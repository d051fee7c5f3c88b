"""The foundation every reader of a binary matrix shares: the :class:`Dataset` it returns, the
errors it raises and the canonical binary CSR matrix.

Owns :class:`Dataset` (a binary ``scipy.sparse.csr_matrix`` of int8 ones with its row and column
labels, provenance and description, its invariants checked on construction), the errors
:class:`DataError` (a ``ValueError``), :class:`DataNotFoundError` (also a ``FileNotFoundError``)
and :class:`ChecksumError`, :func:`fingerprint` (the sha256 of a binary matrix's ones, as
recorded in the data's PROVENANCE.md), and the helpers the readers build a matrix with:
``_unique_inverse`` (ids -> their sorted distinct values and the index of each among them),
``_binary_csr`` (the canonical int8 CSR matrix of a list of pairs), ``_sorted_unique`` and
``_sha256_file``.

Imports nothing of ``epm_lib``; ``text_table``, ``edge_files`` and ``datasets`` build on it.
Use it through :mod:`epm_lib.datasets`, which re-exports every public name.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["Dataset", "fingerprint", "DataError", "DataNotFoundError", "ChecksumError"]


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
class DataError(ValueError):
    """A data file is malformed, or a data set cannot be loaded as asked."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data file is missing; the message says which file to put where, and where to get it."""


class ChecksumError(DataError):
    """A data file (or the matrix read from it) differs from the recorded checksum."""


# ---------------------------------------------------------------------------------------------
# The Dataset and its invariants
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A binary matrix with its labels and provenance (returned by :func:`load`, :func:`load_file`).

    Attributes
    ----------
    name : short name (``"enron09"``, ...; a file's name for :func:`load_file`).
    X : ``scipy.sparse.csr_matrix`` of dtype int8 holding only ones (sorted indices, no
        explicit zeros, no duplicates): ``X[i, j] = 1`` iff the pair (i, j) is observed.
    row_labels, col_labels : 1-D read-only numpy arrays (int or str): the original ids of the
        rows and columns (user ids, person names, ...), in the matrix's order.
    source : where the data come from, their licence/terms and the citation keys of
        ``references.bib``.
    description : what ``X`` is (definition of a one, shape, ones, density, caveats).
    """

    name: str
    X: sp.csr_matrix
    row_labels: np.ndarray
    col_labels: np.ndarray
    source: str
    description: str

    def __post_init__(self):
        X = self.X
        if not isinstance(X, sp.csr_matrix):
            raise TypeError(f"Dataset.X must be a scipy.sparse.csr_matrix, got {type(X).__name__}")
        if X.dtype != np.int8:
            raise ValueError(f"Dataset.X must have dtype int8, got {X.dtype}")
        if not X.has_canonical_format:
            raise ValueError("Dataset.X must have sorted indices and no duplicate entries")
        if X.nnz and not np.all(X.data == 1):
            raise ValueError("Dataset.X must hold only ones (binary, no explicit zeros)")
        for attr, n in (("row_labels", X.shape[0]), ("col_labels", X.shape[1])):
            labels = np.array(getattr(self, attr))          # a private, read-only copy
            if labels.ndim != 1 or labels.size != n:
                raise ValueError(f"Dataset.{attr} must be 1-D of length {n}, got shape {labels.shape}")
            labels.flags.writeable = False
            object.__setattr__(self, attr, labels)

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape

    @property
    def n_ones(self) -> int:
        return int(self.X.nnz)

    @property
    def density(self) -> float:
        """Fraction of ones, ``n_ones / (n_rows * n_cols)``."""
        n_rows, n_cols = self.X.shape
        return self.X.nnz / (n_rows * n_cols) if n_rows * n_cols else 0.0

    def __repr__(self) -> str:
        n_rows, n_cols = self.X.shape
        return (f"Dataset(name={self.name!r}, shape={n_rows}x{n_cols}, ones={self.n_ones}, "
                f"density={self.density:.4f})")


def fingerprint(X) -> str:
    """sha256 (hex) of the ones of a binary matrix, as recorded in the data's PROVENANCE.md.

    The (row, col) pairs of the non-zeros, 0-based, sorted row-major, as little-endian int64
    pairs: ``sha256(np.column_stack([rows, cols]).astype('<i8').tobytes())``.
    """
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()                                     # sorts each row's indices
    X.eliminate_zeros()
    rows = np.repeat(np.arange(X.shape[0], dtype="<i8"), np.diff(X.indptr))
    pairs = np.column_stack([rows, X.indices.astype("<i8")])
    return hashlib.sha256(pairs.tobytes()).hexdigest()


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` by sorting (numpy 2.4's hash-based ``np.unique`` is ~10x slower here)."""
    s = np.sort(a)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def _unique_inverse(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, index of each id among them): ``np.unique(ids, return_inverse=True)``,
    in O(n) for integer ids of moderate range."""
    if ids.dtype.kind in "iu" and ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if hi - lo < 4 * ids.size + 1_000_000:
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[ids - lo] = True
            rank = np.cumsum(present) - 1
            return (np.flatnonzero(present) + lo).astype(ids.dtype), rank[ids - lo]
    labels, index = np.unique(ids, return_inverse=True)
    return labels, index.ravel()


def _binary_csr(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The canonical int8 CSR matrix with a one at every (row, col) pair given (duplicates merged)."""
    n_rows, n_cols = int(shape[0]), int(shape[1])
    key = _sorted_unique(np.asarray(rows, dtype=np.int64) * n_cols + np.asarray(cols, dtype=np.int64))
    r, c = np.divmod(key, n_cols) if n_cols else (key, key)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n_rows), out=indptr[1:])
    idx = np.int32 if max(n_rows, n_cols, key.size) < np.iinfo(np.int32).max else np.int64
    X = sp.csr_matrix((np.ones(key.size, dtype=np.int8), c.astype(idx), indptr.astype(idx)),
                      shape=(n_rows, n_cols))
    X.has_sorted_indices = True
    return X


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

