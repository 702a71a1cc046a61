"""Learnt hyperparameters over repeated stratified splits: the binary methods against EP (issue 21, item 3).

Shared by ``reproduce/binary_splits_<problem>.py`` (the runner skips files starting with ``_``). For each of
ten splits (seeds 0-9) of a problem, every method of the binary comparison (book/comparison_binary.ipynb,
its METHODS) learns its own (ln ℓ, ln σ_f) of an isotropic SE kernel (jitter 1e-6) by maximising its own
objective from the same start (σ_f = 1, ℓ = √D), is scored on the test set (error rate, mean log predictive
probability, Brier score), and on the first five splits two MCMC references for the probit model run at EP's
learnt hyperparameters:
the Gibbs sampler and elliptical slice sampling, each with the smallest effective sample size over the
latent values (``gpc_ref.exact.effective_sample_size``), so that a reference that did not mix can be seen.

The splits (split 0 is the split of book/comparison_binary.ipynb wherever that split is seeded):

- toy: fresh draws, ``make_gm_toy_1d(2s + 1, 50)`` for training and ``make_gm_toy_1d(2s + 2, 1000)`` for
  testing (split 0: seeds 1 and 2, as in the comparison);
- crabs: ``crabs_split(s)``, W&B's 20 training crabs per species×sex group (80 train, 120 test);
- pima: the 532 cases of Pima.tr and Pima.te pooled, ``stratified_split(y, 200/532, s)`` (200 train, 332
  test, each class in proportion); Ripley's fixed split, which the comparison uses, is not one of them;
- biopsy: ``stratified_split(y, 0.22, s)`` (151 train, 532 test), the comparison's protocol.

On toy and crabs, every split also stores ``ep_sigma_f_profile``: the exact probit evidence and EP's along
ln σ_f = 0, 0.5, …, 7.5 at EP's learnt ℓ (issue 30, item 6), to say whether EP's learner running to a large
σ_f follows the model's evidence or EP's error. KL runs with both likelihoods, so that KL (probit) stands
beside EP (probit) as KL (logistic) does beside Laplace (logistic) (issue 30, item 4).

The upper bound (G&M) keeps the lower bound's hyperparameters, as in the comparison: it is fitted at the
lower bound's learnt kernel rather than relearning the same search.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _shared import JITTER
from _shared import kernel_at

from gpc_ref import EPGPC
from gpc_ref import KLGPC
from gpc_ref import GibbsProbitGPC
from gpc_ref import LaplaceGPC
from gpc_ref import SEKernel
from gpc_ref import VariationalBoundsGPC
from gpc_ref import VBProbitGPC
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import crabs_split
from gpc_ref.datasets import load_biopsy
from gpc_ref.datasets import load_crabs
from gpc_ref.datasets import load_pima
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.datasets import stratified_split
from gpc_ref.exact import effective_sample_size
from gpc_ref.exact import elliptical_slice_sampling
from gpc_ref.exact import probit_orthant_evidence
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.linalg import cholesky
from gpc_ref.metrics import brier_score
from gpc_ref.metrics import error_rate
from gpc_ref.metrics import mean_log_predictive

N_SPLITS = 10
PROBLEMS = ("toy", "crabs", "pima", "biopsy")
#: the methods of the binary comparison, in its order: name -> (likelihood, label)
METHODS = {
    "laplace": ("logistic", "Laplace (logistic)"),
    "laplace_probit": ("probit", "Laplace (probit)"),
    "ep": ("probit", "EP (probit)"),
    "lower_bound": ("logistic", "JJ lower bound"),
    "upper_bound": ("logistic", "JJ upper bound"),
    "vb": ("probit", "VB probit"),
    "kl": ("logistic", "KL (logistic)"),
    "kl_probit": ("probit", "KL (probit)"),
}
#: the MCMC references at EP's learnt hyperparameters (probit model), on the first REFERENCE_SPLITS splits
GIBBS = {"n_samples": 4000, "burn_in": 1000}
SLICE = {"n_samples": 20_000, "burn_in": 2000}
REFERENCE_SPLITS = 5
#: a reference is used only where its smallest effective sample size over the latents reaches this
MIN_ESS = 100
#: the runaway check (issue 30, item 6): on these problems, on every split, the exact probit evidence and EP's
#: along ln σ_f at EP's learnt ℓ, to see whether a large learnt σ_f is EP's doing or the model's
PROFILE_PROBLEMS = ("toy", "crabs")
PROFILE_LOG_SFS = tuple(float(v) for v in np.arange(0.0, 7.5 + 1e-9, 0.5))


def standardised_problem(X_train, labels_train, X_test, labels_test, positive):
    """Inputs standardised with the training set's means and sds; labels ±1 (+1 = ``positive``)."""
    scaler = Standardizer().fit(np.asarray(X_train, float))
    sign = lambda labels: np.where(np.asarray(labels) == positive, 1.0, -1.0)  # noqa: E731
    return {"X": scaler.transform(np.asarray(X_train, float)), "y": sign(labels_train),
            "X_test": scaler.transform(np.asarray(X_test, float)), "y_test": sign(labels_test)}  # fmt: skip


