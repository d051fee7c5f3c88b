"""``epm_lib.fit``: run one of the four samplers on a binary matrix.

The Python layer validates the input, extracts the ones of X (CSR order),
initialises the state, calls one numba sweep per iteration and records the
traces; the maths lives in ``epm_lib.models``. Chapters of Part II derive
each sweep; ``fit`` runs the very same kernels.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .distributions import cepm_grid
from .interrupt import deferred_sigint
from .metrics import bernoulli_tdll, tdauc_pr, auc_roc
from .models import common, gamma_epm, depm, idepm, moves
from . import starts

__all__ = ["fit", "FitResult", "MODELS", "prepare_matrix", "init_state", "DEFAULT_K_INIT",
           "DEFAULT_SPLIT_MERGE", "concat", "load_result", "CHAIN_STATE", "missing_mask", "mask_entries"]

MODELS = ("EPM", "CEPM", "DEPM", "IDEPM")
#: IDEPM start: customers spread at random over this many atoms (capped at the number of ones).
DEFAULT_K_INIT = 100
#: memory for the samples kept for FitResult.predict when keep_samples is not given
KEEP_BYTES = 64 * 2 ** 20
#: split-merge proposals per iteration of the IDEPM and DEPM (``fit(split_merge=...)``); 0 is the
#: paper's plain Gibbs sampler, still the default while the book's chapters show its protocol
DEFAULT_SPLIT_MERGE = 0


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
        import tempfile
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
                    settings=settings, state_extra=extra, n_samples=len(samples))
        arrays["__meta__"] = np.array(json.dumps(meta, default=int))
        if mode is not None and stat.S_ISCHR(mode):    # /dev/null, a terminal: straight through
            import io
            buf = io.BytesIO()              # zipfile needs a file that knows its position
            np.savez(buf, **arrays)
            with open(path, "wb") as f:
                f.write(buf.getvalue())
            return given
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            if mode is not None:            # replacing a file: keep its permissions
                os.chmod(tmp, stat.S_IMODE(mode))
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
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


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------

def prepare_matrix(X):
    """Validate a binary matrix and return (I, J, rows, cols) of its ones in CSR order."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-d matrix, got {X.ndim} dimensions")
        # COO (and unsorted CSR/CSC) may list an entry more than once, and converting adds the
        # duplicates up: check the entries as the user wrote them, then refuse repeated ones
        Xo = sp.coo_matrix(X, copy=True)
        data = Xo.data
        if data.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got dtype {data.dtype}")
        if data.dtype.kind == "f" and np.isnan(data).any():
            raise ValueError("X contains NaN; a binary matrix must hold only 0 and 1")
        bad = (data != 0) & (data != 1)
        if bad.any():
            raise ValueError(f"X must be binary (0/1); found {int(bad.sum())} entries with other values, "
                             f"e.g. {data[bad][0]!r}")
        stored = data != 0
        key = Xo.row[stored].astype(np.int64) * Xo.shape[1] + Xo.col[stored]
        uniq, first, times = np.unique(key, return_index=True, return_counts=True)
        if uniq.shape[0] < key.shape[0]:
            e = int(np.flatnonzero(times > 1)[0])
            i, j = divmod(int(uniq[e]), Xo.shape[1])
            raise ValueError(f"X lists {int((times > 1).sum())} entries more than once, e.g. ({i}, {j}) "
                             f"{int(times[e])} times (a sparse matrix adds repeated entries up); "
                             f"drop the duplicates, e.g. X = (X != 0).astype(np.int8) after X.sum_duplicates()")
        Xc = sp.csr_matrix(Xo)
        Xc.sum_duplicates()
        Xc.eliminate_zeros()
        Xc.sort_indices()
        I, J = Xc.shape
        rows = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
        cols = Xc.indices.astype(np.int64)
    else:
        A = np.asarray(X)
        if A.ndim != 2:
            raise ValueError(f"X must be a 2-d matrix, got shape {A.shape}")
        if A.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric or boolean, got dtype {A.dtype}")
        if A.dtype.kind == "f" and np.isnan(A).any():
            raise ValueError("X contains NaN; a binary matrix must hold only 0 and 1")
        bad = (A != 0) & (A != 1)
        if bad.any():
            raise ValueError(f"X must be binary (0/1); found {int(bad.sum())} entries with other values, "
                             f"e.g. {A[bad][0]!r}")
        I, J = A.shape
        rows, cols = np.nonzero(A)
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    if I < 1 or J < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {(I, J)}")
    if rows.size == 0:
        raise ValueError("X has no ones: there is nothing to partition")
    return I, J, rows, cols


