"""How far a GoodputMeasurement's reads of its training log have got: the ``LogRead`` condition.

Stall detection judges a training run by the steps its GoodputMeasurement saw, so it has to know
up to when the measurement looked. Every finished sample records that moment in the ``LogRead``
condition: the instant its read began when the read got to the end of the log, else the kubelet
timestamp of the last line it got to. A sample still under way never moves it.

- ``True``/``CaughtUp``: the last sample read the log to its end in time;
- ``False``/``FallingBehind``: the reads do not keep up with what the workload logs (a sample
  stopped before the end of the log, or took longer than the sample interval);
- ``False``/``LogNotReadable``: the last sample could not read the log at all.

The moment opens the condition's message in a fixed form (``Log read through <RFC 3339>; ...``)
that :func:`read_through` parses back: the measurement's status schema has no field for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..clock import format_time, parse_time
from . import conditions as cond

__all__ = ["CAUGHT_UP", "CONDITION", "FALLING_BEHIND", "NOT_READABLE", "message", "read_through"]

CONDITION = "LogRead"
CAUGHT_UP = "CaughtUp"
FALLING_BEHIND = "FallingBehind"
NOT_READABLE = "LogNotReadable"
_PREFIX = "Log read through "


def message(through: datetime, detail: str) -> str:
    """The condition message: the moment the log is read through, then ``detail``."""
    return f"{_PREFIX}{format_time(through)}; {detail}"


def read_through(status: Mapping[str, Any] | None) -> datetime | None:
    """The moment up to which the measurement has read its log, None when it never recorded one."""
    found = cond.condition(status, CONDITION) or {}
    text = str(found.get("message") or "")
    if not text.startswith(_PREFIX):
        return None
    return parse_time(text[len(_PREFIX) :].split(";", 1)[0].strip())
