"""Spectra of the conjugate kernel and of the NTK over a data set (Fan & Wang, "Spectra of the conjugate kernel and
neural tangent kernel for linear-width neural networks", NeurIPS 2020, arXiv 2005.11879; their Figs. 1–2 are the
model): limit laws (rmtnet.spectra.ck_law, ntk_law) over the eigenvalue histograms of actual random networks
(rmtnet.spectra.sampling.montecarlo.sample_ck_eigs, sample_ntk), KS distance in each panel.

Setting (Fan & Wang): X_ℓ = φ̃(W_ℓX_{ℓ−1})/√d_ℓ with W_ℓ iid N(0, 1), φ̃ the activation centred and scaled to unit
second moment under N(0, 1), f(x) = wᵀx_L; the CK is X_LᵀX_L and the NTK the Gram of ∇f over W₁ … W_L and w (the
read-out drawn on the sphere ‖w‖² = d_L, which removes a per-draw O(d_L^{−1/2}) scale). n inputs, d₀ = 2n
(γ₀ = 0.5), hidden widths d_ℓ = n (γ_ℓ = 1).

Rows 1–2: Gaussian data (X₀ iid N(0, 1/d₀), input law MP(γ₀)), ReLU and tanh; columns: CK and NTK with
1, 2, 3 hidden layers ("depth" in the titles).
ReLU is not smooth (outside Fan & Wang's assumptions) and its NTK at depth ≥ 2 approaches the law slowly in n
(tests/test_ntk_law.py measures the rate): each sample's backpropagated norm fluctuates by O(n^{−1/2}) and smears the
law's steep lower edge; those panels also show ntk_law(..., finite_width=True), the law with the per-sample factors
put back (dashed, its own KS). tanh agrees at these sizes. Row 3: real images, tanh, depth 2: scikit-
learn's digits (8 × 8, d₀ = 64; n = 60 images, so that γ₀ < 1) and MNIST-5k (28 × 28, d₀ = 784; n images), each
centred by the data set's mean
image and scaled to unit norm; the theory takes the input law to be the empirical spectrum of X₀ᵀX₀ (first panel of
each pair), the networks are fed the same X₀; hidden widths 2n (γ_ℓ = 0.5). Real images are far from the
approximately orthonormal inputs Fan & Wang assume; the panels show how far the law carries (measured at n = 400:
MNIST-5k CK KS 0.05, NTK 0.30, where the Gaussian-equivalent linear combination of CKs is already 0.06 off).

Quick mode (default): n = 400, 2 networks per panel. ``--full``: n = 1500, 4 networks.
Writes figures/ntk_over_data.png and figures/ntk_over_data.csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import backend as B
from rmtnet import cli, figures, plot
from rmtnet.spectra.network import mlp
from rmtnet.nets import data
from rmtnet.spectra import ck_law, ntk_law
from rmtnet.spectra.sampling import montecarlo
from rmtnet.spectra.measures import Empirical

DATA = ("digits", "MNIST-5k")
SIZES = {"tiny": dict(n=40, n_nets=1, digits_n=20, depths=(1,), data=()),
         "quick": dict(n=400, n_nets=2, digits_n=60, depths=(1, 2, 3), data=DATA),
         "full": dict(n=1500, n_nets=4, digits_n=60, depths=(1, 2, 3), data=DATA)}


def main(full=False, outdir="figures", seed=0, backend=None, n=None, n_nets=None):
    """``n``, ``n_nets`` override the mode's sizes (the tests use small ones)."""
    return figures.make("ntk_over_data", compute, draw, full, outdir, seed, backend, n=n, n_nets=n_nets)


def _net(act, depth, n, d0):
    """``depth`` hidden layers of width n and the read-out to one output (a description of depth + 1 layers)."""
    return mlp(depth + 1, widths=[d0] + [n] * depth + [1], activation=act, last_activation=False, sigma_w=1.0)


def _images(name, n, seed):
    """n images of the data set as unit-norm columns (d₀ × n), each centred by the mean image."""
    d = data.digits() if name == "digits" else data.mnist5k()
    x = d.x_train.reshape(len(d.x_train), -1).double().numpy()
    x = x - x.mean(axis=0)
    x = x[np.random.default_rng(seed).choice(len(x), n, replace=False)]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).T


def _panel(law, eig, title, rows, extras, finite=None):
    """The histogram of ``eig`` under ``law`` (its table, and what the drawing needs in ``extras[title]``); with
    ``finite`` (ntk_law's finite-width law) also that law's density at the bin centres and its KS distance. The
    panel's summary row goes to ``rows``."""
    h = plot.histogram(law, eig, bins=60, label="limit law")
    table = h.table
    row = {"kernel and setting": title.replace("\n", " "), "ks": h.ks, "n_eigenvalues": eig.size}
    if finite is not None:
        row["ks_finite_width"] = plot.ks_distance(finite, eig)
        table["finite_width_density"] = finite.pdf(table["x"].to_numpy())
    extras[title] = (h, finite, row.get("ks_finite_width"))
    rows.append(row)
    return table


def _gaussian_panels(s, seed, backend, tables, summary):
    n, n_nets = s["n"], s["n_nets"]
    for act in ("relu", "tanh"):
        for depth in s["depths"]:
            net = _net(act, depth, n, 2 * n)
            ck = montecarlo.sample_ck_eigs(net, n, n_samples=n_nets, seed=seed + depth, backend=backend)
            ntk = montecarlo.sample_ntk_eigs(net, n, n_samples=n_nets, seed=seed + depth, backend=backend,
                                             readout="sphere")
            finite = ntk_law(net, n, finite_width=True) if act == "relu" and depth > 1 else None
            for name, law, eig in (("CK", ck_law(net, n), ck), ("NTK", ntk_law(net, n), ntk)):
                title = f"{name}, {act}, depth {depth}, Gaussian data"
                tables[title] = _panel(law, B.to_numpy(eig), title, summary, tables.extras,
                                       finite if name == "NTK" else None)


