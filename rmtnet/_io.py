"""Output paths checked before any work, and crash-safe file writes, shared by every writer of the package (the
training loop's checkpoint and metrics, the sweep store, the figure scripts' output folder, the command line).

:func:`output_path` is the one check every path a function will write to goes through, at the start of the call:
a path of the right type, not a directory where a file goes (nor a file where a folder goes, itself or any folder
above it), in a place this process can create files in, and not the same file as another output of the same call.
Each refusal is a ValueError (TypeError for a non-path) naming the argument and the path, raised before anything is
computed — not an OSError from the last step of a long run naming a temporary file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["output_path", "atomic_write", "NotAPathError"]

KINDS = ("file", "directory")


class NotAPathError(TypeError, ValueError):
    """A path argument that is no path (bytes, None, a number): a TypeError, and also a ValueError, the class such
    arguments were refused with before (code catching ValueError still catches it).

    Examples
    --------
    >>> issubclass(NotAPathError, TypeError), issubclass(NotAPathError, ValueError)
    (True, True)
    """


def _as_path(name, value) -> Path:
    """``value`` (str or os.PathLike naming a str path) as a Path; TypeError naming ``name`` for anything else."""
    if isinstance(value, os.PathLike):
        text = os.fspath(value)
    else:
        text = value
    if not isinstance(text, str):
        raise NotAPathError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__} {value!r}"
                        + (" (decode a bytes path first, e.g. os.fsdecode)" if isinstance(text, bytes) else ""))
    if not text.strip() or "\0" in text:
        raise ValueError(f"{name} must be a path (a non-empty str or os.PathLike without NUL), got {value!r}")
    return Path(text).expanduser()


def _can_create_in(folder: Path) -> bool:
    """Whether this process can create a file in the existing directory ``folder`` (tried: ``os.access`` does not
    tell for root, nor for some file systems)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".rmtnet-probe-", suffix=".tmp")
    except OSError:
        return False
    os.close(fd)
    Path(probe).unlink(missing_ok=True)
    return True


def _existing_ancestor(name, path: Path) -> Path:
    """The nearest folder above ``path`` that exists; ValueError if a file stands where a folder is needed."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{name}={str(path)!r} cannot be created: {str(parent)!r} is a file, not a "
                                 f"directory; give a path under a directory (or remove that file yourself)")
            return parent
    return Path(path.absolute().anchor)  # pragma: no cover - the root always exists


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def output_path(name, value, *, kind="file", others=None) -> Path:
    """``value`` as the Path of an output ``name`` of kind ``"file"`` or ``"directory"``, checked before any work.

    Parameters
    ----------
    name : str
        The argument's name, as the messages give it (``"checkpoint"``, ``"--outdir"``).
    value : str or os.PathLike
        The path. A file that exists is overwritten (or appended to) by the caller; folders above it that are
        missing are created by the caller.
    kind : {"file", "directory"}
        What goes there.
    others : dict of str to Path, optional
        The other outputs of the same call (name → path, None entries ignored): ``value`` must be none of them.

    Returns
    -------
    pathlib.Path
        The path (``~`` expanded); nothing is created.

    Raises
    ------
    NotAPathError
        (a TypeError and a ValueError) ``value`` is not a str or os.PathLike (bytes, None, a number).
    ValueError
        Empty; a directory where a file goes or a file where a directory goes (at ``value`` or at a folder above
        it); a place this process cannot create files in; a file that cannot be written; the same file as one of
        ``others``. The message names ``name`` and the path.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> output_path("metrics", folder + "/new/m.csv").name
    'm.csv'
    >>> output_path("metrics", folder)
    Traceback (most recent call last):
    ...
    ValueError: metrics must be a file path, got the directory ...
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    path = _as_path(name, value)
    if kind == "file" and path.is_dir():
        raise ValueError(f"{name} must be a file path, got the directory {str(path)!r}; name a file in it")
    if kind == "directory" and path.exists() and not path.is_dir():
        raise ValueError(f"{name} must be a directory, got the file {str(path)!r}; give another folder (or "
                         f"remove that file yourself)")
    folder = path if kind == "directory" and path.is_dir() else _existing_ancestor(name, path)
    if not _can_create_in(folder):
        raise ValueError(f"{name}={str(path)!r} cannot be created: no permission to create files in "
                         f"{str(folder)!r} (read-only?); give a path in a writable directory")
    if kind == "file" and path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{name}={str(path)!r} cannot be written: the file is read-only; give another path")
    for other, taken in (others or {}).items():
        if taken is not None and _same_file(path, Path(taken)):
            raise ValueError(f"{name} and {other} must be different files, got {str(path)!r} for both (each "
                             f"would overwrite the other)")
    return path


def atomic_write(path, write: Callable[[str], None]):
    """``write(tmp)`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``: a reader
    sees the old file or the new one, never a torn one, whenever the writer is killed. An OSError names ``path``
    (not the temporary file)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}") from exc
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
