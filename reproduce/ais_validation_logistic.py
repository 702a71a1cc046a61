"""AIS on the logistic model, validated against exact and much longer values (issue 30, item 7).

``reproduce/ais_validation.py`` validates AIS on the probit model, where the orthant probability is exact.
The logistic gold standard of the Comparison part is the same AIS with the logistic likelihood, whose
Gaussian start (EP's, through Φ(√(π/8) f)) fits less well; this script checks it in two ways.

1. **n = 3, against quadrature.** Three inputs of G&M's toy generator (``make_gm_toy_1d(5, 3)``,
   standardised), labels ±1. With K = LLᵀ and f = Lz the evidence is E_z[∏ᵢ σ(yᵢ(Lz)ᵢ)], z ~ N(0, I₃): a
   product Gauss–Legendre rule on [−9, 9]³ of the N(0, 1) density times the likelihood, with ``NODES`` nodes
   per axis and again with twice as many; the difference of the two is the quadrature's error, reported.
   Ten AIS runs (the defaults, rng = 0…9) at each of ``SMALL_POINTS``, judged by the probit validation's
   criteria (``ais_validation.CRITERIA``).
2. **n = 50, against a much longer run.** The binary comparison's toy problem at (ln ℓ, ln σ_f) = (0, 4),
   the point of its 9 × 9 grid where the stored logistic AIS had the smallest effective sample size (133 of
   256): ten runs with the defaults against one run of ``LONG`` (T and S each several times the defaults),
   whose standard error is several times smaller; criteria as above, with the long run as the reference.

Seeds: AIS run r uses ``rng=r``; the long run ``rng=1000``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _shared import kernel_at
from ais_validation import CRITERIA
from ais_validation import ais_defaults
from ais_validation import ais_runs
from ais_validation import judged
from ais_validation import problems
from scipy.special import log_expit
from scipy.special import logsumexp

from gpc_ref.ais import ais_log_evidence
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.linalg import cholesky

SMALL_POINTS = [(-1.0, 0.0), (0.0, 1.0), (0.0, 2.0), (1.0, 2.0), (0.0, 3.0)]
NODES = 200  # per axis; the check doubles it
HALF_WIDTH = 9.0
LONG_POINT = (0.0, 4.0)
LONG = {"n_temperatures": 10_000, "n_chains": 1024}


def small_problem():
    """Three standardised inputs of ``make_gm_toy_1d(5, 3)`` and their labels ±1."""
    x, t = make_gm_toy_1d(5, 3)
    return Standardizer().fit_transform(x[:, None]), 2.0 * t - 1.0


def quadrature_log_evidence(K, y, nodes):
    """log E_z[∏ σ(yᵢ (Lz)ᵢ)], z ~ N(0, I₃), by a product Gauss–Legendre rule on [−9, 9]³ (chunked over z₁)."""
    L = cholesky(K, name="K").L
    u, w = np.polynomial.legendre.leggauss(nodes)
    z, log_w = HALF_WIDTH * u, np.log(HALF_WIDTH * w) - 0.5 * (HALF_WIDTH * u) ** 2 - 0.5 * np.log(2 * np.pi)
    z2, z3 = np.meshgrid(z, z, indexing="ij")
    log_w23 = log_w[:, None] + log_w[None, :]
    terms = []
    for z1, log_w1 in zip(z, log_w):  # one plane of the product rule at a time: O(nodes²) memory
        Z = np.stack([np.full_like(z2, z1), z2, z3])  # (3, nodes, nodes)
        F = np.einsum("ij,jab->iab", L, Z)
        log_lik = np.sum(log_expit(y[:, None, None] * F), axis=0)
        terms.append(logsumexp(log_w1 + log_w23 + log_lik))
    return float(logsumexp(terms))


def small_part():
    X, y = small_problem()
    rows = []
    for point in SMALL_POINTS:
        K = kernel_at(*point).K(X)
        begin = time.perf_counter()
        coarse, fine = quadrature_log_evidence(K, y, NODES), quadrature_log_evidence(K, y, 2 * NODES)
        seconds = time.perf_counter() - begin
        runs = judged(ais_runs(K, y, LogisticLikelihood()), fine, abs(fine - coarse))
        rows.append({"log_lengthscale": point[0], "log_sf": point[1], "n": 3, "quadrature": fine,
                     "quadrature_error": abs(fine - coarse), "quadrature_nodes": [NODES, 2 * NODES],
                     "quadrature_seconds": seconds, **runs})  # fmt: skip
        print(f"n = 3 {point}: quadrature {fine:.5f} (±{abs(fine - coarse):.1e}), AIS error {runs['error']:+.4f}, "
              f"spread {runs['spread']:.4f}, se {runs['rms_std_error']:.4f}, passes {runs['passes']}", flush=True)  # fmt: skip
    return rows


def long_part():
    X, y = problems()["toy"]
    K = kernel_at(*LONG_POINT).K(X)
    begin = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        long = ais_log_evidence(K, y, LogisticLikelihood(), rng=1000, **LONG)
    long_row = {"log_evidence": float(long.log_evidence), "std_error": float(long.std_error),
                "effective_sample_size": float(long.effective_sample_size), "seed": 1000,
                "seconds": time.perf_counter() - begin, **LONG}  # fmt: skip
    print(f"long run {LONG_POINT}: {long.log_evidence:.4f} ± {long.std_error:.4f}, ESS "
          f"{long.effective_sample_size:.0f} of {LONG['n_chains']}, {long_row['seconds']:.0f} s", flush=True)  # fmt: skip
    runs = judged(ais_runs(K, y, LogisticLikelihood()), long_row["log_evidence"], long_row["std_error"])
    print(f"defaults against it: error {runs['error']:+.4f}, spread {runs['spread']:.4f}, "
          f"se {runs['rms_std_error']:.4f}, ESS {runs['mean_ess']:.0f}, passes {runs['passes']}", flush=True)  # fmt: skip
    return {"problem": "toy", "n": int(len(y)), "log_lengthscale": LONG_POINT[0], "log_sf": LONG_POINT[1],
            "long": long_row, **runs}  # fmt: skip


def main():
    return {"criteria": CRITERIA, "ais_defaults": ais_defaults(), "blas_threads": 1,
            "small_problem": "make_gm_toy_1d(5, 3), input standardised, labels ±1", "small": small_part(),
            "long_point": long_part()}  # fmt: skip
