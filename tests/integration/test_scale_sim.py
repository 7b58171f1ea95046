"""The controller's API request budget on the simulated GPU cluster: at most 16 requests per Job.

(Measured 13.8 on an idle 2-core machine; the budget leaves room for a loaded one, where cache
lag costs the odd conflict and refetch.)

One Certification, ``communication/nccl-all-reduce`` in pairs over 40 simulated nodes (20
Jobs), reconciled by an in-process controller with the product's intervals. Every request the
controller's client sends is counted client side (``ApiServerClient.requests``); the test's own
reads go through a second client, so they are not in the count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.accounting import RequestCounter
from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.resources import CERTIFICATIONS, JOBS

pytestmark = [pytest.mark.integration, pytest.mark.sim]

NODES = 40
NODES_PER_JOB = 2
REQUESTS_PER_JOB = 16


@pytest.fixture
def reader(simcluster) -> Iterator[ApiServerClient]:
    client = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def counted_controller(simcluster, sim_namespace) -> Iterator[Controller]:
    kube = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    config = ControllerConfig(namespace=sim_namespace, metrics_address="0", health_address="0", leader_elect=False)
    controller = Controller(kube, config).start()
    try:
        yield controller
    finally:
        controller.stop()
        kube.close()


def test_a_forty_node_twenty_job_certification_costs_at_most_sixteen_requests_per_job(
    simcluster, sim_namespace, reader, counted_controller
):
    nodes = simcluster.add_nodes(profile="h100", count=NODES, prefix=f"{sim_namespace}-scale", workers=4)
    counter = counted_controller.kube.requests  # type: ignore[attr-defined]
    assert isinstance(counter, RequestCounter)
    assert counted_controller.synced()
    time.sleep(1.0)  # the first sweep over the (empty) caches
    before = counter.snapshot()
    reader.create(
        {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Certification",
            "metadata": {"name": "budget", "namespace": sim_namespace},
            "spec": {
                "target": {"nodeNames": nodes},
                "timeoutPerJob": "5m",
                "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": NODES_PER_JOB}}],
            },
        }
    )
    deadline = time.monotonic() + 240
    life = None
    while time.monotonic() < deadline:
        life = cond.lifecycle(reader.get(CERTIFICATIONS, "budget", sim_namespace).get("status"))
        if life in (cond.SUCCEEDED, cond.FAILED):
            break
        time.sleep(1.0)
    assert life == cond.SUCCEEDED
    time.sleep(1.0)  # let the last writes that follow the verdict land in the count
    spent = RequestCounter.difference(counter.snapshot(), before)
    jobs = reader.list(JOBS, sim_namespace).items
    assert len(jobs) == NODES // NODES_PER_JOB
    per_job = sum(spent.values()) / len(jobs)
    detail = ", ".join(f"{verb} {resource}={count}" for (verb, resource), count in sorted(spent.items()))
    print(f"{per_job:.1f} requests per Job: {detail}")  # shown with -s
    assert per_job <= REQUESTS_PER_JOB, f"{per_job:.1f} requests per Job: {detail}"
    # each Job, TrainJob and BandwidthMeasurement created exactly once: a reconcile that runs
    # before its own create (or the status write recording it) reached the cache must not
    # create again; nothing probes a measurement nobody asked for; every Job's log is read at
    # least once, when it ends
    assert spent.get(("create", "jobs")) == len(jobs), detail
    assert spent.get(("create", "trainjobs")) == len(jobs), detail
    assert spent.get(("create", "bandwidthmeasurements")) == len(jobs), detail
    assert ("get", "goodputmeasurements") not in spent, detail
    assert spent.get(("get", "pods/log"), 0) >= len(jobs), detail