def _check_test(test, I, J, rows, cols):
    if test is None:
        return None
    if not isinstance(test, (tuple, list)) or len(test) != 3:
        raise ValueError("test must be None or a tuple (rows, cols, labels) of held-out entries")
    tr, tc, tl = (np.asarray(a) for a in test)
    for name, a in (("test rows", tr), ("test cols", tc), ("test labels", tl)):
        if a.ndim != 1:
            raise ValueError(f"{name} must be a 1-d array, got shape {a.shape}")
        if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and not np.all(np.isfinite(a))):
            raise ValueError(f"{name} must hold finite numbers, got dtype {a.dtype}")
    if not (tr.shape == tc.shape == tl.shape):
        raise ValueError(f"test rows, cols and labels must have the same length, got "
                         f"{tr.shape[0]}, {tc.shape[0]}, {tl.shape[0]}")
    if tr.size == 0:
        raise ValueError("test holds no entries")
    if np.any(tr != np.round(tr)) or np.any(tc != np.round(tc)):
        raise ValueError("test rows and cols must be integer indices")
    tr, tc = tr.astype(np.int64), tc.astype(np.int64)
    if tr.min() < 0 or tr.max() >= I or tc.min() < 0 or tc.max() >= J:
        raise ValueError(f"test entries out of range for X of shape {(I, J)}")
    if np.any((tl != 0) & (tl != 1)):
        raise ValueError("test labels must be 0 or 1")
    key_x = rows * J + cols
    key_t = tr * J + tc
    uniq, times = np.unique(key_t, return_counts=True)
    if uniq.shape[0] < key_t.shape[0]:
        e = int(np.flatnonzero(times > 1)[0])
        raise ValueError(f"test lists {int((times > 1).sum())} entries more than once, e.g. "
                         f"({int(uniq[e]) // J}, {int(uniq[e]) % J}) {int(times[e])} times; each held-out "
                         f"entry must appear once")
    clash = np.isin(key_t, key_x)
    if clash.any():
        e = int(np.flatnonzero(clash)[0])
        raise ValueError(f"{int(clash.sum())} test entries are ones of the training matrix X "
                         f"(e.g. ({tr[e]}, {tc[e]})); held-out entries must be set to zero in X")
    return tr, tc, tl.astype(np.int8)


def missing_mask(shape, rows, cols, diagonal=False):
    """A ``mask`` for ``fit``: the entries (rows, cols) (e.g. the held-out ones of a test set) and,
    with ``diagonal=True`` for a square matrix (a network without self-loops), the diagonal, as a
    boolean scipy.sparse CSR matrix of ``shape``."""
    I, J = shape
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError("rows and cols must be 1-d arrays of the same length")
    if rows.size and (rows.min() < 0 or rows.max() >= I or cols.min() < 0 or cols.max() >= J):
        raise ValueError(f"entries out of range for shape {(I, J)}")
    if diagonal:
        if I != J:
            raise ValueError(f"diagonal=True needs a square matrix, got shape {(I, J)}")
        rows = np.concatenate([rows, np.arange(I)])
        cols = np.concatenate([cols, np.arange(I)])
    m = sp.csr_matrix((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(I, J))
    m.sum_duplicates()
    m.data[:] = True
    return m


def _check_symmetric(I, J, rows, cols):
    if I != J:
        raise ValueError(f"symmetric=True needs a square matrix, got shape {(I, J)}")
    a = np.sort(rows * J + cols)
    b = np.sort(cols * J + rows)
    if not np.array_equal(a, b):
        e = int(np.setdiff1d(a, b)[0])
        raise ValueError(f"symmetric=True needs a symmetric X: ({e // J}, {e % J}) is a one but "
                         f"({e % J}, {e // J}) is not")


def _symmetric_test(test, J):
    """Test pairs of an undirected network -> both directions: the pairs, then the reversed
    off-diagonal ones; returns the expanded test and (n_pairs, partner index or -1)."""
    tr, tc, tl = test
    key = np.minimum(tr, tc) * J + np.maximum(tr, tc)
    uniq, times = np.unique(key, return_counts=True)
    if uniq.shape[0] < key.shape[0]:
        e = int(uniq[np.flatnonzero(times > 1)[0]])
        raise ValueError(f"test lists the pair ({e // J}, {e % J}) more than once (as (i, j) and (j, i) or "
                         f"repeated); in an undirected network each pair is held out once")
    off = np.flatnonzero(tr != tc)
    n = tr.shape[0]
    partner = np.full(n, -1, dtype=np.int64)
    partner[off] = n + np.arange(off.size)
    ext = (np.concatenate([tr, tc[off]]), np.concatenate([tc, tr[off]]), np.concatenate([tl, tl[off]]))
    return ext, (n, partner)


def mask_entries(mask, shape):
    """The entries marked True in ``mask`` (boolean or 0/1, dense or scipy.sparse, of ``shape``) as
    flat keys i J + j, sorted and unique; ``ValueError`` for a wrong shape, NaN or other values."""
    I, J = shape
    if sp.issparse(mask):
        Mo = sp.coo_matrix(mask)
        d, got = Mo.data, Mo.shape
    else:
        A = np.asarray(mask)
        d, got = A.ravel(), A.shape
    if got != (I, J):
        raise ValueError(f"mask must have the shape of X {(I, J)}, got {got}")
    if d.dtype.kind == "f" and np.isnan(d).any():
        raise ValueError("mask contains NaN; it must be boolean (True: the entry is missing)")
    if d.dtype.kind not in "biuf" or np.any((d != 0) & (d != 1)):
        raise ValueError("mask must be boolean or 0/1 (True: the entry is missing)")
    if sp.issparse(mask):
        keep = d != 0
        return np.unique(Mo.row[keep].astype(np.int64) * J + Mo.col[keep])
    return np.flatnonzero(d != 0).astype(np.int64)


def _check_mask(mask, I, J, rows, cols):
    """The missing entries of ``fit(mask=...)`` as (rows, cols) in row-major order (empty arrays
    without a mask). A one of X under the mask is an error: an entry is observed or missing."""
    empty = np.zeros(0, dtype=np.int64)
    if mask is None:
        return empty, empty
    key = mask_entries(mask, (I, J))
    clash = np.isin(key, rows * J + cols)
    if clash.any():
        e = int(key[np.flatnonzero(clash)[0]])
        raise ValueError(f"{int(clash.sum())} ones of X are under the mask (e.g. ({e // J}, {e % J})); "
                         f"an entry is either observed (0 or 1) or missing: set held-out ones to 0 in X")
    return key // J, key % J


def _check_hold(hold, model):
    """``fit(hold=...)``: None or (sweeps >= 1, cap > 0 finite) -> a tuple (int, float)."""
    if hold is None:
        return None
    names = "a1, a2" if model in ("EPM", "CEPM") else "alpha1, alpha2"
    if not isinstance(hold, (tuple, list)) or len(hold) != 2:
        raise ValueError(f"hold must be None or a pair (sweeps, cap): cap {names} at cap for the first "
                         f"sweeps iterations, e.g. hold=(300, 0.1); got {hold!r}")
    return _check_int("hold's sweeps", hold[0], 1), _check_pos("hold's cap", hold[1])


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, Integral) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _check_seed(seed):
    """A seed for ``numpy.random.default_rng``: a non-negative integer (or a sequence of them)."""
    ok = (isinstance(seed, Integral) and not isinstance(seed, bool) and seed >= 0)
    if not ok and isinstance(seed, (list, tuple)) and len(seed) > 0:
        ok = all(isinstance(v, Integral) and not isinstance(v, bool) and v >= 0 for v in seed)
    if not ok:
        raise ValueError(f"seed must be a non-negative integer (or a list of them), got {seed!r}")
    return seed


