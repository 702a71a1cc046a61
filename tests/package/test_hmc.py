"""Tests of gpc_ref.hmc: the generic Hybrid Monte Carlo sampler, its diagnostics, and HMC over
GP hyperparameters with the Laplace evidence (Williams & Barber 1997).

- invariance: HMC targeting a correlated 2-D Gaussian reproduces its moments within a few
  Monte Carlo standard errors (standard error = sd / √ESS);
- the leapfrog map is time reversible to rounding and its energy error is O(ε²);
- a mass matrix is the same chain as unit mass in rescaled coordinates (Neal 2011 §5.4.1);
- NaN/inf energies and numerical failures are rejections, never NaN states;
- same seed → same chain; bad arguments → ValueError;
- laplace_hmc on a tiny problem: finite, reproducible, prior mapped to W&B's coordinates;
- laplace_hmc_predict: the mixture over the samples of the fixed-θ Laplace predictions.
"""

import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient

from gpc_ref import ConvergenceWarning
from gpc_ref.exact import effective_sample_size
from gpc_ref.hmc import HMCPrediction
from gpc_ref.hmc import HMCResult
from gpc_ref.hmc import LaplaceHMCResult
from gpc_ref.hmc import hmc_sample
from gpc_ref.hmc import laplace_hmc
from gpc_ref.hmc import laplace_hmc_predict
from gpc_ref.hmc import leapfrog
from gpc_ref.hmc import wb_log_posterior
from gpc_ref.hyperpriors import gaussian_log_prior
from gpc_ref.hyperpriors import wb_scale
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import ProbitLikelihood

N_SIGMA = 4.0  # Monte Carlo agreement is asserted within this many standard errors

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.9], [0.9, 2.0]])
PRECISION = np.linalg.solve(COV, np.eye(2))


def gaussian_target(x):
    """log N(x | MEAN, COV) up to a constant, and its gradient."""
    r = x - MEAN
    return -0.5 * r @ PRECISION @ r, -PRECISION @ r


def quartic_target(x):
    """A smooth non-Gaussian target: log π = −½ xᵀ Σ⁻¹ x − 0.1 Σ x⁴."""
    return -0.5 * x @ PRECISION @ x - 0.1 * np.sum(x**4), -PRECISION @ x - 0.4 * x**3


def hamiltonian(target, x, p, mass=1.0):
    return -target(x)[0] + 0.5 * np.sum(p**2 / mass)


# ----------------------------------------------------------------------------- invariance
def test_hmc_reproduces_gaussian_moments():
    run = hmc_sample(
        gaussian_target, np.array([4.0, 3.0]), rng=7, step_size=0.25, n_leapfrog=8, n_iter=4000, burn_in=200
    )
    assert isinstance(run, HMCResult)
    assert run.samples.shape == (3800, 2) and run.all_samples.shape == (4000, 2)
    assert 0.8 < run.acceptance_rate <= 1.0
    x = run.samples
    r = x - MEAN
    # each statistic E[g(x)] with its exact value under N(MEAN, COV)
    checks = {
        "mean0": (x[:, 0], MEAN[0]),
        "mean1": (x[:, 1], MEAN[1]),
        "var0": (r[:, 0] ** 2, COV[0, 0]),
        "var1": (r[:, 1] ** 2, COV[1, 1]),
        "cov01": (r[:, 0] * r[:, 1], COV[0, 1]),
    }
    for name, (g, exact) in checks.items():
        std_error = g.std() / np.sqrt(effective_sample_size(g))
        assert abs(g.mean() - exact) < N_SIGMA * std_error, (name, g.mean(), exact, std_error)


def test_hmc_log_prob_and_bookkeeping_consistent():
    run = hmc_sample(gaussian_target, np.zeros(2), rng=3, step_size=0.3, n_leapfrog=5, n_iter=50)
    assert run.burn_in == 50 // 3
    np.testing.assert_allclose(run.log_prob, [gaussian_target(x)[0] for x in run.all_samples], rtol=1e-12)
    # a rejected iteration repeats the previous state
    for i in np.flatnonzero(~run.accepted[1:]) + 1:
        np.testing.assert_array_equal(run.all_samples[i], run.all_samples[i - 1])
    assert run.n_evaluations == 1 + 50 * 5
    assert np.all(np.isfinite(run.energy_error))


