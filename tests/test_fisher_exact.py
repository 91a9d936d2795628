"""fisher_law (tabulated level by level) against an independent, untabulated solution of the same recursion.

For a hard-tanh network with orthogonal weights every D²_ℓ law is Bernoulli(p), and by Nica & Speicher (Lectures on
the Combinatorics of Free Probability, 2006, Lecture 14) Bernoulli(p) ⊠ μ = (1 − p)δ₀ + p·D_p(μ^{⊞1/p}): the free
compression by a projection of trace p. Its Cauchy transform G(u) = (1 − p)/u + G_μ(ω), with ω the subordination
point of the free convolution power μ^{⊞t}, t = 1/p (Belinschi & Bercovici, "Partially defined semigroups relative
to multiplicative free convolution", IMRN 2005): u/p = tω + (1 − t)/G_μ(ω). The Fisher recursion
μ_{ℓ+1} = (x ↦ q̂_ℓ + σ_w² x)_*(ν_ℓ ⊠ μ_ℓ), μ₁ = δ_{q̂₀}, thus evaluates G_L(z) through one subordination point per
level, all of them solved together by Newton's method (an (L − 1)-dimensional complex system per point), followed
from Im z = 4 down to the real axis: no table and no ⊠ engine, the reference for the tables of fisher_law.
"""
import numpy as np
import pytest

from rmtnet.spectra import critical_sigma_w, fisher, fisher_law, network
from rmtnet.spectra.jacobian import layer_d2_law

SIGMA_B = 0.05


def _net(depth):
    """The network of the ntk_spectrum figure: hard-tanh, orthogonal, critical σ_w, linear read-out."""
    return network.mlp(depth, 1000, weights="orthogonal", sigma_w=critical_sigma_w("hard_tanh", SIGMA_B),
                       sigma_b=SIGMA_B, activation="hard_tanh", last_activation=False)


def _levels(net):
    """q̂₀, σ_w² and per step ℓ = 1 … L − 1 the pair (q̂_ℓ, p_ℓ), p_ℓ = P(φ′(h_ℓ)² = 1)."""
    qhat = net.post_activation_moments()
    steps = [(qhat[ell], layer_d2_law(net.activation, net.q[ell - 1]).p) for ell in range(1, net.depth)]
    return qhat[0], float(net.sigma_w) ** 2, steps


def _residuals(omega, z, q0, s2, steps):
    """The subordination equations E_ℓ(ω₁ … ω_{L−1}; z), their Jacobian and G_L(z)."""
    n, m = omega.shape
    g = 1.0 / (omega[:, 0] - q0)
    dg = np.zeros((n, m), complex)
    dg[:, 0] = -g * g
    E, J = np.zeros((n, m), complex), np.zeros((n, m, m), complex)
    for ell, (qh, p) in enumerate(steps):
        t = 1.0 / p
        above = omega[:, ell + 1] if ell + 1 < m else z
        E[:, ell] = t * omega[:, ell] + (1 - t) / g - (above - qh) / (s2 * p)
        J[:, ell, :] = -(1 - t) / (g * g)[:, None] * dg
        J[:, ell, ell] += t
        u = (above - qh) / s2
        g, dg = ((1 - p) / u + g) / s2, dg / s2
        if ell + 1 < m:
            J[:, ell, ell + 1] -= 1.0 / (s2 * p)
            dg[:, ell + 1] -= (1 - p) / (u * u) / s2 ** 2
    return E, J, g


def exact_pdf(x, net):
    """The density of fisher_law(net) at the points x (untabulated, see the module docstring)."""
    q0, s2, steps = _levels(net)
    x = np.asarray(x, float).ravel()
    omega = None
    for y in list(4.0 * 0.8 ** np.arange(170)) + [0.0]:
        z = x + 1j * y
        if omega is None:                                   # far from the axis: ω_ℓ ≈ (ω_{ℓ+1} − q̂_ℓ)/(σ_w² p_ℓ)
            omega, w = np.zeros((x.size, len(steps)), complex), z
            for ell in range(len(steps) - 1, -1, -1):
                w = (w - steps[ell][0]) / (s2 * steps[ell][1])
                omega[:, ell] = w
        for _ in range(60):
            E, J, g = _residuals(omega, z, q0, s2, steps)
            d = np.linalg.solve(J, -E[..., None])[..., 0]
            omega = omega + d
            if np.max(np.abs(d) / (1 + np.abs(omega))) < 1e-15:
                break
    E, _, g = _residuals(omega, z, q0, s2, steps)
    assert np.max(np.abs(E)) < 1e-9 and np.all(omega.imag >= -1e-14)
    return -g.imag / np.pi


