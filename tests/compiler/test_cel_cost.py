"""Node-health CEL cost: estimates, refusal at validation with the field path, and no evaluation in the controller."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.api.validate import validate
from nvcre.compiler.cel_cost import MAX_HEALTH_STEPS, estimated_steps, health_cost_problem
from nvcre.runtime.judge import health

LABELS = "node.metadata.labels"
#: The audit's reproducer: five nested comprehensions over the labels (31 s per node with 14 labels).
NESTED_FIVE = f"{LABELS}.all(a, {LABELS}.all(b, {LABELS}.all(c, {LABELS}.all(d, {LABELS}.all(e, true)))))"


def test_a_comprehension_costs_its_body_once_per_element() -> None:
    e10, e20, e30 = (estimated_steps(f"{LABELS}.exists(k, k == 'x')", n) or 0 for n in (10, 20, 30))
    assert 0 < e20 - e10 == e30 - e20  # linear in the collection's size
    nested_10, nested_20 = (estimated_steps(f"{LABELS}.all(a, {LABELS}.all(b, true))", n) for n in (10, 20))
    assert nested_10 is not None and nested_20 is not None and 3.5 < nested_20 / nested_10 < 4.5  # quadratic


def test_a_list_literal_is_walked_for_its_own_length() -> None:
    expression = "node.status.conditions.exists(c, ['XidError', 'GpuLost'].exists(t, c.type == t))"
    assert health_cost_problem(expression) is None


@pytest.mark.parametrize(
    "expression",
    [
        "node.spec.unschedulable == true",
        "node.status.conditions.exists(c, c.type == 'Ready' && c.status != 'True')",
        f"{LABELS}.exists(k, k.startsWith('nvidia.com/gpu.') && {LABELS}[k] == 'false')",
    ],
)
def test_everyday_expressions_pass(expression: str) -> None:
    assert health_cost_problem(expression) is None


@pytest.mark.parametrize("expression", [NESTED_FIVE, f"{LABELS}.all(a, {LABELS}.exists(b, a == b))", "(" * 400 + "true" + ")" * 400])
def test_costly_or_unwalkable_expressions_are_refused(expression: str) -> None:
    problem = health_cost_problem(expression)
    assert problem is not None and f"over the limit of {MAX_HEALTH_STEPS:,}" in problem


def _workflow_with(expression: str) -> dict:
    workflow = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "workload": {"trainJob": {"runtimeRef": {"name": "r"}}},
                    "nodeHealthMonitor": {"cel": {"expression": expression}},
                }
            }
        },
    }
    return copy.deepcopy(workflow)


def test_validation_refuses_the_audit_expression_at_its_field_path() -> None:
    found = [d for d in validate(_workflow_with(NESTED_FIVE)) if d.code == "HealthExpressionTooCostly"]
    assert [d.path for d in found] == ["spec.jobTemplate.spec.nodeHealthMonitor.cel.expression"]
    assert not [d for d in validate(_workflow_with("node.spec.unschedulable == true")) if d.code == "HealthExpressionTooCostly"]


def test_the_controller_does_not_run_a_costly_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: object) -> object:
        raise AssertionError("cel-python was asked to run an expression over the cost limit")

    monkeypatch.setattr(health, "run_bool", never)
    node = {"metadata": {"name": "gpu-0", "labels": {f"l{i}": "x" for i in range(14)}}}
    check = health.NodeHealthMonitor(NESTED_FIVE).check(node)
    assert check.error is not None and check.error.startswith("not evaluated:") and not check.unhealthy
    assert "14 elements" in check.error  # judged at the node's own size


def test_a_cheap_expression_at_a_small_node_still_runs() -> None:
    node = {"metadata": {"name": "gpu-0", "labels": {"a": "1", "b": "2"}}}
    check = health.NodeHealthMonitor(f"{LABELS}.all(a, {LABELS}.exists(b, a == b))").check(node)
    assert check.error is None and check.unhealthy
