"""Matplotlib helpers for the book's recurring figures.

This is the only module of :mod:`gpc_ref` that imports matplotlib, and it does
so lazily, so ``import gpc_ref`` works without it. Every helper draws on an
``ax`` it is given (or on a new one from :func:`new_axes` when ``ax`` is None) and
returns the ``ax``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # matplotlib is imported only when a figure is drawn
    from matplotlib.axes import Axes

__all__ = [
    "METHOD_STYLES",
    "method_style",
    "require_matplotlib",
    "new_axes",
    "plot_binary_data",
    "plot_probability_contours",
    "plot_trace",
    "plot_band",
    "plot_density_contours",
]


#: One colour, marker and line style per method, for every figure of the book. Colours are the
#: colour-blind-safe Okabe–Ito palette; the ground truth is always black and dashed.
METHOD_STYLES: dict[str, dict[str, str]] = {
    "truth": {"color": "#000000", "marker": "x", "linestyle": "--", "label": "exact / MCMC"},
    "laplace": {"color": "#0072B2", "marker": "o", "linestyle": "-", "label": "Laplace"},
    "hmc": {"color": "#56B4E9", "marker": "v", "linestyle": "-.", "label": "Laplace + HMC"},
    "lower_bound": {"color": "#009E73", "marker": "^", "linestyle": "-", "label": "JJ lower bound Z′"},
    "upper_bound": {"color": "#CC79A7", "marker": "s", "linestyle": "-", "label": "JJ upper bound Z″"},
    "ep": {"color": "#D55E00", "marker": "D", "linestyle": "-", "label": "EP"},
    "em_ep": {"color": "#E69F00", "marker": "d", "linestyle": ":", "label": "EM-EP"},
    "kl": {"color": "#882255", "marker": "p", "linestyle": "-", "label": "KL (Gaussian VI)"},
    "vb": {"color": "#7B3294", "marker": "P", "linestyle": "-", "label": "VB probit"},
    "gibbs": {"color": "#999999", "marker": "*", "linestyle": "--", "label": "Gibbs sampler"},
    "ivm": {"color": "#8C510A", "marker": "X", "linestyle": "-", "label": "sparse IVM"},
    "sklearn": {"color": "#332288", "marker": "h", "linestyle": ":", "label": "scikit-learn Laplace"},
}


def method_style(method: str, **overrides: str) -> dict[str, str]:
    """Matplotlib keyword arguments (``color``, ``marker``, ``linestyle``, ``label``) for a method.

    Parameters
    ----------
    method : str
        A key of :data:`METHOD_STYLES` (``"laplace"``, ``"ep"``, ``"vb"``, …).
    **overrides : str
        Keywords that replace the defaults (e.g. ``label="Laplace, MAP"``, ``marker=""`` for a line).

    Returns
    -------
    dict
        A new dict, safe to modify.
    """
    if method not in METHOD_STYLES:
        raise ValueError(f"method must be one of {sorted(METHOD_STYLES)}; got {method!r}")
    return {**METHOD_STYLES[method], **overrides}


def require_matplotlib() -> ModuleType:
    """Import matplotlib.pyplot, or say clearly how to get it.

    Returns
    -------
    module
        ``matplotlib.pyplot``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'gpc_ref[plot]' or pip install matplotlib") from exc
    return plt


def new_axes(ax: Axes | None = None, figsize: tuple[float, float] = (5.0, 3.5)) -> Axes:
    """Return ``ax`` or a new axes of a modest size.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        Returned as it is, if given.
    figsize : (float, float)
        Width and height in inches of a new figure (at 80 dpi).

    Returns
    -------
    matplotlib.axes.Axes
    """
    plt = require_matplotlib()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=80)
    return ax


def plot_binary_data(
    X: ArrayLike, y: ArrayLike, ax: Axes | None = None, labels: Sequence[str] = ("class −1", "class +1")
) -> Axes:
    """Scatter 2-D inputs coloured by a binary label (any two values; the smaller is drawn first).

    Parameters
    ----------
    X : array-like (n, 2)
        The inputs; the first two columns are drawn.
    y : array-like (n,)
        Labels with two distinct values: the smaller as open circles, the larger as red crosses.
    ax : matplotlib.axes.Axes or None
        Where to draw (module docstring).
    labels : (str, str)
        Legend entries for the smaller and the larger label.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with the two scatters.
    """
    ax = new_axes(ax)
    X, y = np.asarray(X), np.asarray(y)
    for value, marker, label in zip(np.unique(y), ("o", "x"), labels):
        members = y == value
        ax.scatter(
            X[members, 0],
            X[members, 1],
            marker=marker,
            s=20,
            label=label,
            facecolors="none" if marker == "o" else None,
            edgecolors="C0" if marker == "o" else None,
            color=None if marker == "o" else "C3",
        )
    return ax


