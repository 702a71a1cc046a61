"""Tests of the multi-class softmax Laplace approximation (gpc_ref.laplace_multiclass).

The reference for every fast O(C n³) computation is the same quantity built densely from the
Cn × Cn matrices K = blockdiag(K_c) and W = diag(π) − ΠΠᵀ (class-major stacking).
"""

import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient
from scipy.linalg import block_diag

from gpc_ref import ConvergenceWarning
from gpc_ref import HyperparameterBoundWarning
from gpc_ref import gaussian_integrals as gi
from gpc_ref import laplace_multiclass as lp
from gpc_ref.gaussian_integrals import sigmoid_gaussian_quadrature
from gpc_ref.hyperparameters import theta_box
from gpc_ref.hyperpriors import log_hyperprior
from gpc_ref.kernels import SEKernel
from gpc_ref.kernels import stack_theta
from gpc_ref.kernels import unstack_theta
from gpc_ref.laplace import laplace_mode
from gpc_ref.laplace import maximize_laplace_evidence


# --------------------------------------------------------------------------- dense references
def softmax(F):
    Z = np.exp(F - F.max(axis=1, keepdims=True))
    return Z / Z.sum(axis=1, keepdims=True)


def dense_W(pi):
    """W = diag(π) − ΠΠᵀ as a Cn × Cn matrix (class-major)."""
    n, C = pi.shape
    Pi = np.vstack([np.diag(pi[:, c]) for c in range(C)])
    return np.diag(pi.T.ravel()) - Pi @ Pi.T


def dense_newton_step(Ks, Y, F):
    """f_new = (K⁻¹ + W)⁻¹(W f + t − π), solved as (I + KW) f_new = K(W f + t − π)."""
    n, C = Y.shape
    pi = softmax(F)
    K = block_diag(*Ks)
    W = dense_W(pi)
    rhs = K @ (W @ F.T.ravel() + Y.T.ravel() - pi.T.ravel())
    f_new = np.linalg.solve(np.eye(n * C) + K @ W, rhs)
    return f_new.reshape(C, n).T


def dense_log_evidence(Ks, Y, F):
    n, C = Y.shape
    pi = softmax(F)
    K = block_diag(*Ks)
    f = F.T.ravel()
    log_lik = np.sum(Y * F) - np.sum(np.log(np.sum(np.exp(F), axis=1)))
    log_det = np.linalg.slogdet(np.eye(n * C) + K @ dense_W(pi))[1]
    return -0.5 * f @ np.linalg.solve(K, f) + log_lik - 0.5 * log_det


@pytest.fixture
def problem(rng):
    n, C = 14, 3
    X = rng.normal(size=(n, 2))
    codes = np.concatenate([[0, 1, 2], rng.integers(0, C, n - 3)])
    Y = lp.one_hot_labels(codes, C)
    kernels = [
        SEKernel(variance=2.0, lengthscale=0.8, bias=0.3),
        SEKernel(variance=1.0, lengthscale=[0.6, 1.5]),
        SEKernel(variance=3.0, lengthscale=1.2, bias=0.1),
    ]
    return X, Y, kernels


# --------------------------------------------------------------------------- Newton's method
def test_fast_newton_step_equals_dense_step(problem, rng):
    X, Y, kernels = problem
    Ks = np.stack([k.K(X) for k in kernels])
    for _ in range(3):
        F = 2.0 * rng.normal(size=Y.shape)
        F_fast, a = lp.softmax_newton_step(Ks, Y, F)
        np.testing.assert_allclose(F_fast, dense_newton_step(Ks, Y, F), rtol=1e-10, atol=1e-10)
        # the returned a satisfies f_new = K a class by class
        np.testing.assert_allclose(F_fast, np.stack([Ks[c] @ a[:, c] for c in range(3)], axis=1), atol=1e-10)


def test_shared_covariance_is_accepted(problem):
    X, Y, kernels = problem
    K = kernels[0].K(X)
    shared = lp.softmax_laplace_mode(K, Y)
    stacked = lp.softmax_laplace_mode(np.stack([K] * 3), Y)
    np.testing.assert_allclose(shared.f, stacked.f)
    assert shared.log_evidence == pytest.approx(stacked.log_evidence)


