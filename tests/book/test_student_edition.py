"""The student edition (`make student`, tools/student_edition.py): on a tiny synthetic book with every
pattern the chapters use, and on the real book."""

import base64
import json
import os
import pathlib
import re
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import student_edition  # noqa: E402

# a 1×1 PNG
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def markdown(source):
    return {"cell_type": "markdown", "id": f"m{abs(hash(source)) % 10**8}", "metadata": {}, "source": source}


def code(source, outputs=(), tags=()):
    metadata = {"tags": list(tags)} if tags else {}
    return {
        "cell_type": "code",
        "execution_count": 1,
        "id": f"c{abs(hash(source)) % 10**8}",
        "metadata": metadata,
        "outputs": list(outputs),
        "source": source,
    }


def glued(name, data):
    return {
        "output_type": "display_data",
        "metadata": {"scrapbook": {"mime_prefix": "application/papermill.record/", "name": name}},
        "data": {f"application/papermill.record/{key}": value for key, value in data.items()},
    }


def chapter_cells(kept_code="print(data)"):
    return [
        markdown(
            "(chap)=\n# A chapter\n\nValue {glue:text}`val:.2f`, {cite:t}`K1` and {cite}`K1`; the appendix's "
            "{eq}`app-eq` and {ref}`app-section`; a macro $\\N(0, 1)$ and $\\bm{x}$.\n\n"
            "$$\nx = 1\n$$ (chap-eq)\n\nSee {eq}`chap-eq`, {numref}`fig-a` and {prf:ref}`alg-a`."
        ),
        code(
            "data = 3\nglue('val', 3.14159, display=False)",
            [glued("val", {"text/plain": "3.14159"}), {"output_type": "stream", "name": "stdout", "text": "ok\n"}],
        ),
        code(
            "fig = None\nglue('fig-a', fig, display=False)",
            [glued("fig-a", {"image/png": PIXEL, "text/plain": "<Figure>"})],
        ),
        markdown(
            '```{glue:figure} fig-a\n:name: "fig-a"\n\nA caption with $x$.\n```\n\n'
            "```{prf:algorithm} Newton\n:label: alg-a\n\n1. step\n```\n\n"
            "```{literalinclude} ../pkg/module.py\n:pyobject: helper\n```\n\n"
            "(chap-exercises)=\n## Exercises\n\n"
            "```{exercise} First\n:label: ex-one\n\nDo it with `data`.\n```\n\n"
            "```{solution} ex-one\n:class: dropdown\n\nThe ungated answer.\n```"
        ),
        code("print(data + 1)", [{"output_type": "stream", "name": "stdout", "text": "4\n"}], tags=["hide-input"]),
        markdown(
            "```{exercise}\n:label: ex-two\n\nSecond, see {ref}`ex-one`.\n```\n\n"
            "````{solution-start} ex-two\n:class: dropdown\n````\n\nGated text."
        ),
        code("helper_value = data * 2\nprint(helper_value)"),
        markdown("More gated text.\n\n````{solution-end}\n````\n\n## Summary\n\nKept text."),
        code(kept_code),
    ]


