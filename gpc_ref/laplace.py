r"""Laplace approximation for GP classification (Williams & Barber), binary and multi-class.

The posterior over the latent values :math:`p(\mathbf f|\mathbf y) \propto p(\mathbf y|\mathbf f)
N(\mathbf f|0, K)` is replaced by the Gaussian centred at its mode with the curvature of its log
there, :math:`q(\mathbf f|\mathbf y) = N(\hat{\mathbf f}, (K^{-1} + W)^{-1})`. The mode is found
by Newton's method (W&B 1997 eq 7) written in the numerically stable form of GPML Algorithm 3.1,
which factorises only :math:`B = I + W^{1/2} K W^{1/2}` (eigenvalues ≥ 1) and never :math:`K`.

Notation, binary section (book symbol ← code name; W&B 1997's own symbol after "W&B"):

- :math:`y_i \in \{-1, +1\}` ← ``y``: class label; W&B use :math:`t_i = (y_i+1)/2 \in \{0, 1\}` ← ``t``.
- :math:`f_i` ← ``f``: latent value at :math:`x_i` (W&B's *activation* :math:`y_i`);
  :math:`\hat{\mathbf f}` ← ``mode.f``: the posterior mode (W&B's :math:`\hat{\mathbf y}`).
- :math:`\pi_i = \sigma(f_i)` ← ``pi``: probability of class +1 at the latent value.
- :math:`K` ← ``K``: prior covariance of :math:`\mathbf f` (jitter included); :math:`\theta` ← ``theta``:
  log kernel parameters (``SEKernel.theta``). W&B's :math:`\theta = \log(v_0, w_1, \dots, w_d)` with
  :math:`v_0 = \sigma_f^2` and :math:`w_l = 1/\ell_l^2`.
- :math:`W = -\nabla\nabla\log p(\mathbf y|\mathbf f)` ← ``W``, stored as its diagonal (logistic:
  :math:`\pi_i(1-\pi_i)`, W&B's :math:`W`); :math:`W^{1/2}` ← ``sqrt_W``.
- :math:`B = I + W^{1/2}KW^{1/2}` ← ``B``, with lower Cholesky factor ``L``.
- :math:`\mathbf a = K^{-1}\mathbf f` ← ``a``; at the mode :math:`\mathbf a = \nabla\log p(\mathbf y|\hat{\mathbf f})
  = \mathbf t - \hat{\boldsymbol\pi}` (logistic) ← ``grad_log_lik``.
- :math:`\Psi(\mathbf f) = \log p(\mathbf y|\mathbf f) - \tfrac12\mathbf f^TK^{-1}\mathbf f` ← ``psi``
  (W&B's :math:`\Psi`, eq 3, without its constants).
- :math:`\log q(\mathbf y|X,\theta)` ← ``log_evidence``: the approximate log evidence (W&B eq 10,
  their :math:`\log P_a(\mathbf t|\theta)`).
- :math:`\mathbf k_* = K(X, x_*)` ← ``K_star``; :math:`\mu_*, s_*^2` ← ``mean, var``: latent predictive
  mean and variance (W&B's :math:`\hat y_*` and var :math:`y_*`).
- :math:`\phi` ← ``phi``: W&B's log-hyperparameters, :math:`\phi = A\theta` with :math:`A = \mathrm{diag}(1, -2,
  \dots, -2, 1)`, on which their N(−3, 3²) priors are placed.

Notation, multi-class section (softmax over :math:`C` classes, W&B 1998 §4, GPML §3.5): the
latent values are an (n, C) array ``F`` whose column c is the class-c block :math:`\mathbf f^c`
(the class-major vector of W&B and GPML is ``F.T.ravel()``); :math:`\pi_i^c` ← ``pi`` is the softmax,
:math:`\mathbf t` ← ``Y`` the one-of-C targets, :math:`K_c` ← ``K[c]`` the per-class covariances,
:math:`D = \mathrm{diag}(\boldsymbol\pi)`, :math:`\Pi` the stack of the :math:`D_c`, and
:math:`W = D - \Pi\Pi^T` the noise matrix (W&B 1998 §4). Each Newton step stays :math:`O(Cn^3)` by the
identities of W&B 1998 Appendix C / GPML Algorithm 3.3; the comment block opening that section
lists its remaining names (:math:`B_c, E_c, M`).

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
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from .kernels import SEKernel
from .likelihoods import (LogisticLikelihood, ProbitLikelihood, sigmoid_gaussian_erf_mixture,
                          sigmoid_gaussian_exact, sigmoid_gaussian_mackay, sigmoid_gaussian_quadrature)
from .linalg import cholesky, cho_solve, solve_lower, solve_upper
from .validation import check_binary_labels, check_matrix, check_positive, check_rng, check_vector

# ===================================================================== binary Laplace (W&B 1997 eqs 7-10, GPML Alg. 3.1, 3.2, 5.1)


class ConvergenceWarning(UserWarning):
    """An iterative method stopped at its iteration limit before meeting its convergence rule."""


def _check_likelihood(likelihood):
    """The likelihood to use: the one given, or the logistic (W&B's choice)."""
    if likelihood is None:
        return LogisticLikelihood()
    if not (hasattr(likelihood, "log_p") and hasattr(likelihood, "derivatives")):
        raise ValueError(
            "likelihood must provide log_p(y, f) and derivatives(y, f), e.g. LogisticLikelihood() or "
            f"ProbitLikelihood(); got {type(likelihood).__name__}"
        )
    return likelihood


def _check_covariance(K, name="K"):
    """Return ``K`` as a finite, square, symmetric float matrix."""
    try:
        K = np.asarray(K, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric (n, n) matrix; got {type(K).__name__}") from exc
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"{name} must be a square (n, n) covariance matrix; got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"{name} contains NaN or infinite values")
    # symmetry, checked on up to 64 evenly spaced rows (a full check would cost more than a Newton step)
    rows = np.unique(np.linspace(0, K.shape[0] - 1, min(K.shape[0], 64)).astype(int))
    if np.max(np.abs(K[rows, :] - K[:, rows].T)) > 1e-10 * max(np.max(np.abs(K[rows, :])), 1e-300):
        raise ValueError(f"{name} must be symmetric")
    return K


def _factor_B(K, sqrt_W):
    """Cholesky factor of B = I + W½ K W½ (GPML Alg. 3.1 line 5); B's eigenvalues are ≥ 1."""
    B = sqrt_W[:, None] * K
    B *= sqrt_W[None, :]
    B[np.diag_indices_from(B)] += 1.0
    return cholesky(B, name="B = I + W½KW½")


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
    r"""The binary Laplace approximation :math:`q(\mathbf f|\mathbf y) = N(\hat{\mathbf f}, (K^{-1}+W)^{-1})`.

    Attributes
    ----------
    f : ndarray (n,)
        The posterior mode :math:`\hat{\mathbf f}` (W&B's :math:`\hat{\mathbf y}`).
    W : ndarray (n,)
        Diagonal of :math:`W = -\nabla\nabla\log p(\mathbf y|\hat{\mathbf f})`; logistic:
        :math:`\hat\pi_i(1-\hat\pi_i)`.
    L : ndarray (n, n)
        Lower Cholesky factor of :math:`B = I + W^{1/2}KW^{1/2}` at the mode.
    a : ndarray (n,)
        :math:`K^{-1}\hat{\mathbf f}` as produced by the last Newton step (so ``f = K @ a`` holds
        exactly); at convergence it equals :math:`\nabla\log p(\mathbf y|\hat{\mathbf f})`.
    log_evidence : float
        Approximate log evidence :math:`\log q(\mathbf y|X,\theta)` (W&B 1997 eq 10, GPML eq 3.32).
    n_iter : int
        Newton steps taken.
    converged : bool
        Whether the convergence rule was met within ``max_iter`` steps.
    grad_log_lik : ndarray (n,)
        :math:`\nabla\log p(\mathbf y|\hat{\mathbf f})`; logistic: :math:`\mathbf t - \hat{\boldsymbol\pi}`.
    log_lik : float
        :math:`\log p(\mathbf y|\hat{\mathbf f})`.
    y : ndarray (n,)
        The labels in {−1, +1}.
    likelihood : object
        The likelihood used (``LogisticLikelihood`` by default).
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


def laplace_mode(K, y, likelihood=None, f_init=None, tol=1e-9, max_iter=100):
    r"""Posterior mode of the latent values and the Laplace approximation around it.

    Newton's method on :math:`\Psi(\mathbf f) = \log p(\mathbf y|\mathbf f) - \tfrac12\mathbf f^TK^{-1}\mathbf f`
    (W&B 1997 eqs 3, 5–7):

    .. math:: \mathbf f^{new} = (K^{-1} + W)^{-1}\bigl(W\mathbf f + \nabla\log p(\mathbf y|\mathbf f)\bigr)
              = K (I + WK)^{-1}\bigl(W\mathbf f + \mathbf t - \boldsymbol\pi\bigr),

    computed in the stable form of GPML Algorithm 3.1: with :math:`B = I + W^{1/2}KW^{1/2} = LL^T`,
    :math:`\mathbf b = W\mathbf f + \nabla\log p`, :math:`\mathbf a = \mathbf b - W^{1/2}B^{-1}W^{1/2}K\mathbf b`
    and :math:`\mathbf f^{new} = K\mathbf a`. Only :math:`B` is factorised (its eigenvalues are ≥ 1, so
    this works even when :math:`K` is singular), once per step.

    If a full step lowers :math:`\Psi` it is halved until :math:`\Psi` increases (a safeguard: for a
    concave :math:`\Psi` the full step almost always succeeds); a halved step never counts as converged.

    Convergence (W&B 1997 §2.3, who used 1e-4): the mean relative change of the elements of
    :math:`W` between consecutive iterates is below ``tol``. :math:`W` is an even function of each
    :math:`f_i`, flat at :math:`f_i = 0` (:math:`\partial W/\partial f = 0` at :math:`\pi = ½`), so that
    rule alone cannot see sign changes and barely sees moves near zero; we therefore also require the
    change of :math:`\Psi` to be below ``tol × max(1, |Ψ|)``.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance of the latent values (jitter included, as ``SEKernel.K(X)`` returns it).
    y : array (n,)
        Labels in {−1, +1} (or {0, 1}, W&B's :math:`t`).
    likelihood : LogisticLikelihood (default), ProbitLikelihood, or any log-concave likelihood
        with ``log_p(y, f)`` and ``derivatives(y, f)``.
    f_init : array (n,), optional
        Starting point; default :math:`\mathbf f = 0` (W&B: "initialized each time with π = 0.5").
    tol : float
        Convergence tolerance (see above).
    max_iter : int
        Maximum number of Newton steps; reaching it gives a :class:`ConvergenceWarning` naming the
        iteration count.

    Returns
    -------
    LaplaceMode

    References
    ----------
    [WB97] eqs 2–7 and §2.3; [WB98] Appendix A; [GPML] Algorithm 3.1, eq 3.32.
    """
    K = _check_covariance(K, "K")
    n = K.shape[0]
    y = check_binary_labels(y, "y")
    if y.shape[0] != n:
        raise ValueError(f"y must have one label per row of K ({n}); got {y.shape[0]}")
    likelihood = _check_likelihood(likelihood)
    tol = float(check_positive(tol, "tol"))
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    # W&B 1997 §2.3: "initialized each time with π = 0.5", i.e. f = 0
    f = np.zeros(n) if f_init is None else check_vector(f_init, "f_init", length=n).copy()
    a, psi = None, -np.inf  # K⁻¹f is known once a Newton step has produced f = K a
    d1, W = _noise_matrix(likelihood, y, f)
    chol = _factor_B(K, np.sqrt(W))
    converged, change_W, change_psi = False, np.inf, np.inf
    for n_iter in range(1, int(max_iter) + 1):
        sqrt_W = np.sqrt(W)
        # GPML Alg. 3.1 line 6 (right-hand side of W&B 1997 eq 7): b = W f + ∇log p(y|f)
        b = W * f + d1
        # GPML Alg. 3.1 line 7: a = b − W½ B⁻¹ W½ K b, so that K a = (K⁻¹ + W)⁻¹ b  (W&B 1997 eq 7)
        a_full = b - sqrt_W * solve_upper(chol.L, solve_lower(chol.L, sqrt_W * (K @ b)))
        f_full = K @ a_full
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
        d1, W_new = _noise_matrix(likelihood, y, f_new)
        # W&B 1997 §2.3: mean relative difference of the elements of W between consecutive iterations
        scale = np.maximum(W, W_new)
        change_W = float(np.mean(np.divide(np.abs(W_new - W), scale, out=np.zeros(n), where=scale > 0)))
        change_psi = abs(psi_new - psi)
        a, f, psi, W = a_new, f_new, psi_new, W_new
        chol = _factor_B(K, np.sqrt(W))  # for the next step, or for the evidence if this was the last
        if stalled or (step == 1.0 and change_W < tol and change_psi <= tol * max(1.0, abs(psi))):
            converged = True
            break
    if not converged:
        warnings.warn(
            f"laplace_mode: Newton's method did not converge in {n_iter} iterations (mean relative change "
            f"of W {change_W:.2e}, change of Psi {change_psi:.2e}, tol {tol:.1e}); the mode, evidence and "
            "predictions are approximate",
            ConvergenceWarning,
            stacklevel=2,
        )
    log_lik = float(np.sum(likelihood.log_p(y, f)))
    # W&B 1997 eq 10 = GPML eq 3.32 (Alg. 3.1 line 10): log q(y|X,θ) = Ψ(f̂) − ½ log|B|, log|B| = 2 Σ log L_ii
    log_evidence = psi - float(np.sum(np.log(np.diag(chol.L))))
    return LaplaceMode(f=f, W=W, L=chol.L, a=a, log_evidence=float(log_evidence), n_iter=n_iter,
                       converged=converged, grad_log_lik=d1, log_lik=log_lik, y=y, likelihood=likelihood)


@dataclass(frozen=True)
class LaplaceEvidence:
    """The approximate log evidence, its gradient with respect to ``kernel.theta``, and the mode."""

    log_evidence: float
    gradient: np.ndarray
    mode: LaplaceMode
    theta_names: tuple = ()


def laplace_evidence_gradient(mode, K, dK):
    r"""Exact gradient of the approximate log evidence :math:`\log q(\mathbf y|X,\theta)`.

    .. math::
        \frac{\partial\log q}{\partial\theta_j} =
        \underbrace{\tfrac12\mathbf a^T\frac{\partial K}{\partial\theta_j}\mathbf a
        - \tfrac12\operatorname{tr}\Bigl(R\frac{\partial K}{\partial\theta_j}\Bigr)}_{\text{explicit}}
        + \sum_i \frac{\partial\log q}{\partial\hat f_i}\frac{\partial\hat f_i}{\partial\theta_j},

    with :math:`R = W^{1/2}B^{-1}W^{1/2} = (W^{-1}+K)^{-1}`,
    :math:`\partial\log q/\partial\hat f_i = \tfrac12[(K^{-1}+W)^{-1}]_{ii}\,\partial^3\log p(y_i|\hat f_i)/\partial\hat f_i^3`
    (only :math:`\tfrac12\log|B|` depends on :math:`\hat f` once :math:`\nabla\Psi = 0`), and the
    implicit term of W&B 1997 §2.3,
    :math:`\partial\hat{\mathbf f}/\partial\theta_j = (I + KW)^{-1}(\partial K/\partial\theta_j)(\mathbf t - \hat{\boldsymbol\pi})`
    with :math:`(I+KW)^{-1} = I - KR`.

    Parameters
    ----------
    mode : LaplaceMode
        The mode for the covariance ``K``.
    K : ndarray (n, n)
        The covariance the mode was found with.
    dK : ndarray (P, n, n)
        :math:`\partial K/\partial\theta_j` for every parameter (``SEKernel.gradients(X)``).

    Returns
    -------
    ndarray (P,)

    References
    ----------
    [WB97] §2.3; [WB98] Appendix B; [GPML] Algorithm 5.1, eqs 5.20–5.24.
    """
    dK = np.asarray(dK, dtype=float)
    if dK.ndim != 3 or dK.shape[1:] != K.shape:
        raise ValueError(f"dK must have shape (P, {K.shape[0]}, {K.shape[1]}); got {dK.shape}")
    sqrt_W = np.sqrt(mode.W)
    _, _, d3 = mode.likelihood.derivatives(mode.y, mode.f)
    # GPML Alg. 5.1 line 7: R = W½ B⁻¹ W½ = (W⁻¹ + K)⁻¹
    R = sqrt_W[:, None] * cho_solve(mode.L, np.diag(sqrt_W))
    # GPML Alg. 5.1 line 8: C = L⁻¹ W½ K, so that diag((K⁻¹ + W)⁻¹) = diag(K) − diag(CᵀC)
    C = solve_lower(mode.L, sqrt_W[:, None] * K)
    posterior_var = np.diag(K) - np.sum(C * C, axis=0)
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


def laplace_evidence(kernel, X, y, likelihood=None, f_init=None, tol=1e-9, max_iter=100):
    r"""Approximate log evidence :math:`\log q(\mathbf y|X,\theta)` and its gradient in ``kernel.theta``.

    .. math:: \log q(\mathbf y|X,\theta) = \log p(\mathbf y|\hat{\mathbf f})
              - \tfrac12\hat{\mathbf f}^TK^{-1}\hat{\mathbf f} - \tfrac12\log|B|,

    which is W&B 1997 eq 10, :math:`\Psi(\hat{\mathbf y}) - \tfrac12\log|K^{-1}+W| + \tfrac n2\log 2\pi`,
    after the constants of :math:`\Psi` are combined (:math:`|K||K^{-1}+W| = |B|`). The gradient
    includes the implicit dependence of the mode on θ (see :func:`laplace_evidence_gradient`).

    Parameters
    ----------
    kernel : SEKernel
    X : ndarray (n, D)
    y : array (n,) of labels in {−1, +1} (or {0, 1})
    likelihood, f_init, tol, max_iter
        As in :func:`laplace_mode` (``f_init`` warm-starts Newton, e.g. from the previous θ).

    Returns
    -------
    LaplaceEvidence
        ``log_evidence``, ``gradient`` (one entry per ``kernel.theta_names``) and ``mode``.

    References
    ----------
    [WB97] eq 10 and §2.3; [WB98] Appendix B; [GPML] eq 3.32, Algorithm 5.1.
    """
    if not isinstance(kernel, SEKernel):
        raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
    X = check_matrix(X, "X")
    K = kernel.K(X)
    mode = laplace_mode(K, y, likelihood=likelihood, f_init=f_init, tol=tol, max_iter=max_iter)
    gradient = laplace_evidence_gradient(mode, K, kernel.gradients(X))
    return LaplaceEvidence(mode.log_evidence, gradient, mode, tuple(kernel.theta_names))


def laplace_predict_latent(mode, kernel, X, X_test):
    r"""Mean and variance of the Gaussian latent predictive :math:`q(f_*|\mathbf y)` at ``X_test``.

    .. math:: \mu_* = \mathbf k_*^T\nabla\log p(\mathbf y|\hat{\mathbf f}) = \mathbf k_*^T(\mathbf t - \hat{\boldsymbol\pi}),
              \qquad s_*^2 = k_{**} - \mathbf k_*^T(K + W^{-1})^{-1}\mathbf k_* = k_{**} - \mathbf v^T\mathbf v,
              \quad \mathbf v = L^{-1}W^{1/2}\mathbf k_*.

    W&B 1997 §2.1 give :math:`\hat y_* = \mathbf k^TK^{-1}\hat{\mathbf y} = \mathbf k^T(\mathbf t - \hat{\boldsymbol\pi})`
    and the variance as the (n+1, n+1) element of :math:`(K_+^{-1} + W_+)^{-1}`; the form above is the
    same number without inverting :math:`K_+` (GPML Algorithm 3.2, eqs 3.21 and 3.24).

    Returns
    -------
    mean, var : ndarrays (m,)
        ``var`` is clipped at 0 against rounding.

    References
    ----------
    [WB97] §2.1; [GPML] Algorithm 3.2.
    """
    if not isinstance(kernel, SEKernel):
        raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
    X = check_matrix(X, "X")
    X_test = check_matrix(X_test, "X_test", n_features=X.shape[1])
    if X.shape[0] != mode.f.shape[0]:
        raise ValueError(f"X must hold the {mode.f.shape[0]} training inputs of the mode; got {X.shape[0]}")
    K_star = kernel.K(X, X_test)
    # W&B 1997 §2.1 / GPML Alg. 3.2 line 4: μ* = k*ᵀ ∇log p(y|f̂) = k*ᵀ (t − π̂)
    mean = K_star.T @ mode.grad_log_lik
    # GPML Alg. 3.2 lines 5–6: v = L⁻¹ W½ k*, s*² = k** − vᵀv
    v = solve_lower(mode.L, np.sqrt(mode.W)[:, None] * K_star)
    var = kernel.diag(X_test) - np.sum(v * v, axis=0)
    return mean, np.maximum(var, 0.0)


PREDICTION_METHODS = ("erf_mixture", "mackay", "quadrature", "exact")


def laplace_predict_proba(mean, var, method="erf_mixture", likelihood=None, erf_scales=None,
                          erf_coefficients=None):
    r"""Class probability :math:`P(y_*=+1) = \int \sigma(f_*)\,N(f_*|\mu_*, s_*^2)\,df_*`.

    ``method`` chooses how the logistic is squashed through the Gaussian:

    - ``"erf_mixture"``: W&B 1997 §2.1, σ replaced by five scaled normal CDFs, each integrated
      exactly (pass ``erf_scales``/``erf_coefficients`` to use another implementation's constants);
    - ``"mackay"``: MacKay's probit approximation :math:`\sigma(\mu_*/\sqrt{1+\pi s_*^2/8})` (G&M eq 23);
    - ``"quadrature"``: 64-node Gauss–Hermite quadrature (GPML eq 3.25 evaluated numerically);
    - ``"exact"``: adaptive quadrature, slow, the reference.

    For the probit likelihood the integral is exact, :math:`\Phi(\mu_*/\sqrt{1+s_*^2})`, whatever
    ``method`` says.

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
    if method not in PREDICTION_METHODS:
        raise ValueError(f"method must be one of {PREDICTION_METHODS}; got {method!r}")
    likelihood = _check_likelihood(likelihood)
    if isinstance(likelihood, ProbitLikelihood):
        return likelihood.predict(mean, var, method="exact")
    if not isinstance(likelihood, LogisticLikelihood):
        return likelihood.predict(mean, var)
    if method == "erf_mixture":
        # W&B 1997 §2.1: σ(z) ≈ Σ_i c_i Φ(κ_i z); ∫ Φ(κ f) N(f|μ, s²) df = Φ(κμ/√(1 + κ²s²))
        return sigmoid_gaussian_erf_mixture(mean, var, scales=erf_scales, coefficients=erf_coefficients)
    if method == "mackay":
        # G&M (2000) eq 23: σ(κ(s²) μ), κ(s²) = (1 + π s²/8)^(−½)
        return sigmoid_gaussian_mackay(mean, var)
    if method == "quadrature":
        return sigmoid_gaussian_quadrature(mean, var)
    return sigmoid_gaussian_exact(mean, var)


# ----------------------------------------------------------------- hyperparameters: W&B priors and MAP
def _wb_coordinates(kernel):
    r"""dφ/dθ for W&B's log-parameters φ = (log v₀, log w_1..w_d, [log v₁], [log jitter]).

    Our θ uses log lengthscales; W&B's :math:`w_l = 1/\ell_l^2`, so :math:`\log w_l = -2\log\ell_l`.
    The map is linear, φ = scale · θ.
    """
    n_lengthscales = len(np.atleast_1d(kernel.lengthscale))
    return np.concatenate([[1.0], np.full(n_lengthscales, -2.0),
                           np.ones(int(kernel.learn_bias) + int(kernel.learn_jitter))])


def log_hyperprior(kernel, prior_mean=-3.0, prior_sd=3.0):
    r"""W&B's hyperprior and its gradient with respect to ``kernel.theta``.

    W&B 1997 §2.3: independent Gaussians :math:`N(\phi_j|\mu, s^2)`, :math:`\mu = -3`, :math:`s = 3`, on
    the log of every covariance parameter in *their* parameterisation,
    :math:`\phi = \log(v_0, w_1, \dots, w_d, v_1)` with :math:`w_l = 1/\ell_l^2`, so
    :math:`\phi_{w_l} = -2\theta_{\ell_l}` (our θ holds log lengthscales):

    .. math:: \log p(\phi(\theta)) = \sum_j \log N(\phi_j(\theta)|\mu, s^2).

    The value is the log density *of φ* (as in W&B and :mod:`gpc_ref.hmc`); the density of θ
    differs by the constant :math:`d\log 2` (the Jacobian of the linear map), which changes
    neither the MAP point nor any HMC acceptance. A prior N(−3, 3²) on log w is N(1.5, 1.5²) on
    log ℓ: it favours lengthscales around e^{1.5} ≈ 4.5 input units, not tiny ones.

    Returns
    -------
    value : float
    gradient : ndarray (P,)
        ∂ log p(φ(θ))/∂θ.
    """
    if not isinstance(kernel, SEKernel):
        raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
    prior_sd = float(check_positive(prior_sd, "prior_sd"))
    prior_mean = float(check_vector(prior_mean, "prior_mean", length=1)[0])
    scale = _wb_coordinates(kernel)
    phi = scale * kernel.theta
    z = (phi - prior_mean) / prior_sd
    # W&B 1997 §2.3: φ_j ~ N(−3, 3²)
    value = float(np.sum(-0.5 * z**2 - np.log(prior_sd) - 0.5 * np.log(2.0 * np.pi)))
    gradient = scale * (-z / prior_sd)  # chain rule through φ = scale · θ
    return value, gradient


@dataclass(frozen=True)
class MAPResult:
    """Maximum penalised likelihood (MAP) hyperparameters.

    Attributes
    ----------
    kernel : SEKernel
        The kernel at the best optimum found.
    log_posterior : float
        log q(y|X,θ) + log p(φ(θ)) there (unnormalised; see :func:`log_hyperprior`).
    log_evidence, log_prior : float
        Its two parts.
    theta : ndarray (P,)
        ``kernel.theta``.
    gradient : ndarray (P,)
        Gradient of the log posterior at ``theta`` (near 0 unless a bound is active).
    n_restarts : int
        Number of restarts besides the run from the given kernel.
    starts : ndarray (n_restarts + 1, P)
        Starting points (the first is the given kernel's θ, clipped to the bounds).
    log_posteriors : ndarray (n_restarts + 1,)
        Final log posterior of each run.
    success : bool
        Whether L-BFGS-B reported convergence for the best run.
    mode : LaplaceMode
        The Laplace mode at the optimum.
    bounds : ndarray (P, 2)
        Box used for θ.
    """

    kernel: SEKernel
    log_posterior: float
    log_evidence: float
    log_prior: float
    theta: np.ndarray
    gradient: np.ndarray
    n_restarts: int
    starts: np.ndarray = field(repr=False, default=None)
    log_posteriors: np.ndarray = field(repr=False, default=None)
    success: bool = True
    mode: LaplaceMode = field(repr=False, default=None)
    bounds: np.ndarray = field(repr=False, default=None)


def map_hyperparameters(kernel, X, y, rng, prior_mean=-3.0, prior_sd=3.0, n_restarts=3, likelihood=None,
                        restart_from="start", restart_sd=1.0, max_iter=200):
    r"""Maximum penalised likelihood hyperparameters: argmax of log q(y|X,θ) + log p(θ).

    W&B 1998 §6 call this "maximum penalised likelihood" (MPL): the Laplace approximate evidence
    (:func:`laplace_evidence`, exact gradient) plus W&B's hyperprior (:func:`log_hyperprior`),
    maximised by L-BFGS-B from the given kernel and from ``n_restarts`` further starts, either
    ``restart_from="start"``: θ₀ + N(0, ``restart_sd``²) per coordinate, or ``"prior"``: drawn from the
    hyperprior. θ is kept inside the box where every W&B coordinate lies within 5 prior standard
    deviations of the prior mean (for the defaults: log v₀ ∈ [−18, 12], log ℓ ∈ [−6, 9]).

    Newton is warm-started from the previous mode at each evaluation (W&B restarted from f = 0;
    the optimum is the same, only faster). Non-convergence warnings during the search are
    silenced; the final point is re-evaluated with them on.

    Parameters
    ----------
    kernel : SEKernel
        Starting kernel; which parameters are learnt is ``kernel.theta_names``.
    X, y : training inputs (n, D) and labels in {−1, +1} (or {0, 1})
    rng : numpy.random.Generator or int
    prior_mean, prior_sd : float
        The hyperprior (W&B: −3 and 3).
    n_restarts : int
        Extra starts besides the given kernel (0 for a single run).
    likelihood : optional, as in :func:`laplace_mode`.
    restart_from : "start" or "prior"
    restart_sd : float
        Spread of the "start" restarts.
    max_iter : int
        L-BFGS-B iteration limit per run.

    Returns
    -------
    MAPResult

    References
    ----------
    [WB97] §2.3 (priors); [WB98] §6 (MPL); [GPML] §5.4.
    """
    if not isinstance(kernel, SEKernel):
        raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
    rng = check_rng(rng)
    X = check_matrix(X, "X")
    y = check_binary_labels(np.asarray(y), "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y must have the same number of points; got {X.shape[0]} and {y.shape[0]}")
    if int(n_restarts) != n_restarts or n_restarts < 0:
        raise ValueError(f"n_restarts must be a non-negative integer; got {n_restarts!r}")
    if restart_from not in ("start", "prior"):
        raise ValueError(f"restart_from must be 'start' or 'prior'; got {restart_from!r}")
    restart_sd = float(check_positive(restart_sd, "restart_sd"))
    prior_sd = float(check_positive(prior_sd, "prior_sd"))
    likelihood = _check_likelihood(likelihood)
    scale = _wb_coordinates(kernel)
    # box: every W&B coordinate φ_j within μ ± 5s, mapped to θ = φ/scale
    phi_box = np.array([prior_mean - 5.0 * prior_sd, prior_mean + 5.0 * prior_sd])
    bounds = np.sort(np.outer(1.0 / scale, phi_box), axis=1)
    theta0 = np.clip(kernel.theta, bounds[:, 0], bounds[:, 1])
    starts = [theta0]
    for _ in range(int(n_restarts)):
        if restart_from == "start":
            start = theta0 + restart_sd * rng.standard_normal(theta0.shape)
        else:
            start = (prior_mean + prior_sd * rng.standard_normal(theta0.shape)) / scale
        starts.append(np.clip(start, bounds[:, 0], bounds[:, 1]))
    starts = np.array(starts)

    warm = {"f": None}

    def negative_log_posterior(theta):
        candidate = kernel.with_theta(theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            evidence = laplace_evidence(candidate, X, y, likelihood=likelihood, f_init=warm["f"])
        warm["f"] = evidence.mode.f
        log_prior, prior_gradient = log_hyperprior(candidate, prior_mean, prior_sd)
        return -(evidence.log_evidence + log_prior), -(evidence.gradient + prior_gradient)

    results = []
    for start in starts:
        warm["f"] = None
        result = optimize.minimize(negative_log_posterior, start, jac=True, method="L-BFGS-B",
                                   bounds=bounds, options={"maxiter": int(max_iter)})
        results.append(result)
    log_posteriors = np.array([-r.fun for r in results])
    best = results[int(np.argmax(log_posteriors))]
    best_kernel = kernel.with_theta(best.x)
    evidence = laplace_evidence(best_kernel, X, y, likelihood=likelihood)
    log_prior, prior_gradient = log_hyperprior(best_kernel, prior_mean, prior_sd)
    return MAPResult(kernel=best_kernel, log_posterior=evidence.log_evidence + log_prior,
                     log_evidence=evidence.log_evidence, log_prior=log_prior, theta=best_kernel.theta,
                     gradient=evidence.gradient + prior_gradient, n_restarts=int(n_restarts), starts=starts,
                     log_posteriors=log_posteriors, success=bool(best.success), mode=evidence.mode,
                     bounds=bounds)


# ===================================================================== multi-class softmax Laplace (W&B 1998 §4 and App. C, GPML Alg. 3.3, 3.4, 5.2)
#
# Notation of this section (book symbol ← code name). The latent values are kept
# as an (n, C) array ``F`` whose column c is the class-c block f^c; the stacked
# class-major vector of W&B 1998 and GPML §3.5 is ``F.T.ravel()``.
#
#   f_i^c, F[i, c]            latent value of class c at x_i (W&B 1998's activation y_i^c)
#   π_i^c, pi[i, c]           softmax probability exp f_i^c / Σ_c' exp f_i^c'       (W&B 1998 §4)
#   t_i^c, Y[i, c]            one-of-C target (1 for the class of x_i, 0 otherwise)
#   K_c, K[c]                 prior covariance of class c (the block-diagonal K has these blocks)
#   D = diag(π), Π            D_c = diag(π^c); Π stacks the D_c vertically (Cn × n)
#   W = D − ΠΠᵀ               minus the Hessian of log p(t|f) (W&B 1998 §4 "noise matrix")
#   B_c, L[c]                 B_c = I + D_c^½ K_c D_c^½ and its lower Cholesky factor
#   E_c, E[c]                 E_c = D_c^½ B_c⁻¹ D_c^½ = (K_c + D_c⁻¹)⁻¹        (GPML eq 3.45 ff.)
#   M                         lower Cholesky factor of Σ_c E_c                  (GPML Alg. 3.3)
#   a, a[:, c]                K⁻¹f: f^c = K_c a^c; at the mode a = t − π       (W&B 1998 App. C)
#   Ψ(f), psi                 log p(t|f) − ½ fᵀK⁻¹f                           (W&B 1998 App. C)
#   μ_*, Σ_*                  latent predictive mean (m, C) and covariances (m, C, C)
import warnings  # noqa: E402  (the imports of this section; the lead may hoist them)
from dataclasses import dataclass, field  # noqa: E402

from scipy import optimize  # noqa: E402

from .kernels import SEKernel  # noqa: E402
from .linalg import cholesky as _cholesky, cho_solve as _cho_solve  # noqa: E402
from .linalg import solve_lower as _solve_lower  # noqa: E402
from .validation import check_matrix as _check_matrix, check_rng as _check_rng  # noqa: E402


@dataclass(frozen=True)
class SoftmaxLaplaceMode:
    """The Laplace approximation of a multi-class softmax GP posterior (W&B 1998 §4, App. C).

    The posterior over the :math:`Cn` latent values is approximated by
    :math:`N(\\hat{\\mathbf f}, (K^{-1} + W)^{-1})` with :math:`W = D - \\Pi\\Pi^T` at the mode.

    Attributes
    ----------
    f : ndarray (n, C)
        The mode :math:`\\hat f`; column ``c`` is the class-``c`` block (class-major vector:
        ``f.T.ravel()``).
    pi : ndarray (n, C)
        Softmax probabilities at the mode; each row sums to one.
    a : ndarray (n, C)
        :math:`K^{-1}\\hat f` (column ``c`` is :math:`K_c^{-1}\\hat f^c`); equals ``Y - pi`` at
        convergence (the stationarity condition :math:`\\hat f = K(\\mathbf t - \\hat\\pi)`).
    Y : ndarray (n, C)
        The one-of-C targets the mode was computed for.
    E : ndarray (C, n, n)
        :math:`E_c = D_c^{1/2}(I + D_c^{1/2}K_cD_c^{1/2})^{-1}D_c^{1/2}` at the mode.
    L : ndarray (C, n, n)
        Lower Cholesky factors of :math:`B_c = I + D_c^{1/2}K_cD_c^{1/2}` at the mode.
    M : ndarray (n, n)
        Lower Cholesky factor of :math:`\\sum_c E_c` at the mode.
    psi : float
        :math:`\\Psi(\\hat f) = \\log p(\\mathbf t|\\hat f) - \\tfrac12\\hat f^TK^{-1}\\hat f`.
    log_evidence : float
        Approximate log evidence :math:`\\log q(\\mathbf t|X,\\theta)` (GPML eq 3.44 with the
        determinant of W&B 1998 App. C).
    n_iter : int
        Newton iterations taken.
    converged : bool
        Whether the change in :math:`\\Psi` fell below the tolerance before ``max_iter``.
    """

    f: np.ndarray = field(repr=False)
    pi: np.ndarray = field(repr=False)
    a: np.ndarray = field(repr=False)
    Y: np.ndarray = field(repr=False)
    E: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False)
    M: np.ndarray = field(repr=False)
    psi: float
    log_evidence: float
    n_iter: int
    converged: bool

    @property
    def n_classes(self):
        return self.f.shape[1]


@dataclass(frozen=True)
class SoftmaxLaplaceEvidence:
    """Approximate log evidence, its gradient with respect to the kernel's ``theta``, and the mode.

    ``gradient`` has one entry per entry of ``kernel.theta`` for a shared kernel, or the
    concatenation over classes of each kernel's ``theta`` for one kernel per class.
    """

    log_evidence: float
    gradient: np.ndarray
    mode: SoftmaxLaplaceMode = field(repr=False)


@dataclass(frozen=True)
class SoftmaxLaplaceFit:
    """Result of :func:`softmax_laplace_optimize`.

    Attributes
    ----------
    kernel : SEKernel or tuple of SEKernel
        The kernel(s) at the best optimum found.
    log_evidence : float
        :math:`\\log q(\\mathbf t|X,\\hat\\theta)`.
    objective : float
        The maximised value: ``log_evidence`` plus the log prior (if one was given).
    mode : SoftmaxLaplaceMode
        The Laplace approximation at the optimum.
    n_evaluations : int
        Evidence-and-gradient evaluations over all starts.
    success : bool
        Whether L-BFGS-B reported convergence for the best start.
    starts : tuple of float
        Final objective of every start, in the order they were run.
    """

    kernel: object
    log_evidence: float
    objective: float
    mode: SoftmaxLaplaceMode = field(repr=False)
    n_evaluations: int
    success: bool
    starts: tuple


# --------------------------------------------------------------------------- helpers
def one_hot_labels(codes, n_classes=None):
    """One-of-C targets ``Y`` (n, C) from integer class codes 0..C−1 (W&B 1998 §4 coding)."""
    codes = np.asarray(codes)
    if codes.ndim != 1 or codes.size == 0:
        raise ValueError(f"codes must be a non-empty 1-D array of integer class codes; got shape {codes.shape}")
    if codes.dtype.kind not in "iu" and not np.all(np.equal(np.mod(codes, 1), 0)):
        raise ValueError("codes must hold integer class codes 0..C-1")
    codes = codes.astype(int)
    n_classes = int(codes.max()) + 1 if n_classes is None else int(n_classes)
    if codes.min() < 0 or codes.max() >= n_classes:
        raise ValueError(f"codes must lie in 0..{n_classes - 1}; got values from {codes.min()} to {codes.max()}")
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes}")
    Y = np.zeros((codes.size, n_classes))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def _log_sum_exp(F):
    """log Σ_c exp F[..., c] along the last axis, shifted by the maximum so that nothing overflows."""
    top = F.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(F - top).sum(axis=-1, keepdims=True)))[..., 0]


def _softmax(F):
    """Row-wise softmax, computed from log-softmax so that no exponential overflows."""
    return np.exp(F - _log_sum_exp(F)[..., None])


def _check_one_hot(Y, name="Y"):
    Y = _check_matrix(Y, name)
    if Y.shape[1] < 2:
        raise ValueError(f"{name} must be an (n, C) one-of-C target matrix with C >= 2; got shape {Y.shape}")
    if not np.all((Y == 0) | (Y == 1)) or not np.all(Y.sum(axis=1) == 1):
        raise ValueError(f"{name} must be one-of-C coded: entries 0 or 1 and exactly one 1 per row "
                         f"(use one_hot_labels(codes) to build it)")
    return Y


def _check_class_covariances(K, n, n_classes, name="K"):
    """Return K as a (C, n, n) stack: one covariance per class, or one (n, n) shared by all."""
    try:
        K = np.asarray(K, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array") from exc
    if K.ndim == 2:
        K = np.broadcast_to(K, (n_classes,) + K.shape)
    if K.ndim != 3 or K.shape != (n_classes, n, n):
        raise ValueError(f"{name} must have shape ({n}, {n}) (shared) or ({n_classes}, {n}, {n}) "
                         f"(one per class) to match Y; got {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if not np.allclose(K, np.swapaxes(K, 1, 2), rtol=1e-10, atol=1e-12 * max(1.0, np.abs(K).max())):
        raise ValueError(f"{name} must be symmetric (each class covariance K_c = K_cᵀ)")
    return K


def _class_kernels(kernel, n_classes):
    """``(kernels, shared)``: the kernel of each class and whether one kernel is shared by all."""
    if isinstance(kernel, SEKernel):
        return (kernel,) * n_classes, True
    kernels = tuple(kernel) if isinstance(kernel, (list, tuple)) else None
    if kernels is None or len(kernels) != n_classes or not all(isinstance(k, SEKernel) for k in kernels):
        raise ValueError(f"kernel must be one SEKernel shared by all classes or a sequence of {n_classes} "
                         f"SEKernels (one per class); got {kernel!r}")
    return kernels, False


def _softmax_factors(K, pi):
    """The O(C n³) factorisations of one Newton step (GPML Alg. 3.3 lines 5-8).

    Returns ``(L, E, M, half_log_det)`` with L[c] = chol(I + D_c^½ K_c D_c^½),
    E[c] = D_c^½ B_c⁻¹ D_c^½, M = chol(Σ_c E_c) and
    half_log_det = ½ log|I + KW| = Σ_c Σ_i log L[c]_ii + Σ_i log M_ii (W&B 1998 App. C).
    """
    n_classes, n, _ = K.shape
    L = np.empty_like(K)
    E = np.empty_like(K)
    half_log_det = 0.0
    for c in range(n_classes):
        sqrt_d = np.sqrt(pi[:, c])
        # GPML Alg. 3.3 line 5: L = chol(I + D_c^½ K_c D_c^½)
        B = np.eye(n) + sqrt_d[:, None] * K[c] * sqrt_d[None, :]
        L[c] = _cholesky(B, name=f"B_{c} = I + D^1/2 K D^1/2").L
        # GPML Alg. 3.3 line 6: E_c = D_c^½ Lᵀ\(L\D_c^½) = VᵀV with V = L\D_c^½
        V = _solve_lower(L[c], np.diag(sqrt_d))
        E[c] = V.T @ V
        # ½ log|B_c| (GPML Alg. 3.3 line 7: z_c = Σ_i log L_ii)
        half_log_det += np.sum(np.log(np.diag(L[c])))
    # GPML Alg. 3.3 line 8: M = chol(Σ_c E_c)
    M = _cholesky(E.sum(axis=0), name="sum_c E_c").L
    # W&B 1998 App. C: |K⁻¹ + W| = |K⁻¹ + D| |I − Πᵀ(K⁻¹ + D)⁻¹Π|, and the second factor is |Σ_c E_c|
    half_log_det += np.sum(np.log(np.diag(M)))
    return L, E, M, half_log_det


def _psi(a, F, Y):
    """Ψ(f) = log p(t|f) − ½ fᵀK⁻¹f with K⁻¹f = a (W&B 1998 App. C, GPML eq 3.41 without constants)."""
    return float(-0.5 * np.sum(a * F) + np.sum(Y * F) - np.sum(_log_sum_exp(F)))


# --------------------------------------------------------------------------- Newton's method
def softmax_newton_step(K, Y, F):
    """One Newton step for the softmax GP posterior mode in O(C n³) (W&B 1998 App. C, GPML Alg. 3.3).

    The dense step is :math:`f^{new} = (K^{-1} + W)^{-1}(W f + \\mathbf t - \\pi)` with the
    :math:`Cn\\times Cn` matrices :math:`K = \\mathrm{blockdiag}(K_c)` and :math:`W = D - \\Pi\\Pi^T`.
    Writing :math:`E = (K + D^{-1})^{-1}` (block diagonal) and :math:`R` for the :math:`Cn\\times n`
    stack of identities, the matrix inversion lemma gives

    .. math:: (K^{-1} + W)^{-1} = K - K\\,[E - E R(\\textstyle\\sum_c E_c)^{-1}R^T E]\\,K,

    so only the :math:`C` blocks :math:`E_c` and the :math:`n\\times n` matrix :math:`\\sum_c E_c`
    are ever factorised.

    Parameters
    ----------
    K : ndarray (C, n, n) or (n, n)
        Prior covariance of each class (or one shared by all classes).
    Y : ndarray (n, C)
        One-of-C targets.
    F : ndarray (n, C)
        Current latent values.

    Returns
    -------
    F_new : ndarray (n, C)
        The Newton iterate :math:`K a`.
    a : ndarray (n, C)
        :math:`K^{-1} f^{new}`, so that :math:`\\Psi` can be evaluated without solving with K.

    References
    ----------
    [WB98] App. C (Newton step and the identities); [GPML] Alg. 3.3 lines 4–13, eqs 3.39–3.45.
    """
    Y = _check_one_hot(Y)
    n, n_classes = Y.shape
    K = _check_class_covariances(K, n, n_classes)
    F = _check_matrix(F, "F")
    if F.shape != Y.shape:
        raise ValueError(f"F must have shape {Y.shape} like Y; got {F.shape}")
    return _newton_step(K, Y, F)


def _newton_step(K, Y, F):
    # W&B 1998 §4: π_i^c = softmax(f_i)_c
    pi = _softmax(F)
    L, E, M, _ = _softmax_factors(K, pi)
    # GPML Alg. 3.3 line 9 (eq 3.39): b = W f + t − π with W f = D f − Π(Πᵀ f)
    b = pi * F - pi * np.sum(pi * F, axis=1, keepdims=True) + Y - pi
    # GPML Alg. 3.3 line 10: c = E K b, class by class
    c = np.stack([E[k] @ (K[k] @ b[:, k]) for k in range(Y.shape[1])], axis=1)
    # GPML Alg. 3.3 line 11: a = b − c + E R M⁻ᵀ M⁻¹ Rᵀ c   (Rᵀ c = Σ_c c^c)
    r = _cho_solve(M, c.sum(axis=1))
    a = b - c + np.stack([E[k] @ r for k in range(Y.shape[1])], axis=1)
    # GPML Alg. 3.3 line 12: f = K a
    F_new = np.stack([K[k] @ a[:, k] for k in range(Y.shape[1])], axis=1)
    return F_new, a


def softmax_laplace_mode(K, Y, f_init=None, tol=1e-10, max_iter=100):
    """Mode of the multi-class softmax GP posterior and the Laplace approximation there.

    Newton's method (W&B 1998 App. C) in the O(C n³) form of GPML Algorithm 3.3, with step
    halving whenever a full step would decrease :math:`\\Psi` (the objective is concave, so a
    full Newton step almost always succeeds; the halving only guards extreme hyperparameters).

    Parameters
    ----------
    K : ndarray (C, n, n) or (n, n)
        Prior covariance of each class, or one matrix shared by every class. Jitter, if any,
        must already be on its diagonal (``SEKernel.K`` adds it).
    Y : ndarray (n, C)
        One-of-C targets (:func:`one_hot_labels` builds them from class codes); ``C >= 2``.
        A class without training points is allowed.
    f_init : ndarray (n, C), optional
        Starting latent values (default zeros, i.e. π = 1/C, as W&B 1998 §5); the first step from
        a given start is always taken, later ones are halved if they decrease Ψ.
    tol : float
        Stop when Ψ changes by less than ``tol·max(1, |Ψ|)`` between iterations. (W&B 1998 stop when
        the mean relative change of the elements of W is below 1e-4; a test on Ψ is scale free and
        lets the tests demand :math:`\\hat f = K(\\mathbf t - \\hat\\pi)` to 1e-8.)
    max_iter : int
        Maximum number of Newton iterations; reaching it gives a :class:`ConvergenceWarning`
        naming the iteration count.

    Returns
    -------
    SoftmaxLaplaceMode

    Notes
    -----
    :math:`W = D - \\Pi\\Pi^T` is singular (:math:`W\\mathbf 1_i = 0` for the vector that adds the
    same amount to every class at point :math:`i`, because the softmax is invariant to it), but the
    Newton matrix :math:`K^{-1} + W` is positive definite whenever K is, so the step is well defined.

    References
    ----------
    [WB98] §4 and App. C; [GPML] Alg. 3.3 and eqs 3.38–3.45. GPML's Alg. 3.3 omits
    :math:`\\sum_i \\log M_{ii}` from :math:`\\log q`; it is included here (W&B 1998 App. C
    determinant identity), and the test suite checks the result against the dense determinant.
    """
    Y = _check_one_hot(Y)
    n, n_classes = Y.shape
    K = _check_class_covariances(K, n, n_classes)
    if not (np.isscalar(tol) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number; got {tol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    if f_init is None:
        F, a = np.zeros((n, n_classes)), np.zeros((n, n_classes))
        psi = _psi(a, F, Y)
    else:
        F = _check_matrix(f_init, "f_init")
        if F.shape != (n, n_classes):
            raise ValueError(f"f_init must have shape {(n, n_classes)} like Y; got {F.shape}")
        a, psi = None, -np.inf
    converged = False
    n_iter = 0
    for n_iter in range(1, int(max_iter) + 1):
        F_new, a_new = _newton_step(K, Y, F)
        psi_new = _psi(a_new, F_new, Y)
        # damped Newton: halve the step while Ψ decreases (f and a move together since f = K a)
        step = 1.0
        while a is not None and psi_new < psi - 1e-12 * max(1.0, abs(psi)) and step > 1e-10:
            step /= 2.0
            F_try, a_try = F + step * (F_new - F), a + step * (a_new - a)
            psi_try = _psi(a_try, F_try, Y)
            if psi_try >= psi or step <= 1e-10:
                F_new, a_new, psi_new = F_try, a_try, psi_try
        change = abs(psi_new - psi)
        F, a, psi = F_new, a_new, psi_new
        if change <= tol * max(1.0, abs(psi)):
            converged = True
            break
    if not converged:
        warnings.warn(f"softmax_laplace_mode did not converge in {n_iter} iterations "
                      f"(last change in psi {change:.3g}); increase max_iter or check the hyperparameters",
                      ConvergenceWarning, stacklevel=2)
    # the Laplace approximation at the mode: refactorise at the final f
    pi = _softmax(F)
    L, E, M, half_log_det = _softmax_factors(K, pi)
    # GPML eq 3.44: log q = −½ f̂ᵀK⁻¹f̂ + log p(t|f̂) − ½ log|I + KW|
    log_evidence = psi - half_log_det
    return SoftmaxLaplaceMode(f=F, pi=pi, a=a, Y=Y, E=E, L=L, M=M, psi=psi,
                              log_evidence=float(log_evidence), n_iter=n_iter, converged=converged)


# --------------------------------------------------------------------------- evidence and its gradient
def softmax_laplace_evidence(kernel, X, Y, f_init=None, tol=1e-10, max_iter=100):
    """Approximate log evidence of the softmax GP classifier and its gradient (GPML Alg. 5.2).

    .. math:: \\log q(\\mathbf t|X,\\theta) = -\\tfrac12\\hat f^TK^{-1}\\hat f + \\log p(\\mathbf t|\\hat f)
              - \\tfrac12\\log|I + KW|

    and, for each log-hyperparameter :math:`\\theta_j` (:math:`C_j = \\partial K/\\partial\\theta_j`,
    block diagonal),

    .. math:: \\frac{\\partial\\log q}{\\partial\\theta_j} = \\tfrac12 \\mathbf a^T C_j \\mathbf a
              - \\tfrac12\\mathrm{tr}\\bigl((K + W^{-1})^{-1}C_j\\bigr)
              + \\mathbf s^T (I + KW)^{-1} C_j \\mathbf a,

    where :math:`\\mathbf a = \\mathbf t - \\hat\\pi`, :math:`(K+W^{-1})^{-1} = E - ER(\\sum_c E_c)^{-1}R^TE`
    and :math:`s_k = -\\tfrac12\\mathrm{tr}((K^{-1}+W)^{-1}\\partial W/\\partial f_k)` is the derivative of the
    determinant term through the mode; the last term is the implicit dependence of the mode,
    :math:`\\partial\\hat f/\\partial\\theta_j = (I + KW)^{-1}C_j(\\mathbf t - \\hat\\pi)` (W&B 1998 App. B/C).

    Parameters
    ----------
    kernel : SEKernel or sequence of C SEKernel
        One kernel shared by all classes, or one per class (W&B 1998 §4 give each class its own
        hyperparameters). The gradient follows ``kernel.theta``, or the concatenation of the
        classes' ``theta`` vectors.
    X : ndarray (n, d)
        Training inputs.
    Y : ndarray (n, C)
        One-of-C targets.
    f_init, tol, max_iter
        Passed to :func:`softmax_laplace_mode`.

    Returns
    -------
    SoftmaxLaplaceEvidence

    References
    ----------
    [WB98] App. B–C; [GPML] Alg. 5.2 and eqs 5.20–5.23 (the multi-class version of the implicit term).
    """
    Y = _check_one_hot(Y)
    X = _check_matrix(X, "X")
    n, n_classes = Y.shape
    if X.shape[0] != n:
        raise ValueError(f"X and Y must have the same number of points; got {X.shape[0]} and {n}")
    kernels, shared = _class_kernels(kernel, n_classes)
    K = np.stack([kernels[0].K(X)] * n_classes) if shared else np.stack([k.K(X) for k in kernels])
    mode = softmax_laplace_mode(K, Y, f_init=f_init, tol=tol, max_iter=max_iter)
    E, M, pi = mode.E, mode.M, mode.pi
    # at the mode K⁻¹f̂ = t − π̂ (W&B 1998 App. C); use the Newton iterate's a, for which f̂ = K a exactly
    a = mode.a

    # s_k = ∂(−½ log|I + KW|)/∂f_k needs the per-point C×C blocks of V = (K⁻¹ + W)⁻¹
    #   V_cc' = δ_cc' (K_c − K_c E_c K_c) + (M⁻¹E_cK_c)ᵀ (M⁻¹E_c'K_c')       (GPML eq 3.45 ff.)
    Z = np.stack([_solve_lower(M, E[c]) for c in range(n_classes)])     # M⁻¹E_c
    H = np.stack([Z[c] @ K[c] for c in range(n_classes)])               # M⁻¹E_cK_c
    V = np.einsum("cji,dji->icd", H, H)
    for c in range(n_classes):
        V[:, c, c] += np.diag(K[c]) - np.einsum("ij,ji->i", K[c], E[c] @ K[c])
    # ∂W_i/∂f_i^b for W_i = diag(π_i) − π_iπ_iᵀ, contracted with V_i (derived in the chapter)
    V_diag = np.einsum("icc->ic", V)
    V_pi = np.einsum("icd,id->ic", V, pi)
    pi_V_pi = np.einsum("ic,ic->i", pi, V_pi)
    s = -0.5 * pi * (V_diag - np.sum(pi * V_diag, axis=1, keepdims=True) - 2.0 * V_pi + 2.0 * pi_V_pi[:, None])

    # diagonal blocks of (K + W⁻¹)⁻¹ = E − E R (Σ_c E_c)⁻¹ Rᵀ E (GPML eq 3.45)
    gradient_blocks = []
    grads_shared = kernels[0].gradients(X) if shared else None
    total = np.zeros(grads_shared.shape[0]) if shared else None
    for c in range(n_classes):
        G = grads_shared if shared else kernels[c].gradients(X)  # (P, n, n) = ∂K_c/∂θ
        inner_cc = E[c] - Z[c].T @ Z[c]
        # explicit terms: ½ aᵀ C_j a − ½ tr((K + W⁻¹)⁻¹ C_j)   (GPML eq 5.22 for the block of class c)
        explicit = 0.5 * np.einsum("i,pij,j->p", a[:, c], G, a[:, c]) - 0.5 * np.einsum("ij,pji->p", inner_cc, G)
        # implicit term: ∂f̂/∂θ_j = (I + KW)⁻¹ b = b − K (K + W⁻¹)⁻¹ b with b = C_j a (only block c nonzero)
        b = G @ a[:, c]                              # (P, n)
        u = b @ E[c]                                 # rows: (E_c b)ᵀ, E_c symmetric
        w = _cho_solve(M, u.T).T                     # (Σ_c E_c)⁻¹ E_c b
        implicit = np.zeros(G.shape[0])
        for c2 in range(n_classes):
            inner_b = (u if c2 == c else 0.0) - w @ E[c2]   # block c2 of (K + W⁻¹)⁻¹ b
            d_f = (b if c2 == c else 0.0) - inner_b @ K[c2]
            # GPML eq 5.23: the implicit part s ᵀ ∂f̂/∂θ_j
            implicit += d_f @ s[:, c2]
        contribution = explicit + implicit
        if shared:
            total += contribution
        else:
            gradient_blocks.append(contribution)
    gradient = total if shared else np.concatenate(gradient_blocks)
    return SoftmaxLaplaceEvidence(log_evidence=mode.log_evidence, gradient=gradient, mode=mode)


def _kernel_theta(kernel, n_classes):
    kernels, shared = _class_kernels(kernel, n_classes)
    return kernels[0].theta if shared else np.concatenate([k.theta for k in kernels])


def _kernel_with_theta(kernel, theta, n_classes):
    kernels, shared = _class_kernels(kernel, n_classes)
    if shared:
        return kernel.with_theta(theta)
    sizes = np.cumsum([0] + [len(k.theta) for k in kernels])
    return tuple(k.with_theta(theta[sizes[c]:sizes[c + 1]]) for c, k in enumerate(kernels))


def softmax_laplace_optimize(kernel, X, Y, log_prior=None, n_restarts=0, rng=None, bounds=(-10.0, 10.0),
                             max_iter=200, restart_scale=1.0, progress=False):
    """Hyperparameters by maximising the approximate evidence (plus an optional log prior).

    Maximises :math:`\\log q(\\mathbf t|X,\\theta) + \\log p(\\theta)` with L-BFGS-B using the exact
    gradient of :func:`softmax_laplace_evidence`. With W&B's Gaussian hyperpriors this is their
    *maximum penalised likelihood* (MPL) estimate, which W&B 1998 §5 used for forensic glass
    (HMC was too slow there). Each evaluation warm-starts Newton from the previous mode.

    Parameters
    ----------
    kernel : SEKernel or sequence of C SEKernel
        Starting kernel(s); its ``theta`` is the first start.
    X, Y : training inputs (n, d) and one-of-C targets (n, C).
    log_prior : callable, optional
        ``log_prior(theta) -> (value, gradient)`` on the same ``theta`` vector; None for plain
        evidence maximisation.
    n_restarts : int
        Extra starts at ``theta_0 + restart_scale·N(0, I)``; they need ``rng``.
    rng : numpy.random.Generator or int, optional
        Needed only when ``n_restarts > 0``.
    bounds : (float, float)
        Box on every log-hyperparameter (keeps line searches away from overflow).
    max_iter : int
        L-BFGS-B iterations per start.
    progress : bool
        Show a tqdm bar over the starts.

    Returns
    -------
    SoftmaxLaplaceFit

    References
    ----------
    [WB98] §5 (MPL for the multi-class problem); [WB97] §2.3 (the N(−3, 3²) hyperpriors); [GPML] §5.5.
    """
    Y = _check_one_hot(Y)
    X = _check_matrix(X, "X")
    n_classes = Y.shape[1]
    theta0 = _kernel_theta(kernel, n_classes)
    if int(n_restarts) != n_restarts or n_restarts < 0:
        raise ValueError(f"n_restarts must be a non-negative integer; got {n_restarts!r}")
    if log_prior is not None and not callable(log_prior):
        raise ValueError("log_prior must be a callable theta -> (value, gradient) or None")
    low, high = float(bounds[0]), float(bounds[1])
    if not low < high:
        raise ValueError(f"bounds must be (low, high) with low < high; got {bounds!r}")
    starts = [theta0]
    if n_restarts:
        generator = _check_rng(rng)
        starts += [np.clip(theta0 + restart_scale * generator.normal(size=theta0.shape), low, high)
                   for _ in range(int(n_restarts))]
    state = {"F": None, "count": 0}

    def negative_objective(theta):
        state["count"] += 1
        result = softmax_laplace_evidence(_kernel_with_theta(kernel, theta, n_classes), X, Y, f_init=state["F"])
        state["F"] = result.mode.f
        value, grad = result.log_evidence, result.gradient
        if log_prior is not None:
            prior_value, prior_grad = log_prior(theta)
            value, grad = value + prior_value, grad + np.asarray(prior_grad, dtype=float)
        return -value, -grad

    iterator = starts
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(starts, desc="restarts")
    best, best_F, finals = None, None, []
    for theta_start in iterator:
        state["F"] = None
        result = optimize.minimize(negative_objective, np.clip(theta_start, low, high), jac=True,
                                   method="L-BFGS-B", bounds=[(low, high)] * theta0.size,
                                   options={"maxiter": int(max_iter)})
        finals.append(float(-result.fun))
        if best is None or -result.fun > -best.fun:
            best, best_F = result, state["F"]
    best_kernel = _kernel_with_theta(kernel, best.x, n_classes)
    final = softmax_laplace_evidence(best_kernel, X, Y, f_init=best_F)
    objective = final.log_evidence + (log_prior(best.x)[0] if log_prior is not None else 0.0)
    return SoftmaxLaplaceFit(kernel=best_kernel, log_evidence=final.log_evidence, objective=float(objective),
                             mode=final.mode, n_evaluations=state["count"], success=bool(best.success),
                             starts=tuple(finals))


# --------------------------------------------------------------------------- predictions
def softmax_laplace_predict_latent(mode, kernel, X, X_test):
    """Gaussian latent predictive :math:`q(f_*|\\mathbf t) = N(\\mu_*, \\Sigma_*)` at each test point.

    .. math:: \\mu_*^c = \\mathbf k_*^{c\\,T}(\\mathbf t^c - \\hat\\pi^c), \\qquad
              \\Sigma_*^{cc'} = \\delta_{cc'}\\bigl(k_c(x_*,x_*) - \\mathbf k_*^{c\\,T}E_c\\mathbf k_*^c\\bigr)
              + (E_c\\mathbf k_*^c)^T(\\textstyle\\sum_{c''} E_{c''})^{-1}(E_{c'}\\mathbf k_*^{c'})

    i.e. :math:`\\Sigma_* = \\mathrm{diag}(k_{**}) - Q_*^T(K + W^{-1})^{-1}Q_*` written with the blocks
    of GPML eq 3.45 (W&B 1998 §4; GPML Alg. 3.4 lines 9–13).

    Parameters
    ----------
    mode : SoftmaxLaplaceMode
        From :func:`softmax_laplace_mode` with the covariances of ``kernel`` at ``X``.
    kernel : SEKernel or sequence of C SEKernel
    X : ndarray (n, d)
        Training inputs.
    X_test : ndarray (m, d)
        Test inputs.

    Returns
    -------
    mean : ndarray (m, C)
    cov : ndarray (m, C, C)
        Latent predictive covariance between the classes at each test point (the test points are
        treated one at a time: covariances between different test points are not returned).

    References
    ----------
    [WB98] §4; [GPML] Alg. 3.4, eqs 3.40 and 3.46.
    """
    if not isinstance(mode, SoftmaxLaplaceMode):
        raise ValueError(f"mode must be a SoftmaxLaplaceMode; got {type(mode).__name__}")
    X = _check_matrix(X, "X")
    X_test = _check_matrix(X_test, "X_test", n_features=X.shape[1])
    n, n_classes = mode.f.shape
    if X.shape[0] != n:
        raise ValueError(f"X has {X.shape[0]} points but the mode was computed for {n}")
    kernels, _ = _class_kernels(kernel, n_classes)
    m = X_test.shape[0]
    mean = np.empty((m, n_classes))
    cov = np.zeros((m, n_classes, n_classes))
    EK = np.empty((n_classes, n, m))
    for c in range(n_classes):
        K_star = kernels[c].K(X, X_test)
        # W&B 1998 §4 / GPML eq 3.40: μ_*^c = k_*^cᵀ (t^c − π̂^c)
        mean[:, c] = K_star.T @ (mode.Y[:, c] - mode.pi[:, c])
        EK[c] = mode.E[c] @ K_star
        # GPML Alg. 3.4: the block-diagonal part k_** − k_*ᵀ E_c k_*
        cov[:, c, c] = kernels[c].diag(X_test) - np.einsum("ij,ij->j", K_star, EK[c])
    # GPML Alg. 3.4: + (E_c k_*)ᵀ (Σ E)⁻¹ (E_c' k_*) for every pair of classes
    Q = np.stack([_solve_lower(mode.M, EK[c]) for c in range(n_classes)])
    cov += np.einsum("cjm,djm->mcd", Q, Q)
    return mean, cov


def _gaussian_square_root(cov):
    """S with S Sᵀ = cov for a batch of small PSD matrices, via eigh (negative rounding clipped to 0)."""
    values, vectors = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, -1, -2)))
    return vectors * np.sqrt(np.clip(values, 0.0, None))[..., None, :]


def _differences_to_last(mean, cov):
    """Mean and covariance of g = (f^1 − f^C, …, f^{C−1} − f^C): softmax(f) = softmax((g, 0))."""
    n_classes = mean.shape[-1]
    A = np.hstack([np.eye(n_classes - 1), -np.ones((n_classes - 1, 1))])
    return mean @ A.T, A @ cov @ A.T


def _softmax_of_differences(G):
    return _softmax(np.concatenate([G, np.zeros(G.shape[:-1] + (1,))], axis=-1))


def _cubature_degree5(dim):
    """Nodes (Q, dim) and weights (Q,) of a fully symmetric degree-5 rule for N(0, I_dim).

    Generators 0, ±r e_i and ±s(e_i ± e_j) with r² = dim + 2, s² = (dim + 2)/2; the weights solve the
    moment equations E[1] = 1, E[x_i²] = 1, E[x_i⁴] = 3, E[x_i²x_j²] = 1 (derived in the chapter).
    """
    nodes = [np.zeros(dim)]
    weights = [2.0 / (dim + 2)]
    r = np.sqrt(dim + 2.0)
    for i in range(dim):
        for sign in (1.0, -1.0):
            node = np.zeros(dim)
            node[i] = sign * r
            nodes.append(node)
            weights.append((4.0 - dim) / (2.0 * (dim + 2) ** 2))
    s = np.sqrt((dim + 2.0) / 2.0)
    for i in range(dim):
        for j in range(i + 1, dim):
            for si in (1.0, -1.0):
                for sj in (1.0, -1.0):
                    node = np.zeros(dim)
                    node[i], node[j] = si * s, sj * s
                    nodes.append(node)
                    weights.append(1.0 / (dim + 2) ** 2)
    return np.array(nodes), np.array(weights)


def _gauss_hermite_grid(dim, n_nodes):
    """Tensor-product Gauss–Hermite nodes (Q, dim) and weights (Q,) for N(0, I_dim)."""
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    x, w = np.sqrt(2.0) * x, w / np.sqrt(np.pi)
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    weights = np.ones(1)
    for _ in range(dim):
        weights = np.multiply.outer(weights, w).ravel()
    return np.stack([g.ravel() for g in grids], axis=1), weights


def _sobol_normal_points(dim, n_points):
    """A fixed (unscrambled) Sobol point set mapped to N(0, I_dim): n_points × dim, equal weights.

    The first Sobol point is the origin, which the normal quantile would send to −∞; shifting every
    coordinate by half a cell, u + 1/(2N), keeps the points inside (0, 1) and turns each one-dimensional
    projection into the midpoint rule.
    """
    from scipy.stats import norm, qmc

    log2 = int(round(np.log2(n_points)))
    if n_points < 2 or 2**log2 != n_points:
        raise ValueError(f"n_samples for method='qmc' must be a power of two (Sobol points); got {n_points}")
    u = qmc.Sobol(dim, scramble=False).random_base2(log2) + 0.5 / n_points
    return norm.ppf(u)


def softmax_gaussian_expectation(mean, cov, method="qmc", rng=None, n_samples=None, n_nodes=None,
                                 max_nodes=20000):
    """:math:`\\mathbb E[\\mathrm{softmax}(f)]` for :math:`f \\sim N(\\mu, \\Sigma)`, one Gaussian per row.

    The multi-class analogue of the sigmoid–Gaussian integrals of :mod:`gpc_ref.likelihoods`. Because
    the softmax is unchanged when the same number is added to every class, the deterministic rules
    integrate over the :math:`C-1` differences :math:`g_c = f^c - f^C`, whose Gaussian follows from
    :math:`(\\mu, \\Sigma)`, along its principal axes.

    Methods
    -------
    ``"qmc"`` (default)
        Quasi-Monte Carlo: the average of the softmax over a fixed Sobol point set of ``n_samples``
        points (default 4096, a power of two) mapped to the Gaussian. Deterministic, equal positive
        weights (so the probabilities lie in [0, 1] and sum to one), and — unlike the polynomial rules
        below — accurate also when the latent standard deviations are large compared with the unit
        scale on which the softmax bends, which is the usual case with evidence-optimal hyperparameters.
    ``"monte_carlo"``
        Average over ``n_samples`` (default 1000) random draws of the C-dimensional Gaussian (W&B 1998
        §4); unbiased, standard error at most :math:`0.5/\\sqrt{S}`; needs ``rng``.
    ``"gauss_hermite"``
        Tensor-product Gauss–Hermite rule, ``n_nodes`` = p nodes per axis (default: the largest
        p ≤ 10 with :math:`p^{C-1}` ≤ ``max_nodes``); positive weights, exact for polynomials of degree
        :math:`2p-1` along each axis. Very accurate for latent standard deviations up to about one,
        poor when they are ten or more.
    ``"cubature"``
        A fully symmetric degree-5 rule with :math:`2(C-1)^2 + 1` nodes; cheapest, but for :math:`C > 5`
        some weights are negative, and it is accurate only for small latent variances. The result is
        clipped to [0, 1] and renormalised.

    Parameters
    ----------
    mean : ndarray (m, C)
    cov : ndarray (m, C, C)
    method : {"qmc", "monte_carlo", "gauss_hermite", "cubature"}
    rng : numpy.random.Generator or int
        Required for ``"monte_carlo"`` (ignored otherwise).
    n_samples : int, optional
        Points per test input for ``"qmc"`` (power of two, default 4096) and ``"monte_carlo"``
        (default 1000).
    n_nodes : int, optional
        Gauss–Hermite nodes per axis.
    max_nodes : int
        Budget for the default ``n_nodes``.

    Returns
    -------
    ndarray (m, C)
        Class probabilities; every row sums to one.

    References
    ----------
    [WB98] §4 (Monte Carlo over the Gaussian latent predictive); [GPML] Alg. 3.4; [Sobol67] (the
    point set); [MS67] (fully symmetric cubature rules).
    """
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mean.ndim != 2 or mean.shape[1] < 2:
        raise ValueError(f"mean must have shape (m, C) with C >= 2; got {mean.shape}")
    m, n_classes = mean.shape
    if cov.shape != (m, n_classes, n_classes):
        raise ValueError(f"cov must have shape {(m, n_classes, n_classes)} to match mean; got {cov.shape}")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise ValueError("mean and cov must be finite")
    if n_samples is not None and (int(n_samples) != n_samples or n_samples < 1):
        raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}")
    dim = n_classes - 1
    if method == "monte_carlo":
        generator = _check_rng(rng)
        n_samples = 1000 if n_samples is None else int(n_samples)
        S = _gaussian_square_root(cov)
        out = np.empty((m, n_classes))
        for i in range(m):
            # W&B 1998 §4: average the softmax over draws f = μ + S z, z ~ N(0, I)
            Z = generator.standard_normal((n_samples, n_classes))
            out[i] = _softmax(mean[i] + Z @ S[i].T).mean(axis=0)
        return out
    if method == "qmc":
        nodes = _sobol_normal_points(dim, 4096 if n_samples is None else int(n_samples))
        weights = np.full(len(nodes), 1.0 / len(nodes))
    elif method == "gauss_hermite":
        if n_nodes is None:
            n_nodes = max(p for p in range(2, 11) if p**dim <= max_nodes or p == 2)
        if int(n_nodes) != n_nodes or n_nodes < 1:
            raise ValueError(f"n_nodes must be a positive integer; got {n_nodes!r}")
        if n_nodes**dim > 10 * max(max_nodes, 1):
            raise ValueError(f"n_nodes**(C-1) = {n_nodes}**{dim} nodes is too many; use method='qmc' for this "
                             f"many classes")
        nodes, weights = _gauss_hermite_grid(dim, int(n_nodes))
    elif method == "cubature":
        nodes, weights = _cubature_degree5(dim)
    else:
        raise ValueError(f"method must be 'qmc', 'monte_carlo', 'gauss_hermite' or 'cubature'; got {method!r}")
    mean_g, cov_g = _differences_to_last(mean, cov)
    S = _gaussian_square_root(cov_g)
    out = np.empty((m, n_classes))
    chunk = max(1, 200000 // len(weights))
    for start in range(0, m, chunk):
        part = slice(start, start + chunk)
        # g = μ_g + S x at every node x of the rule, for every test input of the chunk
        G = mean_g[part, None, :] + np.einsum("mij,qj->mqi", S[part], nodes)
        out[part] = np.einsum("mqc,q->mc", _softmax_of_differences(G), weights)
    if method == "cubature":
        out = np.clip(out, 0.0, 1.0)
        out /= out.sum(axis=1, keepdims=True)
    return out


def softmax_laplace_predict_proba(mode, kernel, X, X_test, method="qmc", rng=None, n_samples=None, n_nodes=None):
    """Class probabilities :math:`\\bar\\pi_*^c = \\int \\mathrm{softmax}_c(f_*)\\,q(f_*|\\mathbf t)\\,df_*`.

    The latent predictive of :func:`softmax_laplace_predict_latent` is pushed through the softmax by
    :func:`softmax_gaussian_expectation`: ``method="monte_carlo"`` as W&B 1998 §4 (needs ``rng``), or
    the deterministic ``"qmc"`` (default), ``"gauss_hermite"`` or ``"cubature"`` rules.

    Returns
    -------
    ndarray (m, C)
        Rows sum to one; columns in class order 0..C−1.

    References
    ----------
    [WB98] §4; [GPML] Alg. 3.4.
    """
    mean, cov = softmax_laplace_predict_latent(mode, kernel, X, X_test)
    return softmax_gaussian_expectation(mean, cov, method=method, rng=rng, n_samples=n_samples, n_nodes=n_nodes)
