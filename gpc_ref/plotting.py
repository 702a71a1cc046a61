"""Matplotlib helpers for the book's recurring figures.

This is the only module of :mod:`gpc_ref` that imports matplotlib, and it does
so lazily, so ``import gpc_ref`` works without it. Every helper draws on an
``ax`` it is given (or a new one) and returns the ``ax``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["require_matplotlib", "new_axes", "plot_binary_data", "plot_probability_contours",
           "plot_trace", "plot_band", "plot_density_contours"]


def require_matplotlib():
    """Import matplotlib.pyplot, or say clearly how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'gpc_ref[plot]' or pip install matplotlib") from exc
    return plt


def new_axes(ax=None, figsize=(5.0, 3.5)):
    """Return ``ax`` or a new axes of a modest size."""
    plt = require_matplotlib()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=80)
    return ax


def plot_binary_data(X, y, ax=None, labels=("class −1", "class +1")):
    """Scatter 2-D inputs coloured by a binary label (any two values; the smaller is drawn first)."""
    ax = new_axes(ax)
    X, y = np.asarray(X), np.asarray(y)
    for value, marker, label in zip(np.unique(y), ("o", "x"), labels):
        members = y == value
        ax.scatter(X[members, 0], X[members, 1], marker=marker, s=20, label=label,
                   facecolors="none" if marker == "o" else None, edgecolors="C0" if marker == "o" else None,
                   color=None if marker == "o" else "C3")
    return ax


def plot_probability_contours(predict, limits, ax=None, levels=(0.1, 0.25, 0.5, 0.75, 0.9), resolution=80):
    """Contours of ``predict(points) -> P(class +1)`` over the box ``limits = (x0, x1, y0, y1)``.

    The 0.5 contour (the decision boundary) is drawn thicker.
    """
    ax = new_axes(ax)
    x0, x1, y0, y1 = limits
    g1, g2 = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    p = np.asarray(predict(np.column_stack([g1.ravel(), g2.ravel()]))).reshape(g1.shape)
    contours = ax.contour(g1, g2, p, levels=list(levels), colors="k",
                          linewidths=[2.0 if level == 0.5 else 0.7 for level in levels])
    ax.clabel(contours, fontsize=7)
    return ax


def plot_trace(samples, names=None, ax=None):
    """Trace plot of MCMC samples, one line per column."""
    ax = new_axes(ax, figsize=(6.0, 3.0))
    samples = np.atleast_2d(np.asarray(samples))
    if samples.shape[0] == 1:
        samples = samples.T
    for j in range(samples.shape[1]):
        ax.plot(samples[:, j], lw=0.8, label=None if names is None else names[j])
    ax.set_xlabel("iteration")
    if names is not None:
        ax.legend(fontsize=7, ncol=2)
    return ax

# ===================================================================== helpers added by the method chapters (each below its own marker)
# --- foundations
def plot_band(x, mean, std, ax=None, color="C0", label=None, n_std=2.0):
    """A mean curve with a shaded band of ``n_std`` standard deviations either side.

    ``x`` must be sorted. Used for GP posteriors over a 1-D input (the band is
    the pointwise mean ± 2 sd, about a 95 % interval for a Gaussian).
    """
    ax = new_axes(ax)
    x, mean, std = np.asarray(x), np.asarray(mean), np.asarray(std)
    ax.fill_between(x, mean - n_std * std, mean + n_std * std, color=color, alpha=0.2, lw=0)
    ax.plot(x, mean, color=color, lw=1.5, label=label)
    return ax


def plot_density_contours(grid_1, grid_2, density, ax=None, n_levels=8, reference_max=None, colors="k",
                          linestyles="solid"):
    """Contours of a 2-D density given on a grid, at fractions of a maximum.

    The levels are ``m × exp(−c²/2)`` for c = 0.5, 1, …, 0.5·n_levels, with ``m`` the
    density's own maximum or ``reference_max``; for a Gaussian and its own maximum
    they are the ellipses at 0.5, 1, 1.5, … standard deviations. Pass the same
    ``reference_max`` to draw two densities at the same absolute heights.
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
