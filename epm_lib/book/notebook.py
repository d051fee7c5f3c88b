"""What every chapter calls: its setup (``setup_chapter``: ``quiet_first_run``, figures inline,
``book_style``), the check of its parameters (``check_parameters``), the glued numbers of its opening
box (``key_result``), the watermark line that ends it (``versions``) and ``import_arviz``.

Checking a chapter's parameters.

Each chapter keeps its settings in one cell tagged ``parameters``; papermill
reruns it with other values by injecting a cell, whose source starts with
``# Parameters``, right after that one. The cell after it calls

    check_parameters(globals(), n_draws=Int(min=100), T_grid=ListOf(Int(min=1)))

which raises ``ValueError``

- when papermill injected a name the chapter does not know (a misspelt
  parameter would otherwise be ignored and the defaults run), naming it and
  the known ones;
- when a value is not allowed, naming the parameter, its value and what is
  allowed (instead of an error deep in the chapter).

Without papermill (the book build, nbval) there is no injected cell and only
the values are checked.
"""
import ast
import math
import numbers
import os

from .style import BOOK_RC, OKABE_ITO

__all__ = ["setup_chapter", "book_style", "BOOK_RC", "versions", "import_arviz", "quiet_first_run", "check_parameters",
           "Int", "Float", "Str", "Dir", "Choice", "ListOf", "Optional", "Satisfies", "key_result"]

INJECTED_HEADER = "# Parameters"


class Spec:
    """What one parameter may be: ``allows(value, namespace)`` and ``describe(namespace)``."""

    def allows(self, value, namespace):
        raise NotImplementedError

    def describe(self, namespace):
        raise NotImplementedError

    def check(self, name, value, namespace):
        if not self.allows(value, namespace):
            raise ValueError(f"parameter {name} = {value!r} is not allowed: "
                             f"it must be {self.describe(namespace)}")


def _bound(bound, namespace):
    """A bound is a number or the name of another parameter (its value is used)."""
    return namespace[bound] if isinstance(bound, str) else bound


def _show_bound(bound, namespace):
    return f"{bound} (= {namespace[bound]!r})" if isinstance(bound, str) else repr(bound)


class _Number(Spec):
    kind = "a number"

    def __init__(self, min=None, max=None, gt=None, lt=None):
        self.min, self.max, self.gt, self.lt = min, max, gt, lt

    def is_type(self, value):
        raise NotImplementedError

    def allows(self, value, namespace):
        if not self.is_type(value):
            return False
        lo, hi, gt, lt = (_bound(b, namespace) for b in (self.min, self.max, self.gt, self.lt))
        return ((lo is None or value >= lo) and (hi is None or value <= hi)
                and (gt is None or value > gt) and (lt is None or value < lt))

    def describe(self, namespace):
        rules = [f"{op} {_show_bound(b, namespace)}" for op, b in
                 ((">", self.gt), (">=", self.min), ("<=", self.max), ("<", self.lt)) if b is not None]
        return " ".join([self.kind, " and ".join(rules)]).strip()


class Int(_Number):
    """An integer (not a bool, not a float such as 5000.0), optionally >= min, <= max, > gt, < lt."""
    kind = "an integer"

    def is_type(self, value):
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)


class Float(_Number):
    """A finite real number (integers too), optionally >= min, <= max, > gt, < lt."""
    kind = "a finite number"

    def is_type(self, value):
        return (isinstance(value, numbers.Real) and not isinstance(value, bool)
                and math.isfinite(value))


class Str(Spec):
    """A string."""

    def allows(self, value, namespace):
        return isinstance(value, str)

    def describe(self, namespace):
        return "a string"


class Dir(Spec):
    """The path of an existing folder (relative paths: from the chapter's folder)."""

    def allows(self, value, namespace):
        return isinstance(value, (str, os.PathLike)) and os.path.isdir(value)

    def describe(self, namespace):
        return f"an existing folder (relative to {os.getcwd()})"


class Choice(Spec):
    """One of the given values."""

    def __init__(self, *values):
        self.values = values

    def allows(self, value, namespace):
        return any(value == v and type(value) is type(v) for v in self.values)

    def describe(self, namespace):
        return "one of " + ", ".join(map(repr, self.values))


class Optional(Spec):
    """None, or what ``spec`` allows."""

    def __init__(self, spec):
        self.spec = spec

    def allows(self, value, namespace):
        return value is None or self.spec.allows(value, namespace)

    def describe(self, namespace):
        return f"None or {self.spec.describe(namespace)}"


class ListOf(Spec):
    """A list (or tuple) of at least ``min_len`` items, each allowed by ``item``."""

    def __init__(self, item, min_len=1, distinct=False):
        self.item, self.min_len, self.distinct = item, min_len, distinct

    def allows(self, value, namespace):
        return (isinstance(value, (list, tuple)) and len(value) >= self.min_len
                and all(self.item.allows(v, namespace) for v in value)
                and (not self.distinct or len(set(map(repr, value))) == len(value)))

    def describe(self, namespace):
        n = f"at least {self.min_len} " if self.min_len > 1 else ""
        d = "distinct " if self.distinct else ""
        return (f"a list of {n}{d}items, each {self.item.describe(namespace)} "
                "(papermill: pass a list with -y or -r, e.g. -y 'name: [1, 2]')")


