r"""Hyperparameters: the box of the kernel's log-parameters, and the one maximiser every method uses.

Every method of the book that learns its kernel by optimisation (Laplace MAP and ML-II, the
softmax Laplace, the Jaakkola–Jordan lower bound, EP evidence maximisation, EM-EP's M-step)
calls :func:`maximize` here, so that they share one box for the log-parameters, one way of
restarting, one treatment of steps into regions where a factorisation fails, and one honest
convergence test.

Notation (book symbol ← code name):

- θ ← ``theta``: the kernel's log-parameters (``SEKernel.theta``):
  (log σ_f², log ℓ_1, …, log ℓ_D, [log σ_b²], [log σ_j²]).
- W&B's coordinates ϕ = Aθ and their priors, which the MAP searches add to their objectives, are in
  :mod:`gpc_ref.hyperpriors` (book content, apart from this general maximiser).
- g = ∇_θ objective ← ``gradient``; ‖P(g)‖_∞ ← ``gradient_norm``, the
  largest component of the gradient projected on the box (a component pushing outward at an
  active bound, and every fixed component, counts as zero).

The box
-------
Every method that learns a kernel searches the same box, :func:`theta_box`, which gives each
log-parameter the interval of its kind (:data:`LOG_PARAMETER_BOUNDS`):

===================  =========  ================================================
log-parameter        interval   why
===================  =========  ================================================
``log_variance``     [−10, 15]  σ_f² from 4.5e-5 to 3.3e6: ML-II on separable
                                data climbs to about 1e5 (the crabs)
``log_lengthscale``  [−10, 10]  ℓ from 4.5e-5 to 2.2e4 standardised input units:
                                an irrelevant input's ℓ at the top is "infinite"
``log_bias``         [−20, 15]  a variance that may vanish: K&G start it at 1e-8
``log_jitter``       [−20, 10]  likewise (K&G's latent noise v_2 starts at 1e-6)
===================  =========  ================================================

wide enough for every optimum in the book and narrow enough that no covariance overflows. An
optimum on the box's edge is reported in ``at_bound`` and by a
:class:`~gpc_ref.validation.HyperparameterBoundWarning` that names the parameter, its value and
the edge, and says what the edge means (:data:`EDGE_MEANINGS`): the objective does not fall beyond
the edge, so the value learnt is the box's. Two edges are common and mean something definite. An
ARD lengthscale at the upper edge (2.2e4 input units, for standardised inputs) switches its input
off: the covariance no longer varies along it, and the evidence prefers the model without it (W&B's
"irrelevant input"). A signal variance at the upper edge means that the latent function can grow
without limit, which happens when the classes are (nearly) separable in the model; a hyperprior
holds it only if it penalises large variances more than the evidence rewards them (W&B's,
``prior="wb"``, may not: the multi-class Laplace chapter measures a case). Often the search stops
before the edge, where the Laplace mode can no longer be computed, unconverged; the
:class:`~gpc_ref.validation.ConvergenceWarning` then names the parameter still rising and what its
edge means. Entries that are not learnt keep their values, in or out of the box.

Convergence
-----------
L-BFGS-B stops when the objective stops changing, which can happen far from an optimum (a
flat stretch, a failed line search). :func:`maximize` therefore checks the projected gradient
itself: the result is ``converged`` only if
‖P(g)‖_∞ ≤ tol·max(1, abs(f)). When L-BFGS-B stops early it is restarted
from its last point (fresh curvature memory) until the test passes or ``max_iter`` iterations
are spent; otherwise a :class:`~gpc_ref.validation.ConvergenceWarning` names the iteration count,
the gradient norm, the parameter the objective would still move (with what its edge of the box
means) and how many evaluations failed on the way. Two details keep the evaluations few (and the first step
off the flat regions where a classifier predicts ½ everywhere): L-BFGS-B minimises the objective divided by its largest gradient
component at the start, so that its first step, which is the gradient itself, moves no log-parameter
by more than one (unscaled, a gradient of 150 sends it to a corner of the box); and it is stopped
once the projected gradient is ``POLISH``
(a tenth) of the tolerance, instead of spending evaluations on the rounding of the objective.

Two looks around
----------------
A converged search is checked twice before it is returned (``warn=True``, the default). A start where
the gradient test already passes may be an optimum or a plateau (an objective that does not depend on
θ there): the objective is evaluated ``FLAT_START_PROBE`` (1) away along each free entry, and the search
goes on from the highest probe if that is higher. And a stationary point need not be the highest one
(EP's evidence on 200 points can have optima at ℓ = 0.7 and ℓ = 4.6): the objective is evaluated
``LOCAL_PROBE`` (2, a factor e² ≈ 7.4) away from the optimum along each kind of parameter (all
lengthscales together, all signal variances together, each other entry alone, both ways); if a probe
is higher, the search goes on from it, the higher optimum is kept and a
:class:`~gpc_ref.errors.LocalOptimumWarning` names both values. Each look costs two evaluations per
direction; neither replaces restarts, which look further.

Failed evaluations
------------------
An objective that raises ``numpy.linalg.LinAlgError`` or ``FloatingPointError``, or returns a
non-finite value, marks a point outside the region where the model can be computed (a
covariance that will not factorise). Such a step is rejected: the optimiser sees the last good
value plus a steep quadratic wall around the last good point, which sends its line search back;
it never sees a NaN.

References
----------
- [WB98] Williams & Barber (1998), §6: maximum penalised likelihood (MPL).
- [Byrd95] Byrd, Lu, Nocedal & Zhu (1995): L-BFGS-B, bound-constrained limited-memory BFGS.
- [GPML] Rasmussen & Williams (2006), §5.4: ML-II.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from .errors import ConvergenceWarning
from .errors import HyperparameterBoundWarning
from .errors import LocalOptimumWarning
from .kernels import SEKernel
from .progress import with_progress
from .threads import limited_blas_threads
from .validation import check_kernel
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_rng
from .validation import check_vector

__all__ = [
    "LOG_PARAMETER_BOUNDS",
    "theta_box",
    "theta_names",
    "EDGE_MEANINGS",
    "free_mask",
    "box",
    "HyperparameterFit",
    "maximize",
]

LOG_PARAMETER_BOUNDS = {
    "log_variance": (-10.0, 15.0),
    "log_lengthscale": (-10.0, 10.0),
    "log_bias": (-20.0, 15.0),
    "log_jitter": (-20.0, 10.0),
}


# --------------------------------------------------------------------------- which parameters, which box
def free_mask(kernel: SEKernel, fixed: Sequence[str] = ()) -> np.ndarray:
    """Boolean mask over ``kernel.theta``: True for the entries to learn, False for the names in ``fixed``.

    Parameters
    ----------
    kernel : SEKernel
        Whose ``theta_names`` are masked.
    fixed : sequence of str
        Names from ``kernel.theta_names`` to hold at their current values.

    Returns
    -------
    ndarray of bool (P,)
        ``True`` where the entry is learnt.
    """
    names = check_kernel(kernel).theta_names
    fixed = tuple(fixed or ())
    unknown = [name for name in fixed if name not in names]
    if unknown:
        raise ValueError(f"fixed names {unknown} are not kernel parameters; expected some of {names}")
    return np.array([name not in fixed for name in names])


def theta_box(kernel: SEKernel | Sequence[SEKernel]) -> np.ndarray:
    """The search box of ``kernel.theta`` (or of the concatenated ``theta`` of a sequence of kernels).

    Each entry gets the interval of its kind in :data:`LOG_PARAMETER_BOUNDS` (see the module docstring).

    Parameters
    ----------
    kernel : SEKernel or sequence of SEKernel
        One kernel, or one per class (their ``theta`` vectors concatenated, as ``stack_theta``).

    Returns
    -------
    ndarray (P, 2)
        ``(low, high)`` of each entry.
    """
    kernels = kernel if isinstance(kernel, (list, tuple)) else [kernel]
    rows = []
    for k in kernels:
        for name in check_kernel(k).theta_names:
            rows.append(LOG_PARAMETER_BOUNDS[name.split("[")[0]])
    return np.array(rows, dtype=float)


def theta_names(kernel: SEKernel | Sequence[SEKernel]) -> list[str]:
    """The names of the entries of :func:`theta_box`'s box: ``kernel.theta_names``, or for a sequence of
    kernels (one per class) the concatenation, each prefixed with ``"class c: "``.

    Parameters
    ----------
    kernel : SEKernel or sequence of SEKernel

    Returns
    -------
    list of str
    """
    if isinstance(kernel, (list, tuple)):
        return [f"class {c}: {name}" for c, k in enumerate(kernel) for name in check_kernel(k).theta_names]
    return list(check_kernel(kernel).theta_names)


#: What an optimum on each edge of the box means, by the kind of log-parameter and the edge
#: (used by :func:`maximize`'s :class:`~gpc_ref.validation.HyperparameterBoundWarning`).
EDGE_MEANINGS = {
    ("ARD log_lengthscale", "upper"): (
        "an ARD lengthscale at the upper edge switches its input off: the covariance no longer varies along "
        "that input, and the evidence prefers the model without it"
    ),
    ("log_lengthscale", "upper"): "the kernel is nearly constant over the data",
    ("log_lengthscale", "lower"): (
        "the lengthscale is shorter than the spacing of the inputs: the kernel is nearly white noise"
    ),
    ("log_variance", "upper"): (
        "the latent scale grows without limit, as it does where the classes are (nearly) separable in the "
        "model; only a prior that penalises large variances more than the evidence rewards them holds it "
        "(W&B's, prior='wb', may not)"
    ),
    ("log_variance", "lower"): "the latent function is switched off (the constant classifier)",
    ("log_bias", "upper"): "the bias variance grows without limit",
    ("log_bias", "lower"): "the bias term is switched off",
    ("log_jitter", "upper"): "the latent noise grows without limit",
    ("log_jitter", "lower"): "the latent noise is switched off",
    ("logit(2 epsilon)", "lower"): (
        "the label-noise rate epsilon is (nearly) 0: the evidence prefers the model without label flips"
    ),
    ("logit(2 epsilon)", "upper"): "the label-noise rate epsilon is (nearly) 1/2: the labels carry no information",
}


def _kind(name):
    """``"ARD log_lengthscale"``, ``"log_variance"``, ...: the key of :data:`EDGE_MEANINGS` for an entry's name."""
    name = name.split(": ")[-1]  # without the "class c: " of a per-class kernel
    return ("ARD " if "[" in name else "") + name.split("[")[0]


