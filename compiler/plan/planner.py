"""``plan_workflow``: discover a Workflow's nodes in live facts and partition them into job groups.

The order is the Workflow controller's: discovery (:mod:`.discover`), the Workflow's overrides
for the detected platform and architecture (:mod:`.overrides`), placement checks, the GPU
capacity filter (on the overridden request), the job size (``trainer.numNodes`` of the template; unset means every node under Pinned), then grouping
by what the orchestration asks for: the first ``diagnose`` round (NVCRE's screening groups, or the
adaptive planner's single-node local screen), a topology key, or name order. Under
Unpinned placement there is exactly one group, ``group-0``, with no node list.

Pure: the same Workflow and facts always give the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..diagnose import planner as planner_named
from ..diagnose import session
from ..facts import ClusterFacts, name_of
from ..workflow_spec import GPU_RESOURCE, WorkflowSpecView, read_workflow
from .discover import Discovery, discover, filter_gpu_capacity, node_labels
from .model import OVERRIDE_ERROR, PARTITION_ERROR, DiagnosePlan, Plan, PlanError, PlannedGroup
from .overrides import OverrideContext, OverrideFailure, OverrideResult, apply_overrides
from .partition import (
    PartitionFailure,
    partition_by_name,
    partition_by_topology,
    screening_groups,
)

__all__ = ["DEFAULT_MIN_GROUP_SIZE", "plan_workflow"]

DEFAULT_MIN_GROUP_SIZE = 2


def _check_placement(spec: WorkflowSpecView) -> None:
    if spec.placement != "Unpinned":
        return
    if spec.diagnose is not None:
        raise PlanError(
            PARTITION_ERROR,
            "orchestration.placement: Unpinned is incompatible with orchestration.diagnose: diagnose isolates faults "
            "by splitting the nodes into groups and bisecting the failing ones, which needs the node pinning Unpinned "
            "gives up; keep one of the two",
        )
    if spec.strict_domain:
        raise PlanError(
            PARTITION_ERROR,
            "orchestration.placement: Unpinned is incompatible with orchestration.topology.strictDomain: strictDomain "
            "runs one job per topology domain and Unpinned runs exactly one job; to keep a single unpinned job inside "
            "one domain, put the domain label in target.matchExpressions",
        )
    if spec.requested_nodes_per_job < 1:
        raise PlanError(
            PARTITION_ERROR,
            "orchestration.placement: Unpinned requires an explicit job size: set the workload's numNodes "
            "(nodesPerJob) to the number of nodes the one job uses; Unpinned never falls back to every matching node",
        )


def _shortfall_message(needed: int, state: Discovery, *, unpinned: bool) -> str:
    found = len(state.nodes)
    message = f"Not enough schedulable nodes: need {needed}, found {found}"
    causes: list[str] = []
    remedies: list[str] = []
    if state.arch_excluded:
        causes.append(
            f"{len(state.arch_excluded)} node(s) matched the target but were excluded for not being GPU architecture "
            f"{state.gpu_architecture}: {', '.join(state.arch_excluded)}"
        )
        remedies.append("narrow the target to one architecture")
    if state.capacity_excluded:
        detail = ", ".join(f"{n} has {c}" for n, c in state.capacity_excluded)
        causes.append(
            f"{len(state.capacity_excluded)} node(s) matched the target but were excluded for having fewer than the "
            f"{state.spec.gpus_per_node} allocatable {GPU_RESOURCE} the workload requests per node: {detail}"
        )
        remedies.append("lower gpusPerNode")
    if state.mig_excluded:
        causes.append(
            f"{len(state.mig_excluded)} node(s) matched the target but were excluded because their {GPU_RESOURCE} are MIG "
            f"devices, not whole GPUs: {', '.join(state.mig_excluded)}"
        )
        remedies.append("disable MIG on those nodes")
    if unpinned:
        tail = (
            f"; Unpinned runs the requested job size exactly, so make {needed} qualifying nodes available rather than lowering nodesPerJob"
        )
        return message + (". " + ". ".join(causes) if causes else "") + tail
    if not causes:
        return message
    return f"{message}. {'. '.join(causes)}. Set nodesPerJob to {found}, or {', or '.join(remedies)}"


def _labels_by_node(state: Discovery) -> dict[str, Mapping[str, str]]:
    """Each node's labels, read in place (planning never changes them)."""
    return {name_of(n): node_labels(n) for n in state.nodes}


