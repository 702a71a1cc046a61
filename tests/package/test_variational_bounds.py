"""Tests of gpc_ref.variational_bounds (Gibbs & MacKay 2000, Jaakkola & Jordan bounds)."""

import re
import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient
from scipy.special import expit

from gpc_ref import ConvergenceWarning
from gpc_ref import variational_bounds
from gpc_ref.exact import quadrature_posterior
from gpc_ref.hyperparameters import theta_box
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import laplace_mode
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import log_sigmoid
from gpc_ref.variational_bounds import binary_entropy
from gpc_ref.variational_bounds import lambda_jj
from gpc_ref.variational_bounds import lambda_jj_derivative
from gpc_ref.variational_bounds import log_sigmoid_lower_bound
from gpc_ref.variational_bounds import log_sigmoid_upper_bound
from gpc_ref.variational_bounds import lower_bound
from gpc_ref.variational_bounds import optimize_lower_bound
from gpc_ref.variational_bounds import optimize_lower_bound_core
from gpc_ref.variational_bounds import optimize_upper_bound
from gpc_ref.variational_bounds import predict_lower
from gpc_ref.variational_bounds import predict_proba_bound
from gpc_ref.variational_bounds import predict_upper
from gpc_ref.variational_bounds import update_nu
from gpc_ref.variational_bounds import upper_bound


def small_problem(rng, n=3, bias=0.3):
    X = rng.normal(size=(n, 2))
    t = np.array([1, 0, 1, 1, 0, 0, 1, 0][:n])
    kernel = SEKernel(variance=2.0, lengthscale=[0.8, 1.3], bias=bias)
    return X, t, kernel


# ----------------------------------------------------------------------------- pointwise bounds
def test_lambda_limit_and_series_match_closed_form():
    assert lambda_jj(0.0) == 0.125
    assert np.isfinite(lambda_jj(np.array([0.0, 1e-300, -1e-12]))).all()
    # the series and the closed form agree where they switch
    for nu in (0.0099999, 0.0100001, -0.0100001):
        closed = np.tanh(abs(nu) / 2) / (4 * abs(nu))
        assert lambda_jj(nu) == pytest.approx(closed, rel=1e-12)
    # λ = (σ(ν) − ½)/(2ν), G&M eq 11
    nu = np.array([-7.0, -0.3, 0.5, 2.015, 40.0])
    np.testing.assert_allclose(lambda_jj(nu), (expit(nu) - 0.5) / (2 * nu), rtol=1e-12)
    assert np.all(lambda_jj(np.linspace(-1e3, 1e3, 1001)) <= 0.125)
    assert np.all(lambda_jj(np.array([1e6, 1e300])) > 0)


def test_lambda_derivative_against_finite_differences():
    for nu in (-3.0, -0.011, -0.009, 1e-4, 0.0099, 0.0101, 0.4, 2.015, 25.0):
        numeric = (lambda_jj(nu + 1e-6) - lambda_jj(nu - 1e-6)) / 2e-6
        assert lambda_jj_derivative(nu) == pytest.approx(numeric, rel=1e-6, abs=1e-12)
    assert lambda_jj_derivative(0.0) == 0.0
    assert np.isfinite(lambda_jj_derivative(np.array([1e6, -1e300]))).all()


def test_binary_entropy_ends_and_bad_input():
    np.testing.assert_allclose(binary_entropy(np.array([0.0, 0.5, 1.0])), [0.0, np.log(2), 0.0])
    with pytest.raises(ValueError, match="mu"):
        binary_entropy(1.2)


@pytest.mark.parametrize("t", [0, 1])
def test_pointwise_bounds_hold_on_a_dense_grid(t):
    s = 2 * t - 1
    a = np.linspace(-60.0, 60.0, 4001)[:, None]
    nu = np.concatenate([[0.0, 1e-9, 1e-3], np.linspace(-30, 30, 121), [500.0]])[None, :]
    mu = np.concatenate([[0.0, 1e-12], np.linspace(0.01, 0.99, 99), [1 - 1e-12, 1.0]])[None, :]
    exact = log_sigmoid(s * a)
    lower = log_sigmoid_lower_bound(t, a, nu)
    upper = log_sigmoid_upper_bound(t, a, mu)
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
    assert np.all(lower <= exact + 1e-12)
    assert np.all(upper >= exact - 1e-12)