def _natural(kind, value):
    """`` (lengthscale 2.2e+04)`` for a log-parameter's value, else nothing."""
    parameter = kind.removeprefix("ARD ")
    return f" ({parameter.removeprefix('log_')} {np.exp(value):.3g})" if parameter.startswith("log_") else ""


def _meaning(kind, edge):
    meaning = EDGE_MEANINGS.get((kind, edge)) or EDGE_MEANINGS.get((kind.removeprefix("ARD "), edge))
    return f": {meaning}" if meaning else ""


def _edge_message(names, theta, bounds, at_bound):
    """The at-the-edge warning's text: the parameters on each edge, their values, and what the edge means."""
    groups = {}  # (kind, edge, edge value) -> names
    for j in np.flatnonzero(at_bound):
        low, high = bounds[j]
        edge, value = ("upper", high) if abs(theta[j] - high) <= abs(theta[j] - low) else ("lower", low)
        groups.setdefault((_kind(names[j]), edge, value), []).append(names[j])
    clauses = [
        f"{', '.join(members)} at the {edge} edge, {value:.4g}{_natural(kind, value)}{_meaning(kind, edge)}"
        for (kind, edge, value), members in groups.items()
    ]
    return "; ".join(clauses)


def _failure_directions(names, projected, n_failed, failed_steps, free):
    """The entries along which the failed evaluations lay and the objective still rises, largest share first.

    Where the search was stopped by a region in which the objective cannot be computed, those are the entries to
    name: the set of entries that lead there is a property of the model (a separable problem: a signal variance
    that grows without limit, often with the lengthscale along the same ridge), while the largest gradient
    component at the stopping point is decided by the rounding that decides where exactly the region begins.
    Their order can still change with that rounding; the message names them all.
    """
    if not n_failed or failed_steps is None:
        return []
    direction = np.zeros(len(names))
    direction[free] = failed_steps
    largest = float(np.max(np.abs(direction)))
    return [int(j) for j in np.argsort(-np.abs(direction), kind="stable")
            if abs(direction[j]) >= 0.25 * largest > 0.0 and direction[j] * projected[j] > 0.0]  # fmt: skip


