"""The diagnose Certification that follows a failed one: one category, its failed run as the prior.

A failed category's Workflow knows which node groups ran and which failed. The diagnose of that
category should start there (``docs/diagnose.md``): its planner gives the nodes of the failed
groups more exposures and searches their paths first. This module turns a failed Certification
and its Workflows (plain objects, read by the caller) into the Certification that runs that
diagnose: the same target and settings, the one category with ``testScale: diagnose``, and the
groups in the ``nvcre.nvidia.com/diagnose-prior`` annotation, which the render passes on to the
diagnose Workflow. Pure: same objects, same document.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .diagnostics import CompileError, Diagnostic, error
from .vocabulary import ANNOTATION_DIAGNOSE_PRIOR, GROUP, LABEL_CATEGORY_DOMAIN, LABEL_CATEGORY_VARIANT

__all__ = ["compose_diagnose", "diagnose_prior", "failed_categories"]

#: Kubernetes object names are at most this long; the suffix says what the object is
_NAME_LIMIT = 253
_SUFFIX = "-diagnose"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def failed_categories(certification: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(domain, variant)`` of every category whose status is Failed, in status order."""
    rows = _list(_map(certification.get("status")).get("categoryStatuses"))
    return [(str(row.get("domain")), str(row.get("variant"))) for row in rows if isinstance(row, Mapping) and row.get("status") == "Failed"]


def diagnose_prior(workflow: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"groups": [{"nodes", "passed"}]}`` from a Workflow's finished groups; ``None`` without any."""
    groups = []
    for group in _list(_map(_map(workflow.get("status")).get("orchestration")).get("groups")):
        if not isinstance(group, Mapping) or group.get("phase") not in ("Succeeded", "Failed"):
            continue
        nodes = sorted({str(node) for node in _list(group.get("nodes")) if node})
        if nodes:
            groups.append({"nodes": nodes, "passed": group.get("phase") == "Succeeded"})
    return {"groups": groups} if groups else None


def _workflow_of(workflows: Sequence[Mapping[str, Any]], domain: str, variant: str) -> Mapping[str, Any] | None:
    for workflow in workflows:
        labels = _map(_map(workflow.get("metadata")).get("labels"))
        if labels.get(LABEL_CATEGORY_DOMAIN) == domain and labels.get(LABEL_CATEGORY_VARIANT) == variant:
            return workflow
    return None


def _choose(certification: Mapping[str, Any], category: str | None) -> tuple[tuple[str, str] | None, list[Diagnostic]]:
    failed = failed_categories(certification)
    if category is None:
        if len(failed) == 1:
            return failed[0], []
        if not failed:
            return None, [
                error("NoFailedCategory", "status.categoryStatuses", "no category of this Certification failed: nothing to diagnose")
            ]
        names = ", ".join(f"{d}/{v}" for d, v in failed)
        return None, [error("CategoryRequired", "--category", f"several categories failed ({names}): choose one with --category")]
    domain, _, variant = category.partition("/")
    if (domain, variant) not in failed:
        return None, [error("CategoryNotFailed", "--category", f"{category} is not a failed category of this Certification")]
    return (domain, variant), []


def compose_diagnose(
    certification: Mapping[str, Any],
    workflows: Sequence[Mapping[str, Any]],
    *,
    category: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The diagnose Certification for one failed category; raises :class:`CompileError`."""
    chosen, diags = _choose(certification, category)
    if chosen is None:
        raise CompileError(diags)
    domain, variant = chosen
    spec = copy.deepcopy(dict(_map(certification.get("spec"))))
    original = next(
        (c for c in _list(spec.get("categories")) if isinstance(c, Mapping) and (c.get("domain"), c.get("variant")) == chosen),
        {"domain": domain, "variant": variant},
    )
    options = dict(_map(original.get("options")))
    options["testScale"] = "diagnose"
    spec["categories"] = [{**dict(original), "options": options}]
    meta = _map(certification.get("metadata"))
    base = str(meta.get("name") or "certification")
    metadata: dict[str, Any] = {"name": name or base[: _NAME_LIMIT - len(_SUFFIX)] + _SUFFIX}
    if meta.get("namespace"):
        metadata["namespace"] = meta["namespace"]
    workflow = _workflow_of(workflows, domain, variant)
    prior = diagnose_prior(workflow) if workflow is not None else None
    if prior is not None:
        metadata["annotations"] = {ANNOTATION_DIAGNOSE_PRIOR: json.dumps(prior, sort_keys=True, separators=(",", ":"))}
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Certification", "metadata": metadata, "spec": spec}
