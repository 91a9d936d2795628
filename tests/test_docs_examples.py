"""The getting-started page's code runs as written: each ``.. code-block:: python`` of docs/getting_started.rst in a
fresh interpreter (a temporary working directory, a time limit), and what it prints matches the ``.. code-block::
text`` that follows it on the page. The guide's NTK-over-data block runs the same way (it once failed alone, with a
NameError, because it used a name it never imported).

Printed numbers are compared to the page's to the precision the page prints them (±1 in the last printed digit:
the page's numbers were printed on one machine, and BLAS and torch kernels differ in the last bits elsewhere); counts,
words and punctuation exactly.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TIMEOUT_S = 300
_DIRECTIVE = re.compile(r"^\.\. code-block:: (\w+)\n\n((?:(?:   .*)?\n)+)", re.M)
_NUMBER = re.compile(r"-?\d+\.\d+|-?\d+")


def code_blocks(path):
    """(language, source) of every ``.. code-block::`` of an RST file, in order, dedented."""
    text = path.read_text(encoding="utf-8")
    return [(lang, textwrap.dedent(body).strip("\n") + "\n") for lang, body in _DIRECTIVE.findall(text)]


def examples(path):
    """(python source, expected output or None) pairs: a text block right after a python block is its output."""
    blocks, pairs = code_blocks(path), []
    for i, (lang, body) in enumerate(blocks):
        if lang == "python":
            follows = blocks[i + 1] if i + 1 < len(blocks) else None
            pairs.append((body, follows[1] if follows and follows[0] == "text" else None))
    return pairs


def run_fresh(source, cwd):
    """Run ``source`` in a fresh interpreter in ``cwd``; rmtnet is importable from this checkout, one thread."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", source], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def _close(expected, printed):
    """Numbers within one unit of the expected number's last printed digit; the rest of the text equal."""
    want, got = _NUMBER.split(expected), _NUMBER.split(printed)
    if [" ".join(w.split()) for w in want] != [" ".join(g.split()) for g in got]:
        return False
    for w, g in zip(_NUMBER.findall(expected), _NUMBER.findall(printed)):
        unit = 10.0 ** -len(w.split(".")[1]) if "." in w else 0.0    # counts (integers) exactly
        if abs(float(w) - float(g)) > unit * 1.000001:
            return False
    return True


PAGE = DOCS / "getting_started.rst"
CASES = examples(PAGE)


def test_page_has_the_five_minutes():
    """Four runnable examples, each with its printed output on the page; the page is first in the table of
    contents."""
    assert len(CASES) == 4 and all(out is not None for _, out in CASES)
    toctree = (DOCS / "index.rst").read_text(encoding="utf-8").split(".. toctree::")[1]
    assert [line.strip() for line in toctree.splitlines() if line.strip() and ":" not in line][0] == "getting_started"


@pytest.mark.parametrize("k", range(len(CASES)), ids=["law", "overlay", "ntk_over_data", "mixer"][:len(CASES)])
def test_getting_started_block(k, tmp_path):
    source, expected = CASES[k]
    done = run_fresh(source, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _close(expected, done.stdout), f"printed:\n{done.stdout}\nthe page says:\n{expected}"


def test_guide_ntk_over_data_block(tmp_path):
    """The guide's NTK block imports everything it uses and runs alone."""
    blocks = [body for body, _ in examples(DOCS / "guide.rst") if "ntk_kernel(" in body]
    assert len(blocks) == 1
    done = run_fresh(blocks[0], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def test_close_can_fail():
    assert _close("KS 0.012 over 500", "KS 0.013 over 500")
    assert not _close("KS 0.012 over 500", "KS 0.014 over 500")
    assert not _close("KS 0.012 over 500", "KS 0.012 over 501")
    assert not _close("KS 0.012 over 500", "KL 0.012 over 500")
