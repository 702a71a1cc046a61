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
from gpc_ref.reproduction import CONCLUSION_STATUSES
from gpc_ref.reproduction import STATUSES
from gpc_ref.reproduction import YARDSTICKS
from gpc_ref.reproduction import check_yardstick
from gpc_ref.reproduction import glue_name
from gpc_ref.reproduction import read_scoreboard
from gpc_ref.reproduction import record

BOOK = pathlib.Path(__file__).resolve().parents[2] / "book"
SCOREBOARD = BOOK / "reproductions.csv"


def test_record_upserts_sorted_rows_and_validates(tmp_path):
    path = str(tmp_path / "board.csv")
    common = dict(
        protocol="10 splits", status="reproduced", chapter_label="x-chapter", path=path, glue=False, write=True
    )
    assert record("WB98", "Table 1", "crabs errors", paper_value=3, our_value=3.5, **common) == 3.5
    record(
        "GR06",
        "Table 1",
        "Iris error (%)",
        paper_value=4.08,
        our_value=4.2,
        our_error_bar=0.4,
        paper_error_bar=2.16,
        yardstick="se of the mean over splits; paper: sd over splits",
        **common,
    )
    record("WB98", "Table 1", "crabs errors", paper_value=3, our_value=4.0, **common)  # replaces the row
    rows = read_scoreboard(path)
    assert [r["paper"] for r in rows] == ["GR06", "WB98"] and rows[1]["our_value"] == "4.0"
    assert list(rows[0]) == list(COLUMNS) and rows[1]["our_error_bar"] == "" and rows[1]["yardstick"] == ""
    assert rows[0]["paper_error_bar"] == "2.16" and rows[0]["yardstick"].startswith("se of the mean")
    # an error bar needs its yardstick, from the list, and the paper's part exactly when the paper gives one
    with pytest.raises(ValueError, match="yardstick"):
        record("WB98", "T", "q", paper_value=1, our_value=1, our_error_bar=0.5, **common)
    with pytest.raises(ValueError, match="yardstick"):
        record("WB98", "T", "q", paper_value=1, our_value=1, our_error_bar=0.5, yardstick="roughly", **common)
    with pytest.raises(ValueError, match="paper"):
        record(
            "WB98",
            "T",
            "q",
            paper_value=1,
            our_value=1,
            our_error_bar=0.5,
            paper_error_bar=0.2,
            yardstick="binomial sd",
            **common,
        )
    with pytest.raises(ValueError, match="paper_error_bar is None"):
        check_yardstick("binomial sd; paper: sd over splits", paper_error_bar=False)
    assert all(check_yardstick(y, paper_error_bar=False) == y for y in YARDSTICKS)
    # a conclusion (the comparison chapters' call, without the new arguments): no paper value, a standard error
    record("NR08", "Conclusion", "EP's evidence is the closest", paper_value=None, our_value=-0.5,
           our_error_bar=0.1, protocol="toy grid, nats", status="open", chapter_label="x-chapter", path=path,
           glue=False, note="one problem only", write=True)  # fmt: skip
    conclusion = [r for r in read_scoreboard(path) if r["table_or_figure"] == "Conclusion"][0]
    assert conclusion["paper_value"] == "" and conclusion["yardstick"] == "standard error"
    # explained by a paper error: the note must name the errata entry
    with pytest.raises(ValueError, match="errata"):
        record("WB98", "T", "q", paper_value=1, our_value=2, note="a misprint", **{**common, "status":
               "explained: paper error"})  # fmt: skip
    with pytest.raises(ValueError, match="status"):
        record("WB98", "T", "q", paper_value=1, our_value=1, **{**common, "status": "close enough"})
    with pytest.raises(ValueError, match="finite"):
        record("WB98", "T", "q", paper_value=1, our_value=float("nan"), **common)
    with pytest.raises(ValueError, match="protocol"):
        record("WB98", "T", "q", paper_value=1, our_value=1, **{**common, "protocol": " "})
    assert glue_name("GR06", "Table 1", "Iris error (%)") == "repro-gr06-table-1-iris-error"


