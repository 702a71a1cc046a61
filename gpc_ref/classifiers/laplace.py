"""LaplaceGPC: the Laplace approximation and HMC of Williams & Barber, as an estimator."""

from __future__ import annotations

import numpy as np

from ..kernels import SEKernel
from ..validation import check_choice
from ..validation import check_rng
from .base import GPCBase
from .base import binary_columns

__all__ = ["LaplaceGPC"]


class LaplaceGPC(GPCBase):
    r"""Gaussian process classifier by the Laplace approximation (Williams & Barber 1997, 1998).

    Binary (``classes_[1]`` is W&B's y = +1): the mode by Newton's method (:mod:`gpc_ref.laplace`); more classes: the
    coupled softmax model of W&B 1998 §4 (:mod:`gpc_ref.laplace_multiclass`). Inputs are not standardised (W&B do).

    Parameters
    ----------
    kernel, optimize, method : SEKernel or None, bool, {"map", "hmc"}
        The starting kernel (None: a unit SE kernel), kept fixed unless ``optimize``. Learning: ``"map"`` maximises the
        Laplace evidence plus W&B's hyperprior (their MPL; ML-II with ``prior=None``); ``"hmc"`` (two classes) samples
        the hyperparameters by Hybrid Monte Carlo from the MAP point, averaging predictions over them (W&B 1997 eq 9).
    rng, progress : int or numpy.random.Generator, bool
        Seed and progress bars of the restarts and HMC (the seed also drives Monte Carlo predictions).
    likelihood : {"logistic", "probit"}
        The binary likelihood (the multi-class model is the softmax, the logistic's generalisation).
    prior, prior_mean, prior_sd : {"wb", None}, float, float
        W&B's normal priors on the log-hyperparameters (mean ``prior_mean``, s.d. ``prior_sd``; W&B: −3, 3), or none.
    n_restarts, max_iter, tol : int, int, float
        Extra optimiser starts besides the given kernel (default 2: three starts, as scikit-learn's
        ``n_restarts_optimizer=2`` gives each of its binary fits), L-BFGS-B iterations per start, gradient tolerance.
    prediction, multiclass_prediction : str
        Integral of the latent predictive: binary logistic {"erf_mixture", "mackay", "quadrature", "exact"}; softmax
        {"qmc", "gauss_hermite", "cubature", "monte_carlo"} (default QMC: deterministic, accurate at large variances).
    hmc_options : dict or None
        Keyword arguments of :func:`~gpc_ref.hmc.laplace_hmc` (``step_size``, ``n_leapfrog``, ``n_iter``, ``burn_in``).

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        The class labels, sorted, and the kernel learnt (or given).
    log_marginal_likelihood_ : float
        The Laplace log evidence at ``kernel_`` (the MAP kernel when learnt; W&B 1997 eq 10, multi-class GPML eq 3.44).
    posterior_ : LaplaceMode or SoftmaxLaplaceMode
    hyperparameter_fit_, hmc_ : MAPResult, SoftmaxLaplaceFit or None; LaplaceHMCResult or None
    n_iter_ : int
        L-BFGS-B iterations of the hyperparameter search, or Newton steps for a fixed kernel.

    Examples
    --------
    >>> X = [[x / 10, 0.0] for x in range(-20, 20)]; y = ["no"] * 20 + ["yes"] * 20
    >>> LaplaceGPC(optimize=False).fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _evidence_is_learnt = True  # warned about within one nat of n log(1/C) (GPCBase.fit)

    def __init__(
        self, kernel: SEKernel | None = None, optimize: bool = True, rng: int | np.random.Generator = 0,
        progress: bool = False, *, method: str = "map", likelihood: str = "logistic", prior: str | None = "wb",
        prior_mean: float = -3.0, prior_sd: float = 3.0, n_restarts: int = 2, max_iter: int = 200, tol: float = 1e-5,
        prediction: str = "erf_mixture", multiclass_prediction: str = "qmc", hmc_options: dict | None = None,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _likelihood_object(self):
        from ..likelihoods import LogisticLikelihood
        from ..likelihoods import ProbitLikelihood

        check_choice(self.likelihood, "likelihood", ("logistic", "probit"))
        return LogisticLikelihood() if self.likelihood == "logistic" else ProbitLikelihood()

    def _fit(self, X, codes, kernel, rng):
        from ..gaussian_integrals import SOFTMAX_METHODS
        from ..laplace import PREDICTION_METHODS

        check_choice(self.method, "method", ("map", "hmc"))
        if self.method == "hmc" and not self.optimize:
            raise ValueError(
                "method='hmc' samples the hyperparameters, which is a way of learning them: it needs "
                "optimize=True (optimize=False keeps the given kernel)"
            )
        check_choice(self.prior, "prior", ("wb", None))
        check_choice(self.prediction, "prediction", PREDICTION_METHODS)
        check_choice(self.multiclass_prediction, "multiclass_prediction", SOFTMAX_METHODS)
        if self.hmc_options is not None and not isinstance(self.hmc_options, dict):
            raise ValueError(f"hmc_options must be a dict or None; got {type(self.hmc_options).__name__}")
        if not isinstance(kernel, SEKernel):
            raise ValueError("LaplaceGPC needs one SEKernel (shared by the classes in the multi-class model)")
        self.hyperparameter_fit_, self.hmc_ = None, None
        # the options of both hyperparameter searches (map_hyperparameters, softmax_laplace_optimize)
        search = dict(n_restarts=self.n_restarts, rng=rng, max_iter=self.max_iter, tol=self.tol, progress=self.progress)
        if len(self.classes_) == 2:
            self._fit_binary(X, 2.0 * codes - 1.0, kernel, rng, search)  # W&B's coding: classes_[1] is y = +1
        else:
            self._fit_multiclass(X, codes, kernel, search)
        self.n_iter_ = max(1, self.hyperparameter_fit_.optimization.n_iter if self.optimize else self.posterior_.n_iter)

    def _fit_binary(self, X, y, kernel, rng, search):
        from ..laplace import laplace_mode
        from ..laplace import map_hyperparameters

        likelihood = self._likelihood_object()
        self.y_train_ = y
        if self.optimize:
            hyperprior = dict(prior=self.prior, prior_mean=self.prior_mean, prior_sd=self.prior_sd)
            self.hyperparameter_fit_ = map_hyperparameters(kernel, X, y, likelihood=likelihood, **hyperprior, **search)
            kernel = self.hyperparameter_fit_.kernel
        self.kernel_ = kernel
        # the learnt kernel's mode is the search's own (converged) evaluation there
        self.posterior_ = (
            self.hyperparameter_fit_.mode if self.optimize else laplace_mode(kernel.K(X), y, likelihood=likelihood)
        )
        self.log_marginal_likelihood_ = self.posterior_.log_evidence
        if self.optimize and self.method == "hmc":
            from ..hmc import laplace_hmc

            options = {"prior_mean": self.prior_mean, "prior_sd": self.prior_sd, **(self.hmc_options or {})}
            self.hmc_ = laplace_hmc(kernel, X, y, rng=rng, likelihood=likelihood, progress=self.progress, **options)

    def _fit_multiclass(self, X, codes, kernel, search):
        from ..hyperpriors import log_hyperprior
        from ..laplace_multiclass import one_hot_labels
        from ..laplace_multiclass import softmax_laplace_mode
        from ..laplace_multiclass import softmax_laplace_optimize

        if self.method == "hmc":
            raise ValueError("method='hmc' is for two classes only (W&B used MAP for the multi-class problem)")
        if self.likelihood != "logistic":
            raise ValueError("the multi-class Laplace model is the softmax; for the multinomial probit use VBProbitGPC")
        Y = one_hot_labels(codes, len(self.classes_))
        self.y_train_ = Y
        if self.optimize:
            log_prior = None
            if self.prior == "wb":

                def log_prior(theta):
                    return log_hyperprior(kernel.with_theta(theta), self.prior_mean, self.prior_sd)

            self.hyperparameter_fit_ = softmax_laplace_optimize(kernel, X, Y, log_prior=log_prior, **search)
            kernel = self.hyperparameter_fit_.kernel
        self.kernel_ = kernel
        # the learnt kernel's mode is the search's own (converged) evaluation there
        self.posterior_ = self.hyperparameter_fit_.mode if self.optimize else softmax_laplace_mode(kernel.K(X), Y)
        self.log_marginal_likelihood_ = self.posterior_.log_evidence

    def _predict_latent(self, X):
        """Binary: the Laplace (mean, var) of shape (m,); multi-class: mean (m, C), cov (m, C, C).

        With ``method="hmc"`` the binary latent predictive is the mixture over the HMC samples
        (its mean and variance).
        """
        if len(self.classes_) == 2:
            if self.hmc_ is not None:
                prediction = self._hmc_prediction(X)
                return prediction.mean, prediction.var
            from ..laplace import laplace_predict_latent

            return laplace_predict_latent(self.posterior_, self.kernel_, self.X_train_, X)
        from ..laplace_multiclass import softmax_laplace_predict_latent

        return softmax_laplace_predict_latent(self.posterior_, self.kernel_, self.X_train_, X)

    def _hmc_prediction(self, X):
        from ..hmc import laplace_hmc_predict

        # W&B 1997 eq 9: average the fixed-hyperparameter predictions over the HMC samples
        return laplace_hmc_predict(
            self.hmc_,
            self.X_train_,
            self.y_train_,
            X,
            method=self.prediction,
            likelihood=self._likelihood_object(),
            progress=self.progress,
        )

    def _predict_proba(self, X):
        """Binary: the latent predictive squashed as ``prediction`` says; multi-class: through the softmax.

        With ``method="hmc"`` the binary probabilities are averaged over the HMC samples (W&B 1997 eq 9);
        the multi-class expectation is computed as ``multiclass_prediction`` says.
        """
        if len(self.classes_) == 2:
            if self.hmc_ is not None:
                return binary_columns(self._hmc_prediction(X).proba)
            from ..laplace import laplace_predict_latent
            from ..laplace import laplace_predict_proba

            mean, var = laplace_predict_latent(self.posterior_, self.kernel_, self.X_train_, X)
            p = laplace_predict_proba(mean, var, method=self.prediction, likelihood=self._likelihood_object())
            return binary_columns(p)
        from ..laplace_multiclass import softmax_laplace_predict_proba

        rng = check_rng(self.rng) if self.multiclass_prediction == "monte_carlo" else None
        return softmax_laplace_predict_proba(
            self.posterior_, self.kernel_, self.X_train_, X, method=self.multiclass_prediction, rng=rng
        )
