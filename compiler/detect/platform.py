"""Platform detection: which cloud or site a node runs on, from its ``spec.providerID``.

A node without a providerID is placed by its labels: the label prefixes each managed
Kubernetes writes (``eks.amazonaws.com/``, ``kubernetes.azure.com/``...), then a GPU instance
type only one cloud sells, then an extended resource only one cloud's device plugin advertises
(``vpc.amazonaws.com/efa``). The rules are data (``detection/platforms.yaml``, their shape
checked when first read); each node's reading records what decided it. A node that no rule
places, but whose CSI node-id annotation names a cloud's own block-storage driver
(``ebs.csi.aws.com`` runs only on EC2), is placed on that cloud before the default applies. A user-supplied ``--platform`` replaces detection entirely;
otherwise every target node is classified and all of them must agree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Mapping, NamedTuple, Sequence

from ..diagnostics import Diagnostic, error, info
from ..facts import advertised, annotations_of, name_of, provider_id
from .hints import InstanceType, instance_type
from .model import DEFAULTED, DETECTED, SUPPLIED, Fact, name_list, plural
from .tables import table

__all__ = ["platform_names", "PlatformReading", "read_platform", "node_platform", "validate_platform_flag", "detect_platform"]

PROVIDER_ID = "spec.providerID"
#: the annotation the kubelet writes with each CSI driver's id for the node (a JSON object)
CSI_NODE_ID = "csi.volume.kubernetes.io/nodeid"
#: CSI drivers only one cloud runs: their node id is that cloud's instance id
_CSI_DRIVER_PLATFORMS = {
    "ebs.csi.aws.com": "aws",
    "pd.csi.storage.gke.io": "gcp",
    "disk.csi.azure.com": "azure",
    "blockvolume.csi.oraclecloud.com": "oci",
}


def platform_names() -> tuple[str, ...]:
    """The known platform names, in their documented order."""
    return tuple(table("platforms")["names"])


class PlatformReading(NamedTuple):
    """One node's platform and what decided it.

    ``basis`` is ``spec.providerID``, ``label <key>``, ``instance type <value> (<label>)``,
    ``resource <name>``, ``annotation <key> (<driver>)``, or ``no spec.providerID`` when the node
    carries nothing that names a cloud.
    """

    platform: str
    basis: str
    note: str = ""

    @property
    def from_labels(self) -> bool:
        """The platform came from the node's metadata (a label, the instance type, an advertised
        resource, an annotation) rather than the providerID or the default."""
        return self.basis.startswith(_READ_FROM_METADATA)


#: the bases that read a node's metadata rather than its providerID
_READ_FROM_METADATA = ("label ", "instance type ", "resource ", "annotation ")


def _csi_platform(node: Mapping[str, Any]) -> PlatformReading | None:
    """The cloud whose own block-storage CSI driver registered the node, if exactly one did."""
    raw = annotations_of(node).get(CSI_NODE_ID, "")
    try:
        drivers = json.loads(raw) if isinstance(raw, str) and raw.startswith("{") else {}
    except (ValueError, RecursionError):
        return None
    found = sorted(
        {(_CSI_DRIVER_PLATFORMS[d], d) for d in drivers if isinstance(d, str) and d in _CSI_DRIVER_PLATFORMS}
        if isinstance(drivers, dict)
        else set()
    )
    if len({platform for platform, _ in found}) != 1:
        return None
    platform, driver = found[0]
    return PlatformReading(platform, f"annotation {CSI_NODE_ID} ({driver})")


class _NodeView:
    """What the platform rules read of one node, read once: its providerID, its labels (not
    copied) and, when a rule asks, its instance type and the resources it advertises."""

    __slots__ = ("pid", "labels", "_node", "_instance", "_looked_up", "_resources")

    def __init__(self, node: Mapping[str, Any]) -> None:
        self.pid = provider_id(node)
        labels = (node.get("metadata") or {}).get("labels")
        self.labels: Mapping[str, str] = labels if isinstance(labels, Mapping) else {}
        self._node = node
        self._instance: InstanceType | None = None
        self._looked_up = False
        self._resources: Mapping[str, Any] | None = None

    def instance(self) -> InstanceType | None:
        if not self._looked_up:
            self._instance, self._looked_up = instance_type(self.labels), True
        return self._instance

    def resources(self) -> Mapping[str, Any]:
        """The resources the node advertises, by name (not copied): its ``status.allocatable``,
        or, on a node object with no allocatable block at all (a pasted piece; the API server
        always sends one), its ``status.capacity``."""
        if self._resources is None:
            self._resources = advertised(self._node)
        return self._resources


class _Rule(NamedTuple):
    """One row of ``detection/platforms.yaml``'s rules, its conditions read out once."""

    platform: str
    note: str
    pid_equals: str | None
    pid_prefix: str | None
    present: str | None
    contains: tuple[str, str] | None
    prefixes: tuple[str, ...] | None
    cloud: str | None
    resources: tuple[str, ...] | None


