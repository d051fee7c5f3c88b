#!/usr/bin/env python
"""Where the time of one Gibbs sweep goes: every step of the sweep timed on its own.

Usage::

    python benchmarks/profile_steps.py [--data-dir DIR] [--dataset ml1m] [--T 128]
                                       [--models EPM CEPM DEPM IDEPM] [--repeats 5]
                                       [--warmup 10] [--settle 100] [--K-init 100]

Each sweep (``gamma_epm.epm_sweep``, ``depm.depm_sweep``, ``idepm.idepm_sweep``) is replayed
step by step from Python, calling the library's own numba kernels in the sweep's order and
with the sweep's arguments (so the chain has the same law; the totals such as sum_i U_ik are
numpy's sums here, added in another order than numba's, so the draws are not bit-identical),
and the CPU seconds of each step are summed over ``--repeats`` sweeps. The Python glue
between steps costs a few microseconds per call. Below the steps, *diagnostic* lines (marked
``[diag]``) time copies of parts of the m-step on the same state -- the loop over the ones that
computes the rates and their running sums alone, then with the zero-truncated Poisson draw,
then the library's full kernel, a prototype of a faster m-step, the speed-of-light kernel and
the gamma draws of the factor updates -- to split the m-step into its pieces; they are not part
of the sweep and do not advance the chain. The diagnostic copy of the rate loop mirrors
``common.sample_latent_counts`` as of epm_lib commit 2f1d4d2 (running sums per group of four
atoms); update it when that kernel changes.

The data are those of ``bench_sweeps.py`` (real MovieLens when available, else random).
One core (``NUMBA_NUM_THREADS=1``).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from contextlib import contextmanager  # noqa: E402

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import epm_lib  # noqa: E402
from epm_lib.distributions import cepm_grid, sample_ztp  # noqa: E402
from epm_lib.models import common, gamma_epm as ge, depm, idepm  # noqa: E402
from epm_lib.models.common import Ones  # noqa: E402

import bench_sweeps as bench  # noqa: E402  (same folder: data loading and the kernel)

E0 = F0 = 0.01


class Timer:
    """Accumulates CPU seconds per named step, in first-seen order."""

    def __init__(self):
        self.cpu = defaultdict(float)
        self.order = []

    @contextmanager
    def __call__(self, name):
        if name not in self.cpu:
            self.order.append(name)
        c0 = time.process_time()
        yield
        self.cpu[name] += time.process_time() - c0


# ------------------------------------------------------------------------------------------
# the sweeps, step by step (same calls and order as the library's sweep kernels)
# ------------------------------------------------------------------------------------------

def epm_steps(tm, rng, rows, cols, U, V, lam, h, m_ik, m_jk, m_k, cepm, C1, C2, grid):
    """gamma_epm.epm_sweep (exact a-updates), step by step."""
    I, T = U.shape
    J = V.shape[0]
    with tm("m-step: ZTP + multinomial over the ones (Eqs. 10-11)"):
        common.sample_latent_counts(rng, rows, cols, U, V, lam, m_ik, m_jk, m_k)
    with tm("hyper: b1, a1 (CRT draws / CEPM grid)"):
        sumV = V.sum(axis=0)
        q = lam * sumV
        if cepm:
            h[ge.A1] = ge.sample_shape_grid(rng, grid, m_ik, m_k, q, C1, I, E0, F0, True)
            h[ge.B1] = C1 * h[ge.A1]
        else:
            h[ge.B1] = ge.sample_rate_hyper(rng, I * T, h[ge.A1], U.sum(), E0, F0)
            h[ge.A1] = ge.sample_shape_augmented(rng, m_ik, h[ge.A1], h[ge.B1], q, I, E0, F0)
    with tm("factors: U (I x T gamma draws, Eq. 15)"):
        ge.sample_factors(rng, m_ik, h[ge.A1], h[ge.B1], sumV, lam, U)
    with tm("hyper: b2, a2 (CRT draws / CEPM grid)"):
        sumU = U.sum(axis=0)
        q = lam * sumU
        if cepm:
            h[ge.A2] = ge.sample_shape_grid(rng, grid, m_jk, m_k, q, C2, J, E0, F0, True)
            h[ge.B2] = C2 * h[ge.A2]
        else:
            h[ge.B2] = ge.sample_rate_hyper(rng, J * T, h[ge.A2], V.sum(), E0, F0)
            h[ge.A2] = ge.sample_shape_augmented(rng, m_jk, h[ge.A2], h[ge.B2], q, J, E0, F0)
    with tm("factors: V (J x T gamma draws, Eq. 16)"):
        ge.sample_factors(rng, m_jk, h[ge.A2], h[ge.B2], sumU, lam, V)
    with tm("hyper: c0, gamma0, lambda (Eqs. 17, 20, 26-27)"):
        S = sumU * V.sum(axis=0)
        h[ge.C0] = ge.sample_c0(rng, h[ge.GAMMA0], lam.sum(), E0, F0)
        h[ge.GAMMA0] = ge.sample_gamma0(rng, m_k, h[ge.GAMMA0], h[ge.C0], S, E0, F0)
        ge.sample_lambda(rng, m_k, h[ge.GAMMA0] / T, h[ge.C0] + S, lam)


def depm_steps(tm, rng, rows, cols, phi, psi, lam, h, m_ik, m_jk, m_k):
    """depm.depm_sweep, step by step."""
    I, T = phi.shape
    J = psi.shape[0]
    with tm("m-step: ZTP + multinomial over the ones (Eqs. 10-11)"):
        common.sample_latent_counts(rng, rows, cols, phi, psi, lam, m_ik, m_jk, m_k)
    with tm("hyper: alpha1 (Beta + CRT draws, Eqs. 32-34)"):
        h[depm.ALPHA1] = depm.sample_concentration(rng, m_ik, m_k, h[depm.ALPHA1], I, E0, F0)
    with tm("factors: phi (T Dirichlet(I) draws, log space, Eq. 30)"):
        depm.sample_dirichlet_columns(rng, m_ik, h[depm.ALPHA1], phi)
    with tm("hyper: alpha2 (Beta + CRT draws)"):
        h[depm.ALPHA2] = depm.sample_concentration(rng, m_jk, m_k, h[depm.ALPHA2], J, E0, F0)
    with tm("factors: psi (T Dirichlet(J) draws, log space, Eq. 31)"):
        depm.sample_dirichlet_columns(rng, m_jk, h[depm.ALPHA2], psi)
    with tm("hyper: c0, gamma0, lambda"):
        ones = np.ones(T)
        h[depm.C0] = ge.sample_c0(rng, h[depm.GAMMA0], lam.sum(), E0, F0)
        h[depm.GAMMA0] = ge.sample_gamma0(rng, m_k, h[depm.GAMMA0], h[depm.C0], ones, E0, F0)
        ge.sample_lambda(rng, m_k, h[depm.GAMMA0] / T, h[depm.C0] + ones, lam)


def idepm_steps(tm, rng, rows, cols, offsets, z, counts, I, J, h):
    """idepm.idepm_sweep (exact m-step, one move per entry), step by step, then the draw of the
    active atoms' parameters for predictions (not part of the sweep). Returns the new state."""
    n_ik, n_jk, n_k = counts
    a1, a2, g0, c0 = h[idepm.ALPHA1], h[idepm.ALPHA2], h[idepm.GAMMA0], h[idepm.C0]
    ones, zp = Ones(rows, cols, int(rows.shape[0])), idepm.z_params(I, J, a1, a2, g0, c0)
    with tm("setup: active list, float counts and atom factors"):
        active, pos, n_active = idepm.active_from_counts(n_k)
        tab = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, zp.Ia1, zp.Ja2, n_active + 16)
    with tm("z-step (Eq. 6) and birth-death move, one pass over the ones"):
        offsets, z, tab, n_active = idepm._seating_pass(rng, ones, offsets, z, tab, n_active, zp, True, 1)
    with tm("relabel atoms 0..K+-1, int counts"):
        z = tab.pos[z]
        n_ik, n_jk, n_k = idepm._gather_counts(tab, n_active)
        active, pos, n_active = idepm.active_from_counts(n_k)
    with tm("hyper: alpha1, alpha2 (Beta + CRT draws)"):
        h[idepm.ALPHA1] = idepm.sample_concentration(rng, n_ik, n_k, h[idepm.ALPHA1], I, E0, F0)
        h[idepm.ALPHA2] = idepm.sample_concentration(rng, n_jk, n_k, h[idepm.ALPHA2], J, E0, F0)
    with tm("hyper: gamma0, c0 (Eqs. 43-46)"):
        h[idepm.GAMMA0] = idepm.sample_gamma0_idepm(rng, n_active, h[idepm.C0], E0, F0)
        h[idepm.C0] = idepm.sample_c0_idepm(rng, n_k, active, n_active, h[idepm.GAMMA0], h[idepm.C0], E0, F0)
    with tm("[not in the sweep] phi, psi, lambda of the active atoms, for predictions"):
        phi, psi, lam = idepm.sample_active_parameters(rng, n_ik, n_jk, n_k, active, n_active,
                                                       h[idepm.ALPHA1], h[idepm.ALPHA2], h[idepm.C0])
    return offsets, z, (n_ik, n_jk, n_k), phi, psi, lam, n_active


