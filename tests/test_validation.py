"""Bad input never passes silently: the examples a scripted probe of the public API found (unclear errors, wrong
inputs accepted, NaN or inf returned), each now a clear error naming the argument or the right value."""
import numpy as np
import pytest
import sympy as sp

from scipy import special

from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.experiments import sweep
from rmtnet.spectra import Affine, Bernoulli, FussCatalan, GridDensity, MarchenkoPastur, Mixture, PointMasses, Semicircle, free_mult, free_mult_power, kernels, predict
from rmtnet.spectra.sampling import montecarlo
from rmtnet.spectra import symbolic as S
from rmtnet._validation import ConvergenceError
from rmtnet.spectra.sampling.random_matrices import free_product_eigs

MP = MarchenkoPastur(0.5)


@pytest.mark.parametrize("call, message", [
    (lambda: MP.quantile("a"), "q must be real numbers"),
    (lambda: MP.ppf("a"), "q must be real numbers"),
    (lambda: MP.pdf("a"), "x must be real numbers"),
    (lambda: MP.cdf([1.0, None]), "x must be finite"),
    (lambda: PointMasses(["a"], [1.0]), "locations must be real numbers"),
    (lambda: MP.moment(None), "k must be a non-negative integer, got None"),
    (lambda: MP.moment("2"), "k must be a non-negative integer"),
    (lambda: MP.moment(2.5), "k must be a non-negative integer, got 2.5"),
    (lambda: MP.rvs(2.5), "size must be an integer >= 0, got 2.5"),
    (lambda: MP.rvs(3, rng="abc"), "rng must be None, a non-negative integer"),
    (lambda: MP.rvs(3, seed="abc"), "seed must be None, a non-negative integer"),
    (lambda: MP.rvs(3, seed=-1), "seed must be None, a non-negative integer"),
    (lambda: FussCatalan(float("nan")), "s must be a positive integer, got nan"),
    (lambda: FussCatalan(2.5), "s must be a positive integer, got 2.5"),
    (lambda: GridDensity([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], atoms=([0.5, 0.7], [0.1])), "equal length"),
    (lambda: GridDensity([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], atoms=[0.5]), "a pair (locations, masses)"),
])
def test_unclear_errors_now_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_integral_floats_stay_accepted():
    assert FussCatalan(3.0).s == 3 and MP.moment(2.0) == MP.moment(2)
    assert len(MP.rvs(np.int64(3), seed=np.int64(1))) == 3


@pytest.mark.parametrize("law, w", [(MarchenkoPastur(1.0), -1.0), (MarchenkoPastur(0.5), -2.0), (Bernoulli(0.5), -0.5)])
def test_s_transform_at_its_pole_raises_instead_of_returning_inf(law, w):
    with pytest.raises(ValueError, match=r"w = \[.*\] is a pole or lies outside the domain"):
        law.s_transform(w)
    assert np.isfinite(law.s_transform(w / 2))                              # away from the pole it is finite


@pytest.mark.parametrize("law, k", [(MarchenkoPastur(0.5), 10 ** 6), (Semicircle(1.0), 1100)])
def test_moments_beyond_float64_raise_overflow_naming_k(law, k):
    """m_k of MP(½) and of the semicircle grow like (1 + √λ)^{2k} and 2^k: beyond ~1.8e308 they are not
    representable; before, MP returned NaN and the semicircle NaN."""
    with pytest.raises(OverflowError, match=f"moment\\(k={k}\\)"):
        law.moment(k)
    assert np.isfinite(law.moment(200))


def test_free_mult_power_accepts_large_exponents():
    """A valid exponent of 600 raised OverflowError; the mean of μ^{⊠600} is m₁(μ)^600 (means multiply)."""
    law = free_mult_power(Bernoulli(0.5), 600)
    assert law.moment(1) == pytest.approx(0.5 ** 600, rel=1e-9)


