"""Tests of the SparseIVM estimator (Girolami & Rogers §5)."""

import warnings

import numpy as np
import pytest

from gpc_ref import NotFittedError
from gpc_ref.classifiers import SparseIVM
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import load_digits
from gpc_ref.datasets import load_glass
from gpc_ref.datasets import load_iris
from gpc_ref.datasets import load_penguins
from gpc_ref.datasets import load_wine
from gpc_ref.datasets import make_three_class_toy
from gpc_ref.datasets import stratified_split
from gpc_ref.ivm import BelowClassFrequenciesWarning
from gpc_ref.ivm import ivm_fit
from gpc_ref.ivm import ivm_predict
from gpc_ref.ivm import median_distance_kernel
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
    model = SparseIVM(kernel=KERNEL, n_active=25, selection="predictive", rng=0).fit(X, names[t])
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
    assert params["n_active"] == 7 and params["selection"] == "random" and params["kernel"] is None
    assert SparseIVM().get_params()["n_active"] == 200
    model.set_params(selection="predictive", n_active=9)
    assert model.n_active == 9 and model.selection == "predictive"
    assert "SparseIVM(" in repr(model)
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(bogus=1)


def test_two_classes_work(data):
    X, t, X_test, t_test = data
    keep = t < 2
    model = SparseIVM(kernel=KERNEL, n_active=20, selection="predictive", rng=0).fit(X[keep], t[keep])
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
    paper = dict(n_active=30, selection="predictive", rng=1)
    model = SparseIVM(kernel=start, optimize=True, learning_options=options, **paper).fit(X, t)
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
    again = SparseIVM(kernel=start, optimize=True, learning_options=options, **paper).fit(X, t)
    np.testing.assert_array_equal(again.kernel_.lengthscale, model.kernel_.lengthscale)
    np.testing.assert_array_equal(again.active_set_, model.active_set_)
    # the same as the reference functions in sequence on one random stream: a first IVM pass, the kernel
    # learnt on its active set (G&R §6.3), and the IVM refitted with that kernel
    rng = np.random.default_rng(1)
    likelihood = MultinomialProbitLikelihood(48)
    first = ivm_fit(start, X, t, n_active=30, selection="predictive", rng=rng, likelihood=likelihood, screen=True)
    by_hand = vb_probit_learn_kernel(
        start, X[first.active_set], t[first.active_set], rng=rng, n_classes=3, likelihood=likelihood, **options
    )
    np.testing.assert_array_equal(by_hand.phi_history, learning.phi_history)
    second = ivm_fit(
        by_hand.kernels[0], X, t, n_active=30, selection="predictive", rng=rng, likelihood=likelihood, screen=True
    )
    np.testing.assert_array_equal(second.active_set, model.active_set_)
    # the fixed-kernel default leaves the kernel alone
    fixed = SparseIVM(kernel=start, **paper).fit(X, t)
    assert fixed.hyperparameter_fit_ is None and fixed.kernel_ is start


# --------------------------------------------------------------------------- the defaults against a constant classifier
def unbalanced_four_class(n, seed):
    """A small stand-in for the reviewers' unbalanced set (benchmarks/common.py, ``unbalanced_multiclass``).

    Four classes with shares .31/.06/.12/.51; each a unit Gaussian cluster around a vertex of the cube
    {-1, 1}^4 in four informative inputs, plus two noise inputs; 1% of the labels redrawn at random (as
    scikit-learn's ``make_classification`` does); inputs standardised.
    """
    rng = np.random.default_rng(seed)
    centres = np.array([[1, 1, 1, -1], [-1, 1, -1, 1], [1, -1, -1, -1], [-1, -1, 1, 1]], dtype=float)
    t = rng.choice(4, size=n, p=[0.31, 0.06, 0.12, 0.51])
    X = np.hstack([centres[t] + rng.normal(size=(n, 4)), rng.normal(size=(n, 2))])
    flip = rng.random(n) < 0.01
    t[flip] = rng.integers(0, 4, flip.sum())
    return Standardizer().fit_transform(X), t


