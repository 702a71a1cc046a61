"""Tests of gpc_ref.kl, the KL method (Gaussian variational inference, Opper & Archambeau 2009).

References: the bound computed densely here (with explicit inverses, allowed in a test), finite
differences for every gradient, the exact evidence (tensor quadrature for n = 3, the probit orthant
probability for n = 14), the Jaakkola–Jordan bound and G&R's VB bound (both provably below the KL
bound), and the fixed-point conditions of the optimum.
"""

import warnings

import numpy as np
import pytest
from scipy import integrate

from gpc_ref import KLGPC
from gpc_ref import ConvergenceWarning
from gpc_ref import SEKernel
from gpc_ref import kl
from gpc_ref.exact import probit_orthant_log_evidence
from gpc_ref.exact import quadrature_posterior
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.variational_bounds import optimize_lower_bound
from gpc_ref.vb_probit import vb_probit_binary

LIKELIHOODS = {"logistic": LogisticLikelihood(), "probit": ProbitLikelihood()}


def problem(n=6, seed=0, variance=2.0, lengthscale=(0.8, 1.5), bias=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=variance, lengthscale=list(lengthscale), bias=bias, learn_bias=bias > 0)
    return kernel, X, y


def dense_bound(K, y, m, V, likelihood):
    """𝓛(m, V) from its definition: adaptive quadrature of each E[log p] and the Gaussian KL with inverses."""
    expected = 0.0
    for i in range(len(y)):
        s = np.sqrt(V[i, i])
        value, _ = integrate.quad(
            lambda u, i=i, s=s: likelihood.log_p(y[i], m[i] + s * u) * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi),
            -12,
            12,
            points=[-m[i] / s],
            epsabs=1e-13,
            limit=200,
        )
        expected += value
    K_inv = np.linalg.inv(K)
    n = len(y)
    kl_term = 0.5 * (np.trace(K_inv @ V) + m @ K_inv @ m - n + np.linalg.slogdet(K)[1] - np.linalg.slogdet(V)[1])
    return expected - kl_term


def central_differences(func, x, step=1e-6):
    return np.array([(func(x + step * e) - func(x - step * e)) / (2 * step) for e in np.eye(len(x))])


# ---------------------------------------------------------------------------------------- the bound
@pytest.mark.parametrize("name", LIKELIHOODS)
def test_bound_equals_its_dense_definition(name):
    kernel, X, y = problem(5)
    K = kernel.K(X)
    rng = np.random.default_rng(1)
    alpha, lam = rng.normal(size=5), rng.uniform(0.05, 1.0, size=5)
    bound = kl.kl_bound(K, y, alpha, lam, likelihood=name)
    m = K @ alpha
    V = np.linalg.inv(np.linalg.inv(K) + np.diag(lam))
    assert bound.log_bound == pytest.approx(dense_bound(K, y, m, V, LIKELIHOODS[name]), abs=1e-9)
    np.testing.assert_allclose(bound.mean, m, atol=1e-10)
    np.testing.assert_allclose(bound.var, np.diag(V), atol=1e-10)
    assert bound.log_bound == pytest.approx(bound.expected_log_lik - bound.kl, abs=1e-12)


