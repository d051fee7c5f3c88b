"""Several chains from dispersed starts, and whether they agree: ArviZ's split-R-hat and ESS.

A single chain's K or test likelihood after n sweeps may still say more about where the chain
started than about the posterior (``chapters/25_idepm_start``). The field's standard check
(Vehtari, Gelman, Simpson, Carpenter, Buerkner 2021) runs chains from dispersed starts and
compares them: the rank-normalised split-R-hat is close to 1 only when every chain (and each
half of it) explores the same distribution, and the bulk and tail effective sample sizes (ESS)
say how many independent draws the chains are worth. ``fit_chains`` runs the chains (in
parallel with joblib, each with its own seed) from few and from many atoms (``K_init``) and
returns their traces as an ArviZ ``InferenceData``; ``diagnostics`` computes R-hat and ESS on
the part of the chains after a burn-in.
"""
from __future__ import annotations

import math
import os
import warnings
from numbers import Integral, Real

import numpy as np

from .atomic import atomic_write_text
from .chainset import ChainSet, _arviz, _trace_data, agree, diagnostics, to_inference_data  # noqa: F401 (re-exported)
from .fit import concat, fit, load_result
from .interrupt import ignore_sigint_in_worker

__all__ = ["ChainSet", "fit_chains", "spawn_seeds", "to_inference_data", "diagnostics", "TRACE_NAMES",
           "run_until_agree", "min_segment", "check_segment", "traced_names", "CheckpointError",
           "check_n_jobs", "group_diagnostics"]

#: The quantities traced per iteration, besides the hyperparameters of the model ("log_joint":
#: the IDEPM only, ``FitResult.log_joint``).
TRACE_NAMES = ("K", "tdll", "M", "log_joint")


def _is_int(v, lo=0) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool) and v >= lo


def _as_list(name, v, what):
    """``v`` as a list: a list, tuple, range or 1-d array; else ``ValueError`` naming ``name``."""
    if isinstance(v, np.ndarray) and v.ndim == 1:
        return v.tolist()
    if isinstance(v, (list, tuple, range)):
        return list(v)
    raise ValueError(f"{name} must be a sequence of {what}, one per chain (e.g. {name}=(1, 1, 100, 100)), "
                     f"got {v!r}")


def spawn_seeds(seed, n) -> list:
    """``n`` integer seeds for independent chains spawned from one ``seed`` (an int, a
    ``numpy.random.SeedSequence`` or a ``numpy.random.Generator``; ``fit_options.as_seed``):
    ``SeedSequence(seed).spawn(n)``, each child as its first 64-bit word, so that every chain's
    record stores an integer that reproduces it. The same seed gives the same seeds."""
    from .fit_options import as_seed
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(as_seed(seed))
    return [int(c.generate_state(1, dtype=np.uint64)[0]) for c in ss.spawn(int(n))]


def _check_starts_seeds(starts, seeds):
    """``starts``: a sequence of at least two starts, each an integer >= 1 (the chain's ``K_init``,
    the paper's start) or ``"data"`` (``fit(init="data")``); ``seeds``:
    None (0, 1, ...) or one distinct seed per start, each a non-negative integer (or a list of
    them, as ``fit``'s ``seed``). Returns both as lists (numpy integers as ``int``)."""
    starts = _as_list("starts", starts, "integers >= 1 (initial numbers of atoms) or 'data'")
    bad = [k for k in starts if not (_is_int(k, 1) or (isinstance(k, str) and k == "data"))]
    if bad:
        raise ValueError(f"starts must be integers >= 1 (initial numbers of atoms, the paper's start) or "
                         f"'data' (fit's data-driven start), one per chain; got {bad[0]!r} in {starts!r}")
    starts = [k if isinstance(k, str) else int(k) for k in starts]
    if len(starts) < 2:
        raise ValueError(f"give at least two starts (chains), got {starts}")
    if seeds is None:
        return starts, list(range(len(starts)))
    seeds = _as_list("seeds", seeds, "non-negative integers")
    if len(seeds) != len(starts):
        raise ValueError(f"give one seed per start: {len(starts)} starts, {len(seeds)} seeds")
    for s in seeds:
        ok = _is_int(s) or (isinstance(s, (list, tuple)) and len(s) > 0 and all(_is_int(x) for x in s))
        if not ok:
            raise ValueError(f"seeds must be non-negative integers (or lists of them), one per chain; "
                             f"got {s!r} in {seeds!r}")
    seeds = [int(s) if _is_int(s) else [int(x) for x in s] for s in seeds]
    if len(set(map(repr, seeds))) != len(seeds):
        raise ValueError(f"chains must have different seeds (give one distinct seed per start), got {seeds}")
    return starts, seeds


