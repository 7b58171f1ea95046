"""Compiles the patterns of a LogProfile spec, and cuts the kubelet timestamp and launcher tags off log lines.

Profile patterns are written in Go RE2 syntax and are compiled and run with the RE2 engine,
as Go runs them: a pattern Go would refuse (a look-ahead, a back-reference) is refused, ``\\d``,
``\\s`` and ``\\w`` keep Go's ASCII meaning, and a match takes time linear in the line whatever the
pattern and the line hold. A backtracking engine could spend minutes on one long line that
repeats a pattern's prefix, and a workload controls what its pods log. Patterns only ever see
the first ``MAX_MATCHED_LINE`` characters of a line. Compiled patterns are cached by their text.

Every parser reads a line through :func:`split_line`: the terminal control sequences a program
printed into it (colour codes) are removed, then the kubelet timestamp comes off, then the tag a
launcher writes before each rank's output (Open MPI ``[1,0]<stdout>:``, Slurm ``0: ``, MPICH
``[0] ``), so one profile pattern reads the same log however it was launched and whether or not
its lines were coloured for a terminal.
"""

from __future__ import annotations

import re
import re._constants as _sre_constants  # type: ignore[import-not-found]
import re._parser as _sre_parser  # type: ignore[import-not-found]
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

import re2

__all__ = [
    "PatternError",
    "ProfilePattern",
    "compile_pattern",
    "matched_part",
    "MAX_MATCHED_LINE",
    "parse_layout_time",
    "parse_rfc3339",
    "profile_pattern",
    "profile_spec_of",
    "required_literals",
    "split_kubelet_timestamp",
    "split_line",
    "strip_escapes",
    "strip_launcher_prefix",
]


