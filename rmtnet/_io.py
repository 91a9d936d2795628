"""Crash-safe file writes shared by the training loop and the sweep store."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def atomic_write(path, write: Callable[[str], None]):
    """``write(tmp)`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``: a reader
    sees the old file or the new one, never a torn one, whenever the writer is killed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
