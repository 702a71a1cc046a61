"""Tests of gpc_ref.ivm: the multi-class IVM by ADF (Girolami & Rogers 2006 §5)."""

import tracemalloc

import numpy as np
import pytest

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.ivm import SHORTLIST
from gpc_ref.ivm import adf_include
from gpc_ref.ivm import class_frequency_log_predictive
from gpc_ref.ivm import entropy_reduction
from gpc_ref.ivm import ivm_adf
from gpc_ref.ivm import ivm_core
from gpc_ref.ivm import ivm_fit
from gpc_ref.ivm import ivm_predict
from gpc_ref.ivm import median_distance_kernel
from gpc_ref.ivm import pairwise_log_probability
from gpc_ref.ivm import select_predictive
from gpc_ref.ivm import target_log_probability
from gpc_ref.ivm import training_log_predictive
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import MultinomialProbitLikelihood


def toy(n, seed=0):
    X, t = make_three_class_toy(np.random.default_rng(seed), n)
    return X, t


def toy_kernel(jitter=1e-8):
    # G&R's toy: only x1, x2 matter
    return SEKernel(lengthscale=np.r_[0.35, 0.35, np.full(8, 1e3)], jitter=jitter)


def dense_posterior(C, targets):
    """Σ = C (I + C)⁻¹ and m̃ = Σ ỹ, the full-GP posterior of the same model (G&R eq 4.1)."""
    n = C.shape[0]
    sigma = C - C @ np.linalg.solve(np.eye(n) + C, C)
    return sigma, sigma @ targets


# --------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("selection", ["random", "entropy", "predictive"])
def test_every_point_with_fixed_targets_equals_full_gp(selection):
    X, t = toy(60)
    targets = np.random.default_rng(1).normal(size=(60, 3))
    kernel = toy_kernel()
    fit = ivm_fit(kernel, X, t, n_active=60, selection=selection, rng=3, targets=targets)
    sigma, mean = dense_posterior(kernel.K(X), targets)
    assert sorted(fit.active_set) == list(range(60))
    np.testing.assert_allclose(fit.mean, mean, atol=1e-10)
    np.testing.assert_allclose(fit.var, np.repeat(np.diag(sigma)[:, None], 3, axis=1), atol=1e-10)
    np.testing.assert_allclose(fit.targets, targets[fit.active_set], atol=1e-12)


def test_every_point_with_one_kernel_per_class_equals_full_gp():
    X, t = toy(50)
    targets = np.random.default_rng(2).normal(size=(50, 3))
    kernels = [
        SEKernel(variance=v, lengthscale=np.r_[ls, ls, np.full(8, 5.0)])
        for v, ls in [(1.0, 0.3), (2.0, 0.5), (0.5, 1.0)]
    ]
    fit = ivm_fit(kernels, X, t, n_active=50, selection="random", rng=0, targets=targets)
    assert fit.M.shape == (3, 50, 50)
    for k, kernel in enumerate(kernels):
        sigma, mean = dense_posterior(kernel.K(X), targets)
        np.testing.assert_allclose(fit.mean[:, k], mean[:, k], atol=1e-10)
        np.testing.assert_allclose(fit.var[:, k], np.diag(sigma), atol=1e-10)


def test_low_rank_factor_is_the_cholesky_solve_of_the_active_columns():
    # M = L⁻¹ C_I,: with L Lᵀ = C_II + I in inclusion order, and Σ = C − MᵀM
    X, t = toy(80)
    kernel = toy_kernel()
    fit = ivm_fit(kernel, X, t, n_active=25, selection="predictive", rng=0)
    C = kernel.K(X)
    I = fit.active_set
    L = np.linalg.cholesky(C[np.ix_(I, I)] + np.eye(25))
    np.testing.assert_allclose(fit.M[0], np.linalg.solve(L, C[I]), atol=1e-10)
    sigma = C - C[:, I] @ np.linalg.solve(C[np.ix_(I, I)] + np.eye(25), C[I])
    np.testing.assert_allclose(fit.var[:, 0], np.diag(sigma), atol=1e-10)
    # the means are GP regression with unit noise on the fixed site targets ỹ_I
    mean = C[:, I] @ np.linalg.solve(C[np.ix_(I, I)] + np.eye(25), fit.targets)
    np.testing.assert_allclose(fit.mean, mean, atol=1e-10)


