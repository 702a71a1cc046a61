"""Tests of the LaplaceGPC estimator (gpc_ref.classifiers)."""
import numpy as np
import pytest

from gpc_ref.classifiers import LaplaceGPC
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import laplace_mode, laplace_predict_latent, laplace_predict_proba


def make_data(rng, n=40, labels=("no", "yes")):
    X = rng.normal(size=(n, 2))
    codes = (X[:, 0] + 0.4 * rng.normal(size=n) > 0).astype(int)
    return X, np.asarray(labels)[codes]


def test_parameters_round_trip():
    model = LaplaceGPC(optimize=False, n_restarts=1)
    params = model.get_params()
    assert params["optimize"] is False and params["n_restarts"] == 1 and params["kernel"] is None
    assert model.set_params(prediction="mackay") is model and model.prediction == "mackay"
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(bogus=1)
    assert "LaplaceGPC(" in repr(model)


def test_scikit_learn_clone_and_manual_cross_validation(rng):
    base = pytest.importorskip("sklearn.base")
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y = make_data(rng, n=30)
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False)
    clone = base.clone(model)
    assert clone.get_params()["kernel"] is not model.kernel and not hasattr(clone, "classes_")
    np.testing.assert_array_equal(clone.get_params()["kernel"].theta, model.kernel.theta)
    scores = [base.clone(model).fit(X[train], y[train]).score(X[test], y[test])
              for train, test in model_selection.StratifiedKFold(3).split(X, y)]
    assert np.all((np.array(scores) >= 0) & (np.array(scores) <= 1))


def test_string_labels_and_class_order(rng):
    X, y = make_data(rng, labels=("zebra", "aardvark"))
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False).fit(X, y)
    np.testing.assert_array_equal(model.classes_, ["aardvark", "zebra"])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # column 1 is classes_[1] = "zebra", the paper's class +1
    y_pm1 = np.where(y == "zebra", 1.0, -1.0)
    mode = laplace_mode(model.kernel_.K(X), y_pm1)
    mean, var = laplace_predict_latent(mode, model.kernel_, X, X)
    np.testing.assert_allclose(proba[:, 1], laplace_predict_proba(mean, var), rtol=1e-12)
    assert set(model.predict(X)) <= {"aardvark", "zebra"}
    assert model.score(X, y) > 0.8
    np.testing.assert_allclose(model.log_evidence_, mode.log_evidence)


def test_fixed_kernel_is_kept_and_optimised_kernel_improves_the_posterior(rng):
    X, y = make_data(rng)
    kernel = SEKernel(variance=1.0, lengthscale=np.e)
    fixed = LaplaceGPC(kernel=kernel, optimize=False).fit(X, y)
    assert fixed.kernel_ is kernel and fixed.map_ is None
    fitted = LaplaceGPC(kernel=kernel, n_restarts=1, rng=1).fit(X, y)
    assert fitted.map_.log_posterior >= fitted.map_.log_posteriors.min()
    again = LaplaceGPC(kernel=kernel, n_restarts=1, rng=1).fit(X, y)
    np.testing.assert_array_equal(fitted.kernel_.theta, again.kernel_.theta)
    assert fitted.kernel is kernel  # the constructor argument is never modified


@pytest.mark.parametrize("prediction", ["erf_mixture", "mackay", "quadrature"])
def test_prediction_methods_agree_closely(rng, prediction):
    X, y = make_data(rng)
    reference = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False, prediction="exact").fit(X, y)
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False, prediction=prediction).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=2e-2)


def test_predict_latent(rng):
    X, y = make_data(rng)
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False).fit(X, y)
    mean, var = model.predict_latent(X[:5])
    assert mean.shape == var.shape == (5,) and np.all(var >= 0)


def test_multiclass_is_one_coupled_softmax_model(rng):
    X = rng.normal(size=(45, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (45, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-8)
    np.testing.assert_array_equal(model.classes_, ["a", "b", "c"])
    assert model.score(X, y) > 0.8
    assert np.isfinite(model.log_evidence_)
    with pytest.raises(ValueError, match="two classes"):
        LaplaceGPC(optimize=False, hmc=True).fit(X, y)


def test_hmc_averages_predictions(rng):
    X, y = make_data(rng, n=25)
    model = LaplaceGPC(kernel=SEKernel(variance=2.0, lengthscale=np.e), optimize=False, hmc=True,
                       hmc_options=dict(n_iter=6, n_leapfrog=3), rng=2).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.hmc_ is not None and len(model.hmc_.thetas) > 0
    same = LaplaceGPC(kernel=SEKernel(variance=2.0, lengthscale=np.e), optimize=False, hmc=True,
                      hmc_options=dict(n_iter=6, n_leapfrog=3), rng=2).fit(X, y)
    np.testing.assert_array_equal(proba, same.predict_proba(X))


def test_bad_input_raises(rng):
    X, y = make_data(rng)
    model = LaplaceGPC(optimize=False)
    with pytest.raises(ValueError, match="not fitted"):
        model.predict_proba(X)
    with pytest.raises(ValueError):
        model.fit(X, np.full(len(y), "yes"))  # one class only
    with pytest.raises(ValueError):
        model.fit(X[:5], y)  # length mismatch
    with pytest.raises(ValueError):
        model.fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(ValueError, match="prediction"):
        LaplaceGPC(prediction="probit").fit(X, y)
    with pytest.raises(ValueError, match="SEKernel"):
        LaplaceGPC(kernel="rbf").fit(X, y)
    with pytest.raises(ValueError, match="rng"):
        LaplaceGPC(rng=None).fit(X, y)
    fitted = model.fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        fitted.predict_proba(np.zeros((2, 3)))
