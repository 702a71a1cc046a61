"""The estimator contract shared by the seven estimators: parameters, input checks, ``predict`` and ``score``."""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import threads
from ..datasets import Standardizer
from ..errors import ConvergenceWarning
from ..errors import MemorisingKernelWarning
from ..errors import NotFittedError
from ..kernels import SEKernel
from ..threads import limit_blas_threads
from ..validation import check_bool
from ..validation import check_class_labels
from ..validation import check_matrix
from ..validation import check_rng
from ..validation import check_same_length

if TYPE_CHECKING:  # scikit-learn is imported only when scikit-learn asks for the tags
    from sklearn.utils import Tags

__all__ = ["GPCBase", "binary_columns", "mixture_moments"]


class GPCBase:
    """Shared plumbing of the seven estimators: parameters, input checks, ``predict`` and ``score``.

    Subclasses store their constructor's arguments with ``self._store_params(locals())`` and
    implement ``_fit(X, codes, kernel, rng)``, ``_predict_latent(X)`` and ``_predict_proba(X)``
    (called with checked inputs); they set ``_binary_only`` if they handle two classes only.
    """

    _binary_only = False

    # ------------------------------------------------------------------ scikit-learn protocol
    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def _store_params(self, arguments: dict[str, Any]) -> None:
        """Store every constructor argument, unchanged, as the attribute of the same name.

        scikit-learn's convention: ``__init__`` only stores its arguments (``fit`` checks them), so
        that ``get_params`` reads back exactly what was passed. Each ``__init__`` passes its
        ``locals()``.
        """
        for name in self._param_names():
            setattr(self, name, arguments[name])

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments as a dict; with ``deep``, also the kernel's as ``kernel__<name>``.

        A ``kernel`` of None exposes the parameters of the default kernel, so that a grid search
        over ``kernel__lengthscale`` works without naming a kernel first.

        Parameters
        ----------
        deep : bool
            Include the parameters of a single SEKernel (or of the default kernel).

        Returns
        -------
        dict
            Argument name to value.
        """
        params = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            kernel = self.kernel if self.kernel is not None else self._default_kernel()
            if isinstance(kernel, SEKernel):
                params.update({f"kernel__{key}": value for key, value in kernel.get_params().items()})
        return params

    def set_params(self, **params: Any) -> GPCBase:
        """Set constructor arguments, and kernel parameters given as ``kernel__<name>``.

        Parameters
        ----------
        **params
            Constructor arguments by name; ``kernel__<name>`` replaces ``kernel`` by a copy with that
            kernel argument changed (a kernel shared with other estimators is never changed).

        Returns
        -------
        GPCBase
            The estimator itself.
        """
        valid = self._param_names()
        kernel_params = {}
        for name, value in params.items():
            if name.startswith("kernel__"):
                kernel_params[name[len("kernel__") :]] = value
                continue
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; valid parameters: {valid}")
            setattr(self, name, value)
        if kernel_params:
            kernel = self.kernel if self.kernel is not None else self._default_kernel()
            if not isinstance(kernel, SEKernel):
                raise ValueError("kernel__<name> parameters need a single SEKernel as the kernel")
            # a fresh copy: a kernel object shared with other estimators is never changed
            self.kernel = kernel.with_params(**kernel_params)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self) -> Tags:
        """Declare a classifier to scikit-learn ≥ 1.6 (imported only when scikit-learn asks)."""
        from sklearn.utils import ClassifierTags
        from sklearn.utils import InputTags
        from sklearn.utils import Tags
        from sklearn.utils import TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=not self._binary_only, poor_score=False),
            input_tags=InputTags(two_d_array=True),
        )

    def __sklearn_is_fitted__(self) -> bool:
        """True once ``fit`` has run (scikit-learn's ``check_is_fitted`` asks this)."""
        return hasattr(self, "classes_")

    # ------------------------------------------------------------------ the estimator's own defaults
    #: True where the default kernel is set from the inputs' spread (SparseIVM's median distance): no scale warning
    _default_kernel_scales_with_data = False
    #: True where ``log_marginal_likelihood_`` is the learnt kernel's (approximate) log evidence or a bound on it,
    #: compared after a learning fit with the constant classifier's n log(1/C) (VB probit says so in its own words)
    _evidence_is_learnt = False

    def _default_kernel(self) -> SEKernel:
        """The kernel used when ``kernel`` is None: a unit SE kernel (its lengthscale set from the data at ``fit`` where
        the unit one would correlate almost no training input with another: ``_default_kernel_for``)."""
        return SEKernel()

    def _kernel_or_default(self) -> SEKernel | list[SEKernel]:
        kernel = self.kernel
        if kernel is None:
            return self._default_kernel()
        if isinstance(kernel, SEKernel):
            return kernel
        if isinstance(kernel, (list, tuple)) and kernel and all(isinstance(k, SEKernel) for k in kernel):
            return list(kernel)
        raise ValueError(f"kernel must be an SEKernel, a list of SEKernels (one per class) or None; got {kernel!r}")

    # ------------------------------------------------------------------ fitting
    def fit(self, X: ArrayLike, y: ArrayLike) -> GPCBase:
        """Fit the classifier to inputs ``X`` and labels ``y``.

        Parameters
        ----------
        X : array-like (n, D)
            Training inputs (a DataFrame's string column names become ``feature_names_in_``).
        y : array-like (n,)
            Class labels of any kind (strings, integers); at least two distinct values, and two
            only for the binary estimators.

        Returns
        -------
        GPCBase
            The fitted estimator itself.
        """
        X, codes = self._validate_training_data(X, y)
        check_bool(self.optimize, "optimize")
        check_bool(self.progress, "progress")
        rng = check_rng(self.rng)
        names = getattr(self, "feature_names_in_", None)
        if (
            self.kernel is None
            and not self._default_kernel_scales_with_data
            and _standardise_if_unstandardised(X, type(self).__name__, names)
        ):
            # the default unit kernel cannot see inputs on other scales: fit on standardised inputs (said once)
            self.standardizer_ = Standardizer().fit(X)
            X = self.X_train_ = self.standardizer_.transform(X)
        kernel = self._kernel_or_default()
        if self.kernel is None and not self._default_kernel_scales_with_data:
            kernel = _default_kernel_for(kernel, X)
        # one BLAS thread for the small-matrix loops (gpc_ref.threads, benchmarks/threads.py)
        with limit_blas_threads(threads.BLAS_THREADS):
            self._fit(X, codes, kernel, rng)
        _warn_if_memorising(self.kernel_, X, type(self).__name__, len(self.classes_))
        if self.optimize and self._evidence_is_learnt:
            _warn_if_constant_classifier(self.log_marginal_likelihood_, len(X), len(self.classes_), type(self).__name__)
        return self

    def _validate_training_data(self, X, y):
        """Check ``X`` and ``y``; set ``classes_``, ``n_features_in_``, ``feature_names_in_``, ``X_train_``."""
        names = _feature_names(X)
        X = check_matrix(X, "X")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        classes, codes = check_class_labels(y, "y", min_classes=2)
        check_same_length(X, codes, "X", "y")
        if self._binary_only and len(classes) > 2:
            raise ValueError(
                f"Only binary classification is supported. {type(self).__name__} handles two classes; y has "
                f"{len(classes)} ({classes.tolist()[:6]}). The multi-class methods are LaplaceGPC, VBProbitGPC, "
                "GibbsProbitGPC and SparseIVM."
            )
        for attribute in ("classes_", "n_features_in_", "feature_names_in_", "X_train_", "standardizer_"):
            self.__dict__.pop(attribute, None)  # a refit starts clean
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        self.X_train_ = X
        return X, codes

    def _validate_test_data(self, X):
        """Check that the estimator is fitted and that ``X`` matches the training features; standardise as ``fit`` did."""
        if not hasattr(self, "classes_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) before predicting"
            )
        names = _feature_names(X)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and names is not None and not np.array_equal(names, fitted_names):
            raise ValueError(
                f"X has feature names {names.tolist()} but {type(self).__name__} was fitted with "
                f"{fitted_names.tolist()}; pass the same columns in the same order"
            )
        X = check_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting {self.n_features_in_} features "
                "as input"
            )
        standardizer = getattr(self, "standardizer_", None)
        return X if standardizer is None else standardizer.transform(X)

    # ------------------------------------------------------------------ predictions
    def _on_test_data(self, method, X):
        """``method(X)`` after checking ``X``, with the BLAS threads limited (gpc_ref.threads)."""
        X = self._validate_test_data(X)
        with limit_blas_threads(threads.BLAS_THREADS):
            return method(X)

    def predict_latent(self, X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The latent predictive distribution at ``X``: its mean and (co)variance.

        Each estimator's ``_predict_latent`` says how it is formed (e.g. the moments of a mixture
        over samples).

        Parameters
        ----------
        X : array-like (m, D)
            Test inputs, with the features (and, for a DataFrame, the column names) ``fit`` saw.

        Returns
        -------
        mean, cov : ndarray
            Two classes: the mean and variance of f(x), each of shape (m,). C classes: the means
            (m, C) and covariances (m, C, C) of the C latent values (diagonal for VBProbitGPC and
            SparseIVM, whose approximate posteriors factorise over the classes).
        """
        return self._on_test_data(self._predict_latent, X)

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities at ``X``, computed as the estimator's class docstring and ``_predict_proba`` say.

        Parameters
        ----------
        X : array-like (m, D)
            Test inputs, checked as in :meth:`predict_latent`.

        Returns
        -------
        ndarray (m, C)
            Row i holds the predictive probabilities of the classes at ``X[i]``, in ``classes_`` order.
        """
        return self._on_test_data(self._predict_proba, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The most probable class of each row of ``X``.

        Parameters
        ----------
        X : array-like (m, D)
            As in :meth:`predict_proba`, which this calls.

        Returns
        -------
        ndarray (m,)
            The label in ``classes_`` of largest probability.
        """
        proba = self.predict_proba(X)  # first: it raises NotFittedError before fit, before classes_ is read
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean accuracy on ``(X, y)``, as scikit-learn's classifiers report it.

        Parameters
        ----------
        X : array-like (m, D)
            As in :meth:`predict`.
        y : array-like (m,) or (m, 1)
            The true labels.

        Returns
        -------
        float
            The fraction of points whose predicted label equals ``y``.
        """
        y = np.asarray(y)
        return float(np.mean(self.predict(X) == (y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y)))


#: The largest spread of an input, in units of the default kernel's lengthscale (1), at which fitting starts
#: where the covariance between training points is still informative: beyond it K is close to σ_f² I at the
#: start, the evidence is flat in the lengthscale, and a learner can end at a constant classifier without a word.
LARGEST_INPUT_SCALE = 10.0


def _standardise_if_unstandardised(X, estimator, names=None):
    """True, after one warning naming the columns, when the inputs are on a scale the default unit kernel cannot see.

    The estimator then fits on inputs standardised with the training set's means and standard deviations
    (``standardizer_``), and applies the same map to every test input: ``kernel_`` is in standardised units.
    """
    spread = np.std(X, axis=0)
    wide = np.flatnonzero(spread > LARGEST_INPUT_SCALE)
    positive = spread[spread > 0]
    mixed = positive.size > 1 and positive.max() > 1e3 * positive.min()
    if not wide.size and not mixed:
        return False
    columns = wide if wide.size else np.flatnonzero(spread == positive.max())
    label = [str(names[j]) if names is not None else str(j) for j in columns[:6]]
    more = f" and {columns.size - 6} more" if columns.size > 6 else ""
    warnings.warn(
        f"{estimator}: the inputs look unstandardised: column(s) {', '.join(label)}{more} have standard deviation "
        f"{', '.join(f'{spread[j]:.3g}' for j in columns[:6])}"
        + (f" (the smallest is {positive.min():.3g})" if mixed else "")
        + ", while the default kernel has lengthscale 1 in every input, on which scale it would see (almost) no "
        "covariance between training points. The estimator therefore standardises the inputs itself (each column "
        "to mean 0 and standard deviation 1 on the training set; standardizer_ holds the map, applied to test "
        "inputs too, and kernel_ is in standardised units); standardise them yourself "
        "(gpc_ref.datasets.Standardizer) or pass a kernel whose lengthscales fit their scale to silence this",
        UserWarning,
        stacklevel=3,
    )
    return True


#: Below this median correlation of a training input with its nearest distinct neighbour the fitted kernel is
#: called memorising (:class:`~gpc_ref.errors.MemorisingKernelWarning`): exp(−½ d²/ℓ²) = 0.01 at d = 3ℓ.
SMALLEST_NEIGHBOUR_CORRELATION = 0.01

#: The memorising check looks at the nearest neighbours of at most this many training inputs (evenly spaced)
NEIGHBOUR_CHECK_POINTS = 500


def nearest_neighbour_correlations(kernel: SEKernel, X: np.ndarray) -> tuple[np.ndarray, int]:
    """The SE correlation of training inputs with their nearest distinct training input, and the repeats in ``X``.

    Parameters
    ----------
    kernel : SEKernel
        Its lengthscales ℓ_d scale the distances: the correlation is exp(−½ Σ_d ((x_d − x'_d)/ℓ_d)²).
    X : ndarray (n, D)
        The inputs the kernel was fitted on; at most :data:`NEIGHBOUR_CHECK_POINTS` of them, evenly
        spaced, are looked at (each against all n).

    Returns
    -------
    correlations : ndarray (m,)
        For each input looked at, its largest correlation with an input that differs from it (0 if none does).
    n_repeated : int
        How many rows of ``X`` repeat an earlier row exactly.
    """
    Z = X / np.broadcast_to(kernel.lengthscale, (X.shape[1],))
    looked = np.unique(np.linspace(0, len(X) - 1, min(len(X), NEIGHBOUR_CHECK_POINTS)).astype(int))
    correlations = np.zeros(looked.size)
    for start in range(0, len(Z), 4096):  # never an (m, n) block of more than 500 × 4096
        block = Z[start : start + 4096]
        squared = np.sum((Z[looked, None, :] - block[None, :, :]) ** 2, axis=2)
        squared[squared == 0.0] = np.inf  # the input itself, and exact repeats of it, do not count
        correlations = np.maximum(correlations, np.exp(-0.5 * np.min(squared, axis=1)))
    return correlations, len(X) - len(np.unique(X, axis=0))


def _default_kernel_for(kernel, X):
    """The default kernel, with its lengthscale the median distance between training inputs where its own would memorise.

    In many dimensions even standardised inputs are far apart in units of a unit lengthscale (30 standard normal
    inputs: a nearest neighbour at correlation about 1e-7), so a search from it starts on the plateau where the
    objective does not depend on the lengthscale; the median heuristic (:func:`gpc_ref.ivm.median_distance_kernel`)
    puts a typical pair at correlation e^(−1/2). Where the unit kernel sees its neighbours, it is kept.
    """
    from ..ivm import median_distance_kernel

    correlations, _ = nearest_neighbour_correlations(kernel, X)
    if not correlations.size or np.median(correlations) >= SMALLEST_NEIGHBOUR_CORRELATION:
        return kernel
    return kernel.with_params(lengthscale=median_distance_kernel(X).lengthscale)


def _warn_if_memorising(kernel, X, estimator, n_classes):
    """Warn (MemorisingKernelWarning) when the fitted kernel correlates almost no training input with another."""
    for c, one in enumerate(kernel if isinstance(kernel, list) else [kernel]):
        correlations, n_repeated = nearest_neighbour_correlations(one, X)
        median = float(np.median(correlations)) if correlations.size else 1.0
        if median >= SMALLEST_NEIGHBOUR_CORRELATION:
            continue
        whose = f"the kernel of class {c} " if isinstance(kernel, list) else "the kernel "
        warnings.warn(
            f"{estimator}: {whose}fitted (lengthscale {_lengthscale_text(one)}) correlates almost no training input "
            f"with any other: the median correlation with the nearest distinct training input is {median:.2g}. The "
            "classifier reproduces its training labels and predicts what the prior predicts away from them ("
            + ("½" if n_classes == 2 else f"1/{n_classes} for each class")
            + " without a bias term)"
            + (
                f"; {n_repeated} of the {len(X)} training inputs repeat another exactly, and a kernel that correlates "
                "only repeated inputs fits them well, which the objective rewards: merge or remove the repeats"
                if n_repeated
                else ""
            )
            + ". Check the inputs' scale against the lengthscales, or start from a longer lengthscale",
            MemorisingKernelWarning,
            stacklevel=3,
        )
        return


def _warn_if_constant_classifier(log_evidence, n, n_classes, estimator):
    """Warn (ConvergenceWarning) when a learnt kernel's log evidence is within one nat of n log(1/C): the labels are
    explained no better than by probabilities 1/C everywhere, which is what the plateaus where the signal variance
    vanishes or the lengthscale falls far below the inputs' spacing give (the evidence is n log(1/C) on both)."""
    floor = n * np.log(1.0 / n_classes)
    if log_evidence >= floor + 1.0:
        return
    warnings.warn(
        f"{estimator}: the learnt kernel explains the training labels no better than probability 1/{n_classes} for "
        f"every class everywhere: its log evidence, {log_evidence:.2f}, is within one nat of n log(1/{n_classes}) = "
        f"{floor:.2f}, the value on the plateaus where the signal variance vanishes or the lengthscale is far below "
        "the inputs' spacing. Either the inputs carry no signal this kernel can see, or the search ended on such a "
        "plateau: check the fit (n_restarts, another starting kernel)",
        ConvergenceWarning,
        stacklevel=3,
    )


def _lengthscale_text(kernel):
    lengthscale = np.atleast_1d(kernel.lengthscale)
    return f"{lengthscale[0]:.3g}" if lengthscale.size == 1 else f"{lengthscale.min():.3g} to {lengthscale.max():.3g}"


def _feature_names(X):
    """The string column names of a DataFrame-like ``X``, or None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(columns, dtype=object)
    return names if names.size and all(isinstance(name, str) for name in names) else None


def binary_columns(p: np.ndarray) -> np.ndarray:
    """(m, 2) probabilities (P(classes_[0]), P(classes_[1])) from P(classes_[1]).

    Parameters
    ----------
    p : ndarray (m,)
        P(classes_[1]), the paper's P(y = +1).

    Returns
    -------
    ndarray (m, 2)
    """
    return np.column_stack([1.0 - p, p])


def mixture_moments(means: np.ndarray, variances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of an equal-weight mixture of Gaussians (law of total covariance).

    Parameters
    ----------
    means : ndarray (S, m, C)
        The components' means.
    variances : ndarray (m, C)
        Their variances, shared by the components, the classes independent.

    Returns
    -------
    mean : ndarray (m, C)
    cov : ndarray (m, C, C)
    """
    mean = means.mean(axis=0)
    centred = means - mean
    cov = np.einsum("smc,smd->mcd", centred, centred) / means.shape[0]
    cov[:, np.arange(mean.shape[1]), np.arange(mean.shape[1])] += variances
    return mean, cov
