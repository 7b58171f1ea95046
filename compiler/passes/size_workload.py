"""Pass: decide the job size and the remaining numeric defaults of a category.

* ``nodesPerJob``: the option when set; otherwise every target node the facts list (offline
  renders without facts use 1). ``testScale: intra-node`` forces one node per job. Training
  entries walk down to the largest node count their parallelism accepts.
* training entries: tensor/pipeline parallelism from the entry's rows for the configuration
  architecture, checked against the GPU count (minimum GPUs, TP x PP divisibility).
* catalog defaults for the rest (timeoutPerJob, NCCL sweep, training steps, checkpoint sizes...).
* with cluster facts: the capacity filter (nodes that cannot supply gpusPerNode GPUs leave this
  category's target, and say so) and NIC resource detection where the platform asks for it.

Every value the pass fills in is recorded in the provenance with where it came from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..diagnostics import Diagnostic, error
from ..unit import Context, Unit

__all__ = ["size_workload", "CATALOG_DEFAULTS"]

#: Values used when neither the category nor the spec sets them.
CATALOG_DEFAULTS: dict[str, Any] = {
    "testScale": "full-scale",
    "maxBytes": "16G",
    "numIterations": 100,
    "numCycles": 10,
    "maxSteps": 50,
    "exitDurationMins": 30,
    "saveInterval": 250,
    "saveRetainInterval": 1000,
    "saveTopK": 1,
    "storageSize": "10Ti",
    "minGroupSize": 2,
    "maxConcurrent": 0,
    "measurementTimeout": "5m",
    "enableCheckpoint": False,
    "rdmaDeviceAccess": "devicePlugin",
    "sourceRepo": "https://github.com/NVIDIA/Megatron-LM.git",
}

#: Diagnose scale runs a short sweep per probe.
DIAGNOSE_SWEEP = {"numIterations": 5, "numCycles": 1}


def _parallelism(ctx: Context) -> tuple[int, int] | None:
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    if not entry.parallelism:
        return None
    config_arch = ctx.catalog.gpu_defaults.configuration_arch(ctx.cluster.gpu_arch)
    row = entry.parallelism.get(config_arch) or entry.parallelism.get("default")
    if row is None:
        return None
    return row.tp, row.pp


def _check_nodes(
    ctx: Context, options: dict[str, Any], records: list[dict[str, Any]], *, label: str, where: str, own: Any
) -> tuple[tuple[Any, ...], list[Diagnostic]]:
    """Capacity filter and NIC detection over the target nodes; fills ``nicResourceName``.

    Diagnostics point at the field the user would change: the category's own option when it
    sets one, else the spec-level field.
    """
    from ..detect import detect_nic_resource, filter_by_capacity, nic_detection_applies

    def field_path(name: str) -> str:
        return f"{where}.{name}" if name in own else f"spec.{name}"

    path = field_path("gpusPerNode")
    kept, excluded, diags = filter_by_capacity(
        ctx.cluster.facts, ctx.cluster.nodes, gpus_per_node=int(options["gpusPerNode"]), category=label, path=path
    )
    if excluded:
        records.append({"decision": "excludedNodes", "value": [e.name for e in excluded], "source": "capacity filter"})
    if any(d.is_error for d in diags):
        return kept, diags
    fact, found = detect_nic_resource(
        kept,
        platform=ctx.cluster.platform,
        gpu_arch=ctx.cluster.gpu_arch,
        mlnx_per_node=int(options["mlnxPerNode"]),
        nic_resource_name=options.get("nicResourceName"),
        path=field_path("nicResourceName"),
    )
    diags = [*diags, *found]
    if fact.value:
        options["nicResourceName"] = fact.value
    if fact.source != "supplied" and nic_detection_applies(ctx.cluster.platform, ctx.cluster.gpu_arch):
        records.append({"decision": "nicResourceName", "value": fact.value, "source": fact.source})
    return kept, diags


def _valid_nodes(n: int, gpus: int, min_gpus: int, tp_pp: int) -> bool:
    total = n * gpus
    return total >= min_gpus and total % tp_pp == 0


def _fill_defaults(unit: Unit, entry: Any, options: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """Catalog defaults, the diagnose sweep and the entry's timeouts for options not given; returns the scale."""
    for key, value in CATALOG_DEFAULTS.items():
        if key not in options:
            options[key] = value
    scale = str(options["testScale"])
    if scale == "diagnose":
        for key, value in DIAGNOSE_SWEEP.items():
            if key not in unit.options:
                options[key] = value
    if "timeoutPerJob" not in options:
        options["timeoutPerJob"] = "15m" if scale == "diagnose" else entry.timeout_per_job
        records.append({"decision": "timeoutPerJob", "value": options["timeoutPerJob"], "source": "catalog"})
    if "startupStallTimeoutSeconds" not in options and entry.startup_stall_timeout_seconds is not None:
        options["startupStallTimeoutSeconds"] = entry.startup_stall_timeout_seconds
    return scale


