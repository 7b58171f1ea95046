"""The controller's half of the author-rights check: references admission never saw are refused.

The objects come from the compiler's real expansions of a small Workflow (as the Workflow tier
builds them at launch and the Job tier before it creates the TrainJob). A ServiceAccount or
Secret written where the admission policy reads pod templates is left to admission; the same
reference arriving through another TrainJob field or through overrides is refused.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from nvcre.runtime import compile as compiler
from nvcre.runtime.judge import pod_references as refs
from tests.compiler.expand.test_job import G0, plan, workflow  # noqa: E402

ADMIN = ("ServiceAccount", "team-a-admin")
SECRET = ("Secret", "team-a-secret")


def _escalating_pod() -> dict[str, Any]:
    """The audit's pod: the namespace's admin ServiceAccount with a Secret mounted."""
    return {
        "serviceAccountName": "team-a-admin",
        "containers": [{"name": "node", "image": "img", "volumeMounts": [{"name": "s", "mountPath": "/s"}]}],
        "volumes": [{"name": "s", "secret": {"secretName": "team-a-secret"}}],
    }


def _expanded(wf: dict[str, Any], the_plan: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    the_plan = the_plan or plan(G0)
    job = compiler.expand_job(wf, the_plan, G0, 1)
    job["metadata"]["uid"] = "uid-job"
    objects = [*compiler.expand_job_dependencies(wf, the_plan, G0, 1, job), *compiler.expand_workload(job, wf)]
    return job, objects


def test_references_are_found_wherever_they_sit() -> None:
    obj = {
        "a": [{"b": {"serviceAccountName": "x"}}, {"env": [{"valueFrom": {"secretKeyRef": {"name": "k"}}}]}],
        "cephfs": {"secretRef": {"name": "ceph"}},
        "projected": {"sources": [{"configMap": {"name": "cm"}}]},
        "volume": {"persistentVolumeClaim": {"claimName": "pvc"}},
        "serviceAccount": "default",
    }
    assert refs.references(obj) == {
        ("ServiceAccount", "x"),
        ("Secret", "k"),
        ("Secret", "ceph"),
        ("ConfigMap", "cm"),
        ("PersistentVolumeClaim", "pvc"),
    }


def test_a_reference_in_a_dependency_pod_template_is_left_to_admission() -> None:
    wf = workflow()
    wf["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"] = (
        _escalating_pod()
    )
    assert {ADMIN, SECRET} <= refs.admitted(wf)
    job, objects = _expanded(wf)
    assert refs.unadmitted(objects, refs.admitted(wf)) == []


def test_a_reference_in_a_runtime_patch_is_left_to_admission_in_both_tiers() -> None:
    wf = workflow()
    patch = {
        "manager": "user",
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": _escalating_pod()}}}}]}}
        },
    }
    wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimePatches"] = [patch]
    job, objects = _expanded(wf)
    assert refs.unadmitted(objects, refs.admitted(wf)) == []
    trainjob = [o for o in objects if o["kind"] == "TrainJob"]
    assert refs.unadmitted(trainjob, refs.admitted(job)) == []


def test_a_reference_in_another_trainjob_field_is_refused_by_both_tiers() -> None:
    wf = workflow()
    overrides = [{"targetJobs": [{"name": "node"}], "spec": _escalating_pod()}]
    wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["podTemplateOverrides"] = overrides
    job, objects = _expanded(wf)
    assert refs.unadmitted(objects, refs.admitted(wf)) == [SECRET, ADMIN]
    trainjob = [o for o in objects if o["kind"] == "TrainJob"]
    assert refs.unadmitted(trainjob, refs.admitted(job)) == [SECRET, ADMIN]
    message = refs.refusal("Workflow", [SECRET, ADMIN])
    assert "Secret team-a-secret, ServiceAccount team-a-admin" in message and "no pod was created" in message


def test_a_reference_brought_in_by_overrides_is_refused() -> None:
    """The plan's effective spec (an override merged into the Job template) is not what admission read."""
    wf = workflow()
    effective = copy.deepcopy(wf["spec"])
    patch = {
        "manager": "override",
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": _escalating_pod()}}}}]}}
        },
    }
    effective["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimePatches"] = [patch]
    wf["spec"]["overrides"] = [{"when": {"platform": {"equals": "onprem"}}, "jobTemplate": {"spec": {}}}]
    the_plan = dataclasses.replace(plan(G0), workflow_spec=effective)
    job, objects = _expanded(wf, the_plan)
    assert refs.unadmitted(objects, refs.admitted(wf)) == [SECRET, ADMIN]


def test_the_workflows_own_configmaps_and_claims_are_always_allowed() -> None:
    wf = workflow()
    wf["spec"]["dependencies"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "script"}, "data": {"a": "b"}})
    assert ("ConfigMap", "script") in refs.admitted(wf)
    assert refs.unadmitted([{"kind": "TrainJob", "spec": {"x": {"configMap": {"name": "script"}}}}], refs.admitted(wf)) == []


def test_every_expanded_golden_passes_the_check() -> None:
    """Nothing the catalog renders is refused: its references are its own dependencies."""
    import yaml

    root = Path(__file__).resolve().parents[3] / "golden" / "expand"
    checked = 0
    for expected in sorted(root.glob("*/expected.yaml")):
        docs = [d for d in yaml.load_all(expected.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if isinstance(d, dict)]
        allowed = {(str(d["kind"]), d["metadata"]["name"]) for d in docs if d.get("kind") in ("ConfigMap", "PersistentVolumeClaim")}
        for job in (d for d in docs if d.get("kind") == "Job"):
            assert refs.unadmitted([d for d in docs if d.get("kind") == "TrainJob"], refs.admitted(job) | allowed) == [], expected
        assert refs.unadmitted(docs, allowed | {r for d in docs for r in refs.admitted(d)}) == [], expected
        checked += 1
    assert checked >= 10


def test_no_rendered_workflow_is_refused() -> None:
    """Every Workflow the render goldens hold passes the check before its dependencies are created."""
    import yaml

    root = Path(__file__).resolve().parents[3] / "golden"
    checked = 0
    for path in sorted([*root.glob("render/*/expected.yaml"), *root.glob("workloadrun/*/expected.yaml")]):
        for doc in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(doc, dict) and doc.get("kind") == "Workflow":
                assert refs.unadmitted(doc["spec"].get("dependencies") or [], refs.admitted(doc)) == [], path
                checked += 1
    assert checked >= 100
