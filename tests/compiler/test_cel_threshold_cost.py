"""A threshold expression is costed before it runs and runs within a CPU budget.

The reproducer is nested ``all`` comprehensions over a ten-element list literal: each level costs
ten times the one inside it (four levels took about 1.4 s per evaluation, six about 135 s), and a
Certification carrying one held the controller's Certification workers for every tenant.
"""

from __future__ import annotations

import gc
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import celpy.evaluation
import pytest
import yaml

from nvcre.compiler import cel_cost, cel_program, cel_threshold
from nvcre.compiler.api.threshold_check import threshold_problems
from nvcre.compiler.api.validate import certainly_valid, validate
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge import thresholds
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import CERTIFICATIONS
from nvcre.runtime.reconcile.certification import CertificationReconciler
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.testing.fakekube import MemoryKube
from tests.runtime.reconcile.test_certification import FixedClock, cert  # noqa: E402

TEN = "[0,1,2,3,4,5,6,7,8,9]"
PATH = "spec.categories[0].options.thresholds.busBandwidthGBps"
NODES = Path(__file__).parents[1] / "fixtures" / "facts" / "aws-h100-2nodes.yaml"


def nested(levels: int) -> str:
    """The audit's threshold with ``levels`` nested comprehensions (6 levels: 206 characters)."""
    return "value >= 0.0 && " + "".join(f"{TEN}.all(x{i}, " for i in range(levels)) + "true" + ")" * levels


def certification(expression: str) -> dict[str, Any]:
    options = {"nodesPerJob": 2, "thresholds": {"busBandwidthGBps": expression}}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "cost1", "namespace": "cost"},
        "spec": {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": options}],
        },
    }


@pytest.mark.parametrize("levels", [4, 6])
def test_validation_refuses_a_costly_threshold_at_its_path_without_running_it(levels: int) -> None:
    started = time.thread_time()
    problems = [d for d in validate(certification(nested(levels))) if d.is_error]
    assert [(d.code, d.path) for d in problems] == [("ThresholdExpressionTooCostly", PATH)]
    assert "over the limit of 10,000" in problems[0].message
    assert not certainly_valid(certification(nested(levels)), "Certification")
    assert time.thread_time() - started < 3.0


def test_three_levels_over_a_literal_still_pass() -> None:
    assert cel_cost.threshold_cost_problem(nested(3)) is None
    assert threshold_problems(certification(nested(2))) == []


def test_the_job_tier_refuses_the_expression_as_a_configuration_error() -> None:
    started = time.thread_time()
    outcome = thresholds.evaluate({"busBandwidthGBps": nested(4)}, {"busBandwidthGBps": 950.0})
    assert outcome.reason == "InvalidThresholdExpression" and outcome.reason in thresholds.CONFIGURATION_ERRORS
    assert "too costly" in outcome.message
    assert time.thread_time() - started < 1.0


def test_an_expression_the_estimate_misses_is_stopped_by_the_cpu_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # as if the estimate under-counted: the expression runs, and the budget ends it (measured in
    # this thread's CPU time, as the budget is, so a busy machine does not change the answer)
    monkeypatch.setattr(cel_threshold, "threshold_cost_problem", lambda expression: None)
    started = time.thread_time()
    outcome = cel_threshold.run_threshold(nested(5), 1.0, cpu_budget=0.2)
    assert outcome.value is None and not outcome.too_costly
    assert "stopped after 0.2 s of CPU" in str(outcome.error)
    assert time.thread_time() - started < 2.0
    # the program is unharmed: the same text, cheap enough, still judges
    assert cel_threshold.run_threshold("value >= 0.5", 1.0).value is True
    assert cel_program.run_bool(nested(2), {"value": cel_program.celtypes.DoubleType(1.0)}, cpu_budget=5.0).value is True


def test_a_finaliser_that_runs_out_the_budget_cannot_swallow_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    # The collector may run a finaliser on this thread in the middle of an evaluation. When the
    # budget ran out inside it, a stop raised there would be printed and dropped by the interpreter,
    # the trace hook taken away, and the evaluation would finish unbounded (a busy serial run saw
    # exactly this). Here the finaliser spends the whole budget; the evaluation must still stop.
    monkeypatch.setattr(cel_threshold, "threshold_cost_problem", lambda expression: None)

    def spin() -> None:
        """One Python call, for the budget's hook to count."""

    class Finalised:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

        def __del__(self) -> None:
            until = time.thread_time() + 0.3
            while time.thread_time() < until:
                spin()

    evaluate = celpy.evaluation.Evaluator.evaluate

    collected: list[int] = []

    def collect_first(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not collected:  # once, as the collector would on an allocation, with the hook in place
            collected.append(gc.collect())
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(celpy.evaluation.Evaluator, "evaluate", collect_first)
    gc.disable()  # so that no automatic collection frees the cycle before the hook is in place
    try:
        Finalised()
        outcome = cel_threshold.run_threshold(nested(4), 1.0, cpu_budget=0.05)
    finally:
        gc.enable()
    assert outcome.value is None and "stopped after 0.05 s of CPU" in str(outcome.error), outcome


def test_the_budget_leaves_the_previous_trace_function_in_place() -> None:
    seen: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        seen.append(event)

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        assert cel_program.run_bool("1 < 2", {}, cpu_budget=1.0).value is True
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert seen  # chained: the tracer saw the evaluation's calls


def test_the_controller_refuses_the_certification_with_a_reason_and_creates_nothing() -> None:
    obj = cert([{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}], timedelta(0))
    obj["spec"] = certification(nested(4))["spec"]
    nodes = Store()
    nodes.replace(yaml.safe_load(NODES.read_text())["items"])
    kube = MemoryKube()
    kube.put(obj)
    ctx = Context(kube=kube, stores={"nodes": nodes, "resourceslices": Store()}, clock=FixedClock(), settings=Settings())
    started = time.thread_time()
    CertificationReconciler(ctx).reconcile("ns", "c")
    assert time.thread_time() - started < 5.0
    status = kube.get(CERTIFICATIONS, "c", "ns")["status"]
    failed = cond.condition(status, cond.FAILED)
    assert failed["status"] == "True" and failed["reason"] == "WorkflowValidationFailed"
    assert PATH in failed["message"] and "ThresholdExpressionTooCostly" in failed["message"]
    assert [call for call in kube.calls if call.verb == "create" and call.resource != "events"] == []
    assert "failedNodes" not in status
