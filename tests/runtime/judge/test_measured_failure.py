"""A bandwidth measurement of a corrupted or failed run fails its Job, blames its nodes and shows.

The measurement's status comes from a real corrupted nccl-tests output
(https://github.com/NVIDIA/nccl-tests/issues/37: ``Out of bounds values : 2 FAILED`` at 129 GB/s)
read by the parser and turned into status fields, as the measurement tier writes them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.judge.measured import failure_outcome, measurement_failure, with_measurement_failures
from nvcre.runtime.judge.thresholds import evaluate, measured_values
from nvcre.runtime.judge.verdict import certification_verdict, workloadrun_verdict
from nvcre.runtime.measure import nccl
from nvcre.runtime.metrics.gauges import samples
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text
from tests.goldenharness import GOLDEN

CORRUPTED_LOG = """\
       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  128.84  1e+00
 Out of bounds values : 2 FAILED
 Avg bus bandwidth    : 128.942
"""
PROFILE = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")
NODES = ["node-a", "node-b"]


def _objects(case: str) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _corrupted(kinds: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The case's bandwidth measurement, completed (JobSucceeded) on the corrupted log."""
    fields = nccl.status_fields(nccl.parse_bandwidth(CORRUPTED_LOG, PROFILE))
    measurements = copy.deepcopy(kinds["BandwidthMeasurement"])
    measurements[0]["status"].update(fields)
    return measurements


def test_the_parse_reaches_the_measurement_and_reads_back() -> None:
    failure = measurement_failure(_corrupted(_objects("passed"))[0])
    assert failure is not None and failure.reason == "CollectiveDataCorrupted"
    assert "Out of bounds values : 2 FAILED" in failure.message


def test_a_corrupted_run_fails_the_job_and_blames_its_nodes_whatever_the_bandwidth() -> None:
    kinds = _objects("passed")
    measurements = _corrupted(kinds)
    # the threshold side alone would have passed it: 129 GB/s meets "value >= 100"
    assert evaluate({"busBandwidthGBps": "value >= 100"}, measured_values(measurements[0])).failed is False
    job = kinds["Job"][0]
    failure = measurement_failure(measurements[0])
    assert failure is not None
    condition, entries = failure_outcome(job, failure)
    assert condition is not None and (condition["type"], condition["status"], condition["reason"]) == (
        "ValidationFailed",
        "True",
        "CollectiveDataCorrupted",
    )
    assert [(e["name"], e["reason"]) for e in entries] == [(n, "CollectiveDataCorrupted") for n in NODES]


def test_the_verdict_reports_the_failed_job_its_reason_and_its_nodes() -> None:
    kinds = _objects("passed")
    measurements = _corrupted(kinds)
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], measurements)
    assert verdict.result == "FAILED"
    category = verdict.categories[0]
    assert category.status == "Failed" and "corrupted data" in category.failure_reason
    group = category.groups[0]
    assert group.failed and "Out of bounds values : 2 FAILED" in group.reason
    assert group.bandwidth is not None and group.bandwidth.bus_bw == 129.05  # the rows stay visible
    assert [(n.name, n.reason) for n in verdict.failed_nodes] == [(n, "CollectiveDataCorrupted") for n in NODES]

    report = json_report.to_dict(verdict)
    assert report["result"] == "FAILED"
    assert [d["reason"] for d in report["failedNodeDetails"]] == ["CollectiveDataCorrupted"] * 2
    assert "corrupted data" in report["failedNodeDetails"][0]["message"]
    assert report["categories"][0]["failedGroups"][0]["measurementFailure"] == "CollectiveDataCorrupted"
    rendered = text.render(verdict)
    assert "CollectiveDataCorrupted" in rendered and "FAILED" in rendered

    failed = [s for s in samples([verdict]) if s.name == "nvcre_nccl_measurement_failed"]
    assert [(s.label_map["reason"], s.label_map["job"], s.value) for s in failed] == [
        ("CollectiveDataCorrupted", kinds["Job"][0]["metadata"]["name"], 1.0)
    ]


def test_a_clean_measurement_changes_nothing() -> None:
    kinds = _objects("passed")
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["BandwidthMeasurement"])
    assert verdict.result == "PASSED" and verdict.failed_nodes == ()
    assert with_measurement_failures(kinds["Job"], kinds["BandwidthMeasurement"]) == kinds["Job"]
    assert not [s for s in samples([verdict]) if s.name == "nvcre_nccl_measurement_failed"]


def test_a_job_that_already_failed_keeps_its_condition_and_its_own_blame() -> None:
    kinds = _objects("passed")
    failure = measurement_failure(_corrupted(kinds)[0])
    assert failure is not None
    job = copy.deepcopy(kinds["Job"][0])
    for cond in job["status"]["conditions"]:
        if cond["type"] == "Failed":
            cond.update(status="True", reason="WorkloadFailed", message="launcher exited 1")
    job["status"]["failedNodes"] = [{"name": "node-a", "reason": "WorkloadFailed", "message": "launcher exited 1"}]
    condition, entries = failure_outcome(job, failure)
    assert condition is None
    # the crash names node-a; the crashed run's log adds no blame on its peer node-b
    assert [(e["name"], e["reason"]) for e in entries] == [("node-a", "WorkloadFailed")]


def test_a_workloadrun_marks_its_nodes_failed() -> None:
    kinds = _objects("workloadrun-unpinned")
    measurements = copy.deepcopy(kinds["BandwidthMeasurement"])
    measurements[0].setdefault("status", {}).update(nccl.status_fields(nccl.parse_bandwidth(CORRUPTED_LOG, PROFILE)))
    verdict = workloadrun_verdict(kinds["WorkloadRun"][0], kinds["Workflow"][0], kinds["Job"], measurements)
    # an Unpinned group: its Job does not name the nodes, the Workflow's group does
    nodes = {"n-01", "n-03", "n-04", "n-07"}
    assert {r.name for r in verdict.node_results if r.status == "Failed"} == nodes
    assert {(n.name, n.reason) for n in verdict.failed_nodes} == {(n, "CollectiveDataCorrupted") for n in nodes}
    assert verdict.result == "FAILED"
