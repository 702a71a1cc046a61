"""Tests of gpc_ref.hyperparameters: W&B's coordinates and priors, and the one maximiser.

The maximiser is checked on problems with known optima (a quadratic, Rosenbrock's function, a
quadratic whose optimum lies outside the box), on its restarts, on objectives that cannot be
evaluated everywhere, and on its convergence report.
"""

import warnings

import numpy as np
import pytest
from conftest import finite_difference_gradient
from scipy.optimize import rosen
from scipy.optimize import rosen_der
from scipy.stats import norm

import gpc_ref
from gpc_ref.hyperparameters import LOG_PARAMETER_BOUNDS
from gpc_ref.hyperparameters import POLISH
from gpc_ref.hyperparameters import HyperparameterFit
from gpc_ref.hyperparameters import box
from gpc_ref.hyperparameters import free_mask
from gpc_ref.hyperparameters import maximize
from gpc_ref.hyperparameters import theta_box
from gpc_ref.hyperparameters import theta_names
from gpc_ref.hyperpriors import gaussian_log_prior
from gpc_ref.hyperpriors import log_hyperprior
from gpc_ref.hyperpriors import wb_scale
from gpc_ref.kernels import SEKernel
from gpc_ref.validation import HyperparameterBoundWarning


def quadratic(centre, curvature):
    """theta -> (−½ Σ c_j (θ_j − m_j)², gradient): maximum 0 at m."""
    centre, curvature = np.asarray(centre, dtype=float), np.asarray(curvature, dtype=float)

    def objective(theta):
        d = theta - centre
        return -0.5 * float(curvature @ d**2), -curvature * d

    return objective


def negative_rosenbrock(theta):
    return -rosen(theta), -rosen_der(theta)


def assert_converged(fit):
    assert fit.converged
    assert fit.gradient_norm <= fit.tolerance
    assert fit.tolerance == pytest.approx(1e-5 * max(1.0, abs(fit.value)))


# --------------------------------------------------------------------------- W&B coordinates and priors
def test_wb_scale_maps_log_lengthscales_to_log_inverse_squares():
    kernel = SEKernel(variance=2.0, lengthscale=[0.5, 4.0], bias=0.3, jitter=0.01, learn_jitter=True)
    scale = wb_scale(kernel)
    np.testing.assert_array_equal(scale, [1.0, -2.0, -2.0, 1.0, 1.0])
    phi = scale * kernel.theta
    # φ = (log v0, log w_1, log w_2, log v1, log jitter) with w_l = 1/ℓ_l²
    np.testing.assert_allclose(phi, np.log([2.0, 1 / 0.5**2, 1 / 4.0**2, 0.3, 0.01]))
    np.testing.assert_array_equal(wb_scale(SEKernel()), [1.0, -2.0])
    with pytest.raises(ValueError, match="SEKernel"):
        wb_scale("not a kernel")


def test_gaussian_log_prior_value_and_gradient():
    phi = np.array([-3.0, 0.5, -7.2, 2.0])
    value, gradient = gaussian_log_prior(phi, -3.0, 3.0)
    assert value == pytest.approx(np.sum(norm.logpdf(phi, -3.0, 3.0)), rel=1e-13)
    np.testing.assert_allclose(
        gradient, finite_difference_gradient(lambda p: gaussian_log_prior(p, -3.0, 3.0)[0], phi), rtol=1e-7, atol=1e-9
    )
    assert gradient[0] == 0.0  # the prior mean is its maximum
    value, gradient = gaussian_log_prior(phi, prior_mean=1.0, prior_sd=0.5)
    np.testing.assert_allclose(gradient, -(phi - 1.0) / 0.25)
    with pytest.raises(ValueError, match="prior_sd"):
        gaussian_log_prior(phi, -3.0, 0.0)


