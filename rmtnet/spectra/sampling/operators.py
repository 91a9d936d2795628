"""Matrix-free Jacobians of random Mixer-structured networks: JJᵀ and the Fisher dual as operators for
:mod:`rmtnet.spectra.sampling.lanczos`, at effective widths m = S·C far beyond dense eigensolvers (10⁶ on 2 CPU cores).

Convention (Hayase & Karakida, ICML 2024, arXiv 2306.01470, in row-major form; :mod:`rmtnet.nets.layers`).
Features are S×C matrices X (S tokens, C channels) flattened **row-major**, x[s·C + c] = X[s, c], so that
flatten(A X B) = kron(A, Bᵀ) flatten(X). A network of depth L is, as in :mod:`rmtnet.spectra.network`,

    h_ℓ = K_ℓ x_{ℓ−1} + b_ℓ,    x_ℓ = φ(h_ℓ),    J = D_L K_L D_{L−1} ⋯ D_1 K_1,   D_ℓ = diag φ′(h_ℓ)

(without D_L when ``net.last_activation`` is False), where the effective m×m weight K_ℓ is a product of structured
factors, never formed:

=============  =====================================================================  ==============================
structure      K_ℓ (one Mixer layer: token mixing W_ℓ ∈ ℝ^{S×S} and channel mixing    one matvec (k columns)
               V_ℓ ∈ ℝ^{C×C}, no activation in between)
=============  =====================================================================  ==============================
kronecker      X ↦ W_ℓ X V_ℓᵀ, i.e. K_ℓ = kron(W_ℓ, V_ℓ) (MLP-Mixer)                   2 GEMMs, k(S²C + SC²)
permuted       P_ℓ (I_C ⊗ W_ℓ) Q_ℓ (I_S ⊗ V_ℓ): the commutations around the token       the same + 2 gathers
               mixing replaced by independent uniform permutations (RP-Mixer,
               Hayase & Karakida 2024); ``permutations="commutation"`` puts them
               back (= kronecker)
sparse         (M′_ℓ ⊙ A′_ℓ)(M_ℓ ⊙ A_ℓ), static Bernoulli masks, the first of         2 CSR products, k·nnz
               density 1/C, then 1/S (the Mixer's densities: the SW-MLP) or any
               ``density``; CSR
monarch        Pᵀ diag(L_{ℓ,1}, …, L_{ℓ,C}) P diag(R_{ℓ,1}, …, R_{ℓ,S}) (Dao et al.,  2 batched GEMMs + 2 gathers,
               ICML 2022, arXiv 2204.00595; :class:`rmtnet.nets.MonarchLinear`):      k(S²C + SC²)
               the Mixer pair with untied blocks, one R_{ℓ,s} ∈ ℝ^{C×C} per token
               and one L_{ℓ,c} ∈ ℝ^{S×S} per channel, P the commutation of an S×C
               array
dense          one m×m matrix (for checks against :mod:`.montecarlo`)                     1 GEMM, k·m²
=============  =====================================================================  ==============================

Weights: each factor has gain √σ_w, so every K_ℓ has gain σ_w and entries of variance σ_w²/m and the mean-field
recursion of the dense network holds: W, V ~ N(0, σ_w/S), N(0, σ_w/C) (``"gaussian"``) or √σ_w times Haar
orthogonal (``"orthogonal"``, :func:`~rmtnet.spectra.sampling.montecarlo.haar_orthogonal`); sparse factors keep entries
N(0, σ_w/(p·m)) (:class:`rmtnet.nets.MaskedLinear`'s scaling). Biases b_ℓ ~ N(0, σ_b²). D_ℓ comes from pushing one
random input (‖x₀‖²/m = net.q0) through the drawn network, as :func:`~rmtnet.spectra.sampling.montecarlo.propagate` does.

Predictions (checked in tests/test_lanczos.py and benchmarks/large_width.py):

* linear, Gaussian, kronecker: J = kron(W_L⋯W_1, V_L⋯V_1), so JJᵀ = kron(AAᵀ, BBᵀ) has the products of the two
  sides' eigenvalues: its law is that of X·Y with X, Y *independent* (classically, not freely) of law
  σ_w^L·FussCatalan(L) each (:func:`rmtnet.spectra.mixer.kronecker_gram_law`) — not the free product
  MP^{⊠2L} = FussCatalan(2L) a dense or sparse net of 2L layers has: m₂ = 25 against 9 at L = 4.
* linear, Gaussian, monarch: untying the blocks makes the two factors asymptotically free, and JJᵀ → the free
  product FussCatalan(2L) scaled by σ_w^{2L} (:func:`rmtnet.spectra.monarch.monarch_gram_law`), the law of a dense
  net of 2L layers, not the Kronecker layer's classical product.
* permuted and sparse (p·m ≫ log m): the factors are asymptotically free and JJᵀ → ⊠ of the factors' laws
  (FussCatalan(2L) for linear Gaussian nets).
* tanh with orthogonal weights (kronecker or permuted): K_ℓ = σ_w(O_ℓ ⊗ O′_ℓ) is orthogonal up to σ_w, and the D_ℓ
  and K_ℓ behave as asymptotically free, as Collins & Hayase (2023) prove for dense Haar weights: the law is that of
  the dense network, :func:`rmtnet.spectra.jacobian_law` (no theorem we know of covers Kronecker products of Haar
  matrices; measured at depth 4, σ_w = 1.05, the input at q*: the dense eigenvalues at m = 4096 are within KS
  0.0022 of it for kronecker, 0.0072 for permuted (0.0023 with another seed), 0.0039 for a dense 4096-wide orthogonal
  MLP; SLQ at m ≈ 10⁵ within 0.0026 (kronecker) and 0.0007–0.0026 (permuted); at m = 10⁶, kronecker, 0.0012).

Every operator acts on (m,) vectors or (m, k) blocks (columns), on NumPy or CuPy arrays (sparse factors through
``scipy.sparse`` / ``cupyx.scipy.sparse`` CSR). Masks are drawn on the host from a sub-seed of the network's stream
(the sparse factor is the only one not drawn on the device).
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from ... import backend as B
from rmtnet._system import check_allocation
from rmtnet._validation import boolean, finite_array, integer_at_least, one_of, real_scalar, seed_value
from ..network import check_network
from .random_matrices import layer_weights, random_input

__all__ = ["MatrixFreeOperator", "DenseFactor", "TokenMixing", "ChannelMixing", "BlockMixing", "BlockDiagonal",
           "Permutation", "SparseFactor", "monarch_factors", "StructuredNetwork", "mixer_network", "sparse_network",
           "mlp_network", "commutation", "bernoulli_csr"]

STRUCTURES = ("kronecker", "permuted", "monarch")


def _fits_dense(name, elements, what, backend):
    """Refuse, before allocating, ``elements`` float64 entries of a dense path that cannot fit in memory
    (:func:`rmtnet._system.check_allocation`, naming ``name``); the matrix-free products are the alternative."""
    check_allocation(name, 8.0 * elements, what=what, backend=B.get_backend() if backend is None else backend,
                     alternative="stay matrix-free: the operator's products (matmat, rows) with rmtnet.spectra.slq "
                                 "or top_eigenvalues, or a smaller size")


# ------------------------------------------------------------------------------------------------------------------
# Factors: linear maps on row blocks. Internally an operand is (k, n): k vectors of length n, features last.

class _Factor:
    """A linear map ℝ^{n_in} → ℝ^{n_out} acting on row blocks (k, n_in) → (k, n_out), with its transpose."""
    n_in: int
    n_out: int

    def rows(self, X):
        raise NotImplementedError

    def rows_t(self, Y):
        raise NotImplementedError

    def to_dense(self):
        """The n_out × n_in matrix (small sizes; for tests)."""
        _fits_dense(f"this {self.n_out}×{self.n_in} factor", self.n_in * (self.n_in + 2 * self.n_out),
                    "to_dense()", self.backend)
        xp = self._xp
        return self.rows(xp.eye(self.n_in)).T

    @property
    def _xp(self):
        return B.native(self.backend)


class DenseFactor(_Factor):
    """x ↦ W x for a dense W (n_out × n_in).

    Parameters
    ----------
    w : ndarray
        W.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> w = np.arange(6.0).reshape(2, 3)
    >>> print(DenseFactor(w).rows(np.ones((1, 3))), np.allclose(DenseFactor(w).to_dense(), w))
    [[ 3. 12.]] True
    """

    def __init__(self, w, backend="numpy"):
        self.w, self.backend = w, backend
        self.n_out, self.n_in = w.shape

    def rows(self, X):
        return X @ self.w.T

    def rows_t(self, Y):
        return Y @ self.w


class TokenMixing(_Factor):
    """flatten(X) ↦ flatten(W X) for X ∈ ℝ^{S×C} (row-major): the layer kron(W, I_C), density 1/C.

    Parameters
    ----------
    w : ndarray
        W, (S_out, S_in).
    channels : int
        C.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> w = np.random.default_rng(0).standard_normal((3, 2))
    >>> print(np.allclose(TokenMixing(w, 4).to_dense(), np.kron(w, np.eye(4))))
    True
    """

    def __init__(self, w, channels, backend="numpy"):
        self.w, self.channels, self.backend = w, int(channels), backend
        s_out, s_in = w.shape
        self.n_in, self.n_out = s_in * self.channels, s_out * self.channels

    def rows(self, X):
        return self._left(self.w, X)

    def rows_t(self, Y):
        return self._left(self.w.T, Y)

    def _left(self, w, X):
        """w applied to the token axis of every row, as one GEMM w @ (S_in, k·C): k small batched GEMMs would each be
        split across OpenBLAS threads, which on a loaded machine makes SLQ with many probes far slower."""
        k, C = X.shape[0], self.channels
        if k == 1:
            return (w @ X.reshape(w.shape[1], C)).reshape(1, -1)
        Xs = X.reshape(k, w.shape[1], C).transpose(1, 0, 2).reshape(w.shape[1], k * C)
        return (w @ Xs).reshape(w.shape[0], k, C).transpose(1, 0, 2).reshape(k, -1)


class ChannelMixing(_Factor):
    """flatten(X) ↦ flatten(X Vᵀ) for X ∈ ℝ^{S×C} (row-major): the layer kron(I_S, V), density 1/S. Also the block
    mixing (I_n ⊗ V) of the RP-Mixer on any row-major layout with blocks of length C.

    Parameters
    ----------
    v : ndarray
        V, (C_out, C_in).
    tokens : int
        S.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> v = np.random.default_rng(0).standard_normal((3, 2))
    >>> print(np.allclose(ChannelMixing(v, 4).to_dense(), np.kron(np.eye(4), v)))
    True
    """

    def __init__(self, v, tokens, backend="numpy"):
        self.v, self.tokens, self.backend = v, int(tokens), backend
        c_out, c_in = v.shape
        self.n_in, self.n_out = self.tokens * c_in, self.tokens * c_out

    def rows(self, X):
        k = X.shape[0]
        return (X.reshape(k * self.tokens, self.v.shape[1]) @ self.v.T).reshape(k, self.n_out)      # one GEMM

    def rows_t(self, Y):
        k = Y.shape[0]
        return (Y.reshape(k * self.tokens, self.v.shape[0]) @ self.v).reshape(k, self.n_in)


def BlockMixing(w, n_blocks, backend="numpy"):
    """I_{n_blocks} ⊗ W on contiguous blocks of length W.shape[1] (the RP-Mixer's token mixing between its
    permutations): the same map as :class:`ChannelMixing`.

    Parameters
    ----------
    w : ndarray
        W.
    n_blocks : int
        The number of blocks.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Returns
    -------
    ChannelMixing

    Examples
    --------
    >>> w = np.random.default_rng(0).standard_normal((3, 2))
    >>> print(np.allclose(BlockMixing(w, 4).to_dense(), np.kron(np.eye(4), w)))
    True
    """
    return ChannelMixing(w, n_blocks, backend)


class BlockDiagonal(_Factor):
    """diag(B_1, …, B_n) on contiguous blocks: x = (x_1, …, x_n), x_i ∈ ℝ^{k_in} ↦ (B_1 x_1, …, B_n x_n), with n
    independent (untied) blocks, as one batched GEMM; the transpose applies the B_iᵀ. A Monarch matrix's R and L
    (:func:`monarch_factors`); with all blocks equal it is :class:`ChannelMixing`.

    Parameters
    ----------
    blocks : ndarray
        The blocks, (n, k_out, k_in).
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> from scipy.linalg import block_diag
    >>> blocks = np.random.default_rng(0).standard_normal((3, 2, 4))
    >>> print(np.allclose(BlockDiagonal(blocks).to_dense(), block_diag(*blocks)))
    True
    """

    def __init__(self, blocks, backend="numpy"):
        self.blocks, self.backend = _stack("blocks", blocks), backend
        n, k_out, k_in = blocks.shape
        self.n_in, self.n_out = n * k_in, n * k_out

    def rows(self, X):
        return self._batched(self.blocks.transpose(0, 2, 1), X)

    def rows_t(self, Y):
        return self._batched(self.blocks, Y)

    def _batched(self, right, X):
        """Row block (k, n·a) ↦ (k, n·c) through the n matrices right (n, a, c): (n, k, a) @ (n, a, c)."""
        n, a, c = right.shape
        k = X.shape[0]
        Z = X.reshape(k, n, a).transpose(1, 0, 2) @ right
        return Z.transpose(1, 0, 2).reshape(k, n * c)


def _stack(name, x):
    """``x`` as a finite real or complex (n, k_out, k_in) stack of blocks, every side ≥ 1, or ValueError naming it."""
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    arr = finite_array(name, x, complex if kind == "c" else float)
    if arr.ndim != 3 or min(arr.shape) < 1:
        raise ValueError(f"{name} must be a stack of blocks of shape (n, k_out, k_in), every side ≥ 1, got shape "
                         f"{tuple(arr.shape)}")
    return arr


def monarch_factors(r, l, backend="numpy"):
    """The Monarch matrix M = Pᵀ L P R (Dao et al., ICML 2022, arXiv 2204.00595) as factors applied in order, never
    formed: R = diag(R_1, …, R_b) with b blocks k_out × k_in, P the commutation of a b × k_out array (row-major, the
    stride permutation), L = diag(L_1, …, L_{k_out}) with blocks b × b, and Pᵀ. The convention of
    :class:`rmtnet.nets.MonarchLinear`: M[(s, c), (s′, c′)] = L_c[s, s′] R_{s′}[c, c′] in row-major (s, c) order.

    Parameters
    ----------
    r : ndarray
        R's blocks, (b, k_out, k_in).
    l : ndarray
        L's blocks, (k_out, b, b).
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Returns
    -------
    list
        [BlockDiagonal(R), Permutation(P), BlockDiagonal(L), Permutation(Pᵀ)].

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r, l = rng.standard_normal((2, 3, 3)), rng.standard_normal((3, 2, 2))
    >>> M = np.eye(6)
    >>> for f in monarch_factors(r, l):
    ...     M = f.to_dense() @ M
    >>> print(np.isclose(M[1 * 3 + 2, 0 * 3 + 1], l[2, 1, 0] * r[0, 2, 1]))
    True
    """
    r, l = _stack("r", r), _stack("l", l)
    b, k_out, _ = r.shape
    if tuple(l.shape) != (k_out, b, b):
        raise ValueError(f"l must have shape (k_out, b, b) = ({k_out}, {b}, {b}) for r of shape {tuple(r.shape)}, "
                         f"got {tuple(l.shape)}")
    return [BlockDiagonal(r, backend), Permutation(commutation(b, k_out, backend), backend), BlockDiagonal(l, backend),
            Permutation(commutation(k_out, b, backend), backend)]


class Permutation(_Factor):
    """(P x)[i] = x[perm[i]] (the convention of :class:`rmtnet.nets.PermutedMixing`); Pᵀ gathers by the inverse.

    Parameters
    ----------
    perm : array_like
        A permutation of range(n).
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> P = Permutation([2, 0, 1])
    >>> x = np.array([[10.0, 20.0, 30.0]])
    >>> print(P.rows(x), P.rows_t(P.rows(x)))
    [[30. 10. 20.]] [[10. 20. 30.]]
    """

    def __init__(self, perm, backend="numpy"):
        xp = B.native(backend)
        self.perm, self.backend = xp.asarray(perm), backend
        self.inv = xp.argsort(self.perm)
        self.n_in = self.n_out = int(self.perm.shape[0])

    def rows(self, X):
        return X[:, self.perm]

    def rows_t(self, Y):
        return Y[:, self.inv]


class SparseFactor(_Factor):
    """x ↦ A x for a CSR matrix A (``scipy.sparse`` or ``cupyx.scipy.sparse``).

    Parameters
    ----------
    a : sparse matrix
        A, CSR.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Examples
    --------
    >>> a = bernoulli_csr(4, 6, 0.5, 1.0, seed=0)
    >>> f = SparseFactor(a)
    >>> x = np.ones((1, 6))
    >>> print(f.nnz == a.nnz, np.allclose(f.rows(x), x @ a.toarray().T))
    True True
    """

    def __init__(self, a, backend="numpy"):
        self.a, self.backend = a, backend
        self.n_out, self.n_in = a.shape
        self.nnz = int(a.nnz)

    def rows(self, X):
        return (self.a @ X.T).T

    def rows_t(self, Y):
        return (self.a.T @ Y.T).T

    def to_dense(self):
        return self.a.toarray()


def commutation(rows, cols, backend="numpy"):
    """The commutation permutation of a rows×cols matrix in row-major order: flatten(Xᵀ) = flatten(X)[perm]
    (:func:`rmtnet.nets.layers.commutation`, without torch).

    Parameters
    ----------
    rows, cols : int
        The matrix's shape.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.

    Returns
    -------
    ndarray
        rows·cols indices.

    Examples
    --------
    >>> X = np.arange(6).reshape(2, 3)
    >>> perm = commutation(2, 3)
    >>> print(perm.tolist(), np.array_equal(X.reshape(-1)[perm], X.T.reshape(-1)))
    [0, 3, 1, 4, 2, 5] True
    """
    xp = B.native(backend)
    return xp.arange(rows * cols).reshape(rows, cols).T.reshape(-1)


def bernoulli_csr(n_out, n_in, density, std, seed):
    """An n_out × n_in CSR matrix M ⊙ A: iid Bernoulli(``density``) mask, kept entries N(0, std²), drawn on the host.

    The positions of the kept entries in row-major order are the partial sums of iid Geometric(p) gaps: exactly a
    Bernoulli(p) mask, in O(nnz) time and memory and already sorted — never an n_out × n_in array.

    Parameters
    ----------
    n_out, n_in : int
        The shape.
    density : float
        p ∈ (0, 1].
    std : float
        The kept entries' standard deviation.
    seed : int or None
        Seeds NumPy's generator.

    Returns
    -------
    scipy.sparse.csr_matrix

    Examples
    --------
    About p·n_out·n_in = 2000 kept entries (binomial, standard deviation ≈ 42):

    >>> a = bernoulli_csr(100, 200, 0.1, 1.0, seed=0)
    >>> print(a.shape, abs(a.nnz - 2000) < 300)
    (100, 200) True
    """
    p = real_scalar("density", density, lo=0.0, hi=1.0, lo_open=True)
    rng = np.random.default_rng(seed_value("seed", seed))
    total = int(n_out) * int(n_in)
    chunks, last = [], -1
    while True:
        need = max(int((total - 1 - last) * p * 1.05) + 64, 64)
        # a gap beyond the end ends the mask whatever its size: capped at total + 1, the sums cannot overflow int64
        # (at p ≲ 1e-19 geometric() saturates at 2⁶³ − 1, and the wrapped negative sums never reached the end)
        pos = last + np.cumsum(np.minimum(rng.geometric(p, size=need), total + 1))
        done = pos[-1] >= total
        pos = pos[pos < total]
        chunks.append(pos)
        if done:
            break
        last = int(pos[-1])
    pos = np.concatenate(chunks)
    rows = pos // n_in
    cols = (pos - rows * n_in).astype(np.int32 if n_in < 2 ** 31 else np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_out))])
    data = std * rng.standard_normal(pos.size)
    return sparse.csr_matrix((data, cols, indptr), shape=(int(n_out), int(n_in)))


# ------------------------------------------------------------------------------------------------------------------
class MatrixFreeOperator:
    """A symmetric m×m operator given by its action on row blocks. ``A @ x``, ``A(x)``, ``matvec`` take (m,),
    ``matmat`` (m, k) (columns, SciPy's convention); :meth:`aslinearoperator` gives a SciPy (or cupyx)
    LinearOperator; :meth:`to_dense` the matrix (small m, for checks).

    Parameters
    ----------
    rows : callable
        Y = rows(X) applies the operator to the rows of X, (k, m) → (k, m).
    m : int
        The size.
    backend : {"numpy", "cupy"}
        The array library.
    name : str, default "operator"
        Shown in the repr.

    Examples
    --------
    >>> A = np.diag([1.0, 2.0, 3.0])
    >>> op = MatrixFreeOperator(lambda X: X @ A.T, 3, "numpy", name="diag")
    >>> print(op @ np.ones(3), np.allclose(op.to_dense(), A), op)
    [1. 2. 3.] True MatrixFreeOperator(diag, m=3, backend='numpy')
    """

    dtype = np.dtype(np.float64)

    def __init__(self, rows, m, backend, name="operator"):
        self._rows, self.shape, self.backend, self.name = rows, (int(m), int(m)), backend, name

    def matmat(self, X):
        if X.ndim != 2 or X.shape[0] != self.shape[0]:
            raise ValueError(f"X must have shape ({self.shape[0]}, k), got {X.shape}")
        return self._rows(X.T).T

    def matvec(self, x):
        if x.shape != (self.shape[0],):
            raise ValueError(f"x must have shape ({self.shape[0]},), got {x.shape}")
        return self._rows(x[None, :])[0]

    def __call__(self, x):
        return self.matvec(x) if x.ndim == 1 else self.matmat(x)

    __matmul__ = __call__

    def aslinearoperator(self):
        if self.backend == "cupy":
            from cupyx.scipy.sparse.linalg import LinearOperator
        else:
            from scipy.sparse.linalg import LinearOperator
        return LinearOperator(self.shape, matvec=self.matvec, matmat=self.matmat, rmatvec=self.matvec,
                              rmatmat=self.matmat, dtype=self.dtype)

    def to_dense(self):
        """The m × m matrix (small m; for checks)."""
        _fits_dense(f"this {self.shape[0]}×{self.shape[0]} operator", 2 * self.shape[0] ** 2, "to_dense()",
                    self.backend)
        return self._rows(B.native(self.backend).eye(self.shape[0]))

    def __repr__(self):
        return f"MatrixFreeOperator({self.name}, m={self.shape[0]}, backend={self.backend!r})"


# ------------------------------------------------------------------------------------------------------------------
class StructuredNetwork:
    """A drawn network: layers (lists of factors, applied in order without activation between them), the
    activation, and the D_ℓ and q̂_ℓ of one propagated input (module docstring).

    ``jvp`` / ``vjp`` apply J and Jᵀ to row blocks (k, m); :meth:`jacobian_gram` and :meth:`fisher_dual` return
    :class:`MatrixFreeOperator` s; :meth:`jacobian` the dense J (small m). Built by :func:`mixer_network`,
    :func:`sparse_network` and :func:`mlp_network`.

    Parameters
    ----------
    layers : list of list
        Per layer, its factors in the order applied.
    activation : Activation
        φ and φ′.
    x0 : ndarray
        The propagated input, (m,).
    biases : list of ndarray, optional
        b_ℓ as (1, m) rows.
    last_activation : bool, default True
        Whether D_L is applied.
    backend : {"numpy", "cupy"}, default "numpy"
        The array library.
    net : rmtnet.spectra.network.MLP, optional
        The description it was drawn from (for the mean-field q̂ of :meth:`fisher_dual`).

    Examples
    --------
    >>> from rmtnet.spectra import network
    >>> structured = mixer_network(network.mlp(2, 12, activation="linear"), 3, 4, seed=0)
    >>> J = structured.jacobian()
    >>> U = np.random.default_rng(0).standard_normal((2, 12))
    >>> print(structured.depth, np.allclose(structured.jvp(U), U @ J.T), np.allclose(structured.vjp(U), U @ J))
    2 True True
    >>> print(np.allclose(structured.jacobian_gram().to_dense(), J @ J.T))
    True
    """

    def __init__(self, layers, activation, x0, *, biases=None, last_activation=True, backend="numpy", net=None):
        last_activation = boolean("last_activation", last_activation)
        self.layers = [list(layer) for layer in layers]
        if not self.layers or any(not layer for layer in self.layers):
            raise ValueError("layers must be a non-empty list of non-empty factor lists")
        self.m = self.layers[0][0].n_in
        for ell, layer in enumerate(self.layers, start=1):
            for f in layer:
                if f.n_in != self.m or f.n_out != self.m:
                    raise ValueError(f"layer {ell}: factors must be square m×m with m = {self.m}, got "
                                     f"{f.n_out}×{f.n_in}")
        self.activation, self.backend, self.net = activation, backend, net
        self.last_activation = bool(last_activation)
        xp = B.native(backend)
        if biases is not None and len(biases) != len(self.layers):
            raise ValueError(f"biases must have one entry (or None) per layer, got {len(biases)}")
        self.biases = list(biases) if biases is not None else [None] * len(self.layers)
        x = x0[None, :]
        self.d, self.qhat = [], []
        for layer, b in zip(self.layers, self.biases):
            self.qhat.append(float(xp.mean(x * x)))
            h = self._apply(layer, x)
            if b is not None:
                h = h + b
            self.d.append(activation.dphi(h)[0])
            x = activation.phi(h)
        self._linear = activation.name == "linear"

    @staticmethod
    def _apply(layer, X):
        for f in layer:
            X = f.rows(X)
        return X

    @staticmethod
    def _apply_t(layer, Y):
        for f in reversed(layer):
            Y = f.rows_t(Y)
        return Y

    @property
    def depth(self):
        return len(self.layers)

    def _d(self, ell):
        """D_ℓ (1-based) as a row vector, or None where it is the identity (linear, or the last layer without)."""
        if self._linear or (ell == self.depth and not self.last_activation):
            return None
        return self.d[ell - 1]

    def jvp(self, U):
        """J applied to the rows of U (k, m)."""
        for ell, layer in enumerate(self.layers, start=1):
            U = self._apply(layer, U)
            d = self._d(ell)
            if d is not None:
                U = U * d
        return U

    def vjp(self, Y):
        """Jᵀ applied to the rows of Y (k, m)."""
        for ell in range(self.depth, 0, -1):
            d = self._d(ell)
            if d is not None:
                Y = Y * d
            Y = self._apply_t(self.layers[ell - 1], Y)
        return Y

    def jacobian_gram(self, side="output"):
        """JJᵀ (``side="output"``) or JᵀJ (``"input"``) as a :class:`MatrixFreeOperator` (one J and one Jᵀ per
        matvec)."""
        one_of("side", side, ("output", "input"))
        if side == "output":
            return MatrixFreeOperator(lambda U: self.jvp(self.vjp(U)), self.m, self.backend, "J Jᵀ")
        return MatrixFreeOperator(lambda U: self.vjp(self.jvp(U)), self.m, self.backend, "Jᵀ J")

    def factor_gram(self, layer=1, index=0):
        """F Fᵀ for one factor F (the ``index``-th of layer ``layer``, 1-based) alone: the spectrum of a single mixing
        or masked weight (J(I ⊗ W)J or M ⊙ W, whose singular values Hayase & Karakida 2024 compare with the MP
        law), as a :class:`MatrixFreeOperator`."""
        ell = integer_at_least("layer", layer, 1)
        if ell > self.depth:
            raise ValueError(f"layer must lie in [1, {self.depth}], got {layer}")
        factors = self.layers[ell - 1]
        i = integer_at_least("index", index, 0)
        if i >= len(factors):
            raise ValueError(f"index must lie in [0, {len(factors) - 1}], got {index}")
        f = factors[i]
        return MatrixFreeOperator(lambda U: f.rows(f.rows_t(U)), self.m, self.backend, f"F Fᵀ ({type(f).__name__})")

    def fisher_dual(self, qhat="empirical"):
        """The one-sample Fisher dual / NTK of the effective width-m network with respect to its effective weights,
        Θ = Σ_ℓ q̂_{ℓ−1} B_ℓB_ℓᵀ with B_ℓ = ∂x_L/∂h_ℓ (Hayase & Karakida 2021, eq. (9); the convention of
        :func:`~rmtnet.spectra.sampling.montecarlo.sample_fisher_eigs`): Θ₁ = q̂₀ I, Θ_{ℓ+1} = q̂_ℓ I + K_{ℓ+1} D_ℓ Θ_ℓ D_ℓ
        K_{ℓ+1}ᵀ, Θ = D_L Θ_L D_L (Θ_L without a last activation).

        Matrix-free by unrolling the recursion: g_L = D_L u, g_ℓ = D_ℓ K_{ℓ+1}ᵀ g_{ℓ+1} (one backward pass), then
        t₁ = q̂₀ g₁, t_{ℓ+1} = q̂_ℓ g_{ℓ+1} + K_{ℓ+1} D_ℓ t_ℓ (one forward pass), Θu = D_L t_L.
        ``qhat``: ``"empirical"`` (q̂_ℓ = ‖x_ℓ‖²/m of the propagated input) or ``"mean_field"`` (the limits
        E φ(h_ℓ)², from the ``net`` description the network was built from)."""
        one_of("qhat", qhat, ("empirical", "mean_field"))
        if qhat == "mean_field":
            if self.net is None:
                raise ValueError("qhat='mean_field' needs the network description (build with mixer_network & co.)")
            q = [float(v) for v in self.net.post_activation_moments()]
        else:
            q = self.qhat
        L = self.depth

        def rows(U):
            g = [None] * (L + 1)
            d = self._d(L)
            g[L] = U if d is None else U * d
            for ell in range(L - 1, 0, -1):
                y = self._apply_t(self.layers[ell], g[ell + 1])
                d = self._d(ell)
                g[ell] = y if d is None else y * d
            t = q[0] * g[1]
            for ell in range(1, L):
                d = self._d(ell)
                t = q[ell] * g[ell + 1] + self._apply(self.layers[ell], t if d is None else t * d)
            d = self._d(L)
            return t if d is None else t * d

        return MatrixFreeOperator(rows, self.m, self.backend, "Fisher dual Θ")

    def jacobian(self):
        """The dense m×m Jacobian J (for checks at small m)."""
        _fits_dense(f"this network of width m = {self.m}", 2 * self.m ** 2, "the dense Jacobian", self.backend)
        return self.jvp(B.native(self.backend).eye(self.m)).T

    @property
    def nnz(self):
        """Stored nonzeros of the effective weights, per layer (a Kronecker factor counts its own S² or C²)."""
        out = []
        for layer in self.layers:
            n = 0
            for f in layer:
                if isinstance(f, SparseFactor):
                    n += f.nnz
                elif isinstance(f, (TokenMixing, ChannelMixing)):
                    n += int(np.prod((f.w if isinstance(f, TokenMixing) else f.v).shape))
                elif isinstance(f, DenseFactor):
                    n += int(np.prod(f.w.shape))
                elif isinstance(f, BlockDiagonal):
                    n += int(np.prod(f.blocks.shape))
            out.append(n)
        return out


# ------------------------------------------------------------------------------------------------------------------
# Builders from an rmtnet.spectra.network description (duck-typed: spectra does not import arch)

def _bias(net, m, rng):
    """b ~ N(0, σ_b² I) as a (1, m) row, drawn right after the layer's weights (montecarlo.propagate's order)."""
    return net.sigma_b * rng.standard_normal((1, m), dtype="float64") if net.sigma_b > 0 else None


def _check_net(net, what):
    """A description or an object with its fields; anything else (a torch model included) is refused by
    :func:`~rmtnet.spectra.network.check_network`, which names the way from a torch model to its description."""
    if not all(hasattr(net, attr) for attr in ("depth", "weights", "sigma_w", "sigma_b", "activation",
                                               "last_activation", "q0")):
        check_network(f"net of {what}", net)


def mixer_network(net, tokens, channels, *, structure="kronecker", permutations="random", seed=None, backend=None):
    """Draw the Mixer-structured version of ``net`` (an :func:`rmtnet.spectra.network.mlp`: depth, weights, σ_w, σ_b,
    activation, last_activation, q0; its widths are not used) at S = ``tokens``, C = ``channels``: one Mixer layer
    (W_ℓ, V_ℓ) per layer of ``net``, ``structure`` ``"kronecker"`` (MLP-Mixer), ``"permuted"`` (RP-Mixer) or
    ``"monarch"`` (the Monarch matrix Pᵀ L P R of :func:`monarch_factors`: S untied C×C blocks R_s, then C untied S×S
    blocks L_c, each block of gain √σ_w) — module docstring. ``permutations="commutation"`` (permuted only) uses the
    commutations, giving the kronecker network from the same seed exactly. Draw order: x₀, then per layer W, V, the
    permutations (random only), the bias; monarch: x₀, then per layer the S blocks R_s, the C blocks L_c, the bias.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The description.
    tokens, channels : int
        S and C.
    structure : {"kronecker", "permuted", "monarch"}, default "kronecker"
        MLP-Mixer, RP-Mixer or Monarch.
    permutations : {"random", "commutation"}, default "random"
        The RP-Mixer's permutations.
    seed : int, optional
        Seeds every draw.
    backend : {"numpy", "cupy"}, optional
        The array library (default the global one).

    Returns
    -------
    StructuredNetwork

    Examples
    --------
    Orthogonal factors of gain 1 make a linear Mixer an isometry, JJᵀ = I; each Gaussian layer stores S² + C² weights:

    >>> from rmtnet.spectra import network
    >>> structured = mixer_network(network.mlp(2, 12, weights="orthogonal", activation="linear"), 3, 4, seed=0)
    >>> print(np.allclose(structured.jacobian_gram().to_dense(), np.eye(12)))
    True
    >>> print(mixer_network(network.mlp(2, 12, activation="linear"), 3, 4, seed=0).nnz)
    [25, 25]
    """
    _check_net(net, "mixer_network")
    S, C = integer_at_least("tokens", tokens, 1), integer_at_least("channels", channels, 1)
    one_of("structure", structure, STRUCTURES)
    one_of("permutations", permutations, ("random", "commutation"))
    be = B.get_backend() if backend is None else backend
    xp = B.native(be)
    rng = B.rng(seed, be)
    m = S * C
    g = net.sigma_w ** 0.5
    x0 = random_input(m, net.q0, rng, xp, 1)[0]
    layers, biases = [], []
    for _ in range(net.depth):
        if structure == "monarch":
            r = layer_weights(net.weights, C, C, g, rng, be, batch=S)
            layers.append(monarch_factors(r, layer_weights(net.weights, S, S, g, rng, be, batch=C), be))
            biases.append(_bias(net, m, rng))
            continue
        w = layer_weights(net.weights, S, S, g, rng, be)
        v = layer_weights(net.weights, C, C, g, rng, be)
        if structure == "kronecker":
            layers.append([TokenMixing(w, C, be), ChannelMixing(v, S, be)])
        else:
            if permutations == "random":
                q = xp.argsort(rng.random(m))
                p = xp.argsort(rng.random(m))
            else:
                q, p = commutation(S, C, be), commutation(C, S, be)
            layers.append([ChannelMixing(v, S, be), Permutation(q, be), BlockMixing(w, C, be), Permutation(p, be)])
        biases.append(_bias(net, m, rng))
    return StructuredNetwork(layers, net.activation, x0, biases=biases, last_activation=net.last_activation,
                             backend=be, net=net)


def sparse_network(net, tokens, channels, *, density=None, seed=None, backend=None):
    """Draw the SW-MLP version of ``net`` at m = S·C: per layer two static-mask factors, K = (M′ ⊙ A′)(M ⊙ A), iid
    Bernoulli masks of density 1/C for the first applied and 1/S for the second — the Mixer's, so that each factor
    has m·S or m·C connections on average (Hayase & Karakida 2024) — or ``density`` for both, kept entries
    N(0, σ_w/(p·m)). Gaussian weights only. The regime of the MP law is p·m ≫ log m
    (:func:`rmtnet.spectra.mixer.mp_regime`); memory is 12 bytes per kept entry. Draw order: x₀, then per layer a
    host sub-seed for each mask, the bias.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The description (Gaussian weights).
    tokens, channels : int
        S and C.
    density : float, optional
        One density for both factors.
    seed : int, optional
        Seeds every draw.
    backend : {"numpy", "cupy"}, optional
        The array library.

    Returns
    -------
    StructuredNetwork

    Examples
    --------
    Each layer keeps about m²/C + m²/S connections (densities 1/C, then 1/S): 144/4 + 144/3 = 84 at S = 3, C = 4:

    >>> from rmtnet.spectra import network
    >>> structured = sparse_network(network.mlp(2, 12, activation="linear"), 3, 4, seed=0)
    >>> print(structured.depth, [abs(n - 84) < 30 for n in structured.nnz])
    2 [True, True]
    """
    _check_net(net, "sparse_network")
    if net.weights != "gaussian":
        raise ValueError(f"sparse_network draws Gaussian kept entries; got weights={net.weights!r}")
    S, C = integer_at_least("tokens", tokens, 1), integer_at_least("channels", channels, 1)
    m = S * C
    p1, p2 = (1.0 / C, 1.0 / S) if density is None else (density, density)
    p1 = real_scalar("density", p1, lo=0.0, hi=1.0, lo_open=True)
    p2 = real_scalar("density", p2, lo=0.0, hi=1.0, lo_open=True)
    be = B.get_backend() if backend is None else backend
    # 12 bytes per kept entry (float64 value, int32 column), 8 more while drawing its position
    _fits_dense("tokens × channels × density", 2.5 * net.depth * (p1 + p2) * float(m) ** 2,
                f"the {2 * net.depth} sparse factors' kept entries", be)
    xp = B.native(be)
    rng = B.rng(seed, be)
    x0 = random_input(m, net.q0, rng, xp, 1)[0]
    layers, biases = [], []
    for _ in range(net.depth):
        layer = []
        for p in (p1, p2):
            sub = int(B.to_numpy(rng.integers(0, 2 ** 62, size=1))[0])
            a = bernoulli_csr(m, m, p, (net.sigma_w ** 0.5) / np.sqrt(p * m), sub)
            if be == "cupy":
                from cupyx.scipy import sparse as cusparse
                a = cusparse.csr_matrix(a)
            layer.append(SparseFactor(a, be))
        layers.append(layer)
        biases.append(_bias(net, m, rng))
    return StructuredNetwork(layers, net.activation, x0, biases=biases, last_activation=net.last_activation,
                             backend=be, net=net)


def mlp_network(net, width=None, *, seed=None, backend=None):
    """The dense square network of ``net`` (width ``width`` or net.width) drawn exactly as
    :func:`~rmtnet.spectra.sampling.montecarlo.propagate` draws one sample from the same seed, so that its JJᵀ and Fisher dual
    have the eigenvalues :func:`~rmtnet.spectra.sampling.montecarlo.sample_jacobian_eigs` and ``sample_fisher_eigs`` return.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square description.
    width : int, optional
        m (default net.width).
    seed : int, optional
        Seeds every draw.
    backend : {"numpy", "cupy"}, optional
        The array library.

    Returns
    -------
    StructuredNetwork

    Examples
    --------
    >>> from rmtnet.spectra import network
    >>> from rmtnet.spectra import sample_jacobian_eigs
    >>> net = network.mlp(2, 50, activation="tanh", sigma_w=1.5)
    >>> gram = mlp_network(net, seed=0).jacobian_gram().to_dense()
    >>> print(np.allclose(np.sort(np.linalg.eigvalsh(gram)), np.sort(sample_jacobian_eigs(net, seed=0))))
    True
    """
    _check_net(net, "mlp_network")
    widths = net.scaled_widths(width)
    if len(set(widths)) != 1:
        raise ValueError(f"mlp_network needs equal widths (a square network), got {widths}")
    be = B.get_backend() if backend is None else backend
    n = widths[0]
    _fits_dense("net" if width is None else "width", net.depth * n * n, f"the {net.depth} dense {n}×{n} weight "
                f"matrices", be)
    xp = B.native(be)
    rng = B.rng(seed, be)
    x0 = random_input(n, net.q0, rng, xp, 1)
    layers, biases = [], []
    for _ in range(net.depth):
        w = layer_weights(net.weights, n, n, net.sigma_w, rng, be, batch=1)[0]
        layers.append([DenseFactor(w, be)])
        biases.append(_bias(net, n, rng))
    return StructuredNetwork(layers, net.activation, x0[0], biases=biases, last_activation=net.last_activation,
                             backend=be, net=net)