#: the keys a rule of ``detection/platforms.yaml`` may hold
_RULE_KEYS = frozenset(
    {"platform", "note", "providerID", "labelPresent", "labelContains", "labelPrefix", "instanceTypeOf", "resourcePresent"}
)

#: (the platforms table the rules were read from, the rules); tables are loaded once and kept
_RULES: list[Any] = [None, ()]


def _names(rule: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    """A rule's list of names (``labelPrefix``, ``resourcePresent``), or None when it has none."""
    value = rule.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"platforms.yaml: {where}: {key} must be a non-empty list of non-empty names, not {value!r}")
    return tuple(value)


def _read_rule(rule: Any, index: int, names: tuple[str, ...]) -> _Rule:
    """One row of the rules, its shape checked: a table that would place nodes by a rule it cannot
    read fails loudly when first read, not by matching nothing."""
    where = f"rules[{index}]"
    if not isinstance(rule, Mapping) or rule.get("platform") not in names:
        raise ValueError(f"platforms.yaml: {where} must be a mapping whose platform is one of {', '.join(names)}")
    unknown = sorted(str(k) for k in rule if k not in _RULE_KEYS)
    if unknown:
        raise ValueError(
            f"platforms.yaml: {where}: unknown condition(s) {', '.join(unknown)}; a rule may hold {', '.join(sorted(_RULE_KEYS))}"
        )
    pid = rule.get("providerID") or {}
    contains = rule.get("labelContains")
    if not isinstance(pid, Mapping) or not set(pid) <= {"equals", "prefix"}:
        raise ValueError(f"platforms.yaml: {where}: providerID must be {{equals: <s>}} or {{prefix: <s>}}, not {pid!r}")
    if contains is not None and (not isinstance(contains, Mapping) or set(contains) != {"key", "substring"}):
        raise ValueError(f"platforms.yaml: {where}: labelContains must be {{key: <key>, substring: <s>}}, not {contains!r}")
    return _Rule(
        platform=str(rule["platform"]),
        note=str(rule.get("note") or ""),
        pid_equals=pid.get("equals"),
        pid_prefix=pid.get("prefix"),
        present=rule.get("labelPresent"),
        contains=(str(contains["key"]), str(contains["substring"])) if contains is not None else None,
        prefixes=_names(rule, "labelPrefix", where),
        cloud=rule.get("instanceTypeOf"),
        resources=_names(rule, "resourcePresent", where),
    )


def _rules() -> tuple[_Rule, ...]:
    platforms = table("platforms")
    if _RULES[0] is not platforms:
        names = tuple(str(name) for name in platforms["names"])
        rules = tuple(_read_rule(rule, index, names) for index, rule in enumerate(platforms["rules"]))
        _RULES[:] = [platforms, rules]
    read: tuple[_Rule, ...] = _RULES[1]
    return read


