"""The experiments of Sec. 5: cross-validation folds, one result file per run, the grid, a CLI.

Sec. 5 of the paper evaluates every model by 10-fold cross-validation over *all* I x J
entries of a binary matrix: the entries of a fold are held out as test entries, set to zero
in the training matrix ("we set all the selected test entries as zero during the inference
period"), and scored by the TDLL and TDAUC-PR of the posterior mean link probability over the
last 100 of 600 Gibbs iterations. This module runs that protocol; ``epm_lib.fit`` does the
sampling and ``epm_lib.metrics`` the scoring. The chapters of Part III read the result files
back (``load_results``, ``summarize``) to draw Figs. 2-4.

- :func:`cv_folds` / :func:`cv_fold`: the folds, a seeded permutation of the linear indices
  ``i * J + j`` cut into ``n_folds`` contiguous pieces (sizes differ by at most one), each
  returned as sorted ``(rows, cols)``;
- :func:`split`: ``X`` -> (training matrix with the fold's entries set to zero,
  ``test = (rows, cols, labels)``), the ``test`` argument of ``epm_lib.fit``;
- :class:`Run`: one run, i.e. (data set, model, T or K_init, fold, seed, n_iter, n_avg);
  :func:`run_one` fits it and returns its *record*, a small JSON-ready dict of numbers
  (no samples), written by :func:`write_record` to ``results/<dataset>/<run-id>.json``
  (temp file + ``os.replace``, so a file is either complete or absent);
- :func:`grid` builds the runs of the paper's grid and :func:`run_grid` runs the missing ones
  through joblib (processes, all cores by default; a Dask cluster with
  ``joblib.parallel_config(backend="dask")``), writing each record as soon as its run ends,
  so an interrupted grid resumes where it stopped. A run counts as done only if its record was
  computed from the data now loaded (same ``datasets.fingerprint``, :func:`plan`): a record of
  other data (an edited file, another file of the same name) is *stale*, and the grid stops
  with :class:`StaleResultsError` unless told to recompute it. Workers that the grid's process
  started exit when that process dies (e.g. SIGKILL), instead of finishing an hour-long run;
- :func:`load_results`, :func:`summarize`, :func:`format_summary`: mean +/- standard error
  over folds per (data set, model, T);
- ``python -m epm_lib.experiments --help``: the command line.

Model names of the grid: ``"EPM"``, ``"CEPM"``, ``"DEPM"``, ``"IDEPM"`` (the samplers with the
corrected updates) and the updates as the paper prints them: ``"EPMpaper"`` and
``"CEPMpaper"`` (``a_update="paper"``, errata E3, E4), ``"IDEPMpaper"`` (``m_step="paper"``,
erratum E6). The result record's format is described in ``results/README.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import re
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import datasets as _datasets
from .fit import DEFAULT_K_INIT, fit, missing_mask, prepare_matrix
from .interrupt import ignore_sigint_in_worker

__all__ = [
    "PAPER_T", "PAPER_MODELS", "MODELS", "RECORD_FORMAT",
    "cv_permutation", "cv_folds", "cv_fold", "split", "pair_folds", "hold_out",
    "DataSpec", "Run", "grid", "run_one", "make_record", "write_record", "read_record",
    "plan", "Plan", "run_grid", "GridReport", "GridError", "StaleResultsError",
    "load_results", "summarize", "format_summary", "main", "HELDOUT",
    "BASELINE_FORMAT", "baseline_path", "baseline_record", "read_baseline", "run_baselines",
    "load_baselines", "CONVERGED_FORMAT", "ConvergedRun", "run_converged", "read_converged",
    "load_converged", "converged_checkpoint",
]

#: Truncation levels of Sec. 5 (Figs. 2 and 4).
PAPER_T = (2, 4, 8, 16, 32, 64, 128)
#: The grid's models: the three truncated samplers, the EPM with the a-update as printed, the IDEPM.
PAPER_MODELS = ("EPM", "EPMpaper", "CEPM", "DEPM", "IDEPM")
#: Model name -> (sampler, a_update, m_step) passed to ``epm_lib.fit``.
MODELS = {
    "EPM": ("EPM", "exact", "exact"),
    "EPMpaper": ("EPM", "paper", "exact"),
    "CEPM": ("CEPM", "exact", "exact"),
    "CEPMpaper": ("CEPM", "paper", "exact"),
    "DEPM": ("DEPM", "exact", "exact"),
    "IDEPM": ("IDEPM", "exact", "exact"),
    "IDEPMpaper": ("IDEPM", "exact", "paper"),
}
_MODEL_ORDER = {m: k for k, m in enumerate(MODELS)}
#: Version tag of the result files (bump when the layout changes).
RECORD_FORMAT = "epm-book run record 1"
#: Defaults of Sec. 5 (a run id mentions a setting only when it differs from these).
DEFAULT_N_AVG, DEFAULT_N_FOLDS, DEFAULT_CV_SEED = 100, 10, 0
#: How held-out entries enter training: observed zeros (Sec. 5) or missing (masked).
HELDOUT = ("zeros", "missing")
#: Significant digits of the traces in a record.
TRACE_DIGITS = 6


def _canonical_model(name) -> str:
    if isinstance(name, str):
        for m in MODELS:
            if m.lower() == name.lower():
                return m
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def _int(name, v, lo=0):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


# ---------------------------------------------------------------------------------------------
# Cross-validation folds
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Data sets and runs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataSpec:
    """A data set named so that every worker can load it itself (nothing big is pickled).

    ``DataSpec("enron09")`` is one of ``epm_lib.datasets.DATASETS`` (``options``: that
    loader's options, e.g. ``(("recipients", "all"),)``); ``DataSpec.from_file(path, ...)``
    is a user's file read by ``epm_lib.datasets.load_file`` (the path must be readable by
    the workers, e.g. on a shared file system for a Dask cluster). ``data_dir`` is where
    MovieLens is read from (default ``$EPM_DATA_DIR``). ``name`` is the folder of the results.
    """
    name: str
    path: str | None = None
    options: tuple = ()
    data_dir: str | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(sorted(dict(self.options).items())))
        if self.path is None:
            key = str(self.name).lower()
            if key not in _datasets.DATASETS:
                raise _datasets.DataError(
                    f"unknown data set {self.name!r}; known: {', '.join(_datasets.DATASETS)} "
                    f"(or give the path of your own file)")
            object.__setattr__(self, "name", key)
            unknown = sorted(set(dict(self.options)) - set(_datasets.DATASETS[key]))
            if unknown:
                raise ValueError(f"data set {key!r} has no option(s) {', '.join(unknown)}; "
                                 f"it accepts: {', '.join(_datasets.DATASETS[key]) or 'none'}")
        elif str(self.name).lower() in _datasets.DATASETS:
            raise ValueError(f"a file's data set cannot be named {self.name!r}, the name of a "
                             f"built-in data set (its results folder); rename the file or give name=")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", self.name):
            raise ValueError(f"data set name {self.name!r} cannot name a results folder; "
                             f"use letters, digits, '.', '_', '+', '-'")

    @classmethod
    def from_file(cls, path, name=None, **options):
        """A user's triplet / Matrix Market file (``options``: those of ``datasets.load_file``)."""
        p = Path(path).expanduser()
        if not p.is_file():
            raise _datasets.DataNotFoundError(f"{p} does not exist (or is not a file)")
        if name is None:
            name = p.name
            for suffix in (".gz", ".bz2", ".xz"):
                name = name.removesuffix(suffix)
            name = Path(name).stem
            name = re.sub(r"[^A-Za-z0-9._+-]", "_", name).lstrip("._+-") or "data"
        return cls(name=name, path=str(p.resolve()), options=tuple(options.items()))

    @classmethod
    def parse(cls, text, data_dir=None, **file_options):
        """A data set from the command line: a known name, else an existing file."""
        if isinstance(text, DataSpec):
            return text
        if str(text).lower() in _datasets.DATASETS:
            return cls(str(text), data_dir=None if data_dir is None else str(data_dir))
        if Path(str(text)).expanduser().is_file():
            return cls.from_file(text, **file_options)
        raise _datasets.DataError(f"unknown data set {text!r}: neither one of "
                                  f"{', '.join(_datasets.DATASETS)} nor an existing file")

    @property
    def folder(self) -> str:
        """Results sub-folder: the name, plus non-default loader options of a named data set."""
        if self.path is not None:
            return self.name
        defaults = _datasets.DATASETS[self.name]
        extra = [f"{k}-{v}" for k, v in self.options if defaults.get(k) != v]
        return "_".join([self.name] + extra)

    def _file_state(self):
        """What tells an edited or replaced file from the one read before, without reading it:
        device, inode, size, modification and change time (ns; the change time cannot be set
        back). ``None`` for a named data set (verified by its loader)."""
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise _datasets.DataNotFoundError(f"{self.path}: cannot be read ({e.strerror})") from None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _entry(self) -> list:
        """The cache entry ``[file state, Dataset, fingerprint or None]``, (re)loaded if absent
        or if the file changed since it was read."""
        state = self._file_state()
        with _CACHE_LOCK:
            entry = _DATA_CACHE.get(self)
        if entry is None or entry[0] != state:
            if self.path is None:
                ds = _datasets.load(self.name, data_dir=self.data_dir, **dict(self.options))
            else:
                ds = _datasets.load_file(self.path, name=self.name, **dict(self.options))
            entry = [state, ds, None]
            with _CACHE_LOCK:
                _DATA_CACHE[self] = entry
        return entry

    def load(self) -> _datasets.Dataset:
        """Load the data set (cached per process: the grid's workers load each one once; a
        user's file is read again when it changed)."""
        return self._entry()[1]

    def fingerprint(self) -> str:
        """``datasets.fingerprint`` of the matrix (cached with it): what a record's
        ``data.fingerprint`` must equal for the record to count as a result of these data."""
        entry = self._entry()
        if entry[2] is None:
            entry[2] = _datasets.fingerprint(entry[1].X)
        return entry[2]

    def describe(self) -> str:
        """``enron09``, or ``my_graph (/path/to/my_graph.csv)`` for a user's file."""
        return self.folder if self.path is None else f"{self.name} ({self.path})"


_DATA_CACHE: dict = {}


