"""Write the student edition of the book's notebooks: ``make student``.

For every chapter notebook of ``_toc.yml`` it writes ``<out>/<chapter>.ipynb``, and it zips them,
with the stored results the chapters read (``book/results``, ``book/reproductions.csv``), into
``<out>/gpc-book-student.zip``. In each notebook

- every solution is gone: the ``{solution}`` fences, the gated ``{solution-start}`` … ``{solution-end}``
  spans with the cells between them, and the code cells that follow a markdown cell ending in a
  solution (a solution's code, printed under it);
- every exercise becomes a heading "Exercise 5.3 (title)" numbered as in the book (so that JupyterLab's table
  of contents lists it), followed by an
  empty code cell for the answer; where the removed solution used variables of the chapter, a line
  under the exercise names them, so the student knows to run the cells above first;
- what JupyterLab cannot render is replaced by what the book shows: ``{glue:text}`` roles by the value
  stored in the notebook's outputs, ``{glue:figure}`` by the stored figure (a cell attachment) with its
  caption, ``{literalinclude}`` of gpc_ref by the code itself, cross-references by the book's numbers
  and titles (links where the target is another notebook), citations by author and year, labelled
  equations by ``\\tag`` with the book's number, and the book's TeX macros (``_config.yml``) by their
  definitions.

The result is CommonMark with dollar math, which JupyterLab renders with or without jupyterlab-myst.
A kept code cell that needs a name only a removed solution defined is an error (the chapter would no
longer run top to bottom).

Usage: ``python tools/student_edition.py [--root .] [--out _build/student]``
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import shutil
import sys
import zipfile
from ast import literal_eval
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ZIP_NAME = "gpc-book-student"

# A MyST directive fence: ```{name} argument, or :::{name} argument.
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<argument>.*?)[ \t]*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)[ \t]*$")
ROLE = re.compile(r"\{(?P<role>[a-z][a-z:-]*)\}`(?P<content>[^`]*)`")
TARGET = re.compile(r"^\((?P<label>[\w:.-]+)\)=[ \t]*$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")
DISPLAY_MATH = re.compile(r"\$\$(?P<body>.+?)\$\$(?:[ \t]*\((?P<label>[\w:.-]+)\))?", re.S)
GLUE_PREFIX = "application/papermill.record/"
SOLUTION_ONLY = "solution-only"  # the tag of a code cell that serves only a solution (it goes with the solution)
# Code in markdown, left untouched: a fenced block, or an inline span that is not a role's content.
CODE = re.compile(
    r"(?P<role>\{[a-z][a-z:-]*\}`[^`]*`)|^(?P<ticks>`{3,})[^\n`{]*\n.*?^(?P=ticks)[ \t]*$|`[^`\n]+`", re.S | re.M
)


# --------------------------------------------------------------------------------------------------
# Markdown blocks: the text between directives, and the directives with their options and body


@dataclass
class Block:
    """A piece of a markdown cell: plain text (``name`` None) or a directive."""

    text: str
    name: str | None = None
    argument: str = ""
    options: dict | None = None
    body: str = ""


def split_blocks(source: str) -> list[Block]:
    """Split markdown into text and top-level directive blocks (fences close on a line of at least
    as many of the same characters, as in CommonMark)."""
    lines = source.split("\n")
    blocks: list[Block] = []
    text: list[str] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            text.append(lines[i])
            i += 1
            continue
        fence = match["fence"]
        closing = re.compile("^" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if text:
            blocks.append(Block("\n".join(text)))
            text = []
        inner = lines[i + 1 : end]
        options = {}
        while inner and OPTION.match(inner[0]):
            option = OPTION.match(inner[0])
            options[option["key"]] = option["value"].strip("\"'")
            inner = inner[1:]
        blocks.append(
            Block(
                "\n".join(lines[i : end + 1]), match["name"], match["argument"], options, "\n".join(inner).strip("\n")
            )
        )
        i = end + 1
    if text:
        blocks.append(Block("\n".join(text)))
    return blocks


# --------------------------------------------------------------------------------------------------
# The book: chapter numbers from _toc.yml, and every label with its number and title


@dataclass
class Target:
    """What a label points at, as the book shows it."""

    doc: str  # e.g. "book/ep"
    kind: str  # section, equation, figure, table, exercise, algorithm
    number: str | None  # "8.3" in a numbered chapter, "3" in the back matter, None for sections
    title: str


def read_toc(root: Path) -> list[tuple[str, int | None]]:
    """The book's documents in reading order, each with its chapter number (None if unnumbered)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    documents: list[tuple[str, int | None]] = [(toc["root"], None)]
    chapter = 0
    for part in toc.get("parts", []):
        for entry in part.get("chapters", []):
            if part.get("numbered"):
                chapter += 1
                documents.append((entry["file"], chapter))
            else:
                documents.append((entry["file"], None))
    return documents


