"""NVCRE's MCP tool surface as a client sees it: read-only hints, descriptions, errors, omitted fields.

NVCRE's server (``pkg/mcpserver/server.go`` in github.com/NVIDIA/cluster-readiness-engine)
registers every tool with the annotation ``readOnlyHint: true``, titles itself "NVIDIA Cluster
Readiness Engine", describes tools and arguments in its own words, answers a missing
Certification with the tool error ``certification "<n>" not found in namespace "<ns>"`` and
leaves empty optional fields out of its JSON (a condition's ``reason``/``message``, the status
answer's ``failedNodes`` when nothing failed).

A real MCP client session (the ``mcp`` package over stdio) runs against ``nvcrectl mcp serve``,
whose kubeconfig points at a small read-only stand-in for the API server on 127.0.0.1 that holds
one passed Certification.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a server process and a client session: about 15 s on a loaded machine

REPO = Path(__file__).resolve().parent.parent.parent
NAMESPACE = "team-a"
TOOLS = ["get_certification_report", "get_certification_status", "list_categories", "list_failed_nodes"]
CERTIFICATION = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {"name": "cert-pass", "namespace": NAMESPACE, "uid": "0b0f3c1e-0000-4000-8000-000000000001"},
    "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
    "status": {
        "conditions": [
            # metav1.Condition allows an empty message; NVCRE's answer then has no message key
            {
                "type": "Succeeded",
                "status": "True",
                "reason": "AllWorkflowsSucceeded",
                "message": "",
                "lastTransitionTime": "2026-10-21T09:00:00Z",
            }
        ],
        "categoryStatuses": [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded"}],
    },
}


class _ApiServer(BaseHTTPRequestHandler):
    """GET only: the one Certification, empty lists for every collection, 404 for anything else."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
        path = self.path.split("?", 1)[0]
        own = f"/apis/nvcre.nvidia.com/v1alpha1/namespaces/{NAMESPACE}/certifications/cert-pass"
        if path == own:
            self._send(200, CERTIFICATION)
        elif path.strip("/").split("/")[-2:-1] == [NAMESPACE]:  # a collection in the namespace
            self._send(200, {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []})
        else:
            name = path.rsplit("/", 1)[-1]
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": f'"{name}" not found',
            }
            self._send(404, status)

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """The fake API server's access log would only clutter the test's output."""


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    path = tmp_path_factory.mktemp("mcp") / "kubeconfig"
    address = f"http://127.0.0.1:{server.server_address[1]}"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: stand-in\n"
        f"clusters: [{{name: stand-in, cluster: {{server: '{address}'}}}}]\n"
        "users: [{name: reader, user: {token: not-a-secret}}]\n"
        "contexts: [{name: stand-in, context: {cluster: stand-in, user: reader}}]\n",
        encoding="utf-8",
    )
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()


def _nvcrectl() -> str:
    script = Path(sys.executable).parent / "nvcrectl"
    if not script.is_file():
        pytest.fail(f"{script} is missing: install the package (make setup)", pytrace=False)
    return str(script)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _session(kubeconfig: Path) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=_nvcrectl(), args=["mcp", "serve", "--kubeconfig", str(kubeconfig)], cwd=str(REPO), env={**os.environ}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        listed = await session.list_tools()
        ref = {"name": "cert-pass", "namespace": NAMESPACE}
        return {
            "server": initialized.server_info,
            "tools": {t.name: t for t in listed.tools},
            "status": await session.call_tool("get_certification_status", ref),
            "failed": await session.call_tool("list_failed_nodes", ref),
            "missing": await session.call_tool("get_certification_status", {"name": "nope", "namespace": NAMESPACE}),
        }


@pytest.fixture(scope="module")
def session(kubeconfig: Path) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(_session(kubeconfig), 120))


def test_every_tool_carries_the_read_only_hint(session: dict[str, Any]) -> None:
    tools = session["tools"]
    assert sorted(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, name


def test_the_server_and_its_tools_are_described_as_nvcres(session: dict[str, Any]) -> None:
    assert session["server"].name == "nvcre"
    assert session["server"].title == "NVIDIA Cluster Readiness Engine"
    tools = session["tools"]
    assert tools["list_categories"].description == (
        "List the certification catalog: every registered category (domain/variant) a Certification can run."
    )
    assert tools["get_certification_status"].description.startswith(
        "Get the status of one Certification: overall result (PASSED/INCOMPLETE/FAILED/RUNNING)"
    )
    assert tools["list_failed_nodes"].description.startswith("List failure detail for a Certification: one row per distinct")
    for name in ("get_certification_status", "get_certification_report", "list_failed_nodes"):
        properties = tools[name].input_schema["properties"]
        assert properties["name"]["description"] == "name of the Certification resource"
        assert properties["namespace"]["description"] == "namespace of the Certification (default: default)"


def test_a_missing_certification_is_nvcres_tool_error_text(session: dict[str, Any]) -> None:
    missing = session["missing"]
    assert missing.is_error
    assert _text(missing) == f'certification "nope" not found in namespace "{NAMESPACE}"'


def test_empty_optional_fields_are_left_out_of_the_status_answer(session: dict[str, Any]) -> None:
    status = session["status"]
    assert not status.is_error, _text(status)
    answer = json.loads(_text(status))
    assert (answer["name"], answer["namespace"], answer["result"]) == ("cert-pass", NAMESPACE, "PASSED")
    assert "failedNodes" not in answer  # nothing failed: NVCRE omits the key
    assert answer["conditions"] == [{"type": "Succeeded", "status": "True", "reason": "AllWorkflowsSucceeded"}]
    assert all(set(c) >= {"domain", "variant", "status"} and "" not in c.values() for c in answer.get("categories", []))


def test_list_failed_nodes_keeps_an_empty_list(session: dict[str, Any]) -> None:
    failed = session["failed"]
    assert not failed.is_error, _text(failed)
    assert json.loads(_text(failed)) == {"name": "cert-pass", "namespace": NAMESPACE, "failedNodes": []}
