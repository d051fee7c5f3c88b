"""``epm_lib.fit``: run one of the four samplers on a binary matrix.

``fit`` is a short driver: it checks the options (``epm_lib.fit_options``) and the data
(``epm_lib.fit_data``), builds the initial state (``init_state``, or the state of a chain it
resumes), then calls one numba sweep per iteration (``_SWEEPS``: one small class per model
family around the kernels of ``epm_lib.models``) and records the traces (``_Recorder``); the
result is a ``FitResult`` (``epm_lib.result``). Chapters of Part II derive each sweep; ``fit``
runs the very same kernels.
"""
from __future__ import annotations

import time

import numpy as np

from .distributions import cepm_grid
from .interrupt import deferred_sigint
from .metrics import bernoulli_tdll, tdauc_pr, auc_roc
from .models import common, gamma_epm, depm, idepm, moves
from . import diagnose, starts
from .fit_options import (MODELS, DEFAULT_K_INIT, DEFAULT_SPLIT_MERGE, KEEP_BYTES, Options,  # noqa: F401
                          check_hold_window, check_options)
from .fit_data import FitData, prepare, prepare_matrix, missing_mask, mask_entries, _compact  # noqa: F401
from .result import (FitResult, concat, load_result, CHAIN_STATE, check_resume,  # noqa: F401
                     check_resumed_state)

__all__ = ["fit", "FitResult", "MODELS", "prepare_matrix", "init_state", "DEFAULT_K_INIT",
           "DEFAULT_SPLIT_MERGE", "concat", "load_result", "CHAIN_STATE", "missing_mask", "mask_entries"]


# ----------------------------------------------------------------------------------------------
# initial state
# ----------------------------------------------------------------------------------------------

def init_state(model, rng, I, J, rows, cols, T=None, K_init=None, init=None, missing=None, symmetric=False,
               rank=None):
    """The initial state of a sampler (documented in the Part II chapters).

    ``init="data"``: the data-driven start of ``epm_lib.starts.data_start`` (``missing``: the
    (rows, cols) of masked entries, ``symmetric``: an undirected network, ``rank``: its rule for the
    number of atoms, None for the spectral count); ``K_init`` unused.
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

    ``init="scaled"`` (truncated models): the paper's start with its scale set by the data: the
    same U, V (phi, psi) and K_init equal atoms, lambda multiplied so that the model's expected
    count sum_k lambda_k (sum_i U_ik)(sum_j V_jk) equals the number of ones of X (the paper's start
    expects I J counts from the EPM, from the DEPM one; ``chapters/29_where_a_chain_starts``).
    """
    if init == "data":
        return starts.data_start(model, rng, I, J, rows, cols, T=T, missing=missing, symmetric=symmetric,
                                 rank=rank)
    if isinstance(init, starts.Labels):
        return starts.labels_start(model, init, I, J, rows, cols, T=T, missing=missing, symmetric=symmetric)
    if model in ("EPM", "CEPM", "DEPM"):
        K0 = T if K_init is None else K_init
        lam = np.zeros(T)
        lam[:K0] = 1.0 / K0
    if model in ("EPM", "CEPM"):
        h = np.ones(6)
        U = rng.gamma(1.0, 1.0, size=(I, T))
        V = rng.gamma(1.0, 1.0, size=(J, T))
        if init == "scaled":
            lam *= rows.shape[0] / float(lam @ (U.sum(axis=0) * V.sum(axis=0)))
        return dict(U=U, V=V, lam=lam, h=h)
    if model == "DEPM":
        h = np.ones(4)
        phi = rng.dirichlet(np.ones(I), size=T).T.copy()
        psi = rng.dirichlet(np.ones(J), size=T).T.copy()
        if init == "scaled":             # the columns of phi, psi sum to 1
            lam *= rows.shape[0] / float(lam.sum())
        return dict(phi=phi, psi=psi, lam=lam, h=h)
    h = np.ones(4)
    nnz = rows.shape[0]
    K0 = min(K_init, nnz)
    offsets = np.arange(nnz + 1, dtype=np.int64)
    z = rng.integers(0, K0, size=nnz).astype(np.int64)
    # make the labels contiguous (0..K-1) so that K_init atoms really are distinct and active
    _, z = np.unique(z, return_inverse=True)
    return dict(offsets=offsets, z=z.astype(np.int64), h=h)


