r"""Variational Bayes for binary and multinomial probit GP classification (Girolami & Rogers 2006).

Albert & Chib's augmentation gives every point an auxiliary vector
:math:`\mathbf y_n = \mathbf m_n + \boldsymbol\epsilon_n`, :math:`\boldsymbol\epsilon_n \sim N(0, I)`,
with the class the index of its largest entry (G&R eq 3.1). With the factorised
posterior :math:`Q(\mathbf Y)Q(\mathbf M)` both factors are available in closed
form: Q(M) is K independent GP regressions with unit noise on the targets
:math:`\widetilde{\mathbf y}_k`, and Q(Y) is a product of cone-truncated Gaussians.

Notation (book symbol ← code name; G&R's symbol in brackets):

=====================================  =================  =========================================
book                                   code               G&R (2006)
=====================================  =================  =========================================
class codes 0..K−1                     ``t``              :math:`t_n \in \{1..K\}` (minus one)
binary labels ±1                       ``t``              :math:`t_n \in \{-1, +1\}` (§4.4.1)
prior covariance of class k            ``K[k]``           :math:`\mathbf C_{\varphi_k}`
posterior means of the GP values       ``M`` (n, K)       :math:`\widetilde{\mathbf M}`, columns :math:`\widetilde{\mathbf m}_k`
posterior means of the auxiliaries     ``Y`` (n, K)       :math:`\widetilde{\mathbf Y}`
mean shift by the truncation           ``P`` (n, K)       :math:`\mathbf P`, :math:`p_{nk}` (§4.4)
normaliser of Q(y_n)                   ``exp(log_Z)``     :math:`\mathcal Z_n`
dual weights                           ``alpha`` (n, K)   :math:`(\mathbf I + \mathbf C_k)^{-1}\widetilde{\mathbf y}_k`
posterior covariance of m_k            (not formed)       :math:`\Sigma_k = \mathbf C_k(\mathbf I + \mathbf C_k)^{-1}`
lower bound                            ``lower_bound``    Appendix C
kernel precisions                      ``phi``            :math:`\varphi_d = 1/(2\ell_d^2)`
their exponential rates                ``psi``            :math:`\psi_d`
Gamma hyperprior (shape, rate)         ``prior_shape``,   :math:`\sigma, \tau`
                                       ``prior_rate``
=====================================  =================  =========================================

Keeping :math:`\boldsymbol\alpha_k` instead of :math:`\widetilde{\mathbf m}_k` means only
:math:`\mathbf I + \mathbf C_k` is ever factorised (its eigenvalues are at least one), never
:math:`\mathbf C_k` itself: :math:`\widetilde{\mathbf m}_k = \mathbf C_k\boldsymbol\alpha_k`,
:math:`\widetilde{\mathbf m}_k^T\mathbf C_k^{-1}\widetilde{\mathbf m}_k = \boldsymbol\alpha_k^T\mathbf C_k\boldsymbol\alpha_k`,
and the predictive mean at a new point is :math:`\boldsymbol\alpha_k^T\mathbf c_k^{new}` (§4.5).

The lower bound of Appendix C simplifies (the book derives it) to

.. math:: \mathcal L = \sum_n \log\mathcal Z_n
          - \tfrac12\sum_k \widetilde{\mathbf m}_k^T\mathbf C_k^{-1}\widetilde{\mathbf m}_k
          - \tfrac12\sum_k \log|\mathbf I + \mathbf C_k|,

because :math:`\tr\Sigma_k + \tr(\mathbf C_k^{-1}\Sigma_k) = N` and
:math:`|\Sigma_k|/|\mathbf C_k| = |\mathbf I + \mathbf C_k|^{-1}`. The printed final
expression carries an extra :math:`-\tfrac{N(K-1)}{2}\log 2\pi` (see the errata page).

References
----------
- [GR06] Girolami & Rogers (2006), eqs 3.1, 4.1–4.9, §4.5, Appendices A–C.
- [AC93] Albert & Chib (1993): the auxiliary-variable representation of the probit.
- [GPML] Rasmussen & Williams (2006), §2.2 (GP regression with unit noise, used by Q(M)).
- [VR08] Varadhan & Roland (2008): SQUAREM, the optional acceleration of the fixed-point iterations.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from .kernels import SEKernel
from .likelihoods import MultinomialProbitLikelihood, normal_pdf_over_cdf
from .linalg import cholesky, solve_lower
from .validation import check_binary_labels, check_matrix, check_positive, check_rng

__all__ = [
    "ConvergenceWarning",
    "check_class_codes",
    "truncated_normal_mean",
    "cone_truncated_mean",
    "cone_mean_shift_monte_carlo",
    "VBResult",
    "vb_probit_binary",
    "vb_probit_multiclass",
    "vb_lower_bound",
    "vb_predict_latent",
    "vb_predict_proba",
    "precisions_from_kernel",
    "kernel_from_precisions",
    "ImportanceStep",
    "importance_sample_precisions",
    "update_psi",
    "KernelLearning",
    "vb_probit_learn_kernel",
]


class ConvergenceWarning(UserWarning):
    """An iterative method stopped at its iteration limit before meeting its tolerance."""


# --------------------------------------------------------------------------- input checks
def check_class_codes(t, n_points, n_classes=None, name="t"):
    """Return ``(codes, n_classes)`` after checking that ``t`` holds class codes 0..K−1.

    The paper numbers classes 1..K; the package uses 0..K−1 (estimators map any
    labels to these codes). Every class must have at least one example: a class
    the data never show has no information in the likelihood, and is almost
    certainly a mistake in the labels.
    """
    t = np.asarray(t)
    if t.ndim != 1 or t.shape[0] != n_points:
        raise ValueError(f"{name} must be a 1-D array of {n_points} class codes; got shape {t.shape}")
    try:
        codes = t.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold integer class codes 0..K-1 (the paper's 1..K minus one)") from exc
    if not np.all(np.isfinite(codes)) or np.any(codes != np.round(codes)):
        raise ValueError(f"{name} must hold integer class codes 0..K-1 (the paper's 1..K minus one)")
    codes = codes.astype(int)
    if n_classes is None:
        n_classes = int(codes.max()) + 1
    n_classes = int(n_classes)
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes}")
    if np.any(codes < 0) or np.any(codes >= n_classes):
        bad = sorted(set(codes[(codes < 0) | (codes >= n_classes)].tolist()))[:6]
        raise ValueError(f"{name} has codes {bad} outside 0..{n_classes - 1} (the paper's labels 1..{n_classes} "
                         f"minus one)")
    counts = np.bincount(codes, minlength=n_classes)
    if np.any(counts == 0):
        raise ValueError(f"{name}: class code(s) {np.flatnonzero(counts == 0).tolist()} have no examples; "
                         f"every one of the {n_classes} classes needs at least one training point")
    return codes, n_classes


def _check_kernel_matrices(K, n_classes=None):
    """Return a list of per-class (n, n) matrices from one shared matrix or a (C, n, n) stack."""
    K = np.asarray(K, dtype=float)
    if K.ndim == 2:
        mats = [K]
    elif K.ndim == 3:
        mats = list(K)
        if n_classes is not None and len(mats) != n_classes:
            raise ValueError(f"K must hold one (n, n) matrix per class ({n_classes}); got {len(mats)}")
    else:
        raise ValueError(f"K must be an (n, n) matrix or a stack (K, n, n) of them; got shape {K.shape}")
    for k, mat in enumerate(mats):
        if mat.shape[0] != mat.shape[1]:
            raise ValueError(f"K must be square; got shape {mat.shape}")
        if not np.all(np.isfinite(mat)):
            raise ValueError("K contains NaN or infinite values")
        if not np.allclose(mat, mat.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(mat).max()))):
            raise ValueError(f"K{'' if len(mats) == 1 else f'[{k}]'} must be symmetric")
    return mats


# --------------------------------------------------------------------------- Q(Y): truncated Gaussians
def truncated_normal_mean(m, t):
    r"""Mean of :math:`y \sim N(m, 1)` truncated to :math:`t\,y > 0` (G&R §4.4.1, footnote 6).

    .. math:: \widetilde y = m + t\,\frac{\phi(m)}{\Phi(t m)}

    for labels :math:`t \in \{-1, +1\}`. The ratio is evaluated in log space
    (:func:`~gpc_ref.likelihoods.normal_pdf_over_cdf`), so it stays finite when
    :math:`t m \to -\infty` (where it grows like :math:`-t m`).
    """
    m = np.asarray(m, dtype=float)
    t = check_binary_labels(t, "t")
    # G&R (2006) footnote 6: ỹ = m̃ + t φ(m̃)/Φ(t m̃)   (φ is even, so φ(m) = φ(t m))
    return m + t * normal_pdf_over_cdf(t * m)


def cone_truncated_mean(t, M, likelihood=None):
    r"""Means :math:`\widetilde{\mathbf Y}` and :math:`\log\mathcal Z_n` of :math:`N(\mathbf m_n, I)` truncated to cone :math:`t_n` (G&R eqs 4.3, 4.4).

    A thin wrapper of :meth:`~gpc_ref.likelihoods.MultinomialProbitLikelihood.cone_mean_shift`
    (Gauss–Hermite quadrature over :math:`u`): returns ``(M + P, log_Z)``.
    """
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    # G&R (2006) eqs 4.3, 4.4: ỹ_n = m̃_n + p_n
    P, log_Z = likelihood.cone_mean_shift(t, M)
    return np.asarray(M, dtype=float) + P, log_Z


def cone_mean_shift_monte_carlo(t, M, rng, n_samples=1000):
    r"""The paper's estimator of P and :math:`\mathcal Z_n`: the expectations over u by Monte Carlo.

    G&R (§6.1) computed the one-dimensional expectations of eqs 4.3–4.4 with
    1000 samples :math:`u^{(s)} \sim N(0,1)`, shared by all points. This
    function repeats that estimator so the book can compare it with the
    Gauss–Hermite rule used everywhere else. Returns ``(P, log_Z)`` like
    :meth:`~gpc_ref.likelihoods.MultinomialProbitLikelihood.cone_mean_shift`.
    """
    rng = check_rng(rng)
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[1] < 2:
        raise ValueError(f"M must have shape (n, K) with K >= 2; got {M.shape}")
    n, K = M.shape
    t = np.asarray(t)
    if t.shape != (n,) or np.any(t != np.round(t)) or np.any(t < 0) or np.any(t >= K):
        raise ValueError(f"t must hold {n} integer class codes in 0..{K - 1}")
    t = t.astype(int)
    u = rng.standard_normal(int(n_samples))
    own = M[np.arange(n), t]
    d = u[None, :, None] + (own[:, None] - M)[:, None, :]  # u + m̃_ni − m̃_nk, shape (n, S, K)
    log_Phi = log_ndtr(d)
    log_Phi[np.arange(n), :, t] = 0.0
    S = log_Phi.sum(axis=2)  # log Π_{j≠i} Φ(u + m̃_i − m̃_j)
    # G&R (2006) App. A.2: Z_n = E_u[Π_{j≠i} Φ(u + m̃_ni − m̃_nj)], by a sample mean
    log_Z = logsumexp(S, axis=1) - np.log(n_samples)
    # G&R (2006) eq 4.3 numerator: E_u[N_u(m̃_nk − m̃_ni, 1) Φ_u^{n,i,k}]
    log_num = logsumexp(-0.5 * d**2 - 0.5 * np.log(2 * np.pi) + S[:, :, None] - log_Phi, axis=1) - np.log(n_samples)
    P = -np.exp(log_num - log_Z[:, None])
    P[np.arange(n), t] = 0.0
    # G&R (2006) eq 4.4: p_ni = −Σ_{k≠i} p_nk
    P[np.arange(n), t] = -P.sum(axis=1)
    return P, log_Z


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class VBResult:
    """State of the variational posterior Q(M)Q(Y) after the iterations.

    Attributes
    ----------
    M : ndarray (n, C)
        Posterior means :math:`\\widetilde{\\mathbf m}_k` (C = 1 for the binary model).
    Y : ndarray (n, C)
        Means :math:`\\widetilde{\\mathbf y}_k` of Q(Y) at ``M``.
    alpha : ndarray (n, C)
        :math:`(\\mathbf I + \\mathbf C_k)^{-1}\\widetilde{\\mathbf y}_k` of the last Q(M) update; ``M = C alpha``.
    log_Z : ndarray (n,)
        :math:`\\log\\mathcal Z_n` at ``M``: the log likelihood of each label at the posterior mean.
    lower_bound : ndarray (n_iter,)
        The bound of Appendix C after every iteration (non-decreasing for a fixed kernel).
    factors : tuple of CholeskyFactor
        Cholesky factors of :math:`\\mathbf I + \\mathbf C_k` (one if the kernel is shared).
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
    def log_marginal_likelihood_bound(self):
        """The final value of the lower bound on log p(t | X, kernel)."""
        return float(self.lower_bound[-1])


