"""epm_lib.book.landing: the landing page's numbers (intro.ipynb), the formatting on small inputs and
every part on the committed records and benchmark files (the numbers the page prints)."""
import json
from pathlib import Path

import pandas as pd
import pytest

from epm_lib.book import landing
from epm_lib.book.regions import load_datastart
from epm_lib.results import PART3_DATASETS, load_baselines_present, load_converged_present, load_present

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def test_pm_drops_the_sign_of_a_zero():
    assert landing.pm((0.00004, 0.0003, 10), 4) == "0.0000 ± 0.0003"
    assert landing.pm((-0.00006, 0.0003, 10), 4) == "-0.0001 ± 0.0003"
    assert landing.pm((2.0, 0.55, 10), 1) == "+2.0 ± 0.6"


def test_tables_from_given_numbers():
    v = pd.Series({"H1": "✗", "H2": "✓", "H3 (TDLL, TDAUC-PR)": "–"})
    b = dict(ml_verdict=v, ml_decided=2, ml_weight=0.75, n_runs=10, ml_conv=4, ml_sweeps=1500, pinned=0.996)
    assert landing.verdicts_note(b).endswith("(2 of 3 parts are).")
    a = dict(dK=0.84, dL=0.00041, n_agree=3, n_runs=5, cap_sweeps=20000, gap=2.91,
             flip={"600": {"H2 TDLL": "+0.0065 ± 0.0006"}, "conv": {"H2 TDLL": "0.0000 ± 0.0003"}})
    c = dict(Kp=87.6, Ke=24.6)
    d = dict(vs={("enron09", "tdll"): (0.01094, 0.00112, 10)})
    t = landing.findings_table(a, b, c, d)
    assert t.startswith("**What the book finds**\n\n| finding | the numbers | chapter |")
    assert "mean $K$ within 0.8 atoms and TDLL within 0.0004 nats" in t and "3 of 5 runs *converged*" in t
    assert "(H2 TDLL: +0.0065 ± 0.0006 → 0.0000 ± 0.0003); on MovieLens1M no truncated chain drops below 99%" in t
    assert "6 of 10 runs capped at 1,500 sweeps" in t and "keeps 88 of 128 atoms on Enron09, the exact one 25" in t
    assert "(Enron09 +0.0109 ± 0.0011)" in t


@pytest.fixture(scope="module")
def records():
    data = load_present(RESULTS, PART3_DATASETS)
    conv = load_converged_present(RESULTS, PART3_DATASETS)
    base = load_baselines_present(RESULTS, PART3_DATASETS)
    return data, conv, base


def test_every_part_on_the_stored_records(records):
    data, conv, base = records
    E6, C6 = data["enron09"], conv["enron09"]
    a = landing.converged_curve(E6, C6)
    b = landing.movielens_regions(data["movielens100k"], data["movielens1m"], load_datastart(RESULTS, "movielens100k"))
    c = landing.printed_update(C6)
    d = landing.baselines_and_starts(data, base, json.loads((ROOT / "benchmarks" / "starts_planted.json").read_text()))
    for part in (a, b, c, d):
        assert part["claims"] and all(part["claims"].values()), part["claims"]
    assert (a["n_agree"], a["n_runs"], a["cap_sweeps"]) == (112, 220, 20000) and f"{a['gap']:.1f}" == "2.9"
    assert a["flip"]["600"]["H2 TDLL"] == "+0.0065 ± 0.0006" and a["flip"]["conv"]["H2 TDLL"] == "+0.0001 ± 0.0003"
    assert (b["ml_decided"], len(b["ml_verdict"]), f"{b['ml_weight']:.2f}") == (14, 14, "0.79")
    assert (f"{c['Kp']:.0f}", f"{c['Ke']:.0f}") == ("88", "25")
    assert f"{d['vs']['enron09', 'tdll'][0]:+.4f}" == "+0.0109"
    md = landing.claims_table(E6, a, b).splitlines()
    assert md[2:] == ["| **H1**: the EPM overestimates $K$ and predicts worse | ✗ | ✗ | ✗ |",
                      "| **H2**: the DEPM predicts better than the CEPM | ✗ | ✗ | ✗ |",
                      "| **H3**: the IDEPM predicts better than every DEPM | ✗ | ✗ | ✓ |"]
