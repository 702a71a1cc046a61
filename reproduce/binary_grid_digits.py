"""The binary evidence study on digits 3 vs 5, n = 183 (issue 30, item 14; shared code in ``_binary_grid.py``).

K&R 2005 and GPML §3.7.3 compare Laplace and EP on the USPS digits 3 against 5 (16 × 16 images), which are not
available offline here; scikit-learn's bundled 8 × 8 digits are the counterpart: 3 (+1) against 5 (−1), grey
levels scaled to [0, 1], ``stratified_split(y, 0.5, 0)`` (183 training and 182 test images). The grid, ln ℓ from
0 to 3 in steps of 0.5 and ln σ_f from 0 to 7 in steps of 1, holds the probit optimum and the region where EP's
learner runs (the classes are nearly separable, as the sexes of the crabs are). The probit gold standard
(orthant) at every point; the logistic one (AIS) at the logistic methods' optima and the four neighbours at
distance 0.25 of the best of them.
"""

from __future__ import annotations

import numpy as np
from _binary_grid import digits_problem
from _binary_grid import study

LOG_LENGTHSCALES = np.arange(0.0, 3.0 + 1e-9, 0.5)
LOG_SFS = np.arange(0.0, 7.0 + 1e-9, 1.0)


def main():
    return study(digits_problem(), LOG_LENGTHSCALES, LOG_SFS, logistic_points=(), refine_logistic=0.25)
