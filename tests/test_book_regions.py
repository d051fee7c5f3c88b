"""epm_lib.book.regions: verdicts from the data's start and from one atom, decided or open."""
import numpy as np
import pytest

from epm_lib.book import regions
from epm_lib.results import CONVERGED_MODELS, verdict_parts


def _rec(model, T, fold, data, other, chains=None, w=0.8, converged=False):
    """A data-start record: ``data``/``other``: (K, tdll, tdauc_pr) of each start pooled;
    ``chains``: the four chains' (K, tdll, tdauc_pr) (default: each its start's)."""
    chains = chains or [data, data, other, other]
    d = {"rhat": 1.2, "ess_bulk": 10.0, "ess_tail": 10.0, "constant": False}
    g = lambda v, idx: {"chains": idx, "K_mean": v[0], "tdll": v[1], "tdauc_pr": v[2],   # noqa: E731
                        "diagnostics": {"K": d, "tdll": d}}
    return {"run_id": f"{model}-T{T}-fold{fold}-seed0-datastart-converged", "model": model, "T": T, "fold": fold,
            "converged": converged, "sweeps": 1500, "diagnostics": {"K": d, "tdll": d},
            "settings": {"starts": ["data", "data", 1, 1]}, "data": {"fingerprint": "f"},
            "chains": [{"start": s, "K_mean": c[0], "tdll": c[1], "tdauc_pr": c[2]}
                       for s, c in zip(["data", "data", 1, 1], chains)],
            "groups": {"data": g(data, [0, 1]), "1": g(other, [2, 3])},
            "stacking": {"weights": {"data": w, "1": 1 - w}}}


def _grid(k_data, k_other, noise=0.0, **kw):
    """Records of every model of Fig. 2 on three folds; K of the EPM, CEPM, DEPM set by the two
    functions of (model, T, fold); scores equal everywhere but a small noise."""
    rng = np.random.default_rng(0)
    recs = []
    for m, T in CONVERGED_MODELS:
        for f in range(3):
            s = lambda: (-0.1 + noise * rng.normal(), 0.3 + noise * rng.normal())   # noqa: E731
            recs.append(_rec(m, T, f, (k_data(m, T, f), *s()), (k_other(m, T, f), *s()), **kw))
    return recs


def _paper(recs):
    return [{"model": r["model"], "T": r["T"], "fold": r["fold"], "K_mean": r["groups"]["data"]["K_mean"],
             "tdll": r["groups"]["data"]["tdll"], "tdauc_pr": r["groups"]["data"]["tdauc_pr"]} for r in recs]


def grows(m, T, f):
    return (T or 40) / 2 + f * 0.1 if m == "EPM" else 10 + f * 0.1


def test_both_regions_agree_decides():
    recs = _grid(grows, grows)
    table, detail, info = regions.region_verdicts(_paper(recs), recs)
    row = table.set_index("part").loc["H1 K grows"]
    assert row["data's start"] == row["one atom"] == "✓" and row["verdict"] == "✓" and row["decided by"] == "both regions"
    assert info["folds"] == [0, 1, 2] and info["preferred"] == "data"
    assert "T=128 − T=32" in detail.set_index("part").loc["H1 K grows", "data's start"]


def test_regions_that_differ_are_decided_by_the_preferred_regions_chains_or_left_open():
    flat = lambda m, T, f: 10 + f * 0.1                                        # noqa: E731
    recs = _grid(grows, flat)                    # the data's start: K grows; one atom: flat
    row = regions.region_verdicts(_paper(recs), recs)[0].set_index("part").loc["H1 K grows"]
    assert (row["data's start"], row["one atom"], row["verdict"]) == ("✓", "✗", "✓")
    assert row["decided by"] == "the data's start's chains agree" and row["data's start, each chain"] == "✓ ✓"
    # the preferred region is one atom (stacking weight 0.2): its chains agree on ✗
    recs = _grid(grows, flat, w=0.2)
    row = regions.region_verdicts(_paper(recs), recs)[0].set_index("part").loc["H1 K grows"]
    assert row["verdict"] == "✗" and row["decided by"] == "the one atom's chains agree"
    # the preferred region's chains disagree: open
    recs = [_rec(r["model"], r["T"], r["fold"], *[(g["K_mean"], g["tdll"], g["tdauc_pr"])
                                                    for g in r["groups"].values()],
                 chains=[(r["groups"]["data"]["K_mean"], -0.1, 0.3), (10 + r["fold"] * 0.1, -0.1, 0.3),
                         (10, -0.1, 0.3), (10, -0.1, 0.3)]) for r in _grid(grows, flat)]
    row = regions.region_verdicts(_paper(recs), recs)[0].set_index("part").loc["H1 K grows"]
    assert row["verdict"] == "open" and row["data's start, each chain"] == "✓ ✗"


def test_region_records_are_what_verdict_parts_reads():
    recs = _grid(grows, grows, noise=1e-3)
    a = verdict_parts(regions.region_records(recs, "data"))
    b = verdict_parts(regions.chain_records(recs, "data", 0))             # chain 0 is the group here
    assert a == b
    assert regions.region_records(recs, "other")[0]["K_mean"] == recs[0]["groups"]["1"]["K_mean"]


def test_preference_and_run_labels():
    recs = _grid(grows, grows, w=0.75)
    recs[0]["converged"] = True
    p = regions.preference(recs).set_index("model")
    assert p.loc["all", "runs"] == len(recs) and p.loc["all", "stacking weight of the data's start"] == 0.75
    lab = regions.run_labels(recs)
    assert lab.loc[0, "stopped"] == "converged" and lab.loc[1, "stopped"] == "capped at 1500"
    assert set(lab.columns) >= {"R̂ all", "R̂ data's start", "R̂ one atom", "K spread in a start"}
    # R-hat printed to the digits the rule (<= 1.01) needs, never as a float whose zeros pandas drops
    assert all(x == "constant" or (len(x.split(".")[1]) == 3 and float(x) >= 0.9) for x in lab["R̂ all"])


@pytest.mark.parametrize("damage, msg", [
    (lambda r: r["groups"].pop("1"), "needs chains from the data's start and from one other start"),
    (lambda r: r["groups"]["1"].update(chains=[2]), "needs at least two chains"),
    (lambda r: r["stacking"]["weights"].update(data=0.9), "summing to 1"),
    (lambda r: r["groups"]["data"].update(tdll=None), "no finite TDLL"),
])
def test_check_datastart_names_the_run_and_the_problem(damage, msg):
    recs = _grid(grows, grows)
    damage(recs[3])
    with pytest.raises(ValueError, match=msg) as info:
        regions.check_datastart(recs)
    assert recs[3]["run_id"] in str(info.value)
