"""What users and their tools read off a cluster after a run, in NVCRE's shapes.

One Certification runs on the simulated GPU cluster (two nodes, one Job each; an Xid on the
second node fails its Job), then:

- an MCP client starts ``nvcrectl mcp serve`` over stdio as an agent does, lists the tools and
  calls all four; the answers carry NVCRE's keys and values (``{"categories": ...}``,
  ``{"report": ...}`` valid against the report schema beside this file, the status summary and the
  failed-node rows with NVCRE's reasons);
- ``kubectl get -l`` with the label selectors NVCRE's objects carry (``nvcre.nvidia.com/
  certification``, ``category-domain``/``category-variant``, ``workflow``, ``job``) returns
  exactly the run's Workflows, Jobs and ConfigMaps, and each Job's pods while they run (they go
  with the workload). kubectl is built from the same
  Kubernetes source as the test API server (``testing/gobuild/build.py``).

The controller runs in this process and is stopped, and the MCP server and every kubectl are
child processes that end with their call, whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import jsonschema
import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, CONFIGMAPS, JOBS, PODS, WORKFLOWS

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parents[2] / "conformance"
REPO = HERE.parent.parent
SCHEMA = json.loads((HERE / "nvcre-report.schema.json").read_text(encoding="utf-8"))
NAME = "conformance"
CERTIFICATION_LABEL = "nvcre.nvidia.com/certification"
DOMAIN_LABEL = "nvcre.nvidia.com/category-domain"
VARIANT_LABEL = "nvcre.nvidia.com/category-variant"
WORKFLOW_LABEL = "nvcre.nvidia.com/workflow"
JOB_LABEL = "nvcre.nvidia.com/job"
#: The failed-node reasons NVCRE writes (its FailedNode.reason enum).
NVCRE_NODE_REASONS = {"HardwareFailureDetected", "ThresholdViolation", "WorkloadFailed"}
TOOLS = ["get_certification_report", "get_certification_status", "list_categories", "list_failed_nodes"]

T = TypeVar("T")


def eventually(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@dataclass
class Run:
    """The finished run: its namespace, nodes, the failed node and the kubeconfig."""

    namespace: str
    nodes: list[str]
    bad: str
    kubeconfig: Path
    kube: Any
    #: per Job, the pods ``kubectl get pods -l nvcre.nvidia.com/job=<job>`` listed while they ran,
    #: when they were exactly the pods the API server listed just before and just after
    pods_by_kubectl: dict[str, set[str]]


def _certification(namespace: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "nodesPerJob": 1,
            "timeoutPerJob": "2m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
        },
    }


@pytest.fixture(scope="module")
def kubectl_binary() -> str | None:
    """kubectl from the control-plane build (built now when Go is there), else None."""
    from nvcre.testing.binaries import build_module

    build = build_module()
    if build.missing_components(["kubectl"]):
        if build.find_go() is None:
            return None
        try:
            build.build(["kubectl"])
        except build.BuildError as exc:
            pytest.fail(f"building kubectl failed: {exc}", pytrace=False)
    return str(build.binary_path("kubectl"))


def _kubectl_get(binary: str, kubeconfig: Path, namespace: str, kind: str, selector: str) -> list[dict[str, Any]]:
    argv = [binary, "--kubeconfig", str(kubeconfig), "get", kind, "-n", namespace, "-l", selector, "-o", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{' '.join(argv[3:])}: {done.stderr}"
    return list(json.loads(done.stdout)["items"])


class PodWatch:
    """While the run runs: for each Job with pods, ``kubectl get pods -l`` once the API server
    lists the same pods before and after it (the workload's pods go when it ends)."""

    def __init__(self, kube: Any, binary: str | None, kubeconfig: Path, namespace: str) -> None:
        self.kube, self.binary, self.kubeconfig, self.namespace = kube, binary, kubeconfig, namespace
        self.confirmed: dict[str, set[str]] = {}

    def _listed(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for pod in self.kube.list(PODS, self.namespace).items:
            job = (pod["metadata"].get("labels") or {}).get(JOB_LABEL)
            if job and not pod["metadata"].get("deletionTimestamp"):
                out.setdefault(job, set()).add(pod["metadata"]["name"])
        return out

    def look(self) -> None:
        if self.binary is None:
            return
        for job, before in self._listed().items():
            if job in self.confirmed:
                continue
            names = {
                p["metadata"]["name"] for p in _kubectl_get(self.binary, self.kubeconfig, self.namespace, "pods", f"{JOB_LABEL}={job}")
            }
            if names == before == self._listed().get(job):
                self.confirmed[job] = names


@pytest.fixture(scope="module")
def run(simcluster: Any, kubectl_binary: str | None) -> Iterator[Run]:
    from kubernetes import client

    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.runtime.reconcile.context import Settings

    namespace = f"conf-{uuid.uuid4().hex[:8]}"
    before = set(simcluster.nodes)
    kube = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    settings = Settings(
        poll_interval=1.0, pod_drain_grace=30.0, node_discovery_timeout=10.0, measurement_timeout=30.0, final_read_grace=10.0
    )
    config = ControllerConfig(
        namespace=namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=settings
    )
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": namespace}})
        controller = None
        try:
            controller = Controller(kube, config).start()
            nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{namespace}-n")
            simcluster.set_fault(nodes[1], "xid")
            kube.create(_certification(namespace, nodes))
            pods = PodWatch(kube, kubectl_binary, Path(simcluster.kubeconfig), namespace)

            def finished() -> str | None:
                pods.look()
                life = cond.lifecycle(kube.get(CERTIFICATIONS, NAME, namespace).get("status") or {})
                return life if life in (cond.SUCCEEDED, cond.FAILED) else None

            assert eventually(finished, 240, f"Certification {NAME} to finish") == cond.FAILED
            yield Run(namespace, nodes, nodes[1], Path(simcluster.kubeconfig), kube, pods.confirmed)
        finally:
            if controller is not None:
                controller.stop()
            core.delete_namespace(namespace, propagation_policy="Background")
            added = [n for n in simcluster.nodes if n not in before]
            if added:
                simcluster.remove_nodes(added)
            kube.close()


# --- MCP, from a real client session ------------------------------------------------------------


def _nvcrectl() -> str:
    """The ``nvcrectl`` console script installed beside this interpreter (what users run)."""
    script = Path(sys.executable).parent / "nvcrectl"
    if not script.is_file():
        pytest.fail(f"{script} is missing: install the package (make setup)", pytrace=False)
    return str(script)


def _answer(result: Any) -> Any:
    """A tool's answer as the JSON text an MCP client reads (NVCRE returns its answers as text)."""
    assert not result.is_error, result.content
    return json.loads("".join(getattr(c, "text", "") for c in result.content))


async def _session(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=_nvcrectl(), args=["mcp", "serve", "--kubeconfig", str(kubeconfig)], cwd=str(REPO), env={**os.environ}
    )
    ref = {"name": NAME, "namespace": namespace}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        missing = await session.call_tool("list_failed_nodes", {"name": "no-such-certification", "namespace": namespace})
        return {
            "tools": {t.name: t for t in listed.tools},
            "categories": _answer(await session.call_tool("list_categories", {})),
            "status": _answer(await session.call_tool("get_certification_status", ref)),
            "report": _answer(await session.call_tool("get_certification_report", ref)),
            "failed": _answer(await session.call_tool("list_failed_nodes", ref)),
            "missing": missing,
        }


@pytest.fixture(scope="module")
def mcp_answers(run: Run) -> dict[str, Any]:
    # the client ends the server (closes its stdin, then terminates it) when the session closes
    return asyncio.run(asyncio.wait_for(_session(run.kubeconfig, run.namespace), 120))


def test_the_mcp_server_offers_nvcres_four_tools(mcp_answers: dict[str, Any]) -> None:
    tools = mcp_answers["tools"]
    assert sorted(tools) == TOOLS
    for name in TOOLS[:2] + TOOLS[3:]:
        schema = tools[name].input_schema
        assert schema["required"] == ["name"] and {"name", "namespace"} <= set(schema["properties"]), (name, schema)


def test_list_categories_answers_categories_with_domain_and_variant(mcp_answers: dict[str, Any]) -> None:
    answer = mcp_answers["categories"]
    assert set(answer) == {"categories"}
    assert all(isinstance(c["domain"], str) and isinstance(c["variant"], str) for c in answer["categories"])
    listed = {(c["domain"], c["variant"]) for c in answer["categories"]}
    assert {("communication", "nccl-all-reduce"), ("diagnostics", "dcgm-level4"), ("training", "nemotron5-8b")} <= listed


def test_status_summarises_the_failed_run_as_nvcre_does(mcp_answers: dict[str, Any], run: Run) -> None:
    status = mcp_answers["status"]
    assert (status["name"], status["namespace"], status["result"]) == (NAME, run.namespace, "FAILED")
    assert [{k: c[k] for k in ("domain", "variant", "status")} for c in status["categories"]] == [
        {"domain": "communication", "variant": "nccl-all-reduce", "status": "Failed"}
    ]
    assert status["failedNodes"] == [run.bad]


def test_status_carries_the_conditions_and_total_nodes(mcp_answers: dict[str, Any], run: Run) -> None:
    status = mcp_answers["status"]
    assert status["totalNodes"] == len(run.nodes)
    assert [(c["type"], c["status"]) for c in status["conditions"] if c["status"] == "True"] == [("Failed", "True")]
    assert all(set(c) <= {"type", "status", "reason", "message"} for c in status["conditions"])


def test_the_report_is_nvcres_report_under_report(mcp_answers: dict[str, Any], run: Run) -> None:
    answer = mcp_answers["report"]
    assert set(answer) == {"report"}
    report = answer["report"]
    jsonschema.validate(report, SCHEMA)
    assert (report["name"], report["result"], report["failedNodes"]) == (NAME, "FAILED", [run.bad])
    printed = subprocess.run(
        [_nvcrectl(), "certification", "report", NAME, "-n", run.namespace, "-o", "json", "--kubeconfig", str(run.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert printed.returncode in (0, 1), printed.stderr  # a FAILED certification's report exits 1
    assert json.loads(printed.stdout) == report, "the tool answers what `certification report -o json` prints"


def test_failed_nodes_are_rows_with_nvcres_reasons(mcp_answers: dict[str, Any], run: Run) -> None:
    failed = mcp_answers["failed"]
    assert set(failed) == {"name", "namespace", "failedNodes"} and (failed["name"], failed["namespace"]) == (NAME, run.namespace)
    rows = failed["failedNodes"]
    assert rows and {row["name"] for row in rows} == {run.bad}
    assert all(set(row) <= {"name", "reason", "message"} and row["reason"] in NVCRE_NODE_REASONS for row in rows), rows
    assert "HardwareFailureDetected" in {row["reason"] for row in rows}
    assert rows == sorted(rows, key=lambda r: (r["name"], r["reason"], r.get("message", "")))


def test_an_unknown_certification_is_a_tool_error_not_a_crash(mcp_answers: dict[str, Any]) -> None:
    missing = mcp_answers["missing"]
    assert missing.is_error
    assert "no-such-certification" in "".join(getattr(c, "text", "") for c in missing.content)


# --- kubectl get -l ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kubectl(kubectl_binary: str | None, run: Run) -> Callable[..., list[dict[str, Any]]]:
    if kubectl_binary is None:
        message = "kubectl is not built and there is no Go toolchain (`python -m nvcre.testing.gobuild.build --components kubectl`)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    binary = kubectl_binary

    def get(kind: str, selector: str) -> list[dict[str, Any]]:
        return _kubectl_get(binary, run.kubeconfig, run.namespace, kind, selector)

    return get


def _names(items: list[dict[str, Any]]) -> set[str]:
    return {item["metadata"]["name"] for item in items}


def test_kubectl_finds_a_certifications_workflows_by_its_labels(kubectl: Any, run: Run) -> None:
    status = run.kube.get(CERTIFICATIONS, NAME, run.namespace)["status"]
    expected = {c["workflowRef"]["name"] for c in status["categoryStatuses"]}
    assert len(expected) == 1
    assert _names(kubectl("workflows.nvcre.nvidia.com", f"{CERTIFICATION_LABEL}={NAME}")) == expected
    category = f"{CERTIFICATION_LABEL}={NAME},{DOMAIN_LABEL}=communication,{VARIANT_LABEL}=nccl-all-reduce"
    assert _names(kubectl("workflows.nvcre.nvidia.com", category)) == expected
    assert kubectl("workflows.nvcre.nvidia.com", f"{CERTIFICATION_LABEL}=another") == []


def test_kubectl_finds_a_workflows_jobs_and_configmaps(kubectl: Any, run: Run) -> None:
    (workflow,) = [w for w in run.kube.list(WORKFLOWS, run.namespace).items if w["metadata"]["labels"].get(CERTIFICATION_LABEL) == NAME]
    name = workflow["metadata"]["name"]
    jobs = {g["jobRef"]["name"] for g in workflow["status"]["orchestration"]["groups"] if g.get("jobRef")}
    assert len(jobs) == len(run.nodes)
    assert _names(kubectl("jobs.nvcre.nvidia.com", f"{WORKFLOW_LABEL}={name}")) == jobs
    assert _names(kubectl("jobs.nvcre.nvidia.com", f"{WORKFLOW_LABEL}={name}")) == {
        j["metadata"]["name"] for j in run.kube.list(JOBS, run.namespace).items
    }

    maps = [c for c in run.kube.list(CONFIGMAPS, run.namespace).items if (c["metadata"].get("labels") or {}).get(WORKFLOW_LABEL) == name]
    assert maps, "the run wrote ConfigMaps labelled with its Workflow"
    assert _names(kubectl("configmaps", f"{WORKFLOW_LABEL}={name}")) == _names(maps)


def test_kubectl_found_each_jobs_pods_while_they_ran(kubectl: Any, run: Run) -> None:
    """The workload's pods go when it ends, so they were listed while the run ran (see PodWatch)."""
    (workflow,) = [w for w in run.kube.list(WORKFLOWS, run.namespace).items if w["metadata"]["labels"].get(CERTIFICATION_LABEL) == NAME]
    jobs = {g["jobRef"]["name"] for g in workflow["status"]["orchestration"]["groups"] if g.get("jobRef")}
    assert run.pods_by_kubectl, "kubectl never listed a Job's pods while they ran"
    assert set(run.pods_by_kubectl) <= jobs
    assert all(names for names in run.pods_by_kubectl.values())
