"""Geweke's "getting it right" test of the samplers (``chapters/15_checking_samplers``).

Two ways of drawing (parameters, data) from the same joint distribution
{cite:p}`geweke2004`:

- *marginal-conditional*: hyperparameters from their prior, parameters from
  theirs, then data, all forward (``prior_draws``);
- *successive-conditional*: alternate one Gibbs sweep of the sampler
  (parameters | data) with a fresh draw of the data (data | parameters)
  (``successive_draws``).

If every conditional of the sweep is right, both give the same distribution
of any statistic; a wrong conditional moves the successive chain to another
stationary law. ``compare`` turns each statistic into indicators
1(stat <= q) at the prior's quartiles q (bounded, so their means have finite
variance even for heavy-tailed statistics) and returns z-scores whose
standard errors account for the chain's autocorrelation (batch means).

Small problems (a few rows and columns, T of 2-4) and a moderately informative
hyperprior Gamma(e0, f0) keep both simulators fast and well mixed; the
samplers run with the same e0, f0.

At these sizes the split-merge moves (``split_merge``) have little to do (most data sets have
fewer than two customers), so this test barely sees them; ``exactness.partition_test`` checks
the move kernel alone against the enumerated conditional of the seating.
"""
from __future__ import annotations

import numpy as np

from .distributions import cepm_grid
from .interrupt import deferred_sigint
from .models import gamma_epm, depm, idepm, moves, moves_mutants
from .models.common import sample_latent_counts  # noqa: F401  (the m-step the sweeps call)

__all__ = ["prior_draws", "successive_draws", "compare", "STATS"]

#: statistics recorded per model (hyperparameters, then summaries of the latent structure and the data)
STATS = {
    "EPM": ("a1", "b1", "a2", "b2", "gamma0", "c0", "lam_sum", "K", "M", "ones"),
    "CEPM": ("a1", "a2", "gamma0", "c0", "lam_sum", "K", "M", "ones"),
    "DEPM": ("alpha1", "alpha2", "gamma0", "c0", "lam_sum", "phi00", "K", "M", "ones"),
    "IDEPM": ("alpha1", "alpha2", "gamma0", "c0", "K", "M", "ones"),
}
#: truncation used to draw the IDEPM's infinitely many unused atoms (a DEPM with this T)
IDEPM_REST_ATOMS = 500


def _cepm_grid_prior(e0, f0):
    g = cepm_grid()
    lw = (e0 - 1.0) * np.log(g) - f0 * g
    p = np.exp(lw - lw.max())
    return g, p / p.sum()


def _hyper_prior(model, rng, e0, f0):
    if model == "EPM":
        return rng.gamma(e0, 1.0 / f0, size=6)
    if model == "CEPM":
        g, p = _cepm_grid_prior(e0, f0)
        a1, a2 = rng.choice(g, p=p), rng.choice(g, p=p)
        gamma0, c0 = rng.gamma(e0, 1.0 / f0, size=2)
        return np.array([a1, np.nan, a2, np.nan, gamma0, c0])
    return rng.gamma(e0, 1.0 / f0, size=4)


def _params_prior(model, rng, h, I, J, T):
    if model in ("EPM", "CEPM"):
        a1, b1, a2, b2, gamma0, c0 = h
        if model == "CEPM":
            b1, b2 = I * a1, J * a2
            h[1], h[3] = b1, b2
        U = rng.gamma(a1, 1.0 / b1, size=(I, T))
        V = rng.gamma(a2, 1.0 / b2, size=(J, T))
        lam = rng.gamma(gamma0 / T, 1.0 / c0, size=T)
        return U, V, lam
    alpha1, alpha2, gamma0, c0 = h
    phi = _dirichlet_columns(rng, alpha1, I, T)
    psi = _dirichlet_columns(rng, alpha2, J, T)
    lam = rng.gamma(gamma0 / T, 1.0 / c0, size=T)
    return phi, psi, lam


def _dirichlet_columns(rng, alpha, n, T):
    g = rng.gamma(alpha, size=(n, T))
    s = g.sum(axis=0)
    bad = s <= 0          # all components underflowed: fall back to the log-space draw
    if bad.any():
        from .distributions import sample_dirichlet
        for k in np.flatnonzero(bad):
            col = np.empty(n)
            sample_dirichlet(rng, np.full(n, alpha), col)
            g[:, k] = col
            s[k] = 1.0
    return g / s


def _data(rng, R, C, lam):
    m = rng.poisson(R[:, None, :] * C[None, :, :] * lam[None, None, :])
    return m


def _record(out, t, model, h, lam, m, extra=None):
    names = STATS[model]
    hn = gamma_epm.HYPER_NAMES if model in ("EPM", "CEPM") else depm.HYPER_NAMES
    vals = dict(zip(hn, h))
    if lam is not None:
        vals["lam_sum"] = lam.sum()
    vals["K"] = np.count_nonzero(m.sum(axis=(0, 1)))
    vals["M"] = m.sum()
    vals["ones"] = np.count_nonzero(m.sum(axis=2))
    if extra:
        vals.update(extra)
    for n in names:
        out[n][t] = vals[n]


