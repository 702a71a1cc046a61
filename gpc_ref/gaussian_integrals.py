r"""Sigmoid, probit and softmax integrated against a Gaussian: every rule the book compares.

Predictions of every Gaussian approximation (Laplace, the variational bounds, EP) need

    ∫ σ(f) N(f | μ, s²) df,
    ∫ Φ(f) N(f | μ, s²) df,
    ∫ softmax(f) N(f | μ, Σ) df .

The probit integral is exact (GPML eq 3.82); the other two are not, and this module holds the
approximations the papers use and the references they are measured against:

- MacKay's probit approximation (G&M eq 23), W&B's mixture of five scaled normal CDFs, and
  Gauss–Hermite quadrature for the logistic; adaptive quadrature as its reference;
- quasi-Monte Carlo (Sobol points), Monte Carlo (W&B 1998 §4), tensor Gauss–Hermite and a
  degree-5 cubature rule for the softmax.

The KL method (:mod:`gpc_ref.kl`) needs a fourth kind, the expectations of a log link and of its
first two derivatives, E[log g(z)], E[(log g)'(z)], E[(log g)''(z)] for
z ~ N(μ, s²) and g = σ or Φ (:func:`log_link_expectations`):
Gauss–Hermite while s is small, panels of Gauss–Legendre rules split at the link's bend
when it is not.

Notation (book symbol ← code name): μ, s² ← ``mean, var`` (one Gaussian per entry);
μ, Σ ← ``mean (m, C), cov (m, C, C)`` (one C-dimensional Gaussian per
row); C ← ``n_classes``; κ_i, c_i ← ``ERF_MIXTURE_SCALES``,
``ERF_MIXTURE_COEFFICIENTS``; Q ← the number of nodes of a rule.

References
----------
- [WB97] Williams & Barber (1997), §2.1: the erf mixture.
- [WB98] Williams & Barber (1998), §4: Monte Carlo over the softmax.
- [GM00] Gibbs & MacKay (2000), eq 23; [MacKay92] MacKay (1992): the probit approximation.
- [GPML] Rasmussen & Williams (2006), eqs 3.25 and 3.82, Algorithm 3.4 (Monte Carlo over the softmax).
- [Sobol67] Sobol' (1967): the low-discrepancy point set.
- [MS67] Mysovskikh; Stroud (1971): fully symmetric cubature rules of degree 5.
- [OA09] Opper & Archambeau (2009): the KL method needs E[log p(y|f)] and its derivatives under
  the Gaussian marginals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate
from scipy.special import expit
from scipy.special import logsumexp
from scipy.special import ndtr
from scipy.special import softmax as _scipy_softmax

from .validation import check_choice
from .validation import check_positive_int
from .validation import check_rng

__all__ = [
    "standard_normal_rule",
    "gauss_hermite_grid",
    "gauss_hermite_expectation",
    "log_link_expectations",
    "probit_gaussian",
    "sigmoid_gaussian_mackay",
    "sigmoid_gaussian_erf_mixture",
    "sigmoid_gaussian_quadrature",
    "sigmoid_gaussian_exact",
    "ERF_MIXTURE_SCALES",
    "ERF_MIXTURE_COEFFICIENTS",
    "softmax",
    "log_sum_exp",
    "softmax_gaussian_expectation",
    "SOFTMAX_METHODS",
]


# --------------------------------------------------------------------------- Gauss–Hermite rules
def standard_normal_rule(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Gauss–Hermite nodes and weights for E[g(u)], u ~ N(0, 1).

    numpy's rule is for ∫ e^(-x²)g(x) dx; substituting u = √2 x gives
    nodes √2 x_i and weights w_i/√π, which sum to one.

    Parameters
    ----------
    n_nodes : int
        Number of nodes (exact for polynomials of degree ``2 n_nodes - 1``).

    Returns
    -------
    nodes, weights : ndarrays (n_nodes,)
    """
    n_nodes = check_positive_int(n_nodes, "n_nodes")
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    return np.sqrt(2.0) * x, w / np.sqrt(np.pi)


