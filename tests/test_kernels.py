import numpy as np
import pytest

from gpc_ref.kernels import SEKernel


def _points(rng, n=7, d=3):
    return rng.normal(size=(n, d))


@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=1.7, lengthscale=0.8),
        SEKernel(variance=0.5, lengthscale=[0.5, 1.5, 3.0], bias=0.3),
        SEKernel(variance=2.0, lengthscale=[1.0, 2.0, 0.7], bias=0.1, jitter=0.05, learn_jitter=True),
    ],
)
def test_gradients_match_finite_differences(kernel, rng):
    X = _points(rng)
    analytic = kernel.gradients(X)
    assert analytic.shape == (len(kernel.theta), 7, 7)
    step = 1e-6
    for j in range(len(kernel.theta)):
        e = np.zeros_like(kernel.theta)
        e[j] = step
        numeric = (kernel.with_theta(kernel.theta + e).K(X) - kernel.with_theta(kernel.theta - e).K(X)) / (2 * step)
        np.testing.assert_allclose(analytic[j], numeric, rtol=1e-6, atol=1e-8, err_msg=kernel.theta_names[j])


def test_matches_explicit_formula(rng):
    X, Z = _points(rng, 5), _points(rng, 4)
    ell = np.array([0.5, 1.5, 3.0])
    kernel = SEKernel(variance=2.0, lengthscale=ell, bias=0.25, jitter=1e-3)
    expected = np.array([[2.0 * np.exp(-0.5 * np.sum(((x - z) / ell) ** 2)) + 0.25 for z in Z] for x in X])
    np.testing.assert_allclose(kernel.K(X, Z), expected, rtol=1e-12)
    # jitter only on the diagonal of the training covariance, never in the cross covariance
    np.testing.assert_allclose(np.diag(kernel.K(X)), 2.0 + 0.25 + 1e-3)
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel.K(X)))


def test_positive_definite_and_symmetric(rng):
    X = _points(rng, 40)
    K = SEKernel(variance=3.0, lengthscale=[0.3, 1.0, 2.0], bias=0.5).K(X)
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() > 0


def test_duplicate_points_stay_positive_definite_with_jitter():
    X = np.zeros((5, 2))
    K = SEKernel(jitter=1e-6).K(X)
    assert np.linalg.eigvalsh(K).min() > 0


def test_theta_roundtrip_and_names():
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 3.0], bias=0.5)
    assert kernel.theta_names == ["log_variance", "log_lengthscale[0]", "log_lengthscale[1]", "log_bias"]
    again = kernel.with_theta(kernel.theta)
    np.testing.assert_allclose(again.theta, kernel.theta)
    assert SEKernel().theta_names == ["log_variance", "log_lengthscale"]
    assert SEKernel(jitter=0.1, learn_jitter=True).theta_names[-1] == "log_jitter"


def test_extreme_parameters_are_finite(rng):
    X = _points(rng, 10)
    for kernel in (SEKernel(variance=1e6), SEKernel(lengthscale=1e-3), SEKernel(lengthscale=1e3)):
        assert np.all(np.isfinite(kernel.K(X)))
        assert np.all(np.isfinite(kernel.gradients(X)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(variance=-1.0), "variance"),
        (dict(lengthscale=0.0), "lengthscale"),
        (dict(lengthscale=[[1.0]]), "lengthscale"),
        (dict(bias=-0.1), "bias"),
        (dict(jitter=np.nan), "jitter"),
        (dict(learn_bias=True), "bias"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SEKernel(**kwargs)


def test_bad_inputs_raise():
    kernel = SEKernel(lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="feature"):
        kernel.K(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        kernel.K(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="theta"):
        kernel.with_theta([0.0])
    with pytest.raises(ValueError, match="unknown"):
        kernel.with_params(colour=1)
