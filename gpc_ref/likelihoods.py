r"""Likelihoods p(y | f) for binary classification and Gaussian–sigmoid integrals.

Notation (book symbol ← code name):

- :math:`y \in \{-1, +1\}` ← ``y`` (W&B, K&G, GPML); G&M's :math:`t = (y+1)/2 \in \{0,1\}` ← ``t``.
- :math:`f` ← ``f``, the latent function value at a training input.
- :math:`\sigma(z) = 1/(1+e^{-z})` the logistic sigmoid; :math:`\Phi` the standard normal CDF,
  :math:`\phi` its density.
- :math:`\mu, s^2` ← ``mu, var``: mean and variance of a Gaussian latent :math:`f_* \sim N(\mu, s^2)`.
- :math:`\epsilon` ← ``epsilon`` (K&G's labelling-error rate), :math:`v` ← ``latent_noise``
  (K&G's :math:`v_2`).

All log-likelihoods are evaluated in log space (``np.logaddexp``,
``scipy.special.log_ndtr``) so that they stay finite for |f| in the hundreds.

References
----------
- [WB98] Williams & Barber (1998): logistic likelihood, Newton iteration.
- [GM00] Gibbs & MacKay (2000), eq 23: MacKay's probit approximation.
- [MacKay92] MacKay (1992): the evidence framework for classification.
- [KG03] Kim & Ghahramani, eq 9: the label-noise likelihood.
- [GR06] Girolami & Rogers (2006), eqs 3.1, 4.3, 4.4, 5.5 and Appendix B: the multinomial probit.
- [GPML] Rasmussen & Williams (2006), §3.4–3.6, eq 3.82 (the probit integral).
"""
from __future__ import annotations

import numpy as np
from scipy import integrate
from scipy.special import expit, log_ndtr, logsumexp, ndtr

from .validation import check_positive

__all__ = [
    "log_sigmoid",
    "log_normal_cdf",
    "normal_pdf_over_cdf",
    "LogisticLikelihood",
    "ProbitLikelihood",
    "LabelNoiseLikelihood",
    "MultinomialProbitLikelihood",
    "sigmoid_gaussian_mackay",
    "sigmoid_gaussian_erf_mixture",
    "sigmoid_gaussian_quadrature",
    "sigmoid_gaussian_exact",
    "probit_gaussian",
    "gauss_hermite_expectation",
    "ERF_MIXTURE_SCALES",
    "ERF_MIXTURE_COEFFICIENTS",
]


def log_sigmoid(z):
    """log σ(z) = −log(1 + e^{−z}), exact for any finite z."""
    return -np.logaddexp(0.0, -np.asarray(z, dtype=float))


def log_normal_cdf(z):
    """log Φ(z), accurate far into the lower tail."""
    return log_ndtr(np.asarray(z, dtype=float))


def normal_pdf_over_cdf(z):
    """The inverse Mills ratio φ(z)/Φ(z), computed in log space.

    For z → −∞ it grows like −z; computing φ and Φ separately would give 0/0.
    """
    z = np.asarray(z, dtype=float)
    log_pdf = -0.5 * z**2 - 0.5 * np.log(2.0 * np.pi)
    return np.exp(log_pdf - log_ndtr(z))


def _check_pm1(y, f):
    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1} (use validation.check_binary_labels to convert)")
    return y, f


class LogisticLikelihood:
    r"""p(y | f) = σ(y f).

    With :math:`t = (y+1)/2` and :math:`\pi = \sigma(f)` (W&B's notation), the
    derivatives of :math:`\log p(y|f)` in :math:`f` are

    .. math:: t - \pi, \qquad -\pi(1-\pi), \qquad -\pi(1-\pi)(1-2\pi).
    """

    name = "logistic"

    def log_p(self, y, f):
        """log σ(y f), elementwise."""
        y, f = _check_pm1(y, f)
        return log_sigmoid(y * f)

    def derivatives(self, y, f):
        """First, second and third derivatives of log p(y|f) with respect to f."""
        y, f = _check_pm1(y, f)
        pi, one_minus_pi = expit(f), expit(-f)  # 1 − π from expit(−f): no cancellation for large f
        # t − π = y σ(−y f), exact in the tails (1 − π computed as 1 − expit(f) loses all digits)
        d1 = y * expit(-y * f)
        d2 = -pi * one_minus_pi
        d3 = d2 * (one_minus_pi - pi)
        return d1, d2, d3

    def predict(self, mu, var, method="erf_mixture"):
        """P(y = +1) = ∫ σ(f) N(f | μ, s²) df by the named approximation.

        ``method`` is ``"erf_mixture"`` (W&B), ``"mackay"`` (G&M eq 23),
        ``"quadrature"`` (Gauss–Hermite) or ``"exact"`` (adaptive quadrature).
        """
        methods = {
            "erf_mixture": sigmoid_gaussian_erf_mixture,
            "mackay": sigmoid_gaussian_mackay,
            "quadrature": sigmoid_gaussian_quadrature,
            "exact": sigmoid_gaussian_exact,
        }
        if method not in methods:
            raise ValueError(f"method must be one of {sorted(methods)}; got {method!r}")
        return methods[method](mu, var)


