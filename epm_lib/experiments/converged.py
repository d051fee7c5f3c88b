"""The converged protocol: chains from dispersed starts on one fold until they agree
(:class:`ConvergedRun`, :func:`run_converged`, with checkpointed chains in
:func:`converged_checkpoint`), and its records read back (:func:`read_converged`,
:func:`load_converged`)."""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import datasets as _datasets
from ..fit import DEFAULT_K_INIT
from .folds import _int, cv_fold, split
from .records import (_check, _is_number, _number, _read_json_record, _rounded, machine_info,
                      write_record)
from .runs import (_MODEL_ORDER, DEFAULT_CV_SEED, DEFAULT_N_FOLDS, MODEL_SPECS, DataSpec, Run,
                   _fold_suffix)


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
        starts = (1, 1, many, many) if self.starts is None else tuple(
            k if isinstance(k, str) and k == "data" else
            int(k) if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else k
            for k in self.starts)
        atoms = [k for k in starts if not (isinstance(k, str) and k == "data")]
        if len(starts) < 2 or not all(isinstance(k, int) for k in atoms) or \
                (atoms and (min(atoms) < 1 or (base.T is not None and max(atoms) > base.T))):
            raise ValueError(f"starts must be >= 2 chains' starts, each an initial number of atoms in "
                             f"1..{base.T or 'inf'} or 'data' (the data's start), got {starts}")
        object.__setattr__(self, "starts", starts)
        from ..chains import check_segment
        object.__setattr__(self, "segment", check_segment(self.segment, CONVERGED_BURN_IN))
        object.__setattr__(self, "split_merge", _int("split_merge", self.split_merge, 0))
        if self.split_merge and MODEL_SPECS[base.model][0] not in ("IDEPM", "DEPM"):
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
        """E.g. ``IDEPM-fold0-seed0-sm20-converged``, ``DEPM-T128-fold3-seed0-converged``,
        ``EPM-T16-fold1-seed0-datastart-converged`` (chains from the data's start among them)."""
        size = "" if self.T is None else f"-T{self.T}"
        rid = f"{self.model}{size}-fold{self.fold}-seed{self.seed}"
        if self.split_merge:
            rid += f"-sm{self.split_merge}"
        if self.data_start:
            rid += "-datastart"
        rid += _fold_suffix(self.n_folds, self.cv_seed)
        return rid + "-converged"

    @property
    def data_start(self) -> bool:
        """Whether some chains start from the data (``fit(init="data")``; run id ``-datastart``)."""
        return "data" in self.starts

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


def _scores(labels, prob) -> dict:
    from ..metrics import auc_roc, bernoulli_tdll, tdauc_pr
    try:
        roc = auc_roc(labels, prob)
    except ValueError:
        roc = float("nan")
    return {"tdll": _number(bernoulli_tdll(labels, prob)), "tdauc_pr": _number(tdauc_pr(labels, prob)),
            "tdauc_roc": _number(roc)}


def _diag(d) -> dict:
    return {k: (x if isinstance(x, bool) else _number(x)) for k, x in d.items()}


