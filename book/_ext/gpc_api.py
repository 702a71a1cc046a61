"""The book's API reference: one directive that documents a module of gpc_ref from its ``__all__``.

A page of the Reference part (``book/api/<module>.md``) is a title and ``{gpc-api} gpc_ref.<module>``.
The directive writes, for that module, the reStructuredText that autodoc turns into
the page:

- the module docstring;
- a table of every name in the module's ``__all__`` with the first paragraph of its docstring;
- the full entry of each name the module defines: functions, classes (with their methods, and for
  a subclass of a gpc_ref class also the inherited ones, so that an estimator's page shows ``fit``
  and ``predict``), exceptions and data (with its ``#:`` comment, or its value: autodoc would show
  the docstring of ``dict`` or ``ndarray`` for a constant without one).

A name the module only re-exports (``gpc_ref.LaplaceGPC`` is defined in ``gpc_ref.classifiers.laplace``)
gets its row in the table and no second entry; a reference to it, from the table or from a chapter
(``{py:class}`gpc_ref.LaplaceGPC```), is resolved to the entry in the defining module by
``_resolve_reexport``. So a new name in an ``__all__`` needs no edit here, and a new module needs
one page of two lines (``tests/book/test_book_html.py`` fails until it has one).
"""

import importlib
import inspect

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.pycode import PycodeError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.inspect import object_description
from sphinx.util.nodes import nested_parse_with_titles


def _home(module_name, name, obj):
    """The module that defines ``obj`` (a class or function), or ``module_name`` for data."""
    home = getattr(obj, "__module__", None) if (inspect.isclass(obj) or inspect.isfunction(obj)) else None
    return home or module_name


def _is_gpc_subclass(cls):
    """True for a class with a base class defined in gpc_ref (its inherited methods belong on its page)."""
    return any(base.__module__.startswith("gpc_ref") for base in cls.__mro__[1:])


def _attribute_docs(module_name):
    """The ``#:`` comments that document module-level data, by name (what autodata would show)."""
    try:
        return {key[1]: lines for key, lines in ModuleAnalyzer.for_module(module_name).find_attr_docs().items()}
    except PycodeError:
        return {}


def _summary(module_name, name, obj):
    """The first paragraph of the object's own docstring (data: of its ``#:`` comment), for the table."""
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
        text = inspect.getdoc(obj) or ""
    else:  # the docstring of a dict or an array is its type's, not the constant's
        text = "\n".join(_attribute_docs(module_name).get(name, [])).strip()
        if not text:
            return f"Constant ({type(obj).__name__})."
    return " ".join(text.split("\n\n")[0].split())


def _data_entry(module_name, name, obj):
    """autodata where the constant has a ``#:`` comment; else an entry with its value only."""
    target = f"{module_name}.{name}"
    if name in _attribute_docs(module_name):
        return [f".. autodata:: {target}"]
    value = " ".join(object_description(obj).split())
    value = value if len(value) <= 300 else value[:297] + "..."
    return [f".. py:data:: {name}", f"   :module: {module_name}", f"   :value: {value}"]


def _entry(module_name, name, obj):
    """The autodoc directive that documents ``module_name.name``."""
    target = f"{module_name}.{name}"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return [f".. autoexception:: {target}", "   :show-inheritance:"]
    if inspect.isclass(obj):
        lines = [f".. autoclass:: {target}", "   :members:", "   :show-inheritance:"]
        if _is_gpc_subclass(obj):
            lines.append("   :inherited-members:")
        return lines
    if inspect.isfunction(obj):
        return [f".. autofunction:: {target}"]
    return _data_entry(module_name, name, obj)


class GpcApiDirective(SphinxDirective):
    """``{gpc-api} gpc_ref.<module>``: the module docstring, a summary table and one entry per public name."""

    required_arguments = 1
    has_content = False

    def run(self):
        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        names = list(getattr(module, "__all__", []))
        lines = [f".. automodule:: {module_name}", "   :no-members:", "", f".. currentmodule:: {module_name}", ""]
        if names:  # the table of contents: every public name with the first paragraph of its docstring
            lines += [".. rubric:: Contents", "", ".. list-table::", "   :widths: 30 70", "   :class: gpc-api-contents", ""]
            for name in names:
                obj = getattr(module, name)
                lines += [f"   * - :py:obj:`~{module_name}.{name}`", f"     - {_summary(module_name, name, obj)}"]
            lines.append("")
        for name in names:
            obj = getattr(module, name)
            if _home(module_name, name, obj) != module_name:
                continue  # re-exported: documented where it is defined
            lines += _entry(module_name, name, obj)
            lines.append("")
        # the pages are MyST, whose nested parse reads Markdown: hand the reStructuredText to eval-rst
        lines = ["```{eval-rst}", *lines, "```"]
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=f"<gpc-api {module_name}>"), container)
        return container.children


def _canonical_name(target):
    """``gpc_ref.LaplaceGPC`` → ``gpc_ref.classifiers.laplace.LaplaceGPC`` (None if not a gpc_ref object)."""
    if not target.startswith("gpc_ref."):
        return None
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest importable module prefix
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return None
        owner = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if owner and qualname and (inspect.isclass(obj) or inspect.isfunction(obj)):
            return f"{owner}.{qualname}"
        return None
    return None


def _resolve_reexport(app, env, node, contnode):
    """Resolve a Python reference to a re-exported name to the entry where the object is defined."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    module = node.get("py:module")
    if not target.startswith("gpc_ref.") and module:  # a short name inside a docstring: gpc_ref's SEKernel
        target = f"{module}.{target}"
    canonical = _canonical_name(target)
    if canonical is None or canonical == node.get("reftarget"):
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node.get("refdoc"), app.builder, node.get("reftype"), canonical, node, contnode
    ) or domain.resolve_xref(env, node.get("refdoc"), app.builder, "obj", canonical, node, contnode)


def setup(app):
    app.add_directive("gpc-api", GpcApiDirective)
    app.connect("missing-reference", _resolve_reexport)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
