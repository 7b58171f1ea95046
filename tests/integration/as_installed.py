"""The controller as the install runs it: ``python -m nvcre.runtime`` with the Deployment's flags,
authenticated as the install's ServiceAccount with the install's RBAC, for one test namespace.

:func:`install_rbac` applies what ``setup render`` gives for RBAC (and the ServiceAccount), and
:func:`shipped_controller` starts the process with a kubeconfig holding that ServiceAccount's
token; the only flags that differ from the Deployment's are the ones that keep a test to itself
(``--namespace``, no leader election, metrics and health on free local ports).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.integration.secure_metrics import ControllerProcess, running_controller

INSTALL_KINDS = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "LogProfile"}


def install_rbac(admin: Any, extra_kinds: frozenset[str] = frozenset()) -> tuple[str, list[dict[str, Any]]]:
    """(the controller's namespace, the objects applied): the install's RBAC in a fresh namespace."""
    from nvcre.compiler.install import render_install

    namespace = f"ctl-{uuid.uuid4().hex[:6]}"
    installed = render_install([{"namespace": {"name": namespace}, "crds": {"install": False}}]).objects
    objects = [o for o in installed if o["kind"] in INSTALL_KINDS | extra_kinds]
    for obj in objects:
        admin.apply(obj)
    return namespace, objects


def remove_installed(admin: Any, objects: list[dict[str, Any]]) -> None:
    """Delete what :func:`install_rbac` applied (namespaced objects go with their namespace)."""
    from nvcre.runtime.kube.errors import ApiError

    for obj in reversed(objects):
        meta = obj["metadata"]
        if meta.get("namespace") and obj["kind"] != "Namespace":
            continue
        with contextlib.suppress(ApiError):
            admin.delete(admin.resource_for(obj["apiVersion"], obj["kind"]), meta["name"], meta.get("namespace"))


def token_for(cluster: Any, namespace: str, account: str) -> str:
    from kubernetes import client as k8s

    with cluster.api_client() as api:
        answer = k8s.CoreV1Api(api).create_namespaced_service_account_token(account, namespace, {"spec": {"expirationSeconds": 3600}})
        return str(answer.status.token)


def token_kubeconfig(cluster: Any, token: str, path: Path) -> Path:
    """A kubeconfig for ``cluster`` that authenticates with ``token`` (mode 0600)."""
    server = yaml.safe_load(Path(cluster.kubeconfig).read_text())["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": server}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config))
    return path


def deployment_flags() -> list[str]:
    """The Deployment's own arguments minus those a test replaces (bind addresses, leader election)."""
    from nvcre.compiler.install import render_install

    (deployment,) = [o for o in render_install().objects if o["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    replaced = ("--metrics-bind-address", "--health-probe-bind-address", "--leader-elect", "--lease-namespace", "--metrics-cert-path")
    return [a for a in args if not a.startswith(replaced)]


@contextlib.contextmanager
def shipped_controller(cluster: Any, controller_namespace: str, namespace: str, workdir: Path) -> Iterator[ControllerProcess]:
    """``python -m nvcre.runtime`` as the install's ServiceAccount, watching ``namespace``."""
    token = token_for(cluster, controller_namespace, "nvcre-manager")
    kubeconfig = token_kubeconfig(cluster, token, workdir / "controller.kubeconfig")
    with running_controller(kubeconfig, namespace, workdir / "controller.log", *deployment_flags()) as controller:
        yield controller
