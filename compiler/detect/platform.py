"""Platform detection: which cloud or site a node runs on, from its ``spec.providerID``.

The rules are data (``detection/platforms.yaml``). A user-supplied ``--platform`` replaces
detection entirely; otherwise every target node is classified and all of them must agree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Mapping, Sequence

from ..diagnostics import Diagnostic, error, info
from ..facts import labels_of, name_of, provider_id
from .model import DEFAULTED, DETECTED, SUPPLIED, Fact, name_list, plural
from .tables import table

__all__ = ["platform_names", "node_platform", "validate_platform_flag", "detect_platform"]


def platform_names() -> tuple[str, ...]:
    """The known platform names, in their documented order."""
    return tuple(table("platforms")["names"])


def _rule_matches(rule: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    pid = provider_id(node)
    labels = labels_of(node)
    cond = rule.get("providerID")
    if cond is not None:
        if "equals" in cond and pid != cond["equals"]:
            return False
        if "prefix" in cond and not pid.startswith(cond["prefix"]):
            return False
    present = rule.get("labelPresent")
    if present is not None and present not in labels:
        return False
    contains = rule.get("labelContains")
    if contains is not None and contains["substring"] not in labels.get(contains["key"], ""):
        return False
    return True


def _matching_rule(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for rule in table("platforms")["rules"]:
        if _rule_matches(rule, node):
            matched: Mapping[str, Any] = rule
            return matched
    return None


def node_platform(node: Mapping[str, Any]) -> str:
    """The platform one node belongs to (first matching rule, else the table default)."""
    rule = _matching_rule(node)
    return str(rule["platform"]) if rule is not None else str(table("platforms")["default"])


def validate_platform_flag(value: str | None, *, path: str = "--platform") -> tuple[str | None, list[Diagnostic]]:
    """Check a user-supplied platform. Empty or ``None`` means "detect"."""
    if not value:
        return None, []
    names = platform_names()
    if value in names:
        return value, []
    return None, [error("InvalidPlatform", path, f"invalid --platform {json.dumps(value)}: must be one of {', '.join(names)}")]


# Long: the supplied, uniform, mixed and empty cases each give their own diagnostic text.
def detect_platform(
    nodes: Sequence[Mapping[str, Any]],
    *,
    supplied: str | None = None,
    target_path: str = "spec.target",
) -> tuple[Fact | None, list[Diagnostic]]:
    """Decide the platform of the target nodes.

    ``supplied`` (an already validated ``--platform``) wins; nodes that would detect as
    something else are mentioned in an info diagnostic. Without it, all nodes must detect the
    same platform (else error ``MixedPlatforms`` and ``None``); no nodes gives ``onprem``,
    defaulted.
    """
    diags: list[Diagnostic] = []
    by_platform: dict[str, list[str]] = defaultdict(list)
    notes: dict[str, list[str]] = defaultdict(list)
    for node in sorted(nodes, key=name_of):
        rule = _matching_rule(node)
        platform = str(rule["platform"]) if rule is not None else str(table("platforms")["default"])
        by_platform[platform].append(name_of(node))
        if rule is not None and rule.get("note"):
            notes[str(rule["note"])].append(name_of(node))
    summary = _summary(by_platform)

    if supplied:
        others = {p: n for p, n in by_platform.items() if p != supplied}
        if others:
            diags.append(
                info(
                    "PlatformOverridden",
                    "--platform",
                    f"--platform {supplied} replaces the platform detected from spec.providerID ({_summary(others)})",
                )
            )
        return Fact(supplied, SUPPLIED, "--platform"), diags

    if not by_platform:
        default = str(table("platforms")["default"])
        diags.append(
            info(
                "PlatformDefaulted",
                "--platform",
                f"no cluster facts to detect the platform from; using {default} (pass --platform to choose)",
            )
        )
        return Fact(default, DEFAULTED, "no target nodes to detect from"), diags

    if len(by_platform) > 1:
        diags.append(
            error(
                "MixedPlatforms",
                target_path,
                f"target nodes span {len(by_platform)} platforms: {summary}; a certification runs on one platform, "
                "so narrow the target to one of them or pass --platform",
            )
        )
        return None, diags

    ((platform, names),) = by_platform.items()
    for note, noted in sorted(notes.items()):
        diags.append(info("PlatformDetectionNote", target_path, f"{note} (nodes: {name_list(noted)})"))
    return Fact(platform, DETECTED, f"spec.providerID of {plural(len(names), 'target node')}"), diags


def _summary(by_platform: Mapping[str, list[str]]) -> str:
    ordered = sorted(by_platform.items(), key=lambda item: (-len(item[1]), item[0]))
    return "; ".join(f"{p} on {plural(len(n), 'node')} ({name_list(n)})" for p, n in ordered)
