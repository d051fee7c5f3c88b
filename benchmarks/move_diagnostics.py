#!/usr/bin/env python
"""Why the split-merge moves rarely fire on MovieLens100K: the acceptance ratio taken apart.

Usage::

    EPM_DATA_DIR=/path/to/data python benchmarks/move_diagnostics.py [--n-iter 300]
        [--n-proposals 200] [--n-scans 5] [--seed 0] [--fold 0]
        [--out results/k_traces/move_diagnostics_movielens100k.json]

MovieLens100K with fold 0 of the paper's ten folds held out (as ``benchmarks/k_traces.py``). Two
IDEPM chains with ``split_merge=20`` (the book's setting), one from ``K_init=1``, one from
``K_init=100``, run ``--n-iter`` sweeps each (seed ``--seed``). From the final state of each,
``epm_lib.models.moves.proposal_trace`` runs ``--n-proposals`` proposals per allocation unit
(single customers, row blocks, column blocks; ``--n-scans`` restricted Gibbs scans each), once
with the chain's own hyperparameters alpha1, alpha2 and once with the other chain's (gamma0
always the chain's own), and records per case: splits and merges proposed and accepted, block
merges refused because the two atoms share a row (column), and the 10/50/90 percentiles of
ln pi(S1) pi(S2)/pi(S1 u S2) (how much the split state beats the merged one under the exact
target) and of ln q (the probability of proposing the split, or of replaying it for a merge),
separately for split and merge proposals. Per chain also: K, M (customers), alpha1, alpha2,
gamma0, and the TDLL (posterior mean over the last 100 sweeps).

Read by ``chapters/14c_idepm_movielens`` (which needs only this file, not MovieLens). Cost: about
4 CPU minutes. Fails loudly (data or checksum errors, non-finite traces): no file is written.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib.experiments import DataSpec, cv_fold, split  # noqa: E402
from epm_lib.models import idepm, moves  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from k_traces import git_commit, rounded, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "k_traces" / "move_diagnostics_movielens100k.json"
STARTS = (1, 100)


def percentiles(x):
    """10/50/90 percentiles of the finite values (None when there are none), rounded."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return None if x.size == 0 else [rounded(v, 1) for v in np.percentile(x, [10, 50, 90])]


def summarise(t):
    """One case of proposal_trace: counts and percentiles."""
    st = t["stats"]
    sp, mg = t["split"], ~t["split"]
    finite = np.isfinite(t["log_ratio"])
    return dict(
        splits_proposed=int(st[moves.SPLIT_PROPOSED]), splits_accepted=int(st[moves.SPLIT_ACCEPTED]),
        merges_proposed=int(st[moves.MERGE_PROPOSED]), merges_accepted=int(st[moves.MERGE_ACCEPTED]),
        merges_refused_shared_block=int(np.count_nonzero(mg & (t["log_ratio"] == -np.inf))),
        splits_impossible=int(np.count_nonzero(sp & np.isnan(t["log_ratio"]))),
        split_log_target=percentiles(t["log_target"][sp & finite]),
        split_log_q=percentiles(t["log_q"][sp & finite]),
        split_better_than_merged=int(np.count_nonzero(sp & finite & (t["log_target"] > 0))),
        merge_log_target=percentiles(t["log_target"][mg & finite]),
        merge_log_q=percentiles(t["log_q"][mg & finite]),
        median_size=rounded(np.median(t["size"]), 0), K_after=t["K"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-iter", type=int, default=300, help="sweeps of each chain before the diagnosis")
    p.add_argument("--n-proposals", type=int, default=200, help="proposals per case")
    p.add_argument("--n-scans", type=int, default=moves.DEFAULT_N_SCANS, help="restricted Gibbs scans")
    p.add_argument("--split-merge", type=int, default=20, help="proposals per sweep of the chains")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fold", type=int, default=0)
    p.add_argument("--data-dir", default=None, help="MovieLens directory (default $EPM_DATA_DIR)")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    a = p.parse_args(argv)
    if a.n_iter < 100 or a.n_proposals < 1 or a.n_scans < 0 or a.split_merge < 1:
        p.error("need n_iter >= 100, n_proposals >= 1, n_scans >= 0, split_merge >= 1")
    spec = DataSpec("movielens100k", data_dir=a.data_dir)
    ds = spec.load()                                  # verified against its recorded fingerprint
    X, test = split(ds.X, cv_fold(ds.shape, a.fold))
    I, J = ds.shape
    started = time.perf_counter()
    fits = {}
    for K0 in STARTS:
        t0 = time.process_time()
        res = epm_lib.fit(X, "IDEPM", K_init=K0, split_merge=a.split_merge, n_iter=a.n_iter,
                          n_avg=100, seed=a.seed, test=test)
        if not np.all(np.isfinite(res.tdll_trace)):
            raise RuntimeError(f"K_init={K0}: non-finite TDLL trace")
        fits[K0] = res
        print(f"K_init={K0}: K {res.K[-1]} after {a.n_iter} sweeps, TDLL {res.tdll:.5f}, "
              f"{time.process_time() - t0:.0f} CPU s", flush=True)
    chains = {}
    for K0, res in fits.items():
        s, h = res.state, res.state["h"]
        rec = dict(K_init=K0, K=int(res.K[-1]), K_mean=rounded(res.K_mean, 2), M=int(res.M[-1]),
                   alpha1=rounded(h[idepm.ALPHA1], 4), alpha2=rounded(h[idepm.ALPHA2], 4),
                   gamma0=rounded(h[idepm.GAMMA0], 4), tdll=rounded(res.tdll, 5), cases={})
        for other in STARTS:
            ho = fits[other].state["h"]
            for unit, name in enumerate(moves.UNIT_NAMES):
                t = moves.proposal_trace(s["rows"], s["cols"], s["offsets"], s["z"], I, J,
                                         ho[idepm.ALPHA1], ho[idepm.ALPHA2], h[idepm.GAMMA0],
                                         n_proposals=a.n_proposals, n_scans=a.n_scans, units=unit,
                                         seed=a.seed)
                key = f"alphas_of_{other}/{name}"
                rec["cases"][key] = summarise(t)
                c = rec["cases"][key]
                print(f"state {K0}, {key}: splits {c['splits_accepted']}/{c['splits_proposed']} "
                      f"ln pi {c['split_log_target']} ln q {c['split_log_q']}; merges "
                      f"{c['merges_accepted']}/{c['merges_proposed']} (shared block "
                      f"{c['merges_refused_shared_block']}) ln pi {c['merge_log_target']} "
                      f"ln q {c['merge_log_q']}", flush=True)
        chains[str(K0)] = rec
    out = dict(dataset="movielens100k", fingerprint=spec.fingerprint(), shape=list(ds.shape),
               fold=a.fold, n_iter=a.n_iter, split_merge=a.split_merge, n_proposals=a.n_proposals,
               n_scans=a.n_scans, seed=a.seed, total_seconds=rounded(time.perf_counter() - started, 0),
               machine=dict(python=platform.python_version(), numpy=np.__version__,
                            epm_lib=epm_lib.__version__, commit=git_commit(),
                            numba_threads=os.environ["NUMBA_NUM_THREADS"]),
               chains=chains)
    path = write_json(a.out, out, indent=1)
    print(f"wrote {path} after {out['total_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
