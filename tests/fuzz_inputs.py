"""Input classes of the fuzz (tests/test_fuzz.py) that need more than a strategy of values: numbers in NumPy's and
torch's scalar forms, files and folders of every kind, calls that must refuse within seconds (run in a forked
child under a time and address-space limit), and the checks their oracles share.
"""
from __future__ import annotations

import hashlib
import io
import math
import os
import re
import resource
import signal
import sys
import time
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import torch


# --- numbers by value ---------------------------------------------------------------------------------------------
def by_value(v):
    """A NumPy scalar, a 0-d array or a 0-d tensor of a real or boolean dtype as the Python number (or bool) it
    holds; anything else as it is. The fuzz's domains judge these forms by the value they hold."""
    if isinstance(v, np.generic) and v.dtype.kind in "biuf":
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biuf":
        return v.item()
    if isinstance(v, torch.Tensor) and v.ndim == 0 and not v.is_complex():
        return v.item()
    return v


def is_python_real(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_INT_FORMS = (("np.int64", np.int64, 2 ** 63), ("np.int32", np.int32, 2 ** 31))


def number_forms(x):
    """The forms a Python number ``x`` arrives in as the result of a computation: NumPy float64/float32 (and
    int64/int32 for an integer in range) scalars, 0-d NumPy arrays, 0-d torch tensors (float64, float32, int64),
    and a 1-element 1-d array (a shape error where a number is wanted). A list of ``(label, value)``."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        forms = [("np.float64", np.float64(x)), ("np.float32", np.float32(x)), ("0-d float array", np.array(float(x))),
                 ("0-d float64 tensor", torch.tensor(float(x), dtype=torch.float64)),
                 ("0-d float32 tensor", torch.tensor(float(x), dtype=torch.float32)),
                 ("1-element array", np.array([float(x)]))]
        integral = isinstance(x, int) or (isinstance(x, float) and math.isfinite(x) and x.is_integer())
        if integral:
            for label, kind, bound in _INT_FORMS:
                if -bound <= int(x) < bound:
                    forms.append((label, kind(int(x))))
            if -2 ** 63 <= int(x) < 2 ** 63:
                forms += [("0-d int array", np.array(int(x))), ("0-d int64 tensor", torch.tensor(int(x)))]
    return forms


# the Python numbers whose forms are drawn: valid ones for most arguments, and every kind of invalid one. No count
# above 3: the tables' own strategies keep counts small where a large valid one runs for minutes (2⁴⁰ Ginibre
# factors, 10⁶ bisections); huge values are the business of the tables and of the sizes past memory
NUMBERS = [0, 1, 2, 3, 0.5, 0.25, 0.1, 0.9, 1.5, 2.0, 3.0, 2.5, 1e-3, -1, -0.5, math.nan, math.inf, -math.inf]


# --- booleans --------------------------------------------------------------------------------------------------------
FLAG_VALUES = [True, False, np.True_, np.False_, np.array(True), torch.tensor(False), 1, 0, 1.0, np.int64(1), "yes",
               "no", "True", "False", "", None, [True], (False,), np.array([True])]


def flag_verdict(v, none_ok=False):
    """True/False (Python's or NumPy's bool) are flags; a 0-d bool array or tensor is at the edge (by value a bool);
    ``None`` only where the parameter documents it; every other truthy or falsy value is not a flag."""
    if isinstance(v, (bool, np.bool_)):
        return True
    if v is None:
        return none_ok
    if isinstance(v, (np.ndarray, torch.Tensor)) and v.ndim == 0 and v.dtype in (np.bool_, torch.bool):
        return None
    return False


# --- files and folders ----------------------------------------------------------------------------------------------
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def tree_state(root):
    """{relative path: sha256 of the content (None for a folder)} under ``root``: what a refusal must leave."""
    state = {}
    for p in sorted(Path(root).rglob("*")):
        try:
            state[str(p.relative_to(root))] = None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        except OSError:
            state[str(p.relative_to(root))] = "unreadable"
    return state


def lost_files(before, after, allowed=()):
    """The paths of ``before`` that are missing or changed in ``after`` (``allowed`` may change)."""
    return sorted(k for k, h in before.items() if k not in allowed and after.get(k, "missing") != h)


def make_readonly(folder):
    Path(folder).mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o500)


def restore_writable(root):
    for p in [Path(root), *Path(root).rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            try:
                os.chmod(p, 0o700)
            except OSError:
                pass


# --- messages --------------------------------------------------------------------------------------------------------
def names(message, word):
    """``word`` occurs in ``message`` as a word of its own (not inside another name)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", message) is not None


BYTES = re.compile(r"\d[\d.,]*(?:e[+-]?\d+)?\s*(?:[kKMGTPEZ]i?B|bytes?|B)\b")


def states_bytes(message):
    """The message states an amount of memory (``12.3 GB``, ``8.0 TiB``, ``1e+15 bytes``)."""
    return BYTES.search(message) is not None


# --- a call in a forked child, under a time limit and a memory limit ------------------------------------------------
def _vm_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 64 * 2 ** 30


def guarded(call, *, seconds=5.0, extra_memory=3 * 2 ** 30):
    """Run ``call()`` in a forked child with ``seconds`` to finish and at most ``extra_memory`` more address space
    than this process has now (a size past memory then fails at once instead of swapping the machine). Returns
    ``(outcome, detail)``: ``("ok", repr(result)[:200])``, ``("raised", (type name, message, is-a-clear-error,
    is-a-MemoryError))``, ``("timeout", seconds)`` or ``("died", status)``. What the child prints is kept in
    ``detail`` (the last 2000 characters, stderr and stdout together; ``("ok", (repr, printed))``) for a CLI's
    message."""
    if not hasattr(os, "fork"):
        raise RuntimeError("guarded calls need os.fork")
    read, write = os.pipe()
    limit = _vm_bytes() + extra_memory
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:                                                      # the child: never returns
        os.close(read)
        status = 0
        try:
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):
                pass
            printed = io.StringIO()
            try:
                with redirect_stdout(printed), redirect_stderr(printed):
                    out = call()
                text = f"ok\0{repr(out)[:200]}\0{printed.getvalue()[-2000:]}"
            except BaseException as exc:                              # noqa: BLE001 - reported to the parent
                from rmtnet._validation import ConvergenceError
                clear = isinstance(exc, (ValueError, TypeError, OverflowError, ConvergenceError, MemoryError))
                code = exc.code if isinstance(exc, SystemExit) else None
                message = str(exc) if not isinstance(exc, SystemExit) else f"exit {code!r}: {code}"
                text = (f"raised\0{type(exc).__name__}\0{message[:4000]}\0{int(clear)}\0"
                        f"{int(isinstance(exc, MemoryError))}\0{printed.getvalue()[-2000:]}\0"
                        f"{traceback.format_exc()[-1500:]}")
            os.write(write, text.encode("utf-8", "replace")[:60000])
        except BaseException:                                         # noqa: BLE001
            status = 3
        finally:
            os._exit(status)
    os.close(write)
    deadline = time.monotonic() + seconds
    chunks = []
    os.set_blocking(read, False)
    try:
        while True:
            try:
                chunk = os.read(read, 65536)
                if chunk:
                    chunks.append(chunk)
            except BlockingIOError:
                pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "timeout", seconds
            time.sleep(0.01)
        while True:
            try:
                chunk = os.read(read, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
    text = b"".join(chunks).decode("utf-8", "replace")
    if not text:
        return "died", status
    parts = text.split("\0")
    if parts[0] == "ok":
        return "ok", (parts + ["", ""])[1:3]
    name, message, clear, memory, printed, tb = (parts[1:] + [""] * 6)[:6]
    return "raised", (name, message, clear == "1", memory == "1", printed, tb)

