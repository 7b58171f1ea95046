"""Observations the tiers act on: TrainJob phases, the timeout clock, the final goodput."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_GOODPUT_PRIOR_ATTEMPTS
from nvcre.runtime.clock import Clock
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler, trainjob_phase
from nvcre.runtime.reconcile.measurement_kinds import KINDS
from nvcre.runtime.reconcile.workflow import WorkflowReconciler


def test_trainjob_phase_checks_failed_before_complete_and_suspend_is_pending():
    both = {"status": {"conditions": [{"type": "Complete", "status": "True"}, {"type": "Failed", "status": "True", "message": "boom"}]}}
    assert trainjob_phase(both) == ("Failed", "boom")
    assert trainjob_phase({"status": {"conditions": [{"type": "Complete", "status": "True", "message": "ok"}]}}) == ("Succeeded", "ok")
    assert trainjob_phase({"spec": {"suspend": True}})[0] == "Pending"
    assert trainjob_phase({}) == ("Running", "")


class FixedClock(Clock):
    def __init__(self, now: str) -> None:
        self.moment = datetime.fromisoformat(now.replace("Z", "+00:00")).astimezone(UTC)

    def now(self) -> datetime:
        return self.moment


def _timed_out(now: str, job_status: dict[str, Any], group: dict[str, Any] | None = None) -> str:
    ctx = Context(kube=None, stores={"pods": Store()}, clock=FixedClock(now))  # type: ignore[arg-type]
    reconciler = WorkflowReconciler(ctx, JobReconciler(ctx))
    workflow = {"spec": {"orchestration": {"execution": {"timeoutPerJob": "10m"}}}}
    return reconciler._timed_out(workflow, group or {}, {"status": job_status})


def test_the_timeout_clock_runs_from_the_workload_start():
    start = {"workloadStartTime": "2026-01-01T00:00:00Z", "workloadRef": {"name": "w"}}
    assert _timed_out("2026-01-01T00:09:59Z", start) == ""
    assert _timed_out("2026-01-01T00:10:01Z", start) == "Job exceeded timeoutPerJob"


def test_a_blocked_interval_pauses_the_clock_until_it_alone_exceeds_the_timeout():
    blocked = {
        "workloadStartTime": "2026-01-01T00:00:00Z",
        "schedulingBlockedSince": "2026-01-01T00:05:00Z",
        "workloadRef": {"name": "w"},
    }
    assert _timed_out("2026-01-01T00:14:00Z", blocked) == "", "5m ran + 9m blocked: the blocked time does not count"
    assert _timed_out("2026-01-01T00:15:01Z", blocked) == "Job exceeded timeoutPerJob while its pods were unschedulable"


def test_a_workload_never_seen_running_never_times_out_and_no_workload_counts_from_the_group():
    assert _timed_out("2026-01-02T00:00:00Z", {"workloadRef": {"name": "w"}}) == ""
    group = {"startTime": "2026-01-01T00:00:00Z"}
    assert _timed_out("2026-01-01T00:11:00Z", {}, group) == "Job exceeded timeoutPerJob"


def test_a_final_attempt_with_no_step_left_reports_the_runs_goodput() -> None:
    """The last attempt resumed at the final checkpoint and logged no step: the measurement completes
    with the earlier attempts' numbers (it used to raise on the missing last step, then say "no data")."""
    from nvcre.compiler.logprofiles import builtin_logprofiles
    from nvcre.runtime.kube.resources import GOODPUT_MEASUREMENTS
    from nvcre.runtime.measure.attempts import PriorAttempts
    from nvcre.runtime.measure.timefmt import rfc3339
    from nvcre.runtime.reconcile.measurement import MeasurementReconciler

    profile = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")
    start = datetime(2026, 12, 4, 5, 0, tzinfo=UTC)
    prior = PriorAttempts(
        interruptions=1,
        wall_start=start,
        warmup=5.0,
        non_warmup=40.0,
        highest_step=200,
        checkpoint_step=200,
        interrupted_at=start + timedelta(seconds=90),
    )
    measurement = {"metadata": {"annotations": {ANNOTATION_GOODPUT_PRIOR_ATTEMPTS: prior.to_json()}}}
    reconciler = MeasurementReconciler.__new__(MeasurementReconciler)  # _fields needs no context with a completion time
    log = "[after Megatron is loaded] loading checkpoint from /mnt/workspace/checkpoints at iteration 200\n"
    fields = reconciler._fields(KINDS[GOODPUT_MEASUREMENTS.plural], profile, log, rfc3339(start + timedelta(seconds=110)), measurement)
    assert fields["highestStep"] == 200 and fields["currentStep"] == 200 and fields["lastCheckpointStep"] == 200
    assert fields["interruptionCount"] == 1 and fields["pendingInterruption"] is None
    assert "lastStepTimestamp" not in fields
