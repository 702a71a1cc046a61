"""Fit time of the multi-class IVM (G&R 2006 §5) against N, S and K, with log-log slopes.

Run: .venv/bin/python benchmarks/ivm.py [--full]   (OMP_NUM_THREADS=1 for one core, as `make benchmarks` sets)

Data: K Gaussian blobs in 5 dimensions (class centres N(0, 2² I), unit spread), SE kernel with
lengthscale 1.5. The scans report CPU (process) time, which other jobs on a shared machine
disturb less than wall time; the headline fits report wall time. Three tables:

1. the ADF updates alone (G&R eqs 5.1–5.4, random selection, one kernel per class, the paper's
   general case): time against N, S and K; theory O(K N S²), so slopes ≈ 1, 2, 1 once the
   O(K N S) bookkeeping is small beside the S² term;
2. the predictive rule (G&R eq 5.5, one shared kernel, candidates screened by the product of
   pairwise probabilities and a shortlist of 50 scored by 48-node quadrature): the screen costs
   O(N K) per step, O(N K S) in all, on top of the updates;
3. the headline fit N = 10,000, K = 10, S = 200 for every rule (goal: under 5 s on 2 cores),
   beside one Cholesky factorisation of a 4000 × 4000 kernel matrix (the dense VB of §4 needs
   factorisations of N × N matrices: O(N³)).

``--full`` adds the predictive rule with every candidate scored by the 48-node rule at the
headline size (slow: (K − 1) × 48 normal CDFs per candidate per step).

``--baselines`` prints, instead of the timings, the test error and log loss of ``SparseIVM()`` with its
defaults beside the constant classifier that predicts the training class frequencies, G&R's settings
(unit SE kernel, S = 50, the predictive rule) and the other two rules with the default kernel and size,
on the multi-class sets of the book (iris, wine, glass, penguins, digits) and on the unbalanced synthetic
set of ``common.unbalanced_multiclass`` at n = 300, 1000 and 3000 (issue 19, item 12): three stratified
half/half splits per set, means over them. ``--defaults-grid`` reruns the grid the defaults were chosen
from (kernels × sizes × rules on the same sets at n ≤ 1000, four splits; slow, about an hour on one core).
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings

import numpy as np
from common import FIXED_KERNEL
from common import blas_threading
from common import cholesky_seconds
from common import family_table
from common import median_seconds
from common import unbalanced_multiclass

from gpc_ref.ivm import ivm_fit
from gpc_ref.kernels import SEKernel


def blobs(n, n_classes, n_features=5, seed=0):
    """n points from K Gaussian blobs: class centres N(0, 4 I), unit spread."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(n_classes, n_features))
    t = rng.integers(0, n_classes, n)
    return centres[t] + rng.normal(size=(n, n_features)), t


