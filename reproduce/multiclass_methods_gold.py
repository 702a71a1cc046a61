"""The multi-class approximations against the multinomial-probit gold standard on the three-class toy (issue 21, item 6).

Problem: G&R §6.1's three-class toy as in ``reproduce/multiclass_gold.py`` (``make_three_class_toy(0, 30,
n_features=2)``, one SE kernel shared by the classes, jitter 1e-6), over the same 3 × 3 grid
(ln ℓ, ln σ_f) ∈ {−1, 0, 1} × {0, 1, 2}. At every point:

- **gold evidence**: the exact multinomial-probit evidence, the orthant probability of
  ``gpc_ref.exact.multinomial_probit_orthant_evidence`` (randomised QMC; its standard error is stored);
- **VB probit**: the lower bound ℒ of G&R Appendix C at VB's fixed point (``vb_probit_multiclass``), a bound
  on the same model's log evidence, so ℒ − gold must be ≤ 0 up to the gold's standard error;
- **IVM**: the IVM has no evidence of its own, but with S = n its prequential sum ∑_l log P(c_l | points
  included before l) (G&R eq 5.5 at each inclusion, ``IVMFit.log_target_probability``) is the chain-rule
  decomposition of log p(c | X), exact for the exact posterior in any order and approximate here because
  each site is fixed at its inclusion (one pass of the IVM's frozen sites, which are not ADF's moment-matched ones). Stored for random order (rng 0) and G&R's predictive
  order;
- **gold predictive**: four independent Gibbs chains (G&R App. D, ``gibbs_probit_multiclass``, 2000 draws
  after 1000 of burn-in, rng 0..3; with 1000 draws the smallest chain ESS was 80, below the book's rule of 100) give the exact posterior predictive on 300 test points
  (``make_three_class_toy(1, 300, n_features=2)``); the chains' mean test log predictive is the gold value and
  the spread of the four chains' values over √4 its standard error. Each method's mean test log predictive
  is compared with it: VB at the same kernel, the IVM at S = n (random order) and at S = 10 (predictive rule),
  and the softmax Laplace (a different model: its difference mixes model and approximation, stored for
  reference only).

Seeds as stated; the orthant estimator uses its default rng 0 and tolerance.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _shared import kernel_at

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.exact import multinomial_probit_orthant_evidence
from gpc_ref.gibbs import gibbs_predict_proba
from gpc_ref.gibbs import gibbs_probit_multiclass
from gpc_ref.ivm import ivm_fit
from gpc_ref.ivm import ivm_predict
from gpc_ref.laplace_multiclass import one_hot_labels
from gpc_ref.laplace_multiclass import softmax_laplace_mode
from gpc_ref.laplace_multiclass import softmax_laplace_predict_proba
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.metrics import mean_log_predictive
from gpc_ref.threads import limit_blas_threads
from gpc_ref.vb_probit import vb_predict_proba
from gpc_ref.vb_probit import vb_probit_multiclass

GRID = [(a, b) for b in (0.0, 1.0, 2.0) for a in (-1.0, 0.0, 1.0)]
N_CHAINS = 4
GIBBS = {"n_samples": 2000, "burn_in": 1000}
N_TEST = 300


def ivm_scores(kernel, X, codes, X_test, codes_test, n_active, selection):
    """Prequential log evidence and test mean log predictive of one IVM fit."""
    fit = ivm_fit(kernel, X, codes, n_active=n_active, selection=selection, rng=0, n_classes=3)
    mean, var = ivm_predict(fit, X_test)
    proba = MultinomialProbitLikelihood().predict(mean, var)
    return float(np.sum(fit.log_target_probability)), mean_log_predictive(codes_test, np.clip(proba, 0, 1))


def point_row(point, X, codes, X_test, codes_test):
    kernel = kernel_at(*point)  # SE, jitter 1e-6, as reproduce/multiclass_gold.py
    K, K_cross, k_diag = kernel.K(X), kernel.K(X, X_test), kernel.diag(X_test)
    start = time.perf_counter()
    gold = multinomial_probit_orthant_evidence(K, codes)
    orthant_seconds = time.perf_counter() - start
    # accelerated, with room to reach the fixed point (the plain map contracts slowly at large σ_f: a capped run's
    # bound is not a value to store)
    vb = vb_probit_multiclass(K, codes, n_classes=3, accelerate=True, max_iter=20000)
    vb_mlp = mean_log_predictive(codes_test, np.clip(vb_predict_proba(vb, K_cross, k_diag), 0, 1))
    ivm_random_evidence, ivm_random_mlp = ivm_scores(kernel, X, codes, X_test, codes_test, len(codes), "random")
    ivm_predictive_evidence, ivm_predictive_mlp = ivm_scores(kernel, X, codes, X_test, codes_test, len(codes),
                                                             "predictive")  # fmt: skip
    _, ivm10_mlp = ivm_scores(kernel, X, codes, X_test, codes_test, 10, "predictive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the softmax mode at the large-σ_f corner; its convergence is stored
        laplace = softmax_laplace_mode(K, one_hot_labels(codes, 3))
    laplace_mlp = mean_log_predictive(codes_test, np.clip(softmax_laplace_predict_proba(laplace, kernel, X, X_test),
                                                                        0, 1))  # fmt: skip
    start = time.perf_counter()
    chain_mlp, chain_ess = [], []
    for chain in range(N_CHAINS):
        samples = gibbs_probit_multiclass(K, codes, rng=chain, n_classes=3, **GIBBS)
        proba = gibbs_predict_proba(samples, K_cross, k_diag, max_samples=250)
        chain_mlp.append(mean_log_predictive(codes_test, np.clip(proba, 1e-300, 1)))
        chain_ess.append(samples.effective_sample_size)
    gibbs_seconds = time.perf_counter() - start
    gold_mlp = float(np.mean(chain_mlp))
    gold_mlp_se = float(np.std(chain_mlp, ddof=1) / np.sqrt(N_CHAINS))
    row = {"log_lengthscale": point[0], "log_sf": point[1],
           "gold_log_evidence": gold.log_evidence, "gold_std_error": gold.std_error,
           "orthant_seconds": orthant_seconds,
           "vb_bound": vb.log_marginal_likelihood_bound, "vb_converged": bool(vb.converged), "vb_iterations": vb.n_iter,
           "ivm_random_evidence": ivm_random_evidence, "ivm_predictive_evidence": ivm_predictive_evidence,
           "gold_mlp": gold_mlp, "gold_mlp_se": gold_mlp_se, "chain_mlp": chain_mlp, "chain_ess": chain_ess,
           "gibbs_seconds": gibbs_seconds,
           "vb_mlp": vb_mlp, "ivm_all_mlp": ivm_random_mlp, "ivm_predictive_all_mlp": ivm_predictive_mlp,
           "ivm10_mlp": ivm10_mlp, "laplace_softmax_mlp": laplace_mlp,
           "laplace_softmax_log_evidence": laplace.log_evidence,
           "laplace_converged": bool(laplace.converged)}  # fmt: skip
    print(
        f"{point}: gold {gold.log_evidence:.3f} ± {gold.std_error:.3f} ({orthant_seconds:.0f} s); "
        f"VB − gold {row['vb_bound'] - gold.log_evidence:+.3f}; IVM(S=n) − gold "
        f"{ivm_random_evidence - gold.log_evidence:+.3f} (random), {ivm_predictive_evidence - gold.log_evidence:+.3f} "
        f"(predictive); test MLP gold {gold_mlp:.3f} ± {gold_mlp_se:.3f}, VB {vb_mlp:+.3f}, IVM all "
        f"{ivm_random_mlp:+.3f}, IVM 10 {ivm10_mlp:+.3f} (Gibbs {gibbs_seconds:.0f} s, ESS {min(chain_ess):.0f})",
        flush=True,
    )
    return row


def main():
    X, codes = make_three_class_toy(0, 30, n_features=2)
    X_test, codes_test = make_three_class_toy(1, N_TEST, n_features=2)
    with limit_blas_threads(1):
        rows = [point_row(p, X, codes, X_test, codes_test) for p in GRID]
    return {"problem": "make_three_class_toy(0, 30, n_features=2)", "n": len(codes),
            "test_problem": f"make_three_class_toy(1, {N_TEST}, n_features=2)", "n_chains": N_CHAINS,
            "gibbs": GIBBS, "rows": rows}  # fmt: skip
