r"""The multi-class (softmax) Laplace approximation for GP classification (Williams & Barber 1998 §4).

Each point has C latent values, one per class, and the likelihood is the softmax
p(c | f_i) = π_i^c = exp f_i^c/∑_c' exp f_i^c'. As in the binary case
(:mod:`gpc_ref.laplace`), the posterior over the Cn latent values is replaced by the
Gaussian at its mode with the curvature there; Newton's method and the evidence gradient are kept
at O(Cn³) by the identities of W&B 1998 Appendix C / GPML Algorithm 3.3.

Notation (book symbol ← code name). The latent values are kept as an (n, C) array ``F`` whose
column c is the class-c block f^c; the stacked class-major vector of W&B 1998 and
GPML §3.5 is ``F.T.ravel()``.

- f_i^c ← ``F[i, c]``: latent value of class c at x_i (W&B 1998's activation y_i^c).
- π_i^c ← ``pi[i, c]``: softmax probability (W&B 1998 §4).
- t_i^c ← ``Y[i, c]``: one-of-C target (1 for the class of x_i, 0 otherwise).
- K_c ← ``K[c]``: prior covariance of class c (the block-diagonal K has these blocks).
- D = diag(π), Π: D_c = diag(π^c);
  Π stacks the D_c vertically (Cn × n).
- W = D - ΠΠᵀ: minus the Hessian of log p(t|f) (W&B 1998's noise matrix).
- B_c ← ``L[c]`` (its Cholesky factor): B_c = I + D_c^½K_c D_c^½.
- E_c ← ``E[c]``: D_c^½B_c⁻¹D_c^½ = (K_c + D_c⁻¹)⁻¹ (GPML eq 3.45 ff.).
- M ← ``M``: lower Cholesky factor of ∑_c E_c (GPML Alg. 3.3).
- a ← ``a``: K⁻¹f (f^c = K_c a^c); at the mode
  a = t - π (W&B 1998 App. C).
- Ψ(f) ← ``psi``: log p(t|f) - ½fᵀK⁻¹f.
- μ_∗, Σ_∗ ← ``mean (m, C)``, ``cov (m, C, C)``: latent predictive.

References
----------
- [WB98] Williams & Barber (1998), *Bayesian Classification with Gaussian Processes*, IEEE PAMI 20(12):
  §4 (the softmax model, Monte Carlo predictions), §5 (forensic glass by MPL), Appendices B–C.
- [GPML] Rasmussen & Williams (2006), Algorithms 3.3–3.4 and 5.2; eqs 3.38–3.46.
- [WB97] Williams & Barber (1997), §2.3: the N(−3, 3²) hyperpriors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import lapack

from .errors import ConvergenceWarning
from .gaussian_integrals import log_sum_exp
from .gaussian_integrals import softmax
from .gaussian_integrals import softmax_gaussian_expectation
from .hyperparameters import HyperparameterFit
from .hyperparameters import theta_box
from .hyperparameters import theta_names
from .kernels import SEKernel
from .kernels import class_kernels
from .kernels import stack_theta
from .kernels import unstack_theta
from .laplace import maximize_laplace_evidence
from .linalg import cho_solve
from .linalg import cholesky
from .linalg import solve_lower
from .threads import limited_blas_threads
from .validation import check_class_codes
from .validation import check_covariance_stack
from .validation import check_matrix
from .validation import check_one_hot
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_train_test

__all__ = [
    "SoftmaxLaplaceMode",
    "SoftmaxLaplaceEvidence",
    "SoftmaxLaplaceFit",
    "one_hot_labels",
    "softmax_newton_step",
    "softmax_laplace_mode",
    "softmax_laplace_mode_core",
    "softmax_laplace_evidence",
    "softmax_laplace_optimize",
    "softmax_laplace_predict_latent",
    "softmax_laplace_predict_proba",
]


@dataclass(frozen=True)
class SoftmaxLaplaceMode:
    """The Laplace approximation of a multi-class softmax GP posterior (W&B 1998 §4, App. C).

    The posterior over the Cn latent values is approximated by
    N(f̂, (K⁻¹ + W)⁻¹) with W = D - ΠΠᵀ at the mode.

    Attributes
    ----------
    f : ndarray (n, C)
        The mode f̂; column ``c`` is the class-``c`` block (class-major vector:
        ``f.T.ravel()``).
    pi : ndarray (n, C)
        Softmax probabilities at the mode; each row sums to one.
    a : ndarray (n, C)
        K⁻¹f̂ (column ``c`` is K_c⁻¹f̂^c); equals ``Y - pi`` at
        convergence (the stationarity condition f̂ = K(t - π̂)).
    Y : ndarray (n, C)
        The one-of-C targets the mode was computed for.
    E : ndarray (C, n, n)
        E_c = D_c^½(I + D_c^½K_c D_c^½)⁻¹D_c^½ at the mode.
    L : ndarray (C, n, n)
        Lower Cholesky factors of B_c = I + D_c^½K_c D_c^½ at the mode.
    M : ndarray (n, n)
        Lower Cholesky factor of ∑_c E_c at the mode.
    psi : float
        Ψ(f̂) = log p(t|f̂) - ½f̂ᵀK⁻¹f̂.
    log_evidence : float
        Approximate log evidence log q(t|X,θ) (GPML eq 3.44 with the
        determinant of W&B 1998 App. C).
    n_iter : int
        Newton iterations taken.
    converged : bool
        Whether Newton's tests (change of Ψ and its gradient) were met before ``max_iter``.
    gradient_norm : float
        Largest component of ∇Ψ at the returned mode.
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
    gradient_norm: float = np.nan

    @property
    def n_classes(self) -> int:
        """C, the number of classes."""
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
        log q(t|X,θ̂).
    objective : float
        The maximised value: ``log_evidence`` plus the log prior (if one was given).
    mode : SoftmaxLaplaceMode
        The Laplace approximation at the optimum.
    converged : bool
        The projected gradient passed :func:`gpc_ref.hyperparameters.maximize`'s test.
    optimization : HyperparameterFit
        Starts, iterations, evaluations and the box of the search.
    """

    kernel: object
    log_evidence: float
    objective: float
    mode: SoftmaxLaplaceMode = field(repr=False)
    converged: bool
    optimization: HyperparameterFit = field(repr=False)


# --------------------------------------------------------------------------- helpers
def one_hot_labels(codes: ArrayLike, n_classes: int | None = None) -> np.ndarray:
    """One-of-C targets ``Y`` (n, C) from integer class codes 0..C−1 (W&B 1998 §4 coding).

    Parameters
    ----------
    codes : array (n,)
        Class codes 0..C−1.
    n_classes : int, optional
        C (default ``max(codes) + 1``); a class without points is allowed.

    Returns
    -------
    ndarray (n, C)
        ``Y[i, c] = 1`` if ``codes[i] == c``, else 0.
    """
    codes = np.asarray(codes)
    codes, n_classes = check_class_codes(
        codes, codes.shape[0] if codes.ndim else -1, n_classes, "codes", require_all=False
    )
    Y = np.zeros((codes.size, n_classes))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def _class_covariances(K, n, n_classes, name="K"):
    """Return K as a (C, n, n) stack: one covariance per class, or one (n, n) shared by all."""
    K = check_covariance_stack(K, name, n_points=n, n_classes=n_classes)
    return np.broadcast_to(K, (n_classes, n, n)) if K.shape[0] == 1 else K


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
        B = sqrt_d[:, None] * K[c]
        B *= sqrt_d[None, :]
        B[np.diag_indices(n)] += 1.0
        L[c] = cholesky(B, name=f"B_{c} = I + D^1/2 K D^1/2").L
        # GPML Alg. 3.3 line 6: E_c = D_c^½ Lᵀ\(L\D_c^½) = D_c^½ B_c⁻¹ D_c^½. B_c⁻¹ from the factor by
        # LAPACK's potri, which uses the triangular structure of L⁻¹ that the two solves of line 6 ignore
        # (a third of their work; the same numbers)
        lower = lapack.dpotri(L[c], lower=1)[0]  # B_c⁻¹ below the diagonal, L's zeros above it
        B_inverse = lower + lower.T
        B_inverse[np.diag_indices(n)] *= 0.5
        E[c] = sqrt_d[:, None] * B_inverse * sqrt_d[None, :]
        # ½ log|B_c| (GPML Alg. 3.3 line 7: z_c = Σ_i log L_ii)
        half_log_det += np.sum(np.log(np.diag(L[c])))
    # GPML Alg. 3.3 line 8: M = chol(Σ_c E_c)
    M = cholesky(E.sum(axis=0), name="sum_c E_c").L
    # W&B 1998 App. C: |K⁻¹ + W| = |K⁻¹ + D| |I − Πᵀ(K⁻¹ + D)⁻¹Π|, and the second factor is |Σ_c E_c|
    half_log_det += np.sum(np.log(np.diag(M)))
    return L, E, M, half_log_det


def _psi(a, F, Y):
    """Ψ(f) = log p(t|f) − ½ fᵀK⁻¹f with K⁻¹f = a (W&B 1998 App. C, GPML eq 3.41 without constants)."""
    return float(-0.5 * np.sum(a * F) + np.sum(Y * F) - np.sum(log_sum_exp(F)))


# --------------------------------------------------------------------------- Newton's method
def softmax_newton_step(K: ArrayLike, Y: ArrayLike, F: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One Newton step for the softmax GP posterior mode in O(C n³) (W&B 1998 App. C, GPML Alg. 3.3).

    The dense step f^new = (K⁻¹ + W)⁻¹(W f + t - π), with K = blockdiag(K_c) and W = D - ΠΠᵀ (Cn × Cn), by the
    matrix inversion lemma: only the C blocks E_c = (K_c + D_c⁻¹)⁻¹ and the n × n matrix ∑_c E_c are factorised
    (derivation: book/laplace_multiclass.ipynb).

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
        The Newton iterate K a.
    a : ndarray (n, C)
        K⁻¹ f^new, so that Ψ can be evaluated without solving with K.

    References
    ----------
    [WB98] App. C (Newton step and the identities); [GPML] Alg. 3.3 lines 4–13, eqs 3.39–3.45.
    """
    Y = check_one_hot(Y)
    n, n_classes = Y.shape
    K = _class_covariances(K, n, n_classes)
    F = check_matrix(F, "F")
    if F.shape != Y.shape:
        raise ValueError(f"F must have shape {Y.shape} like Y; got {F.shape}")
    return _newton_step(K, Y, F)


