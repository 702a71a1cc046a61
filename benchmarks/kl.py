"""The KL method at fixed hyperparameters beside the Laplace mode and parallel EP.

Run: .venv/bin/python benchmarks/kl.py

K&G's 6-feature ARD set (``make_ard_gaussian``) with n training points and an isotropic SE kernel at
two settings: variance 2, lengthscale 3 (the setting of ``benchmarks/ep.py``'s first table) and a
harder one, variance 100, lengthscale 1, where the posterior is far from Gaussian and the marginal
variances are large. For each n and setting, medians of ``repeats`` runs of

- the KL fit (``kl_gaussian``, natural-gradient steps with Anderson extrapolation, gradient tolerance
  1e-6), logistic and probit likelihoods;
- the Laplace mode (``laplace_mode``), logistic and probit;
- parallel EP (``expectation_propagation(schedule="parallel")``, probit, site tolerance 1e-6);

in units of one Cholesky factorisation of the n×n kernel matrix and in seconds, with the iteration
counts (KL: steps / factorisations of B; Laplace: Newton steps; EP: sweeps) and the ratio of the
probit KL fit to parallel EP. Every timing, the unit included, runs with one BLAS thread
(``gpc_ref.threads.BLAS_THREADS``, the setting every estimator uses), in one run, so that the ratios
are measured under the same load.
"""

from __future__ import annotations

import os
import platform
import warnings

import numpy as np
from common import blas_threading
from common import cholesky_seconds
from common import median_seconds

from gpc_ref.datasets import make_ard_gaussian
from gpc_ref.ep import expectation_propagation
from gpc_ref.kernels import SEKernel
from gpc_ref.kl import kl_gaussian
from gpc_ref.laplace import laplace_mode
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.threads import limit_blas_threads

SETTINGS = ((2.0, 3.0), (100.0, 1.0))  # (variance, lengthscale)


def row(n, variance, lengthscale, repeats):
    """One line of the table: n, the unit, and each method's time in units, seconds and iterations."""
    data = make_ard_gaussian(0, n_train=n, n_test=1)
    X, y = data.X_train, data.y_train.astype(float)
    K = SEKernel(variance=variance, lengthscale=lengthscale).K(X)
    unit = cholesky_seconds(n, repeats=repeats)
    runs = {
        "KL logistic": lambda: kl_gaussian(K, y, "logistic"),
        "KL probit": lambda: kl_gaussian(K, y, "probit"),
        "Laplace logistic": lambda: laplace_mode(K, y, likelihood=LogisticLikelihood()),
        "Laplace probit": lambda: laplace_mode(K, y, likelihood=ProbitLikelihood()),
        "EP parallel": lambda: expectation_propagation(K, y, schedule="parallel", tol=1e-6),
    }
    cells, seconds = [], {}
    for name, run in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run()
            seconds[name] = median_seconds(run, repeats)
        if name.startswith("KL"):
            assert result.converged, f"{name} did not converge at n = {n}"
            count = f"{result.n_iter}/{result.n_factorisations}"
        elif name.startswith("Laplace"):
            count = str(result.n_iter)
        else:
            count = str(result.n_sweeps)
        cells.append(f"{seconds[name] / unit:>7.1f} {seconds[name]:>7.3f} {count:>6}")
    ratio = seconds["KL probit"] / seconds["EP parallel"]
    return f"{n:>5} {variance:>5g} {lengthscale:>4g} {unit:>8.4f} | " + " | ".join(cells) + f" | {ratio:>8.2f}"


def main(sizes=(250, 500, 1000), repeats=3):
    with limit_blas_threads(1):
        print(blas_threading())
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
        print(
            f"The KL fit, the Laplace mode and parallel EP at fixed hyperparameters: medians of {repeats} runs, "
            "in units of one Cholesky of the n×n kernel matrix and in seconds; KL counts are steps/factorisations"
        )
        names = ("KL logistic", "KL probit", "Laplace logistic", "Laplace probit", "EP parallel (probit)")
        print(f"{'':5} {'':5} {'':4} {'':8} | " + " | ".join(f"{name:^22}" for name in names) + " | KL probit")
        print(
            f"{'n':>5} {'var':>5} {'ell':>4} {'chol s':>8} | "
            + " | ".join(f"{'/chol':>7} {'s':>7} {'its':>6}" for _ in names)
            + f" | {'/ EP':>8}"
        )
        for variance, lengthscale in SETTINGS:
            for n in sizes:
                print(row(n, variance, lengthscale, repeats), flush=True)


if __name__ == "__main__":
    main()
