#!/usr/bin/env python
"""Seconds per Gibbs sweep of the four samplers, against a "speed of light" kernel.

Usage::

    python benchmarks/bench_sweeps.py [--data-dir DIR] [--datasets ml100k ml1m] [--repeats N]
                                      [--T 16 128] [--warmup N] [--settle N] [--K-init 10 100]
                                      [--ref-T 128] [--json PATH]

For each data set the real MovieLens matrix is used when it can be loaded
(``epm_lib.datasets.load``, from ``--data-dir`` or ``$EPM_DATA_DIR``); otherwise a random
sparse matrix of the same shape and number of ones (uniform positions, seed 0). The table
says which.

What is timed: one call of the sweep kernel itself (``gamma_epm.epm_sweep``,
``depm.depm_sweep``, ``idepm.idepm_sweep``) on the state arrays of a short ``epm_lib.fit``
run (``--warmup`` sweeps for the truncated models, ``--settle`` sweeps for the IDEPM, which
also compiles every kernel; the IDEPM once per ``--K-init``, its initial number of atoms: its
cost follows the number of active atoms K+, and on MovieLens1M K+ stays near where it starts
for hundreds of sweeps), not ``fit`` (which also evaluates test likelihoods). The
minimum and the median over ``--repeats`` consecutive sweeps are reported, as CPU seconds of
this process (on a shared machine the CPU time is the fairer number, and the minimum the one
least disturbed by other jobs), and the median as wall-clock seconds.

The "speed of light" kernel is the least work any sweep has to do: for every one (i, j)
of X the length-T sum ``sum_k U_ik lambda_k V_jk`` (the Poisson rate of Eq. (10)), a
``@njit(fastmath=True)`` loop, timed in the same run on the same arrays. ``ratio`` is
sweep / kernel (medians). For the IDEPM the kernel runs on its K+ active atoms. So that every
sampler is measured against the same yardstick, the same kernel is also timed once per data
set at ``--ref-T`` atoms (default 128) on Gamma(1, 1) factors, and ``x ref`` is each sampler's
minimum CPU seconds per sweep over that kernel's minimum: the multiple the issue's targets are
stated in (EPM and DEPM at T = 128 and the IDEPM at K+ about 10, all against the T = 128
kernel). The IDEPM's collapsed
sweep draws no phi, psi, lambda; the draw of the active atoms' parameters that predictions need
(``fit`` makes it after each sweep when there is a test set, outside its sweep timing, like the
test likelihood) is timed apart and printed below the table.

The *floor* (``draw_floor``) is what a sweep cannot go below while it makes numpy's generator's
draws: its rates at the speed of light, plus the uniforms it draws one by one (``uniforms ms``:
the m-step's ZTP and seating draws, or the IDEPM's z-step and birth-or-death draws) and its factor
draws (``factor draws ms``: the EPM's and CEPM's (I + J) T gamma draws of U and V, the DEPM's 2 T
Dirichlet columns), each timed alone on the sampler's state; ``floor x ref`` is that sum over the
reference kernel. The hyperparameter steps are left out, so the floor is a lower bound.

Everything runs on one core: ``NUMBA_NUM_THREADS=1`` is set before numba is imported
(the kernels are serial anyway). See ``benchmarks/profile_steps.py`` for where the time
of a sweep goes, and ``chapters/16_performance`` for the cost model.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from numba import njit  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib import datasets  # noqa: E402
from epm_lib.distributions import cepm_grid  # noqa: E402
from epm_lib.models import gamma_epm, depm, idepm  # noqa: E402

#: short name -> (loader name, shape, number of ones) of the paper's MovieLens matrices (Sec. 5)
DATASETS = {
    "ml100k": ("movielens100k", (943, 1682), 55_375),
    "ml1m": ("movielens1m", (6040, 3706), 575_281),
    # hostile size: a 10^6 x 10^6 matrix with 10^5 ones at random (no loader: always random). Memory
    # must follow the ones and the used rows, not I x J or I x (atoms ever opened); run one model per
    # process to read each one's peak memory: --datasets sparse1e6 --models IDEPM
    "sparse1e6": (None, (1_000_000, 1_000_000), 100_000),
}
E0 = F0 = 0.01          # the hyperprior of Sec. 5 (fit's default)


# ------------------------------------------------------------------------------------------
# the speed-of-light kernel
# ------------------------------------------------------------------------------------------

@njit(fastmath=True)
def rates_kernel(rows, cols, U, V, lam, out):
    """out[e] = sum_k U[i, k] lam[k] V[j, k] for every one e = (i, j): O(nnz x T), no randomness."""
    T = lam.shape[0]
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        s = 0.0
        for k in range(T):
            s += U[i, k] * lam[k] * V[j, k]
        out[e] = s


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------

def random_binary(shape, n_ones, seed=0):
    """A random binary CSR matrix with exactly ``n_ones`` ones at uniform positions."""
    rng = np.random.default_rng(seed)
    I, J = shape
    idx = np.empty(0, dtype=np.int64)
    while idx.size < n_ones:
        idx = np.union1d(idx, rng.integers(0, I * J, size=int(1.05 * (n_ones - idx.size)) + 16))
    idx = np.sort(rng.choice(idx, size=n_ones, replace=False))
    X = sp.csr_matrix((np.ones(n_ones, dtype=np.int8), (idx // J, idx % J)), shape=shape)
    X.sort_indices()
    return X


def get_matrix(short, data_dir):
    """(X, description of what was used)."""
    name, shape, n_ones = DATASETS[short]
    if name is None:
        return random_binary(shape, n_ones), f"random {shape[0]:,}x{shape[1]:,}, {n_ones:,} ones"
    try:
        d = datasets.load(name, data_dir=data_dir)
        return d.X, f"{name} (real, {shape[0]}x{shape[1]}, {d.n_ones:,} ones)"
    except datasets.DataError as err:            # missing or altered file: fall back
        X = random_binary(shape, n_ones)
        reason = type(err).__name__
        return X, f"random {shape[0]}x{shape[1]}, {n_ones:,} ones ({name} not available: {reason})"


# ------------------------------------------------------------------------------------------
# timing
# ------------------------------------------------------------------------------------------

def clock():
    return time.perf_counter(), time.process_time()


def time_calls(fn, repeats, best=False):
    """Median wall and CPU seconds of ``repeats`` calls of fn() (no argument); with ``best``, also
    the minimum CPU seconds."""
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = clock()
        fn()
        w1, c1 = clock()
        wall.append(w1 - w0)
        cpu.append(c1 - c0)
    if best:
        return float(np.median(wall)), float(np.median(cpu)), float(np.min(cpu))
    return float(np.median(wall)), float(np.median(cpu))


def kernel_seconds(rows, cols, R, C, lam, repeats):
    out = np.empty(rows.shape[0])
    rates_kernel(rows, cols, R, C, lam, out)                    # compile / warm caches
    return time_calls(lambda: rates_kernel(rows, cols, R, C, lam, out), max(repeats, 10), best=True)


def reference_kernel_seconds(X, T, repeats, seed=0):
    """Minimum CPU seconds of the speed-of-light kernel over the ones of X with T atoms (factors
    drawn from Gamma(1, 1), lambda = 1/T): the one yardstick every sampler is compared with."""
    I, J = X.shape
    Xc = X.tocsr() if hasattr(X, "tocsr") else X
    rows = np.repeat(np.arange(I, dtype=np.int64), np.diff(Xc.indptr))
    cols = Xc.indices.astype(np.int64)
    rng = np.random.default_rng(seed)
    U, V, lam = rng.gamma(1.0, 1.0, (I, T)), rng.gamma(1.0, 1.0, (J, T)), np.full(T, 1.0 / T)
    out = np.empty(rows.shape[0])
    rates_kernel(rows, cols, U, V, lam, out)
    return time_calls(lambda: rates_kernel(rows, cols, U, V, lam, out), max(3 * repeats, 20), best=True)[2]


@njit
def _uniforms(rng, n):
    """n draws of ``rng.random()`` (their sum, so that none is optimised away)."""
    s = 0.0
    for _ in range(n):
        s += rng.random()
    return s


def uniform_seconds(n, repeats, seed=0):
    """Minimum CPU seconds of ``n`` uniforms from numpy's generator, drawn one by one in numba as
    the m-step, the z-step and the birth-death moves draw them."""
    rng = np.random.default_rng(seed)
    _uniforms(rng, 10)
    return time_calls(lambda: _uniforms(rng, n), repeats, best=True)[2]


def factor_draw_seconds(model, st, repeats, seed=0):
    """Minimum CPU seconds of the factor draws of one sweep alone, at the state ``st`` of a fit: the
    (I + J) T gamma draws of U and V (EPM, CEPM: ``gamma_epm.sample_factors``, Eqs. (15)-(16)) or
    the 2 T Dirichlet columns of phi and psi (DEPM: ``depm.sample_dirichlet_columns``, Eqs. (30)-(31)),
    with the state's counts and hyperparameters, into scratch arrays (the state is not changed)."""
    rng = np.random.default_rng(seed)
    m_ik, m_jk, h, lam = st["m_ik"], st["m_jk"], st["h"], st["lam"]
    if model == "DEPM":
        phi, psi = np.empty_like(st["phi"]), np.empty_like(st["psi"])

        def draws():
            depm.sample_dirichlet_columns(rng, m_ik, h[depm.ALPHA1], phi)
            depm.sample_dirichlet_columns(rng, m_jk, h[depm.ALPHA2], psi)
    else:
        U, V = st["U"], st["V"]
        sumU, sumV = U.sum(axis=0), V.sum(axis=0)
        U2, V2 = np.empty_like(U), np.empty_like(V)
        ge = gamma_epm

        def draws():
            ge.sample_factors(rng, m_ik, h[ge.A1], h[ge.B1], sumV, lam, U2)
            ge.sample_factors(rng, m_jk, h[ge.A2], h[ge.B2], sumU, lam, V2)
    draws()
    return time_calls(draws, repeats, best=True)[2]


