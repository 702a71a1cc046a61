"""Tests of gpc_ref.ep: EP for GPC (probit and K&G's label-noise likelihood), its evidence, EM-EP."""
import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr

from conftest import finite_difference_gradient
from gpc_ref.ep import (EPConvergenceWarning, em_ep, ep_epsilon_gradient, ep_evidence_gradient, ep_log_evidence,
                        ep_predict, epsilon_from_errors, epsilon_from_expected_errors, expectation_propagation,
                        gradient_traces, m_step_objective, maximize_ep_evidence, posterior_from_sites,
                        site_likelihood, tilted_moments, variational_bound)
from gpc_ref.exact import quadrature_posterior
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood, LogisticLikelihood, ProbitLikelihood


def _data(rng, n=12, d=2, flip=0):
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    y[:flip] *= -1
    return X, y


# ----------------------------------------------------------------------------- tilted moments
@pytest.mark.parametrize("epsilon, s, y, mean, var", [
    (0.0, 1.0, 1.0, 0.3, 0.7),
    (0.0, 1.0, -1.0, 2.0, 3.0),
    (0.1, 0.5, 1.0, -1.5, 0.4),
    (0.2, 1e-3, -1.0, 0.2, 2.0),
    (0.05, 0.0, 1.0, -0.4, 1.3),
])
def test_tilted_moments_match_numerical_integration(epsilon, s, y, mean, var):
    sd = np.sqrt(var)

    def lik(f):
        return epsilon + (1 - 2 * epsilon) * (ndtr(y * f / np.sqrt(s)) if s > 0 else float(y * f > 0))

    def moment(k):
        return integrate.quad(lambda f: f**k * lik(f) * np.exp(-0.5 * (f - mean) ** 2 / var) / np.sqrt(2 * np.pi * var),
                              mean - 15 * sd, mean + 15 * sd, points=[0.0], epsabs=1e-13, limit=200)[0]

    Z, m1, m2 = moment(0), moment(1), moment(2)
    t = tilted_moments(y, mean, var, epsilon, s)
    tilted_mean, tilted_var = m1 / Z, m2 / Z - (m1 / Z) ** 2
    assert np.isclose(t.log_Z, np.log(Z), atol=1e-9)
    assert np.isclose(mean + var * t.alpha, tilted_mean, atol=1e-8)
    assert np.isclose(var - var**2 * t.beta, tilted_var, atol=1e-8)


def test_tilted_moments_finite_far_in_the_tails():
    for epsilon in (0.0, 0.1):
        t = tilted_moments(np.array([1.0, -1.0, 1.0]), np.array([-60.0, -60.0, 80.0]), np.ones(3), epsilon, 0.0)
        assert np.all(np.isfinite(t.log_Z)) and np.all(np.isfinite(t.alpha)) and np.all(np.isfinite(t.beta))
        # the tilted variance stays positive: σ²β < 1
        assert np.all(t.beta < 1.0)
    # ε > 0 and a hopeless cavity: the site is (nearly) ignored, β ≈ 0
    t = tilted_moments(1.0, -60.0, 1.0, 0.1, 0.0)
    assert abs(float(t.alpha)) < 1e-100 and abs(float(t.beta)) < 1e-100


def test_site_likelihood_and_bad_likelihood():
    assert site_likelihood(ProbitLikelihood()) == (0.0, 1.0)
    assert site_likelihood(LabelNoiseLikelihood(0.1, 0.0)) == (0.1, 0.0)
    with pytest.raises(ValueError, match="likelihood"):
        site_likelihood(LogisticLikelihood())


