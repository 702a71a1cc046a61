"""Remove volatile metadata from the book's notebooks, so that a re-run changes only what it computes.

`make execute` runs this after executing a chapter; ``tests/book/test_notebook_hygiene.py`` fails if
anything it removes comes back. Removed: the execution timestamps nbclient writes into each code
cell's metadata, and the Python version in the notebook's ``language_info``. Kept: cell tags
(``hide-input``, ``remove-input``, ...) and everything the book renders.

Usage: ``python tests/strip_notebook_metadata.py book/*.ipynb``
"""

import json
import sys

VOLATILE_CELL_KEYS = ("execution", "ExecuteTime", "collapsed", "scrolled")


def strip(notebook: dict) -> bool:
    """Strip ``notebook`` in place; return True if anything changed."""
    changed = False
    for cell in notebook["cells"]:
        for key in VOLATILE_CELL_KEYS:
            if key in cell.get("metadata", {}):
                del cell["metadata"][key]
                changed = True
    language = notebook.get("metadata", {}).get("language_info", {})
    if "version" in language:
        del language["version"]
        changed = True
    return changed


def main(paths: list[str]) -> None:
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            notebook = json.load(handle)
        if strip(notebook):
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(notebook, handle, indent=1, ensure_ascii=False)
                handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