class ProbitLikelihood:
    r"""p(y | f) = Φ(y f).

    With :math:`z = yf` and :math:`r = \phi(z)/\Phi(z)` the derivatives of
    :math:`\log\Phi(yf)` in :math:`f` are

    .. math:: y r, \qquad -r(z + r), \qquad y\,r\,\bigl((z+r)(z+2r) - 1\bigr).

    For z < −20 the last two lose precision to cancellation and their
    asymptotic series are used instead (relative error below 1e-7 there).

    The predictive integral is exact: :math:`\int \Phi(f) N(f|\mu,s^2)\,df =
    \Phi(\mu/\sqrt{1+s^2})` (GPML eq 3.82).
    """

    name = "probit"

    def log_p(self, y, f):
        """log Φ(y f), elementwise."""
        y, f = _check_pm1(y, f)
        return log_ndtr(y * f)

    def derivatives(self, y, f):
        """First, second and third derivatives of log p(y|f) with respect to f."""
        y, f = _check_pm1(y, f)
        z = y * f
        r = normal_pdf_over_cdf(z)
        d1 = y * r
        d2 = -r * (z + r)
        d3 = y * r * ((z + r) * (z + 2.0 * r) - 1.0)
        # Far in the lower tail z + r ≈ 1/|z| is the difference of two large
        # numbers and the formulas above lose digits (1e-5 relative at z = −30).
        # There the asymptotic (Mills-ratio) series are used, with u = 1/z²:
        #   d²/dz² log Φ = −1 + u − 6u² + 50u³ − 518u⁴ + 6354u⁵,
        #   d³/dz³ log Φ = (2/|z|³)(1 − 12u + 150u² − 2072u³ + 31770u⁴),
        # accurate to 1e-7 relative or better for z < −20 (checked at 100 digits).
        tail = z < -20.0
        if np.any(tail):
            x = -z[tail]
            u = 1.0 / x**2
            d2 = np.array(d2, dtype=float, copy=True)
            d3 = np.array(d3, dtype=float, copy=True)
            d2[tail] = -1.0 + u * (1.0 + u * (-6.0 + u * (50.0 + u * (-518.0 + u * 6354.0))))
            d3[tail] = (np.broadcast_to(y, z.shape)[tail] * 2.0 / x**3
                        * (1.0 + u * (-12.0 + u * (150.0 + u * (-2072.0 + u * 31770.0)))))
        return d1, d2, d3

    def predict(self, mu, var, method="exact"):
        """P(y = +1) = Φ(μ/√(1+s²)); ``method`` is accepted for a uniform interface."""
        if method not in ("exact", "erf_mixture", "mackay", "quadrature"):
            raise ValueError(f"unknown method {method!r}")
        return probit_gaussian(mu, var)


