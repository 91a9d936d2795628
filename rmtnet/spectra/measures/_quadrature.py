"""Double-exponential quadrature of a density and the cdf tables built on it.

Tanh-sinh nodes (Takahasi & Mori 1974, Publ. RIMS Kyoto Univ. 9, 721–741) refined by halving the step, split where
the density is not resolved; the cumulative table (Simpson in t) with its cubic Hermite interpolant; the power-law
edge tails beside a band's end; SciPy's tanh-sinh on pieces for expectations. These are the shared internals of
:mod:`rmtnet.spectra.measures`: public names of a private module."""
from __future__ import annotations

import numpy as np
from scipy import integrate, interpolate, special

from rmtnet._validation import ConvergenceError


def tanh_sinh_map(t, lo, hi):
    """x(t) and dx/dt of the tanh-sinh substitution of [lo, hi] (offsets from the ends without cancellation)."""
    s = 0.5 * np.pi * np.sinh(t)
    w = hi - lo
    x = np.where(t <= 0, lo + w * special.expit(2 * s), hi - w * special.expit(-2 * s))
    dxdt = w * 0.25 * np.pi * np.cosh(t) / np.cosh(s) ** 2
    return x, dxdt


def adaptive_tanh_sinh(f, lo, hi, rtol=1e-11, n0=400, min_level=0, max_level=5, t_max=6.0, negligible=1e-18):
    """Nested tanh-sinh quadrature of f on [lo, hi]. Returns (x, dx/dt, f(x), h) on the final nodes.

    * The t-range is cut where the offset from an end drops below what x can resolve there (a few ulp of |end|;
      1e-300 at an end at 0), so no node is spent on abscissae that round onto the end.
    * Nodes are evaluated from the middle outwards in shells of width ½ in t; a side is closed once a whole shell
      contributes less than ``negligible`` times the running integral (the usual tanh-sinh truncation: the terms
      decay double-exponentially). Nodes beyond count as 0 and are never evaluated — for a density this skips the
      points closest to a band end, which are the costliest to solve for.
    * The step is then halved (re-using every node) at least ``min_level`` times and further until the integral
      changes by less than ``rtol`` relative, or stops improving (a change that does not halve: the noise floor of
      f), at most ``max_level`` times.

    f is called only at nodes strictly inside (lo, hi), once per node."""
    def reach(end):
        tiny = max(2 * np.finfo(float).eps * abs(end), 1e-300)
        return min(t_max, float(np.arcsinh(np.log(max((hi - lo) / tiny, 2.0)) / np.pi)))

    def nodes(t):
        x, w = tanh_sinh_map(t, lo, hi)
        return x, np.where((x > lo) & (x < hi) & (w > 0), w, 0.0)

    def fill(x, w, fx, active):
        todo = active & (w > 0)
        if todo.any():
            fx[todo] = f(x[todo])

    t = np.linspace(-reach(lo), reach(hi), n0 + 1)
    h = t[1] - t[0]
    x, w = nodes(t)
    fx = np.zeros_like(x)
    a, b = max(t[0], -1.0), min(t[-1], 1.0)              # the evaluated t-range grows from [-1, 1]
    fill(x, w, fx, (t >= a) & (t <= b))
    open_left, open_right = a > t[0], b < t[-1]
    while open_left or open_right:
        left = (t < a) & (t >= a - 0.5) if open_left else np.zeros(t.size, bool)
        right = (t > b) & (t <= b + 0.5) if open_right else np.zeros(t.size, bool)
        fill(x, w, fx, left | right)
        total = abs(h * np.sum(fx * w))
        if open_left:
            a -= 0.5
            open_left = a > t[0] and np.max(np.abs(fx * w)[left], initial=0.0) * h > negligible * total
        if open_right:
            b += 0.5
            open_right = b < t[-1] and np.max(np.abs(fx * w)[right], initial=0.0) * h > negligible * total
    total = h * np.sum(fx * w)
    last_delta = np.inf
    for level in range(1, max_level + 1):
        tm = 0.5 * (t[1:] + t[:-1])
        xm, wm = nodes(tm)
        fm = np.zeros_like(xm)
        fill(xm, wm, fm, (tm >= a) & (tm <= b))
        t, x, w, fx = (_interleave(u, v) for u, v in ((t, tm), (x, xm), (w, wm), (fx, fm)))
        h /= 2
        new = h * np.sum(fx * w)
        delta = abs(new - total)
        converged = delta <= rtol * max(abs(new), 1e-300)
        # tanh-sinh error roughly squares per level; a change that no longer halves is the noise floor of f
        stalled = level >= 2 and delta > 0.5 * last_delta
        total, last_delta = new, delta
        if (converged or stalled) and level >= min_level:
            break
    return x, w, fx, h


