r"""Sparse variational GP classification (Hensman, Matthews & Ghahramani 2015), the whitened form.

M inducing inputs Z carry u = f(Z) ~ N(0, K_uu); whitened, u = L v with K_uu = LLᵀ and v ~ N(0, I). The
approximation is q(v) = N(m, S) and, given v, the GP's own conditional p(f | u). At a training input x_i the
latent value is then Gaussian under q with

    μ_i = a_iᵀ m,   s_i² = k_ii − a_iᵀa_i + a_iᵀ S a_i,   a_i = L⁻¹ k_u(x_i),

and the evidence has the lower bound (the KL chapter's bound with q(f) = ∫ p(f | u) q(u) du)

    ℒ(m, S) = ∑_i E_(N(f_i | μ_i, s_i²))[log p(y_i | f_i)] − KL(N(m, S) ‖ N(0, I)),

whose one-dimensional expectations are the KL chapter's (:func:`gpc_ref.gaussian_integrals.log_link_expectations`).
On a minibatch B of b of the n points, (n/b) ∑_(i∈B) Ē_i − KL is an unbiased estimate of ℒ.

q(v) is kept in its natural parameters θ₁ = S⁻¹m and the precision P = S⁻¹; a natural-gradient step of length β
([HMG15] §3, [KL17]) is

    P ← (1 − β) P + β (I + A Λ̂ Aᵀ),    θ₁ ← (1 − β) θ₁ + β A(ρ + Λ̂ μ),

with A = [a_1 … a_n] and ρ_i = ∂Ē_i/∂μ_i, λ̂_i = −2 ∂Ē_i/∂s_i² (on a minibatch, the sums over B times n/b):
at β = 1 and Z = X it is the KL chapter's site update. Every n × M product is formed a chunk of points at a time,
so memory is O(nD + M² + chunk·M), never an n × n or n × M matrix.

Notation (book symbol ← code name): Z ← ``Z``; K_uu = LLᵀ ← ``L``; A ← ``A`` (one chunk); m, S ← ``mean``,
``covariance``; θ₁, P ← ``theta1``, ``precision``; Ē_i, ρ_i, λ̂_i ← ``expected``, ``rho``, ``lam_hat``; ℒ ←
``log_bound``.

References
----------
- [HMG15] Hensman, Matthews & Ghahramani (2015), *Scalable variational Gaussian process classification*, AISTATS.
- [T09] Titsias (2009), *Variational learning of inducing variables in sparse Gaussian processes*, AISTATS.
- [KL17] Khan & Lin (2017), *Conjugate-computation variational inference*, AISTATS: natural-gradient steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .gaussian_integrals import log_link_expectations
from .kernels import SEKernel
from .kl import binary_likelihood
from .likelihoods import LogisticLikelihood
from .likelihoods import ProbitLikelihood
from .linalg import cholesky
from .linalg import solve_lower
from .validation import check_binary_labels
from .validation import check_rng

__all__ = ["SVGPPosterior", "SVGPBound", "SVGPFit", "svgp_prior", "svgp_marginals", "svgp_bound",
           "svgp_natural_step", "svgp_fit"]  # fmt: skip

CHUNK = 4096  # points per chunk of the n × M products


@dataclass(frozen=True)
class SVGPPosterior:
    """q(v) = N(m, S) of the whitened inducing values, in natural parameters θ₁ = S⁻¹m and P = S⁻¹.

    Attributes
    ----------
    theta1 : ndarray (M,)
    precision : ndarray (M, M)
    """

    theta1: np.ndarray
    precision: np.ndarray

    def _factor(self):
        return cholesky(self.precision, name="the precision of q(v)")

    @property
    def mean(self) -> np.ndarray:
        """m = P⁻¹θ₁ (by the Cholesky factor of P)."""
        return self._factor().solve(self.theta1)

    @property
    def covariance(self) -> np.ndarray:
        """S = P⁻¹, formed on request (the bound and the steps never need it whole)."""
        return self._factor().solve(np.eye(len(self.theta1)))


def svgp_prior(M: int) -> SVGPPosterior:
    """q(v) = the prior N(0, I): the start of every fit.

    Parameters
    ----------
    M : int
        The number of inducing inputs.

    Returns
    -------
    SVGPPosterior
    """
    return SVGPPosterior(np.zeros(M), np.eye(M))


def _inducing_factor(kernel, Z):
    return cholesky(kernel.K(Z), name="K_uu").L


def _chunks(n, batch):
    indices = np.arange(n) if batch is None else np.asarray(batch)
    for start in range(0, len(indices), CHUNK):
        yield indices[start : start + CHUNK]


def _chunk_marginals(kernel, X_rows, Z, L, factor, m):
    """A = L⁻¹K_uf for a chunk of points, and their μ_i = a_iᵀm and s_i² = k_ii − a_iᵀa_i + a_iᵀSa_i."""
    A = solve_lower(L, kernel.K(Z, X_rows))  # a_i = L⁻¹ k_u(x_i), one column per point
    var = kernel.diag(X_rows) - np.sum(A * A, axis=0) + np.sum(A * factor.solve(A), axis=0)
    return A, A.T @ m, np.maximum(var, 1e-12)


def svgp_marginals(kernel: SEKernel, X: ArrayLike, Z: ArrayLike, q: SVGPPosterior) -> tuple[np.ndarray, np.ndarray]:
    """μ_i and s_i² of the latent values at the rows of X under q (module docstring), a chunk at a time.

    Parameters
    ----------
    kernel : SEKernel
    X, Z : array (n, D), array (M, D)
        The points and the inducing inputs.
    q : SVGPPosterior

    Returns
    -------
    mean, var : ndarray (n,), ndarray (n,)
    """
    X = np.asarray(X, dtype=float)
    L, factor = _inducing_factor(kernel, Z), q._factor()
    m = factor.solve(q.theta1)
    mean, var = np.empty(len(X)), np.empty(len(X))
    for rows in _chunks(len(X), None):
        _, mean[rows], var[rows] = _chunk_marginals(kernel, X[rows], Z, L, factor, m)
    return mean, var


@dataclass(frozen=True)
class SVGPBound:
    """ℒ (or its minibatch estimate), its two terms, and the scale n/b the expectations were multiplied by.

    Attributes
    ----------
    log_bound, expected, kl, scale : float
    """

    log_bound: float
    expected: float
    kl: float
    scale: float


def _kl_to_prior(q):
    """KL(N(m, S) ‖ N(0, I)) = ½(tr S + mᵀm − M − log det S), with S = P⁻¹ through P's Cholesky factor."""
    factor = q._factor()
    m = factor.solve(q.theta1)
    trace_S = float(np.sum(solve_lower(factor.L, np.eye(len(m))) ** 2))
    return 0.5 * (trace_S + float(m @ m) - len(m) + factor.log_det)


