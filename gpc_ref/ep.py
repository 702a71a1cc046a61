r"""Expectation propagation (EP) for binary GP classification, and the EM-EP algorithm of Kim & Ghahramani.

EP replaces every likelihood term :math:`p(y_i|f_i)` by an unnormalised Gaussian *site*
:math:`\tilde t_i(f_i) \propto \exp(\tilde\nu_i f_i - \tfrac12\tilde\tau_i f_i^2)` chosen so that the
Gaussian :math:`q(\mathbf f) \propto N(\mathbf f|0, C)\prod_i \tilde t_i(f_i)` has, at every point, the
mean and variance of the *tilted* distribution :math:`q_{\setminus i}(f_i)\,p(y_i|f_i)` (K&G eq 8).
The sites are refined one at a time (sequential sweeps) with a rank-one update of the posterior
covariance, in the numerically stable form of GPML Algorithm 3.5 (:math:`B = I + \tilde S^{1/2} C
\tilde S^{1/2}`, never :math:`C^{-1}`); when a non-log-concave likelihood produces negative site
precisions (which :math:`\tilde S^{1/2}` cannot hold) the posterior is recomputed from
:math:`M = I + L_C^T\tilde T L_C` instead.

One likelihood family covers both models of the chapter:

.. math:: p(y|f) = \epsilon + (1-2\epsilon)\,\Phi\!\left(\frac{y f}{\sqrt s}\right),

- ``ProbitLikelihood()``: :math:`\epsilon = 0`, :math:`s = 1` (K&G eq 4, GPML §3.6);
- ``LabelNoiseLikelihood(epsilon, 0)``: K&G's eq 9, :math:`\epsilon + (1-2\epsilon)H(yf)`, with their
  latent noise :math:`v_2` in the prior covariance (the kernel's learnable ``jitter``, K&G eq 10).
  Integrating that noise out turns :math:`H` into :math:`\Phi(yf/\sqrt{v_2})`: the two views give
  the same EP fixed point and evidence (tested), so ``LabelNoiseLikelihood(epsilon, v)`` with
  :math:`s = v > 0` is accepted too.

Notation (book symbol ← code name; Kim & Ghahramani's symbol in brackets). The docstrings write
:math:`C` for the prior covariance, as K&G do; the chapter writes :math:`K`.

- :math:`y_i \in \{-1,+1\}` ← ``y``: labels (K&G :math:`y_i`).
- :math:`C` (book :math:`K`) ← ``K``: prior covariance of :math:`\mathbf f`, with the latent noise
  :math:`v_2` on its diagonal (K&G :math:`\mathbf C`, eq 10).
- :math:`\tilde\tau_i, \tilde\nu_i` ← ``tau, nu``: site precision and precision times mean
  (K&G :math:`1/v_i` and :math:`m_i/v_i`); :math:`\tilde T = \mathrm{diag}(\tilde{\boldsymbol\tau})` is K&G's :math:`\Lambda^{-1}`.
- :math:`\Sigma, \boldsymbol\mu` ← ``Sigma, mu``: EP posterior covariance and mean (K&G :math:`\mathbf A`, :math:`\mathbf h`).
- :math:`\mu_{-i}, \sigma^2_{-i}` ← ``mean_cav, var_cav``: cavity mean and variance
  (K&G :math:`h_i^{\setminus i}`, :math:`\lambda_i`); :math:`\tau_{-i}, \nu_{-i}` ← ``tau_cav, nu_cav``.
- :math:`Z_i` ← ``log_Z`` (its log): normaliser of the tilted distribution (K&G :math:`Z_i`).
- :math:`\alpha_i` ← ``alpha``: :math:`\partial\log Z_i/\partial\mu_{-i}` (K&G's :math:`\alpha_i` times :math:`y_i`);
  :math:`\beta_i` ← ``beta``: :math:`-\partial^2\log Z_i/\partial\mu_{-i}^2`.
- :math:`\mathbf a` ← ``a``: :math:`C^{-1}\boldsymbol\mu`; at the fixed point :math:`a_i = \alpha_i`
  (K&G eq 11: :math:`\boldsymbol\mu = C\,\mathrm{diag}(\mathbf y)\boldsymbol\alpha`).
- :math:`R` ← ``R``: :math:`C^{-1} - C^{-1}\Sigma C^{-1} = (C + \tilde T^{-1})^{-1}`.
- :math:`\epsilon` ← ``epsilon``: labelling-error rate; :math:`s` ← ``latent_noise``: noise variance
  inside the likelihood (0 for K&G's step, whose noise :math:`v_2` sits in :math:`C`).
- :math:`\log Z_{EP}` ← ``log_evidence``: EP approximation to the log evidence (K&G eq 12).
- :math:`\mathcal F` ← ``F``: K&G's variational lower bound (eqs 13, 15); :math:`\mathcal F_{\Theta_{cov}}` ←
  ``F_cov``, its prior term and the M-step objective (eq 16).

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
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.linalg.blas import dger
from scipy.special import expit, log_ndtr, ndtr

from .kernels import SEKernel
from .likelihoods import LabelNoiseLikelihood, ProbitLikelihood, gauss_hermite_expectation
from .linalg import JitterWarning, cho_solve, cholesky, solve_lower
from .validation import check_binary_labels, check_matrix, check_positive, check_same_length, check_vector

__all__ = [
    "EPConvergenceWarning",
    "TiltedMoments",
    "EPResult",
    "EPPrediction",
    "VariationalBound",
    "EMEPResult",
    "EvidenceFitResult",
    "site_likelihood",
    "tilted_moments",
    "posterior_from_sites",
    "ep_log_evidence",
    "expectation_propagation",
    "gradient_traces",
    "ep_evidence_gradient",
    "ep_epsilon_gradient",
    "ep_predict",
    "variational_bound",
    "m_step_objective",
    "epsilon_from_errors",
    "epsilon_from_expected_errors",
    "em_ep",
    "maximize_ep_evidence",
]

_LOG_2PI = np.log(2.0 * np.pi)


class EPConvergenceWarning(UserWarning):
    """EP (or EM-EP) stopped at its iteration limit before its convergence test was met."""


# ===================================================================== the site likelihood
def site_likelihood(likelihood):
    r"""Return ``(epsilon, s)`` of :math:`p(y|f) = \epsilon + (1-2\epsilon)\Phi(yf/\sqrt s)`.

    ``ProbitLikelihood()`` is :math:`(0, 1)`; ``LabelNoiseLikelihood(epsilon, latent_noise)`` is
    :math:`(\epsilon, \text{latent\_noise})`, where ``latent_noise = 0`` is K&G's step :math:`H(yf)`.
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

    ``log_Z`` = :math:`\log Z_i`, ``alpha`` = :math:`\partial \log Z_i/\partial\mu_{-i}`,
    ``beta`` = :math:`-\partial^2\log Z_i/\partial\mu_{-i}^2`. The tilted mean and variance are
    :math:`\mu_{-i} + \sigma_{-i}^2\alpha_i` and :math:`\sigma_{-i}^2 - \sigma_{-i}^4\beta_i`.
    """

    log_Z: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


def tilted_moments(y, mean_cav, var_cav, epsilon=0.0, latent_noise=1.0):
    r"""Moments of :math:`p(y|f)\,N(f|\mu_{-i},\sigma^2_{-i})` for :math:`p(y|f)=\epsilon+(1-2\epsilon)\Phi(yf/\sqrt s)`.

    With :math:`\kappa = \sqrt{s + \sigma^2_{-i}}`, :math:`z = y\mu_{-i}/\kappa` and
    :math:`r = (1-2\epsilon)\phi(z)/Z_i`,

    .. math:: Z_i = \epsilon + (1-2\epsilon)\Phi(z), \qquad
              \alpha_i = \frac{y\,r}{\kappa}, \qquad \beta_i = \frac{r\,(z + r)}{\kappa^2}.

    This is K&G's step 2 (with :math:`s = 0`; their :math:`\alpha_i` is our :math:`y_i\alpha_i`)
    and GPML eqs 3.58 (with :math:`\epsilon = 0`, :math:`s = 1`). All of it is computed in log
    space, so a cavity that predicts the wrong label with :math:`z = -40` still gives finite
    numbers. For :math:`\epsilon > 0`, :math:`\beta_i` is negative when :math:`z` is far below 0:
    the tilted distribution is then *wider* than the cavity.
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
def posterior_from_sites(K, tau, nu, need_R=True):
    r"""Posterior :math:`q(\mathbf f) = N(\boldsymbol\mu, \Sigma)`, :math:`\Sigma = (C^{-1} + \tilde T)^{-1}`,
    :math:`\boldsymbol\mu = \Sigma\tilde{\boldsymbol\nu}`, without inverting :math:`C`.

    Returns ``(Sigma, mu, R, log_det)`` with :math:`R = C^{-1} - C^{-1}\Sigma C^{-1}` (``None`` unless
    ``need_R``) and ``log_det`` = :math:`\log|I + \tilde T C|`.

    - All :math:`\tilde\tau_i \ge 0` (always so for the probit and for :math:`\epsilon = 0`):
      GPML Alg. 3.5, :math:`B = I + \tilde S^{1/2}C\tilde S^{1/2} = LL^T`,
      :math:`\Sigma = C - V^TV` with :math:`V = L^{-1}\tilde S^{1/2}C`, :math:`R = \tilde S^{1/2}B^{-1}\tilde S^{1/2}`.
      :math:`B` has eigenvalues :math:`\ge 1`, and :math:`C` itself is never factorised.
    - Some :math:`\tilde\tau_i < 0` (labelling noise, :math:`\epsilon > 0`): with :math:`C = L_CL_C^T`,
      :math:`M = I + L_C^T\tilde T L_C = L_ML_M^T` is positive definite exactly when :math:`q` is a proper
      Gaussian; :math:`\Sigma = W^TW`, :math:`W = L_M^{-1}L_C^T`, and :math:`R = \tilde T - \tilde T\Sigma\tilde T`.
      If :math:`M` is not positive definite, the factorisation raises ``LinAlgError``.
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


def ep_log_evidence(K, y, tau, nu, epsilon=0.0, latent_noise=1.0, posterior=None):
    r"""EP approximation to :math:`\log p(\mathbf y|X,\theta)` (K&G eq 12) in a stable form.

    With the cavities taken from the current posterior,

    .. math:: \log Z_{EP} = \sum_i\Bigl[\log Z_i + \tfrac12\log\bigl(1 + \tilde\tau_i/\tau_{-i}\bigr)
              + \tfrac12\tau_{-i}\mu_{-i}(\mu_{-i} - \mu_i)\Bigr] - \tfrac12\log|I + \tilde TC|,

    which is K&G's :math:`\log\bigl(|\Lambda|^{1/2}|C+\Lambda|^{-1/2}e^{B/2}\prod_i s_i\bigr)` rewritten in the
    site natural parameters (GPML eq 3.65 in another arrangement): no infinite site variance
    :math:`v_i = 1/\tilde\tau_i` appears, and negative :math:`\tilde\tau_i` are allowed.
    Returns ``(log_evidence, log_Z, tau_cav, nu_cav)``.
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
    log_Z = tilted_moments(y, mean_cav, var_cav, epsilon, latent_noise).log_Z
    # K&G eq 12 with s_i written out (see the docstring); GPML eq 3.65
    terms = log_Z + 0.5 * np.log1p(tau / tau_cav) + 0.5 * tau_cav * mean_cav * (mean_cav - mu)
    return float(np.sum(terms) - 0.5 * log_det), log_Z, tau_cav, nu_cav