def resolved_tanh_sinh(f, lo, hi, split_rtol=1e-9, max_depth=3, **kwargs):
    """:func:`adaptive_tanh_sinh` of f on [lo, hi], split where f is not resolved: a list of pieces laid end to end.

    The tanh-sinh sum is spectrally accurate for an integrand analytic inside the interval, and so is its own error
    estimate — as long as the nodes resolve f. A cumulative table (:func:`cumulative`) integrates between the
    nodes by local quadratics instead, and where f turns on the scale of the node spacing the two totals part:
    the free product of two 3-atom laws has a density that rises from 0.29 to 0.53 within 0.006 of a support of
    width 2.3, and its Simpson and tanh-sinh masses differed by 7.6e-6 on 1601 nodes. Where they differ by more than
    ``split_rtol`` of the whole interval's integral, the interval is split at the node where the two cumulative
    integrals' increments differ most — the feature — and each half is integrated anew (tanh-sinh crowds its nodes
    at the new end), down to ``max_depth`` levels. A split is kept only if it at least halves the discrepancy (a
    slowly decaying end singularity is not mended by cutting next to it). ``kwargs`` go to
    :func:`adaptive_tanh_sinh`."""
    return _resolved(f, lo, hi, split_rtol, max_depth, None, kwargs)[0]


def _resolved(f, lo, hi, split_rtol, depth, tol, kwargs):
    """(pieces, |Simpson − tanh-sinh| summed over them) for :func:`resolved_tanh_sinh`."""
    piece = adaptive_tanh_sinh(f, lo, hi, **kwargs)
    x, w, fx, h = piece
    g = fx * w
    simpson = integrate.cumulative_simpson(g, dx=h, initial=0.0)
    trapezoid = integrate.cumulative_trapezoid(g, dx=h, initial=0.0)
    total = h * float(np.sum(g))
    gap = abs(float(simpson[-1]) - total)
    tol = split_rtol * abs(total) if tol is None else tol
    if depth <= 0 or gap <= tol:
        return [piece], gap
    j = int(np.argmax(np.abs(np.diff(simpson - trapezoid))))
    cut = 0.5 * (x[j] + x[j + 1])
    if not lo < cut < hi:
        return [piece], gap
    left, gap_left = _resolved(f, lo, cut, split_rtol, depth - 1, tol, kwargs)
    right, gap_right = _resolved(f, cut, hi, split_rtol, depth - 1, tol, kwargs)
    if gap_left + gap_right > 0.5 * gap:
        return [piece], gap
    return left + right, gap_left + gap_right


def cumulative(pieces):
    """(v, C(v), ρ(v)) from tanh-sinh pieces (v, dv/dt, ρ(v), h) laid end to end (:func:`adaptive_tanh_sinh`):
    C by cumulative Simpson in t, each piece continuing the previous one's total; repeated abscissae (nodes that
    merge at a piece's end) dropped, and C made non-decreasing against rounding."""
    vs, cs, rs, offset = [], [], [], 0.0
    for v, w, r, h in pieces:
        c = offset + integrate.cumulative_simpson(r * w, dx=h, initial=0.0)
        vs.append(v)
        cs.append(c)
        rs.append(r)
        offset = c[-1]
    v, c, r = np.concatenate(vs), np.concatenate(cs), np.concatenate(rs)
    keep = np.concatenate([[True], np.diff(v) > 0])
    return v[keep], np.maximum.accumulate(c[keep]), r[keep]


