"""Girolami & Rogers' variational probit at fixed hyperparameters and with its kernel learnt.

Run: .venv/bin/python benchmarks/vb_probit.py

Data: G&R's three-class toy (two annuli and a blob in the first two inputs) with two irrelevant
inputs, n = 250, 500, 1000 points; an isotropic SE kernel. ``VBProbitGPC`` iterates the Q(M)/Q(Y)
updates with SQUAREM; learning maximises the VB lower bound over the variance and the lengthscale
(``method="bound"``). Beside it, scikit-learn's Laplace classifier (one-vs-rest: three binary
Laplace fits) and one Cholesky of the n×n kernel matrix. The VB chapter (section "Learning the kernel
by maximising the bound") compares the learners (bound, G&R's importance sampling, softmax Laplace
MAP) on the penguins.
"""

from __future__ import annotations

import os
import platform

import numpy as np
from common import FIXED_KERNEL
from common import blas_threading
from common import family_table

from gpc_ref import VBProbitGPC
from gpc_ref.kernels import SEKernel


def main():
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")

    def fixed(X, y):
        return VBProbitGPC(kernel=SEKernel(*FIXED_KERNEL), optimize=False).fit(X, y)

    def learn(X, y):
        model = VBProbitGPC(kernel=SEKernel()).fit(X, y)
        return model.log_marginal_likelihood_, model.hyperparameter_fit_.converged

    family_table("VB multinomial probit (VBProbitGPC, bound maximised; objective: the VB lower bound)", fixed,
                 learn, n_classes=3)  # fmt: skip


if __name__ == "__main__":
    main()