# ----------------------------------------------------------------------------- the posterior from the sites
@pytest.mark.parametrize("signs", ["positive", "mixed"])
def test_posterior_from_sites_matches_dense_formula(rng, signs):
    X, _ = _data(rng, n=8)
    K = SEKernel(variance=2.0, jitter=0.05).K(X)
    tau = rng.uniform(0.1, 2.0, 8)
    if signs == "mixed":
        tau[[1, 4]] = [-0.05, -0.1]
    nu = rng.normal(size=8)
    Sigma, mu, R, log_det = posterior_from_sites(K, tau, nu)
    # dense path (tests only): Σ = (C⁻¹ + T)⁻¹
    dense = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    assert np.allclose(Sigma, dense, atol=1e-10)
    assert np.allclose(mu, dense @ nu, atol=1e-10)
    assert np.allclose(R, np.linalg.inv(K) - np.linalg.inv(K) @ dense @ np.linalg.inv(K), atol=1e-8)
    assert np.isclose(log_det, np.linalg.slogdet(np.eye(8) + np.diag(tau) @ K)[1])


# ----------------------------------------------------------------------------- EP fixed point
@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.0),
                                        LabelNoiseLikelihood(0.0, 0.0)])
def test_moment_matching_at_convergence(rng, likelihood):
    X, y = _data(rng, n=15, flip=2)
    K = SEKernel(variance=3.0, lengthscale=1.2, jitter=0.2).K(X)
    result = expectation_propagation(K, y, likelihood, tol=1e-12, max_sweeps=500, damping=0.7)
    assert result.converged
    eps, s = site_likelihood(likelihood)
    t = tilted_moments(y, result.mean_cav, result.var_cav, eps, s)
    # every marginal of q equals the mean and variance of its tilted distribution
    assert np.allclose(result.mu, result.mean_cav + result.var_cav * t.alpha, atol=1e-9)
    assert np.allclose(np.diag(result.Sigma), result.var_cav - result.var_cav**2 * t.beta, atol=1e-9)
    # K&G eq 11: μ = C a with a_i = ∂log Z_i/∂μ_{-i} at the fixed point
    assert np.allclose(result.a, t.alpha, atol=1e-8)
    assert np.allclose(result.mu, K @ result.a, atol=1e-8)


def test_negative_site_precisions_are_handled(rng):
    X, y = _data(rng, n=20, flip=3)
    K = SEKernel(variance=4.0, lengthscale=1.0, jitter=0.05).K(X)
    result = expectation_propagation(K, y, LabelNoiseLikelihood(0.15, 0.0), damping=0.5, tol=1e-10, max_sweeps=500)
    assert result.converged
    assert np.any(result.tau < 0)
    assert np.isfinite(result.log_evidence)


def test_step_likelihood_with_eps_zero_puts_every_mean_on_the_right_side(rng):
    X, y = _data(rng, n=15, flip=3)
    K = SEKernel(variance=1.0, lengthscale=3.0, jitter=0.3).K(X)
    result = expectation_propagation(K, y, LabelNoiseLikelihood(0.0, 0.0), tol=1e-10, max_sweeps=500)
    assert np.all(y * result.mu > 0)
    # the classifier's own mean (without the latent noise) does get the flipped points wrong
    assert epsilon_from_errors(y, result.mu - 0.3 * result.a) > 0
    assert epsilon_from_errors(y, result.mu) == 0


# ----------------------------------------------------------------------------- evidence
def _site_log_normalisers(result):
    tau_cav = 1.0 / result.var_cav
    nu_cav = result.mean_cav * tau_cav
    tau_post, nu_post = tau_cav + result.tau, nu_cav + result.nu
    return (result.log_Z + 0.5 * np.log(tau_post / tau_cav) + 0.5 * result.mean_cav**2 * tau_cav
            - 0.5 * nu_post**2 / tau_post)


@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.5)])
def test_evidence_is_the_integral_of_prior_times_sites(rng, likelihood):
    X, _ = _data(rng, n=3)
    y = np.array([1.0, -1.0, -1.0])
    K = SEKernel(variance=2.0, lengthscale=0.8).K(X)
    result = expectation_propagation(K, y, likelihood, tol=1e-13, max_sweeps=500)
    c = _site_log_normalisers(result)
    quad = quadrature_posterior(K, lambda f: c + result.nu * f - 0.5 * result.tau * f**2, n_nodes=30)
    assert abs(result.log_evidence - quad.log_evidence) < 1e-10


