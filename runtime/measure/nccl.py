"""Reads nccl-tests bandwidth tables out of a launcher (or loopback node) log.

``parse_bandwidth`` applies a LogProfile's ``bandwidthResult`` pattern (named groups ``size``,
``algBW``, ``busBW``) to every line, after cutting the kubelet timestamp and any launcher tag
(``[1,0]<stdout>:``, ``0: ``). A row counts only when the size parses as a 64-bit integer, both
bandwidths as finite numbers, and the line goes on past the bus bandwidth field (so a line cut
short or spliced with another rank's output cannot pass a partial number off as a
measurement). Rows of the same message size are averaged (two decimals, as the status writes them).
The optional ``networkTransport`` pattern (named group ``transport``) collects the NCCL networks
the log names (``IB``, ``IBext_v8``, ``Socket``, ``AWS Libfabric``...) as a sorted set: recorded,
never judged.

Besides the numbers, the read says whether the run they came from can be trusted
(:mod:`.nccl_checks`): corrupted data (a non-zero ``#wrong`` cell, ``Out of bounds values : N
FAILED``), a run that failed (a CUDA or NCCL failure line) and a table that never finished each
give ``BandwidthParse.failure``. :func:`status_fields` turns a read into the measurement's
status fields, the failure included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .nccl_checks import (
    RunChecks,
    RunFailure,
    avg_bus_value,
)
from .profile import matched_part, profile_pattern, required_literals, split_line

__all__ = [
    "MAX_TRANSPORTS",
    "MAX_TRANSPORT_LENGTH",
    "transport_names",
    "BandwidthParse",
    "BandwidthRow",
    "RunFailure",
    "format_gbps",
    "max_alg_bandwidth",
    "max_bus_bandwidth",
    "merge_results",
    "parse_bandwidth",
    "results_from_status",
    "status_fields",
]

_INT64_MAX = 2**63 - 1
#: ``status.transport`` bounds (the CRD's): at most 16 names of at most 63 characters
MAX_TRANSPORTS = 16
MAX_TRANSPORT_LENGTH = 63


@dataclass(frozen=True)
class BandwidthRow:
    """Bandwidth at one message size: GB/s averaged over ``samples`` rows, two decimals."""

    size_bytes: int
    alg_bw: float
    bus_bw: float
    samples: int

    def to_status(self) -> dict[str, Any]:
        """The ``status.results[]`` entry of a BandwidthMeasurement."""
        return {
            "sizeBytes": self.size_bytes,
            "algBW": format_gbps(self.alg_bw),
            "busBW": format_gbps(self.bus_bw),
            "samples": self.samples,
        }


@dataclass(frozen=True)
class BandwidthParse:
    """What one read of a log gave."""

    results: tuple[BandwidthRow, ...]
    avg_bus_bandwidth: float | None
    transport: tuple[str, ...]
    #: rows that parsed, before averaging by size
    row_count: int = 0
    #: why the run cannot be trusted, whatever its bandwidth (None: nothing wrong was seen)
    failure: RunFailure | None = None
    #: wrong elements the ``#wrong`` cells add up to (0 when none, or when the table has none)
    wrong_elements: int = 0


def format_gbps(value: float) -> str:
    """A bandwidth as the status writes it: two decimals."""
    return f"{value:.2f}"


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _size(text: str) -> int | None:
    if not text.isdigit():
        return None
    value = int(text)
    return value if value <= _INT64_MAX else None


def _rest_continues(rest: str) -> bool:
    """The match stops at a field boundary and the row goes on (a cut or spliced line does not)."""
    return rest[:1] in (" ", "\t") and not rest.isspace()


class _Rows:
    """Accumulates rows per message size."""

    __slots__ = ("count", "sums")

    def __init__(self) -> None:
        self.sums: dict[int, list[float]] = {}
        self.count = 0

    def add(self, size_text: str | None, alg_text: str | None, bus_text: str | None) -> int | None:
        """Counts the row; its size, or None when a field does not parse."""
        size = _size(size_text or "")
        alg = _finite(alg_text or "")
        bus = _finite(bus_text or "")
        if size is None or alg is None or bus is None:
            return None
        self.count += 1
        acc = self.sums.get(size)
        if acc is None:
            self.sums[size] = [alg, bus, 1.0]
        else:
            acc[0] += alg
            acc[1] += bus
            acc[2] += 1.0
        return size

    def results(self) -> tuple[BandwidthRow, ...]:
        return tuple(
            BandwidthRow(size, round(acc[0] / acc[2], 2), round(acc[1] / acc[2], 2), int(acc[2])) for size, acc in sorted(self.sums.items())
        )


def _row_match(regex: Any, body: str) -> Any:
    """The row pattern's match on a line body, None unless the row goes on past the match."""
    match = regex.search(body)
    return match if match is not None and _rest_continues(body[match.end() :]) else None


def _scan_rows(text: str, regex: Any, rows: _Rows) -> None:
    """Every line of ``text`` through the per-line row rule (no transport, trailer or health)."""
    for raw in text.split("\n"):
        match = _row_match(regex, matched_part(split_line(raw)[1]))
        if match is not None:
            rows.add(match.group("size"), match.group("algBW"), match.group("busBW"))


