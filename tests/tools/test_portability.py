"""The floating-point environments of ``make portability`` (tests/portability/sitecustomize.py)."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parents[1]  # tests/

PROBE = """
import json, numpy as np
from gpc_ref.kernels import SEKernel
X = np.random.default_rng(0).normal(size=(6, 2)); X[4] = X[1]
k = SEKernel(variance=2.0, lengthscale=0.7, jitter=1e-6)
print(json.dumps({"K": k.K(X).tolist(), "call": k(X).tolist(), "cross": k.K(X[:3], X).tolist()}))
"""


def _kernel_matrices(seed):
    env = {**os.environ, "PYTHONPATH": str(HERE / "portability")}
    env.pop("GPC_FP_PERTURB", None)
    if seed is not None:
        env["GPC_FP_PERTURB"] = str(seed)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout
    return {key: np.array(value) for key, value in json.loads(out).items()}


def test_the_perturbation_moves_the_last_bits_and_keeps_equal_entries_equal():
    plain, one, two = _kernel_matrices(None), _kernel_matrices(1), _kernel_matrices(2)
    for perturbed in (one, two):
        relative = np.abs(perturbed["K"] - plain["K"]) / plain["K"]
        assert 0 < relative.max() <= 1.5e-15 and np.mean(relative > 0) > 0.5  # most entries, a few ulps
        np.testing.assert_array_equal(perturbed["K"], perturbed["K"].T)  # still symmetric
        np.testing.assert_array_equal(
            perturbed["K"][1, [0, 2, 3, 5]], perturbed["K"][4, [0, 2, 3, 5]]
        )  # repeated input
        np.testing.assert_array_equal(perturbed["call"], perturbed["K"])  # kernel(X) is K(X) too
        assert np.abs(perturbed["cross"] - plain["cross"]).max() > 0
    assert not np.array_equal(one["K"], two["K"])  # two different environments
