"""Every input check of :mod:`gpc_ref`, and the package's two exceptions.

Each ``check_*`` helper either returns a clean numpy array (or number) or raises a
``ValueError`` whose message names the argument and says what was expected. Keeping the
checks in one place means every method reports bad input in the same words. The ``name``
argument of every check is the argument's name as the caller's signature spells it; the
error message starts with it.

The exception and warning classes live here too, so that every module raises and every user
filters the same ones:

- :class:`ConvergenceWarning`: every iterative method of the package that stops before its
  convergence test is met warns with (a subclass of) this class, naming the iteration count.
  Its subclass :class:`HyperparameterBoundWarning` says that a learnt hyperparameter ended on the
  edge of its search box.
- :class:`NotFittedError`: an estimator used before ``fit``. It subclasses both
  ``ValueError`` and ``AttributeError``, as scikit-learn's own ``NotFittedError`` does, so
  scikit-learn's tools recognise it without :mod:`gpc_ref` importing scikit-learn.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from collections.abc import Sequence
from collections.abc import Sized
from typing import Protocol
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from .errors import ConvergenceWarning  # re-exported: the package's warnings live in gpc_ref.errors
from .errors import HyperparameterBoundWarning
from .errors import NotFittedError


class KernelLike(Protocol):
    """What :func:`check_kernel` asks of a kernel: the interface of :class:`gpc_ref.SEKernel`.

    (A protocol rather than the class, so that this module, which kernels imports, imports nothing back.)
    """

    theta: np.ndarray
    theta_names: Sequence[str]

    def K(self, X, X2=None): ...

    def diag(self, X): ...

    def gradients(self, X): ...

    def with_theta(self, theta): ...


_T = TypeVar("_T")

__all__ = [
    "ConvergenceWarning",
    "HyperparameterBoundWarning",
    "NotFittedError",
    "check_matrix",
    "check_vector",
    "check_same_length",
    "check_train_test",
    "check_pm1_labels",
    "check_chain",
    "check_run_lengths",
    "check_interface",
    "check_binary_labels",
    "check_class_labels",
    "check_class_codes",
    "check_one_hot",
    "check_covariance",
    "check_covariance_stack",
    "check_covariance_derivatives",
    "check_test_covariances",
    "check_kernel",
    "check_positive",
    "check_positive_scalar",
    "check_positive_vector",
    "check_positive_int",
    "check_probability",
    "check_choice",
    "check_bool",
    "check_rng",
]


def _as_float_array(value, name, what):
    if sparse.issparse(value):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array ({name}.toarray())")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be {what}; got {type(value).__name__} ({exc})") from exc
    if array.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must be {what}")
    try:
        return np.asarray(array, dtype=float)
    except TypeError as exc:  # an entry that is not a number at all (e.g. a dict)
        raise TypeError(f"{name} must be {what}: {exc}") from exc
    except ValueError as exc:  # e.g. a string that is not a number
        raise ValueError(f"{name} must be {what}; got {type(value).__name__} ({exc})") from exc


def _as_matrix_stack(value, name, what):
    """``value`` as a float array of matrices; a single matrix becomes a stack of one."""
    array = _as_float_array(value, name, what)
    return array[None] if array.ndim == 2 else array


def _check_finite(array, name):
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_matrix(
    X: ArrayLike,
    name: str = "X",
    *,
    n_features: int | None = None,
    n_points: int | None = None,
    allow_vector: bool = False,
) -> np.ndarray:
    """Return ``X`` as a finite float array of shape (n, d).

    Parameters
    ----------
    X : array-like
        The data.
    name : str
        The argument's name, used in error messages (as everywhere in this module).
    n_features : int, optional
        Required number of columns.
    n_points : int, optional
        Required number of rows (e.g. the training inputs a fitted posterior belongs to).
    allow_vector : bool
        Read a 1-D array as n points with one feature each. Only the kernels allow this
        (the 1-D examples of the book pass ``x`` directly); the estimators and the
        algorithms ask for a 2-D ``X`` so that a row of features is never silently read as
        a column of points.

    Returns
    -------
    ndarray of shape (n, d)
    """
    X = _as_float_array(X, name, "a numeric array")
    if X.ndim == 1 and allow_vector:
        X = X[:, None]
    if X.ndim != 2:
        hint = (
            (
                " (Reshape your data with X.reshape(-1, 1) if it has a single feature, or X.reshape(1, -1) if "
                "it is a single point)"
            )
            if X.ndim == 1
            else ""
        )
        raise ValueError(f"{name} must be a 2-D array of shape (n_points, n_features); got shape {X.shape}{hint}")
    if X.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one point; got shape {X.shape} (0 samples)")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    _check_finite(X, name)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} feature(s) per point; got {X.shape[1]}")
    if n_points is not None and X.shape[0] != n_points:
        raise ValueError(f"{name} must hold the {n_points} points the result was computed for; got {X.shape[0]}")
    return X


def check_train_test(X: ArrayLike, X_test: ArrayLike, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """Training inputs ``X`` (``n_train`` rows) and test inputs ``X_test`` with as many features.

    Parameters
    ----------
    X : array-like (n_train, D)
        The training inputs a fitted result belongs to.
    X_test : array-like (m, D)
        Test inputs.
    n_train : int
        The number of training points the result was computed for.

    Returns
    -------
    X, X_test : ndarray
        The two checked arrays (:func:`check_matrix`).
    """
    X = check_matrix(X, "X", n_points=n_train)
    return X, check_matrix(X_test, "X_test", n_features=X.shape[1])


def check_vector(v: ArrayLike, name: str = "v", *, length: int | None = None) -> np.ndarray:
    """Return ``v`` as a finite 1-D float array, optionally of a given length.

    Parameters
    ----------
    v : array-like or scalar
        A scalar becomes a vector of length one.
    name : str
        Named in the error messages.
    length : int, optional
        The length ``v`` must have.

    Returns
    -------
    ndarray (length,)
    """
    v = np.atleast_1d(_as_float_array(v, name, "a numeric vector"))
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {v.shape}")
    _check_finite(v, name)
    if length is not None and v.shape[0] != length:
        raise ValueError(f"{name} must have length {length}; got {v.shape[0]}")
    return v


def check_pm1_labels(y: ArrayLike, name: str = "y") -> np.ndarray:
    """Return labels already coded in {-1, +1} as a float array (the likelihoods' fast path).

    Parameters
    ----------
    y : array-like
        Labels of any shape; only the values are checked.
    name : str
        The labels' argument name.

    Returns
    -------
    ndarray
        ``y`` as floats, same shape.
    """
    y = np.asarray(y, dtype=float)
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{name} must hold labels in {{-1, +1}} (check_binary_labels converts other codings)")
    return y


def check_chain(chain: ArrayLike, name: str = "chain") -> np.ndarray:
    """Return a Markov chain as a finite float array of shape (n,) or (n, D) with n >= 2.

    Parameters
    ----------
    chain : array-like (n,) or (n, D)
        Successive states, one row per iteration.
    name : str
        For the messages.

    Returns
    -------
    ndarray (n,) or (n, D)
    """
    x = _as_float_array(chain, name, "a chain of numbers")
    if x.ndim not in (1, 2) or x.shape[0] < 2:
        raise ValueError(f"{name} must be a chain of shape (n,) or (n, D) with n >= 2; got shape {x.shape}")
    _check_finite(x, name)
    return x


def check_run_lengths(n_samples: int, burn_in: int, thin: int) -> tuple[int, int, int]:
    """``(n_samples, burn_in, thin)`` of a sampler as ints: at least one sample, no negative burn-in, thin >= 1.

    Parameters
    ----------
    n_samples, burn_in, thin : int
        Samples kept, iterations discarded first, and iterations per kept sample.

    Returns
    -------
    tuple of int
        The three, as Python ints.
    """
    return (
        check_positive_int(n_samples, "n_samples"),
        check_positive_int(burn_in, "burn_in", minimum=0),
        check_positive_int(thin, "thin"),
    )


def check_interface(obj: _T, name: str, methods: Sequence[str], example: str) -> _T:
    """Return ``obj`` after checking that it has the ``methods`` an algorithm calls (duck typing).

    Parameters
    ----------
    obj : object
        E.g. a likelihood object.
    name : str
        Its argument name.
    methods : sequence of str
        The method names the algorithm calls.
    example : str
        An object that would do, quoted in the error message (e.g. ``"ProbitLikelihood()"``).

    Returns
    -------
    object
        ``obj`` itself.
    """
    if not all(callable(getattr(obj, method, None)) for method in methods):
        signature = " and ".join(f"{method}(...)" for method in methods)
        raise ValueError(f"{name} must provide {signature}, e.g. {example}; got {type(obj).__name__}")
    return obj


def check_same_length(a: Sized, b: Sized, name_a: str = "X", name_b: str = "y") -> None:
    """Raise if two arrays do not describe the same number of points.

    Parameters
    ----------
    a, b : sized
        Compared by ``len``.
    name_a, name_b : str
        Their argument names.
    """
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b} must have the same number of points; got {len(a)} and {len(b)}")


def _label_vector(y, name):
    if y is None:
        raise ValueError(f"this method requires y to be passed, but the target y is None ({name} must hold labels)")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:  # a column vector, as scikit-learn accepts
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels; got shape {y.shape}")
    if y.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one label")
    return y


def check_binary_labels(y: ArrayLike, name: str = "y", *, coding: str = "pm1", length: int | None = None) -> np.ndarray:
    """Return binary labels in the requested coding.

    ``y`` must already use one of the two codings the papers use: {-1, +1} (Williams &
    Barber, Kim & Ghahramani, GPML) or {0, 1} (Gibbs & MacKay's t). Use
    :func:`check_class_labels` to map arbitrary label values first.

    Parameters
    ----------
    y : array-like (n,) or (n, 1)
        Labels in {-1, +1} or {0, 1}.
    name : str
        The argument's name.
    coding : {"pm1", "01"}
        ``"pm1"`` returns {-1, +1}; ``"01"`` returns {0, 1}.
    length : int, optional
        The number of points the labels must match.

    Returns
    -------
    ndarray (n,)
        Float labels in the requested coding.
    """
    y = _label_vector(y, name)
    yf = _as_float_array(y, name, "numeric labels in {-1, +1} or {0, 1}")
    _check_finite(yf, name)
    if length is not None and yf.shape[0] != length:
        raise ValueError(f"{name} must have one label per point ({length}); got {yf.shape[0]}")
    if np.all((yf == 1.0) | (yf == -1.0)):
        pm1 = yf
    elif np.all((yf == 1.0) | (yf == 0.0)):
        pm1 = 2.0 * yf - 1.0
    else:
        values = np.unique(yf).tolist()
        raise ValueError(f"{name} must hold labels in {{-1, +1}} or {{0, 1}}; got values {values[:6]}")
    if coding == "pm1":
        return pm1
    if coding == "01":
        return (pm1 + 1.0) / 2.0
    raise ValueError(f"coding must be 'pm1' or '01'; got {coding!r}")


def check_class_labels(
    y: ArrayLike, name: str = "y", *, min_classes: int = 2, classes: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary labels to integer codes 0..C-1.

    Raises if there are fewer than ``min_classes`` distinct labels or a label lies outside the
    declared set.

    Parameters
    ----------
    y : array-like (n,) or (n, 1)
        Labels of any kind (strings, integers, integer-valued floats); a column vector is accepted.
    name : str
        The argument's name.
    min_classes : int
        Distinct labels ``y`` must show.
    classes : array-like, optional
        The declared label values, in code order; by default the sorted distinct values of ``y``.

    Returns
    -------
    classes : ndarray (C,)
        The sorted label values (or the declared ``classes``).
    codes : ndarray (n,) of int
        ``codes[i]`` is the index of ``y[i]`` in ``classes``.
    """
    y = _label_vector(y, name)
    if y.dtype.kind == "c":
        raise ValueError(f"Unknown label type: {name} holds complex numbers")
    if y.dtype.kind == "f":
        _check_finite(y, name)
        if np.any(y != np.round(y)):
            raise ValueError(
                f"Unknown label type: {name} holds non-integer floats (a continuous target); a classifier needs "
                "class labels (integers, strings, ...)"
            )
    if classes is None:
        classes, codes = np.unique(y, return_inverse=True)
    else:
        classes = np.asarray(classes)
        lookup = {value: index for index, value in enumerate(classes.tolist())}
        unknown = sorted({value for value in y.tolist() if value not in lookup}, key=str)
        if unknown:
            raise ValueError(f"{name} has labels {unknown[:6]} outside the declared classes {classes.tolist()}")
        codes = np.array([lookup[value] for value in y.tolist()], dtype=int)
    n_present = len(np.unique(codes))
    if n_present < min_classes:
        raise ValueError(
            f"{name} has {n_present} class ({np.unique(y).tolist()[:6]}); a classifier needs at least {min_classes} "
            "classes"
        )
    return classes, codes.astype(int).ravel()


def check_class_codes(
    t: ArrayLike, n_points: int, n_classes: int | None = None, name: str = "t", *, require_all: bool = True
) -> tuple[np.ndarray, int]:
    """Return ``(codes, n_classes)`` after checking that ``t`` holds class codes 0..C-1.

    The papers number classes 1..C; the package uses 0..C-1 (the estimators map any labels
    to these codes).

    Parameters
    ----------
    t : array-like (n_points,)
        Integer class codes.
    n_points : int
        One code per point.
    n_classes : int, optional
        C (at least 2); by default one more than the largest code.
    name : str
        The codes' argument name.
    require_all : bool
        Every class must have at least one example: a class the data never show carries no
        information in the likelihood, and is almost certainly a mistake in the labels.

    Returns
    -------
    codes : ndarray (n_points,) of int
    n_classes : int
    """
    t = _label_vector(t, name)
    codes = _as_float_array(t, name, "integer class codes 0..C-1 (the paper's 1..C minus one)")
    if not np.all(np.isfinite(codes)) or np.any(codes != np.round(codes)):
        raise ValueError(f"{name} must hold integer class codes 0..C-1 (the paper's 1..C minus one)")
    if codes.shape[0] != n_points:
        raise ValueError(f"{name} must hold {n_points} class codes, one per point; got {codes.shape[0]}")
    codes = codes.astype(int)
    n_classes = int(codes.max()) + 1 if n_classes is None else int(n_classes)
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2; got {n_classes}")
    outside = (codes < 0) | (codes >= n_classes)
    if np.any(outside):
        bad = sorted(set(codes[outside].tolist()))[:6]
        raise ValueError(f"{name} has codes {bad} outside 0..{n_classes - 1} (the paper's 1..{n_classes} minus one)")
    counts = np.bincount(codes, minlength=n_classes)
    if require_all and np.any(counts == 0):
        raise ValueError(
            f"{name}: class code(s) {np.flatnonzero(counts == 0).tolist()} have no examples; "
            f"every one of the {n_classes} classes needs at least one training point"
        )
    return codes, n_classes


def check_one_hot(Y: ArrayLike, name: str = "Y") -> np.ndarray:
    """Return a one-of-C target matrix (n, C), C >= 2, after checking its coding.

    Parameters
    ----------
    Y : array-like (n, C)
        Entries 0 or 1, exactly one 1 per row.
    name : str
        Named in the messages.

    Returns
    -------
    ndarray (n, C)
        ``Y`` as floats.
    """
    Y = check_matrix(Y, name)
    if Y.shape[1] < 2:
        raise ValueError(f"{name} must be an (n, C) one-of-C target matrix with C >= 2; got shape {Y.shape}")
    if not np.all((Y == 0) | (Y == 1)) or not np.all(Y.sum(axis=1) == 1):
        raise ValueError(
            f"{name} must be one-of-C coded: entries 0 or 1 and exactly one 1 per row "
            "(gpc_ref.laplace_multiclass.one_hot_labels(codes) builds it)"
        )
    return Y


def _check_symmetric(K, name):
    """Symmetry of a square matrix, checked on about 64 evenly spaced rows.

    A full check would cost as much as a Newton step; 64 rows catch a transposed or
    non-covariance matrix in practice.
    """
    rows = np.arange(0, K.shape[0], max(1, K.shape[0] // 64))
    block = K[rows, :]
    scale = max(float(np.max(np.abs(block))), 1e-300)
    if np.max(np.abs(block - K[:, rows].T)) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")


def check_covariance(K: ArrayLike, name: str = "K", *, n_points: int | None = None) -> np.ndarray:
    """Return ``K`` as a finite, square, symmetric float matrix (optionally n × n).

    Parameters
    ----------
    K : array-like (n, n)
        A covariance matrix; symmetry is checked on up to 64 rows.
    name : str
        The matrix's argument name.
    n_points : int, optional
        The n it must have.

    Returns
    -------
    ndarray (n, n)
    """
    K = _as_float_array(K, name, "a numeric (n, n) matrix")
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"{name} must be a square (n, n) covariance matrix; got shape {K.shape}")
    if n_points is not None and K.shape[0] != n_points:
        raise ValueError(f"{name} must be {n_points} × {n_points}, one row per point; got shape {K.shape}")
    _check_finite(K, name)
    _check_symmetric(K, name)
    return K


def check_covariance_stack(
    K: ArrayLike, name: str = "K", *, n_points: int | None = None, n_classes: int | None = None
) -> np.ndarray:
    """Return per-class covariances as a (G, n, n) array: G = 1 (one matrix shared) or G = C.

    Parameters
    ----------
    K : array-like (n, n) or (C, n, n)
        One matrix shared by every class, or a stack with one matrix per class; each is checked
        by :func:`check_covariance`.
    name : str
        Its argument name (``name[c]`` for the c-th matrix).
    n_points : int, optional
        The n every matrix must have.
    n_classes : int, optional
        With it, a stack must have that many matrices.

    Returns
    -------
    ndarray (G, n, n)
    """
    K = _as_matrix_stack(K, name, "a numeric array of covariance matrices")
    if K.ndim != 3 or K.shape[1] != K.shape[2] or K.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n, n) (shared) or (C, n, n) (one per class); got {K.shape}")
    if n_classes is not None and K.shape[0] not in (1, n_classes):
        raise ValueError(f"{name} must hold one matrix or one per class ({n_classes}); got {K.shape[0]}")
    for c, K_c in enumerate(K):
        check_covariance(K_c, f"{name}[{c}]" if K.shape[0] > 1 else name, n_points=n_points)
    return K


def check_covariance_derivatives(dK: ArrayLike, n_points: int, name: str = "dK") -> np.ndarray:
    """Return ∂K/∂θ_j for every hyperparameter as a (P, n, n) array (a single (n, n) matrix is P = 1).

    Parameters
    ----------
    dK : array-like (P, n, n) or (n, n)
        One derivative matrix per hyperparameter.
    n_points : int
        n.
    name : str
        The derivatives' argument name.

    Returns
    -------
    ndarray (P, n, n)
    """
    dK = _as_matrix_stack(dK, name, "an array of covariance derivatives")
    if dK.ndim != 3 or dK.shape[1:] != (n_points, n_points):
        raise ValueError(
            f"{name} must have shape (P, {n_points}, {n_points}) (one ∂K/∂θ_j per hyperparameter); got {dK.shape}"
        )
    return dK


def check_test_covariances(
    K_cross: ArrayLike, k_diag: ArrayLike, n_classes: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-class cross covariances (n, m) and prior variances (m,), from shared or per-class input.

    Parameters
    ----------
    K_cross : array-like (n, m) or (C, n, m)
        Training-by-test covariances, shared or one per class.
    k_diag : array-like (m,) or (C, m)
        Prior variances of the test points, shared or one per class.
    n_classes : int
        C.

    Returns
    -------
    cross, diag : list of ndarray
        ``n_classes`` arrays each (the same array repeated when one is shared).
    """
    cross = _as_float_array(K_cross, "K_cross", "an (n, m) or (C, n, m) array")
    cross = [cross] * n_classes if cross.ndim == 2 else list(cross)
    diag = _as_float_array(k_diag, "k_diag", "an (m,) or (C, m) array")
    diag = [diag] * n_classes if diag.ndim == 1 else list(diag)
    if len(cross) != n_classes or len(diag) != n_classes:
        raise ValueError(f"K_cross and k_diag must be shared or given for each of {n_classes} classes")
    return cross, diag


def check_kernel(kernel: KernelLike, name: str = "kernel") -> KernelLike:
    """Return ``kernel`` after checking that it is a kernel object with the SEKernel interface.

    (Checked by its methods rather than its class so that this module does not import
    :mod:`gpc_ref.kernels`, which imports this one.)

    Parameters
    ----------
    kernel : SEKernel
        Anything with ``K``, ``diag``, ``gradients``, ``theta``, ``with_theta`` and ``theta_names``.
    name : str
        The kernel's argument name.

    Returns
    -------
    SEKernel
        ``kernel`` itself.
    """
    needed = ("K", "diag", "gradients", "theta", "with_theta", "theta_names")
    if not all(hasattr(kernel, attribute) for attribute in needed):
        raise ValueError(f"{name} must be an SEKernel; got {type(kernel).__name__}")
    return kernel


def check_positive(value: ArrayLike, name: str, *, allow_zero: bool = False) -> np.ndarray:
    """Return ``value`` as a float array after checking it is finite and positive (or >= 0).

    Parameters
    ----------
    value : array-like
        A number or an array of them (every entry is checked).
    name : str
        The argument's name.
    allow_zero : bool
        Accept zeros.

    Returns
    -------
    ndarray
        Of the shape of ``value`` (0-d for a number).
    """
    arr = _as_float_array(value, name, "a positive number")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if allow_zero:
        if np.any(arr < 0):
            raise ValueError(f"{name} must be non-negative; got {value!r}")
    elif np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {value!r}")
    return arr


def check_positive_scalar(value: float, name: str) -> float:
    """Return ``value`` as a float after checking it is one finite positive real number (booleans refused).

    Parameters
    ----------
    value, name
        The number and its argument name.

    Returns
    -------
    float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


def check_positive_vector(value: ArrayLike, name: str, length: int) -> np.ndarray:
    """Return a positive finite vector of ``length`` entries from a scalar (broadcast) or a vector.

    Parameters
    ----------
    value : float or array-like (length,)
        A scalar is repeated ``length`` times.
    name : str
        Named in the message.
    length : int
        The vector's length.

    Returns
    -------
    ndarray (length,)
    """
    arr = _as_float_array(value, name, "a positive number or vector")
    if arr.ndim == 0:
        arr = np.full(length, float(arr))
    if arr.shape != (length,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be a positive finite scalar or a vector of length {length}; got {value!r}")
    return arr


def check_positive_int(value: int, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int after checking it is an integer >= ``minimum`` (booleans refused).

    Parameters
    ----------
    value : int
        Any integral type (Python or NumPy).
    name : str
        The count's argument name.
    minimum : int
        The smallest value allowed (0 for e.g. a burn-in).

    Returns
    -------
    int
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_probability(
    value: float,
    name: str,
    *,
    low: float = 0.0,
    high: float = 1.0,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """Return ``value`` as a float after checking it lies in the interval from ``low`` to ``high``.

    Parameters
    ----------
    value : float
        A finite real number (booleans refused).
    name : str
        The argument's name.
    low, high : float
        The interval's ends.
    open_low, open_high : bool
        Exclude that end.

    Returns
    -------
    float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    value = float(value)
    below = value <= low if open_low else value < low
    above = value >= high if open_high else value > high
    if below or above:
        interval = ("(" if open_low else "[") + f"{low:g}, {high:g}" + (")" if open_high else "]")
        raise ValueError(f"{name} must lie in {interval}; got {value!r}")
    return value


def check_choice(value: _T, name: str, choices: Collection[object]) -> _T:
    """Return ``value`` after checking it is one of ``choices``.

    Parameters
    ----------
    value : object
        A setting such as a method name (None may be one of the choices).
    name : str
        The setting's argument name.
    choices : collection
        The allowed values, listed in the error message.

    Returns
    -------
    object
        ``value`` itself.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}")
    return value


def check_bool(value: bool, name: str) -> bool:
    """Return ``value`` as a bool after checking it is True or False (not 0/1 or None).

    Parameters
    ----------
    value : bool or ``numpy.bool_``
        The flag.
    name : str
        Its argument name.

    Returns
    -------
    bool
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_rng(rng: int | np.random.Generator, name: str = "rng") -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from a Generator or an integer seed.

    ``None`` is refused on purpose: every random result in the book must be reproducible,
    so the caller always says which stream it wants.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        A seed (a new Generator is made from it) or a Generator (returned as it is).
    name : str
        The argument's name.

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"{name} must be a numpy.random.Generator or an integer seed; got {rng!r}")
