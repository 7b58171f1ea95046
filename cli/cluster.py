"""``nvcrectl cluster``: what nvcre would detect on a cluster, read from its facts file.

``cluster info --facts FILE`` prints the platform, GPU product and architecture, GPU and
ready-node counts, topology domains and any warning a render would give, from the same
detection functions the compiler uses; ``-o json|yaml`` print NVCRE's ``ClusterInfo`` keys first
and ours beside them. Produce the file with
``kubectl get nodes,resourceslices -o yaml`` (add kube-system pods for GCP H100). The summary
itself is built in :mod:`nvcre.runtime.ops.cluster_info`; this module parses flags and prints.

Errors go through the same handling as every other command (``output.guarded``): exit 2 with
every diagnostic on stderr and nothing on stdout for invalid input, 1 for anything else.
"""

from __future__ import annotations

import sys
from enum import Enum

import typer

from .output import guarded, print_diagnostics

app = typer.Typer(
    name="cluster",
    help="Inspect a cluster through its facts file (Nodes, ResourceSlices, Pods).",
    no_args_is_help=True,
    add_completion=False,
)


class OutputFormat(str, Enum):
    """NVCRE's ``table``, ``json`` and ``yaml`` (``text`` is our older name of ``table``)."""

    table = "table"
    text = "text"
    json = "json"
    yaml = "yaml"


@app.callback()
def _cluster() -> None:
    """Inspect a cluster through its facts file (Nodes, ResourceSlices, Pods)."""


@app.command("info")
@guarded
def info_command(
    facts_file: str | None = typer.Option(
        None,
        "--facts",
        metavar="FILE",
        help="Cluster facts: the output of `kubectl get nodes,resourceslices -o yaml` (YAML or JSON; - reads stdin). "
        "Without it, the live cluster of the kubeconfig is read.",
    ),
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="Without --facts: the kubeconfig to use."),
    context: str | None = typer.Option(None, "--context", help="Without --facts: the kubeconfig context."),
    output: OutputFormat = typer.Option(OutputFormat.table, "-o", "--output", help="table (default), json or yaml."),
    topology_key: str = typer.Option("", "--topology-key", help="Show domains of this node label instead of the detected topology labels."),
) -> None:
    """Show the platform, GPUs, nodes and topology nvcre detects from the facts."""
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.facts import load_facts
    from nvcre.runtime.ops.cluster_info import cluster_info, render_text

    if facts_file is not None:
        facts = load_facts(facts_file)
    else:
        from nvcre.runtime.ops.facts import live_facts

        from .common import kube_client

        facts = live_facts(kube_client(kubeconfig, context))
    summary, diags = cluster_info(facts, topology_key=topology_key or None)
    if summary is None or any(d.is_error for d in diags):
        raise CompileError(diags)
    print_diagnostics(diags)
    if output in (OutputFormat.json, OutputFormat.yaml):
        from nvcre.compiler.emit import dump_json, dump_yaml

        summary = {**summary, "diagnostics": [d.as_dict() for d in diags]}
        sys.stdout.write(dump_json(summary) if output is OutputFormat.json else dump_yaml(summary))
    else:
        sys.stdout.write(render_text(summary))
