"""Tests of gpc_ref.gibbs: truncated-normal draws, the cone sampler, agreement with exact posteriors, predictions."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import truncnorm

from gpc_ref.exact import effective_sample_size
from gpc_ref.exact import quadrature_posterior
from gpc_ref.gibbs import _cone_sweep
from gpc_ref.gibbs import gibbs_predict_latent
from gpc_ref.gibbs import gibbs_predict_proba
from gpc_ref.gibbs import gibbs_probit_binary
from gpc_ref.gibbs import gibbs_probit_multiclass
from gpc_ref.gibbs import prior_sampling_log_evidence
from gpc_ref.gibbs import sample_cone_truncated_normal
from gpc_ref.gibbs import sample_truncated_normal
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.likelihoods import ProbitLikelihood


def _within(sample_mean, reference, sd, ess, n_se=4.5):
    se = sd / np.sqrt(ess)
    assert np.all(np.abs(sample_mean - reference) < n_se * se + 1e-3), (sample_mean, reference, se)


# ----------------------------------------------------------------------------- truncated normals
@pytest.mark.parametrize(
    "mean, bound, side",
    [(0.0, 0.0, "lower"), (0.5, -1.0, "upper"), (-8.0, 0.0, "lower"), (30.0, 0.0, "upper"), (0.0, 3.0, "lower")],
)
def test_truncated_normal_draws_match_scipy_moments(mean, bound, side):
    rng = np.random.default_rng(0)
    mu = np.full(100_000, mean)
    if side == "lower":
        x = sample_truncated_normal(mu, rng=rng, lower=bound)
        ref = truncnorm(bound - mean, np.inf, loc=mean)
        assert np.all(x > bound)
    else:
        x = sample_truncated_normal(mu, rng=rng, upper=bound)
        ref = truncnorm(-np.inf, bound - mean, loc=mean)
        assert np.all(x < bound)
    assert np.all(np.isfinite(x))
    assert abs(x.mean() - ref.mean()) < 5 * ref.std() / np.sqrt(len(x))
    assert x.std() == pytest.approx(ref.std(), rel=0.02)


def test_cone_draws_are_exact_and_the_sweep_agrees():
    lik = MultinomialProbitLikelihood()
    M = np.array([[0.3, -0.5, 1.2], [2.0, 0.0, -1.0], [-1.0, 1.0, 0.5], [-3.0, 1.0, 0.0]])
    t = np.array([0, 1, 2, 0])
    P, _ = lik.cone_mean_shift(t, M)
    S = 30_000
    rng = np.random.default_rng(1)
    Y, swept = sample_cone_truncated_normal(np.repeat(t, S), np.repeat(M, S, axis=0), rng=rng)
    Y = Y.reshape(4, S, 3)
    assert swept == 0
    assert np.all(np.argmax(Y, axis=2) == t[:, None])
    _within(Y.mean(axis=1), M + P, Y.std(axis=1), S)
    # the component sweep (a Markov chain on the cone) has the same stationary means
    Yc = np.eye(3)[t]
    chain = []
    for _ in range(8_000):
        Yc = _cone_sweep(t, M, Yc, rng)
        chain.append(Yc)
    chain = np.array(chain)
    assert np.all(np.argmax(chain, axis=2) == t[None, :])
    ess = effective_sample_size(chain.reshape(len(chain), -1)).reshape(4, 3)
    _within(chain.mean(axis=0), M + P, chain.std(axis=0), ess)
    # forcing the fallback keeps every draw inside its cone
    Y2, swept = sample_cone_truncated_normal(t, M, rng=rng, Y_current=np.eye(3)[t], max_rounds=0)
    assert swept == 4 and np.all(np.argmax(Y2, axis=1) == t)


# ----------------------------------------------------------------------------- exact posteriors of tiny problems
def test_binary_gibbs_recovers_exact_posterior_moments():
    X = np.array([[0.0], [0.7], [2.0]])
    t = np.array([1, 1, -1])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(C, lambda f: ProbitLikelihood().log_p(np.broadcast_to(t, f.shape), f), n_nodes=60)
    samples = gibbs_probit_binary(C, t, rng=0, n_samples=8000, burn_in=200)
    m = samples.m[:, :, 0]
    ess = effective_sample_size(m)
    _within(m.mean(axis=0), exact.mean, m.std(axis=0), ess)
    # variances: the s.e. of a sample variance is about σ²√(2/ESS)
    assert np.all(np.abs(m.var(axis=0) - np.diag(exact.cov)) < 4.5 * np.diag(exact.cov) * np.sqrt(2 / ess))


def _prior_reference(C, t, n_draws=30_000, seed=0):
    """Posterior moments of a tiny K-class problem by weighting prior draws with P(t | M) (brute force)."""
    rng = np.random.default_rng(seed)
    n, K = len(t), int(t.max()) + 1
    L = np.linalg.cholesky(C)
    draws = np.einsum("ij,sjk->sik", L, rng.standard_normal((n_draws, n, K)))
    log_p = MultinomialProbitLikelihood(24).log_p(np.tile(t, n_draws), draws.reshape(-1, K)).reshape(n_draws, n)
    w = np.exp(log_p.sum(axis=1) - logsumexp(log_p.sum(axis=1)))
    mean = np.einsum("s,sik->ik", w, draws)
    return mean, np.einsum("s,sik->ik", w, (draws - mean) ** 2), 1.0 / np.sum(w**2)


def test_multiclass_gibbs_recovers_posterior_moments_of_a_tiny_problem():
    X = np.array([[0.0], [0.8], [1.6]])
    t = np.array([0, 1, 2])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    mean_ref, var_ref, ess_ref = _prior_reference(C, t)
    samples = gibbs_probit_multiclass(C, t, rng=0, n_samples=1000, burn_in=100, thin=3)
    m = samples.m
    ess = effective_sample_size(m.reshape(len(m), -1)).reshape(3, 3)
    se_total = np.sqrt(m.var(axis=0) / ess + var_ref / ess_ref)
    assert np.all(np.abs(m.mean(axis=0) - mean_ref) < 4.5 * se_total + 1e-3)
    # class contrasts m_nk − mean_k m_nk mix fast: a sharper check
    contrast = m - m.mean(axis=2, keepdims=True)
    ref_contrast = mean_ref - mean_ref.mean(axis=1, keepdims=True)
    ess_c = effective_sample_size(contrast.reshape(len(m), -1)).reshape(3, 3)
    assert np.all(np.abs(contrast.mean(axis=0) - ref_contrast) < 4.5 * np.sqrt(contrast.var(axis=0) / ess_c + 0.002**2))
    assert np.all(np.abs(m.var(axis=0) - var_ref) < 4.5 * var_ref * np.sqrt(2 / ess) + 0.02)
    assert samples.n_swept == 0


def test_two_class_multiclass_gibbs_matches_binary_posterior():
    """f = (m_2 − m_1)/√2 of the K = 2 sampler has the binary probit posterior with the same kernel."""
    X = np.array([[0.0], [0.7], [2.0]])
    t = np.array([1, 1, -1])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(C, lambda f: ProbitLikelihood().log_p(np.broadcast_to(t, f.shape), f), n_nodes=60)
    samples = gibbs_probit_multiclass(C, (t > 0).astype(int), rng=1, n_samples=1000, burn_in=100, thin=3)
    f = (samples.m[:, :, 1] - samples.m[:, :, 0]) / np.sqrt(2.0)
    _within(f.mean(axis=0), exact.mean, f.std(axis=0), effective_sample_size(f))


def test_prior_sampling_evidence_matches_quadrature_for_three_points():
    X = np.array([[0.0], [0.7], [2.0]])
    t = np.array([1, 1, -1])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(C, lambda f: ProbitLikelihood().log_p(np.broadcast_to(t, f.shape), f), n_nodes=60)
    estimate = prior_sampling_log_evidence(C, t, rng=0, n_samples=20_000, binary=True)
    assert abs(estimate.log_evidence - exact.log_evidence) < 4 * estimate.std_error
    multi = prior_sampling_log_evidence(C, np.array([0, 1, 2]), rng=0, n_samples=200)
    assert np.isfinite(multi.log_evidence) and multi.n_samples == 200


# ----------------------------------------------------------------------------- predictions and diagnostics
def test_predictions_sum_to_one_and_binary_formula():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    t = np.digitize(X[:, 0], [-0.4, 0.4])
    kernel = SEKernel(variance=2.0, lengthscale=0.8)
    samples = gibbs_probit_multiclass(kernel.K(X), t, rng=0, n_samples=50, burn_in=20, thin=2)
    X_new = rng.normal(size=(10, 2))
    p = gibbs_predict_proba(samples, kernel.K(X, X_new), kernel.diag(X_new))
    assert p.shape == (10, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert samples.m.shape == (50, 20, 3) and samples.log_likelihood.shape == (60,)
    quiet = gibbs_probit_multiclass(kernel.K(X), t, rng=0, n_samples=50, burn_in=20, thin=2, trace=False)
    np.testing.assert_array_equal(quiet.m, samples.m)  # the trace consumes no random numbers
    assert quiet.log_likelihood.size == 0
    with pytest.raises(ValueError, match="trace=False"):
        quiet.effective_sample_size
    p_few = gibbs_predict_proba(samples, kernel.K(X, X_new), kernel.diag(X_new), max_samples=5)
    np.testing.assert_allclose(p_few.sum(axis=1), 1.0, atol=1e-9)
    yb = np.where(t == 2, 1, -1)
    binary = gibbs_probit_binary(kernel.K(X), yb, rng=0, n_samples=40, burn_in=10)
    mean, var = gibbs_predict_latent(binary, kernel.K(X, X_new), kernel.diag(X_new))
    from scipy.special import ndtr

    expected = np.mean(ndtr(mean[:, :, 0] / np.sqrt(1 + var[:, 0])), axis=0)
    np.testing.assert_allclose(gibbs_predict_proba(binary, kernel.K(X, X_new), kernel.diag(X_new))[:, 1], expected)
    # the retained dual weights reproduce the conditional mean Σ y through C α
    np.testing.assert_allclose(
        kernel.K(X) @ binary.alpha[0, :, 0], kernel.K(X) @ np.linalg.solve(np.eye(20) + kernel.K(X), binary.y[0, :, 0])
    )


def test_runs_are_reproducible():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 2))
    t = np.digitize(X[:, 1], [0.0])
    C = SEKernel().K(X)
    a = gibbs_probit_multiclass(C, t, rng=5, n_samples=20, burn_in=5)
    b = gibbs_probit_multiclass(C, t, rng=5, n_samples=20, burn_in=5)
    np.testing.assert_array_equal(a.m, b.m)
    c = gibbs_probit_binary(C, 2 * t - 1, rng=np.random.default_rng(2), n_samples=20, burn_in=5)
    d = gibbs_probit_binary(C, 2 * t - 1, rng=np.random.default_rng(2), n_samples=20, burn_in=5)
    np.testing.assert_array_equal(c.y, d.y)


def test_hard_inputs_stay_finite():
    """Duplicate points, a huge variance, extreme lengthscales and separable labels: finite samples."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    X = np.vstack([X, X[:3]])
    t = np.digitize(X[:, 0], [-0.3, 0.3])
    for kernel in (
        SEKernel(variance=1e6, jitter=1e-6),
        SEKernel(lengthscale=1e-3),
        SEKernel(lengthscale=1e3, jitter=1e-6),
    ):
        chain = gibbs_probit_multiclass(kernel.K(X), t, rng=0, n_samples=20, burn_in=20)
        binary = gibbs_probit_binary(kernel.K(X), np.where(t == 2, 1, -1), rng=0, n_samples=20, burn_in=20)
        p = gibbs_predict_proba(chain, kernel.K(X, X[:4]), kernel.diag(X[:4]))
        assert np.all(np.isfinite(chain.m)) and np.all(np.isfinite(binary.m)) and np.all(np.isfinite(p))
        assert np.all(np.argmax(chain.y, axis=2) == t[None, :])


