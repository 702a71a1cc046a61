"""The identities of the appendix book/gaussian_identities.md, checked numerically (one test per section)."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import multivariate_normal
from scipy.stats import norm

from gpc_ref.ep import site_marginals
from gpc_ref.ep import tilted_moments
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import normal_pdf_over_cdf


def _spd(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_conditional_from_the_joint_precision(rng):
    """gi-eq-conditional: the conditional's covariance is the inverse of the precision's block, its mean solves."""
    S = _spd(rng, 5)
    m = rng.normal(size=5)
    a, b = slice(0, 2), slice(2, 5)
    x_b = rng.normal(size=3)
    A, B, C = S[a, a], S[b, b], S[a, b]
    mean = m[a] + C @ np.linalg.solve(B, x_b - m[b])
    cov = A - C @ np.linalg.solve(B, C.T)
    precision = np.linalg.inv(S)
    np.testing.assert_allclose(cov, np.linalg.inv(precision[a, a]), rtol=1e-10)
    # the conditional density is the joint density divided by the marginal of b
    x_a = rng.normal(size=2)
    joint = multivariate_normal(m, S).logpdf(np.concatenate([x_a, x_b]))
    marginal = multivariate_normal(m[b], B).logpdf(x_b)
    assert joint - marginal == pytest.approx(multivariate_normal(mean, cov).logpdf(x_a), abs=1e-10)


def test_product_of_gaussians_and_its_normaliser(rng):
    A, B = _spd(rng, 3), _spd(rng, 3)
    a, b, x = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    S = np.linalg.inv(np.linalg.inv(A) + np.linalg.inv(B))
    c = S @ (np.linalg.solve(A, a) + np.linalg.solve(B, b))
    left = multivariate_normal(a, A).logpdf(x) + multivariate_normal(b, B).logpdf(x)
    right = multivariate_normal(b, A + B).logpdf(a) + multivariate_normal(c, S).logpdf(x)
    assert left == pytest.approx(right, abs=1e-10)


def test_woodbury_and_the_b_form(rng):
    A, Cm = _spd(rng, 6), _spd(rng, 2)
    U, V = rng.normal(size=(6, 2)), rng.normal(size=(2, 6))
    Ai = np.linalg.inv(A)
    woodbury = Ai - Ai @ U @ np.linalg.inv(np.linalg.inv(Cm) + V @ Ai @ U) @ V @ Ai
    np.testing.assert_allclose(woodbury, np.linalg.inv(A + U @ Cm @ V), rtol=1e-9, atol=1e-12)
    X = rng.normal(size=(6, 2))
    K = SEKernel(variance=2.0, lengthscale=1.3).K(X)
    w = rng.uniform(0.0, 2.0, size=6)
    w[0] = 0.0  # a zero precision is allowed in the B form (no W⁻¹)
    s = np.sqrt(w)
    B = np.eye(6) + s[:, None] * K * s[None, :]
    b_form = K - K @ (s[:, None] * np.linalg.solve(B, s[:, None] * K))
    np.testing.assert_allclose(b_form, np.linalg.inv(np.linalg.inv(K) + np.diag(w)), rtol=1e-8, atol=1e-10)
    # S̃½ Σ S̃½ = I − B⁻¹, what parallel EP's site_marginals uses
    var, _ = site_marginals(K, w, np.zeros(6))
    np.testing.assert_allclose(var, np.diag(b_form), rtol=1e-10)


def test_determinant_lemma(rng):
    X = rng.normal(size=(7, 3))
    K = SEKernel(variance=1.5, lengthscale=2.0).K(X)
    w = rng.uniform(0.1, 3.0, size=7)
    s = np.sqrt(w)
    B = np.eye(7) + s[:, None] * K * s[None, :]
    left = np.linalg.slogdet(K)[1] + np.linalg.slogdet(np.linalg.inv(K) + np.diag(w))[1]
    assert left == pytest.approx(np.linalg.slogdet(B)[1], abs=1e-9)
    assert np.linalg.slogdet(B)[1] == pytest.approx(2 * np.sum(np.log(np.diag(np.linalg.cholesky(B)))), abs=1e-12)


@pytest.mark.parametrize("a, b, mu, s2", [(0.0, 1.0, 0.4, 2.0), (0.5, 0.3, -1.0, 0.7), (-2.0, 2.5, 3.0, 9.0)])
def test_probit_gaussian_integral(a, b, mu, s2):
    value, _ = integrate.quad(lambda f: ndtr((f - a) / b) * norm.pdf(f, mu, np.sqrt(s2)), -np.inf, np.inf)
    assert value == pytest.approx(ndtr((mu - a) / np.sqrt(b**2 + s2)), abs=1e-10)


@pytest.mark.parametrize("y, m, v, s", [(1.0, 0.3, 0.8, 1.0), (-1.0, 2.0, 3.0, 1.0), (1.0, -1.5, 2.0, 0.2)])
def test_truncated_gaussian_moments(y, m, v, s):
    def density(f, power):
        return f**power * ndtr(y * f / s) * norm.pdf(f, m, np.sqrt(v))

    Z = integrate.quad(density, -np.inf, np.inf, args=(0,))[0]
    mean = integrate.quad(density, -np.inf, np.inf, args=(1,))[0] / Z
    var = integrate.quad(density, -np.inf, np.inf, args=(2,))[0] / Z - mean**2
    z = y * m / np.sqrt(s**2 + v)
    r = float(normal_pdf_over_cdf(z))
    assert ndtr(z) == pytest.approx(Z, rel=1e-9)
    assert m + y * v * r / np.sqrt(s**2 + v) == pytest.approx(mean, abs=1e-8)
    assert v - v**2 * r * (z + r) / (s**2 + v) == pytest.approx(var, abs=1e-8)
    if s == 1.0:  # EP's tilted moments for the probit are these formulas
        moments = tilted_moments(np.array([y]), np.array([m]), np.array([v]))
        assert float(np.exp(moments.log_Z[0])) == pytest.approx(Z, rel=1e-9)


def test_gaussian_kl_and_entropy(rng):
    n = 3
    Sq, Sp = _spd(rng, n), _spd(rng, n)
    mq, mp = rng.normal(size=n), rng.normal(size=n)
    kl = 0.5 * (np.trace(np.linalg.solve(Sp, Sq)) + (mp - mq) @ np.linalg.solve(Sp, mp - mq) - n
                + np.linalg.slogdet(Sp)[1] - np.linalg.slogdet(Sq)[1])  # fmt: skip
    draws = np.random.default_rng(1).multivariate_normal(mq, Sq, size=400_000)
    monte_carlo = np.mean(multivariate_normal(mq, Sq).logpdf(draws) - multivariate_normal(mp, Sp).logpdf(draws))
    assert kl == pytest.approx(monte_carlo, abs=5e-3)
    entropy = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * Sq)[1]
    assert entropy == pytest.approx(multivariate_normal(mq, Sq).entropy(), abs=1e-10)
