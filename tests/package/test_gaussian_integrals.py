"""Tests of gpc_ref.gaussian_integrals: the sigmoid, probit and softmax integrated against a Gaussian.

References are closed forms (the probit integral, the moments of N(0, 1)), adaptive quadrature
(``sigmoid_gaussian_exact``, itself checked against symmetry) and long Monte Carlo runs made
here with numpy, independently of the module under test.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy import stats
from scipy.special import expit

from gpc_ref import gaussian_integrals as gi
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood

N_SIGMA = 4.0  # Monte Carlo agreement is asserted within this many standard errors


def double_factorial(k):
    """k!! for k >= -1 (with (-1)!! = 1): E[u^(k+1)] of N(0, 1) for odd k."""
    return float(np.prod(np.arange(k, 0, -2, dtype=float))) if k > 0 else 1.0


def normal_moment(k):
    """E[u^k] for u ~ N(0, 1): 0 for odd k, (k − 1)!! for even k."""
    return 0.0 if k % 2 else double_factorial(k - 1)


# --------------------------------------------------------------------------- Gauss–Hermite rules
@pytest.mark.parametrize("n_nodes", [1, 2, 3, 5, 10, 20])
def test_standard_normal_rule_integrates_polynomials_up_to_degree_2n_minus_1(n_nodes):
    nodes, weights = gi.standard_normal_rule(n_nodes)
    assert nodes.shape == weights.shape == (n_nodes,)
    assert np.all(weights > 0)
    assert weights.sum() == pytest.approx(1.0, abs=1e-13)
    for k in range(2 * n_nodes):
        scale = max(1.0, normal_moment(k + (k % 2)))  # size of the neighbouring even moment
        assert nodes**k @ weights == pytest.approx(normal_moment(k), abs=1e-11 * scale), f"degree {k}"
    # and not one degree beyond: the rule misses E[u^2n] by exactly n!, the squared norm of the
    # monic Hermite polynomial He_n whose roots are the nodes
    k = 2 * n_nodes
    assert normal_moment(k) - nodes**k @ weights == pytest.approx(float(np.prod(np.arange(1.0, n_nodes + 1))), rel=1e-6)


def test_standard_normal_rule_refuses_zero_nodes():
    with pytest.raises(ValueError, match="n_nodes"):
        gi.standard_normal_rule(0)


@pytest.mark.parametrize("n_nodes", [3, 8])
def test_gauss_hermite_grid_has_the_moments_of_a_standard_bivariate_normal(n_nodes):
    nodes, log_weights = gi.gauss_hermite_grid(2, n_nodes)
    assert nodes.shape == (n_nodes**2, 2) and log_weights.shape == (n_nodes**2,)
    w = np.exp(log_weights)
    assert w.sum() == pytest.approx(1.0, abs=1e-13)
    u1, u2 = nodes.T
    # E[u1^a u2^b] = E[u1^a] E[u2^b], exact while a, b <= 2 n_nodes − 1
    for a in range(2 * n_nodes):
        for b in range(2 * n_nodes - a):
            expected = normal_moment(a) * normal_moment(b)
            scale = max(1.0, normal_moment(a + a % 2) * normal_moment(b + b % 2))
            assert (u1**a * u2**b) @ w == pytest.approx(expected, abs=1e-11 * scale), (a, b)
    # through f = L u the rule has the covariance L Lᵀ
    L = np.array([[1.5, 0.0], [-0.7, 0.4]])
    f = nodes @ L.T
    np.testing.assert_allclose((f * w[:, None]).T @ f, L @ L.T, atol=1e-13)


def test_gauss_hermite_grid_in_three_dimensions_matches_the_one_dimensional_rule():
    nodes_1d, weights_1d = gi.standard_normal_rule(4)
    nodes, log_weights = gi.gauss_hermite_grid(3, 4)
    assert nodes.shape == (64, 3)
    # tensor product: the first node is (x_0, x_0, x_0) with weight w_0³; every marginal is the 1-D rule
    np.testing.assert_allclose(nodes[0], np.full(3, nodes_1d[0]))
    assert np.exp(log_weights[0]) == pytest.approx(weights_1d[0] ** 3, rel=1e-12)
    for axis in range(3):
        marginal = np.array([np.exp(log_weights)[nodes[:, axis] == x].sum() for x in nodes_1d])
        np.testing.assert_allclose(marginal, weights_1d, rtol=1e-12)


def test_gauss_hermite_expectation_of_polynomials_and_shapes():
    mean = np.array([[0.0, 1.0], [-2.0, 0.5]])
    var = np.array([[1.0, 4.0], [0.25, 0.0]])
    # E[f²] = μ² + s², E[f³] = μ³ + 3μs²: exact for a rule of more than 1 node
    np.testing.assert_allclose(gi.gauss_hermite_expectation(lambda f: f**2, mean, var, 5), mean**2 + var, rtol=1e-13)
    np.testing.assert_allclose(
        gi.gauss_hermite_expectation(lambda f: f**3, mean, var, 5), mean**3 + 3 * mean * var, rtol=1e-12, atol=1e-13
    )
    # broadcasting a scalar variance
    assert gi.gauss_hermite_expectation(np.exp, mean, 1.0).shape == (2, 2)


# --------------------------------------------------------------------------- sigmoid and probit
MU, VAR = np.meshgrid(np.linspace(-6, 6, 13), np.array([0.0, 0.1, 1.0, 4.0, 25.0, 100.0]))


def test_gaussian_sigmoid_integrals_against_adaptive_quadrature():
    exact = gi.sigmoid_gaussian_exact(MU, VAR)
    # a known value: ∫σ(f)N(f|0,s²)df = ½ by symmetry
    np.testing.assert_allclose(exact[:, 6], 0.5, atol=1e-12)
    # stated accuracies (maxima over the grid): erf mixture ≤ 3e-4, MacKay ≤ 0.02
    assert np.max(np.abs(gi.sigmoid_gaussian_erf_mixture(MU, VAR) - exact)) < 3e-4
    assert np.max(np.abs(gi.sigmoid_gaussian_mackay(MU, VAR) - exact)) < 0.02
    moderate = VAR <= 4.0
    assert np.max(np.abs(gi.sigmoid_gaussian_quadrature(MU, VAR)[moderate] - exact[moderate])) < 1e-9


def test_sigmoid_gaussian_exact_is_symmetric_and_exact_at_zero_variance():
    mu = np.array([-3.0, -0.4, 1.7])
    np.testing.assert_allclose(gi.sigmoid_gaussian_exact(mu, 0.0), expit(mu), rtol=1e-15)
    for var in (0.3, 9.0):
        np.testing.assert_allclose(
            gi.sigmoid_gaussian_exact(mu, var) + gi.sigmoid_gaussian_exact(-mu, var), 1.0, atol=1e-12
        )


def test_erf_mixture_keeps_the_symmetry_of_the_sigmoid():
    assert gi.ERF_MIXTURE_COEFFICIENTS.sum() == pytest.approx(1.0, abs=1e-12)
    assert gi.ERF_MIXTURE_SCALES.shape == gi.ERF_MIXTURE_COEFFICIENTS.shape == (5,)
    p = gi.sigmoid_gaussian_erf_mixture(np.array([0.0, 2.0, -2.0]), np.array([3.0, 3.0, 3.0]))
    assert p[0] == pytest.approx(0.5, abs=1e-12)
    assert p[1] + p[2] == pytest.approx(1.0, abs=1e-12)


def test_erf_mixture_with_one_unit_term_is_the_probit_integral():
    # scales (1,) and weights (1,): Σ c_i Φ(κ_i μ/√(1 + κ_i² s²)) = Φ(μ/√(1 + s²))
    mu, var = np.linspace(-3, 3, 7), np.linspace(0, 5, 7)
    np.testing.assert_allclose(
        gi.sigmoid_gaussian_erf_mixture(mu, var, scales=[1.0], coefficients=[1.0]),
        gi.probit_gaussian(mu, var),
        rtol=1e-14,
    )


def test_probit_integral_is_exact():
    mu, var = 0.8, 2.5
    value, _ = integrate.quad(lambda f: stats.norm.cdf(f) * stats.norm.pdf(f, mu, np.sqrt(var)), -40, 40)
    assert gi.probit_gaussian(mu, var) == pytest.approx(value, abs=1e-10)
    assert ProbitLikelihood().predict(mu, var) == pytest.approx(value, abs=1e-10)


@pytest.mark.parametrize(
    "method, function",
    [
        ("erf_mixture", gi.sigmoid_gaussian_erf_mixture),
        ("mackay", gi.sigmoid_gaussian_mackay),
        ("quadrature", gi.sigmoid_gaussian_quadrature),
        ("exact", gi.sigmoid_gaussian_exact),
    ],
)
def test_logistic_predict_dispatches_to_the_integrals(method, function):
    mean, var = np.array([-1.0, 0.3, 2.0]), np.array([0.5, 2.0, 10.0])
    np.testing.assert_array_equal(LogisticLikelihood().predict(mean, var, method=method), function(mean, var))


# --------------------------------------------------------------------------- expectations of a log link
def _adaptive_expectation(g, mean, sd):
    """E[g(z)], z ~ N(mean, sd²), by scipy's adaptive quadrature in u = (z − mean)/sd, split at the bend."""
    if sd == 0.0:
        return float(g(np.array(mean)))
    bends = (0.0, -2.0, 2.0, -10.0, 10.0, -100.0, 100.0)  # where the links bend, and where log Φ's log term lives
    points = sorted(p for p in ((b - mean) / sd for b in bends) if -12 < p < 12)
    value, _ = integrate.quad(
        lambda u: g(mean + sd * u) * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi),
        -12,
        12,
        points=points or None,
        epsabs=1e-13,
        epsrel=1e-12,
        limit=2000,
    )
    return value


