"""Annealed importance sampling (gpc_ref.exact.ais_log_evidence) against exact evidences."""

import numpy as np
import pytest

from gpc_ref.exact import ais_log_evidence
from gpc_ref.exact import probit_orthant_log_evidence
from gpc_ref.exact import quadrature_posterior
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood


def test_orthant_evidence_matches_quadrature():
    X = np.array([[0.0], [0.7], [1.5]])
    y = np.array([1.0, -1.0, -1.0])
    K = SEKernel(variance=2.0).K(X)
    exact = quadrature_posterior(K, lambda f: ProbitLikelihood().log_p(y, f)).log_evidence
    assert probit_orthant_log_evidence(K, y) == pytest.approx(exact, abs=1e-6)
    with pytest.raises(ValueError, match="-1, \\+1"):
        probit_orthant_log_evidence(K, np.array([1.0, 0.0, 1.0]))


@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LogisticLikelihood(), LabelNoiseLikelihood(0.1, 0.3)])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_ais_matches_quadrature_for_tiny_problems(likelihood, n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 1))
    y = np.array([1.0, -1.0, 1.0][:n])
    K = SEKernel(variance=4.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(K, lambda f: likelihood.log_p(y, f)).log_evidence
    estimate, standard_error = ais_log_evidence(K, y, likelihood, rng=5, n_temperatures=400, n_chains=64)
    assert 0 < standard_error < 0.05
    assert abs(estimate - exact) < 4 * standard_error + 0.01


def test_probit_orthant_evidence_is_reproducible_with_its_rng():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    K = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    assert probit_orthant_log_evidence(K, y) == probit_orthant_log_evidence(K, y)
    assert probit_orthant_log_evidence(K, y, rng=5) == probit_orthant_log_evidence(K, y, rng=5)


@pytest.mark.parametrize("n, variance", [(8, 1.0), (15, 3.0)])
def test_ais_matches_the_probit_orthant_probability(n, variance):
    """Probit: p(y) = P(y_i (f_i + ε_i) > 0 for all i) with f + ε ~ N(0, K + I), an orthant probability."""
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = SEKernel(variance=variance, lengthscale=1.0).K(X)
    exact = probit_orthant_log_evidence(K, y)
    if n == 8:  # the orthant probability itself, against a plain Monte Carlo count
        draws = np.random.default_rng(0).multivariate_normal(np.zeros(n), K + np.eye(n), size=400_000)
        frequency = np.mean(np.all(y * draws > 0, axis=1))
        assert abs(frequency - np.exp(exact)) < 4 * np.sqrt(frequency * (1 - frequency) / 400_000)
    result = ais_log_evidence(K, y, ProbitLikelihood(), rng=3, n_temperatures=1000, n_chains=32)
    assert result.std_error < 0.1 and result.n_samples == 32
    assert abs(result.log_evidence - exact) < 4 * result.std_error


def test_ais_is_reproducible_and_checks_its_input():
    X = np.linspace(-1, 1, 5)[:, None]
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0])
    K = SEKernel().K(X)
    a = ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_temperatures=50, n_chains=4)
    b = ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_temperatures=50, n_chains=4)
    assert a == b
    with pytest.raises(ValueError, match="n_chains"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_chains=1)
    with pytest.raises(ValueError, match="one label per row"):
        ais_log_evidence(K, y[:3], ProbitLikelihood(), rng=7)
    with pytest.raises(ValueError, match="exponent"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, exponent=0.0)
    with pytest.raises(TypeError):
        ais_log_evidence(K, y, ProbitLikelihood(), 7)  # rng is keyword-only
