"""Go durations: parsing the text a user writes, and printing the text Kubernetes stores.

A duration field of the API (``timeoutPerJob``, ``measurementTimeout``, ``sampleInterval``) is a
``metav1.Duration`` on the Go side. The API server accepts any Go duration text (``1h``, ``90m``,
``1h30m``) and prints it back in one canonical form, the one ``time.Duration.String`` gives:
``1h0m0s``, ``30m0s``, ``24h0m0s``, ``1.5s``, ``250ms``. The render prints that same form, so a
rendered Workflow reads the same as the object a cluster hands back.

* ``parse_duration`` reads a Go duration into seconds (``ValueError`` when malformed);
* ``format_duration`` prints seconds in the canonical form (whole seconds, for messages);
* ``canonical_duration`` rewrites duration text into the canonical form, exactly (no rounding);
* ``duration_limit`` reads a duration field as a time limit: its seconds, at most the longest
  duration Go can hold (about 292 years), and a given fallback when the text is not a duration.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["LONGEST_SECONDS", "canonical_duration", "duration_limit", "format_duration", "parse_duration"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|μs|ns|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_UNIT_NANOS = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "µs": 10**3, "μs": 10**3, "ns": 1}
_SECOND = 10**9
#: the longest time.Duration Go holds (2**63 - 1 nanoseconds), in seconds
LONGEST_SECONDS = (2**63 - 1) / _SECOND


def _parts(text: str) -> tuple[int, list[tuple[str, str]]]:
    """The sign and the (number, unit) parts of a Go duration; ``ValueError`` if malformed."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    sign = -1 if value.startswith("-") else 1
    body = value[1:] if value[:1] in "+-" else value
    if body == "0":
        return sign, []
    pos, parts = 0, []
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}: expected a number and a unit (h, m, s, ms)")
        parts.append((match.group(1), match.group(2)))
        pos = match.end()
    if not parts:
        raise ValueError(f"invalid duration {text!r}")
    return sign, parts


def parse_duration(text: str) -> float:
    """Seconds in a Go duration such as ``1h30m``, ``90s`` or ``250ms``; ``ValueError`` if malformed."""
    sign, parts = _parts(text)
    return sign * sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def _nanoseconds(text: str) -> int:
    """The exact length of a Go duration in nanoseconds (Go truncates below one nanosecond)."""
    sign, parts = _parts(text)
    total = sum(Fraction(number) * _UNIT_NANOS[unit] for number, unit in parts)
    return sign * int(total)


def _fraction_digits(value: int, digits: int) -> str:
    """``value`` (less than 10**digits) as a decimal fraction without trailing zeros: '' or '.5'."""
    text = str(value).rjust(digits, "0").rstrip("0")
    return f".{text}" if text else ""


def _go_string(nanos: int) -> str:
    """``time.Duration.String`` for a count of nanoseconds."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < _SECOND:
        # below one second Go picks the largest unit that keeps a non-zero integer part
        for unit, size, digits in (("ms", 10**6, 6), ("µs", 10**3, 3), ("ns", 1, 0)):
            if nanos >= size:
                whole, rest = divmod(nanos, size)
                return f"{sign}{whole}{_fraction_digits(rest, digits) if digits else ''}{unit}"
    seconds, rest = divmod(nanos, _SECOND)
    text = f"{seconds % 60}{_fraction_digits(rest, 9)}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        hours = minutes // 60
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def format_duration(seconds: float) -> str:
    """Whole seconds printed as Go prints a duration: ``36h0m0s``, ``1h30m0s``, ``45s``."""
    return _go_string(round(seconds) * _SECOND)


def canonical_duration(text: str) -> str:
    """Duration text as Kubernetes prints it back: ``1h`` -> ``1h0m0s``, ``90m`` -> ``1h30m0s``.

    ``ValueError`` if the text is not a Go duration.
    """
    return _go_string(_nanoseconds(text))


def duration_limit(text: object, fallback: float) -> float:
    """A duration field read as a time limit in seconds: ``fallback`` when the text is empty or
    not a Go duration, and never past :data:`LONGEST_SECONDS` (a longer text would overflow a
    Go controller and a ``datetime.timedelta`` alike; it means "no limit" in practice)."""
    if not isinstance(text, str) or not text.strip():
        return fallback
    try:
        seconds = parse_duration(text)
    except ValueError:
        return fallback
    return min(seconds, LONGEST_SECONDS)
