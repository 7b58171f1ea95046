"""A GoodputMeasurement's reads of its training log: each one goes on from where the last stopped.

Every sample reads only what the pod logged since the previous sample (``sinceTime`` from the
cursor of :mod:`..measure.cursor`, chained windows of ``Settings.max_log_read_bytes``), and adds
it to the running sums of :mod:`..measure.goodput_state`, so a sample costs what was logged
since the last one, not the whole log. The final read, once the Job has ended, goes on the same
way to the end of the log. The sums, the cursor and the log they belong to (the pod and its
container restarts) are a :class:`~..measure.goodput_state.GoodputTail`: kept in memory, and
written to the measurement's annotation at most every :data:`PERSIST_SECONDS`, so a restarted
controller goes on from there instead of reading the whole log again. A tail of another pod, or
of a container that restarted since, is dropped and the new log read from its start.

A sample reads at most :data:`SAMPLE_WINDOWS` windows and stops early once it has run for a
sample interval: what it read counts, and the next sample goes on from there. A log without
kubelet timestamps cannot be read in pieces: every read of it starts over from the start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_GOODPUT_SAMPLING

from ..kube.errors import ApiError
from ..kube.resources import GOODPUT_MEASUREMENTS
from ..measure import goodput_state
from ..measure.cursor import LogCursor
from ..measure.goodput_state import GoodputTail, RunningGoodput
from ..measure.profile import parse_rfc3339
from ..measure.training import TrainingParse
from ..measure.windows import LogWindows
from .common import annotations_of, name_of, namespace_of, uid_of
from .context import Context

__all__ = ["PERSIST_SECONDS", "SAMPLE_WINDOWS", "GoodputRead", "GoodputReading", "GoodputReads", "log_identity"]

log = logging.getLogger("nvcre.runtime.reconcile.goodput_reads")

#: the tail is written to the annotation at most this often (a restart re-reads at most this much)
PERSIST_SECONDS = 30.0
#: windows one provisional read may take (8 MiB each by default: 128 MiB)
SAMPLE_WINDOWS = 16

Reader = Callable[[str | None], str | None]


def log_identity(pod: Mapping[str, Any]) -> str:
    """The pod and how often its containers restarted: a restart begins another log."""
    restarts = sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or ())
    return f"{uid_of(pod)}/{restarts}"


@dataclass(frozen=True)
class GoodputRead:
    """One read of a training log and how far it got."""

    tail: GoodputTail
    #: the read got to the end of the log
    complete: bool
    #: log reads it made
    reads: int
    #: seconds it took
    seconds: float
    #: when it began
    began: datetime
    #: the kubelet timestamp of the last line it got to (None: no line with one)
    last_line: datetime | None

    @property
    def state(self) -> RunningGoodput:
        return self.tail.state


class GoodputReading:
    """A read whose first request was answered; :meth:`finish` reads the rest and adds it up."""

    def __init__(
        self,
        tail: GoodputTail,
        spec: Mapping[str, Any],
        windows: LogWindows,
        began_wall: datetime,
        began: float,
        deadline: float | None,
    ) -> None:
        self.tail, self.spec, self.windows = tail, spec, windows
        self.began_wall, self.began, self.deadline = began_wall, began, deadline
        self.cut = False
        #: what the profile's lifecycle pod showed, when it is another pod (final reads only)
        self.lifecycle: TrainingParse | None = None

    def _chunks(self) -> Iterator[str]:
        for chunk in self.windows:
            yield chunk
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.cut = True
                return

    def finish(self) -> GoodputRead:
        """The rest of the read, added to a copy of the tail's sums.

        Raises ``PatternError`` when the profile has no usable ``trainingStep`` pattern.
        """
        # a log without kubelet timestamps leaves the cursor empty: every read of it is a whole one
        state = goodput_state.fold(self.tail.state.copy(), self._chunks(), self.spec)
        if self.lifecycle is not None:
            state.take_lifecycle(self.lifecycle)
        cursor = self.windows.cursor
        return GoodputRead(
            tail=GoodputTail(self.tail.identity, cursor, state),
            complete=self.windows.complete and not self.cut,
            reads=self.windows.reads,
            seconds=time.monotonic() - self.began,
            began=self.began_wall,
            last_line=_moment(cursor),
        )


class GoodputReads:
    """The tails of the running GoodputMeasurements of one controller (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._tails: dict[tuple[str, str], GoodputTail] = {}
        # when each tail was last written to its annotation (monotonic seconds)
        self._persisted: dict[tuple[str, str], float] = {}

    def forget(self, key: tuple[str, str]) -> None:
        self._tails.pop(key, None)
        self._persisted.pop(key, None)

    def tail_for(self, key: tuple[str, str], pod: Mapping[str, Any], measurement: Mapping[str, Any]) -> GoodputTail:
        """Where the reads of ``pod``'s current log stopped: remembered, else from the annotation,
        else nothing read yet."""
        identity = log_identity(pod)
        for tail in (self._tails.get(key), GoodputTail.from_json(annotations_of(measurement).get(ANNOTATION_GOODPUT_SAMPLING))):
            if tail is not None and tail.identity == identity:
                return tail
        return GoodputTail(identity)

    def start(
        self,
        tail: GoodputTail,
        spec: Mapping[str, Any],
        reader: Reader,
        *,
        final: bool,
        max_windows: int,
        budget: float | None = None,
    ) -> GoodputReading | None:
        """Make the first request of a read of ``tail``'s log on from its cursor; None when the
        log could not be read. ``budget``: stop after about this many seconds."""
        began_wall = self.ctx.clock.now()
        began = time.monotonic()
        first = reader(tail.cursor.since_time())
        if first is None:
            return None
        settings = self.ctx.settings
        windows = LogWindows(first, reader, settings.max_log_read_bytes, max_windows, start=tail.cursor, final=final)
        return GoodputReading(tail, spec, windows, began_wall, began, began + budget if budget is not None else None)

    def keep(self, key: tuple[str, str], measurement: Mapping[str, Any], read: GoodputRead) -> None:
        """Remember where ``read`` stopped; write it to the annotation when the last write is old."""
        tail = read.tail
        if tail.cursor.stamp is None:
            self.forget(key)  # nothing to go on from: the next read starts over anyway
            return
        self._tails[key] = tail
        now = time.monotonic()
        if now - self._persisted.get(key, float("-inf")) < PERSIST_SECONDS:
            return
        patch = {"metadata": {"annotations": {ANNOTATION_GOODPUT_SAMPLING: tail.to_json()}}}
        try:
            self.ctx.kube.merge_patch(GOODPUT_MEASUREMENTS, name_of(measurement), namespace_of(measurement), patch)
        except ApiError as exc:
            log.info("goodput sampling state not written", extra={"measurement": name_of(measurement), "error": exc.message})
            return
        self._persisted[key] = now

    def drop_annotation(self, measurement: Mapping[str, Any]) -> None:
        """Remove the tail from a measurement that completed (its numbers are final now): when
        the object shows one, or this process wrote one the cache may not show yet."""
        key = (namespace_of(measurement), name_of(measurement))
        if ANNOTATION_GOODPUT_SAMPLING not in annotations_of(measurement) and key not in self._persisted:
            return
        patch = {"metadata": {"annotations": {ANNOTATION_GOODPUT_SAMPLING: None}}}
        try:
            self.ctx.kube.merge_patch(GOODPUT_MEASUREMENTS, name_of(measurement), namespace_of(measurement), patch)
        except ApiError as exc:
            log.info("goodput sampling state not removed", extra={"measurement": name_of(measurement), "error": exc.message})


def _moment(cursor: LogCursor) -> datetime | None:
    """The instant of the cursor's last timestamp."""
    if cursor.stamp is None:
        return None
    seconds, nanos = cursor.stamp
    moment = parse_rfc3339(f"{seconds}Z")
    return moment + timedelta(microseconds=nanos // 1000) if moment is not None else None
