"""The package's warnings and errors, in one place.

Every warning that says a fit did not reach a usable result is a :class:`ConvergenceWarning` (filter that
one name to silence them all, or a subclass to silence one kind); a matrix that needed more jitter than
requested gives a :class:`JitterWarning`; an estimator asked to predict before ``fit`` raises
:class:`NotFittedError`. Bad arguments raise ``ValueError`` or ``TypeError`` naming the argument
(:mod:`gpc_ref.validation`).

This module imports nothing from the package, so that every other module can import it.
"""

__all__ = [
    "ConvergenceWarning",
    "HyperparameterBoundWarning",
    "QuadratureWarning",
    "BelowClassFrequenciesWarning",
    "MemorisingKernelWarning",
    "LocalOptimumWarning",
    "JitterWarning",
    "NotFittedError",
]


class ConvergenceWarning(UserWarning):
    """An iterative method stopped before its convergence test was met.

    The message names the method, the iteration (or sweep) count and the size of whatever
    the test looks at (a gradient norm, a change of the objective, a site change), so that
    the reader can tell "almost there" from "nowhere near".
    """


class HyperparameterBoundWarning(ConvergenceWarning):
    """A learnt hyperparameter ended on the edge of its search box.

    The maximiser (:func:`gpc_ref.hyperparameters.maximize`) has converged in the box (its projected
    gradient is zero), but its optimum is where the box ends: the objective does not fall beyond the
    edge, so the value learnt is the box's, not the data's. The message names the parameter, its value,
    the edge and what that edge means for a kernel (an ARD lengthscale at the upper edge: the input is
    switched off).
    """


class QuadratureWarning(ConvergenceWarning):
    """The tensor Gauss–Hermite rule of :func:`gpc_ref.exact.quadrature_posterior` has not converged."""


class BelowClassFrequenciesWarning(ConvergenceWarning):
    """A fitted IVM predicts its own training labels worse than the class frequencies do.

    Raised by :class:`~gpc_ref.classifiers.SparseIVM` when the mean training log predictive
    probability (:func:`gpc_ref.ivm.training_log_predictive`) is below that of the constant classifier
    that predicts the training class frequencies (:func:`gpc_ref.ivm.class_frequency_log_predictive`).
    A subclass of :class:`ConvergenceWarning`, the package's one warning family for a fit that did not
    reach a usable result (filter it by this name to silence it alone).
    """


class LocalOptimumWarning(ConvergenceWarning):
    """A search converged at a stationary point that a nearby probe showed not to be the highest.

    :func:`gpc_ref.hyperparameters.maximize` evaluates the objective ``LOCAL_PROBE`` (2, a factor e² ≈ 7.4) away
    from its optimum along each kind of parameter (all lengthscales together, all signal variances together); where
    one probe is higher, it searches on from there and keeps the higher optimum. The warning names both values and
    the direction: the start alone would have given the lower one, and other optima may be higher still (restarts).
    """


class MemorisingKernelWarning(ConvergenceWarning):
    """A fitted kernel correlates (almost) no training input with any other distinct input.

    Raised by every estimator after ``fit`` (``classifiers.base``): the median, over the training
    inputs, of the SE correlation exp(−½ Σ_d (Δx_d/ℓ_d)²) with the nearest *distinct* training input is
    below :data:`gpc_ref.classifiers.base.SMALLEST_NEIGHBOUR_CORRELATION`. Such a classifier reproduces
    its training labels and predicts the prior's probability (½ without a bias term) everywhere else:
    a constant classifier away from the data. The message says what can cause it here: inputs on a
    scale the lengthscale cannot see, or repeated inputs, whose perfect correlation a short lengthscale
    rewards.
    """


class JitterWarning(UserWarning):
    """A matrix needed more jitter than requested before it would factorise."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was asked to predict before ``fit`` was called."""
