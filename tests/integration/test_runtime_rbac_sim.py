"""Namespaced write access: the controller runs as its own ServiceAccount with the install's RBAC.

With ``rbac.scope: namespaced`` the controller may write in a run namespace only through the
RoleBinding ``nvcre-manager-run``. A Workflow there waits ``InProgress`` /
``NamespacePermissionsMissing`` with a Warning naming the binding, and goes on by itself once the
binding exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.integration_helpers import eventually, fast_settings, remove_cluster_objects

pytestmark = [pytest.mark.integration, pytest.mark.sim]


def _install_rbac(kube: Any, controller_ns: str) -> list[dict[str, Any]]:
    from nvcre.compiler.install import render_install

    installed = render_install(
        [
            {
                "namespace": {"name": controller_ns},
                "rbac": {"scope": "namespaced"},
                "crds": {"install": False},
            }
        ]
    )
    kinds = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "LogProfile"}
    objects = [o for o in installed.objects if o["kind"] in kinds]
    for obj in objects:
        kube.apply(obj)
    return objects


@pytest.fixture
def restricted(simcluster) -> Iterator[tuple[Any, Any, str]]:
    """(admin client, the controller's own client, controller namespace); RBAC removed afterwards."""
    from kubernetes import client as k8s

    from nvcre.runtime.kube.client import ApiServerClient

    admin = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    controller_ns = f"ctl-{uuid.uuid4().hex[:6]}"
    objects = _install_rbac(admin, controller_ns)
    with simcluster.api_client() as api:
        token = (
            k8s.CoreV1Api(api)
            .create_namespaced_service_account_token("nvcre-manager", controller_ns, {"spec": {"expirationSeconds": 3600}})
            .status.token
        )
    own = ApiServerClient(simcluster.api_client(token=token))
    try:
        yield admin, own, controller_ns
    finally:
        own.close()
        remove_cluster_objects(admin, objects)
        admin.close()


def test_a_workflow_waits_for_the_run_binding_then_proceeds(simcluster, sim_namespace, restricted):
    from nvcre.compiler.compose import run_access_binding
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import CERTIFICATIONS, EVENTS, WORKFLOWS

    admin, own, controller_ns = restricted
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-rb")
    settings = fast_settings()
    config = ControllerConfig(
        namespace=sim_namespace,
        metrics_address="127.0.0.1:0",
        health_address="127.0.0.1:0",
        leader_elect=False,
        install_logprofiles=False,
        settings=settings,
    )
    ctl = Controller(own, config).start()
    try:
        admin.create(
            {
                "apiVersion": "nvcre.nvidia.com/v1alpha1",
                "kind": "Certification",
                "metadata": {"name": "rbac", "namespace": sim_namespace},
                "spec": {
                    "target": {"nodeNames": nodes},
                    "timeoutPerJob": "3m",
                    "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
                },
            }
        )

        def waiting() -> dict[str, Any] | None:
            for wf in admin.list(WORKFLOWS, sim_namespace).items:
                found = cond.condition(wf.get("status"), "NamespaceAccess")
                if found and found.get("status") == "False":
                    return wf
            return None

        wf = eventually(waiting, timeout=60, what="the Workflow to wait for namespace access")
        progress = cond.condition(wf["status"], cond.IN_PROGRESS)
        assert progress["reason"] == "NamespacePermissionsMissing"
        assert "RoleBinding nvcre-manager-run" in progress["message"]
        assert "create trainer.kubeflow.org/trainjobs" in progress["message"]
        # the Event is written just after the status: under load the first list may come too soon
        warnings = eventually(
            lambda: (
                [
                    e
                    for e in admin.list(EVENTS, sim_namespace).items
                    if e.get("reason") == "NamespacePermissionsMissing" and e.get("type") == "Warning"
                ]
                or None
            ),
            timeout=30,
            what="the NamespacePermissionsMissing Warning Event",
        )
        assert warnings

        admin.create(run_access_binding(sim_namespace, controller_namespace=controller_ns))

        def finished() -> str | None:
            life = cond.lifecycle(admin.get(CERTIFICATIONS, "rbac", sim_namespace).get("status"))
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(finished, timeout=120, what="the Certification to finish") == cond.SUCCEEDED
        wf = admin.get(WORKFLOWS, wf["metadata"]["name"], sim_namespace)
        assert cond.is_true(wf["status"], "NamespaceAccess")
    finally:
        ctl.stop()


def test_the_controller_starts_under_the_install_role_without_logprofile_warnings(simcluster, sim_namespace, restricted):
    """The install applied the built-in LogProfiles and lets the controller only read them: a start
    finds them current and writes nothing (it used to log four forbidden applies at every start)."""
    import logging

    from nvcre.runtime.controller import Controller, ControllerConfig

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    _, own, _ = restricted
    keep = Keep()
    tree = logging.getLogger("nvcre")
    tree.addHandler(keep)
    config = ControllerConfig(namespace=sim_namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False)
    try:
        ctl = Controller(own, config).start()
        try:
            eventually(lambda: "reconcilers started" in keep.messages, timeout=30, what="the controller to start its reconcilers")
        finally:
            ctl.stop()
    finally:
        tree.removeHandler(keep)
    assert [m for m in keep.messages if "LogProfile" in m] == []


def test_a_user_limited_to_one_namespace_cannot_make_the_controller_write_in_another(simcluster, sim_namespace):
    """alice may create Workflows in her namespace only. Her Workflows name another namespace in
    ``spec.namespace`` and carry extra dependencies; the controller, with the install's default
    (cluster-scoped) RBAC, writes only in her namespace and creates no kind outside the run kinds."""
    from kubernetes import client as k8s

    from nvcre.compiler.install import render_install
    from nvcre.runtime import compile as compiler
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.runtime.kube.resources import CONFIGMAPS, JOBS, NODES, TRAINJOBS, WORKFLOWS, Resource

    admin = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    suffix = uuid.uuid4().hex[:6]
    controller_ns, other = f"ctl-{suffix}", f"other-{suffix}"
    kinds = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "LogProfile"}
    installed = [
        o for o in render_install([{"namespace": {"name": controller_ns}, "crds": {"install": False}}]).objects if o["kind"] in kinds
    ]
    alice_objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "alice", "namespace": sim_namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "alice", "namespace": sim_namespace},
            "rules": [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["workflows"], "verbs": ["create", "get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice", "namespace": sim_namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "alice"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": sim_namespace}],
        },
    ]
    for obj in [*installed, *alice_objects]:
        admin.apply(obj)
    with simcluster.api_client() as api:
        core = k8s.CoreV1Api(api)
        manager_token = core.create_namespaced_service_account_token(
            "nvcre-manager", controller_ns, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        alice_token = core.create_namespaced_service_account_token(
            "alice", sim_namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
    own, alice = ApiServerClient(simcluster.api_client(token=manager_token)), ApiServerClient(simcluster.api_client(token=alice_token))
    role_bindings = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-alice")
    settings = fast_settings()
    ctl = Controller(
        own,
        ControllerConfig(
            namespace=sim_namespace,
            metrics_address="127.0.0.1:0",
            health_address="127.0.0.1:0",
            leader_elect=False,
            install_logprofiles=False,
            settings=settings,
        ),
    ).start()
    try:
        cert = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Certification",
            "metadata": {"name": "alice", "namespace": sim_namespace, "uid": "00000000-0000-0000-0000-000000000000"},
            "spec": {
                "target": {"nodeNames": nodes},
                "timeoutPerJob": "3m",
                "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
            },
        }
        rendered = compiler.expand_certification(cert, compiler.cluster_facts(admin.list(NODES).items))[0]
        rendered["metadata"].pop("ownerReferences", None)
        planted = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "planted-by-alice", "namespace": other},
            "data": {"a": "b"},
        }
        grab = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "grab", "namespace": other},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": sim_namespace}],
        }
        elsewhere = {
            **rendered,
            "metadata": {**rendered["metadata"], "name": "elsewhere"},
            "spec": {**rendered["spec"], "namespace": other, "dependencies": [*rendered["spec"]["dependencies"], planted]},
        }
        escalate = {
            **rendered,
            "metadata": {**rendered["metadata"], "name": "escalate"},
            "spec": {**rendered["spec"], "namespace": other, "dependencies": [*rendered["spec"]["dependencies"], grab]},
        }
        alice.create(elsewhere)
        alice.create(escalate)

        def finished(name: str) -> tuple[str, str] | None:
            status = admin.get(WORKFLOWS, name, sim_namespace).get("status")
            life = cond.lifecycle(status)
            return (life, str((cond.condition(status, life) or {}).get("message"))) if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(lambda: finished("elsewhere"), timeout=150, what="the first Workflow to finish")[0] == cond.SUCCEEDED
        life, message = eventually(lambda: finished("escalate"), timeout=60, what="the second Workflow to fail")
        assert life == cond.FAILED and "DependencyKindNotAllowed" in message and "RoleBinding" in message
        assert [c["metadata"]["name"] for c in admin.list(CONFIGMAPS, other).items] == ["kube-root-ca.crt"]
        assert not admin.list(JOBS, other).items and not admin.list(TRAINJOBS, other).items
        assert not admin.list(role_bindings, other).items
        (kept,) = [c for c in admin.list(CONFIGMAPS, sim_namespace).items if c["metadata"]["name"] == "planted-by-alice"]
        assert kept["metadata"]["ownerReferences"][0]["name"] == "elsewhere"  # in her namespace, owned by her Workflow
    finally:
        ctl.stop()
        own.close()
        alice.close()
        remove_cluster_objects(admin, [*installed, alice_objects[0]])
        admin.close()
