r"""The binary Laplace approximation for GP classification (Williams & Barber).

The posterior over the latent values p(f|y) ∝ p(y|f)
N(f|0, K) is replaced by the Gaussian centred at its mode with the curvature of its log
there, q(f|y) = N(f̂, (K⁻¹ + W)⁻¹). The mode is found
by Newton's method (W&B 1997 eq 7) written in the numerically stable form of GPML Algorithm 3.1,
which factorises only B = I + W^½ K W^½ (eigenvalues ≥ 1) and never K.

Notation, binary section (book symbol ← code name; W&B 1997's own symbol after "W&B"):

- y_i ∈ {-1, +1} ← ``y``: class label; W&B use t_i = (y_i+1)/2 ∈ {0, 1} ← ``t``.
- f_i ← ``f``: latent value at x_i (W&B's *activation* y_i);
  f̂ ← ``mode.f``: the posterior mode (W&B's ŷ).
- π_i = σ(f_i) ← ``pi``: probability of class +1 at the latent value.
- K ← ``K``: prior covariance of f (jitter included); θ ← ``theta``:
  log kernel parameters (``SEKernel.theta``). W&B's θ = log(v_0, w_1, …, w_d) with
  v_0 = σ_f² and w_l = 1/ℓ_l².
- W = -∇∇log p(y|f) ← ``W``, stored as its diagonal (logistic:
  π_i(1-π_i), W&B's W); W^½ ← ``sqrt_W``.
- B = I + W^½KW^½ ← ``B``, with lower Cholesky factor ``L``.
- a = K⁻¹f ← ``a``; at the mode a = ∇log p(y|f̂)
  = t - π̂ (logistic) ← ``grad_log_lik``.
- Ψ(f) = log p(y|f) - ½fᵀK⁻¹f ← ``psi``
  (W&B's Ψ, eq 3, without its constants).
- log q(y|X,θ) ← ``log_evidence``: the approximate log evidence (W&B eq 10,
  their log P_a(t|θ)).
- k_∗ = K(X, x_∗) ← ``K_star``; μ_∗, s_∗² ← ``mean, var``: latent predictive
  mean and variance (W&B's ŷ_∗ and var y_∗).
- W&B's log-hyperparameters ϕ = Aθ and their N(−3, 3²) priors: :mod:`gpc_ref.hyperparameters`.

The multi-class (softmax) Laplace approximation is in :mod:`gpc_ref.laplace_multiclass`.

References
----------
- [WB97] Williams & Barber (1997), *Gaussian Processes for Bayesian Classification via Hybrid Monte Carlo*,
  NIPS 9: eqs 2–7 (Newton), predictive mean and variance (§2.1), eq 10 (approximate evidence),
  ∂ŷ/∂θ (§2.3), the convergence rule and the N(−3, 3²) hyperpriors (§2.3).
- [WB98] Williams & Barber (1998), *Bayesian Classification with Gaussian Processes*, IEEE PAMI 20(12):
  Appendices A–C (binary and softmax Newton steps, evidence derivatives).
- [GPML] Rasmussen & Williams (2006), Algorithms 3.1 (mode), 3.2 (predictions), 3.3–3.4 (multi-class),
  5.1–5.2 (evidence gradients); eqs 3.32 and 5.20–5.23.
- [GM00] Gibbs & MacKay (2000), eq 23 (MacKay's probit approximation, one of the three squashing rules).
- [MacKay92] MacKay (1992): the evidence framework for classification.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from .errors import ConvergenceWarning
from .hyperparameters import HyperparameterFit
from .hyperparameters import free_mask
from .hyperparameters import maximize
from .hyperparameters import theta_box
from .hyperpriors import log_hyperprior
from .hyperpriors import wb_scale
from .kernels import SEKernel
from .likelihoods import SIGMOID_PREDICTIONS
from .likelihoods import BinaryLikelihood
from .likelihoods import LogisticLikelihood
from .likelihoods import ProbitLikelihood
from .linalg import cho_solve
from .linalg import cholesky
from .linalg import solve_lower
from .linalg import solve_upper
from .validation import check_binary_labels
from .validation import check_choice
from .validation import check_covariance
from .validation import check_covariance_derivatives
from .validation import check_interface
from .validation import check_kernel
from .validation import check_matrix
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_rng
from .validation import check_train_test
from .validation import check_vector


class EvidenceAtTheta(Protocol):
    """What :func:`maximize_laplace_evidence` needs of one evaluation: a :class:`LaplaceEvidence` or a
    :class:`gpc_ref.laplace_multiclass.SoftmaxLaplaceEvidence` (named by its interface: that module imports
    this one)."""

    log_evidence: float
    gradient: np.ndarray
    mode: Any


__all__ = [
    "LaplaceMode",
    "LaplaceEvidence",
    "MAPResult",
    "PREDICTION_METHODS",
    "laplace_mode",
    "laplace_mode_core",
    "newton_target",
    "newton_tests",
    "NewtonTests",
    "laplace_evidence_gradient",
    "laplace_evidence",
    "laplace_predict_latent",
    "laplace_predict_proba",
    "maximize_laplace_evidence",
    "map_hyperparameters",
]


def _likelihood_or_logistic(likelihood):
    """The likelihood to use: the one given (log-concave, with derivatives), or W&B's logistic."""
    if likelihood is None:
        return LogisticLikelihood()
    return check_interface(likelihood, "likelihood", ("log_p", "derivatives"), "ProbitLikelihood()")


