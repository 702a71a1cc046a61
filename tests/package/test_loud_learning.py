"""Learning that fails loudly (issue 29): warnings whose words are true, on synthetic cases made for them."""

import warnings

import numpy as np
import pytest

from gpc_ref import EPGPC
from gpc_ref import KLGPC
from gpc_ref import GibbsProbitGPC
from gpc_ref import LaplaceGPC
from gpc_ref import SEKernel
from gpc_ref import SparseIVM
from gpc_ref import VariationalBoundsGPC
from gpc_ref import VBProbitGPC

UNIT_KERNEL_ESTIMATORS = [LaplaceGPC, EPGPC, KLGPC, VariationalBoundsGPC, VBProbitGPC, GibbsProbitGPC]


def _binary(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _scale_warnings(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [str(w.message) for w in caught if "look unstandardised" in str(w.message)]


@pytest.mark.parametrize("estimator", UNIT_KERNEL_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_inputs_on_a_scale_the_default_kernel_cannot_see_are_named_in_one_warning(estimator):
    X, y = _binary()
    X_big = X * np.array([1.0, 1e6, 1.0])  # one column in micrometres, say
    said = _scale_warnings(estimator(optimize=False), X_big, y)
    assert len(said) == 1 and "column(s) 1 have standard deviation" in said[0] and "standardise" in said[0]
    # standardised inputs, or a kernel the user chose for the scale, are left alone
    assert not _scale_warnings(estimator(optimize=False), X, y)
    assert not _scale_warnings(estimator(SEKernel(lengthscale=[1.0, 1e6, 1.0]), optimize=False), X_big, y)


def test_mixed_scales_name_the_widest_column_and_the_smallest_spread():
    X, y = _binary()
    X_mixed = X * np.array([1e-4, 5.0, 1.0])  # nothing above 10, but a spread ratio of 5e4
    (said,) = _scale_warnings(LaplaceGPC(optimize=False), X_mixed, y)
    assert "column(s) 1 have standard deviation" in said and "the smallest is" in said


def test_the_scale_aware_default_of_sparse_ivm_needs_no_warning():
    X, y = _binary(n=60)
    assert not _scale_warnings(SparseIVM(n_active=20), X * 1e6, y)