def problem(name, split):
    """Split ``split`` (0-9) of problem ``name``: dict with X, y, X_test, y_test (inputs standardised)."""
    if name == "toy":
        x_train, t_train = make_gm_toy_1d(2 * split + 1, 50)
        x_test, t_test = make_gm_toy_1d(2 * split + 2, 1000)
        return standardised_problem(x_train[:, None], t_train, x_test[:, None], t_test, 1)
    if name == "crabs":
        data = load_crabs()
        train, test = crabs_split(split)
        return standardised_problem(data.X[train], data.y[train], data.X[test], data.y[test], "M")
    if name == "pima":
        pima_train, pima_test = load_pima()
        X = np.vstack([pima_train.X, pima_test.X])
        labels = np.concatenate([pima_train.y, pima_test.y])
        train, test = stratified_split(labels, 200 / 532, split)
        return standardised_problem(X[train], labels[train], X[test], labels[test], "Yes")
    if name == "biopsy":
        data = load_biopsy()
        train, test = stratified_split(data.y, 0.22, split)
        return standardised_problem(data.X[train], data.y[train], data.X[test], data.y[test], "malignant")
    raise ValueError(f"name must be one of {PROBLEMS}; got {name!r}")


def make_method(name, kernel, optimize):
    """The estimator of method ``name`` (as in the comparison's METHODS) at ``kernel``."""
    if name == "laplace":
        return LaplaceGPC(kernel, optimize=optimize, prior=None, n_restarts=0)
    if name == "laplace_probit":
        return LaplaceGPC(kernel, optimize=optimize, likelihood="probit", prior=None, n_restarts=0)
    if name == "ep":
        return EPGPC(kernel, optimize=optimize)
    if name in ("lower_bound", "upper_bound"):
        return VariationalBoundsGPC(kernel, optimize=optimize, bound="lower" if name == "lower_bound" else "upper")
    if name == "vb":
        return VBProbitGPC(kernel, optimize=optimize)
    if name == "kl":
        return KLGPC(kernel, optimize=optimize)
    if name == "kl_probit":
        return KLGPC(kernel, optimize=optimize, likelihood="probit")
    raise ValueError(f"name must be one of {list(METHODS)}; got {name!r}")


def fit_counting_warnings(model, X, y):
    """``model.fit(X, y)``; returns the model and the categories of the warnings it raised (recorded, not shown)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return model, sorted({w.category.__name__ for w in caught})


def scores(proba, y_test):
    """Test error rate, mean log predictive probability and Brier score of P(y = +1) against labels ±1."""
    t = (np.asarray(y_test) + 1) / 2
    return {"error": float(error_rate(t, (proba > 0.5).astype(float)).rate),
            "mlp": float(mean_log_predictive(t, proba)), "brier": float(brier_score(t, proba))}  # fmt: skip


def learnt_theta(model):
    """(ln ℓ, ln σ_f) of a fitted model's kernel (SEKernel.theta is (ln σ_f², ln ℓ))."""
    theta = model.kernel_.theta
    return [float(theta[1]), float(theta[0] / 2)]


def learning_converged(model):
    """The learner's own convergence flag (its gradient test), or None if it reports none."""
    fit = model.hyperparameter_fit_
    for candidate in (fit, getattr(fit, "optimization", None)):
        if candidate is not None and hasattr(candidate, "converged"):
            return bool(candidate.converged)
    return None


def slice_probit_predictive(X, y, X_test, kernel, rng, n_samples, burn_in):
    """Elliptical slice sampling of the probit posterior; the predictive P(y* = +1) and the draws.

    Each draw f of the training latents gives f* | f ~ N(k*ᵀK⁻¹f, k** − k*ᵀK⁻¹k*), so
    P(y* = +1 | f) = Φ(k*ᵀK⁻¹f / √(1 + k** − k*ᵀK⁻¹k*)); the predictive is its average over the draws.
    """
    from scipy.special import ndtr

    likelihood = ProbitLikelihood()
    K = kernel.K(X)
    draws = elliptical_slice_sampling(K, lambda f: likelihood.log_p(y, f), rng=rng, n_samples=n_samples,
                                      burn_in=burn_in)  # fmt: skip
    factor = cholesky(K, name="K")
    K_cross = kernel.K(X, X_test)
    weights = factor.solve(K_cross)  # K⁻¹k* for every test point, by one factorisation and solves
    variance = np.maximum(kernel.diag(X_test) - np.sum(K_cross * weights, axis=0), 0.0)
    means = draws @ weights  # (S, m)
    proba = ndtr(means / np.sqrt(1.0 + variance)).mean(axis=0)
    return proba, draws


