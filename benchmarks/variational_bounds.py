"""Cost per gradient evaluation of the Gibbs & MacKay bounds, against their Table III.

Run: .venv/bin/python benchmarks/variational_bounds.py

G&M's Table III gives the dominant costs per gradient evaluation for N training
points in K input dimensions: for the lower bound (≈ N + K adjustable
parameters) computing C_N (N²K), one N×N inversion (N³) and the derivatives
(N² per hyperparameter); for the upper bound (≈ N parameters) computing C_N
(N²K) and a matrix-vector product (N²) — no inversion. Here every time is
divided by the time of one Cholesky factorisation of an N×N matrix on the same
machine (benchmarks/common.py), so the columns compare algorithms, not machines:

- ``Z' grad``: one evaluation of log Z' with ∂/∂ν and ∂/∂θ (kernel matrix and
  its K + 2 derivative matrices included), as inside the joint optimisation;
- ``Z' value``: log Z' without gradients (what the fixed-point update costs per step);
- ``Z'' grad``: one evaluation of log Z'' with ∂/∂μ for a fixed kernel matrix
  (the gradient route of G&M: no factorisation, O(N²));
- ``Newton``: one Newton step for the upper bound's dual (one Cholesky of B).
"""

from __future__ import annotations

import os
import platform

import numpy as np
from common import FIXED_KERNEL
from common import blas_threading
from common import cholesky_seconds
from common import family_table
from common import median_seconds

from gpc_ref.kernels import SEKernel
from gpc_ref.variational_bounds import lower_bound
from gpc_ref.variational_bounds import optimize_upper_bound
from gpc_ref.variational_bounds import upper_bound


def problem(n, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    t = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    kernel = SEKernel(variance=2.0, lengthscale=np.full(n_features, 2.0), bias=0.1, jitter=1e-6)
    return X, t, kernel


def main(sizes=(100, 200, 400, 800, 1600)):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print("times in units of one Cholesky factorisation of an N×N matrix (K = 5 inputs, ARD + bias)")
    header = ["N", "chol s", "Z' grad", "Z' value", "Z'' grad", "Newton", "Newton its"]
    widths = [6, 9, 8, 8, 8, 8, 10]
    print(" ".join(f"{name:>{width}}" for name, width in zip(header, widths)))
    for n in sizes:
        print(table_row(n), flush=True)
    families()


def table_row(n):
    """One row of the table: the four costs for N = n, in Cholesky units."""
    X, t, kernel = problem(n)
    K = kernel.K(X)
    nu = np.ones(n)
    mu = np.full(n, 0.5)
    unit = cholesky_seconds(n)

    def lower_with_gradients():
        current = kernel.with_theta(kernel.theta)
        lower_bound(current.K(X), t, nu, dK=current.gradients(X))

    def lower_value():
        lower_bound(K, t, nu, compute_gradients=False)

    def upper_with_gradient():
        upper_bound(K, t, mu)

    newton = optimize_upper_bound(K, t)
    repeats = 5 if n <= 800 else 3
    seconds = [median_seconds(f, repeats) for f in (lower_with_gradients, lower_value, upper_with_gradient)]
    newton_step = median_seconds(lambda: optimize_upper_bound(K, t), repeats) / newton.n_iterations
    ratios = [s / unit for s in seconds] + [newton_step / unit]
    return f"{n:>6} {unit:>9.4f} " + " ".join(f"{r:>8.2f}" for r in ratios) + f" {newton.n_iterations:>10d}"


def families():
    """Gibbs & MacKay's bounds (lower bound maximised jointly over ν and θ) beside scikit-learn's Laplace."""
    from gpc_ref import VariationalBoundsGPC

    def fixed(X, y):
        return VariationalBoundsGPC(kernel=SEKernel(*FIXED_KERNEL), optimize=False).fit(X, y)

    def learn(X, y):
        model = VariationalBoundsGPC(kernel=SEKernel()).fit(X, y)
        return model.log_marginal_likelihood_, model.hyperparameter_fit_.converged

    family_table("Variational bounds (VariationalBoundsGPC; objective: log Z')", fixed, learn)


if __name__ == "__main__":
    main()