class PatternError(ValueError):
    """A profile pattern that is missing, is not valid RE2, or lacks a required named group."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class ProfilePattern:
    """One compiled pattern with its named groups and time units."""

    key: str
    regex: Any  # an RE2 program (re2._Regexp): search(), groupindex and pattern as in ``re``
    groups: frozenset[str]
    units: Mapping[str, str]


#: The longest part of a log line a pattern is run on. A measurement line (a bandwidth row, a
#: training step) is a few hundred characters; the cap keeps the cost of one hostile line small.
MAX_MATCHED_LINE = 16 * 1024


@lru_cache(maxsize=256)
def compile_pattern(regex: str, key: str = "pattern") -> Any:
    """The RE2 program for a Go-syntax pattern; PatternError when RE2 refuses it."""
    try:
        return re2.compile(regex)
    except re2.error as exc:
        raise PatternError(f"spec.patterns.{key}.regex", f"not a valid RE2 expression: {exc}") from None


def matched_part(body: str) -> str:
    """The part of a line body that patterns are run on (at most ``MAX_MATCHED_LINE`` characters)."""
    return body if len(body) <= MAX_MATCHED_LINE else body[:MAX_MATCHED_LINE]


def profile_spec_of(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    """The spec of a LogProfile, whether given the whole object or its spec."""
    spec = profile.get("spec")
    if profile.get("kind") == "LogProfile" and isinstance(spec, Mapping):
        return spec
    return profile


def profile_pattern(
    profile_spec: Mapping[str, Any], key: str, required_groups: tuple[str, ...] = (), optional: bool = False
) -> ProfilePattern | None:
    """The compiled pattern ``key`` of a profile; None when absent and ``optional``."""
    spec = profile_spec_of(profile_spec)
    patterns = spec.get("patterns")
    entry = patterns.get(key) if isinstance(patterns, Mapping) else None
    if entry is None:
        if optional:
            return None
        raise PatternError(f"spec.patterns.{key}", "is required by this measurement")
    if not isinstance(entry, Mapping) or not isinstance(entry.get("regex"), str) or not entry["regex"]:
        raise PatternError(f"spec.patterns.{key}.regex", "must be a non-empty string")
    compiled = compile_pattern(entry["regex"], key)
    groups = frozenset(compiled.groupindex)
    missing = [name for name in required_groups if name not in groups]
    if missing:
        raise PatternError(f"spec.patterns.{key}.regex", "missing named group(s) " + ", ".join(f"(?P<{name}>...)" for name in missing))
    units = entry.get("units") or {}
    return ProfilePattern(
        key=key,
        regex=compiled,
        groups=groups,
        units=dict(units) if isinstance(units, Mapping) else {},
    )


def strip_launcher_prefix(body: str) -> str:
    """``body`` without the tag a launcher puts before each line of a rank's output.

    Four tags are cut: Open MPI's ``--tag-output`` (``[1,0]<stdout>:`` / ``[1,0]<stderr>:``, which
    the MPIJob launcher shows), Slurm's ``srun --label`` (``0: ``, task numbers padded with
    spaces), the MPICH / Intel MPI ``-prepend-rank`` tag (``[0] ``, repeated before every write
    of the line) and the tag Ray puts before what its workers print (``(head, rank=0, pid=21170) ``
    under SkyPilot, ``(RayTrainWorker pid=812, ip=10.0.0.5) ``); each may follow a few spaces of
    indentation (a wrapper that indents what it relays).
    A line without one comes back unchanged. Plain string checks only: no pattern
    runs here, so the cost stays linear in the tag whatever the line holds.
    """
    head = body[:12]
    start = len(head) - len(head.lstrip(" "))
    if body[start : start + 1] == "(":
        return _strip_ray_tag(body, start)
    if body[start : start + 1] == "[":
        close = body.find("]<std", start + 1, start + 24)
        if close > start + 1 and _is_rank_pair(body[start + 1 : close]):
            rest = body[close + 5 :]
            for stream in ("out>:", "err>:"):
                if rest.startswith(stream):
                    return rest[len(stream) :]
        return _strip_write_tags(body, start)
    digits = start
    while digits < len(body) and digits - start < 7 and "0" <= body[digits] <= "9":
        digits += 1
    if digits > start and body[digits : digits + 2] == ": ":
        return body[digits + 2 :]
    return body


def _strip_write_tags(body: str, start: int) -> str:
    """``body`` without a rank tag that a launcher puts before every write (``[0] ``).

    MPICH and Intel MPI (``-prepend-rank``) tag each write a rank makes, not each line, so a line
    printed in several writes (an nccl-tests row: size columns, then each half) carries the tag
    at its start and again where each later write began, glued to the cell before it
    (``-1[0]    1626.5``). When the line starts with such a tag followed by a space, every copy
    of that same tag is cut (a later one becomes a space, so cells stay apart).
    """
    close = body.find("]", start + 1, start + 9)
    tag = body[start : close + 1]
    if close <= start + 1 or not tag[1:-1].isascii() or not tag[1:-1].isdigit() or body[close + 1 : close + 2] != " ":
        return body
    return body[close + 1 :].replace(tag, " ")


#: the longest Ray worker tag read (a name, a rank, a pid and an IPv6 address fit well within it)
_MAX_RAY_TAG = 160


def _strip_ray_tag(body: str, start: int) -> str:
    """``body`` without Ray's tag of the process that printed it: a parenthesis holding
    comma-separated fields, one of them ``pid=<digits>`` (after an optional name and a space:
    ``RayTrainWorker pid=812``), then a space; anything else comes back unchanged."""
    close = body.find(") ", start + 1, start + _MAX_RAY_TAG)
    if close < 0 or "(" in body[start + 1 : close]:
        return body
    words = body[start + 1 : close].replace(",", " ").split()
    if not any(word.startswith("pid=") and word[4:].isascii() and word[4:].isdigit() for word in words):
        return body
    return body[close + 2 :]


def _is_rank_pair(text: str) -> bool:
    job, sep, rank = text.partition(",")
    return bool(sep) and job.isascii() and job.isdigit() and rank.isascii() and rank.isdigit()


#: ESC and, when it starts one, the terminal control sequence (an ECMA-48 CSI) it opens: ``[``,
#: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F and a final byte 0x40-0x7E, or the end
#: of the line when the line ends inside the sequence. The three byte classes do not overlap and
#: ESC belongs to none, so an attempt gives back each byte at most once and stops at the next ESC:
#: the whole line is one linear pass.
_ESCAPE = re.compile(r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*(?:[\x40-\x7e]|\Z))?")


def strip_escapes(line: str) -> str:
    """``line`` without the terminal control sequences printed into it (``ESC[31m``, ``ESC[38;2;R;G;Bm``).

    A program that colours its output for a terminal (torchtitan's step lines, coloured logging
    handlers) leaves these bytes in the log; a terminal shows none of them, so a pattern written
    for the text it shows must not see them either. Every ESC byte goes, and with it the control
    sequence it opens, whole or cut short by the line's end; no other byte is touched, so nothing
    the line says is lost or changed, and the result holds no ESC (stripping twice changes
    nothing). A line without ESC comes back as it is.
    """
    return _ESCAPE.sub("", line) if "\x1b" in line else line


def split_line(line: str) -> tuple[str, str]:
    """(kubelet timestamp, body): terminal control sequences removed, then the timestamp cut,
    then any launcher tag after it."""
    stamp, rest = split_kubelet_timestamp(strip_escapes(line))
    return stamp, strip_launcher_prefix(rest)


def split_kubelet_timestamp(line: str) -> tuple[str, str]:
    """(timestamp, rest) when the line starts with a kubelet timestamp prefix, else ("", line).

    The prefix is the line's first token (up to the first space) when it is shaped like
    ``YYYY-MM-DDT...``: a ``-`` at index 4 and a ``T`` at index 10. The line is cut at that
    first space. A line that is only such a token has an empty rest.
    """
    if len(line) > 10 and line[4] == "-" and line[10] == "T":
        cut = line.find(" ")
        if cut == -1:
            return line, ""
        if cut > 10:
            return line[:cut], line[cut + 1 :]
    return "", line


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})", re.ASCII)


def parse_rfc3339(text: str) -> datetime | None:
    """An aware datetime for an RFC 3339 timestamp (nanoseconds cut to microseconds); None if invalid."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        if zone == "Z":
            tz = UTC
        else:
            sign = 1 if zone[0] == "+" else -1
            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=tz)
    except ValueError:
        return None


_LAYOUT_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?", re.ASCII)


def parse_layout_time(text: str) -> datetime | None:
    """A UTC datetime for a ``2006-01-02 15:04:05.999999``-style capture (zone-less means UTC);
    the fraction may follow a comma, as Python's logging prints it (``15:04:05,508``)."""
    text = text.strip()
    stamp = parse_rfc3339(text)
    if stamp is not None:
        return stamp.astimezone(UTC)
    match = _LAYOUT_TIME.fullmatch(text.rstrip("Z"))
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=UTC)
    except ValueError:
        return None


