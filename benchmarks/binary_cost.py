"""Every binary method's cost in one unit: fits at fixed hyperparameters and learning runs, in Choleskys and seconds.

Run: .venv/bin/python benchmarks/binary_cost.py [n ...]   (default n = 100 300 1000)

The problem: G&M's one-dimensional toy generator, ``make_gm_toy_1d(n, n)`` (seed n, n points), inputs
standardised, labels ±1, an isotropic SE kernel with jitter 1e-6 (the binary comparison's,
book/comparison_binary.ipynb). For each n, in one run with one BLAS thread:

- the unit: the time of one Cholesky factorisation of this n×n kernel matrix
  (``gpc_ref.linalg.cholesky``) at the fixed hyperparameters (ln ℓ, ln σ_f) = (−1, 1);
- each method of the comparison fitted at those fixed hyperparameters (``optimize=False``; the mean of at
  least ``repeats`` fits lasting at least ``UNIT_SECONDS`` in all, after one warm-up; at n ≥ 1000 the first
  fit alone): Laplace (logistic, probit), EP (parallel, the default), the
  Jaakkola–Jordan lower bound (the upper bound's fit runs the lower bound's first, then its own),
  VB probit, KL (logistic and probit);
- each method's learning run (``optimize=True``) from σ_f = 1, ℓ = 1, timed once; at n ≥ 1000 only for
  ``LEARN_AT_LARGE_N`` (Laplace-probit, EP and the two KL learners, whose order against EP the book's guide
  states): the Jaakkola–Jordan learner is not timed there (the compute budget);

each in seconds and in units of the Cholesky, with the iteration counts each method reports (``n_iter_``:
Newton steps, EP sweeps, L-BFGS steps over ν, VB iterations, natural-gradient steps; for learning, the
outer optimiser's iterations) and the number of warnings; for EP the schedule that finished (``EPGPC``
runs parallel EP and, if it fails to converge, restarts with the sequential schedule: a fit that says
"sequential" paid for both). The estimators run with one BLAS thread inside (``gpc_ref.threads.BLAS_THREADS``); the Cholesky unit is timed under the same limit, as the mean over
repeated factorisations lasting at least ``UNIT_SECONDS`` in all. The machine's load average is printed
before and after each n: a Cholesky of a millisecond is rarely interrupted while a fit of seconds shares the
core with the other load, so a unit timed over milliseconds would overstate the methods' costs in units
(a trial at load 11 on 2 cores: 5× at n = 100); timed over seconds, the unit sees the same share of the
core as the fits.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings

import numpy as np
from common import blas_threading

from gpc_ref import EPGPC
from gpc_ref import KLGPC
from gpc_ref import LaplaceGPC
from gpc_ref import SEKernel
from gpc_ref import VariationalBoundsGPC
from gpc_ref import VBProbitGPC
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.linalg import cholesky
from gpc_ref.threads import limit_blas_threads

JITTER = 1e-6
FIXED = (-1.0, 1.0)  # (ln ℓ, ln σ_f) of the fixed-hyperparameter fits
LARGE_N = 1000
UNIT_SECONDS = 3.0  # the unit and the fits below LARGE_N: means over repeated calls lasting at least this long
LEARN_AT_LARGE_N = ("laplace_probit", "ep", "kl", "kl_probit")
#: name -> (label, factory(kernel, optimize))
METHODS = {
    "laplace": ("Laplace (logistic)", lambda k, opt: LaplaceGPC(k, optimize=opt, prior=None, n_restarts=0)),
    "laplace_probit": ("Laplace (probit)",
                       lambda k, opt: LaplaceGPC(k, optimize=opt, likelihood="probit", prior=None, n_restarts=0)),
    "ep": ("EP (probit)", lambda k, opt: EPGPC(k, optimize=opt)),
    "lower_bound": ("JJ lower bound", lambda k, opt: VariationalBoundsGPC(k, optimize=opt, bound="lower")),
    "upper_bound": ("JJ upper bound", lambda k, opt: VariationalBoundsGPC(k, optimize=opt, bound="upper")),
    "vb": ("VB probit", lambda k, opt: VBProbitGPC(k, optimize=opt)),
    "kl": ("KL (logistic)", lambda k, opt: KLGPC(k, optimize=opt)),
    "kl_probit": ("KL (probit)", lambda k, opt: KLGPC(k, optimize=opt, likelihood="probit")),
}  # fmt: skip


def toy(n):
    """``make_gm_toy_1d(n, n)``: n points, inputs standardised (one column), labels ±1."""
    x, t = make_gm_toy_1d(n, n)
    return Standardizer().fit_transform(x[:, None]), 2.0 * t - 1.0


def fit_quietly(model, X, y):
    """Fit ``model``; returns the number of warnings it raised (counted, not shown)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return len(caught)


