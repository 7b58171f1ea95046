"""The bundle of a run from objects already collected and judged: what ``run --evidence`` writes.

A run command that waited for its run has read the run's objects and judged them once, for its
report. It hands those objects and that verdict here; this module adds only what a bundle needs
beyond them (the Nodes and, when the API has them, the ResourceSlices render detection reads)
and writes the bundle, all or nothing. Nothing is read from the run or judged a second time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kube.client import Kube
from ..kube.errors import ApiError
from ..kube.resources import NODES, RESOURCE_SLICES, Resource
from .assemble import Objects, assemble
from .bundle import write_bundle

if TYPE_CHECKING:
    from ..ops.collect import Collected
    from .dsse import Signer

__all__ = ["EvidenceRequest", "objects_of", "write_objects", "write_run_evidence"]


@dataclass(frozen=True)
class EvidenceRequest:
    """Where a run's bundle goes (a new or empty directory) and the key that signs it, if any."""

    directory: Path
    signer: Signer | None = None


def objects_of(kube: Kube, got: Collected) -> Objects:
    """A bundle's objects: the collected run and everything below it, plus the cluster's Nodes and ResourceSlices."""
    return Objects(
        run=got.run,
        workflows=got.workflows,
        jobs=got.jobs,
        measurements=got.measurements,
        nodes=_by_name(kube.list(NODES).items),
        resource_slices=_listed_if_served(kube, RESOURCE_SLICES),
    )


def write_objects(objects: Objects, verdict: Any, request: EvidenceRequest) -> str:
    """Write the bundle of ``objects`` judged as ``verdict``; returns the line that says so.

    Raises :class:`~nvcre.runtime.evidence.EvidenceError` when the directory cannot take it."""
    write_bundle(assemble(objects, verdict, signer=request.signer), request.directory)
    signed = f", signed (key id {request.signer.key_id[:16]})" if request.signer is not None else ""
    return f"Evidence written to {request.directory} ({verdict.result}{signed})\n"


def write_run_evidence(kube: Kube, got: Collected, verdict: Any, request: EvidenceRequest) -> str:
    """The bundle of a collected, judged run (see :func:`write_objects`)."""
    return write_objects(objects_of(kube, got), verdict, request)


def _by_name(items: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    def key(obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace")), str(meta.get("name"))

    return tuple(sorted(items, key=key))


def _listed_if_served(kube: Kube, resource: Resource) -> tuple[Mapping[str, Any], ...]:
    """An API the cluster may not serve (or not let us list) reads as empty, as the controller reads it."""
    try:
        return _by_name(kube.list(resource).items)
    except ApiError:
        return ()
