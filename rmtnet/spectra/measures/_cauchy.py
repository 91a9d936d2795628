"""Closed-form Cauchy transforms of binned laws: linear densities on bins (seen from afar as series in the bin's
width) and atoms, with their derivatives — the innermost loop of the ⊠/⊞ engine for laws given on a grid."""
from __future__ import annotations

import numpy as np

from ... import backend as B


def _bin_cauchy(z, c, w, mu):
    """Cauchy transform (per unit mass) of the linear density on [c - w/2, c + w/2] with mean ``mu``; with derivative.

    With d = z - c and r = w/(2d): G = A(r)/d + 3(mu - c) B(r)/d², A = atanh(r)/r, B = (atanh(r) - r)/r³, and
    G′ = −(p + t(p − B/d²)), t = 3(mu − c)/d, p = 1/((z − a)(z − b)). Where |r|² < 4e-4 (the bin seen from afar:
    almost every bin at almost every point) all three are series in r², truncated below 1e-17: B's, then
    A = 1 + r²B and p = (1 + r² + r⁴ + …)/d²; that keeps G exact as w → 0 (a point mass at c plus a dipole) and
    costs multiplications only. The few near bins take atanh and p from (z − a)(z − b), which has no cancellation
    next to the bin's ends. This is the engine's innermost loop: one complex reciprocal per (point, bin) pair.
    """
    d = z - c
    inv = 1.0 / d
    h = 0.5 * w
    r = h * inv
    r2 = r * r
    B = r2 * (1 / 11)
    B += 1 / 9
    B *= r2
    B += 1 / 7
    B *= r2
    B += 1 / 5
    B *= r2
    B += 1 / 3
    A = r2 * B
    A += 1
    p = r2 + 1
    for _ in range(3):
        p *= r2
        p += 1
    inv2 = inv * inv
    p *= inv2
    near = np.flatnonzero(np.abs(r2) >= 4e-4)
    if near.size:
        rn = r.ravel()[near]
        at = np.arctanh(rn)
        ir = 1.0 / rn
        A.ravel()[near] = at * ir
        B.ravel()[near] = (at - rn) * (ir * ir * ir)
        dn = d.ravel()[near]
        hn = np.broadcast_to(h, d.shape).ravel()[near]
        p.ravel()[near] = 1.0 / ((dn - hn) * (dn + hn))
    t = (3.0 * (mu - c)) * inv
    g = t * B
    g += A
    g *= inv
    B *= inv2                          # from here B holds G′ = −(p + t(p − B/d²))
    np.subtract(p, B, out=B)
    B *= t
    B += p
    np.negative(B, out=B)
    return g, B


def binned_cauchy(z, centres, widths, means, masses, atom_locs, atom_masses, chunk=None):
    """(G, G′) of Σ_i masses_i · (linear density on bin i with the given mean) + Σ atoms, for complex z.

    On the host, points go through in chunks of 8, so that the (chunk × bins) temporaries of :func:`_bin_cauchy`
    stay in cache, and the sum over bins is einsum's own loop rather than a BLAS gemv: on a loaded 2-core machine
    OpenBLAS's threads made the (8 × 1186) gemv 10× slower than the whole elementwise part (measured: 300 µs per
    point and 1186-bin factor with einsum, 1200–5000 µs with ``@`` for chunks of 8–64). On a GPU (z a CuPy array)
    the chunks are as large as 2²⁴ (point, bin) pairs allow, so that a 10⁶-point grid is a few kernel launches."""
    z = B.as_array(z, complex)
    flat = z.reshape(-1)
    g = np.empty_like(flat)
    dg = np.empty_like(flat)
    centres, widths, means = (B.as_array(a, float, like=z) for a in (centres, widths, means))
    masses = B.as_array(masses, complex, like=z)
    if chunk is None:
        chunk = 8 if B.module_of(z) is np else max(1, 2 ** 24 // max(masses.size, 1))
    for s in range(0, flat.size, chunk):
        gb, dgb = _bin_cauchy(flat[s:s + chunk, None], centres, widths, means)
        g[s:s + chunk] = np.einsum("ij,j->i", gb, masses)
        dg[s:s + chunk] = np.einsum("ij,j->i", dgb, masses)
    g, dg = g.reshape(z.shape), dg.reshape(z.shape)
    if atom_locs.size:
        ga, dga = atom_cauchy(z, atom_locs, atom_masses)
        g, dg = g + ga, dg + dga
    return g, dg


def atom_cauchy(z, locs, masses):
    """(G, G′) of the atoms Σ_k masses_k δ_{locs_k} at complex z (an array of any backend; locs and masses are
    host arrays, brought to z's device): Σ m_k/(z − a_k) and −Σ m_k/(z − a_k)²."""
    locs, masses = B.as_array(locs, float, like=z), B.as_array(masses, float, like=z)
    d = 1.0 / (z[..., None] - locs)
    return (masses * d).sum(-1), -(masses * d * d).sum(-1)