def _newton_step(K, Y, F):
    # W&B 1998 §4: π_i^c = softmax(f_i)_c
    pi = softmax(F)
    L, E, M, _ = _softmax_factors(K, pi)
    # GPML Alg. 3.3 line 9 (eq 3.39): b = W f + t − π with W f = D f − Π(Πᵀ f)
    b = pi * F - pi * np.sum(pi * F, axis=1, keepdims=True) + Y - pi
    # GPML Alg. 3.3 line 10: c = E K b, class by class
    c = np.stack([E[k] @ (K[k] @ b[:, k]) for k in range(Y.shape[1])], axis=1)
    # GPML Alg. 3.3 line 11: a = b − c + E R M⁻ᵀ M⁻¹ Rᵀ c   (Rᵀ c = Σ_c c^c)
    r = cho_solve(M, c.sum(axis=1))
    a = b - c + np.stack([E[k] @ r for k in range(Y.shape[1])], axis=1)
    # GPML Alg. 3.3 line 12: f = K a
    F_new = np.stack([K[k] @ a[:, k] for k in range(Y.shape[1])], axis=1)
    return F_new, a


#: Newton stops, unconverged, after this many damped steps in a row (see softmax_laplace_mode)
MAX_DAMPED_STEPS = 10


@limited_blas_threads
def softmax_laplace_mode(
    K: ArrayLike, Y: ArrayLike, *, f_init: ArrayLike | None = None, tol: float = 1e-10, max_iter: int = 100
) -> SoftmaxLaplaceMode:
    """Mode of the multi-class softmax GP posterior and the Laplace approximation there.

    Newton's method (W&B 1998 App. C) in the O(C n³) form of GPML Algorithm 3.3; a full step that would decrease Ψ
    is halved. Where no halved step raises Ψ, or :data:`MAX_DAMPED_STEPS` steps in a row had to be halved, rounding
    has spoilt the Newton direction (covariance eigenvalues of 1e8 and more) and Newton stops, unconverged.
    W = D − ΠΠᵀ is singular, but K⁻¹ + W is positive definite whenever K is, so the step is well defined.

    Parameters
    ----------
    K : ndarray (C, n, n) or (n, n)
        Prior covariance of each class, or one shared by every class, jitter included (``SEKernel.K`` adds it).
    Y : ndarray (n, C)
        One-of-C targets (:func:`one_hot_labels`), ``C >= 2``; a class without training points is allowed.
    f_init : ndarray (n, C), optional
        Starting latent values (default zeros, π = 1/C, as W&B 1998 §5); the first step from it is never halved.
    tol : float
        Stop when Ψ changes by less than ``tol·max(1, |Ψ|)`` and every component of ∇Ψ = t − π − K⁻¹f is below √tol.
    max_iter : int
        Maximum number of Newton iterations; not converging gives a :class:`ConvergenceWarning`.

    Returns
    -------
    SoftmaxLaplaceMode
        The mode, the factors ``L``, ``E``, ``M`` there, the log evidence and Newton's diagnostics.

    References
    ----------
    [WB98] §4 and App. C; [GPML] Alg. 3.3 and eqs 3.38–3.45. Unlike GPML's Alg. 3.3, log q includes
    Σ_i log M_ii (W&B 1998 App. C determinant identity).
    """
    Y = check_one_hot(Y)
    n, n_classes = Y.shape
    K = _class_covariances(K, n, n_classes)
    tol = float(check_positive(tol, "tol"))
    max_iter = check_positive_int(max_iter, "max_iter")
    if f_init is None:
        F, a = np.zeros((n, n_classes)), np.zeros((n, n_classes))
        psi = _psi(a, F, Y)
    else:
        F = check_matrix(f_init, "f_init")
        if F.shape != (n, n_classes):
            raise ValueError(f"f_init must have shape {(n, n_classes)} like Y; got {F.shape}")
        a, psi = None, -np.inf
    converged, change, gradient_norm, n_damped = False, np.inf, np.inf, 0
    for n_iter in range(1, max_iter + 1):
        # Algorithm 6.1 steps 2.1–2.7 (the first step from a given start is never halved: a is None)
        F_new, a_new, psi_new, step, stalled = _halved_newton_step(K, Y, F, a, psi)
        change = abs(psi_new - psi)
        F, a, psi = F_new, a_new, psi_new
        gradient_norm = _gradient_norm(Y, F, a)
        if change <= tol * max(1.0, abs(psi)) and gradient_norm <= np.sqrt(tol):  # step 3
            converged = True
            break
        # near the mode Newton's full step succeeds; where step after step has to be damped, the direction
        # is spoilt by rounding (K with eigenvalues ~1e8 and more) and further iterations only crawl
        n_damped = n_damped + 1 if step < 1.0 else 0
        if stalled or n_damped >= MAX_DAMPED_STEPS:
            break  # report, do not loop
    if not converged:
        advice = "increase max_iter or check the hyperparameters"
        if stalled or n_damped >= MAX_DAMPED_STEPS:
            advice = (
                "the Newton steps had to be damped, step after step: rounding spoils the Newton direction at "
                "these hyperparameters (a very large signal variance or lengthscale?)"
            )
        warnings.warn(
            f"softmax_laplace_mode did not converge in {n_iter} iterations (largest gradient component "
            f"{gradient_norm:.3g}, last change in psi {change:.3g}); {advice}",
            ConvergenceWarning,
            stacklevel=2,
        )
    return _laplace_at_mode(K, Y, F, a, psi, n_iter=n_iter, converged=converged, gradient_norm=gradient_norm)


