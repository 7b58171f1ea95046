"""Compare the measurements of two sides, per node and per group, and name the regressions.

Each side (OLD, NEW) is one bundle or a directory of bundles (repeats of the same run), reduced
to its numbers as it is read (:mod:`.sides`). For each category the bus bandwidth (the peak row
of each Job) and the goodput of each group are compared; a group is the set of its nodes, so
runs that named their groups differently still meet, and a node takes every value of the
group(s) that held it.

A node or group regressed when either rule holds:

* **its typical value fell**: the median of its NEW values is below the median of its OLD values
  by more than ``base + 2 x noise``, where ``noise`` is the spread of *its own OLD* values (half
  their range over their median), capped at :data:`NOISE_CAP`;
* **any one value fell below the old floor**: the lowest of its NEW values is below the lowest of
  its OLD values by more than ``base``.

So the tolerance never grows with anything NEW holds, nor with any other node: a regression
cannot widen its own bar, one flaky node cannot blind a category, and an OLD side whose repeats
disagree (two populations, a bad day) widens its own bar by at most ``2 x NOISE_CAP`` and is
named as an unstable baseline. A drop in a multi-node group is charged to every member:
single-node measurements (``nccl-loopback``) or a diagnose run tell the members apart.

Nodes that appear or disappear between the sides, or whose GPU, driver or serial (system UUID,
else provider ID) changed, are listed and not compared.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sides import METRICS, Key, Side, load_side, side_of

__all__ = [
    "METRICS",
    "NOISE_CAP",
    "Comparison",
    "Row",
    "Side",
    "compare",
    "compare_paths",
    "load_side",
    "side_of",
]

#: the most the OLD side's own spread may add to the noise term (so at most 2 x this to the tolerance)
NOISE_CAP = 0.05


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def spread(values: Sequence[float]) -> float:
    """Half the range over the median (0 for a single value or a median that is not positive)."""
    if len(values) < 2:
        return 0.0
    middle = _median(values)
    return (max(values) - min(values)) / 2 / middle if middle > 0 else 0.0


@dataclass(frozen=True)
class Row:
    """One compared subject (a group or a node) in one category, for one metric."""

    subject: str
    category: str
    metric: str
    old: float
    new: float
    old_floor: float
    new_low: float
    old_spread: float
    base: float
    old_count: int = 1
    new_count: int = 1

    @property
    def noise(self) -> float:
        return min(self.old_spread, NOISE_CAP)

    @property
    def tolerance(self) -> float:
        return self.base + 2 * self.noise

    @property
    def change(self) -> float:
        return (self.new - self.old) / self.old if self.old > 0 else 0.0

    @property
    def low_change(self) -> float:
        """The lowest NEW value against the lowest OLD value."""
        return (self.new_low - self.old_floor) / self.old_floor if self.old_floor > 0 else 0.0

    @property
    def fell(self) -> bool:
        return self.old > 0 and self.change < -self.tolerance

    @property
    def below_floor(self) -> bool:
        return self.old_floor > 0 and self.low_change < -self.base

    @property
    def regressed(self) -> bool:
        return self.fell or self.below_floor

    @property
    def unstable_baseline(self) -> bool:
        return self.old_spread > NOISE_CAP

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "category": self.category,
            "metric": self.metric,
            "old": round(self.old, 6),
            "new": round(self.new, 6),
            "change": round(self.change, 6),
            "oldFloor": round(self.old_floor, 6),
            "newLowest": round(self.new_low, 6),
            "lowestChange": round(self.low_change, 6),
            "oldValues": self.old_count,
            "newValues": self.new_count,
            "noise": round(self.noise, 6),
            "tolerance": round(self.tolerance, 6),
            "unstableBaseline": self.unstable_baseline,
            "belowFloor": self.below_floor,
            "regressed": self.regressed,
        }


@dataclass(frozen=True)
class Signatures:
    """What was known about the signatures of the bundles compared."""

    bundles: int
    signed: int
    checked: int
    key_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"bundles": self.bundles, "signed": self.signed, "checked": self.checked, "keyId": self.key_id}

    def describe(self) -> str:
        if self.checked and self.checked == self.bundles:
            return f"Signatures: verified with key {self.key_id[:16]} for all {self.bundles} bundle(s)."
        unsigned = self.bundles - self.signed
        what = f"{self.signed} of {self.bundles} bundle(s) signed" + (f", {unsigned} unsigned" if unsigned else "")
        return f"Signatures: NOT checked ({what}); only the files were checked against each Statement. Give --key to verify them."


@dataclass(frozen=True)
class Comparison:
    old: tuple[str, ...]
    new: tuple[str, ...]
    base_tolerance: float
    nodes: tuple[Row, ...]
    groups: tuple[Row, ...]
    appeared: tuple[str, ...]
    disappeared: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]
    signatures: Signatures = Signatures(0, 0, 0)

    @property
    def regressed_nodes(self) -> tuple[str, ...]:
        return tuple(sorted({r.subject for r in self.nodes if r.regressed}))

    @property
    def unstable(self) -> tuple[Row, ...]:
        """Group rows whose OLD repeats disagree by more than the noise cap."""
        return tuple(r for r in self.groups if r.unstable_baseline)

    def as_dict(self) -> dict[str, Any]:
        return {
            "old": list(self.old),
            "new": list(self.new),
            "baseTolerance": self.base_tolerance,
            "noiseCap": NOISE_CAP,
            "signatures": self.signatures.as_dict(),
            "nodes": [r.as_dict() for r in self.nodes],
            "groups": [r.as_dict() for r in self.groups],
            "appeared": list(self.appeared),
            "disappeared": list(self.disappeared),
            "changed": [{"node": n, "changes": list(c)} for n, c in self.changed],
            "regressedNodes": list(self.regressed_nodes),
        }


def _serial(node: Mapping[str, Any]) -> str:
    return str(node.get("systemUUID") or node.get("providerID") or "")


def _gpu(node: Mapping[str, Any]) -> str:
    found = node.get("gpu")
    gpu: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return f"{gpu.get('product', '')} x {gpu.get('count')}"


def _changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    for label, get in (
        ("GPU", _gpu),
        ("driver", lambda n: str(n.get("driverVersion") or "")),
        ("CUDA", lambda n: str(n.get("cudaVersion") or "")),
        ("serial", _serial),
    ):
        before, after = get(old), get(new)
        if before != after:
            out.append(f"{label} {before or '-'} -> {after or '-'}")
    return out


def _row(subject: str, category: str, metric: str, old: Sequence[float], new: Sequence[float], base: float) -> Row:
    return Row(
        subject=subject,
        category=category,
        metric=metric,
        old=_median(old),
        new=_median(new),
        old_floor=min(old),
        new_low=min(new),
        old_spread=spread(old),
        base=base,
        old_count=len(old),
        new_count=len(new),
    )


def _per_node(values: Mapping[Key, Sequence[float]]) -> dict[tuple[str, str, str], list[float]]:
    out: dict[tuple[str, str, str], list[float]] = {}
    for (metric, category, nodes), found in values.items():
        for node in nodes:
            out.setdefault((metric, category, node), []).extend(found)
    return out


def compare(old: Side, new: Side, *, tolerance: float = 0.05) -> Comparison:
    """Compare two sides; ``tolerance`` is the base fraction (0.05 = 5 %)."""
    before, after = old.identity, new.identity
    appeared = tuple(sorted(set(after) - set(before)))
    disappeared = tuple(sorted(set(before) - set(after)))
    changed = tuple((n, tuple(c)) for n in sorted(set(before) & set(after)) if (c := _changes(before[n], after[n])))
    excluded = set(appeared) | set(disappeared) | {n for n, _ in changed}

    groups = tuple(
        _row(",".join(nodes), category, metric, old.values[key], new.values[key], tolerance)
        for key in sorted(set(old.values) & set(new.values))
        for metric, category, nodes in [key]
        if not excluded & set(nodes)
    )
    old_nodes, new_nodes = _per_node(old.values), _per_node(new.values)
    nodes = tuple(
        _row(node, category, metric, old_nodes[key], new_nodes[key], tolerance)
        for key in sorted(set(old_nodes) & set(new_nodes), key=lambda k: (k[2], k[1], k[0]))
        for metric, category, node in [key]
        if node not in excluded
    )
    bundles = len(old.paths) + len(new.paths)
    signatures = Signatures(bundles, old.signed + new.signed, old.signature_checked + new.signature_checked, new.key_id or old.key_id)
    return Comparison(
        old=old.paths,
        new=new.paths,
        base_tolerance=tolerance,
        nodes=nodes,
        groups=groups,
        appeared=appeared,
        disappeared=disappeared,
        changed=changed,
        signatures=signatures,
    )


def compare_paths(old: Path, new: Path, *, tolerance: float = 0.05, public_key: Any = None) -> Comparison:
    """Read both sides (checking every bundle, and with a key its signature) and compare them."""
    return compare(load_side(old, public_key), load_side(new, public_key), tolerance=tolerance)
