"""The landing page's numbers (``intro.ipynb``): what the book finds, computed from the stored
records, each part with the claims the page makes about it (``claims``: {statement: bool}; the page
asserts that all hold).

- :func:`converged_curve`: (a) Enron09 on converged chains: the truncated models on one curve, the
  runs converged or capped, the verdicts that change between the protocols (chapters 22, 26b);
- :func:`movielens_regions`: (b) MovieLens100K from the data's start and from one atom (chapters 22c,
  26b), and MovieLens1M's truncated chains pinned at T;
- :func:`printed_update`: (c) erratum E3, the printed a-update under the converged protocol (chapter 23);
- :func:`baselines_and_starts`: (d) the IDEPM against a truncated SVD (chapter 26b) and the data's
  start against the paper's on planted partitions (``benchmarks/bench_starts.py``);
- :func:`claims_table`, :func:`verdicts_note`, :func:`findings_table`: the page's three tables (markdown).

Each of the first four returns a dict of its numbers with the key ``claims``.
"""
from __future__ import annotations

import numpy as np

from ..experiments import PAPER_T
from .records import PART3_DATASETS, baseline_values, on_folds, start_means, values
from .regions import preference, region_verdicts
from .start_benchmarks import planted_scores
from .tables import best_T, clear, md_table, mean_se, model_spread, paired
from .verdicts import compare, verdict_changes, verdict_parts

__all__ = ["TRUNC", "pm", "converged_curve", "movielens_regions", "printed_update", "baselines_and_starts",
           "claims_table", "verdicts_note", "findings_table"]

#: the truncated models of Fig. 2
TRUNC = ("EPM", "CEPM", "DEPM")
_MARK = {True: "✓", False: "✗", None: "–"}
_CLAIMS = (("H1", "**H1**: the EPM overestimates $K$ and predicts worse"),
           ("H2", "**H2**: the DEPM predicts better than the CEPM"),
           ("H3 (TDLL, TDAUC-PR)", "**H3**: the IDEPM predicts better than every DEPM"))


def pm(d, dg):
    """A paired difference (mean, SE, ...) as "mean ± SE" to ``dg`` decimals; a mean that rounds to
    zero is written without a sign."""
    mean = f"{d[0]:+.{dg}f}" if round(d[0], dg) != 0 else f"{0:.{dg}f}"
    return f"{mean} ± {d[1]:.{dg}f}"


def converged_curve(E6, C6):
    """(a) Enron09's 600-sweep records ``E6`` and converged records ``C6``: ``n_agree`` of ``n_runs``
    runs (EPM, CEPM, DEPM, IDEPM) converged, the others capped at ``cap_sweeps`` with their starts at
    most ``gap`` atoms apart (``records.start_means``); ``dK``, ``dL``: the largest spread between the
    truncated models' mean K and TDLL over T (``tables.model_spread``); ``K128`` (converged) and
    ``K600`` at T = 128; the verdicts that change (``flips``, ``folds``, ``before``, ``after``:
    ``verdicts.verdict_changes``) and ``flip``: the numbers of three of them under each protocol."""
    grid = [r for r in C6 if r["model"] in TRUNC + ("IDEPM",)]
    rest = [r for r in grid if not r["converged"]]                      # stopped at the cap on sweeps
    cap = {r["settings"]["max_sweeps"] for r in grid}
    n = dict(n_agree=sum(r["converged"] for r in grid), n_runs=len(grid), cap_sweeps=next(iter(cap)),
             gap=max(abs(np.subtract(*start_means(r))) for r in rest),
             dK=max(model_spread(C6, TRUNC, "K_mean").values()), dL=max(model_spread(C6, TRUNC, "tdll").values()),
             K128={m: mean_se(values(C6, m, 128, "K_mean"))[0] for m in TRUNC}
             | {"IDEPM": mean_se(values(C6, "IDEPM", None, "K_mean"))[0]},
             K600={m: mean_se(values(E6, m, 128, "K_mean"))[0] for m in TRUNC})
    _, flips, folds, (before, after) = verdict_changes(E6, C6)
    same = on_folds(E6, folds)                                          # the 600-sweep runs of the same folds
    n.update(flips=flips, folds=folds, before=before, after=after)
    n["flip"] = {name: {"H2 TDLL": pm(compare(recs, "DEPM", 128, "CEPM", 128, "tdll"), 4),
                        "H2 K": pm(compare(recs, "CEPM", 128, "DEPM", 128, "K_mean"), 1),
                        "H3 TDAUC-PR": pm(compare(recs, "IDEPM", None, "DEPM", best_T(recs, "DEPM", "tdauc_pr")[0],
                                                  "tdauc_pr"), 3)}
                 for name, recs in (("600", same), ("conv", C6))}
    n["claims"] = {
        "one cap, reached by every capped run": len(cap) == 1 and all(r["sweeps"] == r["settings"]["max_sweeps"]
                                                                      for r in rest),
        "ten folds; one curve; the starts within 3 atoms":
            bool(folds == list(range(10)) and n["dK"] < 1 and n["dL"] < 0.001 and n["gap"] < 3),
        "the parts that change": set(flips) == {"H2 TDLL", "H2 K", "H3 TDAUC-PR", "H2 DEPM-128 best"},
        "three parts lost": all(before[p][0] and not after[p][0] for p in ("H2 TDLL", "H2 K", "H3 TDAUC-PR")),
        "one part gained": bool(not before["H2 DEPM-128 best"][0] and after["H2 DEPM-128 best"][0]),
        "H1 fails under both protocols": before["H1"][0] is False and after["H1"][0] is False}
    return n


