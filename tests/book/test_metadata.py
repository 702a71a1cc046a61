"""The repository's metadata agrees with itself: the citation's version is the package's, and the
README and the introduction list every part and file of the book."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def toc():
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def test_citation_names_the_package_version():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert citation["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(citation)
    assert str(citation["version"]) == version.group(1)
    assert citation["license"] == "MIT"


def test_readme_lists_every_file_of_the_book():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files = [toc()["root"]] + [chapter["file"] for part in toc()["parts"] for chapter in part["chapters"]]
    paths = [name + suffix for name in files for suffix in (".ipynb", ".md") if (ROOT / (name + suffix)).exists()]
    missing = [path for path in paths if f"`{path}`" not in readme]
    assert not missing, f"README.md's chapter table does not list {missing}"


def test_readme_and_intro_name_every_part():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").lower()
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8").lower()
    for part in toc()["parts"]:
        name = re.split(r" \(", part["caption"])[0].lower()
        assert name in intro, f"book/intro.md does not name the part {part['caption']!r}"
        first = name.split(",")[0].split(" and ")[0]
        assert first in readme, f"README.md does not name the part {part['caption']!r}"


def test_contributing_points_to_the_design_document():
    assert (ROOT / "docs" / "DESIGN.md").exists()
    assert "docs/DESIGN.md" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_every_gpc_ref_name_the_readme_gives_exists():
    """Issue 31: the README named functions as if ``gpc_ref`` exported them (``gpc_ref.expectation_propagation``
    raised AttributeError). Every ``gpc_ref.<module>.<name>`` it mentions must resolve, and every name it imports
    with ``from gpc_ref import …`` must be exported."""
    import importlib

    import gpc_ref

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    dotted = set(re.findall(r"`(gpc_ref(?:\.[a-z_]+)+)`", readme))
    assert len(dotted) >= 6
    for name in dotted:
        try:
            importlib.import_module(name)  # a module named on its own
        except ModuleNotFoundError:
            module, _, attribute = name.rpartition(".")
            assert hasattr(importlib.import_module(module), attribute), name
    for line in re.findall(r"^from gpc_ref import (.+)$", readme, re.M):
        for name in (n.strip() for n in line.split("#")[0].split(",")):
            assert name in gpc_ref.__all__, name
