"""The posterior latent values at three hyperparameter settings: long elliptical slice runs (issue 21, item 4).

The toy problem of the binary comparison (``make_gm_toy_1d(1, 50)``, input standardised, labels ±1, an
isotropic SE kernel with jitter 1e-6) at three (ln ℓ, ln σ_f):

- (−3, 4): the corner with large σ_f and short ℓ, where the posterior is most skewed;
- (−1, 1): a moderate point;
- (0, 2): the logistic gold standard's optimum on the comparison's grid.

At each, one long elliptical slice sampling run per likelihood (logistic and probit; ``SLICE`` draws after
a burn-in, thinned: ``SLICE``, or ``SLICE_CORNER`` at the corner; seed ``default_rng(10 · point + likelihood)``) gives the posterior means and variances
of the 50 latent values and the effective sample size of each (``gpc_ref.exact.effective_sample_size``);
it stores them with the summaries of every method's ``predict_latent`` at the training inputs against them
(the slope of its means on the reference means through the origin, the median and the smallest ratio of
its variances to the reference's), which the chapter recomputes with today's code.
"""

from __future__ import annotations

import time

import numpy as np
from _binary_splits import METHODS
from _binary_splits import fit_counting_warnings
from _binary_splits import make_method
from _shared import JITTER
from _shared import kernel_at

from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.exact import effective_sample_size
from gpc_ref.exact import elliptical_slice_sampling
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import ProbitLikelihood

POINTS = [(-3.0, 4.0), (-1.0, 1.0), (0.0, 2.0)]  # (ln ℓ, ln σ_f)
#: 20,000 kept draws; the skewed corner mixes slowest (a 20,000-step trial: smallest ESS 26 logistic, 15 probit),
#: so it runs twice as many steps, thinned by 10
SLICE = {"n_samples": 20_000, "burn_in": 2000, "thin": 5}
SLICE_CORNER = {"n_samples": 20_000, "burn_in": 5000, "thin": 10}
LIKELIHOODS = {"logistic": LogisticLikelihood(), "probit": ProbitLikelihood()}


def toy_problem():
    """The comparison's toy training set: inputs standardised (one column), labels ±1."""
    x, t = make_gm_toy_1d(1, 50)
    return Standardizer().fit_transform(x[:, None]), 2.0 * t - 1.0


def through_origin_slope(x, z):
    """Least-squares slope of z on x through the origin."""
    return float(x @ z / (x @ x))


def method_latents(X, y, kernel):
    """Each method's latent means and variances at the training inputs, fitted at ``kernel``."""
    out = {}
    for name in METHODS:
        model, caught = fit_counting_warnings(make_method(name, kernel, False), X, y)
        mean, var = model.predict_latent(X)
        out[name] = {"mean": np.asarray(mean, float), "var": np.asarray(var, float), "warnings": caught}
    return out


def summary(mean, var, reference):
    """Slope of the means through the origin, median and smallest variance ratio against the reference."""
    ratio = var / reference["var"]
    return {"mean_slope": through_origin_slope(reference["mean"], mean), "median_var_ratio": float(np.median(ratio)),
            "min_var_ratio": float(np.min(ratio)), "max_var_ratio": float(np.max(ratio))}  # fmt: skip


def main():
    X, y = toy_problem()
    points = []
    for index, (log_l, log_sf) in enumerate(POINTS):
        kernel = kernel_at(log_l, log_sf)
        K = kernel.K(X)
        references = {}
        for offset, (lik, likelihood) in enumerate(LIKELIHOODS.items()):
            seed = 10 * index + offset
            begin = time.perf_counter()
            draws = elliptical_slice_sampling(K, lambda f, likelihood=likelihood: likelihood.log_p(y, f),
                                              rng=np.random.default_rng(seed),
                                              **(SLICE_CORNER if index == 0 else SLICE))  # fmt: skip
            ess = effective_sample_size(draws)
            references[lik] = {"mean": draws.mean(axis=0).tolist(), "var": draws.var(axis=0, ddof=1).tolist(),
                               "ess": ess.tolist(), "min_ess": float(ess.min()), "seed": seed,
                               "seconds": round(time.perf_counter() - begin, 1)}  # fmt: skip
            print(f"(ln ℓ, ln σ_f) = ({log_l}, {log_sf}) {lik}: min ESS {ess.min():.0f} of {SLICE['n_samples']}, "
                  f"{time.perf_counter() - begin:.0f} s", flush=True)  # fmt: skip
        methods = {}
        for name, fitted in method_latents(X, y, kernel).items():
            reference = {key: np.asarray(references[METHODS[name][0]][key]) for key in ("mean", "var")}
            methods[name] = {**summary(fitted["mean"], fitted["var"], reference), "warnings": fitted["warnings"]}
        points.append({"log_lengthscale": log_l, "log_sf": log_sf, "references": references, "methods": methods})
    return {"problem": "make_gm_toy_1d(1, 50), input standardised, labels ±1", "jitter": JITTER, "slice": SLICE,
            "slice_corner": SLICE_CORNER, "points": points}  # fmt: skip
