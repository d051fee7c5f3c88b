"""``epm_lib.result``: what ``fit`` returns, and its life after the run.

``FitResult`` (traces, final state, predictions, ``predict``, ``save``), ``load_result`` (a saved
result read back, every kind of damage reported as ``ValueError``), ``concat`` (a chain run in
pieces joined), and the checks of a result a chain resumes from (``check_resume``: its settings,
``check_resumed_state``: its arrays against the data, before any numba kernel sees them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from .atomic import atomic_open
from .fit_options import MODELS
from .models import common, gamma_epm, depm

__all__ = ["FitResult", "concat", "load_result", "CHAIN_STATE", "check_resume", "check_resumed_state"]

#: entries per block of ``FitResult.predict_links`` (rows at a time, about this many pairs)
_PREDICT_CHUNK = 1 << 20


@dataclass
class FitResult:
    """What ``fit`` returns. Arrays of length ``n_iter`` hold one value per Gibbs iteration."""
    model: str
    T: int | None
    K: np.ndarray                 # active atoms (atoms holding at least one count) after each iteration
    seconds: np.ndarray           # cumulative wall time of the sweeps (test evaluation excluded; the
                                  # IDEPM's includes its draw of phi, psi, lambda for predictions)
    tdll_trace: np.ndarray        # test-data log likelihood of each iteration's sample (NaN without test)
    test_prob: np.ndarray | None  # posterior mean of 1 - exp(-rate) at the test entries, last n_avg iterations
    tdll: float                   # mean Bernoulli log likelihood of the test labels under test_prob
    tdauc_pr: float               # average precision of test_prob
    hyper: dict                   # hyperparameter traces, name -> array (n_iter,)
    M: np.ndarray                 # total latent count sum_ij m_ij. after each iteration
    state: dict                   # the final sample (factors, lambda, counts or seating); the IDEPM's
                                  # phi (psi) rows are the rows (columns) state["row_ids"] of X
                                  # (every row with a one or a test entry: usually all)
    settings: dict = field(default_factory=dict)
    move_stats: np.ndarray | None = None  # (n_iter, 4): splits proposed, accepted, merges proposed,
                                          # accepted per iteration (zeros without split-merge moves)
    samples: list | None = None           # (R, C, lambda) of kept iterations (fit's keep_samples)
    tdauc_roc: float = float("nan")       # area under the ROC curve of test_prob (NaN: one class only)
    log_joint: np.ndarray | None = None   # IDEPM: ln P(m, [z] | h) + ln p(h) after each iteration
                                          # (``idepm.log_joint``); None for the truncated models
    diagnosis: list = field(default_factory=list)  # what ``epm_lib.diagnose.check`` found degenerate
                                                   # (fit warns; empty: nothing, or not checked)

    def predict(self, rows, cols) -> np.ndarray:
        """Posterior mean probability of a link, 1 - exp(-sum_k R_ik C_jk lambda_k) averaged over
        the kept samples (``fit(keep_samples=...)``; with all ``n_avg`` kept, the same average as
        ``test_prob``), at any entries (rows, cols) of X. For the IDEPM, rows and columns without
        a one, a test or a missing entry carry no parameters (``state["row_ids"]``). Empty
        rows and cols (e.g. ``[]``, whatever their dtype) give an empty array."""
        if not self.samples:
            if getattr(self, "_samples_not_saved", False):
                raise ValueError(f"{self._source}: this result was saved without its samples (by an older "
                                 f"epm_lib's FitResult.save), so it cannot predict: fit again, or resume the "
                                 f"chain from the file for at least n_avg iterations, with keep_samples >= 1")
            raise ValueError("this result kept no samples: fit with keep_samples >= 1")
        I, J = self.settings["shape"]
        # an empty list has dtype float64: empty inputs are integer index arrays of length 0
        r, c = (np.asarray(a) for a in (rows, cols))
        r, c = (a.astype(np.int64) if a.size == 0 and a.dtype.kind == "f" else a for a in (r, c))
        if r.shape != c.shape or r.ndim != 1 or r.dtype.kind not in "iu" or c.dtype.kind not in "iu":
            raise ValueError("rows and cols must be 1-d integer arrays of the same length")
        n_par = (self.state["row_ids"].shape[0], self.state["col_ids"].shape[0]) if self.model == "IDEPM" \
            else (I, J)
        problem = _samples_problem(self.samples, *n_par, full=False)   # the kernel checks no shapes
        if problem:
            raise ValueError(f"{getattr(self, '_source', 'this result')}: {problem}")
        if r.size == 0:
            return np.zeros(0)
        if r.size and (r.min() < 0 or r.max() >= I or c.min() < 0 or c.max() >= J):
            raise ValueError(f"entries out of range for X of shape {(I, J)}")
        r, c = r.astype(np.int64), c.astype(np.int64)
        directions = [(r, c), (c, r)] if self.settings.get("symmetric") else [(r, c)]
        if self.model == "IDEPM":
            directions = [(_to_compact(a, self.state["row_ids"], "row"),
                           _to_compact(b, self.state["col_ids"], "column")) for a, b in directions]
        out = np.zeros(r.shape[0])
        for R, C, lam in self.samples:
            for a, b in directions:         # undirected: the mean of both directions
                out += -np.expm1(-common.link_rates(a, b, R, C, lam))
        return out / (len(self.samples) * len(directions))

    def to_inference_data(self, test=None, *, mask=None, draws="kept"):
        """The chain as an ``arviz.InferenceData`` (one chain), for ArviZ's ``loo`` and ``compare``.

        ``draw`` coordinates are iterations (counted from 0 in this result's traces). Groups:

        - ``posterior``: ``K`` (active atoms, as float), ``M`` (customers), ``tdll`` (with a test
          set, when finite at every iteration), ``log_joint`` (the IDEPM) and every hyperparameter,
          at the iterations of the kept samples (``samples``: the last ``n_avg`` iterations, or
          ``fit(keep_samples=...)`` of them evenly spaced, the last always), the draws that
          ``log_likelihood`` scores;
        - ``warmup_posterior``: the same at the iterations before the last ``n_avg`` (the burn-in;
          absent when ``n_avg = n_iter``);
        - ``sample_stats`` and ``warmup_sample_stats``: ``M``, ``log_joint`` (IDEPM) and, for a fit
          with split-merge moves, ``split_proposed``, ``split_accepted``, ``merge_proposed``,
          ``merge_accepted`` and ``acceptance_rate`` (accepted / proposed; NaN when none proposed);
        - ``observed_data``: ``y``, the 0/1 label of each pair (dimension ``pair``, with
          coordinates ``row`` and ``col``);
        - ``log_likelihood``: ``y`` (chain, draw, pair), the Bernoulli log likelihood of each pair's
          label under each kept sample, log(1 - exp(-rate)) for a one and -rate for a zero
          (an undirected fit, ``symmetric``: the log of the mean of both directions' probabilities,
          as ``predict``); ``exp`` of it averaged over the draws is ``predict`` at the pairs.

        Pairs: ``test = (rows, cols, labels)``, the held-out pairs (the result does not keep its
        test set: pass the one given to ``fit``; undirected: each pair once). Without ``test``, the
        entries of the training matrix: all of them (undirected: each pair i <= j once) except the
        missing ones (``mask``: the ``mask`` given to ``fit``, required when it had one), and for
        the IDEPM only the rows and columns that carry parameters (``state["row_ids"]``,
        ``state["col_ids"]``); refused (``ValueError``) when X has more than 200 000 entries.
        Models scored on the same training pairs can be ranked with ``az.loo`` / ``az.compare``
        (PSIS-LOO). Held-out pairs need no leave-one-out correction, since no draw has seen them:
        their elpd is the sum over pairs of the log of the mean over draws of ``exp(log_likelihood)``;
        ``az.loo`` on them would treat them as training data. On the karate club the two disagree
        (chapter 31): for link prediction, score held-out pairs.

        ``draws="all"``: ``posterior`` and ``sample_stats`` at every iteration and no warmup groups
        (the layout of ``ChainSet.idata``, whose whole traces ``chains.diagnostics`` reads);
        ``log_likelihood`` is the same. Raises ``ValueError`` for a result without kept samples.
        """
        return _inference_data([self], test, mask, draws)

    @property
    def sweep_seconds(self) -> np.ndarray:
        """Seconds of each iteration's sweep (differences of the cumulative ``seconds``)."""
        return np.diff(self.seconds, prepend=self.settings.get("start_seconds", 0.0))

    def save(self, path):
        """Write the result (traces, final state, random streams, settings) to ``path`` (.npz),
        atomically; ``fit(..., resume=path)`` continues the chain, ``load_result`` reads it (with
        the kept samples, arrays ``sample.{n}.R``, ``.C``, ``.lam``: ``predict`` gives the same after
        loading). Returns ``path``.

        ``path`` a symbolic link: the file it points to is written (the link stays). An existing
        ``path`` that is not a regular file: a character device (``/dev/null``, a terminal) is
        written to directly (not atomically; ``/dev/null`` discards the result); a directory, a
        FIFO, a socket or a block device raises ``ValueError`` (nothing is written)."""
        import json
        import os
        import stat
        from pathlib import Path
        path = given = Path(path)
        if path.is_symlink():               # write through the link, to the file it points to
            path = Path(os.path.realpath(path))
            if path.is_symlink():
                raise ValueError(f"{given}: a symbolic link that leads to no file (a loop?); nothing saved")
        mode = path.stat().st_mode if path.exists() else None
        if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISCHR(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                    "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else
                    "not a regular file")
            raise ValueError(f"{given}: is {kind}; FitResult.save writes a regular .npz file there, "
                             f"give the path of a file")
        arrays = {"K": self.K, "seconds": self.seconds, "tdll_trace": self.tdll_trace, "M": self.M,
                  "move_stats": self.move_stats if self.move_stats is not None else np.zeros((0, 4), np.int64)}
        if self.test_prob is not None:
            arrays["test_prob"] = self.test_prob
        if self.log_joint is not None:
            arrays["log_joint"] = self.log_joint
        arrays.update({f"hyper.{n}": v for n, v in self.hyper.items()})
        extra = {}
        for n, v in self.state.items():
            if isinstance(v, np.ndarray):
                arrays[f"state.{n}"] = v
            else:
                extra[n] = v
        settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.settings.items()}
        samples = self.samples or []
        for s, (R, C, lam) in enumerate(samples):
            arrays.update({f"sample.{s}.R": R, f"sample.{s}.C": C, f"sample.{s}.lam": lam})
        meta = dict(model=self.model, T=self.T, tdll=self.tdll, tdauc_pr=self.tdauc_pr, tdauc_roc=self.tdauc_roc,
                    settings=settings, state_extra=extra, n_samples=len(samples), diagnosis=list(self.diagnosis))
        arrays["__meta__"] = np.array(json.dumps(meta, default=int))
        if mode is not None and stat.S_ISCHR(mode):    # /dev/null, a terminal: straight through
            import io
            buf = io.BytesIO()              # zipfile needs a file that knows its position
            np.savez(buf, **arrays)
            with open(path, "wb") as f:
                f.write(buf.getvalue())
            return given
        path.parent.mkdir(parents=True, exist_ok=True)
        # replacing a file: keep its permissions (a new one gets mkstemp's, 0o600)
        with atomic_open(path, True, mode=None if mode is None else stat.S_IMODE(mode), suffix=".npz") as f:
            np.savez(f, **arrays)
        return given

    @property
    def acceptance(self) -> dict:
        """Acceptance rates of the split and merge proposals over the whole run (NaN if none)."""
        t = self.move_stats.sum(axis=0) if self.move_stats is not None else np.zeros(4)
        rate = lambda acc, prop: float(acc / prop) if prop else float("nan")  # noqa: E731
        return dict(split=rate(t[1], t[0]), merge=rate(t[3], t[2]),
                    proposals=int(t[0] + t[2]), accepted=int(t[1] + t[3]))

    @property
    def K_mean(self) -> float:
        """Mean number of active atoms over the last ``n_avg`` iterations."""
        return float(self.K[-self.settings["n_avg"]:].mean())

    def memberships(self, side="row") -> np.ndarray:
        """The nodes' memberships of the atoms at the final sample, an (I, K) array for
        ``side="row"`` ((J, K) for ``side="col"``).

        Row n is the share of node n's expected links that fall on each atom: its factor times
        lambda (EPM, CEPM: ``U`` or ``V``; DEPM, IDEPM: ``phi`` or ``psi``), normalised to sum 1.
        One row per row (column) of X, in X's order; one column per atom in use in the final
        sample (the truncated models: with customers, ``m_k > 0``, the atoms ``K`` counts; the
        IDEPM: its atoms), atoms by decreasing lambda (stable). A node whose weights are all zero, and for the
        IDEPM a node without parameters (not in ``state["row_ids"]`` / ``state["col_ids"]``: no
        one, test or missing entry), gets a row of NaN. For an undirected fit (``symmetric``) the
        row and column memberships are those of the two sides of the bipartite model."""
        if side not in ("row", "col"):
            raise ValueError(f"side must be 'row' or 'col', got {side!r}")
        st = self.state
        if self.model in ("EPM", "CEPM"):
            R = st["U"] if side == "row" else st["V"]
        else:
            R = st["phi"] if side == "row" else st["psi"]
        lam = np.asarray(st["lam"], dtype=float)
        # the atoms in use: with customers (the truncated models' K; their empty atoms keep a small
        # lambda), the IDEPM's atoms of its final sample
        active = np.flatnonzero((np.asarray(st["m_k"]) > 0) & (lam > 0)) if "m_k" in st else np.flatnonzero(lam > 0)
        active = active[np.argsort(-lam[active], kind="stable")]
        W = np.asarray(R, dtype=float)[:, active] * lam[active]
        total = W.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            W = np.where(total > 0, W / np.where(total > 0, total, 1.0), np.nan)
        if self.model != "IDEPM":
            return W
        n = self.settings["shape"][0 if side == "row" else 1]
        out = np.full((n, active.size), np.nan)
        out[np.asarray(st["row_ids" if side == "row" else "col_ids"], dtype=np.int64)] = W
        return out

    def predict_links(self, top=10, names=None):
        """The ``top`` most probable links among the zeros of the training matrix, as a
        ``pandas.DataFrame`` with columns ``row``, ``col``, ``probability`` (``predict``'s
        posterior mean), by decreasing probability, ties by row, then column.

        Candidates are the entries of X that are not ones (masked and test entries included); for
        an undirected fit (``symmetric``) each pair once, row < col, without self-pairs; for the
        IDEPM only the rows and columns that carry parameters (``state["row_ids"]``, ``col_ids``).
        Fewer than ``top`` rows when there are fewer candidates. ``names``: None (the names in
        ``self.node_names``, set by ``EdgePartitionModel`` for a graph, else the indices), or
        (row_names, col_names), or one sequence for both sides; ``row`` and ``col`` then hold
        names. Probabilities are computed a block of rows at a time (about a million entries)."""
        import pandas as pd
        if not isinstance(top, Integral) or isinstance(top, bool) or top < 1:
            raise ValueError(f"top must be a positive integer, got {top!r}")
        top = int(top)
        I, J = self.settings["shape"]
        symmetric = bool(self.settings.get("symmetric"))
        ones = np.unique(np.asarray(self.state["rows"], np.int64) * J + np.asarray(self.state["cols"], np.int64))
        if self.model == "IDEPM":
            row_ids = np.asarray(self.state["row_ids"], dtype=np.int64)
            col_ids = np.asarray(self.state["col_ids"], dtype=np.int64)
        else:
            row_ids, col_ids = np.arange(I, dtype=np.int64), np.arange(J, dtype=np.int64)
        chunk = max(1, _PREDICT_CHUNK // max(col_ids.size, 1))
        best_r, best_c, best_p = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
        for start in range(0, row_ids.size, chunk):
            r = np.repeat(row_ids[start:start + chunk], col_ids.size)
            c = np.tile(col_ids, min(chunk, row_ids.size - start))
            keep = ~np.isin(r * J + c, ones, assume_unique=False)
            if symmetric:
                keep &= r < c
            r, c = r[keep], c[keep]
            if r.size == 0:
                continue
            p = self.predict(r, c)
            r, c, p = (np.concatenate(a) for a in ((best_r, r), (best_c, c), (best_p, p)))
            if p.size > top:                # everything tied with the top-th best stays a candidate
                cut = np.partition(p, p.size - top)[p.size - top]
                sel = p >= cut
                r, c, p = r[sel], c[sel], p[sel]
            order = np.lexsort((c, r, -p))[:top]
            best_r, best_c, best_p = r[order], c[order], p[order]
        if names is None:
            names = getattr(self, "node_names", None)
        if names is not None:
            if isinstance(names, tuple) and len(names) == 2 and all(
                    hasattr(x, "__len__") and not isinstance(x, (str, bytes)) for x in names):
                rn, cn = names
            else:
                rn = cn = names
            rn, cn = list(rn), list(cn)
            if len(rn) != I or len(cn) != J:
                raise ValueError(f"names: {len(rn)} row and {len(cn)} column names for X of shape {(I, J)}")
            rows = [rn[i] for i in best_r]
            cols = [cn[j] for j in best_c]
        else:
            rows, cols = best_r, best_c
        return pd.DataFrame({"row": rows, "col": cols, "probability": best_p})

    def __repr__(self) -> str:
        s = self.settings if isinstance(self.settings, dict) else {}
        n = len(self.K) if self.K is not None else 0
        parts = [self.model + (f" T={self.T}" if self.T is not None else "")]
        shape = s.get("shape")
        if shape is not None:
            parts.append(f"{shape[0]}x{shape[1]}" + (" symmetric" if s.get("symmetric") else ""))
        if s.get("nnz") is not None:
            parts.append(f"{s['nnz']} ones")
        parts.append(f"{n} sweeps")
        if n:
            n_avg = min(int(s.get("n_avg") or n), n)
            parts.append(f"K {float(np.mean(self.K[-n_avg:])):.1f} over the last {n_avg}")
        if isinstance(self.tdll, Real) and np.isfinite(self.tdll):
            parts.append(f"TDLL {self.tdll:.4f}")
        return f"FitResult({', '.join(parts)})"


#: the arrays that make up a chain's state, per model (with the random streams, st["rng"], ...)
CHAIN_STATE = {"EPM": ("U", "V", "lam", "h"), "CEPM": ("U", "V", "lam", "h"),
               "DEPM": ("phi", "psi", "lam", "h"), "IDEPM": ("offsets", "z", "h")}


def check_resume(resume, want):
    """The result (or saved file) a chain resumes from, with the settings ``want`` checked."""
    if isinstance(resume, (str, bytes)) or hasattr(resume, "__fspath__"):
        resume = load_result(resume)
    if not isinstance(resume, FitResult):
        raise ValueError(f"resume must be a FitResult or the path of a saved one, got {type(resume).__name__}")
    where = getattr(resume, "_source", "resume")     # the file a loaded result came from
    if not isinstance(resume.state, dict) or not isinstance(resume.settings, dict):
        raise ValueError(f"{where}: the result's state and settings must be dicts")
    if "rng" not in resume.state:
        raise ValueError(f"{where}: this result carries no random-stream state (made by an older epm_lib)")
    got = {k: resume.settings.get(k) for k in want}
    diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    if diff:
        names = ", ".join(f"{k} (chain: {a!r}, now: {b!r})" for k, (a, b) in diff.items())
        raise ValueError(f"{where}: the chain was run with other settings or data: {names}")
    return resume


def concat(*results):
    """Join a chain run in pieces (``fit(..., resume=previous)``) into one ``FitResult``: traces
    end to end, the last piece's state, test predictions and settings (with ``n_iter`` the total)."""
    if not results:
        raise ValueError("nothing to concatenate")
    for a, b in zip(results, results[1:]):
        if b.settings.get("start_iter") != a.settings["start_iter"] + a.settings["n_iter"] \
                or b.settings.get("data_digest") != a.settings.get("data_digest"):
            raise ValueError("concat: the results are not consecutive pieces of one chain")
    last = results[-1]
    cat = lambda name: np.concatenate([getattr(r, name) for r in results])  # noqa: E731
    settings = dict(last.settings, start_iter=results[0].settings["start_iter"],
                    start_seconds=results[0].settings.get("start_seconds", 0.0),
                    n_iter=sum(r.settings["n_iter"] for r in results))
    return FitResult(model=last.model, T=last.T, K=cat("K"), seconds=cat("seconds"),
                     tdll_trace=cat("tdll_trace"), test_prob=last.test_prob, tdll=last.tdll,
                     tdauc_pr=last.tdauc_pr, tdauc_roc=last.tdauc_roc,
                     hyper={n: np.concatenate([r.hyper[n] for r in results]) for n in last.hyper},
                     M=cat("M"), state=last.state, settings=settings, move_stats=cat("move_stats"),
                     samples=last.samples, diagnosis=list(last.diagnosis),
                     log_joint=None if any(r.log_joint is None for r in results) else cat("log_joint"))


def load_result(path) -> "FitResult":
    """A ``FitResult`` written by ``FitResult.save``, with its kept samples (``predict`` gives what
    it gave before saving; a file saved by an older epm_lib holds none, and ``predict`` says so).
    Anything else -- a missing, empty, truncated or damaged file, an .npy array, another layout --
    raises ``ValueError`` "PATH: not a saved FitResult (what is wrong)", never another exception.
    The chain state is checked against the data when ``fit(..., resume=path)`` continues it."""
    import json
    from pathlib import Path
    path = Path(path)

    def bad(what):
        return ValueError(f"{path}: not a saved FitResult ({what})")
    try:                    # np.load and zipfile raise many types: BadZipFile, EOFError, OSError, ...
        f = np.load(path, allow_pickle=False)
        if not hasattr(f, "files"):
            raise bad(f"an .npy array of shape {f.shape}, not an .npz archive")
        with f:
            arrays = {k: f[k] for k in f.files}
    except ValueError as e:
        if str(e).startswith(f"{path}: "):
            raise
        raise bad(f"unreadable: {type(e).__name__}: {e}") from None
    except Exception as e:  # noqa: BLE001 -- every failure to read is reported as the file's
        raise bad(f"unreadable: {type(e).__name__}: {e}") from None
    meta = arrays.pop("__meta__", None)
    if meta is None:
        raise bad("no '__meta__' entry")
    if meta.ndim != 0 or meta.dtype.kind != "U":
        raise bad(f"'__meta__' is not a JSON text (dtype {meta.dtype}, shape {meta.shape})")
    try:
        meta = json.loads(str(meta))
    except ValueError as e:
        raise bad(f"'__meta__' is not valid JSON: {e}") from None
    problem = _layout_problem(meta, arrays)
    if problem:
        raise bad(problem)
    n_samples = meta.get("n_samples")       # None: saved by an older epm_lib, without samples
    diagnosis = meta.get("diagnosis", [])   # absent: saved before the check existed
    if not (isinstance(diagnosis, list) and all(isinstance(d, str) for d in diagnosis)):
        raise bad(f"'diagnosis' is not a list of texts: {diagnosis!r}")
    samples = None if n_samples is None else \
        [tuple(arrays[f"sample.{s}.{p}"] for p in ("R", "C", "lam")) for s in range(n_samples)]
    state = {k[6:]: v for k, v in arrays.items() if k.startswith("state.")}
    state.update(meta["state_extra"])
    hyper = {k[6:]: v for k, v in arrays.items() if k.startswith("hyper.")}
    tp = arrays.get("test_prob")
    r = FitResult(model=meta["model"], T=meta["T"], K=arrays["K"], seconds=arrays["seconds"],
                  tdll_trace=arrays["tdll_trace"], test_prob=tp, tdll=meta["tdll"],
                  tdauc_pr=meta["tdauc_pr"], tdauc_roc=meta.get("tdauc_roc", float("nan")),
                  hyper=hyper, M=arrays["M"], state=state,
                  settings=meta["settings"], move_stats=arrays["move_stats"],
                  log_joint=arrays.get("log_joint"), samples=samples, diagnosis=diagnosis)
    r._source = str(path)                   # named by the errors of fit(resume=...) and predict
    r._samples_not_saved = n_samples is None
    return r


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
    pos = np.searchsorted(ids, idx)
    ok = (pos < ids.shape[0]) & (ids[np.minimum(pos, ids.shape[0] - 1)] == idx)
    if not ok.all():
        bad = int(idx[np.flatnonzero(~ok)[0]])
        raise ValueError(f"{what} {bad} has no ones, test or missing entries, so the IDEPM drew no "
                         f"parameters for it; list such pairs in fit's test or mask to predict them")
    return pos


# ----------------------------------------------------------------------------------------------
# ArviZ (FitResult.to_inference_data, chains.to_inference_data)
# ----------------------------------------------------------------------------------------------

#: entries of X above which the log likelihood of the training entries is refused (pass ``test=``)
MAX_LOGLIK_ENTRIES = 200_000

_MOVE_NAMES = ("split_proposed", "split_accepted", "merge_proposed", "merge_accepted")


class _NoLogLik(ValueError):
    """Why a result's pointwise log likelihood cannot be given (``ChainSet.idata`` leaves it out)."""


def _arviz():
    import warnings
    with warnings.catch_warnings():         # arviz 0.23 announces its refactor on import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


def _kept_iterations(r) -> np.ndarray:
    """The iterations (indices into the traces, ascending) of ``r.samples``, chosen as ``fit``
    chooses them: ``len(samples)`` evenly spaced over the last ``n_avg``, the last always."""
    if not r.samples:
        raise _NoLogLik(f"{getattr(r, '_source', 'the result')}: kept no samples (fit with keep_samples >= 1)")
    n, n_avg, k = r.K.shape[0], r.settings["n_avg"], len(r.samples)
    its = (n - 1 - np.round(np.linspace(0, n_avg - 1, k))).astype(np.int64) if k > 1 else np.array([n - 1])
    return np.sort(its)


def _check_pairs(test, shape):
    """``test`` as (rows, cols, labels) int64 arrays, checked against X's ``shape``."""
    if not isinstance(test, (tuple, list)) or len(test) != 3:
        raise ValueError("test must be None or a tuple (rows, cols, labels) of held-out pairs")
    r, c, y = (np.asarray(a) for a in test)
    if not (r.ndim == c.ndim == y.ndim == 1 and r.shape == c.shape == y.shape):
        raise ValueError(f"test rows, cols and labels must be 1-d arrays of one length, got shapes "
                         f"{r.shape}, {c.shape}, {y.shape}")
    if r.size == 0:
        raise ValueError("test holds no pairs")
    for name, a in (("rows", r), ("cols", c), ("labels", y)):
        if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and not (np.isfinite(a).all() and
                                                                       (a == np.round(a)).all())):
            raise ValueError(f"test {name} must be integers, got dtype {a.dtype}")
    r, c, y = r.astype(np.int64), c.astype(np.int64), y.astype(np.int64)
    I, J = shape
    if r.min() < 0 or r.max() >= I or c.min() < 0 or c.max() >= J:
        raise ValueError(f"test pairs out of range for X of shape {(I, J)}")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("test labels must be 0 or 1")
    return r, c, y


