"""A tiny Sphinx extension for this book: bibliography labels in the citations' author-year style.

The book cites author-year ("[Williams and Barber, 1998]", ``bibtex_reference_style: author_year``);
pybtex's ``plain`` style would label the bibliography's entries [1], [2], ... This registers a
formatting style ``plain_author_year`` whose labels read like the citations, and the book selects it
with ``bibtex_default_style``.
"""

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


class AuthorYearLabels(BaseLabelStyle):
    """"Last, year", "Last and Other, year" or "Last et al., year", as the citations read."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = ["".join(person.last_names) for person in people]
            if len(names) > 2:
                authors = f"{names[0]} et al."
            else:
                authors = " and ".join(names)
            yield f"{authors}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(PlainStyle):
    """pybtex's plain formatting with author-year labels."""

    default_label_style = "author_year"


def setup(app):
    register_plugin("pybtex.style.labels", "author_year", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "plain_author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
