"""Pass: render the category's catalog entry into a Workflow manifest.

The entry's YAML template renders the Workflow ``spec`` from the resolved options; this pass
wraps it with ``apiVersion``, ``kind`` and ``metadata`` (the name carries NVCRE's options suffix
and FNV-1a truncation; labels tie the Workflow to its Certification and category).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..diagnostics import CompileError, Diagnostic
from ..naming import truncate_name, workflow_name
from ..templating import template_set
from ..unit import Context, Unit
from ..vocabulary import ANNOTATION_REQUESTED_TEST_SCALE, API_VERSION, LABEL_CATEGORY_DOMAIN, LABEL_CATEGORY_VARIANT, LABEL_CERTIFICATION

__all__ = ["instantiate_catalog", "template_values", "MANAGED_BY"]

MANAGED_BY = "nvcre"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
DEFAULT_HEALTH_MONITOR = "node.spec.unschedulable == true"
DEFAULT_TOPOLOGY_KEY = "nvidia.com/gpu.clique"


def tolerations_for(target: dict[str, Any], blanket: bool) -> list[dict[str, Any]]:
    """Tolerations matching ``target.taintSelectors``; without selectors, the entry's blanket one."""
    selectors = target.get("taintSelectors") or []
    if not selectors:
        return [{"operator": "Exists"}] if blanket else []
    out = []
    for selector in selectors:
        toleration: dict[str, Any] = {"key": selector["key"]}
        if selector.get("value"):
            toleration.update(operator="Equal", value=selector["value"])
        else:
            toleration["operator"] = "Exists"
        if selector.get("effect"):
            toleration["effect"] = selector["effect"]
        out.append(toleration)
    return out


def health_monitor_for(target: dict[str, Any]) -> str | None:
    """Opting cordoned nodes in clears the monitor: a cordon must not read as a hardware failure."""
    if any(s.get("key") == UNSCHEDULABLE_TAINT for s in target.get("taintSelectors") or []):
        return None
    return DEFAULT_HEALTH_MONITOR


def template_values(unit: Unit, ctx: Context) -> dict[str, Any]:
    """Everything a catalog or overlay template may read, by name."""
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    options = dict(unit.options)
    target = dict(ctx.spec.get("target") or {})
    return {
        "entry": {"domain": entry.domain, "variant": entry.variant, "key": entry.key, "name": entry.variant},
        "vars": dict(entry.vars),
        "o": options,
        "mnnvl": "1" if options.get("enableMNNVL") else "0",
        "cluster": {
            "platform": ctx.cluster.platform,
            "gpuArch": ctx.cluster.gpu_arch,
            "configArch": ctx.catalog.gpu_defaults.configuration_arch(ctx.cluster.gpu_arch),
            "extras": dict(ctx.cluster.extras),
        },
        # Who the render is for: overlays that add objects to a WorkloadRun name them after its Workflow.
        "source": {"kind": ctx.source_kind, "name": ctx.source_name, "workflow": truncate_name(ctx.source_name)},
        "target": target,
        "tolerations": tolerations_for(target, bool(entry.vars.get("blanketToleration"))),
        "health_monitor": health_monitor_for(target),
        "topology_key": DEFAULT_TOPOLOGY_KEY,
    }


def instantiate_catalog(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    templates = template_set(str(ctx.catalog.root), str(ctx.overlays.root))
    try:
        spec = templates.render_yaml(entry.template, template_values(unit, ctx), ctx.path)
    except CompileError as exc:
        return unit, exc.diagnostics
    name = workflow_name(ctx.source_name, entry.domain, entry.variant, unit.category.get("options"))
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {
            "app.kubernetes.io/managed-by": MANAGED_BY,
            LABEL_CERTIFICATION: ctx.source_name,
            LABEL_CATEGORY_DOMAIN: entry.domain,
            LABEL_CATEGORY_VARIANT: entry.variant,
        },
    }
    requested_scale = (unit.category.get("options") or {}).get("testScale") or ctx.spec.get("testScale")
    if requested_scale:
        metadata["annotations"] = {ANNOTATION_REQUESTED_TEST_SCALE: requested_scale}
    if requested_scale == "diagnose" and ctx.diagnose_annotations:
        # the planner and the failed run's groups, as the user set them on the Certification
        metadata["annotations"].update(dict(ctx.diagnose_annotations))
    workflow = {"apiVersion": API_VERSION, "kind": "Workflow", "metadata": metadata, "spec": spec}
    return replace(unit, workflow=workflow).with_provenance({"decision": "catalogEntry", "value": entry.key}), []