def _edge_of(theta_j, bounds_j):
    """``"lower"`` or ``"upper"`` if the entry sits on that edge of its interval, else None."""
    low, high = bounds_j
    margin = 1e-9 * max(1.0, high - low) if np.isfinite(high - low) else 1e-9
    if np.isfinite(low) and theta_j <= low + margin:
        return "lower"
    if np.isfinite(high) and theta_j >= high - margin:
        return "upper"
    return None


def _steepest_message(names, theta, projected, n_failed, failed_steps, free, bounds):
    """Which entry the objective still rises along, which way, and whether evaluations failed on the way.

    An edge of the box is named only where it is true: the edge the entry sits on (and the objective moves it
    away from), or the edge it heads for when it is within a quarter of the box from it, with what that edge
    means; an entry in the middle of its interval is said to move up or down, nothing more.
    """
    heading = _failure_directions(names, projected, n_failed, failed_steps, free)
    j = heading[0] if heading else int(np.argmax(np.abs(projected)))
    kind, edge = _kind(names[j]), ("upper" if projected[j] > 0 else "lower")
    where = f", for {names[j]} = {theta[j]:.4g}{_natural(kind, theta[j])}, which the objective would move "
    direction = "up" if projected[j] > 0 else "down"
    sits = _edge_of(theta[j], bounds[j])
    if sits is not None:
        text = where + f"{direction}, away from the {sits} edge of the box on which it sits"
    else:
        low, high = bounds[j]
        target = high if edge == "upper" else low
        near = np.isfinite(high - low) and abs(target - theta[j]) <= 0.25 * (high - low)
        text = where + (f"{direction}, towards the {edge} edge ({target:.4g}){_meaning(kind, edge)}" if near
                        else f"{direction}")  # fmt: skip
    if n_failed:
        where = " and ".join(f"{'larger' if projected[k] > 0 else 'smaller'} {names[k]}" for k in heading)
        text += (
            f". {n_failed} evaluations on the way failed{' at ' + where if where else ''} (the objective could not "
            "be computed there), so the search stopped where it can still be computed"
        )
    return text


