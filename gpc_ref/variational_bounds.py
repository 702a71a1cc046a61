r"""Jaakkola–Jordan variational bounds for GP classification (Gibbs & MacKay 2000).

Each likelihood factor :math:`P(t_n|a_n) = \sigma(s_n a_n)` is replaced by a
Gaussian-shaped lower bound :math:`Q` (variational parameter :math:`\nu_n`) or by
an exponential-linear upper bound :math:`R` (variational parameter :math:`\mu_n`).
Both make the integral over the latent function Gaussian, which gives a lower
bound :math:`Z'` and an upper bound :math:`Z''` on the evidence
:math:`P(\mathcal D|\Theta)`, their gradients, and two Gaussian approximations
of the posterior from which predictions follow.

Notation (book symbol ← code name ← G&M symbol):

=========================  ==================  ==========================================================
book                       code                Gibbs & MacKay (2000)
=========================  ==================  ==========================================================
:math:`t_n \in \{0,1\}`    ``t``               :math:`t_n` (class label)
:math:`s_n = 2t_n - 1`     ``s``               :math:`(-1)^{t_n+1}`
:math:`f_n`                ``a`` / ``f``       :math:`a_n = a(\mathbf x_n)`, the latent "logit"
:math:`K`                  ``K``               :math:`\mathbf C_N` (covariance with jitter :math:`J`)
:math:`\mathbf k_*`        ``k``               :math:`\mathbf k_{N+1}` (eq 20)
:math:`k_{**}`             ``kappa``           :math:`\kappa` (eq 21)
:math:`\sigma`             ``expit``           :math:`g` (eq 10)
:math:`\xi_n`              ``nu``              :math:`\nu_n`, lower-bound variational parameter
:math:`\lambda(\xi)`       ``lambda_jj(nu)``   :math:`\lambda(\nu)` (eq 11)
:math:`\eta_n \in [0,1]`   ``mu``              :math:`\mu_n`, upper-bound variational parameter
:math:`H_2`                ``binary_entropy``  :math:`\mathcal H_2` (eq 12)
:math:`W = 2\Lambda`       ``W``               :math:`2\Lambda_N`
:math:`B`                  ``L`` (factor)      :math:`B = I + W^{1/2} K W^{1/2}` (GPML-style symmetric form of :math:`\mathbf H_N`)
:math:`\mathbf d`          ``d``               :math:`d_n = \tfrac12 s_n`
:math:`\mathbf b`          ``b``               :math:`b_n = \mu_n s_n`
:math:`\boldsymbol\alpha`  ``alpha``           :math:`\mathbf H_N^{-1}\mathbf d`
:math:`\mathbf m, \Sigma`  ``mean, cov``       mean and covariance of :math:`\mathcal P_Q(\mathbf a_N)`
:math:`\theta`             ``theta``           log of :math:`\Theta = (\theta_1, \{r_l\}, \theta_2)` (``SEKernel.theta``)
=========================  ==================  ==========================================================

Stable forms used here (derived in the chapter). With :math:`H = I + WK` (G&M eq 19),
:math:`B = I + W^{1/2}KW^{1/2} = LL^T` and :math:`\det H = \det B`:

- :math:`(K^{-1} + W)^{-1} = K H^{-1} = K - K W^{1/2} B^{-1} W^{1/2} K`, so the
  lower-bound posterior is :math:`N(\mathbf m, \Sigma)` with
  :math:`\mathbf m = K\mathbf d - K W^{1/2}B^{-1}W^{1/2}K\mathbf d` and
  :math:`\Sigma = K - V^TV`, :math:`V = L^{-1}W^{1/2}K`;
- :math:`\boldsymbol\alpha = H^{-1}\mathbf d = \mathbf d - W\mathbf m`;
- :math:`H^{-1}W = W^{1/2}B^{-1}W^{1/2}` (symmetric), used in every trace.

Neither bound ever factorises :math:`K` itself: the lower bound factorises the
well-conditioned :math:`B` (eigenvalues ≥ 1) and the upper bound needs no
factorisation at all, so both stay finite for huge variances, tiny or huge
lengthscales and duplicated inputs.

Corrections to the printed equations (the chapter and the errata page show the
numerical checks): eq 34 needs :math:`(C_N^{-1}+2\Lambda_N)^{-1}`, not
:math:`C_N^{-1}+2\Lambda_N`; the first term of eq 35 has the opposite sign;
eq 18 subtracts, :math:`s_l^2 = \kappa - 2\mathbf k^T H_N^{-1}\Lambda_N \mathbf k`;
eqs 27–28 are replaced by :math:`a_u = \mathbf k^T\mathbf b`, :math:`s_u^2 = \kappa`;
eq 15 has both signs flipped.

References
----------
- [GM00] Gibbs & MacKay (2000), eqs 8–40 and §IV-C.
- [JJ00] Jaakkola & Jordan (2000): the quadratic lower bound on the logistic
  sigmoid and its fixed-point update :math:`\xi^2 = E[f^2]`.
- [MacKay92] MacKay (1992): the probit approximation (G&M eq 23).
- [GPML] Rasmussen & Williams (2006), Alg. 3.1 and 5.1: the symmetric matrix
  :math:`B = I + W^{1/2}KW^{1/2}` and the trace form of evidence gradients.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import expit, xlogy

from .kernels import SEKernel
from .likelihoods import log_sigmoid, sigmoid_gaussian_mackay
from .linalg import cholesky, cho_solve, solve_lower
from .validation import check_binary_labels, check_matrix, check_rng, check_vector

__all__ = [
    "ConvergenceWarning",
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
    "optimize_lower_bound_restarts",
    "optimize_upper_bound",
    "predict_lower",
    "predict_upper",
    "predict_proba_bound",
    "random_restart_thetas",
]

# Below this |ν| the closed forms of λ and λ' lose digits to cancellation; their
# Taylor series (exact to double precision there) are used instead.
_SERIES_THRESHOLD = 1e-2


class ConvergenceWarning(UserWarning):
    """An optimiser or fixed-point iteration stopped before converging."""


# --------------------------------------------------------------------------- pointwise bounds
def lambda_jj(nu):
    r"""λ(ν) = (σ(ν) − ½)/(2ν) = tanh(ν/2)/(4ν) (G&M eq 11), with its limit 1/8 at ν = 0.

    λ is even in ν, positive, decreasing in |ν|, and bounded by 1/8, so the
    lower bound's Gaussian factor never has a negative precision. Near ν = 0 the
    Taylor series :math:`1/8 - \nu^2/96 + \nu^4/960 - 17\nu^6/161280` is used.
    """
    nu = np.abs(np.asarray(nu, dtype=float))
    small = nu < _SERIES_THRESHOLD
    safe = np.where(small, 1.0, nu)
    # G&M (2000) eq 11, written as tanh(ν/2)/(4ν) since σ(ν) − ½ = tanh(ν/2)/2
    closed = np.tanh(safe / 2.0) / (4.0 * safe)
    nu2 = np.where(small, nu, 0.0) ** 2
    series = 1.0 / 8.0 - nu2 / 96.0 + nu2**2 / 960.0 - 17.0 * nu2**3 / 161280.0
    return np.where(small, series, closed)


def lambda_jj_derivative(nu):
    r"""dλ/dν = (ν sech²(ν/2)/2 − tanh(ν/2)) / (4ν²), odd in ν, 0 at ν = 0.

    Near 0 the series :math:`-\nu/48 + \nu^3/240 - 17\nu^5/26880` is used.
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


