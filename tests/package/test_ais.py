"""Annealed importance sampling (gpc_ref.ais) against exact evidences.

The paper-scale validation, in the regime the Comparison part uses (the 50-point toy grid's corners up
to σ_f = e⁴), is ``reproduce/ais_validation.py``, stored in ``book/results/ais_validation.json``; the
multi-class one is ``reproduce/multiclass_gold.py`` (``book/results/multiclass_gold.json``). The
``test_the_stored_*`` tests re-read them, and the other tests re-check their claims at reduced size.
"""

import json
import pathlib
import warnings

import numpy as np
import pytest

from gpc_ref.ais import AISEstimate
from gpc_ref.ais import ais_core
from gpc_ref.ais import ais_log_evidence
from gpc_ref.datasets import Standardizer
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.exact import multinomial_probit_orthant_evidence
from gpc_ref.exact import probit_orthant_evidence
from gpc_ref.exact import quadrature_posterior
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import LabelNoiseLikelihood
from gpc_ref.likelihoods import LogisticLikelihood
from gpc_ref.likelihoods import MultinomialProbitLikelihood
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.likelihoods import SoftmaxLikelihood
from gpc_ref.linalg import cholesky
from gpc_ref.validation import ConvergenceWarning

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "book" / "results" / "ais_validation.json"
MULTICLASS_RESULTS = RESULTS.parent / "multiclass_gold.json"


def toy_problem(n, log_lengthscale, log_sf):
    """The Comparison part's one-dimensional toy problem (standardised input, jitter 1e-6) at one grid point."""
    x, t = make_gm_toy_1d(1, n)
    X = Standardizer().fit(x[:, None]).transform(x[:, None])
    kernel = SEKernel(variance=float(np.exp(2 * log_sf)), lengthscale=float(np.exp(log_lengthscale)), jitter=1e-6)
    return kernel.K(X), 2.0 * t - 1.0


@pytest.mark.parametrize("start", ["ep", "prior"])
@pytest.mark.parametrize("likelihood", [ProbitLikelihood(), LogisticLikelihood(), LabelNoiseLikelihood(0.1, 0.3)])
@pytest.mark.parametrize("n", [1, 3])
def test_ais_matches_quadrature_for_tiny_problems(likelihood, n, start):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 1))
    y = np.array([1.0, -1.0, 1.0][:n])
    K = SEKernel(variance=4.0, lengthscale=1.0).K(X)
    exact = quadrature_posterior(K, lambda f: likelihood.log_p(y, f)).log_evidence
    result = ais_log_evidence(K, y, likelihood, rng=5, n_temperatures=300, n_chains=64, start=start)
    assert result.start == start
    assert 0 < result.std_error < 0.05
    assert abs(result.log_evidence - exact) < 4 * result.std_error + 0.005


def test_ais_agrees_with_the_orthant_at_a_grid_corner_at_reduced_size():
    """The stored validation's test, smaller: 20 toy points at (ln ℓ, ln σ_f) = (−3, 4), 10 runs.

    The mean is within 0.05 nats of the exact value, every run within three of its standard errors, and
    the reported standard error matches the spread of the runs (ratio between 0.5 and 2).
    """
    K, y = toy_problem(20, -3.0, 4.0)
    exact = probit_orthant_evidence(K, y, tol=0.002)
    assert exact.std_error < 0.002
    runs = [ais_log_evidence(K, y, ProbitLikelihood(), rng=seed, n_temperatures=300, n_chains=64) for seed in range(10)]
    estimates = np.array([run.log_evidence for run in runs])
    errors = np.array([run.std_error for run in runs])
    assert abs(estimates.mean() - exact.log_evidence) < 0.05
    assert np.all(np.abs(estimates - exact.log_evidence) < 3 * errors + 3 * exact.std_error)
    ratio = np.sqrt(np.mean(errors**2)) / np.std(estimates, ddof=1)
    assert 0.5 < ratio < 2.0
    assert min(run.effective_sample_size for run in runs) > 64 / 4


