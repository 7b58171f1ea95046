"""The HTML report: one self-contained page (inline CSS and SVG, no script, nothing fetched).

Built from the verdict model (the banner and the category outcomes), the predicate (every
measurement row, thresholds, times) and the cluster identity (the node grid by topology
domain). The template runs in Jinja2's sandbox with autoescaping on, so names and messages
from the cluster are always text; the charts come from :mod:`.charts` as escaped markup. The
page reads the same printed in black and white: outcomes are words, not only colours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from . import charts
from .predicate import PREDICATE_TYPE

__all__ = ["render_html"]

_BOUND = re.compile(r"^\s*value\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*$")
_MAX_SERIES = 16


def _lower_bound(expression: str | None) -> float | None:
    """N in ``value >= N`` / ``value > N``; None for any other expression."""
    found = _BOUND.match(expression or "")
    return float(found.group(2)) if found else None


def _time(text: str | None) -> datetime | None:
    from nvcre.runtime.measure.profile import parse_rfc3339

    return parse_rfc3339(text) if text else None


def _outcome(failed: bool, phase: str) -> str:
    if failed or phase == "Failed":
        return "failed"
    return "passed" if phase in ("Succeeded", "Passed") else "other"


def _group_label(group: Mapping[str, Any]) -> str:
    """``group-0 (node-a)`` for one node, ``group-0 (2 nodes)`` for more (the tables list them)."""
    nodes = group.get("nodes") or []
    if len(nodes) == 1:
        return f"{group['name']} ({nodes[0]})"
    return f"{group['name']} ({len(nodes) or group.get('nodeCount', 0)} nodes)"


def _bandwidth_view(category: Mapping[str, Any]) -> dict[str, Any] | None:
    groups = [g for g in category.get("groups") or [] if g.get("peakBusBandwidthGBps") is not None]
    jobs = [j for j in category.get("jobs") or [] if (j.get("bandwidth") or {}).get("rows")]
    if not groups and not jobs:
        return None
    expression = (category.get("thresholds") or {}).get("busBandwidthGBps")
    bound = _lower_bound(expression)
    bars = [
        charts.Bar(_group_label(g), float(g["peakBusBandwidthGBps"]), _outcome(g["failed"], g["phase"]), g.get("reason", ""))
        for g in groups
    ]
    several = len({j["iteration"] for j in jobs}) > 1
    series = [
        charts.Series(
            f"{j['group']}" + (f" iter {j['iteration']}" if several else ""),
            tuple((float(r["sizeBytes"]), float(r["busBandwidthGBps"])) for r in j["bandwidth"]["rows"]),
        )
        for j in jobs[:_MAX_SERIES]
    ]
    title = f"{category['category']}: peak bus bandwidth per group"
    return {
        "threshold": expression or "",
        "bars": charts.bar_chart(bars, unit="GB/s", title=title, threshold=bound, threshold_label=f"min {bound:g}" if bound else "")
        if bars
        else "",
        "curve": charts.line_chart(series, title=f"{category['category']}: bus bandwidth by message size"),
        "omitted": max(len(jobs) - _MAX_SERIES, 0),
    }


def _training_view(category: Mapping[str, Any]) -> dict[str, Any] | None:
    jobs = [j for j in category.get("jobs") or [] if j.get("training")]
    if not jobs:
        return None
    groups = {g["name"]: g for g in category.get("groups") or []}
    several = len({j["iteration"] for j in jobs}) > 1

    def label(job: Mapping[str, Any]) -> str:
        base = _group_label(groups.get(job["group"], {"name": job["group"], "nodes": job["nodes"]}))
        return base + (f" iter {job['iteration']}" if several else "")

    def outcome(job: Mapping[str, Any]) -> str:
        group = groups.get(job["group"]) or {}
        return _outcome(bool(group.get("failed")), str(group.get("phase", "")))

    goodput = [charts.Bar(label(j), j["training"]["goodput"] * 100, outcome(j)) for j in jobs if "goodput" in j["training"]]
    steps = [charts.Bar(label(j), j["training"]["stepTimeSeconds"], outcome(j)) for j in jobs if "stepTimeSeconds" in j["training"]]
    expression = (category.get("thresholds") or {}).get("goodputRatio")
    bound = _lower_bound(expression)
    return {
        "threshold": expression or "",
        "goodput": charts.bar_chart(
            goodput,
            unit="% goodput",
            title=f"{category['category']}: goodput per training group",
            threshold=bound * 100 if bound is not None else None,
            threshold_label=f"min {bound * 100:g}%" if bound is not None else "",
        )
        if goodput
        else "",
        "steps": charts.bar_chart(steps, unit="s per step", title=f"{category['category']}: average step time per training group")
        if steps
        else "",
        "rows": [
            {
                "label": label(j),
                "goodput": j["training"].get("goodput"),
                "step": j["training"].get("stepTimeSeconds"),
                "tflops": j["training"].get("tflopsPerGPU"),
                # a diverged run has no goodput: its cell names why
                "failure": str((j["training"].get("failure") or {}).get("reason") or ""),
            }
            for j in jobs
        ],
    }


def _node_view(predicate: Mapping[str, Any], identity: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    failed: dict[str, list[str]] = {}
    for entry in predicate.get("failedNodes") or []:
        failed.setdefault(entry["name"], []).append(entry["reason"] + (f": {entry['message']}" if entry.get("message") else ""))
    ran = {n for c in predicate.get("categories") or [] for g in c.get("groups") or [] for n in g.get("nodes") or []}
    domains: dict[str, list[charts.Cell]] = {}
    rows = []
    for node in identity.get("nodes") or []:
        name = node["name"]
        outcome = "failed" if name in failed else ("passed" if name in ran else "other")
        reason = "; ".join(failed.get(name, ())) if name in failed else ("" if name in ran else "not run")
        topology = node.get("topology") or {}
        domain = topology.get("domain") or "no topology label"
        short = ", ".join(sorted({e["reason"] for e in predicate.get("failedNodes") or [] if e["name"] == name}))
        domains.setdefault(domain, []).append(charts.Cell(name, outcome, reason, short))
        rows.append({**node, "outcome": charts.OUTCOMES[outcome][1], "reason": reason, "domain": domain})
    grid = charts.node_grid(sorted(domains.items()), title="Nodes by topology domain, with their outcome") if domains else ""
    return grid, rows


def _timeline_view(predicate: Mapping[str, Any]) -> str:
    timings = predicate.get("timings") or {}
    origin = _time(timings.get("created"))
    if origin is None:
        return ""
    spans = []
    for category, timing in zip(predicate.get("categories") or [], timings.get("categories") or []):
        start, end = _time(timing.get("start")), _time(timing.get("end"))
        if start is None:
            continue
        outcome = _outcome(category["status"] == "Failed", category["status"])
        spans.append((category["category"], start, end or start, outcome))
        groups = {g["name"]: g for g in category.get("groups") or []}
        for job in category.get("jobs") or []:
            times = job.get("times") or {}
            job_start = _time(times.get("workloadStart") or times.get("created"))
            job_end = _time(times.get("end"))
            if job_start is None:
                continue
            group = groups.get(job["group"]) or {}
            label = f"\u00b7 {job['group']}" + (f" iter {job['iteration']}" if job["iteration"] > 1 else "")
            spans.append((label, job_start, job_end or job_start, _outcome(bool(group.get("failed")), str(group.get("phase", "")))))
    if not spans:
        return ""
    shown = [charts.Span(label, (s - origin).total_seconds(), (e - origin).total_seconds(), o) for label, s, e, o in spans]
    return charts.timeline(shown, title="Run timeline: categories and their Jobs (minutes:seconds from creation)")


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ run.kind }} {{ run.name }}: {{ run.result }}</title>
<style>
:root { --ok: #1a7f37; --bad: #c62828; --na: #8a8f98; --ink: #1f2328; --muted: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0 auto; max-width: 1040px; padding: 16px 24px 40px; }
h1 { font-size: 20px; margin: 0; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.banner { border: 3px solid; border-radius: 6px; padding: 12px 16px; display: flex; gap: 24px; align-items: center; flex-wrap: wrap; }
.banner.ok { border-color: var(--ok); background: #e9f6ec; } .banner.bad { border-color: var(--bad); background: #fdecec; } .banner.na { border-color: var(--na); background: #f3f4f6; }
.verdict { font-size: 26px; font-weight: 700; letter-spacing: .04em; }
.facts { color: var(--muted); } .facts b { color: var(--ink); font-weight: 600; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; } th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.tag { display: inline-block; padding: 0 6px; border-radius: 3px; font-weight: 700; font-size: 12px; border: 1px solid; }
.tag.ok { color: var(--ok); } .tag.bad { color: var(--bad); } .tag.na { color: var(--muted); }
.category { break-inside: avoid-page; }
svg.chart { max-width: 100%; height: auto; display: block; margin: 4px 0 10px; font: 11px system-ui, sans-serif; }
svg .lbl, svg .val { fill: var(--ink); } svg .thr { fill: var(--ink); font-weight: 700; }
svg .axis, svg .frame { stroke: #6e7781; fill: none; } svg .grid { stroke: #eaeef2; }
svg .bar.ok { fill: var(--ok); } svg .bar.bad { fill: var(--bad); } svg .bar.na { fill: var(--na); }
svg .threshold { stroke: var(--ink); stroke-width: 2; stroke-dasharray: 6 3; }
svg .series polyline { fill: none; stroke-width: 1.6; } svg .mk { stroke: #fff; stroke-width: .8; }
svg .s0 polyline { stroke: #0550ae; } svg .s0 .mk { fill: #0550ae; } svg .s1 polyline { stroke: #953800; } svg .s1 .mk { fill: #953800; }
svg .s2 polyline { stroke: #6639ba; } svg .s2 .mk { fill: #6639ba; } svg .s3 polyline { stroke: #116329; } svg .s3 .mk { fill: #116329; }
svg .cell rect { stroke: var(--ink); stroke-width: .6; } svg .cell text { fill: #fff; } svg .cell .word { font-weight: 700; }
svg .cell.ok rect { fill: var(--ok); } svg .cell.bad rect { fill: var(--bad); } svg .cell.na rect { fill: #e5e7eb; } svg .cell.na text { fill: var(--ink); }
.muted { color: var(--muted); } footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
code { font-size: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  .banner { background: none !important; }
  h2 { break-after: avoid-page; }
  svg .bar.ok, svg .cell.ok rect { fill: #555; } svg .bar.bad, svg .cell.bad rect { fill: #000; } svg .bar.na, svg .cell.na rect { fill: #ccc; }
  svg .cell text { fill: #fff; } svg .cell.na text { fill: #000; }
  a { color: inherit; text-decoration: none; }
}
</style>
</head>
<body>
<header class="banner {{ banner_class }}" role="banner">
  <div class="verdict">{{ run.result }}</div>
  <div>
    <h1>{{ title }}: {{ run.name }}</h1>
    <div class="facts">namespace <b>{{ run.namespace }}</b>{% if run.platform %} &middot; platform <b>{{ run.platform }}</b>{% endif %}{% if run.gpu %} &middot; GPU <b>{{ run.gpu }}</b>{% endif %}{% if run.totalNodes %} &middot; <b>{{ run.totalNodes }}</b> nodes{% endif %} &middot; <b>{{ passed }}</b> of <b>{{ categories|length }}</b> categories passed{% if finished %} &middot; finished <b>{{ finished }}</b>{% endif %}</div>
  </div>
</header>

<h2>Categories</h2>
<table>
<thead><tr><th>Category</th><th>Outcome</th><th>Thresholds</th><th>Reason</th></tr></thead>
<tbody>
{% for c in categories %}<tr><td>{{ c.data.category }}</td><td><span class="tag {{ c.css }}">{{ c.word }}</span> {{ c.data.status }}</td><td>{% for k, v in c.data.get('thresholds', {}).items() %}<code>{{ k }}: {{ v }}</code><br>{% endfor %}</td><td>{{ c.data.get('failureReason', '') }}</td></tr>
{% endfor %}</tbody>
</table>

{% if failed_nodes %}
<h2>Failed nodes</h2>
<table>
<thead><tr><th>Node</th><th>Reason</th><th>Message</th></tr></thead>
<tbody>{% for n in failed_nodes %}<tr><td>{{ n.name }}</td><td>{{ n.reason }}</td><td>{{ n.get('message', '') }}</td></tr>{% endfor %}</tbody>
</table>
{% endif %}

{% for c in categories %}
<section class="category">
<h2>{{ c.data.category }} <span class="tag {{ c.css }}">{{ c.word }}</span></h2>
{% if c.data.get('failureReason') %}<p>Reason: {{ c.data.failureReason }}</p>{% endif %}
{% if c.bandwidth %}
<h3>Bus bandwidth per group{% if c.bandwidth.threshold %} (threshold <code>{{ c.bandwidth.threshold }}</code>){% endif %}</h3>
{{ c.bandwidth.bars }}
<h3>Bus bandwidth by message size</h3>
{{ c.bandwidth.curve }}
{% if c.bandwidth.omitted %}<p class="muted">{{ c.bandwidth.omitted }} more Jobs are in the predicate but not drawn.</p>{% endif %}
{% endif %}
{% if c.training %}
<h3>Goodput per training group{% if c.training.threshold %} (threshold <code>{{ c.training.threshold }}</code>){% endif %}</h3>
{{ c.training.goodput }}
<h3>Step time per training group</h3>
{{ c.training.steps }}
<table><thead><tr><th>Group</th><th>Goodput</th><th>Step time (s)</th><th>TFLOPS per GPU</th></tr></thead><tbody>
{% for r in c.training.rows %}<tr><td>{{ r.label }}</td><td class="num">{{ '%.3f'|format(r.goodput) if r.goodput is not none else r.failure }}</td><td class="num">{{ '%.3f'|format(r.step) if r.step is not none else '' }}</td><td class="num">{{ '%.1f'|format(r.tflops) if r.tflops is not none else '' }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
{% if c.data.groups %}
<table><thead><tr><th>Group</th><th>Nodes</th><th>Outcome</th>{% if c.bandwidth %}<th>Peak bus bandwidth (GB/s)</th>{% endif %}<th>Reason</th></tr></thead><tbody>
{% for g in c.data.groups %}<tr><td>{{ g.name }}</td><td>{{ g.nodes|join(', ') }}</td><td><span class="tag {{ 'bad' if g.failed else ('ok' if g.phase == 'Succeeded' else 'na') }}">{{ 'FAIL' if g.failed else ('PASS' if g.phase == 'Succeeded' else 'n/a') }}</span> {{ g.phase }}</td>{% if c.bandwidth %}<td class="num">{{ '%.2f'|format(g.peakBusBandwidthGBps) if g.get('peakBusBandwidthGBps') is not none else '' }}</td>{% endif %}<td>{{ g.get('reason', '') }}</td></tr>{% endfor %}
</tbody></table>
{% endif %}
{% if c.data.get('images') %}<p class="muted">Images: {% for i in c.data.images %}<code>{{ i }}</code>{% if not loop.last %}, {% endif %}{% endfor %}</p>{% endif %}
</section>
{% endfor %}

{% if grid %}
<h2>Nodes by topology domain</h2>
{{ grid }}
<table><thead><tr><th>Node</th><th>Domain</th><th>Outcome</th><th>Reason</th><th>GPU</th><th>Driver</th><th>CUDA</th><th>Provider ID</th></tr></thead><tbody>
{% for n in nodes %}<tr><td>{{ n.name }}</td><td>{{ n.domain }}</td><td><span class="tag {{ 'bad' if n.outcome == 'FAIL' else ('ok' if n.outcome == 'PASS' else 'na') }}">{{ n.outcome }}</span></td><td>{{ n.reason }}</td><td>{{ n.gpu.product }}{% if n.gpu.count %} &times; {{ n.gpu.count }}{% endif %}</td><td>{{ n.driverVersion }}</td><td>{{ n.cudaVersion }}</td><td><code>{{ n.providerID }}</code></td></tr>{% endfor %}
</tbody></table>
{% endif %}

{% if timeline %}
<h2>Timeline</h2>
{{ timeline }}
{% endif %}

<footer>
Evidence predicate <code>{{ predicate_type }}</code>{% for k, v in tools.items() %} &middot; {{ k }} {{ v }}{% endfor %}{% if catalog.sha256 %} &middot; catalog sha256 <code>{{ catalog.sha256[:16] }}</code>{% endif %}.
This page is one of the files the bundle's Statement lists by digest; check the bundle with <code>nvcrectl evidence verify</code>.
</footer>
</body>
</html>
"""