def _data_panels(s, seed, backend, tables, summary):
    for name in s["data"]:
        # digits have d₀ = 64 pixels: with n ≫ d₀ the inputs are far from orthonormal (X₀ᵀX₀ is 84 % zeros at
        # n = 400) and the law's bands splinter; they are taken at n = 60 (γ₀ ≈ 0.94), over more networks
        m, nets = ((s["digits_n"], max(s["n_nets"], 1) * s["n"] // s["digits_n"]) if name == "digits" else
                   (s["n"], s["n_nets"]))
        X0 = _images("digits" if name == "digits" else "mnist5k", m, seed)
        d0 = X0.shape[0]
        net = mlp(3, widths=[d0, 2 * m, 2 * m, 1], activation="tanh",     # γ_ℓ = 0.5: no hard edge at 0
                  last_activation=False, sigma_w=1.0)
        gram = np.linalg.eigvalsh(X0.T @ X0)
        tables.extras[f"{name} input"] = (gram, m, d0)
        input_law = Empirical(np.maximum(gram, 0.0))
        K, grams = montecarlo.sample_ntk(net, m, X=X0, n_samples=nets, seed=seed, backend=backend,
                                         readout="sphere", return_parts=True)
        ck = np.linalg.eigvalsh(B.to_numpy(grams[-1])).ravel()
        ntk = np.linalg.eigvalsh(B.to_numpy(K)).ravel()
        for kind, law, eig in (("CK", ck_law(net, m, input_law=input_law), ck),
                               ("NTK", ntk_law(net, m, input_law=input_law), ntk)):
            title = f"{kind}, tanh, depth 2, {name} (n = {m}, {nets} networks)"
            tables[title] = _panel(law, eig, title, summary, tables.extras)


def compute(size="quick", seed=0, backend=None, n=None, n_nets=None):
    """Table "summary" (KS per panel), then one histogram table per panel. ``n``, ``n_nets`` override the size's
    (the tests use small ones)."""
    s = figures.settings(SIZES, size, **{k: v for k, v in dict(n=n, n_nets=n_nets).items() if v})
    panels, summary = figures.Tables(extras=s), []
    _gaussian_panels(s, seed, backend, panels, summary)
    _data_panels(s, seed, backend, panels, summary)
    return figures.Tables({"summary": pd.DataFrame(summary), **panels}, extras=panels.extras)


def _draw_panel(ax, title, extra):
    h, finite, ks_f = extra
    plot.draw_histogram(ax, h)
    title = title.replace(" (n = ", "\n(n = ")               # the real-data panels' long titles on two lines
    if finite is not None:
        lo, hi = min(finite.hull()[0], ax.get_xlim()[0]), ax.get_xlim()[1]
        x = np.linspace(lo, hi, 400)                    # the smeared lower edge lies below the limit's support
        ax.set_xlim(lo, hi)
        ax.plot(x, finite.pdf(x), "--", color="C3", lw=1.2, label=f"finite-width law (KS {ks_f:.3f})")
        ax.legend(fontsize=7)
        title = f"{title}\nKS {h.ks:.3f}, finite width {ks_f:.3f}"
    else:
        title = f"{title}\nKS {h.ks:.3f}"
    ax.set(title=title, xlabel="eigenvalue", ylabel="density")


def draw(tables):
    x = tables.extras
    per_row = 2 * len(x["depths"])                       # (CK, NTK) per depth, a row per activation
    fig, axes = figures.subplots(2 + bool(x["data"]), max(per_row, 3 * len(x["data"])), 26 / 6, 4)
    titles = [t for t in tables if t != "summary"]
    gaussian, over_data = titles[:2 * per_row], titles[2 * per_row:]
    for k, title in enumerate(gaussian):
        _draw_panel(axes[divmod(k, per_row)], title, x[title])
    for j, name in enumerate(x["data"]):
        gram, m, d0 = x[f"{name} input"]
        ax = axes[2, 3 * j]
        ax.hist(gram, bins=80, density=True, color="C2", alpha=0.5)
        ax.set(yscale="log", xlabel="eigenvalue", ylabel="density",
               title=f"{name}: spectrum of X₀ᵀX₀ (n = {m}, d₀ = {d0})\nthe input law of the theory")
        for k in range(2):
            ax = axes[2, 3 * j + 1 + k]
            _draw_panel(ax, over_data[2 * j + k], x[over_data[2 * j + k]])
            # a law over real data inherits the input's spread (10 % of the mass beyond 3–13 × the mode): the tail,
            # where theory and histogram part, is readable only on a log density axis
            top = ax.get_ylim()[1]
            ax.set(yscale="log", ylim=(1e-4 * top, 2 * top), ylabel="density (log scale)")
    fig.suptitle(f"Conjugate kernel and NTK spectra over data (Fan & Wang 2020): limit laws (lines) over the "
                 f"spectra of random networks (histograms); Gaussian inputs: n = {x['n']}, {x['n_nets']} networks "
                 f"per panel; real data: n and networks in each panel's title")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "n = 1500, 4 networks per panel")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("summary",))
