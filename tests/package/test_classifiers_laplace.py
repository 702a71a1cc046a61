"""Tests of the LaplaceGPC estimator (gpc_ref.classifiers)."""

import warnings

import numpy as np
import pytest
from scipy.stats import norm

from gpc_ref import ConvergenceWarning
from gpc_ref import HyperparameterBoundWarning
from gpc_ref import LaplaceGPC
from gpc_ref import NotFittedError
from gpc_ref.hmc import LaplaceHMCResult
from gpc_ref.hmc import laplace_hmc_predict
from gpc_ref.hyperpriors import log_hyperprior
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import LaplaceMode
from gpc_ref.laplace import MAPResult
from gpc_ref.laplace import laplace_evidence
from gpc_ref.laplace import laplace_mode
from gpc_ref.laplace import laplace_predict_latent
from gpc_ref.laplace import laplace_predict_proba
from gpc_ref.laplace import map_hyperparameters
from gpc_ref.laplace_multiclass import SoftmaxLaplaceFit
from gpc_ref.laplace_multiclass import SoftmaxLaplaceMode
from gpc_ref.laplace_multiclass import one_hot_labels
from gpc_ref.laplace_multiclass import softmax_laplace_evidence
from gpc_ref.likelihoods import ProbitLikelihood


def make_data(rng, n=40, labels=("no", "yes")):
    X = rng.normal(size=(n, 2))
    codes = (X[:, 0] + 0.4 * rng.normal(size=n) > 0).astype(int)
    return X, np.asarray(labels)[codes]


def test_parameters_round_trip():
    model = LaplaceGPC(optimize=False, n_restarts=1)
    params = model.get_params()
    assert params["optimize"] is False and params["n_restarts"] == 1 and params["kernel"] is None
    assert params["method"] == "map" and params["likelihood"] == "logistic" and params["prior"] == "wb"
    assert params["rng"] == 0 and params["progress"] is False
    with pytest.raises(TypeError):
        LaplaceGPC(None, False, 0, False, "hmc")  # method-specific options are keyword-only
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
    scores = [
        base.clone(model).fit(X[train], y[train]).score(X[test], y[test])
        for train, test in model_selection.StratifiedKFold(3).split(X, y)
    ]
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
    np.testing.assert_allclose(model.log_marginal_likelihood_, mode.log_evidence)
    assert isinstance(model.posterior_, LaplaceMode)
    np.testing.assert_allclose(model.posterior_.f, mode.f)


def test_fixed_kernel_is_kept_and_optimised_kernel_improves_the_posterior(rng):
    X, y = make_data(rng)
    kernel = SEKernel(variance=1.0, lengthscale=np.e)
    fixed = LaplaceGPC(kernel=kernel, optimize=False).fit(X, y)
    assert fixed.kernel_ is kernel and fixed.hyperparameter_fit_ is None and fixed.hmc_ is None
    fitted = LaplaceGPC(kernel=kernel, n_restarts=1, rng=1).fit(X, y)
    assert isinstance(fitted.hyperparameter_fit_, MAPResult)
    assert fitted.hyperparameter_fit_.log_posterior >= fitted.hyperparameter_fit_.optimization.values.min()
    again = LaplaceGPC(kernel=kernel, n_restarts=1, rng=1).fit(X, y)
    np.testing.assert_array_equal(fitted.kernel_.theta, again.kernel_.theta)
    assert fitted.kernel is kernel  # the constructor argument is never modified
    # the estimator's fit is map_hyperparameters with the same options and random stream
    y_pm1 = np.where(y == fitted.classes_[1], 1.0, -1.0)
    direct = map_hyperparameters(kernel, X, y_pm1, n_restarts=1, rng=1)
    np.testing.assert_allclose(fitted.kernel_.theta, direct.theta)
    np.testing.assert_allclose(fitted.log_marginal_likelihood_, direct.log_evidence, rtol=1e-10)
    assert fitted.hyperparameter_fit_.log_posterior > fixed.log_marginal_likelihood_ + log_hyperprior(kernel)[0]


