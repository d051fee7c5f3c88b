#!/usr/bin/env python
"""Where the CPU time of one converged-protocol run goes: its sweeps, and everything else.

Usage::

    EPM_DATA_DIR=/path/to/data python benchmarks/bench_run_cost.py [--dataset movielens1m]
        [--model DEPM] [--T 16] [--fold 0] [--sweeps 250] [--json benchmarks/run_cost_movielens1m.json]

Runs one run of ``epm_lib.experiments.run_converged`` (chains from the data's start and from one
atom, ``--starts data data 1 1``, one segment of ``--sweeps`` sweeps; no record is written) under
``cProfile`` in this process, one core, and attributes its CPU seconds (``time.process_time``) to:

- ``sweeps``: the samplers' sweeps (``Chain.sweep`` in ``epm_lib.fit``);
- ``test likelihood``: scoring the held-out entries after every sweep (``Chain.record``), which the
  protocol needs for the TDLL's split-R-hat;
- ``data start``: the data-driven starts of the chains (``epm_lib.starts.data_start``);
- ``stacking``: the stacking weights of the two start groups (``epm_lib.stacking.stacking_weights``);
- ``rest``: loading, splitting, the checks and scores of each fit, the diagnostics.

Chapter 22c prices the protocol on MovieLens1M with it. Profiling adds a little overhead to each
Python call; the kernels are numba code and are not slowed.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

PARTS = {  # (file suffix, function name) -> part
    ("epm_lib/fit.py", "sweep"): "sweeps",
    ("epm_lib/fit.py", "record"): "test likelihood",
    ("epm_lib/starts.py", "data_start"): "data start",
    ("epm_lib/stacking.py", "stacking_weights"): "stacking",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="movielens1m")
    ap.add_argument("--model", default="DEPM")
    ap.add_argument("--T", type=int, default=16)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--sweeps", type=int, default=250)
    ap.add_argument("--json", default=None, help="write the result here")
    a = ap.parse_args(argv)

    from epm_lib.experiments.converged import ConvergedRun, run_converged
    from epm_lib.experiments.runs import DataSpec
    from epm_lib.notebook import versions

    run = ConvergedRun(data=DataSpec(a.dataset), model=a.model, T=None if a.model == "IDEPM" else a.T,
                       fold=a.fold, starts=("data", "data", 1, 1), segment=a.sweeps, max_sweeps=a.sweeps,
                       cap_seconds=None)
    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the 8-sweep warm-up chains are degenerate, and say so
            run_converged(ConvergedRun(data=DataSpec("toy90"), model=a.model, T=run.T, starts=run.starts,
                                       segment=8, max_sweeps=8, cap_seconds=None),
                          results_dir=tmp, checkpoint_dir=tmp, write=False)  # compile the kernels first
        prof = cProfile.Profile()
        t0 = time.process_time()
        prof.enable()
        rec = run_converged(run, results_dir=tmp, checkpoint_dir=tmp, write=False)
        prof.disable()
        total = time.process_time() - t0
    stats = pstats.Stats(prof).stats
    wall = sum(tt for (_, _, _), (_, _, tt, _, _) in stats.items())   # profiled seconds (all calls' own)
    parts = {p: 0.0 for p in PARTS.values()}
    for (file, _, func), (_, _, _, cum, _) in stats.items():
        for (suffix, name), part in PARTS.items():
            if file.endswith(suffix) and func == name:
                parts[part] += cum
    scale = total / wall if wall > 0 else 1.0                          # profiled seconds -> CPU seconds
    out = {"dataset": a.dataset, "model": a.model, "T": run.T, "fold": a.fold, "chains": len(run.starts),
           "sweeps_per_chain": rec["sweeps"], "cpu_seconds": round(total, 1),
           "parts": {p: round(s * scale, 1) for p, s in parts.items()},
           "versions": versions()}
    out["parts"]["rest"] = round(total - sum(out["parts"].values()), 1)
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
