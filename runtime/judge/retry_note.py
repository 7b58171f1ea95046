"""The retry note: what a passed Job's ``Succeeded`` condition says about failed attempts, and reading it back.

NVCRE's Job has no status field for attempts its workload retried by itself, and this project
adds none; the place NVCRE's API has for words is the condition message. When
``judge.retries`` finds failed runs before the ones that counted, the Job tier appends one
sentence to the ``Succeeded`` message (``note``), and the verdict reads it back from the Job
(``retries_of_job``), so the text and JSON reports say it long after the pods are gone. The
sentence has one fixed shape, written and read here only::

    passed on attempt 2 after 1 failed run: attempt 1: launcher pod P (container node) on node
    N exited with code 137 (signal 9, Killed), reason Error, at 2026-12-06T21:40:02Z

Every name in it is a Kubernetes object or container name (no spaces, commas or parentheses);
a reason is cut to its letters and digits and a time is kept only in RFC 3339 form, so what the
pods said cannot change the sentence's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .model import FailedAttempt, RetryVerdict

__all__ = ["MARK", "note", "read_note", "retries_of_job", "with_note"]

#: where the note begins in a condition message
MARK = "passed on attempt "
_SEPARATOR = "; "
_HEAD = re.compile(r"passed on attempt (?P<attempt>[1-9][0-9]{0,5}) after [0-9]{1,6} failed runs?: ")
_CLAUSE = re.compile(
    r"attempt (?P<attempt>[0-9]{1,6}): (?P<role>\S+) pod (?P<pod>\S+) \(container (?P<container>[^()\s]+)\) on node (?P<node>\S+) "
    r"exited (?:on signal (?P<reported>[0-9]{1,2}) \([^()]*\), exit code (?P<code1>-?[0-9]{1,10})"
    r"|with code (?P<code2>-?[0-9]{1,10})(?: \(signal (?P<derived>[0-9]{1,2}), [^()]*\))?)"
    r", reason (?P<reason>\w{1,64})(?:, at (?P<at>[0-9T:.Z+-]{1,40}))?$"
)
_MORE = re.compile(r"(?P<count>[0-9]{1,6}) more failed runs? not detailed$")
_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$")
_WORD = re.compile(r"[^0-9A-Za-z]")
_NAME = re.compile(r"[\s(),;]")


def _name(text: str) -> str:
    """A name as the note writes it: ``-`` for none, never a character that breaks the shape."""
    return _NAME.sub("_", text) or "-"


def _how(failure: FailedAttempt) -> str:
    if failure.signal and failure.signal_reported:
        return f"exited on signal {failure.signal} ({failure.signal_name}), exit code {failure.exit_code}"
    if failure.signal:
        return f"exited with code {failure.exit_code} (signal {failure.signal}, {failure.signal_name})"
    return f"exited with code {failure.exit_code}"


def _clause(failure: FailedAttempt) -> str:
    reason = _WORD.sub("", failure.reason)[:64] or "Error"
    at = f", at {failure.finished_at}" if _TIME.match(failure.finished_at) else ""
    return (
        f"attempt {failure.attempt}: {_name(failure.role)} pod {_name(failure.pod)} (container {_name(failure.container)}) "
        f"on node {_name(failure.node)} {_how(failure)}, reason {reason}{at}"
    )


def note(retries: RetryVerdict) -> str:
    """The sentence for a run that passed after ``retries``."""
    runs = len(retries.failed) + retries.undetailed
    parts = [_clause(failure) for failure in retries.failed]
    if retries.undetailed:
        parts.append(f"{retries.undetailed} more failed run{'s' if retries.undetailed != 1 else ''} not detailed")
    head = f"{MARK}{retries.attempt} after {runs} failed run{'s' if runs != 1 else ''}: "
    return head + _SEPARATOR.join(parts)


def with_note(message: str, retries: RetryVerdict | None) -> str:
    """``message`` with the note appended (unchanged when nothing was retried)."""
    return f"{message}{_SEPARATOR}{note(retries)}" if retries is not None else message


def _failure(match: re.Match[str]) -> FailedAttempt:
    reported, derived = match.group("reported"), match.group("derived")
    code = match.group("code1") if match.group("code1") is not None else match.group("code2")
    return FailedAttempt(
        attempt=int(match.group("attempt")),
        node="" if match.group("node") == "-" else match.group("node"),
        pod="" if match.group("pod") == "-" else match.group("pod"),
        container=match.group("container"),
        role=match.group("role"),
        exit_code=int(code or 0),
        reason=match.group("reason"),
        signal=int(reported or derived or 0),
        signal_reported=reported is not None,
        finished_at=match.group("at") or "",
    )


def read_note(message: str) -> RetryVerdict | None:
    """The retries a condition message's note names, None when it has none (or not in its shape)."""
    start = message.rfind(MARK)
    if start < 0:
        return None
    head = _HEAD.match(message, start)
    if head is None:
        return None
    failed: list[FailedAttempt] = []
    undetailed = 0
    for part in message[head.end() :].split(_SEPARATOR):
        clause, more = _CLAUSE.match(part), _MORE.match(part)
        if clause is not None:
            failed.append(_failure(clause))
        elif more is not None:
            undetailed += int(more.group("count"))
        else:
            return None
    if not failed and not undetailed:
        return None
    return RetryVerdict(attempt=int(head.group("attempt")), failed=tuple(failed), undetailed=undetailed)


def retries_of_job(job: Mapping[str, Any] | None) -> RetryVerdict | None:
    """What a Job's ``Succeeded`` condition says its workload retried, None when it says nothing."""
    if not isinstance(job, Mapping):
        return None
    for condition in (job.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Succeeded" and condition.get("status") == "True":
            return read_note(str(condition.get("message") or ""))
    return None
