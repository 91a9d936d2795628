"""Asymptotic freeness of D_ℓ² and W_ℓ D_{ℓ-1}² W_ℓᵀ in an actual MLP (Collins & Hayase 2023): deviation vs width.

Log–log plot of |mean deviation from the free value| against N for Haar orthogonal weights, Gaussian weights and a
non-free control (signed-permutation weights, for which a and b commute), one panel per mixed word, with error bars
(± one standard error of the mean over the sampled networks; on the log axis a lower bar longer than
the point is cut at |mean|/10), the fitted slopes in the legend, and a slope −1 guide.
Network: depth 2, tanh, σ_w = 1.5, σ_b = 0.1, pair at layer 2 (see rmtnet.studies.freeness).

Writes figures/freeness.png and figures/freeness.csv (one panel "case word" per curve, with its slope).
Quick mode (default): N = 64 … 512, 32 networks per point. ``--full``: N = 128 … 2048, 48 networks per point.
(tiny: N = 16, 32, 4 networks per point.)
"""
from __future__ import annotations

import numpy as np

from rmtnet import cli, figures
from rmtnet.studies.freeness import WORDS, freeness_test

LABELS = {"haar": "Haar orthogonal", "gaussian": "Gaussian", "control": "control: signed permutation"}
TITLES = {"ab": "tr(a°b°)", "abab": "tr(abab) − free value", "abab_c": "tr(a°b°a°b°)", "ababab_c": "tr((a°b°)³)"}
COLORS = {"haar": "C0", "gaussian": "C1", "control": "C3"}
SIZES = {"tiny": dict(widths=(16, 32), n_samples=4), "quick": dict(widths=(64, 128, 256, 512), n_samples=32),
         "full": dict(widths=(128, 256, 512, 1024, 2048), n_samples=48)}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("freeness", compute, draw, full, outdir, seed, backend)


def compute(size="quick", seed=0, backend=None):
    """Mean deviation per (case, word) against N, with its fitted slope: one table "case word" per curve."""
    s = figures.settings(SIZES, size)
    res = freeness_test(widths=s["widths"], n_samples=s["n_samples"], seed=seed, backend=backend,
                        depth=2, activation="tanh", sigma_w=1.5, sigma_b=0.1)
    tables = figures.Tables(extras=s)
    for word in WORDS:
        for case in ("haar", "gaussian", "control"):
            t = res.table[(res.table.case == case) & (res.table.word == word)].sort_values("N")
            t = t[["N", "n_samples", "mean", "se", "sd", "rms"]].reset_index(drop=True)
            t["abs_mean"] = t["mean"].abs()
            slope, slope_se = res.slope(case, word)
            t["slope"], t["slope_se"] = slope, slope_se
            t.attrs["slope"], t.attrs["slope_se"] = slope, slope_se
            tables[f"{case} {word}"] = t
    return tables


def draw(tables):
    n = np.array(tables.extras["widths"], dtype=float)
    fig, axes = figures.subplots(1, len(WORDS), 4.6, 4.2)
    for ax, word in zip(axes[0], WORDS):
        for case in ("haar", "gaussian", "control"):
            t = tables[f"{case} {word}"]
            lower = np.minimum(t.se, 0.9 * t.abs_mean)            # log axis: lower bars cut at |mean|/10
            ax.errorbar(t.N, t.abs_mean, yerr=[lower, t.se], fmt="o-", capsize=3, color=COLORS[case],
                        label=f"{LABELS[case]}: slope {t.attrs['slope']:+.2f} ± {t.attrs['slope_se']:.2f}")
        ref = tables[f"haar {word}"]
        y0 = abs(float(ref["mean"].iloc[0])) if len(ref) else 1e-3
        ax.plot(n, y0 * n[0] / n, "k--", lw=1, label="slope −1")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(n, [str(int(v)) for v in n])
        ax.minorticks_off()
        figures.style(ax, legend=None, xlabel="width N", ylabel="|mean deviation|", title=TITLES[word])
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16))   # below: inside it hid points
    fig.suptitle("a = D₂², b = W₂D₁²W₂ᵀ (tanh, depth 2): deviation from freeness, "
                 f"{tables.extras['n_samples']} networks per point")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "larger widths and more networks")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), attrs=("slope", "slope_se"), width=24)
