"""Workflow: partitions the target nodes into groups and runs one Job per group and iteration.

A Certification makes one Workflow per category and a WorkloadRun makes one from its inline
spec; a Workflow can also be written by hand. The spec carries the Job template (with the
arbitrary TrainJob inside), the orchestration (target, topology, diagnose bisection,
execution limits, placement), inline dependency objects created beside the Jobs, and
overrides matched against the detected platform and GPU architecture.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Optional

from pydantic import ConfigDict, Field

from .cel_rules import immutable, presence_fixed
from .common import (
    PHASE_COLUMN,
    ApiModel,
    ApiObject,
    Conditions,
    Duration,
    FreeForm,
    FreeFormObject,
    GangSchedulerSpec,
    Int32,
    Int64,
    NodeNameSet,
    Phase,
    TargetSpec,
    TemplateMeta,
    Thresholds,
    Time,
    TypedLocalObjectReference,
    WorkloadReference,
)
from .job import JobSpec
from .markers import Crd
from .patterns import DNS_LABEL, MAX_SHORT_STRING

Placement = Literal["Pinned", "Unpinned"]


class TopologySpec(ApiModel):
    """Group nodes by a topology label."""

    topology_key: str = Field(min_length=1, max_length=317)
    strict_domain: Optional[bool] = Field(None, description="One group per topology domain.")


class DiagnoseSpec(ApiModel):
    """Bisect failing groups to isolate faulty nodes."""

    min_group_size: Annotated[Optional[Int32], Crd(default=2)] = Field(None, ge=1)
    topology_key: Optional[str] = Field(None, max_length=317)


class ExecutionSpec(ApiModel):
    """Limits on how the Jobs run."""

    max_concurrent: Annotated[Optional[Int32], Crd(default=0)] = Field(None, ge=0, description="0 means no limit.")
    timeout_per_job: Optional[Duration] = None
    retry_failed_groups: Annotated[Optional[Int32], Crd(default=0)] = Field(None, ge=0)


class OrchestrationSpec(ApiModel):
    """How nodes are selected, grouped and run."""

    target: Optional[TargetSpec] = None
    topology: Optional[TopologySpec] = None
    diagnose: Optional[DiagnoseSpec] = None
    execution: Optional[ExecutionSpec] = None
    iterations: Annotated[Optional[Int32], Crd(default=1)] = Field(None, ge=1)
    placement: Optional[Placement] = Field(
        None, description="Pinned (the default) partitions every node; Unpinned runs one job of exactly the asked size."
    )


class StringMatch(ApiModel):
    """Matches a detected string value."""

    equals: Optional[str] = None
    in_: Optional[list[str]] = Field(None, alias="in")
    not_in: Optional[list[str]] = None


class CountMatch(ApiModel):
    """Matches a count."""

    equals: Optional[Int32] = None
    greater_than: Optional[Int32] = None
    less_than: Optional[Int32] = None


class TopologyMatch(ApiModel):
    """Matches the detected topology."""

    mode: Optional[str] = Field(None, max_length=MAX_SHORT_STRING, description="The detected topology mode to match.")
    domain_count: Optional[CountMatch] = None


class WhenSpec(ApiModel):
    """Conditions an override or dependency applies under; every set condition must hold."""

    gpu_architecture: Optional[StringMatch] = None
    platform: Optional[StringMatch] = None
    workload_kind: Optional[str] = None
    topology: Optional[TopologyMatch] = None
    config: Optional[FreeForm] = None
    expression: Optional[str] = Field(None, max_length=2048, description="CEL over the detected facts.")


class DependencySpec(ApiModel):
    """A Kubernetes object created with the Workflow, kept as written, plus an optional ``when``."""

    model_config = ConfigDict(extra="allow")
    crd_extra: ClassVar[dict[str, Any]] = {"x-kubernetes-embedded-resource": True}

    api_version: str
    kind: str
    when: Optional[WhenSpec] = None


class OrchestrationPatch(ApiModel):
    """Orchestration fields an override replaces; unset fields stay as they are."""

    target: Optional[TargetSpec] = None
    topology: Optional[TopologySpec] = None
    execution: Optional[ExecutionSpec] = None
    iterations: Optional[Int32] = Field(None, ge=1)
    placement: Optional[Placement] = None


class OverrideSpec(ApiModel):
    """A change applied when its ``when`` matches."""

    when: WhenSpec
    job_template: Optional[FreeFormObject] = Field(None, description="Merged into the Job template.")
    job_template_patch: Optional[list[FreeFormObject]] = Field(None, description="RFC 6902 operations applied after the merge.")
    dependencies: Optional[list[DependencySpec]] = None
    orchestration: Optional[OrchestrationPatch] = None


class TrackingSpec(ApiModel):
    """Which per-node and per-domain results to keep."""

    per_node: Annotated[Optional[bool], Crd(default=False)] = None
    per_domain: Annotated[Optional[bool], Crd(default=False)] = None


class ThresholdSet(ApiModel):
    """Performance thresholds."""

    thresholds: Optional[Thresholds] = None


class PerformanceValidationSpec(ApiModel):
    """Judges performance from the measurements."""

    enabled: Annotated[Optional[bool], Crd(default=False)] = None
    plugin: Optional[str] = Field(None, max_length=63)
    config: Optional[FreeForm] = None
    tracking: Optional[TrackingSpec] = None
    thresholds: Optional[ThresholdSet] = None
    measurement_timeout: Optional[Duration] = None


class ValidationSpec(ApiModel):
    """How a run is judged beyond exit status."""

    performance: Optional[PerformanceValidationSpec] = None


class JobTemplate(ApiModel):
    """The template every Job of the Workflow is made from."""

    metadata: Optional[TemplateMeta] = None
    spec: JobSpec


class WorkflowSpec(ApiModel):
    """What a Workflow runs, where and how."""

    crd_rules = (presence_fixed("gangScheduler"),)

    namespace: Optional[str] = Field(None, max_length=63, pattern=DNS_LABEL, description="Namespace for the Jobs and dependencies.")
    job_template: JobTemplate
    orchestration: OrchestrationSpec
    dependencies: Optional[list[DependencySpec]] = None
    overrides: Optional[list[OverrideSpec]] = None
    validation: Optional[ValidationSpec] = None
    gang_scheduler: Annotated[Optional[GangSchedulerSpec], Crd(rules=(immutable("gangScheduler"),))] = None


# ---------------------------------------------------------------------------------------------
# Status.


class DependencyRef(ApiModel):
    """A dependency object the Workflow created."""

    api_version: str
    kind: str
    name: str
    namespace: Optional[str] = Field(None, description="Empty for cluster-scoped objects.")
    scope: Optional[Literal["workflow", "job"]] = None
    group_name: Optional[str] = None
    iteration: Optional[Int32] = None


GroupPhase = Literal["Pending", "Running", "Succeeded", "Failed"]


class GroupStatus(ApiModel):
    """One group of nodes and the Job running on it."""

    name: str
    nodes: list[str]
    phase: GroupPhase
    domains: Optional[list[str]] = None
    domain_node_counts: Optional[dict[str, Int32]] = None
    overflow: Optional[bool] = None
    retries: Optional[Int32] = None
    job_ref: Optional[WorkloadReference] = None
    start_time: Optional[Time] = None
    completion_time: Optional[Time] = None


class GroupRecord(ApiModel):
    """A group as it was in a past iteration."""

    name: str
    phase: GroupPhase
    job_name: Optional[str] = None
    start_time: Optional[Time] = None
    completion_time: Optional[Time] = None
    bus_bandwidth_g_bps: Optional[str] = Field(
        None,
        alias="busBandwidthGBps",
        max_length=32,
        description="Diagnose rounds: the group's final bus bandwidth (GB/s), kept when its Job and measurement go.",
    )
    nodes: Optional[list[str]] = Field(
        None, max_length=5000, description="Diagnose rounds: the group's nodes, kept when its Job goes (the report lists them per test)."
    )


class IterationRecord(ApiModel):
    """The groups of one finished iteration."""

    iteration: Int32
    groups: Optional[list[GroupRecord]] = None


class AppliedOverride(ApiModel):
    """An override that matched, with a summary of what it changed."""

    index: Int32
    when: str = Field(max_length=4096, description="The override's conditions, e.g. gpuArchitecture=h100, platform=aws.")
    patches: str = Field(max_length=1024, description="What it patched, e.g. jobTemplate, 2 dependencies.")
    no_op: Optional[bool] = None


class ScreeningResult(ApiModel):
    """The screening verdict of one topology domain."""

    nodes: list[str]
    passed: bool


class InfrastructureFault(ApiModel):
    """A fault between two halves of a domain rather than on a node."""

    domain: str
    group_a: Optional[list[str]] = None
    group_b: Optional[list[str]] = None
    stage: Optional[str] = None


class PendingProbe(ApiModel):
    """A cross-boundary probe still to run."""

    domain: str
    half_a: Optional[list[str]] = None
    half_b: Optional[list[str]] = None
    probe_round: Optional[Int32] = None


class CrossBoundaryState(ApiModel):
    """Progress of the cross-boundary stage of diagnose."""

    pending_probes: Optional[list[PendingProbe]] = None
    origin_stage: Optional[str] = None


class DiagnoseStatus(ApiModel):
    """Progress of diagnose bisection."""

    stage: Optional[
        Literal[
            "intra-screening",
            "intra-screening-no-nvl",
            "inter-screening",
            "bisection",
            "confirmation",
            "cross-boundary",
            "complete",
        ]
    ] = None
    round: Optional[Int32] = None
    healthy_nodes: Optional[NodeNameSet] = None
    suspect_nodes: Optional[NodeNameSet] = None
    no_nvl_suspect_nodes: Optional[NodeNameSet] = Field(None, alias="noNVLSuspectNodes")
    representative_nodes: Optional[list[str]] = None
    screening_results: Optional[dict[str, ScreeningResult]] = None
    no_nvl_screening_results: Optional[dict[str, ScreeningResult]] = Field(None, alias="noNVLScreeningResults")
    infrastructure_faults: Optional[list[InfrastructureFault]] = None
    cross_boundary_state: Optional[CrossBoundaryState] = None


class OrchestrationStatus(ApiModel):
    """How the nodes were grouped and how far the run is."""

    total_nodes: Int32
    nodes_per_job: Int32
    total_groups: Int32
    current_iteration: Optional[Int32] = None
    completed_iterations: Optional[Int32] = None
    iteration_history: Optional[list[IterationRecord]] = None
    detected_platform: Optional[str] = None
    detected_gpu_architecture: Optional[str] = Field(None, alias="detectedGPUArchitecture")
    gpu_products: Optional[list[str]] = None
    placement: Optional[Placement] = None
    excluded_nodes: Optional[list[str]] = None
    exclusion_reason: Optional[str] = None
    applied_overrides: Optional[list[AppliedOverride]] = None
    diagnose: Optional[DiagnoseStatus] = None
    groups: Optional[list[GroupStatus]] = None


class NodeIteration(ApiModel):
    """One node's measurements in one iteration."""

    iteration_number: Int32
    tflops: Optional[str] = None
    duration: Optional[str] = None
    memory_used_gb: Optional[str] = Field(None, alias="memoryUsedGB")
    status: Optional[str] = None


