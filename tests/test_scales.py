"""The ⊠/⊞ engine across scales: bands far apart or far narrower than the hull are all found, and every law's mass is
accounted for (Σ band masses + Σ atoms = 1, here to 1e-8; a total off by more than 1e-6 is a ConvergenceError). Monte Carlo references are dense
eigensolves at N = 1000 (two draws pooled); where float64 cannot resolve the Monte Carlo itself (bands 10²⁴ apart
in relative scale), the small eigenvalues come from the Schur complement instead (first-order perturbation theory,
exact to O(10⁻²⁴))."""
import numpy as np
import pytest

from rmtnet import plot
from rmtnet.spectra import ConvergenceError, MarchenkoPastur, Semicircle, free_add, free_mult, free_mult_power
from rmtnet.spectra.measures import PointMasses

N = 1000


def _counts(masses, n):
    return np.round(np.asarray(masses) * n).astype(int)


def wishart(rng, n, ratio=1.0):
    """σ²XXᵀ with X n × (n/ratio), entries of variance ratio/n: MP(ratio) (mean 1)."""
    m = int(round(n / ratio))
    x = rng.standard_normal((n, m)) / np.sqrt(m)
    return x @ x.T


def mult_mc(atoms, masses, ratio=1.0, seed=0, reps=2):
    """Eigenvalues of A^{1/2} W A^{1/2}, A = diag(atoms with the masses), W ~ MP(ratio): A's law ⊠ MP(ratio)."""
    rng = np.random.default_rng(seed)
    d = np.repeat(atoms, _counts(masses, N))
    s = np.sqrt(d)
    return np.concatenate([np.linalg.eigvalsh(s[:, None] * wishart(rng, d.size, ratio) * s[None, :])
                           for _ in range(reps)])


def add_mc(atoms, masses, var, seed=0, reps=2):
    """Eigenvalues of diag(atoms with the masses) + a GOE matrix of semicircle variance ``var``."""
    rng = np.random.default_rng(seed)
    d = np.repeat(atoms, _counts(masses, N))
    out = []
    for _ in range(reps):
        g = rng.standard_normal((d.size, d.size))
        out.append(np.linalg.eigvalsh(np.diag(d) + (g + g.T) * np.sqrt(var / (2 * d.size))))
    return np.concatenate(out)


def accounted(law):
    acc = law.mass_accounting()
    assert abs(acc["total"] - 1.0) <= 1e-8, acc
    return acc


@pytest.mark.parametrize("low", [1e-3, 1e-6])
def test_mult_keeps_a_band_three_to_six_decades_below_the_other(low):
    """½δ_low + ½δ_1 ⊠ MP(1): the band near `low` (half the mass) used to be lost below the hull's 200-point grid
    (KS 0.503 against Monte Carlo at low = 1e-3)."""
    law = free_mult(PointMasses([low, 1.0], [0.5, 0.5]), MarchenkoPastur(1.0))
    acc = accounted(law)
    assert len(acc["bands"]) == 2 and acc["bands"][1][0] > 10 * acc["bands"][0][1]          # measured 43× at 1e-3
    for _, _, m in acc["bands"]:
        assert m == pytest.approx(0.5, abs=1e-8)
    assert plot.ks_distance(law, mult_mc([low, 1.0], [0.5, 0.5])) <= 0.01


def test_mult_bands_twenty_four_decades_apart():
    """½δ_{1e-12} + ½δ_{1e12} ⊠ MP(1). Reference: with D = diag(εI, MI), δ = ε/M = 1e-24, the small eigenvalues of
    D^{1/2}WD^{1/2} are ε·eig(W₁₁ − W₁₂W₂₂⁻¹W₂₁)(1 + O(δ)) and the large ones M·eig(W₂₂)(1 + O(δ))."""
    eps, big = 1e-12, 1e12
    law = free_mult(PointMasses([eps, big], [0.5, 0.5]), MarchenkoPastur(1.0))
    acc = accounted(law)
    assert len(acc["bands"]) == 2
    rng = np.random.default_rng(1)
    ref = []
    for _ in range(2):
        w = wishart(rng, N)
        h = N // 2
        w11, w12, w22 = w[:h, :h], w[:h, h:], w[h:, h:]
        schur = w11 - w12 @ np.linalg.solve(w22, w12.T)
        ref += [eps * np.linalg.eigvalsh((schur + schur.T) / 2), big * np.linalg.eigvalsh(w22)]
    assert plot.ks_distance(law, np.concatenate(ref)) <= 0.01


@pytest.mark.parametrize("a", [1e3, 1e4])
def test_add_of_far_apart_atoms_has_two_bands(a):
    """½δ_{−a} + ½δ_a ⊞ semicircle(1): two bands of mass ½ (was: 40 spurious bands holding 0.5 at a = 1000)."""
    law = free_add(PointMasses([-a, a], [0.5, 0.5]), Semicircle(1.0))
    acc = accounted(law)
    assert [round(m, 8) for _, _, m in acc["bands"]] == [0.5, 0.5]
    assert plot.ks_distance(law, add_mc([-a, a], [0.5, 0.5], 1.0)) <= 0.01