@pytest.mark.parametrize(
    "kernel",
    [
        SEKernel(variance=2.0, lengthscale=1.5),
        SEKernel(variance=0.7, lengthscale=[0.5, 4.0, 2.0], bias=0.3),
        SEKernel(variance=5.0, lengthscale=[3.0, 0.2], bias=0.1, jitter=0.05, learn_jitter=True),
    ],
)
def test_log_hyperprior_gradient_matches_finite_differences(kernel):
    value, gradient = log_hyperprior(kernel, -3.0, 3.0)
    # the value is the density of φ = Aθ
    assert value == pytest.approx(gaussian_log_prior(wb_scale(kernel) * kernel.theta, -3.0, 3.0)[0])
    numeric = finite_difference_gradient(
        lambda theta: log_hyperprior(kernel.with_theta(theta), -3.0, 3.0)[0], kernel.theta
    )
    assert gradient.shape == kernel.theta.shape
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8)


def test_log_hyperprior_is_largest_at_the_prior_mean():
    # N(−3, 3²) on log w = −2 log ℓ and on log v0: maximal at v0 = e⁻³, ℓ = e^1.5
    best = SEKernel(variance=np.exp(-3.0), lengthscale=np.exp(1.5))
    value, gradient = log_hyperprior(best)
    np.testing.assert_allclose(gradient, 0.0, atol=1e-12)
    assert value > log_hyperprior(best.with_params(lengthscale=1.0))[0]


# --------------------------------------------------------------------------- free mask and box
def test_free_mask():
    kernel = SEKernel(lengthscale=[1.0, 2.0], bias=0.5)
    np.testing.assert_array_equal(free_mask(kernel), [True, True, True, True])
    np.testing.assert_array_equal(free_mask(kernel, fixed=["log_variance", "log_bias"]), [False, True, True, False])
    with pytest.raises(ValueError, match="not kernel parameters"):
        free_mask(kernel, fixed=["log_lengthscale"])


def test_theta_box_gives_each_log_parameter_the_interval_of_its_kind():
    kernel = SEKernel(lengthscale=[1.0, 2.0], bias=0.5, jitter=0.01, learn_jitter=True)
    expected = [
        LOG_PARAMETER_BOUNDS[name]
        for name in ("log_variance", "log_lengthscale", "log_lengthscale", "log_bias", "log_jitter")
    ]
    np.testing.assert_array_equal(theta_box(kernel), expected)
    assert np.all(theta_box(kernel)[:, 0] < theta_box(kernel)[:, 1])
    # a sequence of kernels (one per class): the boxes of their concatenated theta
    per_class = [SEKernel(), SEKernel(lengthscale=[1.0, 2.0])]
    np.testing.assert_array_equal(theta_box(per_class), np.vstack([theta_box(k) for k in per_class]))
    assert theta_box(per_class).shape == (5, 2)


def test_box():
    np.testing.assert_array_equal(box(3, (-10.0, 10.0)), np.tile([-10.0, 10.0], (3, 1)))
    assert np.all(np.isinf(box(2, (-np.inf, np.inf))))
    with pytest.raises(ValueError, match="low < high"):
        box(2, (1.0, 1.0))


# --------------------------------------------------------------------------- maximize: known optima
def test_maximize_a_quadratic():
    centre = np.array([1.0, -2.0, 0.5])
    fit = maximize(quadratic(centre, [1.0, 10.0, 0.1]), np.zeros(3))
    assert isinstance(fit, HyperparameterFit)
    np.testing.assert_allclose(fit.theta, centre, atol=1e-4)
    assert fit.value == pytest.approx(0.0, abs=1e-8)
    assert_converged(fit)
    assert not fit.at_bound.any()
    assert fit.n_failed == 0 and fit.n_evaluations >= fit.n_iter > 0
    np.testing.assert_array_equal(fit.starts, np.zeros((1, 3)))
    # no box unless one is asked for
    np.testing.assert_array_equal(fit.bounds, box(3, (-np.inf, np.inf)))


def test_maximize_the_rosenbrock_function():
    fit = maximize(negative_rosenbrock, np.array([-1.2, 1.0]), max_iter=500)
    np.testing.assert_allclose(fit.theta, [1.0, 1.0], atol=1e-4)
    assert fit.value == pytest.approx(0.0, abs=1e-8)
    assert_converged(fit)