def test_record_checks_the_committed_row_unless_asked_to_write(tmp_path, monkeypatch):
    path = str(tmp_path / "board.csv")
    common = dict(paper_value=-18.9, our_error_bar=0.02, yardstick="standard error", protocol="one run",
                  status="within error bars", chapter_label="x-chapter", path=path, glue=False)  # fmt: skip
    monkeypatch.setenv("GPC_SCOREBOARD", "write")
    record("KG06", "Table 2", "log Z", our_value=-18.81, **common)
    written = (tmp_path / "board.csv").read_text()
    monkeypatch.delenv("GPC_SCOREBOARD")  # the default: check, write nothing
    # the same row, and a value one unit away in the last stored digit (a rounding boundary on another CPU)
    assert record("KG06", "Table 2", "log Z", our_value=-18.82, **common) == -18.82
    with pytest.raises(ValueError, match="our_value '-18.81'; this run computed '-18.84'"):
        record("KG06", "Table 2", "log Z", our_value=-18.84, **common)
    with pytest.raises(ValueError, match="status"):
        record("KG06", "Table 2", "log Z", our_value=-18.81, **{**common, "status": "open", "note": "x"})
    with pytest.raises(ValueError, match="has no row"):
        record("KG06", "Table 2", "log Z, another", our_value=-18.81, **common)
    assert (tmp_path / "board.csv").read_text() == written
    monkeypatch.setenv("GPC_SCOREBOARD", "always")
    with pytest.raises(ValueError, match="GPC_SCOREBOARD"):
        record("KG06", "Table 2", "log Z", our_value=-18.81, **common)


def test_agrees_at_printed_precision():
    from gpc_ref.reproduction import agrees_at_printed_precision as agree

    assert agree("0.352", "0.353") and agree("0.352", "0.351") and not agree("0.352", "0.354")
    assert agree("3.0e-07", "3.1e-07") and not agree("4e-08", "1e-08") and agree("-0.00", "0.00")
    assert agree("42", "42") and not agree("42", "43") and agree("9.99", "10.00")
    assert agree("-18.8103", "-18.8102") and not agree("-18.8103", "-18.8095")


def test_a_conclusion_earns_its_status_by_the_rule():
    from gpc_ref.reproduction import conclusion_status

    t = 2.262  # ten splits
    # a claimed direction: resolved with its sign, unresolved, resolved against it
    assert conclusion_status(-0.02, 0.005, t, sign=-1) == "supported"
    assert conclusion_status(-0.02, 0.02, t, sign=-1) == "not contradicted"
    assert conclusion_status(+0.02, 0.005, t, sign=-1) == "contradicted"
    # a claimed equivalence within 0.01: the interval inside the margin, straddling it, beyond it
    assert conclusion_status(0.001, 0.002, t, margin=0.01) == "supported"
    assert conclusion_status(0.006, 0.004, t, margin=0.01) == "not contradicted"  # unresolved, yet not shown equal
    assert conclusion_status(0.05, 0.004, t, margin=0.01) == "contradicted"
    with pytest.raises(ValueError, match="exactly one"):
        conclusion_status(0.0, 1.0, t)
    assert set(CONCLUSION_STATUSES).isdisjoint({"reproduced", "within error bars"})


def test_a_conclusion_row_takes_a_conclusion_status(tmp_path):
    common = dict(paper_value=None, our_value=0.1, protocol="p", chapter_label="x-chapter", path=tmp_path / "r.csv",
                  glue=False, write=True)  # fmt: skip
    record("NR08", "Conclusion", "a claim", status="supported", **common)
    with pytest.raises(ValueError, match="status must be one of"):
        record("NR08", "Conclusion", "another claim", status="within error bars", **common)


def test_agreement_statuses():
    from gpc_ref.reproduction import agreement

    assert agreement(0.245, 0.2449, None, resolution=0.0005) == "reproduced"
    assert agreement(3, 6, 1.7) == "within error bars"
    assert agreement(3, 6, 1.4) is None
    assert agreement(68, 66, None) is None
    # the combined error of the difference: 1.4 and the paper's se 0.8 give 1.612, two of which exceed 3
    assert agreement(3, 6, 1.4, paper_error_bar=0.8) == "within error bars"
    # a paper sd over 50 splits enters as sd / sqrt(50): 2.16 / 7.07 = 0.305, so sqrt(0.87² + 0.305²) = 0.922
    assert agreement(4.08, 6.0, 0.87, paper_error_bar=2.16, paper_sample_size=50) is None  # 1.92 > 1.844
    assert agreement(4.08, 5.9, 0.87, paper_error_bar=2.16, paper_sample_size=50) == "within error bars"
    assert agreement(4.08, 6.0, None, paper_error_bar=2.16, paper_sample_size=1) == "within error bars"


