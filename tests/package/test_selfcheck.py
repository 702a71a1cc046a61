"""gpc_ref.selfcheck: the reference and independent correct implementations pass, buggy ones fail.

For each check, a plain implementation written here from the book's equations (dense linear algebra
where the book's box uses a stable form, a tuple or dict instead of the result class) must pass:
that shows the tolerances accept a different correct implementation, not only the reference
itself. A perturbed version — a flipped sign, a missing factor, a forgotten term, the chapter's own
pitfalls (linear-space Φ, the printed order of G&R eqs 5.2–5.4) — must fail with a message that
names the case, the field, the expected and returned values and the tolerance.
"""

import dataclasses
import inspect

import numpy as np
import pytest
from scipy.linalg import solve_triangular
from scipy.special import expit
from scipy.special import log_ndtr
from scipy.special import ndtr

import gpc_ref
import gpc_ref.selfcheck as selfcheck
from gpc_ref.ep import expectation_propagation
from gpc_ref.ep import site_likelihood
from gpc_ref.ep import tilted_moments
from gpc_ref.laplace import laplace_evidence
from gpc_ref.laplace import laplace_mode
from gpc_ref.laplace_multiclass import softmax_laplace_mode
from gpc_ref.likelihoods import ProbitLikelihood
from gpc_ref.variational_bounds import update_nu
from gpc_ref.vb_probit import vb_probit_multiclass

REQUIRED = {  # the boxes the issue names: the Laplace mode, its evidence and gradient, EP, JJ, VB probit, IVM
    "laplace_mode",
    "laplace_evidence_gradient",
    "expectation_propagation",
    "tilted_moments",
    "lower_bound",
    "vb_probit_binary",
    "adf_include",
}


def _reference(name):
    """The function of that name in gpc_ref's modules (each check's name is its reference's name)."""
    import importlib
    import pkgutil

    found = []
    for module_info in pkgutil.iter_modules(gpc_ref.__path__):
        module = importlib.import_module(f"gpc_ref.{module_info.name}")
        if module_info.name != "selfcheck" and inspect.isfunction(getattr(module, name, None)):
            if getattr(module, name).__module__ == module.__name__:
                found.append(getattr(module, name))
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def _assert_useful_failure(result, name):
    assert result.passed is False and result.name == name
    text = str(result)
    assert text == result.message
    assert "case" in text and "failed" in text and f"inputs({name!r}" in text
    compared = "expected" in text and "got" in text and ("tolerance" in text or "non-finite" in text)
    assert compared or "raised" in text or "returned" in text
    source = inspect.getsource(_reference(name))
    body = [line.strip() for line in source.splitlines() if len(line.strip()) > 25 and not line.strip().startswith("#")]
    assert not [line for line in body if line in text], "the message shows reference code"
    return text


# ------------------------------------------------------------------------------------------------ interface
def test_available_covers_the_boxes_and_names_reference_functions():
    names = selfcheck.available()
    assert REQUIRED <= set(names) and len(names) >= 6
    for name in names:
        assert _reference(name).__name__ == name
        description = selfcheck.describe(name)
        assert f"{_reference(name).__module__}.{name}" in description and "Cases: 1." in description


@pytest.mark.filterwarnings("error")  # the reference runs every case without a warning
@pytest.mark.parametrize("name", selfcheck.available())
def test_the_reference_passes_every_case(name):
    result = selfcheck.check(name, _reference(name))
    assert result.passed is True and result.n_passed == result.n_cases >= 3, result.message
    assert result.message.startswith(f"{name}: passed all {result.n_cases} cases")


def test_bad_arguments_get_clear_errors():
    with pytest.raises(ValueError, match="name must be one of .*laplace_mode"):
        selfcheck.check("laplace", laplace_mode)
    with pytest.raises(ValueError, match="function must be callable"):
        selfcheck.check("laplace_mode", "laplace_mode")
    with pytest.raises(ValueError, match="case must be an integer from 1 to 5"):
        selfcheck.inputs("laplace_mode", 0)


