"""Where the last read of a growing pod log stopped, so the next read takes only what came after.

A log read with ``timestamps=true`` starts every line with the kubelet's RFC 3339 timestamp
(nanoseconds, trailing zeros trimmed). The API's ``sinceTime`` counts whole seconds, so a read
from the cursor's :meth:`LogCursor.since_time` returns the lines of that second again; and two
lines may carry the same timestamp. The cursor therefore keeps the last timestamp read and how
many lines read so far carry exactly it: :func:`advance` drops what was read before and returns
the rest, with the cursor after it. A last line without its newline may still be growing and is
left for the next read. Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["LogCursor", "advance", "stamp_key"]

_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})\Z")

#: a timestamp in comparable form: UTC seconds as ``YYYY-MM-DDTHH:MM:SS`` and the nanoseconds
StampKey = tuple[str, int]


def stamp_key(token: str) -> StampKey | None:
    """The comparable form of a kubelet timestamp, None when ``token`` is not one."""
    match = _STAMP.match(token)
    if match is None:
        return None
    seconds, fraction, zone = match.groups()
    if zone != "Z":
        try:
            moment = datetime.fromisoformat(seconds + zone)
        except ValueError:
            return None
        seconds = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return seconds, int((fraction or "").ljust(9, "0"))


@dataclass(frozen=True)
class LogCursor:
    """The last timestamp read (None: nothing read yet) and how many lines read carry it."""

    stamp: StampKey | None = None
    at_stamp: int = 0

    def since_time(self) -> str | None:
        """``sinceTime`` for the next read: the last timestamp cut to its second."""
        return f"{self.stamp[0]}Z" if self.stamp is not None else None


def _line_key(line: str) -> StampKey | None:
    cut = line.find(" ")
    return stamp_key(line if cut == -1 else line[:cut])


def advance(cursor: LogCursor, text: str) -> tuple[str, LogCursor]:
    """The part of ``text`` (a read from ``cursor.since_time()``) not read before, and the new cursor.

    A line without a timestamp of its own counts as carrying the one before it.
    """
    complete = text[: text.rfind("\n") + 1]
    anchor, skip = cursor.stamp, cursor.at_stamp
    last, count = cursor.stamp, cursor.at_stamp
    fresh: list[str] = []
    for line in complete.split("\n")[:-1]:
        key = _line_key(line) or last
        if anchor is not None and key is not None:
            if key < anchor:
                continue
            if key == anchor and skip > 0:
                skip -= 1
                continue
        fresh.append(line)
        if key == last:
            count += 1
        else:
            last, count = key, 1
    if not fresh:
        return "", cursor
    return "\n".join(fresh) + "\n", LogCursor(last, count)