def _batch_terms(kernel, X, y, Z, q, likelihood, batch):
    """Over the points of ``batch`` (all if None): ∑Ē_i, ∑ a_i(ρ_i + λ̂_i μ_i) and ∑ λ̂_i a_i a_iᵀ."""
    L, factor = _inducing_factor(kernel, Z), q._factor()
    m = factor.solve(q.theta1)
    M = len(m)
    expected, g1, G2 = 0.0, np.zeros(M), np.zeros((M, M))
    for rows in _chunks(len(y), batch):
        A, mean, var = _chunk_marginals(kernel, X[rows], Z, L, factor, m)
        e, d1, d2 = log_link_expectations(likelihood, y[rows] * mean, var)  # the KL chapter's expectations
        rho, lam_hat = y[rows] * d1, -d2
        expected += float(np.sum(e))
        g1 += A @ (rho + lam_hat * mean)
        G2 += (A * lam_hat) @ A.T
    return expected, g1, G2


def _checked(X, y, Z, likelihood, batch, n_data):
    X = np.asarray(X, dtype=float)
    y = check_binary_labels(y, "y", length=len(X))
    Z = np.asarray(Z, dtype=float)
    batch = None if batch is None else np.asarray(batch, dtype=int)
    scale = 1.0 if batch is None else (len(y) if n_data is None else n_data) / len(batch)
    return X, y, Z, binary_likelihood(likelihood), batch, scale


def svgp_bound(kernel: SEKernel, X: ArrayLike, y: ArrayLike, Z: ArrayLike, q: SVGPPosterior,
               likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None, *,
               batch: ArrayLike | None = None, n_data: int | None = None) -> SVGPBound:  # fmt: skip
    """ℒ(m, S) of the module docstring, or on ``batch`` (b row indices) its unbiased estimate (n/b)∑_B Ē_i − KL.

    Parameters
    ----------
    kernel : SEKernel
    X, y : array (n, D), array (n,)
        Inputs and labels ±1.
    Z : array (M, D)
        Inducing inputs.
    q : SVGPPosterior
    likelihood : {"logistic", "probit"} or an instance, default logistic
    batch : array of int, optional
        Rows of the minibatch; n_data (default n) is the number the estimate stands for.

    Returns
    -------
    SVGPBound
    """
    X, y, Z, likelihood, batch, scale = _checked(X, y, Z, likelihood, batch, n_data)
    expected = _batch_terms(kernel, X, y, Z, q, likelihood, batch)[0]
    kl = _kl_to_prior(q)
    return SVGPBound(scale * expected - kl, scale * expected, kl, scale)


