"""Shared test helpers."""

import numpy as np
import pytest


def finite_difference_gradient(func, x, step=1e-6):
    """Central finite differences of a scalar function of a vector."""
    x = np.asarray(x, dtype=float)
    grad = np.empty_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = step
        grad[j] = (func(x + e) - func(x - e)) / (2 * step)
    return grad


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
