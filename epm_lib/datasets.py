"""Data sets: the synthetic 90x90 example of Fig. 1a (more loaders join in Part III).

``make_toy90`` is derived in ``chapters/01_epm``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["TOY90_BLOCKS", "make_toy90"]

#: The five overlapping latent classes of the synthetic example (Fig. 1a):
#: (first row, last row + 1, first column, last column + 1) of each block.
TOY90_BLOCKS = (
    (0, 30, 0, 30),
    (20, 50, 20, 45),
    (40, 70, 40, 65),
    (60, 90, 55, 90),
    (10, 35, 60, 85),
)


def make_toy90(seed: int = 0, p_in: float = 0.9, p_out: float = 0.0):
    """The synthetic 90x90 binary matrix with five overlapping classes (Fig. 1a).

    Each class k is a block of rows x columns (``TOY90_BLOCKS``); an entry is
    a one with probability ``1 - (1 - p_out) prod_{k covering it} (1 - p_in)``,
    the noisy-OR link of Eq. (1) with one "on" class per covering block.

    Returns ``(X, row_classes, col_classes)``: ``X`` a 90x90
    ``scipy.sparse.csr_matrix`` of int8 ones, and two boolean (90, 5)
    membership matrices (the ground truth the samplers should recover).
    """
    if not (0.0 < p_in <= 1.0) or not (0.0 <= p_out < 1.0):
        raise ValueError(f"need 0 < p_in <= 1 and 0 <= p_out < 1, got p_in={p_in}, p_out={p_out}")
    rng = np.random.default_rng(seed)
    n, K = 90, len(TOY90_BLOCKS)
    row_classes = np.zeros((n, K), dtype=bool)
    col_classes = np.zeros((n, K), dtype=bool)
    for k, (r0, r1, c0, c1) in enumerate(TOY90_BLOCKS):
        row_classes[r0:r1, k] = True
        col_classes[c0:c1, k] = True
    covering = row_classes.astype(np.int64) @ col_classes.T.astype(np.int64)   # blocks covering (i, j)
    p_zero = (1.0 - p_out) * (1.0 - p_in) ** covering
    X = (rng.random((n, n)) >= p_zero).astype(np.int8)
    return sp.csr_matrix(X), row_classes, col_classes
