"""The reproduction scoreboard: every paper number the book reproduces, written by the code that reproduces it.

Each chapter calls :func:`record` once per paper number it reruns. The call

1. with ``GPC_SCOREBOARD=write`` in the environment (``make execute`` and ``make reproduce`` set it), upserts
   the row ``(paper, table_or_figure, quantity)`` of ``reproductions.csv`` (in the current directory: the
   book's notebooks run in ``book/``) with the chapter's value, so that the file is never typed by hand;
   otherwise (``make test``, a reader running a chapter) it writes nothing and checks the committed row
   instead: the same text, and numbers that agree at the precision the row stores
   (:func:`agrees_at_printed_precision`), or a ``ValueError`` that says what moved;
2. glues the value under the name :func:`glue_name` of the row, so that the value is stored in the
   notebook's outputs, which the notebook check compares with what the code computes today.

``tests/results/test_reproductions.py`` then checks every row of the file against the glued value in its
chapter's stored outputs, and the Comparison part renders the file as the scoreboard page.

Columns: :data:`COLUMNS`. ``status`` is one of :data:`STATUSES`:

- ``"reproduced"``: equal to the paper's number to the precision it prints;
- ``"within error bars"``: the difference is at most two combined error bars (:func:`agreement`);
- ``"explained: paper error"``: the paper's number follows from an error in the paper, shown numerically by an
  entry of the book's errata page that the note links (``errata-...``);
- ``"explained: protocol not stated"``: under the protocols the paper leaves open, our values bracket the
  paper's (:func:`brackets`), and the chapter shows both;
- ``"explained: mechanism"``: an experiment in the chapter changes one thing and isolates the cause;
- ``"open"``: none of these; the note lists the experiments tried.

A ``"Conclusion"`` row (a published conclusion the book checks) has a status of its own, one of
:data:`CONCLUSION_STATUSES`, earned by :func:`conclusion_status` from a difference and its standard error under
the book's one rule (resolved: abs(mean) > t_{0.975, J−1} · se, :func:`gpc_ref.metrics.paired_difference`):

- ``"supported"``: a claimed direction is resolved with its sign, or a claimed equivalence holds with its stated
  margin (the whole interval mean ± t · se inside ± margin);
- ``"not contradicted"``: nothing is resolved against the claim, but it is not established either (an unresolved
  difference, or an equivalence whose interval reaches past the margin): failing to reject is not support;
- ``"contradicted"``: resolved against the claim (the other sign, or a difference resolved beyond the margin);
- ``"open"``: none of these can be said (the note says why).

``yardstick`` says what the error bars are (:data:`YARDSTICKS`); ``paper_error_bar`` is the paper's own, as it
prints it, or empty. Rows whose ``table_or_figure`` is ``"Conclusion"`` record a published conclusion that the
book checks (``paper_value`` None); the scoreboard page lists them in a table of their own.

Paper-scale runs and timings, which a chapter cannot recompute within its time limit or print
deterministically, are stored by :func:`save_results` as ``book/results/<name>.json`` with their
:func:`provenance` (command, commit, date, seconds, machine, versions, BLAS threading); the chapters
print that provenance beside every number they take from such a file.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence

__all__ = [
    "COLUMNS",
    "STATUSES",
    "CONCLUSION_STATUSES",
    "conclusion_status",
    "YARDSTICKS",
    "agrees_at_printed_precision",
    "check_yardstick",
    "combined_error",
    "brackets",
    "glue_name",
    "read_scoreboard",
    "agreement",
    "record",
    "provenance",
    "save_results",
    "load_results",
]

COLUMNS = ("paper", "table_or_figure", "quantity", "paper_value", "paper_error_bar", "our_value", "our_error_bar",
           "yardstick", "protocol", "status", "chapter_label", "note")  # fmt: skip
STATUSES = ("reproduced", "within error bars", "explained: paper error", "explained: protocol not stated", "explained: mechanism", "open")  # fmt: skip
CONCLUSION_STATUSES = ("supported", "not contradicted", "contradicted", "open")
# What an error bar is. ``yardstick`` is one of these for ours, followed by ``"; paper: "`` and one of these for the
# paper's when the paper gives an error bar, e.g. "se of the mean over splits; paper: sd over splits".
YARDSTICKS = ("binomial sd", "binomial se", "sd over splits", "se of the mean over splits", "sd over draws",
              "se of the mean over draws", "se of the mean over folds", "se of the mean over starts",
              "standard error")  # fmt: skip


def glue_name(paper: str, table_or_figure: str, quantity: str) -> str:
    """The glue name of a row: ``repro-`` and a slug of its key (letters, digits and hyphens).

    Parameters
    ----------
    paper, table_or_figure, quantity : str
        The row's key.

    Returns
    -------
    str
    """
    slug = re.sub(r"[^a-z0-9]+", "-", f"{paper} {table_or_figure} {quantity}".lower()).strip("-")
    return f"repro-{slug}"


def read_scoreboard(path: str = "reproductions.csv") -> list[dict[str, str]]:
    """The rows of the scoreboard file (an empty list if it does not exist yet).

    Parameters
    ----------
    path : str
        The CSV file.

    Returns
    -------
    list of dict
        One dict per row, keyed by :data:`COLUMNS`, values as strings.
    """
    if not os.path.exists(path):
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        # a file written before a column existed reads that column as empty
        return [{column: row.get(column) or "" for column in COLUMNS} for row in csv.DictReader(handle)]


def check_yardstick(yardstick: str, *, paper_error_bar: bool) -> str:
    """Validate a ``yardstick``: one of :data:`YARDSTICKS` for our error bar, then ``"; paper: "`` and one for the
    paper's exactly when the paper gives one.

    Parameters
    ----------
    yardstick : str
        E.g. ``"binomial sd"`` or ``"se of the mean over splits; paper: sd over splits"``.
    paper_error_bar : bool
        Whether the row has a paper error bar.

    Returns
    -------
    str
        ``yardstick``, unchanged.
    """
    if not isinstance(yardstick, str):
        raise ValueError(f"yardstick must be a string; got {yardstick!r}")
    ours, _, paper = yardstick.partition("; paper: ")
    if ours not in YARDSTICKS:
        raise ValueError(f"yardstick must start with one of {YARDSTICKS}; got {yardstick!r}")
    if paper_error_bar and paper not in YARDSTICKS:
        raise ValueError(f"with a paper_error_bar, yardstick must end with '; paper: ' and one of {YARDSTICKS}; "
                         f"got {yardstick!r}")  # fmt: skip
    if not paper_error_bar and paper:
        raise ValueError(f"yardstick names the paper's error bar but paper_error_bar is None; got {yardstick!r}")
    return yardstick


def combined_error(our_error_bar: float | None, paper_error_bar: float | None = None, *,
                   paper_sample_size: int | None = None) -> float:  # fmt: skip
    """The standard error of the difference between our estimate and the paper's.

    ``sqrt(ours² + paper's²)``: the two estimates are independent (different runs, splits or draws), so their
    variances add. The paper's bar enters as a standard error of its number: a standard error as printed, or,
    when the paper prints a standard deviation over ``paper_sample_size`` splits or draws of which its number is
    the mean, that sd divided by ``sqrt(paper_sample_size)``. Our bar is used as given: a standard error of our
    mean, or, when the paper's number is one split or one draw, the spread (sd) of single splits or draws, which
    is the yardstick for one of them.

    Parameters
    ----------
    our_error_bar, paper_error_bar : float or None
        None counts as zero.
    paper_sample_size : int, optional
        The number of splits or draws over which the paper's ``paper_error_bar`` is a standard deviation.

    Returns
    -------
    float
    """
    ours = 0.0 if our_error_bar is None else float(our_error_bar)
    paper = 0.0 if paper_error_bar is None else float(paper_error_bar)
    if ours < 0 or paper < 0 or not (math.isfinite(ours) and math.isfinite(paper)):
        raise ValueError(f"error bars must be finite and non-negative; got {our_error_bar!r}, {paper_error_bar!r}")
    if paper_sample_size is not None:
        if int(paper_sample_size) < 1:
            raise ValueError(f"paper_sample_size must be a positive integer; got {paper_sample_size!r}")
        paper /= math.sqrt(int(paper_sample_size))
    return math.hypot(ours, paper)


def brackets(paper_value: float, our_values: Sequence[float]) -> bool:
    """Whether our values under the protocols the paper leaves open bracket the paper's value.

    The test of the status ``"explained: protocol not stated"``: the paper's number lies between the smallest
    and the largest of our numbers, one per reading of the protocol (e.g. two training-set sizes), so a reading
    the paper allows gives it.

    Parameters
    ----------
    paper_value : float
    our_values : sequence of float
        At least two: ours under each protocol the paper leaves open.

    Returns
    -------
    bool
    """
    values = [float(value) for value in our_values]
    if len(values) < 2:
        raise ValueError(f"our_values must hold at least two values, one per protocol; got {our_values!r}")
    return min(values) <= float(paper_value) <= max(values)


def agreement(paper_value: float, our_value: float, our_error_bar: float | None, *,
              paper_error_bar: float | None = None, paper_sample_size: int | None = None,
              resolution: float = 0.0) -> str | None:  # fmt: skip
    """The status a comparison earns by itself, or None when it needs an explanation.

    ``"reproduced"`` when the two values differ by at most ``resolution`` (the precision the paper
    prints, e.g. 0.005 for a rate given to two decimals, 0 for counts); ``"within error bars"`` when
    they differ by at most two combined error bars, :func:`combined_error` (ours and the paper's as a
    standard error of its number); otherwise None, and the chapter must run the experiment that explains
    the gap (one of the ``"explained: ..."`` statuses) or record it as ``"open"``.

    Parameters
    ----------
    paper_value, our_value : float
        The paper's number and ours.
    our_error_bar : float or None
        Ours: a standard error (binomial, or of a mean over splits), or the sd over splits or draws when
        the paper's number is a single split or draw; None if there is none.
    paper_error_bar : float, optional
        The paper's own error bar, as printed: a standard error, or a standard deviation over
        ``paper_sample_size`` splits or draws.
    paper_sample_size : int, optional
        Give it when ``paper_error_bar`` is a standard deviation over that many splits or draws (it is then
        divided by the square root).
    resolution : float
        Half the last printed digit of the paper's number, or 0.

    Returns
    -------
    str or None
    """
    difference = abs(float(paper_value) - float(our_value))
    if difference <= resolution:
        return "reproduced"
    if our_error_bar is None and paper_error_bar is None:
        return None
    if difference <= 2.0 * combined_error(our_error_bar, paper_error_bar, paper_sample_size=paper_sample_size):
        return "within error bars"
    return None


def _number(value, name):
    if value is None or value == "":
        return ""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number or None; got {value!r}")
    return repr(value)


def _decimal_unit(text: str) -> float | None:
    mantissa, _, exponent = text.strip().lower().partition("e")
    if "." not in mantissa and not exponent:
        return None
    return 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))


def agrees_at_printed_precision(stored: str, fresh: str) -> bool:
    """Whether two printed numbers agree to one unit in the last digit they are printed with.

    ``"0.352"`` accepts 0.351 to 0.353 and ``"3.0e-07"`` 2.9e-07 to 3.1e-07 (a value on a rounding boundary
    may round either way on another CPU); integers (no decimal point, no exponent) must be equal. The rule
    by which the book's tests compare stored numbers with fresh ones (docs/DESIGN.md, "Tests").

    Parameters
    ----------
    stored, fresh : str
        The two numbers as printed.

    Returns
    -------
    bool
    """
    units = [unit for unit in (_decimal_unit(stored), _decimal_unit(fresh)) if unit is not None]
    a, b = float(stored.replace("\u2212", "-")), float(fresh.replace("\u2212", "-"))
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if not units:
        return a == b
    return abs(a - b) <= max(units) * (1 + 1e-9)


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock on ``path + ".lock"`` while the scoreboard is read and rewritten (POSIX; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: execute chapters one at a time there
        yield
        return
    with open(f"{path}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _scoreboard_writes(write: bool | None) -> bool:
    if write is not None:
        return bool(write)
    mode = os.environ.get("GPC_SCOREBOARD", "check")
    if mode not in ("check", "write"):
        raise ValueError(f"the environment variable GPC_SCOREBOARD must be 'check' or 'write'; got {mode!r}")
    return mode == "write"


def _check_committed_row(row: dict[str, str], path: str) -> None:
    key = (row["paper"], row["table_or_figure"], row["quantity"])
    committed = [r for r in read_scoreboard(path) if (r["paper"], r["table_or_figure"], r["quantity"]) == key]
    how = "re-run the chapter with `make execute` (GPC_SCOREBOARD=write) if the change is intended"
    if not committed:
        raise ValueError(f"{path} has no row {key}; {how}")
    for column in COLUMNS:
        old, new = committed[0][column], row[column]
        if column in ("our_value", "our_error_bar") and old and new:
            same = agrees_at_printed_precision(old, new)
        else:
            same = old == new
        if not same:
            raise ValueError(
                f"the committed row {key} of {path} has {column} {old!r}; this run computed {new!r}; {how}"
            )


def conclusion_status(mean: float, std_error: float, t_critical: float, *, sign: int | None = None,
                      margin: float | None = None) -> str:  # fmt: skip
    """The status a published conclusion earns from a difference (ours minus what the claim compares with).

    Parameters
    ----------
    mean, std_error, t_critical : float
        The difference, its standard error and the critical value of the rule (``PairedDifference`` fields).
    sign, margin : int or None, float or None
        Exactly one: the claimed direction (+1: the difference is positive) or, for a claim that two things are
        equally good, the margin within which a difference counts as negligible (in the difference's units).

    Returns
    -------
    str
        One of :data:`CONCLUSION_STATUSES` except ``"open"`` (module docstring).
    """
    if (sign is None) == (margin is None):
        raise ValueError("give exactly one of sign (a claimed direction) and margin (a claimed equivalence)")
    half_width = float(t_critical) * float(std_error)
    if sign is not None:
        if sign not in (-1, 1):
            raise ValueError(f"sign must be +1 or -1; got {sign!r}")
        if abs(mean) <= half_width:
            return "not contradicted"
        return "supported" if math.copysign(1.0, mean) == sign else "contradicted"
    if margin <= 0:
        raise ValueError(f"margin must be positive; got {margin!r}")
    if abs(mean) + half_width <= margin:
        return "supported"
    return "contradicted" if abs(mean) - half_width > margin else "not contradicted"


def record(paper: str, table_or_figure: str, quantity: str, *, paper_value: float | None, our_value: float,
           our_error_bar: float | None = None, protocol: str, status: str, chapter_label: str, note: str = "",
           paper_error_bar: float | None = None, yardstick: str | None = None, path: str = "reproductions.csv",
           glue: bool = True, write: bool | None = None) -> float:  # fmt: skip
    """Write one reproduced number to the scoreboard (or check it against the committed row) and glue it.

    Parameters
    ----------
    paper, table_or_figure, quantity : str
        The source's citation key as in references.bib (``"GR06"``), where it reports the number (``"Table 1"``)
        and what it is (``"Iris, VB test error (%)"``, unique within the paper's table).
    paper_value, paper_error_bar : float or None
        The paper's number and its own error bar as it prints it (None where it gives none, e.g. only a figure).
    our_value, our_error_bar : float, float or None
        The chapter's number, computed (round it to what is meaningful first), and its error bar (:func:`agreement`).
    protocol, chapter_label : str
        How ours was obtained, briefly (splits, seeds, settings); the MyST label of the chapter/section computing it.
    status, note : str
        One of :data:`STATUSES` (``"Conclusion"`` rows: :data:`CONCLUSION_STATUSES`); the note: why a difference remains
        (for ``"explained: paper error"`` the errata entry's label ``errata-...``; for ``"open"``: what was tried).
    yardstick : str, optional
        What the error bars are (:func:`check_yardstick`), e.g. ``"binomial sd"``; required with an error bar, except
        on a ``"Conclusion"`` row, whose error bar is a standard error by default (``"standard error"``).
    path, glue : str, bool
        The CSV file (default ``reproductions.csv`` in the current directory); whether to also glue ``our_value``
        under :func:`glue_name` (needs myst_nb, as in the book's notebooks).
    write : bool, optional
        Write the row (True) or check it against the committed one (False: a row that moved is an error); default True
        exactly when the environment has ``GPC_SCOREBOARD=write``, as under ``make execute`` and ``make reproduce``.

    Returns
    -------
    float
        ``our_value``.
    """
    allowed = CONCLUSION_STATUSES if table_or_figure == "Conclusion" else STATUSES
    if status not in allowed:
        raise ValueError(f"status must be one of {allowed} for a {'Conclusion' if allowed is CONCLUSION_STATUSES else 'paper number'} "
                         f"row; got {status!r}")  # fmt: skip
    if status == "explained: paper error" and "errata-" not in note:
        raise ValueError(f"status 'explained: paper error' needs the errata entry's label (errata-...) in the note; "
                         f"got {note!r}")  # fmt: skip
    if yardstick is None and table_or_figure == "Conclusion" and paper_error_bar is None:
        yardstick = "standard error" if our_error_bar is not None else ""
    elif yardstick is None:
        if our_error_bar is not None or paper_error_bar is not None:
            raise ValueError("yardstick is required when an error bar is given: one of " + repr(YARDSTICKS))
        yardstick = ""
    else:
        check_yardstick(yardstick, paper_error_bar=paper_error_bar is not None)
    for name, text in (("paper", paper), ("table_or_figure", table_or_figure), ("quantity", quantity),
                       ("protocol", protocol), ("chapter_label", chapter_label)):  # fmt: skip
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty string; got {text!r}")
    row = {"paper": paper, "table_or_figure": table_or_figure, "quantity": quantity,
           "paper_value": _number(paper_value, "paper_value"),
           "paper_error_bar": _number(paper_error_bar, "paper_error_bar"), "our_value": _number(our_value, "our_value"),
           "our_error_bar": _number(our_error_bar, "our_error_bar"), "yardstick": yardstick, "protocol": protocol,
           "status": status, "chapter_label": chapter_label, "note": note}  # fmt: skip
    if row["our_value"] == "":
        raise ValueError("our_value must be a number")
    if _scoreboard_writes(write):
        key = (paper, table_or_figure, quantity)
        with _locked(path):  # chapters executed side by side update the same file
            rows = [r for r in read_scoreboard(path) if (r["paper"], r["table_or_figure"], r["quantity"]) != key]
            rows.append(row)
            rows.sort(key=lambda r: (r["paper"], r["table_or_figure"], r["quantity"]))
            with open(path, "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
                writer.writeheader()
                writer.writerows(rows)
    else:
        _check_committed_row(row, path)
    value = float(our_value)
    if glue:
        from myst_nb import glue as myst_glue

        myst_glue(glue_name(paper, table_or_figure, quantity), value, display=False)
    return value


def _git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance(seconds: float | None = None) -> dict[str, object]:
    """Where and from what a stored result came.

    Parameters
    ----------
    seconds : float, optional
        The run's wall-clock time.

    Returns
    -------
    dict
        ``command``, ``commit``, ``dirty`` (gpc_ref, benchmarks or reproduce edited since the commit),
        ``date`` (UTC), ``seconds``, ``machine``, ``versions``, ``blas``, ``floating_point`` (numpy's SIMD
        dispatch and BLAS's core type: what decides the last bits, :func:`gpc_ref.threads.describe_floating_point_environment`).
    """
    import numpy as np
    import scipy

    from . import __version__
    from .threads import describe_blas_threading
    from .threads import describe_floating_point_environment

    return {
        "command": " ".join(["python", *sys.argv]),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": _git("status", "--porcelain", "--untracked-files=no", "gpc_ref", "benchmarks", "reproduce") != "",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": None if seconds is None else round(float(seconds), 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "versions": f"gpc_ref {__version__}, numpy {np.__version__}, scipy {scipy.__version__}",
        "blas": describe_blas_threading(),
        "floating_point": describe_floating_point_environment(),
    }


def save_results(name: str, payload: dict, *, directory: str, seconds: float | None = None) -> str:
    """Write ``<directory>/<name>.json``: ``payload`` (JSON-able) under its :func:`provenance`.

    Parameters
    ----------
    name : str
        File name without ``.json`` (letters, digits, ``_`` and ``-``).
    payload : dict
        The numbers (and the seeds that produced them).
    directory : str
        Usually the book's ``results`` directory.
    seconds : float, optional
        The run's wall-clock time, for the provenance.

    Returns
    -------
    str
        The path written.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError(f"name must be letters, digits, '_' or '-'; got {name!r}")
    if "provenance" in payload:
        raise ValueError("payload must not have a 'provenance' key: save_results adds it")
    os.makedirs(directory, exist_ok=True)
    path = os.path.normpath(os.path.join(directory, f"{name}.json"))
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"provenance": provenance(seconds), **payload}, handle, indent=1)
        handle.write("\n")
    return path


def load_results(name: str, directory: str = "results") -> tuple[dict, str]:
    """A stored result and one line describing its provenance, for a chapter to print beside its numbers.

    Parameters
    ----------
    name : str
        File name without ``.json``.
    directory : str
        Default ``results`` (the chapters run in ``book/``).

    Returns
    -------
    payload : dict
        The stored numbers, with ``provenance`` removed.
    description : str
        E.g. ``"results/x.json: python reproduce/x.py at 1a2b3c4 (2026-11-23 12:00 UTC), 812 s, x86_64, 2 cores…"``.
    """
    path = os.path.join(directory, f"{name}.json")
    with open(path, encoding="utf-8") as handle:
        payload = json.load(handle)
    origin = payload.pop("provenance")
    seconds = "" if origin.get("seconds") is None else f", {origin['seconds']:.0f} s"
    edited = " (with uncommitted changes)" if origin.get("dirty") else ""
    description = (f"{path}: {origin['command']} at {origin['commit'][:7]}{edited} ({origin['date']}){seconds}, "
                   f"{origin['machine']}; {origin['versions']}")  # fmt: skip
    if origin.get("floating_point"):  # stored since the results carry it
        description += f"; {origin['floating_point']}"
    return payload, description
