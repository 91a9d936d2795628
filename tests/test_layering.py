"""The layers of rmtnet, stated in one line and held by the import graph:

    studies > nets > {plot, experiments, cli, figures} > spectra.sampling > network theory > free-probability core > base

network theory = spectra's network, activations, meanfield, jacobian, fisher, ntk, kernels, predict, mixer,
stability; the
free-probability core = measures, laws, free, continuation, transforms, series, symbolic; the base = validation,
backend, io, system, the optional dependencies and the deprecation signposts. The package facades sit with the highest of their modules
(``rmtnet.spectra`` with the sampling wing, ``rmtnet`` at the base).

An import may point down or across, never up: module-level and function-level imports alike, a submodule's import of
its package ``__init__`` included. ``spectra`` never imports torch. Also: no cycle (a package counting as its
``__init__``), and no private name (``_x``) of one module used by another — neither imported (``from .m import _x``)
nor reached as an attribute (``m._x``). Private modules (``_validation``, ``_io``, ``_system``) are the package's
shared internals and may be imported; their public names are their interface.

Deprecated aliases (:mod:`rmtnet._deprecation`: old module paths kept for one release) name their target as a
string, so they are no edge; the test checks that every such target exists. An import inside a function whose body
raises a DeprecationWarning (a deprecated method kept for one release) is exempt from the layers, and listed.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rmtnet"

# The layers, lowest first. A module's layer is that of the longest prefix listed here.
LAYERS = {
    "base": ("rmtnet", "rmtnet._validation", "rmtnet.backend", "rmtnet._io", "rmtnet._system", "rmtnet._deprecation",
             "rmtnet._optional", "rmtnet._progress"),
    "free-probability core": ("rmtnet.spectra.measures", "rmtnet.spectra.laws", "rmtnet.spectra.free",
                              "rmtnet.spectra.continuation", "rmtnet.spectra.transforms", "rmtnet.spectra.series",
                              "rmtnet.spectra.symbolic", "rmtnet.spectra.registry"),
    "network theory": ("rmtnet.spectra.network", "rmtnet.spectra.activations", "rmtnet.spectra.meanfield",
                       "rmtnet.spectra.jacobian", "rmtnet.spectra.fisher", "rmtnet.spectra.ntk",
                       "rmtnet.spectra.kernels", "rmtnet.spectra.predict", "rmtnet.spectra.mixer",
                       "rmtnet.spectra.monarch", "rmtnet.spectra.stability"),
    "sampling": ("rmtnet.spectra", "rmtnet.spectra.sampling", "rmtnet.spectra.diagnostics"),
    "tools": ("rmtnet.plot", "rmtnet.experiments", "rmtnet.cli", "rmtnet.figures"),
    "nets": ("rmtnet.nets", "rmtnet.nets.spectral_audit"),
    "studies": ("rmtnet.studies", "rmtnet.studies.trained_spectra"),
}
RANK = {name: i for i, name in enumerate(LAYERS)}
# rmtnet.spectra's theory modules must not be reached by prefix "rmtnet.spectra" (the facade) alone.
_EXACT = {"rmtnet", "rmtnet.spectra"}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name):
    return MODULES[name].name == "__init__.py"


def _source(module):
    return MODULES[module].read_text(encoding="utf-8")


def _is_signpost(tree):
    """A deprecated module alias: its only statements are a docstring, the import of rmtnet._deprecation and one
    moved_module(...) call."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "moved_module"]
    return bool(calls) and len(tree.body) <= 3


SIGNPOSTS = {m for m in MODULES if _is_signpost(ast.parse(_source(m)))}


def layer_of(module):
    """The layer of ``module`` (KeyError when none is assigned)."""
    best = None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            exact = prefix in _EXACT
            if module == prefix or (not exact and module.startswith(prefix + ".")):
                if best is None or len(prefix) > len(best[1]):
                    best = (layer, prefix)
    if best is None:
        raise KeyError(module)
    return best[0]