def _diagnose_round(workflow: Mapping[str, Any], spec: WorkflowSpecView, state: Discovery) -> tuple[tuple[PlannedGroup, ...], DiagnosePlan]:
    """The first diagnose round: NVCRE's screening groups (baseline) or the adaptive local screen."""
    assert spec.diagnose is not None
    names = state.names
    key = str(spec.diagnose.get("topologyKey") or "")
    min_size = spec.diagnose.get("minGroupSize")
    chosen = session.planner_of(workflow)
    labels = _labels_by_node(state)
    if chosen == "baseline":
        groups = screening_groups(names, labels, key)
        stage, message = "intra-screening", f"Screening {len(names)} nodes in {len(groups)} groups"
    else:
        options = session.options_for(workflow, len(names), mnnvl=spec.mnnvl_enabled)
        topology = {n: labels.get(n, {}).get(key) or "unknown" for n in names} if key else None
        _, first = planner_named(chosen).start(names, topology, options)

        def domain(node: str) -> list[str]:
            return [labels.get(node, {}).get(key) or "unknown"] if key else []

        groups = tuple(
            PlannedGroup(
                g.name, g.nodes, domains=tuple(domain(g.nodes[0])) if len(g.nodes) == 1 else (), loopback=g.loopback, no_nvl=g.no_nvl
            )
            for g in first.groups
        )
        stage, message = first.stage, first.message
    diagnose = DiagnosePlan(
        stage=session.status_stage(stage),
        min_group_size=max(int(min_size), 1) if isinstance(min_size, int) and not isinstance(min_size, bool) else DEFAULT_MIN_GROUP_SIZE,
        topology_key=key,
        mnnvl_enabled=spec.mnnvl_enabled,
        planner=chosen,
        round_stage=stage,
        round_message=message,
    )
    return groups, diagnose


def _groups(
    workflow: Mapping[str, Any], spec: WorkflowSpecView, state: Discovery, nodes_per_job: int
) -> tuple[tuple[PlannedGroup, ...], DiagnosePlan | None]:
    names = state.names
    try:
        if spec.diagnose is not None:
            return _diagnose_round(workflow, spec, state)
        if spec.topology_key:
            return partition_by_topology(
                names, _labels_by_node(state), nodes_per_job, spec.topology_key, strict_domain=spec.strict_domain
            ), None
        return partition_by_name(names, nodes_per_job), None
    except PartitionFailure as exc:
        raise state.fail(PARTITION_ERROR, f"Failed to partition nodes: {exc}") from None


def _override(workflow: Mapping[str, Any], state: Discovery) -> tuple[Discovery, OverrideResult]:
    """Apply the Workflow's overrides for the detected platform and architecture."""
    spec = workflow.get("spec") or {}
    key = state.spec.topology_key
    ctx = OverrideContext(
        platform=state.platform,
        gpu_architecture=state.gpu_architecture,
        topology_mode="topology" if (spec.get("orchestration") or {}).get("topology") else "simple",
        domain_count=len({node_labels(n).get(key) for n in state.nodes} - {None, ""}) if key else 0,
    )
    try:
        result = apply_overrides(spec, ctx)
    except OverrideFailure as exc:
        raise state.fail(OVERRIDE_ERROR, f"Failed to apply overrides: {exc}") from None
    effective = read_workflow({**workflow, "spec": result.spec})
    return replace(state, spec=effective, events=state.events + result.events), result


def plan_workflow(workflow: Mapping[str, Any], facts: ClusterFacts) -> Plan:
    """Plan ``workflow`` over ``facts``; raise PlanError (or CompileError for a malformed Workflow)."""
    state = discover(facts, read_workflow(workflow))
    state, overridden = _override(workflow, state)
    spec = state.spec
    _check_placement(spec)
    state = filter_gpu_capacity(state)
    found = len(state.nodes)
    requested = spec.requested_nodes_per_job
    unpinned = spec.placement == "Unpinned"

    if unpinned:
        if requested > found:
            raise state.fail(PARTITION_ERROR, _shortfall_message(requested, state, unpinned=True))
        groups: tuple[PlannedGroup, ...] = (PlannedGroup(name="group-0"),)
        diagnose = None
        nodes_per_job = requested
        message = f"Discovered {found} nodes, running 1 unpinned job of {requested} nodes ({found - requested} target nodes not exercised)"
    else:
        nodes_per_job = requested if requested >= 1 else found
        if nodes_per_job > found:
            raise state.fail(PARTITION_ERROR, _shortfall_message(nodes_per_job, state, unpinned=False))
        groups, diagnose = _groups(workflow, spec, state, nodes_per_job)
        if diagnose is not None:
            nodes_per_job = max(len(g.nodes) for g in groups)
        message = f"Discovered {found} nodes, partitioned into {len(groups)} groups ({nodes_per_job} nodes/job)"

    excluded, reason = state.exclusions()
    return Plan(
        groups=groups,
        nodes_per_job=nodes_per_job,
        target_nodes=state.names,
        excluded_nodes=excluded,
        exclusion_reason=reason,
        placement=spec.placement,
        gpu_products=state.gpu_products,
        health_monitor_cleared=spec.selects_cordoned,
        events=state.events,
        message=message,
        platform=state.platform,
        gpu_architecture=state.gpu_architecture,
        gpus_per_node=spec.gpus_per_node,
        iterations=spec.iterations,
        ignored_topology_key=spec.topology_key if unpinned else "",
        diagnose=diagnose,
        leftover_nodes=_leftovers(groups),
        applied_overrides=overridden.applied,
        workflow_spec=overridden.spec,
    )


def _leftovers(groups: tuple[PlannedGroup, ...]) -> tuple[str, ...]:
    """Nodes only an overflow group tests (the remainder of the partition)."""
    regular = {n for g in groups if not g.overflow for n in g.nodes}
    return tuple(sorted({n for g in groups if g.overflow for n in g.nodes} - regular))
