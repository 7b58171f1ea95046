"""The ``nvcre.nvidia.com/v1alpha1`` API: typed models, the CRDs generated from them, and
offline validation that gives the same verdicts as those CRDs.

Typical use::

    from nvcre.compiler.api import parse_document, validate

    model, diagnostics = parse_document(data)     # model is None when any diagnostic is an error
    problems = validate(new_data, old=old_data)   # includes update (transition) rules

Model classes parse wire data with ``Kind.from_dict(data)`` and give it back with
``model.to_dict()``; parsing never adds defaults, so the round trip is exact.
"""

from .certification import (
    CategoryOptions,
    CategoryResources,
    CategoryStatus,
    CertificateCategory,
    Certification,
    CertificationSpec,
    CertificationStatus,
)
from .common import (
    API_VERSION,
    GROUP,
    VERSION,
    ApiModel,
    ApiObject,
    BandwidthMeasurementConfig,
    Condition,
    EnvVar,
    FailedNode,
    GangSchedulerSpec,
    GoodputMeasurementConfig,
    LocalObjectReference,
    ObjectMeta,
    TaintSelector,
    TargetSpec,
    WorkloadMetadata,
)
from .crdgen import CRD_DIR, build_crd, render_crds, write_crds
from .job import Job, JobSpec, JobStatus
from .kinds import KINDS, kind_class
from .logprofile import LogProfile, LogProfileSpec
from .measurements import (
    BandwidthMeasurement,
    BandwidthMeasurementSpec,
    BandwidthMeasurementStatus,
    BandwidthResult,
    GoodputMeasurement,
    GoodputMeasurementSpec,
    GoodputMeasurementStatus,
)
from .validate import parse_document, validate
from .workflow import OrchestrationSpec, OverrideSpec, WhenSpec, Workflow, WorkflowSpec, WorkflowStatus
from .workloadrun import FrameworkSpec, WorkloadOrchestration, WorkloadRun, WorkloadRunSpec, WorkloadRunStatus

__all__ = [
    "API_VERSION",
    "GROUP",
    "VERSION",
    "KINDS",
    "CRD_DIR",
    "parse_document",
    "validate",
    "kind_class",
    "build_crd",
    "render_crds",
    "write_crds",
    "ApiModel",
    "ApiObject",
    "ObjectMeta",
    "EnvVar",
    "LocalObjectReference",
    "GangSchedulerSpec",
    "WorkloadMetadata",
    "TargetSpec",
    "TaintSelector",
    "Condition",
    "FailedNode",
    "GoodputMeasurementConfig",
    "BandwidthMeasurementConfig",
    "Certification",
    "CertificationSpec",
    "CertificationStatus",
    "CertificateCategory",
    "CategoryOptions",
    "CategoryResources",
    "CategoryStatus",
    "WorkloadRun",
    "WorkloadRunSpec",
    "WorkloadRunStatus",
    "FrameworkSpec",
    "WorkloadOrchestration",
    "Workflow",
    "WorkflowSpec",
    "WorkflowStatus",
    "OrchestrationSpec",
    "OverrideSpec",
    "WhenSpec",
    "Job",
    "JobSpec",
    "JobStatus",
    "LogProfile",
    "LogProfileSpec",
    "GoodputMeasurement",
    "GoodputMeasurementSpec",
    "GoodputMeasurementStatus",
    "BandwidthMeasurement",
    "BandwidthMeasurementSpec",
    "BandwidthMeasurementStatus",
    "BandwidthResult",
]
