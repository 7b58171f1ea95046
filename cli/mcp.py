"""``nvcrectl mcp serve``: a read-only MCP server over stdio, answering as NVCRE's does.

Four tools — ``list_categories``, ``get_certification_status``, ``get_certification_report`` and
``list_failed_nodes`` — answer from the same verdict code as ``certification report``. No tool
creates, changes or starts anything, and every tool says so to the client with the
``readOnlyHint`` annotation (clients that auto-approve read-only tools then do not prompt).
Tool names, descriptions and argument descriptions are NVCRE's; each answer is one text block of
2-space indented JSON; empty optional fields (a condition's reason or message, no failed nodes)
are left out as NVCRE leaves them out. Errors are tool results marked as errors whose text is
NVCRE's (``certification "x" not found in namespace "y"``). Cluster access uses the kubeconfig of
whoever starts the server; the server holds no credentials of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import Field

app = typer.Typer(help="Model Context Protocol server (read-only).", no_args_is_help=True)

#: the server's human-readable title, as NVCRE's
TITLE = "NVIDIA Cluster Readiness Engine"
#: NVCRE's tool descriptions, word for word: an agent picks tools by them
DESCRIPTIONS = {
    "list_categories": "List the certification catalog: every registered category (domain/variant) a Certification can run.",
    "get_certification_status": (
        "Get the status of one Certification: overall result (PASSED/INCOMPLETE/FAILED/RUNNING), conditions, "
        "per-category state, any nodes excluded from the run, and the unique names of failed nodes. "
        "INCOMPLETE means the run passed but left some targeted nodes untested."
    ),
    "get_certification_report": (
        "Fetch the full certification report: categories with metrics, bandwidth, cliques and diagnose results. "
        "This is the same JSON 'nvcrectl certification report --results-file' writes."
    ),
    "list_failed_nodes": (
        "List failure detail for a Certification: one row per distinct (node, reason, message). A node that failed "
        "in several categories appears once per distinct reason, so this is not a node count — use "
        "get_certification_status.failedNodes for unique node names."
    ),
}
NAME_HELP = "name of the Certification resource"
NAMESPACE_HELP = "namespace of the Certification (default: default)"
#: the arguments of the three Certification tools, with NVCRE's descriptions in the input schema
CertificationName = Annotated[str, Field(description=NAME_HELP)]
CertificationNamespace = Annotated[str, Field(description=NAMESPACE_HELP)]


class _Refused(Exception):
    """A question the server answers with a tool error carrying exactly this text."""


def _text(answer: Any, *, error: bool = False) -> Any:
    from mcp_types import CallToolResult, TextContent

    body = answer if error else json.dumps(answer, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=error)


def _without_empty(row: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``row`` without those of ``keys`` whose value is empty (NVCRE's omitempty)."""
    return {k: v for k, v in row.items() if k not in keys or v not in ("", None, [], {})}


def status_answer(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The status answer with empty optional fields left out, as NVCRE's JSON leaves them out."""
    out = _without_empty(answer, ("conditions", "categories", "failedNodes", "excludedNodes", "exclusionReason", "totalNodes"))
    if "totalNodes" in out and not out["totalNodes"]:
        del out["totalNodes"]
    if out.get("conditions"):
        out["conditions"] = [_without_empty(c, ("reason", "message")) for c in out["conditions"]]
    if out.get("categories"):
        out["categories"] = [_without_empty(c, ("workflow", "reason", "blocked")) for c in out["categories"]]
    return out


def _answering(question: Callable[[], Any]) -> Any:
    try:
        return _text(question())
    except _Refused as exc:
        return _text(str(exc), error=True)


# Long: the four tools are closures over one lazily made cluster client and one error mapping;
# registered side by side they read as the tool list an agent sees.
def build_server(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """The MCP server with its four read-only tools (the cluster client is made on first use)."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from nvcre import __version__

    server = MCPServer(
        name="nvcre",
        title=TITLE,
        version=__version__ or "dev",
        instructions="Read-only answers about nvcre GPU-cluster certifications: status, report, failed nodes.",
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True)
    state: dict[str, Any] = {}

    def kube() -> Any:
        if "kube" not in state:
            from nvcre.runtime.kube.client import ApiServerClient

            try:
                state["kube"] = ApiServerClient.from_kubeconfig(kubeconfig, context=context)
            except Exception as exc:  # noqa: BLE001 - a tool error, never a crash of the server
                raise _Refused(f"cannot load cluster credentials: {exc}") from None
        return state["kube"]

    def ask(question: Any, name: str, namespace: str) -> Any:
        from nvcre.runtime.kube.errors import ApiError
        from nvcre.runtime.ops.collect import RunNotFound

        namespace = namespace or "default"
        try:
            return question(kube(), "Certification", name, namespace)
        except RunNotFound as exc:
            raise _Refused(str(exc)) from None
        except ApiError as exc:
            raise _Refused(f'get certification "{name}": {exc}') from None

    def tool(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return server.tool(name=name, description=DESCRIPTIONS[name], annotations=read_only)

    @tool("list_categories")
    def list_categories() -> Any:
        from nvcre.compiler.catalog import load_catalog
        from nvcre.runtime.ops import queries

        return _answering(lambda: queries.categories(load_catalog().entries))

    @tool("get_certification_status")
    def get_certification_status(name: CertificationName, namespace: CertificationNamespace = "default") -> Any:
        from nvcre.runtime.ops import queries

        return _answering(lambda: status_answer(ask(queries.status, name, namespace)))

    @tool("get_certification_report")
    def get_certification_report(name: CertificationName, namespace: CertificationNamespace = "default") -> Any:
        from nvcre.runtime.ops import queries

        return _answering(lambda: ask(queries.report, name, namespace))

    @tool("list_failed_nodes")
    def list_failed_nodes(name: CertificationName, namespace: CertificationNamespace = "default") -> Any:
        from nvcre.runtime.ops import queries

        return _answering(lambda: ask(queries.failed_nodes, name, namespace))

    return server


@app.command("serve")
def serve(
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig.")] = None,
    context: Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")] = None,
) -> None:
    """Serve the read-only tools over stdio until the client disconnects."""
    build_server(str(kubeconfig) if kubeconfig else None, context).run("stdio")
