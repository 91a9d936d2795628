"""Benchmark: the spectrum of a Mixer-structured Jacobian at effective width m = S·C = 10⁶ on the CPU, matrix-free.

Prints, each with its wall time:

1. **m = 10⁶ density** (the acceptance run). A depth-4 Mixer-structured network at S = C = 1000,
   h_ℓ = W_ℓ X_{ℓ−1} V_ℓᵀ, X_ℓ = tanh(h_ℓ), with W_ℓ, V_ℓ √σ_w times Haar orthogonal (σ_w = 1.05, σ_b = 0, input
   at the fixed point q* of the length map: Pennington, Schoenholz & Ganguli 2017's dynamical-isometry setting).
   JJᵀ, J = D₄K₄D₃K₃D₂K₂D₁K₁ with K_ℓ = kron(W_ℓ, V_ℓ), is an operator (rmtnet.spectra.sampling.operators: 4 GEMMs of
   1000³ per J, the same for Jᵀ — 3.2·10¹⁰ flops per matvec, nothing m×m is formed). Its density by stochastic
   Lanczos quadrature (rmtnet.spectra.sampling.lanczos.slq: one Rademacher probe — m = 10⁶ self-averages — and
   ``--steps`` = 40 Lanczos steps with full reorthogonalisation; the midpoint-interpolated distribution function).
   Acceptance: ≤ 60 s for building the network and the density (2 CPU cores), KS ≤ 0.02 to the prediction.
2. **The prediction, checked two ways.** μ_{JJᵀ} = ⊠_ℓ (law(D_ℓ²) ⊠ δ_{σ_w²}), law(D_ℓ²) the law of tanh′(h)²,
   h ~ N(0, q*): rmtnet.spectra.jacobian_law of the *dense* network with the same description (the ⊠ engine,
   subordination). Why it applies: K_ℓ = σ_w(O_ℓ ⊗ O′_ℓ) is orthogonal up to σ_w, so the spectrum depends only on how
   the diagonal D_ℓ sit relative to the K_ℓ; for dense Haar weights they are asymptotically free (Collins & Hayase
   2023, although D_ℓ depends on the weights); for Kronecker products of Haar matrices we know of no theorem, and
   the benchmark checks it: (a) the law's moments m₁…m₄ from the exact S-transform series (the engine's moment path)
   against those of its density (quadrature of the ⊠ engine's density) — the engine against itself by two routes;
   (b) the dense eigenvalues of the same Mixer-structured network at S = C = 64 (m = 4096) against the law (KS), and
   the m = 10⁶ SLQ moments against the exact ones.
   Why not the linear Gaussian Mixer suggested by its closed form: for J = kron(W₄⋯W₁, V₄⋯V₁) the law is exact —
   the *classical* product of two independent FussCatalan(4) variables (rmtnet.spectra.mixer.kronecker_gram_law;
   tensor independence between the token and channel sides, not freeness) — but it puts 19 % of its mass below 10⁻⁶
   and 48 % below 10⁻³ of a support reaching 149: 50 Lanczos steps resolve ≈ λ_max/k² ≈ 0.06, and the first Gauss
   weight is 0.77 at k = 40, so no SLQ estimate comes within KS 0.3 of it. That case is checked by its moments,
   which Lanczos gets exactly (item 4).
3. **SLQ against dense** at S = C = 64 (m = 4096): dense J, JJᵀ and eigvalsh against SLQ (60 steps, 16 probes):
   times, KS(SLQ, dense), the top eigenvalue by Lanczos (scipy eigsh) against the dense one. At m = 10⁶ the top
   of the spectrum is a near-continuum (gaps ~ m^{-2/3} of the edge), where ARPACK needs hundreds of restarted
   matvecs for a tight tolerance; item 1 reports the top Ritz value of the SLQ run with its residual bound instead.
4. **Kronecker versus free at m = 10⁶**, linear Gaussian nets, depth 4: moments m₁…m₄ (exact for 4 Lanczos steps,
   up to the probes' noise) of the Mixer (kronecker), the RP-Mixer (permuted) — against the classical product
   FussCatalan(4)·FussCatalan(4) (m₂ = 25) and the free FussCatalan(8) = MP^{⊠8} (m₂ = 9).

Timings are of a shared machine and vary widely; the BLAS thread count and the load average are printed. With
other jobs on the same 2 cores, two OpenBLAS threads were much slower than one (a 1000³ GEMM: 0.048 s on one thread,
0.059 s on two; the Haar QR of a 1000² matrix: 0.13 s against 1.7–9.6 s), hence ``--threads``. Measured at load
average 3.4–3.9 on 2 cores: 50 steps, 2 threads: 61.5 s (build 10.3 s, 1.02 s per step); 50 steps, 1 thread:
36.8–39.4 s (build 1.2–1.4 s, 0.71–0.76 s per step), KS 0.0012; 40 steps, 2 threads: 112 s (build 70.7 s — the
QRs — and 1.03 s per step), KS 0.0014; 40 steps, 1 thread: 29.7 s (0.71 s per step), KS 0.0014.

Run: ``python benchmarks/large_width.py [--side 1000] [--steps 50] [--threads 1] [--skip-dense] [--skip-linear]``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time

import numpy as np

from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.spectra import FussCatalan, jacobian_law, mixer
from rmtnet.spectra.sampling import lanczos as lz
from rmtnet.spectra.sampling import operators as ops
from rmtnet.spectra.measures import Measure

DEPTH, SIGMA_W = 4, 1.05


def network_description(depth=DEPTH, sigma_w=SIGMA_W):
    """The benchmark's network: tanh, orthogonal, σ_w, σ_b = 0, input at the fixed point q*."""
    return network.mlp(depth, 10, weights="orthogonal", activation="tanh", sigma_w=sigma_w)