def bench_truncated(X, model, T, repeats, warmup, seed):
    """Time epm_sweep / depm_sweep on the state of a ``warmup``-sweep fit."""
    r = epm_lib.fit(X, model, T=T, n_iter=warmup, n_avg=1, seed=seed, init="paper")   # all T atoms in play
    st = r.state
    rows, cols = st["rows"], st["cols"]
    I, J = X.shape
    rng = np.random.default_rng(seed + 1)
    m_ik, m_jk, m_k = st["m_ik"], st["m_jk"], st["m_k"]
    if model == "DEPM":
        R, C, lam, h = st["phi"], st["psi"], st["lam"], st["h"]

        def sweep():
            depm.depm_sweep(rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k, E0, F0)
    else:
        R, C, lam, h = st["U"], st["V"], st["lam"], st["h"]
        grid = cepm_grid()
        cepm = model == "CEPM"

        def sweep():
            gamma_epm.epm_sweep(rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k, E0, F0,
                                cepm, float(I), float(J), False, grid)
    sweep()                                                      # warm-up call
    wall, cpu, cpu_min = time_calls(sweep, repeats, best=True)
    kwall, kcpu, kmin = kernel_seconds(rows, cols, R, C, lam, repeats)
    M = int(m_k.sum())
    return dict(model=f"{model}-{T}", T=T, K=int(np.count_nonzero(m_k)), M=M,
                wall=wall, cpu=cpu, cpu_min=cpu_min, kernel_wall=kwall, kernel_cpu=kcpu, kernel_cpu_min=kmin,
                n_uniforms=int(rows.shape[0]) + M, uniforms_cpu=uniform_seconds(int(rows.shape[0]) + M, repeats),
                factors_cpu=factor_draw_seconds(model, st, repeats))


