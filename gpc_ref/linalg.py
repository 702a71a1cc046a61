r"""Cholesky factorisation, triangular solves and log-determinants.

This is the only module of :mod:`gpc_ref` that factorises a matrix. Every
method factorises a symmetric positive-definite matrix once and then solves;
no covariance matrix is ever inverted explicitly.

Notation: ``A = L Lᵀ`` with ``L`` lower triangular; ``jitter`` is the amount
added to the diagonal of ``A`` before it factorised (0 when none was needed).

References
----------
- [GPML] Rasmussen & Williams (2006), Appendix A.4 (Cholesky decomposition).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg as sla

from .errors import JitterWarning  # re-exported

__all__ = ["CholeskyFactor", "cholesky", "cho_solve", "solve_lower", "solve_upper", "log_det", "JitterWarning"]


@dataclass(frozen=True)
class CholeskyFactor:
    """Lower Cholesky factor ``L`` of ``A + jitter·I``.

    Attributes
    ----------
    L : ndarray (n, n)
        Lower-triangular factor.
    jitter : float
        Total amount that was added to the diagonal (the requested jitter plus
        any escalation); report it, never hide it.
    """

    L: np.ndarray
    jitter: float

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve ``(A + jitter·I) x = b``.

        Parameters
        ----------
        b : ndarray (n,) or (n, k)
            Right-hand side(s), passed with ``L`` to :func:`cho_solve`.

        Returns
        -------
        ndarray
        """
        return cho_solve(self.L, b)

    @property
    def log_det(self) -> float:
        """log det(A + jitter·I)."""
        return log_det(self.L)


def cholesky(A: ArrayLike, jitter: float = 0.0, *, max_tries: int = 8, name: str = "A") -> CholeskyFactor:
    """Cholesky factor of a symmetric positive (semi-)definite matrix.

    Tries ``A + jitter·I``; if that is not numerically positive definite, the
    added jitter grows tenfold per try, starting from ``1e-10 × mean(diag A)``,
    and a :class:`JitterWarning` reports the amount used. Raises
    ``numpy.linalg.LinAlgError`` after ``max_tries`` failures rather than
    returning a wrong factor.

    Parameters
    ----------
    A : array-like (n, n)
        Symmetric and finite.
    jitter : float
        Non-negative amount added to the diagonal from the start.
    max_tries : int
        Escalations of the jitter before giving up.
    name : str
        The matrix's name in the warning and error messages.

    Returns
    -------
    CholeskyFactor
        The factor and the total jitter added.
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values")
    jitter = float(jitter)
    if jitter < 0:
        raise ValueError(f"jitter must be non-negative; got {jitter}")
    scale = max(float(np.mean(np.abs(np.diag(A)))), np.finfo(float).tiny)
    added = jitter
    for attempt in range(max_tries + 1):
        try:
            L = np.linalg.cholesky(A + added * np.eye(A.shape[0]) if added else A)
        except np.linalg.LinAlgError:
            added = max(10.0 * added, 1e-10 * scale)
            continue
        if added > jitter:
            warnings.warn(
                f"{name} was not numerically positive definite; added jitter {added:.3g} to its diagonal "
                f"(requested {jitter:.3g})",
                JitterWarning,
                stacklevel=2,
            )
        return CholeskyFactor(L=L, jitter=added)
    raise np.linalg.LinAlgError(f"{name} is not positive definite even with jitter {added:.3g} added to its diagonal")


def solve_lower(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``L x = b`` for lower-triangular ``L``.

    Parameters
    ----------
    L : ndarray (n, n)
        Lower triangular (e.g. ``CholeskyFactor.L``).
    b : ndarray (n,) or (n, k)
        Right-hand side(s).

    Returns
    -------
    ndarray
        x, shaped like ``b``.
    """
    return sla.solve_triangular(L, b, lower=True, check_finite=False)


def solve_upper(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``Lᵀ x = b`` for lower-triangular ``L``.

    Parameters
    ----------
    L, b : ndarray
        The lower-triangular factor (its transpose is used) and the right-hand side(s), as for
        :func:`solve_lower`.

    Returns
    -------
    ndarray
    """
    return sla.solve_triangular(L, b, lower=True, trans="T", check_finite=False)


def cho_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``L Lᵀ x = b`` by two triangular solves.

    Parameters
    ----------
    L : ndarray (n, n)
        The lower Cholesky factor of the matrix.
    b : ndarray (n,) or (n, k)
        Right-hand side(s).

    Returns
    -------
    ndarray
        x, of the shape of ``b``.
    """
    return sla.cho_solve((L, True), b, check_finite=False)


def log_det(L: np.ndarray) -> float:
    """log det(L Lᵀ) = 2 Σ log L_ii.

    Parameters
    ----------
    L : ndarray (n, n)
        A Cholesky factor (positive diagonal).

    Returns
    -------
    float
    """
    return 2.0 * np.sum(np.log(np.diag(L)))