def test_add_of_atoms_beyond_reach_is_an_error():
    """At ±10⁵ the continuation stalls between the bands (Newton at the rounding floor of the 10⁵-sized terms):
    a ConvergenceError, not a law with spurious bands as before."""
    law = free_add(PointMasses([-1e5, 1e5], [0.5, 0.5]), Semicircle(1.0))
    with pytest.raises(ConvergenceError):
        law.cdf(0.0)


@pytest.mark.parametrize("var", [1e-3, pytest.param(1e-4, marks=pytest.mark.slow)])      # ~15 s each
def test_add_of_fifty_atoms_and_a_narrow_semicircle_has_fifty_bands(var):
    """50 equal atoms on [0.1, 5] ⊞ semicircle(var): every atom grows its own band (was: 36 of 50 bands at 1e-3,
    10 at 1e-4)."""
    atoms = np.linspace(0.1, 5, 50)
    law = free_add(PointMasses(atoms, np.full(50, 0.02)), Semicircle(var))
    acc = accounted(law)
    assert len(acc["bands"]) == 50
    assert plot.ks_distance(law, add_mc(atoms, np.full(50, 0.02), var)) <= 0.01


@pytest.mark.slow          # ~30 s on 2 cores
def test_mult_of_fifty_atoms_and_a_narrow_mp_keeps_the_lowest_bands():
    atoms = np.linspace(0.1, 5, 50)
    law = free_mult(PointMasses(atoms, np.full(50, 0.02)), MarchenkoPastur(0.01))
    acc = accounted(law)
    assert acc["bands"][0][0] < 0.1 < acc["bands"][0][1]
    assert plot.ks_distance(law, mult_mc(atoms, np.full(50, 0.02), 0.01)) <= 0.01


def test_deep_power_needs_no_norm_bound_in_float64():
    """MP(1)^{⊠513}: the norm bound 4^513 overflows float64 (it raised OverflowError); the right edge is the
    Fuss–Catalan one, (T + 1)^{T+1}/T^T."""
    T = 513
    law = free_mult_power(MarchenkoPastur(1.0), T)
    edge = np.exp((T + 1) * np.log(T + 1) - T * np.log(T))
    assert law.support()[1] == pytest.approx(edge, rel=1e-8)


def test_a_missed_band_is_an_error_not_a_short_law(monkeypatch):
    """The accounting is what catches a search that misses a band: with the old 200-point grid of the hull only,
    the band near 1e-3 is missed, and the cdf raises instead of returning a law with half its mass."""
    from rmtnet.spectra.free import FreeProduct

    def hull_grid_only(self, lo, hi):
        return lo + (hi - lo) * (np.arange(200) + 0.3819660112501051) / 200

    monkeypatch.setattr(FreeProduct, "_search_grid", hull_grid_only)      # the second search no better than the first
    law = free_mult(PointMasses([1e-3, 1.0], [0.5, 0.5]), MarchenkoPastur(1.0))
    with pytest.raises(ConvergenceError, match="mass accounting"):
        law.cdf(1.0)


@pytest.mark.parametrize("T", [342, 1000])
def test_deep_relu_layer_power_edge(T):
    """(Bernoulli(½) ⊠ MP(1, σ² = 2))^{⊠T}, the critical ReLU layer at depth T (raised OverflowError at T = 342).
    Its S-transform is 1/(1 + 2w), so λ_max = min_{w>0} (1 + w)(1 + 2w)^T/w, minimised here in log space."""
    from scipy import optimize

    from rmtnet.spectra import Bernoulli
    layer = free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0))
    log_z = lambda w: np.log1p(w) + T * np.log1p(2 * w) - np.log(w)        # noqa: E731
    r = optimize.minimize_scalar(log_z, bounds=(1e-9, 1.0), method="bounded", options={"xatol": 1e-14})
    assert free_mult_power(layer, T).support()[1] == pytest.approx(np.exp(r.fun), rel=1e-8)


def test_deep_orthogonal_jacobian_law_builds():
    """Depth 1024 (raised "a must be a finite real number, got inf" about an argument the user never passed)."""
    from rmtnet import arch
    from rmtnet.spectra import jacobian_law
    law = jacobian_law(arch.mlp(1024, 100, weights="orthogonal", sigma_w=1.05, activation="tanh"))
    lo, hi = law.support()
    assert 0 <= lo < hi < np.inf and 0 < law.moment(1) <= hi


def test_variance_without_cancellation():
    """var() from the factors' variances: ⊞ adds them (κ₂), ⊠ adds the normalised ones. Far from 0 the old
    m₂ − m₁² lost every digit (0 for semicircle(1) ⊞ semicircle(1) centred at 10⁸); near 0 the two routes agree."""
    assert free_add(Semicircle(1.0, 0.0), Semicircle(1.0, 1e8)).var() == pytest.approx(2.0, rel=1e-14)
    assert PointMasses([1e9, 1e9 + 1], [0.5, 0.5]).var() == pytest.approx(0.25, rel=1e-12)
    law = free_mult(PointMasses([0.5, 2.0], [0.3, 0.7]), MarchenkoPastur(0.5, scale=1.5))
    assert law.var() == pytest.approx(law.moment(2) - law.moment(1) ** 2, rel=1e-12)
