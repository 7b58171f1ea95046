"""Pass: record on the Workflow where its rendered values came from.

Two annotations, both canonical JSON so the bytes never vary:

* ``nvcre.nvidia.com/applied-overlays``: the overlays that matched, in the order they applied;
* ``nvcre.nvidia.com/render-facts``: each cluster fact the render used (platform, GPU
  architecture, ...) with whether it was detected, supplied or defaulted.

The per-value decisions (GPU defaults, node counts, ...) stay in the unit's provenance and are
printed by ``render --explain``; only facts and overlays travel with the manifest.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ..diagnostics import Diagnostic
from ..unit import Context, Unit
from ..vocabulary import ANNOTATION_APPLIED_OVERLAYS, ANNOTATION_RENDER_FACTS

__all__ = ["stamp_provenance"]


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stamp_provenance(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    # Only the path to the annotations is copied: the rest is shared with the unit this pass was
    # handed, which no one changes (every pass copies what it changes, so the tree is the render's own).
    workflow = dict(unit.workflow or {})
    metadata = workflow["metadata"] = dict(workflow.get("metadata", {}))
    annotations = metadata["annotations"] = dict(metadata.get("annotations", {}))
    overlays = [record["value"] for record in unit.provenance if record.get("decision") == "overlay"]
    annotations[ANNOTATION_APPLIED_OVERLAYS] = _compact(overlays)
    facts = {name: {key: item[key] for key in ("value", "source") if key in item} for name, item in ctx.cluster.provenance.items()}
    annotations[ANNOTATION_RENDER_FACTS] = _compact(facts)
    return replace(unit, workflow=workflow), []
