"""The JUnit file as NVCRE's ``WriteJUnit`` lays it out, read back as a CI dashboard reads it.

NVCRE (``pkg/report/junit.go`` in github.com/NVIDIA/cluster-readiness-engine) writes one suite
per certification named after it, one case per category named after the variant (``[n]`` for a
repeat) with ``classname`` ``<certification>.<domain>`` and ``time`` in seconds; a failed
category is a ``<failure>`` whose body is the category's JSON; a category that has not finished,
and every case of an INCOMPLETE or RUNNING run, is an ``<error>`` counted in ``errors``, so a CI
gate on ``errors`` fails on a run that did not finish. The file stays well-formed XML whatever a
failure message holds (NUL, ESC).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml

from nvcre.runtime.judge.model import CategoryVerdict, CertificationVerdict, FailedNode, GroupVerdict
from nvcre.runtime.report import junit


def _cert(name: str, result: str, *categories: CategoryVerdict, **extra: Any) -> CertificationVerdict:
    status = {"PASSED": "Succeeded", "INCOMPLETE": "Succeeded", "FAILED": "Failed"}.get(result, "InProgress")
    return CertificationVerdict("Certification", name, "team-a", status, result, platform="aws", gpu="h100", categories=categories, **extra)


def _read(tmp_path: Path, verdicts: list[CertificationVerdict]) -> JUnitXml:
    path = tmp_path / "junit.xml"
    path.write_text(junit.dumps(verdicts), encoding="utf-8")
    return JUnitXml.fromfile(str(path))


def test_suites_and_cases_carry_nvcres_names_classnames_and_seconds(tmp_path: Path) -> None:
    passed = _cert(
        "cert-passed",
        "PASSED",
        CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", runtime_seconds=62.9),
        CategoryVerdict("training", "nemotron5-8b", "Succeeded", runtime_seconds=600),
    )
    (suite,) = list(_read(tmp_path, [passed]))
    assert suite.name == "cert-passed"
    assert (suite.tests, suite.failures, suite.errors) == (2, 0, 0)
    assert suite.time == 662.0
    cases = list(suite)
    assert [(c.name, c.classname, c.time) for c in cases] == [
        ("nccl-all-reduce", "cert-passed.communication", 62.0),
        ("nemotron5-8b", "cert-passed.training", 600.0),
    ]
    assert all(c.is_passed for c in cases)


def test_a_failed_category_is_a_failure_whose_body_is_the_category_json(tmp_path: Path) -> None:
    failed = CategoryVerdict(
        "communication",
        "nccl-all-reduce",
        "Failed",
        failure_reason="4-node bandwidth below threshold",
        nodes_per_job=4,
        groups=(GroupVerdict("group-1", ("node-b", "node-c"), "Failed", True, reason="ThresholdViolation"),),
    )
    run = _cert(
        "cert-repeated",
        "FAILED",
        CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", nodes_per_job=2),
        failed,
        CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", nodes_per_job=8),
        failed_nodes=(FailedNode("node-b", "ThresholdViolation", "busBandwidthGBps <x & y>"),),
    )
    (suite,) = list(_read(tmp_path, [run]))
    assert (suite.tests, suite.failures, suite.errors) == (3, 1, 0)
    cases = list(suite)
    assert [c.name for c in cases] == ["nccl-all-reduce", "nccl-all-reduce [2]", "nccl-all-reduce [3]"]
    (failure,) = cases[1].result
    assert isinstance(failure, Failure) and failure.message == "4-node bandwidth below threshold"
    body = json.loads(failure.text)
    assert body["domain"] == "communication" and body["status"] == "Failed" and body["nodesPerJob"] == 4
    assert body["failedGroups"][0]["nodes"] == ["node-b", "node-c"]
    assert cases[0].is_passed and cases[2].is_passed


def test_an_unfinished_category_is_an_error_a_ci_gate_counts(tmp_path: Path) -> None:
    running = _cert("cert-running", "RUNNING", CategoryVerdict("communication", "nccl-all-reduce", "InProgress"))
    pending = _cert("cert-unknown", "RUNNING", CategoryVerdict("training", "nemotron5-8b", "Pending"))
    xml = _read(tmp_path, [running, pending])
    first, second = list(xml)
    for suite, status in ((first, "Running"), (second, "Pending")):
        assert (suite.tests, suite.failures, suite.errors) == (1, 0, 1)
        (case,) = list(suite)
        (error,) = case.result
        assert isinstance(error, Error) and error.message == f"Category did not complete: {status}"
        assert json.loads(error.text)["status"] == status
        assert case.time is None  # no runtime in the report: no time attribute
    root = ET.fromstring((tmp_path / "junit.xml").read_text(encoding="utf-8"))
    assert root.get("errors") == "2"


def test_every_case_of_an_incomplete_or_running_run_is_an_error(tmp_path: Path) -> None:
    incomplete = _cert(
        "cert-excluded",
        "INCOMPLETE",
        CategoryVerdict("communication", "nccl-all-reduce", "Succeeded", runtime_seconds=2),
        total_nodes=3,
        excluded_nodes=("node003",),
        exclusion_reason="1 node has insufficient GPUs",
    )
    finalizing = _cert("cert-finalizing", "RUNNING", CategoryVerdict("communication", "nccl-all-reduce", "Succeeded"))
    for suite, result in zip(_read(tmp_path, [incomplete, finalizing]), ("INCOMPLETE", "RUNNING")):
        assert (suite.failures, suite.errors) == (0, 1)
        (case,) = list(suite)
        (error,) = case.result
        assert isinstance(error, Error) and error.message == f"Certification did not complete: {result}"
        assert json.loads(error.text)["result"] == result  # the body is the whole report
    excluded = json.loads(list(list(_read(tmp_path, [incomplete]))[0])[0].result[0].text)
    assert excluded["excludedNodes"] == ["node003"]


def test_a_run_without_categories_is_one_certification_error(tmp_path: Path) -> None:
    (suite,) = list(_read(tmp_path, [_cert("cert-empty", "RUNNING")]))
    (case,) = list(suite)
    assert (case.name, case.classname) == ("certification", "cert-empty")
    assert suite.errors == 1 and isinstance(case.result[0], Error)


def test_control_characters_in_messages_keep_the_file_well_formed(tmp_path: Path) -> None:
    """NUL and ESC are not XML 1.0 characters: ElementTree writes them raw unless replaced."""
    dirty = "\x1b[31mRED\x00 <b> & more"
    run = _cert(
        "cert-dirty",
        "FAILED",
        CategoryVerdict("diagnostics", "dcgm-level4", "Failed", failure_reason=dirty, workflow="wf"),
        failed_nodes=(FailedNode("node-a", "HardwareFailureDetected", dirty),),
    )
    text = junit.dumps([run])
    root = ET.fromstring(text.encode("utf-8"))  # raises on a character XML cannot hold
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "\ufffd[31mRED\ufffd <b> & more"
    assert json.loads(failure.text or "")["failureReason"] == dirty  # the JSON body keeps them, escaped
    (suite,) = list(_read(tmp_path, [run]))
    assert suite.failures == 1