def _resume_clashes(resume, seed, K_init, hold):
    """A resumed chain keeps its own seed, start and burn-in hold: ``seed``, ``K_init`` or ``hold``
    given with ``resume`` and other than the chain's are refused (``ValueError`` naming each and the
    chain's value). Returns ``resume`` (a saved file loaded)."""
    if isinstance(resume, (str, bytes)) or hasattr(resume, "__fspath__"):
        resume = load_result(resume)
    if not isinstance(resume, FitResult) or not isinstance(resume.settings, dict):
        return resume                       # check_resume says what is wrong
    prev, where = resume.settings, getattr(resume, "_source", "resume")
    chain_hold = None if prev.get("hold") is None else tuple(prev["hold"])
    clash = []
    if not (isinstance(seed, int) and seed == 0) and repr(seed) != repr(prev.get("seed")):
        clash.append(f"seed = {seed!r} (the chain's: {prev.get('seed')!r}; it continues its own random stream)")
    if K_init is not None and K_init != prev.get("K_init"):
        clash.append(f"K_init = {K_init!r} (the chain started with {prev.get('K_init')!r})")
    if hold is not None:
        try:
            same = tuple(float(x) for x in hold) == tuple(float(x) for x in chain_hold or ())
        except (TypeError, ValueError):
            same = False                    # check_options names a malformed hold
        if not same and chain_hold is not None or chain_hold is None:
            clash.append(f"hold = {hold!r} (the chain's: {chain_hold!r})")
    if clash:
        raise ValueError(f"{where}: a resumed chain keeps its own seed, start and burn-in hold; leave out "
                         + "; ".join(clash))
    return resume


def _inherit(opts: Options, resume):
    """The options a resumed chain takes from its own settings: its seed, K_init and burn-in hold
    (so that the settings recorded, and ``concat``'s, are those it ran with, and a held chain stays
    held for the rest of its hold, as it would uninterrupted)."""
    prev = resume.settings
    opts.seed, opts.K_init = prev.get("seed", opts.seed), prev.get("K_init")
    opts.hold = None if prev.get("hold") is None else tuple(prev["hold"])


def _start(opts: Options, data: FitData, resume):
    """The chain's first state and random stream: ``init_state`` from ``opts.seed``, or the final
    state and stream of the chain ``resume`` (checked against the data first). Returns the state,
    the generator, the resumed ``FitResult`` (or None) and the settings that describe the start."""
    rng = np.random.default_rng(opts.seed)
    if resume is not None:              # continue a chain: its state and its random streams
        resume = check_resume(resume, dict(model=opts.model, T=opts.T, e0=opts.e0, f0=opts.f0,
                                           a_update=opts.a_update, m_step=opts.m_step, data_digest=data.digest,
                                           split_merge=opts.split_merge if opts.model in ("IDEPM", "DEPM")
                                           else None))
        check_resumed_state(resume, opts.model, data.I, data.J, opts.T, data.e_rows.shape[0], data.nnz)
        _inherit(opts, resume)
        st = {n: np.array(resume.state[n], copy=True) for n in CHAIN_STATE[opts.model]}
        rng.bit_generator.state = resume.state["rng"]
        start = dict(start_iter=resume.settings["start_iter"] + resume.settings["n_iter"],
                     start_seconds=float(resume.seconds[-1]), init=resume.settings.get("init"),
                     K_init=resume.settings.get("K_init"), init_seconds=resume.settings.get("init_seconds"),
                     K_start=resume.settings.get("K_start"),
                     log_joint_seconds=float(resume.settings.get("log_joint_seconds") or 0.0))
    else:
        check_hold_window(opts.hold, opts.n_iter, opts.n_avg)     # before the start's factorisation
        init, K_init = opts.init, opts.K_init
        if init is None:                # the default: the data's start where X allows one
            init = "data" if starts.enough(data.I, data.J, data.nnz) else starts.INITS[opts.model][0]
        if init == "data":
            K_init = None
            starts.check_enough(data.I, data.J, data.nnz)
        elif isinstance(init, starts.Labels):
            K_init = None
        t_init = time.perf_counter()
        st = init_state(opts.model, rng, data.I, data.J, data.rows, data.cols, T=opts.T, K_init=K_init,
                        init=init, missing=(data.mrows, data.mcols) if data.mrows.size else None,
                        symmetric=opts.symmetric, rank=opts.rank)
        start = dict(start_iter=0, start_seconds=0.0, init="labels" if isinstance(init, starts.Labels) else init,
                     K_init=K_init,
                     init_seconds=time.perf_counter() - t_init,
                     K_start=int(st["z"].max()) + 1 if opts.model == "IDEPM" else int(np.count_nonzero(st["lam"])),
                     log_joint_seconds=0.0)
    if resume is not None:
        check_hold_window(opts.hold, opts.n_iter, opts.n_avg, start["start_iter"])
    return st, rng, resume, start


