"""The book's Reference part has one page per module of gpc_ref, and the package docstring names them all.

The pages are ``book/api/<module path>.md`` (``gpc_ref.classifiers.laplace`` → ``book/api/classifiers/laplace.md``;
the package itself → ``book/api/gpc_ref.md``), each a title and ``{gpc-api} <module>``, listed in
``_toc.yml``; ``book/_ext/gpc_api.py`` fills them from the docstrings and ``__all__``. A new module
fails here until it has its page and its line in ``_toc.yml``. What the built pages contain is
checked by ``tests/book/test_book_html.py`` (``test_api_reference_has_an_entry_for_every_public_name``).
"""

import importlib
import inspect
import pathlib
import pkgutil
import re

import pytest

import gpc_ref

ROOT = pathlib.Path(__file__).resolve().parents[2]


def modules():
    """Every module of gpc_ref, the package and its subpackages included, by walking the package."""
    names = ["gpc_ref"]
    for info in pkgutil.walk_packages(gpc_ref.__path__, prefix="gpc_ref."):
        names.append(info.name)
    return sorted(names)


def api_page(module):
    """The docname of a module's Reference page."""
    return (
        "book/api/gpc_ref" if module == "gpc_ref" else "book/api/" + module.removeprefix("gpc_ref.").replace(".", "/")
    )


def home(module, name):
    """The module whose page holds the entry for ``module.name``: where it is defined (data: the module itself)."""
    obj = getattr(importlib.import_module(module), name)
    defined = getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isfunction(obj) else None
    return defined or module


def test_every_module_has_a_page_that_documents_it():
    for module in modules():
        page = ROOT / f"{api_page(module)}.md"
        assert page.is_file(), f"{module} has no Reference page: add {page.relative_to(ROOT)} (see book/api/ep.md)"
        text = page.read_text()
        assert re.search(rf"^```{{gpc-api}} {re.escape(module)}\s*$", text, re.M), f"{page.name} must document {module}"


def test_every_page_is_in_the_table_of_contents_and_names_a_module():
    toc = set(re.findall(r"file:\s*(book/api/\S+)", (ROOT / "_toc.yml").read_text()))
    pages = {str(path.relative_to(ROOT).with_suffix("")) for path in (ROOT / "book" / "api").rglob("*.md")}
    assert pages == toc, (
        f"pages not in _toc.yml: {sorted(pages - toc)}; in _toc.yml without a page: {sorted(toc - pages)}"
    )
    assert {api_page(module) for module in modules()} == pages


@pytest.mark.parametrize("module", modules())
def test_every_public_name_is_importable_and_has_a_home_module_with_a_page(module):
    names = getattr(importlib.import_module(module), "__all__", None)
    assert names, f"{module} has no __all__: the Reference lists a module's public names from it"
    for name in names:
        assert (ROOT / f"{api_page(home(module, name))}.md").is_file()


def test_the_package_docstring_lists_every_module():
    docstring = gpc_ref.__doc__
    for module in modules():
        if module != "gpc_ref" and module.count(".") == 1:
            short = module.removeprefix("gpc_ref.")
            assert re.search(rf":mod:`~?gpc_ref\.{short}`", docstring), f"the package docstring does not list {short}"


def test_the_functions_students_implement_read_plainly_under_help():
    """The reference of each self-check (what a student reads with help()) has no TeX: no inline :math: role and
    no ``.. math::`` block, so that help() reads as text."""
    import gpc_ref.selfcheck as selfcheck

    for name in selfcheck.available():
        module = next(
            m
            for m in modules()
            if m != "gpc_ref.selfcheck" and inspect.isfunction(getattr(importlib.import_module(m), name, None))
        )
        docstring = getattr(importlib.import_module(module), name).__doc__
        assert ":math:" not in docstring, f"{module}.{name}: inline :math: roles read as raw TeX under help()"
        assert ".. math::" not in docstring, f"{module}.{name}: a .. math:: block reads as raw TeX under help()"


#: Modules left out of the check below (none: every module's docstrings read plainly).
_NOT_YET_PLAIN: set[str] = set()


def _public_docstrings(module):
    """(name, docstring) of a module, of each name in its ``__all__`` that it defines, and of the public
    methods and properties of each class among them: what help() and the Reference page show."""
    mod = importlib.import_module(module)
    yield module, mod.__doc__ or ""
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or home(module, name) != module:
            continue  # data is documented by its #: comment; a re-export on its defining module's page
        yield f"{module}.{name}", obj.__doc__ or ""
        if inspect.isclass(obj):
            for attribute, member in vars(obj).items():
                if attribute.startswith("_") and attribute != "__init__":
                    continue
                function = member.fget if isinstance(member, property) else member
                if callable(function) or isinstance(member, property):
                    yield f"{module}.{name}.{attribute}", getattr(function, "__doc__", None) or ""


@pytest.mark.parametrize("module", [m for m in modules() if m not in _NOT_YET_PLAIN])
def test_every_public_docstring_reads_plainly_under_help(module):
    """No TeX (no inline :math: role, no ``.. math::`` block: raw TeX under help()); formulas in docstrings are
    plain Unicode, displayed as indented lines (the package docstring says so), the book typesets them."""
    for where, docstring in _public_docstrings(module):
        assert ":math:" not in docstring, f"{where}: an inline :math: role reads as raw TeX under help()"
        assert ".. math::" not in docstring, f"{where}: a .. math:: block reads as raw TeX under help()"
