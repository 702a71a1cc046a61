r"""Annealed importance sampling (AIS) for the evidence of GP classification, binary and multi-class.

The gold standard of the Comparison part for the likelihoods whose evidence has no closed form
(logistic, softmax; the probit evidence is an orthant probability, :func:`gpc_ref.exact.probit_orthant_evidence`).

Notation (book symbol ← code name):

- f ← a row of ``F``: the latent values, n of them (binary) or nC (multi-class,
  stacked class-major as in :mod:`gpc_ref.laplace_multiclass`: (f¹, …, f^C)).
- N(f | 0, K): the GP prior (multi-class: block diagonal over the classes, one block
  K_c per class or one K shared by all).
- L(f) = p(y | f) ← ``likelihood.log_p``: the likelihood.
- q(f) = N(m, Σ_q) ∝ N(f | 0, K) t̃(f): the Gaussian the
  annealing starts from, with Gaussian "sites" log t̃(f) = -½fᵀRᵀRf
  + bᵀf and normaliser Z_q = ∫ N(f | 0, K)t̃(f)df
  ← ``log_start_normaliser``. The prior itself is R = 0, b = 0, Z_q = 1.
- π_β(f) ∝ q(f) (L(f)/t̃(f))^β: the annealing path,
  β ← ``betas``; π_1 is the posterior, since q L/t̃ ∝ N(f|0,K)L.
- g(f) = log L(f) - log t̃(f) ← ``g``; log w ← ``log_w``.

References
----------
- [Neal01] Neal (2001), *Annealed importance sampling*, Statistics and Computing 11: eqs 2–4 (the weights).
- [Murray10] Murray, Adams & MacKay (2010), *Elliptical slice sampling*, AISTATS: Fig. 2 (the transition).
- [NR08] Nickisch & Rasmussen (2008), JMLR 9: AIS as the reference evidence for the binary comparison.
- [KG03] Kim & Ghahramani: the label-noise likelihood; [GR06] Girolami & Rogers (2006): the multinomial probit.
- [WB98] Williams & Barber (1998) §4: the softmax likelihood and its Laplace approximation (the multi-class start).
- [Minka01] Minka (2001): EP (the binary start).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .ep import expectation_propagation
from .errors import ConvergenceWarning
from .exact import EvidenceEstimate
from .laplace_multiclass import one_hot_labels
from .laplace_multiclass import softmax_laplace_mode
from .likelihoods import BinaryLikelihood
from .likelihoods import LabelNoiseLikelihood
from .likelihoods import LogisticLikelihood
from .likelihoods import MultinomialProbitLikelihood
from .likelihoods import ProbitLikelihood
from .likelihoods import SoftmaxLikelihood
from .linalg import cholesky
from .linalg import solve_lower
from .progress import with_progress
from .threads import limited_blas_threads
from .validation import check_choice
from .validation import check_class_codes
from .validation import check_covariance
from .validation import check_covariance_stack
from .validation import check_positive_int
from .validation import check_rng

__all__ = ["AISEstimate", "ais_log_evidence", "ais_core", "ais_step", "MULTICLASS_LIKELIHOODS"]

MULTICLASS_LIKELIHOODS = (SoftmaxLikelihood, MultinomialProbitLikelihood)

# σ(z) ≈ Φ(λz) with λ = √(π/8) (MacKay's probit approximation of the logistic sigmoid, G&M eq 23), and
# P(c | f) ≈ softmax(λ f) with λ = 1.7/√2 for the multinomial probit (two classes: Φ((f¹ − f²)/√2) ≈ σ(1.7(f¹ − f²)/√2)).
# Used only to build the Gaussian the annealing starts from: any Gaussian keeps the estimate unbiased.
LOGISTIC_AS_PROBIT = float(np.sqrt(np.pi / 8.0))
MULTINOMIAL_PROBIT_AS_SOFTMAX = 1.7 / float(np.sqrt(2.0))


@dataclass(frozen=True)
class AISEstimate(EvidenceEstimate):
    """:func:`ais_log_evidence`'s result: an :class:`~gpc_ref.exact.EvidenceEstimate` and how it was made.

    It has the attributes of :class:`~gpc_ref.exact.EvidenceEstimate` (``log_evidence``, ``std_error``,
    ``effective_sample_size`` and ``n_samples``, the number of chains) and these.

    Attributes
    ----------
    start : str
        The Gaussian the annealing started from: ``"ep"``, ``"laplace"`` or ``"prior"`` (``"given"`` from
        :func:`ais_core`, which is handed the Gaussian).
    log_start_normaliser : float
        log Z_q (0 for the prior); the estimate is log Z_q + log w̄.
    n_temperatures : int
        T.
    log_weights : ndarray (n_chains,)
        The chains' log w, for diagnostics.
    """

    start: str = "prior"
    log_start_normaliser: float = 0.0
    n_temperatures: int = 0
    log_weights: np.ndarray = field(default=None, repr=False, compare=False)


def _slice_chains(F, g, centre, L, log_target, rng):
    """One elliptical slice transition for every row of ``F`` at once (the rows are independent chains).

    The target is N(f | centre, L Lᵀ) · exp(log_target(f)); ``g`` holds log_target of each row. Rows whose
    proposal falls below their slice shrink their own bracket and try again, the others are done
    ([Murray10] Fig. 2, vectorised; an ellipse through f − centre and ν ~ N(0, L Lᵀ)).
    """
    n_chains = F.shape[0]
    nu = rng.standard_normal(F.shape) @ L.T
    offset = F - centre
    threshold = g + np.log(rng.uniform(size=n_chains))
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n_chains)
    low, high = angle - 2.0 * np.pi, angle.copy()
    F_new, g_new = F.copy(), g.copy()
    pending = np.arange(n_chains)
    while pending.size:
        a = angle[pending][:, None]
        proposal = centre + offset[pending] * np.cos(a) + nu[pending] * np.sin(a)
        value = log_target(proposal)
        accepted = value > threshold[pending]
        done = pending[accepted]
        F_new[done], g_new[done] = proposal[accepted], value[accepted]
        pending = pending[~accepted]
        # shrink each remaining bracket towards the current state (angle 0), then redraw inside it
        negative = angle[pending] < 0
        low[pending] = np.where(negative, angle[pending], low[pending])
        high[pending] = np.where(negative, high[pending], angle[pending])
        angle[pending] = rng.uniform(low[pending], high[pending])
    return F_new, g_new


def _block_diagonal(K_classes):
    """The nC × nC prior covariance, class-major, from the (C, n, n) per-class blocks."""
    n_classes, n, _ = K_classes.shape
    K = np.zeros((n_classes * n, n_classes * n))
    for c in range(n_classes):
        K[c * n : (c + 1) * n, c * n : (c + 1) * n] = K_classes[c]
    return K


def _gaussian_start(K, R, b):
    r"""Mean, Cholesky factor and log Z_q of q ∝ N(f|0,K) exp(-½‖Rf‖² + bᵀf).

    Σ_q = (K⁻¹ + RᵀR)⁻¹ = K - KRᵀ B⁻¹RK with B = I + RKRᵀ (eigenvalues ≥ 1, so
    no inverse of K is needed), m = Σ_q b, and
    log Z_q = ½bᵀm - ½ log|B| (the Gaussian integral; GPML eq A.7).
    ``R`` is (N,) for diagonal sites (binary) or (N, N).
    """
    RK = R[:, None] * K if R.ndim == 1 else R @ K
    B = (RK * R[None, :] if R.ndim == 1 else RK @ R.T) + np.eye(K.shape[0])
    chol_B = cholesky(B, name="B = I + R K Rᵀ")
    V = solve_lower(chol_B.L, RK)
    covariance = K - V.T @ V
    mean = covariance @ b
    log_normaliser = 0.5 * float(b @ mean) - 0.5 * chol_B.log_det
    return mean, cholesky(0.5 * (covariance + covariance.T), name="Σ_q").L, log_normaliser


def _binary_sites(K, y, likelihood):
    """Sites (√τ, ν) of EP's approximation of the binary posterior, for the start of the annealing.

    Probit and label noise: EP on the model itself. Logistic: EP on the probit model Φ(λf), λ = √(π/8),
    i.e. on the latent g = λf with prior covariance λ²K, mapped back (τ_f = λ²τ_g, ν_f = λν_g). Negative
    site precisions (label noise) are set to zero: any sites give a proper q and an unbiased estimate.
    """
    if isinstance(likelihood, LogisticLikelihood):
        scale, ep_likelihood = LOGISTIC_AS_PROBIT, ProbitLikelihood()
    else:
        scale, ep_likelihood = 1.0, likelihood
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a non-converged EP still gives a valid (if worse) start
        result = expectation_propagation(scale**2 * K, y, likelihood=ep_likelihood, schedule="parallel")
    tau = np.maximum(result.tau, 0.0) * scale**2
    return np.sqrt(tau), result.nu * scale


def _softmax_sites(K_classes, codes, scale):
    r"""Sites (R, b) of the softmax Laplace approximation (W&B 1998 §4), class-major.

    At the mode f̂_i of each point, W_i = diag(π_i) -
    π_i π_iᵀ = R_iᵀR_i with R_i = (I - ssᵀ) diag(s),
    s = √π_i (a unit vector, so I - ssᵀ is a projection),
    and b_i = W_i f̂_i + t_i - π_i. With ``scale`` λ ≠ 1 the
    approximation is made for softmax(λf) (on the latent λf, prior λ²K) and mapped back: R ← λR, b ← λb.
    """
    n_classes, n, _ = K_classes.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mode = softmax_laplace_mode(scale**2 * K_classes, one_hot_labels(codes, n_classes))
    R = np.zeros((n_classes * n, n_classes * n))
    b = np.zeros(n_classes * n)
    targets = one_hot_labels(codes, n_classes)
    for i in range(n):
        s = np.sqrt(mode.pi[i])
        R_i = (np.eye(n_classes) - np.outer(s, s)) * s[None, :]
        W_i = np.diag(mode.pi[i]) - np.outer(mode.pi[i], mode.pi[i])
        rows = np.arange(n_classes) * n + i
        R[np.ix_(rows, rows)] = scale * R_i
        b[rows] = scale * (W_i @ mode.f[i] + targets[i] - mode.pi[i])
    return R, b


@limited_blas_threads
def ais_step(F: np.ndarray, g: np.ndarray, log_w: np.ndarray, beta_old: float, beta: float,
             g_of: Callable[[np.ndarray], np.ndarray], mean: np.ndarray, L: np.ndarray, rng: np.random.Generator, *,
             n_steps: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Steps 2.1–2.2 of Algorithm 14.1 (cmp-alg-ais): the chains' weights grow to temperature β, then move.

    Parameters
    ----------
    F : ndarray (S, N)
        The chains' states; ``g`` their g(f) = log L(f) − log t̃(f), ``log_w`` their log weights.
    g, log_w : ndarray (S,)
    beta_old, beta : float
        β_(t−1) and β_t.
    g_of : callable
        f ↦ g(f) for a stack of states.
    mean, L : ndarray
        The Gaussian q = N(mean, L Lᵀ) whose ellipses the slice moves follow.
    rng : numpy.random.Generator
    n_steps : int
        Elliptical slice transitions at β (the box has one).

    Returns
    -------
    F, g, log_w : ndarray
        After the move.
    """
    log_w = log_w + (beta - beta_old) * g  # step 2.1: [Neal01] eq 3, w ← w · exp((β_t − β_(t−1)) g(f))
    for _ in range(n_steps):
        # step 2.2: one elliptical slice transition leaving π_t ∝ q exp(β_t g) invariant; it works on β g
        F, tempered = _slice_chains(F, beta * g, mean, L, lambda G: beta * g_of(G), rng)
        g = tempered / beta  # keep the untempered g for the weights
    return F, g, log_w


