"""What ``cluster info`` reports: platform, GPUs, nodes, topology and render warnings, from facts.

The summary is plain data built with the compiler's own detection functions, so it says what a
render on this cluster would decide; :func:`render_text` is its table form. The facts come from a
file or from the live cluster (:mod:`.facts`); this module reads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nvcre.compiler.diagnostics import Diagnostic
    from nvcre.compiler.facts import ClusterFacts

__all__ = ["cluster_info", "render_text"]


def _main_product(per_product: dict[str, int]) -> str:
    """The product most nodes report (ties: the first by name); ``""`` when none reports one."""
    named = sorted((p, n) for p, n in per_product.items() if p)
    return min(named, key=lambda item: -item[1])[0] if named else ""


def _nvcre_topology(nodes: Any, key: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """NVCRE's ``nodes[]`` and ``topology``: each node's rack is its value of ``key``; racks sorted by name."""
    from nvcre.compiler.facts import labels_of, name_of

    racks: dict[str, list[str]] = {}
    for node in nodes:
        rack = labels_of(node).get(key, "") if key else ""
        if rack:
            racks.setdefault(rack, []).append(name_of(node))
    topology = (
        {"key": key, "racks": [{"name": r, "nodes": sorted(racks[r]), "nodeCount": len(racks[r])} for r in sorted(racks)]}
        if key and racks
        else None
    )
    return [{"rack": labels_of(n).get(key, "")} if key else {"rack": ""} for n in nodes], topology


# Long: gathers NVCRE's ClusterInfo fields and ours beside them from one detection result.
def cluster_info(facts: ClusterFacts, *, topology_key: str | None = None) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """Summarise ``facts`` as plain data (``None`` when detection fails; see diagnostics).

    The first keys are NVCRE's ``ClusterInfo`` with its names, types and order (``platform``,
    ``gpuArchitecture``, ``gpuProduct``, ``gpusPerNode`` (the smallest node's count, 0 when a node
    has none), ``catalogGpusPerNode``, ``totalNodes``, ``totalGPUs``, ``nodes[{name, gpus, ready,
    rack}]``, ``topology{key, racks[{name, nodes, nodeCount}]}`` only when a rack is found); ours
    follow under keys NVCRE does not use.
    """
    from nvcre.compiler.catalog import load_catalog
    from nvcre.compiler.detect import detect_cluster, detect_nic_resource, nic_detection_applies, node_gpu_counts
    from nvcre.compiler.detect.gpu_arch import node_products
    from nvcre.compiler.detect.topology import platform_topology_key, topology_domains, topology_keys_for
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
    per_product: dict[str, int] = {}
    for p in products.values():
        per_product[p.product] = per_product.get(p.product, 0) + 1
    gpus = [counts[name_of(n)].count or 0 for n in nodes]
    rack_key = topology_key or platform_topology_key(detection.platform)
    racks, topology = _nvcre_topology(nodes, rack_key)
    summary: dict[str, Any] = {
        "platform": detection.platform,
        "gpuArchitecture": detection.gpu_arch,
        "gpuProduct": _main_product(per_product),
        "gpusPerNode": min(gpus) if gpus else 0,
        "catalogGpusPerNode": gpus_default,
        "totalNodes": len(nodes),
        "totalGPUs": sum(gpus),
        "nodes": [
            {"name": name_of(n), "gpus": count, "ready": is_ready(n), **({"rack": r["rack"]} if r["rack"] else {})}
            for n, count, r in zip(nodes, gpus, racks)
        ],
    }
    if topology is not None:
        summary["topology"] = topology
    keys = (topology_key,) if topology_key else topology_keys_for(detection.platform, nodes)
    summary.update(
        {
            "detection": detection.provenance,
            "gpuArchitectureKnown": detection.gpu_arch_known,
            "gpuProducts": [{"product": k, "nodes": v} for k, v in sorted(per_product.items()) if k],
            "nodeDetails": [
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
            "excludedNodes": [{"name": e.name, "reason": e.reason} for e in detection.excluded_nodes],
            "topologyDomains": [
                {"key": key, "domains": [{"value": v, "nodes": c} for v, c in topology_domains(nodes, key)]} for key in keys
            ],
            "draProductNodes": list(detection.dra_product_nodes),
            "factsSource": facts.source,
        }
    )
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
    known = [d["gpus"] for d in summary["nodeDetails"] if d["gpus"] is not None]
    lo, hi = (min(known), max(known)) if known else (None, None)
    per_node = "GPU count unknown" if lo is None else f"{lo} GPUs/node" if lo == hi else f"{lo}-{hi} GPUs/node"
    products = summary["gpuProducts"]
    if len(products) == 1:
        product_text = products[0]["product"]
    elif products:
        product_text = ", ".join(f"{p['product']} ({_count(p['nodes'], 'node')})" for p in products)
    else:
        product_text = "product unknown"
    platform = summary["detection"]["platform"]
    arch = summary["detection"]["gpuArchitecture"]
    # Say where the architecture came from when it was not GFD's product label.
    arch_note = "" if arch["detail"].startswith("nvidia.com/gpu.product labels") else f"; from {arch['detail']}"
    ready = sum(1 for n in summary["nodes"] if n["ready"])
    lines = [
        f"{'Platform:':<14}{summary['platform']} ({platform['source']}: {platform['detail']})",
        f"{'GPU:':<14}{product_text} ({summary['gpuArchitecture']}, {per_node}{arch_note})",
        f"{'GPUs:':<14}{summary['totalGPUs']} on {_count(summary['totalNodes'], 'node')}",
        f"{'Nodes:':<14}{ready} ready of {summary['totalNodes']}",
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
    excluded = summary["excludedNodes"]
    if excluded:
        lines.append("")
        lines.append(f"EXCLUDED ({_count(len(excluded), 'node')}):")
        width = max(len(e["name"]) for e in excluded) + 2
        lines.extend(f"  {e['name']:<{width}}{e['reason']}" for e in excluded)
    for topo in summary["topologyDomains"]:
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
