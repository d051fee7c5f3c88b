"""epm_lib.metrics: TDLL, TDAUC-PR and AUC-ROC on hand-computed cases."""
import math

import numpy as np
import pytest

from epm_lib.metrics import auc_roc, bernoulli_tdll, tdauc_pr


def test_bernoulli_tdll_hand_computed():
    labels = np.array([1, 0, 1, 0])
    prob = np.array([0.8, 0.3, 0.5, 0.1])
    expected = (math.log(0.8) + math.log(0.7) + math.log(0.5) + math.log(0.9)) / 4
    assert bernoulli_tdll(labels, prob) == pytest.approx(expected, rel=1e-12)


def test_bernoulli_tdll_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        bernoulli_tdll([1, 0], [0.5])


def test_tdauc_pr_hand_computed_and_nan_without_ones():
    # ranking 0.9 (1), 0.8 (0), 0.7 (1), 0.1 (0): precision at the ones 1 and 2/3
    labels = np.array([1, 0, 1, 0])
    prob = np.array([0.9, 0.8, 0.7, 0.1])
    assert tdauc_pr(labels, prob) == pytest.approx((1 + 2 / 3) / 2)
    assert math.isnan(tdauc_pr([0, 0, 0], [0.1, 0.2, 0.3]))


def test_auc_roc_hand_computed():
    # pairs (one, zero): (0.35, 0.1) yes, (0.35, 0.4) no, (0.8, 0.1) yes, (0.8, 0.4) yes -> 3/4
    assert auc_roc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert auc_roc([0, 1], [0.2, 0.9]) == 1.0
    assert auc_roc([0, 1], [0.9, 0.2]) == 0.0
    # ties count one half
    assert auc_roc([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]) == pytest.approx(0.5)
    # booleans and int8 labels are accepted
    assert auc_roc(np.array([False, True]), [0.1, 0.2]) == 1.0
    assert auc_roc(np.array([0, 1], np.int8), [0.1, 0.2]) == 1.0


@pytest.mark.parametrize("labels", [[0, 0, 0], [1, 1]])
def test_auc_roc_single_class_is_a_clear_error(labels):
    with pytest.raises(ValueError, match="one class only"):
        auc_roc(labels, np.linspace(0.1, 0.9, len(labels)))


def test_auc_roc_validation():
    with pytest.raises(ValueError, match="same shape"):
        auc_roc([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="same shape"):
        auc_roc([[0, 1]], [[0.1, 0.2]])
    with pytest.raises(ValueError, match="0 or 1"):
        auc_roc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="finite"):
        auc_roc([0, 1], [0.1, np.nan])