def svgp_natural_step(kernel: SEKernel, X: ArrayLike, y: ArrayLike, Z: ArrayLike, q: SVGPPosterior,
                      likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None, *, beta: float = 1.0,
                      batch: ArrayLike | None = None, n_data: int | None = None) -> SVGPPosterior:  # fmt: skip
    """One natural-gradient step of length β on q (the module docstring's update), on all points or a minibatch.

    Parameters
    ----------
    kernel, X, y, Z, q, likelihood, batch, n_data
        As in :func:`svgp_bound`; on a minibatch the sums are scaled by n/b, an unbiased estimate of the full ones.
    beta : float in (0, 1]
        The step length; 1 jumps to the fixed point of the current expectations.

    Returns
    -------
    SVGPPosterior
    """
    X, y, Z, likelihood, batch, scale = _checked(X, y, Z, likelihood, batch, n_data)
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must be in (0, 1]; got {beta!r}")
    _, g1, G2 = _batch_terms(kernel, X, y, Z, q, likelihood, batch)
    M = len(q.theta1)
    precision = (1.0 - beta) * q.precision + beta * (np.eye(M) + scale * G2)
    theta1 = (1.0 - beta) * q.theta1 + beta * scale * g1
    return SVGPPosterior(theta1, 0.5 * (precision + precision.T))


@dataclass(frozen=True)
class SVGPFit:
    """The fitted q, the full-batch bound, and whether the full-batch step moved q by less than ``tol``.

    Attributes
    ----------
    posterior : SVGPPosterior
    log_bound : float
    converged : bool
        The full-batch natural-gradient residual (largest change of θ₁ and P a full step would make, relative to
        1 + their size) is below ``tol``: a stochastic fit's own last steps do not decide it.
    residual : float
    n_steps : int
    """

    posterior: SVGPPosterior
    log_bound: float
    converged: bool
    residual: float
    n_steps: int


def _residual(q, step):
    change = max(np.max(np.abs(step.theta1 - q.theta1) / (1.0 + np.abs(q.theta1))),
                 np.max(np.abs(step.precision - q.precision) / (1.0 + np.abs(q.precision))))  # fmt: skip
    return float(change)


def svgp_fit(kernel: SEKernel, X: ArrayLike, y: ArrayLike, Z: ArrayLike,
             likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None, *, batch_size: int | None = None,
             rng: np.random.Generator | int | None = None, n_epochs: int = 20, beta: float | None = None,
             tol: float = 1e-6) -> SVGPFit:  # fmt: skip
    """q(v) by natural-gradient steps: full-batch (β = 1, to ``tol``) or by minibatches for ``n_epochs`` epochs.

    Parameters
    ----------
    kernel, X, y, Z, likelihood
        As in :func:`svgp_bound`.
    batch_size : int, optional
        None: full-batch steps until the residual is below ``tol`` (at most 100). Else minibatches of this size,
        drawn without replacement each epoch with ``rng`` (required), steps of length ``beta`` (default 0.1).
    n_epochs, tol : int, float

    Returns
    -------
    SVGPFit
        Convergence is judged by one full-batch step at the end, whatever the fit used.
    """
    X = np.asarray(X, dtype=float)
    y = check_binary_labels(y, "y", length=len(X))
    q, n_steps = svgp_prior(len(np.asarray(Z))), 0
    if batch_size is None:
        for n_steps in range(1, 101):
            step = svgp_natural_step(kernel, X, y, Z, q, likelihood, beta=1.0 if beta is None else beta)
            residual, q = _residual(q, step), step
            if residual < tol:
                break
    else:
        rng = check_rng(rng)
        for _ in range(n_epochs):
            order = rng.permutation(len(y))  # each epoch visits every point once
            for start in range(0, len(y), batch_size):
                rows = order[start : start + batch_size]
                q = svgp_natural_step(kernel, X, y, Z, q, likelihood, beta=0.1 if beta is None else beta,
                                      batch=rows, n_data=len(y))  # fmt: skip
                n_steps += 1
    check = svgp_natural_step(kernel, X, y, Z, q, likelihood, beta=1.0)
    residual = _residual(q, check)
    bound = svgp_bound(kernel, X, y, Z, q, likelihood).log_bound
    return SVGPFit(q, bound, residual < tol, residual, n_steps)
