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


@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=1.7, lengthscale=0.8),
        SEKernel(variance=0.5, lengthscale=[0.5, 1.5, 3.0], bias=0.3),
        SEKernel(variance=2.0, lengthscale=[1.0, 2.0, 0.7], bias=0.1, jitter=0.05, learn_jitter=True),
        SEKernel(variance=3.0, lengthscale=1.3, bias=0.2, jitter=0.01, learn_jitter=True),
    ],
)
def test_gradient_traces_equal_the_dense_einsum(kernel, rng):
    X = _points(rng, 9)
    A = rng.normal(size=(9, 9))
    Q = A + A.T
    dense = np.einsum("ij,pij->p", Q, kernel.gradients(X))
    traces = kernel.gradient_traces(X, Q)
    assert traces.shape == (len(kernel.theta),)
    np.testing.assert_allclose(traces, dense, rtol=1e-11, atol=1e-11 * np.abs(dense).max())


def test_gradient_traces_reads_a_1d_x_as_one_feature_and_checks_q(rng):
    x = rng.normal(size=6)
    kernel = SEKernel(variance=1.2, lengthscale=0.9)
    Q = np.eye(6)
    np.testing.assert_allclose(kernel.gradient_traces(x, Q), kernel.gradient_traces(x[:, None], Q))
    with pytest.raises(ValueError, match="Q must have shape"):
        kernel.gradient_traces(x, np.eye(5))


def test_kernels_accept_a_1d_x_but_nothing_else_does():
    # only the kernels read a 1-D x as n points with one feature (the book's 1-D examples)
    x = np.array([0.0, 0.5, 2.0])
    kernel = SEKernel(lengthscale=0.7)
    np.testing.assert_array_equal(kernel.K(x), kernel.K(x[:, None]))
    np.testing.assert_array_equal(kernel.K(x, x[:2]), kernel.K(x[:, None], x[:2, None]))
    np.testing.assert_array_equal(kernel.diag(x), kernel.diag(x[:, None]))
    with pytest.raises(ValueError, match="2-D"):
        kernel.K(np.zeros((2, 2, 2)))


def test_get_params_deep_and_set_params():
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 3.0], bias=0.5)
    params = kernel.get_params(deep=True)
    shallow = kernel.get_params(deep=False)
    assert set(params) == set(shallow)
    assert all(np.array_equal(params[name], shallow[name]) for name in params)
    assert set(params) == {"variance", "lengthscale", "bias", "jitter", "learn_bias", "learn_jitter"}
    assert SEKernel(**params).theta_names == kernel.theta_names
    # set_params mutates in place and returns the kernel itself
    same = kernel.set_params(variance=4.0, lengthscale=[2.0, 0.5])
    assert same is kernel
    assert kernel.variance == 4.0
    np.testing.assert_array_equal(kernel.lengthscale, [2.0, 0.5])
    np.testing.assert_allclose(kernel.theta, np.log([4.0, 2.0, 0.5, 0.5]))
    np.testing.assert_allclose(kernel.K(np.zeros((1, 2))), [[4.0 + 0.5 + kernel.jitter]])


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(variance=-1.0), "variance"),
        (dict(lengthscale=0.0), "lengthscale"),
        (dict(colour="red"), "unknown"),
        (dict(bias=0.0, learn_bias=True), "bias"),
    ],
)
def test_set_params_validates_and_leaves_the_kernel_unchanged_on_error(changes, match):
    kernel = SEKernel(variance=2.0, lengthscale=1.5, bias=0.3)
    before = dict(kernel.get_params())
    with pytest.raises(ValueError, match=match):
        kernel.set_params(**changes)
    assert kernel.get_params() == before


def test_sklearn_clone_copies_the_kernel():
    base = pytest.importorskip("sklearn.base")
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 3.0])
    copy = base.clone(kernel)
    assert copy is not kernel
    np.testing.assert_array_equal(copy.theta, kernel.theta)
    copy.set_params(variance=5.0)
    assert kernel.variance == 2.0


def test_class_kernels_and_theta_stacking():
    from gpc_ref.kernels import class_kernels
    from gpc_ref.kernels import stack_theta
    from gpc_ref.kernels import unstack_theta

    shared = SEKernel(variance=2.0, lengthscale=0.5)
    kernels, is_shared = class_kernels(shared, 3)
    assert is_shared and kernels == (shared, shared, shared)
    np.testing.assert_array_equal(stack_theta(shared, 3), shared.theta)
    per_class = [SEKernel(variance=v, lengthscale=[1.0, 2.0]) for v in (1.0, 2.0, 3.0)]
    kernels, is_shared = class_kernels(per_class, 3)
    assert not is_shared and len(kernels) == 3
    theta = stack_theta(per_class, 3)
    assert theta.shape == (9,)
    again = unstack_theta(per_class, theta + 1.0, 3)
    for before, after in zip(per_class, again):
        np.testing.assert_allclose(after.theta, before.theta + 1.0)
    with pytest.raises(ValueError, match="one per class"):
        class_kernels(per_class[:2], 3)


def test_covariance_is_exactly_symmetric_and_translation_invariant_at_extreme_lengthscales():
    # the expansion |x|² + |z|² − 2xᵀz is not symmetric in floating point; with a tiny lengthscale its
    # rounding once made K fail the symmetry check inside a VB bound search (G&R Table 1 on Wine)
    rng = np.random.default_rng(46)
    X = rng.normal(size=(107, 13))
    for lengthscale in (1e-4, 0.05, 1.0, 1e4):
        K = SEKernel(variance=3.0, lengthscale=np.full(13, lengthscale)).K(X)
        assert np.array_equal(K, K.T)
    # distances do not depend on where the data sit: inputs far from the origin give the same matrix
    kernel = SEKernel(variance=2.0, lengthscale=0.7)
    near, far = kernel.K(X), kernel.K(X + 1e5)
    np.testing.assert_allclose(far, near, atol=1e-8)
    np.testing.assert_allclose(kernel.K(X + 1e5, X[:5] + 1e5), kernel.K(X, X[:5]), atol=1e-8)
