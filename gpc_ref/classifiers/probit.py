"""VBProbitGPC, GibbsProbitGPC, SparseIVM: Girolami & Rogers' multinomial probit methods, as estimators."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..kernels import SEKernel
from ..kernels import class_kernels
from ..validation import check_bool
from ..validation import check_choice
from ..validation import check_positive_int
from .base import GPCBase
from .base import mixture_moments

__all__ = ["VBProbitGPC", "GibbsProbitGPC", "SparseIVM"]


def _probit_labels(codes, n_classes, two_class):
    """(labels for the core functions, binary?) from codes 0..C−1; binary labels are ±1 (+1 ↔ classes_[1])."""
    check_choice(two_class, "two_class", ("binary", "multiclass"))
    if n_classes == 2 and two_class == "binary":
        return np.where(codes == 1, 1.0, -1.0), True
    return codes, False


def _probit_covariances(kernels, X, X_test=None):
    """Training covariances, or cross covariances and prior variances: stacked per class, or one shared."""
    if not isinstance(kernels, (list, tuple)):
        return kernels.K(X) if X_test is None else (kernels.K(X, X_test), kernels.diag(X_test))
    if X_test is None:
        return np.stack([k.K(X) for k in kernels])
    return np.stack([k.K(X, X_test) for k in kernels]), np.stack([k.diag(X_test) for k in kernels])


def _probit_kernels(kernel, n_columns):
    """The kernel unchanged, after checking that a list holds one kernel per GP column."""
    class_kernels(kernel, n_columns)  # raises naming the expected number
    return kernel


def _learn_probit_kernel(estimator, kernel, X, t, binary, n_classes, rng, method="importance_sampling"):
    """The learnt kernel(s) and the learning record, by G&R's importance sampling (§4.4) or by maximising the bound."""
    from ..likelihoods import MultinomialProbitLikelihood
    from ..vb_probit_learning import vb_probit_learn_kernel
    from ..vb_probit_learning import vb_probit_maximize_bound

    likelihood = MultinomialProbitLikelihood(estimator.n_nodes)
    common = {"rng": rng, "n_classes": None if binary else n_classes, "binary": binary, "likelihood": likelihood,
              "progress": estimator.progress}  # fmt: skip
    if method == "bound":
        fit = vb_probit_maximize_bound(kernel, X, t, **common, **(estimator.learning_options or {}))
        _warn_if_degenerate(fit, kernel if isinstance(kernel, (list, tuple)) else [kernel])
        return (list(fit.kernel) if isinstance(fit.kernel, tuple) else fit.kernel), fit
    options = {"n_iter": 50, "n_importance_samples": 500, **(estimator.learning_options or {})}
    learning = vb_probit_learn_kernel(kernel, X, t, **common, **options)
    return (learning.kernels[0] if len(learning.kernels) == 1 else list(learning.kernels)), learning


def _warn_if_degenerate(fit, kernels):
    """Warn when the bound's maximum is (nearly) the constant classifier: for some class kernel the signal
    variance sits at the bottom of the box, or every lengthscale at the top.

    The VB bound is not the evidence: as the signal variance vanishes Q becomes exact and the bound
    tends to the constant classifier's evidence n log(1/C), so on overlapping classes the bound can be
    largest there (the VB chapter, section "When the bound is a good criterion, and when it prefers the
    constant classifier"). One lengthscale at the top is ARD switching an input off, and is not warned about.
    """
    search = fit.optimization
    low = search.at_bound & (search.theta <= search.bounds[:, 0] + 1e-6)
    high = search.at_bound & (search.theta >= search.bounds[:, 1] - 1e-6)
    start = 0
    for k in kernels:
        names = list(k.theta_names)
        size = len(names)
        variance_low = any(low[start + j] for j, name in enumerate(names) if name == "log_variance")
        lengthscales = [start + j for j, name in enumerate(names) if name.startswith("log_lengthscale")]
        all_long = bool(lengthscales) and all(high[j] for j in lengthscales)
        start += size
        if variance_low or all_long:
            warnings.warn(
                "VBProbitGPC: the VB bound is largest at (nearly) the constant classifier: the signal variance at "
                "the bottom of the hyperparameter box or every lengthscale at its top. The bound is not the "
                "evidence and can prefer such a kernel when the classes overlap; check the fit, or learn with "
                "method='importance_sampling' or LaplaceGPC",
                UserWarning,
                stacklevel=5,
            )
            return


