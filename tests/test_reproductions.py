"""The scoreboard book/reproductions.csv: written by gpc_ref.reproduction.record, checked against the chapters.

Every row's ``our_value`` must equal the value its chapter glued under the row's glue name in the
chapter's stored outputs (nbval proves those outputs are what the code computes today), so a typed or
stale number cannot hide in the file.
"""

import csv
import json
import pathlib

import pytest

from gpc_ref.reproduction import COLUMNS
from gpc_ref.reproduction import STATUSES
from gpc_ref.reproduction import glue_name
from gpc_ref.reproduction import read_scoreboard
from gpc_ref.reproduction import record

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
SCOREBOARD = BOOK / "reproductions.csv"


def test_record_upserts_sorted_rows_and_validates(tmp_path):
    path = str(tmp_path / "board.csv")
    common = dict(protocol="10 splits", status="reproduced", chapter_label="x-chapter", path=path, glue=False)
    assert record("WB98", "Table 1", "crabs errors", paper_value=3, our_value=3.5, **common) == 3.5
    record("GR06", "Table 1", "Iris error (%)", paper_value=4.08, our_value=4.2, our_error_bar=0.4, **common)
    record("WB98", "Table 1", "crabs errors", paper_value=3, our_value=4.0, **common)  # replaces the row
    rows = read_scoreboard(path)
    assert [r["paper"] for r in rows] == ["GR06", "WB98"] and rows[1]["our_value"] == "4.0"
    assert list(rows[0]) == list(COLUMNS) and rows[1]["our_error_bar"] == ""
    with pytest.raises(ValueError, match="status"):
        record("WB98", "T", "q", paper_value=1, our_value=1, **{**common, "status": "close enough"})
    with pytest.raises(ValueError, match="finite"):
        record("WB98", "T", "q", paper_value=1, our_value=float("nan"), **common)
    with pytest.raises(ValueError, match="protocol"):
        record("WB98", "T", "q", paper_value=1, our_value=1, **{**common, "protocol": " "})
    assert glue_name("GR06", "Table 1", "Iris error (%)") == "repro-gr06-table-1-iris-error"


def test_agreement_statuses():
    from gpc_ref.reproduction import agreement

    assert agreement(0.245, 0.2449, None, resolution=0.0005) == "reproduced"
    assert agreement(3, 6, 1.7) == "within error bars"
    assert agreement(3, 6, 1.4) is None
    assert agreement(68, 66, None) is None


def _glued_values():
    """{(chapter label, glue name): the glued text/plain} over every notebook's stored outputs."""
    found = {}
    for notebook in BOOK.glob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        labels = {line.strip()[1:-2] for cell in cells if cell["cell_type"] == "markdown"
                  for line in "".join(cell["source"]).splitlines() if line.strip().startswith("(")
                  and line.strip().endswith(")=")}  # fmt: skip
        for cell in cells:
            for output in cell.get("outputs", []):
                name = output.get("metadata", {}).get("scrapbook", {}).get("name", "")
                if name.startswith("repro-"):
                    # glue(..., display=False) stores the value under papermill's record mime type
                    data = output["data"]
                    value = data.get("text/plain", data.get("application/papermill.record/text/plain"))
                    for label in labels:
                        found[(label, name)] = value
    return found


@pytest.mark.skipif(not SCOREBOARD.exists(), reason="no scoreboard yet")
def test_every_row_is_what_its_chapter_computes():
    with open(SCOREBOARD, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == COLUMNS
        rows = list(reader)
    glued = _glued_values()
    problems = []
    for row in rows:
        key = (row["chapter_label"], glue_name(row["paper"], row["table_or_figure"], row["quantity"]))
        if row["status"] not in STATUSES:
            problems.append(f"{key}: status {row['status']!r}")
        elif key not in glued:
            problems.append(f"{key}: no glued value in the chapter labelled {row['chapter_label']}")
        elif float(glued[key]) != float(row["our_value"]):
            problems.append(f"{key}: file {row['our_value']} but the chapter computes {glued[key]}")
    assert not problems, "\n".join(problems)


def test_save_and_load_results_carry_provenance(tmp_path):
    from gpc_ref.reproduction import load_results
    from gpc_ref.reproduction import save_results

    path = save_results("demo_run", {"seeds": [0, 1], "error": 0.25}, directory=str(tmp_path), seconds=12.34)
    payload, description = load_results("demo_run", directory=str(tmp_path))
    assert payload == {"seeds": [0, 1], "error": 0.25}
    with open(path, encoding="utf-8") as handle:
        origin = json.load(handle)["provenance"]
    assert set(origin) == {"command", "commit", "dirty", "date", "seconds", "machine", "versions", "blas"}
    assert origin["seconds"] == 12.3 and "gpc_ref" in origin["versions"]
    assert "demo_run.json" in description and "12 s" in description
    with pytest.raises(ValueError, match="provenance"):
        save_results("x", {"provenance": 1}, directory=str(tmp_path))
    with pytest.raises(ValueError, match="name"):
        save_results("../x", {}, directory=str(tmp_path))