def box(size: int, bounds: tuple[float, float]) -> np.ndarray:
    """The interval ``bounds`` repeated for ``size`` parameters, as an array (size, 2).

    Parameters
    ----------
    size : int
        Number of parameters.
    bounds : (float, float)
        ``(low, high)`` with ``low < high`` (infinite ends allowed).

    Returns
    -------
    ndarray (size, 2)
        One row ``(low, high)`` per parameter.
    """
    low, high = float(bounds[0]), float(bounds[1])
    if not low < high:
        raise ValueError(f"bounds must be (low, high) with low < high; got {bounds!r}")
    return np.tile([low, high], (int(size), 1))


# --------------------------------------------------------------------------- the maximiser
@dataclass(frozen=True)
class HyperparameterFit:
    r"""Result of :func:`maximize`: the best point over all starts and how it was reached.

    Attributes
    ----------
    theta : ndarray (P,)
        The best point found (fixed entries at their starting values).
    value : float
        The objective there.
    gradient : ndarray (P,)
        The objective's gradient there (all entries, fixed ones included).
    gradient_norm : float
        ‖P(g)‖_∞ over the free entries, projected on the box.
    converged : bool
        ``gradient_norm <= tol * max(1, |value|)``.
    tolerance : float
        The right-hand side of that test.
    n_iter : int
        L-BFGS-B iterations of the best start (over its reruns).
    n_evaluations : int
        Objective evaluations over all starts.
    n_failed : int
        Evaluations rejected because the objective could not be computed there.
    starts : ndarray (S, P)
        Starting points, the first being the given ``theta0`` (clipped to the box).
    values : ndarray (S,)
        Final objective of every start.
    bounds : ndarray (P, 2)
        The box.
    free : ndarray of bool (P,)
        The learnt entries.
    at_bound : ndarray of bool (P,)
        Free entries that ended on the box's edge.
    message : str
        L-BFGS-B's last message for the best start.
    """

    theta: np.ndarray
    value: float
    gradient: np.ndarray = field(repr=False)
    gradient_norm: float
    converged: bool
    tolerance: float
    n_iter: int
    n_evaluations: int
    n_failed: int
    starts: np.ndarray = field(repr=False)
    values: np.ndarray = field(repr=False)
    bounds: np.ndarray = field(repr=False)
    free: np.ndarray = field(repr=False)
    at_bound: np.ndarray = field(repr=False)
    message: str = field(repr=False, default="")


def _projected_gradient(theta, gradient, bounds, free):
    """The ascent gradient with fixed entries and outward components at active bounds set to zero."""
    g = np.where(free, gradient, 0.0)
    low, high = bounds[:, 0], bounds[:, 1]
    margin = 1e-9 * np.maximum(1.0, np.where(np.isfinite(high - low), high - low, 1.0))
    at_low = np.isfinite(low) & (theta <= low + margin)
    at_high = np.isfinite(high) & (theta >= high - margin)
    g = np.where(at_low & (g < 0), 0.0, g)
    g = np.where(at_high & (g > 0), 0.0, g)
    return g, (at_low | at_high) & free


class _StartFailed(Exception):
    """The objective cannot be evaluated at a starting point."""


