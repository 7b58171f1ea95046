"""The narrow seams between reconcile tiers: what one tier may ask of another, as Protocols.

The tiers do not import one another (a layer contract). Where a parent tier must end a child's
work itself (the Workflow tier's timeout, or a ComputeDomain that never became ready), it is
handed an object with exactly these verdicts, and the controller wires the Job tier in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["JobVerdicts"]


class JobVerdicts(Protocol):
    """The Job verdicts the Workflow tier may give (each returns the Job as written, or None
    when it was terminal already)."""

    def time_out(self, job: dict[str, Any], message: str) -> dict[str, Any] | None:
        """Failed/JobTimedOut: the Workflow's per-Job timeout ran out."""
        ...

    def fail_on_domain(self, job: dict[str, Any], message: str, nodes: Sequence[str]) -> dict[str, Any] | None:
        """Failed/ComputeDomainNotReady, blaming ``nodes`` only."""
        ...

    def bandwidth_unsettled(self, job: Mapping[str, Any]) -> bool:
        """Whether a succeeded Job's verdict still waits for its bandwidth measurement."""
        ...
