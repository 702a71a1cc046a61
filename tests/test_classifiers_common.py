"""Every estimator honours the shared scikit-learn-style interface.

The method-specific behaviour is tested beside each method; here the same
small checks run over all six estimators: parameters round-trip, clones are
independent, any two label values work, probabilities are well formed, and
scikit-learn's model-selection tools accept the estimators.
"""
import numpy as np
import pytest

from gpc_ref import SEKernel
from gpc_ref import classifiers as c

FAST = {
    "LaplaceGPC": lambda: c.LaplaceGPC(kernel=SEKernel(), optimize=False),
    "VariationalBoundsGPC": lambda: c.VariationalBoundsGPC(kernel=SEKernel(), optimize=False),
    "EPGPC": lambda: c.EPGPC(kernel=SEKernel(), learn=None),
    "VBProbitGPC": lambda: c.VBProbitGPC(kernel=SEKernel()),
    "GibbsProbitGPC": lambda: c.GibbsProbitGPC(kernel=SEKernel(), n_samples=60, burn_in=40),
    "SparseIVM": lambda: c.SparseIVM(kernel=SEKernel(), n_active=12),
}


def _binary_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, "yes", "no")
    return X, y


@pytest.mark.parametrize("name", sorted(FAST))
def test_interface(name):
    sklearn_base = pytest.importorskip("sklearn.base")
    X, y = _binary_data()
    model = FAST[name]()
    params = model.get_params()
    assert model.set_params(**params) is model
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(not_a_parameter=1)
    twin = sklearn_base.clone(model)
    assert twin is not model and twin.get_params().keys() == params.keys()
    with pytest.raises(ValueError, match="not fitted"):
        model.predict_proba(X)
    assert model.fit(X, y) is model
    assert model.classes_.tolist() == ["no", "yes"]
    proba = model.predict_proba(X)
    assert proba.shape == (30, 2) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-8)
    assert set(model.predict(X)) <= {"no", "yes"}
    assert model.score(X, y) > 0.7
    with pytest.raises(ValueError, match="feature"):
        model.predict_proba(np.zeros((2, 3)))
    assert not hasattr(twin, "classes_")


@pytest.mark.parametrize("name", sorted(FAST))
def test_bad_training_input(name):
    X, y = _binary_data()
    with pytest.raises(ValueError, match="NaN"):
        FAST[name]().fit(np.where(np.arange(60).reshape(30, 2) == 3, np.nan, X), y)
    with pytest.raises(ValueError, match="same number"):
        FAST[name]().fit(X, y[:-1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        FAST[name]().fit(X, np.full(30, "yes"))


@pytest.mark.parametrize("name", ["LaplaceGPC", "EPGPC", "VBProbitGPC"])
def test_cross_val_score_accepts_the_estimators(name):
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y = _binary_data()
    scores = model_selection.cross_val_score(FAST[name](), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)
