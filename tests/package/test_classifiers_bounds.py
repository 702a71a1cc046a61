"""Tests of the VariationalBoundsGPC estimator (Gibbs & MacKay chapter)."""

import numpy as np
import pytest

from gpc_ref import NotFittedError
from gpc_ref.classifiers import VariationalBoundsGPC
from gpc_ref.kernels import SEKernel
from gpc_ref.variational_bounds import LowerBound
from gpc_ref.variational_bounds import LowerBoundFit
from gpc_ref.variational_bounds import UpperBound
from gpc_ref.variational_bounds import optimize_lower_bound
from gpc_ref.variational_bounds import optimize_upper_bound


def two_blobs(rng, n=30):
    X = np.vstack([rng.normal(-1.0, 1.0, size=(n // 2, 2)), rng.normal(1.0, 1.0, size=(n - n // 2, 2))])
    y = np.array(["no"] * (n // 2) + ["yes"] * (n - n // 2))
    return X, y


def test_fit_predict_interface_with_string_labels(rng):
    X, y = two_blobs(rng)
    model = VariationalBoundsGPC(kernel=SEKernel(lengthscale=1.5))
    assert model.fit(X, y) is model
    proba = model.predict_proba(X)
    assert proba.shape == (30, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X)) <= {"no", "yes"}
    assert model.score(X, y) > 0.8
    assert list(model.classes_) == ["no", "yes"]
    assert model.n_features_in_ == 2
    log_Z_lower, log_Z_upper = model.log_marginal_likelihood_bounds_
    assert log_Z_lower <= log_Z_upper
    # bound="lower" (the default): the reported evidence is the lower bound, the posterior its Gaussian
    assert model.log_marginal_likelihood_ == log_Z_lower
    assert isinstance(model.posterior_, LowerBound) and isinstance(model.hyperparameter_fit_, LowerBoundFit)


def test_lower_and_upper_predictions(rng):
    X, y = two_blobs(rng)
    kernel = SEKernel(variance=3.0, lengthscale=1.5)
    lower = VariationalBoundsGPC(kernel=kernel, bound="lower", optimize=False).fit(X, y)
    upper = VariationalBoundsGPC(kernel=kernel, bound="upper", optimize=False).fit(X, y)
    p_lower = lower.predict_proba(X)[:, 1]
    p_upper = upper.predict_proba(X)[:, 1]
    # the upper bound keeps the prior variance, so it is less confident (G&M Fig. 2)
    assert np.mean(np.abs(p_upper - 0.5)) < np.mean(np.abs(p_lower - 0.5))
    assert lower.log_marginal_likelihood_bounds_[0] == upper.log_marginal_likelihood_bounds_[0]
    assert lower.log_marginal_likelihood_bounds_ == upper.log_marginal_likelihood_bounds_
    assert upper.log_marginal_likelihood_ == upper.log_marginal_likelihood_bounds_[1]
    assert isinstance(upper.posterior_, UpperBound)
    # the upper-bound posterior keeps the prior variance (corrected G&M eq 28)
    _, var_upper = upper.predict_latent(X[:4])
    np.testing.assert_allclose(var_upper, kernel.diag(X[:4]))


def test_estimator_wraps_the_reference_functions(rng):
    X, y = two_blobs(rng, n=20)
    t = (y == "yes").astype(int)
    kernel = SEKernel(lengthscale=1.2)
    model = VariationalBoundsGPC(kernel=kernel).fit(X, y)
    fit = optimize_lower_bound(kernel, X, t)
    log_Z_lower, log_Z_upper = model.log_marginal_likelihood_bounds_
    assert log_Z_lower == pytest.approx(fit.bound.log_Z)
    assert log_Z_upper == pytest.approx(optimize_upper_bound(fit.kernel.K(X), t).bound.log_Z)
    np.testing.assert_allclose(model.kernel_.theta, fit.kernel.theta)
    assert model.hyperparameter_fit_.objective == pytest.approx(fit.objective)
    assert model.n_iter_ == max(1, fit.n_iterations)


def test_method_chooses_how_nu_is_handled(rng):
    X, y = two_blobs(rng, n=20)
    t = (y == "yes").astype(int)
    kernel = SEKernel(lengthscale=1.2)
    gradient = VariationalBoundsGPC(kernel=kernel, method="gradient").fit(X, y)
    fixed_point = VariationalBoundsGPC(kernel=kernel, method="fixed_point").fit(X, y)
    assert gradient.hyperparameter_fit_.nu_update == "gradient"
    assert fixed_point.hyperparameter_fit_.nu_update == "fixed_point"
    reference = optimize_lower_bound(kernel, X, t, nu_update="fixed_point")
    assert fixed_point.log_marginal_likelihood_ == pytest.approx(reference.bound.log_Z)
    # both routes reach the same maximum of Z'
    assert gradient.log_marginal_likelihood_ == pytest.approx(fixed_point.log_marginal_likelihood_, abs=1e-5)


def test_params_and_repr():
    model = VariationalBoundsGPC(bound="upper", n_restarts=2)
    params = model.get_params()
    assert params["bound"] == "upper" and params["n_restarts"] == 2 and params["optimize"] is True
    assert params["method"] == "gradient"
    model.set_params(bound="lower", method="fixed_point")
    assert model.bound == "lower" and model.method == "fixed_point"
    assert "VariationalBoundsGPC(" in repr(model)
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(colour="red")
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(nu_update="gradient")  # renamed: method
    with pytest.raises(TypeError):
        VariationalBoundsGPC(None, True, 0, False, "gradient")  # method-specific options are keyword-only


def test_restarts_reproducible(rng):
    X, y = two_blobs(rng, n=20)
    a = VariationalBoundsGPC(n_restarts=2, rng=3).fit(X, y)
    b = VariationalBoundsGPC(n_restarts=2, rng=3).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # the restarts are the reference function's, with the estimator's seed
    t = (y == "yes").astype(int)
    fit = optimize_lower_bound(SEKernel(), X, t, n_restarts=2, rng=3)
    np.testing.assert_array_equal(a.kernel_.theta, fit.kernel.theta)
    assert a.hyperparameter_fit_.optimization.values.shape == (3,)


def test_bad_inputs(rng):
    X, y = two_blobs(rng, n=10)
    with pytest.raises(ValueError, match="bound"):
        VariationalBoundsGPC(bound="middle").fit(X, y)
    with pytest.raises(ValueError, match="method"):
        VariationalBoundsGPC(method="em").fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        VariationalBoundsGPC().fit(X, np.arange(10) % 3)
    with pytest.raises(NotFittedError, match="not fitted"):
        VariationalBoundsGPC().predict_proba(X)
    with pytest.raises(ValueError, match="kernel"):
        VariationalBoundsGPC(kernel="rbf").fit(X, y)
    model = VariationalBoundsGPC(optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        model.predict_proba(np.zeros((2, 3)))
