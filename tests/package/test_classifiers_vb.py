"""Tests of the VBProbitGPC and GibbsProbitGPC estimators (shared interface, labels, errors)."""

import numpy as np
import pytest

from gpc_ref import NotFittedError
from gpc_ref.classifiers import GibbsProbitGPC
from gpc_ref.classifiers import VBProbitGPC
from gpc_ref.kernels import SEKernel
from gpc_ref.vb_probit_learning import KernelLearning


def _data(n=36, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    codes = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])
    labels = np.array(["setosa", "versicolor", "virginica"])[codes]
    return X, labels


def test_vb_estimator_interface_and_labels():
    X, y = _data()
    model = VBProbitGPC(kernel=SEKernel(variance=2.0, lengthscale=0.8), optimize=False, tol=1e-10)
    assert model.fit(X, y) is model
    np.testing.assert_array_equal(model.classes_, ["setosa", "versicolor", "virginica"])
    p = model.predict_proba(X[:7])
    assert p.shape == (7, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert set(model.predict(X)) <= set(model.classes_)
    assert model.score(X, y) > 0.8
    assert np.all(np.diff(model.lower_bound_) >= -1e-9 * np.abs(model.lower_bound_[1:]))
    assert model.log_marginal_likelihood_ == model.lower_bound_[-1]
    assert model.hyperparameter_fit_ is None and model.kernel_ is model.kernel
    assert model.n_iter_ == model.posterior_.n_iter
    mean, cov = model.predict_latent(X[:4])
    assert mean.shape == (4, 3) and cov.shape == (4, 3, 3)
    var = np.diagonal(cov, axis1=1, axis2=2)
    assert np.all(var >= 0)
    np.testing.assert_array_equal(cov, var[:, :, None] * np.eye(3))  # Q(M) factorises over the classes
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
    binary = VBProbitGPC(kernel=kernel, optimize=False, tol=1e-14, max_iter=5000).fit(X, y2)
    multi = VBProbitGPC(kernel=kernel, optimize=False, tol=1e-14, max_iter=5000, two_class="multiclass").fit(X, y2)
    assert binary.posterior_.binary and not multi.posterior_.binary
    np.testing.assert_allclose(binary.predict_proba(X), multi.predict_proba(X), atol=1e-6)


def test_vb_learns_the_kernel_reproducibly():
    X, y = _data(30)
    kw = dict(
        kernel=SEKernel(lengthscale=[0.7, 0.7]),
        optimize=True,
        method="importance_sampling",
        learning_options=dict(n_iter=3, n_importance_samples=15),
        rng=4,
    )
    a = VBProbitGPC(**kw).fit(X, y)
    b = VBProbitGPC(**kw).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.lengthscale, b.kernel_.lengthscale)
    assert isinstance(a.hyperparameter_fit_, KernelLearning)
    assert a.hyperparameter_fit_.phi_history.shape == (4, 1, 2) and a.n_iter_ == 3
    assert len(a.lower_bound_) == 3 + len(a.posterior_.lower_bound)
    assert a.log_marginal_likelihood_ == a.posterior_.log_marginal_likelihood_bound
    per_class = VBProbitGPC(
        kernel=[SEKernel(), SEKernel(), SEKernel()],
        optimize=True,
        method="importance_sampling",
        learning_options=dict(n_iter=2, n_importance_samples=5),
    ).fit(X, y)
    assert len(per_class.kernel_) == 3
    np.testing.assert_allclose(per_class.predict_proba(X[:3]).sum(axis=1), 1.0, atol=1e-9)


def test_gibbs_estimator_interface():
    X, y = _data(24)
    model = GibbsProbitGPC(
        kernel=SEKernel(variance=2.0, lengthscale=0.8), n_samples=60, burn_in=30, thin=2, n_predictive_samples=20, rng=1
    )
    assert model.fit(X, y) is model
    p = model.predict_proba(X[:5])
    assert p.shape == (5, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert model.posterior_.m.shape == (60, 24, 3)
    assert model.effective_sample_size_ > 0
    assert model.hyperparameter_fit_ is None and np.isfinite(model.log_marginal_likelihood_)
    again = GibbsProbitGPC(**model.get_params(deep=False)).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X[:5]), p)
    binary = GibbsProbitGPC(n_samples=30, burn_in=10).fit(X, y == "setosa")
    assert binary.posterior_.binary and binary.predict_proba(X[:3]).shape == (3, 2)
    np.testing.assert_array_equal(binary.classes_, [False, True])


