"""Compare the measurements of two sets of bundles, per node and per group, and name the regressions.

Each side (OLD, NEW) is one bundle or a directory of bundles (repeats of the same run). For each
category the bus bandwidth (the peak row of each Job) and the goodput of each group are taken from
the predicates; a group is the set of its nodes, so runs that named their groups differently still
meet. A node's value in a category is the value of the group(s) that held it; when a side holds
several values (iterations, bundles) the median stands for it.

The tolerance of a category and metric is ``base + 2 x noise``: ``base`` defaults to 5 %, and the
noise is the larger of the spread between the OLD side's groups (1.4826 x the median absolute
deviation over the median, which one outlier cannot move) and the spread between repeats of the
same group on either side (half the range over the median). A value is a regression when it drops
by more than its tolerance. A drop in a multi-node group is charged to every member: single-node
measurements (``nccl-loopback``) or a diagnose run tell the members apart.

Nodes that appear or disappear between the sides, or whose GPU, driver or serial (system UUID,
else provider ID) changed, are listed and not compared.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bundle import STATEMENT_FILE, load_bundle
from .errors import EvidenceError

__all__ = ["Comparison", "compare", "load_side", "render_json", "render_markdown", "render_text"]

METRICS = ("busBandwidthGBps", "goodput")
_UNITS = {"busBandwidthGBps": "GB/s", "goodput": ""}
MAX_BUNDLES = 200


@dataclass(frozen=True)
class Side:
    """The bundles of one side, read and checked."""

    paths: tuple[str, ...]
    predicates: tuple[Mapping[str, Any], ...]
    identities: tuple[Mapping[str, Any], ...]


def load_side(path: Path) -> Side:
    """A bundle, or every bundle directly under a directory (sorted by name)."""
    path = Path(path)
    if not path.is_dir():
        raise EvidenceError(f"{path}: not a directory" if path.exists() else f"{path}: no such bundle or directory")
    if (path / STATEMENT_FILE).exists():
        roots = [path]
    else:
        try:
            roots = sorted(p for p in path.iterdir() if p.is_dir() and (p / STATEMENT_FILE).exists())
        except OSError as exc:
            raise EvidenceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if not roots:
            raise EvidenceError(f"{path}: neither a bundle nor a directory of bundles (no {STATEMENT_FILE})")
        if len(roots) > MAX_BUNDLES:
            raise EvidenceError(f"{path}: more than {MAX_BUNDLES} bundles; give a narrower directory")
    loaded = [load_bundle(root) for root in roots]
    return Side(tuple(str(r) for r in roots), tuple(p for p, _ in loaded), tuple(i for _, i in loaded))


def _values(side: Side) -> dict[tuple[str, str, tuple[str, ...]], list[float]]:
    """(metric, category, nodes) -> every value the side holds for that group."""
    out: dict[tuple[str, str, tuple[str, ...]], list[float]] = {}
    for predicate in side.predicates:
        for category in predicate.get("categories") or []:
            for job in category.get("jobs") or []:
                nodes = tuple(sorted(job.get("nodes") or ()))
                if not nodes:
                    continue
                peak = (job.get("bandwidth") or {}).get("peakBusBandwidthGBps")
                goodput = (job.get("training") or {}).get("goodput")
                for metric, value in (("busBandwidthGBps", peak), ("goodput", goodput)):
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        out.setdefault((metric, str(category.get("category")), nodes), []).append(float(value))
    return out


def _identity(side: Side) -> dict[str, Mapping[str, Any]]:
    """The latest identity entry of each node on one side (later bundles win)."""
    out: dict[str, Mapping[str, Any]] = {}
    for identity in side.identities:
        for node in identity.get("nodes") or []:
            if isinstance(node, Mapping) and node.get("name") and node.get("found", True):
                out[str(node["name"])] = node
    return out


def _serial(node: Mapping[str, Any]) -> str:
    return str(node.get("systemUUID") or node.get("providerID") or "")


def _changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    for label, get in (
        ("GPU", lambda n: f"{(n.get('gpu') or {}).get('product', '')} x {(n.get('gpu') or {}).get('count')}"),
        ("driver", lambda n: str(n.get("driverVersion") or "")),
        ("CUDA", lambda n: str(n.get("cudaVersion") or "")),
        ("serial", _serial),
    ):
        before, after = get(old), get(new)
        if before != after:
            out.append(f"{label} {before or '-'} -> {after or '-'}")
    return out


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _spread_between(values: Sequence[float]) -> float:
    """1.4826 x MAD / median of independent groups (0 for fewer than three or a zero median)."""
    if len(values) < 3:
        return 0.0
    middle = _median(values)
    if middle <= 0:
        return 0.0
    return 1.4826 * _median([abs(v - middle) for v in values]) / middle


def _spread_repeats(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    middle = _median(values)
    return (max(values) - min(values)) / 2 / middle if middle > 0 else 0.0


@dataclass(frozen=True)
class Row:
    """One compared value: a group or a node, in one category, for one metric."""

    subject: str
    category: str
    metric: str
    old: float
    new: float
    tolerance: float

    @property
    def change(self) -> float:
        return (self.new - self.old) / self.old if self.old else 0.0

    @property
    def regressed(self) -> bool:
        return self.old > 0 and self.change < -self.tolerance

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "category": self.category,
            "metric": self.metric,
            "old": round(self.old, 6),
            "new": round(self.new, 6),
            "change": round(self.change, 6),
            "tolerance": round(self.tolerance, 6),
            "regressed": self.regressed,
        }


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
    noise: Mapping[str, float] = field(default_factory=dict)

    @property
    def regressed_nodes(self) -> tuple[str, ...]:
        return tuple(sorted({r.subject for r in self.nodes if r.regressed}))

    def as_dict(self) -> dict[str, Any]:
        return {
            "old": list(self.old),
            "new": list(self.new),
            "baseTolerance": self.base_tolerance,
            "noise": {k: round(v, 6) for k, v in sorted(self.noise.items())},
            "nodes": [r.as_dict() for r in self.nodes],
            "groups": [r.as_dict() for r in self.groups],
            "appeared": list(self.appeared),
            "disappeared": list(self.disappeared),
            "changed": [{"node": n, "changes": list(c)} for n, c in self.changed],
            "regressedNodes": list(self.regressed_nodes),
        }


def compare(old: Side, new: Side, *, tolerance: float = 0.05) -> Comparison:
    """Compare two sides; ``tolerance`` is the base fraction (0.05 = 5 %)."""
    before, after = _identity(old), _identity(new)
    appeared = tuple(sorted(set(after) - set(before)))
    disappeared = tuple(sorted(set(before) - set(after)))
    changed = tuple((n, tuple(c)) for n in sorted(set(before) & set(after)) if (c := _changes(before[n], after[n])))
    excluded = set(appeared) | set(disappeared) | {n for n, _ in changed}

    old_values, new_values = _values(old), _values(new)
    noise: dict[str, float] = {}
    for metric, category in sorted({(m, c) for m, c, _ in old_values} | {(m, c) for m, c, _ in new_values}):
        groups = [_median(v) for (m, c, _), v in old_values.items() if (m, c) == (metric, category)]
        repeats = [
            _spread_repeats(v) for values in (old_values, new_values) for (m, c, _), v in values.items() if (m, c) == (metric, category)
        ]
        noise[f"{category} {metric}"] = max([_spread_between(groups), *repeats])

    def bound(metric: str, category: str) -> float:
        return tolerance + 2 * noise.get(f"{category} {metric}", 0.0)

    groups_rows = []
    for key in sorted(set(old_values) & set(new_values)):
        metric, category, nodes = key
        if excluded & set(nodes):
            continue
        groups_rows.append(
            Row(",".join(nodes), category, metric, _median(old_values[key]), _median(new_values[key]), bound(metric, category))
        )

    def per_node(values: Mapping[tuple[str, str, tuple[str, ...]], list[float]]) -> dict[tuple[str, str, str], list[float]]:
        out: dict[tuple[str, str, str], list[float]] = {}
        for (metric, category, nodes), found in values.items():
            for node in nodes:
                out.setdefault((metric, category, node), []).extend(found)
        return out

    old_nodes, new_nodes = per_node(old_values), per_node(new_values)
    node_rows = [
        Row(node, category, metric, _median(old_nodes[key]), _median(new_nodes[key]), bound(metric, category))
        for key in sorted(set(old_nodes) & set(new_nodes), key=lambda k: (k[2], k[1], k[0]))
        for metric, category, node in [key]
        if node not in excluded
    ]
    return Comparison(
        old=old.paths,
        new=new.paths,
        base_tolerance=tolerance,
        nodes=tuple(node_rows),
        groups=tuple(groups_rows),
        appeared=appeared,
        disappeared=disappeared,
        changed=changed,
        noise=noise,
    )


def _value(metric: str, value: float) -> str:
    return f"{value:.2f} {_UNITS[metric]}".strip() if metric != "goodput" else f"{value:.3f}"


def _cells(row: Row) -> list[str]:
    return [
        row.subject,
        row.category,
        "bus bandwidth" if row.metric == "busBandwidthGBps" else "goodput",
        _value(row.metric, row.old),
        _value(row.metric, row.new),
        f"{row.change * 100:+.1f}%",
        f"{row.tolerance * 100:.1f}%",
        "REGRESSED" if row.regressed else "ok",
    ]


_HEADERS = ["NODE", "CATEGORY", "METRIC", "OLD", "NEW", "CHANGE", "TOLERANCE", "VERDICT"]


def _table(headers: list[str], rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [headers, *rows]]


def _summary(result: Comparison) -> list[str]:
    lines = []
    if result.appeared:
        lines.append("Appeared (not compared): " + ", ".join(result.appeared))
    if result.disappeared:
        lines.append("Disappeared (not compared): " + ", ".join(result.disappeared))
    for node, changes in result.changed:
        lines.append(f"Changed (not compared): {node}: {'; '.join(changes)}")
    regressed = result.regressed_nodes
    lines.append("Regressed nodes: " + ", ".join(regressed) if regressed else "No node regressed.")
    return lines


def render_text(result: Comparison) -> str:
    lines = [
        f"OLD: {', '.join(result.old)}",
        f"NEW: {', '.join(result.new)}",
        f"Tolerance: {result.base_tolerance * 100:g}% + 2 x measurement noise",
        "",
        "Per node:",
        *("  " + line for line in _table(_HEADERS, (_cells(r) for r in result.nodes))),
        "",
        "Per group:",
        *("  " + line for line in _table(["GROUP", *_HEADERS[1:]], (_cells(r) for r in result.groups))),
        "",
        *_summary(result),
    ]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render_markdown(result: Comparison) -> str:
    def table(headers: list[str], rows: Iterable[Row]) -> list[str]:
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        for row in rows:
            cells = _cells(row)
            cells[-1] = "**REGRESSED**" if row.regressed else "ok"
            out.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
        return out

    lines = [
        "## Evidence comparison",
        "",
        f"Tolerance: {result.base_tolerance * 100:g}% + 2 x measurement noise.",
        "",
        "### Per node",
        "",
        *table([h.title() for h in _HEADERS], result.nodes),
        "",
        "### Per group",
        "",
        *table(["Group", *[h.title() for h in _HEADERS[1:]]], result.groups),
        "",
        *(f"- {_md_escape(line)}" for line in _summary(result)),
    ]
    return "\n".join(lines) + "\n"


def render_json(result: Comparison) -> str:
    from .canonical import json_bytes

    return json_bytes(result.as_dict()).decode("utf-8")
