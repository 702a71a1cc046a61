"""Habits of a maintained package, checked: every public function and method of gpc_ref has type
hints on its signature and a numpydoc ``Parameters`` and ``Returns`` section.

"Public" means listed in a module's ``__all__`` (and, for classes, their methods whose names do
not start with an underscore). ``__init__`` needs hints on its arguments only; the class docstring
documents them.
"""

import importlib
import inspect
import pkgutil

import pytest

import gpc_ref

MODULES = sorted(module.name for module in pkgutil.walk_packages(gpc_ref.__path__, "gpc_ref."))


def _public_callables(module):
    for attribute in getattr(module, "__all__", []):
        obj = getattr(module, attribute)
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield attribute, obj
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for name, member in vars(obj).items():
                if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
                    yield f"{attribute}.{name}", member


def _problems(function, qualified_name):
    problems = []
    signature = inspect.signature(function)
    parameters = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    unannotated = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    if unannotated:
        problems.append(f"{qualified_name}: arguments without type hints {unannotated}")
    if qualified_name.endswith("__init__"):
        return problems
    if signature.return_annotation is inspect.Signature.empty:
        problems.append(f"{qualified_name}: no return type hint")
    doc = inspect.getdoc(function) or ""
    if parameters and "Parameters\n----------" not in doc:
        problems.append(f"{qualified_name}: no numpydoc Parameters section")
    returns_nothing = signature.return_annotation in (None, "None")
    if not returns_nothing and not any(f"{s}\n-------" in doc for s in ("Returns", "Yields")):
        problems.append(f"{qualified_name}: no numpydoc Returns section")
    return problems


@pytest.mark.parametrize("module_name", MODULES)
def test_public_functions_have_type_hints_and_numpydoc_sections(module_name):
    module = importlib.import_module(module_name)
    problems = []
    for name, function in _public_callables(module):
        problems += _problems(function, f"{module_name}.{name}")
    assert not problems, "\n".join(problems)


#: help() of a function should fit on a screen; a class documents its parameters and attributes too
FUNCTION_DOCSTRING_LINES, CLASS_DOCSTRING_LINES = 30, 42


@pytest.mark.parametrize("module_name", MODULES)
def test_public_docstrings_are_short_enough_to_read_under_help(module_name):
    """Derivations, measurements and histories belong in the chapters and book/results/, not in help()."""
    module = importlib.import_module(module_name)
    too_long = []
    for attribute in getattr(module, "__all__", []):
        obj = getattr(module, attribute)
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            if len((inspect.getdoc(obj) or "").splitlines()) > CLASS_DOCSTRING_LINES:
                too_long.append(attribute)
    for name, function in _public_callables(module):
        if len((inspect.getdoc(function) or "").splitlines()) > FUNCTION_DOCSTRING_LINES:
            too_long.append(name)
    assert not too_long, (
        f"docstrings longer than {FUNCTION_DOCSTRING_LINES} lines (classes {CLASS_DOCSTRING_LINES}): {too_long}"
    )