# ----------------------------------------------------------------------------- leapfrog
@pytest.mark.parametrize("target", [gaussian_target, quartic_target])
def test_leapfrog_is_reversible(target):
    rng = np.random.default_rng(0)
    x0, p0 = rng.normal(size=2), rng.normal(size=2)
    mass = np.array([1.0, 2.5])
    forward = leapfrog(target, x0, p0, step_size=0.1, n_leapfrog=25, mass=mass)
    back = leapfrog(target, forward.x, -forward.p, step_size=0.1, n_leapfrog=25, mass=mass)
    assert forward.finite and back.finite
    np.testing.assert_allclose(back.x, x0, atol=1e-10)
    np.testing.assert_allclose(back.p, -p0, atol=1e-10)


def test_leapfrog_energy_error_is_second_order():
    rng = np.random.default_rng(1)
    x0, p0 = rng.normal(size=2), rng.normal(size=2)
    errors = []
    for step_size in (0.02, 0.01, 0.005):
        # same trajectory length εL = 1
        end = leapfrog(quartic_target, x0, p0, step_size=step_size, n_leapfrog=int(round(1 / step_size)))
        errors.append(abs(hamiltonian(quartic_target, end.x, end.p) - hamiltonian(quartic_target, x0, p0)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert errors[0] < 1e-2
    assert np.all((ratios > 3.5) & (ratios < 4.5)), ratios


def test_leapfrog_steps_compose():
    x0, p0 = np.array([0.3, -0.2]), np.array([1.0, 0.5])
    whole = leapfrog(quartic_target, x0, p0, step_size=0.1, n_leapfrog=6)
    first = leapfrog(quartic_target, x0, p0, step_size=0.1, n_leapfrog=2)
    rest = leapfrog(quartic_target, first.x, first.p, step_size=0.1, n_leapfrog=4, grad=first.grad)
    np.testing.assert_allclose(rest.x, whole.x, rtol=1e-12)
    np.testing.assert_allclose(rest.p, whole.p, rtol=1e-12)
    assert whole.n_evaluations == 7 and rest.n_evaluations == 4


def test_mass_is_rescaled_coordinates():
    """Neal (2011) §5.4.1: mass m_j in x equals unit mass in z = √m x, draw for draw."""
    mass = np.array([4.0, 0.25])
    root = np.sqrt(mass)

    def target_z(z):
        log_prob, grad = quartic_target(z / root)
        return log_prob, grad / root

    run_x = hmc_sample(quartic_target, np.array([0.5, 0.5]), rng=11, step_size=0.1, n_leapfrog=10, n_iter=40, mass=mass)
    run_z = hmc_sample(target_z, root * np.array([0.5, 0.5]), rng=11, step_size=0.1, n_leapfrog=10, n_iter=40)
    np.testing.assert_allclose(run_z.all_samples, run_x.all_samples * root, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(run_z.accepted, run_x.accepted)


# ----------------------------------------------------------------------------- robustness
def test_nan_energy_proposals_are_rejected():
    def target(x):
        if x[0] > 1.0:
            return np.nan, np.full(2, np.nan)
        return gaussian_target(x)

    run = hmc_sample(target, np.array([0.0, -2.0]), rng=5, step_size=0.5, n_leapfrog=10, n_iter=300)
    assert np.all(np.isfinite(run.all_samples)) and np.all(np.isfinite(run.log_prob))
    assert np.all(run.all_samples[:, 0] <= 1.0)
    assert run.n_nonfinite > 0
    assert np.all(run.energy_error[~np.isfinite(run.energy_error)] == np.inf)


def test_numerical_failure_and_infinite_gradient_are_rejected():
    def target(x):
        if x[1] > 0.0:
            raise np.linalg.LinAlgError("not positive definite")
        if x[1] < -4.0:
            return 0.0, np.array([0.0, np.inf])
        return gaussian_target(x)

    run = hmc_sample(target, np.array([1.0, -2.0]), rng=6, step_size=0.6, n_leapfrog=10, n_iter=200)
    assert np.all(np.isfinite(run.all_samples))
    assert np.all((run.all_samples[:, 1] <= 0.0) & (run.all_samples[:, 1] >= -4.0))
    assert run.n_nonfinite > 0


def test_huge_step_size_warns_and_stays_finite():
    with pytest.warns(ConvergenceWarning, match="accepted none"):
        run = hmc_sample(quartic_target, np.array([0.1, 0.1]), rng=2, step_size=50.0, n_leapfrog=5, n_iter=20)
    np.testing.assert_array_equal(run.all_samples, np.tile([0.1, 0.1], (20, 1)))
    assert run.acceptance_rate == 0.0


def test_same_seed_same_chain():
    kwargs = dict(step_size=0.2, n_leapfrog=7, n_iter=60)
    a = hmc_sample(quartic_target, np.zeros(2), rng=123, **kwargs)
    b = hmc_sample(quartic_target, np.zeros(2), rng=np.random.default_rng(123), **kwargs)
    c = hmc_sample(quartic_target, np.zeros(2), rng=124, **kwargs)
    np.testing.assert_array_equal(a.all_samples, b.all_samples)
    np.testing.assert_array_equal(a.accepted, b.accepted)
    assert not np.array_equal(a.all_samples, c.all_samples)


@pytest.mark.parametrize(
    "changes, match",
    [
        (dict(step_size=0.0), "step_size"),
        (dict(step_size=-0.1), "step_size"),
        (dict(step_size=np.nan), "step_size"),
        (dict(n_leapfrog=0), "n_leapfrog"),
        (dict(n_leapfrog=2.5), "n_leapfrog"),
        (dict(n_iter=0), "n_iter"),
        (dict(burn_in=10), "burn_in"),
        (dict(burn_in=-1), "burn_in"),
        (dict(mass=[1.0, 2.0, 3.0]), "mass"),
        (dict(mass=-1.0), "mass"),
        (dict(x0=[np.nan, 0.0]), "x0"),
        (dict(x0=[5.0, 0.0]), "x0"),
        (dict(rng=None), "rng"),
        (dict(log_prob_and_grad="not callable"), "log_prob_and_grad"),
    ],
)
def test_bad_arguments_raise(changes, match):
    def target(x):  # −inf outside the unit square
        return (0.0, np.zeros(2)) if np.all(np.abs(x) < 1) else (-np.inf, np.zeros(2))

    kwargs = dict(log_prob_and_grad=target, x0=[0.0, 0.0], rng=0, n_iter=10, n_leapfrog=2)
    kwargs.update(changes)
    with pytest.raises(ValueError, match=match):
        hmc_sample(**kwargs)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        hmc_sample(gaussian_target, np.zeros(2), 0)
    with pytest.raises(TypeError):
        leapfrog(gaussian_target, np.zeros(2), np.ones(2), 0.1, 3)


def test_gradient_of_wrong_shape_raises():
    with pytest.raises(ValueError, match="gradient"):
        hmc_sample(lambda x: (0.0, np.zeros(3)), np.zeros(2), rng=0, n_iter=2)


# ----------------------------------------------------------------------------- W&B coordinates and prior
def test_wb_scale_and_prior():
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 3.0], bias=0.5)
    assert kernel.theta_names == ["log_variance", "log_lengthscale[0]", "log_lengthscale[1]", "log_bias"]
    np.testing.assert_array_equal(wb_scale(kernel), [1.0, -2.0, -2.0, 1.0])
    # W&B (1997) eq 8: w_l = 1/ℓ_l², so log w_l = −2 log ℓ_l
    phi = wb_scale(kernel) * kernel.theta
    np.testing.assert_allclose(np.exp(phi[1:3]), 1.0 / np.array([1.0, 3.0]) ** 2)
    log_prior, grad = gaussian_log_prior(phi)
    from scipy.stats import norm

    assert log_prior == pytest.approx(norm(-3.0, 3.0).logpdf(phi).sum())
    np.testing.assert_allclose(grad, finite_difference_gradient(lambda v: gaussian_log_prior(v)[0], phi), rtol=1e-6)
    with pytest.raises(ValueError, match="kernel"):
        wb_scale("SE")


# ----------------------------------------------------------------------------- HMC over GP hyperparameters
def tiny_problem(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_wb_log_posterior_gradient_matches_finite_differences():
    X, y = tiny_problem()
    kernel = SEKernel(variance=1.0, lengthscale=[1.0, 2.0])
    phi = np.array([0.7, -0.5, -2.0])
    point = wb_log_posterior(kernel, X, y, phi)
    numeric = finite_difference_gradient(lambda v: wb_log_posterior(kernel, X, y, v).value, phi, step=1e-5)
    np.testing.assert_allclose(point.gradient, numeric, rtol=1e-5, atol=1e-7)
    # the parts add up, and the evidence is the Laplace evidence at θ = φ / A
    from gpc_ref.laplace import laplace_evidence

    theta = phi / wb_scale(kernel)
    assert point.log_evidence == pytest.approx(laplace_evidence(kernel.with_theta(theta), X, y).log_evidence)
    assert point.value == pytest.approx(point.log_evidence + gaussian_log_prior(phi)[0])


def test_laplace_hmc_tiny_problem_finite_and_reproducible():
    X, y = tiny_problem()
    kernel = SEKernel(variance=1.0, lengthscale=np.full(2, np.e))
    run = laplace_hmc(kernel, X, y, rng=3, n_iter=12, n_leapfrog=5)
    again = laplace_hmc(kernel, X, y, rng=3, n_iter=12, n_leapfrog=5)
    assert isinstance(run, LaplaceHMCResult)
    assert run.thetas.shape == (8, 3) and run.all_thetas.shape == (12, 3)
    assert np.all(np.isfinite(run.all_thetas)) and np.all(np.isfinite(run.log_posterior))
    np.testing.assert_array_equal(run.all_thetas, again.all_thetas)
    np.testing.assert_allclose(run.phis, run.thetas * wb_scale(kernel))
    assert 0.0 <= run.acceptance_rate <= 1.0 and run.n_unconverged == 0 and run.n_newton > 0
    # the stored evidence is the Laplace evidence of the stored state
    last = wb_log_posterior(kernel, X, y, run.phis[-1])
    assert run.log_evidence[-1] == pytest.approx(last.log_evidence, rel=1e-6)
    assert len(run.kernels()) == 8
    # W&B's defaults: first third discarded
    assert run.hmc.burn_in == 4 and run.hmc.n_leapfrog == 5 and run.hmc.step_size == 0.1


def manual_hmc_prediction(run, X, y, X_test, method="erf_mixture", likelihood=None):
    """W&B eq 9 by hand: cold-started Laplace predictions at every retained sample, then their mixture."""
    from gpc_ref.laplace import laplace_mode
    from gpc_ref.laplace import laplace_predict_latent
    from gpc_ref.laplace import laplace_predict_proba

    means, variances, probas = [], [], []
    for kernel in run.kernels():
        mode = laplace_mode(kernel.K(X), y, likelihood=likelihood)
        mean, var = laplace_predict_latent(mode, kernel, X, X_test)
        means.append(mean)
        variances.append(var)
        probas.append(laplace_predict_proba(mean, var, method=method, likelihood=likelihood))
    means, variances = np.array(means), np.array(variances)
    mixture_mean = means.mean(axis=0)
    # law of total variance: E[var] + Var[mean]
    mixture_var = variances.mean(axis=0) + means.var(axis=0)
    return mixture_mean, mixture_var, np.mean(probas, axis=0)


def test_laplace_hmc_predictions_average_fixed_theta_predictions():
    X, y = tiny_problem()
    X_test = np.array([[0.5, 0.0], [-1.0, 1.0], [3.0, -3.0]])
    run = laplace_hmc(SEKernel(variance=1.0, lengthscale=np.full(2, np.e)), X, y, rng=4, n_iter=9, n_leapfrog=4)
    prediction = laplace_hmc_predict(run, X, y, X_test)
    assert isinstance(prediction, HMCPrediction)
    assert prediction.mean.shape == prediction.var.shape == prediction.proba.shape == (3,)
    mean, var, proba = manual_hmc_prediction(run, X, y, X_test)
    np.testing.assert_allclose(prediction.proba, proba, rtol=1e-7)
    np.testing.assert_allclose(prediction.mean, mean, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(prediction.var, var, rtol=1e-7, atol=1e-10)
    assert np.all((prediction.proba > 0) & (prediction.proba < 1)) and np.all(prediction.var > 0)
    # the mixture is at least as uncertain as its average component
    from gpc_ref.laplace import laplace_mode
    from gpc_ref.laplace import laplace_predict_latent

    component_var = np.mean(
        [laplace_predict_latent(laplace_mode(k.K(X), y), k, X, X_test)[1] for k in run.kernels()], axis=0
    )
    assert np.all(prediction.var >= component_var - 1e-12)


def test_laplace_hmc_prediction_options():
    X, y = tiny_problem()
    X_test = np.array([[0.5, 0.0], [-1.0, 1.0]])
    run = laplace_hmc(SEKernel(variance=1.0, lengthscale=np.full(2, np.e)), X, y, rng=5, n_iter=6, n_leapfrog=3)
    mackay = laplace_hmc_predict(run, X, y, X_test, method="mackay")
    np.testing.assert_allclose(mackay.proba, manual_hmc_prediction(run, X, y, X_test, method="mackay")[2], rtol=1e-7)
    # the squashing rule changes only the probabilities, never the latent mixture
    default = laplace_hmc_predict(run, X, y, X_test)
    np.testing.assert_array_equal(mackay.mean, default.mean)
    np.testing.assert_array_equal(mackay.var, default.var)
    # a chain with the probit likelihood predicts with it: Φ(μ/√(1+s²)) averaged over the samples
    probit_run = laplace_hmc(
        SEKernel(variance=1.0, lengthscale=np.full(2, np.e)),
        X,
        y,
        rng=5,
        n_iter=6,
        n_leapfrog=3,
        likelihood=ProbitLikelihood(),
    )
    probit = laplace_hmc_predict(probit_run, X, y, X_test, likelihood=ProbitLikelihood())
    mean, var, proba = manual_hmc_prediction(probit_run, X, y, X_test, likelihood=ProbitLikelihood())
    np.testing.assert_allclose(probit.proba, proba, rtol=1e-7)
    np.testing.assert_allclose(probit.mean, mean, rtol=1e-7, atol=1e-10)


def test_laplace_hmc_matches_grid_posterior():
    """End to end: HMC moments of (log v0, log w) agree with quadrature on a grid (isotropic kernel)."""
    X, y = tiny_problem(n=10, seed=1)
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    grid = np.linspace(-12.0, 6.0, 21)
    log_post = np.array([[wb_log_posterior(kernel, X, y, [a, b]).value for b in grid] for a in grid])
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    A, B = np.meshgrid(grid, grid, indexing="ij")
    exact_mean = np.array([np.sum(weights * A), np.sum(weights * B)])
    run = laplace_hmc(kernel, X, y, rng=9, step_size=0.5, n_leapfrog=5, n_iter=160, burn_in=20)
    for j in range(2):
        chain = run.phis[:, j]
        std_error = chain.std() / np.sqrt(effective_sample_size(chain))
        assert abs(chain.mean() - exact_mean[j]) < N_SIGMA * std_error + 0.1, (j, chain.mean(), exact_mean[j])


def test_laplace_hmc_bad_arguments():
    X, y = tiny_problem()
    kernel = SEKernel(lengthscale=[1.0, 1.0])
    with pytest.raises(ValueError, match="kernel"):
        laplace_hmc("SE", X, y, rng=0)
    with pytest.raises(ValueError, match="one label per point"):
        laplace_hmc(kernel, X, y[:-1], rng=0)
    with pytest.raises(ValueError, match="prior_sd"):
        laplace_hmc(kernel, X, y, rng=0, prior_sd=0.0)
    with pytest.raises(ValueError, match="y"):
        laplace_hmc(kernel, X, np.arange(len(y)), rng=0)
    with pytest.raises(ValueError, match="rng"):
        laplace_hmc(kernel, X, y, rng=None)
    with pytest.raises(ValueError, match="result"):
        laplace_hmc_predict("run", X, y, X)
    run = laplace_hmc(kernel, X, y, rng=0, n_iter=3, n_leapfrog=2)
    with pytest.raises(ValueError, match="X_test"):
        laplace_hmc_predict(run, X, y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="method"):
        laplace_hmc_predict(run, X, y, X, method="probit")
    with pytest.raises(TypeError):
        laplace_hmc(kernel, X, y, 0)  # rng is keyword-only


@pytest.mark.parametrize(
    "kernel", [SEKernel(variance=1e6, lengthscale=[1e-3, 1e3]), SEKernel(variance=1e-6, lengthscale=[1e3, 1e3])]
)
def test_laplace_hmc_hard_inputs_stay_finite(kernel):
    """Extreme starting hyperparameters and duplicated inputs: no NaN, no warning."""
    X, y = tiny_problem()
    X, y = np.vstack([X, X[:3]]), np.concatenate([y, y[:3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = laplace_hmc(kernel, X, y, rng=0, n_iter=6, n_leapfrog=4)
        prediction = laplace_hmc_predict(run, X, y, X[:4])
    assert np.all(np.isfinite(run.all_thetas)) and np.all(np.isfinite(run.log_posterior))
    assert np.all((prediction.proba >= 0) & (prediction.proba <= 1))
    assert np.all(np.isfinite(prediction.mean)) and np.all(prediction.var >= 0)


def test_progress_bar_runs():
    pytest.importorskip("tqdm")
    run = hmc_sample(gaussian_target, np.zeros(2), rng=0, n_iter=3, n_leapfrog=2, progress=True)
    assert run.all_samples.shape == (3, 2)
