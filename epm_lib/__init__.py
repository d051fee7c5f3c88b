"""epm_lib: edge partition models (EPM, CEPM, DEPM, IDEPM) of Ohama et al. (NIPS 2017).

Modules (one per concern):

- ``epm_lib.theory``        closed forms of Theorems 1-4 and Lemma 1 (Part I)
- ``epm_lib.distributions`` numba building blocks: ZTP, CRT, partitions, Dirichlet, grid Gibbs
- ``epm_lib.models``        the samplers, one module per family (Part II)
- ``epm_lib.datasets``      the synthetic example and the real data sets
"""
from . import theory, datasets  # noqa: F401

__version__ = "0.1.0"

from .fit import fit, FitResult, DEFAULT_K_INIT, MODELS  # noqa: E402,F401
