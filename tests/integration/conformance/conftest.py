"""What the conformance tests that ask the real API server share: a client of the test control
plane, a namespace of their own (removed afterwards), and the dry-run create that tells which
fields the server refuses."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nvcre.compiler.api import GROUP, VERSION, kind_class


@pytest.fixture(scope="module")
def api(controlplane: Any) -> Iterator[Any]:
    with controlplane.api_client() as api_client:
        yield api_client


@pytest.fixture(scope="module")
def namespace(api: Any) -> Iterator[str]:
    from kubernetes import client

    name = f"conform-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="module")
def server_refusal(api: Any, namespace: str) -> Callable[[dict[str, Any]], set[str]]:
    """The field paths the server refuses a document at (empty when it admits it), by a dry-run
    create with strict field validation."""

    def refused(doc: dict[str, Any]) -> set[str]:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        plural = kind_class(doc["kind"]).plural
        try:
            client.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, doc, dry_run="All", field_validation="Strict"
            )
        except ApiException as exc:
            details = (json.loads(exc.body or "{}").get("details") or {}).get("causes") or []
            return {str(c.get("field")) for c in details} or {"?"}
        return set()

    return refused
