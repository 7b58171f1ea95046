"""GCP H100 (A3 Mega, GPUDirect-TCPXO): GKE network names and the TCPXO plugin version.

Both come from the cluster facts and both fall back to safe defaults with a warning:

* GKE networks: the data networks every target node offers as
  ``networking.gke.io.networks/<name>`` allocatable, ordered by the interface each lands on
  (``detection/gke_networks.yaml``); default ``gpu-nic0``..``gpu-nic7``.
* TCPXO plugin: the tag of the GKE installer image running on the target nodes picks the
  NCCL image, the training image and the tcpxo-daemon image and arguments
  (``detection/tcpxo.yaml``); default the oldest supported release.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from functools import lru_cache
from typing import Any, Mapping, NamedTuple, Sequence

from ..diagnostics import Diagnostic, warning
from ..facts import ClusterFacts, allocatable, annotations_of, name_of
from .model import DEFAULTED, DETECTED, Fact, name_list, plural
from .tables import gate_matches, table

__all__ = [
    "gcp_detection_applies",
    "detect_gke_networks",
    "default_gke_networks",
    "TCPXOProfile",
    "parse_release",
    "installer_tag",
    "tcpxo_profile_for",
    "default_tcpxo_profile",
    "detect_tcpxo_profile",
]

_RELEASE_RE = re.compile(r"^v(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:-[0-9A-Za-z][0-9A-Za-z.-]*)?$")
_ETH_RE = re.compile(r"^eth(\d{1,9})$")
_IMAGE_ADVICE = "set categories[].options.image to choose the images yourself"


def gcp_detection_applies(platform: str, gpu_arch: str) -> bool:
    """True where GKE network and TCPXO detection run (GCP H100)."""
    return gate_matches(table("tcpxo")["gate"], platform, gpu_arch) or gate_matches(table("gke_networks")["gate"], platform, gpu_arch)


# --------------------------------------------------------------------------- GKE networks


def default_gke_networks() -> tuple[str, ...]:
    return tuple(table("gke_networks")["defaultNames"])


def _node_networks(node: Mapping[str, Any]) -> set[str]:
    rules = table("gke_networks")
    prefix = str(rules["resourcePrefix"])
    out = set()
    for resource in allocatable(node):
        if not resource.startswith(prefix):
            continue
        name = resource[len(prefix) :]
        if name and name not in rules["ignoreNames"] and not any(name.endswith(s) for s in rules["ignoreSuffixes"]):
            out.add(name)
    return out


def _interface_order(nodes: Sequence[Mapping[str, Any]], networks: set[str]) -> dict[str, int] | None:
    """network -> N of the ethN it lands on, if every node says so and all nodes agree."""
    rules = table("gke_networks")
    agreed: dict[str, int] | None = None
    for node in nodes:
        ann = annotations_of(node)
        try:
            north = json.loads(ann[rules["northInterfacesAnnotation"]])
            nic_info = json.loads(ann[rules["nicInfoAnnotation"]])
            ip_to_eth = {e["birthIP"]: e["birthName"] for e in nic_info}
            mapping: dict[str, int] = {}
            for entry in north:
                if entry.get("network") in networks:
                    m = _ETH_RE.match(str(ip_to_eth.get(entry.get("ipAddress"), "")))
                    if m is None:
                        return None
                    mapping[entry["network"]] = int(m.group(1))
        except (KeyError, TypeError, AttributeError, ValueError, RecursionError):
            return None
        if set(mapping) != networks or len(set(mapping.values())) != len(mapping):
            return None
        if agreed is not None and agreed != mapping:
            return None
        agreed = mapping
    return agreed


def detect_gke_networks(nodes: Sequence[Mapping[str, Any]], *, path: str = "spec.target") -> tuple[Fact, list[Diagnostic]]:
    """The GKE network names for the TCPXO NICs of ``nodes``, as a tuple (``Fact.value``)."""
    rules = table("gke_networks")
    wanted = int(rules["nicsPerNode"])
    ordered = sorted(nodes, key=name_of)
    shared: set[str] = set.intersection(*(_node_networks(n) for n in ordered)) if ordered else set()
    if len(shared) == wanted:
        order = _interface_order(ordered, shared)
        if order is not None:
            names = tuple(sorted(shared, key=lambda n: (order[n], n)))
            detail = "interface order from node annotations"
        else:
            names = tuple(sorted(shared))
            detail = "ordered by name"
        return Fact(names, DETECTED, f"networking.gke.io.networks allocatable on all {plural(len(ordered), 'target node')}; {detail}"), []

    defaults = default_gke_networks()
    if not ordered:
        found = "there are no target nodes to read networks from"
    elif not shared:
        found = f"no GKE network is offered by all {plural(len(ordered), 'target node')}"
    else:
        found = f"{len(shared)} GKE networks are offered by all {plural(len(ordered), 'target node')} ({', '.join(sorted(shared))})"
    message = (
        f"{found}, but TCPXO needs exactly {wanted} ({rules['machineType']}); rendering the default names "
        f"{defaults[0]}..{defaults[-1]}. GKE rejects the pods unless Network objects with those names exist"
    )
    return Fact(defaults, DEFAULTED, "GKE network names not detected"), [warning("GKENetworkDetection", path, message)]


# --------------------------------------------------------------------------- TCPXO plugin


class TCPXOProfile(NamedTuple):
    """Images and daemon arguments rendered for one TCPXO plugin release."""

    plugin_version: str  # the table row used
    detected_version: str  # the installer tag found ("" when none)
    exact: bool  # True when the detected release is the row's release
    nccl_image: str
    training_image: str
    daemon_image: str
    daemon_args: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "pluginVersion": self.plugin_version,
            "detectedVersion": self.detected_version,
            "exact": self.exact,
            "ncclImage": self.nccl_image,
            "trainingImage": self.training_image,
            "daemonImage": self.daemon_image,
            "daemonArgs": list(self.daemon_args),
        }


def parse_release(tag: str) -> tuple[int, int, int] | None:
    """``v1.0.16`` or ``v1.0.16-gke.1`` -> ``(1, 0, 16)``; anything else -> ``None``."""
    m = _RELEASE_RE.match(tag or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


@lru_cache(maxsize=None)
def _releases() -> tuple[tuple[tuple[int, int, int], Mapping[str, Any]], ...]:
    rows = []
    for row in table("tcpxo")["releases"]:
        version = parse_release(str(row["plugin"]))
        if version is None:
            raise ValueError(f"tcpxo.yaml: release {row['plugin']!r} is not vMAJOR.MINOR.PATCH")
        rows.append((version, row))
    return tuple(sorted(rows, key=lambda r: r[0]))


def _profile(row: Mapping[str, Any], detected: str, exact: bool) -> TCPXOProfile:
    daemon = table("tcpxo")["daemon"]
    return TCPXOProfile(
        plugin_version=str(row["plugin"]),
        detected_version=detected,
        exact=exact,
        nccl_image=str(row["ncclImage"]),
        training_image=str(row["trainingImage"]),
        daemon_image=f"{daemon['repository']}:{row['daemonTag']}",
        daemon_args=tuple(str(a) for a in daemon["args"]),
    )


def default_tcpxo_profile() -> TCPXOProfile:
    """The profile rendered when no version is known: the oldest supported release."""
    return _profile(_releases()[0][1], "", False)


def tcpxo_profile_for(tag: str) -> tuple[TCPXOProfile, str]:
    """Map an installer tag to a profile; the second item is ``exact``, ``newer``, ``between``,
    ``older`` or ``invalid``."""
    version = parse_release(tag)
    releases = _releases()
    if version is None:
        return _profile(releases[0][1], tag, False), "invalid"
    if version < releases[0][0]:
        return _profile(releases[0][1], tag, False), "older"
    for v, row in releases:
        if v == version:
            return _profile(row, tag, True), "exact"
    below = [row for v, row in releases if v < version]
    kind = "newer" if version > releases[-1][0] else "between"
    return _profile(below[-1], tag, False), kind


def installer_tag(pod: Mapping[str, Any]) -> str | None:
    """The TCPXO installer image tag in ``pod`` (``""`` if untagged), or ``None`` if it has none."""
    wanted = str(table("tcpxo")["installer"]["imageName"])
    spec = pod.get("spec") or {}
    for ctr in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        image = str(ctr.get("image") or "").split("@", 1)[0]
        last = image.rsplit("/", 1)[-1]
        name, _, tag = last.partition(":")
        if name == wanted:
            return tag
    return None


def _installer_tags(facts: ClusterFacts, namespace: str, target: set[str]) -> dict[str, set[str]]:
    """The TCPXO installer image tags each target node runs (running, not deleted pods of ``namespace``)."""
    tags: dict[str, set[str]] = defaultdict(set)
    for pod in facts.pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if meta.get("namespace") != namespace or meta.get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") != "Running" or spec.get("nodeName") not in target:
            continue
        tag = installer_tag(pod)
        if tag is not None:
            tags[spec["nodeName"]].add(tag)
    return tags


def _undecided(facts: ClusterFacts, namespace: str, names: list[str], tags: dict[str, set[str]]) -> str:
    """Why the installer tags do not name one version ("" when they do)."""
    distinct = sorted(set().union(*tags.values())) if tags else []
    missing = [n for n in names if n not in tags]
    if not names:
        return "there are no target nodes"
    if not facts.pods:
        return f"the cluster facts hold no Pods; add the {namespace} pods (kubectl get pods -n {namespace} -o yaml)"
    if missing:
        return f"no running TCPXO installer on {len(missing)} of {plural(len(names), 'target node')} ({name_list(missing)})"
    if len(distinct) > 1:
        per_tag = defaultdict(list)
        for node, node_tags in tags.items():
            for t in node_tags:
                per_tag[t or "untagged"].append(node)
        return "the target nodes run different versions: " + ", ".join(f"{t} on {plural(len(per_tag[t]), 'node')}" for t in sorted(per_tag))
    if distinct == [""]:
        return "the installer image is untagged"
    return ""


def detect_tcpxo_profile(
    facts: ClusterFacts, nodes: Sequence[Mapping[str, Any]], *, path: str = "spec.target"
) -> tuple[Fact, list[Diagnostic]]:
    """The TCPXO profile (``Fact.value``) for the plugin version installed on ``nodes``."""
    namespace = str(table("tcpxo")["installer"]["namespace"])
    names = sorted(name_of(n) for n in nodes)
    tags = _installer_tags(facts, namespace, set(names))
    reason = _undecided(facts, namespace, names, tags)
    if reason:
        profile = default_tcpxo_profile()
        return Fact(profile, DEFAULTED, "TCPXO plugin version not detected"), [
            warning(
                "TCPXOPluginDetection",
                path,
                f"TCPXO plugin version not detected: {reason}. Rendering the {profile.plugin_version} images "
                f"({_images(profile)}); {_IMAGE_ADVICE} if the cluster runs another version",
            )
        ]

    distinct = sorted(set().union(*tags.values()))
    tag = distinct[0]
    profile, kind = tcpxo_profile_for(tag)
    if kind == "exact":
        return Fact(profile, DETECTED, f"installer {tag} on all {plural(len(names), 'target node')}"), []
    if kind == "invalid":
        message = (
            f"TCPXO plugin version not detected: installer tag {tag} is not a release tag. "
            f"Rendering the {profile.plugin_version} images ({_images(profile)}); {_IMAGE_ADVICE} if the cluster runs another version"
        )
        return Fact(profile, DEFAULTED, "installer tag is not a release"), [warning("TCPXOPluginDetection", path, message)]
    if kind == "older":
        message = (
            f"TCPXO plugin {tag} is older than the oldest supported release {profile.plugin_version}; rendering the "
            f"{profile.plugin_version} images ({_images(profile)}). Upgrade the TCPXO installer, or {_IMAGE_ADVICE}"
        )
        return Fact(profile, DEFAULTED, f"installer {tag} is older than supported"), [warning("TCPXOPluginDetection", path, message)]
    newest = _releases()[-1][1]["plugin"]
    relation = (
        f"is newer than the newest validated release {newest}"
        if kind == "newer"
        else f"falls between validated releases; the nearest older one is {profile.plugin_version}"
    )
    message = (
        f"TCPXO plugin {tag} {relation}; rendering the {profile.plugin_version} images ({_images(profile)}), which were not "
        f"validated with it. If workloads fail, {_IMAGE_ADVICE}"
    )
    return Fact(profile, DETECTED, f"installer {tag}, mapped to {profile.plugin_version}"), [warning("TCPXOPluginDetection", path, message)]


def _images(profile: TCPXOProfile) -> str:
    return f"NCCL {profile.nccl_image}, training {profile.training_image}, tcpxo-daemon {profile.daemon_image}"
