"""The controller's own objects: its namespace, ServiceAccount and Deployment.

The Deployment runs ``python -m nvcre.runtime`` as a non-root user with a read-only root
filesystem, no privilege escalation and every capability dropped; ``/tmp`` is the only writable
path (an emptyDir). Its probes use the controller's ``/healthz`` and ``/readyz``, which therefore
listen on the pod's address rather than loopback, in plain HTTP. ``/metrics`` listens on the pod's
address too, on :data:`METRICS_PORT`, over HTTPS with every scrape's bearer token reviewed by the
API server (``--metrics-secure``). The serving certificate is made at start, or, with
``metrics.certSecret``, read from that Secret, mounted read-only at :data:`METRICS_CERT_DIR`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MANAGER_NAME", "HEALTH_PORT", "METRICS_CERT_DIR", "METRICS_PORT", "image_reference", "manager_objects"]

MANAGER_NAME = "nvcre-manager"
METRICS_PORT = 8443
HEALTH_PORT = 8081
#: Where the metrics certificate Secret is mounted (the directory NVCRE's manager reads it from).
METRICS_CERT_DIR = "/tmp/k8s-metrics-server/metrics-certs"
METRICS_CERT_VOLUME = "metrics-certs"
#: A fixed non-root identity (the conventional "nonroot" uid/gid of distroless images).
RUN_AS = 65532


def image_reference(image: dict[str, Any]) -> str:
    """``repository@digest`` when a digest is set (a digest pins the bytes), else ``repository:tag``."""
    if image["digest"]:
        return f"{image['repository']}@{image['digest']}"
    return f"{image['repository']}:{image['tag']}"


def _args(values: dict[str, Any]) -> list[str]:
    manager = values["manager"]
    own_cert = [f"--metrics-cert-path={METRICS_CERT_DIR}"] if values["metrics"]["certSecret"] else []
    return [
        f"--metrics-bind-address=0.0.0.0:{METRICS_PORT}",
        "--metrics-secure",
        *own_cert,
        f"--health-probe-bind-address=0.0.0.0:{HEALTH_PORT}",
        "--leader-elect" if manager["leaderElection"] else "--no-leader-elect",
        f"--lease-namespace={values['namespace']['name']}",
        f"--workers={manager['workers']}",
        f"--log-level={manager['logLevel']}",
        f"--namespace-access-timeout={manager['namespaceAccessTimeout']}",
        f"--never-schedulable-timeout={manager['neverSchedulableTimeout']}",
        f"--compute-domain-timeout={manager['computeDomainTimeout']}",
    ]


def _probe(path: str, delay: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "health"}, "initialDelaySeconds": delay, "periodSeconds": 10}


def _container(values: dict[str, Any]) -> dict[str, Any]:
    """The manager container: non-root, read-only root, ``/tmp`` writable, the metrics Secret mounted when named."""
    manager = values["manager"]
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}]
    if values["metrics"]["certSecret"]:
        mounts.append({"name": METRICS_CERT_VOLUME, "mountPath": METRICS_CERT_DIR, "readOnly": True})
    return {
        "name": "manager",
        "image": image_reference(manager["image"]),
        "imagePullPolicy": manager["image"]["pullPolicy"],
        "command": ["python", "-m", "nvcre.runtime"],
        "args": _args(values),
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": [
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", 15),
        "readinessProbe": _probe("/readyz", 5),
        "resources": manager["resources"],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": mounts,
    }


def manager_objects(values: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    namespace = values["namespace"]["name"]
    manager = values["manager"]
    selector = {"app.kubernetes.io/name": "nvcre", "app.kubernetes.io/component": "manager"}
    pod_spec: dict[str, Any] = {
        "serviceAccountName": values["serviceAccount"]["name"],
        "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS, "runAsGroup": RUN_AS, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [_container(values)],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
        "terminationGracePeriodSeconds": 30,
    }
    if values["metrics"]["certSecret"]:
        pod_spec["volumes"].append({"name": METRICS_CERT_VOLUME, "secret": {"secretName": values["metrics"]["certSecret"]}})
    if manager["imagePullSecrets"]:
        pod_spec["imagePullSecrets"] = [{"name": name} for name in manager["imagePullSecrets"]]
    if manager["nodeSelector"]:
        pod_spec["nodeSelector"] = manager["nodeSelector"]
    if manager["tolerations"]:
        pod_spec["tolerations"] = manager["tolerations"]
    objects: list[dict[str, Any]] = []
    if values["namespace"]["create"]:
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}})
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": values["serviceAccount"]["name"], "namespace": namespace, "labels": labels},
        }
    )
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": MANAGER_NAME, "namespace": namespace, "labels": {**labels, **selector}},
            "spec": {
                "replicas": manager["replicas"],
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": {**labels, **selector}}, "spec": pod_spec},
            },
        }
    )
    return objects