def gauss_hermite_grid(dim: int, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Tensor-product Gauss–Hermite rule for E[g(u)], u ~ N(0, I_dim).

    The weights are returned as logarithms because their products underflow for many nodes
    in several dimensions.

    Parameters
    ----------
    dim : int
        Dimension of u.
    n_nodes : int
        Nodes per axis (:func:`standard_normal_rule`).

    Returns
    -------
    nodes : ndarray (Q, dim)
        Every combination of the one-dimensional nodes, Q = ``n_nodes**dim``.
    log_weights : ndarray (Q,)
        Logarithms of the product weights (the weights sum to one).
    """
    dim = check_positive_int(dim, "dim")
    nodes_1d, weights_1d = standard_normal_rule(n_nodes)
    grids = np.meshgrid(*([nodes_1d] * dim), indexing="ij")
    log_w = sum(np.meshgrid(*([np.log(weights_1d)] * dim), indexing="ij"))
    return np.stack([g.ravel() for g in grids], axis=1), np.asarray(log_w).ravel()


def gauss_hermite_expectation(
    func: Callable[[np.ndarray], np.ndarray], mean: ArrayLike, var: ArrayLike, n_points: int = 64
) -> np.ndarray:
    r"""E[g(f)] for f ~ N(μ, s²) by Gauss–Hermite quadrature, elementwise in ``mean, var``.

    Uses f = μ + s u at the nodes of :func:`standard_normal_rule`. Accurate for smooth
    ``func`` when s is moderate; for very wide Gaussians use an adaptive rule.

    Parameters
    ----------
    func : callable
        Acts elementwise on an array of latent values (its last axis holds the nodes).
    mean, var : array-like
        Means μ and variances s² of the Gaussians, broadcast against each other
        (the same two arguments of the probit and sigmoid integrals below).
    n_points : int
        Nodes of the rule.

    Returns
    -------
    ndarray
        E[g(f)], of the broadcast shape of ``mean`` and ``var``.
    """
    nodes, weights = standard_normal_rule(n_points)
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(var, dtype=float))
    f = mean[..., None] + np.sqrt(var)[..., None] * nodes
    return func(f) @ weights


# --------------------------------------------------------------------------- expectations of a log link
#: Half-width, in units of z, of the region where log σ(z) and log Φ(z) bend (their second
#: derivatives change there from one asymptotic form to the other); outside it both are smooth on
#: the scale of abs(z) (log σ nearly linear, log Φ nearly −z²/2).
LINK_BEND = 10.0
#: The standardised range [−U, U] of the panel rule: N(0, 1) puts 1.5e-23 of its mass beyond it.
PANEL_RANGE = 10.0


@functools.lru_cache(maxsize=8)
def _cached_legendre_rule(n_nodes):
    """Gauss–Legendre nodes and weights on [−1, 1], computed once per size."""
    x, w = np.polynomial.legendre.leggauss(n_nodes)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def _panel_rule(mean, sd, n_panel_nodes):
    """Nodes u (m, 3P) and weights (m, 3P) for E[g(μ + s u)], u ~ N(0, 1), one row per (μ, s).

    Three panels of P Gauss–Legendre nodes each cover [−U, U]: the bend region
    abs(μ + s u) ≤ LINK_BEND (clipped to [−U, U]) and the two sides of it. A panel of zero width gets
    zero weights.
    """
    x, w = _cached_legendre_rule(n_panel_nodes)
    low = np.clip((-LINK_BEND - mean) / sd, -PANEL_RANGE, PANEL_RANGE)
    high = np.clip((LINK_BEND - mean) / sd, -PANEL_RANGE, PANEL_RANGE)
    edges = np.stack([np.full_like(mean, -PANEL_RANGE), low, high, np.full_like(mean, PANEL_RANGE)], axis=-1)
    half = 0.5 * np.diff(edges, axis=-1)  # (m, 3) half-widths, ≥ 0
    centre = 0.5 * (edges[:, 1:] + edges[:, :-1])
    u = (centre[:, :, None] + half[:, :, None] * x).reshape(len(mean), -1)
    # the Legendre weights times the half-width (the Jacobian) times the N(0, 1) density at the node
    weights = (half[:, :, None] * w).reshape(len(mean), -1) * np.exp(-0.5 * u * u) / np.sqrt(2.0 * np.pi)
    return u, weights


@functools.lru_cache(maxsize=8)
def _cached_standard_normal_rule(n_nodes):
    """:func:`standard_normal_rule`, computed once per size (its eigenvalue problem dominates small fits)."""
    nodes, weights = standard_normal_rule(n_nodes)
    nodes.flags.writeable = weights.flags.writeable = False
    return nodes, weights


#: Below this s, E[ℓ''] is the rule applied to ℓ'' itself; above it, Stein's E[ℓ'(z) u]/s.
STEIN_MIN_SD = 1e-4


def _expectations_at_nodes(link, mean, sd, u, weights):
    """E[ℓ], E[ℓ'], E[ℓ''] by a rule with nodes u and weights (each (m, Q)) in z = μ + s u.

    E[ℓ''] is computed as E[ℓ'(z) u]/s (Stein's lemma, integration by parts against N(0, 1)): with
    Hermite nodes this is the exact derivative of the rule's own E[ℓ] in s² (times 2), so that a bound
    built from E[ℓ] and a gradient built from E[ℓ''] agree to rounding; it also avoids the far-tail
    series of log Φ''. Where s is tiny that quotient cancels, and ℓ'' is averaged directly.
    """
    z = mean[:, None] + sd[:, None] * u
    d1, d2, _ = link.link_derivatives(z)
    stein = sd >= STEIN_MIN_SD
    second = np.sum(d2 * weights, axis=-1)
    second[stein] = np.sum(d1[stein] * u[stein] * weights[stein], axis=-1) / sd[stein]
    return np.stack([np.sum(link.log_link(z) * weights, axis=-1), np.sum(d1 * weights, axis=-1), second])


def log_link_expectations(
    link: object,
    mean: ArrayLike,
    var: ArrayLike,
    *,
    n_nodes: int = 64,
    n_panel_nodes: int = 48,
    hermite_max_sd: float = 1.5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""E[ℓ(z)], E[ℓ'(z)], E[ℓ''(z)] for ℓ = log g and z ~ N(μ, s²).

    The KL method's bound and its gradient ([OA09]; the book's KL chapter, book/kl.ipynb) need these at every
    training point: by Bonnet's (1964) and Price's (1958) theorems ∂/∂μ E[ℓ(z)] = E[ℓ'(z)] and
    ∂/∂s² E[ℓ(z)] = ½ E[ℓ''(z)]. With z = μ + s u, u ~ N(0, 1): where s ≤ ``hermite_max_sd``, Gauss–Hermite with
    ``n_nodes`` nodes (:func:`standard_normal_rule`); where s is larger the bend of ℓ (width about one in z)
    falls between Hermite nodes, so u ∈ [-10, 10] is split at the edges of -10 ≤ z ≤ 10 into three panels of
    ``n_panel_nodes`` Gauss–Legendre nodes. E[ℓ''] = E[ℓ'(z) u]/s (Stein's identity, for s ≥ 1e-4) is then on
    the Hermite nodes the exact derivative of the rule's own E[ℓ]: a bound and its gradient agree to rounding.

    Parameters
    ----------
    link : object
        Gives ``log_link(z)`` and ``link_derivatives(z) -> (d1, d2, d3)``, elementwise in ``z``: e.g.
        ``LogisticLikelihood()`` (g = σ) or ``ProbitLikelihood()`` (g = Φ), whose ``z`` is the margin yf.
    mean, var : array-like
        μ and s² ≥ 0 of each Gaussian, broadcast against each other.
    n_nodes, n_panel_nodes : int
        Gauss–Hermite nodes, and Gauss–Legendre nodes per panel of the broad-Gaussian rule.
    hermite_max_sd : float
        The largest s integrated by Gauss–Hermite.

    Returns
    -------
    expected, expected_d1, expected_d2 : ndarray
        E[ℓ], E[ℓ'], E[ℓ''], each of the broadcast shape of ``mean`` and ``var``.
    """
    if not (callable(getattr(link, "log_link", None)) and callable(getattr(link, "link_derivatives", None))):
        raise ValueError(
            f"link must have methods log_link(z) and link_derivatives(z), e.g. LogisticLikelihood(); got {link!r}"
        )
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(var, dtype=float))
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("mean and var must be finite")
    if np.any(var < 0):
        raise ValueError("var must be non-negative")
    n_nodes = check_positive_int(n_nodes, "n_nodes")
    n_panel_nodes = check_positive_int(n_panel_nodes, "n_panel_nodes")
    shape = mean.shape
    mean, sd = mean.ravel(), np.sqrt(var.ravel())
    out = np.empty((3, mean.size))
    narrow = sd <= hermite_max_sd
    if np.any(narrow):
        nodes, weights = _cached_standard_normal_rule(n_nodes)
        shape_narrow = (int(np.sum(narrow)), n_nodes)
        u, weights = np.broadcast_to(nodes, shape_narrow), np.broadcast_to(weights, shape_narrow)
        out[:, narrow] = _expectations_at_nodes(link, mean[narrow], sd[narrow], u, weights)
    if not np.all(narrow):
        u, weights = _panel_rule(mean[~narrow], sd[~narrow], n_panel_nodes)
        out[:, ~narrow] = _expectations_at_nodes(link, mean[~narrow], sd[~narrow], u, weights)
    return out[0].reshape(shape), out[1].reshape(shape), out[2].reshape(shape)


# --------------------------------------------------------------------------- probit and sigmoid
def probit_gaussian(mean: ArrayLike, var: ArrayLike) -> np.ndarray:
    r"""∫ Φ(f) N(f | μ, s²) df = Φ(μ/√(1+s²)) (GPML eq 3.82), exact.

    Parameters
    ----------
    mean, var : array-like
        As in :func:`gauss_hermite_expectation`.

    Returns
    -------
    ndarray
        The probit's predictive probability P(y = +1), elementwise.
    """
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    return ndtr(mean / np.sqrt(1.0 + var))


def sigmoid_gaussian_mackay(mean: ArrayLike, var: ArrayLike) -> np.ndarray:
    r"""MacKay's probit approximation (G&M eq 23).

        ∫ σ(f) N(f | μ,s²) df ≈ σ(μ/√(1 + πs²/8))

    It replaces σ by the probit Φ(λf) with the same slope at the origin
    (λ² = π/8) and uses the exact probit integral.

    Parameters
    ----------
    mean, var : array-like
        As in :func:`gauss_hermite_expectation`; ``var = 0`` gives σ(μ), the exact value.

    Returns
    -------
    ndarray
        σ(κ(s²)μ) with κ(s²) = (1 + πs²/8)^(-1/2), elementwise.
    """
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    # G&M (2000) eq 23: κ(s²) = 1/√(1 + π s²/8)
    return expit(mean / np.sqrt(1.0 + np.pi * var / 8.0))


# W&B approximate σ by a weighted sum of five scaled normal CDFs (erf functions),
#     σ(z) ≈ Σ_i c_i Φ(κ_i z),
# because each term then integrates exactly against a Gaussian:
#     ∫ Φ(κ f) N(f|μ, s²) df = Φ(κ μ / √(1 + κ² s²)).
# The scales κ_i = √2 λ_i use the λ values of the GPML toolbox; the weights c_i are fitted
# here, by least squares on a fine grid of z, rather than typed in. The fit is constrained to
# Σ c_i = 1 so that the mixture keeps σ's symmetry σ(−z) = 1 − σ(z), equals ½ at 0 and tends
# to 0 and 1 in the tails.
ERF_MIXTURE_SCALES = np.sqrt(2.0) * np.array([0.41, 0.40, 0.37, 0.44, 0.39])


def _fit_erf_mixture_coefficients(scales, z_max=30.0, n_points=6001):
    z = np.linspace(-z_max, z_max, n_points)
    design = ndtr(np.outer(z, scales)) - 0.5  # odd functions of z
    target = expit(z) - 0.5
    # eliminate the last weight with the constraint c_last = 1 − Σ_{i<last} c_i
    reduced = design[:, :-1] - design[:, -1:]
    head, *_ = np.linalg.lstsq(reduced, target - design[:, -1], rcond=None)
    return np.append(head, 1.0 - head.sum())


ERF_MIXTURE_COEFFICIENTS = _fit_erf_mixture_coefficients(ERF_MIXTURE_SCALES)


def sigmoid_gaussian_erf_mixture(
    mean: ArrayLike, var: ArrayLike, scales: ArrayLike | None = None, coefficients: ArrayLike | None = None
) -> np.ndarray:
    r"""∫ σ(f) N(f | μ, s²) df with σ replaced by a five-term probit mixture (W&B 1997 §2.1).

        ∫ σ(f) N(f | μ,s²) df ≈ ∑_i c_i
        Φ((κ_i μ)/√(1+κ_i² s²))

    Parameters
    ----------
    mean, var : array-like
        As in :func:`gauss_hermite_expectation`.
    scales, coefficients : array (5,), optional
        κ_i and c_i; default :data:`ERF_MIXTURE_SCALES` and
        :data:`ERF_MIXTURE_COEFFICIENTS`. Pass another implementation's constants to reproduce
        it exactly (the tests pass scikit-learn's to compare with it).

    Returns
    -------
    ndarray
        Clipped to [0, 1]: the mixture's error (about 2e-4 at worst) could otherwise step outside.
    """
    scales = ERF_MIXTURE_SCALES if scales is None else np.asarray(scales, dtype=float)
    coefficients = ERF_MIXTURE_COEFFICIENTS if coefficients is None else np.asarray(coefficients, dtype=float)
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(var, dtype=float))
    arguments = np.multiply.outer(mean, scales) / np.sqrt(1.0 + np.multiply.outer(var, scales**2))
    return np.clip(ndtr(arguments) @ coefficients, 0.0, 1.0)


