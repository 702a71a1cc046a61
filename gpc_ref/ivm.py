r"""Sparse multi-class GP classification: the informative vector machine, one sweep of variational sites (G&R §5).

Girolami & Rogers' variational posterior over the C latent functions is, given the means
z̃^c of the auxiliary variables, C independent GP *regressions* with unit noise
(G&R eq 4.1, Appendix A):

    Q(f^c) = N(μ^c, Σ_c),
    Σ_c = K_c (I + K_c)⁻¹, μ^c = Σ_c z̃^c .

The sparse version includes one point at a time: including point i conditions every
Q(f^c) on the "observation" z̃_i^c = f_i^c + ε,
ε ~ N(0, 1), whose value is the truncated-Gaussian mean of G&R eqs 4.3–4.4
computed at the current posterior mean. That rank-one Bayesian update is G&R eqs 5.1–5.4; the
covariance is kept in the low-rank form Σ_c = K_c - M_cᵀ M_c with an
S × n matrix M_c, so nothing of size n × n is ever formed:
memory O(CSn), time O(CnS²) for S included points.

Notation: the book's (n points indexed by i, C classes indexed by c). Latent values, auxiliaries,
means and shifts carry the point as a subscript and the class as a superscript (μ_i^c);
the covariance quantities carry the class first, as a subscript (s_ci). Book symbol ← code
name; G&R's symbol in brackets:

=====================  =================  ===========================================================
book                   code               meaning
=====================  =================  ===========================================================
n, C, S                ``n_points``,      training points, classes, points to include [N, K, S]
                       ``n_classes``,
                       ``n_active``
c_i ∈ {0..C-1}         ``t``              class of point i [t_n, G&R's 1..K minus one]
k = c_i, j ≠ k         ``t[i]``           observed class of point i, its competitors [i = t_n, j ≠ i]
K_c, k_ci              ``kernel_column``  prior covariance of class c and its column i
                                          [C_(φ_k), C^n_(φ_k)]
ℐ = (i_1, …, i_S)      ``active_set``     included points in inclusion order
l                      ``step``           inclusion step, 0-based [G&R's l, 1-based]
M_c (S × n)            ``M[g]``           Σ_c = K_c - M_cᵀ M_c [M_k]
σ_ci                   ``sigma_n``        column i of Σ_c [Σ_(k,n)]
s_c = diag Σ_c, s_ci   ``var[:, c]``      posterior variances [s_k]
μ^c, μ_i^c             ``mean[:, c]``     posterior means [m̃_k, m̃_nk]
z̃_i                    ``targets``        site values, fixed at inclusion [ỹ_n]
p_i^c = z̃_i^c - μ_i^c  ``shift``          truncation shift of G&R eqs 4.3–4.4 [p_nk]
v_ci = √(1 + s_ci)     ``v``              predictive scale in eq 5.5 [v_km]
G                      ``n_kernels``      distinct kernels: 1 if all classes share one
                                          (then all Σ_c are equal), else C
L_ℐ                    ``L``              Cholesky factor of K_(c,ℐℐ) + I
=====================  =================  ===========================================================

References
----------
- [GR06] Girolami & Rogers (2006), *Variational Bayesian multinomial probit regression with Gaussian
  process priors*, Neural Computation 18: eqs 4.1, 4.3, 4.4 (truncated-Gaussian means), §4.5 and
  Appendix B (predictive distribution), eqs 5.1–5.5 (the multi-class IVM), §6.3–6.4 (experiments).
- [Lawrence03] Lawrence, Seeger & Herbrich (2003), *Fast sparse Gaussian process methods: the
  informative vector machine*, NIPS 15: ADF inclusion of one point at a time, the low-rank
  M representation, and the entropy-reduction selection criterion.
- [Minka01] Minka (2001): assumed density filtering, whose one-pass schedule (not its moment-matched sites) the IVM keeps.
- [GPML] Rasmussen & Williams (2006), eqs 2.25–2.26 (GP regression, used for the predictions).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import pdist
from scipy.special import log_ndtr

from .errors import BelowClassFrequenciesWarning  # re-exported
from .kernels import SEKernel
from .kernels import class_kernels
from .likelihoods import MultinomialProbitLikelihood
from .linalg import cholesky
from .linalg import solve_lower
from .progress import with_progress
from .validation import check_choice
from .validation import check_class_codes
from .validation import check_matrix
from .validation import check_positive_int
from .validation import check_rng

__all__ = [
    "IVMFit",
    "SELECTION_RULES",
    "BelowClassFrequenciesWarning",
    "median_distance_kernel",
    "training_log_predictive",
    "class_frequency_log_predictive",
    "prequential_class_frequency_log_predictive",
    "ivm_adf",
    "ivm_core",
    "ivm_fit",
    "ivm_predict",
    "adf_include",
    "target_log_probability",
    "SHORTLIST",
    "pairwise_log_probability",
    "select_predictive",
    "entropy_reduction",
]

SELECTION_RULES = ("predictive", "entropy", "random")

# Candidates are scored in blocks of this many points, so that the quadrature of eq 5.5 never holds
# more than a constant-size (block × nodes × C) temporary, whatever n is.
_SCORE_BLOCK = 256

# With ``screen=True`` the predictive rule ranks all candidates by the cheap pairwise bound and
# scores only this many of the lowest by the quadrature of eq 5.5.
SHORTLIST = 50


@dataclass(frozen=True)
class IVMFit:
    r"""The state of the multi-class IVM after S inclusions.

    Attributes
    ----------
    active_set : ndarray (S,)
        Indices of the included points, in the order they were included (ℐ).
    targets : ndarray (S, C)
        The site values z̃_i of each included point, computed (G&R eqs 4.3–4.4)
        when it was included and fixed thereafter. The posterior is exactly GP regression with unit noise on these.
    mean : ndarray (n, C)
        Posterior means μ_i^c at every training point.
    var : ndarray (n, C)
        Posterior variances s_ci at every training point.
    M : ndarray (G, S, n)
        The low-rank factors: Σ_c = K_c - M_(g(c))ᵀ M_(g(c)).
    kernel_of_class : ndarray (C,)
        Which of the G kernels (and rows of ``M``) each class uses.
    log_target_probability : ndarray (S,)
        log P(c_i | μ_i, s_i) (eq 5.5) of each point at the moment it
        was included: the quantity the predictive rule minimises.
    entropy_reduction : ndarray (S,)
        ½∑_c log(1 + s_ci) of each point at the moment it was included: the
        quantity the entropy rule maximises.
    selection : str
        The selection rule used.
    X_active : ndarray (S, D) or None
        The included inputs (set by :func:`ivm_fit`; ``None`` from :func:`ivm_adf`).
    kernels : tuple of SEKernel or None
        The G kernels (set by :func:`ivm_fit`).
    """

    active_set: np.ndarray
    targets: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    M: np.ndarray
    kernel_of_class: np.ndarray
    log_target_probability: np.ndarray
    entropy_reduction: np.ndarray
    selection: str
    X_active: np.ndarray | None = None
    kernels: tuple | None = None

    @property
    def n_active(self) -> int:
        """Number of included points S."""
        return len(self.active_set)

    @property
    def n_classes(self) -> int:
        """Number of classes C."""
        return self.mean.shape[1]


# --------------------------------------------------------------------------- the ADF update
def adf_include(
    M: np.ndarray,
    var: np.ndarray,
    mean: np.ndarray,
    column: np.ndarray,
    shift: np.ndarray,
    step: int,
    n: int,
    kernel_of_class: np.ndarray,
) -> None:
    r"""Include point ``n`` (the book's point i) at step ``step``: G&R eqs 5.1–5.4 for every class, in place.

    Conditioning Q(f^c) = N(μ^c, Σ_c) on one unit-noise observation z̃_i^c of f_i^c is a rank-one update,
    with σ_ci the i-th column of Σ_c and s_ci its i-th diagonal entry:

        Σ_c ← Σ_c - ((σ_ci σ_ciᵀ)/(1 + s_ci)),
        μ^c ← μ^c + ((z̃_i^c - μ_i^c)/(1 + s_ci)) σ_ci.

    Storing Σ_c = K_c − M_cᵀM_c makes the first a new row σ_ciᵀ/√(1 + s_ci) of M_c (eq 5.3) and a
    change of its diagonal (eq 5.2). Every right-hand side uses s_ci *before* eq 5.2 changes it.
    Cost O(G n l) at step l.

    Parameters
    ----------
    M : ndarray (G, S, n)
        Low-rank factors; row ``step`` of each ``M[g]`` is written.
    var : ndarray (G, n)
        Posterior variances s of each kernel group; updated.
    mean : ndarray (n, C)
        Posterior means μ^c, one column per class; updated.
    column : ndarray (G, n)
        Column i of each prior covariance, k_gi (jitter included at entry i).
    shift : ndarray (C,)
        The shifts p_i^c = z̃_i^c − μ_i^c of this point's site values (G&R eqs 4.3–4.4).
    step : int
        How many points were included before this one (l − 1 in G&R's 1-based count).
    n : int
        Index i of the point being included.
    kernel_of_class : ndarray (C,)
        Kernel group g of each class c.
    """
    for g in range(M.shape[0]):
        # G&R (2006) eq 5.1: σ_ci = k_ci − M_cᵀ M_c e_i  (the i-th column of Σ_c = K_c − M_cᵀM_c; i is ``n``)
        sigma_n = column[g] - M[g, :step].T @ M[g, :step, n]
        s_n = var[g, n]  # s_ci before the update; eqs 5.2–5.4 all use this value
        # G&R (2006) eq 5.2: s_c ← s_c − diag(σ_ci σ_ciᵀ)/(1 + s_ci)
        var[g] -= sigma_n**2 / (1.0 + s_n)
        # G&R (2006) eq 5.3: row l of M_c ← σ_ciᵀ/√(1 + s_ci)
        M[g, step] = sigma_n / np.sqrt(1.0 + s_n)
        # G&R (2006) eq 5.4: μ^c ← μ^c + (z̃_i^c − μ_i^c)/(1 + s_ci) σ_ci, for the classes c using kernel g
        classes = np.flatnonzero(kernel_of_class == g)
        mean[:, classes] += np.outer(sigma_n, shift[classes] / (1.0 + s_n))


# --------------------------------------------------------------------------- selection scores
def _logsumexp_rows(A):
    """log Σ_j exp(A_ij) for every row, stable (plain numpy: called once per step on small arrays)."""
    top = np.max(A, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (top + np.log(np.sum(np.exp(A - top), axis=1, keepdims=True)))[:, 0]


def target_log_probability(
    t: ArrayLike, mean: ArrayLike, var: ArrayLike, likelihood: MultinomialProbitLikelihood | None = None
) -> np.ndarray:
    r"""log P(c_i | μ_i, s_i) of each point's own class under the current posterior (G&R eq 5.5).

        P(c_i = k) = E_u{∏_(j ≠ k)Φ((u v_ki + μ_i^k - μ_i^j)/v_ji)}, v_ji = √(1 + s_ji),

    by the Gauss–Hermite rule of the shared :class:`MultinomialProbitLikelihood`, in log space, for
    the true class k = c_i only (C-1 terms per node instead of C(C-1) for the whole
    predictive distribution). Points are processed in blocks of constant size.

    Parameters
    ----------
    t : array_like (n,) of int
        Classes c_i (codes 0..C−1).
    mean, var : array_like (n, C)
        Posterior means μ_i^c and variances s_ci.
    likelihood : MultinomialProbitLikelihood, optional
        Supplies the quadrature rule (default 48 nodes).

    Returns
    -------
    ndarray (n,)
        log P(c_i | μ_i, s_i).
    """
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    t = np.asarray(t, dtype=int)
    mean = np.asarray(mean, dtype=float)
    var = np.asarray(var, dtype=float)
    out = np.empty(len(t))
    for start in range(0, len(t), _SCORE_BLOCK):
        block = slice(start, start + _SCORE_BLOCK)
        tb, mb = t[block], mean[block]
        # G&R (2006) eq 5.5: v_ji = √(1 + s_ji)
        v = np.sqrt(1.0 + np.maximum(var[block], 0.0))
        own_v = v[np.arange(len(tb)), tb]
        # log Φ((u v_ki + μ_i^k − μ_i^j)/v_ji) for every node u and class j ≠ k = c_i (the shared integrand)
        log_terms = likelihood._log_phi_terms(tb, mb, scale_own=own_v, scale_other=v)
        # G&R (2006) eq 5.5: E_u{Π_{j≠k} Φ(...)} by Gauss–Hermite, in log space
        out[block] = _logsumexp_rows(log_terms.sum(axis=2) + likelihood._log_w)
    return out


def pairwise_log_probability(t: ArrayLike, mean: ArrayLike, var: ArrayLike) -> np.ndarray:
    r"""The product of the pairwise probabilities, a cheap lower bound on eq 5.5 (exact for C = 2).

    Under the current posterior the auxiliary vector z_i has independent components
    z_i^j ~ N(μ_i^j, v_ji²), and c_i = k is the event
    ⋂_(j ≠ k) A_j with A_j = {z_i^k > z_i^j},
    P(A_j) = Φ(d_j), d_j = (μ_i^k - μ_i^j)/√(v_ki² + v_ji²).
    Every A_j is increasing in the independent coordinates (z_i^k, -z_i^j), so
    Harris's inequality gives P(⋂_j A_j) ≥ ∏_j P(A_j), and the intersection is
    no likelier than its least likely member:

        ∑_(j ≠ k) log Φ(d_j) ≤ log P(c_i = k) ≤ min_(j ≠ k) log Φ(d_j).

    The left-hand side costs C - 1 evaluations of log Φ per point against
    (C-1)Q for the quadrature; :func:`select_predictive` uses it to screen candidates.

    Parameters
    ----------
    t, mean, var
        As in :func:`target_log_probability`.

    Returns
    -------
    ndarray (n,)
        ∑_(j ≠ k) log Φ(d_j) for each point, k = c_i.
    """
    t = np.asarray(t, dtype=int)
    rows = np.arange(len(t))
    mean = np.asarray(mean, dtype=float)
    v2 = 1.0 + np.maximum(np.asarray(var, dtype=float), 0.0)
    d = (mean[rows, t][:, None] - mean) / np.sqrt(v2[rows, t][:, None] + v2)
    log_pairwise = log_ndtr(d)
    log_pairwise[rows, t] = 0.0
    return log_pairwise.sum(axis=1)


def select_predictive(
    t: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    candidates: ArrayLike,
    likelihood: MultinomialProbitLikelihood | None = None,
    screen: bool = False,
) -> tuple[int, float]:
    r"""The candidate with the smallest posterior probability of its own class (G&R §5, eq 5.5).

    With ``screen=False`` every candidate is scored by :func:`target_log_probability`:
    (C-1)Q normal CDFs each. The score only has to *rank* the candidates, so with
    ``screen=True`` all of them are first ranked by the cheap :func:`pairwise_log_probability`
    (C-1 CDFs each) and only the :data:`SHORTLIST` lowest are scored by the quadrature. The
    point chosen is the same unless the least probable point falls outside that shortlist under the
    pairwise ranking (the tests and the book check that the two agree on their examples).

    Parameters
    ----------
    t : ndarray (n,) of int
        Classes c_i of all n training points.
    mean, var : ndarray (n, C)
        Current posterior means μ_i^c and variances s_ci at all n points.
    candidates : array_like of int
        Indices of the points not yet included.
    likelihood
        As in :func:`target_log_probability`.
    screen : bool
        Shortlist by :func:`pairwise_log_probability` first.

    Returns
    -------
    index : int
        The chosen point.
    log_probability : float
        Its eq-5.5 log probability.
    """
    candidates = np.asarray(candidates, dtype=int)
    if screen and len(candidates) > SHORTLIST:
        rough = pairwise_log_probability(t[candidates], mean[candidates], var[candidates])
        candidates = candidates[np.argpartition(rough, SHORTLIST - 1)[:SHORTLIST]]
    log_p = target_log_probability(t[candidates], mean[candidates], var[candidates], likelihood)
    best = int(np.argmin(log_p))
    return int(candidates[best]), float(log_p[best])


def entropy_reduction(var: ArrayLike) -> np.ndarray:
    r"""Entropy reduction of Q(f) if point i were included next: ½∑_c log(1 + s_ci).

    Lawrence et al. (2003) select the point whose inclusion most reduces the entropy of the
    approximate posterior. Under G&R's update (eq 5.2) including point i multiplies
    det Σ_c by 1 - s_ci/(1+s_ci) = 1/(1+s_ci), and Q(f)
    factorises over classes, so the entropy falls by ½∑_c log(1+s_ci). In
    Lawrence et al.'s notation each term is -½ log(1-ν_i ζ_i), with
    ζ_i = s_ci and ν_i = -∂² log Z_i/∂μ_i²; for G&R's
    unit-noise Gaussian site Z_i = N(z̃_i | μ_i, 1 + ζ_i), so
    ν_i = 1/(1+ζ_i), the precision of Z_i in the cavity mean (the site's own
    precision is one). ν_i depends on ζ_i alone, so this score does not depend
    on the labels.

    Parameters
    ----------
    var : array_like (n, C)
        Posterior variances s_ci.

    Returns
    -------
    ndarray (n,)
    """
    return 0.5 * np.log1p(np.maximum(np.asarray(var, dtype=float), 0.0)).sum(axis=1)


# --------------------------------------------------------------------------- the algorithm
def _choose_point(step, selection, t, mean, var_by_class, included, random_order, likelihood, screen):
    """Step 2.1 of Algorithm 11.1 (ivm-alg): the point to include, and log P(c_i | μ_i, s_i) of its own class.

    The first point is drawn at random (at the prior every score ties: G&R's "random starts", Fig. 5).
    """
    if step == 0 or selection == "random":
        n = int(random_order[step]) if selection == "random" else int(random_order[0])
        return n, target_log_probability(t[[n]], mean[[n]], var_by_class[[n]], likelihood)[0]
    if selection == "predictive":
        # G&R (2006) §5: include the point i with the smallest P(c_i | μ_i, s_i) (eq 5.5)
        return select_predictive(t, mean, var_by_class, np.flatnonzero(~included), likelihood, screen)
    # Lawrence et al. (2003): include the point whose inclusion reduces the entropy most
    candidates = np.flatnonzero(~included)
    n = int(candidates[np.argmax(entropy_reduction(var_by_class[candidates]))])
    return n, target_log_probability(t[[n]], mean[[n]], var_by_class[[n]], likelihood)[0]


def ivm_core(K: np.ndarray, t: np.ndarray, n_classes: int, *, n_active: int, selection: str = "predictive",
             rng: np.random.Generator | int = 0) -> IVMFit:  # fmt: skip
    """Algorithm 11.1 (ivm-alg), step for step: one sweep of the multi-class IVM (G&R §5).

    The plain core of :func:`ivm_adf`, which checks the arguments, never forms a covariance matrix (it reads
    the kernel one column at a time), can score candidates by a cheap bound first (``screen``), can use fixed
    targets, and shows progress; this function takes the covariances whole and does none of that. With the
    same ``rng`` the two include the same points and return the same posterior (``tests/package/test_ivm.py``).

    Parameters
    ----------
    K : ndarray (n, n) or (G, n, n)
        One covariance shared by the classes, or one per class (jitter included).
    t : ndarray (n,) of int
        Class codes 0, …, C − 1.
    n_classes : int
        C.
    n_active, selection, rng
        S, the selection rule ("predictive", "entropy" or "random") and the randomness of the first point.

    Returns
    -------
    IVMFit

    References: [GR06] §5, eqs 5.1–5.5.
    """
    K = K[None] if K.ndim == 2 else K
    n_kernels, n_points = K.shape[0], K.shape[1]
    kernel_of_class = np.zeros(n_classes, dtype=int) if n_kernels == 1 else np.arange(n_classes)
    likelihood, rng = MultinomialProbitLikelihood(), check_rng(rng)
    # step 1: M_c empty, μ^c = 0, s_c = diag K_c
    M, var = np.zeros((n_kernels, n_active, n_points)), np.array([np.diag(K_g) for K_g in K])
    mean, included = np.zeros((n_points, n_classes)), np.zeros(n_points, dtype=bool)
    active_set, site_targets, log_target_prob, entropy_gain = [], [], [], []
    random_order = rng.permutation(n_points)
    for step in range(n_active):  # step 2
        var_by_class = var[kernel_of_class].T
        n, log_p = _choose_point(step, selection, t, mean, var_by_class, included, random_order, likelihood,
                                 False)  # step 2.1  # fmt: skip
        entropy_gain.append(entropy_reduction(var_by_class[[n]])[0])
        shift = likelihood.cone_mean_shift(t[[n]], mean[[n]])[0][0]  # step 2.2: p_i (eqs 4.3–4.4)
        site_targets.append(mean[n] + shift)  # z̃_i = μ_i + p_i
        adf_include(M, var, mean, K[:, :, n], shift, step, n, kernel_of_class)  # step 2.3: eqs 5.1–5.4
        included[n] = True  # step 2.4
        active_set.append(n)
        log_target_prob.append(log_p)
    return IVMFit(active_set=np.array(active_set), targets=np.array(site_targets), mean=mean,
                  var=var[kernel_of_class].T.copy(), M=M, kernel_of_class=kernel_of_class,
                  log_target_probability=np.array(log_target_prob), entropy_reduction=np.array(entropy_gain),
                  selection=selection)  # fmt: skip


def ivm_adf(kernel_column: Callable[[int], ArrayLike], prior_var: ArrayLike, t: ArrayLike, *, n_active: int,
            selection: str = "predictive", rng: np.random.Generator | int = 0, n_classes: int | None = None,
            likelihood: MultinomialProbitLikelihood | None = None, screen: bool = False,
            targets: ArrayLike | None = None, progress: bool = False) -> IVMFit:  # fmt: skip
    r"""Sparse multi-class GP classification by ADF: G&R (2006) eqs 5.1–5.5.

    From the prior (M_c = 0, μ^c = 0, s_c = diag K_c), S times: choose a point by ``selection``, take its shifts
    p_i = z̃_i − μ_i from eqs 4.3–4.4 (or ``targets``), update every M_c, s_c, μ^c by eqs 5.1–5.4
    (:func:`adf_include`). Nothing n × n is formed. Derivation and costs: the book's IVM chapter (book/ivm.ipynb).

    Parameters
    ----------
    kernel_column, prior_var : callable, array_like (G, n) or (n,)
        The prior, jitter included: ``kernel_column(i)`` returns column i of each of the G covariances K_g,
        shape (G, n); ``prior_var`` is diag K_g.
    t : array_like (n,) of int
        Classes c_i, codes 0..C−1.
    n_active, n_classes : int
        S, the number of points to include (1 ≤ S ≤ n), and C (default ``max(t) + 1``).
    selection : {"predictive", "entropy", "random"}
        Least posterior probability of the point's own class (eq 5.5), largest entropy reduction
        (:func:`entropy_reduction`), or at random; the first point is always random (every score ties).
    rng : numpy.random.Generator or int
        Randomness of the first point and of random selection.
    likelihood : MultinomialProbitLikelihood, optional
        Quadrature rule for eqs 4.3–4.5 (default 48 Gauss–Hermite nodes).
    screen, progress : bool
        Screen the predictive rule's candidates by a cheap bound (:func:`select_predictive`); show a progress bar.
    targets : array_like (n, C), optional
        Fixed site values z̃_i instead of eqs 4.3–4.4 (with every point included: unit-noise GP regression on them).

    Returns
    -------
    IVMFit
    """
    prior_var = np.atleast_2d(np.asarray(prior_var, dtype=float))
    if prior_var.ndim != 2 or not np.all(np.isfinite(prior_var)) or np.any(prior_var <= 0):
        raise ValueError("prior_var must be a finite positive array of shape (G, N) or (N,)")
    n_kernels, n_points = prior_var.shape
    t, n_classes = check_class_codes(t, n_points, n_classes, require_all=False)
    if n_kernels not in (1, n_classes):
        raise ValueError(f"there must be 1 kernel or one per class ({n_classes}); got {n_kernels}")
    n_active = check_positive_int(n_active, "n_active")
    if n_active > n_points:
        raise ValueError(f"n_active must be an integer in 1..{n_points} (the number of points); got {n_active!r}")
    check_choice(selection, "selection", SELECTION_RULES)
    if not callable(kernel_column):
        raise ValueError("kernel_column must be a callable returning column n of each prior covariance")
    if targets is not None:
        targets = np.asarray(targets, dtype=float)
        if targets.shape != (n_points, n_classes) or not np.all(np.isfinite(targets)):
            raise ValueError(f"targets must be a finite array of shape ({n_points}, {n_classes})")
    likelihood = MultinomialProbitLikelihood() if likelihood is None else likelihood
    rng = check_rng(rng)
    kernel_of_class = np.zeros(n_classes, dtype=int) if n_kernels == 1 else np.arange(n_classes)

    # G&R (2006) §5: M_c = 0, μ^c = 0, s_c = diag K_c
    M = np.zeros((n_kernels, n_active, n_points))
    var = prior_var.copy()
    mean = np.zeros((n_points, n_classes))
    included = np.zeros(n_points, dtype=bool)
    active_set = np.empty(n_active, dtype=int)
    site_targets = np.empty((n_active, n_classes))
    log_target_prob = np.empty(n_active)
    entropy_gain = np.empty(n_active)
    random_order = rng.permutation(n_points)

    for step in with_progress(range(n_active), progress, f"IVM ({selection})"):
        var_by_class = var[kernel_of_class].T  # (n, C): s_c of every class, column c from kernel g(c)
        # Algorithm 11.1 step 2.1
        n, log_target_prob[step] = _choose_point(step, selection, t, mean, var_by_class, included, random_order,
                                                 likelihood, screen)  # fmt: skip
        # the chosen point's entropy reduction (recorded for every rule)
        entropy_gain[step] = entropy_reduction(var_by_class[[n]])[0]

        if targets is None:
            # G&R (2006) eqs 4.3–4.4: p_i = z̃_i − μ_i for z_i ~ N(μ_i, I) truncated to the cone of c_i (i is ``n``)
            shift = likelihood.cone_mean_shift(t[[n]], mean[[n]])[0][0]
        else:
            shift = targets[n] - mean[n]
        site_targets[step] = mean[n] + shift  # z̃_i, fixed from now on

        column = np.asarray(kernel_column(n), dtype=float)
        if column.ndim == 1:
            column = column[None, :]
        if column.shape != (n_kernels, n_points) or not np.all(np.isfinite(column)):
            raise ValueError(
                f"kernel_column({n}) must return a finite array of shape ({n_kernels}, {n_points}); got {column.shape}"
            )
        # G&R (2006) eqs 5.1–5.4
        adf_include(M, var, mean, column, shift, step, n, kernel_of_class)
        included[n] = True
        active_set[step] = n

    return IVMFit(
        active_set=active_set,
        targets=site_targets,
        mean=mean,
        var=var[kernel_of_class].T.copy(),
        M=M,
        kernel_of_class=kernel_of_class,
        log_target_probability=log_target_prob,
        entropy_reduction=entropy_gain,
        selection=selection,
    )


def ivm_fit(kernel: SEKernel | Sequence[SEKernel] | None, X: ArrayLike, t: ArrayLike, *, n_active: int,
            selection: str = "predictive", rng: np.random.Generator | int = 0, n_classes: int | None = None,
            likelihood: MultinomialProbitLikelihood | None = None, screen: bool = False,
            targets: ArrayLike | None = None, progress: bool = False) -> IVMFit:  # fmt: skip
    r"""The multi-class IVM on inputs ``X`` with squared-exponential kernel(s): :func:`ivm_adf` with
    the kernel columns computed one at a time from ``X``.

    Parameters
    ----------
    kernel : SEKernel or sequence of C SEKernels or None
        One kernel shared by every class (G&R's experiments) or one per class; ``None`` is ``SEKernel()``.
    X : array_like (n, D)
        Training inputs.
    t : array_like (n,) of int
        Classes c_i, codes 0..C−1.
    n_active, selection, rng, n_classes, likelihood, screen, targets, progress
        As in :func:`ivm_adf`.

    Returns
    -------
    IVMFit
        With ``X_active`` and ``kernels`` set, ready for :func:`ivm_predict`.
    """
    X = check_matrix(X, "X")
    t, n_classes = check_class_codes(t, X.shape[0], n_classes, require_all=False)
    per_class, shared = class_kernels(SEKernel() if kernel is None else kernel, n_classes)
    kernels = per_class[:1] if shared else per_class
    for k in kernels:
        k.diag(X[:1])  # checks that the kernel fits the inputs (ARD lengthscales per feature)

    def kernel_column(n):
        # k_gi = k_g(X, x_i), with the jitter of K_g at entry i (i is ``n`` here)
        column = np.stack([k.K(X, X[n : n + 1])[:, 0] for k in kernels])
        column[:, n] += [k.jitter for k in kernels]
        return column

    prior_var = np.stack([k.diag(X) for k in kernels])
    fit = ivm_adf(
        kernel_column,
        prior_var,
        t,
        n_active=n_active,
        selection=selection,
        rng=rng,
        n_classes=n_classes,
        likelihood=likelihood,
        screen=screen,
        targets=targets,
        progress=progress,
    )
    return replace(fit, X_active=X[fit.active_set].copy(), kernels=kernels)


def ivm_predict(fit: IVMFit, X: ArrayLike, *, path: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""Posterior means and variances of the C latent functions at new inputs, from the active set.

    After S inclusions with fixed site values z̃_ℐ, each
    Q(f^c) is GP regression with unit noise on the active set (GPML eqs 2.25–2.26,
    G&R §4.5 restricted to ℐ):

        μ^c(x_∗) = a_∗ᵀb_c,
        σ_c²(x_∗) = k_c(x_∗, x_∗) - a_∗ᵀa_∗,
        a_∗ = L_ℐ⁻¹k_(c,ℐ ∗),
        b_c = L_ℐ⁻¹z̃^c_ℐ,

    with L_ℐ L_ℐᵀ = K_(c,ℐℐ) + I (S × S, factorised
    once). Because the rows of L_ℐ follow the inclusion order, the prediction of
    the model after only its first l inclusions is the sum of the first l terms of these inner
    products: ``path=True`` returns all S of them at cost O(S m C) for m test points.

    Parameters
    ----------
    fit : IVMFit
        From :func:`ivm_fit`.
    X : array_like (m, D)
        Test inputs.
    path : bool
        If True return arrays of shape (S, m, C): entry l is the prediction after l + 1 inclusions.

    Returns
    -------
    mean, var : ndarrays (m, C), or (S, m, C) with ``path=True``
        Pass them to ``MultinomialProbitLikelihood().predict`` for class probabilities (G&R §4.5, eq 5.5).
    """
    if fit.kernels is None or fit.X_active is None:
        raise ValueError("fit must come from ivm_fit (it needs the kernels and the active inputs)")
    X = check_matrix(X, "X", n_features=fit.X_active.shape[1])
    shape = (fit.n_active, X.shape[0], fit.n_classes) if path else (X.shape[0], fit.n_classes)
    mean, var = np.empty(shape), np.empty(shape)
    for g, kernel in enumerate(fit.kernels):
        classes = np.flatnonzero(fit.kernel_of_class == g)
        C_active = kernel.K(fit.X_active)
        C_active[np.diag_indices_from(C_active)] += 1.0
        # L Lᵀ = K_II + I (unit noise of the ADF sites)
        L = cholesky(C_active, name="C_II + I").L
        # a_* = L⁻¹ k_I*,  b_c = L⁻¹ z̃^c_I  (GPML eqs 2.25–2.26 via one Cholesky)
        A = solve_lower(L, kernel.K(fit.X_active, X))
        B = solve_lower(L, fit.targets[:, classes])
        prior = kernel.diag(X)
        if path:
            mean[:, :, classes] = np.cumsum(A[:, :, None] * B[:, None, :], axis=0)
            var[:, :, classes] = (prior[None, :] - np.cumsum(A**2, axis=0))[:, :, None]
        else:
            mean[:, classes] = A.T @ B
            var[:, classes] = (prior - np.sum(A**2, axis=0))[:, None]
    return mean, np.maximum(var, 0.0)


# --------------------------------------------------------------------------- a default kernel and a baseline
def median_distance_kernel(X: ArrayLike, *, variance: float = 10.0, max_points: int = 500) -> SEKernel:
    r"""An isotropic SE kernel whose lengthscale is the median distance between training inputs.

    The median heuristic: ℓ = median_(i<j)‖x_i - x_j‖,
    computed on at most ``max_points`` inputs (evenly spaced through ``X``, so the cost is constant in n
    and the result deterministic). It puts a typical pair of points at kernel correlation
    e^(-1/2), whatever the number and scale of the inputs; with a fixed lengthscale of one,
    points in many standardised dimensions are nearly uncorrelated and the IVM's predictions stay at
    1/C. The signal variance (default 10) sets how far the unit-noise sites of G&R eq 4.1 can
    move the latent means: with variance 1 the IVM's probabilities stay close to uniform. Both choices
    come from measurements on seven data sets (``benchmarks/ivm.py``); neither is learnt.

    Parameters
    ----------
    X : array_like (n, D)
        Training inputs.
    variance : float
        Signal variance of the kernel.
    max_points : int
        At most this many inputs enter the median (about ``max_points²/2`` distances).

    Returns
    -------
    SEKernel
        ``SEKernel(variance=variance, lengthscale=ℓ)``. If every selected pair of inputs coincides
        (no positive distance), ℓ = 1.
    """
    X = check_matrix(X, "X")
    max_points = check_positive_int(max_points, "max_points")
    rows = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], max_points)).astype(int))
    distances = pdist(X[rows])
    positive = distances[distances > 0]
    # duplicate inputs carry no scale: the median of the positive distances, or 1 if there are none
    lengthscale = float(np.median(positive)) if positive.size else 1.0
    return SEKernel(variance=variance, lengthscale=lengthscale)