def test_one_adf_step_equals_the_dense_rank_one_update():
    rng = np.random.default_rng(4)
    X, t = toy(30)
    C = toy_kernel().K(X)
    # a state after 5 inclusions, built densely
    I = [3, 17, 8, 22, 11]
    L = np.linalg.cholesky(C[np.ix_(I, I)] + np.eye(5))
    M = np.zeros((1, 6, 30))
    M[0, :5] = np.linalg.solve(L, C[I])
    sigma = C - M[0, :5].T @ M[0, :5]
    mean = rng.normal(size=(30, 3))
    var = np.diag(sigma).copy()[None, :]
    shift = rng.normal(size=3)
    n = 5
    adf_include(M, var, mean_new := mean.copy(), C[:, [n]].T, shift, 5, n, np.zeros(3, dtype=int))
    sigma_new = sigma - np.outer(sigma[:, n], sigma[n]) / (1 + sigma[n, n])
    np.testing.assert_allclose(var[0], np.diag(sigma_new), atol=1e-12)
    np.testing.assert_allclose(C - M[0].T @ M[0], sigma_new, atol=1e-12)
    np.testing.assert_allclose(mean_new, mean + np.outer(sigma[:, n], shift) / (1 + sigma[n, n]), atol=1e-12)


def test_site_targets_are_the_truncated_gaussian_means_at_the_current_mean():
    X, t = toy(40)
    likelihood = MultinomialProbitLikelihood()
    fit = ivm_fit(toy_kernel(), X, t, n_active=10, selection="predictive", rng=5, likelihood=likelihood)
    # the first point is included at the prior mean 0 (G&R eqs 4.3–4.4 at m̃ = 0)
    n0 = fit.active_set[0]
    shift, _ = likelihood.cone_mean_shift(t[[n0]], np.zeros((1, 3)))
    np.testing.assert_allclose(fit.targets[0], shift[0], atol=1e-12)
    # own class pushed up, the others down, and the shifts sum to zero (eq 4.4)
    assert fit.targets[0, t[n0]] > 0 and np.all(np.delete(fit.targets[0], t[n0]) < 0)
    np.testing.assert_allclose(fit.targets[0].sum(), 0.0, atol=1e-12)


# --------------------------------------------------------------------------- selection scores
def test_target_log_probability_is_the_predictive_probability_of_the_own_class():
    rng = np.random.default_rng(6)
    mean, var = rng.normal(scale=1.5, size=(700, 4)), rng.uniform(0, 2, size=(700, 4))
    t = rng.integers(0, 4, 700)
    likelihood = MultinomialProbitLikelihood()
    expected = np.log(likelihood.predict(mean, var)[np.arange(700), t])
    np.testing.assert_allclose(target_log_probability(t, mean, var, likelihood), expected, rtol=1e-10, atol=1e-12)


def test_entropy_reduction_is_the_log_determinant_change():
    X, t = toy(25)
    kernels = [toy_kernel(), SEKernel(lengthscale=np.r_[0.8, 0.8, np.full(8, 2.0)])]
    C = [k.K(X) for k in kernels]
    I = [0, 4, 9]
    for n in (2, 13):
        predicted, actual = 0.0, 0.0
        for Ck in C:
            before = Ck - Ck[:, I] @ np.linalg.solve(Ck[np.ix_(I, I)] + np.eye(3), Ck[I])
            J = I + [n]
            after = Ck - Ck[:, J] @ np.linalg.solve(Ck[np.ix_(J, J)] + np.eye(4), Ck[J])
            actual += 0.5 * (np.linalg.slogdet(before)[1] - np.linalg.slogdet(after)[1])
            predicted += entropy_reduction(np.diag(before)[[n]][:, None])[0]
        np.testing.assert_allclose(predicted, actual, rtol=1e-6)