def vb_lower_bound(log_Z, alpha, M, factors):
    r"""The variational lower bound of G&R Appendix C, in the simplified form derived in the book.

    .. math:: \mathcal L = \sum_n\log\mathcal Z_n - \tfrac12\sum_k\boldsymbol\alpha_k^T\widetilde{\mathbf m}_k
              - \tfrac12\sum_k\log|\mathbf I + \mathbf C_k|

    with :math:`\widetilde{\mathbf m}_k = \mathbf C_k\boldsymbol\alpha_k` (so
    :math:`\boldsymbol\alpha_k^T\widetilde{\mathbf m}_k = \widetilde{\mathbf m}_k^T\mathbf C_k^{-1}\widetilde{\mathbf m}_k`).
    ``factors`` holds one factor of :math:`\mathbf I + \mathbf C` per class, or a
    single shared one counted ``n_classes`` times.
    """
    n_cols = alpha.shape[1]
    if len(factors) == 1:
        half_log_det = 0.5 * n_cols * factors[0].log_det
    else:
        half_log_det = 0.5 * sum(f.log_det for f in factors)
    # G&R (2006) App. C (simplified): Σ log Z_n − ½ Σ_k m̃_kᵀ C_k⁻¹ m̃_k − ½ Σ_k log|I + C_k|
    return float(np.sum(log_Z) - 0.5 * np.sum(alpha * M) - half_log_det)