def training_log_predictive(fit: IVMFit, t: ArrayLike, likelihood: MultinomialProbitLikelihood | None = None) -> float:
    r"""Mean log predictive probability of the training labels under the fitted IVM.

    (1/n)∑_(i=1)^n log P(c_i | μ_i, s_i) by G&R eq 5.5
    (:func:`target_log_probability`) at the posterior means and variances the IVM keeps for all n training
    points, included or not: the same numbers as ``ivm_predict`` at the training inputs, without
    recomputing them. It is an in-sample score (the included points helped to fit it), so a model
    scoring below :func:`class_frequency_log_predictive` is worse than a constant classifier even on
    the data it saw.

    Parameters
    ----------
    fit : IVMFit
    t : array_like (n,) of int
        The training classes the fit was made with.
    likelihood : MultinomialProbitLikelihood, optional
        Quadrature rule for eq 5.5.

    Returns
    -------
    float
    """
    t, _ = check_class_codes(t, fit.mean.shape[0], fit.n_classes, require_all=False)
    return float(np.mean(target_log_probability(t, fit.mean, fit.var, likelihood)))


def class_frequency_log_predictive(t: ArrayLike, n_classes: int | None = None) -> float:
    r"""Mean log probability of the labels ``t`` under their own class frequencies: ∑_c π_c log π_c.

    The score of the constant classifier that predicts the training class frequencies
    π_c = n_c/n at every input: the baseline any classifier of these labels should beat.

    Parameters
    ----------
    t : array_like (n,) of int
        Classes c_i, codes 0..C−1.
    n_classes : int, optional
        C (default ``max(t) + 1``).

    Returns
    -------
    float
        (1/n)∑_i log π_(c_i) = ∑_c π_c log π_c (at most 0).
    """
    t, n_classes = check_class_codes(t, len(np.atleast_1d(t)), n_classes, require_all=False)
    shares = np.bincount(t, minlength=n_classes) / len(t)
    return float(np.mean(np.log(shares[t])))


