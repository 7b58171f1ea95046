"""What ``setup`` needs besides its own objects: Kubeflow Trainer and JobSet, and whether they are there.

A component is present when its CRDs exist and a sign of its controller does (an admission
webhook serving its API group). ``setup status`` lists them; ``setup init`` installs what is
missing (see :mod:`.trainer`) unless told ``--skip-phases=deps``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...kube.client import Kube
from ...kube.errors import ApiError, NotFound
from ...kube.resources import Resource

__all__ = [
    "CRDS",
    "JOBSET_CRD",
    "TRAINER_CRDS",
    "TRAINER_INSTALL",
    "Component",
    "DependenciesMissing",
    "dependencies",
    "exists",
    "missing_dependencies",
    "wait_established",
]

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
_MUTATING = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", namespaced=False
)
_VALIDATING = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", namespaced=False
)
TRAINER_CRDS = ("trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org")
JOBSET_CRD = "jobsets.jobset.x-k8s.io"
TRAINER_INSTALL = (
    "Let setup init install Kubeflow Trainer 2.2.1 (drop --skip-phases=deps; it needs helm and either the pinned\n"
    "Trainer Go module on this machine or --trainer-chart-ref), or install it yourself:\n"
    '  kubectl apply --server-side -k "https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.2.1"\n'
    "then re-run: nvcrectl setup init --skip-phases=deps"
)


@dataclass(frozen=True)
class Component:
    """One thing the install needs, and whether the cluster has it."""

    name: str
    present: bool
    detail: str = ""


def exists(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> bool:
    """The object is on the cluster."""
    try:
        kube.get(resource, name, namespace)
        return True
    except NotFound:
        return False


def _webhook_groups(kube: Kube) -> set[str]:
    """The API groups admission webhooks serve (from their rules), plus every configuration and hook name."""
    found: set[str] = set()
    for resource in (_MUTATING, _VALIDATING):
        try:
            configurations = kube.list(resource).items
        except ApiError:
            continue
        for configuration in configurations:
            found.add(str((configuration.get("metadata") or {}).get("name") or ""))
            for hook in configuration.get("webhooks") or []:
                found.add(str(hook.get("name") or ""))
                for rule in hook.get("rules") or []:
                    found.update(str(group) for group in rule.get("apiGroups") or [])
    return found


def _serves(found: set[str], group: str) -> bool:
    return any(entry == group or entry.endswith("." + group) for entry in found)


def dependencies(kube: Kube) -> list[Component]:
    """Kubeflow Trainer and JobSet: their CRDs and a sign of their controllers (their webhooks)."""
    webhooks = _webhook_groups(kube)
    trainer_crds = [name for name in TRAINER_CRDS if not exists(kube, CRDS, name)]
    jobset_crd = exists(kube, CRDS, JOBSET_CRD)
    trainer_hooks = _serves(webhooks, "trainer.kubeflow.org")
    jobset_hooks = _serves(webhooks, "jobset.x-k8s.io")
    return [
        Component(
            "Kubeflow Trainer CRDs",
            not trainer_crds,
            "missing: " + ", ".join(trainer_crds) if trainer_crds else "trainjobs, trainingruntimes, clustertrainingruntimes",
        ),
        Component(
            "Kubeflow Trainer webhooks",
            trainer_hooks,
            "" if trainer_hooks else "no admission webhook of trainer.kubeflow.org: is its controller running?",
        ),
        Component("JobSet CRD", jobset_crd, JOBSET_CRD if jobset_crd else f"missing: {JOBSET_CRD}"),
        Component("JobSet webhooks", jobset_hooks, "" if jobset_hooks else "no JobSet admission webhook: is its controller running?"),
    ]


def wait_established(kube: Kube, names: Sequence[str], timeout: float = 60.0) -> None:
    """Wait (bounded) until the API server serves every CRD in ``names``."""
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            try:
                crd = kube.get(CRDS, name)
            except NotFound:
                continue
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                pending.discard(name)
        if pending:
            time.sleep(0.2)
    if pending:
        raise TimeoutError(f"CRDs not established after {timeout:.0f}s: {', '.join(sorted(pending))}")


def missing_dependencies(kube: Kube) -> list[Component]:
    """The parts of Kubeflow Trainer and JobSet the cluster lacks (empty when all are there)."""
    return [c for c in dependencies(kube) if not c.present]


class DependenciesMissing(Exception):
    """Kubeflow Trainer or JobSet (or their controllers) are not on the cluster."""

    def __init__(self, missing: Sequence[Component]) -> None:
        self.missing = tuple(missing)
        super().__init__("missing: " + "; ".join(f"{c.name}: {c.detail}" for c in self.missing))
