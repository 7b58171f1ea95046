"""Threshold expressions that could never give a verdict are refused at validation, at their path."""

from __future__ import annotations

import pytest

from nvcre.compiler.api.threshold_check import threshold_problems
from nvcre.compiler.api.validate import validate


def _certification(spec_thresholds: dict | None, category_thresholds: dict | None) -> dict:
    options = {"nodesPerJob": 2, **({"thresholds": category_thresholds} if category_thresholds else {})}
    spec: dict = {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": options}]}
    if spec_thresholds:
        spec["thresholds"] = spec_thresholds
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"}, "spec": spec}


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("1/0 == 0", "divide by zero"),
        ("value", "must return bool"),
        ("value + 1.0", "must return bool"),
        ("value >=", "syntax error"),
    ],
)
def test_an_expression_without_a_boolean_is_refused(expression: str, words: str) -> None:
    problems = [d for d in validate(_certification(None, {"busBandwidthGBps": expression})) if d.is_error]
    assert [(d.code, d.path) for d in problems] == [
        ("InvalidThresholdExpression", "spec.categories[0].options.thresholds.busBandwidthGBps")
    ]
    assert words in problems[0].message


def test_the_spec_level_map_is_checked_too() -> None:
    problems = [d for d in validate(_certification({"goodputRatio": "value"}, None)) if d.is_error]
    assert [(d.code, d.path) for d in problems] == [("InvalidThresholdExpression", "spec.thresholds.goodputRatio")]


@pytest.mark.parametrize("expression", ["value >= 100", "value >= 1.5 && value < 1e9", "value > 0.0 || value == 0.0"])
def test_ordinary_expressions_pass(expression: str) -> None:
    assert [d for d in validate(_certification(None, {"busBandwidthGBps": expression})) if d.is_error] == []


def test_workflows_and_workloadruns_are_walked_as_well() -> None:
    workflow = {"spec": {"validation": {"performance": {"thresholds": {"avgStepTimeSec": "value * 2.0"}}}}}
    assert [d.path for d in threshold_problems(workflow)] == ["spec.validation.performance.thresholds.avgStepTimeSec"]
