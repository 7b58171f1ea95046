"""``testScale: diagnose`` in the Workflow tier: every round is one iteration of the Workflow.

The planner's state is never stored. The status keeps what NVCRE's schema has room for: the first
round's groups (``diagnose.screeningResults``: group -> nodes, passed), every finished round's
groups and phases (``iterationHistory``) and, for the round in flight, ``groups``. On each round
boundary the pure planner is replayed from ``start`` over those results (each group's pass/fail
and bus bandwidth), and the replay says what to run next or what the diagnosis is. A round's
bandwidth is read from its Jobs' BandwidthMeasurements and written into ``iterationHistory``
(``busBandwidthGBps``) before the round's Jobs are retired: the measurements, like every object
of a round, are owned by their Job and go with it. A restarted controller replays the same
history and continues exactly.

At the end the confirmed nodes, and only they, go to the failed-nodes ConfigMap, with the reason
of the run that confirmed them (``ThresholdViolation``, ``WorkloadFailed``...) and the planner's
message; a bad link goes to ``diagnose.infrastructureFaults`` and blames neither end.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ... import compile as compiler
from ...judge import conditions as cond
from ...judge.thresholds import measured_values
from ...kube.resources import BANDWIDTH_MEASUREMENTS, JOBS
from ..common import name_of, namespace_of, uid_of
from ..context import Context
from .ports import Results
from .spec import history_record

__all__ = ["DiagnoseRounds"]

log = logging.getLogger("nvcre.runtime.reconcile.diagnose")

DEFAULT_REASON = "WorkloadFailed"
#: where a finished round's group keeps its bus bandwidth in ``iterationHistory``
BANDWIDTH_FIELD = "busBandwidthGBps"


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _threshold_text(wf: Mapping[str, Any]) -> str:
    """The category's thresholds as written, ``busBandwidthGBps: value >= 100``."""
    performance = (((wf.get("spec") or {}).get("validation") or {}).get("performance")) or {}
    thresholds = (performance.get("thresholds") or {}).get("thresholds") or {}
    return "; ".join(f"{k}: {v}" for k, v in sorted(thresholds.items())) or "none"


def _phase_passed(phase: Any) -> bool:
    return bool(phase == "Succeeded")


def _blamed_on_bandwidth(history: Sequence[Mapping[str, Any]]) -> set[str]:
    """Nodes that ran alone and whose every single-node Job completed: when such a node is blamed,
    it was on the bandwidth it measured against its peers (``ThresholdViolation``), never on a
    workload that failed, whichever round its last failing run was in."""
    alone: dict[str, bool] = {}
    for record in history:
        for group in record.get("groups") or ():
            nodes = list(group.get("nodes") or ())
            if len(nodes) == 1:
                node = str(nodes[0])
                alone[node] = alone.get(node, True) and _phase_passed(group.get("phase"))
    return {node for node, completed in alone.items() if completed}


