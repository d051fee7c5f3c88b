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

The package, one file per concern (submodules import each other in one direction:
``folds`` <- ``runs`` <- ``records`` <- ``grid_runner``, ``summary``, ``baselines``,
``converged`` <- ``cli``):

- ``folds.py``: the permutation of the entries, the folds, :func:`split`, :func:`pair_folds`,
  :func:`hold_out`, the checks of shapes and folds;
- ``runs.py``: the models and defaults (:data:`MODEL_SPECS`, :data:`PAPER_T`, ...), :class:`DataSpec`,
  :class:`Run`, :func:`grid`;
- ``records.py``: :func:`run_one`, :func:`make_record`, :func:`write_record`,
  :func:`read_record` and the validators of records, :func:`machine_info`;
- ``grid_runner.py``: :func:`plan`, :func:`run_grid`, its workers and their watchdogs,
  :class:`GridReport`, :class:`GridError`, :class:`StaleResultsError`;
- ``summary.py``: :func:`load_results`, :func:`summarize`, :func:`format_summary`,
  :func:`format_baselines`;
- ``baselines.py``: the baseline records on the same folds (:func:`run_baselines`, ...);
- ``converged.py``: the converged protocol (:class:`ConvergedRun`, :func:`run_converged`, ...);
- ``cli.py`` and ``__main__.py``: the command line.

Every name is re-exported here, so ``from epm_lib.experiments import split`` keeps working. A
module global that a test replaces (``monkeypatch``) must be replaced in the submodule that uses
it, e.g. ``epm_lib.experiments.folds._TABLE_MAX``, ``epm_lib.experiments.records.fit`` (the
``fit`` of :func:`run_one`), ``epm_lib.experiments.grid_runner.WATCH_INTERVAL``.
"""
from __future__ import annotations

from .folds import (_PERM_CACHE, cv_fold, cv_folds, cv_permutation, hold_out, pair_folds,
                    split)
from .runs import (DEFAULT_CV_SEED, DEFAULT_N_AVG, DEFAULT_N_FOLDS, HELDOUT, MODEL_SPECS, PAPER_MODELS,
                   PAPER_T, DataSpec, Run, grid)
from .records import (RECORD_FORMAT, TRACE_DIGITS, machine_info, make_record, read_record,
                      rhat_text, run_one, write_record)
from .grid_runner import (GridError, GridReport, Plan, StaleResultsError, _execute, plan,
                          run_grid)
from .summary import format_baselines, format_summary, load_results, summarize
from .baselines import (BASELINE_FORMAT, baseline_path, baseline_record, load_baselines,
                        read_baseline, run_baselines)
from .converged import (CONVERGED_BURN_IN, CONVERGED_FORMAT, CONVERGED_TRACE_POINTS,
                        ConvergedRun, converged_checkpoint, load_converged, read_converged,
                        run_converged, run_converged_runs)
from .cli import main

__all__ = [
    "PAPER_T", "PAPER_MODELS", "MODEL_SPECS", "RECORD_FORMAT",
    "cv_permutation", "cv_folds", "cv_fold", "split", "pair_folds", "hold_out",
    "DataSpec", "Run", "grid", "run_one", "make_record", "write_record", "read_record",
    "plan", "Plan", "run_grid", "GridReport", "GridError", "StaleResultsError",
    "load_results", "summarize", "format_summary", "main", "HELDOUT",
    "BASELINE_FORMAT", "baseline_path", "baseline_record", "read_baseline", "run_baselines",
    "load_baselines", "CONVERGED_FORMAT", "ConvergedRun", "run_converged", "run_converged_runs", "read_converged",
    "load_converged", "converged_checkpoint",
]
