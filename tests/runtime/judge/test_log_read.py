"""The ``LogRead`` condition: the moment a measurement's reads got to, written and read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge import log_read

AT = datetime(2026, 12, 3, 10, 0, 2, tzinfo=UTC)


def _status(reason: str, message: str) -> dict[str, object]:
    state = "True" if reason == log_read.CAUGHT_UP else "False"
    return cond.set_condition({}, log_read.CONDITION, state, reason, message, "2026-12-03T10:00:05Z")


@pytest.mark.parametrize("reason", [log_read.CAUGHT_UP, log_read.FALLING_BEHIND, log_read.NOT_READABLE])
def test_the_moment_written_in_the_message_is_read_back_whatever_the_reason(reason: str) -> None:
    text = log_read.message(AT, "read 3 windows")
    assert text == "Log read through 2026-12-03T10:00:02Z; read 3 windows"
    assert log_read.read_through(_status(reason, text)) == AT


def test_the_moment_is_kept_in_utc_whole_seconds() -> None:
    local = datetime(2026, 12, 3, 11, 0, 2, 750000, tzinfo=timezone(timedelta(hours=1)))
    assert log_read.read_through(_status(log_read.CAUGHT_UP, log_read.message(local, "ok"))) == AT


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"conditions": [{"type": "Complete", "status": "True", "message": "Log read through 2026-12-03T10:00:02Z; x"}]},
        _status(log_read.NOT_READABLE, "pod log could not be read"),
        _status(log_read.CAUGHT_UP, "Log read through yesterday; x"),
    ],
)
def test_no_moment_without_a_log_read_condition_in_the_fixed_form(status: dict[str, object] | None) -> None:
    assert log_read.read_through(status) is None
