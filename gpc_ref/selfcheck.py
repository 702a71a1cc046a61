r"""Self-checks for coursework: your implementation of an algorithm box against the reference.

The book asks you to implement its algorithm boxes yourself. Each check here runs your function on
a few seeded random problems and on hard ones (duplicate inputs, a large signal variance, separable
labels, extreme cavities), compares what it returns with what the reference function of
``gpc_ref`` returns on the same inputs, field by field with a tolerance suited to the quantity, and
says which case failed first: its inputs, the expected and the returned values, and the tolerance.
It never shows the reference code.

>>> import gpc_ref.selfcheck
>>> gpc_ref.selfcheck.available()[:3]
['laplace_mode', 'laplace_evidence_gradient', 'laplace_evidence']
>>> from gpc_ref.laplace import laplace_mode
>>> print(gpc_ref.selfcheck.check("laplace_mode", laplace_mode).passed)
True

Each name is the name of the reference function whose signature your function must have, e.g.
``laplace_mode(K, y)``; :func:`describe` says what is called and compared for each. Your function
may return the reference's result class, a dict with the same field names, or a tuple of the
compared fields in the order :func:`describe` gives; arrays may be of any shape with the same number
of entries (a column (n, 1) for a vector (n,)). Options that you do not implement (``tol``,
``max_iter``, ...) are never passed: each case calls your function with the arguments that
:func:`describe` lists, and a keyword argument only where the case needs a value other than the
reference's default. An exception raised by your function is reported as a failing case.
:func:`inputs` returns the arguments of any case, so that you can rerun the failing one yourself.

Which check belongs to which box of the book:

=========================  ================================================  ========================
name                       what you implement                                book
=========================  ================================================  ========================
laplace_mode               Newton's method for the binary Laplace mode       Alg. 4.1
laplace_evidence_gradient  gradient of the Laplace evidence, given the mode  Alg. 4.3
laplace_evidence           Laplace evidence and its gradient from a kernel   Alg. 4.3
softmax_laplace_mode       softmax Laplace mode in O(Cn³)                    Alg. 6.1
tilted_moments             EP site update: log Z_i, α_i, β_i of a tilted     Alg. 8.1 step 2
expectation_propagation    sequential EP to its fixed point                  Alg. 8.1
lower_bound                Jaakkola–Jordan lower bound log Z′ at fixed ν     Alg. 7.1
update_nu                  the fixed-point update of ν                       Alg. 7.1
vb_probit_binary           binary variational Bayes probit                   Alg. 9.1
vb_probit_multiclass       variational Bayes multinomial probit              Alg. 9.2
adf_include                one IVM inclusion, G&R eqs 5.1–5.4                Alg. 11.1 step 2.3
=========================  ================================================  ========================
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import is_dataclass

import numpy as np

from .ep import expectation_propagation
from .ep import tilted_moments
from .errors import ConvergenceWarning
from .ivm import adf_include
from .kernels import SEKernel
from .laplace import laplace_evidence
from .laplace import laplace_evidence_gradient
from .laplace import laplace_mode
from .laplace_multiclass import one_hot_labels
from .laplace_multiclass import softmax_laplace_mode
from .likelihoods import LabelNoiseLikelihood
from .likelihoods import MultinomialProbitLikelihood
from .variational_bounds import lower_bound
from .variational_bounds import update_nu
from .vb_probit import vb_probit_binary
from .vb_probit import vb_probit_multiclass

__all__ = ["CheckResult", "available", "describe", "check", "inputs"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of :func:`check`: ``passed`` and a printable ``message``.

    Attributes
    ----------
    name : str
        The check (the reference function's name).
    passed : bool
        True if every case agreed with the reference within the tolerances.
    message : str
        On failure, the first failing case: its inputs, the field, the expected and returned values
        and the tolerance; on success, what was compared on which cases.
    n_cases : int
        Number of cases of the check.
    n_passed : int
        Cases passed before the first failure (all of them if ``passed``).
    """

    name: str
    passed: bool
    message: str
    n_cases: int
    n_passed: int

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Field:
    """One compared output: |got − expected| ≤ atol + rtol·|expected| entrywise."""

    name: str
    rtol: float
    atol: float
    required: bool = True  # optional fields are compared only when the result names them
    last: bool = False  # a history (e.g. the bound after every iteration): compare its last entry


