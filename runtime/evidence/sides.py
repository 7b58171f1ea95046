"""One side of a comparison: its bundles read one at a time and reduced to their numbers on the way.

A side (OLD or NEW) is one bundle, or every bundle directly under a directory (repeats of a run).
Each bundle is checked against its Statement (and, with a key, its signature) and then reduced
at once to what a comparison needs: for every (metric, category, group) the values its Jobs
measured (a Job part that records a ``failure`` gives none), and the identity of every node.
The predicate is then dropped, so memory follows one bundle and the numbers of all of them,
never every predicate at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bundle import STATEMENT_FILE, read_bundle
from .errors import EvidenceError

__all__ = ["MAX_BUNDLES", "METRICS", "Key", "Side", "load_side", "side_of"]

METRICS = ("busBandwidthGBps", "goodput")
MAX_BUNDLES = 200
#: (metric, category, the group's nodes sorted)
Key = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Side:
    """The numbers of one side: each group's values (every iteration of every bundle), and the
    latest identity of each node; how many of its bundles were signed and had the signature checked."""

    paths: tuple[str, ...]
    values: Mapping[Key, tuple[float, ...]]
    identity: Mapping[str, Mapping[str, Any]]
    signed: int = 0
    signature_checked: int = 0
    key_id: str = ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _measured(part: Any) -> Mapping[str, Any]:
    """A Job's ``bandwidth`` or ``training`` part; empty when absent or when it records a
    ``failure`` (a run that cannot be trusted is never a value, whatever else it carries)."""
    if not isinstance(part, Mapping) or part.get("failure") is not None:
        return {}
    return part


def _reduce(predicate: Mapping[str, Any], into: dict[Key, list[float]]) -> None:
    """Add the values of one predicate to ``into``."""
    for category in predicate.get("categories") or []:
        if not isinstance(category, Mapping):
            continue
        jobs = category.get("jobs") or []
        name = str(category.get("category"))
        for job in jobs if isinstance(jobs, list) else ():
            if not isinstance(job, Mapping):
                continue
            raw = job.get("nodes") or ()
            nodes = tuple(sorted(str(n) for n in raw)) if isinstance(raw, list) else ()
            if not nodes:
                continue
            bandwidth, training = _measured(job.get("bandwidth")), _measured(job.get("training"))
            peak = bandwidth.get("peakBusBandwidthGBps")
            goodput = training.get("goodput")
            for metric, value in (("busBandwidthGBps", _number(peak)), ("goodput", _number(goodput))):
                if value is not None:
                    into.setdefault((metric, name, nodes), []).append(value)


def _identity(identity: Mapping[str, Any], into: dict[str, Mapping[str, Any]]) -> None:
    """Later bundles win: the latest identity entry of each node that was found."""
    for node in identity.get("nodes") or []:
        if isinstance(node, Mapping) and node.get("name") and node.get("found", True):
            into[str(node["name"])] = node


def side_of(paths: tuple[str, ...], predicates: tuple[Mapping[str, Any], ...], identities: tuple[Mapping[str, Any], ...]) -> Side:
    """A side from predicates and identities already in memory (one per bundle, in order)."""
    values: dict[Key, list[float]] = {}
    nodes: dict[str, Mapping[str, Any]] = {}
    for predicate, identity in zip(predicates, identities):
        _reduce(predicate, values)
        _identity(identity, nodes)
    return Side(paths, {k: tuple(v) for k, v in values.items()}, nodes)


def _roots(path: Path) -> list[Path]:
    if not path.is_dir():
        raise EvidenceError(f"{path}: not a directory" if path.exists() else f"{path}: no such bundle or directory")
    if (path / STATEMENT_FILE).exists():
        return [path]
    roots = []
    for child in sorted(path.iterdir()):
        if child.is_dir() and (child / STATEMENT_FILE).exists():
            roots.append(child)
            if len(roots) > MAX_BUNDLES:
                raise EvidenceError(f"{path}: more than {MAX_BUNDLES} bundles; give a narrower directory")
    if not roots:
        raise EvidenceError(f"{path}: neither a bundle nor a directory of bundles (no {STATEMENT_FILE})")
    return roots


def load_side(path: Path, public_key: Any = None) -> Side:
    """A bundle, or every bundle directly under a directory (sorted by name), reduced one at a time.

    With ``public_key`` every bundle must be signed by it (else EvidenceError)."""
    path = Path(path)
    try:
        roots = _roots(path)
    except OSError as exc:
        raise EvidenceError(f"{str(path)[:200]}: cannot read: {exc.strerror or type(exc).__name__}") from None
    values: dict[Key, list[float]] = {}
    nodes: dict[str, Mapping[str, Any]] = {}
    signed = checked = 0
    key_id = ""
    for root in roots:
        loaded = read_bundle(root, public_key)
        _reduce(loaded.predicate, values)
        _identity(loaded.identity, nodes)
        signed += int(loaded.checked.signed)
        checked += int(loaded.checked.signature_checked)
        key_id = loaded.checked.key_id or key_id
        del loaded
    return Side(tuple(str(r) for r in roots), {k: tuple(v) for k, v in values.items()}, nodes, signed, checked, key_id)
