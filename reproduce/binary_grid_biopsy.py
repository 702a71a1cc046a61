"""The binary evidence study on biopsy, n = 151 (issue 21, item 2; shared code in ``_binary_grid.py``).

Wisconsin biopsies, ``stratified_split(y, 0.22, 0)``: 151 training and 532 test cases, the split of
book/comparison_binary.ipynb. The grid, ln ℓ from 1.5 to 3.5 and ln σ_f from 1 to 3.5 in steps of 0.5,
contains every method's optimum learnt in that chapter. The probit gold standard (orthant) at every point;
the logistic one (AIS, about 100 s a run at this size) at the logistic methods' optima and the four
neighbours at distance 0.25 of the best of them.
"""

from __future__ import annotations

import numpy as np
from _binary_grid import biopsy_problem
from _binary_grid import study

LOG_LENGTHSCALES = np.arange(1.5, 3.5 + 1e-9, 0.5)
LOG_SFS = np.arange(1.0, 3.5 + 1e-9, 0.5)


def main():
    return study(biopsy_problem(), LOG_LENGTHSCALES, LOG_SFS, logistic_points=(), refine_logistic=0.25)
