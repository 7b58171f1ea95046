"""ComputeDomains as a Job's precondition: when one that never became Ready fails the Job, and whom it blames.

GB200/GB300 workloads that span trays need the IMEX channel of a ComputeDomain, which NVIDIA's DRA
driver prepares on each node a workload pod lands on. A pod whose channel is never prepared waits
in ``ContainerCreating`` for ever, so the Job would only end at ``timeoutPerJob`` (24 hours for
an ad-hoc run) with no word of why. The rule here ends it earlier and says why:

* a launched Job whose ComputeDomain is still not ``Ready`` after the controller's
  ``--compute-domain-timeout`` fails with ``ComputeDomainNotReady``;
* the nodes the driver lists as ``NotReady`` in the domain's status are blamed, with NVCRE's
  ``WorkloadFailed`` node reason and a message naming the domain (their IMEX
  daemon did not come up: a fault of that node), and so are nodes where the Job's pods are bound
  but the driver never listed, once the driver has listed any node at all;
* when the driver lists no node for the domain, the driver itself is not working: the Job fails
  without blaming any node.

A cluster that serves no ComputeDomain API fails the Job's launch at once; :func:`missing_api_hint`
words that message for the API group a dependency needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["COMPUTE_DOMAIN_KIND", "DomainProblem", "domain_problem", "is_ready", "missing_api_hint"]

COMPUTE_DOMAIN_KIND = "ComputeDomain"
DRIVER = "NVIDIA's DRA driver for GPUs (k8s-dra-driver-gpu)"

_HINTS = {
    "resource.nvidia.com": (
        f"{DRIVER} serves ComputeDomains: install it with ComputeDomain support for multi-node NVLink "
        "on GB200/GB300, or set options.enableMNNVL: false to run without it"
    ),
    "trainer.kubeflow.org": "the Kubeflow Trainer serves it: run `nvcrectl setup init` or install the Trainer",
    "jobset.x-k8s.io": "JobSet serves it: run `nvcrectl setup init` or install JobSet",
    "resource.k8s.io": "the cluster has no Dynamic Resource Allocation API (Kubernetes 1.34 or later serves resource.k8s.io/v1)",
}


def missing_api_hint(api_version: str) -> str:
    """Who serves ``api_version``'s group, for a message about a cluster that does not ('' if unknown)."""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return _HINTS.get(group, "")


def is_ready(domain: Mapping[str, Any]) -> bool:
    return ((domain.get("status") or {}).get("status")) == "Ready"


@dataclass(frozen=True)
class DomainProblem:
    """Why a Job fails on its ComputeDomain, and which nodes (possibly none) are to blame."""

    message: str
    nodes: tuple[str, ...]


def domain_problem(
    domains: Iterable[Mapping[str, Any]],
    pod_nodes: Iterable[str],
    waited: float,
    bound: float,
    bound_text: str,
) -> DomainProblem | None:
    """The problem to fail with once ``waited`` seconds since launch exceed ``bound``; None otherwise
    (within the bound, or every domain Ready). ``pod_nodes``: where the Job's pods are bound."""
    if waited <= bound:
        return None
    stuck = [d for d in domains if not is_ready(d)]
    if not stuck:
        return None
    pods_on = sorted(set(pod_nodes))
    parts: list[str] = []
    blamed: set[str] = set()
    for domain in stuck:
        name = str((domain.get("metadata") or {}).get("name") or "")
        listed = {
            str(n.get("name")): str(n.get("status") or "NotReady") for n in (domain.get("status") or {}).get("nodes") or [] if n.get("name")
        }
        if not listed:
            parts.append(
                f"ComputeDomain {name} is not Ready after {bound_text} and {DRIVER} lists no node for it "
                "(is its compute-domain controller running?); no node is blamed"
            )
            continue
        down = sorted(n for n, state in listed.items() if state != "Ready")
        unlisted = [n for n in pods_on if n not in listed]
        blamed.update(down, unlisted)
        detail = []
        if down:
            detail.append(f"the IMEX daemon is NotReady on {', '.join(down)}")
        if unlisted:
            detail.append(f"no IMEX daemon joined from {', '.join(unlisted)}")
        ready = sum(1 for state in listed.values() if state == "Ready")
        wanted = int(((domain.get("spec") or {}).get("numNodes")) or 0)
        counts = f"{ready}/{wanted} nodes Ready" if wanted else f"{ready}/{len(listed)} nodes Ready"
        parts.append(
            f"ComputeDomain {name} is not Ready after {bound_text} ({counts}): "
            + ("; ".join(detail) if detail else "waiting for more nodes to join")
        )
    return DomainProblem("; ".join(parts), tuple(sorted(blamed)))
