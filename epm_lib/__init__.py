"""epm_lib: edge partition models (EPM, CEPM, DEPM, IDEPM) of Ohama et al. (NIPS 2017).

Modules (one per concern):

- ``epm_lib.theory``        closed forms of Theorems 1-4 and Lemma 1 (Part I)
- ``epm_lib.distributions`` numba building blocks: ZTP, CRT, partitions, Dirichlet, grid Gibbs
- ``epm_lib.models``        the samplers, one module per family (Part II)
- ``epm_lib.datasets``      the synthetic example and the real data sets (``load``); re-exports
                            the public names of the three modules it builds on:
- ``epm_lib.dataset_core``  ``Dataset``, the data errors, ``fingerprint``, the binary CSR matrix
- ``epm_lib.edge_files``    a user's own file of edges (``load_file``) and its option checks
- ``epm_lib.text_table``    byte-level parsing of delimited text (fast paths, line-by-line errors)
- ``epm_lib.chains``        several chains from dispersed starts; split-R-hat and ESS (ArviZ)
"""
import hashlib as _hashlib
import os as _os
from pathlib import Path as _Path

import numba as _numba


def _numba_cache_dir():
    """A numba cache folder keyed by a hash of epm_lib's sources.

    numba's on-disk cache is invalidated only when the file of the cached
    function itself changes, not when a kernel it calls from another module
    does; after an update of epm_lib a stale cache could run old code. Keying
    the folder by the hash of the files that hold kernels (``distributions.py``
    and ``models/``) rules that out without recompiling after other edits. The base is
    ``$NUMBA_CACHE_DIR`` when set (CI sets it), else the user's cache folder.
    """
    here = _Path(__file__).resolve().parent
    digest = _hashlib.sha256()
    kernel_files = [here / "distributions.py", *sorted((here / "models").glob("*.py"))]
    for path in kernel_files:
        digest.update(path.relative_to(here).as_posix().encode())
        digest.update(path.read_bytes())
    base = _os.environ.get("NUMBA_CACHE_DIR") or _os.path.join(
        _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache"), "epm_lib-numba")
    return _os.path.join(base, "epm_lib-" + digest.hexdigest()[:16])


_numba.config.CACHE_DIR = _numba_cache_dir()

from . import theory, datasets  # noqa: E402,F401

__version__ = "0.1.0"

from .fit import fit, FitResult, DEFAULT_K_INIT, MODELS, concat, load_result  # noqa: E402,F401
from .chains import fit_chains, diagnostics, run_until_agree  # noqa: E402,F401
from .estimator import EdgePartitionModel  # noqa: E402,F401