def test_prior_none_is_ml_ii(rng):
    X, y = make_data(rng)
    kernel = SEKernel(variance=1.0, lengthscale=np.e)
    model = LaplaceGPC(kernel=kernel, prior=None, n_restarts=1, rng=2).fit(X, y)
    y_pm1 = np.where(y == model.classes_[1], 1.0, -1.0)
    direct = map_hyperparameters(kernel, X, y_pm1, prior=None, n_restarts=1, rng=2)
    np.testing.assert_allclose(model.kernel_.theta, direct.theta)
    assert model.hyperparameter_fit_.log_prior == 0.0
    # at the ML-II point the evidence is stationary, and at least as high as at the MAP point
    np.testing.assert_allclose(laplace_evidence(model.kernel_, X, y_pm1).gradient, 0.0, atol=1e-3)
    with_prior = LaplaceGPC(kernel=kernel, n_restarts=1, rng=2).fit(X, y)
    assert model.log_marginal_likelihood_ >= with_prior.log_marginal_likelihood_ - 1e-8


def test_probit_likelihood(rng):
    X, y = make_data(rng)
    kernel = SEKernel(variance=4.0)
    model = LaplaceGPC(kernel=kernel, optimize=False, likelihood="probit").fit(X, y)
    y_pm1 = np.where(y == model.classes_[1], 1.0, -1.0)
    mode = laplace_mode(kernel.K(X), y_pm1, likelihood=ProbitLikelihood())
    np.testing.assert_allclose(model.posterior_.f, mode.f, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.log_marginal_likelihood_, mode.log_evidence)
    mean, var = model.predict_latent(X[:7])
    np.testing.assert_allclose((mean, var), laplace_predict_latent(mode, kernel, X, X[:7]))
    # the probit integral is exact: P(y = +1) = Φ(μ/√(1 + s²)), whatever `prediction` says
    proba = model.predict_proba(X[:7])
    np.testing.assert_allclose(proba[:, 1], norm.cdf(mean / np.sqrt(1.0 + var)), rtol=1e-12)
    mackay = LaplaceGPC(kernel=kernel, optimize=False, likelihood="probit", prediction="mackay").fit(X, y)
    np.testing.assert_allclose(mackay.predict_proba(X[:7]), proba, rtol=1e-12)
    # a different model from the logistic one
    logistic = LaplaceGPC(kernel=kernel, optimize=False).fit(X, y)
    assert not np.allclose(logistic.predict_proba(X[:7]), proba, atol=1e-3)
    # learnt hyperparameters use the probit evidence
    fitted = LaplaceGPC(kernel=kernel, likelihood="probit", n_restarts=0).fit(X, y)
    direct = map_hyperparameters(kernel, X, y_pm1, likelihood=ProbitLikelihood(), n_restarts=0, rng=0)
    np.testing.assert_allclose(fitted.kernel_.theta, direct.theta)
    assert model.score(X, y) > 0.8


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
    np.testing.assert_allclose((mean, var), laplace_predict_latent(model.posterior_, model.kernel_, X, X[:5]))


def test_multiclass_is_one_coupled_softmax_model(rng):
    X = rng.normal(size=(45, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    model = LaplaceGPC(kernel=SEKernel(variance=4.0), optimize=False).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (45, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-8)
    np.testing.assert_array_equal(model.classes_, ["a", "b", "c"])
    assert model.score(X, y) > 0.8
    assert np.isfinite(model.log_marginal_likelihood_)
    assert isinstance(model.posterior_, SoftmaxLaplaceMode) and model.hyperparameter_fit_ is None
    mean, cov = model.predict_latent(X[:4])
    assert mean.shape == (4, 3) and cov.shape == (4, 3, 3)
    with pytest.raises(ValueError, match="two classes"):
        LaplaceGPC(optimize=True, method="hmc").fit(X, y)
    with pytest.raises(ValueError, match="softmax"):
        LaplaceGPC(optimize=False, likelihood="probit").fit(X, y)
    with pytest.raises(ValueError, match="needs optimize=True"):
        LaplaceGPC(optimize=False, method="hmc").fit(X, y)
    fitted = LaplaceGPC(kernel=SEKernel(variance=4.0), n_restarts=0).fit(X, y)
    assert isinstance(fitted.hyperparameter_fit_, SoftmaxLaplaceFit) and fitted.hyperparameter_fit_.converged
    assert fitted.hyperparameter_fit_.objective >= (
        model.log_marginal_likelihood_ + log_hyperprior(SEKernel(variance=4.0))[0]
    )


def test_an_irrelevant_input_switched_off_by_ml_ii_warns_and_is_named():
    # the label depends on the first input only; ML-II drives the other two lengthscales to the top of the box
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=80) > 0, 1, -1)
    with pytest.warns(HyperparameterBoundWarning) as record:
        model = LaplaceGPC(kernel=SEKernel(lengthscale=[1.0, 1.0, 1.0]), prior=None, n_restarts=0).fit(X, y)
    message = str(record[0].message)
    assert "log_lengthscale[1], log_lengthscale[2] at the upper edge, 10 (lengthscale 2.2e+04)" in message
    assert "switches its input off" in message and "log_lengthscale[0]" not in message
    search = model.hyperparameter_fit_.optimization
    np.testing.assert_array_equal(search.at_bound, [False, False, True, True])
    assert model.hyperparameter_fit_.converged  # converged in the box; the warning says where
    assert model.kernel_.lengthscale[0] < 10.0
    # W&B's hyperprior keeps every lengthscale inside the box: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with_prior = LaplaceGPC(kernel=SEKernel(lengthscale=[1.0, 1.0, 1.0]), n_restarts=0).fit(X, y)
    assert not with_prior.hyperparameter_fit_.optimization.at_bound.any()


