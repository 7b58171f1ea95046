"""The measurement tier: BandwidthMeasurement and GoodputMeasurement, read once when the Job ends.

A measurement waits (``Measuring=True``/``JobRunning``) while its Job runs, sampling the log
every ``sampleInterval`` for provisional numbers once the profile's pod has started. Each sample
reads only what its pod logged since the last one (``sinceTime``, :mod:`..measure.cursor`). A
BandwidthMeasurement waits twice as long after a sample that added nothing (at most eight
intervals), and its rows only feed the gauges. A GoodputMeasurement keeps running sums of its
training log (:mod:`.goodput_reads`) and records how far its reads got in its ``LogRead``
condition (:mod:`..judge.log_read`), the clock stall detection runs on; reads that fall behind the log
say so there, with a Warning Event, and the next sample follows at once. Until that pod has
started there is nothing to read: the measurement waits for the events of its Job and of the
Job's pods, with a slow timer as a safety net. Provisional bandwidth reads share a budget (:data:`PROVISIONAL_READS_PER_SECOND`):
with more bandwidth measurements running than the budget allows per interval, each one's gap
stretches so the reads stay within it. The final read is never held back.

When the Job is terminal, the profile's pod log is read in full once (a GoodputMeasurement reads
on from where its samples stopped) and handed to the pure parsers in ``runtime.measure``; the
result is one terminal write (``Complete=True``), never overwritten. Status is written only when
it changes.
A training log that shows a diverged run (a non-finite loss) sets the GoodputMeasurement's
``Diverged`` condition (reason ``TrainingLossNotFinite``) as soon as a sample or the final read
sees it; the goodput of the steps is written beside it. A finished training log with no step
says how many iteration lines it saw and why none became a step.
Reasons follow NVCRE: ``JobSucceeded``, ``NoDataCollected``, ``JobFailed``, ``LogsUnavailable``
(Job gone or replaced, or the log stayed unreadable past the grace), with
``Measuring=False``/``FinalReadPending`` while a finished Job's log cannot be read yet and
``LogProfileNotFound`` while the profile is missing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_JOB_UID, LABEL_JOB

from .. import compile as compiler
from ..clock import format_time, parse_time
from ..judge import conditions as cond
from ..judge import log_read
from ..judge.pods import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from ..kube.errors import ApiError
from ..kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    LOGPROFILES,
    PODS,
    Resource,
)
from ..measure import nccl
from ..measure.cursor import LogCursor, advance
from ..measure.profile import PatternError
from ..measure.training import TrainingParse, parse_training
from ..measure.windows import LogWindows
from .common import annotations_of, meta, name_of, namespace_of, uid_of
from .context import SAFETY_NET_POLLS, Context, Result
from .goodput_reads import SAMPLE_WINDOWS, GoodputRead, GoodputReading, GoodputReads, log_identity
from .measurement_kinds import CONDITION_FIELD, KINDS, GoodputKind, MeasurementKind, no_step_message, transports

__all__ = ["MeasurementReconciler"]

log = logging.getLogger("nvcre.runtime.reconcile.measurement")

MEASURING = "Measuring"
COMPLETE = "Complete"
DEFAULT_SAMPLE_INTERVAL = 60.0
#: provisional BandwidthMeasurement log reads per second, across every running measurement
PROVISIONAL_READS_PER_SECOND = 5.0
#: with nothing to read yet, a measurement comes back on its own only on the safety-net timer
IDLE_RESYNC_POLLS = SAFETY_NET_POLLS
#: a provisional read goes back at most this far, however old its cursor (NVCRE's maxLogLookback)
MAX_LOG_LOOKBACK_SECONDS = 1800.0


@dataclass(frozen=True)
class _Tail:
    """A running BandwidthMeasurement's provisional reads of one pod: where they stopped, and
    the running averages and transports of every row read so far."""

    identity: str  # the pod and its container restarts (:func:`_log_identity`)
    cursor: LogCursor = LogCursor()
    rows: tuple[nccl.BandwidthRow, ...] = ()
    transports: frozenset[str] = frozenset()
    failure: dict[str, str] | None = None  # the first sign the run cannot be trusted (kept once seen)


def _job_terminal_time(job: Mapping[str, Any]) -> str | None:
    for type_ in (cond.SUCCEEDED, cond.FAILED):
        found = cond.condition(job.get("status"), type_)
        if found and found.get("status") == "True":
            return str(found.get("lastTransitionTime") or "") or None
    return None


def _attempt_start(measurement: Mapping[str, Any]) -> datetime | None:
    """When the current attempt began (``startTime`` once a restart was recorded), else None."""
    status = measurement.get("status") or {}
    if not status.get("interruptionCount"):
        return None
    return parse_time(status.get("startTime"))


def _merged(status: Mapping[str, Any], fields: Mapping[str, Any], stamp: str = "") -> dict[str, Any]:
    """``status`` updated with ``fields``; a field whose value is None is removed, and a
    condition the fields carry (:data:`CONDITION_FIELD`) is set, stamped ``stamp`` (when it
    changes; without a stamp, the one it had, so an unchanged condition compares equal)."""
    new = dict(status)
    condition = None
    for key, value in fields.items():
        if key == CONDITION_FIELD:
            condition = value
        elif value is None:
            new.pop(key, None)
        else:
            new[key] = value
    if isinstance(condition, Mapping):
        kept = cond.condition(new, str(condition["type"])) or {}
        when = stamp or str(kept.get("lastTransitionTime") or "")
        new = cond.set_condition(
            new, str(condition["type"]), str(condition["status"]), str(condition["reason"]), str(condition["message"]), when
        )
    return new


_log_identity = log_identity
_LAG_REASONS = (log_read.FALLING_BEHIND, log_read.NOT_READABLE)


@dataclass(frozen=True)
class _Note:
    """What a GoodputMeasurement's sample says about its reads: the ``LogRead`` condition, and
    whether the next sample should follow at once."""

    state: str
    reason: str
    message: str
    hurry: bool = False


class MeasurementReconciler:
    """Reconciles BandwidthMeasurements and GoodputMeasurements."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._warned: set[tuple[str, str, str]] = set()
        # when each measurement was last sampled and the gap to the next sample (cadence only;
        # results live in status)
        self._sampled: dict[tuple[str, str], tuple[float, float]] = {}
        # final reads that found no readable log yet, per measurement (spaces the retries)
        self._final_tries: dict[tuple[str, str], int] = {}
        # BandwidthMeasurements whose pod has started and that are sampled (the read budget's share)
        self._reading: set[tuple[str, str]] = set()
        # where each running BandwidthMeasurement's provisional reads stopped
        self._tails: dict[tuple[str, str], _Tail] = {}
        # where each GoodputMeasurement's reads stopped, and their running sums
        self._goodput = GoodputReads(ctx)

    def _forget(self, key: tuple[str, str]) -> None:
        """Drop everything remembered of a measurement that completed or went."""
        self._warned = {w for w in self._warned if w[:2] != key}
        self._sampled.pop(key, None)
        self._final_tries.pop(key, None)
        self._reading.discard(key)
        self._tails.pop(key, None)
        self._goodput.forget(key)

    def _budget_gap(self) -> float:
        """The shortest gap between two provisional reads of one BandwidthMeasurement that keeps
        all of them within :data:`PROVISIONAL_READS_PER_SECOND`."""
        return len(self._reading) / PROVISIONAL_READS_PER_SECOND

    def reconcile_bandwidth(self, namespace: str, name: str) -> Result:
        return self._reconcile(KINDS[BANDWIDTH_MEASUREMENTS.plural], namespace, name)

    def reconcile_goodput(self, namespace: str, name: str) -> Result:
        return self._reconcile(KINDS[GOODPUT_MEASUREMENTS.plural], namespace, name)

    # ------------------------------------------------------------------ shared flow

    def _reconcile(self, kind: MeasurementKind, namespace: str, name: str) -> Result:
        ctx = self.ctx
        resource = kind.resource
        measurement = ctx.read(resource, name, namespace)
        if measurement is None or meta(measurement).get("deletionTimestamp") or cond.is_true(measurement.get("status"), COMPLETE):
            self._forget((namespace, name))
            return Result()
        job_name = str(((measurement.get("spec") or {}).get("jobRef") or {}).get("name") or "")
        job = ctx.read(JOBS, job_name, namespace) if job_name else None
        expected_uid = annotations_of(measurement).get(ANNOTATION_JOB_UID)
        if job is None or (expected_uid and expected_uid != meta(job).get("uid")):
            self._complete(resource, measurement, "LogsUnavailable", f"Job {job_name} is gone; its logs cannot be read", None, {})
            return Result()
        life = cond.lifecycle(job.get("status"))
        if life not in (cond.SUCCEEDED, cond.FAILED):
            return self._sample_running(kind, measurement, job)
        profile = self._profile(measurement)
        if profile is None:
            ref = (measurement.get("spec") or {}).get("logProfileRef")
            message = f"LogProfile {ref} not found"
            self._measuring(resource, measurement, "False", "LogProfileNotFound", message, warn=True)
            return Result(ctx.settings.poll_interval)
        text = self._final_read(kind, job, profile, measurement)
        completed_at = _job_terminal_time(job)
        if life == cond.FAILED:
            try:
                fields, _ = self._final_fields(kind, profile, text, completed_at, measurement) if text else ({}, "")
            except PatternError:
                fields = {}
            self._complete(resource, measurement, "JobFailed", f"Job {job_name} failed", completed_at, fields)
            return Result()
        if text is None:
            finished = parse_time(completed_at)
            waited = (ctx.clock.now() - finished).total_seconds() if finished else 0.0
            grace = max(ctx.settings.final_read_grace, ctx.settings.measurement_timeout)
            if waited < grace:
                self._measuring(
                    resource, measurement, "False", "FinalReadPending", "Job succeeded; waiting to read its complete log", warn=True
                )
                key = (namespace, name)
                tries = self._final_tries.get(key, 0)
                self._final_tries[key] = tries + 1
                # 5 s, then twice as long after every miss (at most 8x), never past the grace
                delay = min(ctx.settings.poll_interval, 5.0) * 2 ** min(tries, 3)
                return Result(max(1.0, min(delay, grace - waited)))
            self._complete(resource, measurement, "LogsUnavailable", f"The log of Job {job_name} could not be read", completed_at, {})
            return Result()
        try:
            fields, empty = self._final_fields(kind, profile, text, completed_at, measurement)
        except PatternError as exc:
            self._complete(resource, measurement, "NoDataCollected", f"LogProfile cannot parse the log: {exc}", completed_at, {})
            return Result()
        if not fields or set(fields) == {CONDITION_FIELD}:
            self._complete(resource, measurement, "NoDataCollected", empty or kind.no_data, completed_at, fields)
            return Result()
        self._complete(resource, measurement, "JobSucceeded", _final_read_message(text), completed_at, fields)
        return Result()

    def _sample_interval(self, measurement: Mapping[str, Any]) -> float:
        raw = (measurement.get("spec") or {}).get("sampleInterval")
        try:
            interval = compiler.parse_duration(str(raw)) if raw else DEFAULT_SAMPLE_INTERVAL
        except ValueError:
            interval = DEFAULT_SAMPLE_INTERVAL
        cap = self.ctx.settings.max_sample_interval
        return max(1.0, min(interval, cap) if cap else interval)

    def _sample_running(self, kind: MeasurementKind, measurement: dict[str, Any], job: Mapping[str, Any]) -> Result:
        """While the Job runs: every sampleInterval, read what the log added and record provisional
        numbers (the final read replaces them; thresholds never read them, stall detection
        reads the last step and how far the reads got)."""
        key = (namespace_of(measurement), name_of(measurement))
        interval = self._sample_interval(measurement)
        now = time.monotonic()
        fields: dict[str, Any] = {}
        note: _Note | None = None
        read: GoodputRead | None = None
        # Between a checkpoint restart and the next workload there is no log to read.
        job_status = job.get("status") or {}
        has_workload = bool(job_status.get("workloadRef"))
        if kind.waits_for_restart(job_status, measurement):
            has_workload = False  # the restart is not folded into this measurement yet
        last, gap = self._sampled.get(key, (float("-inf"), interval))
        if has_workload and now - last >= gap:
            fields, note, read = self._sample_now(kind, key, measurement, job, (now, interval, gap))
        message = _running_message(job, fields)
        stamp = self.ctx.clock.stamp()

        def mutate(status: dict[str, Any]) -> dict[str, Any] | None:
            if cond.is_true(status, COMPLETE):
                return None
            new = _merged(status, fields, stamp)
            new.setdefault("startTime", stamp)
            if note is not None:
                new = cond.set_condition(new, log_read.CONDITION, note.state, note.reason, note.message, stamp)
            if not fields:
                previous = cond.condition(new, MEASURING) or {}
                if previous.get("reason") == "JobRunning" and previous.get("status") == "True":
                    return new
            return cond.set_condition(new, MEASURING, "True", "JobRunning", message, stamp)

        written = self.ctx.write_status(kind.resource, measurement, mutate)
        if note is not None:
            self._warn_lag(written or measurement, note)
        if read is not None:
            self._goodput.keep(key, measurement, read)
        last, gap = self._sampled.get(key, (float("-inf"), interval))
        if last == float("-inf"):
            # Nothing to read yet (no workload, or its pod has not started): the Job's and the
            # pods' events bring the measurement back; the timer is only a safety net.
            return Result(self.ctx.settings.safety_net)
        # the next sample is due a gap after this one began, however long its read took
        return Result(max(1.0, last + gap - time.monotonic()) if gap > 0 else 0.1)

    def _sample_now(
        self,
        kind: MeasurementKind,
        key: tuple[str, str],
        measurement: dict[str, Any],
        job: Mapping[str, Any],
        pace: tuple[float, float, float],
    ) -> tuple[dict[str, Any], _Note | None, GoodputRead | None]:
        """One provisional read of the running Job's log, and the pacing entry (``_sampled``) it
        leaves: ``pace`` is this pass's start, the sample interval and the gap that was due."""
        now, interval, gap = pace
        fields: dict[str, Any] = {}
        note: _Note | None = None
        read: GoodputRead | None = None
        profile = self._profile(measurement)
        pod = self._log_pod(job, profile, kind.training_log, _attempt_start(measurement)) if profile is not None else None
        # A pod that has not started has no log: reading it would only be refused.
        if profile is None or pod is None or str((pod.get("status") or {}).get("phase") or "Pending") == "Pending":
            self._sampled[key] = (float("-inf"), interval)
            return fields, note, read
        self._sampled[key] = (now, interval)
        if kind.budgeted:
            self._reading.add(key)
        try:
            if isinstance(kind, GoodputKind):
                fields, note, read = self._sample_goodput(kind, key, profile, pod, measurement, interval)
            else:
                fields = self._sample_bandwidth(key, profile, pod)
        except PatternError:
            fields = {}
        if kind.budgeted:
            # Provisional bandwidth rows only feed the gauges: while a sample adds nothing
            # to what status holds, wait twice as long for the next one (at most 8x).
            status = measurement.get("status") or {}
            unchanged = not fields or _merged(status, fields) == status
            self._sampled[key] = (now, max(min(gap * 2, interval * 8) if unchanged else interval, self._budget_gap()))
        if note is not None and note.hurry:
            self._sampled[key] = (now, 0.0)  # behind the log: go on reading at once
        return fields, note, read

    # ------------------------------------------------------------------ reading

    def _sample_goodput(
        self,
        kind: GoodputKind,
        key: tuple[str, str],
        profile: Mapping[str, Any],
        pod: Mapping[str, Any],
        measurement: Mapping[str, Any],
        interval: float,
    ) -> tuple[dict[str, Any], _Note, GoodputRead | None]:
        """A provisional read of what the training pod logged since the last one, added to the
        running sums; the fields they give, what to say about the reads, and the read."""
        previous = log_read.read_through(measurement.get("status"))
        tail = self._goodput.tail_for(key, pod, measurement)
        spec = profile.get("spec") or {}
        reading = self._goodput.start(
            tail, spec, lambda since: self._read_pod_log(pod, since), final=False, max_windows=SAMPLE_WINDOWS, budget=interval
        )
        if reading is None:
            held = previous or parse_time((pod.get("status") or {}).get("startTime")) or self.ctx.clock.now()
            detail = "the last sample could not read the log; stall detection waits until one can, and no node is blamed for it"
            return {}, _Note("False", log_read.NOT_READABLE, log_read.message(held, detail)), None
        read = reading.finish()
        fields = kind.fields_of(read.state, None, measurement, lambda: self.ctx.clock.now())
        step = f"step {read.state.last_iteration} is the last seen" if read.state.steps else "no step seen yet"
        if read.complete and read.seconds <= interval:
            detail = f"{step}; the sample read {read.reads} window(s) in {read.seconds:.1f} s"
            return fields, _Note("True", log_read.CAUGHT_UP, log_read.message(read.began, detail)), read
        if read.complete:
            through = read.began
            why = f"the sample took {read.seconds:.1f} s, longer than the {interval:g} s sample interval"
        else:
            through = max((m for m in (previous, read.last_line) if m is not None), default=read.began)
            why = f"the sample stopped after {read.reads} window(s) and {read.seconds:.1f} s, before the end of the log"
        detail = (
            f"{step}; the reads are falling behind the log ({why}); stall detection waits for them, and no node is blamed for the delay"
        )
        return fields, _Note("False", log_read.FALLING_BEHIND, log_read.message(through, detail), hurry=not read.complete), read

    def _warn_lag(self, measurement: Mapping[str, Any], note: _Note) -> None:
        """A Warning Event when the reads start falling behind or stop working (once an episode)."""
        key = (namespace_of(measurement), name_of(measurement))
        if note.reason == log_read.CAUGHT_UP:
            self._warned = {w for w in self._warned if not (w[:2] == key and w[2] in _LAG_REASONS)}
            return
        if (*key, note.reason) in self._warned:
            return
        self._warned.add((*key, note.reason))
        self.ctx.event(measurement, "Warning", note.reason, note.message)

    def _sample_bandwidth(self, key: tuple[str, str], profile: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
        """A provisional read of only what the pod logged since the last one (``sinceTime``),
        folded into running averages. A new pod, or a restarted container, starts over from its
        whole log; so does a log without timestamps, whose rows then replace the earlier ones."""
        tail = self._tails.get(key)
        identity = _log_identity(pod)
        if tail is None or tail.identity != identity:
            tail = _Tail(identity)
        since = tail.cursor.since_time()
        if since is not None:
            floor = self.ctx.clock.now() - timedelta(seconds=MAX_LOG_LOOKBACK_SECONDS)
            since = max(since, format_time(floor))
        text = self._read_pod_log(pod, since)
        if text is None:
            return {}
        chunk, cursor = advance(tail.cursor, text)
        spec = profile.get("spec") or {}
        if cursor.stamp is None:
            parsed = nccl.parse_bandwidth(text, spec)
            failure = nccl.status_fields(parsed, final=False).get("failure")
            tail = _Tail(identity, LogCursor(), parsed.results, frozenset(parsed.transport), failure)
        elif chunk:
            parsed = nccl.parse_bandwidth(chunk, spec)
            rows = nccl.merge_results(tail.rows, parsed.results)
            failure = tail.failure or nccl.status_fields(parsed, final=False).get("failure")
            tail = _Tail(identity, cursor, rows, tail.transports | frozenset(parsed.transport), failure)
        self._tails[key] = tail
        fields: dict[str, Any] = {}
        if tail.rows:
            fields["results"] = [row.to_status() for row in tail.rows]
            transport = transports(tail.transports)
            if transport:
                fields["transport"] = transport
        if tail.failure is not None:
            fields["failure"] = tail.failure
        return fields

    def _final_read(
        self, kind: MeasurementKind, job: Mapping[str, Any], profile: Mapping[str, Any], measurement: Mapping[str, Any]
    ) -> LogWindows | GoodputReading | None:
        """The read of the complete log once the Job has ended, its first request made; None when
        the log cannot be read (yet). A GoodputMeasurement goes on from where its samples stopped."""
        since = _attempt_start(measurement)
        if not isinstance(kind, GoodputKind):
            return self._read_log(job, profile, kind.training_log, since)
        pod = self._log_pod(job, profile, kind.training_log, since)
        if pod is None:
            return None
        tail = self._goodput.tail_for((namespace_of(measurement), name_of(measurement)), pod, measurement)
        reader = lambda since_time: self._read_pod_log(pod, since_time)  # noqa: E731
        spec = profile.get("spec") or {}
        reading = self._goodput.start(tail, spec, reader, final=True, max_windows=self.ctx.settings.max_log_windows)
        if reading is not None:
            reading.lifecycle = self._lifecycle_parse(job, profile, pod, since)
        return reading

    def _lifecycle_parse(
        self, job: Mapping[str, Any], profile: Mapping[str, Any], step_pod: Mapping[str, Any], since: datetime | None
    ) -> TrainingParse | None:
        """What the profile's lifecycle pod logged (start, checkpoint saves), when
        ``workerStrategy`` names another pod for it than for the steps; None when it is the same
        pod or its log cannot be read."""
        strategy = (profile.get("spec") or {}).get("workerStrategy") or {}
        pick = str(strategy.get("lifecyclePod") or "first")
        if strategy.get("type") != "Multi" or pick == str(strategy.get("trainingStepPod") or "first"):
            return None
        pod = self._log_pod(job, profile, True, since, pick=pick)
        if pod is None or uid_of(pod) == uid_of(step_pod):
            return None
        windows = self._log_windows(pod)
        if windows is None:
            return None
        try:
            return parse_training(windows, profile.get("spec") or {})
        except PatternError:
            return None

    def _final_fields(
        self,
        kind: MeasurementKind,
        profile: Mapping[str, Any],
        text: LogWindows | GoodputReading,
        completed_at: str | None,
        measurement: Mapping[str, Any],
    ) -> tuple[dict[str, Any], str]:
        """The status fields of the final read, and what to say when they hold no number ("" for
        the kind's own words)."""
        if isinstance(text, GoodputReading) and isinstance(kind, GoodputKind):
            state = text.finish().state
            return kind.fields_of(state, completed_at, measurement, lambda: self.ctx.clock.now()), no_step_message(state)
        assert isinstance(text, LogWindows)
        return self._fields(kind, profile, text, completed_at, measurement), ""

    def _profile(self, measurement: Mapping[str, Any]) -> dict[str, Any] | None:
        ref = str((measurement.get("spec") or {}).get("logProfileRef") or "")
        return self.ctx.read(LOGPROFILES, ref, None) if ref else None

    def _read_log(
        self, job: Mapping[str, Any], profile: Mapping[str, Any], training_log: bool, since: datetime | None = None
    ) -> LogWindows | None:
        """The complete log of the profile's pod, in bounded windows, or None when it cannot be read (yet).

        ``since``: after a checkpoint restart, only pods created from then on (the new attempt's).
        """
        pod = self._log_pod(job, profile, training_log, since)
        return self._log_windows(pod) if pod is not None else None

    def _log_windows(self, pod: Mapping[str, Any]) -> LogWindows | None:
        """The pod's whole log as windows of at most ``Settings.max_log_read_bytes``; None when refused."""
        first = self._read_pod_log(pod)
        if first is None:
            return None
        settings = self.ctx.settings
        return LogWindows(first, lambda since: self._read_pod_log(pod, since), settings.max_log_read_bytes, settings.max_log_windows)

    def _log_pod(
        self,
        job: Mapping[str, Any],
        profile: Mapping[str, Any],
        training_log: bool,
        since: datetime | None = None,
        *,
        pick: str | None = None,
    ) -> dict[str, Any] | None:
        """The cached pod whose log the profile reads (``workerStrategy``: its ``trainingStepPod``,
        or ``pick``), None when there is none."""
        strategy = (profile.get("spec") or {}).get("workerStrategy") or {}
        replicated = str(strategy.get("replicatedJobName") or ("node" if training_log else "launcher"))
        workload = str(((job.get("status") or {}).get("workloadRef") or {}).get("name") or f"{name_of(job)}-workload")
        store = self.ctx.store(PODS)
        # A pod being deleted belongs to a workload that is going away (a checkpoint restart).
        pods = [
            p
            for p in store.by_label(namespace_of(job), JOBSET_NAME_LABEL, workload)
            if ((p.get("metadata") or {}).get("labels") or {}).get(REPLICATED_JOB_LABEL) == replicated
            and not meta(p).get("deletionTimestamp")
        ]
        if not pods:
            # The profile names a replicatedJob this workload does not have (the API defaults it
            # to "trainer"); the worker pods carry the Job's label, so read those instead.
            pods = [p for p in store.by_label(namespace_of(job), LABEL_JOB, name_of(job)) if not meta(p).get("deletionTimestamp")]
        if since is not None:
            pods = [p for p in pods if (parse_time(meta(p).get("creationTimestamp")) or since) >= since]
        if not pods:
            return None
        pods.sort(key=name_of)
        chosen = pick or str(strategy.get("trainingStepPod") or "first")
        return pods[-1] if chosen == "last" else pods[0]

    def _read_pod_log(self, pod: Mapping[str, Any], since_time: str | None = None) -> str | None:
        """The pod's log (its ``node`` container when it has one) from its start or from
        ``since_time``, at most ``Settings.max_log_read_bytes`` of it; None when refused."""
        containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name")]
        container = "node" if "node" in containers else (containers[0] if containers else None)
        try:
            return self.ctx.kube.pod_log(
                name_of(pod),
                namespace_of(pod),
                container=container,
                timestamps=True,
                since_time=since_time,
                limit_bytes=self.ctx.settings.max_log_read_bytes,
            )
        except ApiError as exc:
            log.info("log not readable yet", extra={"pod": name_of(pod), "error": exc.message})
            return None

    def _fields(
        self,
        kind: MeasurementKind,
        profile: Mapping[str, Any],
        text: str | Iterable[str],
        completed_at: str | None,
        measurement: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        return kind.fields(profile.get("spec") or {}, text, completed_at, measurement or {}, lambda: self.ctx.clock.now())

    # ------------------------------------------------------------------ writing

    def _measuring(
        self, resource: Resource, measurement: Mapping[str, Any], state: str, reason: str, message: str, *, warn: bool = False
    ) -> None:
        ctx = self.ctx
        now = ctx.clock.stamp()

        def mutate(status: dict[str, Any]) -> dict[str, Any] | None:
            if cond.is_true(status, COMPLETE):
                return None
            new = cond.set_condition(status, MEASURING, state, reason, message, now)
            new.setdefault("startTime", now)
            return new

        written = ctx.write_status(resource, measurement, mutate)
        key = (namespace_of(measurement), name_of(measurement), reason)
        if warn and written is not None and key not in self._warned:
            self._warned.add(key)
            ctx.event(written, "Warning", reason, message)

    def _complete(
        self,
        resource: Resource,
        measurement: Mapping[str, Any],
        reason: str,
        message: str,
        completed_at: str | None,
        fields: Mapping[str, Any],
    ) -> None:
        ctx = self.ctx
        now = ctx.clock.stamp()

        def mutate(status: dict[str, Any]) -> dict[str, Any] | None:
            if cond.is_true(status, COMPLETE):
                return None
            new = _merged(status, fields, now)
            new.setdefault("startTime", now)
            new["completionTime"] = completed_at or now
            new = cond.set_condition(new, MEASURING, "False", reason, message, now)
            return cond.set_condition(new, COMPLETE, "True", reason, message, now)

        ctx.write_status(resource, measurement, mutate)
        if resource == GOODPUT_MEASUREMENTS:
            self._goodput.drop_annotation(measurement)
        self._forget((namespace_of(measurement), name_of(measurement)))


def _final_read_message(text: LogWindows | GoodputReading) -> str:
    """What the final read covered: the complete log, or as much of it as its windows reached."""
    windows = text.windows if isinstance(text, GoodputReading) else text
    complete = windows.complete and not (isinstance(text, GoodputReading) and text.cut)
    if complete:
        return "Final read of the complete log"
    read = windows.reads * windows.cap // (1024 * 1024)
    if windows.start.stamp is not None:
        return (
            f"Final read of the log as far as the samples and {read} MiB after them: it is longer than the controller reads, "
            "or could not be read past that point"
        )
    return (
        f"Final read of the first {read} MiB of the log only: it is longer than the controller reads, or could not be read past that point"
    )


def _running_message(job: Mapping[str, Any], fields: Mapping[str, Any]) -> str:
    """The Measuring condition's message while the Job runs: what the last sample saw."""
    if fields.get("results"):
        return f"Job {name_of(job)} is running; {len(fields['results'])} message sizes sampled"
    if fields.get("currentStep"):
        return f"Job {name_of(job)} is running; step {fields['currentStep']} seen"
    return f"Job {name_of(job)} is running"