class LabelNoiseLikelihood:
    r"""Kim & Ghahramani's likelihood with labelling errors and latent noise (eq 9).

    .. math:: p(y|f) = \epsilon + (1 - 2\epsilon)\,\Phi\!\left(\frac{y f}{\sqrt{v}}\right),

    the step function H(y f) blurred by Gaussian latent noise of variance
    :math:`v`. ``latent_noise=0`` gives the hard step
    :math:`\epsilon + (1-2\epsilon)H(yf)`; ``epsilon=0`` and ``latent_noise=1``
    give the probit likelihood.
    """

    name = "label_noise"

    def __init__(self, epsilon=0.0, latent_noise=1.0):
        epsilon = float(epsilon)
        if not 0.0 <= epsilon < 0.5:
            raise ValueError(f"epsilon must lie in [0, 0.5); got {epsilon}")
        self.epsilon = epsilon
        self.latent_noise = float(check_positive(latent_noise, "latent_noise", allow_zero=True))

    def __repr__(self):
        return f"LabelNoiseLikelihood(epsilon={self.epsilon:.4g}, latent_noise={self.latent_noise:.4g})"

    def _log_mix(self, log_phi):
        # log(ε + (1−2ε)Φ) without leaving log space: logaddexp(log ε, log(1−2ε) + log Φ)
        if self.epsilon == 0.0:
            return log_phi
        return np.logaddexp(np.log(self.epsilon), np.log1p(-2.0 * self.epsilon) + log_phi)

    def log_p(self, y, f):
        """log p(y | f) of eq 9."""
        y, f = _check_pm1(y, f)
        z = y * f
        if self.latent_noise == 0.0:
            with np.errstate(divide="ignore"):
                log_phi = np.where(z > 0, 0.0, np.where(z < 0, -np.inf, np.log(0.5)))
        else:
            log_phi = log_ndtr(z / np.sqrt(self.latent_noise))
        return self._log_mix(log_phi)

    def log_integral(self, y, mu, var):
        r"""log ∫ p(y|f) N(f|μ, s²) df = log(ε + (1−2ε) Φ(y μ / √(v + s²)))."""
        y, mu = _check_pm1(y, mu)
        total = self.latent_noise + np.asarray(var, dtype=float)
        if np.any(total <= 0):
            raise ValueError("latent_noise + var must be positive for the label-noise integral")
        return self._log_mix(log_ndtr(y * mu / np.sqrt(total)))

    def predict(self, mu, var, method="exact"):
        """P(y = +1) for a Gaussian latent N(μ, s²)."""
        return np.exp(self.log_integral(np.ones_like(np.asarray(mu, dtype=float)), mu, var))