def _one_chain(X, model, K_init, seed, kwargs, parent_pid=None):
    """One chain of :func:`fit_chains`, and the warnings it gave as (message, category) pairs:
    ``fit_chains`` gives them again from its caller's line (and from a pool's worker they would
    be lost)."""
    if parent_pid is not None:           # a pool's worker: Ctrl-C is the parent's to handle
        ignore_sigint_in_worker(parent_pid)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(X, model, seed=seed, **_start_kwargs(K_init), **kwargs)
    return result, [(w.message, w.category) for w in caught]


def _largest_start(model, T):
    """The many-atoms start of an example ``starts``: T for a truncated model, else 100."""
    return T if _is_int(T, 1) and str(model).upper() != "IDEPM" else 100


def _refuse_start_keywords(fit_kwargs, caller, model):
    """``init`` and ``K_init`` are each chain's start: given as keywords they are refused, saying
    what ``starts`` holds."""
    for bad in ("init", "K_init"):
        if bad in fit_kwargs:
            top = _largest_start(model, fit_kwargs.get("T"))
            raise ValueError(f"pass {bad} through starts/seeds, not as a keyword ({bad}={fit_kwargs[bad]!r}): {caller} "
                             f"sets each chain's start from starts=, one per chain, an initial number of atoms "
                             f"(the paper's start on K_init atoms) or 'data' (fit's init='data'), e.g. "
                             f"starts=('data', 'data', 1, {top})")


def _check_chains_upfront(X, model, starts, seeds, fit_kwargs, caller, n_iter=None):
    """Every chain's options checked before any chain runs (a bad start or option used to stop
    the run only when its chain's turn came, after the others had run): the keywords are fit's;
    each start fits the model (at most T atoms); ``fit_options.check_options`` of each chain's
    options (``n_iter``: the sweeps of each fit call, run_until_agree's segment) and the hold
    against the averaged sweeps; X large enough for the data's start where a chain starts there."""
    import inspect
    from .fit import fit as fit_function
    from .fit_options import check_hold_window, check_options
    from .starts import MIN_ONES, enough
    params = inspect.signature(fit_function).parameters
    own = {"X", "model", "seed", "resume"} | ({"n_iter"} if n_iter is not None else set())
    known = [k for k in params if k not in own]
    unknown = [k for k in fit_kwargs if k not in known]
    if unknown:
        raise TypeError(f"{caller} got unknown keyword argument(s) {', '.join(unknown)}: its other keywords go to "
                        f"epm_lib.fit, whose options are {', '.join(known)}")
    kw = {k: p.default for k, p in params.items() if p.kind is p.KEYWORD_ONLY}
    kw.update(fit_kwargs)
    if n_iter is not None:
        kw["n_iter"] = n_iter
    T = kw["T"]
    m = str(model).upper() if isinstance(model, str) else model
    if m in ("EPM", "CEPM", "DEPM") and _is_int(T, 1):
        over = [(c, k) for c, k in enumerate(starts) if k != "data" and k > T]
        if over:
            c, k = over[0]
            raise ValueError(f"starts: {k} atoms (chain {c}) exceed the truncation level T = {T}: a chain of the "
                             f"{m}-{T} starts on at most T atoms; give starts of at most {T} atoms or 'data', "
                             f"e.g. starts=('data', 1, {T})")
    names = inspect.signature(check_options).parameters
    for start in dict.fromkeys(starts):
        opts = check_options(model, **{**{k: kw[k] for k in names if k in kw and k != "model"},
                                       "seed": 0, "resume": None, "K_init": None, "init": None,
                                       **_start_kwargs(start)})
        check_hold_window(opts.hold, opts.n_iter, opts.n_avg)
    if "data" in starts:
        from .fit_data import prepare_matrix
        I, J, rows, _ = prepare_matrix(X)
        if not enough(I, J, rows.shape[0]):
            raise ValueError(f"X ({I} x {J}) has {rows.shape[0]} ones: too few for the data's start (a "
                             f"factorisation needs at least {MIN_ONES} ones and two rows and columns); give "
                             f"numbers of atoms as starts instead, e.g. starts=(1, {_largest_start(model, T)})")


