"""Cluster facts read from a live cluster, for ``render --dry-run`` and ``cluster info``.

The same :class:`~nvcre.compiler.facts.ClusterFacts` an offline ``--facts`` file gives: the Nodes,
the ``resource.k8s.io`` ResourceSlices (absent on clusters without DRA: then none), and the Pods
of the namespace the TCPXO detection reads. Detection itself stays in the compiler.
"""

from __future__ import annotations

from nvcre.compiler.facts import ClusterFacts, facts_from_objects

from ..kube.client import Kube
from ..kube.errors import ApiError
from ..kube.resources import NODES, PODS, RESOURCE_SLICES

__all__ = ["live_facts"]


def _tcpxo_namespace() -> str:
    from nvcre.compiler.detect.tables import table

    return str(table("tcpxo")["installer"]["namespace"])


def live_facts(kube: Kube) -> ClusterFacts:
    """Nodes, ResourceSlices and the TCPXO installer's Pods, as the API server holds them now."""
    nodes = kube.list(NODES).items
    try:
        slices = kube.list(RESOURCE_SLICES).items
    except ApiError:  # no DRA API, or no right to read it: detection then uses node labels only
        slices = ()
    try:
        pods = kube.list(PODS, _tcpxo_namespace()).items
    except ApiError:
        pods = ()
    return facts_from_objects(nodes=nodes, resource_slices=slices, pods=pods, source="cluster")
