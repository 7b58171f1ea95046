"""The comparison of two sides as text, Markdown (for a pull request or a ticket) and JSON.

Every format says the same things: each node's and each group's change with its tolerance and
its lowest value against the old floor, the nodes not compared and why, the OLD groups whose
repeats disagree (their bar was capped), whether the bundles' signatures were checked, and
which nodes regressed.
"""

from __future__ import annotations

from collections.abc import Iterable

from .compare import NOISE_CAP, Comparison, Row

__all__ = ["render_json", "render_markdown", "render_text"]

_HEADERS = ["NODE", "CATEGORY", "METRIC", "OLD", "NEW", "CHANGE", "LOWEST VS FLOOR", "TOLERANCE", "VERDICT"]


def _metric(metric: str) -> str:
    return "bus bandwidth" if metric == "busBandwidthGBps" else "goodput"


def _value(metric: str, value: float) -> str:
    return f"{value:.2f} GB/s" if metric == "busBandwidthGBps" else f"{value:.3f}"


def _cells(row: Row) -> list[str]:
    return [
        row.subject,
        row.category,
        _metric(row.metric),
        _value(row.metric, row.old),
        _value(row.metric, row.new),
        f"{row.change * 100:+.1f}%",
        f"{row.low_change * 100:+.1f}%",
        f"{row.tolerance * 100:.1f}%",
        "REGRESSED" if row.regressed else "ok",
    ]


def _table(headers: list[str], rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [headers, *rows]]


def _why(row: Row) -> str:
    reasons = []
    if row.fell:
        reasons.append(f"median {row.change * 100:+.1f}% beyond its {row.tolerance * 100:.1f}% tolerance")
    if row.below_floor:
        reasons.append(
            f"lowest NEW value {_value(row.metric, row.new_low)} is {row.low_change * 100:+.1f}% against the OLD floor "
            f"{_value(row.metric, row.old_floor)} (more than {row.base * 100:g}%)"
        )
    return f"{row.subject} {row.category} {_metric(row.metric)}: {'; '.join(reasons)}"


def _summary(result: Comparison) -> list[str]:
    lines = [result.signatures.describe()]
    if result.appeared:
        lines.append("Appeared (not compared): " + ", ".join(result.appeared))
    if result.disappeared:
        lines.append("Disappeared (not compared): " + ", ".join(result.disappeared))
    for node, changes in result.changed:
        lines.append(f"Changed (not compared): {node}: {'; '.join(changes)}")
    for row in result.unstable:
        lines.append(
            f"Unstable baseline: group {row.subject} in {row.category} ({_metric(row.metric)}): OLD values spread "
            f"+-{row.old_spread * 100:.1f}% around their median; its tolerance was capped at {row.tolerance * 100:.1f}%"
        )
    lines.extend(f"Regressed: {_why(row)}" for row in result.nodes if row.regressed)
    regressed = result.regressed_nodes
    lines.append("Regressed nodes: " + ", ".join(regressed) if regressed else "No node regressed.")
    return lines


def _rule(result: Comparison) -> str:
    base = f"{result.base_tolerance * 100:g}%"
    return (
        f"Tolerance: {base} + 2 x the OLD side's own noise (at most {base} + {2 * NOISE_CAP * 100:g}%); "
        f"any NEW value more than {base} below the OLD floor regresses"
    )


def render_text(result: Comparison) -> str:
    lines = [
        f"OLD: {', '.join(result.old)}",
        f"NEW: {', '.join(result.new)}",
        _rule(result),
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
        _rule(result) + ".",
        "",
        "### Per node",
        "",
        *table([h.capitalize() for h in _HEADERS], result.nodes),
        "",
        "### Per group",
        "",
        *table(["Group", *[h.capitalize() for h in _HEADERS[1:]]], result.groups),
        "",
        *(f"- {_md_escape(line)}" for line in _summary(result)),
    ]
    return "\n".join(lines) + "\n"


def render_json(result: Comparison) -> str:
    from .canonical import json_bytes

    return json_bytes(result.as_dict()).decode("utf-8")
