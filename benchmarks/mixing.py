"""Benchmark: cost of the mixing structures — MLP-Mixer, RP-Mixer and the static-mask SW-MLP with its masks stored
dense (``SWMLP(storage="dense")``: n_out × n_in weight and mask per layer) or sparse (``storage="sparse"``: the kept
weights alone, CSR) — at equal connection budget Ω (the same S, C, γ: every SW-MLP layer has on average the
connections of the Mixer layer it replaces; Hayase & Karakida, ICML 2024, arXiv 2306.01470).

Modes (``python benchmarks/mixing.py MODE [options]``):

``pairs`` (default)
    At one size (``--tokens``, ``--channels``): RP-Mixer / Mixer (requirement ≤ 1.3), sparse SW-MLP / Mixer,
    dense-mask SW-MLP / Mixer, sparse SW-MLP / dense MLP of width m (``SWMLP(density=1)``) and Mixer / dense MLP,
    each pair timed in alternation in this process (median of ``--repeats`` after a warm-up).
``scaling``
    The four models at S = C over ``--sides`` (m = S² from 1024 up), each size and model in a fresh subprocess:
    build time, step time (median of ``--repeats`` after one warm-up step) and peak memory, with the ratios to the
    Mixer's step time at the same m. A model is not started where its predicted peak exceeds ``--budget-gib``
    (default 8): the dense-mask SW-MLP stops first (m² weights), the sparse one later (≈ 20 bytes per connection).
``options``
    One masked layer m → 2m at density 1/√m (m = ``--width``) in each way we considered storing it: dense weight ⊙
    mask, torch.sparse COO and CSR with torch's own autograd to the values, a gather/scatter over the connections (a
    batch × connections temporary), the layer used (SparseMaskedLinear: blocked CSR of M and Mᵀ, sampled_addmm) and
    the same with one block (no cache blocking). The sparse options take their mask from a SparseMaskedLinear, whose
    index buffers (16 bytes per connection) are in their peaks too.
``crossover``
    Dense-mask against sparse SW-MLP at small m and several densities: where ``storage="auto"`` switches.

A step is forward + backward of the cross-entropy loss on one batch (no optimizer), unless ``--optimizer adamw``
adds an AdamW update. Peak memory is the process's peak resident set (VmHWM of /proc/self/status, Linux) minus its
resident set just before the model is built (after imports and the batch), so it counts the model's parameters,
buffers, gradients, optimizer state and the step's activations and temporaries — not the interpreter. "conn. MiB" is
the float32 bytes of the Mixer-equivalent connections of all mixing layers (4 · depth · 4 · Ω bytes).
Threads: ``--threads`` (default 1: run with OMP_NUM_THREADS=1).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import pandas as pd
import torch

from rmtnet.nets.layers import MaskedLinear, SparseMaskedLinear
from rmtnet.nets.models import MLPMixer, RPMixer, SWMLP
from rmtnet.spectra import mixer as mixer_theory

MODELS = ("mixer", "rp", "sw_dense", "sw_sparse")
LABELS = {"mixer": "MLP-Mixer", "rp": "RP-Mixer", "sw_dense": "SW-MLP dense mask", "sw_sparse": "SW-MLP sparse"}


def _step_time(model, x, y, device, opt=None):
    model.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    if opt is not None:
        opt.step()
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


def build(model, S, C, depth, in_channels=48, gamma=2.0, seed=0, device="cpu"):
    """One of :data:`MODELS` at S tokens × C channels."""
    kw = dict(tokens=S, in_channels=in_channels, channels=C, depth=depth, n_classes=10, gamma=gamma, seed=seed,
              device=device)
    if model == "mixer":
        return MLPMixer(**kw)
    if model == "rp":
        return RPMixer(**kw)
    return SWMLP(storage="dense" if model == "sw_dense" else "sparse", **kw)


def _rss_kib(field):
    """VmRSS or VmHWM of this process in KiB (Linux), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak():
    """Reset VmHWM to the current RSS where the kernel allows it (/proc/self/clear_refs, value 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def predicted_gib(model, S, C, depth, batch, gamma=2.0, optimizer=None):
    """A model's predicted peak for a step (GiB), calibrated on measured peaks: dense-mask SW-MLP 14 bytes per cell
    of its n_out × n_in layers (weight, mask, saved M ⊙ W, gradient); sparse SW-MLP 21 bytes per connection (value,
    three int32 indices, gradient, temporaries) plus the build's int64 positions of one layer; activations 3.5
    (Mixer, RP-Mixer: measured 3.2–4.7) or 5 (SW-MLP) batch × γm float32 tensors per sub-block; AdamW adds 8 bytes
    per weight."""
    m, gm = S * C, round(gamma * S) * C
    cells = depth * 4 * m * gm
    omega = mixer_theory.connections(S, C, gamma)
    conns = depth * 4 * omega
    extra = 8 if optimizer == "adamw" else 0
    if model == "sw_dense":
        weights = cells * (14 + extra)
    elif model == "sw_sparse":
        weights = conns * (21 + extra) + 32 * omega
    else:
        weights = 0
    activations = depth * 2 * (5 if model.startswith("sw") else 3.5) * batch * gm * 4
    return (weights + activations) / 2 ** 30


def worker(spec):
    """Build one model, time its steps and read its peak memory; return a dict (run in a fresh process)."""
    torch.set_num_threads(spec["threads"])
    S, C, depth, batch, dev = spec["S"], spec["C"], spec["depth"], spec["batch"], spec["device"]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, S, spec["in_channels"], generator=g).to(dev)
    y = torch.randint(10, (batch,), generator=g).to(dev)
    _reset_peak()
    rss0 = _rss_kib("VmRSS")
    t = time.perf_counter()
    model = build(spec["model"], S, C, depth, spec["in_channels"], spec["gamma"], device=dev)
    build_s = time.perf_counter() - t
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if spec["optimizer"] == "adamw" else None
    times = []
    for i in range(spec["repeats"] + 1):
        dt = _step_time(model, x, y, dev, opt)
        if i:
            times.append(dt)
        if sum(times) > spec["max_seconds"]:
            break
    stored = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    conns = sum(m.connections if isinstance(m, SparseMaskedLinear) else int(m.mask.sum())
                for m in model.modules() if isinstance(m, (MaskedLinear, SparseMaskedLinear)))
    return dict(model=spec["model"], S=S, C=C, m=S * C, build_s=build_s, step_s=float(pd.Series(times).median()),
                steps=len(times), peak_mib=(_rss_kib("VmHWM") - rss0) / 1024, stored_mib=stored / 2 ** 20,
                sw_connections=conns, threads=torch.get_num_threads())


def _run_worker(spec, timeout):
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]), MKL_NUM_THREADS=str(spec["threads"]))
    out = subprocess.run([sys.executable, __file__, "worker", "--spec", json.dumps(spec)], capture_output=True,
                         text=True, env=env, timeout=timeout)
    if out.returncode != 0:
        return dict(model=spec["model"], S=spec["S"], C=spec["C"], m=spec["S"] * spec["C"],
                    error=(out.stderr.strip().splitlines() or ["?"])[-1][:200])
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling(args):
    """The scaling table: each (side, model) in a subprocess, skipped where its predicted peak exceeds the budget."""
    rows = []
    for side in args.sides:
        for model in args.models:
            pred = predicted_gib(model, side, side, args.depth, args.batch, args.gamma, args.optimizer)
            omega = mixer_theory.connections(side, side, args.gamma)
            base = dict(model=model, S=side, C=side, m=side * side, predicted_gib=pred,
                        conn_mib=4 * args.depth * 4 * omega / 2 ** 20)
            if pred > args.budget_gib:
                rows.append(dict(base, error=f"not run: predicted {pred:.1f} GiB > {args.budget_gib:g} GiB"))
                print(f"  {model:9s} S=C={side:4d}: skipped (predicted {pred:.1f} GiB)", flush=True)
                continue
            spec = dict(model=model, S=side, C=side, depth=args.depth, batch=args.batch, gamma=args.gamma,
                        in_channels=args.in_channels, repeats=args.repeats, threads=args.threads,
                        device=args.device, optimizer=args.optimizer, max_seconds=args.max_seconds)
            r = _run_worker(spec, args.timeout)
            rows.append(dict(base, **r))
            print(f"  {model:9s} S=C={side:4d}: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                                            for k, v in r.items() if k not in ("model", "S", "C")),
                  flush=True)
    table = pd.DataFrame(rows)
    if "step_s" in table:
        ref = table[table.model == "mixer"].set_index("m").step_s
        table["vs_mixer"] = table.step_s / table.m.map(ref)
        table["peak_over_conn"] = table.peak_mib / table.conn_mib
        mref = table[table.model == "mixer"].set_index("m").peak_mib
        table["extra_over_conn"] = (table.peak_mib - table.m.map(mref)) / table.conn_mib
    return table


def options(args):
    """One layer m → 2m at density 1/√m, batch ``--batch``, in each storage considered (each in a subprocess)."""
    rows = []
    for how in ("dense_mask", "coo_autograd", "csr_autograd", "gather_scatter", "one_block",
                "sparse_masked_linear"):
        spec = dict(option=how, m=args.width, batch=args.batch, repeats=args.repeats, threads=args.threads)
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
        out = subprocess.run([sys.executable, __file__, "option-worker", "--spec", json.dumps(spec)],
                             capture_output=True, text=True, env=env, timeout=args.timeout)
        r = (json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else
             dict(option=how, error=(out.stderr.strip().splitlines() or ["?"])[-1][:200]))
        rows.append(r)
        print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()),
              flush=True)
    table = pd.DataFrame(rows)
    ref = table.set_index("option").step_ms.get("sparse_masked_linear")
    if ref is not None:
        table["vs_chosen"] = table.step_ms / ref
    return table


def option_worker(spec):
    """Time forward + backward (to the input and the kept values) of one masked layer stored as ``spec["option"]``."""
    torch.set_num_threads(spec["threads"])
    m, B, how = spec["m"], spec["batch"], spec["option"]
    n_in, n_out = m, 2 * m
    p = 1.0 / round(m ** 0.5)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, n_in, generator=g).requires_grad_()
    gy = torch.randn(B, n_out, generator=g)
    _reset_peak()
    rss0 = _rss_kib("VmRSS")
    if how == "one_block":                                # the layer's own products on a single CSR block
        SparseMaskedLinear.BLOCK = 2 * n_out
    if how != "dense_mask":
        layer = SparseMaskedLinear(n_in, n_out, density=p, bias=False, seed=0)
        rows, cols = layer.indices()
        if how not in ("sparse_masked_linear", "one_block"):   # one row-major CSR/COO for torch's own sparse ops
            perm = torch.argsort(rows * n_in + cols)
            rows, cols = rows[perm], cols[perm]
            values = layer.values.detach()[perm].clone().requires_grad_()
            crow = torch.zeros(n_out + 1, dtype=torch.int64)
            crow[1:] = torch.bincount(rows, minlength=n_out).cumsum(0)
            col = cols
        else:
            values = layer.values
    if how == "dense_mask":
        dense = MaskedLinear(n_in, n_out, density=p, bias=False, seed=0)
        target = dense.weight

        def run():
            return torch.autograd.grad(dense(x), (x, target), gy)
    elif how == "coo_autograd":
        idx = torch.stack([rows, cols])

        def run():
            W = torch.sparse_coo_tensor(idx, values, (n_out, n_in), is_coalesced=True)
            return torch.autograd.grad(torch.sparse.mm(W, x.T).T, (x, values), gy)
    elif how == "csr_autograd":
        def run():
            W = torch.sparse_csr_tensor(crow, col, values, (n_out, n_in))
            return torch.autograd.grad((W @ x.T).T, (x, values), gy)
    elif how == "gather_scatter":
        def run():
            contrib = x[:, cols] * values                                  # batch × connections
            y = torch.zeros(B, n_out).index_add(1, rows, contrib)
            return torch.autograd.grad(y, (x, values), gy)
    else:
        def run():
            return torch.autograd.grad(layer(x), (x, values), gy)
    times = []
    for i in range(spec["repeats"] + 1):
        t = time.perf_counter()
        run()
        if i:
            times.append(time.perf_counter() - t)
    conns = int(dense.mask.sum()) if how == "dense_mask" else layer.connections
    return dict(option=how, m=m, connections=conns, batch=B,
                step_ms=1e3 * float(pd.Series(times).median()), peak_mib=(_rss_kib("VmHWM") - rss0) / 1024)


def crossover(args):
    """Dense-mask / sparse SW-MLP step times at small m (default densities and fixed ones), in this process."""
    torch.set_num_threads(args.threads)
    rows = []
    for S, C, density in [(8, 16, None), (16, 12, None), (16, 16, None), (24, 24, None), (32, 32, None),
                          (16, 16, 1 / 8), (16, 16, 1 / 4), (24, 24, 1 / 8), (24, 24, 1 / 4), (32, 32, 1 / 8),
                          (32, 32, 1 / 4), (4, 43, None), (9, 26, None), (25, 11, None), (36, 6, None)]:
        kw = dict(tokens=S, in_channels=16, channels=C, depth=args.depth, n_classes=10, density=density, seed=0)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(args.batch, S, 16, generator=g), torch.randint(10, (args.batch,), generator=g)
        td, ts = compare(SWMLP(storage="dense", **kw), SWMLP(storage="sparse", **kw), x, y, args.repeats, "cpu")
        p = max(1 / S, 1 / C) if density is None else density
        rows.append(dict(S=S, C=C, m=S * C, max_density=p, dense_ms=1e3 * td, sparse_ms=1e3 * ts,
                         sparse_over_dense=ts / td))
        print(f"  S={S} C={C} m={S * C} p={p:.3f}: dense {1e3 * td:.1f} ms, sparse {1e3 * ts:.1f} ms", flush=True)
    return pd.DataFrame(rows)


def pairs(args):
    S, C, dev = args.tokens, args.channels, args.device
    torch.set_num_threads(args.threads)
    kw = dict(tokens=S, in_channels=args.in_channels, channels=C, depth=args.depth, n_classes=10, gamma=args.gamma,
              seed=0, device=dev)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch, S, args.in_channels, generator=g).to(dev)
    y = torch.randint(10, (args.batch,), generator=g).to(dev)
    mixer, rp = MLPMixer(**kw), RPMixer(**kw)
    sw, sw_dense, dense = SWMLP(storage="sparse", **kw), SWMLP(storage="dense", **kw), SWMLP(density=1.0, **kw)
    rows = []
    for name, a, b in [("RP-Mixer / Mixer", rp, mixer), ("SW-MLP sparse / Mixer", sw, mixer),
                       ("SW-MLP dense mask / Mixer", sw_dense, mixer), ("SW-MLP sparse / dense MLP", sw, dense),
                       ("Mixer / dense MLP", mixer, dense)]:
        ta, tb = compare(a, b, x, y, args.repeats, dev)
        rows.append(dict(comparison=name, S=S, C=C, m=S * C, batch=args.batch, device=dev, numerator_s=ta,
                         denominator_s=tb, ratio=ta / tb))
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", default="pairs",
                    choices=["pairs", "scaling", "options", "crossover", "worker", "option-worker"])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--in-channels", type=int, default=48)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--depth", type=int, default=None, help="blocks (default 2 for pairs/crossover, 4 for scaling)")
    ap.add_argument("--gamma", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=None, help="timed steps (default 10; 3 for scaling)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sides", type=int, nargs="+",
                    default=[32, 48, 56, 64, 72, 96, 128, 160, 192, 208, 224, 256, 320, 384, 448, 512, 576])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--budget-gib", type=float, default=8.0)
    ap.add_argument("--optimizer", choices=["none", "adamw"], default="none")
    ap.add_argument("--max-seconds", type=float, default=60.0, help="stop timing a model after this many seconds")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per subprocess")
    ap.add_argument("--width", type=int, default=4096, help="m of the options mode")
    ap.add_argument("--spec", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.mode == "worker":
        print(json.dumps(worker(json.loads(args.spec))))
        return None
    if args.mode == "option-worker":
        print(json.dumps(option_worker(json.loads(args.spec))))
        return None
    args.depth = args.depth or (4 if args.mode == "scaling" else 2)
    args.repeats = args.repeats or (3 if args.mode == "scaling" else 10)
    args.optimizer = None if args.optimizer == "none" else args.optimizer
    print(f"mode {args.mode}: torch {torch.__version__}, {args.threads} thread(s), depth {args.depth}, batch "
          f"{args.batch}, γ = {args.gamma:g}, device {args.device}", flush=True)
    table = {"pairs": pairs, "scaling": scaling, "options": options, "crossover": crossover}[args.mode](args)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return table


if __name__ == "__main__":
    main()
