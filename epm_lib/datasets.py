"""Data sets: the synthetic 90x90 example of Fig. 1a and the three real data sets of Sec. 5.

``make_toy90`` is derived in ``chapters/01_epm``; the loaders serve Part III (the experiments).
The paper (Sec. 5, "Datasets") defines x_ij = 1 iff employee i sent an e-mail to employee j in
September 2001 (Enron09, 149 employees) and x_ij = 1 iff the rating is higher than three
(MovieLens100K, 943 x 1682; MovieLens1M, 6040 x 3706), with densities 0.016, 0.035, 0.026.

- :func:`load` ``(name, data_dir=None, **options)`` returns a :class:`Dataset` for one of
  ``"toy90"``, ``"enron09"``, ``"movielens100k"``, ``"movielens1m"``: a binary
  ``scipy.sparse.csr_matrix`` (int8 ones, sorted indices, no explicit zeros) with its row and
  column labels, its provenance (``.source``) and what it is (``.description``).
- :func:`load_file` reads a user's own triplet / edge-list file (CSV, TSV, ...) or a
  Matrix Market file into the same :class:`Dataset`.
- :func:`fingerprint` is the sha256 of a binary matrix's ones (the check MovieLens is verified by).

Where the data live
    ``toy90`` is generated (``make_toy90(seed=0)``). ``enron09`` is shipped with the
    repository in ``data/enron/`` (CC BY-SA 4.0, see ``data/enron/README.md``) and checked
    against the sha256 recorded here. MovieLens may not be redistributed, so it is never part
    of the repository: it is read from a data directory, the first of the ``data_dir``
    argument, the ``EPM_DATA_DIR`` environment variable, or the repository's ``data/``,
    holding ``ml-100k/u.data`` and ``ml-1m/ratings.dat`` (GroupLens originals) or
    ``ml-1m/ratings.csv.gz`` (a CSV copy with the same matrix). What is read is verified
    against the shape, number of ones and :func:`fingerprint` recorded in the data's
    PROVENANCE.md.

Errors are :class:`DataError` (a ``ValueError``); a missing file raises
:class:`DataNotFoundError` (also a ``FileNotFoundError``) and a mismatching checksum
:class:`ChecksumError`; every message says which file was read or expected, and what to do.
"""
from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import hashlib
import io
import lzma
import math
import numbers
import operator
import os
import re
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = [
    "TOY90_BLOCKS",
    "make_toy90",
    "Dataset",
    "DATASETS",
    "load",
    "load_file",
    "fingerprint",
    "DataError",
    "DataNotFoundError",
    "ChecksumError",
]

#: The five overlapping latent classes of the synthetic example (Fig. 1a):
#: (first row, last row + 1, first column, last column + 1) of each block.
TOY90_BLOCKS = (
    (0, 30, 0, 30),
    (20, 50, 20, 45),
    (40, 70, 40, 65),
    (60, 90, 55, 90),
    (10, 35, 60, 85),
)


def make_toy90(seed: int = 0, p_in: float = 0.9, p_out: float = 0.0):
    """The synthetic 90x90 binary matrix with five overlapping classes (Fig. 1a).

    Each class k is a block of rows x columns (``TOY90_BLOCKS``); an entry is
    a one with probability ``1 - (1 - p_out) prod_{k covering it} (1 - p_in)``,
    the noisy-OR link of Eq. (1) with one "on" class per covering block.

    Returns ``(X, row_classes, col_classes)``: ``X`` a 90x90
    ``scipy.sparse.csr_matrix`` of int8 ones, and two boolean (90, 5)
    membership matrices (the ground truth the samplers should recover).
    """
    if not (0.0 < p_in <= 1.0) or not (0.0 <= p_out < 1.0):
        raise ValueError(f"need 0 < p_in <= 1 and 0 <= p_out < 1, got p_in={p_in}, p_out={p_out}")
    rng = np.random.default_rng(seed)
    n, K = 90, len(TOY90_BLOCKS)
    row_classes = np.zeros((n, K), dtype=bool)
    col_classes = np.zeros((n, K), dtype=bool)
    for k, (r0, r1, c0, c1) in enumerate(TOY90_BLOCKS):
        row_classes[r0:r1, k] = True
        col_classes[c0:c1, k] = True
    covering = row_classes.astype(np.int64) @ col_classes.T.astype(np.int64)   # blocks covering (i, j)
    p_zero = (1.0 - p_out) * (1.0 - p_in) ** covering
    X = (rng.random((n, n)) >= p_zero).astype(np.int8)
    return sp.csr_matrix(X), row_classes, col_classes


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