class _Run:
    """One L-BFGS-B run's bookkeeping: the last good point, and rejection of failed evaluations."""

    def __init__(self, objective, theta_template, free):
        self.objective = objective
        self.template = theta_template
        self.free = free
        self.good = None  # (theta, value, gradient) of the last evaluation that succeeded
        self.best = None  # (theta, value, gradient) of the best evaluation
        self.n_evaluations = 0
        self.n_failed = 0
        self.failed_steps = None  # the sum of the failed steps' unit directions, from the last good point
        self.scale = 1.0  # L-BFGS-B minimises −objective / scale (see _run_from)
        self.cache = None  # (x, result) of the evaluation at the start, which L-BFGS-B asks for again

    def full(self, x):
        theta = self.template.copy()
        theta[self.free] = x
        return theta

    def evaluate(self, theta):
        """(value, gradient) of the objective, or None where it cannot be computed."""
        self.n_evaluations += 1
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                value, gradient = self.objective(theta)
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError):
            return None
        value = float(value)
        gradient = np.asarray(gradient, dtype=float)
        if gradient.shape != theta.shape:
            raise ValueError(f"the objective must return a gradient of shape {theta.shape}; got {gradient.shape}")
        if not (np.isfinite(value) and np.all(np.isfinite(gradient))):
            return None
        return value, gradient

    def negative(self, x):
        """What L-BFGS-B minimises: −objective, or a wall around the last good point where that fails."""
        theta = self.full(x)
        if self.cache is not None and np.array_equal(self.cache[0], x):
            result, self.cache = self.cache[1], None
        else:
            result = self.evaluate(theta)
        if result is None:
            self.n_failed += 1
            if self.good is None:
                raise _StartFailed(f"the objective cannot be evaluated at the starting point {theta}")
            good_theta, good_value, _ = self.good
            d = x - good_theta[self.free]
            length = float(np.sqrt(d @ d))
            if length > 0.0:
                self.failed_steps = (0.0 if self.failed_steps is None else self.failed_steps) + d / length
            wall = 1e3 * max(1.0, abs(good_value))
            # a step into a region where the model cannot be computed is rejected: the value rises
            # steeply away from the last good point, so the line search shrinks the step
            return (-good_value + 1.0 + wall * float(d @ d)) / self.scale, 2.0 * wall * d / self.scale
        value, gradient = result
        self.good = (theta, value, gradient)
        if self.best is None or value > self.best[1]:
            self.best = self.good
        return -value / self.scale, -gradient[self.free] / self.scale


#: L-BFGS-B is stopped once the projected gradient is this fraction of the convergence tolerance
POLISH = 0.1


def _run_from(objective, start, bounds, free, max_iter, tol):
    """L-BFGS-B from ``start``, rerun from its last point while the gradient test fails."""
    run = _Run(objective, start, free)
    x = start[free]
    first = run.evaluate(start)
    if first is None:
        raise _StartFailed(f"the objective cannot be evaluated at the starting point {start}")
    run.cache = (x.copy(), first)  # L-BFGS-B's first call asks for it again
    # L-BFGS-B's first step is the gradient itself (its curvature memory starts as the identity): a
    # gradient of 150 would send it to a corner of the box, far from where the optimum is, at the price
    # of evaluations to come back. It minimises −objective / scale, with scale the largest gradient
    # component at the start, so that its first step moves no log-parameter by more than one.
    run.scale = max(1.0, float(np.max(np.abs(first[1][free])))) if free.any() else 1.0
    n_iter, n_calls, message = 0, 0, ""
    previous, failed_before = -np.inf, 0

    def polished(intermediate_result):
        # L-BFGS-B's own tests are set so tight (ftol 1e-13) that it never stops before the gradient
        # test passes; left alone, it then spends evaluations on changes of the objective in its last
        # digits. It is stopped when the projected gradient at its iterate (the last point evaluated, or
        # else the best) is POLISH times the tolerance: what is left to gain, about g²/(2 curvature), is then
        # below the objective's own noise (a softmax Laplace evidence at n = 1000 varies by 1e-7 between
        # evaluations at the same point, each with its own Newton run), where L-BFGS-B's line searches
        # only chase that noise.
        theta, value, gradient = run.good
        if not np.array_equal(theta[free], intermediate_result.x):
            theta, value, gradient = run.best
        projected, _ = _projected_gradient(theta, gradient, bounds, free)
        if projected.size and np.max(np.abs(projected)) <= POLISH * tol * max(1.0, abs(value)):
            raise StopIteration

    while True:
        result = optimize.minimize(
            run.negative,
            x,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds[free],
            callback=polished,
            options={"maxiter": max(1, max_iter - n_iter), "ftol": 1e-13, "gtol": 1e-12, "maxcor": 20},
        )
        n_iter += int(result.nit)
        n_calls += 1
        message = str(result.message)
        theta, value, gradient = run.best
        projected, _ = _projected_gradient(theta, gradient, bounds, free)
        norm = float(np.max(np.abs(projected))) if projected.size else 0.0
        if norm <= tol * max(1.0, abs(value)) or n_iter >= max_iter:
            break
        # No progress possible from here: a rerun with fresh memory could not complete one iteration
        # and the objective has stopped improving. (Comparing the points for equality is not enough:
        # next to a region where the objective cannot be computed, each rerun's failed line search
        # still creeps towards its edge by a few ulps, and the loop would run for millions of
        # evaluations.) The number of L-BFGS-B calls is bounded by ``max_iter`` as well.
        stalled = np.array_equal(theta[free], x) or value - previous <= 1e-13 * max(1.0, abs(value))
        if (result.nit == 0 and stalled) or n_calls >= max_iter:
            break
        # At the edge of a region where the objective cannot be computed, a rerun's line searches fail at once
        # and it creeps along the edge by steps that gain next to nothing; where exactly the edge lies is decided
        # by rounding, so such creeping is noise, not progress. A rerun that met failed evaluations and gained less
        # than POLISH times what the gradient tolerance allows ends the search.
        blocked = run.n_failed > failed_before and value - previous <= POLISH * tol * max(1.0, abs(value))
        if blocked and np.isfinite(previous):
            break
        failed_before = run.n_failed
        previous = value
        x = theta[free]  # rerun with fresh curvature memory from the best point
    return run, n_iter, message


