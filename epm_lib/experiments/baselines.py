"""Baselines on the same folds: scoring ``epm_lib.baselines`` on one fold under both held-out
protocols (:func:`baseline_record`), one file per fold (:func:`baseline_path`), written and
resumed (:func:`run_baselines`), read and checked (:func:`read_baseline`,
:func:`load_baselines`)."""
from __future__ import annotations

import re
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import datasets as _datasets
from ..fit import missing_mask
from .folds import cv_fold, split
from .records import _check, _number, _read_json_record, machine_info, write_record
from .runs import DEFAULT_CV_SEED, DEFAULT_N_FOLDS, HELDOUT, DataSpec, _fold_suffix, _parse_folds


#: Version tag of the baseline files.
BASELINE_FORMAT = "epm-book baseline record 1"


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
    from ..baselines import score_baselines
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
