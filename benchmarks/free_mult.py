"""Benchmark: the ⊠ engine against polynomial root finding (Pennington, Schoenholz & Ganguli 2018, Algorithm 1).

Law: the squared singular values of the Jacobian of an L-layer ReLU network at criticality with Gaussian weights,
ν_L = (Bernoulli(½) ⊠ MP(1, scale 2))^{⊠L}. One layer has S(w) = (1 + w)/(½ + w) · 1/(2(1 + w)) = 1/(1 + 2w), so
S_L(w) = (1 + 2w)^{-L} and M⁻¹(m) = (1 + m)(1 + 2m)^L/m: the moment function m = M(z) is a root of the degree-(L+1)
polynomial

    P_z(m) = (1 + m)(1 + 2m)^L - z·m,          ρ(x) = -Im G(x + i0)/π = -Im m/(π x)   (G = (1 + m)/z).

Three ways to the density on a 2000-point grid of (0, λ_max):

* **engine** — ``free_mult`` with the two factors raised to the real power L (cost independent of L), ``pdf``;
* **roots** — ``numpy.roots`` of P_x at each grid point, keeping the root with the most negative Im m (one call per
  point; the cheapest reading of Algorithm 1);
* **tracked roots** — Algorithm 1 as REFERENCE §1 states it: at each grid point, roots of P_z along z = x + iy for
  y falling geometrically from 10·λ_max to 0, each time keeping the root closest to the previous one, starting from
  the branch m ≈ m₁/z at large |z| (``--heights`` values of y; one ``numpy.roots`` call per height).

Accuracy is measured on every ``--ref-every``-th grid point against a reference that shares nothing with the
engine: Algorithm 1 itself with each root found by Newton's method in 40-digit arithmetic (mpmath) instead of
``numpy.roots``. (In double precision ``numpy.roots`` cannot resolve this polynomial at large L: the factor
(1 + 2m)^L is an L-fold cluster at m = -½, whose roots it smears by ~ε^{1/L}.) Run: ``python benchmarks/free_mult.py [--depths 10 100]``.
"""
from __future__ import annotations

import argparse
import time
import warnings

import mpmath
import numpy as np
from numpy.polynomial import polynomial as P

from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult, free_mult_power


def law(L):
    return free_mult(free_mult_power(Bernoulli(0.5), L), free_mult_power(MarchenkoPastur(1.0, 2.0), L))


def engine_density(L, n):
    """Build the law, locate its support and evaluate the density on the grid (all inside the timing)."""
    nu = law(L)
    edge = nu.continuous_support()[1]
    x = edge * (np.arange(n) + 0.5) / n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return x, nu.pdf(x)


def coefficients(L):
    """Ascending coefficients of (1 + m)(1 + 2m)^L; P_z subtracts z from the linear one."""
    return P.polymul([1.0, 1.0], P.polypow([1.0, 2.0], L))


def roots_density(L, x):
    base = coefficients(L)
    rho = np.empty_like(x)
    for i, xi in enumerate(x):
        c = base.astype(complex)
        c[1] -= xi
        r = np.roots(c[::-1])
        rho[i] = -r[np.argmin(r.imag)].imag / (np.pi * xi)
    return rho


def tracked_roots(L, x, heights):
    base = coefficients(L)
    ys = np.concatenate([10 * x.max() * np.logspace(0, -12, heights - 1), [0.0]])
    ms = np.empty(x.size, complex)
    for i, xi in enumerate(x):
        prev = None
        for y in ys:
            z = xi + 1j * y
            c = base.astype(complex)
            c[1] -= z
            r = np.roots(c[::-1])
            target = 1.0 / z if prev is None else prev          # m ≈ m₁/z with m₁ = 1 at large |z|
            prev = r[np.argmin(np.abs(r - target))]
        ms[i] = prev
    return ms


def reference(L, x, heights=80, dps=40):
    """Algorithm 1 in high precision: for each x, Newton's method in ``dps``-digit arithmetic (mpmath) on P_z along
    z = x + iy, y falling geometrically from 10·λ_max to 0, each solve started from the previous root and the first
    from m ≈ 1/z. Independent of the engine (no shared code, no shared branch rule)."""
    ys = np.concatenate([10 * x.max() * np.logspace(0, -14, heights - 1), [0.0]])
    out = np.empty(x.size, complex)
    with mpmath.workdps(dps):
        for i, xi in enumerate(x):
            m = None
            for y in ys:
                z = mpmath.mpc(xi, y)
                f = lambda t, z=z: (1 + t) * (1 + 2 * t) ** L - z * t               # noqa: E731
                m = mpmath.findroot(f, 1 / z if m is None else m, tol=mpmath.mpf(10) ** (-dps + 5))
            out[i] = complex(m)
    return out


def run(L, n, heights, ref_every):
    t0 = time.perf_counter()
    x, rho_engine = engine_density(L, n)
    t_engine = time.perf_counter() - t0
    t0 = time.perf_counter()
    rho_roots = roots_density(L, x)
    t_roots = time.perf_counter() - t0
    sub = np.arange(0, n, ref_every)
    t0 = time.perf_counter()
    m_tracked = tracked_roots(L, x[sub], heights)
    t_tracked = (time.perf_counter() - t0) * n / sub.size        # extrapolated to the whole grid
    rho_tracked = -m_tracked.imag / (np.pi * x[sub])
    m_ref = reference(L, x[sub])
    rho_ref = -m_ref.imag / (np.pi * x[sub])
    scale = np.abs(rho_ref).max()

    def err(r):
        e = np.abs(r - rho_ref)
        return e.max() / scale, np.median(e / np.abs(rho_ref))

    return dict(L=L, n=n, t_engine=t_engine, t_roots=t_roots, t_tracked=t_tracked,
                engine=err(rho_engine[sub]), roots=err(rho_roots[sub]), tracked=err(rho_tracked),
                n_sub=sub.size,
                roots_vs_engine=np.abs(rho_roots - rho_engine).max() / np.abs(rho_engine).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depths", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--heights", type=int, default=25, help="continuation heights of the tracked baseline")
    ap.add_argument("--ref-every", type=int, default=20, help="reference / tracked baseline on every k-th point")
    a = ap.parse_args(argv)
    print(f"density of (Bernoulli(1/2) ⊠ MP(1, 2))^L on {a.points} points; times in s; errors against the "
          f"40-digit reference: max |Δρ|/max ρ, median relative")
    for L in a.depths:
        r = run(L, a.points, a.heights, a.ref_every)
        print(f"L = {L:4d}  engine {r['t_engine']:7.3f}   numpy.roots {r['t_roots']:7.2f} "
              f"(ratio {r['t_roots'] / r['t_engine']:6.1f}x)   tracked roots ~{r['t_tracked']:7.1f} "
              f"(ratio {r['t_tracked'] / r['t_engine']:7.1f}x)")
        for k in ("engine", "roots", "tracked"):
            print(f"          {k:8s} error max {r[k][0]:.2e}  median rel {r[k][1]:.2e}")
        print(f"          (errors on {r['n_sub']} points; numpy.roots vs engine on all {r['n']} points: "
              f"max |Δρ|/max ρ = {r['roots_vs_engine']:.2e})")


if __name__ == "__main__":
    main()