def _factor_plus_identity(mats):
    n = mats[0].shape[0]
    return tuple(cholesky(np.eye(n) + mat, name="I + K") for mat in mats)


def _warn_not_converged(name, max_iter, change):
    warnings.warn(f"{name} did not converge in {max_iter} iterations (last bound change {change:.3g}); "
                  f"raise max_iter or loosen tol", ConvergenceWarning, stacklevel=3)


def _squarem(evaluate, update, alpha, max_iter, tol):
    """SQUAREM acceleration [VR08] of the fixed-point map α ↦ (I + C)⁻¹ ỹ(α), the bound as merit function.

    ``evaluate(α)`` returns ``(M, Y, log_Z, bound)`` for M̃ = Cα with Q(Y) refreshed
    at M̃; ``update(Y)`` is the Q(M) step. Each cycle takes two plain steps
    α0 → α1 → α2, extrapolates α' = α0 − 2s r + s² v (r = α1 − α0,
    v = α2 − 2α1 + α0, s = −‖r‖/‖v‖), applies one more plain step, and keeps the
    result only if its bound is at least that of α2; otherwise s is moved
    halfway towards −1 (where α' = α2) and the cycle retried. The recorded
    bound therefore never decreases, and the fixed point is the plain
    iteration's. ``max_iter`` counts evaluations of the map.
    """
    state = evaluate(alpha)
    bounds = [state[3]]
    n_eval, converged = 1, False
    while n_eval < max_iter:
        alpha1 = update(state[1])
        state1 = evaluate(alpha1)
        alpha2 = update(state1[1])
        state2 = evaluate(alpha2)
        n_eval += 2
        r, v = alpha1 - alpha, alpha2 - 2.0 * alpha1 + alpha
        norm_v = np.sqrt(np.sum(v * v))
        best_alpha, best = alpha2, state2
        if norm_v > 0.0:
            step = min(-np.sqrt(np.sum(r * r)) / norm_v, -1.0)
            while step < -1.0 and n_eval < max_iter:
                trial_alpha = update(evaluate(alpha - 2.0 * step * r + step**2 * v)[1])
                trial = evaluate(trial_alpha)
                n_eval += 2
                if np.isfinite(trial[3]) and trial[3] >= state2[3]:
                    best_alpha, best = trial_alpha, trial
                    break
                step = 0.5 * (step - 1.0)
        change = best[3] - bounds[-1]
        alpha, state = best_alpha, best
        bounds.append(state[3])
        if abs(change) <= tol * max(1.0, abs(state[3])):
            converged = True
            break
    return alpha, state, bounds, n_eval, converged


