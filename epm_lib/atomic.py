"""Atomic file writes: a reader (or a resumed run) sees the old file or the complete new one,
never a partial one.

Owns the one way ``epm_lib`` replaces a file: write a temp file in the same folder
(``.<name>.<random><suffix>``, so ``os.replace`` never crosses a file system), flush and
``fsync`` it, set its permissions, then ``os.replace`` it over the target; on any failure,
Ctrl-C included (``BaseException``), the temp file is removed and the error re-raised, and the
old file is left as it was.

- :func:`atomic_open` -- a context manager giving the temp file to write to (text or binary),
  for writers that stream (``np.savez(f, ...)``);
- :func:`atomic_write_text`, :func:`atomic_write_bytes` -- the whole content at once.

The parent folder must exist (callers create it). Imports nothing of ``epm_lib``.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_open", "atomic_write_text", "atomic_write_bytes"]


@contextmanager
def atomic_open(path, binary: bool = False, *, mode: int | None = 0o644, suffix: str = ".tmp",
                encoding: str = "utf-8"):
    """Yield a file object (text, ``encoding``; or ``binary``) whose content replaces ``path``
    atomically when the ``with`` block ends without an error.

    ``mode``: the permissions of the new file (``os.chmod`` before the replace, so the umask does
    not apply; default 0o644, readable by all); None keeps those of ``tempfile.mkstemp``
    (0o600). ``suffix``: the temp file's (its name is ``.<name>.<random><suffix>`` in the folder
    of ``path``). An error inside the block, or in the fsync, chmod or replace, removes the temp
    file and is re-raised; ``path`` is then unchanged.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path, text: str, *, mode: int | None = 0o644, suffix: str = ".tmp",
                      encoding: str = "utf-8") -> Path:
    """Write ``text`` (as is: add the final newline yourself) to ``path`` atomically, as
    :func:`atomic_open` describes; returns ``Path(path)``."""
    with atomic_open(path, mode=mode, suffix=suffix, encoding=encoding) as f:
        f.write(text)
    return Path(path)


def atomic_write_bytes(path, data: bytes, *, mode: int | None = 0o644, suffix: str = ".tmp") -> Path:
    """Write ``data`` to ``path`` atomically, as :func:`atomic_open` describes; returns
    ``Path(path)``."""
    with atomic_open(path, True, mode=mode, suffix=suffix) as f:
        f.write(data)
    return Path(path)
