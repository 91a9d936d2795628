"""Push-forwards and combinations of laws: :class:`Mixture` (Σ w_k μ_k), :class:`OtherGram` (the law of AAᵀ from
that of AᵀA) and :class:`GaussianPushforward` (the law of f(h), h ~ N(0, q), by quadrature)."""
from __future__ import annotations

import numpy as np
from scipy import special
from scipy.optimize import elementwise

from rmtnet._validation import ConvergenceError, integer_at_least, probability_vector, real_scalar, whole_number
from ._base import Measure
from ._cauchy import binned_cauchy
from ._quadrature import apply_elementwise, tanh_sinh_pieces


def _merge(intervals):
    """Union of closed intervals as a sorted list of disjoint ones."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _mixed_central_moment(k, parts):
    """∫ (x − m)^k d(Σ w_i μ_i), m = Σ w_i m_i, from the components' central moments μ_{i,j}: x − m = (x − m_i) + d_i
    with d_i = m_i − m, so Σ_i w_i Σ_j C(k, j) μ_{i,j} d_i^{k−j} — no cancellation for components far from 0
    (k = 2 is the law of total variance Σ w_i (σ_i² + d_i²)). The mean is held as m + Σ w_i (m_i − m) (twice the precision)."""
    means = [float(mu.mean()) for _, mu in parts]
    m = sum(w * mi for (w, _), mi in zip(parts, means))
    delta = sum(w * (mi - m) for (w, _), mi in zip(parts, means)) / sum(w for w, _ in parts)    # m + δ: the mean
    total = 0.0
    for (w, mu), mi in zip(parts, means):
        if w == 0:
            continue
        d = (mi - m) - delta
        central = [1.0, 0.0] + [mu.central_moment(j) for j in range(2, k + 1)]
        total += w * sum(special.comb(k, j) * central[j] * d ** (k - j) for j in range(k + 1))
    return float(total)


# ------------------------------------------------------------------------------------------------------------------
class Mixture(Measure):
    """Σ_k w_k μ_k for measures μ_k and weights w_k ≥ 0 summing to 1.

    Parameters
    ----------
    measures : sequence of Measure
        The components μ_k (at least one).
    weights : array_like
        The weights w_k ≥ 0, one per component, summing to 1.

    Examples
    --------
    ¾·semicircle(1) + ¼·δ₃: mean ¾, E X² = ¾ + 9/4 = 3 so variance 3 - 9/16, density at 0 is ¾·(1/π):

    >>> from rmtnet.spectra.laws import Semicircle
    >>> from rmtnet.spectra.measures import PointMasses
    >>> mx = Mixture([Semicircle(1.0), PointMasses([3.0], [1.0])], [0.75, 0.25])
    >>> print(f"{mx.mean():.6f} {mx.var():.6f} {float(mx.pdf(0.0)):.6f}")
    0.750000 2.437500 0.238732
    """

    def __init__(self, measures, weights):
        self.components = list(measures)
        if not self.components or not all(isinstance(m, Measure) for m in self.components):
            raise ValueError("measures must be a non-empty sequence of Measure")
        self.weights = probability_vector("weights", weights, tol=1e-9)
        if self.weights.size != len(self.components):
            raise ValueError("weights must have one entry per measure")

    def _g(self, z):
        g = dg = 0.0
        for w, m in zip(self.weights, self.components):
            a, b = m._g(z)
            g, dg = g + w * a, dg + w * b
        return g, dg

    def _mt(self, z):
        out = [0.0, 0.0, 0.0]
        for w, m in zip(self.weights, self.components):
            out = [o + w * t for o, t in zip(out, m._mt(z))]
        return tuple(out)

    def atoms(self):
        locs = [m.atoms()[0] for m in self.components]
        masses = [w * m.atoms()[1] for w, m in zip(self.weights, self.components)]
        locs, masses = np.concatenate(locs), np.concatenate(masses)
        if locs.size == 0:
            return locs, masses
        uniq, inv = np.unique(locs, return_inverse=True)
        return uniq, np.bincount(inv, weights=masses)

    def continuous_support(self):
        sups = [m.continuous_support() for w, m in zip(self.weights, self.components) if w > 0]
        sups = [s for s in sups if s is not None]
        if not sups:
            return None
        return min(s[0] for s in sups), max(s[1] for s in sups)

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        return sum(w * m._expect_continuous(func, lo, hi, rtol, atol)
                   for w, m in zip(self.weights, self.components) if w > 0)

    def _pdf(self, x):
        return sum(w * m.pdf(x) for w, m in zip(self.weights, self.components))

    def intervals(self):
        return _merge([p for w, m in zip(self.weights, self.components) if w > 0 for p in m.intervals()])

    def _panels(self):
        """The components' panels cut at every component's panel ends, so that each is smooth inside."""
        panels = [p for w, m in zip(self.weights, self.components) if w > 0 for p in m._panels()]
        ends = np.unique([e for p in panels for e in p])
        return [(a, b) for a, b in zip(ends[:-1], ends[1:]) if any(c <= 0.5 * (a + b) <= d for c, d in panels)]

    def _moment(self, k):
        return float(sum(w * m.moment(k) for w, m in zip(self.weights, self.components)))

    def _central_moment(self, k):
        return _mixed_central_moment(k, list(zip(self.weights, self.components)))

    def _rvs(self, size, rng):
        which = rng.choice(len(self.components), size=size, p=self.weights)
        out = np.empty(which.shape)
        flat, pick = out.reshape(-1), which.reshape(-1)
        for k, m in enumerate(self.components):
            idx = np.nonzero(pick == k)[0]
            if idx.size:
                flat[idx] = m.rvs(idx.size, rng=rng.integers(2 ** 63))
        return out



class OtherGram(Measure):
    """The law of AAᵀ (m×m) given ``base`` = the law of AᵀA (n×n), for an m×n matrix A and ``ratio`` = m/n.

    The two Gram matrices share their nonzero eigenvalues, so μ_{AAᵀ} = (1/r) μ_{AᵀA} + (1 - 1/r) δ₀, i.e.
    G(z) = G_base(z)/r + (1 - 1/r)/z and M(z) = M_base(z)/r. For r < 1 the base must carry an atom ≥ 1 - r at 0
    (the rank of AᵀA is at most m). This is how a non-square layer changes the space a spectrum lives on.

    Parameters
    ----------
    base : Measure
        The law of AᵀA.
    ratio : float
        r = m/n > 0.

    Examples
    --------
    From base MP(½) with r = 2: an atom 1 - 1/r = ½ at 0, mean 1/r = ½, second moment (1 + ½)/2 = ¾, and the
    density halved: MP(½) has √1.75/π at 1, so this law has √1.75/(2π) = 0.210542:

    >>> from rmtnet.spectra.laws import MarchenkoPastur
    >>> og = OtherGram(MarchenkoPastur(0.5), 2.0)
    >>> og.atoms()[1].tolist()
    [0.5]
    >>> print(f"{og.mean():.6f} {og.moment(2):.6f} {float(og.pdf(1.0)):.6f}")
    0.500000 0.750000 0.210542
    """

    def __init__(self, base, ratio):
        if not isinstance(base, Measure):
            raise ValueError("base must be a Measure")
        self.base = base
        self.ratio = real_scalar("ratio", ratio, lo=0.0, lo_open=True)
        locs, masses = base.atoms()
        zero = float(masses[locs == 0].sum())
        if self.ratio < 1 and zero < 1 - self.ratio - 1e-9:
            raise ValueError(f"ratio={self.ratio} needs an atom ≥ {1 - self.ratio} at 0 in base, which has {zero}")

    def _g(self, z):
        g, dg = self.base._g(z)
        c = 1.0 - 1.0 / self.ratio
        return g / self.ratio + c / z, dg / self.ratio - c / (z * z)

    def _mt(self, z):
        m, one_m, dm = self.base._mt(z)
        return m / self.ratio, 1.0 + m / self.ratio, dm / self.ratio

    def atoms(self):
        locs, masses = self.base.atoms()
        masses = masses / self.ratio
        zero = locs == 0
        extra = 1.0 - 1.0 / self.ratio
        if zero.any():
            masses = masses.copy()
            masses[zero] += extra
        elif extra > 0:
            locs, masses = np.append(locs, 0.0), np.append(masses, extra)
        keep = masses > 1e-15
        order = np.argsort(locs[keep])
        return locs[keep][order], np.maximum(masses[keep][order], 0.0)

    def continuous_support(self):
        return self.base.continuous_support()

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        return self.base._expect_continuous(func, lo, hi, rtol, None if atol is None else atol * self.ratio) \
            / self.ratio

    def intervals(self):
        return self.base.intervals()

    def _panels(self):
        return self.base._panels()

    def _pdf(self, x):
        return self.base.pdf(x) / self.ratio

    def _moment(self, k):
        return 1.0 if k == 0 else self.base.moment(k) / self.ratio

    def _central_moment(self, k):
        """(1/r)·base + (1 − 1/r)·δ₀ as a signed mixture (:func:`_mixed_central_moment`)."""
        from ._atomic import PointMasses
        return _mixed_central_moment(k, [(1.0 / self.ratio, self.base),
                                         (1.0 - 1.0 / self.ratio, PointMasses([0.0], [1.0]))])

    def __repr__(self):
        return f"OtherGram({self.base!r}, ratio={self.ratio})"


# ------------------------------------------------------------------------------------------------------------------
class GaussianPushforward(Measure):
    """The law ν of f(h), h ~ N(0, q), for a vectorised callable f (e.g. f = φ'(·)², the D² law of a layer).

    Construction (deterministic quadrature, no sampling):

    * h is restricted to [-H, H], H = 9√q (Gaussian mass outside < 1e-18), cut into ``n_panels`` panels.
      Where f is exactly constant on an h-interval of positive Gaussian mass (ReLU', hard-tanh') that interval is an
      **atom**; its ends are located by bisection to machine precision and its mass is the Gaussian probability.
    * **Moments** use ``n_gauss``-point Gauss–Legendre rules on every panel against the Gaussian density (spectral
      accuracy for smooth f).
    * The **Cauchy transform** of the continuous part replaces each panel by a linear density on the panel's image
      [min f, max f] with the panel's exact mass and mean. Its transform is closed form (:func:`_bin_cauchy`) and
      stays bounded as z approaches the real axis (where a point-mass quadrature would resolve its own nodes) —
      this is what lets the ⊠ engine take laws that are not algebraic. The binned law's higher moments differ from
      ν's by O(panel width⁴) (measured: halving the width divides the ⊠-power moment error by 16; with the default
      2400 panels, tanh′(h)⁴ at q = 0.7 and ⊠5 agree with the exact series to 1.5e-9).
    * The **density** sums φ_q(h)/|f'(h)| over the preimages of x, located on the panels and Newton-polished.

    Parameters
    ----------
    f : callable
        Vectorised map h ↦ f(h), finite on finite arrays.
    q : float
        The variance of h, > 0.
    n_panels : int, optional
        Number of panels on [-H, H] (≥ 8).
    n_gauss : int, optional
        Gauss–Legendre nodes per panel for the moments.
    width : float, optional
        H/√q, the half-width of the h-range in standard deviations.

    Examples
    --------
    f(h) = h² with q = 1 is the χ²₁ law: mean 1, variance 2, density e^{-1/2}/√(2π) = 0.241971 at 1:

    >>> chi2 = GaussianPushforward(lambda h: h ** 2, 1.0)
    >>> print(f"{chi2.mean():.6f} {chi2.var():.6f} {float(chi2.pdf(1.0)):.6f}")
    1.000000 2.000000 0.241971
    """

    def __init__(self, f, q, n_panels=2400, n_gauss=8, width=9.0):
        if not callable(f):
            raise ValueError("f must be a callable h -> f(h) acting elementwise on arrays")
        self.f = f
        self.q = real_scalar("q", q, lo=0, lo_open=True)
        n_panels = whole_number("n_panels", n_panels, 8)
        n_gauss = integer_at_least("n_gauss", n_gauss, 1)
        width = real_scalar("width", width, lo=0, lo_open=True)
        sd = np.sqrt(self.q)
        H = width * sd
        h = np.linspace(-H, H, int(n_panels) + 1)
        fh = self._values(h)
        if fh.shape != h.shape or not np.all(np.isfinite(fh)):
            raise ValueError("f must map a float array to a finite float array of the same shape")
        self._build_atoms(h, fh)
        nodes, weights = np.polynomial.legendre.leggauss(n_gauss)
        self._H, self._step, self._gl = H, 2 * H / int(n_panels), (nodes, weights)
        flat = np.diff(fh) == 0
        self._open_ends = (not flat[0], not flat[-1])       # a flat end is an atom holding the tail beyond it
        a, b = self._trim_panels(h[:-1][~flat], h[1:][~flat])
        self._pa, self._pb = a, b
        mid, half = (a + b) / 2, (b - a) / 2
        hq = mid[:, None] + half[:, None] * nodes[None, :]
        wq = half[:, None] * weights[None, :] * _gauss_pdf(hq, self.q)
        fq = self._values(hq.ravel()).reshape(hq.shape)
        fa, fb = self._values(a), self._values(b)
        self._fa, self._fb = fa, fb
        # exact panel masses; Gauss–Legendre moments rescaled to them
        pm = _gauss_mass(a / sd, b / sd)
        wq = wq * (pm / np.where(wq.sum(1) > 0, wq.sum(1), 1.0))[:, None]
        tot = pm.sum() + self._atom_masses.sum()
        self._norm = tot
        self._wq, self._fq = (wq / tot).ravel(), fq.ravel()
        self._atom_masses = self._atom_masses / tot
        pm = pm / tot
        lo = np.minimum(np.minimum(fa, fb), fq.min(1))
        hi = np.maximum(np.maximum(fa, fb), fq.max(1))
        mean = (wq * fq).sum(1) / np.where(wq.sum(1) > 0, wq.sum(1), 1.0)
        keep = pm > 0
        self._bc, self._bw, self._bm, self._bp = _merge_bins((lo + hi) / 2, hi - lo, mean, pm, keep)
        self._sup = None if not keep.any() else (float(lo[keep].min()), float(hi[keep].max()))

    def _build_atoms(self, h, fh, min_mass=1e-12):
        """Exactly flat runs of f with Gaussian mass ≥ ``min_mass`` become atoms."""
        flat = np.diff(fh) == 0
        sd = np.sqrt(self.q)
        locs, masses, intervals = [], [], []
        j, n = 0, flat.size
        while j < n:
            if not flat[j]:
                j += 1
                continue
            k = j
            while k + 1 < n and flat[k + 1]:
                k += 1
            val = fh[j]
            same = lambda t: float(np.asarray(self.f(np.array([t])), dtype=float)[0]) == val  # noqa: E731
            lo = h[j] if j == 0 else _bisect_edge(h[j - 1], h[j], same)
            hi = h[k + 1] if k + 1 == n else _bisect_edge(h[k + 2], h[k + 1], same)
            mass = special.ndtr(hi / sd) - special.ndtr(lo / sd)
            if j == 0:
                mass += special.ndtr(lo / sd)        # the flat run extends into the Gaussian tail
            if k + 1 == n:
                mass += special.ndtr(-hi / sd)
            if mass >= min_mass:
                intervals.append((lo, hi))
                locs.append(val)
                masses.append(mass)
            j = k + 1
        self._atom_intervals = intervals
        locs, masses = np.asarray(locs, dtype=float), np.asarray(masses, dtype=float)
        if locs.size:
            uniq, inv = np.unique(locs, return_inverse=True)
            self._atom_locs, self._atom_masses = uniq, np.bincount(inv, weights=masses)
        else:
            self._atom_locs, self._atom_masses = locs, masses

    def _trim_panels(self, a, b):
        """Cut the parts of non-flat panels that lie inside an atom's h-interval."""
        for lo, hi in self._atom_intervals:
            a = np.where((a < hi) & (b > hi), np.maximum(a, hi), a)
            b = np.where((a < lo) & (b > lo), np.minimum(b, lo), b)
        keep = b > a
        return a[keep], b[keep]

    def atoms(self):
        return self._atom_locs.copy(), self._atom_masses.copy()

    def continuous_support(self):
        return self._sup

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """E[func(f(h)); f(h) in the continuous part] as an integral over h against the Gaussian density on the
        non-flat panels (tanh-sinh, :func:`scipy.integrate.tanhsinh`): no preimages to solve for, and smooth in h
        where the density in x has singularities at f's turning points. With [lo, hi] cutting into the
        continuous part, the integral is taken in x (the indicator would be a jump in h)."""
        if self._sup is None:
            return 0.0
        if lo > self._sup[0] or hi < self._sup[1]:
            return Measure._expect_continuous(self, func, lo, hi, rtol, atol)

        def g(h):
            fh = np.asarray(self.f(h.ravel()), dtype=float).reshape(h.shape)
            with np.errstate(over="ignore", invalid="ignore"):
                return apply_elementwise(func, fh) * _gauss_pdf(h, self.q) / self._norm
        total = tanh_sinh_pieces(g, list(zip(self._pa, self._pb)), -np.inf, np.inf, rtol, atol, self)
        for side, is_open in zip((-1.0, 1.0), self._open_ends):       # the tails beyond ±H, as the moments' (a
            if is_open:                                                # func growing faster than φ_q decays)
                total = total + self._tail(g, side, abs(total) + (atol or 0.0), "expect")
        return total

    def _g(self, z):
        return binned_cauchy(z, self._bc, self._bw, self._bm, self._bp, self._atom_locs, self._atom_masses)

    def _values(self, h):
        """f(h) as a real float array, or ValueError/TypeError naming f and what it returned."""
        raw = self.f(h)
        y = np.asarray(raw)
        if y.dtype.kind == "c":
            raise ValueError(f"f must be real-valued (the law of f(h) lives on the real line), but it returned "
                             f"complex values such as {y.ravel()[:1].tolist()}")
        if y.dtype.kind not in "biuf":
            raise TypeError(f"f must return real numbers elementwise, but it returned {type(raw).__name__} "
                            f"of dtype {y.dtype}")
        return y.astype(float)

    def _moment(self, k):
        return self._integral(k, 0.0) + float(np.sum(self._atom_masses * self._atom_locs ** k))

    def _central_moment(self, k):
        """∫ (f(h) − m)^k over h, about m + δ, m the mean and δ = ∫ (f(h) − m) its rounding: no cancellation for f far from 0."""
        def about(j, c, c_low=0.0):
            return self._integral(j, c, c_low) + float(np.sum(self._atom_masses * ((self._atom_locs - c) - c_low) ** j))
        m = self._moment(1)
        return about(k, m, about(1, m) / about(0, 0.0))       # m + δ: the mean to twice the precision

    _DOUBLINGS = 6           # the h-range is doubled at most this often beyond width·√q (to 2⁶·9 = 576 s.d.)

    def _integral(self, k, c, c_low=0.0):
        """∫ (f(h) − c)^k φ_q(h) dh over the continuous part: Gauss–Legendre on the panels of [−H, H], plus the tails
        beyond ±H wherever the integrand has not died out there (f growing faster than the Gaussian decays: e^{kh}
        peaks at h = kq, h^{20}·φ at |h| = √(20q), e^{h²/4}·φ decays only like e^{−h²/4} for q = 1). Each tail is
        integrated on [R, 2R] by Gauss–Legendre panels of the table's width and R doubled, until the integrand at R,
        1.5R and 2R, times R, is below 10⁻¹⁵ of ∫|f − c|^k φ (the integrand formed from its logarithm, so that
        (f − c)^k may exceed float64 where φ_q makes the product small); ConvergenceError naming f after 6 doublings
        (mass beyond 576√q), OverflowError where f(h) itself leaves float64 first."""
        with np.errstate(over="ignore", invalid="ignore"):
            body = ((self._fq - c) - c_low) ** k
            total = float(np.sum(self._wq * body))
            size = float(np.sum(self._wq * np.abs(body)))
            for side, is_open in zip((-1.0, 1.0), self._open_ends):
                if is_open:
                    total += self._tail(lambda h: self._tail_integrand(k, c + c_low, h), side, size,
                                        f"moment of order {k}")
        return total

    def _tail_integrand(self, k, c, h):
        """(f(h) − c)^k φ_q(h)/norm, from k·log|f − c| − h²/(2q) (no overflow of the power where φ_q is tiny)."""
        y = self._values(h)
        if not np.all(np.isfinite(y)):
            raise OverflowError(f"f(h) leaves float64 at h = {h[~np.isfinite(y)][:2].tolist()} before its moment "
                                f"of order {k} has converged: that moment of the law of f(h) does not exist in "
                                f"float64 ({self!r})")
        d = y - c
        log_phi = -0.5 * h * h / self.q - 0.5 * np.log(2 * np.pi * self.q)
        if k == 0:                                   # (f − c)⁰ = 1 wherever f = c too: the Gaussian weight alone
            return np.exp(log_phi) / self._norm
        with np.errstate(divide="ignore"):
            log_g = k * np.log(np.abs(d)) + log_phi
        return np.where(d == 0, 0.0, np.sign(d) ** k * np.exp(log_g)) / self._norm

    def _tail(self, integrand, side, size, what):
        """∫ over side·h > H of ``integrand`` (a function of h: (f(h) − c)^k φ_q(h), func(f(h)) φ_q(h)), by the
        doubling of :meth:`_integral`; ``what`` names the integral in the errors."""
        nodes, weights = self._gl
        out, R = 0.0, self._H
        for _ in range(self._DOUBLINGS + 1):
            probe = side * R * np.array([1.0, 1.5, 2.0])
            g = integrand(probe)
            if not np.all(np.isfinite(g)):
                raise OverflowError(f"{what} of f(h) for {self!r}: the integrand leaves float64 at h = "
                                    f"{probe.tolist()}")
            if float(np.max(np.abs(g))) * R <= 1e-15 * (size + abs(out)):
                return out
            if R >= self._H * 2 ** self._DOUBLINGS:
                break
            n = int(np.ceil(R / self._step))
            ends = R + R * np.arange(n + 1) / n
            mid, half = 0.5 * (ends[1:] + ends[:-1]), 0.5 * (ends[1:] - ends[:-1])
            h = side * (mid[:, None] + half[:, None] * nodes[None, :])
            vals = integrand(h.ravel()).reshape(h.shape)
            if not np.all(np.isfinite(vals)):
                raise OverflowError(f"{what} of f(h) for {self!r}: the integrand leaves float64 for |h| in "
                                    f"[{R:.3g}, {2 * R:.3g}]")
            out += float(np.sum(half[:, None] * weights[None, :] * vals))
            R *= 2
        raise ConvergenceError(f"{what} of f(h) for {self!r}: the integrand still carries mass beyond |h| = {R:.3g} "
                               f"({R / np.sqrt(self.q):.0f} standard deviations of h): f grows too fast for this "
                               f"integral "
                               f"to exist or to be computed (use a smaller order or q)", z=float(side * R),
                               iteration=self._DOUBLINGS, residual=float(np.max(np.abs(g))))

    def _pdf(self, x):
        """ρ(x) = Σ_{h: f(h) = x} φ_q(h)/|f'(h)| over the non-flat panels."""
        flat = x.ravel()
        out = np.zeros_like(flat)
        fa, fb = self._fa, self._fb
        lo, hi = np.minimum(fa, fb), np.maximum(fa, fb)
        for s in range(0, flat.size, 256):
            xx = flat[s:s + 256, None]
            rows, cols = np.nonzero((xx >= lo) & (xx < hi))
            if rows.size == 0:
                continue
            a, b = self._pa[cols], self._pb[cols]
            target = xx[rows, 0]
            # f is monotone on a panel and x lies between its end values: a bracketed root (Chandrupatla). Four
            # Newton steps from the linear guess were not enough next to a turning point of f at a panel's end
            # (f = sech⁴ at h = 0, where x → 1 is an inverse-square-root edge: the density was 5 % low at
            # 1 − 10⁻⁶ and the cdf's total 2.6e-4 short)
            res = elementwise.find_root(lambda h, y: np.asarray(self.f(h), dtype=float) - y, (a, b), args=(target,))
            t = (target - fa[cols]) / (fb[cols] - fa[cols])
            hh = np.where(res.success, res.x, a + t * (b - a))
            d = np.abs(_derivative(self.f, hh))
            contrib = np.where(d > 0, _gauss_pdf(hh, self.q) / np.where(d > 0, d, 1.0), 0.0)
            np.add.at(out, s + rows, contrib)
        return out.reshape(x.shape)

    def _rvs(self, size, rng):
        h = rng.normal(0.0, np.sqrt(self.q), size=size)
        return np.asarray(self.f(h), dtype=float)

    def __repr__(self):
        return f"GaussianPushforward(f={getattr(self.f, '__name__', self.f)!r}, q={self.q})"


