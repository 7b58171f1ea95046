"""The human report: NVCRE's 66-column boxed layout, rendered from the verdict model.

A banner with the title, the header (name, platform, GPU, nodes, excluded nodes), one card per
category (an ``Env:`` line with the names, never the values, of the environment variables the
run set; Failed Groups; Cliques for topology-aware runs; NVCRE's Diagnosis section for
`testScale: diagnose` (stage, rounds, healthy, suspect, faulty nodes per screening domain,
infrastructure faults, max/min bandwidth, test results per stage), then ours: each confirmed
node's reason, the links, the unresolved nodes; training metrics per topology domain in
sub-boxes; one ``↻`` line per group that restarted from a checkpoint: restarts used of those
allowed, lost work and reschedule time; and, per group that passed only after failed runs of its
workload were retried, the attempt that passed and how each earlier run ended,
``text_retries``) and, per certification, a Summary card. Every box line is exactly 66 display cells (``│`` + 64 + ``│``);
content that would not fit is cut with ``...`` or, for blocked messages, hints and log tails,
hard-wrapped. Failure-log tails are sanitised (no control or bidi characters reach the
terminal) and limited to the last 4 KiB and 20 rendered lines; the JSON report keeps the raw text.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..judge.model import (
    CategoryVerdict,
    CertificationVerdict,
    FailureLog,
    GroupVerdict,
    RestartVerdict,
)
from . import format as fmt
from .card import BOX_WIDTH, CONTENT, INNER, MARK_FAIL, MARK_PASS, MARK_PROVISIONAL, MARK_RESTART, Card, clean
from .cells import fit, sanitize, width, wrap
from .text_diagnosis import diagnosis_section
from .text_retries import retries_section

__all__ = ["BOX_WIDTH", "render", "render_many"]

TAIL_BYTES = 4096
TAIL_LINES = 20
LINE_BACKSTOP = 256


def _status_word(status: str) -> str:
    return "Running" if status == "InProgress" else status or "Pending"


def _group_label(group: GroupVerdict) -> str:
    count = len(group.nodes) or group.node_count
    if group.domains:
        return f"{', '.join(group.domains)} ({count} nodes)"
    if group.nodes and len(group.nodes) <= 4:
        return f"{group.name} ({', '.join(group.nodes)})"
    return f"{group.name} ({count} nodes)"


def _tail_lines(tail: str) -> tuple[list[str], bool]:
    data = tail.encode("utf-8")
    cut = len(data) > TAIL_BYTES
    if cut:
        tail = data[-TAIL_BYTES:].decode("utf-8", errors="ignore")
    rendered: list[str] = []
    for line in tail.splitlines():
        raw = line.encode("utf-8")
        if len(raw) > LINE_BACKSTOP:
            line = raw[:LINE_BACKSTOP].decode("utf-8", errors="ignore")
        rendered.extend(wrap(sanitize(line), CONTENT - 11))
    if len(rendered) > TAIL_LINES:
        rendered, cut = rendered[-TAIL_LINES:], True
    return rendered, cut


def _failure_log(card: Card, log: FailureLog) -> None:
    card.add("       Failure Log (one captured pod):" if log.pod_name else "       Failure Log:")
    if log.pod_name:
        card.add(f"         Pod: {sanitize(log.pod_name)}")
    if log.node_name:
        card.add(f"         Node: {sanitize(log.node_name)}")
    if log.exit_code and log.pod_name:
        card.add(f"         Exit: {log.exit_code} ({sanitize(log.reason or 'Error')})")
    elif log.reason:
        card.add(f"         Reason: {sanitize(log.reason)}")
    if not log.tail:
        return
    lines, cut = _tail_lines(log.tail)
    card.add(f"         Tail (truncated; last {len(lines)} rendered lines):" if cut else "         Tail:")
    for line in lines:
        card.add("           " + line)
    if cut:
        card.add("         Full captured excerpt: JSON report or")
        card.add("         Job.status.failureLog")


def _failed_groups(card: Card, category: CategoryVerdict) -> None:
    failed = category.failed_groups
    if not failed:
        return
    card.blank()
    card.add("Failed Groups:")
    for group in failed:
        count = len(group.nodes) or group.node_count
        card.add(f"    {MARK_FAIL}  {sanitize(group.name)} ({count} nodes)")
        if group.reason:
            card.add("       " + fit(sanitize(" ".join(group.reason.split())), 54))
        for node in group.nodes:
            card.add(f"         - {sanitize(node)}")
        if group.failure_log is not None:
            _failure_log(card, group.failure_log)


def _cliques(card: Card, category: CategoryVerdict) -> None:
    """NVCRE's Cliques section: each domain's validated nodes, with its group's bandwidth."""
    if not category.cliques:
        return
    bandwidth: dict[str, str] = {}
    if len(category.groups) > 1 and category.measures_bandwidth:
        for group in category.groups:
            if group.domains and group.bandwidth is not None:
                bandwidth[group.domains[0]] = fmt.group_bandwidth(group.bandwidth.bus_bw) + ("  LOW" if group.below_min else "")
    card.blank()
    card.add("Cliques:")
    for clique in category.cliques:
        mark = MARK_PASS if clique.passed else MARK_FAIL
        card.add(f"    {mark}  {sanitize(clique.name)}  {clique.validated}/{clique.total} nodes")
        if clique.name in bandwidth:
            card.add("       " + bandwidth[clique.name])


