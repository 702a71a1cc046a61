"""Tests of gpc_ref.ep: EP for GPC (probit and K&G's label-noise likelihood), its evidence, EM-EP."""

import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient
from scipy import integrate
from scipy.special import ndtr

from gpc_ref import ConvergenceWarning
from gpc_ref.ep import ep_core
from gpc_ref.ep import ep_epsilon_gradient
from gpc_ref.ep import ep_evidence_gradient
from gpc_ref.ep import ep_log_evidence
from gpc_ref.ep import ep_predict
from gpc_ref.ep import expectation_propagation
from gpc_ref.ep import expectation_propagation_with_fallback
from gpc_ref.ep import posterior_from_sites
from gpc_ref.ep import site_likelihood
from gpc_ref.ep import site_marginals
from gpc_ref.ep import tilted_moments
from gpc_ref.ep_learning import HISTORY_COLUMNS
from gpc_ref.ep_learning import em_ep
from gpc_ref.ep_learning import em_ep_core
from gpc_ref.ep_learning import epsilon_from_errors
from gpc_ref.ep_learning import epsilon_from_expected_errors
from gpc_ref.ep_learning import m_step_objective
from gpc_ref.ep_learning import maximize_ep_evidence
from gpc_ref.ep_learning import variational_bound
from gpc_ref.exact import probit_orthant_log_evidence
from gpc_ref.exact import quadrature_posterior
from gpc_ref.hyperparameters import theta_box
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood


def _data(rng, n=12, d=2, flip=0):
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    y[:flip] *= -1
    return X, y


# ----------------------------------------------------------------------------- tilted moments
@pytest.mark.parametrize(
    "epsilon, s, y, mean, var",
    [
        (0.0, 1.0, 1.0, 0.3, 0.7),
        (0.0, 1.0, -1.0, 2.0, 3.0),
        (0.1, 0.5, 1.0, -1.5, 0.4),
        (0.2, 1e-3, -1.0, 0.2, 2.0),
        (0.05, 0.0, 1.0, -0.4, 1.3),
    ],
)
def test_tilted_moments_match_numerical_integration(epsilon, s, y, mean, var):
    sd = np.sqrt(var)

    def lik(f):
        return epsilon + (1 - 2 * epsilon) * (ndtr(y * f / np.sqrt(s)) if s > 0 else float(y * f > 0))

    def moment(k):
        return integrate.quad(
            lambda f: f**k * lik(f) * np.exp(-0.5 * (f - mean) ** 2 / var) / np.sqrt(2 * np.pi * var),
            mean - 15 * sd,
            mean + 15 * sd,
            points=[0.0],
            epsabs=1e-13,
            limit=200,
        )[0]

    Z, m1, m2 = moment(0), moment(1), moment(2)
    t = tilted_moments(y, mean, var, epsilon=epsilon, latent_noise=s)
    tilted_mean, tilted_var = m1 / Z, m2 / Z - (m1 / Z) ** 2
    assert np.isclose(t.log_Z, np.log(Z), atol=1e-9)
    assert np.isclose(mean + var * t.alpha, tilted_mean, atol=1e-8)
    assert np.isclose(var - var**2 * t.beta, tilted_var, atol=1e-8)


def test_tilted_moments_finite_far_in_the_tails():
    for epsilon in (0.0, 0.1):
        t = tilted_moments(
            np.array([1.0, -1.0, 1.0]), np.array([-60.0, -60.0, 80.0]), np.ones(3), epsilon=epsilon, latent_noise=0.0
        )
        assert np.all(np.isfinite(t.log_Z)) and np.all(np.isfinite(t.alpha)) and np.all(np.isfinite(t.beta))
        # the tilted variance stays positive: σ²β < 1
        assert np.all(t.beta < 1.0)
    # ε > 0 and a hopeless cavity: the site is (nearly) ignored, β ≈ 0
    t = tilted_moments(1.0, -60.0, 1.0, epsilon=0.1, latent_noise=0.0)
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
@pytest.mark.parametrize(
    "likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.0), LabelNoiseLikelihood(0.0, 0.0)]
)
def test_moment_matching_at_convergence(rng, likelihood):
    X, y = _data(rng, n=15, flip=2)
    K = SEKernel(variance=3.0, lengthscale=1.2, jitter=0.2).K(X)
    result = expectation_propagation(K, y, likelihood=likelihood, tol=1e-12, max_sweeps=500, damping=0.7)
    assert result.converged
    eps, s = site_likelihood(likelihood)
    t = tilted_moments(y, result.mean_cav, result.var_cav, epsilon=eps, latent_noise=s)
    # every marginal of q equals the mean and variance of its tilted distribution
    assert np.allclose(result.mu, result.mean_cav + result.var_cav * t.alpha, atol=1e-9)
    assert np.allclose(np.diag(result.Sigma), result.var_cav - result.var_cav**2 * t.beta, atol=1e-9)
    # K&G eq 11: μ = C a with a_i = ∂log Z_i/∂μ_{-i} at the fixed point
    assert np.allclose(result.a, t.alpha, atol=1e-8)
    assert np.allclose(result.mu, K @ result.a, atol=1e-8)


def test_negative_site_precisions_are_handled(rng):
    X, y = _data(rng, n=20, flip=3)
    K = SEKernel(variance=4.0, lengthscale=1.0, jitter=0.05).K(X)
    result = expectation_propagation(
        K, y, likelihood=LabelNoiseLikelihood(0.15, 0.0), damping=0.5, tol=1e-10, max_sweeps=500
    )
    assert result.converged
    assert np.any(result.tau < 0)
    assert np.isfinite(result.log_evidence)


