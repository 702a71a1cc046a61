"""The multi-class gold standard: AIS for the softmax and the multinomial probit, checked, and the softmax Laplace
evidence against it over a small grid (issue 21, item 6).

1. Three points, three classes (a problem small enough for brute force): the softmax evidence by plain
   Monte Carlo over 10⁶ prior draws of the nine latent values, the multinomial-probit evidence by the
   frequency of argmax(f + noise) = c over the same draws and by its orthant probability
   (``gpc_ref.exact.multinomial_probit_orthant_evidence``); ten runs of ``ais_log_evidence`` with its
   defaults for each likelihood, judged against them by the criteria of ``reproduce/ais_validation.py``.
2. The three-class toy of G&R §6.1 (``make_three_class_toy(0, 30, n_features=2)``, inputs as drawn, one SE
   kernel shared by the classes, jitter 1e-6): the multinomial-probit AIS against its orthant probability at
   one grid point, and over the 3 × 3 grid (ln ℓ, ln σ_f) ∈ {−1, 0, 1} × {0, 1, 2} the softmax Laplace
   evidence (W&B 1998, ``softmax_laplace_mode``) minus the softmax AIS evidence, three AIS runs per point
   with their reported standard errors, their spread and Kish's effective sample size.

The grid's AIS runs use T = 1000 temperatures and 128 chains (cost: the stored seconds); where the
standard error is large (short ℓ, large σ_f: the Laplace start is far from the posterior) it is reported,
not hidden. Seeds: AIS run r uses ``rng=r``; the brute force uses ``default_rng(0)``.
"""

from __future__ import annotations

import warnings

import numpy as np
from ais_validation import ais_runs
from ais_validation import judged
from ais_validation import kernel_matrix

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.exact import multinomial_probit_orthant_evidence
from gpc_ref.kernels import SEKernel
from gpc_ref.laplace_multiclass import one_hot_labels
from gpc_ref.laplace_multiclass import softmax_laplace_mode
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.likelihoods import SoftmaxLikelihood

TINY_RUNS = 10
GRID = [(a, b) for b in (0.0, 1.0, 2.0) for a in (-1.0, 0.0, 1.0)]
GRID_AIS = {"n_temperatures": 1000, "n_chains": 128}
GRID_RUNS = 3
PROBIT_POINT = (0.0, 1.0)  # the multinomial probit's quadrature makes each run about five times dearer
PROBIT_RUNS = 3


def tiny_part():
    """n = 3, C = 3: brute force over 10⁶ prior draws against AIS (defaults) and the orthant probability."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 2))
    K = SEKernel(variance=2.0, lengthscale=1.0).K(X)
    codes = np.array([0, 2, 1])
    n_draws = 1_000_000
    F = np.einsum("ij,sjc->sic", np.linalg.cholesky(K), rng.standard_normal((n_draws, 3, 3)))
    weights = np.exp(np.sum(F[:, np.arange(3), codes] - np.log(np.exp(F).sum(axis=2)), axis=1))
    hits = np.all((F + rng.standard_normal(F.shape)).argmax(axis=2) == codes, axis=1)
    frequency = float(hits.mean())
    orthant = multinomial_probit_orthant_evidence(K, codes, tol=1e-4)
    rows = {"softmax_brute_force": float(np.log(weights.mean())),
            "softmax_brute_force_std_error": float(weights.std() / weights.mean() / np.sqrt(n_draws)),
            "multinomial_probit_brute_force": float(np.log(frequency)),
            "multinomial_probit_brute_force_std_error": float(np.sqrt((1 - frequency) / (frequency * n_draws))),
            "multinomial_probit_orthant": orthant.log_evidence,
            "multinomial_probit_orthant_std_error": orthant.std_error, "n_draws": n_draws}  # fmt: skip
    rows["softmax_ais"] = judged(ais_runs(K, codes, SoftmaxLikelihood(), n_runs=TINY_RUNS),
                                 rows["softmax_brute_force"], rows["softmax_brute_force_std_error"])  # fmt: skip
    rows["multinomial_probit_ais"] = judged(ais_runs(K, codes, MultinomialProbitLikelihood(n_nodes=16),
                                                     n_runs=TINY_RUNS), orthant.log_evidence, orthant.std_error)  # fmt: skip
    print(
        f"n = 3: softmax AIS − brute force {rows['softmax_ais']['error']:+.4f} "
        f"(se {rows['softmax_ais']['rms_std_error']:.4f}); multinomial probit AIS − orthant "
        f"{rows['multinomial_probit_ais']['error']:+.4f} (se {rows['multinomial_probit_ais']['rms_std_error']:.4f}); "
        f"brute-force frequency − orthant {rows['multinomial_probit_brute_force'] - orthant.log_evidence:+.4f}",
        flush=True,
    )
    return rows


def grid_part():
    """The three-class toy, n = 30: softmax Laplace − softmax AIS over the grid; multinomial-probit AIS − orthant."""
    X, codes = make_three_class_toy(0, 30, n_features=2)
    softmax_rows = []
    for p in GRID:
        K = kernel_matrix(X, p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            laplace = softmax_laplace_mode(K, one_hot_labels(codes, 3))
        runs = ais_runs(K, codes, SoftmaxLikelihood(), n_runs=GRID_RUNS, **GRID_AIS)
        runs["std_error_of_mean"] = runs["rms_std_error"] / np.sqrt(GRID_RUNS)
        softmax_rows.append({"log_lengthscale": p[0], "log_sf": p[1], "laplace": laplace.log_evidence,
                             "laplace_converged": bool(laplace.converged),
                             "laplace_minus_ais": laplace.log_evidence - runs["mean"], **runs})  # fmt: skip
        print(
            f"softmax {p}: Laplace − AIS {softmax_rows[-1]['laplace_minus_ais']:+.3f} ± {runs['std_error_of_mean']:.3f}"
            f" (per run: se {runs['rms_std_error']:.3f}, spread {runs['spread']:.3f}, ESS {runs['mean_ess']:.0f}"
            f" of {GRID_AIS['n_chains']}, {runs['mean_seconds']:.0f} s)",
            flush=True,
        )
    K = kernel_matrix(X, PROBIT_POINT)
    exact = multinomial_probit_orthant_evidence(K, codes)
    runs = judged(ais_runs(K, codes, MultinomialProbitLikelihood(n_nodes=16), n_runs=PROBIT_RUNS, **GRID_AIS),
                  exact.log_evidence, exact.std_error)  # fmt: skip
    probit_row = {"log_lengthscale": PROBIT_POINT[0], "log_sf": PROBIT_POINT[1], **runs}
    print(f"multinomial probit {PROBIT_POINT}: AIS − orthant {runs['error']:+.3f} (se {runs['rms_std_error']:.3f})")
    return {"problem": "make_three_class_toy(0, 30, n_features=2)", "n": len(codes),
            "class_counts": np.bincount(codes).tolist(), "ais_settings": GRID_AIS, "n_runs": GRID_RUNS,
            "softmax": softmax_rows, "multinomial_probit": probit_row}  # fmt: skip


def main():
    return {"tiny": tiny_part(), "grid": grid_part()}