def _factor_B(K, sqrt_W):
    """Cholesky factor of B = I + W½ K W½ (GPML Alg. 3.1 line 5); B's eigenvalues are ≥ 1."""
    B = sqrt_W[:, None] * K
    B *= sqrt_W[None, :]
    B[np.diag_indices_from(B)] += 1.0
    return cholesky(B, name="B = I + W½KW½")


def newton_target(K: np.ndarray, L: np.ndarray, W: np.ndarray, f: np.ndarray, grad_log_lik: np.ndarray) -> np.ndarray:
    """Steps 2.2–2.3 of Algorithm 4.1 (lapb-alg-newton): a with K a = (K⁻¹ + W)⁻¹ (W f + ∇log p(y|f)).

    The full Newton step goes to f = K a (W&B 1997 eq 7 in the form of GPML Algorithm 3.1, lines 6–7).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    L : ndarray (n, n)
        Lower Cholesky factor of B = I + W½KW½ (step 2.1).
    W, f, grad_log_lik : ndarray (n,)
        Diagonal of W, the latent values and ∇log p(y|f) (t − π for the logistic) at the current iterate.

    Returns
    -------
    ndarray (n,)
        a = b − W½ L⁻ᵀL⁻¹ W½ K b with b = W f + ∇log p(y|f).
    """
    sqrt_W = np.sqrt(W)
    b = W * f + grad_log_lik  # step 2.2: b = W f + t − π
    return b - sqrt_W * solve_upper(L, solve_lower(L, sqrt_W * (K @ b)))  # step 2.3: a = b − W½ L⁻ᵀL⁻¹ W½ K b


@dataclass(frozen=True)
class NewtonTests:
    """The three tests of step 2.6 of Algorithm 4.1 (lapb-alg-newton), and the sizes they look at."""

    gradient: bool  # every |∇Ψ_i| ≤ √ε max(1, max_i |∇log p_i|)
    psi: bool  # |ΔΨ| ≤ ε max(1, |Ψ|)
    W: bool  # W&B's rule: mean relative change of W below √ε
    gradient_norm: float
    change_W: float
    change_psi: float


def newton_tests(a: np.ndarray, grad_log_lik: np.ndarray, psi: float, psi_old: float, W: np.ndarray,
                 W_old: np.ndarray, tol: float) -> NewtonTests:  # fmt: skip
    """Step 2.6 of Algorithm 4.1 (lapb-alg-newton) at the new iterate, with ∇Ψ = ∇log p(y|f) − a (f = K a).

    Parameters
    ----------
    a, grad_log_lik : ndarray (n,)
        K⁻¹f and ∇log p(y|f) at the new iterate f = K a.
    psi, psi_old : float
        Ψ at the new and at the previous iterate.
    W, W_old : ndarray (n,)
        The diagonal of W at the new and at the previous iterate.
    tol : float
        The box's ε.

    Returns
    -------
    NewtonTests
        Each test's outcome and the sizes it looked at.
    """
    gradient_norm = float(np.max(np.abs(grad_log_lik - a)))
    scale = np.maximum(W_old, W)  # W&B 1997 §2.3: the mean relative difference of the elements of W
    change_W = float(np.mean(np.divide(np.abs(W - W_old), scale, out=np.zeros(len(W)), where=scale > 0)))
    change_psi = abs(psi - psi_old)
    return NewtonTests(
        gradient=gradient_norm <= np.sqrt(tol) * max(1.0, float(np.max(np.abs(grad_log_lik)))),
        psi=change_psi <= tol * max(1.0, abs(psi)),
        W=change_W < np.sqrt(tol),  # W&B's rule at √ε: held at ε it is decided by rounding at large σ_f
        gradient_norm=gradient_norm,
        change_W=change_W,
        change_psi=change_psi,
    )


def _noise_matrix(likelihood, y, f):
    """∇log p(y|f) and the diagonal of W = −∇∇log p(y|f); refuses a likelihood that is not log-concave."""
    d1, d2, _ = likelihood.derivatives(y, f)
    W = -d2
    if np.any(W < 0):
        raise ValueError(
            "the Laplace Newton iteration needs a log-concave likelihood (−∂²log p(y|f)/∂f² ≥ 0); "
            f"{type(likelihood).__name__} gave a negative value"
        )
    return d1, W