@dataclass(frozen=True)
class Run:
    """One run of the grid: a model fitted to the training part of one fold.

    ``data``: a :class:`DataSpec` or a data set name; ``model``: a key of :data:`MODELS`;
    ``T``: truncation level (truncated models only); ``K_init``: the IDEPM's initial number
    of atoms (default ``epm_lib.DEFAULT_K_INIT``); ``fold`` of ``n_folds`` (permutation seed
    ``cv_seed``); ``seed`` of the sampler; ``n_iter`` Gibbs iterations of which the last
    ``n_avg`` are averaged. ``heldout``: ``"zeros"`` (Sec. 5's protocol: the held-out entries are
    observed zeros of the training matrix) or ``"missing"`` (the practitioners' protocol: they
    are also left out of the likelihood, ``fit(mask=missing_mask(...))``); a ``"missing"`` run's id
    ends in ``-missing`` and its settings say so, the default adds nothing (older records stay
    valid).
    """
    data: DataSpec
    model: str
    T: int | None = None
    fold: int = 0
    seed: int = 0
    n_iter: int = 600
    n_avg: int = DEFAULT_N_AVG
    K_init: int | None = None
    n_folds: int = DEFAULT_N_FOLDS
    cv_seed: int = DEFAULT_CV_SEED
    heldout: str = "zeros"

    def __post_init__(self):
        if not isinstance(self.data, DataSpec):
            object.__setattr__(self, "data", DataSpec.parse(self.data))
        model = _canonical_model(self.model)
        object.__setattr__(self, "model", model)
        sampler = MODELS[model][0]
        if sampler == "IDEPM":
            if self.T is not None:
                raise ValueError(f"T = {self.T!r} given for the {model}: the IDEPM is not truncated "
                                 f"(give K_init, its initial number of atoms, instead)")
            K = DEFAULT_K_INIT if self.K_init is None else _int("K_init", self.K_init, 1)
            object.__setattr__(self, "K_init", K)
        else:
            if self.T is None:
                raise ValueError(f"the {model} is truncated: give T, an integer >= 1")
            object.__setattr__(self, "T", _int("T", self.T, 1))
            if self.K_init is not None:
                raise ValueError(f"K_init = {self.K_init!r} given for the {model}; "
                                 f"it is the IDEPM's initial number of atoms")
        for name, lo in (("seed", 0), ("n_iter", 1), ("n_avg", 1), ("cv_seed", 0)):
            object.__setattr__(self, name, _int(name, getattr(self, name), lo))
        if self.n_avg > self.n_iter:
            raise ValueError(f"n_avg = {self.n_avg} exceeds n_iter = {self.n_iter}")
        object.__setattr__(self, "n_folds", _int("n_folds", self.n_folds, 2))
        if isinstance(self.fold, bool) or not isinstance(self.fold, (int, np.integer)) \
                or not 0 <= self.fold < self.n_folds:
            raise ValueError(f"fold {self.fold!r} is out of range: folds are 0..{self.n_folds - 1} "
                             f"(n_folds = {self.n_folds})")
        object.__setattr__(self, "fold", int(self.fold))
        if self.heldout not in HELDOUT:
            raise ValueError(f"heldout must be one of {', '.join(map(repr, HELDOUT))}, "
                             f"got {self.heldout!r}")

    @property
    def run_id(self) -> str:
        """E.g. ``DEPM-T128-fold3-seed0-n600``, ``EPMpaper-T8-...``, ``IDEPM-K100-fold0-seed0-n600``;
        ``-avg<n_avg>`` and ``-cv<n_folds>s<cv_seed>`` are appended when not 100 and 10, 0."""
        size = f"K{self.K_init}" if self.T is None else f"T{self.T}"
        rid = f"{self.model}-{size}-fold{self.fold}-seed{self.seed}-n{self.n_iter}"
        if self.n_avg != DEFAULT_N_AVG:
            rid += f"-avg{self.n_avg}"
        if (self.n_folds, self.cv_seed) != (DEFAULT_N_FOLDS, DEFAULT_CV_SEED):
            rid += f"-cv{self.n_folds}s{self.cv_seed}"
        if self.heldout != "zeros":
            rid += f"-{self.heldout}"
        return rid

    @property
    def key(self) -> str:
        """``<dataset>/<run-id>``: unique within a results folder."""
        return f"{self.data.folder}/{self.run_id}"

    def path(self, results_dir="results") -> Path:
        """``<results_dir>/<dataset>/<run-id>.json``."""
        return Path(results_dir) / self.data.folder / f"{self.run_id}.json"

    def settings(self) -> dict:
        sampler, a_update, m_step = MODELS[self.model]
        out = dict(dataset=self.data.folder, model=self.model, sampler=sampler, T=self.T,
                   K_init=self.K_init, fold=self.fold, n_folds=self.n_folds,
                   cv_seed=self.cv_seed, seed=self.seed, n_iter=self.n_iter, n_avg=self.n_avg,
                   a_update=a_update, m_step=m_step)
        if self.heldout != "zeros":                  # records of Sec. 5's protocol lack the key
            out["heldout"] = self.heldout
        return out


def _parse_folds(folds, n_folds):
    if isinstance(folds, str):
        folds = _fold_tokens([folds])
    out = []
    for f in folds:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 0 <= f < n_folds:
            raise ValueError(f"fold {f!r} is out of range: folds are 0..{n_folds - 1} "
                             f"(n_folds = {n_folds})")
        if int(f) not in out:
            out.append(int(f))
    return out


