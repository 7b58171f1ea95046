"""The install's admission policy on a real API server: a Workflow's author needs their own rights.

alice holds only a Role on the nvcre kinds, as in the audit's reproducer. Her Workflow runs its
pods as the namespace's admin ServiceAccount, mounts a Secret and plants a ConfigMap. Admission
refuses it, naming the right she lacks, until she holds every one of them: ``create pods`` and
``trainjobs``, ``create`` for each dependency kind, ``create serviceaccounts/token`` on the
ServiceAccount and ``get`` on the Secret. A WorkloadRun that mounts a Secret she may not read is
refused the same way. The controller's own ServiceAccount is not checked: it creates the
Workflows of Certifications and WorkloadRuns, which were checked when their authors wrote them.
"""

from __future__ import annotations

import contextlib
import copy
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.integration_helpers import eventually

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RENDERED = REPO / "examples/flux/rendered/h100-acceptance/h100-acceptance-communication-nccl-loopback.yaml"
RBAC = "rbac.authorization.k8s.io/v1"


def _policy_objects(controller_namespace: str) -> list[dict[str, Any]]:
    from nvcre.compiler.install import render_install

    installed = render_install([{"namespace": {"name": controller_namespace}}]).objects
    return [o for o in installed if o["kind"] in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")]


def _grant(admin: Any, namespace: str, name: str, rules: list[dict[str, Any]], subject: str = "alice") -> None:
    admin.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    admin.create(
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": namespace}],
        }
    )


def _token(plane: Any, namespace: str, account: str) -> str:
    from kubernetes import client as k8s

    with plane.api_client() as api:
        body = {"spec": {"expirationSeconds": 3600}}
        return str(k8s.CoreV1Api(api).create_namespaced_service_account_token(account, namespace, body).status.token)


def _evil_workflow(namespace: str, name: str = "evil") -> dict[str, Any]:
    """A rendered Workflow whose runtime pods run as team-a-admin with team-a-secret mounted, plus a planted ConfigMap."""
    rendered = yaml.safe_load(RENDERED.read_text())
    wf = {"apiVersion": rendered["apiVersion"], "kind": "Workflow", "metadata": {"name": name, "namespace": namespace}}
    wf["spec"] = copy.deepcopy(rendered["spec"])
    job = wf["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]
    pod = job["template"]["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "team-a-admin"
    pod.setdefault("volumes", []).append({"name": "loot", "secret": {"secretName": "team-a-secret"}})
    wf["spec"]["dependencies"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "planted-by-alice"}, "data": {"a": "b"}}
    )
    return wf


@pytest.fixture
def policy_cluster(controlplane) -> Iterator[tuple[Any, Any, str, str]]:
    """(admin, alice's client, alice's namespace, the controller's namespace) with the policy installed."""
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.runtime.kube.errors import ApiError

    admin = ApiServerClient.from_kubeconfig(str(controlplane.kubeconfig))
    suffix = uuid.uuid4().hex[:6]
    namespace, controller_ns = f"team-a-{suffix}", f"ctl-{suffix}"
    policy = _policy_objects(controller_ns)
    made = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": controller_ns}},
        *policy,
    ]
    for obj in made:
        admin.apply(obj)
    admin.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "alice", "namespace": namespace}})
    admin.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nvcre-manager", "namespace": controller_ns}})
    nvcre_kinds = [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["certifications", "workloadruns", "workflows"], "verbs": ["*"]}]
    _grant(admin, namespace, "alice-nvcre", nvcre_kinds)
    alice = ApiServerClient(controlplane.api_client(token=_token(controlplane, namespace, "alice")))
    try:
        yield admin, alice, namespace, controller_ns
    finally:
        alice.close()
        for obj in reversed(made):  # the policy first, then the namespaces
            meta = obj["metadata"]
            with contextlib.suppress(ApiError):
                admin.delete(admin.resource_for(obj["apiVersion"], obj["kind"]), meta["name"], meta.get("namespace"))
        admin.close()


def _refusal(client: Any, obj: dict[str, Any]) -> str:
    """The admission message refusing ``obj``, or '' when it was created (then it is deleted again)."""
    from nvcre.runtime.kube.errors import ApiError
    from nvcre.runtime.kube.resources import WORKFLOWS, WORKLOADRUNS

    try:
        client.create(obj)
    except ApiError as exc:
        assert exc.status == 403, exc.message
        return exc.message
    resource = WORKFLOWS if obj["kind"] == "Workflow" else WORKLOADRUNS
    client.delete(resource, obj["metadata"]["name"], obj["metadata"]["namespace"])
    return ""


def _refused_until_granted(
    admin: Any, alice: Any, namespace: str, obj: dict[str, Any], role: str, rules: list[dict[str, Any]], says: str
) -> None:
    seen: list[str] = []

    def refused_for_this() -> bool:
        seen.append(_refusal(alice, obj))  # an earlier grant may take a moment to reach the authorizer
        return "nvcre-author-rights" in seen[-1] and says in seen[-1]

    try:
        eventually(refused_for_this, timeout=30, what=f"admission to refuse alice with {says!r}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the last answer was {seen[-1]!r}") from None
    _grant(admin, namespace, role, rules)


