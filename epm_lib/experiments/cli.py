"""The command line, ``python -m epm_lib.experiments``: the parser (:func:`_build_parser`), the
refusal of options the chosen mode would ignore, the checks that the folders can be written, and
the three modes: Sec. 5's grid and ``--baselines`` (:func:`main`), ``--converged``
(:func:`_main_converged`)."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .. import datasets as _datasets
from ..fit import DEFAULT_K_INIT
from .baselines import run_baselines
from .converged import (ConvergedRun, converged_checkpoint, read_converged, run_converged,
                        run_converged_runs)
from .grid_runner import StaleResultsError, plan, run_grid
from .records import rhat_text
from .runs import (DEFAULT_CV_SEED, DEFAULT_N_AVG, DEFAULT_N_FOLDS, HELDOUT, MODELS, PAPER_MODELS,
                   PAPER_T, DataSpec, _canonical_model, _fold_tokens, _parse_folds, grid)
from .summary import format_baselines, format_summary, load_results, summarize


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
    g.add_argument("--starts", nargs="+", default=None, metavar="START",
                   help="converged: each chain's start, an initial number of atoms or 'data' (the "
                        "data's start), e.g. --starts data data 1 1 (default: 1 1 T T; the IDEPM 1 1 100 100); "
                        "runs with chains from the data's start get run ids ending in -datastart-converged")
    g.add_argument("--checkpoints", metavar="DIR", default=None,
                   help="converged: folder of the checkpointed chains (default: <results>/.chains)")
    g.add_argument("--baselines", action="store_true",
                   help="score the baselines (popularity, truncated SVD; epm_lib.baselines) on the "
                        "folds instead of fitting models, under both held-out protocols, one file "
                        "per fold in <results>/<dataset>/baselines/")
    d = p.add_argument_group("data")
    d.add_argument("--data-dir", default=None,
                   help="folder with ml-100k/ and ml-1m/ (default: $EPM_DATA_DIR, else the "
                        "repository's data/); MovieLens only, refused for the other data sets")
    d.add_argument("--threshold", type=float, default=None,
                   help="own file: x = 1 iff value > THRESHOLD (default: value != 0)")
    d.add_argument("--sep", default=None, help="own file: field separator (default: guessed)")
    d.add_argument("--square", action="store_true",
                   help="own file: rows and columns are the same nodes (a directed graph)")
    x = p.add_argument_group("where and how")
    x.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    x.add_argument("--jobs", type=int, default=-1,
                   help="parallel processes (default -1: all cores; 1: in this process); --converged: "
                        "runs in parallel, each run's chains in one process")
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
                         starts=None if args.starts is None else
                         tuple(t if t == "data" else int(t) for t in args.starts),
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
        if c in stale:                             # discard the record of other data first
            c.path(args.results).unlink(missing_ok=True)

    def report(rec):
        d = rec["diagnostics"]
        print(f"{rec['dataset']}/{rec['run_id']}: {rec['stopped']} after {rec['sweeps']} sweeps "
              f"({rec['seconds_per_chain']:.0f} s a chain); R-hat K {rhat_text(d['K'])}, TDLL "
              f"{rhat_text(d['tdll'])}; K {rec['K_mean']:.1f}, TDLL {rec['tdll']:.5f}", flush=True)
    try:
        with _pool(args) as backend:
            failed = run_converged_runs(todo, args.results, args.checkpoints, on_stale=on_stale,
                                        n_jobs=args.jobs if backend is None else -1, backend=backend,
                                        progress=not args.no_progress, on_record=report)
    except (ValueError, OSError) as e:             # a Dask scheduler that cannot be reached
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    for key, err in failed.items():
        print(f"error: {key}: {err}", file=sys.stderr)
    return 1 if failed else 0


class _pool:
    """``with _pool(args) as backend``: None (joblib's processes, ``--jobs``), or ``"dask"`` inside
    ``joblib.parallel_config(backend="dask")`` with a client of ``--dask-local N`` single-threaded
    worker processes or of the cluster at ``--dask-scheduler ADDRESS``; a scheduler that cannot be
    reached is an ``OSError`` naming its address."""

    def __init__(self, args):
        self.args, self.cluster, self.client, self.config = args, None, None, None

    def __enter__(self):
        a = self.args
        if not (a.dask_scheduler or a.dask_local):
            return None
        import joblib
        from dask.distributed import Client, LocalCluster
        if a.dask_local:
            self.cluster = LocalCluster(n_workers=a.dask_local, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(a.dask_scheduler, timeout=DASK_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as e:
                raise OSError(f"cannot reach the Dask scheduler at {a.dask_scheduler} within "
                              f"{DASK_TIMEOUT} s ({type(e).__name__}: {_one_line(e)}); start it (dask "
                              f"scheduler) and its workers, or check the address (tcp://host:8786)") from None
        print(f"Dask: {len(self.client.scheduler_info()['workers'])} worker(s) at "
              f"{self.client.scheduler.address}", flush=True)
        self.config = joblib.parallel_config(backend="dask")
        self.config.__enter__()
        return "dask"

    def __exit__(self, *exc):
        if self.config is not None:
            self.config.__exit__(*exc)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


#: Seconds to wait for a Dask scheduler (``--dask-scheduler``) before saying it cannot be reached.
DASK_TIMEOUT = 10


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
_FLAG["starts"] = "--starts"
_CONVERGED_ONLY = ("segment", "max_sweeps", "cap_seconds", "rhat", "split_merge", "checkpoints", "starts")


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
        if "split_merge" in given and args.split_merge and \
                not any(MODELS[m][0] in ("IDEPM", "DEPM") for m in models):
            raise ValueError(f"--split-merge is for the IDEPM and the DEPM; none of the models "
                             f"{', '.join(models)} uses it: leave it out")
    else:
        for k in _CONVERGED_ONLY:
            if k in given:
                raise ValueError(f"{_FLAG[k]} is for --converged runs; the grid of Sec. 5's "
                                 f"protocol does not use it: leave it out (or add --converged)")
    if "jobs" in given and (args.dask_local is not None or args.dask_scheduler):
        raise ValueError("--jobs is not used with --dask-local / --dask-scheduler (the Dask "
                         "workers run the runs): leave it out")
    if not (args.jobs >= 1 or args.jobs == -1):
        raise ValueError(f"--jobs must be an integer >= 1 (processes) or -1 (every core), got {args.jobs}")
    if args.dask_local is not None and args.dask_local < 1:
        raise ValueError(f"--dask-local must be a number of worker processes >= 1, got {args.dask_local}")
    if args.starts is not None:
        bad = [t for t in args.starts if t != "data" and not (t.isdigit() and int(t) >= 1)]
        if bad or len(args.starts) < 2:
            raise ValueError(f"--starts takes at least two chains' starts, each 'data' or an initial number "
                             f"of atoms >= 1, e.g. --starts data data 1 1; got {' '.join(args.starts)}")
    if "data_dir" in given and not any(s.path is None and s.name.startswith("movielens") for s in specs):
        names = ", ".join(s.folder for s in specs)
        raise ValueError(f"--data-dir is where MovieLens is read from; {names} "
                         f"{'is' if len(specs) == 1 else 'are'} not read from it (toy90 is generated, enron09 "
                         f"is shipped with the repository, your own file is read from its path): leave it out")
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
    on_stale = "recompute" if args.recompute_stale else "error"
    try:
        with _pool(args) as backend:
            report = run_grid(runs, args.results, n_jobs=args.jobs if backend is None else -1,
                              progress=not args.no_progress, raise_errors=False, log=print,
                              on_stale=on_stale)
    except (ValueError, OSError) as e:             # data not found, bad file, no scheduler, ...
        print(f"error: {e}", file=sys.stderr)
        return 1
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
