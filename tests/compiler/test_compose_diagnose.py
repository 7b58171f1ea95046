"""The diagnose Certification that follows a failed one: its category, its prior, and that it renders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.compose_diagnose import compose_diagnose, diagnose_prior, failed_categories
from nvcre.compiler.diagnose.session import options_for
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.render import render_certification
from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PRIOR

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "report"


def _objects(case: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cert, workflows, _ = _with_jobs(case)
    return cert, workflows


def _with_jobs(case: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    docs = [d for d in yaml.safe_load_all((GOLDEN / case / "objects.yaml").read_text(encoding="utf-8")) if d]
    cert = next(d for d in docs if d["kind"] == "Certification")
    return cert, [d for d in docs if d["kind"] == "Workflow"], [d for d in docs if d["kind"] == "Job"]


def test_the_failed_category_becomes_a_diagnose_that_starts_from_its_failed_group() -> None:
    cert, workflows, jobs = _with_jobs("failed-threshold-two-groups")
    document = compose_diagnose(cert, workflows, jobs=jobs)
    assert document["metadata"]["name"] == "gpu-cert-diagnose"
    assert document["metadata"]["namespace"] == cert["metadata"]["namespace"]
    (category,) = document["spec"]["categories"]
    assert (category["domain"], category["variant"], category["options"]["testScale"]) == ("communication", "nccl-all-reduce", "diagnose")
    assert category["options"]["thresholds"] == {"busBandwidthGBps": "value >= 400"}  # the user's bar stays
    assert document["spec"]["target"] == cert["spec"]["target"] and document["spec"]["env"] == cert["spec"]["env"]
    prior = json.loads(document["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])
    assert prior == {"groups": [{"nodes": ["node-0", "node-1"], "passed": True}, {"nodes": ["node-2", "node-3"], "passed": False}]}


def test_the_document_renders_and_the_planner_reads_the_prior() -> None:
    cert, workflows = _objects("failed-threshold-two-groups")
    document = compose_diagnose(cert, workflows)
    (workflow,) = render_certification(document, platform="onprem", gpu_arch="h100").workflows
    prior = options_for(workflow, 4, mnnvl=False).prior
    assert prior is not None
    assert "diagnose" in workflow["spec"]["orchestration"]


def test_nothing_failed_means_nothing_to_diagnose() -> None:
    cert, workflows = _objects("passed")
    assert failed_categories(cert) == []
    with pytest.raises(CompileError) as caught:
        compose_diagnose(cert, workflows)
    assert [d.code for d in caught.value.diagnostics] == ["NoFailedCategory"]


def test_a_category_that_did_not_fail_is_refused_and_several_failures_need_a_choice() -> None:
    cert, workflows = _objects("failed-threshold-two-groups")
    with pytest.raises(CompileError) as caught:
        compose_diagnose(cert, workflows, category="communication/nccl-loopback")
    assert caught.value.diagnostics[0].code == "CategoryNotFailed"
    cert["status"]["categoryStatuses"].append({"domain": "communication", "variant": "nccl-loopback", "status": "Failed"})
    with pytest.raises(CompileError) as caught:
        compose_diagnose(cert, workflows)
    assert caught.value.diagnostics[0].code == "CategoryRequired"
    chosen = compose_diagnose(cert, workflows, category="communication/nccl-all-reduce", name="again")
    assert chosen["metadata"]["name"] == "again"


def test_groups_still_running_or_without_nodes_are_no_prior() -> None:
    workflow = {"status": {"orchestration": {"groups": [{"nodes": ["a"], "phase": "Running"}, {"nodes": [], "phase": "Failed"}]}}}
    assert diagnose_prior(workflow) is None


def test_the_cli_prints_it_from_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from nvcre.cli import common, main
    from nvcre.testing.fakekube import MemoryKube

    cert, workflows, jobs = _with_jobs("failed-threshold-two-groups")
    namespace = cert["metadata"]["namespace"]
    for workflow in workflows:  # the controller owns the Workflows it creates
        workflow["metadata"]["ownerReferences"] = [{"kind": "Certification", "name": "gpu-cert", "uid": cert["metadata"]["uid"]}]
    for job in jobs:
        job["metadata"]["ownerReferences"] = [
            {"kind": "Workflow", "name": workflows[0]["metadata"]["name"], "uid": workflows[0]["metadata"].get("uid", "")}
        ]

    server = MemoryKube()
    for obj in (cert, *workflows, *jobs):
        server.put(obj)
    monkeypatch.setattr(common, "kube_client", lambda kubeconfig, context: server)
    main.mount_commands()
    result = CliRunner().invoke(main.app, ["certification", "diagnose", "gpu-cert", "-n", namespace])
    assert result.exit_code == 0, result.output
    printed = yaml.safe_load(result.stdout)
    assert printed["spec"]["categories"][0]["options"]["testScale"] == "diagnose"
    prior = json.loads(printed["metadata"]["annotations"][ANNOTATION_DIAGNOSE_PRIOR])
    assert {"nodes": ["node-2", "node-3"], "passed": False} in prior["groups"]
    assert "left out" not in result.stderr
    missing = CliRunner().invoke(main.app, ["certification", "diagnose", "nope", "-n", namespace])
    assert missing.exit_code == 1