def _halved_newton_step(K, Y, F, a, psi):
    """Steps 2.1–2.7 of Algorithm 6.1 (lapm-alg-mode): the Newton step from f, halved while Ψ decreases.

    Returns (f, a, Ψ, the step length, stalled): stalled when no step down to 1e-10 raises Ψ (rounding, or a
    broken step), and then f, a, Ψ are the old ones. With ``a`` None (a start without K⁻¹f) the full step is taken.
    """
    F_full, a_full = _newton_step(K, Y, F)
    F_new, a_new, psi_new = F_full, a_full, _psi(a_full, F_full, Y)
    step = 1.0
    while a is not None and psi_new < psi - 1e-12 * max(1.0, abs(psi)):
        step /= 2.0
        if step < 1e-10:
            return F, a, psi, step, True
        F_new, a_new = F + step * (F_full - F), a + step * (a_full - a)  # f and a move together: f = K a
        psi_new = _psi(a_new, F_new, Y)
    return F_new, a_new, psi_new, step, False


def _gradient_norm(Y, F, a):
    """Step 3 of Algorithm 6.1: the largest component of ∇Ψ = t − π − K⁻¹f, with K⁻¹f = a (W&B 1998 App. C)."""
    return float(np.max(np.abs(Y - softmax(F) - a)))