def test_evidence_exact_for_one_point_and_close_for_three():
    K1 = np.array([[2.5]])
    for likelihood in (ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.3)):
        result = expectation_propagation(K1, [-1.0], likelihood, tol=1e-13)
        quad = quadrature_posterior(K1, lambda f: likelihood.log_p(np.array([-1.0]), f), n_nodes=100)
        assert abs(result.log_evidence - quad.log_evidence) < 1e-10
    X = np.array([[0.0], [0.5], [1.5]])
    K = SEKernel(variance=2.0).K(X)
    y = np.array([1.0, -1.0, 1.0])
    result = expectation_propagation(K, y, ProbitLikelihood(), tol=1e-13)
    quad = quadrature_posterior(K, lambda f: ProbitLikelihood().log_p(y, f), n_nodes=100)
    assert abs(result.log_evidence - quad.log_evidence) < 5e-3
    assert np.allclose(result.mu, quad.mean, atol=5e-3)
    assert np.allclose(result.Sigma, quad.cov, atol=1e-2)


def test_kim_ghahramani_eq12_equals_the_stable_form(rng):
    """K&G's site scale s_i (step 3, with y_i restored) and eq 12, for their step likelihood."""
    X, y = _data(rng, n=10, flip=1)
    K = SEKernel(variance=2.0, jitter=0.1).K(X)
    r = expectation_propagation(K, y, LabelNoiseLikelihood(0.0, 0.0), tol=1e-13, max_sweeps=500)
    v, m = 1.0 / r.tau, r.nu / r.tau
    lam, h = r.var_cav, r.mu
    # K&G step 3 with y_i restored: α_i(K&G) = y_i a_i
    alpha_kg = y * r.a
    log_s = (r.log_Z + 0.5 * np.log1p(lam / v) + lam * alpha_kg / (2 * y * h))
    A = r.Sigma
    B = (m / v) @ A @ (m / v) - np.sum(m**2 / v)
    log_eq12 = 0.5 * np.sum(np.log(v)) - 0.5 * np.linalg.slogdet(K + np.diag(v))[1] + B / 2 + np.sum(log_s)
    assert np.isclose(log_eq12, r.log_evidence, atol=1e-8)


def test_latent_noise_in_the_prior_equals_probit_with_that_scale(rng):
    """K&G: the step H(yf) with latent noise v₂ in C is the probit Φ(yg/√v₂) with prior C − v₂I."""
    X, y = _data(rng, n=12, flip=2)
    kernel = SEKernel(variance=1.5, lengthscale=0.9)
    X_test = rng.normal(size=(5, 2))
    for epsilon, v2 in ((0.0, 1.0), (0.0, 0.2), (0.1, 0.3)):
        K0 = kernel.K(X)
        f_space = expectation_propagation(K0 + v2 * np.eye(12), y, LabelNoiseLikelihood(epsilon, 0.0), tol=1e-12,
                                          max_sweeps=500)
        g_space = expectation_propagation(K0, y, LabelNoiseLikelihood(epsilon, v2), tol=1e-12, max_sweeps=500)
        assert np.isclose(f_space.log_evidence, g_space.log_evidence, atol=1e-9)
        Ks, kss = kernel.K(X, X_test), kernel.diag(X_test)
        p_f = ep_predict(f_space, Ks, kss + v2).proba
        p_g = ep_predict(g_space, Ks, kss).proba
        assert np.allclose(p_f, p_g, atol=1e-9)
    # ε = 0 and v₂ = 1: exactly the probit model
    probit = expectation_propagation(K0, y, ProbitLikelihood(), tol=1e-12)
    step = expectation_propagation(K0 + np.eye(12), y, LabelNoiseLikelihood(0.0, 0.0), tol=1e-12)
    assert np.isclose(step.log_evidence, probit.log_evidence, atol=1e-9)
    # and ε → 0 is continuous
    tiny = expectation_propagation(K0, y, LabelNoiseLikelihood(1e-12, 1.0), tol=1e-12)
    assert np.isclose(tiny.log_evidence, probit.log_evidence, atol=1e-8)