# ----------------------------------------------------------------------------------------------
# one sweep per model family
# ----------------------------------------------------------------------------------------------

class _GammaSweep:
    """EPM, CEPM: ``gamma_epm.sweep`` over the ones and missing entries; truncated at T."""
    hyper_names = gamma_epm.HYPER_NAMES
    hold_idx = [gamma_epm.A1, gamma_epm.A2]
    factors = ("U", "V")

    def __init__(self, opts: Options, data: FitData, st, rng, resume):
        self.o, self.d, self.st, self.rng = opts, data, st, rng
        self.e_rows, self.e_cols = data.e_rows, data.e_cols
        self.k_test, self.n_rows = data.test, data.I        # test entries as the kernels index them
        self.m_ik = np.zeros((data.I, opts.T), dtype=np.int64)
        self.m_jk = np.zeros((data.J, opts.T), dtype=np.int64)
        self.m_k = np.zeros(opts.T, dtype=np.int64)
        # the kernels' structures (models.common): the state's arrays, updated in place by each sweep
        self.ones = common.Ones(data.e_rows, data.e_cols, int(data.nnz))
        self.counts = common.Counts(self.m_ik, self.m_jk, self.m_k)
        self.params = common.Factors(*(st[n] for n in self.factors), st["lam"], st["h"])
        self.prior = common.Prior(float(opts.e0), float(opts.f0))
        self.options = gamma_epm.GammaOptions(opts.model == "CEPM", float(data.I), float(data.J),
                                              opts.a_update == "paper", cepm_grid())

    def kernel(self, stats):
        return gamma_epm.sweep(self.rng, self.ones, self.params, self.counts, self.prior, self.options)

    def sweep(self, it, stats):
        """One Gibbs sweep; returns (M, K, (R, C, lambda)): the total count, the active atoms and
        the parameters a prediction uses (None: not drawn this iteration)."""
        M = self.kernel(stats)
        if M < 0:
            raise common.m_step_error(M, self.e_rows, self.e_cols, self.o.model)
        return M, int(np.count_nonzero(self.m_k)), tuple(self.st[n] for n in (*self.factors, "lam"))

    def hold(self):
        """The burn-in hold: cap the shape parameters at ``hold``'s cap after a sweep."""
        h, cap = self.st["h"], self.o.hold[1]
        h[self.hold_idx] = np.minimum(h[self.hold_idx], cap)
        if self.o.model == "CEPM":          # the CEPM's rates follow its shapes, b = C a
            h[[gamma_epm.B1, gamma_epm.B2]] = h[self.hold_idx] * np.array([self.d.I, self.d.J], float)

    def finish(self):
        """The final state (with the counts of the last sweep)."""
        self.st.update(m_ik=self.m_ik, m_jk=self.m_jk, m_k=self.m_k)


