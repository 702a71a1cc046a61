"""Tests of the SparseIVM estimator (Girolami & Rogers §5)."""

import numpy as np
import pytest

from gpc_ref import NotFittedError
from gpc_ref.classifiers import SparseIVM
from gpc_ref.datasets import make_three_class_toy
from gpc_ref.ivm import ivm_fit
from gpc_ref.ivm import ivm_predict
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.vb_probit_learning import KernelLearning
from gpc_ref.vb_probit_learning import precisions_from_kernel
from gpc_ref.vb_probit_learning import vb_probit_learn_kernel

KERNEL = SEKernel(lengthscale=np.r_[0.35, 0.35, np.full(8, 1e3)])


@pytest.fixture
def data():
    X, t = make_three_class_toy(np.random.default_rng(0), 200)
    X_test, t_test = make_three_class_toy(np.random.default_rng(1), 300)
    return X, t, X_test, t_test


def test_fit_predict_with_any_labels(data):
    X, t, X_test, t_test = data
    names = np.array(["inner", "outer", "centre"])
    model = SparseIVM(kernel=KERNEL, n_active=25, rng=0).fit(X, names[t])
    assert model.fit(X, names[t]) is model
    assert list(model.classes_) == sorted(names)
    proba = model.predict_proba(X_test)
    assert proba.shape == (300, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-8)
    assert model.active_set_.shape == (25,) and len(set(model.active_set_)) == 25
    assert model.score(X_test, names[t_test]) > 0.9
    assert set(model.predict(X_test)) <= set(names)


def test_estimator_wraps_the_reference_functions(data):
    X, t, X_test, _ = data
    model = SparseIVM(kernel=KERNEL, n_active=15, selection="entropy", rng=4).fit(X, t)
    fit = ivm_fit(KERNEL, X, t, n_active=15, selection="entropy", rng=4)
    np.testing.assert_array_equal(model.active_set_, fit.active_set)
    mean, var = ivm_predict(fit, X_test)
    np.testing.assert_allclose(model.predict_proba(X_test), MultinomialProbitLikelihood().predict(mean, var))
    # predict_latent: the per-class means and diagonal covariances (the C posteriors are independent)
    latent_mean, latent_cov = model.predict_latent(X_test)
    assert latent_mean.shape == (300, 3) and latent_cov.shape == (300, 3, 3)
    np.testing.assert_allclose(latent_mean, mean)
    np.testing.assert_allclose(np.diagonal(latent_cov, axis1=1, axis2=2), var)
    np.testing.assert_array_equal(latent_cov, np.diagonal(latent_cov, axis1=1, axis2=2)[:, :, None] * np.eye(3))
    assert model.log_marginal_likelihood_ == pytest.approx(np.sum(fit.log_target_probability))
    assert model.hyperparameter_fit_ is None and model.kernel_ is KERNEL


def test_one_kernel_per_class(data):
    X, t, X_test, _ = data
    kernels = [KERNEL, KERNEL.with_params(variance=2.0), KERNEL.with_params(lengthscale=np.full(10, 0.6))]
    model = SparseIVM(kernel=kernels, n_active=20, rng=0).fit(X, t)
    assert model.posterior_.M.shape == (3, 20, 200)
    assert model.predict_proba(X_test).shape == (300, 3)


@pytest.mark.parametrize("selection", ["predictive", "entropy", "random"])
def test_every_selection_rule_is_reproducible(data, selection):
    X, t, X_test, _ = data
    a = SparseIVM(kernel=KERNEL, n_active=10, selection=selection, rng=3).fit(X, t)
    b = SparseIVM(kernel=KERNEL, n_active=10, selection=selection, rng=3).fit(X, t)
    np.testing.assert_array_equal(a.active_set_, b.active_set_)
    np.testing.assert_array_equal(a.predict_proba(X_test), b.predict_proba(X_test))


def test_params_protocol():
    model = SparseIVM(n_active=7)
    params = model.get_params()
    assert params["n_active"] == 7 and params["selection"] == "predictive"
    model.set_params(selection="random", n_active=9)
    assert model.n_active == 9 and model.selection == "random"
    assert "SparseIVM(" in repr(model)
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(bogus=1)


def test_two_classes_work(data):
    X, t, X_test, t_test = data
    keep = t < 2
    model = SparseIVM(kernel=KERNEL, n_active=20, rng=0).fit(X[keep], t[keep])
    assert model.predict_proba(X_test).shape == (300, 2)
    assert model.score(X_test[t_test < 2], t_test[t_test < 2]) > 0.85


def test_bad_inputs(data):
    X, t, _, _ = data
    with pytest.raises(ValueError, match="n_active"):
        SparseIVM(n_active=0).fit(X, t)
    with pytest.raises(ValueError, match="n_active"):
        SparseIVM(n_active=2.5).fit(X, t)
    with pytest.raises(ValueError, match="selection"):
        SparseIVM(selection="best").fit(X, t)
    with pytest.raises(NotFittedError, match="not fitted"):
        SparseIVM().predict_proba(X)
    with pytest.raises(ValueError, match="classes"):
        SparseIVM().fit(X, np.zeros(200))
    with pytest.raises(ValueError, match="kernel"):
        SparseIVM(kernel="rbf").fit(X, t)
    with pytest.raises(ValueError, match="kernel"):
        SparseIVM(kernel=[KERNEL, KERNEL]).fit(X, t)
    model = SparseIVM(kernel=KERNEL, n_active=5).fit(X, t)
    with pytest.raises(ValueError, match="feature"):
        model.predict_proba(X[:, :4])