def test_the_prior_start_is_the_classical_path_and_the_ep_start_is_closer():
    """From the prior, log Z_q = 0 and the log weights spread far more than from EP's Gaussian (same T)."""
    K, y = toy_problem(20, -3.0, 4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        prior = ais_log_evidence(K, y, ProbitLikelihood(), rng=1, n_temperatures=200, n_chains=32, start="prior")
    ep = ais_log_evidence(K, y, ProbitLikelihood(), rng=1, n_temperatures=200, n_chains=32)
    assert prior.start == "prior" and prior.log_start_normaliser == 0.0
    assert ep.start == "ep" and ep.log_start_normaliser != 0.0
    assert np.std(ep.log_weights) < 0.5 * np.std(prior.log_weights)


def test_a_poor_schedule_is_flagged_by_the_effective_sample_size():
    K, y = toy_problem(30, -3.0, 4.0)
    with pytest.warns(ConvergenceWarning, match="effective sample size"):
        result = ais_log_evidence(K, y, ProbitLikelihood(), rng=0, n_temperatures=3, n_chains=32, start="prior")
    assert result.effective_sample_size < 8


# --------------------------------------------------------------------------- multi-class
def three_point_problem(n_classes=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 2))
    return SEKernel(variance=2.0, lengthscale=1.0).K(X), np.array([0, 2, 1]) % n_classes


@pytest.mark.parametrize("start", ["laplace", "prior"])
def test_softmax_ais_matches_brute_force_monte_carlo(start):
    """n = 3, C = 3: p(c) = E[Π_i softmax(f_i)_{c_i}] over 400 000 prior draws of the 9 latent values."""
    K, codes = three_point_problem()
    F = np.einsum("ij,sjc->sic", np.linalg.cholesky(K), np.random.default_rng(1).standard_normal((400_000, 3, 3)))
    weights = np.exp(np.sum(F[:, np.arange(3), codes] - np.log(np.exp(F).sum(axis=2)), axis=1))
    brute_force = np.log(weights.mean())
    brute_force_error = weights.std() / weights.mean() / np.sqrt(len(weights))
    result = ais_log_evidence(K, codes, SoftmaxLikelihood(), rng=2, n_temperatures=300, n_chains=64, start=start)
    assert result.start == start
    assert abs(result.log_evidence - brute_force) < 4 * np.hypot(result.std_error, brute_force_error)


@pytest.mark.parametrize("start", ["laplace", "prior"])
def test_multinomial_probit_ais_matches_the_orthant_probability(start):
    K, codes = three_point_problem()
    exact = multinomial_probit_orthant_evidence(K, codes, tol=1e-4)
    result = ais_log_evidence(K, codes, MultinomialProbitLikelihood(n_nodes=16), rng=3, n_temperatures=300,
                              n_chains=64, start=start)  # fmt: skip
    assert abs(result.log_evidence - exact.log_evidence) < 4 * result.std_error + 0.005


def test_a_shared_kernel_and_one_per_class_give_the_same_run():
    K, codes = three_point_problem()
    shared = ais_log_evidence(K, codes, SoftmaxLikelihood(), rng=4, n_temperatures=20, n_chains=4, warn=False)
    stacked = ais_log_evidence(np.stack([K] * 3), codes, SoftmaxLikelihood(), rng=4, n_temperatures=20, n_chains=4,
                               warn=False)  # fmt: skip
    assert shared == stacked  # the log weights are not compared
    with_empty_class = ais_log_evidence(K, np.array([0, 1, 1]), SoftmaxLikelihood(), rng=4, n_temperatures=20,
                                        n_chains=4, n_classes=3, warn=False)  # fmt: skip
    assert np.isfinite(with_empty_class.log_evidence)