@dataclass(frozen=True)
class LaplaceMode:
    r"""The binary Laplace approximation q(f|y) = N(f̂, (K⁻¹+W)⁻¹).

    Attributes
    ----------
    f : ndarray (n,)
        The posterior mode f̂ (W&B's ŷ).
    W : ndarray (n,)
        Diagonal of W = -∇∇log p(y|f̂); logistic:
        π̂_i(1-π̂_i).
    L : ndarray (n, n)
        Lower Cholesky factor of B = I + W^½KW^½ at the mode.
    a : ndarray (n,)
        K⁻¹f̂ as produced by the last Newton step (so ``f = K @ a`` holds
        exactly); at convergence it equals ∇log p(y|f̂).
    log_evidence : float
        Approximate log evidence log q(y|X,θ) (W&B 1997 eq 10, GPML eq 3.32).
    n_iter : int
        Newton steps taken.
    converged : bool
        Whether the convergence rule was met within ``max_iter`` steps.
    grad_log_lik : ndarray (n,)
        ∇log p(y|f̂); logistic: t - π̂.
    log_lik : float
        log p(y|f̂).
    y : ndarray (n,)
        The labels in {−1, +1}.
    likelihood : object
        The likelihood used (``LogisticLikelihood`` by default).
    gradient_norm : float
        Largest component of ∇Ψ(f̂) when Newton stopped.
    n_halved : int
        Newton steps that :func:`laplace_mode` halved because the full step lowered Ψ (the safeguard that
        Algorithm 4.1 does not have; 0 from :func:`laplace_mode_core`).
    """

    f: np.ndarray
    W: np.ndarray
    L: np.ndarray
    a: np.ndarray
    log_evidence: float
    n_iter: int
    converged: bool
    grad_log_lik: np.ndarray = field(repr=False, default=None)
    log_lik: float = field(default=np.nan)
    y: np.ndarray = field(repr=False, default=None)
    likelihood: object = field(repr=False, default=None)
    gradient_norm: float = field(default=np.nan)
    n_halved: int = 0


def laplace_mode_core(K: np.ndarray, y: np.ndarray, likelihood: BinaryLikelihood, *, tol: float = 1e-9,
                      max_iter: int = 100) -> LaplaceMode:  # fmt: skip
    """Algorithm 4.1 (lapb-alg-newton), step for step: Newton's method for the binary Laplace mode.

    The plain core of :func:`laplace_mode`, which checks the arguments, may start from ``f_init``, halves a
    step that would lower Ψ and warns when the tests of step 2.6 are not met; this function trusts its
    arguments (K symmetric positive semi-definite, y in {−1, +1}, a log-concave likelihood) and does none of
    that. Where no step is halved the two return the same mode (``tests/package/test_laplace_binary.py``).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance (jitter included).
    y : ndarray (n,)
        Labels in {−1, +1}.
    likelihood : BinaryLikelihood
        ``LogisticLikelihood()`` for W&B's model, or any log-concave likelihood with ``derivatives``.
    tol, max_iter
        The box's ε, and the most Newton steps.

    Returns
    -------
    LaplaceMode
        As from :func:`laplace_mode` (``n_halved`` = 0).

    References: [WB97] eqs 5–7, 10 and §2.3; [GPML] Algorithm 3.1.
    """
    f = np.zeros(len(y))  # step 1: f = 0 (W&B: "initialized each time with π = 0.5")
    grad_log_lik, W = _noise_matrix(likelihood, y, f)  # step 1: t − π and W = −∇∇log p(y|f)
    psi, converged = -np.inf, False
    for n_iter in range(1, max_iter + 1):
        L = _factor_B(K, np.sqrt(W)).L  # step 2.1: L Lᵀ = B = I + W½KW½
        a = newton_target(K, L, W, f, grad_log_lik)  # steps 2.2–2.3
        f = K @ a  # step 2.4 (W&B eq 7)
        psi_old, psi = psi, float(np.sum(likelihood.log_p(y, f)) - 0.5 * a @ f)  # step 2.4: Ψ (W&B eq 3)
        W_old = W
        grad_log_lik, W = _noise_matrix(likelihood, y, f)  # step 2.5
        tests = newton_tests(a, grad_log_lik, psi, psi_old, W, W_old, tol)  # step 2.6
        if tests.gradient and tests.psi and tests.W:
            converged = True
            break
    L = _factor_B(K, np.sqrt(W)).L  # step 3
    log_evidence = psi - float(np.sum(np.log(np.diag(L))))  # step 3: W&B eq 10, log q = Ψ − ½ log|B|
    return LaplaceMode(f=f, W=W, L=L, a=a, log_evidence=log_evidence, n_iter=n_iter, converged=converged,
                       grad_log_lik=grad_log_lik, log_lik=float(np.sum(likelihood.log_p(y, f))), y=y,
                       likelihood=likelihood, gradient_norm=tests.gradient_norm)  # fmt: skip