@pytest.mark.parametrize("link", [LogisticLikelihood(), ProbitLikelihood()], ids=lambda link: link.name)
def test_log_link_expectations_against_adaptive_quadrature(link):
    functions = (link.log_link, lambda z: link.link_derivatives(z)[0], lambda z: link.link_derivatives(z)[1])
    # the stated accuracy: 1e-9 up to s = 30; at s = 300 the panels beside the bend see log Φ's
    # logarithmic term from close by, and the relative error of E[ℓ″] grows to about 1e-8
    for sd, tolerance in ((0.0, 1e-9), (0.3, 1e-9), (1.0, 1e-9), (1.49, 1e-9), (1.51, 1e-9), (4.0, 1e-9),
                          (30.0, 1e-9), (300.0, 1e-7)):  # fmt: skip
        mean = np.linspace(-3 * sd - 8, 3 * sd + 8, 9)
        values = gi.log_link_expectations(link, mean, sd**2)
        for g, computed in zip(functions, values):
            reference = np.array([_adaptive_expectation(g, m, sd) for m in mean])
            np.testing.assert_allclose(computed, reference, rtol=tolerance, atol=tolerance, err_msg=f"sd = {sd}")


@pytest.mark.parametrize("link", [LogisticLikelihood(), ProbitLikelihood()], ids=lambda link: link.name)
def test_log_link_expectation_derivatives_are_those_of_the_expectation(link):
    """Bonnet: ∂E[ℓ]/∂μ = E[ℓ′]; Price: ∂E[ℓ]/∂s² = ½E[ℓ″]; on both rules (s below and above the switch)."""
    mean = np.array([-4.0, -0.5, 0.7, 3.0])
    for var in (0.5, 25.0):
        _, d1, d2 = gi.log_link_expectations(link, mean, var)
        step = 1e-5
        by_mean = (
            gi.log_link_expectations(link, mean + step, var)[0] - gi.log_link_expectations(link, mean - step, var)[0]
        ) / (2 * step)
        by_var = (
            gi.log_link_expectations(link, mean, var + step)[0] - gi.log_link_expectations(link, mean, var - step)[0]
        ) / (2 * step)
        np.testing.assert_allclose(by_mean, d1, atol=1e-8)
        np.testing.assert_allclose(by_var, 0.5 * d2, atol=1e-8)


