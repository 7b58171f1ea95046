"""GB200/GB300 multi-node NVLink end to end on the simulated cluster: ComputeDomains, IMEX channels, their faults.

The cluster serves the ComputeDomain API and plays NVIDIA's DRA driver (``nvcre.testing.simdomains``):
it creates each domain's channel ResourceClaimTemplate, publishes a channel device per GB node for
the scheduler to allocate, and reports the IMEX daemons of the nodes the workload lands on. The
controller runs in-process with short intervals, scoped to the test's namespace, like the other
runtime scenarios, with a short ``--compute-domain-timeout``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from nvcre.runtime.controller import Controller
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, CERTIFICATIONS, JOBS, WORKFLOWS
from tests.integration.integration_helpers import eventually, scoped_controller
from tests.integration.test_runtime_sim import FAST, certification, node_results, wait_terminal

pytestmark = [pytest.mark.integration, pytest.mark.sim]

DOMAIN_TIMEOUT = 12.0


@pytest.fixture
def controller(kube, sim_namespace) -> Iterator[Controller]:
    with scoped_controller(kube, sim_namespace, dataclasses.replace(FAST, compute_domain_timeout=DOMAIN_TIMEOUT)) as ctl:
        yield ctl


def _domains(kube, namespace: str) -> list[dict]:
    resource = kube.resource_for("resource.nvidia.com/v1beta1", "ComputeDomain")
    return kube.list(resource, namespace).items


def _workflow(kube, namespace: str, cert: str) -> dict:
    (wf,) = [w for w in kube.list(WORKFLOWS, namespace).items if w["metadata"]["name"].startswith(cert)]
    return wf


@pytest.mark.parametrize(
    ("prof", "category"),
    [
        ("gb200", {"domain": "communication", "variant": "nccl-all-reduce"}),
        ("gb300", {"domain": "communication", "variant": "nccl-loopback-nvswitch"}),
        ("gb200", {"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}}),
    ],
    ids=["gb200-all-reduce", "gb300-loopback-nvswitch", "gb200-nemotron5-8b"],
)
def test_a_gb_workload_runs_over_its_compute_domain_and_passes(simcluster, sim_namespace, kube, controller, prof, category):
    variant = category["variant"]
    nodes = simcluster.add_nodes(profile=prof, count=2, prefix=f"{sim_namespace}-{prof}")
    name = f"mnnvl-{prof}"
    kube.create(certification(sim_namespace, name, nodes, [category]))
    life, reason, message = wait_terminal(kube, CERTIFICATIONS, name, sim_namespace, timeout=180)
    assert life == cond.SUCCEEDED, (reason, message)

    wf = _workflow(kube, sim_namespace, name)
    domain_refs = [r for r in wf["status"].get("dependencyRefs") or [] if r["kind"] == "ComputeDomain"]
    assert domain_refs, wf["status"].get("dependencyRefs")
    joined: set[str] = set()
    for domain in _domains(kube, sim_namespace):
        assert domain["status"]["status"] == "Ready"
        joined |= {n["name"] for n in domain["status"]["nodes"]}
    assert joined == set(nodes)  # every worker held its domain's channel
    if variant == "nccl-all-reduce":
        (measurement,) = kube.list(BANDWIDTH_MEASUREMENTS, sim_namespace).items
        peak = max(float(r["busBW"]) for r in measurement["status"]["results"])
        assert peak > 500, measurement["status"]["results"]  # over NVLink, not the 11 GB/s Ethernet

    kube.delete(CERTIFICATIONS, name, sim_namespace)
    eventually(lambda: not _domains(kube, sim_namespace), timeout=60, what="the ComputeDomains to go with the run")
    rct = kube.resource_for("resource.k8s.io/v1", "ResourceClaimTemplate")
    eventually(lambda: not kube.list(rct, sim_namespace).items, timeout=60, what="the channel templates to go")


def test_an_imex_daemon_that_never_joins_fails_the_job_and_blames_its_node_alone(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="gb200", count=2, prefix=f"{sim_namespace}-imex")
    simcluster.set_fault(nodes[1], "imex-down")
    name = "imex-down"
    kube.create(certification(sim_namespace, name, nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    life, reason, message = wait_terminal(kube, CERTIFICATIONS, name, sim_namespace, timeout=180)
    assert life == cond.FAILED, (reason, message)

    (job,) = kube.list(JOBS, sim_namespace).items
    failed = (job["status"] or {}).get("failedNodes") or []
    assert [(f["name"], f["reason"]) for f in failed] == [(nodes[1], "WorkloadFailed")]
    assert "IMEX daemon is NotReady" in failed[0]["message"]
    found = cond.condition(job["status"], cond.FAILED) or {}
    assert found.get("reason") == "ComputeDomainNotReady"
    assert f"the IMEX daemon is NotReady on {nodes[1]}" in found.get("message", "")
    assert "(1/2 nodes Ready)" in found.get("message", "")
    _, failed_nodes = node_results(kube, _workflow(kube, sim_namespace, name))
    assert [f["name"] for f in failed_nodes] == [nodes[1]], "only the node whose IMEX daemon never joined is blamed"


def test_a_cluster_without_the_compute_domain_api_fails_at_once_naming_the_driver(simcluster, sim_namespace, kube, controller):
    from nvcre.testing.crds import apply_crds
    from nvcre.testing.simdomains import compute_domain_crd

    nodes = simcluster.add_nodes(profile="gb200", count=2, prefix=f"{sim_namespace}-nocd")
    crd = compute_domain_crd()
    with simcluster.api_client() as api_client:
        from kubernetes import client

        extensions = client.ApiextensionsV1Api(api_client)
        extensions.delete_custom_resource_definition(crd["metadata"]["name"])
        try:
            eventually(lambda: not _served(api_client), timeout=60, what="the ComputeDomain API to go")
            name = "no-cd-api"
            kube.create(certification(sim_namespace, name, nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
            life, reason, message = wait_terminal(kube, CERTIFICATIONS, name, sim_namespace, timeout=60)
            wf = _workflow(kube, sim_namespace, name)
        finally:
            apply_crds(api_client, [crd])
    assert life == cond.FAILED
    found = cond.condition(wf["status"], cond.FAILED) or {}
    assert found.get("reason") == "DependencyCreationError"
    text = found.get("message", "")
    assert "does not serve the API resource.nvidia.com/v1beta1" in text, text
    assert "k8s-dra-driver-gpu" in text and "enableMNNVL: false" in text, text
    assert "404 page not found" not in text


def _served(api_client) -> bool:
    from kubernetes import client

    return any(g.name == "resource.nvidia.com" for g in client.ApisApi(api_client).get_api_versions().groups)


def test_the_renders_nic_fallback_is_an_event_on_the_certification(simcluster, sim_namespace, kube, controller):
    """On-prem GB200 nodes with no RDMA resource: the render requests no NIC and says so; the
    controller reports that note as NVCRE's Normal NICResourceDetection Event, once."""
    from nvcre.runtime.kube.resources import EVENTS

    nodes = simcluster.add_nodes(profile="gb200", count=2, prefix=f"{sim_namespace}-nonic", nic="")
    name = "no-nic"
    kube.create(certification(sim_namespace, name, nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    wait_terminal(kube, CERTIFICATIONS, name, sim_namespace, timeout=180)
    events = [
        e
        for e in kube.list(EVENTS, sim_namespace).items
        if (e.get("involvedObject") or {}).get("kind") == "Certification" and e.get("reason") == "NICResourceDetection"
    ]
    # one occurrence: a repeat would be folded into the first Event's series
    assert len(events) == 1 and (events[0].get("series") or {}).get("count", 1) == 1 and events[0]["type"] == "Normal", events
    assert events[0]["message"].startswith("NIC resource not chosen: no target node has an rdma/*")
