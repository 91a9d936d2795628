"""The common plumbing of the figure scripts in ``simulations/``: sizes, seeds, outputs and panel grids.

Every figure script has the same three functions:

- ``compute(size="quick", seed=0, backend=None, ...)`` computes the numbers the figure shows and returns them as
  :class:`Tables` (panel name → :class:`pandas.DataFrame`, the CSV written beside the figure), without importing
  matplotlib;
- ``draw(tables)`` draws them and returns the :class:`matplotlib.figure.Figure`;
- ``main(full=False, outdir="figures", seed=0, backend=None, ...)``, what ``rmtnet run NAME`` calls, runs both
  through :func:`make` and writes ``OUTDIR/NAME.png`` and ``OUTDIR/NAME.csv``.

A size is one of :data:`SIZES`: ``"tiny"`` (seconds; for tests of ``compute``), ``"quick"`` (the default of
``rmtnet run``) and ``"full"`` (``--full``). A script states its sizes as a mapping size → settings and reads them
with :func:`settings`. This module imports neither matplotlib (its drawing helpers import it when called) nor the
network packages.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rmtnet._io import output_path
from rmtnet._validation import integer_at_least, one_of, real_scalar, scalar

__all__ = ["SIZES", "Tables", "size_name", "settings", "seeds", "output_dir", "make", "write", "subplots",
           "style", "log_ticks", "caption", "report"]

SIZES = ("tiny", "quick", "full")


class Tables(dict):
    """The numbers of a figure: panel name → :class:`pandas.DataFrame`, in the order they are written to the CSV.

    ``extras`` holds what the drawing needs beside the tables and is not written (histogram edges and density
    curves, arrays of spectra, learned weights, the settings of the run).

    Parameters
    ----------
    *args, **kwargs
        As for :class:`dict`.
    extras : dict, optional
        The drawing's other inputs.

    Examples
    --------
    >>> import pandas as pd
    >>> t = Tables({"a": pd.DataFrame({"x": [1.0]})}, extras={"n": 3})
    >>> list(t), t.extras["n"]
    (['a'], 3)
    """

    def __init__(self, *args, extras=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.extras = dict(extras or {})


def size_name(size):
    """The size of a run: ``full`` as a bool (``--full`` or not), or one of :data:`SIZES` by name.

    Parameters
    ----------
    size : bool or str
        True → ``"full"``, False → ``"quick"``; a name is checked against :data:`SIZES`.

    Returns
    -------
    str

    Examples
    --------
    >>> size_name(False), size_name(True), size_name("tiny")
    ('quick', 'full', 'tiny')
    """
    size = scalar(size)                                  # np.True_ or a 0-d bool array: a bool
    if isinstance(size, bool):
        return "full" if size else "quick"
    if not isinstance(size, str) or size not in SIZES:
        raise ValueError(f"size must be one of {SIZES} or a bool (full), got {size!r}")
    return size


def settings(profiles, size, **overrides):
    """The settings of one size: ``profiles[size]`` with ``overrides`` replacing any of them.

    Parameters
    ----------
    profiles : dict
        Size name (of :data:`SIZES`) → dict of settings.
    size : bool or str
        As for :func:`size_name`.
    **overrides
        Settings that replace the profile's.

    Returns
    -------
    dict

    Examples
    --------
    >>> profiles = {"tiny": dict(n=10, seeds=1), "quick": dict(n=100, seeds=2), "full": dict(n=1000, seeds=5)}
    >>> settings(profiles, False), settings(profiles, "tiny", seeds=3)
    ({'n': 100, 'seeds': 2}, {'n': 10, 'seeds': 3})
    """
    return {**profiles[size_name(size)], **overrides}


def seeds(seed, count):
    """The seeds of ``count`` independent runs starting at ``seed`` (``--seed``): ``range(seed, seed + count)``.

    Examples
    --------
    >>> list(seeds(3, 2))
    [3, 4]
    """
    return range(seed, seed + int(count))


def data_dir_argument(s):
    """``{"data_dir": str(FOLDER)}`` where the settings ``s`` name a data folder (CIFAR-10's, see
    :func:`rmtnet.nets.data.cifar10`), else ``{}``: a run's configuration carries the folder only where one was given,
    so the runs of the offline data keep their configuration (and their rows in a sweep's store).

    Examples
    --------
    >>> data_dir_argument({"datasets": ("cifar10",), "data_dir": "/data/cifar"}), data_dir_argument({"seeds": 2})
    ({'data_dir': '/data/cifar'}, {})
    """
    return {} if s.get("data_dir") is None else {"data_dir": str(s["data_dir"])}


def output_dir(outdir):
    """``outdir`` as a :class:`~pathlib.Path`, created if missing (where a sweep keeps its runs); checked first by
    :func:`rmtnet._io.output_path` (TypeError for a non-path, ValueError naming ``outdir`` for a file standing
    there or above it, or a folder this process cannot write in).

    Examples
    --------
    >>> import tempfile, os
    >>> output_dir(os.path.join(tempfile.mkdtemp(), "figs")).is_dir()
    True
    """
    path = output_path("outdir", outdir, kind="directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write(fig, outdir, name, tables):
    """Write ``fig`` to ``OUTDIR/NAME.png`` and the concatenated ``tables`` (a ``panel`` column first, the KS
    distance of a table that has one) to ``OUTDIR/NAME.csv``, through :func:`rmtnet.plot.save`; returns the PNG's
    path.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (closed afterwards if pyplot manages it).
    outdir : str or Path
        The folder (created if missing).
    name : str
        The file name of the outputs (without suffix).
    tables : dict of str to DataFrame
        Panel name → plotted numbers.

    Returns
    -------
    Path
        ``OUTDIR/NAME.png``.

    Examples
    --------
    >>> import os, tempfile
    >>> from matplotlib.figure import Figure
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = write(Figure(), folder, "demo", {"a": pd.DataFrame({"x": [1.0, 2.0]})})
    ...     print(path.name, sorted(os.listdir(folder)), pd.read_csv(path.with_suffix(".csv")).shape)
    demo.png ['demo.csv', 'demo.png'] (2, 2)
    """
    from . import plot
    folder = output_dir(outdir)
    png = output_path("outdir", folder / f"{name}.png")
    output_path("outdir", png.with_suffix(".csv"))
    return plot.save(fig, png, tables)


def make(name, compute, draw, full=False, outdir="figures", seed=0, backend=None, **kwargs):
    """What a script's ``main`` does: ``tables = compute(size, seed=, backend=, **kwargs)``, then draws them and
    writes the figure and its CSV as ``name``.

    Parameters
    ----------
    name : str
        The file name of the outputs (without suffix).
    compute, draw : callable
        The script's two halves: ``compute(size, seed=, backend=, **kwargs) -> Tables`` and
        ``draw(tables) -> Figure``.
    full : bool
        ``--full``: the full size, else quick.
    outdir, seed, backend
        As the command line passes them.
    **kwargs
        Passed on to ``compute`` (overrides of the size's settings, ``outdir`` for scripts that keep runs, ...).

    Returns
    -------
    (pathlib.Path, Tables)
        The PNG's path and the tables, as ``rmtnet run`` expects of ``main``.

    Examples
    --------
    A toy script whose ``compute`` tabulates ``y = x²`` at ``n`` points (``n`` passed on as an override) and whose
    ``draw`` plots it on a figure pyplot does not manage:

    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> def compute(size, seed=0, backend=None, n=3):
    ...     return Tables({"square": pd.DataFrame({"x": range(n), "y": [x * x for x in range(n)]})})
    >>> def draw(tables):
    ...     fig = Figure()
    ...     fig.subplots().plot(tables["square"]["x"], tables["square"]["y"])
    ...     return fig
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path, tables = make("square", compute, draw, outdir=folder, n=4)
    ...     print(path.name, tables["square"]["y"].tolist())
    square.png [0, 1, 4, 9]
    """
    output_path("outdir", outdir, kind="directory")          # before computing: a bad outdir fails at once
    tables = compute(size_name(full), seed=seed, backend=backend, **kwargs)
    return write(draw(tables), outdir, name, tables), tables


def subplots(nrows, ncols, width, height, **kwargs):
    """A figure of ``nrows`` × ``ncols`` panels of ``width`` × ``height`` inches each, in the house layout
    (constrained); returns ``(fig, axes)`` with ``axes`` always a 2-D array (``squeeze=False``).

    Examples
    --------
    One row of two 3 × 2-inch panels is a 6 × 2-inch figure:

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, axes = subplots(1, 2, 3, 2)
    >>> axes.shape, fig.get_size_inches().tolist()
    ((1, 2), [6.0, 2.0])
    >>> plt.close(fig)
    """
    import matplotlib.pyplot as plt
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), layout="constrained",
                        squeeze=False, **kwargs)


def style(ax, legend=7, title_size=None, **properties):
    """The house style of a panel: ``ax.set(**properties)``, the title at ``title_size`` points if given, and a
    legend at ``legend`` points (None: no legend). Returns ``ax``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> _ = ax.plot([0, 1], [0, 1], label="identity")
    >>> ax = style(ax, legend=6, title_size=9, title="demo", xlabel="x")
    >>> ax.get_title(), ax.get_xlabel(), ax.title.get_fontsize(), ax.get_legend().get_texts()[0].get_fontsize()
    ('demo', 'x', 9.0, 6.0)
    """
    ax.set(**properties)
    if title_size is not None:
        ax.title.set_fontsize(title_size)
    if legend is not None:
        ax.legend(fontsize=legend)
    return ax

_LOG_MANTISSAS = ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 2, 3, 4, 5, 6, 7, 8, 9),
                  (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9))


def log_ticks(ax, axis="y", max_ticks=8, values=None):
    """Label a logarithmic axis of ``ax`` at round numbers inside its present limits (or at ``values``), written
    plainly (0.8, 1.2, 128) where all lie between 10⁻³ and 10⁴, else as powers of ten; the minor ticks stay,
    unlabelled. Matplotlib's log axis labels only the powers of ten, so a narrow range (ratios from 0.8 to 4) shows
    a single labelled tick. Call it once the data are drawn and the limits are final. Returns the tick values.

    The ticks are the finest of the mantissa sets 1; 1, 3; 1, 2, 5; 1, 1.5, 2, 3, 5, 7; 1 … 9; 1, 1.2, …, 1.8, 2,
    2.5, …, 4, 5, …, 9 (times the powers of ten) that puts at most ``max_ticks`` inside the limits (the coarsest
    where every set puts more).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel.
    axis : {"x", "y"}, default "y"
        Which axis.
    max_ticks : int, default 8
        The most labelled ticks wanted.
    values : sequence of float, optional
        Label these instead (those inside the limits), e.g. the widths a panel ran.

    Returns
    -------
    list of float
        The labelled ticks.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> _ = ax.plot([1, 2], [0.79, 4.03])
    >>> _ = ax.set(yscale="log", ylim=(0.75, 4.3), xscale="log", xlim=(100, 600))
    >>> log_ticks(ax), log_ticks(ax, "x", values=[128, 512, 2048])
    ([0.8, 0.9, 1.0, 2.0, 3.0, 4.0], [128.0, 512.0])
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['0.8', '0.9', '1', '2', '3', '4']
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    one_of("axis", axis, ("x", "y"))
    max_ticks = integer_at_least("max_ticks", max_ticks, 1)
    target = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    if not 0 < lo < hi:
        raise ValueError(f"the {axis} axis must have positive limits (a log axis), got {lo!r} to {hi!r}")
    if values is not None:
        ticks = sorted(float(v) for v in values if lo <= float(v) <= hi)
    else:
        decades = 10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
        candidates = [[float(f"{m * d:.6g}") for d in decades for m in mantissas if lo <= m * d <= hi]
                      for mantissas in _LOG_MANTISSAS]
        fitting = [c for c in candidates if len(c) <= max_ticks]
        ticks = fitting[-1] if fitting else candidates[0]
    target.set_major_locator(FixedLocator(ticks))
    plain = all(1e-3 <= abs(v) < 1e4 for v in ticks)          # one notation on an axis
    target.set_major_formatter(FuncFormatter(lambda v, _pos: _tick_label(v, plain)))
    target.set_minor_formatter(NullFormatter())
    return ticks


def _tick_label(v, plain):
    """0.8, 1.2, 128 (plain) or 10ᵏ, m×10ᵏ."""
    if plain or v == 0:
        return f"{v:g}"
    exponent = int(f"{v:e}".split("e")[1])
    mantissa = float(f"{v / 10.0 ** exponent:.6g}")
    return f"$10^{{{exponent}}}$" if mantissa == 1 else f"${mantissa:g}\\times10^{{{exponent}}}$"


def caption(fig, text, fontsize=7, margin=0.25, pad=4.0):
    """Write ``text`` below the panels of ``fig`` as a caption: wrapped to the figure's width less ``margin``
    inches on either side (each paragraph, at line breaks of ``text``, on its own), centred, ``pad`` points below
    the figure's bottom edge (under the axes' labels of a constrained layout). The figure is saved with
    ``bbox_inches="tight"`` (:func:`rmtnet.plot.save`), which takes the caption in. Returns the
    :class:`matplotlib.text.Text`.

    The lines are broken at spaces by the width of the words in the caption's font (matplotlib's ``wrap=True``
    wraps to the figure's very edge and, centred, may start a line at it).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    text : str
        The caption (plain text; line breaks start new paragraphs).
    fontsize : float, default 7
        Its size in points.
    margin : float, default 0.25
        The empty width left on each side, in inches.
    pad : float, default 4.0
        The gap between the figure's bottom edge and the caption's first line, in points.

    Returns
    -------
    matplotlib.text.Text
        The caption.

    Examples
    --------
    On a 3-inch-wide figure a long caption is broken into lines that each fit in 3 − 2·0.25 inches:

    >>> from matplotlib.figure import Figure
    >>> from matplotlib.textpath import TextToPath
    >>> from matplotlib.font_manager import FontProperties
    >>> fig = Figure(figsize=(3, 2))
    >>> t = caption(fig, "the ratio of the measured border to the predicted line, by depth; " * 3)
    >>> lines = t.get_text().split("\\n")
    >>> width = lambda s: TextToPath().get_text_width_height_descent(s, FontProperties(size=7), False)[0]
    >>> len(lines) > 1, max(width(s) for s in lines) <= 72 * (3 - 2 * 0.25)
    (True, True)
    """
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath
    from matplotlib.transforms import ScaledTranslation
    fontsize = real_scalar("fontsize", fontsize, lo=0.0, lo_open=True)
    margin = real_scalar("margin", margin, lo=0.0, hi=fig.get_figwidth() / 2, hi_open=True)   # inches, each side
    pad = real_scalar("pad", pad, lo=0.0)
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    prop, measure = FontProperties(size=fontsize), TextToPath()
    room = 72.0 * (fig.get_figwidth() - 2 * margin)           # points
    width = lambda s: measure.get_text_width_height_descent(s, prop, False)[0]
    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            if line and width(f"{line} {word}") > room:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    below = fig.transFigure + ScaledTranslation(0, -pad / 72.0, fig.dpi_scale_trans)
    return fig.text(0.5, 0.0, "\n".join(lines), transform=below, ha="center", va="top", fontsize=fontsize)


def report(result, attrs=(), tables=(), width=28):
    """Print what a script run directly made: for every table with a KS distance (or with any of ``attrs``), one
    line of those numbers; then the tables named in ``tables`` in full; then where the figure went.

    Parameters
    ----------
    result : (path, Tables)
        What the script's ``main`` returned.
    attrs : sequence of str
        Attribute names (of ``table.attrs``) to print beside ``ks``.
    tables : sequence of str
        Panels printed whole.
    width : int
        Width of the panel-name column.

    Examples
    --------
    >>> t = pd.DataFrame({"x": [1.0]})
    >>> t.attrs.update(ks=0.0123, n=100)
    >>> report(("figures/demo.png", Tables({"mp": t})), attrs=("n",), width=4)
    mp   ks = 0.0123   n = 100
    wrote figures/demo.png
    """
    path, found = result
    for key, t in found.items():
        shown = [a for a in ("ks", *attrs) if a in getattr(t, "attrs", {})]
        if shown:
            print(f"{key:{width}s} " + "   ".join(f"{a} = {_number(t.attrs[a])}" for a in shown))
    for key in tables:
        print(pd.DataFrame(found[key]).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("wrote", path)


def _number(v):
    return f"{v:.4f}" if isinstance(v, float) else str(v)
