r"""Jaakkola–Jordan variational bounds for GP classification (Gibbs & MacKay 2000).

Each likelihood factor P(t_n|a_n) = σ(s_n a_n) is replaced by a
Gaussian-shaped lower bound Q (variational parameter ν_n) or by
an exponential-linear upper bound R (variational parameter μ_n).
Both make the integral over the latent function Gaussian, which gives a lower
bound Z' and an upper bound Z'' on the evidence
P(𝒟|Θ), their gradients, and two Gaussian approximations
of the posterior from which predictions follow.

Notation (book symbol ← code name ← G&M symbol):

==============  ==================  ====================================================
book            code                Gibbs & MacKay (2000)
==============  ==================  ====================================================
t_n ∈ {0,1}     ``t``               t_n (class label)
s_n = 2t_n - 1  ``s``               (-1)^(t_n+1)
f_n             ``a`` / ``f``       a_n = a(x_n), the latent "logit"
K               ``K``               C_N (covariance with jitter J)
k_∗             ``k``               k_N+1 (eq 20)
k_∗∗            ``kappa``           κ (eq 21)
σ               ``expit``           g (eq 10)
ξ_n             ``nu``              ν_n, lower-bound variational parameter
λ(ξ)            ``lambda_jj(nu)``   λ(ν) (eq 11)
η_n ∈ [0,1]     ``mu``              μ_n, upper-bound variational parameter
H_2             ``binary_entropy``  ℋ_2 (eq 12)
W = 2Λ          ``W``               2Λ_N
B               ``L`` (factor)      B = I + W^½ K W^½ (GPML-style symmetric form of H_N)
d               ``d``               d_n = ½ s_n
b               ``b``               b_n = μ_n s_n
α               ``alpha``           H_N⁻¹d
m, Σ            ``mean, cov``       mean and covariance of 𝒫_Q(a_N)
θ               ``theta``           log of Θ = (θ_1, {r_l}, θ_2) (``SEKernel.theta``)
==============  ==================  ====================================================

Stable forms used here (derived in the chapter). With H = I + WK (G&M eq 19),
B = I + W^½KW^½ = LLᵀ and det H = det B:

- (K⁻¹ + W)⁻¹ = K H⁻¹ = K - K W^½ B⁻¹ W^½ K, so the
  lower-bound posterior is N(m, Σ) with
  m = Kd - K W^½B⁻¹W^½Kd and
  Σ = K - VᵀV, V = L⁻¹W^½K;
- α = H⁻¹d = d - Wm;
- H⁻¹W = W^½B⁻¹W^½ (symmetric), used in every trace.

Neither bound ever factorises K itself: the lower bound factorises the
well-conditioned B (eigenvalues ≥ 1) and the upper bound needs no
factorisation at all, so both stay finite for huge variances, tiny or huge
lengthscales and duplicated inputs.

Corrections to the printed equations (the chapter and the errata page show the
numerical checks): eq 34 needs (C_N⁻¹+2Λ_N)⁻¹, not
C_N⁻¹+2Λ_N; the first term of eq 35 has the opposite sign;
eq 18 subtracts, s_l² = κ - 2kᵀ H_N⁻¹Λ_N k;
eqs 27–28 are replaced by a_u = kᵀb, s_u² = κ;
eq 15 has both signs flipped.

References
----------
- [GM00] Gibbs & MacKay (2000), eqs 8–40 and §IV-C.
- [JJ00] Jaakkola & Jordan (2000): the quadratic lower bound on the logistic
  sigmoid and its fixed-point update ξ² = E[f²].
- [MacKay92] MacKay (1992): the probit approximation (G&M eq 23).
- [GPML] Rasmussen & Williams (2006), Alg. 3.1 and 5.1: the symmetric matrix
  B = I + W^½KW^½ and the trace form of evidence gradients.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize
from scipy.special import expit
from scipy.special import xlogy

from .errors import ConvergenceWarning
from .gaussian_integrals import sigmoid_gaussian_mackay
from .hyperparameters import HyperparameterFit
from .hyperparameters import free_mask
from .hyperparameters import maximize
from .hyperparameters import theta_box
from .kernels import SEKernel
from .laplace import laplace_mode
from .likelihoods import LogisticLikelihood
from .likelihoods import log_sigmoid
from .linalg import cho_solve
from .linalg import cholesky
from .linalg import solve_lower
from .validation import check_binary_labels
from .validation import check_choice
from .validation import check_covariance
from .validation import check_covariance_derivatives
from .validation import check_kernel
from .validation import check_matrix
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_rng
from .validation import check_train_test
from .validation import check_vector

__all__ = [
    "lambda_jj",
    "lambda_jj_derivative",
    "binary_entropy",
    "log_sigmoid_lower_bound",
    "log_sigmoid_upper_bound",
    "LowerBound",
    "UpperBound",
    "lower_bound",
    "upper_bound",
    "update_nu",
    "LowerBoundFit",
    "UpperBoundFit",
    "optimize_lower_bound",
    "optimize_lower_bound_core",
    "optimize_upper_bound",
    "predict_lower",
    "predict_upper",
    "predict_proba_bound",
]

# Below this |ν| the closed forms of λ and λ' lose digits to cancellation; their
# Taylor series (exact to double precision there) are used instead.
_SERIES_THRESHOLD = 1e-2

# The loosest tolerance optimize_upper_bound gives laplace_mode's tests on the changes of W and Ψ
# between Newton steps (laplace_mode's own default); convergence is then judged by the gradient.
_NEWTON_STEP_TOL = 1e-9


# --------------------------------------------------------------------------- pointwise bounds
def lambda_jj(nu: ArrayLike) -> np.ndarray:
    r"""λ(ν) = (σ(ν) − ½)/(2ν) = tanh(ν/2)/(4ν) (G&M eq 11), with its limit 1/8 at ν = 0.

    λ is even in ν, positive, decreasing in abs(ν), and bounded by 1/8, so the
    lower bound's Gaussian factor never has a negative precision. Near ν = 0 the
    Taylor series 1/8 - ν²/96 + ν⁴/960 - 17ν⁶/161280 is used.

    Parameters
    ----------
    nu : array_like
        Variational parameters ν, any real values.

    Returns
    -------
    ndarray
        λ(ν), elementwise (the shape of ``nu``).
    """
    nu = np.abs(np.asarray(nu, dtype=float))
    small = nu < _SERIES_THRESHOLD
    safe = np.where(small, 1.0, nu)
    # G&M (2000) eq 11, written as tanh(ν/2)/(4ν) since σ(ν) − ½ = tanh(ν/2)/2
    closed = np.tanh(safe / 2.0) / (4.0 * safe)
    nu2 = np.where(small, nu, 0.0) ** 2
    series = 1.0 / 8.0 - nu2 / 96.0 + nu2**2 / 960.0 - 17.0 * nu2**3 / 161280.0
    return np.where(small, series, closed)


def lambda_jj_derivative(nu: ArrayLike) -> np.ndarray:
    r"""dλ/dν = (ν sech²(ν/2)/2 − tanh(ν/2)) / (4ν²), odd in ν, 0 at ν = 0.

    Near 0 the series -ν/48 + ν³/240 - 17ν⁵/26880 is used.

    Parameters
    ----------
    nu
        As in :func:`lambda_jj`.

    Returns
    -------
    ndarray
        dλ/dν, elementwise.
    """
    nu = np.asarray(nu, dtype=float)
    x = np.abs(nu)
    small = x < _SERIES_THRESHOLD
    safe = np.where(small, 1.0, x)
    half = safe / 2.0
    # sech²(y) = 1 − tanh²(y) underflows gracefully to 0 for large y
    sech2 = 1.0 - np.tanh(half) ** 2
    # (ν sech²/2 − tanh)/(4ν²), written so that ν² never overflows
    closed = sech2 / (8.0 * safe) - np.tanh(half) / (4.0 * safe) / safe
    x = np.where(small, x, 0.0)
    series = -x / 48.0 + x**3 / 240.0 - 17.0 * x**5 / 26880.0
    return np.sign(nu) * np.where(small, series, closed)


def binary_entropy(mu: ArrayLike) -> np.ndarray:
    r"""H₂(μ) = −μ log μ − (1−μ) log(1−μ) in nats (G&M eq 12), with H₂(0) = H₂(1) = 0.

    Parameters
    ----------
    mu : array_like
        Values in [0, 1] (anything else raises ``ValueError``).

    Returns
    -------
    ndarray
        H₂(μ), elementwise.
    """
    mu = np.asarray(mu, dtype=float)
    if np.any((mu < 0) | (mu > 1)) or not np.all(np.isfinite(mu)):
        raise ValueError("mu must lie in the interval [0, 1]")
    # G&M (2000) eq 12; xlogy(0, 0) = 0 gives the limits at the ends
    return -xlogy(mu, mu) - xlogy(1.0 - mu, 1.0 - mu)


def _binary_entropy_from_logit(u):
    """H₂(σ(u)) computed from the logit u, stable for |u| in the hundreds."""
    mu = expit(u)
    return -(mu * log_sigmoid(u) + (1.0 - mu) * log_sigmoid(-u))


def _signs(t, name="t"):
    """Labels in {0,1} (or {−1,+1}) of any shape → signs s = 2t − 1 ∈ {−1, +1}, same shape."""
    t = np.asarray(t)
    return check_binary_labels(t.ravel(), name, coding="pm1").reshape(t.shape)


def log_sigmoid_lower_bound(t: ArrayLike, a: ArrayLike, nu: ArrayLike) -> np.ndarray:
    r"""log Q(t|a, ν): the Jaakkola–Jordan lower bound on log P(t|a) (G&M eqs 8, 13).

        log Q(t|a,ν) = log σ(ν) + (s a - ν)/2 - λ(ν)(a² - ν²),
        s = 2t - 1,

    exact (touching) at a = ±ν. For class 0 the bound on
    σ(−a) is the same expression with a replaced by −a (eq 13); λ is even so
    only the linear term changes sign.

    Parameters
    ----------
    t : array_like
        Labels in {0, 1} (or {−1, +1}).
    a : array_like
        Latent values.
    nu : array_like
        Variational parameters ν; ``t``, ``a`` and ``nu`` broadcast.

    Returns
    -------
    ndarray
        log Q(t|a, ν), with the broadcast shape.
    """
    s = _signs(t)
    a, nu = np.asarray(a, dtype=float), np.asarray(nu, dtype=float)
    # log σ(ν) − ν/2 = −log(e^{ν/2} + e^{−ν/2}), even in ν and stable for large |ν|
    log_g_minus_half = -np.logaddexp(nu / 2.0, -nu / 2.0)
    # G&M (2000) eq 8 (class 1) and eq 13 (class 0: a → −a)
    return log_g_minus_half + s * a / 2.0 - lambda_jj(nu) * (a * a - nu * nu)


def log_sigmoid_upper_bound(t: ArrayLike, a: ArrayLike, mu: ArrayLike) -> np.ndarray:
    r"""log R(t|a, μ) = μ s a − H₂(μ): the upper bound on log P(t|a) (G&M eqs 9, 12, 13).

    It is the tangent of the concave function log σ(sa) at the point
    where σ(-sa) = μ, i.e. sa = log((1-μ)/μ).

    Parameters
    ----------
    t, a
        As in :func:`log_sigmoid_lower_bound`.
    mu : array_like
        Variational parameters μ in [0, 1]; broadcast with ``t`` and ``a``.

    Returns
    -------
    ndarray
        log R(t|a, μ).
    """
    s = _signs(t)
    a, mu = np.asarray(a, dtype=float), np.asarray(mu, dtype=float)
    # G&M (2000) eq 9 (class 1) and eq 13 (class 0: a → −a)
    return mu * s * a - binary_entropy(mu)


# --------------------------------------------------------------------------- Z' and Z''
@dataclass(frozen=True)
class LowerBound:
    """log Z' (G&M eq 34, corrected) with the Gaussian 𝒫_Q it normalises and its gradients.

    Attributes
    ----------
    log_Z : float
        log Z', a lower bound on log P(D|Θ).
    nu : ndarray (n,)
        The variational parameters it was evaluated at.
    mean, var : ndarray (n,)
        Mean m and marginal variances diag Σ of 𝒫_Q(a_N) = N(m, Σ), Σ = (K⁻¹ + 2Λ)⁻¹.
    alpha : ndarray (n,)
        H⁻¹d = d − W m (the vector of G&M eqs 17 and 36).
    w_sqrt : ndarray (n,)
        W^{1/2} = (2λ(ν))^{1/2}.
    L : ndarray (n, n)
        Cholesky factor of B = I + W^{1/2} K W^{1/2}.
    grad_nu : ndarray (n,) or None
        ∂ log Z'/∂ν (G&M eq 35, sign of its first term corrected).
    grad_theta : ndarray (P,) or None
        ∂ log Z'/∂θ_j for the log-hyperparameters whose ∂K/∂θ_j were given (G&M eq 36).
    """

    log_Z: float
    nu: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    alpha: np.ndarray
    w_sqrt: np.ndarray
    L: np.ndarray
    grad_nu: np.ndarray | None
    grad_theta: np.ndarray | None


def _problem(K, t, name_params, params):
    """K, the signs s = 2t − 1 and the variational parameters, checked against each other."""
    K = check_covariance(K, "K")
    s = check_binary_labels(t, "t", coding="pm1", length=K.shape[0])
    return K, s, check_vector(params, name_params, length=K.shape[0])


def lower_bound(
    K: ArrayLike, t: ArrayLike, nu: ArrayLike, *, dK: ArrayLike | None = None, compute_gradients: bool = True
) -> LowerBound:
    r"""log Z' and its gradients (G&M eqs 33–36, eq 34 corrected), without inverting K.

    With λ(ν) = tanh(ν/2)/(4ν), Λ = diag(λ(ν_n)) and d = (2t − 1)/2 (half the labels in ±1), the bound is

        log Z' = ∑_n(log σ(ν_n) - ν_n/2 + λ(ν_n)ν_n²) + ½ dᵀ (K⁻¹ + 2Λ)⁻¹d - ½ log det(I + 2ΛK)

    (G&M print ½ dᵀ(K⁻¹ + 2Λ) d; the Gaussian integral gives the inverse). The posterior P_Q has mean
    m = K(I + WK)⁻¹ d and covariance Σ = (K⁻¹ + W)⁻¹, W = 2Λ. With B = I + W½KW½, α = d − W m, K̇_j = ∂K/∂θ_j:

        (∂log Z'/∂ν_k) = λ'(ν_k)(ν_k² - m_k² - Σ_kk),
        (∂log Z'/∂θ_j) = ½αᵀK̇_j α - ½ tr(W^½B⁻¹W^½K̇_j)

    (G&M eq 35 collected, the sign of its first term corrected; eq 36 with H⁻¹W = W½B⁻¹W½).

    Parameters
    ----------
    K : array_like (n, n)
        Prior covariance C_N of the latent values (jitter included).
    t : array_like (n,)
        Labels in {0, 1} (G&M) or {−1, +1}.
    nu : array_like (n,)
        Variational parameters ν (any real values; the bound is even in each ν_n).
    dK : array_like (P, n, n), optional
        ∂K/∂θ_j, e.g. ``kernel.gradients(X)``; gives ``grad_theta``.
    compute_gradients : bool
        If False, skip the O(n³) gradient work (``grad_nu``, ``grad_theta`` are None).

    Returns
    -------
    LowerBound
    """
    K, s, nu = _problem(K, t, "nu", nu)
    dK = None if dK is None else check_covariance_derivatives(dK, K.shape[0])
    n = K.shape[0]
    lam = lambda_jj(nu)
    # G&M (2000) below eq 15: d_n = ½(−1)^{t_n+1}
    d = 0.5 * s
    w_sqrt = np.sqrt(2.0 * lam)
    # G&M eq 19 in symmetric form: H = I + 2ΛK has det H = det B, B = I + W½ K W½ (GPML Alg. 3.1)
    B = np.eye(n) + w_sqrt[:, None] * K * w_sqrt[None, :]
    L = cholesky(B, name="B = I + W½KW½").L
    Kd = K @ d
    c = solve_lower(L, w_sqrt * Kd)
    # posterior mean m = (K⁻¹ + 2Λ)⁻¹ d = K H⁻¹ d = Kd − K W½ B⁻¹ W½ K d
    mean = Kd - K @ (w_sqrt * cho_solve(L, w_sqrt * Kd))
    V = solve_lower(L, w_sqrt[:, None] * K)
    # Σ = (K⁻¹ + 2Λ)⁻¹ = K − Vᵀ V; only its diagonal is needed here
    var = np.diag(K) - np.sum(V * V, axis=0)
    # G&M (2000) eq 34 (corrected): Σ_n (log g(ν_n) − ν_n/2 + λ_n ν_n²) + ½ dᵀ(K⁻¹+2Λ)⁻¹d − ½ log det H
    constant = np.sum(-np.logaddexp(nu / 2.0, -nu / 2.0) + lam * nu * nu)
    quadratic = 0.5 * (d @ Kd - c @ c)
    log_det_H = 2.0 * np.sum(np.log(np.diag(L)))
    log_Z = float(constant + quadratic - 0.5 * log_det_H)
    # α = H⁻¹ d = d − W m
    alpha = d - w_sqrt**2 * mean
    grad_nu = grad_theta = None
    if compute_gradients:
        # G&M (2000) eq 35 (corrected sign of its first term), collected: λ'(ν)(ν² − m² − Σ_kk)
        grad_nu = lambda_jj_derivative(nu) * (nu * nu - mean * mean - var)
        if dK is not None:
            # H⁻¹ W = W½ B⁻¹ W½ (symmetric), the matrix of the trace terms
            R = w_sqrt[:, None] * cho_solve(L, np.diag(w_sqrt))
            # G&M (2000) eq 36: ½ (H⁻¹d)ᵀ K̇ (H⁻¹d) − ½ tr(H⁻¹ 2Λ K̇)
            grad_theta = np.array([0.5 * alpha @ dKj @ alpha - 0.5 * np.sum(R * dKj) for dKj in dK])
    return LowerBound(log_Z, nu.copy(), mean, var, alpha, w_sqrt, L, grad_nu, grad_theta)


@dataclass(frozen=True)
class UpperBound:
    """log Z'' (G&M eq 38) with its gradients (eqs 39, 40).

    Attributes
    ----------
    log_Z, grad_mu, grad_theta : float, ndarray (n,) or None, ndarray (P,) or None
        log Z'', an upper bound on log P(D|Θ); ∂ log Z''/∂μ (eq 39; ±inf where μ is exactly 0 or 1);
        ∂ log Z''/∂θ_j (eq 40).
    mu, b : ndarray (n,)
        The variational parameters μ ∈ [0, 1] it was evaluated at, and b_n = μ_n s_n;
        𝒫_R(a_N) = N(K b, K).
    """

    log_Z: float
    mu: np.ndarray
    b: np.ndarray
    grad_mu: np.ndarray | None
    grad_theta: np.ndarray | None


def upper_bound(
    K: ArrayLike, t: ArrayLike, mu: ArrayLike, *, dK: ArrayLike | None = None, compute_gradients: bool = True
) -> UpperBound:
    r"""log Z'' = −Σ H₂(μ_n) + ½ bᵀKb and its gradients (G&M eqs 37–40). No factorisation.

        (∂log Z''/∂μ_k) = log(μ_k/(1-μ_k)) + s_k (Kb)_k,
        (∂log Z''/∂θ_j) = ½bᵀK̇_j b.

    Parameters
    ----------
    K, t, dK, compute_gradients
        As in :func:`lower_bound` (``grad_theta`` is eq 40).
    mu : array_like (n,)
        Variational parameters μ in [0, 1].

    Returns
    -------
    UpperBound
    """
    K, s, mu = _problem(K, t, "mu", mu)
    if np.any((mu < 0) | (mu > 1)):
        raise ValueError("mu must lie in the interval [0, 1]")
    dK = None if dK is None else check_covariance_derivatives(dK, K.shape[0])
    # G&M (2000) below eq 25: b_n = μ_n (−1)^{t_n+1}
    b = mu * s
    Kb = K @ b
    # G&M (2000) eq 38
    log_Z = float(-np.sum(binary_entropy(mu)) + 0.5 * b @ Kb)
    grad_mu = grad_theta = None
    if compute_gradients:
        with np.errstate(divide="ignore"):
            # G&M (2000) eq 39: −H₂'(μ) = log(μ/(1−μ)), plus s_k (K b)_k
            grad_mu = np.log(mu) - np.log1p(-mu) + s * Kb
        if dK is not None:
            # G&M (2000) eq 40
            grad_theta = np.array([0.5 * b @ dKj @ b for dKj in dK])
    return UpperBound(log_Z, mu.copy(), b, grad_mu, grad_theta)


def update_nu(K: ArrayLike, t: ArrayLike, nu: ArrayLike) -> tuple[np.ndarray, LowerBound]:
    r"""One Jaakkola–Jordan fixed-point (EM) update: ν_n² ← m_n² + Σ_nn.

    m and Σ are the mean and covariance of the posterior P_Q of the latent values at the
    current ν. Setting G&M eq 35 (corrected) to zero gives exactly this update;
    it is the M-step of EM with the latent values as hidden variables, so
    log Z' never decreases [JJ00].

    Parameters
    ----------
    K, t
        As in :func:`lower_bound`.
    nu : array_like (n,)
        The current ν.

    Returns
    -------
    nu : ndarray (n,)
        The new (non-negative) ν.
    bound : LowerBound
        The bound at the old ν (without gradients).
    """
    current = lower_bound(K, t, nu, compute_gradients=False)
    # JJ00: ξ² = E_q[f²] = m² + Σ_nn
    return np.sqrt(current.mean**2 + current.var), current


# --------------------------------------------------------------------------- optimisation
@dataclass(frozen=True)
class LowerBoundFit:
    """Result of maximising Z' over ν and Θ (G&M §IV-C).

    Attributes
    ----------
    kernel : SEKernel
        The kernel at the maximum.
    bound : LowerBound
        log Z' and the Gaussian 𝒫_Q there.
    objective : float
        log Z' plus the log-prior of θ (just log Z' without a prior).
    n_evaluations : int
        Evaluations of log Z' (each one Cholesky of an n×n matrix), fixed-point steps included.
    n_iterations : int
        L-BFGS-B iterations of the best start.
    converged : bool
        The projected gradient passed :func:`gpc_ref.hyperparameters.maximize`'s test (and, for the
        fixed-point variant, every inner fixed point converged).
    nu_update : str
        ``"gradient"`` or ``"fixed_point"``.
    optimization : HyperparameterFit or None
        The search over θ (and ν); None when θ was fixed and ν found by fixed point alone.
    """

    kernel: SEKernel
    bound: LowerBound
    objective: float
    n_evaluations: int
    n_iterations: int
    converged: bool
    nu_update: str
    optimization: HyperparameterFit | None = None


@dataclass(frozen=True)
class UpperBoundFit:
    """Result of minimising Z'' over μ with Θ fixed (G&M §IV-C)."""

    bound: UpperBound
    n_evaluations: int
    n_iterations: int
    converged: bool


def _fixed_point_nu(K, t, nu, tol, max_iter):
    """Iterate :func:`update_nu` until max |Δν| ≤ tol·(1 + max ν); return (nu, count, converged)."""
    for count in range(1, max_iter + 1):
        new, _ = update_nu(K, t, nu)
        change = np.max(np.abs(new - np.abs(nu)))
        nu = new
        if change <= tol * (1.0 + np.max(nu)):
            return nu, count, True
    return nu, max_iter, False


def optimize_lower_bound_core(kernel: SEKernel, X: np.ndarray, t: np.ndarray, *, nu_update: str = "gradient",
                              tol: float = 1e-6, max_iter: int = 1000) -> LowerBoundFit:  # fmt: skip
    """Algorithm 7.1 (vgc-alg-lower), step for step: maximise log Z' by L-BFGS, either route of the box.

    The plain core of :func:`optimize_lower_bound`, which checks the arguments, searches in the package's
    hyperparameter box with restarts and an optional prior, polishes ν at the end, and warns when a parameter
    ends on the edge of the box or an inner fixed point fails; this function runs scipy's L-BFGS once from
    ``kernel`` and does none of that. Both evaluate the box with :func:`lower_bound` and
    :func:`update_nu`, and on a well-posed problem they reach the same maximum (``tests/package/test_variational_bounds.py``).

    Parameters
    ----------
    kernel : SEKernel
        The starting kernel θ₀ (every parameter in ``kernel.theta`` is learnt).
    X : ndarray (n, D)
        Training inputs.
    t : ndarray (n,)
        Labels in {0, 1}.
    nu_update : {"gradient", "fixed_point"}
        The box's joint-gradient route (G&M) or its fixed-point route (Jaakkola & Jordan).
    tol, max_iter
        L-BFGS's gradient tolerance and iteration limit; ``tol`` is also the fixed point's.

    Returns
    -------
    LowerBoundFit
        With ``optimization=None`` (no package search) and ``converged`` the L-BFGS flag.
    """
    n, counter = len(t), {"evaluations": 0}
    nu = {"current": np.sqrt(kernel.diag(X))}  # the default start ν_n = √K_nn

    def bound_at(theta, nu_value):  # steps 1–4 of an evaluation: K, ∂K, B = LLᵀ, m, diag Σ, log Z', gradients
        current = kernel.with_theta(theta)
        counter["evaluations"] += 1
        return lower_bound(current.K(X), t, nu_value, dK=current.gradients(X))

    if nu_update == "gradient":  # joint gradient (G&M): L-BFGS over (ν, θ)

        def negative(z):
            bound = bound_at(z[n:], z[:n])
            return -bound.log_Z, -np.concatenate([bound.grad_nu, bound.grad_theta])

        z0 = np.concatenate([nu["current"], kernel.theta])
        result = optimize.minimize(
            negative, z0, jac=True, method="L-BFGS-B", options={"gtol": tol, "maxiter": max_iter}
        )
        theta, nu["current"] = result.x[n:], np.abs(result.x[:n])
    else:  # fixed point (Jaakkola & Jordan): L-BFGS over θ alone

        def negative(theta):
            K = kernel.with_theta(theta).K(X)
            nu["current"] = _fixed_point_nu(K, t, nu["current"], tol, max_iter)[0]  # step 1, warm-started
            bound = bound_at(theta, nu["current"])  # step 2: the envelope theorem (G&M eq 36)
            return -bound.log_Z, -bound.grad_theta

        result = optimize.minimize(negative, kernel.theta, jac=True, method="L-BFGS-B",
                                   options={"gtol": tol, "maxiter": max_iter})  # fmt: skip
        theta = result.x
    fitted = kernel.with_theta(theta)
    final = lower_bound(fitted.K(X), t, nu["current"], dK=fitted.gradients(X))
    return LowerBoundFit(fitted, final, float(final.log_Z), counter["evaluations"], int(result.nit),
                         bool(result.success), nu_update)  # fmt: skip


def optimize_lower_bound(
    kernel: SEKernel,
    X: ArrayLike,
    t: ArrayLike,
    *,
    nu0: ArrayLike | None = None,
    optimize_theta: bool = True,
    nu_update: str = "gradient",
    log_prior: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None,
    fixed: Sequence[str] = (),
    n_restarts: int = 0,
    rng: np.random.Generator | int | None = None,
    restart_sd: float = 1.0,
    max_iter: int = 2000,
    tol: float = 1e-5,
    fixed_point_tol: float = 1e-9,
    fixed_point_max_iter: int = 1000,
    progress: bool = False,
) -> LowerBoundFit:
    r"""Maximise log Z' over the variational parameters ν and the log-hyperparameters θ (G&M §IV-C).

    ``nu_update="gradient"`` (G&M): L-BFGS-B over (ν, θ) with eqs 35 (corrected) and 36, then fixed-point steps at
    the final θ polish ν (log Z' is flat in ν where λ'(ν) is small). ``"fixed_point"`` [JJ00]: at each θ the EM
    update ν² = m² + Σ_nn is iterated to convergence (warm-started) and L-BFGS-B runs over θ alone with eq 36 (the
    envelope theorem). The search is :func:`gpc_ref.hyperparameters.maximize` (θ in the shared box, ν unbounded).

    Parameters
    ----------
    kernel : SEKernel
        Starting hyperparameters; those in ``kernel.theta`` are learnt.
    X, t : array
        Training inputs (n, D) and labels (n,) in {0, 1} (or {−1, +1}).
    nu0, nu_update : array (n,) or None, {"gradient", "fixed_point"}
        Starting ν (default √(diag K), the prior root-mean-square of each latent value), and the route above.
    optimize_theta, fixed : bool, sequence of str
        If False only ν is optimised (Θ fixed); the kernel parameter names held at their starting values.
    log_prior : callable, optional
        ``log_prior(theta) -> (value, gradient)``, a prior on the log-hyperparameters added to log Z'.
    n_restarts, rng, restart_sd : int, numpy.random.Generator or int (optional), float
        Extra random starts θ₀ + ``restart_sd``·N(0, I) of θ, with ν reset to √(diag K(θ)); they need ``rng``.
    max_iter, tol, fixed_point_tol, fixed_point_max_iter : int, float, float, int
        L-BFGS-B iterations per start and relative gradient tolerance; likewise for the inner fixed point of ν.
    progress : bool
        Show a progress bar over the starts.

    Returns
    -------
    LowerBoundFit
        A :class:`~gpc_ref.validation.ConvergenceWarning` (iterations, gradient norm) if the search stops unconverged.
    """
    kernel = check_kernel(kernel)
    X = check_matrix(X, "X")
    check_choice(nu_update, "nu_update", ("gradient", "fixed_point"))
    n = X.shape[0]
    t = check_binary_labels(t, "t", coding="01", length=n)
    theta0 = kernel.theta
    P = theta0.shape[0]
    free_theta = free_mask(kernel, fixed) & bool(optimize_theta)
    # the learnt log-parameters live in the shared box; the others (fixed, or all of them without
    # optimize_theta) get no bounds, so that maximize never moves them onto the box
    theta_bounds = theta_box(kernel)
    nu_start = np.sqrt(kernel.diag(X)) if nu0 is None else np.abs(check_vector(nu0, "nu0", length=n))
    counter = {"evaluations": 0, "inner_failures": 0}
    search_options = dict(max_iter=max_iter, tol=tol, progress=progress)

    def prior_terms(theta):
        if log_prior is None:
            return 0.0, np.zeros(P)
        value, grad = log_prior(theta)
        return float(value), np.asarray(grad, dtype=float)

    random_thetas = []
    if n_restarts and optimize_theta:
        generator = check_rng(rng)
        random_thetas = [
            theta0 + restart_sd * free_theta * generator.standard_normal(P)
            for _ in range(check_positive_int(n_restarts, "n_restarts", minimum=0))
        ]

    if nu_update == "gradient":

        def objective(z):
            nu_z, theta = z[:n], z[n:]
            current = kernel.with_theta(theta)
            counter["evaluations"] += 1
            bound = lower_bound(current.K(X), t, nu_z, dK=current.gradients(X) if optimize_theta else None)
            prior_value, prior_grad = prior_terms(theta) if optimize_theta else (0.0, np.zeros(P))
            grad_theta = bound.grad_theta + prior_grad if optimize_theta else np.zeros(P)
            return bound.log_Z + prior_value, np.concatenate([bound.grad_nu, grad_theta])

        z0 = np.concatenate([nu_start, theta0])
        extra = [np.concatenate([np.sqrt(kernel.with_theta(th).diag(X)), th]) for th in random_thetas]
        bounds = np.vstack([np.tile([-np.inf, np.inf], (n, 1)), theta_bounds])
        free = np.concatenate([np.ones(n, dtype=bool), free_theta])
        search = maximize(
            objective,
            z0,
            bounds=bounds,
            free=free,
            extra_starts=extra or None,
            names=[f"nu[{i}]" for i in range(n)] + list(kernel.theta_names),
            description="optimize_lower_bound",
            **search_options,
        )
        theta = search.theta[n:]
        # log Z' is flat in ν where λ'(ν) is small, so L-BFGS leaves ν loosely converged; a few
        # fixed-point steps at the final θ (which never decrease Z') make ν² = E[f²] hold tightly
        nu_final, count, _ = _fixed_point_nu(
            kernel.with_theta(theta).K(X), t, np.abs(search.theta[:n]), fixed_point_tol, fixed_point_max_iter
        )
        counter["evaluations"] += count
    else:
        state = {"nu": nu_start}

        def inner(theta):
            K = kernel.with_theta(theta).K(X)
            nu_star, count, ok = _fixed_point_nu(K, t, state["nu"], fixed_point_tol, fixed_point_max_iter)
            counter["evaluations"] += count
            counter["inner_failures"] += int(not ok)
            state["nu"] = nu_star
            return K, nu_star

        def objective(theta):
            K, nu_star = inner(theta)
            counter["evaluations"] += 1
            bound = lower_bound(K, t, nu_star, dK=kernel.with_theta(theta).gradients(X))
            prior_value, prior_grad = prior_terms(theta)
            # envelope theorem: at ν*(θ), d log Z'/dθ = ∂ log Z'/∂θ (G&M eq 36)
            return bound.log_Z + prior_value, bound.grad_theta + prior_grad

        def reset():
            state["nu"] = nu_start

        search = None
        theta = theta0
        if optimize_theta:
            search = maximize(
                objective,
                theta0,
                bounds=theta_bounds,
                free=free_theta,
                extra_starts=random_thetas or None,
                reset=reset,
                names=kernel.theta_names,
                description="optimize_lower_bound (fixed point)",
                **search_options,
            )
            theta = search.theta
        _, nu_final = inner(theta)
        if counter["inner_failures"]:
            warnings.warn(
                f"the fixed-point update of ν did not converge in {fixed_point_max_iter} iterations "
                f"at {counter['inner_failures']} of the hyperparameter values tried",
                ConvergenceWarning,
                stacklevel=2,
            )
    fitted = kernel.with_theta(theta)
    final = lower_bound(fitted.K(X), t, nu_final, dK=fitted.gradients(X))
    objective_value = final.log_Z + (prior_terms(theta)[0] if optimize_theta else 0.0)
    converged = (search is None or search.converged) and counter["inner_failures"] == 0
    return LowerBoundFit(
        fitted,
        final,
        float(objective_value),
        counter["evaluations"],
        0 if search is None else search.n_iter,
        bool(converged),
        nu_update,
        search,
    )


def optimize_upper_bound(
    K: ArrayLike,
    t: ArrayLike,
    *,
    mu0: ArrayLike | None = None,
    method: str = "newton",
    max_iter: int | None = None,
    tol: float = 1e-12,
) -> UpperBoundFit:
    r"""Minimise log Z'' over μ with Θ (hence K) fixed (G&M §IV-C): Algorithm 7.2 (vgc-alg-upper).

    log Z'' is convex in μ with a unique interior minimum, where μ_k = σ(−s_k (K b)_k). Two solvers:

    - ``method="gradient"``: L-BFGS on the logits u = log(μ/(1−μ)) with the gradient of eq 39, G&M's route; slow
      when K has large eigenvalues. Convergence also requires stationarity, not just the optimiser's own flag.
    - ``method="newton"`` (default): the convex dual min_μ log Z''(μ) = max_f[∑_n log σ(s_n f_n) - ½fᵀK⁻¹f] with
      μ_n = σ(-s_n f̂_n) (derived in the book's chapter), whose maximiser f̂ is the Laplace mode
      (:func:`gpc_ref.laplace.laplace_mode`); eq 38 is then evaluated at μ.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    t : array (n,)
        Labels in {0, 1} (or {−1, +1}).
    mu0 : array (n,), optional
        Starting μ of the gradient method, strictly inside (0, 1) (Newton starts from f = 0).
    method : {"newton", "gradient"}
    max_iter : int, optional
        Newton steps (default 100) or L-BFGS iterations (default 5000).
    tol : float
        Tolerance of the solver: L-BFGS's ``ftol`` (gradient); for Newton, converged means
        max_n|∂Ψ/∂f_n| ≤ √tol (times max(1, max|∇log p|)).

    Returns
    -------
    UpperBoundFit
        ``n_evaluations``: objective evaluations (gradient) or Newton iterations (newton).
    """
    mu0 = np.full(len(np.atleast_1d(t)), 0.5) if mu0 is None else mu0
    K, s, mu0 = _problem(K, t, "mu0", mu0)
    if np.any((mu0 <= 0) | (mu0 >= 1)):
        raise ValueError("mu0 must lie strictly inside (0, 1)")
    check_choice(method, "method", ("newton", "gradient"))
    tol = float(check_positive(tol, "tol"))
    if method == "newton":
        max_iter = 100 if max_iter is None else check_positive_int(max_iter, "max_iter")
        # the dual is the Laplace mode of the logistic likelihood (Newton starts from f = 0)
        # laplace_mode also stops on the changes of W and Ψ between steps, which rounding keeps near
        # 1e-12 (relative) and above it when K has large eigenvalues: at this function's default tol it
        # would never stop. It therefore runs at no less than its own default tolerance, and convergence
        # is judged here by stationarity of the dual, max|∇Ψ| ≤ √tol·max(1, max|∇log p|) (1e-6 at the
        # default tol), as the gradient route judges by stationarity.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported below, in this function's words
            mode = laplace_mode(
                K, s, likelihood=LogisticLikelihood(), tol=max(tol, _NEWTON_STEP_TOL), max_iter=max_iter
            )
        # the dual's optimum: μ_n = σ(−s_n f_n)
        mu = expit(-s * mode.f)
        n_iterations = n_evaluations = mode.n_iter
        converged = bool(mode.gradient_norm <= np.sqrt(tol) * max(1.0, float(np.max(np.abs(mode.grad_log_lik)))))
    else:
        max_iter = 5000 if max_iter is None else check_positive_int(max_iter, "max_iter")
        counter = {"evaluations": 0}

        def objective(u):
            counter["evaluations"] += 1
            mu = expit(u)
            b = mu * s
            Kb = K @ b
            # G&M (2000) eq 38, with H₂ evaluated from the logit u = log(μ/(1−μ)) (log space)
            value = -np.sum(_binary_entropy_from_logit(u)) + 0.5 * b @ Kb
            # G&M (2000) eq 39 (log(μ/(1−μ)) = u), times dμ/du = μ(1−μ)
            return value, (u + s * Kb) * mu * (1.0 - mu)

        # the logits keep μ strictly inside (0, 1) without a box
        result = optimize.minimize(
            objective,
            np.log(mu0) - np.log1p(-mu0),
            jac=True,
            method="L-BFGS-B",
            options=dict(maxiter=max_iter, ftol=tol, gtol=1e-10, maxcor=30),
        )
        mu, n_iterations = expit(result.x), int(result.nit)
        # L-BFGS's own stopping rule can fire early on an ill-conditioned K: check stationarity,
        # μ_k = σ(−s_k (K b)_k), on the logit scale
        residual = np.max(np.abs(result.x + s * (K @ (mu * s))))
        converged = bool(result.success) and residual <= 1e-4
        n_evaluations = counter["evaluations"]
    if not converged:
        warnings.warn(
            f"minimising Z'' ({method}) did not converge after {n_iterations} iterations",
            ConvergenceWarning,
            stacklevel=2,
        )
    final = upper_bound(K, t, mu)
    return UpperBoundFit(final, n_evaluations, n_iterations, converged)


# --------------------------------------------------------------------------- predictions
def predict_lower(
    bound: LowerBound, kernel: SEKernel, X: ArrayLike, X_test: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and variance of 𝒫_Q(a_∗) (G&M eqs 17–21, eq 18 corrected).

        a_l = k_∗ᵀ H⁻¹d = k_∗ᵀα,
        s_l² = κ - 2k_∗ᵀ H⁻¹Λk_∗
        = κ - ‖ L⁻¹ W^½k_∗‖².

    G&M print +2kᵀ H⁻¹Λk; conditioning on data can
    only shrink the prior variance κ, so the sign must be minus.

    Parameters
    ----------
    bound : LowerBound
        The lower bound at the training data (e.g. ``optimize_lower_bound(...).bound``).
    kernel : SEKernel
        The kernel the bound was computed with.
    X : array (n, D)
        The training inputs.
    X_test : array (m, D)
        Test inputs.

    Returns
    -------
    mean, var : ndarrays (m,)
        Latent predictive mean a_l and variance s_l² (clipped at 0 against rounding).
    """
    X, X_test = check_train_test(X, X_test, bound.alpha.shape[0])
    k = kernel.K(X, X_test)
    kappa = kernel.diag(X_test)
    # G&M (2000) eq 17: a_l = kᵀ H⁻¹ d
    mean = k.T @ bound.alpha
    v = solve_lower(bound.L, bound.w_sqrt[:, None] * k)
    # G&M (2000) eq 18 (corrected sign): s_l² = κ − 2 kᵀ H⁻¹ Λ k
    var = np.maximum(kappa - np.sum(v * v, axis=0), 0.0)
    return mean, var


def predict_upper(
    bound: UpperBound, kernel: SEKernel, X: ArrayLike, X_test: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and variance of 𝒫_R(a_∗) (G&M eqs 26–28, corrected).

    𝒫_R(a_{N+1}) ∝ exp(−½ aᵀ C_{N+1}⁻¹ a + b̃ᵀa) with b̃ = (b, 0) is N(C_{N+1} b̃, C_{N+1}),
    whose last marginal is

        a_u = k_∗ᵀb, s_u² = κ.

    The printed eqs 27–28 (s_u² = (κ - kᵀC_N⁻¹k)⁻¹,
    a_u = -s_u²kᵀ C_N⁻¹b) are not this marginal (they
    even have the wrong units); the upper-bound posterior keeps the prior variance.

    Parameters
    ----------
    bound : UpperBound
        The upper bound at the training data (e.g. ``optimize_upper_bound(...).bound``).
    kernel, X, X_test
        As in :func:`predict_lower`.

    Returns
    -------
    mean, var : ndarrays (m,)
        a_u and s_u² = κ.
    """
    X, X_test = check_train_test(X, X_test, bound.b.shape[0])
    k = kernel.K(X, X_test)
    # corrected G&M eq 27: a_u = kᵀ b
    mean = k.T @ bound.b
    # corrected G&M eq 28: s_u² = κ
    var = kernel.diag(X_test)
    return mean, var


def predict_proba_bound(mean: ArrayLike, var: ArrayLike) -> np.ndarray:
    """P(t = 1 | x, D) ≈ g(τ(s) a) with τ(s) = 1/√(1 + πs²/8) (G&M eqs 22, 23, 29; [MacKay92]).

    Parameters
    ----------
    mean, var : array_like (m,)
        Latent predictive means a and variances s² (from :func:`predict_lower` or :func:`predict_upper`).

    Returns
    -------
    ndarray (m,)
        P(t = 1).
    """
    # G&M (2000) eqs 22/29 with the approximation of eq 23
    return sigmoid_gaussian_mackay(mean, var)
