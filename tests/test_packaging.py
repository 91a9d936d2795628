"""Installed = usable: the wheel, installed without extras into a fresh virtual environment, carries the figure
scripts and runs the spectral engine and its `rmtnet` command with no checkout in sight, no torch, no Dask, no
data-set packages and no network; a missing extra says which one to install. pyproject's package list is every
package folder of rmtnet/, and its torch is an open range (the CPU pin lives in scripts/setup.sh)."""
import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rmtnet import _optional

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.stem for p in (ROOT / "simulations").glob("*.py") if not p.name.startswith("_"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
OPTIONAL = sorted(_optional.EXTRAS)                 # import names of the optional dependencies


def test_pyproject_lists_every_package_folder():
    """setuptools gets an explicit list (the simulations are mapped in), so a new subpackage must be added to it."""
    config = PYPROJECT["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rmtnet").rglob("__init__.py")}
    assert set(config["packages"]) == folders | {"rmtnet.simulations"}
    assert config["package-dir"]["rmtnet.simulations"] == "simulations"


def _name(requirement):
    return requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0].strip()


def test_metadata_has_the_engine_as_core_and_the_rest_as_extras():
    """No torch, Dask or data-set package in the core; each optional import is in the extra the error names, and in
    "all"; torch is an open range in the metadata and pinned exactly only in scripts/setup.sh, before the extras."""
    project = PYPROJECT["project"]
    core = {_name(r) for r in project["dependencies"]}
    assert core == {"numpy", "scipy", "sympy", "matplotlib", "pandas", "tqdm", "array-api-compat", "threadpoolctl"}
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    for package, extra in _optional.EXTRAS.values():
        assert package in extras[extra], (package, extra)
        assert extra == "gpu" or package in extras["all"], package
    torch = {r for v in project["optional-dependencies"].values() for r in v if _name(r) == "torch"}
    assert torch == {"torch>=2.4"}
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.index('"torch==2.13.0"') < setup.index('-e ".[all,test,docs]"')
    assert project["classifiers"] and "Programming Language :: Python :: 3" in project["classifiers"]


def _imported_modules(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module, node.lineno


def test_optional_dependencies_are_imported_only_through_the_helper():
    """Outside rmtnet._optional, only torch is imported by name, and only below rmtnet.nets and rmtnet.studies,
    whose package __init__ calls require("torch", …) before any submodule runs."""
    found = []
    for path in sorted((ROOT / "rmtnet").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        guarded = module.startswith(("rmtnet.nets.", "rmtnet.studies.")) and path.name != "__init__.py"
        found += [f"{module} (line {line}) imports {name}" for name, line in _imported_modules(path)
                  if name.split(".")[0] in OPTIONAL and not (guarded and name.split(".")[0] == "torch")]
    assert not found, "\n".join(found)
    for package in ("nets", "studies"):
        assert f'require("torch", "rmtnet.{package}")' in (ROOT / "rmtnet" / package / "__init__.py").read_text()


@pytest.fixture
def without(monkeypatch):
    """Make ``import name`` fail as if ``name`` (with its submodules) were not installed."""
    def hide(name):
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setitem(sys.modules, name, None)
    return hide


@pytest.mark.parametrize("module, extra", [("torch", "nets"), ("sklearn.datasets", "data"), ("mnist1d.data", "data"),
                                           ("distributed", "cluster"), ("cupy", "gpu")])
def test_a_missing_extra_names_itself(without, module, extra):
    without(module.split(".")[0])
    with pytest.raises(ModuleNotFoundError, match=rf"^who needs .*: pip install 'rmtnet\[{extra}\]'$") as info:
        _optional.require(module, "who")
    assert info.value.name == module.split(".")[0]


def test_a_broken_dependency_is_not_reported_as_missing(monkeypatch):
    """torch installed but one of its own imports missing: that error, unchanged, not "install rmtnet[nets]"."""
    def broken(name):
        raise ModuleNotFoundError("No module named 'libsomething'", name="libsomething")
    monkeypatch.setattr(_optional.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="libsomething") as info:
        _optional.require("torch", "rmtnet.nets")
    assert not isinstance(info.value, _optional.MissingExtra)
    with pytest.raises(ValueError, match="numpy is not an optional dependency"):
        _optional.require("numpy", "x")


def test_the_loaders_and_the_cluster_name_their_extras(without):
    from rmtnet import experiments
    from rmtnet.nets import data
    without("sklearn")
    with pytest.raises(ImportError, match=r"rmtnet.nets.data.digits needs scikit-learn.*'rmtnet\[data\]'"):
        data.digits()
    without("mnist1d")
    with pytest.raises(ImportError, match=r"rmtnet.nets.data.mnist1d needs mnist1d.*'rmtnet\[data\]'"):
        data.mnist1d(n_samples=100)
    without("distributed")
    with pytest.raises(RuntimeError, match=r"scheduler= needs distributed.*'rmtnet\[cluster\]'"):
        experiments.connect("tcp://127.0.0.1:1", timeout=0.1)


def _local_sources():
    """pip's configured package sources that lie on this machine (file:// indexes, find-links folders), as pip
    arguments; None when there is none (then nothing is installed: this test never reaches the network)."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    indexes, links = [], []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        for item in value.strip("'\"").split():
            if key.endswith("index-url") and item.startswith("file://"):
                indexes.append(item)
            elif key.endswith("find-links") and (item.startswith("file://") or Path(item).is_dir()):
                links.append(item)
    if not indexes:
        return None
    return (["--index-url", indexes[0]] + [a for i in indexes[1:] for a in ("--extra-index-url", i)]
            + [a for f in links for a in ("--find-links", f)])


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this checkout (no build isolation, no network), installed with its core dependencies
    alone, from this machine's local package index, into a fresh virtual environment (no system site-packages)."""
    sources = _local_sources()
    if sources is None:
        pytest.skip("no package index on this machine's disk in pip's configuration (this test uses no network)")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"             # a copy, so that no build/ left in the checkout feeds stale files in
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "figures", "*.egg-info",
                                                                 "__pycache__", ".hypothesis", ".pytest_cache"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel, = (tmp / "dist").glob("rmtnet-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
                              *sources, str(wheel)], capture_output=True, text=True,
                             env=dict(clean, PIP_CONFIG_FILE=os.devnull))
    assert install.returncode == 0, install.stderr
    work = tmp / "work"                                  # a working directory with no checkout around it
    work.mkdir()
    return venv, work, dict(clean, OMP_NUM_THREADS="1")


def _python(installed, code):
    venv, work, env = installed
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=work,
                          env=env)


