"""Workflow nodeResults/domainResults under validation.performance.tracking, derived from the groups."""

from __future__ import annotations

from nvcre.runtime.judge.tracking import with_tracking


def _wf(per_node: bool, per_domain: bool) -> dict:
    return {"spec": {"validation": {"performance": {"tracking": {"perNode": per_node, "perDomain": per_domain}}}}}


STATUS = {
    "orchestration": {
        "currentIteration": 2,
        "groups": [
            {"name": "group-0", "nodes": ["a", "b"], "domains": ["rack-1"], "phase": "Running"},
            {"name": "group-1", "nodes": ["c"], "domains": ["rack-2"], "phase": "Succeeded"},
        ],
        "iterationHistory": [
            {"iteration": 1, "groups": [{"name": "group-0", "phase": "Failed"}, {"name": "group-1", "phase": "Succeeded"}]},
        ],
    }
}


def test_nothing_is_written_unless_tracking_asks():
    assert with_tracking(_wf(False, False), STATUS) is STATUS


def test_per_node_results_follow_every_iteration_and_a_failure_sticks():
    out = with_tracking(_wf(True, False), STATUS)
    assert "domainResults" not in out
    nodes = out["nodeResults"]
    assert nodes["a"] == {
        "group": "group-0",
        "domain": "rack-1",
        "status": "Failed",
        "iterations": [{"iterationNumber": 1, "status": "Failed"}, {"iterationNumber": 2, "status": "Running"}],
    }
    assert nodes["c"]["status"] == "Passed" and len(nodes["c"]["iterations"]) == 2


def test_per_domain_results_take_the_worst_node():
    out = with_tracking(_wf(False, True), STATUS)
    assert "nodeResults" not in out
    assert out["domainResults"] == {"rack-1": {"nodeCount": 2, "status": "Failed"}, "rack-2": {"nodeCount": 1, "status": "Passed"}}


def test_the_results_fit_the_workflow_schema():
    from pathlib import Path

    from nvcre.compiler.api import validate
    from nvcre.compiler.yamlio import load_file

    loaded = load_file(Path(__file__).resolve().parents[2] / "fixtures" / "api" / "workflow-overrides.yaml")
    doc = loaded[0] if isinstance(loaded, list) else loaded
    doc["status"] = with_tracking(_wf(True, True), STATUS)
    doc["status"].pop("orchestration")
    assert validate(doc) == []