def movielens_regions(ml100k, ml1m, R):
    """(b) MovieLens100K's 600-sweep records ``ml100k`` and data-start records ``R``
    (``regions.load_datastart``): the verdict per part (``ml_verdict``, a Series), the stacking weight
    of the data's start (``ml_weight``), runs converged and the cap (``ml_conv``, ``ml_sweeps``), the
    parts decided (``ml_decided``); ``pinned``: the smallest K / T of MovieLens1M's truncated chains
    (``ml1m``) after 600 sweeps."""
    ml_table, _, ml_info = region_verdicts(ml100k, R)
    v = ml_table.set_index("part")["verdict"]
    n = dict(ml_verdict=v, ml_info=ml_info, n_runs=len(R),
             ml_weight=preference(R).set_index("model").loc["all", "stacking weight of the data's start"],
             ml_conv=sum(r["converged"] for r in R), ml_sweeps=max(r["sweeps"] for r in R),
             pinned=min(mean_se(values(ml1m, m, T, "K_mean"))[0] / T for m in TRUNC for T in PAPER_T),
             ml_decided=int(v.isin(["✓", "✗"]).sum()))
    n["claims"] = {
        "three folds or more; MovieLens1M's chains pinned at T": len(ml_info["folds"]) >= 3 and n["pinned"] > 0.99,
        "H3 supported, H1 and H2 not":
            [v[p] for p in ("H1", "H2", "H3 (TDLL, TDAUC-PR)", "H3 TDLL", "H3 TDAUC-PR")] == ["✗", "✗", "✓", "✓", "✓"],
        "the data's start is preferred": bool(n["ml_weight"] > 0.5)}
    return n


def printed_update(C6):
    """(c) The printed a-update (EPMpaper) at T = 128 under the converged protocol (Enron09's
    converged records ``C6``), on its folds (``f3``): its K and the exact EPM's (``Kp``, ``Ke``), the
    paired TDLL difference (``dL3``), the mean K of its chains from the fewest and the most atoms
    (``few3``, ``many3``)."""
    f3 = sorted(r["fold"] for r in C6 if r["model"] == "EPMpaper" and r["T"] == 128)
    c3 = on_folds(C6, f3)
    Kp, Ke = (mean_se(values(c3, m, 128, "K_mean"))[0] for m in ("EPMpaper", "EPM"))
    dL3 = compare(c3, "EPMpaper", 128, "EPM", 128, "tdll")
    few3, many3 = np.mean([start_means(r) for r in c3 if r["model"] == "EPMpaper" and r["T"] == 128], axis=0)
    claims = {"more than three times the atoms, a clearly lower TDLL, consecutive folds":
                  bool(Kp > 3 * Ke and dL3[0] < -2 * dL3[1] and f3 == list(range(f3[0], f3[-1] + 1))),
              "from one atom or from 128: the same place": bool(abs(few3 - many3) < 3 < Kp - 3 * Ke)}
    return dict(f3=f3, Kp=Kp, Ke=Ke, dL3=dL3, few3=few3, many3=many3, claims=claims)