# ===================================================================== EP itself
@dataclass(frozen=True)
class EPResult:
    r"""The EP approximation :math:`q(\mathbf f) = N(\boldsymbol\mu, \Sigma)` and its sites.

    Attributes
    ----------
    tau, nu : ndarray (n,)
        Site natural parameters :math:`\tilde\tau_i, \tilde\nu_i` (K&G :math:`1/v_i`, :math:`m_i/v_i`).
    mu, Sigma : ndarray
        Posterior mean and covariance (K&G :math:`\mathbf h`, :math:`\mathbf A`).
    a : ndarray (n,)
        :math:`C^{-1}\boldsymbol\mu = \tilde{\boldsymbol\nu} - \tilde T\boldsymbol\mu`, the weights of the
        predictive mean :math:`\mathbf k_*^T\mathbf a` (K&G's :math:`\mathrm{diag}(\mathbf y)\boldsymbol\alpha`).
    R : ndarray (n, n)
        :math:`C^{-1} - C^{-1}\Sigma C^{-1}`, for predictive variances and the evidence gradient.
    log_evidence : float
        :math:`\log Z_{EP}` (K&G eq 12).
    log_Z, mean_cav, var_cav : ndarray (n,)
        Tilted normalisers and the cavities at the returned posterior.
    epsilon, latent_noise : float
        The likelihood :math:`\epsilon + (1-2\epsilon)\Phi(yf/\sqrt s)` that was used.
    n_sweeps : int
        Sweeps through the sites that were run.
    converged : bool
    max_change : float
        Largest relative change of a site parameter in the last sweep.
    n_skipped : int
        Site updates skipped because a cavity had non-positive precision.
    log_det : float
        :math:`\log|I + \tilde TC|`, so that :math:`\log|\Sigma| = \log|C| - \log|I + \tilde TC|`.
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


def _check_ep_inputs(K, y, damping, tol, max_sweeps):
    K = check_matrix(K, "K")
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square covariance matrix; got shape {K.shape}")
    y = check_binary_labels(y, "y", coding="pm1")
    if y.shape[0] != K.shape[0]:
        raise ValueError(f"y has {y.shape[0]} labels but K is {K.shape[0]}×{K.shape[0]}")
    if not 0.0 < float(damping) <= 1.0:
        raise ValueError(f"damping must lie in (0, 1]; got {damping}")
    check_positive(tol, "tol")
    if int(max_sweeps) < 1:
        raise ValueError(f"max_sweeps must be a positive integer; got {max_sweeps}")
    return K, y.astype(float)


def expectation_propagation(K, y, likelihood=None, tau=None, nu=None, damping=1.0, tol=1e-6,
                            max_sweeps=100, warn=True):
    r"""Sequential EP for binary GP classification (K&G §3 steps 1–4; GPML Algorithm 3.5).

    Each sweep visits the sites :math:`i = 1..n` in order and for each

    1. forms the cavity :math:`\tau_{-i} = \sigma_i^{-2} - \tilde\tau_i`,
       :math:`\nu_{-i} = \sigma_i^{-2}\mu_i - \tilde\nu_i` (K&G step 1, GPML eq 3.56);
    2. computes :math:`\log Z_i, \alpha_i, \beta_i` of the tilted distribution (K&G step 2,
       :func:`tilted_moments`);
    3. sets the site so that :math:`q` matches the tilted mean and variance (K&G step 3, GPML eq 3.59):
       :math:`\tilde\tau_i = \beta_i/(1 - \sigma_{-i}^2\beta_i)`,
       :math:`\tilde\nu_i = (\alpha_i + \mu_{-i}\beta_i)/(1 - \sigma_{-i}^2\beta_i)`,
       optionally damped, :math:`\tilde\tau_i \leftarrow \delta\,\tilde\tau_i^{new} + (1-\delta)\tilde\tau_i^{old}`;
    4. updates the posterior by the rank-one formula
       :math:`\Sigma \leftarrow \Sigma - \frac{\Delta\tilde\tau_i}{1 + \Delta\tilde\tau_i\Sigma_{ii}}\mathbf s_i\mathbf s_i^T`
       (K&G step 4 without re-inverting :math:`C^{-1} + \Lambda^{-1}`; GPML Alg. 3.5).

    After every sweep :math:`\Sigma, \boldsymbol\mu` are recomputed from the sites
    (:func:`posterior_from_sites`) to stop rounding errors accumulating. EP stops when no site
    parameter changed by more than ``tol`` × (1 + its size) in a sweep; otherwise, after
    ``max_sweeps``, an :class:`EPConvergenceWarning` names the sweep count.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance :math:`C` (K&G eq 10; their latent noise :math:`v_2` on the diagonal).
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    likelihood : ProbitLikelihood or LabelNoiseLikelihood
        Default ``ProbitLikelihood()``.
    tau, nu : ndarray (n,), optional
        Initial sites (a warm start); default 0, i.e. :math:`q` = prior (K&G: :math:`v_i = \infty`).
    damping : float in (0, 1]
        1 is plain EP; smaller values help when negative site precisions make EP oscillate.
    tol, max_sweeps : convergence test and limit.
    warn : bool
        Issue the non-convergence warning (``False`` inside optimisers that check ``converged``).

    Returns
    -------
    EPResult
    """
    likelihood = ProbitLikelihood() if likelihood is None else likelihood
    epsilon, latent_noise = site_likelihood(likelihood)
    K, y = _check_ep_inputs(K, y, damping, tol, max_sweeps)
    n = K.shape[0]
    tau = np.zeros(n) if tau is None else check_vector(tau, "tau", length=n).copy()
    nu = np.zeros(n) if nu is None else check_vector(nu, "nu", length=n).copy()
    # K&G initialisation v_i = ∞, m_i = 0: q is the prior; a warm start recomputes q from the sites
    Sigma, mu, _, _ = posterior_from_sites(K, tau, nu, need_R=False)
    n_skipped = 0
    converged = False
    max_change = np.inf
    log_epsilon = math.log(epsilon) if epsilon > 0 else -math.inf
    log_scale = math.log1p(-2.0 * epsilon)
    for sweep in range(1, int(max_sweeps) + 1):
        tau_before, nu_before = tau.copy(), nu.copy()
        # Σ is symmetric, so its Fortran-ordered copy can take BLAS rank-one updates in place
        Sigma = np.asfortranarray(Sigma)
        # (Python floats in the inner loop: numpy scalars would triple its cost)
        tau_list, nu_list, y_list = tau.tolist(), nu.tolist(), y.tolist()
        for i in range(n):
            sigma_ii, mu_i = float(Sigma[i, i]), float(mu[i])
            # K&G step 1; GPML eq 3.56: the cavity q_{−i}(f_i)
            tau_cav = 1.0 / sigma_ii - tau_list[i]
            nu_cav = mu_i / sigma_ii - nu_list[i]
            if not tau_cav > 0:
                n_skipped += 1
                continue
            mean_cav, var_cav = nu_cav / tau_cav, 1.0 / tau_cav
            # K&G step 2; GPML eq 3.58: moments of the tilted distribution (tilted_moments, one site)
            alpha, beta = _tilted_scalar(y_list[i], mean_cav, var_cav, log_epsilon, log_scale, latent_noise)
            denominator = 1.0 - var_cav * beta
            if not (math.isfinite(alpha) and denominator > 0):
                n_skipped += 1
                continue
            # K&G step 3; GPML eq 3.59: the site that matches the tilted mean and variance
            tau_new = beta / denominator
            nu_new = (alpha + mean_cav * beta) / denominator
            tau_new = damping * tau_new + (1.0 - damping) * tau_list[i]
            nu_new = damping * nu_new + (1.0 - damping) * nu_list[i]
            delta_tau, delta_nu = tau_new - tau_list[i], nu_new - nu_list[i]
            tau_list[i], nu_list[i] = tau_new, nu_new
            # K&G step 4 as a rank-one update (GPML Alg. 3.5): Σ ← Σ − c s sᵀ, μ ← Σ ν̃
            s = Sigma[:, i].copy()
            c = delta_tau / (1.0 + delta_tau * sigma_ii)
            Sigma = dger(-c, s, s, a=Sigma, overwrite_a=True)
            mu += (delta_nu * (1.0 - c * sigma_ii) - c * mu_i) * s
        tau, nu = np.array(tau_list), np.array(nu_list)
        # recompute q from the sites (GPML Alg. 3.5, end of sweep)
        Sigma, mu, _, _ = posterior_from_sites(K, tau, nu, need_R=False)
        max_change = float(max(np.max(np.abs(tau - tau_before) / (1.0 + np.abs(tau_before))),
                               np.max(np.abs(nu - nu_before) / (1.0 + np.abs(nu_before)))))
        if max_change <= tol:
            converged = True
            break
    if not converged and warn:
        warnings.warn(
            f"EP did not converge in {sweep} sweeps: the largest relative site change in the last sweep "
            f"was {max_change:.3g} (tol {tol:g}); try damping < 1 or more sweeps",
            EPConvergenceWarning,
            stacklevel=2,
        )
    posterior = posterior_from_sites(K, tau, nu)
    Sigma, mu, R, log_det = posterior
    log_evidence, log_Z, tau_cav, nu_cav = ep_log_evidence(K, y, tau, nu, epsilon, latent_noise, posterior)
    # a = C⁻¹μ = ν̃ − T̃μ (from Σ⁻¹μ = ν̃); K&G eq 11 writes μ = C diag(y) α
    a = nu - tau * mu
    return EPResult(tau=tau, nu=nu, mu=mu, Sigma=Sigma, a=a, R=R, log_evidence=log_evidence, log_Z=log_Z,
                    mean_cav=nu_cav / tau_cav, var_cav=1.0 / tau_cav, epsilon=epsilon,
                    latent_noise=latent_noise, n_sweeps=sweep, converged=converged, max_change=max_change,
                    n_skipped=n_skipped, log_det=log_det)


# ===================================================================== gradients of the EP evidence
def gradient_traces(kernel, X, Q):
    r"""All :math:`\operatorname{tr}(Q\,\partial C/\partial\theta_j)` for a symmetric ``Q``, in the order of ``kernel.theta``.

    Equal to ``np.einsum("ij,pij->p", Q, kernel.gradients(X))`` (tested) but without forming the P
    derivative matrices: with :math:`K_{se}` the squared-exponential part and :math:`G = Q\circ K_{se}`,

    - :math:`\partial/\partial\log\sigma_f^2`: :math:`\sum_{ab}G_{ab}`;
    - :math:`\partial/\partial\log\ell_d`: :math:`\sum_{ab}G_{ab}(x_{ad}-x_{bd})^2/\ell_d^2
      = 2\,(\mathbf g^T\mathbf x_d^{\circ 2} - \mathbf x_d^TG\mathbf x_d)/\ell_d^2`, :math:`\mathbf g = G\mathbf 1`
      (summed over d for a shared lengthscale);
    - bias: :math:`\sigma_b^2\sum_{ab}Q_{ab}`; jitter: :math:`\sigma_j^2\operatorname{tr}Q`.

    The cost is :math:`O(n^2D)` instead of :math:`O(n^2P)` memory and time for the stack.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    K_se = kernel.K(X) - kernel.bias
    K_se[np.diag_indices(n)] -= kernel.jitter
    G = Q * K_se
    g = G.sum(axis=1)
    per_dim = 2.0 * (g @ X**2 - np.sum(X * (G @ X), axis=0)) / np.asarray(kernel.lengthscale) ** 2
    traces = [g.sum()]
    traces += list(per_dim) if kernel.ard else [per_dim.sum()]
    if kernel.learn_bias:
        traces.append(kernel.bias * Q.sum())
    if kernel.learn_jitter:
        traces.append(kernel.jitter * np.trace(Q))
    return np.array(traces)


