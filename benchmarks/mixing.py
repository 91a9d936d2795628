"""Benchmark: cost of the mixing structures, as ratios of forward+backward times measured side by side.

1. **RP-Mixer vs Mixer** at equal S, C, γ, depth and batch: the random permutations are index gathers around a batched
   matmul, where the Mixer's token mixing is one matmul on the token axis. Requirement: ratio ≤ 1.3.
2. **SW-MLP vs dense MLP** of the same effective width m = S·C (``SWMLP`` with its default densities 1/C, 1/S vs
   ``SWMLP(density=1)``): the static mask is applied as M ⊙ W on a dense weight, so the sparse model costs at least as
   much as the dense one; the ratio shows how much the masking adds. Also the Mixer against that dense MLP, which is
   what the Kronecker structure saves.

Each pair is timed in alternation (median of ``--repeats`` after a warm-up), on the same input batch.
Run: ``python benchmarks/mixing.py [--tokens 64] [--channels 64] [--batch 128] [--depth 2] [--repeats 10]
[--device cpu|cuda]``.
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

from rmtnet.nets.models import MLPMixer, RPMixer, SWMLP


def _step_time(model, x, y, device):
    model.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t


def compare(a, b, x, y, repeats, device):
    """Median forward+backward seconds of models a and b, timed alternately."""
    for _ in range(2):
        _step_time(a, x, y, device), _step_time(b, x, y, device)
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(_step_time(a, x, y, device))
        tb.append(_step_time(b, x, y, device))
    return float(pd.Series(ta).median()), float(pd.Series(tb).median())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--in-channels", type=int, default=48)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--gamma", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    S, C, dev = args.tokens, args.channels, args.device
    kw = dict(tokens=S, in_channels=args.in_channels, channels=C, depth=args.depth, n_classes=10, gamma=args.gamma,
              seed=0, device=dev)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch, S, args.in_channels, generator=g).to(dev)
    y = torch.randint(10, (args.batch,), generator=g).to(dev)
    mixer, rp, sw, dense = MLPMixer(**kw), RPMixer(**kw), SWMLP(**kw), SWMLP(density=1.0, **kw)
    rows = []
    for name, a, b in [("RP-Mixer / Mixer", rp, mixer), ("SW-MLP (masked dense) / dense MLP", sw, dense),
                       ("Mixer / dense MLP", mixer, dense)]:
        ta, tb = compare(a, b, x, y, args.repeats, dev)
        rows.append(dict(comparison=name, S=S, C=C, m=S * C, batch=args.batch, device=dev, numerator_s=ta,
                         denominator_s=tb, ratio=ta / tb))
    table = pd.DataFrame(rows)
    print(f"forward+backward time ratios (median of {args.repeats}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return table


if __name__ == "__main__":
    main()
