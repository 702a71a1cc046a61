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


def _learn_probit_kernel(estimator, kernel, X, t, binary, n_classes, rng, method="importance_sampling", options=None):
    """The learnt kernel(s) and the learning record, by G&R's importance sampling (§4.4) or by maximising the bound.

    ``options`` replace the estimator's ``learning_options`` (None: use them).
    """
    from ..likelihoods import MultinomialProbitLikelihood
    from ..vb_probit_learning import vb_probit_learn_kernel
    from ..vb_probit_learning import vb_probit_maximize_bound

    likelihood = MultinomialProbitLikelihood(estimator.n_nodes)
    common = {"rng": rng, "n_classes": None if binary else n_classes, "binary": binary, "likelihood": likelihood,
              "progress": estimator.progress}  # fmt: skip
    if method == "bound":
        options = estimator.learning_options if options is None else options
        fit = vb_probit_maximize_bound(kernel, X, t, **common, **(options or {}))
        kernels = kernel if isinstance(kernel, (list, tuple)) else [kernel]
        # the constant classifier's bound: n log(1/C) (two classes in the one-GP binary model)
        floor = len(t) * np.log(1.0 / (2 if binary else n_classes))
        _warn_if_degenerate(fit, kernels, type(estimator).__name__, floor)
        return (list(fit.kernel) if isinstance(fit.kernel, tuple) else fit.kernel), fit
    options = {"n_iter": 50, "n_importance_samples": 500,
               **((estimator.learning_options if options is None else options) or {})}  # fmt: skip
    learning = vb_probit_learn_kernel(kernel, X, t, **common, **options)
    return (learning.kernels[0] if len(learning.kernels) == 1 else list(learning.kernels)), learning


