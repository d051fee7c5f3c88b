"""Byte-level reading of delimited text files: the parsing that ``load_file`` (a user's edge
list) and the MovieLens loader share.

Owns reading a file's bytes, decompressed by its suffix (``_read_bytes``), and dropping or
converting a byte-order mark (``_strip_bom``); the fast paths, pandas' C parser for a user's
table (``_table_parse``, ``_read_table``) and a vectorised numeric parser for MovieLens
(``_fast_numeric``); and the line-by-line slow path that either falls back to when anything is
irregular, which names the first malformed line (``_split_lines``, ``_split_fields``,
``_column``, ``_as_numbers``, ``_id_column``, ``_value_column``). Every error is a
:class:`~epm_lib.dataset_core.DataError` naming the file and the line.

Imports only :mod:`epm_lib.dataset_core`; used by :mod:`epm_lib.edge_files` and
:mod:`epm_lib.datasets`.
"""
from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import lzma
import re
import warnings
import zlib
from pathlib import Path

import numpy as np

from .dataset_core import DataError


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

