"""The which-method guide (book/which_method.md) backs every recommendation with a link to its evidence.

Each numbered item of "The short version", each bullet of "A flow" that recommends a method (names one in
bold), and each row of the table must link a labelled figure, table or section ({numref}, {ref} or {prf:ref}).
The book build (warnings are errors) then checks that every linked label exists.
"""

import pathlib
import re

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "book" / "which_method.md"
LINK = re.compile(r"\{(?:numref|ref|prf:ref)\}`[^`]+`")


def section(title):
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_every_short_recommendation_links_its_evidence():
    items = re.split(r"\n(?=\d+\. )", section("The short version"))[1:]
    assert len(items) >= 5
    unlinked = [item.split("\n")[0][:60] for item in items if not LINK.search(item)]
    assert not unlinked, f"recommendations without a link to their evidence: {unlinked}"


def test_every_recommendation_of_the_flow_links_its_evidence():
    bullets = re.split(r"\n(?=\s*- )", section("A flow"))[1:]
    recommending = [bullet for bullet in bullets if "**" in bullet]
    assert len(recommending) >= 4
    unlinked = [bullet.strip()[:60] for bullet in recommending if not LINK.search(bullet)]
    assert not unlinked, f"flow recommendations without a link to their evidence: {unlinked}"


def test_every_row_of_the_table_says_where_it_is_shown():
    rows = [line for line in section("The table").splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].rstrip(" |").endswith("where shown")
    unlinked = [row.split("|")[1].strip() for row in rows[1:] if not LINK.search(row.split("|")[-2])]
    assert not unlinked, f"table rows whose 'where shown' cell links nothing: {unlinked}"