def _laplace_at_mode(K, Y, F, a, psi, *, n_iter, converged, gradient_norm):
    """Step 4 of Algorithm 6.1: the factors at the final f and log q = Ψ − ½ log|I + KW| (GPML eq 3.44)."""
    pi = softmax(F)
    L, E, M, half_log_det = _softmax_factors(K, pi)
    return SoftmaxLaplaceMode(f=F, pi=pi, a=a, Y=Y, E=E, L=L, M=M, psi=psi, log_evidence=float(psi - half_log_det),
                              n_iter=n_iter, converged=converged, gradient_norm=gradient_norm)  # fmt: skip


def softmax_laplace_mode_core(K: np.ndarray, Y: np.ndarray, *, tol: float = 1e-10,
                              max_iter: int = 100) -> SoftmaxLaplaceMode:  # fmt: skip
    """Algorithm 6.1 (lapm-alg-mode), step for step: Newton's method for the softmax Laplace mode in O(C n³).

    The plain core of
    :func:`softmax_laplace_mode`, which checks the arguments, may start from ``f_init``, stops where step
    after step has to be halved (rounding spoils the Newton direction) and warns when step 3 is not met;
    this function trusts its arguments and does none of that. From f = 0 the two return the same mode
    (``tests/package/test_laplace_multiclass.py``).

    Parameters
    ----------
    K : ndarray (C, n, n)
        The class covariances.
    Y : ndarray (n, C)
        One-of-C targets t.
    tol, max_iter
        The box's ε and the most Newton steps.

    Returns
    -------
    SoftmaxLaplaceMode

    References: [WB98] App. C; [GPML] Algorithm 3.3 and eq 3.44.
    """
    F, a = np.zeros(Y.shape), np.zeros(Y.shape)  # step 1
    psi, converged = _psi(a, F, Y), False
    for n_iter in range(1, max_iter + 1):  # step 2
        F, a, psi_new, _, _ = _halved_newton_step(K, Y, F, a, psi)  # steps 2.1–2.7
        change, psi = abs(psi_new - psi), psi_new
        gradient_norm = _gradient_norm(Y, F, a)
        if change <= tol * max(1.0, abs(psi)) and gradient_norm <= np.sqrt(tol):  # step 3
            converged = True
            break
    return _laplace_at_mode(K, Y, F, a, psi, n_iter=n_iter, converged=converged, gradient_norm=gradient_norm)  # 4


