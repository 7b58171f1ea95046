"""``nvcrectl mcp serve``: a read-only MCP server over stdio.

Four tools — ``list_categories``, ``get_certification_status``, ``get_certification_report`` and
``list_failed_nodes`` — answer from the same verdict code as ``certification report``. No tool
creates, changes or starts anything. Cluster access uses the kubeconfig of whoever starts the
server; the server holds no credentials of its own. Errors come back as tool errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="Model Context Protocol server (read-only).", no_args_is_help=True)


# Long: the four tools are closures over one lazily made cluster client and one error mapping;
# registered side by side they read as the tool list an agent sees.
def build_server(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """The MCP server with its four read-only tools (the cluster client is made on first use)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from nvcre import __version__

    server = MCPServer(
        name="nvcre",
        version=__version__,
        instructions="Read-only answers about nvcre GPU-cluster certifications: status, report, failed nodes.",
        log_level="WARNING",
    )
    state: dict[str, Any] = {}

    def kube() -> Any:
        if "kube" not in state:
            from nvcre.runtime.kube.client import ApiServerClient

            try:
                state["kube"] = ApiServerClient.from_kubeconfig(kubeconfig, context=context)
            except Exception as exc:  # noqa: BLE001 - a tool error, never a crash of the server
                raise ToolError(f"cannot load cluster credentials: {exc}") from None
        return state["kube"]

    def ask(question: Any, name: str, namespace: str) -> Any:
        from nvcre.runtime.kube.errors import ApiError
        from nvcre.runtime.ops.collect import RunNotFound

        try:
            return question(kube(), "Certification", name, namespace)
        except RunNotFound as exc:
            raise ToolError(str(exc)) from None
        except ApiError as exc:
            raise ToolError(f"the API server refused the read: {exc}") from None

    @server.tool(description="List the catalog's certification categories (domain, variant, description).")
    def list_categories() -> dict[str, Any]:
        from nvcre.compiler.catalog import load_catalog
        from nvcre.runtime.ops import queries

        return queries.categories(load_catalog().entries)

    @server.tool(description="Phase, result (PASSED / FAILED / IN PROGRESS) and per-category status of a Certification.")
    def get_certification_status(name: str, namespace: str = "default") -> dict[str, Any]:
        from nvcre.runtime.ops import queries

        return ask(queries.status, name, namespace)

    @server.tool(description="The full JSON report of a Certification, as `nvcrectl certification report -o json` prints it.")
    def get_certification_report(name: str, namespace: str = "default") -> dict[str, Any]:
        from nvcre.runtime.ops import queries

        return ask(queries.report, name, namespace)

    @server.tool(description="Every node a Certification blamed, with its reason and message.")
    def list_failed_nodes(name: str, namespace: str = "default") -> dict[str, Any]:
        from nvcre.runtime.ops import queries

        return ask(queries.failed_nodes, name, namespace)

    return server


@app.command("serve")
def serve(
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig.")] = None,
    context: Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")] = None,
) -> None:
    """Serve the read-only tools over stdio until the client disconnects."""
    build_server(str(kubeconfig) if kubeconfig else None, context).run("stdio")
