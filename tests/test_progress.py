"""Progress bars (rmtnet._progress): shown on a terminal, silent elsewhere and with ``progress=False``, off under
``TQDM_DISABLE=1``, and never a change to a number — a bar counts work, it draws no random numbers and reorders
nothing. The samplers and SLQ are run three ways: ``progress=False``, ``progress=True`` off a terminal (as pytest's
captured stderr is) and ``progress=True`` on a stand-in terminal with the bars' delay set to 0, where the bar must
show; the three results must be identical (``np.array_equal``, not close)."""
import ast
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from rmtnet import _progress, experiments
from rmtnet.spectra import FussCatalan, network
from rmtnet.spectra.measures import _tables
from rmtnet.spectra.sampling import lanczos, montecarlo, random_matrices

ROOT = Path(__file__).resolve().parent.parent
NET = network.mlp(3, 12, sigma_w=1.2, activation="tanh")
CK_NET = network.mlp(3, 12, ratios=[1.0, 1.0, 1 / 4], sigma_w=1.2, activation="tanh")
FW = network.mlp(2, widths=[12, 12, 12], activation="tanh")
SPD = np.diag(np.arange(1.0, 31.0))

# (what the bar says, a call taking progress=...)
SAMPLERS = [
    ("Jacobian samples", lambda p: montecarlo.sample_jacobian_eigs(NET, n_samples=3, seed=1, progress=p)),
    ("Fisher samples", lambda p: montecarlo.sample_fisher_eigs(NET, n_samples=3, seed=1, progress=p)),
    ("CK samples", lambda p: montecarlo.sample_ck_eigs(CK_NET, 6, n_samples=3, seed=1, progress=p)),
    ("NTK samples", lambda p: montecarlo.sample_ntk_eigs(FW, 6, n_samples=3, seed=1, progress=p)),
    ("NNGP samples", lambda p: montecarlo.sample_nngp_kernel(NET, np.eye(3, 12), n_samples=5, seed=1,
                                                             max_bytes=3 * 8 * 144 * 2, progress=p)),
    ("Ginibre product", lambda p: random_matrices.ginibre_product_eigs(10, 3, seed=1, n_samples=2, progress=p)),
    ("free product", lambda p: random_matrices.free_product_eigs([np.linspace(0.5, 1.5, 10)] * 3, seed=1,
                                                                 progress=p)),
    ("Lanczos", lambda p: lanczos.slq(SPD, 8, 3, seed=1, progress=p).atoms()),
]


class _Terminal(io.StringIO):
    """A stand-in stderr that says it is a terminal."""

    def isatty(self):
        return True


def on_terminal(monkeypatch):
    """stderr replaced by a terminal stand-in, bars shown at once (delay 0); returns the stand-in. Called in the
    test's body: pytest's output capture sets sys.stderr again after the fixtures ran."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setitem(_progress.bar.__kwdefaults__, "delay", 0.0)
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    return screen


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("label, call", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_a_bar_changes_no_number_and_shows_only_on_a_terminal(label, call, capfd, monkeypatch):
    quiet = call(False)
    off_terminal = call(True)                           # pytest's stderr is no terminal: no bar
    assert capfd.readouterr().err == ""
    with monkeypatch.context() as m:
        screen = on_terminal(m)
        shown = call(True)
        silenced = call(False)
    assert label in screen.getvalue()                   # on a terminal the bar shows ...
    assert _same(quiet, off_terminal) and _same(quiet, shown) and _same(quiet, silenced)   # ... and changes nothing


def test_progress_false_and_tqdm_disable_silence_a_terminal(monkeypatch):
    terminal = on_terminal(monkeypatch)
    montecarlo.sample_jacobian_eigs(NET, seed=0, progress=False)
    assert terminal.getvalue() == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    montecarlo.sample_jacobian_eigs(NET, seed=0)
    lanczos.slq(SPD, 4, 2, seed=0)
    experiments.sweep(lambda seed, a: {"v": a}, {"a": [1, 2]}, store=None)
    assert terminal.getvalue() == ""
    assert _progress.tqdm_disable(True) is True


def test_a_bar_only_appears_after_its_delay(monkeypatch):
    screen = on_terminal(monkeypatch)
    assert list(_progress.bar(range(5), desc="quick", delay=60.0)) == [0, 1, 2, 3, 4]
    assert "quick" not in screen.getvalue()
    assert list(_progress.bar(range(5), desc="shown", delay=0.0)) == [0, 1, 2, 3, 4]
    assert "shown" in screen.getvalue()


@pytest.mark.parametrize("value", [1, 0, "yes", None, np.float64(1.0)])
def test_progress_must_be_a_boolean(value):
    with pytest.raises(TypeError, match="progress must be True or False"):
        montecarlo.sample_jacobian_eigs(NET, seed=0, progress=value)
    with pytest.raises(TypeError, match="progress must be True or False"):
        lanczos.slq(SPD, 4, 2, seed=0, progress=value)
    with pytest.raises(TypeError, match="progress must be True or False"):
        experiments.sweep(lambda seed, a: {"v": a}, {"a": [1]}, store=None, progress=value)


def test_a_slow_cdf_table_shows_a_bar_past_its_delay(monkeypatch):
    """The generic cdf table (rmtnet.spectra.measures) counts density values once it has taken longer than its
    delay (here 0), and its numbers are those of a table built without a bar."""
    terminal = on_terminal(monkeypatch)
    monkeypatch.setattr(_tables.CdfTables, "_TABLE_BAR_DELAY", 0.0)
    shown = FussCatalan(2).cdf(np.array([0.5, 1.0, 3.0]))
    assert "cdf table of FussCatalan (1 panel)" in terminal.getvalue()
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert np.array_equal(shown, FussCatalan(2).cdf(np.array([0.5, 1.0, 3.0])))


def test_a_sweep_shows_its_bar_and_the_figure_scripts_let_it(monkeypatch):
    terminal = on_terminal(monkeypatch)
    table = experiments.sweep(lambda seed, a: {"v": a * 10 + seed}, {"a": [1, 2]}, seeds=(0, 1), store=None)
    assert "sweep" in terminal.getvalue() and list(table.v) == [10, 11, 20, 21]
    silenced = []
    for path in sorted((ROOT / "simulations").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "sweep":
                if any(k.arg == "progress" and isinstance(k.value, ast.Constant) and k.value.value is False
                       for k in node.keywords):
                    silenced.append(path.stem)
    assert not silenced, f"figure scripts whose sweep passes progress=False: {silenced}"