class NodeResult(ApiModel):
    """Per-node result (kept when validation.performance.tracking.perNode is set)."""

    domain: Optional[str] = None
    group: Optional[str] = None
    status: Optional[Literal["Passed", "Failed", "Running"]] = None
    iterations: Optional[list[NodeIteration]] = None


class DomainResult(ApiModel):
    """Per-domain result (kept when validation.performance.tracking.perDomain is set)."""

    node_count: Optional[Int32] = None
    status: Optional[str] = None
    average_tflops: Optional[str] = None


class WorkflowStatus(ApiModel):
    """Observed state of a Workflow."""

    phase: Optional[Phase] = None
    observed_generation: Optional[Int64] = None
    conditions: Optional[Conditions] = None
    namespace: Optional[str] = None
    succeeded_nodes_ref: Optional[TypedLocalObjectReference] = None
    failed_nodes_ref: Optional[TypedLocalObjectReference] = None
    dependency_refs: Optional[list[DependencyRef]] = None
    orchestration: Optional[OrchestrationStatus] = None
    node_results: Optional[dict[str, NodeResult]] = None
    domain_results: Optional[dict[str, DomainResult]] = None


class Workflow(ApiObject):
    """Runs one workload over groups of nodes, one Job per group and iteration."""

    plural = "workflows"
    printer_columns = (PHASE_COLUMN,)

    kind: Literal["Workflow"]
    spec: WorkflowSpec
    status: Optional[WorkflowStatus] = None