def _iterations(card: Card, category: CategoryVerdict) -> None:
    if len(category.iterations) <= 1:
        return
    card.blank()
    card.add("Iterations:")
    last = category.iterations[-1].number
    for item in category.iterations:
        if item.status == "Running":
            mark, label = "⋯", "Running"
        elif item.status == "Failed":
            mark, label = ("✗", "Failed") if item.number == last else ("↻", "Restarted")
        else:
            mark, label = MARK_PASS, item.status
        duration = fmt.human_duration(item.duration_seconds) if item.duration_seconds is not None else "-"
        card.add(f"    {mark}  #{item.number}  {label}  {duration}")


def _group_bandwidth(card: Card, category: CategoryVerdict) -> None:
    if len(category.groups) <= 1 or not category.measures_bandwidth:
        return
    card.blank()
    card.add("Bandwidth by group:")
    for group in category.groups:
        point = group.bandwidth
        if group.failed:
            mark = MARK_FAIL
        elif point is not None and point.provisional:
            mark = MARK_PROVISIONAL
        else:
            mark = MARK_PASS
        card.add(f"    {mark}  {sanitize(_group_label(group))}")
        if point is None:
            card.add("       no bandwidth data")
        else:
            line = "       " + fmt.group_bandwidth(point.bus_bw)
            if group.below_min:
                line += "  LOW"
            if point.provisional:
                line += f" (provisional: {point.provisional_reason})"
            card.add(line)
        if group.transport:
            card.add("       Transport: " + ", ".join(group.transport))
        if group.failed or group.below_min:
            for node in group.nodes:
                card.add(f"       - {sanitize(node)}")


def _bandwidth(card: Card, category: CategoryVerdict) -> None:
    if not category.transport and not category.bandwidth:
        return
    card.blank()
    if category.transport:
        card.add("Transport: " + ", ".join(category.transport))
    if category.bandwidth:
        card.add("Bandwidth:")
        card.add(f"  {'Size':<10} {'AlgBW':<12} {'BusBW':<12} Samples")
        for point in category.bandwidth:
            card.add(
                f"  {fmt.size(point.size_bytes):<10} {fmt.bandwidth(point.alg_bw):<12} {fmt.bandwidth(point.bus_bw):<12} {point.samples}"
            )
            if point.provisional:
                card.add(f"  (provisional: {point.provisional_reason})")


def _restart_detail(restarts: RestartVerdict) -> str:
    parts = []
    if restarts.lost_work_seconds is not None:
        parts.append(f"lost {fmt.restart_seconds(restarts.lost_work_seconds)}")
    if restarts.reschedule_seconds is not None:
        parts.append(f"reschedule {fmt.restart_seconds(restarts.reschedule_seconds)}")
    return f"({', '.join(parts)})" if parts else ""


