"""Benchmark: the cdf table of a deep network's Jacobian law, Gaussian against orthogonal weights.

Law: JJᵀ of a depth-L tanh (or erf) network at σ_w = 1.05, σ_b = 0 (Pennington, Schoenholz & Ganguli 2017), built by
:func:`rmtnet.spectra.jacobian_law`: L factors law(D_ℓ²) at the layer's own mean-field variance q_ℓ, times σ_w² MP(1)^L
for Gaussian weights or the atom σ_w² for orthogonal ones. Gaussian weights give the law a hard edge at 0 with
ρ ∝ x^{-L/(L+1)}, and the quadrature of its cdf puts nodes down to x ~ 10⁻³⁰⁰; orthogonal weights keep the support
away from 0. Timed: the first ``cdf`` call (quadrature table, mass accounting), after the support is located.

The ratio gaussian/orthogonal is the figure of merit (the engine's own cost of a hard edge at 0). ``--baseline`` also
times the Gaussian law with the continuation's shared trunk switched off (``FreeProduct._TRUNK_RATIO = 0``: every
node walks its own way down from far above the spectrum), so the trunk's speed-up is a ratio too.

Run: ``python benchmarks/deep_cdf.py [--depths 10 50] [--activations tanh erf] [--baseline]``.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from rmtnet.spectra import network
from rmtnet.spectra import jacobian_law
from rmtnet.spectra.free import FreeProduct


def cdf_time(depth, weights, activation):
    law = jacobian_law(network.mlp(depth, 100, weights=weights, sigma_w=1.05, activation=activation))
    law.continuous_support()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = law.cdf(np.array([0.5, 1.0]))
    elapsed = time.perf_counter() - t
    base = getattr(law, "base", law)
    return elapsed, c, base.mass_accounting()["total"] - 1.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--activations", nargs="+", default=["tanh"])
    ap.add_argument("--baseline", action="store_true", help="also time the Gaussian law without the shared trunk")
    args = ap.parse_args(argv)
    print(f"{'act':>5} {'L':>4} {'orthogonal s':>13} {'gaussian s':>11} {'gauss/orth':>11} "
          f"{'no trunk s':>11} {'trunk speed-up':>15}  mass − 1 (gaussian)   cdf(0.5), cdf(1)")
    for act in args.activations:
        for depth in args.depths:
            t_o, _, _ = cdf_time(depth, "orthogonal", act)
            t_g, c, miss = cdf_time(depth, "gaussian", act)
            t_b = speed = float("nan")
            if args.baseline:
                saved = FreeProduct._TRUNK_RATIO
                FreeProduct._TRUNK_RATIO = 0.0
                try:
                    t_b, c_b, _ = cdf_time(depth, "gaussian", act)
                finally:
                    FreeProduct._TRUNK_RATIO = saved
                speed = t_b / t_g
                assert np.allclose(c, c_b, rtol=0, atol=1e-9), (c, c_b)
            print(f"{act:>5} {depth:>4} {t_o:>13.1f} {t_g:>11.1f} {t_g / t_o:>11.2f} {t_b:>11.1f} {speed:>15.1f}"
                  f"  {miss:+.2e}             {c[0]:.8f}, {c[1]:.8f}")


if __name__ == "__main__":
    main()
