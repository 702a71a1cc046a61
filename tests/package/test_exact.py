"""Tests of gpc_ref.exact: the ground truth every approximation in the book is measured against.

The reference values come from closed forms:

- one point with a probit likelihood: p(y) = Φ(y b/√(1+k)) and the tilted-Gaussian
  moments of GPML eq 3.58 (here with an offset b in the likelihood Φ(y(f + b)),
  so that the answer is not simply ½);
- two or three points with a probit likelihood: p(y) is a Gaussian orthant
  probability, Φ_n(0; 0, D(K + I)D) with D = diag(y) (Albert–Chib: y_i(f_i + ε_i) > 0);
- a Gaussian likelihood: the regression posterior and evidence (GPML eqs 2.22–2.24, 2.30).

The Monte Carlo estimators are checked against the quadrature within a few
standard errors (batch means for the Markov chain). The chain diagnostics are checked on
chains whose autocorrelation time is known: constant, independent and AR(1). Every random
run is seeded.
"""

import warnings

import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.special import ndtr
from scipy.stats import multivariate_normal
from scipy.stats import norm

from gpc_ref import ConvergenceWarning
from gpc_ref.exact import EvidenceEstimate
from gpc_ref.exact import QuadraturePosterior
from gpc_ref.exact import QuadratureWarning
from gpc_ref.exact import autocorrelation
from gpc_ref.exact import effective_sample_size
from gpc_ref.exact import elliptical_slice_sampling
from gpc_ref.exact import elliptical_slice_step
from gpc_ref.exact import importance_sampling_evidence
from gpc_ref.exact import multinomial_probit_orthant_evidence
from gpc_ref.exact import probit_orthant_evidence
from gpc_ref.exact import probit_orthant_log_evidence
from gpc_ref.exact import quadrature_posterior
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.linalg import cholesky

N_SIGMA = 4.0  # Monte Carlo agreement is asserted within this many standard errors


def small_problem(n, variance=3.0, lengthscale=1.0):
    """A fixed tiny classification problem: inputs on a line, alternating-ish labels."""
    X = np.array([[0.0], [0.8], [1.9]])[:n]
    y = np.array([1.0, -1.0, 1.0])[:n]
    K = SEKernel(variance=variance, lengthscale=lengthscale).K(X)
    return K, y


def probit_log_lik(y, offset=0.0):
    return lambda f: ProbitLikelihood().log_p(y, f + offset)


def logistic_log_lik(y):
    return lambda f: LogisticLikelihood().log_p(y, f)


def gaussian_log_lik(targets, noise):
    return lambda f: -0.5 * (targets - f) ** 2 / noise - 0.5 * np.log(2.0 * np.pi * noise)


def tilted_probit_moments(y, mean, var):
    """GPML eq 3.58: Z, mean and variance of Φ(y f) N(f | mean, var) / Z."""
    z = y * mean / np.sqrt(1.0 + var)
    Z = ndtr(z)
    ratio = norm.pdf(z) / Z
    tilted_mean = mean + y * var * ratio / np.sqrt(1.0 + var)
    tilted_var = var - var**2 * ratio / (1.0 + var) * (z + ratio)
    return Z, tilted_mean, tilted_var