def _describe(start):
    return "from the data's start" if start == "data" else f"from {start} atoms"


def _start_kwargs(start):
    """``fit``'s options for one entry of ``starts``: ``K_init`` (the paper's start) or the data's."""
    return dict(init="data") if start == "data" else dict(K_init=start)


def fit_chains(X, model, *, starts=(1, 100), seeds=None, seed=None, n_jobs=1, **fit_kwargs) -> ChainSet:
    """Run one chain per entry of ``starts`` with its own seed.

    ``starts``: where each chain starts: an initial number of atoms (``K_init``, the paper's start;
    truncated models: 1 <= K_init <= T) or ``"data"`` (``fit``'s data-driven start), e.g.
    ``("data", 1, 100)`` for the data's start beside one atom and a hundred (the default
    ``(1, 100)`` is for the IDEPM). ``seeds``: one per chain (default ``0, 1, ...``); chains must not share a seed.
    ``seed``: instead of ``seeds``, one seed (an int, a ``numpy.random.SeedSequence`` or a
    ``numpy.random.Generator``) from which the chains' seeds are spawned (:func:`spawn_seeds`:
    independent streams, the chain's integer seed recorded as usual).
    ``n_jobs``: chains run in parallel processes (joblib); every chain's numbers are the same
    whatever ``n_jobs`` is. Other keyword arguments go to ``epm_lib.fit`` (``T``, ``n_iter``,
    ``test``, ``split_merge``, ...). Returns a :class:`ChainSet`; ``.diagnostics()`` gives
    split-R-hat and ESS.
    """
    if seed is not None:
        if seeds is not None:
            raise ValueError("give seeds (one per chain) or seed (one to spawn them from), not both")
        seeds = spawn_seeds(seed, len(_as_list("starts", starts, "integers >= 1 or 'data'")))
    starts, seeds = _check_starts_seeds(starts, seeds)
    n_jobs = check_n_jobs(n_jobs)
    _refuse_start_keywords(fit_kwargs, "fit_chains", model)
    _check_chains_upfront(X, model, starts, seeds, fit_kwargs, "fit_chains")
    if n_jobs == 1:
        runs = [_one_chain(X, model, k, s, fit_kwargs) for k, s in zip(starts, seeds)]
    else:
        from joblib import Parallel, delayed
        runs = Parallel(n_jobs=n_jobs)(delayed(_one_chain)(X, model, k, s, fit_kwargs, os.getpid())
                                       for k, s in zip(starts, seeds))
    for _, caught in runs:                  # the chains' warnings, from the caller's line
        for message, category in caught:
            warnings.warn(message, category, stacklevel=2)
    return ChainSet(results=[r for r, _ in runs], starts=starts, seeds=seeds, mask=fit_kwargs.get("mask"),
                    test=fit_kwargs.get("test"))


