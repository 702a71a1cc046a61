"""gpc_ref.acceleration: the fixed-point stopping test and SQUAREM, on maps whose fixed points are known."""

import numpy as np

from gpc_ref.acceleration import anderson_extrapolation
from gpc_ref.acceleration import contraction_rate
from gpc_ref.acceleration import fixed_point_converged
from gpc_ref.acceleration import fixed_point_iteration
from gpc_ref.acceleration import squarem


def _slow_linear_map(rate):
    """T(x) = x* + A(x − x*) with eigenvalues up to ``rate``; merit −½‖x − x*‖² in the metric that makes it rise."""
    target = np.array([1.0, -2.0, 0.5])
    A = np.diag([rate, 0.5, 0.1])

    def step(x):
        merit = -float(np.sum((x - target) ** 2 / (1 - np.diag(A))))
        return merit, target + A @ (x - target), None

    return target, step


def test_a_small_step_is_not_convergence_when_the_map_contracts_slowly():
    target, step = _slow_linear_map(0.9999)
    x0 = np.zeros(3)
    for _ in range(100):  # the fast directions die out; the slow one is left
        x0 = step(x0)[1]
    x1 = step(x0)[1]
    x2 = step(x1)[1]
    # the step is 1e-4 of the distance: the old test (step below √tol) would stop here, far from x*
    rate = contraction_rate(x0, x1, x2)
    assert 0.999 < rate < 1.0
    assert not fixed_point_converged(x1, x2, step(x0)[0], step(x1)[0], rate, tol=1e-5)
    # at the fixed point itself the test passes
    assert fixed_point_converged(target, step(target)[1], step(target)[0], step(target)[0], rate, tol=1e-9)


def test_squarem_reaches_the_fixed_point_of_a_slow_map_and_its_merit_never_falls():
    target, step = _slow_linear_map(0.9999)
    run = squarem(step, np.zeros(3), max_evaluations=2000, tol=1e-12)
    assert run.converged and np.allclose(run.x, target, atol=1e-5)
    assert np.all(np.diff(run.merits) >= -1e-12)
    # plain iteration would need about log(1e-6)/log(0.9999) ≈ 1.4e5 steps
    assert run.n_evaluations < 2000


def test_squarem_says_when_it_is_capped():
    target, step = _slow_linear_map(0.9999)
    run = squarem(step, np.zeros(3), max_evaluations=6, tol=1e-14)
    assert not run.converged and run.n_evaluations <= 6
    # the state returned is the one of the iterate returned
    assert run.merits[-1] == step(run.x)[0]


def test_plain_iteration_reaches_the_fixed_point_and_squarem_the_same_one_faster():
    target, step = _slow_linear_map(0.99)
    plain = fixed_point_iteration(step, np.zeros(3), max_evaluations=20000, tol=1e-14)
    fast = squarem(step, np.zeros(3), max_evaluations=20000, tol=1e-14)
    assert plain.converged and fast.converged
    np.testing.assert_allclose(plain.x, target, atol=1e-5)
    np.testing.assert_allclose(fast.x, plain.x, atol=1e-5)
    assert fast.n_evaluations < plain.n_evaluations / 5
    assert np.all(np.diff(plain.merits) >= 0)


def test_plain_iteration_says_when_it_is_capped_and_returns_the_state_of_its_iterate():
    target, step = _slow_linear_map(0.9999)
    run = fixed_point_iteration(step, np.zeros(3), max_evaluations=50, tol=1e-12)
    assert not run.converged and run.n_evaluations == 50 and len(run.merits) == 50
    assert run.merits[-1] == step(run.x)[0]


