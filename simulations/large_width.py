"""Sparse (SW-MLP) vs Kronecker (Mixer) vs random-permuted (RP) vs MP: layer spectra from m = 10³ to 10⁶, matrix-free.

Hayase & Karakida (ICML 2024, arXiv 2306.01470): an MLP-Mixer with S tokens and C channels is an MLP of effective width
m = S·C = 10⁴–10⁶ with very sparse, structured weights, and "the s.v.d. of J(I ⊗ W)J converge to the MP law" — one
mixing factor kron(W, I_C) has W's singular values, C times each. This script takes the comparison to the product of
the two mixing factors of one linear Mixer layer, x ↦ flatten(W X Vᵀ) (W, V Gaussian, entries N(0, 1/S), N(0, 1/C)),
at widths dense eigensolvers cannot reach, with stochastic Lanczos quadrature on matrix-free operators
(rmtnet.spectra.sampling.operators, rmtnet.spectra.sampling.lanczos):

* **Kronecker** (MLP-Mixer): K = kron(W, V), so KKᵀ = kron(WWᵀ, VVᵀ) has the products of two independent MP(1)
  spectra: its law is the *classical* product MP·MP (rmtnet.spectra.mixer.kronecker_gram_law; m₂ = 4, edge 16) —
  the token and channel sides are tensor-independent, not free.
* **RP** (RP-Mixer): K = P(I_C ⊗ W)Q(I_S ⊗ V) with uniform random permutations P, Q: the permutations make the two
  factors asymptotically free, and the law is the free product MP ⊠ MP = FussCatalan(2) (m₂ = 3, edge 27/4).
* **SW-MLP**: K = (M ⊙ A)(M′ ⊙ A′) with static Bernoulli masks of densities 1/C and 1/S (the Mixer's connection
  budget; Hayase & Karakida 2024's SW-MLP): free as well, FussCatalan(2), when p·m ≫ log m.
* **Monarch** (Dao et al., ICML 2022, arXiv 2204.00595): K = Pᵀ L P R, the Mixer's pair with untied blocks — S
  independent C×C blocks R_s, C independent S×S blocks L_c (rmtnet.spectra.monarch): the untied blocks make the two
  factors asymptotically free, so its law is the free product FussCatalan(2) like RP and SW-MLP, not the Kronecker
  layer's classical one; its first factor diag(R_s) alone tends to MP(1). Tables "monarch" (the layer and its first
  factor per width) and "monarch log density"; the other tables are those without it.
* **MP**: one factor alone (Hayase & Karakida 2024's statement): the SW factor M ⊙ A and the Kronecker factor kron(W, I_C) (the RP
  factor has the same singular values) against MP(1), edge c_γ² = 4 (γ = 1).

So the Mixer's layer is *not* spectrally a wide sparse MLP layer: its product law differs (m₂ 4 vs 3, edge 16 vs 6.75)
while each factor alone is MP — and random permutations, Hayase & Karakida 2024's RP-Mixer, restore the free product. (At depth L
the same holds with FussCatalan(L)·FussCatalan(L) against FussCatalan(2L); see benchmarks/large_width.py.)

Each point: SLQ with 60 Lanczos steps and max(1, min(16, 2·10⁵/m)) Rademacher probes; m₂ is exact up to the probes'
noise (± its standard error; none with the single probe at m = 10⁶), the top is the largest Ritz value (a lower bound
on λ_max), KS uses the probe-averaged midpoint-interpolated distribution function. SLQ resolves ≈ λ_max/k² near 0,
where these laws put much of their mass (MP·MP has 17 % of its mass below 0.01), so KS carries a resolution floor of
≈ 0.03 at 60 steps: m₂ and the edge are the sharp discriminators, KS the coarse one (the two laws are 0.043 apart).
SW-MLP rows are capped at 64 kept entries per row (``ROW_NNZ``) above m = 10⁵: the Mixer-equivalent p·m = S = 1000
at m = 10⁶ would need 12 GB per factor; there p·m/log m = 4.6, and the table reports p·m/log m at every point.

Measured (full mode, seed 0): at m = 10⁶ the Mixer has m₂ = 3.98, top 15.8, KS 0.029 to the classical law and 0.044
to the free one; the RP-Mixer m₂ = 3.00, top 6.73, KS 0.044 / 0.030; the SW-MLP at p·m/log m = 4.6 m₂ = 3.11, top
7.19 (its single factor's top 4.27 > 4: Hayase & Karakida's p·m ≫ log m condition at work; at m ≈ 10⁵, p·m/log m = 27:
m₂ = 3.03, top 6.82, factor top 4.03).

Monarch (quick mode, seed 0): m₂ = 2.94 ± 0.09, 3.03 ± 0.02, 3.02 at m = 1024, 10⁴, 10⁵ (free 3, classical 4),
top 6.83, 6.80, 6.77 (free edge 6.75, classical 16), KS 0.030 to the free law and 0.045 to the classical one at
m ≈ 10⁵; its first factor diag(R_s) within KS 0.004 of MP(1), top 4.21.

Panels: (1) λ_max (top Ritz value) against m with both predicted edges; (2) m₂ against m with both predictions;
(3) KS to the classical and to the free law against m; (4) the densities of log₁₀ λ at the largest m (SLQ smoothed in
log x) against both laws; (5) the single factors against MP(1): KS and top eigenvalue against m.
Quick mode (default): S = C ∈ {32, 100, 316} (m ≈ 10³, 10⁴, 10⁵; 1–3 minutes on 2 shared cores, the Monarch rows
about 13 % of it).
``--full``: adds S = C = 1000 (m = 10⁶; about 2 more minutes, ~3 GB of memory for the sparse factors).
Writes figures/large_width.png and figures/large_width.csv; prints each point's time.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from rmtnet import cli, figures, plot
from rmtnet.spectra import network
from rmtnet.spectra import FussCatalan, MarchenkoPastur, mixer
from rmtnet.spectra.sampling import lanczos, operators

STEPS = 60
KS_FLOOR = 0.03          # the KS distance SLQ resolves at STEPS steps on these laws (module docstring)
ROW_NNZ = 64
COLORS = {"kronecker": "C0", "permuted": "C2", "sparse": "C1"}
LABELS = {"kronecker": "Mixer: kron(W, V)", "permuted": "RP-Mixer: P(I⊗W)Q(I⊗V)", "sparse": "SW-MLP: (M⊙A)(M′⊙A′)"}
MONARCH_COLOR, MONARCH_LABEL = "C3", "Monarch: Pᵀ L P R (untied blocks)"
SIZES = {"tiny": dict(sides=(6, 10)), "quick": dict(sides=(32, 100, 316)), "full": dict(sides=(32, 100, 316, 1000))}
CLASSICAL, FREE, MP = mixer.kronecker_gram_law(MarchenkoPastur(1.0)), FussCatalan(2), MarchenkoPastur(1.0)


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("large_width", compute, draw, full, outdir, seed, backend)


def _probes(m):
    return int(max(1, min(16, round(2e5 / m))))


def _ks(law, estimate, n=4000):
    return plot.ks_distance(law, estimate.quantile((np.arange(n) + 0.5) / n))


def _point(operator, m, seed, laws):
    q = lanczos.slq(operator, n_steps=min(STEPS, m), n_probes=_probes(m), seed=seed)
    est = q.interpolated(lower=0.0)
    row = dict(m1=q.moment(1), m2=q.moment(2), m2_se=q.moment_stderr(2), top=q.top, top_residual=q.top_residual,
               n_probes=q.n_probes, n_steps=q.n_steps)
    for name, law in laws.items():
        row[f"ks_{name}"] = _ks(law, est)
    return row, q


def _network(net, structure, S, density, seed, backend):
    if structure == "sparse":
        return operators.sparse_network(net, S, S, density=density, seed=seed, backend=backend)
    return operators.mixer_network(net, S, S, structure=structure, seed=seed, backend=backend)


def _side(net, S, seed, backend, last):
    """The layer's Gram against the classical and free laws, and its first factor against MP, for every
    structure at S = C; the Lanczos quadratures of the last side go to ``last``."""
    m = S * S
    density = min(1.0 / S, ROW_NNZ / m) if m > 10 ** 5 else 1.0 / S
    rows, factor_rows = [], []
    for structure in ("kronecker", "permuted", "sparse"):
        t0 = time.perf_counter()
        structured = _network(net, structure, S, density, seed, backend)
        row, q = _point(structured.jacobian_gram(), m, seed + 1, {"classical": CLASSICAL, "free": FREE})
        row.update(structure=structure, tokens=S, channels=S, m=m,
                   row_nnz=density * m if structure == "sparse" else S,
                   mp_regime=mixer.mp_regime(density, m) if structure == "sparse" else np.nan,
                   seconds=time.perf_counter() - t0)
        rows.append(row)
        print(f"m = {m:>9,d}  {structure:9s}  {row['seconds']:6.1f} s   m2 = {row['m2']:.3f} ± {row['m2_se']:.3f}"
              f"   top = {row['top']:.3f}   KS classical {row['ks_classical']:.3f}, free {row['ks_free']:.3f}")
        last[structure] = q
        # the single factor: the first one of the layer (SW: M ⊙ A, density 1/C; Mixer: kron(W, I_C))
        if structure != "permuted":
            t0 = time.perf_counter()
            frow, _ = _point(structured.factor_gram(1, 0), m, seed + 2, {"mp": MP})
            frow.update(structure=structure, m=m, seconds=time.perf_counter() - t0)
            factor_rows.append(frow)
            print(f"m = {m:>9,d}  {structure:9s}  one factor {frow['seconds']:5.1f} s   top = {frow['top']:.3f}"
                  f"   KS to MP(1) {frow['ks_mp']:.3f}")
        del structured
    return rows, factor_rows


def _monarch(net, S, seed, backend):
    """The Monarch layer at S = C against both laws, and its first factor diag(R_s) against MP, as one row; the
    layer's Lanczos quadrature."""
    m = S * S
    t0 = time.perf_counter()
    structured = operators.mixer_network(net, S, S, structure="monarch", seed=seed, backend=backend)
    row, q = _point(structured.jacobian_gram(), m, seed + 1, {"classical": CLASSICAL, "free": FREE})
    frow, _ = _point(structured.factor_gram(1, 0), m, seed + 2, {"mp": MP})
    row.update(structure="monarch", tokens=S, channels=S, m=m, factor_top=frow["top"], factor_ks_mp=frow["ks_mp"],
               seconds=time.perf_counter() - t0)
    print(f"m = {m:>9,d}  monarch    {row['seconds']:6.1f} s   m2 = {row['m2']:.3f} ± {row['m2_se']:.3f}"
          f"   top = {row['top']:.3f}   KS classical {row['ks_classical']:.3f}, free {row['ks_free']:.3f}"
          f"   one factor: top {frow['top']:.3f}, KS to MP(1) {frow['ks_mp']:.3f}")
    return row, q


