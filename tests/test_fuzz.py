"""Bad input never passes silently: a generated fuzz of the public entry points listed in README.

Every case calls one entry point with one argument drawn from a strategy of bad and edge values — NaN, ±inf, huge,
tiny, negative and zero numbers, wrong types (str, None, list, complex, bool, bytes, object), empty, ragged and
mis-shaped arrays — the other arguments valid. The oracle, per case (:func:`check`):

* an argument the entry point's documented domain holds must give a finite result (every float in it finite: no
  NaN or inf) or, where the answer exceeds float64, an ``OverflowError`` naming the argument;
* an argument outside it must raise ``ValueError``, ``TypeError``, ``OverflowError`` or ``ConvergenceError`` whose
  message names the argument as a word of its own (``x must …``, ``moment(k=…)``, ``diagonals[1] …``: a name
  inside another word, as the x of "exceeds", does not count);
* an argument at the edge of the domain (finite but beyond ~1e150 in size, or a float such as 3.0 standing for an
  integer) may do either.

Beside the bad values above, six classes of input are generated for every entry point they apply to, each by a
named generator with its own test (the helpers they share are in ``tests/fuzz_inputs.py``):

* :func:`numeric_scalar_types` — every number of every table also as NumPy float64/float32/int64/int32 scalars,
  0-d NumPy arrays and 0-d torch tensors, judged by the value they hold (:func:`fuzz_inputs.by_value`; the domains
  :func:`_is_real`, :func:`real_in`, :func:`int_at_least`, :func:`finite_real_array` read them so too), and a
  1-element 1-d array, judged as an array (:func:`test_numeric_scalar_types`);
* truthy non-booleans (1, 0, "yes", "False", None, [True] …) for every boolean flag of the public functions and
  classes, the :data:`FLAGS` table (:func:`test_flags`);
* every kind of path for every path argument, the :data:`PATHS` table: a refusal names the argument (a damaged
  store or checkpoint: the file, and the line), never a raw OSError/KeyError/JSONDecodeError, and leaves every
  file as it was (:func:`test_paths`);
* sizes past memory (10⁷ … 10¹³ where that needs over 4× the machine's memory), the :data:`MEMORY` table: refused
  within 5 s naming the argument and the memory needed; each call runs in a forked child under a time and an
  address-space limit, so that a regression fails instead of hanging (:func:`test_sizes_past_memory`);
* callables that return the wrong thing (:data:`CALLABLES`, :func:`test_bad_callables`);
* NaN and ±inf inside sweep grids and results, and discrete gradient descent past 2N/λ_max
  (:func:`test_nan_in_grids_and_results`).

With ``RMTNET_FUZZ_COLLECT=FILE`` the tests of these classes append every failing case to FILE (one JSON line
each) and pass, to list them all in one run.

Counts (the default, derandomised profile): each test below states its examples per entry point; in total the
default run generates at least 1000 cases (asserted by :func:`test_generated_case_count` when the whole module
runs; about 8800 at present: about 6200 from the tables and about 2600 from the six classes above; the module takes
about 40 s of CPU, the sizes' cases each a forked child that must refuse within its 5 s guard).
``HYPOTHESIS_PROFILE=stress`` draws ten times as many from the strategies (the paths, callables and NaN cases are
fixed lists, run once), fresh each run.
"""
from __future__ import annotations

import atexit
import math
import numbers
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from rmtnet.spectra import activations
from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.experiments import sweep
from rmtnet.nets import data as nd, layers as nl, models as nm
from rmtnet.spectra import (Affine, Arcsine, Bernoulli, Empirical, FussCatalan, GridDensity, MarchenkoPastur,
                            Mixture, PointMasses, Semicircle, free_add, free_add_power, free_mult, free_mult_power,
                            gaussian_pushforward, kernels, predict, symbolic)
from rmtnet._validation import ConvergenceError
from rmtnet.spectra.sampling.random_matrices import free_product_eigs, ginibre_product_eigs, wishart_eigs
from rmtnet.spectra.sampling import montecarlo

from fuzz_inputs import by_value

pytestmark = pytest.mark.usefixtures("torch_one_thread")

STRESS = os.environ.get("HYPOTHESIS_PROFILE", "default") == "stress"
CLEAR = (ValueError, TypeError, OverflowError, ConvergenceError)
CASES = Counter()          # generated cases per test, for test_generated_case_count


def examples(n):
    """``n`` generated cases per entry point in the default profile, 10·n under the stress profile."""
    return settings(max_examples=10 * n if STRESS else n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])


# --- values ---------------------------------------------------------------------------------------------------------
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 1e-308, 5e-324, -1.0, 1.0, 0.5, 2.0, 3.0,
           np.float64(math.nan), np.float32(0.25), np.int64(3), 10 ** 30, -(10 ** 30)]
JUNK = ["a", "1", "", None, [], [1.0], [[1.0, 2.0]], [[1.0], [2.0, 3.0]], ["a"], [None], 1 + 1j,
        complex(math.nan, 0), {}, {"a": 1}, b"x", object(), True, False, np.array([]), np.array([[1.0, 2.0]]),
        np.array(["a"]), (1.0, math.nan)]


def reals():
    return st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(-10 ** 6, 10 ** 6), st.floats(-5.0, 5.0))


def junk():
    return st.sampled_from(JUNK)


def scalars():
    """Any scalar or wrong-typed value: numbers, edge numbers, strings, None, containers, objects."""
    return st.one_of(reals(), junk())


def bounded():
    """Scalars without the huge ones, for sizes where a huge valid value would only measure memory."""
    return st.one_of(st.sampled_from([v for v in SPECIAL if not (isinstance(v, numbers.Real) and abs(v) > 1e6)]),
                     st.floats(-50.0, 50.0), junk())


def small_ints(lo=-3, hi=40):
    """Counts and sizes: small integers (huge ones would only measure memory), plus every kind of junk."""
    return st.one_of(st.integers(lo, hi), st.sampled_from([2.5, 3.0, math.nan, math.inf, -1.0]), junk())


def arrays():
    """Real arrays of any shape (empty ones included) with NaN/inf among the entries, lists, ragged lists, scalars."""
    return st.one_of(
        hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
                   elements=st.floats(allow_nan=True, allow_infinity=True)),
        hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5),
                   elements=st.floats(-1e3, 1e3)),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=5),
        reals(), junk())


def matrices(n_cols=3):
    """Input matrices for kernels and data: valid (rows of length n_cols), wrong widths, 1-D, 3-D, empty, NaN."""
    return st.one_of(
        hnp.arrays(np.float64, st.tuples(st.integers(0, 4), st.sampled_from([n_cols, n_cols, 1, 0])),
                   elements=st.floats(-3.0, 3.0)),
        hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.just(n_cols)),
                   elements=st.floats(allow_nan=True, allow_infinity=True)),
        hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
                   elements=st.floats(-3.0, 3.0)),
        junk())


# --- domains: True inside, False outside, None at the edge (either outcome is fine) ---------------------------------
def _is_real(v):
    v = by_value(v)                      # NumPy/torch scalars and 0-d arrays by the number they hold
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))


def real_in(lo=None, hi=None, lo_open=False, hi_open=False, huge=1e150):
    def valid(v):
        if not _is_real(v):
            return False
        v = float(v)
        if (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and (v >= hi if hi_open else v > hi)):
            return False
        return None if abs(v) > huge or 0 < abs(v) < 1 / huge else True
    return valid


def int_at_least(lo):
    def valid(v):
        v = by_value(v)
        if isinstance(v, bool):
            return False
        if isinstance(v, numbers.Integral):
            return int(v) >= lo
        if _is_real(v) and float(v) == int(v) and v >= lo:
            return None                  # an integral float: some entry points take it, some refuse
        return False
    return valid


def finite_real_array(v):
    if isinstance(v, (str, bytes, dict)) or v is None or isinstance(by_value(v), bool):
        return False
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return False
    if isinstance(v, (list, tuple)) and any(isinstance(e, bool) for e in np.ravel(np.asarray(v, dtype=object))):
        return None
    if np.iscomplexobj(np.asarray(v)):
        return False
    return bool(np.all(np.isfinite(a))) and (None if a.size and np.max(np.abs(a)) > 1e150 else True)


def probability_array(v):
    ok = finite_real_array(v)
    if ok is False:
        return False
    a = np.asarray(v, dtype=float)
    return bool(np.all((a >= 0) & (a <= 1))) and ok


def seed_ok(v):
    if v is None:
        return True
    return int_at_least(0)(v) is True


def size_ok(v):
    """rvs' size: None (one draw), an integer ≥ 0, or a tuple of them."""
    if v is None:
        return True
    if isinstance(v, tuple):
        return all(int_at_least(0)(n) is True for n in v)
    return int_at_least(0)(v)


def one_of(*allowed):
    return lambda v: isinstance(v, str) and v in allowed


# --- the oracle -------------------------------------------------------------------------------------------------------
def _floats(out):
    """Every float the result holds (arrays, tensors, tuples, lists, dicts, Measures by their support and mean)."""
    from rmtnet.spectra import FreeProduct, FreeSum
    from rmtnet.spectra.measures import Measure
    if isinstance(out, (FreeProduct, FreeSum)):
        return [out.mean()]              # lazy: the bands are solved on demand (test_free judges construction)
    if isinstance(out, Measure):
        return list(out.support()) + [out.mean()]
    if isinstance(out, torch.nn.Module):
        return [p.detach() for p in out.parameters()]
    if isinstance(out, nd.Dataset):
        return [out.x_train, out.x_test]
    if isinstance(out, (tuple, list)):
        return [f for item in out for f in _floats(item)]
    if isinstance(out, dict):
        return [f for item in out.values() for f in _floats(item)]
    if hasattr(out, "to_numpy"):                      # pandas
        return [out.select_dtypes("number").to_numpy(dtype=float)] if hasattr(out, "select_dtypes") else []
    return [out]


def _all_finite(floats):
    for f in floats:
        if isinstance(f, torch.Tensor):
            if f.is_floating_point() and not bool(torch.isfinite(f).all()):
                return False
            continue
        try:
            a = np.asarray(f)
        except Exception:   # noqa: BLE001 - a non-numeric result (a sympy expression) is judged elsewhere
            continue
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            return False
    return True


def check(test, name, arg, call, valid, value):
    """The oracle: see the module docstring. ``arg`` is the name the error message must contain."""
    CASES[test] += 1
    verdict = valid(value)
    try:
        out = call(value)
        floats = _floats(out)             # a lazy result (a law) computes its support and mean here
    except CLEAR as exc:
        message = str(exc)
        named = re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", message)
        assert named, f"{name}({value!r}): {type(exc).__name__} does not name {arg!r}: {message}"
        assert verdict is not True or isinstance(exc, OverflowError), \
            f"{name}: the valid value {value!r} was refused: {type(exc).__name__}: {message}"
        return None
    except Exception as exc:                                    # noqa: BLE001
        pytest.fail(f"{name}({value!r}): unclear error {type(exc).__name__}: {exc}")
    assert verdict is not False, f"{name}: the invalid value {value!r} was accepted, giving {out!r:.200}"
    assert _all_finite(floats), f"{name}({value!r}) returned a non-finite value: {out!r:.300}"
    return out


def check_generated(test, n, name, arg, call, valid, strategy):
    """:func:`check` on ``n`` values drawn from ``strategy`` (10·n under the stress profile): the tables whose
    strategies are built per entry point."""
    @examples(n)
    @given(strategy)
    def run(value):
        check(test, name, arg, call, valid, value)
    run()


# --- laws and their methods -----------------------------------------------------------------------------------------
_LAWS = {}


def law(name):
    if name not in _LAWS:
        _LAWS[name] = {
            "mp": lambda: MarchenkoPastur(0.5, scale=2.0),
            "mp_atom": lambda: MarchenkoPastur(4.0),
            "semicircle": lambda: Semicircle(2.0, loc=1.0),
            "fuss_catalan": lambda: FussCatalan(2),
            "bernoulli": lambda: Bernoulli(0.3),
            "arcsine": lambda: Arcsine(1.0, 3.0),
            "atoms": lambda: PointMasses([-1.0, 0.5, 2.0], [0.25, 0.375, 0.375]),
            "grid": lambda: GridDensity([0.0, 0.5, 2.0, 3.0], [0.0, 0.6, 0.2, 0.0], atoms=([4.0], [0.2]),
                                        normalize=True),
            "product": lambda: free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0)),
        }[name]()
    return _LAWS[name]


LAW_NAMES = ["mp", "mp_atom", "semicircle", "fuss_catalan", "bernoulli", "arcsine", "atoms", "grid", "product"]

def _above(v):
    """x + i for real data (off the axis, where G is finite), anything else as it is."""
    return np.asarray(v, dtype=float) + 1j if finite_real_array(v) is not False else v


METHODS = [
    # (method, argument the message names, call, domain, values)
    ("pdf", "x", lambda m, v: m.pdf(v), finite_real_array, arrays),
    ("cdf", "x", lambda m, v: m.cdf(v), finite_real_array, arrays),
    ("sf", "x", lambda m, v: m.sf(v), finite_real_array, arrays),
    ("ppf", "q", lambda m, v: m.ppf(v), probability_array, arrays),
    ("quantile", "q", lambda m, v: m.quantile(v), probability_array, arrays),
    ("isf", "q", lambda m, v: m.isf(v), probability_array, arrays),
    ("interval", "confidence", lambda m, v: m.interval(v), probability_array, scalars),
    ("moment", "k", lambda m, v: m.moment(v), int_at_least(0),
     lambda: st.one_of(st.integers(-5, 60), st.sampled_from([10 ** 6, 2 ** 40, 3.0, 2.5, math.nan]), junk())),
    ("rvs.size", "size", lambda m, v: m.rvs(v, rng=1), size_ok, lambda: small_ints(-3, 50)),
    ("rvs.rng", "rng", lambda m, v: m.rvs(3, rng=v), seed_ok,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    ("rvs.seed", "seed", lambda m, v: m.rvs(3, seed=v), seed_ok,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    ("cauchy", "z", lambda m, v: m.cauchy(_above(v)), finite_real_array, arrays),
    ("dilate", "a", lambda m, v: m.dilate(v), lambda v: real_in()(v) and (None if v == 0 else True), scalars),
    ("shift", "b", lambda m, v: m.shift(v), real_in(), scalars),
    ("expect.lb", "lb", lambda m, v: m.expect(np.cos, lb=v),
     lambda v: True if v is None else (None if _is_real(v) else False), scalars),
    ("cdf_above.lo", "lo", lambda m, v: m.cdf_above(m.support()[1], v),
     lambda v: None if _is_real(v) else False, scalars),
]


@pytest.mark.parametrize("law_name", LAW_NAMES)
@pytest.mark.parametrize("method, arg, call, valid, values", METHODS, ids=[m[0] for m in METHODS])
def test_measure_methods(law_name, method, arg, call, valid, values):
    """Each method of each kind of law, 8 cases apiece (9 laws × 16 methods × 8 = 1152)."""
    mu = law(law_name)

    @examples(8)
    @given(values())
    def run(value):
        check("measure_methods", f"{law_name}.{method}", arg, lambda v: call(mu, v), valid, value)
    run()


@pytest.mark.parametrize("law_name", ["mp", "mp_atom", "bernoulli", "fuss_catalan"])
@examples(25)
@given(w=st.one_of(reals(), junk(), st.complex_numbers(allow_nan=True, allow_infinity=True)))
def test_s_transform(law_name, w):
    """S(w): finite, or a ValueError naming w at a pole or off the domain (4 laws × 25 cases)."""
    check("s_transform", f"{law_name}.s_transform", "w", law(law_name).s_transform,
          lambda v: None if (isinstance(v, numbers.Number) and not isinstance(v, bool)) or finite_real_array(v)
          else False, w)


CONSTRUCTORS = [
    ("MarchenkoPastur.ratio", "ratio", lambda v: MarchenkoPastur(v), real_in(0, lo_open=True)),
    ("MarchenkoPastur.scale", "scale", lambda v: MarchenkoPastur(0.5, scale=v), real_in(0, lo_open=True)),
    ("Semicircle.var", "var", lambda v: Semicircle(v), real_in(0, lo_open=True)),
    ("Semicircle.loc", "loc", lambda v: Semicircle(1.0, loc=v), real_in(huge=1e15)),   # band 4 wide: a float step
    ("FussCatalan.s", "s", lambda v: FussCatalan(v), lambda v: int_at_least(1)(v) and (None if v > 50 else True)),
    ("FussCatalan.scale", "scale", lambda v: FussCatalan(2, scale=v), real_in(0, lo_open=True)),
    ("Bernoulli.p", "p", lambda v: Bernoulli(v), real_in(0, 1)),
    ("Arcsine.lo", "lo", lambda v: Arcsine(v, 2.0), lambda v: real_in(hi=2.0, hi_open=True)(v)),
    ("Arcsine.hi", "hi", lambda v: Arcsine(0.0, v), lambda v: real_in(lo=0.0, lo_open=True)(v)),
    ("PointMasses.locations", "locations", lambda v: PointMasses(v, [0.5, 0.5]),
     lambda v: finite_real_array(v) and np.size(v) == 2 and (None if np.ndim(v) > 1 else True)),
    ("PointMasses.masses", "masses", lambda v: PointMasses([0.0, 1.0], v),
     lambda v: (finite_real_array(v) is not False and np.size(v) == 2 and np.ndim(v) <= 1
                and bool(np.all(np.asarray(v, dtype=float) >= 0))
                and abs(float(np.sum(np.asarray(v, dtype=float))) - 1) < 1e-9) or False),
    ("Empirical.samples", "samples", lambda v: Empirical(v),
     lambda v: finite_real_array(v) and np.size(v) > 0),
    ("GridDensity.x", "x", lambda v: GridDensity(v, [0.0, 1.0, 0.0], normalize=True), lambda v: None),
    ("GridDensity.density", "density", lambda v: GridDensity([0.0, 1.0, 2.0], v, normalize=True), lambda v: None),
    ("Mixture.weights", "weights", lambda v: Mixture([Bernoulli(0.5), Semicircle()], v),
     lambda v: None if finite_real_array(v) is not False else False),
    ("Affine.a", "a", lambda v: Affine(Semicircle(), v, 0.0), lambda v: real_in()(v) and (None if v == 0 else True)),
    ("Affine.b", "b", lambda v: Affine(Semicircle(), 1.0, v), real_in()),
    ("gaussian_pushforward.q", "q", lambda v: gaussian_pushforward(np.tanh, v), real_in(0, lo_open=True, huge=1e6)),
]


@pytest.mark.parametrize("name, arg, call, valid", CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
@examples(30)
@given(value=scalars() | arrays())
def test_constructors(name, arg, call, valid, value):
    """Each parameter of each law's constructor (18 × 30 cases); a law built must have a finite support and mean."""
    check("constructors", name, arg, call, valid, value)


# --- free convolutions -------------------------------------------------------------------------------------------------
FREE = [
    ("free_mult_power.t", "t", lambda v: free_mult_power(Bernoulli(0.5), v), real_in(1.0)),
    ("free_add_power.t", "t", lambda v: free_add_power(Semicircle(), v), real_in(1.0)),
    ("free_mult.measures", "measures[1]", lambda v: free_mult(MarchenkoPastur(0.5), v), lambda v: False),
    ("free_add.measures", "measures[1]", lambda v: free_add(Semicircle(), v), lambda v: False),
    ("free_mult_power.mu", "mu", lambda v: free_mult_power(v, 2), lambda v: False),
    ("free_mult.tol", "tol", lambda v: free_mult(MarchenkoPastur(0.5), MarchenkoPastur(0.3), tol=v),
     real_in(0, 1, lo_open=True, hi_open=True)),
    ("free_mult.max_iter", "max_iter", lambda v: free_mult(MarchenkoPastur(0.5), MarchenkoPastur(0.3), max_iter=v),
     lambda v: int_at_least(1)(v) is True or (False if int_at_least(1)(v) is False else None)),
]


@pytest.mark.parametrize("name, arg, call, valid", FREE, ids=[c[0] for c in FREE])
@examples(20)
@given(value=scalars())
def test_free(name, arg, call, valid, value):
    """⊠ and ⊞: exponents, factors and the solver's settings (7 × 20 cases)."""
    check("free", name, arg, call, valid, value)


# --- symbolic series -----------------------------------------------------------------------------------------------
SYMBOLIC = [
    ("bernoulli_s_transform.p", "p", lambda v: symbolic.bernoulli_s_transform(v), real_in(0, 1, lo_open=True)),
    ("mp_s_transform.ratio", "ratio", lambda v: symbolic.mp_s_transform(v, 1), real_in(0, lo_open=True)),
    ("mp_s_transform.scale", "scale", lambda v: symbolic.mp_s_transform(1, v), real_in(0, lo_open=True)),
    ("narayana_moments.K", "K", lambda v: symbolic.narayana_moments(1, v),
     lambda v: int_at_least(0)(v) if not (isinstance(v, numbers.Integral) and v > 6) else None),
    ("fuss_catalan_moments.s", "s", lambda v: symbolic.fuss_catalan_moments(v, 3), real_in(1)),
    ("free_mult_moments.K", "K", lambda v: symbolic.free_mult_moments(symbolic.mp_s_transform(), K=v),
     lambda v: int_at_least(0)(v) if not (isinstance(v, numbers.Integral) and v > 6) else None),
    ("free_cumulants.moments", "moments", lambda v: symbolic.free_cumulants(v), lambda v: None),
]


@pytest.mark.parametrize("name, arg, call, valid", SYMBOLIC, ids=[c[0] for c in SYMBOLIC])
@examples(20)
@given(value=st.one_of(bounded(), st.integers(-3, 6)))
def test_symbolic(name, arg, call, valid, value):
    """SymPy's exact series refuse parameters outside their laws' domains (7 × 20 cases); a result holds no
    ``zoo``/``nan``."""
    import sympy as sp

    def exact(v):
        out = call(v)
        items = out if isinstance(out, (list, tuple)) else [out]
        for e in items:
            assert not sp.sympify(e).has(sp.zoo, sp.nan, sp.oo, -sp.oo), f"{name}({v!r}) gave {e}"
        return None
    check("symbolic", name, arg, exact, valid, value)


# --- Monte Carlo ---------------------------------------------------------------------------------------------------
NET = network.mlp(2, 8, sigma_w=1.2, activation="tanh")


def is_flag(v):
    """A ``progress`` argument's domain: True or False (Python's or NumPy's bool)."""
    return isinstance(v, (bool, np.bool_))


def flags():
    return st.one_of(st.booleans(), scalars())


CK_NET = network.mlp(3, 8, ratios=[1.0, 1.0, 1 / 8], sigma_w=1.2, activation="tanh")    # NET's layers and a read-out

MONTECARLO = [
    ("wishart_eigs.n", "n", lambda v: wishart_eigs(v, 5, seed=0), int_at_least(1), small_ints),
    ("wishart_eigs.m", "m", lambda v: wishart_eigs(4, v, seed=0), int_at_least(1), small_ints),
    ("wishart_eigs.seed", "seed", lambda v: wishart_eigs(3, 4, seed=v), seed_ok, scalars),
    ("ginibre_product_eigs.s", "s", lambda v: ginibre_product_eigs(4, v, seed=0), int_at_least(1), small_ints),
    ("free_product_eigs.diagonals", "diagonals", lambda v: free_product_eigs([np.ones(3), v], seed=0),
     lambda v: finite_real_array(v) and np.size(v) == 3 and (None if np.ndim(v) > 1 else True), arrays),
    ("sample_jacobian_eigs.n_samples", "n_samples", lambda v: montecarlo.sample_jacobian_eigs(NET, n_samples=v, seed=0),
     int_at_least(1), lambda: small_ints(-2, 3)),
    ("sample_jacobian_eigs.width", "width", lambda v: montecarlo.sample_jacobian_eigs(NET, width=v, seed=0),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 12)),
    ("sample_jacobian_eigs.net", "net", lambda v: montecarlo.sample_jacobian_eigs(v, seed=0), lambda v: False,
     scalars),
    ("sample_ck_eigs.n_data", "n_data", lambda v: montecarlo.sample_ck_eigs(CK_NET, v, seed=0), int_at_least(1),
     lambda: small_ints(-2, 12)),
    ("sample_jacobian_eigs.progress", "progress", lambda v: montecarlo.sample_jacobian_eigs(NET, seed=0, progress=v),
     is_flag, flags),
    ("sample_fisher_eigs.progress", "progress", lambda v: montecarlo.sample_fisher_eigs(NET, seed=0, progress=v),
     is_flag, flags),
    ("sample_ck_eigs.progress", "progress", lambda v: montecarlo.sample_ck_eigs(CK_NET, 3, seed=0, progress=v),
     is_flag, flags),
    ("sample_nngp_kernel.progress", "progress",
     lambda v: montecarlo.sample_nngp_kernel(NET, np.eye(2, 8), seed=0, progress=v), is_flag, flags),
    ("ginibre_product_eigs.progress", "progress", lambda v: ginibre_product_eigs(4, 2, seed=0, progress=v), is_flag,
     flags),
    ("free_product_eigs.progress", "progress", lambda v: free_product_eigs([np.ones(3)] * 2, seed=0, progress=v),
     is_flag, flags),
]


@pytest.mark.parametrize("name, arg, call, valid, values", MONTECARLO, ids=[c[0] for c in MONTECARLO])
def test_montecarlo(name, arg, call, valid, values):
    """Samplers of random matrices and networks (15 × 20 cases): finite eigenvalues or a named refusal."""
    check_generated("montecarlo", 20, name, arg, call, valid, values())


# --- kernels and network descriptions --------------------------------------------------------------------------------
KNET = network.mlp(2, 3, sigma_w=1.3, sigma_b=0.1, activation="relu")
XS = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0], [0.0, 0.3, 1.0]])
YS = np.array([[1.0], [0.0], [-1.0]])


