"""A tiny Sphinx extension for this book: the single-page build (``make pdf``) renders every node the
HTML build renders.

Sphinx looks up the HTML of a custom node by the builder's name and falls back to its format only if
no extension registered anything under that name. Some of the book's extensions register nodes under
"singlehtml", so myst-nb's nodes registered under "html" alone (the folded input of a ``hide-input``
cell) had no HTML there and the single-page build failed ("unknown node type: HideCodeCellNode").
This copies every node registered for "html" to "singlehtml" where that has none of its own.
"""


def _copy_html_handlers(app):
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, functions in handlers.get("html", {}).items():
        single.setdefault(node, functions)


def setup(app):
    app.connect("builder-inited", _copy_html_handlers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
