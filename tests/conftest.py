import os

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=50, deadline=None, derandomize=True)
settings.register_profile("stress", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

if os.environ.get("HYPOTHESIS_PROFILE", "default") == "default":
    # Hypothesis (≥ 6.131) also draws the literal constants of every local module imported so far, so the
    # "derandomised" default cases changed with which test files ran first (seen: a case generated only after the
    # rmtnet.studies.emn tests, kept as tests/test_properties.py::test_known_mass_loss_shared_atoms). Freeze that pool
    # at its empty start so the default set of cases is the same in any order; the stress profile keeps the feature.
    import copy

    from hypothesis.internal.conjecture import providers as _providers

    if hasattr(_providers, "_get_local_constants"):
        _frozen_constants = copy.deepcopy(_providers._local_constants)
        _providers._get_local_constants = lambda: _frozen_constants

from rmtnet.spectra.measures import Measure


def contour_moments(law, K, radius=None, n=512):
    """Moments m_1..m_K read off the engine's Cauchy transform: m_k = (1/2πi)∮ z^k G(z) dz on a circle enclosing
    the support (trapezoid rule, geometrically convergent). Independent of the moment series."""
    lo, hi = law.hull()
    R = radius or 1.6 * max(abs(lo), abs(hi)) + 1e-3
    theta = 2 * np.pi * (np.arange(n) + 0.5) / n
    z = R * np.exp(1j * theta)
    g = law.cauchy(z)
    return np.array([np.real(np.mean(z ** (k + 1) * g)) for k in range(1, K + 1)])


def quadrature_moments(law, K):
    """Moments from the density (double-exponential quadrature) plus the atoms: the generic Measure route."""
    return np.array([Measure.moment(law, k) for k in range(1, K + 1)])


def total_mass(law):
    """Atoms plus the unclipped integral of the density."""
    xs, cs, _ = law._cdf_table
    return float(np.sum(law.atoms()[1]) + cs[-1])


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="module")
def torch_one_thread():
    """Tiny torch models: one intra-op thread (two threads on a shared 2-core machine spin and run ~100× slower).
    Use in a module with ``pytestmark = pytest.mark.usefixtures("torch_one_thread")``."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
