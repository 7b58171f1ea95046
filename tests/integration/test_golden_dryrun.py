"""Every rendered golden output is accepted by the real API server.

For each ``golden/*/<case>/expected.yaml`` and each Workflow in it, a server-side dry run
(strict field validation, so an unknown field is an error) creates, in a test namespace:

- the Workflow itself (our CRD), which ``validate()`` must accept as well;
- every object in ``spec.dependencies`` (TrainingRuntime, ConfigMap, PVC, ResourceClaimTemplate
  and so on), namespaced ones in the test namespace;
- the TrainJob the runtime creates from ``spec.jobTemplate.spec.workload.trainJob``.

A dependency whose kind this server does not serve (no CRD installed for it) cannot be
dry-run. Those must be exactly the kinds in ``NOT_SERVED_HERE``; the test prints each one it
left out and checks with discovery that the server really does not serve it.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import validate
from tests.integration.integration_helpers import unique

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# Suites whose expected.yaml is a stream of Workflows (golden/platforms holds projections instead).
GOLDEN = sorted(p for suite in ("render", "workloadrun") for p in REPO.glob(f"golden/{suite}/*/expected.yaml"))
TRAINER = "trainer.kubeflow.org/v1alpha1"

#: Dependency kinds whose API is not installed on the test control plane: the NVIDIA DRA
#: driver's ComputeDomain CRD is not part of it. Everything else must be dry-run for real.
NOT_SERVED_HERE = {("resource.nvidia.com/v1beta1", "ComputeDomain")}
#: Kinds checked for leftovers once the module is done: a dry run must store nothing.
STORED_KINDS = (
    ("nvcre.nvidia.com/v1alpha1", "Workflow"),
    (TRAINER, "TrainJob"),
    (TRAINER, "TrainingRuntime"),
    ("v1", "ConfigMap"),
    ("v1", "PersistentVolumeClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
)


def _case_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


@pytest.fixture(scope="module")
def api(controlplane):
    with controlplane.api_client() as api_client:
        yield api_client


@pytest.fixture(scope="module")
def dynamic_client(api, tmp_path_factory):
    from kubernetes import dynamic

    # The discovery cache goes to a pytest temporary directory, not the shared temp dir.
    return dynamic.DynamicClient(api, cache_file=str(tmp_path_factory.mktemp("discovery") / "cache.json"))


@pytest.fixture(scope="module")
def golden_namespace(api, dynamic_client):
    """The test namespace; after the module's dry runs it must still be empty."""
    from kubernetes import client

    name = unique("golden")
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        for api_version, kind in STORED_KINDS:
            listed = _resource(dynamic_client, api_version, kind).get(namespace=name)
            # kube-root-ca.crt is published into every namespace when the controllers run.
            stored = [i.metadata.name for i in listed.items if i.metadata.name != "kube-root-ca.crt"]
            assert stored == [], f"a dry run stored {kind} {stored}"
    finally:
        core.delete_namespace(name)


def _resource(dynamic_client, api_version: str, kind: str):
    """The served resource for a kind, or None when the server does not serve it."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    try:
        return dynamic_client.resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        return None


def dry_run_create(dynamic_client, namespace: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """Dry-run create ``obj`` (strict); the server's answer, or None if its kind is not served.

    Namespaced objects are placed in ``namespace``; an ApiException propagates with the
    server's reasons."""
    resource = _resource(dynamic_client, obj["apiVersion"], obj["kind"])
    if resource is None:
        return None
    body = copy.deepcopy(obj)
    # The dynamic client has no fieldValidation argument: it goes in as a raw query parameter.
    options = {"dry_run": "All", "query_params": [("fieldValidation", "Strict")]}
    if resource.namespaced:
        body.setdefault("metadata", {})["namespace"] = namespace
        created = resource.create(body=body, namespace=namespace, **options)
    else:
        created = resource.create(body=body, **options)
    return created.to_dict()


def _train_job(workflow: dict[str, Any]) -> dict[str, Any]:
    spec = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": {"name": workflow["metadata"]["name"]},
        "spec": copy.deepcopy(spec),
    }


def _check(dynamic_client, namespace: str, obj: dict[str, Any], problems: list[str]) -> bool:
    """Dry-run ``obj``; False if its kind is not served. A rejection is added to ``problems``
    rather than raised, so one run reports every rejected object of a case."""
    from kubernetes import client

    try:
        created = dry_run_create(dynamic_client, namespace, obj)
    except client.ApiException as exc:
        status = json.loads(exc.body)
        problems.append(f"{obj['kind']} {obj['metadata'].get('name')}: {exc.status} {status.get('message')}")
        return True
    if created is None:
        return False
    assert (created["kind"], created["metadata"]["name"]) == (obj["kind"], obj["metadata"]["name"])
    assert created["metadata"].get("namespace") in (namespace, None)
    return True


