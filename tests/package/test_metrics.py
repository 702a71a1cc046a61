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


# ----------------------------------------------------------------------------- paired differences over splits
def test_paired_difference_over_independent_draws_is_the_plain_t_test():
    from scipy import stats

    from gpc_ref.metrics import paired_difference

    d = np.array([0.3, 0.1, 0.4, 0.2, 0.5, 0.0, 0.3, 0.2, 0.4, 0.1])
    result = paired_difference(d)
    assert result.mean == pytest.approx(d.mean()) and not result.resampled
    assert result.std_error == result.naive_std_error == pytest.approx(d.std(ddof=1) / np.sqrt(10))
    assert result.t_critical == pytest.approx(2.262, abs=1e-3)  # t_{0.975, 9}
    assert result.resolved == (stats.ttest_1samp(d, 0.0).pvalue < 0.05)


def test_resplits_of_one_pool_inflate_the_variance_by_nadeau_and_bengio_s_factor():
    from gpc_ref.metrics import paired_difference

    d = np.array([0.3, 0.1, 0.4, 0.2, 0.5, 0.0, 0.3, 0.2, 0.4, 0.1])
    # Pima's 200 training and 332 test points, ten splits: (1/10 + 332/200)/(1/10) = 17.6
    pima = paired_difference(d, n_train=200, n_test=332)
    assert (pima.std_error / pima.naive_std_error) ** 2 == pytest.approx(17.6)
    # five 50/50 splits: (1/5 + 1)/(1/5) = 6, and t_{0.975, 4} = 2.776
    half = paired_difference(d[:5], n_train=100, n_test=100)
    assert (half.std_error / half.naive_std_error) ** 2 == pytest.approx(6.0) and half.t_critical == pytest.approx(
        2.776, abs=1e-3
    )
    assert paired_difference(d).resolved and not pima.resolved  # resolved naively, not once corrected
    assert paired_difference(np.zeros(4)).t == 0.0 and paired_difference(np.ones(4)).t == np.inf


def test_paired_difference_rejects_what_it_cannot_summarise():
    from gpc_ref.metrics import paired_difference

    with pytest.raises(ValueError, match="at least two splits"):
        paired_difference([0.1])
    with pytest.raises(ValueError, match="together"):
        paired_difference([0.1, 0.2], n_train=10)
    with pytest.raises(ValueError, match="level"):
        paired_difference([0.1, 0.2], level=1.5)