def document_text(root: Path, doc: str) -> tuple[str, Path] | None:
    """The markdown of a document (a notebook's markdown cells joined), and its file."""
    for suffix in (".ipynb", ".md"):
        path = root / (doc + suffix)
        if path.exists():
            break
    else:
        return None
    if suffix == ".md":
        return path.read_text(encoding="utf-8"), path
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = [_source(cell) for cell in notebook["cells"] if cell["cell_type"] == "markdown"]
    return "\n\n".join(cells), path


def _source(cell: dict) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def build_index(root: Path) -> tuple[dict[str, Target], dict[str, str], dict[str, int | None]]:
    """Every label of the book, the title of every document, and every document's chapter number."""
    index: dict[str, Target] = {}
    titles: dict[str, str] = {}
    chapters: dict[str, int | None] = {}
    for doc, chapter in read_toc(root):
        found = document_text(root, doc)
        if found is None:
            continue
        chapters[doc] = chapter
        counters = {"equation": 0, "figure": 0, "table": 0, "exercise": 0, "algorithm": 0, "theorem": 0}

        def number(kind, chapter=chapter, counters=counters):
            counters[kind] += 1
            return f"{chapter}.{counters[kind]}" if chapter else str(counters[kind])

        pending_label = None
        for block in split_blocks(found[0]):
            if block.name is None:
                for line in block.text.split("\n"):
                    target, heading = TARGET.match(line), HEADING.match(line)
                    if target:
                        pending_label = target["label"]
                    elif heading:
                        title = heading["title"]
                        titles.setdefault(doc, title)
                        if pending_label:
                            index[pending_label] = Target(doc, "section", None, title)
                        pending_label = None
                    elif line.strip():
                        if pending_label:  # a label on a paragraph: references to it give their own text
                            index[pending_label] = Target(doc, "paragraph", None, "")
                        pending_label = None
                for math in DISPLAY_MATH.finditer(block.text):
                    if math["label"]:
                        index[math["label"]] = Target(doc, "equation", number("equation"), "")
                continue
            options = block.options or {}
            kinds = {
                "exercise": "exercise",
                "prf:algorithm": "algorithm",
                "prf:theorem": "theorem",
                "glue:figure": "figure",
            }
            kinds.update({"figure": "figure", "table": "table"})
            kind = kinds.get(block.name)
            label = options.get("label") or options.get("name")
            if kind in ("exercise", "algorithm", "theorem"):
                index[label or f"{doc}-{kind}-{counters[kind] + 1}"] = Target(doc, kind, number(kind), block.argument)
            elif kind and label:
                caption = block.argument if kind == "table" else block.body.strip()
                index[label] = Target(doc, kind, number(kind), caption)
    return index, titles, chapters


def read_bibliography(path: Path) -> dict[str, tuple[str, str]]:
    """Citation key -> (authors as the book cites them, year)."""
    from pybtex.database import parse_file

    entries = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = ["".join(person.last_names).replace("{", "").replace("}", "") for person in people]
        authors = f"{names[0]} et al." if len(names) > 2 else " and ".join(names)
        entries[key] = (authors, entry.fields.get("year", "n.d."))
    return entries