def _inputs_digest(X, kw):
    """A digest of the data and the fit options of a checkpointed run (the test set, the mask)."""
    import hashlib
    from .fit import mask_entries, prepare_matrix
    I, J, r, c = prepare_matrix(X)
    h = hashlib.sha256(np.array([I, J], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(r * J + c, dtype=np.int64).tobytes())
    for k in sorted(kw):
        v = kw[k]
        h.update(k.encode())
        if k == "test" and v is not None:
            for a in v:
                h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        elif k == "mask" and v is not None:
            h.update(mask_entries(v, (I, J)).tobytes())
        else:
            h.update(repr(v).encode())
    return h.hexdigest()[:32]


def _checkpoint_paths(folder, n):
    from pathlib import Path
    folder = Path(folder)
    return folder, [folder / f"chain{c}.npz" for c in range(n)], folder / "run.json"


class CheckpointError(ValueError):
    """A checkpoint folder of :func:`run_until_agree` that cannot be used (chains of other
    settings or data, a damaged file); ``.folder``: the folder; ``.kind``: ``"settings"`` (chains
    of other starts, seeds, segment or model), ``"inputs"`` (same settings, other training matrix,
    test set or fit options: e.g. the data changed) or ``"damaged"``. The message says what to do."""

    def __init__(self, message, folder, kind="damaged"):
        super().__init__(message)
        self.folder = folder
        self.kind = kind


def _remove_hint(folder) -> str:
    return (f"delete the folder {folder} to start these chains afresh, or give another checkpoint "
            f"folder (run_until_agree(checkpoint=...); run_converged(checkpoint_dir=...); command line: "
            f"--checkpoints DIR)")


def _open_checkpoint(folder, paths, meta_path, meta):
    """The saved chains of a checkpoint folder (``[None, ...]`` if it holds none yet), after
    checking that its ``run.json`` is ``meta``. A folder whose ``run.json`` differs but that holds
    no chain (a run that failed before its first segment ended) is taken over; one that holds
    chains of other settings or data, or a damaged file, raises :class:`CheckpointError`."""
    import json
    folder.mkdir(parents=True, exist_ok=True)
    present = [p for p in paths if p.exists()]
    if not meta_path.exists():                             # a new folder (or chains of unknown
        atomic_write_text(meta_path, json.dumps(meta), mode=None)         # settings: started afresh, overwritten)
        return [None] * len(paths)
    try:
        saved = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        if present:
            raise CheckpointError(f"{meta_path}: damaged checkpoint file ({e}); the chains beside it "
                                  f"cannot be checked; {_remove_hint(folder)}", folder) from None
        saved = None                                   # nothing to lose: start afresh
    if saved != meta and present:
        same = isinstance(saved, dict) and {k: v for k, v in saved.items() if k != "inputs"} == \
            {k: v for k, v in meta.items() if k != "inputs"}
        if same:
            raise CheckpointError(
                f"{folder}: holds chains of other settings or data: the same model, starts, seeds and "
                f"segment, but another training matrix, test set or fit options (their "
                f"digest is {saved.get('inputs')!r} "
                f"there, {meta['inputs']!r} now); {_remove_hint(folder)}", folder, "inputs")
        raise CheckpointError(
            f"{folder}: holds chains of other settings ({meta_path.name}: {json.dumps(saved)[:300]}; "
            f"this run: {json.dumps(meta)[:300]}); {_remove_hint(folder)}", folder, "settings")
    if not present or saved != meta:
        atomic_write_text(meta_path, json.dumps(meta), mode=None)
    if len(present) < len(paths):                          # no complete set: start afresh
        return [None] * len(paths)
    runs = []
    for p in paths:
        try:
            r = load_result(p)
            ok = r.K.ndim == 1 and r.K.shape[0] > 0
        except Exception as e:                             # a damaged file: any numpy/zip error
            raise CheckpointError(f"{p}: damaged chain file ({type(e).__name__}: {e}); "
                                  f"{_remove_hint(folder)}", folder) from None
        if not ok:
            raise CheckpointError(f"{p}: damaged chain file (no sweeps); {_remove_hint(folder)}", folder)
        runs.append(r)
    return runs


def min_segment(burn_in=0.5) -> int:
    """The shortest ``segment`` of :func:`run_until_agree` whose first check can be made: ArviZ's
    split-R-hat needs at least 4 draws per chain after ``burn_in`` (as :func:`diagnostics` drops
    it: a fraction rounded down, or a number of draws). 7 for the default ``burn_in = 0.5``."""
    if isinstance(burn_in, float):
        if not 0.0 <= burn_in < 1.0:
            raise ValueError(f"burn_in as a fraction must be in [0, 1), got {burn_in}")
        n = 4
        while n - math.floor(burn_in * n) < 4:
            n += 1
        return n
    if _is_int(burn_in):
        return int(burn_in) + 4
    raise ValueError(f"burn_in must be a fraction or a number of draws, got {burn_in!r}")


def check_segment(segment, burn_in=0.5) -> int:
    """``segment`` as an int if it is long enough for :func:`run_until_agree`'s first R-hat check
    (:func:`min_segment`), else ``ValueError`` saying the minimum."""
    need = min_segment(burn_in)
    if not _is_int(segment, 4):
        raise ValueError(f"segment must be an integer >= 4 (with burn_in = {burn_in}: >= {need}, so that "
                         f"split-R-hat has 4 draws per chain after the burn-in), got {segment!r}")
    if segment < need:
        kept = segment - (math.floor(burn_in * segment) if isinstance(burn_in, float) else int(burn_in))
        raise ValueError(f"segment = {segment} is too short: burn_in = {burn_in} leaves {kept} of its "
                         f"{segment} draws per chain and split-R-hat needs at least 4; give segment >= {need}")
    return int(segment)


def traced_names(model, test=False) -> list:
    """The variables :func:`to_inference_data` traces for ``model`` (``tdll`` with a test set)."""
    from .models import depm, gamma_epm
    m = str(model).upper()
    names = ["K", "M"] + (["tdll"] if test else []) + (["log_joint"] if m == "IDEPM" else [])
    return names + list(gamma_epm.HYPER_NAMES if m in ("EPM", "CEPM") else depm.HYPER_NAMES)


def _check_var_names(var_names, model, fit_kwargs) -> tuple:
    if isinstance(var_names, str) or not isinstance(var_names, (list, tuple)) or not var_names \
            or not all(isinstance(v, str) for v in var_names):
        raise ValueError(f"var_names must be a non-empty list of variable names, e.g. ('K', 'tdll'), "
                         f"got {var_names!r}")
    if "tdll" in var_names and fit_kwargs.get("test") is None:
        raise ValueError("var_names holds 'tdll': give test=(rows, cols, labels)")
    if isinstance(model, str) and model.upper() in ("EPM", "CEPM", "DEPM", "IDEPM"):
        known = traced_names(model, fit_kwargs.get("test") is not None)
        unknown = [v for v in var_names if v not in known]
        if unknown:
            raise ValueError(f"unknown variable(s) {unknown} in var_names; the {model.upper()}'s chains "
                             f"trace {known}")
    return tuple(dict.fromkeys(var_names))


def check_n_jobs(n_jobs, name="n_jobs") -> int:
    """``n_jobs`` as an int if it is a joblib process count (an integer >= 1, or -1 for every
    core), else ``ValueError`` naming ``name`` and what is allowed."""
    if not isinstance(n_jobs, Integral) or isinstance(n_jobs, bool) or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"{name} must be an integer >= 1 (processes) or -1 (every core), got {n_jobs!r}")
    return int(n_jobs)


