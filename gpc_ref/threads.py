"""Limiting BLAS threads where gpc_ref's small-matrix loops run.

OpenBLAS (numpy's and scipy's default BLAS on Linux) uses one thread per core. On the matrices of
this book (a few hundred rows) and the many small products of the multi-class methods, the threads
cost more in synchronisation than they save. ``benchmarks/threads.py`` measured on 2 cores: the
softmax Laplace mode on 200 points 8× slower with two threads than with one, its MAP fit 6×,
parallel EP at n = 1000 2×; the binary Laplace mode at n = 1000 was 20 % *faster* with two.

So the loops that lose run with one BLAS thread: every estimator's ``fit`` and ``predict_*``,
:func:`gpc_ref.hyperparameters.maximize` (every learner), :func:`gpc_ref.ep.expectation_propagation`
and :func:`gpc_ref.laplace_multiclass.softmax_laplace_mode` are wrapped by
:func:`limited_blas_threads`. The limit needs the optional package ``threadpoolctl``; without it the
BLAS keeps its own threading. Set ``gpc_ref.threads.BLAS_THREADS`` to another count, or to None to
leave the threading alone (e.g. for n in the thousands, where threads help the Cholesky).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

__all__ = ["BLAS_THREADS", "describe_blas_threading", "describe_floating_point_environment", "limit_blas_threads",
           "limited_blas_threads"]  # fmt: skip

#: BLAS threads inside the wrapped loops (None: do not limit).
BLAS_THREADS: int | None = 1


@contextmanager
def limit_blas_threads(n_threads: int | None = 1) -> Iterator[None]:
    """Run the block with at most ``n_threads`` BLAS threads (if threadpoolctl is installed).

    Parameters
    ----------
    n_threads : int or None
        The limit; None leaves the threading as it is.

    Returns
    -------
    contextlib.AbstractContextManager
        Use it in a ``with`` statement; it yields None.
    """
    if n_threads is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional dependency: without it the BLAS keeps its own threading
        yield
        return
    with threadpool_limits(limits=int(n_threads), user_api="blas"):
        yield


def limited_blas_threads(function: Callable) -> Callable:
    """Decorate ``function`` so that it runs under ``limit_blas_threads(BLAS_THREADS)`` (read at call time).

    Parameters
    ----------
    function : callable

    Returns
    -------
    callable
        The same function, its signature and docstring kept.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with limit_blas_threads(BLAS_THREADS):
            return function(*args, **kwargs)

    return wrapper


def describe_blas_threading() -> str:
    """One line naming the BLAS libraries loaded and their thread counts (benchmarks print it first).

    Uses ``threadpoolctl.threadpool_info()`` when threadpoolctl is importable (what the libraries actually
    use); otherwise the environment variables that set them.

    Returns
    -------
    str
    """
    import os

    import scipy.linalg  # noqa: F401  (loads scipy's BLAS too, so that it is reported)

    environment = " ".join(f"{name}={os.environ.get(name, 'unset')}" for name in THREAD_VARIABLES)
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"BLAS threading: threadpoolctl not installed; environment {environment}"
    pools = [
        f"{pool.get('internal_api', '?')} {pool.get('version') or ''} ({pool.get('prefix', '?')}, "
        f"{pool.get('threading_layer', '?')}): {pool['num_threads']} thread(s)"
        for pool in threadpool_info()
    ]
    return f"BLAS threading (threadpoolctl): {'; '.join(pools) or 'no pool loaded'}; environment {environment}"


def describe_floating_point_environment() -> str:
    """One line naming what decides the last bits of a computation here: numpy's SIMD loops and BLAS's kernels.

    numpy picks its loops for ``exp``, ``log``, ``log1p``, ``expm1`` by the CPU (its dispatch targets, e.g.
    ``X86_V4`` for AVX-512, switched off by ``NPY_DISABLE_CPU_FEATURES``); OpenBLAS picks its kernels by the
    core type (``OPENBLAS_CORETYPE``). Two machines that differ in either round differently in the last bit.

    Returns
    -------
    str
    """
    import os

    import numpy as np

    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as umath
    features = getattr(umath, "__cpu_features__", {})
    dispatch = [target for target in getattr(umath, "__cpu_dispatch__", []) if features.get(target)]
    baseline = getattr(umath, "__cpu_baseline__", [])
    text = f"numpy {np.__version__} SIMD: baseline {'/'.join(baseline) or '?'}, dispatch {'/'.join(dispatch) or 'none'}"
    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES")
    if disabled:
        text += f" (NPY_DISABLE_CPU_FEATURES={disabled})"
    cores = os.environ.get("OPENBLAS_CORETYPE")
    try:
        from threadpoolctl import threadpool_info

        cores = (
            ", ".join(sorted({str(pool["architecture"]) for pool in threadpool_info() if pool.get("architecture")}))
            or cores
        )
    except ImportError:
        pass
    return f"{text}; BLAS core type {cores or 'unknown'}"