def test_a_law_below_float64_squares_says_which_law_and_why():
    """μ^{⊠600} of Bernoulli(½) lives at 10⁻¹⁸¹, where |z|² underflows: the density's failure names the law (and so
    t) and the scale, and says how to solve it on a unit scale (it named only z before)."""
    law = free_mult_power(Bernoulli(0.5), 600)
    with pytest.raises(ConvergenceError, match=r"Bernoulli\(p=0.5\)\^600; the law's scale 2.41e-181 .*dilate"):
        law.cdf(0.5)


@pytest.mark.parametrize("call, message", [
    (lambda: S.bernoulli_s_transform(2), r"p must lie in \(0, 1\], got 2"),
    (lambda: S.bernoulli_s_transform(-0.5), r"p must lie in \(0, 1\], got -0.5"),
    (lambda: S.mp_s_transform(-1, 1), r"ratio must lie in \(0, oo\), got -1"),
    (lambda: S.mp_s_transform(1, 0), r"scale must lie in \(0, oo\), got 0"),
    (lambda: S.fuss_catalan_moments(0, 3), r"s must lie in \[1, oo\), got 0"),
    (lambda: S.fuss_catalan_moments(-1, 3), r"s must lie in \[1, oo\), got -1"),
    (lambda: S.narayana_moments(1, -1), "K must be an integer >= 0, got -1"),
    (lambda: S.free_mult_moments(S.mp_s_transform(), K=2.5), "K must be an integer >= 0"),
    (lambda: S.bernoulli_s_transform(sp.oo), "p must be a finite real number"),
])
def test_symbolic_parameters_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_symbolic_parameters_may_stay_symbols_and_k_zero_is_empty():
    p = sp.Symbol("p", positive=True)
    assert sp.simplify(S.bernoulli_s_transform(p) - (1 + S.w) / (p + S.w)) == 0
    assert S.moments_from_s(S.mp_s_transform(), 0) == [] and S.free_mult_moments(S.mp_s_transform(), K=0) == []


def test_free_product_eigs_refuses_nan_diagonals():
    with pytest.raises(ValueError, match=r"diagonals\[1\] must be finite"):
        free_product_eigs([np.ones(4), np.array([1.0, np.nan, 1.0, 1.0])], seed=0)
    with pytest.raises(ValueError, match="same length"):
        free_product_eigs([np.ones(4), np.ones(3)], seed=0)


# --- defects the generated fuzz (tests/test_fuzz.py) found ----------------------------------------------------------
def test_moments_of_huge_order_take_no_time_and_name_k():
    """Semicircle.moment(2**40) looped 2^39 times (a hang) and MP(0.5, scale 2).moment(10**6) raised Python's bare
    OverflowError (34, 'Numerical result out of range'); orders above 10⁴ are now O(1) in k."""
    with pytest.raises(OverflowError, match=r"moment\(k=1099511627776\)"):
        Semicircle(1.0).moment(2 ** 40)
    with pytest.raises(OverflowError, match=r"moment\(k=1000000\)"):
        MarchenkoPastur(0.5, scale=2.0).moment(10 ** 6)
    assert MarchenkoPastur(0.5, scale=0.1).moment(10 ** 6) == 0.0           # |m_k| ≤ 0.29^k underflows
    # r = 1 exactly: neither bound decides, the quadrature does; m_k of MP(1, ¼) is Catalan(k)/4^k
    k = 50_000
    exact = np.exp(special.gammaln(2 * k + 1) - special.gammaln(k + 1) - special.gammaln(k + 2) - k * np.log(4))
    assert MarchenkoPastur(1.0, scale=0.25).moment(k) == pytest.approx(exact, rel=1e-6)


def test_huge_python_integers_are_numbers_or_named():
    """real_scalar and moment_order called np.isfinite on an int beyond int64: TypeError 'ufunc isfinite not
    supported', naming nothing."""
    assert Semicircle(1.0, loc=10 ** 15).loc == 1e15
    with pytest.raises(ValueError, match="var = 1.0 and loc = 10+ give a band"):   # narrower than one float step
        Semicircle(1.0, loc=10 ** 30)
    with pytest.raises(ValueError, match="b must be a finite real number"):
        Affine(Semicircle(), 1.0, 10 ** 400)
    with pytest.raises(OverflowError, match=r"moment\(k="):
        Semicircle(1.0).moment(10 ** 30)


