"""Tests of the binary Laplace approximation (gpc_ref.laplace) and its MAP / ML-II hyperparameters."""

import dataclasses
import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient

from gpc_ref import ConvergenceWarning
from gpc_ref.exact import quadrature_posterior
from gpc_ref.gaussian_integrals import sigmoid_gaussian_exact
from gpc_ref.hyperparameters import LOG_PARAMETER_BOUNDS
from gpc_ref.hyperparameters import theta_box
from gpc_ref.hyperpriors import log_hyperprior
from gpc_ref.hyperpriors import wb_scale
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import LaplaceMode
from gpc_ref.laplace import MAPResult
from gpc_ref.laplace import laplace_evidence
from gpc_ref.laplace import laplace_evidence_gradient
from gpc_ref.laplace import laplace_mode
from gpc_ref.laplace import laplace_mode_core
from gpc_ref.laplace import laplace_predict_latent
from gpc_ref.laplace import laplace_predict_proba
from gpc_ref.laplace import map_hyperparameters
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood


def make_data(rng, n=40, d=2, noise=0.5):
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


# ------------------------------------------------------------------ scikit-learn as an oracle
@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (4.0, 0.6), (30.0, 2.5)])
def test_log_evidence_gradient_and_predictions_match_scikit_learn(rng, variance, lengthscale):
    gp = pytest.importorskip("sklearn.gaussian_process")
    from sklearn.gaussian_process._gpc import COEFS
    from sklearn.gaussian_process._gpc import LAMBDAS
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    X, y = make_data(rng, n=50)
    X_test = rng.normal(size=(25, 2))
    kernel = SEKernel(variance=variance, lengthscale=lengthscale, jitter=0.0)
    sk_kernel = ConstantKernel(variance, "fixed") * RBF(lengthscale, "fixed")
    sk = gp.GaussianProcessClassifier(sk_kernel, optimizer=None).fit(X, y)
    ours = laplace_evidence(kernel, X, y)
    np.testing.assert_allclose(ours.log_evidence, sk.log_marginal_likelihood_value_, rtol=1e-6)
    # the gradient, through a copy of the model whose kernel parameters are free
    sk_free = gp.GaussianProcessClassifier(ConstantKernel(variance) * RBF(lengthscale), optimizer=None).fit(X, y)
    _, sk_gradient = sk_free.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    np.testing.assert_allclose(ours.gradient, sk_gradient, rtol=1e-6, atol=1e-9)
    # predictions with scikit-learn's erf-mixture constants
    mean, var = laplace_predict_latent(ours.mode, kernel, X, X_test)
    p = laplace_predict_proba(mean, var, erf_scales=np.sqrt(2.0) * LAMBDAS.ravel(), erf_coefficients=COEFS.ravel())
    np.testing.assert_allclose(p, sk.predict_proba(X_test)[:, 1], rtol=1e-6)


