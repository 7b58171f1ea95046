"""What the parts of the Job tier ask of one another, as Protocols: each part is handed these.

No part holds the tier's reconciler or another part's class: the observing part is handed
something that can fail a Job and something that can restart one, the creating part something
that prepares a restart, and so on. The coordinator in ``__init__`` builds the parts and wires
them together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..context import Result

__all__ = ["Failer", "HealthChecker", "JobReader", "RestartPreparer", "Restarter", "RunningRecorder", "Validator"]


class JobReader(Protocol):
    """The shared reads of a Job's surroundings (:class:`.reads.JobReads`)."""

    def workflow_of(self, job: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def pods(self, job: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    def goodput(self, job: Mapping[str, Any]) -> dict[str, Any] | None: ...


class Failer(Protocol):
    """Ends a Job Failed (:class:`.failure.JobFailure`)."""

    def fail(
        self,
        job: dict[str, Any],
        reason: str,
        message: str,
        *,
        log_reason: str | None = None,
        timed_out: bool = False,
        blame: bool = True,
        blame_nodes: Sequence[str] | None = None,
    ) -> dict[str, Any] | None: ...


class RestartPreparer(Protocol):
    """Readies a restarted Job for its next workload (:class:`.restart.Restarts`)."""

    def prepare(self, job: dict[str, Any]) -> Result | None: ...


class Restarter(RestartPreparer, Protocol):
    """Restarts a Job from its checkpoint, or fails it (:class:`.restart.Restarts`)."""

    def restart_or_fail(self, job: dict[str, Any], reason: str, message: str, *, blame: bool = True) -> Result: ...


class Validator(Protocol):
    """Judges a succeeded Job's measurements (:class:`.validation.Validation`)."""

    def judge(self, job: dict[str, Any]) -> Result: ...


class RunningRecorder(Protocol):
    """Writes a running Job's state and scheduling clock (:class:`.running.RunningClock`)."""

    def record(self, job: dict[str, Any], tj_name: str, pods: list[dict[str, Any]]) -> Result: ...


class HealthChecker(Protocol):
    """Runs a Job's node health monitor (:class:`.health.HealthWatch`)."""

    def check(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None: ...
