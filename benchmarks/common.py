"""Timing helpers shared by the benchmark scripts.

Every method benchmark reports its time in units of one Cholesky
factorisation of an n×n kernel matrix on the same machine, so the tables
compare algorithms rather than machines. Every script prints, as its first
line, the BLAS threading it ran with (:func:`blas_threading`), since a
factorisation on two threads is not the unit of one on one thread.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import scipy.linalg  # noqa: F401  (loads scipy's BLAS too, so that blas_threading reports it)

from gpc_ref.kernels import SEKernel
from gpc_ref.linalg import cholesky
from gpc_ref.threads import describe_blas_threading


def blas_threading():
    """One line naming the BLAS libraries loaded and their thread counts (``gpc_ref.threads``)."""
    return describe_blas_threading()


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


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "book", "results")


def save_results(name, payload, seconds=None):
    """Write ``book/results/<name>.json`` with its provenance (``gpc_ref.reproduction.save_results``)."""
    from gpc_ref.reproduction import save_results as save

    return save(name, payload, directory=RESULTS, seconds=seconds)


def biopsy(n, seed=0):
    """``n`` biopsies drawn without replacement (seeded), inputs standardised; labels ±1 (+1 malignant)."""
    from gpc_ref.datasets import Standardizer
    from gpc_ref.datasets import load_biopsy

    data = load_biopsy()
    rows = np.random.default_rng(seed).permutation(len(data.y))[:n]
    return Standardizer().fit_transform(data.X[rows]), np.where(data.y[rows] == "malignant", 1.0, -1.0)


def penguins(n, seed=0):
    """``n`` penguins drawn without replacement (seeded), inputs standardised; class codes 0, 1, 2."""
    from gpc_ref.datasets import Standardizer
    from gpc_ref.datasets import load_penguins

    data = load_penguins()
    rows = np.random.default_rng(seed).permutation(len(data.y))[:n]
    return Standardizer().fit_transform(data.X[rows]), np.searchsorted(data.classes, data.y[rows])


def family_data(n, n_classes=2, label_noise=0.0):
    """The comparison data: K&G's 6-input ARD set (binary) or G&R's 3-class toy with 4 inputs, n points.

    G&R's toy classes are separable (rings), so a multi-class learner without a prior on the signal
    variance has no finite optimum there; ``label_noise`` moves that fraction of the 3-class labels to
    another class, drawn with ``default_rng(1)``, which makes the problem well posed.
    """
    from gpc_ref.datasets import make_ard_gaussian
    from gpc_ref.datasets import make_three_class_toy
    from gpc_ref.datasets import move_labels

    if n_classes == 2:
        data = make_ard_gaussian(0, n_train=n, n_test=1)
        return data.X_train, data.y_train.astype(float)
    X, y = make_three_class_toy(0, n, n_features=4)
    return X, (move_labels(y, label_noise, 1, n_classes=3) if label_noise else y)


#: the fixed hyperparameters of the comparison (variance, lengthscale) and the learners' start (1, 1)
FIXED_KERNEL = (2.0, 2.0)


def sklearn_fit(X, y, learn):
    """scikit-learn's Laplace GaussianProcessClassifier (one-vs-rest for C > 2), fixed or ML-II-learnt kernel."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    if learn:
        kernel, optimizer = ConstantKernel(1.0) * RBF(1.0), "fmin_l_bfgs_b"
    else:
        kernel, optimizer = ConstantKernel(FIXED_KERNEL[0], "fixed") * RBF(FIXED_KERNEL[1], "fixed"), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own convergence chatter
        return GaussianProcessClassifier(kernel, optimizer=optimizer).fit(X, y)


def family_table(title, fixed_fit, learn_fit, *, sizes=(250, 500, 1000), n_classes=2, repeats=3, label_noise=0.0):
    """Print gpc_ref against scikit-learn's Laplace and one Cholesky, at fixed hyperparameters and learning.

    ``fixed_fit(X, y)`` fits with ``SEKernel(*FIXED_KERNEL)`` and returns anything; ``learn_fit(X, y)``
    learns an isotropic SE kernel from variance 1, lengthscale 1 and returns ``(value, converged)``: the
    learnt objective (log evidence, bound) and whether the learner said it converged. Fixed-hyperparameter
    times are medians of ``repeats`` runs, learning times single runs; ``label_noise`` as in
    :func:`family_data`. Returns the rows as dicts.
    """
    print(
        f"\n{title}: gpc_ref against scikit-learn's Laplace GaussianProcessClassifier"
        + (" (one-vs-rest)" if n_classes > 2 else "")
        + " and one Cholesky of the n×n kernel matrix"
    )
    print(f"{'':14}| {'fixed hyperparameters':^36} | {'learning (isotropic SE from variance 1, lengthscale 1)':^66}")
    print(
        f"{'n':>5} {'chol s':>7} | {'ours s':>8} {'/chol':>7} {'skl s':>8} {'ours/skl':>8} | "
        f"{'ours s':>8} {'/chol':>8} {'skl s':>8} {'ours/skl':>8} {'converged':>9} {'objective':>10} {'skl logZ':>9}"
    )
    rows = []
    for n in sizes:
        X, y = family_data(n, n_classes, label_noise)
        chol = cholesky_seconds(n, repeats)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours_fixed = median_seconds(lambda: fixed_fit(X, y), repeats)
            start = time.perf_counter()
            value, converged = learn_fit(X, y)
            ours_learn = time.perf_counter() - start
        skl_fixed = median_seconds(lambda: sklearn_fit(X, y, learn=False), repeats)
        start = time.perf_counter()
        skl = sklearn_fit(X, y, learn=True)
        skl_learn = time.perf_counter() - start
        row = {"n": n, "cholesky": chol, "fixed": ours_fixed, "sklearn_fixed": skl_fixed, "learn": ours_learn,
               "sklearn_learn": skl_learn, "converged": bool(converged), "objective": float(value),
               "sklearn_log_evidence": float(skl.log_marginal_likelihood_value_)}  # fmt: skip
        rows.append(row)
        print(
            f"{n:>5} {chol:>7.4f} | {ours_fixed:>8.3f} {ours_fixed / chol:>7.1f} {skl_fixed:>8.3f} "
            f"{ours_fixed / skl_fixed:>8.2f} | {ours_learn:>8.2f} {ours_learn / chol:>8.0f} {skl_learn:>8.2f} "
            f"{ours_learn / skl_learn:>8.2f} {str(bool(converged)):>9} {value:>10.2f} "
            f"{row['sklearn_log_evidence']:>9.2f}",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    print(blas_threading())


def unbalanced_multiclass(n, seed=0):
    """``n`` points of a 4-class synthetic set with unbalanced classes (shares .31/.06/.12/.51), 6 inputs
    standardised; class codes 0..3. The reviewers' cross-check used such a set (issue 19, items 12 and 14)."""
    from sklearn.datasets import make_classification

    from gpc_ref.datasets import Standardizer

    X, codes = make_classification(
        n_samples=n,
        n_features=6,
        n_informative=4,
        n_redundant=0,
        n_classes=4,
        n_clusters_per_class=1,
        weights=[0.31, 0.06, 0.12, 0.51],
        class_sep=1.0,
        random_state=seed,
    )
    return Standardizer().fit_transform(X), codes