def bench_idepm(X, repeats, settle, seed, K_init):
    """Time idepm_sweep (exact m-step) on the seating of a ``settle``-sweep fit from ``K_init`` atoms,
    and, apart, the draw of the active atoms' phi, psi, lambda that predictions need (not part of the
    collapsed chain; ``fit`` draws it after each sweep only when there is a test set)."""
    r = epm_lib.fit(X, "IDEPM", n_iter=settle, n_avg=1, seed=seed, K_init=K_init)
    st = r.state
    I, J = X.shape
    # the sweep works on the rows/columns with ones only, as in fit (its I, J enter the weights)
    rows = np.searchsorted(st["row_ids"], st["rows"])
    cols = np.searchsorted(st["col_ids"], st["cols"])
    rng = np.random.default_rng(seed + 1)
    counts = idepm.seat_counts(rows, cols, st["offsets"], st["z"], st["row_ids"].shape[0],
                               st["col_ids"].shape[0], int(st["z"].max()) + 1)
    s = dict(offsets=st["offsets"], z=st["z"], h=st["h"], counts=counts, K=int(st["z"].max()) + 1)

    def sweep():
        off, z, n_ik, n_jk, n_k, K = idepm.idepm_sweep(rng, rows, cols, s["offsets"], s["z"], *s["counts"],
                                                       I, J, s["h"], E0, F0, True, 1)
        s.update(offsets=off, z=z, counts=(n_ik, n_jk, n_k), K=K)

    def parameters():
        h = s["h"]
        s["params"] = idepm.sample_active_parameters(rng, *s["counts"], np.arange(s["K"]), s["K"],
                                                     h[idepm.ALPHA1], h[idepm.ALPHA2], h[idepm.C0], I, J)

    sweep()
    parameters()
    wall, cpu, cpu_min = time_calls(sweep, repeats, best=True)
    _, pcpu = time_calls(parameters, repeats)
    kwall, kcpu, kmin = kernel_seconds(rows, cols, *s["params"], repeats)
    n_unif = int(s["z"].shape[0]) + int(rows.shape[0])      # a z-step draw per customer, a move's per one
    n = settle // 4 or 1
    return dict(model=f"IDEPM (K_init {K_init})", T=None, K=int(s["K"]), M=int(s["z"].shape[0]),
                K_settle=f"{r.K[-n:].min()}-{r.K[-n:].max()} over the last {n} settling sweeps",
                M_settle=f"{int(r.M[-n])} -> {int(r.M[-1])}", predict_cpu=pcpu,
                wall=wall, cpu=cpu, cpu_min=cpu_min, kernel_wall=kwall, kernel_cpu=kcpu, kernel_cpu_min=kmin,
                n_uniforms=n_unif, uniforms_cpu=uniform_seconds(n_unif, repeats), factors_cpu=0.0)


