"""The learning-rate border of full-batch gradient descent on the squared loss, from the top of the NTK spectrum.

Convention (the one of :func:`rmtnet.nets.train`, :func:`rmtnet.spectra.predict.gradient_descent_mse` and
neural-tangents): the loss over N training inputs and k outputs is

    L(θ) = c · (1/(N k)) Σ_{i, a} (f_a(x_i; θ) − y_{i a})²,
    c = ½ (``"mse"``, the default) or 1 (``"mean_squared"``, torch's ``mse_loss``),

so ∇²L = (2c/(N k)) JᵀJ + Σ_{i,a} (2c/(N k)) r_{i a} ∇²f_a(x_i), with J the (N k) × P Jacobian of the outputs and r the
residuals. The first term's nonzero spectrum is (2c/(N k)) times that of the NTK Gram Θ = JJᵀ over the training set;
in the linearised (lazy) regime it is the whole Hessian, and gradient descent θ ← θ − η∇L is stable if and only if

    η < η* = 2/λ_max(∇²L) = N k / (c · λ_max(Θ)):      2Nk/λ_max(Θ) for "mse",  Nk/λ_max(Θ) for "mean_squared".

Karakida, Akaho & Amari (AISTATS 2019, arXiv 1806.01316) and Hayase & Karakida (2021) write the loss as E = (1/2T)
Σ_t ‖y_t − f(x_t)‖² (½, the mean over the T samples, the sum over outputs), whose border is 2/λ_max(F) with F =
(1/T)Σ_t J_tᵀJ_t the Fisher information: E = k·L for L the "mse" loss, so its border is 2T/λ_max(Θ), k times below
"mse"'s. With the mean without ½ at N k = 1 the border reads η* = 1/λ_max. Lewkowycz et al. (2020, arXiv 2003.02218)
and Cohen et al. (ICLR 2021, arXiv 2103.00065) state 2/λ for the Hessian of the loss as written. Above η* a nonlinear
network need not blow up: its curvature can fall while the loss spikes and then converge (the catapult phase of
Lewkowycz et al.: up to η_max = 4/λ₀, i.e. 2η*, for their two-layer linear model, and about 12/λ₀ for deep ReLU
networks), and only beyond that does the loss grow without bound.

The predicted λ_max(Θ) comes from a law: :func:`ntk_learning_rate` reads it off the right edge of the Fan–Wang NTK law
over N inputs (:func:`rmtnet.spectra.ntk.ntk_law`), :func:`rmtnet.spectra.fisher.critical_learning_rate` off the
one-sample Fisher/NTK law of Hayase & Karakida (AISTATS 2021, arXiv 2006.07814); :func:`learning_rate_border` turns
any λ_max (an empirical NTK's top eigenvalue, say) into η*.
"""
from __future__ import annotations

from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar

from .network import check_network
from .ntk import ntk_law

__all__ = ["SQUARED_LOSSES", "squared_loss_factor", "learning_rate_border", "ntk_learning_rate"]

#: The squared losses by name: the factor c in L = c · mean over samples and outputs of (f − y)².
SQUARED_LOSSES = {"mse": 0.5, "mean_squared": 1.0}

PARAMETERIZATIONS = ("standard", "ntk")


def squared_loss_factor(loss):
    """c of the squared loss named ``loss`` (:data:`SQUARED_LOSSES`); ValueError naming ``loss`` otherwise.

    Parameters
    ----------
    loss : {"mse", "mean_squared"}
        The convention.

    Returns
    -------
    float

    Examples
    --------
    >>> squared_loss_factor("mse"), squared_loss_factor("mean_squared")
    (0.5, 1.0)
    """
    return SQUARED_LOSSES[one_of("loss", loss, tuple(SQUARED_LOSSES))]


