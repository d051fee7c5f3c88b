"""``epm_lib.fit_options``: the options of ``fit``, which model has which, and their checks.

One table (``MODEL_OPTIONS``) says which options exist only for some models; ``check_options``
applies it and the checks every model shares, and returns the options normalised (defaults
filled in) as an ``Options``. An option a model does not use is an error, never silently
ignored. The data side (the matrix, test set, mask) is ``epm_lib.fit_data``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from . import starts
from .checks import check_bool  # noqa: F401 (re-exported: fit_options.check_bool)

__all__ = ["MODELS", "DEFAULT_K_INIT", "DEFAULT_SPLIT_MERGE", "HOLD_CAP_MIN", "KEEP_BYTES", "MODEL_OPTIONS",
           "Options", "check_options", "check_bool", "check_hold_window"]

MODELS = ("EPM", "CEPM", "DEPM", "IDEPM")
#: IDEPM start: customers spread at random over this many atoms (capped at the number of ones).
DEFAULT_K_INIT = 100
#: memory for the samples kept for FitResult.predict when keep_samples is not given
KEEP_BYTES = 64 * 2 ** 20
#: split-merge proposals per iteration of the IDEPM and DEPM (``fit(split_merge=...)``); 0 is the
#: paper's plain Gibbs sampler, still the default while the book's chapters show its protocol
DEFAULT_SPLIT_MERGE = 0
#: smallest cap of a burn-in hold (``fit(hold=(sweeps, cap))``). The chapters and benchmarks hold at
#: 0.03 to 1; below 1e-3 the shape parameters leave the hold so small that the chain does not recover
#: within a run (an IDEPM held at 1e-4 still has alpha near 5e-5 forty sweeps later, at 1e-300 near
#: 4e-261), and at 1e-200 the IDEPM's kernel divides by zero
HOLD_CAP_MIN = 1e-3


def _exact_or_paper(name, v):
    if v not in ("exact", "paper"):
        raise ValueError(f"{name} must be 'exact' or 'paper', got {v!r}")
    return v


#: options that only some models have: name -> (the models, how they are named in an error,
#: what the option is for them, what the others lack, the default, its check, the value for
#: the others)
MODEL_OPTIONS = {
    "a_update": (("EPM", "CEPM"), "EPM and CEPM", "their a1, a2 updates", "has no such update",
                 "exact", _exact_or_paper, None),
    "m_step": (("IDEPM",), "IDEPM", "its collapsed m-step",
               "draws its latent counts given its parameters", "exact", _exact_or_paper, None),
    "split_merge": (("IDEPM", "DEPM"), "IDEPM and DEPM", "moves on their collapsed seating", "has none",
                    DEFAULT_SPLIT_MERGE, lambda name, v: _check_int(name, v, 0), 0),
}


@dataclass
class Options:
    """``fit``'s options, checked and with their defaults filled in (``check_options``)."""
    model: str
    T: int | None
    K_init: int | None
    n_iter: int
    n_avg: int
    keep_samples: int | str | None      # None, "auto" or a number (fit's keep_samples)
    e0: float
    f0: float
    seed: object
    a_update: str | None
    m_step: str | None
    split_merge: int
    init: object             # None, a name of starts.INITS or starts.Labels
    hold: tuple | None
    symmetric: bool
    rank: object = None      # None, or the data's start's rank rule (heldout_rank.check_rank)

    @property
    def label(self) -> str:
        """E.g. "DEPM-128" or "IDEPM" (progress bars)."""
        return self.model + (f"-{self.T}" if self.T else "")


