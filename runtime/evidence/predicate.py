"""The predicate of the evidence Statement: what the run concluded and what it measured.

Its type, :data:`PREDICATE_TYPE`, is a URI this project owns; the trailing ``v1`` is the major
version (a reader refuses another major version; fields may be added within one). The
predicate is built from the one verdict model (verdict per category, failed nodes, groups) and
from the objects the verdict was judged from (every measurement row, thresholds, images, times),
so it says what the reports say and more, never something else. Nothing here reads a clock:
every time comes from an object, so the same objects give the same predicate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_APPLIED_OVERLAYS

from .measurements import job_measurements, terminal_time

__all__ = ["PREDICATE_PREFIX", "PREDICATE_TYPE", "PREDICATE_VERSION", "build_predicate", "catalog_summary"]

PREDICATE_PREFIX = "https://nvcre.dev/evidence/v"
PREDICATE_VERSION = 1
PREDICATE_TYPE = f"{PREDICATE_PREFIX}{PREDICATE_VERSION}"
_MAX_CATALOG_FILE = 4 * 1024 * 1024


def _thresholds(workflow: Mapping[str, Any]) -> dict[str, str]:
    performance = ((workflow.get("spec") or {}).get("validation") or {}).get("performance") or {}
    found = (performance.get("thresholds") or {}).get("thresholds") or {}
    return {str(k): str(v) for k, v in sorted(found.items())} if isinstance(found, Mapping) else {}


def _images(rendered: Mapping[str, Any]) -> list[str]:
    from nvcre.compiler.images import mirror_manifest, unique_images

    return unique_images(mirror_manifest([rendered]))


def _overlays(workflow: Mapping[str, Any]) -> list[str]:
    raw = ((workflow.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_APPLIED_OVERLAYS)
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _optional(out: dict[str, Any], **values: Any) -> dict[str, Any]:
    out.update({k: v for k, v in values.items() if v not in (None, "", [], {}, ())})
    return out


def _group(group: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": group.name,
        "nodes": list(group.nodes),
        "phase": group.phase,
        "failed": group.failed,
        "belowMin": group.below_min,
    }
    return _optional(
        out,
        reason=group.reason,
        job=group.job_name,
        domains=list(group.domains),
        transport=list(group.transport),
        nodeCount=group.node_count or None,
        peakBusBandwidthGBps=group.bandwidth.bus_bw if group.bandwidth is not None else None,
        restarts=group.restarts.count if group.restarts is not None else None,
    )


def _training(metrics: Any) -> dict[str, Any]:
    if metrics is None:
        return {}
    return _optional({}, goodput=metrics.goodput, stepTimeSeconds=metrics.step_time_seconds, tflopsPerGPU=metrics.tflops_per_gpu)


def _category(
    category: Any, workflow: Mapping[str, Any] | None, rendered: Mapping[str, Any] | None, context: Mapping[str, Any]
) -> dict[str, Any]:
    from .workflows import rendered_workflow

    out: dict[str, Any] = {
        "category": category.key,
        "domain": category.domain,
        "variant": category.variant,
        "status": category.status,
        "groups": [_group(g) for g in category.groups],
    }
    workflow = workflow or {}
    rendered = rendered if rendered is not None else (rendered_workflow(workflow) if workflow else {})
    return _optional(
        out,
        workflow=category.workflow,
        failureReason=category.failure_reason,
        testScale=category.test_scale,
        placement=category.placement,
        nodesPerJob=category.nodes_per_job or None,
        iterations=category.iteration_count if category.iteration_count > 1 else None,
        targetNodes=category.target_nodes or None,
        exercisedNodes=category.exercised_nodes or None,
        runtimeSeconds=category.runtime_seconds,
        thresholds=_thresholds(workflow) if workflow else {},
        images=_images(rendered) if rendered else [],
        overlays=_overlays(workflow) if workflow else [],
        training=_training(category.training),
        jobs=job_measurements(workflow, context["jobs"], context["measurements"]) if workflow else [],
    )


def _timings(run: Mapping[str, Any], workflows: Sequence[Mapping[str, Any]], verdict: Any) -> dict[str, Any]:
    meta = run.get("metadata") or {}
    by_name = {str((w.get("metadata") or {}).get("name")): w for w in workflows}
    categories = []
    for category in verdict.categories:
        workflow = by_name.get(category.workflow) or {}
        entry: dict[str, Any] = {"category": category.key}
        categories.append(
            _optional(
                entry,
                workflow=category.workflow,
                start=str((workflow.get("metadata") or {}).get("creationTimestamp") or ""),
                end=terminal_time(workflow) if workflow else "",
                runtimeSeconds=category.runtime_seconds,
            )
        )
    return _optional({"categories": categories}, created=str(meta.get("creationTimestamp") or ""), finished=terminal_time(run))


def catalog_summary() -> dict[str, Any]:
    """The catalog this nvcrectl renders with: its categories and a digest of every file in it."""
    import hashlib

    from nvcre.compiler.catalog import catalog_root, load_catalog

    root = Path(catalog_root())
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        with open(path, "rb") as fh:
            data = fh.read(_MAX_CATALOG_FILE)
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    catalog = load_catalog()
    return {"sha256": digest.hexdigest(), "categories": [e.key for e in catalog.entries]}


def build_predicate(
    *,
    run: Mapping[str, Any],
    workflows: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
    measurements: Sequence[Mapping[str, Any]],
    verdict: Any,
    catalog: Mapping[str, Any],
    tools: Mapping[str, str],
    rendered: Any = None,
) -> dict[str, Any]:
    """The predicate of one run."""
    meta = run.get("metadata") or {}
    by_name = {str((w.get("metadata") or {}).get("name")): w for w in workflows}
    context = {"jobs": jobs, "measurements": measurements}
    failed = sorted({(n.name, n.reason, n.message) for n in verdict.failed_nodes})
    categories = [_category(c, by_name.get(c.workflow), None, context) for c in verdict.categories]
    if rendered is not None:
        for entry in categories:
            if entry.get("workflow") in rendered.agrees:
                entry["renderMatchesCluster"] = rendered.agrees[entry["workflow"]]
    workflows_entry = _optional({"source": rendered.source}, problem=rendered.problem) if rendered is not None else {}
    return {
        "run": _optional(
            {"kind": verdict.kind, "name": verdict.name, "namespace": verdict.namespace, "result": verdict.result},
            uid=str(meta.get("uid") or ""),
            phase=verdict.status,
            platform=verdict.platform,
            gpu=verdict.gpu,
            totalNodes=verdict.total_nodes or None,
            excludedNodes=list(verdict.excluded_nodes),
            exclusionReason=verdict.exclusion_reason,
        ),
        "categories": categories,
        **({"workflows": workflows_entry} if workflows_entry else {}),
        "failedNodes": [_optional({"name": n, "reason": r}, message=m) for n, r, m in failed],
        "timings": _timings(run, workflows, verdict),
        "catalog": dict(catalog),
        "tools": dict(sorted(tools.items())),
    }