def test_select_predictive_is_the_argmin_over_the_candidates():
    X, t = toy(60)
    likelihood = MultinomialProbitLikelihood()
    fit = ivm_fit(toy_kernel(), X, t, n_active=10, selection="predictive", rng=1, likelihood=likelihood)
    scores = target_log_probability(t, fit.mean, fit.var, likelihood)
    candidates = np.setdiff1d(np.arange(60), fit.active_set)
    chosen, log_p = select_predictive(t, fit.mean, fit.var, candidates, likelihood)
    assert chosen == candidates[np.argmin(scores[candidates])]
    np.testing.assert_allclose(log_p, scores[chosen])


def test_predictive_rule_chooses_the_least_probable_point_at_every_step():
    X, t = toy(70)
    likelihood = MultinomialProbitLikelihood()
    kernel = toy_kernel()
    fit = ivm_fit(kernel, X, t, n_active=12, selection="predictive", rng=2, likelihood=likelihood)
    C = kernel.K(X)
    for step in range(1, 12):
        I = fit.active_set[:step]
        A = C[np.ix_(I, I)] + np.eye(step)
        mean = C[:, I] @ np.linalg.solve(A, fit.targets[:step])
        var = np.diag(C) - np.einsum("ij,ji->i", C[:, I], np.linalg.solve(A, C[I]))
        scores = target_log_probability(t, mean, np.repeat(var[:, None], 3, axis=1), likelihood)
        scores[I] = np.inf
        assert fit.active_set[step] == np.argmin(scores)
        np.testing.assert_allclose(fit.log_target_probability[step], scores[fit.active_set[step]], atol=1e-9)


def test_entropy_rule_chooses_the_largest_posterior_variance():
    X, t = toy(70)
    kernel = toy_kernel()
    fit = ivm_fit(kernel, X, t, n_active=10, selection="entropy", rng=2)
    C = kernel.K(X)
    for step in range(1, 10):
        I = fit.active_set[:step]
        var = np.diag(C) - np.einsum("ij,ji->i", C[:, I], np.linalg.solve(C[np.ix_(I, I)] + np.eye(step), C[I]))
        var[I] = -np.inf
        assert fit.active_set[step] == np.argmax(var)
        np.testing.assert_allclose(fit.entropy_reduction[step], 1.5 * np.log1p(var[fit.active_set[step]]))


def test_random_rule_follows_the_generator_and_is_reproducible():
    X, t = toy(50)
    fit = ivm_fit(toy_kernel(), X, t, n_active=20, selection="random", rng=7)
    np.testing.assert_array_equal(fit.active_set, np.random.default_rng(7).permutation(50)[:20])
    again = ivm_fit(toy_kernel(), X, t, n_active=20, selection="random", rng=np.random.default_rng(7))
    np.testing.assert_array_equal(fit.active_set, again.active_set)
    np.testing.assert_array_equal(fit.mean, again.mean)
    other = ivm_fit(toy_kernel(), X, t, n_active=20, selection="random", rng=8)
    assert not np.array_equal(fit.active_set, other.active_set)


def test_seeded_predictive_runs_are_reproducible_and_start_at_random():
    X, t = toy(50)
    a = ivm_fit(toy_kernel(), X, t, n_active=10, selection="predictive", rng=3)
    b = ivm_fit(toy_kernel(), X, t, n_active=10, selection="predictive", rng=3)
    np.testing.assert_array_equal(a.active_set, b.active_set)
    np.testing.assert_array_equal(a.targets, b.targets)
    starts = {ivm_fit(toy_kernel(), X, t, n_active=1, selection="predictive", rng=s).active_set[0] for s in range(6)}
    assert len(starts) > 1