def _warn_if_degenerate(fit, kernels, estimator="VBProbitGPC", floor=-np.inf):
    """Warn when the bound's maximum is (nearly) the constant classifier: for some class kernel the signal
    variance sits at the bottom of the box, or every lengthscale at the top, or the maximum is within one nat
    of the constant classifier's bound ``floor`` = n log(1/C) (a search may stop on that ridge before an edge).

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
        near_floor = search.value < floor + 1.0
        if variance_low or all_long or near_floor:
            why = (
                f"its maximum, {search.value:.2f}, is within one nat of the constant classifier's n log(1/C) = {floor:.2f}"
                if near_floor
                else "the signal variance at the bottom of the hyperparameter box or every lengthscale at its top"
            )
            warnings.warn(
                f"{estimator}: the VB bound is largest at (nearly) the constant classifier: {why}. The bound is not the "
                "evidence and can prefer such a kernel when the classes overlap; check the fit, or learn the kernel by "
                "G&R's importance sampling (VBProbitGPC(method='importance_sampling'), GibbsProbitGPC(optimize=True)) "
                "or by LaplaceGPC",
                UserWarning,
                stacklevel=5,
            )
            return


class VBProbitGPC(GPCBase):
    r"""Girolami & Rogers' variational Bayes multinomial probit GP classifier (binary or C classes).

    ``fit`` iterates G&R's Q(M)/Q(Y) updates, eqs 4.6 (C classes) or 4.9 (binary, one GP), to convergence of the lower
    bound (:mod:`gpc_ref.vb_probit`), after learning the kernel if ``optimize``; ``predict_proba`` is §4.5 / App. B.

    Parameters
    ----------
    kernel : SEKernel, list of SEKernel, or None
        Shared (unit SE if None) or one per class; G&R's exp(-∑_d φ_d(x_d - x'_d)²) is SEKernel(lengthscale=1/√(2φ)).
    optimize, method : bool, {"bound", "importance_sampling"}
        Learn the kernel first or keep ``kernel``. ``"bound"`` (default, deterministic): L-BFGS-B on the bound at the VB
        fixed point over every kernel log-parameter, keeping the search's posterior (``hyperparameter_fit_.vb``). The
        bound is not the evidence: if the classes overlap its maximum can be (nearly) the constant classifier, and a
        ``UserWarning`` says so (VB chapter, section `vb-learning-caution`). ``"importance_sampling"``, what G&R ran
        (§4.4, eqs 4.5, 4.7, 4.8): importance-sampled precisions for a fixed number of iterations, signal variance kept.
    rng, progress : int or numpy.random.Generator, bool
        Seed of the importance sampler or of the bound's random restarts; progress display.
    learning_options : dict or None
        Keyword arguments of :func:`~gpc_ref.vb_probit_learning.vb_probit_maximize_bound` or
        :func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel` (by default G&R's 50 iterations of 500 samples).
    max_iter, tol, accelerate : int, float, bool
        Fixed-kernel iterations (not the bound learner's: ``vb_max_iter``, ``vb_tol``, always accelerated): stop if the
        bound rises by less than tol·max(1, abs(bound)) and the estimated distance to the fixed point is below √tol
        (:func:`gpc_ref.acceleration.fixed_point_converged`). ``accelerate``: SQUAREM (same fixed point, far fewer
        iterations at a large kernel variance), ``max_iter`` then counting map evaluations, which can run to thousands.
    n_nodes : int
        Gauss–Hermite nodes for the expectations over u.
    two_class : {"binary", "multiclass"}
        With two classes, the one-GP binary model (§4.4.1) or two GPs.

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        The class labels, sorted, and the kernel learnt (or given).
    log_marginal_likelihood_ : float
        The variational lower bound on log p(t | X, ``kernel_``) (G&R Appendix C, corrected).
    posterior_, hyperparameter_fit_ : VBResult; BoundFit, KernelLearning or None
    lower_bound_ : ndarray
        Bound per learning iteration (``"bound"``: search evaluation, NaN if VB failed), then per final VB iteration.
    n_iter_ : int
        Learner iterations (L-BFGS-B or importance sampling) if the kernel is learnt, else ``posterior_.n_iter``.
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

    ``fit`` runs :func:`gpc_ref.gibbs.gibbs_probit_multiclass` (or :func:`~gpc_ref.gibbs.gibbs_probit_binary` for two
    classes with ``two_class="binary"``); ``predict_proba`` averages the predictive distribution over the retained
    samples (Rao–Blackwellised, :func:`~gpc_ref.gibbs.gibbs_predict_proba`). The sampler does not learn the kernel; with
    ``optimize`` it is first learnt as G&R did for Table 1, by VB with importance-sampled precisions
    (:func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`).

    Parameters
    ----------
    kernel, optimize : SEKernel, list of SEKernel, or None; bool
        Shared or one per class; ``optimize``: learn it first by VB importance sampling (G&R). None and not ``optimize``:
        the kernel maximising VB's bound from a unit SE start, as :class:`VBProbitGPC` learns it (a unit kernel is
        overconfident on inputs with little signal).
    rng : int or numpy.random.Generator
    progress : bool
        Show a progress bar while sampling.
    learning_options : dict or None
        Keyword arguments of G&R's kernel learning, :func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`.
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
    classes_, kernel_ : ndarray, kernel
        The class labels, sorted, and the kernel learnt (or given).
    log_marginal_likelihood_ : float
        G&R's Monte Carlo estimate of the log evidence, the log of the average likelihood over ``n_evidence_samples``
        prior draws (:func:`~gpc_ref.gibbs.prior_sampling_log_evidence`): unbiased for the evidence but biased low on
        the log scale, with a large variance beyond a handful of points.
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
        elif self.kernel is None:
            # the sampler cannot learn its kernel, and a fixed unit kernel is overconfident where the inputs carry
            # little signal: the default is the kernel that maximises VB's bound, as VBProbitGPC learns it
            kernel, self.hyperparameter_fit_ = _learn_probit_kernel(
                self, kernel, X, t, binary, n_classes, rng, "bound", options={}
            )
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

    ``fit`` includes ``n_active`` points one at a time, updating the C posteriors Q(m_c) by G&R eqs 5.1–5.4 and 4.3–4.4
    (:func:`gpc_ref.ivm.ivm_fit`; memory O(CSn), time O(CnS²)); ``predict_proba`` uses the active set (§4.5, eq 5.5).

    The defaults are not G&R's settings, which on data without a tuned kernel can lose to the constant classifier (IVM
    chapter, section `sec-ivm-defaults`); for G&R's, pass ``selection="predictive"``, ``n_active=50`` and a kernel.

    Parameters
    ----------
    kernel : SEKernel, sequence of SEKernel, or None
        Shared or one per class. None: :func:`gpc_ref.ivm.median_distance_kernel` at ``fit`` (isotropic SE, lengthscale
        the median pairwise training distance, a cheap rule, not learnt; variance 10); ``kernel__<name>`` parameters set
        with ``kernel=None`` start from the fixed ``SEKernel(variance=10)`` instead.
    optimize, learning_options : bool, dict or None
        Learn the kernel as G&R did (§6.3), by VB with importance-sampled precisions on a first IVM pass's points, and
        refit; ``learning_options`` go to :func:`~gpc_ref.vb_probit_learning.vb_probit_learn_kernel`.
    rng, progress : int or numpy.random.Generator, bool
        Seed of the first point, random selection and the kernel learning; progress display.
    n_active, selection : int, {"random", "predictive", "entropy"}
        Number S of points to include (if the data has fewer, all, in one ADF pass: not G&R §4's VB fixed point), chosen
        uniformly at random (default: keeps the data's class shares), by smallest predictive probability of the true
        class (eq 5.5), or by largest entropy reduction (Lawrence et al. 2003).
    n_nodes, screen : int, bool
        Gauss–Hermite nodes for eqs 4.3–4.5; ``screen``: shortlist the predictive rule's candidates by the product of
        pairwise probabilities (a lower bound on eq 5.5) before quadrature (:func:`gpc_ref.ivm.select_predictive`).

    Attributes
    ----------
    classes_, kernel_ : ndarray, kernel
        The class labels, sorted, and the kernel learnt (or given).
    active_set_ : ndarray (S,)
        Indices (into the training data) of the included points, in inclusion order.
    log_marginal_likelihood_ : float
        Prequential log evidence of the active set's labels, ∑_l log P(t_(n_l) | points included before n_l) (eq 5.5):
        it covers S labels, not n, so it is not comparable with the other estimators' evidences.
    training_log_predictive_, class_frequency_log_predictive_ : float
        Mean log probability of the training labels under the fit and under the class frequencies (in-sample);
        ``prequential_log_predictive_`` and ``prequential_class_frequency_log_predictive_``: of each included label
        predicted from the points included before it (out-of-sample with random selection). A lower fit score gives
        :class:`~gpc_ref.ivm.BelowClassFrequenciesWarning` (the prequential one with random selection).
    posterior_, hyperparameter_fit_ : IVMFit; KernelLearning or None
    """

    def __init__(
        self, kernel: SEKernel | Sequence[SEKernel] | None = None, optimize: bool = False,
        rng: int | np.random.Generator = 0, progress: bool = False, *, n_active: int = 200,
        selection: str = "random", learning_options: dict | None = None, n_nodes: int = 48, screen: bool = True,
    ) -> None:  # fmt: skip
        self._store_params(locals())

    _default_kernel_scales_with_data = True  # the median-distance kernel (see the class docstring)

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
        from ..ivm import prequential_class_frequency_log_predictive
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
        self.prequential_log_predictive_ = float(np.mean(self.posterior_.log_target_probability))
        self.prequential_class_frequency_log_predictive_ = prequential_class_frequency_log_predictive(
            codes[self.active_set_], len(self.classes_)
        )
        if (
            self.selection == "random"
            and self.prequential_log_predictive_ < self.prequential_class_frequency_log_predictive_
        ):
            # with random selection each included point is predicted before it is seen: an out-of-sample score,
            # which, unlike the training labels' score below, can see a kernel that overfits
            warnings.warn(
                f"SparseIVM: predicting each included point from the points included before it (an out-of-sample "
                f"estimate: selection='random'), the fit's mean log predictive probability is "
                f"{self.prequential_log_predictive_:.3f}, below the {self.prequential_class_frequency_log_predictive_:.3f} "
                f"of predicting the class frequencies of those points ({self.posterior_.n_active} included points): "
                "the classifier is likely to do worse than a constant one on new data, the kernel is too flexible "
                "for the signal in these inputs. Learn the kernel (optimize=True), pass a longer lengthscale or a "
                "smaller variance, or use a constant classifier.",
                BelowClassFrequenciesWarning,
                stacklevel=3,
            )
        elif self.training_log_predictive_ < self.class_frequency_log_predictive_:
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
