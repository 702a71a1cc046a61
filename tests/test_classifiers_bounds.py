"""Tests of the VariationalBoundsGPC estimator (Gibbs & MacKay chapter)."""
import numpy as np
import pytest

from gpc_ref.classifiers import VariationalBoundsGPC
from gpc_ref.kernels import SEKernel
from gpc_ref.variational_bounds import optimize_lower_bound, optimize_upper_bound


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
    assert model.log_Z_lower_ <= model.log_Z_upper_


def test_lower_and_upper_predictions(rng):
    X, y = two_blobs(rng)
    kernel = SEKernel(variance=3.0, lengthscale=1.5)
    lower = VariationalBoundsGPC(kernel=kernel, bound="lower", optimize=False).fit(X, y)
    upper = VariationalBoundsGPC(kernel=kernel, bound="upper", optimize=False).fit(X, y)
    p_lower = lower.predict_proba(X)[:, 1]
    p_upper = upper.predict_proba(X)[:, 1]
    # the upper bound keeps the prior variance, so it is less confident (G&M Fig. 2)
    assert np.mean(np.abs(p_upper - 0.5)) < np.mean(np.abs(p_lower - 0.5))
    assert lower.log_Z_lower_ == upper.log_Z_lower_


def test_estimator_wraps_the_reference_functions(rng):
    X, y = two_blobs(rng, n=20)
    t = (y == "yes").astype(int)
    kernel = SEKernel(lengthscale=1.2)
    model = VariationalBoundsGPC(kernel=kernel).fit(X, y)
    fit = optimize_lower_bound(X, t, kernel)
    assert model.log_Z_lower_ == pytest.approx(fit.bound.log_Z)
    assert model.log_Z_upper_ == pytest.approx(optimize_upper_bound(fit.kernel.K(X), t).bound.log_Z)


def test_params_and_repr():
    model = VariationalBoundsGPC(bound="upper", n_restarts=2)
    params = model.get_params()
    assert params["bound"] == "upper" and params["n_restarts"] == 2 and params["optimize"] is True
    model.set_params(bound="lower")
    assert model.bound == "lower"
    assert "VariationalBoundsGPC(" in repr(model)
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(colour="red")


def test_restarts_reproducible(rng):
    X, y = two_blobs(rng, n=20)
    a = VariationalBoundsGPC(n_restarts=2, rng=3).fit(X, y)
    b = VariationalBoundsGPC(n_restarts=2, rng=3).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_bad_inputs(rng):
    X, y = two_blobs(rng, n=10)
    with pytest.raises(ValueError, match="bound"):
        VariationalBoundsGPC(bound="middle").fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        VariationalBoundsGPC().fit(X, np.arange(10) % 3)
    with pytest.raises(ValueError, match="not fitted"):
        VariationalBoundsGPC().predict_proba(X)
    with pytest.raises(ValueError, match="kernel"):
        VariationalBoundsGPC(kernel="rbf").fit(X, y)
    model = VariationalBoundsGPC(optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        model.predict_proba(np.zeros((2, 3)))