def test_pairwise_bounds_hold_and_are_exact_for_two_classes():
    rng = np.random.default_rng(8)
    likelihood = MultinomialProbitLikelihood()
    for K in (2, 3, 6):
        mean, var = rng.normal(scale=1.5, size=(500, K)), rng.uniform(0, 2, size=(500, K))
        t = rng.integers(0, K, 500)
        exact = target_log_probability(t, mean, var, likelihood)
        lower = pairwise_log_probability(t, mean, var)
        v2 = 1 + var
        d = (mean[np.arange(500), t][:, None] - mean) / np.sqrt(v2[np.arange(500), t][:, None] + v2)
        upper = np.min(np.where(np.arange(K) == t[:, None], np.inf, norm_logcdf(d)), axis=1)
        assert np.all(lower <= exact + 1e-9) and np.all(exact <= upper + 1e-9)
        if K == 2:
            np.testing.assert_allclose(lower, exact, atol=1e-9)


def norm_logcdf(z):
    from scipy.stats import norm

    return norm.logcdf(z)


@pytest.mark.parametrize("kernel", [toy_kernel(), SEKernel(lengthscale=np.r_[0.15, 0.15, np.full(8, 1e3)])])
def test_screened_scores_pick_the_same_points(kernel):
    X, t = toy(400, seed=3)
    full = ivm_fit(kernel, X, t, n_active=40, selection="predictive", rng=0)
    screened = ivm_fit(kernel, X, t, n_active=40, selection="predictive", rng=0, screen=True)
    assert 400 > SHORTLIST
    np.testing.assert_array_equal(full.active_set, screened.active_set)


# --------------------------------------------------------------------------- predictions
def test_predictions_at_training_points_equal_the_adf_state():
    X, t = toy(90)
    kernel = toy_kernel(jitter=0.0)
    fit = ivm_fit(kernel, X, t, n_active=20, selection="predictive", rng=0)
    mean, var = ivm_predict(fit, X)
    np.testing.assert_allclose(mean, fit.mean, atol=1e-10)
    np.testing.assert_allclose(var, fit.var, atol=1e-10)


def test_prediction_path_equals_the_models_after_each_inclusion():
    X, t = toy(90)
    X_new, _ = toy(15, seed=9)
    kernel = toy_kernel()
    fit = ivm_fit(kernel, X, t, n_active=12, selection="predictive", rng=0)
    mean_path, var_path = ivm_predict(fit, X_new, path=True)
    assert mean_path.shape == (12, 15, 3)
    final_mean, final_var = ivm_predict(fit, X_new)
    np.testing.assert_allclose(mean_path[-1], final_mean, atol=1e-12)
    np.testing.assert_allclose(var_path[-1], final_var, atol=1e-12)
    for step in (1, 5, 9):
        prefix = ivm_fit(kernel, X, t, n_active=step, selection="predictive", rng=0)
        np.testing.assert_array_equal(prefix.active_set, fit.active_set[:step])
        mean, var = ivm_predict(prefix, X_new)
        np.testing.assert_allclose(mean_path[step - 1], mean, atol=1e-10)
        np.testing.assert_allclose(var_path[step - 1], var, atol=1e-10)


def test_predictions_equal_dense_gp_regression_on_the_site_targets():
    X, t = toy(60)
    X_new, _ = toy(10, seed=4)
    kernels = [toy_kernel(), SEKernel(lengthscale=np.r_[0.5, 0.5, np.full(8, 3.0)]), toy_kernel()]
    fit = ivm_fit(kernels, X, t, n_active=15, selection="entropy", rng=0)
    mean, var = ivm_predict(fit, X_new)
    I = fit.active_set
    for k, kernel in enumerate(kernels):
        A = kernel.K(X[I]) + np.eye(15)
        cross = kernel.K(X[I], X_new)
        np.testing.assert_allclose(mean[:, k], cross.T @ np.linalg.solve(A, fit.targets[:, k]), atol=1e-10)
        np.testing.assert_allclose(
            var[:, k], kernel.diag(X_new) - np.sum(cross * np.linalg.solve(A, cross), 0), atol=1e-10
        )


