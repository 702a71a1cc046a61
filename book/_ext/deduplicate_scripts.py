"""A tiny Sphinx extension for this book: include every script at most once per page.

With Jupyter Book 1.0.4, sphinx-thebe's inline ``const THEBE_JS_URL = ...`` script is added twice,
which makes the browser log ``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared`` on
every page (sphinx-togglebutton's inline script is repeated too). This drops every repeated copy
(same file, same inline body, same attributes; an inline script's file is None or '').
"""


def _deduplicate(app, pagename, templatename, context, doctree):
    unique, seen = [], set()
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {}) or {}
        key = (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _deduplicate, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
