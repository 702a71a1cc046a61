"""The binary evidence study on the toy problem at a second size, n = 150 (issue 21, item 2: growth with n).

``make_gm_toy_1d(1, 150)`` (the same generator and seed as the 50-point toy, three times the points), tested
on the same 1,000 points. The grid is the binary comparison's 5 × 5 (ln ℓ ∈ {−3, …, 1}, ln σ_f ∈ {0, …, 4}),
so that every method's signed evidence error can be set beside the 50-point values at the same points.
The probit gold standard (orthant) at every point; the logistic one (AIS, about a minute a run at this
size) only at the methods' optima and the four neighbours at distance 0.25 of the best of them.
"""

from __future__ import annotations

import numpy as np
from _binary_grid import study
from _binary_grid import toy_problem

LOG_LENGTHSCALES = np.linspace(-3.0, 1.0, 5)
LOG_SFS = np.linspace(0.0, 4.0, 5)


def main():
    return study(toy_problem(150), LOG_LENGTHSCALES, LOG_SFS, logistic_points=(), refine_logistic=0.25)