def binary_entropy(mu):
    r"""H₂(μ) = −μ log μ − (1−μ) log(1−μ) in nats (G&M eq 12), with H₂(0) = H₂(1) = 0."""
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


def log_sigmoid_lower_bound(t, a, nu):
    r"""log Q(t|a, ν): the Jaakkola–Jordan lower bound on log P(t|a) (G&M eqs 8, 13).

    .. math:: \log Q(t|a,\nu) = \log\sigma(\nu) + (s a - \nu)/2 - \lambda(\nu)(a^2 - \nu^2),
              \quad s = 2t - 1,

    exact (touching) at :math:`a = \pm\nu`. For class 0 the bound on
    σ(−a) is the same expression with a replaced by −a (eq 13); λ is even so
    only the linear term changes sign. ``t`` in {0, 1} (or {−1, +1}); arrays
    broadcast.
    """
    s = _signs(t)
    a, nu = np.asarray(a, dtype=float), np.asarray(nu, dtype=float)
    # log σ(ν) − ν/2 = −log(e^{ν/2} + e^{−ν/2}), even in ν and stable for large |ν|
    log_g_minus_half = -np.logaddexp(nu / 2.0, -nu / 2.0)
    # G&M (2000) eq 8 (class 1) and eq 13 (class 0: a → −a)
    return log_g_minus_half + s * a / 2.0 - lambda_jj(nu) * (a * a - nu * nu)


