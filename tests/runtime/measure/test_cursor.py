"""The log cursor: a read from ``sinceTime`` gives back only the lines not read before."""

from __future__ import annotations

from nvcre.runtime.measure.cursor import LogCursor, advance, stamp_key


def _log(*lines: tuple[str, str]) -> str:
    return "".join(f"{stamp} {body}\n" for stamp, body in lines)


A = ("2026-12-03T10:00:05.100000000Z", "first")
B = ("2026-12-03T10:00:05.2Z", "second")
C = ("2026-12-03T10:00:07.000000001Z", "third")


def test_the_first_read_takes_every_line_and_anchors_at_the_last():
    chunk, cursor = advance(LogCursor(), _log(A, B))
    assert chunk == _log(A, B)
    assert cursor == LogCursor(("2026-12-03T10:00:05", 200_000_000), 1)
    assert cursor.since_time() == "2026-12-03T10:00:05Z"
    assert LogCursor().since_time() is None


def test_a_read_from_the_anchors_second_drops_what_was_read_before():
    _, cursor = advance(LogCursor(), _log(A))
    # the server answers from 10:00:05, so A comes again
    chunk, cursor = advance(cursor, _log(A, B, C))
    assert chunk == _log(B, C)
    assert cursor.stamp == ("2026-12-03T10:00:07", 1) and cursor.at_stamp == 1
    assert advance(cursor, _log(C)) == ("", cursor)


def test_lines_with_one_timestamp_are_counted_not_lost():
    twin = (B[0], "twin")
    _, cursor = advance(LogCursor(), _log(A, B))
    chunk, cursor = advance(cursor, _log(A, B, twin, C))
    assert chunk == _log(twin, C)
    _, cursor = advance(LogCursor(), _log(B, twin))
    assert cursor.at_stamp == 2
    chunk, _ = advance(cursor, _log(B, twin, (B[0], "third of them")))
    assert chunk == _log((B[0], "third of them"))


def test_a_line_still_being_written_waits_for_its_newline():
    chunk, cursor = advance(LogCursor(), _log(A) + f"{B[0]} sec")
    assert chunk == _log(A)
    chunk, _ = advance(cursor, _log(A, B))
    assert chunk == _log(B)


def test_timestamps_compare_as_instants():
    assert stamp_key("2026-12-03T10:00:05.5Z") > stamp_key("2026-12-03T10:00:05.123456789Z")  # type: ignore[operator]
    assert stamp_key("2026-12-03T12:00:05+02:00") == ("2026-12-03T10:00:05", 0)
    assert stamp_key("10:00:05") is None


def test_a_log_without_timestamps_cannot_anchor():
    chunk, cursor = advance(LogCursor(), "plain line\nanother\n")
    assert chunk == "plain line\nanother\n"
    assert cursor.stamp is None