def test_step_likelihood_with_eps_zero_puts_every_mean_on_the_right_side(rng):
    X, y = _data(rng, n=15, flip=3)
    K = SEKernel(variance=1.0, lengthscale=3.0, jitter=0.3).K(X)
    result = expectation_propagation(K, y, likelihood=LabelNoiseLikelihood(0.0, 0.0), tol=1e-10, max_sweeps=500)
    assert np.all(y * result.mu > 0)
    # the classifier's own mean (without the latent noise) does get the flipped points wrong
    assert epsilon_from_errors(y, result.mu - 0.3 * result.a) > 0
    assert epsilon_from_errors(y, result.mu) == 0


# ----------------------------------------------------------------------------- evidence
def _site_log_normalisers(result):
    tau_cav = 1.0 / result.var_cav
    nu_cav = result.mean_cav * tau_cav
    tau_post, nu_post = tau_cav + result.tau, nu_cav + result.nu
    return (
        result.log_Z
        + 0.5 * np.log(tau_post / tau_cav)
        + 0.5 * result.mean_cav**2 * tau_cav
        - 0.5 * nu_post**2 / tau_post
    )


@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.5)])
def test_evidence_is_the_integral_of_prior_times_sites(rng, likelihood):
    X, _ = _data(rng, n=3)
    y = np.array([1.0, -1.0, -1.0])
    K = SEKernel(variance=2.0, lengthscale=0.8).K(X)
    result = expectation_propagation(K, y, likelihood=likelihood, tol=1e-13, max_sweeps=500)
    c = _site_log_normalisers(result)
    quad = quadrature_posterior(K, lambda f: c + result.nu * f - 0.5 * result.tau * f**2, n_nodes=30)
    assert abs(result.log_evidence - quad.log_evidence) < 1e-10


@pytest.mark.parametrize(
    "k, label, likelihood",
    [
        (2.5, -1.0, ProbitLikelihood()),
        (2.5, 1.0, LabelNoiseLikelihood(0.1, 0.3)),
        (0.4, -1.0, LabelNoiseLikelihood(0.2, 2.0)),
    ],
)
def test_one_point_q_has_the_posterior_moments(k, label, likelihood):
    """EP is exact for one point. With a zero prior mean its evidence is 1/2 whatever k, y, ε and s, so the test
    that can fail is on q: its mean and variance are those of the true posterior, which do vary."""
    K1, y1 = np.array([[k]]), np.array([label])
    result = expectation_propagation(K1, y1, likelihood=likelihood, tol=1e-13)
    quad = quadrature_posterior(K1, lambda f: likelihood.log_p(y1, f), n_nodes=200)
    assert abs(result.mu[0] - quad.mean[0]) < 1e-9 and abs(result.Sigma[0, 0] - quad.cov[0, 0]) < 1e-9
    assert abs(quad.mean[0]) > 0.1  # the quantity checked is not a constant
    assert result.log_evidence == pytest.approx(-np.log(2.0), abs=1e-12)


def test_evidence_close_to_the_exact_orthant_probability_for_three_points():
    X = np.array([[0.0], [0.5], [1.5]])
    K = SEKernel(variance=2.0).K(X)
    y = np.array([1.0, -1.0, 1.0])
    result = expectation_propagation(K, y, likelihood=ProbitLikelihood(), tol=1e-13)
    exact = probit_orthant_log_evidence(K, y, tol=1e-6)  # a standard error of 1e-6 nats (0.1 s at n = 3)
    quad = quadrature_posterior(K, lambda f: ProbitLikelihood().log_p(y, f), n_nodes=100)
    assert abs(quad.log_evidence - exact) < 1e-6  # two exact methods, each to about 1e-7
    assert 1e-5 < abs(result.log_evidence - exact) < 5e-3  # EP is an approximation here, a close one
    # the stable form without its third term would be far off (at n = 1 that term vanishes)
    third = np.sum(0.5 * result.mean_cav * (result.mean_cav - result.mu) / result.var_cav)
    assert abs(result.log_evidence - third - exact) > 0.1
    assert np.allclose(result.mu, quad.mean, atol=5e-3)
    assert np.allclose(result.Sigma, quad.cov, atol=1e-2)


def test_kim_ghahramani_eq12_equals_the_stable_form(rng):
    """K&G's site scale s_i (step 3, with y_i restored) and eq 12, for their step likelihood."""
    X, y = _data(rng, n=10, flip=1)
    K = SEKernel(variance=2.0, jitter=0.1).K(X)
    r = expectation_propagation(K, y, likelihood=LabelNoiseLikelihood(0.0, 0.0), tol=1e-13, max_sweeps=500)
    v, m = 1.0 / r.tau, r.nu / r.tau
    lam, h = r.var_cav, r.mu
    # K&G step 3 with y_i restored: α_i(K&G) = y_i a_i
    alpha_kg = y * r.a
    log_s = r.log_Z + 0.5 * np.log1p(lam / v) + lam * alpha_kg / (2 * y * h)
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
        f_space = expectation_propagation(
            K0 + v2 * np.eye(12), y, likelihood=LabelNoiseLikelihood(epsilon, 0.0), tol=1e-12, max_sweeps=500
        )
        g_space = expectation_propagation(
            K0, y, likelihood=LabelNoiseLikelihood(epsilon, v2), tol=1e-12, max_sweeps=500
        )
        assert np.isclose(f_space.log_evidence, g_space.log_evidence, atol=1e-9)
        Ks, kss = kernel.K(X, X_test), kernel.diag(X_test)
        p_f = ep_predict(f_space, Ks, kss + v2).proba
        p_g = ep_predict(g_space, Ks, kss).proba
        assert np.allclose(p_f, p_g, atol=1e-9)
    # ε = 0 and v₂ = 1: exactly the probit model
    probit = expectation_propagation(K0, y, likelihood=ProbitLikelihood(), tol=1e-12)
    step = expectation_propagation(K0 + np.eye(12), y, likelihood=LabelNoiseLikelihood(0.0, 0.0), tol=1e-12)
    assert np.isclose(step.log_evidence, probit.log_evidence, atol=1e-9)
    # and ε → 0 is continuous
    tiny = expectation_propagation(K0, y, likelihood=LabelNoiseLikelihood(1e-12, 1.0), tol=1e-12)
    assert np.isclose(tiny.log_evidence, probit.log_evidence, atol=1e-8)