def _rmtnet(installed, *args):
    venv, work, env = installed
    return subprocess.run([str(venv / "bin" / "rmtnet"), *args], capture_output=True, text=True, cwd=work, env=env)


def test_the_fresh_environment_has_no_extra(installed):
    r = _python(installed, "from importlib.metadata import distributions as d; print(*sorted(x.metadata['Name']"
                           ".lower() for x in d()))")
    packages = set(r.stdout.split())
    assert {"rmtnet", "numpy", "scipy", "threadpoolctl"} <= packages
    assert not packages & {"torch", "dask", "distributed", "scikit-learn", "mlxtend", "mnist1d", "pytest"}, packages


def test_the_wheel_carries_the_scripts_and_imports_from_itself(installed):
    venv, work, env = installed
    site = next(venv.glob("lib/python*/site-packages"))
    assert sorted(p.stem for p in (site / "rmtnet" / "simulations").glob("*.py")
                  if not p.name.startswith("_")) == SCRIPTS
    r = _python(installed, "import rmtnet, rmtnet.cli as c; print(rmtnet.__file__); print(c.SIMULATIONS_DIR)")
    package, sims = r.stdout.split()
    assert Path(package).parent == site / "rmtnet" and Path(sims) == site / "rmtnet" / "simulations"


def test_the_engine_runs_without_extras(installed):
    """A ⊠ law: for free a, b, m₂(ab) = m₂(a)m₁(b)² + m₁(a)²m₂(b) − m₁(a)²m₁(b)², so Bernoulli(½) ⊠ MP(1)
    (m₁ = m₂ = ½; m₁ = 1, m₂ = 2) has m₂ = ½ + ½ − ¼ = ¾. Importing the engine loads none of the optional packages."""
    r = _python(installed, "import sys; from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult; "
                           "print(free_mult(Bernoulli(0.5), MarchenkoPastur(1.0)).moment(2)); "
                           f"print(sorted(m for m in sys.modules if m.split('.')[0] in {OPTIONAL!r}))")
    assert r.returncode == 0, r.stderr
    m2, loaded = r.stdout.splitlines()
    assert float(m2) == pytest.approx(0.75, abs=1e-12) and loaded == "[]"


def test_importing_the_torch_models_names_the_extra(installed):
    r = _python(installed, "import rmtnet.nets")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == ("rmtnet._optional.MissingExtra: rmtnet.nets needs torch, which is "
                                                 "not installed: pip install 'rmtnet[nets]'")


def test_installed_command_lists_every_simulation(installed):
    r = _rmtnet(installed, "list")
    assert r.returncode == 0, r.stderr
    listed = [line.split()[0] for line in r.stdout.splitlines()[:len(SCRIPTS)]]
    assert listed == SCRIPTS and f"{len(SCRIPTS)} simulations" in r.stdout


def test_installed_command_runs_an_engine_figure_into_the_working_directory(installed):
    """mp_and_fuss_catalan (the ⊠ engine against Monte Carlo, ~7 s on one idle core) needs no extra: its PNG and
    CSV land in ./figures of the working directory. A torch figure fails alone, saying which extra it needs."""
    _, work, _ = installed
    r = _rmtnet(installed, "run", "mp_and_fuss_catalan", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert (work / "figures" / "mp_and_fuss_catalan.png").stat().st_size > 10_000
    assert (work / "figures" / "mp_and_fuss_catalan.csv").read_text().count("\n") > 10
    assert "1 of 1 simulations done" in r.stdout
    r = _rmtnet(installed, "run", "ntk_dynamics", "--jobs", "1")
    assert r.returncode == 1 and "0 of 1 simulations done" in r.stdout
    assert "[ntk_dynamics] this simulation needs torch, which is not installed: pip install 'rmtnet[nets]'" in r.stderr
