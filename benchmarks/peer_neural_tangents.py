"""Side by side with neural-tangents (Novak, Xiao, Hron, Lee, Alemi, Sohl-Dickstein & Schoenholz, "Neural Tangents:
Fast and Easy Infinite Neural Networks in Python", ICLR 2020, arXiv 1912.02803): the infinite-width NTK Θ_L and NNGP
kernel Σ_L of a depth-L MLP (σ_w = 1.4, σ_b = 0.1, ReLU and erf) on the same B inputs of dimension 100, float64,
at one thread and at two, in one run.

rmtnet: :func:`rmtnet.spectra.kernels.ntk_kernel` and :func:`~rmtnet.spectra.kernels.nngp_kernel`, its threads
pinned with threadpoolctl (the blockwise recursion runs as many blocks at once as the BLAS may use threads).
neural-tangents: ``stax.serial`` of (``Dense(1, W_std=1.4, b_std=0.1)``, ``Relu()`` or ``Erf(a=1, b=√π/2, c=0)``)
× (L − 1), then a ``Dense`` read-out (rmtnet's erf is erf(√π h/2)), its ``kernel_fn(X, None, "ntk")`` (or
``"nngp"``) under ``jax.jit`` with ``jax_enable_x64``. It is not a dependency of rmtnet: it runs in a subprocess of
another interpreter (``--peer-python``, or the environment variable ``NEURAL_TANGENTS_PYTHON``), a venv with
``neural-tangents`` and ``jax[cpu]``; without one only rmtnet's times are printed. Its threads are pinned by its
environment: ``OMP_NUM_THREADS=k`` and ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``
for k = 1 (``=true``, ``=2`` for k = 2). The peer's first call of each kernel compiles it: that call is timed
apart (printed as ``compile s``) and left out of the medians; rmtnet's first call is a warm-up left out as well.

Timing: ``--repeats`` rounds, each timing every (activation, kernel) on both sides one after the other (which side
goes first alternates), so that both see the same load; the medians, their ratio rmtnet/neural-tangents (the issue's
target: ≤ 0.8), the CPU time over the wall time of each side (the threads it actually used), and the largest
entrywise relative difference of the two kernels (target ≤ 1e-7; neural-tangents' own error is ~1e-8, rmtnet's
~1e-15 against a 40-digit reference) are printed, with the load average before and after.

Run: ``python benchmarks/peer_neural_tangents.py [--points 2000] [--depth 10] [--repeats 5] [--threads 1 2]
[--peer-python PATH]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rmtnet.spectra import network
from rmtnet.spectra.kernels import nngp_kernel, ntk_kernel

SIGMA_W, SIGMA_B, N0 = 1.4, 0.1, 100
ACTIVATIONS = ("relu", "erf")
KERNELS = {"ntk": ntk_kernel, "nngp": nngp_kernel}

PEER = r'''
import json, math, sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import neural_tangents as nt
from neural_tangents import stax

X = np.load(sys.argv[1])
depth, sw, sb = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ACTS = {"relu": stax.Relu, "erf": lambda: stax.Erf(a=1.0, b=math.sqrt(math.pi) / 2, c=0.0)}
fns = {}


def kernel_fn(act, get):
    if (act, get) not in fns:
        layers = []
        for _ in range(depth - 1):
            layers += [stax.Dense(1, W_std=sw, b_std=sb), ACTS[act]()]
        _, _, k = stax.serial(*layers, stax.Dense(1, W_std=sw, b_std=sb))
        fns[act, get] = jax.jit(lambda x: k(x, None, get))
    return fns[act, get]


print(json.dumps({"neural_tangents": nt.__version__, "jax": jax.__version__, "numpy": np.__version__,
                  "x64": bool(jax.config.jax_enable_x64)}), flush=True)
for line in sys.stdin:
    act, get, path = line.split()
    f = kernel_fn(act, get)
    wall, cpu = time.perf_counter(), time.process_time()
    out = f(X).block_until_ready()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    np.save(path, np.asarray(out, dtype=np.float64))
    print(json.dumps({"seconds": wall, "cpu_s": cpu}), flush=True)
'''


def peer_environment(threads):
    """The peer's environment with its threads pinned to ``threads`` (OpenMP and XLA's CPU thread pools)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), TF_CPP_MIN_LOG_LEVEL="3")
    eigen = "false" if threads == 1 else "true"
    env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={eigen} intra_op_parallelism_threads={threads}"
    return env


