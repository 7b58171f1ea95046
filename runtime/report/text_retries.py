"""The retry lines of a category card: groups that passed only after failed runs were retried.

A group whose workload retried by itself (a container the kubelet restarted in place, a pod its
Job controller replaced) and then completed still passed; these lines say that it did not pass
at the first attempt, and how each earlier run ended::

    ↻ Passed on attempt 2 after 1 failed run:
      attempt 1: the launcher pod on node real-1 exited with code
      137 (signal 9, Killed)
        pod nccl-...-launcher-0-0-x7k2p, container node, ended
        2026-12-06T21:40:02Z

Nothing is printed for a group that passed at its first attempt, so a card without retries
reads as before.
"""

from __future__ import annotations

from ..judge.model import CategoryVerdict, FailedAttempt, GroupVerdict, RetryVerdict
from .card import MARK_RESTART, Card
from .cells import fit, sanitize

__all__ = ["attempt_text", "retries_section", "retry_headline"]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def retry_headline(retries: RetryVerdict) -> str:
    """``passed on attempt 2 after 1 failed run``."""
    return f"passed on attempt {retries.attempt} after {_plural(len(retries.failed) + retries.undetailed, 'failed run')}"


def attempt_text(failure: FailedAttempt) -> str:
    """``attempt 1: the launcher pod on node real-1 exited on signal 9 (Killed)``."""
    where = f"the {failure.role} pod on node {failure.node or 'unknown'}"
    if failure.signal and failure.signal_reported:
        how = f"exited on signal {failure.signal} ({failure.signal_name}), exit code {failure.exit_code}"
    elif failure.signal:
        how = f"exited with code {failure.exit_code} (signal {failure.signal}, {failure.signal_name})"
    else:
        how = f"exited with code {failure.exit_code}"
    if failure.reason and failure.reason != "Error":
        how += f", {failure.reason}"
    return f"attempt {failure.attempt}: {where} {how}"


def _detail(failure: FailedAttempt) -> str:
    parts = [f"pod {failure.pod}"] if failure.pod else []
    parts.append(f"container {failure.container}")
    if failure.finished_at:
        parts.append(f"ended {failure.finished_at}")
    return ", ".join(parts)


def _group(card: Card, group: GroupVerdict, retries: RetryVerdict, single: bool) -> None:
    headline = retry_headline(retries)
    if single:
        card.add(f"{MARK_RESTART} {headline[0].upper()}{headline[1:]}:")
    else:
        card.add(f"{MARK_RESTART} {fit(sanitize(group.name), 24)} {headline}:")
    for failure in retries.failed:
        card.wrapped("", attempt_text(failure), indent=2, words=True)
        card.wrapped("", _detail(failure), indent=4, words=True)
    if retries.undetailed:
        card.add(f"  and {_plural(retries.undetailed, 'earlier failed run')} without detail")


def retries_section(card: Card, category: CategoryVerdict) -> None:
    """The retry lines of every group of ``category`` that passed after failed runs (none: nothing)."""
    retried = category.retried_groups
    if not retried:
        return
    card.blank()
    single = len(category.groups) == 1
    for group in retried:
        if group.retries is not None:
            _group(card, group, group.retries, single)