def ks_to_law(law, estimate, n=20000):
    """KS distance between a law and a continuous estimate, through the estimate's n mid-quantiles (plot.ks_distance
    on samples; the quantile sample is within 1/(2n) of the estimate)."""
    return plot.ks_distance(law, estimate.quantile((np.arange(n) + 0.5) / n))


def mixer_density(tokens, channels, n_steps=50, seed=0, depth=DEPTH, sigma_w=SIGMA_W, law=None):
    """Build the Mixer-structured network at S×C, run SLQ (one probe) on its JJᵀ, interpolate. Returns a dict with
    the SpectralQuadrature, the estimate, the KS to the law, and the times (``seconds`` = build + SLQ + estimate)."""
    net = network_description(depth, sigma_w)
    t0 = time.perf_counter()
    structured = ops.mixer_network(net, tokens, channels, seed=seed)
    t1 = time.perf_counter()
    q = lz.slq(structured.jacobian_gram(), n_steps=n_steps, n_probes=1, seed=seed + 1)
    estimate = q.interpolated(lower=0.0)
    t2 = time.perf_counter()
    law = jacobian_law(net) if law is None else law
    ks = ks_to_law(law, estimate)
    return dict(slq=q, estimate=estimate, ks=ks, law=law, network=structured, build_seconds=t1 - t0,
                slq_seconds=t2 - t1, seconds=t2 - t0, ks_seconds=time.perf_counter() - t2)


def _blas_threads():
    try:
        import threadpoolctl
        info = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
        return ", ".join(f"{d['internal_api']} {d['num_threads']} threads" for d in info) or "unknown"
    except ImportError:
        return "unknown (threadpoolctl missing)"


def check_law(law, kmax=4):
    """(series moments, density-quadrature moments) of the law: the engine's two routes."""
    series = np.array([law.moment(k) for k in range(1, kmax + 1)])
    quad = np.array([Measure.moment(law, k) for k in range(1, kmax + 1)])
    return series, quad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=1000, help="S = C of the large run (m = side²)")
    ap.add_argument("--steps", type=int, default=40, help="Lanczos steps of the large run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads (default: the library's own)")
    ap.add_argument("--skip-dense", action="store_true", help="skip item 3 (dense at m = 4096, ~15 s)")
    ap.add_argument("--skip-linear", action="store_true", help="skip item 4 (linear nets at m = side²)")
    a = ap.parse_args(argv)
    limit = contextlib.nullcontext()
    if a.threads is not None:
        import threadpoolctl
        limit = threadpoolctl.threadpool_limits(a.threads, user_api="blas")
    with limit:
        run(a)
    return 0


