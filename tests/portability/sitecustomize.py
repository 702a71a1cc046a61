"""A floating-point environment other than this machine's, for ``make portability`` (never for ``make test``).

Python imports ``sitecustomize`` at the start of every process when this directory is on ``PYTHONPATH``:
the pytest process, its xdist workers and every notebook kernel they start. With ``GPC_FP_PERTURB=<seed>``
set, every covariance matrix ``gpc_ref.kernels.SEKernel.K`` returns is multiplied, entry by entry, by
``1 + 1e-15 * s`` with a sign s = ±1 that is a hash of the entry's own bits and the seed. That is a change of
a few units in the last bit, the size of the difference between two CPUs' ``exp``; and like a CPU's ``exp``
it is a function of the value alone, so that equal entries stay equal (a repeated input still gives two equal
rows, a symmetric matrix stays symmetric). A check that fails under it depends on rounding. It is injected
here, from the test harness; ``gpc_ref`` itself has no such switch.
"""

import functools
import os

_SEED = os.environ.get("GPC_FP_PERTURB", "").strip()
RELATIVE_SIZE = 1e-15


def _signs(K, seed):
    import numpy as np

    bits = np.ascontiguousarray(K, dtype=np.float64).view(np.uint64)
    with np.errstate(over="ignore"):  # the hash multiplies modulo 2**64
        mixed = (bits ^ np.uint64((0x9E3779B97F4A7C15 * (seed + 1)) % 2**64)) * np.uint64(0xBF58476D1CE4E5B9)
    return np.where((mixed >> np.uint64(63)) == 1, 1.0, -1.0)


def _install(seed):
    from gpc_ref import kernels

    original = kernels.SEKernel.K

    @functools.wraps(original)
    def perturbed_K(self, X, Z=None):
        K = original(self, X, Z)
        return K * (1.0 + RELATIVE_SIZE * _signs(K, seed))

    kernels.SEKernel.K = perturbed_K
    kernels.SEKernel.__call__ = perturbed_K


if _SEED:
    _install(int(_SEED))