@pytest.mark.parametrize("call, message", [
    (lambda: MP.s_transform("1"), "w must be complex numbers"),              # was S(1), text parsed as a number
    (lambda: MP.s_transform(True), "w must be complex numbers"),
    (lambda: MP.pdf(np.array([1 + 1j])), "x must be real numbers"),           # was the real part, silently
    (lambda: PointMasses([0.0, 1.0], "a"), "masses must be real numbers"),    # was "could not convert string"
    (lambda: Mixture([Bernoulli(0.5), Semicircle()], "a"), "weights must be real numbers"),
])
def test_text_bools_and_complex_are_not_real_numbers(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: MarchenkoPastur(1e300, scale=1e10), "ratio and scale = .* put the support's ends beyond float64"),
    (lambda: FussCatalan(2, scale=1e308), "s and scale = .* put the support's ends beyond float64"),
    (lambda: Affine(Semicircle(), 1e308).support(), r"a = 1e\+308, b = 0.0 map the support"),
])
def test_supports_beyond_float64_are_refused(call, message):
    """Before: laws with an infinite support end, whose mean was inf or whose moment(1) raised."""
    with pytest.raises(ValueError, match=message):
        call()


def test_fuss_catalan_of_large_order_has_a_finite_support():
    """(s + 1)^{s+1}/s^s in integers then divided: OverflowError 'integer division result too large' at s = 10⁶."""
    hi = FussCatalan(10 ** 6).support()[1]
    assert hi == pytest.approx(np.e * (10 ** 6 + 1), rel=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(tol=1e308), r"tol must lie in \(0.0, 1.0\)"),          # accepted before
    (dict(tol=0.0), r"tol must lie in \(0.0, 1.0\)"),
    (dict(max_iter=None), "max_iter must be an integer >= 1"),    # int(None) deep inside before
    (dict(max_iter=float("inf")), "max_iter must be an integer >= 1"),
])
def test_engine_settings_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        free_mult(MarchenkoPastur(0.5), MarchenkoPastur(0.3), **kwargs)
    with pytest.raises(ValueError, match=message):
        free_mult_power(MarchenkoPastur(0.5), 2, **kwargs)


@pytest.mark.parametrize("call, message", [
    (lambda: S.fuss_catalan_moments("a", 3), "s must be a number or a SymPy expression, got 'a'"),  # a Symbol before
    (lambda: S.free_cumulants([None]), r"moments\[0\] must be a number"),
    (lambda: S.free_cumulants(float("nan")), "moments must be a sequence"),
    (lambda: S.free_cumulants([1.0, float("nan")]), r"moments\[1\] must be a finite number"),
    (lambda: S.moments_from_free_cumulants("ab"), "kappa must be a sequence"),
    (lambda: S.free_add_moments(["a", 1, 2], K=2), r"factors\[0\]\[0\] must be a number"),
])
def test_symbolic_sequences_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_samplers_name_a_bad_net_and_width():
    net = network.mlp(2, 8, sigma_w=1.2, activation="tanh")
    with pytest.raises(ValueError, match="net must be an rmtnet.spectra.network.MLP"):    # AttributeError before
        montecarlo.sample_jacobian_eigs(3.0, seed=0)
    with pytest.raises(ValueError, match="width must be a positive integer, got nan"):   # int(nan) before
        montecarlo.sample_jacobian_eigs(net, width=float("nan"), seed=0)
    with pytest.raises(ValueError, match="width must be a positive integer"):
        montecarlo.sample_jacobian_eigs(net, width=[], seed=0)


def test_kernels_refuse_inputs_whose_products_overflow():
    """nngp_kernel of inputs ~1e77 returned [[inf]] (c₁₁c₂₂ overflows in the arc-cosine kernel)."""
    net = network.mlp(2, 3, sigma_w=1.3, sigma_b=0.1)
    X = np.full((1, 3), 8.9e76)
    for f in (kernels.nngp_kernel, kernels.ntk_kernel):
        with pytest.raises(ValueError, match="x1 must have entries of magnitude at most 1e"):
            f(net, X)
    assert np.isfinite(kernels.nngp_kernel(net, np.full((1, 3), 1e70))).all()


