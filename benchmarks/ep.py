"""EP at fixed hyperparameters, sequential against parallel, beside Laplace; then EPGPC against scikit-learn.

Run: .venv/bin/python benchmarks/ep.py

Table 1. K&G's 6-feature ARD set (``make_ard_gaussian``) with n training points, an SE kernel with
lengthscale 3 and variance 2; EP run from the prior to a site tolerance of 1e-6:

- EP with the probit likelihood, sequential (K&G: n rank-one updates of Σ per sweep) and parallel
  (every site from one q, then one Cholesky of B and one triangular inverse per sweep);
- EP with K&G's label-noise likelihood, ε = 0.05, latent noise v₂ = 0.1 in the kernel, both schedules
  (``expectation_propagation_with_fallback``, which restarts parallel EP sequentially if it fails);
- the Laplace mode (Newton, probit);

each as seconds, in units of one Cholesky of the n×n kernel matrix, and EP/Laplace ratios.

Table 2 (``common.family_table``): ``EPGPC`` (parallel EP; learning by direct maximisation of the EP
evidence, its default) against scikit-learn's Laplace classifier. Table 3: the same on 400 biopsies. The EP chapter (section "EM-EP
against direct maximisation") compares EM-EP, EM-EP with SQUAREM and direct maximisation.
"""

from __future__ import annotations

import os
import platform
import warnings

import numpy as np
from common import FIXED_KERNEL
from common import biopsy
from common import blas_threading
from common import cholesky_seconds
from common import family_table
from common import median_seconds
from common import sklearn_fit

from gpc_ref import EPGPC
from gpc_ref.datasets import make_ard_gaussian
from gpc_ref.ep import expectation_propagation_with_fallback
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import laplace_mode
from gpc_ref.likelihoods import LabelNoiseLikelihood
from gpc_ref.likelihoods import ProbitLikelihood


def schedules_row(n, repeats):
    """Table 1's row for n: sweeps and times of both schedules, both likelihoods, and the Laplace mode."""
    data = make_ard_gaussian(0, n_train=n, n_test=1)
    X, y = data.X_train, data.y_train.astype(float)
    unit = cholesky_seconds(n, repeats=repeats)
    cases = [(SEKernel(variance=2.0, lengthscale=3.0).K(X), ProbitLikelihood()),
             (SEKernel(variance=2.0, lengthscale=3.0, jitter=0.1).K(X), LabelNoiseLikelihood(0.05, 0.0))]  # fmt: skip
    cells = []
    for K, likelihood in cases:
        for schedule in ("sequential", "parallel"):

            def run(K=K, likelihood=likelihood, schedule=schedule):
                return expectation_propagation_with_fallback(K, y, likelihood=likelihood, schedule=schedule)[0]

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = run()
                seconds = median_seconds(run, repeats)
            label = result.n_sweeps if result.schedule == schedule else f"{result.n_sweeps}s"
            cells.append((seconds, label))
    K = cases[0][0]
    mode = laplace_mode(K, y, likelihood=ProbitLikelihood())
    laplace = median_seconds(lambda: laplace_mode(K, y, likelihood=ProbitLikelihood()), repeats)
    text = f"{n:>5} {unit:>8.4f} |"
    for seconds, sweeps in cells:
        text += f" {seconds / unit:>7.1f} {sweeps!s:>6} |"
    text += f" {laplace / unit:>7.1f} {mode.n_iter:>6} | {cells[0][0] / laplace:>8.1f} {cells[1][0] / laplace:>8.1f}"
    return text


def main(sizes=(250, 500, 1000), repeats=3):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print(
        f"1. EP at fixed hyperparameters: medians of {repeats} runs, in units of one Cholesky of the n×n kernel "
        "matrix; 'sweeps' ending in s: parallel EP failed and the fallback finished sequentially"
    )
    print(
        f"{'':14} | {'EP probit, sequential':>14} | {'EP probit, parallel':>14} | {'label noise, seq.':>14} | "
        f"{'label noise, par.':>14} | {'Laplace mode':>14} | {'EP/Laplace':>17}"
    )
    print(
        f"{'n':>5} {'chol s':>8} |" + f" {'time':>7} {'sweeps':>6} |" * 4 + f" {'time':>7} {'Newton':>6} |"
        f" {'seq.':>8} {'par.':>8}"
    )
    for n in sizes:
        print(schedules_row(n, repeats), flush=True)

    def fixed(X, y):
        return EPGPC(kernel=SEKernel(*FIXED_KERNEL), optimize=False).fit(X, y)

    def learn(X, y):
        model = EPGPC(kernel=SEKernel()).fit(X, y)
        return model.log_marginal_likelihood_, model.hyperparameter_fit_.converged

    family_table("2. EP (EPGPC: parallel EP, the EP evidence maximised directly; objective: log Z_EP)", fixed, learn,
                 sizes=sizes)  # fmt: skip
    biopsy_row(repeats)


def biopsy_row(repeats):
    """Table 3: the default EPGPC against scikit-learn's Laplace ML-II on 400 biopsies (medians of runs)."""
    X, y = biopsy(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = EPGPC(kernel=SEKernel()).fit(X, y)
        ours = median_seconds(lambda: EPGPC(kernel=SEKernel()).fit(X, y), repeats)
        skl = median_seconds(lambda: sklearn_fit(X, y, learn=True), repeats)
    fit = model.hyperparameter_fit_
    print(
        f"\n3. 400 biopsies (load_biopsy, rows drawn with seed 0, inputs standardised), isotropic SE from variance 1, "
        f"lengthscale 1; medians of {repeats} runs"
    )
    print(
        f"EPGPC {ours:.3f} s (log Z_EP {model.log_marginal_likelihood_:.3f}, converged {fit.converged}, "
        f"{fit.n_evaluations} evaluations, {fit.n_sweeps} EP sweeps); scikit-learn {skl:.3f} s; ratio {ours / skl:.2f}"
    )


if __name__ == "__main__":
    main()
