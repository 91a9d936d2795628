"""Public names that moved in the floor-plan step keep their old names for one release (rmtnet 0.3) as deprecated
aliases: each old path still gives the very same object, with a DeprecationWarning naming the new place."""
import importlib
import subprocess
import sys

import pytest

MOVED_MODULES = {
    "rmtnet.arch": "rmtnet.spectra.network",
    "rmtnet._backend": "rmtnet.backend",
    "rmtnet.spectra.freeness": "rmtnet.studies.freeness",
    "rmtnet.spectra.montecarlo": "rmtnet.spectra.sampling.montecarlo",
    "rmtnet.spectra.random_matrices": "rmtnet.spectra.sampling.random_matrices",
    "rmtnet.spectra.operators": "rmtnet.spectra.sampling.operators",
    "rmtnet.spectra.lanczos": "rmtnet.spectra.sampling.lanczos",
}


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_a_moved_module_is_its_new_module_with_a_warning(old):
    """In a fresh interpreter (so that the import really runs): `import old` warns, names the new place, and gives
    the new module; `from old import name` gives the new module's object."""
    new = MOVED_MODULES[old]
    code = (f"import warnings, importlib\n"
            f"with warnings.catch_warnings(record=True) as w:\n"
            f"    warnings.simplefilter('always')\n"
            f"    old = importlib.import_module({old!r})\n"
            f"new = importlib.import_module({new!r})\n"
            f"assert old is new, (old, new)\n"
            f"msgs = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]\n"
            f"assert any({new!r} in m and '0.3' in m for m in msgs), msgs\n"
            f"name = next(n for n in getattr(new, '__all__', dir(new)) if not n.startswith('_'))\n"
            f"ns = {{}}\n"
            f"exec(f'from {old} import {{name}} as x', ns)\n"
            f"assert ns['x'] is getattr(new, name)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_arch_mlp_still_builds_the_same_description():
    sys.modules.pop("rmtnet.arch", None)             # the alias replaces itself by its target once imported
    with pytest.warns(DeprecationWarning, match="rmtnet.spectra.network"):
        arch = importlib.import_module("rmtnet.arch")
    from rmtnet.spectra import network
    assert arch.mlp(3, 50, activation="tanh", sigma_w=1.2) == network.mlp(3, 50, activation="tanh", sigma_w=1.2)


def test_emn_names_of_nets_warn_and_point_to_the_study():
    import rmtnet.nets as nets
    from rmtnet.studies import emn
    with pytest.warns(DeprecationWarning, match="rmtnet.studies.emn.train_emn"):
        assert nets.train_emn is emn.train_emn
    with pytest.warns(DeprecationWarning, match="rmtnet.studies.emn"):
        assert nets.emn is emn
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        nets.not_a_name