def sigmoid_gaussian_quadrature(mean: ArrayLike, var: ArrayLike, n_points: int = 64) -> np.ndarray:
    r"""∫ σ(f) N(f | μ, s²) df by Gauss–Hermite quadrature with ``n_points`` nodes (GPML eq 3.25).

    Parameters
    ----------
    mean, var, n_points
        As in :func:`gauss_hermite_expectation`, with g = σ.

    Returns
    -------
    ndarray
        The quadrature's value of the integral, elementwise.
    """
    return gauss_hermite_expectation(expit, mean, var, n_points)


def sigmoid_gaussian_exact(mean: ArrayLike, var: ArrayLike) -> np.ndarray:
    r"""∫ σ(f) N(f | μ, s²) df by adaptive quadrature (``scipy.integrate.quad``): the reference.

    Slow (one adaptive integral per entry) but accurate to about 1e-12 for any μ and
    s; use it as ground truth, not inside algorithms.

    Parameters
    ----------
    mean, var : array-like
        As in :func:`gauss_hermite_expectation`; one adaptive integral per entry of their broadcast.

    Returns
    -------
    ndarray
        The integral, elementwise; σ(μ) where s = 0.
    """
    mean, var = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(var, dtype=float))
    out = np.empty(mean.shape)
    for index in np.ndindex(mean.shape):
        m, s = mean[index], np.sqrt(var[index])
        if s == 0.0:
            out[index] = expit(m)
            continue
        # integrate over the standardised variable u = (f − μ)/s
        value, _ = integrate.quad(
            lambda u: expit(m + s * u) * np.exp(-0.5 * u * u),
            -40.0,
            40.0,
            epsabs=1e-13,
            epsrel=1e-12,
            limit=200,
            points=[-m / s],
        )
        out[index] = value / np.sqrt(2.0 * np.pi)
    return out


