"""The ComputeDomain rule: when a domain that never became Ready fails a Job, whom it blames, and the
missing-API hint."""

from __future__ import annotations

from nvcre.runtime.judge.domains import domain_problem, missing_api_hint


def _domain(state: str, nodes: dict[str, str], wanted: int = 2) -> dict:
    return {
        "metadata": {"name": "cd-1"},
        "spec": {"numNodes": wanted},
        "status": {"status": state, "nodes": [{"name": n, "status": s} for n, s in nodes.items()]},
    }


def test_within_the_bound_or_ready_nothing_fails():
    stuck = _domain("NotReady", {"a": "Ready", "b": "NotReady"})
    assert domain_problem([stuck], ["a", "b"], waited=10, bound=60, bound_text="1m0s") is None
    ready = _domain("Ready", {"a": "Ready", "b": "Ready"})
    assert domain_problem([ready], ["a", "b"], waited=600, bound=60, bound_text="1m0s") is None


def test_a_notready_daemon_blames_its_node_alone():
    stuck = _domain("NotReady", {"a": "Ready", "b": "NotReady"})
    problem = domain_problem([stuck], ["a", "b"], waited=61, bound=60, bound_text="1m0s")
    assert problem is not None and problem.nodes == ("b",)
    assert problem.message == ("ComputeDomain cd-1 is not Ready after 1m0s (1/2 nodes Ready): the IMEX daemon is NotReady on b")


def test_a_pod_node_the_driver_never_listed_is_blamed_once_it_lists_others():
    stuck = _domain("NotReady", {"a": "Ready"})
    problem = domain_problem([stuck], ["a", "c"], waited=61, bound=60, bound_text="1m0s")
    assert problem is not None and problem.nodes == ("c",)
    assert "no IMEX daemon joined from c" in problem.message


def test_a_driver_that_lists_no_node_blames_nobody():
    stuck = {"metadata": {"name": "cd-1"}, "spec": {"numNodes": 2}}
    problem = domain_problem([stuck], ["a", "b"], waited=61, bound=60, bound_text="1m0s")
    assert problem is not None and problem.nodes == ()
    assert "lists no node for it" in problem.message and "no node is blamed" in problem.message


def test_the_missing_api_hint_names_who_serves_it():
    assert "k8s-dra-driver-gpu" in missing_api_hint("resource.nvidia.com/v1beta1")
    assert "enableMNNVL: false" in missing_api_hint("resource.nvidia.com/v1beta1")
    assert "Trainer" in missing_api_hint("trainer.kubeflow.org/v1alpha1")
    assert missing_api_hint("v1") == "" and missing_api_hint("example.com/v1") == ""