class _DepmSweep(_GammaSweep):
    """DEPM: ``depm.sweep`` (with its split-merge moves when ``split_merge`` > 0)."""
    hyper_names = depm.HYPER_NAMES
    hold_idx = [depm.ALPHA1, depm.ALPHA2]
    factors = ("phi", "psi")

    def kernel(self, stats):
        sm_stats = np.zeros(5, dtype=np.int64)
        M = depm.sweep(self.rng, self.ones, self.params, self.counts, self.prior, int(self.o.split_merge or 0),
                       sm_stats)
        stats[:] = sm_stats[:4]
        return M


class _IdepmSweep(_DepmSweep):
    """IDEPM: the collapsed ``idepm.sweep`` over the seating (then ``moves.split_merge_idepm``);
    phi, psi, lambda are drawn given the seating only where a prediction needs them."""

    def __init__(self, opts: Options, data: FitData, st, rng, resume):
        self.o, self.d, self.st, self.rng = opts, data, st, rng
        test = data.test
        # The count tables (and phi, psi) need only the rows and columns that carry ones or test
        # entries: the others hold no customers (a factor 1 in Eq. (5)) and enter the sampler only
        # through I and J. Kernels see compact indices; memory O(nnz + (I' + J') K+).
        self.row_ids, self.k_rows, k_test_r = _compact(data.e_rows, None if test is None else test[0], data.I)
        self.col_ids, self.k_cols, k_test_c = _compact(data.e_cols, None if test is None else test[1], data.J)
        if data.mrows.size and resume is None:   # the missing entries start with no customers
            st["offsets"] = np.concatenate([st["offsets"], np.full(data.mrows.size, data.nnz, dtype=np.int64)])
        self.n_rows = self.row_ids.shape[0]
        self.k_test = None if test is None else (k_test_r, k_test_c, test[2])
        self.counts = idepm.seat_counts(self.k_rows, self.k_cols, st["offsets"], st["z"], self.n_rows,
                                        self.col_ids.shape[0], int(st["z"].max()) + 1)
        self.ones = common.Ones(self.k_rows, self.k_cols, int(data.nnz))    # the kernels' structures
        self.prior = common.Prior(float(opts.e0), float(opts.f0))
        # phi, psi, lambda for predictions come from a stream of their own, so that the chain is
        # the same with or without a test set
        self.rng_pred = rng.spawn(1)[0]
        if resume is not None:
            self.rng_pred.bit_generator.state = resume.state["rng_pred"]
        self.pred_state = None

    def sweep(self, it, stats):
        o, d, st = self.o, self.d, self.st
        seat, Kp = idepm.sweep(self.rng, self.ones, idepm.Seating(st["offsets"], st["z"], *self.counts), d.I, d.J,
                               st["h"], self.prior, o.m_step == "exact", 1)
        offsets, z, counts = seat.offsets, seat.z, list(seat[2:])
        if o.split_merge:                   # Metropolis-Hastings split-merge moves (models.moves)
            z, *counts, Kp, moved = moves.split_merge_idepm(
                self.rng, self.k_rows, self.k_cols, offsets, z, *counts, d.I, d.J,
                *st["h"][[idepm.ALPHA1, idepm.ALPHA2, idepm.GAMMA0]], o.split_merge)
            stats[:] = moved[:4]
        st.update(offsets=offsets, z=z)
        self.counts, self.K = counts, Kp
        last = it == o.n_iter - 1
        if d.test is None and not last and not (o.keep_samples and it >= o.n_iter - o.n_avg):
            return z.shape[0], Kp, None
        # the collapsed chain has no phi, psi, lambda: draw the active atoms' from their conditional
        # given the seating, for predictions. Timed with the sweep, since every prediction needs it
        # (the truncated models draw theirs inside the sweep).
        if d.test is None and last:         # the stream before this final draw: a resumed chain
            self.pred_state = self.rng_pred.bit_generator.state     # then draws the same at its end
        R, C, lam = idepm.sample_active_parameters(self.rng_pred, *counts, np.arange(Kp), Kp,
                                                   *st["h"][[idepm.ALPHA1, idepm.ALPHA2, idepm.C0]], d.I, d.J)
        st.update(phi=R, psi=C, lam=lam)
        return z.shape[0], Kp, (R, C, lam)

    def log_joint(self):
        """ln P(m, [z] | h) + ln p(h) of the current seating (``idepm.log_joint``)."""
        o, d, st = self.o, self.d, self.st
        return idepm.log_joint(st["offsets"], st["z"], *self.counts, self.K, d.I, d.J, st["h"], o.e0, o.f0)

    def finish(self):
        # phi (psi) holds the rows (columns) row_ids (col_ids) of X: all of them unless some
        # carry neither a one nor a test entry
        self.st.update(row_ids=self.row_ids, col_ids=self.col_ids)
        self.st["rng_pred"] = self.rng_pred.bit_generator.state if self.d.test is not None else self.pred_state