def test_inputs_reproduce_a_case():
    args, kwargs = selfcheck.inputs("laplace_mode", 3)  # duplicate inputs
    K, y = args
    assert K.shape == (10, 10) and kwargs == {} and set(np.unique(y)) == {-1.0, 1.0}
    assert np.linalg.matrix_rank(K, tol=1e-6) <= 5  # every input twice
    args[0][0, 0] = 99.0  # a fresh copy each time
    assert selfcheck.inputs("laplace_mode", 3)[0][0][0, 0] != 99.0


def test_an_exception_is_a_failing_case():
    def broken(K, y):
        raise np.linalg.LinAlgError("Matrix is not positive definite")

    text = _assert_useful_failure(selfcheck.check("laplace_mode", broken), "laplace_mode")
    assert "case 1 of 5 failed: random" in text and "raised LinAlgError: Matrix is not positive definite" in text


def test_results_of_the_wrong_form_are_reported():
    text = selfcheck.check("laplace_mode", lambda K, y: "done").message
    assert "returned a str; expected a dict or an object with the fields f, log_evidence" in text
    text = selfcheck.check("laplace_mode", lambda K, y: {"f": laplace_mode(K, y).f}).message
    assert "without the field(s) log_evidence" in text
    text = selfcheck.check("laplace_mode", lambda K, y: (laplace_mode(K, y).f[:-1], 0.0)).message
    assert "f: expected shape (10,) (10 entries), got shape (9,)" in text


# ------------------------------------------------------------------------------------------------ Laplace
def scratch_laplace_mode(K, y, sign=1.0):
    """W&B eq 7 in GPML's B form, returning the tuple (f, log q); ``sign=-1`` flips ∇log p in b."""
    n, t = len(y), (y + 1) / 2
    f = np.zeros(n)
    for _ in range(200):
        pi = expit(f)
        sqrt_W = np.sqrt(pi * (1 - pi))
        L = np.linalg.cholesky(np.eye(n) + sqrt_W[:, None] * K * sqrt_W)
        b = pi * (1 - pi) * f + sign * (t - pi)
        a = b - sqrt_W * solve_triangular(L.T, solve_triangular(L, sqrt_W * (K @ b), lower=True))
        f, f_old = K @ a, f
        if np.max(np.abs(f - f_old)) < 1e-11:
            break
    pi = expit(f)
    sqrt_W = np.sqrt(pi * (1 - pi))
    L = np.linalg.cholesky(np.eye(n) + sqrt_W[:, None] * K * sqrt_W)
    log_q = np.sum(-np.logaddexp(0.0, -y * f)) - 0.5 * a @ f - np.sum(np.log(np.diag(L)))
    return f, log_q


def test_laplace_mode_scratch_passes_and_a_flipped_sign_fails():
    assert selfcheck.check("laplace_mode", scratch_laplace_mode).passed
    result = selfcheck.check("laplace_mode", lambda K, y: scratch_laplace_mode(K, y, sign=-1.0))
    text = _assert_useful_failure(result, "laplace_mode")
    assert "case 1 of 5 failed: random" in text and "f: largest error" in text


def scratch_laplace_gradient(mode, K, dK, implicit=True):
    """The gradient of log q, dense (W&B 1997 §2.3; the chapter's from-scratch version)."""
    y, f = mode.y, mode.f
    t, pi, n = (y + 1) / 2, expit(f), len(y)
    W = pi * (1 - pi)
    R = np.linalg.inv(K + np.diag(1.0 / W))  # (K + W⁻¹)⁻¹
    Sigma = K - K @ R @ K  # (K⁻¹ + W)⁻¹
    dW_df = W * (1 - 2 * pi)  # ∂W_ii/∂f_i for the logistic likelihood
    dlogq_df = -0.5 * np.diag(Sigma) * dW_df
    a = t - pi
    gradient = []
    for dK_j in dK:
        explicit = 0.5 * a @ dK_j @ a - 0.5 * np.sum(R * dK_j)
        df = np.linalg.solve(np.eye(n) + K * W, dK_j @ a)  # (I + KW)⁻¹ ∂K (t − π)
        gradient.append(explicit + (dlogq_df @ df if implicit else 0.0))
    return np.array(gradient)


def test_laplace_gradient_scratch_passes_and_a_forgotten_implicit_term_fails():
    assert selfcheck.check("laplace_evidence_gradient", scratch_laplace_gradient).passed
    result = selfcheck.check("laplace_evidence_gradient", lambda m, K, dK: scratch_laplace_gradient(m, K, dK, False))
    assert "gradient: largest error" in _assert_useful_failure(result, "laplace_evidence_gradient")


