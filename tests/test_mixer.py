"""rmtnet.spectra.mixer: the width/budget algebra of seed 004 and the singular values of Kronecker/RP layers."""
import numpy as np
import pytest
from scipy import optimize

from rmtnet.spectra import mixer


def test_budget_closed_forms_and_published_shape():
    """γ = 2, Ω = 2^19 gives S* = C* = 64 (seed 004, REFERENCE §3); S(C) inverts Ω; m = C·S(C) is largest at C*,
    where it equals (Ω/γ)^{2/3} — checked against a numerical maximisation."""
    omega, gamma = 2.0 ** 19, 2.0
    s, c = mixer.optimal_tokens_channels(omega, gamma)
    assert s == pytest.approx(64, rel=1e-14) and c == pytest.approx(64, rel=1e-14)
    assert mixer.connections(64, 64, gamma) == omega
    for C in (8.0, 37.5, 64.0, 200.0):
        assert mixer.connections(mixer.tokens_for_channels(C, omega, gamma), C, gamma) == pytest.approx(omega,
                                                                                                     rel=1e-12)
    res = optimize.minimize_scalar(lambda C: -C * mixer.tokens_for_channels(C, omega, gamma), bounds=(1, 1000),
                                   method="bounded", options={"xatol": 1e-10})
    assert res.x == pytest.approx(64, rel=1e-6)
    assert -res.fun == pytest.approx(mixer.max_effective_width(omega, gamma), rel=1e-12)
    assert mixer.max_effective_width(omega, gamma) == pytest.approx(64 * 64, rel=1e-14)
    assert mixer.effective_width(64, 64) == 4096


def test_mixer_b16_row_of_seed_004():
    """Mixer-B/16 (S = 196, C = 768, token hidden 384, channel hidden 3072): Ω = 2.6 × 10⁸ and γ_C·m = 6.0 × 10⁵, the
    published table's numbers (two significant digits)."""
    S, C = 196, 768
    omega = mixer.connections(S, C, gamma=384 / 196, gamma_channel=4)
    assert round(omega / 1e8, 1) == 2.6
    assert round(4 * mixer.effective_width(S, C) / 1e5, 1) == 6.0


def test_kronecker_and_permuted_singular_values():
    """svd(kron(W, I_r)) = svd(kron(I_r, W)) = svd(P₁ (I ⊗ W) P₂) = W's singular values repeated r times."""
    rng = np.random.default_rng(0)
    W, r = rng.standard_normal((5, 3)), 4
    ref = mixer.kronecker_singular_values(W, r)
    P1, P2 = np.eye(20)[rng.permutation(20)], np.eye(12)[rng.permutation(12)]
    for M in (np.kron(W, np.eye(r)), np.kron(np.eye(r), W), P1 @ np.kron(np.eye(r), W) @ P2):
        np.testing.assert_allclose(np.linalg.svd(M, compute_uv=False), ref, rtol=1e-13, atol=1e-13)


def test_sparse_law_edge_and_regime():
    law = mixer.sparse_weight_law(2048, 1024)
    assert np.sqrt(law.continuous_support()[1]) == pytest.approx(mixer.c_gamma(2.0), rel=1e-12)
    assert mixer.c_gamma(1.0) == 2.0
    assert mixer.mp_regime(1 / 32, 2048) == pytest.approx(64 / np.log(2048))
    for bad in [lambda: mixer.connections(-1, 3), lambda: mixer.mp_regime(0, 10), lambda: mixer.c_gamma(0),
                lambda: mixer.kronecker_singular_values(np.ones(3), 2), lambda: mixer.tokens_for_channels(4, -1)]:
        with pytest.raises(ValueError):
            bad()
