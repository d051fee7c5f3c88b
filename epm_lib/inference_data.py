"""A ``FitResult``, or several chains of one model, as an ``arviz.InferenceData``
(``FitResult.to_inference_data``, ``chains.to_inference_data``, ``ChainSet.idata``): the traces as
``posterior`` and ``sample_stats`` (with their warmup), and the Bernoulli log likelihood of each
held-out or training pair under each kept sample (``log_likelihood``, ``observed_data``), for
ArviZ's ``loo`` and ``compare``.
"""
from __future__ import annotations

import numpy as np

from .fit_data import mask_entries
from .models import common
from .result_checks import _samples_problem, _to_compact

__all__ = ["MAX_LOGLIK_ENTRIES"]


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
