"""WorkloadRun: an ad-hoc training, NCCL or custom workload run without the catalog.

The spec describes the workload inline (image, node count, one of three frameworks, env,
volumes, config) and how to place it; the controller turns it into one Workflow. Under the
default Pinned placement ``numNodes`` is the size of each job group; under Unpinned it is the
size of the single job that runs. The whole spec is immutable after creation.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import ConfigDict, Field

from .cel_rules import NIC_RESOURCE_NAME_RULES, SPEC_IMMUTABLE
from .common import (
    PHASE_COLUMN,
    ApiModel,
    ApiObject,
    BandwidthMeasurementConfig,
    Conditions,
    Duration,
    EnvList,
    GangSchedulerSpec,
    GoodputMeasurementConfig,
    Int32,
    Int64,
    LocalObjectReference,
    Phase,
    PrinterColumn,
    Quantity,
    TargetSpec,
    Thresholds,
    TypedLocalObjectReference,
    WorkflowReference,
    WorkloadMetadata,
)
from .markers import Crd, Rule
from .patterns import MAX_IMAGE, MAX_NAME, MAX_PULL_SECRETS, MAX_SHORT_STRING, NIC_RESOURCE_NAME, STORAGE_SIZE
from .workflow import OverrideSpec, Placement

StringList = list[Annotated[str, Field(max_length=4096)]]
#: A ConfigMap holds at most 1 MiB.
MAX_CONFIG_BYTES = 1_048_576


class TorchFramework(ApiModel):
    """Runs a Python script or module with torchrun."""

    crd_rules = (
        Rule(rule="!(has(self.script) && has(self.module))", message="script and module are mutually exclusive"),
        Rule(rule="has(self.script) || has(self.module)", message="either script or module must be set"),
    )

    script: Optional[str] = Field(None, min_length=1, max_length=4096)
    module: Optional[str] = Field(None, min_length=1, max_length=MAX_NAME)
    args: Optional[StringList] = None


class MPIFramework(ApiModel):
    """Runs a binary on every rank with mpirun from a launcher pod."""

    binary: str = Field(min_length=1, max_length=4096)
    mpirun_path: str = Field(min_length=1, max_length=4096)
    args: Optional[StringList] = None
    mpi_args: Optional[StringList] = None
    mpi_implementation: Annotated[Optional[str], Crd(default="OpenMPI")] = Field(
        None, max_length=MAX_SHORT_STRING, description="OpenMPI, the one the launcher's command line is written for."
    )


class ExecFramework(ApiModel):
    """Runs a command as written."""

    command: StringList = Field(min_length=1)
    args: Optional[StringList] = None


class FrameworkSpec(ApiModel):
    """How the workload starts: exactly one of torch, mpi or exec."""

    crd_rules = (
        Rule(
            rule="(has(self.torch) ? 1 : 0) + (has(self.mpi) ? 1 : 0) + (has(self.exec) ? 1 : 0) == 1",
            message="exactly one of torch, mpi or exec must be set",
        ),
    )

    torch: Optional[TorchFramework] = None
    mpi: Optional[MPIFramework] = None
    exec: Optional[ExecFramework] = None


class WorkloadConfig(ApiModel):
    """Configuration mounted read-only at /config: inline data or an existing ConfigMap."""

    crd_rules = (Rule(rule="!(has(self.inline) && has(self.configMapRef))", message="inline and configMapRef are mutually exclusive"),)

    inline: Optional[dict[str, Annotated[str, Field(max_length=MAX_CONFIG_BYTES)]]] = Field(
        None, description="File name to file content, as in a ConfigMap's data; every value is a string."
    )
    config_map_ref: Optional[LocalObjectReference] = None


class WorkloadCheckpoint(ApiModel):
    """Checkpoint storage for restartable training."""

    storage_size: str = Field(max_length=32, pattern=STORAGE_SIZE)
    storage_class_name: Optional[str] = Field(None, max_length=MAX_NAME)
    max_restarts: Optional[Int32] = Field(None, ge=0)


class WorkloadOrchestration(ApiModel):
    """How the run is grouped and placed."""

    crd_rules = (
        Rule(
            rule=(
                "!has(self.placement) || self.placement != 'Unpinned' || !has(self.testScale)"
                " || !(self.testScale in ['intra-node', 'intra-rack'])"
            ),
            message="placement Unpinned cannot be combined with testScale intra-node or intra-rack",
            field_path=".placement",
        ),
    )

    test_scale: Optional[Literal["intra-node", "intra-rack", "full-scale"]] = None
    placement: Optional[Placement] = Field(
        None, description="Pinned (the default) partitions every target node into groups; Unpinned runs one job."
    )
    repeat_count: Optional[Int32] = Field(None, ge=1)
    max_concurrent: Optional[Int32] = Field(None, ge=0)
    timeout_per_job: Optional[Duration] = None


class ResourceClaim(ApiModel):
    """A dynamic resource claim the container uses."""

    name: str = Field(min_length=1, max_length=MAX_NAME)
    request: Optional[str] = None


class ResourceRequirements(ApiModel):
    """Container resource limits and requests."""

    limits: Optional[dict[str, Quantity]] = None
    requests: Optional[dict[str, Quantity]] = None
    claims: Optional[list[ResourceClaim]] = None


class Volume(ApiModel):
    """A pod volume (core/v1 Volume, kept as written)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=63)