def test_step_likelihood_evidence_is_scale_invariant(rng):
    X, y = _data(rng, n=12, flip=1)
    kernel = SEKernel(variance=1.0, bias=0.1, jitter=0.05, learn_bias=True, learn_jitter=True)
    base = expectation_propagation(
        kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.05, 0.0), tol=1e-12, max_sweeps=500
    )
    scaled = expectation_propagation(
        7.0 * kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.05, 0.0), tol=1e-12, max_sweeps=500
    )
    assert np.isclose(base.log_evidence, scaled.log_evidence, atol=1e-9)


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("likelihood, damping", [(ProbitLikelihood(), 1.0), (LabelNoiseLikelihood(0.1, 0.0), 0.5)])
def test_evidence_gradient_matches_finite_differences(rng, likelihood, damping):
    X, y = _data(rng, n=15, flip=2)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5], bias=0.3, jitter=0.1, learn_jitter=True)

    def log_evidence(theta):
        k = kernel.with_theta(theta)
        return expectation_propagation(
            k.K(X), y, likelihood=likelihood, tol=1e-13, max_sweeps=1000, damping=damping
        ).log_evidence

    result = expectation_propagation(kernel.K(X), y, likelihood=likelihood, tol=1e-13, max_sweeps=1000, damping=damping)
    analytic = ep_evidence_gradient(result, dK=kernel.gradients(X))
    assert np.allclose(analytic, ep_evidence_gradient(result, kernel=kernel, X=X), atol=1e-12)
    numeric = finite_difference_gradient(log_evidence, kernel.theta, step=1e-5)
    assert np.allclose(analytic, numeric, atol=1e-6)


def test_epsilon_gradient_matches_finite_differences(rng):
    X, y = _data(rng, n=12, flip=2)
    K = SEKernel(variance=2.0, jitter=0.2).K(X)

    def log_evidence(eps):
        return expectation_propagation(
            K, y, likelihood=LabelNoiseLikelihood(eps, 0.0), tol=1e-13, max_sweeps=500
        ).log_evidence

    result = expectation_propagation(K, y, likelihood=LabelNoiseLikelihood(0.1, 0.0), tol=1e-13, max_sweeps=500)
    numeric = (log_evidence(0.1 + 1e-6) - log_evidence(0.1 - 1e-6)) / 2e-6
    assert np.isclose(ep_epsilon_gradient(result, y), numeric, rtol=1e-6)


def test_gradient_traces_equal_the_dense_stack(rng):
    X = rng.normal(size=(9, 3))
    Q = rng.normal(size=(9, 9))
    Q = Q + Q.T
    for kernel in (
        SEKernel(variance=2.0, lengthscale=[1.0, 2.0, 0.5], bias=0.3, jitter=0.1, learn_jitter=True),
        SEKernel(lengthscale=1.5),
    ):
        assert np.allclose(kernel.gradient_traces(X, Q), np.einsum("ij,pij->p", Q, kernel.gradients(X)), atol=1e-12)


# ----------------------------------------------------------------------------- EM-EP pieces
def test_m_step_objective_value_and_gradient(rng):
    X, y = _data(rng, n=10, flip=1)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5], bias=0.3, jitter=0.1, learn_jitter=True)
    result = expectation_propagation(kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.0, 0.0), tol=1e-12)
    other = kernel.theta + 0.3
    value, gradient = m_step_objective(other, kernel, X, result.mu, result.Sigma)
    C = kernel.with_theta(other).K(X)
    # E_q[log N(f|0, C)] by the dense Gaussian cross-entropy formula
    C_inv = np.linalg.inv(C)
    dense = (
        -0.5 * np.linalg.slogdet(2 * np.pi * C)[1]
        - 0.5 * result.mu @ C_inv @ result.mu
        - 0.5 * np.trace(C_inv @ result.Sigma)
    )
    assert np.isclose(value, dense)
    numeric = finite_difference_gradient(lambda t: m_step_objective(t, kernel, X, result.mu, result.Sigma)[0], other)
    assert np.allclose(gradient, numeric, atol=1e-6)


