"""gpc_ref: plain reference implementations of the Gaussian process classifiers derived in the book.

Each method is a plain function whose body follows the paper's equations (the module docstrings
give the equation numbers); the seven estimators wrap them with one scikit-learn-style contract
(:mod:`gpc_ref.classifiers`).

Modules: kernels, linalg, likelihoods, gaussian_integrals, hyperparameters, laplace,
laplace_multiclass, hmc, variational_bounds, ep, kl, vb_probit, gibbs, ivm, exact, datasets, metrics,
validation, progress, classifiers, plotting (the only one that needs matplotlib).
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .classifiers import EPGPC
from .classifiers import KLGPC
from .classifiers import GibbsProbitGPC
from .classifiers import LaplaceGPC
from .classifiers import SparseIVM
from .classifiers import VariationalBoundsGPC
from .classifiers import VBProbitGPC
from .kernels import SEKernel
from .validation import ConvergenceWarning
from .validation import HyperparameterBoundWarning
from .validation import NotFittedError

try:
    __version__ = _version("gpc_ref")  # the version is written once, in pyproject.toml
except PackageNotFoundError:  # pragma: no cover - running from a source tree that was never installed
    __version__ = "unknown"

__all__ = [
    "LaplaceGPC",
    "VariationalBoundsGPC",
    "EPGPC",
    "KLGPC",
    "VBProbitGPC",
    "GibbsProbitGPC",
    "SparseIVM",
    "SEKernel",
    "ConvergenceWarning",
    "HyperparameterBoundWarning",
    "NotFittedError",
    "__version__",
]