def _check_pos(name, v):
    if isinstance(v, bool) or not isinstance(v, Real) or not (v > 0) or not math.isfinite(v):
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


#: the arrays that make up a chain's state, per model (with the random streams, st["rng"], ...)
CHAIN_STATE = {"EPM": ("U", "V", "lam", "h"), "CEPM": ("U", "V", "lam", "h"),
               "DEPM": ("phi", "psi", "lam", "h"), "IDEPM": ("offsets", "z", "h")}


def _data_digest(I, J, rows, cols, test, nnz):
    """A digest of the training matrix, its missing entries and the test entries (a resumed
    chain must see the same)."""
    import hashlib
    h = hashlib.sha256(np.array([I, J, nnz], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(cols, dtype=np.int64).tobytes())
    if test is not None:
        for a in test:
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()[:32]


def _check_resume(resume, want):
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
                     samples=last.samples,
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
                  log_joint=arrays.get("log_joint"), samples=samples)
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


def _check_resumed_state(resume, model, I, J, T, n_entries, nnz):
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


def _compact(idx, test_idx, n):
    """The sorted ids of the rows (or columns) used by the ones ``idx`` or by the test entries,
    and both index arrays renumbered 0..n'-1 in that order (unchanged when every id is used)."""
    used = np.zeros(n, dtype=bool)
    used[idx] = True
    if test_idx is not None:
        used[test_idx] = True
    ids = np.flatnonzero(used)
    if ids.shape[0] == n:
        return ids, idx, test_idx
    new = np.full(n, -1, dtype=np.int64)
    new[ids] = np.arange(ids.shape[0])
    return ids, new[idx], None if test_idx is None else new[test_idx]


# ----------------------------------------------------------------------------------------------
# initial state
# ----------------------------------------------------------------------------------------------