def test_shared_kernel_predicted_class_is_the_largest_mean():
    # equal variances across classes: P(t = k) is largest for the largest mean
    X, t = toy(300)
    X_new, _ = toy(500, seed=5)
    fit = ivm_fit(toy_kernel(), X, t, n_active=20, selection="predictive", rng=0)
    mean, var = ivm_predict(fit, X_new)
    proba = MultinomialProbitLikelihood().predict(mean, var)
    np.testing.assert_array_equal(proba.argmax(1), mean.argmax(1))


def test_toy_accuracy_with_predictive_selection():
    X, t = toy(500, seed=11)
    X_test, t_test = toy(1000, seed=12)
    fit = ivm_fit(toy_kernel(), X, t, n_active=30, selection="predictive", rng=0)
    mean, var = ivm_predict(fit, X_test)
    error = np.mean(MultinomialProbitLikelihood().predict(mean, var).argmax(1) != t_test)
    assert error < 0.05


# --------------------------------------------------------------------------- memory
def test_memory_never_holds_an_n_by_n_array():
    n, n_active = 3000, 15
    X, t = toy(n, seed=2)
    kernel = toy_kernel()
    shapes = []

    def kernel_column(i):
        column = kernel.K(X, X[i : i + 1]).T
        column[0, i] += kernel.jitter
        shapes.append(column.shape)
        return column

    prior_var = kernel.diag(X)[None, :]
    tracemalloc.start()
    fit = ivm_adf(kernel_column, prior_var, t, n_active=n_active, selection="predictive", rng=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert set(shapes) == {(1, n)} and len(shapes) == n_active
    assert fit.M.shape == (1, n_active, n)
    arrays = [v for v in vars(fit).values() if isinstance(v, np.ndarray)]
    assert max(a.size for a in arrays) == n_active * n
    # an N × N float array alone would need 72 MB; the whole run stays far below that
    assert peak < n * n * 8 / 8


def test_memory_with_one_kernel_per_class_is_k_times_s_times_n():
    X, t = toy(200)
    kernels = [toy_kernel()] * 3
    fit = ivm_fit(kernels, X, t, n_active=10, selection="random", rng=0)
    assert fit.M.shape == (3, 10, 200)
    shared = ivm_fit(toy_kernel(), X, t, n_active=10, selection="random", rng=0)
    # identical kernels give identical posteriors with a third of the storage
    np.testing.assert_allclose(fit.mean, shared.mean, atol=1e-12)
    np.testing.assert_allclose(fit.var, shared.var, atol=1e-12)


# --------------------------------------------------------------------------- hard inputs
@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=1e6, lengthscale=0.3),
        SEKernel(lengthscale=1e-3),
        SEKernel(lengthscale=1e3),
    ],
)
def test_hard_kernels_give_finite_answers(kernel):
    X, t = toy(60)
    X = np.vstack([X, X[:10]])  # duplicate points
    t = np.r_[t, t[:10]]
    for selection in ("predictive", "entropy"):
        fit = ivm_fit(kernel, X, t, n_active=30, selection=selection, rng=0)
        assert np.all(np.isfinite(fit.mean)) and np.all(np.isfinite(fit.var)) and np.all(fit.var >= -1e-8)
        assert len(set(fit.active_set)) == 30
        mean, var = ivm_predict(fit, X[:5])
        assert np.all(np.isfinite(mean)) and np.all(var >= 0)
        proba = MultinomialProbitLikelihood().predict(mean, var)
        np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-8)