# --------------------------------------------------------------------------- evidence and its gradient
def softmax_laplace_evidence(
    kernel: SEKernel | Sequence[SEKernel],
    X: ArrayLike,
    Y: ArrayLike,
    *,
    f_init: ArrayLike | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> SoftmaxLaplaceEvidence:
    """Approximate log evidence of the softmax GP classifier and its gradient (GPML Alg. 5.2).

        log q(t|X,θ) = -½f̂ᵀK⁻¹f̂ + log p(t|f̂) - ½ log|I + KW|,
        ∂log q/∂θ_j = ½ aᵀ C_j a - ½tr((K + W⁻¹)⁻¹C_j) + sᵀ (I + KW)⁻¹ C_j a,

    with C_j = ∂K/∂θ_j (block diagonal), a = t - π̂ and s the derivative of the determinant term through the mode:
    the last term is the implicit dependence of the mode (W&B 1998 App. B/C); derived in book/laplace_multiclass.ipynb.

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
        ``log_evidence``, its ``gradient`` in the (stacked) ``theta`` and the ``mode``.

    References
    ----------
    [WB98] App. B–C; [GPML] Alg. 5.2 and eqs 5.20–5.23 (the multi-class version of the implicit term).
    """
    Y = check_one_hot(Y)
    X = check_matrix(X, "X")
    n, n_classes = Y.shape
    if X.shape[0] != n:
        raise ValueError(f"X and Y must have the same number of points; got {X.shape[0]} and {n}")
    kernels, shared = class_kernels(kernel, n_classes)
    # a shared kernel: one matrix, seen by every class (a view, not C copies)
    K = np.broadcast_to(kernels[0].K(X), (n_classes, n, n)) if shared else np.stack([k.K(X) for k in kernels])
    mode = softmax_laplace_mode(K[0] if shared else K, Y, f_init=f_init, tol=tol, max_iter=max_iter)
    E, M, pi = mode.E, mode.M, mode.pi
    # at the mode K⁻¹f̂ = t − π̂ (W&B 1998 App. C); use the Newton iterate's a, for which f̂ = K a exactly
    a = mode.a

    # s_k = ∂(−½ log|I + KW|)/∂f_k needs the per-point C×C blocks of V = (K⁻¹ + W)⁻¹
    #   V_cc' = δ_cc' (K_c − K_c E_c K_c) + (M⁻¹E_cK_c)ᵀ (M⁻¹E_c'K_c')       (GPML eq 3.45 ff.)
    Z = np.stack([solve_lower(M, E[c]) for c in range(n_classes)])  # M⁻¹E_c
    EK = [E[c] @ K[c] for c in range(n_classes)]  # E_cK_c
    H = np.stack([solve_lower(M, EK[c]) for c in range(n_classes)])  # M⁻¹E_cK_c
    V = np.einsum("cji,dji->icd", H, H)
    for c in range(n_classes):
        # diag(K_c − K_cE_cK_c), K_c and E_c symmetric
        V[:, c, c] += np.diag(K[c]) - np.einsum("ij,ij->j", K[c], EK[c])
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
        b = G @ a[:, c]  # (P, n)
        u = b @ E[c]  # rows: (E_c b)ᵀ, E_c symmetric
        w = cho_solve(M, u.T).T  # (Σ_c E_c)⁻¹ E_c b
        implicit = np.zeros(G.shape[0])
        for c2 in range(n_classes):
            inner_b = (u if c2 == c else 0.0) - w @ E[c2]  # block c2 of (K + W⁻¹)⁻¹ b
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


def softmax_laplace_optimize(kernel: SEKernel | Sequence[SEKernel], X: ArrayLike, Y: ArrayLike, *,
                             log_prior: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None,
                             n_restarts: int = 0, rng: np.random.Generator | int | None = None,
                             restart_sd: float = 1.0, bounds: ArrayLike | None = None, max_iter: int = 200,
                             tol: float = 1e-5, progress: bool = False) -> SoftmaxLaplaceFit:  # fmt: skip
    """Hyperparameters by maximising the approximate evidence (plus an optional log prior).

    Maximises log q(t|X,θ) + log p(θ) by :func:`gpc_ref.laplace.maximize_laplace_evidence` (L-BFGS-B, restarts,
    the exact gradient of :func:`softmax_laplace_evidence`, Newton warm-started from the previous mode). With W&B's
    Gaussian hyperpriors this is their maximum penalised likelihood (MPL) estimate, which W&B 1998 §5 used for
    forensic glass.

    Parameters
    ----------
    kernel : SEKernel or sequence of C SEKernel
        Starting kernel(s); its ``theta`` is the first start.
    X, Y
        As in :func:`softmax_laplace_evidence`.
    log_prior : callable, optional
        ``log_prior(theta) -> (value, gradient)`` on the same ``theta`` vector; None for plain
        evidence maximisation.
    n_restarts, rng, restart_sd, max_iter, tol, progress
        As in :func:`gpc_ref.hyperparameters.maximize`: the extra starts are
        ``theta_0 + restart_sd·N(0, I)`` and need ``rng``.
    bounds : array (P, 2), optional
        The box (default :func:`gpc_ref.hyperparameters.theta_box` of the kernel(s)).

    Returns
    -------
    SoftmaxLaplaceFit
        The kernel(s) at the best optimum, the evidence, the objective and the search.

    References
    ----------
    [WB98] §5 (MPL for the multi-class problem); [WB97] §2.3 (the N(−3, 3²) hyperpriors); [GPML] §5.5.
    """
    Y = check_one_hot(Y)
    X = check_matrix(X, "X")
    n_classes = Y.shape[1]
    theta0 = stack_theta(kernel, n_classes)
    if log_prior is not None and not callable(log_prior):
        raise ValueError("log_prior must be a callable theta -> (value, gradient) or None")
    fit, final, prior_value = maximize_laplace_evidence(
        lambda theta, f_init: softmax_laplace_evidence(unstack_theta(kernel, theta, n_classes), X, Y, f_init=f_init),
        theta0,
        log_prior=log_prior,
        description="softmax_laplace_optimize",
        bounds=theta_box(kernel) if bounds is None else bounds,
        names=theta_names(kernel),
        n_restarts=n_restarts,
        rng=rng,
        restart_sd=restart_sd,
        max_iter=max_iter,
        tol=tol,
        progress=progress,
    )
    return SoftmaxLaplaceFit(
        kernel=unstack_theta(kernel, fit.theta, n_classes),
        log_evidence=final.log_evidence,
        objective=float(final.log_evidence + prior_value),
        mode=final.mode,
        converged=fit.converged,
        optimization=fit,
    )


# --------------------------------------------------------------------------- predictions
def softmax_laplace_predict_latent(
    mode: SoftmaxLaplaceMode, kernel: SEKernel | Sequence[SEKernel], X: ArrayLike, X_test: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian latent predictive q(f_∗|t) = N(μ_∗, Σ_∗) at each test point.

        μ_∗^c = (k_∗^c)ᵀ(t^c − π̂^c),
        Σ_∗^cc' = δ_cc'(k_c(x_∗, x_∗) − (k_∗^c)ᵀE_c k_∗^c) + (E_c k_∗^c)ᵀ(∑_c'' E_c'')⁻¹(E_c' k_∗^c')

    i.e. Σ_∗ = diag(k_∗∗) - Q_∗ᵀ(K + W⁻¹)⁻¹Q_∗ written with the blocks
    of GPML eq 3.45 (W&B 1998 §4; GPML Alg. 3.4 lines 9–13).

    Parameters
    ----------
    mode : SoftmaxLaplaceMode
        From :func:`softmax_laplace_mode` with the covariances of ``kernel`` at ``X``.
    kernel : SEKernel or sequence of C SEKernel
        The kernel(s) of the mode.
    X, X_test : ndarrays (n, d) and (m, d)
        Training and test inputs.

    Returns
    -------
    mean : ndarray (m, C)
        μ_∗ at each test point.
    cov : ndarray (m, C, C)
        Latent predictive covariance between the classes at each test point (the test points are
        treated one at a time: covariances between different test points are not returned).

    References
    ----------
    [WB98] §4; [GPML] Alg. 3.4, eqs 3.40 and 3.46.
    """
    if not isinstance(mode, SoftmaxLaplaceMode):
        raise ValueError(f"mode must be a SoftmaxLaplaceMode; got {type(mode).__name__}")
    n, n_classes = mode.f.shape
    X, X_test = check_train_test(X, X_test, n)
    kernels, _ = class_kernels(kernel, n_classes)
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
    Q = np.stack([solve_lower(mode.M, EK[c]) for c in range(n_classes)])
    cov += np.einsum("cjm,djm->mcd", Q, Q)
    return mean, cov


def softmax_laplace_predict_proba(mode: SoftmaxLaplaceMode, kernel: SEKernel | Sequence[SEKernel], X: ArrayLike,
                                  X_test: ArrayLike, *, method: str = "qmc",
                                  rng: np.random.Generator | int | None = None, n_samples: int | None = None,
                                  n_nodes: int | None = None) -> np.ndarray:  # fmt: skip
    """Class probabilities π̄_∗^c = ∫ softmax_c(f_∗) q(f_∗|t) df_∗.

    The latent predictive of :func:`softmax_laplace_predict_latent` is pushed through the softmax by
    :func:`softmax_gaussian_expectation`: ``method="monte_carlo"`` as W&B 1998 §4 (needs ``rng``), or
    the deterministic ``"qmc"`` (default), ``"gauss_hermite"`` or ``"cubature"`` rules.

    Parameters
    ----------
    mode, kernel, X, X_test
        As in :func:`softmax_laplace_predict_latent`.
    method, rng, n_samples, n_nodes
        As in :func:`~gpc_ref.gaussian_integrals.softmax_gaussian_expectation`.

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