def _restarts(card: Card, category: CategoryVerdict) -> None:
    """One line per group whose Job restarted from a checkpoint (the detail wraps when long)."""
    restarted = [(group, group.restarts) for group in category.groups if group.restarts is not None]
    if not restarted:
        return
    card.blank()
    single = len(category.groups) == 1
    for group, restarts in restarted:
        used = f"{restarts.count}/{restarts.maximum}"
        head = (
            f"{MARK_RESTART} Restarted from checkpoint {used}"
            if single
            else (f"{MARK_RESTART} {fit(sanitize(group.name), 30)} restarted from checkpoint {used}")
        )
        detail = _restart_detail(restarts)
        if not detail:
            card.add(head)
        elif width(head) + 1 + width(detail) <= CONTENT:
            card.add(f"{head} {detail}")
        else:
            card.add(head)
            card.add("  " + detail)


def _metric_lines(goodput: float | None, tflops: float | None, step: float | None) -> list[str]:
    out = []
    if goodput:
        out.append(f"Avg Runtime Goodput:  {fmt.goodput(goodput)}")
    if tflops:
        out.append(f"Avg TFLOPs/GPU:  {fmt.tflops(tflops)}")
    if step:
        out.append(f"Avg Step Time:  {fmt.step_time(step)}")
    return out


#: the content width between a domain sub-box's own borders
_DOMAIN_INNER = BOX_WIDTH - 7


def _domain_box(card: Card, name: str, count: int, lines: Sequence[str]) -> None:
    """A training domain as NVCRE draws it: a box inside the card, its metrics inside."""
    label = f"{name} ({count} nodes)" if count else name
    if width(label) <= BOX_WIDTH - 10:
        top = f"┌ {sanitize(label)} " + "─" * max(0, _DOMAIN_INNER - 2 - width(label)) + "┐ "
        card.lines.append("│  " + top + "│")
    else:
        card.lines.append("│  ┌" + "─" * _DOMAIN_INNER + "┐ │")
        for part in [*name.split(", "), *([f"({count} nodes)"] if count else [])]:
            text = fit("  " + sanitize(part), _DOMAIN_INNER)
            card.lines.append("│  │" + text + " " * (_DOMAIN_INNER - width(text)) + "│ │")
    for line in lines:
        text = fit("  " + line, _DOMAIN_INNER)
        card.lines.append("│  │" + text + " " * (_DOMAIN_INNER - width(text)) + "│ │")
    card.lines.append("│  └" + "─" * _DOMAIN_INNER + "┘ │")


def _training(card: Card, category: CategoryVerdict) -> None:
    """Training metrics: per domain in sub-boxes when the groups ran in named domains (and no
    Cliques section already shows them), else the category's averages as flat lines."""
    named = [d for d in category.domain_training if d.name]
    if named and not category.cliques:
        card.blank()
        for domain in category.domain_training:
            m = domain.metrics
            _domain_box(card, domain.name, domain.node_count, _metric_lines(m.goodput, m.tflops_per_gpu, m.step_time_seconds))
        return
    metrics = category.training
    if metrics is None:
        return
    card.blank()
    for line in _metric_lines(metrics.goodput, metrics.tflops_per_gpu, metrics.step_time_seconds):
        card.add(line)


def _shape(card: Card, category: CategoryVerdict) -> None:
    """The lines that say how the category ran: its scale, Jobs, placement and MNNVL."""
    if category.test_scale and category.placement != "Unpinned":
        card.add(f"Scale:     {category.test_scale}")
    if category.test_scale == "diagnose":
        return
    if category.nodes_per_job:
        card.add(f"Nodes/Job: {category.nodes_per_job}")
    if category.jobs:
        card.add(f"Jobs:      {category.jobs}")
    if category.placement == "Unpinned":
        if category.target_nodes and category.exercised_nodes:
            card.add(f"Placement: Unpinned ({category.exercised_nodes} of {category.target_nodes} target nodes exercised)")
        else:
            card.add("Placement: Unpinned")
    if category.mnnvl:
        card.add(f"MNNVL:     {category.mnnvl}")