def edge_tail(v, r, end, side):
    """(mass, β) of the density between ``end`` and the outermost node of a panel's table (v, ρ) on that ``side``
    (+1: ``end`` is the left end), from ρ ≈ c|x − end|^β: β read from the outermost node (distance d) to the first
    node at ≥ 4d, and checked from there to the first at ≥ 4 times its distance (over a factor 4 in distance,
    rounding noise in ρ hardly moves β; the three outermost nodes where the panel is too short for that); the mass
    is ρ(x₁)d/(β + 1). (0, nan) where there are fewer than three nodes, the two exponents differ by more than
    0.05 (1 + |β|), or β ≤ −1 + 1e-6."""
    if v.size < 3:
        return 0.0, np.nan
    order = np.arange(v.size) if side > 0 else v.size - 1 - np.arange(v.size)
    d = np.maximum.accumulate(np.abs(v[order] - end))      # nodes far off may round to one distance
    near = int(np.searchsorted(d, 4.0 * d[0]))
    far = int(np.searchsorted(d, 4.0 * d[min(near, d.size - 1)]))
    j = order[[near, far]] if far < d.size else order[1:3]
    j = np.concatenate([order[:1], j])
    d = np.abs(v[j] - end)
    if np.any(d <= 0) or np.any(np.diff(d) <= 0) or np.any(r[j] <= 0):
        return 0.0, np.nan
    with np.errstate(all="ignore"):
        beta = np.diff(np.log(r[j])) / np.diff(np.log(d))
    if not np.all(np.isfinite(beta)) or abs(beta[0] - beta[1]) > 0.05 * (1 + abs(beta[0])) or beta[0] <= -1 + 1e-6:
        return 0.0, np.nan
    return float(r[j[0]] * d[0] / (1.0 + beta[0])), float(beta[0])


EDGE_ULPS = 1e6     # nodes this many ulp from a panel's end (or 1e-6 of its width) are left to the edge tail


def panel_table(a, b, pieces):
    """(v, C(v), ρ(v)) of one panel, from its first to its last node with density farther than 10⁶ ulp (at most a
    millionth of the panel's width) from the panel's ends, C counted from the first kept node (the mass outside is
    the edge tails'; the width cap keeps the power law's span short where a band sits far from 0, a unit semicircle
    at 10⁸ or 5·10⁶, where 10⁶ ulp would be 10⁻² of the band). Closer in, x's own
    rounding moves the density: at (½δ_0.96 + ½δ_1.08)^{⊠2}'s inverse-square-root edges the exponent read at
    10⁻¹³ from the edge is −0.63, at 10⁻¹⁰ −0.500002 (books balanced to 2.9e-10; they were 2.1e-7 short without
    the tails, and 4e-7 over with tails read at 1000 ulp)."""
    v, c, r = cumulative(pieces)
    guard = [min(EDGE_ULPS * np.spacing(abs(end)), 1e-6 * (b - a)) for end in (a, b)]
    keep = (r > 0) & (v - a > guard[0]) & (b - v > guard[1])
    j = np.nonzero(keep)[0]
    if not j.size:
        return v, c, r
    v, c, r = v[j[0]:j[-1] + 1], c[j[0]:j[-1] + 1], r[j[0]:j[-1] + 1]
    lo = _power_law_start(v - a, c - c[0], r)
    hi = v.size - _power_law_start((b - v)[::-1], (c[-1] - c)[::-1], r[::-1])
    if lo + 4 <= hi:
        v, c, r = v[lo:hi], c[lo:hi], r[lo:hi]
    return v, c - c[0], r


_LAW_RTOL = 1e-4         # exponents read over [d, ≥ 4d] and on this close (relative to 1 + |β|): a power law
_LAW_LOOSE = 0.2         # outermost exponents this close: the nodes are kept as they are
_LAW_MASS = 1e-4         # at most this fraction of a panel's mass is handed from its nodes to an edge tail
_LAW_RUN = 4             # … at this many successive nodes (noise agrees by chance at one node in a thousand)
_LAW_BETA = (-1.0, 3.0)  # the exponents an edge can have (−1 < β: integrable; square-root, cube-root, flat, …)


