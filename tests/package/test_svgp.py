"""The sparse variational GP classifier's core (gpc_ref.svgp, issue 32): the identities the chapter will assert."""

import numpy as np
import pytest

from gpc_ref import SEKernel
from gpc_ref.kl import kl_gaussian
from gpc_ref.svgp import svgp_bound
from gpc_ref.svgp import svgp_fit
from gpc_ref.svgp import svgp_natural_step
from gpc_ref.svgp import svgp_prior


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=80) > 0, 1.0, -1.0)
    return X, y, SEKernel(variance=4.0, lengthscale=1.0, jitter=1e-6)


@pytest.mark.parametrize("likelihood", ["logistic", "probit"])
def test_with_every_point_inducing_the_bound_is_the_kl_methods(problem, likelihood):
    """At Z = X (M = n) the optimum of the sparse bound is the KL method's bound at the same θ: q(f) is then any
    Gaussian (up to the jitter of K_uu, which the conditional p(f | u) keeps, here 1e-6)."""
    X, y, kernel = problem
    fit = svgp_fit(kernel, X, y, X, likelihood)
    assert fit.converged
    assert fit.log_bound == pytest.approx(kl_gaussian(kernel.K(X), y, likelihood).log_bound, abs=1e-4)


@pytest.mark.parametrize("likelihood", ["logistic", "probit"])
def test_the_optimum_bound_rises_with_the_inducing_points_and_stays_below_kls(problem, likelihood):
    X, y, kernel = problem
    bounds = [svgp_fit(kernel, X, y, X[:M], likelihood).log_bound for M in (5, 10, 20, 40)]
    assert all(b > a for a, b in zip(bounds, bounds[1:]))  # nested Z: a larger family of q(f)
    assert bounds[-1] <= kl_gaussian(kernel.K(X), y, likelihood).log_bound + 1e-6


def test_the_minibatch_bound_and_step_are_unbiased(problem):
    """Over a partition of the points into equal minibatches the estimates average to the full-batch values exactly:
    the bound, and the step's targets (at β = 1 the step is the target)."""
    X, y, kernel = problem
    Z = X[:10]
    q = svgp_fit(kernel, X, y, Z).posterior
    q = svgp_natural_step(kernel, X, y, Z, q, beta=0.5)  # not at the fixed point, so that the step moves
    parts = np.array_split(np.random.default_rng(1).permutation(len(y)), 8)
    full = svgp_bound(kernel, X, y, Z, q).log_bound
    assert np.mean([svgp_bound(kernel, X, y, Z, q, batch=b).log_bound for b in parts]) == pytest.approx(full, abs=1e-9)
    full_step = svgp_natural_step(kernel, X, y, Z, q)
    steps = [svgp_natural_step(kernel, X, y, Z, q, batch=b) for b in parts]
    assert np.allclose(np.mean([s.precision for s in steps], axis=0), full_step.precision, atol=1e-9)
    assert np.allclose(np.mean([s.theta1 for s in steps], axis=0), full_step.theta1, atol=1e-9)


def test_a_stochastic_fit_nears_the_full_optimum_and_says_it_has_not_converged(problem):
    X, y, kernel = problem
    full = svgp_fit(kernel, X, y, X[:20])
    stochastic = svgp_fit(kernel, X, y, X[:20], batch_size=16, rng=0, n_epochs=40)
    assert abs(stochastic.log_bound - full.log_bound) < 0.05
    assert not stochastic.converged  # constant steps keep the minibatch noise: the full-batch test says so


def test_bad_input_is_refused_by_name(problem):
    X, y, kernel = problem
    with pytest.raises(ValueError, match="beta"):
        svgp_natural_step(kernel, X, y, X[:5], svgp_prior(5), beta=1.5)
    with pytest.raises(ValueError, match="y"):
        svgp_bound(kernel, X, np.full(80, 2.0), X[:5], svgp_prior(5))
    with pytest.raises((ValueError, TypeError), match="rng"):
        svgp_fit(kernel, X, y, X[:5], batch_size=10)
