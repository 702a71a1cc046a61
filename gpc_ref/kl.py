r"""The KL method: the Gaussian q(f) that maximises the evidence lower bound (Opper & Archambeau 2009).

For a GP prior p(f) = N(0, K) and a factorising likelihood, every Gaussian
q(f) = N(μ, Σ) gives a lower bound on the log evidence (Jensen's inequality),

    log Z ≥ ℒ(μ, Σ) = ∑_i E_(N(f_i | μ_i, Σ_ii))[log p(y_i | f_i)] - KL(N(μ, Σ) ‖ N(0, K)),

and log Z - ℒ = KL(q ‖ p(f | y)), hence the name. The
KL method maximises ℒ over the mean *and the full covariance*. At a stationary point
Σ⁻¹ = K⁻¹ + Λ with Λ = diag(λ),
λ_i = -2 ∂Ē_i/∂Σ_ii, and μ = Kα with
α_i = ∂Ē_i/∂μ_i (Opper & Archambeau's 2n-parameter form, derived in the
book's KL chapter), so q is written like EP's posterior, with *sites*
exp(ν_i f_i - ½λ_i f_i²): Σ = (K⁻¹ + Λ)⁻¹,
μ = Σν. Every quantity is computed from the Cholesky factor of
B = I + Λ^½KΛ^½ (GPML §3.4's stable form), never from K⁻¹.

The sites are fitted by natural-gradient steps (Khan & Lin 2017): the step of length one sets
λ ← λ̂ and
ν ← ρ + Λ̂μ from the expectations under the
current q, which is Newton's step in μ together with the fixed-point step in
λ; a step that lowers ℒ is halved. The iteration stops when the
gradient of ℒ in (μ, Σ) is small, and only then says ``converged``.

Notation (book symbol ← code name):

- y_i ∈ {-1, +1} ← ``y``; K ← ``K`` (jitter included); ℓ(z) = log p(y | f)
  at the margin z = yf ← ``likelihood.log_link``.
- μ, Σ ← ``mean``, :func:`kl_covariance`; Σ_ii ← ``var``.
- Ē_i = E_q[log p(y_i | f_i)] ← ``expected``; ρ_i = ∂Ē_i/∂μ_i
  ← ``rho``; λ̂_i = -2 ∂Ē_i/∂Σ_ii ← ``lam_hat``.
- λ, ν ← ``lam, nu``: the site precisions and precision-means;
  α = K⁻¹μ ← ``alpha``.
- B = I + Λ^½KΛ^½ = LLᵀ ← ``L``; R = Λ^½B⁻¹Λ^½
  = (K + Λ⁻¹)⁻¹.
- ℒ ← ``log_bound``; its gradient in μ ← ``gradient_mean``
  = ρ - α, in the diagonal of Σ ← ``gradient_var``
  = ½(λ - λ̂) (the whole matrix gradient is diagonal
  on the family Σ = (K⁻¹ + Λ)⁻¹).

References
----------
- [OA09] Opper & Archambeau (2009), *The variational Gaussian approximation revisited*, Neural
  Computation 21(3): the bound, its gradients, and the 2n-parameter form of the optimum.
- [CB13] Challis & Barber (2013), *Gaussian Kullback-Leibler approximate inference*, JMLR 14: the
  bound is concave in (μ, C), Σ = CCᵀ, for log-concave likelihoods.
- [NR08] Nickisch & Rasmussen (2008), *Approximations for binary Gaussian process classification*,
  JMLR 9, §3.5: the KL method among the approximations compared.
- [KL17] Khan & Lin (2017), *Conjugate-computation variational inference*, AISTATS: natural-gradient
  steps in the sites.
- [WN11] Walker & Ni (2011), *Anderson acceleration for fixed-point iterations*, SIAM J. Numer.
  Anal. 49(4): the extrapolation of the steps.
- [GPML] Rasmussen & Williams (2006), §3.4 and Algorithm 3.2 (the matrix B and predictions), eq 5.27
  (the form of the gradient in the kernel's parameters).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from functools import partial

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import lapack

from .acceleration import ANDERSON_DEPTH
from .acceleration import anderson_extrapolation
from .errors import ConvergenceWarning
from .gaussian_integrals import log_link_expectations
from .hyperparameters import HyperparameterFit
from .hyperparameters import free_mask
from .hyperparameters import maximize
from .hyperparameters import theta_box
from .kernels import SEKernel
from .likelihoods import SIGMOID_PREDICTIONS
from .likelihoods import LogisticLikelihood
from .likelihoods import ProbitLikelihood
from .linalg import cholesky
from .linalg import solve_lower
from .threads import limited_blas_threads
from .validation import check_binary_labels
from .validation import check_bool
from .validation import check_choice
from .validation import check_covariance
from .validation import check_covariance_derivatives
from .validation import check_kernel
from .validation import check_matrix
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_vector

__all__ = [
    "KLBound",
    "binary_likelihood",
    "KLResult",
    "KLEvidence",
    "KLFit",
    "KLPrediction",
    "kl_bound",
    "kl_gaussian",
    "kl_gaussian_core",
    "kl_covariance",
    "kl_evidence_gradient",
    "kl_log_bound",
    "maximize_kl_bound",
    "kl_predict",
]

LIKELIHOODS = {"logistic": LogisticLikelihood, "probit": ProbitLikelihood}

# Where λ_i k_ii is this small, V_ii = (1 − (B⁻¹)_ii)/λ_i would cancel: V_ii = k_ii − ‖L⁻¹Λ½k_i‖² instead.
_DIRECT_VARIANCE = 1e-4


def binary_likelihood(
    likelihood: LogisticLikelihood | ProbitLikelihood | str | None,
) -> LogisticLikelihood | ProbitLikelihood:
    """The likelihood a KL or sparse variational fit uses, from an instance, a name, or None (logistic).

    Parameters
    ----------
    likelihood : {"logistic", "probit"}, LogisticLikelihood, ProbitLikelihood or None

    Returns
    -------
    LogisticLikelihood or ProbitLikelihood
    """
    if likelihood is None:
        return LogisticLikelihood()
    if isinstance(likelihood, str):
        check_choice(likelihood, "likelihood", tuple(LIKELIHOODS))
        return LIKELIHOODS[likelihood]()
    if isinstance(likelihood, (LogisticLikelihood, ProbitLikelihood)):
        return likelihood
    raise ValueError(
        f"likelihood must be 'logistic', 'probit', LogisticLikelihood() or ProbitLikelihood(); got {likelihood!r}"
    )


# ===================================================================== q(f) from the sites
@dataclass(frozen=True)
class _Posterior:
    """q(f) = N(μ, Σ), Σ = (K⁻¹ + Λ)⁻¹, μ = Σν, with what the bound and the steps need."""

    lam: np.ndarray
    nu: np.ndarray
    L: np.ndarray
    L_inverse: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    alpha: np.ndarray
    kl: float


def _posterior(K, lam, nu):
    """The Gaussian of the sites (λ, ν) and its KL divergence from the prior, by one Cholesky of B."""
    sqrt_lam = np.sqrt(lam)
    # GPML §3.4: B = I + Λ½ K Λ½ = L Lᵀ, eigenvalues ≥ 1
    B = sqrt_lam[:, None] * K * sqrt_lam[None, :]
    B[np.diag_indices_from(B)] += 1.0
    L = cholesky(B, name="B = I + Λ½KΛ½").L
    L_inverse = lapack.dtrtri(L, lower=1)[0]
    B_inverse_diagonal = np.einsum("ij,ij->j", L_inverse, L_inverse)
    # Woodbury: Λ½ Σ Λ½ = I − B⁻¹, so Σ_ii = (1 − (B⁻¹)_ii)/λ_i; where λ_i k_ii is tiny, k_ii − ‖L⁻¹Λ½k_i‖²
    k_diag = np.diag(K)
    direct = lam * k_diag < _DIRECT_VARIANCE
    var = np.divide(1.0 - B_inverse_diagonal, lam, out=np.zeros_like(lam), where=~direct)
    if np.any(direct):
        A = L_inverse @ (sqrt_lam[:, None] * K[:, direct])
        var[direct] = k_diag[direct] - np.einsum("ij,ij->j", A, A)
    var = np.maximum(var, np.finfo(float).tiny)
    # α = K⁻¹μ = ν − Λ½ B⁻¹ Λ½ K ν (Woodbury), μ = K α
    K_nu = K @ nu
    alpha = nu - sqrt_lam * (L_inverse.T @ (L_inverse @ (sqrt_lam * K_nu)))
    mean = K @ alpha
    # KL(q‖p) = ½[tr(K⁻¹Σ) + μᵀK⁻¹μ − n + log|K| − log|Σ|], with tr(K⁻¹Σ) = tr B⁻¹ and |K|/|Σ| = |B|
    kl = 0.5 * float(np.sum(B_inverse_diagonal - 1.0) + alpha @ mean) + float(np.sum(np.log(np.diag(L))))
    return _Posterior(lam, nu, L, L_inverse, mean, var, alpha, kl)


def _expectations(likelihood, y, mean, var, n_nodes):
    """Σ_i Ē_i, ρ = ∂Ē/∂μ and λ̂ = −2 ∂Ē/∂Σ_ii at the marginals N(μ_i, Σ_ii) (the margin z = y f)."""
    expected, d1, d2 = log_link_expectations(likelihood, y * mean, var, n_nodes=n_nodes)
    # Bonnet: ∂Ē/∂μ = y E[ℓ'(z)]; Price: ∂Ē/∂Σ_ii = ½ E[ℓ''(z)]  (y² = 1); λ̂ ≥ 0 for a log-concave ℓ
    return float(np.sum(expected)), y * d1, np.maximum(-d2, 0.0)


# ===================================================================== the bound at given parameters
@dataclass(frozen=True)
class KLBound:
    r"""The bound ℒ at q = N(Kα, (K⁻¹+Λ)⁻¹) and its gradients.

    Attributes
    ----------
    log_bound : float
        ℒ = ∑_i Ē_i - KL(q ‖ p).
    expected_log_lik, kl : float
        Its two parts.
    mean, var : ndarray (n,)
        μ = Kα and diag Σ.
    rho, lam_hat : ndarray (n,)
        ∂Ē_i/∂μ_i and -2 ∂Ē_i/∂Σ_ii.
    gradient_mean : ndarray (n,)
        ∂ℒ/∂μ = ρ - α.
    gradient_var : ndarray (n,)
        The diagonal of ∂ℒ/∂Σ = ½(Λ - Λ̂) (its
        off-diagonal entries are zero on this family).
    gradient_alpha : ndarray (n,)
        ∂ℒ/∂α = K(ρ - α).
    gradient_lam : ndarray (n,) or None
        ∂ℒ/∂λ = -½(Σ∘Σ)(λ - λ̂)
        (None unless asked for: it needs all of Σ).
    """

    log_bound: float
    expected_log_lik: float
    kl: float
    mean: np.ndarray
    var: np.ndarray
    rho: np.ndarray
    lam_hat: np.ndarray
    gradient_mean: np.ndarray
    gradient_var: np.ndarray
    gradient_alpha: np.ndarray
    gradient_lam: np.ndarray | None = None


def kl_bound(K: ArrayLike, y: ArrayLike, alpha: ArrayLike, lam: ArrayLike, *,
             likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None, n_nodes: int = 64,
             gradient_lam: bool = False) -> KLBound:  # fmt: skip
    r"""The evidence lower bound at μ = Kα, Σ = (K⁻¹+Λ)⁻¹, with gradients.

        ℒ = ∑_i Ē_i(μ_i, Σ_ii) - ½[tr B⁻¹ + αᵀ Kα - n + log|B|],

    the KL divergence written with tr(K⁻¹Σ) = tr B⁻¹ and log|K| - log|Σ| = log|B| ([OA09]; [CB13] §2; the
    book's KL chapter derives both). Gradients: ∂ℒ/∂μ = ρ - K⁻¹μ and ∂ℒ/∂Σ = ½(Λ - Λ̂) on this family
    ([OA09]); by the chain rule ∂ℒ/∂α = K(ρ - α) and ∂ℒ/∂λ_j = -½∑_i Σ_ij²(λ_i - λ̂_i).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    alpha, lam : array (n,)
        α = K⁻¹μ and the non-negative site precisions λ.
    likelihood : "logistic" (default), "probit", LogisticLikelihood or ProbitLikelihood
    n_nodes : int
        Gauss–Hermite nodes of :func:`~gpc_ref.gaussian_integrals.log_link_expectations`.
    gradient_lam : bool
        Also compute ∂ℒ/∂λ (forms Σ, O(n³)).

    Returns
    -------
    KLBound
    """
    K = check_covariance(K, "K")
    n = K.shape[0]
    y = check_binary_labels(y, "y", length=n)
    likelihood = binary_likelihood(likelihood)
    alpha = check_vector(alpha, "alpha", length=n)
    lam = check_vector(lam, "lam", length=n)
    if np.any(lam < 0):
        raise ValueError("lam must be non-negative (site precisions)")
    # the sites with μ = K α: ν = Σ⁻¹μ = (K⁻¹ + Λ)Kα = α + Λ K α
    mean = K @ alpha
    state = _posterior(K, lam, alpha + lam * mean)
    expected, rho, lam_hat = _expectations(likelihood, y, state.mean, state.var, n_nodes)
    gradient_mean = rho - state.alpha
    result = dict(log_bound=expected - state.kl, expected_log_lik=expected, kl=state.kl, mean=state.mean,
                  var=state.var, rho=rho, lam_hat=lam_hat, gradient_mean=gradient_mean,
                  gradient_var=0.5 * (lam - lam_hat), gradient_alpha=K @ gradient_mean)  # fmt: skip
    if gradient_lam:
        Sigma = kl_covariance(state, K)
        result["gradient_lam"] = -0.5 * (Sigma * Sigma) @ (lam - lam_hat)
    return KLBound(**result)


# ===================================================================== the KL fit at fixed hyperparameters
@dataclass(frozen=True)
class KLResult:
    r"""The KL approximation q(f) = N(μ, Σ), Σ = (K⁻¹+Λ)⁻¹, at its optimum.

    Attributes
    ----------
    mean, var : ndarray (n,)
        μ and diag Σ (the whole of Σ: :func:`kl_covariance`).
    alpha : ndarray (n,)
        K⁻¹μ; at the optimum α = ρ ([OA09]).
    lam, nu : ndarray (n,)
        The sites: Σ⁻¹ = K⁻¹ + Λ, μ = Σν; at the optimum λ = λ̂.
    L : ndarray (n, n)
        Lower Cholesky factor of B = I + Λ^½KΛ^½.
    log_bound : float
        ℒ, a lower bound on log Z (up to the quadrature's error, about 1e-10 per point).
    expected_log_lik, kl : float
        ∑_i Ē_i and KL(q ‖ p).
    rho, lam_hat : ndarray (n,)
        The expectations' derivatives at the returned q.
    gradient_norm : float
        max(‖∂ℒ/∂μ‖_∞, ‖diag ∂ℒ/∂Σ‖_∞).
    n_iter, n_factorisations : int
        Steps taken (0 when the start already passed the gradient test), and Cholesky factorisations of B
        (one per step tried, plus the first).
    converged : bool
        ``gradient_norm`` passed the test of :func:`kl_gaussian`.
    trace : ndarray (n_iter + 1, 3)
        ℒ, ``gradient_norm`` and ``n_factorisations`` at the start and after every step.
    y, likelihood : ndarray (n,), LogisticLikelihood or ProbitLikelihood
        The labels and the likelihood of the fit.
    """

    mean: np.ndarray
    var: np.ndarray
    alpha: np.ndarray
    lam: np.ndarray
    nu: np.ndarray
    L: np.ndarray = field(repr=False)
    log_bound: float
    expected_log_lik: float
    kl: float
    rho: np.ndarray = field(repr=False)
    lam_hat: np.ndarray = field(repr=False)
    gradient_norm: float
    n_iter: int
    n_factorisations: int
    converged: bool
    trace: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    likelihood: object = field(repr=False)


@limited_blas_threads
def _evaluate(K, likelihood, y, n_nodes, sites):
    """*Evaluate* of Algorithm 13.1 (kl-alg): q, 𝓛, Σ_i Ē_i, ρ and λ̂ at the sites (λ, ν) stacked in one vector."""
    n = len(y)
    state = _posterior(K, sites[:n], sites[n:])  # evaluate, steps 1–2: one Cholesky of B
    expected, rho, lam_hat = _expectations(likelihood, y, state.mean, state.var, n_nodes)  # step 3
    return state, expected - state.kl, expected, rho, lam_hat  # step 4: 𝓛 = Σ_i Ē_i − KL(q‖p)


def _gradient_norm(state, rho, lam_hat):
    """The test of step 2 of Algorithm 13.1: the gradient of 𝓛 in (μ, Σ), ρ − K⁻¹μ and ½(λ − λ̂) ([OA09])."""
    return float(max(np.max(np.abs(rho - state.alpha)), 0.5 * np.max(np.abs(state.lam - lam_hat))))


def _residual(sites, state, rho, lam_hat):
    """Step 2.1 of Algorithm 13.1: r = (λ̂, ρ + Λ̂μ) − (λ, ν), the natural-gradient step of length one ([KL17])."""
    return np.concatenate([lam_hat, rho + lam_hat * state.mean]) - sites


def _natural_gradient_step(evaluate, sites, residual, bound, beta):
    """Step 2.2 of Algorithm 13.1: sites + β r, β halved until 𝓛 does not decrease, then β ← min(1, 1.25 β).

    Returns the new sites, their evaluation, the next β, the evaluations made and whether β was halved.
    """
    n_evaluations, halved = 0, False
    while True:
        candidate = sites + beta * residual
        trial = evaluate(candidate)
        n_evaluations += 1
        if trial[1] < bound - 1e-12 * max(1.0, abs(bound)) and beta > 1e-10:
            beta, halved = 0.5 * beta, True  # the natural gradient ascends: a short enough step raises 𝓛
        else:
            return candidate, trial, min(1.0, 1.25 * beta), n_evaluations, halved


def _kl_result(state, bound, expected, rho, lam_hat, *, n_iter, n_factorisations, tol, trace, y, likelihood):
    gradient_norm = _gradient_norm(state, rho, lam_hat)
    return KLResult(mean=state.mean, var=state.var, alpha=state.alpha, lam=state.lam, nu=state.nu, L=state.L,
                    log_bound=float(bound), expected_log_lik=float(expected), kl=float(state.kl), rho=rho,
                    lam_hat=lam_hat, gradient_norm=gradient_norm, n_iter=n_iter, n_factorisations=n_factorisations,
                    converged=bool(gradient_norm <= tol), trace=np.array(trace), y=y, likelihood=likelihood)  # fmt: skip


def kl_gaussian_core(K: np.ndarray, y: np.ndarray, likelihood: LogisticLikelihood | ProbitLikelihood, *,
                     tol: float = 1e-6, max_iter: int = 200, n_nodes: int = 64) -> KLResult:  # fmt: skip
    """Algorithm 13.1 (kl-alg), step for step: the KL method at fixed hyperparameters.

    The plain core of :func:`kl_gaussian`, which checks the arguments, may start from given sites, first tries
    Anderson's extrapolation at every step (``accelerate=True``, its default), records the bound and the
    gradient at every step (``trace``) and warns when the test of step 2 is not met; this function trusts its
    arguments and does none of that. With ``accelerate=False`` and zero sites the two take the same steps
    (``tests/package/test_kl.py``).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance (jitter included).
    y : ndarray (n,)
        Labels in {−1, +1}.
    likelihood : LogisticLikelihood or ProbitLikelihood
    tol, max_iter, n_nodes
        The box's ε, the most steps, and the Gauss–Hermite nodes of the expectations.

    Returns
    -------
    KLResult
        As from :func:`kl_gaussian`, with an empty ``trace``.

    References: [OA09]; [KL17] (the natural-gradient step).
    """
    evaluate = partial(_evaluate, K, likelihood, y, n_nodes)
    sites, beta, n_iter, n_factorisations = np.zeros(2 * len(y)), 1.0, 0, 1  # step 1: λ = ν = 0, q = the prior
    state, bound, expected, rho, lam_hat = evaluate(sites)
    while _gradient_norm(state, rho, lam_hat) > tol and n_iter < max_iter:  # step 2
        n_iter += 1
        residual = _residual(sites, state, rho, lam_hat)  # step 2.1
        sites, trial, beta, n_evaluations, _ = _natural_gradient_step(evaluate, sites, residual, bound, beta)  # 2.2
        n_factorisations += n_evaluations
        state, bound, expected, rho, lam_hat = trial
    return _kl_result(state, bound, expected, rho, lam_hat, n_iter=n_iter, n_factorisations=n_factorisations,
                      tol=tol, trace=np.empty((0, 3)), y=y, likelihood=likelihood)  # fmt: skip


def kl_gaussian(K: ArrayLike, y: ArrayLike, likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None, *,
                lam_init: ArrayLike | None = None, nu_init: ArrayLike | None = None, tol: float = 1e-6,
                max_iter: int = 200, accelerate: bool = True, n_nodes: int = 64, warn: bool = True) -> KLResult:  # fmt: skip
    r"""The KL method at fixed hyperparameters: maximise ℒ over Gaussians q(f).

    Natural-gradient ascent in the sites (Algorithm 13.1 (kl-alg) of the book's KL chapter, book/kl.ipynb;
    [KL17]): (λ, ν) ← (1-β)(λ, ν) + β(λ̂, ρ + Λ̂μ), with ρ = ∂Ē/∂μ and λ̂ = -2 ∂Ē/∂diag Σ at the current q, the
    step β halved while it would lower ℒ (the next up to 1.25β, at most 1). ℒ is concave here, so the maximum
    is unique ([CB13]). Converged when no component of ℒ's gradient in (μ, Σ), (ρ - α, ½(λ - λ̂)), exceeds
    ``tol`` in magnitude; otherwise, after ``max_iter`` steps, a :class:`ConvergenceWarning` names the count.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance of the latent values (jitter included).
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    likelihood : "logistic" (default), "probit", LogisticLikelihood or ProbitLikelihood
    lam_init, nu_init : array (n,), optional
        Starting sites (a warm start, e.g. from nearby hyperparameters); default 0, i.e. q = prior.
    tol, max_iter : float, int
        The largest gradient component that counts as converged, and the steps before giving up.
    accelerate : bool
        First try Anderson's extrapolation [WN11] from the last five steps at every step, kept only if it
        raises ℒ: it changes the path, never the fixed point (False: plain natural-gradient steps).
    n_nodes : int
        Gauss–Hermite nodes of the one-dimensional expectations.
    warn : bool
        Issue the non-convergence warning (False inside optimisers that check ``converged``).

    Returns
    -------
    KLResult
    """
    K = check_covariance(K, "K")
    n = K.shape[0]
    y = check_binary_labels(y, "y", length=n)
    likelihood = binary_likelihood(likelihood)
    tol = float(check_positive(tol, "tol"))
    max_iter = check_positive_int(max_iter, "max_iter")
    accelerate = check_bool(accelerate, "accelerate")
    lam = np.zeros(n) if lam_init is None else check_vector(lam_init, "lam_init", length=n).copy()
    nu = np.zeros(n) if nu_init is None else check_vector(nu_init, "nu_init", length=n).copy()
    if np.any(lam < 0):
        raise ValueError("lam_init must be non-negative (site precisions)")

    evaluate = partial(_evaluate, K, likelihood, y, n_nodes)
    sites = np.concatenate([lam, nu])
    state, bound, expected, rho, lam_hat = evaluate(sites)
    gradient_norm = _gradient_norm(state, rho, lam_hat)
    n_factorisations, n_iter, beta = 1, 0, 1.0
    trace = [(bound, gradient_norm, n_factorisations)]
    history = []  # (sites, residual) of the last steps, for Anderson's extrapolation
    while gradient_norm > tol and n_iter < max_iter:
        n_iter += 1
        residual = _residual(sites, state, rho, lam_hat)  # Algorithm 13.1 step 2.1
        history = (history + [(sites, residual)])[-(ANDERSON_DEPTH + 1) :]
        trial = None
        if accelerate and len(history) > 1:
            # Anderson's extrapolation [WN11], kept only if it does not lower 𝓛; precisions stay positive
            candidate = anderson_extrapolation(history, sites, residual, beta)
            candidate[:n] = np.maximum(candidate[:n], 0.5 * sites[:n])
            trial = evaluate(candidate)
            n_factorisations += 1
            if trial[1] < bound - 1e-12 * max(1.0, abs(bound)):
                trial = None  # the extrapolation lowered 𝓛: take the plain step instead
        if trial is None:
            candidate, trial, beta, n_evaluations, halved = _natural_gradient_step(evaluate, sites, residual, bound,
                                                                                   beta)  # step 2.2  # fmt: skip
            n_factorisations += n_evaluations
            history = [] if halved else history
        sites = candidate
        state, bound, expected, rho, lam_hat = trial
        gradient_norm = _gradient_norm(state, rho, lam_hat)
        trace.append((bound, gradient_norm, n_factorisations))
    converged = gradient_norm <= tol
    if not converged and warn:
        warnings.warn(
            f"kl_gaussian: not converged after {n_iter} natural-gradient steps: the largest gradient component is "
            f"{gradient_norm:.3g} (tol {tol:g}); the bound and the posterior are approximate",
            ConvergenceWarning,
            stacklevel=2,
        )
    return _kl_result(state, bound, expected, rho, lam_hat, n_iter=n_iter, n_factorisations=n_factorisations,
                      tol=tol, trace=trace, y=y, likelihood=likelihood)  # fmt: skip


def kl_covariance(result: KLResult, K: ArrayLike) -> np.ndarray:
    r"""The whole posterior covariance Σ = (K⁻¹ + Λ)⁻¹ = K - Aᵀ A, A = L⁻¹Λ^½K.

    Parameters
    ----------
    result : KLResult
        A fit (or any object with the sites ``lam`` and the factor ``L`` of B).
    K : ndarray (n, n)
        The prior covariance it was fitted with.

    Returns
    -------
    ndarray (n, n)
        Σ, symmetric.
    """
    K = check_covariance(K, "K", n_points=result.lam.shape[0])
    # GPML Alg. 3.2's form: Σ = K − K Λ½ B⁻¹ Λ½ K
    A = solve_lower(result.L, np.sqrt(result.lam)[:, None] * K)
    Sigma = K - A.T @ A
    return 0.5 * (Sigma + Sigma.T)


# ===================================================================== hyperparameters
def kl_evidence_gradient(result: KLResult, *, dK: ArrayLike | None = None, kernel: SEKernel | None = None,
                         X: ArrayLike | None = None) -> np.ndarray:  # fmt: skip
    r"""Gradient of the maximised bound ℒ*(θ) in the kernel's log-parameters.

    At the maximum over (μ, Σ) only the explicit dependence through the prior counts
    (the envelope theorem), and differentiating -KL(q ‖ N(0, K)) at fixed
    (μ, Σ) gives

        (∂ℒ*/∂θ_j) = ½αᵀ∂_j K α - ½ tr(R ∂_j K), R = K⁻¹ - K⁻¹ΣK⁻¹ = Λ^½B⁻¹Λ^½,

    the form of EP's gradient (GPML eq 5.27) and of G&M's eq 36. It is exact only at the optimum:
    the error is of the order of ``result.gradient_norm``.

    Parameters
    ----------
    result : KLResult
        A converged fit at the kernel's parameters.
    dK : array (P, n, n), optional
        ∂K/∂θ_j, e.g. ``kernel.gradients(X)``.
    kernel : SEKernel, optional
    X : array (n, D), optional
        Instead of ``dK``: the kernel and training inputs (:meth:`SEKernel.gradient_traces`).

    Returns
    -------
    ndarray (P,)
    """
    sqrt_lam = np.sqrt(result.lam)
    A = lapack.dtrtri(result.L, lower=1)[0] * sqrt_lam[None, :]  # L⁻¹Λ½, so that R = AᵀA
    Q = np.outer(result.alpha, result.alpha) - A.T @ A
    if dK is None:
        if kernel is None or X is None:
            raise ValueError("pass dK, or kernel and X")
        return 0.5 * check_kernel(kernel).gradient_traces(X, Q)
    dK = check_covariance_derivatives(dK, result.lam.shape[0])
    # ½ tr((ααᵀ − R) ∂K/∂θ_j)
    return 0.5 * np.einsum("ij,pij->p", Q, dK)


@dataclass(frozen=True)
class KLEvidence:
    """The maximised bound at one kernel, its gradient in ``kernel.theta`` and the fit."""

    log_bound: float
    gradient: np.ndarray
    result: KLResult
    names: tuple[str, ...] = ()


def kl_log_bound(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
                 likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None,
                 lam_init: ArrayLike | None = None, nu_init: ArrayLike | None = None, tol: float = 1e-8,
                 max_iter: int = 200, n_nodes: int = 64) -> KLEvidence:  # fmt: skip
    r"""ℒ*(θ) = max_q ℒ at ``kernel`` and its gradient in ``kernel.theta``.

    Parameters
    ----------
    kernel : SEKernel
    X : ndarray (n, D)
        Training inputs.
    y, likelihood, lam_init, nu_init, tol, max_iter, n_nodes
        As in :func:`kl_gaussian` (a tight ``tol``: the gradient is exact only at the optimum).

    Returns
    -------
    KLEvidence
        ``log_bound``, ``gradient`` (one entry per ``kernel.theta_names``) and the fit.
    """
    kernel = check_kernel(kernel)
    X = check_matrix(X, "X")
    result = kl_gaussian(kernel.K(X), y, likelihood, lam_init=lam_init, nu_init=nu_init, tol=tol, max_iter=max_iter,
                         n_nodes=n_nodes, warn=False)  # fmt: skip
    gradient = kl_evidence_gradient(result, kernel=kernel, X=X)
    return KLEvidence(result.log_bound, gradient, result, tuple(kernel.theta_names))


@dataclass(frozen=True)
class KLFit:
    """Hyperparameters maximising the KL bound (:func:`maximize_kl_bound`).

    Attributes
    ----------
    kernel : SEKernel
        At the best optimum found.
    log_bound : float
        The maximised bound there.
    result : KLResult
        The KL fit at ``kernel``.
    converged : bool
        The projected gradient passed :func:`~gpc_ref.hyperparameters.maximize`'s test.
    optimization : HyperparameterFit
        Starts, iterations, evaluations, the box.
    """

    kernel: SEKernel
    log_bound: float
    result: KLResult = field(repr=False)
    converged: bool
    optimization: HyperparameterFit = field(repr=False)


#: The most natural-gradient steps an evaluation of :func:`maximize_kl_bound` warm-started from the previous one may take
WARM_START_STEPS = 50


def maximize_kl_bound(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
                      likelihood: LogisticLikelihood | ProbitLikelihood | str | None = None,
                      fixed: Sequence[str] = (), n_restarts: int = 0, rng: np.random.Generator | int | None = None,
                      max_iter: int = 200, tol: float = 1e-5, progress: bool = False) -> KLFit:  # fmt: skip
    r"""Learn the kernel by maximising the KL bound ℒ*(θ) (type-II maximum likelihood on a bound).

    The search is :func:`gpc_ref.hyperparameters.maximize` over :func:`~gpc_ref.hyperparameters.theta_box`
    with the exact gradient of :func:`kl_evidence_gradient`; each evaluation warm-starts the KL fit
    from the previous sites (cleared before every start). A fit that did not converge would give a
    wrong gradient, so it counts as a failed evaluation and the step is rejected.

    Parameters
    ----------
    kernel : SEKernel
        The start; ``kernel.theta_names`` are learnt except those in ``fixed``.
    X : ndarray (n, D)
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    likelihood : "logistic" (default), "probit", LogisticLikelihood or ProbitLikelihood
    fixed : sequence of str
        Kernel parameters held at their starting values.
    n_restarts, rng, max_iter, tol, progress
        As in :func:`~gpc_ref.hyperparameters.maximize`.

    Returns
    -------
    KLFit
    """
    kernel = check_kernel(kernel)
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", length=X.shape[0])
    likelihood = binary_likelihood(likelihood)
    warm = {"sites": (None, None)}

    def objective(theta):
        # a warm start needs a few steps (at most 9 in the KL chapter, 19 from the prior): one that needs more than
        # WARM_START_STEPS is at hyperparameters where q is hard to fit (near the box's edge), and the step is rejected
        # there instead of spending up to 200 Choleskys on it at every evaluation
        steps = 200 if warm["sites"][0] is None else WARM_START_STEPS
        evidence = kl_log_bound(kernel.with_theta(theta), X, y, likelihood=likelihood, lam_init=warm["sites"][0],
                                nu_init=warm["sites"][1], max_iter=steps)  # fmt: skip
        if not evidence.result.converged:
            raise np.linalg.LinAlgError("maximize_kl_bound: the KL fit did not converge at these hyperparameters")
        warm["sites"] = (evidence.result.lam, evidence.result.nu)
        return evidence.log_bound, evidence.gradient

    def reset():
        warm["sites"] = (None, None)

    fit = maximize(objective, kernel.theta, bounds=theta_box(kernel), free=free_mask(kernel, fixed),
                   n_restarts=n_restarts, rng=rng, max_iter=max_iter, tol=tol, reset=reset, progress=progress,
                   names=kernel.theta_names, description="maximize_kl_bound")  # fmt: skip
    best = kernel.with_theta(fit.theta)
    result = kl_gaussian(best.K(X), y, likelihood, tol=1e-8)
    return KLFit(kernel=best, log_bound=result.log_bound, result=result, converged=fit.converged, optimization=fit)


# ===================================================================== predictions
@dataclass(frozen=True)
class KLPrediction:
    """Latent predictive mean and variance at test inputs, and P(y = +1)."""

    mean: np.ndarray
    var: np.ndarray
    proba: np.ndarray


def kl_predict(result: KLResult, K_star: ArrayLike, k_star_star: ArrayLike, *,
               method: str = "erf_mixture") -> KLPrediction:  # fmt: skip
    r"""Predictions from the KL posterior (the form of GPML Algorithm 3.2 with W = Λ).

        μ_∗ = k_∗ᵀα,
        s_∗² = k_∗∗ - k_∗ᵀ(K + Λ⁻¹)⁻¹k_∗ = k_∗∗ - ‖L⁻¹Λ^½k_∗‖²,

    and P(y_∗ = +1) = ∫ p(+1 | f_∗)N(f_∗ | μ_∗, s_∗²) df_∗: exactly
    Φ(μ_∗/√(1 + s_∗²)) for the probit, by the rule ``method`` of
    :data:`~gpc_ref.likelihoods.SIGMOID_PREDICTIONS` for the logistic.

    Parameters
    ----------
    result : KLResult
    K_star : array (n, m)
        Covariances between the training and the m test inputs.
    k_star_star : array (m,)
        Prior variances at the test inputs.
    method : {"erf_mixture", "mackay", "quadrature", "exact"}
        The Gaussian–sigmoid integral for the logistic (ignored for the probit).

    Returns
    -------
    KLPrediction
    """
    check_choice(method, "method", tuple(SIGMOID_PREDICTIONS))
    K_star = np.asarray(K_star, dtype=float)
    if K_star.ndim != 2 or K_star.shape[0] != result.lam.shape[0]:
        raise ValueError(f"K_star must have shape (n, m) with n = {result.lam.shape[0]}; got {K_star.shape}")
    k_star_star = check_vector(k_star_star, "k_star_star", length=K_star.shape[1])
    mean = K_star.T @ result.alpha
    # GPML Alg. 3.2 lines 5–6 with W = Λ: v = L⁻¹ Λ½ k*, s*² = k** − vᵀv
    v = solve_lower(result.L, np.sqrt(result.lam)[:, None] * K_star)
    var = np.maximum(k_star_star - np.sum(v * v, axis=0), 0.0)
    return KLPrediction(mean, var, result.likelihood.predict(mean, var, method=method))
