r"""Learning the kernel of Girolami & Rogers' variational probit classifier.

Two ways, both around the fixed-kernel VB iterations of :mod:`gpc_ref.vb_probit`:

- **G&R's importance sampling** (§4.4, eqs 4.5–4.8): the kernel precisions φ_d get an
  exponential prior with Gamma-distributed rates, and each VB iteration replaces them by a
  self-normalised importance-sampling estimate of their posterior mean
  (:func:`vb_probit_learn_kernel`). Stochastic; G&R run a fixed number of iterations.
- **Maximising the bound** (not in the paper): the lower bound ℒ(θ) at the VB
  fixed point is maximised over the kernel's log-parameters by L-BFGS-B (:func:`vb_probit_maximize_bound`).
  At a fixed point ∂ℒ/∂Q = 0, so its gradient is that of
  E_Q[log p(f | θ)] alone (the envelope theorem), which with
  Q(f^c) = N(K_c α_c, K_c(I + K_c)⁻¹) is the gradient of GP regression
  with unit noise on the targets z̃^c:

      (∂ℒ/∂θ_j) = ½ ∑_c
      tr((α_c α_cᵀ - (I + K_c)⁻¹) ∂_j K_c).

  Deterministic, with a gradient to test convergence on, and it can learn the signal variance too.

Notation as in :mod:`gpc_ref.vb_probit` (the book's: n points indexed by i, C classes indexed by c,
posterior means μ^c ← ``M[:, c]``, auxiliary means z̃^c, covariances
K_c); φ_d = 1/(2ℓ_d²) ← ``phi``, ψ_d ← ``psi``,
the Gamma hyperprior's shape and rate σ, τ ← ``prior_shape``, ``prior_rate``. K_φ
is the covariance with precisions φ (G&R's C_φ); a tilde on
φ or ψ is G&R's posterior mean under Q.

References
----------
- [GR06] Girolami & Rogers (2006), §4.4, eqs 4.5–4.8, Appendix A.
- [GPML] Rasmussen & Williams (2006), eq 5.9 (the gradient of the regression evidence).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr
from scipy.special import logsumexp

from .errors import ConvergenceWarning
from .hyperparameters import HyperparameterFit
from .hyperparameters import free_mask
from .hyperparameters import maximize
from .hyperparameters import theta_box
from .hyperparameters import theta_names
from .kernels import SEKernel
from .kernels import class_kernels
from .kernels import stack_theta
from .kernels import unstack_theta
from .likelihoods import MultinomialProbitLikelihood
from .likelihoods import normal_pdf_over_cdf
from .linalg import cholesky
from .linalg import solve_lower
from .progress import with_progress
from .validation import check_binary_labels
from .validation import check_bool
from .validation import check_class_codes
from .validation import check_matrix
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_rng
from .vb_probit import VBResult
from .vb_probit import factor_plus_identity
from .vb_probit import latent_from_alpha
from .vb_probit import solve_each
from .vb_probit import vb_lower_bound
from .vb_probit import vb_probit_binary
from .vb_probit import vb_probit_multiclass

__all__ = [
    "precisions_from_kernel",
    "kernel_from_precisions",
    "ImportanceStep",
    "importance_sample_precisions",
    "update_psi",
    "KernelLearning",
    "vb_probit_learn_kernel",
    "BoundFit",
    "vb_bound_gradient",
    "vb_probit_maximize_bound",
]


# --------------------------------------------------------------------------- kernel parameters by importance sampling
def precisions_from_kernel(kernel: SEKernel) -> np.ndarray:
    r"""G&R's precisions φ_d = 1/(2ℓ_d²) of an :class:`~gpc_ref.kernels.SEKernel`.

    Parameters
    ----------
    kernel : SEKernel

    Returns
    -------
    ndarray (1,) or (D,)
        One precision, or one per input for an ARD kernel.
    """
    return 1.0 / (2.0 * np.atleast_1d(np.asarray(kernel.lengthscale, dtype=float)) ** 2)


def kernel_from_precisions(kernel: SEKernel, phi: ArrayLike) -> SEKernel:
    r"""A copy of ``kernel`` with lengthscales ℓ_d = 1/√(2φ_d) (the variance is kept).

    Parameters
    ----------
    kernel : SEKernel
        Supplies everything but the lengthscales (and whether they are ARD).
    phi : array_like (1,) or (D,)
        Positive precisions φ_d.

    Returns
    -------
    SEKernel
    """
    phi = check_positive(phi, "phi")
    lengthscale = 1.0 / np.sqrt(2.0 * np.atleast_1d(phi))
    return kernel.with_params(lengthscale=lengthscale if kernel.ard else float(lengthscale[0]))


@dataclass(frozen=True)
class ImportanceStep:
    """One importance-sampling estimate of the precisions (G&R eqs 4.5, 4.7).

    ``phi_mean`` is the weighted mean of the sampled precisions; ``effective_sample_size``
    (Kish, 1/∑_s w_s²) shows how many samples carried the estimate;
    ``n_failed`` counts samples whose covariance would not factorise (weight zero).
    """

    phi_mean: np.ndarray
    effective_sample_size: float
    n_failed: int


def importance_sample_precisions(
    kernel: SEKernel,
    X: ArrayLike,
    M: ArrayLike,
    psi: ArrayLike,
    *,
    rng: np.random.Generator | int,
    n_samples: int = 500,
    include_trace: bool = True,
) -> ImportanceStep:
    r"""Posterior mean of the kernel precisions by importance sampling (G&R eqs 4.5, 4.7): Algorithm 9.3 (vbp-alg-learn).

    Draws φ^s_d ~ Exp(ψ̃_d) (rate ψ̃_d, mean 1/ψ̃_d) and weights them by Q(φ) over the prior, self-normalised:

        φ̃ ≈ ∑_s φ^s w(φ^s),
        log w(φ^s) = ∑_c[log N(μ^c | 0, K_(φ^s)) - ½ tr(K_(φ^s)⁻¹Σ_c)] + const,

    over the columns c of ``M``; Σ_c = K_φ̃(I + K_φ̃)⁻¹ is the current kernel's. Eq 4.5 and Appendix A.3 as printed
    omit the trace; without it the precisions collapse towards zero (the book's VB probit chapter). A sample whose
    covariance does not factorise with the kernel's jitter gets weight zero (``n_failed``), LinAlgError if all do.

    Parameters
    ----------
    kernel : SEKernel
        The current kernel K_φ̃; supplies the variance, jitter and whether there is one precision or one per input.
    X : array_like (n, D)
        Training inputs.
    M : array_like (n,) or (n, C)
        Posterior means μ^c of the GP columns that share ``kernel``.
    psi : array_like
        Current rates ψ̃_d (length 1 or D).
    rng : numpy.random.Generator or int
    n_samples : int
        Importance samples φ^s.
    include_trace : bool
        Include -½ tr(K_φ⁻¹Σ_c) in the weights (default) or not (as printed).

    Returns
    -------
    ImportanceStep
    """
    rng = check_rng(rng)
    n_samples = check_positive_int(n_samples, "n_samples")
    X = check_matrix(X, "X")
    M = np.asarray(M, dtype=float)
    M = M[:, None] if M.ndim == 1 else M
    psi = check_positive(psi, "psi")
    n_phi = len(np.atleast_1d(psi))
    n_cols = M.shape[1]
    if include_trace:
        # a square root S of Σ = K̃ (I + K̃)⁻¹ for the current kernel K̃ = K_φ̃ = L̃ L̃ᵀ: S = L̃ G⁻ᵀ, G Gᵀ = I + L̃ᵀL̃
        L_cur = cholesky(kernel.K(X), name="K(X) of the current kernel").L
        G = cholesky(np.eye(X.shape[0]) + L_cur.T @ L_cur, name="I + L^T L").L
        S = solve_lower(G, L_cur.T).T  # (G⁻¹ L̃ᵀ)ᵀ = L̃ G⁻ᵀ
    # G&R (2006) §4.3: φ_d^s ~ Exp(ψ̃_d)  (numpy's scale is the mean 1/ψ̃_d)
    samples = rng.exponential(scale=1.0 / np.atleast_1d(psi), size=(int(n_samples), n_phi))
    samples = np.maximum(samples, np.finfo(float).tiny)
    log_w = np.full(int(n_samples), -np.inf)
    n_failed = 0
    for s in range(int(n_samples)):
        C = kernel_from_precisions(kernel, samples[s]).K(X)
        try:
            factor = cholesky(C, max_tries=0, name="C_phi")
        except np.linalg.LinAlgError:
            n_failed += 1
            continue
        v = solve_lower(factor.L, M)
        # G&R (2006) eq 4.5: log Π_c N(μ^c | 0, K_φs); the 2π terms cancel in the normalisation
        log_w[s] = -0.5 * np.sum(v * v) - 0.5 * n_cols * factor.log_det
        if include_trace:
            # E_{Q(f^c)} adds −½ tr(K_φs⁻¹ Σ_c) for each of the n_cols classes sharing the kernel
            W = solve_lower(factor.L, S)
            log_w[s] -= 0.5 * n_cols * np.sum(W * W)
    if n_failed == len(log_w):
        raise np.linalg.LinAlgError("no sampled covariance could be factorised; increase the kernel's jitter")
    w = np.exp(log_w - logsumexp(log_w))
    # G&R (2006) eq 4.7: φ̃ ← Σ_s φ^s w(φ^s)
    phi_mean = w @ samples
    return ImportanceStep(phi_mean, float(1.0 / np.sum(w**2)), n_failed)


def update_psi(phi: ArrayLike, prior_shape: float = 1e-3, prior_rate: float = 1e-3) -> np.ndarray:
    r"""Posterior mean of the exponential rates, ψ̃_d = (σ + 1)/(τ + φ̃_d) (G&R eq 4.8).

    Parameters
    ----------
    phi : array_like
        Precisions φ̃_d.
    prior_shape, prior_rate : float
        σ, τ of the Gamma prior on ψ.

    Returns
    -------
    ndarray
        ψ̃_d, the shape of ``phi``.
    """
    phi = np.asarray(phi, dtype=float)
    # G&R (2006) eq 4.8 (Q(ψ_d) = Γ(σ + 1, τ + φ̃_d), App. A.4)
    return (prior_shape + 1.0) / (prior_rate + phi)


@dataclass(frozen=True)
class KernelLearning:
    """History of VB with the kernel precisions learnt by importance sampling (G&R §4.4, eqs 4.6–4.8).

    Attributes
    ----------
    kernels : tuple of SEKernel
        The final kernel(s): one shared by every class, or one per class.
    phi_history : ndarray (n_iter + 1, G, D)
        Precisions of each kernel group G before every iteration and after the last.
    lower_bound : ndarray (n_iter,)
        The bound, conditioned on the kernel in use, at every iteration.
    alpha_history : ndarray (n_iter, n, C)
        Dual weights after each Q(f) update, paired with ``phi_history[i]``
        (the kernel that produced them), so predictions can be traced through the run.
    effective_sample_size : ndarray (n_iter, G)
        Kish effective sample size of each importance-sampling step.
    """

    kernels: tuple
    phi_history: np.ndarray
    lower_bound: np.ndarray
    alpha_history: np.ndarray
    effective_sample_size: np.ndarray


def vb_probit_learn_kernel(
    kernel: SEKernel | Sequence[SEKernel],
    X: ArrayLike,
    t: ArrayLike,
    *,
    rng: np.random.Generator | int,
    n_iter: int = 50,
    n_importance_samples: int = 500,
    prior_shape: float = 1e-3,
    prior_rate: float = 1e-3,
    n_classes: int | None = None,
    binary: bool = False,
    likelihood: MultinomialProbitLikelihood | None = None,
    include_trace: bool = True,
    progress: bool = False,
) -> KernelLearning:
    r"""Variational Bayes with the kernel precisions learnt by importance sampling (G&R §4.4, eqs 4.6–4.8).

    Each iteration updates Q(f) with the current kernel (eq 4.6), Q(z) at the new means (eqs 4.3, 4.4; footnote 6
    for binary), recording the bound conditioned on the kernel, then φ̃ (eq 4.7, :func:`importance_sample_precisions`)
    and ψ̃_d ← (σ+1)/(τ + φ̃_d) (eq 4.8). With the plug-in K_φ̃⁻¹ for E[K_φ⁻¹] (App. A.1) and random weights the
    bound need not rise. The precisions start from ``kernel``'s (the paper: φ_d = 1, ``lengthscale = 1/√2``), μ^c at 0.

    Parameters
    ----------
    kernel : SEKernel or sequence of SEKernel
        One kernel shared by all classes (one φ, weights multiplied over classes) or one per class (G&R's φ_k).
        A scalar lengthscale learns one common precision, an array one per input (ARD).
    X, t : array_like
        Training inputs (n, D), and classes c_i (codes 0..C−1) or labels y_i = ±1 with ``binary=True``, shape (n,).
    rng : numpy.random.Generator or int
    n_iter, n_importance_samples, prior_shape, prior_rate
        Iterations, samples per importance step, and σ, τ of the Gamma prior on ψ (the paper: 50, 500, 1e-3, 1e-3).
    n_classes, binary : int or None, bool
        C (default ``max(t) + 1``; ignored with ``binary=True``), or the one-GP binary model (labels ±1).
    likelihood : MultinomialProbitLikelihood, optional
        Carries the Gauss–Hermite rule of Q(z) for C classes (default 48 nodes).
    include_trace : bool
        Weights with the trace term (default) or as printed in eq 4.5; see :func:`importance_sample_precisions`.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    KernelLearning
        Run :func:`vb_probit_multiclass` (or :func:`vb_probit_binary`) at the learnt ``kernels`` to converge Q(f)Q(z).
    """
    rng = check_rng(rng)
    X = check_matrix(X, "X")
    n = X.shape[0]
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    if binary:
        t = check_binary_labels(t, "t", length=n)
        n_cols = 1
    else:
        t, n_cols = check_class_codes(t, n, n_classes)
    per_class, shared = class_kernels(kernel, n_cols)
    kernels = [per_class[0]] if shared else list(per_class)
    groups = [list(range(n_cols))] if len(kernels) == 1 else [[k] for k in range(n_cols)]
    check_positive(prior_shape, "prior_shape")
    check_positive(prior_rate, "prior_rate")
    phi = [precisions_from_kernel(k) for k in kernels]
    # G&R (2006) eq 4.8 at the initial precisions
    psi = [update_psi(p, prior_shape, prior_rate) for p in phi]
    mats = [k.K(X) for k in kernels]
    factors = factor_plus_identity(mats)
    alpha = np.zeros((n, n_cols))
    M = latent_from_alpha(mats, alpha)
    phi_history, bounds, alphas, ess = [np.array(phi)], [], [], []

    def q_y(M):
        """Q(z): eqs 4.3–4.4 (C classes) or footnote 6 (binary); returns (z̃, log Z)."""
        if binary:
            m = M[:, 0]
            return (m + t * normal_pdf_over_cdf(t * m))[:, None], log_ndtr(t * m)
        P, log_Z = likelihood.cone_mean_shift(t, M)
        return M + P, log_Z

    Y, _ = q_y(np.zeros((n, n_cols)))  # Q(z) at μ = 0
    for _ in with_progress(range(check_positive_int(n_iter, "n_iter")), progress, "VB + importance sampling"):
        # Q(f): G&R (2006) eq 4.6 with the current kernel K_φ̃ (α_c = (I + K)⁻¹ z̃^c, μ^c = K α_c)
        alpha = solve_each(factors, Y)
        M = latent_from_alpha(mats, alpha)
        alphas.append(alpha)
        # Q(z) at the new means, and the bound conditioned on the current kernel (App. C)
        Y, log_Z = q_y(M)
        bounds.append(vb_lower_bound(log_Z, alpha, M, factors))
        # Q(φ) by importance sampling (eqs 4.5, 4.7), then Q(ψ) (eq 4.8)
        step_ess = []
        for g, cols in enumerate(groups):
            step = importance_sample_precisions(
                kernels[g], X, M[:, cols], psi[g], rng=rng, n_samples=n_importance_samples, include_trace=include_trace
            )
            phi[g] = step.phi_mean
            psi[g] = update_psi(phi[g], prior_shape, prior_rate)
            kernels[g] = kernel_from_precisions(kernels[g], phi[g])
            step_ess.append(step.effective_sample_size)
        ess.append(step_ess)
        phi_history.append(np.array(phi))
        mats = [k.K(X) for k in kernels]
        factors = factor_plus_identity(mats)
    return KernelLearning(tuple(kernels), np.array(phi_history), np.array(bounds), np.array(alphas), np.array(ess))


# --------------------------------------------------------------------------- kernel parameters by maximising the bound
@dataclass(frozen=True)
class BoundFit:
    r"""Result of :func:`vb_probit_maximize_bound`.

    Attributes
    ----------
    kernel : SEKernel or tuple of SEKernel
        The kernel(s) at the maximum: one shared by every class, or one per class.
    vb : VBResult
        The VB posterior at that kernel: the one the search evaluated there (not a rerun).
    lower_bound : float
        ℒ there.
    converged : bool
        The projected gradient passed :func:`gpc_ref.hyperparameters.maximize`'s test, and the VB
        iterations at the returned kernel reached their fixed point (did not stop at ``vb_max_iter``).
    optimization : HyperparameterFit
        The search.
    trace : ndarray (n_evaluations, 4)
        Every evaluation of the search in order: the bound (NaN where VB failed), seconds since the
        start, the VB iterations it took (evaluations of the fixed-point map), and 1.0 if they reached
        the fixed point or 0.0 if they stopped at the cap ``vb_max_iter``.
    n_vb_iter : int
        VB iterations summed over the search (the inner cost; ``trace[:, 2].sum()``).
    n_vb_capped : int
        Evaluations whose VB iterations stopped at ``vb_max_iter`` (their bound is still a lower bound
        on the evidence, their gradient approximate).
    vb_max_iter : int
        The cap on the VB iterations of one evaluation.
    """

    kernel: object
    vb: VBResult = field(repr=False)
    lower_bound: float
    converged: bool
    optimization: HyperparameterFit = field(repr=False)
    trace: np.ndarray = field(repr=False)
    n_vb_iter: int = 0
    n_vb_capped: int = 0
    vb_max_iter: int = 0


def vb_bound_gradient(kernel: SEKernel | Sequence[SEKernel], X: ArrayLike, vb: VBResult) -> np.ndarray:
    r"""Gradient of the converged VB bound with respect to the kernel log-parameters (module docstring).

    ∂ℒ/∂θ_j = ½∑_c tr((α_c
    α_cᵀ - (I + K_c)⁻¹) ∂_j K_c), the GP-regression evidence gradient
    ([GPML] eq 5.9) with unit noise, valid at a fixed point of the VB iterations only.

    Parameters
    ----------
    kernel : SEKernel or sequence of SEKernel
        The kernel shared by every GP column, or one per column (the kernel ``vb`` was run with).
    X : ndarray (n, D)
        Training inputs.
    vb : VBResult
        The converged VB posterior at ``kernel``.

    Returns
    -------
    ndarray
        In :func:`gpc_ref.kernels.stack_theta` order: ``kernel.theta``, or the per-column thetas concatenated.
    """
    X = check_matrix(X, "X")
    n_columns = vb.alpha.shape[1]
    per_class, shared = class_kernels(kernel, n_columns)
    identity = np.eye(X.shape[0])
    gradient = []
    for g, k in enumerate(per_class[:1] if shared else per_class):
        columns = list(range(n_columns)) if shared else [g]
        A = vb.alpha[:, columns]
        # with a shared kernel the C columns share one factor of I + K
        Q = A @ A.T - len(columns) * vb.factors[min(g, len(vb.factors) - 1)].solve(identity)
        gradient.append(0.5 * k.gradient_traces(X, 0.5 * (Q + Q.T)))
    return np.concatenate(gradient)


def vb_probit_maximize_bound(kernel: SEKernel | Sequence[SEKernel], X: ArrayLike, t: ArrayLike, *,
                             n_classes: int | None = None, binary: bool = False, fixed: Sequence[str] = (),
                             likelihood: MultinomialProbitLikelihood | None = None, n_restarts: int = 0,
                             rng: np.random.Generator | int | None = None, max_iter: int = 200, tol: float = 1e-5,
                             vb_tol: float = 1e-10, vb_max_iter: int = 10000, warm_start: bool = True,
                             vb_tol_per_gradient: float = 0.1, progress: bool = False) -> BoundFit:  # fmt: skip
    r"""Kernel hyperparameters by maximising the VB lower bound at its fixed point (type-II ML on the bound).

    For each θ the VB iterations run to their fixed point (SQUAREM-accelerated, warm-started) and ℒ(θ) with its
    gradient (module docstring) go to :func:`gpc_ref.hyperparameters.maximize`; unlike G&R's importance sampler this
    is deterministic and learns every entry of ``kernel.theta`` (the signal variance included) not named in ``fixed``.

    Parameters
    ----------
    kernel, X, t, n_classes, binary, likelihood
        As in :func:`vb_probit_learn_kernel` (``kernel``, one shared or one per class, is the starting point).
    fixed : sequence of str
        Kernel parameter names held at their starting values (for per-class kernels, in every class).
    n_restarts, rng, max_iter, tol, progress
        As in :func:`gpc_ref.hyperparameters.maximize`.
    vb_tol, vb_max_iter : float, int
        The VB tolerance at each θ (tight: the gradient assumes a fixed point), and the cap on one evaluation's VB
        iterations. A capped evaluation is kept (its bound still a lower bound, its gradient approximate; see ``trace``,
        ``n_vb_capped``); if the returned kernel's run was capped, the fit is not ``converged`` and a
        :class:`~gpc_ref.validation.ConvergenceWarning` names ``vb_max_iter``.
    vb_tol_per_gradient : float
        Far from the optimum VB stops at a distance of α to its fixed point (√tolerance) of this times the last
        relative gradient (largest free component / max(1, abs(bound))), within [√vb_tol, 1e-3]; where that is
        ≤ 10·``tol`` the evaluation is redone at ``vb_tol``. 0 runs every evaluation to ``vb_tol``.
    warm_start : bool
        Start each evaluation's VB from the previous one's z̃ (each search start from μ = 0), else from μ = 0;
        the fixed point, and so the optimum, is the same.

    Returns
    -------
    BoundFit
    """
    X = check_matrix(X, "X")
    n = X.shape[0]
    if binary:
        t = check_binary_labels(t, "t", length=n)
        n_columns = 1
    else:
        t, n_columns = check_class_codes(t, n, n_classes)
    vb_max_iter = check_positive_int(vb_max_iter, "vb_max_iter")
    warm_start = check_bool(warm_start, "warm_start")
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    per_class, shared = class_kernels(kernel, n_columns)
    kernels = per_class[:1] if shared else per_class
    theta0 = stack_theta(kernel, n_columns)
    free = np.concatenate([free_mask(k, fixed) for k in kernels])
    # the previous evaluation's Q(z) means (the warm start), and the VB result of the best evaluation so far
    state = {"Y": None, "best": None, "vb_tol": vb_tol}
    trace = []
    start = time.perf_counter()

    def run_vb(current, tolerance):
        mats = np.stack([k.K(X) for k in (current if isinstance(current, tuple) else (current,))])
        options = {"max_iter": vb_max_iter, "tol": tolerance, "z_init": state["Y"], "warn": False,
                   "accelerate": True}  # fmt: skip
        if binary:
            return vb_probit_binary(mats, t, **options)
        return vb_probit_multiclass(mats, t, n_classes=n_columns, likelihood=likelihood, **options)

    def bound_and_gradient(theta):
        current = unstack_theta(kernel, theta, n_columns)
        vb, gradient = vb_and_gradient(current, state["vb_tol"])
        relative = float(np.max(np.abs(gradient[free]))) / max(1.0, abs(vb.log_marginal_likelihood_bound))
        if state["vb_tol"] > vb_tol and relative <= 10.0 * tol:
            # near the optimum the value and gradient that the search stops on come from VB run to vb_tol
            vb, gradient = vb_and_gradient(current, vb_tol)
        # farther from it the next evaluation may stop earlier: a distance of α to its fixed point (√tolerance) that is a
        # small multiple of the relative gradient, between √vb_tol and 1e-3 (an inexact gradient)
        state["vb_tol"] = float(np.clip(vb_tol_per_gradient * relative, np.sqrt(vb_tol), 1e-3)) ** 2
        bound = vb.log_marginal_likelihood_bound
        # maximize returns its best evaluation (the first with the largest value): keep that one's posterior
        if np.all(np.isfinite(gradient)) and (state["best"] is None or bound > state["best"][1]):
            state["best"] = (theta.copy(), bound, vb)
        return bound, gradient

    def vb_and_gradient(current, tolerance):
        try:
            vb = run_vb(current, tolerance)
        except np.linalg.LinAlgError:
            trace.append((np.nan, time.perf_counter() - start, 0, 0.0))
            raise
        bound = vb.log_marginal_likelihood_bound
        trace.append((bound, time.perf_counter() - start, vb.n_iter, float(vb.converged)))
        if not np.isfinite(bound):
            raise np.linalg.LinAlgError("the VB bound is not finite at these hyperparameters")
        if warm_start:
            state["Y"] = vb.Y
        return vb, vb_bound_gradient(current, X, vb)

    def reset():
        state["Y"] = None
        state["vb_tol"] = vb_tol

    search = maximize(bound_and_gradient, theta0, bounds=theta_box(kernels), free=free, n_restarts=n_restarts,
                      rng=rng, max_iter=max_iter, tol=tol, reset=reset, progress=progress,
                      names=theta_names(kernels), description="vb_probit_maximize_bound")  # fmt: skip
    best = unstack_theta(kernel, search.theta, n_columns)
    if state["best"] is not None and np.array_equal(state["best"][0], search.theta):
        vb = state["best"][2]
    else:  # not expected (maximize keeps the best evaluation); recompute rather than return a mismatch
        state["Y"] = None
        vb = run_vb(best, vb_tol)
    trace = np.array(trace, dtype=float).reshape(-1, 4)
    if not vb.converged:
        warnings.warn(
            f"vb_probit_maximize_bound: the VB iterations at the learnt kernel stopped at the cap "
            f"vb_max_iter={vb_max_iter} before their fixed point, so the bound and its gradient there are "
            f"approximate; raise vb_max_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    return BoundFit(kernel=best, vb=vb, lower_bound=vb.log_marginal_likelihood_bound,
                    converged=bool(search.converged and vb.converged), optimization=search, trace=trace,
                    n_vb_iter=int(trace[:, 2].sum()), n_vb_capped=int(np.sum(np.isfinite(trace[:, 0]) & (trace[:, 3] == 0.0))),
                    vb_max_iter=vb_max_iter)  # fmt: skip