def ep_evidence_gradient(result, dK=None, kernel=None, X=None):
    r"""Gradient of :math:`\log Z_{EP}` in the kernel's log-parameters at the EP fixed point (GPML eq 5.27).

    At a fixed point the evidence is stationary in the site parameters, so only the prior moves:

    .. math:: \frac{\partial\log Z_{EP}}{\partial\theta_j} = \tfrac12\,\mathbf a^T\frac{\partial C}{\partial\theta_j}\mathbf a
              - \tfrac12\operatorname{tr}\Bigl(R\,\frac{\partial C}{\partial\theta_j}\Bigr),
              \qquad \mathbf a = C^{-1}\boldsymbol\mu,\; R = C^{-1} - C^{-1}\Sigma C^{-1}.

    This is also K&G's eq 14, the gradient of their bound :math:`\mathcal F` at :math:`q = q_{EP}`.
    Pass either ``dK``, the (P, n, n) stack ``kernel.gradients(X)``, or ``kernel`` and ``X`` (then
    :func:`gradient_traces` avoids forming the stack).
    """
    # GPML eq 5.27: ½ tr((a aᵀ − R) ∂C/∂θ_j)
    Q = np.outer(result.a, result.a) - result.R
    if dK is None:
        if kernel is None or X is None:
            raise ValueError("pass dK, or kernel and X")
        return 0.5 * gradient_traces(kernel, X, 0.5 * (Q + Q.T))
    dK = np.asarray(dK, dtype=float)
    if dK.ndim != 3 or dK.shape[1:] != result.Sigma.shape:
        raise ValueError(f"dK must have shape (P, {result.Sigma.shape[0]}, {result.Sigma.shape[0]}); got {dK.shape}")
    return 0.5 * np.einsum("ij,pij->p", Q, dK)