def test_maximize_the_rosenbrock_function_in_five_dimensions():
    fit = maximize(negative_rosenbrock, np.array([-1.0, 1.5, 0.5, -0.5, 2.0]), max_iter=1000)
    np.testing.assert_allclose(fit.theta, np.ones(5), atol=1e-4)
    assert_converged(fit)


def test_the_first_step_moves_no_parameter_by_more_than_one():
    # a gradient of 200 at the start: L-BFGS-B's unscaled first step would go to θ = (10, 10), the box's corner
    evaluated = []
    objective = quadratic([100.0, 2.0], [2.0, 1.0])

    def recorded(theta):
        evaluated.append(theta.copy())
        return objective(theta)

    with pytest.warns(HyperparameterBoundWarning):
        fit = maximize(recorded, np.zeros(2), bounds=(-10.0, 10.0))
    assert np.max(np.abs(evaluated[1] - evaluated[0])) == pytest.approx(1.0)
    np.testing.assert_allclose(fit.theta, [10.0, 2.0], atol=1e-6)
    assert fit.n_evaluations == len(evaluated)  # the start is evaluated once


def test_lbfgsb_stops_once_the_gradient_is_far_below_the_tolerance():
    fit = maximize(negative_rosenbrock, np.array([-1.2, 1.0]), max_iter=500)
    assert "StopIteration" in fit.message  # stopped by the POLISH test, not by L-BFGS-B's own
    _, value, gradient = fit.theta, fit.value, fit.gradient
    assert np.max(np.abs(gradient)) <= 1e-5 * max(1.0, abs(value))
    assert 0 < POLISH < 1


def test_an_optimum_outside_the_box_ends_on_its_edge():
    # the unconstrained maximum (12, −3, 0) lies beyond θ_0 = 10 and θ_1 = −2
    bounds = np.array([[-10.0, 10.0], [-2.0, 5.0], [-10.0, 10.0]])
    with pytest.warns(HyperparameterBoundWarning, match=r"theta\[0\] at the upper edge, 10; theta\[1\] at the lower"):
        fit = maximize(quadratic([12.0, -3.0, 0.0], [1.0, 2.0, 1.0]), np.array([0.0, 1.0, 3.0]), bounds=bounds)
    np.testing.assert_allclose(fit.theta, [10.0, -2.0, 0.0], atol=1e-6)
    np.testing.assert_array_equal(fit.at_bound, [True, True, False])
    # the gradient pushes outward at both active bounds and is projected away: converged
    assert fit.gradient[0] > 1.0 and fit.gradient[1] < -1.0
    assert_converged(fit)
    np.testing.assert_array_equal(fit.bounds, bounds)


def test_one_interval_for_every_entry_and_the_kernel_box():
    # bounds=(low, high) applies to every entry
    with pytest.warns(HyperparameterBoundWarning):
        fit = maximize(quadratic([25.0, -0.5], [1.0, 1.0]), np.zeros(2), bounds=(-10.0, 10.0))
    np.testing.assert_allclose(fit.theta, [10.0, -0.5], atol=1e-6)
    np.testing.assert_array_equal(fit.at_bound, [True, False])
    assert_converged(fit)
    # without bounds the same optimum is interior
    free_fit = maximize(quadratic([25.0, -0.5], [1.0, 1.0]), np.zeros(2))
    np.testing.assert_allclose(free_fit.theta, [25.0, -0.5], atol=1e-4)
    assert not free_fit.at_bound.any()
    # a hyperparameter search in the kernel's box: log variance stops at its upper edge
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    high = LOG_PARAMETER_BOUNDS["log_variance"][1]
    with pytest.warns(
        HyperparameterBoundWarning, match="log_variance at the upper edge, 15 .variance 3.27e.06.: the latent"
    ):
        fit = maximize(
            quadratic([high + 5.0, 0.3], [1.0, 1.0]), kernel.theta, bounds=theta_box(kernel), names=kernel.theta_names
        )
    np.testing.assert_allclose(fit.theta, [high, 0.3], atol=1e-6)
    np.testing.assert_array_equal(fit.at_bound, [True, False])
    assert_converged(fit)


