"""Verdicts from two regions: the converged protocol's runs whose chains start from the data and
from one atom (``python -m epm_lib.experiments --converged --starts data data 1 1``).

On MovieLens the chains from the data's start and those from one atom settle in different regions
and do not meet within thousands of sweeps (chapter 25). A run of this protocol brackets the answer:
two chains from each start, run until every chain agrees (split-R-hat <= 1.01: *converged*) or a
cap (*capped*). Its record holds each start's chains pooled (``groups``), each chain alone
(``chains``) and the stacking weights the held-out entries give the two regions (``stacking``).

This module turns such records into what chapter 26b decides:

- :func:`region_records` / :func:`chain_records`: the records of one region, or of one chain, in
  the form of ``verdicts.verdict_parts`` (model, T, fold, K_mean, tdll, tdauc_pr), so that chapter
  26's criteria apply to each unchanged;
- :func:`preference`: which region the held-out entries prefer (mean stacking weight; how often a
  region's pooled TDLL is the higher);
- :func:`region_verdicts`: per part of H1-H3, the verdict of each region and of each chain of the
  preferred region, and the decision: a part is *decided* where both regions give the same verdict,
  or, where they differ, every chain of the preferred region gives the same verdict as that region;
  otherwise it is *open*;
- :func:`run_labels`: per run, *converged* or *capped* with the spread between its chains.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments import load_converged
from .records import CONVERGED_MODELS, EXPECTED_FOLDS, common_folds, on_folds
from .verdicts import PART_ORDER, h3_level, verdict_parts

__all__ = ["REGION_NAMES", "load_datastart", "check_datastart", "region_records", "chain_records",
           "preference", "region_verdicts", "run_labels", "MARK"]

#: How the tables name a start group of a record (``groups`` keys): the data's start, or n atoms.
REGION_NAMES = {"data": "data's start", "1": "one atom"}
#: A verdict in a table: supported, not supported, not decidable (a model with fewer than two folds).
MARK = {True: "✓", False: "✗", None: "–"}


def _region_name(label) -> str:
    return REGION_NAMES.get(label, f"{label} atoms")


def check_datastart(recs) -> int:
    """Check the records of one data set: one data fingerprint, at most one per (model, T, fold),
    each with chains from the data's start and from one other start (two groups of at least two
    chains, per-chain scores, stacking weights summing to 1). ``ValueError`` naming the run
    otherwise; returns the number checked."""
    if len({r["data"]["fingerprint"] for r in recs}) > 1:
        raise ValueError("data-start runs of different data (fingerprints differ)")
    seen = set()
    for r in recs:
        rid, key = r["run_id"], (r["model"], r["T"], r["fold"])
        if key in seen:
            raise ValueError(f"{rid}: a second data-start record of {key} (other settings?)")
        seen.add(key)
        groups, chains = r.get("groups") or {}, r.get("chains") or []
        if "data" not in groups or len(groups) != 2:
            raise ValueError(f"{rid}: needs chains from the data's start and from one other start, "
                             f"got groups {sorted(groups)}")
        for label, g in groups.items():
            if len(g["chains"]) < 2 or any(not 0 <= c < len(chains) for c in g["chains"]):
                raise ValueError(f"{rid}: the group {label!r} needs at least two chains of the record")
            if g["tdll"] is None or not g["tdll"] < 0:
                raise ValueError(f"{rid}: the group {label!r} has no finite TDLL")
        w = (r.get("stacking") or {}).get("weights") or {}
        if set(w) != set(groups) or abs(sum(w.values()) - 1) > 1e-6:
            raise ValueError(f"{rid}: stacking weights {w} are not one per group summing to 1")
    return len(recs)


def load_datastart(results_dir, dataset) -> list[dict]:
    """The converged-protocol records of ``dataset`` whose chains include the data's start (run ids
    ``...-datastart-converged``), checked (:func:`check_datastart`); [] if there are none."""
    recs = [r for r in load_converged(results_dir, dataset) if "data" in r["settings"]["starts"]]
    check_datastart(recs)
    return recs


def _other(rec) -> str:
    return next(k for k in rec["groups"] if k != "data")


def _as_record(rec, src, run_id):
    return {"model": rec["model"], "T": rec["T"], "fold": rec["fold"], "run_id": run_id,
            "K_mean": src["K_mean"], "tdll": src["tdll"], "tdauc_pr": src["tdauc_pr"]}


def region_records(recs, label) -> list[dict]:
    """One record per run for the chains of one start pooled (``label``: ``"data"``, or
    ``"other"`` for the run's other start), in the form ``verdicts.verdict_parts`` reads."""
    return [_as_record(r, r["groups"][_other(r) if label == "other" else label], r["run_id"]) for r in recs]


def chain_records(recs, label, i) -> list[dict]:
    """One record per run for the ``i``-th chain (0, 1, ...) of the start ``label`` alone."""
    out = []
    for r in recs:
        g = r["groups"][_other(r) if label == "other" else label]
        out.append(_as_record(r, r["chains"][g["chains"][i]], f"{r['run_id']}#chain{g['chains'][i]}"))
    return out


def preference(recs) -> pd.DataFrame:
    """Which region the held-out entries prefer, per model: runs, the mean stacking weight of the
    data's start's pooled prediction (the rest goes to the other start), and in how many runs the
    data's start's pooled TDLL is the higher. Last row: all runs."""
    rows = []
    groups = [(m, [r for r in recs if r["model"] == m]) for m in dict.fromkeys(r["model"] for r in recs)]
    for name, rs in groups + [("all", list(recs))]:
        if not rs:
            continue
        w = [r["stacking"]["weights"]["data"] for r in rs]
        higher = sum(r["groups"]["data"]["tdll"] > r["groups"][_other(r)]["tdll"] for r in rs)
        rows.append({"model": name, "runs": len(rs), "stacking weight of the data's start": round(float(np.mean(w)), 3),
                     "data's start has the higher TDLL": f"{higher} of {len(rs)}"})
    return pd.DataFrame(rows)


def preferred(recs) -> str:
    """``"data"`` if the mean stacking weight of the data's start over all runs is at least 1/2,
    else ``"other"``."""
    return "data" if np.mean([r["stacking"]["weights"]["data"] for r in recs]) >= 0.5 else "other"


def region_verdicts(paper, recs, parts=PART_ORDER):
    """Chapter 26's criteria applied to each region and to each chain of the preferred region, on
    the folds every model has a data-start run on (``records.common_folds``; H3 against the best
    DEPM-T when every T is there, ``verdicts.h3_level``).

    Returns ``(table, detail, info)``: ``table`` a DataFrame with one row per part: the verdict of
    the 600-sweep runs on the same folds (``paper``: Sec. 5's records), of the data's start, of the
    other start, of each chain of the preferred region (✓ supported, ✗ not, – undecidable), the
    decision (✓ / ✗ / open) and why; ``detail`` the numbers behind each region's verdict (paired
    fold differences, mean ± SE, the SE to two significant digits); ``info``: the folds, the
    preferred region, ``h3_T`` and the raw ``verdict_parts`` results."""
    folds = common_folds(recs, CONVERGED_MODELS)
    h3_T = h3_level(region_records(on_folds(recs, folds), "data"), folds)
    on = on_folds(recs, folds)
    pref = preferred(on)
    res = {"600 sweeps": verdict_parts(on_folds(paper, folds), h3_T=h3_T),
           "data": verdict_parts(region_records(on, "data"), h3_T=h3_T),
           "other": verdict_parts(region_records(on, "other"), h3_T=h3_T)}
    n_chains = min(len(r["groups"][_other(r) if pref == "other" else "data"]["chains"]) for r in on)
    chains = [verdict_parts(chain_records(on, pref, i), h3_T=h3_T) for i in range(n_chains)]
    other_name = _region_name(_other(on[0])) if on else "other start"
    pref_name = REGION_NAMES["data"] if pref == "data" else other_name
    rows, detail = [], []
    for p in parts:
        a, b = res["data"][p][0], res["other"][p][0]
        c = [ch[p][0] for ch in chains]
        own = a if pref == "data" else b
        if a is None or b is None:
            verdict, why = "open", "not enough folds"
        elif a == b:
            verdict, why = MARK[a], "both regions"
        elif all(x == own for x in c):
            verdict, why = MARK[own], f"the {pref_name}'s chains agree"
        else:
            verdict, why = "open", f"the regions differ and so do the {pref_name}'s chains"
        rows.append({"part": p, "600 sweeps": MARK[res["600 sweeps"][p][0]], REGION_NAMES["data"]: MARK[a],
                     other_name: MARK[b], f"{pref_name}, each chain": " ".join(MARK[x] for x in c),
                     "verdict": verdict, "decided by": why})
        if res["data"][p][1] or res["other"][p][1]:
            detail.append({"part": p, REGION_NAMES["data"]: res["data"][p][1], other_name: res["other"][p][1]})
    info = {"folds": folds, "preferred": pref, "preferred_name": pref_name, "h3_T": h3_T, "results": res,
            "chains": chains, "complete": len(folds) >= 3 and len(folds) <= EXPECTED_FOLDS}
    return pd.DataFrame(rows), pd.DataFrame(detail), info


def run_labels(recs) -> pd.DataFrame:
    """One row per run: model, T, fold, *converged* (every chain agreed, split-R-hat <= its target)
    or *capped* (with the sweeps it stopped at), the largest split-R-hat of K and TDLL over all
    chains and within each start's chains (a string to three decimals; "constant" where K and
    the TDLL did not change), K of each start (mean of its chains) and the largest
    spread of K between chains of one start: what a number of the run means."""
    rows = []
    for r in recs:
        other = _other(r)
        def rh(d):              # printed to three decimals: the rule is R-hat <= 1.01
            x = max((d[v]["rhat"] for v in ("K", "tdll") if d.get(v, {}).get("rhat") is not None),
                    default=None)
            return "constant" if x is None else f"{x:.3f}"
        ks = {lab: [r["chains"][c]["K_mean"] for c in g["chains"]] for lab, g in r["groups"].items()}
        rows.append({"model": r["model"] if r["T"] is None else f"{r['model']}-{r['T']}", "fold": r["fold"],
                     "stopped": "converged" if r["converged"] else f"capped at {r['sweeps']}",
                     "R̂ all": rh(r["diagnostics"]),
                     "R̂ data's start": rh(r["groups"]["data"]["diagnostics"]),
                     f"R̂ {_region_name(other)}": rh(r["groups"][other]["diagnostics"]),
                     "K data's start": round(float(np.mean(ks["data"])), 1),
                     f"K {_region_name(other)}": round(float(np.mean(ks[other])), 1),
                     "K spread in a start": round(max(max(v) - min(v) for v in ks.values()), 1)})
    return pd.DataFrame(rows)
