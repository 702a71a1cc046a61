"""Tests of the VBProbitGPC and GibbsProbitGPC estimators (shared interface, labels, errors)."""
import numpy as np
import pytest

from gpc_ref.classifiers import GibbsProbitGPC, VBProbitGPC
from gpc_ref.kernels import SEKernel


def _data(n=36, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    codes = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])
    labels = np.array(["setosa", "versicolor", "virginica"])[codes]
    return X, labels


def test_vb_estimator_interface_and_labels():
    X, y = _data()
    model = VBProbitGPC(kernel=SEKernel(variance=2.0, lengthscale=0.8), tol=1e-10)
    assert model.fit(X, y) is model
    np.testing.assert_array_equal(model.classes_, ["setosa", "versicolor", "virginica"])
    p = model.predict_proba(X[:7])
    assert p.shape == (7, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert set(model.predict(X)) <= set(model.classes_)
    assert model.score(X, y) > 0.8
    assert np.all(np.diff(model.lower_bound_) >= -1e-9 * np.abs(model.lower_bound_[1:]))
    assert model.log_marginal_likelihood_bound_ == model.lower_bound_[-1]
    mean, var = model.predict_latent(X[:4])
    assert mean.shape == var.shape == (4, 3) and np.all(var >= 0)
    assert model.get_params()["tol"] == 1e-10
    assert "VBProbitGPC(kernel=" in repr(model)
    model.set_params(n_nodes=32)
    assert model.n_nodes == 32
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(bogus=1)


def test_vb_two_class_binary_and_multiclass_agree():
    X, y = _data(seed=3)
    y2 = np.where(y == "setosa", "a", "b")
    kernel = SEKernel(variance=2.0, lengthscale=0.8)
    binary = VBProbitGPC(kernel=kernel, tol=1e-14, max_iter=5000).fit(X, y2)
    multi = VBProbitGPC(kernel=kernel, tol=1e-14, max_iter=5000, two_class="multiclass").fit(X, y2)
    assert binary.result_.binary and not multi.result_.binary
    np.testing.assert_allclose(binary.predict_proba(X), multi.predict_proba(X), atol=1e-6)


def test_vb_learns_the_kernel_reproducibly():
    X, y = _data(30)
    kw = dict(kernel=SEKernel(lengthscale=[0.7, 0.7]), learn_kernel=True, n_learning_iter=3, n_importance_samples=15,
              rng=4)
    a = VBProbitGPC(**kw).fit(X, y)
    b = VBProbitGPC(**kw).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.lengthscale, b.kernel_.lengthscale)
    assert a.learning_.phi_history.shape == (4, 1, 2)
    assert len(a.lower_bound_) == 3 + a.result_.n_iter
    per_class = VBProbitGPC(kernel=[SEKernel(), SEKernel(), SEKernel()], learn_kernel=True, n_learning_iter=2,
                            n_importance_samples=5).fit(X, y)
    assert len(per_class.kernel_) == 3
    np.testing.assert_allclose(per_class.predict_proba(X[:3]).sum(axis=1), 1.0, atol=1e-9)


def test_gibbs_estimator_interface():
    X, y = _data(24)
    model = GibbsProbitGPC(kernel=SEKernel(variance=2.0, lengthscale=0.8), n_samples=60, burn_in=30, thin=2,
                           n_predictive_samples=20, rng=1)
    assert model.fit(X, y) is model
    p = model.predict_proba(X[:5])
    assert p.shape == (5, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert model.samples_.m.shape == (60, 24, 3)
    assert model.effective_sample_size_ > 0
    again = GibbsProbitGPC(**model.get_params()).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X[:5]), p)
    binary = GibbsProbitGPC(n_samples=30, burn_in=10).fit(X, y == "setosa")
    assert binary.samples_.binary and binary.predict_proba(X[:3]).shape == (3, 2)
    np.testing.assert_array_equal(binary.classes_, [False, True])


def test_estimators_reject_bad_input():
    X, y = _data(20)
    for model in (VBProbitGPC(), GibbsProbitGPC(n_samples=5, burn_in=0)):
        with pytest.raises(ValueError, match="not fitted"):
            model.predict_proba(X)
        with pytest.raises(ValueError, match="at least 2 classes"):
            model.fit(X, np.full(20, "a"))
        with pytest.raises(ValueError, match="same number of points"):
            model.fit(X, y[:-1])
        with pytest.raises(ValueError, match="NaN"):
            model.fit(np.where(X > 1, np.nan, X), y)
        model.fit(X, y)
        with pytest.raises(ValueError, match="2 feature"):
            model.predict_proba(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="two_class"):
        VBProbitGPC(two_class="ovr").fit(X, y == "setosa")
    with pytest.raises(ValueError, match="list of 3 SEKernels"):
        VBProbitGPC(kernel=[SEKernel(), SEKernel()]).fit(X, y)
    with pytest.raises(ValueError, match="SEKernel"):
        GibbsProbitGPC(kernel="rbf").fit(X, y)