def test_bad_inputs_give_clear_errors():
    X = np.random.default_rng(0).normal(size=(9, 2))
    C = SEKernel().K(X)
    t = np.array([0, 1, 2] * 3)
    with pytest.raises(ValueError, match="outside 0..2"):
        gibbs_probit_multiclass(C, np.where(t == 0, 5, t), rng=0, n_classes=3)
    with pytest.raises(ValueError, match="no examples"):
        gibbs_probit_multiclass(C, np.where(t == 2, 0, t), rng=0, n_classes=3)
    with pytest.raises(ValueError, match="n_samples"):
        gibbs_probit_binary(C, np.where(t == 0, 1, -1), rng=0, n_samples=0)
    with pytest.raises(ValueError, match="burn_in"):
        gibbs_probit_binary(C, np.where(t == 0, 1, -1), rng=0, burn_in=-1)
    with pytest.raises(ValueError, match="thin"):
        gibbs_probit_multiclass(C, t, rng=0, thin=0)
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        gibbs_probit_binary(C, t, rng=0)
    with pytest.raises(ValueError, match="Generator or an integer seed"):
        gibbs_probit_multiclass(C, t, rng=None)
    with pytest.raises(ValueError, match="exactly one"):
        sample_truncated_normal(np.zeros(2), rng=0)
    with pytest.raises(ValueError, match="n >= 2"):
        effective_sample_size([1.0])
    # the evidence estimate checks its covariance stack against the classes, and its number of draws
    with pytest.raises(ValueError, match=r"one matrix or one per class \(3\); got 2"):
        prior_sampling_log_evidence(np.stack([C, C]), t, rng=0)
    with pytest.raises(ValueError, match=r"one matrix or one per class \(1\); got 3"):
        prior_sampling_log_evidence(np.stack([C, C, C]), np.where(t == 0, 1, -1), rng=0, binary=True)
    with pytest.raises(ValueError, match="n_samples"):
        prior_sampling_log_evidence(C, t, rng=0, n_samples=0)
    with pytest.raises(TypeError):
        gibbs_probit_binary(C, np.where(t == 0, 1, -1), 0)  # rng is keyword-only