def test_step_likelihood_evidence_is_scale_invariant(rng):
    X, y = _data(rng, n=12, flip=1)
    kernel = SEKernel(variance=1.0, bias=0.1, jitter=0.05, learn_bias=True, learn_jitter=True)
    base = expectation_propagation(kernel.K(X), y, LabelNoiseLikelihood(0.05, 0.0), tol=1e-12, max_sweeps=500)
    scaled = expectation_propagation(7.0 * kernel.K(X), y, LabelNoiseLikelihood(0.05, 0.0), tol=1e-12,
                                     max_sweeps=500)
    assert np.isclose(base.log_evidence, scaled.log_evidence, atol=1e-9)


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("likelihood, damping", [(ProbitLikelihood(), 1.0), (LabelNoiseLikelihood(0.1, 0.0), 0.5)])
def test_evidence_gradient_matches_finite_differences(rng, likelihood, damping):
    X, y = _data(rng, n=15, flip=2)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5], bias=0.3, jitter=0.1, learn_jitter=True)

    def log_evidence(theta):
        k = kernel.with_theta(theta)
        return expectation_propagation(k.K(X), y, likelihood, tol=1e-13, max_sweeps=1000, damping=damping).log_evidence

    result = expectation_propagation(kernel.K(X), y, likelihood, tol=1e-13, max_sweeps=1000, damping=damping)
    analytic = ep_evidence_gradient(result, kernel.gradients(X))
    assert np.allclose(analytic, ep_evidence_gradient(result, kernel=kernel, X=X), atol=1e-12)
    numeric = finite_difference_gradient(log_evidence, kernel.theta, step=1e-5)
    assert np.allclose(analytic, numeric, atol=1e-6)


def test_epsilon_gradient_matches_finite_differences(rng):
    X, y = _data(rng, n=12, flip=2)
    K = SEKernel(variance=2.0, jitter=0.2).K(X)

    def log_evidence(eps):
        return expectation_propagation(K, y, LabelNoiseLikelihood(eps, 0.0), tol=1e-13, max_sweeps=500).log_evidence

    result = expectation_propagation(K, y, LabelNoiseLikelihood(0.1, 0.0), tol=1e-13, max_sweeps=500)
    numeric = (log_evidence(0.1 + 1e-6) - log_evidence(0.1 - 1e-6)) / 2e-6
    assert np.isclose(ep_epsilon_gradient(result, y), numeric, rtol=1e-6)


def test_gradient_traces_equal_the_dense_stack(rng):
    X = rng.normal(size=(9, 3))
    Q = rng.normal(size=(9, 9))
    Q = Q + Q.T
    for kernel in (SEKernel(variance=2.0, lengthscale=[1.0, 2.0, 0.5], bias=0.3, jitter=0.1, learn_jitter=True),
                   SEKernel(lengthscale=1.5)):
        assert np.allclose(gradient_traces(kernel, X, Q), np.einsum("ij,pij->p", Q, kernel.gradients(X)), atol=1e-12)


# ----------------------------------------------------------------------------- EM-EP pieces
def test_m_step_objective_value_and_gradient(rng):
    X, y = _data(rng, n=10, flip=1)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5], bias=0.3, jitter=0.1, learn_jitter=True)
    result = expectation_propagation(kernel.K(X), y, LabelNoiseLikelihood(0.0, 0.0), tol=1e-12)
    other = kernel.theta + 0.3
    value, gradient = m_step_objective(other, kernel, X, result.mu, result.Sigma)
    C = kernel.with_theta(other).K(X)
    # E_q[log N(f|0, C)] by the dense Gaussian cross-entropy formula
    C_inv = np.linalg.inv(C)
    dense = (-0.5 * np.linalg.slogdet(2 * np.pi * C)[1] - 0.5 * result.mu @ C_inv @ result.mu
             - 0.5 * np.trace(C_inv @ result.Sigma))
    assert np.isclose(value, dense)
    numeric = finite_difference_gradient(lambda t: m_step_objective(t, kernel, X, result.mu, result.Sigma)[0], other)
    assert np.allclose(gradient, numeric, atol=1e-6)