def _power_law_start(d, c, r):
    """The first node, counted from a panel's end, from which on the density follows its power law at the end:
    the exponents log(ρ(d')/ρ(d))/log(d'/d) read from that node's distance d to the first node at ≥ 4d, and from
    there to the first at ≥ 4 times its distance (d the distance to the end, c the mass from the outermost node)
    lie in (−1, 3] and agree to ``_LAW_RTOL``, there and at the next three nodes, with at most ``_LAW_MASS`` of the
    panel's mass outside (0 where no node qualifies, or where the outermost node's two exponents already agree to
    ``_LAW_LOOSE``: small noise integrates to nearly nothing, while a power law read further in carries the
    density's curvature). Exponents are read over a factor 4 in distance: between
    neighbouring nodes, a smooth but steep fall (β ≈ 150, 0.35 from a band's end) reads as consistent. Outside, the
    density is rounding noise: where two atoms of ½ meet at a hard edge at 0 (MP(2) ⊠ MP(2)), ρ ∝ x^{-1/2} is
    computed from Im G beside the atom's pole 1/(2x), and the values below x ~ 1e-12 scatter by 10⁻⁴ … 10 relative
    (exponents read there −2.4, 0.1, −1.2, −0.48); integrated they put 1.5e-8 too much mass in the books, and the
    edge tail from the first clean node (4.0e-13) leaves 1.2e-10."""
    n = min(d.size, int(np.searchsorted(c, _LAW_MASS * c[-1], side="right")) + 1)
    if n <= 0 or d.size < 3:
        return 0
    i = np.arange(n)
    j = np.minimum(np.searchsorted(d, 4.0 * d[:n]), d.size - 1)
    k = np.searchsorted(d, 4.0 * d[j])
    ok = k < d.size
    i, j, k = i[ok], j[ok], k[ok]
    with np.errstate(all="ignore"):
        b1 = np.log(r[j] / r[i]) / np.log(d[j] / d[i])
        b2 = np.log(r[k] / r[j]) / np.log(d[k] / d[j])
        lawful = np.isfinite(b1) & np.isfinite(b2) & (b1 > _LAW_BETA[0]) & (b1 <= _LAW_BETA[1])
        spread = np.abs(b1 - b2) / (1.0 + np.abs(b1))
    if i.size and i[0] == 0 and lawful[0] and spread[0] <= _LAW_LOOSE:
        return 0           # noise the quadrature averages out: walking in would trade it for the tail's curvature
    good = lawful & (spread <= _LAW_RTOL)
    if good.size < _LAW_RUN:
        return 0
    first = np.nonzero(np.lib.stride_tricks.sliding_window_view(good, _LAW_RUN).all(axis=1))[0]
    return int(i[first[0]]) if first.size else 0


def cumulative_panels(panels, tails):
    """(v, C(v), ρ(v)) over the panels' tables [(a, b, v, C, ρ)] (:func:`panel_table`) laid end to end, with each
    panel's edge tails [(left mass, β), (right mass, β)] (:func:`edge_tail`): a panel's ends join as nodes, C
    rising by the left tail's mass between a and the first node and by the right tail's between the last node and b
    (inside those cells the cdf follows the tail's power law, see :meth:`Measure._tail_cells`)."""
    vs, cs, rs, offset = [], [], [], 0.0
    for (a, b, v, c, r), ((left, _), (right, _)) in zip(panels, tails):
        top = offset + left + c[-1] + right
        vs.append(np.concatenate([[a], v, [b]]))
        cs.append(np.concatenate([[offset], offset + left + c, [top]]))
        rs.append(np.concatenate([[0.0], r, [0.0]]))
        offset = top
    if not vs:
        return np.empty(0), np.empty(0), np.empty(0)
    v, c, r = np.concatenate(vs), np.concatenate(cs), np.concatenate(rs)
    keep = np.concatenate([[True], np.diff(v) > 0])
    return v[keep], np.maximum.accumulate(c[keep]), r[keep]


