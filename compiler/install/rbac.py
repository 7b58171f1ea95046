"""RBAC for the controller, least privilege: what the manager reads cluster-wide, what runs need per namespace.

* ``nvcre-manager-role`` (ClusterRole, bound cluster-wide): full access to the nvcre kinds
  (with ``/status`` and ``/finalizers``) except LogProfiles, which it only reads; read nodes,
  pods and ResourceSlices; read and patch PersistentVolumes; read Namespaces; create
  SelfSubjectAccessReviews (to check its access to a run namespace); write Events; read
  TrainJobs and their status.
* ``nvcre-run-role`` (ClusterRole): what a run needs in its namespace (TrainJobs, ConfigMaps,
  PVCs, TrainingRuntimes, ResourceClaimTemplates, ComputeDomains, ``pods/log``). It is bound
  cluster-wide under ``rbac.scope: cluster``, or by one RoleBinding ``nvcre-manager-run`` per
  entry of ``rbac.runNamespaces`` under ``namespaced``.
* Leader election: a Role on Leases in the controller's own namespace.
* The secured metrics endpoint: ``nvcre-metrics-auth-role`` (create TokenReviews and
  SubjectAccessReviews, bound to the controller) and ``nvcre-metrics-reader`` (``get`` on
  ``/metrics``, left for a Prometheus to bind); see :mod:`.monitoring`.
"""

from __future__ import annotations

from typing import Any

from ..api.kinds import KINDS
from ..compose import run_access_binding
from ..vocabulary import GROUP, LEADER_ROLE, MANAGER_ROLE, RUN_BINDING, RUN_ROLE
from .monitoring import metrics_rbac_objects

__all__ = ["manager_rules", "rbac_objects", "run_rules"]

_FULL = ["create", "delete", "get", "list", "patch", "update", "watch"]
_READ = ["get", "list", "watch"]
_RUN_WRITE = ["create", "delete", "get", "patch", "update"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def manager_rules() -> list[dict[str, Any]]:
    owned = sorted(cls.plural for cls in KINDS if cls.kind_name() != "LogProfile")
    read_only = sorted(cls.plural for cls in KINDS if cls.kind_name() == "LogProfile")
    return [
        _rule([GROUP], owned, _FULL),
        _rule([GROUP], sorted(f"{p}/{sub}" for p in owned for sub in ("status", "finalizers")), ["get", "patch", "update"]),
        _rule([GROUP], read_only, _READ),
        _rule([""], ["nodes", "pods"], _READ),
        _rule(["resource.k8s.io"], ["resourceslices"], _READ),
        _rule([""], ["persistentvolumes"], ["get", "list", "patch", "watch"]),
        _rule([""], ["namespaces"], ["get"]),
        _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews"], ["create"]),
        _rule(["", "events.k8s.io"], ["events"], ["create", "patch"]),
        _rule(["trainer.kubeflow.org"], ["trainjobs"], _READ),
        _rule(["trainer.kubeflow.org"], ["trainjobs/status"], ["get"]),
    ]


def run_rules() -> list[dict[str, Any]]:
    return [
        _rule(["trainer.kubeflow.org"], ["trainjobs"], ["create", "delete", "patch", "update"]),
        _rule([""], ["configmaps"], ["create", "delete", "get", "patch", "update"]),
        _rule([""], ["persistentvolumeclaims"], ["create", "delete", "get", "update"]),
        _rule(["trainer.kubeflow.org"], ["trainingruntimes"], _RUN_WRITE),
        _rule(["resource.k8s.io"], ["resourceclaimtemplates"], _RUN_WRITE),
        _rule(["resource.nvidia.com"], ["computedomains"], _RUN_WRITE),
        _rule([""], ["pods/log"], ["get"]),
    ]


def _subject(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"kind": "ServiceAccount", "name": values["serviceAccount"]["name"], "namespace": values["namespace"]["name"]}]


def _role_ref(kind: str, name: str) -> dict[str, Any]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def rbac_objects(values: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Roles first, then bindings, so an apply in order never binds a missing role."""
    rbac_api = "rbac.authorization.k8s.io/v1"
    namespace = values["namespace"]["name"]
    metrics = metrics_rbac_objects(values, labels)
    metrics_roles = [o for o in metrics if o["kind"] == "ClusterRole"]
    metrics_bindings = [o for o in metrics if o["kind"] != "ClusterRole"]
    objects: list[dict[str, Any]] = [
        {"apiVersion": rbac_api, "kind": "ClusterRole", "metadata": {"name": MANAGER_ROLE, "labels": labels}, "rules": manager_rules()},
        {"apiVersion": rbac_api, "kind": "ClusterRole", "metadata": {"name": RUN_ROLE, "labels": labels}, "rules": run_rules()},
        {
            "apiVersion": rbac_api,
            "kind": "Role",
            "metadata": {"name": LEADER_ROLE, "namespace": namespace, "labels": labels},
            "rules": [_rule(["coordination.k8s.io"], ["leases"], _FULL), _rule(["", "events.k8s.io"], ["events"], ["create", "patch"])],
        },
        *metrics_roles,
        {
            "apiVersion": rbac_api,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{MANAGER_ROLE}binding", "labels": labels},
            "roleRef": _role_ref("ClusterRole", MANAGER_ROLE),
            "subjects": _subject(values),
        },
        {
            "apiVersion": rbac_api,
            "kind": "RoleBinding",
            "metadata": {"name": f"{LEADER_ROLE}binding", "namespace": namespace, "labels": labels},
            "roleRef": _role_ref("Role", LEADER_ROLE),
            "subjects": _subject(values),
        },
        *metrics_bindings,
    ]
    if values["rbac"]["scope"] == "cluster":
        objects.append(
            {
                "apiVersion": rbac_api,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": RUN_BINDING, "labels": labels},
                "roleRef": _role_ref("ClusterRole", RUN_ROLE),
                "subjects": _subject(values),
            }
        )
    else:
        for run_namespace in values["rbac"]["runNamespaces"]:
            # the same binding `nvcrectl rbac print` and the run commands create, with the install's labels
            binding = run_access_binding(
                run_namespace, controller_namespace=namespace, service_account=values["serviceAccount"]["name"], managed_by=None
            )
            binding["metadata"]["labels"] = dict(labels)
            objects.append(binding)
    return objects


def access_reviews(namespace: str) -> list[dict[str, Any]]:
    """The SelfSubjectAccessReviews that tell whether the controller may work in ``namespace``:
    one per resource of the run role, asking for its first write verb (``get`` for read-only ones)."""
    reviews = []
    for rule in run_rules():
        verb = next((v for v in ("create", "update", "patch", "get") if v in rule["verbs"]), rule["verbs"][0])
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                attributes: dict[str, Any] = {"namespace": namespace, "verb": verb, "group": group, "resource": name}
                if sub:
                    attributes["subresource"] = sub
                reviews.append(
                    {
                        "apiVersion": "authorization.k8s.io/v1",
                        "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": attributes},
                    }
                )
    return reviews