def _resolve(module, level, target):
    """The absolute name of ``from <level dots><target> import …`` written in ``module``."""
    if level == 0:
        return target
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _deprecated_functions(tree):
    """Line ranges of functions whose body raises a DeprecationWarning (deprecated names kept for one release)."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if "DeprecationWarning" in names or "warn_moved" in names:
                spans.append((node.lineno, node.end_lineno))
    return spans


def imports(module, source=None):
    """(imported module, private names imported from it or used as its attributes, line, deprecated) for each
    import in ``module`` (its file, or ``source`` read as that module), at any depth."""
    tree = ast.parse(_source(module) if source is None else source)
    deprecated = _deprecated_functions(tree)
    edges, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rmtnet":
                    edges.append((alias.name, set(), node.lineno))
                    if alias.asname:
                        bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source_name = _resolve(module, node.level, node.module)
            if source_name.split(".")[0] != "rmtnet":
                continue
            private, names = set(), False
            for alias in node.names:
                sub = f"{source_name}.{alias.name}"
                if sub in MODULES:                       # `from . import series`: the module itself
                    edges.append((sub, set(), node.lineno))
                    bound[alias.asname or alias.name] = sub
                else:                                    # a name defined in (or re-exported by) `source_name`
                    names = True
                    if alias.name.startswith("_"):
                        private.add(alias.name)
            if names:
                edges.append((source_name, private, node.lineno))
    for node in ast.walk(tree):                          # m._x on a bound sibling module m
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            target = bound[node.value.id]
            if f"{target}.{node.attr}" not in MODULES:
                edges.append((target, {node.attr}, node.lineno))
    return [(t, p, line, any(a <= line <= b for a, b in deprecated))
            for t, p, line in edges if t in MODULES and t != module]


GRAPH = {m: imports(m) for m in MODULES}


def upward(graph):
    """Every import that points to a higher layer, as 'module (line) -> target: layer -> layer'."""
    found = []
    for m, edges in graph.items():
        if m in SIGNPOSTS:
            continue
        for t, _, line, deprecated in edges:
            if not deprecated and t not in SIGNPOSTS and RANK[layer_of(t)] > RANK[layer_of(m)]:
                found.append(f"{m} (line {line}) -> {t}: {layer_of(m)} -> {layer_of(t)}")
    return found


def _cycles(graph):
    """Every elementary cycle's representative, found by depth-first search with a path stack."""
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for target, _, _, _ in graph[m]:
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_the_walk_sees_function_level_imports():
    """The graph is not empty and contains a known edge, so that a broken walk cannot pass vacuously."""
    assert any(t == "rmtnet.spectra.measures" for t, _, _, _ in GRAPH["rmtnet.spectra.laws"])
    assert sum(len(e) for e in GRAPH.values()) > 50


def test_every_module_has_a_layer():
    missing = []
    for m in set(MODULES) - SIGNPOSTS:                   # signposts stand outside the layers for one release
        try:
            layer_of(m)
        except KeyError:
            missing.append(m)
    assert not missing, f"assign a layer in tests/test_layering.py to: {missing}"


def test_imports_point_down_or_across():
    problems = upward(GRAPH)
    assert not problems, "\n".join(problems)


def test_an_upward_import_fails_the_test():
    """The check itself can fail: a function-level import of nets in a law, a module-level import of the sampling
    wing in the theory, and a submodule's import of its package facade are each reported."""
    cases = {
        "rmtnet.spectra.laws": "def f():\n    from rmtnet.nets import models\n",
        "rmtnet.spectra.kernels": "from .sampling.random_matrices import layer_weights\n",
        "rmtnet.spectra.ntk": "from . import MarchenkoPastur\n",       # a name of the facade rmtnet.spectra
        "rmtnet.backend": "import rmtnet.spectra.series\n",
    }
    for module, source in cases.items():
        assert upward({module: imports(module, source)}), module
    kept = "import warnings\ndef old():\n    warnings.warn('x', DeprecationWarning)\n    from rmtnet.nets import models\n"
    assert not upward({"rmtnet.spectra.laws": imports("rmtnet.spectra.laws", kept)})


def test_spectra_never_imports_torch():
    found = []
    for m, path in MODULES.items():
        if m == "rmtnet.spectra" or m.startswith("rmtnet.spectra."):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
                found += [f"{m} (line {node.lineno}) imports {n}" for n in names if n.split(".")[0] == "torch"]
    assert not found, "\n".join(found)


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_name_crosses_a_module_boundary():
    leaks = [f"{m} (line {line}) uses {', '.join(sorted(p))} of {t}"
             for m, edges in GRAPH.items() for t, p, line, _ in edges if p]
    assert not leaks, "\n".join(leaks)


def test_nothing_in_the_package_uses_a_deprecated_path():
    """Signposts are for users' scripts: the package itself imports the new places."""
    used = [f"{m} (line {line}) imports {t}" for m, edges in GRAPH.items() for t, _, line, _ in edges
            if t in SIGNPOSTS]
    assert not used, "\n".join(used)


def test_signposts_point_to_modules_that_exist():
    assert {"rmtnet.arch", "rmtnet.spectra.montecarlo"} <= SIGNPOSTS     # the walk recognises them
    for m in SIGNPOSTS:
        call = next(n for n in ast.walk(ast.parse(_source(m)))
                    if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "moved_module")
        target = call.args[1].value
        assert target in MODULES and target not in SIGNPOSTS, (m, target)