def test_laplace_evidence_as_a_dict_passes_and_a_missing_half_fails():
    def as_dict(kernel, X, y):
        evidence = laplace_evidence(kernel, X, y)
        return {"log_evidence": evidence.log_evidence, "gradient": evidence.gradient}

    def log_det_without_half(kernel, X, y):  # log q = Ψ − log|B| instead of Ψ − ½ log|B|
        evidence = laplace_evidence(kernel, X, y)
        extra = np.sum(np.log(np.diag(evidence.mode.L)))
        return {"log_evidence": evidence.log_evidence - extra, "gradient": evidence.gradient}

    assert selfcheck.check("laplace_evidence", as_dict).passed
    text = _assert_useful_failure(selfcheck.check("laplace_evidence", log_det_without_half), "laplace_evidence")
    assert "log_evidence: largest error" in text


def test_softmax_mode_without_the_log_det_of_m_fails():
    def gpml_evidence(K, Y):  # GPML Alg. 3.3 omits Σ log M_ii from log q (the reference's docstring)
        mode = softmax_laplace_mode(K, Y)
        return dataclasses.replace(mode, log_evidence=mode.log_evidence + np.sum(np.log(np.diag(mode.M))))

    text = _assert_useful_failure(selfcheck.check("softmax_laplace_mode", gpml_evidence), "softmax_laplace_mode")
    assert "log_evidence: largest error" in text


# ------------------------------------------------------------------------------------------------ EP
def scratch_tilted(y, mean_cav, var_cav, epsilon=0.0, latent_noise=1.0, log_space=True, beta_sign=1.0):
    """log Z_i, α_i, β_i of ε + (1 − 2ε)Φ(y f/√s) against N(f | μ₋ᵢ, σ²₋ᵢ), as a dict."""
    y, mean_cav, var_cav = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (y, mean_cav, var_cav)))
    v = latent_noise + var_cav
    z = y * mean_cav / np.sqrt(v)
    if log_space:
        log_Z = log_ndtr(z) if epsilon == 0 else np.logaddexp(np.log(epsilon), np.log1p(-2 * epsilon) + log_ndtr(z))
    else:
        log_Z = np.log(epsilon + (1 - 2 * epsilon) * ndtr(z))
    log_phi = -0.5 * z**2 - 0.5 * np.log(2 * np.pi)
    ratio = np.exp(np.log1p(-2 * epsilon) + log_phi - log_Z)  # (1 − 2ε)φ(z)/Z
    alpha = ratio * y / np.sqrt(v)
    beta = alpha * (alpha + beta_sign * y * z / np.sqrt(v))
    return {"log_Z": log_Z, "alpha": alpha, "beta": beta}


def test_tilted_moments_scratch_passes_and_linear_space_or_a_sign_fails():
    assert selfcheck.check("tilted_moments", scratch_tilted).passed
    with np.errstate(all="ignore"):
        linear = selfcheck.check("tilted_moments", lambda *a, **k: scratch_tilted(*a, **k, log_space=False))
    text = _assert_useful_failure(linear, "tilted_moments")
    assert "case 2 of 5 failed: probit, cavities far in the tails" in text and "non-finite" in text
    text = _assert_useful_failure(
        selfcheck.check("tilted_moments", lambda *a, **k: scratch_tilted(*a, **k, beta_sign=-1.0)), "tilted_moments"
    )
    assert "beta: largest error" in text


