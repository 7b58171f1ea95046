"""Formats instants the way the API writes them.

``rfc3339`` writes UTC with the fraction trimmed of trailing zeros (Go's RFC3339Nano), so
``2026-02-05T17:14:00Z`` and ``2026-02-05T16:03:52.889599Z`` come out as the controller writes
them.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["rfc3339"]


def rfc3339(moment: datetime) -> str:
    """UTC RFC 3339 with the shortest exact fraction (none when whole seconds)."""
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"
