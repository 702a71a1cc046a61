"""Binary Laplace at fixed hyperparameters: gpc_ref against scikit-learn.

Run: .venv/bin/python benchmarks/laplace.py   (OMP_NUM_THREADS=1 for one core, as `make benchmarks` sets)

For n = 500, 1000, 2000 random 5-D inputs with noisy labels and a fixed SE kernel
(variance 4, lengthscale 2, no jitter: the same model in both libraries) it prints

- Newton iterations: ours (W&B's rule on W plus a Ψ check, tol 1e-9) and scikit-learn's
  (stop when the log evidence rises by less than 1e-10);
- |Δ log evidence| between the two answers (both converge to the same mode);
- seconds for one mode search, ours (``laplace_mode`` on ``kernel.K(X)``) and scikit-learn's
  (the private ``_posterior_mode`` on its own kernel matrix), and their ratio;
- seconds for scikit-learn's public ``fit``, which runs the mode search twice when
  ``optimizer=None`` (once for ``log_marginal_likelihood_value_``, once for the predictive
  quantities), against ours, which gets the evidence from the same search;
- the seconds of one Cholesky factorisation of an n×n kernel matrix (benchmarks/common.py) and
  the time of one of our Newton iterations in that unit. The cost model of the chapter is one
  factorisation of B per iteration plus O(n²) work, and the search factorises n_iter + 1 times
  (the last at the mode, for the evidence), so the unit ratio should be a little above 1.

Then the learning table (issue 19): binary Laplace ML-II, ``LaplaceGPC(kernel=SEKernel(), prior=None,
n_restarts=0)``, against scikit-learn's ``GaussianProcessClassifier(ConstantKernel(1) * RBF(1))``, the
same model (isotropic SE kernel, logistic likelihood, no hyperprior) from the same start (variance 1,
lengthscale 1), each with one L-BFGS-B run, on the same ``make_problem(n)`` data for n = 300, 1000,
2000: CPU seconds of the whole fit (``time.process_time``, one BLAS thread: the work done, which the
load of other processes inflates far less than wall-clock time), evidence evaluations, CPU seconds per
evaluation, the ratios, and the log evidence each reached. The two fits of a row run one after the other.
Then the family tables (``common.family_table``).

On a shared, loaded machine the timings fluctuate; rerun before drawing conclusions.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
import warnings

import numpy as np
from common import FIXED_KERNEL
from common import blas_threading
from common import cholesky_seconds
from common import family_table
from common import median_seconds

from gpc_ref.kernels import SEKernel
from gpc_ref.laplace import laplace_mode


def make_problem(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.where(np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def main(sizes=(500, 1000, 2000)):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    header = (
        f"{'n':>5} {'iter ours':>9} {'iter skl':>8} {'|dlogZ|':>9} {'mode ours s':>11} {'mode skl s':>10} "
        f"{'ratio':>6} {'fit ours s':>10} {'fit skl s':>9} {'ratio':>6} {'chol s':>7} {'iter/chol':>9}"
    )
    print(header)
    for n in sizes:
        print(table_row(n, GaussianProcessClassifier, ConstantKernel(4.0, "fixed") * RBF(2.0, "fixed")), flush=True)
    learning_table()
    families()


@contextlib.contextmanager
def count_sklearn_evaluations():
    """Count the evidence evaluations of scikit-learn's binary Laplace classifiers (one-vs-rest ones too).

    Yields a list that gets one entry per call of ``log_marginal_likelihood`` with a ``theta``, which is
    how its optimiser evaluates (the final value is read without one).
    """
    from sklearn.gaussian_process import _gpc

    binary = _gpc._BinaryGaussianProcessClassifierLaplace
    original, calls = binary.log_marginal_likelihood, []

    def counting(self, theta=None, eval_gradient=False, clone_kernel=True):
        if theta is not None:
            calls.append(1)
        return original(self, theta, eval_gradient, clone_kernel)

    binary.log_marginal_likelihood = counting
    try:
        yield calls
    finally:
        binary.log_marginal_likelihood = original


def learning_table(sizes=(300, 1000, 2000)):
    """Binary ML-II, ours against scikit-learn's: evaluations, seconds per evaluation and in total."""
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel

    from gpc_ref import LaplaceGPC

    print(
        "\nBinary Laplace ML-II (LaplaceGPC, prior=None, one start) against scikit-learn's (one start), make_problem(n);"
    )
    print("times in CPU seconds of this process (time.process_time), each fit run once")
    print(
        f"{'n':>5} | {'ours s':>8} {'evals':>5} {'s/eval':>7} {'log q':>9} | {'skl s':>8} {'evals':>5} {'s/eval':>7} "
        f"{'log q':>9} | {'total ratio':>11} {'per-eval ratio':>14}"
    )
    for n in sizes:
        X, y = make_problem(n)
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an edge-of-box warning would not change the timing
            ours = LaplaceGPC(kernel=SEKernel(), prior=None, n_restarts=0).fit(X, y)
        t_ours = time.process_time() - start
        e_ours = ours.hyperparameter_fit_.optimization.n_evaluations
        with count_sklearn_evaluations() as calls, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn's own convergence chatter
            start = time.process_time()
            skl = GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0)).fit(X, y)
            t_skl = time.process_time() - start
        e_skl = len(calls)
        print(
            f"{n:>5} | {t_ours:>8.2f} {e_ours:>5} {t_ours / e_ours:>7.3f} {ours.log_marginal_likelihood_:>9.2f} | "
            f"{t_skl:>8.2f} {e_skl:>5} {t_skl / e_skl:>7.3f} {skl.log_marginal_likelihood_value_:>9.2f} | "
            f"{t_ours / t_skl:>11.2f} {(t_ours / e_ours) / (t_skl / e_skl):>14.2f}",
            flush=True,
        )