def test_an_edge_of_the_box_warns_naming_the_parameter_and_what_the_edge_means():
    # an ARD kernel whose third lengthscale runs to the top of the box and whose variance to the bottom
    kernel = SEKernel(variance=1.0, lengthscale=[1.0, 2.0, 3.0])
    low, high = LOG_PARAMETER_BOUNDS["log_variance"][0], LOG_PARAMETER_BOUNDS["log_lengthscale"][1]
    objective = quadratic([low - 3.0, 0.0, 0.5, high + 4.0], [1.0, 1.0, 1.0, 1.0])
    with pytest.warns(HyperparameterBoundWarning) as record:
        fit = maximize(objective, kernel.theta, bounds=theta_box(kernel), names=kernel.theta_names, description="ard")
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("ard: the optimum is on the edge of the hyperparameter box")
    assert "log_lengthscale[2] at the upper edge, 10 (lengthscale 2.2e+04): an ARD lengthscale" in message
    assert "switches its input off" in message
    assert "log_variance at the lower edge, -10 (variance 4.54e-05)" in message and "constant classifier" in message
    assert "log_lengthscale[0]" not in message and "log_lengthscale[1]" not in message
    np.testing.assert_array_equal(fit.at_bound, [True, False, False, True])
    assert fit.converged  # converged in the box: the warning, not `converged`, says where
    assert issubclass(HyperparameterBoundWarning, gpc_ref.ConvergenceWarning)
    # per-class kernels: the names say which class
    assert theta_names([SEKernel(), SEKernel(lengthscale=[1.0, 1.0])]) == [
        "class 0: log_variance", "class 0: log_lengthscale",
        "class 1: log_variance", "class 1: log_lengthscale[0]", "class 1: log_lengthscale[1]",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="names must name the 4 entries"):
        maximize(objective, kernel.theta, names=["a", "b"])


