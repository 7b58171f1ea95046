"""A ``dcgmi diag --json`` report that never closed: what it shows whole is read, never a pass.

A pod killed mid-write, a log cut at its size limit or a pasted excerpt leaves a JSON report
that does not parse as a whole. Its whole categories, whole tests and lone results are still
read; the run is ``Incomplete`` unless a visible ``Fail`` makes it ``Fail``.
"""

from __future__ import annotations

import json

from nvcre.runtime.measure.dcgm import INCOMPLETE, parse_dcgm


def _report(*categories: dict[str, object]) -> str:
    return json.dumps({"DCGM GPU Diagnostic": {"test_categories": list(categories)}}, indent=4)


def _test(name: str, *statuses: str) -> dict[str, object]:
    return {"name": name, "results": [{"gpu_id": str(i), "status": s} for i, s in enumerate(statuses)]}


HARDWARE = {"category": "Hardware", "tests": [_test("GPU Memory", "Pass", "Pass"), _test("Diagnostic", "Pass", "Fail")]}
STRESS = {"category": "Stress", "tests": [_test("Targeted Stress", "Pass", "Pass"), _test("Targeted Power", "Pass", "Pass")]}


def test_a_whole_report_is_read_once() -> None:
    result = parse_dcgm(_report(HARDWARE, STRESS))
    assert [(t.name, t.status, t.category) for t in result.tests] == [
        ("GPU Memory", "Pass", "Hardware"),
        ("Diagnostic", "Fail", "Hardware"),
        ("Targeted Stress", "Pass", "Stress"),
        ("Targeted Power", "Pass", "Stress"),
    ]
    assert result.overall == "Fail"


def test_a_report_cut_after_a_whole_category_keeps_its_tests_and_is_incomplete() -> None:
    passing = {"category": "Hardware", "tests": [_test("GPU Memory", "Pass")]}
    text = _report(passing, STRESS)
    cut = text[: text.index('"Targeted Power"')]
    result = parse_dcgm(cut)
    assert [(t.name, t.status) for t in result.tests] == [("GPU Memory", "Pass"), ("Targeted Stress", "Pass")]
    assert result.overall == INCOMPLETE
    assert not result.passed


def test_a_failed_result_of_a_cut_test_still_fails_the_run() -> None:
    text = _report(HARDWARE, STRESS)
    # cut inside the Diagnostic test, just after its failing result: the test object never closes
    fail_at = text.index('"Fail"')
    cut = text[: text.index("}", fail_at) + 1]
    result = parse_dcgm(cut)
    assert result.overall == "Fail"
    assert ("Diagnostic", "Fail") in [(t.name, t.status) for t in result.tests]
    assert [t.failed_gpus for t in result.tests if t.status == "Fail"] == [("1",)]


def test_a_cut_report_with_nothing_whole_is_incomplete() -> None:
    text = _report(HARDWARE)
    result = parse_dcgm(text[: text.index('"results"')])
    assert result.tests == ()
    assert result.overall == INCOMPLETE


def test_json_like_text_outside_a_report_is_not_read_as_tests() -> None:
    line = 'training step {"name": "loader", "results": [{"gpu_id": "0", "status": "Fail"}]}'
    assert parse_dcgm(line).tests == ()