@pytest.mark.parametrize(
    "kernel, likelihood",
    [
        (
            SEKernel(variance=2.0, lengthscale=[1.0, 1.5], bias=0.3, jitter=0.1, learn_jitter=True),
            LabelNoiseLikelihood(0.1, 0.0),
        ),
        # C nearly singular (long lengthscale, tiny jitter): condition number about 1e7
        (
            SEKernel(variance=1.0, lengthscale=[4.0, 6.0], bias=0.5, jitter=1e-6, learn_bias=True, learn_jitter=True),
            ProbitLikelihood(),
        ),
    ],
)
def test_m_step_objective_without_an_inverse_matches_dense_eq16_eq17_and_finite_differences(rng, kernel, likelihood,
                                                                                          monkeypatch):  # fmt: skip
    """F_cov and its gradient from one Cholesky factor of C: against K&G eqs 16–17 in dense form."""
    X, y = _data(rng, n=12, flip=2)
    result = expectation_propagation(kernel.K(X), y, likelihood=likelihood, tol=1e-12, damping=0.5, max_sweeps=1000)
    if isinstance(likelihood, LabelNoiseLikelihood):
        assert np.any(result.tau < 0)  # Σ from negative sites too
    theta = kernel.theta + 0.1
    value, gradient = m_step_objective(theta, kernel, X, result.mu, result.Sigma)
    k = kernel.with_theta(theta)
    C, dC = k.K(X), k.gradients(X)
    C_inv = np.linalg.inv(C)  # dense reference only
    second = result.Sigma + np.outer(result.mu, result.mu)
    dense_value = -0.5 * np.linalg.slogdet(2 * np.pi * C)[1] - 0.5 * np.trace(C_inv @ second)
    dense_gradient = 0.5 * np.einsum("ij,pji->p", C_inv @ second @ C_inv - C_inv, dC)
    assert value == pytest.approx(dense_value, rel=1e-8)
    np.testing.assert_allclose(gradient, dense_gradient, rtol=1e-6, atol=1e-6 * np.max(np.abs(dense_gradient)))
    numeric = finite_difference_gradient(
        # a larger step: with cond(C) near 1e7 the round-off of a 1e-6 step is about 1e-5 (relative)
        lambda t: m_step_objective(t, kernel, X, result.mu, result.Sigma)[0],
        theta,
        step=1e-4,
    )
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-6 * np.max(np.abs(numeric)))
    # a C that does not factorise is reported as LinAlgError, which the shared maximiser treats as a rejected
    # step. (A repeated input without jitter is singular only in exact arithmetic: whether its Cholesky factor
    # fails is decided by rounding, differently on different CPUs. So the test makes C indefinite outright.)
    indefinite = np.eye(13) - 2.0 * np.outer(np.ones(13), np.ones(13)) / 13
    with monkeypatch.context() as patch:
        patch.setattr(SEKernel, "K", lambda self, X, Z=None: indefinite)
        with pytest.raises(np.linalg.LinAlgError):
            m_step_objective(kernel.theta, kernel, np.vstack([X, X[:1]]), np.zeros(13), np.eye(13))


def test_bound_gradient_at_q_ep_equals_evidence_gradient(rng):
    """K&G eq 14 at q = q_EP is GPML eq 5.27: EM-EP and direct maximisation share stationary points."""
    X, y = _data(rng, n=12, flip=2)
    kernel = SEKernel(variance=2.0, lengthscale=1.2, bias=0.1, jitter=0.1, learn_jitter=True)
    result = expectation_propagation(
        kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.1, 0.0), tol=1e-13, damping=0.5, max_sweeps=1000
    )
    _, gradient = m_step_objective(kernel.theta, kernel, X, result.mu, result.Sigma)
    assert np.allclose(gradient, ep_evidence_gradient(result, kernel=kernel, X=X), atol=1e-9)


@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.5)])
def test_bound_below_the_true_evidence(rng, likelihood):
    X, _ = _data(rng, n=3)
    y = np.array([1.0, -1.0, 1.0])
    kernel = SEKernel(variance=3.0, lengthscale=0.7)
    result = expectation_propagation(kernel.K(X), y, likelihood=likelihood, tol=1e-12)
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
    hard = expectation_propagation(kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.0, 0.0), tol=1e-10)
    assert variational_bound(hard, kernel, X, y).F == -np.inf
    noisy = expectation_propagation(kernel.K(X), y, likelihood=LabelNoiseLikelihood(0.1, 0.0), tol=1e-10, damping=0.5)
    bound = variational_bound(noisy, kernel, X, y)
    p_right = ndtr(y * noisy.mu / np.sqrt(np.diag(noisy.Sigma)))
    assert np.isclose(bound.F_epsilon, np.sum(p_right * np.log(0.9) + (1 - p_right) * np.log(0.1)))
    # the exact ε-step maximises F_ε
    eps_star = epsilon_from_expected_errors(y, noisy.mu, np.diag(noisy.Sigma))
    f_eps = lambda e: np.sum(p_right * np.log(1 - e) + (1 - p_right) * np.log(e))
    assert f_eps(eps_star) >= max(f_eps(eps_star - 1e-3), f_eps(eps_star + 1e-3))


# ----------------------------------------------------------------------------- robustness and errors
# ------------------------------------------------------------------ the plain core (Algorithm 8.1) and the driver
@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.05)], ids=["probit", "label-noise"])
def test_core_and_driver_agree(rng, likelihood):
    """expectation_propagation runs the core's sweep: on the sequential schedule from zero sites it is the core
    (to rounding: the two calls allocate differently), and the parallel schedule reaches the same fixed point."""
    for _ in range(25):
        n = int(rng.integers(5, 50))
        X = rng.normal(size=(n, 2))
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
        K = SEKernel(variance=float(np.exp(rng.uniform(-2, 5))), lengthscale=float(np.exp(rng.uniform(-1, 1.5))),
                     jitter=1e-6).K(X)  # fmt: skip
        core, driver = ep_core(K, y, likelihood), expectation_propagation(K, y, likelihood=likelihood)
        parallel = expectation_propagation(K, y, likelihood=likelihood, schedule="parallel", max_sweeps=500)
        assert core.converged and driver.converged and parallel.converged
        assert core.n_sweeps == driver.n_sweeps
        np.testing.assert_allclose(core.tau, driver.tau, rtol=1e-9, atol=1e-12)
        assert core.log_evidence == pytest.approx(driver.log_evidence, rel=1e-10, abs=1e-10)
        # the fixed point to the stopping tolerance (1e-6 relative change per sweep)
        assert parallel.log_evidence == pytest.approx(core.log_evidence, rel=1e-4, abs=1e-4)