_MIN_LITERAL = 3


def _literal_run(items: list[tuple[Any, Any]]) -> str:
    run: list[str] = []
    for op, arg in items:
        if op is not _sre_constants.LITERAL:
            break
        run.append(chr(arg))
    return "".join(run)


@lru_cache(maxsize=256)
def required_literals(regex: str) -> tuple[str, ...] | None:
    """Strings of which every match of ``regex`` contains at least one, or None when none is found.

    Only plain, case-sensitive literal runs are used: a top-level run of literals, or a group of
    alternatives that each begin with one. A line without any of them cannot match, so a
    ``str.find`` scan can skip it.
    """
    try:
        parsed = _sre_parser.parse(regex, re.ASCII)
    except (re.error, RecursionError, ValueError):
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    best: tuple[str, ...] | None = None
    items = list(parsed)
    for index, (op, arg) in enumerate(items):
        found: tuple[str, ...] | None = None
        if op is _sre_constants.LITERAL:
            run = _literal_run(items[index:])
            found = (run,) if len(run) >= _MIN_LITERAL else None
        else:
            branch = None
            if op is _sre_constants.SUBPATTERN:
                inner = list(arg[-1])
                if len(inner) == 1 and inner[0][0] is _sre_constants.BRANCH and not arg[1] and not arg[2]:
                    branch = inner[0][1][1]
            elif op is _sre_constants.BRANCH:
                branch = arg[1]
            if branch is not None:
                runs = [_literal_run(list(alternative)) for alternative in branch]
                if runs and all(len(run) >= _MIN_LITERAL for run in runs):
                    found = tuple(runs)
        if found is not None and (best is None or min(map(len, found)) > min(map(len, best))):
            best = found
    return best
