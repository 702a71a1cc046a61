"""The learnt-hyperparameter splits, the latent references and the cost table of book/comparison_learnt.ipynb.

The experiments are ``reproduce/binary_splits_<problem>.py`` (protocol in ``reproduce/_binary_splits.py``),
``reproduce/binary_latents.py`` and ``reproduce/binary_cost.py`` (``benchmarks/binary_cost.py``), stored in
``book/results/``. These tests check the protocol's pieces on small inputs and that the stored results
hold what the chapter says of them; the chapter recomputes some stored numbers with today's code.
"""

import json
import pathlib
import sys

import numpy as np
import pytest

from gpc_ref import EPGPC
from gpc_ref import SEKernel
from gpc_ref import VBProbitGPC
from gpc_ref.datasets import crabs_split
from gpc_ref.datasets import load_biopsy
from gpc_ref.datasets import load_pima
from gpc_ref.datasets import make_gm_toy_1d
from gpc_ref.datasets import stratified_split
from gpc_ref.linalg import cholesky

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "book" / "results"
PROBLEMS = ("toy", "crabs", "pima", "biopsy")


@pytest.fixture(scope="module")
def splits_module():
    sys.path.insert(0, str(ROOT / "reproduce"))
    try:
        import _binary_splits

        yield _binary_splits
    finally:
        sys.path.remove(str(ROOT / "reproduce"))


def stored(name):
    path = RESULTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path.name} not stored yet (make reproduce ONLY={name})")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("name", "n_train", "n_test"), [("toy", 50, 1000), ("crabs", 80, 120), ("pima", 200, 332),
                                                         ("biopsy", 151, 532)])  # fmt: skip
def test_splits_have_the_stated_sizes_and_differ_by_seed(splits_module, name, n_train, n_test):
    first, second = splits_module.problem(name, 0), splits_module.problem(name, 1)
    for data in (first, second):
        assert data["X"].shape[0] == len(data["y"]) == n_train and len(data["y_test"]) == n_test
        assert set(np.unique(data["y"])) == {-1.0, 1.0}
        # standardised with the training set's own means and standard deviations
        assert np.allclose(data["X"].mean(axis=0), 0.0, atol=1e-10) and np.allclose(data["X"].std(axis=0), 1.0)
    assert not np.array_equal(first["y"], second["y"]) or not np.allclose(first["X"], second["X"])


def test_split_zero_is_the_comparisons_split_where_that_was_seeded(splits_module):
    x, t = make_gm_toy_1d(1, 50)
    assert np.array_equal(splits_module.problem("toy", 0)["y"], 2.0 * t - 1.0)
    assert len(crabs_split(0)[0]) == 80
    biopsy = load_biopsy()
    train, _ = stratified_split(biopsy.y, 0.22, 0)
    expected = np.where(biopsy.y[train] == "malignant", 1.0, -1.0)
    assert np.array_equal(splits_module.problem("biopsy", 0)["y"], expected)


def test_pima_splits_keep_the_class_proportions_of_ripleys_split(splits_module):
    train, test = load_pima()
    positives = int(np.sum(train.y == "Yes")) + int(np.sum(test.y == "Yes"))
    for split in range(3):
        data = splits_module.problem("pima", split)
        assert abs(np.sum(data["y"] > 0) - round(200 * positives / 532)) <= 1


def test_paired_summary_is_the_mean_and_the_standard_error_of_the_differences(splits_module):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=10), rng.normal(size=10)
    rows = [{"methods": {"ep": {"mlp": b[i]}, "kl": {"mlp": a[i]}}} for i in range(10)]
    mean, se = splits_module.paired_summary(rows, "mlp", "kl")
    assert mean == pytest.approx(np.mean(a - b)) and se == pytest.approx(np.std(a - b, ddof=1) / np.sqrt(10))


def test_slice_predictive_agrees_with_ep_on_a_small_problem(splits_module):
    x, t = make_gm_toy_1d(3, 12)
    X = (x[:, None] - 25.0) / 15.0
    y = 2.0 * t - 1.0
    X_test = np.linspace(-1.5, 1.5, 7)[:, None]
    kernel = SEKernel(variance=2.0, lengthscale=0.5, jitter=1e-6)
    proba, draws = splits_module.slice_probit_predictive(X, y, X_test, kernel, np.random.default_rng(0), 4000, 500)
    ep = EPGPC(kernel, optimize=False).fit(X, y).predict_proba(X_test)[:, 1]
    assert draws.shape == (4000, 12)
    assert np.max(np.abs(proba - ep)) < 0.03  # EP is close to exact at small σ_f; the sampler's error is ~0.01