@pytest.mark.parametrize("sigma_w", [1e-308, 1e308])
def test_mlp_sigma_whose_square_leaves_float64_is_refused(sigma_w):
    """1e-308: ZeroDivisionError in the fixed point (σ_w² = 0); 1e308: OverflowError (34, 'Numerical result out of
    range')."""
    with pytest.raises(ValueError, match="sigma_w must be 0 or lie in"):
        network.mlp(2, 10, sigma_w=sigma_w)


@pytest.mark.parametrize("kwargs, message", [
    (dict(samples=[]), "samples must hold at least one value"),                  # 0.0 before
    (dict(atom_rtol=float("nan")), "atom_rtol must be a finite real number"),    # accepted before
    (dict(floor=float("nan")), "floor must be a finite real number"),
    (dict(floor=-1.0), r"floor must lie in \[0.0, inf\]"),
    (dict(law=3.0), "law must be a Measure"),                                    # AttributeError before
    (dict(samples=["a"]), "samples must be real numbers"),
])
def test_ks_distance_checks_its_arguments(kwargs, message):
    args = dict(law=MarchenkoPastur(0.5), samples=[0.3, 1.0, 2.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        plot.ks_distance(**args)


@pytest.mark.parametrize("kwargs, message", [
    (dict(seeds=float("nan")), "seeds must be an integer or a non-empty list"),  # 'float' is not iterable before
    (dict(on_error=np.array([])), "on_error must be one of"),                    # ambiguous truth value before
])
def test_sweep_checks_seeds_and_on_error(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep(_score, {"a": [1]}, store=tmp_path / "r.csv", progress=False, **kwargs)


def _score(a, seed):
    return {"v": float(a)}


# --- torch: layers, models, data ---------------------------------------------------------------------------------
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("layer", ["MaskedLinear", "SparseMaskedLinear"])
@pytest.mark.parametrize("sigma_w", [float("nan"), 0.0, float("inf"), "a", None])
def test_masked_layers_refuse_a_bad_sigma_w(layer, sigma_w):
    """MaskedLinear took σ_w = NaN (NaN weights) and 0; both took strings to a raw float()/comparison error."""
    from rmtnet.nets import layers
    with pytest.raises(ValueError, match="sigma_w must"):
        getattr(layers, layer)(4, 3, density=0.5, sigma_w=sigma_w, seed=0)


@pytest.mark.parametrize("layer", ["MaskedLinear", "SparseMaskedLinear"])
@pytest.mark.parametrize("density", [True, "a", np.array([])])
def test_masked_layers_refuse_a_bad_density(layer, density):
    from rmtnet.nets import layers
    with pytest.raises(ValueError, match="density must be a finite real number"):
        getattr(layers, layer)(4, 3, density=density, seed=0)


def test_masked_layer_whose_weights_overflow_is_refused():
    """density 2e-309: kept weights of standard deviation 1/√(p·n) ≈ 1e154, inf in float32 (NaN after masking)."""
    from rmtnet.nets import layers
    with pytest.raises(ValueError, match=r"sigma_w \(over √\(density·in_features\)\) gives initial weights"):
        layers.MaskedLinear(4, 3, density=2.2e-309, seed=0)


def test_bernoulli_positions_with_a_tiny_density_end():
    """Geometric gaps beyond 2⁶³ wrapped to negative int64 positions: SparseMaskedLinear(density=1e-300) never
    returned."""
    from rmtnet.nets import layers
    assert layers.bernoulli_positions(12, 1e-300, torch.Generator().manual_seed(0)).numel() == 0


@pytest.mark.parametrize("layer, args", [("TokenMixing", (4, 3)), ("ChannelMixing", (4, 3)),
                                         ("MonarchLinear", (4, 4, 2)), ("AdjacencyLinear", (3,)),
                                         ("ClusterLinear", (3, 1, 1)), ("PermutedMixing", (2, 2, 2))])
def test_other_layers_refuse_a_bad_sigma_w(layer, args):
    from rmtnet.nets import layers
    for bad in (float("nan"), -1.0, "a"):
        with pytest.raises(ValueError, match="sigma_w must"):
            getattr(layers, layer)(*args, sigma_w=bad, seed=0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sigma_w=float("inf")), "sigma_w must be a finite real number"),       # accepted before
    (dict(sigma_w=True), "sigma_w must be a finite real number"),
    (dict(sigma_b=float("inf")), "sigma_b must be a finite real number"),
    (dict(sigma_b=1e40), "sigma_b gives initial weights"),                        # inf biases in float32 before
    (dict(sigma_w=1e300, weights="orthogonal"), "sigma_w = 1e\\+300 gives initial weights"),
    (dict(widths=float("nan")), "widths must be a sequence"),                     # 'float' is not iterable before
    (dict(activation=[]), "activation must be one of"),                           # unhashable type before
])
def test_mlp_checks_its_arguments(kwargs, message):
    from rmtnet.nets import models
    args = dict(widths=[4, 3, 2], seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        models.MLP(**args)


def test_mixer_checks_gamma():
    from rmtnet.nets import models
    for bad in ("a", True, np.array([]), float("nan")):
        with pytest.raises(ValueError, match="gamma must be a finite real number"):
            models.MLPMixer(4, 3, 4, 1, 2, gamma=bad, seed=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_dataset_refuses_non_finite_inputs_and_targets(bad):
    from rmtnet.nets.data import Dataset
    x = torch.zeros(2, 3)
    x[1, 2] = bad
    with pytest.raises(ValueError, match="x_train must be finite"):
        Dataset(x, torch.zeros(2, 1), torch.zeros(2, 3), torch.zeros(2, 1), None, "t", (3,))
    with pytest.raises(ValueError, match="y_test must be finite"):
        Dataset(torch.zeros(2, 3), torch.zeros(2, 1), torch.zeros(2, 3), x[:, 2:], None, "t", (3,))


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(dtype=torch.int64), TypeError, "dtype must be a floating-point torch dtype"),   # int64 images before
    (dict(dtype="float32"), TypeError, "dtype must be a floating-point torch dtype"),
    (dict(seed=2.5), ValueError, "seed must be an integer >= 0, got 2.5"),                # int(2.5) = 2 before
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),                          # scikit-learn's message
    (dict(seed=float("nan")), ValueError, "seed must be an integer >= 0"),                # int(nan) before
    (dict(test_fraction=0.004), ValueError, "test_fraction = 0.004 gives 8 test"),        # scikit-learn's message
])
def test_digits_checks_its_arguments(kwargs, exc, message):
    from rmtnet.nets import data
    with pytest.raises(exc, match=message):
        data.digits(**kwargs)