_SWEEPS = {"EPM": _GammaSweep, "CEPM": _GammaSweep, "DEPM": _DepmSweep, "IDEPM": _IdepmSweep}


# ----------------------------------------------------------------------------------------------
# the traces
# ----------------------------------------------------------------------------------------------

class _Recorder:
    """The traces of one run (K, M, hyperparameters, seconds, test log likelihood, the IDEPM's log
    joint), the posterior mean at the test entries over the last ``n_avg`` iterations and the
    samples kept for ``FitResult.predict``."""

    def __init__(self, opts: Options, data: FitData, sweep):
        n, self.o, self.d, self.sweep = opts.n_iter, opts, data, sweep
        self.hyper = {name: np.empty(n) for name in sweep.hyper_names}
        self.K, self.M = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        self.seconds, self.tdll_trace = np.empty(n), np.full(n, np.nan)
        self.log_joint = np.empty(n) if opts.model == "IDEPM" else None
        self.log_joint_seconds = 0.0        # the wall time of the log joint's evaluations (not in seconds)
        self.move_stats = np.zeros((n, 4), dtype=np.int64)  # splits proposed, accepted, merges ...
        self.samples, self.keep_its, self.prob_sum = [], None, None
        if data.test is not None:
            # evaluate the test entries in row-major order (each row of U lambda stays in cache,
            # the rows of V are visited in increasing order); results return in the caller's order
            k_test = sweep.k_test
            self.order = np.lexsort((k_test[1], k_test[0]))
            self.t_rows, self.t_cols, self.t_labels = (a[self.order] for a in k_test)
            self.prob_sum = np.zeros(self.order.shape[0])
            self.zeros = common.split_test(self.t_rows, self.t_cols, self.t_labels, sweep.n_rows)

    def record(self, it, M, K, params, elapsed):
        o = self.o
        self.M[it], self.K[it], self.seconds[it] = M, K, elapsed
        if self.log_joint is not None:      # timed apart from the sweep (settings["log_joint_seconds"])
            t0 = time.perf_counter()
            self.log_joint[it] = self.sweep.log_joint()
            self.log_joint_seconds += time.perf_counter() - t0
        for name, v in zip(self.hyper, self.sweep.st["h"]):
            self.hyper[name][it] = v
        window = it >= o.n_iter - o.n_avg
        if window and params is not None:
            self._keep(it, params)
        if self.prob_sum is not None:
            if window:                      # the posterior mean needs every test entry's rate
                rates = common.link_rates(self.t_rows, self.t_cols, *params)
                self.tdll_trace[it] = common.tdll_from_rates(rates, self.t_labels)
                self.prob_sum += -np.expm1(-rates)
            else:                           # the trace only needs sums: zeros enter through row sums
                self.tdll_trace[it] = common.test_loglik_sum(*self.zeros, *params) / self.t_rows.shape[0]

    def _keep(self, it, params):
        o = self.o
        if self.keep_its is None:           # at the window's first sample: how many fit in memory
            per = 8 * sum(a.size for a in params)
            auto = o.keep_samples == "auto"
            n_keep = o.n_avg if auto else (o.keep_samples or
                                           (o.n_avg if o.model != "IDEPM" or self.d.test is not None else 1))
            if o.keep_samples is None or auto:
                n_keep = max(1, min(n_keep, KEEP_BYTES // max(per, 1)))
            self.keep_its = set((o.n_iter - 1 - np.round(np.linspace(0, o.n_avg - 1, n_keep))).astype(int)
                                .tolist()) if n_keep > 1 else {o.n_iter - 1}
        if it in self.keep_its:
            self.samples.append(tuple(np.array(a, copy=True) for a in params))

    def scores(self):
        """(test_prob, tdll, tdauc_pr, auc_roc) at the test entries (per pair if symmetric)."""
        if self.prob_sum is None:
            return None, float("nan"), float("nan"), float("nan")
        test_prob = np.empty_like(self.prob_sum)
        test_prob[self.order] = self.prob_sum / self.o.n_avg
        labels = self.d.test[2]
        if self.d.pairs is not None:        # undirected: a pair's prediction is the mean of its directions
            n_pairs, partner = self.d.pairs
            p = test_prob[:n_pairs].copy()
            has = partner >= 0
            p[has] = 0.5 * (p[has] + test_prob[partner[has]])
            test_prob, labels = p, labels[:n_pairs]
        roc = auc_roc(labels, test_prob) if 0 < labels.sum() < labels.size else float("nan")
        return test_prob, bernoulli_tdll(labels, test_prob), tdauc_pr(labels, test_prob), roc

    def result(self, rng, start) -> FitResult:
        o, d, st = self.o, self.d, self.sweep.st
        self.sweep.finish()
        st["rows"], st["cols"] = d.rows, d.cols
        st["rng"] = rng.bit_generator.state
        test_prob, tdll, auc, roc = self.scores()
        settings = dict(model=o.model, T=o.T, n_iter=o.n_iter, n_avg=o.n_avg, seed=o.seed, K_init=start["K_init"],
                        a_update=o.a_update, m_step=o.m_step,
                        split_merge=o.split_merge if o.model in ("IDEPM", "DEPM") else None, e0=o.e0, f0=o.f0,
                        start_iter=start["start_iter"], start_seconds=start["start_seconds"],
                        data_digest=d.digest, shape=(d.I, d.J), nnz=int(d.rows.size),
                        n_test=0 if d.test is None else int(d.test[0].size if d.pairs is None else d.pairs[0]),
                        n_masked=int(d.mrows.size), symmetric=o.symmetric, init=start["init"],
                        K_start=start["K_start"], init_seconds=start["init_seconds"],
                        hold=None if o.hold is None else list(o.hold))
        if o.model == "IDEPM":              # the log joint's wall time, the chain's whole (as seconds[-1])
            settings["log_joint_seconds"] = start["log_joint_seconds"] + self.log_joint_seconds
        if o.rank is not None:              # fit(rank=...): the data's start's rule for its atoms
            settings["rank"] = o.rank
        result = FitResult(model=o.model, T=o.T, K=self.K, seconds=self.seconds, tdll_trace=self.tdll_trace,
                           test_prob=test_prob, tdll=tdll, tdauc_pr=auc, hyper=self.hyper, M=self.M, state=st,
                           settings=settings, move_stats=self.move_stats, samples=self.samples, tdauc_roc=roc,
                           log_joint=self.log_joint)
        # flat atoms, dust, in-sample predictions at chance: warn (epm_lib.diagnose; no chain draw)
        result.diagnosis = diagnose.warn_if_degenerate(result, d.rows, d.cols, (d.I, d.J), (d.mrows, d.mcols),
                                                       st.get("row_ids"), st.get("col_ids"), stacklevel=4)
        return result


# ----------------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------------

def fit(X, model, *, T=None, n_iter=600, n_avg=100, seed=0, test=None, K_init=None,
        a_update=None, progress=False, e0=0.01, f0=0.01, m_step=None, split_merge=None, resume=None,
        mask=None, keep_samples=None, symmetric=False, init=None, hold=None, rank=None):
    """Run a Gibbs sampler of the EPM, CEPM, DEPM (truncated at ``T``) or IDEPM on a binary matrix.

    Parameters
    ----------
    X : (I, J) binary numpy array or scipy.sparse matrix, the training matrix.
    model : "EPM", "CEPM", "DEPM" or "IDEPM".
    T : truncation level (int >= 1) for the truncated models; must be None for the IDEPM.
    n_iter, n_avg : Gibbs iterations, and how many final ones are averaged (Sec. 5: 600 and 100).
    seed : seed of the ``numpy.random.Generator`` that drives the whole run: a non-negative int (or
        a list of them), or a ``numpy.random.SeedSequence`` or ``Generator``, turned into an int that
        the result's settings record (``fit_options.as_seed``; a Generator is advanced by one draw).
        The IDEPM draws the parameters it needs only for predictions from a child stream,
        ``rng.spawn(1)[0]``. The same seed gives bit-identical results.
    test : None or (rows, cols, labels): held-out entries, which must be zeros of X. Alone, they
        are observed zeros in training (the paper's protocol); to leave them out of the
        likelihood (the usual link-prediction protocol) also put them in ``mask``.
    keep_samples : how many samples (phi or U, psi or V, lambda) of the last ``n_avg`` iterations
        to keep for ``FitResult.predict`` (evenly spaced, the last one always). Default: all
        ``n_avg`` when they fit in ``KEEP_BYTES`` (else as many as fit); for the IDEPM without a
        test set only the final sample (its parameters are drawn only where needed; an explicit
        number, or "auto", draws them in the window, from the prediction stream, so the chain is
        the same). "auto": all ``n_avg`` as far as ``KEEP_BYTES`` allows, for every model (the
        IDEPM's posterior mean without a test set; ``EdgePartitionModel`` passes it).
    symmetric : True for an undirected network: X must be square and symmetric. The model is
        the bipartite one fitted to both directions of every link; a test pair (i, j) counts once,
        with the prediction (p_ij + p_ji)/2 (``test_prob``, ``tdll``, ``tdauc_pr`` and
        ``predict`` are per pair; the per-iteration ``tdll_trace`` averages both directions); a
        masked pair is masked in both directions (the mask is symmetrised).
    mask : None or a boolean (I, J) matrix, dense or scipy.sparse: True marks a missing entry,
        left out of the likelihood exactly (its latent count is drawn from the Poisson of
        Eq. (1) each sweep, data augmentation; cost O(missing entries x atoms) per sweep). A
        one of X under the mask is an error.
    init : the start. "data": a Poisson (KL) NMF of X mapped into the model's state, its number
        of atoms chosen from the singular values of X (``epm_lib.starts``); ``K_init`` must then
        not be given. "paper" (EPM, CEPM, DEPM): the gamma process's mass shared by the first
        ``K_init`` atoms, all T by default (Sec. 5's start); "random" (IDEPM): customers seated at
        random over ``K_init`` atoms. "scaled" (EPM, CEPM, DEPM): the paper's start with lambda
        scaled so that the model expects as many counts as X has ones (``init_state``); with ``K_init``
        atoms like "paper". None (the default): "data", unless ``K_init`` is given or X
        is too small to factorise (fewer than ``starts.MIN_ONES`` ones, or a single row or
        column): then "paper" ("random"). An array of group labels, one integer per row of X
        (undirected networks: per node), e.g. known communities: the chain seated at those groups
        (``starts.labels_start``: one-hot memberships of the rows, mapped into the state as the
        data's start maps its factorisation; at most T groups; ``K_init`` must not be given;
        recorded as "labels"). Recorded in ``settings["init"]``
        (``settings["K_start"]``: atoms with mass at the start, ``settings["init_seconds"]``: the
        start's wall time, not in ``seconds``).
    hold : None, or (sweeps, cap): a burn-in hold. For the chain's first ``sweeps`` iterations,
        after each sweep the shape parameters alpha1, alpha2 (DEPM, IDEPM) or a1, a2 (EPM, CEPM)
        are capped at ``cap`` (keeps atoms sharp while the chain finds the data's structure; ``cap`` at
        least ``fit_options.HOLD_CAP_MIN`` = 0.001, from which the chain recovers);
        afterwards the exact kernel runs untouched. Measured (``benchmarks/bench_starts.py --part
        holds``, ``chapters/29b_checking_starts``): (300, 0.1) rescues the IDEPM's random start on
        every network tried; from the truncated models' start on all T atoms it also freezes
        surplus atoms as fragments (toy90), so no schedule suits every network there. The hold
        must end before the last ``n_avg`` iterations (the averaged samples come from the exact
        kernel). Counted from the chain's
        first iteration (a resumed chain continues the count). Recorded in ``settings["hold"]``.
    rank : None, "spectral", "heldout" or an integer: how the data's start (``init="data"``; given
        with ``init=None`` it chooses that start) counts its atoms. None and "spectral": singular
        values above the noise edge, at least ``starts.K_FLOOR`` = 4 (the default). "heldout"
        (``epm_lib.heldout_rank``): the KL NMF's held-out likelihood at the spectral count and its
        doublings up to 40, the largest K within a standard error of the best: for sparse networks of
        many small groups, all below the noise edge, where the spectral rule gives the floor (40 groups
        of 6 nodes, p_in 0.5, p_out 0.005, a fifth of the pairs masked: 4 atoms, the held-out rule
        16-40; ``benchmarks/bench_small_groups.py``). It costs a few factorisations (1-4 s on 250
        nodes; nothing where the spectral count reaches 40, as on MovieLens). An integer:
        that many atoms (capped at T, the ones and min(I, J)). Recorded in ``settings["rank"]``
        when given.
    K_init : number of atoms the chain starts on. IDEPM: the customers start spread over
        ``K_init`` atoms (default ``DEFAULT_K_INIT`` = 100, capped at the number of ones).
        EPM, CEPM, DEPM: 1 <= K_init <= T; the gamma process's mass starts on the first
        K_init atoms (``init_state``); default T, the paper's start (all atoms equal). Giving
        ``K_init`` chooses that start ("paper", "random") when ``init`` is None; with
        ``init="scaled"`` it counts that start's atoms too.
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

    Wall times: ``FitResult.seconds`` is the cumulative time of the sweeps (for the IDEPM with the
    draw of the parameters a prediction needs); the start (``settings["init_seconds"]``), the test
    scores and the IDEPM's log joint after every sweep (``FitResult.log_joint``, timed apart:
    ``settings["log_joint_seconds"]``, the chain's total, a resumed chain's included) are not in it.
    """
    if resume is not None:
        resume = _resume_clashes(resume, seed, K_init, hold)
    opts = check_options(model, T=T, n_iter=n_iter, n_avg=n_avg, seed=seed, K_init=K_init, a_update=a_update,
                         e0=e0, f0=f0, m_step=m_step, split_merge=split_merge, resume=resume,
                         keep_samples=keep_samples, symmetric=symmetric, init=init, hold=hold, rank=rank)
    data = prepare(X, test, mask, opts.symmetric, opts.model, opts.m_step)
    st, rng, resume, start = _start(opts, data, resume)
    sweep = _SWEEPS[opts.model](opts, data, st, rng, resume)
    rec = _Recorder(opts, data, sweep)
    elapsed = start["start_seconds"]
    iterator = range(opts.n_iter)
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(iterator, desc=opts.label, unit="it")
    # Ctrl-C: counted during the sweeps and delivered between them (epm_lib.interrupt), so
    # that no numba call sees a half-unboxed argument and no state is left half-updated
    with deferred_sigint() as guard:
        for it in iterator:
            t0 = time.perf_counter()
            M_it, K_it, params = sweep.sweep(it, rec.move_stats[it])
            if opts.hold is not None and start["start_iter"] + it < opts.hold[0]:
                sweep.hold()                # burn-in hold: cap the shapes
            elapsed += time.perf_counter() - t0
            rec.record(it, M_it, K_it, params, elapsed)
            guard.check()
    return rec.result(rng, start)
