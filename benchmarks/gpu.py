"""Benchmark: the same rmtnet code on a GPU (CuPy, torch CUDA) and on the CPU (NumPy, torch CPU), as ratios.

Each item runs one piece of code twice, once per device, and prints the median wall time of each (``--repeats``
runs after a warm-up, device synchronised before the clock stops) and ``gpu/cpu``, the GPU time over the CPU time
(below 1: the GPU is faster; ``cpu/gpu`` is the speed-up), and ``agree``, the largest CPU–GPU difference of the
results relative to their scale where both ran on the same input (eigvalsh: the same matrix; ⊠ engine: the CPU's
grid; SLQ: the first two moments, different probes, so Hutchinson noise rather than rounding):

1. **eigvalsh** — a dense symmetric float64 eigensolve, ``cupy.linalg.eigvalsh`` against ``numpy.linalg.eigvalsh``,
   at N = 4096, 8192, 16384, 32768 (``--eig-sizes``; 32768² float64 is 8.6 GB).
2. **jacobian** — the Monte Carlo sampler ``rmtnet.spectra.sample_jacobian_eigs(net, backend=...)`` of a depth-2
   Gaussian ReLU network at criticality (σ_w² = 2): the weight draws, the product J and its singular values, at
   N = 4096, 8192, 16384 (``--jac-sizes``).
3. **train** — training throughput, samples/s of one AdamW step (forward, backward, update) of MLP-Mixer, RP-Mixer
   and SW-MLP (rmtnet.nets.models, built as in benchmarks/mixing.py) with S = C tokens and channels, on ``cuda``
   against ``cpu`` (``--train-sides``, ``--batch``). Needs a CUDA build of torch for the GPU side.
4. **slq** — stochastic Lanczos quadrature (``rmtnet.spectra.sampling.lanczos.slq``) at m = S·C = 10⁶ and 10⁷
   (``--slq-sides 1000 3163``; the CPU runs up to ``--slq-cpu-max-side`` and is estimated by side³ beyond)
   on JJᵀ of a depth-4 linear Gaussian Mixer-structured network (``rmtnet.spectra.sampling.operators.mixer_network``:
   per layer a token mixing W_ℓ ⊗ I_C and a channel mixing I_S ⊗ V_ℓ, applied as S×S and C×C matmuls on the (S, C)
   reshape; nothing m×m is built), drawn on the GPU with CuPy and on the CPU with NumPy.
5. **⊠ engine** — the density of ν = Bernoulli(½)^{⊠10} ⊠ MP(1, scale 2)^{⊠10} (benchmarks/free_mult.py's law)
   on 10⁶ grid points in one batch, ``law.pdf(x, backend="cupy")`` against ``backend="numpy"``: the same Newton
   continuation, all points side by side on the device.

CPU runs that would take too long are capped and said so: eigvalsh and jacobian above ``--cpu-max`` (default 8192)
are skipped and the CPU time is estimated from the largest measured N by N³ scaling (marked ``est``); the ⊠ engine
on the CPU is timed on ``--cpu-points`` points (default 10⁵) and scaled linearly to the GPU's grid (marked ``est``).
Without a CUDA device the script says so and exits with status 0; ``--cpu-only`` runs the CPU halves at small
sizes instead (a smoke test of the script itself: every item, no ratio).

:func:`main` returns one DataFrame per item; besides the times, the column ``cpu_result`` holds what the CPU run
computed (None where it was skipped): eigvalsh, the eigenvalues of ``_symmetric(N)``; jacobian, the eigenvalues of
the last sample; train, the loss before the first and after the last timed step; slq, the SpectralQuadrature;
⊠ engine, the grid and the density on it.

Run: ``python benchmarks/gpu.py [--items eig jacobian train slq boxtimes] [--repeats 3] [--cpu-max 8192]``,
``python benchmarks/gpu.py --cpu-only``.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time
import warnings

import numpy as np
import pandas as pd

from rmtnet import backend as B
from rmtnet.spectra import network
from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult, free_mult_power, sample_jacobian_eigs
from rmtnet.spectra.sampling import lanczos as lz
from rmtnet.spectra.sampling import operators as ops

ITEMS = ("eig", "jacobian", "train", "slq", "boxtimes")
SQRT2 = math.sqrt(2.0)


# -- timing -----------------------------------------------------------------------------------------------------------

def _sync(device):
    if device == "cupy":
        B.native("cupy").cuda.Device().synchronize()
    elif device == "cuda":
        import torch
        torch.cuda.synchronize()


def median_time(f, device, repeats, warmup=1):
    """Median seconds of ``f()`` over ``repeats`` calls after ``warmup`` untimed ones, synchronising ``device``
    ("numpy", "cupy", "cpu" or "cuda") before each clock reading."""
    for _ in range(warmup):
        f()
    times = []
    for _ in range(repeats):
        _sync(device)
        t = time.perf_counter()
        f()
        _sync(device)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def warm_up_cpu():
    """One small eigensolve and matmul, so that the BLAS thread pool is started before any CPU clock runs (the
    CPU measurements at large N have no full-size warm-up: it would cost as much as the measurement)."""
    a = _symmetric(256, "numpy")
    np.linalg.eigvalsh(a)
    np.linalg.svd(a @ a, compute_uv=False)


def _free_gpu_memory():
    if B.gpu_available():
        B.native("cupy").get_default_memory_pool().free_all_blocks()


def _row(item, size, cpu_s, gpu_s, note="", agree=math.nan, cpu_result=None):
    """One table row; ``agree`` is the largest difference between the CPU and the GPU result, relative to the
    result's scale (NaN where the two runs draw different random inputs and no such comparison is made);
    ``cpu_result`` what the CPU run computed (not printed)."""
    return dict(item=item, size=size, cpu_s=cpu_s, gpu_s=gpu_s, gpu_over_cpu=gpu_s / cpu_s, cpu_over_gpu=cpu_s / gpu_s,
                agree=agree, note=note, cpu_result=cpu_result)


def _max_rel(a, b):
    a, b = B.to_numpy(a), B.to_numpy(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


def _cpu_or_estimate(n, cpu_max, measure, measured, power=3.0, size="N", option="--cpu-max"):
    """The CPU time at size ``n``: measured if n ≤ cpu_max, else estimated as t(n₀)·(n/n₀)^power from the largest
    measured size n₀ (``measured``: {n: seconds}). Returns (seconds, note); the note names the size ``size`` and
    the command-line ``option`` that capped it."""
    if n <= cpu_max:
        measured[n] = measure()
        return measured[n], ""
    if not measured:
        return math.nan, f"CPU skipped ({size} > {option} {cpu_max})"
    n0 = max(measured)
    return (measured[n0] * (n / n0) ** power,
            f"CPU est: skipped ({size} > {option} {cpu_max}), {size}^{power:g} from {size}={n0}")


# -- 1. dense eigensolves ---------------------------------------------------------------------------------------------

def _symmetric(n, backend, seed=0):
    a = B.rng(seed, backend).standard_normal((n, n), dtype="float64")
    return (a + a.T) / 2


def eigvalsh_item(sizes, repeats, cpu_max, gpu):
    rows, measured = [], {}
    for n in sizes:
        host = {}

        def cpu():
            a = _symmetric(n, "numpy")
            host["a"], host["eig"] = a, np.linalg.eigvalsh(a)
            return median_time(lambda: np.linalg.eigvalsh(a), "numpy", max(1, repeats // 2), warmup=0)
        cpu_s, note = _cpu_or_estimate(n, cpu_max, cpu, measured)
        gpu_s, agree = math.nan, math.nan
        if gpu:
            cp = B.native("cupy")
            a = cp.asarray(host["a"]) if host else _symmetric(n, "cupy")   # the same matrix where the CPU ran
            dev = {}
            gpu_s = median_time(lambda: dev.__setitem__("eig", cp.linalg.eigvalsh(a)), "cupy", repeats)
            if host:
                agree = _max_rel(host["eig"], dev["eig"])
            del a
            _free_gpu_memory()
        rows.append(_row("eigvalsh float64", f"N={n}", cpu_s, gpu_s, note, agree, host.get("eig")))
    return rows


# -- 2. the Monte Carlo Jacobian sampler ------------------------------------------------------------------------------

def jacobian_item(sizes, repeats, cpu_max, gpu):
    rows, measured = [], {}
    for n in sizes:
        net = network.mlp(2, n, weights="gaussian", sigma_w=SQRT2, activation="relu")
        seeds, last = iter(range(10 ** 6)), {}
        run = lambda be: last.__setitem__(be, sample_jacobian_eigs(net, seed=next(seeds), backend=be))  # noqa: E731
        cpu_s, note = _cpu_or_estimate(n, cpu_max, lambda: median_time(lambda: run("numpy"), "numpy",
                                                                       max(1, repeats // 2), warmup=0), measured)
        gpu_s = median_time(lambda: run("cupy"), "cupy", repeats) if gpu else math.nan
        _free_gpu_memory()
        rows.append(_row("sample_jacobian_eigs L=2 relu", f"N={n}", cpu_s, gpu_s, note, cpu_result=last.get("numpy")))
    return rows


# -- 3. training throughput -------------------------------------------------------------------------------------------

def _models(side, device):
    from rmtnet.nets.models import MLPMixer, RPMixer, SWMLP
    kw = dict(tokens=side, in_channels=48, channels=side, depth=2, n_classes=10, gamma=2.0, seed=0, device=device)
    return {"Mixer": MLPMixer(**kw), "RP-Mixer": RPMixer(**kw), "SW-MLP": SWMLP(**kw)}


def _samples_per_s(model, batch, side, device, repeats):
    import torch
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, side, 48, generator=g).to(device)
    y = torch.randint(10, (batch,), generator=g).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())

    rate = batch / median_time(step, device, repeats, warmup=2)
    with torch.no_grad():                                   # the loss after the last step, on the same batch
        final = float(torch.nn.functional.cross_entropy(model(x), y))
    return rate, (float(losses[0]), final)


def train_item(sides, batch, repeats, gpu):
    import torch
    cuda = gpu and torch.cuda.is_available()
    if gpu and not cuda:
        print(f"  train: GPU side not available: torch {torch.__version__} sees no CUDA device (a CPU build?); "
              f"CPU side only")
    rows = []
    for side in sides:
        cpu_models = _models(side, "cpu")
        gpu_models = _models(side, "cuda") if cuda else {}
        for name, model in cpu_models.items():
            cpu_rate, cpu_losses = _samples_per_s(model, batch, side, "cpu", max(2, repeats // 2))
            gpu_rate = _samples_per_s(gpu_models[name], batch, side, "cuda", repeats)[0] if cuda else math.nan
            # the ratio of times per sample: gpu/cpu = cpu rate / gpu rate
            row = _row(f"train {name} (samples/s)", f"S=C={side} m={side * side} batch={batch}", 1 / cpu_rate,
                       1 / gpu_rate, "", cpu_result=cpu_losses)
            row.update(cpu_samples_per_s=cpu_rate, gpu_samples_per_s=gpu_rate)
            rows.append(row)
    return rows


# -- 4. stochastic Lanczos quadrature ---------------------------------------------------------------------------------

def mixer_network(side, depth, backend, seed=0):
    """The benchmark's Mixer-structured network: ``depth`` linear layers with Gaussian token and channel mixing
    (σ_w = 1) at S = C = ``side`` (rmtnet.spectra.sampling.operators.mixer_network, Kronecker structure: per layer the
    token mixing X ↦ W X and the channel mixing X ↦ X Vᵀ on the (S, C) reshape; nothing m×m is built)."""
    net = network.mlp(depth, 10, weights="gaussian", activation="linear", sigma_w=1.0)
    return ops.mixer_network(net, side, side, seed=seed, backend=backend)


def slq_item(sides, depth, n_probes, n_steps, repeats, cpu_max_side, gpu):
    """SLQ at each S = C in ``sides``; the CPU runs up to ``cpu_max_side`` and is estimated beyond it by the
    matvec's cost, side³ (an S×S by S×C product per mixing). ``agree``: the largest relative difference of the
    first two moments of the CPU and GPU estimates (different probes and weights: Hutchinson noise, not rounding)."""
    rows, measured = [], {}
    run = lambda op: lz.slq(op, n_steps=n_steps, n_probes=n_probes, seed=0)      # noqa: E731
    for side in sides:
        m = side * side
        out = {}

        def cpu():                          # one run (minutes at m = 10⁶ on 16 cores), kept for the comparison
            op = mixer_network(side, depth, "numpy").jacobian_gram()
            t = time.perf_counter()
            out["cpu"] = run(op)
            return time.perf_counter() - t
        cpu_s, note = _cpu_or_estimate(side, cpu_max_side, cpu, measured, size="S", option="--slq-cpu-max-side")
        gpu_s, agree = math.nan, math.nan
        if gpu:
            op_gpu = mixer_network(side, depth, "cupy").jacobian_gram()
            gpu_s = median_time(lambda: out.__setitem__("gpu", run(op_gpu)), "cupy", repeats)
            if "cpu" in out:
                agree = max(abs(out["gpu"].moment(k) / out["cpu"].moment(k) - 1) for k in (1, 2))
            del op_gpu
            _free_gpu_memory()
        rows.append(_row(f"SLQ Mixer JJᵀ depth {depth}", f"m={m} probes={n_probes} steps={n_steps}", cpu_s, gpu_s,
                         note, agree, out.get("cpu")))
    return rows


# -- 5. the ⊠ engine on a large grid ----------------------------------------------------------------------------------

def boxtimes_law(depth=10):
    return free_mult(free_mult_power(Bernoulli(0.5), depth), free_mult_power(MarchenkoPastur(1.0, 2.0), depth))


def boxtimes_item(points, cpu_points, repeats, gpu):
    law = boxtimes_law()
    edge = law.continuous_support()[1]
    grid = lambda n, be: B.native(be).asarray(edge * (np.arange(n) + 0.5) / n)      # noqa: E731
    n_cpu = min(points, cpu_points)
    x_cpu = grid(n_cpu, "numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        host = {}
        cpu_s = median_time(lambda: host.__setitem__("pdf", law.pdf(x_cpu, backend="numpy")), "numpy",
                            max(1, repeats // 2), warmup=0)
        gpu_s, agree = math.nan, math.nan
        if gpu:
            x_gpu = grid(points, "cupy")
            gpu_s = median_time(lambda: law.pdf(x_gpu, backend="cupy"), "cupy", repeats)
            agree = _max_rel(host["pdf"], law.pdf(grid(n_cpu, "cupy"), backend="cupy"))
            _free_gpu_memory()
    note = ""
    if n_cpu < points:
        cpu_s *= points / n_cpu
        note = f"CPU est: timed on {n_cpu} points, scaled linearly to {points}"
    return [_row("⊠ engine pdf, (Bern ⊠ MP)^⊠10", f"{points} points", cpu_s, gpu_s, note, agree,
                 (x_cpu, host["pdf"]))]


# -- driver -----------------------------------------------------------------------------------------------------------

def device_description():
    """The GPU's name and memory (cupy.cuda.runtime.getDeviceProperties), or None without one."""
    if not B.gpu_available():
        return None
    cp = B.native("cupy")
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    try:
        import torch
        torch_version = f"torch {torch.__version__} (CUDA {torch.version.cuda})"
    except ImportError:  # pragma: no cover
        torch_version = "no torch"
    return (f"{name} (device {dev.id}, {props['totalGlobalMem'] / 2 ** 30:.0f} GiB, compute capability "
            f"{props['major']}.{props['minor']}; CuPy {cp.__version__}, CUDA runtime "
            f"{cp.cuda.runtime.runtimeGetVersion()}, driver API {cp.cuda.runtime.driverGetVersion()}; {torch_version})")


