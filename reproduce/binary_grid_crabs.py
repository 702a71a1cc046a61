"""The binary evidence study on crabs, n = 80 (issue 21, item 2; shared code in ``_binary_grid.py``).

Ripley's crabs, sex from the five measurements, ``crabs_split(0)``: 80 training crabs (20 per species×sex
group) and 120 test, the split of book/comparison_binary.ipynb. The grid, ln ℓ from 1.5 to 4 and ln σ_f
from 3 to 7 in steps of 0.5, contains every method's optimum learnt in that chapter (the learnt σ_f is
large: the sexes are nearly separable). The probit gold standard (orthant) at every point; the logistic one
(AIS) at the logistic methods' optima and the four neighbours at distance 0.25 of the best of them.
"""

from __future__ import annotations

import numpy as np
from _binary_grid import crabs_problem
from _binary_grid import study

LOG_LENGTHSCALES = np.arange(1.5, 4.0 + 1e-9, 0.5)
LOG_SFS = np.arange(3.0, 7.0 + 1e-9, 0.5)


def main():
    return study(crabs_problem(), LOG_LENGTHSCALES, LOG_SFS, logistic_points=(), refine_logistic=0.25)
