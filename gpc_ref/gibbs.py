r"""Gibbs sampling for binary and multinomial probit GP classification (Albert & Chib 1993; G&R Appendix D).

The augmented joint (G&R eq 3.2) has two simple conditionals:

- z_i | f_i is N(f_i, I) truncated to the cone
  𝒞_k = {z_i: z_i^k > z_i^j ∀ j ≠ k} of the observed class k = c_i
  (binary: N(f_i, 1) truncated to y_i z_i > 0);
- f^c | z^c ~ N(Σ_c z^c, Σ_c),
  Σ_c = K_c(I + K_c)⁻¹ — GP regression with unit noise.

Notation: the book's (n points indexed by i, C classes indexed by c; the point a subscript, the class a
superscript, a sample or iteration a superscript in parentheses, f^(s)). Book symbol
← code name, and G&R's symbol:

==========================================  =====================  ==================
book                                        code                   G&R (2006)
==========================================  =====================  ==================
points, classes n, C                        ``n``, ``n_classes``   N, K
class c_i (codes 0..C−1); binary label y_i  ``t``                  t_n
prior covariance K_c of class c             ``K[c]``               C_(φ_k)
GP values f_i^c, all of them F (n × C)      ``M`` (binary ``m``)   m_nk, M
one class f^c, one point f_i                ``M[:, c]``, ``M[i]``  m_k, m_n
auxiliaries z_i^c, all of them z            ``Y`` (binary ``y``)   y_nk, Y
one class z^c, one point z_i                ``Y[:, c]``, ``Y[i]``  y_k, y_n
retained samples F^(s), z^(s)               ``samples.m``,         M^(i), Y^(i)
                                            ``samples.y``
dual weights α_c^(s) of a sample            ``samples.alpha``      (I + C_k)⁻¹y_k^(i)
==========================================  =====================  ==================

with α_c^(s) = (I + K_c)⁻¹z^(c(s)) (shape (S, n, C) for S retained samples).

Sampling the cone-truncated Gaussian exactly
--------------------------------------------
For c_i = k, let j* be the competitor with the largest mean.
The pair (z_i^k, z_i^j*) restricted to z_i^k > z_i^j* is drawn
exactly: D = z_i^k - z_i^j* ~ N(f_i^k - f_i^j*, 2) truncated to
D > 0 (inverse CDF in log space), then
z_i^k | D ~ N(f_i^k + (D - f_i^k + f_i^j*)/2, ½) and
z_i^j* = z_i^k - D. The other components are drawn from
N(f_i^j, 1) and the draw is accepted if z_i^k is the largest.
The accepted vector is an exact draw from the truncated Gaussian; the
acceptance rate is 𝒵_i / Φ((f_i^k - f_i^j*)/√2), where
𝒵_i = P(c_i | f_i) is the probability of the cone: one for
C = 2. A point still unaccepted after ``max_rounds`` rounds is moved instead by
one sweep of the component-wise conditionals (each a one-dimensional truncated
normal: z_i^j | z_i^k below z_i^k, then z_i^k above
max_(j ≠ k) z_i^j), which also leaves the truncated Gaussian invariant;
because the choice depends only on f_i, never on the current
z_i, the mixture is still a valid Gibbs step.

Sampling f^c | z^c without inverting anything (Matheron's rule)
---------------------------------------------------------------
Draw a ~ N(0, K) and b ~ N(0, I); then
f = a + K(I + K)⁻¹(z - a - b)
has mean Σz and covariance Σ. It needs the Cholesky
factors of K and I + K, computed once.

References
----------
- [AC93] Albert & Chib (1993): the auxiliary-variable Gibbs sampler for probit models.
- [GR06] Girolami & Rogers (2006), eq 3.2 and Appendix D.
- [GPML] Rasmussen & Williams (2006), §2.2 (the conditional of f given z).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr
from scipy.special import logsumexp
from scipy.special import ndtr
from scipy.special import ndtri_exp

from .exact import EvidenceEstimate
from .exact import effective_sample_size
from .likelihoods import MultinomialProbitLikelihood
from .linalg import cholesky
from .linalg import solve_lower
from .progress import with_progress
from .validation import check_binary_labels
from .validation import check_class_codes
from .validation import check_covariance_stack
from .validation import check_positive_int
from .validation import check_rng
from .validation import check_run_lengths
from .validation import check_test_covariances

__all__ = [
    "sample_truncated_normal",
    "sample_cone_truncated_normal",
    "GibbsSamples",
    "gibbs_probit_binary",
    "gibbs_probit_multiclass",
    "gibbs_predict_latent",
    "gibbs_predict_proba",
    "prior_sampling_log_evidence",
]


# --------------------------------------------------------------------------- truncated normals
def sample_truncated_normal(
    mean: ArrayLike,
    *,
    rng: np.random.Generator | int,
    lower: ArrayLike | None = None,
    upper: ArrayLike | None = None,
) -> np.ndarray:
    r"""Draw x ~ N(μ, 1) truncated to x > a or to x < b (one side only).

    Inverse CDF in log space: for x < b,
    x = μ + Φ⁻¹(U Φ(b - μ)) computed as
    ``ndtri_exp(log U + log_ndtr(b − μ))``; for x > a the mirror image.
    Exact and stable however far into the tail the bound lies.

    Parameters
    ----------
    mean : array_like
        Means μ of the untruncated unit-variance normals.
    rng : numpy.random.Generator or int
    lower, upper : array_like, optional
        The bound a or b (broadcast with ``mean``); give exactly one.

    Returns
    -------
    ndarray
        One draw per entry of ``mean``.
    """
    rng = check_rng(rng)
    mean = np.asarray(mean, dtype=float)
    if (lower is None) == (upper is None):
        raise ValueError("give exactly one of lower and upper")
    log_u = np.log(rng.uniform(size=mean.shape))
    if upper is not None:
        beta = np.asarray(upper, dtype=float) - mean
        return mean + ndtri_exp(log_u + log_ndtr(beta))
    alpha = np.asarray(lower, dtype=float) - mean
    return mean - ndtri_exp(log_u + log_ndtr(-alpha))


def _cone_sweep(t, M, Y, rng):
    """One sweep of the component-wise conditionals of N(f_i, I) on the cone of class c_i (rows of M, Y)."""
    n, K = M.shape
    rows = np.arange(n)
    Y = Y.copy()
    others = np.ones((n, K), dtype=bool)
    others[rows, t] = False
    # z_i^j | z_i^k ~ N(f_i^j, 1) truncated above at z_i^k, for every j ≠ k = c_i (independent given z_i^k)
    upper = np.broadcast_to(Y[rows, t][:, None], (n, K))
    Y[others] = sample_truncated_normal(M[others], rng=rng, upper=upper[others])
    # z_i^k | rest ~ N(f_i^k, 1) truncated below at max_{j≠k} z_i^j
    Y_masked = np.where(others, Y, -np.inf)
    Y[rows, t] = sample_truncated_normal(M[rows, t], rng=rng, lower=Y_masked.max(axis=1))
    return Y


def sample_cone_truncated_normal(
    t: ArrayLike,
    M: ArrayLike,
    *,
    rng: np.random.Generator | int,
    Y_current: ArrayLike | None = None,
    max_rounds: int = 50,
) -> tuple[np.ndarray, int]:
    r"""Draw z_i ~ N(f_i, I) truncated to the cone of class c_i, for every row i.

    Exact draws by the pairwise construction and rejection described in the
    module docstring. Points not accepted within ``max_rounds`` rounds are moved
    by one component-wise sweep from ``Y_current`` instead (a valid Gibbs move);
    without ``Y_current`` the rejection simply continues until every point is
    accepted.

    Parameters
    ----------
    t : array_like (n,)
        Classes c_i, codes 0..C−1 (not checked: this is the inner step of the sampler).
    M : array_like (n, C)
        Means f_i (the sampler's current GP values), one row per point.
    rng : numpy.random.Generator or int
    Y_current : array_like (n, C), optional
        The current draws z_i, each inside its cone: the start of the fallback sweep.
    max_rounds : int
        Rejection rounds before the fallback (used only with ``Y_current``).

    Returns
    -------
    Y : ndarray (n, C)
        The draws z_i, one row per point.
    n_swept : int
        How many points were moved by the sweep instead of an exact draw.
    """
    rng = check_rng(rng)
    M = np.asarray(M, dtype=float)
    n, K = M.shape
    t = np.asarray(t, dtype=int)
    rows = np.arange(n)
    Y = np.empty((n, K))
    own = M[rows, t]
    competitors = np.where(np.arange(K)[None, :] == t[:, None], -np.inf, M)
    j_star = np.argmax(competitors, axis=1)
    pending = rows.copy()
    rounds = 0
    limit = max_rounds if Y_current is not None else 100_000
    while pending.size and rounds < limit:
        rounds += 1
        mi, mj = own[pending], M[pending, j_star[pending]]
        # D = z_i^k − z_i^j* ~ N(f_i^k − f_i^j*, 2) truncated to D > 0  (k = c_i)
        D = (mi - mj) + np.sqrt(2.0) * sample_truncated_normal(
            np.zeros(len(pending)), rng=rng, lower=-(mi - mj) / np.sqrt(2.0)
        )
        # z_i^k | D ~ N(f_i^k + (D − (f_i^k − f_i^j*))/2, 1/2);  z_i^j* = z_i^k − D
        yi = mi + 0.5 * (D - (mi - mj)) + np.sqrt(0.5) * rng.standard_normal(len(pending))
        draw = M[pending] + rng.standard_normal((len(pending), K))
        draw[np.arange(len(pending)), t[pending]] = yi
        draw[np.arange(len(pending)), j_star[pending]] = yi - D
        # accept when z_i^k is the largest component (only the other C − 2 can violate it)
        accept = np.all(draw <= yi[:, None], axis=1)
        Y[pending[accept]] = draw[accept]
        pending = pending[~accept]
    if pending.size:
        if Y_current is None:  # pragma: no cover - needs an astronomically small acceptance rate
            raise RuntimeError(f"{pending.size} cone draws not accepted after {limit} rounds")
        Y[pending] = _cone_sweep(t[pending], M[pending], np.asarray(Y_current)[pending], rng)
    return Y, int(pending.size)


# --------------------------------------------------------------------------- the samplers
@dataclass(frozen=True)
class GibbsSamples:
    """Retained draws of the Gibbs sampler and its diagnostics.

    Attributes
    ----------
    m, y : ndarray (S, n, C)
        Retained GP values F^(s) (entries f_i^c) and auxiliaries z^(s)
        (entries z_i^c); C = 1 for the binary model (G&R's M^(i), Y^(i)).
    alpha : ndarray (S, n, C)
        α_c^(s) = (I + K_c)⁻¹z^(c(s)): the predictive mean of a new
        point given sample s is (α_c^(s))ᵀk_∗c (App. D).
    log_likelihood : ndarray
        log P(c | f^(s)) (binary: log p(y | f^(s)))
        every ``thin`` iterations, burn-in included (a trace to inspect); its last S entries belong to the
        retained samples. Empty when the C-class sampler ran with ``trace=False``.
    factors : tuple of CholeskyFactor
        Factors of I + K_c (one if shared).
    burn_in, thin : int
    n_swept : int
        Cone draws made by a component sweep rather than exactly (C-class only).
    binary : bool
    """

    m: np.ndarray
    y: np.ndarray
    alpha: np.ndarray
    log_likelihood: np.ndarray
    factors: tuple
    burn_in: int
    thin: int
    n_swept: int
    binary: bool

    @property
    def effective_sample_size(self) -> float:
        """Effective sample size of the retained log-likelihood trace."""
        if len(self.log_likelihood) < self.m.shape[0]:
            raise ValueError("no log-likelihood trace was recorded (the sampler ran with trace=False)")
        return float(effective_sample_size(self.log_likelihood[-self.m.shape[0] :]))


class _ConditionalGP:
    """Samples f ~ N(Σ z, Σ), Σ = K (I + K)⁻¹, for the columns of z (Matheron's rule)."""

    def __init__(self, mats):
        n = mats[0].shape[0]
        self.roots = [cholesky(mat, name="K").L for mat in mats]  # a = L w ~ N(0, K) for w ~ N(0, I)
        self.factors = tuple(cholesky(np.eye(n) + mat, name="I + K") for mat in mats)
        # the gain K (I + K)⁻¹ = (I + K)⁻¹ K (they commute), by one solve with K as right-hand side
        self.gains = [f.solve(mat) for f, mat in zip(self.factors, mats)]

    def sample(self, Y, rng):
        n, C = Y.shape
        out = np.empty_like(Y)
        groups = [(0, list(range(C)))] if len(self.gains) == 1 else [(k, [k]) for k in range(C)]
        for g, cols in groups:
            a = self.roots[g] @ rng.standard_normal((n, len(cols)))  # a ~ N(0, K)
            b = rng.standard_normal((n, len(cols)))  # b ~ N(0, I)
            # G&R (2006) App. D: f^c | z^c ~ N(Σ_c z^c, Σ_c), by f = a + K (I + K)⁻¹ (z − a − b)
            out[:, cols] = a + self.gains[g] @ (Y[:, cols] - a - b)
        return out

    def alpha(self, Y):
        if len(self.factors) == 1:
            return self.factors[0].solve(Y)
        return np.column_stack([f.solve(Y[:, k]) for k, f in enumerate(self.factors)])


def gibbs_probit_binary(K: ArrayLike, t: ArrayLike, *, rng: np.random.Generator | int, n_samples: int = 1000,
                        burn_in: int = 2000, thin: int = 1, progress: bool = False) -> GibbsSamples:  # fmt: skip
    r"""Albert & Chib's Gibbs sampler for binary GP probit classification (G&R Appendix D with one GP).

    Alternates

        z_i | f_i ~ N(f_i, 1) truncated to y_i z_i > 0,
        f | z ~ N(Σz, Σ), Σ = K(I + K)⁻¹,

    starting from f = 0, discarding ``burn_in`` iterations and
    keeping every ``thin``-th of the next ``n_samples·thin``.

    Parameters
    ----------
    K : array_like (n, n)
        Prior covariance K (jitter included; its Cholesky factor must exist).
    t : array_like (n,)
        Labels y_i in {−1, +1} (or {0, 1}).
    rng : numpy.random.Generator or int
    n_samples, burn_in, thin : int
        Retained draws, iterations discarded first, and the spacing of the retained ones.
    progress : bool
        Show a progress bar over the iterations.

    Returns
    -------
    GibbsSamples
    """
    rng = check_rng(rng)
    (C,) = check_covariance_stack(K, "K", n_classes=1)
    n = C.shape[0]
    t = check_binary_labels(t, "t", length=n)
    n_samples, burn_in, thin = check_run_lengths(n_samples, burn_in, thin)
    conditional = _ConditionalGP([C])
    m = np.zeros((n, 1))
    kept_m, kept_y, trace = [], [], []
    for it in with_progress(range(burn_in + n_samples * thin), progress, "Gibbs (binary probit)"):
        # A&C (1993); G&R (2006) App. D: z_i | f_i ~ N(f_i, 1) truncated to y_i z_i > 0  (z is ``y``, the labels ``t``)
        pos = t > 0
        y = np.empty(n)
        y[pos] = sample_truncated_normal(m[pos, 0], rng=rng, lower=0.0)
        y[~pos] = sample_truncated_normal(m[~pos, 0], rng=rng, upper=0.0)
        # f | z ~ N(Σ z, Σ)
        m = conditional.sample(y[:, None], rng)
        record = (it + 1 - burn_in) % thin == 0
        if record:
            trace.append(float(np.sum(log_ndtr(t * m[:, 0]))))
        if record and it >= burn_in:
            kept_m.append(m)
            kept_y.append(y[:, None])
    kept_y = np.array(kept_y)
    alpha = np.array([conditional.alpha(y) for y in kept_y])
    return GibbsSamples(np.array(kept_m), kept_y, alpha, np.array(trace), conditional.factors, burn_in, thin, 0, True)


def gibbs_probit_multiclass(K: ArrayLike, t: ArrayLike, *, rng: np.random.Generator | int,
                            n_samples: int = 1000, burn_in: int = 2000, thin: int = 1,
                            n_classes: int | None = None, likelihood: MultinomialProbitLikelihood | None = None,
                            max_rounds: int = 50, trace: bool = True, progress: bool = False,
                            ) -> GibbsSamples:  # fmt: skip
    r"""The Gibbs sampler of G&R Appendix D for C-class multinomial probit GP classification:
    Algorithm 10.1 (vbx-alg-gibbs).

        z_i^(s) | f_i^(s-1) ~ N^(c_i)_z(f_i^(s-1), I),
        f^(c(s)) | z^(c(s)) ~ N(Σ_c z^(c(s)), Σ_c),

    at iteration s, with N^(c_i)_z the Gaussian truncated to the cone of class c_i, drawn exactly
    (:func:`sample_cone_truncated_normal`), and f^c drawn by Matheron's rule; F starts at zero. Cost per
    iteration: O(C n²) after one O(n³) factorisation per distinct kernel.

    Parameters
    ----------
    K : array_like (n, n) or (C, n, n)
        Shared or per-class prior covariance.
    t : array_like (n,)
        Classes c_i, codes 0..C−1.
    rng, n_samples, burn_in, thin, progress
        As in :func:`gibbs_probit_binary`.
    n_classes : int, optional
        C (default ``max(t) + 1``); every class needs an example.
    likelihood : MultinomialProbitLikelihood, optional
        Used only for the log-likelihood trace (default 16 Gauss–Hermite nodes).
    max_rounds : int
        Rejection rounds before a point falls back to a component sweep.
    trace : bool
        Record log P(c | f) every ``thin`` iterations (a quadrature over all points, often most of an iteration's cost).

    Returns
    -------
    GibbsSamples
    """
    rng = check_rng(rng)
    n = np.shape(K)[-1]
    t, n_classes = check_class_codes(t, n, n_classes)
    mats = list(check_covariance_stack(K, "K", n_classes=n_classes))
    n_samples, burn_in, thin = check_run_lengths(n_samples, burn_in, thin)
    likelihood = MultinomialProbitLikelihood(n_nodes=16) if likelihood is None else likelihood
    conditional = _ConditionalGP(mats)
    M = np.zeros((n, n_classes))
    Y = np.zeros((n, n_classes))
    Y[np.arange(n), t] = 1.0  # a point inside every cone, used only by the fallback sweep
    kept_m, kept_y, trace_values = [], [], []
    n_swept = 0
    for it in with_progress(range(burn_in + n_samples * thin), progress, "Gibbs (multinomial probit)"):
        # G&R (2006) App. D: z_i | f_i ~ N(f_i, I) truncated to the cone C_{c_i}
        Y, swept = sample_cone_truncated_normal(t, M, rng=rng, Y_current=Y, max_rounds=max_rounds)
        n_swept += swept
        # G&R (2006) App. D: f^c | z^c ~ N(Σ_c z^c, Σ_c)
        M = conditional.sample(Y, rng)
        record = (it + 1 - burn_in) % thin == 0
        if record and trace:
            trace_values.append(float(np.sum(likelihood.log_p(t, M))))
        if record and it >= burn_in:
            kept_m.append(M)
            kept_y.append(Y)
    kept_y = np.array(kept_y)
    alpha = np.array([conditional.alpha(y) for y in kept_y])
    return GibbsSamples(
        np.array(kept_m), kept_y, alpha, np.array(trace_values), conditional.factors, burn_in, thin, n_swept, False
    )


# --------------------------------------------------------------------------- predictions
def gibbs_predict_latent(samples: GibbsSamples, K_cross: ArrayLike, k_diag: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean of f_∗^c given each retained z^(s), and the shared variance (G&R App. D).

        μ_∗^(c(s)) = (z^(c(s)))ᵀ(I + K_c)⁻¹k_∗c,
        σ_∗c² = k_∗∗^c - k_∗cᵀ(I + K_c)⁻¹k_∗c.

    Parameters
    ----------
    samples : GibbsSamples
    K_cross, k_diag
        As in :func:`gpc_ref.vb_probit.vb_predict_latent`.

    Returns
    -------
    mean : ndarray (S, m, C)
        One predictive mean μ_∗^(c(s)) per retained sample s.
    var : ndarray (m, C)
        The predictive variance σ_∗c², the same for every sample.
    """
    S, n, n_cols = samples.alpha.shape
    cross, diag = check_test_covariances(K_cross, k_diag, n_cols)
    mean = np.stack([samples.alpha[:, :, k] @ cross[k] for k in range(n_cols)], axis=2)
    var = np.empty((cross[0].shape[1], n_cols))
    for k in range(n_cols):
        factor = samples.factors[0] if len(samples.factors) == 1 else samples.factors[k]
        v = solve_lower(factor.L, cross[k])
        var[:, k] = np.maximum(diag[k] - np.sum(v * v, axis=0), 0.0)
    return mean, var


def gibbs_predict_proba(samples: GibbsSamples, K_cross: ArrayLike, k_diag: ArrayLike, *,
                        likelihood: MultinomialProbitLikelihood | None = None, max_samples: int | None = None,
                        ) -> np.ndarray:  # fmt: skip
    r"""Monte Carlo predictive distribution from the retained samples (G&R App. D), Rao–Blackwellised.

    The paper draws one f_∗^(s) per retained sample and averages
    P(c_∗ = k | f_∗^(s)). Here the Gaussian
    f_∗ | z^(s) is integrated out exactly instead (same
    expectation, smaller variance):

        P(c_∗ = k) ≈ (1/S) ∑_s E_u[∏_(j ≠ k)Φ((u v_∗k + μ_∗^(k(s)) - μ_∗^(j(s)))/(v_∗j))],
        v_∗j = √(1 + σ_∗j²),

    with μ_∗^(c(s)) and σ_∗c² from :func:`gibbs_predict_latent`;
    binary: P(y_∗ = +1) ≈ (1/S)∑_s Φ(μ_∗^(s)/√(1 + σ_∗²)).

    Parameters
    ----------
    samples : GibbsSamples
    K_cross, k_diag, likelihood
        As in :func:`gpc_ref.vb_probit.vb_predict_proba`.
    max_samples : int, optional
        Use only this many retained samples, evenly spaced (for speed).

    Returns
    -------
    ndarray (m, 2) or (m, C)
        Binary: columns (P(y_* = −1), P(y_* = +1)). C classes: clipped to [0, 1] against quadrature round-off
        (rows are not renormalised).
    """
    mean, var = gibbs_predict_latent(samples, K_cross, k_diag)
    S = mean.shape[0]
    if max_samples is not None and max_samples < S:
        mean = mean[np.linspace(0, S - 1, int(max_samples)).round().astype(int)]
    if samples.binary:
        p1 = np.mean(ndtr(mean[:, :, 0] / np.sqrt(1.0 + var[:, 0])), axis=0)
        return np.column_stack([1.0 - p1, p1])
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    total = np.zeros(mean.shape[1:])
    for mu in mean:
        total += likelihood.predict(mu, var)
    # clipped to [0, 1] against quadrature round-off (rows are not renormalised)
    return np.clip(total / mean.shape[0], 0.0, 1.0)


def prior_sampling_log_evidence(
    K: ArrayLike,
    t: ArrayLike,
    *,
    rng: np.random.Generator | int,
    n_samples: int = 1000,
    binary: bool = False,
    likelihood: MultinomialProbitLikelihood | None = None,
    n_classes: int | None = None,
) -> EvidenceEstimate:
    r"""The marginal-likelihood estimate used for the Gibbs sampler in G&R Table 1: average over prior draws.

        log p(c) ≈ log(1/S) ∑_s P(c | f^(s)),
        f^(c(s)) ~ N(0, K_c)

    (binary: p(y), one GP). Unbiased for p(c) but, on the log scale, biased low with a
    huge variance once n is more than a handful (almost every prior draw
    misclassifies something); ``std_error`` is the delta-method standard error
    and ``effective_sample_size`` (Kish) shows how few draws carry the estimate.

    Parameters
    ----------
    K : array_like (n, n) or (C, n, n)
        Shared or per-class prior covariance.
    t : array_like (n,)
        Classes c_i (codes 0..C−1), or labels y_i = ±1 with ``binary=True``.
    rng : numpy.random.Generator or int
    n_samples : int
        Prior draws S.
    binary : bool
        The one-GP binary probit model instead of C GPs.
    likelihood : MultinomialProbitLikelihood, optional
        Evaluates P(c | f) for C classes (default 16 Gauss–Hermite nodes).
    n_classes : int, optional
        C (default ``max(t) + 1``).

    Returns
    -------
    EvidenceEstimate
    """
    rng = check_rng(rng)
    n_samples = check_positive_int(n_samples, "n_samples")
    mats = list(check_covariance_stack(K, "K"))
    n = mats[0].shape[0]
    if binary:
        t = check_binary_labels(t, "t", length=n)
        n_cols = 1
    else:
        t, n_cols = check_class_codes(t, n, n_classes)
        likelihood = MultinomialProbitLikelihood(n_nodes=16) if likelihood is None else likelihood
    if len(mats) not in (1, n_cols):
        raise ValueError(f"K must hold one matrix or one per class ({n_cols}); got {len(mats)}")
    roots = [cholesky(mat, name="K").L for mat in mats]
    log_terms = np.empty(n_samples)
    for s in range(n_samples):
        # F^(s) ~ prior: f^c = L_c w, w ~ N(0, I)
        Ms = np.column_stack([roots[0 if len(roots) == 1 else k] @ rng.standard_normal(n) for k in range(n_cols)])
        if binary:
            log_terms[s] = np.sum(log_ndtr(t * Ms[:, 0]))
        else:
            log_terms[s] = np.sum(likelihood.log_p(t, Ms))
    log_mean = logsumexp(log_terms) - np.log(n_samples)
    w = np.exp(log_terms - log_mean)
    std_error = np.std(w, ddof=1) / np.sqrt(n_samples)
    return EvidenceEstimate(float(log_mean), float(std_error), float(np.sum(w) ** 2 / np.sum(w**2)), int(n_samples))
