"""EPGPC: expectation propagation and EM-EP of Kim & Ghahramani, as an estimator."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels import SEKernel
from ..validation import check_choice
from .base import GPCBase
from .base import binary_columns

__all__ = ["EPGPC"]


class EPGPC(GPCBase):
    r"""Binary Gaussian process classifier by expectation propagation (Kim & Ghahramani 2003).

    The posterior is the EP Gaussian (:func:`gpc_ref.ep.expectation_propagation`); the hyperparameters are learnt by
    maximising the EP evidence (:func:`gpc_ref.ep_learning.maximize_ep_evidence`) or by EM-EP
    (:func:`gpc_ref.ep_learning.em_ep`), or kept fixed. ``classes_[1]`` is K&G's y = +1.

    Parameters
    ----------
    kernel, optimize : SEKernel or None, bool
        Starting kernel, learnt if ``optimize`` (else fixed). None: a unit SE kernel for the probit; for the label-noise
        likelihood K&G's starting covariance (footnote 7), ``SEKernel(variance=1, lengthscale=1/√0.05, bias=1e-4,
        jitter=1e-3, learn_bias=True, learn_jitter=True)``, whose jitter is their latent noise v_2.
    rng, progress : int or numpy.random.Generator, bool
        Seed of the direct maximisation's restarts; show EM-EP's progress.
    method, acceleration : {"evidence", "em"}, {"squarem", None}
        Maximise the EP evidence by its gradient (default, much faster: EP chapter, section `ep-em-vs-direct`), or K&G's
        EM-EP (§4) stopped by the same gradient test, SQUAREM-extrapolated by default (same fixed points; K&G's plain
        EM, ``acceleration=None``, can need thousands of E-steps).
    likelihood : {"probit", "label_noise"}
        Φ(yf), or K&G's eq 9 ε + (1-2ε)H(yf) with the latent noise in the kernel.
    epsilon, learn_epsilon : float, bool
        Starting (or fixed) labelling-error rate ε for ``"label_noise"``, and whether to learn it (K&G's r/n in EM-EP,
        its gradient otherwise).
    fixed, n_restarts, max_iter, tol : tuple of str, int, int, float
        Kernel parameter names (``kernel.theta_names``) held fixed while learning; extra random starts of the direct
        maximisation; L-BFGS-B iterations (``"evidence"``) or E-steps (``"em"``), and the relative tolerance of the
        gradient test both use.
    schedule, damping : {"parallel", "sequential"}, float in (0, 1]
        EP's sweep (same fixed point): all sites from one posterior and one factorisation, or K&G's one site at a time;
        its damping (EP restarts with more damping by itself if it fails while learning).

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        The class labels, sorted, and the kernel learnt (or given).
    log_marginal_likelihood_, epsilon_ : float
        The EP approximate log evidence (K&G eq 12) at ``kernel_`` and the error rate ``epsilon_`` (0 for the probit).
    posterior_ : EPResult
    hyperparameter_fit_ : EMEPResult, EvidenceFitResult or None
    n_iter_ : int
        EM iterations, L-BFGS-B iterations of the evidence maximisation, or EP sweeps for a fixed kernel.
    """

    _binary_only = True

    _evidence_is_learnt = True  # warned about within one nat of n log(1/C) (GPCBase.fit)

    def __init__(
        self, kernel: SEKernel | None = None, optimize: bool = True, rng: int | np.random.Generator = 0,
        progress: bool = False, *, method: str = "evidence", likelihood: str = "probit", epsilon: float = 0.0,
        learn_epsilon: bool = True, fixed: Sequence[str] = (), schedule: str = "parallel",
        acceleration: str | None = "squarem", n_restarts: int = 0, max_iter: int = 200, tol: float = 1e-5,
        damping: float = 1.0,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _default_kernel(self):
        if self.likelihood == "label_noise":
            # K&G footnote 7: v0 = 1, l = 0.05 (ℓ = 1/√0.05), v1 = 1e-4, v2 = 1e-3
            return SEKernel(
                variance=1.0,
                lengthscale=1.0 / np.sqrt(0.05),
                bias=1e-4,
                jitter=1e-3,
                learn_bias=True,
                learn_jitter=True,
            )
        return SEKernel()

    def _likelihood_object(self):
        from ..likelihoods import LabelNoiseLikelihood
        from ..likelihoods import ProbitLikelihood

        check_choice(self.likelihood, "likelihood", ("probit", "label_noise"))
        return ProbitLikelihood() if self.likelihood == "probit" else LabelNoiseLikelihood(self.epsilon, 0.0)

    def _fit(self, X, codes, kernel, rng):
        from ..ep import expectation_propagation_with_fallback
        from ..ep_learning import em_ep
        from ..ep_learning import maximize_ep_evidence

        check_choice(self.method, "method", ("em", "evidence"))
        likelihood = self._likelihood_object()
        if not isinstance(kernel, SEKernel):
            raise ValueError("EPGPC needs one SEKernel")
        y = 2.0 * codes - 1.0  # K&G's coding: classes_[1] is y = +1
        learn_epsilon = bool(self.learn_epsilon) and self.likelihood == "label_noise"
        if self.optimize:
            options = dict(
                likelihood=likelihood,
                learn_epsilon=learn_epsilon,
                fixed=self.fixed,
                damping=self.damping,
                schedule=self.schedule,
            )
            options.update(max_iter=self.max_iter, tol=self.tol, progress=self.progress)
            if self.method == "em":
                fit = em_ep(kernel, X, y, acceleration=self.acceleration, **options)
                n_iter = fit.n_iter
            else:
                fit = maximize_ep_evidence(kernel, X, y, n_restarts=self.n_restarts, rng=rng, **options)
                n_iter = fit.optimization.n_iter
            self.hyperparameter_fit_ = fit
            self.kernel_, self.epsilon_, self.posterior_ = fit.kernel, fit.epsilon, fit.ep
            self.n_iter_ = max(1, n_iter)
        else:
            self.hyperparameter_fit_, self.kernel_ = None, kernel
            self.posterior_, _ = expectation_propagation_with_fallback(
                kernel.K(X), y, likelihood=likelihood, schedule=self.schedule, damping=self.damping, tol=1e-6
            )
            self.epsilon_ = self.posterior_.epsilon
            self.n_iter_ = self.posterior_.n_sweeps
        self.log_marginal_likelihood_ = self.posterior_.log_evidence

    def _prediction(self, X):
        from ..ep import ep_predict

        return ep_predict(self.posterior_, self.kernel_.K(self.X_train_, X), self.kernel_.diag(X))

    def _predict_latent(self, X):
        """Mean and variance (each (m,)) of the latent predictive f(x) (latent noise included)."""
        prediction = self._prediction(X)
        return prediction.mean, prediction.var

    def _predict_proba(self, X):
        """Class probabilities, shape (m, 2), columns in ``classes_`` order."""
        return binary_columns(self._prediction(X).proba)
