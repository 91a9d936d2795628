"""Benchmark: Monte Carlo spectra against the dense eigensolver they call, and GPU against CPU.

1. **Overhead.** Each Monte Carlo routine ends in one dense solve of an N×N matrix: a symmetric eigensolve
   (``eigvalsh``: Wishart, Fisher dual) or singular values (``svd(compute_uv=False)``: the Jacobian, whose JJᵀ
   eigenvalues are taken as squared singular values for accuracy near 0); everything before it — drawing Gaussian
   or Haar weights, propagating the input, forming J or Θ — is overhead. For each routine the script times the
   routine and, side by side in alternation, its solver alone on a ready N×N matrix, and prints the ratio of the
   medians (``ratio``). Forming the matrix is real work (one GEMM per layer, one QR per Haar layer), so for the
   library's own overhead — dispatch, batching, backend handling — the routine is also timed against the same
   linear algebra written out by hand in a few lines of NumPy (``ratio_to_hand``; Wishart and Jacobians). The requirement is ≤ 1.2× for one layer
   (``wishart``, ``jacobian L=1``); deeper nets add one N³ product per layer (and one QR per layer for Haar weights),
   which the table shows as the ratio growing with L.
2. **GPU.** With CuPy and a CUDA device, the same routines at N = 4096, 8192, 16384 on ``backend="cupy"`` against
   ``"numpy"``, as the ratio GPU time / CPU time (CPU runs above ``--cpu-max`` are skipped and marked).

Run: ``python benchmarks/montecarlo.py [--n 1500] [--repeats 5] [--gpu-sizes 4096 8192 16384] [--cpu-max 8192]``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from rmtnet import backend as B
from rmtnet.spectra import network
from rmtnet.spectra.sampling import montecarlo

SQRT2 = np.sqrt(2.0)


def routines(n):
    """(name, callable(backend, seed), solver) — each draws its matrices and returns N eigenvalues (one sample);
    solver names the dense routine it ends in."""
    relu = lambda L, w: network.mlp(L, n, weights=w, sigma_w=SQRT2, activation="relu")
    tanh = network.mlp(2, n, weights="gaussian", sigma_w=1.1, sigma_b=0.05, activation="tanh", q0=1.0)
    return [
        ("wishart", lambda be, s: montecarlo.wishart_eigs(n, n, seed=s, backend=be), "eigvalsh"),
        ("jacobian L=1 gaussian relu", lambda be, s: montecarlo.sample_jacobian_eigs(relu(1, "gaussian"), seed=s,
                                                                                     backend=be), "svdvals"),
        ("jacobian L=2 gaussian tanh", lambda be, s: montecarlo.sample_jacobian_eigs(tanh, seed=s, backend=be),
         "svdvals"),
        ("jacobian L=4 gaussian relu", lambda be, s: montecarlo.sample_jacobian_eigs(relu(4, "gaussian"), seed=s,
                                                                                     backend=be), "svdvals"),
        ("jacobian L=2 orthogonal relu", lambda be, s: montecarlo.sample_jacobian_eigs(relu(2, "orthogonal"),
                                                                                       seed=s, backend=be),
         "svdvals"),
        ("fisher L=2 orthogonal relu", lambda be, s: montecarlo.sample_fisher_eigs(relu(2, "orthogonal"), seed=s,
                                                                                   backend=be), "eigvalsh"),
    ]


def _sync(backend):
    if backend == "cupy":
        B.native("cupy").cuda.Device().synchronize()


def _time(f, backend):
    _sync(backend)
    t = time.perf_counter()
    f()
    _sync(backend)
    return time.perf_counter() - t


def baseline(n, backend, seed, solver):
    """The solver alone on a ready N×N matrix: eigvalsh of a symmetric one, or the singular values of a square one."""
    xp = B.native(backend)
    a = B.rng(seed, backend).standard_normal((n, n), dtype="float64")
    _sync(backend)
    if solver == "svdvals":
        return lambda: xp.linalg.svd(a, compute_uv=False)
    a = a + a.T
    return lambda: xp.linalg.eigvalsh(a)


def _wishart_by_hand(n, seed):
    x = np.random.default_rng(seed).standard_normal((n, n)) / np.sqrt(n)
    return np.linalg.eigvalsh(x @ x.T)


def _jacobian_by_hand(n, depth, weights, sigma_w, sigma_b, phi, dphi, seed):
    """J = D_L W_L ⋯ D_1 W_1 at one propagated input, and the squared singular values: no library code."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    x *= np.sqrt(n / (x @ x))
    j = None
    for _ in range(depth):
        if weights == "gaussian":
            w = sigma_w * rng.standard_normal((n, n)) / np.sqrt(n)
        else:
            q, r = np.linalg.qr(rng.standard_normal((n, n)))
            w = sigma_w * q * np.sign(np.diag(r))
        h = w @ x + (sigma_b * rng.standard_normal(n) if sigma_b else 0.0)
        j = w if j is None else w @ j
        j = dphi(h)[:, None] * j
        x = phi(h)
    return np.linalg.svd(j, compute_uv=False) ** 2