def prior_draws(model, n, *, I=4, J=3, T=3, e0=2.0, f0=2.0, seed=0):
    """Marginal-conditional simulator: ``n`` independent forward draws; returns {stat: array}."""
    rng = np.random.default_rng(seed)
    out = {s: np.empty(n) for s in STATS[model]}
    for t in range(n):
        h = _hyper_prior(model, rng, e0, f0)
        if model == "IDEPM":
            phi, psi, lam = _params_prior("DEPM", rng, h, I, J, IDEPM_REST_ATOMS)
            m = _data(rng, phi, psi, lam)
            _record(out, t, model, h, None, m)
        else:
            R, C, lam = _params_prior(model, rng, h, I, J, T)
            m = _data(rng, R, C, lam)
            extra = {"phi00": R[0, 0]} if model == "DEPM" else None
            _record(out, t, model, h, lam, m, extra)
    return out


def _ones(m):
    x = m.sum(axis=2) > 0
    rows, cols = np.nonzero(x)
    return rows.astype(np.int64), cols.astype(np.int64)


def _seating_from_counts(m, rows, cols):
    """Seating (offsets, z) of the customers of m (I x J x K) at the given ones; atoms relabelled 0..K+-1."""
    m_k = m.sum(axis=(0, 1))
    used = np.flatnonzero(m_k)
    relabel = np.full(m.shape[2], -1)
    relabel[used] = np.arange(used.size)
    counts = m[rows, cols][:, used]                  # (nnz, K+)
    offsets = np.concatenate([[0], np.cumsum(counts.sum(axis=1))]).astype(np.int64)
    z = np.repeat(np.tile(np.arange(used.size), rows.size), counts.ravel()).astype(np.int64)
    return offsets, z


def successive_draws(model, n, *, I=4, J=3, T=3, e0=2.0, f0=2.0, seed=0, a_update="exact",
                     m_step="exact", split_merge=0, mask=None, moves_mutation=0):
    """Successive-conditional simulator: ``n`` alternations of data | parameters and one sweep.

    ``a_update="paper"`` (EPM, CEPM) runs the a-updates as printed in the paper;
    ``m_step="paper"`` (IDEPM) runs the paper's m-step instead of the exact one;
    ``split_merge`` (IDEPM, DEPM): split-merge proposals per sweep (``models.moves``), as in ``fit``;
    ``mask`` (boolean I x J): entries missing from the data, as ``fit(mask=...)``: the sweeps see
    the ones outside the mask and the masked entries as missing (their counts drawn from the
    Poisson, not the zero-truncated one);
    ``moves_mutation`` (IDEPM with ``split_merge > 0``; tests and chapter 15 only): run the moves
    with a deliberately wrong acceptance ratio, a mutant of ``models.moves_mutants``
    (1: the merge without its reverse split's probability), to measure the test's power
    against it.
    """
    with deferred_sigint() as guard:         # Ctrl-C between sweeps, never inside a kernel call
        return _successive_draws(model, n, I=I, J=J, T=T, e0=e0, f0=f0, seed=seed, a_update=a_update,
                                 m_step=m_step, split_merge=split_merge, mask=mask,
                                 moves_mutation=moves_mutation, guard=guard)


def _successive_draws(model, n, *, I, J, T, e0, f0, seed, a_update, m_step, split_merge, mask,
                      moves_mutation, guard):
    if moves_mutation and (model != "IDEPM" or not split_merge):
        raise ValueError("moves_mutation needs the IDEPM with split_merge > 0")
    if mask is None:
        mask = np.zeros((I, J), dtype=bool)
    mrows, mcols = (a.astype(np.int64) for a in np.nonzero(mask))

    def entries(m):                      # observed ones, then the missing entries; and how many ones
        x = (m.sum(axis=2) > 0) & ~mask
        r, c = (a.astype(np.int64) for a in np.nonzero(x))
        return np.concatenate([r, mrows]), np.concatenate([c, mcols]), r.size
    rng = np.random.default_rng(seed)
    out = {s: np.empty(n) for s in STATS[model]}
    h = _hyper_prior(model, rng, e0, f0)
    paper = a_update == "paper"
    grid = cepm_grid()
    if model == "IDEPM":
        phi, psi, lam = _params_prior("DEPM", rng, h, I, J, IDEPM_REST_ATOMS)
        m = _data(rng, phi, psi, lam)
        rows, cols, n_ones = entries(m)
        offsets, z = _seating_from_counts(m, rows, cols)
        for t in range(n):
            if rows.size:
                counts = idepm.seat_counts(rows, cols, offsets, z, I, J, int(z.max()) + 1 if z.size else 1)
                offsets, z, *counts, _ = idepm.idepm_sweep(rng, rows, cols, offsets, z, *counts, I, J, h,
                                                           e0, f0, m_step == "exact", 1, n_ones)
                if split_merge and moves_mutation:      # wrong on purpose (see the docstring)
                    z, *_ = moves_mutants.split_merge_idepm(
                        rng, rows, cols, offsets, z, *counts, I, J, h[0], h[1], h[2],
                        np.int64(split_merge), np.int64(moves.DEFAULT_N_SCANS),
                        np.int64(moves.DEFAULT_UNITS), np.int64(moves_mutation))
                elif split_merge:
                    z, *_ = moves.split_merge_idepm(rng, rows, cols, offsets, z, *counts, I, J,
                                                    h[0], h[1], h[2], split_merge)
            else:   # no ones: nothing to seat; the hyperparameters still move
                idepm_empty_sweep(rng, I, J, h, e0, f0)
            m = _idepm_data(rng, rows, cols, offsets, z, I, J, h)
            rows, cols, n_ones = entries(m)
            offsets, z = _seating_from_counts(m, rows, cols)
            _record(out, t, model, h, None, m)
            guard.check()
        return out
    R, C, lam = _params_prior(model, rng, h, I, J, T)
    m_ik = np.zeros((I, T), dtype=np.int64)
    m_jk = np.zeros((J, T), dtype=np.int64)
    m_k = np.zeros(T, dtype=np.int64)
    for t in range(n):
        m = _data(rng, R, C, lam)
        extra = {"phi00": R[0, 0]} if model == "DEPM" else None
        _record(out, t, model, h, lam, m, extra)
        rows, cols, n_ones = entries(m)
        if model == "DEPM":
            depm.depm_sweep(rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k, e0, f0, split_merge,
                            None, n_ones)
        else:
            gamma_epm.epm_sweep(rng, rows, cols, R, C, lam, h, m_ik, m_jk, m_k, e0, f0,
                                model == "CEPM", float(I), float(J), paper, grid, n_ones)
        guard.check()
    return out