@dataclass(frozen=True)
class _Case:
    title: str  # what makes the case interesting, e.g. "duplicate inputs"
    args: tuple
    kwargs: dict
    inputs: str  # the inputs, printable: a recipe and the small arrays
    reference_kwargs: dict = field(default_factory=dict)  # tighter options for the expected values only


@dataclass(frozen=True)
class _Check:
    reference: Callable
    call: str  # how the student's function is called
    box: str
    fields: tuple[_Field, ...]
    cases: Callable[[], list[_Case]]
    in_place: tuple[int, ...] = ()  # positions of arguments the function updates in place (read back as fields)
    data: str = ""  # the likelihood and the label coding of the cases, in the book's words

    def reference_name(self) -> str:
        """The reference function's full name, e.g. ``gpc_ref.laplace.laplace_mode``."""
        reference = self.reference
        return f"{reference.__module__}.{reference.__name__}"


# ------------------------------------------------------------------------------------------------ problems
def _fmt(values, digits: int = 4) -> str:
    """A compact printout of a small array (a matrix of up to 30 entries row by row; else at most 12 entries)."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 0:
        return f"{float(array):.{digits}g}"
    if array.ndim == 2 and array.size <= 30:  # a small matrix (e.g. the inputs X) row by row
        return "[" + ", ".join("[" + ", ".join(f"{v:.{digits}g}" for v in row) + "]" for row in array) + "]"
    flat = array.ravel()
    shown = ", ".join(f"{v:.{digits}g}" for v in flat[:12])
    more = f", … ({flat.size} entries, shape {array.shape})" if flat.size > 12 else ""
    shape = f" shape {array.shape}" if array.ndim > 1 and flat.size <= 12 else ""
    return f"[{shown}{more}]{shape}"


def _binary_problem(kind: str, seed: int, n: int = 10):
    """Inputs X (n, 1 or 2), labels y in {−1, +1}, a kernel and a printable recipe, for one kind of case."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        X = rng.normal(size=(n, 2))
        y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
        kernel = SEKernel(variance=float(rng.uniform(0.5, 4.0)), lengthscale=float(rng.uniform(0.5, 2.0)))
    elif kind == "duplicate inputs":  # every input twice, so K is singular but for its jitter
        half = rng.normal(size=(n // 2, 1))
        X = np.vstack([half, half])
        y = np.where(X[:, 0] > 0, 1.0, -1.0)
        y[0] = -y[0]  # and one pair with conflicting labels
        kernel = SEKernel(variance=2.0, lengthscale=1.0)
    elif kind == "large signal variance":
        X = rng.normal(size=(n, 1))
        y = np.where(np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
        kernel = SEKernel(variance=1e3, lengthscale=0.8)
    elif kind == "separable labels":  # far apart classes and a long lengthscale
        X = np.concatenate([rng.uniform(-3.0, -1.0, n // 2), rng.uniform(1.0, 3.0, n - n // 2)])[:, None]
        y = np.where(X[:, 0] > 0, 1.0, -1.0)
        kernel = SEKernel(variance=25.0, lengthscale=3.0)
    else:  # pragma: no cover - the kinds are fixed below
        raise ValueError(kind)
    recipe = f"{kind} (seed {seed}): X = {_fmt(X, 3)}, y = {_fmt(y, 2)}, kernel {kernel!r}"
    return X, y, kernel, recipe


BINARY_KINDS = [
    ("random", 1),
    ("random", 2),
    ("duplicate inputs", 3),
    ("large signal variance", 4),
    ("separable labels", 5),
]


def _multiclass_problem(kind: str, seed: int, n: int = 12, n_classes: int = 3):
    """Inputs, class codes 0..C−1, a kernel and a recipe for the multi-class checks."""
    rng = np.random.default_rng(seed)
    if kind == "duplicate inputs":
        half = rng.normal(size=(n // 2, 2))
        X = np.vstack([half, half])
    elif kind == "separable labels":
        centres = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 4.0]])[:n_classes]
        X = centres[np.arange(n) % n_classes] + 0.3 * rng.normal(size=(n, 2))
    else:
        X = rng.normal(size=(n, 2))
    codes = np.digitize(X[:, 0] + 0.3 * X[:, 1] + 0.5 * rng.normal(size=n), [-0.4, 0.4])
    if kind == "separable labels":
        codes = np.arange(n) % n_classes
    codes[:n_classes] = np.arange(n_classes)  # every class has an example
    variance = {"large signal variance": 100.0, "separable labels": 16.0}.get(kind, 2.0)
    kernel = SEKernel(variance=variance, lengthscale=1.0)
    recipe = f"{kind} (seed {seed}): X = {_fmt(X, 3)}, classes = {codes.tolist()}, kernel {kernel!r}"
    return X, codes, kernel, recipe


# ------------------------------------------------------------------------------------------------ cases
def _laplace_mode_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        cases.append(_Case(kind, (kernel.K(X), y), {}, f"K = kernel.K(X), {recipe}"))
    return cases


def _laplace_gradient_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        kernel = kernel.with_params(bias=0.5)  # a third hyperparameter, with its own implicit term
        K = kernel.K(X)
        mode = laplace_mode(K, y, tol=1e-12)
        cases.append(
            _Case(
                kind,
                (mode, K, kernel.gradients(X)),
                {},
                f"mode = laplace_mode(K, y), K = kernel.K(X), dK = kernel.gradients(X), {recipe}",
            )
        )
    return cases


def _laplace_evidence_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        kernel = kernel.with_params(bias=0.5)
        cases.append(_Case(kind, (kernel, X, y), {}, recipe, {"tol": 1e-12}))
    return cases


def _softmax_mode_cases():
    cases = []
    for kind, seed in [
        ("random", 11),
        ("duplicate inputs", 12),
        ("large signal variance", 13),
        ("separable labels", 14),
    ]:
        X, codes, kernel, recipe = _multiclass_problem(kind, seed)
        Y = one_hot_labels(codes, 3)
        cases.append(
            _Case(kind, (kernel.K(X), Y), {}, f"K = kernel.K(X), Y = one-hot classes, {recipe}", {"tol": 1e-13})
        )
    # one covariance per class: K of shape (C, n, n)
    X, codes, _, recipe = _multiclass_problem("random", 15)
    kernels = [SEKernel(variance=v, lengthscale=ell) for v, ell in [(1.0, 0.7), (3.0, 1.5), (0.5, 1.0)]]
    K = np.stack([k.K(X) for k in kernels])
    cases.append(
        _Case(
            "one covariance per class",
            (K, one_hot_labels(codes, 3)),
            {},
            f"K = stack of three kernels {kernels!r} at X, {recipe}",
            {"tol": 1e-13},
        )
    )
    return cases


def _tilted_cases():
    rng = np.random.default_rng(21)
    y = np.where(rng.random(8) < 0.5, -1.0, 1.0)
    mean, var = rng.normal(scale=2.0, size=8), rng.uniform(0.1, 3.0, size=8)
    far_mean = np.array([-60.0, -30.0, -8.0, 0.0, 8.0, 60.0])  # deep in the tails: only log space survives
    cases = [
        _Case(
            "probit, random cavities",
            (y, mean, var),
            {},
            f"y = {_fmt(y)}, mean_cav = {_fmt(mean)}, var_cav = {_fmt(var)}",
        ),
        _Case(
            "probit, cavities far in the tails",
            (np.ones(6), far_mean, np.full(6, 0.5)),
            {},
            f"y = 1, mean_cav = {_fmt(far_mean)}, var_cav = 0.5",
        ),
        _Case(
            "probit, huge cavity variance",
            (y, mean, np.full(8, 1e6)),
            {},
            f"y = {_fmt(y)}, mean_cav = {_fmt(mean)}, var_cav = 1e6",
        ),
        _Case(
            "label noise ε = 0.05 with the step likelihood (s = 0)",
            (y, mean, var),
            {"epsilon": 0.05, "latent_noise": 0.0},
            f"y = {_fmt(y)}, mean_cav = {_fmt(mean)}, var_cav = {_fmt(var)}, epsilon = 0.05, latent_noise = 0",
        ),
        _Case(
            "label noise ε = 0.2, latent noise s = 0.5, cavities in the tails",
            (np.ones(6), far_mean, np.full(6, 0.5)),
            {"epsilon": 0.2, "latent_noise": 0.5},
            f"y = 1, mean_cav = {_fmt(far_mean)}, var_cav = 0.5, epsilon = 0.2, latent_noise = 0.5",
        ),
    ]
    return cases


def _ep_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        cases.append(
            _Case(kind, (kernel.K(X), y), {}, f"K = kernel.K(X), {recipe}", {"tol": 1e-11, "max_sweeps": 1000})
        )
    X, y, kernel, recipe = _binary_problem("random", 7)
    y[2] = -y[2]  # a flipped label, for the label-noise model to explain: some site precisions are negative
    likelihood = LabelNoiseLikelihood(epsilon=0.1, latent_noise=0.0)
    recipe = recipe.replace("y = ", "y (label 2 flipped) = ")
    cases.append(
        _Case(
            "label noise, negative site precisions",
            (kernel.K(X), y),
            {"likelihood": likelihood},
            f"K = kernel.K(X), likelihood = {likelihood!r}, {recipe}",
            {"tol": 1e-11, "max_sweeps": 1000},
        )
    )
    return cases


def _lower_bound_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        K = kernel.K(X)
        nu = np.sqrt(np.diag(K)) * np.random.default_rng(seed).uniform(0.3, 2.0, size=len(y))
        cases.append(_Case(kind, (K, y, nu), {}, f"K = kernel.K(X), nu = {_fmt(nu)}, {recipe}"))
    X, y, kernel, recipe = _binary_problem("random", 7)
    nu = np.array([0.0, -1.5, 1e-9, 2.0, -0.3, 0.0, 4.0, 1e-5, -7.0, 1.0])  # λ(ν) at 0 is the limit 1/8; λ is even
    cases.append(
        _Case("ν at zero, tiny and negative", (kernel.K(X), y, nu), {}, f"K = kernel.K(X), nu = {_fmt(nu)}, {recipe}")
    )
    return cases


def _update_nu_cases():
    return [_Case(case.title, case.args, {}, case.inputs) for case in _lower_bound_cases()]


def _vb_binary_cases():
    cases = []
    for kind, seed in BINARY_KINDS:
        X, y, kernel, recipe = _binary_problem(kind, seed)
        if kind == "large signal variance":  # VB's rate approaches one as the kernel grows: keep it checkable
            kernel = kernel.with_params(variance=30.0)
            recipe = recipe.split(", kernel ")[0] + f", kernel {kernel!r}"
        cases.append(
            _Case(
                kind,
                (kernel.K(X), y),
                {},
                f"K = kernel.K(X), {recipe}",
                {"tol": 1e-14, "max_iter": 100_000, "accelerate": True},
            )
        )
    return cases


def _vb_multiclass_cases():
    cases = []
    for kind, seed in [("random", 31), ("duplicate inputs", 32), ("separable labels", 33)]:
        X, codes, kernel, recipe = _multiclass_problem(kind, seed)
        cases.append(
            _Case(
                kind,
                (kernel.K(X), codes),
                {},
                f"K = kernel.K(X), t = classes, {recipe}",
                {"tol": 1e-14, "max_iter": 100_000, "accelerate": True},
            )
        )
    return cases


def _adf_state(K_groups, codes, order, kernel_of_class, n_steps):
    """The IVM state after including the points ``order[:n_steps]`` with the reference update."""
    G, n = K_groups.shape[0], K_groups.shape[1]
    C = len(kernel_of_class)
    likelihood = MultinomialProbitLikelihood()
    M, var, mean = np.zeros((G, len(order), n)), np.diagonal(K_groups, axis1=1, axis2=2).copy(), np.zeros((n, C))
    for step in range(n_steps):
        i = order[step]
        shift = likelihood.cone_mean_shift(codes[[i]], mean[[i]])[0][0]
        adf_include(M, var, mean, K_groups[:, :, i].copy(), shift, step, i, kernel_of_class)
    return M, var, mean, likelihood


def _adf_cases():
    cases = []
    settings = [
        ("random, one shared kernel", 41, "random", 1, 3),
        ("random, one kernel per class", 42, "random", 3, 4),
        ("duplicate of an included point", 43, "duplicate inputs", 1, 3),
        ("large signal variance", 44, "large signal variance", 1, 5),
        ("first inclusion (empty M)", 45, "random", 1, 0),
    ]
    for title, seed, kind, n_groups, n_steps in settings:
        X, codes, kernel, recipe = _multiclass_problem(kind, seed)
        kernels = [kernel.with_params(lengthscale=ell) for ell in (1.0, 0.6, 1.8)[:n_groups]]
        K_groups = np.stack([k.K(X) for k in kernels])
        kernel_of_class = np.arange(3) if n_groups == 3 else np.zeros(3, dtype=int)
        order = np.random.default_rng(seed).permutation(len(codes))[:6]
        if kind == "duplicate inputs":  # points j and j + n/2 are copies: include 0, 2, 4, then the copy of 0
            order = np.array([0, 2, 4, len(codes) // 2, 1, 3])
        M, var, mean, likelihood = _adf_state(K_groups, codes, order, kernel_of_class, n_steps)
        i = int(order[n_steps])
        shift = likelihood.cone_mean_shift(codes[[i]], mean[[i]])[0][0]
        args = (M, var, mean, K_groups[:, :, i].copy(), shift, n_steps, i, kernel_of_class)
        inputs = (
            f"the state after including points {order[:n_steps].tolist()} (M {M.shape}, var {var.shape}, "
            f"mean {mean.shape}); include point n = {i} at step = {n_steps}, column = K[:, :, {i}] of each "
            f"kernel group, shift = {_fmt(shift)}, kernel_of_class = {kernel_of_class.tolist()}; kernels "
            f"{kernels!r}; {recipe}"
        )
        cases.append(_Case(title, args, {}, inputs))
    return cases


_LAPLACE_MODE_FIELDS = (
    _Field("f", 1e-5, 1e-5),
    _Field("log_evidence", 1e-6, 1e-5),
    _Field("W", 1e-4, 1e-6, required=False),
    _Field("a", 1e-4, 1e-5, required=False),
)

_CHECKS = {
    "laplace_mode": _Check(
        laplace_mode,
        "laplace_mode(K, y)",
        "Algorithm 4.1 of chapter 4, Binary classification by the Laplace approximation (book/laplace_binary.ipynb)",
        _LAPLACE_MODE_FIELDS,
        _laplace_mode_cases,
        data="the logistic likelihood σ(y_i f_i), labels y_i in {−1, +1}",
    ),
    "laplace_evidence_gradient": _Check(
        laplace_evidence_gradient,
        "laplace_evidence_gradient(mode, K, dK)",
        "Algorithm 4.3 of chapter 4, Binary classification by the Laplace approximation (book/laplace_binary.ipynb)",
        (_Field("gradient", 1e-6, 1e-7),),
        _laplace_gradient_cases,
        data="the logistic likelihood σ(y_i f_i), labels y_i in {−1, +1}",
    ),
    "laplace_evidence": _Check(
        laplace_evidence,
        "laplace_evidence(kernel, X, y)",
        "Algorithm 4.3 of chapter 4, Binary classification by the Laplace approximation (book/laplace_binary.ipynb)",
        (_Field("log_evidence", 1e-6, 1e-5), _Field("gradient", 1e-4, 1e-5)),
        _laplace_evidence_cases,
        data="the logistic likelihood σ(y_i f_i), labels y_i in {−1, +1}",
    ),
    "softmax_laplace_mode": _Check(
        softmax_laplace_mode,
        "softmax_laplace_mode(K, Y)",
        "Algorithm 6.1 of chapter 6, Multi-class Laplace: the softmax model in O(C n³) (book/laplace_multiclass.ipynb)",
        (_Field("f", 1e-5, 1e-5), _Field("log_evidence", 1e-6, 1e-5), _Field("a", 1e-4, 1e-5, required=False)),
        _softmax_mode_cases,
        data="the softmax likelihood, labels as a one-hot matrix Y (n × C)",
    ),
    "tilted_moments": _Check(
        tilted_moments,
        "tilted_moments(y, mean_cav, var_cav, epsilon=..., latent_noise=...)",
        "Algorithm 8.1 of chapter 8, Expectation propagation and the EM-EP algorithm (book/ep.ipynb)",
        (_Field("log_Z", 1e-7, 1e-9), _Field("alpha", 1e-6, 1e-9), _Field("beta", 1e-6, 1e-9)),
        _tilted_cases,
        data="the probit likelihood Φ(y_i f_i), or K&G's label-noise likelihood ε + (1 − 2ε)Φ(y_i f_i/√s) where a case says so; labels y_i in {−1, +1}",
    ),
    "expectation_propagation": _Check(
        expectation_propagation,
        "expectation_propagation(K, y, likelihood=...)",
        "Algorithm 8.1 of chapter 8, Expectation propagation and the EM-EP algorithm (book/ep.ipynb)",
        (
            _Field("tau", 1e-3, 1e-4),
            _Field("nu", 1e-3, 1e-4),
            _Field("mu", 1e-4, 1e-4),
            _Field("Sigma", 1e-4, 1e-4),
            _Field("log_evidence", 1e-6, 1e-4),
        ),
        _ep_cases,
        data="the probit likelihood Φ(y_i f_i), and in one case K&G's label-noise likelihood; labels y_i in {−1, +1}",
    ),
    "lower_bound": _Check(
        lower_bound,
        "lower_bound(K, t, nu)",
        "Algorithm 7.1 of chapter 7, Variational bounds: the Gibbs & MacKay classifier (book/variational_bounds.ipynb)",
        (
            _Field("log_Z", 1e-9, 1e-9),
            _Field("mean", 1e-7, 1e-8),
            _Field("var", 1e-7, 1e-8),
            _Field("grad_nu", 1e-6, 1e-8, required=False),
        ),
        _lower_bound_cases,
        data="the logistic likelihood σ(y_i f_i), bounded by Jaakkola & Jordan's Q(y_i f_i | ν_i); labels y_i in {−1, +1}",
    ),
    "update_nu": _Check(
        update_nu,
        "update_nu(K, t, nu)",
        "Algorithm 7.1 of chapter 7, Variational bounds: the Gibbs & MacKay classifier (book/variational_bounds.ipynb)",
        (_Field("nu", 1e-7, 1e-8),),
        _update_nu_cases,
        data="the logistic likelihood σ(y_i f_i), bounded by Jaakkola & Jordan's Q(y_i f_i | ν_i); labels y_i in {−1, +1}",
    ),
    "vb_probit_binary": _Check(
        vb_probit_binary,
        "vb_probit_binary(K, t)",
        "Algorithm 9.1 of chapter 9, Variational Bayes for the multinomial probit (book/vb_probit.ipynb)",
        (
            _Field("M", 1e-3, 1e-3),
            _Field("alpha", 1e-3, 1e-3, required=False),
            _Field("lower_bound", 1e-6, 1e-4, required=False, last=True),
        ),
        _vb_binary_cases,
        data="the probit model through Albert & Chib's auxiliary variables; labels y_i in {−1, +1}",
    ),
    "vb_probit_multiclass": _Check(
        vb_probit_multiclass,
        "vb_probit_multiclass(K, t)",
        "Algorithm 9.2 of chapter 9, Variational Bayes for the multinomial probit (book/vb_probit.ipynb)",
        (
            _Field("M", 1e-3, 1e-3),
            _Field("alpha", 1e-3, 1e-3, required=False),
            _Field("lower_bound", 1e-6, 1e-4, required=False, last=True),
        ),
        _vb_multiclass_cases,
        data="the multinomial probit through auxiliary variables; labels as class codes 0..C−1",
    ),
    "adf_include": _Check(
        adf_include,
        "adf_include(M, var, mean, column, shift, step, n, kernel_of_class), updating M, var and "
        "mean in place (or returning them)",
        "Algorithm 11.1 of chapter 11, Sparse multi-class classification: the informative vector machine (book/ivm.ipynb)",
        (_Field("M", 1e-9, 1e-10), _Field("var", 1e-9, 1e-10), _Field("mean", 1e-9, 1e-10)),
        _adf_cases,
        in_place=(0, 1, 2),
        data="the multinomial probit; labels as class codes 0..C−1",
    ),
}


# ------------------------------------------------------------------------------------------------ interface
def available() -> list[str]:
    """The names of the checks, each the name of the reference function whose signature yours must have.

    Returns
    -------
    list of str
        E.g. ``"laplace_mode"`` for :func:`gpc_ref.laplace.laplace_mode`.
    """
    return list(_CHECKS)


def _get(name: str) -> _Check:
    if name not in _CHECKS:
        raise ValueError(f"name must be one of {available()}; got {name!r}")
    return _CHECKS[name]


def describe(name: str) -> str:
    """How the check ``name`` calls your function, what it compares, and on which cases.

    Parameters
    ----------
    name : str
        One of :func:`available`.

    Returns
    -------
    str
        A printable description.
    """
    spec = _get(name)
    required = [f.name for f in spec.fields if f.required]
    optional = [f.name for f in spec.fields if not f.required]
    lines = [
        f"{name}: your implementation of {spec.box}, checked against {spec.reference_name()}.",
        f"Called as {spec.call}." + (f" The cases use {spec.data}." if spec.data else ""),
        f"Compared: {', '.join(required)}"
        + (f"; also {', '.join(optional)} if your result has them (by name)" if optional else "")
        + f". A tuple is read as ({', '.join(required)}).",
        "Tolerances: "
        + "; ".join(f"{f.name}: |got − expected| ≤ {f.atol:g} + {f.rtol:g}·|expected|" for f in spec.fields),
        "Cases: " + "; ".join(f"{k + 1}. {case.title}" for k, case in enumerate(spec.cases())) + ".",
    ]
    return "\n".join(lines)


def inputs(name: str, case: int) -> tuple[tuple, dict]:
    """The arguments with which the check ``name`` calls your function in case number ``case``.

    Parameters
    ----------
    name : str
        One of :func:`available`.
    case : int
        The case number (from 1) that a failure message names.

    Returns
    -------
    args : tuple
        The positional arguments (fresh copies: yours to modify).
    kwargs : dict
        The keyword arguments.
    """
    cases = _get(name).cases()
    if isinstance(case, bool) or not isinstance(case, (int, np.integer)) or not 1 <= case <= len(cases):
        raise ValueError(f"case must be an integer from 1 to {len(cases)}; got {case!r}")
    chosen = cases[int(case) - 1]
    return _copy(chosen.args), dict(chosen.kwargs)


def _copy(args: tuple) -> tuple:
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def _read_fields(result, spec: _Check, arguments: tuple) -> dict:
    """The compared fields of a result: by attribute or key name, else by position in a tuple."""
    names = [f.name for f in spec.fields]
    required = [f.name for f in spec.fields if f.required]
    if spec.in_place and result is None:  # updated in place: read the arguments back
        return {f.name: arguments[position] for f, position in zip(spec.fields, spec.in_place)}
    found = None
    if isinstance(result, dict):
        found = {name: result[name] for name in names if name in result}
    elif is_dataclass(result) or hasattr(result, "_fields") or any(hasattr(result, name) for name in required):
        found = {name: getattr(result, name) for name in names if hasattr(result, name)}
    if found is not None and all(name in found for name in required):
        return found
    if found is not None and (isinstance(result, dict) or not isinstance(result, (tuple, list))):
        missing = [name for name in required if name not in found]
        raise _Unreadable(f"returned a {type(result).__name__} without the field(s) {', '.join(missing)}")
    if isinstance(result, (tuple, list)) and len(result) >= len(required):
        return dict(zip(required, result))
    if len(required) == 1 and not isinstance(result, (tuple, list, dict)):
        return {required[0]: result}
    kind = type(result).__name__
    expected = "a dict or an object with the fields " + ", ".join(required) + f", or a tuple ({', '.join(required)})"
    raise _Unreadable(f"returned a {kind}; expected {expected}")


class _Unreadable(Exception):
    """The student's result has none of the forms :func:`_read_fields` accepts."""


def _compare(got_value, expected_value, spec_field: _Field) -> str | None:
    """None if ``got`` is within tolerance of ``expected``; otherwise what differs, printable."""
    expected = np.asarray(expected_value, dtype=float)
    try:
        got = np.asarray(got_value, dtype=float)
    except (TypeError, ValueError):
        return f"{spec_field.name}: expected numbers like {_fmt(expected)}, got {got_value!r:.200}"
    if spec_field.last:
        expected = expected.ravel()[-1:] if expected.size else expected
        got = got.ravel()[-1:] if got.size else got
    if got.shape != expected.shape:
        if got.size != expected.size:
            return (
                f"{spec_field.name}: expected shape {expected.shape} ({expected.size} entries), got shape {got.shape}"
            )
        got = got.reshape(expected.shape)
    tolerance = f"|got − expected| ≤ {spec_field.atol:g} + {spec_field.rtol:g}·|expected|"
    if not np.all(np.isfinite(got)) and np.all(np.isfinite(expected)):
        bad = np.unravel_index(np.flatnonzero(~np.isfinite(got))[0], got.shape)
        return (
            f"{spec_field.name}: got a non-finite value {got[bad]} at index {tuple(map(int, bad))} where "
            f"{float(expected[bad]):.6g} was expected\n    expected {_fmt(expected, 6)}\n    got      {_fmt(got, 6)}"
        )
    error = np.abs(got - expected)
    allowed = spec_field.atol + spec_field.rtol * np.abs(expected)
    if np.all(error <= allowed):
        return None
    worst = np.unravel_index(np.argmax(error - allowed), error.shape)
    where = f" at index {tuple(map(int, worst))}" if expected.ndim else ""
    return (
        f"{spec_field.name}: largest error {float(error[worst]):.3g}{where} (expected {float(expected[worst]):.8g}, "
        f"got {float(got[worst]):.8g}); tolerance {tolerance}\n"
        f"    expected {_fmt(expected, 6)}\n    got      {_fmt(got, 6)}"
    )


def check(name: str, function: Callable) -> CheckResult:
    """Run your implementation ``function`` of the box ``name`` on every case and compare with the reference.

    Parameters
    ----------
    name : str
        One of :func:`available`: the reference function whose signature ``function`` has.
    function : callable
        Your implementation. It is called on copies of the inputs, so it may modify them.

    Returns
    -------
    CheckResult
        ``passed`` and a printable ``message`` naming the first failing case (its inputs, the
        expected and returned values, the tolerance), or what passed.

    Examples
    --------
    >>> import gpc_ref.selfcheck
    >>> from gpc_ref.variational_bounds import lower_bound
    >>> gpc_ref.selfcheck.check("lower_bound", lower_bound).passed
    True
    """
    spec = _get(name)
    if not callable(function):
        raise ValueError(f"function must be callable (your implementation of {spec.call}); got {function!r}")
    cases = spec.cases()
    compared_names = set()  # the fields compared on some case: the required ones and the optional ones returned
    for number, case in enumerate(cases, start=1):
        expected_args = _copy(case.args)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)  # the expected values are converged ones
            expected = spec.reference(*expected_args, **case.kwargs, **case.reference_kwargs)
        expected_fields = _read_fields(expected, spec, expected_args)
        arguments = _copy(case.args)
        header = (
            f"{name}: case {number} of {len(cases)} failed: {case.title}.\n"
            f"  Called {spec.call} with\n    {case.inputs}\n"
        )
        footer = (
            f"\n  To rerun it: args, kwargs = gpc_ref.selfcheck.inputs({name!r}, {number}); "
            f"your_function(*args, **kwargs)"
        )
        try:
            result = function(*arguments, **case.kwargs)
        except Exception as error:  # any failure of the student's code is a failing case
            message = header + f"  Your function raised {type(error).__name__}: {error}" + footer
            return CheckResult(name, False, message, len(cases), number - 1)
        try:
            got_fields = _read_fields(result, spec, arguments)
        except _Unreadable as error:
            return CheckResult(name, False, header + f"  Your function {error}." + footer, len(cases), number - 1)
        for spec_field in spec.fields:
            if spec_field.name not in got_fields:
                continue  # an optional field the result does not have
            compared_names.add(spec_field.name)
            difference = _compare(got_fields[spec_field.name], expected_fields[spec_field.name], spec_field)
            if difference is not None:
                message = header + "  " + difference + footer
                return CheckResult(name, False, message, len(cases), number - 1)
    titles = "; ".join(case.title for case in cases)
    compared = ", ".join(f.name for f in spec.fields if f.name in compared_names)
    message = (
        f"{name}: passed all {len(cases)} cases ({titles}): {compared} agree with "
        f"{spec.reference_name()} within the tolerances."
    )
    return CheckResult(name, True, message, len(cases), len(cases))
