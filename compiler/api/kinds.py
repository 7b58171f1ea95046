"""The kinds of the API, in one list, and lookup by ``kind`` name.

Every consumer (CRD generation, document dispatch, validation) walks this list, so adding a
kind here is the one step that makes it known everywhere. A kind's model module is imported
when the kind is first asked for, so checking a Certification never builds the Workflow or
WorkloadRun models; ``KINDS`` (every class) imports them all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..vocabulary import API_VERSION, GROUP, VERSION

if TYPE_CHECKING:
    from .common import ApiObject

__all__ = ["GROUP", "VERSION", "API_VERSION", "KINDS", "kind_class", "kind_names", "kind_plural"]

#: kind name -> (module beside this one, class name, plural resource name), in registry order.
#: The plural names the committed CRD file, so a schema is found without building the model.
_REGISTRY: dict[str, tuple[str, str, str]] = {
    "Certification": ("certification", "Certification", "certifications"),
    "WorkloadRun": ("workloadrun", "WorkloadRun", "workloadruns"),
    "Workflow": ("workflow", "Workflow", "workflows"),
    "Job": ("job", "Job", "jobs"),
    "LogProfile": ("logprofile", "LogProfile", "logprofiles"),
    "GoodputMeasurement": ("measurements", "GoodputMeasurement", "goodputmeasurements"),
    "BandwidthMeasurement": ("measurements", "BandwidthMeasurement", "bandwidthmeasurements"),
}

#: Every model class, in registry order (imports every model module on first use).
KINDS: tuple[type[ApiObject], ...]


def _load(kind: str) -> type[ApiObject]:
    module, name, plural = _REGISTRY[kind]
    cls: type[ApiObject] = getattr(import_module(f"{__package__}.{module}"), name)
    if cls.kind_name() != kind or cls.plural != plural:
        raise RuntimeError(f"the registry names {kind} ({plural}) but {module}.{name} is a {cls.kind_name()} ({cls.plural})")
    return cls


def kind_class(kind: str) -> type[ApiObject] | None:
    """The model class for a ``kind`` of ``nvcre.nvidia.com/v1alpha1``, or None."""
    return _load(kind) if kind in _REGISTRY else None


def kind_plural(kind: str) -> str | None:
    """The plural resource name of a kind (its CRD file stem), without importing its model."""
    entry = _REGISTRY.get(kind)
    return entry[2] if entry is not None else None


def kind_names() -> list[str]:
    """Every kind name, in registry order."""
    return list(_REGISTRY)


def __getattr__(name: str) -> Any:
    if name == "KINDS":
        kinds = tuple(_load(kind) for kind in _REGISTRY)
        globals()["KINDS"] = kinds
        return kinds
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
