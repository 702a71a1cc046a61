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
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from scipy.special import log_ndtr
from scipy.special import ndtr

from .acceleration import MAX_HALVINGS
from .acceleration import fixed_point_iteration
from .acceleration import squarem
from .ep import EPResult
from .ep import ep_epsilon_gradient
from .ep import ep_evidence_gradient
from .ep import site_likelihood
from .ep import trusted_ep_with_fallback
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
    "EMEPMap",
    "EMEPPoint",
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
    return _variational_bound(
        result, kernel, check_matrix(X, "X"), check_binary_labels(y, "y", coding="pm1").astype(float)
    )


def _variational_bound(result, kernel, X, y):
    """:func:`variational_bound` for checked inputs (X a float matrix, y in {−1, +1})."""
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
    epsilon_cycle : (float, float) or None
        When EM did not converge because K&G's r/n rule alternated between two values of ε over its last eight
        E-steps, those two values.
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
    epsilon_cycle: tuple[float, float] | None = None


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
            # the learner checked X and y once; K comes from the kernel: EP runs on trusted arguments
            result, _ = trusted_ep_with_fallback(
                kernel.K(X), y, likelihood, tau, nu, schedule, damping, tol, max_sweeps=200
            )
        except JitterWarning as exc:
            raise FloatingPointError(f"EP needed jitter here, so its evidence is not to be trusted: {exc}") from None
    return result


def _epsilon_cycle(history, window=8):
    """The two values ε alternated between over the last ``window`` E-steps of an EM-EP history, or None."""
    last = history[-window:, 3]
    if len(last) == window and len(set(last)) == 2 and np.all(last[1:] != last[:-1]):
        return float(min(last)), float(max(last))
    return None


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
    theta, ep, epsilon : ndarray (P,), EPResult, float
        The log-parameters the M-step starts from, q from the last E-step, and the current ε.
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
    proposal, the two take the same steps (``tests/package/test_ep.py``).

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


@dataclass(frozen=True)
class EMEPPoint:
    """What one evaluation of :class:`EMEPMap` knows about its point: θ, ε, EP there, step 3's gradient norm and
    K&G's bound ℱ (NaN where K does not factorise)."""

    theta: np.ndarray
    epsilon: float
    ep: EPResult
    gradient_norm: float
    F: float = np.nan


