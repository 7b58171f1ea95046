"""Reads nccl-tests bandwidth tables out of a launcher (or loopback node) log.

``parse_bandwidth`` applies a LogProfile's ``bandwidthResult`` pattern (named groups ``size``,
``algBW``, ``busBW``) to every line, after cutting the kubelet timestamp prefix when there is one.
A row counts only when the size parses as a 64-bit integer, both bandwidths as finite
numbers, and the line goes on past the bus bandwidth field (so a line cut short or spliced
with another rank's output cannot pass a partial number off as a measurement). Rows of the same message size are averaged (two decimals, as the status writes them).
The optional ``networkTransport`` pattern (named group ``transport``) collects the NCCL networks
the log names (``IB``, ``Socket``, ``Libfabric``...) as a sorted set: recorded, never judged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from .profile import matched_part, profile_pattern, required_literals, split_kubelet_timestamp

__all__ = [
    "BandwidthParse",
    "BandwidthRow",
    "format_gbps",
    "max_alg_bandwidth",
    "max_bus_bandwidth",
    "merge_results",
    "parse_bandwidth",
    "results_from_status",
]

_INT64_MAX = 2**63 - 1
_AVG_LITERAL = "Avg bus bandwidth"
_AVG_BUS = re2.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*$")


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


def _row_continues(body: str, end: int) -> bool:
    """The match stops at a field boundary and the row goes on (a cut or spliced line does not)."""
    return _rest_continues(body[end:])


def _rest_continues(rest: str) -> bool:
    return rest[:1] in (" ", "\t") and not rest.isspace()


class _Rows:
    """Accumulates rows per message size."""

    __slots__ = ("count", "sums")

    def __init__(self) -> None:
        self.sums: dict[int, list[float]] = {}
        self.count = 0

    def add(self, size_text: str | None, alg_text: str | None, bus_text: str | None) -> None:
        size = _size(size_text or "")
        alg = _finite(alg_text or "")
        bus = _finite(bus_text or "")
        if size is None or alg is None or bus is None:
            return
        self.count += 1
        acc = self.sums.get(size)
        if acc is None:
            self.sums[size] = [alg, bus, 1.0]
        else:
            acc[0] += alg
            acc[1] += bus
            acc[2] += 1.0

    def line(self, regex: Any, raw: str) -> None:
        """The exact per-line rule: cut the kubelet prefix, match, require the row to go on."""
        body = matched_part(split_kubelet_timestamp(raw)[1])
        match = regex.search(body)
        if match is not None and _row_continues(body, match.end()):
            self.add(match.group("size"), match.group("algBW"), match.group("busBW"))

    def results(self) -> tuple[BandwidthRow, ...]:
        return tuple(
            BandwidthRow(size, round(acc[0] / acc[2], 2), round(acc[1] / acc[2], 2), int(acc[2])) for size, acc in sorted(self.sums.items())
        )


def _scan_rows(text: str, regex: Any, rows: _Rows) -> None:
    """Every line through the per-line rule."""
    for raw in text.split("\n"):
        rows.line(regex, raw)


def _lines_containing(text: str, literals: tuple[str, ...]) -> list[str]:
    """Every line (split at newlines) that contains one of ``literals``, in order."""
    starts: set[int] = set()
    for literal in literals:
        pos = text.find(literal)
        while pos != -1:
            start = text.rfind("\n", 0, pos) + 1
            starts.add(start)
            end = text.find("\n", pos)
            if end == -1:
                break
            pos = text.find(literal, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start : end if end != -1 else len(text)])
    return lines


def _transports(text: str, regex: Any, pattern_text: str) -> set[str]:
    literals = required_literals(pattern_text)
    lines = _lines_containing(text, literals) if literals else text.split("\n")
    found: set[str] = set()
    for raw in lines:
        match = regex.search(matched_part(split_kubelet_timestamp(raw)[1]))
        if match is not None and match.group("transport"):
            found.add(match.group("transport"))
    return found


def _avg_bus(text: str) -> float | None:
    """The last valid ``# Avg bus bandwidth`` value."""
    pos = text.rfind(_AVG_LITERAL)
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        body = matched_part(split_kubelet_timestamp(text[start : end if end != -1 else len(text)])[1])
        if body.lstrip()[:1] == "#":
            match = _AVG_BUS.search(body)
            if match is not None:
                value = _finite(match.group(1))
                if value is not None:
                    return value
        pos = text.rfind(_AVG_LITERAL, 0, start) if start > 0 else -1
    return None


def parse_bandwidth(text: str | Iterable[str], profile_spec: Mapping[str, Any]) -> BandwidthParse:
    """Every bandwidth row, the ``# Avg bus bandwidth`` value and the transports in ``text``.

    ``text`` is the log, or its consecutive pieces (each ending at a line end, as
    :class:`~nvcre.runtime.measure.windows.LogWindows` gives them): one piece is held at a time.
    Each pattern is applied to every line (lines end at newlines) on its own. Raises
    ``PatternError`` when the profile lacks a usable ``bandwidthResult`` pattern (or has a
    ``networkTransport`` pattern without a ``transport`` group); the log itself never raises.
    """
    rows_pattern = profile_pattern(profile_spec, "bandwidthResult", ("size", "algBW", "busBW"))
    assert rows_pattern is not None
    transport = profile_pattern(profile_spec, "networkTransport", ("transport",), optional=True)
    rows = _Rows()
    transports: set[str] = set()
    average: float | None = None
    for piece in [text] if isinstance(text, str) else text:
        _scan_rows(piece, rows_pattern.regex, rows)
        if transport is not None:
            transports |= _transports(piece, transport.regex, transport.regex.pattern)
        found = _avg_bus(piece)
        average = found if found is not None else average
    return BandwidthParse(
        results=rows.results(),
        avg_bus_bandwidth=average,
        transport=tuple(sorted(transports)),
        row_count=rows.count,
    )


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