def test_gauss_hermite_alone_fails_for_broad_gaussians():
    """Why the panel rule exists: 64 Hermite nodes miss the bend of log σ once s is large."""
    link = LogisticLikelihood()
    reference = _adaptive_expectation(link.log_link, 3.0, 30.0)
    hermite = gi.gauss_hermite_expectation(link.log_link, 3.0, 900.0, n_points=64)
    assert abs(hermite - reference) > 1e-3
    assert gi.log_link_expectations(link, 3.0, 900.0)[0] == pytest.approx(reference, abs=1e-10)


def test_log_link_expectations_shapes_and_bad_input():
    link = ProbitLikelihood()
    values = gi.log_link_expectations(link, np.zeros((2, 3)), np.array([0.1, 5.0, 0.0]))
    assert all(v.shape == (2, 3) for v in values)
    with pytest.raises(ValueError, match="var must be non-negative"):
        gi.log_link_expectations(link, 0.0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        gi.log_link_expectations(link, np.nan, 1.0)
    with pytest.raises(ValueError, match="log_link"):
        gi.log_link_expectations(np.log, 0.0, 1.0)


# --------------------------------------------------------------------------- softmax
def test_softmax_is_stable_and_shift_invariant():
    F = np.array([[1000.0, 1000.0, 999.0], [-1000.0, 0.0, 0.0]])
    p = gi.softmax(F)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p, gi.softmax(F - 123.0))
    np.testing.assert_allclose(gi.log_sum_exp(F), np.log(np.exp(F - F.max(1, keepdims=True)).sum(1)) + F.max(1))