def compute(size="quick", seed=0, backend=None):
    """Tables "points" (the layer per structure and width), "factors" (its first factor) and "log density" (the
    laws and the smoothed spectra at the largest width, as densities of log₁₀ λ); "monarch" and "monarch log
    density" the same for the Monarch layer (its first factor in the columns factor_top, factor_ks_mp)."""
    s = figures.settings(SIZES, size)
    net = network.mlp(1, 10, weights="gaussian", activation="linear", q0=1.0)
    rows, factor_rows, last, monarch_rows = [], [], {}, []
    for S in s["sides"]:
        r, f = _side(net, S, seed, backend, last)
        rows += r
        factor_rows += f
        row, monarch_q = _monarch(net, S, seed, backend)
        monarch_rows.append(row)
    x = np.geomspace(1e-5, 20, 600)
    curves = {"x": x, "classical_log10_density": np.log(10) * x * CLASSICAL.pdf(x),
              "free_log10_density": np.log(10) * x * FREE.pdf(x)}
    for structure, q in last.items():
        curves[f"{structure}_log10_density"] = np.log(10) * x * q.smoothed(log=True, grid=x).pdf(x)
    monarch_curve = {"x": x, "monarch_log10_density": np.log(10) * x * monarch_q.smoothed(log=True, grid=x).pdf(x)}
    return figures.Tables({"points": pd.DataFrame(rows), "factors": pd.DataFrame(factor_rows),
                           "log density": pd.DataFrame(curves), "monarch": pd.DataFrame(monarch_rows),
                           "monarch log density": pd.DataFrame(monarch_curve)}, extras=s)


