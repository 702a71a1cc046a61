"""Tests of the SparseIVM estimator (Girolami & Rogers §5)."""
import numpy as np
import pytest

from gpc_ref.classifiers import SparseIVM
from gpc_ref.datasets import make_three_class_toy
from gpc_ref.ivm import ivm_fit, ivm_predict
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import MultinomialProbitLikelihood

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
    fit = ivm_fit(X, t, KERNEL, 15, "entropy", rng=4)
    np.testing.assert_array_equal(model.active_set_, fit.active_set)
    mean, var = ivm_predict(fit, X_test)
    np.testing.assert_allclose(model.predict_proba(X_test), MultinomialProbitLikelihood().predict(mean, var))


def test_one_kernel_per_class(data):
    X, t, X_test, _ = data
    kernels = [KERNEL, KERNEL.with_params(variance=2.0), KERNEL.with_params(lengthscale=np.full(10, 0.6))]
    model = SparseIVM(kernel=kernels, n_active=20, rng=0).fit(X, t)
    assert model.fit_.M.shape == (3, 20, 200)
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
        SparseIVM(n_active=500).fit(X, t)
    with pytest.raises(ValueError, match="n_active"):
        SparseIVM(n_active=0).fit(X, t)
    with pytest.raises(ValueError, match="selection"):
        SparseIVM(selection="best").fit(X, t)
    with pytest.raises(ValueError, match="not fitted"):
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
