"""Sphinx configuration of rmtnet's API reference (built offline by ``bash scripts/docs.sh``, warnings as errors).

The gallery page is written at build time from the figure scripts' own docstrings (``rmtnet list``'s one-line
descriptions), with each figure shown: ``figures/NAME.png`` where it has been drawn (``bash scripts/figures.sh``), else
the shipped thumbnail ``docs/_static/gallery/NAME.png`` (``scripts/thumbnails.py`` makes them from drawn figures).
Thumbnails rather than drawing at build time: drawing all quick figures takes about 8 minutes on 2 cores and trains
networks, which a docs build should not; 21 thumbnails at 800 px are 0.9 MB.

Mathematics (``:math:`` and ``.. math::`` on the pages) is typeset by MathJax, loaded from the bundled copy of
``sphinx-mathjax-offline`` (the docs extra) so that the built HTML renders offline."""
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

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "sphinx.ext.viewcode",
              "sphinx-mathjax-offline"]          # MathJax 3 copied into _static/mathjax: no CDN
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
html_theme = "alabaster"
html_theme_options = {"description": "Random-matrix theory and free probability for deep networks",
                      "fixed_sidebar": True, "page_width": "1200px"}     # code lines of ~95 characters fit
exclude_patterns = ["_build"]


def _gallery_image(name, source, images):
    """The RST lines showing figure ``name``: the drawn figure if there is one, else the shipped thumbnail."""
    png, thumb = ROOT / "figures" / f"{name}.png", source / "_static" / "gallery" / f"{name}.png"
    if png.exists():
        shutil.copy(png, images / png.name)
        return [f".. image:: _gallery/{png.name}", f"   :alt: {name}", "   :width: 100%", ""]
    if thumb.exists():
        return [f".. image:: _static/gallery/{thumb.name}", f"   :alt: {name} (thumbnail)", "   :width: 100%", "",
                f"A thumbnail of the quick-size figure, shipped with the docs: ``rmtnet run {name}`` draws it "
                f"in full into ``figures/{name}.png``, which a later build shows here.", ""]
    return [f"Not drawn in this build: ``rmtnet run {name}`` writes ``figures/{name}.png``.", ""]


def write_gallery(app):
    """docs/gallery.rst: one section per simulation, its description, the figure (drawn, or the shipped thumbnail),
    how to draw it."""
    source = Path(app.srcdir)
    images = source / "_gallery"
    shutil.rmtree(images, ignore_errors=True)
    images.mkdir()
    lines = ["Gallery", "=======", "",
             "Each figure script of ``simulations/`` (installed as ``rmtnet.simulations``), with the first sentence",
             "of its docstring. ``rmtnet run NAME`` draws one into ``./figures``; ``bash scripts/figures.sh`` draws",
             "all of them at quick sizes, and a later docs build shows them here. Until then each section shows a",
             "small thumbnail shipped with the docs (``docs/_static/gallery``, made from the quick figures by",
             "``scripts/thumbnails.py``): drawing every figure takes minutes and trains networks, too much for a",
             "docs build.", ""]
    for path in cli.scripts():
        name = path.stem
        lines += [name, "-" * len(name), "", cli.description(path), ""]
        lines += _gallery_image(name, source, images)
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
