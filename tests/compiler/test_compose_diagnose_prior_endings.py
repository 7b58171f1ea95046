"""``certification diagnose`` builds its prior only from failures that implicate nodes.

A run that failed because an operator deleted its TrainJob (``WorkloadDeleted``, no node blamed),
or because the stall detector stopped a progressing job (``WorkloadStalled``), says nothing about
its nodes; its groups used to enter the prior as failed and sent the diagnose after healthy nodes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.compose_diagnose import choose_prior, compose
from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PRIOR

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "report"
FAILED_GROUP = {"nodes": ["node-2", "node-3"], "passed": False}
PASSED_GROUP = {"nodes": ["node-0", "node-1"], "passed": True}


def objects() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    docs = [d for d in yaml.safe_load_all((GOLDEN / "failed-threshold-two-groups" / "objects.yaml").read_text(encoding="utf-8")) if d]
    cert = next(d for d in docs if d["kind"] == "Certification")
    return cert, [d for d in docs if d["kind"] == "Workflow"], [d for d in docs if d["kind"] == "Job"]


def ended(job: dict[str, Any], reason: str, failed_nodes: list[dict[str, str]], extra: tuple[str, ...] = ()) -> None:
    """Make ``job`` a Job that failed with ``reason`` and recorded ``failed_nodes``."""
    conditions = [{"type": "Failed", "status": "True", "reason": reason, "message": f"{reason} happened"}]
    conditions += [{"type": kind, "status": "True", "reason": "HardwareFailureDetected", "message": "XID 79"} for kind in extra]
    job["status"] = {"conditions": conditions, "failedNodes": failed_nodes}


def blamed(reason: str) -> list[dict[str, str]]:
    return [{"name": n, "reason": reason, "message": "m"} for n in ("node-2", "node-3")]


def failed_job(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(j for j in jobs if j["metadata"]["labels"]["nvcre.nvidia.com/group"] == "group-1")


@pytest.mark.parametrize(
    ("reason", "entries", "extra", "kept", "why"),
    [
        ("WorkloadDeleted", [], (), False, "WorkloadDeleted: its workload was deleted by someone other than the controller"),
        ("WorkloadStalled", blamed("WorkloadFailed"), (), False, "WorkloadStalled: it was stopped as stalled"),
        ("JobTimedOut", blamed("WorkloadFailed"), (), False, "JobTimedOut: it ran out of time"),
        ("WorkloadUnschedulable", [], (), False, "its pods were never scheduled"),
        ("WorkloadStalled", blamed("HardwareFailureDetected"), (), True, ""),
        ("WorkloadStalled", [], ("HardwareFailed",), True, ""),
        ("WorkloadFailed", blamed("WorkloadFailed"), (), True, ""),
        ("WorkloadFailed", [], (), False, "ended WorkloadFailed and blamed no node"),
    ],
)
def test_only_endings_that_implicate_nodes_enter_the_prior(
    reason: str, entries: list[dict[str, str]], extra: tuple[str, ...], kept: bool, why: str
) -> None:
    cert, workflows, jobs = objects()
    ended(failed_job(jobs), reason, entries, extra)
    composed = compose(cert, workflows, jobs=jobs)
    prior = json.loads(composed.document["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])
    assert (FAILED_GROUP in prior["groups"]) is kept and PASSED_GROUP in prior["groups"]
    if kept:
        assert composed.left_out == ()
    else:
        (line,) = composed.left_out
        assert line.startswith("group-1 (node-2, node-3): ") and why in line


def test_a_measurement_failure_is_kept_and_gone_jobs_fall_back_to_the_workflow_record() -> None:
    cert, workflows, jobs = objects()
    assert (
        FAILED_GROUP
        in json.loads(compose(cert, workflows, jobs=jobs).document["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])["groups"]
    )
    workflow = workflows[0]
    name = workflow["metadata"]["name"]
    kept = choose_prior(workflow, (), [{"name": "node-2", "reason": "ThresholdViolation", "message": "m"}])
    assert kept.prior is not None and FAILED_GROUP in kept.prior["groups"] and kept.left_out == ()
    unknown = compose(cert, workflows, jobs=(), failed_nodes={name: ({"name": "node-2", "reason": "WorkloadFailed", "message": "m"},)})
    assert FAILED_GROUP not in json.loads(unknown.document["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])["groups"]
    assert "no Job or failed-node record shows a hardware or measurement failure" in unknown.left_out[0]


def test_the_command_says_what_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from nvcre.cli import common, main
    from nvcre.runtime.kube.client import ObjectList
    from nvcre.runtime.kube.errors import NotFound

    cert, workflows, jobs = objects()
    namespace = cert["metadata"]["namespace"]
    for workflow in workflows:
        workflow["metadata"]["ownerReferences"] = [{"kind": "Certification", "name": "gpu-cert", "uid": cert["metadata"]["uid"]}]
    for job in jobs:
        job["metadata"]["ownerReferences"] = [{"kind": "Workflow", "name": workflows[0]["metadata"]["name"], "uid": ""}]
    ended(failed_job(jobs), "WorkloadDeleted", [])
    served = {"Workflow": workflows, "Job": jobs}

    class Cluster:
        def get(self, resource: Any, name: str, ns: str | None = None) -> dict[str, Any]:
            if resource.kind == "Certification" and name == "gpu-cert" and ns == namespace:
                return copy.deepcopy(cert)
            raise NotFound(404, "NotFound", f"{resource.kind} {name} not found")

        def list(self, resource: Any, ns: str | None = None, **_: Any) -> ObjectList:
            return ObjectList(tuple(copy.deepcopy(served.get(resource.kind, []))) if ns == namespace else (), "1")

    monkeypatch.setattr(common, "kube_client", lambda kubeconfig, context: Cluster())
    main.mount_commands()
    result = CliRunner().invoke(main.app, ["certification", "diagnose", "gpu-cert", "-n", namespace])
    assert result.exit_code == 0, result.output
    prior = json.loads(yaml.safe_load(result.stdout)["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])
    assert prior == {"groups": [PASSED_GROUP]}
    assert result.stderr == (
        "note: left out of the prior: group group-1 (node-2, node-3): its Job ended WorkloadDeleted: its workload was "
        "deleted by someone other than the controller; no node is implicated\n"
    )
