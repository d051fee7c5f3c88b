"""The checks of the arrays a ``FitResult`` carries, before any numba kernel sees them: a saved
file's layout (``_layout_problem``, for ``result.load_result``), the kept samples
(``_samples_problem``), the state a chain resumes from against the data (``check_resumed_state``;
``CHAIN_STATE``: the arrays that make up a chain's state, per model), and the IDEPM's rows and
columns that carry parameters (``_to_compact``: X's indices -> the rows of its parameters).
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .fit_options import MODELS
from .models import depm, gamma_epm

__all__ = ["CHAIN_STATE", "check_resumed_state"]


#: the arrays that make up a chain's state, per model (with the random streams, st["rng"], ...)
CHAIN_STATE = {"EPM": ("U", "V", "lam", "h"), "CEPM": ("U", "V", "lam", "h"),
               "DEPM": ("phi", "psi", "lam", "h"), "IDEPM": ("offsets", "z", "h")}


def _is_int(v, lo):
    return isinstance(v, Integral) and not isinstance(v, bool) and v >= lo


def _layout_problem(meta, arrays):
    """What makes a saved file's ``__meta__`` (parsed JSON) and arrays no ``FitResult``, or None."""
    if not isinstance(meta, dict):
        return f"'__meta__' holds a JSON {type(meta).__name__}, not an object"
    missing = [k for k in ("model", "T", "tdll", "tdauc_pr", "settings", "state_extra") if k not in meta]
    missing += [k for k in ("K", "seconds", "tdll_trace", "M", "move_stats") if k not in arrays]
    if missing:
        return f"another layout: no {', '.join(map(repr, missing))}"
    model, T, settings = meta["model"], meta["T"], meta["settings"]
    if model not in MODELS:
        return f"unknown model {model!r}"
    if not (T is None if model == "IDEPM" else _is_int(T, 1)):
        return f"T = {T!r} is not valid for the {model}"
    for k in ("tdll", "tdauc_pr", "tdauc_roc"):
        if not isinstance(meta.get(k, 0.0), Real) or isinstance(meta.get(k), bool):
            return f"{k} = {meta[k]!r} is not a number"
    if not isinstance(settings, dict) or not isinstance(meta["state_extra"], dict):
        return "'settings' and 'state_extra' must be JSON objects"
    for k, lo in (("n_iter", 1), ("n_avg", 1), ("start_iter", 0)):
        if not _is_int(settings.get(k), lo):
            return f"settings[{k!r}] = {settings.get(k)!r} is not an integer >= {lo}"
    shape = settings.get("shape")
    if not (isinstance(shape, list) and len(shape) == 2 and all(_is_int(v, 1) for v in shape)):
        return f"settings['shape'] = {shape!r} is not a matrix shape [I, J]"
    for k, v in arrays.items():
        if v.dtype.kind not in "biuf":
            return f"array {k!r} has dtype {v.dtype}, not numbers"
    n = settings["n_iter"]
    for k in ["K", "seconds", "tdll_trace", "M", "log_joint"] + [k for k in arrays if k.startswith("hyper.")]:
        if k in arrays and arrays[k].shape != (n,):
            return f"array {k!r} has shape {arrays[k].shape}, expected ({n},) (settings['n_iter'])"
    if arrays["move_stats"].shape not in ((n, 4), (0, 4)):
        return f"array 'move_stats' has shape {arrays['move_stats'].shape}, expected ({n}, 4)"
    if "test_prob" in arrays and arrays["test_prob"].ndim != 1:
        return f"array 'test_prob' has shape {arrays['test_prob'].shape}, expected 1-d"
    n_samples = meta.get("n_samples")
    if n_samples is None:
        return None
    if not _is_int(n_samples, 0):
        return f"n_samples = {n_samples!r} is not an integer >= 0"
    gone = [f"sample.{s}.{p}" for s in range(n_samples) for p in ("R", "C", "lam")
            if f"sample.{s}.{p}" not in arrays]
    if gone:
        return f"no array {gone[0]!r} (the file says it holds {n_samples} samples)"
    if model == "IDEPM":
        if "state.row_ids" not in arrays or "state.col_ids" not in arrays:
            return "no array 'state.row_ids' or 'state.col_ids'"
        n_par = arrays["state.row_ids"].shape[0], arrays["state.col_ids"].shape[0]
    else:
        n_par = shape
    return _samples_problem([tuple(arrays[f"sample.{s}.{p}"] for p in ("R", "C", "lam"))
                             for s in range(n_samples)], *n_par)


def _samples_problem(samples, n_rows, n_cols, full=True):
    """What is wrong with kept samples [(R, C, lambda), ...] of ``n_rows`` x ``n_cols`` parameters
    (``FitResult.samples``), or None; ``full`` also checks the values (finite, non-negative)."""
    for s, trio in enumerate(samples):
        if not isinstance(trio, (tuple, list)) or len(trio) != 3:
            return f"sample {s} is not a triple (R, C, lambda)"
        lam = trio[2]
        T = lam.shape[0] if isinstance(lam, np.ndarray) and lam.ndim == 1 else None
        for p, a, want in zip(("R", "C", "lam"), trio, ((n_rows, T), (n_cols, T), (T,))):
            got = f"{a.dtype} of shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            if T is None or not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.shape != want:
                return (f"array 'sample.{s}.{p}' is {got}, expected float64 of shape "
                        f"{want if T is not None else '(T,)'}")
            if full and not (np.isfinite(a).all() and (a >= 0).all()):
                return f"array 'sample.{s}.{p}' holds negative or non-finite values"
    return None


