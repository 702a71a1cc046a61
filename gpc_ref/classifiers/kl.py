"""KLGPC: the KL method (Gaussian variational inference, Opper & Archambeau 2009), as an estimator."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels import SEKernel
from ..validation import check_choice
from .base import GPCBase
from .base import binary_columns

__all__ = ["KLGPC"]


class KLGPC(GPCBase):
    r"""Binary Gaussian process classifier by the KL method (Opper & Archambeau 2009; Nickisch & Rasmussen 2008 §3.5).

    The posterior over the latent values is the Gaussian q(f) = N(m, V) that maximises the evidence lower bound

        ℒ = ∑_i E_q[log p(y_i | f_i)] - KL(q ‖ p(f))

    (:func:`gpc_ref.kl.kl_gaussian`); with ``optimize`` the kernel's hyperparameters maximise the same bound
    (:func:`gpc_ref.kl.maximize_kl_bound`, exact gradient). ``predict_proba`` integrates the likelihood against the
    Gaussian latent predictive: exactly for the probit, by the rule ``prediction`` for the logistic.

    Parameters
    ----------
    kernel : SEKernel or None
        Starting (or, with ``optimize=False``, fixed) kernel; None is a unit SE kernel.
    optimize : bool
        Learn the hyperparameters by maximising the bound, or keep ``kernel``.
    rng, progress : int or numpy.random.Generator, bool
        Seed of the search's random restarts; show a progress bar over them.
    likelihood : {"logistic", "probit"}
        σ(yf) or Φ(yf).
    fixed : tuple of str
        Kernel parameter names (``kernel.theta_names``) held fixed while learning.
    n_restarts, max_iter, tol : int, int, float
        Extra random starts of the search, L-BFGS-B iterations per start, relative tolerance of its gradient test.
    prediction : {"erf_mixture", "mackay", "quadrature", "exact"}
        The Gaussian–sigmoid integral for the logistic (:mod:`gpc_ref.gaussian_integrals`; ignored for the probit).

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        ``classes_[1]`` is the paper's y = +1; the kernel learnt (or given).
    log_marginal_likelihood_ : float
        The maximised ℒ at ``kernel_``: a *lower bound* on the log evidence (up to the one-dimensional quadrature's
        error, about 1e-10 per point), not an approximation that may lie on either side of it.
    posterior_ : KLResult
        Its ``converged`` is True only when the gradient of ℒ in (m, V) passed its test.
    hyperparameter_fit_ : KLFit or None
        The search (its ``converged``: the projected gradient in the log-hyperparameters passed its test).
    n_iter_ : int
        L-BFGS-B iterations of the search, or natural-gradient steps for a fixed kernel.
    """

    _binary_only = True

    _evidence_is_learnt = True  # warned about within one nat of n log(1/C) (GPCBase.fit)

    def __init__(
        self, kernel: SEKernel | None = None, optimize: bool = True, rng: int | np.random.Generator = 0,
        progress: bool = False, *, likelihood: str = "logistic", fixed: Sequence[str] = (), n_restarts: int = 0,
        max_iter: int = 200, tol: float = 1e-5, prediction: str = "erf_mixture",
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _fit(self, X, codes, kernel, rng):
        from ..kl import kl_gaussian
        from ..kl import maximize_kl_bound
        from ..likelihoods import SIGMOID_PREDICTIONS

        check_choice(self.likelihood, "likelihood", ("logistic", "probit"))
        check_choice(self.prediction, "prediction", tuple(SIGMOID_PREDICTIONS))
        if not isinstance(kernel, SEKernel):
            raise ValueError("KLGPC needs one SEKernel")
        y = 2.0 * codes - 1.0  # classes_[1] is y = +1
        if self.optimize:
            fit = maximize_kl_bound(kernel, X, y, likelihood=self.likelihood, fixed=self.fixed,
                                    n_restarts=self.n_restarts, rng=rng, max_iter=self.max_iter, tol=self.tol,
                                    progress=self.progress)  # fmt: skip
            self.hyperparameter_fit_, self.kernel_, self.posterior_ = fit, fit.kernel, fit.result
            self.n_iter_ = max(1, fit.optimization.n_iter)
        else:
            self.hyperparameter_fit_, self.kernel_ = None, kernel
            self.posterior_ = kl_gaussian(kernel.K(X), y, self.likelihood)
            self.n_iter_ = self.posterior_.n_iter
        self.log_marginal_likelihood_ = self.posterior_.log_bound

    def _prediction(self, X):
        from ..kl import kl_predict

        return kl_predict(self.posterior_, self.kernel_.K(self.X_train_, X), self.kernel_.diag(X),
                          method=self.prediction)  # fmt: skip

    def _predict_latent(self, X):
        """Mean and variance (each (m,)) of the Gaussian latent predictive f(x)."""
        prediction = self._prediction(X)
        return prediction.mean, prediction.var

    def _predict_proba(self, X):
        """Class probabilities, shape (m, 2), columns in ``classes_`` order."""
        return binary_columns(self._prediction(X).proba)
