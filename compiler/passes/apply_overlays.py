"""Pass: apply every platform x architecture overlay whose ``when`` matches, in order.

Matching uses the decided platform and GPU architecture, the entry, its launch style and the
resolved options. Each matching overlay's patch template is rendered with the same values the
catalog template saw, then its operations apply in order. The applied overlays are recorded in
the provenance, in order, with their one-line reasons.
"""

from __future__ import annotations

from dataclasses import replace

from ..datacopy import plain_copy
from ..diagnostics import CompileError, Diagnostic, error
from ..overlays import MatchFacts, OverlayConditionError, PatchError, apply_operation
from ..templating import template_set
from ..unit import Context, Unit
from .instantiate_catalog import template_values

__all__ = ["apply_overlays"]


def apply_overlays(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    facts = MatchFacts(
        platform=ctx.cluster.platform,
        gpu_arch=ctx.cluster.gpu_arch,
        entry=ctx.entry.key,
        launch=ctx.entry.launch,
        source_kind=ctx.source_kind,
        options=unit.options,
    )
    templates = template_set(str(ctx.catalog.root), str(ctx.overlays.root))
    try:
        matching = ctx.overlays.matching(facts)
    except OverlayConditionError as exc:
        where = f"overlay {exc.overlay.name} ({exc.overlay.source})"
        return unit, [
            error(
                "OverlayConditionFailed",
                f"{where} when.expression",
                f"{exc.message} (pass apply_overlays, while rendering {ctx.entry.key})",
            )
        ]
    if not matching and type(unit.workflow) is dict:
        return unit, []  # nothing to change, so nothing to copy
    values = template_values(unit, ctx)
    workflow = plain_copy(dict(unit.workflow or {}))
    owners: dict[str, str] = {}
    applied = []
    for overlay in matching:
        where = f"overlay {overlay.name} ({overlay.source})"
        try:
            operations = templates.render_yaml(overlay.patches, values, where)
        except CompileError as exc:
            return unit, exc.diagnostics
        if not isinstance(operations, list):
            return unit, [
                error(
                    "OverlayInvalid",
                    where,
                    f"the patch template must render a list of operations (pass apply_overlays, while rendering {ctx.entry.key})",
                )
            ]
        for index, operation in enumerate(operations):
            try:
                workflow = apply_operation(workflow, operation, owners, overlay.name)
            except PatchError as exc:
                return unit, [
                    error("OverlayPatchFailed", f"{where} patch[{index}]", f"{exc} (pass apply_overlays, while rendering {ctx.entry.key})")
                ]
        applied.append({"decision": "overlay", "value": overlay.name, "reason": overlay.reason})
    return replace(unit, workflow=workflow).with_provenance(*applied), []
