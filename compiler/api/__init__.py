"""The ``nvcre.nvidia.com/v1alpha1`` API: typed models, the CRDs generated from them, and
offline validation that gives the same verdicts as those CRDs.

Typical use::

    from nvcre.compiler.api import parse_document, validate

    model, diagnostics = parse_document(data)     # model is None when any diagnostic is an error
    problems = validate(new_data, old=old_data)   # includes update (transition) rules

Model classes parse wire data with ``Kind.from_dict(data)`` and give it back with
``model.to_dict()``; parsing never adds defaults, so the round trip is exact.

The names below are read from their modules on first use, so importing one part of the API
(``nvcre.compiler.api.validate`` on the render path, say) does not build every model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .kinds import API_VERSION, GROUP, KINDS, VERSION, kind_class
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

# Imported now, not on first use: ``validate`` is also the name of a submodule, and importing
# that submodule first would leave the module where the function belongs.
from .validate import parse_document, validate  # noqa: E402

#: public name -> the module beside this one that defines it
_HOMES: dict[str, str] = {
    "CategoryOptions": "certification",
    "CategoryResources": "certification",
    "CategoryStatus": "certification",
    "CertificateCategory": "certification",
    "Certification": "certification",
    "CertificationSpec": "certification",
    "CertificationStatus": "certification",
    "API_VERSION": "kinds",
    "GROUP": "kinds",
    "VERSION": "kinds",
    "ApiModel": "common",
    "ApiObject": "common",
    "BandwidthMeasurementConfig": "common",
    "Condition": "common",
    "EnvVar": "common",
    "FailedNode": "common",
    "GangSchedulerSpec": "common",
    "GoodputMeasurementConfig": "common",
    "LocalObjectReference": "common",
    "ObjectMeta": "common",
    "TaintSelector": "common",
    "TargetSpec": "common",
    "WorkloadMetadata": "common",
    "CRD_DIR": "crdgen",
    "build_crd": "crdgen",
    "render_crds": "crdgen",
    "write_crds": "crdgen",
    "Job": "job",
    "JobSpec": "job",
    "JobStatus": "job",
    "KINDS": "kinds",
    "kind_class": "kinds",
    "LogProfile": "logprofile",
    "LogProfileSpec": "logprofile",
    "BandwidthMeasurement": "measurements",
    "BandwidthMeasurementSpec": "measurements",
    "BandwidthMeasurementStatus": "measurements",
    "BandwidthResult": "measurements",
    "GoodputMeasurement": "measurements",
    "GoodputMeasurementSpec": "measurements",
    "GoodputMeasurementStatus": "measurements",
    "OrchestrationSpec": "workflow",
    "OverrideSpec": "workflow",
    "WhenSpec": "workflow",
    "Workflow": "workflow",
    "WorkflowSpec": "workflow",
    "WorkflowStatus": "workflow",
    "FrameworkSpec": "workloadrun",
    "WorkloadOrchestration": "workloadrun",
    "WorkloadRun": "workloadrun",
    "WorkloadRunSpec": "workloadrun",
    "WorkloadRunStatus": "workloadrun",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
