"""One run -> one record: fitting a run (:func:`run_one`), its JSON-ready record
(:func:`make_record`, :func:`machine_info`, the rounding of traces), writing it atomically
(:func:`write_record`), and reading and checking a record (:func:`read_record` and the
``_check*`` validators, also used for the baseline and converged records)."""
from __future__ import annotations

import json
import math
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import datasets as _datasets
from ..atomic import atomic_write_text
from ..fit import fit, missing_mask
from ..starts import INITS
from .folds import cv_fold, split
from .runs import HELDOUT, MODEL_SPECS, Run


#: Version tag of the result files (bump when the layout changes).
RECORD_FORMAT = "epm-book run record 1"
#: Significant digits of the traces in a record.
TRACE_DIGITS = 6


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

        from .. import __version__
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
    sampler, a_update, m_step = MODEL_SPECS[run.model]     # Sec. 5's start: init 'paper' ('random')
    options = dict(a_update=a_update) if sampler in ("EPM", "CEPM") else \
        dict(m_step=m_step) if sampler == "IDEPM" else {}          # only the options a model has
    if run.heldout == "missing":
        options["mask"] = missing_mask(ds.shape, test[0], test[1])
    result = fit(X_train, sampler, T=run.T, n_iter=run.n_iter, n_avg=run.n_avg, seed=run.seed,
                 test=test, K_init=run.K_init, init=INITS[sampler][0], **options)
    record = make_record(run, ds, X_train, test, result, time.perf_counter() - t_wall,
                         time.thread_time() - t_cpu, started)
    if results_dir is not None:
        write_record(record, run.path(results_dir))
    return record


def write_record(record: dict, path) -> Path:
    """Write a record as compact JSON, atomically (``atomic.atomic_write_text``: a temp file in
    the same folder, fsync, mode 0o644, ``os.replace``). A reader (or a resumed grid) sees the
    complete file or none."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, separators=(",", ":"), allow_nan=False)
    atomic_write_text(path, text + "\n", mode=0o644)
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


def _read_json_record(path, fmt) -> dict:
    """Strict JSON (no NaN / Infinity) holding an object with ``"format": fmt``; else ``ValueError``."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(rec, dict) or rec.get("format") != fmt:
        raise ValueError(f"{path}: not a record of format {fmt!r}")
    return rec
