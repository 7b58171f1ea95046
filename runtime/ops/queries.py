"""Read-only questions about a run, answered from the one verdict model.

``nvcrectl certification report|status`` and the MCP tools both call these, so the words a person
reads and the JSON an agent reads cannot disagree: each answer is a projection of
:func:`nvcre.runtime.judge.verdict.certification_verdict` (or the WorkloadRun twin). The shapes are
NVCRE's MCP answers (``{"categories": [...]}``, ``{"report": ...}``, the status object, the failed
nodes object); fields of ours are added beside NVCRE's, never in their place.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..judge.verdict import certification_verdict, workloadrun_verdict
from ..kube.client import Kube
from ..report import json as report_json
from .collect import Collected, collect_run

__all__ = ["categories", "failed_nodes", "report", "status", "verdict_from", "verdict_of"]

#: NVCRE's words for a run or a category still going
_RUNNING = {"IN PROGRESS": "RUNNING", "InProgress": "Running"}


def _now() -> datetime:
    return datetime.now(UTC)


def verdict_of(kube: Kube, kind: str, name: str, namespace: str, *, now: datetime | None = None) -> Any:
    """The verdict model of a Certification or WorkloadRun as the API server holds it now.

    ``now`` (default: this moment) dates the runtime of categories still running, as NVCRE's
    report counts it up to the present."""
    return verdict_from(collect_run(kube, kind, name, namespace), kind, now=now or _now())


def verdict_from(got: Collected, kind: str, *, now: datetime | None = None) -> Any:
    """The verdict model of collected objects (``now`` None: no running category is dated)."""
    if kind == "Certification":
        return certification_verdict(got.run, got.workflows, got.jobs, got.measurements, got.failed_nodes, now=now)
    return workloadrun_verdict(got.run, got.workflow, got.jobs, got.measurements, got.workflow_failed_nodes, now=now)


def categories(entries: Any) -> dict[str, Any]:
    """``{"categories": [{domain, variant, description}]}`` from the catalog's entries."""
    return {"categories": [{"domain": e.domain, "variant": e.variant, "description": e.description} for e in entries]}


def report(kube: Kube, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """``{"report": <the JSON report>}``, the same document ``report -o json`` prints."""
    return {"report": report_json.to_dict(verdict_of(kube, kind, name, namespace))}


def status(kube: Kube, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """NVCRE's status answer: result (PASSED / FAILED / RUNNING...), the run's conditions
    (``type``, ``status``, ``reason``, ``message``), ``totalNodes`` (when known), the excluded
    nodes and why, one entry per category and the failed node names; plus our ``kind``,
    ``status`` (the lifecycle phase) and per-category ``workflow``/``reason``/``blocked``."""
    got = collect_run(kube, kind, name, namespace)
    verdict = verdict_from(got, kind, now=_now())
    answer: dict[str, Any] = {
        "name": verdict.name,
        "namespace": verdict.namespace,
        "result": _RUNNING.get(verdict.result, verdict.result),
        "conditions": _conditions(got.run),
    }
    if verdict.total_nodes:
        answer["totalNodes"] = verdict.total_nodes
    if verdict.excluded_nodes:
        answer["excludedNodes"] = list(verdict.excluded_nodes)
        if verdict.exclusion_reason:
            answer["exclusionReason"] = verdict.exclusion_reason
    answer["categories"] = [
        {
            "domain": c.domain,
            "variant": c.variant,
            "status": _RUNNING.get(c.status, c.status),
            "workflow": c.workflow,
            "reason": c.failure_reason,
            "blocked": c.blocked,
        }
        for c in verdict.categories
    ]
    answer["failedNodes"] = list(verdict.failed_node_names)
    answer["kind"] = verdict.kind
    answer["status"] = verdict.status or "Pending"
    return answer


def _conditions(run: Mapping[str, Any]) -> list[dict[str, str]]:
    """The run's conditions as NVCRE's status answer lists them: type, status, reason, message."""
    status = run.get("status")
    rows = status.get("conditions") if isinstance(status, Mapping) else None
    return [
        {key: str(row.get(key) or "") for key in ("type", "status", "reason", "message")} for row in rows or [] if isinstance(row, Mapping)
    ]


def failed_nodes(kube: Kube, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """``{name, namespace, failedNodes: [{name, reason, message?}]}``, one entry per node and
    reason, sorted by name, reason and message."""
    verdict = verdict_of(kube, kind, name, namespace)
    entries = sorted({(n.name, n.reason, n.message) for n in verdict.failed_nodes})
    return {
        "name": verdict.name,
        "namespace": verdict.namespace,
        "failedNodes": [{"name": n, "reason": r, **({"message": m} if m else {})} for n, r, m in entries],
    }
