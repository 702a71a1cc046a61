"""gpc_ref.threads: the BLAS limit applies inside the wrapped calls and is undone after them."""

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from gpc_ref import EPGPC  # noqa: E402
from gpc_ref import threads  # noqa: E402
from gpc_ref.ep import expectation_propagation  # noqa: E402
from gpc_ref.kernels import SEKernel  # noqa: E402


def _blas_threads():
    return {pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"}


def test_limit_applies_inside_and_is_restored_after():
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        with threads.limit_blas_threads(1):
            assert _blas_threads() == {1}
        assert _blas_threads() == before
        with threads.limit_blas_threads(None):
            assert _blas_threads() == before


def test_wrapped_functions_and_estimators_run_with_one_thread(monkeypatch):
    seen = []
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    original = threads.limit_blas_threads

    def recording(n_threads=1):
        seen.append(n_threads)
        return original(n_threads)

    monkeypatch.setattr(threads, "limit_blas_threads", recording)
    expectation_propagation(SEKernel().K(X), y)
    assert seen == [1]
    monkeypatch.setattr(threads, "BLAS_THREADS", None)  # opting out is read at call time
    seen.clear()
    EPGPC(optimize=False).fit(X, y)
    assert seen and set(seen) == {None}