def read_macros(root: Path) -> dict[str, str]:
    """The book's TeX macros (``_config.yml``), as name -> definition with ``#1`` for an argument."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    macros = config["sphinx"]["config"].get("mathjax3_config", {}).get("tex", {}).get("macros", {})
    return {name: (value[0] if isinstance(value, list) else value) for name, value in macros.items()}


# --------------------------------------------------------------------------------------------------
# Converting one notebook


def format_glue(text: str, spec: str) -> str:
    """A glued text/plain value with a format spec, as the book shows it (a Python literal is
    evaluated first, so a glued string loses its quotes and a number can take a float format)."""
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    if spec[-1] in "bcdoxX":
        value = int(value)
    elif spec[-1] in "eEfFgGn%":
        value = float(value)
    elif spec[-1] == "s":
        value = str(value)
    return format(value, spec)


def glue_records(notebook: dict) -> dict[str, dict]:
    """Every glued value of a notebook: name -> its mime bundle (prefix removed)."""
    records = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                data = output.get("data", {})
                records[name] = {key.removeprefix(GLUE_PREFIX): value for key, value in data.items()}
    return records


def expand_macros(text: str, macros: dict[str, str]) -> str:
    """Replace the book's macros by their definitions (``\\N`` -> ``\\mathcal{N}``; ``\\bm{x}`` ->
    ``\\boldsymbol{x}``), so that any renderer shows the maths."""
    for name, definition in macros.items():
        replacement = definition.split("{#1}")[0] if "#1" in definition else definition
        text = re.sub(r"\\" + re.escape(name) + r"(?![A-Za-z])", lambda _m, r=replacement: r, text)
    return text


def plain(text: str) -> str:
    """Markdown without roles, maths delimiters or emphasis: for alt text."""
    text = ROLE.sub(lambda m: re.sub(r"\s*<[^>]*>$", "", m["content"]), text)
    text = re.sub(r"[$*`\[\]]", "", text)
    return " ".join(text.split())


def escape_markdown(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>$])", r"\\\1", text)


def python_object_source(path: Path, dotted: str) -> str:
    """The source of a function or class (``Class.method`` too) in a Python file, as
    ``literalinclude``'s ``:pyobject:`` shows it."""
    source = path.read_text(encoding="utf-8")
    nodes = ast.parse(source).body
    for part in dotted.split("."):
        found = [n for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part]
        if not found:
            raise ValueError(f"{dotted} is not defined in {path}")
        node = found[0]
        nodes = node.body
    lines = source.split("\n")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    code = "\n".join(lines[start - 1 : node.end_lineno])
    indent = min(len(line) - len(line.lstrip()) for line in code.split("\n") if line.strip())
    return "\n".join(line[indent:] for line in code.split("\n"))