def grid(datasets, models=PAPER_MODELS, T=None, folds=range(10), seeds=(0,), n_iter=600,
         n_avg=DEFAULT_N_AVG, K_init=(None,), n_folds=DEFAULT_N_FOLDS, cv_seed=DEFAULT_CV_SEED,
         data_dir=None, heldout="zeros") -> list[Run]:
    """The runs of the Sec. 5 grid: data sets x models x (T for the truncated models,
    ``K_init`` for the IDEPM) x folds x seeds.

    ``datasets``: names, file paths or :class:`DataSpec` (one or a list); ``folds``: fold
    numbers or a string such as ``"0-9"``; ``T=None`` is :data:`PAPER_T`; ``K_init=(None,)``
    is ``DEFAULT_K_INIT``; ``heldout``: ``"zeros"`` or ``"missing"`` (:class:`Run`). Raises ``ValueError`` for an unknown data set or model, an
    out-of-range fold, ``T`` given for a grid of IDEPMs only, or ``K_init`` without an IDEPM.
    """
    if isinstance(datasets, (str, DataSpec, os.PathLike)):
        datasets = [datasets]
    specs = [DataSpec.parse(d, data_dir=data_dir) for d in datasets]
    if not specs:
        raise ValueError("no data set given")
    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise ValueError("no model given")
    models = list(dict.fromkeys(_canonical_model(m) for m in models))
    truncated = [m for m in models if MODELS[m][0] != "IDEPM"]
    infinite = [m for m in models if MODELS[m][0] == "IDEPM"]
    if T is not None and not truncated:
        raise ValueError(f"T = {T} given, but the model(s) {', '.join(infinite)} are not "
                         f"truncated (the IDEPM takes K_init, its initial number of atoms)")
    T = list(PAPER_T) if T is None else [T] if isinstance(T, (int, np.integer)) else list(T)
    K_init = [K_init] if isinstance(K_init, (int, np.integer)) or K_init is None else list(K_init)
    if not infinite and K_init and K_init != [None]:
        raise ValueError(f"K_init = {K_init} given, but no IDEPM among the models "
                         f"{', '.join(models)}")
    if truncated and not T:
        raise ValueError(f"the truncated model(s) {', '.join(truncated)} need truncation "
                         f"levels T (e.g. {list(PAPER_T)})")
    n_folds = _int("n_folds", n_folds, 2)
    folds = _parse_folds(folds, n_folds)
    seeds = [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
    runs = []
    for spec in specs:
        for m in models:
            sizes = [dict(K_init=k) for k in (K_init or [None])] if m in infinite \
                else [dict(T=t) for t in T]
            for size in sizes:
                for f in folds:
                    for s in seeds:
                        runs.append(Run(spec, m, fold=f, seed=s, n_iter=n_iter, n_avg=n_avg,
                                        n_folds=n_folds, cv_seed=cv_seed, heldout=heldout,
                                        **size))
    return list(dict.fromkeys(runs))


# ---------------------------------------------------------------------------------------------
# One run -> one record
# ---------------------------------------------------------------------------------------------
def _rounded(a, digits=TRACE_DIGITS):
    """A list of floats with ``digits`` significant digits; non-finite values become None."""
    return [float(f"{v:.{digits}g}") if math.isfinite(v) else None
            for v in np.asarray(a, dtype=float).tolist()]


def rhat_text(d):
    """A diagnostics entry's R-hat for print: three decimals, 'constant' when every chain holds one
    value (R-hat undefined, the chains agree), 'undefined' otherwise."""
    r = d["rhat"]
    if r is not None and math.isfinite(r):
        return f"{r:.3f}"
    return "constant" if d.get("constant") else "undefined"


def _number(v):
    v = float(v)
    return v if math.isfinite(v) else None


_MACHINE = None


def machine_info() -> dict:
    """Platform, CPU count and versions of what the numbers depend on."""
    global _MACHINE
    if _MACHINE is None:
        import numba
        import scipy

        from . import __version__
        try:
            available = len(os.sched_getaffinity(0))
        except AttributeError:                      # not on Linux
            available = os.cpu_count()
        _MACHINE = dict(platform=platform.platform(), machine=platform.machine(),
                        python=platform.python_version(), numpy=np.__version__,
                        scipy=scipy.__version__, numba=numba.__version__, epm_lib=__version__,
                        cpu_count=os.cpu_count(), cpus_available=available)
    return dict(_MACHINE)


def make_record(run: Run, dataset, X_train, test, result, wall, cpu, started) -> dict:
    """The JSON-ready record of a finished run (format: ``results/README.md``)."""
    info = machine_info()
    settings = run.settings()
    settings.update(e0=result.settings["e0"], f0=result.settings["f0"])
    labels = test[2]
    return {
        "format": RECORD_FORMAT,
        "run_id": run.run_id,
        "dataset": run.data.folder,
        "model": run.model,
        "T": run.T,
        "K_init": run.K_init,
        "fold": run.fold,
        "seed": run.seed,
        "K_mean": float(result.K_mean),
        "tdll": _number(result.tdll),
        "tdauc_pr": _number(result.tdauc_pr),
        "tdauc_roc": _number(result.tdauc_roc),
        "settings": settings,
        "data": {
            "name": dataset.name,
            "shape": [int(s) for s in dataset.shape],
            "ones": int(dataset.n_ones),
            "fingerprint": _datasets.fingerprint(dataset.X),
            "train_ones": int(X_train.nnz),
            "test_entries": int(labels.size),
            "test_ones": int(np.count_nonzero(labels)),
        },
        "traces": {
            "K": [int(k) for k in result.K],
            "tdll": _rounded(result.tdll_trace),
            "seconds": _rounded(result.seconds),
            "M": [int(m) for m in result.M],
            "hyper": {name: _rounded(v) for name, v in result.hyper.items()},
        },
        "time": {
            "wall": round(wall, 4),
            "cpu": round(cpu, 4),
            "sampler": round(float(result.seconds[-1]), 4),
            "started": started,
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
        "versions": {k: info.pop(k) for k in ("epm_lib", "python", "numpy", "scipy", "numba")},
        "machine": info,
    }


def run_one(run: Run, results_dir=None) -> dict:
    """Fit one run and return its record; with ``results_dir``, also write it there.

    Loads the data set by name (cached per process), cuts the fold (:func:`cv_fold`),
    :func:`split` s the matrix and calls ``epm_lib.fit`` with the settings of Sec. 5
    (e0 = f0 = 0.01), with the held-out entries masked for ``heldout="missing"``. ``time.wall`` / ``time.cpu`` cover all of this (CPU time of the calling
    thread); ``time.sampler`` is the sweeps alone (``FitResult.seconds[-1]``).
    """
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t_wall, t_cpu = time.perf_counter(), time.thread_time()
    ds = run.data.load()
    fold = cv_fold(ds.shape, run.fold, run.n_folds, run.cv_seed)
    X_train, test = split(ds.X, fold)
    sampler, a_update, m_step = MODELS[run.model]
    options = dict(a_update=a_update) if sampler in ("EPM", "CEPM") else \
        dict(m_step=m_step) if sampler == "IDEPM" else {}          # only the options a model has
    if run.heldout == "missing":
        options["mask"] = missing_mask(ds.shape, test[0], test[1])
    result = fit(X_train, sampler, T=run.T, n_iter=run.n_iter, n_avg=run.n_avg, seed=run.seed,
                 test=test, K_init=run.K_init, **options)
    record = make_record(run, ds, X_train, test, result, time.perf_counter() - t_wall,
                         time.thread_time() - t_cpu, started)
    if results_dir is not None:
        write_record(record, run.path(results_dir))
    return record


def write_record(record: dict, path) -> Path:
    """Write a record as compact JSON, atomically: a temp file in the same folder, fsync,
    ``os.replace``. A reader (or a resumed grid) sees the complete file or none."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, separators=(",", ":"), allow_nan=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


_REQUIRED = ("run_id", "dataset", "model", "T", "K_init", "fold", "seed", "K_mean", "tdll",
             "tdauc_pr", "settings", "data", "traces", "time")
#: Integers in a record are below this in magnitude (int64; a larger one is malformed).
_INT_MAX = 2**63


def _reject_constant(name):
    raise ValueError(f"{name} is not a JSON number (the format writes null for a non-finite number)")


def _short(v, limit=60) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _is_int(v, lo=0) -> bool:
    return type(v) is int and lo <= v < _INT_MAX


def _is_number(v) -> bool:
    return (type(v) is int and abs(v) < _INT_MAX) or (type(v) is float and math.isfinite(v))


_CHECKS = {
    "a string": lambda v: type(v) is str,
    "an integer >= 0": _is_int,
    "an integer >= 1": lambda v: _is_int(v, 1),
    "an integer >= 2": lambda v: _is_int(v, 2),
    "an integer >= 1 or null": lambda v: v is None or _is_int(v, 1),
    "a number": _is_number,
    "a number or null (null: not finite)": lambda v: v is None or _is_number(v),
    "a JSON object": lambda v: type(v) is dict,
}


def _check(where, obj, key, want, prefix="", required=True):
    """``obj[key]`` is ``want`` (a key of ``_CHECKS``), else ``ValueError`` naming the field."""
    field = prefix + key
    if key not in obj:
        if required:
            raise ValueError(f"{where}: record lacks {field!r}")
        return None
    v = obj[key]
    if not _CHECKS[want](v):
        raise ValueError(f"{where}: field {field!r} must be {want}, got {_short(v)}")
    return v


def _check_list(where, field, v, n, ints):
    """``v`` is a list of ``n`` integers >= 0 (``ints``) or of numbers / nulls."""
    what = "integers >= 0" if ints else "numbers (null: not finite)"
    if type(v) is not list:
        raise ValueError(f"{where}: field {field!r} must be a list of {what}, got {_short(v)}")
    if len(v) != n:
        raise ValueError(f"{where}: trace {field.removeprefix('traces.')!r} does not have "
                         f"n_iter = {n} entries (field {field!r} has {len(v)})")
    types = set(map(type, v))                          # fast paths for valid traces
    if ints:
        ok = types <= {int} and (not v or (min(v) >= 0 and max(v) < _INT_MAX))
    elif types <= {float, int} and math.isfinite(sum(v)):   # (a huge sum: checked one by one)
        ok = True
    else:
        ok = types <= {int, float, type(None)} and all(x is None or _is_number(x) for x in v)
    if not ok:
        good = _is_int if ints else (lambda x: x is None or _is_number(x))
        k = next(k for k, x in enumerate(v) if not good(x))
        raise ValueError(f"{where}: field {field!r} must be a list of {what}; entry {k} is "
                         f"{_short(v[k])}")


def _check_summary_fields(rec, where, metrics=("K_mean", "tdll", "tdauc_pr")):
    """The fields :func:`summarize` (and the sorting of :func:`load_results`) use."""
    if type(rec) is not dict:
        raise ValueError(f"{where}: a record must be a JSON object, got {_short(rec)}")
    for key, want in (("dataset", "a string"), ("model", "a string"),
                      ("T", "an integer >= 1 or null"), ("fold", "an integer >= 0"),
                      ("seed", "an integer >= 0")):
        _check(where, rec, key, want)
    _check(where, rec, "K_init", "an integer >= 1 or null", required=False)
    for m in metrics:
        _check(where, rec, m, "a number or null (null: not finite)")
    settings = _check(where, rec, "settings", "a JSON object")
    for key in ("n_iter", "n_avg"):
        _check(where, settings, key, "an integer >= 1", "settings.")
    _check(where, _check(where, rec, "time", "a JSON object"), "wall", "a number", "time.")
    _check(where, _check(where, rec, "data", "a JSON object"), "fingerprint", "a string", "data.")


def _check_record(rec, where):
    """The types (and trace lengths) of every field the summary and the chapters use."""
    _check_summary_fields(rec, where)
    _check(where, rec, "run_id", "a string")
    _check(where, rec, "K_mean", "a number")
    _check(where, rec, "tdauc_roc", "a number or null (null: not finite)", required=False)
    settings = rec["settings"]
    for key, want in (("n_folds", "an integer >= 2"), ("cv_seed", "an integer >= 0")):
        _check(where, settings, key, want, "settings.")
    n_iter = settings["n_iter"]
    if settings["n_avg"] > n_iter:
        raise ValueError(f"{where}: field 'settings.n_avg' = {settings['n_avg']} exceeds "
                         f"'settings.n_iter' = {n_iter}")
    if rec["fold"] >= settings["n_folds"]:
        raise ValueError(f"{where}: field 'fold' = {rec['fold']} is out of range for "
                         f"'settings.n_folds' = {settings['n_folds']}")
    data = rec["data"]
    if "shape" not in data:
        raise ValueError(f"{where}: record lacks 'data.shape'")
    shape = data["shape"]
    if type(shape) is not list or len(shape) != 2 or not all(_is_int(x, 1) for x in shape):
        raise ValueError(f"{where}: field 'data.shape' must be a list of two integers >= 1, "
                         f"got {_short(shape)}")
    for key in ("ones", "train_ones", "test_entries", "test_ones"):
        _check(where, data, key, "an integer >= 0", "data.", required=False)
    traces = rec["traces"]
    for key, ints in (("K", True), ("tdll", False), ("seconds", False), ("M", True)):
        if key not in traces:
            raise ValueError(f"{where}: record lacks 'traces.{key}'")
        _check_list(where, f"traces.{key}", traces[key], n_iter, ints)
    hyper = _check(where, traces, "hyper", "a JSON object", "traces.")
    for name, v in hyper.items():
        _check_list(where, f"traces.hyper.{name}", v, n_iter, ints=False)
    if settings.get("heldout", "zeros") not in HELDOUT:
        raise ValueError(f"{where}: field 'settings.heldout' must be one of "
                         f"{', '.join(map(repr, HELDOUT))}, got {_short(settings['heldout'])}")
    for key in ("cpu", "sampler"):
        _check(where, rec["time"], key, "a number", "time.", required=False)
    for key in ("started", "finished"):
        _check(where, rec["time"], key, "a string", "time.", required=False)


def _check_consistent(rec, where):
    """The run's fields are those of its settings."""
    settings = rec["settings"]
    for key in ("dataset", "model", "T", "K_init", "fold", "seed"):
        if key in settings and settings[key] != rec[key]:
            raise ValueError(f"{where}: field {key!r} = {_short(rec[key])} differs from "
                             f"'settings.{key}' = {_short(settings[key])}")


def read_record(path, run: Run | None = None) -> dict:
    """Read and check one result file; ``ValueError`` naming the file (and the field) if it is
    not a complete record (of ``run``, when given).

    Checked: strict JSON (no NaN / Infinity), the format tag, every
    field :func:`summarize` and the chapters read, with its type (e.g. ``K_mean`` a number,
    ``fold`` an integer, the traces lists of ``n_iter`` numbers), the run id against the
    file's name, and with ``run`` the settings against the run's.
    """
    path = Path(path)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except ValueError as e:                    # JSONDecodeError, UnicodeDecodeError, NaN
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path}: not a run record of format {RECORD_FORMAT!r}")
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"{path}: record lacks {', '.join(missing)}")
    if not isinstance(rec["settings"], dict) or not isinstance(rec["traces"], dict):
        raise ValueError(f"{path}: settings and traces must be JSON objects")
    _check_record(rec, path)
    if rec["run_id"] != path.stem:
        raise ValueError(f"{path}: holds run {rec['run_id']!r}, not {path.stem!r}")
    if run is not None:
        want = run.settings()
        got = {k: rec["settings"].get(k) for k in want}
        if got != want:
            diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            raise ValueError(f"{path}: settings differ from the run's: {_short(diff, 400)}")
    _check_consistent(rec, path)
    return rec


# ---------------------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------------------
class GridError(RuntimeError):
    """Some runs of a grid failed (the others are written); ``.report`` lists them."""

    def __init__(self, report):
        self.report = report
        lines = [f"{len(report.failed)} of {report.n_total} runs failed:"]
        lines += [f"  {rid}: {err.strip().splitlines()[-1]}" for rid, err in report.failed.items()]
        super().__init__("\n".join(lines))


class StaleResultsError(ValueError):
    """The results folder holds finished records of other data than the data set now loaded
    (their ``data.fingerprint`` differs: an edited file, another file of the same name, other
    loader options). ``.stale``: run -> the fingerprint its record was computed from."""

    def __init__(self, stale, results_dir):
        self.stale = dict(stale)
        self.results_dir = results_dir
        lines = _stale_lines(self.stale, results_dir)
        if any(r.data.path is not None for r in self.stale):
            lines.append("(Either the data file was edited since, or another file of the same "
                         "name or other reading options (threshold, sep, square) were given.)")
        lines.append('These records are not results of the data now loaded, so they are not '
                     'skipped. To recompute them (overwriting their files), pass '
                     'on_stale="recompute" to run_grid (command line: --recompute-stale). To keep '
                     'them, write the new results to another folder (results_dir=, command line: '
                     '--results DIR) or give the data set another name (rename the file, or '
                     'DataSpec.from_file(path, name=...)).')
        super().__init__("\n".join(lines))


def _stale_lines(stale, results_dir) -> list[str]:
    """Per data set: its folder, the fingerprint of the data now, and of the stale records."""
    lines = []
    for spec in dict.fromkeys(r.data for r in stale):
        runs = [r for r in stale if r.data == spec]
        s = "s" if len(runs) > 1 else ""
        lines.append(f"{Path(results_dir) / spec.folder}/ holds {len(runs)} finished run{s} of "
                     f"other data than {spec.describe()}, whose fingerprint is now "
                     f"{spec.fingerprint()}:")
        for fp in dict.fromkeys(stale[r] for r in runs):
            these = [r for r in runs if stale[r] == fp]
            lines.append(f"  {len(these)} record{'s' if len(these) > 1 else ''} computed from data "
                         f"with fingerprint {fp}, e.g. {these[0].path(results_dir)}")
    return lines