def test_combined_error_and_brackets():
    from gpc_ref.reproduction import brackets
    from gpc_ref.reproduction import combined_error

    assert combined_error(0.3, 0.4) == pytest.approx(0.5)
    assert combined_error(0.3, 4.0, paper_sample_size=100) == pytest.approx(0.5)
    assert combined_error(None, None) == 0.0
    with pytest.raises(ValueError, match="non-negative"):
        combined_error(-1.0)
    with pytest.raises(ValueError, match="paper_sample_size"):
        combined_error(1.0, 1.0, paper_sample_size=0)
    assert brackets(3.65, [2.61, 4.12]) and not brackets(34.0, [31.77, 33.44])
    with pytest.raises(ValueError, match="two"):
        brackets(1.0, [1.0])


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
    errata = (BOOK / "errata.md").read_text(encoding="utf-8")
    problems = []
    for row in rows:
        key = (row["chapter_label"], glue_name(row["paper"], row["table_or_figure"], row["quantity"]))
        if row["status"] not in (CONCLUSION_STATUSES if row["table_or_figure"] == "Conclusion" else STATUSES):
            problems.append(f"{key}: status {row['status']!r}")
        elif row["paper_value"] == "" and row["table_or_figure"] != "Conclusion":
            problems.append(f"{key}: no paper value (only a Conclusion row may have none)")
        elif (row["our_error_bar"] or row["paper_error_bar"]) and not row["yardstick"]:
            problems.append(f"{key}: an error bar without its yardstick")
        elif row["yardstick"] and not _yardstick_ok(row):
            problems.append(f"{key}: yardstick {row['yardstick']!r} is not one of YARDSTICKS (; paper: ...)")
        elif row["status"] == "open" and not row["note"].strip():
            problems.append(f"{key}: an open row needs a note with the experiments tried")
        elif row["status"] == "explained: paper error" and not _errata_labels(row["note"], errata):
            problems.append(f"{key}: 'explained: paper error' needs a note naming an errata label of errata.md")
        elif key not in glued:
            problems.append(f"{key}: no glued value in the chapter labelled {row['chapter_label']}")
        elif float(glued[key]) != float(row["our_value"]):
            problems.append(f"{key}: file {row['our_value']} but the chapter computes {glued[key]}")
    assert not problems, "\n".join(problems)


def _yardstick_ok(row):
    try:
        check_yardstick(row["yardstick"], paper_error_bar=row["paper_error_bar"] != "")
    except ValueError:
        return False
    return True


def _errata_labels(note, errata):
    """The labels ``errata-...`` that the note names and that errata.md defines."""
    import re

    return [label for label in re.findall(r"errata-[a-z0-9-]*[a-z0-9]", note) if f"({label})=" in errata]


def test_save_and_load_results_carry_provenance(tmp_path):
    from gpc_ref.reproduction import load_results
    from gpc_ref.reproduction import save_results

    path = save_results("demo_run", {"seeds": [0, 1], "error": 0.25}, directory=str(tmp_path), seconds=12.34)
    payload, description = load_results("demo_run", directory=str(tmp_path))
    assert payload == {"seeds": [0, 1], "error": 0.25}
    with open(path, encoding="utf-8") as handle:
        origin = json.load(handle)["provenance"]
    assert set(origin) == {"command", "commit", "dirty", "date", "seconds", "machine", "versions", "blas",
                           "floating_point"}  # fmt: skip
    assert origin["seconds"] == 12.3 and "gpc_ref" in origin["versions"]
    # the floating-point environment: numpy's SIMD dispatch and BLAS's core type decide the last bits
    assert "SIMD" in origin["floating_point"] and "BLAS core type" in origin["floating_point"]
    assert "demo_run.json" in description and "12 s" in description and "SIMD" in description
    with pytest.raises(ValueError, match="provenance"):
        save_results("x", {"provenance": 1}, directory=str(tmp_path))
    with pytest.raises(ValueError, match="name"):
        save_results("../x", {}, directory=str(tmp_path))