def test_an_interior_optimum_does_not_warn():
    kernel = SEKernel(variance=1.0, lengthscale=[1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = maximize(quadratic([2.0, -1.0, 3.0], [1.0, 1.0, 1.0]), kernel.theta, bounds=theta_box(kernel),
                       names=kernel.theta_names)  # fmt: skip
    assert not fit.at_bound.any() and fit.converged
    # a partial maximisation (warn=False, EM's M-step) does not warn at the edge either
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = maximize(quadratic([25.0, 0.0], [1.0, 1.0]), np.zeros(2), bounds=(-10.0, 10.0), warn=False)
    assert fit.at_bound[0]


def test_fixed_entries_keep_their_starting_values():
    theta0 = np.array([0.0, 3.3, 0.0, -1.7])
    free = np.array([True, False, True, False])
    evaluated = []

    def objective(theta):
        evaluated.append(theta.copy())
        return quadratic([1.0, -5.0, 2.0, 4.0], [1.0, 1.0, 1.0, 1.0])(theta)

    # θ_1 = 3.3 lies outside the box: a fixed entry is kept as it is, not clipped
    fit = maximize(objective, theta0, free=free, n_restarts=3, rng=0, bounds=(-3.0, 3.0))
    np.testing.assert_allclose(fit.theta[free], [1.0, 2.0], atol=1e-5)
    np.testing.assert_array_equal(fit.theta[~free], theta0[~free])
    # fixed entries are never moved, not even by the restarts; their gradient is reported but ignored
    assert all(np.array_equal(theta[~free], theta0[~free]) for theta in evaluated)
    np.testing.assert_array_equal(fit.starts[:, ~free], np.tile(theta0[~free], (4, 1)))
    assert abs(fit.gradient[1]) > 1.0
    assert_converged(fit)
    np.testing.assert_array_equal(fit.free, free)


def test_fixed_mask_from_kernel_names():
    kernel = SEKernel(variance=2.0, lengthscale=[1.0, 2.0])
    free = free_mask(kernel, fixed=["log_lengthscale[1]"])
    fit = maximize(quadratic([0.5, 0.5, 0.5], [1.0, 1.0, 1.0]), kernel.theta, free=free)
    assert fit.theta[2] == kernel.theta[2]
    np.testing.assert_allclose(fit.theta[:2], [0.5, 0.5], atol=1e-5)


# --------------------------------------------------------------------------- restarts
def tilted_double_well(theta):
    """−(θ² − 4)²/4 + θ/2 per coordinate: local maxima near −2 and (higher) near +2."""
    value = np.sum(-0.25 * (theta**2 - 4.0) ** 2 + 0.5 * theta)
    return float(value), -theta * (theta**2 - 4.0) + 0.5


def test_restarts_are_reproducible_and_the_best_start_is_returned():
    theta0 = np.array([-2.0])  # in the lower well
    alone = maximize(tilted_double_well, theta0)
    assert alone.theta[0] < 0  # one start stays in its well
    fits = [maximize(tilted_double_well, theta0, n_restarts=6, rng=seed, restart_sd=3.0) for seed in (1, 1, 2)]
    a, b, c = fits
    np.testing.assert_array_equal(a.starts, b.starts)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.starts, c.starts)
    for fit in fits:
        assert fit.starts.shape == (7, 1) and fit.values.shape == (7,)
        np.testing.assert_array_equal(fit.starts[0], theta0)  # the given start comes first
        assert fit.value == fit.values.max()
        assert fit.theta[0] > 0  # some restart found the higher well, and it was kept
        assert fit.value > alone.value
        assert fit.values[0] == pytest.approx(alone.value)
        assert_converged(fit)
    # a Generator works as well as a seed
    d = maximize(tilted_double_well, theta0, n_restarts=6, rng=np.random.default_rng(1), restart_sd=3.0)
    np.testing.assert_array_equal(d.starts, a.starts)


def test_extra_starts_and_reset():
    resets = []
    fit = maximize(tilted_double_well, np.array([-2.0]), extra_starts=[[1.0], [-3.0]], reset=lambda: resets.append(1))
    assert len(resets) == 3  # once before every start
    np.testing.assert_array_equal(fit.starts[:, 0], [-2.0, 1.0, -3.0])
    assert fit.theta[0] > 0
    with pytest.raises(ValueError, match="extra_starts"):
        maximize(tilted_double_well, np.array([-2.0]), extra_starts=[[1.0, 2.0]])


def test_random_restarts_need_an_rng():
    with pytest.raises(ValueError, match="rng"):
        maximize(tilted_double_well, np.array([-2.0]), n_restarts=2)


# --------------------------------------------------------------------------- failed evaluations
def failing_objective(failure):
    """A smooth objective with maximum at (1.5, −1), which cannot be evaluated for θ_0 > 2.

    Along θ_0 it is −4 log cosh(θ_0 − 1.5): its slope saturates at 4 far from the maximum, so the
    curvature L-BFGS-B estimates there is nearly zero and its next step overshoots into θ_0 > 2.
    """
    evaluated = []

    def smooth(theta):
        d = theta - np.array([1.5, -1.0])
        return -4.0 * np.log(np.cosh(d[0])) - 3.0 * d[1] ** 2, np.array([-4.0 * np.tanh(d[0]), -6.0 * d[1]])

    def objective(theta):
        evaluated.append(theta.copy())
        if theta[0] > 2.0:
            if failure == "linalg":
                raise np.linalg.LinAlgError("the covariance is not positive definite")
            if failure == "floating_point":
                raise FloatingPointError("overflow")
            if failure == "nan":
                return np.nan, np.full(2, np.nan)
            return 1.0, np.array([np.inf, 0.0])  # "inf": a finite value with an infinite gradient
        return smooth(theta)

    return objective, evaluated


@pytest.mark.parametrize("failure", ["linalg", "floating_point", "nan", "inf"])
def test_a_region_where_the_objective_fails_is_avoided(failure):
    objective, evaluated = failing_objective(failure)
    # from far away L-BFGS-B's quasi-Newton steps overshoot into the failing region
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either: the optimum is reached
        fit = maximize(objective, np.array([-8.0, 5.0]), bounds=(-10.0, 10.0))
    assert fit.n_failed >= 1
    assert any(theta[0] > 2.0 for theta in evaluated)  # the failing region was really visited
    assert all(np.all(np.isfinite(theta)) for theta in evaluated)  # never asked for a NaN
    np.testing.assert_allclose(fit.theta, [1.5, -1.0], atol=1e-5)
    assert np.isfinite(fit.value) and np.all(np.isfinite(fit.gradient))
    assert np.all(np.isfinite(fit.values))
    assert_converged(fit)


def test_an_optimum_next_to_a_failing_region_is_approached_from_the_good_side():
    # maximum of the smooth part at θ = 3, but the objective fails beyond θ = 2
    def objective(theta):
        if theta[0] > 2.0:
            raise np.linalg.LinAlgError("not positive definite")
        return -0.5 * float((theta[0] - 3.0) ** 2), np.array([-(theta[0] - 3.0)])

    with pytest.warns(gpc_ref.ConvergenceWarning):
        fit = maximize(objective, np.array([-5.0]), max_iter=50)
    assert fit.theta[0] <= 2.0 and fit.theta[0] > 1.9
    assert np.isfinite(fit.value) and not fit.converged


@pytest.mark.parametrize("fuzz_seed", [0, 1, 2])
def test_a_fuzzy_edge_of_the_computable_region_is_named_by_where_the_failures_lie(fuzz_seed):
    # the objective rises without limit along θ_0 (a separable problem's signal variance) and has an interior
    # optimum in θ_1, but cannot be computed beyond θ_0 ≈ 4, an edge that rounding decides: each evaluation
    # near it fails or not at random. The search must stop near the edge without creeping along it for
    # hundreds of evaluations, and name θ_0, whichever gradient component happens to be largest there.
    fuzz = np.random.default_rng(fuzz_seed)

    def objective(theta):
        if theta[0] > 4.0 + 0.05 * fuzz.standard_normal():
            raise np.linalg.LinAlgError("the mode did not converge")
        return float(theta[0] - 2.0 * (theta[1] - 0.3 * theta[0]) ** 2), np.array(
            [1.0 + 1.2 * (theta[1] - 0.3 * theta[0]), -4.0 * (theta[1] - 0.3 * theta[0])]
        )

    with pytest.warns(gpc_ref.ConvergenceWarning) as caught:
        fit = maximize(objective, np.zeros(2), bounds=(-10.0, 10.0), names=["log_variance", "log_lengthscale"])
    message = str(caught[0].message)
    assert 3.7 < fit.theta[0] <= 4.2 and not fit.converged and fit.n_failed > 0
    assert "failed at larger log_variance" in message and fit.n_evaluations < 150


def test_a_start_that_fails_is_skipped_but_others_are_used():
    objective, _ = failing_objective("linalg")
    fit = maximize(objective, np.array([5.0, 0.0]), extra_starts=[[0.0, 0.0]])
    assert fit.values[0] == -np.inf and np.isfinite(fit.values[1])
    np.testing.assert_allclose(fit.theta, [1.5, -1.0], atol=1e-5)


@pytest.mark.parametrize("failure", ["linalg", "nan"])
def test_an_objective_that_fails_at_every_start_raises_a_clear_error(failure):
    def objective(theta):
        if failure == "linalg":
            raise np.linalg.LinAlgError("not positive definite")
        return np.nan, np.zeros_like(theta)

    with pytest.raises(ValueError, match="my method: the objective could not be evaluated at any starting point"):
        maximize(objective, np.zeros(2), n_restarts=2, rng=0, description="my method")


def test_other_exceptions_propagate():
    def objective(theta):
        raise KeyError("a bug in the objective")

    with pytest.raises(KeyError):
        maximize(objective, np.zeros(2))


# --------------------------------------------------------------------------- the convergence report
def test_a_run_cut_short_reports_not_converged_and_warns():
    expected = "rosenbrock: not converged after 3 L-BFGS-B iterations"
    with pytest.warns(gpc_ref.ConvergenceWarning, match=expected) as record:
        fit = maximize(negative_rosenbrock, np.array([-1.2, 1.0]), max_iter=3, description="rosenbrock")
    assert not fit.converged
    assert fit.n_iter == 3
    assert fit.gradient_norm > fit.tolerance
    message = str(record[0].message)
    assert f"largest projected gradient component is {fit.gradient_norm:.3g}" in message
    assert f"tolerance {fit.tolerance:.3g}" in message
    # warn=False: the same result, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = maximize(negative_rosenbrock, np.array([-1.2, 1.0]), max_iter=3, warn=False)
    np.testing.assert_array_equal(quiet.theta, fit.theta)
    assert not quiet.converged


def test_the_gradient_norm_is_the_projected_infinity_norm():
    fit = maximize(quadratic([0.3, 0.0], [1.0, 1.0]), np.array([0.0, 0.0]), max_iter=1, warn=False)
    free_gradient = fit.gradient
    assert fit.gradient_norm == pytest.approx(np.max(np.abs(free_gradient)))


def test_tolerance_is_relative_to_the_objective():
    # a large objective value widens the gradient test: tol·max(1, |f|)
    smooth = quadratic([1.0], [1.0])

    def shifted(theta):
        value, gradient = smooth(theta)
        return 1e6 + value, gradient

    fit = maximize(shifted, np.zeros(1), tol=1e-8)
    assert fit.value == pytest.approx(1e6)
    assert fit.tolerance == pytest.approx(1e-8 * fit.value)
    assert fit.converged and fit.gradient_norm <= fit.tolerance


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(max_iter=0), "max_iter"),
        (dict(tol=0.0), "tol"),
        (dict(n_restarts=-1), "n_restarts"),
        (dict(bounds=[[1.0, 0.0], [0.0, 1.0]]), "low < high"),
        (dict(bounds=(1.0, 0.0)), "low < high"),
        (dict(bounds=np.zeros((3, 2))), r"shape \(2, 2\)"),
    ],
)
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maximize(quadratic([0.0, 0.0], [1.0, 1.0]), np.zeros(2), **kwargs)


