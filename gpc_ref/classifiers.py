"""Thin scikit-learn-style estimators around the reference functions.

The functions in the method modules are the reference; these classes only wrap
them for coursework. They follow scikit-learn's conventions by duck typing (no
scikit-learn import): the constructor stores its arguments unchanged, ``fit(X,
y)`` returns ``self``, fitted attributes end in ``_``, ``predict_proba`` returns
an (n, K) array whose columns follow ``classes_``, and ``get_params`` /
``set_params`` make them usable with scikit-learn's model-selection tools.

Any label values are accepted (strings, integers, two or more classes); they
are mapped internally to the coding each paper uses.
"""
from __future__ import annotations

import inspect

import numpy as np

from .kernels import SEKernel
from .validation import check_class_labels, check_matrix, check_same_length

__all__ = ["GPCBase", "LaplaceGPC", "VariationalBoundsGPC", "EPGPC", "VBProbitGPC", "GibbsProbitGPC", "SparseIVM"]


class GPCBase:
    """Shared plumbing: parameters, input checks, ``predict`` and ``score``.

    Subclasses implement ``fit`` (calling :meth:`_validate_training_data`) and
    ``predict_proba``.
    """

    # ------------------------------------------------------------ scikit-learn protocol
    @classmethod
    def _param_names(cls):
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self, deep=True):
        """Constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor arguments; unknown names raise ``ValueError``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; valid parameters: {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{name}={value!r}" for name, value in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self):
        """Declare a classifier to scikit-learn ≥ 1.6 (``cross_val_score``, ``GridSearchCV``).

        scikit-learn is imported only when scikit-learn itself asks, so gpc_ref
        does not depend on it.
        """
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(), input_tags=InputTags())

    # ------------------------------------------------------------ input handling
    def _validate_training_data(self, X, y, min_classes=2, max_classes=None):
        """Check ``X`` and ``y``; set ``classes_``, ``n_features_in_``; return (X, codes 0..K−1)."""
        X = check_matrix(X, "X")
        y = np.asarray(y)
        check_same_length(X, y, "X", "y")
        classes, codes = check_class_labels(y, "y", min_classes=min_classes)
        if max_classes is not None and len(classes) > max_classes:
            raise ValueError(
                f"{type(self).__name__} handles at most {max_classes} classes; y has {len(classes)}"
            )
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        return X, codes

    def _default_kernel(self, kernel):
        """The kernel to start from: the one given, or a unit SE kernel."""
        if kernel is None:
            return SEKernel()
        if not isinstance(kernel, SEKernel):
            raise ValueError(f"kernel must be an SEKernel; got {type(kernel).__name__}")
        return kernel

    def _validate_test_data(self, X):
        if not hasattr(self, "classes_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")
        return check_matrix(X, "X", n_features=self.n_features_in_)

    # ------------------------------------------------------------ shared predictions
    def predict(self, X):
        """The most probable class of each row of ``X``."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y):
        """Mean accuracy on ``(X, y)``, as scikit-learn's classifiers report it."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


# ===================================================================== LaplaceGPC (Laplace and HMC chapter)
class LaplaceGPC(GPCBase):
    """Gaussian process classifier by the Laplace approximation (Williams & Barber 1997, 1998).

    Two classes: logistic likelihood, posterior mode by Newton's method
    (:func:`gpc_ref.laplace.laplace_mode`), class probabilities from the Gaussian latent
    predictive squashed by ``prediction``. More than two classes: the softmax Laplace
    approximation of W&B 1998 §4 (one coupled model over all classes, never one-vs-rest).

    Inputs are used as given; W&B standardise them on the training set first
    (:class:`gpc_ref.datasets.Standardizer`).

    Parameters
    ----------
    kernel : SEKernel or None
        Starting (or, with ``optimize=False``, fixed) kernel; ``None`` is a unit SE kernel.
    optimize : bool
        Fit the hyperparameters by maximum penalised likelihood (MAP): the Laplace evidence
        plus W&B's N(``prior_mean``, ``prior_sd``²) priors on their log-parameters
        (:func:`gpc_ref.laplace.map_hyperparameters`; multi-class:
        :func:`gpc_ref.laplace.softmax_laplace_optimize` with the same prior).
    hmc : bool
        Two classes only: sample the hyperparameters by Hybrid Monte Carlo
        (:func:`gpc_ref.hmc.laplace_hmc`, W&B's settings unless ``hmc_options`` says otherwise)
        and average the predictions over the retained samples (W&B 1997 eq 9). With
        ``optimize=True`` as well, the chain starts from the MAP point.
    prediction : {"erf_mixture", "mackay", "quadrature", "exact"}
        How the binary latent predictive is squashed (:func:`gpc_ref.laplace.laplace_predict_proba`).
    multiclass_prediction : {"qmc", "gauss_hermite", "cubature", "monte_carlo"}
        How the multi-class latent predictive is pushed through the softmax
        (:func:`gpc_ref.laplace.softmax_gaussian_expectation`). The default,
        deterministic quasi-Monte Carlo, stays accurate for the large latent
        variances that evidence-optimal hyperparameters produce, where the
        Gauss–Hermite and cubature rules are off by 0.01–0.2 (multi-class chapter).
    n_restarts : int
        Extra optimiser starts besides the given kernel.
    prior_mean, prior_sd : float
        W&B's hyperprior (−3, 3).
    hmc_options : dict or None
        Keyword arguments for :func:`gpc_ref.hmc.laplace_hmc` (``step_size``, ``n_leapfrog``,
        ``n_iter``, ``burn_in``, ``progress``).
    rng : int or numpy.random.Generator
        Seed for restarts, HMC and Monte Carlo predictions.

    Attributes
    ----------
    classes_ : ndarray
        Sorted label values; ``predict_proba`` columns follow this order (for two classes the
        second is the paper's class +1).
    kernel_ : SEKernel
        The kernel used for predictions (MAP kernel when ``optimize``; HMC's starting kernel).
    log_evidence_ : float
        Approximate log evidence at ``kernel_`` (W&B 1997 eq 10; multi-class: its softmax analogue).
    mode_ : LaplaceMode or SoftmaxLaplaceMode
    map_ : MAPResult, SoftmaxLaplaceFit or None
    hmc_ : LaplaceHMCResult or None

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = np.where(X[:, 0] > 0, "yes", "no")
    >>> model = LaplaceGPC(optimize=False).fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    def __init__(self, kernel=None, optimize=True, hmc=False, prediction="erf_mixture",
                 multiclass_prediction="qmc", n_restarts=3, prior_mean=-3.0, prior_sd=3.0,
                 hmc_options=None, rng=0):
        self.kernel = kernel
        self.optimize = optimize
        self.hmc = hmc
        self.prediction = prediction
        self.multiclass_prediction = multiclass_prediction
        self.n_restarts = n_restarts
        self.prior_mean = prior_mean
        self.prior_sd = prior_sd
        self.hmc_options = hmc_options
        self.rng = rng

    def _check_settings(self):
        from .laplace import PREDICTION_METHODS

        if self.prediction not in PREDICTION_METHODS:
            raise ValueError(f"prediction must be one of {PREDICTION_METHODS}; got {self.prediction!r}")
        if self.multiclass_prediction not in ("qmc", "gauss_hermite", "cubature", "monte_carlo"):
            raise ValueError("multiclass_prediction must be 'qmc', 'gauss_hermite', 'cubature' or 'monte_carlo'; "
                             f"got {self.multiclass_prediction!r}")
        if self.hmc_options is not None and not isinstance(self.hmc_options, dict):
            raise ValueError(f"hmc_options must be a dict or None; got {type(self.hmc_options).__name__}")
        for name in ("optimize", "hmc"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}")

    def fit(self, X, y):
        """Fit the Laplace approximation (and the hyperparameters, if asked) to ``(X, y)``."""
        from .laplace import laplace_mode, log_hyperprior, map_hyperparameters
        from .validation import check_rng

        self._check_settings()
        X, codes = self._validate_training_data(X, y)
        kernel = self._default_kernel(self.kernel)
        rng = check_rng(self.rng)
        self.X_train_ = X
        self.map_, self.hmc_ = None, None
        if len(self.classes_) == 2:
            # W&B's coding: the second class (in classes_ order) is y = +1
            y_pm1 = 2.0 * codes - 1.0
            self.y_train_ = y_pm1
            if self.optimize:
                self.map_ = map_hyperparameters(kernel, X, y_pm1, rng, prior_mean=self.prior_mean,
                                                prior_sd=self.prior_sd, n_restarts=self.n_restarts)
                kernel = self.map_.kernel
            self.kernel_ = kernel
            self.mode_ = laplace_mode(kernel.K(X), y_pm1)
            self.log_evidence_ = self.mode_.log_evidence
            if self.hmc:
                from .hmc import laplace_hmc

                self.hmc_ = laplace_hmc(kernel, X, y_pm1, rng, prior_mean=self.prior_mean, prior_sd=self.prior_sd,
                                        **(self.hmc_options or {}))
            return self
        if self.hmc:
            raise ValueError("hmc=True is available for two classes only (W&B used MAP for the multi-class "
                             "problem); use optimize=True")
        from .laplace import one_hot_labels, softmax_laplace_evidence, softmax_laplace_optimize

        Y = one_hot_labels(codes, len(self.classes_))
        self.y_train_ = Y
        if self.optimize:
            def log_prior(theta):
                return log_hyperprior(kernel.with_theta(theta), self.prior_mean, self.prior_sd)

            self.map_ = softmax_laplace_optimize(kernel, X, Y, log_prior=log_prior, n_restarts=self.n_restarts,
                                                 rng=rng)
            kernel = self.map_.kernel
        self.kernel_ = kernel
        evidence = softmax_laplace_evidence(kernel, X, Y)
        self.mode_ = evidence.mode
        self.log_evidence_ = evidence.log_evidence
        return self

    def predict_latent(self, X):
        """Mean and variance of the Gaussian latent predictive at ``X`` (two classes, fixed ``kernel_``)."""
        from .laplace import laplace_predict_latent

        X = self._validate_test_data(X)
        if len(self.classes_) != 2:
            raise ValueError("predict_latent is for two classes; the multi-class latent predictive is "
                             "gpc_ref.laplace.softmax_laplace_predict_latent")
        return laplace_predict_latent(self.mode_, self.kernel_, self.X_train_, X)

    def predict_proba(self, X):
        """Class probabilities, shape (n, K), columns in ``classes_`` order."""
        from .laplace import laplace_predict_latent, laplace_predict_proba
        from .validation import check_rng

        X = self._validate_test_data(X)
        if len(self.classes_) == 2:
            if self.hmc_ is not None:
                from .hmc import laplace_hmc_predict_proba

                # W&B 1997 eq 9: average the fixed-hyperparameter predictions over the HMC samples
                p = laplace_hmc_predict_proba(self.hmc_, self.X_train_, self.y_train_, X, method=self.prediction)
            else:
                mean, var = laplace_predict_latent(self.mode_, self.kernel_, self.X_train_, X)
                p = laplace_predict_proba(mean, var, method=self.prediction)
            return np.column_stack([1.0 - p, p])
        from .laplace import softmax_laplace_predict_proba

        rng = check_rng(self.rng) if self.multiclass_prediction == "monte_carlo" else None
        return softmax_laplace_predict_proba(self.mode_, self.kernel_, self.X_train_, X,
                                             method=self.multiclass_prediction, rng=rng)


# ===================================================================== VariationalBoundsGPC (Gibbs & MacKay chapter)
class VariationalBoundsGPC(GPCBase):
    """Gibbs & MacKay's variational GP classifier (binary), from the Jaakkola–Jordan bounds.

    ``fit`` maximises the lower bound Z' jointly over the variational parameters
    ν and the kernel's log-hyperparameters, then, with those hyperparameters
    fixed, minimises the upper bound Z'' over μ (G&M §IV-C); see
    :func:`gpc_ref.variational_bounds.optimize_lower_bound` and
    :func:`~gpc_ref.variational_bounds.optimize_upper_bound`.
    ``predict_proba`` uses the Gaussian approximation of the posterior given by
    the chosen bound with MacKay's probit approximation (G&M eqs 17–23, 27–29,
    with the corrections derived in the chapter).

    Parameters
    ----------
    kernel : SEKernel or None
        Starting kernel (a unit SE kernel if None); the parameters in
        ``kernel.theta`` are learnt when ``optimize`` is True.
    bound : {"lower", "upper"}
        Which bound's posterior approximation ``predict_proba`` uses (G&M quote
        the lower bound's in Table I).
    optimize : bool
        Learn the hyperparameters by maximising Z' (else only ν and μ are fitted).
    n_restarts : int
        Extra random starts of the hyperparameters (G&M used 20 for their toy).
    rng : int or numpy.random.Generator
        Seeds the restarts.
    nu_update : {"gradient", "fixed_point"}
        Joint gradient ascent over (ν, θ), or the Jaakkola–Jordan fixed point for ν.
    log_prior : callable or None
        ``log_prior(theta) -> (value, gradient)`` added to log Z' when learning θ.

    Attributes
    ----------
    classes_ : ndarray (2,)
        Class labels; ``classes_[1]`` is G&M's t = 1.
    kernel_ : SEKernel
        The fitted kernel.
    lower_fit_ : LowerBoundFit
    upper_fit_ : UpperBoundFit
    log_Z_lower_, log_Z_upper_ : float
        log Z' ≤ log P(D|Θ) ≤ log Z'' at the fitted hyperparameters.
    """

    def __init__(self, kernel=None, bound="lower", optimize=True, n_restarts=0, rng=0, nu_update="gradient",
                 log_prior=None):
        self.kernel = kernel
        self.bound = bound
        self.optimize = optimize
        self.n_restarts = n_restarts
        self.rng = rng
        self.nu_update = nu_update
        self.log_prior = log_prior

    def fit(self, X, y):
        """Fit ν, Θ (and μ) to training inputs ``X`` (n, D) and two-valued labels ``y``."""
        from .variational_bounds import optimize_lower_bound_restarts, optimize_upper_bound

        if self.bound not in ("lower", "upper"):
            raise ValueError(f"bound must be 'lower' or 'upper'; got {self.bound!r}")
        X, t = self._validate_training_data(X, y, min_classes=2, max_classes=2)
        kernel = self._default_kernel(self.kernel)
        best, _ = optimize_lower_bound_restarts(
            X, t, kernel, self.rng, n_restarts=self.n_restarts if self.optimize else 0,
            optimize_theta=bool(self.optimize), nu_update=self.nu_update, log_prior=self.log_prior)
        self.kernel_ = best.kernel
        self.lower_fit_ = best
        self.upper_fit_ = optimize_upper_bound(self.kernel_.K(X), t)
        self.log_Z_lower_ = best.bound.log_Z
        self.log_Z_upper_ = self.upper_fit_.bound.log_Z
        self.X_train_ = X
        return self

    def predict_latent(self, X):
        """Mean and variance of the approximate posterior of the latent a(x) under the chosen bound."""
        from .variational_bounds import predict_lower, predict_upper

        X = self._validate_test_data(X)
        if self.bound == "lower":
            return predict_lower(self.lower_fit_.bound, self.kernel_, self.X_train_, X)
        return predict_upper(self.upper_fit_.bound, self.kernel_, self.X_train_, X)

    def predict_proba(self, X):
        """(n, 2) class probabilities, columns in ``classes_`` order (G&M eqs 22, 29)."""
        from .variational_bounds import predict_proba_bound

        mean, var = self.predict_latent(X)
        p = predict_proba_bound(mean, var)
        return np.column_stack([1.0 - p, p])


# ===================================================================== EPGPC (Kim & Ghahramani chapter)
class EPGPC(GPCBase):
    """Binary Gaussian process classifier by expectation propagation (Kim & Ghahramani 2003).

    The posterior over the latent values is the EP Gaussian (:func:`gpc_ref.ep.expectation_propagation`);
    the hyperparameters are learnt by EM-EP (:func:`gpc_ref.ep.em_ep`), by maximising the EP evidence
    directly (:func:`gpc_ref.ep.maximize_ep_evidence`), or kept fixed.

    Parameters
    ----------
    kernel : SEKernel or None
        Starting (or fixed) kernel. ``None`` gives a unit SE kernel for the probit and, for the
        label-noise likelihood, K&G's starting covariance (their footnote 7): ``SEKernel(variance=1,
        lengthscale=1/√0.05, bias=1e-4, jitter=1e-3, learn_bias=True, learn_jitter=True)``; the
        jitter is their latent noise :math:`v_2`.
    likelihood : {"probit", "label_noise"}
        ``"probit"``: :math:`\\Phi(yf)`. ``"label_noise"``: K&G's eq 9,
        :math:`\\epsilon + (1-2\\epsilon)H(yf)`, with the latent noise in the kernel.
    learn : {"em", "evidence", None}
        EM-EP, direct maximisation of the EP evidence, or no learning.
    epsilon : float
        Starting (or fixed) labelling-error rate for ``"label_noise"``.
    learn_epsilon : bool
        Learn ε (``"label_noise"`` only): by K&G's r/n in EM-EP, by its gradient otherwise.
    fixed : tuple of str
        Kernel parameter names (``kernel.theta_names``) to hold fixed while learning.
    tol, max_iter : float, int
        EM-EP convergence tolerance and iteration limit (``max_iter`` also limits the direct optimiser).
    damping : float in (0, 1]
        EP damping (EP restarts with more damping by itself if it fails to converge while learning).
    progress : bool
        Show EM-EP progress with tqdm.

    Attributes
    ----------
    classes_ : ndarray (2,)
        ``classes_[1]`` is the paper's y = +1.
    kernel_ : SEKernel
        The (learnt) kernel.
    epsilon_ : float
        The (learnt) labelling-error rate (0 for the probit).
    log_evidence_ : float
        EP log evidence at ``kernel_`` and ``epsilon_`` (K&G eq 12).
    ep_ : gpc_ref.ep.EPResult
    fit_ : EMEPResult, EvidenceFitResult or None

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2)); y = np.where(X[:, 0] > 0, "yes", "no")
    >>> model = EPGPC(learn=None).fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    def __init__(self, kernel=None, likelihood="probit", learn="em", epsilon=0.0, learn_epsilon=True, fixed=(),
                 tol=1e-4, max_iter=200, damping=1.0, progress=False):
        self.kernel = kernel
        self.likelihood = likelihood
        self.learn = learn
        self.epsilon = epsilon
        self.learn_epsilon = learn_epsilon
        self.fixed = fixed
        self.tol = tol
        self.max_iter = max_iter
        self.damping = damping
        self.progress = progress

    def _likelihood_object(self):
        from .likelihoods import LabelNoiseLikelihood, ProbitLikelihood

        if self.likelihood == "probit":
            return ProbitLikelihood()
        if self.likelihood == "label_noise":
            return LabelNoiseLikelihood(self.epsilon, 0.0)
        raise ValueError(f"likelihood must be 'probit' or 'label_noise'; got {self.likelihood!r}")

    def fit(self, X, y):
        """Run EP (and learn the hyperparameters, if asked) on ``(X, y)``."""
        from .ep import _ep_with_fallback, em_ep, maximize_ep_evidence

        if self.learn not in ("em", "evidence", None):
            raise ValueError(f"learn must be 'em', 'evidence' or None; got {self.learn!r}")
        likelihood = self._likelihood_object()
        X, codes = self._validate_training_data(X, y, max_classes=2)
        if self.kernel is None and self.likelihood == "label_noise":
            kernel = SEKernel(variance=1.0, lengthscale=1.0 / np.sqrt(0.05), bias=1e-4, jitter=1e-3,
                              learn_bias=True, learn_jitter=True)
        else:
            kernel = self._default_kernel(self.kernel)
        # K&G's coding: the second class (in classes_ order) is y = +1
        y_pm1 = 2.0 * codes - 1.0
        self.X_train_ = X
        self.fit_ = None
        learn_epsilon = bool(self.learn_epsilon) and self.likelihood == "label_noise"
        if self.learn == "em":
            self.fit_ = em_ep(kernel, X, y_pm1, likelihood, learn_epsilon=learn_epsilon, fixed=self.fixed,
                              max_iter=self.max_iter, tol=self.tol, damping=self.damping, progress=self.progress)
            self.kernel_, self.epsilon_, self.ep_ = self.fit_.kernel, self.fit_.epsilon, self.fit_.ep
        elif self.learn == "evidence":
            self.fit_ = maximize_ep_evidence(kernel, X, y_pm1, likelihood, learn_epsilon=learn_epsilon,
                                             fixed=self.fixed, maxiter=self.max_iter, damping=self.damping)
            self.kernel_, self.epsilon_, self.ep_ = self.fit_.kernel, self.fit_.epsilon, self.fit_.ep
        else:
            self.kernel_ = kernel
            self.ep_, _ = _ep_with_fallback(kernel.K(X), y_pm1, likelihood, None, None, self.damping, 1e-6)
            self.epsilon_ = self.ep_.epsilon
        self.log_evidence_ = self.ep_.log_evidence
        return self

    def predict_latent(self, X):
        """Mean and variance of the latent predictive :math:`f_*` at ``X`` (latent noise included)."""
        from .ep import ep_predict

        X = self._validate_test_data(X)
        prediction = ep_predict(self.ep_, self.kernel_.K(self.X_train_, X), self.kernel_.diag(X))
        return prediction.mean, prediction.var

    def predict_proba(self, X):
        """Class probabilities, shape (n, 2), columns in ``classes_`` order."""
        from .ep import ep_predict

        X = self._validate_test_data(X)
        p = ep_predict(self.ep_, self.kernel_.K(self.X_train_, X), self.kernel_.diag(X)).proba
        return np.column_stack([1.0 - p, p])


# ===================================================================== VBProbitGPC, GibbsProbitGPC (Girolami & Rogers)
def _probit_kernels(estimator, kernel, n_classes):
    """One SEKernel (shared) or a list of ``n_classes`` SEKernels, checked."""
    from .kernels import SEKernel as _SE

    if kernel is None or isinstance(kernel, _SE):
        return estimator._default_kernel(kernel)
    kernels = list(kernel)
    if len(kernels) != n_classes or not all(isinstance(k, _SE) for k in kernels):
        raise ValueError(f"kernel must be an SEKernel or a list of {n_classes} SEKernels (one per class)")
    return kernels


def _probit_labels(codes, n_classes, two_class):
    """(labels for the core functions, binary?) from codes 0..K−1; binary labels are ±1 (+1 ↔ classes_[1])."""
    if two_class not in ("binary", "multiclass"):
        raise ValueError(f"two_class must be 'binary' or 'multiclass'; got {two_class!r}")
    if n_classes == 2 and two_class == "binary":
        return np.where(codes == 1, 1.0, -1.0), True
    return codes, False


def _probit_cross(kernels, X_train, X):
    """Cross covariances and prior variances, shared or stacked per class."""
    if isinstance(kernels, (list, tuple)):
        return np.stack([k.K(X_train, X) for k in kernels]), np.stack([k.diag(X) for k in kernels])
    return kernels.K(X_train, X), kernels.diag(X)


def _probit_train_cov(kernels, X):
    if isinstance(kernels, (list, tuple)):
        return np.stack([k.K(X) for k in kernels])
    return kernels.K(X)


class VBProbitGPC(GPCBase):
    """Girolami & Rogers' variational Bayes multinomial probit GP classifier (binary or K classes).

    ``fit`` iterates the Q(M)/Q(Y) updates of G&R eqs 4.6 (K classes) or 4.9
    (binary, one GP) to convergence of the lower bound, see
    :func:`gpc_ref.vb_probit.vb_probit_multiclass` and
    :func:`~gpc_ref.vb_probit.vb_probit_binary`. With ``learn_kernel=True`` it
    first runs ``n_learning_iter`` iterations that also update the kernel
    precisions by importance sampling with the Exp/Gamma hierarchy (eqs 4.5,
    4.7, 4.8; :func:`~gpc_ref.vb_probit.vb_probit_learn_kernel`), then fixes the
    kernel and converges. ``predict_proba`` is §4.5 / Appendix B.

    Parameters
    ----------
    kernel : SEKernel, list of SEKernel, or None
        Shared kernel (a unit SE kernel if None) or one per class. G&R's
        :math:`\\exp(-\\sum_d\\varphi_d(x_d - x'_d)^2)` is ``SEKernel(lengthscale=1/sqrt(2 phi))``;
        give an array of lengthscales to learn one precision per input (ARD).
    learn_kernel : bool
        Learn the precisions by importance sampling (the variance is kept).
    n_learning_iter, n_importance_samples : int
        Iterations and samples per iteration of the learning phase (the paper: 50 and 500).
    prior_shape, prior_rate : float
        σ, τ of the Gamma hyperprior on the exponential rates ψ (the paper: 1e-3).
    include_trace : bool
        Importance weights with the trace term (default) or as printed in eq 4.5.
    max_iter, tol : int, float
        Limits of the fixed-kernel iterations (stop when the bound rises by less than tol·max(1, |bound|)).
    accelerate : bool
        SQUAREM extrapolation of the fixed-kernel iterations (same fixed point, fewer iterations).
    n_nodes : int
        Gauss–Hermite nodes for the expectations over u.
    two_class : {"binary", "multiclass"}
        With two classes, use the one-GP binary model (§4.4.1) or two GPs; both
        give the same predictions (the book shows why), but different bounds.
    rng : int or numpy.random.Generator
        Seeds the importance sampler.

    Attributes
    ----------
    classes_ : ndarray
    kernel_ : SEKernel or list of SEKernel
        The kernel(s) used for the final fit.
    result_ : VBResult
        The converged variational posterior.
    learning_ : KernelLearning or None
        History of the learning phase.
    lower_bound_ : ndarray
        The bound at every iteration: the learning phase (each value conditioned
        on the kernel of that iteration) followed by the fixed-kernel iterations.
    log_marginal_likelihood_bound_ : float
        The final bound on log p(t | X, kernel).
    """

    def __init__(self, kernel=None, learn_kernel=False, n_learning_iter=50, n_importance_samples=500,
                 prior_shape=1e-3, prior_rate=1e-3, include_trace=True, max_iter=1000, tol=1e-9, accelerate=False,
                 n_nodes=48, two_class="binary", rng=0):
        self.kernel = kernel
        self.learn_kernel = learn_kernel
        self.n_learning_iter = n_learning_iter
        self.n_importance_samples = n_importance_samples
        self.prior_shape = prior_shape
        self.prior_rate = prior_rate
        self.include_trace = include_trace
        self.max_iter = max_iter
        self.tol = tol
        self.accelerate = accelerate
        self.n_nodes = n_nodes
        self.two_class = two_class
        self.rng = rng

    def fit(self, X, y):
        """Fit Q(M)Q(Y) (and the kernel precisions if ``learn_kernel``) to inputs ``X`` (n, D) and labels ``y``."""
        from .likelihoods import MultinomialProbitLikelihood
        from .vb_probit import vb_probit_binary, vb_probit_learn_kernel, vb_probit_multiclass

        X, codes = self._validate_training_data(X, y, min_classes=2)
        n_classes = len(self.classes_)
        t, binary = _probit_labels(codes, n_classes, self.two_class)
        kernels = _probit_kernels(self, self.kernel, 1 if binary else n_classes)
        likelihood = MultinomialProbitLikelihood(self.n_nodes)
        self.learning_ = None
        history = []
        if self.learn_kernel:
            self.learning_ = vb_probit_learn_kernel(
                X, t, kernels, self.rng, n_iter=self.n_learning_iter, n_importance_samples=self.n_importance_samples,
                prior_shape=self.prior_shape, prior_rate=self.prior_rate, n_classes=None if binary else n_classes,
                binary=binary, likelihood=likelihood, include_trace=self.include_trace)
            learnt = self.learning_.kernels
            kernels = learnt[0] if len(learnt) == 1 else list(learnt)
            history.append(self.learning_.lower_bound)
        K = _probit_train_cov(kernels, X)
        if binary:
            self.result_ = vb_probit_binary(K, t, max_iter=self.max_iter, tol=self.tol, accelerate=self.accelerate)
        else:
            self.result_ = vb_probit_multiclass(K, t, n_classes=n_classes, max_iter=self.max_iter, tol=self.tol,
                                                likelihood=likelihood, accelerate=self.accelerate)
        history.append(self.result_.lower_bound)
        self.kernel_ = kernels
        self.lower_bound_ = np.concatenate(history)
        self.log_marginal_likelihood_bound_ = self.result_.log_marginal_likelihood_bound
        self.X_train_ = X
        self._likelihood = likelihood
        return self

    def predict_latent(self, X):
        """Mean and variance of each :math:`m_k^{new}` under Q(M) (§4.5): two (n, C) arrays (C = 1 if binary)."""
        from .vb_probit import vb_predict_latent

        X = self._validate_test_data(X)
        cross, diag = _probit_cross(self.kernel_, self.X_train_, X)
        return vb_predict_latent(self.result_, cross, diag)

    def predict_proba(self, X):
        """(n, K) class probabilities in ``classes_`` order (G&R §4.5, Appendix B)."""
        from .vb_probit import vb_predict_proba

        X = self._validate_test_data(X)
        cross, diag = _probit_cross(self.kernel_, self.X_train_, X)
        return vb_predict_proba(self.result_, cross, diag, self._likelihood)


class GibbsProbitGPC(GPCBase):
    """Albert & Chib's Gibbs sampler for binary and multinomial probit GP classification (G&R Appendix D).

    ``fit`` runs :func:`gpc_ref.gibbs.gibbs_probit_multiclass` (or
    :func:`~gpc_ref.gibbs.gibbs_probit_binary` for two classes with
    ``two_class="binary"``) with the kernel fixed; ``predict_proba`` averages the
    predictive distribution over the retained samples (Rao–Blackwellised, see
    :func:`~gpc_ref.gibbs.gibbs_predict_proba`).

    Parameters
    ----------
    kernel : SEKernel, list of SEKernel, or None
    n_samples, burn_in, thin : int
        Retained samples, discarded iterations, and thinning (the paper: 1000 after 2000).
    n_predictive_samples : int or None
        Use this many retained samples (evenly spaced) for predictions; all if None.
    two_class : {"binary", "multiclass"}
    n_nodes : int
        Gauss–Hermite nodes for the predictive expectations over u.
    rng : int or numpy.random.Generator
    progress : bool
        Show a tqdm progress bar while sampling.

    Attributes
    ----------
    classes_, kernel_
    samples_ : GibbsSamples
    effective_sample_size_ : float
        Of the retained log-likelihood trace.
    """

    def __init__(self, kernel=None, n_samples=1000, burn_in=2000, thin=1, n_predictive_samples=None,
                 two_class="binary", n_nodes=48, rng=0, progress=False):
        self.kernel = kernel
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.thin = thin
        self.n_predictive_samples = n_predictive_samples
        self.two_class = two_class
        self.n_nodes = n_nodes
        self.rng = rng
        self.progress = progress

    def fit(self, X, y):
        """Sample the posterior of the latent values given inputs ``X`` (n, D) and labels ``y``."""
        from .gibbs import gibbs_probit_binary, gibbs_probit_multiclass

        X, codes = self._validate_training_data(X, y, min_classes=2)
        n_classes = len(self.classes_)
        t, binary = _probit_labels(codes, n_classes, self.two_class)
        kernels = _probit_kernels(self, self.kernel, 1 if binary else n_classes)
        K = _probit_train_cov(kernels, X)
        if binary:
            self.samples_ = gibbs_probit_binary(K, t, self.rng, n_samples=self.n_samples, burn_in=self.burn_in,
                                                thin=self.thin, progress=self.progress)
        else:
            self.samples_ = gibbs_probit_multiclass(K, t, self.rng, n_samples=self.n_samples, burn_in=self.burn_in,
                                                    thin=self.thin, n_classes=n_classes, progress=self.progress)
        self.kernel_ = kernels
        self.effective_sample_size_ = self.samples_.effective_sample_size
        self.X_train_ = X
        return self

    def predict_proba(self, X):
        """(n, K) Monte Carlo predictive probabilities in ``classes_`` order (G&R Appendix D)."""
        from .gibbs import gibbs_predict_proba
        from .likelihoods import MultinomialProbitLikelihood

        X = self._validate_test_data(X)
        cross, diag = _probit_cross(self.kernel_, self.X_train_, X)
        return gibbs_predict_proba(self.samples_, cross, diag, MultinomialProbitLikelihood(self.n_nodes),
                                   max_samples=self.n_predictive_samples)


# ===================================================================== SparseIVM (Girolami & Rogers §5)
class SparseIVM(GPCBase):
    """Girolami & Rogers' sparse multi-class GP classifier: the IVM by assumed density filtering.

    ``fit`` includes ``n_active`` training points one at a time, updating the K
    posteriors Q(m_k) by G&R eqs 5.1–5.4 with the truncated-Gaussian targets of
    eqs 4.3–4.4 (:func:`gpc_ref.ivm.ivm_fit`); memory O(K S N), time O(K N S²), and
    no N × N matrix. ``predict_proba`` uses only the active set (G&R §4.5, eq 5.5).
    The kernel parameters are fixed (G&R §6.3 supplies them from the VB fit).

    Parameters
    ----------
    kernel : SEKernel, sequence of SEKernel, or None
        One kernel shared by every class (a unit SE kernel if None; G&R's kernel
        :math:`\\exp(-\\sum_d\\varphi_d(x_d-x'_d)^2)` is ``SEKernel(lengthscale=1/sqrt(2 φ))``),
        or one per class in ``classes_`` order.
    n_active : int
        Number of points S to include (at most the number of training points).
    selection : {"predictive", "entropy", "random"}
        Smallest predictive probability of the true class (G&R eq 5.5), largest
        entropy reduction (Lawrence et al. 2003), or uniformly at random.
    rng : int or numpy.random.Generator
        Seeds the first point and random selection.
    n_nodes : int
        Gauss–Hermite nodes for eqs 4.3–4.5.
    screen : bool
        Rank the candidates of the predictive rule by the product of pairwise
        probabilities (a lower bound on eq 5.5) and score only a shortlist by
        quadrature (:func:`gpc_ref.ivm.select_predictive`): K − 1 instead of
        (K − 1) × ``n_nodes`` normal CDFs per candidate and step. False scores
        every candidate by quadrature.

    Attributes
    ----------
    classes_ : ndarray (K,)
    active_set_ : ndarray (S,)
        Indices (into the training data) of the included points, in inclusion order.
    fit_ : gpc_ref.ivm.IVMFit
        The full ADF state (M, means, variances, site targets, scores).
    """

    def __init__(self, kernel=None, n_active=50, selection="predictive", rng=0, n_nodes=48, screen=True):
        self.kernel = kernel
        self.n_active = n_active
        self.selection = selection
        self.rng = rng
        self.n_nodes = n_nodes
        self.screen = screen

    def fit(self, X, y):
        """Select ``n_active`` points of ``X`` (n, D) with labels ``y`` and fit the K posteriors."""
        from .ivm import ivm_fit
        from .likelihoods import MultinomialProbitLikelihood

        X, codes = self._validate_training_data(X, y, min_classes=2)
        kernel = self.kernel if isinstance(self.kernel, (list, tuple)) else self._default_kernel(self.kernel)
        if isinstance(self.n_active, bool) or not isinstance(self.n_active, (int, np.integer)) \
                or not 1 <= self.n_active <= X.shape[0]:
            raise ValueError(f"n_active must be an integer in 1..{X.shape[0]} (the number of training points); "
                             f"got {self.n_active!r}")
        self.fit_ = ivm_fit(X, codes, kernel, int(self.n_active), self.selection, self.rng,
                            n_classes=len(self.classes_), likelihood=MultinomialProbitLikelihood(self.n_nodes),
                            screen=bool(self.screen))
        self.active_set_ = self.fit_.active_set
        return self

    def predict_latent(self, X):
        """Means and variances (n, K) of the K latent functions at ``X``, from the active set."""
        from .ivm import ivm_predict

        X = self._validate_test_data(X)
        return ivm_predict(self.fit_, X)

    def predict_proba(self, X):
        """(n, K) class probabilities, columns in ``classes_`` order (G&R §4.5, eq 5.5)."""
        from .likelihoods import MultinomialProbitLikelihood

        mean, var = self.predict_latent(X)
        return MultinomialProbitLikelihood(self.n_nodes).predict(mean, var)