def test_driver_warns_where_the_core_only_reports(rng):
    """Capped at two sweeps, the core returns converged=False silently (it trusts its caller); the driver warns,
    naming the sweep count."""
    X, y = _data(rng, n=30, flip=3)
    K = SEKernel(variance=4.0, lengthscale=1.0).K(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        core = ep_core(K, y, ProbitLikelihood(), max_sweeps=2)
    assert not core.converged and core.n_sweeps == 2
    with pytest.warns(ConvergenceWarning, match="2 sweeps"):
        driver = expectation_propagation(K, y, max_sweeps=2)
    assert not driver.converged


def test_non_convergence_warns_with_the_sweep_count(rng):
    X, y = _data(rng, n=10)
    with pytest.warns(ConvergenceWarning, match="did not converge in 1 sweeps"):
        expectation_propagation(SEKernel().K(X), y, max_sweeps=1, tol=1e-12)


@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=1e6, lengthscale=1.0),
        SEKernel(lengthscale=1e-3),
        SEKernel(lengthscale=1e3),
        SEKernel(variance=50.0, jitter=1e-8),
    ],
)
@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LabelNoiseLikelihood(0.1, 0.0)])
def test_hard_inputs_give_finite_results(rng, kernel, likelihood):
    X = rng.normal(size=(14, 2))
    X[7] = X[3]  # a duplicate point
    y = np.where(X[:, 0] > 0, 1.0, -1.0)  # separable
    y[0] *= -1  # ... with one mislabelled point
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = expectation_propagation(kernel.K(X), y, likelihood=likelihood, damping=0.5, max_sweeps=300)
    assert np.isfinite(result.log_evidence)
    assert np.all(np.isfinite(result.mu)) and np.all(np.isfinite(result.Sigma))
    p = ep_predict(result, kernel.K(X, X[:3]), kernel.diag(X[:3])).proba
    assert np.all((p >= 0) & (p <= 1))


def test_bad_inputs_raise(rng):
    X, y = _data(rng, n=5)
    K = SEKernel().K(X)
    with pytest.raises(ValueError, match="y"):
        expectation_propagation(K, np.array([1, 2, 1, 2, 1]))
    with pytest.raises(ValueError, match="y must have one label per point"):
        expectation_propagation(K, y[:4])
    with pytest.raises(ValueError, match="square"):
        expectation_propagation(K[:, :4], y)
    with pytest.raises(ValueError, match="damping"):
        expectation_propagation(K, y, damping=0.0)
    with pytest.raises(ValueError, match="likelihood"):
        expectation_propagation(K, y, likelihood=LogisticLikelihood())
    with pytest.raises(ValueError, match="tau"):
        expectation_propagation(K, y, tau=np.zeros(3))
    with pytest.raises(ValueError, match="fixed"):
        em_ep(SEKernel(), X, y, fixed=("log_noise",))
    with pytest.raises(ValueError, match="epsilon_rule"):
        em_ep(SEKernel(), X, y, epsilon_rule="median")
    result = expectation_propagation(K, y)
    with pytest.raises(ValueError, match="dK"):
        ep_evidence_gradient(result, dK=np.zeros((2, 3, 3)))


def test_ep_log_evidence_refuses_improper_cavities():
    # q is proper (C⁻¹ + T̃ ≻ 0) but the cavity of site 0, prior × site 1, is not
    K = np.array([[1.0, 0.9], [0.9, 1.0]])
    with pytest.raises(FloatingPointError, match="cavity"):
        ep_log_evidence(K, [1.0, -1.0], np.array([20.0, -4.0]), np.zeros(2))


# ----------------------------------------------------------------------------- learning
def test_em_ep_and_direct_maximisation_agree_and_are_reproducible(rng):
    """On a problem where plain EM is slow: it warns (it does not claim success), SQUAREM-EM reaches the optimum."""
    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=25) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    direct = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood())
    assert direct.converged and direct.optimization.converged
    assert np.max(np.abs(ep_evidence_gradient(direct.ep, kernel=direct.kernel, X=X))) < 1e-3
    # plain EM creeps (after 300 E-steps its gradient is still 0.5 and its evidence 0.04 short)
    with pytest.warns(ConvergenceWarning, match=r"did not converge in 300 E-steps: the largest projected gradient"):
        slow = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), tol=1e-3, max_iter=300)
    assert not slow.converged and slow.gradient_norm > slow.tolerance
    assert slow.log_evidence < direct.log_evidence - 0.02
    # the same E- and M-steps with SQUAREM extrapolation converge, to the direct optimum
    em = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), tol=1e-4, max_iter=400, acceleration="squarem")
    again = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), tol=1e-4, max_iter=400, acceleration="squarem")
    assert np.array_equal(em.kernel.theta, again.kernel.theta)
    assert em.converged and em.gradient_norm <= em.tolerance
    assert abs(em.log_evidence - direct.log_evidence) < 0.05
    np.testing.assert_allclose(em.kernel.theta, direct.kernel.theta, atol=0.05)
    # converged is a statement about the returned point: its gradient, recomputed, is within the tolerance
    gradient = ep_evidence_gradient(em.ep, kernel=em.kernel, X=X)
    assert np.max(np.abs(gradient)) <= em.tolerance
    assert em.history.shape[1] == len(HISTORY_COLUMNS) and np.all(np.diff(em.history[:, 5]) >= 0)


def test_em_ep_core_is_the_unaccelerated_driver(rng):
    """em_ep runs the core's E-step and M-step: unaccelerated, where EP runs at every proposal, it takes the
    core's steps (compared over 40 E-steps of plain EM, which is slow: the path, not an optimum)."""
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=30) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 1.5])
    core = em_ep_core(kernel, X, y, epsilon=0.05, tol=1e-4, max_iter=40)
    with pytest.warns(ConvergenceWarning, match="did not converge in 40 E-steps"):
        driver = em_ep(kernel, X, y, likelihood=LabelNoiseLikelihood(0.05, 0.0), tol=1e-4, max_iter=40)
    assert not core.converged and core.n_iter == driver.n_iter == 40
    np.testing.assert_allclose(core.kernel.theta, driver.kernel.theta, rtol=0, atol=1e-12)
    assert core.epsilon == driver.epsilon and core.log_evidence == pytest.approx(driver.log_evidence, abs=1e-12)


