"""A user's own file of edges: :func:`load_file`, its option checks and its two readers.

Owns :func:`load_file` (a triplet / edge-list file, CSV, TSV, whitespace-separated, optionally
compressed, or a Matrix Market file -> a :class:`~epm_lib.dataset_core.Dataset`); the checks of
its options before anything is read (``_check_threshold``, ``_check_sep``, ``_check_flag``,
``_check_shape``, ``_check_name``) and of the file being text (``_check_text``); the guesses of
the separator and of a header line (``_guess_sep``, ``_is_header``); and the two readers,
``_load_mtx`` (Matrix Market, via scipy) and ``_load_triplets`` (a table, parsed by
:mod:`epm_lib.text_table`).

Imports :mod:`epm_lib.dataset_core` and :mod:`epm_lib.text_table`; used through
:mod:`epm_lib.datasets`, which re-exports :func:`load_file`.
"""
from __future__ import annotations

import hashlib
import io
import math
import numbers
import operator
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .dataset_core import (Dataset, DataError, DataNotFoundError, _binary_csr, _unique_inverse,
                           _sorted_unique)
from .text_table import (_column, _decode, _id_column, _is_comment, _not_finite, _read_bytes,
                         _sep_text, _split_fields, _split_lines, _strip_bom, _table_parse,
                         _value_column)

__all__ = ["load_file"]


# ---------------------------------------------------------------------------------------------
# Guessing the separator and whether the first line is a header
# ---------------------------------------------------------------------------------------------
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
            labels, both = _unique_inverse(np.concatenate(ids))
            row_labels = col_labels = labels
            index = [both[:n_lines], both[n_lines:]]
        else:
            (row_labels, r), (col_labels, c) = (_unique_inverse(i) for i in ids)
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
