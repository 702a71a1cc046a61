"""Learning the kernel of Girolami & Rogers' variational probit, against softmax Laplace and scikit-learn.

Run: .venv/bin/python benchmarks/vb_probit.py [n ...]      (default n = 300 1000)

Data: ``common.unbalanced_multiclass`` (4 classes with shares .31/.06/.12/.51, 6 standardised inputs; the
set of issue 19's cross-check), seed 0. Every learner starts from an isotropic SE kernel with variance 1
and lengthscale 1 and runs with one BLAS thread (the script sets it before numpy loads, and prints what the
libraries report). The rows, all timed in one run so that their ratios are fair on a loaded machine:

- ``VBProbitGPC()``: its default learner, the VB lower bound maximised over the variance and the lengthscale
  (``method="bound"``, one start); evaluations are the search's bound evaluations, inner iterations are
  evaluations of the VB fixed-point map summed over the search (``BoundFit.n_vb_iter``, including the
  evaluations redone at the tight tolerance near the optimum) and the largest number in one VB run (the
  cap is ``vb_max_iter`` = 1000);
- ``LaplaceGPC()``: the multi-class default, softmax Laplace with W&B's hyperprior (MAP-II, its default
  three random restarts besides the first start), and the same with ``n_restarts=0`` (per start);
  evaluations are evidence evaluations over all starts, inner iterations Newton steps where reported;
- scikit-learn's ``GaussianProcessClassifier`` (Laplace, one-vs-rest: four binary ML-II fits, no
  restarts); evaluations are its L-BFGS-B objective calls summed over the four fits.

Seconds are one wall-clock run each; "/chol" divides by one Cholesky factorisation of an n×n kernel matrix
(median of five), the unit the other benchmarks use. The last columns are the learnt objective of each
method (not comparable between methods: the VB bound, the Laplace evidence plus the log hyperprior, the
sum of four binary Laplace evidences) and whether the learner reported convergence.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"  # one BLAS thread for every row, scikit-learn's included

import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from common import blas_threading  # noqa: E402
from common import cholesky_seconds  # noqa: E402
from common import unbalanced_multiclass  # noqa: E402

from gpc_ref import LaplaceGPC  # noqa: E402
from gpc_ref import VBProbitGPC  # noqa: E402
from gpc_ref.kernels import SEKernel  # noqa: E402


def vb_row(X, y):
    """VBProbitGPC's default fit: seconds, bound evaluations, inner VB iterations (total, largest), objective."""
    start = time.perf_counter()
    model = VBProbitGPC(kernel=SEKernel()).fit(X, y)
    seconds = time.perf_counter() - start
    fit = model.hyperparameter_fit_
    return {"seconds": seconds, "evaluations": fit.optimization.n_evaluations, "inner": fit.n_vb_iter,
            "inner_max": int(fit.trace[:, 2].max()),
            "objective": fit.lower_bound, "converged": fit.converged,
            "kernel": f"s={model.kernel_.variance:.3g}, l={model.kernel_.lengthscale:.3g}"}  # fmt: skip


def laplace_row(X, y, n_restarts):
    """LaplaceGPC's multi-class fit (softmax Laplace MAP-II with W&B's hyperprior) with ``n_restarts``."""
    start = time.perf_counter()
    model = LaplaceGPC(kernel=SEKernel(), n_restarts=n_restarts).fit(X, y)
    seconds = time.perf_counter() - start
    search = model.hyperparameter_fit_.optimization
    return {"seconds": seconds, "evaluations": search.n_evaluations, "inner": None, "inner_max": None,
            "objective": search.value, "converged": search.converged,
            "kernel": f"s={model.kernel_.variance:.3g}, l={model.kernel_.lengthscale:.3g}"}  # fmt: skip


def sklearn_row(X, y):
    """scikit-learn's Laplace GaussianProcessClassifier, one-vs-rest, ML-II from variance 1, lengthscale 1."""
    from scipy.optimize import minimize
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    calls = [0]

    def counted_lbfgsb(objective, theta0, bounds):
        # scikit-learn's own default ("fmin_l_bfgs_b" is scipy's L-BFGS-B with the gradient), with its calls counted
        def counted(theta):
            calls[0] += 1
            return objective(theta, eval_gradient=True)

        result = minimize(counted, theta0, method="L-BFGS-B", jac=True, bounds=bounds)
        return result.x, result.fun

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own convergence chatter
        model = GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), optimizer=counted_lbfgsb).fit(X, y)
    seconds = time.perf_counter() - start
    evidences = [est.log_marginal_likelihood_value_ for est in model.base_estimator_.estimators_]
    return {"seconds": seconds, "evaluations": calls[0], "inner": None, "inner_max": None,
            "objective": float(np.sum(evidences)), "converged": None, "kernel": "one per class"}  # fmt: skip


def main(sizes=(300, 1000)):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print("\nLearning a 4-class kernel (unbalanced_multiclass, isotropic SE from variance 1, lengthscale 1):")
    header = (f"{'n':>5} {'method':34} {'seconds':>8} {'/chol':>7} {'/softmax':>8} {'evals':>6} "
              f"{'inner VB it':>12} {'max/eval':>8} {'objective':>10} {'converged':>9}  kernel")  # fmt: skip
    print(header)
    results = {}
    for n in sizes:
        X, y = unbalanced_multiclass(n)
        chol = cholesky_seconds(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = {
                "VBProbitGPC() (bound, 1 start)": vb_row(X, y),
                "LaplaceGPC() (softmax MAP, 4 starts)": laplace_row(X, y, 3),
                "LaplaceGPC(n_restarts=0) (1 start)": laplace_row(X, y, 0),
            }
        rows["scikit-learn one-vs-rest (1 start)"] = sklearn_row(X, y)
        softmax = rows["LaplaceGPC() (softmax MAP, 4 starts)"]["seconds"]
        for name, row in rows.items():
            inner = "" if row["inner"] is None else f"{row['inner']}"
            inner_max = "" if row["inner_max"] is None else f"{row['inner_max']}"
            converged = "" if row["converged"] is None else str(bool(row["converged"]))
            print(f"{n:>5} {name:34} {row['seconds']:>8.2f} {row['seconds'] / chol:>7.0f} "
                  f"{row['seconds'] / softmax:>8.2f} {row['evaluations']:>6} {inner:>12} {inner_max:>8} "
                  f"{row['objective']:>10.2f} {converged:>9}  {row['kernel']}", flush=True)  # fmt: skip
        vb = rows["VBProbitGPC() (bound, 1 start)"]
        per_start = rows["LaplaceGPC(n_restarts=0) (1 start)"]["seconds"]
        print(
            f"{n:>5} VB / softmax default {vb['seconds'] / softmax:.2f}; VB / softmax per start "
            f"{vb['seconds'] / per_start:.2f}; VB / scikit-learn "
            f"{vb['seconds'] / rows['scikit-learn one-vs-rest (1 start)']['seconds']:.2f}; "
            f"VB learning = {vb['seconds'] / chol:.0f} Choleskys of K (one start)"
        )
        results[n] = rows
    return results


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (300, 1000))
