import numpy as np
import pytest

from gpc_ref import validation as v


def test_check_matrix():
    np.testing.assert_array_equal(v.check_matrix([1.0, 2.0]), [[1.0], [2.0]])
    with pytest.raises(ValueError, match="X contains NaN"):
        v.check_matrix([[np.nan]])
    with pytest.raises(ValueError, match="2-D"):
        v.check_matrix(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="at least one point"):
        v.check_matrix(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="3 feature"):
        v.check_matrix(np.zeros((2, 2)), n_features=3)
    with pytest.raises(ValueError, match="numeric"):
        v.check_matrix([["a"]])


def test_binary_labels_both_codings():
    np.testing.assert_array_equal(v.check_binary_labels([0, 1, 1]), [-1, 1, 1])
    np.testing.assert_array_equal(v.check_binary_labels([-1, 1], coding="01"), [0, 1])
    with pytest.raises(ValueError, match="labels in"):
        v.check_binary_labels([0, 2])


def test_class_labels():
    classes, codes = v.check_class_labels(np.array(["b", "a", "b"]))
    assert classes.tolist() == ["a", "b"] and codes.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="at least 2 classes"):
        v.check_class_labels(np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="outside the declared"):
        v.check_class_labels(np.array([1, 4]), classes=[1, 2, 3])
    classes, codes = v.check_class_labels(np.array([3, 1]), classes=[1, 2, 3], min_classes=1)
    assert codes.tolist() == [2, 0]


def test_rng():
    assert isinstance(v.check_rng(3), np.random.Generator)
    generator = np.random.default_rng(1)
    assert v.check_rng(generator) is generator
    for bad in (None, 1.5, True, "seed"):
        with pytest.raises(ValueError, match="rng"):
            v.check_rng(bad)


def test_positive():
    assert v.check_positive(0.0, "x", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="x must be positive"):
        v.check_positive(0.0, "x")
    with pytest.raises(ValueError, match="finite"):
        v.check_positive(np.inf, "x")
