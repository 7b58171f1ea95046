"""Render a Certification into Workflow manifests: validate, decide the cluster facts, lower each category.

This is the compiler's front door. It is pure: the same document, facts and flags always give
the same manifests and the same diagnostics, in the same order. Every error found in any
category is collected before the render fails, so a user fixes a file in one round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .catalog import Catalog, load_catalog
from .datacopy import is_plain, plain_copy
from .diagnostics import CompileError, Diagnostic, attributed, error
from .overlays import OverlaySet, load_overlays
from .pipeline import run_passes
from .unit import ClusterView, Context, GangSpec, Unit
from .vocabulary import ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR

__all__ = ["Rendered", "render_certification", "cluster_view", "gang_spec", "validate_kind", "decide_cluster", "dedupe"]


@dataclass(frozen=True)
class Rendered:
    workflows: list[dict[str, Any]]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: per category (in spec order): the decisions the passes recorded
    provenance: list[tuple[dict[str, Any], ...]] = field(default_factory=list)
    cluster: ClusterView | None = None


def gang_spec(spec: Mapping[str, Any]) -> GangSpec | None:
    gang = spec.get("gangScheduler")
    if not gang or not gang.get("schedulerName"):
        return None
    return GangSpec(
        scheduler_name=gang["schedulerName"],
        queue=gang.get("queue") or "default-queue",
        queue_label_key=gang.get("queueLabelKey") or "kai.scheduler/queue",
    )


def cluster_view(detection: Any, facts: Any = None) -> ClusterView:
    """Turn the detector's result into the immutable view the passes read."""
    return ClusterView(
        facts=facts,
        nodes=tuple(detection.nodes),
        platform=detection.platform,
        gpu_arch=detection.gpu_arch,
        gpu_products=tuple(detection.gpu_products),
        target_nodes=tuple(detection.target_nodes),
        provenance={name: dict(value) for name, value in sorted(detection.provenance.items())},
        extras=dict(detection.extras),
    )