# --------------------------------------------------------------------------- softmax
def softmax(F: ArrayLike) -> np.ndarray:
    r"""Softmax along the last axis, exp(f_c - log ∑_c' exp f_c'), without overflow.

    Parameters
    ----------
    F : array-like (..., C)
        Latent values, the classes along the last axis.

    Returns
    -------
    ndarray (..., C)
        Class probabilities π^c; they sum to one along the last axis.
    """
    return _scipy_softmax(np.asarray(F, dtype=float), axis=-1)


def _gaussian_square_root(cov):
    """S with S Sᵀ = cov for a batch of small PSD matrices, via eigh (negative rounding clipped to 0)."""
    values, vectors = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, -1, -2)))
    return vectors * np.sqrt(np.clip(values, 0.0, None))[..., None, :]


def _differences_to_last(mean, cov):
    """Mean and covariance of g = (f^1 − f^C, …, f^{C−1} − f^C): softmax(f) = softmax((g, 0))."""
    n_classes = mean.shape[-1]
    A = np.hstack([np.eye(n_classes - 1), -np.ones((n_classes - 1, 1))])
    return mean @ A.T, A @ cov @ A.T


def _cubature_degree5(dim):
    """Nodes (Q, dim) and weights (Q,) of a fully symmetric degree-5 rule for N(0, I_dim).

    Generators 0, ±r e_i and ±s(e_i ± e_j) with r² = dim + 2, s² = (dim + 2)/2; the weights solve
    the moment equations E[1] = 1, E[x_i²] = 1, E[x_i⁴] = 3, E[x_i²x_j²] = 1 (derived in the
    multi-class chapter).
    """
    nodes = [np.zeros(dim)]
    weights = [2.0 / (dim + 2)]
    r = np.sqrt(dim + 2.0)
    for i in range(dim):
        for sign in (1.0, -1.0):
            node = np.zeros(dim)
            node[i] = sign * r
            nodes.append(node)
            weights.append((4.0 - dim) / (2.0 * (dim + 2) ** 2))
    s = np.sqrt((dim + 2.0) / 2.0)
    for i in range(dim):
        for j in range(i + 1, dim):
            for si in (1.0, -1.0):
                for sj in (1.0, -1.0):
                    node = np.zeros(dim)
                    node[i], node[j] = si * s, sj * s
                    nodes.append(node)
                    weights.append(1.0 / (dim + 2) ** 2)
    return np.array(nodes), np.array(weights)


