r"""Williams & Barber's coordinates of the kernel's log-parameters, and the Gaussian priors on them.

The MAP searches of the book (binary and multi-class Laplace, the lower bound's MAP variant, HMC over the
hyperparameters) put W&B's prior on their log-hyperparameters; this module holds those coordinates and priors,
apart from the general maximiser of :mod:`gpc_ref.hyperparameters`.

Notation (book symbol ← code name):

- θ ← ``kernel.theta``: the kernel's log-parameters (log σ_f², log ℓ_1, …, log ℓ_D, [log σ_b²], [log σ_j²]).
- ϕ = Aθ ← ``phi``: W&B's log-hyperparameters (log v_0, log w_1, …, log w_D, [log v_1], […]) with v_0 = σ_f²
  and w_l = 1/ℓ_l², so A = diag(1, -2, …, -2, 1, …) ← ``wb_scale(kernel)``.
- N(μ_0, s_0²) ← ``prior_mean, prior_sd``: W&B's prior on every ϕ_j (μ_0 = -3, s_0 = 3, W&B 1997 §2.3).

References
----------
- [WB97] Williams & Barber (1997), §2.3 and eq 8: the coordinates and the N(−3, 3²) priors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .kernels import SEKernel
from .validation import check_kernel
from .validation import check_positive
from .validation import check_vector

__all__ = ["wb_scale", "gaussian_log_prior", "log_hyperprior"]


def wb_scale(kernel: SEKernel) -> np.ndarray:
    r"""The diagonal A of the map ϕ = Aθ to W&B's log-hyperparameters.

    ``log_lengthscale`` entries get -2 (w_l = 1/ℓ_l² gives
    log w_l = -2 log ℓ_l, W&B 1997 eq 8); ``log_variance`` (log v_0),
    ``log_bias`` (log v_1) and ``log_jitter`` keep factor 1.

    Parameters
    ----------
    kernel : SEKernel
        Its ``theta_names`` say which factor each entry gets.

    Returns
    -------
    ndarray (P,)
        One factor per entry of ``kernel.theta``.
    """
    kernel = check_kernel(kernel)
    return np.array([-2.0 if name.startswith("log_lengthscale") else 1.0 for name in kernel.theta_names])


def gaussian_log_prior(phi: ArrayLike, prior_mean: float = -3.0, prior_sd: float = 3.0) -> tuple[float, np.ndarray]:
    r"""Independent N(μ_0, s_0²) log density on every ϕ_j, and its gradient (W&B 1997 §2.3).

    Parameters
    ----------
    phi : array (P,)
        W&B's log-hyperparameters.
    prior_mean, prior_sd : float
        μ_0 and s_0 (W&B: −3 and 3).

    Returns
    -------
    value : float
        ∑_j log N(ϕ_j | μ_0, s_0²).
    gradient : ndarray (P,)
        ∂/∂ϕ.
    """
    phi = check_vector(phi, "phi")
    prior_sd = float(check_positive(prior_sd, "prior_sd"))
    z = (phi - float(prior_mean)) / prior_sd
    # W&B 1997 §2.3: φ_j ~ N(−3, 3²)
    value = float(np.sum(-0.5 * z**2 - np.log(prior_sd) - 0.5 * np.log(2.0 * np.pi)))
    return value, -z / prior_sd


def log_hyperprior(kernel: SEKernel, prior_mean: float = -3.0, prior_sd: float = 3.0) -> tuple[float, np.ndarray]:
    r"""W&B's hyperprior at ``kernel.theta`` and its gradient with respect to θ.

        log p(ϕ(θ)) = ∑_j log N(ϕ_j(θ) | μ_0, s_0²), ϕ = Aθ.

    The value is the log density *of* ϕ (as in W&B and :mod:`gpc_ref.hmc`); the density
    of θ differs by the constant log|det A|, which changes neither the MAP
    point nor any HMC acceptance. A prior N(-3, 3²) on log w is
    N(1.5, 1.5²) on log ℓ: it favours lengthscales around
    e^(1.5) ≈ 4.5 input units.

    Parameters
    ----------
    kernel : SEKernel
        The prior is evaluated at its ``theta``.
    prior_mean, prior_sd : float
        As in :func:`gaussian_log_prior`.

    Returns
    -------
    value : float
        The log density of ϕ = Aθ (:func:`gaussian_log_prior`).
    gradient : ndarray (P,)
        ∂/∂θ = A ∂/∂ϕ (chain rule through ϕ = Aθ).
    """
    scale = wb_scale(kernel)
    value, gradient_phi = gaussian_log_prior(scale * kernel.theta, prior_mean, prior_sd)
    return value, scale * gradient_phi