def passed_on_annotations(document: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Certification annotations its diagnose Workflows carry on: the planner and the prior."""
    annotations = (document.get("metadata") or {}).get("annotations") or {}
    keys = (ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR)
    return tuple((key, annotations[key]) for key in keys if isinstance(annotations.get(key), str))


#: documents already validated in this process: (kind, ``repr`` of plain data) -> (decoded, report)
_VALIDATED: dict[tuple[str, str], tuple[dict[str, Any], tuple[Diagnostic, ...]]] = {}
#: a process validates a handful of documents again and again (the CLI's check, then the render;
#: a controller's every reconcile): a small memo holds them, emptied when full
_VALIDATED_LIMIT = 32
#: documents longer than this (as ``repr``) are validated every time rather than kept
_VALIDATED_MAX_KEY = 128 * 1024


def validate_kind(document: Mapping[str, Any], kind: str) -> tuple[dict[str, Any], list[Diagnostic]]:
    """API validation of ``document``, which must be a ``kind``; raises CompileError on any error.

    Returns the document as the API server would decode it (whole-valued floats such as
    ``2.0`` become integers), so the passes never see a number the server would not store.
    A document the shortcut proves valid builds no API model; any other gets the full report.

    Validation is a pure function of the document's plain data, so a document that passed is
    remembered by its ``repr`` (which tells apart types, order and values) and not checked again
    in this process; the caller still gets its own copy. Anything but plain data, and every
    document that fails, is validated each time.
    """
    key = _memo_key(document, kind)
    known = _VALIDATED.get(key) if key is not None else None
    if known is not None:
        return plain_copy(known[0]), list(known[1])
    decoded, problems = _validate_kind(document, kind)
    if key is not None:
        if len(_VALIDATED) >= _VALIDATED_LIMIT:
            _VALIDATED.clear()
        _VALIDATED[key] = (plain_copy(decoded), tuple(problems))
    return decoded, problems


def _memo_key(document: Mapping[str, Any], kind: str) -> tuple[str, str] | None:
    """The memo key of a plain ``document``; None for anything else, anything too large, and
    anything nested too deep to walk (validation then words its own error for it)."""
    try:
        key = (kind, repr(document)) if type(document) is dict and is_plain(document) else None
    except RecursionError:
        return None
    return key if key is not None and len(key[1]) <= _VALIDATED_MAX_KEY else None


def _validate_kind(document: Mapping[str, Any], kind: str) -> tuple[dict[str, Any], list[Diagnostic]]:
    from .api.schema_check import whole_numbers_as_integers
    from .api.validate import certainly_valid, schema_of_kind, validate

    if not isinstance(document, Mapping):
        raise CompileError(
            [error("DocumentInvalid", "", f"a document must be a mapping, got {type(document).__name__}").from_stage("validate")]
        )
    problems: list[Diagnostic] = []
    if not certainly_valid(dict(document), kind):
        problems = attributed(validate(dict(document)), "validate")
    if any(d.is_error for d in problems):
        raise CompileError(problems)
    if document.get("kind") != kind:
        raise CompileError([error("WrongKind", "kind", f"expected a {kind}, got {document.get('kind')!r}").from_stage("validate")])
    return whole_numbers_as_integers(schema_of_kind(kind), dict(document)), problems


def decide_cluster(
    facts: Any, target: Mapping[str, Any], platform: str | None, gpu_arch: str | None
) -> tuple[ClusterView, list[Diagnostic]]:
    """Detect (or take from the flags) the cluster facts a render uses; raises CompileError on any error."""
    from .detect import detect_cluster

    detection, found = detect_cluster(facts, target=dict(target), platform=platform, gpu_arch=gpu_arch)
    found = attributed(found, "detect")
    if any(d.is_error for d in found):
        raise CompileError(found)
    return cluster_view(detection, facts), list(found)


# Long: the top-level driver: validation, detection, each category's passes and the collected errors, in order.
def render_certification(
    document: Mapping[str, Any],
    *,
    facts: Any = None,
    platform: str | None = None,
    gpu_arch: str | None = None,
    catalog: Catalog | None = None,
    overlays: OverlaySet | None = None,
    check_purity: bool = False,
) -> Rendered:
    """Lower every category of ``document``; raise CompileError with every error found."""
    document, problems = validate_kind(document, "Certification")
    catalog = catalog or load_catalog()
    overlays = overlays or load_overlays()
    spec = document["spec"]
    name = document["metadata"]["name"]
    diagnose_annotations = passed_on_annotations(document)

    categories = spec.get("categories") or []
    unknown = [
        error(
            "CategoryNotFound", f"spec.categories[{i}]", f"unknown certification category: {c.get('domain')}/{c.get('variant')}"
        ).from_stage("validate")
        for i, c in enumerate(categories)
        if catalog.lookup(c.get("domain", ""), c.get("variant", "")) is None
    ]
    if unknown:
        raise CompileError(problems + unknown)

    try:
        view, found = decide_cluster(facts, spec.get("target") or {}, platform, gpu_arch)
    except CompileError as exc:
        raise CompileError(problems + exc.diagnostics) from None
    diagnostics = problems + found
    gang = gang_spec(spec)

    workflows: list[dict[str, Any]] = []
    provenance: list[tuple[dict[str, Any], ...]] = []
    for index, category in enumerate(categories):
        entry = catalog.lookup(category["domain"], category["variant"])
        if entry is None:  # unknown categories were refused above
            raise CompileError([error("CategoryNotFound", f"spec.categories[{index}]", "unknown certification category")])
        ctx = Context(
            source_kind="Certification",
            source_name=name,
            spec=spec,
            entry=entry.info(),
            cluster=view,
            path=f"spec.categories[{index}]",
            category_index=index,
            gang=gang,
            catalog=catalog,
            overlays=overlays,
            diagnose_annotations=diagnose_annotations,
        )
        unit, found = run_passes(Unit(category=category), ctx, check_purity=check_purity)
        diagnostics.extend(found)
        if unit.workflow is not None and not any(d.is_error for d in found):
            workflows.append(dict(unit.workflow))
            provenance.append(tuple(dict(r) for r in unit.provenance))
    if any(d.is_error for d in diagnostics):
        raise CompileError(dedupe(diagnostics))
    return Rendered(workflows=workflows, diagnostics=dedupe(diagnostics), provenance=provenance, cluster=view)


def dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for diag in diagnostics:
        key = (diag.code, diag.path, diag.message)
        if key not in seen:
            seen.add(key)
            out.append(diag)
    return out
