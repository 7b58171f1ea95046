"""The verdict model built from API objects: failed-node sources, env names, results, WorkloadRun."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import yaml

from nvcre.runtime.judge.verdict import (
    NEXT_STEP_DIAGNOSE,
    certification_verdict,
    failed_nodes_from_configmap,
    lifecycle,
)
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text
from tests.goldenharness import GOLDEN


def _objects(case: str) -> dict[str, list[dict]]:
    kinds: dict[str, list[dict]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _configmap(entries: list[dict]) -> dict:
    payload = gzip.compress(json.dumps(entries).encode(), mtime=0)
    return {"metadata": {"name": "failed-nodes-5eed0000"}, "binaryData": {"failed-nodes.json.gz": base64.b64encode(payload).decode()}}


def test_configmap_entries_decode_and_garbage_gives_none() -> None:
    entries = [{"name": "n1", "reason": "WorkloadFailed", "message": "m"}]
    assert failed_nodes_from_configmap(_configmap(entries)) == entries
    assert failed_nodes_from_configmap({"binaryData": {"failed-nodes.json.gz": "not base64!"}}) == []
    assert failed_nodes_from_configmap({"binaryData": {"failed-nodes.json.gz": base64.b64encode(b"plain").decode()}}) == []
    assert failed_nodes_from_configmap({}) == []


def test_detector_message_reaches_failed_node_details() -> None:
    kinds = _objects("failed-hardware")
    verdict = certification_verdict(
        kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["GoodputMeasurement"], kinds["ConfigMap"]
    )
    details = json_report.to_dict(verdict)["failedNodeDetails"]
    assert details == [
        {
            "name": "gpu-08",
            "reason": "HardwareFailureDetected",
            "message": "Hardware failure detected by node health check: GPUHealthy: XID 79 (GPU has fallen off the bus) on GPU 3",
        }
    ]


def test_configmap_alone_attributes_nodes() -> None:
    kinds = _objects("failed-hardware")
    jobs = [dict(job, status={"conditions": job["status"]["conditions"]}) for job in kinds["Job"]]
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], jobs, [], kinds["ConfigMap"])
    assert [(n.name, n.reason) for n in verdict.failed_nodes] == [("gpu-08", "HardwareFailureDetected")]
    mapping = {kinds["Workflow"][0]["metadata"]["name"]: [{"name": "gpu-07", "reason": "WorkloadFailed"}]}
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], jobs, [], mapping)
    assert [n.name for n in verdict.failed_nodes] == ["gpu-07"]


def test_env_values_never_reach_any_report() -> None:
    kinds = _objects("failed-threshold-two-groups")
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["BandwidthMeasurement"])
    assert verdict.categories[0].env_names == ("NCCL_DEBUG", "NCCL_IB_HCA")
    for rendered in (text.render(verdict), json_report.dumps(verdict), repr(verdict)):
        assert "secret-looking-value" not in rendered


def test_hint_only_for_failed_bandwidth_categories_without_data_on_multi_node_groups() -> None:
    kinds = _objects("failed-workload-diagnose-hint")
    args = (kinds["Certification"][0], kinds["Workflow"], kinds["Job"])
    assert certification_verdict(*args, kinds["BandwidthMeasurement"]).categories[0].next_step == NEXT_STEP_DIAGNOSE
    with_data = json.loads(json.dumps(kinds["BandwidthMeasurement"]))
    with_data[0]["status"]["results"] = [{"sizeBytes": 8, "algBW": "1.00", "busBW": "1.00", "samples": 1}]
    assert certification_verdict(*args, with_data).categories[0].next_step == ""
    passed = _objects("passed")
    verdict = certification_verdict(passed["Certification"][0], passed["Workflow"], passed["Job"], passed["BandwidthMeasurement"])
    assert verdict.categories[0].next_step == ""


def test_result_follows_the_certification_condition() -> None:
    kinds = _objects("passed")
    cert = kinds["Certification"][0]
    assert certification_verdict(cert).result == "PASSED"
    assert lifecycle({"status": {"conditions": [], "phase": "InProgress"}}) == "InProgress"
    fresh = {"metadata": {"name": "c"}, "spec": {"categories": [{"domain": "d", "variant": "v"}]}}
    verdict = certification_verdict(fresh)
    assert verdict.result == "RUNNING" and [c.status for c in verdict.categories] == ["Pending"]


def test_workloadrun_reports_per_node_results() -> None:
    from nvcre.runtime.judge.verdict import workloadrun_verdict

    kinds = _objects("workloadrun-unpinned")
    verdict = workloadrun_verdict(kinds["WorkloadRun"][0], kinds["Workflow"][0], kinds["Job"], kinds["BandwidthMeasurement"])
    assert verdict.title == "WorkloadRun Report"
    assert [(r.name, r.status) for r in verdict.node_results] == [
        ("n-01", "Passed"),
        ("n-03", "Passed"),
        ("n-04", "Passed"),
        ("n-07", "Passed"),
    ]
    category = verdict.categories[0]
    assert (category.placement, category.exercised_nodes, category.target_nodes, category.test_scale) == ("Unpinned", 4, 8, "")


def test_several_reports_share_one_banner_and_each_has_its_summary() -> None:
    one = _objects("passed")
    two = _objects("incomplete-excluded")
    first = certification_verdict(one["Certification"][0], one["Workflow"], one["Job"], one["BandwidthMeasurement"])
    second = certification_verdict(two["Certification"][0] | {"metadata": {"name": "second"}}, two["Workflow"], two["Job"])
    rendered = text.render_many([first, second])
    assert rendered.count("Certification Report") == 1 and rendered.count("│  Summary") == 2
    assert "━━ gpu-cert ━" in rendered and "━━ second ━" in rendered
    first_part, second_part = rendered.split("━━ second ━")
    assert "Categories:   1/1 passed" in first_part and "Result:       PASSED" in first_part
    assert "Categories:   1/1 passed" in second_part and "Result:       INCOMPLETE" in second_part