def mean_seconds(func, repeats, min_total=0.0):
    """Mean wall-clock seconds of ``func()`` over at least ``repeats`` calls lasting at least ``min_total`` seconds
    in all (after one warm-up call).

    The mean, not the fastest call, and a unit measured over seconds rather than milliseconds: on a shared
    machine a call of a few milliseconds often runs uninterrupted while one of seconds shares the core, so only
    timings spread over comparable spans see the same share of the core.
    """
    func()
    count, begin = 0, time.perf_counter()
    while count < repeats or time.perf_counter() - begin < min_total:
        func()
        count += 1
    return (time.perf_counter() - begin) / count


def cost_rows(n, repeats=3, methods=tuple(METHODS), learn=True):
    """The unit and every method's fixed and learning cost at size n, as a list of dicts (one per method).

    ``repeats`` fits give the mean at fixed hyperparameters for n < ``LARGE_N``; at larger n the first fit
    is timed alone. Learning runs (``learn``) are timed once, at n ≥ ``LARGE_N`` only for ``LEARN_AT_LARGE_N``.
    """
    X, y = toy(n)
    kernel = SEKernel(variance=float(np.exp(2 * FIXED[1])), lengthscale=float(np.exp(FIXED[0])), jitter=JITTER)
    K = kernel.K(X)
    with limit_blas_threads(1):
        unit = mean_seconds(lambda: cholesky(K, name="K"), max(repeats, 5), min_total=UNIT_SECONDS)
    start = SEKernel(variance=1.0, lengthscale=1.0, jitter=JITTER)
    rows = []
    for name in methods:
        label, make = METHODS[name]
        model = make(kernel, False)
        begin = time.perf_counter()
        warned = fit_quietly(model, X, y)
        fixed = time.perf_counter() - begin
        if n < LARGE_N:
            fixed = mean_seconds(lambda model=model: fit_quietly(model, X, y), repeats, min_total=UNIT_SECONDS)
        row = {"n": n, "method": name, "label": label, "cholesky_seconds": unit, "fixed_seconds": fixed,
               "fixed_units": fixed / unit, "fixed_iterations": int(model.n_iter_), "fixed_warnings": warned,
               "fixed_schedule": getattr(model.posterior_, "schedule", "")}  # fmt: skip
        if learn and (n < LARGE_N or name in LEARN_AT_LARGE_N):
            model = make(start, True)
            begin = time.perf_counter()
            warned = fit_quietly(model, X, y)
            seconds = time.perf_counter() - begin
            theta = model.kernel_.theta
            row.update({"learn_seconds": seconds, "learn_units": seconds / unit,
                        "learn_iterations": int(model.n_iter_), "learn_warnings": warned,
                        "learnt": [float(theta[1]), float(theta[0] / 2)],
                        "learn_schedule": getattr(model.posterior_, "schedule", "")})  # fmt: skip
        rows.append(row)
    return rows


def format_rows(rows):
    """The printed table: one line per (n, method)."""
    lines = [
        f"{'n':>5} {'method':20s} {'Cholesky s':>10} | {'fixed s':>8} {'Choleskys':>9} {'iter':>5} {'warn':>4} | "
        f"{'learn s':>8} {'Choleskys':>10} {'iter':>5} {'warn':>4}  learnt (ln ℓ, ln σ_f)  EP schedule (fixed, learnt)"
    ]
    for r in rows:
        line = (f"{r['n']:>5} {r['label']:20s} {r['cholesky_seconds']:>10.5f} | {r['fixed_seconds']:>8.4f} "
                f"{r['fixed_units']:>9.1f} {r['fixed_iterations']:>5d} {r['fixed_warnings']:>4d} |")  # fmt: skip
        if "learn_seconds" in r:
            line += (f" {r['learn_seconds']:>8.2f} {r['learn_units']:>10.0f} {r['learn_iterations']:>5d} "
                     f"{r['learn_warnings']:>4d}  ({r['learnt'][0]:5.2f}, {r['learnt'][1]:5.2f})")  # fmt: skip
            if r["method"] == "ep":
                line += f"  {r['fixed_schedule']}, {r['learn_schedule']}"
        else:
            line += " learning not timed at this n (the compute budget)"
        lines.append(line)
    return lines


def main(sizes=(100, 300, 1000), repeats=3):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print(f"binary methods on make_gm_toy_1d(n, n), fixed (ln ℓ, ln σ_f) = {FIXED}, learning from σ_f = 1, ℓ = 1; "
          f"fixed: the mean of >= {repeats} fits over >= {UNIT_SECONDS:.0f} s (n < {LARGE_N}) or one; learning: one run; units: one Cholesky of the n×n kernel matrix")  # fmt: skip
    rows = []
    for n in sizes:
        load_before = os.getloadavg()[0]
        new = cost_rows(n, repeats)
        load_after = os.getloadavg()[0]
        for row in new:
            row["load_average"] = [round(load_before, 2), round(load_after, 2)]
        rows += new
        print("\n".join(format_rows(new)[0 if n == sizes[0] else 1 :]), flush=True)
        print(
            f"      one-minute load average on {os.cpu_count()} cores: {load_before:.1f} before, {load_after:.1f} after"
        )
    return rows


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (100, 300, 1000))