class EMEPMap:
    """Algorithm 8.2 (ep-alg-emep) as a fixed-point map x ↦ T(x) whose merit is log Z_EP, for
    :func:`~gpc_ref.acceleration.fixed_point_iteration` and :func:`~gpc_ref.acceleration.squarem`.

    x holds the learnt log-parameters and, when it is learnt, ε. One evaluation is the E-step at x (steps 1 and
    2.3, :func:`em_e_step`) and the M-step from there (steps 2.1–2.2, :func:`em_m_step`), so T(x) is the next point
    of plain EM and :meth:`converged` is step 3. Where EP cannot run at x (a cavity with negative precision, a
    covariance that does not factorise, more jitter than requested, no convergence), even started from the prior,
    the merit is −∞: the iteration then halves a plain step and rejects an extrapolation. The start is taken as
    given. The map keeps the sites of its last E-step to warm-start the next, a row of :data:`HISTORY_COLUMNS` per
    E-step, and counts of EP sweeps and M-step evaluations.

    Parameters
    ----------
    kernel, X, y
        The starting kernel, the inputs and the labels in {−1, +1} (checked by :func:`em_ep`).
    theta, epsilon : ndarray (P,), float
        The start; the entries of θ that are not learnt keep these values.
    latent_noise, free, bounds, learn_epsilon, epsilon_rule, m_step_max_iter, tol, ep_options
        As in :func:`em_e_step`, :func:`em_m_step` and :func:`em_ep`.
    progress : iterable
        Advanced once per EP run (a progress bar, or nothing).
    """

    def __init__(self, kernel: SEKernel, X: np.ndarray, y: np.ndarray, theta: np.ndarray, epsilon: float, *,
                 latent_noise: float, free: np.ndarray, bounds: np.ndarray, learn_epsilon: bool, epsilon_rule: str,
                 m_step_max_iter: int, tol: float, ep_options: dict, progress: Iterable = ()) -> None:  # fmt: skip
        self.kernel, self.X, self.y, self.theta0, self.epsilon0 = kernel, X, y, theta, epsilon
        self.latent_noise, self.free, self.bounds, self.learn_epsilon = latent_noise, free, bounds, learn_epsilon
        self.epsilon_rule, self.m_step_max_iter, self.tol, self.ep_options = (
            epsilon_rule,
            m_step_max_iter,
            tol,
            ep_options,
        )
        self.sites, self.history, self.n_sweeps, self.n_m_evaluations = (None, None), [], 0, 0
        self._progress, self._start = iter(progress), time.perf_counter()

    def pack(self, theta: np.ndarray, epsilon: float) -> np.ndarray:
        """x from the log-parameters θ and ε.

        Parameters
        ----------
        theta : ndarray (P,)
        epsilon : float

        Returns
        -------
        ndarray
            The learnt entries of θ, then ε if it is learnt.
        """
        return np.concatenate([theta[self.free], [epsilon] if self.learn_epsilon else []])

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """θ and ε from x (the parameters held fixed at their start).

        Parameters
        ----------
        x : ndarray

        Returns
        -------
        theta : ndarray (P,)
        epsilon : float
        """
        theta = self.theta0.copy()
        theta[self.free] = x[: int(np.sum(self.free))]
        return theta, float(x[-1]) if self.learn_epsilon else self.epsilon0

    def project(self, x: np.ndarray, x_plain: np.ndarray) -> np.ndarray:
        """An extrapolated point of SQUAREM made one the map can evaluate: θ clipped to the search box, and ε that of
        the plain step it replaces (an error count r/n is not extrapolated).

        Parameters
        ----------
        x, x_plain : ndarray
            The extrapolated point and the plain iterate x₂.

        Returns
        -------
        ndarray
        """
        x = x.copy()
        n_free = int(np.sum(self.free))
        x[:n_free] = np.clip(x[:n_free], self.bounds[self.free, 0], self.bounds[self.free, 1])
        if self.learn_epsilon:
            x[-1] = x_plain[-1]
        return x

    def _e_step(self, theta: np.ndarray, epsilon: float) -> tuple[EPResult, float, float] | None:
        """EP at (θ, ε) warm-started from the last sites, then from the prior; None where it cannot run."""
        first = not self.history
        for sites in (self.sites, (None, None)):
            next(self._progress, None)
            try:
                ep, norm = em_e_step(self.kernel, self.X, self.y, theta, epsilon, self.latent_noise, *sites, self.bounds,
                                     self.free, self.ep_options, reject_jitter=not first)  # fmt: skip
            except (np.linalg.LinAlgError, FloatingPointError):
                if first and sites[0] is None:
                    raise  # EP cannot run at the start
                continue
            try:
                F = _variational_bound(ep, self.kernel.with_theta(theta), self.X, self.y).F
            except np.linalg.LinAlgError:  # K is not numerically positive definite there
                F = np.nan
            if first or (ep.converged and not np.isnan(F)):  # F may be −∞ legitimately (ε = 0 with the step)
                return ep, norm, F
        return None

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray, EMEPPoint | None]:
        """One EM step from x: the E-step at x, then the M-step.

        Parameters
        ----------
        x : ndarray

        Returns
        -------
        merit : float
            log Z_EP at x; −∞ where EP cannot run at x.
        x_next : ndarray
            T(x), the M-step's proposal (x itself where EP cannot run).
        point : EMEPPoint or None
            θ, ε, EP and the gradient norm at x (None where EP cannot run).
        """
        theta, epsilon = self.unpack(x)
        e_step = self._e_step(theta, epsilon)
        if e_step is None:
            return -np.inf, x, None
        ep, norm, F = e_step
        self.sites, self.n_sweeps = (ep.tau, ep.nu), self.n_sweeps + ep.n_sweeps
        theta_next, epsilon_next, gain, n_evaluations = em_m_step(self.kernel, self.X, self.y, theta, ep, epsilon,
                                                                  self.bounds, self.free, self.m_step_max_iter,
                                                                  self.learn_epsilon, self.epsilon_rule)  # fmt: skip
        self.n_m_evaluations += n_evaluations
        self.history.append((ep.log_evidence, F, gain, epsilon, norm, time.perf_counter() - self._start, self.n_sweeps))
        return ep.log_evidence, self.pack(theta_next, epsilon_next), EMEPPoint(theta, epsilon, ep, norm, F)

    def converged(self, x_previous: np.ndarray | None, x: np.ndarray, point: EMEPPoint) -> bool:
        """Step 3 at x, reached from x_previous: the projected gradient within tolerance, and ε unchanged.

        Parameters
        ----------
        x_previous : ndarray or None
            The iterate x came from (None at the start, where ε cannot have been tested).
        x : ndarray
        point : EMEPPoint
            What the evaluation at x returned.

        Returns
        -------
        bool
        """
        if point.gradient_norm > self.tol * max(1.0, abs(point.ep.log_evidence)):
            return False
        return not self.learn_epsilon or (x_previous is not None and x[-1] == x_previous[-1])