def _training_pairs(r, mask):
    """The entries of the training matrix the log likelihood scores without a test set (see
    ``FitResult.to_inference_data``), as (rows, cols, labels)."""
    from .fit_data import mask_entries
    I, J = (int(v) for v in r.settings["shape"])
    if I * J > MAX_LOGLIK_ENTRIES:
        raise _NoLogLik(f"X has {I} x {J} = {I * J} entries, more than {MAX_LOGLIK_ENTRIES} to score one by "
                        f"one: pass test=(rows, cols, labels), the held-out pairs, to score those")
    keep = np.ones((I, J), dtype=bool)
    n_masked = int(r.settings.get("n_masked", 0) or 0)
    if mask is not None or n_masked:
        if mask is None:
            raise _NoLogLik(f"the fit had {n_masked} missing entries (fit's mask), which the result does not "
                            f"keep: pass mask= (the fit's mask) or test=(rows, cols, labels)")
        key = mask_entries(mask, (I, J))
        if r.settings.get("symmetric"):     # fit symmetrises the mask
            key = np.unique(np.concatenate([key, (key % J) * J + key // J]))
        if key.size != n_masked:
            raise ValueError(f"mask marks {key.size} entries, but the fit had {n_masked} missing ones: "
                             f"pass the mask given to fit")
        keep.flat[key] = False
    if r.settings.get("symmetric"):         # a pair once
        keep &= np.triu(np.ones((I, J), dtype=bool))
    if r.model == "IDEPM":                  # rows and columns without parameters cannot be scored
        has_r, has_c = np.zeros(I, dtype=bool), np.zeros(J, dtype=bool)
        has_r[np.asarray(r.state["row_ids"], dtype=np.int64)] = True
        has_c[np.asarray(r.state["col_ids"], dtype=np.int64)] = True
        keep &= has_r[:, None] & has_c[None, :]
    X = np.zeros((I, J), dtype=np.int64)
    X[np.asarray(r.state["rows"], dtype=np.int64), np.asarray(r.state["cols"], dtype=np.int64)] = 1
    rows, cols = np.nonzero(keep)
    return rows.astype(np.int64), cols.astype(np.int64), X[rows, cols]


def _pointwise_loglik(r, rows, cols, labels) -> np.ndarray:
    """(len(samples), n): log P(label | sample) at each pair under each kept sample of ``r``."""
    I, J = (int(v) for v in r.settings["shape"])
    n_par = (r.state["row_ids"].shape[0], r.state["col_ids"].shape[0]) if r.model == "IDEPM" else (I, J)
    problem = _samples_problem(r.samples, *n_par, full=False)   # the kernel checks no shapes
    if problem:
        raise ValueError(f"{getattr(r, '_source', 'this result')}: {problem}")
    directions = [(rows, cols), (cols, rows)] if r.settings.get("symmetric") else [(rows, cols)]
    if r.model == "IDEPM":
        directions = [(_to_compact(a, r.state["row_ids"], "row"),
                       _to_compact(b, r.state["col_ids"], "column")) for a, b in directions]
    one = labels != 0
    out = np.empty((len(r.samples), rows.shape[0]))
    with np.errstate(divide="ignore"):      # a one at rate 0: log 0 = -inf
        for s, (R, C, lam) in enumerate(r.samples):
            rates = [common.link_rates(a, b, R, C, lam) for a, b in directions]
            if len(rates) == 1:             # log p = log(1 - exp(-rate)), log(1 - p) = -rate
                out[s] = np.where(one, np.log(-np.expm1(-rates[0])), -rates[0])
            else:                           # undirected: p = (p_ij + p_ji) / 2
                p = 0.5 * (-np.expm1(-rates[0]) - np.expm1(-rates[1]))
                out[s] = np.where(one, np.log(p), np.logaddexp(-rates[0], -rates[1]) - np.log(2.0))
    return out


def _traces(results) -> dict:
    """The traced variables of the chains, name -> (chain, iteration) array (the posterior
    variables of ``chains.to_inference_data``)."""
    post = {"K": np.stack([r.K for r in results]).astype(float),
            "M": np.stack([r.M for r in results]).astype(float)}
    if all(np.all(np.isfinite(r.tdll_trace)) for r in results):
        post["tdll"] = np.stack([r.tdll_trace for r in results])
    if all(r.log_joint is not None for r in results):
        post["log_joint"] = np.stack([r.log_joint for r in results])
    for name in results[0].hyper:
        post[name] = np.stack([r.hyper[name] for r in results])
    return post


def _sample_stats(results) -> dict:
    """M, log_joint and the split-merge moves' counts of the chains, name -> (chain, iteration)."""
    stats = {"M": np.stack([r.M for r in results]).astype(np.int64)}
    if all(r.log_joint is not None for r in results):
        stats["log_joint"] = np.stack([r.log_joint for r in results])
    n = results[0].K.shape[0]
    if all(r.settings.get("split_merge") and r.move_stats is not None and r.move_stats.shape == (n, 4)
           for r in results):
        moves = np.stack([r.move_stats for r in results]).astype(np.int64)
        stats.update({name: moves[..., i] for i, name in enumerate(_MOVE_NAMES)})
        proposed, accepted = moves[..., 0] + moves[..., 2], moves[..., 1] + moves[..., 3]
        with np.errstate(invalid="ignore", divide="ignore"):
            stats["acceptance_rate"] = np.where(proposed > 0, accepted / np.maximum(proposed, 1), np.nan)
    return stats


def _inference_data(results, test=None, mask=None, draws="kept", log_likelihood=True):
    """``FitResult.to_inference_data`` of one or more chains (``chains.to_inference_data``): the
    chains must be of one model, one length and keep the same iterations. ``log_likelihood="auto"``:
    leave ``observed_data`` and ``log_likelihood`` out (saying why in the attribute
    ``log_likelihood`` of the InferenceData) when the results cannot give them (no kept samples,
    too many entries without a test set, a mask not given, chains that keep other iterations or
    a single sample each)."""
    if draws not in ("kept", "all"):
        raise ValueError(f"draws must be 'kept' (posterior at the kept samples, warmup before the last n_avg "
                         f"iterations) or 'all' (every iteration), got {draws!r}")
    az = _arviz()
    n = results[0].K.shape[0]
    shape = tuple(int(v) for v in results[0].settings["shape"])
    if test is not None:
        test = _check_pairs(test, shape)    # a bad test is an error, whatever log_likelihood says
    traces, stats = _traces(results), _sample_stats(results)
    note = None
    try:
        kept = [_kept_iterations(r) for r in results]
        if any(not np.array_equal(k, kept[0]) for k in kept):
            raise _NoLogLik("the chains keep other iterations: kept samples "
                            f"{[len(r.samples) for r in results]}, n_avg {[r.settings['n_avg'] for r in results]}, "
                            f"n_iter {[r.K.shape[0] for r in results]} (give every chain the same)")
        kept = kept[0]
        if log_likelihood == "auto" and kept.size < 2:
            raise _NoLogLik("the chains kept one sample each (the IDEPM without a test set keeps only the "
                            "final one): fit with keep_samples=n_avg to score the draws")
    except _NoLogLik as e:
        if draws == "kept" or log_likelihood is True:
            raise ValueError(str(e)) from None
        kept, note = None, str(e)
    groups = {}
    if draws == "kept":
        n_avg = {r.settings["n_avg"] for r in results}
        if len(n_avg) != 1:
            raise ValueError(f"the chains average other numbers of iterations: n_avg "
                             f"{[r.settings['n_avg'] for r in results]} (give every chain the same)")
        warm = np.arange(n - n_avg.pop())
        at = lambda d, its: {k: v[:, its] for k, v in d.items()}  # noqa: E731
        groups["posterior"] = az.dict_to_dataset(at(traces, kept), coords={"draw": kept})
        groups["sample_stats"] = az.dict_to_dataset(at(stats, kept), coords={"draw": kept})
        if warm.size:
            groups["warmup_posterior"] = az.dict_to_dataset(at(traces, warm), coords={"draw": warm})
            groups["warmup_sample_stats"] = az.dict_to_dataset(at(stats, warm), coords={"draw": warm})
    else:
        its = np.arange(n)
        groups["posterior"] = az.dict_to_dataset(traces, coords={"draw": its})
        groups["sample_stats"] = az.dict_to_dataset(stats, coords={"draw": its})
    if note is None and log_likelihood:
        try:
            pairs = [test] * len(results) if test is not None else [_training_pairs(r, mask) for r in results]
            if any(not all(np.array_equal(a, b) for a, b in zip(p, pairs[0])) for p in pairs):
                raise _NoLogLik("the chains' training matrices differ (other data, mask or test rows)")
            rows, cols, labels = pairs[0]
        except _NoLogLik as e:
            if log_likelihood is True:
                raise ValueError(str(e)) from None
            note = str(e)
    if note is None and log_likelihood:
        ll = np.stack([_pointwise_loglik(r, rows, cols, labels) for r in results])
        where = {"pair": np.arange(rows.shape[0])}
        extra = {"row": ("pair", rows), "col": ("pair", cols)}
        groups["log_likelihood"] = az.dict_to_dataset({"y": ll}, coords={"draw": kept, **where},
                                                      dims={"y": ["pair"]}).assign_coords(extra)
        groups["observed_data"] = az.dict_to_dataset({"y": labels}, coords=where, dims={"y": ["pair"]},
                                                     default_dims=[]).assign_coords(extra)
    attrs = {"model": results[0].model, "pairs": "none" if note is not None or not log_likelihood else
             "test" if test is not None else "training"}
    if note is not None:
        attrs["log_likelihood"] = f"left out: {note}"
    return az.InferenceData(attrs=attrs, save_warmup=True, **groups)
