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
