"""Tests of gpc_ref.vb_probit: truncated-Gaussian moments, the VB iterations, the bound, predictions, kernel learning."""

import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr
from scipy.special import logsumexp
from scipy.stats import norm

from gpc_ref import ConvergenceWarning
from gpc_ref.exact import quadrature_posterior
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.validation import check_class_codes
from gpc_ref.vb_probit import cone_mean_shift_monte_carlo
from gpc_ref.vb_probit import cone_truncated_mean
from gpc_ref.vb_probit import truncated_normal_mean
from gpc_ref.vb_probit import vb_lower_bound
from gpc_ref.vb_probit import vb_predict_latent
from gpc_ref.vb_probit import vb_predict_proba
from gpc_ref.vb_probit import vb_probit_binary
from gpc_ref.vb_probit import vb_probit_binary_core
from gpc_ref.vb_probit import vb_probit_multiclass
from gpc_ref.vb_probit import vb_probit_multiclass_core
from gpc_ref.vb_probit_learning import importance_sample_precisions
from gpc_ref.vb_probit_learning import kernel_from_precisions
from gpc_ref.vb_probit_learning import precisions_from_kernel
from gpc_ref.vb_probit_learning import update_psi
from gpc_ref.vb_probit_learning import vb_probit_learn_kernel


