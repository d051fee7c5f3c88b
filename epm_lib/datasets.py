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

Where the code lives
    This module owns the named data sets: ``make_toy90`` and ``TOY90_BLOCKS``, the Enron09 and
    MovieLens loaders, :func:`load` and ``DATASETS``, and where the data are read from
    (``ENRON_DIR``, ``_data_dir``). It builds on :mod:`epm_lib.dataset_core` (:class:`Dataset`,
    the errors, :func:`fingerprint`), :mod:`epm_lib.text_table` (parsing delimited text) and
    :mod:`epm_lib.edge_files` (:func:`load_file`), and re-exports their public names, so
    ``from epm_lib.datasets import Dataset, load_file, DataError`` works.
"""
from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .dataset_core import (ChecksumError, DataError, DataNotFoundError, Dataset, _binary_csr,
                           _unique_inverse, _sha256_file, fingerprint)
from .edge_files import load_file  # noqa: F401  (re-exported)
from .text_table import _as_numbers, _column, _decode, _fast_numeric, _read_bytes, _split_lines

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
    users, row = _unique_inverse(triples[:, 0])
    items, col = _unique_inverse(triples[:, 1])     # every rated movie is a column
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

