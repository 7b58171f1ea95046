"""Small inline SVG charts for the HTML report, drawn here so the page needs nothing from outside.

Every chart is a function from plain numbers and labels to one ``<svg>`` element (a string
already escaped, to be inserted as markup). Colour is never the only carrier of meaning: bars
and cells carry text labels, outcomes carry a word as well as a hue, series carry distinct
marker shapes, and every mark has a ``<title>`` for hover and for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Bar", "Cell", "Series", "Span", "bar_chart", "line_chart", "node_grid", "timeline"]

#: outcome -> (CSS class, word shown with the hue)
OUTCOMES = {"passed": ("ok", "PASS"), "failed": ("bad", "FAIL"), "other": ("na", "n/a")}
_MARKERS = ("circle", "square", "triangle", "diamond")


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _num(value: float) -> str:
    """Three significant digits, without a trailing ``.0``: 478, 11.1, 0.0183."""
    if value == 0:
        return "0"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return text if "e" not in text else f"{value:.2e}"


def _label_width(labels: Sequence[str], floor: int = 80, ceiling: int = 330) -> int:
    """Room for the longest label at about 6.4 pixels a character (11 px system font)."""
    return int(min(max([floor] + [len(t) * 6.5 + 16 for t in labels]), ceiling))


def _fit(text: str, width: int) -> str:
    most = max(int((width - 10) / 6.5), 4)
    return text if len(text) <= most else text[: most - 1] + "\u2026"


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    outcome: str  # passed | failed | other
    note: str = ""


def bar_chart(bars: Sequence[Bar], *, unit: str, title: str, threshold: float | None = None, threshold_label: str = "") -> str:
    """Horizontal bars, one per entry, with the value written at the end and an optional threshold line."""
    row, width, right = 26, 420, 150
    left = _label_width([b.label for b in bars])
    height = 34 + row * len(bars) + 24
    largest = max([b.value for b in bars] + [1e-9])
    # a threshold far beyond every bar is marked at the edge, so the bars stay readable
    off_scale = threshold is not None and threshold > 3 * largest
    top = largest if threshold is None or off_scale else max(largest, threshold)
    scale = width / (top * 1.05)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {left + width + right} {height}" width="{left + width + right}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>',
        f'<line class="axis" x1="{left}" y1="26" x2="{left}" y2="{height - 20}"/>',
    ]
    for index, bar in enumerate(bars):
        y = 30 + row * index
        css, word = OUTCOMES.get(bar.outcome, OUTCOMES["other"])
        length = max(bar.value * scale, 1.0)
        hover = f"{bar.label}: {_num(bar.value)} {unit} ({word}){' - ' + bar.note if bar.note else ''}"
        parts.append(f'<text class="lbl" x="{left - 6}" y="{y + 14}" text-anchor="end">{_e(_fit(bar.label, left))}</text>')
        parts.append(
            f'<rect class="bar {css}" x="{left}" y="{y}" width="{length:.1f}" height="{row - 8}"><title>{_e(hover)}</title></rect>'
        )
        parts.append(f'<text class="val" x="{left + length + 5:.1f}" y="{y + 14}">{_e(_num(bar.value))} {_e(unit)} {word}</text>')
    if threshold is not None:
        x = left + (width if off_scale else threshold * scale)
        label = (threshold_label or _num(threshold)) + (" (off scale)" if off_scale else "")
        parts.append(f'<line class="threshold" x1="{x:.1f}" y1="22" x2="{x:.1f}" y2="{height - 20}"/>')
        parts.append(f'<text class="thr" x="{x:.1f}" y="16" text-anchor="middle">{_e(label)}</text>')
    parts.append(f'<text class="lbl" x="{left + width / 2:.0f}" y="{height - 4}" text-anchor="middle">{_e(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (message size in bytes, bus bandwidth)


def _size(value: float) -> str:
    units = ("B", "KB", "MB", "GB", "TB")
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{value:.0f} {units[unit]}"


def _marker(shape: str, x: float, y: float, hover: str) -> str:
    title = f"<title>{_e(hover)}</title>"
    if shape == "circle":
        return f'<circle class="mk" cx="{x:.1f}" cy="{y:.1f}" r="3.5">{title}</circle>'
    if shape == "square":
        return f'<rect class="mk" x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7">{title}</rect>'
    if shape == "triangle":
        return f'<polygon class="mk" points="{x:.1f},{y - 4.5:.1f} {x - 4:.1f},{y + 3.5:.1f} {x + 4:.1f},{y + 3.5:.1f}">{title}</polygon>'
    return f'<polygon class="mk" points="{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y:.1f} {x:.1f},{y + 4.5:.1f} {x - 4.5:.1f},{y:.1f}">{title}</polygon>'


def line_chart(series: Sequence[Series], *, title: str, unit: str = "GB/s") -> str:
    """Bus bandwidth against message size (log scale), one line and marker shape per series."""
    left, top, width, height, legend = 60, 14, 520, 220, 18 * len(series) + 8
    points = [p for s in series for p in s.points if p[0] > 0]
    total_h = top + height + 40 + legend
    head = (
        f'<svg class="chart" role="img" viewBox="0 0 {left + width + 20} {total_h}" width="{left + width + 20}" '
        f'height="{total_h}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
    )
    if not points:
        return head + f'<text class="lbl" x="{left}" y="{top + 20}">no bandwidth rows</text></svg>'
    lo, hi = math.log2(min(p[0] for p in points)), math.log2(max(p[0] for p in points))
    span = max(hi - lo, 1.0)
    ymax = max(p[1] for p in points) * 1.08 or 1.0

    def sx(size: float) -> float:
        return left + (math.log2(size) - lo) / span * width

    def sy(value: float) -> float:
        return top + height - value / ymax * height

    parts = [head, f'<rect class="frame" x="{left}" y="{top}" width="{width}" height="{height}"/>']
    for step in range(5):
        value = ymax * step / 4
        y = sy(value)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}"/>')
        parts.append(f'<text class="lbl" x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_e(_num(value))}</text>')
    ticks = sorted({int(e) for e in range(math.floor(lo), math.ceil(hi) + 1) if (e - math.floor(lo)) % max(1, round(span / 6)) == 0})
    for exponent in ticks:
        x = sx(2.0**exponent)
        if left - 1 <= x <= left + width + 1:
            parts.append(f'<text class="lbl" x="{x:.1f}" y="{top + height + 14}" text-anchor="middle">{_e(_size(2.0**exponent))}</text>')
    parts.append(
        f'<text class="lbl" x="{left + width / 2:.0f}" y="{top + height + 30}" text-anchor="middle">message size (log scale)</text>'
    )
    parts.append(
        f'<text class="lbl" x="12" y="{top + height / 2:.0f}" transform="rotate(-90 12 {top + height / 2:.0f})" text-anchor="middle">{_e(unit)}</text>'
    )
    for index, line in enumerate(series):
        shape = _MARKERS[index % len(_MARKERS)]
        drawn = [(sx(s), sy(v), s, v) for s, v in line.points if s > 0]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in drawn)
        parts.append(f'<g class="series s{index % 4}"><polyline points="{path}"/>')
        parts.extend(_marker(shape, x, y, f"{line.label}: {_size(s)} {_num(v)} {unit}") for x, y, s, v in drawn)
        parts.append("</g>")
        ly = top + height + 44 + 18 * index
        parts.append(f'<g class="series s{index % 4}">{_marker(shape, left + 6, ly - 4, line.label)}</g>')
        parts.append(f'<text class="lbl" x="{left + 16}" y="{ly}">{_e(line.label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Cell:
    node: str
    outcome: str
    #: the full reason (hover), and the few words written in the cell
    reason: str = ""
    short: str = ""


def node_grid(domains: Sequence[tuple[str, Sequence[Cell]]], *, title: str) -> str:
    """One row of cells per topology domain; each cell names its node and its outcome word."""
    cell_w, cell_h, gap, label_w, per_row = 150, 34, 6, 150, 5
    rows: list[tuple[str, Sequence[Cell]]] = []
    for domain, cells in domains:
        for start in range(0, max(len(cells), 1), per_row):
            rows.append((domain if start == 0 else "", cells[start : start + per_row]))
    height = 8 + len(rows) * (cell_h + gap)
    width = label_w + per_row * (cell_w + gap)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
    ]
    for r, (domain, cells) in enumerate(rows):
        y = 4 + r * (cell_h + gap)
        if domain:
            parts.append(f'<text class="lbl" x="0" y="{y + 21}">{_e(domain)}</text>')
        for c, cell in enumerate(cells):
            x = label_w + c * (cell_w + gap)
            css, word = OUTCOMES.get(cell.outcome, OUTCOMES["other"])
            hover = f"{cell.node}: {word}" + (f" - {cell.reason}" if cell.reason else "")
            parts.append(
                f'<g class="cell {css}"><title>{_e(hover)}</title><rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" rx="3"/>'
                f'<text x="{x + 6}" y="{y + 14}">{_e(_fit(cell.node, cell_w))}</text>'
                f'<text class="word" x="{x + 6}" y="{y + 28}">{word}{" " + _e(_fit(cell.short, cell_w - 36)) if cell.short else ""}</text></g>'
            )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Span:
    label: str
    start: float  # seconds from the run's creation
    end: float
    outcome: str


def _clock(seconds: float) -> str:
    whole = int(max(seconds, 0))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}" if whole >= 3600 else f"{whole // 60}:{whole % 60:02d}"


def timeline(spans: Sequence[Span], *, title: str) -> str:
    """A bar per span on a shared time axis (seconds from the run's creation)."""
    row, width = 22, 440
    left = _label_width([s.label for s in spans], 120, 300)
    height = 20 + row * len(spans) + 30
    end = max([s.end for s in spans] + [1.0])
    scale = width / end
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {left + width + 60} {height}" width="{left + width + 60}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
    ]
    for step in range(5):
        x = left + width * step / 4
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{height - 26}"/>')
        parts.append(f'<text class="lbl" x="{x:.1f}" y="{height - 12}" text-anchor="middle">{_clock(end * step / 4)}</text>')
    for index, span in enumerate(spans):
        y = 14 + row * index
        css, word = OUTCOMES.get(span.outcome, OUTCOMES["other"])
        x = left + span.start * scale
        length = max((span.end - span.start) * scale, 2.0)
        hover = f"{span.label}: {_clock(span.start)} to {_clock(span.end)} ({word})"
        parts.append(f'<text class="lbl" x="{left - 6}" y="{y + 12}" text-anchor="end">{_e(_fit(span.label, left))}</text>')
        parts.append(
            f'<rect class="bar {css}" x="{x:.1f}" y="{y}" width="{length:.1f}" height="{row - 8}"><title>{_e(hover)}</title></rect>'
        )
        parts.append(f'<text class="val" x="{min(x + length + 4, left + width + 2):.1f}" y="{y + 12}">{word}</text>')
    parts.append("</svg>")
    return "".join(parts)
