"""Read a run's objects from the API server and judge them: the input of :func:`~.assemble.assemble`.

The run and everything below it come from the same collection the reports use
(:func:`nvcre.runtime.ops.collect.collect_run`), judged by the same verdict functions; the Nodes
(for the cluster identity and the render) and the ResourceSlices render detection also reads
(as the controller's informers hold them) are added as a waited-for run's bundle adds them
(:func:`~.of_run.objects_of`).
"""

from __future__ import annotations

from typing import Any

from ..kube.client import Kube
from .assemble import Objects
from .of_run import objects_of

__all__ = ["gather"]


def gather(kube: Kube, kind: str, name: str, namespace: str) -> tuple[Objects, Any]:
    """The objects of a Certification or WorkloadRun and its verdict (RunNotFound when absent)."""
    from ..ops.collect import collect_run
    from ..ops.queries import verdict_from

    got = collect_run(kube, kind, name, namespace)
    return objects_of(kube, got), verdict_from(got, kind)