def laplace_mode(K: ArrayLike, y: ArrayLike, *, likelihood: BinaryLikelihood | None = None,
                 f_init: ArrayLike | None = None, tol: float = 1e-9, max_iter: int = 100) -> LaplaceMode:  # fmt: skip
    r"""Posterior mode of the latent values and the Laplace approximation around it.

    Newton's method on Ψ(f) = log p(y|f) − ½fᵀK⁻¹f (W&B 1997 eqs 3, 5–7) in the stable form of GPML Algorithm
    3.1, which factorises only B = I + W½KW½ (eigenvalues ≥ 1, so K may be singular). A full step that lowers Ψ
    is halved until Ψ increases. The derivation and the convergence tests: book/laplace_binary.ipynb.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance of the latent values (jitter included, as ``SEKernel.K(X)`` returns it).
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}, W&B's t).
    likelihood : LogisticLikelihood (default), ProbitLikelihood, or any log-concave likelihood
        with ``log_p(y, f)`` and ``derivatives(y, f)``.
    f_init : array (n,), optional
        Starting point; default f = 0 (W&B: "initialized each time with π = 0.5").
    tol : float
        Converged when every abs(∇Ψ_i) ≤ √tol·max(1, max abs(∇log p)), abs(ΔΨ) ≤ tol·max(1, abs(Ψ)) and the
        mean relative change of W (W&B 1997 §2.3's rule) is below √tol; a halved step never counts as converged.
    max_iter : int
        Maximum number of Newton steps; not converging gives a :class:`ConvergenceWarning` naming the iteration count.

    Returns
    -------
    LaplaceMode
        The mode, the factor ``L`` of B there, the log evidence and Newton's diagnostics.

    References
    ----------
    [WB97] eqs 2–7 and §2.3; [WB98] Appendix A; [GPML] Algorithm 3.1, eq 3.32.
    """
    K = check_covariance(K, "K")
    n = K.shape[0]
    y = check_binary_labels(y, "y", length=n)
    likelihood = _likelihood_or_logistic(likelihood)
    tol = float(check_positive(tol, "tol"))
    max_iter = check_positive_int(max_iter, "max_iter")
    # W&B 1997 §2.3: "initialized each time with π = 0.5", i.e. f = 0
    f = np.zeros(n) if f_init is None else check_vector(f_init, "f_init", length=n).copy()
    a, psi = None, -np.inf  # K⁻¹f is known once a Newton step has produced f = K a
    d1, W = _noise_matrix(likelihood, y, f)
    chol = _factor_B(K, np.sqrt(W))
    converged, change_W, change_psi, gradient_norm, n_halved = False, np.inf, np.inf, np.inf, 0
    for n_iter in range(1, max_iter + 1):
        a_full = newton_target(K, chol.L, W, f, d1)  # Algorithm 4.1 steps 2.2–2.3 (W&B 1997 eq 7)
        f_full = K @ a_full  # step 2.4
        # step halving, only if the full step lowered Ψ (W&B 1997 eq 3 without constants: Ψ = log p − ½ aᵀf)
        step, stalled = 1.0, False
        for _ in range(30):
            a_new = a_full if a is None else a + step * (a_full - a)
            f_new = f_full if a is None else f + step * (f_full - f)
            psi_new = float(np.sum(likelihood.log_p(y, f_new)) - 0.5 * a_new @ f_new)
            if a is None or psi_new >= psi - 1e-12 * abs(psi):
                break
            step *= 0.5
        else:  # no step raises Ψ: we are at its maximum to machine precision
            a_new, f_new, psi_new, stalled = a, f, psi, True
        n_halved += step < 1.0
        d1, W_new = _noise_matrix(likelihood, y, f_new)  # step 2.5
        tests = newton_tests(a_new, d1, psi_new, psi, W_new, W, tol)  # step 2.6
        gradient_norm, change_W, change_psi = tests.gradient_norm, tests.change_W, tests.change_psi
        a, f, psi, W = a_new, f_new, psi_new, W_new
        chol = _factor_B(K, np.sqrt(W))  # for the next step, or for the evidence if this was the last
        # a halved step never counts as converged; a stalled one (no step raises Ψ) does if ∇Ψ is small
        if tests.gradient and (stalled or (step == 1.0 and tests.W and tests.psi)):
            converged = True
            break
        if stalled:
            break  # no step raises Ψ, yet its gradient is not small: report, do not loop
    if not converged:
        warnings.warn(
            f"laplace_mode: Newton's method did not converge in {n_iter} iterations (largest gradient component "
            f"{gradient_norm:.2e}, mean relative change of W {change_W:.2e}, change of Psi {change_psi:.2e}, "
            f"tol {tol:.1e}); the mode, evidence and predictions are approximate",
            ConvergenceWarning,
            stacklevel=2,
        )
    log_lik = float(np.sum(likelihood.log_p(y, f)))
    # W&B 1997 eq 10 = GPML eq 3.32 (Alg. 3.1 line 10): log q(y|X,θ) = Ψ(f̂) − ½ log|B|, log|B| = 2 Σ log L_ii
    log_evidence = psi - float(np.sum(np.log(np.diag(chol.L))))
    return LaplaceMode(f=f, W=W, L=chol.L, a=a, log_evidence=float(log_evidence), n_iter=n_iter,
                       converged=converged, grad_log_lik=d1, log_lik=log_lik, y=y, likelihood=likelihood,
                       gradient_norm=gradient_norm, n_halved=int(n_halved))  # fmt: skip