def run(a):
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores; NumPy {np.__version__}; BLAS: {_blas_threads()}")
    load = os.getloadavg()
    print(f"load average (1, 5, 15 min): {load}")
    if load[0] > (os.cpu_count() or 1):
        print("    note: more runnable jobs than cores — timings are contended; OpenBLAS's threads then spin, and "
              "--threads 1 is usually faster")
    net = network_description()
    print(f"network: depth {DEPTH}, tanh, orthogonal, sigma_w = {SIGMA_W}, q* = {net.q[0]:.5f}")

    t = time.perf_counter()
    law = jacobian_law(net)
    series, quad = check_law(law)
    lo, hi = law.continuous_support()
    print(f"\n[2] prediction: jacobian_law (⊠ engine), support [{lo:.4f}, {hi:.4f}]  ({time.perf_counter() - t:.1f} s)")
    print("    moments m1..m4, S-transform series: " + " ".join(f"{v:.6f}" for v in series))
    print("    moments m1..m4, density quadrature: " + " ".join(f"{v:.6f}" for v in quad)
          + f"   max rel. diff {np.max(np.abs(quad / series - 1)):.1e}")

    m = a.side ** 2
    r = mixer_density(a.side, a.side, n_steps=a.steps, seed=a.seed, law=law)
    q = r["slq"]
    verdict = lambda ok: "ok" if ok else "FAIL"        # noqa: E731
    print(f"\n[1] m = {m:,} (S = C = {a.side}), depth {DEPTH}, {a.steps} Lanczos steps, 1 probe")
    print(f"    build network         {r['build_seconds']:7.2f} s")
    print(f"    SLQ + estimate     {r['slq_seconds']:7.2f} s   ({r['slq_seconds'] / a.steps:.2f} s per step)")
    print(f"    density total      {r['seconds']:7.2f} s   (acceptance ≤ 60 s: {verdict(r['seconds'] <= 60)})")
    print(f"    KS to prediction   {r['ks']:.4f}     (acceptance ≤ 0.02: {verdict(r['ks'] <= 0.02)};"
          f" KS evaluation {r['ks_seconds']:.1f} s, not counted)")
    print("    SLQ moments m1..m4 " + " ".join(f"{q.moment(k):.6f}" for k in range(1, 5))
          + "   rel. to law " + " ".join(f"{q.moment(k) / series[k - 1] - 1:+.1e}" for k in range(1, 5)))
    print(f"    top Ritz value     {q.top:.6f}, residual {q.top_residual:.1e}: λ_max ≥ {q.top:.6f} and an eigenvalue"
          f" lies within the residual (law's edge {hi:.6f})")

    if not a.skip_dense:
        print("\n[3] SLQ against dense eigenvalues at m = 4096 (S = C = 64)")
        t = time.perf_counter()
        structured = ops.mixer_network(net, 64, 64, seed=a.seed)
        J = structured.jacobian()
        dense = np.linalg.eigvalsh(J @ J.T)
        t_dense = time.perf_counter() - t
        t = time.perf_counter()
        q4 = lz.slq(structured.jacobian_gram(), n_steps=60, n_probes=16, seed=a.seed + 1)
        est = q4.interpolated(lower=0.0)
        t_slq = time.perf_counter() - t
        t = time.perf_counter()
        top4 = lz.top_eigenvalues(structured.jacobian_gram(), k=1)[0]
        t_top = time.perf_counter() - t
        print(f"    dense J, JJᵀ, eigvalsh   {t_dense:7.2f} s")
        print(f"    SLQ 60 steps × 16 probes {t_slq:7.2f} s   (dense/SLQ = {t_dense / t_slq:.0f})")
        print(f"    KS(SLQ, dense) = {plot.ks_distance(est, dense):.4f}   KS(dense, law) = "
              f"{plot.ks_distance(law, dense):.4f}   KS(SLQ, law) = {ks_to_law(law, est):.4f}")
        print(f"    top eigenvalue: eigsh {top4:.12f}, dense {dense.max():.12f}, rel. error "
              f"{abs(top4 / dense.max() - 1):.1e} ({t_top:.2f} s)")

    if not a.skip_linear:
        print(f"\n[4] linear Gaussian nets, depth {DEPTH}, m = {m:,}: moments (4 Lanczos steps, 2 probes; ± s.e.)")
        lin = network.mlp(DEPTH, 10, weights="gaussian", activation="linear", q0=1.0)
        fc = FussCatalan(DEPTH)
        classical = [fc.moment(k) ** 2 for k in range(1, 5)]
        free = [FussCatalan(2 * DEPTH).moment(k) for k in range(1, 5)]
        print("    classical FC(4)·FC(4)  " + " ".join(f"{v:12.1f}" for v in classical))
        print("    free FC(8) = MP^⊠8     " + " ".join(f"{v:12.1f}" for v in free))
        for structure in ("kronecker", "permuted"):
            t = time.perf_counter()
            structured = ops.mixer_network(lin, a.side, a.side, structure=structure, seed=a.seed)
            ql = lz.slq(structured.jacobian_gram(), n_steps=4, n_probes=2, seed=a.seed + 1)
            vals = " ".join(f"{ql.moment(k):12.1f}" for k in range(1, 5))
            errs = " ".join(f"{ql.moment_stderr(k):12.1f}" for k in range(1, 5))
            print(f"    {structure:22s} {vals}   ({time.perf_counter() - t:.1f} s)")
            print(f"    {'  ± s.e.':22s} {errs}")
        kl = mixer.kronecker_gram_law(fc)
        print(f"    (classical law: mass {kl.cdf(np.array([1e-6]))[0]:.3f} below 1e-6, "
              f"{kl.cdf(np.array([1e-3]))[0]:.3f} below 1e-3, support [0, {kl.continuous_support()[1]:.1f}])")


if __name__ == "__main__":
    raise SystemExit(main())