def make_book(root, cells):
    (root / "book").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: Main\n    numbered: true\n    chapters:\n"
        "      - file: book/chap\n  - caption: Back\n    chapters:\n      - file: book/appendix\n",
        encoding="utf-8",
    )
    (root / "_config.yml").write_text(
        "sphinx:\n  config:\n    mathjax3_config:\n      tex:\n        macros:\n"
        '          "N": "\\\\mathcal{N}"\n          "bm": ["\\\\boldsymbol{#1}", 1]\n',
        encoding="utf-8",
    )
    (root / "book" / "references.bib").write_text(
        "@article{K1,\n  author = {Kim, Hyun-Chul and Ghahramani, Zoubin},\n  title = {T},\n  journal = {J},\n"
        "  year = {2003}\n}\n",
        encoding="utf-8",
    )
    (root / "book" / "intro.md").write_text("# Introduction\n", encoding="utf-8")
    (root / "book" / "appendix.md").write_text(
        "# Appendix\n\n(app-section)=\n## Identities\n\n$$\na = b\n$$ (app-eq)\n", encoding="utf-8"
    )
    (root / "pkg" / "module.py").write_text(
        "import os\n\n\ndef helper(x):\n    return x + 1\n\n\ndef other():\n    pass\n", encoding="utf-8"
    )
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    (root / "book" / "chap.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (root / "book" / "results").mkdir()
    (root / "book" / "results" / "stored.json").write_text("{}", encoding="utf-8")


@pytest.fixture()
def edition(tmp_path):
    make_book(tmp_path / "repo", chapter_cells())
    out = tmp_path / "student"
    assert student_edition.main(["--root", str(tmp_path / "repo"), "--out", str(out)]) == 0
    notebook = json.loads((out / "chap.ipynb").read_text(encoding="utf-8"))
    return out, notebook


def sources(notebook, kind=None):
    return ["".join(c["source"]) for c in notebook["cells"] if kind is None or c["cell_type"] == kind]


def test_solutions_and_their_code_are_removed(edition):
    _, notebook = edition
    text = json.dumps(notebook)
    for gone in ("ungated answer", "Gated text", "More gated", "data + 1", "helper_value", "{solution", "dropdown"):
        assert gone not in text
    assert "Kept text." in text and "print(data)" in sources(notebook, "code")


def test_each_exercise_is_a_numbered_heading_followed_by_an_empty_code_cell(edition):
    _, notebook = edition
    cells = notebook["cells"]
    headings = [i for i, c in enumerate(cells) if "".join(c["source"]).startswith("### Exercise")]
    assert ["".join(cells[i]["source"]).split("\n")[0] for i in headings] == [
        "### Exercise 1.1 (First)",
        "### Exercise 1.2",
    ]
    for i in headings:
        assert cells[i + 1]["cell_type"] == "code" and "".join(cells[i + 1]["source"]) == ""
        assert cells[i + 1]["outputs"] == []
    # the removed solution code used the chapter's `data`: the exercise says so
    assert "`data` from the cells above" in "".join(cells[headings[0]]["source"])
    assert "Exercise 1.1" in "".join(cells[headings[1]]["source"])  # {ref} to an exercise: its number


def test_what_jupyterlab_cannot_render_is_replaced(edition):
    _, notebook = edition
    text = "\n".join(sources(notebook, "markdown"))
    assert "Value 3.14," in text  # {glue:text} with a format
    assert "Kim and Ghahramani [2003]" in text and "[Kim and Ghahramani, 2003]" in text
    # a page outside the notebooks is named once per cell, at its first reference
    assert "Eq. (1) (in *Appendix*)" in text and "Identities" in text and "Identities (in *Appendix*)" not in text
    assert "\\mathcal{N}(0, 1)" in text and "\\boldsymbol{x}" in text and "\\N" not in text
    assert "\\tag{1.1}" in text and "See Eq. (1.1), Fig. 1.1 and Algorithm 1.1." in text
    assert "**Algorithm 1.1 (Newton)**" in text
    assert "def helper(x):\n    return x + 1" in text and "def other" not in text
    assert re.search(
        r"!\[A caption with x\.\]\(attachment:fig-a\.png\)\n\n\*Fig\. 1\.1: A caption with \$x\$\.\*", text
    )
    assert not re.search(r"\{(glue|ref|eq|numref|cite|prf:ref)[a-z:]*\}`", text)
    assert not re.search(r"^\([\w-]+\)=$", text, re.M)  # labels are gone
    figure = next(c for c in notebook["cells"] if "attachment:fig-a.png" in "".join(c["source"]))
    assert base64.b64decode(figure["attachments"]["fig-a.png"]["image/png"]) == base64.b64decode(PIXEL)


def test_glue_records_are_dropped_and_other_outputs_kept(edition):
    _, notebook = edition
    outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "ok\n"}]


def test_first_cell_explains_the_edition(edition):
    _, notebook = edition
    first = "".join(notebook["cells"][0]["source"])
    assert first.startswith("---\nnumbering:\n  equation: false\n---\n")
    assert "Student edition** of Chapter 1, *A chapter*" in first
    assert "2 exercises" in first and "Run All Cells" in first
    assert len({c["id"] for c in notebook["cells"]}) == len(notebook["cells"])


def test_zip_holds_the_notebooks_and_the_stored_results(edition):
    out, _ = edition
    with zipfile.ZipFile(out / "gpc-book-student.zip") as archive:
        names = set(archive.namelist())
    assert {
        "gpc-book-student/chap.ipynb",
        "gpc-book-student/results/stored.json",
        "gpc-book-student/README.md",
    } <= names


