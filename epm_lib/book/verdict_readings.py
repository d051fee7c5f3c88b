"""The readings of chapters 26 and 26b (the verdicts on H1-H3) computed from the records: what the
chapters print and glue, and the claims their text makes, each returned by name as True or False
(``claims``; the chapters assert that all hold).

- :func:`enron_verdict_reading`: chapter 26's discussion of Enron09 (600 sweeps, both EPM updates);
- :func:`converged_changes`: chapter 26b's verdicts on converged chains beside the 600-sweep ones
  on the same folds, one row per data set (:func:`changes_outputs`: what the chapter shows);
- :func:`converged_reading`: chapter 26b's reading of Enron09's converged records (the parts
  supported, those that change, how far the starts still are apart) and its opening box;
- :func:`region_reading`: chapter 26b's reading of MovieLens100K from the data's start and from one
  atom (``regions.region_verdicts``) and its opening box.

A box is ``[(name, value, digits), ...]`` for ``notebook.key_result``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..chains import agree
from .records import CONVERGED_MODELS, METRICS, on_folds, start_means
from .tables import best_T
from .verdicts import PART_ORDER, compare, h3_level, verdict_changes

__all__ = ["enron_verdict_reading", "CHANGES_COLUMNS", "converged_changes", "changes_outputs",
           "converged_reading", "region_reading"]

_H1_PARTS = ("H1 K", "H1 K grows", "H1 K converges", "H1 TDLL", "H1 TDAUC-PR")


def _states(res, parts):
    return [res[p][0] for p in parts]


def enron_verdict_reading(recs, v, vp):
    """Chapter 26's statements on Enron09: ``recs`` its 600-sweep records, ``v`` and ``vp`` the
    ``verdict_parts`` of the exact samplers and of the printed EPM update. Returns
    ``(numbers, lines, claims)``; ``numbers["dI"]`` is the IDEPM - best DEPM-T TDLL difference
    (mean, SE, folds)."""
    dI = compare(recs, "IDEPM", None, "DEPM", best_T(recs, "DEPM", "tdll")[0], "tdll")
    dDE = compare(recs, "DEPM", 128, "EPM", 128, "tdll")
    dCE = compare(recs, "CEPM", 128, "EPM", 128, "tdll")
    aDE = compare(recs, "DEPM", 128, "EPM", 128, "tdauc_pr")
    aCE = compare(recs, "CEPM", 128, "EPM", 128, "tdauc_pr")
    kEC = compare(recs, "EPM", 128, "CEPM", 128, "K_mean")
    kED = compare(recs, "EPM", 128, "DEPM", 128, "K_mean")
    claims = {
        "H1, H2, H3 not supported": _states(v, ("H1", "H2", "H3 (TDLL, TDAUC-PR)")) == [False, False, False],
        "H3 on TDAUC-PR only": _states(v, ("H3 TDLL", "H3 TDAUC-PR")) == [False, True],
        "the IDEPM ahead on TDLL by less than one standard error": bool(0 < dI[0] < dI[1]),
        "H1's parts, exact samplers": _states(v, _H1_PARTS) == [False, True, False, False, False],
        "H1's parts, printed update": _states(vp, _H1_PARTS) == [True, True, False, True, True],
        "the DEPM-128 ahead of the EPM-128 on TDLL by less than 0.003, level on TDAUC-PR":
            bool(2 * dDE[1] < dDE[0] < 0.003 and abs(aDE[0]) < 2 * aDE[1]),
        "the CEPM-128 behind the EPM-128 on both scores": bool(dCE[0] < -2 * dCE[1] and aCE[0] < -2 * aCE[1]),
        "CEPM > EPM > DEPM in K at T = 128": bool(kEC[0] < -2 * kEC[1] and kED[0] > 2 * kED[1]),
        "the DEPM's best T: 16 (TDLL), 32 (TDAUC-PR)":
            best_T(recs, "DEPM", "tdll")[0] == 16 and best_T(recs, "DEPM", "tdauc_pr")[0] == 32,
        "the DEPM-128 clearly behind its best T": all(d < -2 * se for d, se, n in (
            compare(recs, "DEPM", 128, "DEPM", 16, "tdll"), compare(recs, "DEPM", 128, "DEPM", 32, "tdauc_pr"))),
        "H2 on TDLL and K only": _states(v, ("H2 TDLL", "H2 TDAUC-PR", "H2 K", "H2 DEPM-128 best"))
            == [True, False, True, False]}
    lines = ["Enron09: H1 not supported with the exact samplers; with the printed EPM update every H1 part but "
             "'K converges' (the CEPM's K) is supported; H2 supported on TDLL only; H3 supported on TDAUC-PR, "
             f"on TDLL the IDEPM leads the best DEPM by {dI[0]:+.4f} ± {dI[1]:.4f}"]
    return dict(dI=dI, dDE=dDE, dCE=dCE, aDE=aDE, aCE=aCE, kEC=kEC, kED=kED), lines, claims


#: the columns of :func:`converged_changes`
CHANGES_COLUMNS = ["dataset", "folds", "runs", "converged", "capped", "max_sweeps", "start_gap", "decided",
                   "changes"]


def converged_changes(data, conv, datasets):
    """The verdicts on converged chains beside the 600-sweep ones (``verdicts.verdict_changes``), for
    each data set of ``datasets`` with both kinds of records: one row per data set (``dataset``,
    ``folds`` (tuple: those with a converged record of every model present), ``runs``, ``converged``
    and ``capped`` (of the converged-protocol runs of :data:`CONVERGED_MODELS` on those folds),
    ``max_sweeps`` (the capped runs' sweeps, 0 if none), ``start_gap`` (the largest gap between the
    mean K of the starts of a capped run), ``decided`` (some part decided: two folds or more) and
    ``changes`` (the parts whose verdict changes, a tuple)). Returns ``(table, details)``,
    ``details`` {data set: (markdown table, parts that change, folds, (600-sweep, converged)
    verdict_parts)}."""
    rows, details = [], {}
    for d in datasets:
        if d not in conv or d not in data:
            continue
        table, flips, common, parts = details[d] = verdict_changes(data[d], conv[d])
        used = [r for r in conv[d] if r["fold"] in common and (r["model"], r["T"]) in CONVERGED_MODELS]
        capped = [r for r in used if not r["converged"]]
        rows.append({"dataset": d, "folds": tuple(common), "runs": len(used), "converged": sum(r["converged"] for r in used),
                     "capped": len(capped), "max_sweeps": max((r["sweeps"] for r in capped), default=0),
                     "start_gap": max((abs(np.subtract(*start_means(r))) for r in capped), default=0.0),
                     "decided": len(table.splitlines()) > 2, "changes": tuple(flips)})
    return pd.DataFrame(rows, columns=CHANGES_COLUMNS), details


def changes_outputs(table, details, datasets):
    """What chapter 26b shows of :func:`converged_changes`, in the order of ``datasets``: a list of
    ("print", text) and ("markdown", text)."""
    by = {r.dataset: r for r in table.itertuples()}
    out = []
    for d in datasets:
        if d not in by:
            out.append(("print", f"{d}: no converged-protocol records"))
            continue
        r = by[d]
        if not r.decided:
            out.append(("print", f"{d}: converged-protocol records for fold(s) {list(r.folds)} only ({r.converged} of "
                                 f"{r.runs} runs reached split-R-hat <= 1.01): no part is decided (a part needs two folds)"))
            continue
        out.append(("markdown", f"**{d}**, folds {', '.join(map(str, r.folds))} (those with a record of every model present): "
                                f"{r.converged} of {r.runs} runs *converged* (split-R̂ ≤ 1.01), {r.capped} *capped* at "
                                f"{r.max_sweeps:,} sweeps with the mean K of their two starts "
                                f"up to {r.start_gap:.1f} atoms apart\n\n" + details[d][0]))
        out.append(("print", f"{d}: parts that change between the protocols: {', '.join(r.changes) or 'none'}"))
    return out


def converged_reading(paper, conv, flips, common, parts):
    """Chapter 26b's reading of Enron09's converged records ``conv`` (``paper``: its 600-sweep
    records; ``flips``, ``common``, ``parts``: what ``verdicts.verdict_changes`` returned). Returns
    ``(numbers, lines, claims, box)``: ``numbers`` the parts decided, the growth of K from T to 128
    (``grow``: {(model, T): (mean, SE, folds)}) and the gaps between the starts (``gaps``:
    {(model, T): [K from one atom - K from many, per run]})."""
    h3 = h3_level(on_folds(conv, common), common)      # "best" once every DEPM-T has records
    before, after = parts
    decided = [p for p in PART_ORDER if after[p][0] is not None]
    lines = [f"Enron09, folds {common}, H3 against {'the best DEPM-T' if h3 == 'best' else 'the DEPM-128'}: "
             f"decided on converged chains: {', '.join(decided)}",
             "supported on converged chains: " + (", ".join(p for p in decided if after[p][0]) or "none"),
             "supported after 600 sweeps on the same folds, not on converged chains: "
             + ", ".join(p for p in flips if before[p][0]),
             "supported on converged chains, not after 600 sweeps: " + ", ".join(p for p in flips if after[p][0])]
    grow = {(m, T): compare(conv, m, 128, m, T, "K_mean") for m, T in (("EPM", 32), ("CEPM", 64), ("DEPM", 64))}
    lines.append("converged K(128) − K(T): " + ", ".join(f"{m} (T = {T}) {d:+.1f} ± {se:.1f}"
                                                          for (m, T), (d, se, n) in grow.items()))
    # how far the starts still are apart: mean K of the chains from one atom minus those from many, per run
    gaps = {mt: [np.subtract(*start_means(r)) for r in conv if (r["model"], r["T"]) == mt] for mt in grow}
    gaps.update({(m, 128): [np.subtract(*start_means(r)) for r in conv if (r["model"], r["T"]) == (m, 128)]
                 for m, _ in grow})
    lines.append("K from one atom − K from many, mean over the folds (largest in a fold): "
                 + ", ".join(f"{m}-{T} {np.mean(g):+.2f} ({max(map(abs, g)):.1f})" for (m, T), g in gaps.items()))
    for k in ("tdll", "tdauc_pr"):
        lines.append(f"best DEPM-T for {METRICS[k]}: 600 sweeps T = {best_T(on_folds(paper, common), 'DEPM', k)[0]}, "
                     f"converged T = {best_T(conv, 'DEPM', k)[0]}")
    supported = [p for p in decided if after[p][0]]
    claims = {
        "no systematic pull of the start": all(abs(np.mean(g)) < 0.5 for g in gaps.values()),
        "H3 against the best DEPM-T": h3 == "best",
        "the parts supported: K grows, DEPM-128 best": supported == ["H1 K grows", "H2 DEPM-128 best"],
        "the parts that change": set(flips) == {"H2 TDLL", "H2 K", "H2 DEPM-128 best", "H3 TDAUC-PR"},
        "lost on converged chains": all(before[p][0] and not after[p][0] for p in flips if p != "H2 DEPM-128 best"),
        "DEPM-128 best gained": bool(not before["H2 DEPM-128 best"][0] and after["H2 DEPM-128 best"][0]),
        "H3 on TDLL fails under both": bool(not before["H3 TDLL"][0] and not after["H3 TDLL"][0]),
        "K grows by a few atoms at most": all(d < 3 for d, se, n in grow.values())}
    used = [r for r in conv if r["fold"] in common and (r["model"], r["T"]) in CONVERGED_MODELS]
    box = [("n_conv", sum(r["converged"] for r in used), None), ("n_used", len(used), None),
           ("n_flip", len(flips), None), ("lost", ", ".join(p for p in flips if before[p][0]), None),
           ("gained", ", ".join(p for p in flips if after[p][0]), None),
           ("supported", " and ".join(f'"{p[3:]}"' for p in supported), None),
           ("k_grow", grow["EPM", 32][0], 1), ("gap", max(abs(np.mean(g)) for g in gaps.values()), 1)]
    return dict(h3=h3, decided=decided, grow=grow, gaps=gaps), lines, claims, box


def region_reading(R, table, pref):
    """Chapter 26b's reading of MovieLens100K from the data's start and from one atom: ``R`` the
    data-start records (``regions.load_datastart``), ``table`` the first return value of
    ``regions.region_verdicts``, ``pref`` ``regions.preference(R)``. Returns
    ``(numbers, lines, claims, box)``; ``numbers["K"]`` is a tidy table of each start's pooled K per
    run (``model``, ``T``, ``fold``, ``start``, ``K``)."""
    v = table.set_index("part")["verdict"]
    decided = [p for p in v.index if v[p] in ("✓", "✗")]
    is_open = [p for p in v.index if v[p] == "open"]
    by = table.set_index("part")["decided by"]
    rows = [(r["model"], r["T"], r["fold"], lab, g["K_mean"]) for r in R for lab, g in r["groups"].items()]
    K = pd.DataFrame(rows, columns=["model", "T", "fold", "start", "K"])
    K["T"] = pd.Series([row[1] for row in rows], index=K.index, dtype=object)      # the IDEPM's T: None

    def k_mean(m, T, lab):          # mean over the folds of a start's pooled K
        return float(np.mean([x for mm, TT, f, ll, x in rows if (mm, TT, ll) == (m, T, lab)]))

    trapped = {m: k_mean(m, T, "1") for m, T in (("EPM", 128), ("DEPM", 128), ("IDEPM", None))}
    agree_data = sum(all(agree(r["groups"]["data"]["diagnostics"][x]) for x in ("K", "tdll")) for r in R)
    six = table.set_index("part")["600 sweeps"]
    spread = [max(r["chains"][c]["K_mean"] for c in r["groups"]["data"]["chains"])
              - min(r["chains"][c]["K_mean"] for c in r["groups"]["data"]["chains"]) for r in R if (r["T"] or 999) >= 32]
    lines = [f"decided {len(decided)} of {len(v)} parts ({sum(by == 'both regions')} by both regions, "
             f"{sum(by.str.endswith('agree'))} by the preferred region's chains), open {len(is_open)}: {', '.join(is_open) or 'none'}",
             "K from one atom at T = 128 (the IDEPM: untruncated): " + ", ".join(f"{m} {k:.1f}" for m, k in trapped.items())
             + f"; CEPM-128 {k_mean('CEPM', 128, '1'):.1f}",
             "K from the data's start at T = 128: " + ", ".join(f"{m} {k_mean(m, 128, 'data'):.1f}" for m in ("EPM", "CEPM", "DEPM"))
             + f", IDEPM {k_mean('IDEPM', None, 'data'):.1f}",
             f"runs whose two data-start chains agree (split-R-hat <= 1.01 on K and TDLL): {agree_data} of {len(R)}",
             "parts whose verdict differs from the 600-sweep runs' on the same folds: "
             + ", ".join(f"{q} ({six[q]} -> {v[q]})" for q in v.index if six[q] != v[q]),
             f"T >= 32 and the IDEPM: K of the two data-start chains apart by {np.median(spread):.1f} atoms "
             f"(median over runs), {max(spread):.1f} at most"]
    weight = pref.set_index("model").loc["all", "stacking weight of the data's start"]
    claims = {
        "every part decided, the data's start preferred": bool(not is_open and weight > 0.5),
        "H3 supported on both scores": {"H3 TDLL", "H3 TDAUC-PR"} <= {q for q in decided if v[q] == "✓"},
        "H1 and H2 not supported": all(v[q] == "✗" for q in ("H1", "H2", "H2 TDLL", "H2 TDAUC-PR", "H2 K")),
        "only runs at T <= 4 converged; the data-start chains agree in under a third":
            all(r["T"] is not None and r["T"] <= 4 for r in R if r["converged"]) and 3 * agree_data < len(R),
        "one atom traps the EPM, DEPM and IDEPM, not the CEPM": max(trapped.values()) < 3.5 and k_mean("CEPM", 128, "1") > 15}
    box = [("ml_runs", len(R), None), ("ml_conv", sum(r["converged"] for r in R), None), ("ml_w", float(weight), 2),
           ("ml_decided", len(decided), None), ("ml_parts", len(v), None),
           ("ml_supported", ", ".join(p for p in decided if v[p] == "✓") or "none", None),
           ("ml_open", ", ".join(is_open) or "none", None), ("ml_trap", max(trapped.values()), 1),
           ("ml_data_agree", agree_data, None)]
    return dict(decided=decided, open=is_open, K=K, trapped=trapped, agree_data=agree_data, spread=spread), \
        lines, claims, box