def scores_against_class_frequencies(model, X, t, X_test, t_test):
    """(error, log loss) of the fitted model and of predicting the training class frequencies, on the test set."""
    shares = np.bincount(t, minlength=model.classes_.size) / len(t)
    P = model.predict_proba(X_test)
    rows = np.arange(len(t_test))
    return (
        (np.mean(model.classes_[P.argmax(axis=1)] != t_test), -np.mean(np.log(P[rows, t_test]))),
        (np.mean(shares.argmax() != t_test), -np.mean(np.log(shares[t_test]))),
    )


@pytest.mark.parametrize("n", [300, 1000])
def test_defaults_beat_the_class_frequencies_on_unbalanced_classes(n):
    X, t = unbalanced_four_class(2 * n, seed=n)
    train, test = stratified_split(t, 0.5, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BelowClassFrequenciesWarning)
        model = SparseIVM().fit(X[train], t[train])
    (error, log_loss), (constant_error, constant_log_loss) = scores_against_class_frequencies(
        model, X[train], t[train], X[test], t[test]
    )
    assert error < 0.8 * constant_error and log_loss < 0.8 * constant_log_loss
    assert model.training_log_predictive_ > model.class_frequency_log_predictive_
    # the defaults: 200 random points, the median-distance kernel of the training inputs
    assert model.active_set_.size == 200 and model.posterior_.selection == "random"
    assert model.kernel_.lengthscale == median_distance_kernel(X[train]).lengthscale and model.kernel_.variance == 10


@pytest.mark.parametrize("loader", [load_iris, load_wine, load_glass, load_penguins, load_digits])
def test_defaults_beat_the_class_frequencies_on_the_books_data_sets(loader):
    data = loader()
    codes = np.searchsorted(data.classes, data.y)
    train, test = stratified_split(codes, 0.5, 0)
    scaler = Standardizer().fit(data.X[train])
    X, X_test = scaler.transform(data.X[train]), scaler.transform(data.X[test])
    with warnings.catch_warnings():
        warnings.simplefilter("error", BelowClassFrequenciesWarning)
        model = SparseIVM().fit(X, codes[train])
    (error, log_loss), (constant_error, constant_log_loss) = scores_against_class_frequencies(
        model, X, codes[train], X_test, codes[test]
    )
    assert error < 0.7 * constant_error and log_loss < 0.9 * constant_log_loss


def test_a_fit_worse_than_the_class_frequencies_warns():
    X, t = unbalanced_four_class(400, seed=3)
    # a kernel far too narrow for the data: away from the 20 included points every class has probability 1/4,
    # and with unbalanced classes that is worse than predicting the class shares
    narrow = SEKernel(lengthscale=1e-3)
    with pytest.warns(BelowClassFrequenciesWarning, match="class frequencies") as record:
        model = SparseIVM(kernel=narrow, n_active=20).fit(X, t)
    assert record[0].filename == __file__  # the warning points at the caller's fit
    assert model.training_log_predictive_ < model.class_frequency_log_predictive_
    # the baseline is the mean log of the training class shares
    shares = np.bincount(t) / len(t)
    assert model.class_frequency_log_predictive_ == pytest.approx(np.mean(np.log(shares[t])))


def test_the_old_defaults_warn_on_unbalanced_classes():
    """The defaults before issue 19 (unit SE kernel, 50 points, the predictive rule) on the unbalanced set: the
    test log loss is worse than the class frequencies', and the fit says so."""
    X, t = unbalanced_four_class(2000, seed=1000)
    train, test = stratified_split(t, 0.5, 0)
    with pytest.warns(BelowClassFrequenciesWarning):
        model = SparseIVM(kernel=SEKernel(), n_active=50, selection="predictive").fit(X[train], t[train])
    (_, log_loss), (_, constant_log_loss) = scores_against_class_frequencies(
        model, X[train], t[train], X[test], t[test]
    )
    assert log_loss > constant_log_loss
