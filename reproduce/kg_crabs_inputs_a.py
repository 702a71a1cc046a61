"""K&G Table 2, crabs inputs, fold partitions 0-2 (see ``_kg_crabs_inputs``)."""

from __future__ import annotations

from _kg_crabs_inputs import run


def main():
    return run(range(0, 3))
