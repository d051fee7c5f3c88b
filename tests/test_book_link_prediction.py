"""epm_lib.book.link_prediction: chapter 30b's comparison as a tidy table, on a hand-made table of
scores (the lines, claims and box) and on a small random network with short fits (the fits and the
table they fill)."""
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from epm_lib.book import link_prediction as lp
from epm_lib.diagnose import DegenerateFitWarning

MODELS = {"IDEPM": {}, "DEPM": {}, "EPM": {}}


def _table(pr, tdll_missing, tdll_zeros):
    """Two folds per network, protocol and method: AUC-PR ``pr[method]`` (+0.01 on fold 1), AUC-ROC 0.5,
    TDLL ``tdll_missing[method]`` / ``tdll_zeros[method]`` (+0.01 on fold 1)."""
    rows = []
    for net in ("Davis", "karate", "Les Mis"):
        for protocol, tdll in (("missing", tdll_missing), ("zeros", tdll_zeros)):
            for method in ("IDEPM", "DEPM", "EPM", "SVD", "popularity"):
                for fold in (1, 0):                   # out of order: score_array sorts the folds
                    rows.append((net, protocol, method, fold, pr[net][method] + 0.01 * fold, 0.5,
                                 tdll[method] + 0.01 * fold))
    return pd.DataFrame(rows, columns=lp.SCORE_COLUMNS)


PR = {"Davis": {"IDEPM": 0.6, "DEPM": 0.7, "EPM": 0.8, "SVD": 0.75, "popularity": 0.5},
      "karate": {"IDEPM": 0.5, "DEPM": 0.55, "EPM": 0.45, "SVD": 0.3, "popularity": 0.35},
      "Les Mis": {"IDEPM": 0.6, "DEPM": 0.65, "EPM": 0.62, "SVD": 0.4, "popularity": 0.3}}
MISSING = {"IDEPM": -0.3, "DEPM": -0.32, "EPM": -0.31, "SVD": -0.315, "popularity": -0.4}
ZEROS = {"IDEPM": -0.35, "DEPM": -0.36, "EPM": -0.37, "SVD": -0.33, "popularity": -0.41}


def test_score_array_lines_and_paired_lines():
    s = _table(PR, MISSING, ZEROS)
    a = lp.score_array(s, "karate", "missing", "DEPM")
    assert a.shape == (2, 3) and a[:, 0].tolist() == pytest.approx([0.55, 0.56])
    lines = lp.score_lines(s, "karate", ["DEPM", "SVD"])
    assert len(lines) == 4 and lines[1].split() == ["method"] + ["AUC-PR", "AUC-ROC", "TDLL"] * 2
    assert lines[2] == "DEPM" + " " * 7 + "0.56±0.01".rjust(11) + "0.50±0.00".rjust(12) + "-0.315±0.005".rjust(15) \
        + "0.56±0.01".rjust(11) + "0.50±0.00".rjust(12) + "-0.355±0.005".rjust(15)
    p = lp.paired_lines(s, MODELS, 2)
    assert p[0] == "Davis    AUC-PR: EPM - SVD = +0.05 ± 0.00, wins 2/2"
    assert p[4] == "karate   AUC-PR: DEPM - popularity = +0.20 ± 0.00, wins 2/2"
    assert p[2] == "Davis    TDLL  : IDEPM missing - zeros = +0.050 ± 0.000, wins 2/2" and len(p) == 12


def test_claims_and_box():
    s = _table(PR, MISSING, ZEROS)
    claims = lp.link_claims(s, MODELS)
    assert len(claims) == 7
    # karate's and Les Mis's TDLL: the SVD (-0.315) above the DEPM (-0.32); everything else holds
    assert [c for c, ok in claims.items() if not ok] == ["karate: every model above both baselines in TDLL",
                                                         "Les Mis: every model above both baselines in TDLL"]
    box = {k: (v, dg) for k, v, dg in lp.box_numbers(s, MODELS)}
    assert box["kar_lo"][0] == pytest.approx(0.455) and box["kar_hi"][0] == pytest.approx(0.555)
    assert box["kar_base"][0] == pytest.approx(0.355) and box["dv_svd"][0] == pytest.approx(0.755)
    assert box["miss_better"] == (9, None) and box["miss_total"] == (9, None)


def test_fit_and_check_keeps_degenerate_warnings_and_passes_others_on(monkeypatch):
    def noisy_fit(*args, **kw):
        warnings.warn("looks degenerate: dust", DegenerateFitWarning)
        warnings.warn("something else", UserWarning)
        return ("fitted", args, kw)

    monkeypatch.setattr(lp, "fit", noisy_fit)
    flagged = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = lp.fit_and_check("X", "EPM", T=4, flagged=flagged)
    assert got == ("fitted", ("X", "EPM"), {"T": 4})
    assert flagged == ["looks degenerate: dust"]                                  # kept, not shown
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, "something else")]   # passed on


def test_link_prediction_scores_on_a_small_network():
    rng = np.random.default_rng(1)
    blocks = np.repeat([0, 1], 10)
    p = np.where(blocks[:, None] == blocks[None, :], 0.6, 0.05)
    A = np.triu(rng.random((20, 20)) < p, 1)
    M = sp.csr_matrix((A | A.T).astype(np.int8))
    got = lp.link_prediction_scores({"two blocks": (M, True)}, {"IDEPM": dict(split_merge=2), "EPM": dict(T=4)},
                                    n_iter=30, n_avg=10, seed=3, n_folds=2)
    s = got.scores
    assert list(s.columns) == lp.SCORE_COLUMNS and len(s) == 2 * 2 * 4          # folds x protocols x methods
    assert s.method.tolist()[:4] == ["IDEPM", "EPM", "SVD", "popularity"] and set(s.fold) == {0, 1}
    assert np.isfinite(s[["auc_pr", "auc_roc", "tdll"]].to_numpy()).all()
    assert got.n_moved == 4 and got.move_stats.shape == (4,) and got.move_stats[0] > 0   # the IDEPM's fits only
    assert got.held_links["two blocks"] > 0 and isinstance(got.flagged, list)
    assert lp.score_array(s, "two blocks", "zeros", "EPM").shape == (2, 3)
