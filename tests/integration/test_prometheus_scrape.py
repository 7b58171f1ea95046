"""A real Prometheus scraping the controller's secured endpoint with a ServiceAccount token bound
to nvcre-metrics-reader and evaluating the shipped rules: a healthy certification leaves every
alert quiet; an Xid on one node fails the next certification and its alerts fire. After a
training certification and a hand-applied Workflow over two racks (one with an Xid) with the
rack as topology key, Prometheus itself holds every family docs/metrics.md lists, each with
exactly the label names listed there.

Prometheus and the controller (``python -m nvcre.runtime``) run as their own processes and are
stopped whatever happens. Prometheus comes from testing/gobuild/build.py (``--tools-only
--tools prometheus``, built here when Go is there; without both the tests skip, except under
CI=true, where they fail).
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.install.monitoring import ALERT_RULES_FILE, alert_rule_groups
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, WORKFLOWS
from nvcre.testing.metrics_reader import grant_metrics_reader, request_token, write_token
from nvcre.testing.prometheus import Prometheus, ScrapeTarget
from tests.gotools import go_tool
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import ControllerProcess, must_scrape, running_controller

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
#: The controller's family NVCREHardwareFailure reads.
FAILED_NODES_FAMILY = "nvcre_job_failed_nodes"
METRICS_DOC = REPO / "docs" / "metrics.md"
#: Documented families this run cannot show, and why. Keep it short: every other family must be
#: in Prometheus after the run.
NOT_PRODUCED = {
    "nvcre_nccl_busbw_gbs": "exists only while a bandwidth measurement holds provisional results; "
    "a simulated NCCL run ends within one sample interval (30 s), so no provisional sample is taken",
    "nvcre_nccl_algbw_gbs": "same as nvcre_nccl_busbw_gbs",
    "leader_election_master_status": "the controller under test runs without leader election (--no-leader-elect)",
    "nvcre_nccl_measurement_failed": "exists only for a corrupted, failed or unfinished collective run, which this "
    "healthy run does not play (tests/integration/test_corrupted_collective_sim.py reads it)",
    "nvcre_goodput_measurement_failed": "exists only for a training run whose loss went non-finite, which this run "
    "does not play (tests/integration/test_diverged_training_sim.py reads it)",
}
#: The families the doc lists, by prefix: NVCRE's, and controller-runtime's standard ones.
SERVED = r"nvcre_.+|controller_runtime_.+|workqueue_.+|rest_client_.+|leader_election_.+|process_.+"
#: Labels Prometheus adds to every series it scrapes (``job`` is the target's unless the family
#: carries its own, which ``honor_labels`` keeps).
TARGET_LABELS = {"instance", "job"}


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
                with Prometheus(binary, workdir / "prometheus", [target], [ALERT_RULES_FILE], interval="1s") as prometheus:
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


def documented_families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """``{family: (type, label names)}`` from the tables of docs/metrics.md.

    A table with a Labels column gives each row's backquoted label names (``same``: the row
    above's); a table without one (Goodput) takes them from the paragraph just before it.
    """
    families: dict[str, tuple[str, frozenset[str]]] = {}
    header: list[str] = []
    paragraph: set[str] = set()
    prose: frozenset[str] = frozenset()
    previous: frozenset[str] = frozenset()
    for line in text.splitlines():
        if not line.startswith("|"):
            header = []
            if line.strip():
                paragraph |= set(re.findall(r"`([a-z_]+)`", line))
            elif paragraph:
                prose, paragraph = frozenset(paragraph), set()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = [c.lower() for c in cells]
            continue
        if set(cells[0]) <= set("-: "):
            continue
        family = cells[0].strip("`")
        kind = cells[header.index("type")]
        if "labels" in header:
            raw = cells[header.index("labels")]
            labels = previous if raw == "same" else frozenset(re.findall(r"`([a-z_]+)`", raw))
        else:
            labels = prose
        previous = labels
        families[family] = (kind, labels)
    return families


def test_the_doc_tables_parse() -> None:
    """The parser reads what the doc says (a guard against a table it silently skips)."""
    families = documented_families(METRICS_DOC.read_text())
    assert families["nvcre_goodput_ratio"] == ("gauge", frozenset({"namespace", "measurement", "job", "workflow"}))
    assert families["nvcre_nccl_algbw_gbs"] == families["nvcre_nccl_busbw_gbs"]
    assert families["nvcre_reconcile_duration_seconds"] == ("histogram", frozenset({"namespace", "job", "workflow"}))
    assert families["nvcre_node_events_total"] == ("counter", frozenset({"result"}))
    assert families["workqueue_depth"] == ("gauge", frozenset({"name", "controller"}))
    assert families["process_resident_memory_bytes"] == ("gauge", frozenset())
    assert families["nvcre_goodput_measurement_failed"] == ("gauge", frozenset({"namespace", "measurement", "job", "workflow", "reason"}))
    assert len(families) == 57 and set(NOT_PRODUCED) <= set(families)


def _one_sample_per_second(spec: Any) -> None:
    """Every ``goodputMeasurement`` in a Workflow spec samples each second, so the 4 s simulated
    training is measured while it runs (its per-attempt gauges exist only then)."""
    if isinstance(spec, dict):
        if isinstance(spec.get("goodputMeasurement"), dict):
            spec["goodputMeasurement"]["sampleInterval"] = "1s"
        for value in spec.values():
            _one_sample_per_second(value)
    elif isinstance(spec, list):
        for value in spec:
            _one_sample_per_second(value)


RACK = "nvcre.test/rack"


@pytest.fixture(scope="module")
def every_kind_of_run(stack: Stack, simcluster: Any, xid_run: tuple[str, str]) -> list[str]:
    """A training certification (goodput), then a Workflow applied by hand from its spec over
    two racks with one-second goodput samples and the rack as topology key: an Xid fails the
    second rack's group, so both topology families show, and provisional goodput too. Returns
    the racks' nodes, first rack first, once both runs have finished."""
    from kubernetes import client

    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{stack.namespace}-tr")
    training = _certification(stack.namespace, "training", nodes)
    training["spec"]["categories"] = [{"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}}]
    training["spec"]["target"] = {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]}
    stack.kube.create(training)
    assert _finished(stack.kube, stack.namespace, "training") == cond.SUCCEEDED
    (workflow,) = [
        w
        for w in stack.kube.list(WORKFLOWS, stack.namespace).items
        if (w["metadata"].get("labels") or {}).get("nvcre.nvidia.com/certification") == "training"
    ]

    racks = simcluster.add_nodes(profile="h100", count=4, prefix=f"{stack.namespace}-rack")
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for index, node in enumerate(racks):
            core.patch_node(node, {"metadata": {"labels": {RACK: f"rack-{index // 2}"}}})
    simcluster.set_fault(racks[3], "xid")
    spec = copy.deepcopy(workflow["spec"])
    spec["orchestration"]["target"]["nodeNames"] = racks
    spec["orchestration"]["topology"] = {"topologyKey": RACK}
    _one_sample_per_second(spec)
    manifest = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "by-hand", "namespace": stack.namespace},
    }
    stack.kube.create({**manifest, "spec": spec})

    def workflow_done() -> str | None:
        life = cond.lifecycle(stack.kube.get(WORKFLOWS, "by-hand", stack.namespace).get("status") or {})
        return life if life in (cond.SUCCEEDED, cond.FAILED) else None

    eventually(workflow_done, timeout=240, what="the hand-applied Workflow to finish")
    time.sleep(3)  # the last state the controller serves, scraped at least twice
    return racks