def monte_carlo_reference(mean, cov, n_samples, seed):
    """Plain Monte Carlo of E[softmax(f)], f ~ N(mean_i, cov_i), with the standard error of each entry."""
    rng = np.random.default_rng(seed)
    values, errors = [], []
    for m, c in zip(mean, cov):
        draws = gi.softmax(m + rng.standard_normal((n_samples, len(m))) @ np.linalg.cholesky(c).T)
        values.append(draws.mean(axis=0))
        errors.append(draws.std(axis=0, ddof=1) / np.sqrt(n_samples))
    return np.array(values), np.array(errors)


def three_class_inputs(scale):
    """Three test inputs with 3 classes: correlated latent covariances, standard deviations ~ scale."""
    rng = np.random.default_rng(0)
    mean = np.array([[0.3, -0.5, 1.0], [2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    A = rng.normal(size=(3, 3, 3))
    cov = scale**2 * (0.3 * A @ np.swapaxes(A, 1, 2) / 3 + 0.7 * np.eye(3))
    return mean, cov


@pytest.fixture(scope="module")
def moderate_reference():
    mean, cov = three_class_inputs(0.5)
    return mean, cov, *monte_carlo_reference(mean, cov, 400_000, seed=1)


@pytest.mark.parametrize(
    "method, options",
    [
        ("qmc", {}),
        ("gauss_hermite", {}),
        ("cubature", {}),
        ("monte_carlo", dict(rng=3, n_samples=20_000)),
    ],
)
def test_softmax_expectation_agrees_with_a_long_monte_carlo_run(moderate_reference, method, options):
    mean, cov, reference, std_error = moderate_reference
    p = gi.softmax_gaussian_expectation(mean, cov, method=method, **options)
    assert p.shape == mean.shape
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    if method == "monte_carlo":
        # two independent Monte Carlo estimates: their difference has the combined error,
        # the method's own being at most 0.5/√S
        std_error = np.sqrt(std_error**2 + 0.25 / options["n_samples"])
    assert np.all(np.abs(p - reference) < N_SIGMA * std_error)


@pytest.mark.parametrize("method", gi.SOFTMAX_METHODS)
def test_softmax_expectation_of_two_classes_is_the_sigmoid_integral(method):
    # softmax(f)_1 = σ(f1 − f2), and f1 − f2 ~ N(μ1 − μ2, Σ11 + Σ22 − 2Σ12)
    mean = np.array([[0.8, -0.2], [-1.0, 0.5], [0.0, 0.0]])
    cov = np.array([[[0.4, 0.1], [0.1, 0.3]], [[0.5, -0.1], [-0.1, 0.3]], [[0.2, 0.0], [0.0, 0.2]]])
    difference_var = cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    expected = gi.sigmoid_gaussian_exact(mean[:, 0] - mean[:, 1], difference_var)
    p = gi.softmax_gaussian_expectation(mean, cov, method=method, rng=0, n_samples=2**16)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    # (differences of variance ≤ 1) Gauss–Hermite with its default 10 nodes and QMC with 2^16 points
    # are accurate to ~1e-7; the 3-node cubature's degree-5 error is ~6e-4; MC: 4 standard errors
    # of at most 0.5/√65536
    tolerance = {"gauss_hermite": 1e-6, "qmc": 1e-5, "cubature": 2e-3, "monte_carlo": 4 * 0.5 / 2**8}[method]
    np.testing.assert_allclose(p[:, 0], expected, atol=tolerance)


def test_qmc_is_accurate_for_large_latent_variances():
    # latent standard deviations 10–13: the softmax is a sharp step on the scale of the Gaussian
    rng = np.random.default_rng(5)
    mean = np.array([[3.0, -2.0, 0.5, 1.0], [0.0, 1.0, 2.0, 3.0]])
    B = 3.0 * rng.normal(size=(2, 4, 4))
    cov = B @ np.swapaxes(B, 1, 2) + 100.0 * np.eye(4)
    reference, std_error = monte_carlo_reference(mean, cov, 400_000, seed=6)
    qmc = gi.softmax_gaussian_expectation(mean, cov, method="qmc")
    np.testing.assert_allclose(qmc.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.abs(qmc - reference) < N_SIGMA * std_error)
    # where the tensor Gauss–Hermite rule and the cubature are far off, as the docstring says
    for method in ("gauss_hermite", "cubature"):
        poor = gi.softmax_gaussian_expectation(mean, cov, method=method)
        assert np.max(np.abs(poor - reference)) > 10 * np.max(np.abs(qmc - reference)), method


def test_softmax_expectation_is_deterministic_except_monte_carlo():
    mean, cov = three_class_inputs(1.0)
    for method in ("qmc", "gauss_hermite", "cubature"):
        np.testing.assert_array_equal(
            gi.softmax_gaussian_expectation(mean, cov, method=method),
            gi.softmax_gaussian_expectation(mean, cov, method=method),
        )
    a = gi.softmax_gaussian_expectation(mean, cov, method="monte_carlo", rng=7)
    b = gi.softmax_gaussian_expectation(mean, cov, method="monte_carlo", rng=np.random.default_rng(7))
    c = gi.softmax_gaussian_expectation(mean, cov, method="monte_carlo", rng=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_softmax_expectation_at_zero_covariance_is_the_softmax():
    mean = np.array([[0.3, -0.5, 1.0], [2.0, 0.0, -1.0]])
    cov = np.zeros((2, 3, 3))
    for method in gi.SOFTMAX_METHODS:
        p = gi.softmax_gaussian_expectation(mean, cov, method=method, rng=0)
        np.testing.assert_allclose(p, gi.softmax(mean), atol=1e-12, err_msg=method)


def test_softmax_expectation_refuses_bad_input():
    mean, cov = three_class_inputs(1.0)
    with pytest.raises(ValueError, match="mean must have shape"):
        gi.softmax_gaussian_expectation(mean[:, :1], cov[:, :1, :1])
    with pytest.raises(ValueError, match="cov must have shape"):
        gi.softmax_gaussian_expectation(mean, cov[:2])
    with pytest.raises(ValueError, match="finite"):
        gi.softmax_gaussian_expectation(np.where(mean == 0, np.nan, mean), cov)
    with pytest.raises(ValueError, match="method"):
        gi.softmax_gaussian_expectation(mean, cov, method="laplace")
    with pytest.raises(ValueError, match="power of two"):
        gi.softmax_gaussian_expectation(mean, cov, method="qmc", n_samples=1000)
    with pytest.raises(ValueError, match="rng"):
        gi.softmax_gaussian_expectation(mean, cov, method="monte_carlo")
    with pytest.raises(ValueError, match="too many"):
        gi.softmax_gaussian_expectation(
            np.zeros((1, 8)), np.tile(np.eye(8), (1, 1, 1)), method="gauss_hermite", n_nodes=10
        )
