r"""Learning the hyperparameters of EP classification: the EM-EP algorithm of Kim & Ghahramani, and
direct maximisation of the EP evidence.

EM-EP (K&G §4, Appendix A) alternates an E-step, EP at the current hyperparameters
(:func:`gpc_ref.ep.expectation_propagation`), with an M-step that maximises K&G's variational lower
bound ℱ over the kernel's log-parameters with q fixed (eqs 13–17) and updates the
labelling-error rate ε (eq 18). At a fixed point of EM the gradient of the EP evidence
vanishes (K&G eq 14 equals GPML eq 5.27 at q = q_EP), so EM and direct maximisation of
log Z_EP by its gradient look for the same points.

Notation as in :mod:`gpc_ref.ep`, plus:

- ℱ ← ``F``: K&G's variational lower bound (eqs 13, 15); ℱ_(Θ_cov) ←
  ``F_cov``, its prior term and the M-step objective (eq 16); ℱ_ε ← ``F_epsilon``.
- Θ_cov ← ``kernel.theta``: the kernel's log-parameters.

References
----------
- [KG03] Kim & Ghahramani (2003), §4 and Appendix A (eqs 13–18).
- [GPML] Rasmussen & Williams (2006), eq 5.27 (the EP evidence gradient), §5.4 (ML-II).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from scipy.special import log_ndtr
from scipy.special import ndtr

from .ep import EPResult
from .ep import ep_epsilon_gradient
from .ep import ep_evidence_gradient
from .ep import expectation_propagation_with_fallback
from .ep import site_likelihood
from .errors import ConvergenceWarning
from .gaussian_integrals import gauss_hermite_expectation
from .hyperparameters import HyperparameterFit
from .hyperparameters import free_mask
from .hyperparameters import maximize
from .hyperparameters import theta_box
from .kernels import SEKernel
from .likelihoods import LabelNoiseLikelihood
from .likelihoods import ProbitLikelihood
from .linalg import JitterWarning
from .linalg import cholesky
from .progress import with_progress
from .validation import check_binary_labels
from .validation import check_choice
from .validation import check_kernel
from .validation import check_matrix
from .validation import check_positive
from .validation import check_positive_int

__all__ = [
    "HISTORY_COLUMNS",
    "VariationalBound",
    "EMEPResult",
    "EvidenceFitResult",
    "variational_bound",
    "m_step_objective",
    "epsilon_from_errors",
    "epsilon_from_expected_errors",
    "em_ep",
    "em_ep_core",
    "em_e_step",
    "em_m_step",
    "maximize_ep_evidence",
]

_LOG_2PI = np.log(2.0 * np.pi)


# ===================================================================== the variational bound and EM-EP
@dataclass(frozen=True)
class VariationalBound:
    r"""K&G's bound ℱ = ℱ_ε + ℱ_(Θ_cov) + H(q) ≤ log p(y|Θ) (eq 15)."""

    F: float
    F_epsilon: float
    F_cov: float
    entropy: float


