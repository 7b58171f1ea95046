"""Every object of the golden expansions is accepted by the real API server (strict dry run).

For each ``golden/expand/<case>/expected.yaml``, every object (Workflow, dependencies, Job,
TrainJob, measurements, ConfigMaps) is created with ``dryRun=All`` and strict field validation in
a test namespace, against the project's CRDs and the Kubeflow Trainer v2.2.1 / JobSet CRDs. An
unknown field anywhere (a runtime patch field TrainJob does not have, say) is a rejection.
Kinds this control plane does not serve (the DRA driver's ComputeDomain) are listed and skipped.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
EXPECTED = sorted(REPO.glob("golden/expand/*/expected.yaml"))
NOT_SERVED_HERE = {("resource.nvidia.com/v1beta1", "ComputeDomain")}


@pytest.fixture(scope="module")
def dynamic_client(controlplane, tmp_path_factory):
    from kubernetes import dynamic

    with controlplane.api_client() as api:
        yield dynamic.DynamicClient(api, cache_file=str(tmp_path_factory.mktemp("discovery") / "cache.json"))


@pytest.fixture(scope="module")
def namespace(dynamic_client):
    name = f"expand-dryrun-{os.getpid()}"
    namespaces = dynamic_client.resources.get(api_version="v1", kind="Namespace")
    namespaces.create(body={"metadata": {"name": name}})
    yield name
    namespaces.delete(name=name)


def _served(dynamic_client, api_version: str, kind: str):
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    try:
        return dynamic_client.resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        return None


@pytest.mark.skipif(not EXPECTED, reason="no golden/expand cases in this checkout")
@pytest.mark.parametrize("expected", EXPECTED, ids=[p.parent.name for p in EXPECTED])
def test_expanded_objects_pass_server_dry_run(dynamic_client, namespace, expected: Path) -> None:
    from kubernetes import client

    objects = [d for d in yaml.safe_load_all(expected.read_text(encoding="utf-8")) if d is not None]
    problems: list[str] = []
    skipped: list[tuple[str, str]] = []
    for obj in objects:
        resource = _served(dynamic_client, obj["apiVersion"], obj["kind"])
        if resource is None:
            skipped.append((obj["apiVersion"], obj["kind"]))
            continue
        body: dict[str, Any] = copy.deepcopy(obj)
        options = {"dry_run": "All", "query_params": [("fieldValidation", "Strict")]}
        try:
            if resource.namespaced:
                body["metadata"]["namespace"] = namespace
                resource.create(body=body, namespace=namespace, **options)
            else:
                resource.create(body=body, **options)
        except client.ApiException as exc:
            problems.append(f"{obj['kind']} {obj['metadata']['name']}: {exc.status} {json.loads(exc.body).get('message')}")
    assert not problems, f"{expected.parent.name}: the server rejected\n" + "\n".join(problems)
    assert set(skipped) <= NOT_SERVED_HERE, f"kinds not served: {skipped}"
    assert any(o["kind"] == "TrainJob" for o in objects) and any(o["kind"] == "Job" for o in objects)
