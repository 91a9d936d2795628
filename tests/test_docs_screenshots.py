"""The built docs as a reader sees them (slow: builds the docs, about a minute): headless Chromium screenshots of the
getting-started page and the gallery show the pages drawn, their pictures loaded and drawn, and the mathematics
typeset by the bundled MathJax (scripts/screenshot_docs.py, whose checks are described there). Skipped without a
``chromium`` on the PATH (Debian: ``apt-get install chromium``; not a Python dependency)."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("screenshot_docs", ROOT / "scripts" / "screenshot_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
                    reason="no chromium on the PATH")
def test_docs_pages_show_their_pictures_and_math(tmp_path):
    assert _script().main(["--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.glob("*.png")} == {"getting_started.png", "gallery.png"}
