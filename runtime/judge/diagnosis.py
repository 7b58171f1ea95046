"""The verdict of a ``testScale: diagnose`` run (pure): where it is, what it concluded, what ran.

From the Workflow's ``status.orchestration.diagnose`` block (NVCRE's schema): the stage, rounds,
healthy and suspect nodes and infrastructure faults; from the failed-nodes entries the confirmed
nodes; and, as NVCRE's report lists them, one test per group of every round: its stage, Job,
nodes, screening domain, bus bandwidth and outcome. Rounds already retired are read from
``iterationHistory`` (each group's phase, Job and the bus bandwidth recorded when the round
ended); a group's nodes from the record when it holds them, else from the first round's
``screeningResults``, else from the round's groups while it runs.

A test's stage is NVCRE's, inferred from the group's name as NVCRE infers it (``screen`` ->
screening, ``screen-no-nvl``, ``bisect`` -> bisection, ``confirm`` -> confirmation,
``inter-domain`` -> inter-screening); the adaptive planner's groups map onto the same names
(``local-`` -> screening, ``path-`` -> inter-screening, ``link-`` -> bisection, ``pair-`` ->
confirmation). Any other name is ``unknown``, as NVCRE says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PLANNER

from .model import DiagnoseTest, DiagnosisVerdict, GroupVerdict, InfrastructureFaultVerdict
from .reading import Obj, annotations_of, as_int, as_list, as_map, as_positive, dedupe_failed, status_of

__all__ = ["diagnosis_verdict", "is_diagnose", "test_stage"]

_NVCRE_STAGES = (
    ("screen-no-nvl", "screening-no-nvl"),
    ("screen", "screening"),
    ("bisect", "bisection"),
    ("confirm", "confirmation"),
    ("inter-domain", "inter-screening"),
)
_ADAPTIVE_STAGES = (("local-", "screening"), ("path-", "inter-screening"), ("link-", "bisection"), ("pair-", "confirmation"))


def is_diagnose(workflow: Obj) -> bool:
    return bool(as_map(as_map(workflow.get("spec")).get("orchestration")).get("diagnose") is not None)


def test_stage(group: str) -> str:
    """NVCRE's test stage for a diagnose group name."""
    for marker, stage in _NVCRE_STAGES:
        if marker in group:
            return stage
    return next((stage for prefix, stage in _ADAPTIVE_STAGES if group.startswith(prefix)), "unknown")


def _screening(block: Obj) -> tuple[tuple[str, tuple[str, ...]], ...]:
    results = as_map(block.get("screeningResults"))
    return tuple((str(key), tuple(str(n) for n in as_list(as_map(value).get("nodes")))) for key, value in sorted(results.items()))


def _tests(orch: Obj, screening: Mapping[str, tuple[str, ...]], groups: Sequence[GroupVerdict]) -> tuple[DiagnoseTest, ...]:
    """Every group of every round, oldest first."""

    def test(name: str, job: str, nodes: tuple[str, ...], passed: bool, bus_bw: float | None) -> DiagnoseTest:
        stage = test_stage(name)
        domain = next((key for key, members in screening.items() if nodes and nodes[0] in members), "") if stage == "screening" else ""
        return DiagnoseTest(stage, job or name, nodes, passed, domain, bus_bw, name)

    out: list[DiagnoseTest] = []
    recorded: set[int] = set()
    for record in as_list(orch.get("iterationHistory")):
        record = as_map(record)
        recorded.add(as_int(record.get("iteration")))
        for group in as_list(record.get("groups")):
            group = as_map(group)
            name = str(group.get("name") or "")
            nodes = tuple(str(n) for n in as_list(group.get("nodes"))) or screening.get(name, ())
            out.append(
                test(
                    name,
                    str(group.get("jobName") or ""),
                    nodes,
                    group.get("phase") == "Succeeded",
                    as_positive(group.get("busBandwidthGBps")),
                )
            )
    if (as_int(orch.get("currentIteration")) or 1) not in recorded:
        for group in groups:
            bus_bw = group.bandwidth.bus_bw if group.bandwidth is not None else None
            out.append(test(group.name, group.job_name, group.nodes, group.phase == "Succeeded", bus_bw))
    return tuple(out)


def diagnosis_verdict(workflow: Obj, entries: Sequence[Mapping[str, Any]], groups: Sequence[GroupVerdict]) -> DiagnosisVerdict | None:
    """The diagnose block of a Workflow's status as a verdict (None outside diagnose)."""
    orch = as_map(status_of(workflow).get("orchestration"))
    block = as_map(orch.get("diagnose"))
    if not is_diagnose(workflow) or not block:
        return None
    history = [as_map(h) for h in as_list(orch.get("iterationHistory"))]
    recorded = {as_int(h.get("iteration")) for h in history}
    jobs = sum(1 for h in history for g in as_list(h.get("groups")) if as_map(g).get("jobName"))
    current = as_int(orch.get("currentIteration")) or 1
    if current not in recorded:
        jobs += sum(1 for g in as_list(orch.get("groups")) if as_map(as_map(g).get("jobRef")).get("name"))
    confirmed = dedupe_failed(entries)
    blamed = {node.name for node in confirmed}
    faults = tuple(
        InfrastructureFaultVerdict(
            tuple(str(n) for n in as_list(as_map(f).get("groupA"))),
            tuple(str(n) for n in as_list(as_map(f).get("groupB"))),
            str(as_map(f).get("stage") or ""),
            str(as_map(f).get("domain") or ""),
        )
        for f in as_list(block.get("infrastructureFaults"))
    )
    stage = str(block.get("stage") or "")
    suspect_nodes = {str(n) for n in as_list(block.get("suspectNodes"))}
    screening = _screening(block)
    return DiagnosisVerdict(
        stage=stage,
        rounds=as_int(block.get("round")) or current,
        jobs=jobs,
        confirmed=confirmed,
        infrastructure_faults=faults,
        unresolved=tuple(sorted(suspect_nodes - blamed)) if stage == "complete" else (),
        healthy_nodes=len(as_list(block.get("healthyNodes"))),
        planner=str(annotations_of(workflow).get(ANNOTATION_DIAGNOSE_PLANNER) or "adaptive"),
        suspect_count=len(suspect_nodes),
        tests=_tests(orch, dict(screening), groups),
        screening=screening,
    )