def test_a_user_with_only_workflow_rights_gets_no_pod_secret_or_service_account_through_a_workflow(policy_cluster):
    admin, alice, namespace, _ = policy_cluster
    wf = _evil_workflow(namespace)
    user = f"system:serviceaccount:{namespace}:alice"
    steps = [
        ("pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}], f"{user} may not create pods in namespace {namespace}"),
        (
            "trainjobs",
            [{"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["create"]}],
            "may not create trainjobs",
        ),
        (
            "deps",
            [
                {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainingruntimes"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
            ],
            "may not create trainingruntimes in namespace " + namespace + ", and this Workflow depends on TrainingRuntime "
            "nccl-loopback-runtime",
        ),
        (
            "act-as",
            [{"apiGroups": [""], "resources": ["serviceaccounts/token"], "resourceNames": ["team-a-admin"], "verbs": ["create"]}],
            "may not act as (create serviceaccounts/token for) ServiceAccount team-a-admin in namespace " + namespace,
        ),
        (
            "secret",
            [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["team-a-secret"], "verbs": ["get"]}],
            "may not get Secret team-a-secret in namespace " + namespace + ", which the pods would use",
        ),
    ]
    for role, rules, says in steps:
        _refused_until_granted(admin, alice, namespace, wf, role, rules, says)
    # holding every right herself, alice may write exactly this Workflow
    assert eventually(lambda: _refusal(alice, wf) == "" or None, timeout=30, what="the Workflow to be admitted")


def test_a_workloadrun_may_mount_only_secrets_its_author_may_read(policy_cluster):
    admin, alice, namespace, _ = policy_cluster
    run = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "WorkloadRun",
        "metadata": {"name": "reads-secrets", "namespace": namespace},
        "spec": {
            "image": "nvcr.io/nvidia/pytorch:26.01-py3",
            "numNodes": 1,
            "framework": {"exec": {"command": ["true"]}},
            "volumes": [{"name": "loot", "secret": {"secretName": "team-a-secret"}}],
            "initContainers": [{"name": "peek", "envFrom": [{"secretRef": {"name": "env-secret"}}]}],
        },
    }
    rules = [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["team-a-secret", "env-secret"], "verbs": ["get"]}]
    _refused_until_granted(admin, alice, namespace, run, "secrets", rules, "may not get Secret team-a-secret in namespace")
    assert eventually(lambda: _refusal(alice, run) == "" or None, timeout=30, what="the WorkloadRun to be admitted")


def test_many_dependencies_and_names_stay_within_the_api_servers_cel_budget(policy_cluster):
    """Each authorizer check costs a third of an expression's CEL limit: a Workflow with many
    dependencies, or pods reading many Secrets, must get an answer, never a cost error."""
    admin, alice, namespace, _ = policy_cluster
    wf = _evil_workflow(namespace, "many")
    pod = wf["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "default"
    pod["volumes"] = [v for v in pod.get("volumes", []) if "secret" not in v]
    names = [f"s{i}" for i in range(6)]
    pod["volumes"] += [{"name": n, "secret": {"secretName": n}} for n in names]
    pod["volumes"].append({"name": "again", "secret": {"secretName": "s0"}})  # counted once
    for i in range(6):
        wf["spec"]["dependencies"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"extra-{i}"}, "data": {}})
    base = [
        {"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["create"]},
        {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs", "trainingruntimes"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": names[:4], "verbs": ["get"]},
    ]
    _grant(admin, namespace, "many-base", base)
    # four named Secrets are checked one by one; six need the right on every Secret of the namespace
    overflow = (
        "may not get every Secret in namespace " + namespace + ", and the pods would use more than 4 by name (s0, s1, s2, s3, s4, s5)"
    )
    _refused_until_granted(
        admin, alice, namespace, wf, "many-secrets", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}], overflow
    )
    assert eventually(lambda: _refusal(alice, wf) == "" or None, timeout=30, what="the Workflow to be admitted")


def test_the_controllers_own_service_account_is_not_checked(policy_cluster, controlplane):
    from nvcre.runtime.kube.client import ApiServerClient

    admin, alice, namespace, controller_ns = policy_cluster
    wf = _evil_workflow(namespace, "made-by-the-controller")
    # the controller's rights on Workflows, and nothing else
    admin.create(
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": "controller-workflows", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "alice-nvcre"},
            "subjects": [{"kind": "ServiceAccount", "name": "nvcre-manager", "namespace": controller_ns}],
        }
    )
    eventually(lambda: _refusal(alice, _evil_workflow(namespace, "probe")), timeout=30, what="the policy to be active")
    controller = ApiServerClient(controlplane.api_client(token=_token(controlplane, controller_ns, "nvcre-manager")))
    try:
        deadline = time.monotonic() + 10
        while True:  # the RoleBinding may take a moment to reach the authorizer
            message = _refusal(controller, wf)
            if not message or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert message == ""
    finally:
        controller.close()
