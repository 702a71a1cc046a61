"""EP at fixed hyperparameters: sweeps to converge and time in units of one Cholesky, beside Laplace.

Run: .venv/bin/python benchmarks/ep.py

Data: K&G's 6-feature ARD set (``make_ard_gaussian``) with n training points, an SE kernel
with lengthscale 3 and variance 2. Three fits of the same data:

- EP with the probit likelihood (sequential sweeps, rank-one updates, tol 1e-6 on the sites);
- EP with K&G's label-noise likelihood, ε = 0.05 and latent noise v₂ = 0.1 in the kernel;
- the Laplace approximation with the probit likelihood (Newton, ``gpc_ref.laplace.laplace_mode``),
  if the Laplace module is present.

One EP sweep costs O(n³) (n rank-one updates of Σ plus one recomputation from the sites),
like one Newton step of Laplace; EP needs more sweeps than Newton needs steps.
"""
from __future__ import annotations

import os
import platform
import warnings

import numpy as np

from common import cholesky_seconds, median_seconds

from gpc_ref.datasets import make_ard_gaussian
from gpc_ref.ep import expectation_propagation
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood, ProbitLikelihood

try:
    from gpc_ref.laplace import laplace_mode
except ImportError:  # the Laplace chapter's module is not there yet
    laplace_mode = None


def main(sizes=(250, 500, 1000), repeats=3):
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print("times are medians of", repeats, "runs, in units of one Cholesky of an n×n kernel matrix")
    header = f"{'n':>5} {'chol s':>8} | {'EP probit':>9} {'sweeps':>6} | {'EP label-noise':>14} {'sweeps':>6} |"
    print(header + f" {'Laplace':>8} {'Newton':>6}")
    for n in sizes:
        data = make_ard_gaussian(0, n_train=n, n_test=1)
        X, y = data.X_train, data.y_train.astype(float)
        unit = cholesky_seconds(n, repeats=repeats)
        K = SEKernel(variance=2.0, lengthscale=3.0).K(X)
        K_noise = SEKernel(variance=2.0, lengthscale=3.0, jitter=0.1).K(X)
        probit = expectation_propagation(K, y, ProbitLikelihood())
        t_probit = median_seconds(lambda: expectation_propagation(K, y, ProbitLikelihood()), repeats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            noisy = expectation_propagation(K_noise, y, LabelNoiseLikelihood(0.05, 0.0))
            t_noisy = median_seconds(lambda: expectation_propagation(K_noise, y, LabelNoiseLikelihood(0.05, 0.0)),
                                     repeats)
        row = (f"{n:>5} {unit:>8.4f} | {t_probit / unit:>9.1f} {probit.n_sweeps:>6} | "
               f"{t_noisy / unit:>14.1f} {noisy.n_sweeps:>6} |")
        if laplace_mode is not None:
            mode = laplace_mode(K, y, likelihood=ProbitLikelihood())
            t_laplace = median_seconds(lambda: laplace_mode(K, y, likelihood=ProbitLikelihood()), repeats)
            row += f" {t_laplace / unit:>8.1f} {mode.n_iter:>6}"
        else:
            row += f" {'n/a':>8} {'':>6}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