def ep_epsilon_gradient(result, y):
    r""":math:`\partial\log Z_{EP}/\partial\epsilon` at the EP fixed point: :math:`\sum_i (1 - 2\Phi(z_i))/Z_i`.

    Like the kernel gradient, only the explicit dependence counts at a fixed point: the
    derivative of :math:`\sum_i\log Z_i` with the cavities held fixed.
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


def ep_predict(result, K_star, k_star_star):
    r"""Predictions from the EP posterior (GPML Alg. 3.6; K&G §3 last paragraph).

    .. math:: \mu_* = \mathbf k_*^T\mathbf a, \qquad \sigma_*^2 = k_{**} - \mathbf k_*^TR\,\mathbf k_*,
              \qquad p(y_*=+1) = \epsilon + (1-2\epsilon)\Phi\bigl(\mu_*/\sqrt{s + \sigma_*^2}\bigr).

    ``K_star`` is the (n, m) cross covariance, ``k_star_star`` the m prior variances (with the
    latent noise :math:`v_2`, which belongs to the test latent too). Rounding can leave
    :math:`\sigma_*^2` a hair below zero when a test input repeats a training input; it is
    clipped at the smallest positive float.
    """
    K_star = np.asarray(K_star, dtype=float)
    mean = K_star.T @ result.a
    # GPML Alg. 3.6: V = L\(S̃½ k*) in the B form; here with R = C⁻¹ − C⁻¹ΣC⁻¹
    var = np.asarray(k_star_star, dtype=float) - np.sum(K_star * (result.R @ K_star), axis=0)
    var = np.maximum(var, np.finfo(float).tiny)
    proba = LabelNoiseLikelihood(result.epsilon, result.latent_noise).predict(mean, var)
    return EPPrediction(mean, var, proba)


# ===================================================================== the variational bound and EM-EP
@dataclass(frozen=True)
class VariationalBound:
    r"""K&G's bound :math:`\mathcal F = \mathcal F_\epsilon + \mathcal F_{\Theta_{cov}} + H(q) \le \log p(\mathbf y|\Theta)` (eq 15)."""

    F: float
    F_epsilon: float
    F_cov: float
    entropy: float