def test_where_ep_cannot_run_at_a_proposal_the_core_stops_and_the_driver_halves_the_step(rng, monkeypatch):
    """The core trusts that EP runs wherever the M-step goes and raises where it does not; the driver retries
    from the prior, halves the step and goes on (the test below this one checks where it then ends)."""
    import gpc_ref.ep_learning as ep_learning

    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=25) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    real_ep_at, calls = ep_learning._ep_at, []

    def failing_ep_at(current, *args, **kwargs):
        calls.append(current.theta.copy())
        if len(calls) in (2, 3):  # the first proposal, warm and cold
            raise FloatingPointError("1 cavity distribution(s) have non-positive precision")
        return real_ep_at(current, *args, **kwargs)

    monkeypatch.setattr(ep_learning, "_ep_at", failing_ep_at)
    with pytest.raises(FloatingPointError, match="non-positive precision"):
        em_ep_core(kernel, X, y, learn_epsilon=False, max_iter=50)
    calls.clear()
    rescued = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), max_iter=400, acceleration="squarem")
    assert rescued.converged
    np.testing.assert_allclose(calls[3], kernel.theta + 0.5 * (calls[1] - kernel.theta))


def test_em_ep_halves_a_step_where_ep_cannot_run(rng, monkeypatch):
    """An E-step that fails at the M-step's proposal (as a cavity with negative precision did with a 50-level
    discrete crabs input) no longer stops the run: the step is halved, and EM reaches the same optimum."""
    import gpc_ref.ep_learning as ep_learning

    X = rng.normal(size=(25, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=25) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    options = {"likelihood": ProbitLikelihood(), "tol": 1e-4, "max_iter": 400, "acceleration": "squarem"}
    reference = em_ep(kernel, X, y, **options)
    real_ep_at, calls, failed_at = ep_learning._ep_at, [], []

    def failing_ep_at(current, *args, **kwargs):
        calls.append(current.theta.copy())
        if len(calls) in (2, 3, 7):  # the first proposal, warm and cold, and a later one: EP "cannot run" there
            failed_at.append(current.theta.copy())
            raise FloatingPointError("1 cavity distribution(s) have non-positive precision")
        return real_ep_at(current, *args, **kwargs)

    monkeypatch.setattr(ep_learning, "_ep_at", failing_ep_at)
    rescued = em_ep(kernel, X, y, **options)
    assert len(failed_at) == 3
    # a failed proposal is retried from the prior's sites, then at the halfway point from the current parameters
    np.testing.assert_array_equal(calls[2], failed_at[0])
    np.testing.assert_allclose(calls[3], kernel.theta + 0.5 * (failed_at[0] - kernel.theta))
    assert rescued.converged and rescued.gradient_norm <= rescued.tolerance
    assert abs(rescued.log_evidence - reference.log_evidence) < 1e-3


def test_em_ep_stops_and_says_so_where_ep_never_runs_at_the_proposal(rng, monkeypatch):
    """If EP cannot run at any point of the step (here: anywhere but the start), EM stays where EP ran, returns
    that point with converged False and a warning that names the cause, instead of raising."""
    import gpc_ref.ep_learning as ep_learning

    X = rng.normal(size=(20, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=20) > 0, 1.0, -1.0)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    real_ep_at = ep_learning._ep_at

    def ep_only_at_the_start(current, *args, **kwargs):
        if not np.allclose(current.theta, kernel.theta):
            raise FloatingPointError("1 cavity distribution(s) have non-positive precision")
        return real_ep_at(current, *args, **kwargs)

    monkeypatch.setattr(ep_learning, "_ep_at", ep_only_at_the_start)
    with pytest.warns(ConvergenceWarning, match="EP cannot run at the M-step's proposal"):
        result = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), tol=1e-6, max_iter=50)
    assert not result.converged and np.isfinite(result.log_evidence)
    np.testing.assert_array_equal(result.kernel.theta, kernel.theta)
    # one E-step, at the start: the 21 points tried on the way to the proposal never ran, and the start's EP is kept
    assert result.n_iter == 1 and len(result.history) == 1


def test_em_ep_learns_epsilon_by_counting_errors(rng):
    X, y = _data(rng, n=30, flip=3)
    kernel = SEKernel(variance=1.0, lengthscale=2.0, jitter=1e-2, learn_jitter=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = em_ep(kernel, X, y, likelihood=LabelNoiseLikelihood(0.01, 0.0), max_iter=15, tol=1e-3)
    mean_g = result.ep.mu - result.kernel.jitter * result.ep.a
    # ε is r/n of the E-step before the last M-step; recomputing at the final posterior is close
    assert 0 < result.epsilon < 0.5
    assert abs(result.epsilon - epsilon_from_errors(y, mean_g)) <= 2 / 30


# ----------------------------------------------------------------------------- the public pieces of the learners
def test_ep_with_fallback_warm_start_and_damping_halving(rng):
    X, y = _data(rng, n=12, flip=2)
    K = SEKernel(variance=2.0, jitter=0.1).K(X)
    likelihood = LabelNoiseLikelihood(0.1, 0.0)
    plain = expectation_propagation(K, y, likelihood=likelihood, tol=1e-10, max_sweeps=500)
    # a healthy problem: the first (undamped) attempt is returned as it is
    result, damping = expectation_propagation_with_fallback(K, y, likelihood=likelihood, tol=1e-10)
    assert damping == 1.0 and result.converged
    np.testing.assert_allclose(result.mu, plain.mu, atol=1e-8)
    assert result.log_evidence == pytest.approx(plain.log_evidence, abs=1e-9)
    # warm-started from converged sites it needs a single sweep
    warm, _ = expectation_propagation_with_fallback(K, y, likelihood=likelihood, tau=plain.tau, nu=plain.nu, tol=1e-8)
    assert warm.converged and warm.n_sweeps == 1
    # an attempt that cannot converge: restarted from the prior with damping 1 → ½ → ¼ → ⅛ (the last one
    # above min_damping = 0.1), and only that last attempt's warning is let through
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stuck, damping = expectation_propagation_with_fallback(K, y, likelihood=likelihood, tol=1e-300, max_sweeps=3)
    assert damping == 0.125 and not stuck.converged and stuck.n_sweeps == 3
    assert [issubclass(w.category, ConvergenceWarning) for w in caught] == [True]
    with pytest.raises(TypeError):
        expectation_propagation_with_fallback(K, y, likelihood)  # options are keyword-only
    with pytest.raises(TypeError):
        expectation_propagation_with_fallback(K, y)  # the likelihood must be named


def test_em_ep_m_step_max_iter_and_the_shared_box(rng):
    X, y = _data(rng, n=20, flip=2)
    kernel = SEKernel(variance=1.0, lengthscale=2.0, jitter=1e-2, learn_jitter=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # three EM iterations on purpose
        short = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), m_step_max_iter=1, max_iter=3, tol=1e-12)
        longer = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), m_step_max_iter=10, max_iter=3, tol=1e-12)
    assert short.n_iter == longer.n_iter == 3 and not short.converged
    # more L-BFGS-B iterations per M-step gain more of F_cov per EM iteration
    assert np.all(short.history[1:, 2] >= 0) and np.all(longer.history[1:, 2] >= 0)  # row 0: the first E-step
    assert longer.history[1, 2] >= short.history[1, 2] - 1e-12
    assert short.n_m_evaluations < longer.n_m_evaluations
    bounds = theta_box(kernel)
    for fit in (short, longer):
        assert np.all(fit.kernel.theta >= bounds[:, 0]) and np.all(fit.kernel.theta <= bounds[:, 1])
    # the renamed and the removed options
    with pytest.raises(TypeError):
        em_ep(kernel, X, y, m_step_maxiter=5)
    with pytest.raises(TypeError):
        em_ep(kernel, X, y, log_bound=15.0)
    with pytest.raises(TypeError):
        em_ep(kernel, X, y, ProbitLikelihood())


