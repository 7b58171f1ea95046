"""What one part of the Workflow tier may ask of another, as Protocols.

No part holds the coordinator or imports a sibling part: each is handed the objects it asks of
here, and only the coordinator (``__init__``) builds and wires them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..context import Context

__all__ = ["DiagnoseFlags", "Results", "RoundBoundary", "StatusWrite", "VolumeSteps"]


class StatusWrite(Protocol):
    """Write a Workflow's status whole over the version it was computed from."""

    def __call__(self, wf: Mapping[str, Any], status: dict[str, Any], /) -> None: ...


class Results(Protocol):
    """What a finished group leaves behind: node results, and its Job retired with its dependencies."""

    def merge(self, wf: Mapping[str, Any], status: dict[str, Any], *, succeeded: Sequence[str], failed: list[Mapping[str, Any]]) -> None:
        """Add to the Workflow's succeeded/failed node ConfigMaps and reference them in ``status``."""
        ...

    def clean_job_dependencies(self, status: dict[str, Any], job: Mapping[str, Any]) -> None:
        """Delete the dependencies owned by ``job`` and drop them from ``dependencyRefs``."""
        ...

    def retire_jobs(self, wf: Mapping[str, Any], status: dict[str, Any], groups: list[dict[str, Any]]) -> None:
        """Delete the Jobs (and their job-scoped dependencies) of a finished iteration's groups."""
        ...


class DiagnoseFlags(Protocol):
    """The planner's per-group flags of a diagnose round in flight."""

    def group_flags(self, wf: Mapping[str, Any], status: Mapping[str, Any], name: str) -> tuple[bool, bool]:
        """(loopback, no_nvl) of group ``name``."""
        ...


class RoundBoundary(Protocol):
    """A diagnose round whose groups are all terminal: the next round, or the diagnosis."""

    def round_complete(self, wf: dict[str, Any], status: dict[str, Any]) -> None: ...


class VolumeSteps(Protocol):
    """The volume phases of a Workflow's deletion (the :mod:`..reclaim` module is one)."""

    def stamp_volumes(self, ctx: Context, wf: Mapping[str, Any]) -> None:
        """Mark the volumes of the Workflow's claims as provisioned for it, while the claims exist."""
        ...

    def reclaim_volumes(self, ctx: Context, wf: Mapping[str, Any]) -> bool:
        """Hand the Released volumes back; False while one is still Bound."""
        ...
