"""Evaluation measures of the experiments (Sec. 5): TDLL and TDAUC-PR (and AUC-ROC).

TDLL is the average log likelihood that a test entry takes its actual value;
TDAUC-PR is the area under the precision-recall curve {cite:p}`davis2006`,
computed as scikit-learn's average precision (a step-wise integral that does
not interpolate optimistically between operating points). AUC-ROC, the area under the ROC
curve (scikit-learn's ``roc_auc_score``), is not used by the paper; it is the measure link
prediction is most often reported by, and it is insensitive to the share of ones (0.5 for a
random ranking whatever the density, where AUC-PR's chance level is the density).
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

__all__ = ["bernoulli_tdll", "tdauc_pr", "auc_roc"]


def bernoulli_tdll(labels, prob) -> float:
    """Mean of labels*log(p) + (1 - labels)*log(1 - p) over the test entries."""
    labels = np.asarray(labels)
    prob = np.asarray(prob, dtype=float)
    if labels.shape != prob.shape:
        raise ValueError(f"labels and prob must have the same shape, got {labels.shape} and {prob.shape}")
    with np.errstate(divide="ignore"):
        ll = np.where(labels != 0, np.log(prob), np.log1p(-prob))
    return float(ll.mean())


def tdauc_pr(labels, prob) -> float:
    """Area under the precision-recall curve (average precision) of ``prob`` for the 0/1 ``labels``.

    NaN when the test set holds no positive label (the curve is undefined).
    """
    labels = np.asarray(labels)
    if not np.any(labels != 0):
        return float("nan")
    return float(average_precision_score(labels != 0, np.asarray(prob, dtype=float)))


def auc_roc(labels, prob) -> float:
    """Area under the ROC curve of ``prob`` for the 0/1 ``labels`` (scikit-learn's ``roc_auc_score``).

    The probability that a random test one is scored above a random test zero (ties count one
    half). Raises ``ValueError`` when ``labels`` and ``prob`` differ in shape, when a label is
    not 0 or 1, when a score is not finite, or when the labels hold one class only (the curve
    is then undefined).
    """
    labels = np.asarray(labels)
    prob = np.asarray(prob, dtype=float)
    if labels.ndim != 1 or labels.shape != prob.shape:
        raise ValueError(f"labels and prob must be 1-d of the same shape, got {labels.shape} "
                         f"and {prob.shape}")
    if labels.dtype.kind not in "biuf" or np.any((labels != 0) & (labels != 1)):
        raise ValueError("labels must be 0 or 1")
    if not np.all(np.isfinite(prob)):
        raise ValueError("prob must be finite")
    n_pos = int(np.count_nonzero(labels))
    if n_pos == 0 or n_pos == labels.size:
        only = "ones" if n_pos else "zeros"
        raise ValueError(f"AUC-ROC is undefined when the labels hold one class only: all {labels.size} "
                         f"labels are {only}")
    return float(roc_auc_score(labels != 0, prob))
