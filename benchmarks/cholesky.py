"""The unit of every benchmark: the median time of one Cholesky factorisation.

Run: .venv/bin/python benchmarks/cholesky.py
Prints n, the median seconds, and the ratio to n³ (which should settle to a
constant once n is large enough for the O(n³) term to dominate).
"""

from __future__ import annotations

import os
import platform

import numpy as np
from common import blas_threading
from common import cholesky_seconds


def main(sizes=(250, 500, 1000, 2000, 4000)):
    print(blas_threading())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    print(f"{'n':>6} {'median s':>10} {'ns per n^3/3 flop':>18}")
    for n in sizes:
        seconds = cholesky_seconds(n, repeats=5 if n <= 2000 else 3)
        print(f"{n:>6} {seconds:>10.4f} {1e9 * seconds / (n**3 / 3):>18.3f}")


if __name__ == "__main__":
    main()
