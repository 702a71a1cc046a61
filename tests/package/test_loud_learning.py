"""Learning that fails loudly (issue 29): warnings whose words are true, on synthetic cases made for them."""

import warnings

import numpy as np
import pytest

import gpc_ref
from gpc_ref import EPGPC
from gpc_ref import KLGPC
from gpc_ref import GibbsProbitGPC
from gpc_ref import LaplaceGPC
from gpc_ref import SEKernel
from gpc_ref import SparseIVM
from gpc_ref import VariationalBoundsGPC
from gpc_ref import VBProbitGPC

UNIT_KERNEL_ESTIMATORS = [LaplaceGPC, EPGPC, KLGPC, VariationalBoundsGPC, VBProbitGPC, GibbsProbitGPC]


def _binary(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _scale_warnings(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [str(w.message) for w in caught if "look unstandardised" in str(w.message)]


@pytest.mark.parametrize("estimator", UNIT_KERNEL_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_inputs_on_a_scale_the_default_kernel_cannot_see_are_named_in_one_warning(estimator):
    X, y = _binary()
    X_big = X * np.array([1.0, 1e6, 1.0])  # one column in micrometres, say
    said = _scale_warnings(estimator(optimize=False), X_big, y)
    assert len(said) == 1 and "column(s) 1 have standard deviation" in said[0] and "standardise" in said[0]
    # standardised inputs, or a kernel the user chose for the scale, are left alone
    assert not _scale_warnings(estimator(optimize=False), X, y)
    assert not _scale_warnings(estimator(SEKernel(lengthscale=[1.0, 1e6, 1.0]), optimize=False), X_big, y)


def test_mixed_scales_name_the_widest_column_and_the_smallest_spread():
    X, y = _binary()
    X_mixed = X * np.array([1e-4, 5.0, 1.0])  # nothing above 10, but a spread ratio of 5e4
    (said,) = _scale_warnings(LaplaceGPC(optimize=False), X_mixed, y)
    assert "column(s) 1 have standard deviation" in said and "the smallest is" in said


def test_the_scale_aware_default_of_sparse_ivm_needs_no_warning():
    X, y = _binary(n=60)
    assert not _scale_warnings(SparseIVM(n_active=20), X * 1e6, y)


# ----------------------------------------------------------------------------- inputs on a scale the kernel cannot see
DEFAULT_KERNEL_ESTIMATORS = [LaplaceGPC, EPGPC, KLGPC, VariationalBoundsGPC, VBProbitGPC]


def _recorded(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return caught


@pytest.mark.parametrize("estimator", DEFAULT_KERNEL_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_the_default_kernel_on_unstandardised_inputs_fits_them_standardised_and_says_so_once(estimator):
    X, y = _binary(n=60, seed=2)
    X_test, y_test = _binary(n=400, seed=3)
    big = np.array([1e6, 1e6, 1e6])  # micrometres: every input on a scale the unit kernel cannot see
    caught = _recorded(model := estimator(), X * big, y)
    assert len(caught) == 1 and "standardises the inputs itself" in str(caught[0].message)
    assert hasattr(model, "standardizer_")
    # the fit is the fit on the standardised inputs (the same numbers, up to rounding), not a constant classifier
    reference = estimator().fit(model.standardizer_.transform(X * big), y)
    p, p_reference = (
        model.predict_proba(X_test * big)[:, 1],
        reference.predict_proba(model.standardizer_.transform(X_test * big))[:, 1],
    )
    np.testing.assert_allclose(p, p_reference, atol=1e-6)
    assert np.std(p) > 0.2 and model.score(X_test * big, y_test) > 0.8
    # a refit on standardised inputs drops the map
    assert not hasattr(model.fit(X, y), "standardizer_")


def test_kl_on_thirty_inputs_of_mixed_scales_is_quick_with_one_warning():
    rng = np.random.default_rng(4)
    n, D = 200, 30
    X = rng.normal(size=(n, D))
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(int)
    scales = 10.0 ** rng.uniform(-3, 3, size=D)  # millimetres beside kilometres
    model = KLGPC()
    caught = _recorded(model, X * scales, y)
    assert [w.category for w in caught] == [UserWarning] and "look unstandardised" in str(caught[0].message)
    X_test = rng.normal(size=(500, D))
    y_test = (X_test[:, 0] - X_test[:, 1] > 0).astype(int)
    assert model.hyperparameter_fit_.converged and model.score(X_test * scales, y_test) > 0.75


# ----------------------------------------------------------------------------- a kernel that memorises
def test_a_kernel_that_correlates_no_two_training_inputs_is_named():
    from gpc_ref.errors import MemorisingKernelWarning

    X, y = _binary(n=60)
    # the user's unit kernel on inputs in micrometres: EP's evidence is flat there, its start "converges"
    with pytest.warns(MemorisingKernelWarning, match="median correlation with the nearest distinct training input"):
        model = EPGPC(SEKernel()).fit(X * 1e6, y)
    assert np.allclose(model.predict_proba(X[:5] * 1e6 + 1e3)[:, 1], 0.5)  # it predicts ½ off the training inputs
    for estimator in (LaplaceGPC(SEKernel(lengthscale=1e-3), optimize=False), SparseIVM(SEKernel(lengthscale=1e-4))):
        with pytest.warns(MemorisingKernelWarning):
            estimator.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemorisingKernelWarning)
        EPGPC().fit(X, y)  # a fit that generalises says nothing


def test_repeated_inputs_that_a_memorising_kernel_fits_are_counted_in_its_warning():
    from gpc_ref.errors import MemorisingKernelWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = (X[:, 0] + 1.5 * rng.normal(size=100) > 0).astype(int)  # a weak signal, each row entered three times
    with pytest.warns(MemorisingKernelWarning, match="200 of the 300 training inputs repeat another exactly"):
        LaplaceGPC(prior=None).fit(np.repeat(X, 3, axis=0), np.repeat(y, 3))


def test_nearest_neighbour_correlations_skip_repeats_and_look_at_a_subset_of_large_sets():
    from gpc_ref.classifiers.base import nearest_neighbour_correlations

    X = np.array([[0.0], [0.0], [1.0], [3.0]])
    correlations, repeated = nearest_neighbour_correlations(SEKernel(lengthscale=1.0), X)
    np.testing.assert_allclose(correlations, np.exp(-0.5 * np.array([1.0, 1.0, 1.0, 4.0])))
    assert repeated == 1
    correlations, _ = nearest_neighbour_correlations(SEKernel(), np.random.default_rng(0).normal(size=(5000, 2)))
    assert correlations.shape == (500,) and np.median(correlations) > 0.99  # 5000 points: neighbours are close


# ----------------------------------------------------------------------------- a search that starts on a plateau
def test_a_search_whose_start_is_flat_looks_around_before_calling_it_converged():
    from gpc_ref.hyperparameters import maximize

    def bump(theta):  # zero, and flat, for θ < 0.5; a maximum of 1 at θ = 1.5
        r = 1.0 - (theta[0] - 1.5) ** 2
        return (r * r, np.array([-4.0 * r * (theta[0] - 1.5)])) if r > 0 else (0.0, np.zeros(1))

    fit = maximize(bump, [0.0], bounds=(-5.0, 5.0))
    assert fit.converged and abs(fit.theta[0] - 1.5) < 1e-3 and fit.value > 0.999999
    assert len(fit.starts) == len(fit.values) == 2 and fit.values[-1] == fit.value
    # where the objective is flat all round, the start is an optimum as the gradient test says
    flat = maximize(lambda theta: (2.0, np.zeros(1)), [0.0], bounds=(-5.0, 5.0))
    # (the start, its two probes at θ ± 1, and the two of the local check at θ ± 2)
    assert flat.converged and flat.theta[0] == 0.0 and flat.n_evaluations == 5


# ----------------------------------------------------------------------------- a converged search at a local optimum
def test_a_local_optimum_that_a_probe_beats_is_left_with_a_warning():
    from gpc_ref.errors import LocalOptimumWarning
    from gpc_ref.hyperparameters import maximize

    def two_bumps(theta):  # a local maximum of 1 at θ = 0.5, the global one of 2 at θ = 2.5
        value = np.exp(-4.0 * (theta[0] - 0.5) ** 2) + 2.0 * np.exp(-4.0 * (theta[0] - 2.5) ** 2)
        gradient = -8.0 * (theta[0] - 0.5) * np.exp(-4.0 * (theta[0] - 0.5) ** 2) - 16.0 * (theta[0] - 2.5) * np.exp(
            -4.0 * (theta[0] - 2.5) ** 2
        )
        return float(value), np.array([gradient])

    with pytest.warns(LocalOptimumWarning, match=r"local optimum \(objective 1\).*log_lengthscale up by 2 reached 2"):
        fit = maximize(two_bumps, [0.3], bounds=(-5.0, 5.0), names=["log_lengthscale"])
    assert fit.converged and abs(fit.theta[0] - 2.5) < 1e-3 and fit.values[-1] == fit.value
    assert len(fit.starts) == len(fit.values) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # from the global optimum's side, nothing to say
        assert abs(maximize(two_bumps, [2.0], bounds=(-5.0, 5.0)).theta[0] - 2.5) < 1e-3


def _two_lengthscales():
    # n = 200, four inputs: EP's evidence has a local optimum at ℓ = 0.70 (−131.96) next to the global one at
    # ℓ = 4.6 (−129.44); from the unit kernel the search reaches the local one (found among 24 synthetic subsets)
    rng = np.random.default_rng(0)
    for s in range(20):
        n = [60, 100, 150, 200][s % 4]
        X = rng.standard_normal((n, 4))
        w = rng.standard_normal(4) * [1.5, 1.0, 0.3, 0.0]
        f = X @ w + np.sin(2 * X[:, 0])
        y = (rng.random(n) < 1 / (1 + np.exp(-f))).astype(int)
    return X, y


def test_epgpc_at_a_local_optimum_says_so_and_keeps_the_higher_one():
    from gpc_ref.errors import LocalOptimumWarning

    X, y = _two_lengthscales()
    with pytest.warns(LocalOptimumWarning, match="maximize_ep_evidence: the search stopped at a local optimum"):
        model = EPGPC().fit(X, y)
    best = EPGPC(n_restarts=5, rng=19).fit(X, y)  # restarts find the same optimum
    assert model.hyperparameter_fit_.converged
    assert model.log_marginal_likelihood_ == pytest.approx(best.log_marginal_likelihood_, abs=1e-3)
    assert model.kernel_.lengthscale == pytest.approx(4.6, abs=0.05)


# ----------------------------------------------------------------------------- overconfidence on inputs with no signal
def _no_signal(n, seed=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), (rng.random(n) < 0.3).astype(int)


def test_sparse_ivm_sees_overfitting_in_its_prequential_score():
    from gpc_ref.ivm import BelowClassFrequenciesWarning

    X, y = _no_signal(300)
    with pytest.warns(BelowClassFrequenciesWarning, match="out-of-sample") as record:
        model = SparseIVM().fit(X, y)
    assert len(record) == 1
    # the training labels cannot see it: in-sample the fit beats the class frequencies
    assert model.training_log_predictive_ > model.class_frequency_log_predictive_
    assert model.prequential_log_predictive_ < model.prequential_class_frequency_log_predictive_


def test_prequential_class_frequencies_follow_laplaces_rule_of_succession():
    from gpc_ref.ivm import prequential_class_frequency_log_predictive

    expected = (np.log(1 / 2) + np.log(2 / 3) + np.log(1 / 4)) / 3
    assert prequential_class_frequency_log_predictive([0, 0, 1], 2) == pytest.approx(expected, rel=1e-14)


def test_gibbs_default_kernel_is_learnt_and_not_overconfident_without_signal():
    X, y = _no_signal(300)
    X_test, y_test = _no_signal(4000, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bound's maximum is the constant classifier here, and says so
        model = GibbsProbitGPC(n_samples=200, burn_in=200).fit(X, y)
    assert model.hyperparameter_fit_ is not None
    p, q = model.predict_proba(X_test)[:, 1], y.mean()
    excess = -np.mean(y_test * np.log(p / q) + (1 - y_test) * np.log((1 - p) / (1 - q)))
    assert excess < 0.005  # the unit kernel it used before: +0.033


# ----------------------------------------------------------------------------- many classes: the search's first step
def test_vb_probit_default_learns_nine_classes_instead_of_the_constant_classifier():
    datasets = pytest.importorskip("sklearn.datasets")
    from gpc_ref.datasets import Standardizer

    X, codes = datasets.make_classification(n_samples=600, n_features=10, n_informative=6, n_redundant=0, n_classes=9,
                                            n_clusters_per_class=1, class_sep=1.5, random_state=0)  # fmt: skip
    scaler = Standardizer().fit(X[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the bound's maximum here is not the constant classifier
        model = VBProbitGPC().fit(scaler.transform(X[:300]), codes[:300])
    # with an unscaled first L-BFGS step the search landed on the plateau of the constant classifier (signal
    # variance at the bottom of the box): 95 s and test error 0.90; the careful search's first step moves θ by ≤ 1
    assert model.hyperparameter_fit_.converged
    assert np.mean(model.predict(scaler.transform(X[300:])) != codes[300:]) < 0.3


# ----------------------------------------------------------------------------- the constant classifier's plateau
@pytest.mark.parametrize(
    "make", [EPGPC, KLGPC, LaplaceGPC, lambda: LaplaceGPC(prior=None), VariationalBoundsGPC], ids=lambda m: repr(m())
)
def test_a_learnt_kernel_no_better_than_a_coin_is_said_to_be(make):
    # balanced labels that the inputs do not predict: every learner's evidence ends within a nat of n log ½
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 3)), np.tile([0, 1], 100)
    with pytest.warns(gpc_ref.ConvergenceWarning, match=r"no better than probability 1/2 .* n log\(1/2\) = -138.63"):
        model = make().fit(X, y)
    assert model.log_marginal_likelihood_ < 200 * np.log(0.5) + 1.0
    # with 30 % of class 1 the class frequencies explain the labels better than ½, and learning finds them: not said
    y = (rng.random(200) < 0.3).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make().fit(X, y)
    assert not [w for w in caught if "no better than probability" in str(w.message)]
