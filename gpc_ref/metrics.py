r"""Scores for classifiers: error rates with error bars, test log-likelihood, Brier score, calibration.

Notation: ``y_true`` are integer class codes 0..K−1 (or {0, 1} for binary,
G&M's t); ``proba`` is either a vector of P(class 1) for binary problems or an
(n, K) array whose column k is P(class k).

References
----------
- [GM00] Gibbs & MacKay (2000), eq 41: test log likelihood.
- [Brier50] Brier (1950): the quadratic score.
- [NB03] Nadeau & Bengio (2003), "Inference for the generalization error", Machine Learning 52: the corrected
  resampled t-test for differences measured on random train/test partitions of one pool.
- [Diet98] Dietterich (1998), "Approximate statistical tests for comparing supervised classification learning
  algorithms", Neural Computation 10: why the naive t-test over re-splits is anti-conservative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .validation import check_vector

__all__ = [
    "ErrorRate",
    "error_rate",
    "test_log_likelihood",
    "mean_log_predictive",
    "brier_score",
    "reliability_curve",
    "PairedDifference",
    "paired_difference",
]


@dataclass(frozen=True)
class ErrorRate:
    """Misclassifications with a binomial error bar.

    ``std_error`` is √(r(1−r)/n), the standard deviation of the rate if each
    test point were an independent Bernoulli trial; ``interval`` is the 95%
    Wilson score interval, which stays inside [0, 1] even for 0 errors.
    """

    n_errors: int
    n: int
    rate: float
    std_error: float
    interval: tuple[float, float]

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.n_errors}/{self.n} = {self.rate:.3f} ± {self.std_error:.3f} (95% CI {low:.3f}–{high:.3f})"


def error_rate(y_true: ArrayLike, y_pred: ArrayLike) -> ErrorRate:
    """Count the misclassifications of ``y_pred`` against ``y_true`` (any label values).

    Parameters
    ----------
    y_true, y_pred : array-like (n,)
        True and predicted labels, compared with ``!=``.

    Returns
    -------
    ErrorRate
        The count, the rate and its binomial error bars.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(f"y_true and y_pred must be 1-D of the same length; got {y_true.shape} and {y_pred.shape}")
    n = len(y_true)
    if n == 0:
        raise ValueError("y_true must contain at least one label")
    n_errors = int(np.sum(y_true != y_pred))
    rate = n_errors / n
    z = 1.959963984540054  # 97.5% point of N(0, 1)
    centre = (rate + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(rate * (1 - rate) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return ErrorRate(
        n_errors,
        n,
        rate,
        float(np.sqrt(rate * (1 - rate) / n)),
        (float(max(centre - half, 0.0)), float(min(centre + half, 1.0))),
    )


def _true_class_probability(y_true, proba):
    y_true = np.asarray(y_true)
    proba = np.asarray(proba, dtype=float)
    if not np.all(np.isfinite(proba)):
        raise ValueError("proba contains NaN or infinite values")
    if np.any(proba < 0) or np.any(proba > 1):
        raise ValueError("proba must lie in [0, 1]")
    if proba.ndim == 1:
        if not np.all(np.isin(y_true, (0, 1))):
            raise ValueError("with a vector proba (P(class 1)), y_true must hold 0/1 labels")
        return np.where(y_true == 1, proba, 1.0 - proba)
    if proba.ndim != 2 or proba.shape[0] != len(y_true):
        raise ValueError(f"proba must have shape (n,) or (n, K) with n = {len(y_true)}; got {proba.shape}")
    codes = y_true.astype(int)
    if np.any(codes != y_true) or np.any(codes < 0) or np.any(codes >= proba.shape[1]):
        raise ValueError(f"y_true must hold integer class codes in 0..{proba.shape[1] - 1}")
    return proba[np.arange(len(codes)), codes]


def test_log_likelihood(y_true: ArrayLike, proba: ArrayLike) -> float:
    r"""G&M eq 41: ∑_n t_n log t̂_n + (1-t_n) log(1-t̂_n), or its multi-class form
    ∑_n log p̂_n(y_n).

    A probability of exactly 0 for the true class would give −∞; it is floored
    at the smallest positive double, so the score stays finite (about −708
    per such point) and says loudly that the classifier was certain and wrong.

    Parameters
    ----------
    y_true : array-like (n,)
        Class codes 0..K−1, or 0/1 with a vector ``proba`` (module docstring).
    proba : array-like (n,) or (n, K)
        P(class 1), or one column per class; entries in [0, 1].

    Returns
    -------
    float
        The sum over the n test points (higher is better; 0 is perfect).
    """
    p = _true_class_probability(y_true, proba)
    return float(np.sum(np.log(np.maximum(p, np.finfo(float).tiny))))


def mean_log_predictive(y_true: ArrayLike, proba: ArrayLike) -> float:
    """The test log-likelihood divided by the number of test points.

    Parameters
    ----------
    y_true, proba : array-like
        The labels and the probabilities :func:`test_log_likelihood` takes.

    Returns
    -------
    float
        :func:`test_log_likelihood` / n.
    """
    return test_log_likelihood(y_true, proba) / len(y_true)


def brier_score(y_true: ArrayLike, proba: ArrayLike) -> float:
    r"""Mean squared distance between the predicted probabilities and the one-hot truth.

    Binary (vector ``proba``): (1/n)∑_n (t̂_n - t_n)²;
    multi-class: (1/n)∑_n ∑_k (p̂_nk - [y_n = k])².

    Parameters
    ----------
    y_true, proba : array-like
        Labels and predicted probabilities, checked as :func:`test_log_likelihood` checks them.

    Returns
    -------
    float
        Between 0 (perfect) and 1 (binary) or 2 (multi-class).
    """
    p_true = _true_class_probability(y_true, proba)  # also validates the inputs
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        return float(np.mean((1.0 - p_true) ** 2))
    return float(np.mean((1.0 - p_true) ** 2 + (proba**2).sum(axis=1) - p_true**2))


def reliability_curve(
    y_true: ArrayLike, proba: ArrayLike, n_bins: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibration data for a reliability diagram of a binary classifier.

    A calibrated classifier has observed_frequency ≈ mean_predicted.

    Parameters
    ----------
    y_true : array-like (n,)
        0/1 labels.
    proba : array-like (n,)
        P(class 1).
    n_bins : int
        Equal-width bins of [0, 1].

    Returns
    -------
    mean_predicted, observed_frequency, counts : ndarray
        For the non-empty bins, in increasing order of probability.
    """
    proba = check_vector(proba, "proba")
    y_true = np.asarray(y_true, dtype=float)
    if y_true.shape != proba.shape or not np.all(np.isin(y_true, (0, 1))):
        raise ValueError("y_true must be 0/1 labels of the same length as proba")
    bins = np.minimum((proba * n_bins).astype(int), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    used = counts > 0
    mean_predicted = np.bincount(bins, weights=proba, minlength=n_bins)[used] / counts[used]
    observed = np.bincount(bins, weights=y_true, minlength=n_bins)[used] / counts[used]
    return mean_predicted, observed, counts[used]


@dataclass(frozen=True)
class PairedDifference:
    """The mean over J splits of a paired difference (method − reference), its standard error and the book's rule.

    ``std_error`` is the naive s/√J where the splits are independent draws, and Nadeau & Bengio's corrected
    √((1/J + n_test/n_train) s²) where they are random partitions of one pool (their training sets overlap, so the
    J differences are positively correlated and s/√J is too small); ``naive_std_error`` is s/√J either way.
    ``resolved`` is the book's one rule: abs(mean) > t_{0.975, J−1} · ``std_error`` (``t_critical``), a two-sided
    95 % t test with J − 1 degrees of freedom.
    """

    mean: float
    std_error: float
    naive_std_error: float
    t_critical: float
    n_splits: int
    resampled: bool

    @property
    def resolved(self) -> bool:
        """abs(mean) > t_critical · std_error."""
        return abs(self.mean) > self.t_critical * self.std_error

    @property
    def t(self) -> float:
        """mean / std_error (infinite where every split gave the same difference, and the mean is not zero)."""
        if self.std_error > 0:
            return self.mean / self.std_error
        return 0.0 if self.mean == 0 else float(np.copysign(np.inf, self.mean))


def paired_difference(
    differences: ArrayLike, *, n_train: int | None = None, n_test: int | None = None, level: float = 0.95
) -> PairedDifference:
    r"""Summarise per-split differences (method − reference, same splits) by the rule the book uses throughout.

    Parameters
    ----------
    differences : array-like (J,)
        One difference per split, J ≥ 2.
    n_train, n_test : int or None
        The training and test sizes when the splits are random partitions of one pool (re-splits): the variance
        s²/J is then inflated by (1/J + n_test/n_train)/(1/J) [NB03]. None (both) for splits that are independent
        draws (a synthetic problem drawn afresh per split).
    level : float
        Two-sided level of the t test (default 0.95).

    Returns
    -------
    PairedDifference
    """
    d = check_vector(differences, "differences")
    if d.size < 2:
        raise ValueError(f"differences needs at least two splits; got {d.size}")
    if (n_train is None) != (n_test is None):
        raise ValueError("n_train and n_test are given together (re-splits of one pool) or not at all")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    J = d.size
    variance = float(np.var(d, ddof=1))
    naive = np.sqrt(variance / J)
    resampled = n_train is not None
    if resampled:
        if n_train < 1 or n_test < 1:
            raise ValueError(f"n_train and n_test must be positive; got {n_train} and {n_test}")
        corrected = np.sqrt((1.0 / J + n_test / n_train) * variance)
    else:
        corrected = naive
    t_critical = float(stats.t.ppf(0.5 + level / 2.0, J - 1))
    return PairedDifference(mean=float(d.mean()), std_error=float(corrected), naive_std_error=float(naive),
                            t_critical=t_critical, n_splits=J, resampled=resampled)  # fmt: skip
