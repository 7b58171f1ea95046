"""Pass: turn a WorkloadRun spec into the resolved options the shared passes read.

A WorkloadRun carries its sizing and workload fields on ``spec`` directly, and its run shape
under ``spec.orchestration``. This pass copies them into ``unit.options`` under the names a
Certification category uses (``gpusPerNode``, ``image``, ``env``, ``testScale``...), so that
the GPU defaults, env, image, pull-secret and label passes work on a WorkloadRun unchanged.
``numNodes`` is left to the sizing pass, which decides ``nodesPerJob`` from it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..diagnostics import Diagnostic
from ..unit import Context, Unit

__all__ = ["resolve_workloadrun", "SPEC_OPTION_KEYS", "ORCHESTRATION_OPTION_KEYS"]

#: spec fields that keep their name as options
SPEC_OPTION_KEYS = (
    "gpusPerNode",
    "mlnxPerNode",
    "nicResourceName",
    "enableMNNVL",
    "image",
    "imagePullSecrets",
    "env",
    "resources",
    "thresholds",
)

#: ``spec.orchestration`` fields, as options
ORCHESTRATION_OPTION_KEYS = ("testScale", "placement", "repeatCount", "maxConcurrent", "timeoutPerJob")


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def resolve_workloadrun(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    spec = ctx.spec
    options: dict[str, Any] = {}
    for key in SPEC_OPTION_KEYS:
        if _present(spec.get(key)):
            options[key] = spec[key]
    orchestration = spec.get("orchestration") or {}
    for key in ORCHESTRATION_OPTION_KEYS:
        if _present(orchestration.get(key)):
            options[key] = orchestration[key]
    labels = (spec.get("workloadMetadata") or {}).get("labels")
    if labels:
        options["workloadMetadata"] = {"labels": dict(labels)}
    checkpoint = spec.get("checkpoint")
    if checkpoint:
        options["enableCheckpoint"] = True
        options["storageSize"] = checkpoint["storageSize"]
        for key in ("storageClassName", "maxRestarts"):
            if _present(checkpoint.get(key)):
                options[key] = checkpoint[key]
    return replace(unit, options=options), []