def _per_start(cs, summ, labels) -> tuple:
    """Per chain: its start, seed, K over its second half and the scores of its own posterior
    mean; per group of chains sharing a start: the chains, their split-R-hat and ESS of K and
    TDLL (``summary["groups"]``), K and the scores of their pooled posterior mean; and the
    stacking weights of the groups' pooled predictions on the held-out entries
    (``epm_lib.stacking``; which region the held-out entries prefer)."""
    from ..chains import _start_label
    from ..stacking import log_score, stacking_weights
    half = summ["sweeps"] // 2
    chains = [{"start": s, "seed": int(seed), "K_mean": float(r.K[half:].mean()), **_scores(labels, r.test_prob)}
              for s, seed, r in zip(cs.starts, cs.seeds, cs.results)]
    groups = {}
    for label in dict.fromkeys(_start_label(s) for s in cs.starts):
        idx = [c for c, s in enumerate(cs.starts) if _start_label(s) == label]
        prob = np.mean([cs.results[c].test_prob for c in idx], axis=0)
        g = summ["groups"].get(label, {})
        groups[label] = {"chains": idx, "K_mean": float(np.mean([chains[c]["K_mean"] for c in idx])),
                         **_scores(labels, prob),
                         "diagnostics": {v: _diag(g[v]) for v in ("K", "tdll") if v in g}}
    stacking = None
    if len(groups) >= 2:
        P = np.column_stack([np.mean([cs.results[c].test_prob for c in g["chains"]], axis=0)
                             for g in groups.values()])
        w = stacking_weights(P, labels)
        stacking = {"weights": {k: _number(x) for k, x in zip(groups, w)},
                    "tdll": _number(log_score(P, labels, w))}
    return chains, groups, stacking


