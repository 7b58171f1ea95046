"""Time as the API server writes it: RFC 3339 UTC strings, parsed and formatted in one place.

The reconcilers never call ``datetime.now`` themselves; they get a :class:`Clock`, so tests can
move time forward without sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["Clock", "format_time", "parse_time"]


def format_time(moment: datetime) -> str:
    """``2026-01-02T03:04:05Z`` (whole seconds, as metav1.Time serialises)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp (``Z`` or an offset, optional fraction); None when empty or bad."""
    if not text:
        return None
    value = str(text).strip().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Clock:
    """Wall-clock time; subclass or replace :meth:`now` in tests."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def stamp(self) -> str:
        return format_time(self.now())