def _matrix_ok(v, n_cols=3, rows=None):
    ok = finite_real_array(v)
    if ok is False or np.ndim(v) != 2 or np.shape(v)[1] != n_cols or np.shape(v)[0] == 0:
        return False
    if rows is not None and np.shape(v)[0] != rows:
        return False
    return ok


def _any_width(v):
    """Inputs of the NNGP/NTK kernels: any n₀ ≥ 1 (the widths drop out of the limit), entries up to 1e75."""
    if finite_real_array(v) is False or np.ndim(v) != 2 or 0 in np.shape(v):
        return False
    return bool(np.max(np.abs(v)) <= 1e75) and None


def _second_set(v):
    """x2 of the kernels beside x1 = XS: None, or any rows of XS's input dimension n₀ = 3 (as :func:`_any_width`)."""
    if v is None:
        return True
    ok = _any_width(v)
    return False if ok is False or np.shape(v)[1] != 3 else ok


KERNELS = [
    ("nngp_kernel.x1", "x1", lambda v: kernels.nngp_kernel(KNET, v), _any_width, matrices),
    ("ntk_kernel.x1", "x1", lambda v: kernels.ntk_kernel(KNET, v), _any_width, matrices),
    ("nngp_kernel.x2", "x2", lambda v: kernels.nngp_kernel(KNET, XS, v), _second_set, matrices),
    ("ntk_kernel.x2", "x2", lambda v: kernels.ntk_kernel(KNET, XS, v), _second_set, matrices),
    ("ntk_kernel.x2 standard", "x2", lambda v: kernels.ntk_kernel(KNET, XS, v, parameterization="standard"),
     _second_set, matrices),
    ("ntk_kernel.net", "net", lambda v: kernels.ntk_kernel(v, XS), lambda v: False, scalars),
    ("ntk_kernel.parameterization", "parameterization", lambda v: kernels.ntk_kernel(KNET, XS, parameterization=v),
     one_of("ntk", "standard"), lambda: st.one_of(st.sampled_from(["ntk", "standard", "NTK", ""]), scalars())),
    ("ntk_predict.X_test", "X_test", lambda v: predict.ntk_predict(KNET, XS, YS, v, t=1.0),
     lambda v: _matrix_ok(v) and None, matrices),
    ("ntk_predict.Y_train", "Y_train", lambda v: predict.ntk_predict(KNET, XS, v, XS[:2], t=1.0),
     lambda v: None if finite_real_array(v) is not False and np.shape(v)[:1] == (3,) else False,
     lambda: st.one_of(matrices(1), arrays())),
    ("ntk_predict.t", "t", lambda v: predict.ntk_predict(KNET, XS, YS, XS[:2], t=v),
     lambda v: True if v is None else real_in(0)(v), scalars),
    ("ntk_predict.learning_rate", "learning_rate", lambda v: predict.ntk_predict(KNET, XS, YS, XS[:2], t=1.0,
                                                                                 learning_rate=v),
     real_in(0, lo_open=True), scalars),
    ("ntk_predict.diag_reg", "diag_reg", lambda v: predict.ntk_predict(KNET, XS, YS, XS[:2], diag_reg=v),
     real_in(0), scalars),
    ("ntk_predict.steps", "steps", lambda v: predict.ntk_predict(KNET, XS, YS, XS[:2], steps=v),
     lambda v: True if v is None else int_at_least(0)(v), lambda: small_ints(-3, 100)),
    ("ntk_predict.X_train", "X_train", lambda v: predict.ntk_predict(KNET, v, YS, XS[:2], t=1.0),
     lambda v: _matrix_ok(v, rows=3) and None, matrices),
    ("mlp.depth", "depth", lambda v: network.mlp(v, 10, sigma_w=1.0), lambda v: int_at_least(1)(v) is True or
     (False if int_at_least(1)(v) is False else None), lambda: small_ints(-2, 30)),
    ("mlp.width", "width", lambda v: network.mlp(2, v, sigma_w=1.0), lambda v: int_at_least(1)(v) is True or
     (False if int_at_least(1)(v) is False else None), lambda: small_ints(-2, 30)),
    ("mlp.sigma_w", "sigma_w", lambda v: network.mlp(2, 10, sigma_w=v, activation="relu"),
     lambda v: True if v is None else real_in(0, lo_open=True, huge=1e100)(v), scalars),     # None: the critical σ_w
    ("mlp.sigma_b", "sigma_b", lambda v: network.mlp(2, 10, sigma_b=v, activation="relu", sigma_w=1.0),
     real_in(0, huge=1e100), scalars),
    ("mlp.q0", "q0", lambda v: network.mlp(2, 10, q0=v, activation="tanh", sigma_w=1.0),
     lambda v: True if isinstance(v, str) and v == "fixed_point" else real_in(0, lo_open=True, huge=1e100)(v),
     lambda: st.one_of(st.just("fixed_point"), scalars())),
    ("mlp.activation", "activation", lambda v: network.mlp(2, 10, activation=v, sigma_w=1.0),
     lambda v: isinstance(v, str) and v in ("linear", "relu", "hard_tanh", "erf", "tanh"),
     lambda: st.one_of(st.sampled_from(["relu", "tanh", "sigmoid", "RELU"]), scalars())),
    ("mlp.weights", "weights", lambda v: network.mlp(2, 10, weights=v, sigma_w=1.0), one_of("gaussian", "orthogonal"),
     lambda: st.one_of(st.sampled_from(["gaussian", "orthogonal", "haar"]), scalars())),
    ("ks_distance.samples", "samples", lambda v: plot.ks_distance(MarchenkoPastur(0.5), v),
     lambda v: finite_real_array(v) and np.size(v) > 0, arrays),
    ("ks_distance.atom_rtol", "atom_rtol", lambda v: plot.ks_distance(MarchenkoPastur(4.0), [0.0, 1.0, 2.0],
                                                                      atom_rtol=v), real_in(0), scalars),
    ("ks_distance.floor", "floor", lambda v: plot.ks_distance(MarchenkoPastur(0.5), [0.3, 1.0, 2.0], floor=v),
     lambda v: real_in(0, 0.3)(v) if _is_real(v) and float(v) <= 0.3 else (None if _is_real(v) and v > 0 else
                                                                         False), scalars),
    ("ks_distance.law", "law", lambda v: plot.ks_distance(v, [1.0, 2.0]), lambda v: False, scalars),
    ("figures.caption.fontsize", "fontsize", lambda v: _caption(fontsize=v), real_in(0, lo_open=True, huge=1e3),
     scalars),
    ("figures.caption.margin", "margin", lambda v: _caption(margin=v), real_in(0, 0.5, hi_open=True), scalars),
    ("figures.caption.pad", "pad", lambda v: _caption(pad=v), real_in(0, huge=1e3), scalars),
    ("figures.caption.text", "text", lambda v: _caption(text=v), lambda v: isinstance(v, str),
     lambda: st.one_of(st.sampled_from(["", "one line", "two\nparagraphs " * 20]), scalars())),
    ("figures.log_ticks.axis", "axis", lambda v: _log_ticks(axis=v), one_of("x", "y"),
     lambda: st.one_of(st.sampled_from(["x", "y", "z", "X"]), scalars())),
    ("figures.log_ticks.max_ticks", "max_ticks", lambda v: _log_ticks(max_ticks=v), int_at_least(1),
     lambda: small_ints(-2, 50)),
]


def _caption(text="A caption of a few words.", **kw):
    """figures.caption on a 1-inch figure (margins below half an inch)."""
    from rmtnet import figures
    return figures.caption(_figure(), text, **kw).get_text()


def _log_ticks(**kw):
    """figures.log_ticks on a panel with log axes over 0.8 … 4.3 and 100 … 600."""
    from rmtnet import figures
    fig = _figure()
    ax = fig.axes[0]
    ax.set(yscale="log", ylim=(0.8, 4.3), xscale="log", xlim=(100, 600))
    return figures.log_ticks(ax, **kw)


@pytest.mark.parametrize("name, arg, call, valid, values", KERNELS, ids=[c[0] for c in KERNELS])
def test_kernels_arch_plot(name, arg, call, valid, values):
    """Kernels (NNGP, NTK, trained-ensemble prediction), network descriptions, the KS distance and the figure helpers
    caption and log_ticks (31 × 20 cases)."""
    check_generated("kernels_arch_plot", 20, name, arg, call, valid, values())


# --- mean field, transforms, Mixer sizes, Lanczos -----------------------------------------------------------------
from rmtnet.spectra import meanfield, mixer, monarch, transforms  # noqa: E402
from rmtnet.spectra.sampling.lanczos import slq  # noqa: E402

SPD = np.diag([1.0, 2.0, 3.0, 4.0])
ERF_CRITICAL = meanfield.critical_sigma_w("erf", 0.1)          # σ_w on the critical line of erf at σ_b = 0.1: 1.18


def _bracket_ok(v, root):
    """A bracket (lo, hi) of σ_w: 0 < lo < hi (finite reals) with the root inside; at the edge beyond 1e150."""
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__len__") or len(v) != 2:
        return False
    lo, hi = v
    if not (_is_real(lo) and _is_real(hi) and 0 < lo < hi):
        return False
    if hi > 1e150 or lo < 1e-150:
        return None
    return bool(lo < root < hi) or (None if min(abs(lo - root), abs(hi - root)) < 1e-9 else False)

