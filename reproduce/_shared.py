"""Helpers shared by the paper-scale experiments (the runner skips files starting with ``_``)."""

from __future__ import annotations

import numpy as np

from gpc_ref.ep import ep_predict
from gpc_ref.kernels import SEKernel

# the jitter on the diagonal of every K of the Comparison part (biopsy holds repeated inputs)
JITTER = 1e-6


def ep_test_error(fit, X_train, X_test, y_test):
    """Test error rate of an EM-EP or evidence fit (labels ±1): EP's predictive probability against ½."""
    proba = ep_predict(fit.ep, fit.kernel.K(X_train, X_test), fit.kernel.diag(X_test)).proba
    return float(np.mean(np.where(proba > 0.5, 1, -1) != y_test))


def ep_fit_row(prefix, fit, X_train, data):
    """One fit's entries of a result row: its log Z_EP, ε, test error on ``data``, convergence and the two values of ε
    it cycled between if it did not converge for that reason, under ``prefix``."""
    return {f"{prefix}_log_evidence": float(fit.log_evidence), f"{prefix}_epsilon": float(fit.epsilon),
            f"{prefix}_error": ep_test_error(fit, X_train, data.X_test, data.y_test),
            f"{prefix}_converged": bool(fit.converged),
            f"{prefix}_epsilon_cycle": None if fit.epsilon_cycle is None else list(fit.epsilon_cycle)}  # fmt: skip


def kernel_at(log_lengthscale, log_sf, jitter=JITTER):
    """The isotropic SE kernel at a grid point (ln ℓ, ln σ_f) of the Comparison part, with its jitter."""
    return SEKernel(variance=float(np.exp(2 * log_sf)), lengthscale=float(np.exp(log_lengthscale)), jitter=jitter)
