"""Input validation and the engine's error type: the argument checks every layer of rmtnet shares (the base of the
package: it imports nothing of rmtnet but the backend)."""
from __future__ import annotations

import numbers

import numpy as np

from . import backend as B


class ConvergenceError(RuntimeError):
    """A numerical solve did not converge. Carries where (``z``), how far (``iteration``) and how badly (``residual``)."""

    def __init__(self, message, *, z=None, iteration=None, residual=None):
        self.z, self.iteration, self.residual = z, iteration, residual
        super().__init__(f"{message} (z={z!r}, iteration={iteration}, residual={residual!r})")


def scalar(value):
    """The Python number a NumPy scalar, a 0-d NumPy or CuPy array or a 0-d torch tensor holds (``np.float32(0.5)``,
    ``np.array(4)``, ``torch.tensor(0.5)`` → 0.5, 4, 0.5; a bool-typed one → a bool, a complex one → a complex, so
    the checks below still refuse them where a real number is wanted); anything else unchanged. Duck-typed (``ndim
    == 0`` and ``item()``), so this base layer imports no torch. A 1-element 1-d array stays an array: its shape is a
    mistake, not a number."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return value
    if isinstance(value, np.generic) or (getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None))):
        try:
            item = value.item()
        except (TypeError, ValueError, RuntimeError, AttributeError):
            return value
        return item if isinstance(item, (bool, int, float, complex)) else value
    return value


def _finite_float(value):
    """``value`` as a finite float, or None: bools, non-reals, NaN, ±inf and integers beyond float64 are not."""
    value = scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        value = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return value if np.isfinite(value) else None


def real_scalar(name, value, *, lo=None, hi=None, lo_open=False, hi_open=False):
    """Return ``value`` as a float, or raise ValueError naming ``name`` and the allowed range (a bool, a string, an
    array, NaN, ±inf or an integer beyond float64 is not a finite real number)."""
    original, value = value, _finite_float(value)
    if value is None:
        raise ValueError(f"{name} must be a finite real number, got {_short(original)}")
    bad_lo = lo is not None and (value <= lo if lo_open else value < lo)
    bad_hi = hi is not None and (value >= hi if hi_open else value > hi)
    if bad_lo or bad_hi:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        rng = f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"
        raise ValueError(f"{name} must lie in {rng}, got {value!r}")
    return value


def integer_at_least(name, value, lo=1):
    """Return ``value`` as an int, or raise ValueError naming ``name`` and the bound (bools are not integers)."""
    number = scalar(value)
    if isinstance(number, bool) or not isinstance(number, numbers.Integral) or number < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {_short(value)}")
    return int(number)


def whole_number(name, value, lo=1):
    """Return ``value`` as an int ≥ ``lo`` where it is an integer or an integral float (3.0, np.float64(3.0), a 0-d
    array or tensor holding one), or raise ValueError naming ``name`` and the bound (bools, 2.5, NaN, ±inf and text
    are not whole numbers)."""
    number = _finite_float(value)
    if isinstance(scalar(value), numbers.Integral) and not isinstance(scalar(value), bool):
        number = scalar(value)
    if number is None or int(number) != number or number < lo:
        bound = {0: "a non-negative integer", 1: "a positive integer"}.get(lo, f"an integer >= {lo}")
        raise ValueError(f"{name} must be {bound}, got {_short(value)}")
    return int(number)


def positive_integers(**named):
    """Check each ``name=value`` with :func:`integer_at_least` (≥ 1); returns the ints in the order given."""
    return [integer_at_least(name, value, 1) for name, value in named.items()]


INPUT_MAX = 1e75      # |x| above this: the kernels' products of two squared norms (~|x|⁴) leave float64


def input_rows(name, X):
    """Inputs as rows: a finite 2-D array with B, n₀ ≥ 1 and entries of magnitude at most :data:`INPUT_MAX`."""
    X = finite_array(name, X)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (inputs as rows, shape (B, n0) with B, n0 ≥ 1), "
                         f"got shape {X.shape}")
    top = float(abs(X).max())
    if top > INPUT_MAX:
        raise ValueError(f"{name} must have entries of magnitude at most {INPUT_MAX:g} (the kernels multiply "
                         f"squared norms, ~|x|⁴, which must stay within float64), got max |x| = {top:g}")
    return X


def moment_order(k):
    """``k`` as an int ≥ 0 (the order of a moment), or ValueError naming ``k`` (bools, strings and None are not
    integers; an integral float such as 3.0 is accepted)."""
    return whole_number("k", k, 0)


def probabilities(name, q):
    """q as a float array with every entry in [0, 1], or ValueError naming ``name``."""
    q = finite_array(name, q)
    if np.any((q < 0) | (q > 1)):
        raise ValueError(f"{name} must lie in [0, 1], got values in [{float(np.min(q))!r}, {float(np.max(q))!r}]")
    return q


def one_of(name, value, allowed):
    """Return ``value`` if it is among ``allowed``, else raise ValueError naming ``name`` and the choices. Only a
    string matches a string choice, and values that do not compare as one bool (an array, whose ``==`` is
    elementwise) match nothing: ``np.array(["sgd"])`` is not ``"sgd"``. A NumPy string or a 0-d array among numeric
    choices counts as the Python value it holds (returned as that value); a bool never matches a number choice."""
    original, value = value, scalar(value)
    if isinstance(value, np.str_):
        value = str(value)

    def equal(choice):
        if isinstance(value, bool) != isinstance(choice, (bool, np.bool_)):
            return False
        if isinstance(choice, str) != isinstance(value, str):
            return False
        try:
            return bool(value == choice)
        except (TypeError, ValueError):
            return False
    if not any(equal(choice) for choice in allowed):
        raise ValueError(f"{name} must be one of {allowed}, got {_short(original)}")
    return value


def boolean(name, value):
    """``value`` as a bool if it is one (Python's, NumPy's, or a 0-d bool array or tensor), else TypeError naming
    ``name``: a flag given 1, "yes" or NaN is a mistake, not a truth value."""
    flag = scalar(value)
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_short(value)}")
    return bool(flag)


SEED_MAX = 2 ** 64 - 1     # the largest seed torch's generators take (NumPy's take any integer ≥ 0)


def seed_value(name, value, hi=SEED_MAX, *, none=True, generators=True):
    """A seed as the samplers take it: an integer in [0, ``hi``] (NumPy and torch integer scalars and 0-d arrays
    included) returned as an int, None (where ``none``), or a generator (where ``generators``: a
    ``numpy.random.Generator``, a ``SeedSequence``, a ``torch.Generator`` or any object drawing ``standard_normal``)
    returned unchanged; else ValueError naming ``name`` and what it may be. A negative seed is refused, not wrapped
    round to 2**64 - |seed| as torch would."""
    if (none and value is None) or (generators and (isinstance(value, np.random.SeedSequence)
                                                    or hasattr(value, "standard_normal")
                                                    or hasattr(value, "manual_seed"))):
        return value
    number = scalar(value)
    if isinstance(number, bool) or not isinstance(number, numbers.Integral) or not 0 <= number <= hi:
        what = ", ".join(["None"] * none + ["a generator"] * generators + [f"an integer in [0, {hi}]"])
        raise ValueError(f"{name} must be {what}, got {_short(value)}")
    return int(number)


def probability_vector(name, masses, *, total=1.0, tol=1e-10):
    """Masses that are finite, non-negative and sum to ``total`` (within ``tol``)."""
    masses = finite_array(name, masses)
    if masses.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {masses.shape}")
    if np.any(masses < 0):
        raise ValueError(f"{name} must be non-negative, got min {masses.min()!r}")
    if total is not None and abs(masses.sum() - total) > tol:
        raise ValueError(f"{name} must sum to {total} (within {tol}), got {masses.sum()!r}")
    return masses


def finite_array(name, x, dtype=float):
    """``x`` as an array of ``dtype`` with every entry finite, or ValueError naming ``name``. The array stays where
    it is: a CuPy array comes back a CuPy array (host data, lists and scalars as NumPy). Text is not numbers, even
    text NumPy could parse ("1"), nor are bools, and complex values are not real ones where ``dtype`` is real."""
    kind = _kind(x)
    if kind in ("U", "S", "V", "b") or (kind == "c" and not np.issubdtype(np.dtype(dtype), np.complexfloating)):
        want = "complex" if np.issubdtype(np.dtype(dtype), np.complexfloating) else "real"
        raise ValueError(f"{name} must be {want} numbers (a number or an array of them), got {_short(x)}")
    try:
        arr = B.as_array(x, dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be real numbers (a number or an array of them), got {_short(x)} "
                         f"({exc})") from None
    if arr.dtype == object:
        raise ValueError(f"{name} must be real numbers, got {_short(x)}")
    if not bool(np.all(np.isfinite(arr))):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def runs_table(name, runs, columns, *, of=None, min_rows=1):
    """Return ``runs`` if it is a pandas DataFrame holding ``columns`` and at least ``min_rows`` rows: the one check
    of every study function that reads a sweep's table. A value that is not a DataFrame raises TypeError; missing
    columns or too few rows raise ValueError. Each names ``name``, what the table should come from (``of``, e.g.
    "a spectra_run sweep"), the columns required and those missing.

    Examples
    --------
    >>> import pandas as pd
    >>> runs_table("runs", pd.DataFrame({"seed": [0], "test_error": [0.1]}), ["seed", "test_error"]).shape
    (1, 2)
    >>> runs_table("runs", pd.DataFrame({"seed": [0]}), ["seed", "test_error"], of="a sweep")
    Traceback (most recent call last):
    ...
    ValueError: runs must be the table of a sweep with the columns ['seed', 'test_error'] and at least 1 row; missing ['test_error'], 1 row
    """
    import pandas as pd                       # pandas only where a table is read: the base imports NumPy alone

    source = f"the table of {of}" if of else "a table"
    columns = list(columns)
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"{name} must be {source} (a pandas DataFrame with the columns {columns}), got "
                        f"{type(runs).__name__}")
    missing = [c for c in columns if c not in runs.columns]
    if missing or len(runs) < min_rows:
        rows = lambda n: f"{n} row{'s' * (n != 1)}"          # noqa: E731
        raise ValueError(f"{name} must be {source} with the columns {columns} and at least {rows(min_rows)}; "
                         f"missing {missing}, {rows(len(runs))}")
    return runs


def _kind(x):
    """The NumPy dtype kind of ``x`` as given ('f', 'c', 'U' for text, …), or None where NumPy cannot tell (a ragged
    list: :func:`finite_array` then reports NumPy's own refusal)."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return getattr(dtype, "kind", None)
    if isinstance(x, (str, bytes)):
        return "U"
    try:
        return np.asarray(x).dtype.kind
    except (ValueError, TypeError):
        return None


def _short(x, limit=60):
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def log_upper(w):
    """Logarithm continuous on the closed upper half-plane (branch cut on the negative imaginary axis).

    The ⊠ engine works with log z, log ω_i and log((1+m)/m), all of which live in the closed upper half-plane;
    the principal log would jump by 2πi when a value on the negative real axis picks up an Im of -0.
    """
    return np.log(-1j * w) + 0.5j * np.pi
