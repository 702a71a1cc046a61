import warnings

import numpy as np
import pytest

from gpc_ref.linalg import JitterWarning
from gpc_ref.linalg import cho_solve
from gpc_ref.linalg import cholesky
from gpc_ref.linalg import log_det
from gpc_ref.linalg import solve_lower
from gpc_ref.linalg import solve_upper


def _spd(rng, n=6):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_solves_and_log_det(rng):
    A = _spd(rng)
    b = rng.normal(size=(6, 2))
    factor = cholesky(A)
    assert factor.jitter == 0.0
    np.testing.assert_allclose(A @ factor.solve(b), b, atol=1e-10)
    np.testing.assert_allclose(A @ cho_solve(factor.L, b), b, atol=1e-10)
    np.testing.assert_allclose(factor.L @ solve_lower(factor.L, b), b, atol=1e-10)
    np.testing.assert_allclose(factor.L.T @ solve_upper(factor.L, b), b, atol=1e-10)
    np.testing.assert_allclose(log_det(factor.L), np.linalg.slogdet(A)[1], rtol=1e-12)


def test_requested_jitter_is_added_and_reported(rng):
    A = _spd(rng)
    factor = cholesky(A, jitter=0.5)
    np.testing.assert_allclose(factor.L @ factor.L.T, A + 0.5 * np.eye(6), atol=1e-10)
    assert factor.jitter == 0.5


def test_singular_matrix_escalates_with_a_warning():
    A = np.ones((4, 4))  # rank one
    with pytest.warns(JitterWarning, match="jitter"):
        factor = cholesky(A)
    assert factor.jitter > 0
    assert np.all(np.isfinite(factor.L))


def test_no_warning_when_not_needed(rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cholesky(_spd(rng))


def test_indefinite_matrix_fails_loudly():
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(np.diag([1.0, -1.0]), max_tries=3)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="square"):
        cholesky(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="jitter"):
        cholesky(np.eye(2), jitter=-1.0)
