"""K&G Table 2, crabs inputs, fold partitions 3-4 (see ``_kg_crabs_inputs``)."""

from __future__ import annotations

from _kg_crabs_inputs import run


def main():
    return run(range(3, 5))