def test_extreme_scores_stay_finite():
    t = np.array([0, 1, 2])
    mean = np.array([[-40.0, 40.0, 0.0], [0.0, 0.0, 0.0], [50.0, 0.0, -50.0]])
    log_p = target_log_probability(t, mean, np.full((3, 3), 0.5))
    assert np.all(np.isfinite(log_p)) and log_p[0] < -100 and log_p[2] < -100
    np.testing.assert_allclose(log_p[1], np.log(1 / 3), atol=1e-8)


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise():
    X, t = toy(20)
    kernel = toy_kernel()
    with pytest.raises(ValueError, match="n_active"):
        ivm_fit(kernel, X, t, n_active=0)
    with pytest.raises(ValueError, match="n_active"):
        ivm_fit(kernel, X, t, n_active=21)
    with pytest.raises(ValueError, match="n_active"):
        ivm_fit(kernel, X, t, n_active=2.5)
    with pytest.raises(ValueError, match="selection"):
        ivm_fit(kernel, X, t, n_active=5, selection="greedy")
    with pytest.raises(ValueError, match=r"t has codes \[-1\] outside"):
        ivm_fit(kernel, X, t - 1, n_active=5)
    with pytest.raises(ValueError, match="t must hold 20 class codes"):
        ivm_fit(kernel, X, t[:-1], n_active=5)
    with pytest.raises(ValueError, match="targets"):
        ivm_fit(kernel, X, t, n_active=5, targets=np.zeros((20, 2)))
    with pytest.raises(ValueError, match="kernel"):
        ivm_fit([kernel, kernel], X, t, n_active=5)
    with pytest.raises(ValueError, match="rng"):
        ivm_fit(kernel, X, t, n_active=5, rng=None)
    with pytest.raises(ValueError, match="X"):
        ivm_fit(kernel, np.full((20, 10), np.nan), t, n_active=5)
    with pytest.raises(ValueError, match="prior_var"):
        ivm_adf(lambda n: np.zeros((1, 20)), -np.ones(20), t, n_active=5)
    with pytest.raises(ValueError, match="kernel_column"):
        ivm_adf(lambda n: np.zeros((1, 19)), np.ones(20), t, n_active=5, selection="random")
    with pytest.raises(ValueError, match="1 kernel or one per class"):
        ivm_adf(lambda n: np.zeros((2, 20)), np.ones((2, 20)), t, n_active=5)
    fit = ivm_adf(lambda n: kernel.K(X, X[n : n + 1]).T, kernel.diag(X), t, n_active=3, selection="random")
    with pytest.raises(ValueError, match="ivm_fit"):
        ivm_predict(fit, X)
    fit = ivm_fit(kernel, X, t, n_active=3)
    with pytest.raises(ValueError, match="feature"):
        ivm_predict(fit, X[:, :3])


def test_n_active_and_options_are_keyword_only():
    X, t = toy(20)
    with pytest.raises(TypeError):
        ivm_fit(toy_kernel(), X, t, 5)
    with pytest.raises(TypeError):
        ivm_adf(lambda n: toy_kernel().K(X, X[n : n + 1]).T, toy_kernel().diag(X), t, 5)


# --------------------------------------------------------------------------- the default kernel and the baseline
def test_median_distance_kernel_is_the_median_pairwise_distance():
    X = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 5.0, 0.2]
    kernel = median_distance_kernel(X)
    distances = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))[np.triu_indices(40, 1)]
    assert kernel.lengthscale == pytest.approx(np.median(distances))
    assert kernel.variance == 10.0
    assert median_distance_kernel(X, variance=2.5).variance == 2.5
    # at most max_points inputs, evenly spaced: a constant cost in n, and deterministic
    big = np.random.default_rng(1).normal(size=(5000, 2))
    assert median_distance_kernel(big).lengthscale == median_distance_kernel(big).lengthscale
    rows = np.linspace(0, 4999, 500).astype(int)
    sub = big[rows]
    sub_distances = np.sqrt(((sub[:, None, :] - sub[None, :, :]) ** 2).sum(axis=2))[np.triu_indices(500, 1)]
    assert median_distance_kernel(big).lengthscale == pytest.approx(np.median(sub_distances))