def m_step_objective(theta, kernel, X, mu, Sigma):
    r""":math:`\mathcal F_{\Theta_{cov}}` (K&G eq 16) and its gradient (eq 17) for fixed :math:`q = N(\boldsymbol\mu, \Sigma)`.

    .. math:: \mathcal F_{\Theta_{cov}} = E_q[\log N(\mathbf f|0, C_\theta)]
              = -\tfrac12\log|2\pi C| - \tfrac12\boldsymbol\mu^TC^{-1}\boldsymbol\mu - \tfrac12\operatorname{tr}(C^{-1}\Sigma),

    .. math:: \frac{\partial\mathcal F_{\Theta_{cov}}}{\partial\theta_j} = \tfrac12\operatorname{tr}\Bigl(
              \bigl(C^{-1}(\Sigma + \boldsymbol\mu\boldsymbol\mu^T)C^{-1} - C^{-1}\bigr)\frac{\partial C}{\partial\theta_j}\Bigr).

    The dense :math:`C^{-1}` needed for the traces is formed by Cholesky solves. Raises
    ``numpy.linalg.LinAlgError`` if :math:`C_\theta` is not numerically positive definite (the
    optimiser then backs off).
    """
    k = kernel.with_theta(theta)
    C = k.K(X)
    n = C.shape[0]
    with warnings.catch_warnings():
        # an escalated jitter would change the model: treat it as "not positive definite"
        warnings.simplefilter("error", JitterWarning)
        try:
            factor = cholesky(C, name="C")
        except JitterWarning as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
    C_inv = factor.solve(np.eye(n))
    # E_q[f fᵀ] = Σ + μμᵀ; C⁻¹ E_q[f fᵀ]
    P = C_inv @ (Sigma + np.outer(mu, mu))
    # K&G eq 16: −½ log|2πC| − ½ μᵀC⁻¹μ − ½ tr(C⁻¹Σ)
    value = -0.5 * (n * _LOG_2PI + factor.log_det) - 0.5 * np.trace(P)
    # K&G eq 17: ½ tr((C⁻¹(Σ + μμᵀ)C⁻¹ − C⁻¹) ∂C/∂θ_j)
    Q = P @ C_inv - C_inv
    gradient = 0.5 * gradient_traces(k, X, 0.5 * (Q + Q.T))
    return float(value), gradient


