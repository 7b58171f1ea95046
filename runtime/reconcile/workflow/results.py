"""What a finished group of a Workflow leaves: its node results, its Job retired with its dependencies.

The succeeded- and failed-nodes ConfigMaps grow with every merge (what is stored is read back
first, so a restarted controller adds to them rather than overwriting); a retired Job is deleted
and its job-scoped dependencies go with it and leave ``dependencyRefs``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nvcre.compiler.vocabulary import FAILED_NODES_PREFIX, SUCCEEDED_NODES_PREFIX

from ... import compile as compiler
from ...kube.errors import ApiError
from ...kube.resources import CONFIGMAPS, JOBS
from ..common import name_of, namespace_of, uid_of
from ..context import Context, referenced_by

__all__ = ["NodeResults"]

log = logging.getLogger("nvcre.runtime.reconcile.workflow")


class NodeResults:
    """The node-results ConfigMaps of Workflows, and the retirement of their groups' Jobs."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def merge(self, wf: Mapping[str, Any], status: dict[str, Any], *, succeeded: Sequence[str], failed: list[Mapping[str, Any]]) -> None:
        """Add to the Workflow's succeeded/failed node ConfigMaps and reference them in ``status``."""
        ctx = self.ctx
        uid8 = uid_of(wf)[:8]
        namespace = namespace_of(wf)
        stored_ok = compiler.stored_succeeded_nodes(ctx.live(CONFIGMAPS, f"{SUCCEEDED_NODES_PREFIX}{uid8}", namespace))
        stored_failed = compiler.stored_failed_nodes(ctx.live(CONFIGMAPS, f"{FAILED_NODES_PREFIX}{uid8}", namespace))
        all_ok = sorted(set(stored_ok) | set(succeeded))
        all_failed = [*stored_failed, *failed]
        for configmap in compiler.expand_node_results(wf, all_ok, all_failed):
            name = name_of(configmap)
            if name.startswith(SUCCEEDED_NODES_PREFIX) and not succeeded:
                continue
            if name.startswith(FAILED_NODES_PREFIX) and not all_failed:
                continue
            try:
                ctx.kube.apply(configmap)
            except ApiError as exc:
                log.warning("node results not written", extra={"configmap": name, "error": exc.message})
                continue
            key = "succeededNodesRef" if name.startswith(SUCCEEDED_NODES_PREFIX) else "failedNodesRef"
            status[key] = {"kind": "ConfigMap", "name": name}

    def clean_job_dependencies(self, status: dict[str, Any], job: Mapping[str, Any]) -> None:
        """Delete the dependencies owned by ``job`` and drop them from ``dependencyRefs``."""
        kept = []
        for ref in status.get("dependencyRefs") or []:
            if ref.get("scope") != "job":
                kept.append(ref)
                continue
            try:
                resource = self.ctx.kube.resource_for(str(ref.get("apiVersion")), str(ref.get("kind")))
            except ApiError:
                kept.append(ref)
                continue
            live = self.ctx.live(resource, str(ref.get("name")), ref.get("namespace") or None)
            if live is None:
                continue
            if referenced_by(live, job):
                self.ctx.kube.delete(resource, name_of(live), ref.get("namespace") or None, uid=uid_of(live))
                continue
            kept.append(ref)
        status["dependencyRefs"] = kept

    def retire_jobs(self, wf: Mapping[str, Any], status: dict[str, Any], groups: list[dict[str, Any]]) -> None:
        """Delete the Jobs (and their job-scoped dependencies) of a finished iteration's groups."""
        ctx = self.ctx
        for group in groups:
            ref = group.get("jobRef") or {}
            job = ctx.live(JOBS, str(ref.get("name") or ""), namespace_of(wf)) if ref.get("name") else None
            if job is not None:
                ctx.kube.delete(JOBS, name_of(job), namespace_of(job), uid=uid_of(job))
                self.clean_job_dependencies(status, job)