def em_ep(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
          likelihood: ProbitLikelihood | LabelNoiseLikelihood | None = None, learn_epsilon: bool = True,
          epsilon_rule: str = "errors", fixed: Sequence[str] = (), acceleration: str | None = None,
          schedule: str = "parallel", max_iter: int = 200, tol: float = 1e-4, m_step_max_iter: int = 5,
          damping: float = 1.0, ep_tol: float = 1e-6, progress: bool = False) -> EMEPResult:  # fmt: skip
    """EM-EP, Algorithm 8.2 (ep-alg-emep) with safeguards (K&G §4, Appendix A), stopped by the evidence gradient.

    E-step: EP at (Θ_cov, ε), warm-started. M-step: a few L-BFGS-B iterations on ℱ_(Θ_cov) (K&G eqs 16, 17) with q
    fixed, then ε* = r/n (``epsilon_rule="errors"``, K&G) or the expected error rate (``"expected"``). EM stops when
    the largest component of the gradient of log Z_EP over the learnt log-parameters, projected on the box, is at
    most ``tol``·max(1, abs(log Z_EP)) and ε no longer changes (at a fixed point of EM that gradient is zero); else a
    ConvergenceWarning names the gradient norm. Beyond :func:`em_ep_core` this function checks its arguments,
    holds ``fixed`` parameters, records a history and progress, and runs EM as the fixed-point map
    :class:`EMEPMap`: where EP cannot run at a proposal (or needs jitter, or does not converge) it retries from the
    prior and halves the step, and ``acceleration="squarem"`` extrapolates EM by
    :func:`gpc_ref.acceleration.squarem` (same map, same stopping rule, same fixed points).

    Parameters
    ----------
    kernel, X, y
        Starting kernel; inputs (n, D); labels in {−1, +1} (or {0, 1}).
    likelihood : LabelNoiseLikelihood or ProbitLikelihood, optional
        K&G's step ``LabelNoiseLikelihood(0, 0)`` by default (its ε is the start); with a probit ε stays 0.
    learn_epsilon, epsilon_rule, fixed
        Whether the M-step updates ε, by which rule, and the kernel parameters (names) held at their start.
    acceleration : {None, "squarem"}
        Plain EM (K&G) or SQUAREM-extrapolated EM.
    schedule, damping, ep_tol
        EP's schedule, starting damping and tolerance in the E-steps.
    max_iter, tol, m_step_max_iter, progress
        E-steps at most, the relative tolerance of the gradient test, L-BFGS-B iterations per M-step, a progress bar.

    Returns
    -------
    EMEPResult
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
    em_map = EMEPMap(kernel, X, y, theta, epsilon, latent_noise=latent_noise, free=mask, bounds=bounds,
                     learn_epsilon=learn_epsilon, epsilon_rule=epsilon_rule, m_step_max_iter=m_step_max_iter, tol=tol,
                     ep_options={"schedule": schedule, "damping": damping, "tol": ep_tol},
                     progress=with_progress(range(max_iter), progress, "EM-EP"))  # fmt: skip
    x0 = em_map.pack(theta, epsilon)
    if acceleration is None:  # K&G's EM
        run = fixed_point_iteration(em_map, x0, max_evaluations=max_iter, stop=em_map.converged)
    else:  # the same map, extrapolated; Varadhan & Roland's step bound keeps the first jumps near the EM path
        run = squarem(em_map, x0, max_evaluations=max_iter, stop=em_map.converged, project=em_map.project,
                      step_max=1.0)  # fmt: skip
    point, n_e_steps = run.state, len(em_map.history)
    history = np.array(em_map.history)
    epsilon_cycle = _epsilon_cycle(history) if learn_epsilon and not run.converged else None
    tolerance = tol * max(1.0, abs(point.ep.log_evidence))
    if run.stalled:
        warnings.warn(
            f"EM-EP stopped after {n_e_steps} E-steps: EP cannot run at the M-step's proposal, even with the step "
            f"halved {MAX_HALVINGS} times and EP started from the prior (the largest projected gradient component is "
            f"{point.gradient_norm:.3g}, tolerance {tolerance:.3g}); the result is the last point where EP ran",
            ConvergenceWarning,
            stacklevel=2,
        )
    elif not run.converged:
        cycle = (
            f"; epsilon alternates between {epsilon_cycle[0]:.4g} and {epsilon_cycle[1]:.4g} in the last E-steps "
            "(K&G's r/n rule is cycling, so step 3's 'epsilon unchanged' cannot pass)"
            if epsilon_cycle
            else ""
        )
        warnings.warn(
            f"EM-EP did not converge in {n_e_steps} E-steps: the largest projected gradient component of the EP "
            f"evidence is {point.gradient_norm:.3g} (tolerance {tolerance:.3g}){cycle}; try acceleration='squarem', "
            "more iterations, or maximize_ep_evidence",
            ConvergenceWarning,
            stacklevel=2,
        )
    final_kernel = kernel.with_theta(point.theta)
    return EMEPResult(kernel=final_kernel, epsilon=float(point.epsilon), ep=point.ep, log_evidence=point.ep.log_evidence,
                      F=point.F, n_iter=n_e_steps,
                      converged=bool(run.converged), gradient_norm=point.gradient_norm, tolerance=tolerance,
                      history=history, n_sweeps=em_map.n_sweeps,
                      n_m_evaluations=em_map.n_m_evaluations, acceleration=acceleration,
                      epsilon_cycle=epsilon_cycle)  # fmt: skip


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
    factorisations (the evidence there would be that of another model), is a failed evaluation: the
    maximiser's line search shrinks the step, and a start where that happens is skipped. ε is optimised as η
    with ε = ½σ(η), so it stays in (0, ½); a starting ε of 0 is replaced by 0.01. The alternative to
    :func:`em_ep`, compared with it in the EP chapter.

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
        to ``ep_tol``. The gradient's error is a few times EP's site tolerance, so the default keeps it within a
        few per cent of itself; the EP chapter (section "EM-EP against direct maximisation") measures the saving.

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