def _stored_names(family: str, kind: str) -> list[str]:
    """The series names Prometheus stores for one family of the text format."""
    return [f"{family}_bucket", f"{family}_sum", f"{family}_count"] if kind == "histogram" else [family]


def test_prometheus_holds_every_documented_family_with_nvcres_label_names(stack: Stack, every_kind_of_run: list[str]) -> None:
    documented = documented_families(METRICS_DOC.read_text())
    held = stack.prometheus.series(f'{{__name__=~"{SERVED}"}}')
    by_name: dict[str, list[dict[str, str]]] = {}
    for labels in held:
        by_name.setdefault(labels["__name__"], []).append(labels)

    missing, wrong = [], []
    for family, (kind, labels) in sorted(documented.items()):
        if family in NOT_PRODUCED:
            continue
        for name in _stored_names(family, kind):
            series = by_name.get(name, [])
            if not series:
                missing.append(name)
                continue
            expected = set(labels) | TARGET_LABELS | ({"le"} if name.endswith("_bucket") else set())
            # Prometheus stores a label with an empty value as no label (a Workflow outside any
            # Certification has certification=""), so a series may lack a documented label, but
            # every documented label is on some series and no series has another.
            found = {frozenset(set(s) - {"__name__"}) for s in series}
            if frozenset().union(*found) != expected or not all(f <= expected for f in found):
                wrong.append(f"{name}: {sorted(map(sorted, found))}, documented {sorted(expected)}")
            elif "job" not in labels and {s["job"] for s in series} != {"nvcre-metrics-service"}:
                wrong.append(f"{name}: a job label of its own, none documented")
    assert not missing, f"documented families Prometheus never received: {missing}"
    assert not wrong, "label names other than documented:\n" + "\n".join(wrong)

    # And nothing under those names that the doc does not list (no ``_created`` companions either:
    # NVCRE's Go client writes none, and the controller switches the Python client's off).
    stored = {n for family, (kind, _) in documented.items() for n in _stored_names(family, kind)}
    assert set(by_name) - stored == set()
    assert set(stack.prometheus.metric_names()) >= set(by_name)

    # The topology series name the racks as NVCRE does: one series per node, its rack the domain.
    racks = every_kind_of_run
    validated = {s["node"]: s["domain"] for s in by_name["nvcre_topology_validated_nodes"] if s["workflow"] == "by-hand"}
    failed = {s["node"]: s["domain"] for s in by_name["nvcre_topology_failed_nodes"] if s["workflow"] == "by-hand"}
    assert validated == {racks[0]: "rack-0", racks[1]: "rack-0"} and failed == {racks[2]: "rack-1", racks[3]: "rack-1"}
