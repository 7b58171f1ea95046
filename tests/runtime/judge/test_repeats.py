"""A deterministic failure: the same container failing the same way twice on one node, in either retry shape."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.judge.repeats import RepeatedFailure, repeated_failure


def pod(node: str, code: int, *, restarts: int = 0, last: int | None = None, container: str = "node") -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": container,
        "restartCount": restarts,
        "state": {"terminated": {"exitCode": code, "reason": "Error"}} if code else {"running": {}},
    }
    if last is not None:
        status["lastState"] = {"terminated": {"exitCode": last, "reason": "Error"}}
    return {"spec": {"nodeName": node}, "status": {"containerStatuses": [status]}}


def test_a_replaced_pod_failing_again_on_its_node_is_repeated() -> None:
    found = repeated_failure([pod("gpu-1", 134), pod("gpu-1", 134), pod("gpu-0", 0)])
    assert found == RepeatedFailure("gpu-1", "node", 134, "Error", 2)
    assert "failed 2 times on node gpu-1 with exit code 134" in found.message()


def test_a_restarted_container_counts_its_previous_termination() -> None:
    assert repeated_failure([pod("gpu-1", 1, restarts=1, last=1)]) == RepeatedFailure("gpu-1", "node", 1, "Error", 2)


def test_a_last_state_without_a_restart_is_not_a_second_failure() -> None:
    assert repeated_failure([pod("gpu-1", 1, last=1)]) is None


def test_different_nodes_codes_or_a_recovery_are_not_repeats() -> None:
    assert repeated_failure([pod("gpu-1", 134), pod("gpu-2", 134)]) is None
    assert repeated_failure([pod("gpu-1", 134), pod("gpu-1", 1)]) is None
    assert repeated_failure([pod("gpu-1", 0, restarts=1, last=134)]) is None  # crashed once, now running
    assert (
        repeated_failure([{"spec": {}, "status": {"containerStatuses": [{"name": "n", "state": {"terminated": {"exitCode": 1}}}]}}] * 2)
        is None
    )
