"""gpc_ref: plain reference implementations of the Gaussian process classifiers derived in the book.

Each method is a plain function whose body follows the paper's equations
(see the module docstrings for the equation numbers); the estimators in
:mod:`gpc_ref.classifiers` wrap them with a scikit-learn-like interface.

Modules: kernels, linalg, likelihoods, datasets, metrics, validation,
laplace, hmc, variational_bounds, ep, vb_probit, gibbs, ivm, exact,
classifiers, plotting (the only one that needs matplotlib).
"""
from .kernels import SEKernel

__version__ = "0.1.0"
__all__ = ["SEKernel", "__version__"]