def _choose_nodes(
    unit: Unit, ctx: Context, entry: Any, scale: str, targets: int, gpus: int, where: str
) -> tuple[int, str, list[Diagnostic]]:
    """Nodes per Job and why: single-node entries, the option, the targets (shrunk to a valid model size)."""
    par = _parallelism(ctx)
    min_gpus = entry.min_gpus or 0
    if not entry.multi_node or scale == "intra-node":
        return 1, ("entry is single-node" if not entry.multi_node else "testScale intra-node"), []
    if "nodesPerJob" in unit.options:
        return int(unit.options["nodesPerJob"]), "option", []
    if not targets:
        return 1, "default (no cluster facts)", []
    if par is None:
        return targets, "target nodes", []
    tp_pp = par[0] * par[1]
    nodes = targets
    while nodes > 0 and not _valid_nodes(nodes, gpus, min_gpus, tp_pp):
        nodes -= 1
    if nodes == 0:
        message = (
            f"{entry.key}: no valid node count <= {targets} satisfies model constraints (gpusPerNode={gpus}, arch={ctx.cluster.gpu_arch})"
        )
        return 0, "", [error("NoValidNodeCount", where, message)]
    return nodes, "largest node count the model accepts", []


def _check_parallelism(label: str, nodes: int, gpus: int, min_gpus: int, par: tuple[int, int], where: str) -> list[Diagnostic]:
    """The model's GPU floor and its TPxPP divisibility, each with the node counts that would fit."""
    tp, pp = par
    total = nodes * gpus
    if total < min_gpus:
        need = -(-min_gpus // gpus)
        message = (
            f"{label}: requires at least {min_gpus} GPUs ({nodes} nodes x {gpus} GPUs/node), "
            f"got {total} GPUs ({nodes} nodes); set nodesPerJob to {need} or higher"
        )
        return [error("InsufficientGPUs", f"{where}.nodesPerJob", message)]
    if total % (tp * pp) != 0:
        lower = max((n for n in range(1, nodes) if (n * gpus) % (tp * pp) == 0 and n * gpus >= min_gpus), default=0)
        upper = next(n for n in range(nodes + 1, nodes + tp * pp + 1) if (n * gpus) % (tp * pp) == 0)
        suggestion = f"{lower} or {upper}" if lower else str(upper)
        message = (
            f"{label}: totalGPUs={total} ({nodes} nodes x {gpus} GPUs/node) must be divisible by "
            f"TPxPP={tp * pp} (TP={tp}, PP={pp}); try nodesPerJob={suggestion}"
        )
        return [error("ParallelismMismatch", f"{where}.nodesPerJob", message)]
    return []


def size_workload(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    options = dict(unit.options)
    records: list[dict[str, Any]] = []
    diags: list[Diagnostic] = []
    where = f"{ctx.path}.options"
    scale = _fill_defaults(unit, entry, options, records)

    gpus = int(options["gpusPerNode"])
    targets = len(ctx.cluster.target_nodes)
    if ctx.cluster.facts is not None and ctx.cluster.nodes:
        kept, diags_nodes = _check_nodes(ctx, options, records, label=entry.key, where=where, own=unit.category.get("options") or {})
        diags.extend(diags_nodes)
        if any(d.is_error for d in diags_nodes):
            return unit, diags
        targets = len(kept)

    nodes, source, d = _choose_nodes(unit, ctx, entry, scale, targets, gpus, where)
    diags.extend(d)
    if d:
        return unit, diags
    options["nodesPerJob"] = nodes
    records.append({"decision": "nodesPerJob", "value": nodes, "source": source})

    par = _parallelism(ctx)
    if par is not None:
        options["tensorParallelism"], options["pipelineParallelism"] = par
        diags.extend(_check_parallelism(entry.key, nodes, gpus, entry.min_gpus or 0, par, where))
        records.append({"decision": "parallelism", "value": {"tp": par[0], "pp": par[1]}, "source": "catalog"})
    return replace(unit, options=options).with_provenance(*records), diags