def test_generated_data_check_seed_and_dtype():
    from rmtnet.nets import data
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):      # torch took -1 before
        data.teacher_student(5, 3, 2, 4, seed=-1)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        data.spirals(20, 10, seed="a")
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        data.spirals(20, 10, dtype=torch.int32)


@pytest.mark.parametrize("z", [6.7e15 + 1j, 1e30 + 1j, 2.17e36 + 1e37j])
def test_cauchy_of_a_free_product_far_from_its_support(z):
    """The continuation started at a height ~|z| stalled (ConvergenceError) for |z| ≳ 1e15 with a support of
    radius 8; far out G comes from the moment series, G(z) = 1/z + m₁/z² + …"""
    law = free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0))
    g = complex(law.cauchy(z))
    assert g == pytest.approx(1 / z + law.moment(1) / z ** 2, rel=1e-14)
    assert complex(FussCatalan(2).cauchy(z)) == pytest.approx(1 / z + 1 / z ** 2, rel=1e-14)


def test_symbolic_tiny_floats_are_not_rounded_to_zero():
    """nsimplify(1.4e-45) is 0: a valid p was refused as outside (0, 1]; the float's exact value is kept."""
    assert S.bernoulli_s_transform(1.401298464324817e-45) is not None
    assert S.mp_s_transform(1.1754943508222875e-38, 1) is not None
    assert S.narayana_moments(0.5, 2) == [1, sp.Rational(3, 2)]                 # nsimplify's guess kept


