"""No privilege through the controller, on the simulated cluster with the install's policy and RBAC.

The controller runs as the install ships it (``python -m nvcre.runtime``, the Deployment's flags,
the install's ServiceAccount and RBAC) and the install's admission policy is in place.

* alice, with only Workflow rights (the audit's reproducer), cannot create a Workflow at all:
  admission says she may not create pods. Nothing is created in her namespace.
* bob may create pods, TrainJobs and TrainingRuntimes, but not read the namespace's Secret or act
  as its admin ServiceAccount. He hides both where the admission policy does not look (the
  TrainJob's ``podTemplateOverrides``). Admission lets the Workflow in; the controller refuses it
  before anything runs: ``PodReferencesNotAdmitted`` naming both, no Job and no TrainJob.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.as_installed import install_rbac, remove_installed, shipped_controller, token_for
from tests.integration.integration_helpers import eventually

pytestmark = [pytest.mark.integration, pytest.mark.sim]

RBAC = "rbac.authorization.k8s.io/v1"
POLICY_KINDS = frozenset({"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"})


def _user(kube: Any, simcluster: Any, namespace: str, name: str, rules: list[dict[str, Any]]) -> Any:
    from nvcre.runtime.kube.client import ApiServerClient

    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})
    kube.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    kube.create(
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )
    return ApiServerClient(simcluster.api_client(token=token_for(simcluster, namespace, name)))


def _workflow(kube: Any, namespace: str, name: str, nodes: list[str]) -> dict[str, Any]:
    from nvcre.runtime import compile as compiler
    from nvcre.runtime.kube.resources import NODES

    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace, "uid": "00000000-0000-0000-0000-000000000000"},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "3m",
            "categories": [{"domain": "communication", "variant": "nccl-loopback"}],
        },
    }
    rendered = compiler.expand_certification(cert, compiler.cluster_facts(kube.list(NODES).items))[0]
    rendered["metadata"] = {"name": name, "namespace": namespace}
    return rendered


def _admitted(client: Any, obj: dict[str, Any]) -> str:
    """'' once ``obj`` was created, else the admission message (the policy may take a moment to load)."""
    from nvcre.runtime.kube.errors import ApiError

    try:
        client.create(obj)
    except ApiError as exc:
        return exc.message
    return ""


def test_a_workflow_author_gets_no_pod_secret_or_service_account_they_lack(simcluster, kube, sim_namespace, tmp_path):
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import JOBS, TRAINJOBS, WORKFLOWS

    controller_ns, objects = install_rbac(kube, POLICY_KINDS)
    try:
        nodes = simcluster.add_nodes(profile="h100", count=1, prefix=f"{sim_namespace}-ar")
        kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "team-a-admin", "namespace": sim_namespace}})
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "team-a-secret", "namespace": sim_namespace},
                "stringData": {"k": "v"},
            }
        )
        workflows_only = [
            {"apiGroups": ["nvcre.nvidia.com"], "resources": ["workflows"], "verbs": ["create", "get", "list", "watch", "delete"]}
        ]
        runs_pods = [
            *workflows_only,
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]},
            {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs", "trainingruntimes"], "verbs": ["create"]},
        ]
        alice = _user(kube, simcluster, sim_namespace, "alice", workflows_only)
        bob = _user(kube, simcluster, sim_namespace, "bob", runs_pods)
        try:
            with shipped_controller(simcluster, controller_ns, sim_namespace, tmp_path) as controller:
                evil = _workflow(kube, sim_namespace, "evil", nodes)
                pod = evil["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
                    "spec"
                ]
                pod["serviceAccountName"] = "team-a-admin"
                pod.setdefault("volumes", []).append({"name": "loot", "secret": {"secretName": "team-a-secret"}})
                message = eventually(lambda: _admitted(alice, evil), timeout=30, what="admission to refuse alice's Workflow")
                assert "nvcre-author-rights" in message and f"alice may not create pods in namespace {sim_namespace}" in message

                hidden = _workflow(kube, sim_namespace, "hidden", nodes)
                overrides = [
                    {
                        "targetJobs": [{"name": "node"}],
                        "spec": {
                            "serviceAccountName": "team-a-admin",
                            "volumes": [{"name": "loot", "secret": {"secretName": "team-a-secret"}}],
                        },
                    }
                ]
                hidden["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["podTemplateOverrides"] = overrides
                assert eventually(lambda: _admitted(bob, hidden) == "" or None, timeout=30, what="bob's Workflow to be admitted")

                def failed() -> dict[str, Any] | None:
                    status = kube.get(WORKFLOWS, "hidden", sim_namespace).get("status")
                    return cond.condition(status, cond.FAILED) if cond.lifecycle(status) == cond.FAILED else None

                ending = eventually(failed, timeout=120, what="the controller to refuse bob's Workflow")
                assert ending["reason"] == "PodReferencesNotAdmitted", controller.tail()
                assert "Secret team-a-secret, ServiceAccount team-a-admin" in ending["message"]
                assert not kube.list(JOBS, sim_namespace).items
                assert not kube.list(TRAINJOBS, sim_namespace).items
                assert [w["metadata"]["name"] for w in kube.list(WORKFLOWS, sim_namespace).items] == ["hidden"]
        finally:
            alice.close()
            bob.close()
    finally:
        remove_installed(kube, objects)
