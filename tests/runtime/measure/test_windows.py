"""Whole-log reads in bounded windows: nothing lost, nothing read twice, the end always found.

The reader here answers as the API server's ``pods/log`` does: from the start, or from the first
line of the ``sinceTime`` second, cut to ``limitBytes`` bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from nvcre.runtime.measure.cursor import LogCursor
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.windows import LogWindows

PROFILES = Path(__file__).resolve().parents[3] / "catalog" / "logprofiles"


def _stamp(second: int, nano: int) -> str:
    return f"2026-12-03T17:{second // 60:02d}:{second % 60:02d}.{nano:09d}Z"


def _log(lines_per_second: int, seconds: int, body: str = "some output line") -> list[str]:
    return [f"{_stamp(s, n)} {body} {s}-{n}\n" for s in range(seconds) for n in range(lines_per_second)]


class Server:
    """``pods/log`` over a list of lines, counting the reads."""

    def __init__(self, lines: list[str], cap: int) -> None:
        self.lines, self.cap, self.reads = lines, cap, 0

    def read(self, since: str | None) -> str:
        self.reads += 1
        start = 0
        if since is not None:
            second = since[:19]
            start = next((i for i, line in enumerate(self.lines) if line[:19] >= second), len(self.lines))
        return "".join(self.lines[start:]).encode()[: self.cap].decode("utf-8", "replace")


def _windows(server: Server, **kwargs: int) -> LogWindows:
    return LogWindows(server.read(None), server.read, server.cap, **kwargs)


def test_a_log_larger_than_a_window_is_read_whole_once() -> None:
    lines = _log(lines_per_second=7, seconds=300)
    server = Server(lines, cap=4096)
    windows = _windows(server)
    assert "".join(windows) == "".join(lines)
    assert windows.complete
    assert server.reads > 10


def test_a_log_that_fits_is_one_read_and_keeps_a_last_line_without_newline() -> None:
    lines = [*_log(3, 4), _stamp(9, 0) + " the end, no newline"]
    server = Server(lines, cap=1 << 20)
    windows = _windows(server)
    assert "".join(windows) == "".join(lines)
    assert windows.complete and server.reads == 1


def test_a_log_without_timestamps_cannot_be_windowed_and_says_so() -> None:
    lines = [f"plain line {i}\n" for i in range(2000)]
    server = Server(lines, cap=4096)
    windows = _windows(server)
    text = "".join(windows)
    assert text and len(text) <= 4096
    assert not windows.complete


def test_more_lines_in_one_second_than_a_window_holds_stops_incomplete() -> None:
    lines = _log(lines_per_second=5000, seconds=2)
    server = Server(lines, cap=4096)
    windows = _windows(server)
    list(windows)
    assert not windows.complete
    assert server.reads <= 3


def test_the_window_count_is_bounded() -> None:
    server = Server(_log(lines_per_second=3, seconds=600), cap=2048)
    windows = _windows(server, max_windows=5)
    list(windows)
    assert not windows.complete and windows.reads == 5 == server.reads


def test_bandwidth_read_in_windows_equals_the_whole_log() -> None:
    profile = YAML(typ="safe").load((PROFILES / "nccl-bandwidth.yaml").read_text(encoding="utf-8"))
    lines = []
    for second in range(200):
        size = 8 << (second % 20)
        lines.append(f"{_stamp(second, 0)} NCCL INFO Using network IB\n")
        lines.append(f"{_stamp(second, 1)}   {size}  {size // 4}  float  sum  -1  10.5  {second % 7 + 1}.25  {second % 5 + 2}.50  0\n")
    lines.append(f"{_stamp(201, 0)} # Avg bus bandwidth    : 3.25\n")
    whole = parse_bandwidth("".join(lines), profile)
    server = Server(lines, cap=1500)
    windows = _windows(server)
    assert parse_bandwidth(windows, profile) == whole
    assert windows.complete and server.reads > 5
    assert whole.results and whole.avg_bus_bandwidth == pytest.approx(3.25)


@settings(max_examples=60, deadline=None)
@given(
    per_second=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=40),
    sample_at=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    cap=st.integers(min_value=600, max_value=3000),  # more than one second of lines: windows must move on
)
def test_a_growing_log_read_in_samples_then_a_final_read_gives_every_line_once(
    per_second: list[int], sample_at: list[int], cap: int
) -> None:
    """Samples read on from where the last stopped (several lines may share one timestamp, a
    sample may stop inside a second, the last line may still be without its newline); the final
    read takes the rest. Every line comes out exactly once, in order."""
    lines = []
    for second, count in enumerate(per_second):
        for n in range(count):
            # duplicates: every second holds pairs of lines with the very same timestamp
            lines.append(f"{_stamp(second, n // 2)} line {second}-{n}\n")
    text = "".join(lines)
    got: list[str] = []
    cursor = LogCursor()
    for cut in sorted({c % (len(text) + 1) for c in sample_at}):
        # the log as it stood at the sample: a prefix, its last line maybe still being written
        server = Server(text[:cut].splitlines(keepends=True), cap)
        windows = LogWindows(server.read(cursor.since_time()), server.read, cap, 10_000, start=cursor, final=False)
        got.extend("".join(windows).splitlines(keepends=True))
        assert windows.complete
        cursor = windows.cursor
    server = Server(lines, cap)
    final = LogWindows(server.read(cursor.since_time()), server.read, cap, 10_000, start=cursor)
    got.extend("".join(final).splitlines(keepends=True))
    assert got == lines