class Converter:
    """Turns one chapter notebook into its student edition."""

    def __init__(self, root: Path, doc: str, index, titles, chapters, bibliography, macros):
        self.root, self.doc = root, doc
        self.index, self.titles, self.chapters = index, titles, chapters
        self.bibliography, self.macros = bibliography, macros
        self.notebooks = {d for d in chapters if (root / (d + ".ipynb")).exists()}
        self.glue: dict[str, dict] = {}
        self.attachments: dict[str, dict] = {}
        self.exercise_count = 0
        self.pages_named: set[str] = set()  # pages outside the notebooks already named in the current cell

    # -- references ---------------------------------------------------------------------------------
    def link(self, text: str, target: Target) -> str:
        """Text that names a target: a link to its notebook if it is another chapter's notebook."""
        if target.doc == self.doc:
            return f"*{text}*" if target.kind == "section" and not text.startswith("*") else text
        if target.doc in self.notebooks:
            return f"[{text}]({Path(target.doc).name}.ipynb)"
        page = self.titles.get(target.doc, Path(target.doc).name)
        if text == page or page in self.pages_named:
            return text
        self.pages_named.add(page)
        return f"{text} (in *{page}*)"

    def reference(self, role: str, content: str) -> str:
        explicit = re.match(r"^(?P<text>.*?)\s*<(?P<label>[^<>]+)>$", content, re.S)
        text, label = (" ".join(explicit["text"].split()), explicit["label"]) if explicit else (None, content)
        target = self.index.get(label)
        if target is None:
            raise ValueError(f"{self.doc}: {{{role}}}`{content}` names no label of the book")
        names = {
            "figure": "Fig.",
            "table": "Table",
            "exercise": "Exercise",
            "algorithm": "Algorithm",
            "theorem": "Theorem",
        }
        if role == "eq":
            return self.link(text or f"Eq. ({target.number})", target)
        if role in ("numref", "prf:ref") or (role == "ref" and target.kind in names and not text):
            if text and "{number}" in text:
                text = text.replace("{number}", target.number or "")
            numbered = f"{names.get(target.kind, '')} {target.number}".strip() if target.number else target.title
            return self.link(text or numbered, target)
        if role == "doc":
            return self.link(text or self.titles.get(label, label), target)
        return self.link(text or expand_macros(target.title, self.macros), target)

    def cite(self, role: str, content: str) -> str:
        keys = [key.strip() for key in content.split(",")]
        missing = [key for key in keys if key not in self.bibliography]
        if missing:
            raise ValueError(f"{self.doc}: citation keys {missing} are not in references.bib")
        if role == "cite:t":
            return ", ".join(f"{self.bibliography[k][0]} [{self.bibliography[k][1]}]" for k in keys)
        return "[" + "; ".join(f"{a}, {y}" for a, y in (self.bibliography[k] for k in keys)) + "]"

    def glued_text(self, content: str) -> str:
        """The text of a ``{glue:text}`` role: ``key[:spec]`` from this notebook, or ``doc.ipynb::key[:spec]``
        from another chapter's stored outputs (a path relative to this chapter, as myst-nb reads it)."""
        other, separator, rest = content.rpartition("::")
        key, _, spec = rest.partition(":")
        glue = self.glue
        if separator:
            path = (self.root / self.doc).parent / other
            if not path.exists():
                raise ValueError(f"{self.doc}: {{glue:text}}`{content}` names no notebook {other!r}")
            glue = glue_records(json.loads(path.read_text(encoding="utf-8")))
        if key not in glue or "text/plain" not in glue[key]:
            raise ValueError(f"{self.doc}: {{glue:text}}`{content}` has no stored value")
        return format_glue(glue[key]["text/plain"], spec)

    def roles(self, text: str) -> str:
        def replace(match):
            role, content = match["role"], match["content"]
            if role.startswith("glue"):
                return escape_markdown(self.glued_text(content))
            if role in ("ref", "numref", "eq", "prf:ref", "doc"):
                return self.reference(role, content)
            if role.startswith("cite"):
                return self.cite(role, content)
            if role == "math":
                return f"${content}$"
            if role.startswith("py:"):  # {py:func}`~gpc_ref.ep.expectation_propagation`: the name, as code
                return "`" + re.sub(r"\s*<[^>]*>$", "", content).lstrip("~") + "`"
            # {term} and any other role: its text
            return re.sub(r"\s*<[^>]*>$", "", content)

        return ROLE.sub(replace, text)

    # -- text ---------------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """Plain markdown: labels dropped, roles resolved, labelled equations tagged, macros expanded
        (code, fenced or inline, is left as it is)."""
        code: list[str] = []

        def hide(match):
            if match["role"]:  # a role's content is not code: it is read as a whole, left to right
                return match.group(0)
            code.append(match.group(0))
            return f"\x00{len(code) - 1}\x00"

        text = CODE.sub(hide, text)
        text = self.converted(text)
        return re.sub("\x00(\\d+)\x00", lambda m: code[int(m.group(1))], text)

    def converted(self, text: str) -> str:
        text = "\n".join(line for line in text.split("\n") if not TARGET.match(line))

        def tag(match):
            if not match["label"]:
                return match.group(0)
            number = self.index[match["label"]].number
            return "$$" + match["body"].rstrip() + f"\n\\tag{{{number}}}\n$$"

        text = DISPLAY_MATH.sub(tag, text)
        return expand_macros(self.roles(text), self.macros)

    def figure(self, block: Block) -> str:
        key = block.argument
        bundle = self.glue.get(key, {})
        if "image/png" not in bundle:
            raise ValueError(f"{self.doc}: glued figure {key!r} has no stored PNG")
        name = f"{key}.png"
        self.attachments[name] = {"image/png": bundle["image/png"]}
        label = (block.options or {}).get("name")
        number = self.index[label].number if label in self.index else None
        caption = self.text(block.body)
        heading = f"Fig. {number}" if number else "Figure"
        return f"![{plain(caption)}](attachment:{name})\n\n*{heading}: {caption}*"

    def directive(self, block: Block) -> str:
        options = block.options or {}
        if block.name == "prf:algorithm":
            number = self.index[options["label"]].number if options.get("label") in self.index else ""
            title = f" ({block.argument})" if block.argument else ""
            return f"**Algorithm {number}{title}**\n\n{self.text(block.body)}"
        if block.name == "prf:theorem":
            number = self.index[options["label"]].number if options.get("label") in self.index else ""
            title = f" ({block.argument})" if block.argument else ""
            return f"**Theorem {number}{title}.** {self.text(block.body)}"
        if block.name == "prf:proof":
            return f"*Proof.* {self.text(block.body)} ∎"
        if block.name == "glue:figure":
            return self.figure(block)
        if block.name == "literalinclude":
            path = (self.root / self.doc).parent / block.argument
            if "pyobject" in options:
                code = python_object_source(path, options["pyobject"])
            else:
                code = path.read_text(encoding="utf-8").rstrip("\n")
            where = block.argument.replace("../", "")
            caption = f"`{where}`" + (f", `{options['pyobject']}`" if "pyobject" in options else "")
            return f"{caption}:\n\n```python\n{code}\n```"
        if block.name == "table":
            number = self.index[options["name"]].number if options.get("name") in self.index else ""
            return f"**Table {number}:** {self.text(block.argument)}\n\n{self.text(block.body)}"
        # admonitions and other directives: kept for jupyterlab-myst, their content converted
        inner = self.text(block.body)
        head = block.text.split("\n")[0]
        fence = FENCE.match(head)["fence"]
        option_lines = "".join(f":{k}: {v}\n" for k, v in options.items())
        return f"{head}\n{option_lines}{inner}\n{fence}"

    def exercise(self, block: Block) -> str:
        label = (block.options or {}).get("label")
        self.exercise_count += 1
        number = self.index[label].number if label in self.index else str(self.exercise_count)
        title = f" ({self.text(block.argument)})" if block.argument else ""
        return f"### Exercise {number}{title}\n\n{self.text(block.body)}"

    # -- cells --------------------------------------------------------------------------------------
    def convert(self, notebook: dict) -> tuple[dict, dict[str, list[str]]]:
        """The student edition of a notebook, and the removed solution code of each exercise."""
        self.glue = glue_records(notebook)
        cells: list[dict] = []
        solution_code: dict[str, list[str]] = {}
        in_gated = False  # inside {solution-start} ... {solution-end}
        after_solution = False  # the code cells after a markdown cell that ends with a solution
        current = None  # the label of the last exercise
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                if SOLUTION_ONLY in cell.get("metadata", {}).get("tags", []):
                    continue  # code that only computes numbers a removed solution quotes
                if in_gated or after_solution:
                    solution_code.setdefault(current, []).append(_source(cell))
                    continue
                cells.append(_code_cell(cell))
                continue
            if cell["cell_type"] != "markdown":
                cells.append(copy.deepcopy(cell))
                continue
            pieces: list[str] = []
            after_solution = False
            self.pages_named = set()  # a page outside the notebooks is named once per cell, at its first reference
            for block in split_blocks(_source(cell)):
                if in_gated:
                    in_gated = block.name != "solution-end"
                    continue
                if block.name == "solution-start":
                    in_gated = True
                    continue
                if block.name == "solution":
                    after_solution = True
                    continue
                if block.name is None and not block.text.strip():
                    continue
                after_solution = False
                if block.name == "exercise":
                    _flush(cells, pieces, self.attachments)
                    current = (block.options or {}).get("label") or f"exercise-{self.exercise_count + 1}"
                    exercise = _markdown_cell(self.exercise(block), {})
                    exercise["_label"] = current  # removed again in annotate_and_check
                    cells.append(exercise)
                    cells.append(_code_cell(None))
                    continue
                pieces.append(self.text(block.text) if block.name is None else self.directive(block))
            _flush(cells, pieces, self.attachments)
        student = copy.deepcopy(notebook)
        student["cells"] = cells
        return student, solution_code


def _flush(cells: list[dict], pieces: list[str], attachments: dict) -> None:
    if pieces:
        cells.append(_markdown_cell("\n\n".join(p.strip("\n") for p in pieces), dict(attachments)))
        attachments.clear()
        pieces.clear()


def _markdown_cell(source: str, attachments: dict) -> dict:
    cell = {"cell_type": "markdown", "metadata": {}, "source": source}
    if attachments:
        cell["attachments"] = attachments
    return cell


def _code_cell(cell: dict | None) -> dict:
    if cell is None:
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ""}
    kept = copy.deepcopy(cell)
    kept["source"] = _source(cell)
    # glued values are shown in the text now; their hidden records would only repeat the figures
    kept["outputs"] = [o for o in cell.get("outputs", []) if "scrapbook" not in o.get("metadata", {})]
    return kept


# --------------------------------------------------------------------------------------------------
# Which chapter variables a removed solution used, and whether the kept code still runs


def _python(source: str) -> ast.Module:
    from IPython.core.inputtransformer2 import TransformerManager  # magics and shell lines to Python

    return ast.parse(TransformerManager().transform_cell(source))


def names_used_and_defined(source: str) -> tuple[list[str], set[str], set[str]]:
    """Names a cell reads before defining them (in order), names it assigns, names it imports."""
    used: list[str] = []
    assigned: set[str] = set()
    imported: set[str] = set()
    for statement in _python(source).body:
        local = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        local |= {a.arg for a in ast.walk(statement) if isinstance(a, ast.arg)}
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id not in local and node.id not in assigned and node.id not in imported:
                    if node.id not in used:
                        used.append(node.id)
        if isinstance(statement, ast.Import | ast.ImportFrom):
            imported |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
        elif isinstance(statement, ast.FunctionDef | ast.ClassDef):
            assigned.add(statement.name)
        else:
            assigned |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return used, assigned, imported


def annotate_and_check(doc: str, student: dict, solution_code: dict[str, list[str]]) -> None:
    """Say under each exercise which chapter variables its removed solution used; fail if a kept cell
    needs a name that only removed code defined."""
    removed_defines: set[str] = set()
    for sources in solution_code.values():
        for source in sources:
            removed_defines |= names_used_and_defined(source)[1]
    defined: set[str] = set()
    chapter_variables: set[str] = set()
    for cell in student["cells"]:
        label = cell.pop("_label", None)
        if cell["cell_type"] == "code" and cell["source"].strip():
            used, assigned, imported = names_used_and_defined(cell["source"])
            broken = [n for n in used if n not in defined and n in removed_defines]
            if broken:
                raise ValueError(f"{doc}: a kept code cell uses {broken}, which only a removed solution defines")
            defined |= assigned | imported
            chapter_variables |= assigned
        if label and solution_code.get(label):
            used = []
            for source in solution_code[label]:
                for name in names_used_and_defined(source)[0]:
                    if name in chapter_variables and name not in used:
                        used.append(name)
            if used:
                names = ", ".join(f"`{name}`" for name in used)
                cell["source"] += (
                    f"\n\n*The chapter's solution used {names} from the cells above: run the notebook "
                    "up to here first (Run ▸ Run All Above Selected Cell).*"
                )


def first_cell(doc: str, title: str, chapter: int | None, exercises: int) -> dict:
    name = f"Chapter {chapter}, *{title}*" if chapter else f"*{title}*"
    lines = [
        f"> **Student edition** of {name}, from the book *Gaussian Process Classification, derived and "
        f"computed* (written by `make student` from `{doc}.ipynb`; the solutions are removed).",
        ">",
    ]
    if exercises:
        lines.append(
            f"> The chapter's {exercises} exercises are at the end, each followed by an empty code cell "
            "for your answer. They build on the chapter: run the notebook from the top (Run ▸ Run All "
            "Cells) before you start them; an exercise whose solution needs particular variables of the "
            "chapter names them."
        )
    else:
        lines.append("> This chapter has no exercises; run it from the top (Run ▸ Run All Cells).")
    lines += [
        ">",
        "> Numbers in the text and the figures are those of the book's stored run; equations, figures "
        "and exercises carry the book's numbers. The code needs `gpc_ref` and the book's requirements "
        "(`make venv` in the repository, then `.venv/bin/jupyter lab`), and the folder `results/` next "
        "to the notebooks.",
    ]
    # jupyterlab-myst numbers every display formula itself unless told not to; the formulas carry
    # the book's numbers as \tag instead (the front matter is hidden by jupyterlab-myst)
    return _markdown_cell("---\nnumbering:\n  equation: false\n---\n" + "\n".join(lines), {})


def assign_ids(notebook: dict, stem: str) -> None:
    """Unique, stable cell ids (nbformat 4.5)."""
    for number, cell in enumerate(notebook["cells"]):
        cell["id"] = f"{stem[:40]}-{number}"
        if isinstance(cell.get("source"), str):
            cell["source"] = cell["source"].splitlines(keepends=True)


def write_edition(root: Path, out: Path) -> list[Path]:
    """Write every notebook's student edition, the stored results and a zip into ``out``."""
    index, titles, chapters = build_index(root)
    bibliography = read_bibliography(root / "book" / "references.bib")
    macros = read_macros(root)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written = []
    for doc, chapter in read_toc(root):
        path = root / (doc + ".ipynb")
        if not path.exists():
            continue
        original = json.loads(path.read_text(encoding="utf-8"))
        converter = Converter(root, doc, index, titles, chapters, bibliography, macros)
        student, solution_code = converter.convert(original)
        annotate_and_check(doc, student, solution_code)
        exercises = sum(1 for target in index.values() if target.doc == doc and target.kind == "exercise")
        student["cells"].insert(0, first_cell(doc, plain(titles.get(doc, doc)), chapter, exercises))
        assign_ids(student, path.stem)
        student["nbformat"], student["nbformat_minor"] = 4, 5
        target = out / path.name
        target.write_text(json.dumps(student, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    for extra in ("results", "reproductions.csv"):
        source = root / "book" / extra
        if source.is_dir():
            shutil.copytree(source, out / extra)
        elif source.exists():
            shutil.copy2(source, out / extra)
    (out / "README.md").write_text(README, encoding="utf-8")
    write_zip(out, out / f"{ZIP_NAME}.zip")
    return written


README = """# Gaussian Process Classification, derived and computed: student edition

One notebook per chapter, with the solutions removed and an empty code cell after each exercise.
Open them in JupyterLab from an environment with `gpc_ref` and the book's requirements (in the
book's repository: `make venv`, then `.venv/bin/jupyter lab`); `jupyterlab-myst` renders the
admonitions. Keep the folder `results/` next to the notebooks: some chapters read stored results.
"""


def write_zip(folder: Path, target: Path) -> None:
    """A zip of the folder under one top-level directory, with fixed timestamps (reproducible)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path != target:
                info = zipfile.ZipInfo(f"{ZIP_NAME}/{path.relative_to(folder).as_posix()}", (1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (with _toc.yml and book/)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default <root>/_build/student)")
    args = parser.parse_args(argv)
    out = args.out or args.root / "_build" / "student"
    written = write_edition(args.root, out)
    print(f"student edition: {len(written)} notebooks in {out}, zipped as {out / (ZIP_NAME + '.zip')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
