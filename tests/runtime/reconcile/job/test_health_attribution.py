"""The Job tier's health check keeps the detector's own words in the failed-node entry."""

from __future__ import annotations

from nvcre.runtime.reconcile.job.health import unhealthy_nodes


def _node(name: str, conditions: list[dict]) -> dict:
    return {"metadata": {"name": name}, "spec": {}, "status": {"conditions": conditions}}


def test_the_detector_message_survives_and_healthy_nodes_are_not_listed() -> None:
    expression = "node.status.conditions.exists(c, c.type == 'GpuHealthy' && c.status == 'False')"
    nodes = {
        "gpu-1": _node("gpu-1", [{"type": "GpuHealthy", "status": "False", "message": "XID 79 on GPU 3: fallen off the bus"}]),
        "gpu-2": _node("gpu-2", [{"type": "GpuHealthy", "status": "True", "message": "ok"}]),
    }
    (entry,) = unhealthy_nodes(expression, nodes)
    assert entry["name"] == "gpu-1"
    assert entry["reason"] == "HardwareFailureDetected"
    assert "XID 79 on GPU 3: fallen off the bus" in entry["message"]


def test_a_cordon_gets_the_generic_message_and_an_evaluation_error_blames_nobody() -> None:
    cordoned = {"gpu-1": {"metadata": {"name": "gpu-1"}, "spec": {"unschedulable": True}}}
    (entry,) = unhealthy_nodes("node.spec.unschedulable == true", cordoned)
    assert entry["message"] == "Hardware failure detected by node health check"
    assert unhealthy_nodes("node.status.missing.field == 1", cordoned) == []
