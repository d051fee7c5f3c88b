"""The rooms of ``epm_lib`` (ARCHITECTURE.md), read from the source with ``ast``, nothing imported:

- the library a practitioner installs (``epm_lib`` outside ``epm_lib/book``) imports nothing of the
  book's own modules (``epm_lib.book``), nor of the three modules that only re-export them under
  their former names (``epm_lib.results``, ``epm_lib.figures``, ``epm_lib.notebook``);
- those three define nothing: they only re-export names of ``epm_lib.book``;
- no import cycle among the modules of ``epm_lib``, counting the imports inside functions;
- no module outside ``epm_lib/models`` over 650 lines (the numba kernels of ``models`` keep a sweep
  and its moves together).

The breaches that stand today are listed by name (:data:`KNOWN_CYCLES`, :data:`KNOWN_LONG`): any
other fails, and so does a listed one once it is mended, so that the list only shrinks.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "epm_lib"
#: the former names of the book's modules, kept for the chapters: re-exports of epm_lib.book only
SHIMS = ("epm_lib.results", "epm_lib.figures", "epm_lib.notebook")
MAX_LINES = 650
#: Breaches that stand in the code today, each with its place, to be mended by those who work there;
#: the tests fail on any other, and on an entry that is mended (take it out then).
KNOWN_CYCLES = {}
KNOWN_LONG = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> dict[str, int]:
    """{module of epm_lib: first line} that ``name`` imports anywhere in its file (functions too).
    ``from P import x`` counts as an import of ``P.x`` when that is a module, else of ``P``."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if _is_package(name) else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target, line):
        while target and target not in MODULES:    # a name defined in a module: that module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "epm_lib":
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "epm_lib":
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                add(sub if sub in MODULES else source, node.lineno)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _in_book(name: str) -> bool:
    return name == "epm_lib.book" or name.startswith("epm_lib.book.")


def test_the_import_reader_sees_the_imports():
    """The reader resolves relative, package and function-level imports (else the tests below pass
    for nothing)."""
    assert "epm_lib.fit" in GRAPH["epm_lib"]                               # from .fit import fit, ...
    assert "epm_lib.theory" in GRAPH["epm_lib"]                            # from . import theory, datasets
    assert "epm_lib.models.common" in GRAPH["epm_lib.result"]              # from .models import common
    assert "epm_lib" in GRAPH["epm_lib.book.notebook"]                     # from .. import __version__ (in a function)
    assert "epm_lib.chains" in GRAPH["epm_lib.book.notebook"]              # from ..chains import _arviz (in a function)
    assert "epm_lib.book.records" in GRAPH["epm_lib.results"]


def test_the_library_does_not_import_the_book():
    wrong = [f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
             for name, targets in GRAPH.items() if not _in_book(name) and name not in SHIMS
             for target, line in targets.items() if _in_book(target) or target in SHIMS]
    assert not wrong, "the library imports the book's modules:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", SHIMS)
def test_the_former_names_only_re_export_the_book(name):
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    assert ast.get_docstring(tree) and "epm_lib.book" in ast.get_docstring(tree)
    for node in tree.body[1:]:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and node.module.startswith("book"), ast.dump(node)
        else:
            assert isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"], \
                f"{name} line {node.lineno}: a shim only re-exports"


def _cycles() -> list[frozenset]:
    """The strongly connected components of more than one module (Tarjan): each holds a cycle."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(name):
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in GRAPH[name]:
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == name:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    return found


def test_no_import_cycles():
    """No cycle but those of :data:`KNOWN_CYCLES`, and each of those still there (once it is gone,
    its entry goes too)."""
    cycles = _cycles()
    new = ["; ".join(f"{a} -> {b} (line {GRAPH[a][b]})" for a in sorted(c) for b in sorted(GRAPH[a]) if b in c)
           for c in cycles if c not in KNOWN_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(new)
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"no longer cycles, take them out of KNOWN_CYCLES: {gone}"


def test_modules_are_at_most_650_lines_outside_models():
    """None over 650 lines but those of :data:`KNOWN_LONG`, and each of those still over."""
    long = {str(p.relative_to(ROOT)): n for name, p in MODULES.items()
            if not name.startswith("epm_lib.models.") and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    new = {path: n for path, n in long.items() if path not in KNOWN_LONG}
    assert not new, f"modules over {MAX_LINES} lines: {new}"
    gone = [path for path in KNOWN_LONG if path not in long]
    assert not gone, f"at most {MAX_LINES} lines now, take them out of KNOWN_LONG: {gone}"