def log_sigmoid_upper_bound(t, a, mu):
    r"""log R(t|a, μ) = μ s a − H₂(μ): the upper bound on log P(t|a) (G&M eqs 9, 12, 13).

    It is the tangent of the concave function :math:`\log\sigma(sa)` at the point
    where :math:`\sigma(-sa) = \mu`, i.e. :math:`sa = \log((1-\mu)/\mu)`.
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


def _check_problem(K, t, name_params, params):
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square covariance matrix; got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("K contains NaN or infinite values")
    n = K.shape[0]
    s = check_binary_labels(np.asarray(t), "t", coding="pm1")
    if s.shape[0] != n:
        raise ValueError(f"t must have one label per row of K ({n}); got {s.shape[0]}")
    params = check_vector(params, name_params, length=n)
    return K, s, params


def _check_dK(dK, n):
    if dK is None:
        return None
    dK = np.asarray(dK, dtype=float)
    if dK.ndim == 2:
        dK = dK[None]
    if dK.ndim != 3 or dK.shape[1:] != (n, n):
        raise ValueError(f"dK must have shape (P, {n}, {n}) (one ∂K/∂θ_j per hyperparameter); got {dK.shape}")
    return dK


def lower_bound(K, t, nu, dK=None, compute_gradients=True):
    r"""log Z' and its gradients (G&M eqs 33–36, eq 34 corrected), without inverting K.

    .. math::
        \log Z' = \sum_n\bigl(\log\sigma(\nu_n) - \nu_n/2 + \lambda(\nu_n)\nu_n^2\bigr)
                  + \tfrac12 \mathbf d^T (K^{-1} + 2\Lambda)^{-1}\mathbf d
                  - \tfrac12\log\det(I + 2\Lambda K)

    (G&M print :math:`\tfrac12\mathbf d^T(K^{-1}+2\Lambda)\mathbf d`; the Gaussian
    integral gives the inverse.) Gradients:

    .. math::
        \frac{\partial\log Z'}{\partial\nu_k} = \lambda'(\nu_k)\bigl(\nu_k^2 - m_k^2 - \Sigma_{kk}\bigr),
        \qquad
        \frac{\partial\log Z'}{\partial\theta_j} = \tfrac12\boldsymbol\alpha^T\dot K_j\boldsymbol\alpha
            - \tfrac12\operatorname{tr}(W^{1/2}B^{-1}W^{1/2}\dot K_j).

    The first is G&M eq 35 collected into one term, with the sign of its first
    term corrected; the second is eq 36 with :math:`H^{-1}W = W^{1/2}B^{-1}W^{1/2}`.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance :math:`C_N` of the latent values (jitter included).
    t : array (n,)
        Labels in {0, 1} (G&M) or {−1, +1}.
    nu : array (n,)
        Variational parameters ν (any real values; the bound is even in each ν_n).
    dK : ndarray (P, n, n), optional
        ∂K/∂θ_j, e.g. ``kernel.gradients(X)``; gives ``grad_theta``.
    compute_gradients : bool
        If False, skip the O(n³) gradient work (``grad_nu``, ``grad_theta`` are None).

    Returns
    -------
    LowerBound
    """
    K, s, nu = _check_problem(K, t, "nu", nu)
    dK = _check_dK(dK, K.shape[0])
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
    log_Z : float
        log Z'', an upper bound on log P(D|Θ).
    mu : ndarray (n,)
        Variational parameters μ ∈ [0, 1].
    b : ndarray (n,)
        b_n = μ_n s_n; 𝒫_R(a_N) = N(K b, K).
    grad_mu : ndarray (n,) or None
        ∂ log Z''/∂μ (eq 39); ±inf where μ is exactly 0 or 1.
    grad_theta : ndarray (P,) or None
        ∂ log Z''/∂θ_j (eq 40).
    """

    log_Z: float
    mu: np.ndarray
    b: np.ndarray
    grad_mu: np.ndarray | None
    grad_theta: np.ndarray | None


def upper_bound(K, t, mu, dK=None, compute_gradients=True):
    r"""log Z'' = −Σ H₂(μ_n) + ½ bᵀKb and its gradients (G&M eqs 37–40). No factorisation.

    .. math::
        \frac{\partial\log Z''}{\partial\mu_k} = \log\frac{\mu_k}{1-\mu_k} + s_k (K\mathbf b)_k,
        \qquad
        \frac{\partial\log Z''}{\partial\theta_j} = \tfrac12\mathbf b^T\dot K_j\mathbf b.

    Parameters are as in :func:`lower_bound`, with ``mu`` in [0, 1].
    """
    K, s, mu = _check_problem(K, t, "mu", mu)
    if np.any((mu < 0) | (mu > 1)):
        raise ValueError("mu must lie in the interval [0, 1]")
    dK = _check_dK(dK, K.shape[0])
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


def update_nu(K, t, nu):
    r"""One Jaakkola–Jordan fixed-point (EM) update: :math:`\nu_n^2 \leftarrow m_n^2 + \Sigma_{nn}`.

    :math:`m, \Sigma` are the moments of :math:`\mathcal P_Q(\mathbf a_N)` at the
    current ν. Setting G&M eq 35 (corrected) to zero gives exactly this update;
    it is the M-step of EM with the latent values as hidden variables, so
    log Z' never decreases [JJ00]. Returns the new (non-negative) ν and the
    :class:`LowerBound` at the old ν.
    """
    current = lower_bound(K, t, nu, compute_gradients=False)
    # JJ00: ξ² = E_q[f²] = m² + Σ_nn
    return np.sqrt(current.mean**2 + current.var), current


# --------------------------------------------------------------------------- optimisation
def random_restart_thetas(kernel, rng, n_restarts, scale=1.0):
    """``n_restarts`` starting θ drawn as kernel.theta + scale·N(0, I) (for multiple restarts)."""
    rng = check_rng(rng)
    theta0 = kernel.theta
    return theta0 + scale * rng.standard_normal((int(n_restarts), theta0.shape[0]))


@dataclass(frozen=True)
class LowerBoundFit:
    """Result of maximising Z' over ν and Θ (G&M §IV-C).

    ``objective`` is log Z' plus the log-prior of θ (just log Z' without a prior).
    ``n_evaluations`` counts evaluations of log Z' (each one Cholesky of an
    n×n matrix); ``n_iterations`` counts optimiser iterations (outer iterations
    for the fixed-point variant).
    """

    kernel: SEKernel
    bound: LowerBound
    objective: float
    n_evaluations: int
    n_iterations: int
    converged: bool
    nu_update: str


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


def optimize_lower_bound(X, t, kernel, nu0=None, optimize_theta=True, nu_update="gradient",
                         log_prior=None, theta_bounds=(-15.0, 15.0), max_iter=2000, tol=1e-8,
                         fixed_point_tol=1e-9, fixed_point_max_iter=1000):
    r"""Maximise log Z' over the variational parameters ν and the log-hyperparameters θ (G&M §IV-C).

    Two ways to handle ν:

    - ``nu_update="gradient"`` (G&M): one L-BFGS run over the joint vector (ν, θ)
      with the gradients of eqs 35 (corrected) and 36. The paper used conjugate
      gradients; L-BFGS is the same kind of first-order method and needs fewer
      evaluations. ν is then polished by fixed-point steps at the final θ.
    - ``nu_update="fixed_point"`` [JJ00]: ν is eliminated; for each θ the EM update
      ν² = m² + Σ_nn is iterated to convergence (warm-started from the last θ),
      and L-BFGS runs over θ alone. At the inner optimum ∂ log Z'/∂ν = 0, so the
      gradient in θ is eq 36 alone (the envelope theorem).

    Parameters
    ----------
    X : array (n, D)
        Training inputs.
    t : array (n,)
        Labels in {0, 1} (or {−1, +1}).
    kernel : SEKernel
        Starting hyperparameters; those in ``kernel.theta`` are learnt.
    nu0 : array (n,), optional
        Starting ν (default: √(diag K), the prior root-mean-square of each a_n).
    optimize_theta : bool
        If False only ν is optimised (Θ fixed).
    log_prior : callable, optional
        ``log_prior(theta) -> (value, gradient)``, a prior on the log-hyperparameters
        added to log Z' (G&M used gamma priors on the lengthscales for the toy).
    theta_bounds : (float, float)
        Box for every log-hyperparameter, keeping the optimiser's trial steps finite.
    max_iter, tol : optimiser limits (L-BFGS iterations; relative tolerance on the objective).

    Returns
    -------
    LowerBoundFit
        A :class:`ConvergenceWarning` naming the iteration count is issued if the
        optimiser stops before converging.
    """
    X = check_matrix(X, "X")
    if not isinstance(kernel, SEKernel):
        raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
    if nu_update not in ("gradient", "fixed_point"):
        raise ValueError(f"nu_update must be 'gradient' or 'fixed_point'; got {nu_update!r}")
    t = np.asarray(t)
    n = X.shape[0]
    check_binary_labels(t, "t")
    if t.shape[0] != n:
        raise ValueError(f"t must have one label per row of X ({n}); got {t.shape[0]}")
    theta0 = kernel.theta
    P = theta0.shape[0]
    nu = np.sqrt(kernel.diag(X)) if nu0 is None else np.abs(check_vector(nu0, "nu0", length=n))
    counter = {"evaluations": 0}

    def prior_terms(theta):
        if log_prior is None:
            return 0.0, np.zeros(P)
        value, grad = log_prior(theta)
        return float(value), np.asarray(grad, dtype=float)

    if nu_update == "gradient":
        def objective(z):
            nu_z = z[:n]
            theta = z[n:] if optimize_theta else theta0
            current = kernel.with_theta(theta)
            K = current.K(X)
            counter["evaluations"] += 1
            bound = lower_bound(K, t, nu_z, dK=current.gradients(X) if optimize_theta else None)
            value, grad = bound.log_Z, bound.grad_nu
            if optimize_theta:
                prior_value, prior_grad = prior_terms(theta)
                value += prior_value
                grad = np.concatenate([grad, bound.grad_theta + prior_grad])
            return -value, -grad

        z0 = np.concatenate([nu, theta0]) if optimize_theta else nu
        bounds = [(None, None)] * n + [theta_bounds] * (P if optimize_theta else 0)
        result = optimize.minimize(objective, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                                   options=dict(maxiter=max_iter, ftol=tol, gtol=1e-6, maxcor=20))
        theta = result.x[n:] if optimize_theta else theta0
        converged, n_iterations = bool(result.success), int(result.nit)
        # log Z' is flat in ν where λ'(ν) is small, so L-BFGS leaves ν loosely converged; a few
        # fixed-point steps at the final θ (which never decrease Z') make ν² = E[f²] hold tightly
        nu_final, count, _ = _fixed_point_nu(kernel.with_theta(theta).K(X), t, np.abs(result.x[:n]),
                                             fixed_point_tol, fixed_point_max_iter)
        counter["evaluations"] += count
    else:
        state = {"nu": nu}

        def inner(theta):
            K = kernel.with_theta(theta).K(X)
            nu_star, count, ok = _fixed_point_nu(K, t, state["nu"], fixed_point_tol, fixed_point_max_iter)
            counter["evaluations"] += count
            if not ok:
                warnings.warn(f"the fixed-point update of ν did not converge in {count} iterations",
                              ConvergenceWarning, stacklevel=3)
            state["nu"] = nu_star
            return K, nu_star

        def objective(theta):
            K, nu_star = inner(theta)
            current = kernel.with_theta(theta)
            counter["evaluations"] += 1
            bound = lower_bound(K, t, nu_star, dK=current.gradients(X))
            prior_value, prior_grad = prior_terms(theta)
            # envelope theorem: at ν*(θ), d log Z'/dθ = ∂ log Z'/∂θ (G&M eq 36)
            return -(bound.log_Z + prior_value), -(bound.grad_theta + prior_grad)

        if optimize_theta:
            result = optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B",
                                       bounds=[theta_bounds] * P,
                                       options=dict(maxiter=max_iter, ftol=tol, gtol=1e-6))
            theta, converged, n_iterations = result.x, bool(result.success), int(result.nit)
        else:
            theta, converged, n_iterations = theta0, True, 0
        _, nu_final = inner(theta)
    if not converged:
        warnings.warn(f"maximising Z' did not converge after {n_iterations} iterations "
                      f"({result.message})", ConvergenceWarning, stacklevel=2)
    fitted = kernel.with_theta(theta)
    final = lower_bound(fitted.K(X), t, nu_final, dK=fitted.gradients(X))
    objective_value = final.log_Z + (prior_terms(theta)[0] if optimize_theta else 0.0)
    return LowerBoundFit(fitted, final, float(objective_value), counter["evaluations"], n_iterations, converged,
                         nu_update)


def optimize_lower_bound_restarts(X, t, kernel, rng, n_restarts=0, restart_sd=1.0, progress=False, **options):
    """:func:`optimize_lower_bound` from ``kernel.theta`` and from ``n_restarts`` random starts.

    The starts are θ₀ + ``restart_sd``·N(0, I) (G&M ran 20 starts for the toy to
    guard against multiple optima); ``options`` go to :func:`optimize_lower_bound`;
    ``progress=True`` shows a tqdm bar over the starts. Returns ``(best, fits)``:
    the fit with the largest objective (log Z' + log-prior) and the list of all
    fits, in order.
    """
    rng = check_rng(rng)
    if int(n_restarts) != n_restarts or n_restarts < 0:
        raise ValueError(f"n_restarts must be a non-negative integer; got {n_restarts!r}")
    starts = [kernel.theta] + list(random_restart_thetas(kernel, rng, int(n_restarts), restart_sd))
    if progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="restarts of Z' maximisation")
    fits = [optimize_lower_bound(X, t, kernel.with_theta(theta), **options) for theta in starts]
    best = max(fits, key=lambda fit: fit.objective)
    return best, fits


