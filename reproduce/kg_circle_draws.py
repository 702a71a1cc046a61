"""K&G §5.1 over many draws: is adapting ε worth its parameter on the label-noise circle?

K&G report one draw of 40 training points (two labels flipped): test error 0.074 with ε = 0 and 0.028
with ε adapted, and log evidence −23.24 against −22.95. One draw is a noisy comparison, so this
experiment repeats theirs on 20 draws (``make_label_noise_circle(seed)``, seeds 0–19, none skipped),
with the paper's starting values (footnote 3) and EM-EP (accelerated by SQUAREM, K&G's fixed points)
run until the gradient of the EP evidence is below its tolerance. Test sets: the 960 other points with
clean labels. The EP chapter compares the paper's single numbers with this distribution.
"""

from __future__ import annotations

import warnings

import numpy as np
from _shared import ep_fit_row

from gpc_ref import ConvergenceWarning
from gpc_ref.datasets import make_label_noise_circle
from gpc_ref.ep_learning import em_ep
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood

SEEDS = list(range(20))


def main():
    start = SEKernel(variance=1.0, lengthscale=1 / np.sqrt(0.1), bias=1e-8, jitter=1e-6, learn_bias=True,
                     learn_jitter=True)  # fmt: skip
    rows = []
    for seed in SEEDS:
        data = make_label_noise_circle(seed)
        X, y = data.X_train, data.y_train.astype(float)
        row = {"seed": seed}
        for name, likelihood, learn in (("eps0", LabelNoiseLikelihood(0.0, 0.0), False),
                                        ("adapt", LabelNoiseLikelihood(0.01, 0.0), True)):  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # recorded in the row
                fit = em_ep(start, X, y, likelihood=likelihood, learn_epsilon=learn, tol=1e-4, max_iter=500,
                            acceleration="squarem")  # fmt: skip
            row.update(ep_fit_row(name, fit, X, data))
        rows.append(row)
        print(row, flush=True)
    return {"experiment": __doc__.splitlines()[0], "seeds": SEEDS, "rows": rows}


if __name__ == "__main__":
    main()
