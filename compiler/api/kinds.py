"""The kinds of the API, in one list, and lookup by ``kind`` name.

Every consumer (CRD generation, document dispatch, validation) walks this list, so adding a
kind here is the one step that makes it known everywhere.
"""

from __future__ import annotations

from .certification import Certification
from .common import ApiObject
from .job import Job
from .logprofile import LogProfile
from .measurements import BandwidthMeasurement, GoodputMeasurement
from .workflow import Workflow
from .workloadrun import WorkloadRun

__all__ = ["KINDS", "kind_class", "kind_names"]

KINDS: tuple[type[ApiObject], ...] = (
    Certification,
    WorkloadRun,
    Workflow,
    Job,
    LogProfile,
    GoodputMeasurement,
    BandwidthMeasurement,
)

_BY_NAME = {cls.kind_name(): cls for cls in KINDS}


def kind_class(kind: str) -> type[ApiObject] | None:
    """The model class for a ``kind`` of ``nvcre.nvidia.com/v1alpha1``, or None."""
    return _BY_NAME.get(kind)


def kind_names() -> list[str]:
    """Every kind name, in registry order."""
    return list(_BY_NAME)

