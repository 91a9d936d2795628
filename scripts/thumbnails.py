"""Regenerate the gallery's thumbnails, docs/_static/gallery/NAME.png, from drawn figures (figures/NAME.png).

The docs build (docs/conf.py) shows figures/NAME.png when it has been drawn (``bash scripts/figures.sh``) and these
thumbnails otherwise, so that a fresh clone's docs show every figure without the ~8 minutes of drawing them. Each
thumbnail is the quick-size figure scaled to WIDTH pixels and stored with a 256-colour palette (the figures are flat
colours and lines: about 45 KB each, 0.9 MB for the 21). Run after the figures change:

    .venv/bin/python scripts/thumbnails.py                 # from ./figures
    .venv/bin/python scripts/thumbnails.py --source DIR    # from another output folder of ``rmtnet run``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "_static" / "gallery"
WIDTH = 800


def thumbnail(source: Path, target: Path, width: int = WIDTH) -> int:
    """Scale ``source`` to ``width`` pixels (never up), write it as a palette PNG at ``target``; return its bytes."""
    with Image.open(source) as image:
        image = image.convert("RGB")
        w, h = image.size
        if w > width:
            image = image.resize((width, round(h * width / w)), Image.LANCZOS)
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
    return target.stat().st_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--source", type=Path, default=ROOT / "figures", help="folder of NAME.png (default ./figures)")
    parser.add_argument("--width", type=int, default=WIDTH, help=f"thumbnail width in pixels (default {WIDTH})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from rmtnet import cli
    names = [path.stem for path in cli.scripts()]
    TARGET.mkdir(parents=True, exist_ok=True)
    total, missing = 0, []
    for name in names:
        png = args.source / f"{name}.png"
        if png.exists():
            total += thumbnail(png, TARGET / png.name, args.width)
        else:
            missing.append(name)
    print(f"{len(names) - len(missing)} thumbnails, {total / 1e6:.2f} MB in {TARGET.relative_to(ROOT)}")
    if missing:
        print("not drawn in the source folder (their old thumbnails, if any, are kept):", ", ".join(missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