def _weights_summary(log_w):
    """Step 3 of Algorithm 14.1: log w̄, the delta-method standard error of log w̄ and Kish's effective sample size."""
    log_mean = logsumexp(log_w) - np.log(len(log_w))
    w = np.exp(log_w - log_mean)
    return log_mean, float(np.std(w, ddof=1) / np.sqrt(len(log_w))), float(np.sum(w) ** 2 / np.sum(w**2))


def ais_core(log_likelihood: Callable[[np.ndarray], np.ndarray], log_sites: Callable[[np.ndarray], np.ndarray],
             mean: np.ndarray, L: np.ndarray, log_normaliser: float, *, n_temperatures: int, n_chains: int,
             exponent: float, rng: np.random.Generator) -> AISEstimate:  # fmt: skip
    """Algorithm 14.1 (cmp-alg-ais), step for step: annealed importance sampling from a Gaussian start.

    The start q = N(mean, L Lᵀ) ∝ p(f) t̃(f) has normaliser Z_q (``log_normaliser``) and sites ``log_sites``
    (log t̃, zero for the prior). The plain core of :func:`ais_log_evidence`, which checks the arguments, builds
    the start (EP, softmax Laplace or the prior), can make several transitions per temperature, shows progress
    and warns when the effective sample size is small; with one transition the two make the same draws and
    return the same estimate (``tests/package/test_ais.py``).

    Parameters
    ----------
    log_likelihood, log_sites : callable
        f ↦ log p(y | f) and f ↦ log t̃(f), for a stack of states (S, N).
    mean, L, log_normaliser
        The start q and log Z_q.
    n_temperatures, n_chains, exponent, rng
        T, S, the power γ of the schedule β_t = (t/T)^γ, and the randomness.

    Returns
    -------
    AISEstimate

    References: [Neal01]; [Murray10] (the transitions).
    """

    def g_of(F):
        return log_likelihood(F) - log_sites(F)  # g = log L − log t̃: π_t ∝ q exp(β_t g)

    betas = (np.arange(n_temperatures + 1) / n_temperatures) ** float(exponent)  # step 1: the schedule
    F = mean + rng.standard_normal((n_chains, len(mean))) @ L.T  # step 1: S exact draws from π_0 = q
    g, log_w = g_of(F), np.zeros(n_chains)
    for t in range(1, n_temperatures + 1):  # step 2
        F, g, log_w = ais_step(F, g, log_w, betas[t - 1], betas[t], g_of, mean, L, rng)
    log_mean, std_error, ess = _weights_summary(log_w)  # step 3
    return AISEstimate(float(log_normaliser + log_mean), std_error, ess, int(n_chains), start="given",
                       log_start_normaliser=float(log_normaliser), n_temperatures=int(n_temperatures),
                       log_weights=log_w)  # fmt: skip


