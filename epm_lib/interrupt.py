"""Ctrl-C that stops a long call cleanly.

A numba kernel cannot be interrupted: Python runs its signal handlers only between bytecodes.
Worse, a SIGINT that arrives while numba *unboxes* an argument (a ``numpy.random.Generator``
is unboxed through Python attribute look-ups) makes Python's default handler raise inside the
dispatcher: the kernel then runs with a half-unboxed random stream and returns "a result with
an exception set" (``SystemError``), hangs or crashes the interpreter.

``deferred_sigint`` holds SIGINT while a sampler runs: the handler only counts the signals,
and the driver calls ``check()`` between sweeps, which delivers the interrupt there (as
``KeyboardInterrupt`` under Python's default handler, or by calling the handler that was
installed before, e.g. a notebook kernel's). So Ctrl-C stops a fit after the sweep in progress,
with no state half-updated; a second Ctrl-C is never lost (it is delivered at the same point).
In a thread other than the main one (where Python delivers no signals) it does nothing.
"""
from __future__ import annotations

import signal
import threading

__all__ = ["deferred_sigint"]


class deferred_sigint:
    """Context manager: SIGINT is counted, not raised, until ``check()`` or the exit.

    Re-entrant: an inner ``deferred_sigint`` (a fit inside ``fit_chains``) sees that the outer
    one is active and only reads its count.
    """

    _active: "deferred_sigint | None" = None

    def __init__(self):
        self.hits = 0
        self._old = None
        self._outer = None
        self._installed = False

    def _handler(self, signum, frame):
        self.hits += 1

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        outer = deferred_sigint._active
        if outer is not None and outer._installed:
            self._outer = outer
            return self
        old = signal.getsignal(signal.SIGINT)
        if old in (signal.SIG_IGN, None):    # Ctrl-C ignored, or a handler not set from Python
            return self
        self._old = old
        signal.signal(signal.SIGINT, self._handler)
        self._installed = True
        deferred_sigint._active = self
        return self

    def _pending(self) -> int:
        return self._outer.hits if self._outer is not None else self.hits

    def check(self):
        """Deliver a Ctrl-C received since the last check (raises ``KeyboardInterrupt`` under
        Python's default handler)."""
        if self._outer is not None:
            self._outer.check()
            return
        if self.hits:
            self.hits = 0
            self._deliver()

    def _deliver(self):
        old = self._old
        if old is None or old is signal.SIG_DFL or old is signal.default_int_handler:
            raise KeyboardInterrupt
        if callable(old):                    # e.g. a notebook kernel's handler
            old(signal.SIGINT, None)

    def __exit__(self, exc_type, exc, tb):
        if not self._installed:
            return False
        signal.signal(signal.SIGINT, self._old)
        deferred_sigint._active = None
        self._installed = False
        if self.hits and exc_type is None:
            self.hits = 0
            self._deliver()
        return False


def ignore_sigint_in_worker(parent_pid):
    """In a worker process of a pool (joblib/loky) started by process ``parent_pid``: ignore SIGINT.

    Ctrl-C in a terminal reaches every process of the foreground group, workers included. The
    parent stops the pool (its ``KeyboardInterrupt`` ends joblib's loop, which terminates the
    workers); a worker that also raised would only print a second traceback. Nothing happens
    when the "worker" is the parent itself (a sequential backend).
    """
    import os
    if os.getpid() != parent_pid and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
