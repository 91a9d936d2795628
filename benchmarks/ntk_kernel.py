"""Benchmark: the infinite-width NTK Θ_L of a depth-10 MLP on B = 2000 inputs (rmtnet.spectra.kernels.ntk_kernel).

The closed forms (ReLU and erf: arc-cosine kernels, Williams' arcsine) give E[φφ] and E[φ′φ′] of a pair from its
covariance and the two variances, so the recursion runs a block of rows of the upper triangle at a time through all
layers while the block sits in the cache (B(B + 1)/2 pairs a layer, on as many threads as the BLAS may use). The
side-by-side with neural-tangents is benchmarks/peer_neural_tangents.py. Printed per activation: the time
of Θ_L (which carries Σ_ℓ along), the time of the NNGP kernel Σ_L alone (:func:`nngp_kernel`, upper triangle only),
their ratio (the NTK's own overhead), and for scale the quadrature route (``method="quadrature"``) timed on a
B_q × B_q kernel and extrapolated as B²-proportional. The issue's target: 2000 × 2000 at depth 10 in seconds.

Then the cross kernel Θ_L(X, X*) to T = ``--cross-points`` further inputs X* (``ntk_kernel(net, X, X*)``, B × T,
carried on the two sets' variances and the cross block) against the block of the joint (B + T)² kernel of the
concatenated inputs, sliced: both times, their ratio and the largest difference of the two relative to the largest
entry (entrywise relative differences are larger where an entry nearly vanishes: erf is odd and random inputs
nearly orthogonal).

Run: ``python benchmarks/ntk_kernel.py [--points 2000] [--depth 10] [--quadrature-points 40] [--cross-points 200]``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from rmtnet.spectra import network
from rmtnet.spectra.kernels import nngp_kernel, ntk_kernel


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--quadrature-points", type=int, default=40)
    ap.add_argument("--cross-points", type=int, default=200)
    args = ap.parse_args(argv)
    X = np.random.default_rng(0).standard_normal((args.points, 100))
    Xq = X[:args.quadrature_points]
    print(f"B = {args.points}, depth {args.depth}")
    print(f"{'act':>5} {'ntk s':>7} {'nngp s':>7} {'ntk/nngp':>9} {'quadrature s (B_q)':>19} "
          f"{'quadrature s (B, extrapolated)':>31}")
    for act in ("relu", "erf"):
        net = network.mlp(args.depth, 100, activation=act, sigma_w=1.4, sigma_b=0.1)
        t_ntk, T = timed(lambda: ntk_kernel(net, X))
        t_nngp, _ = timed(lambda: nngp_kernel(net, X))
        t_q, Tq = timed(lambda: ntk_kernel(net, Xq, method="quadrature"))
        assert np.allclose(Tq, T[:len(Xq), :len(Xq)], rtol=1e-10)
        scale = (args.points / len(Xq)) ** 2
        print(f"{act:>5} {t_ntk:>7.2f} {t_nngp:>7.2f} {t_ntk / t_nngp:>9.2f} {t_q:>19.2f} {t_q * scale:>31.0f}")
    cross_rows(X, args.depth, args.cross_points)


def cross_rows(X, depth, n_cross):
    """The cross kernel Θ_L(X, X*) against slicing the joint kernel of (X, X*): times and agreement."""
    Xs = np.random.default_rng(1).standard_normal((n_cross, X.shape[1]))
    n = len(X)
    print(f"cross kernel, B = {n} × T = {n_cross}, depth {depth}")
    print(f"{'act':>5} {'cross s':>8} {'joint s':>8} {'joint/cross':>12} {'max |diff|/max |Θ|':>19}")
    for act in ("relu", "erf"):
        net = network.mlp(depth, 100, activation=act, sigma_w=1.4, sigma_b=0.1)
        t_cross, C = timed(lambda: ntk_kernel(net, X, Xs))
        t_joint, J = timed(lambda: ntk_kernel(net, np.concatenate([X, Xs]))[:n, n:])
        diff = float(np.max(np.abs(C - J)) / np.max(np.abs(J)))
        print(f"{act:>5} {t_cross:>8.2f} {t_joint:>8.2f} {t_joint / t_cross:>12.1f} {diff:>19.1e}")


if __name__ == "__main__":
    main()
