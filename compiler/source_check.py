"""Plain-data checks for the package's own source files: catalog entries, GPU defaults, overlays.

Each function takes a document as loaded from YAML and returns its record
(:class:`~nvcre.compiler.catalog_model.CatalogEntry`, :class:`~nvcre.compiler.catalog_model.GPUDefaults`,
:class:`~nvcre.compiler.overlay_model.Overlay`) when the document is plainly valid, or None
when it is not known to be: a problem, a value of another type than the file format's own
(``"2"`` or ``2.0`` for an integer, a tuple for a list), a field spelt by its Python name. None
sends the document to the models of :mod:`.source_models`, which decide it as they always did
and word every problem, so these checks never have to: they only have to be right when they
accept, and a test holds them to that against the models on every file of the package and on
damaged copies of them.
"""

from __future__ import annotations

import re
from typing import Any

from .catalog_model import ArchDefaults, CatalogEntry, GPUDefaults, Parallelism
from .overlay_model import Overlay, StringMatch, When

__all__ = ["catalog_entry", "gpu_defaults", "overlay"]

_ENTRY_FIELDS = frozenset(
    {
        "domain",
        "variant",
        "description",
        "launch",
        "template",
        "measurement",
        "vars",
        "timeoutPerJob",
        "startupStallTimeoutSeconds",
        "minGPUs",
        "parallelism",
        "multiNode",
        "nodeJobs",
        "launcherJob",
    }
)
_LAUNCHES = frozenset({"mpi", "torch", "single"})
_MEASUREMENTS = frozenset({"bandwidth", "goodput", "none"})
_ARCH_FIELDS = frozenset({"gpusPerNode", "mlnxPerNode"})
_DEFAULTS_FIELDS = frozenset({"architectures", "platforms", "fallback", "configArch"})
_OVERLAY_FIELDS = frozenset({"name", "reason", "order", "when", "patches"})
_WHEN_FIELDS = frozenset({"platform", "gpuArchitecture", "allArchitectures", "entry", "launch", "sourceKind", "expression"})
_MATCH_FIELDS = frozenset({"equals", "in", "notIn"})
_OVERLAY_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")


class _Doubt(Exception):
    """The document is not plainly valid: the models decide."""


def _mapping(value: Any, fields: frozenset[str], required: tuple[str, ...] = ()) -> dict[str, Any]:
    if type(value) is not dict or not fields.issuperset(value) or any(name not in value for name in required):
        raise _Doubt
    return value


def _text(value: Any) -> str:
    if type(value) is not str:
        raise _Doubt
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _integer(value: Any, minimum: int | None = None) -> int:
    if type(value) is not int or (minimum is not None and value < minimum):
        raise _Doubt
    return value


def _optional_integer(value: Any, minimum: int | None = None) -> int | None:
    return None if value is None else _integer(value, minimum)


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise _Doubt
    return value


def _texts(value: Any) -> tuple[str, ...]:
    if type(value) is not list or not all(type(item) is str for item in value):
        raise _Doubt
    return tuple(value)


def _table(value: Any) -> dict[str, Any]:
    """A mapping with string keys, its values checked by the caller."""
    if type(value) is not dict or not all(type(key) is str for key in value):
        raise _Doubt
    return value


def _parallelism(value: Any) -> Parallelism:
    row = _mapping(value, frozenset({"tp", "pp"}))
    return Parallelism(tp=_integer(row.get("tp", 1), 1), pp=_integer(row.get("pp", 1), 1))