def scratch_ep(K, y, likelihood=None, nu_sign=1.0, half=0.5):
    """Sequential EP with dense recomputation and the canonical-form evidence; returns a tuple."""
    epsilon, s = site_likelihood(ProbitLikelihood() if likelihood is None else likelihood)
    n = len(y)
    tau, nu = np.zeros(n), np.zeros(n)
    Sigma, mu = K.copy(), np.zeros(n)
    for _ in range(500):
        tau_old, nu_old = tau.copy(), nu.copy()
        for i in range(n):
            tau_cav, nu_cav = 1 / Sigma[i, i] - tau[i], mu[i] / Sigma[i, i] - nu[i]
            if tau_cav <= 0:
                continue
            m, v = nu_cav / tau_cav, 1 / tau_cav
            moments = scratch_tilted(y[i], m, v, epsilon, s)
            alpha, beta = float(moments["alpha"]), float(moments["beta"])
            tau_new = beta / (1 - v * beta)
            nu_new = (alpha + nu_sign * m * beta) / (1 - v * beta)
            change = tau_new - tau[i]
            tau[i], nu[i] = tau_new, nu_new
            column = Sigma[:, i].copy()
            Sigma = Sigma - change / (1 + change * column[i]) * np.outer(column, column)
            mu = Sigma @ nu
        Sigma = np.linalg.solve(np.eye(n) + K * tau[None, :], K)  # (K⁻¹ + T̃)⁻¹, from the sites
        Sigma = 0.5 * (Sigma + Sigma.T)
        mu = Sigma @ nu
        if max(np.max(np.abs(tau - tau_old)), np.max(np.abs(nu - nu_old))) < 1e-10:
            break
    tau_cav, nu_cav = 1 / np.diag(Sigma) - tau, mu / np.diag(Sigma) - nu
    m, v = nu_cav / tau_cav, 1 / tau_cav
    log_Z = scratch_tilted(y, m, v, epsilon, s)["log_Z"]
    log_Z_site = log_Z + 0.5 * np.log1p(v * tau) - 0.5 * (m / v + nu) ** 2 / (1 / v + tau) + 0.5 * m**2 / v
    log_evidence = np.sum(log_Z_site) - half * np.linalg.slogdet(np.eye(n) + K * tau[None, :])[1] + 0.5 * nu @ mu
    return tau, nu, mu, Sigma, log_evidence


def test_ep_scratch_passes_and_a_flipped_sign_or_a_missing_half_fails():
    assert selfcheck.check("expectation_propagation", scratch_ep).passed
    flipped = selfcheck.check("expectation_propagation", lambda K, y, **k: scratch_ep(K, y, **k, nu_sign=-1.0))
    assert "largest error" in _assert_useful_failure(flipped, "expectation_propagation")
    missing = selfcheck.check("expectation_propagation", lambda K, y, **k: scratch_ep(K, y, **k, half=1.0))
    assert "log_evidence: largest error" in _assert_useful_failure(missing, "expectation_propagation")


def test_ep_without_the_likelihood_argument_fails_on_the_label_noise_case():
    result = selfcheck.check("expectation_propagation", lambda K, y: expectation_propagation(K, y))
    text = _assert_useful_failure(result, "expectation_propagation")
    assert result.n_passed == 5 and "unexpected keyword argument 'likelihood'" in text


def test_tilted_moments_are_compared_after_broadcasting():
    moments = tilted_moments(np.ones(3), np.zeros(3), np.ones(3))
    assert np.allclose(scratch_tilted(np.ones(3), np.zeros(3), np.ones(3))["alpha"], moments.alpha)


# ------------------------------------------------------------------------------------------------ JJ bound
def scratch_lower_bound(K, t, nu, lam_factor=2.0):
    """log Z′, mean and variance of P_Q, dense (G&M eqs 33–34 with the inverse); ``lam_factor=1`` drops the 2 of 2Λ."""
    s = 2 * np.asarray(t, dtype=float) - 1 if np.min(t) >= 0 else np.asarray(t, dtype=float)
    nu = np.abs(np.asarray(nu, dtype=float))
    lam = np.where(nu < 1e-6, 1 / 8 - nu**2 / 96, np.tanh(nu / 2) / (4 * np.where(nu < 1e-6, 1.0, nu)))
    n = len(s)
    W = lam_factor * lam
    Sigma = np.linalg.solve(np.eye(n) + K * W[None, :], K)  # (K⁻¹ + 2Λ)⁻¹
    b = s / 2
    mean = Sigma @ b
    log_Z = (
        np.sum(-np.logaddexp(0.0, -nu) - nu / 2 + lam * nu**2)
        + 0.5 * b @ mean
        - 0.5 * np.linalg.slogdet(np.eye(n) + K * W[None, :])[1]
    )
    return log_Z, mean, np.diag(Sigma)


