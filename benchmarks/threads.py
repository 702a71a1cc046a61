"""BLAS threading in gpc_ref's hot loops: the default thread count against one thread.

Run: .venv/bin/python benchmarks/threads.py

Do not set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS for this script: it compares the library's default
(one thread per core) with ``threadpoolctl.threadpool_limits(1)`` in the same process. Each row is one
fit, timed as the median of three runs under each setting; the last column is the ratio.

The fits:

- binary Laplace mode (Newton, probit) at n = 400 and 1000, fixed hyperparameters;
- parallel EP (probit) at n = 400 and 1000, fixed hyperparameters;
- ``LaplaceGPC`` ML-II on 400 points of MASS's biopsy data (9 inputs, isotropic SE);
- softmax Laplace MAP (W&B priors, ARD) on 200 penguins, 3 classes, 4 inputs;
- VB probit kernel learning (``method="bound"``) on the same penguins.

The small matrices of the multi-class fits (200×200, and the C-block products) are where OpenBLAS's
threads cost more in synchronisation than they gain; ``gpc_ref.threads`` exists because of this table.
"""

from __future__ import annotations

import os
import platform
import warnings

import numpy as np
from common import biopsy
from common import blas_threading
from common import median_seconds
from common import penguins
from threadpoolctl import threadpool_limits

from gpc_ref import LaplaceGPC
from gpc_ref import VBProbitGPC
from gpc_ref.datasets import make_ard_gaussian
from gpc_ref.ep import expectation_propagation
from gpc_ref.hyperpriors import log_hyperprior
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import laplace_mode
from gpc_ref.laplace_multiclass import one_hot_labels
from gpc_ref.laplace_multiclass import softmax_laplace_optimize
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.threads import limit_blas_threads


def fits():
    """(name, callable) pairs: the hot loops timed."""
    cases = []
    for n in (400, 1000):
        data = make_ard_gaussian(0, n_train=n, n_test=1)
        K = SEKernel(variance=2.0, lengthscale=3.0).K(data.X_train)
        y = data.y_train.astype(float)
        cases.append((f"Laplace mode, n={n}", lambda K=K, y=y: laplace_mode(K, y, likelihood=ProbitLikelihood())))
        cases.append((f"parallel EP, n={n}", lambda K=K, y=y: expectation_propagation(K, y, schedule="parallel")))
    X, y = biopsy(400)
    cases.append(("LaplaceGPC ML-II, biopsy 400", lambda: LaplaceGPC(prior=None, n_restarts=0).fit(X, y)))
    X3, codes = penguins(200)
    kernel = SEKernel(lengthscale=np.ones(4))

    def softmax_map():
        return softmax_laplace_optimize(kernel, X3, one_hot_labels(codes),
                                        log_prior=lambda theta: log_hyperprior(kernel.with_theta(theta)))  # fmt: skip

    cases.append(("softmax Laplace MAP, penguins 200", softmax_map))
    cases.append(("VBProbitGPC bound, penguins 200", lambda: VBProbitGPC(kernel=kernel).fit(X3, codes)))
    return cases


def main(repeats=3):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print(
        f"median seconds of {repeats} runs; 'default' is the BLAS's own thread count, '1 thread' threadpool_limits(1)"
    )
    print(f"{'fit':<36} {'default s':>10} {'1 thread s':>11} {'default/1':>10} {'limit_blas_threads s':>21}")
    for name, fit in fits():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default = median_seconds(fit, repeats)
            with threadpool_limits(1):
                single = median_seconds(fit, repeats)
            with limit_blas_threads():
                limited = median_seconds(fit, repeats)
        print(f"{name:<36} {default:>10.3f} {single:>11.3f} {default / single:>10.2f} {limited:>21.3f}", flush=True)


if __name__ == "__main__":
    main()
