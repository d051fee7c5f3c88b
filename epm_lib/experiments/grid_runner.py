"""Running a grid: which runs are done, to do, corrupt or stale (:func:`plan`), the parallel
runner (:func:`run_grid`, its workers :func:`_execute` and their watchdogs), its report
(:class:`GridReport`) and errors (:class:`GridError`, :class:`StaleResultsError`), and the cost
estimate that orders the runs (:func:`_cost`)."""
from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import datasets as _datasets
from ..interrupt import ignore_sigint_in_worker
from .folds import _CACHE_LOCK, _check_folds
from .records import read_record, run_one, write_record
from .runs import Run, grid


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