def _environment() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(autoescape=True, trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=True)


def render_html(verdict: Any, predicate: Mapping[str, Any], identity: Mapping[str, Any]) -> str:
    """The report page of one run."""
    from markupsafe import Markup

    def markup(text: str) -> Markup:
        return Markup(text)  # produced by .charts, which escapes every text it draws

    categories: list[dict[str, Any]] = []
    for data in predicate.get("categories") or []:
        outcome = _outcome(data["status"] == "Failed", data["status"])
        bandwidth = _bandwidth_view(data)
        training = _training_view(data)
        if bandwidth:
            bandwidth = {**bandwidth, "bars": markup(bandwidth["bars"]), "curve": markup(bandwidth["curve"])}
        if training:
            training = {**training, "goodput": markup(training["goodput"]), "steps": markup(training["steps"])}
        css, word = charts.OUTCOMES[outcome]
        categories.append({"data": data, "css": css, "word": word, "bandwidth": bandwidth, "training": training})
    grid, nodes = _node_view(predicate, identity)
    result = str(verdict.result)
    banner = "ok" if result in ("PASSED", "INCOMPLETE") else ("bad" if result == "FAILED" else "na")
    template = _environment().from_string(_TEMPLATE)
    return str(
        template.render(
            title=verdict.title,
            run=predicate["run"],
            banner_class=banner,
            passed=verdict.passed_categories,
            finished=(predicate.get("timings") or {}).get("finished", ""),
            categories=categories,
            failed_nodes=predicate.get("failedNodes") or [],
            grid=markup(grid),
            nodes=nodes,
            timeline=markup(_timeline_view(predicate)),
            predicate_type=PREDICATE_TYPE,
            tools=predicate.get("tools") or {},
            catalog=predicate.get("catalog") or {},
        )
    )
