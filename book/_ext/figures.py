"""A small Sphinx extension for this book's figures: alt text from the caption, and the size of the
figure's text, for the reader's browser.

Alt text. The figures come from notebook outputs (``{glue:figure}``), which carry no alt text, so the
HTML writer fell back to the image's path ("../_images/f0cc….png"), which is what a screen reader read
out. Each image inside a figure gets the figure's caption (maths as its TeX source), an image outside
any figure a plain description, unless the author gave one.

Text size. A PNG cannot say how large its text is, but the code cell that drew it can. For every image
stored in a notebook's outputs this reads the cell that made it: the smallest font size it asks for
(explicit ``fontsize=``/``labelsize=``/``{"size": n}`` values and named sizes, the sizes inside the
gpc_ref.plotting helpers it calls, and matplotlib's 10 pt default, which tick labels and legends use
unless told otherwise) at its resolution (``dpi=`` in the cell, else matplotlib's 100). The image gets
the class ``gpc-text-N``, N the height of that text in tenths of a pixel at the image's natural size:
book/_static/gpc.js never shows the image so small that this text falls below 8 px, and
``make browser-check`` measures it. Images are matched to cells by file name: myst-nb names each
output image by the SHA-256 of its bytes.
"""

import ast
import base64
import hashlib
import json
import re
from pathlib import Path

from docutils import nodes

DEFAULT_POINTS = 10.0  # matplotlib's font.size: tick labels, axis labels and legends ("medium")
DEFAULT_DPI = 100.0  # matplotlib's figure.dpi, used when a cell does not set dpi=
NAMED = {"xx-small": 0.579, "x-small": 0.694, "small": 0.833, "medium": 1.0, "large": 1.2}
SIZE = re.compile(
    r"""(?:fontsize|labelsize|titlesize)\s*=\s*(?:(?P<number>\d+(?:\.\d+)?)|["'](?P<name>[a-z-]+)["'])"""
    r"""|["']size["']\s*:\s*(?P<dict_number>\d+(?:\.\d+)?)|set_size\((?P<set_number>\d+(?:\.\d+)?)\)"""
)
DPI = re.compile(r"\bdpi\s*=\s*(\d+(?:\.\d+)?)")
GLUED_PNG = "application/papermill.record/image/png"


def font_sizes(code):
    """Every font size (points) that a piece of code sets explicitly."""
    sizes = []
    for match in SIZE.finditer(code):
        number = match["number"] or match["dict_number"] or match["set_number"]
        if number:
            sizes.append(float(number))
        elif match["name"] in NAMED:
            sizes.append(NAMED[match["name"]] * DEFAULT_POINTS)
    return sizes


def helper_font_sizes(plotting):
    """The explicit font sizes inside each function of gpc_ref/plotting.py (empty if it is absent)."""
    if not plotting.exists():
        return {}
    source = plotting.read_text(encoding="utf-8")
    lines = source.split("\n")
    helpers = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            sizes = font_sizes("\n".join(lines[node.lineno - 1 : node.end_lineno]))
            if sizes:
                helpers[node.name] = sizes
    return helpers


def figure_text(notebook, helpers):
    """SHA-256 of each PNG in a notebook's outputs -> the natural height (px) of its smallest text."""
    found = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        code = "".join(cell["source"])
        sizes = font_sizes(code) + [s for name, got in helpers.items() if name + "(" in code for s in got]
        points = min(sizes + [DEFAULT_POINTS])
        dpi_match = DPI.search(code)
        dpi = float(dpi_match.group(1)) if dpi_match else DEFAULT_DPI
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            png = data.get("image/png") or data.get(GLUED_PNG)
            if png:
                digest = hashlib.sha256(base64.b64decode("".join(png))).hexdigest()
                found[digest] = points * dpi / 72
    return found


def _caption_text(figure):
    for caption in figure.findall(nodes.caption):
        return " ".join(caption.astext().split())
    return ""


def _lacks_alt_text(image):
    alt = image.get("alt", "").strip()
    return not alt or alt == image.get("uri") or alt.lower().endswith((".png", ".svg", ".jpg", ".jpeg", ".gif"))


def _process(app, doctree, docname):
    for figure in doctree.findall(nodes.figure):
        caption = _caption_text(figure)
        for image in figure.findall(nodes.image):
            if caption and _lacks_alt_text(image):
                image["alt"] = caption
    for image in doctree.findall(nodes.image):
        if _lacks_alt_text(image):
            image["alt"] = "Figure drawn by the code cell above"
    source = Path(app.env.doc2path(docname))
    if source.suffix != ".ipynb":
        return
    helpers = helper_font_sizes(Path(app.srcdir) / "gpc_ref" / "plotting.py")
    text = figure_text(json.loads(source.read_text(encoding="utf-8")), helpers)
    for image in doctree.findall(nodes.image):
        pixels = text.get(Path(image.get("uri", "")).stem)
        if pixels:
            image["classes"].append(f"gpc-text-{round(pixels * 10)}")


def setup(app):
    app.connect("doctree-resolved", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
