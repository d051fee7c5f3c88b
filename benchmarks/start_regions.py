#!/usr/bin/env python
"""Where IDEPM chains from different starts settle on MovieLens100K, and what their log joint says.

Usage::

    EPM_DATA_DIR=/path/to/data python benchmarks/start_regions.py [--starts 1 3 10 30 100 data]
        [--n-iter 1500] [--split-merge 20] [--seed 0] [--fold 0] [--thin 5]
        [--hold 500 0.05] [--out results/k_traces/start_regions_movielens100k.json]

MovieLens100K (``epm_lib.datasets.load("movielens100k")``, verified against its fingerprint)
with fold 0 of the paper's ten folds held out (``cv_fold`` and ``split``, Sec. 5's protocol),
one IDEPM chain per start (``K_init``: customers spread over that many atoms; ``data``: ``fit``'s
default start from the data, ``init="data"``), all with the same
seed and ``--split-merge`` proposals per sweep (the converged protocol's sampler), one after the
other on one core (``NUMBA_NUM_THREADS=1``).

Per chain the JSON file holds traces thinned to every ``--thin``-th sweep of K, M (customers),
the log joint ln P(m, [z] | h) + ln p(h) (``FitResult.log_joint``, Theorem 4 with the
Gamma(e0, f0) hyperpriors), the TDLL of each sweep's sample, alpha1, alpha2, gamma0 and c0; the
means of K, M, log joint, alpha1, alpha2 over the last quarter of the sweeps; the posterior-mean
TDLL and TDAUC-PR over that quarter (``n_avg``); moves proposed and accepted; seconds. The file
also holds the rank-normalised split-R-hat of K, TDLL and log joint over the random starts' chains (second
halves; ``epm_lib.chains.diagnostics``). Read by ``chapters/25_idepm_start``.

``--hold SWEEPS CAP``: every chain with the burn-in hold ``fit(hold=(SWEEPS, CAP))`` (alpha1,
alpha2 capped at CAP for the first SWEEPS sweeps, the exact kernel after; it must end before the
last quarter, which is averaged); the file is then ``start_regions_movielens100k_hold<SWEEPS>x<CAP>.json``
unless ``--out`` is given, so the unheld chains stay where chapter 25 reads them.

Each finished chain is written to the file at once (atomically); a rerun with the same settings
skips the chains already there, so an interrupted run loses at most the chain in progress.
Fails loudly on data or checksum errors and on non-finite traces.

Cost (shared 2-core machine): 1500 sweeps take about 1-4 CPU minutes per chain (chains on few,
large atoms make the most expensive proposals).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib.chains import _arviz, diagnostics  # noqa: E402
from epm_lib.experiments import DataSpec, cv_fold, split  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from k_traces import git_commit, rounded, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "k_traces" / "start_regions_movielens100k.json"
HYPER = ("alpha1", "alpha2", "gamma0", "c0")


def run_chain(X, test, K0, sm, n_iter, n_avg, seed, thin, hold=None):
    """One chain; returns (its JSON record, its FitResult)."""
    cpu0 = time.process_time()
    start = dict(init="data") if K0 == "data" else dict(K_init=K0)
    res = epm_lib.fit(X, "IDEPM", split_merge=sm, n_iter=n_iter, n_avg=n_avg, seed=seed, test=test, hold=hold,
                      **start)
    cpu = time.process_time() - cpu0
    for name, v in (("tdll", res.tdll_trace), ("log_joint", res.log_joint)):
        if v.shape != (n_iter,) or not np.all(np.isfinite(v)):
            raise RuntimeError(f"K_init={K0}: incomplete or non-finite {name} trace")
    keep = np.arange(thin - 1, n_iter, thin)
    last = slice(n_iter - n_avg, None)
    totals = res.move_stats.sum(axis=0)
    rec = dict(
        K_init=K0, K_start=int(res.settings["K_start"]), split_merge=sm, seed=seed, n_iter=n_iter, n_avg=n_avg, thin=thin,
        sweep=[int(s) + 1 for s in keep],
        K=[int(k) for k in res.K[keep]], M=[int(m) for m in res.M[keep]],
        log_joint=[rounded(v, 1) for v in res.log_joint[keep]],
        tdll=[rounded(v, 5) for v in res.tdll_trace[keep]],
        **{n: [rounded(v, 6) for v in res.hyper[n][keep]] for n in HYPER},
        K_mean=rounded(res.K[last].mean(), 2), M_mean=rounded(res.M[last].mean(), 0),
        log_joint_mean=rounded(res.log_joint[last].mean(), 0),
        alpha1_mean=rounded(res.hyper["alpha1"][last].mean(), 4),
        alpha2_mean=rounded(res.hyper["alpha2"][last].mean(), 4),
        tdll_final=rounded(res.tdll, 5), tdauc_pr_final=rounded(res.tdauc_pr, 4),
        splits_proposed=int(totals[0]), splits_accepted=int(totals[1]),
        merges_proposed=int(totals[2]), merges_accepted=int(totals[3]),
        sampler_seconds=rounded(res.seconds[-1], 1), cpu_seconds=rounded(cpu, 1))
    return rec, res


def _start(text):
    """A --starts value: a number of atoms >= 1, or 'data'."""
    if text == "data":
        return text
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number of atoms nor 'data'") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"a start needs at least one atom, got {k}")
    return k


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--starts", type=_start, nargs="+", default=[1, 3, 10, 30, 100, "data"],
                   help="K_init of the chains (customers seated at random over that many atoms), or 'data' "
                        "(fit's default start, init='data')")
    p.add_argument("--n-iter", type=int, default=1500, help="sweeps per chain")
    p.add_argument("--split-merge", type=int, default=20, help="split-merge proposals per sweep")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fold", type=int, default=0, help="fold of the ten held out (Sec. 5)")
    p.add_argument("--thin", type=int, default=5, help="keep every thin-th sweep in the traces")
    p.add_argument("--data-dir", default=None, help="MovieLens directory (default $EPM_DATA_DIR)")
    p.add_argument("--hold", nargs=2, type=float, default=None, metavar=("SWEEPS", "CAP"),
                   help="burn-in hold of every chain: alpha1, alpha2 at most CAP for the first SWEEPS sweeps")
    p.add_argument("--out", default=None, help="JSON file (written after each chain; default "
                                                "results/k_traces/start_regions_movielens100k[_hold<S>x<C>].json)")
    a = p.parse_args(argv)
    hold = None
    if a.hold is not None:
        if a.hold[0] != int(a.hold[0]) or not 1 <= a.hold[0] <= a.n_iter - a.n_iter // 4 or not a.hold[1] > 0:
            p.error(f"--hold SWEEPS CAP needs a whole number of sweeps from 1 to n_iter - n_iter // 4 = "
                    f"{a.n_iter - a.n_iter // 4} (the last quarter is averaged) and CAP > 0; got {a.hold}")
        hold = (int(a.hold[0]), a.hold[1])
    if a.out is None:
        a.out = str(DEFAULT_OUT if hold is None else
                    DEFAULT_OUT.with_name(f"{DEFAULT_OUT.stem}_hold{hold[0]}x{hold[1]:g}.json"))
    random_starts = [k for k in a.starts if k != "data"]
    if a.thin < 1 or a.n_iter < 8 * a.thin or a.split_merge < 0 or len(set(random_starts)) < 2:
        p.error("need thin >= 1, n_iter >= 8 thin (R-hat needs four thinned draws in each chain's second half), "
                "split_merge >= 0 and at least two distinct numbers of atoms among the starts")
    n_avg = a.n_iter // 4

    spec = DataSpec("movielens100k", data_dir=a.data_dir)
    ds = spec.load()                                  # verified against its recorded fingerprint
    X, test = split(ds.X, cv_fold(ds.shape, a.fold))
    settings = dict(dataset="movielens100k", fingerprint=spec.fingerprint(), shape=list(ds.shape),
                    nnz=int(ds.X.nnz), fold=a.fold, n_folds=10, train_nnz=int(X.nnz),
                    n_test=int(test[0].size), model="IDEPM", n_iter=a.n_iter, n_avg=n_avg,
                    split_merge=a.split_merge, seed=a.seed, thin=a.thin)
    if hold is not None:                              # absent without a hold: the stored file's settings stay valid
        settings["hold"] = list(hold)
    out_path = Path(a.out)
    chains = {}
    if out_path.exists():                             # resume: keep the chains of the same settings
        old = json.loads(out_path.read_text())
        if old.get("settings") == settings:
            chains = {k: v for k, v in old["chains"].items() if k in {str(s) for s in a.starts}}
    print(f"movielens100k {ds.shape}, fold {a.fold}: {X.nnz} training ones, {test[0].size} test "
          f"entries; IDEPM chains from {a.starts} atoms, {a.n_iter} sweeps, split_merge={a.split_merge}"
          f"{'; done already: ' + ', '.join(chains) if chains else ''}", flush=True)

    def machine():
        return dict(python=platform.python_version(), numpy=np.__version__, epm_lib=epm_lib.__version__,
                    commit=git_commit(), numba_threads=os.environ["NUMBA_NUM_THREADS"])

    for K0 in a.starts:
        if str(K0) in chains:
            continue
        rec, _ = run_chain(X, test, K0, a.split_merge, a.n_iter, n_avg, a.seed, a.thin, hold)
        chains[str(K0)] = rec
        write_json(out_path, dict(settings=settings, machine=machine(), chains=chains))
        print(f"K_init {K0!s:>4}: K {rec['K_mean']:5.1f}, M {rec['M_mean']:6.0f}, log joint "
              f"{rec['log_joint_mean']:9.0f}, alpha1 {rec['alpha1_mean']:.3f}, alpha2 {rec['alpha2_mean']:.3f}, "
              f"TDLL {rec['tdll_final']:.5f}; {rec['splits_accepted']}/{rec['splits_proposed']} splits, "
              f"{rec['merges_accepted']}/{rec['merges_proposed']} merges; {rec['cpu_seconds']:.0f} CPU s",
              flush=True)

    # R-hat over the random starts' chains, on the second halves of the stored (thinned) traces
    order = [str(k) for k in random_starts]
    post = {v: np.array([chains[k][v] for k in order], dtype=float) for v in ("K", "tdll", "log_joint")}
    d = diagnostics(_arviz().from_dict(posterior=post), burn_in=0.5)
    summary = {v: {k: rounded(x, 3) for k, x in d[v].items()} for v in d}
    write_json(out_path, dict(settings=settings, machine=machine(), chains=chains, rhat=summary))
    print("split-R-hat over the chains (second halves): "
          + ", ".join(f"{v} {s['rhat']:.2f}" for v, s in summary.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