def test_lower_bound_scratch_passes_and_a_missing_factor_two_fails():
    assert selfcheck.check("lower_bound", scratch_lower_bound).passed
    result = selfcheck.check("lower_bound", lambda K, t, nu: scratch_lower_bound(K, t, nu, lam_factor=1.0))
    assert "log_Z: largest error" in _assert_useful_failure(result, "lower_bound")


def test_update_nu_scratch_passes_and_forgetting_the_variance_fails():
    def scratch_update(K, t, nu, with_variance=True):
        _, mean, var = scratch_lower_bound(K, t, nu)
        return np.sqrt(mean**2 + (var if with_variance else 0.0))

    assert selfcheck.check("update_nu", scratch_update).passed
    assert selfcheck.check("update_nu", lambda K, t, nu: update_nu(K, t, nu)).passed  # the reference's tuple
    result = selfcheck.check("update_nu", lambda K, t, nu: scratch_update(K, t, nu, with_variance=False))
    assert "nu: largest error" in _assert_useful_failure(result, "update_nu")


# ------------------------------------------------------------------------------------------------ VB probit
def scratch_vb_binary(K, t, label_sign=True):
    """G&R eq 4.9 and footnote 6, iterated to a fixed point; returns the posterior mean (n,)."""
    y = np.asarray(t, dtype=float)
    n = len(y)
    L = np.linalg.cholesky(np.eye(n) + K)
    mu = np.zeros(n)
    for _ in range(100_000):
        sign = y if label_sign else np.ones(n)
        log_ratio = -0.5 * mu**2 - 0.5 * np.log(2 * np.pi) - log_ndtr(sign * mu)
        z_tilde = mu + sign * np.exp(log_ratio)  # the mean of the truncated auxiliary
        alpha = solve_triangular(L.T, solve_triangular(L, z_tilde, lower=True))
        mu, mu_old = K @ alpha, mu
        if np.max(np.abs(mu - mu_old)) < 1e-12:
            break
    return mu


def test_vb_binary_scratch_passes_and_a_missing_label_sign_fails():
    assert selfcheck.check("vb_probit_binary", scratch_vb_binary).passed
    result = selfcheck.check("vb_probit_binary", lambda K, t: scratch_vb_binary(K, t, label_sign=False))
    assert "M: largest error" in _assert_useful_failure(result, "vb_probit_binary")


def test_vb_multiclass_stopped_early_fails():
    def three_iterations(K, t):
        return vb_probit_multiclass(K, t, max_iter=3, warn=False)

    result = selfcheck.check("vb_probit_multiclass", three_iterations)
    assert "M: largest error" in _assert_useful_failure(result, "vb_probit_multiclass")


# ------------------------------------------------------------------------------------------------ IVM
def scratch_adf_include(M, var, mean, column, shift, step, n, kernel_of_class, printed_order=False):
    """G&R eqs 5.1–5.4 for each kernel group, returning the new (M, var, mean) instead of updating in place."""
    M, var, mean = M.copy(), var.copy(), mean.copy()
    for g in range(M.shape[0]):
        sigma = column[g] - M[g, :step].T @ M[g, :step, n]  # eq 5.1
        s_old = var[g, n]
        var[g] = var[g] - sigma**2 / (1 + s_old)  # eq 5.2
        s_used = var[g, n] if printed_order else s_old  # the printed order reads the updated s_ci
        M[g, step] = sigma / np.sqrt(1 + s_used)  # eq 5.3
        classes = np.flatnonzero(kernel_of_class == g)
        mean[:, classes] += np.outer(sigma, shift[classes] / (1 + s_used))  # eq 5.4
    return M, var, mean


def test_adf_include_scratch_passes_and_the_printed_order_fails():
    assert selfcheck.check("adf_include", scratch_adf_include).passed
    result = selfcheck.check("adf_include", lambda *args: scratch_adf_include(*args, printed_order=True))
    text = _assert_useful_failure(result, "adf_include")
    assert "M: largest error" in text


def test_adf_include_in_place_is_read_back():
    def in_place(M, var, mean, column, shift, step, n, kernel_of_class):
        M[:], var[:], mean[:] = scratch_adf_include(M, var, mean, column, shift, step, n, kernel_of_class)

    assert selfcheck.check("adf_include", in_place).passed
    result = selfcheck.check("adf_include", lambda *args: None)  # forgot to update anything
    assert not result.passed and "M: largest error" in result.message