def _advance(X, model, run, start, seed, segment, kw, parent_pid=None):
    """One segment of one chain: ``segment`` sweeps from its start (``run`` None) or continuing
    ``run``; in a pool's worker (``parent_pid``) Ctrl-C is left to the parent."""
    from .diagnose import DegenerateFitWarning
    if parent_pid is not None:
        ignore_sigint_in_worker(parent_pid)
    with warnings.catch_warnings():          # said once, of the final chains (run_until_agree)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        if run is None:
            return fit(X, model, seed=seed, n_iter=segment, **_start_kwargs(start), **kw)
        return concat(run, fit(X, model, resume=run, n_iter=segment, **kw))


def _start_label(start) -> str:
    return "data" if start == "data" else str(start)


def group_diagnostics(runs, starts, var_names, burn_in=0.5) -> dict:
    """:func:`diagnostics` within each group of chains that share a start (``"data"``, or the
    initial number of atoms as a string) and hold at least two chains: whether the chains of one
    region agree among themselves, whatever the other region does."""
    out = {}
    for label in dict.fromkeys(_start_label(s) for s in starts):
        idx = [c for c, s in enumerate(starts) if _start_label(s) == label]
        if len(idx) >= 2:
            d = diagnostics(_trace_data([runs[c] for c in idx]), burn_in=burn_in,
                            var_names=list(var_names))
            out[label] = {"chains": idx, **{v: d[v] for v in var_names}}
    return out


