"""Small helpers shared by the integration tests: sample loading, CRD
conditions, throw-away namespaces and polling."""

from __future__ import annotations

import contextlib
import copy
import json
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import yaml

DATA = Path(__file__).resolve().parent / "data"


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of ``data/<name>.yaml``."""
    return copy.deepcopy(yaml.safe_load((DATA / f"{name}.yaml").read_text()))


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def crd_conditions(api_client, name: str) -> dict[str, str]:
    """``{condition type: status}`` of a CustomResourceDefinition."""
    from kubernetes import client

    raw = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(name, _preload_content=False)
    conditions = json.loads(raw.data).get("status", {}).get("conditions") or []
    return {c["type"]: c["status"] for c in conditions}


def error_causes(exc) -> list[dict[str, Any]]:
    """``details.causes`` of a Status returned with an ``ApiException``."""
    body = json.loads(exc.body)
    return (body.get("details") or {}).get("causes") or []


def eventually(check: Callable[[], Any], *, timeout: float = 30.0, what: str) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.25)


def remove_cluster_objects(admin: Any, objects: list[dict[str, Any]]) -> None:
    """Delete, newest first, the ClusterRoles, ClusterRoleBindings and Namespaces among ``objects``
    (a namespaced object goes with its namespace); best effort, for test cleanup."""
    from nvcre.runtime.kube.errors import ApiError

    for obj in reversed(objects):
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "Namespace"):
            meta = obj["metadata"]
            with contextlib.suppress(ApiError):  # already gone, or going with its namespace
                admin.delete(admin.resource_for(obj["apiVersion"], obj["kind"]), meta["name"], meta.get("namespace"))


@contextlib.contextmanager
def scoped_controller(kube: Any, namespace: str, settings: Any, **config: Any):
    """The controller in this process, watching ``namespace`` only, stopped on the way out."""
    from nvcre.runtime.controller import Controller, ControllerConfig

    options = {"metrics_address": "127.0.0.1:0", "health_address": "127.0.0.1:0", "leader_elect": False, **config}
    ctl = Controller(kube, ControllerConfig(namespace=namespace, settings=settings, **options)).start()
    try:
        yield ctl
    finally:
        ctl.stop()


def fast_settings(**changes: Any) -> Any:
    """The controller's settings for the simulated cluster: short polls, drains and graces, so a
    scenario ends in seconds (``changes`` override any of them)."""
    from nvcre.runtime.reconcile.context import Settings

    base: dict[str, Any] = {
        "poll_interval": 1.0,
        "pod_drain_grace": 30.0,
        "node_discovery_timeout": 10.0,
        "measurement_timeout": 30.0,
        "final_read_grace": 10.0,
        "scheduling_stall_grace": 5.0,
    }
    return Settings(**{**base, **changes})
