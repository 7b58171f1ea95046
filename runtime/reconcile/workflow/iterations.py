"""The Workflow tier's iterations and verdict: the next iteration, or the final phase.

When every group of an iteration is terminal, its groups go to ``iterationHistory`` and the
next iteration starts, or (after the last) the node results are recorded and the Workflow
Succeeds or Fails with NVCRE's reasons. Under diagnose the rounds decide instead.
"""

from __future__ import annotations

from typing import Any

from nvcre.compiler.vocabulary import FAILED_NODES_PREFIX

from ... import compile as compiler
from ...judge import conditions as cond
from ...kube.resources import CONFIGMAPS
from ..common import namespace_of, uid_of
from ..context import Context, Result
from .ports import Results, RoundBoundary
from .spec import history_record, is_diagnose, iterations_of

__all__ = ["Iterations"]


class Iterations:
    """Closes iterations and writes a Workflow's final phase; hands diagnose rounds to ``rounds``."""

    def __init__(self, ctx: Context, results: Results, rounds: RoundBoundary) -> None:
        self.ctx = ctx
        self.results = results
        self.rounds = rounds

    def complete(self, wf: dict[str, Any], status: dict[str, Any]) -> Result:
        """Every group of the iteration in flight is terminal: start the next one, or conclude."""
        ctx = self.ctx
        orchestration = status["orchestration"]
        groups: list[dict[str, Any]] = orchestration["groups"]
        iteration = int(orchestration.get("currentIteration") or 1)
        total = iterations_of(wf)
        now = ctx.clock.stamp()
        if is_diagnose(wf):
            self.rounds.round_complete(wf, status)
            return Result() if cond.is_terminal(status) else Result(ctx.settings.step_interval)
        if iteration < total:
            history = list(orchestration.get("iterationHistory") or [])
            if all(int(h.get("iteration") or 0) != iteration for h in history):
                history.append({"iteration": iteration, "groups": [history_record(g) for g in groups]})
            orchestration["iterationHistory"] = history
            self.results.retire_jobs(wf, status, groups)
            for group in groups:
                group["phase"] = "Pending"
                for key in ("jobRef", "startTime", "completionTime", "retries"):
                    group.pop(key, None)
                if orchestration.get("placement") == "Unpinned":
                    group["nodes"] = []
            orchestration["completedIterations"] = iteration
            orchestration["currentIteration"] = iteration + 1
            message = f"Iteration {iteration}/{total} completed, starting next"
            status.update(cond.set_lifecycle(status, cond.IN_PROGRESS, "IterationCompleted", message, now))
            return Result(ctx.settings.step_interval)
        return self._final(wf, status, groups, total)

    def _final(self, wf: dict[str, Any], status: dict[str, Any], groups: list[dict[str, Any]], total: int) -> Result:
        ctx = self.ctx
        orchestration = status["orchestration"]
        history = orchestration.get("iterationHistory") or []
        failed_count = sum(1 for h in history for g in h.get("groups") or [] if g.get("phase") == "Failed")
        failed_count += sum(1 for g in groups if g.get("phase") == "Failed")
        failed_entries = compiler.stored_failed_nodes(ctx.live(CONFIGMAPS, f"{FAILED_NODES_PREFIX}{uid_of(wf)[:8]}", namespace_of(wf)))
        failed_names = {e["name"] for e in failed_entries}
        ok_nodes = sorted({n for g in groups if g.get("phase") == "Succeeded" for n in g.get("nodes") or ()} - failed_names)
        if ok_nodes:
            self.results.merge(wf, status, succeeded=ok_nodes, failed=[])
        orchestration["completedIterations"] = total
        now = ctx.clock.stamp()
        if failed_count:
            hardware = any(e.get("reason") == "HardwareFailureDetected" for e in failed_entries)
            validation = any(e.get("reason") == "ThresholdViolation" for e in failed_entries)
            message = f"{failed_count} groups failed across {total} iterations"
            if hardware:
                reason = "JobHardwareFailed"
                message += "; hardware failures occurred on one or more nodes"
            elif validation:
                reason = "JobValidationFailed"
            else:
                reason = "IterationsFailed"
            if validation:
                status.update(cond.jobs_failed_validation(status, now))
            status.update(cond.set_lifecycle(status, cond.FAILED, reason, message, now))
        else:
            message = f"All {total} iterations completed successfully"
            status.update(cond.set_lifecycle(status, cond.SUCCEEDED, "JobCompleted", message, now))
        return Result()
