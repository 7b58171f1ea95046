"""Read a run's objects from the API server and judge them: the input of :func:`~.assemble.assemble`.

The run and everything below it come from the same collection the reports use
(:func:`nvcre.runtime.ops.collect.collect_run`), judged by the same verdict functions; the Nodes
(for the cluster identity and the render) and the ResourceSlices render detection also reads
(as the controller's informers hold them) are added.
"""

from __future__ import annotations

from typing import Any

from ..kube.client import Kube
from ..kube.errors import ApiError
from ..kube.resources import NODES, RESOURCE_SLICES
from .assemble import Objects

__all__ = ["gather"]


def gather(kube: Kube, kind: str, name: str, namespace: str) -> tuple[Objects, Any]:
    """The objects of a Certification or WorkloadRun and its verdict (RunNotFound when absent)."""
    from ..ops.collect import collect_run
    from ..ops.queries import verdict_from

    got = collect_run(kube, kind, name, namespace)
    verdict = verdict_from(got, kind)
    return Objects(
        run=got.run,
        workflows=got.workflows,
        jobs=got.jobs,
        measurements=got.measurements,
        nodes=_sorted(kube.list(NODES).items),
        resource_slices=_optional_list(kube, RESOURCE_SLICES),
    ), verdict


def _sorted(items: Any) -> tuple[dict[str, Any], ...]:
    return tuple(sorted(items, key=lambda o: (str((o.get("metadata") or {}).get("namespace")), str((o.get("metadata") or {}).get("name")))))


def _optional_list(kube: Kube, resource: Any) -> tuple[dict[str, Any], ...]:
    """What render detection also reads; absent (no DRA API, no access) is an empty list, as for the controller."""
    try:
        return _sorted(kube.list(resource).items)
    except ApiError:
        return ()
