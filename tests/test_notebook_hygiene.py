"""The committed notebooks carry no volatile metadata and stay small (CONTRIBUTING.md)."""

import json
import pathlib

import pytest

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
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
