"""The ``>>>`` examples of rmtnet's docstrings run as tests: one pytest case per docstring that has examples.

The docstrings are collected with :class:`doctest.DocTestFinder` from every module of ``rmtnet`` itself,
``rmtnet.spectra``, ``rmtnet.nets`` and ``rmtnet.studies`` (their subpackages included), found by walking the package
so that a module that is added or moved is collected without editing this file. The figure scripts
(``rmtnet.simulations``) are left out: their examples would be whole runs; the studies' examples are the smallest
legal runs. A docstring is collected only in the module that defines its object, so a name re-exported by a package
is run once; every public class and function (in its module's ``__all__``) has an example.

Each example runs under fixed NumPy print options (8 digits, no scientific notation for small numbers, NumPy 1.25's
scalar repr ``1.0`` rather than ``np.float64(1.0)``) and with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``, so that an
example's printed output does not depend on the NumPy version or on options another test left set; the global
NumPy and torch generators are restored after each docstring, so an example that seeds one changes no later test.

The README's code blocks run in tests/test_readme.py, each in a fresh interpreter.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import numpy as np
import pytest
import torch

import rmtnet

PACKAGES = ("rmtnet", "rmtnet.spectra", "rmtnet.nets", "rmtnet.studies")
EXCLUDED = ("rmtnet.simulations",)
MIN_EXAMPLES = 40
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names():
    """rmtnet and every module below it, less the excluded subpackages."""
    names = ["rmtnet"]
    for info in pkgutil.walk_packages(rmtnet.__path__, "rmtnet.", onerror=lambda name: None):
        if not any(info.name == ex or info.name.startswith(ex + ".") for ex in EXCLUDED):
            names.append(info.name)
    return sorted(names)


def _modules():
    """The imported modules; one kept only as a deprecated alias of a moved one is imported without its warning
    (its objects are collected from the module that defines them)."""
    modules = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in _module_names():
            modules.append(importlib.import_module(name))
    return modules


def _collect():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = {}
    for module in _modules():
        for test in finder.find(module):
            if test.examples:
                tests.setdefault(test.name, test)
    return tests


DOCTESTS = _collect()


def test_modules_walked():
    """The walk reaches the four packages the examples live in and leaves the figure scripts out."""
    names = _module_names()
    for package in PACKAGES:
        assert package in names
    assert "rmtnet.spectra.transforms" in names and "rmtnet.nets.metrics" in names
    assert not any(name.startswith(EXCLUDED) for name in names)


def test_every_public_class_and_function_has_an_example():
    """Every class and function a public module (no ``_`` part in its name) lists in ``__all__`` and defines itself
    has an "Examples" section."""
    import inspect
    public = [m for m in _modules() if not any(part.startswith("_") for part in m.__name__.split("."))]
    missing = [f"{module.__name__}.{name}" for module in public for name in getattr(module, "__all__", ())
               if (inspect.isfunction(obj := getattr(module, name, None)) or inspect.isclass(obj))
               and obj.__module__ == module.__name__ and "Examples" not in (obj.__doc__ or "")]
    assert not missing, f"{len(missing)} public names without an Examples section: {missing}"


def test_enough_examples():
    """The docstrings carry at least MIN_EXAMPLES ``>>>`` examples in all, counting only those that run (an example
    marked ``doctest: +SKIP``, such as a loader that needs files, does not count)."""
    n_examples = sum(1 for test in DOCTESTS.values() for example in test.examples
                     if not example.options.get(doctest.SKIP))
    assert n_examples >= MIN_EXAMPLES, f"only {n_examples} doctest examples in {len(DOCTESTS)} docstrings"


@pytest.mark.parametrize("name", sorted(DOCTESTS))
def test_docstring_examples(name):
    test = DOCTESTS[name]
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    globs = dict(test.globs)
    test.globs = globs
    output = []
    torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()
    try:
        with np.printoptions(precision=8, suppress=True, legacy="1.25"):
            runner.run(test, out=output.append, clear_globs=False)
    finally:                                   # an example that seeds a global generator leaves no trace
        torch.random.set_rng_state(torch_state)
        np.random.set_state(numpy_state)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(output)