def draw_floor(r):
    """The floor of a sweep, in CPU seconds: its rates at the speed of light on its own atoms (the
    kernel on the sampler's state, minimum), plus the uniforms it must draw one by one (the
    m-step's ZTP and seating draws, nnz + M; the IDEPM's z-step and birth-or-death draws, M + nnz)
    and its factor draws (EPM, CEPM: the (I + J) T gamma draws of U and V; DEPM: the 2 T Dirichlet
    columns, in log space), each timed alone. The hyperparameter steps (CRT and Beta draws) and the
    moves' other draws are left out, so this is a lower bound: no sweep that makes the same draws
    can be faster."""
    return r["kernel_cpu_min"] + r["uniforms_cpu"] + r["factors_cpu"]


# ------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------

def machine():
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    except OSError:
        cpu = platform.processor() or "?"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    commit = "?"
    try:                                   # which epm_lib was timed (it changes as it is optimised)
        root = os.path.dirname(os.path.dirname(os.path.abspath(epm_lib.__file__)))
        git = ["git", "-C", root]
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        if subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "--", "epm_lib"], capture_output=True,
                          text=True, check=True).stdout.strip():
            commit += "+modified"
    except (OSError, subprocess.CalledProcessError):
        pass
    return dict(cpu=cpu, cores=os.cpu_count(), load_avg_1min=round(load, 2),
                python=platform.python_version(), numpy=np.__version__,
                numba=sys.modules["numba"].__version__, epm_lib=epm_lib.__version__,
                numba_num_threads=os.environ.get("NUMBA_NUM_THREADS"), epm_lib_commit=commit,
                date=datetime.date.today().isoformat())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None, help="folder with ml-100k/ and ml-1m/ (default $EPM_DATA_DIR)")
    p.add_argument("--datasets", nargs="+", default=["ml100k", "ml1m"], choices=sorted(DATASETS))
    p.add_argument("--repeats", type=int, default=5, help="timed sweeps per sampler (median reported)")
    p.add_argument("--T", type=int, nargs="+", default=[16, 128], help="truncation levels")
    p.add_argument("--warmup", type=int, default=10, help="fit sweeps before timing (truncated models)")
    p.add_argument("--settle", type=int, default=100, help="fit sweeps before timing the IDEPM")
    p.add_argument("--K-init", type=int, nargs="+", default=[10, epm_lib.DEFAULT_K_INIT],
                   help="IDEPM initial numbers of atoms (default: 10, the issue's reference point, and "
                        "the library default)")
    p.add_argument("--models", nargs="+", default=["EPM", "CEPM", "DEPM", "IDEPM"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ref-T", type=int, default=128, help="atoms of the reference kernel every sampler is "
                                                         "compared with (x ref)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    a = p.parse_args(argv)

    info = machine()
    print(f"# seconds per sweep, one core ({info['cpu']}, {info['cores']} cores, "
          f"load average {info['load_avg_1min']}), {info['date']}")
    print(f"# numpy {info['numpy']}, numba {info['numba']}, epm_lib {info['epm_lib']} "
          f"(commit {info['epm_lib_commit']}); "
          f"{a.repeats} sweeps each (CPU min and median); kernel = sum_k U_ik lambda_k V_jk over the ones "
          f"(fastmath), on the sampler's atoms (ratio, medians) and at T = {a.ref_T} (x ref, minima)\n")
    results = []
    for short in a.datasets:
        X, what = get_matrix(short, a.data_dir)
        ref = reference_kernel_seconds(X, a.ref_T, a.repeats, a.seed)
        print(f"## {short}: {what}\n")
        print(f"reference kernel at T = {a.ref_T}: {1e3 * ref:.2f} ms CPU (minimum)\n")
        print("| sampler | K | M | sweep s (CPU min) | sweep s (CPU median) | sweep s (wall) | kernel ms (CPU) "
              f"| ratio (CPU) | x ref (T = {a.ref_T}) | uniforms ms | factor draws ms | floor x ref |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for model in a.models:
            runs = []
            if model == "IDEPM":
                runs.extend(bench_idepm(X, a.repeats, a.settle, a.seed, k) for k in a.K_init)
            else:
                for T in a.T:
                    runs.append(bench_truncated(X, model, T, a.repeats, a.warmup, a.seed))
            for r in runs:
                floor = draw_floor(r)
                r.update(dataset=short, data=what, ratio=r["cpu"] / r["kernel_cpu"], ref_T=a.ref_T,
                         ref_kernel_cpu=ref, x_ref=r["cpu_min"] / ref, floor_cpu=floor, x_floor=floor / ref)
                results.append(r)
                print(f"| {r['model']} | {r['K']} | {r['M']:,} | {r['cpu_min']:.4f} | {r['cpu']:.4f} | "
                      f"{r['wall']:.4f} | {1e3 * r['kernel_cpu']:.2f} | {r['ratio']:.1f} | {r['x_ref']:.1f} | "
                      f"{1e3 * r['uniforms_cpu']:.1f} | {1e3 * r['factors_cpu']:.1f} | {r['x_floor']:.1f} |",
                      flush=True)
        for r in results:
            if r["dataset"] == short and r["model"].startswith("IDEPM"):
                print(f"\n{r['model']} after {a.settle} settling sweeps: K+ {r['K_settle']}; M {r['M_settle']}; "
                      f"phi, psi, lambda for predictions (not in the sweep) {r['predict_cpu']:.4f} s CPU")
        print()
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:,.0f} MB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(machine=info, settings=vars(a), results=results), f, indent=1)
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
