r"""Expectation propagation (EP) for binary GP classification (Kim & Ghahramani; GPML §3.6).

EP replaces every likelihood term p(y_i|f_i) by an unnormalised Gaussian *site*
t̃_i(f_i) ∝ exp(ν̃_i f_i - ½τ̃_i f_i²) chosen so that the
Gaussian q(f) ∝ N(f|0, C)∏_i t̃_i(f_i) has, at every point, the
mean and variance of the *tilted* distribution q_∖i(f_i) p(y_i|f_i) (K&G eq 8).
The sites are refined one at a time (sequential sweeps) with a rank-one update of the posterior
covariance, in the numerically stable form of GPML Algorithm 3.5 (B = I + S̃^½ C
S̃^½, never C⁻¹); when a non-log-concave likelihood produces negative site
precisions (which S̃^½ cannot hold) the posterior is recomputed from
M = I + L_CᵀT̃ L_C instead.

One likelihood family covers both models of the chapter:

    p(y|f) = ε + (1-2ε) Φ((y f)/√s),

- ``ProbitLikelihood()``: ε = 0, s = 1 (K&G eq 4, GPML §3.6);
- ``LabelNoiseLikelihood(epsilon, 0)``: K&G's eq 9, ε + (1-2ε)H(yf), with their
  latent noise v_2 in the prior covariance (the kernel's learnable ``jitter``, K&G eq 10).
  Integrating that noise out turns H into Φ(yf/√v_2): the two views give
  the same EP fixed point and evidence (tested), so ``LabelNoiseLikelihood(epsilon, v)`` with
  s = v > 0 is accepted too.

Learning the hyperparameters (EM-EP and direct maximisation of the EP evidence) is in
:mod:`gpc_ref.ep_learning`.

Notation (book symbol ← code name; Kim & Ghahramani's symbol in brackets). The docstrings write
C for the prior covariance, as K&G do; the chapter writes K.

- y_i ∈ {-1,+1} ← ``y``: labels (K&G y_i).
- C (book K) ← ``K``: prior covariance of f, with the latent noise
  v_2 on its diagonal (K&G C, eq 10).
- τ̃_i, ν̃_i ← ``tau, nu``: site precision and precision times mean
  (K&G 1/v_i and m_i/v_i); T̃ = diag(τ̃) is K&G's Λ⁻¹.
- Σ, μ ← ``Sigma, mu``: EP posterior covariance and mean (K&G A, h).
- μ_(-i), σ²_(-i) ← ``mean_cav, var_cav``: cavity mean and variance
  (K&G h_i^∖i, λ_i); τ_(-i), ν_(-i) ← ``tau_cav, nu_cav``.
- Z_i ← ``log_Z`` (its log): normaliser of the tilted distribution (K&G Z_i).
- α_i ← ``alpha``: ∂log Z_i/∂μ_(-i) (K&G's α_i times y_i);
  β_i ← ``beta``: -∂² log Z_i/∂μ_(-i)².
- a ← ``a``: C⁻¹μ; at the fixed point a_i = α_i
  (K&G eq 11: μ = C diag(y)α).
- R ← ``R``: C⁻¹ - C⁻¹ΣC⁻¹ = (C + T̃⁻¹)⁻¹.
- ε ← ``epsilon``: labelling-error rate; s ← ``latent_noise``: noise variance
  inside the likelihood (0 for K&G's step, whose noise v_2 sits in C).
- log Z_EP ← ``log_evidence``: EP approximation to the log evidence (K&G eq 12).

References
----------
- [KG03] Kim & Ghahramani (2003), *The EM-EP algorithm for Gaussian process classification*:
  eqs 8–12 (EP for GPC with the label-noise likelihood, approximate evidence), §4 and Appendix A
  (eqs 13–18: EM-EP, the bound F, its gradient, ε* = r/n).
- [Minka01] Minka (2001), *A family of algorithms for approximate Bayesian inference*, ch. 3–5:
  EP as iterated assumed-density filtering, moment matching, the EP evidence.
- [OW00] Opper & Winther (2000): the TAP / adaptive mean-field equations EP reproduces for GPC.
- [GPML] Rasmussen & Williams (2006), §3.6: eqs 3.56–3.59 (cavity and site updates), 3.65 (the EP
  evidence), Algorithms 3.5 (EP, B = I + S̃½CS̃½) and 3.6 (predictions); eq 5.27 (evidence gradient).
- [KR05] Kuss & Rasmussen (2005): EP against Laplace and long MCMC runs.
- [vGerven10] van Gerven, Cseke, de Lange & Heskes (2010), *Efficient Bayesian multivariate fMRI analysis
  using a sparsifying spatio-temporal prior*, NeuroImage 50: parallel EP updates.
- [GPstuff] Vanhatalo et al. (2013), *GPstuff: Bayesian modeling with Gaussian processes*, JMLR 14: the same
  parallel EP schedule.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import lapack
from scipy.linalg.blas import dger
from scipy.special import log_ndtr
from scipy.special import ndtr

from .errors import ConvergenceWarning
from .kernels import SEKernel
from .likelihoods import LabelNoiseLikelihood
from .likelihoods import ProbitLikelihood
from .linalg import cho_solve
from .linalg import cholesky
from .linalg import solve_lower
from .threads import limited_blas_threads
from .validation import check_binary_labels
from .validation import check_choice
from .validation import check_covariance
from .validation import check_covariance_derivatives
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_probability
from .validation import check_vector

__all__ = [
    "TiltedMoments",
    "EPResult",
    "EPPrediction",
    "site_likelihood",
    "tilted_moments",
    "posterior_from_sites",
    "ep_log_evidence",
    "expectation_propagation",
    "ep_core",
    "ep_sweep",
    "site_change",
    "site_marginals",
    "expectation_propagation_with_fallback",
    "trusted_ep_with_fallback",
    "ep_evidence_gradient",
    "ep_epsilon_gradient",
    "ep_predict",
]

_LOG_2PI = np.log(2.0 * np.pi)


# ===================================================================== the site likelihood
def site_likelihood(likelihood: ProbitLikelihood | LabelNoiseLikelihood) -> tuple[float, float]:
    r"""Return ``(epsilon, s)`` of p(y|f) = ε + (1-2ε)Φ(yf/√s).

    ``ProbitLikelihood()`` is (0, 1); ``LabelNoiseLikelihood(epsilon, latent_noise)`` is
    (ε, latent_noise), where ``latent_noise = 0`` is K&G's step H(yf).

    Parameters
    ----------
    likelihood : ProbitLikelihood or LabelNoiseLikelihood
        Any other likelihood raises ``ValueError``.

    Returns
    -------
    epsilon, latent_noise : float
        The labelling-error rate ε and the noise variance s inside Φ.
    """
    if isinstance(likelihood, ProbitLikelihood):
        return 0.0, 1.0
    if isinstance(likelihood, LabelNoiseLikelihood):
        return likelihood.epsilon, likelihood.latent_noise
    raise ValueError(
        "likelihood must be ProbitLikelihood() or LabelNoiseLikelihood(epsilon, latent_noise); "
        f"got {type(likelihood).__name__}"
    )


@dataclass(frozen=True)
class TiltedMoments:
    r"""Log normaliser and its first two derivatives in the cavity mean, for each point.

    ``log_Z`` = log Z_i, ``alpha`` = ∂log Z_i/∂μ_(-i),
    ``beta`` = -∂² log Z_i/∂μ_(-i)². The tilted mean and variance are
    μ_(-i) + σ_(-i)²α_i and σ_(-i)² - σ_(-i)⁴β_i.
    """

    log_Z: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


def tilted_moments(
    y: ArrayLike, mean_cav: ArrayLike, var_cav: ArrayLike, *, epsilon: float = 0.0, latent_noise: float = 1.0
) -> TiltedMoments:
    r"""Moments of the tilted distribution p(y | f) N(f | mean_cav, var_cav): step 2 of EP's site update.

    The likelihood is p(y | f) = ε + (1 − 2ε) Φ(y f / √s), with ε = ``epsilon`` and s =
    ``latent_noise``. With κ = √(s + var_cav), z = y · mean_cav / κ and r = (1 − 2ε) φ(z) / Z_i,
    the normaliser Z_i and its derivatives α_i = ∂ log Z_i / ∂μ₋ᵢ and β_i = −∂² log Z_i / ∂μ₋ᵢ²
    in the cavity mean are

        Z_i = ε + (1-2ε)Φ(z),
        α_i = ((y r)/κ), β_i = ((r (z + r))/κ²).

    This is K&G's step 2 (with s = 0; their α_i is our y_i α_i) and GPML eqs 3.58 (with ε = 0,
    s = 1). All of it is computed in log space, so a cavity that predicts the wrong label with
    z = −40 still gives finite numbers. For ε > 0, β_i is negative when z is far below 0: the
    tilted distribution is then *wider* than the cavity.

    Parameters
    ----------
    y : array_like
        Labels in {−1, +1}, used as given (not checked: this is the inner step of EP).
    mean_cav, var_cav : array_like
        Cavity means μ₋ᵢ and variances σ²₋ᵢ; all three broadcast.
    epsilon, latent_noise : float
        ε and s of the likelihood (:func:`site_likelihood`).

    Returns
    -------
    TiltedMoments
        log Z_i, α_i and β_i, with the broadcast shape of the inputs.
    """
    y = np.asarray(y, dtype=float)
    mean_cav = np.asarray(mean_cav, dtype=float)
    var_cav = np.asarray(var_cav, dtype=float)
    kappa = np.sqrt(latent_noise + var_cav)
    z = y * mean_cav / kappa
    log_phi = log_ndtr(z)
    log_pdf = -0.5 * z**2 - 0.5 * _LOG_2PI
    if epsilon == 0.0:
        log_Z = log_phi
        log_r = log_pdf - log_phi
    else:
        # K&G step 2: Z_i = ε + (1 − 2ε) Φ(z), kept in log space
        log_scale = np.log1p(-2.0 * epsilon)
        log_Z = np.logaddexp(np.log(epsilon), log_scale + log_phi)
        log_r = log_scale + log_pdf - log_Z
    r = np.exp(log_r)
    # K&G step 2 (α_i times y_i); GPML eq 3.58
    alpha = y * r / kappa
    beta = r * (z + r) / kappa**2
    return TiltedMoments(log_Z, alpha, beta)


def _tilted_scalar(y, mean_cav, var_cav, log_epsilon, log_scale, latent_noise):
    """:func:`tilted_moments` for one site with Python floats (the inner loop of EP); returns (α, β).

    ``log_epsilon`` is log ε (−inf for ε = 0) and ``log_scale`` is log(1 − 2ε).
    """
    kappa = math.sqrt(latent_noise + var_cav)
    z = y * mean_cav / kappa
    log_phi = float(log_ndtr(z))
    log_pdf = -0.5 * z * z - 0.5 * _LOG_2PI
    if log_epsilon == -math.inf:
        log_r = log_pdf - log_phi
    else:
        a, b = log_epsilon, log_scale + log_phi
        log_Z = max(a, b) + math.log1p(math.exp(-abs(a - b)))
        log_r = log_scale + log_pdf - log_Z
    r = math.exp(log_r)
    return y * r / kappa, r * (z + r) / (kappa * kappa)


# ===================================================================== the posterior from the sites
def posterior_from_sites(
    K: np.ndarray, tau: np.ndarray, nu: np.ndarray, *, need_R: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    r"""Posterior q(f) = N(μ, Σ), Σ = (C⁻¹ + T̃)⁻¹,
    μ = Σν̃, without inverting C.

    - All τ̃_i ≥ 0 (always so for the probit and for ε = 0):
      GPML Alg. 3.5, B = I + S̃^½CS̃^½ = LLᵀ,
      Σ = C - VᵀV with V = L⁻¹S̃^½C, R = S̃^½B⁻¹S̃^½.
      B has eigenvalues ≥ 1, and C itself is never factorised.
    - Some τ̃_i < 0 (labelling noise, ε > 0): with C = L_C L_Cᵀ,
      M = I + L_CᵀT̃ L_C = L_M L_Mᵀ is positive definite exactly when q is a proper
      Gaussian; Σ = WᵀW, W = L_M⁻¹L_Cᵀ, and R = T̃ - T̃ΣT̃.
      If M is not positive definite, the factorisation raises ``LinAlgError``.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance C (not checked).
    tau, nu : ndarray (n,)
        Site parameters τ̃_i, ν̃_i.
    need_R : bool
        Also form R (the EP sweeps need only Σ and μ).

    Returns
    -------
    Sigma : ndarray (n, n)
    mu : ndarray (n,)
    R : ndarray (n, n) or None
        C⁻¹ - C⁻¹ΣC⁻¹; ``None`` unless ``need_R``.
    log_det : float
        log|I + T̃ C|.
    """
    n = K.shape[0]
    eye = np.eye(n)
    if np.all(tau >= 0):
        sqrt_tau = np.sqrt(tau)
        # GPML Alg. 3.5: B = I + S̃½ C S̃½
        B = eye + sqrt_tau[:, None] * K * sqrt_tau[None, :]
        L = cholesky(B, name="B = I + S½CS½").L
        V = solve_lower(L, sqrt_tau[:, None] * K)
        # GPML Alg. 3.5: Σ = C − C S̃½ B⁻¹ S̃½ C
        Sigma = K - V.T @ V
        R = sqrt_tau[:, None] * cho_solve(L, np.diag(sqrt_tau)) if need_R else None
    else:
        L_C = cholesky(K, name="C").L
        M = eye + L_C.T @ (tau[:, None] * L_C)
        L = cholesky(M, name="M = I + LᵀT̃L (negative site precisions)").L
        W = solve_lower(L, L_C.T)
        # Σ = (C⁻¹ + T̃)⁻¹ = L_C M⁻¹ L_Cᵀ
        Sigma = W.T @ W
        R = np.diag(tau) - tau[:, None] * Sigma * tau[None, :] if need_R else None
    # |I + T̃C| = |B| = |M|
    log_det = 2.0 * np.sum(np.log(np.diag(L)))
    mu = Sigma @ nu
    return Sigma, mu, R, log_det


def _cavities(Sigma, mu, tau, nu):
    """Cavity natural parameters of every site from the current posterior (GPML eq 3.56)."""
    var = np.diag(Sigma)
    tau_cav = 1.0 / var - tau
    nu_cav = mu / var - nu
    return tau_cav, nu_cav


def ep_log_evidence(
    K: np.ndarray,
    y: np.ndarray,
    tau: np.ndarray,
    nu: np.ndarray,
    *,
    epsilon: float = 0.0,
    latent_noise: float = 1.0,
    posterior: tuple[np.ndarray, np.ndarray, np.ndarray | None, float] | None = None,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    r"""EP approximation to log p(y|X,θ) (K&G eq 12) in a stable form.

    With the cavities taken from the current posterior,

        log Z_EP = ∑_i[log Z_i + ½ log(1 + τ̃_i/τ_(-i)) + ½τ_(-i)μ_(-i)(μ_(-i) - μ_i)] - ½ log|I + T̃C|,

    which is K&G's log(det(Λ)^½ det(C+Λ)^(-1/2) e^(B/2) ∏_i s_i) rewritten in the
    site natural parameters (GPML eq 3.65 in another arrangement): no infinite site variance
    v_i = 1/τ̃_i appears, and negative τ̃_i are allowed.
    Raises ``FloatingPointError`` if a cavity has non-positive precision.

    Parameters
    ----------
    K, tau, nu
        As in :func:`posterior_from_sites`.
    y : ndarray (n,)
        Labels in {−1, +1}.
    epsilon, latent_noise : float
        As in :func:`tilted_moments`.
    posterior : tuple, optional
        ``posterior_from_sites(K, tau, nu)`` if already computed (``R`` may be ``None``).

    Returns
    -------
    log_evidence : float
        log Z_EP.
    log_Z, tau_cav, nu_cav : ndarray (n,)
        Tilted log normalisers and cavity natural parameters τ_(-i), ν_(-i).
    """
    if posterior is None:
        posterior = posterior_from_sites(K, tau, nu)
    Sigma, mu, _, log_det = posterior
    tau_cav, nu_cav = _cavities(Sigma, mu, tau, nu)
    if np.any(tau_cav <= 0):
        raise FloatingPointError(
            f"{int(np.sum(tau_cav <= 0))} cavity distribution(s) have non-positive precision; "
            "the EP evidence is undefined at these site parameters (try damping)"
        )
    mean_cav, var_cav = nu_cav / tau_cav, 1.0 / tau_cav
    log_Z = tilted_moments(y, mean_cav, var_cav, epsilon=epsilon, latent_noise=latent_noise).log_Z
    # K&G eq 12 with s_i written out (see the docstring); GPML eq 3.65
    terms = log_Z + 0.5 * np.log1p(tau / tau_cav) + 0.5 * tau_cav * mean_cav * (mean_cav - mu)
    return float(np.sum(terms) - 0.5 * log_det), log_Z, tau_cav, nu_cav


# ===================================================================== EP itself
@dataclass(frozen=True)
class EPResult:
    r"""The EP approximation q(f) = N(μ, Σ) and its sites.

    Attributes
    ----------
    tau, nu : ndarray (n,)
        Site natural parameters τ̃_i, ν̃_i (K&G 1/v_i, m_i/v_i).
    mu, Sigma : ndarray
        Posterior mean and covariance (K&G h, A).
    a : ndarray (n,)
        C⁻¹μ = ν̃ - T̃μ, the weights of the predictive mean k_∗ᵀa (K&G's diag(y)α).
    R : ndarray (n, n)
        C⁻¹ - C⁻¹ΣC⁻¹, for predictive variances and the evidence gradient.
    log_evidence : float
        log Z_EP (K&G eq 12).
    log_Z, mean_cav, var_cav : ndarray (n,)
        Tilted normalisers and the cavities at the returned posterior.
    epsilon, latent_noise : float
        The likelihood ε + (1-2ε)Φ(yf/√s) that was used.
    n_sweeps, converged : int, bool
        Sweeps through the sites that were run, and whether EP converged within them.
    max_change : float
        Largest relative site change in the last sweep (parallel schedule: of the undamped update, the
        fixed-point residual).
    n_skipped : int
        Site updates skipped because a cavity had non-positive precision.
    log_det : float
        log|I + T̃C|, so that log|Σ| = log|C| - log|I + T̃C|.
    schedule : {"sequential", "parallel"}
        How the sites were updated.
    """

    tau: np.ndarray
    nu: np.ndarray
    mu: np.ndarray
    Sigma: np.ndarray
    a: np.ndarray
    R: np.ndarray
    log_evidence: float
    log_Z: np.ndarray
    mean_cav: np.ndarray
    var_cav: np.ndarray
    epsilon: float
    latent_noise: float
    n_sweeps: int
    converged: bool
    max_change: float
    n_skipped: int
    log_det: float
    schedule: str = "sequential"


def site_marginals(K: ArrayLike, tau: ArrayLike, nu: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Marginal variances diag Σ and mean μ of q(f),
    without forming Σ: all that a parallel EP sweep needs.

    With all τ̃_i ≥ 0: B = I + S̃^½KS̃^½ = LLᵀ (GPML Alg. 3.5) and,
    by the Woodbury identity, S̃^½ΣS̃^½ = I - B⁻¹, so
    Σ_ii = (1 - (B⁻¹)_ii)/τ̃_i with diag B⁻¹ the squared
    column norms of L⁻¹: one Cholesky and one triangular inverse instead of the triangular
    solve L⁻¹S̃^½K. Where τ̃_i k_ii < 10⁻⁴ that difference would
    cancel, and Σ_ii = k_ii - ‖L⁻¹S̃^½k_i‖² is used instead.
    With negative site precisions, the M form of :func:`posterior_from_sites`.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    tau, nu : ndarray (n,)
        Site natural parameters.

    Returns
    -------
    var, mu : ndarrays (n,)
    """
    K = np.asarray(K, dtype=float)
    tau, nu = np.asarray(tau, dtype=float), np.asarray(nu, dtype=float)
    if np.all(tau >= 0):
        sqrt_tau = np.sqrt(tau)
        # GPML Alg. 3.5: B = I + S̃½ K S̃½ = L Lᵀ
        B = sqrt_tau[:, None] * K * sqrt_tau[None, :]
        B[np.diag_indices_from(B)] += 1.0
        L_inverse = lapack.dtrtri(cholesky(B, name="B = I + S½KS½").L, lower=1)[0]
        # S̃½ Σ S̃½ = I − B⁻¹ (Woodbury), so Σ_ii = (1 − (B⁻¹)_ii)/τ̃_i with diag B⁻¹ from the columns of L⁻¹;
        # where τ̃_i k_ii is tiny that difference cancels, and Σ_ii = k_ii − ‖L⁻¹S̃½k_i‖² is used instead
        B_inverse_diagonal = np.einsum("ij,ij->j", L_inverse, L_inverse)
        k_diag = np.diag(K)
        direct = tau * k_diag < 1e-4
        var = np.divide(1.0 - B_inverse_diagonal, tau, out=np.zeros_like(tau), where=~direct)
        if np.any(direct):
            V = L_inverse @ (sqrt_tau[:, None] * K[:, direct])
            var[direct] = k_diag[direct] - np.einsum("ij,ij->j", V, V)
        # μ = Σ ν̃ = K ν̃ − K S̃½ B⁻¹ S̃½ K ν̃
        K_nu = K @ nu
        w = L_inverse @ (sqrt_tau * K_nu)
        return var, K_nu - K @ (sqrt_tau * (L_inverse.T @ w))
    Sigma, mu, _, _ = posterior_from_sites(K, tau, nu, need_R=False)
    return np.diag(Sigma).copy(), mu


def site_change(tau_old: np.ndarray, nu_old: np.ndarray, tau: np.ndarray, nu: np.ndarray) -> float:
    """Step 3 of Algorithm 8.1 (ep-alg-ep): the largest relative change of a site parameter in a sweep.

    Parameters
    ----------
    tau_old, nu_old, tau, nu : ndarray (n,)
        The site parameters τ̃, ν̃ before and after the sweep.

    Returns
    -------
    float
        The larger of max_i abs(Δτ̃_i)/(1 + abs(τ̃_i)) and max_i abs(Δν̃_i)/(1 + abs(ν̃_i)), with the old values
        in the denominators: the fixed-point residual EP stops on.
    """
    return float(max(np.max(np.abs(tau - tau_old) / (1.0 + np.abs(tau_old))),
                     np.max(np.abs(nu - nu_old) / (1.0 + np.abs(nu_old)))))  # fmt: skip


def ep_sweep(K: np.ndarray, y: np.ndarray, tau: np.ndarray, nu: np.ndarray, damping: float, epsilon: float,
             latent_noise: float) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    """Steps 2.1–2.2 of Algorithm 8.1 (ep-alg-ep): one sweep of sequential EP (K&G §3 steps 1–4).

    Σ and μ are recomputed from the sites (step 2.2 of the sweep before, done here at its start); then each
    site i in turn gets its cavity, tilted moments, new parameters and the rank-one update of q.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance C.
    y : ndarray (n,)
        Labels in {−1, +1}.
    tau, nu : ndarray (n,)
        The sites before the sweep.
    damping : float
        δ of step 2.1.3.
    epsilon, latent_noise : float
        The likelihood's (ε, s) (:func:`site_likelihood`).

    Returns
    -------
    tau, nu : ndarray (n,)
        The sites after the sweep.
    skipped : int
        Sites skipped (no proper cavity, or a non-finite update).
    """
    Sigma, mu, _, _ = posterior_from_sites(K, tau, nu, need_R=False)
    # Σ is symmetric, so its Fortran-ordered copy can take BLAS rank-one updates in place
    Sigma = np.asfortranarray(Sigma)
    log_epsilon = math.log(epsilon) if epsilon > 0 else -math.inf
    log_scale = math.log1p(-2.0 * epsilon)
    # (Python floats in the inner loop: numpy scalars would triple its cost)
    tau_list, nu_list, y_list = tau.tolist(), nu.tolist(), y.tolist()
    skipped = 0
    for i in range(K.shape[0]):
        sigma_ii, mu_i = float(Sigma[i, i]), float(mu[i])
        if not sigma_ii > 0:
            # q pins f_i exactly (a zero prior variance, or rounding at an extreme kernel): no cavity exists
            skipped += 1
            continue
        # K&G step 1; GPML eq 3.56: the cavity q_{−i}(f_i)
        tau_cav = 1.0 / sigma_ii - tau_list[i]
        nu_cav = mu_i / sigma_ii - nu_list[i]
        if not tau_cav > 0:
            skipped += 1
            continue
        mean_cav, var_cav = nu_cav / tau_cav, 1.0 / tau_cav
        # K&G step 2; GPML eq 3.58: moments of the tilted distribution (tilted_moments, one site)
        alpha, beta = _tilted_scalar(y_list[i], mean_cav, var_cav, log_epsilon, log_scale, latent_noise)
        denominator = 1.0 - var_cav * beta
        if not (math.isfinite(alpha) and denominator > 0):
            skipped += 1
            continue
        # K&G step 3; GPML eq 3.59: the site that matches the tilted mean and variance
        tau_new = damping * (beta / denominator) + (1.0 - damping) * tau_list[i]
        nu_new = damping * ((alpha + mean_cav * beta) / denominator) + (1.0 - damping) * nu_list[i]
        delta_tau, delta_nu = tau_new - tau_list[i], nu_new - nu_list[i]
        tau_list[i], nu_list[i] = tau_new, nu_new
        # K&G step 4 as a rank-one update (GPML Alg. 3.5): Σ ← Σ − c s sᵀ, μ ← Σ ν̃
        s = Sigma[:, i].copy()
        c = delta_tau / (1.0 + delta_tau * sigma_ii)
        Sigma = dger(-c, s, s, a=Sigma, overwrite_a=True)
        mu += (delta_nu * (1.0 - c * sigma_ii) - c * mu_i) * s
    return np.array(tau_list), np.array(nu_list), skipped


def _parallel_sweep(K, y, tau, nu, damping, epsilon, latent_noise, marginals):
    """One sweep of parallel EP: every site updated from the same q (its marginals given); returns
    (tau, nu, skipped, marginals of the new q, the damping used, the undamped relative change of the sites)."""
    var, mu = marginals
    # K&G step 1 / GPML eq 3.56 for all sites at once: the cavities of the current q
    tau_cav = 1.0 / var - tau
    nu_cav = mu / var - nu
    valid = tau_cav > 0
    safe_tau_cav = np.where(valid, tau_cav, 1.0)
    mean_cav, var_cav = nu_cav / safe_tau_cav, 1.0 / safe_tau_cav
    # K&G step 2 / GPML eq 3.58: the tilted moments of every site
    moments = tilted_moments(y, mean_cav, var_cav, epsilon=epsilon, latent_noise=latent_noise)
    denominator = 1.0 - var_cav * moments.beta
    valid &= np.isfinite(moments.alpha) & (denominator > 0)
    denominator = np.where(valid, denominator, 1.0)
    # K&G step 3 / GPML eq 3.59; invalid sites keep their values
    tau_full = np.where(valid, moments.beta / denominator, tau)
    nu_full = np.where(valid, (moments.alpha + mean_cav * moments.beta) / denominator, nu)
    # the damped step in the natural parameters; with negative site precisions (a likelihood that is not
    # log-concave) a full step can make q improper, and then the step is halved until q is proper
    for _ in range(40):
        tau_new = tau + damping * (tau_full - tau)
        nu_new = nu + damping * (nu_full - nu)
        try:
            marginals = site_marginals(K, tau_new, nu_new)
        except np.linalg.LinAlgError:
            marginals = None
        if marginals is not None and np.all(marginals[0] > 0):
            # the fixed-point residual: the undamped change of the sites
            residual = float(max(np.max(np.abs(tau_full - tau) / (1.0 + np.abs(tau))),
                                 np.max(np.abs(nu_full - nu) / (1.0 + np.abs(nu)))))  # fmt: skip
            return tau_new, nu_new, int(np.sum(~valid)), marginals, damping, residual
        damping *= 0.5
    raise FloatingPointError("parallel EP: no damped step from these sites keeps q(f) proper")


@limited_blas_threads
def _ep_result(K, y, tau, nu, epsilon, latent_noise, *, n_sweeps, converged, max_change, n_skipped, schedule):
    """Step 4 of Algorithm 8.1 (ep-alg-ep): q and log Z_EP from the final sites, as an :class:`EPResult`."""
    posterior = posterior_from_sites(K, tau, nu)
    Sigma, mu, R, log_det = posterior
    with np.errstate(divide="ignore", invalid="ignore"):
        log_evidence, log_Z, tau_cav, nu_cav = ep_log_evidence(
            K, y, tau, nu, epsilon=epsilon, latent_noise=latent_noise, posterior=posterior
        )
    if not np.isfinite(log_evidence):
        # e.g. a point whose posterior variance is exactly zero has no cavity; say so rather than return NaN
        raise FloatingPointError(
            "EP: the evidence is not finite at these sites (a point with zero posterior variance: a zero prior "
            "variance, or a kernel at an extreme of its parameters?)"
        )
    # a = C⁻¹μ = ν̃ − T̃μ (from Σ⁻¹μ = ν̃); K&G eq 11 writes μ = C diag(y) α
    a = nu - tau * mu
    return EPResult(
        tau=tau,
        nu=nu,
        mu=mu,
        Sigma=Sigma,
        a=a,
        R=R,
        log_evidence=log_evidence,
        log_Z=log_Z,
        mean_cav=nu_cav / tau_cav,
        var_cav=1.0 / tau_cav,
        epsilon=epsilon,
        latent_noise=latent_noise,
        n_sweeps=n_sweeps,
        converged=converged,
        max_change=max_change,
        n_skipped=n_skipped,
        log_det=log_det,
        schedule=schedule,
    )


def ep_core(K: np.ndarray, y: np.ndarray, likelihood: ProbitLikelihood | LabelNoiseLikelihood, *,
            damping: float = 1.0, tol: float = 1e-6, max_sweeps: int = 100) -> EPResult:  # fmt: skip
    """Algorithm 8.1 (ep-alg-ep), step for step: sequential EP for binary GP classification.

    The plain core of :func:`expectation_propagation`, which checks the arguments, may start from given
    sites, offers the parallel schedule (with adaptive damping) and warns when step 3 is not met; this
    function trusts its arguments and does none of that. Both run :func:`ep_sweep` and :func:`site_change`,
    so that on the sequential schedule from zero sites they return the same result
    (``tests/package/test_ep.py``).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance C (K&G's latent noise on the diagonal).
    y : ndarray (n,)
        Labels in {−1, +1}.
    likelihood : ProbitLikelihood or LabelNoiseLikelihood
    damping, tol, max_sweeps
        δ, the tolerance of step 3 and the most sweeps.

    Returns
    -------
    EPResult

    References: [KG03] §3; [GPML] Algorithm 3.5.
    """
    epsilon, latent_noise = site_likelihood(likelihood)  # the (ε, s) of the likelihood family
    tau, nu = np.zeros(len(y)), np.zeros(len(y))  # step 1: K&G v_i = ∞, m_i = 0, so q = the prior
    n_skipped, converged = 0, False
    for sweep in range(1, max_sweeps + 1):  # step 2
        tau_old, nu_old = tau, nu
        tau, nu, skipped = ep_sweep(K, y, tau, nu, damping, epsilon, latent_noise)  # steps 2.1–2.2
        n_skipped += skipped
        max_change = site_change(tau_old, nu_old, tau, nu)
        if max_change <= tol:  # step 3
            converged = True
            break
    # step 4: q and log Z_EP from the sites
    return _ep_result(K, y, tau, nu, epsilon, latent_noise, n_sweeps=sweep, converged=converged,
                      max_change=max_change, n_skipped=n_skipped, schedule="sequential")  # fmt: skip


def expectation_propagation(
    K: ArrayLike,
    y: ArrayLike,
    *,
    likelihood: ProbitLikelihood | LabelNoiseLikelihood | None = None,
    tau: ArrayLike | None = None,
    nu: ArrayLike | None = None,
    schedule: str = "sequential",
    damping: float = 1.0,
    tol: float = 1e-6,
    max_sweeps: int = 100,
    warn: bool = True,
) -> EPResult:
    r"""EP for binary GP classification, sequential (K&G §3 steps 1–4; GPML Algorithm 3.5) or parallel.

    ``schedule="sequential"`` (K&G) updates the sites one at a time, each by moment matching and a rank-one
    update of Σ; ``"parallel"`` ([Minka01], [vGerven10]) updates all from the same q (same fixed points).
    Both are derived in the book's EP chapter (book/ep.ipynb). EP stops when no site parameter changed by
    more than ``tol`` × (1 + its size) in a sweep (:func:`site_change`); otherwise, after ``max_sweeps``, a
    :class:`ConvergenceWarning` names the sweep count.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance C (K&G eq 10; their latent noise v₂ on the diagonal).
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    likelihood : ProbitLikelihood or LabelNoiseLikelihood, default ProbitLikelihood()
    tau, nu : ndarray (n,), optional
        Initial sites (a warm start); default 0, i.e. q = prior (K&G: v_i = ∞).
    schedule : {"sequential", "parallel"}
        One site at a time (K&G's box, the default here) or all from one q (``EPGPC``'s default; same fixed points).
    damping : float in (0, 1]
        δ in τ̃_i ← δ τ̃_i^new + (1-δ) τ̃_i^old (so ν̃_i); 1 is plain EP. The parallel schedule damps more (×0.7,
        down to 0.05) when a sweep's change grows, and halves a step that would make q improper.
    tol, max_sweeps : float, int
        The convergence tolerance on the relative site change, and the sweeps before giving up.
    warn : bool
        Issue the non-convergence warning (``False`` inside optimisers that check ``converged``).

    Returns
    -------
    EPResult
    """
    K, y, likelihood, tau, nu = _checked_ep_inputs(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps)
    return _expectation_propagation(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps, warn)


def _checked_ep_inputs(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps):
    """The arguments of :func:`expectation_propagation`, checked once: ``(K, y, likelihood, tau, nu)``."""
    likelihood = ProbitLikelihood() if likelihood is None else likelihood
    site_likelihood(likelihood)  # raises for a likelihood EP has no sites for
    K = check_covariance(K, "K")
    y = check_binary_labels(y, "y", coding="pm1", length=K.shape[0])
    check_choice(schedule, "schedule", ("sequential", "parallel"))
    check_probability(damping, "damping", open_low=True)
    check_positive(tol, "tol")
    check_positive_int(max_sweeps, "max_sweeps")
    tau = None if tau is None else check_vector(tau, "tau", length=K.shape[0])
    nu = None if nu is None else check_vector(nu, "nu", length=K.shape[0])
    return K, y, likelihood, tau, nu


def _expectation_propagation(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps, warn):
    """:func:`expectation_propagation` for checked arguments (:func:`_checked_ep_inputs`)."""
    epsilon, latent_noise = site_likelihood(likelihood)
    n = K.shape[0]
    # K&G initialisation v_i = ∞, m_i = 0: q is the prior (or the warm start's sites)
    tau = np.zeros(n) if tau is None else np.array(tau, dtype=float)
    nu = np.zeros(n) if nu is None else np.array(nu, dtype=float)
    n_skipped, converged, max_change = 0, False, np.inf
    # the parallel schedule carries the marginals of q from one sweep to the next
    marginals = site_marginals(K, tau, nu) if schedule == "parallel" else None
    largest_damping = damping
    for sweep in range(1, int(max_sweeps) + 1):
        tau_before, nu_before, change_before = tau, nu, max_change
        if schedule == "parallel":
            tau, nu, skipped, marginals, damping, max_change = _parallel_sweep(
                K, y, tau, nu, damping, epsilon, latent_noise, marginals
            )
        else:
            tau, nu, skipped = ep_sweep(K, y, tau, nu, damping, epsilon, latent_noise)  # Algorithm 8.1 step 2
            max_change = site_change(tau_before, nu_before, tau, nu)  # Algorithm 8.1 step 3
        n_skipped += skipped
        if max_change <= tol:
            converged = True
            break
        if schedule == "parallel":
            # the parallel updates overshoot (oscillation) when the residual grows: damp them more; when it
            # shrinks, relax the damping back towards the requested one. Damping does not move the fixed points.
            if max_change > change_before:
                damping = max(0.7 * damping, 0.05)
            else:
                damping = min(damping / 0.9, largest_damping)
    if not converged and warn:
        warnings.warn(
            f"EP ({schedule}) did not converge in {sweep} sweeps: the largest relative site change in the last "
            f"sweep was {max_change:.3g} (tol {tol:g}); try damping < 1 or more sweeps",
            ConvergenceWarning,
            stacklevel=2,
        )
    return _ep_result(K, y, tau, nu, epsilon, latent_noise, n_sweeps=sweep, converged=converged,
                      max_change=max_change, n_skipped=n_skipped, schedule=schedule)  # fmt: skip


# ===================================================================== gradients of the EP evidence
def ep_evidence_gradient(
    result: EPResult, *, dK: ArrayLike | None = None, kernel: SEKernel | None = None, X: ArrayLike | None = None
) -> np.ndarray:
    r"""Gradient of log Z_EP in the kernel's log-parameters at the EP fixed point (GPML eq 5.27).

    At a fixed point the evidence is stationary in the site parameters, so only the prior moves:

        (∂log Z_EP/∂θ_j) = ½ aᵀ(∂C/∂θ_j)a - ½ tr(R (∂C/∂θ_j)),
        a = C⁻¹μ, R = C⁻¹ - C⁻¹ΣC⁻¹.

    This is also K&G's eq 14, the gradient of their bound ℱ at q = q_EP.

    Parameters
    ----------
    result : EPResult
        EP at the kernel's parameters (its ``a`` and ``R``).
    dK : array_like (P, n, n), optional
        The stack ∂C/∂θ_j, ``kernel.gradients(X)``.
    kernel : SEKernel, optional
    X : array_like (n, D), optional
        Instead of ``dK``: the kernel and training inputs (then :meth:`SEKernel.gradient_traces`
        avoids forming the stack).

    Returns
    -------
    ndarray (P,)
    """
    # GPML eq 5.27: ½ tr((a aᵀ − R) ∂C/∂θ_j)
    Q = np.outer(result.a, result.a) - result.R
    if dK is None:
        if kernel is None or X is None:
            raise ValueError("pass dK, or kernel and X")
        return 0.5 * kernel.gradient_traces(X, 0.5 * (Q + Q.T))
    dK = check_covariance_derivatives(dK, result.Sigma.shape[0])
    return 0.5 * np.einsum("ij,pij->p", Q, dK)


def ep_epsilon_gradient(result: EPResult, y: ArrayLike) -> float:
    r"""∂log Z_EP/∂ε at the EP fixed point: ∑_i (1 - 2Φ(z_i))/Z_i.

    Like the kernel gradient, only the explicit dependence counts at a fixed point: the
    derivative of ∑_i log Z_i with the cavities held fixed.

    Parameters
    ----------
    result : EPResult
        EP on the labels ``y`` (its cavities and ``log_Z`` are used).
    y : array_like (n,)
        Labels in {−1, +1} (or {0, 1}).

    Returns
    -------
    float
    """
    y = check_binary_labels(y, "y", coding="pm1").astype(float)
    z = y * result.mean_cav / np.sqrt(result.latent_noise + result.var_cav)
    # ∂Z_i/∂ε = 1 − 2Φ(z_i)
    return float(np.sum((1.0 - 2.0 * ndtr(z)) * np.exp(-result.log_Z)))


# ===================================================================== predictions
@dataclass(frozen=True)
class EPPrediction:
    """Latent predictive mean and variance at test inputs, and P(y = +1) (GPML Alg. 3.6)."""

    mean: np.ndarray
    var: np.ndarray
    proba: np.ndarray


def ep_predict(result: EPResult, K_star: ArrayLike, k_star_star: ArrayLike) -> EPPrediction:
    r"""Predictions from the EP posterior (GPML Alg. 3.6; K&G §3 last paragraph).

        μ_∗ = k_∗ᵀa, σ_∗² = k_∗∗ - k_∗ᵀR k_∗,
        p(y_∗=+1) = ε + (1-2ε)Φ(μ_∗/√(s + σ_∗²)).

    Rounding can leave σ_∗² a hair below zero when a test input repeats a training
    input; it is clipped at the smallest positive float.

    Parameters
    ----------
    result : EPResult
    K_star : array_like (n, m)
        Cross covariance between the training and the m test inputs.
    k_star_star : array_like (m,)
        Prior variances of the test latents (with the latent noise v_2, which belongs to the
        test latent too).

    Returns
    -------
    EPPrediction
    """
    K_star = np.asarray(K_star, dtype=float)
    mean = K_star.T @ result.a
    # GPML Alg. 3.6: V = L\(S̃½ k*) in the B form; here with R = C⁻¹ − C⁻¹ΣC⁻¹
    var = np.asarray(k_star_star, dtype=float) - np.sum(K_star * (result.R @ K_star), axis=0)
    var = np.maximum(var, np.finfo(float).tiny)
    proba = LabelNoiseLikelihood(result.epsilon, result.latent_noise).predict(mean, var)
    return EPPrediction(mean, var, proba)


def expectation_propagation_with_fallback(K: ArrayLike, y: ArrayLike, *,
                                          likelihood: ProbitLikelihood | LabelNoiseLikelihood,
                                          tau: ArrayLike | None = None, nu: ArrayLike | None = None,
                                          schedule: str = "sequential", damping: float = 1.0, tol: float = 1e-6,
                                          max_sweeps: int = 200, min_damping: float = 0.1,
                                          ) -> tuple[EPResult, float]:  # fmt: skip
    """EP warm-started from (tau, nu); if it fails to converge (or ends with an improper cavity),
    restart from the prior, sequentially, with the damping halved, down to ``min_damping``.

    Used inside the hyperparameter optimisers, where the label-noise likelihood with a nearly hard
    step can make undamped EP oscillate. The first attempt, with the given ``schedule``, gets at most
    50 sweeps when warm-started (a healthy warm start needs a handful); the restarts are sequential,
    because with negative site precisions (a likelihood that is not log-concave) parallel EP can
    oscillate where sequential EP with damping converges.

    Parameters
    ----------
    K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps
        As in :func:`expectation_propagation`.
    min_damping : float
        The smallest damping tried.

    Returns
    -------
    result : EPResult
    damping : float
        The damping of the attempt returned (the schedule is ``result``'s: see ``result.schedule``).
        Only the last attempt's non-convergence warning is let through.
    """
    K, y, likelihood, tau, nu = _checked_ep_inputs(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps)
    check_probability(min_damping, "min_damping", open_low=True)
    return trusted_ep_with_fallback(K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps, min_damping)


def trusted_ep_with_fallback(K: np.ndarray, y: np.ndarray, likelihood: ProbitLikelihood | LabelNoiseLikelihood,
                             tau: np.ndarray | None, nu: np.ndarray | None, schedule: str, damping: float, tol: float,
                             max_sweeps: int, min_damping: float = 0.1) -> tuple[EPResult, float]:  # fmt: skip
    """:func:`expectation_propagation_with_fallback` on arguments its caller has checked (K a finite symmetric
    float matrix, y in {−1, +1}, the options valid): what the learners run at every E-step or evaluation, so
    that the data are checked once, by the learner's public entry.

    Parameters
    ----------
    K, y, likelihood, tau, nu, schedule, damping, tol, max_sweeps, min_damping
        As in :func:`expectation_propagation_with_fallback`, trusted.

    Returns
    -------
    result : EPResult
    damping : float
    """
    attempt_damping = damping
    sweeps = min(int(max_sweeps), 50) if tau is not None else int(max_sweeps)
    while True:
        last = attempt_damping / 2.0 < min_damping and schedule == "sequential"
        try:
            result = _expectation_propagation(K, y, likelihood, tau, nu, schedule, attempt_damping, tol, sweeps, last)
            if result.converged or last:
                return result, attempt_damping
        except (FloatingPointError, np.linalg.LinAlgError):
            if last:
                raise
        tau = nu = None
        # the first restart keeps the damping and changes the schedule to sequential; later ones halve it
        attempt_damping = attempt_damping if schedule == "parallel" else attempt_damping / 2.0
        schedule = "sequential"
        sweeps = int(max_sweeps)