def by_hand(n):
    """The routines of :func:`routines` (where short) as plain NumPy, by name."""
    relu, drelu = (lambda h: np.maximum(h, 0.0)), (lambda h: (h > 0).astype(float))
    tanh, dtanh = np.tanh, (lambda h: 1.0 - np.tanh(h) ** 2)
    return {
        "wishart": lambda s: _wishart_by_hand(n, s),
        "jacobian L=1 gaussian relu": lambda s: _jacobian_by_hand(n, 1, "gaussian", SQRT2, 0.0, relu, drelu, s),
        "jacobian L=2 gaussian tanh": lambda s: _jacobian_by_hand(n, 2, "gaussian", 1.1, 0.05, tanh, dtanh, s),
        "jacobian L=4 gaussian relu": lambda s: _jacobian_by_hand(n, 4, "gaussian", SQRT2, 0.0, relu, drelu, s),
        "jacobian L=2 orthogonal relu": lambda s: _jacobian_by_hand(n, 2, "orthogonal", SQRT2, 0.0, relu, drelu,
                                                                    s),
    }


def overhead(n, repeats, backend="numpy"):
    rows = []
    hand = by_hand(n)
    for name, f, solver in routines(n):
        f(backend, 0)                                          # warm-up (imports, FFT plans, BLAS threads)
        base = baseline(n, backend, 1, solver)
        base()
        h = hand.get(name) if backend == "numpy" else None
        tr, tb, th = [], [], []
        for r in range(repeats):                               # alternate, so drifts hit all alike
            tr.append(_time(lambda: f(backend, r), backend))
            tb.append(_time(base, backend))
            if h is not None:
                th.append(_time(lambda: h(r), backend))
        row = dict(routine=name, N=n, backend=backend, solver=solver, routine_s=np.median(tr),
                   solver_s=np.median(tb), ratio=np.median(tr) / np.median(tb))
        if th:
            row.update(by_hand_s=np.median(th), ratio_to_hand=np.median(tr) / np.median(th))
        rows.append(row)
    return pd.DataFrame(rows)


def gpu_vs_cpu(sizes, repeats, cpu_max):
    rows = []
    for n in sizes:
        for name, f, _ in routines(n)[:3]:
            f("cupy", 0)
            tg = np.median([_time(lambda: f("cupy", r), "cupy") for r in range(repeats)])
            tc = np.median([_time(lambda: f("numpy", r), "numpy") for r in range(max(1, repeats // 2))]) \
                if n <= cpu_max else np.nan
            rows.append(dict(routine=name, N=n, gpu_s=tg, cpu_s=tc, gpu_over_cpu=tg / tc))
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--gpu-sizes", type=int, nargs="*", default=[4096, 8192, 16384])
    ap.add_argument("--cpu-max", type=int, default=8192, help="skip CPU runs above this N in the GPU comparison")
    a = ap.parse_args(argv)
    pd.set_option("display.width", 160)
    t = overhead(a.n, a.repeats)
    print(f"Monte Carlo time / its dense solver's time (NumPy, N = {a.n}, median of {a.repeats}):")
    print(t.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if B.gpu_available():
        g = gpu_vs_cpu(a.gpu_sizes, a.repeats, a.cpu_max)
        print("\nGPU (CuPy) / CPU (NumPy) time:")
        print(g.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    else:
        print("\nGPU comparison skipped: no CuPy or no CUDA device.")
    return t


if __name__ == "__main__":
    main()