def _expected_log_likelihood(y, mu, var, epsilon, latent_noise):
    r""":math:`\sum_i E_{q(f_i)}[\log p(y_i|f_i)]` (K&G's :math:`\mathcal F_\epsilon`, eq 15).

    For the step (:math:`s = 0`) it is exact: :math:`P_i\log(1-\epsilon) + (1-P_i)\log\epsilon` with
    :math:`P_i = \Phi(y_i\mu_i/\sigma_i)`, which is :math:`-\infty` when :math:`\epsilon = 0`.
    For :math:`s > 0` it is computed by Gauss–Hermite quadrature.
    """
    if latent_noise == 0.0:
        log_correct = log_ndtr(y * mu / np.sqrt(var))
        log_wrong = log_ndtr(-y * mu / np.sqrt(var))
        if epsilon == 0.0:
            return -np.inf
        return float(np.sum(np.exp(log_correct) * np.log1p(-epsilon) + np.exp(log_wrong) * np.log(epsilon)))
    likelihood = LabelNoiseLikelihood(epsilon, latent_noise)
    expected = gauss_hermite_expectation(lambda f: likelihood.log_p(np.broadcast_to(y[:, None], f.shape), f),
                                         mu, var, n_points=64)
    return float(np.sum(expected))


def variational_bound(result, kernel, X, y):
    r"""The lower bound :math:`\mathcal F` of K&G eq 13/15 at :math:`q = q_{EP}` and the kernel's parameters.

    :math:`\mathcal F = E_q[\log p(\mathbf y|\mathbf f,\epsilon)] + E_q[\log p(\mathbf f|\Theta_{cov})] + H(q)`,
    with :math:`H(q) = \tfrac12\log|2\pi e\Sigma|` and :math:`\log|\Sigma| = \log|C| - \log|I + \tilde TC|`.
    By Jensen's inequality :math:`\mathcal F \le \log p(\mathbf y|\Theta)` for any :math:`q`.
    """
    y = check_binary_labels(y, "y", coding="pm1").astype(float)
    var = np.diag(result.Sigma)
    F_epsilon = _expected_log_likelihood(y, result.mu, var, result.epsilon, result.latent_noise)
    F_cov, _ = m_step_objective(kernel.theta, kernel, X, result.mu, result.Sigma)
    n = len(y)
    # log|Σ| = log|C| − log|I + T̃C| (Σ = (C⁻¹ + T̃)⁻¹), without factorising Σ
    log_det_Sigma = cholesky(kernel.K(X), name="C").log_det - result.log_det
    entropy = 0.5 * (n * (1.0 + _LOG_2PI) + log_det_Sigma)
    return VariationalBound(F_epsilon + F_cov + entropy, F_epsilon, F_cov, entropy)


def epsilon_from_errors(y, mean):
    r"""K&G's M-step for :math:`\epsilon` (Appendix A, eq 18): :math:`\epsilon^* = r/n`, with :math:`r` the
    number of training points whose predicted label :math:`\operatorname{sign}(\text{mean}_i)` is not :math:`y_i`.

    ``mean`` must be the classifier's latent mean at the training inputs *without* the latent noise
    :math:`v_2`, :math:`E[g_i] = \mu_i - v_2 a_i` (:func:`em_ep` passes it). With K&G's step likelihood the
    EP mean of the noisy :math:`f_i` itself always has the sign of :math:`y_i` when :math:`\epsilon = 0` (the
    tilted distribution is truncated to :math:`y_if_i > 0`), so counting errors of :math:`E[f_i]` would keep
    :math:`\epsilon` at a starting value of 0 for ever.
    """
    y = check_binary_labels(y, "y", coding="pm1")
    return float(np.mean(np.sign(mean) != y))


def epsilon_from_expected_errors(y, mu, var):
    r"""The exact maximiser of :math:`\mathcal F_\epsilon` for the step likelihood (not in the paper):
    :math:`\epsilon^* = \frac1n\sum_i\Phi(-y_i\mu_i/\sigma_i)`, the expected number of training errors under :math:`q`."""
    y = check_binary_labels(y, "y", coding="pm1").astype(float)
    return float(np.mean(ndtr(-y * mu / np.sqrt(var))))


def _free_mask(kernel, fixed):
    names = kernel.theta_names
    fixed = tuple(fixed or ())
    unknown = [name for name in fixed if name not in names]
    if unknown:
        raise ValueError(f"fixed names {unknown} are not kernel parameters; expected some of {names}")
    return np.array([name not in fixed for name in names])


def _theta_bounds(mask, log_bound):
    return [(-log_bound, log_bound)] * int(mask.sum())


