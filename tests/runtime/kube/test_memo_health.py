"""Node health verdicts are evaluated once per node version, and stay correct when nodes change."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.judge.health import HealthCheck, compile_monitor
from nvcre.runtime.kube.memo import HealthMemo

EXPRESSION = "node.spec.unschedulable == true"


def node(name: str, rv: str, cordoned: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {"unschedulable": cordoned}}


class Counting:
    def __init__(self, expression: str = EXPRESSION) -> None:
        self.calls = 0
        self.monitor = compile_monitor(expression)

    def __call__(self, obj: Any) -> HealthCheck:
        self.calls += 1
        return self.monitor.check(obj)


def test_an_unchanged_node_is_evaluated_once_and_a_new_version_again():
    memo, evaluate = HealthMemo(), Counting()
    assert not memo.check(EXPRESSION, node("n1", "1", False), evaluate).unhealthy
    assert not memo.check(EXPRESSION, node("n1", "1", False), evaluate).unhealthy
    assert evaluate.calls == 1
    assert memo.check(EXPRESSION, node("n1", "2", True), evaluate).unhealthy
    assert evaluate.calls == 2
    # another expression over the same node version is its own verdict
    other = Counting("node.spec.unschedulable == false")
    assert not memo.check("node.spec.unschedulable == false", node("n1", "2", True), other).unhealthy
    assert other.calls == 1 and evaluate.calls == 2


def test_a_node_without_a_version_is_always_evaluated_and_the_memory_is_bounded():
    memo, evaluate = HealthMemo(size=2), Counting()
    memo.check(EXPRESSION, {"metadata": {"name": "x"}, "spec": {}}, evaluate)
    memo.check(EXPRESSION, {"metadata": {"name": "x"}, "spec": {}}, evaluate)
    assert evaluate.calls == 2 and len(memo) == 0
    for index in range(5):
        memo.check(EXPRESSION, node(f"n{index}", "1", False), evaluate)
    assert len(memo) == 2
    memo.check(EXPRESSION, node("n0", "1", False), evaluate)  # pushed out: evaluated again
    assert evaluate.calls == 2 + 5 + 1
