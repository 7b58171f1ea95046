"""Node health monitor: NVCRE's defaulted Node view, errors reported, detector messages kept."""

from __future__ import annotations

from nvcre.runtime.judge.health import (
    DEFAULT_EXPRESSION,
    compile_monitor,
    defaulted_node,
    hardware_failed_message,
    merge_failed_nodes,
)


def test_default_monitor_sees_a_missing_field_as_false() -> None:
    monitor = compile_monitor(DEFAULT_EXPRESSION)
    assert monitor.evaluate({"metadata": {"name": "n1"}}) is False
    assert monitor.evaluate({"metadata": {"name": "n1"}, "spec": {"unschedulable": True}}) is True


def test_defaults_fill_every_section_without_touching_the_input() -> None:
    node = {"metadata": {"name": "n"}, "spec": {"unschedulable": None}}
    view = defaulted_node(node)
    assert view["metadata"]["labels"] == {} and view["status"]["conditions"] == []
    assert view["spec"]["unschedulable"] is False and view["status"]["allocatable"] == {}
    assert node == {"metadata": {"name": "n"}, "spec": {"unschedulable": None}}


def test_condition_detector_keeps_its_own_message() -> None:
    monitor = compile_monitor("node.status.conditions.exists(c, c.type == 'GPUHealthy' && c.status == 'False')")
    sick = {
        "metadata": {"name": "n2"},
        "status": {"conditions": [{"type": "GPUHealthy", "status": "False", "message": "XID 79 on GPU 3"}]},
    }
    check = monitor.check(sick)
    assert check.unhealthy
    assert check.failed_node() == {
        "name": "n2",
        "reason": "HardwareFailureDetected",
        "message": "Hardware failure detected by node health check: GPUHealthy: XID 79 on GPU 3",
    }
    assert not monitor.check({"metadata": {"name": "n3"}}).unhealthy


def test_errors_are_reported_never_raised() -> None:
    missing = compile_monitor("node.metadata.labels['rack'] == 'a'").check({"metadata": {"name": "n"}})
    assert not missing.unhealthy and missing.error
    broken = compile_monitor("node.spec.").check({"metadata": {"name": "n"}})
    assert not broken.unhealthy and broken.error and broken.error.startswith("compile:")
    not_bool = compile_monitor("1 + 1").check({"metadata": {"name": "n"}})
    assert not not_bool.unhealthy and not_bool.error


def test_monitor_is_compiled_once_per_expression() -> None:
    assert compile_monitor("node.spec.unschedulable") is compile_monitor("node.spec.unschedulable")


def test_merge_is_additive_deduplicated_and_sorted() -> None:
    existing = [{"name": "b", "reason": "HardwareFailureDetected", "message": "first"}]
    new = [
        {"name": "b", "reason": "HardwareFailureDetected", "message": "second"},
        {"name": "a", "reason": "WorkloadFailed", "message": "m"},
        {"name": "b", "reason": "ThresholdViolation"},
    ]
    assert merge_failed_nodes(existing, new) == [
        {"name": "a", "reason": "WorkloadFailed", "message": "m"},
        {"name": "b", "reason": "HardwareFailureDetected", "message": "first"},
        {"name": "b", "reason": "ThresholdViolation"},
    ]
    assert hardware_failed_message(["b", "a", "b"]) == "Hardware failure detected on node(s): [a b]"


def test_reading_only_the_named_parts_gives_the_same_answers() -> None:
    from nvcre.compiler.cel import to_cel
    from nvcre.compiler.cel_program import run_bool

    node = {
        "metadata": {"name": "n", "labels": {"nvidia.com/gpu.present": "true", "rack": "r1"}},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "GPUHealthy", "status": "False"}],
            "capacity": {"nvidia.com/gpu": "8"},
        },
    }
    expressions = [
        "node.metadata.labels['nvidia.com/gpu.present'] == 'true'",
        "size(node.status.conditions) > 1 && node.spec.unschedulable",
        "node.spec.taints.exists(t, t.key == 'k') || 'rack' in node.metadata.labels",
        "node.status.capacity['nvidia.com/gpu'] == '8' && has(node.metadata.name)",
        "node.status.conditions.exists(c, c.type == 'GPUHealthy' && c.status == 'False')",
        "size(node) == 3",
    ]
    for expression in expressions:
        full = run_bool(expression, {"node": to_cel(defaulted_node(node))})
        assert full.value is not None, expression
        assert compile_monitor(expression).check(node).unhealthy is full.value, expression