def _merge_bins(c, w, m, p, keep, digits=13):
    """Bins with the same (centre, width, mean) to ``digits`` significant digits are one bin of the summed mass:
    an even f (every φ′²) maps h and -h to the same bin, so the Cauchy transform costs half as much."""
    c, w, m, p = c[keep], w[keep], m[keep], p[keep]
    if c.size == 0:
        return c, w, m, p
    scale = max(float(np.abs(c).max()), float(w.max()), 1e-300)
    key = np.round(np.stack([c, w, m], axis=1) / scale, digits)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    mass = np.bincount(inv.ravel(), weights=p)
    return c[first], w[first], m[first], mass


def gaussian_pushforward(f, q, **kwargs):
    """The law of f(h) for h ~ N(0, q), as a :class:`GaussianPushforward` measure (quadrature, no sampling).

    Example: the D² law of a tanh layer at pre-activation variance q is
    ``gaussian_pushforward(lambda h: (1 - np.tanh(h)**2)**2, q)``.

    Parameters
    ----------
    f : callable
        Vectorised map h ↦ f(h).
    q : float
        The variance of h, > 0.
    **kwargs
        ``n_panels``, ``n_gauss``, ``width``, as in :class:`GaussianPushforward`.

    Returns
    -------
    GaussianPushforward
        The law of f(h).

    Examples
    --------
    ReLU'(h)² = 1{h > 0} is ½δ₀ + ½δ₁ (Bernoulli(½)) whatever q, h being symmetric; its flat pieces become atoms:

    >>> d2 = gaussian_pushforward(lambda h: (h > 0).astype(float), 2.0)
    >>> locs, masses = d2.atoms()
    >>> locs.tolist(), masses.round(12).tolist(), d2.continuous_support()
    ([0.0, 1.0], [0.5, 0.5], None)
    """
    return GaussianPushforward(f, q, **kwargs)


def _gauss_mass(a, b):
    """Φ(b) − Φ(a) for a ≤ b, as Φ(−a) − Φ(−b) right of 0: the difference of two numbers next to 1 loses the mass
    of a panel deep in the upper tail (at h = 6 s.d. every digit), which the moments of a growing f weigh most."""
    return np.where(a > 0, special.ndtr(-a) - special.ndtr(-b), special.ndtr(b) - special.ndtr(a))


def _gauss_pdf(h, q):
    return np.exp(-0.5 * h * h / q) / np.sqrt(2 * np.pi * q)


def _derivative(f, h, rel=1e-6):
    step = rel * np.maximum(1.0, np.abs(h))
    return (np.asarray(f(h + step), dtype=float) - np.asarray(f(h - step), dtype=float)) / (2 * step)


def _bisect_edge(outside, inside, same, iters=64):
    """Point between ``outside`` (f ≠ value) and ``inside`` (f == value) where the flat interval ends."""
    for _ in range(iters):
        mid = 0.5 * (outside + inside)
        if mid == outside or mid == inside:
            break
        if same(mid):
            inside = mid
        else:
            outside = mid
    return inside