def test_gibbs_predict_latent_is_the_mixture_of_the_per_sample_predictions():
    """The mean and covariance of the equal-weight mixture of N(μ_s, diag v) over the retained samples."""
    from gpc_ref.gibbs import gibbs_predict_latent

    X, y = _data(24)
    kernel = SEKernel(variance=2.0, lengthscale=0.8)
    model = GibbsProbitGPC(kernel=kernel, n_samples=40, burn_in=20, thin=2, n_evidence_samples=50, rng=3).fit(X, y)
    X_new = np.random.default_rng(7).normal(size=(6, 2))
    means, var = gibbs_predict_latent(model.posterior_, kernel.K(X, X_new), kernel.diag(X_new))
    assert means.shape == (40, 6, 3) and var.shape == (6, 3)
    mean, cov = model.predict_latent(X_new)
    assert mean.shape == (6, 3) and cov.shape == (6, 3, 3)
    for i in range(6):
        mu = means[:, i, :]  # (S, C)
        expected_mean = mu.sum(axis=0) / len(mu)
        # law of total covariance: E[cov | s] + cov(E[· | s]), the within-sample classes independent
        expected_cov = np.diag(var[i]) + sum(np.outer(m - expected_mean, m - expected_mean) for m in mu) / len(mu)
        np.testing.assert_allclose(mean[i], expected_mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cov[i], expected_cov, rtol=1e-10, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    # the binary model: the mixture mean and variance of the one latent function, shapes (m,)
    binary = GibbsProbitGPC(kernel=kernel, n_samples=40, burn_in=20, n_evidence_samples=50, rng=3).fit(X, y == "setosa")
    means_b, var_b = gibbs_predict_latent(binary.posterior_, kernel.K(X, X_new), kernel.diag(X_new))
    mean_b, variance_b = binary.predict_latent(X_new)
    assert mean_b.shape == variance_b.shape == (6,)
    np.testing.assert_allclose(mean_b, means_b[:, :, 0].mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(variance_b, var_b[:, 0] + means_b[:, :, 0].var(axis=0), rtol=1e-10)


def test_vb_binary_predict_latent_is_one_gp():
    X, y = _data(seed=3)
    kernel = SEKernel(variance=2.0, lengthscale=0.8)
    model = VBProbitGPC(kernel=kernel, optimize=False, tol=1e-12).fit(X, y == "setosa")
    mean, var = model.predict_latent(X[:5])
    assert mean.shape == var.shape == (5,) and np.all(var > 0)
    from scipy.special import ndtr

    np.testing.assert_allclose(model.predict_proba(X[:5])[:, 1], ndtr(mean / np.sqrt(1 + var)), atol=1e-12)


def test_estimators_reject_bad_input():
    X, y = _data(20)
    for model in (VBProbitGPC(optimize=False), GibbsProbitGPC(n_samples=5, burn_in=0)):
        with pytest.raises(NotFittedError, match="not fitted"):
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
        VBProbitGPC(optimize=False, two_class="ovr").fit(X, y == "setosa")
    with pytest.raises(ValueError, match="sequence of 3 SEKernels"):
        VBProbitGPC(kernel=[SEKernel(), SEKernel()], optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="SEKernel"):
        GibbsProbitGPC(kernel="rbf").fit(X, y)


def _converged_vb(kernel, X, t, n_classes):
    from gpc_ref.vb_probit import vb_probit_multiclass

    mats = np.stack([k.K(X) for k in kernel]) if isinstance(kernel, list) else kernel.K(X)
    return vb_probit_multiclass(mats, t, n_classes=n_classes, tol=1e-15, max_iter=50000, accelerate=True)


@pytest.mark.parametrize("per_class", [False, True])
def test_vb_bound_gradient_matches_finite_differences(per_class):
    """The envelope-theorem gradient ½Σ tr((ααᵀ − (I+K)⁻¹)∂K) against central differences of the converged bound."""
    from gpc_ref.kernels import stack_theta
    from gpc_ref.kernels import unstack_theta
    from gpc_ref.vb_probit_learning import vb_bound_gradient

    X, y = _data(30, seed=5)
    t = np.searchsorted(np.unique(y), y)
    base = SEKernel(variance=1.5, lengthscale=[0.9, 1.3])
    kernel = [base, base.with_theta(base.theta + 0.2), base.with_theta(base.theta - 0.3)] if per_class else base
    vb = _converged_vb(kernel, X, t, 3)
    assert vb.converged
    analytic = vb_bound_gradient(kernel, X, vb)
    theta = stack_theta(kernel, 3)
    assert analytic.shape == theta.shape
    numeric = np.empty_like(theta)
    h = 1e-5
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = h
        up, down = (list(unstack_theta(kernel, theta + s * e, 3)) if per_class else unstack_theta(kernel, theta + s * e, 3)
                    for s in (1, -1))  # fmt: skip
        numeric[j] = (_converged_vb(up, X, t, 3).log_marginal_likelihood_bound
                      - _converged_vb(down, X, t, 3).log_marginal_likelihood_bound) / (2 * h)  # fmt: skip
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


def test_vb_bound_learning_converges_and_raises_the_bound():
    from gpc_ref.vb_probit_learning import BoundFit

    X, y = _data(40, seed=2)
    start = SEKernel(variance=1.0, lengthscale=[2.0, 2.0])
    fixed = VBProbitGPC(kernel=start, optimize=False).fit(X, y)
    model = VBProbitGPC(kernel=start).fit(X, y)
    assert model.method == "bound" and isinstance(model.hyperparameter_fit_, BoundFit)
    fit = model.hyperparameter_fit_
    assert fit.converged and fit.optimization.gradient_norm <= fit.optimization.tolerance
    assert model.log_marginal_likelihood_ > fixed.log_marginal_likelihood_
    np.testing.assert_allclose(model.log_marginal_likelihood_, fit.lower_bound, rtol=1e-8)
    assert len(model.lower_bound_) == len(fit.trace) + len(model.posterior_.lower_bound)
    # the signal variance is learnt too unless fixed
    assert model.kernel_.variance != start.variance
    held = VBProbitGPC(kernel=start, learning_options={"fixed": ["log_variance"]}).fit(X, y)
    assert held.kernel_.variance == start.variance
    with pytest.raises(ValueError, match="method"):
        VBProbitGPC(method="gradient").fit(X, y)


def test_vb_bound_learning_warns_when_it_stops_early():
    from gpc_ref import ConvergenceWarning

    X, y = _data(40, seed=2)
    with pytest.warns(ConvergenceWarning, match="gradient"):
        model = VBProbitGPC(kernel=SEKernel(lengthscale=[3.0, 3.0]), learning_options={"max_iter": 1}).fit(X, y)
    assert not model.hyperparameter_fit_.converged


def test_bound_learning_warns_when_the_maximum_is_on_the_edge_of_the_box():
    """On overlapping classes the VB bound can be largest for (nearly) the constant classifier; the
    estimator says so instead of returning it silently (the VB chapter, vb-learning-caution)."""
    from gpc_ref import datasets

    rng = np.random.default_rng(7)
    X, c = datasets.make_three_class_toy(rng, 300, n_features=4)
    c = datasets.move_labels(c, 0.1, rng, n_classes=3)
    with pytest.warns(UserWarning, match="constant classifier"):
        model = VBProbitGPC().fit(X, c)
    assert model.hyperparameter_fit_.optimization.at_bound.any()


def test_bound_learning_posterior_is_the_learners_and_is_not_rerun():
    """Issue 19: the estimator's posterior is the VB result the search computed at the learnt kernel."""
    X, y = _data(40, seed=2)
    model = VBProbitGPC(kernel=SEKernel(variance=1.0, lengthscale=[2.0, 2.0])).fit(X, y)
    fit = model.hyperparameter_fit_
    assert model.posterior_ is fit.vb and fit.vb.converged
    assert model.log_marginal_likelihood_ == fit.lower_bound
    assert model.n_iter_ == fit.optimization.n_iter  # the learner's iterations, as for the other estimators
    np.testing.assert_array_equal(model.lower_bound_[len(fit.trace) :], fit.vb.lower_bound)
    # the search's best evaluation is the returned one, and its posterior belongs to the returned kernel
    best = int(np.nanargmax(fit.trace[:, 0]))
    assert fit.trace[best, 0] == fit.lower_bound and fit.trace[best, 2] == fit.vb.n_iter
    K = model.kernel_.K(X)
    np.testing.assert_allclose(fit.vb.M, K @ fit.vb.alpha, rtol=1e-12, atol=1e-12)
    # the inner iterations are counted and none stopped at the cap here
    assert fit.n_vb_iter == int(fit.trace[:, 2].sum()) and fit.n_vb_capped == 0 and np.all(fit.trace[:, 3] == 1.0)


def test_warm_starts_and_inexact_inner_iterations_do_not_change_the_learnt_kernel():
    """Warm-starting each evaluation's VB from the previous Q(z), and stopping it early far from the optimum
    (``vb_tol_per_gradient``), change the iterations, not the fixed point: the same kernel (to the search's
    tolerance) with and without them, and fewer inner iterations with them."""
    from gpc_ref.vb_probit_learning import vb_probit_maximize_bound

    X, y = _data(40, seed=2)
    t = np.searchsorted(np.unique(y), y)
    start = SEKernel(variance=1.0, lengthscale=[2.0, 2.0])
    default = vb_probit_maximize_bound(start, X, t, tol=1e-7)
    cold = vb_probit_maximize_bound(start, X, t, tol=1e-7, warm_start=False)
    exact = vb_probit_maximize_bound(start, X, t, tol=1e-7, vb_tol_per_gradient=0.0)
    assert default.converged and exact.converged
    # cold-started, each evaluation's VB starts from zero and stops at its own tolerance, so the bound's gradient
    # carries that much noise: at this tight tol (1e-7) the careful search ends within twice the tolerance of the test
    assert cold.converged or cold.optimization.gradient_norm < 2 * cold.optimization.tolerance
    for other in (cold, exact):
        np.testing.assert_allclose(default.kernel.theta, other.kernel.theta, atol=1e-3)
        assert default.lower_bound == pytest.approx(other.lower_bound, abs=1e-6)
        assert default.n_vb_iter < other.n_vb_iter


def test_bound_learning_reports_the_cap_on_the_inner_iterations():
    """An evaluation whose VB iterations reach ``vb_max_iter`` is kept (its bound is still a bound) and
    counted; if the returned kernel's own VB stopped at the cap, the fit says so with a ConvergenceWarning."""
    from gpc_ref import ConvergenceWarning
    from gpc_ref.vb_probit_learning import vb_probit_maximize_bound

    X, y = _data(40, seed=2)
    t = np.searchsorted(np.unique(y), y)
    start = SEKernel(variance=1.0, lengthscale=[2.0, 2.0])
    with pytest.warns(ConvergenceWarning, match="vb_max_iter=3"):
        fit = vb_probit_maximize_bound(start, X, t, vb_max_iter=3, max_iter=5)
    assert not fit.converged and not fit.vb.converged and fit.vb.n_iter <= 3
    assert fit.n_vb_capped >= 1 and fit.vb_max_iter == 3 and np.all(fit.trace[:, 2] <= 3)
    assert fit.n_vb_capped == int(np.sum(fit.trace[:, 3] == 0.0))
    with pytest.raises(ValueError, match="vb_max_iter"):
        vb_probit_maximize_bound(start, X, t, vb_max_iter=0)