def _sobol_normal_points(dim, n_points):
    """A fixed (unscrambled) Sobol point set mapped to N(0, I_dim): n_points × dim, equal weights.

    The first Sobol point is the origin, which the normal quantile would send to −∞; shifting
    every coordinate by half a cell, u + 1/(2N), keeps the points inside (0, 1) and turns each
    one-dimensional projection into the midpoint rule.
    """
    from scipy.stats import norm
    from scipy.stats import qmc

    log2 = int(round(np.log2(n_points)))
    if n_points < 2 or 2**log2 != n_points:
        raise ValueError(f"n_samples for method='qmc' must be a power of two (Sobol points); got {n_points}")
    u = qmc.Sobol(dim, scramble=False).random_base2(log2) + 0.5 / n_points
    return norm.ppf(u)


SOFTMAX_METHODS = ("qmc", "monte_carlo", "gauss_hermite", "cubature")


def _softmax_rule(method, dim, n_samples, n_nodes, max_nodes):
    """Nodes (Q, dim) and weights (Q,) of a deterministic rule for N(0, I_dim)."""
    if method == "qmc":
        nodes = _sobol_normal_points(dim, 4096 if n_samples is None else int(n_samples))
        return nodes, np.full(len(nodes), 1.0 / len(nodes))
    if method == "cubature":
        return _cubature_degree5(dim)
    if n_nodes is None:
        n_nodes = max(p for p in range(2, 11) if p**dim <= max_nodes or p == 2)
    n_nodes = check_positive_int(n_nodes, "n_nodes")
    if n_nodes**dim > 10 * max(max_nodes, 1):
        raise ValueError(f"n_nodes**(C-1) = {n_nodes}**{dim} nodes is too many; use method='qmc' for this many classes")
    nodes, log_weights = gauss_hermite_grid(dim, n_nodes)
    return nodes, np.exp(log_weights)


