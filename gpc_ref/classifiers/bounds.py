"""VariationalBoundsGPC: Gibbs & MacKay's Jaakkola–Jordan bounds, as an estimator."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import SEKernel
from ..validation import check_choice
from .base import GPCBase
from .base import binary_columns

__all__ = ["VariationalBoundsGPC"]


class VariationalBoundsGPC(GPCBase):
    r"""Gibbs & MacKay's variational GP classifier (binary), from the Jaakkola–Jordan bounds.

    ``fit`` maximises the lower bound Z' jointly over the variational parameters ν and (with ``optimize``) the kernel's
    log-hyperparameters, then, with those hyperparameters fixed, minimises the upper bound Z'' over μ (G&M §IV-C;
    :func:`~gpc_ref.variational_bounds.optimize_lower_bound`, :func:`~gpc_ref.variational_bounds.optimize_upper_bound`).
    ``predict_proba`` uses the Gaussian approximation of the posterior given by ``bound`` with MacKay's probit
    approximation (G&M eqs 17–23, 27–29, with the corrections derived in the book).

    Parameters
    ----------
    kernel : SEKernel or None
    optimize : bool
        Learn the hyperparameters by maximising Z' (else only ν and μ are fitted).
    rng : int or numpy.random.Generator
        Seeds the restarts.
    progress : bool
    method : {"gradient", "fixed_point"}
        Joint gradient ascent over (ν, θ) as G&M, or the Jaakkola–Jordan fixed point for ν.
    bound : {"lower", "upper"}
        Whose posterior approximation the predictions use (G&M quote the lower bound's in Table I).
    log_prior : callable or None
        ``log_prior(theta) -> (value, gradient)`` added to log Z' when learning θ.
    n_restarts : int
        Extra random starts of the hyperparameters (G&M used 20 for their toy).
    max_iter, tol : int, float
        L-BFGS-B iterations per start and the relative gradient tolerance.

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        ``classes_[1]`` is G&M's t = 1; the kernel learnt (or given).
    log_marginal_likelihood_ : float
        The chosen bound: log Z' (a lower bound on the log evidence) or log Z'' (an upper bound).
    log_marginal_likelihood_bounds_ : (float, float)
        (log Z', log Z''): the evidence lies between them.
    posterior_ : LowerBound or UpperBound
    hyperparameter_fit_ : LowerBoundFit
    upper_fit_ : UpperBoundFit
    n_iter_ : int
        L-BFGS-B iterations of the lower bound's maximisation.
    """

    _binary_only = True

    _evidence_is_learnt = True  # warned about within one nat of n log(1/C) (GPCBase.fit)

    def __init__(
        self, kernel: SEKernel | None = None, optimize: bool = True, rng: int | np.random.Generator = 0,
        progress: bool = False, *, method: str = "gradient", bound: str = "lower",
        log_prior: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None, n_restarts: int = 0,
        max_iter: int = 2000, tol: float = 1e-5,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _fit(self, X, codes, kernel, rng):
        from ..variational_bounds import optimize_lower_bound
        from ..variational_bounds import optimize_upper_bound

        check_choice(self.bound, "bound", ("lower", "upper"))
        check_choice(self.method, "method", ("gradient", "fixed_point"))
        if not isinstance(kernel, SEKernel):
            raise ValueError("VariationalBoundsGPC needs one SEKernel")
        lower = optimize_lower_bound(
            kernel,
            X,
            codes,
            optimize_theta=bool(self.optimize),
            nu_update=self.method,
            log_prior=self.log_prior,
            n_restarts=self.n_restarts if self.optimize else 0,
            rng=rng,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
        )
        self.kernel_ = lower.kernel
        self.hyperparameter_fit_ = lower
        self.upper_fit_ = optimize_upper_bound(self.kernel_.K(X), codes)
        self.log_marginal_likelihood_bounds_ = (lower.bound.log_Z, self.upper_fit_.bound.log_Z)
        self.posterior_ = lower.bound if self.bound == "lower" else self.upper_fit_.bound
        self.log_marginal_likelihood_ = self.posterior_.log_Z
        self.n_iter_ = max(1, lower.n_iterations)

    def _predict_latent(self, X):
        """Mean and variance (each (m,)) of the latent f(x) under the chosen bound's Gaussian."""
        from ..variational_bounds import predict_lower
        from ..variational_bounds import predict_upper

        predict = predict_lower if self.bound == "lower" else predict_upper
        return predict(self.posterior_, self.kernel_, self.X_train_, X)

    def _predict_proba(self, X):
        """(m, 2) class probabilities, columns in ``classes_`` order (G&M eqs 22, 29)."""
        from ..variational_bounds import predict_proba_bound

        return binary_columns(predict_proba_bound(*self._predict_latent(X)))
