"""Every binary method's cost in units of one Cholesky and in seconds at n = 100, 300, 1000 (issue 21, item 5).

Runs ``benchmarks/binary_cost.py`` (its docstring states the problem and the protocol) and stores the rows
and the printed table with their provenance (the BLAS threading included), so that the chapter shows the
table without timing anything itself.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))

import binary_cost

SIZES = (100, 300, 1000)
REPEATS = 3


def main():
    rows = binary_cost.main(SIZES, REPEATS)
    return {"problem": "make_gm_toy_1d(n, n), input standardised, labels ±1, jitter 1e-6",
            "fixed": list(binary_cost.FIXED), "sizes": list(SIZES), "repeats": REPEATS, "rows": rows,
            "table": binary_cost.format_rows(rows)}  # fmt: skip
