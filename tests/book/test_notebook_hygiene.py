"""The committed notebooks carry no volatile metadata, show no machine paths and stay small (CONTRIBUTING.md)."""

import json
import pathlib
import re

import pytest

BOOK = pathlib.Path(__file__).resolve().parents[2] / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_execution_timestamps_or_versions(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    stamped = [i for i, cell in enumerate(notebook["cells"]) if "execution" in cell.get("metadata", {})]
    assert not stamped, f"cells {stamped[:5]} carry execution timestamps: run `make execute` (it strips them)"
    assert "version" not in notebook["metadata"].get("language_info", {}), "the Python version is stored"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_under_two_megabytes(path):
    assert path.stat().st_size < 2_000_000


# An absolute path of the machine that ran the notebook (a warning's file name, a traceback, a repr
# that prints where a file lives): it says nothing to the reader and differs on every machine.
MACHINE_PATH = re.compile(
    r"(?<![\w.])/(?:home|root|work|tmp|Users|opt|usr|var|mnt|private|srv|Library)/[\w.-]+"
    r"|\b[A-Za-z]:\\\\?[\w.-]+|site-packages|\.venv[/\\]"
)


def stored_texts(cell):
    """Every text a code cell's stored outputs show: streams, text reprs, HTML, JSON and tracebacks."""
    for output in cell.get("outputs", []):
        if "text" in output:
            yield "".join(output["text"])
        for kind, value in output.get("data", {}).items():
            if "text" in kind or "json" in kind:
                yield value if isinstance(value, str) else json.dumps(value)
        if "traceback" in output:
            yield "\n".join(output["traceback"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_path_in_stored_outputs(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    found = [
        (number, match.group(0))
        for number, cell in enumerate(notebook["cells"])
        for text in stored_texts(cell)
        for match in MACHINE_PATH.finditer(text)
    ]
    assert not found, f"stored outputs show machine paths (cell, path): {found[:5]}"


def test_the_machine_path_pattern():
    for path in ("/work/main/gpc_ref/ep.py:432: JitterWarning", "/home/ada/x.py", "C:\\Users\\ada", "site-packages/a"):
        assert MACHINE_PATH.search(path), path
    for text in ("f/√(1+s)", "ratio 3/4", "w/o jitter", "n/2 and /usr", "K/2"):
        assert not MACHINE_PATH.search(text), text