class VBProbitGPC(GPCBase):
    r"""Girolami & Rogers' variational Bayes multinomial probit GP classifier (binary or C classes).

    ``fit`` iterates the Q(M)/Q(Y) updates of G&R eqs 4.6 (C classes) or 4.9 (binary, one GP) to
    convergence of the lower bound (:func:`gpc_ref.vb_probit.vb_probit_multiclass`,
    :func:`~gpc_ref.vb_probit.vb_probit_binary`). With ``optimize`` it first learns the kernel, by one of:

    - ``method="bound"`` (default): maximise the lower bound at the VB fixed point over every kernel
      log-parameter by L-BFGS-B with the exact gradient, stopping on the gradient
      (:func:`~gpc_ref.vb_probit_learning.vb_probit_maximize_bound`; ``benchmarks/vb_probit.py`` times it
      against softmax Laplace and scikit-learn). Deterministic. The posterior is the one the search
      computed at the learnt kernel (``hyperparameter_fit_.vb``), not a rerun. The bound is not the
      evidence: where the classes overlap its maximum can be (nearly) the constant classifier, and the
      estimator then warns (``UserWarning``); the VB chapter (section "When the bound is a good
      criterion, and when it prefers the constant classifier") measures when it is a good criterion.
    - ``method="importance_sampling"``: G&R's §4.4, the precisions' posterior means by importance
      sampling with the Exp/Gamma hierarchy (eqs 4.5, 4.7, 4.8;
      :func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`), a fixed number of iterations, the
      signal variance kept. What the paper ran. The kernel is then fixed and VB converged.

    ``predict_proba`` is §4.5 / Appendix B.

    Parameters
    ----------
    kernel : SEKernel, list of SEKernel, or None
        Shared kernel (a unit SE kernel if None) or one per class. G&R's
        exp(-∑_d φ_d(x_d - x'_d)²) is ``SEKernel(lengthscale=1/sqrt(2 phi))``.
    optimize : bool
        Learn the kernel first (see ``method``), or keep ``kernel``.
    rng : int or numpy.random.Generator
        Seeds the importance sampler, or the bound's random restarts.
    progress : bool
    method : {"bound", "importance_sampling"}
        How the kernel is learnt.
    learning_options : dict or None
        Keyword arguments for the learner: for ``"bound"``, those of
        :func:`~gpc_ref.vb_probit_learning.vb_probit_maximize_bound` (``fixed``, ``n_restarts``, ``max_iter``,
        ``tol``, ``vb_tol``, ``vb_max_iter``, ``warm_start``); for ``"importance_sampling"``, those of
        :func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel` (``n_iter``, ``n_importance_samples``,
        ``prior_shape``, ``prior_rate``, ``include_trace``; the paper: 50 iterations of 500 samples).
    max_iter, tol : int, float
        Limits of the fixed-kernel iterations (stop when the bound rises by less than
        tol·max(1, abs(bound)) and the estimated distance to the fixed point, the last step over one minus the
        contraction rate, is below √tol: :func:`gpc_ref.acceleration.fixed_point_converged`; with SQUAREM,
        ``max_iter`` counts evaluations of the map, and a large kernel variance can need thousands). Used with ``optimize=False`` and
        with ``method="importance_sampling"``; the bound learner's own iterations take ``vb_tol`` and
        ``vb_max_iter`` from ``learning_options``.
    accelerate : bool
        SQUAREM extrapolation of the fixed-kernel iterations (same fixed point, far fewer iterations
        when the kernel variance is large and the plain map contracts slowly). The bound learner always
        accelerates.
    n_nodes : int
        Gauss–Hermite nodes for the expectations over u.
    two_class : {"binary", "multiclass"}
        With two classes, the one-GP binary model (§4.4.1) or two GPs.

    Attributes
    ----------
    classes_, kernel_
    log_marginal_likelihood_ : float
        The variational lower bound on log p(t | X, ``kernel_``) (G&R Appendix C, corrected).
    posterior_ : VBResult
    hyperparameter_fit_ : BoundFit, KernelLearning or None
    lower_bound_ : ndarray
        The bound at every iteration: the learning phase (each value conditioned on that
        iteration's kernel; for ``"bound"``, at every evaluation of the search, NaN where VB failed)
        followed by the iterations of the posterior at the final kernel (for ``"bound"``, those of
        the search's evaluation there, warm-started).
    n_iter_ : int
        Iterations of the learner when the kernel is learnt (L-BFGS-B iterations for ``"bound"``,
        importance-sampling iterations for ``"importance_sampling"``), as for the other estimators;
        otherwise those of the Q(M)/Q(Y) updates. ``posterior_.n_iter`` always counts the latter.
    """

    def __init__(
        self, kernel: SEKernel | Sequence[SEKernel] | None = None, optimize: bool = True,
        rng: int | np.random.Generator = 0, progress: bool = False, *, method: str = "bound",
        learning_options: dict | None = None, max_iter: int = 10000, tol: float = 1e-9, accelerate: bool = True,
        n_nodes: int = 48, two_class: str = "binary",
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _fit(self, X, codes, kernel, rng):
        from ..likelihoods import MultinomialProbitLikelihood
        from ..vb_probit import vb_probit_binary
        from ..vb_probit import vb_probit_multiclass

        check_choice(self.method, "method", ("bound", "importance_sampling"))
        n_classes = len(self.classes_)
        t, binary = _probit_labels(codes, n_classes, self.two_class)
        kernel = _probit_kernels(kernel, 1 if binary else n_classes)
        likelihood = MultinomialProbitLikelihood(self.n_nodes)
        self.hyperparameter_fit_ = None
        history = []
        if self.optimize:
            kernel, learning = _learn_probit_kernel(self, kernel, X, t, binary, n_classes, rng, self.method)
            self.hyperparameter_fit_ = learning
            history.append(learning.trace[:, 0] if self.method == "bound" else learning.lower_bound)
        if self.optimize and self.method == "bound":
            # the learner ran VB to its fixed point at the learnt kernel already (BoundFit.vb): no rerun
            self.posterior_ = learning.vb
        else:
            options = {"max_iter": self.max_iter, "tol": self.tol, "accelerate": self.accelerate}
            K = _probit_covariances(kernel, X)
            if binary:
                self.posterior_ = vb_probit_binary(K, t, **options)
            else:
                self.posterior_ = vb_probit_multiclass(K, t, n_classes=n_classes, likelihood=likelihood, **options)
        history.append(self.posterior_.lower_bound)
        self.kernel_ = kernel
        self.lower_bound_ = np.concatenate(history)
        self.log_marginal_likelihood_ = self.posterior_.log_marginal_likelihood_bound
        if not self.optimize:
            self.n_iter_ = self.posterior_.n_iter
        elif self.method == "bound":
            self.n_iter_ = self.hyperparameter_fit_.optimization.n_iter
        else:
            self.n_iter_ = len(self.hyperparameter_fit_.lower_bound)

    def _predict_latent(self, X):
        """Binary model: mean and variance (m,); C GPs: means (m, C) and diagonal covariances (m, C, C)."""
        from ..vb_probit import vb_predict_latent

        mean, var = vb_predict_latent(self.posterior_, *_probit_covariances(self.kernel_, self.X_train_, X))
        if self.posterior_.binary:
            return mean[:, 0], var[:, 0]
        return mean, var[:, :, None] * np.eye(var.shape[1])

    def _predict_proba(self, X):
        """(m, C) class probabilities in ``classes_`` order (G&R §4.5, Appendix B)."""
        from ..likelihoods import MultinomialProbitLikelihood
        from ..vb_probit import vb_predict_proba

        cross, diag = _probit_covariances(self.kernel_, self.X_train_, X)
        return vb_predict_proba(self.posterior_, cross, diag, likelihood=MultinomialProbitLikelihood(self.n_nodes))


class GibbsProbitGPC(GPCBase):
    r"""Albert & Chib's Gibbs sampler for binary and multinomial probit GP classification (G&R Appendix D).

    ``fit`` runs :func:`gpc_ref.gibbs.gibbs_probit_multiclass` (or
    :func:`~gpc_ref.gibbs.gibbs_probit_binary` for two classes with ``two_class="binary"``);
    ``predict_proba`` averages the predictive distribution over the retained samples
    (Rao–Blackwellised, :func:`~gpc_ref.gibbs.gibbs_predict_proba`). The sampler does not learn the
    kernel; with ``optimize`` it is first learnt as G&R did for Table 1, by VB with importance-sampled
    precisions (:func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`).

    Parameters
    ----------
    kernel : SEKernel, list of SEKernel, or None
    optimize : bool
        Learn the kernel by VB importance sampling first, or keep ``kernel``.
    rng : int or numpy.random.Generator
    progress : bool
        Show a progress bar while sampling.
    learning_options : dict or None
        For G&R's importance-sampling kernel learning, as the paper did
        (:func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`).
    n_samples, burn_in, thin : int
        Retained samples, discarded iterations, and thinning (the paper: 1000 after 2000).
    n_predictive_samples : int or None
        Use this many retained samples (evenly spaced) for predictions; all if None.
    n_evidence_samples : int
        Prior draws for the evidence estimate.
    two_class : {"binary", "multiclass"}
    n_nodes : int
        Gauss–Hermite nodes for the predictive expectations over u.

    Attributes
    ----------
    classes_, kernel_
    log_marginal_likelihood_ : float
        G&R's Monte Carlo estimate of the log evidence: the log of the average likelihood over
        ``n_evidence_samples`` prior draws (:func:`~gpc_ref.gibbs.prior_sampling_log_evidence`);
        unbiased for the evidence but biased low on the log scale, with a large variance beyond a
        handful of points.
    posterior_ : GibbsSamples
    hyperparameter_fit_ : KernelLearning or None
    effective_sample_size_ : float
        Of the retained log-likelihood trace.
    """

    def __init__(
        self, kernel: SEKernel | Sequence[SEKernel] | None = None, optimize: bool = False,
        rng: int | np.random.Generator = 0, progress: bool = False, *, learning_options: dict | None = None,
        n_samples: int = 1000, burn_in: int = 2000, thin: int = 1, n_predictive_samples: int | None = None,
        n_evidence_samples: int = 1000, two_class: str = "binary", n_nodes: int = 48,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _fit(self, X, codes, kernel, rng):
        from ..gibbs import gibbs_probit_binary
        from ..gibbs import gibbs_probit_multiclass
        from ..gibbs import prior_sampling_log_evidence

        n_classes = len(self.classes_)
        t, binary = _probit_labels(codes, n_classes, self.two_class)
        kernel = _probit_kernels(kernel, 1 if binary else n_classes)
        self.hyperparameter_fit_ = None
        if self.optimize:
            kernel, self.hyperparameter_fit_ = _learn_probit_kernel(self, kernel, X, t, binary, n_classes, rng)
        K = _probit_covariances(kernel, X)
        options = {
            "rng": rng,
            "n_samples": self.n_samples,
            "burn_in": self.burn_in,
            "thin": self.thin,
            "progress": self.progress,
        }
        if binary:
            self.posterior_ = gibbs_probit_binary(K, t, **options)
        else:
            self.posterior_ = gibbs_probit_multiclass(K, t, n_classes=n_classes, **options)
        self.kernel_ = kernel
        self.effective_sample_size_ = self.posterior_.effective_sample_size
        estimate = prior_sampling_log_evidence(
            K,
            t,
            rng=rng,
            n_samples=check_positive_int(self.n_evidence_samples, "n_evidence_samples"),
            binary=binary,
            n_classes=None if binary else n_classes,
        )
        self.log_marginal_likelihood_ = estimate.log_evidence

    def _predict_latent(self, X):
        """Mixture moments over the samples: binary mean and variance (m,); C GPs: means (m, C), cov (m, C, C)."""
        from ..gibbs import gibbs_predict_latent

        means, var = gibbs_predict_latent(self.posterior_, *_probit_covariances(self.kernel_, self.X_train_, X))
        if self.n_predictive_samples is not None and self.n_predictive_samples < means.shape[0]:
            # the same evenly spaced samples as predict_proba (gibbs_predict_proba's max_samples)
            means = means[np.linspace(0, means.shape[0] - 1, int(self.n_predictive_samples)).round().astype(int)]
        mean, cov = mixture_moments(means, var)
        if self.posterior_.binary:
            return mean[:, 0], cov[:, 0, 0]
        return mean, cov

    def _predict_proba(self, X):
        """(m, C) Monte Carlo predictive probabilities in ``classes_`` order (G&R Appendix D)."""
        from ..gibbs import gibbs_predict_proba
        from ..likelihoods import MultinomialProbitLikelihood

        cross, diag = _probit_covariances(self.kernel_, self.X_train_, X)
        return gibbs_predict_proba(
            self.posterior_,
            cross,
            diag,
            likelihood=MultinomialProbitLikelihood(self.n_nodes),
            max_samples=self.n_predictive_samples,
        )


# ===================================================================== Sparse IVM (Girolami & Rogers §5)
class SparseIVM(GPCBase):
    r"""Girolami & Rogers' sparse multi-class GP classifier: the IVM by assumed density filtering.

    ``fit`` includes ``n_active`` training points one at a time, updating the C posteriors
    Q(m_c) by G&R eqs 5.1–5.4 with the truncated-Gaussian targets of eqs 4.3–4.4
    (:func:`gpc_ref.ivm.ivm_fit`); memory O(C S n), time O(C n S²), and no n × n matrix.
    ``predict_proba`` uses only the active set (G&R §4.5, eq 5.5). With ``optimize`` the kernel is
    learnt as G&R did (§6.3: "φ from the VB fit"), by VB with importance-sampled precisions on the
    points a first IVM pass selected, and the IVM is then refitted with it.

    **Defaults, and why they are not the paper's.** G&R's experiments use the predictive selection
    rule, a unit-variance kernel with tuned precisions and 50 (toy) to 2000 (Isolet) points. As a
    default for data the user has not tuned a kernel for, that combination can be worse than the constant
    classifier: with a unit SE kernel on many inputs the predictions stay near 1/C, and the predictive rule
    includes the least probable labels first — overlapping and mislabelled points — in a class balance set
    by the decision boundaries rather than by the class shares (the IVM chapter, section
    "The predictive rule balances the classes"). The defaults were chosen from measurements on iris, wine,
    glass, penguins, digits and an unbalanced synthetic set (``benchmarks/ivm.py --baselines`` prints the
    table; the numbers below are its test errors and log losses, means over three splits):

    - ``kernel=None`` is :func:`gpc_ref.ivm.median_distance_kernel` of the training inputs: an isotropic SE
      kernel with the median pairwise distance as lengthscale (a cheap rule, not learnt) and signal
      variance 10;
    - ``n_active=200``;
    - ``selection="random"``: the included points keep the class shares of the data. With the default
      kernel and S the paper's ``"predictive"`` rule errs less on clean, well-separated classes (digits:
      0.031 against 0.075) and beats the class frequencies on every set too, but on the overlapping
      unbalanced set its log loss fell behind random inclusion's at n = 1000 (0.83 against 0.61) and both its
      error and log loss at n = 3000 (0.21 and 1.01 against 0.17 and 0.59, the class frequencies' 1.13),
      and the IVM is meant for n much larger than S.

    Pass ``selection="predictive"``, ``n_active=50`` and a kernel explicitly to run the paper's settings.
    After fitting, the mean training log predictive probability is compared with that of predicting the
    training class frequencies, and a :class:`~gpc_ref.ivm.BelowClassFrequenciesWarning` is raised if it
    is lower.

    Parameters
    ----------
    kernel : SEKernel, sequence of SEKernel, or None
        One kernel shared by every class or one per class. None: the median-distance kernel of the
        training inputs (above), chosen at ``fit``; ``kernel__<name>`` parameters set with ``kernel=None``
        start from ``SEKernel(variance=10)`` instead (a fixed kernel).
    optimize : bool
        Learn the kernel (see above) or keep ``kernel``.
    rng : int or numpy.random.Generator
        Seeds the first point, random selection and the kernel learning.
    progress : bool
    n_active : int
        Number of points S to include (at most the number of training points; with fewer points
        all are included, in one ADF pass, which is not the VB fixed point of G&R §4).
    selection : {"random", "predictive", "entropy"}
        Uniformly at random, smallest predictive probability of the true class (G&R eq 5.5), or
        largest entropy reduction (Lawrence et al. 2003).
    learning_options : dict or None
        For G&R's importance-sampling kernel learning, as the paper did
        (:func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`).
    n_nodes : int
        Gauss–Hermite nodes for eqs 4.3–4.5.
    screen : bool
        Rank the candidates of the predictive rule by the product of pairwise probabilities (a
        lower bound on eq 5.5) and score only a shortlist by quadrature
        (:func:`gpc_ref.ivm.select_predictive`).

    Attributes
    ----------
    classes_, kernel_
    active_set_ : ndarray (S,)
        Indices (into the training data) of the included points, in inclusion order.
    log_marginal_likelihood_ : float
        The sequential (prequential) estimate of the log evidence of the active set's labels,
        ∑_l log P(t_(n_l) | points included before n_l) (eq 5.5 at each
        inclusion). It covers S labels, not all n, so it is not comparable with the other
        estimators' evidences.
    training_log_predictive_ : float
        Mean log predictive probability of the n training labels under the fitted IVM
        (:func:`gpc_ref.ivm.training_log_predictive`).
    class_frequency_log_predictive_ : float
        The same score for the constant classifier that predicts the training class frequencies
        (:func:`gpc_ref.ivm.class_frequency_log_predictive`).
    posterior_ : IVMFit
    hyperparameter_fit_ : KernelLearning or None
    """

    def __init__(
        self, kernel: SEKernel | Sequence[SEKernel] | None = None, optimize: bool = False,
        rng: int | np.random.Generator = 0, progress: bool = False, *, n_active: int = 200,
        selection: str = "random", learning_options: dict | None = None, n_nodes: int = 48, screen: bool = True,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    def _default_kernel(self):
        """The fixed kernel behind ``kernel__<name>`` parameters set while ``kernel`` is None."""
        return SEKernel(variance=10.0)

    def _ivm(self, kernel, X, codes, rng):
        from ..ivm import ivm_fit
        from ..likelihoods import MultinomialProbitLikelihood

        return ivm_fit(
            kernel,
            X,
            codes,
            n_active=min(self.n_active, X.shape[0]),
            selection=self.selection,
            rng=rng,
            n_classes=len(self.classes_),
            likelihood=MultinomialProbitLikelihood(self.n_nodes),
            screen=check_bool(self.screen, "screen"),
            progress=self.progress,
        )

    def _fit(self, X, codes, kernel, rng):
        from ..ivm import BelowClassFrequenciesWarning
        from ..ivm import class_frequency_log_predictive
        from ..ivm import median_distance_kernel
        from ..ivm import training_log_predictive
        from ..likelihoods import MultinomialProbitLikelihood

        check_positive_int(self.n_active, "n_active")
        if self.kernel is None:
            kernel = median_distance_kernel(X)  # the median heuristic (see the class docstring)
        kernel = _probit_kernels(kernel, len(self.classes_))
        self.hyperparameter_fit_ = None
        if self.optimize:
            first = self._ivm(kernel, X, codes, rng)
            active = first.active_set
            missing = np.setdiff1d(np.arange(len(self.classes_)), codes[active])
            if missing.size:
                raise ValueError(
                    f"optimize=True learns the kernel on the points a first IVM pass includes, and its {active.size} "
                    f"points hold no example of class(es) {self.classes_[missing].tolist()}; raise n_active"
                )
            # G&R §6.3: the kernel from the VB fit, here on the points the first pass selected
            kernel, self.hyperparameter_fit_ = _learn_probit_kernel(
                self, kernel, X[active], codes[active], False, len(self.classes_), rng
            )
        self.posterior_ = self._ivm(kernel, X, codes, rng)
        self.kernel_ = kernel
        self.active_set_ = self.posterior_.active_set
        self.log_marginal_likelihood_ = float(np.sum(self.posterior_.log_target_probability))
        # a fit that predicts its own training labels worse than the class frequencies is not worth using
        likelihood = MultinomialProbitLikelihood(self.n_nodes)
        self.training_log_predictive_ = training_log_predictive(self.posterior_, codes, likelihood)
        self.class_frequency_log_predictive_ = class_frequency_log_predictive(codes, len(self.classes_))
        if self.training_log_predictive_ < self.class_frequency_log_predictive_:
            warnings.warn(
                f"SparseIVM: the mean training log predictive probability, {self.training_log_predictive_:.3f}, is "
                f"below that of predicting the training class frequencies, {self.class_frequency_log_predictive_:.3f}: "
                f"the fit (selection={self.selection!r}, {self.posterior_.n_active} included points) is worse than a "
                "constant classifier on the data it was fitted to. Standardise the inputs, try kernel=None (a "
                "median-distance lengthscale), raise n_active, or use selection='random' if the classes are "
                "unbalanced or overlap.",
                BelowClassFrequenciesWarning,
                stacklevel=3,
            )

    def _predict_latent(self, X):
        """Means (m, C) and diagonal covariances (m, C, C) of the C latent functions, from the active set."""
        from ..ivm import ivm_predict

        mean, var = ivm_predict(self.posterior_, X)
        return mean, var[:, :, None] * np.eye(var.shape[1])

    def _predict_proba(self, X):
        """(m, C) class probabilities, columns in ``classes_`` order (G&R §4.5, eq 5.5)."""
        from ..ivm import ivm_predict
        from ..likelihoods import MultinomialProbitLikelihood

        return MultinomialProbitLikelihood(self.n_nodes).predict(*ivm_predict(self.posterior_, X))
