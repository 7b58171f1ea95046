"""Writing our objects the way the controller does.

- Server-side apply (field manager ``nvcre``) of a rendered Workflow is idempotent: applying
  the same object again keeps its ``resourceVersion`` and ``generation``.
- Status goes through the ``status`` subresource: a Certification and a WorkloadRun, whose
  spec is immutable, take a phase, observed generation and a metav1.Condition there; the
  spec stays exactly as it was, even when the status request carries a different spec.
- ``validate()`` accepts every object as the server stored it, as an update of the previous
  version, and rejects the same malformed condition the server rejects.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import GROUP, VERSION, kind_class, validate
from tests.integration.integration_helpers import error_causes, unique

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
#: A rendered case whose Workflow carries a TrainingRuntime and a ConfigMap.
APPLIED_CASE = REPO / "golden" / "render" / "nemotron5-8b-onprem-gb300" / "expected.yaml"
APPLY = "application/apply-patch+yaml"

CERTIFICATION = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "Certification",
    "metadata": {"name": "status"},
    "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
}
WORKLOAD_RUN = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "WorkloadRun",
    "metadata": {"name": "status"},
    "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2, "framework": {"torch": {"module": "train"}}},
}


@pytest.fixture(scope="module")
def objects(controlplane):
    from kubernetes import client

    with controlplane.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


@pytest.fixture(scope="module")
def apply_namespace(controlplane):
    from kubernetes import client

    name = unique("apply")
    with controlplane.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": name}})
        yield name
        core.delete_namespace(name)


def _errors(data: Any, old: Any = None) -> list[str]:
    return [d.render() for d in validate(data, old=old) if d.is_error]


def _apply(objects, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    plural = kind_class(body["kind"]).plural
    # Raw response: the generated client only maps a 200 body, and an apply that creates
    # the object answers 201.
    response = objects.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        plural,
        body["metadata"]["name"],
        body,
        field_manager="nvcre",
        field_validation="Strict",
        _content_type=APPLY,
        _preload_content=False,
    )
    return response.status, json.loads(response.data)


def test_applying_a_rendered_workflow_twice_changes_nothing(objects, apply_namespace):
    (workflow,) = [d for d in yaml.safe_load_all(APPLIED_CASE.read_text()) if d]
    assert workflow["kind"] == "Workflow"
    assert {d["kind"] for d in workflow["spec"]["dependencies"]} >= {"TrainingRuntime", "ConfigMap"}
    body = copy.deepcopy(workflow)
    body["metadata"]["namespace"] = apply_namespace

    created, first = _apply(objects, apply_namespace, body)
    unchanged, second = _apply(objects, apply_namespace, copy.deepcopy(body))
    assert (created, unchanged) == (201, 200)
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["generation"] == first["metadata"]["generation"] == 1
    assert second["spec"] == first["spec"]
    managers = {(m["manager"], m["operation"]) for m in first["metadata"]["managedFields"]}
    assert ("nvcre", "Apply") in managers, managers
    # Everything the renderer wrote is stored as written (the server only adds defaults).
    assert first["spec"]["dependencies"] == workflow["spec"]["dependencies"]
    assert first["spec"]["jobTemplate"]["spec"]["workload"] == workflow["spec"]["jobTemplate"]["spec"]["workload"]
    assert _errors(first) == [] and _errors(second, old=first) == []

    # The same apply with one more label is a change: a new version, still generation 1.
    relabelled = copy.deepcopy(body)
    relabelled["metadata"]["labels"]["example.com/batch"] = "nightly"
    _, third = _apply(objects, apply_namespace, relabelled)
    assert third["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert third["metadata"]["generation"] == 1
    assert third["metadata"]["labels"]["example.com/batch"] == "nightly"


def _condition(generation: int, **overrides: Any) -> dict[str, Any]:
    condition = {
        "type": "Ready",
        "status": "False",
        "observedGeneration": generation,
        "lastTransitionTime": "2026-01-15T10:00:00Z",
        "reason": "WorkflowRunning",
        "message": "the first category is running",
    }
    condition.update(overrides)
    return condition


@pytest.mark.parametrize("template", [CERTIFICATION, WORKLOAD_RUN], ids=lambda t: t["kind"])
def test_status_subresource_writes_leave_the_immutable_spec_alone(objects, apply_namespace, template):
    from kubernetes import client

    plural = kind_class(template["kind"]).plural
    body = copy.deepcopy(template)
    body["metadata"]["name"] = unique(template["kind"].lower())
    name = body["metadata"]["name"]
    created = objects.create_namespaced_custom_object(GROUP, VERSION, apply_namespace, plural, body)
    generation = created["metadata"]["generation"]

    update = copy.deepcopy(created)
    update["status"] = {
        "phase": "InProgress",
        "observedGeneration": generation,
        "conditions": [_condition(generation)],
    }
    # A status request cannot change the spec: the server keeps the stored one.
    update["spec"]["target"] = {"nodeNames": ["gpu-node-7"]}
    assert _errors(update, old=created) != [], "validate() must see this as a spec change"
    stored = objects.replace_namespaced_custom_object_status(GROUP, VERSION, apply_namespace, plural, name, update)

    assert stored["status"]["phase"] == "InProgress"
    assert stored["status"]["observedGeneration"] == generation
    assert stored["status"]["conditions"] == [_condition(generation)]
    assert stored["spec"] == created["spec"]
    assert stored["metadata"]["generation"] == generation
    assert stored["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert _errors(stored, old=created) == []
    reread = objects.get_namespaced_custom_object(GROUP, VERSION, apply_namespace, plural, name)
    assert reread["spec"] == created["spec"] and reread["status"] == stored["status"]

    # A condition reason with a space in it is refused by both, at the same path.
    broken = copy.deepcopy(stored)
    broken["status"]["conditions"] = [_condition(generation, reason="still running")]
    ours = {d.path for d in validate(broken, old=stored) if d.is_error}
    with pytest.raises(client.ApiException) as caught:
        objects.replace_namespaced_custom_object_status(GROUP, VERSION, apply_namespace, plural, name, broken)
    assert caught.value.status == 422, caught.value.body
    assert ours == {"status.conditions[0].reason"}, ours
    assert {c["field"] for c in error_causes(caught.value)} == ours, caught.value.body
