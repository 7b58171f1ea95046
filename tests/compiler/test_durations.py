"""Go durations: parsing what a user writes, printing what Kubernetes stores."""

from __future__ import annotations

import pytest

from nvcre.compiler.durations import canonical_duration, format_duration, parse_duration


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("1h", "1h0m0s"),
        ("2h", "2h0m0s"),
        ("24h", "24h0m0s"),
        ("30m", "30m0s"),
        ("15m", "15m0s"),
        ("90m", "1h30m0s"),
        ("1h30m", "1h30m0s"),
        ("30s", "30s"),
        ("90s", "1m30s"),
        ("3600s", "1h0m0s"),
        ("1h0m0s", "1h0m0s"),
        ("0", "0s"),
        ("0s", "0s"),
        ("1.5s", "1.5s"),
        ("1m0.25s", "1m0.25s"),
        ("250ms", "250ms"),
        ("1500ms", "1.5s"),
        ("1500us", "1.5ms"),
        ("1500µs", "1.5ms"),
        ("999ns", "999ns"),
        ("1.5h", "1h30m0s"),
        ("-90m", "-1h30m0s"),
        ("+5m", "5m0s"),
        (" 45m ", "45m0s"),
    ],
)
def test_canonical_duration_prints_as_go_does(text: str, canonical: str) -> None:
    assert canonical_duration(text) == canonical
    # printing is idempotent: the canonical text reads back to itself
    assert canonical_duration(canonical) == canonical


@pytest.mark.parametrize("text", ["", "h", "1", "1x", "1h 30m", "m1", "1hh", "--1s"])
def test_malformed_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        canonical_duration(text)
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text, seconds", [("1h30m", 5400), ("250ms", 0.25), ("1.5h", 5400), ("-2m", -120), ("0", 0)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_format_duration_rounds_to_whole_seconds() -> None:
    assert format_duration(36 * 3600) == "36h0m0s"
    assert format_duration(5400) == "1h30m0s"
    assert format_duration(45) == "45s"
    assert format_duration(59.6) == "1m0s"
    assert format_duration(0) == "0s"


def test_a_duration_limit_reads_seconds_falls_back_and_stops_at_gos_longest() -> None:
    from nvcre.compiler.durations import LONGEST_SECONDS, duration_limit

    assert duration_limit("1.5m", 300.0) == 90.0
    assert duration_limit("1500ms", 300.0) == 1.5
    assert duration_limit(None, 300.0) == 300.0
    assert duration_limit("", 300.0) == 300.0
    assert duration_limit("soon", 300.0) == 300.0
    # past what Go can hold: clamped, so a timedelta of it never overflows
    assert duration_limit("99999999999999h", 300.0) == LONGEST_SECONDS
    from datetime import timedelta

    timedelta(seconds=duration_limit("99999999999999h", 300.0))