def vb_probit_binary(K, t, max_iter=1000, tol=1e-9, alpha_init=None, warn=True, accelerate=False):
    r"""Binary variational Bayes probit classification (G&R §4.4.1, eq 4.9).

    One GP :math:`\mathbf m \sim N(0, \mathbf C)`, auxiliaries
    :math:`y_n \sim N(m_n, 1)` and labels :math:`t_n = \operatorname{sign}(y_n) \in \{-1, +1\}`.
    Each iteration updates Q(y) (footnote 6) and then Q(m) (eq 4.9):

    .. math:: p_n = t_n\frac{\phi(\widetilde m_n)}{\Phi(t_n\widetilde m_n)}, \qquad
              \widetilde{\mathbf m} \leftarrow \mathbf C(\mathbf I + \mathbf C)^{-1}(\widetilde{\mathbf m} + \mathbf p).

    :math:`\mathbf I + \mathbf C` is factorised once. The bound (Appendix C with
    K = 1 and :math:`\mathcal Z_n = \Phi(t_n\widetilde m_n)`) is recorded every iteration;
    the loop stops when it rises by less than ``tol``·max(1, |bound|).

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance :math:`\mathbf C` (jitter included).
    t : array (n,)
        Labels in {−1, +1} (or {0, 1}).
    alpha_init : ndarray (n,), optional
        Starting :math:`\boldsymbol\alpha` (so :math:`\widetilde{\mathbf m} = \mathbf C\boldsymbol\alpha`); zeros by default.
    accelerate : bool
        Extrapolate the iterations with SQUAREM [VR08]: same fixed point, far
        fewer iterations when the kernel is large (the plain iteration's rate
        approaches one); the bound is still recorded after every accepted cycle and never decreases.

    Returns
    -------
    VBResult
        with ``M``, ``Y``, ``alpha`` of shape (n, 1) and ``binary=True``.

    References
    ----------
    [GR06] eq 4.9 and footnote 6; [AC93].
    """
    (C,) = _check_kernel_matrices(K)
    n = C.shape[0]
    t = check_binary_labels(t, "t")
    if t.shape[0] != n:
        raise ValueError(f"t must have {n} labels to match K; got {t.shape[0]}")
    factor = cholesky(np.eye(n) + C, name="I + K")  # factorised once: the kernel is fixed
    alpha = np.zeros(n) if alpha_init is None else np.asarray(alpha_init, dtype=float).reshape(n)
    if accelerate:
        def evaluate(a):
            m = C @ a
            log_Z = log_ndtr(t * m)
            return m, m + t * normal_pdf_over_cdf(t * m), log_Z, float(np.sum(log_Z) - 0.5 * a @ m - 0.5 * factor.log_det)

        alpha, (m, y, log_Z, _), bounds, it, converged = _squarem(evaluate, factor.solve, alpha, max_iter, tol)
        if not converged and warn:
            _warn_not_converged("vb_probit_binary", max_iter, bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
        return VBResult(m[:, None], y[:, None], alpha[:, None], log_Z, np.array(bounds), (factor,), it, converged,
                        True)
    m = C @ alpha
    bounds = []
    converged = False
    for it in range(1, int(max_iter) + 1):
        # Q(y): G&R (2006) footnote 6, p_n = t_n φ(m̃_n)/Φ(t_n m̃_n) and ỹ = m̃ + p
        p = t * normal_pdf_over_cdf(t * m)
        y = m + p
        log_Z = log_ndtr(t * m)  # Z_n = Φ(t_n m̃_n)
        # App. C with K = 1: Σ log Φ(t_n m̃_n) − ½ m̃ᵀC⁻¹m̃ − ½ log|I + C|
        bounds.append(float(np.sum(log_Z) - 0.5 * alpha @ m - 0.5 * factor.log_det))
        if it > 1 and abs(bounds[-1] - bounds[-2]) <= tol * max(1.0, abs(bounds[-1])):
            converged = True
            break
        if it == int(max_iter):
            break  # stop with Q(Y), the bound and Q(M) consistent
        # Q(m): G&R (2006) eq 4.9, m̃ ← C (I + C)⁻¹ (m̃ + p), kept as α = (I + C)⁻¹ ỹ, m̃ = C α
        alpha = factor.solve(y)
        m = C @ alpha
    if not converged and warn:
        _warn_not_converged("vb_probit_binary", max_iter, bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
    return VBResult(m[:, None], y[:, None], alpha[:, None], log_Z, np.array(bounds), (factor,), it, converged,
                    True)


def vb_probit_multiclass(K, t, n_classes=None, max_iter=1000, tol=1e-9, likelihood=None, alpha_init=None,
                         warn=True, accelerate=False):
    r"""K-class variational Bayes multinomial probit classification (G&R §4.3–4.4, eqs 4.1–4.6).

    Every iteration updates Q(Y) (eqs 4.3, 4.4: the truncated-Gaussian means,
    Gauss–Hermite over u) and then Q(M) (eq 4.6), for each class k:

    .. math:: \widetilde{\mathbf m}_k \leftarrow \mathbf C_k(\mathbf I + \mathbf C_k)^{-1}(\widetilde{\mathbf m}_k + \mathbf p_k).

    The K regressions are computationally independent; they are coupled only
    through :math:`\mathbf P`, whose row n depends on all of :math:`\widetilde{\mathbf m}_n`.
    The bound of Appendix C is recorded every iteration and never decreases
    (a property the tests check); the loop stops when it rises by less than
    ``tol``·max(1, |bound|).

    Parameters
    ----------
    K : ndarray (n, n) or (C, n, n)
        One prior covariance shared by every class, or one per class.
    t : array (n,)
        Class codes 0..C−1 (the paper's 1..K minus one).
    n_classes : int, optional
        Number of classes C; default ``max(t) + 1``. Every class needs an example.
    likelihood : MultinomialProbitLikelihood, optional
        Carries the Gauss–Hermite rule (default 48 nodes).
    alpha_init : ndarray (n, C), optional
        Starting dual weights (zeros by default, i.e. :math:`\widetilde{\mathbf M} = 0`).
    accelerate : bool
        SQUAREM extrapolation [VR08] of the same iteration (see :func:`vb_probit_binary`).

    Returns
    -------
    VBResult

    References
    ----------
    [GR06] eqs 4.1–4.6, Appendices A and C.
    """
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    mats = _check_kernel_matrices(K, n_classes)
    n = mats[0].shape[0]
    t, n_classes = check_class_codes(t, n, n_classes)
    if len(mats) not in (1, n_classes):
        raise ValueError(f"K must hold one matrix or one per class ({n_classes}); got {len(mats)}")
    factors = _factor_plus_identity(mats)  # I + C_k factorised once per distinct kernel
    alpha = np.zeros((n, n_classes)) if alpha_init is None else np.array(alpha_init, dtype=float)
    if alpha.shape != (n, n_classes):
        raise ValueError(f"alpha_init must have shape {(n, n_classes)}; got {alpha.shape}")
    if accelerate:
        def evaluate(a):
            M = _latent_from_alpha(mats, a)
            P, log_Z = likelihood.cone_mean_shift(t, M)
            return M, M + P, log_Z, vb_lower_bound(log_Z, a, M, factors)

        alpha, (M, Y, log_Z, _), bounds, it, converged = _squarem(
            evaluate, lambda Y: _solve_each(factors, Y), alpha, max_iter, tol)
        if not converged and warn:
            _warn_not_converged("vb_probit_multiclass", max_iter,
                                bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
        return VBResult(M, Y, alpha, log_Z, np.array(bounds), factors, it, converged, False)
    M = _latent_from_alpha(mats, alpha)
    bounds = []
    converged = False
    for it in range(1, int(max_iter) + 1):
        # Q(Y): G&R (2006) eqs 4.3, 4.4, ỹ_n = m̃_n + p_n (expectations over u by Gauss–Hermite)
        P, log_Z = likelihood.cone_mean_shift(t, M)
        Y = M + P
        # G&R (2006) App. C, simplified bound
        bounds.append(vb_lower_bound(log_Z, alpha, M, factors))
        if it > 1 and abs(bounds[-1] - bounds[-2]) <= tol * max(1.0, abs(bounds[-1])):
            converged = True
            break
        if it == int(max_iter):
            break  # stop with Q(Y), the bound and Q(M) consistent
        # Q(M): G&R (2006) eq 4.6, m̃_k ← C_k (I + C_k)⁻¹ (m̃_k + p_k), as α_k = (I + C_k)⁻¹ ỹ_k
        alpha = _solve_each(factors, Y)
        M = _latent_from_alpha(mats, alpha)
    if not converged and warn:
        _warn_not_converged("vb_probit_multiclass", max_iter,
                            bounds[-1] - bounds[-2] if len(bounds) > 1 else np.nan)
    return VBResult(M, Y, alpha, log_Z, np.array(bounds), factors, it, converged, False)


def _solve_each(factors, Y):
    """(I + C_k)⁻¹ y_k for every column k (one shared factor solves all columns at once)."""
    if len(factors) == 1:
        return factors[0].solve(Y)
    return np.column_stack([f.solve(Y[:, k]) for k, f in enumerate(factors)])


def _test_covariances_per_class(K_cross, k_diag, n_cols):
    """One (n, m) cross covariance and one (m,) prior variance per class, from shared or per-class input."""
    cross = np.asarray(K_cross, dtype=float)
    cross = [cross] * n_cols if cross.ndim == 2 else list(cross)
    diag = np.asarray(k_diag, dtype=float)
    diag = [diag] * n_cols if diag.ndim == 1 else list(diag)
    if len(cross) != n_cols or len(diag) != n_cols:
        raise ValueError(f"K_cross and k_diag must be shared or given for each of {n_cols} classes")
    return cross, diag


def _latent_from_alpha(mats, alpha):
    """m̃_k = C_k α_k for every column."""
    if len(mats) == 1:
        return mats[0] @ alpha
    return np.column_stack([mat @ alpha[:, k] for k, mat in enumerate(mats)])


# --------------------------------------------------------------------------- predictions
def vb_predict_latent(result, K_cross, k_diag):
    r"""Mean and variance of :math:`m_k^{new}` under Q(M) (G&R §4.5).

    .. math:: \widetilde m_k^{new} = \widetilde{\mathbf y}_k^T(\mathbf I + \mathbf C_k)^{-1}\mathbf c_k^{new}
              = \boldsymbol\alpha_k^T\mathbf c_k^{new},\qquad
              \widetilde\sigma_{k,new}^2 = c_k^{new} - (\mathbf c_k^{new})^T(\mathbf I + \mathbf C_k)^{-1}\mathbf c_k^{new}.

    Parameters
    ----------
    result : VBResult
    K_cross : ndarray (n, m) or (C, n, m)
        Covariances between the training points and the m new points.
    k_diag : ndarray (m,) or (C, m)
        Prior variances of the new points.

    Returns
    -------
    mean, var : ndarrays of shape (m, C)
    """
    n_cols = result.alpha.shape[1]
    cross, diag = _test_covariances_per_class(K_cross, k_diag, n_cols)
    mean = np.column_stack([cross[k].T @ result.alpha[:, k] for k in range(n_cols)])
    var = np.empty_like(mean)
    for k in range(n_cols):
        factor = result.factors[0] if len(result.factors) == 1 else result.factors[k]
        if k > 0 and len(result.factors) == 1 and cross[k] is cross[0]:
            var[:, k] = var[:, 0]
            continue
        v = solve_lower(factor.L, cross[k])
        # G&R (2006) §4.5: σ² = c − cᵀ (I + C)⁻¹ c
        var[:, k] = np.maximum(diag[k] - np.sum(v * v, axis=0), 0.0)
    return mean, var


def vb_predict_proba(result, K_cross, k_diag, likelihood=None):
    r"""Predictive class probabilities (G&R §4.5 and Appendix B).

    Binary: :math:`P(t = +1) = \Phi(\widetilde m^{new}/\sqrt{1 + \widetilde\sigma^2_{new}})`;
    returns an (m, 2) array with columns (P(t = −1), P(t = +1)).

    K classes: :math:`P(t = k) = E_u\bigl[\prod_{j\ne k}\Phi\bigl((u\widetilde v_k + \widetilde m_k - \widetilde m_j)/\widetilde v_j\bigr)\bigr]`,
    :math:`\widetilde v_j = \sqrt{1 + \widetilde\sigma_j^2}`, by Gauss–Hermite quadrature; returns (m, K).
    Entries are clipped to [0, 1] against quadrature round-off; rows are not renormalised, so their
    sums show the quadrature error.
    """
    mean, var = vb_predict_latent(result, K_cross, k_diag)
    if result.binary:
        # G&R (2006) §4.5, binary case: Φ(m̃/ṽ)
        p1 = ndtr(mean[:, 0] / np.sqrt(1.0 + var[:, 0]))
        return np.column_stack([1.0 - p1, p1])
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    # G&R (2006) App. B; clipped to [0, 1] against quadrature round-off (rows are not renormalised)
    return np.clip(likelihood.predict(mean, var), 0.0, 1.0)


# --------------------------------------------------------------------------- kernel parameters by importance sampling
def precisions_from_kernel(kernel):
    r"""G&R's precisions :math:`\varphi_d = 1/(2\ell_d^2)` of an :class:`~gpc_ref.kernels.SEKernel` (array, length 1 or D)."""
    return 1.0 / (2.0 * np.atleast_1d(np.asarray(kernel.lengthscale, dtype=float)) ** 2)


def kernel_from_precisions(kernel, phi):
    r"""A copy of ``kernel`` with lengthscales :math:`\ell_d = 1/\sqrt{2\varphi_d}` (the variance is kept)."""
    phi = check_positive(phi, "phi")
    lengthscale = 1.0 / np.sqrt(2.0 * np.atleast_1d(phi))
    return kernel.with_params(lengthscale=lengthscale if kernel.ard else float(lengthscale[0]))


@dataclass(frozen=True)
class ImportanceStep:
    """One importance-sampling estimate of the precisions (G&R eqs 4.5, 4.7).

    ``phi_mean`` is the weighted mean of the sampled precisions; ``effective_sample_size``
    (Kish, :math:`1/\\sum_s w_s^2`) shows how many samples carried the estimate;
    ``n_failed`` counts samples whose covariance would not factorise (weight zero).
    """

    phi_mean: np.ndarray
    effective_sample_size: float
    n_failed: int


def importance_sample_precisions(X, M, kernel, psi, rng, n_samples=500, include_trace=True):
    r"""Posterior mean of the kernel precisions by importance sampling (G&R eqs 4.5, 4.7).

    Draws :math:`\varphi^s_d \sim \operatorname{Exp}(\widetilde\psi_d)` (rate
    :math:`\widetilde\psi_d`, mean :math:`1/\widetilde\psi_d`) and weights each sample
    by the unnormalised :math:`Q(\varphi)` over the prior, normalised over the samples:

    .. math:: \widetilde\varphi \approx \sum_s \varphi^s w(\varphi^s),\qquad
              \log w(\varphi^s) = \sum_k\Bigl[\log N(\widetilde{\mathbf m}_k \mid 0, \mathbf C_{\varphi^s})
              - \tfrac12\tr\bigl(\mathbf C_{\varphi^s}^{-1}\Sigma_k\bigr)\Bigr] + \text{const},

    the sum running over the columns of ``M`` that share this kernel. The trace
    term is the rest of :math:`E_{Q(\mathbf m_k)}[\log N(\mathbf m_k|0, \mathbf C_\varphi)]`;
    eq 4.5 and Appendix A.3 as printed omit it (``include_trace=False``
    reproduces the printed weights). The book shows that without it the
    precisions all collapse towards zero on the toy problem of §6.1.

    :math:`\Sigma_k = \mathbf C_{\widetilde\varphi}(\mathbf I + \mathbf C_{\widetilde\varphi})^{-1}`
    belongs to the current kernel (``kernel``). With :math:`\mathbf C_{\widetilde\varphi} = \tilde L\tilde L^T` and
    :math:`\mathbf I + \tilde L^T\tilde L = G G^T`, :math:`\Sigma = S S^T` with
    :math:`S = \tilde L G^{-T}` (push-through identity), so the trace is
    :math:`\|L_s^{-1} S\|_F^2` for the factor :math:`L_s` of :math:`\mathbf C_{\varphi^s}`:
    no inverse is formed. A sample whose covariance does not factorise with the
    kernel's own jitter gets weight zero and is counted in ``n_failed``.

    Parameters
    ----------
    X : ndarray (n, d)
    M : ndarray (n,) or (n, C)
        Posterior means of the GP columns that share ``kernel``.
    kernel : SEKernel
        The current kernel :math:`\mathbf C_{\widetilde\varphi}`; supplies the variance,
        jitter and whether there is one precision or one per input.
    psi : array
        Current rates :math:`\widetilde\psi_d` (length 1 or d).
    rng : Generator or int
    n_samples : int
    include_trace : bool
        Include :math:`-\tfrac12\tr(\mathbf C_{\varphi}^{-1}\Sigma_k)` in the weights (default) or not (as printed).

    Returns
    -------
    ImportanceStep
    """
    rng = check_rng(rng)
    X = check_matrix(X, "X")
    M = np.asarray(M, dtype=float)
    M = M[:, None] if M.ndim == 1 else M
    psi = check_positive(psi, "psi")
    n_phi = len(np.atleast_1d(psi))
    n_cols = M.shape[1]
    if include_trace:
        # a square root S of Σ = C̃ (I + C̃)⁻¹ for the current kernel: S = L̃ G⁻ᵀ, G Gᵀ = I + L̃ᵀL̃
        L_cur = cholesky(kernel.K(X), name="K(X) of the current kernel").L
        G = cholesky(np.eye(X.shape[0]) + L_cur.T @ L_cur, name="I + L^T L").L
        S = solve_lower(G, L_cur.T).T  # (G⁻¹ L̃ᵀ)ᵀ = L̃ G⁻ᵀ
    # G&R (2006) §4.3: φ_d^s ~ Exp(ψ̃_d)  (numpy's scale is the mean 1/ψ̃_d)
    samples = rng.exponential(scale=1.0 / np.atleast_1d(psi), size=(int(n_samples), n_phi))
    samples = np.maximum(samples, np.finfo(float).tiny)
    log_w = np.full(int(n_samples), -np.inf)
    n_failed = 0
    for s in range(int(n_samples)):
        C = kernel_from_precisions(kernel, samples[s]).K(X)
        try:
            factor = cholesky(C, max_tries=0, name="C_phi")
        except np.linalg.LinAlgError:
            n_failed += 1
            continue
        v = solve_lower(factor.L, M)
        # G&R (2006) eq 4.5: log Π_k N(m̃_k | 0, C_φs); the 2π terms cancel in the normalisation
        log_w[s] = -0.5 * np.sum(v * v) - 0.5 * n_cols * factor.log_det
        if include_trace:
            # E_{Q(m_k)} adds −½ tr(C_φs⁻¹ Σ_k) for each of the n_cols classes sharing the kernel
            W = solve_lower(factor.L, S)
            log_w[s] -= 0.5 * n_cols * np.sum(W * W)
    if n_failed == len(log_w):
        raise np.linalg.LinAlgError("no sampled covariance could be factorised; increase the kernel's jitter")
    w = np.exp(log_w - logsumexp(log_w))
    # G&R (2006) eq 4.7: φ̃ ← Σ_s φ^s w(φ^s)
    phi_mean = w @ samples
    return ImportanceStep(phi_mean, float(1.0 / np.sum(w**2)), n_failed)


def update_psi(phi, prior_shape=1e-3, prior_rate=1e-3):
    r"""Posterior mean of the exponential rates, :math:`\widetilde\psi_d = (\sigma + 1)/(\tau + \widetilde\varphi_d)` (G&R eq 4.8)."""
    phi = np.asarray(phi, dtype=float)
    # G&R (2006) eq 4.8 (Q(ψ_d) = Γ(σ + 1, τ + φ̃_d), App. A.4)
    return (prior_shape + 1.0) / (prior_rate + phi)


@dataclass(frozen=True)
class KernelLearning:
    """History of VB with the kernel precisions learnt by importance sampling (G&R §4.4, eqs 4.6–4.8).

    Attributes
    ----------
    kernels : tuple of SEKernel
        The final kernel(s): one shared by every class, or one per class.
    phi_history : ndarray (n_iter + 1, G, D)
        Precisions of each kernel group G before every iteration and after the last.
    lower_bound : ndarray (n_iter,)
        The bound, conditioned on the kernel in use, at every iteration.
    alpha_history : ndarray (n_iter, n, C)
        Dual weights after each Q(M) update, paired with ``phi_history[i]``
        (the kernel that produced them), so predictions can be traced through the run.
    effective_sample_size : ndarray (n_iter, G)
        Kish effective sample size of each importance-sampling step.
    """

    kernels: tuple
    phi_history: np.ndarray
    lower_bound: np.ndarray
    alpha_history: np.ndarray
    effective_sample_size: np.ndarray


def vb_probit_learn_kernel(X, t, kernel, rng, n_iter=50, n_importance_samples=500, prior_shape=1e-3,
                           prior_rate=1e-3, n_classes=None, binary=False, likelihood=None, include_trace=True,
                           progress=False):
    r"""Variational Bayes with the kernel precisions learnt by importance sampling (G&R §4.4, eqs 4.6–4.8).

    Each iteration makes the sequential posterior-mean updates of §4.4:

    1. Q(M): :math:`\widetilde{\mathbf m}_k \leftarrow \mathbf C_{\widetilde\varphi}(\mathbf I + \mathbf C_{\widetilde\varphi})^{-1}(\widetilde{\mathbf m}_k + \mathbf p_k)` (eq 4.6);
    2. Q(Y): the truncated-Gaussian means at the new :math:`\widetilde{\mathbf M}` (eqs 4.3, 4.4;
       footnote 6 for binary), giving the next :math:`\mathbf P`; the bound,
       conditioned on the current kernel, is recorded;
    3. :math:`\widetilde\varphi \leftarrow \sum_s \varphi^s w(\varphi^s)` (eq 4.7, :func:`importance_sample_precisions`,
       by default with the trace term the printed eq 4.5 omits);
    4. :math:`\widetilde\psi_d \leftarrow (\sigma+1)/(\tau + \widetilde\varphi_d)` (eq 4.8).

    Q(M) uses the plug-in :math:`\mathbf C_{\widetilde\varphi}^{-1}` for
    :math:`E[\mathbf C_\varphi^{-1}]` (G&R App. A.1), and the weights are random,
    so the bound is not guaranteed to rise here (it is for a fixed kernel).
    The initial precisions are those of ``kernel`` (the paper started from
    :math:`\varphi_d = 1`, i.e. ``lengthscale = 1/√2``), and :math:`\widetilde{\mathbf M}` starts at zero.

    Parameters
    ----------
    X : ndarray (n, d)
    t : array (n,)
        Class codes 0..K−1, or labels ±1 with ``binary=True``.
    kernel : SEKernel or sequence of SEKernel
        One kernel shared by all classes (one φ for all, weights multiplied over
        classes) or one per class (G&R's general φ_k). A scalar lengthscale learns
        one common precision, an array one per input (ARD).
    rng : Generator or int
    n_iter : int
        Number of iterations (the paper ran 50).
    n_importance_samples : int
        Samples per importance step (the paper used 500).
    prior_shape, prior_rate : float
        :math:`\sigma, \tau` of the Gamma prior on ψ (the paper: 1e-3 for the toy, vague).
    binary : bool
        Use the one-GP binary model (labels ±1) instead of K GPs.
    include_trace : bool
        Weights with the trace term (default) or as printed in eq 4.5; see
        :func:`importance_sample_precisions`.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    KernelLearning
        Run :func:`vb_probit_multiclass` (or :func:`vb_probit_binary`) with
        ``KernelLearning.kernels`` fixed afterwards to converge Q(M)Q(Y) for them.
    """
    rng = check_rng(rng)
    X = check_matrix(X, "X")
    n = X.shape[0]
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    if binary:
        t = check_binary_labels(t, "t")
        if t.shape[0] != n:
            raise ValueError(f"t must have {n} labels to match X; got {t.shape[0]}")
        n_cols = 1
    else:
        t, n_cols = check_class_codes(t, n, n_classes)
    kernels = [kernel] if isinstance(kernel, SEKernel) else list(kernel)
    if not all(isinstance(k, SEKernel) for k in kernels) or len(kernels) not in (1, n_cols):
        raise ValueError(f"kernel must be an SEKernel or a sequence of {n_cols} SEKernels")
    groups = [list(range(n_cols))] if len(kernels) == 1 else [[k] for k in range(n_cols)]
    check_positive(prior_shape, "prior_shape")
    check_positive(prior_rate, "prior_rate")
    phi = [precisions_from_kernel(k) for k in kernels]
    # G&R (2006) eq 4.8 at the initial precisions
    psi = [update_psi(p, prior_shape, prior_rate) for p in phi]
    mats = [k.K(X) for k in kernels]
    factors = _factor_plus_identity(mats)
    alpha = np.zeros((n, n_cols))
    M = _latent_from_alpha(mats, alpha)
    phi_history, bounds, alphas, ess = [np.array(phi)], [], [], []

    def q_y(M):
        """Q(Y): eqs 4.3–4.4 (K classes) or footnote 6 (binary); returns (Ỹ, log Z)."""
        if binary:
            m = M[:, 0]
            return (m + t * normal_pdf_over_cdf(t * m))[:, None], log_ndtr(t * m)
        P, log_Z = likelihood.cone_mean_shift(t, M)
        return M + P, log_Z

    Y, _ = q_y(np.zeros((n, n_cols)))  # Q(Y) at M̃ = 0
    steps = range(int(n_iter))
    if progress:
        from tqdm.auto import tqdm
        steps = tqdm(steps, desc="VB + importance sampling")
    for _ in steps:
        # Q(M): G&R (2006) eq 4.6 with the current kernel C_φ̃ (α_k = (I + C)⁻¹ ỹ_k, m̃_k = C α_k)
        alpha = _solve_each(factors, Y)
        M = _latent_from_alpha(mats, alpha)
        alphas.append(alpha)
        # Q(Y) at the new means, and the bound conditioned on the current kernel (App. C)
        Y, log_Z = q_y(M)
        bounds.append(vb_lower_bound(log_Z, alpha, M, factors))
        # Q(φ) by importance sampling (eqs 4.5, 4.7), then Q(ψ) (eq 4.8)
        step_ess = []
        for g, cols in enumerate(groups):
            step = importance_sample_precisions(X, M[:, cols], kernels[g], psi[g], rng, n_importance_samples,
                                                include_trace)
            phi[g] = step.phi_mean
            psi[g] = update_psi(phi[g], prior_shape, prior_rate)
            kernels[g] = kernel_from_precisions(kernels[g], phi[g])
            step_ess.append(step.effective_sample_size)
        ess.append(step_ess)
        phi_history.append(np.array(phi))
        mats = [k.K(X) for k in kernels]
        factors = _factor_plus_identity(mats)
    return KernelLearning(tuple(kernels), np.array(phi_history), np.array(bounds), np.array(alphas), np.array(ess))