def _toy(n=25, seed=0, n_classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    angle = np.arctan2(X[:, 1], X[:, 0])
    t = np.floor((angle + np.pi) / (2 * np.pi) * n_classes).astype(int) % n_classes
    return X, t


def _cone_reference(t, m):
    """Z and E[y] of N(m, I) truncated to cone t by 1-D adaptive quadrature over y_t (independent of eq 4.3)."""
    K = len(m)
    others = [j for j in range(K) if j != t]

    def integrand(y, skip=None):
        value = norm.pdf(y - m[t])
        for j in others:
            if j != skip:
                value *= norm.cdf(y - m[j])
        return value

    lo, hi = m[t] - 12.0, max(m.max(), m[t]) + 12.0
    opts = dict(epsabs=0.0, epsrel=1e-11, limit=400)
    Z = integrate.quad(integrand, lo, hi, **opts)[0]
    mean = np.empty(K)
    mean[t] = integrate.quad(lambda y: y * integrand(y), lo, hi, **opts)[0] / Z
    for k in others:
        # ∫_{-∞}^{y} y_k φ(y_k − m_k) dy_k = m_k Φ(y − m_k) − φ(y − m_k)
        inner = lambda y, k=k: m[k] * norm.cdf(y - m[k]) - norm.pdf(y - m[k])
        mean[k] = integrate.quad(lambda y: integrand(y, skip=k) * inner(y), lo, hi, **opts)[0] / Z
    return np.log(Z), mean


# ----------------------------------------------------------------------------- truncated Gaussians
@pytest.mark.parametrize("m, t", [(0.3, 1), (0.3, -1), (-4.0, 1), (6.0, -1), (-30.0, 1), (25.0, -1)])
def test_binary_truncated_mean_matches_integration(m, t):
    lo, hi = (0.0, np.inf) if t > 0 else (-np.inf, 0.0)
    Z = integrate.quad(
        lambda y: np.exp(norm.logpdf(y - m) - log_ndtr(t * m)), lo, hi, epsabs=0, epsrel=1e-12, limit=200
    )[0]
    mean = integrate.quad(
        lambda y: y * np.exp(norm.logpdf(y - m) - log_ndtr(t * m)), lo, hi, epsabs=0, epsrel=1e-12, limit=200
    )[0]
    assert Z == pytest.approx(1.0, rel=1e-8)
    assert truncated_normal_mean(np.array([m]), np.array([t]))[0] == pytest.approx(mean, rel=1e-7, abs=1e-10)


@pytest.mark.parametrize(
    "row, t",
    [([0.3, -0.5, 1.2], 0), ([2.0, 0.0, -1.0, 0.4], 1), ([-1.0, 3.0, 0.5], 0), ([-4.0, 2.0, 1.5], 0), ([0.0, 0.0], 1)],
)
def test_cone_means_and_normaliser_match_integration(row, t):
    m = np.array(row)
    log_Z_ref, mean_ref = _cone_reference(t, m)
    Y, log_Z = cone_truncated_mean(np.array([t]), m[None, :])
    assert log_Z[0] == pytest.approx(log_Z_ref, abs=1e-9)
    np.testing.assert_allclose(Y[0], mean_ref, atol=1e-8)


def test_cone_means_match_rejection_sampling():
    rng = np.random.default_rng(3)
    m = np.array([0.5, 0.0, -0.3])
    draws = m + rng.standard_normal((400_000, 3))
    inside = draws[np.argmax(draws, axis=1) == 0]
    Y, log_Z = cone_truncated_mean(np.array([0]), m[None, :])
    se = inside.std(axis=0) / np.sqrt(len(inside))
    assert np.all(np.abs(inside.mean(axis=0) - Y[0]) < 5 * se)
    assert abs(len(inside) / len(draws) - np.exp(log_Z[0])) < 5 * np.sqrt(0.25 / len(draws))


def test_monte_carlo_estimator_is_close_for_moderate_values_and_reproducible():
    rng = np.random.default_rng(0)
    M = rng.normal(scale=0.5, size=(10, 3))
    t = rng.integers(0, 3, 10)
    P_gh, log_Z_gh = MultinomialProbitLikelihood().cone_mean_shift(t, M)
    P_mc, log_Z_mc = cone_mean_shift_monte_carlo(t, M, rng=1, n_samples=20_000)
    np.testing.assert_allclose(P_mc, P_gh, atol=0.03)
    np.testing.assert_allclose(log_Z_mc, log_Z_gh, atol=0.03)
    np.testing.assert_array_equal(
        cone_mean_shift_monte_carlo(t, M, rng=1)[0], cone_mean_shift_monte_carlo(t, M, rng=1)[0]
    )
    np.testing.assert_allclose(P_mc.sum(axis=1), 0.0, atol=1e-12)  # eq 4.4


# ----------------------------------------------------------------------------- binary VB
def _probit_map(C, t, iters=200):
    """Newton's method on log Φ(t f) − ½ fᵀC⁻¹f (an independent reference for the VB fixed point)."""
    f = np.zeros(len(t))
    lik = ProbitLikelihood()
    for _ in range(iters):
        d1, d2, _ = lik.derivatives(t, f)
        W = -d2
        f_new = C @ np.linalg.solve(np.eye(len(t)) + W[:, None] * C, W * f + d1)
        if np.max(np.abs(f_new - f)) < 1e-13:
            break
        f = f_new
    return f_new


def test_binary_bound_never_decreases_and_fixed_point_is_the_posterior_mode():
    X, t3 = _toy(30)
    t = np.where(t3 == 0, 1, -1)
    C = SEKernel(variance=3.0, lengthscale=0.8).K(X)
    r = vb_probit_binary(C, t, max_iter=5000, tol=1e-14, warn=False)
    assert np.all(np.diff(r.lower_bound) >= -1e-10)
    # at the fixed point α = p (stationarity of log Φ(t m) − ½ mᵀC⁻¹m), so m̃ is the MAP of the probit posterior
    np.testing.assert_allclose(r.M[:, 0], _probit_map(C, t), atol=1e-6)
    assert r.binary and r.converged


def test_binary_bound_is_below_exact_evidence():
    X = np.array([[0.0], [0.7], [2.0]])
    t = np.array([1, 1, -1])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(C, lambda f: ProbitLikelihood().log_p(np.broadcast_to(t, f.shape), f), n_nodes=60)
    r = vb_probit_binary(C, t, tol=1e-13)
    assert r.log_marginal_likelihood_bound < exact.log_evidence


def test_binary_accepts_zero_one_labels_and_warns_when_not_converged():
    X, t3 = _toy(20)
    C = SEKernel(variance=50.0).K(X)
    t01 = (t3 == 0).astype(int)
    a = vb_probit_binary(C, t01, max_iter=50, warn=False)
    b = vb_probit_binary(C, 2 * t01 - 1, max_iter=50, warn=False)
    np.testing.assert_array_equal(a.M, b.M)
    with pytest.warns(ConvergenceWarning, match="50 iterations"):
        vb_probit_binary(C, t01, max_iter=50, tol=1e-15)


# ----------------------------------------------------------------------------- K-class VB
def test_multiclass_bound_never_decreases_and_stationarity():
    X, t = _toy(30)
    C = SEKernel(variance=4.0, lengthscale=0.7).K(X)
    r = vb_probit_multiclass(C, t, max_iter=3000, tol=1e-13, warn=False)
    assert np.all(np.diff(r.lower_bound) >= -1e-9 * np.abs(r.lower_bound[1:]))
    # fixed point: α_k = (I + C)⁻¹(m̃_k + p_k) and m̃_k = C α_k  ⇒  α = P
    P, _ = MultinomialProbitLikelihood().cone_mean_shift(t, r.M)
    np.testing.assert_allclose(r.alpha, P, atol=1e-5)


# ------------------------------------------------------------------ the plain cores (Algorithms 9.1, 9.2) and the drivers
def test_cores_and_unaccelerated_drivers_are_the_same_iteration(rng):
    """The drivers run the cores' update and stopping test (through acceleration.fixed_point_iteration):
    unaccelerated from α = 0 they return the same iterate after the same number of steps."""
    for seed in range(12):
        X, t = _toy(int(rng.integers(8, 40)), seed=seed)
        K = SEKernel(variance=float(np.exp(rng.uniform(-1, 3))), lengthscale=float(np.exp(rng.uniform(-1, 1)))).K(X)
        y = np.where(t == 0, 1.0, -1.0)
        core, driver = vb_probit_binary_core(K, y, max_iter=5000), vb_probit_binary(K, y, max_iter=5000)
        assert core.converged and driver.converged and core.n_iter == driver.n_iter
        np.testing.assert_allclose(core.alpha, driver.alpha, rtol=0, atol=1e-13)
        core, driver = vb_probit_multiclass_core(K, t, 3, max_iter=5000), vb_probit_multiclass(K, t, max_iter=5000)
        assert core.converged and driver.converged and core.n_iter == driver.n_iter
        np.testing.assert_allclose(core.alpha, driver.alpha, rtol=0, atol=1e-13)
        assert core.lower_bound[-1] == pytest.approx(driver.lower_bound[-1], rel=1e-14)


def test_where_the_core_is_capped_the_driver_warns_or_accelerates_to_the_fixed_point():
    """On a large kernel the map contracts slowly: capped at 300 steps the core reports converged=False
    silently, the plain driver warns, and the accelerated driver reaches the fixed point of a long plain run."""
    X, t = _toy(30, seed=1)
    K = SEKernel(variance=100.0, lengthscale=0.6).K(X)
    y = np.where(t == 0, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capped = vb_probit_binary_core(K, y, max_iter=300, tol=1e-12)
    assert not capped.converged and capped.n_iter == 300
    with pytest.warns(ConvergenceWarning, match="300"):
        vb_probit_binary(K, y, max_iter=300, tol=1e-12)
    long_run = vb_probit_binary_core(K, y, max_iter=200000, tol=1e-12)  # about 1,300 steps
    fast = vb_probit_binary(K, y, max_iter=300, tol=1e-12, accelerate=True)
    assert long_run.converged and fast.converged and fast.n_iter < long_run.n_iter / 3
    # both within √tol·max(1, |α|) of the fixed point in α; M = K α carries the kernel's scale (σ_f² = 100)
    np.testing.assert_allclose(fast.alpha, long_run.alpha, atol=1e-5)
    np.testing.assert_allclose(fast.M, long_run.M, atol=1e-3)


def test_squarem_acceleration_reaches_the_same_fixed_point():
    X, t = _toy(30, seed=1)
    C = SEKernel(variance=30.0, lengthscale=0.6).K(X)
    plain = vb_probit_multiclass(C, t, max_iter=20000, tol=1e-14, warn=False)
    fast = vb_probit_multiclass(C, t, max_iter=20000, tol=1e-14, warn=False, accelerate=True)
    assert fast.n_iter < plain.n_iter / 3
    assert np.all(np.diff(fast.lower_bound) >= -1e-9 * np.abs(fast.lower_bound[1:]))
    assert fast.lower_bound[-1] >= plain.lower_bound[-1] - 1e-7
    np.testing.assert_allclose(fast.M, plain.M, atol=1e-3)
    P, _ = MultinomialProbitLikelihood().cone_mean_shift(t, fast.M)
    np.testing.assert_allclose(fast.alpha, P, atol=1e-5)  # the fixed point α = P
    tb = np.where(t == 0, 1, -1)
    plain_b = vb_probit_binary(C, tb, max_iter=20000, tol=1e-15, warn=False)
    fast_b = vb_probit_binary(C, tb, max_iter=20000, tol=1e-15, warn=False, accelerate=True)
    np.testing.assert_allclose(fast_b.M, plain_b.M, atol=1e-4)
    assert np.all(np.diff(fast_b.lower_bound) >= -1e-10)
    with pytest.warns(ConvergenceWarning, match="5 iterations"):
        vb_probit_multiclass(C, t, max_iter=5, accelerate=True)


def test_starting_from_another_kernels_q_z_reaches_the_same_fixed_point():
    """``z_init``: the first step is the Q(f) update from a given Q(z) (the bound learner's warm start)."""
    X, t = _toy(30, seed=1)
    C_old, C_new = (SEKernel(variance=v, lengthscale=0.6).K(X) for v in (20.0, 30.0))
    old = vb_probit_multiclass(C_old, t, max_iter=20000, tol=1e-14, accelerate=True)
    cold = vb_probit_multiclass(C_new, t, max_iter=20000, tol=1e-14, accelerate=True)
    warm = vb_probit_multiclass(C_new, t, max_iter=20000, tol=1e-14, accelerate=True, z_init=old.Y)
    assert warm.converged and warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.M, cold.M, atol=1e-5)
    # one plain step from z_init is the Q(f) update (I + K)⁻¹ z̃
    one = vb_probit_multiclass(C_new, t, max_iter=1, z_init=old.Y, warn=False)
    np.testing.assert_allclose(one.alpha, np.linalg.solve(np.eye(30) + C_new, old.Y), rtol=1e-9, atol=1e-12)
    tb = np.where(t == 0, 1, -1)
    old_b = vb_probit_binary(C_old, tb, max_iter=20000, tol=1e-14, accelerate=True)
    warm_b = vb_probit_binary(C_new, tb, max_iter=20000, tol=1e-14, accelerate=True, z_init=old_b.Y)
    cold_b = vb_probit_binary(C_new, tb, max_iter=20000, tol=1e-14, accelerate=True)
    np.testing.assert_allclose(warm_b.M, cold_b.M, atol=1e-5)
    with pytest.raises(ValueError, match="not both"):
        vb_probit_multiclass(C_new, t, alpha_init=old.alpha, z_init=old.Y)
    with pytest.raises(ValueError, match="z_init must have shape"):
        vb_probit_multiclass(C_new, t, z_init=old.Y[:, :2])


def test_per_class_kernels_match_shared_kernel_when_equal():
    X, t = _toy(20)
    C = SEKernel(variance=2.0, lengthscale=0.9).K(X)
    shared = vb_probit_multiclass(C, t, tol=1e-12)
    stacked = vb_probit_multiclass(np.stack([C, C, C]), t, tol=1e-12)
    np.testing.assert_allclose(stacked.M, shared.M, atol=1e-10)
    assert stacked.lower_bound[-1] == pytest.approx(shared.lower_bound[-1], abs=1e-8)
    different = vb_probit_multiclass(np.stack([C, 2 * C, 0.5 * C]), t, tol=1e-10)
    assert np.all(np.isfinite(different.lower_bound))


def test_simplified_bound_equals_appendix_c_terms():
    """Σ log Z − ½ m̃ᵀC⁻¹m̃ − ½ log|I+C| against the unsimplified App. C terms (dense, small n)."""
    X, t = _toy(12, seed=4)
    C = SEKernel(variance=1.5, lengthscale=0.9, jitter=1e-6).K(X)
    r = vb_probit_multiclass(C, t, max_iter=7, warn=False)
    n, K = r.M.shape
    Sigma = C @ np.linalg.solve(np.eye(n) + C, np.eye(n))
    _, log_det_C = np.linalg.slogdet(C)
    _, log_det_S = np.linalg.slogdet(Sigma)
    Cinv_Sigma = np.linalg.solve(C, Sigma)
    dense = (
        n * K / 2
        - 0.5 * K * np.trace(Sigma)
        - 0.5 * K * np.trace(Cinv_Sigma)
        - 0.5 * K * log_det_C
        + 0.5 * K * log_det_S
        + np.sum(r.log_Z)
        - 0.5 * sum(r.M[:, k] @ np.linalg.solve(C, r.M[:, k]) for k in range(K))
    )
    assert vb_lower_bound(r.log_Z, r.alpha, r.M, r.factors) == pytest.approx(dense, abs=1e-6)
    assert r.lower_bound[-1] == pytest.approx(dense, abs=1e-6)


def test_multiclass_bound_is_below_evidence_of_a_tiny_problem():
    X = np.array([[0.0], [0.8], [1.6]])
    t = np.array([0, 1, 2])
    C = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    r = vb_probit_multiclass(C, t, tol=1e-13)
    # reference log p(t) by averaging P(t | M) over 15 000 prior draws (P(t|M) is never tiny here)
    rng = np.random.default_rng(0)
    L = np.linalg.cholesky(C)
    draws = np.einsum("ij,sjk->sik", L, rng.standard_normal((15_000, 3, 3)))
    lik = MultinomialProbitLikelihood(24)
    log_p = lik.log_p(np.tile(t, 15_000), draws.reshape(-1, 3)).reshape(15_000, 3).sum(axis=1)
    reference = logsumexp(log_p) - np.log(len(log_p))
    assert r.log_marginal_likelihood_bound < reference - 0.1


def test_two_class_multiclass_equals_binary_classifier():
    """K = 2 with a shared kernel C is the binary probit on f = (m_1 − m_2)/√2 with kernel C."""
    X, t3 = _toy(30, seed=2)
    codes = (t3 == 0).astype(int)
    kernel = SEKernel(variance=2.5, lengthscale=0.8)
    C = kernel.K(X)
    binary = vb_probit_binary(C, np.where(codes == 1, 1, -1), max_iter=5000, tol=1e-15, warn=False)
    multi = vb_probit_multiclass(C, codes, max_iter=5000, tol=1e-15, warn=False)
    f = (multi.M[:, 1] - multi.M[:, 0]) / np.sqrt(2.0)
    np.testing.assert_allclose(f, binary.M[:, 0], atol=1e-6)
    X_new = np.random.default_rng(1).normal(size=(15, 2))
    p_binary = vb_predict_proba(binary, kernel.K(X, X_new), kernel.diag(X_new))
    p_multi = vb_predict_proba(multi, kernel.K(X, X_new), kernel.diag(X_new))
    np.testing.assert_allclose(p_multi, p_binary, atol=1e-6)
    # the redundant direction m_1 + m_2 costs the K = 2 bound exactly ½ log|I + C|
    assert multi.lower_bound[-1] - binary.lower_bound[-1] == pytest.approx(-0.5 * binary.factors[0].log_det, abs=1e-6)


def test_predictions_sum_to_one_and_latent_matches_dense_formula():
    X, t = _toy(25)
    kernel = SEKernel(variance=2.0, lengthscale=0.8)
    C = kernel.K(X)
    r = vb_probit_multiclass(C, t, tol=1e-10)
    X_new = np.random.default_rng(5).normal(scale=2.0, size=(40, 2))
    p = vb_predict_proba(r, kernel.K(X, X_new), kernel.diag(X_new))
    assert p.shape == (40, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    mean, var = vb_predict_latent(r, kernel.K(X, X_new), kernel.diag(X_new))
    Ks = kernel.K(X, X_new)
    A = np.linalg.solve(np.eye(25) + C, Ks)
    np.testing.assert_allclose(mean, Ks.T @ r.alpha, atol=1e-10)
    np.testing.assert_allclose(var[:, 0], kernel.diag(X_new) - np.sum(Ks * A, axis=0), atol=1e-10)


# ----------------------------------------------------------------------------- kernel learning
def test_precision_lengthscale_mapping():
    kernel = SEKernel(variance=2.0, lengthscale=[0.5, 2.0])
    phi = precisions_from_kernel(kernel)
    np.testing.assert_allclose(phi, [2.0, 0.125])
    back = kernel_from_precisions(kernel, phi)
    np.testing.assert_allclose(back.lengthscale, [0.5, 2.0])
    assert back.variance == 2.0
    x = np.array([[0.3, -1.0]])
    z = np.array([[1.0, 0.5]])
    # G&R's kernel exp(−Σ φ_d (x_d − z_d)²) times the variance
    assert kernel.K(x, z)[0, 0] == pytest.approx(2.0 * np.exp(-np.sum(phi * (x - z) ** 2)))
    np.testing.assert_allclose(update_psi(np.array([1.0, 3.0]), 1e-3, 1e-3), [1.001 / 1.001, 1.001 / 3.001])


def test_importance_weights_match_a_dense_computation():
    """log w_s = Σ_k [log N(m̃_k|0, C_s) − ½ tr(C_s⁻¹ Σ)] with Σ = C̃ (I + C̃)⁻¹ formed densely."""
    X, t = _toy(20, seed=6)
    kernel = SEKernel(lengthscale=[0.6, 0.9], jitter=1e-6)
    r = vb_probit_multiclass(kernel.K(X), t, tol=1e-8)
    psi = np.array([0.7, 1.3])
    draws = np.random.default_rng(9).exponential(1.0 / psi, size=(25, 2))
    C_cur = kernel.K(X)
    Sigma = C_cur @ np.linalg.solve(np.eye(20) + C_cur, np.eye(20))
    log_w = []
    for phi in draws:
        C = kernel_from_precisions(kernel, phi).K(X)
        log_w.append(
            sum(-0.5 * r.M[:, k] @ np.linalg.solve(C, r.M[:, k]) for k in range(3))
            - 1.5 * np.linalg.slogdet(C)[1]
            - 1.5 * np.trace(np.linalg.solve(C, Sigma))
        )
    log_w = np.array(log_w)
    w = np.exp(log_w - logsumexp(log_w))
    step = importance_sample_precisions(kernel, X, r.M, psi, rng=9, n_samples=25)
    np.testing.assert_allclose(step.phi_mean, w @ draws, rtol=1e-6)
    assert step.effective_sample_size == pytest.approx(1 / np.sum(w**2), rel=1e-6)


def test_importance_step_is_reproducible_and_sane():
    X, t = _toy(25)
    kernel = SEKernel(lengthscale=[0.7, 0.7])
    r = vb_probit_multiclass(kernel.K(X), t, tol=1e-8)
    psi = update_psi(precisions_from_kernel(kernel))
    for include_trace in (True, False):
        a = importance_sample_precisions(kernel, X, r.M, psi, rng=7, n_samples=40, include_trace=include_trace)
        b = importance_sample_precisions(kernel, X, r.M, psi, rng=7, n_samples=40, include_trace=include_trace)
        np.testing.assert_array_equal(a.phi_mean, b.phi_mean)
        assert np.all(a.phi_mean > 0) and 1.0 <= a.effective_sample_size <= 40.0 + 1e-9


def test_kernel_learning_runs_reproducibly_and_records_its_history():
    """Mechanics only: whether ARD switches inputs off is a stochastic search shown in the chapter."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    t = np.digitize(X[:, 0], [-0.5, 0.5])
    kernel = SEKernel(lengthscale=np.full(2, 1 / np.sqrt(2)))
    learning = vb_probit_learn_kernel(kernel, X, t, rng=3, n_iter=4, n_importance_samples=30)
    assert learning.phi_history.shape == (5, 1, 2) and np.all(learning.phi_history > 0)
    np.testing.assert_allclose(learning.phi_history[0, 0], [1.0, 1.0])
    assert learning.alpha_history.shape == (4, 40, 3) and learning.effective_sample_size.shape == (4, 1)
    np.testing.assert_allclose(precisions_from_kernel(learning.kernels[0]), learning.phi_history[-1, 0])
    again = vb_probit_learn_kernel(kernel, X, t, rng=3, n_iter=4, n_importance_samples=30)
    np.testing.assert_array_equal(again.phi_history, learning.phi_history)
    # per-class kernels learn one φ per class; the binary model one GP
    per_class = vb_probit_learn_kernel([kernel] * 3, X, t, rng=3, n_iter=2, n_importance_samples=10)
    assert per_class.phi_history.shape == (3, 3, 2) and len(per_class.kernels) == 3
    binary = vb_probit_learn_kernel(
        SEKernel(lengthscale=[1.0, 1.0]),
        X,
        np.where(t == 2, 1, -1),
        rng=3,
        n_iter=2,
        n_importance_samples=10,
        binary=True,
    )
    assert binary.alpha_history.shape == (2, 40, 1)
    # with a fixed kernel (no importance steps) the first bound equals the plain VB's first bound
    plain = vb_probit_multiclass(kernel.K(X), t, max_iter=2, warn=False)
    assert learning.lower_bound[0] == pytest.approx(plain.lower_bound[1], abs=1e-10)


# ----------------------------------------------------------------------------- bad inputs
def test_bad_labels_give_clear_errors():
    X, t = _toy(12)
    C = SEKernel().K(X)
    with pytest.raises(ValueError, match="outside 0..2"):
        vb_probit_multiclass(C, np.where(t == 0, 3, t), n_classes=3)
    with pytest.raises(ValueError, match="no examples"):
        vb_probit_multiclass(C, np.where(t == 1, 0, t), n_classes=3)
    with pytest.raises(ValueError, match="integer class codes"):
        vb_probit_multiclass(C, t + 0.5)
    with pytest.raises(ValueError, match="12 class codes"):
        vb_probit_multiclass(C, t[:-1])
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        vb_probit_binary(C, t)
    with pytest.raises(ValueError, match="symmetric"):
        vb_probit_multiclass(C + np.triu(np.ones_like(C), 1), t)
    with pytest.raises(ValueError, match=r"one matrix or one per class \(3\)"):
        vb_probit_multiclass(np.stack([C, C]), t, n_classes=3)
    with pytest.raises(ValueError, match="n_classes"):
        check_class_codes(np.zeros(3), 3, 1)


def test_hard_inputs_stay_finite():
    """Duplicate points, a huge variance and extreme lengthscales: finite bounds and probabilities."""
    X, t = _toy(20)
    X = np.vstack([X, X[:3]])
    t = np.concatenate([t, t[:3]])
    for kernel in (
        SEKernel(variance=1e6, lengthscale=1.0, jitter=1e-6),
        SEKernel(lengthscale=1e-3),
        SEKernel(lengthscale=1e3, jitter=1e-6),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            r = vb_probit_multiclass(kernel.K(X), t, max_iter=300)
        p = vb_predict_proba(r, kernel.K(X, X[:5]), kernel.diag(X[:5]))
        assert np.all(np.isfinite(r.lower_bound)) and np.all(np.isfinite(p))
        assert np.all(np.diff(r.lower_bound) >= -1e-6 * np.abs(r.lower_bound[1:]))


def test_rng_and_options_are_keyword_only():
    X, t = _toy(12)
    kernel = SEKernel()
    C = kernel.K(X)
    M = np.zeros((12, 3))
    with pytest.raises(TypeError):
        vb_probit_learn_kernel(kernel, X, t, 3)
    with pytest.raises(TypeError):
        importance_sample_precisions(kernel, X, M, np.ones(1), 3)
    with pytest.raises(ValueError, match="n_samples"):
        importance_sample_precisions(kernel, X, M, np.ones(1), rng=3, n_samples=0)
    with pytest.raises(TypeError):
        cone_mean_shift_monte_carlo(t, M, 3)
    with pytest.raises(TypeError):
        vb_probit_multiclass(C, t, 3)
    # check_class_codes (now in gpc_ref.validation) can accept a class without examples when asked
    codes, n_classes = check_class_codes(np.array([0, 0, 2]), 3, 4, require_all=False)
    assert n_classes == 4 and codes.tolist() == [0, 0, 2]
    with pytest.raises(ValueError, match="no examples"):
        check_class_codes(np.array([0, 0, 2]), 3, 4)
