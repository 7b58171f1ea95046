"""NVCRE's ``workloadrun run`` target flags: ``--node-list``, ``--topology-domain``/``--topology-key``, ``--test-scale``.

They change the WorkloadRun before it is submitted, as NVCRE's ``workloadrun run`` does:

* ``--node-list a,b`` sets ``spec.target.nodeNames`` and lowers ``spec.numNodes`` to the number
  of names when it is larger;
* ``--topology-domain D`` adds the requirement ``<key> In [D]`` to ``spec.target.matchExpressions``,
  where the key is ``--topology-key`` or, without it, the topology label of the platform the
  cluster's GPU nodes detect as; ``spec.numNodes`` becomes the number of GPU nodes the target then
  selects (every node of the domain);
* ``--test-scale`` sets ``spec.orchestration.testScale``.

:func:`check_flags` and :func:`apply_offline` need no cluster; :func:`resolve_on_cluster` reads
the cluster's Nodes (only when a node list or a topology domain was given) just before submission.
Every refusal is a :class:`~nvcre.compiler.diagnostics.CompileError` naming the flag (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..kube.client import Kube

__all__ = ["TEST_SCALES", "TargetFlags", "apply_offline", "check_flags", "resolve_on_cluster"]

#: the values ``spec.orchestration.testScale`` (and so ``--test-scale``) takes
TEST_SCALES = ("intra-node", "intra-rack", "full-scale")


@dataclass(frozen=True)
class TargetFlags:
    """The four flags as given ("" when absent); ``node_list`` is NVCRE's comma-separated text."""

    node_list: str = ""
    topology_domain: str = ""
    topology_key: str = ""
    test_scale: str = ""

    @property
    def node_names(self) -> list[str]:
        return [n.strip() for n in self.node_list.split(",")] if self.node_list else []

    @property
    def needs_cluster(self) -> bool:
        """True when the node count (or the topology key) has to be read from the cluster."""
        return bool(self.node_list or self.topology_domain)


def _refuse(flag: str, message: str) -> Exception:
    from nvcre.compiler.diagnostics import CompileError, error

    return CompileError([error("InvalidFlags", flag, message)])


def check_flags(flags: TargetFlags) -> None:
    """Refuse values no cluster could make sense of, before anything is read or sent."""
    if flags.node_list:
        names = flags.node_names
        if any(not n for n in names):
            raise _refuse("--node-list", f"empty node name in {flags.node_list!r}: give comma-separated node names")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise _refuse("--node-list", f"node named more than once: {', '.join(repeated)}")
    if flags.topology_key and not flags.topology_domain:
        raise _refuse("--topology-key", "--topology-key names the label of --topology-domain; give --topology-domain too")
    if flags.topology_domain != flags.topology_domain.strip():
        raise _refuse("--topology-domain", f"{flags.topology_domain!r} has leading or trailing spaces")
    if flags.test_scale and flags.test_scale not in TEST_SCALES:
        raise _refuse("--test-scale", f"{flags.test_scale!r} is not one of {', '.join(TEST_SCALES)}")


def _target(document: dict[str, Any]) -> dict[str, Any]:
    spec = document.setdefault("spec", {})
    target: dict[str, Any] = spec["target"] if isinstance(spec.get("target"), dict) else {}
    spec["target"] = target
    return target


def apply_offline(document: dict[str, Any], flags: TargetFlags) -> None:
    """What the flags change without the cluster: node names, the test scale, the clamp to the names.

    The topology requirement is added by :func:`resolve_on_cluster` once its key is known, unless
    ``--topology-key`` gave it (then it is added here, so validation sees it).
    """
    spec = document.setdefault("spec", {})
    names = flags.node_names
    if names:
        _target(document)["nodeNames"] = names
        if isinstance(spec.get("numNodes"), int) and spec["numNodes"] > len(names):
            spec["numNodes"] = len(names)
    if flags.topology_domain and flags.topology_key:
        _add_requirement(document, flags.topology_key, flags.topology_domain)
    if flags.test_scale:
        if not isinstance(spec.get("orchestration"), dict):
            spec["orchestration"] = {}
        spec["orchestration"]["testScale"] = flags.test_scale


def _add_requirement(document: dict[str, Any], key: str, domain: str) -> None:
    target = _target(document)
    expressions = target.get("matchExpressions")
    target["matchExpressions"] = [
        *(expressions if isinstance(expressions, list) else []),
        {"key": key, "operator": "In", "values": [domain]},
    ]


def resolve_on_cluster(kube: Kube, document: dict[str, Any], flags: TargetFlags, say: Callable[[str], None]) -> None:
    """Read the cluster's Nodes: the platform's topology key when none was given, then ``numNodes``
    from the GPU nodes the target selects. Nothing is read unless a node list or domain was given."""
    if not flags.needs_cluster:
        return
    from nvcre.compiler.detect.target import select_target_nodes

    from .facts import live_facts

    facts = live_facts(kube)
    if flags.topology_domain and not flags.topology_key:
        _add_requirement(document, _platform_topology_key(facts), flags.topology_domain)
    selected, _, _ = select_target_nodes(facts, document["spec"].get("target"))
    flag = "--topology-domain" if flags.topology_domain else "--node-list"
    if not selected:
        raise _refuse(flag, "the target selects no GPU node of the cluster (nodes must be labelled nvidia.com/gpu.present=true)")
    say(f"Discovered {len(selected)} GPU nodes with product: {_products(selected)}")
    spec = document["spec"]
    if flags.topology_domain or spec.get("numNodes", 0) > len(selected):
        spec["numNodes"] = len(selected)


def _platform_topology_key(facts: Any) -> str:
    """The topology label of the platform the cluster's GPU nodes detect as; refused when it has none."""
    from nvcre.compiler.detect.platform import detect_platform
    from nvcre.compiler.detect.target import select_target_nodes
    from nvcre.compiler.detect.topology import platform_topology_key

    gpu_nodes, _, _ = select_target_nodes(facts, None)
    if not gpu_nodes:
        raise _refuse("--topology-domain", "the cluster has no GPU node to detect the platform from; give --topology-key")
    fact, _ = detect_platform(gpu_nodes)
    platform = str(fact.value) if fact is not None else ""
    key = platform_topology_key(platform) if platform else ""
    if not key:
        raise _refuse("--topology-domain", f"--topology-domain requires --topology-key on platform {platform or 'unknown'!r}")
    return key


def _products(nodes: Any) -> str:
    from nvcre.compiler.detect.target import GPU_PRODUCT_LABEL
    from nvcre.compiler.facts import labels_of

    products = sorted({labels_of(n).get(GPU_PRODUCT_LABEL, "") for n in nodes} - {""})
    return ", ".join(products) or "unknown"
