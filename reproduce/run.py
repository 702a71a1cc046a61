"""Run the paper-scale experiments and store their results: ``make reproduce`` (or ``make reproduce ONLY=name``).

Each ``reproduce/<name>.py`` defines ``main() -> dict``: it runs one paper-scale experiment (what a
chapter's ``FULL = True`` switch would run) and returns its numbers, seeds included. This runner times
it and writes ``book/results/<name>.json`` with the provenance (``gpc_ref.reproduction.save_results``).

Resumable: a result already stored from the current commit, with no uncommitted changes to the code, is
kept (``--force`` recomputes it), so an interrupted run continues where it stopped. Long experiments are
split into several scripts, each meant to finish in under an hour on 2 cores.

Usage: python reproduce/run.py [--force] [name ...]   (no names: every script, in alphabetical order)
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE.parent / "book" / "results"


def scripts():
    """The experiment names: every reproduce/*.py except this runner."""
    return sorted(path.stem for path in HERE.glob("*.py") if path.stem != "run" and not path.stem.startswith("_"))


def up_to_date(name):
    """True if book/results/<name>.json was written at the current commit from unmodified code."""
    from gpc_ref.reproduction import provenance

    path = RESULTS / f"{name}.json"
    if not path.exists():
        return False
    stored = json.loads(path.read_text(encoding="utf-8"))["provenance"]
    now = provenance()
    return stored["commit"] == now["commit"] and not stored["dirty"] and not now["dirty"]


def run(name):
    from gpc_ref.reproduction import save_results

    spec = importlib.util.spec_from_file_location(f"reproduce_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    start = time.perf_counter()
    payload = module.main()
    seconds = time.perf_counter() - start
    path = save_results(name, payload, directory=str(RESULTS), seconds=seconds)
    print(f"{name}: {seconds:.0f} s -> {path}", flush=True)


def main(argv):
    force = "--force" in argv
    names = [arg for arg in argv if not arg.startswith("--")] or scripts()
    unknown = sorted(set(names) - set(scripts()))
    if unknown:
        raise SystemExit(f"no such experiment(s) {unknown}; the experiments are {scripts()}")
    for name in names:
        if not force and up_to_date(name):
            print(f"{name}: up to date, kept (--force to rerun)")
            continue
        run(name)


if __name__ == "__main__":
    main(sys.argv[1:])
