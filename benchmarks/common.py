"""Timing helpers shared by the benchmark scripts.

Every method benchmark reports its time in units of one Cholesky
factorisation of an n×n kernel matrix on the same machine, so the tables
compare algorithms rather than machines.
"""
from __future__ import annotations

import time

import numpy as np

from gpc_ref.kernels import SEKernel
from gpc_ref.linalg import cholesky


def median_seconds(func, repeats=5):
    """Median wall-clock seconds of ``func()`` over ``repeats`` calls (after one warm-up call)."""
    func()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def kernel_matrix(n, n_features=5, seed=0):
    """An n×n squared-exponential kernel matrix of random inputs (jitter 1e-6 keeps it well conditioned)."""
    X = np.random.default_rng(seed).normal(size=(n, n_features))
    return SEKernel(lengthscale=2.0, jitter=1e-6).K(X)


def cholesky_seconds(n, repeats=5):
    """Median seconds of one Cholesky factorisation of an n×n kernel matrix."""
    K = kernel_matrix(n)
    return median_seconds(lambda: cholesky(K), repeats)
