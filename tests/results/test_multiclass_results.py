"""The stored multi-class comparison results (reproduce/multiclass_*.py): their verdicts, re-checked at small cost."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from gpc_ref.datasets import make_three_class_toy
from gpc_ref.exact import multinomial_probit_orthant_evidence
from gpc_ref.ivm import ivm_fit
from gpc_ref.kernels import SEKernel
from gpc_ref.vb_probit import vb_probit_multiclass

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "book" / "results"


def stored(name):
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def toy_kernel(row):
    return SEKernel(variance=float(np.exp(2 * row["log_sf"])), lengthscale=float(np.exp(row["log_lengthscale"])),
                    jitter=1e-6)  # fmt: skip


def test_the_vb_bound_is_below_the_exact_evidence_at_every_grid_point_and_recomputes():
    rows = stored("multiclass_methods_gold")["rows"]
    assert len(rows) == 9
    for row in rows:
        assert row["vb_bound"] < row["gold_log_evidence"] - 3 * row["gold_std_error"]
        assert row["vb_converged"]
        assert min(row["chain_ess"]) > 50  # the Gibbs gold standard has independent draws to speak of
    X, codes = make_three_class_toy(0, 30, n_features=2)
    row = rows[4]  # the grid's centre: VB, the IVM and the orthant with today's code
    K = toy_kernel(row).K(X)
    vb = vb_probit_multiclass(K, codes, n_classes=3, accelerate=True, max_iter=20000)  # as reproduce/ stored it
    assert vb.converged and abs(vb.log_marginal_likelihood_bound - row["vb_bound"]) < 1e-6
    fit = ivm_fit(toy_kernel(row), X, codes, n_active=30, selection="random", rng=0, n_classes=3)
    assert abs(np.sum(fit.log_target_probability) - row["ivm_random_evidence"]) < 1e-6
    exact = multinomial_probit_orthant_evidence(K, codes)
    assert abs(exact.log_evidence - row["gold_log_evidence"]) < 1e-9


def test_the_split_table_is_complete():
    payload = stored("multiclass_splits")
    keys = {(r["data"], r["seed"], r["method"]) for r in payload["rows"]}
    assert len(keys) == len(payload["rows"]) == 4 * len(payload["split_seeds"]) * len(payload["methods"])
    assert len(payload["split_seeds"]) >= 5
    for r in payload["rows"]:
        assert 0 <= r["error"] <= 1 and r["mlp"] <= 0 and 0 <= r["brier"] <= 2


def test_the_exact_evidence_kernel_is_better_than_vbs_and_the_large_run_is_large():
    choice = stored("multiclass_kernel_choice")["iris"]
    assert choice["exact_kernel"]["exact_log_evidence"] > choice["vb_kernel"]["exact_log_evidence"]
    assert max(v for *_, v in choice["search_trace"]) == choice["exact_kernel"]["exact_log_evidence"]
    large = stored("multiclass_ivm_large")
    assert large["n_train"] >= 5000 and large["n_kernel"] < 1000
    assert any(r["method"].startswith("IVM") and r["n_train"] == large["n_train"] for r in large["rows"])
    assert "1 thread" in large["blas_threading"]
