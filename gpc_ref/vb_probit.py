r"""Variational Bayes for binary and multinomial probit GP classification (Girolami & Rogers 2006).

Albert & Chib's augmentation gives every point an auxiliary vector
z_i = f_i + ε_i, ε_i ~ N(0, I),
with the class the index of its largest entry (G&R eq 3.1). With the factorised
posterior Q(z)Q(f) both factors are available in closed
form: Q(f) is C independent GP regressions with unit noise on the targets
z̃^c, and Q(z) is a product of cone-truncated Gaussians.

Notation: the book's (n training points indexed by i, C classes indexed by c, the point as a
subscript and the class as a superscript, f_i^c; among the latent quantities only the
auxiliaries carry a tilde, for their mean under Q). Book symbol ← code name, and G&R's symbol:

================================  ====================  ========================
book                              code                  G&R (2006)
================================  ====================  ========================
points, classes n, C              ``n``, ``n_classes``  N, K
class of point i, c_i ∈ {0..C-1}  ``t``                 t_n ∈ {1..K} (minus one)
binary label y_i ∈ {-1, +1}       ``t``                 t_n ∈ {-1, +1} (§4.4.1)
prior covariance K_c of class c   ``K[c]``              C_(φ_k)
GP values F (n × C), f_i^c        (not stored)          M, m_nk
posterior means μ_i^c             ``M`` (n, C)          M̃, m̃_nk
their column μ^c (class c)        ``M[:, c]``           m̃_k
their row μ_i (point i)           ``M[i]``              m̃_n
auxiliaries z_i^c, all of them z  (not stored)          y_nk, Y
their posterior means z̃_i^c       ``Y`` (n, C)          Ỹ, ỹ_nk
mean shift p_i^c, P (n × C)       ``P`` (n, C)          P, p_nk (§4.4)
normaliser 𝒵_i of Q(z_i)          ``exp(log_Z)``        𝒵_n
dual weights α_c                  ``alpha`` (n, C)      (I + C_k)⁻¹ỹ_k
posterior covariance Σ_c          (not formed)          Σ_k = C_k(I + C_k)⁻¹
lower bound ℒ                     ``lower_bound``       Appendix C
kernel precisions φ_d             ``phi``               φ_d = 1/(2ℓ_d²)
their exponential rates ψ_d       ``psi``               ψ_d
Gamma hyperprior (shape, rate)    ``prior_shape``,      σ, τ
                                  ``prior_rate``
================================  ====================  ========================

with α_c = (I + K_c)⁻¹z̃^c, Σ_c = K_c(I + K_c)⁻¹
and p_i^c = z̃_i^c - μ_i^c. Keeping α_c instead of
μ^c means only I + K_c is ever factorised (its eigenvalues are at least one),
never K_c itself: μ^c = K_c α_c,
(μ^c)ᵀ K_c⁻¹μ^c = α_cᵀ K_c α_c,
and the predictive mean at a new point x_∗ is α_cᵀk_∗c (§4.5).

The lower bound of Appendix C simplifies (the book derives it) to

    ℒ = ∑_(i=1)^n log 𝒵_i - ½ ∑_c (μ^c)ᵀ K_c⁻¹μ^c - ½ ∑_c log|I + K_c|,

because tr Σ_c + tr(K_c⁻¹Σ_c) = n and
det Σ_c / det K_c = 1/det(I + K_c). The printed final
expression carries an extra -(n(C-1)/2) log 2π (G&R's N(K-1); see the errata page).

References
----------
- [GR06] Girolami & Rogers (2006), eqs 3.1, 4.1–4.9, §4.5, Appendices A–C.
- [AC93] Albert & Chib (1993): the auxiliary-variable representation of the probit.
- [GPML] Rasmussen & Williams (2006), §2.2 (GP regression with unit noise, used by Q(f)).
- [VR08] Varadhan & Roland (2008): SQUAREM, the optional acceleration of the fixed-point iterations.

Learning the kernel (G&R's importance sampling, and maximisation of the bound) is in
:mod:`gpc_ref.vb_probit_learning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr
from scipy.special import logsumexp
from scipy.special import ndtr

from .acceleration import fixed_point_iteration
from .acceleration import fixed_point_test
from .acceleration import squarem
from .errors import ConvergenceWarning
from .likelihoods import MultinomialProbitLikelihood
from .likelihoods import normal_pdf_over_cdf
from .linalg import CholeskyFactor
from .linalg import cholesky
from .linalg import solve_lower
from .validation import check_binary_labels
from .validation import check_class_codes
from .validation import check_covariance_stack
from .validation import check_matrix
from .validation import check_rng
from .validation import check_test_covariances

__all__ = [
    "factor_plus_identity",
    "latent_from_alpha",
    "solve_each",
    "truncated_normal_mean",
    "cone_truncated_mean",
    "cone_mean_shift_monte_carlo",
    "VBResult",
    "vb_probit_binary",
    "vb_probit_multiclass",
    "vb_probit_binary_core",
    "vb_probit_multiclass_core",
    "vb_binary_update",
    "vb_multiclass_update",
    "vb_lower_bound",
    "vb_predict_latent",
    "vb_predict_proba",
]


def _kernel_matrices(K, n_classes=None):
    """A list of per-class (n, n) covariances from one shared matrix or a (C, n, n) stack."""
    return list(check_covariance_stack(K, "K", n_classes=n_classes))


# --------------------------------------------------------------------------- Q(z): truncated Gaussians
def truncated_normal_mean(m: ArrayLike, t: ArrayLike) -> np.ndarray:
    r"""Mean of z ~ N(μ, 1) truncated to y z > 0 (G&R §4.4.1, footnote 6).

        z̃ = μ + y (ϕ(μ)/Φ(y μ))

    for labels y ∈ {-1, +1}. The ratio is evaluated in log space
    (:func:`~gpc_ref.likelihoods.normal_pdf_over_cdf`), so it stays finite when
    y μ → -∞ (where it grows like -y μ).

    Parameters
    ----------
    m : array_like (n,)
        Means μ_i of the untruncated Gaussians (G&R's m̃_n).
    t : array_like (n,)
        Labels y_i in {−1, +1} (or {0, 1}).

    Returns
    -------
    ndarray (n,)
        The truncated means z̃_i.
    """
    m = np.asarray(m, dtype=float)
    t = check_binary_labels(t, "t")
    # G&R (2006) footnote 6: z̃ = μ + y φ(μ)/Φ(y μ), y = ``t``   (φ is even, so φ(μ) = φ(y μ))
    return m + t * normal_pdf_over_cdf(t * m)


def cone_truncated_mean(
    t: ArrayLike, M: ArrayLike, *, likelihood: MultinomialProbitLikelihood | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Means z̃_i^c and log 𝒵_i of N(μ_i, I) truncated to the cone of class c_i (G&R eqs 4.3, 4.4).

    A thin wrapper of :meth:`~gpc_ref.likelihoods.MultinomialProbitLikelihood.cone_mean_shift`
    (Gauss–Hermite quadrature over u).

    Parameters
    ----------
    t : array_like (n,)
        Classes c_i, codes 0..C−1.
    M : array_like (n, C)
        Means μ_i of the untruncated Gaussians, one row per point (G&R's m̃_n).
    likelihood : MultinomialProbitLikelihood, optional
        Carries the Gauss–Hermite rule (default 48 nodes).

    Returns
    -------
    Y : ndarray (n, C)
        z̃_i^c = μ_i^c + p_i^c, i.e. ``M + P`` (G&R's Ỹ = M̃ + P).
    log_Z : ndarray (n,)
        log 𝒵_i.
    """
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    # G&R (2006) eqs 4.3, 4.4: z̃_i = μ_i + p_i
    P, log_Z = likelihood.cone_mean_shift(t, M)
    return np.asarray(M, dtype=float) + P, log_Z


def cone_mean_shift_monte_carlo(
    t: ArrayLike, M: ArrayLike, *, rng: np.random.Generator | int, n_samples: int = 1000
) -> tuple[np.ndarray, np.ndarray]:
    r"""The paper's estimator of P and 𝒵_i: the expectations over u by Monte Carlo.

    G&R (§6.1) computed the one-dimensional expectations of eqs 4.3–4.4 with
    1000 samples u^(s) ~ N(0,1), shared by all points. This
    function repeats that estimator so the book can compare it with the
    Gauss–Hermite rule used everywhere else.

    Parameters
    ----------
    t, M
        As in :func:`cone_truncated_mean`.
    rng : numpy.random.Generator or int
    n_samples : int
        Draws of u, shared by all points (the paper: 1000).

    Returns
    -------
    P : ndarray (n, C)
        The mean shifts p_i^c (the truncated means are ``M + P``).
    log_Z : ndarray (n,)
        log 𝒵_i.
    """
    rng = check_rng(rng)
    M = check_matrix(M, "M")
    n = M.shape[0]
    t, _ = check_class_codes(t, n, M.shape[1], require_all=False)
    u = rng.standard_normal(int(n_samples))
    own = M[np.arange(n), t]
    d = u[None, :, None] + (own[:, None] - M)[:, None, :]  # u + μ_i^k − μ_i^c (k = c_i), shape (n, S, C)
    log_Phi = log_ndtr(d)
    log_Phi[np.arange(n), :, t] = 0.0
    S = log_Phi.sum(axis=2)  # log Π_{j≠k} Φ(u + μ_i^k − μ_i^j)
    # G&R (2006) App. A.2: Z_i = E_u[Π_{j≠k} Φ(u + μ_i^k − μ_i^j)], by a sample mean
    log_Z = logsumexp(S, axis=1) - np.log(n_samples)
    # G&R (2006) eq 4.3 numerator, c ≠ k: E_u[N_u(μ_i^c − μ_i^k, 1) Φ_u^{i,k,c}]
    log_num = logsumexp(-0.5 * d**2 - 0.5 * np.log(2 * np.pi) + S[:, :, None] - log_Phi, axis=1) - np.log(n_samples)
    P = -np.exp(log_num - log_Z[:, None])
    P[np.arange(n), t] = 0.0
    # G&R (2006) eq 4.4: p_i^k = −Σ_{c≠k} p_i^c
    P[np.arange(n), t] = -P.sum(axis=1)
    return P, log_Z


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class VBResult:
    """State of the variational posterior Q(f)Q(z) after the iterations.

    Attributes
    ----------
    M : ndarray (n, C)
        Posterior means μ_i^c, column c being μ^c (G&R's
        m̃_k; C = 1 for the binary model).
    Y : ndarray (n, C)
        Means z̃_i^c of the auxiliaries under Q(z) at ``M`` (G&R's Ỹ).
    alpha : ndarray (n, C)
        α_c = (I + K_c)⁻¹z̃^c of the last Q(f) update;
        μ^c = K_c α_c.
    log_Z : ndarray (n,)
        log 𝒵_i at ``M``: the log likelihood of each label at the posterior mean.
    lower_bound : ndarray (n_iter,)
        The bound of Appendix C after every iteration (non-decreasing for a fixed kernel).
    factors : tuple of CholeskyFactor
        Cholesky factors of I + K_c (one if the kernel is shared).
    n_iter : int
        Iterations (evaluations of the update map when accelerated).
    converged : bool
    binary : bool
        True for the one-GP binary model of §4.4.1 (labels ±1).
    """

    M: np.ndarray
    Y: np.ndarray
    alpha: np.ndarray
    log_Z: np.ndarray
    lower_bound: np.ndarray
    factors: tuple
    n_iter: int
    converged: bool
    binary: bool

    @property
    def log_marginal_likelihood_bound(self) -> float:
        """The final value of the lower bound on the log evidence log p(c | X) (binary: log p(y | X)) at this kernel."""
        return float(self.lower_bound[-1])


def vb_lower_bound(log_Z: np.ndarray, alpha: np.ndarray, M: np.ndarray, factors: Sequence[CholeskyFactor]) -> float:
    r"""The variational lower bound of G&R Appendix C, in the simplified form derived in the book.

        ℒ = ∑_i log 𝒵_i - ½ ∑_c α_cᵀμ^c - ½ ∑_c log|I + K_c|

    with μ^c = K_c α_c (so
    α_cᵀμ^c = (μ^c)ᵀ K_c⁻¹μ^c).

    Parameters
    ----------
    log_Z : ndarray (n,)
        log 𝒵_i.
    alpha, M : ndarray (n, C)
        Dual weights α_c and means μ^c, one column per class.
    factors : sequence of CholeskyFactor
        One factor of I + K_c per class, or a single shared one counted C times.

    Returns
    -------
    float
    """
    n_cols = alpha.shape[1]
    if len(factors) == 1:
        half_log_det = 0.5 * n_cols * factors[0].log_det
    else:
        half_log_det = 0.5 * sum(f.log_det for f in factors)
    # G&R (2006) App. C (simplified): Σ_i log Z_i − ½ Σ_c μ^cᵀ K_c⁻¹ μ^c − ½ Σ_c log|I + K_c|
    return float(np.sum(log_Z) - 0.5 * np.sum(alpha * M) - half_log_det)


def factor_plus_identity(mats: Sequence[np.ndarray]) -> tuple[CholeskyFactor, ...]:
    """Cholesky factors of I + K_c for each distinct covariance (eigenvalues at least one).

    Parameters
    ----------
    mats : sequence of ndarray (n, n)

    Returns
    -------
    tuple of CholeskyFactor
    """
    n = mats[0].shape[0]
    return tuple(cholesky(np.eye(n) + mat, name="I + K") for mat in mats)


def _warn_not_converged(name, max_iter, change):
    warnings.warn(
        f"{name} did not converge in {max_iter} iterations (last bound change {change:.3g}); "
        f"raise max_iter or loosen tol",
        ConvergenceWarning,
        stacklevel=3,
    )


def _check_one_start(alpha_init):
    if alpha_init is not None:
        raise ValueError("give alpha_init or z_init, not both")


def vb_binary_update(K: np.ndarray, factor: CholeskyFactor, y: np.ndarray,
                     alpha: np.ndarray) -> tuple[float, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """Steps 2.1–2.3 of Algorithm 9.1 (vbp-alg-binary) at α (μ = K α): Q(z), the bound, Q(f).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    factor : CholeskyFactor
        The factor of I + K (step 1).
    y, alpha : ndarray (n,)
        Labels in {−1, +1} and the current α.

    Returns
    -------
    bound : float
        The bound ℒ at α.
    alpha_next : ndarray (n,)
        α' = (I + K)⁻¹ z̃.
    state : tuple
        (μ, z̃, log Φ(y_i μ_i)) at α.
    """
    mu = K @ alpha
    log_Z = log_ndtr(y * mu)  # Z_i = Φ(y_i μ_i)
    z_tilde = mu + y * normal_pdf_over_cdf(y * mu)  # step 2.1: z̃ = μ + p, p_i = y_i φ(μ_i)/Φ(y_i μ_i) (footnote 6)
    bound = float(np.sum(log_Z) - 0.5 * alpha @ mu - 0.5 * factor.log_det)  # step 2.2 (App. C with one GP)
    return bound, factor.solve(z_tilde), (mu, z_tilde, log_Z)  # step 2.3: α' = (I + K)⁻¹ z̃ (eq 4.9)


def vb_multiclass_update(mats: Sequence[np.ndarray], factors: Sequence[CholeskyFactor],
                         likelihood: MultinomialProbitLikelihood, t: np.ndarray,
                         alpha: np.ndarray) -> tuple[float, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """Steps 2.1–2.3 of Algorithm 9.2 (vbp-alg-multiclass) at α (μ^c = K_c α_c): Q(z), the bound, Q(f).

    Parameters
    ----------
    mats, factors : sequence
        The K_c and the factors of I + K_c (step 1), one per class (or one shared).
    likelihood : MultinomialProbitLikelihood
        Its ``cone_mean_shift`` gives the shifts p of step 2.1.
    t : ndarray (n,)
        Class codes 0, …, C − 1.
    alpha : ndarray (n, C)
        The current α.

    Returns
    -------
    bound : float
        The bound ℒ at α.
    alpha_next : ndarray (n, C)
        α_c' = (I + K_c)⁻¹ z̃^c.
    state : tuple
        (M, Z̃, log Z) at α, M the n × C latent means.
    """
    M = latent_from_alpha(mats, alpha)
    P, log_Z = likelihood.cone_mean_shift(t, M)  # step 2.1: z̃_i = μ_i + p_i (eqs 4.3, 4.4)
    bound = vb_lower_bound(log_Z, alpha, M, factors)  # step 2.2 (App. C)
    return bound, solve_each(factors, M + P), (M, M + P, log_Z)  # step 2.3: α_c' = (I + K_c)⁻¹ z̃^c (eq 4.6)


def vb_probit_binary_core(K: np.ndarray, y: np.ndarray, *, tol: float = 1e-9, max_iter: int = 1000) -> VBResult:
    """Algorithm 9.1 (vbp-alg-binary), step for step: binary variational Bayes probit (G&R §4.4.1, eq 4.9).

    The plain core of :func:`vb_probit_binary`, which checks the arguments, may start from a given α or Q(z),
    can accelerate the iteration (SQUAREM) and warns when step 2.4 is not met; this function trusts its
    arguments (K positive semi-definite, y in {−1, +1}) and does none of that. Unaccelerated from α = 0 the
    two return the same result (``tests/package/test_vb_probit.py``).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : ndarray (n,)
        Labels in {−1, +1}.
    tol, max_iter
        The box's ε and the most iterations.

    Returns
    -------
    VBResult

    References: [GR06] eq 4.9, footnote 6 and Appendix C.
    """
    factor = cholesky(np.eye(len(y)) + K, name="I + K")  # step 1: I + K = L Lᵀ, once
    alpha, alpha_prev, rho, bounds, converged = np.zeros(len(y)), None, 0.0, [], False  # step 1
    for n_iter in range(1, max_iter + 1):  # step 2
        bound, alpha_next, (mu, z_tilde, log_Z) = vb_binary_update(K, factor, y, alpha)  # steps 2.1–2.3
        bounds.append(bound)
        if alpha_prev is not None:  # step 2.4
            converged, rho = fixed_point_test(alpha_prev, alpha, alpha_next, bounds[-2], bound, rho, tol)
        if converged or n_iter == max_iter:
            break  # with α, μ, z̃ and the bound of the same iterate
        alpha_prev, alpha = alpha, alpha_next  # step 2.5 (μ = K α at the next step 2.1)
    return VBResult(mu[:, None], z_tilde[:, None], alpha[:, None], log_Z, np.array(bounds), (factor,), n_iter,
                    converged, True)  # fmt: skip


def vb_probit_multiclass_core(K: np.ndarray, t: np.ndarray, n_classes: int, *, tol: float = 1e-9,
                              max_iter: int = 1000) -> VBResult:  # fmt: skip
    """Algorithm 9.2 (vbp-alg-multiclass), step for step: variational Bayes multinomial probit (G&R §4).

    The plain core of :func:`vb_probit_multiclass` (which adds what :func:`vb_probit_binary_core` lists for
    the binary case, and a choice of likelihood quadrature); unaccelerated from α = 0 the two agree.

    Parameters
    ----------
    K : ndarray (n, n) or (C, n, n)
        One kernel shared by the classes, or one per class.
    t : ndarray (n,)
        Class codes 0, …, C − 1.
    n_classes : int
        C.
    tol, max_iter
        The box's ε and the most iterations.

    Returns
    -------
    VBResult

    References: [GR06] eqs 4.3, 4.4, 4.6 and Appendix C.
    """
    mats, likelihood = _kernel_matrices(K, n_classes), MultinomialProbitLikelihood()
    factors = factor_plus_identity(mats)  # step 1: I + K_c = L_c L_cᵀ, once per distinct kernel
    alpha, alpha_prev, rho, bounds, converged = np.zeros((len(t), n_classes)), None, 0.0, [], False  # step 1
    for n_iter in range(1, max_iter + 1):  # step 2
        bound, alpha_next, (M, Z_tilde, log_Z) = vb_multiclass_update(mats, factors, likelihood, t, alpha)
        bounds.append(bound)
        if alpha_prev is not None:  # step 2.4
            converged, rho = fixed_point_test(alpha_prev, alpha, alpha_next, bounds[-2], bound, rho, tol)
        if converged or n_iter == max_iter:
            break
        alpha_prev, alpha = alpha, alpha_next  # step 2.5
    return VBResult(M, Z_tilde, alpha, log_Z, np.array(bounds), factors, n_iter, converged, False)


def vb_probit_binary(
    K: ArrayLike,
    t: ArrayLike,
    *,
    max_iter: int = 1000,
    tol: float = 1e-9,
    alpha_init: ArrayLike | None = None,
    z_init: ArrayLike | None = None,
    warn: bool = True,
    accelerate: bool = False,
) -> VBResult:
    r"""Binary variational Bayes probit classification (G&R §4.4.1, eq 4.9).

    One GP f ~ N(0, K), auxiliaries z_i ~ N(f_i, 1) and labels y_i = sign(z_i) ∈ {−1, +1} [AC93]. Each iteration
    updates Q(z), shifting the means by p_i = y_i(ϕ(μ_i)/Φ(y_i μ_i)) (footnote 6), then Q(f), GP regression with
    unit noise on the shifted means: μ ← K(I + K)⁻¹(μ + p); I + K is factorised once. The bound (Appendix C with
    C = 1) is recorded every iteration; the loop stops when it rises by less than ``tol``·max(1, abs(bound)) *and*
    the estimated distance of α to its fixed point is below √tol (relative;
    :func:`gpc_ref.acceleration.fixed_point_converged`; the book's VB probit chapter explains the second test).

    Parameters
    ----------
    K : array_like (n, n)
        Prior covariance K (jitter included; G&R's C).
    t : array_like (n,)
        Labels y_i in {−1, +1} (or {0, 1}).
    max_iter, tol : int, float
        Iterations at most (evaluations of the update map when accelerated), and the relative tolerance above.
    alpha_init, z_init : array_like (n,), optional
        Starting α (so μ = K α; zeros by default), or instead a starting Q(z): means of the auxiliaries z (e.g.
        ``Y`` of a run at another kernel), so that the first α = (I + K)⁻¹z, one Q(f) update. Not both.
    warn : bool
        Issue a :class:`~gpc_ref.validation.ConvergenceWarning` if the iterations stop unconverged.
    accelerate : bool
        SQUAREM extrapolation [VR08]: same fixed point, far fewer iterations when the kernel is large; the bound
        is then recorded after every accepted cycle and never decreases.

    Returns
    -------
    VBResult
        with ``M``, ``Y``, ``alpha`` of shape (n, 1) and ``binary=True``.
    """
    (C,) = _kernel_matrices(K, 1)
    n = C.shape[0]
    t = check_binary_labels(t, "t", length=n)
    factor = cholesky(np.eye(n) + C, name="I + K")  # factorised once: the kernel is fixed
    alpha = np.zeros(n) if alpha_init is None else np.asarray(alpha_init, dtype=float).reshape(n)
    if z_init is not None:
        _check_one_start(alpha_init)
        alpha = factor.solve(np.asarray(z_init, dtype=float).reshape(n))  # Q(f) from the given Q(z), eq 4.9
    iterate = squarem if accelerate else fixed_point_iteration  # the same map and stopping test either way
    run = iterate(lambda a: vb_binary_update(C, factor, t, a), alpha, max_evaluations=int(max_iter), tol=tol)
    (mu, z_tilde, log_Z), bounds = run.state, run.merits
    if not run.converged and warn:
        _warn_not_converged("vb_probit_binary", max_iter, bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
    return VBResult(mu[:, None], z_tilde[:, None], run.x[:, None], log_Z, bounds, (factor,), run.n_evaluations,
                    run.converged, True)  # fmt: skip


def vb_probit_multiclass(
    K: ArrayLike,
    t: ArrayLike,
    *,
    n_classes: int | None = None,
    max_iter: int = 1000,
    tol: float = 1e-9,
    likelihood: MultinomialProbitLikelihood | None = None,
    alpha_init: ArrayLike | None = None,
    z_init: ArrayLike | None = None,
    warn: bool = True,
    accelerate: bool = False,
) -> VBResult:
    r"""C-class variational Bayes multinomial probit classification (G&R §4.3–4.4, eqs 4.1–4.6).

    Every iteration updates Q(z) (eqs 4.3, 4.4: the truncated-Gaussian means, Gauss–Hermite over u) and then Q(f)
    (eq 4.6): μ^c ← K_c(I + K_c)⁻¹(μ^c + p^c) for each class c. The C regressions are coupled only through the
    shifts P, whose row i depends on all C means at point i. The bound of Appendix C is recorded every iteration
    and never decreases; the stopping test is that of :func:`vb_probit_binary`.

    Parameters
    ----------
    K : array_like (n, n) or (C, n, n)
        One prior covariance shared by every class, or one per class.
    t : array_like (n,)
        Classes c_i, codes 0..C−1 (the paper's 1..K minus one).
    n_classes : int, optional
        Number of classes C; default ``max(t) + 1``. Every class needs an example.
    likelihood : MultinomialProbitLikelihood, optional
        Carries the Gauss–Hermite rule (default 48 nodes).
    alpha_init, z_init : array_like (n, C), optional
        Starting dual weights (zeros by default, i.e. all μ_i^c = 0), or instead a starting Q(z): means of the
        auxiliaries z_i^c (e.g. ``Y`` of a run at another kernel), so that α_c = (I + K_c)⁻¹z^c (eq 4.6). Not both.
    max_iter, tol, warn, accelerate
        As in :func:`vb_probit_binary` (``accelerate``: SQUAREM extrapolation [VR08] of the same iteration).

    Returns
    -------
    VBResult

    References
    ----------
    [GR06] eqs 4.1–4.6, Appendices A and C.
    """
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    n = np.shape(K)[-1]
    t, n_classes = check_class_codes(t, n, n_classes)
    mats = _kernel_matrices(K, n_classes)
    factors = factor_plus_identity(mats)  # I + K_c factorised once per distinct kernel
    alpha = np.zeros((n, n_classes)) if alpha_init is None else np.array(alpha_init, dtype=float)
    if z_init is not None:
        _check_one_start(alpha_init)
        Y = np.array(z_init, dtype=float)
        if Y.shape != (n, n_classes):
            raise ValueError(f"z_init must have shape {(n, n_classes)}; got {Y.shape}")
        alpha = solve_each(factors, Y)  # Q(f) from the given Q(z), eq 4.6
    if alpha.shape != (n, n_classes):
        raise ValueError(f"alpha_init must have shape {(n, n_classes)}; got {alpha.shape}")
    iterate = squarem if accelerate else fixed_point_iteration  # the same map and stopping test either way
    run = iterate(lambda a: vb_multiclass_update(mats, factors, likelihood, t, a), alpha,
                  max_evaluations=int(max_iter), tol=tol)  # fmt: skip
    (M, Z_tilde, log_Z), bounds = run.state, run.merits
    if not run.converged and warn:
        _warn_not_converged("vb_probit_multiclass", max_iter, bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
    return VBResult(M, Z_tilde, run.x, log_Z, bounds, factors, run.n_evaluations, run.converged, False)


def solve_each(factors: Sequence[CholeskyFactor], Y: np.ndarray) -> np.ndarray:
    """(I + K_c)⁻¹z̃^c for every column c (one shared factor solves all columns at once).

    Parameters
    ----------
    factors : sequence of CholeskyFactor
        One factor of I + K shared by every column, or one per column.
    Y : ndarray (n, C)
        The right-hand sides z̃^c, one column per class.

    Returns
    -------
    ndarray (n, C)
    """
    if len(factors) == 1:
        return factors[0].solve(Y)
    return np.column_stack([f.solve(Y[:, k]) for k, f in enumerate(factors)])


def latent_from_alpha(mats: Sequence[np.ndarray], alpha: np.ndarray) -> np.ndarray:
    """μ^c = K_c α_c for every column c.

    Parameters
    ----------
    mats : sequence of ndarray (n, n)
        One covariance shared by every column, or one per column.
    alpha : ndarray (n, C)

    Returns
    -------
    ndarray (n, C)
    """
    if len(mats) == 1:
        return mats[0] @ alpha
    return np.column_stack([mat @ alpha[:, k] for k, mat in enumerate(mats)])


# --------------------------------------------------------------------------- predictions
def vb_predict_latent(result: VBResult, K_cross: ArrayLike, k_diag: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and variance of f_∗^c at new inputs x_∗ under Q(f) (G&R §4.5).

        μ_∗^c = (z̃^c)ᵀ(I + K_c)⁻¹k_∗c
        = α_cᵀk_∗c,
        σ_∗c² = k_∗∗^c - k_∗cᵀ(I + K_c)⁻¹k_∗c.

    Parameters
    ----------
    result : VBResult
    K_cross : array_like (n, m) or (C, n, m)
        Covariances k_∗c between the training points and the m new points (shared, or one per class).
    k_diag : array_like (m,) or (C, m)
        Prior variances k_∗∗^c of the new points.

    Returns
    -------
    mean, var : ndarrays of shape (m, C)
        μ_∗^c and σ_∗c².
    """
    n_cols = result.alpha.shape[1]
    cross, diag = check_test_covariances(K_cross, k_diag, n_cols)
    mean = np.column_stack([cross[k].T @ result.alpha[:, k] for k in range(n_cols)])
    var = np.empty_like(mean)
    for k in range(n_cols):
        factor = result.factors[0] if len(result.factors) == 1 else result.factors[k]
        if k > 0 and len(result.factors) == 1 and cross[k] is cross[0]:
            var[:, k] = var[:, 0]
            continue
        v = solve_lower(factor.L, cross[k])
        # G&R (2006) §4.5: σ_{*c}² = k_**^c − k_*cᵀ (I + K_c)⁻¹ k_*c
        var[:, k] = np.maximum(diag[k] - np.sum(v * v, axis=0), 0.0)
    return mean, var


def vb_predict_proba(
    result: VBResult, K_cross: ArrayLike, k_diag: ArrayLike, *, likelihood: MultinomialProbitLikelihood | None = None
) -> np.ndarray:
    r"""Predictive class probabilities (G&R §4.5 and Appendix B).

    Binary: P(y_∗ = +1) = Φ(μ_∗/√(1 + σ_∗²)).

    C classes: P(c_∗ = k) = E_u[∏_(j ≠ k)Φ((u v_∗k + μ_∗^k - μ_∗^j)/v_∗j)],
    v_∗j = √(1 + σ_∗j²), by Gauss–Hermite quadrature (means and variances from
    :func:`vb_predict_latent`).

    Parameters
    ----------
    result, K_cross, k_diag
        As in :func:`vb_predict_latent`.
    likelihood : MultinomialProbitLikelihood, optional
        Carries the Gauss–Hermite rule of the C-class case (default 48 nodes).

    Returns
    -------
    ndarray (m, 2) or (m, C)
        Binary: columns (P(y_* = −1), P(y_* = +1)). C classes: entries clipped to [0, 1] against
        quadrature round-off; rows are not renormalised, so their sums show the quadrature error.
    """
    mean, var = vb_predict_latent(result, K_cross, k_diag)
    if result.binary:
        # G&R (2006) §4.5, binary case: Φ(μ_*/√(1 + σ_*²))
        p1 = ndtr(mean[:, 0] / np.sqrt(1.0 + var[:, 0]))
        return np.column_stack([1.0 - p1, p1])
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    # G&R (2006) App. B; clipped to [0, 1] against quadrature round-off (rows are not renormalised)
    return np.clip(likelihood.predict(mean, var), 0.0, 1.0)