def test_bound_gradient_at_q_ep_equals_evidence_gradient(rng):
    """K&G eq 14 at q = q_EP is GPML eq 5.27: EM-EP and direct maximisation share stationary points."""
    X, y = _data(rng, n=12, flip=2)
    kernel = SEKernel(variance=2.0, lengthscale=1.2, bias=0.1, jitter=0.1, learn_jitter=True)
    result = expectation_propagation(kernel.K(X), y, LabelNoiseLikelihood(0.1, 0.0), tol=1e-13, damping=0.5,
                                     max_sweeps=1000)
    _, gradient = m_step_objective(kernel.theta, kernel, X, result.mu, result.Sigma)
    assert np.allclose(gradient, ep_evidence_gradient(result, kernel=kernel, X=X), atol=1e-9)


@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.5)])
def test_bound_below_the_true_evidence(rng, likelihood):
    X, _ = _data(rng, n=3)
    y = np.array([1.0, -1.0, 1.0])
    kernel = SEKernel(variance=3.0, lengthscale=0.7)
    result = expectation_propagation(kernel.K(X), y, likelihood, tol=1e-12)
    bound = variational_bound(result, kernel, X, y)
    quad = quadrature_posterior(kernel.K(X), lambda f: likelihood.log_p(y, f), n_nodes=100)
    assert bound.F <= quad.log_evidence
    assert np.isclose(bound.F, bound.F_epsilon + bound.F_cov + bound.entropy)
    assert np.isclose(bound.entropy, 0.5 * np.linalg.slogdet(2 * np.pi * np.e * result.Sigma)[1])
    # the bound at the EP posterior is below the EP evidence here too
    assert bound.F <= result.log_evidence


def test_step_bound_is_exact_and_minus_infinity_at_eps_zero(rng):
    X, y = _data(rng, n=8, flip=1)
    kernel = SEKernel(jitter=0.1, learn_jitter=True)
    hard = expectation_propagation(kernel.K(X), y, LabelNoiseLikelihood(0.0, 0.0), tol=1e-10)
    assert variational_bound(hard, kernel, X, y).F == -np.inf
    noisy = expectation_propagation(kernel.K(X), y, LabelNoiseLikelihood(0.1, 0.0), tol=1e-10, damping=0.5)
    bound = variational_bound(noisy, kernel, X, y)
    p_right = ndtr(y * noisy.mu / np.sqrt(np.diag(noisy.Sigma)))
    assert np.isclose(bound.F_epsilon, np.sum(p_right * np.log(0.9) + (1 - p_right) * np.log(0.1)))
    # the exact ε-step maximises F_ε
    eps_star = epsilon_from_expected_errors(y, noisy.mu, np.diag(noisy.Sigma))
    f_eps = lambda e: np.sum(p_right * np.log(1 - e) + (1 - p_right) * np.log(e))  # noqa: E731
    assert f_eps(eps_star) >= max(f_eps(eps_star - 1e-3), f_eps(eps_star + 1e-3))


# ----------------------------------------------------------------------------- robustness and errors
def test_non_convergence_warns_with_the_sweep_count(rng):
    X, y = _data(rng, n=10)
    with pytest.warns(EPConvergenceWarning, match="did not converge in 1 sweeps"):
        expectation_propagation(SEKernel().K(X), y, max_sweeps=1, tol=1e-12)


@pytest.mark.parametrize("kernel", [SEKernel(variance=1e6, lengthscale=1.0), SEKernel(lengthscale=1e-3),
                                    SEKernel(lengthscale=1e3), SEKernel(variance=50.0, jitter=1e-8)])
