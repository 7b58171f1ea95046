"""Certification: certify a set of nodes by running catalog categories against them, in order.

The spec holds the node target, the categories (each a catalog ``domain/variant`` with its own
options) and, inline at spec level, the same options as global defaults. A per-category value
wins over the global one; ``env`` merges by variable name and ``workloadMetadata.labels`` by
key. The whole spec is immutable after creation.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from .cel_rules import (
    MERGED_ENV_CAP,
    MERGED_LABEL_CAP,
    NIC_RESOURCE_NAME_RULES,
    NON_NEGATIVE_QUANTITY,
    SOURCE_REPO_HOST,
    SOURCE_REPO_SCHEME,
    SPEC_IMMUTABLE,
    UNIQUE_CATEGORIES,
    requests_within_limits,
)
from .common import (
    PHASE_COLUMN,
    ApiModel,
    ApiObject,
    CertificationDuration,
    Conditions,
    EnvList,
    GangSchedulerSpec,
    Int32,
    Int64,
    LocalObjectReference,
    Phase,
    Quantity,
    TargetSpec,
    Thresholds,
    TypedLocalObjectReference,
    WorkflowReference,
    WorkloadMetadata,
)
from .markers import Crd
from .patterns import (
    DCGM_HOST,
    DNS_LABEL,
    MAX_BYTES,
    MAX_CATEGORIES,
    MAX_IMAGE,
    MAX_NAME,
    MAX_PULL_SECRETS,
    MAX_SOURCE_REPO,
    MIN_CATEGORIES,
    NIC_RESOURCE_NAME,
    SOURCE_REPO_CHARS,
    STORAGE_SIZE,
)

NonNegativeQuantity = Annotated[Optional[Quantity], Crd(rules=(NON_NEGATIVE_QUANTITY,))]
NicResourceName = Annotated[Optional[str], Crd(rules=NIC_RESOURCE_NAME_RULES)]
TestScale = Literal["full-scale", "intra-node", "intra-rack", "diagnose"]


class ResourceAmounts(ApiModel):
    """CPU and memory amounts."""

    cpu: NonNegativeQuantity = None
    memory: NonNegativeQuantity = None


class CategoryResources(ApiModel):
    """CPU and memory for the workload's worker containers."""

    crd_rules = (requests_within_limits("cpu"), requests_within_limits("memory"))

    limits: Optional[ResourceAmounts] = None
    requests: Optional[ResourceAmounts] = None


