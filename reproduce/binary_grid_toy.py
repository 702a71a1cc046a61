"""The binary evidence study on the toy problem, n = 50 (issue 21, item 2; shared code in ``_binary_grid.py``).

G&M's 1-D toy of book/comparison_binary.ipynb (``make_gm_toy_1d(1, 50)``, 1,000 test points from
``make_gm_toy_1d(2, 1000)``). The grid: ln ℓ from −3 to 1 and ln σ_f from 0 to 4 in steps of 0.5 (9 × 9, a
superset of the chapter's 5 × 5). The probit gold standard (orthant) at every point; the logistic one (AIS,
validated defaults) at every point too, then at the four neighbours at distance 0.25 of its best point.
The binary comparison chapter reads this file's logistic AIS on its 5 × 5 grid.
"""

from __future__ import annotations

import numpy as np
from _binary_grid import study
from _binary_grid import toy_problem

LOG_LENGTHSCALES = np.arange(-3.0, 1.0 + 1e-9, 0.5)
LOG_SFS = np.arange(0.0, 4.0 + 1e-9, 0.5)


def main():
    points = [(float(a), float(b)) for b in LOG_SFS for a in LOG_LENGTHSCALES]
    return study(toy_problem(50), LOG_LENGTHSCALES, LOG_SFS, logistic_points=points, refine_logistic=0.25)