class MultinomialProbitLikelihood:
    r"""The multinomial probit of Girolami & Rogers (eq 3.1), the shared core of VB, Gibbs and the IVM.

    Each point has K latent values :math:`m_{n1..nK}`; auxiliary
    :math:`y_{nk} = m_{nk} + \epsilon_{nk}`, :math:`\epsilon \sim N(0, 1)`, and
    :math:`t_n = \arg\max_k y_{nk}`. Integrating :math:`y_n` out,

    .. math:: P(t_n = i \mid \mathbf m_n) = E_{u}\Bigl[\prod_{j\ne i}\Phi(u + m_{ni} - m_{nj})\Bigr],
              \qquad u \sim N(0, 1).

    Every expectation over :math:`u` is computed by Gauss–Hermite quadrature
    with ``n_nodes`` nodes, in log space; the paper used 1000 Monte Carlo
    samples. Class codes ``t`` are 0..K−1 (the paper's 1..K minus one).
    """

    name = "multinomial_probit"

    def __init__(self, n_nodes=48):
        if int(n_nodes) < 2:
            raise ValueError(f"n_nodes must be at least 2; got {n_nodes}")
        self.n_nodes = int(n_nodes)
        nodes, weights = np.polynomial.hermite.hermgauss(self.n_nodes)
        # standard-normal rule: u = √2 x, weight w/√π
        self._u = np.sqrt(2.0) * nodes
        self._log_w = np.log(weights / np.sqrt(np.pi))

    def __repr__(self):
        return f"MultinomialProbitLikelihood(n_nodes={self.n_nodes})"

    @staticmethod
    def _check(t, M):
        M = np.asarray(M, dtype=float)
        if M.ndim != 2:
            raise ValueError(f"latent values must have shape (n, K); got {M.shape}")
        t = np.asarray(t)
        if t.shape != (M.shape[0],) or np.any(t != np.round(t)) or np.any(t < 0) or np.any(t >= M.shape[1]):
            raise ValueError(f"t must hold {M.shape[0]} integer class codes in 0..{M.shape[1] - 1}")
        return t.astype(int), M

    def _log_phi_terms(self, t, M, scale_own=None, scale_other=None):
        """log Φ((u·a_i + m_i − m_j)/b_j) for every node u and class j, with the own class zeroed.

        Shape (n, Q, K). ``a`` and ``b`` default to 1 (the plain likelihood).
        """
        n, K = M.shape
        own = M[np.arange(n), t]
        a = 1.0 if scale_own is None else scale_own[:, None, None]
        b = 1.0 if scale_other is None else scale_other[:, None, :]
        A = log_ndtr((self._u[None, :, None] * a + (own[:, None] - M)[:, None, :]) / b)
        A[np.arange(n), :, t] = 0.0
        return A

    def log_p(self, t, M):
        """log P(t_n | m_n) for every point, shape (n,)."""
        t, M = self._check(t, M)
        S = self._log_phi_terms(t, M).sum(axis=2)
        return logsumexp(S + self._log_w, axis=1)

    def predict(self, mean, var):
        r"""P(t = k) for latent values :math:`m_k \sim N(\mu_k, s_k^2)` independently (G&R §4.5, App. B, eq 5.5).

        .. math:: P(t = k) = E_u\Bigl[\prod_{j\ne k}\Phi\Bigl(\frac{u v_k + \mu_k - \mu_j}{v_j}\Bigr)\Bigr],
                  \quad v_j = \sqrt{1 + s_j^2}.

        Returns an (n, K) array. Its rows sum to one up to the quadrature
        error (about 1e-10 with the default nodes), which is not hidden by renormalising.
        """
        mean = np.asarray(mean, dtype=float)
        var = np.broadcast_to(np.asarray(var, dtype=float), mean.shape)
        if mean.ndim != 2:
            raise ValueError(f"mean must have shape (n, K); got {mean.shape}")
        if np.any(var < 0):
            raise ValueError("var must be non-negative")
        v = np.sqrt(1.0 + var)
        n, K = mean.shape
        out = np.empty((n, K))
        for k in range(K):
            t = np.full(n, k)
            S = self._log_phi_terms(t, mean, scale_own=v[:, k], scale_other=v).sum(axis=2)
            out[:, k] = np.exp(logsumexp(S + self._log_w, axis=1))
        return out

    def cone_mean_shift(self, t, M):
        r"""P = E[y_n] − m_n for y_n ~ N(m_n, I) truncated to the cone of class t_n (G&R eqs 4.3, 4.4).

        For :math:`k \ne i = t_n`:

        .. math:: p_{nk} = -\frac{E_u[\phi(u + m_{ni} - m_{nk})\,\Phi_u^{n,i,k}]}
                                 {E_u[\prod_{j\ne i}\Phi(u + m_{ni} - m_{nj})]},\qquad
                  p_{ni} = -\sum_{k\ne i} p_{nk},

        with :math:`\Phi_u^{n,i,k} = \prod_{j\ne i,k}\Phi(u + m_{ni} - m_{nj})`.
        Returns ``(P, log_Z)`` where ``log_Z[n] = log P(t_n | m_n)`` is the
        denominator (the normaliser of the truncated Gaussian).
        """
        t, M = self._check(t, M)
        n, K = M.shape
        A = self._log_phi_terms(t, M)
        S = A.sum(axis=2)  # log Π_{j≠i} Φ(u + m_i − m_j)
        log_Z = logsumexp(S + self._log_w, axis=1)
        own = M[np.arange(n), t]
        d = (own[:, None] - M)[:, None, :] + self._u[None, :, None]  # u + m_i − m_k
        log_pdf = -0.5 * d**2 - 0.5 * np.log(2.0 * np.pi)
        # numerator: E_u[φ(u + m_i − m_k) Π_{j≠i,k} Φ(...)] = E_u[φ_k · exp(S − A_k)]
        log_num = logsumexp(log_pdf + S[:, :, None] - A + self._log_w[None, :, None], axis=1)
        P = -np.exp(log_num - log_Z[:, None])
        P[np.arange(n), t] = 0.0
        P[np.arange(n), t] = -P.sum(axis=1)  # eq 4.4
        return P, log_Z


# --------------------------------------------------------------------------- integrals
def sigmoid_gaussian_mackay(mu, var):
    r"""MacKay's probit approximation (G&M eq 23).

    .. math:: \int \sigma(f) N(f|\mu,s^2)\,df \approx \sigma\!\left(\frac{\mu}{\sqrt{1 + \pi s^2/8}}\right)

    It replaces σ by the probit Φ(λ f) with the same slope at the origin
    (λ² = π/8) and uses the exact probit integral.
    """
    mu, var = np.asarray(mu, dtype=float), np.asarray(var, dtype=float)
    # G&M (2000) eq 23: κ(s²) = 1/√(1 + π s²/8)
    return expit(mu / np.sqrt(1.0 + np.pi * var / 8.0))


# W&B approximate σ by a weighted sum of five scaled normal CDFs (erf functions),
#     σ(z) ≈ Σ_i c_i Φ(κ_i z),
# because each term then integrates exactly against a Gaussian:
#     ∫ Φ(κ f) N(f|μ, s²) df = Φ(κ μ / √(1 + κ² s²)).
# The scales κ_i = √2 λ_i use the λ values of the GPML toolbox; the weights c_i
# are fitted here, by least squares on a fine grid of z, rather than typed in.
# The fit is constrained to Σ c_i = 1 so that the mixture keeps σ's symmetry
# σ(−z) = 1 − σ(z), equals ½ at 0 and tends to 0 and 1 in the tails.
ERF_MIXTURE_SCALES = np.sqrt(2.0) * np.array([0.41, 0.40, 0.37, 0.44, 0.39])