def sigma_f_profile(X, y, log_lengthscale):
    """The exact probit log evidence (orthant, rng 0) and EP's along ``PROFILE_LOG_SFS`` at one ln ℓ.

    If the exact evidence still rises towards the top of the box where EP's learner ran to a large σ_f,
    the runaway is the probit model's (nearly separable data), not EP's error.
    """
    rows = []
    for log_sf in PROFILE_LOG_SFS:
        kernel = kernel_at(log_lengthscale, log_sf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact = probit_orthant_evidence(kernel.K(X), y, rng=0)
            ep = EPGPC(kernel, optimize=False).fit(X, y).log_marginal_likelihood_
        rows.append({"log_sf": log_sf, "exact": float(exact.log_evidence), "exact_se": float(exact.std_error),
                     "exact_converged": bool(exact.converged), "ep": float(ep)})  # fmt: skip
    return {"log_lengthscale": float(log_lengthscale), "rows": rows}


def run_split(name, split, *, with_references=True):
    """Every method learnt on split ``split`` of ``name``, scored; the MCMC references at EP's kernel."""
    data = problem(name, split)
    X, y = data["X"], data["y"]
    start = SEKernel(variance=1.0, lengthscale=float(np.sqrt(X.shape[1])), jitter=JITTER)
    row = {"split": split, "n_train": int(len(y)), "n_test": int(len(data["y_test"])),
           "positive_train": int(np.sum(y > 0)), "methods": {}}  # fmt: skip
    fitted = {}
    for method in METHODS:
        begin = time.perf_counter()
        if method == "upper_bound":  # G&M: the upper bound's posterior at the lower bound's hyperparameters
            model, caught = fit_counting_warnings(make_method(method, fitted["lower_bound"].kernel_, False), X, y)
            converged = row["methods"]["lower_bound"]["converged"]
        else:
            model, caught = fit_counting_warnings(make_method(method, start, True), X, y)
            converged = learning_converged(model)
        fitted[method] = model
        proba = model.predict_proba(data["X_test"])[:, 1]
        row["methods"][method] = {**scores(proba, data["y_test"]), "theta": learnt_theta(model),
                                  "converged": converged, "warnings": caught,
                                  "seconds": round(time.perf_counter() - begin, 2)}  # fmt: skip
    if name in PROFILE_PROBLEMS:
        row["ep_sigma_f_profile"] = sigma_f_profile(X, y, row["methods"]["ep"]["theta"][0])
    if with_references:
        kernel = fitted["ep"].kernel_
        rng = np.random.default_rng(1000 + split)
        gibbs, _ = fit_counting_warnings(GibbsProbitGPC(kernel, rng=rng, **GIBBS), X, y)
        gibbs_ess = float(np.min(effective_sample_size(gibbs.posterior_.m[:, :, 0])))
        row["gibbs"] = {**scores(gibbs.predict_proba(data["X_test"])[:, 1], data["y_test"]),
                        "min_ess": gibbs_ess, **GIBBS}  # fmt: skip
        proba, draws = slice_probit_predictive(X, y, data["X_test"], kernel, rng, **SLICE)
        row["slice"] = {**scores(proba, data["y_test"]), "min_ess": float(np.min(effective_sample_size(draws))),
                        **SLICE}  # fmt: skip
    return row


def paired_summary(rows, measure, method, reference="ep"):
    """Mean over splits of (method − reference) for ``measure`` and its paired standard error.

    The paired standard error is the standard deviation of the per-split differences over √(number of
    splits): the splits are independent, the two methods on one split are not.
    """
    differences = np.array([r["methods"][method][measure] - r["methods"][reference][measure] for r in rows])
    return float(differences.mean()), float(differences.std(ddof=1) / np.sqrt(len(differences)))


def main_for(name, splits=range(N_SPLITS)):
    """The stored result of one problem: the rows of every split, seeds and settings included."""
    rows = []
    for split in splits:
        begin = time.perf_counter()
        rows.append(run_split(name, split, with_references=split < REFERENCE_SPLITS))
        ep = rows[-1]["methods"]["ep"]
        ess = (f"; Gibbs ESS {rows[-1]['gibbs']['min_ess']:.0f}, slice ESS {rows[-1]['slice']['min_ess']:.0f}"
               if "gibbs" in rows[-1] else "")  # fmt: skip
        print(f"{name} split {split}: EP error {ep['error']:.3f}, log p {ep['mlp']:.3f}, "
              f"(ln ℓ, ln σ_f) = ({ep['theta'][0]:.2f}, {ep['theta'][1]:.2f}){ess}; "
              f"{time.perf_counter() - begin:.0f} s", flush=True)  # fmt: skip
    return {"problem": name, "splits": list(splits), "jitter": JITTER, "start": "sigma_f = 1, lengthscale = sqrt(D)",
            "gibbs": GIBBS, "slice": SLICE, "reference_splits": list(range(REFERENCE_SPLITS)), "slice_seed": "default_rng(1000 + split), shared with the Gibbs run",
            "min_ess": MIN_ESS, "rows": rows}  # fmt: skip
