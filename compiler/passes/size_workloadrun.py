"""Pass: decide the job size of a WorkloadRun and fill the run-shape defaults.

* ``nodesPerJob`` is ``spec.numNodes``: the size of each job group under Pinned placement, the
  size of the one job under Unpinned. ``testScale: intra-node`` runs every job on one node
  (a warning says so when ``numNodes`` asked for more).
* defaults: ``testScale`` full-scale, ``repeatCount`` 1, ``maxConcurrent`` 0 (no limit),
  ``timeoutPerJob`` from the framework's entry (24h, NVCRE's default), ``measurementTimeout`` 5m.
* with cluster facts: target nodes that cannot supply ``gpusPerNode`` GPUs leave the run (the
  run fails when none is left), the NIC resource is detected where the platform asks for it,
  and an Unpinned run whose size is more than the qualifying nodes fails now rather than with
  a PartitionError after submission: Unpinned never shrinks a job.

Every value the pass decides is recorded in the provenance with where it came from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..diagnostics import Diagnostic, error, warning
from ..unit import Context, Unit

__all__ = ["size_workloadrun", "RUN_DEFAULTS"]

#: Values used when the WorkloadRun does not set them.
RUN_DEFAULTS: dict[str, Any] = {
    "testScale": "full-scale",
    "repeatCount": 1,
    "maxConcurrent": 0,
    "measurementTimeout": "5m",
}


def size_workloadrun(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    options = dict(unit.options)
    records: list[dict[str, Any]] = []
    diags: list[Diagnostic] = []
    for key, value in RUN_DEFAULTS.items():
        options.setdefault(key, value)
    if "timeoutPerJob" not in options:
        options["timeoutPerJob"] = entry.timeout_per_job
        records.append({"decision": "timeoutPerJob", "value": options["timeoutPerJob"], "source": "default"})

    requested = int(ctx.spec["numNodes"])
    if options["testScale"] == "intra-node":
        nodes, source = 1, "testScale intra-node"
        if requested != 1:
            diags.append(
                warning(
                    "IntraNodeSize",
                    "spec.numNodes",
                    f"{ctx.entry.key}: testScale intra-node runs every job on one node, so numNodes={requested} is not used",
                )
            )
    else:
        nodes, source = requested, "numNodes"
    options["nodesPerJob"] = nodes
    records.append({"decision": "nodesPerJob", "value": nodes, "source": source})

    if ctx.cluster.facts is not None and ctx.cluster.nodes:
        found = _check_nodes(ctx, options, records, nodes)
        diags.extend(found)
        if any(d.is_error for d in found):
            return unit, diags
    return replace(unit, options=options).with_provenance(*records), diags


def _check_nodes(ctx: Context, options: dict[str, Any], records: list[dict[str, Any]], nodes: int) -> list[Diagnostic]:
    """Capacity filter, NIC detection and the Unpinned size check over the target nodes."""
    from ..detect import detect_nic_resource, filter_by_capacity, nic_detection_applies
    from ..detect.model import plural

    kept, excluded, diags = filter_by_capacity(
        ctx.cluster.facts,
        ctx.cluster.nodes,
        gpus_per_node=int(options["gpusPerNode"]),
        category=ctx.entry.key,
        path="spec.gpusPerNode",
    )
    if excluded:
        records.append({"decision": "excludedNodes", "value": [e.name for e in excluded], "source": "capacity filter"})
    if any(d.is_error for d in diags):
        return diags
    if options.get("placement") == "Unpinned" and nodes > len(kept):
        return [
            *diags,
            error(
                "PartitionError",
                "spec.numNodes",
                f"{ctx.entry.key}: placement Unpinned runs exactly numNodes={nodes} nodes, but only "
                f"{plural(len(kept), 'target node')} can supply gpusPerNode={options['gpusPerNode']} GPUs; make {nodes} qualifying "
                "nodes available rather than lowering numNodes",
            ),
        ]
    fact, found = detect_nic_resource(
        kept,
        platform=ctx.cluster.platform,
        gpu_arch=ctx.cluster.gpu_arch,
        mlnx_per_node=int(options["mlnxPerNode"]),
        nic_resource_name=options.get("nicResourceName"),
        path="spec.nicResourceName",
    )
    if fact.value:
        options["nicResourceName"] = fact.value
    if fact.source != "supplied" and nic_detection_applies(ctx.cluster.platform, ctx.cluster.gpu_arch):
        records.append({"decision": "nicResourceName", "value": fact.value, "source": fact.source})
    return [*diags, *found]
