"""Multi-class learning with the defaults: LaplaceGPC() and VBProbitGPC() against scikit-learn's one-vs-rest.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/multiclass_defaults.py [--sizes 300 1000] [--classes 3 9]

What a user runs without choosing anything (issue 29, item 6): ``LaplaceGPC()`` (the softmax Laplace, W&B's
hyperprior, its default restarts), ``VBProbitGPC()`` (G&R's VB probit, kernel learnt by the bound), and
scikit-learn's ``GaussianProcessClassifier(ConstantKernel(1) * RBF(1))`` (one binary Laplace classifier per class,
one-vs-rest) with ``n_restarts_optimizer`` 0 and 2. Data: ``make_classification`` with C classes, 10 inputs of which
6 informative, standardised on the training half; n training and n test points.

Columns: CPU seconds of ``fit`` (``time.process_time``, one BLAS thread: the work done; single runs, so read the
ratios), the test error, and the ratios the issue sets targets for: LaplaceGPC() ≤ 2 × scikit-learn with 2 restarts,
VBProbitGPC() ≤ 1.5 × LaplaceGPC(). scikit-learn without restarts can stop a sub-fit at a constant lengthscale (its
test error then says so): both of its rows are printed.
"""

from __future__ import annotations

import argparse
import time
import warnings

from common import blas_threading

from gpc_ref import LaplaceGPC
from gpc_ref import VBProbitGPC
from gpc_ref.datasets import Standardizer


def problem(n, n_classes, seed=0):
    """n training and n test points of a C-class set, standardised on the training half."""
    from sklearn.datasets import make_classification

    X, codes = make_classification(n_samples=2 * n, n_features=10, n_informative=6, n_redundant=0,
                                   n_classes=n_classes, n_clusters_per_class=1, class_sep=1.5,
                                   random_state=seed)  # fmt: skip
    scaler = Standardizer().fit(X[:n])
    return scaler.transform(X[:n]), codes[:n], scaler.transform(X[n:]), codes[n:]


def timed(make, X, codes, X_test, codes_test):
    """(CPU seconds of fit, test error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings do not change the timing; the test error shows a bad fit
        start = time.process_time()
        model = make().fit(X, codes)
        seconds = time.process_time() - start
    return seconds, float((model.predict(X_test) != codes_test).mean())


def sklearn_ovr(n_restarts):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    return lambda: GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0), n_restarts_optimizer=n_restarts,
                                             random_state=0)  # fmt: skip


def main(sizes=(300, 1000), classes=(3, 9)):
    print(blas_threading())
    print("Default multi-class fits; CPU seconds of fit (one run each) and test error on n held-out points")
    print(f"{'n':>5} {'C':>2} | {'Laplace':>8} {'err':>5} | {'VB':>8} {'err':>5} | {'skl R=0':>8} {'err':>5} | "
          f"{'skl R=2':>8} {'err':>5} | {'Lap/skl2':>8} {'VB/Lap':>6}")  # fmt: skip
    rows = []
    for n in sizes:
        for n_classes in classes:
            data = problem(n, n_classes)
            laplace = timed(LaplaceGPC, *data)
            vb = timed(VBProbitGPC, *data)
            skl0 = timed(sklearn_ovr(0), *data)
            skl2 = timed(sklearn_ovr(2), *data)
            rows.append({"n": n, "C": n_classes, "laplace": laplace, "vb": vb, "sklearn0": skl0, "sklearn2": skl2})
            print(f"{n:>5} {n_classes:>2} | {laplace[0]:>8.2f} {laplace[1]:>5.3f} | {vb[0]:>8.2f} {vb[1]:>5.3f} | "
                  f"{skl0[0]:>8.2f} {skl0[1]:>5.3f} | {skl2[0]:>8.2f} {skl2[1]:>5.3f} | "
                  f"{laplace[0] / skl2[0]:>8.2f} {vb[0] / laplace[0]:>6.2f}", flush=True)  # fmt: skip
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 9])
    arguments = parser.parse_args()
    main(tuple(arguments.sizes), tuple(arguments.classes))