def baselines_and_starts(data, base, planted_json, datasets=PART3_DATASETS):
    """(d) The IDEPM - truncated SVD paired differences of TDLL and TDAUC-PR per data set (``vs``:
    {(data set, metric): (mean, SE, folds)}; ``data``, ``base``: the 600-sweep and baseline records
    per data set) and the planted-partition benchmark (``planted_json``, the parsed
    ``benchmarks/starts_planted.json``): mean AUC-PR per model and start (``starts``: {"data" | "paper":
    [IDEPM, DEPM, EPM]}), the SVD's, and the number of planted networks (``n_planted``)."""
    vs = {(d, k): paired(values(data[d], "IDEPM", None, k), baseline_values(base[d], "svd-auto", k))
          for d in datasets for k in ("tdll", "tdauc_pr")}
    planted = {k: mean_se(v) for k, v in planted_scores(planted_json).items()}
    starts = {s: [planted[f"{m}/{s}"][0] for m in ("IDEPM", "DEPM", "EPM")] for s in ("data", "paper")}
    claims = {
        "the IDEPM's TDLL clearly above the SVD's everywhere": all(clear(*vs[d, "tdll"][:2]) == "clearly higher"
                                                                   for d in datasets),
        "its TDAUC-PR clearly above on Enron09": clear(*vs["enron09", "tdauc_pr"][:2]) == "clearly higher",
        "... and not on MovieLens": all(clear(*vs[d, "tdauc_pr"][:2]) != "clearly higher"
                                        for d in ("movielens100k", "movielens1m")),
        "the paper's start at chance, the data's above the SVD":
            bool(max(starts["paper"]) < 0.1 < planted["SVD"][0] < min(starts["data"]))}
    return dict(vs=vs, planted=planted, starts=starts, n_planted=planted["SVD"][2], claims=claims)


def claims_table(E6, a, b):
    """The page's table of H1-H3: Enron09 after the paper's 600 sweeps (``verdicts.verdict_parts`` of
    ``E6``), Enron09 on chains run to agreement (``a``: :func:`converged_curve`) and MovieLens100K
    from the data's start (``b``: :func:`movielens_regions`)."""
    e600 = verdict_parts(E6)                                  # the paper's protocol, all ten folds (chapter 26)
    return md_table(
        ["claim", "Enron09, the paper's 600 sweeps", "Enron09, chains run to agreement", "MovieLens100K, from the data's start"],
        [[text, _MARK[e600[p][0]], _MARK[a["after"][p][0]], b["ml_verdict"][p]] for p, text in _CLAIMS])


def verdicts_note(b):
    """The note under :func:`claims_table`: what ✓ and ✗ mean, and how many MovieLens parts are decided."""
    return ("✓ supported, ✗ not supported: each claim is split into measurable parts, and a part is supported when every "
            "paired difference over the folds it needs is *clear* (more than two standard errors) in the claimed direction "
            "({doc}`chapters/26_verdict`). On MovieLens a part is *decided* where the chains from the data's start and from "
            "one atom agree, or each chain of the region the held-out pairs prefer does "
            f"({b['ml_decided']} of {len(b['ml_verdict'])} parts are).")


def findings_table(a, b, c, d):
    """The page's table "What the book finds" (markdown, under its bold title), from (a)-(d)."""
    vs = d["vs"]
    findings = [
        ["**On chains run to agreement, the truncated models draw one curve**",
         f"Enron09: mean $K$ within {a['dK']:.1f} atoms and TDLL within {a['dL']:.4f} nats per entry at every $T$; "
         f"{a['n_agree']} of {a['n_runs']} runs *converged*, the rest *capped* at {a['cap_sweeps']:,} sweeps with their "
         f"starts at most {a['gap']:.1f} atoms apart",
         "{doc}`chapters/22_fig2_truncation`"],
        ["**The paper's 600 sweeps describe its start**",
         f"on Enron09 chains run to agreement take away three supported parts and grant one (H2 TDLL: "
         f"{a['flip']['600']['H2 TDLL']} → {a['flip']['conv']['H2 TDLL']}); on MovieLens1M no truncated chain drops below "
         f"{np.floor(100 * b['pinned']):.0f}% of its $T$ atoms", "{doc}`chapters/26b_verdict_converged`"],
        ["**From the data's start, MovieLens100K supports H3, not H1 or H2**",
         f"the held-out pairs prefer that start (stacking weight {b['ml_weight']:.2f}); the EPM, CEPM and DEPM predict "
         f"alike, the IDEPM better than the best DEPM; {b['n_runs'] - b['ml_conv']} of {b['n_runs']} runs capped at "
         f"{b['ml_sweeps']:,} sweeps", "{doc}`chapters/22c_fig2_movielens`"],
        ["**Four printed sampler updates are wrong**",
         f"E3–E6: three fail Geweke's test, one is shown wrong by probability ratios; the printed EPM update keeps "
         f"{c['Kp']:.0f} of 128 atoms on Enron09, the exact one {c['Ke']:.0f}", "{doc}`chapters/errata`"],
        ["**For a practitioner, the IDEPM beats a truncated SVD in probabilities**",
         f"TDLL higher on all three data sets (Enron09 {vs['enron09', 'tdll'][0]:+.4f} ± {vs['enron09', 'tdll'][1]:.4f}); "
         "ranking of held-out links better only on Enron09", "{doc}`chapters/30_your_network`"]]
    return "**What the book finds**\n\n" + md_table(["finding", "the numbers", "chapter"], findings)
