"""Evaluation measures of the experiments (Sec. 5): TDLL and TDAUC-PR.

TDLL is the average log likelihood that a test entry takes its actual value;
TDAUC-PR is the area under the precision-recall curve {cite:p}`davis2006`,
computed as scikit-learn's average precision (a step-wise integral that does
not interpolate optimistically between operating points).
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score

__all__ = ["bernoulli_tdll", "tdauc_pr"]


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