def run_converged(run: ConvergedRun, results_dir="results", checkpoint_dir=None,
                  on_stale="error", n_jobs=1, write=True) -> dict:
    """Run (or continue) one converged-protocol run and write its record.

    The chains are checkpointed after every segment in ``checkpoint_dir/<dataset>/<run-id>/``
    (default: ``<results_dir>/.chains``, not meant to be committed), so an interrupted run
    continues where it stopped, bit for bit. The record: why the run stopped (``"converged"``,
    ``"max_sweeps"``, ``"cap_seconds"``; ``converged``: whether every chain agreed, split-R-hat
    at most ``rhat``; otherwise the run is *capped*), split-R-hat and bulk/tail ESS of K and TDLL, the sweeps
    and the largest sampler seconds of a chain, the CPU seconds of the call; ``K_mean`` (over the
    chains' second halves) and TDLL / TDAUC-PR / AUC-ROC of the posterior mean probability
    pooled over the chains' last segments; per-chain K and TDLL traces thinned to
    :data:`CONVERGED_TRACE_POINTS` points; the data's fingerprint; ``chains`` (per chain: its
    start, seed, K and scores), ``groups`` (per start shared by several chains: their R-hat, K and
    pooled scores) and ``stacking`` (the weights the held-out entries give each group's pooled
    prediction), see :func:`_per_start`.

    ``n_jobs``: the chains of each segment run in that many processes (``run_until_agree``; the
    record is the same, but for its times). ``write``: write the record (else only return it).

    Checkpointed chains of the same settings but other data (the data file was edited since; the
    digest of the training matrix and test entries differs) raise ``ValueError`` saying the data
    changed and naming the folder, unless ``on_stale="recompute"``: then they are deleted and the
    chains start afresh. A folder of chains of other settings or a damaged checkpoint file raises
    ``chains.CheckpointError`` naming it (delete the folder, or give another ``checkpoint_dir``).
    """
    import shutil

    from .. import chains
    if on_stale not in ("error", "recompute"):
        raise ValueError(f"on_stale must be 'error' or 'recompute', got {on_stale!r}")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t_cpu = time.process_time()
    ds = run.data.load()
    X_train, test = split(ds.X, cv_fold(ds.shape, run.fold, run.n_folds, run.cv_seed))
    sampler, a_update, m_step = MODEL_SPECS[run.model]
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
            var_names=("K", "tdll"), burn_in=CONVERGED_BURN_IN, checkpoint=folder, n_jobs=n_jobs, **kw)
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
    per_chain, groups, stacking = _per_start(cs, summ, labels)
    record = {
        "format": CONVERGED_FORMAT, "run_id": run.run_id, "dataset": run.data.folder,
        "model": run.model, "T": run.T, "fold": run.fold, "protocol": "converged",
        "stopped": summ["stopped"], "converged": bool(summ["converged"]),
        "sweeps": int(summ["sweeps"]), "seconds_per_chain": round(float(summ["seconds"]), 3),
        "diagnostics": {v: _diag(summ[v]) for v in ("K", "tdll")},
        "K_mean": float(np.mean([r.K[half:].mean() for r in cs.results])),
        "K_mean_per_chain": [float(r.K[half:].mean()) for r in cs.results],
        **_scores(labels, prob),
        "chains": per_chain, "groups": groups, "stacking": stacking,
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
    if write:
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


def _execute_converged(run: ConvergedRun, results_dir, checkpoint_dir, on_stale, grid_pid=None):
    """Worker: one converged run -> ("ok", record) or ("error", key, message). Never raises.
    The record is written by the process that submitted the run; the chains are checkpointed
    by the worker (in ``checkpoint_dir``, which a cluster's workers must share to resume a run
    on another machine)."""
    from ..interrupt import ignore_sigint_in_worker
    from .grid_runner import _CURRENT, _watch_parent
    key = f"{run.data.folder}/{run.run_id}"
    _CURRENT[0] = key
    if grid_pid is not None:
        _watch_parent(grid_pid)
        ignore_sigint_in_worker(grid_pid)
    try:
        return "ok", run_converged(run, results_dir, checkpoint_dir, on_stale=on_stale, write=False)
    except (ValueError, OSError) as e:
        return "error", key, " ".join(str(e).split())
    except Exception as e:                          # never a raw traceback: say what and where
        return "error", key, f"{type(e).__name__}: {' '.join(str(e).split())}"


def _converged_cost(run: ConvergedRun) -> float:
    """A rough relative cost, to start the longest runs of a fold first (only the order depends
    on it): atoms touched per sweep (the IDEPM as 64) times the sweeps cap, per chain."""
    return len(run.starts) * (64.0 if run.T is None else float(run.T)) * (run.max_sweeps or 20000)


def run_converged_runs(runs, results_dir="results", checkpoint_dir=None, on_stale="error", n_jobs=1,
                       backend=None, progress=True, on_record=None) -> dict:
    """Run several converged runs, ``n_jobs`` at a time (joblib processes; -1: every core; in a
    ``joblib.parallel_config(backend="dask")`` block with ``backend="dask"``, the workers of a
    Dask cluster), folds in order and the longest runs of a fold first. Each run's chains go in
    one process, checkpointed after every segment, so a killed run (or worker) resumes where its
    last segment ended; this process writes each record as it arrives (``on_record(record)`` is
    then called). A run's record is the one :func:`run_converged` writes serially, bit for bit,
    but for its times. Returns ``{"<dataset>/<run-id>": message}`` of the runs that failed (the
    others are written)."""
    import os

    import joblib

    from ..chains import check_n_jobs
    n_jobs = check_n_jobs(n_jobs, "n_jobs (processes running converged runs)")
    runs = sorted(dict.fromkeys(runs), key=lambda r: (r.fold, -_converged_cost(r)))
    failed = {}
    bar = None
    if progress and runs:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(runs), unit="run", desc="converged runs", dynamic_ncols=True)
    try:
        if n_jobs == 1 and backend is None:
            outs = (_execute_converged(r, results_dir, checkpoint_dir, on_stale) for r in runs)
        else:
            try:
                parallel = joblib.Parallel(n_jobs=n_jobs, backend=backend, batch_size=1,
                                           return_as="generator_unordered")
            except ValueError:                  # a backend without generators
                parallel = joblib.Parallel(n_jobs=n_jobs, backend=backend, batch_size=1)
            pid = os.getpid()
            outs = parallel(joblib.delayed(_execute_converged)(r, results_dir, checkpoint_dir, on_stale, pid)
                            for r in runs)
        for out in outs:
            if out[0] == "ok":
                rec = out[1]
                write_record(rec, Path(results_dir) / rec["dataset"] / "converged" / f"{rec['run_id']}.json")
                if on_record is not None:
                    on_record(rec)
            else:
                failed[out[1]] = out[2]
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return failed