def _draw_points(axes, points, monarch):
    for i, s in enumerate(COLORS):
        t = points[points.structure == s]
        axes[0].plot(t.m, t.top, "o-", color=COLORS[s], label=LABELS[s])
        axes[1].errorbar(t.m * (1 + 0.04 * (i - 1)), t.m2, yerr=t.m2_se, fmt="o-", capsize=3, color=COLORS[s],
                         label=LABELS[s])
        axes[2].plot(t.m, t.ks_classical, "o-", color=COLORS[s], label=f"{LABELS[s]} → classical")
        axes[2].plot(t.m, t.ks_free, "s:", color=COLORS[s], label=f"{LABELS[s]} → free")
    t = monarch
    axes[0].plot(t.m, t.top, "D-", color=MONARCH_COLOR, label=MONARCH_LABEL)
    axes[1].errorbar(t.m * 1.08, t.m2, yerr=t.m2_se, fmt="D-", capsize=3, color=MONARCH_COLOR, label=MONARCH_LABEL)
    axes[2].plot(t.m, t.ks_classical, "D-", color=MONARCH_COLOR, label=f"{MONARCH_LABEL} → classical")
    axes[2].plot(t.m, t.ks_free, "D:", color=MONARCH_COLOR, label=f"{MONARCH_LABEL} → free")
    axes[0].axhline(CLASSICAL.continuous_support()[1], color="C0", ls="--", lw=1, label="classical MP·MP edge 16")
    axes[0].axhline(FREE.continuous_support()[1], color="C2", ls="--", lw=1, label="free MP⊠MP edge 27/4")
    figures.style(axes[0], xscale="log", xlabel="effective width m = S·C", ylabel="top Ritz value",
                  title="top of the spectrum")
    axes[1].axhline(CLASSICAL.moment(2), color="C0", ls="--", lw=1, label="classical: m₂ = 4")
    axes[1].axhline(FREE.moment(2), color="C2", ls="--", lw=1, label="free: m₂ = 3")
    figures.style(axes[1], xscale="log", xlabel="m", ylabel="m₂ = tr((KKᵀ)²)/m (± s.e. over probes)",
                  title="second moment")
    axes[2].axhline(KS_FLOOR, color="0.5", ls=":", lw=1, label=f"SLQ's resolution floor ≈ {KS_FLOOR}")
    figures.style(axes[2], legend=None, xscale="log", yscale="log", xlabel="m", ylabel="KS distance",
                  title=f"KS to each law ({STEPS} Lanczos steps)")
    axes[2].legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)