# ------------------------------------------------------------------ the Newton iteration
def test_stable_newton_equals_the_papers_iteration(rng):
    X, y = make_data(rng, n=15)
    K = SEKernel(variance=3.0, lengthscale=0.8).K(X)
    mode = laplace_mode(K, y)
    # W&B 1997 eq 7 literally, f_new = (K⁻¹ + W)⁻¹ (W f + t − π), with dense inverses (test only)
    f = np.zeros(len(y))
    t = (y + 1) / 2
    for _ in range(30):
        pi = 1.0 / (1.0 + np.exp(-f))
        W = np.diag(pi * (1 - pi))
        f = np.linalg.solve(np.linalg.inv(K) + W, W @ f + t - pi)
    np.testing.assert_allclose(mode.f, f, rtol=1e-7, atol=1e-9)
    # stationarity: f̂ = K ∇log p(y|f̂), and a = K⁻¹f̂ = t − π̂
    np.testing.assert_allclose(mode.f, K @ mode.grad_log_lik, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(mode.a, mode.grad_log_lik, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(mode.f, K @ mode.a, rtol=1e-12, atol=1e-12)
    # L is the Cholesky factor of B = I + W½ K W½
    sw = np.sqrt(mode.W)
    np.testing.assert_allclose(mode.L @ mode.L.T, np.eye(len(y)) + sw[:, None] * K * sw, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ the plain core (Algorithm 4.1) and the driver
@pytest.mark.parametrize("likelihood", [LogisticLikelihood(), ProbitLikelihood()], ids=["logistic", "probit"])
def test_core_and_driver_agree_where_no_step_is_halved(rng, likelihood):
    """laplace_mode runs the core's step functions: where it halves no step, it is the core exactly."""
    compared = 0
    for _ in range(40):
        n, d = int(rng.integers(5, 60)), int(rng.integers(2, 5))
        X, y = make_data(rng, n=n, d=d)
        K = SEKernel(variance=float(np.exp(rng.uniform(-2, 5))), lengthscale=float(np.exp(rng.uniform(-1, 1.5))),
                     jitter=1e-6).K(X)  # fmt: skip
        driver, core = laplace_mode(K, y, likelihood=likelihood), laplace_mode_core(K, y, likelihood)
        assert driver.converged and core.converged
        if driver.n_halved == 0:
            compared += 1
            assert driver.n_iter == core.n_iter
            np.testing.assert_allclose(core.f, driver.f, rtol=0, atol=1e-12)
            assert core.log_evidence == pytest.approx(driver.log_evidence, rel=1e-13, abs=1e-13)
    assert compared >= 35  # the safeguard is rare at moderate signal variances


def test_driver_halves_steps_where_the_core_fails_and_says_so():
    """At σ_f² = 1e7 on separable data a full Newton step can overshoot: here the box's iteration does not
    converge in 100 steps (on this machine; elsewhere it may recover, to the same mode), while the driver
    halves that step, reports it, and reaches a stationary mode."""
    rng = np.random.default_rng(5)
    X, y = make_data(rng, n=46, d=2, noise=0.0)
    K = SEKernel(variance=1e7, lengthscale=1.0, jitter=1e-6).K(X)
    driver = laplace_mode(K, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the core never warns
        core = laplace_mode_core(K, y, LogisticLikelihood())
    assert driver.converged and driver.n_halved > 0
    assert driver.gradient_norm <= np.sqrt(1e-9) * max(1.0, np.max(np.abs(driver.grad_log_lik)))
    assert core.n_halved == 0
    assert not core.converged or core.log_evidence == pytest.approx(driver.log_evidence, abs=1e-6)


def test_log_evidence_equals_papers_eq_10(rng):
    X, y = make_data(rng, n=12)
    K = SEKernel(variance=2.0, lengthscale=1.2).K(X)
    mode = laplace_mode(K, y)
    n = len(y)
    # W&B 1997 eqs 3 and 10 with dense determinants (test only)
    psi = (
        np.sum(LogisticLikelihood().log_p(y, mode.f))
        - 0.5 * mode.f @ np.linalg.solve(K, mode.f)
        - 0.5 * np.linalg.slogdet(K)[1]
        - 0.5 * n * np.log(2 * np.pi)
    )
    eq10 = psi - 0.5 * np.linalg.slogdet(np.linalg.inv(K) + np.diag(mode.W))[1] + 0.5 * n * np.log(2 * np.pi)
    np.testing.assert_allclose(mode.log_evidence, eq10, rtol=1e-9)


def test_warm_start_gives_the_same_mode(rng):
    X, y = make_data(rng)
    kernel = SEKernel(variance=5.0, lengthscale=1.0)
    cold = laplace_mode(kernel.K(X), y)
    warm = laplace_mode(kernel.K(X), y, f_init=cold.f + 0.1)
    np.testing.assert_allclose(warm.f, cold.f, rtol=1e-7, atol=1e-9)
    assert warm.n_iter <= cold.n_iter


def test_loose_tolerance_of_the_paper_still_gives_a_good_evidence(rng):
    X, y = make_data(rng)
    K = SEKernel(variance=5.0, lengthscale=1.0).K(X)
    tight, loose = laplace_mode(K, y), laplace_mode(K, y, tol=1e-4)
    assert loose.n_iter <= tight.n_iter
    np.testing.assert_allclose(loose.log_evidence, tight.log_evidence, rtol=1e-5)


def test_non_convergence_warns_with_the_iteration_count(rng):
    X, y = make_data(rng)
    K = SEKernel(variance=100.0, lengthscale=1.0).K(X)
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        mode = laplace_mode(K, y, max_iter=2)
    assert not mode.converged and mode.n_iter == 2
    # the iterate is not a mode: the gradient of Ψ reported with it is far from zero
    assert mode.gradient_norm > 1e-2
    # with enough iterations the same problem converges to a point where ∇Ψ = ∇log p(y|f) − K⁻¹f vanishes
    full = laplace_mode(K, y)
    assert full.converged and full.gradient_norm < 1e-4
    np.testing.assert_allclose(full.grad_log_lik - np.linalg.solve(K, full.f), 0.0, atol=1e-3)


def test_converged_means_a_small_gradient_of_psi(rng):
    """W&B's rule on W alone is blind near f = 0; converged also requires ∇Ψ ≈ 0 (gradient_norm)."""
    X, y = make_data(rng)
    K = SEKernel(variance=4.0, lengthscale=1.0).K(X)
    mode = laplace_mode(K, y, tol=1e-9)
    assert mode.converged
    assert mode.gradient_norm <= np.sqrt(1e-9) * max(1.0, np.max(np.abs(mode.grad_log_lik)))
    np.testing.assert_allclose(mode.gradient_norm, np.max(np.abs(mode.grad_log_lik - mode.a)), rtol=1e-12)
    # one Newton step from f = 0 is reported as not converged whatever the tolerance
    with pytest.warns(ConvergenceWarning, match="did not converge in 1 iterations"):
        one = laplace_mode(K, y, tol=1.0, max_iter=1)
    assert not one.converged


def test_probit_likelihood_mode_is_stationary(rng):
    X, y = make_data(rng)
    K = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    mode = laplace_mode(K, y, likelihood=ProbitLikelihood())
    np.testing.assert_allclose(mode.f, K @ mode.grad_log_lik, rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=2.0, lengthscale=0.9),
        SEKernel(variance=2.0, lengthscale=[0.7, 1.8], bias=0.5),
        SEKernel(variance=0.5, lengthscale=[1.2, 0.4], bias=0.2, jitter=1e-3, learn_jitter=True),
    ],
)
@pytest.mark.parametrize("likelihood", [LogisticLikelihood(), ProbitLikelihood()])
def test_evidence_gradient_matches_finite_differences(rng, kernel, likelihood):
    X, y = make_data(rng, n=30)
    result = laplace_evidence(kernel, X, y, likelihood=likelihood)
    assert result.theta_names == tuple(kernel.theta_names)

    def log_evidence(theta):
        return laplace_evidence(kernel.with_theta(theta), X, y, likelihood=likelihood).log_evidence

    numeric = finite_difference_gradient(log_evidence, kernel.theta, step=1e-5)
    np.testing.assert_allclose(result.gradient, numeric, rtol=1e-5, atol=1e-6)


def test_implicit_term_matters(rng):
    # dropping the implicit dependence of the mode on θ gives a wrong gradient
    X, y = make_data(rng, n=30, noise=0.1)
    kernel = SEKernel(variance=10.0, lengthscale=1.0)
    result = laplace_evidence(kernel, X, y)
    K, dK, mode = kernel.K(X), kernel.gradients(X), result.mode
    sw = np.sqrt(mode.W)
    R = sw[:, None] * np.linalg.solve(mode.L @ mode.L.T, np.diag(sw))
    explicit = np.array([0.5 * mode.a @ C @ mode.a - 0.5 * np.sum(R * C) for C in dK])
    assert np.max(np.abs(explicit - result.gradient)) > 1e-2
    np.testing.assert_allclose(laplace_evidence_gradient(mode, K, dK), result.gradient)


def test_hyperprior_gradient_and_coordinates():
    kernel = SEKernel(variance=2.0, lengthscale=[0.5, 3.0], bias=0.1)
    value, gradient = log_hyperprior(kernel)

    def func(theta):
        return log_hyperprior(kernel.with_theta(theta))[0]

    np.testing.assert_allclose(gradient, finite_difference_gradient(func, kernel.theta), rtol=1e-6, atol=1e-8)
    # W&B's coordinates: log w = −2 log ℓ; the prior mean −3 on log w is ℓ = e^{1.5}
    at_prior_mean = SEKernel(variance=np.exp(-3.0), lengthscale=np.exp(1.5), bias=np.exp(-3.0))
    np.testing.assert_allclose(log_hyperprior(at_prior_mean)[1], 0.0, atol=1e-12)
    assert np.isfinite(value)


# ------------------------------------------------------------------ against the exact posterior
def test_laplace_is_close_to_exact_when_the_prior_dominates():
    X = np.array([[0.0], [0.7], [1.5]])
    y = np.array([1.0, 1.0, -1.0])
    K = SEKernel(variance=0.05, lengthscale=1.0).K(X)
    mode = laplace_mode(K, y)
    exact = quadrature_posterior(K, lambda f: LogisticLikelihood().log_p(y, f), n_nodes=40)
    np.testing.assert_allclose(mode.log_evidence, exact.log_evidence, atol=3e-4)
    np.testing.assert_allclose(mode.f, exact.mean, atol=1e-3)
    sigma = K - K @ np.linalg.solve(K + np.diag(1.0 / mode.W), K)
    np.testing.assert_allclose(sigma, exact.cov, atol=1e-4)


def test_laplace_mode_is_closer_to_zero_than_the_exact_mean():
    # with strong evidence the logistic posterior is skewed away from 0: the mode lags the mean
    X = np.array([[0.0], [0.5]])
    y = np.array([1.0, 1.0])
    K = SEKernel(variance=9.0, lengthscale=1.0).K(X)
    mode = laplace_mode(K, y)
    exact = quadrature_posterior(K, lambda f: LogisticLikelihood().log_p(y, f), n_nodes=80)
    assert np.all(exact.mean > mode.f) and np.all(mode.f > 0)
    # and the Laplace evidence is a poor but finite approximation
    assert abs(mode.log_evidence - exact.log_evidence) < 0.5


def test_predictive_probabilities_against_exact_integral(rng):
    X, y = make_data(rng, n=30)
    kernel = SEKernel(variance=4.0, lengthscale=1.0)
    mode = laplace_mode(kernel.K(X), y)
    mean, var = laplace_predict_latent(mode, kernel, X, rng.normal(size=(8, 2)) * 2)
    reference = sigmoid_gaussian_exact(mean, var)
    np.testing.assert_allclose(laplace_predict_proba(mean, var, method="quadrature"), reference, atol=1e-7)
    np.testing.assert_allclose(laplace_predict_proba(mean, var, method="erf_mixture"), reference, atol=5e-4)
    np.testing.assert_allclose(laplace_predict_proba(mean, var, method="mackay"), reference, atol=2e-2)
    np.testing.assert_allclose(laplace_predict_proba(mean, var, method="exact"), reference, atol=1e-12)
    # probit: the integral is exact whatever the method
    probit = laplace_predict_proba(mean, var, method="mackay", likelihood=ProbitLikelihood())
    from scipy.stats import norm

    np.testing.assert_allclose(probit, norm.cdf(mean / np.sqrt(1 + var)), rtol=1e-12)


def test_predictive_variance_equals_papers_formula(rng):
    # W&B 1997 §2.1: var y* = [(K₊⁻¹ + W₊)⁻¹]_{n+1,n+1} with W₊ = diag(W, 0)
    X, y = make_data(rng, n=10)
    kernel = SEKernel(variance=2.0, lengthscale=1.0, jitter=1e-6)
    mode = laplace_mode(kernel.K(X), y)
    x_star = np.array([[0.3, -0.2]])
    _, var = laplace_predict_latent(mode, kernel, X, x_star)
    X_plus = np.vstack([X, x_star])
    W_plus = np.diag(np.append(mode.W, 0.0))
    paper = np.linalg.inv(np.linalg.inv(kernel.K(X_plus)) + W_plus)[-1, -1]
    np.testing.assert_allclose(var[0], paper, rtol=1e-6)


# ------------------------------------------------------------------ hard inputs
HARD_CASES = {
    "duplicates": dict(kernel=SEKernel(variance=2.0, lengthscale=1.0, jitter=0.0), duplicate=True),
    "separable, variance 1e6": dict(kernel=SEKernel(variance=1e6, lengthscale=1.0), separable=True),
    "variance 1e6, no jitter": dict(kernel=SEKernel(variance=1e6, lengthscale=1.0, jitter=0.0)),
    "lengthscale 1e-3": dict(kernel=SEKernel(variance=1.0, lengthscale=1e-3)),
    "lengthscale 1e3, no jitter": dict(kernel=SEKernel(variance=1.0, lengthscale=1e3, jitter=0.0)),
    "lengthscale 1e3, variance 1e6": dict(kernel=SEKernel(variance=1e6, lengthscale=1e3, jitter=0.0)),
}


@pytest.mark.parametrize("case", sorted(HARD_CASES))
def test_hard_inputs_give_finite_converged_answers(rng, case):
    spec = HARD_CASES[case]
    X, y = make_data(rng, n=30, noise=0.0 if spec.get("separable") else 0.5)
    if spec.get("duplicate"):
        X, y = np.vstack([X, X[:10]]), np.concatenate([y, y[:10]])
    kernel = spec["kernel"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no convergence or jitter warnings either
        result = laplace_evidence(kernel, X, y)
        mean, var = laplace_predict_latent(result.mode, kernel, X, rng.normal(size=(5, 2)))
        p = laplace_predict_proba(mean, var)
    assert result.mode.converged
    for value in (result.log_evidence, result.gradient, result.mode.f, mean, var, p):
        assert np.all(np.isfinite(value))
    # every term of log q = log p(y|f̂) − ½ f̂ᵀK⁻¹f̂ − ½ log|B| is ≤ 0
    assert result.log_evidence <= 0.0
    assert np.all((p >= 0) & (p <= 1)) and np.all(var >= 0)


def test_separable_data_with_huge_variance_has_a_correct_gradient(rng):
    X, y = make_data(rng, n=20, noise=0.0)
    kernel = SEKernel(variance=1e6, lengthscale=1.0)
    result = laplace_evidence(kernel, X, y)

    def log_evidence(theta):
        return laplace_evidence(kernel.with_theta(theta), X, y).log_evidence

    np.testing.assert_allclose(
        result.gradient, finite_difference_gradient(log_evidence, kernel.theta, 1e-5), rtol=1e-4, atol=1e-5
    )


# ------------------------------------------------------------------ MAP
def test_map_is_reproducible_and_stationary(rng):
    X, y = make_data(rng, n=30)
    kernel = SEKernel(variance=1.0, lengthscale=np.e)
    first = map_hyperparameters(kernel, X, y, rng=3, n_restarts=2)
    second = map_hyperparameters(kernel, X, y, rng=3, n_restarts=2)
    assert isinstance(first, MAPResult)
    np.testing.assert_array_equal(first.theta, second.theta)
    fit = first.optimization
    assert fit.starts.shape == (3, 2) and fit.values.shape == (3,)
    inside = (first.theta > fit.bounds[:, 0] + 1e-6) & (first.theta < fit.bounds[:, 1] - 1e-6)
    np.testing.assert_allclose(first.gradient[inside], 0.0, atol=1e-3)
    assert first.converged
    start_value = laplace_evidence(kernel, X, y).log_evidence + log_hyperprior(kernel)[0]
    assert first.log_posterior >= start_value
    np.testing.assert_allclose(first.log_posterior, first.log_evidence + first.log_prior)
    assert first.log_posterior == pytest.approx(np.max(fit.values), abs=1e-6)
    # the gradient reported is that of the log posterior (evidence + prior) at the optimum
    evidence = laplace_evidence(first.kernel, X, y)
    np.testing.assert_allclose(
        first.gradient, evidence.gradient + log_hyperprior(first.kernel)[1], rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(first.mode.f, evidence.mode.f, rtol=1e-8, atol=1e-10)


def test_map_box_is_the_shared_theta_box(rng):
    """The search box is theta_box(kernel) whatever the prior (no longer prior-derived)."""
    X, y = make_data(rng, n=25)
    kernel = SEKernel(lengthscale=[1.0, 1.0])
    expected = np.array([LOG_PARAMETER_BOUNDS["log_variance"]] + [LOG_PARAMETER_BOUNDS["log_lengthscale"]] * 2)
    np.testing.assert_array_equal(theta_box(kernel), expected)
    for options in (dict(), dict(prior_mean=0.0, prior_sd=0.5), dict(prior=None)):
        result = map_hyperparameters(kernel, X, y, n_restarts=0, **options)
        np.testing.assert_array_equal(result.optimization.bounds, expected)
        assert np.all((result.theta >= expected[:, 0]) & (result.theta <= expected[:, 1]))
    # a start outside the box is clipped onto it
    outside = SEKernel(variance=np.exp(16.0), lengthscale=[1.0, np.exp(-11.0)])
    result = map_hyperparameters(outside, X, y, n_restarts=0)
    np.testing.assert_array_equal(result.optimization.starts[0], [15.0, 0.0, -10.0])


def test_map_restarts_from_the_prior(rng):
    X, y = make_data(rng, n=25)
    kernel = SEKernel(lengthscale=[1.0, 1.0])
    result = map_hyperparameters(kernel, X, y, rng=0, n_restarts=2, restart_from="prior")
    fit = result.optimization
    assert np.all(fit.starts >= fit.bounds[:, 0]) and np.all(fit.starts <= fit.bounds[:, 1])
    assert np.isfinite(result.log_posterior)
    # the restarts are draws of W&B's φ ~ N(−3, 3²) mapped to θ = φ / A, clipped to the box
    phi = -3.0 + 3.0 * np.random.default_rng(0).standard_normal((2, 3))
    np.testing.assert_allclose(fit.starts[0], kernel.theta)
    box = theta_box(kernel)
    np.testing.assert_allclose(fit.starts[1:], np.clip(phi / wb_scale(kernel), box[:, 0], box[:, 1]))


def test_map_fixed_parameters_are_kept(rng):
    X, y = make_data(rng, n=25)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5])
    result = map_hyperparameters(kernel, X, y, fixed=("log_variance",), n_restarts=1, rng=0)
    assert result.theta[0] == kernel.theta[0]
    assert not result.optimization.free[0] and np.all(result.optimization.free[1:])
    np.testing.assert_allclose(result.gradient[1:], 0.0, atol=1e-3)


def test_ml_ii_is_map_without_the_prior(rng):
    X, y = make_data(rng, n=30)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    ml = map_hyperparameters(kernel, X, y, prior=None, n_restarts=1, rng=0)
    assert ml.log_prior == 0.0 and ml.log_posterior == ml.log_evidence
    assert ml.converged
    # a stationary point of the evidence alone
    np.testing.assert_allclose(laplace_evidence(ml.kernel, X, y).gradient, 0.0, atol=1e-3)
    # and the prior moves the optimum: MAP has the larger posterior, ML-II the larger evidence
    mp = map_hyperparameters(kernel, X, y, n_restarts=1, rng=0)
    assert ml.log_evidence >= mp.log_evidence - 1e-8
    assert mp.log_posterior >= ml.log_evidence + log_hyperprior(ml.kernel)[0] - 1e-8
    assert np.max(np.abs(ml.theta - mp.theta)) > 1e-2


def test_ml_ii_matches_scikit_learn_optimum(rng):
    """prior=None is ML-II: the same optimum as scikit-learn's GaussianProcessClassifier.

    scikit-learn's kernel ConstantKernel * RBF is SEKernel with jitter 0, and its θ is the same
    (log σ_f², log ℓ); its box (1e-5, 1e5) contains ours and the optimum lies inside both.
    """
    gp = pytest.importorskip("sklearn.gaussian_process")
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    X, y = make_data(rng, n=40, noise=0.8)
    kernel = SEKernel(variance=1.0, lengthscale=1.0, jitter=0.0)
    ours = map_hyperparameters(kernel, X, y, prior=None, n_restarts=2, rng=1)
    sk = gp.GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), n_restarts_optimizer=2, random_state=0).fit(X, y)
    sk_theta = sk.kernel_.theta
    assert ours.converged and np.all(np.abs(ours.theta) < 9.0)  # an interior optimum
    # the same model: scikit-learn's log marginal likelihood at our optimum is our log evidence
    assert sk.log_marginal_likelihood(ours.theta) == pytest.approx(ours.log_evidence, rel=1e-7)
    # the same optimum: value to optimiser precision, θ to the flatness of the maximum
    assert ours.log_evidence >= sk.log_marginal_likelihood_value_ - 1e-7
    assert ours.log_evidence == pytest.approx(sk.log_marginal_likelihood_value_, abs=1e-8)
    np.testing.assert_allclose(ours.theta, sk_theta, atol=1e-4)