def _category_card(category: CategoryVerdict) -> list[str]:
    card = Card(f"{category.domain}/{category.variant}")
    card.add(f"Status:    {_status_word(category.status)}")
    if category.status == "Failed" and category.failure_reason:
        card.add("Reason:    " + fit(sanitize(" ".join(category.failure_reason.split())), CONTENT - 11))
    if category.status == "InProgress" and category.blocked:
        card.wrapped("Blocked:", category.blocked)
    if category.runtime_seconds is not None:
        runtime = fmt.human_duration(category.runtime_seconds)
        if category.iteration_count > 1:
            runtime += f" (across {category.iteration_count} iterations)"
        card.add(f"Runtime:   {runtime}")
    _iterations(card, category)
    _shape(card, category)
    if category.env_names:  # the names only: a value may be a secret
        card.wrapped("Env:", ", ".join(category.env_names), words=True)
    _failed_groups(card, category)
    _cliques(card, category)
    if category.diagnosis is not None:
        diagnosis_section(card, category, category.diagnosis)
    if category.next_step:
        card.blank()
        card.wrapped("Next step:", category.next_step, words=True)
    _restarts(card, category)
    retries_section(card, category)
    _training(card, category)
    if not category.cliques:
        _group_bandwidth(card, category)
    _bandwidth(card, category)
    return card.close()


def _summary(verdicts: Sequence[CertificationVerdict]) -> list[str]:
    card = Card("Summary")
    total = sum(len(v.categories) for v in verdicts)
    passed = sum(v.passed_categories for v in verdicts)
    card.add(f"Categories:   {passed}/{total} passed")
    reasons: dict[str, list[str]] = {}
    for verdict in verdicts:
        for node in verdict.failed_nodes:
            bucket = reasons.setdefault(node.name, [])
            if node.reason and node.reason not in bucket:
                bucket.append(node.reason)
    if not reasons:
        card.add("Failed Nodes: none")
    else:
        card.add(f"Failed Nodes: {len(reasons)}")
        for name in sorted(reasons):
            suffix = f" ({', '.join(sorted(reasons[name]))})" if reasons[name] else ""
            card.add(f"  - {sanitize(name)}{suffix}")
    results = [v.result for v in verdicts]
    for result in ("FAILED", "RUNNING", "INCOMPLETE", "PASSED"):
        if result in results:
            card.add(f"Result:       {result}")
            break
    return card.close()


def _banner(title: str) -> list[str]:
    left = (INNER - width(title)) // 2
    right = INNER - width(title) - left
    return ["╔" + "═" * INNER + "╗", "║" + " " * left + title + " " * right + "║", "╚" + "═" * INNER + "╝"]


def _header(verdict: CertificationVerdict, several: bool) -> list[str]:
    lines = [clean(line) for line in _header_lines(verdict, several)]
    return lines


def _header_lines(verdict: CertificationVerdict, several: bool) -> list[str]:
    lines: list[str] = []
    if several:
        head = f"━━ {sanitize(verdict.name)} "
        lines.append(head + "━" * max(0, BOX_WIDTH - len(head)))
    else:
        lines.append(f"  Name:      {sanitize(verdict.name)}")
    if verdict.platform:
        lines.append(f"  Platform:  {verdict.platform}")
    if verdict.gpu:
        lines.append(f"  GPU:       {verdict.gpu}")
    if verdict.total_nodes > 0:
        lines.append(f"  Nodes:     {verdict.total_nodes}")
    if verdict.excluded_nodes:
        lines.append(f"  Excluded:  {len(verdict.excluded_nodes)} ({', '.join(verdict.excluded_nodes)})")
        if verdict.exclusion_reason:
            lines.append(f"             {sanitize(verdict.exclusion_reason)}")
    return lines


def render_many(verdicts: Sequence[CertificationVerdict]) -> str:
    """One report for several verdicts: one banner, then per verdict a separator (when there are
    several), its header, its category cards and its own Summary card, as NVCRE prints them."""
    if not verdicts:
        return ""
    several = len(verdicts) > 1
    lines: list[str] = ["", *_banner(verdicts[0].title), ""]
    for verdict in verdicts:
        lines.extend(_header(verdict, several))
        lines.append("")
        for category in verdict.categories:
            lines.extend(_category_card(category))
            lines.append("")
        lines.extend(_summary([verdict]))
        lines.append("")
    return "\n".join(lines) + "\n"


def render(verdict: CertificationVerdict) -> str:
    """The report for one verdict."""
    return render_many([verdict])