def _logistic_mode(K, s, tol, max_iter):
    r"""Newton's method for :math:`\hat{\mathbf f} = \arg\max_f \Psi(f)`,
    :math:`\Psi = \sum_n\log\sigma(s_nf_n) - \tfrac12 f^TK^{-1}f` (GPML Alg. 3.1 with step halving).

    Starts from f = 0. Returns (f, n_iterations, converged). Only B = I + W½KW½
    is factorised.
    """
    n = K.shape[0]
    # a = K⁻¹ f is tracked (f = K a) so that Ψ never needs a solve with K
    f, a = np.zeros(n), np.zeros(n)

    def psi(a, f):
        return np.sum(log_sigmoid(s * f)) - 0.5 * a @ f

    current = psi(a, f)
    for iteration in range(1, max_iter + 1):
        pi_s = expit(s * f)
        # ∇ log p(t|f) = s σ(−s f); W = −∇∇ log p = σ(sf)σ(−sf)
        grad = s * (1.0 - pi_s)
        w_sqrt = np.sqrt(pi_s * (1.0 - pi_s))
        L = cholesky(np.eye(n) + w_sqrt[:, None] * K * w_sqrt[None, :], name="B = I + W½KW½").L
        # GPML Alg. 3.1 lines 6-9: b = W f + ∇ log p; a = b − W½ B⁻¹ W½ K b
        b = w_sqrt**2 * f + grad
        a_new = b - w_sqrt * cho_solve(L, w_sqrt * (K @ b))
        step, direction = 1.0, a_new - a
        while True:
            a_try = a + step * direction
            f_try = K @ a_try
            value = psi(a_try, f_try)
            if value >= current - 1e-12 * abs(current) or step < 1e-10:
                break
            step /= 2.0
        improvement = value - current
        a, f, current = a_try, f_try, value
        if abs(improvement) <= tol * (1.0 + abs(current)) and np.max(np.abs(grad - a)) <= 1e-6:
            return f, iteration, True
    return f, max_iter, False


