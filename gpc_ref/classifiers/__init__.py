r"""The seven estimators: thin scikit-learn-style wrappers around the reference functions.

The functions in the method modules are the reference; these classes wrap them for coursework
with one contract (README.md; enforced by ``tests/package/test_classifiers_common.py``): the constructor
``(kernel=None, optimize, rng=0, progress=False, *, ...)``; after ``fit``, ``classes_``,
``n_features_in_``, ``feature_names_in_`` (DataFrame input), ``X_train_`` (as the kernel sees them:
standardised, with ``standardizer_``, where ``kernel=None`` met unstandardised inputs), ``kernel_``,
``log_marginal_likelihood_`` (each docstring says whether it is an approximation, a bound or an
estimate), ``posterior_``, ``hyperparameter_fit_``; ``predict_latent`` (binary: mean and variance of
shape (m,); C classes: means (m, C), covariances (m, C, C)), ``predict_proba`` (columns in
``classes_`` order), ``predict``, ``score``; :class:`~gpc_ref.validation.NotFittedError` before
``fit``; ``get_params(deep=True)`` with ``kernel__<name>`` for ``GridSearchCV``. scikit-learn is
imported only when scikit-learn itself asks for the tags.

Notation: n training points, m test points, C classes (the book's notation page).
"""

from .base import GPCBase
from .bounds import VariationalBoundsGPC
from .ep import EPGPC
from .kl import KLGPC
from .laplace import LaplaceGPC
from .probit import GibbsProbitGPC
from .probit import SparseIVM
from .probit import VBProbitGPC

__all__ = [
    "GPCBase",
    "LaplaceGPC",
    "VariationalBoundsGPC",
    "EPGPC",
    "KLGPC",
    "VBProbitGPC",
    "GibbsProbitGPC",
    "SparseIVM",
]