@dataclass
class GridReport:
    """What :func:`run_grid` did, as ``<dataset>/<run-id>`` keys (:attr:`Run.key`): runs
    computed, skipped (already done), recomputed because their file was corrupt, or because it
    was a record of other data (``stale``, with ``on_stale="recompute"``), failed
    (key -> traceback); ``runs``: all of them; ``seconds``: wall time."""
    done: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    corrupt: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    seconds: float = 0.0
    runs: list = field(default_factory=list)
    stale: list = field(default_factory=list)

    @property
    def n_total(self) -> int:
        return len(self.runs)


def _as_runs(spec) -> list[Run]:
    if isinstance(spec, Run):
        return [spec]
    if isinstance(spec, dict):
        return grid(**spec)
    runs = list(spec)
    if not all(isinstance(r, Run) for r in runs):
        raise TypeError("spec must be a dict of grid() arguments or a list of Run")
    return list(dict.fromkeys(runs))


class Plan(NamedTuple):
    """What a grid would do (:func:`plan`): ``todo``, the runs to compute (no file, a corrupt
    file, or a stale record); ``done``, the runs with a record of the data now loaded;
    ``corrupt``: run -> why its file is not a record of it; ``stale``: run -> the fingerprint
    of the other data its record was computed from."""
    todo: list
    done: list
    corrupt: dict
    stale: dict


def plan(runs, results_dir="results") -> Plan:
    """Sort runs by their files into a :class:`Plan` (to compute, done, corrupt, stale).

    A run is done when its file is a complete record of it (:func:`read_record`) *and* its
    ``data.fingerprint`` is the fingerprint of the data set now (``DataSpec.fingerprint``):
    the run is identified by the data, not by the file's name. The data sets of runs with a
    file are loaded for that (once per process; MovieLens1M: about half a second), so a
    missing data set raises its ``DataNotFoundError`` here.
    """
    todo, done, corrupt, stale = [], [], {}, {}
    for r in runs:
        path = r.path(results_dir)
        if not path.exists():
            todo.append(r)
            continue
        try:
            rec = read_record(path, r)
        except (ValueError, OSError) as e:
            corrupt[r] = str(e)
            todo.append(r)
            continue
        if rec["data"]["fingerprint"] != r.data.fingerprint():
            stale[r] = rec["data"]["fingerprint"]
            todo.append(r)
        else:
            done.append(r)
    return Plan(todo, done, corrupt, stale)


def _cost(run: Run, shape, ones) -> float:
    """Rough CPU seconds of a run, to start the longest runs first (only the order depends on it).

    Measured on MovieLens1M (``results/README.md``), per iteration: the sweep about
    (55 + 1.7 T) ns per one of X, the test log likelihood (2.24 million held-out entries)
    about (8 + 0.23 T) ns per entry. The IDEPM counts as T = 160 (its cost follows K+, which
    ranged from about 20 on MovieLens100K to about 90 on MovieLens1M).
    """
    size = 160.0 if run.T is None else float(run.T)
    I, J = shape
    n_test = I * J / run.n_folds
    return run.n_iter * 1e-9 * (ones * (55.0 + 1.7 * size) + n_test * (8.0 + 0.23 * size))


#: Seconds between two looks of a grid worker's watchdog at its parent process.
WATCH_INTERVAL = 0.2
_WATCHED = {}                                       # this process's pid -> the grid pid it watches
_CURRENT = [None]                                   # key of the run this process is executing


def _watchdog(grid_pid):
    if sys.platform.startswith("linux"):         # the thread's name in ps -L, top -H, /proc
        try:
            import ctypes
            ctypes.CDLL(None).prctl(15, b"epm-watchdog", 0, 0, 0)      # PR_SET_NAME
        except Exception:                            # only a name
            pass
    while os.getppid() == grid_pid:
        time.sleep(WATCH_INTERVAL)
    try:
        os.write(2, (f"epm_lib.experiments: worker {os.getpid()}: the grid's process {grid_pid} "
                     f"is gone; stopping run {_CURRENT[0]}\n").encode())
    except OSError:
        pass
    os._exit(1)


def _watch_parent(grid_pid):
    """In a worker process that the grid's process started (joblib's loky or multiprocessing
    backend), start once a daemon thread that ends this process as soon as the grid's process
    is gone: killed with SIGKILL, it cannot stop its workers, which would otherwise finish
    their current run (possibly hours) for nobody. The thread looks every
    :data:`WATCH_INTERVAL` seconds whether this process was re-parented (``os.getppid()``);
    the numba kernels hold the GIL for one sweep at a time only, so it gets to run. Nothing
    happens in the grid's own process (``n_jobs=1``) or in a worker that another process
    started (a Dask worker: its nanny looks after it)."""
    if os.getpid() == grid_pid:
        return
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid != grid_pid:
        return
    with _CACHE_LOCK:                                # once per process (a fork copies the dict,
        if os.getpid() in _WATCHED:                  # not the thread)
            return
        _WATCHED[os.getpid()] = grid_pid
    threading.Thread(target=_watchdog, args=(grid_pid,), name="epm-grid-watchdog",
                     daemon=True).start()


def _execute(run: Run, grid_pid=None, fingerprint=None):
    """Worker: one run -> ("ok", record) or ("error", key, traceback). Never raises.

    ``grid_pid``: the process that submitted the run (:func:`_watch_parent`). ``fingerprint``:
    that of the data the grid was planned with; a worker that loads other data (the file was
    edited during the grid, or differs on a cluster's machine) fails the run, instead of
    writing a record of other data under the run's name.
    """
    _CURRENT[0] = run.key
    if grid_pid is not None:
        _watch_parent(grid_pid)
        ignore_sigint_in_worker(grid_pid)    # Ctrl-C is the grid's process's to handle
    try:
        if fingerprint is not None and run.data.fingerprint() != fingerprint:
            raise _datasets.DataError(
                f"{run.key}: the data loaded by this worker are not those the grid was planned "
                f"with: {run.data.describe()} has fingerprint {run.data.fingerprint()} here, "
                f"{fingerprint} when the grid started (was the file changed during the grid?)")
        record = run_one(run)
        if fingerprint is not None and record["data"]["fingerprint"] != fingerprint:
            raise _datasets.DataError(
                f"{run.key}: the data changed during the run: fingerprint "
                f"{record['data']['fingerprint']}, {fingerprint} when the grid started")
        return "ok", record
    except Exception:                               # reported by the parent, the grid goes on
        return "error", run.key, traceback.format_exc()


def run_grid(spec, results_dir="results", n_jobs=-1, backend=None, progress=True,
             raise_errors=True, log=None, on_stale="error") -> GridReport:
    """Run the runs of ``spec`` whose result file is missing (or corrupt, or stale) in parallel.

    ``spec``: a list of :class:`Run` or a dict of :func:`grid` arguments. The runs go to
    ``joblib.Parallel(n_jobs, backend, return_as="generator_unordered")`` (default: processes,
    all cores; inside ``with joblib.parallel_config(backend="dask"):`` with a
    ``dask.distributed.Client``, the workers of a Dask cluster), most expensive first; each
    worker loads the data set by name (this process too, once, to check it before any run
    starts), and this process writes each record to
    ``<results_dir>/<dataset>/<run-id>.json`` as soon as it arrives. Rerunning the same grid
    skips the runs already written, so a killed grid resumes (and the worker processes of a
    killed grid exit instead of finishing their runs: :func:`_watch_parent`). ``progress``: a
    tqdm bar of runs done / total with ETA. ``log``: a function taking a line (default: print to stderr
    when ``progress``). A failed run is reported and the others go on; at the end
    ``GridError`` is raised (``raise_errors``) or the failures are left in the report.

    A run is skipped only if its record is of the data now loaded (:func:`plan`). Records
    computed from other data (the file was edited, another file of the same name or other
    reading options were given) are *stale*: with ``on_stale="error"`` (the default) nothing
    is run and :class:`StaleResultsError` says which folder, file and fingerprints, and what
    to do; with ``on_stale="recompute"`` they are recomputed and overwritten (``report.stale``).
    """
    import joblib

    if on_stale not in ("error", "recompute"):
        raise ValueError(f"on_stale must be 'error' or 'recompute', got {on_stale!r}")
    t0 = time.perf_counter()
    runs = _as_runs(spec)
    if log is None:
        log = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else (lambda line: None)
    todo, done, corrupt, stale = plan(runs, results_dir)
    if stale and on_stale == "error":
        raise StaleResultsError(stale, results_dir)
    report = GridReport(skipped=[r.key for r in done], corrupt=[r.key for r in corrupt],
                        stale=[r.key for r in stale], runs=[r.key for r in runs])
    for r, why in corrupt.items():
        log(f"recompute {r.key}: {why}")
    if stale:
        for line in _stale_lines(stale, results_dir):
            log(line)
        log(f"recompute these {len(stale)} stale runs (on_stale='recompute'): their files are "
            f"overwritten")
    # load each data set here once: clear errors before any worker starts, and the cost order;
    # the workers check that they load the same data (fingerprint)
    meta = {}
    for d in dict.fromkeys(r.data for r in todo):
        ds = d.load()
        meta[d] = (ds.shape, ds.n_ones, d.fingerprint())
        for r in todo:
            if r.data == d:
                _check_folds(ds.shape, r.n_folds, r.fold)
    todo.sort(key=lambda r: -_cost(r, *meta[r.data][:2]))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(runs), initial=len(done), unit="run", desc="runs", dynamic_ncols=True)
    try:
        if todo:
            try:
                parallel = joblib.Parallel(n_jobs=n_jobs, backend=backend, batch_size=1,
                                           return_as="generator_unordered")
            except ValueError:                   # a backend without generators (multiprocessing)
                parallel = joblib.Parallel(n_jobs=n_jobs, backend=backend, batch_size=1)
            pid = os.getpid()
            for out in parallel(joblib.delayed(_execute)(r, pid, meta[r.data][2]) for r in todo):
                if out[0] == "ok":
                    rec = out[1]
                    write_record(rec, Path(results_dir) / rec["dataset"] / f"{rec['run_id']}.json")
                    report.done.append(f"{rec['dataset']}/{rec['run_id']}")
                else:
                    report.failed[out[1]] = out[2]
                    msg = f"FAILED {out[1]}: {out[2].strip().splitlines()[-1]}"
                    if bar is not None:
                        bar.write(msg, file=sys.stderr)
                    else:
                        log(msg)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        report.seconds = time.perf_counter() - t0
    if report.failed and raise_errors:
        raise GridError(report)
    return report


# ---------------------------------------------------------------------------------------------
# Reading results back
# ---------------------------------------------------------------------------------------------
def _record_key(rec):
    return (rec["dataset"], _MODEL_ORDER.get(rec["model"], 99), rec["model"],
            rec["T"] if rec["T"] is not None else -1, rec.get("K_init") or 0,
            rec["settings"]["n_iter"], rec["settings"]["n_avg"],
            str(rec["settings"].get("heldout", "zeros")), rec["fold"], rec["seed"])