def test_the_fitted_posterior_is_the_search_evaluation_at_the_learnt_kernel(rng):
    # the search's own (warm-started, converged) evaluation is kept; a cold evaluation gives the same numbers
    X, y = make_data(rng)
    model = LaplaceGPC(kernel=SEKernel(variance=1.0, lengthscale=np.e), n_restarts=0).fit(X, y)
    assert model.posterior_ is model.hyperparameter_fit_.mode
    cold = laplace_evidence(model.kernel_, X, model.y_train_)
    assert model.log_marginal_likelihood_ == pytest.approx(cold.log_evidence, abs=1e-8)
    np.testing.assert_allclose(model.posterior_.f, cold.mode.f, atol=1e-6)
    X3 = rng.normal(size=(45, 2))
    y3 = np.digitize(X3[:, 0], [-0.5, 0.5])
    multi = LaplaceGPC(kernel=SEKernel(variance=4.0), n_restarts=0).fit(X3, y3)
    assert multi.posterior_ is multi.hyperparameter_fit_.mode
    cold = softmax_laplace_evidence(multi.kernel_, X3, one_hot_labels(y3, 3))
    assert multi.log_marginal_likelihood_ == pytest.approx(cold.log_evidence, abs=1e-8)


def test_hmc_averages_predictions(rng):
    X, y = make_data(rng, n=25)
    options = dict(method="hmc", n_restarts=0, hmc_options=dict(n_iter=6, n_leapfrog=3), rng=2)
    model = LaplaceGPC(kernel=SEKernel(variance=2.0, lengthscale=np.e), **options).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert isinstance(model.hmc_, LaplaceHMCResult) and len(model.hmc_.thetas) > 0
    # the chain starts from the MAP point, which is kernel_
    assert model.hmc_.kernel is model.kernel_
    np.testing.assert_array_equal(model.kernel_.theta, model.hyperparameter_fit_.theta)
    same = LaplaceGPC(kernel=SEKernel(variance=2.0, lengthscale=np.e), **options).fit(X, y)
    np.testing.assert_array_equal(proba, same.predict_proba(X))
    # W&B eq 9: the estimator's probabilities and latent moments are laplace_hmc_predict's
    y_pm1 = np.where(y == model.classes_[1], 1.0, -1.0)
    prediction = laplace_hmc_predict(model.hmc_, X, y_pm1, X)
    np.testing.assert_allclose(proba[:, 1], prediction.proba, rtol=1e-12)
    mean, var = model.predict_latent(X)
    np.testing.assert_allclose(mean, prediction.mean, rtol=1e-12)
    np.testing.assert_allclose(var, prediction.var, rtol=1e-12)


def test_bad_input_raises(rng):
    X, y = make_data(rng)
    model = LaplaceGPC(optimize=False)
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict_proba(X)
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict_latent(X)
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
    with pytest.raises(ValueError, match="likelihood"):
        LaplaceGPC(likelihood="logit").fit(X, y)
    with pytest.raises(ValueError, match="method"):
        LaplaceGPC(method="ep").fit(X, y)
    with pytest.raises(ValueError, match="prior"):
        LaplaceGPC(prior="flat").fit(X, y)
    fitted = model.fit(X, y)
    with pytest.raises(ValueError, match="feature"):
        fitted.predict_proba(np.zeros((2, 3)))