def test_anderson_extrapolation_solves_a_linear_fixed_point_problem_from_enough_steps():
    """For an affine map T(x) = x* + A(x − x*) in d dimensions, d + 1 steps span the error space: the
    extrapolated point is x* (to rounding), where the plain step is still far away."""
    target = np.array([1.0, -2.0, 0.5])
    A = np.array([[0.95, 0.02, 0.0], [0.01, 0.6, 0.05], [0.0, 0.03, 0.2]])
    x, history = np.zeros(3), []
    for _ in range(4):
        residual = target + A @ (x - target) - x
        history.append((x, residual))
        x = x + residual
    x_last, r_last = history[-1]
    candidate = anderson_extrapolation(history, x_last, r_last, 1.0)
    np.testing.assert_allclose(candidate, target, atol=1e-10)
    assert np.max(np.abs(x_last + r_last - target)) > 0.5


def _overshooting_map(forbidden_above=None, evaluated=None):
    """T(x) = x + 1.8 (x* − x), contracting at 0.8 with alternating overshoot, x* = (1, −1); the map cannot be
    evaluated (merit −∞) where x₀ exceeds ``forbidden_above``."""
    target = np.array([1.0, -1.0])

    def step(x):
        if evaluated is not None:
            evaluated.append(x.copy())
        if forbidden_above is not None and x[0] > forbidden_above:
            return -np.inf, x, None
        return -float(np.sum((x - target) ** 2)), x + 1.8 * (target - x), "state"

    return target, step


def test_a_plain_step_where_the_map_cannot_be_evaluated_is_halved_and_the_iteration_goes_on():
    # from 0 the first step lands at 1.8, beyond the forbidden 1.5: it is halved to 0.9, and the iteration goes on
    for iterate in (fixed_point_iteration, squarem):
        evaluated = []
        target, step = _overshooting_map(forbidden_above=1.5, evaluated=evaluated)
        run = iterate(step, np.zeros(2), max_evaluations=500, tol=1e-12)
        assert run.converged and not run.stalled
        np.testing.assert_allclose(run.x, target, atol=1e-5)
        np.testing.assert_allclose(evaluated[1], [1.8, -1.8])
        np.testing.assert_allclose(evaluated[2], [0.9, -0.9])


def test_where_the_map_cannot_be_evaluated_anywhere_ahead_the_iteration_says_it_stalled():
    for iterate in (fixed_point_iteration, squarem):
        target, step = _overshooting_map(forbidden_above=0.0)
        run = iterate(step, np.zeros(2), max_evaluations=500, tol=1e-12)
        assert run.stalled and not run.converged
        np.testing.assert_array_equal(run.x, np.zeros(2))
        assert run.state == "state" and run.n_evaluations == 1 + 21  # the start, the step and 20 halvings


def test_a_method_s_own_stopping_test_replaces_the_fixed_point_test():
    target, step = _slow_linear_map(0.99)
    seen = []

    def stop(x_previous, x, state):
        seen.append(x_previous is None)
        return float(np.max(np.abs(x - target))) < 1e-3

    for iterate in (fixed_point_iteration, squarem):
        seen.clear()
        run = iterate(step, np.zeros(3), max_evaluations=20000, stop=stop)
        assert run.converged and np.max(np.abs(run.x - target)) < 1e-3
        assert seen[0] and not any(seen[1:])  # the start is tested as one that came from nowhere


def test_squarem_projects_its_extrapolations_and_bounds_its_first_steps():
    target, step = _slow_linear_map(0.999)
    evaluated, projected = [], []

    def recording(x):
        evaluated.append(x.copy())
        return step(x)

    def project(x, x_plain):
        projected.append(x_plain.copy())
        return np.minimum(x, 0.9)  # x₀ of the fixed point is 1: extrapolations are held below it

    run = squarem(recording, np.zeros(3), max_evaluations=400, tol=1e-10, project=project, step_max=1.0)
    assert projected  # extrapolations were made, each with the plain iterate it replaces
    # with step_max = 1 the first iteration is plain: the third evaluation is T(T(x₀))
    np.testing.assert_allclose(evaluated[2], step(step(np.zeros(3))[1])[1])
    assert np.all(np.diff(run.merits) >= -1e-12)