def _metadata_basis(rule: _Rule, view: _NodeView) -> str | None:
    """What satisfies the rule's conditions on the node's labels, instance type and resources:
    the deciding label, instance type or resource; ``""`` when the rule has none, ``None`` on a miss."""
    labels = view.labels
    if rule.present is not None and rule.present not in labels:
        return None
    if rule.contains is not None and rule.contains[1] not in str(labels.get(rule.contains[0], "")):
        return None
    basis: str | None = None
    if rule.prefixes is not None:
        keys = sorted(k for k in labels if k.startswith(rule.prefixes))
        if not keys:
            return None
        basis = f"label {keys[0]}"
    if rule.cloud is not None:
        found = view.instance()
        if found is None or found.platform != rule.cloud:
            return None
        basis = basis or f"instance type {found.value} ({found.label})"
    if rule.resources is not None:
        advertised = view.resources()
        name = next((r for r in rule.resources if r in advertised), None)
        if name is None:
            return None
        basis = basis or f"resource {name}"
    if basis is not None:
        return basis
    if rule.present is not None:
        return f"label {rule.present}"
    if rule.contains is not None:
        return f"label {rule.contains[0]}"
    return ""


def _rule_basis(rule: _Rule, view: _NodeView) -> str | None:
    """What makes the rule hold for the node, or ``None`` when it does not."""
    pid = view.pid
    if rule.pid_equals is not None and pid != rule.pid_equals:
        return None
    if rule.pid_prefix is not None and not pid.startswith(rule.pid_prefix):
        return None
    basis = _metadata_basis(rule, view)
    if basis is None:
        return None
    if pid:
        return PROVIDER_ID  # a label that only qualifies a providerID rule (Together AI) does not decide
    return basis or f"no {PROVIDER_ID}"


def read_platform(node: Mapping[str, Any]) -> PlatformReading:
    """The platform one node belongs to (first matching rule, else the table default), and why."""
    reading = _rule_reading(node)
    if reading.basis == f"no {PROVIDER_ID}":
        # nothing named a cloud: a cloud's own storage driver, when it registered the node, says more
        return _csi_platform(node) or reading
    return reading


def _rule_reading(node: Mapping[str, Any]) -> PlatformReading:
    view = _NodeView(node)
    for rule in _rules():
        basis = _rule_basis(rule, view)
        if basis is not None:
            return PlatformReading(rule.platform, basis, rule.note)
    return PlatformReading(str(table("platforms")["default"]), PROVIDER_ID if view.pid else f"no {PROVIDER_ID}")


def node_platform(node: Mapping[str, Any]) -> str:
    """The platform one node belongs to."""
    return read_platform(node).platform


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
    bases: dict[str, list[str]] = defaultdict(list)
    for node in sorted(nodes, key=name_of):
        reading = read_platform(node)
        by_platform[reading.platform].append(name_of(node))
        bases[reading.basis].append(name_of(node))
        if reading.note:
            notes[reading.note].append(name_of(node))
    summary = _summary(by_platform)

    if supplied:
        others = {p: n for p, n in by_platform.items() if p != supplied}
        replaced = {n for names in others.values() for n in names}
        other_bases = {b: [n for n in names if n in replaced] for b, names in bases.items()}
        if others:
            diags.append(
                info(
                    "PlatformOverridden",
                    "--platform",
                    f"--platform {supplied} replaces the platform detected from {_basis_words(other_bases)} ({_summary(others)})",
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
    for basis, named in sorted(bases.items()):
        if basis.startswith(_READ_FROM_METADATA):
            diags.append(
                info(
                    "PlatformFromLabel",
                    target_path,
                    f"{plural(len(named), 'node')} without {PROVIDER_ID}: platform {platform} read from the {basis}: {name_list(named)}",
                )
            )
    return Fact(platform, DETECTED, _basis_words(bases)), diags


def _basis_words(bases: Mapping[str, list[str]]) -> str:
    """``spec.providerID of 2 target nodes; label eks.amazonaws.com/nodegroup of 1 target node``."""
    ordered = sorted(((b, n) for b, n in bases.items() if n), key=lambda item: (item[0] != PROVIDER_ID, item[0]))
    return "; ".join(f"{basis} of {plural(len(names), 'target node')}" for basis, names in ordered)


def _summary(by_platform: Mapping[str, list[str]]) -> str:
    ordered = sorted(by_platform.items(), key=lambda item: (-len(item[1]), item[0]))
    return "; ".join(f"{p} on {plural(len(n), 'node')} ({name_list(n)})" for p, n in ordered)
