import numpy as np
import pytest

from gpc_ref import metrics


def test_error_rate_and_interval():
    result = metrics.error_rate(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0]))
    assert (result.n_errors, result.n, result.rate) == (1, 4, 0.25)
    assert result.std_error == pytest.approx(np.sqrt(0.25 * 0.75 / 4))
    low, high = result.interval
    assert 0 < low < 0.25 < high < 1
    zero = metrics.error_rate(np.array(["a", "b"]), np.array(["a", "b"]))
    assert zero.rate == 0 and zero.interval[0] == 0 and zero.interval[1] > 0
    assert "1/4" in str(result)


def test_test_log_likelihood_binary_is_gm_eq_41():
    t = np.array([1, 0, 1])
    p = np.array([0.9, 0.2, 0.6])
    expected = np.log(0.9) + np.log(0.8) + np.log(0.6)
    assert metrics.test_log_likelihood(t, p) == pytest.approx(expected)
    # the same in the (n, K) form
    assert metrics.test_log_likelihood(t, np.column_stack([1 - p, p])) == pytest.approx(expected)
    assert metrics.mean_log_predictive(t, p) == pytest.approx(expected / 3)


def test_certain_and_wrong_is_finite_but_terrible():
    value = metrics.test_log_likelihood(np.array([1]), np.array([0.0]))
    assert np.isfinite(value) and value < -700


def test_brier_score():
    t = np.array([1, 0])
    p = np.array([0.8, 0.4])
    assert metrics.brier_score(t, p) == pytest.approx((0.04 + 0.16) / 2)
    proba = np.array([[0.2, 0.8], [0.6, 0.4]])
    assert metrics.brier_score(t, proba) == pytest.approx((0.04 * 2 + 0.16 * 2) / 2)


def test_reliability_curve():
    p = np.array([0.05, 0.05, 0.95, 0.95, 0.55])
    t = np.array([0, 0, 1, 0, 1])
    mean_predicted, observed, counts = metrics.reliability_curve(t, p, n_bins=10)
    np.testing.assert_allclose(mean_predicted, [0.05, 0.55, 0.95])
    np.testing.assert_allclose(observed, [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(counts, [2, 1, 2])


def test_bad_inputs():
    with pytest.raises(ValueError, match="same length"):
        metrics.error_rate(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.test_log_likelihood(np.array([1]), np.array([1.5]))
    with pytest.raises(ValueError, match="0/1"):
        metrics.test_log_likelihood(np.array([2]), np.array([0.5]))
    with pytest.raises(ValueError, match="class codes"):
        metrics.test_log_likelihood(np.array([3]), np.array([[0.5, 0.5]]))