@pytest.mark.skipif(not GOLDEN, reason="no golden/*/*/expected.yaml in this checkout")
@pytest.mark.parametrize("expected", GOLDEN, ids=[_case_id(p) for p in GOLDEN])
def test_golden_objects_pass_server_dry_run(dynamic_client, golden_namespace, expected):
    workflows = [d for d in yaml.safe_load_all(expected.read_text()) if d is not None]
    assert workflows, f"{expected} holds no documents"
    not_dry_run: list[tuple[str, str, str]] = []
    problems: list[str] = []
    for workflow in workflows:
        assert workflow["kind"] == "Workflow", f"{expected}: unexpected {workflow['kind']}"
        assert _check(dynamic_client, golden_namespace, workflow, problems), "the Workflow CRD must be served"
        problems += [f"validate(): {d.render()}" for d in validate(workflow) if d.is_error]
        for dependency in workflow["spec"].get("dependencies") or []:
            if not _check(dynamic_client, golden_namespace, dependency, problems):
                not_dry_run.append((dependency["apiVersion"], dependency["kind"], dependency["metadata"]["name"]))
        assert _check(dynamic_client, golden_namespace, _train_job(workflow), problems), "TrainJob must be served"
    assert not problems, f"{_case_id(expected)}: the server rejected\n" + "\n".join(problems)

    # Nothing is left out silently: every skipped dependency is of a kind known to be absent.
    expected_absent = [
        (d["apiVersion"], d["kind"], d["metadata"]["name"])
        for w in workflows
        for d in w["spec"].get("dependencies") or []
        if (d["apiVersion"], d["kind"]) in NOT_SERVED_HERE
    ]
    assert not_dry_run == expected_absent, f"dependencies not dry-run: {not_dry_run}"
    for api_version, kind, name in not_dry_run:
        message = f"{_case_id(expected)}: {kind} {name} not dry-run ({api_version} is not served here)"
        print(message)
        warnings.warn(message, stacklevel=1)


def test_dependency_kinds_are_served_as_expected(dynamic_client):
    """The kinds the renderer emits are served here, except exactly ``NOT_SERVED_HERE``."""
    served = {
        ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
        ("v1", "ConfigMap"),
        ("v1", "PersistentVolumeClaim"),
        ("resource.k8s.io/v1", "ResourceClaimTemplate"),
        ("nvcre.nvidia.com/v1alpha1", "Workflow"),
    }
    for api_version, kind in served:
        assert _resource(dynamic_client, api_version, kind) is not None, (api_version, kind)
    for api_version, kind in NOT_SERVED_HERE:
        assert _resource(dynamic_client, api_version, kind) is None, (
            f"{kind} ({api_version}) is served now: dry-run it instead of listing it in NOT_SERVED_HERE"
        )
    emitted = {
        (d["apiVersion"], d["kind"])
        for path in GOLDEN
        for w in yaml.safe_load_all(path.read_text())
        if w
        for d in w["spec"].get("dependencies") or []
    }
    undecided = emitted - served - NOT_SERVED_HERE
    assert not undecided, f"dependency kinds with no decision here: {undecided}"


def test_resource_claim_templates_are_dry_run_and_compute_domains_reported(dynamic_client, golden_namespace):
    """The dependency handling itself, on the DRA kinds a render adds: a ResourceClaimTemplate
    is checked for real (strictly), a ComputeDomain is reported as not served."""
    from kubernetes import client

    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "nccl-all-reduce-gpu", "labels": {"app": "nccl-all-reduce"}},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 4,
                            },
                        }
                    ]
                }
            }
        },
    }
    created = dry_run_create(dynamic_client, golden_namespace, template)
    assert created is not None and created["metadata"]["namespace"] == golden_namespace
    assert created["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4

    broken = copy.deepcopy(template)
    broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "Some"
    with pytest.raises(client.ApiException) as caught:
        dry_run_create(dynamic_client, golden_namespace, broken)
    assert caught.value.status == 422, caught.value.body

    # Strict field validation is on: a misspelt field is an error, not silently dropped.
    misspelt = copy.deepcopy(template)
    misspelt["spec"]["spec"]["devices"]["requests"][0]["exactly"]["counts"] = 4
    with pytest.raises(client.ApiException) as caught:
        dry_run_create(dynamic_client, golden_namespace, misspelt)
    assert caught.value.status == 400, caught.value.body
    assert 'unknown field "spec.spec.devices.requests[0].exactly.counts"' in json.loads(caught.value.body)["message"]

    domain = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "nccl-all-reduce-compute-domain"},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "nccl-all-reduce-channel"}}},
    }
    assert dry_run_create(dynamic_client, golden_namespace, domain) is None