@pytest.mark.parametrize("name", LIKELIHOODS)
def test_gradients_in_mean_alpha_and_lambda_against_finite_differences(name):
    kernel, X, y = problem(6, seed=2)
    K = kernel.K(X)
    rng = np.random.default_rng(3)
    alpha, lam = rng.normal(size=6), rng.uniform(0.05, 1.0, size=6)
    bound = kl.kl_bound(K, y, alpha, lam, likelihood=name, gradient_lam=True)

    def at(a, lm):
        return kl.kl_bound(K, y, a, lm, likelihood=name).log_bound

    fd_alpha = central_differences(lambda a: at(a, lam), alpha)
    fd_lam = central_differences(lambda lm: at(alpha, lm), lam)
    # in m, with α = K⁻¹m (explicit solve: fine in a test)
    m = K @ alpha
    fd_mean = central_differences(lambda mm: at(np.linalg.solve(K, mm), lam), m)
    np.testing.assert_allclose(bound.gradient_alpha, fd_alpha, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(bound.gradient_lam, fd_lam, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(bound.gradient_mean, fd_mean, rtol=1e-5, atol=1e-6)


def test_gradient_in_the_whole_covariance_is_diagonal_on_the_family():
    """∂𝓛/∂V = diag(∂Ē/∂v) + ½V⁻¹ − ½K⁻¹, which on V = (K⁻¹ + Λ)⁻¹ is ½(Λ − Λ̂): zero off the diagonal."""
    kernel, X, y = problem(4, seed=4)
    K = kernel.K(X)
    alpha, lam = np.array([0.3, -0.2, 0.5, 0.1]), np.array([0.2, 0.4, 0.3, 0.6])
    bound = kl.kl_bound(K, y, alpha, lam, likelihood="probit")
    m = K @ alpha
    V = np.linalg.inv(np.linalg.inv(K) + np.diag(lam))
    likelihood = LIKELIHOODS["probit"]
    step = 1e-5
    gradient = np.zeros((4, 4))
    for i in range(4):
        for j in range(i, 4):
            E = np.zeros((4, 4))
            E[i, j] = E[j, i] = step
            # a symmetric perturbation moves V_ij and V_ji together: halve the off-diagonal derivative
            g = (dense_bound(K, y, m, V + E, likelihood) - dense_bound(K, y, m, V - E, likelihood)) / (2 * step)
            gradient[i, j] = gradient[j, i] = g if i == j else g / 2
    np.testing.assert_allclose(np.diag(gradient), bound.gradient_var, atol=1e-6)
    assert np.max(np.abs(gradient - np.diag(np.diag(gradient)))) < 1e-6


# ---------------------------------------------------------------------------------------- the optimum
@pytest.mark.parametrize("name", LIKELIHOODS)
def test_fit_satisfies_the_fixed_point_conditions(name):
    kernel, X, y = problem(12, seed=5)
    K = kernel.K(X)
    result = kl.kl_gaussian(K, y, name, tol=1e-9)
    assert result.converged and result.gradient_norm <= 1e-9
    # Opper & Archambeau: α = ρ = ∂Ē/∂m and λ = λ̂ = −2 ∂Ē/∂v at the optimum
    np.testing.assert_allclose(result.alpha, result.rho, atol=1e-8)
    np.testing.assert_allclose(result.lam, result.lam_hat, atol=2e-9)
    V = kl.kl_covariance(result, K)
    np.testing.assert_allclose(V, np.linalg.inv(np.linalg.inv(K) + np.diag(result.lam)), atol=1e-9)
    np.testing.assert_allclose(np.diag(V), result.var, atol=1e-10)
    np.testing.assert_allclose(K @ result.alpha, result.mean, atol=1e-10)
    # the bound there is the largest: any perturbation of (α, λ) lowers it
    rng = np.random.default_rng(0)
    for _ in range(5):
        da, dl = 1e-3 * rng.normal(size=12), 1e-3 * rng.normal(size=12)
        other = kl.kl_bound(K, y, result.alpha + da, np.maximum(result.lam + dl, 0.0), likelihood=name)
        assert other.log_bound < result.log_bound


@pytest.mark.parametrize("name", LIKELIHOODS)
def test_bound_is_below_the_exact_evidence_on_three_points(name):
    kernel, X, y = problem(3, seed=6, variance=4.0)
    K = kernel.K(X)
    likelihood = LIKELIHOODS[name]
    exact = quadrature_posterior(K, lambda f: likelihood.log_p(y, f), n_nodes=70)
    result = kl.kl_gaussian(K, y, name)
    assert result.log_bound < exact.log_evidence
    assert exact.log_evidence - result.log_bound < 0.05  # and close: the posterior is nearly Gaussian
    np.testing.assert_allclose(result.mean, exact.mean, atol=0.05)


def test_probit_bound_is_below_the_orthant_evidence():
    kernel, X, y = problem(14, seed=7, variance=9.0)
    K = kernel.K(X)
    exact = probit_orthant_log_evidence(K, y)
    result = kl.kl_gaussian(K, y, "probit")
    assert result.converged and result.log_bound < exact


def test_logistic_bound_is_above_the_jaakkola_jordan_bound():
    kernel, X, y = problem(15, seed=8, variance=3.0)
    jj = optimize_lower_bound(kernel, X, y, optimize_theta=False)
    result = kl.kl_gaussian(kernel.K(X), y, "logistic")
    assert jj.converged and result.converged
    assert result.log_bound > jj.bound.log_Z


def test_probit_bound_is_above_the_factorised_vb_bound():
    kernel, X, y = problem(15, seed=9, variance=3.0)
    K = kernel.K(X)
    vb = vb_probit_binary(K, y, accelerate=True)
    result = kl.kl_gaussian(K, y, "probit")
    assert vb.converged and result.converged
    assert result.log_bound > vb.log_marginal_likelihood_bound


def test_acceleration_changes_the_path_not_the_optimum():
    kernel, X, y = problem(40, seed=17, variance=30.0)
    K = kernel.K(X)
    # the plain steps converge linearly, at a rate near one here: a looser tolerance for them
    plain = kl.kl_gaussian(K, y, "probit", accelerate=False, max_iter=1000)
    fast = kl.kl_gaussian(K, y, "probit", tol=1e-8)
    assert plain.converged and fast.converged and fast.n_factorisations < plain.n_factorisations
    assert fast.log_bound == pytest.approx(plain.log_bound, abs=1e-9)
    np.testing.assert_allclose(fast.mean, plain.mean, atol=1e-4)
    # the bound never decreases along either path; the trace ends at the returned fit
    for result in (plain, fast):
        assert np.all(np.diff(result.trace[:, 0]) >= -1e-12 * abs(result.log_bound))
        assert result.trace.shape == (result.n_iter + 1, 3) and result.trace[-1, 0] == result.log_bound
        assert result.trace[-1, 2] == result.n_factorisations


@pytest.mark.parametrize("name", LIKELIHOODS)
def test_core_is_the_unaccelerated_driver(name):
    """kl_gaussian runs the core's residual, halved step and test: without Anderson it takes the core's steps."""
    for seed in range(6):
        kernel, X, y = problem(25, seed=seed, variance=float(np.exp(seed - 1.0)))
        K = kernel.K(X)
        core = kl.kl_gaussian_core(K, y, LIKELIHOODS[name], max_iter=1000)
        driver = kl.kl_gaussian(K, y, name, accelerate=False, max_iter=1000)
        assert core.converged and driver.converged
        assert (core.n_iter, core.n_factorisations) == (driver.n_iter, driver.n_factorisations)
        np.testing.assert_allclose(core.mean, driver.mean, rtol=0, atol=1e-12)
        assert core.log_bound == pytest.approx(driver.log_bound, rel=1e-13)


def test_anderson_in_the_driver_reaches_the_cores_optimum_with_fewer_factorisations():
    """At a large signal variance the core's plain steps contract slowly; the driver's Anderson candidates
    (kept only where the bound does not fall) reach the same optimum sooner."""
    kernel, X, y = problem(40, seed=17, variance=30.0)
    K = kernel.K(X)
    core = kl.kl_gaussian_core(K, y, ProbitLikelihood(), max_iter=1000)
    driver = kl.kl_gaussian(K, y, "probit")
    assert core.converged and driver.converged and driver.n_factorisations < core.n_factorisations
    assert driver.log_bound == pytest.approx(core.log_bound, abs=1e-8)


def test_warm_start_reaches_the_same_optimum():
    kernel, X, y = problem(20, seed=10)
    K = kernel.K(X)
    cold = kl.kl_gaussian(K, y, "logistic", tol=1e-9)
    nearby = kernel.with_theta(kernel.theta + 0.05).K(X)
    start = kl.kl_gaussian(nearby, y, "logistic")
    warm = kl.kl_gaussian(K, y, "logistic", lam_init=start.lam, nu_init=start.nu, tol=1e-9)
    assert warm.log_bound == pytest.approx(cold.log_bound, abs=1e-10)
    np.testing.assert_allclose(warm.mean, cold.mean, atol=1e-7)


def test_non_convergence_is_reported():
    kernel, X, y = problem(20, seed=11, variance=50.0)
    with pytest.warns(ConvergenceWarning, match="not converged after 2 natural-gradient steps"):
        result = kl.kl_gaussian(kernel.K(X), y, "probit", max_iter=2)
    assert not result.converged and result.gradient_norm > 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not kl.kl_gaussian(kernel.K(X), y, "probit", max_iter=2, warn=False).converged


# ---------------------------------------------------------------------------------------- hyperparameters
@pytest.mark.parametrize("name", LIKELIHOODS)
def test_gradient_in_log_hyperparameters_against_finite_differences(name):
    kernel, X, y = problem(25, seed=12, bias=0.3)
    evidence = kl.kl_log_bound(kernel, X, y, likelihood=name, tol=1e-10)
    fd = central_differences(
        lambda theta: kl.kl_log_bound(kernel.with_theta(theta), X, y, likelihood=name, tol=1e-10).log_bound,
        kernel.theta,
        step=1e-5,
    )
    np.testing.assert_allclose(evidence.gradient, fd, rtol=1e-6, atol=1e-7)
    assert evidence.names == tuple(kernel.theta_names)
    # the dK route and the trace route agree
    by_stack = kl.kl_evidence_gradient(evidence.result, dK=kernel.gradients(X))
    np.testing.assert_allclose(by_stack, evidence.gradient, atol=1e-10)


def test_maximising_the_bound_converges_to_a_stationary_point():
    kernel, X, y = problem(30, seed=13, variance=1.0, lengthscale=(1.0, 1.0))
    fit = kl.maximize_kl_bound(kernel, X, y, likelihood="logistic")
    assert fit.converged and fit.result.converged
    gradient = kl.kl_log_bound(fit.kernel, X, y).gradient
    assert np.max(np.abs(gradient)) < 1e-4 * max(1.0, abs(fit.log_bound))
    assert fit.log_bound >= kl.kl_gaussian(kernel.K(X), y).log_bound


# ---------------------------------------------------------------------------------------- predictions
def test_predictions_at_the_training_inputs_are_the_marginals_of_q():
    kernel, X, y = problem(10, seed=14)
    for name in LIKELIHOODS:
        result = kl.kl_gaussian(kernel.K(X), y, name)
        # the cross covariance K(X, X) lacks the jitter 1e-8 of K(X)'s diagonal: agreement to that size
        prediction = kl.kl_predict(result, kernel.K(X, X), kernel.diag(X))
        np.testing.assert_allclose(prediction.mean, result.mean, atol=1e-7)
        np.testing.assert_allclose(prediction.var, result.var, atol=1e-7)
        assert np.all((prediction.proba > 0) & (prediction.proba < 1))
    from scipy.special import ndtr

    np.testing.assert_allclose(prediction.proba, ndtr(prediction.mean / np.sqrt(1 + prediction.var)), atol=1e-14)


def test_estimator_matches_the_function():
    kernel, X, y = problem(20, seed=15)
    model = KLGPC(kernel, optimize=False, likelihood="probit").fit(X, y)
    result = kl.kl_gaussian(kernel.K(X), y, "probit")
    assert model.log_marginal_likelihood_ == pytest.approx(result.log_bound, abs=1e-12)
    mean, var = model.predict_latent(X)
    np.testing.assert_allclose(mean, result.mean, atol=1e-10)
    np.testing.assert_allclose(var, result.var, atol=1e-10)


# ---------------------------------------------------------------------------------------- hard inputs
@pytest.mark.parametrize("name", LIKELIHOODS)
def test_hard_inputs_give_finite_answers(name):
    rng = np.random.default_rng(16)
    # duplicated points (K singular without jitter), a huge signal variance, separable labels
    X = np.repeat(rng.normal(size=(10, 2)), 2, axis=0)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    for kernel in (SEKernel(variance=1.0, jitter=0.0), SEKernel(variance=1e6, lengthscale=3.0, jitter=1e-8)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = kl.kl_gaussian(kernel.K(X), y, name, max_iter=500)
        assert np.isfinite(result.log_bound)
        assert np.all(np.isfinite(result.mean)) and np.all(np.isfinite(result.var)) and np.all(result.var > 0)
        prediction = kl.kl_predict(result, kernel.K(X, X[:3] + 0.1), kernel.diag(X[:3]))
        assert np.all(np.isfinite(prediction.proba))
    # separable data at a huge variance: the fit still converges and the bound is finite
    assert result.converged
    # a zero prior variance at one point (its site precision is irrelevant there)
    K = SEKernel(variance=1.0).K(X[:6])
    K[0, :] = K[:, 0] = 0.0
    result = kl.kl_gaussian(K, y[:6], name)
    assert result.converged and np.isfinite(result.log_bound) and abs(result.mean[0]) < 1e-12


# ---------------------------------------------------------------------------------------- bad input
def test_bad_input_gets_a_clear_error():
    kernel, X, y = problem(5)
    K = kernel.K(X)
    with pytest.raises(ValueError, match="likelihood"):
        kl.kl_gaussian(K, y, "softmax")
    with pytest.raises(ValueError, match="likelihood"):
        kl.kl_gaussian(K, y, object())
    with pytest.raises(ValueError, match="y must have one label per point"):
        kl.kl_gaussian(K, y[:-1])
    with pytest.raises(ValueError, match="labels in"):
        kl.kl_gaussian(K, np.arange(5.0))
    with pytest.raises(ValueError, match="NaN"):
        kl.kl_gaussian(np.where(np.eye(5) > 0, np.nan, K), y)
    with pytest.raises(ValueError, match="square"):
        kl.kl_gaussian(K[:, :4], y)
    with pytest.raises(ValueError, match="tol"):
        kl.kl_gaussian(K, y, tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        kl.kl_gaussian(K, y, max_iter=0)
    with pytest.raises(ValueError, match="accelerate"):
        kl.kl_gaussian(K, y, accelerate="yes")
    with pytest.raises(ValueError, match="lam_init must be non-negative"):
        kl.kl_gaussian(K, y, lam_init=-np.ones(5))
    with pytest.raises(ValueError, match="nu_init"):
        kl.kl_gaussian(K, y, nu_init=np.ones(4))
    with pytest.raises(ValueError, match="lam must be non-negative"):
        kl.kl_bound(K, y, np.zeros(5), -np.ones(5))
    result = kl.kl_gaussian(K, y)
    with pytest.raises(ValueError, match="K_star"):
        kl.kl_predict(result, np.ones((4, 2)), np.ones(2))
    with pytest.raises(ValueError, match="method"):
        kl.kl_predict(result, K, np.diag(K), method="magic")
    with pytest.raises(ValueError, match="pass dK, or kernel and X"):
        kl.kl_evidence_gradient(result)
    with pytest.raises(ValueError, match="likelihood"):
        KLGPC(optimize=False, likelihood="label_noise").fit(X, y)
