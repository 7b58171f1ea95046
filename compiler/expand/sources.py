"""The Workflows a Certification or WorkloadRun creates: the render, placed and owned.

``expand_certification`` is exactly ``certification render`` (one Workflow per category, in spec
order) plus what a live object adds: the Certification's namespace, a controller owner reference
to it (UID from its ``metadata.uid``) and the ``nvcre.nvidia.com/requested-test-scale``
annotation. ``expand_workloadrun`` does the same for the one Workflow of a WorkloadRun (the
annotation is omitted under Unpinned, which has no scale). Fields the API server adds to the
source (``status``, ``uid``, ``resourceVersion``...) are not part of the render's input. Both
take an optional ``notes`` list that receives the render's warnings and notices (the diagnostics
the CLI prints beside a render), for the controller to turn into Events.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..diagnostics import CompileError, Diagnostic, error
from ..facts import ClusterFacts
from ..vocabulary import ANNOTATION_REQUESTED_TEST_SCALE
from .meta import namespace_of, owner_reference, sub

__all__ = ["as_written", "expand_certification", "expand_workloadrun"]

_WRITTEN_METADATA = ("name", "labels", "annotations")
DEFAULT_TEST_SCALE = "full-scale"


def as_written(document: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The parts of a live object its author wrote: apiVersion, kind, spec and the user metadata."""
    if not isinstance(document, Mapping):
        raise CompileError([error("WrongKind", "", f"expected a {kind} object")])
    metadata = sub(document, "metadata")
    out: dict[str, Any] = {k: copy.deepcopy(document[k]) for k in ("apiVersion", "kind", "spec") if k in document}
    out["metadata"] = {k: copy.deepcopy(metadata[k]) for k in _WRITTEN_METADATA if k in metadata}
    return out


def _place(workflow: Mapping[str, Any], source: Mapping[str, Any], kind: str, test_scale: str | None) -> dict[str, Any]:
    out = copy.deepcopy(dict(workflow))
    meta = dict(out.get("metadata") or {})
    meta["namespace"] = namespace_of(source, kind)
    meta["ownerReferences"] = [owner_reference(source, kind)]
    if test_scale:
        meta["annotations"] = {**dict(meta.get("annotations") or {}), ANNOTATION_REQUESTED_TEST_SCALE: test_scale}
    out["metadata"] = meta
    return out


def _category_scale(spec: Mapping[str, Any], category: Mapping[str, Any]) -> str:
    own = (category.get("options") or {}).get("testScale")
    return str(own or spec.get("testScale") or DEFAULT_TEST_SCALE)


def expand_certification(
    certification: Mapping[str, Any], facts: ClusterFacts | None, *, check_purity: bool = False, notes: list[Diagnostic] | None = None
) -> list[dict[str, Any]]:
    """One Workflow per category, rendered from ``certification`` and ``facts``; raises CompileError."""
    from ..render import render_certification

    # Fail on a missing namespace or uid before rendering, so the error names the object, not a category.
    namespace_of(certification, "Certification")
    owner_reference(certification, "Certification")
    rendered = render_certification(as_written(certification, "Certification"), facts=facts, check_purity=check_purity)
    if notes is not None:
        notes.extend(d for d in rendered.diagnostics if not d.is_error)
    spec = certification.get("spec") or {}
    categories = spec.get("categories") or []
    return [
        _place(workflow, certification, "Certification", _category_scale(spec, category))
        for workflow, category in zip(rendered.workflows, categories)
    ]


def expand_workloadrun(
    workloadrun: Mapping[str, Any], facts: ClusterFacts | None, *, check_purity: bool = False, notes: list[Diagnostic] | None = None
) -> dict[str, Any]:
    """The WorkloadRun's one Workflow, rendered from ``workloadrun`` and ``facts``; raises CompileError."""
    from ..workloadrun import render_workloadrun

    namespace_of(workloadrun, "WorkloadRun")
    owner_reference(workloadrun, "WorkloadRun")
    rendered = render_workloadrun(as_written(workloadrun, "WorkloadRun"), facts=facts, check_purity=check_purity)
    if notes is not None:
        notes.extend(d for d in rendered.diagnostics if not d.is_error)
    orchestration = (workloadrun.get("spec") or {}).get("orchestration") or {}
    scale = None if orchestration.get("placement") == "Unpinned" else str(orchestration.get("testScale") or DEFAULT_TEST_SCALE)
    return _place(rendered.workflows[0], workloadrun, "WorkloadRun", scale)
