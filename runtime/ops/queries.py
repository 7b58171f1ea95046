"""Read-only questions about a run, answered from the one verdict model.

``nvcrectl certification report|status`` and the MCP tools both call these, so the words a person
reads and the JSON an agent reads cannot disagree: each answer is a projection of
:func:`nvcre.runtime.judge.verdict.certification_verdict` (or the WorkloadRun twin).
"""

from __future__ import annotations

from typing import Any

from ..judge.verdict import certification_verdict, workloadrun_verdict
from ..kube.client import Kube
from ..report import json as report_json
from .collect import collect_run

__all__ = ["failed_nodes", "report", "status", "verdict_of"]


def verdict_of(kube: Kube, kind: str, name: str, namespace: str) -> Any:
    """The verdict model of a Certification or WorkloadRun as the API server holds it now."""
    got = collect_run(kube, kind, name, namespace)
    if kind == "Certification":
        return certification_verdict(got.run, got.workflows, got.jobs, got.measurements, got.failed_nodes)
    workflow = got.workflows[0] if got.workflows else None
    failed = next(iter(got.failed_nodes.values()), ())
    return workloadrun_verdict(got.run, workflow, got.jobs, got.measurements, failed)


def report(kube: Kube, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """The JSON report (the same document ``report -o json`` prints)."""
    return report_json.to_dict(verdict_of(kube, kind, name, namespace))


def status(kube: Kube, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """Phase, result and one line per category."""
    verdict = verdict_of(kube, kind, name, namespace)
    return {
        "kind": verdict.kind,
        "name": verdict.name,
        "namespace": verdict.namespace,
        "status": verdict.status or "Pending",
        "result": verdict.result,
        "categories": [
            {"category": f"{c.domain}/{c.variant}", "status": c.status, "workflow": c.workflow,
             "reason": c.failure_reason, "blocked": c.blocked}
            for c in verdict.categories
        ],
        "failedNodes": list(verdict.failed_node_names),
    }


def failed_nodes(kube: Kube, kind: str, name: str, namespace: str) -> list[dict[str, str]]:
    """Every failed node with its reason and message."""
    verdict = verdict_of(kube, kind, name, namespace)
    return [{"name": n.name, "reason": n.reason, "message": n.message} for n in verdict.failed_nodes]