def m_step_objective(
    theta: ArrayLike, kernel: SEKernel, X: ArrayLike, mu: np.ndarray, Sigma: np.ndarray
) -> tuple[float, np.ndarray]:
    r"""ℱ_(Θ_cov) (K&G eq 16) and its gradient (eq 17) for fixed q = N(μ, Σ).

        ℱ_(Θ_cov) = E_q[log N(f|0, C_θ)]
        = -½ log|2πC| - ½μᵀC⁻¹μ - ½ tr(C⁻¹Σ),

        ((∂ℱ_(Θ_cov))/(∂θ_j)) = ½ tr(
        (C⁻¹(Σ + μμᵀ)C⁻¹ - C⁻¹)(∂C/∂θ_j)).

    C is factorised once; the matrix of the traces,
    C⁻¹(Σ + μμᵀ - C)C⁻¹, comes from two Cholesky solves
    (no inverse is formed). Raises ``numpy.linalg.LinAlgError`` if C_θ is not
    numerically positive definite (the optimiser then rejects the step).

    Parameters
    ----------
    theta : array (P,)
        The kernel's log-parameters at which to evaluate.
    kernel : SEKernel
        Supplies the structure (which parameters).
    X : ndarray (n, D)
        Training inputs.
    mu, Sigma : ndarrays (n,), (n, n)
        Mean and covariance of the fixed q(f) (from the E-step).

    Returns
    -------
    value : float
    gradient : ndarray (P,)
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
    # E_q[f fᵀ] = Σ + μμᵀ; P = C⁻¹ (Σ + μμᵀ) by one solve
    P = factor.solve(Sigma + np.outer(mu, mu))
    # K&G eq 16: −½ log|2πC| − ½ μᵀC⁻¹μ − ½ tr(C⁻¹Σ) = −½ log|2πC| − ½ tr(C⁻¹(Σ + μμᵀ))
    value = -0.5 * (n * _LOG_2PI + factor.log_det) - 0.5 * np.trace(P)
    # K&G eq 17: ½ tr((C⁻¹(Σ + μμᵀ)C⁻¹ − C⁻¹) ∂C/∂θ_j), with Q = C⁻¹ (P − I)ᵀ = C⁻¹(Σ + μμᵀ − C)C⁻¹
    Q = factor.solve((P - np.eye(n)).T)
    gradient = 0.5 * k.gradient_traces(X, 0.5 * (Q + Q.T))
    return float(value), gradient


def _expected_log_likelihood(y, mu, var, epsilon, latent_noise):
    r"""∑_i E_(q(f_i))[log p(y_i|f_i)] (K&G's ℱ_ε, eq 15).

    For the step (s = 0) it is exact: ∑_i[(1-P_i) log(1-ε) + P_i log ε] with
    P_i = Φ(-y_i μ_i/σ_i) the probability under q that point i is on the wrong side
    (the EP chapter's P_i, and the summand of :func:`epsilon_from_expected_errors`); it is
    -∞ when ε = 0. For s > 0 it is computed by Gauss–Hermite quadrature.
    """
    if latent_noise == 0.0:
        log_wrong = log_ndtr(-y * mu / np.sqrt(var))  # log P_i
        log_right = log_ndtr(y * mu / np.sqrt(var))  # log(1 − P_i), without cancellation
        if epsilon == 0.0:
            return -np.inf
        return float(np.sum(np.exp(log_right) * np.log1p(-epsilon) + np.exp(log_wrong) * np.log(epsilon)))
    likelihood = LabelNoiseLikelihood(epsilon, latent_noise)
    expected = gauss_hermite_expectation(
        lambda f: likelihood.log_p(np.broadcast_to(y[:, None], f.shape), f), mu, var, n_points=64
    )
    return float(np.sum(expected))


def variational_bound(result: EPResult, kernel: SEKernel, X: ArrayLike, y: ArrayLike) -> VariationalBound:
    r"""The lower bound ℱ of K&G eq 13/15 at q = q_EP and the kernel's parameters.

    ℱ = E_q[log p(y|f,ε)] + E_q[log p(f|Θ_cov)] + H(q),
    with H(q) = ½ log|2πeΣ| and log|Σ| = log|C| - log|I + T̃C|.
    By Jensen's inequality ℱ ≤ log p(y|Θ) for any q.

    Parameters
    ----------
    result : EPResult
        EP at ``kernel`` (supplies q, ε and s).
    kernel : SEKernel
    X, y
        As in :func:`em_ep`.

    Returns
    -------
    VariationalBound
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


def epsilon_from_errors(y: ArrayLike, mean: ArrayLike) -> float:
    r"""K&G's M-step for ε (Appendix A, eq 18): ε* = r/n, with r the
    number of training points whose predicted label sign(mean_i) is not y_i.

    ``mean`` must be the classifier's latent mean at the training inputs *without* the latent noise
    v_2, E[g_i] = μ_i - v_2 a_i (:func:`em_ep` passes it). With K&G's step likelihood the
    EP mean of the noisy f_i itself always has the sign of y_i when ε = 0 (the
    tilted distribution is truncated to y_i f_i > 0), so counting errors of E[f_i] would keep
    ε at a starting value of 0 for ever.

    Parameters
    ----------
    y : array_like (n,)
        Labels in {−1, +1} (or {0, 1}).
    mean : array_like (n,)
        Latent mean at the training inputs, without the latent noise.

    Returns
    -------
    float
        The fraction of training points misclassified by ``sign(mean)``.
    """
    y = check_binary_labels(y, "y", coding="pm1")
    return float(np.mean(np.sign(mean) != y))


def epsilon_from_expected_errors(y: ArrayLike, mu: ArrayLike, var: ArrayLike) -> float:
    r"""The exact maximiser of ℱ_ε for the step likelihood (not in the paper):
    ε* = (1/n)∑_i Φ(-y_i μ_i/σ_i), the expected number of training errors under q.

    Parameters
    ----------
    y : array_like (n,)
        Labels in {−1, +1} (or {0, 1}).
    mu, var : array_like (n,)
        Marginal means and variances of q(f).

    Returns
    -------
    float
        The expected fraction of training errors.
    """
    y = check_binary_labels(y, "y", coding="pm1").astype(float)
    return float(np.mean(ndtr(-y * mu / np.sqrt(var))))


HISTORY_COLUMNS = ("log_evidence", "F", "gain", "epsilon", "gradient_norm", "seconds", "n_sweeps")


@dataclass(frozen=True)
class EMEPResult:
    r"""Outcome of :func:`em_ep`.

    Attributes
    ----------
    kernel : SEKernel
        The kernel at the last E-step.
    epsilon : float
        The labelling-error rate there.
    ep : EPResult
        EP at the returned hyperparameters.
    log_evidence, F : float
        log Z_EP and K&G's bound ℱ there.
    n_iter : int
        E-steps run (each an EP run warm-started from the previous sites).
    converged : bool
        The projected gradient of log Z_EP in the learnt log-parameters was at most
        ``tolerance`` (and ε no longer changed).
    gradient_norm, tolerance : float
        The largest projected gradient component at the last E-step, and the tolerance it was held to.
    history : ndarray (n_iter, 7)
        One row per E-step, the columns of :data:`HISTORY_COLUMNS`: log Z_EP, ℱ,
        the M-step's gain in ℱ_(Θ_cov) (NaN for an extrapolated point), ε, the
        gradient norm, the seconds since the start and the EP sweeps so far.
    n_sweeps : int
        EP sweeps over all E-steps.
    n_m_evaluations : int
        Evaluations of the M-step objective.
    acceleration : str or None
        ``"squarem"`` or None.
    """

    kernel: SEKernel
    epsilon: float
    ep: EPResult
    log_evidence: float
    F: float
    n_iter: int
    converged: bool
    gradient_norm: float
    tolerance: float
    history: np.ndarray = field(repr=False)
    n_sweeps: int
    n_m_evaluations: int
    acceleration: str | None = None


def _ep_at(kernel, X, y, epsilon, latent_noise, *, tau, nu, schedule, damping, tol, reject_jitter=True):
    """EP (restarted with more damping if it fails) at the kernel's parameters and ε, warm-started from (tau, nu).

    With ``reject_jitter`` a factorisation inside EP that needs more jitter than requested (``B``, ``C`` or ``M``
    not numerically positive definite: seen with jitter up to 5e11 on ``B`` in the direct maximiser's line
    search) raises ``FloatingPointError``: the evidence and gradient computed with that jitter belong to
    another model, so the learners treat the point as one where EP cannot run (the maximiser rejects the step,
    EM-EP halves it). Without it, the jitter is used and reported by the ``JitterWarning``.
    """
    likelihood = LabelNoiseLikelihood(epsilon, latent_noise)
    with warnings.catch_warnings():
        if reject_jitter:
            warnings.simplefilter("error", JitterWarning)
        try:
            result, _ = expectation_propagation_with_fallback(
                kernel.K(X), y, likelihood=likelihood, tau=tau, nu=nu, schedule=schedule, damping=damping, tol=tol
            )
        except JitterWarning as exc:
            raise FloatingPointError(f"EP needed jitter here, so its evidence is not to be trusted: {exc}") from None
    return result


def _prepare_learning_inputs(X, y, likelihood, learn_epsilon):
    """Checked inputs shared by :func:`em_ep` and :func:`maximize_ep_evidence`.

    The default likelihood is K&G's step with ε = 0; a plain probit has no ε to learn.
    Returns ``(X, y, likelihood, epsilon, latent_noise, learn_epsilon)``.
    """
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", coding="pm1", length=X.shape[0]).astype(float)
    likelihood = LabelNoiseLikelihood(0.0, 0.0) if likelihood is None else likelihood
    epsilon, latent_noise = site_likelihood(likelihood)
    if isinstance(likelihood, ProbitLikelihood):
        learn_epsilon = False
    return X, y, likelihood, epsilon, latent_noise, learn_epsilon


def _projected_norm(gradient, theta, bounds, free):
    """Largest component of the ascent gradient over the free entries, projected on the box."""
    g = np.where(free, gradient, 0.0)
    g = np.where((theta <= bounds[:, 0] + 1e-9) & (g < 0), 0.0, g)
    g = np.where((theta >= bounds[:, 1] - 1e-9) & (g > 0), 0.0, g)
    return float(np.max(np.abs(g))) if g.size else 0.0


def em_e_step(kernel: SEKernel, X: np.ndarray, y: np.ndarray, theta: np.ndarray, epsilon: float,
              latent_noise: float, tau: np.ndarray | None, nu: np.ndarray | None, bounds: np.ndarray,
              free: np.ndarray, ep_options: dict, *, reject_jitter: bool = True) -> tuple[EPResult, float]:  # fmt: skip
    """Steps 1 and 2.3 of Algorithm 8.2 (ep-alg-emep): EP at (θ, ε), warm-started from the sites (τ̃, ν̃), and the
    largest component of the gradient of log Z_EP over the free log-parameters, projected on the box (step 3).

    Parameters
    ----------
    kernel, X, y
        The kernel (its θ is replaced by ``theta``), inputs and labels in {−1, +1}.
    theta : ndarray (P,)
        The log-parameters.
    epsilon, latent_noise : float
        K&G's labelling-error rate and latent noise.
    tau, nu : ndarray (n,) or None
        The sites to start EP from (None: the prior).
    bounds, free : ndarray
        The search box (P, 2) and the mask of learnt parameters.
    ep_options : dict
        ``schedule``, ``damping`` and ``tol`` of EP.
    reject_jitter : bool
        Raise ``FloatingPointError`` where EP needs jitter (a point EM does not move to).

    Returns
    -------
    ep : EPResult
    norm : float
        The projected gradient's largest component.
    """
    current = kernel.with_theta(theta)
    ep = _ep_at(current, X, y, epsilon, latent_noise, tau=tau, nu=nu, reject_jitter=reject_jitter, **ep_options)
    return ep, _projected_norm(ep_evidence_gradient(ep, kernel=current, X=X), theta, bounds, free)


def em_m_step(kernel: SEKernel, X: np.ndarray, y: np.ndarray, theta: np.ndarray, ep: EPResult, epsilon: float,
              bounds: np.ndarray, free: np.ndarray, max_iter: int, learn_epsilon: bool,
              epsilon_rule: str = "errors") -> tuple[np.ndarray, float, float, int]:  # fmt: skip
    """Steps 2.1–2.2 of Algorithm 8.2 (ep-alg-emep): a partial maximisation of F_cov over θ with q fixed
    (K&G eqs 16, 17), then ε from the errors of q's mean (K&G Appendix A).

    Parameters
    ----------
    kernel, X, y
        The kernel, inputs and labels in {−1, +1}.
    theta : ndarray (P,)
        The log-parameters the M-step starts from.
    ep : EPResult
        q from the last E-step.
    epsilon : float
        The current ε.
    bounds, free : ndarray
        The search box and the mask of learnt parameters.
    max_iter : int
        L-BFGS-B iterations of the partial M-step.
    learn_epsilon : bool
        Whether step 2.2 runs.
    epsilon_rule : {"errors", "expected"}
        Count the errors of E[g_i] (K&G), or their expectation under q.

    Returns
    -------
    theta : ndarray (P,)
        The M-step's proposal (the start if it gained nothing).
    epsilon : float
    gain : float
        The rise of F_cov.
    n_evaluations : int
        Evaluations of F_cov.
    """

    def f_cov(full):
        return m_step_objective(full, kernel, X, ep.mu, ep.Sigma)

    start_value = f_cov(theta)[0]
    search = maximize(f_cov, theta, bounds=bounds, free=free, max_iter=max_iter, warn=False,
                      description="EM-EP M-step")  # fmt: skip
    gain = search.value - start_value
    new_theta = search.theta if gain > 0 else theta
    if learn_epsilon:
        if epsilon_rule == "errors":
            # the classifier's mean at the training inputs: E[g_i] = μ_i − v₂ a_i (no latent noise)
            jitter = kernel.with_theta(theta).jitter
            epsilon = min(epsilon_from_errors(y, ep.mu - jitter * ep.a), 0.49)
        else:
            epsilon = min(epsilon_from_expected_errors(y, ep.mu, np.diag(ep.Sigma)), 0.49)
    return new_theta, epsilon, gain, search.n_evaluations


def em_ep_core(kernel: SEKernel, X: np.ndarray, y: np.ndarray, *, epsilon: float = 0.0, latent_noise: float = 0.0,
               learn_epsilon: bool = True, tol: float = 1e-4, max_iter: int = 200, m_step_max_iter: int = 5,
               ep_options: dict | None = None) -> EMEPResult:  # fmt: skip
    """Algorithm 8.2 (ep-alg-emep), step for step: EM-EP (K&G §4 and Appendix A), every parameter learnt.

    The plain core of :func:`em_ep`, which checks the arguments, can hold parameters fixed, accelerates EM by
    SQUAREM, retries and halves a step where EP cannot run, records a history with timings, shows progress and
    warns when step 3 is not met; this function does none of that. Unaccelerated, where EP runs at every
    proposal, the two take the same steps (``tests/test_ep.py``).

    Parameters
    ----------
    kernel, X, y
        The starting kernel, inputs and labels in {−1, +1}.
    epsilon, latent_noise : float
        K&G's starting labelling-error rate and the latent noise of their step likelihood.
    learn_epsilon, tol, max_iter, m_step_max_iter
        Whether step 2.2 runs, the tolerance of step 3, the most E-steps and the M-step's L-BFGS-B iterations.
    ep_options : dict, optional
        ``schedule``, ``damping``, ``tol`` of EP (default parallel, 1, 1e-6, as :func:`em_ep`).

    Returns
    -------
    EMEPResult
        With an empty ``history``.

    References: [KG03] §4, eqs 16, 17 and Appendix A.
    """
    ep_options = {"schedule": "parallel", "damping": 1.0, "tol": 1e-6} if ep_options is None else ep_options
    bounds, free = theta_box(kernel), np.ones(len(kernel.theta), dtype=bool)
    theta = np.clip(kernel.theta, bounds[:, 0], bounds[:, 1])
    ep, norm = em_e_step(kernel, X, y, theta, epsilon, latent_noise, None, None, bounds, free, ep_options,
                         reject_jitter=False)  # step 1 (the start is taken as given)  # fmt: skip
    n_sweeps, n_m_evaluations, n_iter = ep.n_sweeps, 0, 1
    converged = norm <= tol * max(1.0, abs(ep.log_evidence)) and not learn_epsilon
    while n_iter < max_iter and not converged:  # step 2
        theta_new, epsilon_new, _, n_evaluations = em_m_step(kernel, X, y, theta, ep, epsilon, bounds, free,
                                                             m_step_max_iter, learn_epsilon)  # steps 2.1–2.2  # fmt: skip
        ep, norm = em_e_step(kernel, X, y, theta_new, epsilon_new, latent_noise, ep.tau, ep.nu, bounds, free,
                             ep_options)  # step 2.3  # fmt: skip
        n_iter, n_sweeps, n_m_evaluations = n_iter + 1, n_sweeps + ep.n_sweeps, n_m_evaluations + n_evaluations
        converged = norm <= tol * max(1.0, abs(ep.log_evidence)) and epsilon_new == epsilon  # step 3
        theta, epsilon = theta_new, epsilon_new
    final_kernel = kernel.with_theta(theta)
    return EMEPResult(kernel=final_kernel, epsilon=float(epsilon), ep=ep, log_evidence=ep.log_evidence,
                      F=variational_bound(ep, final_kernel, X, y).F, n_iter=n_iter, converged=bool(converged),
                      gradient_norm=norm, tolerance=tol * max(1.0, abs(ep.log_evidence)), history=np.empty((0, 7)),
                      n_sweeps=n_sweeps, n_m_evaluations=n_m_evaluations)  # fmt: skip


def em_ep(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
          likelihood: ProbitLikelihood | LabelNoiseLikelihood | None = None, learn_epsilon: bool = True,
          epsilon_rule: str = "errors", fixed: Sequence[str] = (), acceleration: str | None = None,
          schedule: str = "parallel", max_iter: int = 200, tol: float = 1e-4, m_step_max_iter: int = 5,
          damping: float = 1.0, ep_tol: float = 1e-6, progress: bool = False) -> EMEPResult:  # fmt: skip
    r"""The EM-EP algorithm (K&G §4, Appendix A), stopped by the gradient of the evidence.

    - **E-step**: EP at the current (Θ_cov, ε) gives
      q(f) = N(μ, Σ) (K&G eq 11), warm-started from the previous sites.
    - **M-step**: maximise ℱ_(Θ_cov) (eq 16) over the free log-parameters with
      q fixed, by :func:`gpc_ref.hyperparameters.maximize` with the gradient of eq 17 (at most
      ``m_step_max_iter`` L-BFGS-B iterations, a partial M-step; K&G used conjugate gradients); then
      ε* = r/n (Appendix A; ``epsilon_rule="errors"``) or the exact maximiser of
      ℱ_ε, the expected error rate (``"expected"``).

    **When to stop.** At a fixed point of EM the gradient of ℱ in Θ_cov is
    that of log Z_EP (K&G eq 14 = GPML eq 5.27 at q = q_EP), and zero. So after every
    E-step the gradient of the EP evidence (:func:`~gpc_ref.ep.ep_evidence_gradient`, cheap once EP has
    run) is projected on the box of the learnt log-parameters, and EM stops when its largest component
    is at most ``tol × max(1, abs(log Z_EP))`` and ε no longer changes. A small change of the evidence
    between iterations is *not* enough: EM can creep along a ridge for hundreds of iterations with
    gains of 1e-5 while the gradient is still large. Otherwise a
    :class:`~gpc_ref.validation.ConvergenceWarning` names the iteration count and the gradient norm.

    **Where EP cannot run** at the M-step's proposal (a cavity with negative precision, a covariance that does
    not factorise, or one that factorises only with more jitter than requested, which would change the model),
    the proposal is retried with EP started from the prior, then the step from the current
    parameters is halved until EP runs (Θ moves less, F still rises along the M-step's path); if
    it never does, EM stops at the last point where EP ran and warns (``converged`` is False).

    **Acceleration** (``acceleration="squarem"``, not in the paper): EM's steps shrink where the
    evidence is flat, and its fixed-point map θ ↦ M(E(θ)) converges linearly.
    SQUAREM (Varadhan & Roland 2008) takes two EM steps θ_1, θ_2 from θ_0,
    extrapolates θ' = θ_0 - 2sr + s²v with r = θ_1 - θ_0,
    v = θ_2 - 2θ_1 + θ_0, s = -‖r‖/‖v‖, and keeps
    θ' only if log Z_EP there is at least that at θ_1 and EP converged there
    without jitter (else s moves halfway to -1, where θ' = θ_2). As in
    Varadhan & Roland's default, abs(s) is capped by a bound that starts at 1 and grows fourfold each time it
    binds, so the first jumps stay near the EM path. The fixed points, and the stopping rule, are EM's.

    Parameters
    ----------
    kernel : SEKernel
        Starting kernel.
    X : ndarray (n, D)
        Training inputs.
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    likelihood : LabelNoiseLikelihood or ProbitLikelihood, optional
        ``LabelNoiseLikelihood(0, 0)`` by default (K&G's step); a given ``LabelNoiseLikelihood`` supplies
        the starting ε; with ``ProbitLikelihood()`` ε stays 0.
    learn_epsilon : bool
        Update ε in the M-step.
    epsilon_rule : {"errors", "expected"}
        K&G's r/n or the expected error rate under q.
    fixed : sequence of str
        Kernel parameter names (``kernel.theta_names``) held at their initial values.
    acceleration : {None, "squarem"}
        Plain EM (K&G) or SQUAREM-extrapolated EM.
    schedule : {"parallel", "sequential"}
        EP's schedule in the E-steps (:func:`~gpc_ref.ep.expectation_propagation`).
    max_iter : int
        E-steps at most.
    tol : float
        Relative tolerance of the gradient test.
    m_step_max_iter : int
        L-BFGS-B iterations per M-step.
    damping : float
        EP's starting damping (EP restarts with more damping by itself if it fails).
    ep_tol : float
        EP's tolerance in the E-steps (warm-started, so a tight tolerance costs few sweeps).
    progress : bool
        Show a progress bar over the E-steps.

    Returns
    -------
    EMEPResult

    References
    ----------
    [KG03] §4, Appendix A; [VR08] Varadhan & Roland (2008), *Simple and globally convergent methods
    for accelerating the convergence of any EM algorithm*, Scand. J. Statistics 35.
    """
    kernel = check_kernel(kernel)
    X, y, likelihood, epsilon, latent_noise, learn_epsilon = _prepare_learning_inputs(X, y, likelihood, learn_epsilon)
    check_choice(epsilon_rule, "epsilon_rule", ("errors", "expected"))
    check_choice(acceleration, "acceleration", (None, "squarem"))
    max_iter = check_positive_int(max_iter, "max_iter")
    mask = free_mask(kernel, fixed)
    # the learnt log-parameters live in the shared box, and a start outside it moves onto it; the
    # fixed ones are never moved
    bounds = theta_box(kernel)
    theta = np.where(mask, np.clip(kernel.theta, bounds[:, 0], bounds[:, 1]), kernel.theta)
    ep_options = {"schedule": schedule, "damping": damping, "tol": ep_tol}
    state = {"tau": None, "nu": None, "sweeps": 0, "m_evaluations": 0, "start": time.perf_counter(), "stuck": False}
    history, progress_bar = [], with_progress(range(max_iter), progress, "EM-EP")
    steps = iter(progress_bar)

    def e_step(theta, epsilon, gain, reject_jitter=True):
        """EP at θ, the evidence's projected gradient, and a row of the history. A point where EP needs jitter
        raises FloatingPointError (a proposal EM does not move to), except at the start and at the fallback."""
        next(steps, None)
        ep, norm = em_e_step(kernel, X, y, theta, epsilon, latent_noise, state["tau"], state["nu"], bounds, mask,
                             ep_options, reject_jitter=reject_jitter)  # fmt: skip
        state.update(tau=ep.tau, nu=ep.nu, sweeps=state["sweeps"] + ep.n_sweeps)
        try:
            F = variational_bound(ep, kernel.with_theta(theta), X, y).F
        except np.linalg.LinAlgError:  # K is not numerically positive definite there: F is not needed to go on
            F = np.nan
        history.append((ep.log_evidence, F, gain, epsilon, norm, time.perf_counter() - state["start"],
                        state["sweeps"]))  # fmt: skip
        return ep, norm

    def m_step(theta, ep, epsilon):
        """K&G's M-step: a partial maximisation of F_cov (eqs 16, 17), then ε (Appendix A)."""
        new_theta, epsilon, gain, n_evaluations = em_m_step(kernel, X, y, theta, ep, epsilon, bounds, mask,
                                                            m_step_max_iter, learn_epsilon, epsilon_rule)  # fmt: skip
        state["m_evaluations"] += n_evaluations
        return new_theta, epsilon, gain

    def e_step_towards(theta_from, theta_to, epsilon_from, epsilon, gain):
        """The E-step at the M-step's proposal ``(theta_to, epsilon)``. Where EP cannot run there (a cavity with
        negative precision, a covariance that does not factorise: seen with a 50-level discrete input on crabs),
        the proposal is tried again with EP started from the prior, then the step from ``theta_from`` is halved,
        up to 20 times. If EP still cannot run, EM stays at ``(theta_from, epsilon_from)``, where EP ran, and
        stops (``state["stuck"]``). Returns the θ and ε used, EP there and its gradient norm."""
        saved = state["tau"], state["nu"]
        for _ in range(20):
            for warm in (True, False):  # the old sites may not suit a new ε: then EP starts from the prior
                try:
                    return (theta_to, epsilon, *e_step(theta_to, epsilon, gain))
                except (np.linalg.LinAlgError, FloatingPointError):
                    state["tau"], state["nu"] = saved if not warm else (None, None)
            state["tau"], state["nu"] = saved
            theta_to = np.where(mask, theta_from + 0.5 * (theta_to - theta_from), theta_from)
        state["stuck"] = True
        return (theta_from, epsilon_from, *e_step(theta_from, epsilon_from, gain, reject_jitter=False))

    def done(norm, log_evidence, epsilon_before, epsilon_now):
        return norm <= tol * max(1.0, abs(log_evidence)) and epsilon_now == epsilon_before

    ep, norm = e_step(theta, epsilon, np.nan, reject_jitter=False)  # the start is taken as given
    converged = done(norm, ep.log_evidence, epsilon, epsilon) and not learn_epsilon
    step_max = 1.0  # SQUAREM's largest |s| (Varadhan & Roland 2008, step.max0 = 1, mstep = 4)
    while not converged and len(history) < max_iter and not state["stuck"]:
        theta1, epsilon1, gain1 = m_step(theta, ep, epsilon)
        theta1, epsilon1, ep1, norm1 = e_step_towards(theta, theta1, epsilon, epsilon1, gain1)
        if acceleration is None or len(history) >= max_iter or state["stuck"]:
            converged = done(norm1, ep1.log_evidence, epsilon, epsilon1)
            theta, epsilon, ep, norm = theta1, epsilon1, ep1, norm1
            continue
        # SQUAREM: a second EM step, then an extrapolation along r and v
        theta2, epsilon2, gain2 = m_step(theta1, ep1, epsilon1)
        r, v = theta1 - theta, theta2 - 2.0 * theta1 + theta
        s = -np.sqrt(r @ r) / np.sqrt(v @ v) if v @ v > 0 else -1.0
        # Varadhan & Roland's step bound: |s| at most step_max, which starts at 1 (plain EM) and grows
        # fourfold each time the bound binds, so that the first jumps stay near the EM path
        if s <= -step_max:
            s, step_max = -step_max, 4.0 * step_max
        candidate, candidate_ep, candidate_norm = None, None, None
        while s < -1.0 and len(history) < max_iter - 1:
            trial = np.where(mask, np.clip(theta - 2.0 * s * r + s * s * v, bounds[:, 0], bounds[:, 1]), theta)
            saved = state["tau"], state["nu"]
            try:
                # e_step raises where EP needs jitter: like a point where EP did not converge, its evidence is
                # not to be trusted, and accepting it can carry the search far off (seen on 200 biopsies)
                trial_ep, trial_norm = e_step(trial, epsilon2, np.nan)
                if not trial_ep.converged:
                    history.pop()
                    raise FloatingPointError("EP is not reliable at the extrapolated point")
            except (np.linalg.LinAlgError, FloatingPointError):  # EP cannot run there: step back
                state["tau"], state["nu"] = saved
                s = 0.5 * (s - 1.0)
                continue
            # accept an extrapolation that raises the evidence and where K factorises (the M-step needs K⁻¹);
            # F is NaN where it does not, and may be −∞ legitimately (ε = 0: the step's log is −∞ on one side)
            if trial_ep.log_evidence >= ep1.log_evidence and not np.isnan(history[-1][1]):
                candidate, candidate_ep, candidate_norm = trial, trial_ep, trial_norm
                break
            state["tau"], state["nu"] = saved  # the next trial (or θ₂) warm-starts from θ₁'s sites
            s = 0.5 * (s - 1.0)
        if candidate is None:  # s reached −1: the extrapolation is plain EM's θ₂
            candidate, epsilon2, candidate_ep, candidate_norm = e_step_towards(
                theta1, theta2, epsilon1, epsilon2, gain2
            )
        converged = done(candidate_norm, candidate_ep.log_evidence, epsilon1, epsilon2)
        theta, epsilon, ep, norm = candidate, epsilon2, candidate_ep, candidate_norm
    tolerance = tol * max(1.0, abs(ep.log_evidence))
    if not converged and state["stuck"]:
        warnings.warn(
            f"EM-EP stopped after {len(history)} E-steps: EP cannot run at the M-step's proposal, even with the step "
            f"halved 20 times and EP started from the prior (the largest projected gradient component is {norm:.3g}, "
            f"tolerance {tol * max(1.0, abs(ep.log_evidence)):.3g}); the result is the last point where EP ran",
            ConvergenceWarning,
            stacklevel=2,
        )
    elif not converged:
        warnings.warn(
            f"EM-EP did not converge in {len(history)} E-steps: the largest projected gradient component of the EP "
            f"evidence is {norm:.3g} (tolerance {tolerance:.3g}); try acceleration='squarem', more iterations, or "
            "maximize_ep_evidence",
            ConvergenceWarning,
            stacklevel=2,
        )
    final_kernel = kernel.with_theta(theta)
    final_bound = variational_bound(ep, final_kernel, X, y)
    return EMEPResult(kernel=final_kernel, epsilon=float(epsilon), ep=ep, log_evidence=ep.log_evidence,
                      F=final_bound.F, n_iter=len(history), converged=bool(converged), gradient_norm=norm,
                      tolerance=tolerance, history=np.array(history), n_sweeps=state["sweeps"],
                      n_m_evaluations=state["m_evaluations"], acceleration=acceleration)  # fmt: skip


@dataclass(frozen=True)
class EvidenceFitResult:
    r"""Outcome of :func:`maximize_ep_evidence`: the kernel and ε at the maximum, EP there, and the search.

    Attributes
    ----------
    kernel : SEKernel
        The kernel at the maximum.
    epsilon : float
        The labelling-error rate there.
    ep : EPResult
        EP at the returned hyperparameters.
    log_evidence : float
        log Z_EP there.
    n_evaluations : int
        Evaluations of the EP evidence (each a warm-started EP run).
    n_sweeps : int
        EP sweeps over all evaluations.
    converged : bool
        The projected gradient passed :func:`gpc_ref.hyperparameters.maximize`'s test.
    optimization : HyperparameterFit
        The search.
    trace : ndarray (n_evaluations, 3)
        Per evaluation: log Z_EP, the seconds since the start, the EP sweeps so far.
    """

    kernel: SEKernel
    epsilon: float
    ep: EPResult
    log_evidence: float
    n_evaluations: int
    n_sweeps: int
    converged: bool
    optimization: HyperparameterFit = field(repr=False)
    trace: np.ndarray = field(repr=False, default=None)


def maximize_ep_evidence(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
                         likelihood: ProbitLikelihood | LabelNoiseLikelihood | None = None,
                         learn_epsilon: bool = True, fixed: Sequence[str] = (), n_restarts: int = 0,
                         rng: np.random.Generator | int | None = None, schedule: str = "parallel",
                         max_iter: int = 200, tol: float = 1e-5, damping: float = 1.0, ep_tol: float = 1e-6,
                         ep_tol_per_gradient: float = 0.01, progress: bool = False) -> EvidenceFitResult:  # fmt: skip
    r"""Maximise log Z_EP (K&G eq 12) directly over the log-parameters (and ε).

    Each evaluation runs EP to convergence (warm-started from the previous sites) and uses the
    fixed-point gradients :func:`~gpc_ref.ep.ep_evidence_gradient` and
    :func:`~gpc_ref.ep.ep_epsilon_gradient`; the search is :func:`gpc_ref.hyperparameters.maximize`.
    An evaluation where EP cannot run, or runs only with more jitter than requested on one of its
    factorisations (the evidence there would be that of another model), raises ``FloatingPointError``,
    which the maximiser treats as a failed evaluation: the step is rejected and the line search shrinks
    it (as EM-EP's SQUAREM rejects such extrapolations). A start where that happens is skipped.
    ε is optimised as η with ε = ½σ(η), so it stays in
    (0, ½); a starting ε of 0 is replaced by 0.01. The alternative to :func:`em_ep`,
    compared with it in the EP chapter.

    Parameters
    ----------
    kernel, X, y, likelihood, learn_epsilon, fixed, schedule, damping
        As in :func:`em_ep` (the starting kernel, inputs, labels, ...).
    n_restarts, rng, max_iter, tol, progress
        As in :func:`gpc_ref.hyperparameters.maximize` (``max_iter`` counts L-BFGS-B iterations per start).
    ep_tol : float
        EP's site tolerance near the optimum (tight, so that the value and gradient the search stops on are
        those of a fixed point).
    ep_tol_per_gradient : float
        Farther from the optimum EP stops at this multiple of the previous evaluation's relative gradient
        (largest component over max(1, abs(log Z_EP))), between ``ep_tol`` and 1e-3; 0 runs every evaluation
        to ``ep_tol``. The gradient's error is a few times EP's site tolerance and log Z_EP's error is
        second order in it (measured on 400 biopsies), so the default keeps the gradient within a few per
        cent of itself while saving sweeps; the EP chapter (section "EM-EP against direct maximisation")
        measures the saving.

    Returns
    -------
    EvidenceFitResult
    """
    kernel = check_kernel(kernel)
    X, y, likelihood, epsilon0, latent_noise, learn_epsilon = _prepare_learning_inputs(X, y, likelihood, learn_epsilon)
    ep_tol_per_gradient = float(check_positive(ep_tol_per_gradient, "ep_tol_per_gradient", allow_zero=True))
    free_theta = free_mask(kernel, fixed)
    theta0 = kernel.theta.copy()
    P = theta0.size
    ep_options = {"schedule": schedule, "damping": damping, "tol": ep_tol}
    state = {"tau": None, "nu": None, "sweeps": 0, "start": time.perf_counter(), "trace": [], "ep_tol": ep_tol}

    def unpack(params):
        return params[:P], (0.5 * float(expit(params[P])) if learn_epsilon else epsilon0)

    def reset():
        state["tau"] = state["nu"] = None
        state["ep_tol"] = ep_tol

    def run_ep(current, epsilon, tolerance):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                options = dict(ep_options, tol=tolerance)
                ep = _ep_at(current, X, y, epsilon, latent_noise, tau=state["tau"], nu=state["nu"], **options)
        except (np.linalg.LinAlgError, FloatingPointError):
            reset()
            raise
        state.update(tau=ep.tau, nu=ep.nu, sweeps=state["sweeps"] + ep.n_sweeps)
        state["trace"].append((ep.log_evidence, time.perf_counter() - state["start"], state["sweeps"]))
        gradient = ep_evidence_gradient(ep, kernel=current, X=X)
        if learn_epsilon:
            # dε/dη = ε(1 − 2ε)
            gradient = np.append(gradient, ep_epsilon_gradient(ep, y) * epsilon * (1.0 - 2.0 * epsilon))
        return ep, gradient

    def log_evidence(params):
        theta, epsilon = unpack(params)
        current = kernel.with_theta(theta)
        ep, gradient = run_ep(current, epsilon, state["ep_tol"])
        relative = float(np.max(np.abs(gradient[free]))) / max(1.0, abs(ep.log_evidence))
        if state["ep_tol"] > ep_tol and relative <= 10.0 * tol:
            # near the optimum the value and gradient that the search stops on come from EP run to ep_tol
            ep, gradient = run_ep(current, epsilon, ep_tol)
        # far from it a looser EP suffices for the next evaluation: an inexact gradient, its error a few
        # per cent of itself
        state["ep_tol"] = float(np.clip(ep_tol_per_gradient * relative, ep_tol, 1e-3))
        return ep.log_evidence, gradient

    start, free, bounds, names = theta0, free_theta, theta_box(kernel), list(kernel.theta_names)
    if learn_epsilon:
        eps_start = epsilon0 if epsilon0 > 0 else 0.01
        start = np.append(theta0, np.log(2.0 * eps_start) - np.log1p(-2.0 * eps_start))
        free, bounds = np.append(free_theta, True), np.vstack([bounds, [-15.0, 15.0]])
        names.append("logit(2 epsilon)")
    search = maximize(log_evidence, start, bounds=bounds, free=free, n_restarts=n_restarts, rng=rng,
                      max_iter=max_iter, tol=tol, reset=reset, progress=progress, names=names,
                      description="maximize_ep_evidence")  # fmt: skip
    theta, epsilon = unpack(search.theta)
    final_kernel = kernel.with_theta(theta)
    # EP ran without jitter at this point during the search; should it need jitter now, say so rather than fail
    ep = _ep_at(final_kernel, X, y, epsilon, latent_noise, tau=state["tau"], nu=state["nu"], reject_jitter=False,
                **ep_options)  # fmt: skip
    return EvidenceFitResult(kernel=final_kernel, epsilon=float(epsilon), ep=ep, log_evidence=ep.log_evidence,
                             n_evaluations=search.n_evaluations, n_sweeps=state["sweeps"] + ep.n_sweeps,
                             converged=search.converged, optimization=search,
                             trace=np.array(state["trace"]))  # fmt: skip