def _draw_factors(ax, factors, monarch):
    for s in ("kronecker", "sparse"):
        t = factors[factors.structure == s]
        name = "kron(W, I_C) (= RP factor)" if s == "kronecker" else "M ⊙ A"
        ax.plot(t.m, t.ks_mp, "o-", color=COLORS[s], label=f"{name}: KS to MP(1)")
    ax.plot(monarch.m, monarch.factor_ks_mp, "D-", color=MONARCH_COLOR, label="Monarch diag(R_s): KS to MP(1)")
    ax.set(xscale="log", yscale="log", xlabel="m", ylabel="KS to MP(1)",
           title="one factor: the MP law (Hayase & Karakida 2024)")
    ax2 = ax.twinx()
    for s in ("kronecker", "sparse"):
        t = factors[factors.structure == s]
        ax2.plot(t.m, t.top, "^--", color=COLORS[s], alpha=0.6, label=f"top, {s}")
    ax2.plot(monarch.m, monarch.factor_top, "^--", color=MONARCH_COLOR, alpha=0.6, label="top, monarch")
    ax2.axhline(4.0, color="k", ls="--", lw=1, label="MP(1) edge c_γ² = 4 (right axis)")
    ax2.set_ylabel("top Ritz value (triangles, dashed)")
    handles = [h for a in (ax, ax2) for h in a.get_legend_handles_labels()[0]]
    ax.legend(handles=handles, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)


def draw(tables):
    fig, axes = figures.subplots(1, 5, 26 / 5, 4.6)
    axes = axes[0]
    _draw_points(axes[:3], tables["points"], tables["monarch"])
    curves, ax, side = tables["log density"], axes[3], tables.extras["sides"][-1]
    log_x = np.log10(curves.x)
    ax.plot(log_x, curves.classical_log10_density, "k--", lw=1.2, label="classical MP·MP")
    ax.plot(log_x, curves.free_log10_density, "k:", lw=1.5, label="free MP⊠MP = FussCatalan(2)")
    for s in COLORS:
        ax.plot(log_x, curves[f"{s}_log10_density"], color=COLORS[s], lw=1.2, label=LABELS[s])
    ax.plot(log_x, tables["monarch log density"].monarch_log10_density, color=MONARCH_COLOR, lw=1.2,
            label=MONARCH_LABEL)
    figures.style(ax, xlabel="log₁₀ λ", ylabel="density of log₁₀ λ", title=f"m = {side ** 2:,}: SLQ smoothed in log x")
    _draw_factors(axes[4], tables["factors"], tables["monarch"])
    fig.suptitle("One linear Mixer layer x ↦ W X Vᵀ at effective width m = S·C: Kronecker (classical product) vs "
                 "RP, SW-MLP and Monarch (free product) vs MP (Hayase & Karakida 2024), matrix-free SLQ")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "adds m = 10⁶ (S = C = 1000; about 2 more minutes, ~3 GB)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    cols = ["structure", "m", "seconds", "m2", "m2_se", "top", "ks_classical", "ks_free", "mp_regime"]
    print(t["points"][cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(t["monarch"][cols[:-1] + ["factor_top", "factor_ks_mp"]].to_string(index=False,
                                                                            float_format=lambda v: f"{v:.4g}"))
    print("wrote", p)
