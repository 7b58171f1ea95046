"""The Diagnosis section of a ``testScale: diagnose`` category card: NVCRE's layout, then ours.

NVCRE's part: the stage, rounds, healthy and suspect counts, the faulty nodes under their
screening domain, infrastructure faults, the highest and lowest bus bandwidth with where they
were measured, and every test grouped by stage. Ours follows it: why each confirmed node was
blamed, the links found between nodes (no node blamed) and the nodes left unresolved.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..judge.model import CategoryVerdict, DiagnoseTest, DiagnosisVerdict
from . import format as fmt
from .card import MARK_FAIL, MARK_PASS, Card
from .cells import sanitize

__all__ = ["diagnosis_section"]


def _sides(nodes: Sequence[str]) -> str:
    return ", ".join(sanitize(n) for n in nodes) or "-"


#: NVCRE's display names of the diagnose stages (the status's, then the tests')
_STAGE_NAMES = {
    "intra-screening": "intra-rack screening",
    "intra-screening-no-nvl": "intra-rack screening (no NVL)",
    "inter-screening": "inter-rack screening",
    "bisection": "bisection",
    "confirmation": "confirmation",
    "cross-boundary": "cross-boundary probing",
    "complete": "complete",
}
_TEST_STAGES = (
    ("screening", "intra-rack screening"),
    ("screening-no-nvl", "intra-rack screening (no NVL)"),
    ("inter-screening", "inter-rack screening"),
    ("bisection", "bisection"),
    ("confirmation", "confirmation"),
)


def _faulty_by_domain(diagnosis: DiagnosisVerdict) -> list[tuple[str, list[str]]]:
    """The confirmed nodes under their screening domain (``unknown`` when none holds them)."""
    where = {node: domain for domain, nodes in diagnosis.screening for node in nodes}
    grouped: dict[str, list[str]] = {}
    for name in sorted({n.name for n in diagnosis.confirmed}):
        grouped.setdefault(where.get(name, "unknown"), []).append(name)
    return sorted(grouped.items())


def _extreme(card: Card, label: str, value: str, domain: str, nodes: Sequence[str]) -> None:
    card.add(f"{label:<12} {value}")
    if domain:
        card.add(f"      {sanitize(domain)} ({len(nodes)} nodes)")
    else:
        for node in nodes:
            card.add(f"      - {sanitize(node)}")


def diagnosis_section(card: Card, category: CategoryVerdict, diagnosis: DiagnosisVerdict) -> None:
    """NVCRE's Diagnosis section, then ours: the reasons, link faults and unresolved nodes."""
    card.blank()
    terminal = category.status in ("Succeeded", "Failed")
    stage = "complete" if terminal else diagnosis.stage
    card.add("Diagnosis:")
    card.add(f"{'  Stage:':<12} {_STAGE_NAMES.get(stage, sanitize(stage))}")
    card.add(f"{'  Rounds:':<12} {diagnosis.rounds}")
    card.add(f"{'  Healthy:':<12} {diagnosis.healthy_nodes} nodes")
    if diagnosis.suspect_count:
        card.add(f"{'  Suspect:':<12} {diagnosis.suspect_count} nodes")
    _blamed(card, diagnosis)
    if diagnosis.extremes is not None:
        best, worst = diagnosis.extremes
        _extreme(card, "  Max BW:", fmt.group_bandwidth(best.bus_bw or 0.0), best.domain, best.nodes)
        _extreme(card, "  Min BW:", fmt.group_bandwidth(worst.bus_bw or 0.0), worst.domain, worst.nodes)
    _test_results(card, diagnosis)
    _findings(card, diagnosis)


def _blamed(card: Card, diagnosis: DiagnosisVerdict) -> None:
    """NVCRE's Faulty rows by domain, then the infrastructure faults."""
    if diagnosis.confirmed:
        card.add(f"{'  Faulty:':<12} {len({n.name for n in diagnosis.confirmed})} nodes")
        for domain, nodes in _faulty_by_domain(diagnosis):
            card.add(f"    {sanitize(domain)}:")
            for node in nodes:
                card.add(f"      - {sanitize(node)}")
    if diagnosis.infrastructure_faults:
        card.add(f"{'  Infra:':<12} {len(diagnosis.infrastructure_faults)} faults")
        for fault in diagnosis.infrastructure_faults:
            card.add(f"    {sanitize(fault.domain or 'inter-domain')}: {len(fault.side_a)} + {len(fault.side_b)} nodes")


def _test_results(card: Card, diagnosis: DiagnosisVerdict) -> None:
    """NVCRE's Test Results, one block per stage that ran a test."""
    if not diagnosis.tests:
        return
    card.blank()
    card.add("Test Results:")
    for stage_key, title in _TEST_STAGES:
        tests = [t for t in diagnosis.tests if t.stage == stage_key]
        if not tests:
            continue
        card.blank()
        card.add(f"  {title}:")
        for test in tests:
            _test_line(card, test)


def _test_line(card: Card, test: DiagnoseTest) -> None:
    mark = MARK_PASS if test.passed else MARK_FAIL
    if test.domain:
        card.add(f"    {mark}  {sanitize(test.domain)}")
        card.add(f"       ({len(test.nodes)} nodes)")
    elif not test.nodes:
        card.add(f"    {mark}  {sanitize(test.group or test.name)}")  # a retired round that kept no node list
    elif test.passed:
        card.add(f"    {mark}  {len(test.nodes)} nodes")
    else:
        card.add(f"    {mark}  {len(test.nodes)} nodes:")
        for node in test.nodes:
            card.add(f"         - {sanitize(node)}")
    if test.bus_bw is not None:
        card.add("       " + fmt.bandwidth(test.bus_bw))


def _findings(card: Card, diagnosis: DiagnosisVerdict) -> None:
    """Ours, after NVCRE's: why each node was blamed, the links, and what stayed undecided."""
    if diagnosis.confirmed or diagnosis.infrastructure_faults or diagnosis.unresolved:
        card.blank()
        card.add(f"Findings ({sanitize(diagnosis.planner or 'adaptive')} planner, {diagnosis.jobs} jobs):")
    for blamed in diagnosis.confirmed:
        card.add(f"    {MARK_FAIL}  {sanitize(blamed.name)}: {sanitize(blamed.reason or 'unknown')}")
    for fault in diagnosis.infrastructure_faults:
        card.wrapped(f"    {MARK_FAIL}  link", f"{_sides(fault.side_a)} <-> {_sides(fault.side_b)}", indent=14)
        card.add("          no node blamed")
    if diagnosis.unresolved:
        card.wrapped("    Unresolved:", ", ".join(diagnosis.unresolved), indent=18, words=True)