class CategoryOptions(ApiModel):
    """Options for a category run. Unset fields fall back to the spec level, then the catalog."""

    nodes_per_job: Optional[Int32] = Field(None, ge=1, description="Nodes per job; unset picks automatically.")
    gpus_per_node: Optional[Int32] = Field(None, ge=1, description="GPUs per node; unset follows the GPU architecture.")
    mlnx_per_node: Optional[Int32] = Field(None, ge=0, description="RDMA NICs per node; 0 requests none.")
    nic_resource_name: NicResourceName = Field(
        None, max_length=MAX_NAME, pattern=NIC_RESOURCE_NAME, description="RDMA resource name, for example rdma/ib."
    )
    enable_mnnvl: Optional[bool] = Field(None, alias="enableMNNVL", description="Enable multi-node NVLink.")
    test_scale: Optional[TestScale] = Field(None, description="Communication entries only; full-scale when unset.")
    enable_checkpoint: Optional[bool] = None
    max_steps: Optional[Int32] = Field(None, ge=-1)
    exit_duration_mins: Optional[Int32] = Field(None, ge=1)
    startup_stall_timeout_seconds: Optional[Int32] = Field(None, ge=1, description="Budget for the first training step, in seconds.")
    scheduling_stall_grace_seconds: Optional[Int32] = Field(
        None, ge=1, description="How long pods may stay unschedulable before the run is reported blocked."
    )
    timeout_per_job: Optional[CertificationDuration] = Field(None, description="Go duration, for example 1h or 90m.")
    measurement_timeout: Optional[CertificationDuration] = None
    thresholds: Optional[Thresholds] = None
    resources: Optional[CategoryResources] = None
    image: Optional[str] = Field(None, min_length=1, max_length=MAX_IMAGE, description="Replaces the workload image.")
    image_pull_secrets: Optional[list[LocalObjectReference]] = Field(None, max_length=MAX_PULL_SECRETS)
    source_repo: Annotated[Optional[str], Crd(rules=(SOURCE_REPO_SCHEME, SOURCE_REPO_HOST))] = Field(
        None, max_length=MAX_SOURCE_REPO, pattern=SOURCE_REPO_CHARS, description="Git mirror (https:// or ssh://)."
    )
    dcgm_host: Optional[str] = Field(None, max_length=MAX_NAME + 6, pattern=DCGM_HOST, description="DCGM host engine as host[:port].")
    rdma_device_access: Optional[Literal["devicePlugin", "hostPath"]] = Field(
        None, description="How RDMA devices reach the worker; devicePlugin when unset."
    )
    storage_class_name: Optional[str] = Field(None, max_length=MAX_NAME)
    storage_size: Optional[str] = Field(None, max_length=32, pattern=STORAGE_SIZE)
    save_interval: Optional[Int32] = Field(None, ge=1)
    save_retain_interval: Optional[Int32] = Field(None, ge=1)
    save_top_k: Optional[Int32] = Field(None, ge=1)
    max_restarts: Optional[Int32] = Field(None, ge=0)
    repeat_count: Optional[Int32] = Field(None, ge=1)
    max_bytes: Optional[str] = Field(None, max_length=32, pattern=MAX_BYTES)
    num_iterations: Optional[Int32] = Field(None, ge=1)
    num_cycles: Optional[Int32] = Field(None, ge=1)
    max_concurrent: Optional[Int32] = Field(None, description="Jobs running at once; 0 means no limit.")
    min_group_size: Optional[Int32] = Field(None, ge=1)
    env: Optional[EnvList] = Field(None, description="Workload environment variables, by value, at most 32.")
    workload_metadata: Optional[WorkloadMetadata] = None


CategoryName = Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_LABEL)]


class CertificateCategory(ApiModel):
    """One catalog entry to run, named domain/variant."""

    domain: CategoryName = Field(description="Catalog domain, for example communication.")
    variant: CategoryName = Field(description="Catalog variant, for example nccl-all-reduce.")
    options: Optional[CategoryOptions] = None


class CertificationSpec(CategoryOptions):
    """What to certify. Spec-level options are the defaults for every category."""

    crd_rules = (MERGED_ENV_CAP, MERGED_LABEL_CAP)

    target: TargetSpec = Field(description="Nodes to certify; {} selects every node.")
    categories: Annotated[list[CertificateCategory], Crd(rules=(UNIQUE_CATEGORIES,))] = Field(
        min_length=MIN_CATEGORIES, max_length=MAX_CATEGORIES, description="Categories, run one after another."
    )
    gang_scheduler: Optional[GangSchedulerSpec] = None


class CategoryStatus(ApiModel):
    """The result of one category, in the order of spec.categories."""

    domain: str
    variant: str
    status: Phase
    workflow_ref: Optional[WorkflowReference] = None
    succeeded_nodes_ref: Optional[TypedLocalObjectReference] = None
    failed_nodes_ref: Optional[TypedLocalObjectReference] = Field(
        None, description="The ConfigMap listing the nodes blamed for a failure, each with its reason."
    )


class CertificationStatus(ApiModel):
    """Observed state of a Certification."""

    phase: Optional[Phase] = None
    observed_generation: Optional[Int64] = None
    conditions: Optional[Conditions] = None
    category_statuses: Optional[list[CategoryStatus]] = None


class Certification(ApiObject):
    """Certifies GPU nodes by running catalog workloads across them and recording every failed node."""

    plural = "certifications"
    printer_columns = (PHASE_COLUMN,)

    kind: Literal["Certification"]
    spec: Annotated[CertificationSpec, Crd(rules=(SPEC_IMMUTABLE,))]
    status: Optional[CertificationStatus] = None