def _entry(data: Any) -> CatalogEntry:
    doc = _mapping(data, _ENTRY_FIELDS, ("domain", "variant", "description", "launch", "template", "measurement"))
    launch, measurement = _text(doc["launch"]), _text(doc["measurement"])
    if launch not in _LAUNCHES or measurement not in _MEASUREMENTS:
        raise _Doubt
    return CatalogEntry(
        domain=_text(doc["domain"]),
        variant=_text(doc["variant"]),
        description=_text(doc["description"]),
        launch=launch,  # type: ignore[arg-type]  # one of _LAUNCHES, checked above
        template=_text(doc["template"]),
        measurement=measurement,  # type: ignore[arg-type]  # one of _MEASUREMENTS, checked above
        vars=dict(_table(doc.get("vars", {}))),
        timeout_per_job=_text(doc.get("timeoutPerJob", "1h")),
        startup_stall_timeout_seconds=_optional_integer(doc.get("startupStallTimeoutSeconds")),
        min_gpus=_optional_integer(doc.get("minGPUs")),
        parallelism={name: _parallelism(row) for name, row in _table(doc.get("parallelism", {})).items()},
        multi_node=_flag(doc.get("multiNode", True)),
        node_jobs=_texts(doc["nodeJobs"]) if "nodeJobs" in doc else ("node",),
        launcher_job=_optional_text(doc.get("launcherJob")),
    )


def _arch(value: Any) -> ArchDefaults:
    row = _mapping(value, _ARCH_FIELDS)
    return ArchDefaults(
        gpus_per_node=_optional_integer(row.get("gpusPerNode"), 1), mlnx_per_node=_optional_integer(row.get("mlnxPerNode"), 0)
    )


def _defaults(data: Any) -> GPUDefaults:
    doc = _mapping(data, _DEFAULTS_FIELDS, ("architectures", "fallback"))
    return GPUDefaults(
        architectures={arch: _arch(row) for arch, row in _table(doc["architectures"]).items()},
        platforms={
            platform: {arch: _arch(row) for arch, row in _table(rows).items()}
            for platform, rows in _table(doc.get("platforms", {})).items()
        },
        fallback=_arch(doc["fallback"]),
        config_arch={arch: _text(shared) for arch, shared in _table(doc.get("configArch", {})).items()},
    )


def _match(value: Any) -> StringMatch | None:
    if value is None:
        return None
    clause = _mapping(value, _MATCH_FIELDS)
    equals = _optional_text(clause.get("equals"))
    in_ = None if clause.get("in") is None else _texts(clause["in"])
    not_in = None if clause.get("notIn") is None else _texts(clause["notIn"])
    if equals is None and in_ is None and not_in is None:
        raise _Doubt
    return StringMatch(equals=equals, in_=in_, not_in=not_in)


def _when(value: Any) -> When:
    doc = _mapping(value, _WHEN_FIELDS)
    when = When(
        platform=_match(doc.get("platform")),
        gpu_architecture=_match(doc.get("gpuArchitecture")),
        all_architectures=_flag(doc.get("allArchitectures", False)),
        entry=_match(doc.get("entry")),
        launch=_match(doc.get("launch")),
        source_kind=_match(doc.get("sourceKind")),
        expression=_optional_text(doc.get("expression")),
    )
    if (when.gpu_architecture is None) != when.all_architectures:
        raise _Doubt  # neither, or both: the model says which
    return when


def _overlay(data: Any, source: str) -> Overlay:
    doc = _mapping(data, _OVERLAY_FIELDS, ("name", "reason", "when", "patches"))
    name, reason = _text(doc["name"]), _text(doc["reason"])
    if not _OVERLAY_NAME.fullmatch(name) or not reason:
        raise _Doubt
    return Overlay(
        name=name,
        reason=reason,
        when=_when(doc["when"]),
        patches=_text(doc["patches"]),
        order=_integer(doc.get("order", 100)),
        source=source,
    )


def catalog_entry(data: Any) -> CatalogEntry | None:
    """The entry ``data`` describes, or None when the models must decide."""
    try:
        return _entry(data)
    except _Doubt:
        return None


def gpu_defaults(data: Any) -> GPUDefaults | None:
    """The GPU defaults table ``data`` describes, or None when the models must decide."""
    try:
        return _defaults(data)
    except _Doubt:
        return None


def overlay(data: Any, source: str) -> Overlay | None:
    """The overlay ``data`` describes (found at ``source``), or None when the models must decide."""
    try:
        return _overlay(data, source)
    except _Doubt:
        return None