def test_pointwise_bounds_hold_on_random_extreme_draws(rng):
    a = rng.standard_cauchy(20000) * 10
    nu = rng.standard_cauchy(20000) * 10
    mu = rng.uniform(size=20000) ** 4
    t = rng.integers(0, 2, 20000)
    s = 2 * t - 1
    assert np.all(log_sigmoid_lower_bound(t, a, nu) <= log_sigmoid(s * a) + 1e-10)
    assert np.all(log_sigmoid_upper_bound(t, a, mu) >= log_sigmoid(s * a) - 1e-10)


def test_bounds_touch_where_the_theory_says():
    nu = 2.015
    for t, a in ((1, nu), (1, -nu), (0, nu), (0, -nu)):
        assert log_sigmoid_lower_bound(t, a, nu) == pytest.approx(log_sigmoid((2 * t - 1) * a), abs=1e-14)
    mu = 0.505
    touch = np.log((1 - mu) / mu)  # σ(−a) = μ
    assert log_sigmoid_upper_bound(1, touch, mu) == pytest.approx(log_sigmoid(touch), abs=1e-14)
    assert log_sigmoid_upper_bound(0, -touch, mu) == pytest.approx(log_sigmoid(touch), abs=1e-14)


# ----------------------------------------------------------------------------- Z' and Z''
def test_log_Z_lower_equals_gaussian_integral_by_quadrature(rng):
    X, t, kernel = small_problem(rng)
    K = kernel.K(X)
    nu = rng.uniform(0.2, 3.0, 3)
    bound = lower_bound(K, t, nu)
    q = quadrature_posterior(K, lambda f: log_sigmoid_lower_bound(t, f, nu), n_nodes=70)
    assert bound.log_Z == pytest.approx(q.log_evidence, abs=1e-10)
    np.testing.assert_allclose(bound.mean, q.mean, atol=1e-9)
    np.testing.assert_allclose(bound.var, np.diag(q.cov), atol=1e-9)


def test_log_Z_lower_matches_dense_formula_and_printed_eq34_does_not(rng):
    X, t, kernel = small_problem(rng, n=6)
    K = kernel.K(X)
    nu = rng.uniform(0.2, 3.0, 6)
    lam = lambda_jj(nu)
    d = 0.5 * (2 * t - 1)
    P = np.linalg.inv(K) + 2 * np.diag(lam)  # dense reference only
    constant = np.sum(np.log(expit(nu)) - nu / 2 + lam * nu**2)
    log_det_H = np.linalg.slogdet(np.eye(6) + 2 * np.diag(lam) @ K)[1]
    corrected = constant + 0.5 * d @ np.linalg.solve(P, d) - 0.5 * log_det_H
    printed = constant + 0.5 * d @ P @ d - 0.5 * log_det_H
    value = lower_bound(K, t, nu).log_Z
    assert value == pytest.approx(corrected, abs=1e-10)
    assert abs(value - printed) > 1e-3