MORE = [
    ("q_star.sigma_w", "sigma_w", lambda v: meanfield.q_star("tanh", v, 0.1), real_in(0, huge=1e6),
     bounded),
    ("q_star.q0", "q0", lambda v: meanfield.q_star("tanh", 1.2, 0.1, q0=v), real_in(0, lo_open=True, huge=1e6),
     bounded),
    ("chi.q", "q", lambda v: meanfield.chi("erf", 1.0, q=v), lambda v: True if v is None else real_in(0, huge=1e6)(v),
     bounded),
    ("activation.spec", "activation", lambda v: activations.activation(v), lambda v: None if callable(v) else (
        isinstance(v, str) and v in ("linear", "relu", "hard_tanh", "erf", "tanh")),
     lambda: st.one_of(st.sampled_from(["relu", "sigmoid", "Tanh"]), scalars())),
    ("m_inverse.w", "w", lambda v: transforms.m_inverse(MarchenkoPastur(0.5), v),
     lambda v: False if finite_real_array(v) is False and not isinstance(v, complex) else None, arrays),
    ("connections.gamma", "gamma", lambda v: mixer.connections(8, 8, gamma=v), real_in(0, lo_open=True),
     scalars),
    ("optimal_tokens_channels.omega", "omega", lambda v: mixer.optimal_tokens_channels(v),
     real_in(0, lo_open=True), scalars),
    ("slq.n_steps", "n_steps", lambda v: slq(SPD, n_steps=v, n_probes=2, seed=0),
     lambda v: int_at_least(1)(v) is True and v <= 4 or (False if int_at_least(1)(v) is False else None),
     lambda: small_ints(-2, 8)),
    ("slq.operator", "operator", lambda v: slq(v, n_steps=1, n_probes=2, seed=0), lambda v: None, matrices),
    ("monarch_gram_law.depth", "depth", lambda v: monarch.monarch_gram_law(v), int_at_least(1),
     lambda: small_ints(-2, 6)),
    ("monarch_gram_law.sigma_w", "sigma_w", lambda v: monarch.monarch_gram_law(2, sigma_w=v),
     lambda v: real_in(0, lo_open=True, huge=1e30)(v), scalars),
    ("dft_monarch_blocks.b", "b", lambda v: monarch.dft_monarch_blocks(v), int_at_least(1), lambda: small_ints(-2, 12)),
    ("chi.sigma_w", "sigma_w", lambda v: meanfield.chi("erf", v, 0.1), real_in(0), scalars),
    ("chi.sigma_b", "sigma_b", lambda v: meanfield.chi("erf", 1.2, v), real_in(0), scalars),
    ("critical_sigma_w.sigma_b", "sigma_b", lambda v: meanfield.critical_sigma_w("erf", v),
     lambda v: real_in(0)(v) and (None if v > 100 else True), scalars),          # σ* ≤ 20 (the bracket) up to σ_b = 100
    ("critical_sigma_w.bracket", "bracket", lambda v: meanfield.critical_sigma_w("erf", 0.1, bracket=v),
     lambda v: _bracket_ok(v, ERF_CRITICAL), lambda: st.one_of(
         st.tuples(reals(), reals()), st.sampled_from([(0.05, 20.0), (0.5, 2.0), (2.0, 0.5), (2.0, 3.0), [0.5, 2.0],
                                                       (0.5, 1.0, 2.0), (0.5, math.nan), "ab", (1e-300, 1e300)]),
         scalars())),
    ("critical_sigma_w.activation", "activation", lambda v: meanfield.critical_sigma_w(v, 0.1),
     lambda v: isinstance(v, str) and v in ("linear", "relu", "hard_tanh", "erf", "tanh"),
     lambda: st.one_of(st.sampled_from(["linear", "relu", "hard_tanh", "erf", "tanh", "sigmoid"]), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", MORE, ids=[c[0] for c in MORE])
def test_meanfield_transforms_mixer_lanczos(name, arg, call, valid, values):
    """Mean-field maps, M⁻¹, the Mixer's size formulas, the Monarch law, SLQ (17 × 15 cases; χ and the critical line
    with erf, whose expectations have closed forms: with tanh each case is a root search over quadratures, up to
    seconds)."""
    check_generated("meanfield_transforms_mixer_lanczos", 15, name, arg, call, valid, values())


# --- the NTK and Fisher laws and their Monte Carlo -----------------------------------------------------------------
from rmtnet.spectra import fisher, ntk  # noqa: E402



def _fw(hidden, width, ratios=None, **kw):
    """Fan & Wang's network as a description: ``hidden`` layers (widths ``width`` or by ``ratios``) and the
    read-out to one output, its last weight matrix."""
    ratios = [1.0] * hidden if ratios is None else ratios
    return network.mlp(hidden + 1, width, ratios=list(ratios) + [1 / (width * np.prod(ratios))],
                       **{"sigma_w": 1.0, **kw})


FW = _fw(1, 20, activation="erf")                        # Fan & Wang's setting: Gaussian weights, σ_w = 1, σ_b = 0
FW40 = _fw(1, 40, activation="erf")                      # n_data ≤ 40 at γ = n_data/40 ≤ 1
FW4 = _fw(1, 4, activation="erf")                        # d₀ = 4: sample_ntk's X has shape (4, n_data)
FAN_WANG_NETS = [FW, _fw(2, 12, activation="relu"), _fw(1, 20, activation="tanh"),
                 _fw(1, 20, activation="linear"), _fw(1, 10, ratios=[2.0], activation="erf"),
                 _fw(1, 20, activation="relu", last_activation=False),
                 _fw(1, 8, activation="linear")]                 # n_data = 10 > d₀ = 8: an atom at 0 (rank d₀)
OTHER_NETS = [_fw(1, 20, sigma_w=1.5), _fw(1, 20, weights="orthogonal"), _fw(1, 20, sigma_b=0.1),
              network.mlp(1, 20, sigma_w=1.0),                      # the read-out alone: no hidden layer
              network.mlp(2, 10, ratios=[1.0, 2.0], sigma_w=1.2, activation="linear")]
FL = network.mlp(2, 10, sigma_w=1.2, activation="linear")  # Fisher laws: square nets whose levels are cheap to tabulate
FT = network.mlp(2, 10, sigma_w=1.2, activation="tanh")
ZERO_INPUT = network.mlp(1, 10, sigma_w=1.2, activation="relu")      # ReLU's ordered phase: q0 = q* = 0, the law δ₀
FISHER_NETS = [FL, ZERO_INPUT, network.mlp(1, 10, sigma_w=1.2, activation="relu", weights="orthogonal", q0=1.0),
               network.mlp(2, 10, sigma_w=1.4, sigma_b=0.1, activation="relu", q0=1.0),
               network.mlp(3, 10, activation="linear", last_activation=False, q0=2.0)]


def nets(*families):
    """Network descriptions, valid ones from ``families`` and every other kind of value."""
    return lambda: st.one_of(st.sampled_from([n for f in families for n in f]), scalars())


def member(*allowed):
    return lambda v: any(v is a for a in allowed)


def moment_count():
    """K, the number of moments: small, huge (their values leave float64: OverflowError naming K), non-integers."""
    return st.one_of(st.integers(-3, 40), st.sampled_from([10 ** 6, 2 ** 40, 3.0, 2.5, math.nan]), junk())


def input_laws():
    return st.one_of(st.sampled_from([None, MarchenkoPastur(0.5), MarchenkoPastur(2.0), Bernoulli(0.3),
                                      PointMasses([0.5, 1.0, 2.0], [0.25, 0.5, 0.25]), Semicircle(1.0, loc=3.0),
                                      Semicircle(1.0), Empirical([-1.0, 1.0])]), scalars())


def _gram_law(v):
    """input_law: None or a law on [0, ∞) (the law of a Gram matrix)."""
    if v is None:
        return True
    from rmtnet.spectra.measures import Measure
    return isinstance(v, Measure) and v.hull()[0] >= 0


def _columns(v, rows=4, cols=3):
    """sample_ntk's X: None (drawn) or a finite (d₀, n_data) array."""
    if v is None:
        return True
    ok = finite_real_array(v)
    return ok if ok is not False and np.shape(v) == (rows, cols) else False


def _sample(net, n_data=8, **kw):
    return montecarlo.sample_ntk_eigs(net, n_data, **{"seed": 0, **kw})


def _positive_q0(v):
    return True if v is None else real_in(0, lo_open=True, huge=1e100)(v)


NTK = [
    ("ntk_coefficients.net", "net", lambda v: ntk.ntk_coefficients(v, 10), member(*FAN_WANG_NETS),
     nets(FAN_WANG_NETS, OTHER_NETS)),
    ("ntk_coefficients.n_data", "n_data", lambda v: ntk.ntk_coefficients(FW, v), int_at_least(1), small_ints),
    ("ntk_moments.n_data", "n_data", lambda v: ntk.ntk_moments(FW, v), int_at_least(1), small_ints),
    ("ntk_moments.K", "K", lambda v: ntk.ntk_moments(FW, 10, K=v), int_at_least(1), moment_count),
    ("ntk_moments.input_law", "input_law", lambda v: ntk.ntk_moments(FW, 10, input_law=v), _gram_law, input_laws),
    ("ntk_moments.net", "net", lambda v: ntk.ntk_moments(v, 10), member(*FAN_WANG_NETS),
     nets(FAN_WANG_NETS, OTHER_NETS)),
    ("ntk_factor_variance.net", "net", ntk.ntk_factor_variance, member(*FAN_WANG_NETS),
     nets(FAN_WANG_NETS, OTHER_NETS)),
    ("sample_ntk_eigs.net", "net", lambda v: _sample(v), member(*FAN_WANG_NETS), nets(FAN_WANG_NETS, OTHER_NETS)),
    ("sample_ntk_eigs.n_data", "n_data", lambda v: _sample(FW, v), int_at_least(1), small_ints),
    ("sample_ntk_eigs.width", "width", lambda v: _sample(FW, width=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 80)),
    ("sample_ntk_eigs.n_samples", "n_samples", lambda v: _sample(FW, n_samples=v), int_at_least(1),
     lambda: small_ints(-2, 4)),
    ("sample_ntk_eigs.seed", "seed", lambda v: _sample(FW, seed=v), seed_ok,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    ("sample_ntk_eigs.X", "X", lambda v: _sample(FW4, 3, X=v), _columns,
     lambda: st.one_of(matrices(3), hnp.arrays(np.float64, (4, 3), elements=st.floats(-1e200, 1e200)))),
    ("sample_ntk_eigs.readout", "readout", lambda v: _sample(FW, readout=v), one_of("gaussian", "sphere"),
     lambda: st.one_of(st.sampled_from(["gaussian", "sphere", "uniform"]), scalars())),
    ("fisher_law.net", "net", fisher.fisher_law, member(*FISHER_NETS), nets(FISHER_NETS, OTHER_NETS[-1:])),
    ("fisher_law.q0", "q0", lambda v: fisher.fisher_law(FL, q0=v), _positive_q0, scalars),
    ("fisher_law.return_all", "return_all", lambda v: fisher.fisher_law(FL, return_all=v),
     lambda v: isinstance(v, (bool, np.bool_)), lambda: st.one_of(st.sampled_from([True, False, np.True_]),
                                                                    scalars())),
    ("fisher_moments.net", "net", fisher.fisher_moments, member(*FISHER_NETS), nets(FISHER_NETS, OTHER_NETS[-1:])),
    ("fisher_moments.K", "K", lambda v: fisher.fisher_moments(FT, K=v), int_at_least(1), moment_count),
    ("fisher_moments.q0", "q0", lambda v: fisher.fisher_moments(FT, q0=v), _positive_q0, scalars),
    ("critical_learning_rate.net", "net", fisher.critical_learning_rate,
     lambda v: None if v is ZERO_INPUT else member(*FISHER_NETS)(v), nets(FISHER_NETS, OTHER_NETS[-1:])),
    ("critical_learning_rate.q0", "q0", lambda v: fisher.critical_learning_rate(FL, q0=v), _positive_q0, scalars),
]


@pytest.mark.parametrize("name, arg, call, valid, values", NTK, ids=[c[0] for c in NTK])
def test_ntk(name, arg, call, valid, values):
    """The NTK over data (Fan & Wang: coefficients, exact moments, the finite-width factor, the sampled NTK) and the
    one-sample Fisher/NTK law of Hayase & Karakida (22 × 15 cases). critical_learning_rate of a net whose law is δ₀
    (input q0 = 0) is at the edge: 2/λ_max = ∞."""
    check_generated("ntk", 15, name, arg, call, valid, values())


NTK_LAW = [
    ("ntk_law.n_data", "n_data", lambda v: ntk.ntk_law(FW40, v), int_at_least(1), small_ints),
    ("ntk_law.net", "net", lambda v: ntk.ntk_law(v, 10), member(*FAN_WANG_NETS), nets(FAN_WANG_NETS, OTHER_NETS)),
    ("ntk_law.input_law", "input_law", lambda v: ntk.ntk_law(FW, 10, input_law=v), _gram_law, input_laws),
    # finite_width=True, the valid alternative, is a ⊠ and a table (~15 s a case): test_ntk_law covers it
    ("ntk_law.finite_width", "finite_width", lambda v: ntk.ntk_law(FW, 10, finite_width=v),
     lambda v: isinstance(v, (bool, np.bool_)),
     lambda: st.one_of(st.sampled_from([False, np.False_, 0, 1, "yes"]), scalars()).filter(lambda v: v is not True)),
]


@pytest.mark.parametrize("name, arg, call, valid, values", NTK_LAW, ids=[c[0] for c in NTK_LAW])
def test_ntk_law(name, arg, call, valid, values):
    """The NTK's limit law over data (4 × 5 cases: a valid case solves the deterministic equivalents on a grid and
    tabulates the density, ~0.3 s)."""
    check_generated("ntk_law", 5, name, arg, call, valid, values())


# --- freeness, structured operators, Lanczos ------------------------------------------------------------------------
from rmtnet.spectra import operators  # noqa: E402
from rmtnet.studies.freeness import CASES as FREENESS_CASES, WORDS, freeness_test  # noqa: E402
from rmtnet.spectra.sampling.lanczos import top_eigenvalues  # noqa: E402

FNET = network.mlp(3, 4, sigma_w=1.5, sigma_b=0.1, activation="tanh")


def _freeness(net=FNET, **kw):
    """freeness_test at widths 4, 6, 8 with 2 networks each; the table and the slopes (with two distinct widths
    the spread's slope has no residual-based error: sd_slope_se is NaN by design, so it is left out)."""
    result = freeness_test(net, **{"widths": (4, 6, 8), "n_samples": 2, **kw})
    slopes = result.slopes if result.table.N.nunique() > 2 else result.slopes.drop(columns="sd_slope_se")
    return result.table, slopes


def _sequence_of(ok, at_least=1):
    """A non-empty sequence (a lone str counts as one item) whose items all pass ``ok``."""
    def valid(v):
        if isinstance(v, str):
            return ok(v)
        if isinstance(v, (bytes, dict, np.ndarray)) or not isinstance(v, (list, tuple, range)):
            return False
        verdicts = [ok(item) for item in v]
        if len(v) < at_least or False in verdicts:
            return False
        return None if None in verdicts else True
    return valid


def _widths_ok(v):
    if isinstance(v, str):
        return False
    ok = _sequence_of(lambda w: True if isinstance(w, numbers.Integral) and not isinstance(w, bool) and w >= 2
                      else (None if int_at_least(2)(w) is None else False))(v)
    return ok if ok is False or len(set(v)) >= 2 else False


def _words():
    return st.one_of(st.lists(st.sampled_from(list(WORDS) + ["abc", ""]), max_size=3), st.sampled_from(WORDS),
                     scalars())


def _cases():
    return st.one_of(st.lists(st.sampled_from(list(FREENESS_CASES) + ["free"]), max_size=3),
                     st.sampled_from(FREENESS_CASES), scalars())


FREENESS_NETS = [FNET, network.mlp(2, 4, activation="relu", sigma_w=1.0), network.mlp(2, 4, activation="linear"),
                 network.mlp(2, 4, sigma_w=100.0, activation="tanh"), network.mlp(1, 4, sigma_w=1.0),
                 network.mlp(2, 4, ratios=[1.0, 2.0], sigma_w=1.0)]

FREENESS = [
    ("freeness_test.widths", "widths", lambda v: _freeness(widths=v), _widths_ok,
     lambda: st.one_of(st.lists(small_ints(-1, 10), max_size=4), st.sampled_from([(4, 4, 6), (2, 3), range(2, 5)]),
                       scalars())),
    ("freeness_test.n_samples", "n_samples", lambda v: _freeness(n_samples=v), int_at_least(2),
     lambda: small_ints(-2, 6)),
    ("freeness_test.words", "words", lambda v: _freeness(words=v), _sequence_of(lambda w: w in WORDS), _words),
    ("freeness_test.cases", "cases", lambda v: _freeness(cases=v), _sequence_of(lambda c: c in FREENESS_CASES),
     _cases),
    ("freeness_test.control", "control", lambda v: _freeness(control=v), one_of("permutation", "shuffled"),
     lambda: st.one_of(st.sampled_from(["permutation", "shuffled", "haar"]), scalars())),
    ("freeness_test.layer", "layer", lambda v: _freeness(layer=v),
     lambda v: v is None or (int_at_least(2)(v) is True and v <= 3) or (False if int_at_least(2)(v) is False or
                                                                        v > 3 else None), lambda: small_ints(-1, 5)),
    ("freeness_test.seed", "seed", lambda v: _freeness(seed=v), lambda v: int_at_least(0)(v) is True,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    # a linear or saturated activation makes D² constant: every deviation is 0 and no slope exists (named refusal)
    ("freeness_test.net", "net", lambda v: _freeness(v),
     lambda v: True if v is None else (None if any(v is n for n in FREENESS_NETS[:4]) else False),
     nets(FREENESS_NETS)),                               # None: the default net, mlp(depth=2, activation="tanh", …)
]


@pytest.mark.parametrize("name, arg, call, valid, values", FREENESS, ids=[c[0] for c in FREENESS])
def test_freeness(name, arg, call, valid, values):
    """The freeness test's arguments at widths 4–8 (8 × 12 cases): finite tables and slopes, or a named refusal."""
    check_generated("freeness", 12, name, arg, call, valid, values())


MNET = network.mlp(2, 8, sigma_w=1.1, sigma_b=0.1, activation="tanh")
STRUCTURED = operators.mixer_network(MNET, 3, 2, seed=0)


def _gram(structured):
    """The dense JJᵀ of a drawn structured network (m ≤ 144 here)."""
    return structured.jacobian_gram().to_dense()


MONARCH_R, MONARCH_L = np.ones((3, 2, 2)), np.ones((2, 3, 3))


def _monarch_dense(r, l):
    """The dense Monarch matrix of the factors (at most 12 × 12 here)."""
    factors = operators.monarch_factors(r, l)
    M = np.eye(factors[0].n_in)
    for f in factors:
        M = f.to_dense() @ M
    return M


def _stack_ok(v):
    """A finite real 3-d stack of blocks, every side ≥ 1 (bool and text arrays are not numbers)."""
    if not isinstance(v, np.ndarray) or v.dtype.kind not in "fiu":
        return False
    return v.ndim == 3 and min(v.shape) >= 1 and bool(np.all(np.isfinite(v)))


def _monarch_r_ok(v):
    """R's blocks (b, k_out, k_in) fit L = MONARCH_L (k_out = 2 blocks of b × b = 3 × 3)."""
    return _stack_ok(v) and (v.shape[:2] == (3, 2) or False)


def _block_stacks():
    """Stacks of blocks: fitting and unfitting shapes, NaN/inf entries, other ranks, junk."""
    return st.one_of(
        hnp.arrays(np.float64, st.sampled_from([(3, 2, 2), (3, 2, 1), (2, 3, 3), (1, 1, 1), (3, 2, 0), (2, 2)]),
                   elements=st.floats(-3.0, 3.0)),
        hnp.arrays(np.float64, st.just((3, 2, 2)), elements=st.floats(allow_nan=True, allow_infinity=True)),
        arrays())


OPERATORS = [
    ("mixer_network.net", "net", lambda v: _gram(operators.mixer_network(v, 3, 2, seed=0)),
     member(MNET, FL, FT, ZERO_INPUT), nets([MNET, FL, FT, ZERO_INPUT])),
    ("mixer_network.tokens", "tokens", lambda v: _gram(operators.mixer_network(MNET, v, 2, seed=0)), int_at_least(1),
     lambda: small_ints(-2, 12)),
    ("mixer_network.channels", "channels", lambda v: _gram(operators.mixer_network(MNET, 3, v, seed=0)),
     int_at_least(1), lambda: small_ints(-2, 12)),
    ("mixer_network.structure", "structure", lambda v: _gram(operators.mixer_network(MNET, 3, 2, structure=v, seed=0)),
     one_of("kronecker", "permuted", "monarch"),
     lambda: st.one_of(st.sampled_from(["kronecker", "permuted", "monarch", "dense"]), scalars())),
    ("monarch_factors.r", "r", lambda v: _monarch_dense(v, MONARCH_L), _monarch_r_ok, _block_stacks),
    ("monarch_factors.l", "l", lambda v: _monarch_dense(MONARCH_R, v),
     lambda v: _stack_ok(v) and (np.shape(v) == (2, 3, 3) or False), _block_stacks),
    ("BlockDiagonal.blocks", "blocks", lambda v: operators.BlockDiagonal(v).to_dense(), _stack_ok, _block_stacks),
    ("mixer_network.permutations", "permutations",
     lambda v: _gram(operators.mixer_network(MNET, 3, 2, structure="permuted", permutations=v, seed=0)),
     one_of("random", "commutation"), lambda: st.one_of(st.sampled_from(["random", "commutation", "identity"]),
                                                        scalars())),
    ("mixer_network.seed", "seed", lambda v: _gram(operators.mixer_network(MNET, 3, 2, seed=v)), seed_ok,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    ("sparse_network.density", "density", lambda v: _gram(operators.sparse_network(MNET, 3, 2, density=v, seed=0)),
     lambda v: True if v is None else real_in(0, 1, lo_open=True)(v), scalars),
    ("sparse_network.tokens", "tokens", lambda v: _gram(operators.sparse_network(MNET, v, 2, seed=0)),
     int_at_least(1), lambda: small_ints(-2, 12)),
    ("mlp_network.width", "width", lambda v: _gram(operators.mlp_network(MNET, v, seed=0)),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 40)),
    ("jacobian_gram.side", "side", lambda v: STRUCTURED.jacobian_gram(v).to_dense(), one_of("output", "input"),
     lambda: st.one_of(st.sampled_from(["output", "input", "both"]), scalars())),
    ("fisher_dual.qhat", "qhat", lambda v: STRUCTURED.fisher_dual(v).to_dense(), one_of("empirical", "mean_field"),
     lambda: st.one_of(st.sampled_from(["empirical", "mean_field", "exact"]), scalars())),
    ("factor_gram.layer", "layer", lambda v: STRUCTURED.factor_gram(v).to_dense(),
     lambda v: int_at_least(1)(v) and (v <= 2 or False), lambda: small_ints(-2, 4)),
    ("factor_gram.index", "index", lambda v: STRUCTURED.factor_gram(1, v).to_dense(),
     lambda v: int_at_least(0)(v) and (v <= 1 or False), lambda: small_ints(-2, 4)),
    ("slq.n_probes", "n_probes", lambda v: slq(SPD, 2, v, seed=0), int_at_least(1), lambda: small_ints(-2, 8)),
    ("slq.seed", "seed", lambda v: slq(SPD, 2, 2, seed=v), seed_ok, lambda: st.one_of(st.integers(-5, 2 ** 70),
                                                                                     scalars())),
    ("slq.probe", "probe", lambda v: slq(SPD, 2, 2, probe=v, seed=0), one_of("rademacher", "gaussian"),
     lambda: st.one_of(st.sampled_from(["rademacher", "gaussian", "normal"]), scalars())),
    ("slq.reorth", "reorth", lambda v: slq(SPD, 2, 2, reorth=v, seed=0), one_of("full", "none"),
     lambda: st.one_of(st.sampled_from(["full", "none", "partial"]), scalars())),
    ("slq.dim", "dim", lambda v: slq(lambda X: 2.0 * X, 1, 2, dim=v, seed=0), int_at_least(1),
     lambda: small_ints(-2, 12)),
    ("slq.block", "block", lambda v: slq(lambda X: 2.0 * X, 2, 2, dim=3, block=v, seed=0),
     lambda v: isinstance(v, (bool, np.bool_)), lambda: st.one_of(st.sampled_from([True, False]), scalars())),
    ("slq.progress", "progress", lambda v: slq(SPD, 2, 2, seed=0, progress=v), is_flag, flags),
    ("slq.operator.structured", "operator", lambda v: slq(v, 2, 2, seed=0), lambda v: True,
     lambda: st.sampled_from([STRUCTURED.jacobian_gram(), STRUCTURED.fisher_dual(),
                              STRUCTURED.factor_gram(2, 1), STRUCTURED.jacobian_gram().aslinearoperator()])),
    ("top_eigenvalues.k", "k", lambda v: top_eigenvalues(SPD, v), lambda v: int_at_least(1)(v) and (v <= 3 or False),
     lambda: small_ints(-2, 6)),
    ("top_eigenvalues.tol", "tol", lambda v: top_eigenvalues(SPD, 1, tol=v), real_in(0, 1, lo_open=True), scalars),
]


@pytest.mark.parametrize("name, arg, call, valid, values", OPERATORS, ids=[c[0] for c in OPERATORS])
def test_operators_lanczos(name, arg, call, valid, values):
    """Matrix-free Mixer, Monarch, SW-MLP and dense networks (S·C ≤ 144), Monarch factors, their operators, SLQ and
    the top eigenvalues (26 × 15 cases): finite spectra or a named refusal."""
    check_generated("operators_lanczos", 15, name, arg, call, valid, values())


# --- sweeps --------------------------------------------------------------------------------------------------------
def _score(seed, **config):
    return {"v": 1.0}


def _sweep(**kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        args = dict(fn=_score, grid={"a": [1, 2]}, seeds=(0,), store=Path(tmp) / "r.csv", progress=False)
        args.update(kwargs)
        return len(sweep(**args))            # the table echoes the grid's values, NaN included: its size is judged


SWEEP = [
    ("sweep.grid", "grid", lambda v: _sweep(grid=v), lambda v: None),
    ("sweep.grid_value", "grid", lambda v: _sweep(grid={"a": [v]}),
     lambda v: None if v is None or isinstance(v, (str, numbers.Real)) else False),
    ("sweep.seeds", "seeds", lambda v: _sweep(seeds=v), lambda v: None),
    ("sweep.n_jobs", "n_jobs", lambda v: _sweep(n_jobs=v),
     lambda v: v == 1 if isinstance(v, numbers.Integral) and not isinstance(v, bool) and v in (0, 1, -2) else
     (None if isinstance(v, numbers.Integral) and not isinstance(v, bool) and (v >= 1 or v == -1) else False)),
    ("sweep.on_error", "on_error", lambda v: _sweep(on_error=v), one_of("collect", "raise", "skip")),
    ("sweep.fn", "fn", lambda v: _sweep(fn=v), lambda v: False),
    ("sweep.progress", "progress", lambda v: _sweep(progress=v), is_flag),
]


@pytest.mark.parametrize("name, arg, call, valid", SWEEP, ids=[c[0] for c in SWEEP])
@examples(10)
@given(value=st.one_of(scalars(), st.sampled_from([[0, 1], (3,), [[1]], [-1], ["a"], {"a": 1}, {"a": [1]},
                                                   [{"a": 1}], 1, 0, -2])))
def test_sweep(name, arg, call, valid, value):
    """The sweep's arguments (6 × 10 cases); n_jobs > 1 is only judged, never started (it would spawn a pool)."""
    if name == "sweep.n_jobs" and isinstance(value, numbers.Integral) and not isinstance(value, bool) and (value > 1 or
                                                                                                value == -1):
        return
    check("sweep", name, arg, call, valid, value)


# --- torch: layers, models, data -------------------------------------------------------------------------------------
def _tensor_x(v):
    return torch.as_tensor(np.asarray(v, dtype=np.float64)) if finite_real_array(v) is not False or (
        isinstance(v, np.ndarray) and v.dtype.kind == "f") else v


NETS = [
    ("MaskedLinear.sigma_w", "sigma_w", lambda v: nl.MaskedLinear(4, 3, density=0.5, sigma_w=v, seed=0),
     real_in(0, lo_open=True, huge=1e30), scalars),
    ("MaskedLinear.density", "density", lambda v: nl.MaskedLinear(4, 3, density=v, seed=0),
     real_in(0, 1, lo_open=True, huge=1e30), scalars),
    ("MaskedLinear.in_features", "in_features", lambda v: nl.MaskedLinear(v, 3, seed=0), int_at_least(1),
     lambda: small_ints(-2, 12)),
    ("SparseMaskedLinear.sigma_w", "sigma_w", lambda v: nl.SparseMaskedLinear(4, 3, density=0.5, sigma_w=v, seed=0),
     real_in(0, lo_open=True, huge=1e30), scalars),
    ("SparseMaskedLinear.density", "density", lambda v: nl.SparseMaskedLinear(4, 3, density=v, seed=0),
     real_in(0, 1, lo_open=True, huge=1e30), scalars),
    ("TokenMixing.sigma_w", "sigma_w", lambda v: nl.TokenMixing(4, 3, sigma_w=v, seed=0),
     real_in(0, lo_open=True, huge=1e30), scalars),
    ("ChannelMixing.sigma_w", "sigma_w", lambda v: nl.ChannelMixing(4, 3, sigma_w=v, seed=0),
     real_in(0, lo_open=True, huge=1e30), scalars),
    ("MonarchLinear.n_blocks", "n_blocks", lambda v: nl.MonarchLinear(4, 4, v, seed=0),
     lambda v: None if int_at_least(1)(v) is not False else False, lambda: small_ints(-2, 6)),
    ("MLP.sigma_w", "sigma_w", lambda v: nm.MLP([4, 3, 2], sigma_w=v, seed=0), real_in(0, lo_open=True, huge=1e30),
     scalars),
    ("MLP.sigma_b", "sigma_b", lambda v: nm.MLP([4, 3, 2], sigma_b=v, seed=0), real_in(0, huge=1e30), scalars),
    ("MLP.widths", "widths", lambda v: nm.MLP(v, seed=0), lambda v: None,
     lambda: st.one_of(st.lists(small_ints(-1, 5), max_size=4), scalars())),
    ("MLP.activation", "activation", lambda v: nm.MLP([4, 3], activation=v, seed=0), lambda v: None, scalars),
    ("MLPMixer.gamma", "gamma", lambda v: nm.MLPMixer(4, 3, 4, 1, 2, gamma=v, seed=0),
     lambda v: real_in(0, lo_open=True)(v) and None, bounded),
    ("Dataset.x_train", "x_train",
     lambda v: nd.Dataset(_tensor_x(v), torch.zeros(2, 1), torch.zeros(2, 3), torch.zeros(2, 1), None, "t", (3,)),
     lambda v: None if finite_real_array(v) is not False and np.shape(v) == (2, 3) else False,
     lambda: st.one_of(hnp.arrays(np.float64, (2, 3), elements=st.floats(allow_nan=True, allow_infinity=True)),
                       matrices())),
    ("digits.dtype", "dtype", lambda v: nd.digits(dtype=v), lambda v: v in (torch.float32, torch.float64),
     lambda: st.sampled_from([torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.complex64,
                              "float32", None, np.float32, 1])),
    ("digits.seed", "seed", lambda v: nd.digits(seed=v), lambda v: int_at_least(0)(v) is True and v < 2 ** 32, lambda: st.one_of(st.integers(-3, 5), scalars())),
    ("digits.test_fraction", "test_fraction", lambda v: nd.digits(test_fraction=v),
     lambda v: real_in(0.05, 0.95)(v) if _is_real(v) and 0.05 <= v <= 0.95 else
     (None if _is_real(v) and 0 < v < 1 else False), scalars),
    ("spirals.noise", "noise", lambda v: nd.spirals(20, 10, noise=v), real_in(0, huge=1e30), scalars),
    ("classification.name", "name", lambda v: nd.classification(v), lambda v: v == "digits" or False,
     lambda: st.one_of(st.sampled_from(["digits", "cifar100", "MNIST5K", ""]), scalars())),
    ("classification.data_dir", "data_dir", lambda v: nd.classification("digits", data_dir=v),
     lambda v: v is None or False, lambda: st.one_of(st.just(None), st.just("/tmp"), scalars())),
    ("cifar10_path.root", "root", nd.cifar10_path, lambda v: False,        # a path that is not there: the test file
     lambda: st.one_of(st.integers(), st.floats(), st.binary(), st.just(""), st.just("a\0b"), st.just([]))),
    ("teacher_student.seed", "seed", lambda v: nd.teacher_student(5, 3, 2, 4, seed=v),
     lambda v: int_at_least(0)(v) is True and v < 2 ** 63,
     lambda: st.one_of(st.integers(-3, 5), scalars())),
    ("to_patches.patch", "patch", lambda v: nd.to_patches(torch.zeros(2, 1, 4, 4), v),
     lambda v: None if int_at_least(1)(v) is not False else False, lambda: small_ints(-2, 6)),
]


@pytest.mark.parametrize("name, arg, call, valid, values", NETS, ids=[c[0] for c in NETS])
def test_nets(name, arg, call, valid, values):
    """Torch layers, models and data sets (20 × 15 cases): finite parameters and data, or a named refusal. Values
    beyond 1e30 are at the edge: float32 weights of that size overflow in the first products."""
    check_generated("nets", 15, name, arg, call, valid, values())


# --- torch: training, probes, representation similarity -------------------------------------------------------
from rmtnet.nets import probes, similarity, training  # noqa: E402

_g = torch.Generator().manual_seed(0)
_X, _Y = torch.randn(8, 4, generator=_g), torch.randint(0, 2, (8,), generator=_g)
TINY = nd.Dataset(_X, _Y, _X[:4].clone(), _Y[:4].clone(), 2, "tiny", (4,))      # 8 + 4 examples, 4 features, 2 classes


_FRESH = object()


def _train(model=_FRESH, data=TINY, **kw):
    """One epoch of two steps of a 4-3-2 MLP on TINY, in a fresh working directory (checkpoints and metrics written
    there): the metrics table."""
    model = nm.MLP([4, 3, 2], seed=0) if model is _FRESH else model
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            return training.train(model, data, **{"epochs": 1, "batch_size": 4, "progress": False, **kw})
        finally:
            os.chdir(here)


def _file_path(v):
    """A checkpoint or metrics path: None, or a str/PathLike naming a file (not an existing directory)."""
    if v is None:
        return True
    if not isinstance(v, (str, os.PathLike)):
        return False
    return False if str(v) in ("", ".") else (None if str(v).endswith("/") else True)


def _choice_or_callable(*allowed):
    return lambda v: callable(v) or (isinstance(v, str) and v in allowed)


class _Fixed(torch.nn.Module):
    """A model whose output does not depend on its parameters' values: a 4 → 2 map that ignores them."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))

    def forward(self, x):
        return x[:, :2] * (1 + 0 * self.w)


TRAIN_MODELS = [nm.MLP([4, 3, 2], seed=0), nm.MLP([3, 2], seed=0), torch.nn.Linear(4, 2), _Fixed()]

TRAINING = [
    ("train.model", "model", lambda v: _train(v),
     lambda v: True if any(v is m for m in (TRAIN_MODELS[0], TRAIN_MODELS[2], TRAIN_MODELS[3])) else False,
     lambda: st.one_of(st.sampled_from(TRAIN_MODELS), scalars())),
    ("train.data", "data", lambda v: _train(data=v), lambda v: v is TINY,
     lambda: st.one_of(st.just(TINY), scalars())),
    ("train.epochs", "epochs", lambda v: _train(epochs=v), int_at_least(1), lambda: small_ints(-2, 4)),
    ("train.batch_size", "batch_size", lambda v: _train(batch_size=v), int_at_least(1), lambda: small_ints(-2, 12)),
    ("train.lr", "lr", lambda v: _train(lr=v), real_in(0, lo_open=True), scalars),
    ("train.momentum", "momentum", lambda v: _train(momentum=v), real_in(0, 1, hi_open=True), scalars),
    ("train.weight_decay", "weight_decay", lambda v: _train(weight_decay=v), real_in(0), scalars),
    ("train.optimizer", "optimizer", lambda v: _train(optimizer=v), one_of("sgd", "adamw"),
     lambda: st.one_of(st.sampled_from(["sgd", "adamw", "SGD", "adam"]), scalars())),
    ("train.schedule", "schedule", lambda v: _train(schedule=v),
     _choice_or_callable(*training.SCHEDULES),
     lambda: st.one_of(st.sampled_from(list(training.SCHEDULES) + ["linear"]), scalars())),
    ("train.loss", "loss", lambda v: _train(loss=v), lambda v: v is None or _choice_or_callable(*training.LOSSES)(v),
     lambda: st.one_of(st.sampled_from(list(training.LOSSES) + ["l1"]), scalars())),
    ("train.seed", "seed", lambda v: _train(seed=v), lambda v: int_at_least(0)(v) is True and v < 2 ** 63,
     lambda: st.one_of(st.integers(-5, 2 ** 70), scalars())),
    ("train.eval_every", "eval_every", lambda v: _train(epochs=2, eval_every=v), int_at_least(1),
     lambda: small_ints(-2, 4)),
    ("train.dtype", "dtype", lambda v: _train(dtype=v),
     lambda v: v is None or any(v is d for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)),
     lambda: st.one_of(st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64, torch.bool,
                                        torch.complex64, "float32", np.float32]), scalars())),
    ("train.checkpoint", "checkpoint", lambda v: _train(checkpoint=v), _file_path,
     lambda: st.one_of(st.sampled_from(["ck.pt", "sub/ck.pt", Path("ck.pt"), "", ".", "sub/"]), scalars())),
    ("train.metrics", "metrics", lambda v: _train(metrics=v), _file_path,
     lambda: st.one_of(st.sampled_from(["m.csv", "sub/m.csv", Path("m.csv"), "", "."]), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", TRAINING, ids=[c[0] for c in TRAINING])
def test_training(name, arg, call, valid, values):
    """train's arguments on a 4-3-2 MLP and 8 examples (15 × 15 cases): a finite metrics table, or a named refusal;
    a run that diverges (lr or weight_decay far too large) is a DivergenceError, an OverflowError naming them."""
    check_generated("training", 15, name, arg, call, valid, values())


PMODEL = nm.MLP([3, 4, 2], seed=0).double()
PX = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64).reshape(2, 3)
MIXER = nm.MLPMixer(4, 3, 4, 1, 2, seed=0)


def tensors(n_features=3):
    """Inputs of a model taking (n, 3): right, wrong widths and dtypes, empty, NaN, 1-D, tuples, and junk."""
    return st.one_of(
        st.sampled_from([PX, PX.float(), PX[:1], torch.zeros(0, n_features, dtype=torch.float64),
                         torch.zeros(2, n_features + 1, dtype=torch.float64), torch.full((2, n_features), math.nan),
                         torch.zeros(2, n_features, dtype=torch.int64), torch.zeros(n_features, dtype=torch.float64),
                         torch.zeros(2, n_features, dtype=torch.complex64), (PX,), (PX, PX), [PX], ()]),
        scalars())


def _rows_ok(v, batched=True):
    """A (n ≥ 1, 3) float tensor, or a 1-tuple/list of one (unbatched: a (3,) tensor)."""
    t = v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return False
    ok = tuple(t.shape[1:]) == (3,) and t.shape[0] >= 1 if batched else tuple(t.shape) == (3,)
    return ok and bool(torch.isfinite(t).all())


def _weight_ok(v):
    """A finite real matrix (array or tensor; an empty one has no singular values, an empty result); nested lists
    are at the edge (NumPy decides what they hold)."""
    if isinstance(v, torch.Tensor):
        if v.is_complex():
            return False
        v = v.numpy()
    if isinstance(v, np.ndarray):
        return finite_real_array(v) if v.ndim == 2 and v.dtype.kind in "fiu" else False
    return None if isinstance(v, (list, tuple)) and finite_real_array(v) is not False and np.ndim(v) == 2 else False


PROBES = [
    ("empirical_ntk.model", "model", lambda v: probes.empirical_ntk(v, PX), lambda v: v is PMODEL,
     lambda: st.one_of(st.sampled_from([PMODEL, torch.nn.Linear(4, 2)]), scalars())),
    ("empirical_ntk.x1", "x1", lambda v: probes.empirical_ntk(PMODEL, v), _rows_ok, tensors),
    ("empirical_ntk.x2", "x2", lambda v: probes.empirical_ntk(PMODEL, PX, v), lambda v: v is None or _rows_ok(v),
     tensors),
    ("empirical_ntk.method", "method", lambda v: probes.empirical_ntk(PMODEL, PX, method=v),
     one_of("jacobian", "products"), lambda: st.one_of(st.sampled_from(["jacobian", "products", "vjp"]), scalars())),
    ("empirical_ntk.layout", "layout", lambda v: probes.empirical_ntk(PMODEL, PX, layout=v),
     one_of("matrix", "blocks"), lambda: st.one_of(st.sampled_from(["matrix", "blocks", "tensor"]), scalars())),
    ("empirical_ntk.chunk_size", "chunk_size", lambda v: probes.empirical_ntk(PMODEL, PX, chunk_size=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 4)),
    # one example of any shape the model takes: (3,), or (k, 3), whose rows nn.Linear maps alike (at the edge)
    ("jacobian_spectrum.x", "x", lambda v: probes.jacobian_spectrum(PMODEL, v),
     lambda v: _rows_ok(v, False) or (None if _rows_ok(v) else False),
     lambda: st.one_of(st.sampled_from([PX[0], PX[0].float()]), tensors())),
    ("jacobian_spectrum.x.batched", "x", lambda v: probes.jacobian_spectrum(PMODEL, v, batched=True), _rows_ok,
     tensors),
    ("jacobian_spectrum.batched", "batched", lambda v: probes.jacobian_spectrum(PMODEL, PX, batched=v),
     lambda v: isinstance(v, (bool, np.bool_)),          # False: PX is then one (2, 3) example
     lambda: st.one_of(st.sampled_from([True, np.True_, 1]), scalars())),
    ("weight_singular_values.weight", "weight", probes.weight_singular_values, _weight_ok,
     lambda: st.one_of(matrices(3), hnp.arrays(np.float64, (2, 2), elements=st.floats(allow_nan=False,
                                                                                       allow_infinity=False)),
                       st.sampled_from([torch.eye(2), torch.full((2, 2), math.inf), torch.eye(2, dtype=torch.complex64),
                                        torch.zeros(0, 3)]))),
    ("effective_singular_values.model", "model", probes.effective_singular_values,
     lambda v: v is MIXER or v is PMODEL, lambda: st.one_of(st.sampled_from([MIXER, PMODEL]), scalars())),
    ("effective_singular_values.tokens", "tokens", lambda v: probes.effective_singular_values(MIXER, tokens=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 6)),
    ("effective_singular_values.channels", "channels", lambda v: probes.effective_singular_values(MIXER, channels=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 6)),
    ("effective_singular_values.max_dense", "max_dense",
     lambda v: probes.effective_singular_values(torch.nn.Sequential(nl.MonarchLinear(4, 4, 2, seed=0)), max_dense=v),
     lambda v: int_at_least(4)(v) if int_at_least(1)(v) is not False else False,   # below 4: the 4×4 layer refused
     lambda: small_ints(-2, 8)),
]


# --- the spectral audit of (trained) layers, Jacobians and NTKs --------------------------------------------------
from rmtnet.nets import spectral_audit as sa  # noqa: E402

AMODEL = nm.MLP([24, 16, 12], seed=0).double()          # layers of 16 and 12 eigenvalues: every number finite
X_PL = np.exp(np.linspace(0.0, 3.0, 50))                # 50 positive values from 1 to e³
JNET = network.mlp(2, widths=[3, 4, 2], activation="linear", last_activation=False, q0=1.0)
JMODEL = nm.MLP.from_description(JNET, seed=0, dtype=torch.float64)
NNET = network.mlp(2, widths=[3, 6, 1], activation="tanh", last_activation=False, q0=1.0, sigma_w=1.0)
NMODEL = nm.MLP.from_description(NNET, seed=0, dtype=torch.float64)


def _tail_ok(v):
    """≥ 10 finite positive values whose top values are not all equal; huge or tiny ones at the edge."""
    ok = finite_real_array(v)
    if ok is False or isinstance(v, torch.Tensor):
        return False if ok is False else None
    a = np.asarray(v, dtype=float).ravel()
    if a.size < 10 or not a.min() > 0:
        return False
    if np.unique(a[np.argsort(a)][-10:]).size < 2:
        return None                                      # no tail that is not all equal: named refusal or a fit
    return None if (ok is None or a.min() < 1e-150) else True


def _eig_above_edge(v):
    """Squared singular values at or above MP(1)'s edge 4 (λ = 1, s = 1)."""
    ok = finite_real_array(v)
    if ok is False:
        return False
    return bool(np.all(np.asarray(v, dtype=float) >= 4.0)) and ok


AUDIT = [
    ("layer_spectra.model", "model", sa.layer_spectra, lambda v: v is AMODEL,
     lambda: st.one_of(st.just(AMODEL), scalars())),
    ("layer_spectra.sigma_w", "sigma_w", lambda v: sa.layer_spectra(AMODEL, sigma_w=v),
     lambda v: None if isinstance(v, dict) else real_in(0, lo_open=True)(v),          # a dict: per-layer σ_w
     scalars),
    ("layer_spectra.scale", "scale", lambda v: sa.layer_spectra(AMODEL, scale=v), one_of("init", "fit"),
     lambda: st.one_of(st.sampled_from(["init", "fit", "mean"]), scalars())),
    ("layer_spectra.min_tail", "min_tail", lambda v: sa.layer_spectra(AMODEL, min_tail=v), int_at_least(2),
     lambda: small_ints(-2, 40)),
    ("layer_spectra.confidence", "confidence", lambda v: sa.layer_spectra(AMODEL, confidence=v),
     real_in(0, 1, lo_open=True, hi_open=True), bounded),
    ("layer_spectra.mask_draws", "mask_draws", lambda v: sa.layer_spectra(AMODEL, mask_draws=v),
     lambda v: False if isinstance(v, numbers.Integral) and not isinstance(v, bool) and v == 1 else int_at_least(0)(v),
     lambda: small_ints(-2, 6)),
    ("layer_spectra.tokens", "tokens", lambda v: sa.layer_spectra(AMODEL, tokens=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 6)),
    ("layer_law.n_out", "n_out", lambda v: sa.layer_law(v, 5), int_at_least(1), lambda: small_ints(-2, 40)),
    ("layer_law.sigma_w", "sigma_w", lambda v: sa.layer_law(4, 5, v), real_in(0, lo_open=True), scalars),
    ("power_law_fit.x", "x", sa.power_law_fit, _tail_ok,
     lambda: st.one_of(arrays(), st.sampled_from([X_PL, -X_PL, np.ones(20), X_PL[:5], X_PL * 1e200]))),
    ("power_law_fit.min_tail", "min_tail", lambda v: sa.power_law_fit(X_PL, min_tail=v),
     lambda v: int_at_least(2)(v) if int_at_least(2)(v) is not True else v <= 50, lambda: small_ints(-2, 60)),
    ("power_law_fit.x_min", "x_min", lambda v: sa.power_law_fit(X_PL, x_min=v),
     lambda v: True if v is None else (real_in(0, lo_open=True)(v) and (float(v) <= X_PL[-2] or False)), scalars),
    ("spike_threshold.ratio", "ratio", sa.spike_threshold, real_in(0, 1, lo_open=True), scalars),
    ("spike_threshold.scale", "scale", lambda v: sa.spike_threshold(0.5, v), real_in(0, lo_open=True), scalars),
    ("spike_strength.eig", "eig", lambda v: sa.spike_strength(v, 1.0), _eig_above_edge,
     lambda: st.one_of(scalars(), arrays(), st.sampled_from([4.0, 6.25, [5.0, 9.0], 3.0]))),
    ("dkw_bound.n", "n", sa.dkw_bound, int_at_least(1), lambda: small_ints(-2, 40)),
    ("dkw_bound.confidence", "confidence", lambda v: sa.dkw_bound(10, v),
     real_in(0, 1, lo_open=True, hi_open=True), bounded),
    ("jacobian_against_law.x", "x", lambda v: sa.jacobian_against_law(JMODEL, JNET, v), _rows_ok, tensors),
    ("jacobian_against_law.net", "net", lambda v: sa.jacobian_against_law(JMODEL, v, PX), lambda v: v is JNET,
     lambda: st.one_of(st.just(JNET), scalars())),
    ("jacobian_against_law.law", "law", lambda v: sa.jacobian_against_law(JMODEL, JNET, PX, law=v),
     lambda v: v is None or isinstance(v, MarchenkoPastur),
     lambda: st.one_of(st.sampled_from([None, MarchenkoPastur(0.5), "mp"]), scalars())),
    ("ntk_against_law.input_law", "input_law", lambda v: sa.ntk_against_law(NMODEL, NNET, PX, input_law=v),
     lambda v: (isinstance(v, str) and v in ("gaussian", "data")) or isinstance(v, MarchenkoPastur),
     lambda: st.one_of(st.sampled_from(["gaussian", "data", "uniform", MarchenkoPastur(0.5)]), scalars())),
    ("fan_wang_ntk.model", "model", lambda v: sa.fan_wang_ntk(v, PX), lambda v: v is NMODEL,
     lambda: st.one_of(st.sampled_from([NMODEL, PMODEL, torch.nn.Linear(3, 1)]), scalars())),
    ("fan_wang_ntk.output", "output", lambda v: sa.fan_wang_ntk(NMODEL, PX, output=v),
     lambda v: int_at_least(0)(v) if int_at_least(0)(v) is not True else v < 1, lambda: small_ints(-2, 3)),
    ("ntk_against_law.x", "x", lambda v: sa.ntk_against_law(NMODEL, NNET, v),
     lambda v: _rows_ok(v) if _rows_ok(v) is False else None, tensors),    # a constant x: a named all-zero refusal
    ("ntk_against_law.output", "output", lambda v: sa.ntk_against_law(NMODEL, NNET, PX, output=v),
     lambda v: int_at_least(0)(v) if int_at_least(0)(v) is not True else v < 1, lambda: small_ints(-2, 3)),
    ("weight_spectra.model", "model", sa.weight_spectra, lambda v: isinstance(v, torch.nn.Module),  # no layers: []
     lambda: st.one_of(st.sampled_from([AMODEL, torch.nn.ReLU()]), scalars())),
    ("weight_spectra.sigma_w", "sigma_w", lambda v: sa.weight_spectra(AMODEL, sigma_w=v),
     lambda v: real_in(0, lo_open=True)(v) if not isinstance(v, dict) else None,
     lambda: st.one_of(scalars(), st.sampled_from([{"layers.0": 2.0}, {"layers.0": -1.0}, {"layers.1": "x"}]))),
    ("weight_spectra.scale", "scale", lambda v: sa.weight_spectra(AMODEL, scale=v), one_of("init", "fit"),
     lambda: st.one_of(st.sampled_from(["init", "fit", "mean"]), scalars())),
    ("weight_spectra.channels", "channels", lambda v: sa.weight_spectra(AMODEL, channels=v),
     lambda v: True if v is None else int_at_least(1)(v), lambda: small_ints(-2, 6)),
    ("weight_spectra.mask_draws", "mask_draws", lambda v: sa.weight_spectra(AMODEL, mask_draws=v),
     lambda v: False if isinstance(v, numbers.Integral) and not isinstance(v, bool) and v == 1 else int_at_least(0)(v),
     lambda: small_ints(-2, 6)),
    ("weight_spectra.confidence", "confidence", lambda v: sa.weight_spectra(AMODEL, confidence=v),
     real_in(0, 1, lo_open=True, hi_open=True), bounded),
    ("spectrum_table.layers", "layers", sa.spectrum_table,
     lambda v: isinstance(v, list) and all(isinstance(x, sa.LayerSpectrum) for x in v),
     lambda: st.one_of(st.sampled_from([sa.weight_spectra(AMODEL), [], [1, 2], "layers", (AMODEL,)]), scalars())),
    ("tracy_widom_margin.n_min", "n_min", lambda v: sa.tracy_widom_margin(v, 40),
     lambda v: int_at_least(1)(v) if int_at_least(1)(v) is not True else v <= 40, lambda: small_ints(-2, 60)),
    ("tracy_widom_margin.scale", "scale", lambda v: sa.tracy_widom_margin(10, 40, v), real_in(0, lo_open=True),
     scalars),
    ("spike_strength_in.eig", "eig", lambda v: sa.spike_strength_in(v, X_PL, 0.5),
     lambda v: finite_real_array(v) and bool(np.size(v)) and bool(np.all(np.asarray(v, dtype=float) > X_PL[-1])) or
     (None if finite_real_array(v) is not False and np.size(v) == 0 else False),
     lambda: st.one_of(scalars(), arrays(), st.sampled_from([30.0, [25.0, 40.0], 5.0]))),
    ("spike_strength_in.bulk", "bulk", lambda v: sa.spike_strength_in(1e3, v, 0.5),
     lambda v: (finite_real_array(v) and np.size(v) > 0 and bool(np.all(np.asarray(v, dtype=float) >= 0))
                and bool(np.max(np.asarray(v, dtype=float)) < 1e3)) or False, arrays),
    ("mp_bulk_scale.eigs", "eigs", lambda v: sa.mp_bulk_scale(v, 0.5),
     lambda v: finite_real_array(v) if finite_real_array(v) is not False and np.size(v) > 0 and bool(
         np.all(np.asarray(v, dtype=float) >= 0)) and bool(np.any(np.asarray(v, dtype=float) > 0)) else False, arrays),
    ("mp_bulk_scale.ratio", "ratio", lambda v: sa.mp_bulk_scale(X_PL, v), real_in(0, 1, lo_open=True), scalars),
]


@pytest.mark.parametrize("name, arg, call, valid, values", AUDIT, ids=[c[0] for c in AUDIT])
def test_spectral_audit(name, arg, call, valid, values):
    """The per-layer audit table, the power-law fit, the spiked-model threshold and strength, the DKW band, and
    the Jacobian and NTK against their laws, the per-layer spectra and table, the Tracy–Widom margin, the
    D-transform spike strength and the MP bulk scale (38 × 10 cases): a finite result or a named refusal."""
    check_generated("spectral_audit", 10, name, arg, call, valid, values())


# --- the trained-spectra study ----------------------------------------------------------------------------------------
from rmtnet.studies import trained_spectra as ts  # noqa: E402

_TS_RUNS = {}
TS_DIR = tempfile.mkdtemp(prefix="rmtnet-fuzz-ts-")
atexit.register(shutil.rmtree, TS_DIR, ignore_errors=True)   # the spectra_run rows' weights, gone after the run


def ts_runs():
    """One tiny MLP-Mixer run (C = 2, 8 training images, 1 epoch) as a sweep's table, made once."""
    if not _TS_RUNS:
        _TS_RUNS["runs"] = pd.DataFrame([dict(model="mixer", seed=0, **_ts_run())])
    return _TS_RUNS["runs"]


def _ts_run(**kw):
    args = dict(model="mixer", width=2, epochs=1, lr=0.05, seed=0, n_train=8)
    args.update(kw)
    return ts.spectra_run(**args)


def _runs_values():
    r = ts_runs()
    return st.one_of(st.sampled_from([r, r.iloc[:0], r.drop(columns=["layers", "kernels", "eigs"]), r.to_dict(),
                                      "runs"]), scalars())


TRAINED = [
    ("description.width", "width", ts.description, int_at_least(1), lambda: small_ints(-2, 40)),
    ("build.model", "model", lambda v: ts.build(v, 2, 0, n_nodes=3), one_of(*ts.MODELS),
     lambda: st.one_of(st.sampled_from(list(ts.MODELS) + ["foo", "MLP"]), scalars())),
    ("build.width", "width", lambda v: ts.build("rp", v, 0), int_at_least(1), lambda: small_ints(-2, 8)),
    ("build.seed", "seed", lambda v: ts.build("mlp", 2, v), int_at_least(0), lambda: small_ints(-2, 8)),
    ("build.n_nodes", "n_nodes", lambda v: ts.build("emn", 2, 0, n_nodes=v), int_at_least(2),
     lambda: small_ints(-2, 6)),
    ("image_data.model", "model", lambda v: ts.image_data(v, n_train=8), one_of(*ts.IMAGE_MODELS),
     lambda: st.one_of(st.sampled_from(list(ts.MODELS) + ["foo"]), scalars())),
    ("image_data.seed", "seed", lambda v: ts.image_data("mlp", v, n_train=8), int_at_least(0),
     lambda: small_ints(-2, 4)),
    ("image_data.n_train", "n_train", lambda v: ts.image_data("rp", n_train=v),
     lambda v: True if v is None else (int_at_least(1)(v) if int_at_least(1)(v) is not True else v <= 4000),
     lambda: st.one_of(small_ints(-2, 8), st.sampled_from([None, 4000, 4001]))),
    ("spectra_run.model", "model", lambda v: _ts_run(model=v), one_of(*ts.MODELS),    # (EMN's test_error is NaN)
     lambda: st.one_of(st.sampled_from(["mixer", "rp", "foo", "Mixer"]), scalars())),
    ("spectra_run.epochs", "epochs", lambda v: _ts_run(epochs=v), int_at_least(1), lambda: small_ints(-2, 1)),
    ("spectra_run.lr", "lr", lambda v: _ts_run(lr=v), real_in(0, lo_open=True), bounded),
    ("spectra_run.seed", "seed", lambda v: _ts_run(seed=v), int_at_least(0), lambda: small_ints(-2, 2)),
    ("spectra_run.n_kernel", "n_kernel", lambda v: _ts_run(n_kernel=v), int_at_least(2), lambda: small_ints(-2, 4)),
    ("spectra_run.n_train", "n_train", lambda v: _ts_run(n_train=v),
     lambda v: True if v is None else (int_at_least(1)(v) if int_at_least(1)(v) is not True else v <= 4000),
     lambda: st.one_of(small_ints(-2, 8), st.sampled_from([4001]))),
    ("spectra_run.jacobian", "jacobian", lambda v: _ts_run(jacobian=v), lambda v: isinstance(v, (bool, np.bool_)),
     lambda: st.one_of(st.booleans(), scalars())),
    ("spectra_run.weights_dir", "weights_dir", lambda v: _ts_run(weights_dir=v),
     lambda v: v is None or isinstance(v, (str, Path)),
     lambda: st.one_of(st.sampled_from([None, TS_DIR, Path(TS_DIR)]), scalars().filter(lambda v: not isinstance(v, str)))),
    ("layer_table.runs", "runs", ts.layer_table, lambda v: v is ts_runs(), _runs_values),
    ("kernel_table.runs", "runs", ts.kernel_table, lambda v: v is ts_runs(), _runs_values),
    ("eigenvalues.runs", "runs", lambda v: ts.eigenvalues(v, "mixer", 0, "stem"), lambda v: v is ts_runs(),
     _runs_values),
    ("eigenvalues.model", "model", lambda v: ts.eigenvalues(ts_runs(), v, 0, "stem"), lambda v: v == "mixer",
     lambda: st.one_of(st.sampled_from(["mixer", "mlp", "foo"]), scalars())),
    ("eigenvalues.seed", "seed", lambda v: ts.eigenvalues(ts_runs(), "mixer", v, "stem"),
     lambda v: int_at_least(0)(v) if int_at_least(0)(v) is not True else v == 0, lambda: small_ints(-2, 3)),
    ("eigenvalues.layer", "layer", lambda v: ts.eigenvalues(ts_runs(), "mixer", 0, v), lambda v: v == "stem",
     lambda: st.one_of(st.sampled_from(["stem", "nope", "blocks"]), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", TRAINED, ids=[c[0] for c in TRAINED])
def test_trained_spectra_study(name, arg, call, valid, values):
    """The trained-spectra study's public functions (22 × 6 cases; a valid run is a 1-epoch C = 2 Mixer on 8
    images): a finite result or a named refusal (ValueError naming the argument and what it may be)."""
    check_generated("trained_spectra", 6, name, arg, call, valid, values())


# --- the wider-at-fixed-weights study (Golubeva et al.'s control) -----------------------------------------------------
from rmtnet.studies import wider_nets as wn  # noqa: E402

WN_RUNS = pd.DataFrame({"kind": ["sparse"] * 6 + ["dense"] * 6, "width": [8, 8, 8, 32, 32, 32] * 2,
                        "test_error": [.15, .16, .14, .12, .11, .125, .15, .16, .14, .10, .105, .11],
                        "train_error": 0.0})


def _wn_effects(**kw):
    """width_effects on three seeds at widths 8 and 32 (the base's width_share is NaN by design: left out)."""
    return wn.width_effects(**{"runs": WN_RUNS, **kw}).drop(columns="width_share")


WIDER = [
    ("kernel_distance.width", "width", wn.kernel_distance,
     lambda v: int_at_least(8)(v) if int_at_least(8)(v) is not True else v <= 635,
     lambda: st.one_of(st.integers(-2, 700), scalars())),
    ("kernel_distance.base_width", "base_width", lambda v: wn.kernel_distance(32, base_width=v),
     lambda v: int_at_least(1)(v) if int_at_least(1)(v) is not True else v <= 32, lambda: small_ints(-2, 40)),
    ("kernel_distance.n_in", "n_in", lambda v: wn.kernel_distance(32, n_in=v),      # max_width ≥ 32 needs n_in ≥ 31
     lambda v: int_at_least(31)(v) if int_at_least(1)(v) is not True else v >= 31,
     lambda: st.one_of(st.integers(-2, 2000), scalars())),
    ("kernel_distance.n_classes", "n_classes", lambda v: wn.kernel_distance(32, n_classes=v),   # a hidden weight
     lambda v: int_at_least(1)(v) if int_at_least(1)(v) is not True else v <= 261,              # left: ≤ 261
     lambda: st.one_of(st.integers(-2, 300), scalars())),
    ("width_effects.runs", "runs", lambda v: _wn_effects(runs=v), lambda v: v is WN_RUNS,
     lambda: st.one_of(st.sampled_from([WN_RUNS, WN_RUNS.iloc[:0], WN_RUNS.drop(columns="kind"), WN_RUNS.to_dict(),
                                        "runs"]), scalars())),
    ("width_effects.base_width", "base_width", lambda v: _wn_effects(base_width=v),
     lambda v: int_at_least(1)(v) if int_at_least(1)(v) is not True else v in (8, 32), lambda: small_ints(-2, 40)),
    ("width_effects.trainable", "trainable", lambda v: _wn_effects(trainable=v), real_in(0, 1, lo_open=True),
     scalars),
    ("width_effects.alpha", "alpha", lambda v: _wn_effects(alpha=v), real_in(0, 1, lo_open=True, hi_open=True),
     scalars),
    ("WideSparseMLP.parameterization", "parameterization",
     lambda v: wn.WideSparseMLP(32, parameterization=v, seed=0), one_of("standard", "ntk"),
     lambda: st.one_of(st.sampled_from(["standard", "ntk", "NTK", "mup", ""]), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", WIDER, ids=[c[0] for c in WIDER])
def test_wider_nets_study(name, arg, call, valid, values):
    """The wider-at-fixed-weights study's analysis functions and the net's parameterisation (9 × 12 cases): a
    finite result or a named refusal. (``width_at_fixed_weights_run(protocol=…)`` is left out: each valid case
    trains a net; tests/test_wider_nets.py checks its refusals.)"""
    check_generated("wider_nets", 12, name, arg, call, valid, values())


@pytest.mark.parametrize("name, arg, call, valid, values", PROBES, ids=[c[0] for c in PROBES])
def test_probes(name, arg, call, valid, values):
    """Jacobian spectra, the empirical NTK and weight spectra of small torch models (14 × 15 cases). A model that
    cannot take the input is refused naming the input; floating inputs take the model's precision."""
    check_generated("probes", 15, name, arg, call, valid, values())


# --- sharpness: the loss Hessian's and the NTK's top eigenvalues, Hutchinson's trace, the training-loop probe ----------
SY = torch.tensor([[0.5, -1.0], [2.0, 0.0]], dtype=torch.float64)           # regression targets of PMODEL on PX
SL = torch.tensor([1, 0])                                                  # class labels of PMODEL's 2 outputs
S_PAIRS = [(PX, SY), (PX, SL), [PX, SY]]


def _pairs():
    return st.one_of(st.sampled_from([*S_PAIRS, PX, (PX,), (PX, SY[:1]), (PX, SY * math.nan), (PX, SL + 5),
                                      (PX, SL.bool()), (PX, SY, SY), (PX[:0], SY[:0]), (PX.float(), SY)]),
                     scalars())


def _pair_ok(v):
    return True if any(v is p for p in S_PAIRS) else (None if isinstance(v, tuple) and len(v) == 2 and v[1] is SY
                                                      and v[0].dtype == torch.float32 else False)


def _lanczos_tol(v):
    """Lanczos' relative residual in (0, 1); one far below float64's rounding may not converge (a named error)."""
    ok = real_in(0, 1, lo_open=True)(v)
    return None if ok and v < 1e-13 else ok


def _below(n):
    """k of the Lanczos top eigenvalues: 1 ≤ k < n (the last few only with a dense fallback ARPACK may refuse)."""
    return lambda v: int_at_least(1)(v) and (v < n - 2 or (None if v < n else False))


from rmtnet.nets import sharpness as sharp                                # noqa: E402
SHARPNESS = [
    ("hessian_top_eigenvalues.data", "data", lambda v: sharp.hessian_top_eigenvalues(PMODEL, v), _pair_ok, _pairs),
    ("hessian_top_eigenvalues.loss", "loss", lambda v: sharp.hessian_top_eigenvalues(PMODEL, (PX, SL), loss=v),
     one_of("mse", "mean_squared", "cross_entropy"),
     lambda: st.one_of(st.sampled_from(["mse", "mean_squared", "cross_entropy", "l1", "MSE"]), scalars())),
    ("hessian_top_eigenvalues.k", "k", lambda v: sharp.hessian_top_eigenvalues(PMODEL, (PX, SY), k=v), _below(26),
     lambda: small_ints(-2, 30)),
    ("hessian_top_eigenvalues.tol", "tol", lambda v: sharp.hessian_top_eigenvalues(PMODEL, (PX, SY), tol=v),
     _lanczos_tol, scalars),
    ("hessian_top_eigenvalues.seed", "seed", lambda v: sharp.hessian_top_eigenvalues(PMODEL, (PX, SY), seed=v),
     int_at_least(0), lambda: small_ints(-3, 10 ** 6)),
    ("hessian_trace.n_probes", "n_probes", lambda v: sharp.hessian_trace(PMODEL, (PX, SY), n_probes=v),
     int_at_least(2), lambda: small_ints(-2, 12)),
    ("hessian_trace.data", "data", lambda v: sharp.hessian_trace(PMODEL, v, n_probes=3), _pair_ok, _pairs),
    ("hessian_trace.seed", "seed", lambda v: sharp.hessian_trace(PMODEL, (PX, SY), n_probes=3, seed=v),
     int_at_least(0), lambda: small_ints(-3, 10 ** 6)),
    ("HessianOperator.data", "data", lambda v: sharp.HessianOperator(PMODEL, v).hvp(np.eye(26)[:, :2]), _pair_ok,
     _pairs),
    ("ntk_top_eigenvalues.x", "x", lambda v: sharp.ntk_top_eigenvalues(PMODEL, v), _rows_ok, tensors),
    ("ntk_top_eigenvalues.k", "k", lambda v: sharp.ntk_top_eigenvalues(PMODEL, PX, k=v), _below(4),
     lambda: small_ints(-2, 6)),
    ("ntk_top_eigenvalues.tol", "tol", lambda v: sharp.ntk_top_eigenvalues(PMODEL, PX, tol=v), _lanczos_tol,
     scalars),
    ("ntk_top_eigenvalues.seed", "seed", lambda v: sharp.ntk_top_eigenvalues(PMODEL, PX, seed=v), int_at_least(0),
     lambda: small_ints(-3, 10 ** 6)),
    ("ntk_top_eigenvalues.ncv", "ncv", lambda v: sharp.ntk_top_eigenvalues(PMODEL, PX, ncv=v),
     lambda v: v is None or (int_at_least(3)(v) if int_at_least(2)(v) is not False else False),
     lambda: small_ints(-2, 8)),
    ("sharpness_probe.n_examples", "n_examples", lambda v: sharp.sharpness_probe(n_examples=v),
     lambda v: v is None or int_at_least(1)(v), lambda: st.one_of(st.none(), small_ints(-2, 8))),
    ("sharpness_probe.loss", "loss", lambda v: sharp.sharpness_probe(loss=v),
     lambda v: callable(v) or one_of("mse", "mean_squared", "cross_entropy")(v),
     lambda: st.one_of(st.sampled_from(["mse", "cross_entropy", "l2", len]), scalars())),
    ("sharpness_probe.ntk", "ntk", lambda v: sharp.sharpness_probe(ntk=v), lambda v: isinstance(v, (bool, np.bool_)),
     lambda: st.one_of(st.sampled_from([True, False, 0, "yes"]), scalars())),
    ("train.probes", "probes", lambda v: _train(probes=v),
     lambda v: v is None or (isinstance(v, dict) and all(isinstance(k, str) and k and callable(f)
                                                         for k, f in v.items())),
     lambda: st.one_of(st.sampled_from([None, {}, {"one": lambda m, d: 1.0}, {"": lambda m, d: 1.0}, {"a": 1.0},
                                        {1: lambda m, d: 1.0}, [lambda m, d: 1.0]]), scalars())),
    ("train.probe_every", "probe_every", lambda v: _train(probes={"one": lambda m, d: 1.0}, probe_every=v),
     int_at_least(1), lambda: small_ints(-2, 4)),
]


from rmtnet.spectra import stability                                      # noqa: E402
from rmtnet.studies import red_line as rl                                 # noqa: E402

RL_NET = rl.red_line_description("data", "relu", "gaussian", 1.0, 2, 8)
RL_DATA = rl.red_line_task("data", 8, n_data=3, seed=0)
STABILITY = [
    ("learning_rate_border.lambda_max", "lambda_max", stability.learning_rate_border,
     lambda v: None if real_in(0, None, lo_open=True)(v) and v < 1e-290 else real_in(0, None, lo_open=True)(v),
     scalars),
    ("learning_rate_border.n_samples", "n_samples", lambda v: stability.learning_rate_border(2.0, n_samples=v),
     int_at_least(1), small_ints),
    ("learning_rate_border.n_outputs", "n_outputs", lambda v: stability.learning_rate_border(2.0, n_outputs=v),
     int_at_least(1), small_ints),
    ("learning_rate_border.loss", "loss", lambda v: stability.learning_rate_border(2.0, loss=v),
     one_of("mse", "mean_squared"), lambda: st.one_of(st.sampled_from(["mse", "mean_squared", "MSE", "sum"]),
                                                      scalars())),
    ("ntk_learning_rate.n_data", "n_data", lambda v: stability.ntk_learning_rate(FW40, v, parameterization="ntk"),
     int_at_least(1), lambda: small_ints(-2, 40)),
    ("ntk_learning_rate.parameterization", "parameterization",
     lambda v: stability.ntk_learning_rate(FW, 10, parameterization=v), one_of("ntk", "standard"),
     lambda: st.one_of(st.sampled_from(["ntk", "standard", "NTK", "mup"]), scalars())),
    ("ntk_learning_rate.loss", "loss", lambda v: stability.ntk_learning_rate(FW, 10, loss=v, parameterization="ntk"),
     one_of("mse", "mean_squared"), lambda: st.one_of(st.sampled_from(["mse", "mean_squared", "l2"]), scalars())),
    ("critical_learning_rate.loss", "loss", lambda v: fisher.critical_learning_rate(FL, loss=v),
     one_of("mse", "mean_squared"), lambda: st.one_of(st.sampled_from(["mse", "mean_squared", "half"]), scalars())),
    ("red_line_description.depth", "depth", lambda v: rl.red_line_description("data", "relu", "gaussian", 1.0, v, 8),
     int_at_least(2), lambda: small_ints(-2, 6)),
    ("red_line_description.setting", "setting", lambda v: rl.red_line_description(v, "relu", "gaussian", 1.0, 2, 8),
     one_of(*rl.SETTINGS), lambda: st.one_of(st.sampled_from([*rl.SETTINGS, "one-sample", "fisher"]), scalars())),
    ("red_line_task.width", "width", lambda v: rl.red_line_task("data", v, n_data=2), int_at_least(1),
     lambda: small_ints(-2, 16)),
    ("red_line_task.n_data", "n_data", lambda v: rl.red_line_task("data", 4, n_data=v), int_at_least(1),
     lambda: small_ints(-2, 16)),
    ("red_line_task.seed", "seed", lambda v: rl.red_line_task("data", 4, n_data=2, seed=v), int_at_least(0),
     lambda: small_ints(-3, 10 ** 6)),
    ("gradient_descent_outcome.learning_rate", "learning_rate",
     lambda v: rl.gradient_descent_outcome(RL_NET, RL_DATA, v, 3),
     lambda v: None if real_in(0, None, lo_open=True)(v) and v > 1e30 else real_in(0, None, lo_open=True)(v),
     scalars),
    ("gradient_descent_outcome.steps", "steps", lambda v: rl.gradient_descent_outcome(RL_NET, RL_DATA, 0.01, v),
     int_at_least(1), lambda: small_ints(-2, 5)),
    ("gradient_descent_outcome.stop_at_rise", "stop_at_rise",
     lambda v: rl.gradient_descent_outcome(RL_NET, RL_DATA, 0.01, 2, stop_at_rise=v),
     lambda v: isinstance(v, (bool, np.bool_)), lambda: st.one_of(st.sampled_from([True, False, 0, "yes"]), scalars())),
    ("predicted_learning_rates.setting", "setting", lambda v: rl.predicted_learning_rates(v, RL_NET, RL_DATA),
     one_of("data"), lambda: st.one_of(st.sampled_from(["data", "one_sample", "two"]), scalars())),
    ("border.lo", "lo", lambda v: rl.border(lambda eta: eta > 2.0, v, 4.0, 3),
     lambda v: real_in(0, 4.0, lo_open=True, hi_open=True)(v), scalars),
    ("border.iterations", "iterations", lambda v: rl.border(lambda eta: eta > 2.0, 1.0, 4.0, v), int_at_least(0),
     lambda: small_ints(-3, 30)),
    ("red_line_run.bisections", "bisections",
     lambda v: rl.red_line_run("data", "linear", "gaussian", 1.0, 2, 4, n_data=2, steps=2, n_grid=2, bisections=v),
     int_at_least(0), lambda: small_ints(-3, 2)),
    ("red_line_run.n_grid", "n_grid",
     lambda v: rl.red_line_run("data", "linear", "gaussian", 1.0, 2, 4, n_data=2, steps=2, n_grid=v, bisections=0),
     int_at_least(2), lambda: small_ints(-3, 3)),
    ("red_line_run.max_depth", "max_depth",
     lambda v: rl.red_line_run("data", "linear", "gaussian", 1.0, 2, 4, n_data=2, steps=2, n_grid=2, max_depth=v),
     lambda v: v is None or int_at_least(2)(v), lambda: st.one_of(st.none(), small_ints(-3, 4))),
]


@pytest.mark.parametrize("name, arg, call, valid, values", STABILITY, ids=[c[0] for c in STABILITY])
def test_stability(name, arg, call, valid, values):
    """The learning-rate border in its loss conventions, its laws (Fan & Wang, Hayase & Karakida), and the red-line
    study's networks, data and runs (15 × 15 cases): finite numbers, or a named refusal."""
    check_generated("stability", 15, name, arg, call, valid, values())


@pytest.mark.parametrize("name, arg, call, valid, values", SHARPNESS, ids=[c[0] for c in SHARPNESS])
def test_sharpness(name, arg, call, valid, values):
    """The loss Hessian's and the NTK's top eigenvalues, Hutchinson's trace and the sharpness probe of a 3-4-2 MLP
    on 2 inputs, and train's probes (15 cases each): finite numbers, or a named refusal."""
    check_generated("sharpness", 15, name, arg, call, valid, values())


from rmtnet.studies import sharpness as sharp_study                       # noqa: E402

SS_NET = network.mlp(2, widths=[3, 4, 2], activation="erf", sigma_w=1.0, last_activation=False)
SS_MODEL = nm.MLP.from_arch(SS_NET, seed=0, dtype=torch.float64)
SS_DATA = nd.Dataset(PX, SL, PX, SL, 2, "two", (3,))
SS_RUN = dict(width=2, depth=2, n_train=4, steps=1, probe_every=1)        # a run of one step: about 0.1 s


def _list_of(ok):
    """A non-empty list, tuple or 1-D array whose every element passes ``ok``."""
    def valid(v):
        if isinstance(v, np.ndarray) and v.ndim == 1:
            v = v.tolist()
        if not isinstance(v, (list, tuple)) or not v:
            return False
        verdicts = [ok(e) for e in v]
        return False if False in verdicts else (None if None in verdicts else True)
    return valid


def _eta_factor(v):
    """c > 0; a huge one makes η beyond float32 (train's refusal of lr) or underflows it: either outcome."""
    ok = real_in(0, None, lo_open=True)(v)
    return None if ok and (v > 1e30 or v < 1e-30) else ok


SHARPNESS_STUDY = [
    ("description.width", "width", lambda v: sharp_study.description(v, 3), int_at_least(1), small_ints),
    ("description.depth", "depth", lambda v: sharp_study.description(8, v), int_at_least(2), small_ints),
    ("description.activation", "activation", lambda v: sharp_study.description(8, 3, v),
     one_of(*sharp_study.ACTIVATIONS), lambda: st.one_of(st.sampled_from(["relu", "erf", "tanh", "gelu"]), scalars())),
    ("mnist_subset.n_train", "n_train", lambda v: sharp_study.mnist_subset(v, 4),
     lambda v: int_at_least(1)(v) and v <= 4000, lambda: st.one_of(small_ints(), st.sampled_from([4000, 4001]))),
    ("mnist_subset.n_test", "n_test", lambda v: sharp_study.mnist_subset(4, v),
     lambda v: int_at_least(1)(v) and v <= 1000, lambda: st.one_of(small_ints(), st.sampled_from([1000, 1001]))),
    ("initial_sharpness.data", "data", lambda v: sharp_study.initial_sharpness(SS_MODEL, SS_NET, v),
     lambda v: v is SS_DATA, lambda: st.one_of(st.sampled_from([SS_DATA, nd.Dataset(PX, SY, PX, SY, None, "r", (3,)),
                                                                (PX, SL)]), scalars())),
    ("initial_sharpness.net", "net", lambda v: sharp_study.initial_sharpness(SS_MODEL, v, SS_DATA),
     lambda v: v is SS_NET, lambda: st.one_of(st.sampled_from([SS_NET, "mlp", SS_MODEL]), scalars())),
    ("initial_sharpness.model", "model", lambda v: sharp_study.initial_sharpness(v, SS_NET, SS_DATA),
     lambda v: v is SS_MODEL, lambda: st.one_of(st.sampled_from([SS_MODEL, SS_NET]), scalars())),
    ("initial_sharpness.tol", "tol", lambda v: sharp_study.initial_sharpness(SS_MODEL, SS_NET, SS_DATA, tol=v),
     _lanczos_tol, scalars),
    ("initial_sharpness.seed", "seed", lambda v: sharp_study.initial_sharpness(SS_MODEL, SS_NET, SS_DATA, seed=v),
     int_at_least(0), lambda: small_ints(-3, 10 ** 6)),
    ("sharpness_run.eta_factor", "eta_factor", lambda v: sharp_study.sharpness_run(v, **SS_RUN), _eta_factor,
     scalars),
    ("sharpness_run.steps", "steps", lambda v: sharp_study.sharpness_run(0.5, **{**SS_RUN, "steps": v}),
     int_at_least(1), lambda: small_ints(-2, 2)),
    ("sharpness_run.ncv", "ncv", lambda v: sharp_study.sharpness_run(0.5, **{**SS_RUN, "ncv": v}),
     lambda v: v is None or int_at_least(3)(v) if int_at_least(2)(v) is not False or v is None else False,
     lambda: small_ints(-2, 6)),
    ("sharpness_sweep.eta_factors", "eta_factors", lambda v: sharp_study.sharpness_sweep(v, **SS_RUN),
     _list_of(_eta_factor), lambda: st.one_of(st.sampled_from(
         [[0.5], (1.0,), np.array([0.5]), [], [-1.0], [math.nan], [0.5, "a"], np.array([[0.5]]), 0.5]), scalars())),
    ("sharpness_sweep.seeds", "seeds", lambda v: sharp_study.sharpness_sweep([0.5], v, **SS_RUN),
     _list_of(int_at_least(0)), lambda: st.one_of(st.sampled_from(
         [(0,), [1], np.array([2]), (), [-1], [0.5], ["a"], [True], 0]), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", SHARPNESS_STUDY, ids=[c[0] for c in SHARPNESS_STUDY])
def test_sharpness_study(name, arg, call, valid, values):
    """The sharpness study's networks, data, initial sharpness (of a 3-4-2 erf MLP on 2 inputs), runs of one step
    of a 784-2-10 MLP on 4 digits and their sweeps (8 cases each): finite numbers, or a named refusal."""
    check_generated("sharpness_study", 8, name, arg, call, valid, values())


from rmtnet.studies import subnetwork_ensembles as sse_study  # noqa: E402

_KL = np.linspace(0.0, 1.0, 11)
_ACC = 0.99 - 0.4 * _KL
SSE_STUDY = [
    ("degradation_fit.kl", "kl", lambda v: sse_study.degradation_fit(v, _ACC, 0.99, 250), lambda v: v is _KL,
     lambda: st.one_of(st.sampled_from([_KL, _KL[:3], -_KL, np.full(11, np.nan), "a", _KL.astype(complex)]),
                       scalars())),
    ("degradation_fit.parent_accuracy", "parent_accuracy", lambda v: sse_study.degradation_fit(_KL, _ACC, v, 250),
     real_in(0.5, 1, lo_open=True), scalars),
    ("degradation_fit.n_eval", "n_eval", lambda v: sse_study.degradation_fit(_KL, _ACC, 0.99, v), int_at_least(1),
     lambda: small_ints(-2, 10 ** 6)),
    ("degradation_fit.chance", "chance", lambda v: sse_study.degradation_fit(_KL, _ACC, 0.99, 250, chance=v),
     lambda v: None if _is_real(v) and 0.9 < v < 0.99 else real_in(0, 0.99, hi_open=True)(v), scalars),
    ("degradation_fit.drop", "drop", lambda v: sse_study.degradation_fit(_KL, _ACC, 0.99, 250, drop=v),
     lambda v: v is None or real_in(0, 1, lo_open=True)(v), scalars),
]


@pytest.mark.parametrize("name, arg, call, valid, values", SSE_STUDY, ids=[c[0] for c in SSE_STUDY])
def test_subnetwork_study(name, arg, call, valid, values):
    """The linear fit of child accuracy in KL and its degradation threshold (Whitaker 2023, Fig. 4.3), on children
    exactly on acc = 0.99 − 0.4·KL (15 cases each): finite numbers, or a named refusal."""
    check_generated("subnetwork_study", 15, name, arg, call, valid, values())


def _child_epochs(v):
    """Valid for the 4-epoch, 2-child budget run: None (the default split) or 1 (parent 2 epochs); 2 leaves none."""
    if v is None:
        return True
    verdict = int_at_least(1)(v)
    if verdict is False or float(by_value(v)) > 1:
        return False
    return verdict


_BUDGET = dict(dataset="digits", method="sse_r", epochs=4, members=2, width=4, depth=1, batch_size=256)
SSE_BUDGET = [
    ("budget_run.child_epochs", "child_epochs", lambda v: sse_study.budget_run(**_BUDGET, child_epochs=v),
     _child_epochs, lambda: st.one_of(st.sampled_from([None, 1, 2, 0, -1, 1.0, 1.5, True]), small_ints())),
    ("steps_per_epoch.n_train", "n_train", lambda v: sse_study.steps_per_epoch(v, 32), int_at_least(1),
     lambda: small_ints(-2, 10 ** 6)),
    ("steps_per_epoch.batch_size", "batch_size", lambda v: sse_study.steps_per_epoch(4000, v), int_at_least(1),
     lambda: small_ints(-2, 10 ** 6)),
    ("Batches.count.n", "n", lambda v: sse_study.datasets.Batches.count(v, 32), int_at_least(0),
     lambda: small_ints(-2, 10 ** 6)),
    ("Batches.count.batch_size", "batch_size", lambda v: sse_study.datasets.Batches.count(4000, v), int_at_least(1),
     lambda: small_ints(-2, 10 ** 6)),
]


@pytest.mark.parametrize("name, arg, call, valid, values", SSE_BUDGET, ids=[c[0] for c in SSE_BUDGET])
def test_subnetwork_budget_split(name, arg, call, valid, values):
    """The SSE budget split (a 4-epoch budget, 2 children of a 4-unit MLP on digits, batch 256) and the steps an
    epoch is (8 cases each): finite numbers, or a named refusal."""
    check_generated("subnetwork_budget", 8, name, arg, call, valid, values())


from rmtnet.studies import mixer_width as mw_study  # noqa: E402

_WY = torch.as_tensor(np.repeat(np.arange(3), (30, 50, 20)))
_WX = torch.arange(100, dtype=torch.float32)[:, None]
_WDATA = nd.Dataset(_WX, _WY, _WX[:7], _WY[:7], n_classes=3, name="toy", shape=(1,))
_WRUNS = pd.DataFrame(dict(model="m", tokens=[4, 4, 9, 9], channels=[20, 20, 9, 9], width=[80, 80, 81, 81],
                           test_error=[0.2, 0.21, 0.1, 0.12]))


def _in_range(lo, hi):
    """An integer in [lo, hi] (an integral float: either way)."""
    def valid(v):
        ok = int_at_least(lo)(v)
        return ok if ok is not True else int(by_value(v)) <= hi
    return valid


def _not_a_table():
    return st.one_of(scalars(), st.sampled_from([_WRUNS.drop(columns="channels"), [1, 2], {"tokens": [4]}]))


WIDTH_STUDY = [
    ("stratified_subset.n_train", "n_train", lambda v: mw_study.stratified_subset(_WDATA, v).n_train,
     _in_range(3, 100), lambda: small_ints(-2, 120)),
    ("stratified_subset.seed", "seed", lambda v: mw_study.stratified_subset(_WDATA, 10, seed=v).n_train,
     _in_range(0, 2 ** 64 - 1), scalars),
    ("sparse_density.tokens", "tokens", lambda v: mw_study.sparse_density(v, 4, 2.0), int_at_least(1), small_ints),
    ("sparse_density.channels", "channels", lambda v: mw_study.sparse_density(4, v, 2.0), int_at_least(1),
     small_ints),
    ("sparse_density.omega", "omega", lambda v: mw_study.sparse_density(4, 4, v), real_in(0, 512, lo_open=True),
     scalars),
    ("sparse_density.gamma", "gamma", lambda v: mw_study.sparse_density(4, 4, 2.0, v), real_in(1 / 128), scalars),
    ("patch_for_tokens.S", "S", lambda v: mw_study.patch_for_tokens(v, 8),
     lambda v: int_at_least(1)(v) and by_value(v) in (1, 4, 9, 16, 64), lambda: small_ints(-2, 70)),
    ("patch_for_tokens.image_side", "image_side", lambda v: mw_study.patch_for_tokens(4, v),
     lambda v: int_at_least(2)(v), lambda: small_ints(-2, 60)),
    ("masked_connections.net", "net", lambda v: mw_study.masked_connections(v), lambda v: False, scalars),
    ("narrow_wide_gap.runs", "runs", lambda v: mw_study.narrow_wide_gap(v), lambda v: v is _WRUNS,
     lambda: st.one_of(st.just(_WRUNS), _not_a_table())),
    ("error_regression.runs", "runs", lambda v: mw_study.error_regression(v), lambda v: False, _not_a_table),
    ("gap_trend.runs", "runs", lambda v: mw_study.gap_trend(v), lambda v: False, _not_a_table),
]


@pytest.mark.parametrize("name, arg, call, valid, values", WIDTH_STUDY, ids=[c[0] for c in WIDTH_STUDY])
def test_width_study(name, arg, call, valid, values):
    """The width study's controls (Hayase & Karakida 2024): training subsets, the SW-MLP density rule, the patch
    for S tokens, the connections a model keeps, and the narrow-vs-wide and log C / log m fits (15 cases each):
    finite numbers, or a named refusal."""
    check_generated("width_study", 15, name, arg, call, valid, values())


_r = np.random.default_rng(0)
CX, CY = _r.standard_normal((6, 3)), _r.standard_normal((6, 2))


def features(rows=6):
    """Representations (n, p): right and wrong row counts, constant, huge, tiny, NaN, complex, 3-D, tensors, junk."""
    return st.one_of(
        st.sampled_from([CX, CX[:5], CX[:3], np.ones((rows, 3)), CX * 1e200, CX * 1e-200, torch.tensor(CX),
                         np.full((rows, 3), math.nan), CX.astype(complex), CX.reshape(6, 3, 1), np.zeros((0, 3))]),
        hnp.arrays(np.float64, (rows, 2), elements=st.floats(-1e3, 1e3)), scalars())


def _features_ok(v, rows=6):
    """(rows, p) finite real features with some variation; huge or tiny ones at the edge."""
    if isinstance(v, torch.Tensor):
        v = v.numpy()
    if not isinstance(v, np.ndarray) or v.dtype.kind != "f" or v.ndim != 2 or v.shape[0] != rows or v.shape[1] < 1:
        return False
    ok = finite_real_array(v)
    if ok is False:
        return False
    if np.ptp(v, axis=0).max() == 0:
        return False                                     # constant features: CKA undefined
    scale = np.abs(v).max()
    return None if (ok is None or scale < 1e-150 or scale > 1e70 or np.ptp(v, axis=0).max() < 1e-6 * scale
                    or v.shape[1] < 2 or len(np.unique(v, axis=0)) < rows) else True


def _minibatch(fa, fb=None):
    acc = similarity.MinibatchCKA()
    acc.update(fa, [CY] if fb is None else fb)
    return acc.compute()


SIM_MODEL = nm.MLP([3, 4, 2], seed=0).double()
SIM_X = torch.tensor(_r.standard_normal((6, 3)))


def _between(model_a=SIM_MODEL, model_b=SIM_MODEL, batches=(SIM_X,), modules_a=("layers.0",),
             modules_b=("layers.1",)):
    return similarity.cka_between(model_a, model_b, batches, list(modules_a) if isinstance(modules_a, tuple) else
                                  modules_a, list(modules_b))


SIMILARITY = [
    ("cka.X", "X", lambda v: similarity.cka(v, CY), _features_ok, features),
    ("cka.Y", "Y", lambda v: similarity.cka(CX, v, kernel="rbf"), _features_ok, features),
    ("cka.kernel", "kernel", lambda v: similarity.cka(CX, CY, kernel=v), one_of("linear", "rbf"),
     lambda: st.one_of(st.sampled_from(["linear", "rbf", "RBF", "poly"]), scalars())),
    ("cka.debiased", "debiased", lambda v: similarity.cka(CX, CY, debiased=v),
     lambda v: isinstance(v, (bool, np.bool_)), lambda: st.one_of(st.sampled_from([True, False, 0, "no"]),
                                                                   scalars())),
    # a bandwidth far above the distances makes the RBF Gram matrix all ones up to rounding: CKA undefined (named)
    ("cka.bandwidth", "bandwidth", lambda v: similarity.cka(CX, CY, kernel="rbf", bandwidth=v),
     lambda v: real_in(0, lo_open=True)(v) and (None if v > 100 else True), scalars),
    ("cka.median", "median", lambda v: similarity.cka(CX, CY, kernel="rbf", median=v),
     one_of("all_squared", "distinct_pairs"),
     lambda: st.one_of(st.sampled_from(["all_squared", "distinct_pairs", "mean"]), scalars())),
    ("MinibatchCKA.feats_a", "feats_a", lambda v: _minibatch(v),
     lambda v: (isinstance(v, list) and len(v) >= 1 and all(_features_ok(f) is not False for f in v)
                and (None if any(_features_ok(f) is None for f in v) else True)) or False,
     lambda: st.one_of(st.lists(features(), min_size=0, max_size=2), features())),
    ("layer_features.model", "model", lambda v: similarity.layer_features(v, SIM_X, ["layers.0"]),
     lambda v: v is SIM_MODEL, lambda: st.one_of(st.just(SIM_MODEL), scalars())),
    ("layer_features.inputs", "inputs", lambda v: similarity.layer_features(SIM_MODEL, v, ["layers.0"]),
     lambda v: _rows_ok(v) or (None if isinstance(v, torch.Tensor) and v.is_floating_point() and v.ndim == 2
                               and v.shape[1] == 3 else False), tensors),
    ("layer_features.modules", "modules", lambda v: similarity.layer_features(SIM_MODEL, SIM_X, v),
     lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and all(m in ("layers.0", "layers.1", "phi") or
                                                                   m is SIM_MODEL.layers[0] for m in v),
     lambda: st.one_of(st.lists(st.sampled_from(["layers.0", "layers.1", "nope", SIM_MODEL.layers[0],
                                                  torch.nn.Linear(2, 2)]), max_size=2), scalars())),
    ("cka_between.batches", "batches", lambda v: _between(batches=v),
     lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and all(
         (_rows_ok(b) and (b[0] if isinstance(b, (tuple, list)) else b).shape[0] >= 4) for b in v) or False,
     lambda: st.one_of(st.lists(st.one_of(st.just(SIM_X), tensors()), max_size=2), scalars())),
    ("cka_between.model_b", "model_b", lambda v: _between(model_b=v), lambda v: v is SIM_MODEL,
     lambda: st.one_of(st.just(SIM_MODEL), scalars())),
    ("cka_between.modules_a", "modules_a", lambda v: _between(modules_a=v),
     lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and all(m in ("layers.0", "layers.1") for m in v),
     lambda: st.one_of(st.lists(st.sampled_from(["layers.0", "layers.1", "nope"]), max_size=2), scalars())),
]


@pytest.mark.parametrize("name, arg, call, valid, values", SIMILARITY, ids=[c[0] for c in SIMILARITY])
def test_similarity(name, arg, call, valid, values):
    """CKA (linear, RBF, debiased), minibatch CKA and the features of torch models (13 × 15 cases): a finite CKA or
    a named refusal (constant features, or an RBF bandwidth that makes the Gram matrix constant, are named)."""
    check_generated("similarity", 15, name, arg, call, valid, values())


# =====================================================================================================================
# Input classes of round two: each a generator used by rows across the tables, each with its own test below.
# =====================================================================================================================
import json                                                              # noqa: E402
import warnings                                                          # noqa: E402

import fuzz_inputs as fi                                                 # noqa: E402
from rmtnet import cli, figures                                          # noqa: E402
from rmtnet.experiments import read_store, SweepError                    # noqa: E402

COLLECT = os.environ.get("RMTNET_FUZZ_COLLECT")       # a file: record every failing case there instead of failing


def judge(test, name, arg, call, valid, value, label=""):
    """:func:`check`, or with ``RMTNET_FUZZ_COLLECT`` set, the failure appended to that file (one JSON line) and
    the case passed: the whole list of failing cases of a class in one run."""
    try:
        return check(test, name, arg, call, valid, value)
    except (AssertionError, pytest.fail.Exception) as exc:
        if not COLLECT:
            raise
        record(test, name, arg, f"{label} {value!r}".strip(), str(exc))


def record(test, name, arg, value, what):
    with open(COLLECT, "a") as f:
        f.write(json.dumps(dict(test=test, name=name, arg=arg, value=value[:200], what=what[:600])) + "\n")


def fail(test, name, arg, value, what):
    """A failing case of the classes below that :func:`check` does not judge (paths, sizes, callables, NaN)."""
    if COLLECT:
        record(test, name, arg, value, what)
        return
    pytest.fail(f"{name}({value}): {what}")


# --- numeric_scalar_types(): every number of every table also as NumPy/torch scalars and 0-d arrays ----------------
def _table_rows():
    """Every row of every table above as ``(table, name, arg, call, valid)``, the laws' methods once per law."""
    rows = [("measure_methods", f"{ln}.{m}", a, (lambda c, n: lambda v: c(law(n), v))(c, ln), ok)
            for ln in LAW_NAMES for m, a, c, ok, _ in METHODS]
    for table, items in [("constructors", CONSTRUCTORS), ("free", FREE), ("symbolic", SYMBOLIC), ("sweep", SWEEP)]:
        rows += [(table, *row) for row in items]
    for table, items in [("montecarlo", MONTECARLO), ("kernels_arch_plot", KERNELS), ("meanfield", MORE),
                         ("ntk", NTK), ("ntk_law", NTK_LAW), ("freeness", FREENESS), ("operators", OPERATORS),
                         ("nets", NETS), ("training", TRAINING), ("probes", PROBES), ("sharpness", SHARPNESS),
                         ("stability", STABILITY), ("sharpness_study", SHARPNESS_STUDY), ("similarity", SIMILARITY),
                         ("spectral_audit", AUDIT), ("trained_spectra", TRAINED), ("wider_nets", WIDER),
                         ("sse_budget", SSE_BUDGET)]:
        rows += [(table, *row[:4]) for row in items]
    return rows


TABLE_ROWS = _table_rows()
FORMS_PER_ROW = {"trained_spectra": 1, "ntk_law": 1, "freeness": 1, "sharpness_study": 1, "stability": 1,
                 "training": 1, "spectral_audit": 1, "sse_budget": 1}   # the slow tables (a valid case trains or solves: up to a second)
# the order the forms are tried in, from one row to the next: the forms that are not a float subclass first
FORM_ORDER = ["0-d float array", "0-d float32 tensor", "np.int64", "0-d float64 tensor", "np.float32",
              "0-d int64 tensor", "0-d int array", "np.int32", "1-element array", "np.float64"]


def _verdict(valid, v):
    """The row's domain at ``v``; a domain that cannot judge the value (it raises) leaves it at the edge."""
    try:
        return valid(v)
    except Exception:                                                   # noqa: BLE001
        return None


def numeric_scalar_types(valid):
    """Python numbers of :data:`fuzz_inputs.NUMBERS` (the row's valid ones twice as often), each to be taken in one
    of :func:`fuzz_inputs.number_forms`: NumPy and torch scalars, 0-d arrays, a 1-element array."""
    good = [x for x in fi.NUMBERS if _verdict(valid, x) is True]
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(fi.NUMBERS)) if good else \
        st.sampled_from(fi.NUMBERS)


def _form(x, turn):
    """The ``turn``-th form of :data:`FORM_ORDER` that ``x`` has (an int form only for an integral x)."""
    forms = dict(fi.number_forms(x))
    order = [label for label in FORM_ORDER if label in forms]
    label = order[turn % len(order)]
    return label, forms[label]


@pytest.mark.parametrize("table, name, arg, call, valid", TABLE_ROWS, ids=[f"{r[0]}:{r[1]}" for r in TABLE_ROWS])
def test_numeric_scalar_types(table, name, arg, call, valid):
    """Every argument of every table above given numbers as NumPy float64/float32/int64/int32 scalars, 0-d NumPy
    arrays and 0-d torch tensors (float and int): judged by the value they hold (accepted where the number is,
    refused naming the argument where it is not); a 1-element 1-d array is judged by the row's own domain (a shape
    error where a number is wanted). 2 cases a row (1 in the slow tables; the stress profile 10× as many), about 470
    rows; the forms go round :data:`FORM_ORDER`, each row starting at another one."""
    if _verdict(valid, "not a number") is True:
        return                                   # a row whose domain holds only what its own strategy draws
    turn = [TABLE_ROWS.index((table, name, arg, call, valid))]

    @examples(FORMS_PER_ROW.get(table, 2))
    @given(numeric_scalar_types(valid))
    def run(x):
        label, value = _form(x, turn[0])
        turn[0] += 1
        if name == "sweep.n_jobs" and (isinstance(fi.by_value(value), int) and (fi.by_value(value) > 1 or
                                                                              fi.by_value(value) == -1)):
            return                                                  # would start a pool of workers
        scalar = label != "1-element array"
        verdict = _verdict(valid, fi.by_value(value)) if scalar else _verdict(valid, value)
        judge("numeric_scalar_types", f"{table}:{name}", arg, call, lambda v: verdict, value, label)
    run()


# --- truthy non-booleans for every boolean flag of the public entry points ------------------------------------------
from rmtnet.nets import ensembles as ens                                 # noqa: E402
from rmtnet.spectra import stability as stab                             # noqa: E402
from rmtnet.spectra.sampling import operators as sops                    # noqa: E402
from rmtnet.spectra.sampling.lanczos import as_block_operator            # noqa: E402
from rmtnet.studies import emn as emn_study, wider_nets                  # noqa: E402

_IMG = torch.zeros(2, 1, 4, 4)
_TOKENS = nd.to_patches(_IMG, 2)
_K = CX @ CX.T                                                           # a 6 × 6 Gram matrix


def _ens_model():
    return nm.MLP([4, 3, 2], seed=0)


def _make(**kw):
    """figures.make of a compute that returns one small table and a draw of one line, into a temporary folder."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    def compute(size, seed=0, backend=None):
        return {"t": pd.DataFrame({"x": [0.0, 1.0], "y": [1.0, 2.0]})}

    def draw(tables):
        fig = Figure(figsize=(2, 2))
        fig.add_subplot().plot(tables["t"].x, tables["t"].y)
        return fig
    with tempfile.TemporaryDirectory() as tmp:
        return str(figures.make("fuzz", compute, draw, **{"outdir": tmp, **kw}))


def _gd_mse(**kw):
    predict_fn = predict.gradient_descent_mse(_K + np.eye(6), CY, learning_rate=0.1, **kw)
    return predict_fn(1, np.zeros_like(CY))


SLOW_FLAG_VALUES = [True, 1, "no", None, np.True_]
# not here: nets.data.cifar10's download (it needs torchvision, not installed with rmtnet, before it reads a flag) and
# activations.define_activation's homogeneous/replace (each case would register an activation for the whole run)

# (entry point.flag, the flag, call, None is documented as valid, the values: all of FLAG_VALUES unless listed)
FLAGS = [
    ("sweep.progress", "progress", lambda v: _sweep(progress=v), False, None),
    ("figures.make.full", "full", lambda v: _make(full=v), False, None),
    ("standardise.per_feature", "per_feature", lambda v: nd.standardise(_X, per_feature=v), False, None),
    ("to_patches.pad", "pad", lambda v: nd.to_patches(_IMG, 2, pad=v), False, None),
    ("from_patches.pad", "pad", lambda v: nd.from_patches(_TOKENS, 2, (4, 4), pad=v), False, None),
    ("Dataset.loader.shuffle", "shuffle", lambda v: len(list(TINY.loader(batch_size=4, shuffle=v))), True, None),
    ("Dataset.loader.drop_last", "drop_last", lambda v: len(list(TINY.loader(batch_size=3, drop_last=v))), False,
     None),
    ("Batches.shuffle", "shuffle", lambda v: len(list(nd.Batches(_X, _Y, 4, shuffle=v))), False, None),
    ("Batches.drop_last", "drop_last", lambda v: len(list(nd.Batches(_X, _Y, 3, drop_last=v))), False, None),
    ("Batches.count.drop_last", "drop_last", lambda v: nd.Batches.count(10, 3, drop_last=v), False, None),
    ("sample_masks.exact", "exact", lambda v: ens.sample_masks(_ens_model(), 0.5, exact=v), False, None),
    ("partition_masks.balanced", "balanced", lambda v: ens.partition_masks(_ens_model(), 2, balanced=v), False,
     None),
    ("pruned_children.exact", "exact", lambda v: ens.pruned_children(_ens_model(), 2, exact=v), False, None),
    ("stochastic_children.exact", "exact", lambda v: ens.stochastic_children(_ens_model(), 2, exact=v), False,
     None),
    ("noisy_children.mirrored", "mirrored", lambda v: ens.noisy_children(_ens_model(), 4, 0.1, mirrored=v), False,
     None),
    ("ensemble_predict.include_parent", "include_parent",
     lambda v: ens.ensemble_predict([_ens_model()] * 2, _X, parent=_ens_model(), include_parent=v), False, None),
    ("evaluate_ensemble.include_parent", "include_parent",
     lambda v: ens.evaluate_ensemble([_ens_model()] * 2, _X, _Y, parent=_ens_model(), include_parent=v), False,
     None),
    ("evaluate_ensemble.diversity", "diversity",
     lambda v: ens.evaluate_ensemble([_ens_model()] * 2, _X, _Y, diversity=v), False, None),
    ("tune.progress", "progress", lambda v: ens.tune(_ens_model(), TINY, 1, batch_size=4, progress=v), False,
     SLOW_FLAG_VALUES),
    ("OneCycle.cycle_momentum", "cycle_momentum", lambda v: vars(ens.OneCycle(cycle_momentum=v)), False, None),
    ("MaskedLinear.bias", "bias", lambda v: nl.MaskedLinear(4, 3, bias=v, seed=0), False, None),
    ("SparseMaskedLinear.bias", "bias", lambda v: nl.SparseMaskedLinear(4, 3, density=0.5, bias=v, seed=0), False,
     None),
    ("TokenMixing.bias", "bias", lambda v: nl.TokenMixing(4, 3, bias=v, seed=0), False, None),
    ("ChannelMixing.bias", "bias", lambda v: nl.ChannelMixing(4, 3, bias=v, seed=0), False, None),
    ("PermutedMixing.bias", "bias", lambda v: nl.PermutedMixing(2, 2, 2, bias=v, seed=0), False, None),
    ("MonarchLinear.bias", "bias", lambda v: nl.MonarchLinear(4, 4, 2, bias=v, seed=0), False, None),
    ("AdjacencyLinear.bias", "bias", lambda v: nl.AdjacencyLinear(3, bias=v, seed=0), False, None),
    ("AdjacencyLinear.self_loops", "self_loops", lambda v: nl.AdjacencyLinear(3, self_loops=v, seed=0), False, None),
    ("ClusterLinear.bias", "bias", lambda v: nl.ClusterLinear(3, 1, 1, bias=v, seed=0), False, None),
    ("MLP.last_activation", "last_activation", lambda v: nm.MLP([4, 3, 2], last_activation=v, seed=0), False, None),
    ("MLP.bias", "bias", lambda v: nm.MLP([4, 3, 2], bias=v, seed=0), False, None),
    ("Residual.norm", "norm", lambda v: nm.Residual(torch.nn.Identity(), 3, norm=v), False, None),
    ("MLPMixer.norm", "norm", lambda v: nm.MLPMixer(4, 3, 4, 1, 2, norm=v, seed=0), False, None),
    ("RPMixer.norm", "norm", lambda v: nm.RPMixer(4, 3, 4, 1, 2, norm=v, seed=0), False, None),
    ("SWMLP.norm", "norm", lambda v: nm.SWMLP(4, 3, 4, 1, 2, norm=v, seed=0), False, None),
    ("MonarchMLP.norm", "norm", lambda v: nm.MonarchMLP(4, 3, 4, 1, 2, norm=v, seed=0), False, None),
    ("EMN.sequential", "sequential", lambda v: nm.EMN(3, copies=(1, 1), sequential=v, seed=0), False, None),
    ("EMN.self_loops", "self_loops", lambda v: nm.EMN(3, copies=(1, 1), sequential=True, self_loops=v, seed=0),
     False, None),
    ("EMN.bias", "bias", lambda v: nm.EMN(3, bias=v, seed=0), False, None),
    ("WideSparseMLP.sparse", "sparse", lambda v: wider_nets.WideSparseMLP(4, base_width=2, sparse=v, seed=0), False,
     None),
    ("jacobian_spectrum.batched", "batched", lambda v: probes.jacobian_spectrum(PMODEL, PX, batched=v), False, None),
    ("batch_inputs.batched", "batched", lambda v: probes.batch_inputs(PMODEL, PX, batched=v), False, None),
    ("checked_forward.batched", "batched", lambda v: probes.checked_forward(PMODEL, (PX,), "x", batched=v), False,
     None),
    ("sharpness_probe.ntk", "ntk", lambda v: sharp.sharpness_probe(ntk=v), False, None),
    ("hsic.unbiased", "unbiased", lambda v: similarity.hsic(_K, _K, unbiased=v), False, None),
    ("cka.debiased", "debiased", lambda v: similarity.cka(CX, CY, debiased=v), False, None),
    ("cka_between.progress", "progress",
     lambda v: similarity.cka_between(SIM_MODEL, SIM_MODEL, [SIM_X], ["layers.0"], ["layers.1"], progress=v), False,
     None),
    ("train.progress", "progress", lambda v: _train(progress=v), False, SLOW_FLAG_VALUES),
    ("fisher_law.return_all", "return_all", lambda v: fisher.fisher_law(FL, return_all=v), False, None),
    ("nngp_kernel.return_all", "return_all", lambda v: kernels.nngp_kernel(KNET, XS, return_all=v), False, None),
    ("ntk_kernel.return_all", "return_all", lambda v: kernels.ntk_kernel(KNET, XS, return_all=v), False, None),
    ("nngp_blocks.full_cov", "full_cov", lambda v: kernels.nngp_blocks(KNET, XS, XS[:2], full_cov=v), False, None),
    ("mlp.last_activation", "last_activation", lambda v: network.mlp(2, 4, sigma_w=1.0, last_activation=v), False,
     None),
    ("ntk_law.finite_width", "finite_width", lambda v: ntk.ntk_law(FW, 10, finite_width=v), False,
     [False, np.False_, 1, 0, "yes", "False", None, [True]]),               # True: a ⊠ and a table, ~15 s
    ("ntk_learning_rate.finite_width", "finite_width",
     lambda v: stab.ntk_learning_rate(FW, 10, parameterization="ntk", finite_width=v), False,
     [False, np.False_, 1, 0, "yes", "False", None, [True]]),
    ("nngp_regression.full_cov", "full_cov", lambda v: predict.nngp_regression(KNET, XS, YS, XS[:2], full_cov=v),
     False, None),
    ("gradient_descent_mse.diag_reg_absolute_scale", "diag_reg_absolute_scale",
     lambda v: _gd_mse(diag_reg_absolute_scale=v), False, None),
    ("gradient_descent_mse.steps", "steps", lambda v: _gd_mse(steps=v), False, None),
    ("ntk_predict.diag_reg_absolute_scale", "diag_reg_absolute_scale",
     lambda v: predict.ntk_predict(KNET, XS, YS, XS[:2], t=1.0, diag_reg_absolute_scale=v), False, None),
    ("as_block_operator.block", "block", lambda v: as_block_operator(lambda x: 2.0 * x, 4, block=v)[0](np.eye(4)),
     False, None),
    ("slq.block", "block", lambda v: slq(SPD, 2, 2, block=v, seed=0), False, None),
    ("slq.progress", "progress", lambda v: slq(SPD, 2, 2, seed=0, progress=v), False, None),
    ("top_eigenvalues.block", "block", lambda v: top_eigenvalues(SPD, 1, block=v), False, None),
    ("SLQ.smoothed.log", "log", lambda v: slq(SPD, 2, 2, seed=0).smoothed(log=v, n_grid=16), False, None),
    ("sample_jacobian_eigs.return_floor", "return_floor",
     lambda v: montecarlo.sample_jacobian_eigs(NET, seed=0, return_floor=v), False, None),
    ("sample_jacobian_eigs.progress", "progress", lambda v: montecarlo.sample_jacobian_eigs(NET, seed=0, progress=v),
     False, None),
    ("sample_fisher_eigs.progress", "progress", lambda v: montecarlo.sample_fisher_eigs(NET, seed=0, progress=v),
     False, None),
    ("sample_ck_eigs.progress", "progress", lambda v: montecarlo.sample_ck_eigs(CK_NET, 3, seed=0, progress=v),
     False, None),
    ("sample_ntk.return_parts", "return_parts", lambda v: montecarlo.sample_ntk(FW, 3, seed=0, return_parts=v),
     False, None),
    ("sample_ntk.progress", "progress", lambda v: montecarlo.sample_ntk(FW, 3, seed=0, progress=v), False, None),
    ("sample_ntk_eigs.progress", "progress", lambda v: montecarlo.sample_ntk_eigs(FW, 3, seed=0, progress=v), False,
     None),
    ("sample_nngp_kernel.return_all", "return_all",
     lambda v: montecarlo.sample_nngp_kernel(NET, np.eye(2, 8), seed=0, return_all=v), False, None),
    ("sample_nngp_kernel.return_samples", "return_samples",
     lambda v: montecarlo.sample_nngp_kernel(NET, np.eye(2, 8), seed=0, return_samples=v), False, None),
    ("sample_nngp_kernel.progress", "progress",
     lambda v: montecarlo.sample_nngp_kernel(NET, np.eye(2, 8), seed=0, progress=v), False, None),
    ("ginibre_product_eigs.progress", "progress", lambda v: ginibre_product_eigs(4, 2, seed=0, progress=v), False,
     None),
    ("free_product_eigs.progress", "progress", lambda v: free_product_eigs([np.ones(3)] * 2, seed=0, progress=v),
     False, None),
    ("StructuredNetwork.last_activation", "last_activation",
     lambda v: sops.StructuredNetwork([[sops.DenseFactor(np.eye(3))], [sops.DenseFactor(np.eye(3))]],
                                      activations.activation("tanh"), np.ones(3), last_activation=v)
     .jacobian_gram().to_dense(), False, None),
    ("Measure.expect.conditional", "conditional", lambda v: law("arcsine").expect(np.cos, lb=1.5, conditional=v),
     False, None),
    ("sum_class_counts.diagonal", "diagonal", lambda v: emn_study.sum_class_counts(3, diagonal=v), False, None),
    ("sum_class_probabilities.diagonal", "diagonal", lambda v: emn_study.sum_class_probabilities(3, diagonal=v),
     False, None),
    ("class_allocation.diagonal", "diagonal", lambda v: emn_study.class_allocation(3, diagonal=v), False, None),
    ("sample_symmetric_binary.diagonal", "diagonal",
     lambda v: emn_study.sample_symmetric_binary(3, 2, 2, rng=0, diagonal=v), False, None),
    ("training_matrices.diagonal", "diagonal", lambda v: emn_study.training_matrices(3, 4, rng=0, diagonal=v), False,
     None),
    ("train_emn.diagonal", "diagonal", lambda v: emn_study.train_emn(nm.EMN(3, seed=0), diagonal=v, size=4), False,
     SLOW_FLAG_VALUES),
    ("train_emn.progress", "progress", lambda v: emn_study.train_emn(nm.EMN(3, seed=0), progress=v, size=4), False,
     SLOW_FLAG_VALUES),
    ("emn_run.diagonal", "diagonal", lambda v: emn_study.emn_run("control", 3, 1, 1, 0, n_test=10, diagonal=v),
     False, SLOW_FLAG_VALUES),
    ("gradient_descent_outcome.stop_at_rise", "stop_at_rise",
     lambda v: rl.gradient_descent_outcome(RL_NET, RL_DATA, 0.01, 2, stop_at_rise=v), False, None),
    ("sharpness_sweep.progress", "progress", lambda v: sharp_study.sharpness_sweep([0.5], progress=v, **SS_RUN),
     False, SLOW_FLAG_VALUES),
]
for _flag in ("nested", "diagonal", "progress", "return_runs", "batched"):
    FLAGS.append((f"sweep_emn.{_flag}", _flag,
                  (lambda f: lambda v: emn_study.sweep_emn(("control",), (3,), (1,), (1,), n_test=10, store=None,
                                                           **{"progress": False, f: v}))(_flag), False,
                  SLOW_FLAG_VALUES))


@pytest.mark.parametrize("name, arg, call, none_ok, values", FLAGS, ids=[f[0] for f in FLAGS])
def test_flags(name, arg, call, none_ok, values):
    """Every boolean parameter of the public functions and classes (about 90): True and False (Python's or
    NumPy's) accepted; 1, 0, 1.0, "yes", "no", "True", "False", "", [True], a 1-element array refused naming the
    flag; None only where documented; a 0-d bool array or tensor at the edge. Each row tries every value (the stress
    profile adds 10 drawn values of any kind)."""
    verdict = lambda v: fi.flag_verdict(v, none_ok)                   # noqa: E731
    for value in values if values is not None else fi.FLAG_VALUES:
        judge("flags", name, arg, call, verdict, value)
    if STRESS and values is None:
        @examples(1)
        @given(scalars())
        def run(value):
            judge("flags", name, arg, call, verdict, value)
        run()


# --- paths(): every kind of path for every path argument ------------------------------------------------------------
RAW_ERRORS = (OSError, KeyError, AttributeError, IndexError, LookupError, json.JSONDecodeError, UnicodeError)
COMPUTED = "rmtnet-fuzz: the simulation started before --outdir was checked"


def _tiny_train(**kw):
    return training.train(nm.MLP([4, 3, 2], seed=0), TINY, **{"epochs": 1, "batch_size": 4, "progress": False, **kw})


def _tiny_sweep(store, **kw):
    return sweep(**{"fn": _score, "grid": {"a": [1, 2]}, "seeds": (0,), "store": store, "progress": False, **kw})


def _figure():
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([0, 1])
    return fig


def _cli_outdir(outdir):
    """``rmtnet run spiral_decision_boundaries --outdir OUTDIR --jobs 1`` with the simulation itself replaced by a
    marker: an unusable OUTDIR must be refused before the simulation would start."""
    import runpy

    def started(*args, **kwargs):
        raise RuntimeError(COMPUTED)
    runpy.run_path = started
    return cli.main(["run", "spiral_decision_boundaries", "--outdir", os.fsdecode(outdir), "--jobs", "1"])


def _store_at(path):
    """A runs store of two runs at ``path``: the sweep of :func:`_tiny_sweep`."""
    _tiny_sweep(path)
    return path


def _checkpoint_at(path):
    _tiny_train(checkpoint=path)
    return path


def path_value(kind, tmp, suffix, want):
    """``(value, runs)``: a path of ``kind`` in the folder ``tmp`` for an argument that wants ``want`` ("file": a
    file to write, "dir": a folder to write into, "store": a runs store to append to or read, "checkpoint": a
    checkpoint to write or resume); ``runs`` is the number of runs a store of that kind holds (or None)."""
    target = tmp / f"out{suffix}"
    if kind in ("str", "pathlib", "bytes"):
        if want == "read":
            _store_at(target)
        value = {"str": str(target), "pathlib": target, "bytes": os.fsencode(str(target))}[kind]
        return value, (2 if want == "read" else None)
    if kind == "none":
        return None, None
    if kind == "int":
        return 3, None
    if kind == "missing":
        return tmp / "no" / "such" / f"out{suffix}", None
    if kind == "file_as_dir":
        (tmp / "blocker").write_text("a file standing where a folder is wanted\n")
        return (tmp / "blocker") if want == "dir" else tmp / "blocker" / f"out{suffix}", None
    if kind == "under_file":
        (tmp / "blocker").write_text("a file standing where a folder is wanted\n")
        return tmp / "blocker" / "sub", None
    if kind == "odd_name":
        return tmp / "a folder ü" / f"out put é{suffix}", None
    if kind == "dir_as_file":
        (tmp / "adir").mkdir()
        return tmp / "adir", None
    if kind == "readonly":
        fi.make_readonly(tmp / "ro")
        return (tmp / "ro" / "sub") if want == "dir" else tmp / "ro" / f"out{suffix}", None
    if kind == "not_a_store":
        (tmp / "data.csv").write_text("a,b\n1,2\n3,4\n")
        return tmp / "data.csv", None
    if kind == "crlf_store":
        path = _store_at(tmp / "runs.csv")
        path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        return path, 2
    if kind in ("corrupt_json_store", "corrupt_bytes_store"):
        path = _store_at(tmp / "runs.csv")
        lines = path.read_bytes().splitlines(keepends=True)
        lines[1] = (lines[1].replace(b'{"', b'{{"x', 1) if kind == "corrupt_json_store"
                    else b"\xff\xfe\x00garbage,\x80\x81\n")
        path.write_bytes(b"".join(lines))
        return path, None
    if kind == "corrupt_checkpoint":
        (tmp / "ck.pt").write_bytes(b"not a checkpoint\x00\xff\xfe")
        return tmp / "ck.pt", None
    if kind == "truncated_checkpoint":
        path = _checkpoint_at(tmp / "ck.pt")
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return path, None
    raise AssertionError(kind)


T, F, E = True, False, None                    # valid, invalid, at the edge (a named refusal or a success)
WRITE_FILE = dict(str=T, pathlib=T, bytes=E, none=T, int=F, missing=E, odd_name=E, file_as_dir=F, dir_as_file=F,
                  readonly=F)
WRITE_DIR = dict(str=T, pathlib=T, bytes=E, none=F, int=F, missing=T, odd_name=T, file_as_dir=F, under_file=F,
                 readonly=F)
# (entry point.argument, the argument, call, what it wants, the file suffix, verdict per kind)
PATHS = [
    ("train.checkpoint", "checkpoint", lambda v: _tiny_train(checkpoint=v), "checkpoint", ".pt",
     {**WRITE_FILE, "corrupt_checkpoint": F, "truncated_checkpoint": F}),
    ("train.metrics", "metrics", lambda v: _tiny_train(metrics=v), "file", ".csv", WRITE_FILE),
    ("train.checkpoint=metrics", "checkpoint", lambda v: _tiny_train(checkpoint=v, metrics=v), "file", ".csv",
     {"str": F, "pathlib": F, "missing": F}),            # one path for two outputs: each would overwrite the other
    ("sweep.store", "store", lambda v: len(_tiny_sweep(v)), "store", ".csv",
     {**WRITE_FILE, "not_a_store": F, "crlf_store": T, "corrupt_json_store": F, "corrupt_bytes_store": F}),
    ("read_store.store", "store", lambda v: len(read_store(v)), "read", ".csv",
     {"str": T, "pathlib": T, "bytes": E, "none": F, "int": F, "missing": F, "dir_as_file": F, "not_a_store": F,
      "crlf_store": T, "corrupt_json_store": F, "corrupt_bytes_store": F}),
    ("sharpness_sweep.store", "store", lambda v: len(sharp_study.sharpness_sweep([0.5], store=v, **SS_RUN)), "store",
     ".csv", {"int": F, "file_as_dir": F, "dir_as_file": F, "not_a_store": F, "corrupt_json_store": F}),
    ("plot.save.path", "path", lambda v: plot.save(_figure(), v), "file", ".png", {**WRITE_FILE, "none": F}),
    ("figures.output_dir.outdir", "outdir", figures.output_dir, "dir", "", WRITE_DIR),
    ("figures.make.outdir", "outdir", lambda v: _make(outdir=v), "dir", "", WRITE_DIR),
    ("cli.run.--outdir", "outdir", _cli_outdir, "dir", "", dict(file_as_dir=F, under_file=F, readonly=F)),
]
PATH_CASES = [(row, kind) for row in PATHS for kind in row[5] if not (kind == "readonly" and fi.AS_ROOT)]


def _judge_refusal(name, arg, kind, value, exc, path_named):
    """A refusal must be clear: a ValueError/TypeError naming the argument, or for a damaged file one naming the
    file (and the line, for a CSV store); never a raw OSError/KeyError/JSONDecodeError."""
    message = str(exc)
    if kind.startswith("corrupt") or kind.startswith("truncated"):
        if isinstance(exc, RAW_ERRORS) or not path_named(message):
            return f"unclear error for a damaged file {type(exc).__name__}: {message[:300]}"
        if "store" in kind and not re.search(r"line \d+", message):
            return f"the damaged line is not named: {type(exc).__name__}: {message[:300]}"
        return None
    if kind == "missing" and isinstance(exc, FileNotFoundError) and fi.names(message, arg):
        return None                                     # reading a file that is not there: Python's own error, named
    if not isinstance(exc, CLEAR) or isinstance(exc, RAW_ERRORS):
        return f"unclear error {type(exc).__name__}: {message[:300]}"
    if not fi.names(message, arg):
        return f"{type(exc).__name__} does not name {arg!r}: {message[:300]}"
    return None


@pytest.mark.parametrize("row, kind", PATH_CASES, ids=[f"{r[0]}:{k}" for r, k in PATH_CASES])
def test_paths(row, kind):
    """Every path argument (train's checkpoint and metrics, sweep stores, read_store, plot.save, the figures'
    outdir, the CLI's --outdir) with every kind of path: str, pathlib.Path, bytes, None, an int, a missing parent
    folder, spaces and non-ASCII letters in the names, a file where a folder is wanted (or above it), a folder where
    a file is wanted, a read-only folder (not as root, which ignores it), one path for two outputs, an ordinary CSV
    that is not a runs store, a store with CRLF line ends (every run kept), a store or a checkpoint with a damaged
    line. A refusal names the argument (the file and line for a damaged one) and leaves every file as it was."""
    name, arg, call, want, suffix, verdicts = row
    verdict = verdicts[kind]
    CASES["paths"] += 1
    with tempfile.TemporaryDirectory(prefix="rmtnet-fuzz-paths-") as folder:
        tmp = Path(folder)
        try:
            value, runs = path_value(kind, tmp, suffix, want)
            before = fi.tree_state(tmp)
            path_named = lambda m: value is not None and fi.names(m, Path(os.fsdecode(value)).name)  # noqa: E731
            problem = _path_case(call, value, verdict, kind, runs, name, arg, path_named)
            if problem is None and verdict is not True:
                lost = fi.lost_files(before, fi.tree_state(tmp))
                problem = f"a refusal changed or deleted {lost}" if lost else None
        finally:
            fi.restore_writable(tmp)
    if problem:
        fail("paths", name, arg, f"{kind}: {value!r}", problem)


def _path_case(call, value, verdict, kind, runs, name, arg, path_named):
    """What is wrong with ``call(value)`` (None: nothing); the CLI's case runs in a child under a time limit."""
    if name.startswith("cli."):
        outcome, detail = fi.guarded(lambda: call(value), seconds=20)
        if outcome != "raised" and outcome != "ok":
            return f"no answer: {outcome} {detail}"
        said = " ".join(map(str, detail))
        if COMPUTED in said:
            return "the simulation started before the unusable --outdir was refused"
        if outcome == "ok" and detail[0].strip() == "0":
            return "an unusable --outdir gave exit status 0"
        return None if fi.names(said, arg) else f"the refusal does not name --{arg}: {said[-300:]!r}"
    try:
        out = call(value)
    except Exception as exc:                                           # noqa: BLE001 - judged below
        if verdict is True:
            return f"a valid path was refused: {type(exc).__name__}: {str(exc)[:300]}"
        return _judge_refusal(name, arg, kind, value, exc, path_named)
    if verdict is False:
        return f"accepted, giving {out!r:.100}"
    if runs is not None and isinstance(out, int) and out != runs:
        return f"{out} runs came back of the {runs} in the store"
    return None


# --- sizes_past_memory(): sizes that cannot fit must be refused at once, with the memory they would need -------------
RAM = fi.physical_memory()
SIZES = [10 ** k for k in range(7, 14)]

# (entry point.argument, the argument, call, bytes the size would need at the least)
MEMORY = [
    ("SparseMaskedLinear.in_features", "in_features",
     lambda n: nl.SparseMaskedLinear(n, 10 ** 6, density=0.5, seed=0), lambda n: 0.5 * n * 1e6 * 12),
    ("MaskedLinear.in_features", "in_features", lambda n: nl.MaskedLinear(n, 10 ** 6, seed=0),
     lambda n: n * 1e6 * 8),
    ("MaskedLinear.out_features", "out_features", lambda n: nl.MaskedLinear(1000, n, seed=0), lambda n: n * 1e3 * 8),
    ("MLP.widths", "widths", lambda n: nm.MLP([10, n, 10], seed=0), lambda n: 20 * n * 4),
    ("wishart_eigs.n", "n", lambda n: wishart_eigs(n, 10, seed=0), lambda n: 8.0 * n * n),
    ("wishart_eigs.m", "m", lambda n: wishart_eigs(10 ** 4, n, seed=0), lambda n: 8e4 * n),
    ("ginibre_product_eigs.n", "n", lambda n: ginibre_product_eigs(n, 2, seed=0, progress=False),
     lambda n: 16.0 * n * n),
    ("sample_jacobian_eigs.width", "width",
     lambda n: montecarlo.sample_jacobian_eigs(NET, width=n, seed=0, progress=False), lambda n: 8.0 * n * n),
    ("sample_jacobian_eigs.n_samples", "n_samples",
     lambda n: montecarlo.sample_jacobian_eigs(NET, n_samples=n, seed=0, progress=False), lambda n: 64.0 * n),
    ("sample_ck_eigs.n_data", "n_data", lambda n: montecarlo.sample_ck_eigs(CK_NET, n, seed=0, progress=False),
     lambda n: 8.0 * 8 * n),                     # the features (width 8 × n_data), not the n_data² Gram
    ("sample_ntk_eigs.n_data", "n_data", lambda n: montecarlo.sample_ntk_eigs(FW, n, seed=0, progress=False),
     lambda n: 8.0 * n * n),
    ("Measure.rvs.size", "size", lambda n: MarchenkoPastur(0.5).rvs(n, rng=0), lambda n: 8.0 * n),
    ("Semicircle.rvs.size", "size", lambda n: Semicircle().rvs(n, rng=0), lambda n: 8.0 * n),
]


def sizes_past_memory(need):
    """The sizes 10⁷ … 10¹³ that would need more than 4× this machine's memory (``need(n)`` bytes): the default
    profile takes the smallest, the largest and one between; the stress profile all of them."""
    past = [n for n in SIZES if need(n) > 4 * RAM]
    return past if STRESS or len(past) <= 3 else [past[0], past[len(past) // 2], past[-1]]


@pytest.mark.parametrize("name, arg, call, need", MEMORY, ids=[m[0] for m in MEMORY])
def test_sizes_past_memory(name, arg, call, need):
    """Every size argument that allocates (layers, MLP widths, Wishart and Ginibre matrices, the Monte Carlo
    samplers' widths, data and sample counts, a law's rvs size) at 10⁷ … 10¹³ where that cannot fit (over 4× the
    memory): refused within 5 s by a MemoryError or ValueError naming the argument and the memory needed. Each call
    runs in a forked child with 5 s and 3 GiB of address space, so that a regression fails instead of hanging the
    suite or swapping the machine."""
    for n in sizes_past_memory(need):
        CASES["sizes_past_memory"] += 1
        outcome, detail = fi.guarded(lambda: call(n), seconds=5)
        if outcome == "timeout":
            problem = "no answer within 5 s"
        elif outcome != "raised":
            problem = f"{outcome}: {detail!r:.200} (needs {need(n):.3g} bytes)"
        else:
            kind, message, clear, memory = detail[:4]
            if not (memory or kind in ("ValueError", "OverflowError")):
                problem = f"unclear error {kind}: {message[:300]}"
            elif not fi.names(message, arg):
                problem = f"{kind} does not name {arg!r}: {message[:300]}"
            elif not fi.states_bytes(message):
                problem = f"{kind} does not state the memory needed: {message[:300]}"
            else:
                problem = None
        if problem:
            fail("sizes_past_memory", name, arg, str(n), problem)


# --- bad_callables(): user functions that return the wrong thing ----------------------------------------------------
def _raises(*args, **kwargs):
    raise RuntimeError("raised inside the user's function")


def _ce(out, y):
    return torch.nn.functional.cross_entropy(out, y)


def _constant_lr(opt, total):
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0)


def _nan_lr(opt, total):
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: math.nan)


BAD_RETURNS = {                    # label: (the callable's result as a function of its first argument, verdict)
    "float": (lambda x: 1.0, F), "None": (lambda x: None, F), "str": (lambda x: "a", F),
    "NaN": (lambda x: math.nan, F), "list": (lambda x: [1.0, 2.0], F), "raises": (_raises, "raises"),
}

CALLABLES = [
    # (entry point.argument, the argument (or the names a message may use), call, {label: (callable, verdict)})
    ("train.loss", ("loss",), lambda f: _tiny_train(loss=f), {
        "a mean loss": (_ce, T), "a float": (lambda o, y: 1.0, F), "a NumPy float": (lambda o, y: np.float64(1.0), F),
        "a tensor without a graph": (lambda o, y: torch.tensor(1.0), F),
        "a vector": (lambda o, y: torch.nn.functional.cross_entropy(o, y, reduction="none"), F),
        "NaN": (lambda o, y: _ce(o, y) * math.nan, F), "None": (lambda o, y: None, F), "a str": (lambda o, y: "l", F),
        "raises": (_raises, "raises")}),
    ("train.schedule", ("schedule",), lambda f: _tiny_train(schedule=f), {
        "a scheduler": (_constant_lr, T), "None": (lambda o, t: None, F), "a float": (lambda o, t: 0.5, F),
        "a str": (lambda o, t: "cosine", F), "the optimizer": (lambda o, t: o, F),
        "a NaN learning rate": (_nan_lr, F), "raises": (_raises, "raises")}),
    ("train.probes", ("probes", "fuzzprobe"), lambda f: _tiny_train(probes={"fuzzprobe": f}), {
        "a number": (lambda m, d: 1.0, T), "a str": (lambda m, d: "x", F), "None": (lambda m, d: None, F),
        "a vector": (lambda m, d: np.ones(3), F), "NaN": (lambda m, d: math.nan, F),
        "raises": (_raises, "raises")}),
    ("Measure.expect.func", ("func",), lambda f: law("arcsine").expect(f), {
        "cos": (np.cos, T), "a constant": (lambda x: 1.0, E), "a str": (lambda x: "a", F),
        "None": (lambda x: None, F), "a vector": (lambda x: np.ones(3), F), "NaN": (lambda x: x * math.nan, F),
        "complex": (lambda x: 1j * x, E), "raises": (_raises, "raises")}),
    ("gaussian_pushforward.f", ("f",), lambda f: gaussian_pushforward(f, 1.0), {
        "tanh": (np.tanh, T), "a str": (lambda h: "a", F), "None": (lambda h: None, F),
        "a vector": (lambda h: np.ones(3), F), "NaN": (lambda h: h * math.nan, F),
        "complex": (lambda h: np.exp(1j * h), F), "raises": (_raises, "raises")}),
    ("sweep.fn", ("fn",), lambda f: _sweep(fn=f), {
        "a dict": (lambda seed, **c: {"v": 1.0}, T), "None": (lambda seed, **c: None, F),
        "a str": (lambda seed, **c: "v", F), "a float": (lambda seed, **c: 1.0, F),
        "a list": (lambda seed, **c: [1.0], F), "a vector result": (lambda seed, **c: {"v": np.ones(3)}, F),
        "a dict result": (lambda seed, **c: {"v": {"w": 1.0}}, F), "raises": (_raises, "raises")}),
]
CALLABLE_CASES = [(row, label) for row in CALLABLES for label in row[3]]


@pytest.mark.parametrize("row, label", CALLABLE_CASES, ids=[f"{r[0]}:{lb}" for r, lb in CALLABLE_CASES])
def test_bad_callables(row, label):
    """User functions that return the wrong thing — a float where a tensor with a graph is wanted, a vector, NaN,
    None, a str, or that raise — as train's loss, schedule and probes, Measure.expect's func,
    gaussian_pushforward's f and a sweep's fn: a clear error (ValueError/TypeError/OverflowError, or a SweepError
    of the sweep) naming the callable's argument; one that raises may also let its own exception through."""
    name, args, call, cases = row
    f, verdict = cases[label]
    CASES["bad_callables"] += 1
    try:
        out = call(f)
    except Exception as exc:                                           # noqa: BLE001 - judged below
        message = str(exc)
        if verdict == "raises" and "raised inside the user's function" in message and not any(
                fi.names(message, a) for a in args):
            return                                                     # the user's own exception, unchanged
        if verdict is True:
            return fail("bad_callables", name, args[0], label, f"refused: {type(exc).__name__}: {message[:300]}")
        if not isinstance(exc, (*CLEAR, SweepError)) or isinstance(exc, RAW_ERRORS):
            return fail("bad_callables", name, args[0], label, f"unclear error {type(exc).__name__}: {message[:300]}")
        if not any(fi.names(message, a) for a in args):
            return fail("bad_callables", name, args[0], label,
                        f"{type(exc).__name__} does not name {args[0]!r}: {message[:300]}")
        return
    if verdict is False or verdict == "raises":
        return fail("bad_callables", name, args[0], label, f"accepted, giving {out!r:.200}")
    if not _all_finite(_floats(out)):
        fail("bad_callables", name, args[0], label, f"a non-finite result: {out!r:.200}")


# --- NaN inside grids and results -------------------------------------------------------------------------------------
def _rate_score(rate, seed):
    return {"v": 1.0}


def _nan_result(value):
    return lambda seed, **config: {"v": value}


K_TRAIN = kernels.ntk_kernel(KNET, XS)
ETA_CRITICAL = 2 * YS.size / float(np.linalg.eigvalsh(K_TRAIN).max())    # 2N/λ_max(Θ): discrete GD's border


def _flagged(call):
    """``(raised, warnings)`` of ``call()``: the exception (or None) and the warnings' messages."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as exc:                                       # noqa: BLE001 - judged by the caller
            return exc, [str(w.message) for w in caught]
    return None, [str(w.message) for w in caught]


NAN_GRIDS = [[math.nan], [math.inf], [-math.inf], [1.0, math.nan], [np.float64(math.nan)], [np.float32(math.inf)],
             [torch.tensor(math.nan)], np.array([1.0, math.nan])]
NAN_RESULTS = [math.nan, math.inf, -math.inf, np.float64(math.nan), np.float32(math.inf), torch.tensor(math.nan)]
ETA_FACTORS = [1.5, 3.0, 10.0, 1e3, 1e6]


def nan_cases():
    """(label, kind, value): NaN/inf grid values, NaN/inf results of a sweep's fn, learning rates above discrete
    GD's border 2N/λ_max (and the valid controls of each)."""
    cases = [(f"grid {v!r}", "grid", v) for v in NAN_GRIDS] + [("grid [1.0, 2.0]", "grid", [1.0, 2.0])]
    cases += [("grid of dicts", "grid", [{"rate": 1.0}, {"rate": math.nan}])]
    cases += [(f"result {v!r}", "result", v) for v in NAN_RESULTS] + [("result 1.0", "result", 1.0)]
    cases += [(f"learning_rate {c}×critical", "ntk_predict", c) for c in ETA_FACTORS + [0.5]]
    cases += [(f"gradient_descent_mse {c}×critical", "gd_mse", c) for c in ETA_FACTORS + [0.5]]
    return cases


def _nan_case(kind, value):
    """``(call, the argument a refusal names, valid)``."""
    if kind == "grid":
        grid = value if isinstance(value, list) and value and isinstance(value[0], dict) else {"rate": value}
        return (lambda: _sweep(fn=_rate_score, grid=grid), "rate",
                all(isinstance(x, float) and math.isfinite(x) for x in ([d["rate"] for d in value]
                                                                          if isinstance(grid, list) else value)))
    if kind == "result":
        return lambda: _sweep(fn=_nan_result(value)), "fn", _is_real(value)
    eta = value * ETA_CRITICAL
    if kind == "ntk_predict":
        return (lambda: predict.ntk_predict(KNET, XS, YS, XS[:2], learning_rate=eta, steps=1000),
                "learning_rate", value < 1)
    predictor = lambda: predict.gradient_descent_mse(K_TRAIN, YS, learning_rate=eta, steps=True)(  # noqa: E731
        1000, np.zeros_like(YS))
    return predictor, "learning_rate", value < 1


@pytest.mark.parametrize("label, kind, value", nan_cases(), ids=[c[0] for c in nan_cases()])
def test_nan_in_grids_and_results(label, kind, value):
    """NaN and ±inf as sweep grid values (refused naming the grid key), as a sweep fn's results (flagged: an error
    or a warning saying so, never stored silently), and discrete gradient descent past its border η > 2N/λ_max(Θ)
    in ntk_predict and gradient_descent_mse (refused or warned naming learning_rate, never NaN returned)."""
    call, arg, valid = _nan_case(kind, value)
    CASES["nan_in_grids_and_results"] += 1
    exc, said = _flagged(call)
    if valid:
        if exc is not None:
            fail("nan_in_grids_and_results", kind, arg, label, f"refused: {type(exc).__name__}: {exc}")
        return
    if exc is not None:
        if not isinstance(exc, (*CLEAR, SweepError)) or isinstance(exc, RAW_ERRORS):
            return fail("nan_in_grids_and_results", kind, arg, label, f"unclear error {type(exc).__name__}: {exc}")
        if not fi.names(str(exc), arg) and not (kind == "result" and fi.names(str(exc), "v")):
            return fail("nan_in_grids_and_results", kind, arg, label,
                        f"{type(exc).__name__} does not name {arg!r}: {str(exc)[:300]}")
        return
    if kind in ("result", "ntk_predict", "gd_mse") and any(
            fi.names(m, arg) or re.search(r"nan|inf|finite|diverg", m, re.I) for m in said):
        return                                                         # flagged by a warning
    fail("nan_in_grids_and_results", kind, arg, label, f"accepted silently (warnings: {said[:2]})")


def test_law_moments_do_not_overflow():
    """PointMasses at ±1e308: the variance is finite-valued in float64 only as inf — an OverflowError, never inf."""
    CASES["nan_in_grids_and_results"] += 1
    try:
        out = PointMasses([1e308, -1e308], [0.5, 0.5]).var()
    except OverflowError:
        return
    except Exception as exc:                                           # noqa: BLE001
        return fail("nan_in_grids_and_results", "PointMasses.var", "locations", "[1e308, -1e308]",
                    f"unclear error {type(exc).__name__}: {exc}")
    if not math.isfinite(out):
        fail("nan_in_grids_and_results", "PointMasses.var", "locations", "[1e308, -1e308]", f"returned {out}")


def test_generated_case_count(request):
    """The fuzz above generated at least 1000 cases (when the whole module ran: a selection of it counts less)."""
    defined = {name for name, f in vars(request.module).items() if name.startswith("test_") and callable(f)}
    selected = {item.originalname for item in request.session.items if item.module is request.module}
    if defined - selected:
        pytest.skip(f"only part of the fuzz was selected (not {sorted(defined - selected)})")
    total = sum(CASES.values())
    print(f"\nfuzz cases generated: {total} ({dict(CASES)})")
    assert total >= 1000, dict(CASES)