def init_state(model, rng, I, J, rows, cols, T=None, K_init=None, init=None, missing=None, symmetric=False):
    """The initial state of a sampler (documented in the Part II chapters).

    ``init="data"``: the data-driven start of ``epm_lib.starts.data_start`` (``missing``: the
    (rows, cols) of masked entries, ``symmetric``: an undirected network); ``K_init`` unused.
    Otherwise (None, "paper" for the truncated models, "random" for the IDEPM) as follows.

    Hyperparameters start at 1. EPM/CEPM: U, V drawn from Gamma(1, 1) (for the CEPM
    its first sweep then sets b1 = I a1, b2 = J a2);
    DEPM: the columns of phi, psi from Dirichlet(1, ..., 1); truncated models:
    the total mass gamma0/c0 = 1 (its prior mean) shared equally by the first
    ``K_init`` atoms, lambda_k = 1/K_init, and lambda_k = 0 for the others, so
    the first m-step seats every customer at those K_init atoms (the others
    get their first lambda from the sweep's lambda update). ``K_init = T``
    (the default) is the paper's start, every atom with an equal share, so that
    the sampler has to *shrink* the model; a small ``K_init`` makes it grow.
    IDEPM: one customer per one of X, seated uniformly at random at
    ``K_init`` atoms.
    """
    if init == "data":
        return starts.data_start(model, rng, I, J, rows, cols, T=T, missing=missing, symmetric=symmetric)
    if model in ("EPM", "CEPM", "DEPM"):
        K0 = T if K_init is None else K_init
        lam = np.zeros(T)
        lam[:K0] = 1.0 / K0
    if model in ("EPM", "CEPM"):
        h = np.ones(6)
        U = rng.gamma(1.0, 1.0, size=(I, T))
        V = rng.gamma(1.0, 1.0, size=(J, T))
        return dict(U=U, V=V, lam=lam, h=h)
    if model == "DEPM":
        h = np.ones(4)
        phi = rng.dirichlet(np.ones(I), size=T).T.copy()
        psi = rng.dirichlet(np.ones(J), size=T).T.copy()
        return dict(phi=phi, psi=psi, lam=lam, h=h)
    h = np.ones(4)
    nnz = rows.shape[0]
    K0 = min(K_init, nnz)
    offsets = np.arange(nnz + 1, dtype=np.int64)
    z = rng.integers(0, K0, size=nnz).astype(np.int64)
    # make the labels contiguous (0..K-1) so that K_init atoms really are distinct and active
    _, z = np.unique(z, return_inverse=True)
    return dict(offsets=offsets, z=z.astype(np.int64), h=h)


# ----------------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------------

