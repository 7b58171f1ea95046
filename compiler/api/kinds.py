"""The kinds of the API, in one list, and lookup by ``kind`` name.

Every consumer (CRD generation, document dispatch, validation) walks this list, so adding a
kind here is the one step that makes it known everywhere. A kind's model module is imported
when the kind is first asked for, so checking a Certification never builds the Workflow or
WorkloadRun models; ``KINDS`` (every class) imports them all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common import ApiObject

__all__ = ["KINDS", "kind_class", "kind_names"]

#: kind name -> (module beside this one, class name), in registry order.
_REGISTRY: dict[str, tuple[str, str]] = {
    "Certification": ("certification", "Certification"),
    "WorkloadRun": ("workloadrun", "WorkloadRun"),
    "Workflow": ("workflow", "Workflow"),
    "Job": ("job", "Job"),
    "LogProfile": ("logprofile", "LogProfile"),
    "GoodputMeasurement": ("measurements", "GoodputMeasurement"),
    "BandwidthMeasurement": ("measurements", "BandwidthMeasurement"),
}

#: Every model class, in registry order (imports every model module on first use).
KINDS: tuple[type[ApiObject], ...]


def _load(kind: str) -> type[ApiObject]:
    module, name = _REGISTRY[kind]
    cls = getattr(import_module(f"{__package__}.{module}"), name)
    if cls.kind_name() != kind:
        raise RuntimeError(f"the registry names {kind} but {module}.{name} is a {cls.kind_name()}")
    return cls


def kind_class(kind: str) -> type[ApiObject] | None:
    """The model class for a ``kind`` of ``nvcre.nvidia.com/v1alpha1``, or None."""
    return _load(kind) if kind in _REGISTRY else None


def kind_names() -> list[str]:
    """Every kind name, in registry order."""
    return list(_REGISTRY)


def __getattr__(name: str) -> Any:
    if name == "KINDS":
        kinds = tuple(_load(kind) for kind in _REGISTRY)
        globals()["KINDS"] = kinds
        return kinds
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
