"""The import graph of rmtnet: no cycle among its modules (module-level and function-level imports alike, a
package counting as its ``__init__``), and no private name (``_x``) of one module used by another — neither imported
(``from .m import _x``) nor reached as an attribute (``m._x``). Private modules (``_checks``, ``_backend``, ``_io``)
are the package's shared internals and may be imported; their public names are their interface."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rmtnet"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name):
    return MODULES[name].name == "__init__.py"


def _resolve(module, level, target):
    """The absolute name of ``from <level dots><target> import …`` written in ``module``."""
    if level == 0:
        return target
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module):
    """(imported module, private names imported from it or used as its attributes, line) for each import."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    edges, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rmtnet":
                    edges.append((alias.name, set(), node.lineno))
                    if alias.asname:
                        bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module)
            if source.split(".")[0] != "rmtnet":
                continue
            private, names = set(), False
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in MODULES:                       # `from . import montecarlo`: the module itself
                    edges.append((sub, set(), node.lineno))
                    bound[alias.asname or alias.name] = sub
                else:                                    # a name defined in (or re-exported by) `source`
                    names = True
                    if alias.name.startswith("_"):
                        private.add(alias.name)
            if names:
                edges.append((source, private, node.lineno))
    for node in ast.walk(tree):                          # m._x on a bound sibling module m
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            target = bound[node.value.id]
            if f"{target}.{node.attr}" not in MODULES:
                edges.append((target, {node.attr}, node.lineno))
    return [(t, p, line) for t, p, line in edges if t in MODULES and t != module]


GRAPH = {m: _imports(m) for m in MODULES}


def _cycles():
    """Every elementary cycle's representative, found by depth-first search with a path stack."""
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for target, _, _ in GRAPH[m]:
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[m] = "done"

    for m in sorted(MODULES):
        if m not in state:
            visit(m)
    return found


def test_the_walk_sees_function_level_imports():
    """The graph is not empty and contains a known edge, so that a broken walk cannot pass vacuously."""
    assert any(t == "rmtnet.spectra.measures" for t, _, _ in GRAPH["rmtnet.spectra.laws"])
    assert sum(len(e) for e in GRAPH.values()) > 50


def test_no_import_cycle():
    cycles = _cycles()
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_name_crosses_a_module_boundary():
    leaks = [f"{m} (line {line}) uses {', '.join(sorted(p))} of {t}"
             for m, edges in GRAPH.items() for t, p, line in edges if p]
    assert not leaks, "\n".join(leaks)
