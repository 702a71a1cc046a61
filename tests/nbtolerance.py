"""nbval with printed numbers compared at the precision they are printed to: a pytest plugin.

``pytest --nbtolerance book/*.ipynb -p nbtolerance`` executes every code cell of every notebook in a
kernel, as nbval does (nbval's kernel, sanitizer and cell options are reused), and fails a cell that raises,
as nbval does. What differs is how a stored output is compared with the fresh one:

- The text around the numbers must be the same (runs of white space count as one space, so that a table
  column that grows by a digit still matches).
- An integer (digits without a decimal point or exponent: a count, a size, a seed) must be the same.
- A decimal number must agree to one unit in the last digit it is printed with: ``0.352`` accepts
  0.351 to 0.353, ``3.0e-07`` accepts 2.9e-07 to 3.1e-07. A number printed to digits that a last-bit change
  of ``exp`` or ``log`` can move by more than that is a defect of the cell (print fewer digits, or the
  threshold a rounding-level diagnostic passes), not of the check.
- Images are not compared (nbval skips them too; a glued figure's PNG is skipped here as well).
- A cell tagged ``nbval-ignore-output`` (or with the ``# NBVAL_IGNORE_OUTPUT`` comment) still runs and must
  not raise, and the values it glues (``myst_nb.glue``: the numbers the prose quotes) are still compared as
  above; only its printed text is not. Use it for output whose digits are not the claim (iteration counts,
  optimiser paths), with the claim asserted in the cell.

docs/DESIGN.md ("Tests") says why: the stored outputs are made on one CPU, the reader runs them on another,
and two floating-point environments differ in the last bit of ``exp`` and ``log``.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from nbval.plugin import IPyNbCell
from nbval.plugin import IPyNbFile
from nbval.plugin import transform_streams_for_comparison

from gpc_ref.reproduction import agrees_at_printed_precision

# A number not glued to a word on its left (so that "K15" or "x2" stay text): an optional sign, digits with an
# optional fraction, an optional exponent. A sign after a letter or digit ("x-1", "2-3") is text.
NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
GLUE_PREFIX = "application/papermill.record/"


def _skeleton_and_numbers(text: str) -> tuple[str, list[str]]:
    numbers = NUMBER.findall(text)
    skeleton = " ".join(NUMBER.sub("#", text).split())
    return skeleton, numbers


def first_difference(reference: str, fresh: str) -> str | None:
    """None when the two texts agree; otherwise a sentence naming the first difference."""
    ref_skeleton, ref_numbers = _skeleton_and_numbers(reference)
    new_skeleton, new_numbers = _skeleton_and_numbers(fresh)
    if ref_skeleton != new_skeleton or len(ref_numbers) != len(new_numbers):
        return "the text around the numbers differs"
    for index, (a, b) in enumerate(zip(ref_numbers, new_numbers)):
        if not agrees_at_printed_precision(a, b):
            allowed = "to one unit in its last digit" if ("." in a or "e" in a.lower()) else "exactly (an integer)"
            return f"number {index + 1}: stored {a}, computed now {b}; it must agree {allowed}"
    return None


def _flatten(outputs, skip, glue_only):
    flat = defaultdict(list)
    for output in transform_streams_for_comparison(outputs):
        for key, value in output.items():
            if key in skip:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime in skip or "image/" in mime:
                        continue
                    if glue_only and not mime.startswith(GLUE_PREFIX):
                        continue
                    flat[mime].append(data)
            elif not glue_only:
                flat[key].append(value)
    return flat


class ToleranceCell(IPyNbCell):
    """A notebook cell whose outputs are compared number by number at their printed precision."""

    def compare_outputs(self, test, ref, skip_compare=None):
        skip = skip_compare or self.parent.skip_compare
        glue_only = not self.options["check_text"]
        fresh = _flatten(test, skip, glue_only)
        stored = _flatten(ref, skip, glue_only)
        self.comparison_traceback = []
        if set(fresh) != set(stored):
            self.comparison_traceback.append(
                f"outputs of other kinds: stored {sorted(stored)}, computed now {sorted(fresh)}"
            )
            return False
        for key in stored:
            if len(stored[key]) != len(fresh[key]):
                self.comparison_traceback.append(
                    f"{len(stored[key])} stored outputs of kind {key!r}, {len(fresh[key])} computed now"
                )
                return False
            for a, b in zip(stored[key], fresh[key]):
                a, b = self.sanitize(a), self.sanitize(b)
                if isinstance(a, str) and isinstance(b, str):
                    problem = first_difference(a, b)
                else:
                    problem = None if a == b else "the outputs differ"
                if problem:
                    self.comparison_traceback += [
                        f"output {key!r}: {problem}",
                        "stored:",
                        _shorten(a),
                        "computed now:",
                        _shorten(b),
                    ]
                    return False
        return True


def _shorten(value, limit=3000):
    text = str(value)
    return text if len(text) <= limit else text[:limit] + " ..."


class ToleranceNotebook(IPyNbFile):
    def collect(self):
        for cell in super().collect():
            options = cell.options
            # nbval compares only when options["check"]; here the glued values are compared in every cell,
            # the printed text only where nbval would have compared it
            options["check_text"] = options["check"]
            options["check"] = True
            yield ToleranceCell.from_parent(
                self, name=cell.name, cell_num=cell.cell_num, cell=cell.cell, options=options
            )


def pytest_addoption(parser):
    parser.getgroup("nbval").addoption(
        "--nbtolerance",
        action="store_true",
        help="run notebooks as nbval does, comparing printed numbers at their printed precision (tests/nbtolerance.py)",
    )


def pytest_collect_file(file_path, parent):
    if parent.config.option.nbtolerance and file_path.suffix == ".ipynb":
        if parent.config.option.nbval or parent.config.option.nbval_lax:
            raise pytest.UsageError("--nbtolerance replaces --nbval and --nbval-lax: give only one of them")
        return ToleranceNotebook.from_parent(parent, path=file_path)
    return None
