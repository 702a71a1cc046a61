import numpy as np
import pytest

from gpc_ref import validation as v


def test_check_matrix():
    np.testing.assert_array_equal(v.check_matrix([[1.0], [2.0]]), [[1.0], [2.0]])
    # strict: a 1-D array is refused, with the reshape hint, unless allow_vector=True (the kernels)
    with pytest.raises(ValueError, match=r"2-D array .* got shape \(2,\) \(Reshape your data with X.reshape\(-1, 1\)"):
        v.check_matrix([1.0, 2.0])
    np.testing.assert_array_equal(v.check_matrix([1.0, 2.0], allow_vector=True), [[1.0], [2.0]])
    with pytest.raises(ValueError, match="Z must be a 2-D"):
        v.check_matrix(np.float64(3.0), "Z", allow_vector=True)
    with pytest.raises(ValueError, match="0 feature"):
        v.check_matrix(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="Complex data"):
        v.check_matrix(np.ones((2, 2), dtype=complex))
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


def test_class_label_messages():
    # one class: the message names how many there are, which they are, and how many are needed
    with pytest.raises(ValueError, match=r"y has 1 class \(\[1\]\); a classifier needs at least 2 classes"):
        v.check_class_labels(np.array([1, 1, 1]))
    with pytest.raises(ValueError, match=r"labels has 2 class .* at least 3 classes"):
        v.check_class_labels(np.array(["a", "b"]), "labels", min_classes=3)
    # a continuous target is refused; integral floats are labels
    with pytest.raises(ValueError, match="Unknown label type: y holds non-integer floats"):
        v.check_class_labels(np.array([0.5, 1.0, 2.0]))
    assert v.check_class_labels(np.array([0.0, 1.0, 1.0]))[1].tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="Unknown label type: y holds complex"):
        v.check_class_labels(np.array([1j, 2j]))
    with pytest.raises(ValueError, match="NaN"):
        v.check_class_labels(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="y is None"):
        v.check_class_labels(None)
    with pytest.raises(ValueError, match="at least one label"):
        v.check_class_labels(np.array([]))
    with pytest.raises(ValueError, match="1-D array of labels"):
        v.check_class_labels(np.zeros((2, 2)))
    # a column vector (n, 1) is read as n labels
    classes, codes = v.check_class_labels(np.array([["b"], ["a"], ["b"]]))
    assert classes.tolist() == ["a", "b"] and codes.tolist() == [1, 0, 1]


def test_class_codes():
    codes, n_classes = v.check_class_codes(np.array([0, 2, 1, 2]), 4)
    assert codes.tolist() == [0, 2, 1, 2] and n_classes == 3
    assert v.check_class_codes([0, 1], 2, n_classes=4, require_all=False)[1] == 4
    with pytest.raises(ValueError, match=r"class code\(s\) \[2, 3\] have no examples"):
        v.check_class_codes([0, 1], 2, n_classes=4)
    with pytest.raises(ValueError, match=r"codes \[3\] outside 0\.\.2 \(the paper's 1\.\.3 minus one\)"):
        v.check_class_codes([0, 3, 1], 3, n_classes=3)
    with pytest.raises(ValueError, match="integer class codes"):
        v.check_class_codes([0, 0.5], 2)
    with pytest.raises(ValueError, match="3 class codes, one per point"):
        v.check_class_codes([0, 1], 3)
    with pytest.raises(ValueError, match="n_classes must be at least 2"):
        v.check_class_codes([0, 0], 2)


def test_binary_labels_length_and_messages():
    with pytest.raises(ValueError, match=r"one label per point \(3\); got 2"):
        v.check_binary_labels([0, 1], length=3)
    with pytest.raises(ValueError, match="coding"):
        v.check_binary_labels([0, 1], coding="bool")
    np.testing.assert_array_equal(v.check_binary_labels(np.array([[1], [-1]])), [1, -1])


def test_covariance_checks():
    K = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(v.check_covariance(K), K)
    with pytest.raises(ValueError, match="square"):
        v.check_covariance(np.ones((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        v.check_covariance(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="3 × 3"):
        v.check_covariance(K, n_points=3)
    assert v.check_covariance_stack(K).shape == (1, 2, 2)
    assert v.check_covariance_stack(np.stack([K, K, K]), n_classes=3).shape == (3, 2, 2)
    with pytest.raises(ValueError, match="one per class"):
        v.check_covariance_stack(np.stack([K, K]), n_classes=3)


def test_exceptions():
    import gpc_ref

    assert gpc_ref.ConvergenceWarning is v.ConvergenceWarning
    assert issubclass(v.ConvergenceWarning, UserWarning)
    assert gpc_ref.NotFittedError is v.NotFittedError
    assert issubclass(v.NotFittedError, ValueError) and issubclass(v.NotFittedError, AttributeError)


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
