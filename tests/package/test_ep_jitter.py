"""The EP learners reject a point where EP needed jitter, as they reject one where EP cannot run.

A factorisation inside EP (B = I + S½KS½, C, or M) that needs more jitter than requested gives the evidence
and gradient of another model: the direct maximiser's line search once met jitter up to 5e11 on B and handed
those evidences to L-BFGS-B. Here a JitterWarning is injected at one EP run, with a wrong (inflated) evidence
behind it, and the learners must behave as if that point could not be evaluated.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import gpc_ref.ep_learning as ep_learning
from gpc_ref import ConvergenceWarning
from gpc_ref.ep_learning import em_ep
from gpc_ref.ep_learning import maximize_ep_evidence
from gpc_ref.kernels import SEKernel
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.linalg import JitterWarning

JITTER_MESSAGE = "B = I + S½KS½ was not numerically positive definite; added jitter 5.45e+11 to its diagonal"


def _problem(seed=3, n=25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _inject(monkeypatch, at_calls, *, warn=True, inflate=50.0):
    """Make the EP runs numbered ``at_calls`` (from 1) emit a JitterWarning (if ``warn``) and report an evidence
    ``inflate`` nats too high, as a wrongly jittered factorisation can; returns the list of kernels EP ran at."""
    real = ep_learning.trusted_ep_with_fallback  # the learners' EP, on arguments they checked once
    calls = []

    def jittered(K, y, *args, **kwargs):
        calls.append(K.copy())
        result, damping = real(K, y, *args, **kwargs)
        if len(calls) in at_calls:
            if warn:
                warnings.warn(JITTER_MESSAGE, JitterWarning, stacklevel=2)
            result = dataclasses.replace(result, log_evidence=result.log_evidence + inflate)
        return result, damping

    monkeypatch.setattr(ep_learning, "trusted_ep_with_fallback", jittered)
    return calls


def test_direct_maximisation_rejects_a_jittered_evaluation_and_reaches_the_same_optimum(monkeypatch):
    X, y = _problem()
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    reference = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood())
    assert reference.converged and reference.optimization.n_failed == 0

    # the control: the same inflated evidence without the warning is taken at face value, and the search
    # returns the wrong point (so the injection below would matter if it were not rejected)
    with monkeypatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # its best point is the phantom, with a large gradient
        _inject(patch, at_calls={3}, warn=False)
        control = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood())
    assert control.optimization.value > reference.log_evidence + 40.0
    assert control.log_evidence < reference.log_evidence - 1e-3

    # with the JitterWarning the evaluation is a failed one: rejected, counted, and no warning escapes
    calls = _inject(monkeypatch, at_calls={3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitterWarning)
        fit = maximize_ep_evidence(kernel, X, y, likelihood=ProbitLikelihood())
    assert len(calls) > 3
    assert fit.optimization.n_failed == 1
    assert fit.converged
    assert fit.optimization.value == pytest.approx(reference.log_evidence, abs=1e-6)
    assert fit.log_evidence == pytest.approx(reference.log_evidence, abs=1e-6)
    np.testing.assert_allclose(fit.kernel.theta, reference.kernel.theta, atol=1e-3)


def test_a_start_where_ep_needs_jitter_is_skipped_like_a_start_that_cannot_be_evaluated(monkeypatch):
    X, y = _problem()
    _inject(monkeypatch, at_calls={1})
    with pytest.raises(ValueError, match="could not be evaluated at any starting point"):
        maximize_ep_evidence(SEKernel(), X, y, likelihood=ProbitLikelihood())


def test_em_ep_treats_a_jittered_proposal_as_one_where_ep_cannot_run(monkeypatch):
    X, y = _problem()
    kernel = SEKernel(variance=1.0, lengthscale=1.0)
    options = {"likelihood": ProbitLikelihood(), "tol": 1e-4, "max_iter": 400, "acceleration": "squarem"}
    reference = em_ep(kernel, X, y, **options)
    # EP run 1 is the start (taken as given); 2 and 3 are the first proposal, warm- and cold-started
    _inject(monkeypatch, at_calls={2, 3})
    real_ep_at, thetas = ep_learning._ep_at, []

    def recording_ep_at(current, *args, **kwargs):
        thetas.append(current.theta.copy())
        return real_ep_at(current, *args, **kwargs)

    monkeypatch.setattr(ep_learning, "_ep_at", recording_ep_at)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitterWarning)
        rescued = em_ep(kernel, X, y, **options)
    # the proposal was retried from the prior, then the step from the start halved, as where EP cannot run
    np.testing.assert_array_equal(thetas[1], thetas[2])
    np.testing.assert_allclose(thetas[3], kernel.theta + 0.5 * (thetas[1] - kernel.theta))
    # nothing inflated was kept: no E-step in the history is 50 nats too high, and the optimum is the same
    assert np.all(rescued.history[:, 0] < reference.log_evidence + 1e-3)
    assert rescued.converged
    assert rescued.log_evidence == pytest.approx(reference.log_evidence, abs=1e-3)