def fit(X, model, *, T=None, n_iter=600, n_avg=100, seed=0, test=None, K_init=None,
        a_update=None, progress=False, e0=0.01, f0=0.01, m_step=None, split_merge=None, resume=None,
        mask=None, keep_samples=None, symmetric=False, init=None, hold=None):
    """Run a Gibbs sampler of the EPM, CEPM, DEPM (truncated at ``T``) or IDEPM on a binary matrix.

    Parameters
    ----------
    X : (I, J) binary numpy array or scipy.sparse matrix, the training matrix.
    model : "EPM", "CEPM", "DEPM" or "IDEPM".
    T : truncation level (int >= 1) for the truncated models; must be None for the IDEPM.
    n_iter, n_avg : Gibbs iterations, and how many final ones are averaged (Sec. 5: 600 and 100).
    seed : seed of the ``numpy.random.Generator`` that drives the whole run (the IDEPM draws the
        parameters it needs only for predictions from a child stream, ``rng.spawn(1)[0]``);
        the same seed gives bit-identical results.
    test : None or (rows, cols, labels): held-out entries, which must be zeros of X. Alone, they
        are observed zeros in training (the paper's protocol); to leave them out of the
        likelihood (the usual link-prediction protocol) also put them in ``mask``.
    keep_samples : how many samples (phi or U, psi or V, lambda) of the last ``n_avg`` iterations
        to keep for ``FitResult.predict`` (evenly spaced, the last one always). Default: all
        ``n_avg`` when they fit in ``KEEP_BYTES`` (else as many as fit); for the IDEPM without a
        test set only the final sample (its parameters are drawn only where needed; an explicit
        number draws them in the window, from the prediction stream).
    symmetric : True for an undirected network: X must be square and symmetric. The model is
        the bipartite one fitted to both directions of every link; a test pair (i, j) counts once,
        with the prediction (p_ij + p_ji)/2 (``test_prob``, ``tdll``, ``tdauc_pr`` and
        ``predict`` are per pair; the per-iteration ``tdll_trace`` averages both directions); a
        masked pair is masked in both directions (the mask is symmetrised).
    mask : None or a boolean (I, J) matrix, dense or scipy.sparse: True marks a missing entry,
        left out of the likelihood exactly (its latent count is drawn from the Poisson of
        Eq. (1) each sweep, data augmentation; cost O(missing entries x atoms) per sweep). A
        one of X under the mask is an error.
    init : the start. None (default): today's, named "paper" for the EPM, CEPM, DEPM (the
        gamma process's mass on the first ``K_init`` atoms, all T by default) and "random" for
        the IDEPM (customers seated at random over ``K_init`` atoms); "data": a Poisson-NMF
        start whose number of atoms is chosen from X (``epm_lib.starts``; ``K_init`` must then
        not be given). Recorded in ``settings["init"]`` (``settings["K_start"]``: atoms with mass
        at the start, ``settings["init_seconds"]``: the start's wall time, not in ``seconds``).
    hold : None, or (sweeps, cap): a burn-in hold. For the chain's first ``sweeps`` iterations,
        after each sweep the shape parameters alpha1, alpha2 (DEPM, IDEPM) or a1, a2 (EPM, CEPM)
        are capped at ``cap`` (keeps atoms sharp while the chain finds the data's structure);
        afterwards the exact kernel runs untouched. The hold must end before the last ``n_avg``
        iterations (the averaged samples come from the exact kernel). Counted from the chain's
        first iteration (a resumed chain continues the count). Recorded in ``settings["hold"]``.
    K_init : number of atoms the chain starts on. IDEPM: the customers start spread over
        ``K_init`` atoms (default ``DEFAULT_K_INIT`` = 100, capped at the number of ones).
        EPM, CEPM, DEPM: 1 <= K_init <= T; the gamma process's mass starts on the first
        K_init atoms (``init_state``); default T, the paper's start (all atoms equal).
    a_update : EPM and CEPM only: "exact" (default) or "paper": the EPM's a1, a2 update as
        printed in the paper (Eq. 25, without lambda_k) and the CEPM's grid weight as printed
        (Eq. 28 without the factor (b1 + q_k)^(-m_..k)).
    progress : show a tqdm progress bar.
    m_step : IDEPM only: "exact" (default), Metropolis-Hastings births and deaths of
        customers that account for the atoms not in use (``idepm.birth_death_customers``),
        or "paper", the m-step of Sec. 4.3 (Eqs. (7)-(8)), which ignores them and
        fails the Geweke test on small matrices (``chapters/15_checking_samplers``).
    e0, f0 : the Gamma(e0, f0) hyperprior of every hyperparameter (Sec. 5: 0.01, 0.01).
    split_merge : IDEPM and DEPM only: split-merge Metropolis-Hastings proposals per iteration
        (``models.moves``: moves that change the number of atoms in one step; the DEPM's run
        between its m-step and its draws of phi, psi, lambda); 0 runs the paper's
        plain Gibbs sampler. Default ``DEFAULT_SPLIT_MERGE``. ``FitResult.acceptance`` and
        ``move_stats`` report how many were proposed and accepted.
    resume : a ``FitResult`` (or the path of one saved with ``FitResult.save``) to continue: the
        chain goes on from its final state and random streams for ``n_iter`` more iterations, with
        the same data, model and options (checked; ``seed`` and ``K_init`` are then not used). The
        result holds the new iterations only (``settings["start_iter"]`` says where they start;
        ``seconds`` continues the cumulative clock); joined with ``concat``, the traces of a chain
        run in pieces equal those of one uninterrupted run, draw for draw.
    """
    if not isinstance(model, str) or model.upper() not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    model = model.upper()
    # an option a model does not use is an error, never silently ignored
    if model in ("EPM", "CEPM"):
        a_update = "exact" if a_update is None else a_update
        if a_update not in ("exact", "paper"):
            raise ValueError(f"a_update must be 'exact' or 'paper', got {a_update!r}")
    elif a_update is not None:
        raise ValueError(f"a_update exists only for the EPM and CEPM (their a1, a2 updates); "
                         f"the {model} has no such update (got a_update={a_update!r})")
    if model == "IDEPM":
        m_step = "exact" if m_step is None else m_step
        if m_step not in ("exact", "paper"):
            raise ValueError(f"m_step must be 'exact' or 'paper', got {m_step!r}")
    elif m_step is not None:
        raise ValueError(f"m_step exists only for the IDEPM (its collapsed m-step); the {model} draws its "
                         f"latent counts given its parameters (got m_step={m_step!r})")
    if model in ("IDEPM", "DEPM"):
        split_merge = DEFAULT_SPLIT_MERGE if split_merge is None else _check_int("split_merge", split_merge, 0)
        if split_merge and model == "IDEPM" and m_step == "paper":
            raise ValueError("split_merge moves need the exact m-step (m_step='exact'): the paper's "
                             "m-step is not a valid kernel of Theorem 4's posterior")
    elif split_merge is not None:
        raise ValueError(f"split_merge exists only for the IDEPM and DEPM (moves on their collapsed "
                         f"seating); the {model} has none (got split_merge={split_merge!r})")
    else:
        split_merge = 0
    if init is not None and (not isinstance(init, str) or init not in starts.INITS[model]):
        raise ValueError(f"unknown init {init!r} for the {model}; choose None (today's start, "
                         f"{starts.INITS[model][0]!r}) or one of {', '.join(map(repr, starts.INITS[model]))}")
    if init == "data" and K_init is not None:
        raise ValueError("init='data' chooses the number of atoms from the data: K_init must not be given "
                         f"(K_init belongs to init={starts.INITS[model][0]!r})")
    if init is not None and resume is not None:
        raise ValueError(f"resume continues a chain from its state: init must not be given (got init={init!r})")
    if model == "IDEPM":
        if T is not None:
            raise ValueError("the IDEPM is not truncated: T must be None")
        K_init = DEFAULT_K_INIT if K_init is None else _check_int("K_init", K_init, 1)
    else:
        if T is None:
            raise ValueError(f"the {model} is truncated: give T, an integer >= 1")
        T = _check_int("T", T, 1)
        K_init = T if K_init is None else _check_int("K_init", K_init, 1)
        if K_init > T:
            raise ValueError(f"K_init = {K_init} exceeds the truncation level T = {T}")
    if init == "data":
        K_init = None
    n_iter = _check_int("n_iter", n_iter, 1)
    n_avg = _check_int("n_avg", n_avg, 1)
    if keep_samples is not None:
        keep_samples = min(_check_int("keep_samples", keep_samples, 1), n_avg)
    if n_avg > n_iter:
        raise ValueError(f"n_avg = {n_avg} exceeds n_iter = {n_iter}")
    e0, f0 = _check_pos("e0", e0), _check_pos("f0", f0)
    _check_seed(seed)
    I, J, rows, cols = prepare_matrix(X)
    if not isinstance(symmetric, bool):
        raise ValueError(f"symmetric must be True or False, got {symmetric!r}")
    test = _check_test(test, I, J, rows, cols)
    pairs = None
    if symmetric:
        _check_symmetric(I, J, rows, cols)
        if test is not None:
            test, pairs = _symmetric_test(test, J)
    mrows, mcols = _check_mask(mask, I, J, rows, cols)
    if symmetric and mrows.size:        # a masked pair is missing in both directions
        key = np.unique(np.concatenate([mrows * J + mcols, mcols * J + mrows]))
        mrows, mcols = key // J, key % J
    if mrows.size and model == "IDEPM" and m_step == "paper":
        raise ValueError("mask needs the IDEPM's exact m-step (m_step='exact'): the paper's m-step "
                         "redraws every count from a zero-truncated Poisson")
    nnz = rows.shape[0]
    # the sweeps see the ones of X followed by the missing entries (counts from the Poisson of
    # Eq. (1), zero allowed; common.sample_latent_counts): e_rows[:nnz] are the ones
    e_rows, e_cols = (rows, cols) if not mrows.size else (np.concatenate([rows, mrows]),
                                                           np.concatenate([cols, mcols]))

    hold = _check_hold(hold, model)
    if init == "data" and resume is None:
        starts.check_enough(I, J, nnz)
    rng = np.random.default_rng(seed)
    t_init = time.perf_counter()
    st = init_state(model, rng, I, J, rows, cols, T=T, K_init=K_init, init=init,
                    missing=(mrows, mcols) if mrows.size else None, symmetric=symmetric)
    t_init = time.perf_counter() - t_init
    digest = _data_digest(I, J, e_rows, e_cols, test, nnz)
    start_iter, elapsed = 0, 0.0
    if resume is not None:              # continue a chain: its state and its random streams
        resume = _check_resume(resume, dict(model=model, T=T, e0=e0, f0=f0, a_update=a_update,
                                            m_step=m_step, data_digest=digest,
                                            split_merge=split_merge if model in ("IDEPM", "DEPM") else None))
        _check_resumed_state(resume, model, I, J, T, e_rows.shape[0], nnz)   # before any kernel sees it
        st = {n: np.array(resume.state[n], copy=True) for n in CHAIN_STATE[model]}
        rng.bit_generator.state = resume.state["rng"]
        start_iter = resume.settings["start_iter"] + resume.settings["n_iter"]
        elapsed = float(resume.seconds[-1])
    start_seconds = elapsed
    if hold is not None and start_iter + n_iter - n_avg < hold[0]:
        raise ValueError(f"hold = {hold}: its {hold[0]} sweeps reach into the last n_avg = {n_avg} iterations "
                         f"(iterations {start_iter}..{start_iter + n_iter - 1}); the averaged samples must "
                         f"come from the exact kernel: hold fewer sweeps or run longer")
    init = resume.settings.get("init") if resume is not None else (init or starts.INITS[model][0])
    K_start = (int(st["z"].max()) + 1 if model == "IDEPM" else int(np.count_nonzero(st["lam"]))) \
        if resume is None else None
    hold_idx = [gamma_epm.A1, gamma_epm.A2] if model in ("EPM", "CEPM") else [depm.ALPHA1, depm.ALPHA2]
    # The IDEPM's count tables (and its phi, psi) need only the rows and columns that carry ones
    # or test entries: the others hold no customers (a factor 1 in Eq. (5)) and enter the sampler
    # only through I and J. Kernels see compact indices; memory O(nnz + (I' + J') K+).
    k_rows, k_cols, k_test = rows, cols, test
    Ic, Jc = I, J
    row_ids = col_ids = None
    if model == "IDEPM":
        row_ids, k_rows, k_test_r = _compact(e_rows, None if test is None else test[0], I)
        col_ids, k_cols, k_test_c = _compact(e_cols, None if test is None else test[1], J)
        if mrows.size and resume is None:   # the missing entries start with no customers
            st["offsets"] = np.concatenate([st["offsets"], np.full(mrows.size, nnz, dtype=np.int64)])
        Ic, Jc = row_ids.shape[0], col_ids.shape[0]
        if test is not None:
            k_test = (k_test_r, k_test_c, test[2])
    names = gamma_epm.HYPER_NAMES if model in ("EPM", "CEPM") else depm.HYPER_NAMES
    hyper = {n: np.empty(n_iter) for n in names}
    K = np.empty(n_iter, dtype=np.int64)
    M = np.empty(n_iter, dtype=np.int64)
    seconds = np.empty(n_iter)
    tdll_trace = np.full(n_iter, np.nan)
    log_joint = np.empty(n_iter) if model == "IDEPM" else None
    prob_sum = None
    samples, keep_its = [], None        # parameters kept for FitResult.predict
    if test is not None:
        # evaluate the test entries in row-major order (each row of U lambda stays in cache,
        # the rows of V are visited in increasing order); results are returned in the caller's order
        order = np.lexsort((k_test[1], k_test[0]))
        t_rows, t_cols, t_labels = k_test[0][order], k_test[1][order], k_test[2][order]
        prob_sum = np.zeros(order.shape[0])
        z_ptr, z_cols, o_rows, o_cols = common.split_test(t_rows, t_cols, t_labels, Ic)
    if model != "IDEPM":
        m_ik = np.zeros((I, T), dtype=np.int64)
        m_jk = np.zeros((J, T), dtype=np.int64)
        m_k = np.zeros(T, dtype=np.int64)
    else:
        counts = idepm.seat_counts(k_rows, k_cols, st["offsets"], st["z"], Ic, Jc, int(st["z"].max()) + 1)
        # phi, psi, lambda for predictions come from a stream of their own, so that the chain is
        # the same with or without a test set
        rng_pred = rng.spawn(1)[0]
        if resume is not None:
            rng_pred.bit_generator.state = resume.state["rng_pred"]
    grid = cepm_grid()
    paper = a_update == "paper"
    # per iteration: splits proposed, splits accepted, merges proposed, merges accepted
    move_stats = np.zeros((n_iter, 4), dtype=np.int64)

    iterator = range(n_iter)
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(iterator, desc=f"{model}" + (f"-{T}" if T else ""), unit="it")
    # Ctrl-C: counted during the sweeps and delivered between them (epm_lib.interrupt), so
    # that no numba call sees a half-unboxed argument and no state is left half-updated
    with deferred_sigint() as guard:
        for it in iterator:
            t0 = time.perf_counter()
            if model in ("EPM", "CEPM"):
                M[it] = gamma_epm.epm_sweep(rng, e_rows, e_cols, st["U"], st["V"], st["lam"], st["h"],
                                            m_ik, m_jk, m_k, e0, f0, model == "CEPM", float(I), float(J),
                                            paper, grid, nnz)
                if M[it] < 0:
                    raise common.m_step_error(M[it], e_rows, e_cols, model)
                K[it] = int(np.count_nonzero(m_k))
                R, C, lam = st["U"], st["V"], st["lam"]
            elif model == "DEPM":
                sm_stats = np.zeros(5, dtype=np.int64)
                M[it] = depm.depm_sweep(rng, e_rows, e_cols, st["phi"], st["psi"], st["lam"], st["h"],
                                        m_ik, m_jk, m_k, e0, f0, split_merge, sm_stats, nnz)
                move_stats[it] = sm_stats[:4]
                if M[it] < 0:
                    raise common.m_step_error(M[it], e_rows, e_cols, model)
                K[it] = int(np.count_nonzero(m_k))
                R, C, lam = st["phi"], st["psi"], st["lam"]
            else:
                offsets, z, *counts, Kp = idepm.idepm_sweep(rng, k_rows, k_cols, st["offsets"], st["z"], *counts,
                                                            I, J, st["h"], e0, f0, m_step == "exact", 1, nnz)
                if split_merge:                  # Metropolis-Hastings split-merge moves (models.moves)
                    z, *counts, Kp, stats = moves.split_merge_idepm(
                        rng, k_rows, k_cols, offsets, z, *counts, I, J,
                        *st["h"][[idepm.ALPHA1, idepm.ALPHA2, idepm.GAMMA0]], split_merge)
                    move_stats[it] = stats[:4]
                st.update(offsets=offsets, z=z)
                K[it] = Kp
                M[it] = z.shape[0]
                if test is not None or it == n_iter - 1 or (keep_samples and it >= n_iter - n_avg):
                    # the collapsed chain has no phi, psi, lambda: draw the active atoms' from their
                    # conditional given the seating, for predictions. Timed with the sweep, since every
                    # prediction needs it (the truncated models draw theirs inside the sweep).
                    if test is None and it == n_iter - 1:   # the stream before this final draw: a resumed
                        pred_state = rng_pred.bit_generator.state   # chain then draws the same at its end
                    R, C, lam = idepm.sample_active_parameters(rng_pred, *counts, np.arange(Kp), Kp,
                                                               *st["h"][[idepm.ALPHA1, idepm.ALPHA2, idepm.C0]],
                                                               I, J)
                    st.update(phi=R, psi=C, lam=lam)
            if hold is not None and start_iter + it < hold[0]:     # burn-in hold: cap the shapes
                st["h"][hold_idx] = np.minimum(st["h"][hold_idx], hold[1])
                if model == "CEPM":             # the CEPM's rates follow its shapes, b = C a
                    st["h"][[gamma_epm.B1, gamma_epm.B2]] = st["h"][hold_idx] * np.array([I, J], float)
            elapsed += time.perf_counter() - t0
            seconds[it] = elapsed
            if log_joint is not None:           # not timed, like the test evaluation
                log_joint[it] = idepm.log_joint(st["offsets"], st["z"], *counts, K[it], I, J, st["h"], e0, f0)
            for n, v in zip(names, st["h"]):
                hyper[n][it] = v
            if it >= n_iter - n_avg and (model != "IDEPM" or test is not None or keep_samples
                                         or it == n_iter - 1):
                if keep_its is None:        # at the window's first sample: how many fit in memory
                    per = 8 * (R.size + C.size + lam.size)
                    n_keep = keep_samples or (n_avg if model != "IDEPM" or test is not None else 1)
                    if keep_samples is None:
                        n_keep = max(1, min(n_keep, KEEP_BYTES // max(per, 1)))
                    keep_its = set((n_iter - 1 - np.round(np.linspace(0, n_avg - 1, n_keep))).astype(int).tolist()) \
                        if n_keep > 1 else {n_iter - 1}
                if it in keep_its:
                    samples.append((np.array(R, copy=True), np.array(C, copy=True), np.array(lam, copy=True)))
            if test is not None:
                if it >= n_iter - n_avg:    # the posterior mean needs every test entry's rate
                    rates = common.link_rates(t_rows, t_cols, R, C, lam)
                    tdll_trace[it] = common.tdll_from_rates(rates, t_labels)
                    prob_sum += -np.expm1(-rates)
                else:                       # the trace only needs sums: zeros enter through row sums
                    tdll_trace[it] = common.test_loglik_sum(z_ptr, z_cols, o_rows, o_cols,
                                                            R, C, lam) / t_rows.shape[0]
            guard.check()
    if test is not None:
        test_prob = np.empty_like(prob_sum)
        test_prob[order] = prob_sum / n_avg
        labels = test[2]
        if pairs is not None:           # undirected: a pair's prediction is the mean of its directions
            n_pairs, partner = pairs
            p = test_prob[:n_pairs].copy()
            has = partner >= 0
            p[has] = 0.5 * (p[has] + test_prob[partner[has]])
            test_prob, labels = p, labels[:n_pairs]
        tdll = bernoulli_tdll(labels, test_prob)
        auc = tdauc_pr(labels, test_prob)
        roc = auc_roc(labels, test_prob) if 0 < labels.sum() < labels.size else float("nan")
    else:
        test_prob, tdll, auc, roc = None, float("nan"), float("nan"), float("nan")
    if model != "IDEPM":
        st.update(m_ik=m_ik, m_jk=m_jk, m_k=m_k)
    else:
        # phi (psi) holds the rows (columns) row_ids (col_ids) of X: all of them unless some
        # carry neither a one nor a test entry
        st.update(row_ids=row_ids, col_ids=col_ids)
    st["rows"], st["cols"] = rows, cols
    st["rng"] = rng.bit_generator.state
    if model == "IDEPM":
        st["rng_pred"] = rng_pred.bit_generator.state if test is not None else pred_state
    settings = dict(model=model, T=T, n_iter=n_iter, n_avg=n_avg, seed=seed, K_init=K_init,
                    a_update=a_update, m_step=m_step, split_merge=split_merge if model in ("IDEPM", "DEPM")
                    else None, e0=e0, f0=f0, start_iter=start_iter, start_seconds=start_seconds,
                    data_digest=digest, shape=(I, J), nnz=int(rows.size),
                    n_test=0 if test is None else int(test[0].size if pairs is None else pairs[0]),
                    n_masked=int(mrows.size), symmetric=symmetric, init=init, K_start=K_start,
                    init_seconds=t_init if resume is None else None, hold=None if hold is None else list(hold))
    return FitResult(model=model, T=T, K=K, seconds=seconds, tdll_trace=tdll_trace, test_prob=test_prob,
                     tdll=tdll, tdauc_pr=auc, hyper=hyper, M=M, state=st, settings=settings,
                     move_stats=move_stats, samples=samples, tdauc_roc=roc, log_joint=log_joint)
