"""What to run: the models and defaults of Sec. 5, a data set named so that every worker can
load it (:class:`DataSpec`), one run of the grid (:class:`Run`, its id and results path), and
the runs of a grid (:func:`grid`, with the parsing of fold lists)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import datasets as _datasets
from ..fit import DEFAULT_K_INIT
from .folds import _CACHE_LOCK, _int


#: Truncation levels of Sec. 5 (Figs. 2 and 4).
PAPER_T = (2, 4, 8, 16, 32, 64, 128)
#: The grid's models: the three truncated samplers, the EPM with the a-update as printed, the IDEPM.
PAPER_MODELS = ("EPM", "EPMpaper", "CEPM", "DEPM", "IDEPM")
#: Model name -> (sampler, a_update, m_step) passed to ``epm_lib.fit``.
MODEL_SPECS = {
    "EPM": ("EPM", "exact", "exact"),
    "EPMpaper": ("EPM", "paper", "exact"),
    "CEPM": ("CEPM", "exact", "exact"),
    "CEPMpaper": ("CEPM", "paper", "exact"),
    "DEPM": ("DEPM", "exact", "exact"),
    "IDEPM": ("IDEPM", "exact", "exact"),
    "IDEPMpaper": ("IDEPM", "exact", "paper"),
}
#: The former name of :data:`MODEL_SPECS` (``epm_lib.fit_options.MODELS`` is the tuple of ``fit``'s
#: models), still imported by ``cli.py``; to go once it imports ``MODEL_SPECS``.
MODELS = MODEL_SPECS
_MODEL_ORDER = {m: k for k, m in enumerate(MODEL_SPECS)}
#: Defaults of Sec. 5 (a run id mentions a setting only when it differs from these).
DEFAULT_N_AVG, DEFAULT_N_FOLDS, DEFAULT_CV_SEED = 100, 10, 0
#: How held-out entries enter training: observed zeros (Sec. 5) or missing (masked).
HELDOUT = ("zeros", "missing")


def _canonical_model(name) -> str:
    if isinstance(name, str):
        for m in MODEL_SPECS:
            if m.lower() == name.lower():
                return m
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODEL_SPECS)}")


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

    ``data``: a :class:`DataSpec` or a data set name; ``model``: a key of :data:`MODEL_SPECS`;
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
        sampler = MODEL_SPECS[model][0]
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
        sampler, a_update, m_step = MODEL_SPECS[self.model]
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
    truncated = [m for m in models if MODEL_SPECS[m][0] != "IDEPM"]
    infinite = [m for m in models if MODEL_SPECS[m][0] == "IDEPM"]
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


def _fold_suffix(n_folds, cv_seed):
    return "" if (n_folds, cv_seed) == (DEFAULT_N_FOLDS, DEFAULT_CV_SEED) else f"-cv{n_folds}s{cv_seed}"


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
