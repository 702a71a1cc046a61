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
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np
from common import FIXED_KERNEL
from common import blas_threading
from common import cholesky_seconds
from common import family_table
from common import median_seconds

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


if __name__ == "__main__":
    main(full="--full" in sys.argv[1:])
