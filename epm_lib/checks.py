"""Checks of plain option values shared by the library's public functions (a clear ``ValueError``
naming the option, before any numba call); imports nothing of ``epm_lib``."""
from __future__ import annotations

import numpy as np

__all__ = ["check_bool"]


def check_bool(name, v) -> bool:
    """``v`` as a Python bool if it is ``True`` or ``False`` (numpy's ``np.True_``, ``np.False_``
    too); anything else (1, "yes", None, an array) is a ``ValueError`` naming ``name``."""
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {v!r} ({type(v).__name__})")
    return bool(v)
