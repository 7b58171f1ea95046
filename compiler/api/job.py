"""Job: one run of a workload on one group of nodes, created by a Workflow.

The Job creates the workload (a Kubeflow Trainer TrainJob, carried as an arbitrary embedded
object), watches node health with a CEL expression while it runs, and owns the goodput and
bandwidth measurements it asks for. The workload, its metadata, the health monitor and the
measurement configs cannot change once the Job exists.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from .cel_rules import immutable, presence_fixed
from .common import (
    PHASE_COLUMN,
    ApiModel,
    ApiObject,
    BandwidthMeasurementConfig,
    Conditions,
    Duration,
    FailedNodeList,
    FreeFormObject,
    GoodputMeasurementConfig,
    Int32,
    Int64,
    Phase,
    Thresholds,
    Time,
    WorkloadMetadata,
    WorkloadReference,
)
from .markers import Crd


class WorkloadSpec(ApiModel):
    """The workload object to create. Kubeflow Trainer's TrainJob is the only adapter."""

    train_job: FreeFormObject = Field(description="A trainer.kubeflow.org/v1alpha1 TrainJob spec, kept as written.")


class CELHealthCheck(ApiModel):
    """A CEL expression over ``node`` (a full Node object); true marks the node unhealthy."""

    expression: str = Field(min_length=1, max_length=2048)


class NodeHealthMonitor(ApiModel):
    """Watches the group's nodes while the workload runs. Without an expression a Job checks
    nothing, as in NVCRE; a Workflow's render gives such a template the default expression."""

    cel: Optional[CELHealthCheck] = None


class JobCheckpoint(ApiModel):
    """Checkpoint restart: the claim holding checkpoints and how often to restart from it."""

    pvc_name: str = Field(min_length=1, max_length=253)
    max_restarts: Optional[Int32] = Field(None, ge=0)


class JobSpec(ApiModel):
    """What the Job runs and how it judges the run."""

    crd_rules = tuple(
        presence_fixed(name) for name in ("workloadMetadata", "nodeHealthMonitor", "goodputMeasurement", "bandwidthMeasurement")
    )

    workload: Annotated[WorkloadSpec, Crd(rules=(immutable("workload"),))]
    workload_metadata: Annotated[Optional[WorkloadMetadata], Crd(rules=(immutable("workloadMetadata"),))] = None
    node_health_monitor: Annotated[Optional[NodeHealthMonitor], Crd(rules=(immutable("nodeHealthMonitor"),))] = None
    checkpoint: Optional[JobCheckpoint] = None
    stall_multiplier: Optional[Int32] = Field(None, ge=1, description="Fail when no step arrives within this many average step times.")
    startup_stall_timeout_seconds: Optional[Int32] = Field(None, ge=1)
    scheduling_stall_grace_seconds: Optional[Int32] = Field(None, ge=1)
    goodput_measurement: Annotated[Optional[GoodputMeasurementConfig], Crd(rules=(immutable("goodputMeasurement"),))] = None
    bandwidth_measurement: Annotated[Optional[BandwidthMeasurementConfig], Crd(rules=(immutable("bandwidthMeasurement"),))] = None
    thresholds: Optional[Thresholds] = None
    measurement_timeout: Optional[Duration] = None


class FailureLog(ApiModel):
    """A log excerpt from one failed workload pod."""

    pod_name: str
    node_name: str
    exit_code: Int32
    reason: Optional[str] = None
    tail: Optional[str] = Field(None, max_length=32768)


class JobStatus(ApiModel):
    """Observed state of a Job."""

    phase: Optional[Phase] = None
    observed_generation: Optional[Int64] = None
    conditions: Optional[Conditions] = None
    failed_nodes: Optional[FailedNodeList] = None
    workload_ref: Optional[WorkloadReference] = None
    workload_start_time: Optional[Time] = None
    scheduling_blocked_since: Optional[Time] = None
    scheduling_resumed_time: Optional[Time] = None
    restart_count: Optional[Int32] = None
    failure_log: Optional[FailureLog] = None


class Job(ApiObject):
    """Runs one workload on one group of nodes and records which nodes failed and why."""

    plural = "jobs"
    printer_columns = (PHASE_COLUMN,)

    kind: Literal["Job"]
    spec: JobSpec
    status: Optional[JobStatus] = None