def check_options(model, *, T, n_iter, n_avg, seed, K_init, a_update, e0, f0, m_step, split_merge,
                  resume, keep_samples, symmetric, init, hold, rank=None) -> Options:
    """Check ``fit``'s options (not the data) and fill in the defaults; ``ValueError`` names the
    option and what is wrong."""
    if not isinstance(model, str) or model.upper() not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    model = model.upper()
    given = dict(a_update=a_update, m_step=m_step, split_merge=split_merge)
    for name, (owners, named, what, lacks, default, check, other) in MODEL_OPTIONS.items():
        if model in owners:
            given[name] = default if given[name] is None else check(name, given[name])
        elif given[name] is not None:
            raise ValueError(f"{name} exists only for the {named} ({what}); the {model} {lacks} "
                             f"(got {name}={given[name]!r})")
        else:
            given[name] = other
    if given["split_merge"] and model == "IDEPM" and given["m_step"] == "paper":
        raise ValueError("split_merge moves need the exact m-step (m_step='exact'): the paper's "
                         "m-step is not a valid kernel of Theorem 4's posterior")
    if init is not None and not isinstance(init, (str, starts.Labels)) and np.ndim(init) >= 1:
        init = starts.check_labels(init)    # group labels of the rows: the chain seated at them
    elif init is not None and not isinstance(init, starts.Labels) and (not isinstance(init, str)
                                                                      or init not in starts.INITS[model]):
        raise ValueError(f"unknown init {init!r} for the {model}; choose None (the data's start where X "
                         f"allows one) or one of {', '.join(map(repr, starts.INITS[model]))}, or give "
                         f"an array of group labels, one per row of X")
    if isinstance(init, starts.Labels) and K_init is not None:
        raise ValueError("init=<group labels> seats the chain at the labels' groups: K_init must not be given")
    if rank is not None:                    # the data's start's number of atoms (epm_lib.heldout_rank)
        rank = starts.check_rank(rank)
        if resume is not None:
            raise ValueError(f"resume continues a chain from its state: rank must not be given (got rank={rank!r})")
        if K_init is not None:
            raise ValueError(f"rank chooses the number of atoms of the data's start: K_init must not be given with "
                             f"it (K_init is the paper's start's; got K_init={K_init!r}, rank={rank!r})")
        if init is None:
            init = "data"
        if init != "data":
            raise ValueError(f"rank chooses the number of atoms of the data's start: it needs init='data' (or "
                             f"init=None), got init={init if isinstance(init, str) else 'labels'!r}")
    if init is None and K_init is not None and resume is None:   # K_init: the paper's (random) start
        init = starts.INITS[model][0]
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
    if init == "data" or isinstance(init, starts.Labels):
        K_init = None
    n_iter = _check_int("n_iter", n_iter, 1)
    n_avg = _check_int("n_avg", n_avg, 1)
    if isinstance(keep_samples, str) and keep_samples == "auto":
        pass                                # all n_avg as far as KEEP_BYTES allows, the IDEPM's too
    elif keep_samples is not None:
        if isinstance(keep_samples, str):
            raise ValueError(f"keep_samples must be None, 'auto' or a positive integer, got {keep_samples!r}")
        keep_samples = min(_check_int("keep_samples", keep_samples, 1), n_avg)
    if n_avg > n_iter:
        raise ValueError(f"n_avg = {n_avg} exceeds n_iter = {n_iter}")
    e0, f0 = _check_pos("e0", e0), _check_pos("f0", f0)
    seed = _check_seed(seed)
    symmetric = check_bool("symmetric", symmetric)
    return Options(model=model, T=T, K_init=K_init, n_iter=n_iter, n_avg=n_avg, keep_samples=keep_samples,
                   e0=e0, f0=f0, seed=seed, init=init, hold=_check_hold(hold, model), symmetric=symmetric,
                   rank=rank, **given)


def _check_hold(hold, model):
    """``fit(hold=...)``: None or (sweeps >= 1, cap >= ``HOLD_CAP_MIN``, finite) -> a tuple (int, float)."""
    if hold is None:
        return None
    names = "a1, a2" if model in ("EPM", "CEPM") else "alpha1, alpha2"
    if not isinstance(hold, (tuple, list)) or len(hold) != 2:
        raise ValueError(f"hold must be None or a pair (sweeps, cap): cap {names} at cap for the first "
                         f"sweeps iterations, e.g. hold=(300, 0.1); got {hold!r}")
    sweeps, cap = _check_int("hold's sweeps", hold[0], 1), hold[1]
    if isinstance(cap, bool) or not isinstance(cap, Real) or not math.isfinite(cap) or cap < HOLD_CAP_MIN:
        raise ValueError(f"hold's cap must be a number >= {HOLD_CAP_MIN:g} (the value {names} are held at; "
                         f"0.1 is the measured one, chapter 29b), got {cap!r}: below {HOLD_CAP_MIN:g} the "
                         f"shape parameters leave the hold too small to recover during the run")
    return sweeps, float(cap)


def check_hold_window(hold, n_iter, n_avg, start_iter=0):
    """``ValueError`` when a burn-in ``hold`` (checked, or None) would still cap the shape parameters
    in the last ``n_avg`` of the iterations ``start_iter .. start_iter + n_iter - 1``: the averaged
    samples must come from the exact kernel."""
    if hold is not None and start_iter + n_iter - n_avg < hold[0]:
        raise ValueError(f"hold = {hold}: its {hold[0]} sweeps reach into the last n_avg = {n_avg} "
                         f"iterations (iterations {start_iter}..{start_iter + n_iter - 1}); "
                         f"the averaged samples must come from the exact kernel: hold fewer sweeps or run longer")




def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, Integral) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def as_seed(seed):
    """``fit``'s seed from what numpy accepts as one (issue 30, item 5): a non-negative integer, or a
    non-empty list of them, as is; a ``numpy.random.SeedSequence`` as its first 64-bit word
    (``generate_state(1, dtype=uint64)[0]``); a ``numpy.random.Generator`` as one draw from
    [0, 2**63), which advances it. The result is an integer (or list) that a record stores and that
    reproduces the chain: ``fit(X, m, seed=SeedSequence(5))`` is ``fit(X, m, seed=as_seed(SeedSequence(5)))``.
    ``ValueError`` naming what is allowed otherwise."""
    if isinstance(seed, Integral) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    if isinstance(seed, (list, tuple)) and len(seed) > 0 and all(
            isinstance(v, Integral) and not isinstance(v, bool) and v >= 0 for v in seed):
        return [int(v) for v in seed]
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, dtype=np.uint64)[0])
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2 ** 63))
    raise ValueError(f"seed must be a non-negative integer (or a list of them), a numpy.random.SeedSequence "
                     f"or a numpy.random.Generator, got {seed!r}")


def _check_seed(seed):
    """A seed for ``numpy.random.default_rng``, as :func:`as_seed` makes it."""
    return as_seed(seed)


def _check_pos(name, v):
    if isinstance(v, bool) or not isinstance(v, Real) or not (v > 0) or not math.isfinite(v):
        raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)