def _check_hold_segment(kw, segment, n_avg_given, model):
    """A burn-in ``hold`` must end before the averaged sweeps of the first segment (its last
    ``n_avg``, by default ``segment // 2``): else ``ValueError`` naming the hold, the segment and
    n_avg, and the shortest segment (or the longest hold) that works."""
    from .fit_options import _check_hold, _check_int
    hold = kw.get("hold")
    if hold is None:
        return
    sweeps, cap = _check_hold(hold, str(model).upper())
    n_avg = _check_int("n_avg", kw["n_avg"], 1)
    if segment - n_avg >= sweeps:
        return
    if n_avg_given:
        need, how = sweeps + n_avg, f"n_avg = {n_avg}"
    else:
        need = next(s for s in range(sweeps, 2 * sweeps + 2) if s - max(1, s // 2) >= sweeps)
        how = f"n_avg = {n_avg}, run_until_agree's default segment // 2"
    shorter = f", or a hold of at most {segment - n_avg} sweeps, e.g. hold=({segment - n_avg}, {cap:g})" \
        if segment > n_avg else ""
    raise ValueError(f"hold = {tuple(hold)!r} holds the shape parameters for the first {sweeps} sweeps, but the "
                     f"first segment (segment = {segment} sweeps) averages its last {how}: the hold must end "
                     f"before them; give segment >= {need}{shorter}")


def run_until_agree(X, model, *, starts=(1, 1, 100, 100), seeds=None, segment=250, max_sweeps=None,
                    cap_seconds=None, rhat=1.01, var_names=("K", "tdll"), burn_in=0.5,
                    checkpoint=None, n_jobs=1, **fit_kwargs):
    """Run chains from dispersed starts, segment by segment, until they agree or a cap is reached.

    Every chain (``starts``: their ``K_init``; ``seeds``: one each, default 0, 1, ...) runs
    ``segment`` sweeps at a time (``fit(..., resume=...)``: a chain run in segments is the
    uninterrupted chain, bit for bit). After each segment the rank-normalised split-R-hat of
    ``var_names`` is computed on the chains after ``burn_in`` (:func:`diagnostics`); the run stops
    when every one is at most ``rhat`` or, undefined, belongs to a variable that is one constant
    value in every chain (:func:`agree`; ``"converged"``), or when the chains have run
    ``max_sweeps`` sweeps (``"max_sweeps"``) or a chain has spent ``cap_seconds`` in its sweeps
    (``"cap_seconds"``); at least one of the two caps must be given. ``"tdll"`` needs ``test=``.

    ``checkpoint``: a folder; after each segment every chain is saved there (``FitResult.save``,
    written atomically), and a call with the same folder continues from the saved chains instead
    of starting again, so an interrupted run loses at most one segment and its result is the
    uninterrupted one. Its ``run.json`` (the settings and a digest of the data) is written
    atomically. A folder holding chains of other settings or data, or a damaged ``run.json`` or
    chain file, raises :class:`CheckpointError` (a ``ValueError``) naming the folder or file and
    saying to delete the folder or choose another; a ``run.json`` without chains (a run that
    failed before its first segment ended) is simply replaced.

    Checked before any sweep: ``starts``, ``seeds`` (:func:`fit_chains`), ``segment`` (long enough
    for the first split-R-hat after ``burn_in``: :func:`min_segment`, 7 for ``burn_in = 0.5``),
    ``max_sweeps`` (integer >= 1), ``cap_seconds`` (positive), ``rhat`` (positive, finite) and
    ``var_names`` (a list of the model's traced variables, :func:`traced_names`).

    ``n_jobs``: the chains of each segment run in that many processes (joblib; -1: every core).
    A chain's draws depend only on its seed and start, so the chains, the checkpoints and the
    summary are bit for bit those of ``n_jobs=1``; Ctrl-C stops the pool, and the chains saved
    after the last whole segment stay in ``checkpoint``.

    Returns ``(ChainSet, summary)``; ``summary``: ``stopped`` (why), ``converged`` (bool),
    ``sweeps`` (per chain), ``seconds`` (the largest sampler seconds of a chain), for each
    variable its ``rhat``, ``ess_bulk``, ``ess_tail``, and ``groups``: the same diagnostics within
    each group of at least two chains that share a start (:func:`group_diagnostics`).
    """
    n_jobs = check_n_jobs(n_jobs)
    starts, seeds = _check_starts_seeds(starts, seeds)
    _refuse_start_keywords(fit_kwargs, "run_until_agree", model)
    for bad, instead in (("seed", "seeds=, one per chain"), ("n_iter", "segment= (sweeps between checks) and "
                                                                      "max_sweeps= / cap_seconds="),
                         ("resume", "checkpoint= (a folder the chains are saved to and continued from)")):
        if bad in fit_kwargs:
            raise ValueError(f"{bad} is set by run_until_agree, not as a keyword: give {instead}")
    var_names = _check_var_names(var_names, model, fit_kwargs)
    if max_sweeps is None and cap_seconds is None:
        raise ValueError("give max_sweeps or cap_seconds (or both): a run that never agrees must stop")
    if max_sweeps is not None and not _is_int(max_sweeps, 1):
        raise ValueError(f"max_sweeps must be an integer >= 1 (sweeps per chain at most) or None, "
                         f"got {max_sweeps!r}")
    if cap_seconds is not None and not (isinstance(cap_seconds, Real) and not isinstance(cap_seconds, bool)
                                        and math.isfinite(cap_seconds) and cap_seconds > 0):
        raise ValueError(f"cap_seconds must be a positive number (sampler seconds per chain at most) "
                         f"or None, got {cap_seconds!r}")
    if not (isinstance(rhat, Real) and not isinstance(rhat, bool) and math.isfinite(rhat) and rhat > 0):
        raise ValueError(f"rhat must be a positive finite number (the split-R-hat target, e.g. 1.01), "
                         f"got {rhat!r}")
    segment = check_segment(segment, burn_in)
    kw = dict(fit_kwargs)
    n_avg_given = "n_avg" in kw
    kw.setdefault("n_avg", max(1, segment // 2))
    _check_hold_segment(kw, segment, n_avg_given, model)
    _check_chains_upfront(X, model, starts, seeds, kw, "run_until_agree", n_iter=segment)
    runs = [None] * len(starts)
    if checkpoint is not None:
        folder, paths, meta_path = _checkpoint_paths(checkpoint, len(starts))
        meta = dict(model=model, starts=starts, seeds=[repr(x) for x in seeds], segment=int(segment),
                    inputs=_inputs_digest(X, kw))
        runs = _open_checkpoint(folder, paths, meta_path, meta)
        for c in range(len(runs)):       # interrupted between two chains' saves: catch up
            n = max(r.K.shape[0] for r in runs) if runs[0] is not None else 0
            while runs[c] is not None and runs[c].K.shape[0] < n:
                try:
                    runs[c] = concat(runs[c], fit(X, model, resume=runs[c], n_iter=segment, **kw))
                except ValueError as e:
                    raise CheckpointError(
                        f"{paths[c]}: cannot be continued ({e}); {_remove_hint(folder)}", folder) from None
                runs[c].save(paths[c])

    parallel = None
    if n_jobs != 1:
        from joblib import Parallel, delayed
        parallel = Parallel(n_jobs=min(n_jobs, len(starts)) if n_jobs > 0 else n_jobs)

    def segment_all():
        if parallel is None:
            return [_advance(X, model, runs[c], starts[c], seeds[c], segment, kw) for c in range(len(starts))]
        pid = os.getpid()
        return list(parallel(delayed(_advance)(X, model, runs[c], starts[c], seeds[c], segment, kw, pid)
                             for c in range(len(starts))))

    while True:
        if runs[0] is not None:
            if "tdll" in var_names:
                for c, r in enumerate(runs):
                    bad = np.flatnonzero(~np.isfinite(r.tdll_trace))
                    if bad.size:
                        raise ValueError(
                            f"chain {c} ({_describe(starts[c])}, seed {seeds[c]}) has a non-finite test log "
                            f"likelihood at sweep {bad[0] + 1} ({r.tdll_trace[bad[0]]}: a held-out entry given "
                            f"probability 0 or 1, e.g. by a collapsed state with K = {int(r.K[bad[0]])}); the "
                            f"split-R-hat of the TDLL is undefined, so the chains cannot be judged on it")
            d = diagnostics(_trace_data(runs), burn_in=burn_in, var_names=list(var_names))
            sweeps = int(runs[0].K.shape[0])
            seconds = float(max(r.seconds[-1] for r in runs))
            stopped = ("converged" if all(agree(d[v], rhat) for v in var_names) else
                       "max_sweeps" if max_sweeps is not None and sweeps >= max_sweeps else
                       "cap_seconds" if cap_seconds is not None and seconds >= cap_seconds else None)
            if stopped:
                from .diagnose import DegenerateFitWarning
                for c, r in enumerate(runs):
                    if r.diagnosis:
                        warnings.warn(f"chain {c} ({_describe(starts[c])}, seed {seeds[c]}) looks degenerate "
                                      f"after {sweeps} sweeps: {'; '.join(r.diagnosis)}",
                                      DegenerateFitWarning, stacklevel=2)
                summary = dict(stopped=stopped, converged=stopped == "converged", sweeps=sweeps,
                               seconds=seconds, **{v: d[v] for v in var_names},
                               groups=group_diagnostics(runs, starts, var_names, burn_in))
                return ChainSet(results=runs, starts=starts, seeds=seeds, mask=kw.get("mask"),
                                test=kw.get("test")), summary
        runs = segment_all()
        if checkpoint is not None:
            for r, p in zip(runs, paths):
                r.save(p)
