"""Progress bars for long work: one helper, :func:`bar`, shared by the samplers, the Lanczos quadrature, the
measures' cdf tables and the sweeps.

A bar is a ``tqdm.auto`` bar on stderr, shown only when ``progress`` is True *and* stderr is a terminal (tqdm's
``disable=None``): piped output, logs and the test suite stay quiet without anyone passing ``progress=False`` (so
does a Jupyter kernel, whose stderr is no terminal), and it appears only after ``delay`` seconds (0.5 by default),
so that short calls never flash one. Setting the environment variable ``TQDM_DISABLE=1`` turns
every bar off, the ones without a ``progress`` keyword (a measure's cdf table) included. A bar only counts: it
draws no random numbers and changes no order of work, so results are the same with and without it.
"""
from __future__ import annotations

import os

from rmtnet._validation import boolean

__all__ = ["bar", "check_progress", "tqdm_disable"]

_OFF = ("1", "true", "yes", "on")


class _NoBar:
    """What :func:`bar` returns when no bar is shown: iterates like its iterable, ``update``/``set_postfix_str``/
    ``close`` do nothing, and it is a context manager."""

    def __init__(self, iterable=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        return None

    def set_postfix_str(self, s="", refresh=True):
        return None

    def close(self):
        return None


def check_progress(progress):
    """``progress`` as a bool (TypeError naming it otherwise: 1 or "yes" is a mistake, not a truth value)."""
    return boolean("progress", progress)


def tqdm_disable(progress):
    """tqdm's ``disable`` for a bar that should follow :func:`bar`'s rule: None (shown on a terminal) when
    ``progress`` and no ``TQDM_DISABLE`` in the environment, else True.

    Examples
    --------
    >>> tqdm_disable(True), tqdm_disable(False)
    (None, True)
    """
    off = not check_progress(progress) or os.environ.get("TQDM_DISABLE", "").strip().lower() in _OFF
    return True if off else None


def bar(iterable=None, *, progress=True, desc=None, total=None, unit="it", delay=0.5, leave=False):
    """A progress bar over ``iterable`` (or, with ``iterable=None``, one advanced by ``update``), shown when
    ``progress`` is True and stderr is a terminal; otherwise an object with the same interface that shows nothing.

    Parameters
    ----------
    iterable : iterable, optional
        What the bar counts; iterating the bar yields its items unchanged, in order.
    progress : bool, default True
        False: never a bar.
    desc : str, optional
        The bar's label.
    total : int, optional
        The expected count (default ``len(iterable)`` where it has one; None: a counter without an end).
    unit : str, default "it"
        What one step is.
    delay : float, default 0.5
        Seconds before the bar appears: work that ends sooner shows none, so that a loop of short calls does not
        flash a bar per call.
    leave : bool, default False
        Keep the finished bar on screen.

    Returns
    -------
    tqdm.auto.tqdm or a silent stand-in

    Examples
    --------
    Off a terminal (as here) the bar shows nothing and yields the items unchanged:

    >>> [x * x for x in bar(range(4), desc="squares")]
    [0, 1, 4, 9]
    >>> with bar(total=3, progress=False) as b:
    ...     b.update(3)
    """
    if tqdm_disable(progress):
        return _NoBar(iterable)
    try:
        from tqdm.auto import tqdm
    except ImportError:                 # pragma: no cover - tqdm is a dependency; without it, work runs barless
        return _NoBar(iterable)
    return tqdm(iterable, desc=desc, total=total, unit=unit, delay=delay, leave=leave, disable=None,
                dynamic_ncols=True)
