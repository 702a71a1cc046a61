"""Thin scikit-learn-style estimators around the reference functions.

The functions in the method modules are the reference; these classes only wrap
them for coursework. They follow scikit-learn's conventions by duck typing (no
scikit-learn import): the constructor stores its arguments unchanged, ``fit(X,
y)`` returns ``self``, fitted attributes end in ``_``, ``predict_proba`` returns
an (n, K) array whose columns follow ``classes_``, and ``get_params`` /
``set_params`` make them usable with scikit-learn's model-selection tools.

Any label values are accepted (strings, integers, two or more classes); they
are mapped internally to the coding each paper uses.
"""
from __future__ import annotations

import inspect

import numpy as np

from .kernels import SEKernel
from .validation import check_class_labels, check_matrix, check_same_length

__all__ = ["GPCBase"]


class GPCBase:
    """Shared plumbing: parameters, input checks, ``predict`` and ``score``.

    Subclasses implement ``fit`` (calling :meth:`_validate_training_data`) and
    ``predict_proba``.
    """

    # ------------------------------------------------------------ scikit-learn protocol
    @classmethod
    def _param_names(cls):
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self, deep=True):
        """Constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor arguments; unknown names raise ``ValueError``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; valid parameters: {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{name}={value!r}" for name, value in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------ input handling
    def _validate_training_data(self, X, y, min_classes=2, max_classes=None):
        """Check ``X`` and ``y``; set ``classes_``, ``n_features_in_``; return (X, codes 0..K−1)."""
        X = check_matrix(X, "X")
        y = np.asarray(y)
        check_same_length(X, y, "X", "y")
        classes, codes = check_class_labels(y, "y", min_classes=min_classes)
        if max_classes is not None and len(classes) > max_classes:
            raise ValueError(
                f"{type(self).__name__} handles at most {max_classes} classes; y has {len(classes)}"
            )
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        return X, codes

    def _default_kernel(self, kernel):
        """The kernel to start from: the one given, or a unit SE kernel."""
        if kernel is None:
            return SEKernel()
        if not isinstance(kernel, SEKernel):
            raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
        return kernel

    def _validate_test_data(self, X):
        if not hasattr(self, "classes_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")
        return check_matrix(X, "X", n_features=self.n_features_in_)

    # ------------------------------------------------------------ shared predictions
    def predict(self, X):
        """The most probable class of each row of ``X``."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y):
        """Mean accuracy on ``(X, y)``, as scikit-learn's classifiers report it."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


# ===================================================================== LaplaceGPC (Laplace and HMC chapter)

# ===================================================================== VariationalBoundsGPC (Gibbs & MacKay chapter)

# ===================================================================== EPGPC (Kim & Ghahramani chapter)

# ===================================================================== VBProbitGPC, GibbsProbitGPC (Girolami & Rogers)

# ===================================================================== SparseIVM (Girolami & Rogers §5)