@dataclass(frozen=True)
class EMEPResult:
    """Outcome of :func:`em_ep`.

    ``history`` holds one row per EM iteration: (log Z_EP at the E-step, F at the E-step, the
    M-step's gain in F_cov, ε used in the E-step). ``n_sweeps`` counts EP sweeps over all E-steps.
    """

    kernel: SEKernel
    epsilon: float
    ep: EPResult
    log_evidence: float
    F: float
    n_iter: int
    converged: bool
    history: np.ndarray
    n_sweeps: int
    n_m_evaluations: int


def _likelihood_for(latent_noise, epsilon):
    return LabelNoiseLikelihood(epsilon, latent_noise)


def _ep_with_fallback(K, y, likelihood, tau, nu, damping, tol, max_sweeps=200, min_damping=0.1):
    """EP warm-started from (tau, nu); if it fails to converge (or ends with an improper cavity),
    restart from the prior with the damping halved, down to ``min_damping``.

    Used inside the hyperparameter optimisers, where the label-noise likelihood with a nearly hard
    step can make undamped EP oscillate. The first attempt gets at most 50 sweeps (a healthy warm
    start needs a handful). Returns ``(EPResult, damping_used)``; only the last attempt's
    non-convergence warning is let through.
    """
    attempt_damping = damping
    sweeps = min(int(max_sweeps), 50)
    while True:
        last = attempt_damping / 2.0 < min_damping
        try:
            result = expectation_propagation(K, y, likelihood, tau=tau, nu=nu, damping=attempt_damping, tol=tol,
                                             max_sweeps=sweeps, warn=last)
            if result.converged or last:
                return result, attempt_damping
        except (FloatingPointError, np.linalg.LinAlgError):
            if last:
                raise
        tau = nu = None
        attempt_damping /= 2.0
        sweeps = int(max_sweeps)


def _prepare_learning_inputs(X, y, likelihood, learn_epsilon):
    """Checked inputs shared by :func:`em_ep` and :func:`maximize_ep_evidence`.

    The default likelihood is K&G's step with ε = 0; a plain probit has no ε to learn.
    Returns ``(X, y, likelihood, epsilon, latent_noise, learn_epsilon)``.
    """
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", coding="pm1").astype(float)
    check_same_length(X, y, "X", "y")
    likelihood = LabelNoiseLikelihood(0.0, 0.0) if likelihood is None else likelihood
    epsilon, latent_noise = site_likelihood(likelihood)
    if isinstance(likelihood, ProbitLikelihood):
        learn_epsilon = False
    return X, y, likelihood, epsilon, latent_noise, learn_epsilon


def em_ep(kernel, X, y, likelihood=None, learn_epsilon=True, epsilon_rule="errors", fixed=(), max_iter=200,
          tol=1e-4, m_step_maxiter=5, log_bound=15.0, damping=1.0, ep_tol=1e-4, progress=False):
    r"""The EM-EP algorithm (K&G §4, Appendix A).

    Repeat until :math:`\log Z_{EP}` changes by less than ``tol`` between E-steps and the M-step
    gains less than ``tol``:

    - **E-step**: EP at the current :math:`(\Theta_{cov}, \epsilon)` gives :math:`q(\mathbf f) = N(\boldsymbol\mu, \Sigma)`
      (K&G eq 11), warm-started from the previous sites.
    - **M-step**: maximise :math:`\mathcal F_{\Theta_{cov}}` (eq 16) over the free log-parameters with
      :math:`q` fixed, by L-BFGS-B with the gradient of eq 17 (at most ``m_step_maxiter`` iterations, a
      partial M-step; K&G used conjugate gradients); then :math:`\epsilon^* = r/n` (Appendix A; ``epsilon_rule="errors"``) or
      the exact maximiser of :math:`\mathcal F_\epsilon`, the expected error rate (``"expected"``).

    ``likelihood`` is ``LabelNoiseLikelihood(epsilon0, 0)`` by default (K&G's step; its ε is the
    starting value) or ``ProbitLikelihood()`` (then ε stays 0). ``fixed`` names kernel parameters
    (``kernel.theta_names``) held at their initial values. Log-parameters are kept in
    ``[−log_bound, log_bound]``. The E-steps run EP to ``ep_tol`` (warm-started, so a loose tolerance
    costs little accuracy); the final EP at the returned hyperparameters runs to ``min(ep_tol, 1e-6)``.

    Returns
    -------
    EMEPResult
    """
    X, y, likelihood, epsilon, latent_noise, learn_epsilon = _prepare_learning_inputs(X, y, likelihood,
                                                                                      learn_epsilon)
    if epsilon_rule not in ("errors", "expected"):
        raise ValueError(f"epsilon_rule must be 'errors' or 'expected'; got {epsilon_rule!r}")
    mask = _free_mask(kernel, fixed)
    bounds = _theta_bounds(mask, log_bound)
    theta = kernel.theta.copy()
    tau = nu = None
    history = []
    n_sweeps = n_evaluations = 0
    converged = False
    previous_log_evidence = None
    iterations = range(1, int(max_iter) + 1)
    if progress:
        from tqdm.auto import tqdm
        iterations = tqdm(iterations, desc="EM-EP")
    for iteration in iterations:
        current = kernel.with_theta(theta)
        # E-step: EP at (Θ_cov, ε) (K&G §4, eq 11)
        ep, _ = _ep_with_fallback(current.K(X), y, _likelihood_for(latent_noise, epsilon), tau, nu, damping, ep_tol)
        tau, nu = ep.tau, ep.nu
        n_sweeps += ep.n_sweeps
        bound = variational_bound(ep, current, X, y)

        # M-step for Θ_cov: maximise F_cov (K&G eqs 16, 17) with q fixed
        def negative(free):
            full = theta.copy()
            full[mask] = free
            try:
                value, gradient = m_step_objective(full, kernel, X, ep.mu, ep.Sigma)
            except np.linalg.LinAlgError:
                return 1e300, np.zeros(int(mask.sum()))
            return -value, -gradient[mask]

        start_value = -negative(theta[mask])[0]
        solution = optimize.minimize(negative, theta[mask], jac=True, method="L-BFGS-B", bounds=bounds,
                                     options={"maxiter": int(m_step_maxiter)})
        n_evaluations += solution.nfev
        gain = -solution.fun - start_value
        history.append((ep.log_evidence, bound.F, gain, epsilon))
        if gain > 0:
            theta[mask] = solution.x
        # M-step for ε (K&G Appendix A)
        if learn_epsilon:
            if epsilon_rule == "errors":
                # the classifier's mean at the training inputs: E[g_i] = μ_i − v₂ a_i (no latent noise)
                epsilon = min(epsilon_from_errors(y, ep.mu - current.jitter * ep.a), 0.49)
            else:
                epsilon = min(epsilon_from_expected_errors(y, ep.mu, np.diag(ep.Sigma)), 0.49)
        if (previous_log_evidence is not None and abs(ep.log_evidence - previous_log_evidence) < tol
                and gain < tol and epsilon == history[-1][3]):
            converged = True
            break
        previous_log_evidence = ep.log_evidence
    if not converged:
        warnings.warn(f"EM-EP did not converge in {iteration} iterations (tol {tol:g})", EPConvergenceWarning,
                      stacklevel=2)
    final_kernel = kernel.with_theta(theta)
    final_ep, _ = _ep_with_fallback(final_kernel.K(X), y, _likelihood_for(latent_noise, epsilon), tau, nu, damping,
                                    min(ep_tol, 1e-6))
    n_sweeps += final_ep.n_sweeps
    final_bound = variational_bound(final_ep, final_kernel, X, y)
    return EMEPResult(kernel=final_kernel, epsilon=float(epsilon), ep=final_ep,
                      log_evidence=final_ep.log_evidence, F=final_bound.F, n_iter=iteration,
                      converged=converged, history=np.array(history), n_sweeps=n_sweeps,
                      n_m_evaluations=n_evaluations)