def batch_means_std_error(samples, n_batches=20):
    """Standard error of the mean of a (correlated) chain by batch means, per column."""
    samples = samples[: len(samples) // n_batches * n_batches]
    batches = samples.reshape(n_batches, -1, samples.shape[1]).mean(axis=1)
    return batches.std(axis=0, ddof=1) / np.sqrt(n_batches)


# --------------------------------------------------------------------------- quadrature_posterior
@pytest.mark.parametrize("k", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("y", [-1.0, 1.0])
def test_single_probit_point_has_evidence_one_half(k, y):
    # Φ(y·0/√(1+k)) = ½ whatever the prior variance and the label
    # (a wide prior needs more nodes to resolve the probit's step: 120 nodes are exact to ~1e-9 at k = 10)
    result = quadrature_posterior(np.array([[k]]), probit_log_lik(np.array([y])), n_nodes=120)
    assert isinstance(result, QuadraturePosterior)
    assert result.log_evidence == pytest.approx(np.log(0.5), abs=1e-12)
    _, mean, var = tilted_probit_moments(y, 0.0, k)
    assert result.mean[0] == pytest.approx(mean, abs=1e-8)
    assert result.cov[0, 0] == pytest.approx(var, abs=1e-8)


@pytest.mark.parametrize("k, offset, y", [(2.0, 0.7, -1.0), (0.5, -1.5, 1.0), (8.0, 3.0, -1.0)])
def test_single_probit_point_matches_tilted_moments(k, offset, y):
    # likelihood Φ(y(f + b)): with g = f + b ~ N(b, k) this is eq 3.58 in g, shifted back by b
    result = quadrature_posterior(np.array([[k]]), probit_log_lik(np.array([y]), offset), n_nodes=100)
    Z, mean_g, var_g = tilted_probit_moments(y, offset, k)
    assert result.log_evidence == pytest.approx(np.log(Z), abs=1e-8)
    assert result.mean[0] == pytest.approx(mean_g - offset, abs=1e-8)
    assert result.cov[0, 0] == pytest.approx(var_g, abs=1e-8)


@pytest.mark.parametrize("n", [2, 3])
def test_probit_evidence_is_a_gaussian_orthant_probability(n):
    K, y = small_problem(n)
    result = quadrature_posterior(K, probit_log_lik(y))
    # p(y) = P(y_i (f_i + ε_i) > 0 for all i), f + ε ~ N(0, K + I)
    cov = np.outer(y, y) * (K + np.eye(n))
    orthant = multivariate_normal(np.zeros(n), cov, abseps=1e-10, releps=1e-10, maxpts=10**6).cdf(np.zeros(n))
    assert result.log_evidence == pytest.approx(np.log(orthant), abs=1e-6)
    assert result.mean.shape == (n,) and result.cov.shape == (n, n)
    np.testing.assert_allclose(result.cov, result.cov.T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(result.cov) > 0)
    # the posterior mean leans towards each label: sign(mean_i) = y_i on this well-separated problem
    np.testing.assert_array_equal(np.sign(result.mean), y)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_gaussian_likelihood_recovers_the_regression_posterior(n):
    K, _ = small_problem(n, variance=1.5, lengthscale=0.7)
    targets = np.array([0.3, -0.8, 1.1])[:n]
    noise = 0.4
    result = quadrature_posterior(K, gaussian_log_lik(targets, noise))
    Ky = K + noise * np.eye(n)
    # GPML eqs 2.23–2.24 at the training inputs, and eq 2.30
    mean = K @ np.linalg.solve(Ky, targets)
    cov = K - K @ np.linalg.solve(Ky, K)
    log_evidence = multivariate_normal(np.zeros(n), Ky).logpdf(targets)
    assert result.log_evidence == pytest.approx(log_evidence, abs=1e-9)
    np.testing.assert_allclose(result.mean, mean, atol=1e-9)
    np.testing.assert_allclose(result.cov, cov, atol=1e-9)


def test_quadrature_has_converged_at_the_default_number_of_nodes():
    K, y = small_problem(3)
    coarse = quadrature_posterior(K, logistic_log_lik(y), n_nodes=40)
    fine = quadrature_posterior(K, logistic_log_lik(y), n_nodes=80)
    assert coarse.log_evidence == pytest.approx(fine.log_evidence, abs=1e-8)
    np.testing.assert_allclose(coarse.mean, fine.mean, atol=1e-8)
    np.testing.assert_allclose(coarse.cov, fine.cov, atol=1e-8)


def test_quadrature_warning_is_a_convergence_warning():
    assert issubclass(QuadratureWarning, ConvergenceWarning)


def test_quadrature_options_are_keyword_only():
    K, y = small_problem(2)
    with pytest.raises(TypeError):
        quadrature_posterior(K, probit_log_lik(y), 60)
    with pytest.raises(TypeError):
        importance_sampling_evidence(K, probit_log_lik(y), 0)
    with pytest.raises(TypeError):
        elliptical_slice_sampling(K, probit_log_lik(y), 0, 10)


def test_quadrature_warns_when_a_wide_prior_is_not_resolved():
    # probit under prior variance 100: the 60-node mean is off by ~1 % of the posterior sd
    k = 100.0
    _, mean, _ = tilted_probit_moments(1.0, 0.0, k)
    with pytest.warns(QuadratureWarning, match="60 and 45 nodes"):
        coarse = quadrature_posterior(np.array([[k]]), probit_log_lik(np.array([1.0])))
    # five times the nodes: the error shrinks (slowly: the rule converges algebraically here)
    with pytest.warns(QuadratureWarning):
        finer = quadrature_posterior(np.array([[k]]), probit_log_lik(np.array([1.0])), n_nodes=300)
    assert abs(finer.mean[0] - mean) < 0.1 * abs(coarse.mean[0] - mean)
    # a likelihood that is smooth on the prior's scale is resolved: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K, y = small_problem(3)
        quadrature_posterior(K, logistic_log_lik(y))
        quadrature_posterior(np.array([[10.0]]), probit_log_lik(np.array([1.0])))


def test_quadrature_refuses_more_than_three_points():
    K = SEKernel().K(np.arange(4.0))
    with pytest.raises(ValueError, match="n ≤ 3"):
        quadrature_posterior(K, probit_log_lik(np.ones(4)))


@pytest.mark.parametrize("n_nodes", [2, 1000])
def test_quadrature_refuses_an_unusable_number_of_nodes(n_nodes):
    K, y = small_problem(2)
    with pytest.raises(ValueError, match="n_nodes"):
        quadrature_posterior(K, probit_log_lik(y), n_nodes=n_nodes)


# --------------------------------------------------------------------------- importance sampling
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("likelihood", ["logistic", "probit"])
def test_importance_sampling_with_the_prior_agrees_with_quadrature(n, likelihood):
    K, y = small_problem(n)
    log_lik = logistic_log_lik(y) if likelihood == "logistic" else probit_log_lik(y)
    reference = quadrature_posterior(K, log_lik).log_evidence
    estimate = importance_sampling_evidence(K, log_lik, rng=0, n_samples=50_000)
    assert isinstance(estimate, EvidenceEstimate)
    assert 0 < estimate.std_error < 0.02
    assert abs(estimate.log_evidence - reference) < N_SIGMA * estimate.std_error
    assert 0 < estimate.effective_sample_size <= estimate.n_samples


def test_importance_sampling_with_a_fitted_proposal_is_more_precise():
    K, y = small_problem(3)
    log_lik = logistic_log_lik(y)
    exact = quadrature_posterior(K, log_lik)
    prior_proposal = importance_sampling_evidence(K, log_lik, rng=1, n_samples=20_000)
    fitted = importance_sampling_evidence(
        K, log_lik, rng=1, n_samples=20_000, proposal_mean=exact.mean, proposal_cov=1.5 * exact.cov
    )
    assert abs(fitted.log_evidence - exact.log_evidence) < N_SIGMA * fitted.std_error
    assert fitted.std_error < prior_proposal.std_error
    assert fitted.effective_sample_size > prior_proposal.effective_sample_size


def test_importance_sampling_is_exact_when_the_proposal_is_the_posterior():
    # Gaussian likelihood: the posterior is Gaussian, every weight equals p(y), the error vanishes
    K, _ = small_problem(3, variance=1.5)
    targets, noise = np.array([0.3, -0.8, 1.1]), 0.4
    exact = quadrature_posterior(K, gaussian_log_lik(targets, noise))
    estimate = importance_sampling_evidence(
        K, gaussian_log_lik(targets, noise), rng=2, n_samples=1000, proposal_mean=exact.mean, proposal_cov=exact.cov
    )
    assert estimate.log_evidence == pytest.approx(exact.log_evidence, abs=1e-8)
    assert estimate.std_error < 1e-8
    assert estimate.effective_sample_size == pytest.approx(1000, rel=1e-8)


def test_importance_sampling_standard_error_matches_the_spread_of_repeated_runs():
    K, y = small_problem(2)
    log_lik = logistic_log_lik(y)
    rng = np.random.default_rng(3)
    runs = [importance_sampling_evidence(K, log_lik, rng=rng, n_samples=1000) for _ in range(40)]
    spread = np.std([run.log_evidence for run in runs], ddof=1)
    reported = np.mean([run.std_error for run in runs])
    # the standard deviation of 40 runs is known to about ±11 %; allow a generous band
    assert 0.7 < spread / reported < 1.4


def test_importance_sampling_batches_do_not_change_the_answer():
    K, y = small_problem(2)
    a = importance_sampling_evidence(K, logistic_log_lik(y), rng=4, n_samples=5000, batch_size=5000)
    b = importance_sampling_evidence(K, logistic_log_lik(y), rng=4, n_samples=5000, batch_size=700)
    # the same stream of normal draws, consumed in different block sizes
    assert a.log_evidence == pytest.approx(b.log_evidence, abs=1e-12)


# --------------------------------------------------------------------------- elliptical slice sampling
@pytest.mark.parametrize("n, likelihood", [(2, "probit"), (3, "logistic")])
def test_elliptical_slice_sampling_agrees_with_quadrature(n, likelihood):
    K, y = small_problem(n)
    log_lik = logistic_log_lik(y) if likelihood == "logistic" else probit_log_lik(y)
    exact = quadrature_posterior(K, log_lik)
    samples = elliptical_slice_sampling(K, log_lik, rng=5, n_samples=10_000, burn_in=500)
    assert samples.shape == (10_000, n)
    assert np.all(np.isfinite(samples))
    # posterior mean within N_SIGMA batch-means standard errors
    mean_se = batch_means_std_error(samples)
    assert np.all(np.abs(samples.mean(axis=0) - exact.mean) < N_SIGMA * mean_se)
    # second moments: E[f_i f_j] with its own batch-means error
    products = np.stack([samples[:, i] * samples[:, j] for i in range(n) for j in range(n)], axis=1)
    second_exact = (exact.cov + np.outer(exact.mean, exact.mean)).ravel()
    second_se = batch_means_std_error(products)
    assert np.all(np.abs(products.mean(axis=0) - second_exact) < N_SIGMA * second_se)


def test_elliptical_slice_sampling_thinning_and_burn_in():
    K, y = small_problem(2)
    samples = elliptical_slice_sampling(K, probit_log_lik(y), rng=6, n_samples=50, burn_in=10, thin=3)
    assert samples.shape == (50, 2)
    # thinning keeps every third state of the same chain
    chain = elliptical_slice_sampling(K, probit_log_lik(y), rng=6, n_samples=160, burn_in=10, thin=1)
    np.testing.assert_array_equal(samples, chain[2::3][:50])


def test_elliptical_slice_sampling_is_a_chain_of_single_steps():
    # the sampler is burn_in + n_samples·thin calls of elliptical_slice_step on one random stream
    K, y = small_problem(3)
    log_lik = logistic_log_lik(y)
    samples = elliptical_slice_sampling(K, log_lik, rng=9, n_samples=30, burn_in=5, thin=2)
    rng = np.random.default_rng(9)
    L = cholesky(K, name="K").L
    f = np.zeros(3)
    value = float(np.sum(log_lik(f)))
    states = []
    for _ in range(5 + 30 * 2):
        f, value = elliptical_slice_step(f, value, L, log_lik, rng)
        assert value == pytest.approx(float(np.sum(log_lik(f))), abs=1e-12)
        states.append(f)
    np.testing.assert_array_equal(samples, np.array(states)[5:][1::2])


# --------------------------------------------------------------------------- chain diagnostics
def ar1_chain(rho, n, seed):
    """x_t = ρ x_{t−1} + √(1−ρ²) ε_t started in its stationary N(0, 1): ρ_k = ρ^k, τ = (1+ρ)/(1−ρ)."""
    e = np.random.default_rng(seed).standard_normal(n) * np.sqrt(1.0 - rho**2)
    e[0] /= np.sqrt(1.0 - rho**2)
    return lfilter([1.0], [1.0, -rho], e)


def test_autocorrelation_is_the_biased_sample_estimator():
    x = np.random.default_rng(0).standard_normal(50).cumsum()
    centred = x - x.mean()
    direct = np.array([centred[: 50 - k] @ centred[k:] for k in range(50)]) / (centred @ centred)
    np.testing.assert_allclose(autocorrelation(x), direct, atol=1e-12)
    np.testing.assert_allclose(autocorrelation(x, max_lag=7), direct[:8], atol=1e-12)
    # columns are treated separately
    both = np.column_stack([x, x[::-1]])
    rho = autocorrelation(both, max_lag=5)
    assert rho.shape == (6, 2)
    np.testing.assert_allclose(rho[:, 0], direct[:6], atol=1e-12)
    np.testing.assert_allclose(rho[:, 1], autocorrelation(x[::-1], max_lag=5), atol=1e-12)


def test_autocorrelation_of_an_ar1_chain_decays_geometrically():
    rho = autocorrelation(ar1_chain(0.8, 200_000, seed=1), max_lag=5)
    # the sample autocorrelations of 200,000 AR(1) draws have standard errors of about 0.01 here
    np.testing.assert_allclose(rho, 0.8 ** np.arange(6), atol=0.02)


def test_a_constant_chain_is_worth_one_draw():
    chain = np.full(500, 3.7)
    np.testing.assert_array_equal(autocorrelation(chain, max_lag=10), np.ones(11))
    assert effective_sample_size(chain) == 1.0
    # one stuck coordinate among moving ones
    moving = np.random.default_rng(2).standard_normal(500)
    ess = effective_sample_size(np.column_stack([moving, np.zeros(500)]))
    assert ess.shape == (2,)
    assert ess[1] == 1.0 and ess[0] > 100


# Tolerances of the ESS checks. The estimator is random: by Sokal's estimate
# var(τ̂)/τ² ≈ 2(2M + 1)/n for a summation window of M lags, which for these chains is 3–5 %, and
# over 300 seeds the ratio ESS/truth had standard deviation 0.031 (iid, n = 10⁴), 0.041 (ρ = 0.9,
# n = 10⁵), 0.039 (ρ = 0.5) and 0.054 (ρ = −0.5, n = 2·10⁴), with extremes 0.84 and 1.16. A band of
# ±20 % is therefore at least 3.7 standard deviations wide, while an estimator that ignored the
# correlation (ESS = n) would be off by a factor 19 at ρ = 0.9 and 3 at ρ = 0.5.
ESS_TOLERANCE = 0.2


def test_iid_chain_has_effective_sample_size_n():
    n = 10_000
    ess = effective_sample_size(np.random.default_rng(3).standard_normal(n))
    assert ess == pytest.approx(n, rel=ESS_TOLERANCE)


@pytest.mark.parametrize("rho, n", [(0.9, 100_000), (0.5, 20_000), (-0.5, 20_000)])
def test_ar1_chain_has_effective_sample_size_n_times_1_minus_rho_over_1_plus_rho(rho, n):
    ess = effective_sample_size(ar1_chain(rho, n, seed=4))
    # an anticorrelated chain (ρ < 0) is worth more than n independent draws
    assert ess == pytest.approx(n * (1 - rho) / (1 + rho), rel=ESS_TOLERANCE)


def test_effective_sample_size_is_capped_and_per_column():
    # a perfectly alternating chain has τ → 0: the estimate is capped at n log10 n
    n = 1000
    alternating = np.tile([1.0, -1.0], n // 2)
    assert effective_sample_size(alternating) == pytest.approx(n * np.log10(n))
    chains = np.column_stack([ar1_chain(0.5, 20_000, seed=5), ar1_chain(0.9, 20_000, seed=6)])
    ess = effective_sample_size(chains)
    np.testing.assert_allclose(ess, [effective_sample_size(chains[:, 0]), effective_sample_size(chains[:, 1])])
    assert ess[0] > 3 * ess[1]


@pytest.mark.parametrize("bad", [np.zeros(1), np.zeros((3, 2, 2)), np.array([0.0, np.nan, 1.0])])
def test_chain_diagnostics_refuse_bad_chains(bad):
    with pytest.raises(ValueError, match="chain"):
        effective_sample_size(bad)
    with pytest.raises(ValueError, match="chain"):
        autocorrelation(bad)


def test_autocorrelation_refuses_a_lag_beyond_the_chain():
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation(np.arange(5.0), max_lag=5)


# --------------------------------------------------------------------------- the orthant probability
@pytest.mark.parametrize("variance", [0.5, 3.0, 100.0])
def test_orthant_evidence_matches_the_bivariate_normal_cdf(variance):
    """n = 2: scipy's bivariate normal CDF is exact (Genz's bvn, 1e-15); the prior variance reaches 100."""
    K, y = small_problem(2, variance=variance)
    exact = np.log(multivariate_normal(np.zeros(2), np.outer(y, y) * (K + np.eye(2))).cdf(np.zeros(2)))
    result = probit_orthant_evidence(K, y, tol=1e-5)
    assert result.converged and result.std_error <= 1e-5
    assert result.log_evidence == pytest.approx(exact, abs=N_SIGMA * result.std_error)
    assert result.log_evidence <= result.log_upper_bound  # Botev's bound ψ* ≥ log p(y)


@pytest.mark.parametrize("variance", [0.5, 3.0])
def test_orthant_evidence_matches_quadrature(variance):
    K, y = small_problem(3, variance=variance)
    exact = quadrature_posterior(K, probit_log_lik(y)).log_evidence
    result = probit_orthant_evidence(K, y, tol=1e-5)
    assert result.log_evidence == pytest.approx(exact, abs=N_SIGMA * result.std_error)
    assert result.log_evidence <= result.log_upper_bound


def test_a_single_probit_point_has_orthant_probability_one_half():
    result = probit_orthant_evidence(np.array([[7.0]]), np.array([-1.0]))
    assert result.log_evidence == np.log(0.5) and result.std_error == 0.0


def test_an_exact_zero_uniform_does_not_make_the_orthant_weights_nan():
    """A scrambled Sobol coordinate can be exactly 0 (it happened on the digits 3-vs-5 problem, n = 183, and the
    evidence came out NaN): its inverse CDF is −∞. The weights stay finite, and the other points' are untouched."""
    from gpc_ref.exact import _tilted_log_weights

    C = np.array([[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [0.2, -0.3, 0.0]])
    U = np.array([[0.0, 0.5], [1e-300, 0.5], [0.3, 0.7]])
    log_w = _tilted_log_weights(C, np.array([0.5, -0.2]), U)
    assert np.all(np.isfinite(log_w))
    assert log_w[1] == _tilted_log_weights(C, np.array([0.5, -0.2]), U[1:])[0]


def test_orthant_evidence_against_a_plain_monte_carlo_count():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(8, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=8) > 0, 1.0, -1.0)
    K = SEKernel(variance=4.0, lengthscale=1.0).K(X)
    exact = probit_orthant_evidence(K, y)
    draws = np.random.default_rng(0).multivariate_normal(np.zeros(8), K + np.eye(8), size=400_000)
    frequency = np.mean(np.all(y * draws > 0, axis=1))
    assert abs(frequency - np.exp(exact.log_evidence)) < N_SIGMA * np.sqrt(frequency * (1 - frequency) / 400_000)


def test_orthant_standard_error_matches_the_spread_of_repeated_runs():
    """At a large-σ_f corner of a 30-point problem: ten randomisations, reported s.e. against their spread."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 1))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    K = SEKernel(variance=np.exp(8.0), lengthscale=0.3).K(X)
    runs = [probit_orthant_evidence(K, y, rng=seed, tol=1.0) for seed in range(10)]  # one round each
    estimates = np.array([run.log_evidence for run in runs])
    ratio = np.sqrt(np.mean([run.std_error**2 for run in runs])) / np.std(estimates, ddof=1)
    assert 0.5 < ratio < 2.0
    assert np.all(estimates <= runs[0].log_upper_bound)


def test_orthant_evidence_is_reproducible_and_warns_when_the_budget_runs_out():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    K = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    assert probit_orthant_log_evidence(K, y) == probit_orthant_log_evidence(K, y)
    assert probit_orthant_log_evidence(K, y, rng=5) == probit_orthant_log_evidence(K, y, rng=5)
    with pytest.warns(ConvergenceWarning, match="raise max_points"):
        result = probit_orthant_evidence(K, y, tol=1e-9, max_points=2**15)
    assert not result.converged and result.n_samples == 2**15
    with pytest.raises(ValueError, match="-1, \\+1"):
        probit_orthant_evidence(K, np.where(y > 0, 1.0, 0.0))
    with pytest.raises(ValueError, match="tol"):
        probit_orthant_evidence(K, y, tol=0.0)


def test_two_class_multinomial_probit_is_the_binary_probit_orthant():
    """C = 2: z⁰ − z¹ ~ N(0, 2(K + I)), so p(c) is the probit orthant probability with labels 1 − 2c."""
    K, _ = small_problem(3)
    codes = np.array([0, 1, 0])
    multinomial = multinomial_probit_orthant_evidence(K, codes, rng=1)
    binary = probit_orthant_evidence(K, 1.0 - 2.0 * codes, rng=1)
    assert multinomial.log_evidence == pytest.approx(binary.log_evidence, abs=1e-12)


def test_multinomial_probit_orthant_against_simulated_argmax():
    """n = 3, C = 3, one kernel per class: count how often argmax_c(f_i^c + ε_i^c) = c_i for every i."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 2))
    K = np.stack([SEKernel(variance=v, lengthscale=1.0).K(X) for v in (0.5, 2.0, 4.0)])
    codes = np.array([0, 2, 1])
    exact = multinomial_probit_orthant_evidence(K, codes, tol=1e-4)
    F = np.stack([np.linalg.cholesky(K[c]) @ rng.standard_normal((3, 400_000)) for c in range(3)], axis=2)
    hits = np.all((F + rng.standard_normal(F.shape)).argmax(axis=2) == codes[:, None], axis=0)
    frequency = hits.mean()
    assert abs(frequency - np.exp(exact.log_evidence)) < N_SIGMA * np.sqrt(frequency * (1 - frequency) / 400_000)


# --------------------------------------------------------------------------- reproducibility
def test_seeded_runs_are_reproducible():
    K, y = small_problem(3)
    log_lik = logistic_log_lik(y)
    a = elliptical_slice_sampling(K, log_lik, rng=7, n_samples=200, burn_in=20)
    b = elliptical_slice_sampling(K, log_lik, rng=np.random.default_rng(7), n_samples=200, burn_in=20)
    c = elliptical_slice_sampling(K, log_lik, rng=8, n_samples=200, burn_in=20)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    e1 = importance_sampling_evidence(K, log_lik, rng=7, n_samples=3000)
    e2 = importance_sampling_evidence(K, log_lik, rng=np.random.default_rng(7), n_samples=3000)
    e3 = importance_sampling_evidence(K, log_lik, rng=8, n_samples=3000)
    assert e1 == e2
    assert e1.log_evidence != e3.log_evidence


@pytest.mark.parametrize("bad_rng", [None, 1.5, "seed"])
def test_random_functions_refuse_an_unseeded_rng(bad_rng):
    K, y = small_problem(2)
    with pytest.raises(ValueError, match="rng"):
        importance_sampling_evidence(K, probit_log_lik(y), rng=bad_rng, n_samples=10)
    with pytest.raises(ValueError, match="rng"):
        elliptical_slice_sampling(K, probit_log_lik(y), rng=bad_rng, n_samples=10)
