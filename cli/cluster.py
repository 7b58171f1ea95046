"""``nvcrectl cluster``: what nvcre would detect on a cluster, read from its facts file.

``cluster info --facts FILE`` prints the platform, GPU product and architecture, GPU and
ready-node counts, topology domains and any warning a render would give, from the same
detection functions the compiler uses. Produce the file with
``kubectl get nodes,resourceslices -o yaml`` (add kube-system pods for GCP H100).

Errors go through the same handling as every other command (``output.guarded``): exit 2 with
every diagnostic on stderr and nothing on stdout for invalid input, 1 for anything else.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from .output import guarded, print_diagnostics

if TYPE_CHECKING:
    from nvcre.compiler.diagnostics import Diagnostic
    from nvcre.compiler.facts import ClusterFacts

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


# Long: gathers the summary fields `cluster info` prints, one per line, from the detection result.
def cluster_info(facts: ClusterFacts, *, topology_key: str | None = None) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """Summarise ``facts`` as plain data (``None`` when detection fails; see diagnostics)."""
    from nvcre.compiler.catalog import load_catalog
    from nvcre.compiler.detect import detect_cluster, detect_nic_resource, nic_detection_applies, node_gpu_counts
    from nvcre.compiler.detect.gpu_arch import node_products
    from nvcre.compiler.detect.topology import topology_domains, topology_keys_for
    from nvcre.compiler.facts import is_ready, name_of

    detection, diags = detect_cluster(facts, target={}, platform=None, gpu_arch=None, target_path="target")
    if detection is None:
        return None, diags
    gpus_default, mlnx_default, sizing = load_catalog().gpu_defaults.lookup(detection.gpu_arch, detection.platform)
    if sizing == "fallback" and detection.gpu_arch not in ("", "unknown"):
        diags.append(_gpu_defaults_warning(detection.gpu_arch, gpus_default, mlnx_default))

    nodes = detection.nodes
    counts = node_gpu_counts(facts, nodes)
    products = node_products(facts, nodes)
    known = [c.count for c in counts.values() if c.count is not None]
    per_product: dict[str, int] = {}
    for p in products.values():
        per_product[p.product] = per_product.get(p.product, 0) + 1
    keys = (topology_key,) if topology_key else topology_keys_for(detection.platform, nodes)
    platform_fact = detection.decisions["platform"]
    summary: dict[str, Any] = {
        "source": facts.source,
        "platform": {"name": detection.platform, "source": platform_fact.source, "detail": platform_fact.detail},
        "gpu": {
            "architecture": detection.gpu_arch,
            "architectureKnown": detection.gpu_arch_known,
            "products": [{"product": k, "nodes": v} for k, v in sorted(per_product.items()) if k],
            "gpusPerNodeMin": min(known) if known else None,
            "gpusPerNodeMax": max(known) if known else None,
            "total": sum(known),
        },
        "nodes": {
            "gpuNodes": len(nodes),
            "ready": sum(1 for n in nodes if is_ready(n)),
            "excluded": [{"name": e.name, "reason": e.reason} for e in detection.excluded_nodes],
        },
        "perNode": [
            {
                "name": name_of(n),
                "product": products[name_of(n)].product,
                "productSource": products[name_of(n)].source,
                "gpus": counts[name_of(n)].count,
                "gpuSource": counts[name_of(n)].source,
                "ready": is_ready(n),
            }
            for n in nodes
        ],
        "topology": [{"key": key, "domains": [{"value": v, "nodes": c} for v, c in topology_domains(nodes, key)]} for key in keys],
    }
    if detection.gke_networks is not None:
        summary["gkeNetworks"] = {"names": list(detection.gke_networks), **_provenance(detection.decisions["gkeNetworks"])}
    if detection.tcpxo is not None:
        summary["tcpxo"] = {**detection.tcpxo.as_dict(), **_provenance(detection.decisions["tcpxoPlugin"])}
    if nic_detection_applies(detection.platform, detection.gpu_arch):
        nic, nic_diags = detect_nic_resource(
            nodes, platform=detection.platform, gpu_arch=detection.gpu_arch, mlnx_per_node=mlnx_default, path="target"
        )
        diags.extend(nic_diags)
        summary["nicResource"] = {"name": nic.value, "mlnxPerNode": mlnx_default, **_provenance(nic)}
    return summary, diags


def render_text(summary: dict[str, Any]) -> str:
    """The human-readable form of :func:`cluster_info`'s summary."""
    gpu = summary["gpu"]
    nodes = summary["nodes"]
    lo, hi = gpu["gpusPerNodeMin"], gpu["gpusPerNodeMax"]
    per_node = "GPU count unknown" if lo is None else f"{lo} GPUs/node" if lo == hi else f"{lo}-{hi} GPUs/node"
    products = gpu["products"]
    if len(products) == 1:
        product_text = products[0]["product"]
    elif products:
        product_text = ", ".join(f"{p['product']} ({_count(p['nodes'], 'node')})" for p in products)
    else:
        product_text = "product unknown"
    platform = summary["platform"]
    lines = [
        f"{'Platform:':<14}{platform['name']} ({platform['source']}: {platform['detail']})",
        f"{'GPU:':<14}{product_text} ({gpu['architecture']}, {per_node})",
        f"{'GPUs:':<14}{gpu['total']} on {_count(nodes['gpuNodes'], 'node')}",
        f"{'Nodes:':<14}{nodes['ready']} ready of {nodes['gpuNodes']}",
    ]
    if "gkeNetworks" in summary:
        gke = summary["gkeNetworks"]
        lines.append(f"{'GKE networks:':<14}{', '.join(gke['names'])} ({gke['source']})")
    if "tcpxo" in summary:
        t = summary["tcpxo"]
        found = t["detectedVersion"] or "not found"
        lines.append(f"{'TCPXO plugin:':<14}{found} -> {t['pluginVersion']} profile ({t['source']})")
        lines.append(f"{'':<14}NCCL {t['ncclImage']}, training {t['trainingImage']}")
        lines.append(f"{'':<14}tcpxo-daemon {t['daemonImage']} {' '.join(t['daemonArgs'])}")
    if "nicResource" in summary:
        nic = summary["nicResource"]
        chosen = nic["name"] or "none chosen"
        lines.append(f"{'NIC resource:':<14}{chosen} ({nic['source']}, at mlnxPerNode={nic['mlnxPerNode']})")
    if nodes["excluded"]:
        lines.append("")
        lines.append(f"EXCLUDED ({_count(len(nodes['excluded']), 'node')}):")
        width = max(len(e["name"]) for e in nodes["excluded"]) + 2
        lines.extend(f"  {e['name']:<{width}}{e['reason']}" for e in nodes["excluded"])
    for topo in summary["topology"]:
        lines.append("")
        lines.append(f"TOPOLOGY ({topo['key']}):")
        if not topo["domains"]:
            lines.append("  (no node carries this label)")
            continue
        width = max(len(d["value"]) for d in topo["domains"]) + 4
        lines.extend(f"  {d['value']:<{width}}{_count(d['nodes'], 'node')}" for d in topo["domains"])
    return "\n".join(lines) + "\n"


def _gpu_defaults_warning(arch: str, gpus: int, mlnx: int) -> Diagnostic:
    """The render's GPUArchitectureDefaults warning, for an architecture the catalog lacks."""
    from nvcre.compiler.diagnostics import warning
    from nvcre.compiler.passes.apply_gpu_defaults import fallback_message

    hint = "spec.gpusPerNode and spec.mlnxPerNode (or spec.categories[].options)"
    return warning("GPUArchitectureDefaults", "target", fallback_message(arch, gpus, mlnx, gpus, mlnx, hint))


def _provenance(fact: Any) -> dict[str, str]:
    return {"source": fact.source, "detail": fact.detail}


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