def test_maximize_ep_evidence_max_iter_converged_and_restarts(rng):
    X, y = _data(rng, n=20, flip=2)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    with pytest.warns(ConvergenceWarning, match="not converged after 2 L-BFGS-B iterations"):
        early = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood(), max_iter=2)
    assert not early.converged and early.optimization.n_iter == 2
    assert not hasattr(early, "success") and not hasattr(early, "message")
    full = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood())
    assert full.converged and full.log_evidence > early.log_evidence
    # converged means the projected gradient test of the shared maximiser
    search = full.optimization
    assert search.gradient_norm <= 1e-5 * max(1.0, abs(search.value))
    assert full.log_evidence == pytest.approx(search.value, abs=1e-6)
    # restarts: seeded, reproducible, and the best start is kept
    a = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood(), n_restarts=2, rng=4)
    b = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood(), n_restarts=2, rng=4)
    np.testing.assert_array_equal(a.kernel.theta, b.kernel.theta)
    assert a.optimization.values.shape == (3,) and a.optimization.value == np.max(a.optimization.values)
    assert a.log_evidence >= full.log_evidence - 1e-6
    with pytest.raises(ValueError, match="rng"):
        maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood(), n_restarts=2)
    with pytest.raises(TypeError):
        maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood(), maxiter=10)


def test_learners_respect_fixed_parameters_outside_the_box_and_move_free_ones_onto_it(rng):
    """A bias of 1e-10 and a latent noise of 1e-10 lie below their boxes' lower ends (log −20)."""
    X, y = _data(rng, n=16, flip=2)
    kernel = SEKernel(variance=1.0, lengthscale=3.0, bias=1e-10, jitter=1e-10, learn_bias=True, learn_jitter=True)
    bounds = theta_box(kernel)
    assert kernel.theta[2] < bounds[2, 0] and kernel.theta[3] < bounds[3, 0]
    fixed = ("log_bias", "log_jitter")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        em = em_ep(
            kernel, X, y, likelihood=LabelNoiseLikelihood(0.0, 0.0), learn_epsilon=False, fixed=fixed, max_iter=5
        )
        direct = maximize_ep_evidence(
            kernel, X, y, likelihood=LabelNoiseLikelihood(0.0, 0.0), learn_epsilon=False, fixed=fixed, max_iter=5
        )
        free = em_ep(
            kernel, X, y, likelihood=LabelNoiseLikelihood(0.0, 0.0), learn_epsilon=False, max_iter=30, tol=1e-3
        )
    for fit in (em, direct):
        np.testing.assert_array_equal(fit.kernel.theta[2:], kernel.theta[2:])  # fixed means fixed
    # free parameters start on the box's edge and EM-EP climbs from there; it does not stop at once with
    # a negative "gain" measured from the point outside the box
    assert np.all(free.kernel.theta >= bounds[:, 0]) and np.all(free.kernel.theta <= bounds[:, 1])
    assert np.all(free.history[1:, 2] >= 0)
    assert free.n_iter > 2 and free.log_evidence > free.history[0, 0] + 0.5


