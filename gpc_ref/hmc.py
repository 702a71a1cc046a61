r"""Hybrid (Hamiltonian) Monte Carlo, and its use over GP hyperparameters (Williams & Barber).

Notation (book symbol ← code name):

=====================  ===================  ================================================
book                   code                 meaning
=====================  ===================  ================================================
x ∈ ℝ^D                ``x``                position: the variables being sampled
p ∈ ℝ^D                ``p``                momentum, one per position variable
log π(x)               ``log_prob``         log target density (up to a constant)
E(x) = -log π(x)       (``-log_prob``)      potential energy (W&B's ℰ)
M = diag(m)            ``mass``             mass matrix (diagonal; scalar = m I)
K(p) = ½ pᵀ M⁻¹ p      (kinetic)            kinetic energy
H(x, p) = E(x) + K(p)  (energy)             Hamiltonian (W&B's ℋ)
ε                      ``step_size``        leapfrog step size
L                      ``n_leapfrog``       leapfrog steps per trajectory
ΔH                     ``energy_error``     H(x*, p*) - H(x, p) of a proposal
ρ_k                    ``autocorrelation``  lag-k autocorrelation of a chain
τ                      (``n / ess``)        integrated autocorrelation time
θ                      ``theta``            the kernel's log-parameters (``SEKernel.theta``)
ϕ = Aθ                 ``phi``              W&B's log-hyperparameters
                                            (log v_0, log w_1, …, log w_d)
=====================  ===================  ================================================

W&B (1997, eq 8) write the covariance as v_0 exp(-½∑_l w_l (x_l - x'_l)²)
and put independent N(-3, 3²) priors on ϕ = (log v_0, log w_1, …,
log w_d). Our kernel has v_0 = σ_f² and w_l = 1/ℓ_l², so with
``theta = (log σ_f², log ℓ_1, ..., log ℓ_d)``

    ϕ = Aθ, A = diag(1, -2, ṡ, -2),

i.e. log w_l = -2 log ℓ_l (a bias v_1 or a learnt jitter keeps factor 1).
:func:`laplace_hmc` samples in W&B's coordinates ϕ, where their prior, step size
ε = 0.1 and starting point are stated, and reports both ϕ and θ. In
our coordinates the same prior is log σ_f² ~ N(-3, 3²),
log ℓ_l ~ N(1.5, 1.5²); running the sampler in θ with unit mass
would be a different Markov chain with the same target (it would move the log lengthscales
twice as far per step).

References
----------
- [Duane87] Duane, Kennedy, Pendleton & Roweth (1987), *Hybrid Monte Carlo*.
- [Neal11] Neal (2011), *MCMC using Hamiltonian dynamics*, §5.2–5.4 (leapfrog eqs 5.18–5.20,
  the HMC algorithm §5.3.2, detailed balance §5.3.3) and §5.4.1 (a diagonal mass matrix is a linear
  change of coordinates).
- [WB97] Williams & Barber (1997), §2.3: HMC over the log-hyperparameters with the Laplace
  evidence (eq 10), ε = 0.1, L = 20, 200 iterations, first third burn-in, N(−3, 3²) priors;
  eq 9: predictions averaged over the hyperparameter posterior.
- [WB98] Williams & Barber (1998), Appendix D (HMC) and Appendix B (evidence gradient).
- [Geyer92] Geyer (1992), *Practical Markov chain Monte Carlo*: the initial positive
  sequence estimator of the integrated autocorrelation time.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike

from .errors import ConvergenceWarning
from .hyperpriors import gaussian_log_prior
from .hyperpriors import wb_scale
from .kernels import SEKernel
from .laplace import laplace_evidence
from .laplace import laplace_mode
from .laplace import laplace_predict_latent
from .laplace import laplace_predict_proba
from .likelihoods import BinaryLikelihood
from .progress import with_progress
from .validation import check_binary_labels
from .validation import check_matrix
from .validation import check_positive_int
from .validation import check_positive_scalar
from .validation import check_positive_vector
from .validation import check_rng
from .validation import check_vector

__all__ = [
    "LeapfrogResult",
    "HMCResult",
    "LaplaceHMCResult",
    "leapfrog",
    "hmc_sample",
    "HyperPosterior",
    "wb_log_posterior",
    "laplace_hmc",
    "HMCPrediction",
    "laplace_hmc_predict",
]


# ===================================================================== generic HMC
@dataclass(frozen=True)
class LeapfrogResult:
    r"""End point of a leapfrog trajectory.

    Attributes
    ----------
    x, p : ndarray (D,)
        Position and momentum after the last step (momentum *not* negated).
    log_prob : float
        log π(x) at the end point; ``-inf`` when the trajectory was abandoned.
    grad : ndarray (D,)
        ∇log π(x) at the end point.
    n_evaluations : int
        Calls of the target made (``n_leapfrog`` unless abandoned early).
    finite : bool
        False if the target returned NaN/inf (or failed numerically) on the way: the
        trajectory stops there and the proposal must be rejected.
    """

    x: np.ndarray
    p: np.ndarray
    log_prob: float
    grad: np.ndarray
    n_evaluations: int
    finite: bool


@dataclass(frozen=True)
class HMCResult:
    r"""A Hybrid Monte Carlo run.

    Attributes
    ----------
    samples : ndarray (n_iter - burn_in, D)
        The retained states (after burn-in).
    all_samples : ndarray (n_iter, D)
        The state after each iteration (a rejected proposal repeats the previous state).
    log_prob : ndarray (n_iter,)
        log π of each state in ``all_samples``.
    accepted : ndarray of bool (n_iter,)
        Whether iteration i's proposal was accepted.
    energy_error : ndarray (n_iter,)
        ΔH of each proposal; ``inf`` for a proposal whose energy was not finite.
    acceptance_rate : float
        Fraction of accepted proposals over all iterations.
    burn_in : int
        Number of leading iterations discarded.
    n_nonfinite : int
        Proposals rejected because the target was NaN/inf (or failed) along the trajectory.
    n_evaluations : int
        Total calls of ``log_prob_and_grad``, including the one at ``x0``.
    step_size, n_leapfrog : float, int
        The settings used.
    mass : ndarray (D,)
        The diagonal of the mass matrix.
    """

    samples: np.ndarray
    all_samples: np.ndarray
    log_prob: np.ndarray
    accepted: np.ndarray
    energy_error: np.ndarray
    acceptance_rate: float
    burn_in: int
    n_nonfinite: int
    n_evaluations: int
    step_size: float
    n_leapfrog: int
    mass: np.ndarray


def _evaluate(log_prob_and_grad, x):
    """Call the target; a numerical failure or a NaN/inf value means "energy infinite"."""
    try:
        # overflow far out on a diverging trajectory is expected: it becomes a rejection below
        with np.errstate(over="ignore", invalid="ignore"):
            log_prob, grad = log_prob_and_grad(x)
    except (np.linalg.LinAlgError, FloatingPointError, OverflowError):
        return -np.inf, np.full(x.shape, np.nan), False
    log_prob = float(log_prob)
    grad = np.asarray(grad, dtype=float)
    if grad.shape != x.shape:
        raise ValueError(f"log_prob_and_grad must return a gradient of shape {x.shape}; got {grad.shape}")
    finite = bool(np.isfinite(log_prob) and np.all(np.isfinite(grad)))
    return (log_prob if finite else -np.inf), grad, finite


def leapfrog(
    log_prob_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x: ArrayLike,
    p: ArrayLike,
    *,
    step_size: float,
    n_leapfrog: int,
    mass: float | ArrayLike = 1.0,
    grad: ArrayLike | None = None,
) -> LeapfrogResult:
    r"""Simulate Hamiltonian dynamics with ``n_leapfrog`` leapfrog steps (Neal 2011, eqs 5.18–5.20).

    For H(x, p) = -log π(x) + ½ pᵀ M⁻¹ p each step is

        p ← p + (ε/2) ∇log π(x),
        x ← x + εM⁻¹ p,
        p ← p + (ε/2) ∇log π(x),

    with the half steps of consecutive steps merged; the map is volume preserving and time reversible.

    Parameters
    ----------
    log_prob_and_grad : callable
        ``x -> (log π(x), ∇log π(x))``.
    x, p : array (D,)
        Starting position and momentum.
    step_size, n_leapfrog : float, int
        The step size ε > 0 and the number of steps L ≥ 1.
    mass : float or array (D,)
        Diagonal of the mass matrix M.
    grad : array (D,), optional
        ∇log π(x) at the start, if already known (saves one evaluation).

    Returns
    -------
    LeapfrogResult
        The end point (x*, p*) and the target there. If the target is NaN/inf (or raises a numerical
        error) on the way, the trajectory is abandoned and ``finite`` is False.
    """
    if not callable(log_prob_and_grad):
        raise ValueError("log_prob_and_grad must be a callable x -> (log_prob, grad)")
    x = check_vector(x, "x").copy()
    p = check_vector(p, "p", length=x.shape[0]).copy()
    step_size = check_positive_scalar(step_size, "step_size")
    n_leapfrog = check_positive_int(n_leapfrog, "n_leapfrog")
    mass = check_positive_vector(mass, "mass", x.shape[0])
    n_evaluations = 0
    if grad is None:
        _, grad, finite = _evaluate(log_prob_and_grad, x)
        n_evaluations += 1
        if not finite:
            return LeapfrogResult(x, p, -np.inf, grad, n_evaluations, False)
    grad = np.asarray(grad, dtype=float)
    # Neal (2011) eq 5.18: half step for the momentum
    p = p + 0.5 * step_size * grad
    for step in range(n_leapfrog):
        # Neal (2011) eq 5.19: full step for the position
        x = x + step_size * p / mass
        log_prob, grad, finite = _evaluate(log_prob_and_grad, x)
        n_evaluations += 1
        if not finite:
            return LeapfrogResult(x, p, -np.inf, grad, n_evaluations, False)
        # Neal (2011) eq 5.20 (+ eq 5.18 of the next step): a full momentum step, a half one at the end
        p = p + (step_size if step < n_leapfrog - 1 else 0.5 * step_size) * grad
    return LeapfrogResult(x, p, log_prob, grad, n_evaluations, True)


def hmc_sample(log_prob_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: ArrayLike, *,
               rng: np.random.Generator | int, step_size: float = 0.1, n_leapfrog: int = 20, n_iter: int = 200,
               burn_in: int | None = None, mass: float | ArrayLike = 1.0, progress: bool = False,
               ) -> HMCResult:  # fmt: skip
    r"""Hybrid Monte Carlo (Duane et al. 1987; Neal 2011 §5.3; W&B 1997 §2.3): Algorithm 5.1 (laph-alg-hmc).

    Each iteration draws p ~ N(0, M), follows ``n_leapfrog`` steps of :func:`leapfrog` to (x*, p*) and accepts x*
    with probability min(1, e^(−ΔH)), ΔH = H(x*, p*) − H(x, p); a NaN/inf energy, or a target failing on the way,
    rejects. Per iteration ``rng`` gives D normals, then one uniform (even for a certain rejection): same seed, same run.

    Parameters
    ----------
    log_prob_and_grad : callable
        ``x -> (log π(x), ∇log π(x))``, the log target up to a constant and its gradient.
    x0 : array (D,)
        Starting state; the target must be finite there.
    rng : numpy.random.Generator or int
    step_size, n_leapfrog, n_iter, burn_in : float, int, int, int or None
        Step size ε, leapfrog steps per proposal L, HMC iterations, and leading iterations discarded (< ``n_iter``);
        the defaults are W&B's: 0.1, 20, 200 and the first third (``n_iter // 3``).
    mass : float or array (D,)
        Diagonal mass matrix; a mass m_j is equivalent to sampling x_j √m_j with unit mass (Neal 2011 §5.4.1).
    progress : bool
        Show a tqdm progress bar (tqdm is imported only then).

    Returns
    -------
    HMCResult
        Every state, the retained ones, and the run's acceptance and energy-error record.

    Warns
    -----
    ConvergenceWarning
        If no proposal was accepted in ``n_iter`` iterations (the step size is too large).
    """
    if not callable(log_prob_and_grad):
        raise ValueError("log_prob_and_grad must be a callable x -> (log_prob, grad)")
    x = check_vector(x0, "x0").copy()
    rng = check_rng(rng)
    step_size = check_positive_scalar(step_size, "step_size")
    n_leapfrog = check_positive_int(n_leapfrog, "n_leapfrog")
    n_iter = check_positive_int(n_iter, "n_iter")
    burn_in = n_iter // 3 if burn_in is None else check_positive_int(burn_in, "burn_in", minimum=0)
    if burn_in >= n_iter:
        raise ValueError(f"burn_in must be smaller than n_iter = {n_iter}; got {burn_in}")
    mass = check_positive_vector(mass, "mass", x.shape[0])
    dim = x.shape[0]

    log_prob, grad, finite = _evaluate(log_prob_and_grad, x)
    if not finite:
        raise ValueError(f"x0: log_prob_and_grad must be finite at the starting state; got log_prob = {log_prob}")
    n_evaluations = 1

    all_samples = np.empty((n_iter, dim))
    log_probs = np.empty(n_iter)
    accepted = np.zeros(n_iter, dtype=bool)
    energy_error = np.empty(n_iter)
    n_nonfinite = 0
    for i in with_progress(range(n_iter), progress, "HMC"):
        # Neal (2011) §5.3.2 step 1 / W&B (1997) §2.3 (ii): Gibbs-sample the momentum, p ~ N(0, M)
        p = np.sqrt(mass) * rng.standard_normal(dim)
        # W&B (1997) §2.3: H = E + K with E = −log π(x), K = pᵀM⁻¹p/2
        energy = -log_prob + 0.5 * np.sum(p**2 / mass)
        # Neal (2011) §5.3.2 step 2 / W&B (1997) §2.3 (i): L leapfrog steps of size ε
        end = leapfrog(log_prob_and_grad, x, p, step_size=step_size, n_leapfrog=n_leapfrog, mass=mass, grad=grad)
        n_evaluations += end.n_evaluations
        new_energy = -end.log_prob + 0.5 * np.sum(end.p**2 / mass) if end.finite else np.inf
        delta = new_energy - energy
        if not np.isfinite(delta):
            delta = np.inf
            n_nonfinite += 1
        # Metropolis rule: accept with probability min(1, exp(−ΔH)) (Neal 2011 §5.3.2 step 3)
        log_u = np.log(rng.uniform())
        if log_u < -delta:
            x, log_prob, grad = end.x, end.log_prob, end.grad
            accepted[i] = True
        all_samples[i] = x
        log_probs[i] = log_prob
        energy_error[i] = delta

    if not accepted.any():
        warnings.warn(
            f"HMC accepted none of its {n_iter} proposals; reduce step_size (now {step_size})",
            ConvergenceWarning,
            stacklevel=2,
        )
    return HMCResult(
        samples=all_samples[burn_in:].copy(),
        all_samples=all_samples,
        log_prob=log_probs,
        accepted=accepted,
        energy_error=energy_error,
        acceptance_rate=float(accepted.mean()),
        burn_in=burn_in,
        n_nonfinite=n_nonfinite,
        n_evaluations=n_evaluations,
        step_size=step_size,
        n_leapfrog=n_leapfrog,
        mass=mass,
    )


# ===================================================================== HMC over GP hyperparameters (W&B)
@dataclass(frozen=True)
class HyperPosterior:
    r"""W&B's log hyperparameter posterior at one point φ (up to the constant log p(t)).

    Attributes
    ----------
    value : float
        log q(t|ϕ) + log p(ϕ); ``-inf`` if the Laplace mode did not converge.
    gradient : ndarray (P,)
        Its gradient with respect to φ.
    log_evidence, log_prior : float
        The two parts of ``value``.
    mode : LaplaceMode
        The Laplace mode at φ (use ``mode.f`` to warm-start the next evaluation).
    """

    value: float
    gradient: np.ndarray
    log_evidence: float
    log_prior: float
    mode: object = field(repr=False)


def wb_log_posterior(
    kernel: SEKernel,
    X: ArrayLike,
    y: ArrayLike,
    phi: ArrayLike,
    *,
    prior_mean: float = -3.0,
    prior_sd: float = 3.0,
    likelihood: BinaryLikelihood | None = None,
    f_init: ArrayLike | None = None,
) -> HyperPosterior:
    r"""The potential of W&B's HMC: -E(ϕ) = log q(t|ϕ) + log p(ϕ) and its gradient.

    ϕ = Aθ are W&B's coordinates (:func:`gpc_ref.hyperpriors.wb_scale`); the Laplace log
    evidence and its θ-gradient (with the implicit term) come from
    :func:`~gpc_ref.laplace.laplace_evidence` at ``kernel.with_theta(phi / A)``, and
    ∇_ϕ = A⁻¹∇_θ by the chain rule. The prior is
    :func:`gaussian_log_prior` on φ. Its density is in φ; the density of θ differs by the
    constant log|det A| (see :func:`gpc_ref.hyperpriors.log_hyperprior`), which changes neither
    gradients nor the maximiser.

    A Laplace mode that did not converge gives ``value = -inf`` (its evidence would be wrong);
    HMC then rejects the proposal.

    Parameters
    ----------
    kernel : SEKernel
        Defines the structure (which parameters); its own values are not used.
    X, y, likelihood, f_init
        As in :func:`~gpc_ref.laplace.laplace_evidence` (``f_init`` warm-starts Newton).
    phi : array (P,)
        W&B's log-hyperparameters.
    prior_mean, prior_sd : float
        As in :func:`~gpc_ref.hyperpriors.gaussian_log_prior`.

    Returns
    -------
    HyperPosterior
        The value, its φ-gradient, its two parts and the Laplace mode.
    """
    scale = wb_scale(kernel)
    phi = check_vector(phi, "phi", length=scale.shape[0])
    with warnings.catch_warnings():
        # a non-converged Newton search is reported through value = −inf, not a warning
        warnings.simplefilter("ignore", ConvergenceWarning)
        evidence = laplace_evidence(kernel.with_theta(phi / scale), X, y, likelihood=likelihood, f_init=f_init)
    log_prior, prior_gradient = gaussian_log_prior(phi, prior_mean, prior_sd)
    if not evidence.mode.converged:
        return HyperPosterior(-np.inf, np.zeros_like(phi), -np.inf, log_prior, evidence.mode)
    # W&B (1997) §2.3: E = −log P_a(t|θ) − log P(θ); chain rule ∇_φ = A⁻¹ ∇_θ
    return HyperPosterior(
        evidence.log_evidence + log_prior,
        evidence.gradient / scale + prior_gradient,
        evidence.log_evidence,
        log_prior,
        evidence.mode,
    )


@dataclass(frozen=True)
class LaplaceHMCResult:
    r"""HMC over the log-hyperparameters with the Laplace evidence (W&B 1997 §2.3).

    Attributes
    ----------
    thetas : ndarray (n_retained, P)
        Retained samples in the kernel's coordinates (``kernel.theta``).
    phis : ndarray (n_retained, P)
        The same samples in W&B's coordinates ϕ = Aθ.
    all_thetas : ndarray (n_iter, P)
        Every state, burn-in included.
    log_posterior : ndarray (n_iter,)
        log q(y|θ) + log p(ϕ) of every state (density in φ, up to a constant).
    log_evidence : ndarray (n_iter,)
        The Laplace log evidence log q(y|θ) (W&B eq 10) of every state.
    acceptance_rate : float
    theta_names : list of str
    kernel : SEKernel
        The starting kernel (its ``theta`` was the first state); :meth:`kernels` gives the samples.
    scale : ndarray (P,)
        A in ϕ = Aθ.
    prior_mean, prior_sd : float
    n_newton : int
        Newton iterations spent in all Laplace mode searches.
    n_unconverged : int
        Evaluations where Newton did not converge (treated as infinite energy: rejected).
    hmc : HMCResult
        The underlying run in φ coordinates.
    """

    thetas: np.ndarray
    phis: np.ndarray
    all_thetas: np.ndarray
    log_posterior: np.ndarray
    log_evidence: np.ndarray
    acceptance_rate: float
    theta_names: list
    kernel: SEKernel
    scale: np.ndarray
    prior_mean: float
    prior_sd: float
    n_newton: int
    n_unconverged: int
    hmc: HMCResult = field(repr=False)

    def kernels(self) -> list[SEKernel]:
        """One kernel per retained sample.

        Returns
        -------
        list of SEKernel
            ``kernel.with_theta(theta)`` for each row of ``thetas``.
        """
        return [self.kernel.with_theta(theta) for theta in self.thetas]


def laplace_hmc(
    kernel: SEKernel,
    X: ArrayLike,
    y: ArrayLike,
    *,
    rng: np.random.Generator | int,
    prior_mean: float = -3.0,
    prior_sd: float = 3.0,
    step_size: float = 0.1,
    n_leapfrog: int = 20,
    n_iter: int = 200,
    burn_in: int | None = None,
    likelihood: BinaryLikelihood | None = None,
    progress: bool = False,
) -> LaplaceHMCResult:
    r"""Sample GP log-hyperparameters by HMC on the Laplace-approximate posterior (W&B 1997 §2.3).

    The target is W&B's p(ϕ|t) ∝ q(t|ϕ) p(ϕ): the Laplace evidence of :func:`~gpc_ref.laplace.laplace_evidence`
    (W&B eq 10; exact gradient, implicit term included) and independent N(μ_0, s_0²) priors on W&B's coordinates
    ϕ = Aθ = (log v_0, log w_1, …, log w_d) (:func:`gpc_ref.hyperpriors.wb_scale`). The chain runs in ϕ with
    unit mass, so ε means what it means in the paper. Newton is warm-started from the previous evaluation's mode
    (the same mode as W&B's fresh start at π = ½, to the Newton tolerance); an evaluation whose Newton does not
    converge counts as infinite energy, so its proposal is rejected (``n_unconverged`` counts them).

    Parameters
    ----------
    kernel : SEKernel
        Its structure (ARD or not, bias) defines the hyperparameters and its ``theta`` the
        starting state. W&B start at log v_0 = 0, log w_l = -2, i.e.
        ``SEKernel(variance=1.0, lengthscale=np.full(d, np.e))``.
    X, y, likelihood
        As in :func:`~gpc_ref.laplace.laplace_evidence` (default likelihood: logistic, as W&B).
    rng, step_size, n_leapfrog, n_iter, burn_in, progress
        As in :func:`hmc_sample`; the defaults are W&B's (ε = 0.1, L = 20, 200 iterations,
        first third discarded).
    prior_mean, prior_sd : float
        The N(−3, 3²) prior of W&B on each φ_j.

    Returns
    -------
    LaplaceHMCResult
        The samples in θ and in φ, their log posterior and evidence, and the run.
    """
    scale = wb_scale(kernel)
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", coding="pm1", length=X.shape[0])
    check_vector(prior_mean, "prior_mean", length=1)
    check_positive_scalar(prior_sd, "prior_sd")
    # warm start and bookkeeping, shared by the successive calls of the target
    state = {"f": None, "n_newton": 0, "n_unconverged": 0}

    def log_posterior_and_grad(phi):
        if np.any(np.abs(phi / scale) > 700.0):  # exp(θ) would overflow: outside any sensible model
            return -np.inf, np.zeros_like(phi)
        point = wb_log_posterior(
            kernel, X, y, phi, prior_mean=prior_mean, prior_sd=prior_sd, likelihood=likelihood, f_init=state["f"]
        )
        state["n_newton"] += int(point.mode.n_iter)
        if np.isfinite(point.value):
            state["f"] = point.mode.f  # warm start for the next evaluation, one leapfrog step away
        else:
            state["n_unconverged"] += 1
        return point.value, point.gradient

    run = hmc_sample(
        log_posterior_and_grad,
        scale * kernel.theta,
        rng=rng,
        step_size=step_size,
        n_leapfrog=n_leapfrog,
        n_iter=n_iter,
        burn_in=burn_in,
        mass=1.0,
        progress=progress,
    )
    all_thetas = run.all_samples / scale
    log_priors = np.array([gaussian_log_prior(phi, prior_mean, prior_sd)[0] for phi in run.all_samples])
    return LaplaceHMCResult(
        thetas=run.samples / scale,
        phis=run.samples.copy(),
        all_thetas=all_thetas,
        log_posterior=run.log_prob,
        log_evidence=run.log_prob - log_priors,
        acceptance_rate=run.acceptance_rate,
        theta_names=list(kernel.theta_names),
        kernel=kernel,
        scale=scale,
        prior_mean=float(prior_mean),
        prior_sd=float(prior_sd),
        n_newton=state["n_newton"],
        n_unconverged=state["n_unconverged"],
        hmc=run,
    )


@dataclass(frozen=True)
class HMCPrediction:
    r"""Predictions averaged over the HMC samples of the hyperparameters (W&B 1997 eq 9).

    Attributes
    ----------
    mean, var : ndarray (m,)
        Mean and variance of the latent predictive, the equal-weight mixture over the samples of
        the Laplace latent predictives N(μ_∗^(s), s_∗^(2(s))) (law of total variance).
    proba : ndarray (m,)
        P(y_∗ = +1) averaged over the samples.
    """

    mean: np.ndarray
    var: np.ndarray
    proba: np.ndarray


def laplace_hmc_predict(
    result: LaplaceHMCResult,
    X: ArrayLike,
    y: ArrayLike,
    X_test: ArrayLike,
    *,
    method: str = "erf_mixture",
    likelihood: BinaryLikelihood | None = None,
    progress: bool = False,
) -> HMCPrediction:
    r"""Predictions averaged over the retained hyperparameter samples (W&B 1997 eq 9).

        π̄(x_∗) = ∫ π̂(x_∗|θ) p(θ|t) dθ
        ≈ (1/S) ∑_(s=1)^S π̂(x_∗|θ^(s)),

    where π̂(x_∗|θ) is the Laplace prediction at fixed hyperparameters (mode, latent
    mean and variance, then the erf mixture or ``method``). A rejected proposal repeats a sample,
    and its prediction is reused rather than recomputed.

    Parameters
    ----------
    result : LaplaceHMCResult
        The chain (:func:`laplace_hmc`).
    X, y, likelihood
        The training data and likelihood the chain was run with.
    X_test : array (m, d)
        Test inputs.
    method : str
        How the Gaussian–sigmoid integral is done (``laplace_predict_proba``'s ``method``).
    progress : bool
        Show a progress bar over the samples.

    Returns
    -------
    HMCPrediction
        The mixture's latent mean and variance and the averaged P(y_∗ = +1).
    """
    if not isinstance(result, LaplaceHMCResult):
        raise ValueError(f"result must be a LaplaceHMCResult; got {type(result).__name__}")
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", coding="pm1", length=X.shape[0])
    X_test = check_matrix(X_test, "X_test", n_features=X.shape[1])
    total_p, total_mean, total_second = (np.zeros(X_test.shape[0]) for _ in range(3))
    previous_theta, f_init = None, None
    for s in with_progress(range(len(result.thetas)), progress, "HMC predictions"):
        theta = result.thetas[s]
        if previous_theta is None or not np.array_equal(theta, previous_theta):
            candidate = result.kernel.with_theta(theta)
            mode = laplace_mode(candidate.K(X), y, likelihood=likelihood, f_init=f_init)
            f_init = mode.f
            mean, var = laplace_predict_latent(mode, candidate, X, X_test)
            proba = laplace_predict_proba(mean, var, method=method, likelihood=likelihood)
            previous_theta = theta
        # W&B (1997) eq 9: average the fixed-θ predictions over the posterior samples
        total_p += proba
        total_mean += mean
        total_second += var + mean**2
    S = len(result.thetas)
    mixture_mean = total_mean / S
    return HMCPrediction(mixture_mean, np.maximum(total_second / S - mixture_mean**2, 0.0), total_p / S)