def test_mode_is_stationary_and_log_evidence_matches_dense(problem):
    X, Y, kernels = problem
    Ks = np.stack([k.K(X) for k in kernels])
    mode = lp.softmax_laplace_mode(Ks, Y)
    assert mode.converged and mode.n_iter < 15
    # W&B 1998 App. C: at the mode f̂ = K(t − π̂)
    stationary = np.stack([Ks[c] @ (Y - mode.pi)[:, c] for c in range(3)], axis=1)
    np.testing.assert_allclose(mode.f, stationary, atol=1e-8)
    np.testing.assert_allclose(mode.a, Y - mode.pi, atol=1e-8)
    np.testing.assert_allclose(mode.pi.sum(axis=1), 1.0)
    # the O(C n³) determinant (with the Σ log M_ii term GPML Alg. 3.3 omits) equals the dense one
    assert mode.log_evidence == pytest.approx(dense_log_evidence(Ks, Y, mode.f), rel=1e-10)


def test_gpml_determinant_needs_the_M_term(problem):
    """Dropping Σ_i log M_ii (as GPML Alg. 3.3 prints it) changes log q by a visible amount."""
    X, Y, kernels = problem
    Ks = np.stack([k.K(X) for k in kernels])
    mode = lp.softmax_laplace_mode(Ks, Y)
    gpml_printed = mode.psi - np.sum(np.log(np.diagonal(mode.L, axis1=1, axis2=2)))
    assert abs(gpml_printed - dense_log_evidence(Ks, Y, mode.f)) > 1e-2
    assert mode.log_evidence == pytest.approx(dense_log_evidence(Ks, Y, mode.f), rel=1e-10)


def test_W_is_singular_but_newton_matrix_is_positive_definite(problem, rng):
    X, Y, kernels = problem
    pi = softmax(rng.normal(size=Y.shape))
    W = dense_W(pi)
    n, C = Y.shape
    # adding the same amount to every class at point i leaves the softmax unchanged: W 1_i = 0
    for i in range(n):
        ones_i = np.zeros((n, C))
        ones_i[i] = 1.0
        np.testing.assert_allclose(W @ ones_i.T.ravel(), 0.0, atol=1e-14)
    assert np.sum(np.linalg.eigvalsh(W) < 1e-12) == n
    K = block_diag(*[k.K(X) for k in kernels])
    assert np.linalg.eigvalsh(np.linalg.inv(K) + W).min() > 0


def test_two_classes_reduce_to_binary_laplace(rng):
    """With C = 2 and a shared K, g = f¹ − f² has prior N(0, 2K) and a logistic likelihood."""
    X = rng.normal(size=(12, 2))
    codes = np.array([0, 1] * 6)
    K = SEKernel(variance=1.5, lengthscale=0.9).K(X)
    soft = lp.softmax_laplace_mode(K, lp.one_hot_labels(codes, 2))
    binary = laplace_mode(2.0 * K, np.where(codes == 0, 1.0, -1.0))
    np.testing.assert_allclose(soft.f[:, 0] - soft.f[:, 1], binary.f, atol=1e-7)
    assert soft.log_evidence == pytest.approx(binary.log_evidence, rel=1e-8)


def test_warm_start_reaches_the_same_mode(problem, rng):
    X, Y, kernels = problem
    Ks = np.stack([k.K(X) for k in kernels])
    cold = lp.softmax_laplace_mode(Ks, Y)
    warm = lp.softmax_laplace_mode(Ks, Y, f_init=cold.f + 0.3 * rng.normal(size=Y.shape))
    np.testing.assert_allclose(warm.f, cold.f, atol=1e-7)
    assert warm.log_evidence == pytest.approx(cold.log_evidence, rel=1e-10)


def test_core_and_driver_reach_the_same_mode(problem, rng):
    """softmax_laplace_mode runs the core's halved Newton step and stopping test: from f = 0 the two reach the
    same mode (to rounding, amplified by nothing larger than the Newton step's conditioning)."""
    X, Y, kernels = problem
    for _ in range(10):
        scale = float(np.exp(rng.uniform(-1.0, 2.0)))
        Ks = np.stack([k.with_params(variance=scale * k.variance).K(X) for k in kernels])
        core, driver = lp.softmax_laplace_mode_core(Ks, Y), lp.softmax_laplace_mode(Ks, Y)
        assert core.converged and driver.converged and core.n_iter == driver.n_iter
        np.testing.assert_allclose(core.f, driver.f, rtol=0, atol=1e-8)
        assert core.log_evidence == pytest.approx(driver.log_evidence, rel=1e-10)