def idepm_empty_sweep(rng, I, J, h, e0, f0):
    """The IDEPM sweep when X has no ones (no customers, K+ = 0): only hyperparameters move."""
    h[0] = rng.gamma(e0, 1.0 / f0)          # alpha1: no atoms, so its conditional is its prior
    h[1] = rng.gamma(e0, 1.0 / f0)
    h[2] = idepm.sample_gamma0_idepm(rng, 0, h[3], e0, f0)
    h[3] = idepm.sample_c0_idepm(rng, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), 0,
                                 h[2], h[3], e0, f0)


def _idepm_data(rng, rows, cols, offsets, z, I, J, h):
    """Data | (seating, hyperparameters) for the IDEPM, exactly: the active atoms' phi, psi,
    lambda from their posterior, the unused atoms from ΓP(gamma0, c0 + 1) with prior columns
    (truncated at IDEPM_REST_ATOMS), then fresh counts on every entry."""
    alpha1, alpha2, gamma0, c0 = h
    K = int(z.max()) + 1 if z.size else 0
    n_ik = np.zeros((I, K)); n_jk = np.zeros((J, K)); n_k = np.zeros(K)
    e = np.repeat(np.arange(rows.size), np.diff(offsets))
    np.add.at(n_ik, (rows[e], z), 1); np.add.at(n_jk, (cols[e], z), 1); np.add.at(n_k, z, 1)
    keep = n_k > 0
    n_ik, n_jk, n_k = n_ik[:, keep], n_jk[:, keep], n_k[keep]
    phi_a = _dirichlet_post(rng, alpha1 + n_ik)
    psi_a = _dirichlet_post(rng, alpha2 + n_jk)
    lam_a = rng.gamma(n_k, 1.0 / (c0 + 1.0))
    L = IDEPM_REST_ATOMS
    phi_r = _dirichlet_columns(rng, alpha1, I, L)
    psi_r = _dirichlet_columns(rng, alpha2, J, L)
    lam_r = rng.gamma(gamma0 / L, 1.0 / (c0 + 1.0), size=L)
    phi = np.hstack([phi_a, phi_r]); psi = np.hstack([psi_a, psi_r]); lam = np.concatenate([lam_a, lam_r])
    return _data(rng, phi, psi, lam)


def _dirichlet_post(rng, conc):
    g = rng.gamma(conc)
    return g / g.sum(axis=0)


def compare(prior, succ, *, n_batches=50):
    """z-scores of P(stat <= q) between the two simulators, at the prior's quartiles q.

    Returns a list of (stat, quantile level, prior frequency, successive frequency, z).
    The successive chain's standard error uses ``n_batches`` batch means.
    """
    rows = []
    for s in prior:
        a, b = np.asarray(prior[s]), np.asarray(succ[s])
        for level in (0.25, 0.5, 0.75):
            q = np.quantile(a, level)
            ia, ib = (a <= q).astype(float), (b <= q).astype(float)
            if ia.std() == 0 and ib.std() == 0:
                continue
            var_a = ia.var() / ia.size
            nb = ib.size // n_batches
            bm = ib[: nb * n_batches].reshape(n_batches, nb).mean(axis=1)
            var_b = bm.var(ddof=1) / n_batches
            z = (ia.mean() - ib.mean()) / np.sqrt(var_a + var_b + 1e-300)
            rows.append((s, level, ia.mean(), ib.mean(), z))
    return rows
