"""G&R §6.1 and Fig. 5 at paper scale: the three-class toy problem over five draws.

G&R report 99.37 % test accuracy for the variational classifier on one draw of their toy problem
(240 training points, 10 inputs of which 2 are relevant, kernel precisions by their importance sampler
with 500 draws per iteration for 50 iterations), and an IVM whose test error falls below 1 % after about
30 included points (Fig. 5, 20 starts, predictive selection, the precisions learnt by VB). This
experiment repeats both on five draws (``make_three_class_toy`` with ``default_rng(seed)``, seeds 0–4,
none skipped): per draw, the importance sampler at the paper's settings, the converged VB classifier's
accuracy on 4620 test points, and the IVM's test error after 30 points, averaged over 20 starts, on a
1000-point pool with 2385 test points, as in the IVM chapter.

To see where the gap to the paper's numbers comes from, each draw also scores (i) the Bayes-optimal
classifier (``three_class_toy_bayes_proba``: the true class probabilities, which no classifier can beat)
on both test sets, and (ii) VB and the IVM with the eight noise inputs removed, i.e. the same kernel with
the sampler's φ_1, φ_2 and φ_3 = … = φ_10 = 0, which is what G&R describe their sampler reaching ("the
eight irrelevant features are effectively removed"). If (ii) closes the gap, the gap is the noise inputs'
precisions that our sampler leaves above zero, not the inference. (iii) The problem is radially
symmetric in (x_1, x_2), so the right kernel there is isotropic, but each importance step rests on a few
of its 500 draws and the estimates of φ_1 and φ_2 come out unequal (by a factor up to 3); the third
variant keeps the noise inputs out and replaces φ_1, φ_2 by their geometric mean, the same overall
lengthscale without the sampler's anisotropy. (iv) How much the IVM's error after 30 points depends on
the kernel at all: on the relevant inputs, isotropic φ ∈ {1, 2, 5, 10, 20} with G&R's unit signal
variance and with signal variances 10 and 100 (which G&R's kernel does not have, but which their Table 1
predictive likelihoods point to; see the Gibbs/experiments chapter), five starts each.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.datasets import three_class_toy_bayes_proba
from gpc_ref.ivm import ivm_fit
from gpc_ref.ivm import ivm_predict
from gpc_ref.kernels import SEKernel
from gpc_ref.vb_probit import vb_predict_proba
from gpc_ref.vb_probit import vb_probit_multiclass
from gpc_ref.vb_probit_learning import vb_probit_learn_kernel

SEEDS = list(range(5))
IVM_GRID = [(phi, variance) for variance in (1.0, 10.0, 100.0) for phi in (1.0, 2.0, 5.0, 10.0, 20.0)]


def ivm_error_30(kernel, X_pool, t_pool, X_test, t_test, n_starts):
    """Mean test error after 30 included points over ``n_starts`` random starts (predictive selection)."""
    errors = []
    for start_index in range(n_starts):
        fit = ivm_fit(kernel, X_pool, t_pool, n_active=50, selection="predictive", rng=start_index)
        mean_path, _ = ivm_predict(fit, X_test, path=True)
        errors.append(float(np.mean(mean_path[29].argmax(axis=1) != t_test)))
    return float(np.mean(errors))


def main():
    rows = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        X, t = make_three_class_toy(rng, 240)
        X_test, t_test = make_three_class_toy(rng, 4620)
        start = SEKernel(lengthscale=np.full(10, 1 / np.sqrt(2)))  # φ_d = 1 for every input
        learning = vb_probit_learn_kernel(start, X, t, rng=rng, n_iter=50, n_importance_samples=500)
        kernel = learning.kernels[0]
        relevant = SEKernel(lengthscale=kernel.lengthscale[:2], variance=kernel.variance, jitter=kernel.jitter)
        mean_lengthscale = float(np.sqrt(kernel.lengthscale[0] * kernel.lengthscale[1]))  # φ_1, φ_2 → geometric mean
        isotropic = relevant.with_params(lengthscale=np.full(2, mean_lengthscale))
        X_pool, t_pool = make_three_class_toy(rng, 1000)
        X_ivm_test, t_ivm_test = make_three_class_toy(rng, 2385)
        row = {"seed": seed, "phi": [float(v) for v in learning.phi_history[-1, 0]],
               "bayes_accuracy": float(np.mean(three_class_toy_bayes_proba(X_test).argmax(axis=1) == t_test)),
               "bayes_ivm_error": float(np.mean(three_class_toy_bayes_proba(X_ivm_test).argmax(axis=1) != t_ivm_test))}  # fmt: skip
        variants = (("", kernel, slice(None)), ("_noise_removed", relevant, slice(0, 2)),
                    ("_isotropic", isotropic, slice(0, 2)))  # fmt: skip
        for suffix, k, columns in variants:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                vb = vb_probit_multiclass(k.K(X[:, columns]), t, max_iter=5000, tol=1e-9)
            proba = vb_predict_proba(vb, k.K(X[:, columns], X_test[:, columns]), k.diag(X_test[:, columns]))
            row["vb_accuracy" + suffix] = float(np.mean(proba.argmax(axis=1) == t_test))
            row["ivm_error_30" + suffix] = ivm_error_30(k, X_pool[:, columns], t_pool, X_ivm_test[:, columns],
                                                        t_ivm_test, 20)  # fmt: skip
        row["ivm_error_30_grid"] = [
            {"phi": phi, "variance": variance,
             "error": ivm_error_30(SEKernel(lengthscale=np.full(2, 1 / np.sqrt(2 * phi)), variance=variance),
                                   X_pool[:, :2], t_pool, X_ivm_test[:, :2], t_ivm_test, 5)}
            for phi, variance in IVM_GRID]  # fmt: skip
        rows.append(row)
        print(row, flush=True)
    return {"experiment": __doc__.splitlines()[0], "seeds": SEEDS, "rows": rows}


if __name__ == "__main__":
    main()
