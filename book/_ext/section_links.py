"""A tiny Sphinx extension for this book: a note that names a section by its label becomes a link.

The scoreboard's notes (book/reproductions.csv) are written by the chapters' code as plain text, so
they name the experiment that explains a difference by its label: "(section sec-ivm-fig5-kernel,
reproduce/gr_toy.py)". A reader cannot follow a label. After the references are resolved this
rewrites, in every page, "section <label>" outside code and links, where <label> is a label of the
book, as a link to it: "section <Title of that section>" when the label heads a section, or the first
bold phrase of the labelled paragraph ("the paragraph “The 30-point number is the kernel's”") when it
marks a paragraph. Text that names no label of the book is left alone.
"""

import re

from docutils import nodes
from sphinx.util.nodes import make_refnode

NAMED_LABEL = re.compile(r"\bsection ([a-z][a-z0-9]*(?:-[a-z0-9]+)+)\b")
SKIP = (
    nodes.literal,
    nodes.literal_block,
    nodes.reference,
    nodes.raw,
    nodes.math,
    nodes.math_block,
    nodes.title,
    nodes.FixedTextElement,
)


def _paragraph_phrase(env, docname, labelid):
    """The first bold phrase (or the first words) of the paragraph that a label marks."""
    doctree = env.get_doctree(docname)
    for target in doctree.findall(nodes.Element):
        if labelid not in target.get("ids", ()):
            continue
        paragraph = target if isinstance(target, nodes.paragraph) else target.next_node(nodes.paragraph)
        if paragraph is None:
            return None
        strong = paragraph.next_node(nodes.strong)
        text = strong.astext() if strong is not None else " ".join(paragraph.astext().split()[:8]) + " …"
        return text.strip().rstrip(".")
    return None


def _link(app, fromdocname, label):
    """The words and the reference node that replace "section <label>", or None for an unknown label."""
    std = app.env.get_domain("std")
    if label in std.labels:
        docname, labelid, title = std.labels[label]
        words, text = "section ", title
    elif label in std.anonlabels:
        docname, labelid = std.anonlabels[label]
        phrase = _paragraph_phrase(app.env, docname, labelid)
        if not phrase:
            return None
        words, text = "the paragraph ", f"“{phrase}”"
    else:
        return None
    node = make_refnode(app.builder, fromdocname, docname, labelid, nodes.inline(text, text), title=text)
    return words, node


def link_named_sections(app, doctree, fromdocname):
    for text_node in list(doctree.findall(nodes.Text)):
        parent = text_node.parent
        if parent is None or any(isinstance(ancestor, SKIP) for ancestor in _ancestors(text_node)):
            continue
        source = str(text_node)
        if not NAMED_LABEL.search(source):
            continue
        pieces, position = [], 0
        for match in NAMED_LABEL.finditer(source):
            link = _link(app, fromdocname, match[1])
            if link is None:
                continue
            words, reference = link
            pieces += [nodes.Text(source[position : match.start()] + words), reference]
            position = match.end()
        if not pieces:
            continue
        pieces.append(nodes.Text(source[position:]))
        parent.replace(text_node, pieces)


def _ancestors(node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def setup(app):
    app.connect("doctree-resolved", link_named_sections)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
