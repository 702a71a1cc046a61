r"""Likelihoods p(y | f) for binary classification and Gaussian–sigmoid integrals.

Notation (book symbol ← code name):

- y ∈ {-1, +1} ← ``y`` (W&B, K&G, GPML); G&M's t = (y+1)/2 ∈ {0,1} ← ``t``.
- f ← ``f``, the latent function value at a training input.
- σ(z) = 1/(1+e^(-z)) the logistic sigmoid; Φ the standard normal CDF,
  ϕ its density.
- μ, s² ← ``mu, var``: mean and variance of a Gaussian latent f_∗ ~ N(μ, s²).
- ε ← ``epsilon`` (K&G's labelling-error rate), v ← ``latent_noise``
  (K&G's v_2).

All log-likelihoods are evaluated in log space (``np.logaddexp``,
``scipy.special.log_ndtr``) so that they stay finite for f in the hundreds, of either sign.

References
----------
- [WB98] Williams & Barber (1998): logistic likelihood, Newton iteration; §4: the softmax likelihood.
- [GM00] Gibbs & MacKay (2000), eq 23: MacKay's probit approximation.
- [MacKay92] MacKay (1992): the evidence framework for classification.
- [KG03] Kim & Ghahramani, eq 9: the label-noise likelihood.
- [GR06] Girolami & Rogers (2006), eqs 3.1, 4.3, 4.4, 5.5 and Appendix B: the multinomial probit.
- [GPML] Rasmussen & Williams (2006), §3.4–3.6, eq 3.82 (the probit integral); §3.5: the softmax.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from scipy.special import log_ndtr
from scipy.special import logsumexp

from .gaussian_integrals import probit_gaussian
from .gaussian_integrals import sigmoid_gaussian_erf_mixture
from .gaussian_integrals import sigmoid_gaussian_exact
from .gaussian_integrals import sigmoid_gaussian_mackay
from .gaussian_integrals import sigmoid_gaussian_quadrature
from .gaussian_integrals import standard_normal_rule
from .validation import check_choice
from .validation import check_class_codes
from .validation import check_pm1_labels
from .validation import check_positive
from .validation import check_positive_int
from .validation import check_probability

__all__ = [
    "log_sigmoid",
    "log_normal_cdf",
    "normal_pdf_over_cdf",
    "BinaryLikelihood",
    "LogisticLikelihood",
    "ProbitLikelihood",
    "LabelNoiseLikelihood",
    "MultiClassLikelihood",
    "MultinomialProbitLikelihood",
    "SoftmaxLikelihood",
    "SIGMOID_PREDICTIONS",
]

# How ∫ σ(f) N(f|μ, s²) df is computed (gpc_ref.gaussian_integrals): W&B's erf mixture,
# MacKay's probit approximation (G&M eq 23), Gauss–Hermite, adaptive quadrature.
SIGMOID_PREDICTIONS = {
    "erf_mixture": sigmoid_gaussian_erf_mixture,
    "mackay": sigmoid_gaussian_mackay,
    "quadrature": sigmoid_gaussian_quadrature,
    "exact": sigmoid_gaussian_exact,
}


def log_sigmoid(z: ArrayLike) -> np.ndarray:
    """log σ(z) = −log(1 + e^{−z}), exact for any finite z.

    Parameters
    ----------
    z : array-like
        Arguments, any shape.

    Returns
    -------
    ndarray
        Elementwise, the shape of ``z`` (a NumPy scalar for a scalar ``z``).
    """
    return -np.logaddexp(0.0, -np.asarray(z, dtype=float))


def log_normal_cdf(z: ArrayLike) -> np.ndarray:
    """log Φ(z), accurate far into the lower tail.

    Parameters
    ----------
    z : array-like
        As in :func:`log_sigmoid`; so is the result.

    Returns
    -------
    ndarray
    """
    return log_ndtr(np.asarray(z, dtype=float))


def normal_pdf_over_cdf(z: ArrayLike) -> np.ndarray:
    """The inverse Mills ratio φ(z)/Φ(z), computed in log space.

    For z → −∞ it grows like −z; computing φ and Φ separately would give 0/0.

    Parameters
    ----------
    z : array-like
        Elementwise, as in :func:`log_sigmoid`.

    Returns
    -------
    ndarray
        Positive, the shape of ``z``.
    """
    z = np.asarray(z, dtype=float)
    log_pdf = -0.5 * z**2 - 0.5 * np.log(2.0 * np.pi)
    return np.exp(log_pdf - log_ndtr(z))


class BinaryLikelihood:
    r"""A likelihood p(y|f) = g(yf) of a sigmoid link g, labels y ∈ {-1, +1}.

    Subclasses give log g(z) and its first three derivatives in z = yf; the
    derivatives in f follow by the chain rule, ∂^k/∂f^k = y^k ∂^k/∂z^k
    (y² = 1).
    """

    name = "binary"

    def log_link(self, z: ArrayLike) -> np.ndarray:
        """log g(z).

        Parameters
        ----------
        z : array-like
            The margins z = yf, any shape.

        Returns
        -------
        ndarray
            Elementwise, the shape of ``z``.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def link_derivatives(self, z: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """First three derivatives of log g(z) in z.

        Parameters
        ----------
        z : array-like
            As in :meth:`log_link`.

        Returns
        -------
        d1, d2, d3 : ndarray
            d^k log g/dz^k for k = 1, 2, 3, each the shape of ``z``.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def log_p(self, y: ArrayLike, f: ArrayLike) -> np.ndarray:
        """log p(y|f) = log g(y f), elementwise.

        Parameters
        ----------
        y : array-like
            Labels in {−1, +1}.
        f : array-like
            Latent values, broadcastable with ``y``.

        Returns
        -------
        ndarray
        """
        y, f = check_pm1_labels(y), np.asarray(f, dtype=float)
        return self.log_link(y * f)

    def derivatives(self, y: ArrayLike, f: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """First, second and third derivatives of log p(y|f) with respect to f.

        Parameters
        ----------
        y, f : array-like
            Labels in {−1, +1} and latent values, as for :meth:`log_p`.

        Returns
        -------
        d1, d2, d3 : ndarray
            Elementwise derivatives (W&B's ∇log p, −W's diagonal, and the third for the evidence gradient).
        """
        y, f = check_pm1_labels(y), np.asarray(f, dtype=float)
        d1, d2, d3 = self.link_derivatives(y * f)
        return y * d1, d2, y * d3

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogisticLikelihood(BinaryLikelihood):
    r"""p(y | f) = σ(y f), W&B's and G&M's likelihood.

    With t = (y+1)/2 and π = σ(f) (W&B's notation), the derivatives of
    log p(y|f) in f are

        t - π, -π(1-π), -π(1-π)(1-2π).
    """

    name = "logistic"

    def log_link(self, z: ArrayLike) -> np.ndarray:
        """log σ(z) (:func:`log_sigmoid`).

        Parameters
        ----------
        z : array-like
            The margins yf.

        Returns
        -------
        ndarray
            Finite for every finite z.
        """
        return log_sigmoid(z)

    def link_derivatives(self, z: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """σ(−z), −σ(z)σ(−z), −σ(z)σ(−z)(σ(−z) − σ(z)): no cancellation in either tail.

        Parameters
        ----------
        z : array-like
            The margins yf, any shape.

        Returns
        -------
        d1, d2, d3 : ndarray
            The three derivatives in that order (:meth:`BinaryLikelihood.link_derivatives`).
        """
        sig, sig_minus = expit(z), expit(-z)  # σ(−z) from expit(−z), never as 1 − σ(z)
        d2 = -sig * sig_minus
        return sig_minus, d2, d2 * (sig_minus - sig)

    def predict(self, mean: ArrayLike, var: ArrayLike, method: str = "erf_mixture") -> np.ndarray:
        """P(y = +1) = ∫ σ(f) N(f | μ, s²) df by the named rule of :data:`SIGMOID_PREDICTIONS`.

        Parameters
        ----------
        mean, var : array-like
            Mean μ and variance s² of the Gaussian latent, elementwise.
        method : {"erf_mixture", "mackay", "quadrature", "exact"}
            W&B's erf mixture, MacKay's approximation (G&M eq 23), Gauss–Hermite, or adaptive
            quadrature.

        Returns
        -------
        ndarray
            P(y = +1) for each (μ, s²).
        """
        check_choice(method, "method", tuple(SIGMOID_PREDICTIONS))
        return SIGMOID_PREDICTIONS[method](mean, var)


class ProbitLikelihood(BinaryLikelihood):
    r"""p(y | f) = Φ(y f), the likelihood of EP (K&G, GPML §3.6) and of G&R's binary model.

    With z = yf and r = ϕ(z)/Φ(z) the derivatives of log Φ(z) in
    z are

        r, -r(z + r), r ((z+r)(z+2r) - 1).

    For z < −20 the last two lose precision to cancellation and their asymptotic series are
    used instead (relative error below 1e-7 there).

    The predictive integral is exact: ∫ Φ(f) N(f|μ,s²) df = Φ(μ/√(1+s²))
    (GPML eq 3.82).
    """

    name = "probit"

    def log_link(self, z: ArrayLike) -> np.ndarray:
        """log Φ(z) (``scipy.special.log_ndtr``, :func:`log_normal_cdf`).

        Parameters
        ----------
        z : array-like
            Margins yf of any shape.

        Returns
        -------
        ndarray
            Accurate far into the lower tail.
        """
        return log_ndtr(z)

    def link_derivatives(self, z: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three derivatives of log Φ(z), with the asymptotic series in the far lower tail.

        Parameters
        ----------
        z : array-like
            The margins yf; below −20 the series replace the closed forms of d2 and d3.

        Returns
        -------
        d1, d2, d3 : ndarray
            r, -r(z + r), r((z+r)(z+2r) - 1) (class docstring), each of the shape of ``z``.
        """
        z = np.asarray(z, dtype=float)
        r = normal_pdf_over_cdf(z)
        d2 = np.array(-r * (z + r), dtype=float, ndmin=1)
        d3 = np.array(r * ((z + r) * (z + 2.0 * r) - 1.0), dtype=float, ndmin=1)
        # Far in the lower tail z + r ≈ 1/|z| is the difference of two large numbers and the
        # formulas above lose digits (1e-5 relative at z = −30). There the asymptotic
        # (Mills-ratio) series are used, with u = 1/z²:
        #   d²/dz² log Φ = −1 + u − 6u² + 50u³ − 518u⁴ + 6354u⁵,
        #   d³/dz³ log Φ = (2/|z|³)(1 − 12u + 150u² − 2072u³ + 31770u⁴),
        # accurate to 1e-7 relative or better for z < −20 (checked at 100 digits).
        tail = np.atleast_1d(z < -20.0)
        if np.any(tail):
            x = -np.atleast_1d(z)[tail]
            u = 1.0 / x**2
            d2[tail] = -1.0 + u * (1.0 + u * (-6.0 + u * (50.0 + u * (-518.0 + u * 6354.0))))
            d3[tail] = 2.0 / x**3 * (1.0 + u * (-12.0 + u * (150.0 + u * (-2072.0 + u * 31770.0))))
        return r, d2.reshape(z.shape), d3.reshape(z.shape)

    def predict(self, mean: ArrayLike, var: ArrayLike, method: str = "exact") -> np.ndarray:
        """P(y = +1) = Φ(μ/√(1+s²)) (exact); ``method`` is accepted for a uniform interface.

        Parameters
        ----------
        mean, var : array-like
            μ and s², broadcast together.
        method : str
            Checked to be a name of :data:`SIGMOID_PREDICTIONS`, otherwise unused.

        Returns
        -------
        ndarray
        """
        check_choice(method, "method", tuple(SIGMOID_PREDICTIONS))
        return probit_gaussian(mean, var)


class LabelNoiseLikelihood:
    r"""Kim & Ghahramani's likelihood with labelling errors and latent noise (eq 9).

        p(y|f) = ε + (1 - 2ε) Φ((y f)/√v),

    the step function H(y f) blurred by Gaussian latent noise of variance
    v. ``latent_noise=0`` gives the hard step
    ε + (1-2ε)H(yf); ``epsilon=0`` and ``latent_noise=1``
    give the probit likelihood.
    """

    name = "label_noise"

    def __init__(self, epsilon: float = 0.0, latent_noise: float = 1.0) -> None:
        self.epsilon = check_probability(epsilon, "epsilon", high=0.5, open_high=True)
        self.latent_noise = float(check_positive(latent_noise, "latent_noise", allow_zero=True))

    def __repr__(self) -> str:
        return f"LabelNoiseLikelihood(epsilon={self.epsilon:.4g}, latent_noise={self.latent_noise:.4g})"

    def _log_mix(self, log_phi):
        # log(ε + (1−2ε)Φ) without leaving log space: logaddexp(log ε, log(1−2ε) + log Φ)
        if self.epsilon == 0.0:
            return log_phi
        return np.logaddexp(np.log(self.epsilon), np.log1p(-2.0 * self.epsilon) + log_phi)

    def log_p(self, y: ArrayLike, f: ArrayLike) -> np.ndarray:
        """log p(y | f) of eq 9.

        Parameters
        ----------
        y, f : array-like
            As in :meth:`BinaryLikelihood.log_p`.

        Returns
        -------
        ndarray
            −inf where ``latent_noise = 0``, ``epsilon = 0`` and the sign of ``f`` is wrong.
        """
        y, f = check_pm1_labels(y), np.asarray(f, dtype=float)
        z = y * f
        if self.latent_noise == 0.0:
            with np.errstate(divide="ignore"):
                log_phi = np.where(z > 0, 0.0, np.where(z < 0, -np.inf, np.log(0.5)))
        else:
            log_phi = log_ndtr(z / np.sqrt(self.latent_noise))
        return self._log_mix(log_phi)

    def log_integral(self, y: ArrayLike, mu: ArrayLike, var: ArrayLike) -> np.ndarray:
        r"""log ∫ p(y|f) N(f|μ, s²) df = log(ε + (1−2ε) Φ(y μ / √(v + s²))).

        Parameters
        ----------
        y : array-like
            Labels in {−1, +1}.
        mu, var : array-like
            Mean and variance of the Gaussian over f; v + s² must be positive.

        Returns
        -------
        ndarray
            Elementwise (EP's log normaliser of the tilted distribution).
        """
        y, mu = check_pm1_labels(y), np.asarray(mu, dtype=float)
        total = self.latent_noise + np.asarray(var, dtype=float)
        if np.any(total <= 0):
            raise ValueError("latent_noise + var must be positive for the label-noise integral")
        return self._log_mix(log_ndtr(y * mu / np.sqrt(total)))

    def predict(self, mean: ArrayLike, var: ArrayLike, method: str = "exact") -> np.ndarray:
        """P(y = +1) for a Gaussian latent N(μ, s²) (exact; ``method`` is accepted for a uniform interface).

        Parameters
        ----------
        mean, var : array-like
            Mean and variance of f; the latent noise v is added to the variance.
        method : str
            Ignored.

        Returns
        -------
        ndarray
            ε + (1-2ε)Φ(μ/√(v + s²)).
        """
        return np.exp(self.log_integral(np.ones_like(np.asarray(mean, dtype=float)), mean, var))


class MultiClassLikelihood:
    r"""A multi-class likelihood P(c_i | f_i) of C latent values per point.

    Class codes ``t`` hold the classes c_i ∈ 0..C−1 and ``M`` the n × C latent values f_i^c.
    :meth:`log_p` checks both; subclasses give ``_log_p(t, M)`` on checked input.
    """

    name = "multiclass"

    @staticmethod
    def _check(t, M):
        M = np.asarray(M, dtype=float)
        if M.ndim != 2:
            raise ValueError(f"latent values must have shape (n, C); got {M.shape}")
        t, _ = check_class_codes(t, M.shape[0], M.shape[1], require_all=False)
        return t, M

    def _log_p(self, t: np.ndarray, M: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def log_p(self, t: ArrayLike, M: ArrayLike) -> np.ndarray:
        """log P(c_i | f_i) for every point i, shape (n,).

        Parameters
        ----------
        t : array-like (n,)
            Classes c_i, codes 0..C−1.
        M : array-like (n, C)
            Latent values f_i^c.

        Returns
        -------
        ndarray (n,)
        """
        t, M = self._check(t, M)
        return self._log_p(t, M)


class MultinomialProbitLikelihood(MultiClassLikelihood):
    r"""The multinomial probit of Girolami & Rogers (eq 3.1), the shared core of VB, Gibbs and the IVM.

    Each point i has C latent values f_i = (f_i¹, …, f_i^C); auxiliary
    z_i^c = f_i^c + ε_i^c, ε_i^c ~ N(0, 1), and
    c_i = argmax_c z_i^c. Integrating z_i out, for the observed class k,

        P(c_i = k | f_i) = E_u[∏_(j ≠ k)Φ(u + f_i^k - f_i^j)],
        u ~ N(0, 1).

    Every expectation over u is computed by Gauss–Hermite quadrature
    with ``n_nodes`` nodes, in log space; the paper used 1000 Monte Carlo
    samples. Class codes ``t`` hold the classes c_i, 0..C−1 (the paper's t_n, 1..K, minus
    one), and ``M`` the n × C latent values f_i^c (the paper's M, m_nk), or the
    posterior means μ_i^c where the callers pass those.
    """

    name = "multinomial_probit"

    def __init__(self, n_nodes: int = 48) -> None:
        self.n_nodes = check_positive_int(n_nodes, "n_nodes", minimum=2)
        self._u, weights = standard_normal_rule(self.n_nodes)
        self._log_w = np.log(weights)

    def __repr__(self) -> str:
        return f"MultinomialProbitLikelihood(n_nodes={self.n_nodes})"

    def _log_phi_terms(self, t, M, scale_own=None, scale_other=None):
        """log Φ((u·a_i + f_i^k − f_i^j)/b_i^j) for every point i, node u and class j (k = c_i), own class zeroed.

        Shape (n, Q, C). ``a`` and ``b`` default to 1 (the plain likelihood).
        """
        n, K = M.shape
        own = M[np.arange(n), t]
        a = 1.0 if scale_own is None else scale_own[:, None, None]
        b = 1.0 if scale_other is None else scale_other[:, None, :]
        A = log_ndtr((self._u[None, :, None] * a + (own[:, None] - M)[:, None, :]) / b)
        A[np.arange(n), :, t] = 0.0
        return A

    def _log_p(self, t: np.ndarray, M: np.ndarray) -> np.ndarray:
        """log E_u[∏_{j≠k} Φ(u + f_i^k − f_i^j)] by Gauss–Hermite quadrature, in log space."""
        S = self._log_phi_terms(t, M).sum(axis=2)
        return logsumexp(S + self._log_w, axis=1)

    def predict(self, mean: ArrayLike, var: ArrayLike) -> np.ndarray:
        r"""P(c_i = k) for latent values f_i^c ~ N(μ_i^c, σ_ci²) independently (G&R §4.5, App. B, eq 5.5).

            P(c_i = k) = E_u[∏_(j ≠ k)Φ((u v_ki + μ_i^k - μ_i^j)/v_ji)],
            v_ji = √(1 + σ_ji²).

        Parameters
        ----------
        mean : array-like (n, C)
            The means μ_i^c.
        var : array-like (n, C) or broadcastable to it
            The variances σ_ci², non-negative.

        Returns
        -------
        ndarray (n, C)
            Entry (i, k) is P(c_i = k). Its rows sum to one up to the quadrature error (about
            1e-10 with the default nodes), which is not hidden by renormalising.
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

    def cone_mean_shift(self, t: ArrayLike, M: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        r"""P = E[z_i] − f_i for z_i ~ N(f_i, I) truncated to the cone of class c_i (G&R eqs 4.3, 4.4).

        For the observed class k = c_i and c ≠ k:

            p_i^c = -((E_u[ϕ(u + f_i^k - f_i^c) Φ_u^(i,k,c)])/(E_u[∏_(j ≠ k)Φ(u + f_i^k - f_i^j)])),
            p_i^k = -∑_(c ≠ k) p_i^c,

        with Φ_u^(i,k,c) = ∏_(j ≠ k,c)Φ(u + f_i^k - f_i^j). In VB the means
        f_i^c passed are the posterior means μ_i^c, and ``M + P`` holds z̃_i^c.

        Parameters
        ----------
        t, M : array-like
            Classes c_i (n,) and latent values f_i^c (n, C), as for :meth:`log_p`.

        Returns
        -------
        P : ndarray (n, C)
            The mean shifts p_i^c; each row sums to zero (eq 4.4).
        log_Z : ndarray (n,)
            ``log_Z[i]`` is log 𝒵_i = log P(c_i | f_i), the log of the denominator
            (the normaliser of the truncated Gaussian).
        """
        t, M = self._check(t, M)
        n, K = M.shape
        rows = np.arange(n)
        A = self._log_phi_terms(t, M)
        # log of the weighted integrand w_q Π_{j≠k} Φ(u_q + f_i^k − f_i^j) at every node q, k = c_i
        S = A.sum(axis=2) + self._log_w
        # scaled by its largest node (no overflow, nothing that matters underflows): Z_i = e^{m_i} Σ_q E_iq
        m = S.max(axis=1)
        E = np.exp(S - m[:, None])
        total = E.sum(axis=1)
        log_Z = m + np.log(total)
        own = M[rows, t]
        d = (own[:, None] - M)[:, None, :] + self._u[None, :, None]  # u + f_i^k − f_i^c
        # numerator: E_u[φ(d_c) Π_{j≠k,c} Φ(d_j)] = e^{m_i} Σ_q E_iq φ(d_qc)/Φ(d_qc); the ratio φ/Φ (the
        # inverse Mills ratio, at most about |d| + 1) is formed in log space, so it never overflows
        mills = np.exp(-0.5 * d**2 - 0.5 * np.log(2.0 * np.pi) - A)
        P = -np.einsum("iq,iqc->ic", E, mills) / total[:, None]
        P[rows, t] = 0.0
        P[rows, t] = -P.sum(axis=1)  # eq 4.4
        return P, log_Z


class SoftmaxLikelihood(MultiClassLikelihood):
    r"""The multi-class softmax likelihood of Williams & Barber (1998 §4; GPML §3.5).

        P(c_i = k | f_i) = ((exp f_i^k)/(∑_(c=1)^C exp f_i^c)),

    evaluated in log space (f_i^k - log ∑_c e^(f_i^c)), so that it stays finite for latent
    values in the thousands. The same interface as :class:`MultinomialProbitLikelihood`: class codes
    ``t`` hold c_i ∈ 0..C-1 and ``M`` the n × C latent values f_i^c. The softmax Laplace
    approximation (:mod:`gpc_ref.laplace_multiclass`) uses this likelihood through its own closed-form
    derivatives; this class is what :func:`gpc_ref.ais.ais_log_evidence` anneals to.
    """

    name = "softmax"

    def __repr__(self) -> str:
        return "SoftmaxLikelihood()"

    def _log_p(self, t: np.ndarray, M: np.ndarray) -> np.ndarray:
        """f_i^k − log ∑_c exp f_i^c."""
        return M[np.arange(M.shape[0]), t] - logsumexp(M, axis=1)