def softmax_gaussian_expectation(
    mean: ArrayLike,
    cov: ArrayLike,
    method: str = "qmc",
    rng: np.random.Generator | int | None = None,
    n_samples: int | None = None,
    n_nodes: int | None = None,
    max_nodes: int = 20000,
) -> np.ndarray:
    r"""E[softmax(f)] for f ~ N(μ, Σ), one Gaussian per row.

    The deterministic rules integrate over the C-1 differences g_c = f^c - f^C (the softmax is unchanged when
    the same number is added to every class), along the principal axes of their Gaussian.

    Parameters
    ----------
    mean, cov : ndarray (m, C), ndarray (m, C, C)
        Mean μ and covariance Σ (positive semi-definite) of each row's Gaussian.
    method : {"qmc", "monte_carlo", "gauss_hermite", "cubature"}
        ``"qmc"`` (default): a fixed Sobol set of ``n_samples`` points (default 4096, a power of two);
        deterministic, equal positive weights, accurate also for latent standard deviations large against the
        softmax's unit bend (the usual case at evidence-optimal hyperparameters). ``"monte_carlo"``:
        ``n_samples`` (default 1000) draws of f ([WB98] §4); unbiased, standard error at most 0.5/√S.
        ``"gauss_hermite"``: a tensor rule, very accurate for latent standard deviations up to about one, poor
        at ten or more. ``"cubature"``: degree 5, 2(C-1)² + 1 nodes, cheapest; for C > 5 some weights are
        negative and it is accurate only for small latent variances (the result is clipped to [0, 1] and
        renormalised).
    rng : numpy.random.Generator or int, optional
        Required for ``"monte_carlo"`` (ignored otherwise).
    n_samples, n_nodes : int, optional
        Points per row for ``"qmc"`` (a power of two) and ``"monte_carlo"``; Gauss–Hermite nodes p per axis
        (default: the largest p ≤ 10 with p^(C-1) ≤ ``max_nodes``).
    max_nodes : int
        Budget for the default ``n_nodes``.

    Returns
    -------
    ndarray (m, C)
        Class probabilities; every row sums to one.
    """
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mean.ndim != 2 or mean.shape[1] < 2:
        raise ValueError(f"mean must have shape (m, C) with C >= 2; got {mean.shape}")
    m, n_classes = mean.shape
    if cov.shape != (m, n_classes, n_classes):
        raise ValueError(f"cov must have shape {(m, n_classes, n_classes)} to match mean; got {cov.shape}")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise ValueError("mean and cov must be finite")
    if n_samples is not None:
        n_samples = check_positive_int(n_samples, "n_samples")
    check_choice(method, "method", SOFTMAX_METHODS)
    if method == "monte_carlo":
        generator = check_rng(rng)
        n_samples = 1000 if n_samples is None else n_samples
        S = _gaussian_square_root(cov)
        out = np.empty((m, n_classes))
        for i in range(m):
            # W&B 1998 §4: average the softmax over draws f = μ + S z, z ~ N(0, I)
            Z = generator.standard_normal((n_samples, n_classes))
            out[i] = softmax(mean[i] + Z @ S[i].T).mean(axis=0)
        return out
    nodes, weights = _softmax_rule(method, n_classes - 1, n_samples, n_nodes, max_nodes)
    mean_g, cov_g = _differences_to_last(mean, cov)
    S = _gaussian_square_root(cov_g)
    out = np.empty((m, n_classes))
    chunk = max(1, 200000 // len(weights))
    for start in range(0, m, chunk):
        part = slice(start, start + chunk)
        # g = μ_g + S x at every node x of the rule, for every test input of the chunk
        G = mean_g[part, None, :] + np.einsum("mij,qj->mqi", S[part], nodes)
        G = np.concatenate([G, np.zeros(G.shape[:-1] + (1,))], axis=-1)  # softmax(f) = softmax((g, 0))
        out[part] = np.einsum("mqc,q->mc", softmax(G), weights)
    if method == "cubature":
        out = np.clip(out, 0.0, 1.0)
        out /= out.sum(axis=1, keepdims=True)
    return out


def log_sum_exp(F: ArrayLike) -> np.ndarray | float:
    r"""log ∑_c exp F[..., c] along the last axis, without overflow.

    Parameters
    ----------
    F : array-like (..., C)
        As in :func:`softmax`.

    Returns
    -------
    ndarray (...) or float
        The softmax's log normaliser, one per row (a scalar for a one-dimensional ``F``).
    """
    return logsumexp(np.asarray(F, dtype=float), axis=-1)
