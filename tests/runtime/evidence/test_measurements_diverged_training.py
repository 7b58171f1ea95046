"""A training run that diverged stays in the evidence as what it was: the numbers of its finite
steps and its failure, never a goodput a later comparison would read as a measurement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nvcre.runtime.evidence.measurements import job_measurements
from nvcre.runtime.evidence.sides import side_of

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "docs" / "evidence.schema.json").read_text(encoding="utf-8"))
CATEGORY = "training/nemotron5-8b"
NODES = ["node-a", "node-b"]
#: the condition the measurement tier writes for a log whose loss turned NaN
DIVERGED = {
    "type": "Diverged",
    "status": "True",
    "reason": "TrainingLossNotFinite",
    "message": "the training loss was not finite (nan) from iteration 80: 4 iteration line(s)",
}


def _objects(*extra_conditions: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    workflow = {"metadata": {"name": "wf"}, "status": {"orchestration": {"groups": [{"name": "g0", "nodes": NODES}]}}}
    job = {"metadata": {"name": "wf-g0", "labels": {"nvcre.nvidia.com/workflow": "wf", "nvcre.nvidia.com/group": "g0"}}}
    status: dict[str, Any] = {
        "result": "0.91",
        "avgStepTimeSec": "1.0",
        "avgTFLOPSPerGPU": "510",
        "trainingTimeSec": "12",
        "conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}, *extra_conditions],
    }
    measurement = {"kind": "GoodputMeasurement", "spec": {"jobRef": {"name": "wf-g0"}}, "status": status}
    return workflow, [job], [measurement]


def _predicate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"categories": [{"category": CATEGORY, "jobs": entries}]}


def _validate_training(training: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/training"})
    validator.validate(training)


def test_a_diverged_run_keeps_its_steps_and_failure_and_has_no_goodput() -> None:
    (entry,) = job_measurements(*_objects(DIVERGED))
    training = entry["training"]
    assert training["failure"] == {"reason": DIVERGED["reason"], "message": DIVERGED["message"]}
    assert "goodput" not in training
    assert (training["stepTimeSeconds"], training["tflopsPerGPU"], training["trainingTimeSeconds"]) == (1.0, 510.0, 12.0)
    _validate_training(training)


def test_compare_never_reads_a_diverged_run_as_a_value() -> None:
    healthy = job_measurements(*_objects())
    diverged = job_measurements(*_objects(DIVERGED))
    assert healthy[0]["training"]["goodput"] == 0.91 and "failure" not in healthy[0]["training"]
    good = side_of(("old",), (_predicate(healthy),), ({},))
    bad = side_of(("new",), (_predicate(diverged),), ({},))
    assert good.values == {("goodput", CATEGORY, tuple(NODES)): (0.91,)}
    assert bad.values == {}


@pytest.mark.parametrize("part", ["training", "bandwidth"])
def test_a_part_that_records_a_failure_is_no_value_whatever_else_it_carries(part: str) -> None:
    # a bundle written with the value beside its failure still compares as no measurement
    value = {"training": {"goodput": 0.91}, "bandwidth": {"peakBusBandwidthGBps": 402.5}}[part]
    reason = {"training": "TrainingLossNotFinite", "bandwidth": "CollectiveDataCorrupted"}[part]
    entry = {"job": "wf-g0", "group": "g0", "iteration": 1, "nodes": NODES, part: {**value, "failure": {"reason": reason, "message": "m"}}}
    assert side_of(("new",), (_predicate([entry]),), ({},)).values == {}


def test_the_schema_refuses_a_goodput_beside_a_training_failure() -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validate_training({"goodput": 0.91, "failure": {"reason": "TrainingLossNotFinite", "message": "m"}})
    with pytest.raises(jsonschema.ValidationError):
        _validate_training({"failure": {"reason": "SomethingElse", "message": "m"}})


def test_an_unknown_divergence_reason_is_not_a_failure() -> None:
    (entry,) = job_measurements(*_objects({**DIVERGED, "reason": "SomethingElse"}))
    assert entry["training"]["goodput"] == 0.91 and "failure" not in entry["training"]


def test_a_bundle_of_a_run_with_a_diverged_group_records_it_and_stays_valid() -> None:
    from nvcre.runtime.evidence.assemble import assemble
    from tests.evidencekit import cases

    docs = cases.documents("passed")
    goodput = next(d for d in docs if d.get("kind") == "GoodputMeasurement")
    goodput["status"]["conditions"] = [*goodput["status"].get("conditions", []), DIVERGED]
    job_name = goodput["spec"]["jobRef"]["name"]
    files = assemble(*cases.build(docs)).files
    predicate = json.loads(files["statement.json"])["predicate"]
    jsonschema.Draft202012Validator(SCHEMA).validate(predicate)
    jobs = {j["job"]: j for c in predicate["categories"] for j in c.get("jobs") or []}
    assert jobs[job_name]["training"]["failure"]["reason"] == "TrainingLossNotFinite"
    assert "goodput" not in jobs[job_name]["training"]
    others = [j for name, j in jobs.items() if name != job_name and "training" in j]
    assert others and all("goodput" in j["training"] for j in others), "the healthy groups keep theirs"
    assert predicate["run"]["result"] == "FAILED"
    # the report's training table names why that group has no goodput
    assert '<td class="num">TrainingLossNotFinite</td>' in files["report.html"].decode("utf-8")
