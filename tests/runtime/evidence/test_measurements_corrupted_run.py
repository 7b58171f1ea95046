"""A bandwidth run that cannot be trusted stays in the evidence as what it was: its rows and its
failure, never a peak a later comparison would read as a measurement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from nvcre.runtime.evidence.measurements import job_measurements
from nvcre.runtime.evidence.sides import side_of

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "docs" / "evidence.schema.json").read_text(encoding="utf-8"))
ROWS = [{"sizeBytes": 1048576, "algBW": "200.0", "busBW": "350.0"}, {"sizeBytes": 8388608, "algBW": "230.0", "busBW": "402.5"}]


def _objects(failure: dict[str, str] | None) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    workflow = {"metadata": {"name": "wf"}, "status": {"orchestration": {"groups": [{"name": "g0", "nodes": ["a", "b"]}]}}}
    job = {"metadata": {"name": "wf-g0", "labels": {"nvcre.nvidia.com/workflow": "wf", "nvcre.nvidia.com/group": "g0"}}}
    status: dict[str, Any] = {"results": ROWS, "conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}]}
    if failure is not None:
        status["failure"] = failure
    measurement = {"kind": "BandwidthMeasurement", "spec": {"jobRef": {"name": "wf-g0"}, "testType": "all_reduce"}, "status": status}
    return workflow, [job], [measurement]


def _predicate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"categories": [{"category": "communication/nccl-all-reduce", "jobs": entries}]}


def test_a_corrupted_run_keeps_its_rows_and_failure_and_has_no_peak() -> None:
    failure = {"reason": "CollectiveDataCorrupted", "message": "237858 wrong elements in 3 rows"}
    (entry,) = job_measurements(*_objects(failure))
    bandwidth = entry["bandwidth"]
    assert bandwidth["failure"] == failure
    assert [row["sizeBytes"] for row in bandwidth["rows"]] == [1048576, 8388608]
    assert "peakBusBandwidthGBps" not in bandwidth
    schema = SCHEMA["$defs"]["job"]["properties"]["bandwidth"]
    jsonschema.Draft202012Validator(schema).validate(bandwidth)


def test_compare_never_reads_a_corrupted_run_as_a_value() -> None:
    healthy = job_measurements(*_objects(None))
    corrupted = job_measurements(*_objects({"reason": "CollectiveDataCorrupted", "message": "wrong"}))
    assert healthy[0]["bandwidth"]["peakBusBandwidthGBps"] == 402.5
    good = side_of(("old",), (_predicate(healthy),), ({},))
    bad = side_of(("new",), (_predicate(corrupted),), ({},))
    assert list(good.values.values()) == [(402.5,)]
    assert bad.values == {}
