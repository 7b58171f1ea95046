"""controller-runtime's standard families on the simulated cluster, from the controller as it ships.

One Certification runs to its end; the controller's ``/metrics`` then holds every standard family
the docs list (``controller_runtime_*``, ``workqueue_*``, ``rest_client_requests_total``,
``process_*``) with controller-runtime's label names, and the API answers it counted name the API
server it talked to.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS
from nvcre.runtime.tiers import TIERS
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import running_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

#: family as parsed (counters without ``_total``) -> label names besides ``le``
STANDARD = {
    "controller_runtime_reconcile": {"controller", "result"},
    "controller_runtime_reconcile_errors": {"controller"},
    "controller_runtime_reconcile_time_seconds": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "workqueue_depth": {"name", "controller", "priority"},
    "workqueue_adds": {"name", "controller"},
    "workqueue_retries": {"name", "controller"},
    "workqueue_queue_duration_seconds": {"name", "controller"},
    "workqueue_work_duration_seconds": {"name", "controller"},
    "workqueue_unfinished_work_seconds": {"name", "controller"},
    "workqueue_longest_running_processor_seconds": {"name", "controller"},
    "rest_client_requests": {"code", "method", "host"},
    "process_resident_memory_bytes": set(),
    "process_cpu_seconds": set(),
    "process_open_fds": set(),
}


def _certification(namespace: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "standard", "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
        },
    }


def test_the_standard_families_show_with_controller_runtimes_labels(simcluster: Any, sim_namespace: str, kube: Any, tmp_path: Any) -> None:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-std")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log", "--metrics-secure=false") as controller:
        kube.create(_certification(sim_namespace, nodes))

        def finished() -> str | None:
            life = cond.lifecycle(kube.get(CERTIFICATIONS, "standard", sim_namespace).get("status") or {})
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(finished, timeout=240, what="the Certification to finish") == cond.SUCCEEDED
        url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
    found = {f.name: f for f in text_string_to_metric_families(text)}
    for family, labels in STANDARD.items():
        assert family in found, family
        names = {key for sample in found[family].samples for key in sample.labels if key != "le"}
        assert names == labels, (family, names)
    reconciles = {(s.labels["controller"], s.labels["result"]): s.value for s in found["controller_runtime_reconcile"].samples}
    assert {controller for controller, _ in reconciles} == set(TIERS)
    assert reconciles[("certification", "success")] + reconciles[("certification", "requeue_after")] >= 1
    answers = {(s.labels["code"], s.labels["method"]): s.value for s in found["rest_client_requests"].samples}
    assert answers.get(("200", "GET"), 0) >= 1 and answers.get(("201", "POST"), 0) >= 1, answers
    hosts = {s.labels["host"] for s in found["rest_client_requests"].samples}
    assert len(hosts) == 1 and next(iter(hosts)).startswith("127.0.0.1:"), hosts
    assert found["process_resident_memory_bytes"].samples[0].value > 0
