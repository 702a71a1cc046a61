r"""Ground truth for small problems: every approximation in the book is measured against these.

For a GP prior :math:`f \sim N(0, K)` and a factorising likelihood
:math:`p(\mathbf y|\mathbf f) = \prod_i p(y_i|f_i)`:

- :func:`quadrature_posterior` integrates exactly (to quadrature accuracy) for
  n ≤ 3 points by a tensor Gauss–Hermite rule in whitened coordinates
  :math:`f = L z`, :math:`z \sim N(0, I)`: the evidence, posterior mean and covariance.
- :func:`importance_sampling_evidence` estimates :math:`p(\mathbf y)` for moderate n
  with a Gaussian proposal (e.g. a Laplace or EP approximation, widened), with a
  standard error.
- :func:`elliptical_slice_sampling` draws from the exact latent posterior for any n
  (Murray, Adams & MacKay 2010): a long run is the reference for marginals.
- :func:`probit_orthant_log_evidence` is the exact probit evidence for moderate n (an orthant
  probability of a Gaussian, by Genz's algorithm in scipy).
- :func:`ais_log_evidence` estimates :math:`\log p(\mathbf y)` for any n by annealed importance
  sampling (Neal 2001) with elliptical slice transitions: the gold standard for the evidence.
- :func:`autocorrelation` and :func:`effective_sample_size` measure how much a Markov chain
  (elliptical slice, HMC, Gibbs) is worth: the one estimator every sampler of the package uses.

``log_likelihood`` is always a function of an array of latent values whose last axis
has length n, returning :math:`\log p(y_i|f_i)` elementwise, e.g.
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
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .gaussian_integrals import gauss_hermite_grid
from .linalg import cho_solve
from .linalg import cholesky
from .progress import with_progress
from .validation import ConvergenceWarning
from .validation import check_chain
from .validation import check_covariance
from .validation import check_positive_int
from .validation import check_rng

if TYPE_CHECKING:
    from .likelihoods import BinaryLikelihood
    from .likelihoods import LabelNoiseLikelihood

__all__ = [
    "QuadraturePosterior",
    "quadrature_posterior",
    "QuadratureWarning",
    "EvidenceEstimate",
    "importance_sampling_evidence",
    "elliptical_slice_step",
    "elliptical_slice_sampling",
    "ais_log_evidence",
    "probit_orthant_log_evidence",
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


class QuadratureWarning(ConvergenceWarning):
    """The tensor Gauss–Hermite rule of :func:`quadrature_posterior` has not converged."""


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

    With :math:`K = L L^T` and :math:`f = L z`,
    :math:`p(\mathbf y) = E_{z\sim N(0,I)}[\prod_i p(y_i | (Lz)_i)]`; the rule uses
    ``n_nodes`` nodes per dimension (``n_nodes**n`` evaluations).

    The rule is exact to ~1e-12 when the likelihood varies slowly on the scale of
    the prior standard deviation, but a steep likelihood under a wide prior (a
    probit with prior variance k ≳ 20) is resolved by few nodes: at k = 100 the
    60-node posterior mean is off by about 1 % of the posterior standard deviation.
    The result is therefore compared with a coarser rule of ``3 n_nodes // 4``
    nodes, and a :class:`QuadratureWarning` is issued when the log evidence, the
    mean (in posterior standard deviations) or the covariance (in products of
    them) differ by more than ``tol``; raise ``n_nodes`` then.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance of the latent values, n ≤ 3.
    log_likelihood : callable
        Latent values (..., n) → the terms :math:`\log p(y_i|f_i)` (..., n), elementwise (see the
        module docstring).
    n_nodes : int
        Nodes per dimension, 8 to 300.
    tol : float
        Largest difference from the coarser rule accepted without a warning.

    Returns
    -------
    QuadraturePosterior
        ``log_evidence`` :math:`\log p(\mathbf y)`, the posterior ``mean`` (n,) and ``cov`` (n, n), and
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

    Leaves :math:`p(\mathbf f) \propto L(\mathbf f)\,N(\mathbf f\mid 0, K)` invariant for any
    ``log_likelihood`` :math:`\log L`: draws :math:`\boldsymbol\nu \sim N(0, K)` and a slice
    height :math:`\log L(\mathbf f) + \log u`, then shrinks a bracket of angles on the ellipse
    :math:`\mathbf f\cos\alpha + \boldsymbol\nu\sin\alpha` until a point lies above the slice.
    Every step is accepted; there is no step size to tune.

    Parameters
    ----------
    f : ndarray (n,)
        Current state.
    log_lik : float
        :math:`\log L(\mathbf f)` at the current state.
    L : ndarray (n, n)
        Lower Cholesky factor of the prior covariance :math:`K`.
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


# --------------------------------------------------------------------------- how much a chain is worth
def _slice_chains(F, log_lik, L, log_target, rng):
    """One elliptical slice transition for every row of ``F`` at once (the rows are independent chains).

    ``log_target(F)`` returns one log-likelihood per row; rows whose proposal falls below their slice
    shrink their own bracket and try again, the others are done ([Murray10] Fig. 2, vectorised).
    """
    n_chains = F.shape[0]
    nu = rng.standard_normal(F.shape) @ L.T
    threshold = log_lik + np.log(rng.uniform(size=n_chains))
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n_chains)
    low, high = angle - 2.0 * np.pi, angle.copy()
    F_new, log_lik_new = F.copy(), log_lik.copy()
    pending = np.arange(n_chains)
    while pending.size:
        a = angle[pending][:, None]
        proposal = F[pending] * np.cos(a) + nu[pending] * np.sin(a)
        value = log_target(proposal)
        accepted = value > threshold[pending]
        done = pending[accepted]
        F_new[done], log_lik_new[done] = proposal[accepted], value[accepted]
        pending = pending[~accepted]
        # shrink each remaining bracket towards the current state (angle 0), then redraw inside it
        negative = angle[pending] < 0
        low[pending] = np.where(negative, angle[pending], low[pending])
        high[pending] = np.where(negative, high[pending], angle[pending])
        angle[pending] = rng.uniform(low[pending], high[pending])
    return F_new, log_lik_new


def ais_log_evidence(K: ArrayLike, y: ArrayLike, likelihood: BinaryLikelihood | LabelNoiseLikelihood, *, rng: np.random.Generator | int,
                     n_temperatures: int = 1000, n_chains: int = 16, exponent: float = 4.0,
                     progress: bool = False) -> EvidenceEstimate:  # fmt: skip
    r"""Annealed importance sampling estimate of :math:`\log p(\mathbf y) = \log\int p(\mathbf y\mid\mathbf f)N(\mathbf f\mid 0, K)d\mathbf f`.

    Neal's AIS [Neal01] moves each chain through the tempered posteriors
    :math:`\pi_t(\mathbf f) \propto p(\mathbf y\mid\mathbf f)^{\beta_t}N(\mathbf f\mid 0, K)`,
    :math:`0 = \beta_0 < \beta_1 < \dots < \beta_T = 1`, starting from an exact prior draw. Before the
    move to temperature :math:`t` the chain's log weight grows by
    :math:`(\beta_t - \beta_{t-1})\log p(\mathbf y\mid\mathbf f)`; the move is one elliptical slice
    transition, which leaves :math:`\pi_t` invariant because it is a Gaussian prior times a
    likelihood (here the tempered one). The mean of the weights :math:`e^{\log w}` is an unbiased
    estimate of :math:`p(\mathbf y)`; its log is returned with the delta-method standard error
    :math:`\operatorname{sd}(w)/(\sqrt S\,\bar w)` over the :math:`S` chains. The schedule
    :math:`\beta_t = (t/T)^{\text{exponent}}` spends most temperatures near the prior, where the
    tempered posteriors change fastest [NR08].

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : array (n,)
        Labels, as ``likelihood.log_p`` takes them.
    likelihood : object with ``log_p(y, f)``
        E.g. ``ProbitLikelihood()``, ``LogisticLikelihood()``, ``LabelNoiseLikelihood(ε, 0)``; ``f`` may
        be a (chains, n) array.
    rng : numpy.random.Generator or int
    n_temperatures : int
        T, the number of annealing steps (and of slice transitions per chain).
    n_chains : int
        S, independent annealing runs (at least 2, for the standard error).
    exponent : float
        The schedule's power (1 is linear).
    progress : bool
        Show a progress bar over the temperatures.

    Returns
    -------
    EvidenceEstimate
        ``log_evidence``, ``std_error``, the weights' Kish effective sample size, and ``n_samples`` = S;
        it unpacks as ``estimate, standard_error``.
    """
    rng = check_rng(rng)
    K = check_covariance(K, "K")
    y = np.asarray(y)
    if y.shape != (K.shape[0],):
        raise ValueError(f"y must have one label per row of K ({K.shape[0]}); got shape {y.shape}")
    n_temperatures = check_positive_int(n_temperatures, "n_temperatures")
    n_chains = check_positive_int(n_chains, "n_chains")
    if n_chains < 2:
        raise ValueError(f"n_chains must be at least 2 (the standard error needs two chains); got {n_chains}")
    if not exponent > 0:
        raise ValueError(f"exponent must be positive; got {exponent!r}")
    L = cholesky(K, name="K").L
    betas = (np.arange(n_temperatures + 1) / n_temperatures) ** float(exponent)

    def log_lik_of(F):
        return np.sum(likelihood.log_p(y, F), axis=-1)

    F = rng.standard_normal((n_chains, K.shape[0])) @ L.T  # exact draws from π_0, the prior
    log_lik = log_lik_of(F)
    log_w = np.zeros(n_chains)
    for t in with_progress(range(1, n_temperatures + 1), progress, "AIS"):
        log_w += (betas[t] - betas[t - 1]) * log_lik
        beta = betas[t]
        # the slice works on the tempered log-likelihood β log p(y|f); keep the untempered one for the weights
        F, tempered = _slice_chains(F, beta * log_lik, L, lambda G, beta=beta: beta * log_lik_of(G), rng)
        log_lik = tempered / beta
    log_mean = logsumexp(log_w) - np.log(n_chains)
    w = np.exp(log_w - log_mean)
    std_error = np.std(w, ddof=1) / np.sqrt(n_chains)
    ess = np.sum(w) ** 2 / np.sum(w**2)
    return EvidenceEstimate(float(log_mean), float(std_error), float(ess), int(n_chains))


def probit_orthant_log_evidence(K: ArrayLike, y: ArrayLike, *, rng: np.random.Generator | int | None = 0,
                                abseps: float = 1e-10, releps: float = 1e-7, maxpts: int = 2_000_000) -> float:  # fmt: skip
    r"""The exact probit evidence :math:`\log p(\mathbf y) = \log\int\prod_i\Phi(y_if_i)N(\mathbf f\mid 0, K)d\mathbf f`.

    :math:`\Phi(y_if_i) = P(y_i(f_i + \varepsilon_i) > 0)` with independent :math:`\varepsilon_i\sim N(0,1)`, so
    :math:`p(\mathbf y)` is the probability that :math:`\mathbf z = D(\mathbf f + \boldsymbol\varepsilon)`,
    :math:`D = \operatorname{diag}(\mathbf y)`, :math:`\mathbf z\sim N(0, D(K + I)D)`, lies in the positive
    orthant, which by symmetry is its CDF at zero: computed by Genz's quasi-Monte Carlo integration
    (scipy's ``multivariate_normal.cdf``), accurate to about ``abseps`` for n up to a few dozen.

    Parameters
    ----------
    K : ndarray (n, n)
        Prior covariance.
    y : array (n,)
        Labels in {−1, +1}.
    rng : numpy.random.Generator or int, optional
        The randomisation of Genz's lattice rule (default seed 0, so that repeated calls agree; None draws
        fresh randomness).
    abseps, releps, maxpts : float, float, int
        Genz's absolute and relative error tolerances and evaluation budget.

    Returns
    -------
    float
    """
    from scipy.stats import multivariate_normal

    K = check_covariance(K, "K")
    y = np.asarray(y, dtype=float)
    if y.shape != (K.shape[0],) or not np.all(np.abs(y) == 1):
        raise ValueError(f"y must hold one label in {{-1, +1}} per row of K ({K.shape[0]}); got {y!r}")
    covariance = y[:, None] * (K + np.eye(K.shape[0])) * y[None, :]
    distribution = multivariate_normal(np.zeros(K.shape[0]), covariance, maxpts=int(maxpts), abseps=abseps,
                                       releps=releps)  # fmt: skip
    return float(np.log(distribution.cdf(np.zeros(K.shape[0]), rng=np.random.default_rng(rng))))


def autocorrelation(chain: ArrayLike, max_lag: int | None = None) -> np.ndarray:
    r"""Sample autocorrelation :math:`\rho_k = c_k / c_0` of a chain, for lags 0..``max_lag``.

    :math:`c_k = \frac1n\sum_{t=1}^{n-k}(x_t-\bar x)(x_{t+k}-\bar x)` (the biased estimator, which
    keeps the sequence positive definite), computed by FFT with zero padding. A constant chain
    (one that never moved) has :math:`\rho_k = 1` at every lag by convention.

    Parameters
    ----------
    chain : array (n,) or (n, D)
        Columns are treated separately.
    max_lag : int, optional
        Largest lag; default ``n - 1``.

    Returns
    -------
    ndarray (max_lag + 1,) or (max_lag + 1, D)
        :math:`\rho_0 = 1, \rho_1, \dots`, one column per column of ``chain``.
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
    r"""Effective sample size :math:`n/\tau` by Geyer's initial monotone sequence (Geyer 1992).

    The integrated autocorrelation time :math:`\tau = 1 + 2\sum_{k\ge1}\rho_k` is estimated from
    the pair sums :math:`\Gamma_m = \rho_{2m} + \rho_{2m+1}`: they are summed up to the first
    :math:`\Gamma_M \le 0` (for a reversible chain the true :math:`\Gamma_m` are positive, so a
    non-positive one means noise has taken over) and forced non-increasing,
    :math:`\tau = -1 + 2\sum_{m<M}\Gamma_m`. HMC's anticorrelated chains can have :math:`\tau < 1`,
    an ESS above n; the estimate is capped at :math:`n\log_{10}n` (as Stan does). A constant chain
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
        # Geyer (1992): Γ_m = ρ_2m + ρ_2m+1, summed while positive and made non-increasing
        pairs = r.reshape(-1, 2).sum(axis=1)
        stop = np.flatnonzero(pairs <= 0)
        pairs = np.minimum.accumulate(pairs[: stop[0]] if stop.size else pairs)
        tau = -1.0 + 2.0 * np.sum(pairs)
        out[j] = min(n / tau, cap) if tau > 0 else cap
    return float(out[0]) if column else out