@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.0)])
def test_hard_inputs_give_finite_results(rng, kernel, likelihood):
    X = rng.normal(size=(14, 2))
    X[7] = X[3]  # a duplicate point
    y = np.where(X[:, 0] > 0, 1.0, -1.0)  # separable
    y[0] *= -1  # ... with one mislabelled point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = expectation_propagation(kernel.K(X), y, likelihood, damping=0.5, max_sweeps=300)
    assert np.isfinite(result.log_evidence)
    assert np.all(np.isfinite(result.mu)) and np.all(np.isfinite(result.Sigma))
    p = ep_predict(result, kernel.K(X, X[:3]), kernel.diag(X[:3])).proba
    assert np.all((p >= 0) & (p <= 1))


def test_bad_inputs_raise(rng):
    X, y = _data(rng, n=5)
    K = SEKernel().K(X)
    with pytest.raises(ValueError, match="y"):
        expectation_propagation(K, np.array([1, 2, 1, 2, 1]))
    with pytest.raises(ValueError, match="y has"):
        expectation_propagation(K, y[:4])
    with pytest.raises(ValueError, match="square"):
        expectation_propagation(K[:, :4], y)
    with pytest.raises(ValueError, match="damping"):
        expectation_propagation(K, y, damping=0.0)
    with pytest.raises(ValueError, match="likelihood"):
        expectation_propagation(K, y, LogisticLikelihood())
    with pytest.raises(ValueError, match="tau"):
        expectation_propagation(K, y, tau=np.zeros(3))
    with pytest.raises(ValueError, match="fixed"):
        em_ep(SEKernel(), X, y, fixed=("log_noise",))
    with pytest.raises(ValueError, match="epsilon_rule"):
        em_ep(SEKernel(), X, y, epsilon_rule="median")
    result = expectation_propagation(K, y)
    with pytest.raises(ValueError, match="dK"):
        ep_evidence_gradient(result, np.zeros((2, 3, 3)))


def test_ep_log_evidence_refuses_improper_cavities():
    # q is proper (C⁻¹ + T̃ ≻ 0) but the cavity of site 0, prior × site 1, is not
    K = np.array([[1.0, 0.9], [0.9, 1.0]])
    with pytest.raises(FloatingPointError, match="cavity"):
        ep_log_evidence(K, [1.0, -1.0], np.array([20.0, -4.0]), np.zeros(2))


# ----------------------------------------------------------------------------- learning
def test_em_ep_and_direct_maximisation_agree_and_are_reproducible(rng):
    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=25) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    start = expectation_propagation(kernel.K(X), y)
    start_gradient = ep_evidence_gradient(start, kernel=kernel, X=X)
    em = em_ep(kernel, X, y, ProbitLikelihood(), tol=1e-3, max_iter=400)
    again = em_ep(kernel, X, y, ProbitLikelihood(), tol=1e-3, max_iter=400)
    assert em.converged and em.log_evidence > start.log_evidence + 1.0
    assert np.array_equal(em.kernel.theta, again.kernel.theta)
    direct = maximize_ep_evidence(kernel, X, y, ProbitLikelihood())
    assert direct.success
    # EM-EP creeps towards the maximum that the direct optimiser reaches in a few evaluations
    assert em.log_evidence - 0.2 < direct.log_evidence
    assert direct.log_evidence >= em.log_evidence - 1e-6
    gradient = ep_evidence_gradient(em.ep, kernel=em.kernel, X=X)
    assert np.linalg.norm(gradient) < 0.5 * np.linalg.norm(start_gradient)
    assert np.max(np.abs(ep_evidence_gradient(direct.ep, kernel=direct.kernel, X=X))) < 1e-3


def test_em_ep_learns_epsilon_by_counting_errors(rng):
    X, y = _data(rng, n=30, flip=3)
    kernel = SEKernel(variance=1.0, lengthscale=2.0, jitter=1e-2, learn_jitter=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EPConvergenceWarning)
        result = em_ep(kernel, X, y, LabelNoiseLikelihood(0.01, 0.0), max_iter=15, tol=1e-3)
    mean_g = result.ep.mu - result.kernel.jitter * result.ep.a
    # ε is r/n of the E-step before the last M-step; recomputing at the final posterior is close
    assert 0 < result.epsilon < 0.5
    assert abs(result.epsilon - epsilon_from_errors(y, mean_g)) <= 2 / 30