def laplace_evidence_gradient(mode: LaplaceMode, K: np.ndarray, dK: np.ndarray) -> np.ndarray:
    r"""Exact gradient of the approximate log evidence log q(y | X, θ), given the mode: Algorithm 4.3 (lapb-alg-gradient).

        ∂log q/∂θ_j = ½ aᵀ (∂K/∂θ_j) a − ½ tr(R ∂K/∂θ_j) + ∑_i (∂log q/∂f̂_i)(∂f̂_i/∂θ_j),  R = (W⁻¹ + K)⁻¹:

    the explicit terms at the fixed mode f̂, and the implicit one through the mode's dependence on θ_j
    (W&B 1997 §2.3), derived in book/laplace_binary.ipynb.

    Parameters
    ----------
    mode : LaplaceMode
        The mode for the covariance ``K``.
    K : ndarray (n, n)
        The covariance the mode was found with.
    dK : ndarray (P, n, n)
        ∂K/∂θ_j for every parameter (``SEKernel.gradients(X)``).

    Returns
    -------
    ndarray (P,)
        ∂ log q / ∂θ_j, one entry per slice of ``dK``.

    References
    ----------
    [WB97] §2.3; [WB98] Appendix B; [GPML] Algorithm 5.1, eqs 5.20–5.24.
    """
    dK = check_covariance_derivatives(dK, K.shape[0])
    sqrt_W = np.sqrt(mode.W)
    _, _, d3 = mode.likelihood.derivatives(mode.y, mode.f)
    # GPML Alg. 5.1 line 7: R = W½ B⁻¹ W½ = (W⁻¹ + K)⁻¹
    R = sqrt_W[:, None] * cho_solve(mode.L, np.diag(sqrt_W))
    # GPML Alg. 5.1 line 8 (its C): V = L⁻¹ W½ K, so that diag((K⁻¹ + W)⁻¹) = diag(K) − diag(VᵀV)
    V = solve_lower(mode.L, sqrt_W[:, None] * K)
    posterior_var = np.diag(K) - np.sum(V * V, axis=0)
    # GPML eq 5.23 / Alg. 5.1 line 9, with ∂W_ii/∂f_i = −∂³log p(y_i|f_i)/∂f_i³:
    # ∂log q/∂f̂_i = −½ Σ_ii ∂W_ii/∂f̂_i = ½ Σ_ii ∂³log p(y_i|f̂_i)/∂f̂_i³
    s2 = 0.5 * posterior_var * d3
    gradient = np.empty(dK.shape[0])
    for j, dK_j in enumerate(dK):
        # GPML eq 5.22 / Alg. 5.1 line 11: explicit dependence, ½ aᵀ ∂K a − ½ tr(R ∂K)
        s1 = 0.5 * mode.a @ dK_j @ mode.a - 0.5 * np.sum(R * dK_j)
        # W&B 1997 §2.3: ∂f̂/∂θ_j = (I + KW)⁻¹ ∂K/∂θ_j (t − π̂),
        # with (I + KW)⁻¹ = I − K R (GPML Alg. 5.1 lines 12–13)
        b = dK_j @ mode.grad_log_lik
        df_dtheta = b - K @ (R @ b)
        gradient[j] = s1 + s2 @ df_dtheta
    return gradient


@dataclass(frozen=True)
class LaplaceEvidence:
    """The approximate log evidence, its gradient with respect to ``kernel.theta``, and the mode."""

    log_evidence: float
    gradient: np.ndarray
    mode: LaplaceMode
    theta_names: tuple = ()


def laplace_evidence(kernel: SEKernel, X: ArrayLike, y: ArrayLike, *,
                     likelihood: BinaryLikelihood | None = None, f_init: ArrayLike | None = None,
                     tol: float = 1e-9, max_iter: int = 100) -> LaplaceEvidence:  # fmt: skip
    r"""Approximate log evidence log q(y | X, θ) and its gradient in ``kernel.theta``.

    At the mode f̂ of :func:`laplace_mode`, with B = I + W½KW½,

        log q(y|X,θ) = log p(y|f̂) - ½f̂ᵀK⁻¹f̂ - ½ log|B|,

    which is W&B 1997 eq 10, Ψ(ŷ) − ½ log det(K⁻¹ + W) + (n/2) log 2π, after the constants of Ψ are
    combined (det(K) det(K⁻¹ + W) = det(B)). The gradient
    includes the implicit dependence of the mode on θ (see :func:`laplace_evidence_gradient`).

    Parameters
    ----------
    kernel : SEKernel
        Gives K at ``X`` and the parameters θ of the gradient.
    X : ndarray (n, D)
        Training inputs.
    y, likelihood, f_init, tol, max_iter
        As in :func:`laplace_mode` (``f_init`` warm-starts Newton, e.g. from the previous θ).

    Returns
    -------
    LaplaceEvidence
        ``log_evidence``, ``gradient`` (one entry per ``kernel.theta_names``) and ``mode``.

    References
    ----------
    [WB97] eq 10 and §2.3; [WB98] Appendix B; [GPML] eq 3.32, Algorithm 5.1.
    """
    kernel = check_kernel(kernel)
    X = check_matrix(X, "X")
    K = kernel.K(X)
    mode = laplace_mode(K, y, likelihood=likelihood, f_init=f_init, tol=tol, max_iter=max_iter)
    gradient = laplace_evidence_gradient(mode, K, kernel.gradients(X))
    return LaplaceEvidence(mode.log_evidence, gradient, mode, tuple(kernel.theta_names))