def table_row(n, GaussianProcessClassifier, sk_kernel):
    """One row of the table: both libraries' mode search and fit on the n-point problem, timed."""
    repeats = 5 if n <= 1000 else 3
    X, y = make_problem(n)
    kernel = SEKernel(variance=4.0, lengthscale=2.0, jitter=0.0)
    sk = GaussianProcessClassifier(sk_kernel, optimizer=None).fit(X, y)
    base = sk.base_estimator_
    K = kernel.K(X)
    K_sk = base.kernel_(base.X_train_)
    mode = laplace_mode(K, y)
    # scikit-learn's iteration count: rerun its loop, counting the Cholesky calls
    n_sk = count_sklearn_iterations(base, K_sk)
    difference = abs(mode.log_evidence - sk.log_marginal_likelihood_value_)
    t_mode = median_seconds(lambda: laplace_mode(K, y), repeats)
    t_mode_sk = median_seconds(lambda: base._posterior_mode(K_sk), repeats)
    t_fit = median_seconds(lambda: laplace_mode(kernel.K(X), y), repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_fit_sk = median_seconds(lambda: GaussianProcessClassifier(sk_kernel, optimizer=None).fit(X, y), repeats)
    t_chol = cholesky_seconds(n, repeats)
    return (
        f"{n:>5} {mode.n_iter:>9} {n_sk:>8} {difference:>9.1e} {t_mode:>11.3f} {t_mode_sk:>10.3f} "
        f"{t_mode / t_mode_sk:>6.2f} {t_fit:>10.3f} {t_fit_sk:>9.3f} {t_fit / t_fit_sk:>6.2f} {t_chol:>7.3f} "
        f"{t_mode / mode.n_iter / t_chol:>9.2f}"
    )


def count_sklearn_iterations(base, K):
    """Newton iterations of scikit-learn's ``_posterior_mode`` (one Cholesky per iteration)."""
    import sklearn.gaussian_process._gpc as gpc

    original, calls = gpc.cholesky, []

    def counting_cholesky(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    gpc.cholesky = counting_cholesky
    try:
        base._posterior_mode(K)
    finally:
        gpc.cholesky = original
    return len(calls)


def families():
    """Binary and softmax Laplace (ML-II, no hyperprior) beside scikit-learn's Laplace.

    The 3-class comparison data (G&R's toy, whose classes are rings) are separable, and there the
    softmax Laplace evidence keeps rising with the signal variance, with or without W&B's hyperprior:
    there is no finite optimum (measured at n = 250, lengthscale 7: log q = −205, −159, −140 at
    variance 1e4, 1e5, 1e6), and beyond a variance of about 1e5 the evidence is numerically noisy
    (central differences with steps 1e-3 and 1e-4 in log variance disagree), so the search ends,
    warning, where the Newton iteration can no longer find the mode. The softmax row therefore learns
    on the same data with 10 % of the labels moved to another class (``family_data(label_noise=0.1)``).
    """
    from gpc_ref import LaplaceGPC

    def fixed(X, y):
        return LaplaceGPC(kernel=SEKernel(*FIXED_KERNEL), optimize=False).fit(X, y)

    def learn(X, y):
        model = LaplaceGPC(kernel=SEKernel(), prior=None, n_restarts=0).fit(X, y)
        return model.log_marginal_likelihood_, model.hyperparameter_fit_.converged

    family_table("Binary Laplace (LaplaceGPC, ML-II)", fixed, learn)
    family_table("Softmax Laplace, one shared kernel (LaplaceGPC, ML-II; 10 % label noise)", fixed, learn,
                 n_classes=3, label_noise=0.1)  # fmt: skip


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--learning"]:  # only the learning table
        print(blas_threading())
        learning_table()
    else:
        main()