def test_a_kept_cell_that_needs_solution_code_is_an_error(tmp_path):
    make_book(tmp_path / "repo", chapter_cells(kept_code="print(helper_value)"))
    with pytest.raises(ValueError, match="helper_value"):
        student_edition.main(["--root", str(tmp_path / "repo"), "--out", str(tmp_path / "student")])


def test_split_blocks_keeps_nested_fences_inside_their_directive():
    blocks = student_edition.split_blocks("text\n````{solution} a\n```python\nx = 1\n```\n````\nafter")
    assert [b.name for b in blocks] == [None, "solution", None]
    assert blocks[1].body == "```python\nx = 1\n```"


def test_the_real_book(tmp_path):
    """Every chapter converts; no solution survives; every exercise of the book is there, once."""
    written = student_edition.write_edition(ROOT, tmp_path)
    index, _, _ = student_edition.build_index(ROOT)
    book_exercises = sum(1 for target in index.values() if target.kind == "exercise")
    headings = 0
    for path in written:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        text = json.dumps(notebook)
        assert "{solution" not in text and "solution-start" not in text, path.name
        assert '"solution-only"' not in text, path.name  # code that served only a removed solution went with it
        assert not re.search(r"\{glue:text\}`", text), path.name
        headings += sum(1 for s in sources(notebook, "markdown") if s.startswith("### Exercise"))
        # no MyST left that JupyterLab would show raw or number its own way (issue 31): roles, proof directives,
        # the tilde of a Sphinx cross-reference; a page outside the notebooks is named once per cell
        for number, source in enumerate(sources(notebook, "markdown")):
            prose = re.sub(r"```.*?```|`[^`]*`", "", source, flags=re.S)  # code may show MyST on purpose
            leftovers = re.findall(r"\{[a-z][a-z:-]*\}`|\{prf:|~gpc_ref\.", prose)
            assert not leftovers, f"{path.name}, markdown cell {number}: {leftovers}"
            assert source.count("(in *") <= len(set(re.findall(r"\(in \*([^*]+)\*\)", source))), path.name
    assert headings == book_exercises > 0


@pytest.mark.skipif("GPC_BOOK_HTML" not in os.environ, reason="needs a built book: GPC_BOOK_HTML=<html dir>")
def test_numbers_agree_with_the_built_book():
    """The numbers the student edition gives equations, figures, exercises and algorithms are the
    ones the HTML book shows."""
    html = pathlib.Path(os.environ["GPC_BOOK_HTML"])
    index, _, _ = student_edition.build_index(ROOT)
    pages, checked = {}, 0
    for label, target in index.items():
        if target.number is None:
            continue
        page = pages.setdefault(target.doc, (html / (target.doc + ".html")).read_text(encoding="utf-8"))
        anchor = ("equation-" + label if target.kind == "equation" else label).lower()
        start = page.find(f'id="{anchor}"')
        assert start >= 0, label
        pattern = (
            r'class="eqno">\(([0-9.]+)\)' if target.kind == "equation" else r'class="caption-number">\S+ ([0-9.]+)'
        )
        shown = re.search(pattern, page[start : start + 6000])
        assert shown and shown.group(1) == target.number, (label, target.number)
        checked += 1
    assert checked > 100


def test_a_value_glued_in_another_chapter_is_pasted(tmp_path):
    """``{glue:text}`other.ipynb::key:spec``` (myst-nb's cross-document form) reads the other chapter's outputs."""
    (tmp_path / "book").mkdir()
    other = {"cells": [code("glue('val', 2.5)", [glued("val", {"text/plain": "2.5"})])], "metadata": {},
             "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (tmp_path / "book" / "other.ipynb").write_text(json.dumps(other), encoding="utf-8")
    converter = student_edition.Converter(tmp_path, "book/chap", {}, {}, {}, {}, {})
    assert converter.glued_text("other.ipynb::val:.2f") == "2.50"
    assert converter.roles("a {glue:text}`other.ipynb::val:s` b") == "a 2.5 b"
    with pytest.raises(ValueError, match="names no notebook"):
        converter.glued_text("missing.ipynb::val:s")
    with pytest.raises(ValueError, match="has no stored value"):
        converter.glued_text("other.ipynb::nothing:s")
