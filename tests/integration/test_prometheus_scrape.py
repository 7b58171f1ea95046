"""A real Prometheus scraping the controller's secured endpoint with a ServiceAccount token bound
to nvcre-metrics-reader and evaluating the shipped rules: a healthy certification leaves every
alert quiet; an Xid on one node fails the next certification and its alerts fire.

Prometheus and the controller (``python -m nvcre.runtime``) run as their own processes and are
stopped whatever happens. Prometheus comes from tests/controlplane/build.py (``--tools-only
--tools prometheus``, built here when Go is there; without both the tests skip, except under
CI=true, where they fail).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gotools import go_tool
from integration_helpers import eventually
from secure_metrics import ControllerProcess, must_scrape, running_controller

from nvcre.compiler.install.monitoring import ALERT_RULES_FILE, alert_rule_groups
from nvcre.runtime.kube.resources import CERTIFICATIONS
from nvcre.runtime.reconcile import conditions as cond
from nvcre.testing.metrics_reader import grant_metrics_reader, request_token, write_token
from nvcre.testing.prometheus import Prometheus, ScrapeTarget

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
#: The controller's family NVCREHardwareFailure reads.
FAILED_NODES_FAMILY = "nvcre_job_failed_nodes"


def _prometheus_binary(request: pytest.FixtureRequest) -> Path:
    return go_tool(request, "prometheus", "prometheus")


def _certification(namespace: str, name: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
        },
    }


def _finished(kube: Any, namespace: str, name: str, timeout: float = 240.0) -> str:
    def done() -> str | None:
        life = cond.lifecycle(kube.get(CERTIFICATIONS, name, namespace).get("status") or {})
        return life if life in (cond.SUCCEEDED, cond.FAILED) else None

    return str(eventually(done, timeout=timeout, what=f"Certification {name} to finish"))


class Stack:
    """The namespace, its kube client, the controller, Prometheus, and a reader token."""

    def __init__(self, namespace: str, kube: Any, controller: ControllerProcess, prometheus: Prometheus, token: str) -> None:
        self.namespace = namespace
        self.kube = kube
        self.controller = controller
        self.prometheus = prometheus
        self.token = token

    def active(self) -> list[dict[str, Any]]:
        """Alerts pending or firing, other than for other tests' namespaces."""
        return [a for a in self.prometheus.alerts() if (a.get("labels") or {}).get("namespace") in (None, self.namespace)]


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, simcluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from kubernetes import client

    from nvcre.runtime.kube.client import ApiServerClient

    binary = _prometheus_binary(request)
    workdir = tmp_path_factory.mktemp("prometheus-stack")
    namespace = f"prom-{uuid.uuid4().hex[:8]}"
    before = set(simcluster.nodes)
    kube = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": namespace}})
        try:
            grant_metrics_reader(kube, namespace, "prometheus")
            token = request_token(simcluster.kubeconfig, namespace, "prometheus")
            token_file = write_token(token, workdir / "token")
            with running_controller(simcluster.kubeconfig, namespace, workdir / "controller.log") as controller:
                target = ScrapeTarget(f"127.0.0.1:{controller.metrics_port}", token_file=token_file)
                with Prometheus(binary, workdir / "prometheus", [target], [ALERT_RULES_FILE], interval="2s") as prometheus:
                    yield Stack(namespace, kube, controller, prometheus, token)
        finally:
            core.delete_namespace(namespace, propagation_policy="Background")
            deadline = time.monotonic() + 20
            while core.list_namespaced_pod(namespace).items and time.monotonic() < deadline:
                time.sleep(0.25)
            added = [n for n in simcluster.nodes if n not in before]
            if added:
                simcluster.remove_nodes(added)
            kube.close()


def test_prometheus_scrapes_the_secured_endpoint_and_loads_every_shipped_rule(stack: Stack) -> None:
    def up() -> list[dict[str, Any]] | None:
        targets = stack.prometheus.targets_health()
        return targets if targets and all(t.get("health") == "up" for t in targets) else None

    (target,) = eventually(up, timeout=60, what=f"the controller target to be up ({stack.prometheus.targets_health()})")
    assert target["scrapeUrl"].startswith("https://") and target["labels"]["job"] == "nvcre-metrics-service"
    assert stack.prometheus.query('up{job="nvcre-metrics-service"}')[0]["value"][1] == "1"
    shipped = sorted(rule["alert"] for group in alert_rule_groups() for rule in group["rules"])
    assert sorted(stack.prometheus.rule_names()) == shipped


@pytest.fixture(scope="module")
def healthy(stack: Stack, simcluster: Any) -> str:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{stack.namespace}-ok")
    stack.kube.create(_certification(stack.namespace, "healthy", nodes))
    return _finished(stack.kube, stack.namespace, "healthy")


def test_a_healthy_certification_fires_nothing(stack: Stack, healthy: str) -> None:
    assert healthy == cond.SUCCEEDED
    eventually(
        lambda: stack.prometheus.query(f'nvcre_certification_status{{namespace="{stack.namespace}",status="succeeded"}} == 1'),
        timeout=30,
        what="Prometheus to have scraped the succeeded Certification",
    )
    time.sleep(6)  # a few more scrapes and rule evaluations
    assert stack.active() == [], "a healthy run leaves every alert inactive (not even pending)"


@pytest.fixture(scope="module")
def xid_run(stack: Stack, simcluster: Any, healthy: str) -> tuple[str, str]:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{stack.namespace}-xid")
    bad = nodes[1]
    simcluster.set_fault(bad, "xid")  # once work runs there: a GPU health condition, and a cordon
    stack.kube.create(_certification(stack.namespace, "xid", nodes))
    return _finished(stack.kube, stack.namespace, "xid"), bad


def test_an_xid_fails_the_certification_and_its_alert_fires(stack: Stack, xid_run: tuple[str, str]) -> None:
    life, _ = xid_run
    assert life == cond.FAILED

    def firing() -> list[dict[str, Any]]:
        return [a for a in stack.prometheus.firing("NVCRECertificationFailed") if a["labels"].get("certification") == "xid"]

    (alert,) = eventually(firing, timeout=60, what="NVCRECertificationFailed to fire")
    assert alert["labels"]["namespace"] == stack.namespace and alert["labels"]["severity"] == "warning"
    assert not [a for a in stack.prometheus.firing("NVCRECertificationFailed") if a["labels"].get("certification") == "healthy"]


def test_an_xid_fires_nvcre_hardware_failure(stack: Stack, xid_run: tuple[str, str]) -> None:
    """NVCRE's own hardware alert: ``nvcre_job_failed_nodes > 0`` for a minute."""
    life, bad = xid_run
    assert life == cond.FAILED
    if f"# TYPE {FAILED_NODES_FAMILY} gauge" not in must_scrape(stack.controller, stack.token):
        pytest.skip(f"the controller does not export {FAILED_NODES_FAMILY} (NVCREHardwareFailure reads it)")

    def firing() -> list[dict[str, Any]]:
        return [a for a in stack.prometheus.firing("NVCREHardwareFailure") if a["labels"].get("namespace") == stack.namespace]

    alerts = eventually(firing, timeout=150, what="NVCREHardwareFailure to fire (it waits one minute pending)")
    assert all(a["labels"]["workflow"] and a["labels"]["job"] for a in alerts)
    assert sum(float(a["value"]) for a in alerts) >= 1
    nodes = {a["labels"].get("node") for a in stack.prometheus.firing("NVCRENodeHardwareFailure")}
    assert bad in nodes or not stack.prometheus.query("nvcre_hardware_failures_detected_total"), nodes