def exact_cdf_in_first_band(x, net):
    """The cdf at points x of the lowest band: the atom at q̂₀ plus ∫ρ from that band's edge e = q̂₁ + σ_w² q̂₀ (the
    image of the atom at q̂₀, whose mass 1 − p is just cancelled by the compression: ρ ∝ (x − e)^{-1/2}), by
    Gauss–Legendre in s = √(x − e)."""
    q0, s2, steps = _levels(net)
    e = steps[0][0] + s2 * q0
    s, w = np.polynomial.legendre.leggauss(200)
    out = []
    for xi in np.atleast_1d(x):
        r = np.sqrt(xi - e)
        si = 0.5 * r * (s + 1)
        out.append(0.5 * r * np.sum(w * 2 * si * exact_pdf(e + si * si, net)))
    atom = 1.0 - steps[0][1]
    return atom + np.array(out)


def _bands(law):
    """The ⊠ engine's bands of law = Affine(Affine(ν ⊠ μ, σ_w²), 1, q̂), mapped to law's axis."""
    shift, scale = law.source, law.source.base
    return [(scale.a * a + shift.b, scale.a * b + shift.b) for a, b in scale.base.intervals()]


def _interior(law, k, margin):
    """k points in each band of law, ``margin`` of the band's width away from its edges."""
    return np.concatenate([np.linspace(a + margin * (b - a), b - margin * (b - a), k) for a, b in _bands(law)])


def _check(laws, depths, k, margin):
    for L in depths:
        net, law = _net(L), laws[L - 1]
        x = _interior(law, k, margin)
        rel = np.abs(law.pdf(x) / exact_pdf(x, net) - 1)
        assert rel.max() < 1e-3, (L, float(rel.max()), float(x[np.argmax(rel)]))
        a, b = _bands(law)[0]
        xc = np.linspace(a + 0.1 * (b - a), b - 0.1 * (b - a), 3)
        np.testing.assert_allclose(law.cdf(xc), exact_cdf_in_first_band(xc, net), rtol=0,
                                   atol=1e-3 * law.continuous_mass)
        np.testing.assert_allclose([law.moment(j) for j in (1, 2, 3)], fisher.fisher_moments(net, K=3), rtol=1e-9)


def test_exact_reference_is_the_recursion():
    """The untabulated solution has the moments of fisher_moments (the density integrated band by band) at depth 3,
    and reduces to the closed form at depth 2 (atoms only: no density)."""
    net = _net(3)
    law = fisher_law(net)
    (a, b), = law.source._panels()
    s, w = np.polynomial.legendre.leggauss(200)
    e = a
    r = np.sqrt(b - e)
    si = 0.5 * r * (s + 1)
    rho = exact_pdf(e + si * si, net)
    locs, masses = law.atoms()
    m = [0.5 * r * np.sum(w * 2 * si * rho * (e + si * si) ** j) + np.sum(masses * locs ** j) for j in (0, 1, 2)]
    np.testing.assert_allclose(m, [1.0, *fisher.fisher_moments(net, K=2)], rtol=1e-7)


def test_fisher_law_density_and_cdf_match_the_exact_recursion_at_depth_4():
    """Depth 4 (two bands; the lower one starts at an x^{-1/2} edge): density within 1e-3 relative on the inner 80 %
    of each band (measured: 4.9e-4), cdf within 1e-3 of the continuous mass, moments exact. Each level's table holds
    every band in its own tanh-sinh panel; before, one panel spanned the gap and the density was 0.47 % off."""
    _check(fisher_law(_net(4), return_all=True), (3, 4), 8, 0.1)


@pytest.mark.slow
def test_fisher_law_density_and_cdf_match_the_exact_recursion_at_depth_8():
    """Depth 8, the deepest law of the ntk_spectrum figure (six bands): the same tolerances on the inner 60 % of each
    band (measured: 5.6e-4; before: 0.9 % in the median)."""
    _check(fisher_law(_net(8), return_all=True), (4, 6, 8), 12, 0.2)