def optimize_upper_bound(K, t, mu0=None, method="newton", max_iter=None, tol=1e-12):
    r"""Minimise log Z'' over μ with Θ (hence K) fixed (G&M §IV-C).

    log Z'' is convex in μ (Hessian diag(1/(μ(1−μ))) + diag(s) K diag(s)) and its
    gradient (eq 39) tends to ∓∞ at μ → 0, 1, so the minimum is unique and
    interior; there μ_k = σ(−s_k (K b)_k). Two solvers:

    - ``method="gradient"``: L-BFGS on the logits u = log(μ/(1−μ)) with the gradient
      of eq 39 (times dμ/du), the route G&M describe (they used conjugate
      gradients). Slow when K has large eigenvalues (the condition number of the
      problem grows with them); convergence is judged by the stationarity
      condition, not by the optimiser's own flag.
    - ``method="newton"`` (default): the convex dual. Since
      :math:`\log\sigma(z) = \min_\mu[\mu z - H_2(\mu)]`,

      .. math:: \min_{\boldsymbol\mu}\log Z''(\boldsymbol\mu)
                = \max_{\mathbf f}\Bigl[\sum_n\log\sigma(s_nf_n) - \tfrac12\mathbf f^TK^{-1}\mathbf f\Bigr],
                \qquad \mu_n = \sigma(-s_n\hat f_n),

      the maximum being the mode of the exact posterior (the Laplace mode). It is
      found by Newton's method in the stable form of GPML Alg. 3.1 (a handful of
      iterations, each one Cholesky of B = I + W½KW½), then eq 38 is evaluated at μ.

    Returns
    -------
    UpperBoundFit
        ``n_evaluations``: objective evaluations (gradient) or Newton iterations (newton).
    """
    mu0 = np.full(len(np.atleast_1d(t)), 0.5) if mu0 is None else mu0
    K, s, mu0 = _check_problem(K, t, "mu0", mu0)
    if np.any((mu0 <= 0) | (mu0 >= 1)):
        raise ValueError("mu0 must lie strictly inside (0, 1)")
    if method not in ("newton", "gradient"):
        raise ValueError(f"method must be 'newton' or 'gradient'; got {method!r}")
    if method == "newton":
        max_iter = 100 if max_iter is None else int(max_iter)
        # Newton starts from f = 0 (mu0 is used by the gradient method only)
        f, n_iterations, converged = _logistic_mode(K, s, tol, max_iter)
        # the dual's optimum: μ_n = σ(−s_n f_n)
        mu = expit(-s * f)
        n_evaluations = n_iterations
    else:
        max_iter = 5000 if max_iter is None else int(max_iter)
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
        result = optimize.minimize(objective, np.log(mu0) - np.log1p(-mu0), jac=True, method="L-BFGS-B",
                                   options=dict(maxiter=max_iter, ftol=tol, gtol=1e-10, maxcor=30))
        mu, n_iterations = expit(result.x), int(result.nit)
        # L-BFGS's own stopping rule can fire early on an ill-conditioned K: check stationarity,
        # μ_k = σ(−s_k (K b)_k), on the logit scale
        residual = np.max(np.abs(result.x + s * (K @ (mu * s))))
        converged = bool(result.success) and residual <= 1e-4
        n_evaluations = counter["evaluations"]
    if not converged:
        warnings.warn(f"minimising Z'' ({method}) did not converge after {n_iterations} iterations",
                      ConvergenceWarning, stacklevel=2)
    final = upper_bound(K, t, mu)
    return UpperBoundFit(final, n_evaluations, n_iterations, converged)


