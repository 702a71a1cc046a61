import numpy as np
import pytest
from scipy import integrate
from scipy import stats
from scipy.special import expit

from gpc_ref import likelihoods as lk

F_VALUES = np.array([-12.0, -8.0, -2.0, -0.3, 0.0, 0.7, 3.0, 9.0, 12.0])


@pytest.mark.parametrize("likelihood", [lk.LogisticLikelihood(), lk.ProbitLikelihood()])
@pytest.mark.parametrize("label", [-1.0, 1.0])
def test_derivatives_match_finite_differences(likelihood, label):
    y = np.full_like(F_VALUES, label)
    d1, d2, d3 = likelihood.derivatives(y, F_VALUES)
    h = 1e-5
    plus, minus = likelihood.derivatives(y, F_VALUES + h), likelihood.derivatives(y, F_VALUES - h)
    np.testing.assert_allclose(
        d1, (likelihood.log_p(y, F_VALUES + h) - likelihood.log_p(y, F_VALUES - h)) / (2 * h), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(d2, (plus[0] - minus[0]) / (2 * h), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(d3, (plus[1] - minus[1]) / (2 * h), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("likelihood", [lk.LogisticLikelihood(), lk.ProbitLikelihood()])
def test_log_likelihood_is_finite_in_the_tails(likelihood):
    for label in (-1.0, 1.0):
        values = likelihood.log_p(np.full(3, label), np.array([-500.0, 0.0, 500.0]))
        assert np.all(np.isfinite(values))
        assert np.all(np.isfinite(likelihood.derivatives(np.full(3, label), np.array([-500.0, 0.0, 500.0]))))


def test_probit_tail_derivatives_against_high_precision_values():
    # d²/dz² and d³/dz³ of log Φ(z), computed once with mpmath at 60 digits
    reference = {
        -10.0: (-0.990554622174, 0.00178640039212),
        -20.0: (-0.997536738385, 0.000242726578936),
        -30.0: (-0.998896228488, 7.30999301578e-5),
        -50.0: (-0.999600956813, 1.59235818912e-5),
        -100.0: (-0.99990005995, 1.99760299586e-6),
    }
    probit = lk.ProbitLikelihood()
    for z, (second, third) in reference.items():
        _, d2, d3 = probit.derivatives(np.ones(1), np.array([z]))
        assert d2[0] == pytest.approx(second, rel=1e-9)
        assert d3[0] == pytest.approx(third, rel=1e-6)
    d1, d2, d3 = probit.derivatives(np.ones(1), np.array([-1e4]))
    assert d1[0] == pytest.approx(1e4, rel=1e-6)
    assert d2[0] == pytest.approx(-1.0, abs=1e-7)
    assert d3[0] == pytest.approx(2e-12, rel=1e-6)


def test_log_p_values():
    np.testing.assert_allclose(
        lk.LogisticLikelihood().log_p(np.array([1.0, -1.0]), np.array([0.4, 0.4])), np.log([expit(0.4), expit(-0.4)])
    )
    np.testing.assert_allclose(
        lk.ProbitLikelihood().log_p(np.array([1.0, -1.0]), np.array([0.4, 0.4])),
        np.log([stats.norm.cdf(0.4), stats.norm.cdf(-0.4)]),
    )


def test_labels_must_be_plus_minus_one():
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        lk.LogisticLikelihood().log_p(np.array([0.0, 1.0]), np.zeros(2))


def test_inverse_mills_ratio_in_the_tail():
    z = np.array([-50.0, -10.0, 0.0, 10.0])
    r = lk.normal_pdf_over_cdf(z)
    # for z → −∞, φ(z)/Φ(z) = −z + 1/(−z) + O(z⁻³)
    np.testing.assert_allclose(r[0], 50.0 + 1 / 50.0, rtol=1e-5)
    np.testing.assert_allclose(r[2], np.sqrt(2 / np.pi))


def test_binary_likelihoods_share_the_chain_rule_in_z():
    # p(y|f) = g(y f): ∂^k/∂f^k log p = y^k (∂^k/∂z^k log g)(y f)
    for likelihood in (lk.LogisticLikelihood(), lk.ProbitLikelihood()):
        assert isinstance(likelihood, lk.BinaryLikelihood)
        y = np.where(np.arange(F_VALUES.size) % 2, 1.0, -1.0)
        link = likelihood.link_derivatives(y * F_VALUES)
        for k, (derivative, in_z) in enumerate(zip(likelihood.derivatives(y, F_VALUES), link), start=1):
            np.testing.assert_array_equal(derivative, y**k * in_z)
        np.testing.assert_array_equal(likelihood.log_p(y, F_VALUES), likelihood.log_link(y * F_VALUES))


def test_predict_refuses_an_unknown_method():
    # the integrals themselves are tested in test_gaussian_integrals.py
    for likelihood in (lk.LogisticLikelihood(), lk.ProbitLikelihood()):
        with pytest.raises(ValueError, match="method must be one of"):
            likelihood.predict(np.zeros(2), np.ones(2), method="laplace")


def test_label_noise_likelihood_reduces_to_probit_and_integrates_exactly():
    y, f = np.array([1.0, -1.0, 1.0]), np.array([0.3, 0.3, -2.0])
    np.testing.assert_allclose(lk.LabelNoiseLikelihood(0.0, 1.0).log_p(y, f), lk.ProbitLikelihood().log_p(y, f))
    noisy = lk.LabelNoiseLikelihood(epsilon=0.1, latent_noise=0.5)
    mu, var = 0.4, 1.3
    value, _ = integrate.quad(
        lambda t: np.exp(noisy.log_p(np.array([-1.0]), np.array([t]))[0]) * stats.norm.pdf(t, mu, np.sqrt(var)),
        -40,
        40,
        points=[0.0],
    )
    assert np.exp(noisy.log_integral(np.array([-1.0]), mu, var)[0]) == pytest.approx(value, abs=1e-9)
    hard = lk.LabelNoiseLikelihood(epsilon=0.05, latent_noise=0.0)
    np.testing.assert_allclose(np.exp(hard.log_p(np.array([1.0, 1.0]), np.array([2.0, -2.0]))), [0.95, 0.05])
    with pytest.raises(ValueError, match="epsilon"):
        lk.LabelNoiseLikelihood(epsilon=0.5)


class TestMultinomialProbit:
    likelihood = lk.MultinomialProbitLikelihood()

    def test_two_classes_reduce_to_a_probit(self):
        M = np.array([[0.3, -0.4], [2.0, 1.0], [-1.0, 3.0]])
        t = np.array([0, 1, 0])
        # y0 − y1 ~ N(m0 − m1, 2): P(t = 0) = Φ((m0 − m1)/√2)
        expected = stats.norm.cdf(np.where(t == 0, 1, -1) * (M[:, 0] - M[:, 1]) / np.sqrt(2))
        np.testing.assert_allclose(np.exp(self.likelihood.log_p(t, M)), expected, rtol=1e-10)

    def test_cone_mean_shift_against_adaptive_quadrature(self):
        m = np.array([0.4, -0.2, 1.1])
        for t in range(3):
            others = [j for j in range(3) if j != t]

            def expectation(g):
                return integrate.quad(lambda u: stats.norm.pdf(u) * g(u), -12, 12, epsabs=1e-13)[0]

            Z = expectation(lambda u, t=t, others=others: np.prod([stats.norm.cdf(u + m[t] - m[j]) for j in others]))
            P, log_Z = self.likelihood.cone_mean_shift(np.array([t]), m[None, :])
            assert np.exp(log_Z[0]) == pytest.approx(Z, rel=1e-9)
            for k in others:
                rest = [j for j in others if j != k]
                num = expectation(
                    lambda u, t=t, k=k, rest=rest: (
                        stats.norm.pdf(u + m[t] - m[k]) * np.prod([stats.norm.cdf(u + m[t] - m[j]) for j in rest])
                    )
                )
                assert P[0, k] == pytest.approx(-num / Z, rel=1e-8)
            assert P[0].sum() == pytest.approx(0.0, abs=1e-12)  # eq 4.4

    def test_cone_mean_shift_against_monte_carlo(self, rng):
        m = np.array([0.5, 0.0, -0.5, 0.2])
        y = m + rng.normal(size=(400_000, 4))
        inside = y.argmax(axis=1) == 2
        P, _ = self.likelihood.cone_mean_shift(np.array([2]), m[None, :])
        standard_error = y[inside].std(axis=0) / np.sqrt(inside.sum())
        assert np.all(np.abs(P[0] - (y[inside] - m).mean(axis=0)) < 5 * standard_error)

    def test_predictive_probabilities_sum_to_one_and_match_monte_carlo(self, rng):
        mean = np.array([[0.3, -0.5, 1.0], [2.0, 2.0, -3.0]])
        var = np.array([[0.5, 2.0, 0.1], [0.0, 1.0, 4.0]])
        p = self.likelihood.predict(mean, var)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-10)
        draws = mean[0] + np.sqrt(var[0] + 1.0) * rng.normal(size=(400_000, 3))
        frequencies = np.bincount(draws.argmax(axis=1), minlength=3) / len(draws)
        np.testing.assert_allclose(p[0], frequencies, atol=4e-3)

    def test_extreme_values_stay_finite(self):
        M = np.array([[50.0, -50.0, 0.0], [-50.0, 50.0, 0.0]])
        t = np.array([1, 1])
        P, log_Z = self.likelihood.cone_mean_shift(t, M)
        assert np.all(np.isfinite(P)) and np.all(np.isfinite(log_Z))

    def test_bad_codes_raise(self):
        with pytest.raises(ValueError, match=r"codes \[3\] outside 0\.\.2"):
            self.likelihood.log_p(np.array([3]), np.zeros((1, 3)))
        with pytest.raises(ValueError, match="integer class codes"):
            self.likelihood.log_p(np.array([0.5]), np.zeros((1, 3)))
        with pytest.raises(ValueError, match=r"shape \(n, C\)"):
            self.likelihood.log_p(np.array([0]), np.zeros(3))
        with pytest.raises(ValueError, match="n_nodes"):
            lk.MultinomialProbitLikelihood(n_nodes=1)


class TestSoftmax:
    likelihood = lk.SoftmaxLikelihood()

    def test_log_p_is_the_log_of_the_softmax(self):
        M = np.array([[0.3, -0.4, 1.0], [2.0, 1.0, 0.0]])
        t = np.array([2, 0])
        expected = np.log(np.exp(M[np.arange(2), t]) / np.exp(M).sum(axis=1))
        np.testing.assert_allclose(self.likelihood.log_p(t, M), expected, rtol=1e-14)

    def test_two_classes_reduce_to_the_logistic(self):
        M = np.array([[0.3, -0.4], [2.0, 1.0], [-1.0, 3.0]])
        t = np.array([0, 1, 0])
        y = np.where(t == 0, 1.0, -1.0)
        expected = lk.LogisticLikelihood().log_p(y, M[:, 0] - M[:, 1])
        np.testing.assert_allclose(self.likelihood.log_p(t, M), expected, rtol=1e-14)

    def test_extreme_values_stay_finite(self):
        M = np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 0.0]])
        log_p = self.likelihood.log_p(np.array([1, 1]), M)
        np.testing.assert_allclose(log_p, [-2000.0, 0.0])

    def test_bad_input_raises(self):
        with pytest.raises(ValueError, match=r"codes \[3\] outside 0\.\.2"):
            self.likelihood.log_p(np.array([3]), np.zeros((1, 3)))
        with pytest.raises(ValueError, match=r"shape \(n, C\)"):
            self.likelihood.log_p(np.array([0]), np.zeros(3))