@pytest.mark.parametrize("name", PROBLEMS)
def test_stored_splits_cover_ten_seeds_every_method_and_the_references(name):
    result = stored(f"binary_splits_{name}")
    rows = result["rows"]
    assert [row["split"] for row in rows] == list(range(10))
    methods = ("laplace", "laplace_probit", "ep", "lower_bound", "upper_bound", "vb", "kl", "kl_probit")
    for row in rows:
        assert set(row["methods"]) == set(methods)
        for scores in row["methods"].values():
            assert 0.0 <= scores["error"] <= 1.0 and scores["mlp"] < 0.0 and 0.0 <= scores["brier"] <= 1.0
        # the upper bound is fitted at the lower bound's hyperparameters (G&M)
        assert row["methods"]["upper_bound"]["theta"] == row["methods"]["lower_bound"]["theta"]
    with_references = [row for row in rows if "slice" in row]
    assert [row["split"] for row in with_references] == result["reference_splits"]
    for row in with_references:
        assert row["gibbs"]["min_ess"] > 0 and row["slice"]["min_ess"] > 0


@pytest.mark.parametrize("name", ["toy", "crabs"])
def test_stored_sigma_f_profiles_follow_eps_learnt_lengthscale(name):
    """The runaway check (issue 30, item 6): exact and EP log evidence along ln σ_f at EP's learnt ℓ, every split."""
    for row in stored(f"binary_splits_{name}")["rows"]:
        profile = row["ep_sigma_f_profile"]
        assert profile["log_lengthscale"] == row["methods"]["ep"]["theta"][0]
        assert [r["log_sf"] for r in profile["rows"]] == [0.5 * k for k in range(16)]
        for r in profile["rows"]:
            # EP's evidence is below the exact one wherever the orthant converged to its tolerance
            assert not r["exact_converged"] or r["ep"] < r["exact"] + 3 * r["exact_se"]


def test_stored_latent_references_and_the_vb_variance_cap():
    result = stored("binary_latents")
    points = [(p["log_lengthscale"], p["log_sf"]) for p in result["points"]]
    assert (-3.0, 4.0) in points and (0.0, 2.0) in points and len(points) >= 3
    for point in result["points"]:
        for reference in point["references"].values():
            assert len(reference["mean"]) == len(reference["var"]) == len(reference["ess"]) == 50
            assert reference["min_ess"] == pytest.approx(min(reference["ess"]))
        # G&R's factorised VB: Σ = (K⁻¹ + I)⁻¹ has every diagonal entry below 1, so its variance ratio at a latent
        # value is below 1 / (the exact variance there): small by construction wherever the exact variance is large
        assert point["methods"]["vb"]["max_var_ratio"] < 1.0 / min(point["references"]["probit"]["var"])
    x, t = make_gm_toy_1d(1, 50)
    X = (x[:, None] - x.mean()) / x.std()
    kernel = SEKernel(variance=float(np.exp(8.0)), lengthscale=float(np.exp(-3.0)), jitter=1e-6)
    _, var = VBProbitGPC(kernel, optimize=False).fit(X, 2.0 * t - 1.0).predict_latent(X)
    K = kernel.K(X)
    cap = np.diag(K) - np.sum(K * cholesky(K + np.eye(50)).solve(K), axis=0)
    assert np.allclose(var, cap, atol=1e-5) and var.max() < 1.0


def test_cost_table_rows_are_consistent_and_the_benchmark_runs():
    result = stored("binary_cost")
    assert result["sizes"] == [100, 300, 1000]
    for row in result["rows"]:
        assert row["fixed_units"] == pytest.approx(row["fixed_seconds"] / row["cholesky_seconds"])
        if "learn_seconds" in row:
            assert row["learn_units"] == pytest.approx(row["learn_seconds"] / row["cholesky_seconds"])
    assert {row["method"] for row in result["rows"] if row["n"] == 1000} == {
        "laplace", "laplace_probit", "ep", "lower_bound", "upper_bound", "vb", "kl", "kl_probit"}  # fmt: skip
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import binary_cost

        rows = binary_cost.cost_rows(30, repeats=1, methods=("laplace", "ep"))
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert [row["method"] for row in rows] == ["laplace", "ep"]
    assert all(row["fixed_units"] > 0 and row["learn_units"] > 0 and row["fixed_iterations"] >= 1 for row in rows)
    assert len(binary_cost.format_rows(rows)) == 3