def cpu_seconds(func, repeats=3):
    """Median CPU (process) seconds of ``func()``: less sensitive than wall time to other jobs on the machine."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return float(np.median(times))


def fit_seconds(n, s, k, selection, per_class=False, screen=False, repeats=1, clock="wall"):
    X, t = blobs(n, k)
    kernel = SEKernel(lengthscale=1.5)
    kernels = [kernel] * k if per_class else kernel

    def fit():
        return ivm_fit(kernels, X, t, n_active=s, selection=selection, rng=0, n_classes=k, screen=screen)

    return median_seconds(fit, repeats) if clock == "wall" else cpu_seconds(fit, repeats)


def slope(x, seconds):
    """Least-squares slope of log(seconds) against log(x)."""
    return float(np.polyfit(np.log(x), np.log(seconds), 1)[0])


def scan(title, configurations, **options):
    """Time the fit along each axis; ``configurations[name] = (base (N, S, K), values of name)``."""
    print(f"\n{title}")
    print(f"{'N':>6} {'S':>5} {'K':>4} {'CPU s':>9}")
    results = {}
    for name, (base, values) in configurations.items():
        results[name] = []
        for value in values:
            n, s, k = dict(zip("NSK", base), **{name: value}).values()
            seconds = fit_seconds(n, s, k, clock="cpu", **options)
            results[name].append((value, seconds))
            print(f"{n:>6} {s:>5} {k:>4} {seconds:>9.3f}")
    for name in configurations:
        values, seconds = zip(*results[name])
        print(
            f"slope in {name}: {slope(values, seconds):.2f} over the whole range, "
            f"{slope(values[-2:], seconds[-2:]):.2f} between the two largest"
        )


def main(full=False):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    configurations = {
        "N": ((4000, 100, 4), (4000, 8000, 16000, 32000)),
        "S": ((2000, 100, 4), (200, 400, 800, 1600)),
        "K": ((4000, 100, 4), (4, 8, 16, 32)),
    }
    scan(
        "1. ADF updates (random selection, one kernel per class): expect slopes ~1 (N), ~2 (S), ~1 (K)",
        configurations,
        selection="random",
        per_class=True,
    )
    scan(
        "2. predictive rule (shared kernel, pairwise screen): scoring O(N K S) beside the updates",
        configurations,
        selection="predictive",
        screen=True,
    )

    print("\n3. N = 10,000, K = 10, S = 200")
    unit = cholesky_seconds(4000, repeats=3)
    print(f"one Cholesky of a 4000 x 4000 kernel matrix: {unit:.3f} s (x15.6 for N = 10,000 by N^3)")
    rows = [
        ("random, shared kernel", dict(selection="random")),
        ("entropy, shared kernel", dict(selection="entropy")),
        ("predictive (pairwise screen), shared kernel", dict(selection="predictive", screen=True)),
        ("random, one kernel per class", dict(selection="random", per_class=True)),
    ]
    if full:
        rows.append(("predictive (all candidates, 48 nodes), shared kernel", dict(selection="predictive")))
    for label, options in rows:
        seconds = fit_seconds(10_000, 200, 10, **options)
        print(f"{label:<55} {seconds:>8.2f} s  ({seconds / unit:.1f} Cholesky(4000))")
    families()


def families():
    """The sparse IVM (S = 100, kernel learnt by G&R's importance sampling on a first pass's active set)."""
    from gpc_ref import SparseIVM

    def fixed(X, y):
        return SparseIVM(kernel=SEKernel(*FIXED_KERNEL), n_active=100).fit(X, y)

    def learn(X, y):
        model = SparseIVM(kernel=SEKernel(), optimize=True, n_active=100).fit(X, y)
        return model.log_marginal_likelihood_, True  # a fixed number of importance-sampling iterations

    family_table("Sparse IVM, S = 100 (SparseIVM; objective: sum of log predictive probabilities)", fixed, learn,
                 n_classes=3)  # fmt: skip


# --------------------------------------------------------------------------- the defaults against a constant classifier
BOOK_SETS = ("iris", "wine", "glass", "penguins", "digits")


def split_set(name, seed):
    """Standardised (X_train, t_train, X_test, t_test): half of every class for training (stratified_split).

    ``unbalanced<n>`` is ``common.unbalanced_multiclass(2 n, seed)``: n training and n test points.
    """
    from gpc_ref import datasets

    if name.startswith("unbalanced"):
        X, codes = unbalanced_multiclass(2 * int(name[len("unbalanced") :]), seed=seed)
    else:
        data = getattr(datasets, f"load_{name}")()
        X, codes = data.X, np.searchsorted(data.classes, data.y)
    train, test = datasets.stratified_split(codes, 0.5, seed)
    scaler = datasets.Standardizer().fit(X[train])
    return scaler.transform(X[train]), codes[train], scaler.transform(X[test]), codes[test]


def test_scores(P, t_test):
    """(error, log loss) of predicted probabilities P on the test labels."""
    return float(np.mean(P.argmax(axis=1) != t_test)), float(-np.mean(np.log(P[np.arange(len(t_test)), t_test])))


def scores_of(make_model, X, t, X_test, t_test):
    """(error, log loss, warned) of the model make_model() fitted to (X, t)."""
    from gpc_ref.ivm import BelowClassFrequenciesWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BelowClassFrequenciesWarning)
        model = make_model().fit(X, t)
    warned = any(issubclass(w.category, BelowClassFrequenciesWarning) for w in caught)
    return (*test_scores(model.predict_proba(X_test), t_test), warned)


def baselines(seeds=(0, 1, 2)):
    """Test error and log loss of SparseIVM's defaults, G&R's settings, the other rules and the class frequencies."""
    from gpc_ref import SparseIVM

    configurations = {
        "SparseIVM() defaults": lambda: SparseIVM(),
        "G&R: unit SE, S=50, predictive": lambda: SparseIVM(SEKernel(), n_active=50, selection="predictive"),
        "default kernel, S=200, predictive": lambda: SparseIVM(selection="predictive"),
        "default kernel, S=200, entropy": lambda: SparseIVM(selection="entropy"),
    }
    print("SparseIVM against the class-frequency predictor: test error / test log loss, mean over splits "
          f"{list(seeds)}; (w) = BelowClassFrequenciesWarning in at least one split")  # fmt: skip
    header = f"{'set':>14} {'n':>5} {'C':>3} {'class frequencies':>19}" + "".join(f" {c:>34}" for c in configurations)
    print(header)
    for name in (*BOOK_SETS, "unbalanced300", "unbalanced1000", "unbalanced3000"):
        rows = {label: [] for label in ("class frequencies", *configurations)}
        for seed in seeds:
            X, t, X_test, t_test = split_set(name, seed)
            shares = np.bincount(t, minlength=t.max() + 1) / len(t)
            rows["class frequencies"].append((*test_scores(np.tile(shares, (len(t_test), 1)), t_test), False))
            for label, make_model in configurations.items():
                rows[label].append(scores_of(make_model, X, t, X_test, t_test))
        line = f"{name:>14} {len(t):>5} {t.max() + 1:>3}"
        for label, values in rows.items():
            error, log_loss = np.mean([v[0] for v in values]), np.mean([v[1] for v in values])
            flag = " (w)" if any(v[2] for v in values) else "    "
            width = 19 if label == "class frequencies" else 34
            line += f" {f'{error:.3f} / {log_loss:.3f}{flag}':>{width}}"
        print(line, flush=True)


def defaults_grid(seeds=(0, 1, 2, 3)):
    """The grid the defaults were chosen from: lengthscale × signal variance × S × rule, on seven sets."""
    from gpc_ref import SparseIVM
    from gpc_ref.ivm import median_distance_kernel

    sets = (*BOOK_SETS, "unbalanced300", "unbalanced1000")
    grid = [(sel, S, ell, var) for sel in ("predictive", "entropy", "random") for S in (50, 100, 200)
            for ell in ("1", "median") for var in (1.0, 10.0, 100.0)]  # fmt: skip
    grid += [("random", 200, ell, var) for ell in ("median/2", "2 median") for var in (3.0, 10.0, 30.0)]
    grid += [("random", 200, "median", var) for var in (3.0, 30.0)]
    relative = {key: {} for key in grid}  # key → set → (error, log loss) relative to the class frequencies
    for name in sets:
        per_seed = {key: [] for key in grid}
        for seed in seeds:
            X, t, X_test, t_test = split_set(name, seed)
            shares = np.bincount(t, minlength=t.max() + 1) / len(t)
            constant = test_scores(np.tile(shares, (len(t_test), 1)), t_test)
            median = median_distance_kernel(X).lengthscale
            scale = {"1": 1.0, "median": median, "median/2": median / 2, "2 median": 2 * median}
            for key in grid:
                sel, S, ell, var = key
                kernel = SEKernel(variance=var, lengthscale=scale[ell])
                error, log_loss, _ = scores_of(
                    lambda: SparseIVM(kernel, n_active=S, selection=sel, rng=seed), X, t, X_test, t_test
                )
                per_seed[key].append((error / constant[0], log_loss / constant[1]))
        for key in grid:
            relative[key][name] = np.mean(per_seed[key], axis=0)
        print(f"{name} done", flush=True)
    print("error and log loss relative to the class-frequency predictor (1 = no better), over the sets "
          f"{list(sets)}, splits {list(seeds)}")  # fmt: skip
    print(f"{'rule':>11} {'S':>4} {'lengthscale':>12} {'variance':>9} {'mean error':>11} {'worst error':>12} "
          f"{'mean log loss':>14} {'worst log loss':>15}")  # fmt: skip
    for key in sorted(grid, key=lambda k: np.mean([v[1] for v in relative[k].values()])):
        values = np.array(list(relative[key].values()))
        sel, S, ell, var = key
        print(f"{sel:>11} {S:>4} {ell:>12} {var:>9g} {values[:, 0].mean():>11.3f} {values[:, 0].max():>12.3f} "
              f"{values[:, 1].mean():>14.3f} {values[:, 1].max():>15.3f}")  # fmt: skip


if __name__ == "__main__":
    if "--baselines" in sys.argv[1:]:
        print(blas_threading())
        baselines()
    elif "--defaults-grid" in sys.argv[1:]:
        print(blas_threading())
        defaults_grid()
    else:
        main(full="--full" in sys.argv[1:])
