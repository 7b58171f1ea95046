"""The JUnit report, read back by a JUnit XML parser as a CI dashboard reads it."""

from __future__ import annotations

import json

from junitparser import Error, Failure, JUnitXml

from nvcre.runtime.judge.model import CategoryVerdict, CertificationVerdict, FailedNode, GroupVerdict
from nvcre.runtime.report import junit


def _verdicts() -> list[CertificationVerdict]:
    failed = CategoryVerdict(
        "communication",
        "nccl-all-reduce",
        "Failed",
        failure_reason="1 groups failed across 1 iterations",
        runtime_seconds=42.4,
        groups=(GroupVerdict("group-1", ("node-b", "node-c"), "Failed", True, reason="ThresholdViolation"),),
    )
    passed = CategoryVerdict("diagnostics", "dcgm-level4", "Succeeded", runtime_seconds=3725)
    running = CategoryVerdict("training", "nemotron5-8b", "InProgress")
    first = CertificationVerdict(
        "Certification",
        "burn-in",
        "team-a",
        "Failed",
        "FAILED",
        platform="aws",
        gpu="h100",
        categories=(passed, failed, running),
        failed_nodes=(FailedNode("node-b", "ThresholdViolation", "busBandwidthGBps: measured 9.9 <x & y>"),),
    )
    second = CertificationVerdict(
        "WorkloadRun", "adhoc", "team-a", "Succeeded", "PASSED", categories=(CategoryVerdict("workloadrun", "adhoc", "Succeeded"),)
    )
    return [first, second]


def test_one_suite_per_run_one_case_per_category_with_failures_and_errors(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(junit.dumps(_verdicts()))
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert [s.name for s in suites] == ["burn-in", "adhoc"]
    first = suites[0]
    assert (first.tests, first.failures, first.errors) == (3, 1, 1)
    cases = {c.classname + ":" + c.name: c for c in first}
    assert set(cases) == {"burn-in.diagnostics:dcgm-level4", "burn-in.communication:nccl-all-reduce", "burn-in.training:nemotron5-8b"}
    # the report's runtime reads "1h 2m": whole minutes once past the hour, as the report prints it
    assert cases["burn-in.diagnostics:dcgm-level4"].is_passed and cases["burn-in.diagnostics:dcgm-level4"].time == 3720
    (failure,) = cases["burn-in.communication:nccl-all-reduce"].result
    assert isinstance(failure, Failure) and failure.message == "1 groups failed across 1 iterations"
    assert json.loads(failure.text)["failedGroups"][0]["reason"] == "ThresholdViolation"
    (error,) = cases["burn-in.training:nemotron5-8b"].result
    assert isinstance(error, Error) and error.message == "Category did not complete: Running"
    assert first.time == 3720 + 42
    assert (suites[1].tests, suites[1].failures, suites[1].errors) == (1, 0, 0)
    assert [c.classname for c in suites[1]] == ["adhoc.workloadrun"]
    assert (xml.tests, xml.failures, xml.errors) == (4, 1, 1)


def test_the_same_verdicts_give_the_same_bytes():
    assert junit.dumps(_verdicts()) == junit.dumps(_verdicts())
