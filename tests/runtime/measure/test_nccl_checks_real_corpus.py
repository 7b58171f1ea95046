"""A corrupted or failed run is never read as valid, on every real nccl-tests artefact.

Each nccl artefact of ``golden/measure/real/manifest.yaml`` is altered the three ways a real run
goes wrong and read again with the catalog's ``nccl-bandwidth`` profile; the final status
fields must carry the failure reason docs/measurements.md names, whatever the bandwidth:

* a non-zero ``#wrong`` cell in any one row (out-of-place or in-place half; tables from before
  the ``#wrong`` column carry a floating ``error`` deviation instead and are left out of this
  one) is ``CollectiveDataCorrupted``;
* an ``Out of bounds values : 1 FAILED`` line appended is ``CollectiveDataCorrupted``;
* the table cut before its last row is a failure, and ``CollectiveTableIncomplete`` where the
  artefact itself showed nothing worse (a piece holding only that row leaves no result at all).

Every row of every artefact is tried (not a sample), and the bandwidths are also scaled far up
so a fast run cannot pass a corrupted one off.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import CORRUPTED, INCOMPLETE, REASONS
from tests.goldenharness import GOLDEN

REAL = GOLDEN / "measure" / "real"
ENTRIES = [entry for entry in yaml.safe_load((REAL / "manifest.yaml").read_text(encoding="utf-8"))["entries"] if entry["kind"] == "nccl"]
PROFILE = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")

# One nccl-tests row, anywhere on its line (a launcher tag or timestamp may come first): size,
# count, type, optional redop and root, then per half time, algbw, busbw and the check cell.
_ROW = re.compile(
    r"(?P<size>\d+)\s+\d+\s+[A-Za-z]\w*(?:\s+[A-Za-z]\w*)?(?:\s+-?\d+)?"
    r"\s+[\d.]+\s+(?P<alg>[\d.]+)\s+(?P<bus>[\d.]+)\s+(?P<oop>\S+)"
    r"\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(?P<ip>\S+)\s*$"
)


def _rows(lines: list[str]) -> list[tuple[int, re.Match[str]]]:
    found = []
    for index, line in enumerate(lines):
        match = _ROW.search(line)
        if match is not None:
            found.append((index, match))
    return found


def _reason(text: str) -> str | None:
    failure = status_fields(parse_bandwidth(text, PROFILE), final=True).get("failure")
    return str(failure["reason"]) if failure else None


def _text(entry: dict[str, Any]) -> str:
    return (REAL / str(entry["file"])).read_text(encoding="utf-8")


def _wrong_cells(entry: dict[str, Any]) -> Iterator[tuple[str, str, float]]:
    """Every artefact text with one ``#wrong`` cell set to 7, per row and half, at two bandwidth scales."""
    lines = _text(entry).splitlines()
    for index, match in _rows(lines):
        for half in ("oop", "ip"):
            if not match.group(half).isdigit():
                continue  # N/A (checking off) or a pre-2.13 floating error column
            for scale in (1.0, 1000.0):
                line = lines[index]
                start, end = match.span(half)
                altered = line[:start] + "7".rjust(end - start) + line[end:]
                if scale != 1.0:
                    bus_start, bus_end = match.span("bus")
                    bus = f"{float(match.group('bus')) * scale:.2f}"
                    altered = altered[:bus_start] + bus.rjust(bus_end - bus_start) + altered[bus_end:]
                yield "\n".join([*lines[:index], altered, *lines[index + 1 :]]) + "\n", half, scale


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [str(entry["file"]) for entry in entries]


WITH_WRONG_COLUMN = [e for e in ENTRIES if any(True for _ in _wrong_cells(e))]
WITH_ROWS = [e for e in ENTRIES if _rows(_text(e).splitlines())]


def test_the_properties_cover_most_of_the_corpus() -> None:
    # the row shape above must keep up with the corpus, or the properties would test nothing
    assert len(ENTRIES) >= 25
    assert len(WITH_ROWS) >= 20
    assert len(WITH_WRONG_COLUMN) >= 15


@pytest.mark.parametrize("entry", WITH_WRONG_COLUMN, ids=_ids(WITH_WRONG_COLUMN))
def test_a_nonzero_wrong_cell_in_any_row_fails_as_corrupted(entry: dict[str, Any]) -> None:
    for text, half, scale in _wrong_cells(entry):
        assert _reason(text) == CORRUPTED, (half, scale)


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_an_out_of_bounds_failed_line_fails_as_corrupted(entry: dict[str, Any]) -> None:
    text = _text(entry)
    for trailer in ("# Out of bounds values : 1 FAILED", "Out of bounds values : 1 FAILED"):
        assert _reason(text.rstrip("\n") + "\n" + trailer + "\n") == CORRUPTED, trailer


@pytest.mark.parametrize("entry", WITH_ROWS, ids=_ids(WITH_ROWS))
def test_a_table_cut_before_its_last_row_is_never_valid(entry: dict[str, Any]) -> None:
    text = _text(entry)
    lines = text.splitlines()
    last = _rows(lines)[-1][0]
    cut = "\n".join(lines[:last]) + "\n"
    if not _rows(lines[:last]) and not any("busbw" in line or "(B)" in line for line in lines[:last]):
        # nothing of the table is left: no result at all (NoDataCollected), never a measurement
        assert status_fields(parse_bandwidth(cut, PROFILE), final=True).get("results") is None
        return
    reason = _reason(cut)
    assert reason in REASONS
    if _reason(text) in (None, INCOMPLETE):
        assert reason == INCOMPLETE
