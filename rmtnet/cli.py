"""``rmtnet`` command line: list and run the figure scripts of ``simulations/``.

    rmtnet list                 the scripts and what they draw
    rmtnet run NAME [...]       run some of them (quick sizes unless --full)
    rmtnet run-all [--full]     regenerate every figure into figures/
"""
from __future__ import annotations

import argparse
import runpy
import sys
import time
from pathlib import Path


def _sim_dir():
    here = Path(__file__).resolve().parent.parent / "simulations"
    if not here.is_dir():
        raise SystemExit(f"simulations/ not found next to the package (looked in {here})")
    return here


def scripts():
    return sorted(p for p in _sim_dir().glob("*.py") if not p.name.startswith("_"))


def load_simulation(name):
    """The namespace of ``simulations/NAME.py`` (its ``main(full, outdir)`` draws the figure)."""
    path = _sim_dir() / f"{name.removesuffix('.py')}.py"
    if not path.exists():
        raise SystemExit(f"no simulation named {name!r}; `rmtnet list` shows the available ones")
    return runpy.run_path(str(path))


def script_args(doc, full_help, argv=None):
    """The arguments every figure script takes when run directly: ``--full`` (described by ``full_help``),
    ``--outdir``, ``--seed``, ``--backend``; ``doc`` (the script's docstring) is the help text."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help=full_help)
    ap.add_argument("--outdir", default="figures")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default=None, choices=[None, "numpy", "cupy"])
    return ap.parse_args(argv)


def _run(path, full, outdir):
    mod = load_simulation(path.stem)
    t0 = time.perf_counter()
    out, tables = mod["main"](full=full, outdir=outdir)
    dt = time.perf_counter() - t0
    print(f"[{path.stem}] {dt:6.1f} s -> {out}")
    for k, v in (tables or {}).items():
        ks = v.attrs.get("ks")
        if ks is not None:
            print(f"    {k:28s} KS = {ks:.4f}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rmtnet", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    r = sub.add_parser("run")
    r.add_argument("names", nargs="+")
    ra = sub.add_parser("run-all")
    for p in (r, ra):
        p.add_argument("--full", action="store_true")
        p.add_argument("--outdir", default=str(Path.cwd() / "figures"))
    a = ap.parse_args(argv)
    if a.cmd == "list":
        for p in scripts():
            doc = (runpy.run_path(str(p)).get("__doc__") or "").strip().splitlines()
            print(f"{p.stem:28s} {doc[0] if doc else ''}")
        return 0
    chosen = scripts() if a.cmd == "run-all" else [_sim_dir() / f"{n.removesuffix('.py')}.py" for n in a.names]
    for p in chosen:
        if not p.exists():
            raise SystemExit(f"no simulation named {p.stem!r}; `rmtnet list` shows the available ones")
    for p in chosen:
        _run(p, a.full, a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