def _relabel(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


# ---------------------------------------------------------------------------------------------
# Parsing delimited text. load_file reads tables with pandas' C parser (_table_parse), MovieLens
# with a vectorised numeric fast path (_fast_numeric); when either finds anything irregular, a
# line-by-line slow path (_split_lines) reads the file again and names the first malformed line.
# ---------------------------------------------------------------------------------------------
_WHITESPACE = np.array([9, 11, 12, 13, 32], dtype=np.uint8)     # \t \v \f \r space (not \n)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when its name ends in .gz, .bz2 or .xz."""
    raw = path.read_bytes()
    suffix = path.suffix.lower()
    try:
        if suffix == ".gz":
            return gzip.decompress(raw)
        if suffix == ".bz2":
            return bz2.decompress(raw)
        if suffix == ".xz":
            return lzma.decompress(raw)
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as e:
        raise DataError(f"{path}: cannot decompress ({type(e).__name__}: {e}); "
                        f"the file is damaged or not {suffix[1:]}-compressed") from e
    return raw


def _sep_text(sep: str | None) -> str:
    return "whitespace" if sep is None else repr(sep)


def _fast_numeric(body: bytes, sep: str | None, ncols: int, dtype) -> np.ndarray | None:
    """Parse ``body`` as lines of exactly ``ncols`` numbers separated by ``sep`` (None: runs of
    whitespace), vectorised. Returns an (n_lines, ncols) array, or None when anything is
    irregular (blank or comment lines, empty fields, a field that is not one number, ...):
    the caller then falls back to :func:`_split_lines`, which finds and reports the problem.
    """
    fromstring = getattr(np, "fromstring", None)
    body = body.rstrip(b"\r\n")
    if not body or fromstring is None:
        return None
    if sep is not None:
        sepb = sep.encode()
        if not sepb or (sepb.isspace() and sepb != b"\t"):
            return None
        if len(sepb) > 1:                                    # e.g. "::" -> one control byte
            body = body.replace(sepb, b"\x1f")
            sepb = b"\x1f"
    body += b"\n"
    a = np.frombuffer(body, dtype=np.uint8)
    newline = a == 10
    n_lines = int(np.count_nonzero(newline))
    space = np.isin(a, _WHITESPACE)
    if sep is None:
        bound = newline
    else:
        is_sep = a == sepb[0]
        space &= ~is_sep
        bound = newline | is_sep
    token = ~(bound | space)
    starts = np.flatnonzero(token[1:] & ~token[:-1]) + 1            # where each token starts
    if token[0]:
        starts = np.concatenate(([0], starts))
    if sep is None:              # ncols tokens per line: line k's tokens lie between newlines
        ends = np.flatnonzero(newline)
        if starts.size != n_lines * ncols:
            return None
        starts = starts.reshape(n_lines, ncols)
        if np.any(starts[:, -1] > ends) or np.any(starts[1:, 0] < ends[:-1]):
            return None
    else:                        # exactly one token in every field, ncols fields per line
        bidx = np.flatnonzero(bound)
        if bidx.size != n_lines * ncols or starts.size != bidx.size:
            return None
        if np.any(starts > bidx) or np.any(starts[1:] < bidx[:-1]):  # interleaved: s0 b0 s1 b1 ...
            return None
        kinds = newline[bidx].reshape(n_lines, ncols)
        if not kinds[:, -1].all() or kinds[:, :-1].any():
            return None
        body = body.replace(sepb, b" ")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            values = fromstring(body, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    if values.size != n_lines * ncols:
        return None
    return values.reshape(n_lines, ncols)


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("latin-1")


def _split_fields(line: str, sep: str | None, where: str, lineno: int) -> list[str]:
    if sep is None:
        fields = line.split()
    elif len(sep) == 1 and sep != '"' and '"' in line:   # a quoted field may hold the separator
        try:
            fields = next(csv.reader([line.strip("\r\n")], delimiter=sep), [""])
        except csv.Error as e:                          # a field beyond csv.field_size_limit()
            raise DataError(f"{where}, line {lineno}: cannot split the line into fields ({e}): "
                            f"{line.strip()[:100]!r}...; ids and values cannot be this long"
                            ) from None
        fields = [f.strip() for f in fields]
    else:
        fields = [f.strip() for f in line.strip("\r\n").split(sep)]
    return [f[1:-1] if len(f) >= 2 and f[0] == f[-1] == '"' else f for f in fields]


def _is_comment(line: str) -> bool:
    s = line.strip()
    return not s or s[0] in "#%"


def _split_lines(text: str, sep: str | None, where: str, first_line: int,
                 ncols: tuple[int, ...]) -> tuple[list[list[str]], list[int]]:
    """Split lines ``first_line`` (1-based) onwards into fields, skipping blank and comment
    (``#``, ``%``) lines; every line must have the same number of fields, one of ``ncols``."""
    rows, linenos, want = [], [], None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if lineno < first_line or _is_comment(line):
            continue
        fields = _split_fields(line, sep, where, lineno)
        allowed = ncols if want is None else (want,)
        if len(fields) not in allowed:
            expect = " or ".join(map(str, allowed))
            raise DataError(f"{where}, line {lineno}: expected {expect} fields separated by "
                            f"{_sep_text(sep)}, found {len(fields)}: {line.strip()[:100]!r}")
        if "" in fields:
            raise DataError(f"{where}, line {lineno}: empty field {fields.index('') + 1}: "
                            f"{line.strip()[:100]!r}")
        want = len(fields)
        rows.append(fields)
        linenos.append(lineno)
    if not rows:
        raise DataError(f"{where}: no data lines")
    return rows, linenos


def _column(rows: list[list[str]], j: int) -> np.ndarray:
    return np.array([r[j] for r in rows])


def _as_numbers(strings: np.ndarray, dtype, linenos: list[int], where: str, what: str) -> np.ndarray:
    """Convert a column of strings to ``dtype``; name the first line whose field is not a number."""
    try:
        return strings.astype(dtype)
    except (ValueError, OverflowError):
        kind = "an integer" if np.dtype(dtype).kind == "i" else "a number"
        for s, lineno in zip(strings, linenos):
            try:
                np.array([s]).astype(dtype)
            except (ValueError, OverflowError):
                raise DataError(f"{where}, line {lineno}: {what} {str(s)[:50]!r} is not {kind}") from None
        raise


def _strip_bom(body: bytes, where: str) -> bytes:
    """``body`` without its byte-order mark: UTF-8's is dropped, UTF-16/32 text is re-encoded
    as UTF-8 (so the first line's first field is what it looks like)."""
    if body.startswith(codecs.BOM_UTF8):
        return body[len(codecs.BOM_UTF8):]
    for bom, encoding in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                          (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            try:
                return body.decode(encoding).encode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"{where}: starts with a {encoding.upper()} byte-order mark but is "
                                f"not valid {encoding.upper()} ({e}); save it as UTF-8") from None
    return body


def _not_finite(value: float) -> str:
    return "is not a number (NaN)" if np.isnan(value) else "is infinite"


class _BadId(Exception):
    """An id that is a number but NaN or infinite (its index in the column)."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


def _ids_from_strings(strings: np.ndarray) -> np.ndarray:
    """A column of ids (stripped strings): int64 if every id is an integer (also when written
    ``1.0`` or ``1e3``), else the strings themselves (labels sorted as strings). Raises
    :class:`_BadId` for an id that is NaN or infinite in a column of numbers."""
    try:
        return strings.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    try:
        numbers = strings.astype(np.float64)
    except (ValueError, OverflowError):
        return strings                                  # names among the ids: string ids
    bad = np.flatnonzero(~np.isfinite(numbers))
    if bad.size:
        raise _BadId(int(bad[0]))
    if np.all(numbers == np.round(numbers)) and np.all(np.abs(numbers) < 2**53):
        return numbers.astype(np.int64)
    return strings


def _id_column(strings: np.ndarray, linenos: list[int], where: str, what: str) -> np.ndarray:
    try:
        return _ids_from_strings(strings)
    except _BadId as e:
        s = strings[e.index]
        raise DataError(f"{where}, line {linenos[e.index]}: {what} {str(s)[:50]!r} "
                        f"{_not_finite(float(s))}; ids must be integers or names") from None


def _value_column(strings: np.ndarray, linenos: list[int], where: str) -> np.ndarray:
    values = _as_numbers(strings, np.float64, linenos, where, "value")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise DataError(f"{where}, line {linenos[k]}: value {str(strings[k])[:50]!r} "
                        f"{_not_finite(values[k])}; every value must be a finite number")
    return values


# Lines pandas must not see: comments (first non-blank character # or %) and lines of only
# whitespace (pandas skips empty lines, not a lone "\r" or tab). Matched with their leading "\n".
_COMMENT_OR_BLANK = re.compile(rb"\n[ \t\r\f\v]*(?:[#%][^\n]*)?(?=\n)")


def _blank_comment_lines(body: bytes) -> bytes:
    """``body`` with its comment and whitespace-only lines emptied (line numbers unchanged)."""
    return _COMMENT_OR_BLANK.sub(b"\n", b"\n" + body + b"\n")[1:]


def _is_text(pd, column) -> bool:
    """Whether a pandas column holds strings (pandas >= 3: a string dtype; before: objects)."""
    if isinstance(column.dtype, pd.StringDtype):
        return True
    return column.dtype == object and pd.api.types.infer_dtype(column, skipna=False) == "string"


def _table_ids(pd, column) -> np.ndarray | None:
    """A pandas column of ids as :func:`_ids_from_strings` reads it, or None if it cannot tell."""
    kind = column.dtype.kind
    if kind == "i":
        return column.to_numpy(dtype=np.int64)
    if kind == "f":                                      # ids written 1.0, 1e3, ...
        a = column.to_numpy(dtype=np.float64)
        if np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**53):
            return a.astype(np.int64)
        return None
    if not _is_text(pd, column):
        return None                                      # bool, uint64 beyond int64, ...
    s = column.str.strip()
    quoted = (s.str.len() >= 2) & s.str.startswith('"') & s.str.endswith('"')
    if quoted.any():
        s = s.where(~quoted, s.str.slice(1, -1))
    if (s == "").any():
        return None                                      # an empty or missing field
    try:
        return _ids_from_strings(s.to_numpy(dtype=str))
    except _BadId:
        return None


def _table_parse(body: bytes, sep: str | None, ncols: int):
    """Read the data lines ``body`` (the file from its first data line on) with pandas' C
    parser: ``(ids, values)`` as the line-by-line reader would give them (two id columns, and
    the finite values or None), or None when anything is irregular (a line with another number
    of fields, an empty field, a value that is not a finite number, a NaN id, ...): the caller
    then reads the file line by line, which names the line at fault."""
    import pandas as pd

    quoting = csv.QUOTE_MINIMAL
    if sep is None:
        pd_sep, quoting = r"\s+", csv.QUOTE_NONE
    elif len(sep) == 1 and sep not in '"\r\n':
        pd_sep = sep
    else:                                                # e.g. "::" -> one control byte
        body, pd_sep, quoting = body.replace(sep.encode(), b"\x1f"), "\x1f", csv.QUOTE_NONE
    try:
        body.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "latin-1"                             # as _decode reads it
    body = body.rstrip(b"\r\n")                         # trailing (CRLF) blank lines
    cleaned = b"#" in body or b"%" in body or b"\n\r\n" in body
    if cleaned:
        body = _blank_comment_lines(body)
    while True:
        table = _read_table(pd, body, pd_sep, quoting, encoding, ncols)
        if table is not None or cleaned:
            return table
        if not (body[:1] in (b" ", b"\t", b"\r", b"\v", b"\f")
                or any(b"\n" + c in body for c in (b" ", b"\t", b"\r", b"\v", b"\f"))):
            return None                                  # no whitespace-only line to empty
        body, cleaned = _blank_comment_lines(body), True


def _read_table(pd, body, pd_sep, quoting, encoding, ncols):
    try:
        df = pd.read_csv(io.BytesIO(body), sep=pd_sep, header=None, index_col=False,
                         quoting=quoting, na_filter=False, skip_blank_lines=True,
                         lineterminator="\n", engine="c", low_memory=False, encoding=encoding)
    except (ValueError, UnicodeDecodeError, pd.errors.EmptyDataError):   # ParserError too
        return None
    if df.shape[1] != ncols or len(df) == 0:
        return None
    values = None
    if ncols == 3:                                       # checked first: it is the cheap one
        if df[2].dtype.kind not in "iuf":
            return None
        values = df[2].to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(values)):
            return None
    if any(_is_text(pd, df[j]) and (df[j] == "").any() for j in (0, 1)):
        return None                                      # an empty field, or a line too short
    ids = [_table_ids(pd, df[j]) for j in (0, 1)]
    if ids[0] is None or ids[1] is None:
        return None
    return ids, values


# ---------------------------------------------------------------------------------------------
# Where the data live
# ---------------------------------------------------------------------------------------------
#: The repository's root (the folder holding ``epm_lib/`` and ``data/``).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: The shipped Enron files (``load("enron09")`` reads only from here).
ENRON_DIR = REPO_ROOT / "data" / "enron"
ENRON_SHA256 = {
    "records.csv.gz": "2d5a385b3048707c87389b06183338d732bd191d7ef75497e8889b78b0a23ff4",
    "vertices.csv": "a2057eb8588f1c08871663bd43f5ca14dd5a2f849d1a37ff7ae799278f39b445",
}


def _data_dir(data_dir) -> tuple[Path, str]:
    """The directory MovieLens is read from, and how it was chosen (for error messages)."""
    if data_dir is not None:
        return Path(data_dir).expanduser(), "given as data_dir"
    env = os.environ.get("EPM_DATA_DIR")
    if env:
        return Path(env).expanduser(), "from the EPM_DATA_DIR environment variable"
    return REPO_ROOT / "data", "the repository's data/ (neither data_dir nor EPM_DATA_DIR is set)"


# ---------------------------------------------------------------------------------------------
# toy90
# ---------------------------------------------------------------------------------------------
def _load_toy90(seed: int = 0) -> Dataset:
    X, _, _ = make_toy90(seed=seed)
    X = _binary_csr(*X.nonzero(), X.shape)
    density = X.nnz / (X.shape[0] * X.shape[1])
    return Dataset(
        name="toy90",
        X=X,
        row_labels=np.arange(X.shape[0]),
        col_labels=np.arange(X.shape[1]),
        source=(f"synthetic: epm_lib.datasets.make_toy90(seed={seed}), the example of Fig. 1a of "
                "Ohama et al. (2017) (ohama2017); no external data"),
        description=(f"Synthetic 90 x 90 binary matrix with five overlapping latent classes "
                     f"(blocks TOY90_BLOCKS), x_ij = 1 with probability 0.9 inside a class block "
                     f"(noisy-OR over covering blocks) and 0 outside; seed {seed}: {X.nnz} ones, "
                     f"density {density:.4f}. The class memberships are returned by make_toy90."),
    )


# ---------------------------------------------------------------------------------------------
# Enron09
# ---------------------------------------------------------------------------------------------
def _verified_enron_file(directory: Path, filename: str) -> Path:
    path = directory / filename
    if not path.is_file():
        raise DataNotFoundError(
            f"Enron09: {path} is missing. The Enron files are part of the epm-book repository "
            f"(data/enron/{filename}); restore them with `git checkout -- data/enron/` from the "
            f"repository's root (see data/enron/README.md for their origin).")
    got = _sha256_file(path)
    if got != ENRON_SHA256[filename]:
        raise ChecksumError(
            f"Enron09: {path} has sha256 {got}, expected {ENRON_SHA256[filename]}. The shipped "
            f"file was altered or damaged: restore it with `git checkout -- data/enron/{filename}` "
            f"(data/enron/README.md says where it comes from).")
    return path


def _enron_persons(path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """Vertices (e-mail addresses) -> persons: addresses with the same ``name`` are one person,
    an address whose name is ``NA`` stays alone. Persons are numbered in order of their first
    address. Returns (person index of each vertex, person labels, number of merged addresses)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != ["vertex", "email", "name", "note"]:
            raise DataError(f"{path}: unexpected header {header!r}")
        vertices = list(reader)
    person_of, labels, index = np.empty(len(vertices), dtype=np.int64), [], {}
    for v, row in enumerate(vertices):
        if len(row) != 4 or row[0] != str(v):
            raise DataError(f"{path}, line {v + 2}: expected 'vertex,email,name,note' with vertex {v}")
        _, email, name, _ = row
        key = name if name != "NA" else ("address", email)
        if key not in index:
            index[key] = len(labels)
            labels.append(name if name != "NA" else email)
        person_of[v] = index[key]
    return person_of, np.array(labels), len(vertices) - len(labels)


def _enron_records(path: Path, month: str) -> dict[str, np.ndarray]:
    """The (message, recipient) records of one UTC month ``"YYYY-MM"``: sender and recipient
    vertex ids and recipient type ("to", "cc", "bcc"). Lines of other months are skipped
    unparsed (the file's sha256 has been checked)."""
    if not re.fullmatch(r"\d{4}-\d{2}", month):
        raise ValueError(f"month must look like '2001-09', got {month!r}")
    lines = _decode(_read_bytes(path)).rstrip("\n").split("\n")
    if lines[0] != "time_utc,sender,recipient,reciptype":
        raise DataError(f"{path}: unexpected header {lines[0][:100]!r}")
    selected = [(n, line) for n, line in enumerate(lines[1:], start=2) if line.startswith(month)]
    rows = [line.split(",") for _, line in selected]
    for (lineno, line), r in zip(selected, rows):
        if len(r) != 4 or len(r[0]) != 19 or r[3] not in ("to", "cc", "bcc"):
            raise DataError(f"{path}, line {lineno}: expected 'YYYY-MM-DD HH:MM:SS,sender,recipient,"
                            f"to|cc|bcc', found {line[:100]!r}")
    where, linenos = str(path), [n for n, _ in selected]
    return {
        "sender": _as_numbers(_column(rows, 1), np.int64, linenos, where, "sender"),
        "recipient": _as_numbers(_column(rows, 2), np.int64, linenos, where, "recipient"),
        "type": _column(rows, 3),
    }


def _enron_matrix(records: dict, person_of: np.ndarray, n_persons: int,
                  recipients: str = "to") -> tuple[sp.csr_matrix, int]:
    """x_ij = 1 iff person i sent at least one e-mail with person j among its recipients
    ("to" only, or to/cc/bcc for ``recipients="all"``) in the records' month, i != j.
    Returns the matrix and the number of records used."""
    keep = np.ones(records["type"].size, dtype=bool)
    if recipients == "to":
        keep &= records["type"] == "to"
    s, r = person_of[records["sender"][keep]], person_of[records["recipient"][keep]]
    off_diagonal = s != r
    return _binary_csr(s[off_diagonal], r[off_diagonal], (n_persons, n_persons)), int(keep.sum())


def _load_enron09(recipients: str = "to") -> Dataset:
    if recipients not in ("to", "all"):
        raise ValueError(f"load('enron09', recipients=...): recipients must be 'to' (the default: "
                         f"'to' recipients only) or 'all' (to, cc and bcc), got {recipients!r}")
    directory = Path(ENRON_DIR)
    person_of, labels, n_merged = _enron_persons(_verified_enron_file(directory, "vertices.csv"))
    records = _enron_records(_verified_enron_file(directory, "records.csv.gz"), "2001-09")
    n = labels.size
    built = {v: _enron_matrix(records, person_of, n, v) for v in ("to", "all")}
    X, n_records = built[recipients]
    ones = {v: built[v][0].nnz for v in built}
    dens = {v: ones[v] / n**2 for v in built}
    other = "all" if recipients == "to" else "to"
    what = {"to": '"to" recipient', "all": "recipient (to, cc or bcc)"}
    return Dataset(
        name="enron09",
        X=X,
        row_labels=labels,
        col_labels=labels,
        source=("Enron e-mail corpus (Klimt & Yang 2004, klimt2004), the 184 addresses of "
                "Priebe et al. (2005, priebe2005; cis.jhu.edu/~parky/Enron/), as distributed in the "
                "R package igraphdata (data/enron.rda, commit 289b9c7b; licence CC BY-SA 4.0); "
                "plain-text copies data/enron/records.csv.gz and data/enron/vertices.csv (values "
                "unchanged, sha256 verified). See data/enron/README.md."),
        description=(
            f"Enron09: {n} x {n} persons, x_ij = 1 iff person i sent at least one e-mail with "
            f"person j as a {what[recipients]} in September 2001 (UTC, 2001-09-01 00:00:00 to "
            f"2001-09-30 23:59:59; {n_records} (message, recipient) records); self-loops dropped. "
            f"Persons: the {person_of.size} addresses merged by name ({n_merged} addresses merged "
            f"into other persons' entries; an address without a name stays alone). This variant "
            f"(recipients={recipients!r}): {ones[recipients]} ones, density {dens[recipients]:.4f}; "
            f"the other (recipients={other!r}): {ones[other]} ones, density {dens[other]:.4f}. "
            f"The paper reports density 0.016 (about 355 ones), which no public source reproduces; "
            f"the number of persons, 149, is reproduced exactly."),
    )


# ---------------------------------------------------------------------------------------------
# MovieLens
# ---------------------------------------------------------------------------------------------
_GROUPLENS = "https://files.grouplens.org/datasets/movielens/"
_MOVIELENS = {
    "movielens100k": dict(
        title="MovieLens 100K", folder="ml-100k", url=_GROUPLENS + "ml-100k.zip",
        # (file, separator, number of fields, header line or None, what the column ids are)
        files=[("u.data", "\t", 4, None, "GroupLens original; columns are movie ids 1..1682")],
        shape=(943, 1682), ones=55_375, paper_density=0.035,
        fingerprint="5e13ad03a0fc1304d68bb61c926ff96f4f0364ba7b241148d47d82aad627a1ad"),
    "movielens1m": dict(
        title="MovieLens 1M", folder="ml-1m", url=_GROUPLENS + "ml-1m.zip",
        files=[("ratings.dat", "::", 4, None, "GroupLens original; columns are the MovieIDs "
                "of the 3706 rated movies"),
               ("ratings.csv.gz", ",", 3, "user_id,item_index,rating", "CSV copy; columns are "
                "the 3706 rated movies numbered 1..3706 in increasing MovieID order")],
        shape=(6040, 3706), ones=575_281, paper_density=0.026,
        fingerprint="45b8fb9604a42bc4df091c80d20cd4a19d04c3412ca38d1ff7120c771a76a311"),
}


def _movielens_triples(path: Path, sep: str, ncols: int, header: str | None) -> np.ndarray:
    """(user, item, rating) int64 columns of a MovieLens ratings file."""
    body = full = _read_bytes(path)
    first_line = 1
    if header is not None:
        end = body.find(b"\n")
        got = _decode(body[: end if end >= 0 else len(body)]).strip()
        if got != header:
            raise DataError(f"{path}, line 1: expected the header {header!r}, found {got[:100]!r}")
        body, first_line = body[end + 1:] if end >= 0 else b"", 2
    table = _fast_numeric(body, sep, ncols, np.int64)
    if table is None:                               # irregular: parse line by line, name the line
        where = str(path)
        rows, linenos = _split_lines(_decode(full), sep, where, first_line, (ncols,))
        names = ("user id", "movie id", "rating", "timestamp")
        table = np.column_stack([_as_numbers(_column(rows, j), np.int64, linenos, where, names[j])
                                 for j in range(ncols)])
    return table[:, :3]


def _load_movielens(name: str, data_dir=None) -> Dataset:
    spec = _MOVIELENS[name]
    directory, how = _data_dir(data_dir)
    folder, primary = spec["folder"], spec["files"][0][0]
    candidates = [directory / folder / f[0] for f in spec["files"]]
    found = [(p, f) for p, f in zip(candidates, spec["files"]) if p.is_file()]
    if not found:
        expected = " or ".join(str(p) for p in candidates)
        raise DataNotFoundError(
            f"{spec['title']} not found: expected {expected} (data directory {directory}, {how}). "
            f"MovieLens may not be redistributed, so epm-book does not ship it. Download "
            f"{spec['url']} (GroupLens), unzip it and put {folder}/{primary} at "
            f"{directory / folder / primary}; or set the EPM_DATA_DIR environment variable to a "
            f"directory that holds {folder}/{primary} (e.g. `export EPM_DATA_DIR=/path/to/data`), "
            f"or pass data_dir=... to load().")
    path, (filename, sep, ncols, header, columns) = found[0]
    triples = _movielens_triples(path, sep, ncols, header)
    users, row = _relabel(triples[:, 0])
    items, col = _relabel(triples[:, 1])            # every rated movie is a column
    like = triples[:, 2] > 3
    X = _binary_csr(row[like], col[like], (users.size, items.size))
    got = (X.shape, X.nnz, fingerprint(X))
    expected = (spec["shape"], spec["ones"], spec["fingerprint"])
    if got != expected:
        raise ChecksumError(
            f"{spec['title']}: the matrix read from {path} is not the expected one: expected "
            f"{expected[0][0]} x {expected[0][1]} with {expected[1]:,} ones and fingerprint "
            f"{expected[2]}, got {got[0][0]} x {got[0][1]} with {got[1]:,} ones and fingerprint "
            f"{got[2]}. The file is incomplete or altered: replace it with the original from "
            f"{spec['url']} (unzipped: {folder}/{primary}), or point EPM_DATA_DIR at a directory "
            f"holding an intact {folder}/{primary}.")
    density = X.nnz / (X.shape[0] * X.shape[1])
    return Dataset(
        name=name,
        X=X,
        row_labels=users,
        col_labels=items,
        source=(f"{spec['title']}, GroupLens Research, University of Minnesota (Harper & Konstan "
                f"2015, harper2015movielens), {spec['url']}. Terms: research use only, no "
                f"redistribution, so it is not shipped with epm-book. Read from {folder}/{filename} "
                f"in the data directory ({columns}); verified: shape, ones and fingerprint "
                f"{spec['fingerprint'][:16]}..."),
        description=(f"{spec['title']}: {X.shape[0]} users x {X.shape[1]} movies (every movie with "
                     f"at least one rating), x_ij = 1 iff user i rated movie j above 3 (4 or 5 "
                     f"stars): {X.nnz} ones of {triples.shape[0]} ratings, density {density:.4f} "
                     f"(paper: {spec['paper_density']}). Rows: user ids; columns: movie ids, "
                     f"both increasing."),
    )


# ---------------------------------------------------------------------------------------------
# The public loaders
# ---------------------------------------------------------------------------------------------
#: Names :func:`load` knows, with the options each accepts (and their defaults).
DATASETS = {
    "toy90": {"seed": 0},
    "enron09": {"recipients": "to"},
    "movielens100k": {},
    "movielens1m": {},
}


def load(name: str, data_dir=None, **options) -> Dataset:
    """Load one of the paper's data sets (Sec. 5) as a binary :class:`Dataset`.

    Parameters
    ----------
    name : ``"toy90"`` (the synthetic 90x90 matrix of Fig. 1a, ``make_toy90(seed=0)``),
        ``"enron09"`` (149 Enron persons, e-mails of September 2001, shipped in ``data/enron``),
        ``"movielens100k"``, ``"movielens1m"`` (x = 1 iff rating > 3; read from the data
        directory and verified against the recorded fingerprint).
    data_dir : directory holding ``ml-100k/u.data`` and ``ml-1m/ratings.dat`` (or
        ``ml-1m/ratings.csv.gz``); default ``$EPM_DATA_DIR``, else the repository's ``data/``.
        Only MovieLens is read from it (toy90 is generated, Enron is shipped).
    **options : ``seed`` for toy90 (default 0); ``recipients`` for enron09: ``"to"`` (default,
        x_ij = 1 iff i sent at least one e-mail to j as a "to" recipient, 441 ones) or
        ``"all"`` (to, cc or bcc, 500 ones).

    Raises :class:`DataNotFoundError` (missing file: the message says what to put where and
    where to download it), :class:`ChecksumError` (altered or incomplete file),
    :class:`DataError` (malformed file, unknown name).
    """
    key = str(name).lower()
    if key not in DATASETS:
        raise DataError(f"unknown data set {name!r}; known: {', '.join(DATASETS)} "
                        f"(for your own file use epm_lib.datasets.load_file(path))")
    unknown = sorted(set(options) - set(DATASETS[key]))
    if unknown:
        accepted = ", ".join(DATASETS[key]) or "none"
        raise TypeError(f"load({key!r}) got unexpected option(s) {', '.join(unknown)}; "
                        f"it accepts: {accepted}")
    if key == "toy90":
        return _load_toy90(**options)
    if key == "enron09":
        return _load_enron09(**options)
    return _load_movielens(key, data_dir)


_SEP_BY_SUFFIX = {".csv": ",", ".tsv": "\t", ".tab": "\t"}


def _guess_sep(path: Path, line: str) -> str | None:
    stem = path.with_suffix("") if path.suffix.lower() in (".gz", ".bz2", ".xz") else path
    if stem.suffix.lower() in _SEP_BY_SUFFIX:
        return _SEP_BY_SUFFIX[stem.suffix.lower()]
    for sep in (",", "\t", ";", "::"):
        if sep in line:
            return sep
    return None


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _is_header(where: str, lines: list, fields: list[list[str]]) -> bool:
    """Whether the first data line is a header (``header=None``): only when it clearly is one,
    i.e. every field is a name (not a number, not empty) and either it has three fields (a
    value column: numbers on every data line) or the next line's fields are all numbers. A line
    of numbers is data; so is a line with an empty field or three fields with a number among
    them (names as ids, or a stray token, reported when the line is read), and so is a line
    of one field followed by another (a wrong separator: reported as a wrong number of
    fields). Raises :class:`DataError` when it cannot tell (two fields, not all numbers, not
    clearly a header)."""
    (lineno, _, line), first = lines[0], fields[0]
    number = [_is_number(f) for f in first]
    after = fields[1] if len(fields) > 1 else None
    if all(number) or "" in first or (len(first) == 1 and (after is None or len(after) == 1)):
        return False              # (one field per line: the separator is wrong, said as data)
    after_numbers = after is not None and all(_is_number(f) for f in after)
    if not any(number) and (len(first) == 3 or after_numbers):
        return True
    if any(number) and len(first) != 2:
        return False
    if any(number):
        names = ", ".join(repr(f[:30]) for f, n in zip(first, number) if not n)
        raise DataError(
            f"{where}, line {lineno}: cannot tell whether {line[:60]!r} is a header: {names} is not "
            f"a number but the other field is, so it is neither clearly a header (a header has no "
            f"numbers) nor clearly data; pass header=True or header=False (with header=False, a "
            f"column whose ids are not all integers is read as strings)")
    alone = "" if after is not None else " (then the file has no data rows) or its one edge"
    raise DataError(f"{where}: cannot tell whether line {lineno} ({line[:60]!r}) is a header"
                    f"{alone}; pass header=True or header=False")


# ---------------------------------------------------------------------------------------------
# load_file's checks before parsing: its options, and that the file is text
# ---------------------------------------------------------------------------------------------
def _option_error(path, option: str, value, must: str) -> DataError:
    return DataError(f"load_file({path}): {option}={_short_repr(value)} cannot be used: "
                     f"{option} must be {must}")


def _short_repr(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def _check_flag(path, option: str, value, none_means: str | None = None) -> bool | None:
    """``value`` as a bool (numpy's too), or None when ``none_means`` says what None is; a
    string ("false" is truthy), a number (header=0 is pandas' "line 0 is the header") ... is
    refused."""
    if value is None and none_means is not None:
        return None
    if _is_bool(value):
        return bool(value)
    raise _option_error(path, option, value, "True or False" + (f", or None ({none_means})"
                                                                 if none_means else ""))


def _check_threshold(path, threshold) -> int | float | None:
    """A finite real number (int, float, numpy number, Fraction ...) as an int or a float."""
    if threshold is None:
        return None
    must = ("a finite real number such as 3 (x_ij = 1 iff a value > 3), or None (x_ij = 1 "
            "iff a value != 0)")
    if _is_bool(threshold) or not isinstance(threshold, numbers.Real):
        raise _option_error(path, "threshold", threshold, must)
    try:
        value = float(threshold)
    except OverflowError:                                # an int beyond the floats
        value = math.inf
    if not math.isfinite(value):
        raise _option_error(path, "threshold", threshold, must)
    return int(threshold) if isinstance(threshold, numbers.Integral) else value


def _check_sep(path, sep) -> str | None:
    if sep is None or (isinstance(sep, str) and sep and "\n" not in sep and "\r" not in sep):
        return sep
    raise _option_error(path, "sep", sep, "a non-empty string without line breaks, such as "
                        "',', '\\t' or '::' (' ': runs of whitespace), or None (guessed)")


def _check_shape(path, shape, square: bool) -> tuple[int, int] | None:
    """Two non-negative integers (Python's or numpy's; not floats, bools or strings)."""
    if shape is None:
        return None
    must = "two non-negative integers (n_rows, n_cols) such as (943, 1682), or None"
    if not isinstance(shape, (tuple, list, np.ndarray)) or len(shape) != 2:
        raise _option_error(path, "shape", shape, must)
    sizes = []
    for n in shape:
        try:
            size = None if _is_bool(n) else operator.index(n)
        except TypeError:
            size = None
        if size is None or size < 0:
            raise _option_error(path, "shape", shape,
                                f"{must}; {_short_repr(n)} ({type(n).__name__}) is not one")
        sizes.append(size)
    if square and sizes[0] != sizes[1]:
        raise DataError(f"load_file({path}): square=True needs a square shape (rows and columns "
                        f"are one set of nodes), got shape={tuple(sizes)}")
    return sizes[0], sizes[1]


def _check_name(path, name) -> str:
    if name is None:
        return path.name
    if isinstance(name, str) and name:
        return name
    raise _option_error(path, "name", name, "a non-empty string, or None (the file's name)")


#: What a compressed or binary file starts with: (signature, what it is, the suffix under which
#: load_file would decompress it).
_SIGNATURES = (
    (b"\x1f\x8b", "gzip-compressed data", ".gz"),
    (b"BZh", "bzip2-compressed data", ".bz2"),
    (b"\xfd7zXZ\x00", "xz-compressed data", ".xz"),
    (b"(\xb5/\xfd", "zstd-compressed data", None),
    (b"PK\x03\x04", "a ZIP archive (or an .xlsx/.ods spreadsheet)", None),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE document (e.g. an .xls spreadsheet)", None),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", None),
    (b"\xff\xd8\xff", "a JPEG image", None),
    (b"%PDF-", "a PDF document", None),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file", None),
    (b"\x93NUMPY", "a NumPy .npy file", None),
    (b"SQLite format 3\x00", "an SQLite database", None),
)
#: Bytes a text file of edges never holds: the C0 controls but \t \n \v \f \r, and DEL.
_CONTROL = bytes([*range(0, 9), *range(14, 32), 127])
_NOT_CONTROL = bytes(sorted(set(range(256)) - set(_CONTROL)))
_LONE_CR = re.compile(rb"\r[^\r\n]")                   # a \r that does not end a line
_EXPORT_ADVICE = ("load_file reads text edge lists (CSV, TSV, whitespace-separated; UTF-8 or "
                  "Latin-1) and Matrix Market files: export the data as one of these")


def _line_at(body: bytes, pos: int) -> tuple[int, str]:
    """The (1-based) number and the text of the line holding byte ``pos``."""
    start, end = body.rfind(b"\n", 0, pos) + 1, body.find(b"\n", pos)
    return body.count(b"\n", 0, pos) + 1, _decode(body[start:end if end >= 0 else len(body)])


def _check_text(path, body: bytes, sep: str | None) -> None:
    """Refuse what is not a text file of lines: binary data (a compressed file without its
    suffix, an image, a spreadsheet, ...), a control character (a NUL byte in an id, ...) and
    a carriage return inside a line (classic Mac line ends, which would join lines). A control
    character that is the separator ``sep`` is allowed."""
    controls = body.translate(None, _NOT_CONTROL)
    if sep is not None:
        controls = controls.translate(None, sep.encode())
    if controls:
        pos = min(body.find(bytes([c])) for c in set(controls))
        lineno, line = _line_at(body, pos)
        char = f"control character {chr(body[pos])!r}" + (" (a NUL byte)" if body[pos] == 0 else "")
        signature = next((sig for sig in _SIGNATURES if body.startswith(sig[0])), None)
        if signature is not None:
            _, what, suffix = signature
            advice = (f"name it {path.name}{suffix} (load_file decompresses .gz, .bz2 and .xz "
                      f"files by their name) or decompress it" if suffix else _EXPORT_ADVICE)
            raise DataError(f"{path}: not a text file of edges: it is {what}; {advice}")
        if len(controls) > max(8, len(body) // 100):
            utf16 = ("; if it is UTF-16 or UTF-32 text without a byte-order mark, save it as UTF-8"
                     if b"\x00" in controls else "")
            raise DataError(f"{path}: not a text file of edges: it holds binary data "
                            f"({len(controls)} control characters; the first, {char}, on line "
                            f"{lineno}); {_EXPORT_ADVICE}{utf16}")
        raise DataError(f"{path}, line {lineno}: {char} in {line[:100]!r}; ids and values must be "
                        f"printable text: remove it (or fix what wrote the file)")
    match = _LONE_CR.search(body) if b"\r" in body else None
    if match:
        lineno, line = _line_at(body, match.start())
        raise DataError(f"{path}, line {lineno}: a carriage return (\\r) inside the line "
                        f"{line[:100]!r}; lines must end in \\n or \\r\\n: convert the "
                        f"file's line ends (classic Mac files end lines in \\r alone)")


def load_file(path, *, threshold: float | None = None, sep: str | None = None,
              one_based: bool | None = None, shape: tuple[int, int] | None = None,
              header: bool | None = None, square: bool = False, name: str | None = None) -> Dataset:
    """Read your own binary (or thresholded) matrix into a :class:`Dataset`.

    Two formats:

    - a triplet / edge-list file (CSV, TSV, whitespace; optionally .gz/.bz2/.xz; UTF-8 or
      Latin-1, a byte-order mark is dropped and UTF-16/32 with one is read too): one line per
      pair ``row, col`` or ``row, col, value``; blank lines and lines starting with ``#`` or
      ``%`` are skipped wherever they are (a ``#`` after data on a line is not a comment).
      Fields may be quoted (``"Heat, the film"``). x_ij = 1 iff some line for (i, j) has value
      > ``threshold`` (``threshold=None``: value != 0; without a value column every listed pair
      is a one). Every value must be a finite number: an empty, NaN, infinite or non-numeric
      value, a NaN or infinite id among numeric ids, or a line with another number of fields
      is a :class:`DataError` naming the file, the line and the field.
    - a Matrix Market file (``.mtx``, ``.mtx.gz``): coordinate or array, pattern, integer or
      real; the same rule on its values (NaN or infinite values are errors). Its shape is
      kept and its labels are 1..n.

    Either must be text: binary data (a compressed file without its suffix, an image, a
    spreadsheet, ...), a control character (a NUL byte in an id, ...) or a carriage return
    inside a line (classic Mac line ends) is a :class:`DataError` naming the file (and the
    line); so is an option of the wrong kind (below), before the file is read.

    Parameters
    ----------
    threshold : a finite real number: x = 1 iff value > threshold (e.g. 3 for ratings 4 and 5).
    sep : field separator, a non-empty string without line breaks; default from the suffix
        (.csv ",", .tsv/.tab tab), else the first of ``,`` tab ``;`` ``::`` found on the first
        data line, else runs of whitespace (also ``sep=" "``).
    one_based : True or False (numpy's too; not 0/1 or strings, as for ``header`` and
        ``square``). With ``shape``, ids are indices: row id k is row k - 1 if ``one_based``
        else row k (default False). Matrix Market is 1-based by definition.
    shape : (n_rows, n_cols), two non-negative integers (Python's or numpy's; not floats,
        which are not rounded). Without it the rows (columns) are the distinct row (column) ids
        occurring on any line, sorted (numerically if all ids are integers, also written
        ``1.0`` or ``1e3``, else as strings), relabelled 0..n-1 with the ids kept as labels.
        With it, ids must be integers within the shape and all-zero rows/columns are kept.
    header : whether the first data line is a header; default: detected, and only when it
        clearly is one: every field is a name (not a number, not empty) and it has three
        fields (a value column) or the next line's fields are all numbers. A line of numbers,
        or of three fields with a number among them (names as ids, or a stray token such as
        ``1,2,x``, which is then an error), is data. A two-field first line that is neither
        (``1,x``; ``a,b`` followed by ``c,d``) is an error: pass ``header=`` explicitly.
    square : rows and columns are the same set of nodes (a directed graph's edge list):
        one sorted label set for both axes.
    name : the Dataset's name, a non-empty string (default: the file's name).
    """
    path = Path(path).expanduser()
    threshold = _check_threshold(path, threshold)
    sep = _check_sep(path, sep)
    one_based = _check_flag(path, "one_based", one_based,
                            "the default: 1-based for Matrix Market, else 0-based")
    header = _check_flag(path, "header", header, "detect a header line")
    square = _check_flag(path, "square", square)
    shape = _check_shape(path, shape, square)
    name = _check_name(path, name)
    if not path.is_file():
        raise DataNotFoundError(f"load_file: {path} does not exist (or is not a file)")
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    body = _strip_bom(_read_bytes(path), str(path))
    stem = path.with_suffix("") if path.suffix.lower() in (".gz", ".bz2", ".xz") else path
    mtx = stem.suffix.lower() == ".mtx"
    _check_text(path, body, None if mtx else sep)      # (scipy's .mtx reader crashes on a NUL)
    if mtx:
        return _load_mtx(path, body, digest, threshold, one_based, shape, square, name)
    return _load_triplets(path, body, digest, threshold, sep, bool(one_based), shape, header,
                          square, name)


def _load_mtx(path, body, digest, threshold, one_based, shape, square, name) -> Dataset:
    import scipy.io

    if one_based is False:
        raise DataError(f"load_file({path}): Matrix Market indices are 1-based by definition; "
                        "one_based=False is not possible for a .mtx file")
    try:
        info = scipy.io.mminfo(io.BytesIO(body))
        M = scipy.io.mmread(io.BytesIO(body))
    except Exception as e:                      # scipy raises various types for broken files
        raise DataError(f"{path}: not a valid Matrix Market file ({type(e).__name__}: {e})") from e
    field = info[4]
    if field == "complex":
        raise DataError(f"{path}: complex Matrix Market values cannot define a binary matrix")
    if field == "pattern" and threshold is not None:
        raise DataError(f"load_file({path}): threshold={threshold} given but the file is a "
                        f"pattern file (no values); leave threshold=None")
    if info[3] == "array":                      # dense: every entry is listed, zeros too
        dense = np.asarray(M)
        coo = sp.coo_matrix((dense.ravel(), np.divmod(np.arange(dense.size), dense.shape[1])),
                            shape=dense.shape) if dense.size else sp.coo_matrix(dense.shape)
    else:
        coo = sp.coo_matrix(M)
    if field != "pattern" and not np.all(np.isfinite(coo.data)):
        raise DataError(_mtx_not_finite(path, body))
    if shape is not None and tuple(coo.shape) != shape:
        raise DataError(f"{path}: the file's shape is {coo.shape[0]} x {coo.shape[1]}, "
                        f"but shape={shape} was given")
    if square and coo.shape[0] != coo.shape[1]:
        raise DataError(f"{path}: square=True but the matrix is {coo.shape[0]} x {coo.shape[1]}")
    if field == "pattern":
        keep = np.ones(coo.nnz, dtype=bool)
        rule = "(i, j) is listed"
    elif threshold is None:
        keep = coo.data != 0
        rule = "its value is non-zero"
    else:
        keep = coo.data > threshold
        rule = f"its value > {threshold}"
    X = _binary_csr(coo.row[keep], coo.col[keep], coo.shape)
    return _user_dataset(name, X, np.arange(1, coo.shape[0] + 1), np.arange(1, coo.shape[1] + 1),
                         path, digest, f"Matrix Market ({info[3]}, {field}, {info[5]})", rule,
                         "rows and columns are the file's 1-based indices (labels 1..n)")


def _mtx_not_finite(path, body: bytes) -> str:
    """The message for a Matrix Market file with a NaN or infinite value: its first such line."""
    size_line_seen = False
    for lineno, line in enumerate(_decode(body).split("\n"), start=1):
        tokens = line.split()
        if not tokens or tokens[0].startswith("%"):
            continue
        if not size_line_seen:                         # the line "rows cols [entries]"
            size_line_seen = True
            continue
        try:
            value = float(tokens[-1])
        except ValueError:
            continue
        if not np.isfinite(value):
            return (f"{path}, line {lineno}: value {tokens[-1][:50]!r} {_not_finite(value)}; "
                    f"every value must be a finite number")
    return f"{path}: a value is NaN or infinite; every value must be a finite number"


def _load_triplets(path, body, digest, threshold, sep, one_based, shape, header, square,
                   name) -> Dataset:
    where = str(path)
    # locate the first data line (skipping blank and comment lines) and, if any, the header
    lines, pos, lineno = [], 0, 0
    while len(lines) < 2 and pos < len(body):
        end = body.find(b"\n", pos)
        end = len(body) if end < 0 else end
        lineno += 1
        line = _decode(body[pos:end])
        if not _is_comment(line):
            lines.append((lineno, pos, line.strip()))
        pos = end + 1
    if not lines:
        raise DataError(f"{where}: no data lines (empty, or only blank/comment lines)")
    if sep is None:
        sep = _guess_sep(path, lines[0][2])
    elif sep == " ":
        sep = None
    fields = [_split_fields(line, sep, where, lineno) for lineno, _, line in lines]
    if header is None:
        header = _is_header(where, lines, fields)
    if header and len(lines) < 2:
        raise DataError(f"{where}: the file has no data rows: line {lines[0][0]} "
                        f"({lines[0][2][:60]!r}) is its header and no data line follows it; add "
                        f"the rows (row, column[, value]) below it, or pass header=False if the "
                        f"line is data")
    data_line = lines[1] if header else lines[0]
    ncols = len(fields[1] if header else fields[0])
    if ncols not in (2, 3):
        raise DataError(f"{where}, line {data_line[0]}: expected 2 or 3 fields (row, column[, "
                        f"value]) separated by {_sep_text(sep)}, found {ncols}: "
                        f"{data_line[2][:100]!r}")
    table = _table_parse(body[data_line[1]:], sep, ncols)
    if table is not None:
        ids, values = table
    else:                            # irregular: read line by line, name the line at fault
        rows, linenos = _split_lines(_decode(body), sep, where, data_line[0], (ncols,))
        ids = [_id_column(_column(rows, j), linenos, where, what)
               for j, what in ((0, "row id"), (1, "column id"))]
        values = _value_column(_column(rows, 2), linenos, where) if ncols == 3 else None
    if values is None and threshold is not None:
        raise DataError(f"load_file({path}): threshold={threshold} given but the file has no "
                        f"value column (2 fields per line); leave threshold=None")
    n_lines = ids[0].size
    if square or shape is not None:
        if (ids[0].dtype.kind == "i") != (ids[1].dtype.kind == "i"):
            ids = [i.astype(str) for i in ids]
    if shape is None:
        if square:
            labels, both = _relabel(np.concatenate(ids))
            row_labels = col_labels = labels
            index = [both[:n_lines], both[n_lines:]]
        else:
            (row_labels, r), (col_labels, c) = (_relabel(i) for i in ids)
            index = [r, c]
        order = "numerically" if row_labels.dtype.kind == "i" and col_labels.dtype.kind == "i" \
            else "as strings"
        layout = (f"{'nodes' if square else 'rows and columns'} are the distinct ids in the file, "
                  f"sorted {order}, relabelled 0..n-1 (labels keep the ids)")
    else:
        offset = 1 if one_based else 0
        index = []
        for j, (i, n, axis) in enumerate(zip(ids, shape, ("row", "column"))):
            if i.dtype.kind != "i":
                raise DataError(f"{where}: shape={shape} given, so ids must be integers; "
                                f"{axis} id {str(i[0])[:50]!r} is not")
            k = i - offset
            bad = np.flatnonzero((k < 0) | (k >= n))
            if bad.size:
                raise DataError(f"{where}: {axis} id {i[bad[0]]} is outside {offset}..{n - 1 + offset} "
                                f"(shape={shape}, one_based={bool(one_based)})")
            index.append(k)
        row_labels = np.arange(shape[0]) + offset
        col_labels = np.arange(shape[1]) + offset
        layout = f"ids are {'1' if one_based else '0'}-based indices into the given shape {shape}"
    n_rows, n_cols = row_labels.size, col_labels.size
    if values is None:
        keep, rule = np.ones(n_lines, dtype=bool), "(i, j) is listed"
    elif threshold is None:
        keep, rule = values != 0, "a line for (i, j) has a non-zero value"
    else:
        keep, rule = values > threshold, f"a line for (i, j) has value > {threshold}"
    X = _binary_csr(index[0][keep], index[1][keep], (n_rows, n_cols))
    n_pairs = _sorted_unique(index[0].astype(np.int64) * max(n_cols, 1) + index[1]).size
    dup = f"; {n_lines - n_pairs} repeated pairs merged" if n_pairs < n_lines else ""
    fmt = f"{n_lines} lines of {ncols} fields separated by {_sep_text(sep)}" \
          f"{', header skipped' if header else ''}{dup}"
    return _user_dataset(name, X, row_labels, col_labels, path, digest, fmt, rule, layout)


def _user_dataset(name, X, row_labels, col_labels, path, digest, fmt, rule, layout) -> Dataset:
    n_rows, n_cols = X.shape
    density = X.nnz / (n_rows * n_cols) if n_rows * n_cols else 0.0
    return Dataset(
        name=name,
        X=X,
        row_labels=row_labels,
        col_labels=col_labels,
        source=f"user file {path.name} (sha256 {digest}), read by epm_lib.datasets.load_file",
        description=(f"{name}: {n_rows} x {n_cols} binary matrix from {path.name} ({fmt}); "
                     f"x_ij = 1 iff {rule}; {X.nnz} ones, density {density:.4f}; {layout}."),
    )
