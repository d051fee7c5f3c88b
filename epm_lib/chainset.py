"""``ChainSet`` -- the chains of one model on one data set -- and what ArviZ says of them: their
traces as an ``InferenceData``, the rank-normalised split-R-hat and the bulk and tail ESS
(``diagnostics``), and whether the chains agree (``agree``).

``epm_lib.chains`` runs the chains (``fit_chains``, ``run_until_agree``) and re-exports these
names; they live here so that a set of chains can be read, diagnosed and combined without the
machinery that runs them.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .fit import FitResult
from .result import _inference_data, _traces

__all__ = ["ChainSet", "to_inference_data", "diagnostics", "agree"]


def _arviz():
    with warnings.catch_warnings():         # arviz 0.23 announces its refactor on import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


@dataclass
class ChainSet:
    """What ``fit_chains`` returns: the runs, one per chain, and their traces for ArviZ."""
    results: list            # FitResult per chain
    starts: list             # K_init of each chain, or "data"
    seeds: list              # seed of each chain
    mask: object = None      # fit's mask (missing entries), for the in-sample log likelihood
    test: object = None      # fit's test set (rows, cols, labels), for the pointwise log likelihood

    def table(self):
        """One row per chain (a ``pandas.DataFrame``): its start, seed, atoms at the start, mean K
        and M over the averaged iterations, the in-sample log likelihood per entry
        (``diagnose.in_sample_loglik``), the held-out TDLL, AUC-PR and AUC-ROC (with a test set),
        and what ``diagnose.check`` found degenerate; chains of several models (a ChainSet built by
        hand) get a first column ``model`` (e.g. "DEPM-8"). Where chains disagree, compare ``tdll``
        (held out) or ``loglik`` (in sample): :meth:`best` picks by them."""
        import pandas as pd
        from .diagnose import in_sample_loglik
        rows = []
        labels = [r.model + (f"-{r.T}" if r.T else "") for r in self.results]
        mixed = len(set(labels)) > 1            # chains of several models: each row says its own
        for label, start, seed, r in zip(labels, self.starts, self.seeds, self.results):
            n_avg = r.settings["n_avg"]
            rows.append(dict(**(dict(model=label) if mixed else {}),
                             start=start, seed=repr(seed), K_start=r.settings.get("K_start"),
                             K=float(r.K[-n_avg:].mean()), M=float(r.M[-n_avg:].mean()),
                             loglik=in_sample_loglik(r, self.mask), tdll=r.tdll, tdauc_pr=r.tdauc_pr,
                             tdauc_roc=r.tdauc_roc, degenerate="; ".join(r.diagnosis)))
        return pd.DataFrame(rows)

    def best(self, by=None) -> int:
        """The index of the chain that predicts best: the highest held-out TDLL when the chains had
        a test set (``by="tdll"``), else the highest in-sample log likelihood (``by="loglik"``)."""
        if by is not None and by not in ("tdll", "loglik", "tdauc_pr"):
            raise ValueError(f"by must be 'tdll', 'loglik' or 'tdauc_pr', got {by!r}")
        self._check_one_data("best")
        t = self.table()
        by = by or ("tdll" if np.all(np.isfinite(t["tdll"])) else "loglik")
        v = t[by].to_numpy(dtype=float)
        if not np.any(np.isfinite(v)):
            raise ValueError(f"no chain has a finite {by!r}" + (": the chains were fitted without a test set "
                             "(fit_chains(..., test=...)); use by='loglik' (in sample)" if by != "loglik" else ""))
        return int(np.nanargmax(v))

    def stacking_weights(self, rows, cols, labels) -> np.ndarray:
        """Stacking weights of the chains (Yao, Vehtari & Gelman 2022, for chains that do not mix):
        the weights on the simplex that maximise the log predictive density of the 0/1 ``labels``
        at validation entries (rows, cols) under the mixture of the chains' predictions
        (``epm_lib.stacking``). The validation entries must be held out of every chain (in its
        ``test`` or ``mask``) and be other than the entries the stacked prediction is scored on."""
        from .stacking import stacking_weights
        self._check_one_data("stacking_weights")
        probs = np.column_stack([r.predict(rows, cols) for r in self.results])
        return stacking_weights(probs, labels)

    def predict(self, rows, cols, weights=None) -> np.ndarray:
        """The chains' predictions at (rows, cols) mixed with ``weights`` (default: equal): a sequence
        of one non-negative number per chain, summing to 1 (``stacking.check_weights``)."""
        from .stacking import check_weights
        n = len(self.results)
        w = np.full(n, 1.0 / n) if weights is None else check_weights(weights, n)
        self._check_one_data("predict")
        return np.column_stack([r.predict(rows, cols) for r in self.results]) @ w

    def _check_one_data(self, what):
        """``ValueError`` unless every chain was fitted to one data set: the same training matrix,
        missing entries and test set (``settings["data_digest"]``), shape and ``symmetric``. Chains of
        several models of one data set may be compared and mixed; chains of different data may not
        (their likelihoods and predictions are of different matrices)."""
        def key(r):
            s = r.settings
            return s.get("data_digest"), tuple(s.get("shape") or ()), bool(s.get("symmetric"))
        first = key(self.results[0])
        for c, r in enumerate(self.results[1:], 1):
            k = key(r)
            if k != first and None not in (k[0], first[0]):
                raise ValueError(
                    f"chains 0 and {c} were fitted to different data (the training matrix, its missing "
                    f"entries or the test set differ: data digests {first[0]} and {k[0]}, shapes {first[1]} "
                    f"and {k[1]}, symmetric {first[2]} and {k[2]}): {what} compares or mixes the chains of "
                    f"one data set; put the chains of each data set in one ChainSet (fit_chains and "
                    f"run_until_agree build it so)")

    @property
    def idata(self):
        """The chains as an ``arviz.InferenceData``: :func:`to_inference_data` of the chains with
        their own test set and mask and ``draws="all"`` (``posterior``: the whole traces, which
        :func:`diagnostics` reads); ``observed_data`` and ``log_likelihood`` are left out, not
        refused, when the chains cannot give them (no test set and more than
        ``result.MAX_LOGLIK_ENTRIES`` entries, a single kept sample per chain, ...; the
        InferenceData's attribute ``log_likelihood`` says why). For ``az.loo`` / ``az.compare`` of
        several chains prefer :meth:`to_inference_data` (posterior draws = the scored samples)."""
        return to_inference_data(self.results, self.test, mask=self.mask, draws="all")

    def to_inference_data(self, test=None, *, mask=None, draws="kept"):
        """:func:`to_inference_data` of the chains: by default at the kept samples (``draws="kept"``:
        ``posterior`` at the iterations the ``log_likelihood`` scores, the burn-in in
        ``warmup_posterior``), for ``az.loo`` / ``az.compare``; ``test`` and ``mask`` default to the
        chains' own (those given to ``fit_chains`` / ``run_until_agree``)."""
        return to_inference_data(self.results, self.test if test is None else test,
                                 mask=self.mask if mask is None else mask, draws=draws)

    def diagnostics(self, burn_in=0.5, var_names=None) -> dict:
        """``diagnostics(self.idata, burn_in, var_names)`` (the traces of every iteration)."""
        return diagnostics(_trace_data(self.results), burn_in=burn_in, var_names=var_names)

    @property
    def cpu_seconds(self) -> np.ndarray:
        """Sampler seconds of each chain (``FitResult.seconds[-1]``; one core each)."""
        return np.array([r.seconds[-1] for r in self.results])


def _check_chains(results):
    if not results:
        raise ValueError("no chains given")
    if any(not isinstance(r, FitResult) for r in results):
        raise ValueError("results must be FitResult objects (from epm_lib.fit)")
    n = {r.K.shape[0] for r in results}
    models = {r.model for r in results}
    if len(n) != 1 or len(models) != 1:
        raise ValueError(f"chains must have one model and one length, got models {sorted(models)} and "
                         f"lengths {sorted(n)}")


def _trace_data(results):
    """The chains' traces alone (group ``posterior``, every iteration), for :func:`diagnostics`."""
    _check_chains(results)
    return _arviz().from_dict(posterior=_traces(results))


def to_inference_data(results, test=None, *, mask=None, draws="all"):
    """Several ``FitResult`` of the same model and length as one ``arviz.InferenceData``, chain
    by chain: ``FitResult.to_inference_data`` stacked along ``chain`` (see there for the groups,
    ``test`` and ``mask``); every chain must keep the same iterations (the same ``n_avg`` and
    number of kept samples), else ``ValueError`` naming them.

    ``posterior`` variables (dimensions ``chain`` x ``draw``): ``K`` (active atoms), ``M``
    (customers), ``tdll`` (test-data log likelihood of each iteration's sample; only with a test
    set), ``log_joint`` (the IDEPM's ln P(m, [z] | h) + ln p(h), ``FitResult.log_joint``; only when
    every chain has it) and every hyperparameter (``gamma0``, ``c0``, the alpha's or the a's and
    b's). ``draws="all"`` (the default, what :func:`diagnostics` reads, as before the other groups
    existed; ``ChainSet.idata``): at every iteration, no warmup groups; ``log_likelihood`` at the
    kept samples only (its ``draw`` coordinates are their iterations), so ``az.loo`` takes its
    relative efficiency from the whole traces; ``observed_data`` and ``log_likelihood`` are left
    out (the attribute ``log_likelihood`` says why) when the chains cannot give them, e.g. a
    large X without ``test``. ``draws="kept"``: ``posterior`` and ``sample_stats`` at the kept
    samples, the iterations before the last ``n_avg`` in ``warmup_posterior`` /
    ``warmup_sample_stats``: the layout for ``az.loo`` / ``az.compare``; what it cannot give is a
    ``ValueError``.
    """
    _check_chains(results)
    return _inference_data(results, test, mask, draws, log_likelihood="auto" if draws == "all" else True)


def diagnostics(idata, burn_in=0.5, var_names=None) -> dict:
    """Rank-normalised split-R-hat, bulk and tail ESS of each traced variable (ArviZ).

    ``burn_in``: the fraction (0 <= burn_in < 1) or number of the first draws of every chain
    left out. Returns ``{name: {"rhat": ..., "ess_bulk": ..., "ess_tail": ..., "constant": ...}}``.
    A variable whose kept draws are one and the same value in every chain (e.g. K of a DEPM-2
    that keeps both atoms) has no defined R-hat (a ratio of zero variances); ArviZ returns NaN
    for it, and ``constant`` is True: the chains agree on it exactly. ``constant`` is False
    whenever two kept draws differ, in one chain or between chains.
    """
    az = _arviz()
    post = idata.posterior
    n_draw = post.sizes["draw"]
    if isinstance(burn_in, float) and not isinstance(burn_in, bool):
        if not 0.0 <= burn_in < 1.0:
            raise ValueError(f"burn_in as a fraction must be in [0, 1), got {burn_in}")
        skip = int(math.floor(burn_in * n_draw))
    elif isinstance(burn_in, (int, np.integer)) and not isinstance(burn_in, bool):
        skip = int(burn_in)
        if not 0 <= skip < n_draw - 3:
            raise ValueError(f"burn_in = {skip} leaves fewer than 4 of the {n_draw} draws")
    else:
        raise ValueError(f"burn_in must be a fraction or a number of draws, got {burn_in!r}")
    if n_draw - skip < 4:
        raise ValueError(f"{n_draw - skip} draws after burn-in: R-hat needs at least 4 per chain")
    names = list(post.data_vars) if var_names is None else list(var_names)
    unknown = [v for v in names if v not in post.data_vars]
    if unknown:
        raise ValueError(f"unknown variable(s) {unknown}; traced: {list(post.data_vars)}")
    kept = post[names].isel(draw=slice(skip, None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # constant traces: NaN, see above
        rhat = az.rhat(kept, method="rank")
        bulk = az.ess(kept, method="bulk")
        tail = az.ess(kept, method="tail")
    out = {}
    for v in names:
        a = np.asarray(kept[v].values)
        out[v] = {"rhat": float(rhat[v]), "ess_bulk": float(bulk[v]), "ess_tail": float(tail[v]),
                  "constant": bool(a.size > 0 and np.all(a == a.flat[0]))}
    return out


def agree(d, rhat=1.01) -> bool:
    """Whether one variable's :func:`diagnostics` entry says the chains agree: split-R-hat at most
    ``rhat``, or (R-hat undefined) the same constant value in every chain."""
    r = d["rhat"]
    return bool(d.get("constant", False)) if r is None or not np.isfinite(r) else r <= rhat