# --------------------------------------------------------------------------- the interface
def test_ais_is_reproducible_and_checks_its_input():
    X = np.linspace(-1, 1, 5)[:, None]
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0])
    K = SEKernel().K(X)
    a = ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_temperatures=50, n_chains=4)
    b = ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_temperatures=50, n_chains=4)
    assert isinstance(a, AISEstimate) and a.log_evidence == b.log_evidence and a.std_error == b.std_error
    estimate, standard_error = a
    assert estimate == a.log_evidence and standard_error == a.std_error
    with pytest.raises(ValueError, match="n_chains"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, n_chains=1)
    with pytest.raises(ValueError, match="one label per row"):
        ais_log_evidence(K, y[:3], ProbitLikelihood(), rng=7)
    with pytest.raises(ValueError, match="exponent"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, exponent=0.0)
    with pytest.raises(ValueError, match="start"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, start="laplace")
    with pytest.raises(ValueError, match="start"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=7, start="posterior")
    with pytest.raises(ValueError, match="start"):
        ais_log_evidence(K, np.array([0, 1, 2, 0, 1]), SoftmaxLikelihood(), rng=7, start="ep")
    with pytest.raises(ValueError, match="outside 0..2"):
        ais_log_evidence(np.stack([K] * 3), np.array([0, 1, 3, 0, 1]), SoftmaxLikelihood(), rng=7)
    with pytest.raises(ValueError, match="rng"):
        ais_log_evidence(K, y, ProbitLikelihood(), rng=None)
    with pytest.raises(TypeError):
        ais_log_evidence(K, y, ProbitLikelihood(), 7)  # rng is keyword-only


# --------------------------------------------------------------------------- the stored validation
def test_the_stored_validation_meets_its_criteria():
    """book/results/ais_validation.json (``make reproduce ONLY=ais_validation``): every probit point passes."""
    stored = json.loads(RESULTS.read_text(encoding="utf-8"))
    criteria = stored["criteria"]
    rows = stored["ais_probit"]
    assert len(rows) >= 6 and {row["problem"] for row in rows} >= {"toy"}
    for row in rows:
        assert len(row["estimates"]) >= 10
        assert row["exact_std_error"] < 0.01
        assert abs(row["mean"] - row["exact"]) <= criteria["max_mean_error"]
        assert abs(row["mean"] - row["exact"]) <= criteria["within_standard_errors"] * row["rms_std_error"]
        assert row["mean_ess"] >= row["n_chains"] / 4  # Kish's ESS of the weights, reported per run
        assert criteria["ratio_low"] <= row["ratio"] <= criteria["ratio_high"]
        errors = np.abs(np.array(row["estimates"]) - row["exact"])
        assert np.mean(errors <= 2 * np.hypot(row["std_errors"], row["exact_std_error"])) >= 0.8
        assert row["passes"]
    corners = {(row["log_lengthscale"], row["log_sf"]) for row in rows if row["problem"] == "toy"}
    assert {(-3.0, 4.0), (-2.0, 4.0), (-2.0, 2.0), (0.0, 3.0)} <= corners  # the points issue 21 names
    for row in stored["orthant_repeats"]:
        # The orthant's standard error must not understate the spread of ten randomisations. It may overstate
        # it (stored: 2.07 at (−2, 4), one round of 16 × 1024 points): that errs on the safe side, and ten runs
        # give the spread only to about ±25 %.
        assert 0.5 <= row["ratio"] <= 2.5


def test_the_stored_logistic_validation():
    """book/results/ais_validation_logistic.json (``make reproduce ONLY=ais_validation_logistic``, issue 30 item 7).

    n = 3: the quadrature converged (node doubling moves it by < 1e-3 nats), and every mean of ten runs is within
    0.01 nats of it; the reported standard error never understates the spread (it may overstate it, on the safe
    side, where both are ~1e-4). n = 50 at the toy's worst-ESS point: the defaults within two standard errors of a
    run twenty times longer, whose own standard error is several times smaller.
    """
    stored = json.loads((RESULTS.parent / "ais_validation_logistic.json").read_text(encoding="utf-8"))
    assert stored["provenance"]["dirty"] is False
    assert len(stored["small"]) >= 5
    for row in stored["small"]:
        assert row["quadrature_error"] < 1e-3 and len(row["estimates"]) == 10
        assert abs(row["error"]) < 0.01 and row["ratio"] >= stored["criteria"]["ratio_low"]
    far = stored["long_point"]
    assert far["long"]["std_error"] < far["rms_std_error"] / 3
    assert abs(far["error"]) <= 2 * np.hypot(far["rms_std_error"] / np.sqrt(10), far["long"]["std_error"])


