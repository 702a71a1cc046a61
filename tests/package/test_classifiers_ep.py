"""Tests of the EPGPC estimator (Kim & Ghahramani chapter)."""

import warnings

import numpy as np
import pytest

from gpc_ref import ConvergenceWarning
from gpc_ref import NotFittedError
from gpc_ref.classifiers import EPGPC
from gpc_ref.ep import EPResult
from gpc_ref.ep import ep_predict
from gpc_ref.ep import expectation_propagation
from gpc_ref.ep_learning import EMEPResult
from gpc_ref.ep_learning import EvidenceFitResult
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import ProbitLikelihood


@pytest.fixture
def data(rng):
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.6 * rng.normal(size=30) > 0, "yes", "no")
    return X, y


def test_fit_returns_self_and_probabilities_follow_classes(data):
    X, y = data
    model = EPGPC(kernel=SEKernel(lengthscale=1.5), optimize=False)
    assert model.fit(X, y) is model
    assert list(model.classes_) == ["no", "yes"]
    proba = model.predict_proba(X[:5])
    assert proba.shape == (5, 2) and np.allclose(proba.sum(axis=1), 1.0)
    # column 1 is classes_[1] = "yes", the paper's y = +1: same numbers as the reference function
    y_pm1 = np.where(y == "yes", 1.0, -1.0)
    kernel = SEKernel(lengthscale=1.5)
    result = expectation_propagation(kernel.K(X), y_pm1, likelihood=ProbitLikelihood())
    assert np.allclose(proba[:, 1], ep_predict(result, kernel.K(X, X[:5]), kernel.diag(X[:5])).proba, atol=1e-6)
    assert np.isclose(model.log_marginal_likelihood_, result.log_evidence, atol=1e-6)
    assert isinstance(model.posterior_, EPResult) and model.hyperparameter_fit_ is None
    assert model.kernel_ is not None and model.epsilon_ == 0.0
    assert set(model.predict(X[:5])) <= {"no", "yes"}
    assert 0.0 <= model.score(X, y) <= 1.0
    mean, var = model.predict_latent(X[:3])
    assert mean.shape == (3,) and np.all(var > 0)


def test_label_noise_with_em_and_evidence(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        em = EPGPC(likelihood="label_noise", method="em", epsilon=0.01, max_iter=10, tol=1e-2).fit(X, y)
        direct = EPGPC(likelihood="label_noise", method="evidence", epsilon=0.01, max_iter=15).fit(X, y)
    for model in (em, direct):
        assert 0.0 <= model.epsilon_ < 0.5
        assert np.isfinite(model.log_marginal_likelihood_)
        assert model.log_marginal_likelihood_ == model.posterior_.log_evidence
        assert model.kernel_.learn_jitter  # K&G's default kernel learns the latent noise v₂
        p = model.predict_proba(X)
        assert np.all((p >= 0) & (p <= 1))
    assert isinstance(em.hyperparameter_fit_, EMEPResult) and isinstance(direct.hyperparameter_fit_, EvidenceFitResult)
    assert em.hyperparameter_fit_.n_iter <= 10
    assert direct.hyperparameter_fit_.optimization.n_iter <= 15
    assert em.n_iter_ == em.hyperparameter_fit_.n_iter


def test_fixed_parameters_stay_fixed(data):
    X, y = data
    kernel = SEKernel(variance=2.0, lengthscale=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # ten L-BFGS-B iterations may not meet the test
        model = EPGPC(kernel=kernel, method="evidence", fixed=("log_variance",), max_iter=10).fit(X, y)
    assert model.kernel_.variance == pytest.approx(2.0)
    assert model.epsilon_ == 0.0


def test_probit_does_not_learn_epsilon(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # five iterations on purpose
        model = EPGPC(kernel=SEKernel(), method="evidence", epsilon=0.2, max_iter=5).fit(X, y)
    assert model.epsilon_ == 0.0


def test_params_and_repr(data):
    model = EPGPC(likelihood="label_noise", damping=0.5)
    params = model.get_params()
    assert params["likelihood"] == "label_noise" and params["damping"] == 0.5
    assert params["optimize"] is True and params["method"] == "evidence" and params["schedule"] == "parallel"
    model.set_params(optimize=False)
    assert model.optimize is False
    assert "EPGPC(" in repr(model)
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(colour="red")
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(learn=None)  # replaced by optimize and method


def test_bad_settings_and_inputs_raise(data, rng):
    X, y = data
    with pytest.raises(ValueError, match="likelihood"):
        EPGPC(likelihood="logistic").fit(X, y)
    with pytest.raises(ValueError, match="method"):
        EPGPC(method="mcmc").fit(X, y)
    with pytest.raises(ValueError, match="optimize"):
        EPGPC(optimize=None).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        EPGPC(optimize=False).fit(X, rng.integers(0, 3, size=30))
    with pytest.raises(NotFittedError, match="not fitted"):
        EPGPC().predict_proba(X)
    with pytest.raises(ValueError, match="kernel"):
        EPGPC(kernel="rbf", optimize=False).fit(X, y)
    model = EPGPC(optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        model.predict_proba(X[:, :1])


def test_seeded_fits_are_reproducible(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # eight iterations on purpose
        a = EPGPC(likelihood="label_noise", method="evidence", epsilon=0.05, max_iter=8).fit(X, y)
        b = EPGPC(likelihood="label_noise", method="evidence", epsilon=0.05, max_iter=8).fit(X, y)
        c = EPGPC(likelihood="label_noise", method="evidence", epsilon=0.05, max_iter=8, n_restarts=1, rng=5).fit(X, y)
        d = EPGPC(likelihood="label_noise", method="evidence", epsilon=0.05, max_iter=8, n_restarts=1, rng=5).fit(X, y)
    assert np.array_equal(a.kernel_.theta, b.kernel_.theta) and a.epsilon_ == b.epsilon_
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert np.array_equal(c.kernel_.theta, d.kernel_.theta) and c.epsilon_ == d.epsilon_
    assert c.hyperparameter_fit_.optimization.values.shape == (2,)