def load_results(results_dir="results", dataset=None, run_ids=None, heldout="zeros") -> list[dict]:
    """All records under ``results_dir`` (of one ``dataset`` folder, or some of them;
    and only ``run_ids`` if given), sorted by data set, model, T, fold, seed.

    ``heldout``: only the records of that held-out protocol (:data:`HELDOUT`); by default
    ``"zeros"``, Sec. 5's, so that a reader who keys records by (model, T, fold) never mixes in
    a masked run; ``None``: every record.

    Files that are not complete records (:func:`read_record`: invalid JSON, a missing field,
    a field of the wrong type, ...) are skipped with a warning that names the file and the
    field. JSON ``null`` in a number stands for a non-finite value (e.g. TDAUC-PR of a fold
    without test ones).
    """
    root = Path(results_dir)
    if dataset is None:
        folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    else:
        names = [dataset] if isinstance(dataset, (str, DataSpec)) else list(dataset)
        folders = [root / (d.folder if isinstance(d, DataSpec) else str(d)) for d in names]
    wanted = None if run_ids is None else set(run_ids)
    records = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            if wanted is not None and path.stem not in wanted:
                continue
            try:
                rec = read_record(path)
            except (ValueError, OSError) as e:
                warnings.warn(f"skipping {e}", stacklevel=2)
                continue
            if heldout is None or rec["settings"].get("heldout", "zeros") == heldout:
                records.append(rec)
    records.sort(key=_record_key)
    return records


def _mean_se(values):
    v = np.array([np.nan if x is None else x for x in values], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), 0
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se, int(v.size)


def summarize(records, metrics=("K_mean", "tdll", "tdauc_pr")) -> list[dict]:
    """Mean and standard error over folds (and seeds) per (data set, model, T, K_init, n_iter, n_avg).

    Each row: the group's keys, ``n`` (runs), ``folds``, and for each metric ``<m>`` and
    ``<m>_se`` (sample standard deviation / sqrt(n); NaN for n = 1; runs with a non-finite
    value are left out of that metric), plus ``seconds``, the mean wall time of a run.
    ``ValueError`` (naming the record and the field) for a record whose fields used here have
    the wrong type (records from :func:`load_results` have been checked).
    """
    records = list(records)
    for k, rec in enumerate(records):
        where = f"record {k}"
        if isinstance(rec, dict) and isinstance(rec.get("run_id"), str):
            where = f"record {rec['dataset']}/{rec['run_id']}" \
                if isinstance(rec.get("dataset"), str) else f"record {rec['run_id']}"
        _check_summary_fields(rec, where, metrics)
    groups = {}
    for rec in sorted(records, key=_record_key):
        s = rec["settings"]
        key = (rec["dataset"], rec["model"], rec["T"], rec.get("K_init"), s["n_iter"], s["n_avg"],
               s.get("heldout", "zeros"))
        groups.setdefault(key, []).append(rec)
    rows = []
    for (dataset, model, T, K_init, n_iter, n_avg, heldout), recs in groups.items():
        row = dict(dataset=dataset, model=model, T=T, K_init=K_init, n_iter=n_iter, n_avg=n_avg,
                   heldout=heldout, n=len(recs), folds=sorted({r["fold"] for r in recs}))
        for m in metrics:
            row[m], row[m + "_se"], _ = _mean_se([r[m] for r in recs])
        row["seconds"] = float(np.mean([r["time"]["wall"] for r in recs]))
        if len({r["data"]["fingerprint"] for r in recs}) > 1:
            warnings.warn(f"{dataset}/{model}: runs of different data (fingerprints differ)",
                          stacklevel=2)
        rows.append(row)
    return rows


def _pm(mean, se, digits):
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(se):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def format_baselines(records) -> str:
    """A plain-text table of baseline records: mean ± SE over folds per protocol and baseline."""
    if not records:
        return "(no baseline records)"
    head = ["dataset", "heldout", "baseline", "folds", "TDLL", "TDAUC-PR", "AUC-ROC"]
    body = []
    for h in HELDOUT:
        for name in records[0]["heldout"][h]:
            vals = {m: _mean_se([r["heldout"][h][name][m] for r in records if name in r["heldout"][h]])
                    for m in ("tdll", "tdauc_pr", "auc_roc")}
            body.append([records[0]["dataset"], h, name, str(vals["tdll"][2]),
                         _pm(*vals["tdll"][:2], 4), _pm(*vals["tdauc_pr"][:2], 4),
                         _pm(*vals["auc_roc"][:2], 4)])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(cells, widths))
                     for cells in [head, ["-" * w for w in widths]] + body)