def test_median_distance_kernel_survives_duplicates_and_bad_input():
    X = np.repeat([[0.0, 0.0], [3.0, 4.0]], 20, axis=0)  # most pairs coincide: the median of the positive ones
    assert median_distance_kernel(X).lengthscale == pytest.approx(5.0)
    assert median_distance_kernel(np.ones((10, 2))).lengthscale == 1.0  # no scale at all: 1
    with pytest.raises(ValueError, match="max_points"):
        median_distance_kernel(X, max_points=0)
    with pytest.raises(ValueError, match="X"):
        median_distance_kernel(np.array([[np.nan, 1.0]]))


def test_training_log_predictive_is_eq_5_5_at_the_training_inputs():
    X, t = toy(120)
    fit = ivm_fit(toy_kernel(), X, t, n_active=20, selection="predictive", rng=0)
    likelihood = MultinomialProbitLikelihood()
    # the same as predicting at the training inputs from the active set (ivm_predict) and taking eq 5.5
    P = likelihood.predict(*ivm_predict(fit, X))
    expected = np.mean(np.log(P[np.arange(120), t]))
    assert training_log_predictive(fit, t, likelihood) == pytest.approx(expected, abs=1e-6)


def test_class_frequency_log_predictive_by_hand():
    t = np.array([0, 0, 0, 1, 2, 2])
    expected = (3 * np.log(3 / 6) + np.log(1 / 6) + 2 * np.log(2 / 6)) / 6
    assert class_frequency_log_predictive(t) == pytest.approx(expected)
    assert class_frequency_log_predictive(np.array([0, 1, 2, 3])) == pytest.approx(np.log(0.25))
    # an unseen class does not change the score
    assert class_frequency_log_predictive(t, n_classes=5) == pytest.approx(expected)


# ------------------------------------------------------------------ the plain core (Algorithm 11.1) and the driver
@pytest.mark.parametrize("selection", ["predictive", "entropy", "random"])
def test_core_and_driver_include_the_same_points(selection):
    """ivm_adf runs the core's point choice (step 2.1), shift (2.2) and inclusion (2.3), reading the kernel a
    column at a time: with the same rng both include the same points and return the same posterior."""
    rng = np.random.default_rng(11)
    X, t = make_three_class_toy(rng, 60, n_features=2)
    Ks = np.stack([SEKernel(variance=v, lengthscale=0.5).K(X) for v in (1.0, 2.0, 4.0)])
    core = ivm_core(Ks, t, 3, n_active=25, selection=selection, rng=3)
    driver = ivm_adf(lambda i: Ks[:, :, i], np.array([np.diag(K) for K in Ks]), t, n_active=25,
                     selection=selection, rng=3)  # fmt: skip
    np.testing.assert_array_equal(core.active_set, driver.active_set)
    np.testing.assert_allclose(core.mean, driver.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(core.var, driver.var, rtol=0, atol=1e-12)


def test_driver_refuses_a_bad_kernel_column_that_the_core_would_use():
    """The core trusts its covariance; the driver checks every column it reads and refuses the first bad one."""
    rng = np.random.default_rng(12)
    X, t = make_three_class_toy(rng, 30, n_features=2)
    K = SEKernel(variance=1.0, lengthscale=0.5).K(X)
    K_bad = K.copy()
    K_bad[:, 7] = np.nan
    K_bad[7, :] = np.nan
    with np.errstate(invalid="ignore"):
        core = ivm_core(K_bad, t, 3, n_active=30, selection="random", rng=0)
    assert not np.all(np.isfinite(core.mean))
    with pytest.raises(ValueError, match=r"kernel_column\(\d+\) must return a finite array"):
        ivm_adf(lambda i: K_bad[:, i][None, :], np.diag(K)[None, :], t, n_active=30, selection="random", rng=0)
