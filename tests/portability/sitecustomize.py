"""A floating-point environment other than this machine's, for ``make portability`` (never for ``make test``).

Python imports ``sitecustomize`` at the start of every process when this directory is on ``PYTHONPATH``:
the pytest process, its xdist workers and every notebook kernel they start. With ``GPC_FP_PERTURB=<seed>``
set, every covariance matrix ``gpc_ref.kernels.SEKernel`` returns is multiplied, entry by entry, by
``1 + 1e-15 * s_ij`` with a deterministic sign pattern s_ij = ±1 that the seed chooses (symmetric for a
training covariance, so that it stays a covariance). That is a change of a few units in the last bit, the
size of the difference between two CPUs' ``exp`` and ``log``: a check that fails under it depends on
rounding. It is injected here, from the test harness; ``gpc_ref`` itself has no such switch.
"""

import os

_SEED = os.environ.get("GPC_FP_PERTURB", "").strip()
RELATIVE_SIZE = 1e-15


def _signs(n, m, seed):
    import numpy as np

    # (i + 1)(j + 1) is symmetric in i and j: the pattern of a square matrix is symmetric
    product = np.outer(np.arange(1, n + 1, dtype=float), np.arange(1, m + 1, dtype=float))
    return np.where(np.sin(0.7548776662 * product + 1.3 * seed) >= 0.0, 1.0, -1.0)


def _install(seed):
    from gpc_ref import kernels

    original = kernels.SEKernel.K

    def perturbed_K(self, X, Z=None):
        K = original(self, X, Z)
        return K * (1.0 + RELATIVE_SIZE * _signs(K.shape[0], K.shape[1], seed))

    perturbed_K.__doc__ = original.__doc__
    kernels.SEKernel.K = perturbed_K
    kernels.SEKernel.__call__ = perturbed_K


if _SEED:
    _install(int(_SEED))
