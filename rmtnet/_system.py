"""What the machine lends this process: the one place that reads CPU affinity."""
from __future__ import annotations

import os


def affinity_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS tells it (Linux), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                     # macOS, Windows
        return max(1, os.cpu_count() or 1)