def test_the_stored_multiclass_gold_standard():
    """book/results/multiclass_gold.json (``make reproduce ONLY=multiclass_gold``).

    n = 3, ten runs each: the softmax AIS mean within 0.01 nats and two standard errors of brute force, the
    multinomial-probit AIS likewise of the orthant probability (which the brute-force frequency confirms),
    and the reported standard errors match the runs' spread. n = 30: the multinomial-probit AIS within two
    standard errors of the orthant, and the 3 × 3 softmax grid has every point, its standard errors and ESS.
    """
    stored = json.loads(MULTICLASS_RESULTS.read_text(encoding="utf-8"))
    tiny = stored["tiny"]
    for key in ("softmax_ais", "multinomial_probit_ais"):
        row = tiny[key]
        assert len(row["estimates"]) >= 10
        assert abs(row["error"]) < 0.01
        assert abs(row["error"]) <= 2 * np.hypot(row["rms_std_error"], row["exact_std_error"])
        assert 0.5 <= row["ratio"] <= 2.0 and row["passes"]
    brute_force_gap = tiny["multinomial_probit_brute_force"] - tiny["multinomial_probit_orthant"]
    assert abs(brute_force_gap) < 4 * tiny["multinomial_probit_brute_force_std_error"]
    grid = stored["grid"]
    probit = grid["multinomial_probit"]  # n = 30, three runs: AIS against the orthant probability
    assert abs(probit["error"]) <= 2 * np.hypot(probit["rms_std_error"], probit["exact_std_error"])
    points = {(row["log_lengthscale"], row["log_sf"]) for row in grid["softmax"]}
    assert len(points) == 9
    for row in grid["softmax"]:
        assert len(row["estimates"]) == grid["n_runs"]
        assert np.isfinite(row["laplace_minus_ais"]) and 0 < row["std_error_of_mean"] < 1
        assert row["mean_ess"] > 0


# ------------------------------------------------------------------ the plain core (Algorithm 14.1) and the driver
def _prior_start_problem(variance):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return SEKernel(variance=variance, lengthscale=1.0, jitter=1e-6).K(X), y


def test_core_is_the_driver_from_the_prior():
    """ais_log_evidence runs the core's annealing step and weight summary: from the prior, with one transition
    per temperature and the same rng, both make the same draws and return the same estimate."""
    K, y = _prior_start_problem(4.0)
    likelihood = ProbitLikelihood()
    driver = ais_log_evidence(K, y, likelihood, rng=3, n_temperatures=200, n_chains=32, start="prior")
    core = ais_core(lambda F: np.sum(likelihood.log_p(y, F), axis=-1), lambda F: np.zeros(F.shape[0]),
                    np.zeros(len(y)), cholesky(K).L, 0.0, n_temperatures=200, n_chains=32, exponent=2.0,
                    rng=np.random.default_rng(3))  # fmt: skip
    assert core.log_evidence == driver.log_evidence and core.std_error == driver.std_error
    np.testing.assert_array_equal(core.log_weights, driver.log_weights)


def test_the_driver_warns_where_few_chains_carry_the_weight_and_the_core_does_not():
    """From the prior at a large signal variance and a short schedule the weights collapse onto a few chains:
    the driver says so (effective sample size below S/4), the core returns the same estimate silently."""
    K, y = _prior_start_problem(np.exp(8.0))
    likelihood = ProbitLikelihood()
    with pytest.warns(ConvergenceWarning, match="effective sample size"):
        driver = ais_log_evidence(K, y, likelihood, rng=1, n_temperatures=5, n_chains=32, start="prior")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        core = ais_core(lambda F: np.sum(likelihood.log_p(y, F), axis=-1), lambda F: np.zeros(F.shape[0]),
                        np.zeros(len(y)), cholesky(K).L, 0.0, n_temperatures=5, n_chains=32, exponent=2.0,
                        rng=np.random.default_rng(1))  # fmt: skip
    assert core.effective_sample_size == driver.effective_sample_size < 8
