r"""The squared-exponential ARD covariance function, in every paper's clothes.

Notation (book symbol ← code name):

====  ==================  ===================================================
book  code                papers
====  ==================  ===================================================
σ_f²  ``variance``        W&B v_0, G&M θ_1, K&G v_0, G&R s
ℓ_d   ``lengthscale[d]``  W&B w_l = 1/ℓ_l², G&M r_l, K&G l_m = 1/ℓ_m²,
                          G&R φ_d = 1/(2ℓ_d²) (no ½ in their kernel)
σ_b²  ``bias``            W&B v_1, G&M θ_2, K&G v_1
σ_j²  ``jitter``          G&M J, K&G latent noise v_2
θ     ``theta``           log of the learnable parameters, in the order below
====  ==================  ===================================================

    k(x, x') = σ_f² exp(-½ ∑_d (x_d - x'_d)²/ℓ_d²) + σ_b² + σ_j² δ_ii'

The jitter term sits on the diagonal of the training covariance ``K(X)`` (the
Kronecker delta is over *indices*, not over equal inputs, so two duplicate
points stay two distinct random variables) and in ``diag(X)``; the cross
covariance ``K(X, Z)`` never contains it.

``theta`` is the vector of log-parameters that a method may learn:
``[log variance, log lengthscale_1, ..., log lengthscale_D, (log bias), (log jitter)]``.
A bias of exactly zero means "no bias term" and is not learnable; the jitter is
held fixed unless ``learn_jitter=True`` (Kim & Ghahramani learn their latent
noise v_2, the others keep it as a small numerical constant).

References
----------
- [WB98] Williams & Barber (1998), eq 2 and §3.
- [GM00] Gibbs & MacKay (2000), eq 6.
- [KG03] Kim & Ghahramani, eq 10.
- [GR06] Girolami & Rogers (2006), §6.1.
- [GPML] Rasmussen & Williams (2006), eq 5.2 (ARD squared exponential).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .validation import check_matrix
from .validation import check_positive

__all__ = ["SEKernel", "class_kernels", "stack_theta", "unstack_theta"]


class SEKernel:
    """Squared-exponential ARD kernel with bias and jitter terms.

    Parameters
    ----------
    variance : float
        Signal variance σ_f² > 0.
    lengthscale : float or array of shape (D,)
        One lengthscale shared by all inputs, or one per input dimension (ARD).
    bias : float
        Constant added to every covariance, σ_b² ≥ 0.
    jitter : float
        Added to the diagonal of ``K(X)``, σ_j² ≥ 0.
    learn_bias : bool or None
        Whether ``log bias`` is part of ``theta``. ``None`` means "yes if bias > 0".
    learn_jitter : bool
        Whether ``log jitter`` is part of ``theta`` (K&G's latent noise v_2).

    Examples
    --------
    >>> import numpy as np
    >>> kernel = SEKernel(variance=2.0, lengthscale=[1.0, 3.0])
    >>> kernel.K(np.zeros((3, 2))).shape
    (3, 3)
    >>> kernel.theta_names
    ['log_variance', 'log_lengthscale[0]', 'log_lengthscale[1]']
    """

    def __init__(
        self,
        variance: float = 1.0,
        lengthscale: float | ArrayLike = 1.0,
        bias: float = 0.0,
        jitter: float = 1e-8,
        learn_bias: bool | None = None,
        learn_jitter: bool = False,
    ) -> None:
        self.variance = float(check_positive(variance, "variance"))
        lengthscale = check_positive(lengthscale, "lengthscale")
        if lengthscale.ndim > 1:
            raise ValueError(f"lengthscale must be a scalar or a 1-D array; got shape {lengthscale.shape}")
        self.lengthscale = float(lengthscale) if lengthscale.ndim == 0 else lengthscale.copy()
        self.bias = float(check_positive(bias, "bias", allow_zero=True))
        self.jitter = float(check_positive(jitter, "jitter", allow_zero=True))
        self.learn_bias = (self.bias > 0) if learn_bias is None else bool(learn_bias)
        self.learn_jitter = bool(learn_jitter)
        if self.learn_bias and self.bias == 0:
            raise ValueError("learn_bias=True needs bias > 0 (the bias is learnt on log scale)")
        if self.learn_jitter and self.jitter == 0:
            raise ValueError("learn_jitter=True needs jitter > 0 (the jitter is learnt on log scale)")

    # ------------------------------------------------------------------ parameters
    @property
    def ard(self) -> bool:
        """True when there is one lengthscale per input dimension."""
        return np.ndim(self.lengthscale) == 1

    @property
    def theta(self) -> np.ndarray:
        """Log of the learnable parameters, in the order of :attr:`theta_names`."""
        parts = [np.log([self.variance]), np.log(np.atleast_1d(self.lengthscale))]
        if self.learn_bias:
            parts.append(np.log([self.bias]))
        if self.learn_jitter:
            parts.append(np.log([self.jitter]))
        return np.concatenate(parts)

    @property
    def theta_names(self) -> list[str]:
        """Names of the entries of :attr:`theta`."""
        names = ["log_variance"]
        if self.ard:
            names += [f"log_lengthscale[{d}]" for d in range(len(self.lengthscale))]
        else:
            names += ["log_lengthscale"]
        if self.learn_bias:
            names.append("log_bias")
        if self.learn_jitter:
            names.append("log_jitter")
        return names

    def with_theta(self, theta: ArrayLike) -> SEKernel:
        """Return a new kernel whose learnable parameters are ``exp(theta)``.

        Parameters
        ----------
        theta : array-like (P,)
            Finite log-parameters in the order of :attr:`theta_names`.

        Returns
        -------
        SEKernel
            The same learnable set (``learn_bias``, ``learn_jitter``); a fixed bias or jitter is kept.
        """
        theta = np.asarray(theta, dtype=float)
        n_lengthscales = len(np.atleast_1d(self.lengthscale))
        expected = 1 + n_lengthscales + int(self.learn_bias) + int(self.learn_jitter)
        if theta.shape != (expected,):
            raise ValueError(f"theta must have shape ({expected},) for {self.theta_names}; got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"theta contains NaN or infinite values: {theta}")
        values = np.exp(theta)
        lengthscale = values[1 : 1 + n_lengthscales]
        position = 1 + n_lengthscales
        bias = self.bias
        if self.learn_bias:
            bias, position = values[position], position + 1
        jitter = values[position] if self.learn_jitter else self.jitter
        return SEKernel(
            variance=values[0],
            lengthscale=lengthscale if self.ard else lengthscale[0],
            bias=bias,
            jitter=jitter,
            learn_bias=self.learn_bias,
            learn_jitter=self.learn_jitter,
        )

    def with_params(self, **changes: Any) -> SEKernel:
        """Return a copy with some constructor arguments changed.

        Parameters
        ----------
        **changes
            Constructor arguments by name (``variance``, ``lengthscale``, ...), checked as the
            constructor checks them; an unknown name raises.

        Returns
        -------
        SEKernel
            A new kernel; this one is unchanged.
        """
        params = self.get_params()
        unknown = set(changes) - set(params)
        if unknown:
            raise ValueError(f"unknown kernel parameter(s) {sorted(unknown)}; expected some of {sorted(params)}")
        params.update(changes)
        return SEKernel(**params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments as a dict (scikit-learn style).

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn and without effect (a kernel holds no estimators).

        Returns
        -------
        dict
            ``variance``, ``lengthscale``, ``bias``, ``jitter``, ``learn_bias``, ``learn_jitter``.
        """
        return dict(
            variance=self.variance,
            lengthscale=self.lengthscale,
            bias=self.bias,
            jitter=self.jitter,
            learn_bias=self.learn_bias,
            learn_jitter=self.learn_jitter,
        )

    def set_params(self, **params: Any) -> SEKernel:
        """Change constructor arguments in place (scikit-learn style), checked as the constructor checks them.

        ``GridSearchCV`` reaches the kernel through an estimator's ``kernel__lengthscale`` and so on.

        Parameters
        ----------
        **params
            Constructor arguments by name, as :meth:`with_params` takes them.

        Returns
        -------
        SEKernel
            The kernel itself.
        """
        changed = self.with_params(**params)  # validates every argument, or raises naming it
        self.__dict__.update(changed.__dict__)
        return self

    def __sklearn_clone__(self) -> SEKernel:
        """A fresh copy: lets scikit-learn's ``clone`` (cross-validation, grid search) copy an estimator holding a kernel."""
        return self.with_params()

    def __repr__(self) -> str:
        lengthscale = np.round(self.lengthscale, 4).tolist() if self.ard else round(self.lengthscale, 4)
        text = f"SEKernel(variance={self.variance:.4g}, lengthscale={lengthscale}"
        if self.bias:
            text += f", bias={self.bias:.4g}"
        return text + f", jitter={self.jitter:.3g})"

    # ------------------------------------------------------------------ covariances
    def _check_inputs(self, X, name):
        X = check_matrix(X, name, allow_vector=True)
        if self.ard and X.shape[1] != len(self.lengthscale):
            raise ValueError(
                f"{name} has {X.shape[1]} feature(s) but the kernel has {len(self.lengthscale)} lengthscales"
            )
        return X

    def _scaled_sq_dist(self, X, Z):
        """Σ_d (x_d − z_d)²/ℓ_d² by the expansion ‖x‖² + ‖z‖² − 2xᵀz, with both sets shifted by the mean of X
        first (distances do not change, and the cancellation in the expansion is smaller the closer the
        points are to the origin); exactly symmetric when ``Z is X``, and never negative."""
        shift = X.mean(axis=0)
        Xs = (X - shift) / self.lengthscale
        Zs = Xs if Z is X else (Z - shift) / self.lengthscale
        sq = (Xs**2).sum(1)[:, None] + (Zs**2).sum(1)[None, :] - 2.0 * Xs @ Zs.T
        if Z is X:
            # the matrix product is not exactly symmetric in floating point; a covariance must be
            sq = 0.5 * (sq + sq.T)
        return np.maximum(sq, 0.0)

    def K(self, X: ArrayLike, Z: ArrayLike | None = None) -> np.ndarray:
        """Covariance matrix.

        ``K(X)`` is the (n, n) training covariance with jitter on its diagonal;
        ``K(X, Z)`` is the (n, m) cross covariance without jitter.

        Parameters
        ----------
        X : array-like (n, D) or (n,)
            Inputs (a 1-D array is n points with one feature).
        Z : array-like (m, D) or (m,), optional
            Second inputs, for the cross covariance.

        Returns
        -------
        ndarray (n, n) or (n, m)
        """
        X = self._check_inputs(X, "X")
        if Z is None:
            sq = self._scaled_sq_dist(X, X)
            np.fill_diagonal(sq, 0.0)
            K = self.variance * np.exp(-0.5 * sq) + self.bias
            K[np.diag_indices_from(K)] += self.jitter
            return K
        Z = self._check_inputs(Z, "Z")
        return self.variance * np.exp(-0.5 * self._scaled_sq_dist(X, Z)) + self.bias

    __call__ = K

    def diag(self, X: ArrayLike) -> np.ndarray:
        """Prior variances k(x, x) of the points in X (jitter included).

        Parameters
        ----------
        X : array-like (n, D) or (n,)
            As in :meth:`K`.

        Returns
        -------
        ndarray (n,)
            σ_f² + σ_b² + σ_j² for every point.
        """
        X = self._check_inputs(X, "X")
        return np.full(X.shape[0], self.variance + self.bias + self.jitter)

    def gradients(self, X: ArrayLike) -> np.ndarray:
        """∂K(X)/∂θ_j for every log-parameter θ_j, as an array of shape (P, n, n).

        With K_se = σ_f² exp(-½ r²):
        ∂K/∂log σ_f² = K_se; ∂K/∂log ℓ_d = K_se (x_d − x'_d)²/ℓ_d² (summed over d
        for a shared lengthscale); ∂K/∂log σ_b² = σ_b²; ∂K/∂log σ_j² = σ_j² I.

        Parameters
        ----------
        X : array-like (n, D) or (n,)
            The inputs of ``K(X)``.

        Returns
        -------
        ndarray (P, n, n)
            In the order of :attr:`theta`.
        """
        X = self._check_inputs(X, "X")
        n = X.shape[0]
        sq = self._scaled_sq_dist(X, X)
        np.fill_diagonal(sq, 0.0)
        K_se = self.variance * np.exp(-0.5 * sq)
        grads = [K_se]
        if self.ard:
            for d in range(X.shape[1]):
                diff = (X[:, d][:, None] - X[:, d][None, :]) / self.lengthscale[d]
                grads.append(K_se * diff**2)
        else:
            grads.append(K_se * sq)
        if self.learn_bias:
            grads.append(np.full((n, n), self.bias))
        if self.learn_jitter:
            grads.append(self.jitter * np.eye(n))
        return np.stack(grads)

    def gradient_traces(self, X: ArrayLike, Q: ArrayLike) -> np.ndarray:
        r"""All tr(Q ∂K/∂θ_j) for a symmetric ``Q``, in the order of :attr:`theta`.

        Equal to ``np.einsum("ij,pij->p", Q, self.gradients(X))`` (tested) but without forming the P
        derivative matrices: with K_se the squared-exponential part and G = Q∘K_se,

        - ∂/∂log σ_f²: ∑_ab G_ab;
        - ∂/∂log ℓ_d: ∑_ab G_ab(x_ad-x_bd)²/ℓ_d²
          = 2 (gᵀ(x_d∘x_d) - x_dᵀGx_d)/ℓ_d², g = G1, the row sums of G
          (summed over d for a shared lengthscale);
        - bias: σ_b²∑_ab Q_ab; jitter: σ_j² tr Q.

        The cost is O(n²D) time and O(n²) memory instead of O(n²P) for the stack.

        Parameters
        ----------
        X : array-like (n, D) or (n,)
            The inputs of K.
        Q : array-like (n, n)
            A symmetric matrix.

        Returns
        -------
        ndarray (P,)
        """
        X = self._check_inputs(X, "X")
        n = X.shape[0]
        Q = np.asarray(Q, dtype=float)
        if Q.shape != (n, n):
            raise ValueError(f"Q must have shape ({n}, {n}) to match X; got {Q.shape}")
        sq = self._scaled_sq_dist(X, X)
        np.fill_diagonal(sq, 0.0)
        G = Q * (self.variance * np.exp(-0.5 * sq))
        g = G.sum(axis=1)
        per_dim = 2.0 * (g @ X**2 - np.sum(X * (G @ X), axis=0)) / np.asarray(self.lengthscale) ** 2
        traces = [g.sum()]
        traces += list(per_dim) if self.ard else [per_dim.sum()]
        if self.learn_bias:
            traces.append(self.bias * Q.sum())
        if self.learn_jitter:
            traces.append(self.jitter * np.trace(Q))
        return np.array(traces)


def class_kernels(kernel: SEKernel | Sequence[SEKernel], n_classes: int) -> tuple[tuple[SEKernel, ...], bool]:
    """The kernel of each of ``n_classes`` classes, and whether one kernel is shared by all.

    Parameters
    ----------
    kernel : SEKernel or sequence of SEKernel
        One kernel shared by every class, or one per class (W&B 1998 §4 and G&R give each class its
        own hyperparameters).
    n_classes : int
        The number of classes C.

    Returns
    -------
    kernels : tuple of SEKernel
        ``n_classes`` kernels (the same object repeated when shared).
    shared : bool
        True when one kernel is shared.
    """
    if isinstance(kernel, SEKernel):
        return (kernel,) * int(n_classes), True
    kernels = tuple(kernel) if isinstance(kernel, (list, tuple)) else None
    if kernels is None or len(kernels) != n_classes or not all(isinstance(k, SEKernel) for k in kernels):
        raise ValueError(
            f"kernel must be one SEKernel shared by all classes or a sequence of {n_classes} "
            f"SEKernels (one per class); got {kernel!r}"
        )
    return kernels, False


def stack_theta(kernel: SEKernel | Sequence[SEKernel], n_classes: int) -> np.ndarray:
    """``theta`` of a shared kernel, or the concatenation of the classes' ``theta`` vectors.

    Parameters
    ----------
    kernel, n_classes
        As in :func:`class_kernels`.

    Returns
    -------
    ndarray
        One ``theta`` (shared kernel) or C of them end to end.
    """
    kernels, shared = class_kernels(kernel, n_classes)
    return kernels[0].theta if shared else np.concatenate([k.theta for k in kernels])


def unstack_theta(
    kernel: SEKernel | Sequence[SEKernel], theta: np.ndarray, n_classes: int
) -> SEKernel | tuple[SEKernel, ...]:
    """Inverse of :func:`stack_theta`: the kernel(s) with their log-parameters set from ``theta``.

    Parameters
    ----------
    kernel, n_classes
        As in :func:`class_kernels`; they fix how ``theta`` is split.
    theta : ndarray
        Stacked log-parameters, as :func:`stack_theta` returns them.

    Returns
    -------
    SEKernel or tuple of SEKernel
        One kernel if ``kernel`` is shared, else one per class.
    """
    kernels, shared = class_kernels(kernel, n_classes)
    if shared:
        return kernel.with_theta(theta)
    sizes = np.cumsum([0] + [len(k.theta) for k in kernels])
    return tuple(k.with_theta(theta[sizes[c] : sizes[c + 1]]) for c, k in enumerate(kernels))
