import numpy as np
import pytest

from gpc_ref import datasets


def test_crabs_shape_groups_and_split():
    crabs = datasets.load_crabs()
    assert crabs.X.shape == (200, 5)
    assert crabs.classes.tolist() == ["F", "M"]
    assert sorted(np.unique(crabs.groups).tolist()) == ["B-F", "B-M", "O-F", "O-M"]
    train, test = datasets.crabs_split(0)
    assert len(train) == 80 and len(test) == 120
    assert len(np.intersect1d(train, test)) == 0
    # 20 per species×sex group, as in W&B
    assert np.all(np.unique(crabs.groups[train], return_counts=True)[1] == 20)
    # the split is random, not by row index: rows are sorted by size within each group,
    # so the training crabs of a group must not simply be its first (smallest) 20
    for group in np.unique(crabs.groups):
        members = np.flatnonzero(crabs.groups == group)
        assert not np.array_equal(np.intersect1d(train, members), members[:20])
    np.testing.assert_array_equal(datasets.crabs_split(0)[0], train)
    assert not np.array_equal(datasets.crabs_split(1)[0], train)


def test_pima_is_ripleys_split():
    train, test = datasets.load_pima()
    assert train.X.shape == (200, 7) and test.X.shape == (332, 7)
    assert train.classes.tolist() == ["No", "Yes"]
    assert int(np.sum(train.y == "Yes")) == 68 and int(np.sum(test.y == "Yes")) == 109


@pytest.mark.parametrize(
    "loader, shape, n_classes",
    [
        (datasets.load_glass, (214, 9), 6),
        (datasets.load_biopsy, (683, 9), 2),
        (datasets.load_penguins, (342, 4), 3),
        (datasets.load_iris, (150, 4), 3),
        (datasets.load_wine, (178, 13), 3),
        (datasets.load_digits, (1797, 64), 10),
        (datasets.load_breast_cancer, (569, 30), 2),
    ],
)
def test_other_loaders(loader, shape, n_classes):
    data = loader()
    assert data.X.shape == shape
    assert len(data.classes) == n_classes
    assert np.all(np.isfinite(data.X))


def test_stratified_kfold_partitions_and_balances():
    labels = np.repeat([0, 1, 2], [30, 20, 11])
    folds = datasets.stratified_kfold(labels, 5, 3)
    tests = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(len(labels)))
    for train, test in folds:
        assert len(np.intersect1d(train, test)) == 0
        counts = np.bincount(labels[test], minlength=3)
        assert np.all(np.abs(counts - np.array([6, 4, 2.2])) <= 1)


def test_stratified_split_fraction_and_errors():
    labels = np.repeat(["a", "b"], [10, 20])
    train, test = datasets.stratified_split(labels, 0.6, 0)
    assert np.sum(labels[train] == "a") == 6 and np.sum(labels[train] == "b") == 12
    with pytest.raises(ValueError, match="n_train_per_class"):
        datasets.stratified_split(labels, 10, 0)
    with pytest.raises(ValueError, match="n_folds"):
        datasets.stratified_kfold(labels, 1, 0)


def test_standardizer_uses_training_statistics():
    X_train = np.array([[1.0, 5.0], [3.0, 5.0]])
    scaler = datasets.Standardizer().fit(X_train)
    np.testing.assert_allclose(scaler.transform(X_train), [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(scaler.transform([[5.0, 6.0]]), [[3.0, 1.0]])
    with pytest.raises(ValueError, match="fitted"):
        datasets.Standardizer().transform(X_train)
    # inputs are 2-D: a 1-D array is refused rather than read as one feature or one point
    with pytest.raises(ValueError, match="2-D"):
        datasets.Standardizer().fit(np.array([1.0, 3.0]))
    with pytest.raises(ValueError, match="2-D"):
        scaler.transform(np.array([5.0, 6.0]))
    np.testing.assert_allclose(datasets.Standardizer().fit_transform(np.array([1.0, 3.0])[:, None]), [[-1.0], [1.0]])


def test_gm_toy_follows_the_description():
    x, t = datasets.make_gm_toy_1d(0)
    assert np.all((x >= 0) & (x <= 50))
    assert np.all(t[x < 13] == 1) and np.all(t[(x >= 13) & (x < 29)] == 0) and np.all(t[x > 43] == 1)


def test_label_noise_circle():
    split = datasets.make_label_noise_circle(0)
    assert split.X_train.shape == (40, 2) and split.X_test.shape == (960, 2)
    clean = np.where((split.X_train**2).sum(1) >= 0.5, 1, -1)
    np.testing.assert_array_equal(np.flatnonzero(clean != split.y_train), split.info["flipped"])


def test_ard_gaussian_set():
    split = datasets.make_ard_gaussian(0)
    assert split.X_train.shape == (300, 6) and split.X_test.shape == (100, 6)
    X = np.vstack([split.X_train, split.X_test])
    y = np.concatenate([split.y_train, split.y_test])
    # relevant inputs have mean y, irrelevant mean 0
    assert np.all(np.abs((X[:, :3] * y[:, None]).mean(0) - 1.0) < 0.2)
    assert np.all(np.abs((X[:, 3:] * y[:, None]).mean(0)) < 0.2)


def test_three_class_toy():
    X, y = datasets.make_three_class_toy(0, 3000)
    assert X.shape == (3000, 10) and set(np.unique(y)) == {0, 1, 2}
    r2 = (X[:, :2] ** 2).sum(1)
    assert np.all((r2[y == 0] > 0.1) & (r2[y == 0] < 0.5))
    assert np.all((r2[y == 1] > 0.6) & (r2[y == 1] < 1.0))
    assert abs(X[y == 2, 0].std() - 0.1) < 0.01
    np.testing.assert_array_equal(datasets.make_three_class_toy(5, 10)[0], datasets.make_three_class_toy(5, 10)[0])


def test_generators_refuse_missing_rng():
    with pytest.raises(ValueError, match="rng"):
        datasets.make_gm_toy_1d(None)


def test_move_labels_moves_about_the_fraction_to_other_classes():
    codes = np.random.default_rng(0).integers(0, 3, size=4000)
    moved = datasets.move_labels(codes, 0.1, 5, n_classes=3)
    changed = moved != codes
    assert abs(changed.mean() - 0.1) < 0.02 and set(np.unique(moved)) <= {0, 1, 2}
    np.testing.assert_array_equal(datasets.move_labels(codes, 0.1, 5, n_classes=3), moved)  # seeded
    np.testing.assert_array_equal(datasets.move_labels(codes, 0.0, 5), codes)
    with pytest.raises(ValueError, match="fraction"):
        datasets.move_labels(codes, 1.5, 0)


def test_three_class_toy_bayes_classifier_has_the_analytic_error():
    # class 2 ~ N(0, 0.01 I) falls into class 0's annulus (0.1 < r² < 0.5), where class 0 is more probable,
    # with probability exp(-0.1/0.02) - exp(-0.5/0.02); the other classes are never misclassified
    bayes_error = (np.exp(-5.0) - np.exp(-25.0)) / 3.0
    X, y = datasets.make_three_class_toy(1, 300_000)
    proba = datasets.three_class_toy_bayes_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    error = np.mean(proba.argmax(axis=1) != y)
    assert abs(error - bayes_error) < 4 * np.sqrt(bayes_error / len(y))
    assert np.all(proba[y == 1, 1] > 1 - 1e-9)  # in class 1's annulus class 2's density is below 16 exp(-30)
    with pytest.raises(ValueError, match="at least 2 columns"):
        datasets.three_class_toy_bayes_proba(np.zeros((3, 1)))