def test_n_active_of_at_least_n_includes_every_point_and_equals_the_full_model(data):
    """n_active >= n includes all n points: the same fit as n_active = n, whose posterior is the full
    (dense) GP posterior given the ADF site targets: Σ = C (I + C)⁻¹, m̃ = Σ ỹ (G&R eq 4.1)."""
    X, t, X_test, _ = data
    X, t = X[:60], t[:60]
    kernel = SEKernel(lengthscale=np.r_[0.35, 0.35, np.full(8, 1e3)], jitter=1e-8)
    full = SparseIVM(kernel=kernel, n_active=60, rng=2).fit(X, t)
    more = SparseIVM(kernel=kernel, n_active=500, rng=2).fit(X, t)
    assert sorted(more.active_set_) == list(range(60))
    np.testing.assert_array_equal(more.active_set_, full.active_set_)
    np.testing.assert_array_equal(more.predict_proba(X_test), full.predict_proba(X_test))
    assert more.log_marginal_likelihood_ == full.log_marginal_likelihood_
    assert more.n_active == 500  # the parameter is kept as given
    fit = more.posterior_
    targets = np.empty((60, 3))
    targets[fit.active_set] = fit.targets
    C = kernel.K(X)
    sigma = C - C @ np.linalg.solve(np.eye(60) + C, C)
    np.testing.assert_allclose(fit.mean, sigma @ targets, atol=1e-9)
    np.testing.assert_allclose(fit.var, np.repeat(np.diag(sigma)[:, None], 3, axis=1), atol=1e-9)
    # and at new inputs: dense GP regression with unit noise on every site target
    mean, cov = more.predict_latent(X_test)
    cross = kernel.K(X, X_test)
    np.testing.assert_allclose(mean, cross.T @ np.linalg.solve(np.eye(60) + C, targets), atol=1e-9)
    dense_var = kernel.diag(X_test) - np.sum(cross * np.linalg.solve(np.eye(60) + C, cross), axis=0)
    np.testing.assert_allclose(np.diagonal(cov, axis1=1, axis2=2), np.repeat(dense_var[:, None], 3, axis=1), atol=1e-9)


def test_optimize_learns_the_kernel_by_vb_importance_sampling(data):
    X, t, X_test, t_test = data
    start = SEKernel(lengthscale=np.full(10, 1.0))
    options = dict(n_iter=4, n_importance_samples=40)
    model = SparseIVM(kernel=start, optimize=True, learning_options=options, n_active=30, rng=1).fit(X, t)
    learning = model.hyperparameter_fit_
    assert isinstance(learning, KernelLearning)
    assert learning.phi_history.shape == (5, 1, 10)
    np.testing.assert_allclose(learning.phi_history[0, 0], precisions_from_kernel(start))
    # the refitted IVM uses the learnt kernel (the variance is kept, the precisions are the last ones)
    assert model.kernel_ is learning.kernels[0] and model.posterior_.kernels[0] is model.kernel_
    np.testing.assert_allclose(precisions_from_kernel(model.kernel_), learning.phi_history[-1, 0])
    assert model.kernel_.variance == start.variance
    assert not np.allclose(model.kernel_.lengthscale, start.lengthscale)
    assert model.active_set_.shape == (30,)
    np.testing.assert_allclose(model.predict_proba(X_test).sum(axis=1), 1.0, atol=1e-8)
    again = SparseIVM(kernel=start, optimize=True, learning_options=options, n_active=30, rng=1).fit(X, t)
    np.testing.assert_array_equal(again.kernel_.lengthscale, model.kernel_.lengthscale)
    np.testing.assert_array_equal(again.active_set_, model.active_set_)
    # the same as the reference functions in sequence on one random stream: a first IVM pass, the kernel
    # learnt on its active set (G&R §6.3), and the IVM refitted with that kernel
    rng = np.random.default_rng(1)
    likelihood = MultinomialProbitLikelihood(48)
    first = ivm_fit(start, X, t, n_active=30, rng=rng, likelihood=likelihood, screen=True)
    by_hand = vb_probit_learn_kernel(
        start, X[first.active_set], t[first.active_set], rng=rng, n_classes=3, likelihood=likelihood, **options
    )
    np.testing.assert_array_equal(by_hand.phi_history, learning.phi_history)
    second = ivm_fit(by_hand.kernels[0], X, t, n_active=30, rng=rng, likelihood=likelihood, screen=True)
    np.testing.assert_array_equal(second.active_set, model.active_set_)
    # the fixed-kernel default leaves the kernel alone
    fixed = SparseIVM(kernel=start, n_active=30, rng=1).fit(X, t)
    assert fixed.hyperparameter_fit_ is None and fixed.kernel_ is start