def idepm_pass_parts(rng, rows, cols, offsets, z, counts, I, J, h, repeats):
    """CPU seconds of the z-step alone and of the birth-death moves alone (two passes over the
    ones, as before they were fused), on copies of the state; the chain does not advance."""
    n_ik, n_jk, n_k = counts
    a1, a2, g0, c0 = h[idepm.ALPHA1], h[idepm.ALPHA2], h[idepm.GAMMA0], h[idepm.C0]
    active, pos, n_active = idepm.active_from_counts(n_k)
    ones, zp = Ones(rows, cols, int(rows.shape[0])), idepm.z_params(I, J, a1, a2, g0, c0)
    out = []
    for reseat, moves in ((True, 0), (False, 1)):
        def one():
            tab = idepm.to_float_seating(n_ik, n_jk, n_k, active, pos, n_active, zp.Ia1, zp.Ja2, n_active + 16)
            idepm._seating_pass(rng, ones, offsets, z.copy(), tab, n_active, zp, reseat, moves)
        out.append(cpu_of(one, repeats))
    return out


# ------------------------------------------------------------------------------------------
# diagnostic copies of parts of the m-step (sample_latent_counts), not part of any sweep
# ------------------------------------------------------------------------------------------

@njit
def _rates_groups(rows, cols, R, C, lam, rng, with_ztp, out):
    """The m-step's loop over the ones as in ``common.sample_latent_counts`` (rate summed in
    groups of four atoms, the running sum kept after each group), without seating anyone;
    with ``with_ztp`` also the zero-truncated Poisson draw of m_ij.. Returns M (or 0)."""
    I, T = R.shape
    Rl = np.empty((I, T))
    for i in range(I):
        for k in range(T):
            Rl[i, k] = R[i, k] * lam[k]
    G = T // 4
    P = np.empty(G + 2)
    M = 0
    for e in range(rows.shape[0]):
        ri = Rl[rows[e]]
        cj = C[cols[e]]
        acc = 0.0
        P[0] = 0.0
        for g in range(G):
            k = 4 * g
            acc += (ri[k] * cj[k] + ri[k + 1] * cj[k + 1]) + (ri[k + 2] * cj[k + 2] + ri[k + 3] * cj[k + 3])
            P[g + 1] = acc
        for k in range(4 * G, T):
            acc += ri[k] * cj[k]
        P[G + 1] = acc
        out[e] = acc + P[G // 2]
        if with_ztp:
            M += sample_ztp(rng, acc)
    return M


def diag_rates_groups(rows, cols, R, C, lam, out, rng):
    return _rates_groups(rows, cols, R, C, lam, rng, False, out)


def diag_rates_groups_ztp(rng, rows, cols, R, C, lam, out):
    return _rates_groups(rows, cols, R, C, lam, rng, True, out)


@njit(fastmath=True)
def diag_rates_fast(rows, cols, R, C, lam, out):
    """The rates alone with lambda folded into R and fastmath (vectorised): the floor of the m-step."""
    I, T = R.shape
    Rl = np.empty((I, T))
    for i in range(I):
        for k in range(T):
            Rl[i, k] = R[i, k] * lam[k]
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        s = 0.0
        for k in range(T):
            s += Rl[i, k] * C[j, k]
        out[e] = s


@njit(fastmath=True)
def _dot_row(A, B, i, j):
    s = 0.0
    for k in range(A.shape[1]):
        s += A[i, k] * B[j, k]
    return s


@njit
def diag_mstep_scan(rng, rows, cols, R, C, lam, m_ik, m_jk, m_k):
    """PROTOTYPE of a faster m-step (same law up to rounding; not used by epm_lib): the rate by a
    vectorised (fastmath) dot product, no prefix-sum array; each customer seated by a linear scan
    that subtracts the products from u * rate until it falls below one (early exit). Returns M."""
    I, T = R.shape
    Rl = np.empty((I, T))
    for i in range(I):
        for k in range(T):
            Rl[i, k] = R[i, k] * lam[k]
    m_ik[:, :] = 0
    m_jk[:, :] = 0
    m_k[:] = 0
    M = 0
    for e in range(rows.shape[0]):
        i = rows[e]
        j = cols[e]
        s = _dot_row(Rl, C, i, j)
        n = sample_ztp(rng, s)
        M += n
        for _ in range(n):
            u = rng.random() * s
            k = 0
            while k < T - 1:
                w = Rl[i, k] * C[j, k]
                if u < w:
                    break
                u -= w
                k += 1
            m_ik[i, k] += 1
            m_jk[j, k] += 1
            m_k[k] += 1
    return M


@njit
def diag_gamma_draws(rng, n, shape):
    """n standard_gamma draws of one shape: the unit cost of a factor update."""
    s = 0.0
    for _ in range(n):
        s += rng.standard_gamma(shape)
    return s


@njit
def diag_log_gamma_draws(rng, n, shape):
    """n log-space gamma draws (sample_log_gamma, as the Dirichlet columns use)."""
    s = 0.0
    for _ in range(n):
        if shape >= 1.0:
            s += math.log(rng.standard_gamma(shape))
        else:
            s += math.log(rng.standard_gamma(shape + 1.0)) + math.log(rng.random()) / shape
    return s


def cpu_of(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        c0 = time.process_time()
        fn()
        ts.append(time.process_time() - c0)
    return float(np.median(ts))


# ------------------------------------------------------------------------------------------

def report(title, tm, repeats, extra):
    outside = [n for n in tm.order if n.startswith("[not in the sweep]")]
    total = sum(v for n, v in tm.cpu.items() if n not in outside) / repeats
    print(f"\n### {title}: {1e3 * total:.1f} ms CPU per sweep (mean of {repeats})\n")
    print("| step | ms per sweep | share |")
    print("|---|---:|---:|")
    for name in tm.order:
        v = tm.cpu[name] / repeats
        share = "" if name in outside else f"{100 * v / total:.0f}%"
        print(f"| {name} | {1e3 * v:.2f} | {share} |")
    for name, v, note in extra:
        print(f"| [diag] {name} | {'' if v is None else f'{1e3 * v:.2f}'} | {note} |")


def profile_truncated(X, model, T, repeats, warmup, seed):
    r = epm_lib.fit(X, model, T=T, n_iter=warmup, n_avg=1, seed=seed, init="paper")   # all T atoms in play
    st = r.state
    rows, cols = st["rows"], st["cols"]
    I, J = X.shape
    m_ik, m_jk, m_k = st["m_ik"], st["m_jk"], st["m_k"]
    rng = np.random.default_rng(seed + 1)
    tm = Timer()
    if model == "DEPM":
        R, C, lam, h = st["phi"], st["psi"], st["lam"], st["h"]
        step = lambda t: depm_steps(t, rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k)  # noqa: E731
    else:
        R, C, lam, h = st["U"], st["V"], st["lam"], st["h"]
        grid = cepm_grid()
        step = lambda t: epm_steps(t, rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k,  # noqa: E731
                                   model == "CEPM", float(I), float(J), grid)
    step(Timer())                         # warm-up
    for _ in range(repeats):
        step(tm)
    out = np.empty(rows.shape[0])
    drng = np.random.default_rng(seed + 2)
    mk_i, mk_j, mk = m_ik.copy(), m_jk.copy(), m_k.copy()
    M = int(m_k.sum())
    n_draw = (I + J) * T
    extra = [
        ("m-step loop without draws (rates + running sums per group of 4, as in the library)",
         cpu_of(lambda: diag_rates_groups(rows, cols, R, C, lam, out, drng), repeats), "O(nnz T)"),
        ("  + ZTP draw of m_ij.",
         cpu_of(lambda: diag_rates_groups_ztp(drng, rows, cols, R, C, lam, out), repeats), f"nnz = {rows.size:,}"),
        ("  + seating = the full m-step kernel",
         cpu_of(lambda: common.sample_latent_counts(drng, rows, cols, R, C, lam, mk_i, mk_j, mk), repeats),
         f"M = {M:,} customers"),
        ("PROTOTYPE m-step: fastmath rate + linear-scan seating",
         cpu_of(lambda: diag_mstep_scan(drng, rows, cols, R, C, lam, mk_i, mk_j, mk), repeats),
         "same law, up to rounding"),
        ("rates alone, fastmath (the speed of light)",
         cpu_of(lambda: diag_rates_fast(rows, cols, R, C, lam, out), repeats), "vectorised"),
        (f"{n_draw:,} standard_gamma(shape {h[0]:.3g}) draws",
         cpu_of(lambda: diag_gamma_draws(drng, n_draw, max(float(h[0]), 1e-3)), repeats), "(I+J) T draws"),
    ]
    if model == "DEPM":
        extra.append((f"{n_draw:,} log-space gamma draws (alpha1 = {h[0]:.3g})",
                      cpu_of(lambda: diag_log_gamma_draws(drng, n_draw, float(h[0])), repeats),
                      "what the Dirichlet columns draw"))
    report(f"{model}-{T}, K = {int(np.count_nonzero(m_k))}, M = {M:,}", tm, repeats, extra)


def profile_idepm(X, repeats, settle, seed, K_init=None):
    r = epm_lib.fit(X, "IDEPM", n_iter=settle, n_avg=1, seed=seed, K_init=K_init)
    st = r.state
    rows, cols = st["rows"], st["cols"]
    I, J = X.shape
    rng = np.random.default_rng(seed + 1)
    counts = idepm.seat_counts(rows, cols, st["offsets"], st["z"], I, J, int(st["z"].max()) + 1)
    s = [st["offsets"], st["z"], counts]
    h = st["h"]
    tm = Timer()
    Ks, Ms = [], []
    for t in range(repeats + 1):
        off, z, counts, phi, psi, lam, K = idepm_steps(tm if t else Timer(), rng, rows, cols, *s, I, J, h)
        s = [off, z, counts]
        Ks.append(K)
        Ms.append(z.shape[0])
    out = np.empty(rows.shape[0])
    K, M = int(np.mean(Ks)), int(np.mean(Ms))
    zcpu, mcpu = idepm_pass_parts(rng, rows, cols, *s, I, J, h, repeats)
    extra = [("rates over the K+ atoms, fastmath",
              cpu_of(lambda: diag_rates_fast(rows, cols, phi, psi, lam, out), repeats), "speed of light"),
             ("z-step alone (own pass)", zcpu,
              f"{1e9 * zcpu / (M * K):.2f} ns per customer and atom (M K+ = {M * K:,.0f})"),
             ("birth-death moves alone (own pass)", mcpu,
              f"{1e9 * mcpu / (rows.size * K):.2f} ns per one of X and atom (nnz K+ = {rows.size * K:,.0f})")]
    report(f"IDEPM after {settle} settling sweeps, K+ = {K}, M = {M:,}, "
           f"alpha1 = {h[0]:.3g}, alpha2 = {h[1]:.3g}, gamma0 = {h[2]:.3g}", tm, repeats, extra)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--dataset", default="ml1m", choices=sorted(bench.DATASETS))
    p.add_argument("--T", type=int, nargs="+", default=[128])
    p.add_argument("--models", nargs="+", default=["EPM", "CEPM", "DEPM", "IDEPM"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--settle", type=int, default=100)
    p.add_argument("--K-init", type=int, default=None, help="IDEPM initial atoms (default: fit's)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    X, what = bench.get_matrix(a.dataset, a.data_dir)
    info = bench.machine()
    print(f"# step profile, one core ({info['cpu']}, load average {info['load_avg_1min']}), {info['date']}, "
          f"epm_lib commit {info['epm_lib_commit']}")
    print(f"# {a.dataset}: {what}")
    for model in a.models:
        if model == "IDEPM":
            profile_idepm(X, a.repeats, a.settle, a.seed, a.K_init)
        else:
            for T in a.T:
                profile_truncated(X, model, T, a.repeats, a.warmup, a.seed)


if __name__ == "__main__":
    main()
