"""Second lowering, first half: which nodes a Workflow runs on and how they are grouped (pure).

``plan_workflow(workflow, facts)`` reads a Workflow (a plain dict, as the API server returns it)
and live :class:`~nvcre.compiler.facts.ClusterFacts`, and returns a :class:`Plan` or raises
:class:`PlanError` with the Workflow's ``Failed`` reason. It never touches a cluster or a clock.
"""

from __future__ import annotations

from .model import (
    HETEROGENEOUS_PLATFORM,
    NODE_DISCOVERY_ERROR,
    PARTITION_ERROR,
    DiagnosePlan,
    Placement,
    Plan,
    PlanError,
    PlanEvent,
    PlannedGroup,
)
from .planner import plan_workflow

__all__ = [
    "HETEROGENEOUS_PLATFORM",
    "NODE_DISCOVERY_ERROR",
    "PARTITION_ERROR",
    "DiagnosePlan",
    "Placement",
    "Plan",
    "PlanError",
    "PlanEvent",
    "PlannedGroup",
    "plan_workflow",
]
