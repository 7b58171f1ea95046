"""A group that passed only after failed runs carries them through the one verdict model to both
reports (status, text and JSON cannot disagree); a group that passed at once carries nothing."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from nvcre.runtime.judge import retry_note
from nvcre.runtime.judge.model import FailedAttempt, RetryVerdict
from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text
from tests.goldenharness import GOLDEN

RETRIED = RetryVerdict(
    attempt=2,
    failed=(
        FailedAttempt(
            attempt=1,
            node="h100-onprem-1",
            pod="nccl-all-reduce-launcher-0-0-x7k2p",
            container="node",
            role="launcher",
            exit_code=137,
            reason="Error",
            signal=9,
            finished_at="2026-12-06T21:00:30Z",
        ),
    ),
)


def _objects() -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / "passed" / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _with_note(kinds: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    changed = copy.deepcopy(kinds)
    [job] = changed["Job"]
    [succeeded] = [c for c in job["status"]["conditions"] if c["type"] == "Succeeded"]
    succeeded["message"] = retry_note.with_note(succeeded["message"], RETRIED)
    return changed


def _verdict(kinds: dict[str, list[dict[str, Any]]]) -> Any:
    return certification_verdict(
        kinds["Certification"][0],
        kinds["Workflow"],
        kinds.get("Job", []),
        kinds.get("GoodputMeasurement", []) + kinds.get("BandwidthMeasurement", []),
        kinds.get("ConfigMap", []),
    )


def test_a_retried_group_passes_and_every_report_names_the_failed_run() -> None:
    verdict = _verdict(_with_note(_objects()))
    assert verdict.result == "PASSED"
    [category] = verdict.categories
    [group] = category.groups
    assert group.retries == RETRIED
    [retried] = json_report.to_dict(verdict)["categories"][0]["retriedGroups"]
    assert retried["passedOnAttempt"] == 2 and retried["failedRuns"][0]["node"] == "h100-onprem-1"
    assert "↻ Passed on attempt 2" in text.render(verdict)


def test_a_group_that_passed_at_once_carries_no_retry() -> None:
    verdict = _verdict(_objects())
    assert verdict.categories[0].groups[0].retries is None
    assert "retriedGroups" not in json_report.dumps(verdict)
    assert "Passed on attempt" not in text.render(verdict)
