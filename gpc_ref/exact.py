r"""Ground truth for small problems: every approximation in the book is measured against these.

For a GP prior f ~ N(0, K) and a factorising likelihood
p(y|f) = ∏_i p(y_i|f_i):

- :func:`quadrature_posterior` integrates exactly (to quadrature accuracy) for
  n ≤ 3 points by a tensor Gauss–Hermite rule in whitened coordinates
  f = L z, z ~ N(0, I): the evidence, posterior mean and covariance.
- :func:`importance_sampling_evidence` estimates p(y) for moderate n
  with a Gaussian proposal (e.g. a Laplace or EP approximation, widened), with a
  standard error.
- :func:`elliptical_slice_sampling` draws from the exact latent posterior for any n
  (Murray, Adams & MacKay 2010): a long run is the reference for marginals.
- :func:`probit_orthant_evidence` (and :func:`probit_orthant_log_evidence`, its number) is the exact
  probit evidence with a standard error: an orthant probability of a Gaussian, by Genz's separation of
  variables (Genz 1992) with Botev's minimax tilting (Botev 2017) and randomised quasi-Monte Carlo, in
  log space; to 0.003 nats in about a second at n = 50 and in minutes at n = 151, but not at n = 200
  with σ_f = e⁴ and long lengthscales (see its docstring).
  :func:`multinomial_probit_orthant_evidence` is the same for the multinomial probit (G&R eq 3.1).
- :func:`gpc_ref.ais.ais_log_evidence` (its own module, which builds on this one) estimates log p(y)
  by annealed importance sampling (Neal 2001) with elliptical slice transitions, binary and
  multi-class: the gold standard for the evidence where no orthant probability gives it.
- :func:`autocorrelation` and :func:`effective_sample_size` measure how much a Markov chain
  (elliptical slice, HMC, Gibbs) is worth: the one estimator every sampler of the package uses.

``log_likelihood`` is always a function of an array of latent values whose last axis
has length n, returning log p(y_i|f_i) elementwise, e.g.
``lambda f: LogisticLikelihood().log_p(y, f)``.

References
----------
- [Murray10] Murray, Adams & MacKay (2010), *Elliptical slice sampling*, AISTATS.
- [KR05] Kuss & Rasmussen (2005): approximations compared with long MCMC runs.
- [Geyer92] Geyer (1992), *Practical Markov chain Monte Carlo*: the initial positive and initial
  monotone sequence estimators of the integrated autocorrelation time.
- [Neal01] Neal (2001), *Annealed importance sampling*, Statistics and Computing 11, 125–139.
- [NR08] Nickisch & Rasmussen (2008), *Approximations for binary Gaussian process classification*,
  JMLR 9: AIS as the reference evidence for the same comparison.
- [Genz92] Genz (1992), *Numerical computation of multivariate normal probabilities*, J. Comput. Graph.
  Statist. 1, 141–149: the separation of variables.
- [GenzBretz09] Genz & Bretz (2009), *Computation of multivariate normal and t probabilities*, Springer,
  §4.1.3: the variable reordering.
- [Botev17] Botev (2017), *The normal law under linear restrictions: simulation and estimation via
  minimax tilting*, JRSS B 79, 125–148: the tilting, its saddle point and the bound ψ*.
- [GR06] Girolami & Rogers (2006), eq 3.1: the multinomial probit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import root
from scipy.special import log_ndtr
from scipy.special import logsumexp
from scipy.special import ndtri_exp
from scipy.stats import qmc

from .errors import ConvergenceWarning
from .errors import QuadratureWarning  # re-exported
from .gaussian_integrals import gauss_hermite_grid
from .linalg import cho_solve
from .linalg import cholesky
from .progress import with_progress
from .threads import limited_blas_threads
from .validation import check_chain
from .validation import check_class_codes
from .validation import check_covariance
from .validation import check_covariance_stack
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_rng

__all__ = [
    "QuadraturePosterior",
    "quadrature_posterior",
    "QuadratureWarning",
    "EvidenceEstimate",
    "importance_sampling_evidence",
    "elliptical_slice_step",
    "elliptical_slice_sampling",
    "OrthantEstimate",
    "probit_orthant_evidence",
    "probit_orthant_log_evidence",
    "multinomial_probit_orthant_evidence",
    "autocorrelation",
    "effective_sample_size",
]


@dataclass(frozen=True)
class QuadraturePosterior:
    """Exact (quadrature) summaries of p(f | y) for a tiny problem."""

    log_evidence: float
    mean: np.ndarray
    cov: np.ndarray
    n_nodes: int


def _tensor_gauss_hermite(L, log_likelihood, n_nodes):
    """log p(y), posterior mean and covariance with an ``n_nodes``-per-dimension rule in f = L z."""
    z, log_w = gauss_hermite_grid(L.shape[0], n_nodes)
    f = z @ L.T
    log_terms = log_w + np.sum(log_likelihood(f), axis=-1)
    log_evidence = logsumexp(log_terms)
    posterior_weights = np.exp(log_terms - log_evidence)
    mean = posterior_weights @ f
    centred = f - mean
    cov = (centred * posterior_weights[:, None]).T @ centred
    return float(log_evidence), mean, cov


def quadrature_posterior(
    K: ArrayLike, log_likelihood: Callable[[np.ndarray], np.ndarray], *, n_nodes: int = 60, tol: float = 1e-3
) -> QuadraturePosterior:
    r"""Evidence, posterior mean and covariance by tensor Gauss–Hermite quadrature (n ≤ 3).

    With K = L Lᵀ and f = L z, p(y) = E_(z ~ N(0,I))[∏_i p(y_i | (Lz)_i)]; the rule uses ``n_nodes`` nodes per
    dimension (``n_nodes**n`` evaluations). It is exact to ~1e-12 when the likelihood varies slowly on the scale
    of the prior standard deviation, but a steep likelihood under a wide prior (a probit with prior variance
    k ≳ 20) is resolved by few nodes. The result is therefore compared with a coarser rule of ``3 n_nodes // 4``
    nodes, and a :class:`QuadratureWarning` is issued when the log evidence, the mean (in posterior standard
    deviations) or the covariance (in products of them) differ by more than ``tol``; raise ``n_nodes`` then.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance of the latent values, n ≤ 3.
    log_likelihood : callable
        Latent values (..., n) → the terms log p(y_i|f_i) (..., n), elementwise (see the
        module docstring).
    n_nodes : int
        Nodes per dimension, 8 to 300.
    tol : float
        Largest difference from the coarser rule accepted without a warning.

    Returns
    -------
    QuadraturePosterior
        ``log_evidence`` log p(y), the posterior ``mean`` (n,) and ``cov`` (n, n), and
        ``n_nodes``.
    """
    K = check_covariance(K, "K")
    n = K.shape[0]
    if n > 3:
        raise ValueError(f"quadrature_posterior handles n ≤ 3 points (n_nodes**n evaluations); got n = {n}")
    if not 8 <= int(n_nodes) <= 300:
        # (numpy's Gauss–Hermite weights underflow to zero beyond ~370 nodes)
        raise ValueError(f"n_nodes must lie between 8 and 300; got {n_nodes}")
    L = cholesky(K, name="K").L
    log_evidence, mean, cov = _tensor_gauss_hermite(L, log_likelihood, n_nodes)
    # convergence check against a coarser rule: the difference overestimates the error
    coarse_nodes = 3 * int(n_nodes) // 4
    coarse_log_evidence, coarse_mean, coarse_cov = _tensor_gauss_hermite(L, log_likelihood, coarse_nodes)
    scale = np.sqrt(np.maximum(np.diag(cov), np.finfo(float).tiny))
    change = max(
        abs(log_evidence - coarse_log_evidence),
        np.max(np.abs(mean - coarse_mean) / scale),
        np.max(np.abs(cov - coarse_cov) / np.outer(scale, scale)),
    )
    if not change <= tol:
        warnings.warn(
            f"quadrature_posterior has not converged: {n_nodes} and {coarse_nodes} nodes per dimension "
            f"differ by {change:.2g} (tolerance {tol:g}); increase n_nodes",
            QuadratureWarning,
            stacklevel=2,
        )
    return QuadraturePosterior(log_evidence, mean, cov, int(n_nodes))


@dataclass(frozen=True)
class EvidenceEstimate:
    """An importance-sampling estimate of log p(y) with its Monte Carlo standard error.

    ``std_error`` is the standard error of ``log_evidence`` by the delta method;
    ``effective_sample_size`` (Kish) warns when the proposal fits badly.
    """

    log_evidence: float
    std_error: float
    effective_sample_size: float
    n_samples: int

    def __iter__(self):
        """Unpack as ``estimate, standard_error = ...``."""
        return iter((self.log_evidence, self.std_error))


def importance_sampling_evidence(
    K: ArrayLike,
    log_likelihood: Callable[[np.ndarray], np.ndarray],
    *,
    rng: np.random.Generator | int,
    n_samples: int = 100_000,
    proposal_mean: ArrayLike | None = None,
    proposal_cov: ArrayLike | None = None,
    batch_size: int = 10_000,
) -> EvidenceEstimate:
    """Estimate log p(y) = log ∫ p(y|f) N(f|0, K) df by importance sampling.

    The proposal is N(``proposal_mean``, ``proposal_cov``), by default the prior
    itself (fine for a handful of points, hopeless for many). A Gaussian
    approximation of the posterior with its covariance inflated (say ×1.5) is a
    good proposal for moderate n.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance, and the proposal's unless ``proposal_cov`` is given.
    log_likelihood : callable
        As in :func:`quadrature_posterior`.
    rng : numpy.random.Generator or int
    n_samples : int
        Number of draws from the proposal.
    proposal_mean : array (n,), optional
        Mean of the proposal (default 0).
    proposal_cov : array (n, n), optional
        Covariance of the proposal (default ``K``).
    batch_size : int
        Draws processed at once (memory only; the estimate does not depend on it).

    Returns
    -------
    EvidenceEstimate
        ``log_evidence``, its ``std_error``, Kish's ``effective_sample_size`` and ``n_samples``.
    """
    rng = check_rng(rng)
    K = check_covariance(K, "K")
    n = K.shape[0]
    n_samples = check_positive_int(n_samples, "n_samples")
    prior = cholesky(K, name="K")
    mean = np.zeros(n) if proposal_mean is None else np.asarray(proposal_mean, dtype=float)
    proposal = prior if proposal_cov is None else cholesky(np.asarray(proposal_cov, float), name="proposal_cov")
    log_weights = []
    remaining = int(n_samples)
    while remaining > 0:
        m = min(batch_size, remaining)
        remaining -= m
        f = mean + rng.standard_normal((m, n)) @ proposal.L.T
        # log N(f|0,K) − log N(f|mean, proposal_cov); the 2π terms cancel
        log_prior = -0.5 * np.sum(f * cho_solve(prior.L, f.T).T, axis=1) - 0.5 * prior.log_det
        d = f - mean
        log_q = -0.5 * np.sum(d * cho_solve(proposal.L, d.T).T, axis=1) - 0.5 * proposal.log_det
        log_weights.append(np.sum(log_likelihood(f), axis=-1) + log_prior - log_q)
    log_weights = np.concatenate(log_weights)
    log_mean = logsumexp(log_weights) - np.log(n_samples)
    w = np.exp(log_weights - log_mean)  # weights relative to their mean
    std_error = np.std(w, ddof=1) / np.sqrt(n_samples)  # relative s.e. of the mean = s.e. of its log
    ess = np.sum(w) ** 2 / np.sum(w**2)
    return EvidenceEstimate(float(log_mean), float(std_error), float(ess), int(n_samples))


def elliptical_slice_step(
    f: np.ndarray,
    log_lik: float,
    L: np.ndarray,
    log_likelihood: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    r"""One elliptical slice sampling transition (Murray, Adams & MacKay 2010, Fig. 2).

    Leaves p(f) ∝ L(f) N(f | 0, K) invariant for any
    ``log_likelihood`` log L: draws ν ~ N(0, K) and a slice
    height log L(f) + log u, then shrinks a bracket of angles on the ellipse
    f cos α + ν sin α until a point lies above the slice.
    Every step is accepted; there is no step size to tune.

    Parameters
    ----------
    f : ndarray (n,)
        Current state.
    log_lik : float
        log L(f) at the current state.
    L : ndarray (n, n)
        Lower Cholesky factor of the prior covariance K.
    log_likelihood : callable
        As in :func:`quadrature_posterior` (its terms are summed here).
    rng : numpy.random.Generator

    Returns
    -------
    f, log_lik : ndarray (n,), float
        The new state and its log-likelihood.
    """
    nu = L @ rng.standard_normal(f.shape[0])
    threshold = log_lik + np.log(rng.uniform())
    angle = rng.uniform(0.0, 2.0 * np.pi)
    low, high = angle - 2.0 * np.pi, angle
    while True:
        proposal = f * np.cos(angle) + nu * np.sin(angle)
        value = float(np.sum(log_likelihood(proposal)))
        if value > threshold:
            return proposal, value
        # shrink the bracket towards the current state (angle 0)
        if angle < 0:
            low = angle
        else:
            high = angle
        angle = rng.uniform(low, high)


def elliptical_slice_sampling(
    K: ArrayLike,
    log_likelihood: Callable[[np.ndarray], np.ndarray],
    *,
    rng: np.random.Generator | int,
    n_samples: int,
    burn_in: int = 1000,
    thin: int = 1,
    f_init: ArrayLike | None = None,
    progress: bool = False,
) -> np.ndarray:
    """Samples of f from p(f | y) ∝ p(y|f) N(f|0, K) by elliptical slice sampling.

    Runs :func:`elliptical_slice_step` ``burn_in + n_samples·thin`` times from ``f_init``
    (default 0) and keeps every ``thin``-th state after the burn-in.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance (factorised once; any n).
    log_likelihood : callable
        As in :func:`quadrature_posterior`.
    rng : numpy.random.Generator or int
    n_samples, burn_in, thin : int
        States kept, leading transitions discarded, and the spacing of the kept states.
    f_init : array (n,), optional
        Starting state (default 0).
    progress : bool
        Show a progress bar.

    Returns
    -------
    ndarray (n_samples, n)
        The kept states, in the order drawn.
    """
    rng = check_rng(rng)
    K = check_covariance(K, "K")
    n = K.shape[0]
    n_samples = check_positive_int(n_samples, "n_samples")
    burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
    thin = check_positive_int(thin, "thin")
    L = cholesky(K, name="K").L
    f = np.zeros(n) if f_init is None else np.asarray(f_init, dtype=float).copy()
    log_lik = float(np.sum(log_likelihood(f)))
    samples = np.empty((n_samples, n))
    for step in with_progress(range(1, burn_in + n_samples * thin + 1), progress, "elliptical slice sampling"):
        f, log_lik = elliptical_slice_step(f, log_lik, L, log_likelihood, rng)
        if step > burn_in and (step - burn_in) % thin == 0:
            samples[(step - burn_in) // thin - 1] = f
    return samples


# --------------------------------------------------------------------------- the exact probit evidence
@dataclass(frozen=True)
class OrthantEstimate(EvidenceEstimate):
    """:func:`probit_orthant_evidence`'s result: an :class:`EvidenceEstimate` with two diagnostics.

    ``n_samples`` counts the quasi-Monte Carlo points over all randomisations; ``effective_sample_size`` is
    Kish's of the pooled weights. ``log_upper_bound`` is Botev's deterministic bound ψ* ≥ log p(y) (NaN
    when the saddle point was not found); ``converged`` is False when ``max_points`` ran out before the
    standard error reached ``tol``.
    """

    log_upper_bound: float = float("nan")
    converged: bool = True


def _orthant_order(S):
    """Genz & Bretz's variable order for P(z > 0), z ~ N(0, S): the least probable variable first.

    At step i the remaining variable with the smallest conditional probability of being positive, given
    the chosen ones at their conditional expectations, is put next ([GenzBretz09] §4.1.3, [Botev17] §3):
    a greedy pass that needs the Schur complements of the chosen block, i.e. a pivoted Cholesky
    elimination. Only the order is returned; the factor used is computed from the permuted matrix by
    :func:`gpc_ref.linalg.cholesky`.
    """
    n = S.shape[0]
    order = np.arange(n)
    L = np.zeros((n, n))
    expected = np.zeros(n)  # E[w_j | w_j > −b_j], the chosen (standardised) variables at their means
    for i in range(n):
        rest = np.arange(i, n)
        mean = L[rest, :i] @ expected[:i]
        sd = np.sqrt(np.maximum(S[order[rest], order[rest]] - np.sum(L[rest, :i] ** 2, axis=1), np.finfo(float).tiny))
        k = i + int(np.argmin(mean / sd))  # P(z_k > 0 | chosen) = Φ(mean/sd): the smallest goes next
        order[[i, k]], L[[i, k], :] = order[[k, i]], L[[k, i], :]
        L[i, i] = sd[k - i]
        below = np.arange(i + 1, n)
        L[below, i] = (S[order[below], order[i]] - L[below, :i] @ L[i, :i]) / L[i, i]
        b = L[i, :i] @ expected[:i] / L[i, i]
        expected[i] = np.exp(-0.5 * b**2 - 0.5 * np.log(2.0 * np.pi) - log_ndtr(b))  # φ(b)/Φ(b)
    return order


def _mills(t):
    """φ(t)/Φ(−t), the mean of a standard normal truncated to (t, ∞), in log space."""
    return np.exp(-0.5 * t**2 - 0.5 * np.log(2.0 * np.pi) - log_ndtr(-t))


def _tilting_gradient(v, C):
    """∇ψ and its Jacobian in (x, μ) for the orthant ([Botev17] eqs 9–10; ``C`` = L̃ − I, strictly lower)."""
    n = C.shape[0]
    x, mu = np.zeros(n), np.zeros(n)
    x[:-1], mu[:-1] = v[: n - 1], v[n - 1 :]
    lower = -mu - C @ x  # the truncation point of ζ_k = z_k − μ_k
    P = _mills(lower)
    gradient = np.concatenate([-mu[:-1] + (C.T @ P)[:-1], (mu - x + P)[:-1]])
    dP = -(P**2) + lower * P
    DC = dP[:, None] * C
    mx = (-np.eye(n) + DC)[:-1, :-1]
    xx = (C.T @ DC)[:-1, :-1]
    jacobian = np.block([[xx, mx.T], [mx, np.diag(1.0 + dP[:-1])]])
    return gradient, jacobian


def _tilted_log_weights(C, mu, U):
    """log weights of the tilted separation-of-variables estimator at the uniforms ``U`` (m, n − 1).

    Variable k is drawn as z_k = μ_k + ζ_k, ζ_k ~ N(0, 1) truncated to ζ_k > −c_k − μ_k with
    c_k = Σ_{j<k} C_kj z_j (so that (Lz)_k > 0), by the inverse CDF in log space; the weight gains
    log Φ(c_k + μ_k) + μ_k²/2 − μ_k z_k ([Botev17] eq 8; μ = 0 is Genz's estimator).
    """
    n, m = C.shape[0], U.shape[0]
    # a scrambled Sobol coordinate can be exactly 0 (about once in 2³⁰), whose inverse CDF is −∞ and would turn
    # the weight into NaN; the smallest positive float moves it into the open interval and changes nothing else
    U = np.maximum(U, np.finfo(float).tiny)
    Z = np.empty((n, m))  # one row per variable: C[k, :k] @ Z[:k] reads contiguous rows
    log_w = np.zeros(m)
    mu = np.append(mu, 0.0)
    for k in range(n):
        log_p = log_ndtr(C[k, :k] @ Z[:k] + mu[k])  # P(ζ_k > −c_k − μ_k) = Φ(c_k + μ_k)
        log_w += log_p + 0.5 * mu[k] ** 2
        if k < n - 1:
            Z[k] = mu[k] - ndtri_exp(np.log(U[:, k]) + log_p)  # −ζ_k = Φ⁻¹(u Φ(c_k + μ_k))
            log_w -= mu[k] * Z[k]
    return log_w


@limited_blas_threads
def _orthant_probability(covariance, rng, tol, max_points, n_randomisations, warn, caller):
    """log P(z > 0), z ~ N(0, covariance), by the tilted separation-of-variables estimator (see
    :func:`probit_orthant_evidence`)."""
    n = covariance.shape[0]
    tol = float(check_positive(tol, "tol"))
    max_points = check_positive_int(max_points, "max_points")
    n_randomisations = check_positive_int(n_randomisations, "n_randomisations", minimum=2)
    if n == 1:  # a centred normal is positive with probability ½
        return OrthantEstimate(float(np.log(0.5)), 0.0, 1.0, 0, float(np.log(0.5)), True)
    rng = np.random.default_rng(rng)
    order = _orthant_order(covariance)
    L = cholesky(covariance[np.ix_(order, order)], name="the orthant covariance").L
    C = L / np.diag(L)[:, None] - np.eye(n)  # [Botev17]: the scaled factor L̃ = diag(L)⁻¹L, minus I
    # the minimax tilting: ∇ψ(x, μ) = 0 ([Botev17] §3, solved as he does by a trust-region Newton method)
    solution = root(_tilting_gradient, np.zeros(2 * (n - 1)), args=(C,), jac=True, method="hybr")
    x, mu = solution.x[: n - 1], solution.x[n - 1 :]
    # x* must satisfy the constraints of the sampled variables 1..n−1 (the last one is integrated exactly)
    feasible = np.all((C @ np.append(x, 0.0))[:-1] + x > 0)
    if solution.success and feasible and np.all(np.isfinite(solution.x)):
        lower = -np.append(mu, 0.0) - C @ np.append(x, 0.0)
        log_upper_bound = float(np.sum(log_ndtr(-lower) + 0.5 * np.append(mu, 0.0) ** 2 - np.append(x * mu, 0.0)))
    else:  # any μ leaves the estimator unbiased; without the saddle point fall back to Genz's (μ = 0)
        mu, log_upper_bound = np.zeros(n - 1), float("nan")
    samplers = [qmc.Sobol(n - 1, scramble=True, seed=rng) for _ in range(n_randomisations)]
    log_sums = np.full(n_randomisations, -np.inf)  # log Σ w over each sequence's points
    log_sum_squares = -np.inf
    per_sequence, batch = 0, 1024
    while True:
        for r, sampler in enumerate(samplers):
            for start in range(0, batch, 8192):  # chunks, to bound memory at large n
                log_w = _tilted_log_weights(C, mu, sampler.random(min(8192, batch - start)))
                log_sums[r] = np.logaddexp(log_sums[r], logsumexp(log_w))
                log_sum_squares = np.logaddexp(log_sum_squares, logsumexp(2.0 * log_w))
        per_sequence += batch
        estimates = log_sums - np.log(per_sequence)
        log_mean = float(logsumexp(estimates) - np.log(n_randomisations))
        std_error = float(np.std(np.exp(estimates - log_mean), ddof=1) / np.sqrt(n_randomisations))
        total = per_sequence * n_randomisations
        converged = std_error <= tol
        if converged or 2 * total > max_points:
            break
        batch = per_sequence  # doubling keeps each scrambled Sobol sequence at a power of two
    if not converged and warn:
        warnings.warn(
            f"{caller}: standard error {std_error:.2g} after {total} points exceeds tol = {tol:g}; raise max_points",
            ConvergenceWarning,
            stacklevel=4,  # the caller of probit_orthant_evidence (through the BLAS-thread wrapper)
        )
    # Kish's effective sample size of the pooled weights: (Σw)²/Σw²
    ess = float(np.exp(2.0 * logsumexp(log_sums) - log_sum_squares))
    return OrthantEstimate(log_mean, std_error, ess, int(total), log_upper_bound, bool(converged))


def probit_orthant_evidence(K: ArrayLike, y: ArrayLike, *, rng: np.random.Generator | int | None = 0,
                            tol: float = 0.003, max_points: int = 2**21, n_randomisations: int = 16,
                            warn: bool = True) -> OrthantEstimate:  # fmt: skip
    r"""The exact probit evidence log p(y) = log ∫∏_i Φ(y_i f_i)N(f | 0, K)df, with its error.

    p(y) is the probability that z = D(f + ε) ~ N(0, D(K + I)D), D = diag(y), ε ~ N(0, I), lies in the positive
    orthant: [Genz92]'s separation of variables with Botev's minimax exponential tilting ([Botev17]), whose bound
    e^ψ* on the weights (``log_upper_bound``) keeps the standard error trustworthy at large σ_f, unlike plain Genz
    (scipy's ``multivariate_normal.cdf``); all in log space, no underflow at p(y) = e⁻⁷⁰⁰ (derivation: the book's
    binary Comparison chapter, book/comparison_binary.ipynb). R = ``n_randomisations`` scrambled Sobol sequences
    of 1024 points each are doubled until the standard error sd(p̂_r)/(√R p̄) is at most ``tol`` or ``max_points``
    would be exceeded; where the weights spread (large σ_f, long lengthscales) ``tol`` may be missed: use AIS.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : array (n,)
        Labels in {−1, +1}.
    rng : numpy.random.Generator or int, optional
        Scrambles the Sobol sequences (default seed 0: repeated calls agree; None draws fresh randomness).
    tol : float
        Target standard error of the log evidence (nats); the default 0.003 keeps the error below 0.01 nats
        with probability 0.999 when the standard error is right.
    max_points, n_randomisations : int
        The largest total number of points, and R, at least 2 (the standard error needs two).
    warn : bool
        Warn (:class:`ConvergenceWarning`) when ``max_points`` runs out before ``tol`` is reached.

    Returns
    -------
    OrthantEstimate
        With ``log_upper_bound`` and ``converged``; it unpacks as ``estimate, standard_error``.
    """
    K = check_covariance(K, "K")
    n = K.shape[0]
    y = np.asarray(y, dtype=float)
    if y.shape != (n,) or not np.all(np.abs(y) == 1):
        raise ValueError(f"y must hold one label in {{-1, +1}} per row of K ({n}); got {y!r}")
    covariance = y[:, None] * (K + np.eye(n)) * y[None, :]
    return _orthant_probability(covariance, rng, tol, max_points, n_randomisations, warn, "probit_orthant_evidence")


def probit_orthant_log_evidence(K: ArrayLike, y: ArrayLike, *, rng: np.random.Generator | int | None = 0,
                                tol: float = 0.003, max_points: int = 2**21) -> float:  # fmt: skip
    r"""The exact probit evidence log p(y) as a number: :func:`probit_orthant_evidence`'s estimate.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : array (n,)
        Labels in {−1, +1}.
    rng : numpy.random.Generator or int, optional
        As in :func:`probit_orthant_evidence` (default seed 0: repeated calls agree).
    tol, max_points : float, int
        As in :func:`probit_orthant_evidence`; it warns when ``tol`` is not reached.

    Returns
    -------
    float
    """
    return probit_orthant_evidence(K, y, rng=rng, tol=tol, max_points=max_points).log_evidence


def multinomial_probit_orthant_evidence(K: ArrayLike, codes: ArrayLike, *, n_classes: int | None = None,
                                        rng: np.random.Generator | int | None = 0, tol: float = 0.003,
                                        max_points: int = 2**21, warn: bool = True) -> OrthantEstimate:  # fmt: skip
    r"""The exact multinomial-probit evidence (G&R eq 3.1) as an orthant probability.

    With z_i^c = f_i^c + ε_i^c, ε_i^c ~ N(0,1), the class is
    c_i = argmax_c z_i^c, so p(c) = P(z_i^(c_i) - z_i^j > 0 for every i and every
    j ≠ c_i): the n(C − 1) differences d = Az are Gaussian with covariance
    A blockdiag_c(K_c + I) Aᵀ, and the evidence is the probability of their positive
    orthant, estimated as in :func:`probit_orthant_evidence`. This does not use the quadrature of
    :class:`~gpc_ref.likelihoods.MultinomialProbitLikelihood`: it is an independent check of
    :func:`ais_log_evidence` with that likelihood.

    Parameters
    ----------
    K : ndarray (n, n) or (C, n, n)
        One prior covariance shared by the classes, or one per class.
    codes : array (n,)
        Class codes 0..C−1.
    n_classes : int, optional
        C when K is shared (default: one more than the largest code).
    rng, tol, max_points, warn
        As in :func:`probit_orthant_evidence`.

    Returns
    -------
    OrthantEstimate
    """
    K = check_covariance_stack(K, "K")
    n = K.shape[1]
    codes, n_classes = check_class_codes(codes, n, K.shape[0] if K.shape[0] > 1 else n_classes, "codes",
                                         require_all=False)  # fmt: skip
    K = np.broadcast_to(K, (n_classes, n, n))
    # A: one row per (point i, rival class j ≠ c_i), picking z_i^{c_i} − z_i^j from the class-major z
    rows = [(i, j) for i in range(n) for j in range(n_classes) if j != codes[i]]
    A = np.zeros((len(rows), n_classes * n))
    for r, (i, j) in enumerate(rows):
        A[r, codes[i] * n + i], A[r, j * n + i] = 1.0, -1.0
    covariance_z = np.zeros((n_classes * n, n_classes * n))
    for c in range(n_classes):
        covariance_z[c * n : (c + 1) * n, c * n : (c + 1) * n] = K[c] + np.eye(n)
    covariance = A @ covariance_z @ A.T
    return _orthant_probability(0.5 * (covariance + covariance.T), rng, tol, max_points, 16, warn,
                                "multinomial_probit_orthant_evidence")  # fmt: skip


# --------------------------------------------------------------------------- how much a chain is worth
def autocorrelation(chain: ArrayLike, max_lag: int | None = None) -> np.ndarray:
    r"""Sample autocorrelation ρ_k = c_k / c_0 of a chain, for lags 0..``max_lag``.

    c_k = (1/n)∑_(t=1)^(n-k)(x_t-x̄)(x_(t+k) - x̄) (the biased estimator, which
    keeps the sequence positive definite), computed by FFT with zero padding. A constant chain
    (one that never moved) has ρ_k = 1 at every lag by convention.

    Parameters
    ----------
    chain : array (n,) or (n, D)
        Columns are treated separately.
    max_lag : int, optional
        Largest lag; default ``n - 1``.

    Returns
    -------
    ndarray (max_lag + 1,) or (max_lag + 1, D)
        ρ_0 = 1, ρ_1, …, one column per column of ``chain``.
    """
    x = check_chain(chain)
    n = x.shape[0]
    max_lag = n - 1 if max_lag is None else check_positive_int(max_lag, "max_lag", minimum=0)
    if max_lag >= n:
        raise ValueError(f"max_lag must be smaller than the chain length {n}; got {max_lag}")
    column = x.ndim == 1
    data = x[:, None] if column else x
    centred = data - data.mean(axis=0)
    size = 1 << int(np.ceil(np.log2(2 * n)))  # zero padding: no wrap-around
    spectrum = np.fft.rfft(centred, n=size, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[: max_lag + 1] / n
    c0 = acov[0]
    # a chain that never moved has all its values equal; its centred values are then the rounding
    # error of the mean (e.g. 4e-16 for 3.7 repeated), not zeros, so test the values themselves
    constant = (np.ptp(data, axis=0) == 0.0) | (c0 <= 0.0)
    rho = acov / np.where(constant, 1.0, c0)
    rho[:, constant] = 1.0
    return rho[:, 0] if column else rho


def effective_sample_size(chain: ArrayLike) -> float | np.ndarray:
    r"""Effective sample size n/τ by Geyer's initial monotone sequence (Geyer 1992).

    The integrated autocorrelation time τ = 1 + 2∑_(k ≥ 1)ρ_k is estimated from
    the pair sums Γ_m = ρ_(2m) + ρ_(2m+1): they are summed up to the first
    Γ_M ≤ 0 (for a reversible chain the true Γ_m are positive, so a
    non-positive one means noise has taken over) and forced non-increasing,
    τ = -1 + 2∑_(m<M)Γ_m. HMC's anticorrelated chains can have τ < 1,
    an ESS above n; the estimate is capped at n log_10 n (as Stan does). A constant chain
    (a sampler that never moved) is worth one draw: ESS = 1.

    Parameters
    ----------
    chain : array (n,) or (n, D)
        As in :func:`autocorrelation`.

    Returns
    -------
    float or ndarray (D,)
        ESS of the chain, or of each of its columns.
    """
    x = check_chain(chain)
    n = x.shape[0]
    rho = autocorrelation(x)
    column = rho.ndim == 1
    rho = rho[:, None] if column else rho
    cap = n * np.log10(n)
    out = np.empty(rho.shape[1])
    for j in range(rho.shape[1]):
        if np.all(rho[:, j] == 1.0):
            out[j] = 1.0
            continue
        r = rho[: 2 * (n // 2), j]
        # Geyer (1992): Γ_m = ρ_(2m) + ρ_(2m+1), summed while positive and made non-increasing
        pairs = r.reshape(-1, 2).sum(axis=1)
        stop = np.flatnonzero(pairs <= 0)
        pairs = np.minimum.accumulate(pairs[: stop[0]] if stop.size else pairs)
        tau = -1.0 + 2.0 * np.sum(pairs)
        out[j] = min(n / tau, cap) if tau > 0 else cap
    return float(out[0]) if column else out