@dataclass(frozen=True)
class EvidenceFitResult:
    """Outcome of :func:`maximize_ep_evidence`: the kernel and ε at the maximum, EP there, and the cost."""

    kernel: SEKernel
    epsilon: float
    ep: EPResult
    log_evidence: float
    n_evaluations: int
    n_sweeps: int
    success: bool
    message: str


def maximize_ep_evidence(kernel, X, y, likelihood=None, learn_epsilon=True, fixed=(), maxiter=200,
                         log_bound=15.0, damping=1.0, ep_tol=1e-8):
    r"""Maximise :math:`\log Z_{EP}` (K&G eq 12) directly over the log-parameters (and ε) by L-BFGS-B.

    Each evaluation runs EP to convergence (warm-started from the previous sites) and uses the
    fixed-point gradients :func:`ep_evidence_gradient` and :func:`ep_epsilon_gradient`. ε is
    optimised as :math:`\eta` with :math:`\epsilon = \tfrac12\sigma(\eta)`, so it stays in (0, ½);
    a starting ε of 0 is replaced by 0.01. The alternative to :func:`em_ep`, compared with it in the chapter.
    """
    X, y, likelihood, epsilon0, latent_noise, learn_epsilon = _prepare_learning_inputs(X, y, likelihood,
                                                                                       learn_epsilon)
    mask = _free_mask(kernel, fixed)
    theta0 = kernel.theta.copy()
    state = {"tau": None, "nu": None, "sweeps": 0, "ep": None}

    def unpack(params):
        theta = theta0.copy()
        theta[mask] = params[:int(mask.sum())]
        if learn_epsilon:
            return theta, 0.5 * float(expit(params[-1]))
        return theta, epsilon0

    def negative(params):
        theta, epsilon = unpack(params)
        current = kernel.with_theta(theta)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EPConvergenceWarning)
                ep, _ = _ep_with_fallback(current.K(X), y, _likelihood_for(latent_noise, epsilon), state["tau"],
                                          state["nu"], damping, ep_tol)
        except (np.linalg.LinAlgError, FloatingPointError):
            state["tau"] = state["nu"] = None
            return 1e300, np.zeros_like(params)
        state.update(tau=ep.tau, nu=ep.nu, ep=ep)
        state["sweeps"] += ep.n_sweeps
        gradient = ep_evidence_gradient(ep, kernel=current, X=X)[mask]
        if learn_epsilon:
            # dε/dη = ε(1 − 2ε)
            gradient = np.append(gradient, ep_epsilon_gradient(ep, y) * epsilon * (1.0 - 2.0 * epsilon))
        return -ep.log_evidence, -gradient

    start = theta0[mask]
    bounds = _theta_bounds(mask, log_bound)
    if learn_epsilon:
        eps_start = epsilon0 if epsilon0 > 0 else 0.01
        start = np.append(start, np.log(2.0 * eps_start) - np.log1p(-2.0 * eps_start))
        bounds.append((-15.0, 15.0))
    solution = optimize.minimize(negative, start, jac=True, method="L-BFGS-B", bounds=bounds,
                                 options={"maxiter": int(maxiter)})
    theta, epsilon = unpack(solution.x)
    final_kernel = kernel.with_theta(theta)
    ep, _ = _ep_with_fallback(final_kernel.K(X), y, _likelihood_for(latent_noise, epsilon), state["tau"], state["nu"],
                              damping, ep_tol)
    return EvidenceFitResult(kernel=final_kernel, epsilon=float(epsilon), ep=ep, log_evidence=ep.log_evidence,
                             n_evaluations=int(solution.nfev), n_sweeps=state["sweeps"] + ep.n_sweeps,
                             success=bool(solution.success), message=str(solution.message))