class DiagnoseRounds:
    """Round boundaries of diagnose Workflows: reads through ``ctx``, leaves node results and
    retires a round's Jobs through ``results``."""

    def __init__(self, ctx: Context, results: Results) -> None:
        self.ctx = ctx
        self.results = results
        #: (workflow uid, finished rounds) -> loopback/no-NVL flags of the round's groups
        self._flags: dict[tuple[str, int], dict[str, tuple[bool, bool]]] = {}
        #: which Workflow (namespace, name) each remembered round belongs to
        self._flag_owner: dict[tuple[str, int], tuple[str, str]] = {}
        #: "<namespace>/<job>" -> final bus bandwidth, read once
        self._bandwidth: dict[str, float] = {}

    # ------------------------------------------------------------------ reading the history

    def _bus_bw(self, wf: Mapping[str, Any], job_name: str) -> float | None:
        """The final bus bandwidth of a round's Job (its BandwidthMeasurement outlives the Job)."""
        if not job_name:
            return None
        key = f"{namespace_of(wf)}/{job_name}"
        if key in self._bandwidth:
            return self._bandwidth[key]
        # A live read: the value steers the next round, so it must not come from a lagging cache.
        measurement = self.ctx.live(BANDWIDTH_MEASUREMENTS, f"{job_name}-bandwidth", namespace_of(wf))
        value = measured_values(measurement).get("busBandwidthGBps") if measurement else None
        if value is not None:
            self._bandwidth[key] = value  # final results never change
        return value

    def _outcomes(self, wf: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, float | None, bool]]:
        out: dict[str, tuple[bool, float | None, bool]] = {}
        for group in groups:
            job_name = str(group.get("jobName") or (group.get("jobRef") or {}).get("name") or "")
            recorded = _number(group.get(BANDWIDTH_FIELD))
            bandwidth = recorded if recorded is not None else self._bus_bw(wf, job_name)
            out[str(group["name"])] = (_phase_passed(group.get("phase")), bandwidth, bool(job_name))
        return out

    @staticmethod
    def _first_round(orchestration: Mapping[str, Any]) -> dict[str, list[str]]:
        recorded = (orchestration.get("diagnose") or {}).get("screeningResults") or {}
        if recorded:
            return {name: list(v.get("nodes") or ()) for name, v in recorded.items()}
        return {str(g["name"]): list(g.get("nodes") or ()) for g in orchestration.get("groups") or ()}

    @staticmethod
    def _history(orchestration: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return sorted(orchestration.get("iterationHistory") or [], key=lambda h: int(h.get("iteration") or 0))

    def _finished(
        self, wf: Mapping[str, Any], orchestration: Mapping[str, Any], *, with_current: bool
    ) -> list[dict[str, tuple[bool, float | None, bool]]]:
        finished = [self._outcomes(wf, h.get("groups") or ()) for h in self._history(orchestration)]
        if with_current:
            finished.append(self._outcomes(wf, orchestration.get("groups") or ()))
        return finished

    def _replay(
        self, wf: Mapping[str, Any], orchestration: Mapping[str, Any], finished: Sequence[Mapping[str, tuple[bool, float | None, bool]]]
    ) -> Any:
        return compiler.diagnose_replay(wf, self._first_round(orchestration), finished)

    # ------------------------------------------------------------------ launching

    def forget(self, namespace: str, workflow: str) -> None:
        """Drop the remembered rounds and bandwidths of a Workflow that ended or went (its Jobs
        are ``<workflow>-...``)."""
        prefix = f"{namespace}/{workflow}-"
        for key in [k for k in self._bandwidth if k.startswith(prefix)]:
            del self._bandwidth[key]
        for round_key in [k for k in self._flags if self._flag_owner.get(k) == (namespace, workflow)]:
            self._flags.pop(round_key, None)
            self._flag_owner.pop(round_key, None)

    def group_flags(self, wf: Mapping[str, Any], status: Mapping[str, Any], name: str) -> tuple[bool, bool]:
        """(loopback, no_nvl) of a group of the round in flight."""
        orchestration = status.get("orchestration") or {}
        key = (uid_of(wf), len(orchestration.get("iterationHistory") or ()))
        if key not in self._flags:
            replayed = self._replay(wf, orchestration, self._finished(wf, orchestration, with_current=False))
            current = replayed.current
            groups = current.groups if current is not None else ()
            self._flags[key] = {g.name: (g.loopback, g.no_nvl) for g in groups}
            self._flag_owner[key] = (namespace_of(wf), name_of(wf))
        return self._flags[key].get(name, (False, False))

    # ------------------------------------------------------------------ a round ended

    def round_complete(self, wf: dict[str, Any], status: dict[str, Any]) -> None:
        """Fold the finished round into the status: start the next round, or conclude."""
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        iteration = int(orchestration.get("currentIteration") or 1)
        now = ctx.clock.stamp()
        diagnose = dict(orchestration.get("diagnose") or {})
        if not diagnose.get("screeningResults"):
            diagnose["screeningResults"] = {
                str(g["name"]): {"nodes": list(g.get("nodes") or ()), "passed": _phase_passed(g.get("phase"))} for g in groups
            }
        orchestration["diagnose"] = diagnose
        finished = self._finished(wf, orchestration, with_current=True)
        try:
            replayed = self._replay(wf, orchestration, finished)
        except (compiler.CompileError, ValueError) as exc:
            message = f"Cannot continue the diagnosis: {exc}"
            status.update(cond.set_lifecycle(status, cond.FAILED, "DiagnoseFailed", message, now))
            return
        played = replayed.rounds[-1]
        if sorted(g.name for g in played.groups) != sorted(str(g["name"]) for g in groups):
            message = (
                f"Cannot continue the diagnosis: round {iteration} ran groups "
                f"{', '.join(sorted(str(g['name']) for g in groups))} but the planner replays "
                f"{', '.join(sorted(g.name for g in played.groups))}"
            )
            status.update(cond.set_lifecycle(status, cond.FAILED, "DiagnoseFailed", message, now))
            return
        history = list(orchestration.get("iterationHistory") or [])
        if all(int(h.get("iteration") or 0) != iteration for h in history):
            records = []
            for group in groups:
                record = history_record(group)
                # the report lists each test's nodes after the round's Jobs are gone
                record["nodes"] = sorted(str(n) for n in group.get("nodes") or [])
                bandwidth = finished[-1].get(str(group["name"]), (False, None, False))[1]
                if bandwidth is not None:
                    record[BANDWIDTH_FIELD] = f"{bandwidth:g}"
                records.append(record)
            history.append({"iteration": iteration, "groups": records})
        orchestration["iterationHistory"] = history
        self._evidence(diagnose, replayed, finished)
        current, diagnosis = replayed.current, replayed.diagnosis
        if current is not None:
            self.results.retire_jobs(wf, status, groups)
            orchestration["groups"] = [self._group_status(g) for g in current.groups]
            orchestration["totalGroups"] = len(current.groups)
            orchestration["completedIterations"] = iteration
            orchestration["currentIteration"] = iteration + 1
            diagnose["round"] = iteration + 1
            diagnose["stage"] = compiler.diagnose_stage(current.stage)
            message = f"Diagnose round {iteration} ({played.stage}) completed; round {iteration + 1} ({current.stage}): {current.message}"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "IterationCompleted", message, now))
            ctx.event(wf, "Normal", "IterationCompleted", message)
            return
        assert diagnosis is not None
        self._conclude(wf, status, groups, diagnosis, iteration)

    @staticmethod
    def _group_status(group: Any) -> dict[str, Any]:
        return {"name": group.name, "nodes": list(group.nodes), "phase": "Pending"}

    def _evidence(self, diagnose: dict[str, Any], replayed: Any, outcomes: Sequence[Mapping[str, tuple[bool, float | None, bool]]]) -> None:
        """healthyNodes / suspectNodes / infrastructureFaults as far as the rounds so far show."""
        diagnosis = replayed.diagnosis
        if diagnosis is not None:
            diagnose["healthyNodes"] = sorted(diagnosis.healthy_nodes)
            diagnose["suspectNodes"] = sorted({*diagnosis.faulty_nodes, *diagnosis.unresolved})
            diagnose["infrastructureFaults"] = [
                {"domain": "path", "groupA": list(f.side_a), "groupB": list(f.side_b), "stage": f.stage}
                for f in diagnosis.infrastructure_faults
            ]
            return
        # In flight: a node is healthy while every group it ran in passed, a suspect once one failed.
        ever_failed: set[str] = set()
        seen: set[str] = set()
        for round_, outcome in zip(replayed.rounds, outcomes):
            for group in round_.groups:
                seen.update(group.nodes)
                if not outcome.get(group.name, (False, None, False))[0]:
                    ever_failed.update(group.nodes)
        diagnose["healthyNodes"] = sorted(seen - ever_failed)
        diagnose["suspectNodes"] = sorted(ever_failed)

    def _confirming_entries(self, wf: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """node -> the failed-node entry its last failing Job of this round recorded."""
        ctx = self.ctx
        out: dict[str, Mapping[str, Any]] = {}
        for group in groups:
            job_name = str((group.get("jobRef") or {}).get("name") or "")
            job = ctx.live(JOBS, job_name, namespace_of(wf)) if job_name and group.get("phase") == "Failed" else None
            for entry in ((job or {}).get("status") or {}).get("failedNodes") or []:
                if isinstance(entry, Mapping) and entry.get("name"):
                    out.setdefault(str(entry["name"]), entry)
        return out

    def _conclude(self, wf: dict[str, Any], status: dict[str, Any], groups: list[dict[str, Any]], diagnosis: Any, iteration: int) -> None:
        ctx = self.ctx
        orchestration = status["orchestration"]
        diagnose = orchestration["diagnose"]
        evidence = self._confirming_entries(wf, groups)
        slow = _blamed_on_bandwidth(self._history(orchestration))
        failed: list[Mapping[str, Any]] = [
            {
                "name": node,
                "reason": str((evidence.get(node) or {}).get("reason") or ("ThresholdViolation" if node in slow else DEFAULT_REASON)),
                "message": reason,
            }
            for node, reason in sorted(diagnosis.faulty_nodes.items())
        ]
        healthy = sorted(set(diagnosis.healthy_nodes) - set(diagnosis.faulty_nodes))
        if failed:
            self.results.merge(wf, status, succeeded=(), failed=failed)
        if healthy:
            self.results.merge(wf, status, succeeded=healthy, failed=[])
        diagnose["stage"] = "complete"
        diagnose["round"] = iteration
        orchestration["completedIterations"] = iteration
        now = ctx.clock.stamp()
        message = diagnosis.message
        if diagnosis.threshold_unmet:
            message += f" (thresholds: {_threshold_text(wf)})"
        if diagnosis.unresolved:
            message += f"; {len(diagnosis.unresolved)} node(s) unresolved: {', '.join(diagnosis.unresolved)}"
        if diagnosis.failed:
            reason = "IterationsFailed"
            if diagnosis.threshold_unmet or any(e["reason"] == "ThresholdViolation" for e in failed):
                status.update(cond.jobs_failed_validation(status, now))
            status.update(cond.set_lifecycle(status, cond.FAILED, reason, message, now))
        else:
            status.update(cond.set_lifecycle(status, cond.SUCCEEDED, "JobCompleted", message, now))
        log.info("diagnosis complete", extra={"workflow": name_of(wf), "diagnosis": message})
