"""A Workflow's ``spec.overrides``: applied once platform and GPU architecture are known (pure).

An override's ``when`` matches on the detected ``platform`` and ``gpuArchitecture`` (``equals``,
``in``, ``notIn``), the ``workloadKind`` (``TrainJob``), the ``topology`` (``mode`` is ``simple``
without a topology key, else ``topology``; ``domainCount`` is the number of distinct values of the
key among the target nodes), and a CEL ``expression`` over those five names. ``config`` has
nothing to compare with here, so an override that sets it never matches. An empty ``when``
always matches.

A matching override, in order: ``jobTemplate`` is merged into the job template (maps merge,
``null`` deletes, named lists merge by name, other lists replace); ``jobTemplatePatch`` is applied
as RFC 6902; each of its ``dependencies`` is merged into the dependency with the same apiVersion,
kind and name, or appended; its ``orchestration`` fields replace the Workflow's. The events are
``OverrideApplied`` / ``OverrideNoOp`` per match and ``NoOverridesMatched`` when none did.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch

from ..cel import CELError, evaluate_bool
from ..merge import merge
from .model import PlanEvent

__all__ = ["OverrideContext", "OverrideFailure", "OverrideResult", "apply_overrides", "summarize_when"]

_ORCHESTRATION_FIELDS = ("target", "topology", "execution", "iterations", "placement")


class OverrideFailure(ValueError):
    """An override that cannot be applied (a bad expression, a JSON patch that does not fit)."""


@dataclass(frozen=True)
class OverrideContext:
    """The detected values an override's ``when`` is matched against."""

    platform: str
    gpu_architecture: str
    workload_kind: str = "TrainJob"
    topology_mode: str = "simple"
    domain_count: int = 0

    def activation(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "gpuArchitecture": self.gpu_architecture,
            "workloadKind": self.workload_kind,
            "topologyMode": self.topology_mode,
            "domainCount": self.domain_count,
        }


@dataclass(frozen=True)
class OverrideResult:
    """The Workflow spec with every matching override applied, and what was applied."""

    spec: Mapping[str, Any]
    #: ``status.orchestration.appliedOverrides`` entries: index, when, patches, noOp
    applied: tuple[Mapping[str, Any], ...]
    events: tuple[PlanEvent, ...]


def _string_match(spec: Mapping[str, Any], value: str) -> bool:
    if spec.get("equals") and spec["equals"] != value:
        return False
    if spec.get("in") and value not in spec["in"]:
        return False
    return not (spec.get("notIn") and value in spec["notIn"])


def _count_match(spec: Mapping[str, Any], value: int) -> bool:
    if spec.get("equals") is not None and spec["equals"] != value:
        return False
    if spec.get("greaterThan") is not None and value <= spec["greaterThan"]:
        return False
    return not (spec.get("lessThan") is not None and value >= spec["lessThan"])


def matches(when: Mapping[str, Any], ctx: OverrideContext, index: int) -> bool:
    if when.get("platform") and not _string_match(when["platform"], ctx.platform):
        return False
    if when.get("gpuArchitecture") and not _string_match(when["gpuArchitecture"], ctx.gpu_architecture):
        return False
    if when.get("workloadKind") and when["workloadKind"] != ctx.workload_kind:
        return False
    topology = when.get("topology") or {}
    if topology.get("mode") and topology["mode"] != ctx.topology_mode:
        return False
    if topology.get("domainCount") and not _count_match(topology["domainCount"], ctx.domain_count):
        return False
    if when.get("config"):
        return False
    if when.get("expression"):
        try:
            return evaluate_bool(when["expression"], ctx.activation())
        except CELError as exc:
            raise OverrideFailure(f"override[{index}]: evaluating when: {exc}") from None
    return True


def _summary_string(spec: Mapping[str, Any]) -> str:
    if spec.get("equals"):
        return str(spec["equals"])
    if spec.get("in"):
        return "in [" + ",".join(spec["in"]) + "]"
    if spec.get("notIn"):
        return "notIn [" + ",".join(spec["notIn"]) + "]"
    return "<any>"