def ais_log_evidence(K: ArrayLike, y: ArrayLike,
                     likelihood: BinaryLikelihood | LabelNoiseLikelihood | SoftmaxLikelihood | MultinomialProbitLikelihood,
                     *, rng: np.random.Generator | int, n_temperatures: int = 2000, n_chains: int = 256, exponent: float = 2.0, n_steps: int = 1,
                     start: str = "auto", n_classes: int | None = None, warn: bool = True,
                     progress: bool = False) -> AISEstimate:  # fmt: skip
    r"""Annealed importance sampling estimate of log p(y) = log ∫ p(y | f)N(f | 0, K)df.

    Neal's AIS [Neal01]: S chains drawn from a Gaussian q (module docstring) anneal through π_t ∝ q (L/t̃)^(β_t)
    by elliptical slice moves [Murray10]; w̄ is unbiased for p(y)/Z_q whatever q (book/comparison_binary.ipynb).

    Parameters
    ----------
    K : ndarray (n, n), or (C, n, n) for a multi-class likelihood
        Prior covariance; multi-class, one matrix shared by the classes or one per class.
    y : array (n,)
        Binary: labels as ``likelihood.log_p`` takes them (±1). Multi-class: class codes 0..C−1.
    likelihood : object
        Binary: ``ProbitLikelihood()``, ``LogisticLikelihood()``, ``LabelNoiseLikelihood(ε, v)`` or any object with
        ``log_p(y, F)``, F (chains, n). Multi-class: ``SoftmaxLikelihood()`` or ``MultinomialProbitLikelihood()``.
    rng : numpy.random.Generator or int
    n_temperatures, n_chains, exponent, n_steps : int, int, float, int
        T; S (at least 2, for the standard error); γ of β_t = (t/T)^γ (1 is linear); moves per temperature.
    start : {"auto", "prior", "ep", "laplace"}
        q: ``"ep"`` (binary; logistic via Φ(√(π/8) f)), ``"laplace"`` (multi-class; multinomial probit via
        softmax(1.2 f)), ``"prior"`` ([NR08]), ``"auto"`` (the first that applies); a poor q at small T biases log Ẑ low.
    n_classes : int, optional
        C for a multi-class likelihood with a shared K (default: one more than the largest code).
    warn, progress : bool
        Warn (:class:`~gpc_ref.validation.ConvergenceWarning`) when the effective sample size (ESS) is below S/4
        (the weights rest on a few chains, the standard error is unreliable); show a progress bar.

    Returns
    -------
    AISEstimate
        log Z_q + log w̄, its delta-method standard error, the ESS, ``start``; unpacks as ``estimate, std_error``.
    """
    rng = check_rng(rng)
    n_temperatures = check_positive_int(n_temperatures, "n_temperatures")
    n_chains = check_positive_int(n_chains, "n_chains")
    n_steps = check_positive_int(n_steps, "n_steps")
    if n_chains < 2:
        raise ValueError(f"n_chains must be at least 2 (the standard error needs two chains); got {n_chains}")
    if not exponent > 0:
        raise ValueError(f"exponent must be positive; got {exponent!r}")
    check_choice(start, "start", ("auto", "prior", "ep", "laplace"))
    multiclass = isinstance(likelihood, MULTICLASS_LIKELIHOODS)
    if multiclass:
        if start == "ep":
            raise ValueError("start='ep' is for binary likelihoods; use 'laplace' or 'prior' for a multi-class one")
        K_stack = check_covariance_stack(K, "K")
        n = K_stack.shape[1]
        codes, n_classes = check_class_codes(y, n, K_stack.shape[0] if K_stack.shape[0] > 1 else n_classes, "y",
                                             require_all=False)  # fmt: skip
        K_classes = np.broadcast_to(K_stack, (n_classes, n, n))
        prior = _block_diagonal(K_classes)

        def log_likelihood(F):  # F (chains, nC) class-major → Σ_i log P(c_i | f_i) per chain
            M = F.reshape(F.shape[0], n_classes, n).transpose(0, 2, 1).reshape(-1, n_classes)
            return likelihood.log_p(np.tile(codes, F.shape[0]), M).reshape(F.shape[0], n).sum(axis=1)

        start = "laplace" if start == "auto" else start
        if start == "laplace":
            scale = 1.0 if isinstance(likelihood, SoftmaxLikelihood) else MULTINOMIAL_PROBIT_AS_SOFTMAX
            R, b = _softmax_sites(K_classes, codes, scale)
    else:
        if start == "laplace":
            raise ValueError("start='laplace' is for multi-class likelihoods; use 'ep' or 'prior' for a binary one")
        prior = check_covariance(K, "K")
        y = np.asarray(y)
        if y.shape != (prior.shape[0],):
            raise ValueError(f"y must have one label per row of K ({prior.shape[0]}); got shape {y.shape}")

        def log_likelihood(F):
            return np.sum(likelihood.log_p(y, F), axis=-1)

        can_ep = isinstance(likelihood, (ProbitLikelihood, LogisticLikelihood, LabelNoiseLikelihood))
        if start == "ep" and not can_ep:
            raise ValueError(f"start='ep' needs a probit, logistic or label-noise likelihood; got {likelihood!r}")
        start = ("ep" if can_ep else "prior") if start == "auto" else start
        if start == "ep":
            R, b = _binary_sites(prior, y, likelihood)
    if start == "prior":
        R, b = np.zeros(prior.shape[0]), np.zeros(prior.shape[0])
        mean, L, log_normaliser = np.zeros(prior.shape[0]), cholesky(prior, name="K").L, 0.0
    else:
        mean, L, log_normaliser = _gaussian_start(prior, R, b)

    def log_sites(F):  # log t̃(f) = −½‖R f‖² + bᵀf, one value per row
        RF = F * R if R.ndim == 1 else F @ R.T
        return -0.5 * np.sum(RF**2, axis=1) + F @ b

    def g_of(F):
        return log_likelihood(F) - log_sites(F)

    # Algorithm 14.1 (cmp-alg-ais) with a progress bar and n_steps transitions per temperature
    betas = (np.arange(n_temperatures + 1) / n_temperatures) ** float(exponent)
    F = mean + rng.standard_normal((n_chains, prior.shape[0])) @ L.T  # exact draws from π_0 = q
    g = g_of(F)
    log_w = np.zeros(n_chains)
    for t in with_progress(range(1, n_temperatures + 1), progress, "AIS"):
        F, g, log_w = ais_step(F, g, log_w, betas[t - 1], betas[t], g_of, mean, L, rng, n_steps=n_steps)
    log_mean, std_error, ess = _weights_summary(log_w)
    if warn and ess < n_chains / 4:
        warnings.warn(
            f"ais_log_evidence: the importance weights' effective sample size is {ess:.1f} of {n_chains} chains; "
            "the estimate and its standard error rest on a few chains: raise n_temperatures",
            ConvergenceWarning,
            stacklevel=3,  # the caller of the BLAS-thread wrapper
        )
    return AISEstimate(float(log_normaliser + log_mean), std_error, ess, int(n_chains), start=start,
                       log_start_normaliser=float(log_normaliser), n_temperatures=int(n_temperatures),
                       log_weights=log_w)  # fmt: skip