def plot_probability_contours(
    predict: Callable[[np.ndarray], ArrayLike], limits: tuple[float, float, float, float], ax: Axes | None = None,
    levels: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9), resolution: int = 80,
) -> Axes:  # fmt: skip
    """Contours of ``predict(points) -> P(class +1)`` over the box ``limits = (x0, x1, y0, y1)``.

    The 0.5 contour (the decision boundary) is drawn thicker.

    Parameters
    ----------
    predict : callable
        Maps an (N, 2) array of points to N probabilities.
    limits : (float, float, float, float)
        ``(x0, x1, y0, y1)``.
    ax : matplotlib.axes.Axes or None
        Where to draw.
    levels : sequence of float
        The contour levels, labelled on the plot.
    resolution : int
        Grid points along each axis.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with the labelled contours.
    """
    ax = new_axes(ax)
    x0, x1, y0, y1 = limits
    g1, g2 = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    p = np.asarray(predict(np.column_stack([g1.ravel(), g2.ravel()]))).reshape(g1.shape)
    contours = ax.contour(
        g1, g2, p, levels=list(levels), colors="k", linewidths=[2.0 if level == 0.5 else 0.7 for level in levels]
    )
    ax.clabel(contours, fontsize=8)
    return ax


def plot_trace(samples: ArrayLike, names: Sequence[str] | None = None, ax: Axes | None = None) -> Axes:
    """Trace plot of MCMC samples, one line per column.

    Parameters
    ----------
    samples : array-like (S,) or (S, P)
        One row per iteration (a single chain may be given as a vector).
    names : sequence of str, optional
        One legend entry per column; no legend without them.
    ax : matplotlib.axes.Axes or None
        A new, wider axes if None.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with one line per column against the iteration.
    """
    ax = new_axes(ax, figsize=(6.0, 3.0))
    samples = np.atleast_2d(np.asarray(samples))
    if samples.shape[0] == 1:
        samples = samples.T
    for j in range(samples.shape[1]):
        ax.plot(samples[:, j], lw=0.8, label=None if names is None else names[j])
    ax.set_xlabel("iteration")
    if names is not None:
        ax.legend(fontsize=8, ncol=2)
    return ax


# ===================================================================== helpers added by the method chapters (each below its own marker)
# --- foundations
def plot_band(
    x: ArrayLike, mean: ArrayLike, std: ArrayLike, ax: Axes | None = None, color: str = "C0",
    label: str | None = None, n_std: float = 2.0,
) -> Axes:  # fmt: skip
    """A mean curve with a shaded band of ``n_std`` standard deviations either side.

    Used for GP posteriors over a 1-D input (the band is the pointwise mean ± 2 sd, about a
    95 % interval for a Gaussian).

    Parameters
    ----------
    x : array-like (n,)
        Sorted inputs.
    mean, std : array-like (n,)
        The curve and its pointwise standard deviation.
    ax : matplotlib.axes.Axes or None
        The axes to draw on.
    color : str
        Of the curve and (lighter) of the band.
    label : str or None
        Legend entry of the curve.
    n_std : float
        Half-width of the band in standard deviations.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with the band and the curve.
    """
    ax = new_axes(ax)
    x, mean, std = np.asarray(x), np.asarray(mean), np.asarray(std)
    ax.fill_between(x, mean - n_std * std, mean + n_std * std, color=color, alpha=0.2, lw=0)
    ax.plot(x, mean, color=color, lw=1.5, label=label)
    return ax


def plot_density_contours(
    grid_1: ArrayLike, grid_2: ArrayLike, density: ArrayLike, ax: Axes | None = None, n_levels: int = 8,
    reference_max: float | None = None, colors: str | Sequence[str] = "k",
    linestyles: str | Sequence[str] = "solid",
) -> Axes:  # fmt: skip
    """Contours of a 2-D density given on a grid, at fractions of a maximum.

    The levels are ``m × exp(−c²/2)`` for c = 0.5, 1, …, 0.5·n_levels, with ``m`` the
    density's own maximum or ``reference_max``; for a Gaussian and its own maximum
    they are the ellipses at 0.5, 1, 1.5, … standard deviations. Pass the same
    ``reference_max`` to draw two densities at the same absolute heights.

    Parameters
    ----------
    grid_1, grid_2 : array-like
        Coordinates of the grid, as ``numpy.meshgrid`` makes them (or the two axes' values).
    density : array-like
        The density on the grid, shaped like ``grid_1``.
    ax : matplotlib.axes.Axes or None
        Drawn on, or made.
    n_levels : int
        Number of contours.
    reference_max : float or None
        ``m`` above; the density's maximum if None.
    colors, linestyles : str or sequence of str
        Passed to ``Axes.contour``.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, with the contours.
    """
    ax = new_axes(ax)
    density = np.asarray(density)
    top = density.max() if reference_max is None else float(reference_max)
    heights = top * np.exp(-0.5 * (0.5 * np.arange(n_levels, 0, -1)) ** 2)
    ax.contour(grid_1, grid_2, density, levels=heights, colors=colors, linestyles=linestyles, linewidths=0.9)
    return ax


# --- Laplace and HMC
# --- variational bounds
# --- EP
# --- VB probit and Gibbs
# --- IVM