def learning_rate_border(lambda_max, n_samples=1, n_outputs=1, loss="mse"):
    """η* = N k/(c λ_max): the largest stable learning rate of full-batch gradient descent on the squared loss whose
    NTK Gram over the N training inputs and k outputs has top eigenvalue ``lambda_max`` (module docstring).

    Parameters
    ----------
    lambda_max : float
        λ_max(Θ) > 0 of the (N k) × (N k) Gram Θ = JJᵀ, in the parameterisation the gradient is taken in.
    n_samples, n_outputs : int, default 1
        N and k.
    loss : {"mse", "mean_squared"}, default "mse"
        ½·mean (c = ½) or mean (c = 1) over samples and outputs of (f − y)².

    Returns
    -------
    float
        η* = 2/λ_max(∇²L).

    Examples
    --------
    A linear model f(x) = wᵀx on one input x with ‖x‖² = 4 has Θ = 4: "mse" (L = ½(wᵀx − y)²) is stable below
    2/4, "mean_squared" below 1/4.

    >>> learning_rate_border(4.0), learning_rate_border(4.0, loss="mean_squared")
    (0.5, 0.25)
    """
    lam = real_scalar("lambda_max", lambda_max, lo=0.0, lo_open=True)
    n = integer_at_least("n_samples", n_samples, 1)
    k = integer_at_least("n_outputs", n_outputs, 1)
    c = squared_loss_factor(loss)
    eta = n * k / (c * lam) if c * lam > 0 else float("inf")
    if not eta > 0 or eta == float("inf"):
        raise OverflowError(f"learning_rate_border: N k/(c · lambda_max) = {n}·{k}/({c}·{lam!r}) is not a positive "
                            "float64; lambda_max is too small")
    return eta


def ntk_learning_rate(net, n_data, loss="mse", parameterization="standard", finite_width=False):
    """η* of a network in the Fan–Wang setting trained on ``n_data`` inputs with one output, λ_max(Θ) the right edge
    of :func:`rmtnet.spectra.ntk.ntk_law` (Fan & Wang, NeurIPS 2020, arXiv 2005.11879).

    The law is that of K = Σ_θ ∇_θf ∇_θfᵀ over N(0, 1) weights (the NTK parameterisation, inputs with ‖x‖² ≈ 1). A
    torch network in the standard parameterisation (W_ℓ with N(0, 1/d_{ℓ−1}) entries, inputs with ‖x‖² ≈ d₀, as
    :meth:`rmtnet.nets.MLP.from_description` builds it) has Θ = Σ_ℓ d_{ℓ−1} K_ℓ, which is d·K when every width
    d₀ = d₁ = … = d_{L−1} equals d: ``parameterization="standard"`` asks for that and multiplies the edge by d.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Fan & Wang's setting (:func:`~rmtnet.spectra.ntk.ntk_law`): Gaussian weights, σ_w = 1, σ_b = 0, a normalised
        activation; equal widths d₀ … d_{L−1} for the standard parameterisation.
    n_data : int
        N, the number of training inputs.
    loss : {"mse", "mean_squared"}, default "mse"
        The loss convention (module docstring).
    parameterization : {"standard", "ntk"}, default "standard"
        The parameters the gradient is taken with respect to.
    finite_width : bool, default False
        Use the law with its first finite-width correction (:func:`~rmtnet.spectra.ntk.ntk_law`).

    Returns
    -------
    float
        η* = N/(c · s · λ_edge), s = d ("standard") or 1 ("ntk"), c the loss factor.

    Examples
    --------
    Linear, depth 2, 50 inputs in 100 dimensions: K = X₀ᵀ(I + W₁ᵀW₁/d₁)X₀ has mean 2 and right edge 6.8372, so
    "mse" is stable below 2·50/6.8372 in the NTK parameterisation and d = 100 times less in the standard one:

    >>> from rmtnet.spectra.network import mlp
    >>> net = mlp(2, widths=(100, 100, 1), activation="linear", q0=1.0)
    >>> print(f"{ntk_learning_rate(net, 50, parameterization='ntk'):.4f} {ntk_learning_rate(net, 50):.6f}")
    14.6259 0.146259
    """
    net = check_network("net", net)
    n = integer_at_least("n_data", n_data, 1)
    squared_loss_factor(loss)
    one_of("parameterization", parameterization, PARAMETERIZATIONS)
    scale = 1.0
    if parameterization == "standard":
        widths = net.widths[:-1]
        if len(set(widths)) != 1:
            raise ValueError(f"parameterization='standard' needs equal widths d₀ = … = d_(L−1) (then Θ = d·K); net has "
                             f"widths {net.widths}: use parameterization='ntk', or equal widths")
        scale = float(widths[0])
    edge = ntk_law(net, n, finite_width=boolean("finite_width", finite_width)).hull()[1]
    return learning_rate_border(scale * edge, n, 1, loss)
