"""G&R Table 1, toy data with a smaller training set: VB on 50 draws of 144 training and 96 test points.

The paper does not state the sizes of its 50 toy training and test sets (``gr_table1_toy`` uses 240 and
160). This variant asks how much the sizes matter: a 60/40 split of §6.1's 240 points, 144 for training
and 96 for testing, with everything else as in ``gr_table1_toy`` (draw d = 0..49 with ``default_rng(d)``,
none skipped; G&R's importance sampler at 50 × 500 from φ_d = 1; converged VB). VB only: at a fixed
kernel the three methods' errors differ by a fraction of a point in ``gr_table1_toy``.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.kernels import SEKernel
from gpc_ref.metrics import test_log_likelihood
from gpc_ref.vb_probit import vb_predict_proba
from gpc_ref.vb_probit import vb_probit_multiclass
from gpc_ref.vb_probit_learning import vb_probit_learn_kernel

N_DRAWS = 50
N_TRAIN, N_TEST = 144, 96


def main():
    rows = []
    for draw in range(N_DRAWS):
        rng = np.random.default_rng(draw)
        X, t = make_three_class_toy(rng, N_TRAIN + N_TEST)
        X_train, t_train, X_test, t_test = X[:N_TRAIN], t[:N_TRAIN], X[N_TRAIN:], t[N_TRAIN:]
        start = SEKernel(lengthscale=np.full(X.shape[1], np.sqrt(0.5)), jitter=1e-6)  # φ_d = 1, as in §6.1
        learning = vb_probit_learn_kernel(start, X_train, t_train, rng=rng, n_iter=50, n_importance_samples=500)
        kernel = learning.kernels[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vb = vb_probit_multiclass(kernel.K(X_train), t_train, max_iter=5000, tol=1e-8, accelerate=True)
        proba = vb_predict_proba(vb, kernel.K(X_train, X_test), kernel.diag(X_test))
        row = {"draw": draw, "vb_error": float(100 * np.mean(proba.argmax(axis=1) != t_test)),
               "vb_pl": float(test_log_likelihood(t_test, proba))}  # fmt: skip
        rows.append(row)
        print(row, flush=True)
    summary = {}
    for key in ("vb_error", "vb_pl"):
        values = np.array([row[key] for row in rows])
        summary[key] = {"mean": float(values.mean()), "sd": float(values.std(ddof=1)),
                        "se": float(values.std(ddof=1) / np.sqrt(len(values)))}  # fmt: skip
    return {"experiment": __doc__.splitlines()[0], "seeds": list(range(N_DRAWS)), "n_train": N_TRAIN,
            "n_test": N_TEST, "summary": summary, "rows": rows}  # fmt: skip


if __name__ == "__main__":
    main()