def test_free_product_eigs_refuses_diagonals_whose_product_overflows():
    """Diagonals of 1.3e154: eigenvalues inf (or LAPACK's 'did not converge')."""
    with pytest.raises(ValueError, match="diagonals must keep the product's eigenvalues within float64"):
        free_product_eigs([np.ones(3), np.full(3, 1.34e154)], seed=0)


@pytest.mark.parametrize("call, message", [
    (lambda: network.mlp(2, 10, weights=np.array([]), sigma_w=1.0), "weights must be one of"),  # ambiguous truth value
    (lambda: kernels.ntk_kernel(network.mlp(2, 3, sigma_w=1.0), np.eye(3), parameterization=np.array([])),
     "parameterization must be one of"),
    (lambda: predict.ntk_predict(network.mlp(2, 3, sigma_w=1.3, sigma_b=0.1), np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0],
                                 [0.0, 0.3, 1.0]]), np.ones((3, 1)), np.eye(3)[:2], diag_reg=1e308),
     "diag_reg = 1e\\+308 makes"),                                                  # scipy's 'infs or NaNs'
])
def test_choices_and_regularisation_name_themselves(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_data_take_numpy_scalars_and_refuse_scalar_tensors():
    """np.float32(0.25) was refused as a test_fraction and a noise level; a 0-d input gave len()'s TypeError."""
    from rmtnet.nets import data
    assert data.spirals(20, 10, noise=np.float32(0.25)).n_train == 20
    assert data.digits(test_fraction=np.float32(0.25)).n_test == 450
    with pytest.raises(ValueError, match="x_train and y_train must have a sample axis"):
        data.Dataset(torch.tensor(0.0), torch.zeros(2, 1), torch.zeros(2, 3), torch.zeros(2, 1), None, "t", (3,))


def test_generated_data_name_a_noise_that_overflows():
    """spirals(noise=1e308) stopped in Dataset with 'x_train must be finite', naming no argument of spirals."""
    from rmtnet.nets import data
    with pytest.raises(ValueError, match="noise = 1e\\+308 puts the points beyond"):
        data.spirals(20, 10, noise=1e308)
    with pytest.raises(ValueError, match="noise = 1e\\+300 puts the targets beyond"):
        data.teacher_student(5, 3, 2, 4, seed=0, noise=1e300)


def test_inverse_transforms_near_zero():
    """m_inverse(μ, 9e-18) stalled (ConvergenceError: the continuation started at z ~ 1e23) and m_inverse(μ, 0)
    failed Newton with a NaN residual, naming no argument; near 0 the expansion is used, 0 itself is refused."""
    from rmtnet.spectra import transforms
    mu = MarchenkoPastur(0.5)                                      # m₁ = 1, m₂ = 1.5, m₃ = 2.75
    w = 9.0709e-18
    assert complex(transforms.m_inverse(mu, w)) == pytest.approx(1 / w + 1.5, rel=1e-15)
    assert complex(transforms.cauchy_inverse(mu, 1e-9)) == pytest.approx(1e9 + 1.0, rel=1e-15)
    for f, name in ((transforms.m_inverse, "w"), (transforms.cauchy_inverse, "g")):
        with pytest.raises(ValueError, match=f"{name} = 0 is a pole of the inverse"):
            f(mu, [0.1, 0.0])
    # either side of the switch at |w| = 1e-6 agrees
    a, b = (complex(transforms.m_inverse(mu, v)) for v in (1.0000001e-6, 0.9999999e-6))
    assert a * 1.0000001e-6 == pytest.approx(b * 0.9999999e-6, rel=1e-10)


def test_mixer_sizes_beyond_float64_and_slq_of_nothing_are_named():
    """connections(8, 8, gamma=1e308) returned inf; slq of a 0 × 0 matrix blamed n_steps ("[1, m] = [1, 0]")."""
    from rmtnet.spectra import mixer
    from rmtnet.spectra.sampling.lanczos import slq
    with pytest.raises(ValueError, match="gamma = 1e\\+308, gamma_channel = None give a result beyond float64"):
        mixer.connections(8, 8, gamma=1e308)
    assert mixer.connections(8, 8, gamma=2.0) == 1024.0
    with pytest.raises(ValueError, match="operator must act on a space of dimension >= 1"):
        slq(np.zeros((0, 0)), n_steps=2, n_probes=2, seed=0)


def test_fixed_point_of_a_tiny_bias_converges():
    """σ_b = 2.9e-99 (ReLU, σ_w = 1): q* = 2σ_b² ≈ 1.7e-197 took Brent 134 steps; the default cap of 100 raised
    SciPy's bare RuntimeError from network.mlp."""
    sb = 2.9095577026588976e-99
    net = network.mlp(2, 10, sigma_b=sb, sigma_w=1.0)
    assert net.q[0] == pytest.approx(2 * sb ** 2, rel=1e-12)


def test_one_of_and_boolean_refuse_arrays_and_other_types_naming_the_argument():
    """one_of compared with ``value not in allowed``: an array gave NumPy's "The truth value of an array … is
    ambiguous" (naming nothing) and np.array(["a"]) matched "a"; flags took any truthy value."""
    from rmtnet._validation import boolean, one_of
    for value in (np.array([]), np.array([[1.0, 2.0]]), np.array(["sgd"]), 1, None, b"sgd", ["sgd"]):
        with pytest.raises(ValueError, match="optimizer must be one of"):
            one_of("optimizer", value, ("sgd", "adamw"))
    assert one_of("optimizer", "adamw", ("sgd", "adamw")) == "adamw"
    assert one_of("optimizer", np.str_("sgd"), ("sgd", "adamw")) == "sgd"
    for value in (1, 0, "yes", None, np.nan, np.array([True])):
        with pytest.raises(TypeError, match="flag must be True or False"):
            boolean("flag", value)
    assert boolean("flag", np.True_) is True and boolean("flag", False) is False


def test_every_study_table_is_checked_by_one_rule():
    """The study functions that read a sweep's table refuse a non-table with TypeError and a table missing a column
    (or empty) with ValueError, each naming the argument, the producing function and the missing columns."""
    import pandas as pd
    from rmtnet._validation import runs_table
    from rmtnet.studies import emn, mixer_width, sharpness, trained_spectra, wider_nets

    readers = [(mixer_width.narrow_wide_gap, "runs", "a width_run sweep"),
               (mixer_width.gap_trend, "runs", "a width_run sweep"),
               (mixer_width.error_regression, "runs", "a width_run sweep"),
               (trained_spectra.layer_table, "runs", "a spectra_run sweep"),
               (trained_spectra.kernel_table, "runs", "a spectra_run sweep"),
               (wider_nets.width_effects, "runs", "a width_at_fixed_weights_run sweep"),
               (sharpness.curves, "runs", "sharpness_sweep"),
               (emn.binary_error_table, "runs", "emn_run rows"),
               (emn.table1, "tidy", "sweep_emn")]
    for fn, name, source in readers:
        with pytest.raises(TypeError, match=f"{name} must be the table of {source} \\(a pandas DataFrame"):
            fn([{"seed": 0}])
        with pytest.raises(ValueError, match=f"{name} must be the table of {source} with the columns \\[.*\\] and "
                                             r"at least 1 row; missing \[.+\], 1 row$"):
            fn(pd.DataFrame({"seed": [0]}))
    table = pd.DataFrame({"a": [1.0], "b": [2.0]})
    assert runs_table("runs", table, ["a"]) is table
    with pytest.raises(ValueError, match=r"missing \[\], 0 rows"):
        runs_table("runs", table.iloc[:0], ["a"])
    assert runs_table("runs", table.iloc[:0], ["a"], min_rows=0).empty