def check_resumed_state(resume, model, I, J, T, n_entries, nnz):
    """Check the state a chain resumes from against the data and the model before any numba
    kernel sees it: the kernels check no shapes, labels or values, and a damaged state (in a file
    or changed in memory) could crash the interpreter. ``n_entries``: the ones of X and its
    missing entries (the IDEPM's ``offsets`` has one more), ``nnz``: the ones. ``ValueError``
    names the file (or "resume"), the array and what is wrong."""
    where = getattr(resume, "_source", "resume")
    st = resume.state

    def bad(n, what):
        return ValueError(f"{where}: the {model} chain state: array {n!r} {what}")

    def at(mask):
        idx = [int(x) for x in np.argwhere(mask)[0]]
        return str(idx[0]) if len(idx) == 1 else str(tuple(idx))

    def array(n, dtype, shape=None, ndim=1):
        a = st.get(n)
        if not isinstance(a, np.ndarray):
            raise bad(n, "is missing" if a is None else f"is a {type(a).__name__}, not a numpy array")
        if a.dtype != dtype:
            raise bad(n, f"has dtype {a.dtype}, expected {np.dtype(dtype)}")
        if (shape is not None and a.shape != shape) or a.ndim != ndim:
            raise bad(n, f"has shape {a.shape}, expected {shape if shape else f'{ndim}-d'} for this data")
        return a

    def values(n, a, positive=False):
        ok = np.isfinite(a)
        if not ok.all():
            raise bad(n, f"holds a non-finite value ({a[~ok][0]} at {at(~ok)})")
        low = a <= 0 if positive else a < 0
        if low.any():
            raise bad(n, f"holds a {'non-positive' if positive else 'negative'} value "
                         f"({a[low][0]:.6g} at {at(low)})")

    n_hyper = len(gamma_epm.HYPER_NAMES if model in ("EPM", "CEPM") else depm.HYPER_NAMES)
    values("h", array("h", np.float64, (n_hyper,)), positive=True)
    if model != "IDEPM":
        R, C = ("U", "V") if model in ("EPM", "CEPM") else ("phi", "psi")
        for n, shape in ((R, (I, T)), (C, (J, T)), ("lam", (T,))):
            a = array(n, np.float64, shape, len(shape))
            values(n, a)
            if model == "DEPM" and n != "lam":
                s = a.sum(axis=0)
                off = np.abs(s - 1.0) > 1e-6
                if off.any():
                    k = int(np.flatnonzero(off)[0])
                    raise bad(n, f"has column {k} summing to {s[k]:.6g}, not 1 (its columns are distributions)")
    else:
        z = array("z", np.int64)
        offsets = array("offsets", np.int64, (n_entries + 1,))
        if offsets[0] != 0 or offsets[-1] != z.shape[0]:
            raise bad("offsets", f"runs from {offsets[0]} to {offsets[-1]}, not from 0 to len(z) = {z.shape[0]}")
        m = np.diff(offsets)
        if (m < 0).any():
            raise bad("offsets", f"decreases at entry {at(m < 0)}")
        if (m[:nnz] < 1).any():
            raise bad("offsets", f"gives the one {at(m[:nnz] < 1)} of X no customer (each one has at least one)")
        if (z < 0).any():
            raise bad("z", f"holds a negative atom label ({z[z < 0][0]} at {at(z < 0)})")
        K = int(z.max()) + 1
        if K > z.shape[0] or (np.bincount(z, minlength=K) == 0).any():
            used = np.zeros(min(K, z.shape[0] + 1), dtype=bool)
            used[z[z < used.shape[0]]] = True
            raise bad("z", f"labels the atoms up to {K - 1} but leaves atom {int(np.argmin(used))} empty "
                      f"(labels must be 0..K-1, each in use)")
    s = resume.settings
    if not (_is_int(s.get("start_iter"), 0) and _is_int(s.get("n_iter"), 1)
            and isinstance(resume.seconds, np.ndarray) and resume.seconds.ndim == 1 and resume.seconds.size):
        raise ValueError(f"{where}: settings 'start_iter', 'n_iter' or the seconds trace are missing or damaged")
    for key in ("rng", "rng_pred") if model == "IDEPM" else ("rng",):
        try:
            np.random.default_rng(0).bit_generator.state = st[key]
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"{where}: the random-stream state {key!r} is missing or damaged "
                             f"({type(e).__name__}: {e})") from None


def _to_compact(idx, ids, what):
    """The positions in ``ids`` (the IDEPM's ``row_ids`` or ``col_ids``, ascending) of X's indices
    ``idx``: the rows of its parameters; ``ValueError`` for an index without parameters."""
    pos = np.searchsorted(ids, idx)
    ok = (pos < ids.shape[0]) & (ids[np.minimum(pos, ids.shape[0] - 1)] == idx)
    if not ok.all():
        bad = int(idx[np.flatnonzero(~ok)[0]])
        raise ValueError(f"{what} {bad} has no ones, test or missing entries, so the IDEPM drew no "
                         f"parameters for it; list such pairs in fit's test or mask to predict them")
    return pos
