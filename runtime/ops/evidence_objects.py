"""A run's evidence objects from what the operations collected: the bundle's input, and its writing.

A run's objects come from :func:`~.collect.collect_run`, the collection the reports read, and
its verdict from the same judging. A bundle adds the cluster's Nodes and, when the API serves
them, the ResourceSlices render detection reads (an API the cluster does not serve, or does not
let us list, reads as empty, as the controller reads it). A run command that waited for its run
hands over what it collected and judged for its report (nothing is read or judged again);
``evidence NAME`` gathers the run itself. The bundle is written by
:func:`nvcre.runtime.evidence.of_run.write_objects`, all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..evidence import of_run
from ..evidence.assemble import Objects
from ..kube.client import Kube
from ..kube.errors import ApiError
from ..kube.resources import NODES, RESOURCE_SLICES, Resource
from .collect import Collected, collect_run
from .queries import verdict_from

__all__ = ["gather", "objects_of", "write_run_evidence"]


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


def gather(kube: Kube, kind: str, name: str, namespace: str) -> tuple[Objects, Any]:
    """The objects of a Certification or WorkloadRun and its verdict (RunNotFound when absent)."""
    got = collect_run(kube, kind, name, namespace)
    return objects_of(kube, got), verdict_from(got, kind)


def write_run_evidence(kube: Kube, got: Collected, verdict: Any, request: of_run.EvidenceRequest) -> str:
    """The bundle of a collected, judged run (see :func:`~nvcre.runtime.evidence.of_run.write_objects`)."""
    return of_run.write_objects(objects_of(kube, got), verdict, request)


def _by_name(items: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    def key(obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace")), str(meta.get("name"))

    return tuple(sorted(items, key=key))


def _listed_if_served(kube: Kube, resource: Resource) -> tuple[Mapping[str, Any], ...]:
    try:
        return _by_name(kube.list(resource).items)
    except ApiError:
        return ()