# --------------------------------------------------------------------------- predictions
def _check_prediction_inputs(train_vector, X, X_test):
    X = check_matrix(X, "X")
    if X.shape[0] != train_vector.shape[0]:
        raise ValueError(f"X must hold the {train_vector.shape[0]} training inputs of the bound; got {X.shape[0]}")
    return X, check_matrix(X_test, "X_test", n_features=X.shape[1])


def predict_lower(bound, kernel, X, X_test):
    r"""Mean and variance of :math:`\mathcal P_Q(a_*)` (G&M eqs 17–21, eq 18 corrected).

    .. math:: a_l = \mathbf k_*^T H^{-1}\mathbf d = \mathbf k_*^T\boldsymbol\alpha, \qquad
              s_l^2 = \kappa - 2\mathbf k_*^T H^{-1}\Lambda\mathbf k_*
                    = \kappa - \lVert L^{-1} W^{1/2}\mathbf k_*\rVert^2.

    G&M print :math:`+2\mathbf k^T H^{-1}\Lambda\mathbf k`; conditioning on data can
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
    X, X_test = _check_prediction_inputs(bound.alpha, X, X_test)
    k = kernel.K(X, X_test)
    kappa = kernel.diag(X_test)
    # G&M (2000) eq 17: a_l = kᵀ H⁻¹ d
    mean = k.T @ bound.alpha
    v = solve_lower(bound.L, bound.w_sqrt[:, None] * k)
    # G&M (2000) eq 18 (corrected sign): s_l² = κ − 2 kᵀ H⁻¹ Λ k
    var = np.maximum(kappa - np.sum(v * v, axis=0), 0.0)
    return mean, var


def predict_upper(bound, kernel, X, X_test):
    r"""Mean and variance of :math:`\mathcal P_R(a_*)` (G&M eqs 26–28, corrected).

    𝒫_R(a_{N+1}) ∝ exp(−½ aᵀ C_{N+1}⁻¹ a + b̃ᵀa) with b̃ = (b, 0) is N(C_{N+1} b̃, C_{N+1}),
    whose last marginal is

    .. math:: a_u = \mathbf k_*^T\mathbf b, \qquad s_u^2 = \kappa.

    The printed eqs 27–28 (:math:`s_u^2 = (\kappa - \mathbf k^TC_N^{-1}\mathbf k)^{-1}`,
    :math:`a_u = -s_u^2\mathbf k^T C_N^{-1}\mathbf b`) are not this marginal (they
    even have the wrong units); the upper-bound posterior keeps the prior variance.
    Arguments as in :func:`predict_lower`, with an :class:`UpperBound`.
    """
    X, X_test = _check_prediction_inputs(bound.b, X, X_test)
    k = kernel.K(X, X_test)
    # corrected G&M eq 27: a_u = kᵀ b
    mean = k.T @ bound.b
    # corrected G&M eq 28: s_u² = κ
    var = kernel.diag(X_test)
    return mean, var


def predict_proba_bound(mean, var):
    """P(t = 1 | x, D) ≈ g(τ(s) a) with τ(s) = 1/√(1 + πs²/8) (G&M eqs 22, 23, 29; [MacKay92])."""
    # G&M (2000) eqs 22/29 with the approximation of eq 23
    return sigmoid_gaussian_mackay(mean, var)