def test_objective_must_be_callable_and_return_a_full_gradient():
    with pytest.raises(ValueError, match="callable"):
        maximize(None, np.zeros(2))
    with pytest.raises(ValueError, match="gradient of shape"):
        maximize(lambda theta: (0.0, np.zeros(3)), np.zeros(2))


# ----------------------------------------------------------------------------- warnings whose words are true
def test_the_steepest_entry_is_described_at_the_edge_it_is_at_not_the_one_it_heads_for():
    """A lengthscale on the upper edge that the objective would pull down is not 'heading for white noise' (the
    lower edge's meaning); an entry in the middle of its interval is not described at any edge."""
    from gpc_ref.hyperparameters import _steepest_message

    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    names, bounds = kernel.theta_names, theta_box(kernel)
    at_top = _steepest_message(names, np.array([0.0, 10.0]), np.array([0.0, -0.5]), 0, None, None, bounds)
    assert "away from the upper edge of the box on which it sits" in at_top and "lower edge" not in at_top
    middle = _steepest_message(names, np.array([0.0, 0.0]), np.array([0.0, -0.5]), 0, None, None, bounds)
    assert middle.endswith("which the objective would move down") and "edge" not in middle
    near = _steepest_message(names, np.array([0.0, -8.0]), np.array([0.0, -0.5]), 0, None, None, bounds)
    assert "towards the lower edge (-10)" in near


def test_an_unconverged_search_that_ends_on_an_edge_says_so_in_one_warning():
    """Not converged, with one entry on the box's edge: one ConvergenceWarning that names both, not a second
    warning calling the end point "the optimum"."""

    def objective(theta):  # rises without limit in theta_0 (held by the box), a slow quartic in theta_1
        return theta[0] - (theta[1] - 3.0) ** 4, np.array([1.0, -4.0 * (theta[1] - 3.0) ** 3])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = maximize(objective, [15.0, -8.0], bounds=[[-10.0, 15.0], [-10.0, 10.0]], max_iter=1, tol=1e-12,
                       names=["log_variance", "log_lengthscale"])  # fmt: skip
    assert not fit.converged and fit.at_bound[0]
    assert [w.category for w in caught] == [gpc_ref.ConvergenceWarning]
    assert "the search ended with log_variance at the upper edge" in str(caught[0].message)
