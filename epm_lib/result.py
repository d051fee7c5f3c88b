"""``epm_lib.result``: what ``fit`` returns, and its life after the run.

``FitResult`` (traces, final state, predictions, ``predict``, ``save``), ``load_result`` (a saved
result read back, every kind of damage reported as ``ValueError``), ``concat`` (a chain run in
pieces joined), and the checks of a result a chain resumes from (``check_resume``: its settings,
``check_resumed_state``: its arrays against the data, before any numba kernel sees them).

The checks of a result's arrays are in ``result_checks``, its conversion to ArviZ's
``InferenceData`` in ``inference_data``; this module re-exports the names others import from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from .atomic import atomic_open
from .inference_data import MAX_LOGLIK_ENTRIES, _inference_data, _traces  # noqa: F401  (chains, tests)
from .models import common
from .result_checks import CHAIN_STATE, _layout_problem, _samples_problem, _to_compact, check_resumed_state

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
