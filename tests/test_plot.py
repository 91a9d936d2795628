"""rmtnet.plot leaves the matplotlib backend to the user, and figures are still written headless.

The backend is process-wide state that the first pyplot call fixes, so every check runs in a fresh interpreter."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(code, tmp_path, **env_changes):
    """Run ``code`` in a fresh interpreter without a display; returns the JSON it prints last."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    env.update(env_changes)
    env["MPLCONFIGDIR"] = str(tmp_path / "mplconfig")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_SAVE_A_FIGURE = """
    import json
    import numpy as np
    import matplotlib
    import matplotlib.pyplot as plt
    from rmtnet import plot
    from rmtnet.spectra.laws import MarchenkoPastur

    law = MarchenkoPastur(0.5)
    X = np.random.default_rng(0).standard_normal((200, 400)) / np.sqrt(400)
    eig = np.linalg.eigvalsh(X @ X.T)
    fig, ax = plt.subplots()
    _, table = plot.overlay(law, eig, ax=ax, bins=20)
    path = plot.save(fig, "out/fig.png", {"mp": table})
    csv = open("out/fig.csv").read().splitlines()
    print(json.dumps({"backend": matplotlib.get_backend(), "png": open(path, "rb").read(8).hex(),
                      "open_figures": plt.get_fignums(), "rows": len(csv) - 1,
                      "ks_written": float(csv[1].split(",")[-1]), "ks": plot.ks_distance(law, eig)}))
"""


@pytest.mark.parametrize("backend", ["svg", "pdf"])
def test_import_keeps_the_backend_from_the_environment(tmp_path, backend):
    got = _run("""
        import json, matplotlib
        import rmtnet.plot
        print(json.dumps(matplotlib.get_backend()))
    """, tmp_path, MPLBACKEND=backend)
    assert got == backend


def test_import_keeps_the_backend_from_matplotlib_use(tmp_path):
    got = _run("""
        import json, matplotlib
        matplotlib.use("pdf")
        import rmtnet.plot
        import rmtnet.plot as again
        print(json.dumps(matplotlib.get_backend()))
    """, tmp_path)
    assert got == "pdf"


def test_import_chooses_no_backend(tmp_path):
    """With no backend chosen by anyone, importing rmtnet.plot leaves it unresolved (matplotlib decides later)."""
    got = _run("""
        import json, matplotlib
        import rmtnet.plot
        print(json.dumps(matplotlib.rcParams._get_backend_or_none()))
    """, tmp_path)
    assert got is None


def test_save_headless_without_a_chosen_backend(tmp_path):
    """No display, no backend chosen: pyplot falls back to Agg by itself, and the PNG and CSV are written."""
    got = _run(_SAVE_A_FIGURE, tmp_path)
    assert got["backend"].lower() == "agg"
    assert bytes.fromhex(got["png"]) == PNG_MAGIC
    assert got["open_figures"] == []                        # save() closed the pyplot figure
    assert got["rows"] == 20                                # one row per histogram bin
    assert got["ks_written"] == pytest.approx(got["ks"], rel=1e-12)
    assert 0 < got["ks"] < 0.1                              # 200 MP(½) eigenvalues against their law


def test_save_png_under_a_user_backend(tmp_path):
    """A user's non-Agg backend (svg) stays in force, and save() still writes a PNG through the figure's canvas."""
    got = _run(_SAVE_A_FIGURE, tmp_path, MPLBACKEND="svg")
    assert got["backend"] == "svg"
    assert bytes.fromhex(got["png"]) == PNG_MAGIC


def test_save_a_figure_made_without_pyplot(tmp_path):
    got = _run("""
        import json, matplotlib
        from matplotlib.figure import Figure
        from rmtnet import plot
        fig = Figure()
        fig.add_subplot().plot([0, 1], [1, 0])
        path = plot.save(fig, "fig.png")
        print(json.dumps([open(path, "rb").read(8).hex(), matplotlib.rcParams._get_backend_or_none()]))
    """, tmp_path)
    assert bytes.fromhex(got[0]) == PNG_MAGIC
    assert got[1] is None                                   # nothing forced a backend
