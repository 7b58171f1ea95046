"""A scraper's identity for the controller's secured ``/metrics``: a ServiceAccount, optionally
bound to the install's ``nvcre-metrics-reader`` ClusterRole, and a short-lived token for it.

This is what a cluster's Prometheus has (its own ServiceAccount, bound by the operator), made on a
test or development cluster with the admin kubeconfig. The token is written to a file only
readable by its owner, for Prometheus's ``credentials_file``; it is never printed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["grant_metrics_reader", "reader_objects", "request_token", "write_token"]

_RBAC = "rbac.authorization.k8s.io/v1"


def reader_objects(namespace: str, name: str, *, bound: bool = True) -> list[dict[str, Any]]:
    """The reader ClusterRole as the install renders it, the ServiceAccount and (``bound``) its binding."""
    from nvcre.compiler.install.monitoring import METRICS_READER_ROLE, metrics_rbac_objects

    install_values = {"serviceAccount": {"name": "unused"}, "namespace": {"name": namespace}}
    (reader,) = [o for o in metrics_rbac_objects(install_values, {}) if o["metadata"]["name"] == METRICS_READER_ROLE]
    reader["metadata"] = {"name": METRICS_READER_ROLE}
    objects: list[dict[str, Any]] = [
        reader,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
    ]
    if bound:
        objects.append(
            {
                "apiVersion": _RBAC,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}-{name}-metrics-reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER_ROLE},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
        )
    return objects


def grant_metrics_reader(kube: Any, namespace: str, name: str, *, bound: bool = True) -> list[dict[str, Any]]:
    """Apply :func:`reader_objects` with ``kube`` (a runtime client); returns what was applied."""
    objects = reader_objects(namespace, name, bound=bound)
    for obj in objects:
        kube.apply(obj)
    return objects


def request_token(kubeconfig: Path, namespace: str, name: str, *, seconds: int = 3600) -> str:
    """A token for ServiceAccount ``namespace/name`` from the TokenRequest API."""
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        body = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds))
        answer = client.CoreV1Api(api_client).create_namespaced_service_account_token(name, namespace, body)
        if answer.status is None or not answer.status.token:
            raise RuntimeError(f"the API server issued no token for ServiceAccount {namespace}/{name}")
        return str(answer.status.token)
    finally:
        api_client.close()


def write_token(token: str, path: Path) -> Path:
    """``token`` into ``path`` with mode 0600 (replacing an older one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token)
    return path