class Peer:
    """neural-tangents in a subprocess of ``python``: ``call(act, kernel)`` → (seconds, CPU seconds, kernel)."""

    def __init__(self, python, X, depth, threads, workdir):
        self.workdir = Path(workdir)
        np.save(self.workdir / "X.npy", X)
        (self.workdir / "peer.py").write_text(PEER)
        self.log = open(self.workdir / f"peer-{threads}.log", "w")
        self.proc = subprocess.Popen([python, str(self.workdir / "peer.py"), str(self.workdir / "X.npy"), str(depth),
                                      repr(SIGMA_W), repr(SIGMA_B)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=peer_environment(threads))
        self.versions = json.loads(self._line())

    def _line(self):
        line = self.proc.stdout.readline()
        if not line:
            self.log.flush()
            raise RuntimeError("the neural-tangents subprocess stopped:\n" +
                               (self.workdir / Path(self.log.name).name).read_text()[-2000:])
        return line

    def call(self, act, kernel):
        path = self.workdir / "out.npy"
        self.proc.stdin.write(f"{act} {kernel} {path}\n")
        self.proc.stdin.flush()
        reply = json.loads(self._line())
        return reply["seconds"], reply["cpu_s"], np.load(path)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


def rmtnet_call(X, depth, act, kernel):
    """(seconds, CPU seconds, kernel) of rmtnet's ``kernel`` (in the threads threadpoolctl allows)."""
    net = network.mlp(depth, N0, activation=act, sigma_w=SIGMA_W, sigma_b=SIGMA_B)
    wall, cpu = time.perf_counter(), time.process_time()
    out = KERNELS[kernel](net, X)
    return time.perf_counter() - wall, time.process_time() - cpu, out


def max_relative_difference(a, b):
    """max |a − b|/|b| entrywise (b the peer's kernel)."""
    return float(np.max(np.abs(a - b) / np.abs(b)))


def compare(X, depth, threads, repeats, peer):
    """Rows (threads, act, kernel, medians, ratio, CPU/wall, max rel. difference, compile s) at ``threads``."""
    rows = []
    with threadpool_limits(threads):
        first = {}
        for act in ACTIVATIONS:
            for kernel in KERNELS:
                rmtnet_call(X, depth, act, kernel)                    # warm-up (not timed)
                first[act, kernel] = peer.call(act, kernel)[0] if peer else float("nan")
        times = {key: ([], []) for key in first}
        diffs = {}
        for rep in range(repeats):
            for act in ACTIVATIONS:
                for kernel in KERNELS:
                    sides = [("rmtnet", lambda: rmtnet_call(X, depth, act, kernel))]
                    if peer:
                        sides.append(("peer", lambda: peer.call(act, kernel)))
                    got = {}
                    for name, call in sides if rep % 2 == 0 else sides[::-1]:
                        got[name] = call()
                    for name, (wall, cpu, _) in got.items():
                        times[act, kernel][name == "peer"].append((wall, cpu))
                    if peer:
                        diffs[act, kernel] = max_relative_difference(got["rmtnet"][2], got["peer"][2])
        for (act, kernel), (ours, theirs) in times.items():
            ours_s = statistics.median(w for w, _ in ours)
            theirs_s = statistics.median(w for w, _ in theirs) if theirs else float("nan")
            rows.append({"threads": threads, "act": act, "kernel": kernel, "rmtnet_s": ours_s, "peer_s": theirs_s,
                         "ratio": ours_s / theirs_s, "rmtnet_cpu": sum(c for _, c in ours) / sum(w for w, _ in ours),
                         "peer_cpu": (sum(c for _, c in theirs) / sum(w for w, _ in theirs)) if theirs
                         else float("nan"),
                         "max_rel_diff": diffs.get((act, kernel), float("nan")), "compile_s": first[act, kernel]})
    return rows


def print_rows(rows):
    print(f"{'threads':>7} {'act':>5} {'kernel':>6} {'rmtnet s':>9} {'n-t s':>7} {'rmtnet/n-t':>10} "
          f"{'cpu/wall rmtnet':>15} {'cpu/wall n-t':>12} {'max rel diff':>12} {'n-t compile s':>13}")
    for r in rows:
        print(f"{r['threads']:>7} {r['act']:>5} {r['kernel']:>6} {r['rmtnet_s']:>9.3f} {r['peer_s']:>7.3f} "
              f"{r['ratio']:>10.2f} {r['rmtnet_cpu']:>15.2f} {r['peer_cpu']:>12.2f} {r['max_rel_diff']:>12.1e} "
              f"{r['compile_s']:>13.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--peer-python", default=os.environ.get("NEURAL_TANGENTS_PYTHON", ""))
    args = ap.parse_args(argv)
    X = np.random.default_rng(0).standard_normal((args.points, N0))
    python = args.peer_python
    if not python or not Path(python).exists():
        print("neural-tangents is not compared: no peer interpreter (give --peer-python or NEURAL_TANGENTS_PYTHON, a "
              "Python with neural-tangents and jax); rmtnet's times only")
        python = None
    print(f"B = {args.points}, n0 = {N0}, depth {args.depth}, sigma_w = {SIGMA_W}, sigma_b = {SIGMA_B}, float64, "
          f"{args.repeats} interleaved repeats (medians), load average {os.getloadavg()[0]:.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for threads in args.threads:
            peer = Peer(python, X, args.depth, threads, workdir) if python else None
            if peer and threads == args.threads[0]:
                print("peer:", json.dumps(peer.versions), "numpy (rmtnet):", np.__version__)
            try:
                rows += compare(X, args.depth, threads, args.repeats, peer)
            finally:
                if peer:
                    peer.close()
    print_rows(rows)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return rows


if __name__ == "__main__":
    main()
