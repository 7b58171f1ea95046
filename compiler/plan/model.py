"""The plan's result types: the groups a Workflow runs on, the events to emit, and the plan error.

Everything here is immutable plain data. A :class:`Plan` is what the Workflow controller writes to
``status.orchestration`` (groups, node counts, exclusions) and the events it records; a
:class:`PlanError` carries the Workflow's ``Failed`` reason and message, plus whatever was already
decided (exclusions and events) so the failure still leaves the coverage record behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..workflow_spec import Placement

__all__ = [
    "HETEROGENEOUS_PLATFORM",
    "NODE_DISCOVERY_ERROR",
    "OVERRIDE_ERROR",
    "PARTITION_ERROR",
    "PLAN_ERROR_REASONS",
    "DiagnosePlan",
    "Placement",
    "Plan",
    "PlanError",
    "PlanEvent",
    "PlannedGroup",
]

NODE_DISCOVERY_ERROR = "NodeDiscoveryError"
OVERRIDE_ERROR = "OverrideError"
PARTITION_ERROR = "PartitionError"
HETEROGENEOUS_PLATFORM = "HeterogeneousPlatform"
PLAN_ERROR_REASONS = (NODE_DISCOVERY_ERROR, PARTITION_ERROR, HETEROGENEOUS_PLATFORM, OVERRIDE_ERROR)


@dataclass(frozen=True)
class PlanEvent:
    """An event the Workflow controller records on the Workflow (``Warning`` or ``Normal``)."""

    type: str
    reason: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class PlannedGroup:
    """One group of nodes and the Job that will run on it.

    ``nodes`` is empty under Unpinned placement (the scheduler chooses). ``domains`` names the
    topology domains the group spans; ``domain_node_counts`` is set only for groups that span more
    than one domain. ``overflow`` marks a group that re-uses nodes of full groups to reach the job
    size.
    """

    name: str
    nodes: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    domain_node_counts: Mapping[str, int] = field(default_factory=dict, hash=False)
    overflow: bool = False
    #: a diagnose round's single-node run with SHM and P2P off (traffic crosses the node's own NICs)
    loopback: bool = False
    #: a diagnose round's run with multi-node NVLink off (``NCCL_MNNVL_ENABLE=0``)
    no_nvl: bool = False

    def as_status(self) -> dict[str, Any]:
        """The group as ``status.orchestration.groups[]`` holds it before its Job starts."""
        out: dict[str, Any] = {"name": self.name, "nodes": list(self.nodes), "phase": "Pending"}
        if self.domains:
            out["domains"] = list(self.domains)
        if self.domain_node_counts:
            out["domainNodeCounts"] = dict(sorted(self.domain_node_counts.items()))
        if self.overflow:
            out["overflow"] = True
        return out


@dataclass(frozen=True)
class DiagnosePlan:
    """What the adaptive fault-isolation rounds start from (``testScale: diagnose``).

    The plan produces the first round only, the screening groups; later rounds are planned from the
    verdicts of this one.
    """

    #: the first round's stage as ``status.orchestration.diagnose.stage`` reports it (NVCRE's names)
    stage: str
    min_group_size: int
    topology_key: str = ""
    #: whether the workload enables multi-node NVLink (a no-NVLink re-screen round is possible)
    mnnvl_enabled: bool = False
    #: ``adaptive`` or ``baseline`` (see :mod:`nvcre.compiler.diagnose.session`)
    planner: str = "adaptive"
    #: the first round's own stage name and message, as the planner gave them
    round_stage: str = ""
    round_message: str = ""

    def as_status(self) -> dict[str, Any]:
        """The ``status.orchestration.diagnose`` block at the start of the first round."""
        return {"stage": self.stage, "round": 1}


@dataclass(frozen=True)
class Plan:
    """Which nodes a Workflow runs on and how they are grouped, decided from live cluster facts."""

    groups: tuple[PlannedGroup, ...]
    nodes_per_job: int
    #: the nodes that survived discovery and every filter, sorted by name
    target_nodes: tuple[str, ...]
    excluded_nodes: tuple[str, ...]
    exclusion_reason: str
    placement: Placement
    #: distinct ``nvidia.com/gpu.product`` label values of the target nodes (for node affinity)
    gpu_products: tuple[str, ...]
    health_monitor_cleared: bool
    events: tuple[PlanEvent, ...]
    message: str
    platform: str = ""
    gpu_architecture: str = ""
    #: the largest ``nvidia.com/gpu`` request the workload makes per node (0 when it makes none)
    gpus_per_node: int = 0
    iterations: int = 1
    #: a topology key the Unpinned placement ignored (logged, never an error)
    ignored_topology_key: str = ""
    #: nodes no regular group holds: only an overflow group tests them
    leftover_nodes: tuple[str, ...] = ()
    #: ``status.orchestration.appliedOverrides``: the overrides that matched, in order
    applied_overrides: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    #: the Workflow spec the Jobs are built from: matching overrides applied, ``overrides`` removed
    workflow_spec: Mapping[str, Any] | None = field(default=None, hash=False, compare=False, repr=False)
    diagnose: DiagnosePlan | None = None

    @property
    def total_nodes(self) -> int:
        return len(self.target_nodes)

    @property
    def total_groups(self) -> int:
        return len(self.groups)

    def group(self, name: str) -> PlannedGroup:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"the plan has no group {name!r}; groups: {', '.join(g.name for g in self.groups)}")

    def as_dict(self) -> dict[str, Any]:
        """Every decision of the plan as plain data (for review, golden files and ``--explain``)."""
        out: dict[str, Any] = {
            "message": self.message,
            "placement": self.placement,
            "nodesPerJob": self.nodes_per_job,
            "iterations": self.iterations,
            "platform": self.platform,
            "gpuArchitecture": self.gpu_architecture,
            "gpuProducts": list(self.gpu_products),
            "gpusPerNode": self.gpus_per_node,
            "targetNodes": list(self.target_nodes),
            "excludedNodes": list(self.excluded_nodes),
            "exclusionReason": self.exclusion_reason,
            "healthMonitorCleared": self.health_monitor_cleared,
            "events": [e.as_dict() for e in self.events],
            "groups": [g.as_status() for g in self.groups],
        }
        if self.ignored_topology_key:
            out["ignoredTopologyKey"] = self.ignored_topology_key
        if self.leftover_nodes:
            out["leftoverNodes"] = list(self.leftover_nodes)
        if self.applied_overrides:
            out["appliedOverrides"] = [dict(a) for a in self.applied_overrides]
        execution = ((self.workflow_spec or {}).get("orchestration") or {}).get("execution")
        if execution:
            out["execution"] = dict(execution)
        if self.diagnose is not None:
            out["diagnose"] = {
                "stage": self.diagnose.stage,
                "minGroupSize": self.diagnose.min_group_size,
                "topologyKey": self.diagnose.topology_key,
                "mnnvlEnabled": self.diagnose.mnnvl_enabled,
                "planner": self.diagnose.planner,
                "roundStage": self.diagnose.round_stage,
                "roundMessage": self.diagnose.round_message,
            }
        return out

    def as_status(self) -> dict[str, Any]:
        """``status.orchestration`` as the controller writes it once the groups are partitioned."""
        out: dict[str, Any] = {
            "totalNodes": self.total_nodes,
            "nodesPerJob": self.nodes_per_job,
            "totalGroups": self.total_groups,
            "currentIteration": 1,
            "detectedPlatform": self.platform,
            "detectedGPUArchitecture": self.gpu_architecture,
            "placement": self.placement,
            "groups": [g.as_status() for g in self.groups],
        }
        if self.gpu_products:
            out["gpuProducts"] = list(self.gpu_products)
        if self.excluded_nodes:
            out["excludedNodes"] = list(self.excluded_nodes)
            out["exclusionReason"] = self.exclusion_reason
        if self.applied_overrides:
            out["appliedOverrides"] = [dict(a) for a in self.applied_overrides]
        if self.diagnose is not None:
            out["diagnose"] = self.diagnose.as_status()
        return out


class PlanError(Exception):
    """The Workflow cannot be planned: ``reason`` is its ``Failed`` condition reason
    (``NodeDiscoveryError``, ``PartitionError``, ``HeterogeneousPlatform`` or ``OverrideError``).

    ``excluded_nodes``/``exclusion_reason`` and ``events`` hold what discovery had already decided
    when planning failed, so the controller can still record them.
    """

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        excluded_nodes: tuple[str, ...] = (),
        exclusion_reason: str = "",
        events: tuple[PlanEvent, ...] = (),
    ) -> None:
        if reason not in PLAN_ERROR_REASONS:
            raise ValueError(f"unknown plan error reason {reason!r}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.excluded_nodes = excluded_nodes
        self.exclusion_reason = exclusion_reason
        self.events = events
