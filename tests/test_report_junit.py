"""The JUnit report, read back by a JUnit XML parser as a CI dashboard reads it."""

from __future__ import annotations

from junitparser import Failure, JUnitXml, Skipped

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
    passed = CategoryVerdict("diagnostics", "dcgm-level4", "Succeeded", runtime_seconds=60)
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


def test_one_suite_per_run_one_case_per_category_with_failures_and_skips(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(junit.dumps(_verdicts()))
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert [s.name for s in suites] == ["Certification team-a/burn-in", "WorkloadRun team-a/adhoc"]
    first = suites[0]
    assert (first.tests, first.failures, first.skipped, first.errors) == (3, 1, 1, 0)
    cases = {c.name: c for c in first}
    assert set(cases) == {"diagnostics/dcgm-level4", "communication/nccl-all-reduce", "training/nemotron5-8b"}
    assert cases["diagnostics/dcgm-level4"].is_passed and cases["diagnostics/dcgm-level4"].time == 60
    (failure,) = cases["communication/nccl-all-reduce"].result
    assert isinstance(failure, Failure) and failure.message == "1 groups failed across 1 iterations"
    assert "group group-1 (node-b, node-c): ThresholdViolation" in failure.text
    assert "node node-b: ThresholdViolation: busBandwidthGBps: measured 9.9 <x & y>" in failure.text
    (skipped,) = cases["training/nemotron5-8b"].result
    assert isinstance(skipped, Skipped) and skipped.message == "category is InProgress"
    assert suites[1].tests == 1 and suites[1].failures == 0


def test_the_same_verdicts_give_the_same_bytes():
    assert junit.dumps(_verdicts()) == junit.dumps(_verdicts())