# ----------------------------------------------------------------------------- the parallel schedule
@pytest.mark.parametrize(
    "variance, lengthscale, likelihood, flip",
    [
        (1.0, 1.0, ProbitLikelihood(), 0),
        (25.0, 0.7, ProbitLikelihood(), 2),  # strong coupling: the undamped parallel updates overshoot
        (2.0, 1.0, LabelNoiseLikelihood(0.0, 0.5), 1),  # K&G's latent noise
    ],
)
def test_parallel_and_sequential_ep_reach_the_same_fixed_point(rng, variance, lengthscale, likelihood, flip):
    X, y = _data(rng, n=15, flip=flip)
    K = SEKernel(variance=variance, lengthscale=lengthscale).K(X)
    options = dict(likelihood=likelihood, tol=1e-10, max_sweeps=2000)
    sequential = expectation_propagation(K, y, **options)
    parallel = expectation_propagation(K, y, schedule="parallel", **options)
    assert sequential.converged and parallel.converged
    np.testing.assert_allclose(parallel.tau, sequential.tau, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(parallel.nu, sequential.nu, rtol=1e-8, atol=1e-8)
    assert parallel.schedule == "parallel" and sequential.schedule == "sequential"
    np.testing.assert_allclose(parallel.mu, sequential.mu, rtol=1e-8, atol=1e-8)
    assert parallel.log_evidence == pytest.approx(sequential.log_evidence, abs=1e-8)


def test_parallel_ep_is_damped_when_it_oscillates(rng):
    """Huge signal variance: undamped parallel EP's site changes grow; the adaptive damping still converges."""
    X, y = _data(rng, n=20, flip=3)
    K = SEKernel(variance=1e4, lengthscale=0.5).K(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        parallel = expectation_propagation(K, y, schedule="parallel", tol=1e-10, max_sweeps=3000)
    sequential = expectation_propagation(K, y, tol=1e-10, max_sweeps=3000)
    assert np.all(np.isfinite(parallel.mu)) and parallel.converged
    assert parallel.log_evidence == pytest.approx(sequential.log_evidence, abs=1e-6)


@pytest.mark.parametrize("case", ["positive", "tiny", "negative"])
def test_site_marginals_match_the_dense_posterior(rng, case):
    X, y = _data(rng, n=10)
    K = SEKernel(variance=2.0, lengthscale=1.2).K(X)
    tau = rng.uniform(0.1, 3.0, size=10)
    nu = rng.normal(size=10)
    if case == "tiny":
        tau[:4] = [0.0, 1e-9, 1e-6, 1e-5]  # τ̃k_ii below 1e-4: the direct formula, not 1 − (B⁻¹)_ii
    if case == "negative":
        tau[2] = -0.05
    var, mu = site_marginals(K, tau, nu)
    Sigma, mean, _, _ = posterior_from_sites(K, tau, nu, need_R=False)
    np.testing.assert_allclose(var, np.diag(Sigma), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(mu, mean, rtol=1e-10, atol=1e-12)


def test_parallel_ep_falls_back_to_damped_sequential_ep_with_label_noise(rng):
    """ε = 0.1 is not log-concave: negative site precisions; undamped EP of either schedule oscillates here."""
    X, y = _data(rng, n=15, flip=3)
    K = SEKernel(variance=4.0, lengthscale=1.5).K(X)
    likelihood = LabelNoiseLikelihood(0.1, 0.0)
    reference = expectation_propagation(K, y, likelihood=likelihood, damping=0.5, tol=1e-10, max_sweeps=2000)
    assert reference.converged and np.min(reference.tau) < 0
    result, damping = expectation_propagation_with_fallback(K, y, likelihood=likelihood, schedule="parallel",
                                                            tol=1e-10, max_sweeps=400)  # fmt: skip
    # parallel EP fails in 400 sweeps; undamped sequential EP fails; sequential with damping ½ converges
    assert result.converged and result.schedule == "sequential" and damping == 0.5
    np.testing.assert_allclose(result.mu, reference.mu, rtol=1e-7, atol=1e-8)
    assert result.log_evidence == pytest.approx(reference.log_evidence, abs=1e-8)


@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
def test_a_point_with_zero_variance_raises_a_clear_error_not_nan(schedule):
    # a zero prior variance leaves q(f_i) a point mass: no cavity, no finite evidence; learners treat the
    # FloatingPointError as a step to reject (it once surfaced as a ZeroDivisionError inside a search)
    X = np.random.default_rng(0).normal(size=(6, 1))
    K = np.exp(-0.5 * (X - X.T) ** 2)
    K[0, :] = K[:, 0] = 0.0
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    with pytest.raises(FloatingPointError):
        expectation_propagation(K, y, schedule=schedule)


def test_em_ep_names_a_cycle_of_the_error_count(rng, monkeypatch):
    """K&G's r/n rule is not the M-step of a bound: it can alternate between two counts for ever, so that step 3's
    "ε unchanged" never holds. The driver says so, and returns the pair."""
    import gpc_ref.ep_learning as ep_learning

    X, y = _data(rng, n=20, flip=2)
    counts = iter([0.1, 0.2] * 50)
    monkeypatch.setattr(ep_learning, "epsilon_from_errors", lambda y, mean: next(counts))
    kernel = SEKernel(variance=1.0, lengthscale=2.0)
    with pytest.warns(ConvergenceWarning, match=r"epsilon alternates between 0.1 and 0.2 in the last E-steps"):
        result = em_ep(kernel, X, y, likelihood=LabelNoiseLikelihood(0.05, 0.0), max_iter=20)
    assert not result.converged and result.epsilon_cycle == (0.1, 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        capped = em_ep(kernel, X, y, likelihood=ProbitLikelihood(), max_iter=3)
    assert capped.epsilon_cycle is None


def test_the_learners_trusted_ep_is_the_checked_one(rng):
    """The learners check their data once and then run EP on trusted arguments: the same EP, bit for bit."""
    from gpc_ref.ep import trusted_ep_with_fallback

    X, y = _data(rng, n=15, flip=2)
    K = SEKernel(variance=2.0, jitter=0.1).K(X)
    likelihood = LabelNoiseLikelihood(0.05, 0.0)
    for schedule in ("sequential", "parallel"):
        checked, d1 = expectation_propagation_with_fallback(K, y, likelihood=likelihood, schedule=schedule)
        trusted, d2 = trusted_ep_with_fallback(K, y, likelihood, None, None, schedule, 1.0, 1e-6, 200)
        assert d1 == d2 and np.array_equal(checked.tau, trusted.tau) and checked.log_evidence == trusted.log_evidence
    with pytest.raises(ValueError, match="y"):
        expectation_propagation_with_fallback(K, np.arange(15.0), likelihood=likelihood)