def format_summary(rows) -> str:
    """A plain-text table of :func:`summarize` rows (mean ± SE over folds)."""
    head = ["dataset", "model", "T/K_init", "n", "K", "TDLL", "TDAUC-PR", "s/run"]
    body = [[r["dataset"], r["model"] + (f" ({r['heldout']})" if r.get("heldout", "zeros") != "zeros"
                                         else ""), f"T={r['T']}" if r["T"] is not None else f"K0={r['K_init']}",
             str(r["n"]), _pm(r["K_mean"], r["K_mean_se"], 2), _pm(r["tdll"], r["tdll_se"], 4),
             _pm(r["tdauc_pr"], r["tdauc_pr_se"], 4), f"{r['seconds']:.1f}"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = lambda cells: "  ".join(c.rjust(w) if k >= 3 else c.ljust(w)   # noqa: E731
                                  for k, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


# ---------------------------------------------------------------------------------------------
# Baselines on the same folds
# ---------------------------------------------------------------------------------------------
#: Version tag of the baseline files.
BASELINE_FORMAT = "epm-book baseline record 1"


def _fold_suffix(n_folds, cv_seed):
    return "" if (n_folds, cv_seed) == (DEFAULT_N_FOLDS, DEFAULT_CV_SEED) else f"-cv{n_folds}s{cv_seed}"


def baseline_path(data, fold, results_dir="results", n_folds=DEFAULT_N_FOLDS,
                  cv_seed=DEFAULT_CV_SEED) -> Path:
    """``<results_dir>/<dataset>/baselines/fold<f>.json`` (``-cv<n>s<seed>`` appended for other
    folds): a subfolder, so :func:`load_results` never mistakes a baseline file for a run."""
    spec = data if isinstance(data, DataSpec) else DataSpec.parse(data)
    return Path(results_dir) / spec.folder / "baselines" / \
        f"fold{int(fold)}{_fold_suffix(n_folds, cv_seed)}.json"


def _finite(d):
    return {k: (_finite(v) if isinstance(v, dict) else
                int(v) if isinstance(v, (int, np.integer)) else _number(v)) for k, v in d.items()}


def baseline_record(data, fold, n_folds=DEFAULT_N_FOLDS, cv_seed=DEFAULT_CV_SEED, seed=0) -> dict:
    """Score the baselines (``epm_lib.baselines.score_baselines``: popularity, SVD of rank 16 and
    of a rank chosen on the training matrix) on one fold of a data set, under both held-out
    protocols (:data:`HELDOUT`): ``{"heldout": {"zeros": {name: {"tdll", "tdauc_pr", "auc_roc"}},
    "missing": {...}}, ...}`` plus the data's fingerprint, the settings and the time."""
    from .baselines import score_baselines
    spec = data if isinstance(data, DataSpec) else DataSpec.parse(data)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t_wall = time.perf_counter()
    ds = spec.load()
    X_train, test = split(ds.X, cv_fold(ds.shape, fold, n_folds, cv_seed))
    scores = {"zeros": score_baselines(X_train, test, seed=seed),
              "missing": score_baselines(X_train, test, seed=seed,
                                         mask=missing_mask(ds.shape, test[0], test[1]))}
    info = machine_info()
    return {
        "format": BASELINE_FORMAT, "dataset": spec.folder, "fold": int(fold),
        "settings": dict(n_folds=n_folds, cv_seed=cv_seed, seed=seed),
        "data": {"name": ds.name, "shape": [int(x) for x in ds.shape], "ones": int(ds.n_ones),
                 "fingerprint": _datasets.fingerprint(ds.X), "test_entries": int(test[2].size),
                 "test_ones": int(np.count_nonzero(test[2]))},
        "heldout": _finite(scores),
        "time": {"wall": round(time.perf_counter() - t_wall, 4), "started": started},
        "versions": {k: info[k] for k in ("epm_lib", "numpy", "scipy")},
    }


def _read_json_record(path, fmt) -> dict:
    """Strict JSON (no NaN / Infinity) holding an object with ``"format": fmt``; else ``ValueError``."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(rec, dict) or rec.get("format") != fmt:
        raise ValueError(f"{path}: not a record of format {fmt!r}")
    return rec


def read_baseline(path) -> dict:
    """Read and check one baseline file; ``ValueError`` naming the file otherwise."""
    path = Path(path)
    rec = _read_json_record(path, BASELINE_FORMAT)
    _check(path, rec, "fold", "an integer >= 0")
    _check(path, _check(path, rec, "data", "a JSON object"), "fingerprint", "a string", "data.")
    held = _check(path, rec, "heldout", "a JSON object")
    for h in HELDOUT:
        scores = _check(path, held, h, "a JSON object", "heldout.")
        for name, sc in scores.items():
            for m in ("tdll", "tdauc_pr", "auc_roc"):
                _check(path, sc, m, "a number or null (null: not finite)", f"heldout.{h}.{name}.")
    return rec


def run_baselines(data, folds=range(10), results_dir="results", n_folds=DEFAULT_N_FOLDS,
                  cv_seed=DEFAULT_CV_SEED, seed=0, progress=True, recompute_stale=False) -> list[dict]:
    """The baselines on the folds of a data set, one file per fold (:func:`baseline_path`),
    written as soon as the fold is scored; a fold whose file is a baseline record of the same
    data (fingerprint) is skipped, so an interrupted call resumes. A file of other data raises
    :class:`StaleResultsError` unless ``recompute_stale``. Returns the records, by fold."""
    spec = data if isinstance(data, DataSpec) else DataSpec.parse(data)
    folds = _parse_folds(folds, n_folds)
    fp = spec.fingerprint()
    out = {}
    todo = []
    for f in folds:
        path = baseline_path(spec, f, results_dir, n_folds, cv_seed)
        if path.exists():
            try:
                rec = read_baseline(path)
            except (ValueError, OSError) as e:
                warnings.warn(f"recomputing {e}", stacklevel=2)
            else:
                if rec["data"]["fingerprint"] == fp and rec["settings"].get("seed") == seed:
                    out[f] = rec
                    continue
                if rec["data"]["fingerprint"] != fp and not recompute_stale:
                    raise ValueError(f"{path}: baseline record of other data (fingerprint "
                                     f"{rec['data']['fingerprint']}, the data now: {fp}); pass "
                                     f"recompute_stale=True (--recompute-stale) to overwrite it")
        todo.append(f)
    if todo:
        from tqdm.auto import tqdm
        for f in tqdm(todo, desc=f"baselines {spec.folder}", disable=not progress):
            rec = baseline_record(spec, f, n_folds, cv_seed, seed)
            write_record(rec, baseline_path(spec, f, results_dir, n_folds, cv_seed))
            out[f] = rec
    return [out[f] for f in sorted(out)]


def load_baselines(results_dir="results", dataset=None, n_folds=DEFAULT_N_FOLDS,
                   cv_seed=DEFAULT_CV_SEED) -> list[dict]:
    """The baseline records of a data set folder (for the given folds' layout), by fold; files
    that are not complete records are skipped with a warning naming the file."""
    spec_folder = dataset.folder if isinstance(dataset, DataSpec) else str(dataset)
    folder = Path(results_dir) / spec_folder / "baselines"
    suffix = _fold_suffix(n_folds, cv_seed)
    recs = []
    for path in sorted(folder.glob("fold*.json")):
        if not re.fullmatch(rf"fold\d+{re.escape(suffix)}", path.stem):
            continue
        try:
            recs.append(read_baseline(path))
        except (ValueError, OSError) as e:
            warnings.warn(f"skipping {e}", stacklevel=2)
    recs.sort(key=lambda r: r["fold"])
    return recs


# ---------------------------------------------------------------------------------------------
# The converged protocol: chains from dispersed starts until they agree
# ---------------------------------------------------------------------------------------------
#: Version tag of the converged-protocol records.
CONVERGED_FORMAT = "epm-book converged record 1"
#: Points kept per chain trace in a converged record (longer traces are thinned evenly).
CONVERGED_TRACE_POINTS = 500
#: The burn-in of the converged protocol's R-hat checks (``chains.run_until_agree``'s default):
#: the first half of every chain; a segment must leave 4 draws after it (``chains.min_segment``: 7).
CONVERGED_BURN_IN = 0.5


@dataclass(frozen=True)
class ConvergedRun:
    """One run of the converged protocol: a model on the training part of one fold, several
    chains from dispersed starts (``starts``: their ``K_init``; default two from one atom and two
    from many: 100 for the IDEPM, T for a truncated model), run in segments of ``segment``
    sweeps until the rank-normalised split-R-hat of K and of the TDLL is at most ``rhat`` or a
    cap (``max_sweeps`` per chain, ``cap_seconds`` of sweeps per chain) is reached
    (``epm_lib.chains.run_until_agree``); ``split_merge`` proposals per sweep (IDEPM, DEPM).
    A model with an update as printed (``EPMpaper``, ``CEPMpaper``, ``IDEPMpaper``) runs that
    sampler: its chains then target the printed update's stationary distribution, not the
    model's posterior (errata E3, E4, E6), which is what such a run measures.

    Its record (:func:`run_converged`) lives in ``<results>/<dataset>/converged/<run-id>.json``,
    a folder of its own, so that :func:`load_results` (Sec. 5's 600-sweep records) never sees
    it; its run id ends in ``-converged``.
    """
    data: DataSpec
    model: str
    T: int | None = None
    fold: int = 0
    starts: tuple | None = None
    seed: int = 0
    segment: int = 250
    max_sweeps: int | None = 20000
    cap_seconds: float | None = 1800.0
    rhat: float = 1.01
    split_merge: int = 0
    n_folds: int = DEFAULT_N_FOLDS
    cv_seed: int = DEFAULT_CV_SEED

    def __post_init__(self):
        base = Run(self.data, self.model, T=self.T, fold=self.fold, seed=self.seed,
                   n_folds=self.n_folds, cv_seed=self.cv_seed,
                   K_init=None)            # validates data, model, T, fold (Run's rules)
        object.__setattr__(self, "data", base.data)
        object.__setattr__(self, "model", base.model)
        object.__setattr__(self, "T", base.T)
        many = DEFAULT_K_INIT if base.T is None else base.T
        starts = (1, 1, many, many) if self.starts is None else tuple(int(k) for k in self.starts)
        if len(starts) < 2 or min(starts) < 1 or (base.T is not None and max(starts) > base.T):
            raise ValueError(f"starts must be >= 2 initial numbers of atoms in 1..{base.T or 'inf'}, "
                             f"got {starts}")
        object.__setattr__(self, "starts", starts)
        from .chains import check_segment
        object.__setattr__(self, "segment", check_segment(self.segment, CONVERGED_BURN_IN))
        object.__setattr__(self, "split_merge", _int("split_merge", self.split_merge, 0))
        if self.split_merge and MODELS[base.model][0] not in ("IDEPM", "DEPM"):
            raise ValueError(f"split_merge is for the IDEPM and the DEPM, not the {base.model}")
        if self.max_sweeps is None and self.cap_seconds is None:
            raise ValueError("give max_sweeps or cap_seconds: a run that never agrees must stop")
        if self.max_sweeps is not None:
            object.__setattr__(self, "max_sweeps", _int("max_sweeps", self.max_sweeps, 1))
        if self.cap_seconds is not None and not (_is_number(self.cap_seconds) and self.cap_seconds > 0):
            raise ValueError(f"cap_seconds must be a positive number or None, got {self.cap_seconds!r}")
        if not (isinstance(self.rhat, (int, float)) and not isinstance(self.rhat, bool)
                and math.isfinite(self.rhat) and self.rhat > 1.0):
            raise ValueError(f"rhat must be a number > 1 (finite), got {self.rhat!r}")

    @property
    def run_id(self) -> str:
        """E.g. ``IDEPM-fold0-seed0-sm20-converged``, ``DEPM-T128-fold3-seed0-converged``."""
        size = "" if self.T is None else f"-T{self.T}"
        rid = f"{self.model}{size}-fold{self.fold}-seed{self.seed}"
        if self.split_merge:
            rid += f"-sm{self.split_merge}"
        rid += _fold_suffix(self.n_folds, self.cv_seed)
        return rid + "-converged"

    def path(self, results_dir="results") -> Path:
        return Path(results_dir) / self.data.folder / "converged" / f"{self.run_id}.json"

    def settings(self) -> dict:
        return dict(dataset=self.data.folder, model=self.model, T=self.T, fold=self.fold,
                    n_folds=self.n_folds, cv_seed=self.cv_seed, seed=self.seed,
                    starts=list(self.starts), segment=self.segment, max_sweeps=self.max_sweeps,
                    cap_seconds=self.cap_seconds, rhat=self.rhat, split_merge=self.split_merge,
                    e0=0.01, f0=0.01)


def _thin(a, n=CONVERGED_TRACE_POINTS):
    a = np.asarray(a)
    idx = np.unique(np.round(np.linspace(0, a.size - 1, min(n, a.size))).astype(int))
    return idx, a[idx]


def converged_checkpoint(run: ConvergedRun, results_dir="results", checkpoint_dir=None) -> Path:
    """The folder of a converged run's checkpointed chains: ``<checkpoint_dir>/<dataset>/<run-id>``
    (default ``checkpoint_dir``: ``<results_dir>/.chains``)."""
    root = Path(results_dir) / ".chains" if checkpoint_dir is None else Path(checkpoint_dir)
    return root / run.data.folder / run.run_id


def run_converged(run: ConvergedRun, results_dir="results", checkpoint_dir=None,
                  on_stale="error") -> dict:
    """Run (or continue) one converged-protocol run and write its record.

    The chains are checkpointed after every segment in ``checkpoint_dir/<dataset>/<run-id>/``
    (default: ``<results_dir>/.chains``, not meant to be committed), so an interrupted run
    continues where it stopped, bit for bit. The record: why the run stopped (``"converged"``,
    ``"max_sweeps"``, ``"cap_seconds"``), split-R-hat and bulk/tail ESS of K and TDLL, the sweeps
    and the largest sampler seconds of a chain, the CPU seconds of the call; ``K_mean`` (over the
    chains' second halves) and TDLL / TDAUC-PR / AUC-ROC of the posterior mean probability
    pooled over the chains' last segments; per-chain K and TDLL traces thinned to
    :data:`CONVERGED_TRACE_POINTS` points; the data's fingerprint.

    Checkpointed chains of the same settings but other data (the data file was edited since; the
    digest of the training matrix and test entries differs) raise ``ValueError`` saying the data
    changed and naming the folder, unless ``on_stale="recompute"``: then they are deleted and the
    chains start afresh. A folder of chains of other settings or a damaged checkpoint file raises
    ``chains.CheckpointError`` naming it (delete the folder, or give another ``checkpoint_dir``).
    """
    import shutil

    from . import chains
    if on_stale not in ("error", "recompute"):
        raise ValueError(f"on_stale must be 'error' or 'recompute', got {on_stale!r}")
    from .metrics import auc_roc, bernoulli_tdll, tdauc_pr
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t_cpu = time.process_time()
    ds = run.data.load()
    X_train, test = split(ds.X, cv_fold(ds.shape, run.fold, run.n_folds, run.cv_seed))
    sampler, a_update, m_step = MODELS[run.model]
    kw = dict(test=test, n_avg=run.segment)
    if a_update != "exact":
        kw["a_update"] = a_update
    if m_step != "exact":
        kw["m_step"] = m_step
    if run.T is not None:
        kw["T"] = run.T
    if run.split_merge:
        kw["split_merge"] = run.split_merge
    folder = converged_checkpoint(run, results_dir, checkpoint_dir)

    def chains_of_run():
        return chains.run_until_agree(
            X_train, sampler, starts=run.starts,
            seeds=[run.seed * 1000 + c for c in range(len(run.starts))], segment=run.segment,
            max_sweeps=run.max_sweeps, cap_seconds=run.cap_seconds, rhat=run.rhat,
            var_names=("K", "tdll"), burn_in=CONVERGED_BURN_IN, checkpoint=folder, **kw)
    try:
        cs, summ = chains_of_run()
    except chains.CheckpointError as e:
        if e.kind != "inputs":
            raise
        if on_stale == "error":
            raise ValueError(
                f"the data changed: {folder} holds chains of {run.data.folder}/{run.run_id} computed "
                f"from other data than {run.data.describe()} now (fingerprint {run.data.fingerprint()}; "
                f"the digest of the training matrix and test entries differs from the chains'); pass "
                f"on_stale='recompute' (command line: --recompute-stale) to discard them and start "
                f"afresh, or delete the folder") from None
        shutil.rmtree(folder)
        cs, summ = chains_of_run()
    prob = np.mean([r.test_prob for r in cs.results], axis=0)
    labels = test[2]
    half = summ["sweeps"] // 2
    idx, _ = _thin(cs.results[0].K)
    try:
        roc = auc_roc(labels, prob)
    except ValueError:
        roc = float("nan")
    record = {
        "format": CONVERGED_FORMAT, "run_id": run.run_id, "dataset": run.data.folder,
        "model": run.model, "T": run.T, "fold": run.fold, "protocol": "converged",
        "stopped": summ["stopped"], "converged": bool(summ["converged"]),
        "sweeps": int(summ["sweeps"]), "seconds_per_chain": round(float(summ["seconds"]), 3),
        "diagnostics": {v: {k: (x if isinstance(x, bool) else _number(x)) for k, x in summ[v].items()}
                        for v in ("K", "tdll")},
        "K_mean": float(np.mean([r.K[half:].mean() for r in cs.results])),
        "K_mean_per_chain": [float(r.K[half:].mean()) for r in cs.results],
        "tdll": _number(bernoulli_tdll(labels, prob)), "tdauc_pr": _number(tdauc_pr(labels, prob)),
        "tdauc_roc": _number(roc),
        "acceptance": {k: _number(v) for k, v in (cs.results[0].acceptance or {}).items()},
        "settings": run.settings(),
        "data": {"name": ds.name, "shape": [int(x) for x in ds.shape], "ones": int(ds.n_ones),
                 "fingerprint": _datasets.fingerprint(ds.X), "train_ones": int(X_train.nnz),
                 "test_entries": int(labels.size), "test_ones": int(np.count_nonzero(labels))},
        "traces": {"sweep": [int(i) + 1 for i in idx],
                   "K": [[int(k) for k in r.K[idx]] for r in cs.results],
                   "tdll": [_rounded(r.tdll_trace[idx]) for r in cs.results]},
        "time": {"cpu": round(time.process_time() - t_cpu, 3), "started": started,
                 "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")},
        "versions": {k: machine_info()[k] for k in ("epm_lib", "numpy", "scipy", "numba")},
    }
    write_record(record, run.path(results_dir))
    return record


def read_converged(path) -> dict:
    """Read and check one converged-protocol record; ``ValueError`` naming the file otherwise."""
    path = Path(path)
    rec = _read_json_record(path, CONVERGED_FORMAT)
    for key, want in (("run_id", "a string"), ("model", "a string"), ("fold", "an integer >= 0"),
                      ("K_mean", "a number"), ("tdll", "a number or null (null: not finite)"),
                      ("tdauc_pr", "a number or null (null: not finite)"),
                      ("sweeps", "an integer >= 1"), ("stopped", "a string")):
        _check(path, rec, key, want)
    if rec["run_id"] != path.stem:
        raise ValueError(f"{path}: holds run {rec['run_id']!r}, not {path.stem!r}")
    _check(path, _check(path, rec, "data", "a JSON object"), "fingerprint", "a string", "data.")
    return rec


def load_converged(results_dir="results", dataset=None) -> list[dict]:
    """The converged-protocol records of a data set folder (files that are not complete records
    are skipped with a warning naming the file), sorted by model, T, fold."""
    folder = Path(results_dir) / (dataset.folder if isinstance(dataset, DataSpec) else str(dataset)) \
        / "converged"
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(read_converged(path))
        except (ValueError, OSError) as e:
            warnings.warn(f"skipping {e}", stacklevel=2)
    out.sort(key=lambda r: (_MODEL_ORDER.get(r["model"], 99), r["T"] or 0, r["fold"], r["run_id"]))
    return out


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def _fold_tokens(tokens):
    out = []
    for tok in tokens:
        for part in str(tok).replace(",", " ").split():
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ValueError(f"cannot read fold {part!r}: give numbers or ranges like 0-9")
            a = int(m.group(1))
            b = int(m.group(2)) if m.group(2) else a
            if b < a:
                raise ValueError(f"empty fold range {part!r}")
            out.extend(range(a, b + 1))
    return out


def _short_list(ids, limit, verbose):
    if verbose or len(ids) <= limit:
        return ", ".join(ids)
    return ", ".join(ids[:limit]) + f", ... ({len(ids) - limit} more; -v lists all)"


def _build_parser():
    p = argparse.ArgumentParser(
        prog="python -m epm_lib.experiments",
        description="Run the cross-validated experiments of Sec. 5 of Ohama et al. (2017): "
                    "every (data set, model, T, fold, seed) is one run, written as one JSON file "
                    "<results>/<dataset>/<run-id>.json as soon as it finishes. Runs whose file "
                    "holds a record of the same data (fingerprint) are skipped, so rerunning the "
                    "same command resumes an interrupted grid; records of other data (an edited "
                    "file, another file of the same name) stop the grid with an error unless "
                    "--recompute-stale is given.",
        epilog="Examples:\n"
               "  python -m epm_lib.experiments --dataset enron09 --folds 0-9 --jobs 2\n"
               "  EPM_DATA_DIR=/data python -m epm_lib.experiments --dataset movielens100k "
               "--models DEPM IDEPM --T 128 --folds 0\n"
               "  python -m epm_lib.experiments --dataset my_graph.csv --models IDEPM --K-init 10 100\n"
               "  python -m epm_lib.experiments --dataset movielens1m --dask-scheduler tcp://host:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("what to run")
    g.add_argument("--dataset", nargs="+", required=True, metavar="NAME|FILE",
                   help=f"data set(s): {', '.join(_datasets.DATASETS)}, or the path of your own "
                        f"triplet/edge-list or Matrix Market file (read by datasets.load_file)")
    g.add_argument("--models", nargs="+", default=list(PAPER_MODELS), metavar="MODEL",
                   help=f"models among {', '.join(MODELS)} (default: {' '.join(PAPER_MODELS)}); "
                        f"'paper' = the update as printed (errata E3, E4, E6)")
    g.add_argument("--T", nargs="+", type=int, default=None, metavar="T",
                   help=f"truncation levels of the truncated models (default: "
                        f"{' '.join(map(str, PAPER_T))}); not for the IDEPM")
    g.add_argument("--K-init", nargs="+", type=int, default=None, metavar="K",
                   help=f"IDEPM: initial number(s) of atoms (default {DEFAULT_K_INIT})")
    g.add_argument("--folds", nargs="+", default=["0-9"], metavar="F",
                   help="folds to run: numbers and ranges, e.g. 0-9 or 0 3 5-7 (default 0-9)")
    g.add_argument("--n-folds", type=int, default=DEFAULT_N_FOLDS,
                   help=f"number of cross-validation folds (default {DEFAULT_N_FOLDS})")
    g.add_argument("--cv-seed", type=int, default=DEFAULT_CV_SEED,
                   help=f"seed of the fold permutation (default {DEFAULT_CV_SEED})")
    g.add_argument("--seeds", nargs="+", type=int, default=[0], metavar="S",
                   help="sampler seed(s) (default 0)")
    g.add_argument("--n-iter", type=int, default=600, help="Gibbs iterations (default 600)")
    g.add_argument("--n-avg", type=int, default=DEFAULT_N_AVG,
                   help=f"final iterations averaged for TDLL/TDAUC-PR/K (default {DEFAULT_N_AVG})")
    g.add_argument("--heldout", choices=HELDOUT, default="zeros",
                   help="held-out entries are observed zeros of the training matrix (Sec. 5, the "
                        "default) or missing (masked: left out of the likelihood); 'missing' runs "
                        "get run ids ending in -missing")
    g.add_argument("--converged", action="store_true",
                   help="the converged protocol instead of Sec. 5's: per model, T and fold, chains from "
                        "dispersed starts until split-R-hat <= --rhat on K and TDLL or a cap; one record "
                        "each in <results>/<dataset>/converged/, chains checkpointed in "
                        "<results>/.chains (rerunning continues them)")
    g.add_argument("--segment", type=int, default=250, help="converged: sweeps between R-hat checks")
    g.add_argument("--max-sweeps", type=int, default=20000, help="converged: sweeps per chain at most")
    g.add_argument("--cap-seconds", type=float, default=1800.0,
                   help="converged: sampler seconds per chain at most")
    g.add_argument("--rhat", type=float, default=1.01, help="converged: the R-hat target")
    g.add_argument("--split-merge", type=int, default=0,
                   help="converged: split-merge proposals per sweep (IDEPM, DEPM)")
    g.add_argument("--checkpoints", metavar="DIR", default=None,
                   help="converged: folder of the checkpointed chains (default: <results>/.chains)")
    g.add_argument("--baselines", action="store_true",
                   help="score the baselines (popularity, truncated SVD; epm_lib.baselines) on the "
                        "folds instead of fitting models, under both held-out protocols, one file "
                        "per fold in <results>/<dataset>/baselines/")
    d = p.add_argument_group("data")
    d.add_argument("--data-dir", default=None,
                   help="folder with ml-100k/ and ml-1m/ (default: $EPM_DATA_DIR, else the "
                        "repository's data/)")
    d.add_argument("--threshold", type=float, default=None,
                   help="own file: x = 1 iff value > THRESHOLD (default: value != 0)")
    d.add_argument("--sep", default=None, help="own file: field separator (default: guessed)")
    d.add_argument("--square", action="store_true",
                   help="own file: rows and columns are the same nodes (a directed graph)")
    x = p.add_argument_group("where and how")
    x.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    x.add_argument("--jobs", type=int, default=-1,
                   help="parallel processes (default -1: all cores; 1: in this process)")
    dask = x.add_mutually_exclusive_group()
    dask.add_argument("--dask-scheduler", metavar="ADDRESS", default=None,
                      help="run on a Dask cluster (e.g. tcp://host:8786); the workers need "
                           "epm_lib and the data")
    dask.add_argument("--dask-local", metavar="N", type=int, default=None,
                      help="run on a local Dask cluster of N single-threaded worker processes")
    x.add_argument("--recompute-stale", action="store_true",
                   help="recompute (and overwrite) runs whose record was computed from other data "
                        "than the data set now read (its fingerprint differs: the file was edited, "
                        "or another file of the same name was given); without this option such "
                        "records stop the grid with an error")
    x.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    x.add_argument("--no-progress", action="store_true", help="no progress bar")
    x.add_argument("-v", "--verbose", action="store_true", help="list every run id")
    return p


def _one_line(e) -> str:
    return " ".join(str(e).split())


def _check_writable(folder, hint, create=False):
    """Before any run: ``folder`` can be written (``create``: it is made if missing), else
    ``OSError`` naming it and ``hint``. A folder that does not exist yet is checked at its nearest
    existing parent (which must be a folder in which files can be created)."""
    folder = Path(folder)
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        probe = folder
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            raise OSError(f"{folder}: cannot be written: {probe} is not a folder; {hint}")
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".epm-write-test.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        if e.errno is None:                        # ours, above
            raise
        raise OSError(f"{folder}: cannot be written ({e.strerror or e}); {hint}") from None


def _check_results_writable(args, folders):
    hint = "give another results folder with --results DIR (nothing was run)"
    _check_writable(args.results, hint, create=True)
    for f in folders:
        _check_writable(f, hint)


def _main_converged(args, runs) -> int:
    """``--converged``: the runs of the grid under the converged protocol, one after the other; a
    run whose record holds the same settings and data is skipped. A record of the same settings
    but other data (fingerprints differ: the data file was edited) is stale: an error naming it,
    unless ``--recompute-stale`` (then it and its checkpointed chains are discarded)."""
    try:
        conv = list(dict.fromkeys(
            ConvergedRun(r.data, r.model, T=r.T, fold=r.fold, seed=r.seed, segment=args.segment,
                         max_sweeps=args.max_sweeps, cap_seconds=args.cap_seconds, rhat=args.rhat,
                         split_merge=args.split_merge if MODELS[r.model][0] in ("IDEPM", "DEPM") else 0,
                         n_folds=r.n_folds, cv_seed=r.cv_seed) for r in runs))
    except ValueError as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    todo, stale = [], {}
    try:
        for c in conv:
            path = c.path(args.results)
            try:
                rec = read_converged(path) if path.exists() else None
            except (ValueError, OSError):
                rec = None
            if rec is not None and rec.get("settings") == c.settings():
                if rec["data"]["fingerprint"] == c.data.fingerprint():
                    continue
                stale[c] = rec["data"]["fingerprint"]
            todo.append(c)
    except (ValueError, OSError) as e:             # a data set that cannot be read
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    note = f" ({len(stale)} of other data: stale" + (", recomputed)" if args.recompute_stale else ")") \
        if stale else ""
    print(f"{len(conv)} converged-protocol runs in {args.results}/: {len(conv) - len(todo)} done, "
          f"{len(todo)} to run{note}: {_short_list([c.run_id for c in todo], 12, args.verbose)}")
    if stale and not args.recompute_stale:
        lines = [f"the data changed: {len(stale)} converged record(s) hold the same settings but were "
                 f"computed from other data (fingerprints differ):"]
        for c, fp in stale.items():
            lines.append(f"  {c.path(args.results)}: data fingerprint {fp}, but {c.data.describe()} "
                         f"now has {c.data.fingerprint()}")
        lines.append("Pass --recompute-stale to discard these records and their checkpointed chains "
                     f"(in {converged_checkpoint(next(iter(stale)), args.results, args.checkpoints).parent}/) "
                     "and recompute them, or write the new results to another folder (--results DIR).")
        print("error: " + "\n".join(lines), file=sys.stderr)
        return 1
    if args.dry_run:
        return 0
    try:
        specs = list(dict.fromkeys(c.data for c in conv))
        _check_results_writable(args, [Path(args.results) / s.folder / "converged" for s in specs])
        root = Path(args.results) / ".chains" if args.checkpoints is None else Path(args.checkpoints)
        _check_writable(root, "give another checkpoint folder with --checkpoints DIR (nothing was run)",
                        create=args.checkpoints is not None)
    except OSError as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    on_stale = "recompute" if args.recompute_stale else "error"
    for c in todo:
        try:
            if c in stale:                         # discard the record of other data first
                c.path(args.results).unlink(missing_ok=True)
            rec = run_converged(c, args.results, args.checkpoints, on_stale=on_stale)
        except (ValueError, OSError) as e:
            print(f"error: {c.data.folder}/{c.run_id}: {_one_line(e)}", file=sys.stderr)
            return 1
        except Exception as e:                     # never a raw traceback: say what and where
            print(f"error: {c.data.folder}/{c.run_id}: {type(e).__name__}: {_one_line(e)}",
                  file=sys.stderr)
            return 1
        d = rec["diagnostics"]
        print(f"{c.data.folder}/{c.run_id}: {rec['stopped']} after {rec['sweeps']} sweeps "
              f"({rec['seconds_per_chain']:.0f} s a chain); R-hat K {rhat_text(d['K'])}, TDLL "
              f"{rhat_text(d['tdll'])}; K {rec['K_mean']:.1f}, TDLL {rec['tdll']:.5f}", flush=True)
    return 0


_UNSET = object()


def _given_options(parser, argv) -> set:
    """The destinations of the options given on the command line (whatever their value: an option
    given with its default value counts as given)."""
    saved = [(a, a.default) for a in parser._actions if a.dest != argparse.SUPPRESS]
    try:
        for a, _ in saved:
            a.default = _UNSET
        ns = parser.parse_args(argv)
    finally:
        for a, d in saved:
            a.default = d
    return {k for k, v in vars(ns).items() if v is not _UNSET}


_FLAG = {"n_iter": "--n-iter", "n_avg": "--n-avg", "jobs": "--jobs", "dask_local": "--dask-local",
         "dask_scheduler": "--dask-scheduler", "segment": "--segment", "max_sweeps": "--max-sweeps",
         "cap_seconds": "--cap-seconds", "rhat": "--rhat", "split_merge": "--split-merge",
         "checkpoints": "--checkpoints", "models": "--models", "T": "--T", "K_init": "--K-init",
         "seeds": "--seeds", "threshold": "--threshold", "sep": "--sep", "square": "--square"}
_CONVERGED_ONLY = ("segment", "max_sweeps", "cap_seconds", "rhat", "split_merge", "checkpoints")


def _refuse_ignored(args, given, specs, models):
    """``ValueError`` naming an option that the chosen mode (grid, ``--converged``,
    ``--baselines``), the models or the data sets would ignore."""
    if args.converged and args.baselines:
        raise ValueError("--converged and --baselines are two different runs: give one")
    if (args.converged or args.baselines) and args.heldout != "zeros":
        raise ValueError("--heldout missing is for model runs of Sec. 5's protocol (the baselines are "
                         "scored under both protocols; the converged protocol holds the entries out as zeros)")
    if args.converged and args.K_init is not None:
        raise ValueError("--K-init is not for --converged: its chains start from one atom and from many")
    if args.baselines:
        for k in ("models", "T", "K_init", "seeds", "n_iter", "n_avg", "jobs", "dask_local",
                  "dask_scheduler") + _CONVERGED_ONLY:
            if k in given:
                raise ValueError(f"{_FLAG[k]} is not used by --baselines (it scores the baselines on "
                                 f"the folds, in this process, under both held-out protocols): leave it out")
    elif args.converged:
        for k in ("n_iter", "n_avg"):
            if k in given:
                raise ValueError(f"{_FLAG[k]} is not used by --converged: its chains run in segments "
                                 f"(--segment) until they agree (--rhat) or a cap (--max-sweeps, "
                                 f"--cap-seconds): leave it out")
        for k in ("jobs", "dask_local", "dask_scheduler"):
            if k in given:
                raise ValueError(f"{_FLAG[k]} is not used by --converged: its runs go one after the "
                                 f"other in this process: leave it out")
        if "split_merge" in given and args.split_merge and \
                not any(MODELS[m][0] in ("IDEPM", "DEPM") for m in models):
            raise ValueError(f"--split-merge is for the IDEPM and the DEPM; none of the models "
                             f"{', '.join(models)} uses it: leave it out")
    else:
        for k in _CONVERGED_ONLY:
            if k in given:
                raise ValueError(f"{_FLAG[k]} is for --converged runs; the grid of Sec. 5's "
                                 f"protocol does not use it: leave it out (or add --converged)")
        if "jobs" in given and (args.dask_local or args.dask_scheduler):
            raise ValueError("--jobs is not used with --dask-local / --dask-scheduler (the Dask "
                             "workers run the runs): leave it out")
    if not any(s.path is not None for s in specs):
        for k in ("threshold", "sep", "square"):
            if k in given:
                raise ValueError(f"{_FLAG[k]} is for reading your own file; "
                                 f"{', '.join(s.folder for s in specs)} is a built-in data set: leave it out")


def main(argv=None) -> int:
    """The command line (``python -m epm_lib.experiments --help``). Returns the exit code.

    Options that the chosen mode (Sec. 5's grid, ``--converged``, ``--baselines``), the models or
    the data sets would not use are refused (exit code 2), so that no option is silently ignored;
    the results folder (and the converged protocol's checkpoint folder) is checked to be writable
    before any run starts."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    given = _given_options(parser, argv)
    try:
        file_options = {k: v for k, v in (("threshold", args.threshold), ("sep", args.sep))
                        if v is not None}
        if args.square:
            file_options["square"] = True
        specs = [DataSpec.parse(d, data_dir=args.data_dir, **file_options) for d in args.dataset]
        models = [_canonical_model(m) for m in args.models]
        _refuse_ignored(args, given, specs, models)
        if args.baselines:
            folds = _parse_folds(_fold_tokens(args.folds), args.n_folds)
        if args.T is not None and all(MODELS[m][0] == "IDEPM" for m in models):
            raise ValueError(f"--T {' '.join(map(str, args.T))} given, but the IDEPM is not "
                             f"truncated (use --K-init for its initial number of atoms)")
        runs = grid(specs, models=models, T=args.T,
                    folds=_fold_tokens(args.folds), seeds=args.seeds, n_iter=args.n_iter,
                    n_avg=args.n_avg, K_init=[None] if args.K_init is None else args.K_init,
                    n_folds=args.n_folds, cv_seed=args.cv_seed, heldout=args.heldout)
    except ValueError as e:                        # includes datasets.DataError
        parser.error(str(e))
    if args.converged:
        return _main_converged(args, runs)
    if args.baselines:
        if args.dry_run:
            print(f"baselines of {', '.join(s.folder for s in specs)} on folds {folds}")
            return 0
        try:
            _check_results_writable(args, [Path(args.results) / s.folder / "baselines" for s in specs])
            for spec in specs:
                recs = run_baselines(spec, folds, args.results, args.n_folds, args.cv_seed,
                                     progress=not args.no_progress,
                                     recompute_stale=args.recompute_stale)
                print(format_baselines(recs))
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    try:
        todo, done, corrupt, stale = plan(runs, args.results)
    except (ValueError, OSError) as e:             # a data set that cannot be read
        print(f"error: {e}", file=sys.stderr)
        return 1
    notes = [f"{len(corrupt)} corrupt, recomputed"] if corrupt else []
    if stale:
        notes.append(f"{len(stale)} of other data: stale"
                     + (", recomputed" if args.recompute_stale else ""))
    print(f"{len(runs)} runs in {args.results}/: {len(done)} done (skipped), "
          f"{len(todo)} to run" + (f" ({'; '.join(notes)})" if notes else ""))
    for spec in dict.fromkeys(r.data for r in runs):
        t = [r.run_id for r in todo if r.data == spec]
        s = [r.run_id for r in done if r.data == spec]
        o = [r.run_id for r in stale if r.data == spec]
        print(f"  {spec.folder}: run {len(t)}" + (f": {_short_list(t, 12, args.verbose)}" if t else ""))
        print(f"  {spec.folder}: skip {len(s)}" + (f": {_short_list(s, 12, args.verbose)}" if s else ""))
        if o:
            print(f"  {spec.folder}: stale {len(o)}: {_short_list(o, 12, args.verbose)}")
    if stale and not args.recompute_stale:
        print(f"error: {StaleResultsError(stale, args.results)}", file=sys.stderr)
        return 1
    if args.dry_run:
        return 0
    try:
        _check_results_writable(args, [Path(args.results) / s.folder for s in specs])
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    cluster = client = None
    on_stale = "recompute" if args.recompute_stale else "error"
    try:
        import joblib
        if args.dask_scheduler or args.dask_local:
            from dask.distributed import Client, LocalCluster
            if args.dask_local:
                cluster = LocalCluster(n_workers=args.dask_local, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
                client = Client(cluster)
            else:
                client = Client(args.dask_scheduler)
            print(f"Dask: {len(client.scheduler_info()['workers'])} worker(s) at "
                  f"{client.scheduler.address}", flush=True)
            with joblib.parallel_config(backend="dask"):
                report = run_grid(runs, args.results, n_jobs=-1, progress=not args.no_progress,
                                  raise_errors=False, log=print, on_stale=on_stale)
        else:
            report = run_grid(runs, args.results, n_jobs=args.jobs, progress=not args.no_progress,
                              raise_errors=False, log=print, on_stale=on_stale)
    except (ValueError, OSError) as e:             # data not found, bad file, ...
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    print(f"\n{len(report.done)} runs computed, {len(report.skipped)} skipped, "
          f"{len(report.failed)} failed in {report.seconds:.1f} s")
    for rid, err in report.failed.items():
        print(f"FAILED {rid}:\n{err}", file=sys.stderr)
    records = load_results(args.results, dataset=list(dict.fromkeys(r.data for r in runs)),
                           run_ids=[r.run_id for r in runs], heldout=args.heldout)
    if records:
        print("\nmean ± standard error over folds (" + args.results + "):")
        print(format_summary(summarize(records)))
    return 1 if report.failed else 0


if __name__ == "__main__":
    # run the importable module's main, not this __main__ copy: the workers (loky, Dask) must
    # unpickle the functions and Runs by reference to epm_lib.experiments
    from epm_lib.experiments import main as _main
    sys.exit(_main())