def hermite(v, c, r):
    """C between the nodes: the cubic Hermite interpolant of (C, C' = ρ) — fourth order in the node spacing, and
    exact for a piecewise-linear density on its own grid."""
    with np.errstate(all="ignore"):      # cells of width ~1e-300 at a singular end at 0 overflow; see hermite_at
        return interpolate.CubicHermiteSpline(v, c, r, extrapolate=False)


def hermite_at(spline, v, nodes, values):
    """``spline`` at v, clamped to [0, values[-1]]; linear interpolation of the table where the cubic is not finite
    (outside the outermost nodes, or a cell of width ~1e-300 next to a singular end that overflowed)."""
    with np.errstate(all="ignore"):
        c = spline(v)
    return np.clip(np.where(np.isfinite(c), c, np.interp(v, nodes, values)), 0.0, values[-1])


def _interleave(a, b):
    out = np.empty(a.size + b.size, dtype=np.result_type(a, b))
    out[0::2], out[1::2] = a, b
    return out



def apply_elementwise(func, x):
    """func(x) for an array x, checked to be elementwise (a scalar result is broadcast)."""
    y = np.asarray(func(x))
    if y.dtype.kind not in "biufc":
        raise TypeError(f"func must return numbers (real or complex, elementwise on arrays), but it returned "
                        f"{_shown(y)} of dtype {y.dtype}")
    if y.ndim == 0:
        y = np.broadcast_to(y, np.shape(x))
    if y.shape != np.shape(x):
        raise ValueError(f"func must act elementwise: for x of shape {np.shape(x)} it returned shape {y.shape}")
    nan = np.isnan(y)
    if np.any(nan):
        raise ValueError(f"func returned NaN at x = {np.asarray(x)[nan][:3].tolist()} (inside the law's support, "
                         f"where the integral needs it): give a func defined there")
    return y


def _shown(y):
    """A short repr of a callable's result for an error message."""
    text = repr(y.item() if y.ndim == 0 else y.ravel()[:3].tolist())
    return text if len(text) <= 80 else text[:77] + "..."


def tanh_sinh_pieces(g, pieces, lo, hi, rtol, atol, who):
    """Σ over the pieces [(a, b)] clipped to [lo, hi] of ∫_a^b g, by :func:`scipy.integrate.tanhsinh` (all pieces
    in one vectorised call). atol=None: rtol·∫|g| from the coarsest level (level 2), shared among the pieces."""
    if not pieces:
        return 0.0
    a = np.maximum(np.array([p[0] for p in pieces], dtype=float), lo)
    b = np.minimum(np.array([p[1] for p in pieces], dtype=float), hi)
    keep = b > a
    if not keep.any():
        return 0.0
    a, b = a[keep], b[keep]

    def real_g(x):          # tanhsinh hands a complex integrand complex abscissae (with zero imaginary parts)
        return g(np.real(x))
    if atol is None:
        coarse = integrate.tanhsinh(lambda x: np.abs(real_g(x)), a, b, minlevel=2, maxlevel=2)
        scale = float(np.sum(coarse.integral))
        atol = rtol * scale / a.size if np.isfinite(scale) else 0.0
    res = integrate.tanhsinh(real_g, a, b, rtol=rtol, atol=atol)
    bad = np.nonzero(res.status != 0)[0]
    if bad.size:
        i = int(bad[0])
        raise ConvergenceError(f"{who!r}.expect: tanh-sinh quadrature on [{a[i]:.17g}, {b[i]:.17g}] stopped with "
                               f"status {int(res.status[i])} (-1: the error estimate grew, the integrand is noisy; "
                               f"-2: maxlevel reached; -3: a non-finite value), estimate {res.integral[i]!r}",
                               z=(float(a[i]), float(b[i])), iteration=int(res.maxlevel[i]),
                               residual=float(abs(res.error[i])))
    return np.sum(res.integral)