#: How far (in log-parameter units) :func:`maximize` looks from a start at which the gradient test already passes
FLAT_START_PROBE = 1.0

#: How far (in log-parameter units, a factor e² ≈ 7.4) :func:`maximize` looks from its optimum for a higher point
LOCAL_PROBE = 2.0


def _probe_directions(names, free, step, grouped):
    """±``step`` along each free entry; ``grouped``: along each kind of entry at once (every lengthscale of every
    class kernel together, every signal variance together, every ``nu[i]`` together; an unnamed ``theta[j]``
    alone)."""
    groups = {}
    for j in np.flatnonzero(free):
        groups.setdefault(_probe_kind(names[j]) if grouped else j, []).append(j)
    directions = []
    for entries in groups.values():
        direction = np.zeros(free.size)
        direction[entries] = step
        directions += [-direction, direction]
    return directions


def _search_from_best_probe(objective, run, bounds, free, max_iter, tol, reset, directions):
    """(the search, its start) from the highest of the points ``run``'s best + each of ``directions`` (clipped to
    the box), if one is higher than that best by more than the tolerance and the search from it ends higher (else
    None), and the number of probes evaluated."""
    theta, value, _ = run.best
    tolerance = tol * max(1.0, abs(value))
    best_probe, n_probes = None, 0
    for direction in directions:
        probe = np.where(free, np.clip(theta + direction, bounds[:, 0], bounds[:, 1]), theta)
        if np.array_equal(probe, theta):
            continue
        n_probes += 1
        result = _Run(objective, probe, free).evaluate(probe)
        if result is not None and result[0] > value + tolerance and (best_probe is None or result[0] > best_probe[1]):
            best_probe = (probe, result[0])
    if best_probe is None:
        return None, n_probes
    if reset is not None:
        reset()
    try:
        found = _run_from(objective, best_probe[0], bounds, free, max_iter, tol)
    except _StartFailed:
        return None, n_probes
    return ((found, best_probe[0]) if found[0].best[1] > value else None), n_probes


def _probe_kind(name):
    """The kind of a parameter: its name without a class prefix or an index ("class 1: log_lengthscale[2]" is a
    "log_lengthscale"), except for :func:`maximize`'s default names ``theta[j]``, each its own kind."""
    if re.fullmatch(r"theta\[\d+\]", name):
        return name
    return re.sub(r"\[\d+\]$", "", re.sub(r"^class \d+: ", "", name))


def _moved_names(names, step):
    """The kinds of parameter that ``step`` moves, and which way (for :func:`maximize`'s LocalOptimumWarning)."""
    moved = {}
    for j in np.flatnonzero(step):
        moved.setdefault(_probe_kind(names[j]), "up" if step[j] > 0 else "down")
    return " and ".join(f"{kind} {way}" for kind, way in moved.items())


def _passes_gradient_test(best, bounds, free, tol):
    """Whether the point ``best`` = (θ, value, gradient) passes the gradient test (module docstring)."""
    projected, _ = _projected_gradient(best[0], best[2], bounds, free)
    return not projected.size or np.max(np.abs(projected)) <= tol * max(1.0, abs(best[1]))