def summarize_when(when: Mapping[str, Any]) -> str:
    """``gpuArchitecture=h100, platform=in [aws,gcp]``; ``<always>`` for an empty ``when``."""
    parts: list[str] = []
    if when.get("gpuArchitecture"):
        parts.append("gpuArchitecture=" + _summary_string(when["gpuArchitecture"]))
    if when.get("platform"):
        parts.append("platform=" + _summary_string(when["platform"]))
    if when.get("workloadKind"):
        parts.append("workloadKind=" + str(when["workloadKind"]))
    topology = when.get("topology") or {}
    if topology.get("mode"):
        parts.append("topology.mode=" + str(topology["mode"]))
    if topology.get("domainCount"):
        count = topology["domainCount"]
        shown = [
            f"{sign}{count[key]}" for key, sign in (("equals", "="), ("greaterThan", ">"), ("lessThan", "<")) if count.get(key) is not None
        ]
        parts.append("topology.domainCount=" + ",".join(shown))
    if when.get("config"):
        parts.append("config=<custom>")
    if when.get("expression"):
        expression = str(when["expression"])
        parts.append("expression=" + (expression[:37] + "..." if len(expression) > 40 else expression))
    return ", ".join(parts) if parts else "<always>"


def _patches(override: Mapping[str, Any]) -> list[str]:
    parts = []
    if override.get("jobTemplate"):
        parts.append("jobTemplate")
    if override.get("jobTemplatePatch"):
        parts.append("jobTemplatePatch")
    if override.get("dependencies"):
        parts.append(f"{len(override['dependencies'])} dependencies")
    if override.get("orchestration"):
        parts.append("orchestration")
    return parts


def _dep_key(dep: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(dep.get("apiVersion", "")), str(dep.get("kind", "")), str((dep.get("metadata") or {}).get("name", "")))


def _apply_one(spec: dict[str, Any], override: Mapping[str, Any], index: int) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    if override.get("jobTemplate"):
        out["jobTemplate"] = merge(out.get("jobTemplate") or {}, override["jobTemplate"])
    if override.get("jobTemplatePatch"):
        try:
            out["jobTemplate"] = jsonpatch.apply_patch(out.get("jobTemplate") or {}, list(override["jobTemplatePatch"]))
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise OverrideFailure(f"override[{index}]: failed to apply jobTemplatePatch: {exc}") from None
    for dep in override.get("dependencies") or []:
        deps = list(out.get("dependencies") or [])
        for position, base in enumerate(deps):
            if _dep_key(base) == _dep_key(dep):
                deps[position] = merge(base, dep)
                break
        else:
            deps.append(copy.deepcopy(dict(dep)))
        out["dependencies"] = deps
    orchestration = override.get("orchestration") or {}
    if orchestration:
        merged = dict(out.get("orchestration") or {})
        for key in _ORCHESTRATION_FIELDS:
            if orchestration.get(key) is not None:
                merged[key] = copy.deepcopy(orchestration[key])
        out["orchestration"] = merged
    return out


def apply_overrides(spec: Mapping[str, Any], ctx: OverrideContext) -> OverrideResult:
    """Apply every matching override of ``spec`` in order; the result has no ``overrides`` left."""
    overrides: Sequence[Mapping[str, Any]] = spec.get("overrides") or []
    current = {k: copy.deepcopy(v) for k, v in spec.items() if k != "overrides"}
    applied: list[Mapping[str, Any]] = []
    events: list[PlanEvent] = []
    for index, override in enumerate(overrides):
        when = override.get("when") or {}
        if not matches(when, ctx, index):
            continue
        updated = _apply_one(current, override, index)
        no_op = updated == current
        current = updated
        summary = summarize_when(when)
        patches = _patches(override)
        # NVCRE's shape: both are strings ("gpuArchitecture=h100, platform=aws"; "jobTemplate, 2 dependencies")
        record: dict[str, Any] = {"index": index, "when": summary, "patches": ", ".join(patches) or "none"}
        if no_op:
            record["noOp"] = True
            events.append(
                PlanEvent("Warning", "OverrideNoOp", f"Override[{index}] matched ({summary}) but produced no changes — check field paths")
            )
        else:
            events.append(
                PlanEvent("Normal", "OverrideApplied", f"Override[{index}] matched ({summary}), patching {', '.join(patches) or 'none'}")
            )
        applied.append(record)
    if overrides and not applied:
        events.append(
            PlanEvent(
                "Normal",
                "NoOverridesMatched",
                f"0 of {len(overrides)} overrides matched (platform={ctx.platform}, gpuArchitecture={ctx.gpu_architecture})",
            )
        )
    return OverrideResult(spec=current, applied=tuple(applied), events=tuple(events))