class VolumeMount(ApiModel):
    """A container volume mount (core/v1 VolumeMount, kept as written)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=63)
    mount_path: str = Field(min_length=1, max_length=4096)


class Container(ApiModel):
    """An init container (core/v1 Container, kept as written)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=63)


class WorkloadRunSpec(ApiModel):
    """The workload to run and where."""

    image: str = Field(min_length=1, max_length=MAX_IMAGE)
    num_nodes: Int32 = Field(ge=1, description="Job group size under Pinned; the single job's size under Unpinned.")
    framework: FrameworkSpec
    target: Optional[TargetSpec] = Field(None, description="Nodes to use; GPU nodes when unset.")
    orchestration: Optional[WorkloadOrchestration] = None
    gpus_per_node: Optional[Int32] = Field(None, ge=1)
    mlnx_per_node: Optional[Int32] = Field(None, ge=0)
    nic_resource_name: Annotated[Optional[str], Crd(rules=NIC_RESOURCE_NAME_RULES)] = Field(
        None, max_length=MAX_NAME, pattern=NIC_RESOURCE_NAME
    )
    enable_mnnvl: Optional[bool] = Field(None, alias="enableMNNVL")
    env: Optional[EnvList] = Field(None, description="Environment variables, by value; they win over platform defaults.")
    image_pull_secrets: Optional[list[LocalObjectReference]] = Field(None, max_length=MAX_PULL_SECRETS)
    volumes: Optional[list[Volume]] = None
    volume_mounts: Optional[list[VolumeMount]] = None
    init_containers: Optional[list[Container]] = None
    config: Optional[WorkloadConfig] = None
    resources: Optional[ResourceRequirements] = None
    checkpoint: Optional[WorkloadCheckpoint] = None
    thresholds: Optional[Thresholds] = None
    goodput_measurement: Optional[GoodputMeasurementConfig] = None
    bandwidth_measurement: Optional[BandwidthMeasurementConfig] = None
    overrides: Optional[list[OverrideSpec]] = None
    gang_scheduler: Optional[GangSchedulerSpec] = None
    workload_metadata: Optional[WorkloadMetadata] = None


class WorkloadRunStatus(ApiModel):
    """Observed state of a WorkloadRun."""

    phase: Optional[Phase] = None
    observed_generation: Optional[Int64] = None
    conditions: Optional[Conditions] = None
    workflow_ref: Optional[WorkflowReference] = None
    detected_platform: Optional[str] = None
    detected_gpu_architecture: Optional[str] = Field(None, alias="detectedGPUArchitecture")
    resolved_gpus_per_node: Optional[Int32] = None
    succeeded_nodes_ref: Optional[TypedLocalObjectReference] = None
    failed_nodes_ref: Optional[TypedLocalObjectReference] = None


class WorkloadRun(ApiObject):
    """Runs one inline workload on GPU nodes and reports whether it passed."""

    plural = "workloadruns"
    printer_columns = (
        PHASE_COLUMN,
        PrinterColumn(name="Nodes", type="integer", json_path=".spec.numNodes", description="numNodes"),
    )

    kind: Literal["WorkloadRun"]
    spec: Annotated[WorkloadRunSpec, Crd(rules=(SPEC_IMMUTABLE,))]
    status: Optional[WorkloadRunStatus] = None