def prequential_class_frequency_log_predictive(t: ArrayLike, n_classes: int | None = None) -> float:
    r"""Mean log probability of each label in ``t`` under the class frequencies of the labels before it.

    (1/S)∑_l log((n_(c_l)^(<l) + 1)/(l − 1 + C)), with n_c^(<l) the count of class c among the first l − 1
    labels (Laplace's rule of succession: the first label gets 1/C). It is the prequential score of the
    constant classifier, to set beside the IVM's own prequential score, the mean of
    ``IVMFit.log_target_probability`` (each included point predicted from the points included before it):
    with random selection both are out-of-sample estimates, so unlike the training-label score of
    :func:`training_log_predictive` they can show a kernel that overfits.

    Parameters
    ----------
    t : array_like (S,) of int
        Classes c_l in the order they were seen, codes 0..C−1.
    n_classes : int, optional
        C (default ``max(t) + 1``).

    Returns
    -------
    float
        At most 0.
    """
    t, n_classes = check_class_codes(t, len(np.atleast_1d(t)), n_classes, require_all=False)
    counts, total = np.ones(n_classes), float(n_classes)
    total_log = 0.0
    for c in t:
        total_log += np.log(counts[c] / total)
        counts[c] += 1.0
        total += 1.0
    return float(total_log / len(t))
