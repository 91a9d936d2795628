"""Sphinx configuration of rmtnet's API reference (built offline by ``bash scripts/docs.sh``, warnings as errors).

The gallery page is written at build time from the figure scripts' own docstrings (``rmtnet list``'s one-line
descriptions), with each figure shown where ``figures/NAME.png`` has been drawn (``bash scripts/figures.sh``)."""
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rmtnet  # noqa: E402
from rmtnet import cli  # noqa: E402

project = "rmtnet"
author = "the rmtnet developers"
release = version = rmtnet.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "sphinx.ext.viewcode"]
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
html_theme = "alabaster"
html_theme_options = {"description": "Random-matrix theory and free probability for deep networks",
                      "fixed_sidebar": True}
exclude_patterns = ["_build"]


def write_gallery(app):
    """docs/gallery.rst: one section per simulation, its description, the figure if drawn, how to draw it."""
    source = Path(app.srcdir)
    images = source / "_gallery"
    shutil.rmtree(images, ignore_errors=True)
    images.mkdir()
    lines = ["Gallery", "=======", "",
             "Each figure script of ``simulations/`` (installed as ``rmtnet.simulations``), with the first sentence",
             "of its docstring. ``rmtnet run NAME`` draws one into ``./figures``; ``bash scripts/figures.sh`` draws",
             "all of them at quick sizes, and a later docs build shows them here.", ""]
    for path in cli.scripts():
        name = path.stem
        lines += [name, "-" * len(name), "", cli.description(path), ""]
        png = ROOT / "figures" / f"{name}.png"
        if png.exists():
            shutil.copy(png, images / png.name)
            lines += [f".. image:: _gallery/{png.name}", f"   :alt: {name}", "   :width: 100%", ""]
        else:
            lines += [f"*Not drawn in this build:* ``rmtnet run {name}`` writes ``figures/{name}.png``.", ""]
        lines += ["::", "", f"    rmtnet run {name}            # quick sizes", f"    rmtnet run {name} --full     # the larger ones", ""]
    (source / "gallery.rst").write_text("\n".join(lines), encoding="utf-8")


_GRID_ROW = re.compile(r"^\s*[|+].*[|+]\s*$")


def plain_bars(app, what, name, obj, options, lines):
    """rmtnet's docstrings write mathematics in plain text, where |x| is an absolute value or a norm and never an
    RST substitution: its bars become U+2223 (∣, the same width, so simple tables stay aligned); grid-table rows keep
    theirs."""
    for i, line in enumerate(lines):
        if "|" in line and not _GRID_ROW.match(line):
            lines[i] = line.replace("|", "\u2223")


def setup(app):
    app.connect("builder-inited", write_gallery)
    app.connect("autodoc-process-docstring", plain_bars)
