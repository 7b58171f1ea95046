"""A platform engineer's day on the simulated GPU cluster: run --wait, report, status, MCP, delete.

The controller runs in-process, scoped to the test's namespace; ``nvcrectl`` runs as the user
would run it, as a subprocess with the cluster's kubeconfig.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.integration_helpers import fast_settings

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def controller(simcluster, sim_namespace) -> Iterator[object]:
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.kube.client import ApiServerClient

    kube = ApiServerClient.from_kubeconfig(str(simcluster.kubeconfig))
    settings = fast_settings()
    config = ControllerConfig(
        namespace=sim_namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=settings
    )
    ctl = Controller(kube, config).start()
    try:
        yield ctl
    finally:
        ctl.stop()
        kube.close()


def nvcrectl(simcluster, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_run_wait_prints_a_passed_report_and_report_prints_it_again(simcluster, sim_namespace, controller, tmp_path):
    simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-ok")
    results = tmp_path / "r.json"
    run = nvcrectl(
        simcluster,
        "certification",
        "run",
        "--category",
        "communication/nccl-all-reduce",
        "-n",
        sim_namespace,
        "--name",
        "day-one",
        "--grant-run-access",
        "--wait",
        "--timeout",
        "4m",
        "--results-file",
        str(results),
    )
    assert run.returncode == 0, run.stderr
    assert "Certification day-one created in namespace" in run.stderr
    assert "[watch] communication/nccl-all-reduce: Succeeded" in run.stderr
    assert "[watch] Certification succeeded." in run.stderr
    report = run.stdout
    assert "Certification Report" in report and "communication/nccl-all-reduce" in report
    assert "Result:       PASSED" in report
    assert "Bandwidth:" in report
    assert all(len(line) == 66 for line in report.splitlines() if line.startswith(("│", "┌", "└", "├")))
    data = json.loads(results.read_text())
    assert data["categories"][0]["status"] == "Succeeded"

    again = nvcrectl(simcluster, "certification", "report", "day-one", "-n", sim_namespace)
    assert again.returncode == 0, again.stderr
    assert again.stdout == report

    wrong = nvcrectl(simcluster, "certification", "report", "day-one")
    assert wrong.returncode == 1
    assert f"pass -n {sim_namespace}" in wrong.stderr

    status = nvcrectl(simcluster, "certification", "status", "day-one", "-n", sim_namespace, "-o", "json")
    assert json.loads(status.stdout)["phase"] == "Succeeded"

    tools = asyncio.run(asyncio.wait_for(_mcp(simcluster, sim_namespace), 90))
    # NVCRE's MCP shapes
    assert tools["status"]["result"] == "PASSED"
    assert [(c["domain"], c["variant"], c["status"]) for c in tools["status"]["categories"]] == [
        ("communication", "nccl-all-reduce", "Succeeded")
    ]
    assert tools["report"] == {"report": data}
    assert tools["failed"] == {"name": "day-one", "namespace": sim_namespace, "failedNodes": []}

    delete = nvcrectl(simcluster, "certification", "delete", "day-one", "-n", sim_namespace)
    assert delete.returncode == 0, delete.stderr


async def _mcp(simcluster, namespace: str) -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nvcre.cli.main", "mcp", "serve"],
        cwd=str(REPO),
        env={**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out = {}
        for key, tool in (("status", "get_certification_status"), ("report", "get_certification_report"), ("failed", "list_failed_nodes")):
            result = await session.call_tool(tool, {"name": "day-one", "namespace": namespace})
            assert not result.is_error, result.content
            out[key] = result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)
            if isinstance(out[key], dict) and set(out[key]) == {"result"}:
                out[key] = out[key]["result"]
        return out


def test_run_wait_with_a_crashing_node_prints_failed_naming_it(simcluster, sim_namespace, controller, tmp_path):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-bad")
    simcluster.set_fault(nodes[1], "nccl-crash")
    cert = tmp_path / "cert.yaml"
    cert.write_text(
        "apiVersion: nvcre.nvidia.com/v1alpha1\nkind: Certification\n"
        f"metadata: {{name: crashy, namespace: {sim_namespace}}}\n"
        "spec:\n"
        f"  target: {{nodeNames: [{nodes[0]}, {nodes[1]}]}}\n"
        "  nodesPerJob: 1\n"
        "  timeoutPerJob: 40s\n"
        "  categories: [{domain: communication, variant: nccl-all-reduce}]\n"
    )
    results = tmp_path / "r.json"
    junit = tmp_path / "junit.xml"
    run = nvcrectl(
        simcluster,
        "certification",
        "run",
        "--cert-file",
        str(cert),
        "--grant-run-access",
        "--wait",
        "--timeout",
        "4m",
        "--results-file",
        str(results),
        "--junit",
        str(junit),
    )
    assert run.returncode == 1, run.stderr
    assert "[watch] Certification failed." in run.stderr
    assert f"Failed nodes: {nodes[1]}" in run.stderr
    assert "Result:       FAILED" in run.stdout  # the report on stdout, progress on stderr
    from junitparser import Failure, JUnitXml

    (suite,) = list(JUnitXml.fromfile(str(junit)))
    (case,) = list(suite)
    (failure,) = case.result
    assert isinstance(failure, Failure) and nodes[1] in json.loads(failure.text)["failedGroups"][0]["nodes"]
    data = json.loads(results.read_text())
    details = data["failedNodeDetails"]
    assert [d["name"] for d in details] == [nodes[1]]
    assert details[0]["reason"] == "WorkloadFailed"
    # The launcher crashes the same way twice on the node: the group ends then, well inside its
    # 40 s budget, and the report says why and keeps the crash log as the failure excerpt.
    assert "Job exceeded timeoutPerJob" not in run.stdout
    assert f"times on node {nodes[1]} with exit code" in json.dumps(data)
    assert f"Node: {nodes[1]}" in run.stdout


def test_cluster_info_and_render_dry_run_read_the_live_cluster(simcluster, sim_namespace):
    simcluster.add_nodes(profile="h100", count=2, platform="aws", prefix=f"{sim_namespace}-aws")
    info = nvcrectl(simcluster, "cluster", "info", "-o", "json")
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert summary["platform"] == "aws" and summary["detection"]["platform"]["source"] == "detected"
    assert summary["gpuArchitecture"] == "h100"

    cert = REPO / "golden" / "render" / "aws-h100-all-reduce" / "certification.yaml"
    offline = nvcrectl(simcluster, "certification", "render", str(cert), "--platform", "aws", "--gpu-arch", "h100")
    live = nvcrectl(simcluster, "certification", "render", str(cert), "--dry-run")
    assert live.returncode == 0, live.stderr
    assert "Read " in live.stderr and " nodes and " in live.stderr
    assert "efa" in live.stdout.lower()
    # The same Workflows, except where the facts were detected instead of supplied.
    assert '"source":"detected"' in live.stdout
    assert offline.returncode == 0 and '"source":"detected"' not in offline.stdout

    both = nvcrectl(simcluster, "certification", "render", str(cert), "--dry-run", "--gpu-arch", "h100")
    assert both.returncode == 2
    assert "cannot combine with --gpu-arch" in both.stderr and both.stdout == ""
