"""Learnt hyperparameters of every binary method over ten stratified splits of crabs, against EP (issue 21, item 3).

The protocol (splits, methods, MCMC references) is in ``reproduce/_binary_splits.py``.
"""

from __future__ import annotations

from _binary_splits import main_for


def main():
    return main_for("crabs")
