"""NVCRE's metric families on the simulated GPU cluster, with NVCRE's names and label names.

One hardware failure (a node cordoned under a running NCCL Job), one training run (goodput), and
a Workflow applied by hand, outside any Certification, with a topology key: each new family
must show on the controller's ``/metrics`` with exactly NVCRE's label names, and the per-Job
series must go once their Job is deleted.
"""

from __future__ import annotations

import copy
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, JOBS, PODS, WORKFLOWS
from tests.integration.integration_helpers import eventually, fast_settings

pytestmark = [pytest.mark.integration, pytest.mark.sim]

FAST = fast_settings(max_sample_interval=1.0)
JOB = {"namespace", "job", "workflow"}
GOODPUT = {"namespace", "measurement", "job", "workflow"}
TOPOLOGY = {"namespace", "workflow", "topology_key", "domain", "node"}


@pytest.fixture
def controller(kube, sim_namespace) -> Iterator[Controller]:
    config = ControllerConfig(
        namespace=sim_namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=FAST
    )
    ctl = Controller(kube, config).start()
    try:
        yield ctl
    finally:
        ctl.stop()


def scrape(controller: Controller) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=10).read().decode()
    return {f.name: [(s.name, dict(s.labels), float(s.value)) for s in f.samples] for f in text_string_to_metric_families(text)}


def certification(namespace: str, name: str, nodes: list[str], categories: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"target": {"nodeNames": nodes}, "timeoutPerJob": "3m", "categories": categories, **spec},
    }


def terminal(kube, resource, name: str, namespace: str, timeout: float) -> str:
    def done() -> str | None:
        life = cond.lifecycle(kube.get(resource, name, namespace).get("status") or {})
        return life if life in (cond.SUCCEEDED, cond.FAILED) else None

    return eventually(done, timeout=timeout, what=f"{resource.kind} {name} to finish")


def labels_of(found, family: str) -> set[frozenset[str]]:
    return {frozenset(k for k in labels if k != "le") for _, labels, _ in found.get(family, [])}


def test_every_nvcre_family_shows_with_nvcres_labels(simcluster, sim_namespace, kube, controller):
    sick_pair = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-hw")
    healthy_pair = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-tr")
    for node in sick_pair:
        simcluster.set_fault(node, "hang")
    kube.create(certification(sim_namespace, "hardware", sick_pair, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    kube.create(
        certification(
            sim_namespace,
            "training",
            healthy_pair,
            [{"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}}],
            target={"nodeNames": healthy_pair, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
        )
    )
    eventually(
        lambda: [
            p
            for p in kube.list(PODS, sim_namespace).items
            if (p.get("spec") or {}).get("nodeName") in sick_pair and (p.get("status") or {}).get("phase") == "Running"
        ],
        timeout=60,
        what="the NCCL workload pods to run",
    )
    simcluster.set_fault(sick_pair[0], "cordon")  # the default health monitor flags a cordoned node

    # Goodput while the training measures: every gauge of the measurement, NVCRE's labels.
    def measuring():
        found = scrape(controller)
        return found if "nvcre_goodput_training_time_seconds" in found else None

    found = eventually(measuring, timeout=120, what="goodput gauges while the training measures")
    for family in ("nvcre_goodput_ratio", "nvcre_goodput_training_time_seconds", "nvcre_goodput_warmup_time_seconds"):
        assert labels_of(found, family) == {frozenset(GOODPUT)}, family

    assert terminal(kube, CERTIFICATIONS, "hardware", sim_namespace, 120) == cond.FAILED
    assert terminal(kube, CERTIFICATIONS, "training", sim_namespace, 150) == cond.SUCCEEDED

    found = scrape(controller)
    (hw_workflow,) = [
        w
        for w in kube.list(WORKFLOWS, sim_namespace).items
        if (w["metadata"].get("labels") or {}).get("nvcre.nvidia.com/certification") == "hardware"
    ]
    (hw_job,) = [g["jobRef"]["name"] for g in hw_workflow["status"]["orchestration"]["groups"]]
    wf_name = hw_workflow["metadata"]["name"]
    expect = {"namespace": sim_namespace, "job": hw_job, "workflow": wf_name}
    assert ("nvcre_job_failed_nodes", expect, 1.0) in found["nvcre_job_failed_nodes"]
    assert ("nvcre_hardware_failed_jobs_total", expect, 1.0) in found["nvcre_hardware_failed_jobs"]
    assert ("nvcre_hardware_failures_detected_total", {**expect, "node": sick_pair[0]}, 1.0) in found["nvcre_hardware_failures_detected"]
    assert ("nvcre_workload_created_total", expect, 1.0) in found["nvcre_workload_created"]
    evaluated = [v for _, labels, v in found["nvcre_nodes_evaluated"] if labels == expect]
    assert evaluated and evaluated[0] >= 2
    assert labels_of(found, "nvcre_node_health_check_duration_seconds") == {frozenset(JOB)}
    assert labels_of(found, "nvcre_reconcile") == {frozenset(JOB | {"result"})}
    assert labels_of(found, "nvcre_reconcile_duration_seconds") == {frozenset(JOB)}
    assert {labels["result"] for _, labels, _ in found["nvcre_reconcile"]} <= {"success", "error", "requeue"}
    assert any(labels["job"] == hw_job for _, labels, _ in found["nvcre_reconcile"])
    assert labels_of(found, "nvcre_controller_reconcile") == {frozenset({"controller", "result"})}
    assert ("nvcre_job_status", {**expect, "status": "failed"}, 1.0) in found["nvcre_job_status"]
    # a completed measurement keeps its ratio only
    assert labels_of(found, "nvcre_goodput_ratio") == {frozenset(GOODPUT)}
    assert "nvcre_goodput_training_time_seconds" not in found

    # A Workflow applied by hand, outside any Certification, with a topology key every node shares.
    (train_workflow,) = [
        w
        for w in kube.list(WORKFLOWS, sim_namespace).items
        if (w["metadata"].get("labels") or {}).get("nvcre.nvidia.com/certification") == "training"
    ]
    spec = copy.deepcopy(train_workflow["spec"])
    spec.setdefault("orchestration", {})["topology"] = {"topologyKey": "nvidia.com/gpu.product"}
    kube.create(
        {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": "hand-made", "namespace": sim_namespace},
            "spec": spec,
        }
    )
    terminal(kube, WORKFLOWS, "hand-made", sim_namespace, 150)
    found = scrape(controller)
    mine = [labels for _, labels, v in found["nvcre_workflow_status"] if labels["workflow"] == "hand-made" and v == 1.0]
    assert mine and mine[0]["certification"] == ""
    hand_jobs = [labels for _, labels, v in found["nvcre_job_status"] if labels["workflow"] == "hand-made" and v == 1.0]
    assert hand_jobs, "the hand-made Workflow's Job has a status gauge"
    topology = found.get("nvcre_topology_validated_nodes", []) + found.get("nvcre_topology_failed_nodes", [])
    assert {labels["node"] for _, labels, _ in topology if labels["workflow"] == "hand-made"} == set(healthy_pair)
    assert all(set(labels) == TOPOLOGY and labels["topology_key"] == "nvidia.com/gpu.product" for _, labels, _ in topology)

    # Deleting the failed Job drops every per-Job series NVCRE keys by it.
    kube.delete(JOBS, hw_job, sim_namespace)

    def series_gone():
        text = urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=10).read().decode()
        return f'job="{hw_job}"' not in text

    eventually(series_gone, timeout=60, what="the deleted Job's series to go")