class _Reader:
    """One pass over the lines: rows, transports, the average trailer and the run's health."""

    def __init__(self, rows_regex: Any, transport_regex: Any | None) -> None:
        self.rows_regex = rows_regex
        self.transport_regex = transport_regex
        literals = required_literals(transport_regex.pattern) if transport_regex is not None else None
        self.transport_literals: tuple[str, ...] = literals or ()
        self.rows = _Rows()
        self.checks = RunChecks()
        self.transports: set[str] = set()
        self.average: float | None = None

    def line(self, raw: str) -> None:
        body = matched_part(split_line(raw)[1])
        match = _row_match(self.rows_regex, body)
        if match is not None:
            size = self.rows.add(match.group("size"), match.group("algBW"), match.group("busBW"))
            if size is not None:
                self.checks.row(body, size)
                return
        if self.transport_regex is not None and (
            not self.transport_literals or any(literal in body for literal in self.transport_literals)
        ):
            found = self.transport_regex.search(body)
            if found is not None and found.group("transport"):
                self.transports.add(found.group("transport"))
        average = avg_bus_value(body)
        if average is not None:
            self.average = average
        self.checks.other(body, average is not None)


def parse_bandwidth(text: str | Iterable[str], profile_spec: Mapping[str, Any]) -> BandwidthParse:
    """Every bandwidth row, the ``# Avg bus bandwidth`` value, the transports and the run's failure.

    ``text`` is the log, or its consecutive pieces (each ending at a line end, as
    :class:`~nvcre.runtime.measure.windows.LogWindows` gives them): one piece is held at a time.
    Each pattern is applied to every line (lines end at newlines) on its own. Raises
    ``PatternError`` when the profile lacks a usable ``bandwidthResult`` pattern (or has a
    ``networkTransport`` pattern without a ``transport`` group); the log itself never raises.
    """
    rows_pattern = profile_pattern(profile_spec, "bandwidthResult", ("size", "algBW", "busBW"))
    assert rows_pattern is not None
    transport = profile_pattern(profile_spec, "networkTransport", ("transport",), optional=True)
    reader = _Reader(rows_pattern.regex, transport.regex if transport is not None else None)
    for piece in [text] if isinstance(text, str) else text:
        for raw in piece.split("\n"):
            reader.line(raw)
    return BandwidthParse(
        results=reader.rows.results(),
        avg_bus_bandwidth=reader.average,
        transport=tuple(sorted(reader.transports)),
        row_count=reader.rows.count,
        failure=reader.checks.failure(),
        wrong_elements=reader.checks.wrong_elements,
    )


def transport_names(names: Iterable[Any]) -> list[str]:
    """The network names to record, sorted, within the CRD's bounds (``status.transport``)."""
    return sorted({str(name) for name in names if name and len(str(name)) <= MAX_TRANSPORT_LENGTH})[:MAX_TRANSPORTS]


def status_fields(parsed: BandwidthParse, *, final: bool = True) -> dict[str, Any]:
    """The BandwidthMeasurement status fields a read gives: ``results``, ``transport``, ``failure``.

    ``{}`` when the log held nothing to record (no row and nothing wrong). ``failure`` is
    ``{reason, message}``; rows a failed run printed stay in ``results`` so the report can show
    them. A failure marked ``final_only`` (a table that has not finished yet, a log that so far
    ends on a warning) counts only on the ``final`` read (the one after the Job ended); a
    provisional read of a running Job leaves it out.
    """
    out: dict[str, Any] = {}
    if parsed.results:
        out["results"] = [row.to_status() for row in parsed.results]
    names = transport_names(parsed.transport)
    if names:
        out["transport"] = names
    failure = parsed.failure
    if failure is not None and (final or not failure.final_only):
        out["failure"] = failure.to_status()
    return out


def merge_results(previous: Iterable[BandwidthRow], new: Iterable[BandwidthRow]) -> tuple[BandwidthRow, ...]:
    """Running averages: each size's earlier average and sample count folded with the new rows."""
    merged: dict[int, BandwidthRow] = {row.size_bytes: row for row in previous}
    for row in new:
        old = merged.get(row.size_bytes)
        if old is None:
            merged[row.size_bytes] = row
            continue
        total = old.samples + row.samples
        merged[row.size_bytes] = BandwidthRow(
            row.size_bytes,
            round((old.alg_bw * old.samples + row.alg_bw * row.samples) / total, 2),
            round((old.bus_bw * old.samples + row.bus_bw * row.samples) / total, 2),
            total,
        )
    return tuple(merged[size] for size in sorted(merged))


def results_from_status(results: Sequence[Mapping[str, Any]] | None) -> tuple[BandwidthRow, ...]:
    """``status.results[]`` back as rows; entries whose numbers do not parse are skipped."""
    rows: list[BandwidthRow] = []
    for entry in results or ():
        if not isinstance(entry, Mapping):
            continue
        size = entry.get("sizeBytes")
        alg = _finite(str(entry.get("algBW", "")))
        bus = _finite(str(entry.get("busBW", "")))
        samples = entry.get("samples", 0)
        if isinstance(size, int) and not isinstance(size, bool) and alg is not None and bus is not None:
            rows.append(BandwidthRow(size, alg, bus, samples if isinstance(samples, int) else 0))
    return tuple(sorted(rows, key=lambda row: row.size_bytes))


def max_bus_bandwidth(results: Iterable[BandwidthRow]) -> float | None:
    """The ``busBandwidthGBps`` threshold value: the highest busBW over all sizes."""
    values = [row.bus_bw for row in results]
    return max(values) if values else None


def max_alg_bandwidth(results: Iterable[BandwidthRow]) -> float | None:
    """The ``algBandwidthGBps`` threshold value: the highest algBW over all sizes."""
    values = [row.alg_bw for row in results]
    return max(values) if values else None
