"""gpc_ref: plain reference implementations of the Gaussian process classifiers derived in the book.

Each method is a plain function whose body follows the paper's equations (the module docstrings
give the equation numbers); the seven estimators wrap them with one scikit-learn-style contract
(:mod:`gpc_ref.classifiers`). ``import gpc_ref`` gives the estimators, :class:`SEKernel`,
:class:`ConvergenceWarning` and :class:`NotFittedError`; everything else is imported from its
module, e.g. ``from gpc_ref.laplace import laplace_mode``. The book's Reference part has one page
per module.

Formulas in docstrings are plain Unicode (σ_f², K⁻¹, τ̃_i, ∑_i; bold vectors in plain letters), so that
help() reads as text; the book's chapters typeset them.

Modules, and what each holds. The methods and their ground truth:

- :mod:`gpc_ref.kernels`: the squared-exponential ARD kernel ``SEKernel`` (bias, jitter, log
  parameters, ``K`` and its gradients), per-class kernels.
- :mod:`gpc_ref.linalg`: Cholesky with reported jitter, triangular solves, log-determinants (the
  only module that factorises), ``JitterWarning``.
- :mod:`gpc_ref.likelihoods`: logistic, probit, label-noise and multinomial-probit likelihoods and
  their derivatives.
- :mod:`gpc_ref.gaussian_integrals`: sigmoid, probit and softmax against a Gaussian (MacKay, the
  erf mixture, Gauss–Hermite, cubature, quasi-Monte Carlo).
- :mod:`gpc_ref.hyperparameters`: the box of the log-parameters, and ``maximize``, the one maximiser
  every learning method uses.
- :mod:`gpc_ref.hyperpriors`: Williams & Barber's coordinates ϕ = Aθ and the Gaussian priors on them.
- :mod:`gpc_ref.acceleration`: fixed-point iterations with a merit function, once: when one has converged
  (the distance to its fixed point, not the last step), SQUAREM, and Anderson's extrapolation.
- :mod:`gpc_ref.laplace`: the binary Laplace mode, evidence and its gradient, predictions, MAP
  hyperparameters.
- :mod:`gpc_ref.laplace_multiclass`: the softmax Laplace approximation in O(Cn³).
- :mod:`gpc_ref.hmc`: Hybrid Monte Carlo, and HMC over the Laplace hyperparameters.
- :mod:`gpc_ref.variational_bounds`: the Jaakkola–Jordan lower and upper bounds, their gradients
  and predictions.
- :mod:`gpc_ref.ep`: expectation propagation (sequential and parallel), its evidence, gradient and
  predictions.
- :mod:`gpc_ref.ep_learning`: EM-EP (``em_ep``) and direct maximisation of the EP evidence.
- :mod:`gpc_ref.kl`: the KL method (Opper & Archambeau; Nickisch & Rasmussen): the best Gaussian lower
  bound on the evidence, its gradient, predictions and learning.
- :mod:`gpc_ref.svgp`: sparse variational GP classification (Hensman, Matthews & Ghahramani): the KL bound with
  M inducing values, natural-gradient steps on all points or minibatches, O(nM² + M³) per pass.
- :mod:`gpc_ref.vb_probit`: variational Bayes for the binary and multinomial probit models.
- :mod:`gpc_ref.vb_probit_learning`: learning the VB probit kernel (importance sampling, the bound's
  gradient).
- :mod:`gpc_ref.gibbs`: Albert–Chib Gibbs samplers for the binary and multinomial probit models.
- :mod:`gpc_ref.ivm`: the sparse multi-class informative vector machine.
- :mod:`gpc_ref.exact`: ground truth for small problems: quadrature, elliptical slice sampling,
  probit and multinomial-probit orthant probabilities (Genz with Botev's tilting, with a standard
  error), and the effective sample size of a chain (``autocorrelation``, ``effective_sample_size``).
- :mod:`gpc_ref.ais`: annealed importance sampling for the evidence, binary and multi-class, from a
  Gaussian close to the posterior (the Comparison part's gold standard where no orthant probability exists).

Around them: data, measures, checks of inputs, warnings, threads and progress:

- :mod:`gpc_ref.metrics`: error rates with error bars, test log-likelihood, Brier score, calibration.
- :mod:`gpc_ref.datasets`: the papers' data sets (offline) and synthetic generators, splits,
  ``Standardizer``.
- :mod:`gpc_ref.validation`: every input check (the argument's name in every message).
- :mod:`gpc_ref.errors`: the warnings (``ConvergenceWarning`` and its kinds, ``JitterWarning``) and
  ``NotFittedError``.
- :mod:`gpc_ref.threads`: limiting BLAS threads in the small-matrix loops.
- :mod:`gpc_ref.progress`: progress bars for long runs (quiet by default).
- :mod:`gpc_ref.classifiers`: the estimators ``LaplaceGPC``, ``VariationalBoundsGPC``, ``EPGPC``,
  ``KLGPC``, ``VBProbitGPC``, ``GibbsProbitGPC``, ``SparseIVM`` (one module per family, ``base`` the contract).

The book's own infrastructure, which no method imports:

- :mod:`gpc_ref.reproduction`: the reproduction scoreboard: ``record``, ``agreement``, stored results.
- :mod:`gpc_ref.selfcheck`: checks of a student's implementation of an algorithm box against the
  reference.
- :mod:`gpc_ref.plotting`: the book's recurring figures (the only module that needs matplotlib).
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
from .errors import ConvergenceWarning
from .errors import HyperparameterBoundWarning
from .errors import NotFittedError
from .kernels import SEKernel

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
