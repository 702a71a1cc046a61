"""Fixed-point iterations: when one has converged, and SQUAREM, the extrapolation that shortens a slow one.

Several methods of the book are fixed-point iterations x ↦ T(x) that raise a merit function at every
step (G&R's variational Bayes raises its bound; EM-EP raises the evidence). What they share lives here,
once, and each method supplies only its map (``step``: x ↦ (merit(x), T(x), state)):

- :func:`fixed_point_converged`, the stopping test. A small step is not a small error: a map that contracts
  at the rate ρ moves its iterate by ‖x_{k+1} − x_k‖ while the fixed point is still up to
  ‖x_{k+1} − x_k‖/(1 − ρ) away, ten thousand steps for ρ = 0.9999. The test therefore requires the
  estimated distance to the fixed point, not only the step, to be within tolerance (and the merit to have
  stopped rising), with ρ estimated from successive steps by :func:`contraction_rate`.
- :func:`fixed_point_iteration`, the plain iteration with that test, and :func:`squarem`, Varadhan &
  Roland's (2008) squared extrapolation: two steps x₀ → x₁ → x₂ give
  r = x₁ − x₀ and v = x₂ − 2x₁ + x₀, and x' = x₀ − 2sr + s²v with s = −‖r‖/‖v‖ jumps along the slow
  direction; x' is kept (after one more step from it) only if the merit is at least that at x₁, otherwise
  s moves halfway towards −1, where x' = x₂ is the plain iteration. The merit never decreases, and the
  iteration stops by the same test as the plain one, so it ends at the plain iteration's fixed point.
  A method may bring its own stopping test (EM-EP stops on the gradient of its evidence), a projection of the
  extrapolated point (EM-EP's box), and points where its map cannot be evaluated (merit −∞: EP cannot run
  there), where an extrapolation is rejected and a plain step halved.

- :func:`anderson_extrapolation`, Anderson's (type II) extrapolation of a fixed-point iteration from its last
  few steps [WN11], for the KL method, whose iteration has no merit-preserving SQUAREM form but whose bound
  decides, step by step, whether the extrapolated point is kept.

References
----------
- [WN11] Walker & Ni (2011), Anderson acceleration for fixed-point iterations, SIAM J. Numer. Anal. 49.
- [VR08] Varadhan & Roland (2008), Simple and globally convergent methods for accelerating the convergence
  of any EM algorithm, Scandinavian Journal of Statistics 35, §2–3 (SQUAREM, scheme S3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "contraction_rate",
    "fixed_point_converged",
    "fixed_point_test",
    "FixedPointRun",
    "fixed_point_iteration",
    "squarem",
    "MAX_HALVINGS",
    "ANDERSON_DEPTH",
    "anderson_extrapolation",
]

#: Anderson's extrapolation uses the last this many steps [WN11].
ANDERSON_DEPTH = 5


def contraction_rate(x0: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> float:
    """ρ ≈ ‖x₂ − x₁‖ / ‖x₁ − x₀‖ (maximum norms) from three successive iterates of the plain map.

    Parameters
    ----------
    x0, x1, x2 : ndarray
        x₁ = T(x₀), x₂ = T(x₁).

    Returns
    -------
    float
        0 when the map has stopped moving, ∞ when x₁ = x₀ but x₂ ≠ x₁.
    """
    step0, step1 = float(np.max(np.abs(x1 - x0))), float(np.max(np.abs(x2 - x1)))
    if step1 == 0.0:
        return 0.0
    return step1 / step0 if step0 > 0.0 else np.inf


def fixed_point_converged(x1: np.ndarray, x2: np.ndarray, merit0: float, merit1: float, rate: float,
                          tol: float) -> bool:  # fmt: skip
    """Whether x₁ is within tolerance of the fixed point of a map that contracts at ``rate``, with x₂ = T(x₁).

    The merit changed by at most ``tol``·max(1, abs(merit₁)) in the step that led to x₁, and the distance from x₁
    to the fixed point, bounded for a contraction by ‖x₂ − x₁‖ / (1 − ρ) (as ‖x₁ − x*‖ ≤ ‖x₂ − x₁‖ +
    ρ‖x₁ − x*‖), is at most √tol·max(1, ‖x₁‖) in the maximum norm. A map that does not contract (ρ ≥ 1) has
    not converged.

    Parameters
    ----------
    x1, x2 : ndarray
        An iterate and the plain map's next one.
    merit0, merit1 : float
        The merit function at the iterate before x1, and at x1.
    rate : float
        The contraction rate ρ: the largest :func:`contraction_rate` seen so far, since after an extrapolation
        the last step need not lie along the slowest direction, whose rate is the one that counts.
    tol : float
        Relative tolerance of the merit; √tol is that of the iterate.

    Returns
    -------
    bool
    """
    if abs(merit1 - merit0) > tol * max(1.0, abs(merit1)):
        return False
    step = float(np.max(np.abs(x2 - x1))) if np.size(x1) else 0.0
    if step == 0.0:
        return True
    if not rate < 1.0:
        return False
    return step / (1.0 - rate) <= np.sqrt(tol) * max(1.0, float(np.max(np.abs(x1))))


def fixed_point_test(x0: np.ndarray, x1: np.ndarray, x2: np.ndarray, merit0: float, merit1: float, rate: float,
                     tol: float) -> tuple[bool, float]:  # fmt: skip
    """One stopping test of a fixed-point iteration x₀ → x₁ → x₂: the contraction rate so far, and convergence.

    The rate of the last two steps (:func:`contraction_rate`) raises the running maximum ``rate`` when it is
    below one; x₁ has converged when that step contracted and :func:`fixed_point_converged` passes at the
    running maximum.

    Parameters
    ----------
    x0, x1, x2 : ndarray
        Three successive iterates of the plain map (x₂ = T(x₁)).
    merit0, merit1 : float
        The merit at x₀ and at x₁.
    rate : float
        The largest contraction rate seen so far (0 at the start).
    tol : float
        As in :func:`fixed_point_converged`.

    Returns
    -------
    converged : bool
    rate : float
        The updated running maximum.
    """
    observed = contraction_rate(x0, x1, x2)
    rate = max(rate, observed) if observed < 1.0 else rate
    return bool(observed < 1.0 and fixed_point_converged(x1, x2, merit0, merit1, rate, tol)), rate


@dataclass(frozen=True)
class FixedPointRun:
    """Outcome of :func:`fixed_point_iteration` or :func:`squarem`.

    Attributes
    ----------
    x : ndarray
        The last accepted iterate (the fixed point when ``converged``).
    state : object
        What ``step`` returned beside the merit and T(x) at ``x``.
    merits : ndarray
        The merit at every accepted iterate, non-decreasing.
    n_evaluations : int
        Calls of ``step``.
    converged : bool
        The stopping test passed at ``x``.
    stalled : bool
        The map could not be evaluated at its next iterate, nor at any of 20 points halfway back towards ``x``
        (a merit that is not finite): the iteration stopped at ``x`` (``converged`` is False).
    """

    x: np.ndarray
    state: Any
    merits: np.ndarray
    n_evaluations: int
    converged: bool
    stalled: bool = False


#: Where the map cannot be evaluated at its next iterate, the step towards it is halved at most this often.
MAX_HALVINGS = 20


def _evaluate_towards(step, x_from, x_to):
    """``step(x_to)``; where the map cannot be evaluated there (a merit that is not finite), ``x_to`` moves halfway
    back towards ``x_from`` up to :data:`MAX_HALVINGS` times. Returns the point used (None if none could be
    evaluated), what ``step`` returned there and the number of calls."""
    for n_calls in range(1, MAX_HALVINGS + 2):
        result = step(x_to)
        if np.isfinite(result[0]) or x_from is None:
            return x_to, result, n_calls
        x_to = x_from + 0.5 * (x_to - x_from)
    return None, None, n_calls


def fixed_point_iteration(step: Callable[[np.ndarray], tuple[float, np.ndarray, Any]], x0: np.ndarray, *,
                          max_evaluations: int, tol: float | None = None,
                          stop: Callable[[np.ndarray | None, np.ndarray, Any], bool] | None = None) -> FixedPointRun:  # fmt: skip
    """The plain iteration x ← T(x) of a map with a merit function, stopped by :func:`fixed_point_test` or ``stop``.

    Parameters
    ----------
    step : callable
        ``x -> (merit(x), T(x), state)``, as for :func:`squarem`.
    x0 : ndarray
        The start.
    max_evaluations : int
        Calls of ``step`` at most.
    tol : float
        As in :func:`fixed_point_converged` (when ``stop`` is None).
    stop : callable, optional
        ``(x_previous, x, state) -> bool``, the method's own test at an iterate x that came from x_previous
        (None at the start); replaces the fixed-point test.

    Returns
    -------
    FixedPointRun
        ``x`` is the last iterate at which ``step`` was evaluated, so that ``state`` and the last merit belong to it.
    """
    x_previous, x, state, rate, merits, n_evaluations = None, x0, None, 0.0, [], 0
    while True:
        x_used, result, n_calls = _evaluate_towards(step, x_previous, x)
        n_evaluations += n_calls
        if x_used is None:  # the map cannot be evaluated beyond x_previous
            return FixedPointRun(x_previous, state, np.array(merits), n_evaluations, False, stalled=True)
        x, (merit, x_next, state) = x_used, result
        merits.append(merit)
        if stop is not None:
            converged = stop(x_previous, x, state)
        elif x_previous is not None:
            converged, rate = fixed_point_test(x_previous, x, x_next, merits[-2], merit, rate, tol)
        else:
            converged = False
        if converged:
            return FixedPointRun(x, state, np.array(merits), n_evaluations, True)
        if n_evaluations >= max_evaluations:
            break  # stop at x, whose state and merit are the last ones computed
        x_previous, x = x, x_next
    return FixedPointRun(x, state, np.array(merits), n_evaluations, False)


def squarem(step: Callable[[np.ndarray], tuple[float, np.ndarray, Any]], x0: np.ndarray, *, max_evaluations: int,
            tol: float | None = None, stop: Callable[[np.ndarray | None, np.ndarray, Any], bool] | None = None,
            project: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
            step_max: float | None = None) -> FixedPointRun:  # fmt: skip
    """SQUAREM [VR08] of a fixed-point map whose merit never decreases, stopped at the plain map's fixed point.

    Parameters
    ----------
    step : callable
        ``x -> (merit(x), T(x), state)``: one evaluation of the map, with the merit at x and anything the
        caller needs to keep about x (returned for the final iterate). A merit that is not finite marks a
        point where the map cannot be evaluated: an extrapolation there is rejected, a plain step halved.
    x0 : ndarray
        The start.
    max_evaluations : int
        Calls of ``step`` at most.
    tol, stop
        The stopping test, as in :func:`fixed_point_iteration`.
    project : callable, optional
        ``(x', x₂) -> x''``: maps an extrapolated point x' into the domain of ``step`` (for example, clips it to a
        box, or keeps at x₂'s value a coordinate that must not be extrapolated).
    step_max : float, optional
        Varadhan & Roland's bound on abs(s): it starts at ``step_max`` and grows fourfold each time it binds
        (their step.max0 and mstep = 4), so that the first extrapolations stay near the plain path. None: no bound.

    Returns
    -------
    FixedPointRun
    """
    merit0, x1, state0 = step(x0)
    merits, n_evaluations, rate = [merit0], 1, 0.0
    if stop is not None and stop(None, x0, state0):
        return FixedPointRun(x0, state0, np.array(merits), n_evaluations, True)
    while n_evaluations < max_evaluations:
        x1_used, result1, n_calls = _evaluate_towards(step, x0, x1)  # a plain step, halved where T cannot run
        n_evaluations += n_calls
        if x1_used is None:
            return FixedPointRun(x0, state0, np.array(merits), n_evaluations, False, stalled=True)
        x1, (merit1, x2, state1) = x1_used, result1
        if stop is None:
            converged, rate = fixed_point_test(x0, x1, x2, merit0, merit1, rate, tol)
        else:
            converged = stop(x0, x1, state1)
        if converged:
            merits.append(merit1)
            return FixedPointRun(x1, state1, np.array(merits), n_evaluations, True)
        r, v = x1 - x0, x2 - 2.0 * x1 + x0
        norm_v = float(np.sqrt(np.sum(v * v)))
        s = min(-float(np.sqrt(np.sum(r * r))) / norm_v, -1.0) if norm_v > 0.0 else -1.0
        if step_max is not None and s <= -step_max:
            s, step_max = -step_max, 4.0 * step_max
        accepted = None
        while s < -1.0 and n_evaluations + 2 <= max_evaluations:
            # the extrapolated point, stabilised by one plain step from it [VR08, §3]
            x_extrapolated = x0 - 2.0 * s * r + s * s * v
            x_extrapolated = x_extrapolated if project is None else project(x_extrapolated, x2)
            merit_extrapolated, x_trial, _ = step(x_extrapolated)
            if np.isfinite(merit_extrapolated):
                trial = step(x_trial)
                n_evaluations += 2
                if np.isfinite(trial[0]) and trial[0] >= merit1:
                    accepted = (x_extrapolated, x_trial, trial)
                    break
            else:
                n_evaluations += 1
            s = 0.5 * (s - 1.0)  # halfway towards −1, where the extrapolation is the plain x₂
        if accepted is None:  # the plain iteration's x₂
            if n_evaluations >= max_evaluations:
                x0, (merit0, x1, state0) = x1, (merit1, x2, state1)
                merits.append(merit0)
                break
            x2_used, result2, n_calls = _evaluate_towards(step, x1, x2)
            n_evaluations += n_calls
            if x2_used is None:
                merits.append(merit1)
                return FixedPointRun(x1, state1, np.array(merits), n_evaluations, False, stalled=True)
            accepted = (x1, x2_used, result2)
        x_from, x0, (merit0, x1, state0) = accepted
        merits.append(merit0)
        if stop is not None and stop(x_from, x0, state0):
            return FixedPointRun(x0, state0, np.array(merits), n_evaluations, True)
    return FixedPointRun(x0, state0, np.array(merits), n_evaluations, False)


def anderson_extrapolation(history: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, residual: np.ndarray,
                           beta: float) -> np.ndarray:  # fmt: skip
    """Anderson's extrapolation [WN11] of the iteration x ← x + β r(x) from its last steps.

    With ΔX and ΔR the differences of the last iterates and residuals in ``history`` (pairs (x_k, r_k), the
    current one last, at most :data:`ANDERSON_DEPTH` + 1 of them), γ minimises ‖r − ΔR γ‖ and the candidate is
    x + β r − (ΔX + β ΔR) γ: the combination of the last steps whose linearised residual is smallest. The
    caller decides whether to keep it (the KL method keeps it only if its bound does not fall).

    Parameters
    ----------
    history : list of (ndarray, ndarray)
        At least two (iterate, residual) pairs, oldest first, the last one (``x``, ``residual``).
    x, residual : ndarray
        The current iterate and its residual r(x).
    beta : float
        The step length of the plain iteration.

    Returns
    -------
    ndarray
        The candidate.
    """
    d_x = np.array([b[0] - a[0] for a, b in zip(history, history[1:])]).T
    d_residual = np.array([b[1] - a[1] for a, b in zip(history, history[1:])]).T
    gamma = np.linalg.lstsq(d_residual, residual, rcond=None)[0]
    return x + beta * residual - (d_x + beta * d_residual) @ gamma