def _escape_flat_start(objective, run, bounds, free, max_iter, tol, reset, names):
    """A start where the gradient vanishes: the search from the best of θ ± ``FLAT_START_PROBE`` along each free
    entry, if that point is higher (:func:`_search_from_best_probe`)."""
    if not _passes_gradient_test(run.best, bounds, free, tol):
        return None, 0  # not converged at the start: a failed first line search, reported as it is
    directions = _probe_directions(names, free, FLAT_START_PROBE, grouped=False)
    return _search_from_best_probe(objective, run, bounds, free, max_iter, tol, reset, directions)


@limited_blas_threads
def maximize(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    theta0: ArrayLike,
    *,
    bounds: ArrayLike | None = None,
    free: ArrayLike | None = None,
    n_restarts: int = 0,
    rng: np.random.Generator | int | None = None,
    restart_sd: float = 1.0,
    extra_starts: ArrayLike | None = None,
    max_iter: int = 200,
    tol: float = 1e-5,
    reset: Callable[[], None] | None = None,
    progress: bool = False,
    description: str = "maximize",
    warn: bool = True,
    names: Sequence[str] | None = None,
) -> HyperparameterFit:
    r"""Maximise ``objective(theta) -> (value, gradient)`` over a box by L-BFGS-B, with restarts.

    Parameters
    ----------
    objective, reset : callable
        ``theta -> (value, gradient)`` over all of ``theta``; a ``LinAlgError``, ``FloatingPointError`` or non-finite
        value rejects the step (module docstring). The optional ``reset()`` clears a warm start before each start.
    theta0, n_restarts, rng, restart_sd, extra_starts
        The starts, clipped to the box: ``theta0`` (P,) (its entries that are not learnt are kept throughout),
        ``n_restarts`` (default 0) random ones ``theta0 + restart_sd · N(0, I)`` on the free entries (they need
        ``rng``), and the rows of ``extra_starts`` (S, P) (e.g. draws from a prior).
    bounds, free : optional
        The box, (low, high) or an array (P, 2) (default unbounded; hyperparameter searches pass :func:`theta_box`),
        and a bool array (P,) of the entries to learn (default all; see :func:`free_mask`).
    max_iter, tol, progress, description
        L-BFGS-B iterations per start (reruns included), the relative tolerance of the gradient test (module
        docstring), a progress bar over the starts, and the method's name there and in warnings.
    warn, names
        Warn (:class:`~gpc_ref.validation.ConvergenceWarning`) if the best start has not converged and
        (:class:`~gpc_ref.validation.HyperparameterBoundWarning`) if a learnt entry ended on the box's edge, named by
        ``names`` (default ``theta[j]``; kernel names add the edge's meaning, :data:`EDGE_MEANINGS`); ``False`` for
        deliberately partial maximisations (EM's M-step).

    Returns
    -------
    HyperparameterFit
        The optimum of the start with the largest final value (after the two looks around, module docstring), with
        the search's bookkeeping; a search from a probe is listed in ``starts`` and ``values`` beside the others.
    """
    if not callable(objective):
        raise ValueError("objective must be a callable theta -> (value, gradient)")
    theta0 = check_vector(theta0, "theta0")
    size = theta0.size
    if bounds is None:
        bounds = box(size, (-np.inf, np.inf))
    else:
        bounds = np.asarray(bounds, dtype=float)
        if bounds.shape == (2,):  # one (low, high) pair for every entry
            bounds = box(size, (bounds[0], bounds[1]))
        if bounds.shape != (size, 2) or np.any(bounds[:, 0] >= bounds[:, 1]):
            raise ValueError(
                f"bounds must be a (low, high) pair or an array of shape ({size}, 2) with low < high; "
                f"got shape {bounds.shape}"
            )
    free = np.ones(size, dtype=bool) if free is None else np.asarray(free, dtype=bool).reshape(size)
    names = [f"theta[{j}]" for j in range(size)] if names is None else [str(name) for name in names]
    if len(names) != size:
        raise ValueError(f"names must name the {size} entries of theta0; got {len(names)} names")
    n_restarts = check_positive_int(n_restarts, "n_restarts", minimum=0)
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = float(check_positive(tol, "tol"))
    restart_sd = float(check_positive(restart_sd, "restart_sd"))
    starts = [theta0]
    if extra_starts is not None:
        extra = np.atleast_2d(np.asarray(extra_starts, dtype=float))
        if extra.shape[1] != size:
            raise ValueError(f"extra_starts must have {size} columns; got shape {extra.shape}")
        starts += [np.where(free, row, theta0) for row in extra]
    if n_restarts:
        generator = check_rng(rng)
        starts += [theta0 + restart_sd * free * generator.standard_normal(size) for _ in range(n_restarts)]
    # learnt entries start inside the box; entries that are not learnt keep their values
    starts = np.where(free, np.clip(np.array(starts), bounds[:, 0], bounds[:, 1]), theta0)

    best, values, n_evaluations, n_failed = None, [], 0, 0
    for start in with_progress(starts, progress, description):
        if reset is not None:
            reset()
        try:
            run, n_iter, message = _run_from(objective, start, bounds, free, max_iter, tol)
        except _StartFailed:
            values.append(-np.inf)  # a start where the model cannot be computed at all
            continue
        n_evaluations += run.n_evaluations
        n_failed += run.n_failed
        values.append(run.best[1])
        if best is None or run.best[1] > best[0].best[1]:
            best = (run, n_iter, message)
    if best is None:
        raise ValueError(
            f"{description}: the objective could not be evaluated at any starting point (a covariance that "
            "does not factorise?); start from other hyperparameters"
        )
    run, n_iter, message = best

    def beside(probe, found):
        """Count a search from a probe with the others: its start and final value listed beside theirs."""
        nonlocal starts, n_evaluations, n_failed
        starts = np.vstack([starts, probe])
        values.append(found.best[1])
        n_evaluations += found.n_evaluations
        n_failed += found.n_failed

    if warn and n_iter == 0:
        # the gradient test passed at the start itself, which a plateau (an objective that does not depend on θ
        # there) passes as well as an optimum: look around before calling the start the optimum
        escaped, n_probes = _escape_flat_start(objective, run, bounds, free, max_iter, tol, reset, names)
        n_evaluations += n_probes
        if escaped is not None:
            (run, n_iter, message), probe = escaped
            beside(probe, run)
    if warn and _passes_gradient_test(run.best, bounds, free, tol):
        # a stationary point is not always the highest one (two lengthscales can both explain the labels): look
        # LOCAL_PROBE further along each kind of parameter, and search on from a point higher than the optimum
        local_theta, local_value = run.best[0].copy(), run.best[1]
        directions = _probe_directions(names, free, LOCAL_PROBE, grouped=True)
        found, n_probes = _search_from_best_probe(objective, run, bounds, free, max_iter, tol, reset, directions)
        n_evaluations += n_probes
        if found is not None:
            (run, n_iter, message), probe = found
            beside(probe, run)
            warnings.warn(
                f"{description}: the search stopped at a local optimum (objective {local_value:.6g}); a search "
                f"started from it with {_moved_names(names, probe - local_theta)} by {LOCAL_PROBE:g} reached "
                f"{run.best[1]:.6g}, "
                "which is kept. Other optima may be higher still: raise n_restarts",
                LocalOptimumWarning,
                stacklevel=3,
            )
    theta, value, gradient = run.best
    projected, at_bound = _projected_gradient(theta, gradient, bounds, free)
    norm = float(np.max(np.abs(projected))) if projected.size else 0.0
    tolerance = tol * max(1.0, abs(value))
    converged = norm <= tolerance
    if warn and not converged:
        heading = _failure_directions(names, projected, run.n_failed, run.failed_steps, free)
        component = abs(float(projected[heading[0]])) if heading else norm
        warnings.warn(
            f"{description}: not converged after {n_iter} L-BFGS-B iterations: "
            + ("the gradient component is" if heading else "the largest projected gradient component is")
            + f" {component:.3g} (tolerance {tolerance:.3g})"
            f"{_steepest_message(names, theta, projected, run.n_failed, run.failed_steps, free, bounds)}"
            + (f"; the search ended with {_edge_message(names, theta, bounds, at_bound)}" if at_bound.any() else "")
            + "; "
            + ("check the model" if run.n_failed else "raise max_iter or check the model"),
            ConvergenceWarning,
            stacklevel=3,
        )
    if warn and converged and at_bound.any():  # an unconverged search has said where it ended, in one warning
        warnings.warn(
            f"{description}: the optimum is on the edge of the hyperparameter box (the objective does not fall "
            f"beyond it, so the value learnt is the box's): {_edge_message(names, theta, bounds, at_bound)}",
            HyperparameterBoundWarning,
            stacklevel=3,
        )
    return HyperparameterFit(
        theta=theta.copy(),
        value=float(value),
        gradient=gradient.copy(),
        gradient_norm=norm,
        converged=bool(converged),
        tolerance=float(tolerance),
        n_iter=int(n_iter),
        n_evaluations=int(n_evaluations),
        n_failed=int(n_failed),
        starts=starts,
        values=np.array(values),
        bounds=bounds,
        free=free,
        at_bound=at_bound,
        message=message,
    )
