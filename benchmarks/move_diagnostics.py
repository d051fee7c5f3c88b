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

Earlier measurements, made by hand when the moves were written and kept here (they used to close
the docstring of ``epm_lib.models.moves``; this script and chapter 14c measure the same today):

Acceptance in practice (measured when this module was written, one Gibbs sweep then one call
with the defaults per iteration). Enron (149 x 149, 441 ones, M ~ 600, K+ ~ 23): about 20
sequential-allocation proposals per sweep, 2 % of the splits and 0.2-0.3 % of the merges
accepted; K+ wanders between 15 and 35 from every start. MovieLens100K (943 x 1682, M ~ 75 000):
from a 2-atom state splits are taken with s >= 5 (about 1 in 30-50; never with s = 0), but in
states with 11 or 22 atoms none of thousands of proposals was accepted, for any s up to 20: the
log ratios of the best splits are about -10, of the best merges -300 and below (median -1000 and
-3000 or worse). There these moves leave the chain where it is, exactly but uselessly.

Block units in practice (MovieLens100K, measured when they were added; states after 200 Gibbs
sweeps of ``fit`` from 2, 10 and 100 atoms, K+ = 2, 12, 25, M ~ 67 000-76 000; 1000 proposals of
each unit per state, s = 5; s = 0 and 20 alike). A block proposal is nearly deterministic (-ln q
of a block split: median 6-27 nats, against 1300-11 000 for a customer split), and its splits
are far better than a customer split's (ln pi(S1) pi(S2)/pi(S), median -100 to -310 against
-2200 to -13 000). At K+ = 2 column blocks find splits with log ratios up to +1450 (3 of 390
taken; 2 of 521 customer splits), but at K+ = 12 and 25 the best block split found is still 4-22
nats worse than the unsplit atom: 0 of ~100 row and ~100 column splits per state taken (0 of
~120 customer splits). Block merges are useless there: every block merge of these states was
rejected as not block-consistent (any two atoms that are not tiny share rows and columns: of the
66 and 300 pairs, 7 and 53 share no row, all with an atom of 1 or 2 customers). Merging is in any
case disfavoured by pi itself: over the pairs of atoms, the median ln pi(merged)/pi(split) is
-1310 (K+ = 12) and -740 (K+ = 25). Chains of ``fit`` with a 1 % hold-out (``cv_fold(shape, 0,
100, 0)``), 10 proposals per sweep of the mixture (s = 5): from 1, 2 and 100 atoms K+ is about
4.7, 6.9 and 19.2 after 2000 sweeps (TDLL -0.0839, -0.0832, -0.0797); with 30 proposals per
sweep 6.6 and 17.8 from 1 and 100 (TDLL -0.0829, -0.0790); customers alone 4.5 from 1 atom; the
plain Gibbs sampler 2.1 and 19.0 from 2 and 100 (TDLL -0.0909, -0.0794, 1000 sweeps). 2000
sweeps with 10 proposals took 140-170 CPU s from 1-2 atoms (proposals on atoms of 20 000-70 000
customers, a few ms each) and 72 s from 100. The block moves help the chains from few atoms a
little; the chains still disagree by a factor of 3-4 in K+ and by 0.003-0.004 in TDLL.
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