class Satisfies(Spec):
    """What ``spec`` allows and ``test(value)`` accepts; ``text`` says what the test asks."""

    def __init__(self, spec, test, text):
        self.spec, self.test, self.text = spec, test, text

    def allows(self, value, namespace):
        return self.spec.allows(value, namespace) and bool(self.test(value))

    def describe(self, namespace):
        return f"{self.spec.describe(namespace)}, {self.text}"


def injected_names(namespace):
    """Names assigned by papermill's injected cell (latest executed ``# Parameters`` source), or None."""
    for source in reversed(namespace.get("In") or []):
        if isinstance(source, str) and source.startswith(INJECTED_HEADER):
            return [node.id for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)]
    return None


def check_parameters(namespace, /, **specs):
    """Check a chapter's parameters in ``namespace`` (the notebook's ``globals()``) against ``specs``.

    Raises ``ValueError`` for a name injected by papermill that is not in ``specs``,
    then for the first value (in the order of ``specs``) that its spec does not allow.
    Bounds of ``Int`` and ``Float`` may name another parameter: ``Int(min=1, max="n_iter")``.
    """
    unknown = [n for n in (injected_names(namespace) or []) if n not in specs]
    if unknown:
        raise ValueError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: "
                         f"this chapter's parameters are {', '.join(specs)}")
    for name, spec in specs.items():
        if name not in namespace:
            raise ValueError(f"parameter {name} is not defined (check_parameters lists a name "
                             "that the parameters cell does not set)")
        spec.check(name, namespace[name], namespace)


def book_style() -> list:
    """Set the book's figure style (``BOOK_RC``) and return its colour-blind-safe palette
    (``style.OKABE_ITO``, Okabe & Ito, as a new list). A chapter's setup cell calls it once, after
    ``%matplotlib inline`` (the inline backend sets its own ``figure.dpi`` when it is switched on):
    ``OKABE_ITO = book_style()``."""
    import matplotlib.pyplot as plt

    plt.rcParams.update(BOOK_RC)
    return list(OKABE_ITO)


def setup_chapter() -> list:
    """A chapter's setup in one call: ``quiet_first_run()``, then figures inline (what the line
    ``%matplotlib inline`` does, when run in IPython: a notebook or papermill kernel), then
    ``book_style()``, in that order (the inline backend sets its own ``figure.dpi`` when it is
    switched on, so the style comes after it). Returns the Okabe-Ito palette:
    ``OKABE_ITO = setup_chapter()``. Outside IPython (a script) it only sets the style."""
    quiet_first_run()
    try:
        from IPython import get_ipython
    except ImportError:                  # pragma: no cover - IPython is a dependency of the book
        get_ipython = None
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
    return book_style()


def versions(*extra) -> str:
    """The watermark line that ends a chapter: ``python X, numpy X, scipy X, numba X, epm_lib X``,
    followed by ``extra`` modules (e.g. ``networkx``) as ``name version``."""
    import sys

    import numba
    import numpy
    import scipy

    from .. import __version__
    parts = [f"python {sys.version.split()[0]}", f"numpy {numpy.__version__}", f"scipy {scipy.__version__}",
             f"numba {numba.__version__}", f"epm_lib {__version__}"]
    parts += [f"{m.__name__} {m.__version__}" for m in extra]
    return ", ".join(parts)


def import_arviz():
    """``arviz``, imported without the FutureWarning that arviz 0.23 prints on its first import of
    each day (a chapter's output must not depend on the date or on what ran before it)."""
    from ..chains import _arviz
    return _arviz()


def quiet_first_run():
    """Do, silently, what libraries do noisily the first time they run on a machine.

    A chapter's first cell calls this before ``%matplotlib inline``, so that a first run on a
    fresh machine prints what the tenth prints: matplotlib builds its font cache on first import
    and, if that takes more than 5 seconds (a busy machine), a timer thread logs "Matplotlib is
    building the font cache" to stderr, in whatever cell runs then. Here the cache is built with
    that logger held at ERROR, then the logger is restored.
    """
    import logging

    log = logging.getLogger("matplotlib.font_manager")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        import matplotlib.font_manager  # noqa: F401  (builds or reads the font cache)
    finally:
        log.setLevel(level)


def key_result(name, value, digits=None):
    """Glue one computed number for the chapter's opening box (issue 21).

    A chapter opens with what it finds; the numbers in that box are written as
    ``{glue:text}`name``` and pasted by the book build from the cell that computed them, so a
    papermill rerun with other parameters opens with its own numbers. The value is stored
    rounded to ``digits`` (``None``: an int, a str or a bool stored as it is), as a plain Python
    int, float or str, so that the stored text is the same on every CPU (nbval compares it) and
    reads as the number, not ``np.float64(...)``. ``digits=0`` stores an int. Returns the value
    stored, so a cell can print it too; as a cell's last line assign it (``_ = key_result(...)``):
    nbval executes cells without IPython's history, so a trailing ``;`` does not stop the returned
    value from becoming an extra output there.
    """
    from myst_nb import glue

    if isinstance(value, (str, bool)):
        stored = value
    elif not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"key_result {name!r}: a finite number or a string is needed, got {value!r}")
    elif digits is None:
        if float(value) != int(value):
            raise ValueError(f"key_result {name!r}: {value!r} is not a whole number; give digits=")
        stored = int(value)
    elif digits == 0:
        stored = int(round(float(value)))
    else:
        stored = round(float(value), digits)
        if stored == 0:
            stored = 0.0                     # -0.0 would print with a sign
    glue(name, stored, display=False)
    return stored