def _fit_erf_mixture_coefficients(scales, z_max=30.0, n_points=6001):
    z = np.linspace(-z_max, z_max, n_points)
    design = ndtr(np.outer(z, scales)) - 0.5  # odd functions of z
    target = expit(z) - 0.5
    # eliminate the last weight with the constraint c_last = 1 − Σ_{i<last} c_i
    reduced = design[:, :-1] - design[:, -1:]
    head, *_ = np.linalg.lstsq(reduced, target - design[:, -1], rcond=None)
    return np.append(head, 1.0 - head.sum())


ERF_MIXTURE_COEFFICIENTS = _fit_erf_mixture_coefficients(ERF_MIXTURE_SCALES)


def sigmoid_gaussian_erf_mixture(mu, var, scales=None, coefficients=None):
    r"""∫ σ(f) N(f|μ, s²) df with σ replaced by a five-term probit mixture (W&B).

    .. math:: \int \sigma(f) N(f|\mu,s^2)\,df \approx \sum_i c_i\,
              \Phi\!\left(\frac{\kappa_i \mu}{\sqrt{1+\kappa_i^2 s^2}}\right)

    ``scales`` (κ_i) and ``coefficients`` (c_i) default to
    :data:`ERF_MIXTURE_SCALES` and :data:`ERF_MIXTURE_COEFFICIENTS`; pass
    others to reproduce another implementation's constants exactly (the tests
    pass scikit-learn's to compare with it). The result is clipped to [0, 1]:
    the mixture's error (about 2e-4 at worst) could otherwise step outside it.
    """
    scales = ERF_MIXTURE_SCALES if scales is None else np.asarray(scales, dtype=float)
    coefficients = ERF_MIXTURE_COEFFICIENTS if coefficients is None else np.asarray(coefficients, dtype=float)
    mu, var = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(var, dtype=float))
    arguments = np.multiply.outer(mu, scales) / np.sqrt(1.0 + np.multiply.outer(var, scales**2))
    return np.clip(ndtr(arguments) @ coefficients, 0.0, 1.0)


def gauss_hermite_expectation(func, mu, var, n_points=64):
    r"""E[func(f)] for f ~ N(μ, s²) by Gauss–Hermite quadrature.

    Uses the nodes x_i and weights w_i of :math:`\int e^{-x^2} g(x)\,dx` with
    :math:`f = \mu + \sqrt{2}\, s\, x`. Accurate for smooth ``func`` when s is
    moderate; for very wide Gaussians use :func:`sigmoid_gaussian_exact`.
    ``func`` must accept an array and act elementwise.
    """
    nodes, weights = np.polynomial.hermite.hermgauss(int(n_points))
    mu, var = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(var, dtype=float))
    f = mu[..., None] + np.sqrt(2.0 * var)[..., None] * nodes
    return func(f) @ weights / np.sqrt(np.pi)


def sigmoid_gaussian_quadrature(mu, var, n_points=64):
    """∫ σ(f) N(f|μ, s²) df by Gauss–Hermite quadrature with ``n_points`` nodes."""
    return gauss_hermite_expectation(expit, mu, var, n_points)


def sigmoid_gaussian_exact(mu, var):
    """∫ σ(f) N(f|μ, s²) df by adaptive quadrature (scipy.integrate.quad): the reference.

    Slow (one adaptive integral per entry) but accurate to ~1e-12 for any
    μ and s; use it as ground truth, not inside algorithms.
    """
    mu, var = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(var, dtype=float))
    out = np.empty(mu.shape)
    for index in np.ndindex(mu.shape):
        m, s = mu[index], np.sqrt(var[index])
        if s == 0.0:
            out[index] = expit(m)
            continue
        # integrate over the standardised variable u = (f − μ)/s
        value, _ = integrate.quad(lambda u: expit(m + s * u) * np.exp(-0.5 * u * u), -40.0, 40.0,
                                  epsabs=1e-13, epsrel=1e-12, limit=200, points=[-m / s])
        out[index] = value / np.sqrt(2.0 * np.pi)
    return out


def probit_gaussian(mu, var):
    r"""∫ Φ(f) N(f|μ, s²) df = Φ(μ/√(1+s²)) (GPML eq 3.82)."""
    mu, var = np.asarray(mu, dtype=float), np.asarray(var, dtype=float)
    return ndtr(mu / np.sqrt(1.0 + var))