def laplace_predict_latent(
    mode: LaplaceMode, kernel: SEKernel, X: ArrayLike, X_test: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and variance of the Gaussian latent predictive q(f_∗|y) at ``X_test``: Algorithm 4.2 (lapb-alg-predict).

        μ_∗ = k_∗ᵀ ∇log p(y|f̂) = k_∗ᵀ(t - π̂),
        s_∗² = k_∗∗ - k_∗ᵀ(K + W⁻¹)⁻¹k_∗ = k_∗∗ - vᵀv,
        v = L⁻¹W^½k_∗.

    W&B 1997 §2.1 give ŷ_∗ = kᵀK⁻¹ŷ = kᵀ(t - π̂)
    and the variance as the (n+1, n+1) element of (K_+⁻¹ + W_+)⁻¹; the form above is the
    same number without inverting K_+ (GPML Algorithm 3.2, eqs 3.21 and 3.24).

    Parameters
    ----------
    mode : LaplaceMode
        The mode at the training inputs.
    kernel : SEKernel
        The kernel the mode was computed with.
    X : ndarray (n, D)
        Training inputs.
    X_test : ndarray (m, D)
        Test inputs.

    Returns
    -------
    mean, var : ndarrays (m,)
        μ_∗ and s_∗² at each test input; ``var`` is clipped at 0 against rounding.

    References
    ----------
    [WB97] §2.1; [GPML] Algorithm 3.2.
    """
    kernel = check_kernel(kernel)
    X, X_test = check_train_test(X, X_test, mode.f.shape[0])
    K_star = kernel.K(X, X_test)
    # W&B 1997 §2.1 / GPML Alg. 3.2 line 4: μ* = k*ᵀ ∇log p(y|f̂) = k*ᵀ (t − π̂)
    mean = K_star.T @ mode.grad_log_lik
    # GPML Alg. 3.2 lines 5–6: v = L⁻¹ W½ k*, s*² = k** − vᵀv
    v = solve_lower(mode.L, np.sqrt(mode.W)[:, None] * K_star)
    var = kernel.diag(X_test) - np.sum(v * v, axis=0)
    return mean, np.maximum(var, 0.0)


PREDICTION_METHODS = tuple(SIGMOID_PREDICTIONS)


def laplace_predict_proba(
    mean: ArrayLike,
    var: ArrayLike,
    *,
    method: str = "erf_mixture",
    likelihood: BinaryLikelihood | None = None,
    erf_scales: ArrayLike | None = None,
    erf_coefficients: ArrayLike | None = None,
) -> np.ndarray:
    r"""Class probability P(y_∗=+1) = ∫ σ(f_∗) N(f_∗|μ_∗, s_∗²) df_∗.

    ``method`` chooses how the logistic is squashed through the Gaussian:

    - ``"erf_mixture"``: W&B 1997 §2.1, σ replaced by five scaled normal CDFs, each integrated exactly;
    - ``"mackay"``: MacKay's probit approximation σ(μ_∗/√(1+πs_∗²/8)) (G&M eq 23);
    - ``"quadrature"``: 64-node Gauss–Hermite quadrature (GPML eq 3.25 evaluated numerically);
    - ``"exact"``: adaptive quadrature, slow, the reference.

    For the probit likelihood the integral is exact, Φ(μ_∗/√(1+s_∗²)), whatever ``method`` says.

    Parameters
    ----------
    mean, var : arrays (m,)
        Latent predictive means and variances (:func:`laplace_predict_latent`).
    method : {"erf_mixture", "mackay", "quadrature", "exact"}
        The rule for the logistic (see above); default ``"erf_mixture"``.
    likelihood : LogisticLikelihood (default) or ProbitLikelihood
        Any likelihood other than the logistic gives ``likelihood.predict(mean, var)``.
    erf_scales, erf_coefficients : arrays (5,), optional
        Another implementation's erf-mixture constants (:func:`~gpc_ref.gaussian_integrals.sigmoid_gaussian_erf_mixture`).

    Returns
    -------
    ndarray (m,)
        P(y_∗ = +1).

    References
    ----------
    [WB97] §2.1; [GM00] eq 23; [MacKay92]; [GPML] eqs 3.25, 3.82.
    """
    mean = np.asarray(mean, dtype=float)
    var = np.asarray(var, dtype=float)
    if mean.shape != var.shape:
        raise ValueError(f"mean and var must have the same shape; got {mean.shape} and {var.shape}")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("mean and var must be finite")
    if np.any(var < 0):
        raise ValueError("var must be non-negative")
    check_choice(method, "method", PREDICTION_METHODS)
    likelihood = _likelihood_or_logistic(likelihood)
    if isinstance(likelihood, ProbitLikelihood) or not isinstance(likelihood, LogisticLikelihood):
        return likelihood.predict(mean, var)  # exact for the probit (GPML eq 3.82)
    if method == "erf_mixture" and (erf_scales is not None or erf_coefficients is not None):
        # W&B 1997 §2.1 with another implementation's constants
        return SIGMOID_PREDICTIONS[method](mean, var, scales=erf_scales, coefficients=erf_coefficients)
    # erf mixture: W&B 1997 §2.1; mackay: G&M (2000) eq 23; quadrature: GPML eq 3.25
    return likelihood.predict(mean, var, method=method)


# ----------------------------------------------------------------- hyperparameters: MAP (W&B's MPL) and ML-II
@dataclass(frozen=True)
class MAPResult:
    r"""Hyperparameters maximising the Laplace evidence, plus W&B's log hyperprior if one is used.

    Attributes
    ----------
    kernel : SEKernel
        The kernel at the best optimum found.
    log_posterior : float
        The maximised objective: log q(y|X,θ) + log p(ϕ(θ))
        (unnormalised; just the log evidence for ML-II).
    log_evidence, log_prior : float
        Its two parts (``log_prior`` is 0 for ML-II).
    theta : ndarray (P,)
        ``kernel.theta``.
    gradient : ndarray (P,)
        Gradient of the objective at ``theta``.
    converged : bool
        The projected gradient passed :func:`gpc_ref.hyperparameters.maximize`'s test.
    mode : LaplaceMode
        The Laplace mode at the optimum.
    optimization : HyperparameterFit
        Starts, iterations, evaluations and the box of the search.
    """

    kernel: SEKernel
    log_posterior: float
    log_evidence: float
    log_prior: float
    theta: np.ndarray
    gradient: np.ndarray
    converged: bool
    mode: LaplaceMode = field(repr=False)
    optimization: HyperparameterFit = field(repr=False)


def maximize_laplace_evidence(
    evidence_at: Callable[[np.ndarray, np.ndarray | None], EvidenceAtTheta],
    theta0: ArrayLike,
    *,
    log_prior: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None,
    description: str = "maximize_laplace_evidence",
    **search: Any,
) -> tuple[HyperparameterFit, EvidenceAtTheta, float]:
    r"""Maximise a Laplace log evidence plus an optional log prior over θ with :func:`maximize`.

    The search of :func:`map_hyperparameters` and :func:`gpc_ref.laplace_multiclass.softmax_laplace_optimize`:
    :func:`maximize`, each evaluation warm-starting Newton from the previous evaluation's mode
    (cleared before every start; the same mode as W&B's start at f = 0, in fewer steps), its warnings silenced.
    An evaluation whose mode did not converge (its evidence would be wrong) counts as failed: its step is rejected.

    Parameters
    ----------
    evidence_at : callable
        ``(theta, f_init) -> evidence`` with ``log_evidence``, its ``gradient`` in θ and the ``mode``
        (``converged``, ``f``), Newton started from ``f_init`` (None: from f = 0).
    theta0 : ndarray (P,)
        The first start.
    log_prior : callable, optional
        ``theta -> (value, gradient)`` added to the log evidence; None for plain ML-II.
    description : str
        Names the caller in the progress bar and in the messages.
    **search
        The other options of :func:`maximize` (``bounds``, ``free``, ``n_restarts``, ``rng``, ...).

    Returns
    -------
    fit : HyperparameterFit
        The search.
    evidence : LaplaceEvidence or SoftmaxLaplaceEvidence
        At ``fit.theta``: the search's own evaluation there, or a new one from f = 0 with the warnings on.
    log_prior : float
        The log prior at ``fit.theta`` (0 without a prior).
    """
    # f: the previous evaluation's mode (the warm start); best: (theta, value, evidence) of the best one
    state = {"f": None, "best": None}

    def objective(theta):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            evidence = evidence_at(theta, state["f"])
            if not evidence.mode.converged and state["f"] is not None:
                # whether Newton converges must not depend on where the previous evaluation left it: near the
                # edge of the region where the mode can be computed, a warm start can fail where f = 0 does not
                evidence = evidence_at(theta, None)
        if not evidence.mode.converged:
            # an evidence from an unconverged mode would be wrong: the maximiser rejects the step
            raise np.linalg.LinAlgError(f"{description}: the Laplace mode did not converge at these hyperparameters")
        state["f"] = evidence.mode.f
        value, gradient = evidence.log_evidence, evidence.gradient
        if log_prior is not None:
            prior_value, prior_gradient = log_prior(theta)
            value, gradient = value + prior_value, gradient + np.asarray(prior_gradient, dtype=float)
        if state["best"] is None or value > state["best"][1]:
            state["best"] = (np.array(theta, dtype=float), value, evidence)
        return value, gradient

    def reset():
        state["f"] = None

    fit = maximize(objective, theta0, reset=reset, description=description, **search)
    if state["best"] is not None and np.array_equal(state["best"][0], fit.theta):
        evidence = state["best"][2]  # the search's evaluation at its optimum: no need to repeat it
    else:
        evidence = evidence_at(fit.theta, None)
    return fit, evidence, (0.0 if log_prior is None else log_prior(fit.theta)[0])


def map_hyperparameters(
    kernel: SEKernel,
    X: ArrayLike,
    y: ArrayLike,
    *,
    prior: str | None = "wb",
    prior_mean: float = -3.0,
    prior_sd: float = 3.0,
    likelihood: BinaryLikelihood | None = None,
    fixed: Sequence[str] = (),
    n_restarts: int = 3,
    restart_from: str = "start",
    restart_sd: float = 1.0,
    rng: np.random.Generator | int | None = None,
    max_iter: int = 200,
    tol: float = 1e-5,
    progress: bool = False,
) -> MAPResult:
    r"""Hyperparameters by maximum penalised likelihood (W&B's MPL) or, with ``prior=None``, ML-II.

    Maximises log q(y|X,θ) (:func:`laplace_evidence`) + log p(ϕ(θ)), ϕ = Aθ, by :func:`maximize_laplace_evidence`.

    Parameters
    ----------
    kernel : SEKernel
        Starting kernel; ``kernel.theta_names`` are learnt, in the box :func:`~gpc_ref.hyperparameters.theta_box`.
    X, y : ndarray (n, D) and array (n,)
        Training inputs and labels in {−1, +1} (or {0, 1}).
    prior : {"wb", None}
        W&B's N(μ_0, s_0²) hyperprior on ϕ (:func:`gpc_ref.hyperpriors.log_hyperprior`), or None (ML-II).
    prior_mean, prior_sd : float
        μ_0 and s_0 of the hyperprior (W&B: −3 and 3, the defaults).
    likelihood : optional
        As in :func:`laplace_mode` (default logistic).
    fixed : sequence of str
        Kernel parameter names held at their starting values.
    n_restarts, restart_from, restart_sd, rng, max_iter, tol, progress
        ``n_restarts`` (default 3; 0: one run) extra starts, needing ``rng``: θ_0 + N(0, restart_sd²) per free
        coordinate (``restart_from="start"``) or hyperprior draws (``"prior"``); the rest as in :func:`maximize`.

    Returns
    -------
    MAPResult
        The kernel at the best optimum, the objective and its parts, and the search.

    References
    ----------
    [WB97] §2.3 (priors); [WB98] §6 (MPL); [GPML] §5.4.
    """
    kernel = check_kernel(kernel)
    X = check_matrix(X, "X")
    y = check_binary_labels(y, "y", length=X.shape[0])
    check_choice(prior, "prior", ("wb", None))
    check_choice(restart_from, "restart_from", ("start", "prior"))
    prior_sd = float(check_positive(prior_sd, "prior_sd"))
    likelihood = _likelihood_or_logistic(likelihood)
    free = free_mask(kernel, fixed)
    theta0 = kernel.theta
    extra_starts, n_random = None, check_positive_int(n_restarts, "n_restarts", minimum=0)
    if restart_from == "prior" and n_random:
        generator = check_rng(rng)
        # draws of φ ~ N(μ₀, s₀²) mapped to θ = φ / A
        extra_starts = (prior_mean + prior_sd * generator.standard_normal((n_random, theta0.size))) / wb_scale(kernel)
        n_random = 0

    def hyperprior(theta):
        return log_hyperprior(kernel.with_theta(theta), prior_mean, prior_sd)

    fit, evidence, log_prior = maximize_laplace_evidence(
        lambda theta, f_init: laplace_evidence(kernel.with_theta(theta), X, y, likelihood=likelihood, f_init=f_init),
        theta0,
        log_prior=None if prior is None else hyperprior,
        description="map_hyperparameters",
        bounds=theta_box(kernel),
        names=kernel.theta_names,
        free=free,
        n_restarts=n_random,
        rng=rng,
        restart_sd=restart_sd,
        extra_starts=extra_starts,
        max_iter=max_iter,
        tol=tol,
        progress=progress,
    )
    best_kernel = kernel.with_theta(fit.theta)
    return MAPResult(
        kernel=best_kernel,
        log_posterior=evidence.log_evidence + log_prior,
        log_evidence=evidence.log_evidence,
        log_prior=log_prior,
        theta=best_kernel.theta,
        gradient=fit.gradient,
        converged=fit.converged,
        mode=evidence.mode,
        optimization=fit,
    )