def test_map_with_the_probit_likelihood(rng):
    X, y = make_data(rng, n=30)
    kernel = SEKernel(variance=1.0, lengthscale=np.e)
    result = map_hyperparameters(kernel, X, y, likelihood=ProbitLikelihood(), n_restarts=0)
    assert result.converged and isinstance(result.mode.likelihood, ProbitLikelihood)
    evidence = laplace_evidence(result.kernel, X, y, likelihood=ProbitLikelihood())
    assert result.log_evidence == pytest.approx(evidence.log_evidence, rel=1e-10)
    assert result.log_evidence != pytest.approx(laplace_evidence(result.kernel, X, y).log_evidence, rel=1e-3)


# ------------------------------------------------------------------ bad input
def test_bad_inputs_raise_value_errors(rng):
    X, y = make_data(rng, n=10)
    K = SEKernel().K(X)
    kernel = SEKernel()
    bad_calls = {
        "K not square": lambda: laplace_mode(K[:, :5], y),
        "K with NaN": lambda: laplace_mode(np.where(np.eye(10) > 0, np.nan, K), y),
        "K not symmetric": lambda: laplace_mode(K + np.triu(np.ones((10, 10)), 1), y),
        "labels outside {-1,+1}": lambda: laplace_mode(K, np.arange(10)),
        "too few labels": lambda: laplace_mode(K, y[:5]),
        "f_init wrong length": lambda: laplace_mode(K, y, f_init=np.zeros(3)),
        "tol not positive": lambda: laplace_mode(K, y, tol=0.0),
        "max_iter zero": lambda: laplace_mode(K, y, max_iter=0),
        "likelihood without derivatives": lambda: laplace_mode(K, y, likelihood=object()),
        "kernel not SEKernel": lambda: laplace_evidence(K, X, y),
        "X_test wrong width": lambda: laplace_predict_latent(laplace_mode(K, y), kernel, X, np.zeros((2, 3))),
        "X not the training set": lambda: laplace_predict_latent(laplace_mode(K, y), kernel, X[:4], X),
        "unknown method": lambda: laplace_predict_proba(np.zeros(2), np.ones(2), method="probit"),
        "negative variance": lambda: laplace_predict_proba(np.zeros(2), -np.ones(2)),
        "shape mismatch": lambda: laplace_predict_proba(np.zeros(2), np.ones(3)),
        "rng None": lambda: map_hyperparameters(kernel, X, y, rng=None),
        "restart_from": lambda: map_hyperparameters(kernel, X, y, rng=0, restart_from="anywhere"),
        "negative restarts": lambda: map_hyperparameters(kernel, X, y, rng=0, n_restarts=-1),
        "unknown prior": lambda: map_hyperparameters(kernel, X, y, rng=0, prior="flat"),
        "unknown fixed name": lambda: map_hyperparameters(kernel, X, y, rng=0, fixed=("log_noise",)),
        "map prior_sd": lambda: map_hyperparameters(kernel, X, y, rng=0, prior_sd=0.0),
        "prior_sd": lambda: log_hyperprior(kernel, prior_sd=0.0),
    }
    for name, call in bad_calls.items():
        with pytest.raises(ValueError):
            call()
        # (the loop names the failing case in the traceback through `name`)
        assert name


def test_options_are_keyword_only(rng):
    X, y = make_data(rng, n=10)
    K, kernel = SEKernel().K(X), SEKernel()
    mode = laplace_mode(K, y)
    for call in (
        lambda: laplace_mode(K, y, None),
        lambda: laplace_evidence(kernel, X, y, None),
        lambda: laplace_predict_proba(np.zeros(2), np.ones(2), "mackay"),
        lambda: map_hyperparameters(kernel, X, y, 0),
    ):
        with pytest.raises(TypeError):
            call()
    assert mode.converged


def test_mode_is_a_frozen_dataclass(rng):
    X, y = make_data(rng, n=8)
    mode = laplace_mode(SEKernel().K(X), y)
    assert isinstance(mode, LaplaceMode)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mode.n_iter = 3
