"""Input checks shared by every public function of :mod:`gpc_ref`.

Each helper either returns a clean numpy array or raises ``ValueError`` whose
message names the argument and says what was expected. Keeping the checks in
one place means every method reports bad input the same way.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_matrix",
    "check_vector",
    "check_same_length",
    "check_binary_labels",
    "check_class_labels",
    "check_positive",
    "check_rng",
]


def check_matrix(X, name="X", *, n_features=None):
    """Return ``X`` as a finite float array of shape (n, d).

    A 1-D input is read as n points with one feature each (the 1-D examples of
    the book pass ``x`` directly).
    """
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array; got {type(X).__name__}") from exc
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_points, n_features); got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one point; got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} feature(s) per point; got {X.shape[1]}")
    return X


def check_vector(v, name="v", *, length=None):
    """Return ``v`` as a finite 1-D float array (optionally of a given length)."""
    try:
        v = np.asarray(v, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric vector; got {type(v).__name__}") from exc
    if v.ndim == 0:
        v = v[None]
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if length is not None and v.shape[0] != length:
        raise ValueError(f"{name} must have length {length}; got {v.shape[0]}")
    return v


def check_same_length(a, b, name_a="X", name_b="y"):
    """Raise if two arrays do not describe the same number of points."""
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b} must have the same number of points; got {len(a)} and {len(b)}")


def check_binary_labels(y, name="y", *, coding="pm1"):
    """Return binary labels in the requested coding.

    ``y`` must already use one of the two codings the papers use: {-1, +1}
    (Williams & Barber's y, Kim & Ghahramani, GPML) or {0, 1} (Gibbs & MacKay's
    t). ``coding="pm1"`` returns {-1, +1}; ``coding="01"`` returns {0, 1}. Use
    :func:`check_class_labels` to map arbitrary label values first.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels; got shape {y.shape}")
    try:
        yf = y.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numeric labels in {{-1, +1}} or {{0, 1}}") from exc
    values = set(np.unique(yf).tolist())
    if not np.all(np.isfinite(yf)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if values <= {-1.0, 1.0}:
        pm1 = yf
    elif values <= {0.0, 1.0}:
        pm1 = 2.0 * yf - 1.0
    else:
        raise ValueError(f"{name} must hold labels in {{-1, +1}} or {{0, 1}}; got values {sorted(values)[:6]}")
    if coding == "pm1":
        return pm1
    if coding == "01":
        return (pm1 + 1.0) / 2.0
    raise ValueError(f"coding must be 'pm1' or '01'; got {coding!r}")


def check_class_labels(y, name="y", *, min_classes=2, classes=None):
    """Map arbitrary labels to integer codes 0..K-1.

    Returns ``(classes, codes)`` where ``classes`` is the sorted array of label
    values (or the declared ``classes``) and ``codes[i]`` is the index of
    ``y[i]`` in it. Raises if there are fewer than ``min_classes`` distinct
    labels or if a label lies outside the declared set.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels; got shape {y.shape}")
    if y.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one label")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if classes is None:
        classes, codes = np.unique(y, return_inverse=True)
    else:
        classes = np.asarray(classes)
        lookup = {value: index for index, value in enumerate(classes.tolist())}
        unknown = sorted({value for value in y.tolist() if value not in lookup}, key=str)
        if unknown:
            raise ValueError(f"{name} has labels {unknown[:6]} outside the declared classes {classes.tolist()}")
        codes = np.array([lookup[value] for value in y.tolist()], dtype=int)
    if len(np.unique(codes)) < min_classes:
        raise ValueError(
            f"{name} must contain at least {min_classes} classes; got {len(np.unique(codes))} "
            f"({np.unique(y).tolist()[:6]})"
        )
    return classes, codes.astype(int)


def check_positive(value, name, *, allow_zero=False):
    """Return ``value`` as a float array after checking it is finite and positive."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if allow_zero:
        if np.any(arr < 0):
            raise ValueError(f"{name} must be non-negative; got {value!r}")
    elif np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {value!r}")
    return arr


def check_rng(rng, name="rng"):
    """Return a ``numpy.random.Generator`` from a Generator or an integer seed.

    ``None`` is refused on purpose: every random result in the book must be
    reproducible, so the caller always says which stream it wants.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"{name} must be a numpy.random.Generator or an integer seed; got {rng!r}")