def test_log_Z_upper_equals_gaussian_integral_by_quadrature(rng):
    X, t, kernel = small_problem(rng)
    K = kernel.K(X)
    mu = rng.uniform(0.05, 0.95, 3)
    q = quadrature_posterior(K, lambda f: log_sigmoid_upper_bound(t, f, mu), n_nodes=70)
    assert upper_bound(K, t, mu).log_Z == pytest.approx(q.log_evidence, abs=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_optimised_bounds_sandwich_the_exact_evidence(rng, n):
    X, t, kernel = small_problem(rng, n=n)
    K = kernel.K(X)
    exact = quadrature_posterior(K, lambda f: log_sigmoid((2 * t - 1) * f), n_nodes=80).log_evidence
    lower = optimize_lower_bound(kernel, X, t, optimize_theta=False).bound.log_Z
    upper = optimize_upper_bound(K, t).bound.log_Z
    assert lower <= exact <= upper
    # and for arbitrary (non-optimal) variational parameters too
    assert lower_bound(K, t, rng.uniform(0, 4, n)).log_Z <= lower + 1e-10
    assert upper_bound(K, t, rng.uniform(0, 1, n)).log_Z >= upper - 1e-10


def test_lower_bound_gradients_against_finite_differences(rng):
    X, t, kernel = small_problem(rng, n=5)
    kernel = kernel.with_params(learn_jitter=True, jitter=1e-3)
    K, dK = kernel.K(X), kernel.gradients(X)
    nu = rng.uniform(-3, 3, 5)
    nu[0] = 0.003  # inside the series branch of λ
    bound = lower_bound(K, t, nu, dK=dK)
    numeric_nu = finite_difference_gradient(lambda v: lower_bound(K, t, v).log_Z, nu)
    np.testing.assert_allclose(bound.grad_nu, numeric_nu, rtol=1e-6, atol=1e-9)
    theta = kernel.theta
    numeric_theta = finite_difference_gradient(lambda th: lower_bound(kernel.with_theta(th).K(X), t, nu).log_Z, theta)
    np.testing.assert_allclose(bound.grad_theta, numeric_theta, rtol=1e-6, atol=1e-9)


def test_printed_eq35_first_term_has_the_wrong_sign(rng):
    X, t, kernel = small_problem(rng, n=4)
    K = kernel.K(X)
    nu = rng.uniform(0.5, 3, 4)
    bound = lower_bound(K, t, nu)
    g = expit(nu)
    first = 0.25 * (1 + 2 * g * ((1 - g) * nu - 1))
    rest = -lambda_jj_derivative(nu) * (bound.mean**2 + bound.var)
    np.testing.assert_allclose(bound.grad_nu, first + rest, rtol=1e-10)
    assert np.max(np.abs(bound.grad_nu - (-first + rest))) > 1e-3


def test_upper_bound_gradients_against_finite_differences(rng):
    X, t, kernel = small_problem(rng, n=5)
    K, dK = kernel.K(X), kernel.gradients(X)
    mu = rng.uniform(0.05, 0.95, 5)
    bound = upper_bound(K, t, mu, dK=dK)
    numeric_mu = finite_difference_gradient(lambda m: upper_bound(K, t, m).log_Z, mu)
    np.testing.assert_allclose(bound.grad_mu, numeric_mu, rtol=1e-6, atol=1e-9)
    numeric_theta = finite_difference_gradient(
        lambda th: upper_bound(kernel.with_theta(th).K(X), t, mu).log_Z, kernel.theta
    )
    np.testing.assert_allclose(bound.grad_theta, numeric_theta, rtol=1e-6, atol=1e-9)


def test_fixed_point_update_never_decreases_and_reaches_stationarity(rng):
    X, t, kernel = small_problem(rng, n=8)
    K = kernel.K(X)
    nu = np.full(8, 5.0)
    values = []
    for _ in range(200):
        nu, before = update_nu(K, t, nu)
        values.append(before.log_Z)
    assert np.all(np.diff(values) >= -1e-12)
    final = lower_bound(K, t, nu)
    np.testing.assert_allclose(nu**2, final.mean**2 + final.var, rtol=1e-8)
    assert np.max(np.abs(final.grad_nu)) < 1e-8


def test_gradient_and_fixed_point_optimisers_agree(rng):
    X, t, kernel = small_problem(rng, n=8)
    joint = optimize_lower_bound(kernel, X, t, nu_update="gradient")
    fixed = optimize_lower_bound(kernel, X, t, nu_update="fixed_point")
    assert joint.converged and fixed.converged
    assert joint.bound.log_Z == pytest.approx(fixed.bound.log_Z, abs=1e-5)
    # the bias ends vanishing (about e^-17) along a direction where the bound is flat: only its size is identified
    np.testing.assert_allclose(joint.kernel.theta[:3], fixed.kernel.theta[:3], atol=2e-2)
    assert joint.kernel.theta[3] < -10.0 and fixed.kernel.theta[3] < -10.0


def _signal_problem(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    t = (X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=40) > 0).astype(float)
    return X, t, SEKernel(variance=2.0, lengthscale=[0.8, 1.3])


@pytest.mark.parametrize("nu_update", ["gradient", "fixed_point"])
@pytest.mark.parametrize("seed", [0, 2, 3])
def test_core_and_driver_reach_the_same_maximum(seed, nu_update):
    """The core (Algorithm 7.1 with scipy's L-BFGS, once) and optimize_lower_bound (the package's search in its
    box) evaluate the same bound and reach the same maximum where the maximum is inside the box."""
    X, t, kernel = _signal_problem(seed)
    core = optimize_lower_bound_core(kernel, X, t, nu_update=nu_update, tol=1e-8)
    driver = optimize_lower_bound(kernel, X, t, nu_update=nu_update)
    assert core.converged and driver.converged and core.optimization is None
    assert core.bound.log_Z == pytest.approx(driver.bound.log_Z, abs=1e-5)
    np.testing.assert_allclose(core.kernel.theta, driver.kernel.theta, atol=5e-3)


def test_where_an_input_is_switched_off_core_and_driver_agree_on_the_bound():
    """Here the bound prefers to ignore the second input: its lengthscale runs up a flat direction. The core's
    L-BFGS and the driver both stop somewhere on it, far beyond the inputs' spread (the driver where its gradient
    test passes, or at the box's edge, which it names); the two bounds agree: the direction is flat."""
    X, t, kernel = _signal_problem(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        core = optimize_lower_bound_core(kernel, X, t, nu_update="fixed_point", tol=1e-8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        driver = optimize_lower_bound(kernel, X, t, nu_update="fixed_point")
    assert driver.converged and driver.kernel.theta[2] > 5.0 and core.kernel.theta[2] > 5.0
    for warning in caught:  # said only when the search has stopped on the edge
        assert driver.kernel.theta[2] == pytest.approx(theta_box(kernel)[2, 1])
        assert re.search(r"log_lengthscale\[1\] at the upper edge", str(warning.message))
    assert core.bound.log_Z == pytest.approx(driver.bound.log_Z, abs=1e-5)


def test_lower_bound_posterior_is_proper_gaussian_at_the_optimum(rng):
    X, t, kernel = small_problem(rng, n=8)
    fit = optimize_lower_bound(kernel, X, t)
    lam = lambda_jj(fit.bound.nu)
    assert np.all((lam > 0) & (lam <= 0.125))
    K = fit.kernel.K(X)
    w = np.sqrt(2 * lam)
    V = np.linalg.solve(fit.bound.L, w[:, None] * K)
    cov = K - V.T @ V
    assert np.min(np.linalg.eigvalsh(cov)) > 0
    np.testing.assert_allclose(np.diag(cov), fit.bound.var, rtol=1e-10)


def test_upper_bound_solvers_agree_and_satisfy_the_fixed_point(rng):
    X, t, kernel = small_problem(rng, n=8)
    K = kernel.K(X)
    newton = optimize_upper_bound(K, t, method="newton")
    gradient = optimize_upper_bound(K, t, method="gradient")
    assert newton.converged and gradient.converged
    assert newton.bound.log_Z == pytest.approx(gradient.bound.log_Z, abs=1e-8)
    s = 2 * t - 1
    mu = newton.bound.mu
    np.testing.assert_allclose(mu, expit(-s * (K @ (mu * s))), atol=1e-10)


def test_minimised_upper_bound_is_the_map_objective(rng):
    """min_μ log Z'' = max_f [Σ log σ(s f) − ½ fᵀK⁻¹f] (convex duality)."""
    X, t, kernel = small_problem(rng, n=6)
    K = kernel.K(X)
    fit = optimize_upper_bound(K, t)
    f = K @ fit.bound.b  # the mode, f = K ∇log p
    psi = np.sum(log_sigmoid((2 * t - 1) * f)) - 0.5 * f @ np.linalg.solve(K, f)
    assert fit.bound.log_Z == pytest.approx(psi, abs=1e-9)


# ----------------------------------------------------------------------------- predictions
def test_predictive_moments_match_quadrature_of_the_joint_bound_posterior(rng):
    """Marginal of 𝒫_Q and 𝒫_R at a test point by 3-D quadrature (2 training points + 1 test)."""
    X = rng.normal(size=(3, 1))
    kernel = SEKernel(variance=1.5, lengthscale=0.9, bias=0.2)
    t = np.array([1, 0])
    K_all = kernel.K(X)
    K = kernel.K(X[:2])
    nu = np.array([1.3, 0.7])
    mu = np.array([0.3, 0.6])
    q_lower = quadrature_posterior(
        K_all, lambda f: np.concatenate([log_sigmoid_lower_bound(t, f[..., :2], nu), 0 * f[..., 2:]], -1), n_nodes=60
    )
    q_upper = quadrature_posterior(
        K_all, lambda f: np.concatenate([log_sigmoid_upper_bound(t, f[..., :2], mu), 0 * f[..., 2:]], -1), n_nodes=60
    )
    mean_l, var_l = predict_lower(lower_bound(K, t, nu), kernel, X[:2], X[2:])
    mean_u, var_u = predict_upper(upper_bound(K, t, mu), kernel, X[:2], X[2:])
    assert mean_l[0] == pytest.approx(q_lower.mean[2], abs=1e-9)
    assert var_l[0] == pytest.approx(q_lower.cov[2, 2], abs=1e-9)
    assert mean_u[0] == pytest.approx(q_upper.mean[2], abs=1e-9)
    assert var_u[0] == pytest.approx(q_upper.cov[2, 2], abs=1e-9)
    # the upper-bound posterior keeps the prior variance κ
    assert var_u[0] == pytest.approx(kernel.diag(X[2:])[0])


def test_predictions_tend_to_half_far_from_data(rng):
    X, t, kernel = small_problem(rng, n=8, bias=0.0)
    fit = optimize_lower_bound(kernel, X, t, optimize_theta=False)
    up = optimize_upper_bound(kernel.K(X), t)
    far = np.array([[1e3, -1e3]])
    assert predict_proba_bound(*predict_lower(fit.bound, kernel, X, far))[0] == pytest.approx(0.5)
    assert predict_proba_bound(*predict_upper(up.bound, kernel, X, far))[0] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- hard inputs, bad inputs
@pytest.mark.parametrize(
    "params", [dict(variance=1e6), dict(lengthscale=1e-3), dict(lengthscale=1e3), dict(variance=1e6, lengthscale=1e3)]
)
def test_hard_inputs_give_finite_answers(rng, params):
    X = rng.normal(size=(10, 2))
    X[5] = X[4]  # a duplicated point
    t = (X[:, 0] > 0).astype(int)  # separable data
    kernel = SEKernel(**params)
    K = kernel.K(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no JitterWarning, no overflow
        lower = optimize_lower_bound(kernel, X, t, optimize_theta=False)
        upper = optimize_upper_bound(K, t)
        mean, var = predict_lower(lower.bound, kernel, X, X)
        mean_u, var_u = predict_upper(upper.bound, kernel, X, X)
    for value in (lower.bound.log_Z, upper.bound.log_Z, *lower.bound.grad_nu, *mean, *var, *mean_u, *var_u):
        assert np.isfinite(value)
    assert lower.bound.log_Z <= upper.bound.log_Z
    assert upper.bound.log_Z <= 1e-12  # Z'' ≤ 1 at the optimum (μ = 0 gives Z'' = 1)


def test_bad_inputs_raise(rng):
    X, t, kernel = small_problem(rng)
    K = kernel.K(X)
    with pytest.raises(ValueError, match="nu"):
        lower_bound(K, t, np.ones(2))
    with pytest.raises(ValueError, match="t"):
        lower_bound(K, np.array([0, 2, 1]), np.ones(3))
    with pytest.raises(ValueError, match="K"):
        lower_bound(np.ones((3, 2)), t, np.ones(3))
    with pytest.raises(ValueError, match="K"):
        upper_bound(np.full((3, 3), np.nan), t, np.full(3, 0.5))
    with pytest.raises(ValueError, match="mu"):
        upper_bound(K, t, np.array([0.5, 1.5, 0.2]))
    with pytest.raises(ValueError, match="dK"):
        lower_bound(K, t, np.ones(3), dK=np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="method"):
        optimize_upper_bound(K, t, method="cg")
    with pytest.raises(ValueError, match="nu_update"):
        optimize_lower_bound(kernel, X, t, nu_update="em")
    with pytest.raises(ValueError, match="kernel"):
        optimize_lower_bound("se", X, t)
    with pytest.raises(ValueError, match="rng"):
        optimize_lower_bound(kernel, X, t, n_restarts=2, rng=None)
    with pytest.raises(ValueError, match="n_restarts"):
        optimize_lower_bound(kernel, X, t, n_restarts=-1, rng=0)
    with pytest.raises(ValueError, match="fixed"):
        optimize_lower_bound(kernel, X, t, fixed=("log_noise",))
    # options are keyword-only
    with pytest.raises(TypeError):
        optimize_lower_bound(kernel, X, t, None)
    with pytest.raises(TypeError):
        optimize_upper_bound(K, t, None)
    with pytest.raises(TypeError):
        lower_bound(K, t, np.ones(3), kernel.gradients(X))
    bound = lower_bound(K, t, np.ones(3))
    with pytest.raises(ValueError, match="points the result was computed for"):
        predict_lower(bound, kernel, X[:2], X)
    with pytest.raises(ValueError, match="X_test"):
        predict_upper(upper_bound(K, t, np.full(3, 0.5)), kernel, X, np.zeros((2, 5)))


def test_non_convergence_warns_with_iteration_count(rng):
    X, t, kernel = small_problem(rng, n=8)
    with pytest.warns(ConvergenceWarning, match="after 2 L-BFGS-B iterations"):
        fit = optimize_lower_bound(kernel, X, t, max_iter=2)
    assert not fit.converged and fit.n_iterations == 2
    assert fit.optimization.gradient_norm > fit.optimization.tolerance


def test_converged_means_a_small_projected_gradient(rng):
    X, t, kernel = small_problem(rng, n=8)
    for nu_update in ("gradient", "fixed_point"):
        fit = optimize_lower_bound(kernel, X, t, nu_update=nu_update)
        search = fit.optimization
        assert fit.converged and search.converged
        assert search.gradient_norm <= 1e-5 * max(1.0, abs(search.value))
        # the search's box is the shared theta_box for θ (ν is unbounded)
        box = theta_box(fit.kernel)
        assert np.all(fit.kernel.theta >= box[:, 0]) and np.all(fit.kernel.theta <= box[:, 1])
    # θ fixed: ν by the joint search still converges, and the kernel is untouched
    fixed_theta = optimize_lower_bound(kernel, X, t, optimize_theta=False)
    np.testing.assert_array_equal(fixed_theta.kernel.theta, kernel.theta)
    held = optimize_lower_bound(kernel, X, t, fixed=("log_variance",))
    assert held.kernel.variance == pytest.approx(kernel.variance, rel=1e-12)


def test_restarts_return_the_best_start_and_are_reproducible(rng):
    X, t, kernel = small_problem(rng, n=8)
    fit_a = optimize_lower_bound(kernel, X, t, n_restarts=3, rng=7)
    fit_b = optimize_lower_bound(kernel, X, t, n_restarts=3, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(fit_a.kernel.theta, fit_b.kernel.theta)
    np.testing.assert_array_equal(fit_a.optimization.values, fit_b.optimization.values)
    assert fit_a.objective == fit_b.objective
    # one value per start: θ₀ and three draws θ₀ + restart_sd·N(0, I) from the seeded stream
    search = fit_a.optimization
    assert search.values.shape == (4,)
    draws = kernel.theta + 1.0 * np.random.default_rng(7).standard_normal((3, kernel.theta.size))
    np.testing.assert_allclose(search.starts[1:, 8:], draws, rtol=0, atol=1e-12)
    # the best start is kept ...
    assert search.value == np.max(search.values)
    assert fit_a.objective >= search.value - 1e-12  # (ν polished by fixed-point steps never lowers Z')
    # ... and every start run on its own reaches the value the restart recorded for it
    singles = [optimize_lower_bound(kernel.with_theta(theta), X, t) for theta in (kernel.theta, *draws)]
    np.testing.assert_allclose(search.values, [single.optimization.value for single in singles], rtol=0, atol=1e-7)
    assert fit_a.objective == pytest.approx(max(single.objective for single in singles), abs=1e-7)
    # the starts here do not all reach the same optimum, so "best" is a real choice
    assert np.ptp(search.values) > 1e-3
    # another seed draws other starts
    other = optimize_lower_bound(kernel, X, t, n_restarts=3, rng=8)
    assert not np.allclose(other.optimization.starts[1:], search.starts[1:])


def test_newton_upper_bound_is_the_laplace_mode(rng, monkeypatch):
    X, t, kernel = small_problem(rng, n=8)
    K = kernel.K(X)
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return laplace_mode(*args, **kwargs)

    monkeypatch.setattr(variational_bounds, "laplace_mode", spy)
    newton = optimize_upper_bound(K, t, method="newton")
    assert len(calls) == 1 and isinstance(calls[0]["likelihood"], LogisticLikelihood)
    mode = laplace_mode(K, 2 * t - 1, **calls[0])
    np.testing.assert_allclose(newton.bound.mu, expit(-(2 * t - 1) * mode.f), rtol=0, atol=1e-14)
    assert newton.n_iterations == newton.n_evaluations == mode.n_iter
    # converged: the dual is stationary to √tol = 1e-6 (the default tol is 1e-12)
    assert newton.converged and mode.converged and mode.gradient_norm <= 1e-6
    optimize_upper_bound(K, t, method="gradient")
    assert len(calls) == 1  # the gradient route does not use it


@pytest.mark.parametrize(
    "params",
    [
        dict(variance=2.0, lengthscale=[0.8, 1.3], bias=0.3),
        dict(variance=20.0, lengthscale=[0.5, 2.0]),
        dict(variance=0.05, lengthscale=3.0, bias=1.0),
    ],
)
def test_newton_and_gradient_upper_bounds_agree(rng, params):
    X = rng.normal(size=(15, 2))
    t = (X[:, 0] + 0.7 * rng.normal(size=15) > 0).astype(int)
    K = SEKernel(**params).K(X)
    newton = optimize_upper_bound(K, t, method="newton")
    gradient = optimize_upper_bound(K, t, method="gradient")
    assert newton.converged and gradient.converged
    assert newton.bound.log_Z == pytest.approx(gradient.bound.log_Z, abs=1e-8)
    np.testing.assert_allclose(newton.bound.mu, gradient.bound.mu, atol=1e-4)
    # the minimum over μ is the Laplace objective Ψ at the mode (duality)
    s = 2 * t - 1
    f = K @ newton.bound.b
    psi = np.sum(log_sigmoid(s * f)) - 0.5 * f @ np.linalg.solve(K, f)
    assert newton.bound.log_Z == pytest.approx(psi, abs=1e-8)


def test_newton_upper_bound_non_convergence_warns_once_in_its_own_words(rng):
    X, t, kernel = small_problem(rng, n=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = optimize_upper_bound(kernel.K(X), t, method="newton", max_iter=1)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert messages == ["minimising Z'' (newton) did not converge after 1 iterations"]
    assert not fit.converged and fit.n_iterations == 1


def test_parameters_not_learnt_are_never_moved_onto_the_box(rng):
    X, t, _ = small_problem(rng, n=8)
    kernel = SEKernel(
        variance=2.0, lengthscale=[0.8, 1.3], bias=1e-10, jitter=1e-10, learn_bias=True, learn_jitter=True
    )
    assert kernel.theta[-2] < -20.0 and kernel.theta[-1] < -20.0  # outside theta_box
    untouched = optimize_lower_bound(kernel, X, t, optimize_theta=False)
    np.testing.assert_array_equal(untouched.kernel.theta, kernel.theta)
    for nu_update in ("gradient", "fixed_point"):
        fit = optimize_lower_bound(kernel, X, t, nu_update=nu_update, fixed=("log_bias", "log_jitter"))
        np.testing.assert_array_equal(fit.kernel.theta[-2:], kernel.theta[-2:])
        assert fit.converged