def test_where_rounding_spoils_the_direction_the_core_crawls_and_the_driver_stops():
    """The case below (every step halved): the core, which has no stall test, runs to max_iter silently;
    the driver stops early and says why."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    Y = lp.one_hot_labels(rng.choice(4, size=40, p=[0.3, 0.06, 0.14, 0.5]), 4)
    K = np.stack([SEKernel(variance=np.exp(15.0), lengthscale=np.exp(10.0)).K(X)] * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        core = lp.softmax_laplace_mode_core(K, Y, max_iter=60)
    with pytest.warns(ConvergenceWarning, match="damped, step after step"):
        driver = lp.softmax_laplace_mode(K, Y, max_iter=60)
    assert not core.converged and core.n_iter == 60
    assert not driver.converged and driver.n_iter < 30


def test_newton_stops_where_rounding_spoils_its_direction():
    # signal variance 3.3e6 and lengthscale 2.2e4 (the top corner of the box): K is a huge, nearly
    # constant matrix, every Newton step has to be damped, and Newton used to crawl on to max_iter
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    Y = lp.one_hot_labels(rng.choice(4, size=40, p=[0.3, 0.06, 0.14, 0.5]), 4)
    K = SEKernel(variance=np.exp(15.0), lengthscale=np.exp(10.0)).K(X)
    with pytest.warns(ConvergenceWarning, match="damped, step after step"):
        mode = lp.softmax_laplace_mode(K, Y)
    assert not mode.converged and mode.n_iter < 30
    assert np.isfinite(mode.log_evidence)


def test_non_convergence_warns_with_iteration_count(problem):
    X, Y, kernels = problem
    with pytest.warns(ConvergenceWarning, match="1 iterations"):
        mode = lp.softmax_laplace_mode(kernels[0].K(X), Y, max_iter=1)
    assert not mode.converged
    assert mode.gradient_norm > 1e-3  # one step from f = 0 is not a mode


def test_converged_mode_has_a_small_gradient(problem):
    X, Y, kernels = problem
    K = np.stack([k.K(X) for k in kernels])
    mode = lp.softmax_laplace_mode(K, Y, tol=1e-10)
    assert mode.converged and mode.gradient_norm <= np.sqrt(1e-10)
    # ∇Ψ = t − π − K⁻¹f, with K⁻¹f = a
    np.testing.assert_allclose(mode.gradient_norm, np.max(np.abs(Y - mode.pi - mode.a)), rtol=1e-6, atol=1e-15)


# --------------------------------------------------------------------------- evidence gradient
@pytest.mark.parametrize("shared", [True, False])
def test_evidence_gradient_matches_finite_differences(problem, shared):
    X, Y, kernels = problem
    kernel = kernels[0] if shared else kernels
    result = lp.softmax_laplace_evidence(kernel, X, Y)
    theta = stack_theta(kernel, 3)

    def log_q(t):
        return lp.softmax_laplace_evidence(unstack_theta(kernel, t, 3), X, Y).log_evidence

    numeric = finite_difference_gradient(log_q, theta, step=1e-5)
    assert result.gradient.shape == theta.shape
    np.testing.assert_allclose(result.gradient, numeric, rtol=1e-5, atol=1e-6)


def test_gradient_includes_the_implicit_term(problem):
    """Without s ᵀ ∂f̂/∂θ the gradient would be wrong: check the implicit part is not negligible."""
    X, Y, kernels = problem
    kernel = kernels[0]
    result = lp.softmax_laplace_evidence(kernel, X, Y)
    mode = result.mode
    # explicit part only, summed over the (identical) class blocks
    G = kernel.gradients(X)
    explicit = np.zeros(len(kernel.theta))
    for c in range(3):
        Z = np.linalg.solve(mode.M, mode.E[c])
        inner = mode.E[c] - Z.T @ Z
        explicit += 0.5 * np.einsum("i,pij,j->p", mode.a[:, c], G, mode.a[:, c])
        explicit -= 0.5 * np.einsum("ij,pji->p", inner, G)
    assert np.max(np.abs(result.gradient - explicit)) > 1e-3


# --------------------------------------------------------------------------- predictions
def test_latent_predictive_matches_dense(problem, rng):
    X, Y, kernels = problem
    n, C = Y.shape
    mode = lp.softmax_laplace_evidence(kernels, X, Y).mode
    X_test = rng.normal(size=(4, 2))
    mean, cov = lp.softmax_laplace_predict_latent(mode, kernels, X, X_test)
    K = block_diag(*[k.K(X) for k in kernels])
    W = dense_W(mode.pi)
    posterior_precision = np.linalg.inv(K) + W
    for j in range(X_test.shape[0]):
        Q = np.zeros((n * C, C))
        for c in range(C):
            Q[c * n : (c + 1) * n, c] = kernels[c].K(X, X_test[j : j + 1])[:, 0]
        K_inv_Q = np.linalg.solve(K, Q)
        # q(f_*) = N(Qᵀ K⁻¹ f̂, k_** − Qᵀ K⁻¹ Q + Qᵀ K⁻¹ (K⁻¹ + W)⁻¹ K⁻¹ Q)
        dense_mean = K_inv_Q.T @ mode.f.T.ravel()
        prior_var = np.diag([kernels[c].diag(X_test[j : j + 1])[0] for c in range(C)])
        dense_cov = prior_var - Q.T @ K_inv_Q + K_inv_Q.T @ np.linalg.solve(posterior_precision, K_inv_Q)
        np.testing.assert_allclose(mean[j], dense_mean, atol=1e-7)
        np.testing.assert_allclose(cov[j], dense_cov, atol=1e-9)


@pytest.mark.parametrize("method", ["qmc", "gauss_hermite", "cubature", "monte_carlo"])
def test_probabilities_are_valid(problem, rng, method):
    X, Y, kernels = problem
    mode = lp.softmax_laplace_evidence(kernels[0], X, Y).mode
    proba = lp.softmax_laplace_predict_proba(mode, kernels[0], X, 3.0 * rng.normal(size=(6, 2)), method=method, rng=0)
    assert proba.shape == (6, 3)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def test_deterministic_rules_agree_with_monte_carlo(rng):
    C = 4
    mean = rng.normal(size=(5, C))
    A = rng.normal(size=(5, C, C))
    cov = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(C)
    reference = gi.softmax_gaussian_expectation(mean, cov, method="monte_carlo", rng=1, n_samples=200_000)
    gh = gi.softmax_gaussian_expectation(mean, cov, method="gauss_hermite", n_nodes=12)
    # Monte Carlo standard error ≤ 0.5/√200000 ≈ 1.1e-3 (latent variances here are up to ~10)
    np.testing.assert_allclose(gh, reference, atol=5e-3)
    np.testing.assert_allclose(gi.softmax_gaussian_expectation(mean, cov), reference, atol=5e-3)
    # with latent standard deviations near 10 the polynomial rules fail but QMC does not
    wide = 20.0 * cov
    reference = gi.softmax_gaussian_expectation(mean, wide, method="monte_carlo", rng=1, n_samples=200_000)
    np.testing.assert_allclose(gi.softmax_gaussian_expectation(mean, wide, method="qmc"), reference, atol=6e-3)
    # the degree-5 cubature rule is accurate only for moderate latent variances (≲ 1)
    small = 0.1 * cov
    reference = gi.softmax_gaussian_expectation(mean, small, method="monte_carlo", rng=1, n_samples=200_000)
    cub = gi.softmax_gaussian_expectation(mean, small, method="cubature")
    np.testing.assert_allclose(cub, reference, atol=5e-3)


def test_two_class_expectation_is_the_sigmoid_integral(rng):
    mean = rng.normal(size=(6, 2))
    A = rng.normal(size=(6, 2, 2))
    cov = A @ np.swapaxes(A, 1, 2)
    proba = gi.softmax_gaussian_expectation(mean, cov, method="gauss_hermite", n_nodes=64)
    mu = mean[:, 0] - mean[:, 1]
    var = cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    np.testing.assert_allclose(proba[:, 0], sigmoid_gaussian_quadrature(mu, var), atol=1e-10)


def test_cubature_rule_integrates_degree_five_moments():
    for dim in (1, 2, 5):
        nodes, weights = gi._cubature_degree5(dim)
        assert len(weights) == 2 * dim**2 + 1
        assert weights.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(weights @ nodes, 0.0, atol=1e-14)
        np.testing.assert_allclose((nodes * weights[:, None]).T @ nodes, np.eye(dim), atol=1e-12)
        assert weights @ nodes[:, 0] ** 4 == pytest.approx(3.0)
        assert weights @ nodes[:, 0] ** 3 == pytest.approx(0.0, abs=1e-12)
        if dim > 1:
            assert weights @ (nodes[:, 0] ** 2 * nodes[:, 1] ** 2) == pytest.approx(1.0)


def test_qmc_is_deterministic_and_converges(rng):
    mean = rng.normal(size=(3, 3))
    A = rng.normal(size=(3, 3, 3))
    cov = 4.0 * A @ np.swapaxes(A, 1, 2)
    first = gi.softmax_gaussian_expectation(mean, cov, method="qmc")
    np.testing.assert_array_equal(first, gi.softmax_gaussian_expectation(mean, cov, method="qmc"))
    # for C = 3 a 200-node Gauss-Hermite grid is an accurate reference; QMC approaches it
    reference = gi.softmax_gaussian_expectation(mean, cov, method="gauss_hermite", n_nodes=200, max_nodes=40000)
    coarse = np.abs(gi.softmax_gaussian_expectation(mean, cov, method="qmc", n_samples=256) - reference).max()
    fine = np.abs(gi.softmax_gaussian_expectation(mean, cov, method="qmc", n_samples=2**14) - reference).max()
    assert fine < 2e-3 and fine < coarse


def test_monte_carlo_is_reproducible(problem):
    X, Y, kernels = problem
    mode = lp.softmax_laplace_evidence(kernels[0], X, Y).mode
    X_test = np.array([[0.3, -0.2], [1.0, 2.0]])
    first = lp.softmax_laplace_predict_proba(mode, kernels[0], X, X_test, method="monte_carlo", rng=7)
    second = lp.softmax_laplace_predict_proba(
        mode, kernels[0], X, X_test, method="monte_carlo", rng=np.random.default_rng(7)
    )
    other = lp.softmax_laplace_predict_proba(mode, kernels[0], X, X_test, method="monte_carlo", rng=8)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


# --------------------------------------------------------------------------- hyperparameters
def test_optimizer_increases_the_objective_and_is_reproducible(problem):
    X, Y, kernels = problem
    start = SEKernel(variance=1.0, lengthscale=1.0, bias=0.5)
    before = lp.softmax_laplace_evidence(start, X, Y).log_evidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HyperparameterBoundWarning)  # the bias may run to the box's bottom
        fit = lp.softmax_laplace_optimize(start, X, Y, n_restarts=1, rng=3)
    assert fit.log_evidence >= before
    assert fit.objective == pytest.approx(max(fit.optimization.values), abs=1e-6)
    assert fit.optimization.values.shape == (2,) and fit.optimization.n_evaluations > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HyperparameterBoundWarning)
        again = lp.softmax_laplace_optimize(start, X, Y, n_restarts=1, rng=3)
    np.testing.assert_allclose(again.kernel.theta, fit.kernel.theta)
    # with a prior the objective is evidence + log prior
    prior = lambda theta: log_hyperprior(start.with_theta(theta))
    penalised = lp.softmax_laplace_optimize(start, X, Y, log_prior=prior)
    assert penalised.objective == pytest.approx(penalised.log_evidence + prior(penalised.kernel.theta)[0])


def test_warm_starts_do_not_change_the_optimum(problem):
    # the search warm-starts Newton from the previous evaluation's mode and keeps its evaluation at the
    # optimum; with every evaluation started from f = 0 instead, it reaches the same point
    X, Y, kernels = problem
    start = SEKernel(variance=1.0, lengthscale=1.0, bias=0.5)
    search = dict(bounds=theta_box(start), names=start.theta_names)

    def warm(theta, f_init):
        return lp.softmax_laplace_evidence(start.with_theta(theta), X, Y, f_init=f_init)

    def cold(theta, f_init):
        return lp.softmax_laplace_evidence(start.with_theta(theta), X, Y)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HyperparameterBoundWarning)  # the bias may run to the box's bottom
        fit_warm, evidence_warm, _ = maximize_laplace_evidence(warm, start.theta, **search)
        fit_cold, evidence_cold, _ = maximize_laplace_evidence(cold, start.theta, **search)
    assert fit_warm.converged and fit_cold.converged
    np.testing.assert_allclose(fit_warm.theta, fit_cold.theta, atol=1e-3)
    assert fit_warm.value == pytest.approx(fit_cold.value, abs=1e-7)
    # the kept evaluation is that of a converged mode at the optimum: a cold one there agrees
    fresh = cold(fit_warm.theta, None)
    assert evidence_warm.log_evidence == pytest.approx(fresh.log_evidence, abs=1e-8)
    np.testing.assert_allclose(evidence_warm.gradient, fresh.gradient, atol=1e-6)
    np.testing.assert_allclose(evidence_warm.mode.f, fresh.mode.f, atol=1e-6)
    assert evidence_cold.log_evidence == pytest.approx(fit_cold.value)


def test_an_optimum_on_the_box_edge_warns_naming_the_class_and_parameter(problem):
    # one kernel per class, each signal variance capped at 0.5 (below its optimum): the search ends on the cap
    X, Y, kernels = problem
    start = [SEKernel(variance=0.3, lengthscale=1.0) for _ in range(3)]
    bounds = theta_box(start)
    bounds[0::2, 1] = np.log(0.5)  # the log_variance rows
    with pytest.warns(HyperparameterBoundWarning) as record:
        fit = lp.softmax_laplace_optimize(start, X, Y, bounds=bounds)
    message = str(record[0].message)
    assert message.startswith("softmax_laplace_optimize: the optimum is on the edge of the hyperparameter box")
    assert "class 0: log_variance" in message and "at the upper edge, -0.6931 (variance 0.5)" in message
    assert fit.optimization.at_bound[0::2].any() and not fit.optimization.at_bound[1::2].any()


def test_optimizer_converges_in_the_shared_box(problem):
    X, Y, kernels = problem
    start = SEKernel(variance=1.0, lengthscale=1.0, bias=0.5)
    prior = lambda theta: log_hyperprior(start.with_theta(theta))
    fit = lp.softmax_laplace_optimize(start, X, Y, log_prior=prior)
    assert fit.converged and fit.optimization.converged
    np.testing.assert_array_equal(fit.optimization.bounds, theta_box(start))
    # converged means a stationary point of the objective (none of the parameters is at the box's edge)
    assert not fit.optimization.at_bound.any()
    gradient = lp.softmax_laplace_evidence(fit.kernel, X, Y).gradient + prior(fit.kernel.theta)[1]
    np.testing.assert_allclose(gradient, 0.0, atol=1e-3)
    # one kernel per class: the stacked θ, one block per class; three iterations are not enough, and it says so
    with pytest.warns(ConvergenceWarning, match="not converged after 3 L-BFGS-B iterations"):
        per_class = lp.softmax_laplace_optimize(kernels, X, Y, max_iter=3)
    assert not per_class.converged and per_class.optimization.n_iter == 3
    assert len(per_class.kernel) == 3 and per_class.optimization.theta.shape == stack_theta(kernels, 3).shape
    assert per_class.objective >= lp.softmax_laplace_evidence(kernels, X, Y).log_evidence


# --------------------------------------------------------------------------- hard inputs
@pytest.mark.parametrize(
    "kernel", [SEKernel(1.0, 1.0), SEKernel(1e6, 1.0), SEKernel(1.0, 1e-3), SEKernel(1.0, 1e3), SEKernel(1e6, 1e3)]
)
def test_hard_inputs_give_finite_answers(rng, kernel):
    codes = np.repeat(np.arange(3), 8)
    centres = 12.0 * np.eye(3)[:, :2]
    X = centres[codes] + rng.normal(size=(24, 2))  # perfectly separable
    X = np.vstack([X, X[:4]])  # with duplicate inputs
    Y = lp.one_hot_labels(np.concatenate([codes, codes[:4]]), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = lp.softmax_laplace_evidence(kernel, X, Y)
    assert result.mode.converged
    assert np.isfinite(result.log_evidence) and np.all(np.isfinite(result.gradient))
    X_test = np.vstack([X[:2], 30.0 * rng.normal(size=(3, 2))])
    for method in ("qmc", "gauss_hermite", "cubature", "monte_carlo"):
        proba = lp.softmax_laplace_predict_proba(result.mode, kernel, X, X_test, method=method, rng=0)
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # the latent means at the training points point to their own class (with variance 1e6 the
    # Laplace covariance there is close to the prior's, since W ≈ 0 for saturated π, so the
    # *probabilities* are nearly uniform: that is the approximation, not a numerical failure)
    mean, _ = lp.softmax_laplace_predict_latent(result.mode, kernel, X, X[:24])
    if kernel.lengthscale < 1e3:
        assert np.all(mean.argmax(axis=1) == codes)


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise(problem):
    X, Y, kernels = problem
    K = kernels[0].K(X)
    with pytest.raises(ValueError, match="one-of-C"):
        lp.softmax_laplace_mode(K, Y * 2)
    with pytest.raises(ValueError, match="C >= 2"):
        lp.softmax_laplace_mode(K, np.ones((len(X), 1)))
    with pytest.raises(ValueError, match="shape"):
        lp.softmax_laplace_mode(K[:-1, :-1], Y)
    with pytest.raises(ValueError, match="NaN"):
        lp.softmax_laplace_mode(np.where(np.eye(len(X)) > 0, np.nan, K), Y)
    with pytest.raises(ValueError, match="symmetric"):
        lp.softmax_laplace_mode(K + np.triu(np.ones_like(K), 1), Y)
    with pytest.raises(ValueError, match="f_init"):
        lp.softmax_laplace_mode(K, Y, f_init=np.zeros((len(X), 2)))
    with pytest.raises(ValueError, match="tol"):
        lp.softmax_laplace_mode(K, Y, tol=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        lp.softmax_laplace_mode(K, Y, max_iter=0)
    with pytest.raises(ValueError, match="kernel"):
        lp.softmax_laplace_evidence(kernels[:2], X, Y)
    with pytest.raises(ValueError, match="same number of points"):
        lp.softmax_laplace_evidence(kernels[0], X[:-1], Y)
    mode = lp.softmax_laplace_mode(K, Y)
    with pytest.raises(ValueError, match="rng"):
        lp.softmax_laplace_predict_proba(mode, kernels[0], X, X[:2], method="monte_carlo")
    with pytest.raises(ValueError, match="method"):
        lp.softmax_laplace_predict_proba(mode, kernels[0], X, X[:2], method="probit")
    with pytest.raises(ValueError, match="power of two"):
        lp.softmax_laplace_predict_proba(mode, kernels[0], X, X[:2], method="qmc", n_samples=1000)
    with pytest.raises(ValueError, match="points"):
        lp.softmax_laplace_predict_latent(mode, kernels[0], X[:-1], X[:2])
    with pytest.raises(ValueError, match="X_test"):
        lp.softmax_laplace_predict_latent(mode, kernels[0], X, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="mode"):
        lp.softmax_laplace_predict_latent("mode", kernels[0], X, X[:2])
    with pytest.raises(ValueError, match="codes"):
        lp.one_hot_labels([0, 1, 3], 3)
    with pytest.raises(ValueError, match="n_restarts"):
        lp.softmax_laplace_optimize(kernels[0], X, Y, n_restarts=-1)
    with pytest.raises(ValueError, match="rng"):
        lp.softmax_laplace_optimize(kernels[0], X, Y, n_restarts=1)
    with pytest.raises(TypeError):
        lp.softmax_laplace_mode(K, Y, None)  # options are keyword-only
    with pytest.raises(TypeError):
        lp.softmax_laplace_predict_proba(mode, kernels[0], X, X[:2], "qmc")
