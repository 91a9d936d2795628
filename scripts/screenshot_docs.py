"""Build the docs, then look at them the way a reader does: headless Chromium screenshots of the getting-started page
and the gallery, checked for what a reader should see.

    .venv/bin/python scripts/screenshot_docs.py             # build (warnings as errors), screenshot, check
    .venv/bin/python scripts/screenshot_docs.py --no-build  # the existing docs/_build/html

Chromium is not a Python dependency: Debian's ``apt-get install chromium`` (or any ``chromium``/``google-chrome`` on
the PATH, or ``--chromium PATH``). The screenshots go to docs/_build/screenshots/PAGE.png (``--out`` to change), and
each page passes when

- the page is drawn: at least 2 % of the screenshot's pixels are not white;
- its pictures are visible: every ``<img>`` inside the window has loaded and decoded (its natural width, read from
  the rendered DOM, is not 0) and at least one lies in the window, and the screenshot's pixels inside each such
  image's box are drawn (at least 5 % of them not white, and not one flat colour);
- on the getting-started page, the mathematics is typeset: MathJax (loaded from the docs' own _static, no network)
  has replaced every ``:math:`` role by an ``<mjx-container>`` in the rendered DOM.

Exit status 0 when every check passes, 1 otherwise (each failure printed).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "docs" / "_build" / "html"
PAGES = {"getting_started": (1280, 4200), "gallery": (1280, 3000)}
MIN_INK = 0.02
BUDGET_MS = 15_000


def chromium_binary(explicit=None):
    """The Chromium executable: ``explicit``, else the first of chromium, chromium-browser, google-chrome found."""
    for name in ([explicit] if explicit else ["chromium", "chromium-browser", "google-chrome"]):
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium(binary, *args):
    base = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--allow-file-access-from-files", "--force-device-scale-factor=1", f"--virtual-time-budget={BUDGET_MS}"]
    return subprocess.run(base + list(args), capture_output=True, text=True, timeout=180)


def screenshot(binary, html, png, size):
    """Chromium's screenshot of ``html`` at window ``size`` (width, height) into ``png``; the image as an array."""
    _chromium(binary, f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", html.as_uri())
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {html.name}")
    return np.asarray(Image.open(png).convert("RGB")).astype(int)


def rendered_dom(binary, html):
    """The page's DOM after its scripts ran (MathJax included)."""
    return _chromium(binary, "--dump-dom", html.as_uri()).stdout


_PROBE = """<script>window.addEventListener("load", () => setTimeout(() => document.body.setAttribute("data-images",
  JSON.stringify([...document.images].map(i => { const r = i.getBoundingClientRect();
  return [r.left, r.top, r.width, r.height, i.naturalWidth]; }))), 1000));</script>"""


def image_boxes(binary, html, size):
    """(left, top, width, height, natural width) of every <img> of ``html`` as laid out in a window of ``size``,
    read from the DOM of a copy of the page (beside it, so relative paths hold) that records them once loaded."""
    probe = html.with_name(html.stem + ".probe.html")
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    try:
        dom = _chromium(binary, "--dump-dom", f"--window-size={size[0]},{size[1]}", probe.as_uri()).stdout
    finally:
        probe.unlink()
    found = re.search(r'data-images="([^"]*)"', dom)
    if found is None:
        raise RuntimeError(f"the image boxes of {html.name} were not recorded")
    return json.loads(found.group(1).replace("&quot;", '"'))


def drawn(region):
    """A screenshot region shows a picture: ≥ 5 % of its pixels not white and not one flat colour."""
    return region.size > 0 and np.mean(region.min(axis=2) < 245) >= 0.05 and float(region.std()) > 10


def check_page(binary, name, out):
    """Screenshot page ``name``; the list of failed checks, and the numbers measured."""
    html, size = HTML / f"{name}.html", PAGES[name]
    shot = screenshot(binary, html, out / f"{name}.png", size)
    boxes = image_boxes(binary, html, size)
    inside = [b for b in boxes if b[1] < size[1] and b[1] + b[3] > 0]
    shown = [b for b in inside if b[4] > 0 and drawn(shot[max(int(b[1]), 0):int(b[1] + b[3]),
                                                         max(int(b[0]), 0):int(b[0] + b[2])])]
    ink = float(np.mean(shot.min(axis=2) < 245))
    numbers = {"non-white fraction": round(ink, 3), "images on the page": len(boxes),
               "in the window": len(inside), "drawn": len(shown)}
    failures = []
    if ink < MIN_INK:
        failures.append(f"{name}: the page looks blank ({ink:.1%} non-white pixels)")
    if not inside or len(shown) < len(inside):
        failures.append(f"{name}: {len(shown)} of the {len(inside)} images in the window drawn")
    if name == "getting_started":
        source = html.read_text(encoding="utf-8")
        roles, typeset = source.count('class="math'), rendered_dom(binary, html).count("<mjx-container")
        numbers.update({"math roles": roles, "typeset by MathJax": typeset})
        if roles == 0 or typeset < roles:
            failures.append(f"{name}: {typeset} of {roles} formulas typeset by MathJax")
    return failures, numbers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--no-build", action="store_true", help="use the existing docs/_build/html")
    parser.add_argument("--chromium", help="the Chromium executable (default: found on the PATH)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "_build" / "screenshots")
    args = parser.parse_args(argv)
    binary = chromium_binary(args.chromium)
    if binary is None:
        print("no chromium on the PATH (apt-get install chromium, or --chromium PATH)", file=sys.stderr)
        return 2
    if not args.no_build:
        subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        str(ROOT / "docs"), str(HTML)], check=True)
    args.out.mkdir(parents=True, exist_ok=True)
    failures = []
    for name in PAGES:
        failed, numbers = check_page(binary, name, args.out)
        failures += failed
        print(f"{args.out / (name + '.png')}: " + ", ".join(f"{k} {v}" for k, v in numbers.items()))
    for failure in failures:
        print("FAILED", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