def _print(rows, cpu_only):
    table = pd.DataFrame(rows)
    cols = ["item", "size", "cpu_s"] + ([] if cpu_only else ["gpu_s", "gpu_over_cpu", "cpu_over_gpu", "agree"])
    if "cpu_samples_per_s" in table:
        cols += ["cpu_samples_per_s"] + ([] if cpu_only else ["gpu_samples_per_s"])
    cols += ["note"] if table["note"].astype(bool).any() else []
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", nargs="+", choices=ITEMS, default=list(ITEMS), help="which items to run")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per measurement on the GPU (CPU: half)")
    ap.add_argument("--cpu-max", type=int, default=8192, help="largest N timed on the CPU for eigvalsh/jacobian")
    ap.add_argument("--eig-sizes", type=int, nargs="+", default=[4096, 8192, 16384, 32768])
    ap.add_argument("--jac-sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    ap.add_argument("--train-sides", type=int, nargs="+", default=[32, 64], help="S = C of the trained models")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--slq-sides", type=int, nargs="+", default=[1000, 3163],
                    help="S = C of the SLQ operator (m = side²: 10⁶ and 10⁷)")
    ap.add_argument("--slq-cpu-max-side", type=int, default=1000,
                    help="largest S timed on the CPU for SLQ (beyond: estimated by side³ scaling)")
    ap.add_argument("--slq-probes", type=int, default=8)
    ap.add_argument("--slq-steps", type=int, default=80)
    ap.add_argument("--points", type=int, default=10 ** 6, help="grid points of the ⊠ engine item")
    ap.add_argument("--cpu-points", type=int, default=10 ** 5, help="grid points timed on the CPU (then scaled)")
    ap.add_argument("--cpu-only", action="store_true",
                    help="no GPU needed: the CPU halves at small sizes (a smoke test of the script)")
    a = ap.parse_args(argv)
    for name in ("repeats", "cpu_max", "batch", "slq_cpu_max_side", "slq_probes", "slq_steps", "points", "cpu_points"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(a, name)}")

    device = device_description()
    if device is None and not a.cpu_only:
        print("No CUDA device (or no CuPy: pip install 'rmtnet[gpu]'): nothing to compare, exiting. "
              "`--cpu-only` runs the CPU halves at small sizes.")
        return None
    if a.cpu_only:
        a.eig_sizes, a.jac_sizes, a.train_sides, a.batch = [128, 256], [128], [8], 16
        a.slq_sides, a.slq_probes, a.slq_steps, a.points, a.repeats = [32], 2, 10, 1000, 1
    gpu = not a.cpu_only
    pd.set_option("display.width", 200)
    print(f"GPU: {device if gpu else 'none used (--cpu-only)'}")
    print(f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; NumPy {np.__version__}")
    print(f"times: median of {a.repeats} on the GPU, {max(1, a.repeats // 2)} on the CPU, after a warm-up; "
          f"gpu/cpu < 1 means the GPU is faster\n")

    warm_up_cpu()
    runners = {
        "eig": lambda: eigvalsh_item(a.eig_sizes, a.repeats, a.cpu_max, gpu),
        "jacobian": lambda: jacobian_item(a.jac_sizes, a.repeats, a.cpu_max, gpu),
        "train": lambda: train_item(a.train_sides, a.batch, a.repeats, gpu),
        "slq": lambda: slq_item(a.slq_sides, 4, a.slq_probes, a.slq_steps, a.repeats, a.slq_cpu_max_side, gpu),
        "boxtimes": lambda: boxtimes_item(a.points, a.cpu_points, a.repeats, gpu),
    }
    results = {}
    for item in a.items:
        print(f"[{item}]")
        t0 = time.perf_counter()
        rows = runners[item]()
        _print(rows, a.cpu_only)
        print(f"  ({time.perf_counter() - t0:.1f} s)\n")
        results[item] = pd.DataFrame(rows)
    return results


if __name__ == "__main__":
    main()
