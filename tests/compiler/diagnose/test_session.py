"""A diagnose run rebuilt from what a Workflow's status keeps: planner choice, options and replay."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler.diagnose import planner
from nvcre.compiler.diagnose.model import Diagnosis, GroupResult, Options, Round
from nvcre.compiler.diagnose.session import (
    Outcome,
    options_for,
    planner_of,
    replay,
    replay_workflow,
    round_topology,
    status_stage,
)
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PLANNER

NODES = tuple(f"n{i}" for i in range(4))


def workflow(planner_name: str | None = None, num_nodes: int = 1, **diagnose: Any) -> dict[str, Any]:
    annotations = {ANNOTATION_DIAGNOSE_PLANNER: planner_name} if planner_name is not None else {}
    return {
        "metadata": {"name": "wf", "annotations": annotations},
        "spec": {
            "jobTemplate": {
                "spec": {"workload": {"trainJob": {"trainer": {"numNodes": num_nodes, "args": ["-x", "NCCL_MNNVL_ENABLE=0"]}}}}
            },
            "orchestration": {"diagnose": diagnose},
        },
    }


def play(name: str, bad: set[str], link: frozenset[str] = frozenset()) -> tuple[list[Round], Diagnosis, list[dict[str, Outcome]]]:
    """Run a planner live against a fault set, keeping what the status would keep."""
    chosen = planner(name)
    options = Options(max_group_size=len(NODES))
    state, step = chosen.start(NODES, None, options)
    rounds: list[Round] = []
    recorded: list[dict[str, Outcome]] = []
    while isinstance(step, Round):
        rounds.append(step)
        outcome = {}
        results = []
        for group in step.groups:
            ok = not (set(group.nodes) & bad) and not (link and link <= set(group.nodes))
            bw = 10.0 if ok else 1.0
            outcome[group.name] = Outcome(ok, bw)
            results.append(GroupResult(group.name, group.nodes, ok, bw))
        recorded.append(outcome)
        state, step = chosen.advance(state, results)
    return rounds, step, recorded


def test_the_planner_comes_from_the_annotation_and_defaults_to_adaptive() -> None:
    assert planner_of(workflow()) == "adaptive"
    assert planner_of(workflow("baseline")) == "baseline"
    with pytest.raises(CompileError) as caught:
        planner_of(workflow("fastest"))
    (problem,) = caught.value.errors
    assert problem.path == f"metadata.annotations[{ANNOTATION_DIAGNOSE_PLANNER}]"
    assert "unknown diagnose planner 'fastest'" in problem.message


def test_options_follow_the_diagnose_block() -> None:
    assert options_for(workflow(minGroupSize=1), 4, mnnvl=True) == Options(min_group_size=1, mnnvl=True, max_group_size=4)
    # an explicit multi-node job size caps the path screen's groups
    assert options_for(workflow(num_nodes=2), 8, mnnvl=False).max_group_size == 2
    assert options_for(workflow(minGroupSize=0), 4, mnnvl=False).min_group_size == 1


def test_stages_are_reported_under_nvcre_names() -> None:
    assert [status_stage(s) for s in ("local-screen", "confirm", "path-screen", "link-search", "link-confirm")] == [
        "intra-screening",
        "confirmation",
        "inter-screening",
        "cross-boundary",
        "confirmation",
    ]
    assert status_stage("bisection") == "bisection"


@pytest.mark.parametrize("name", ["adaptive", "baseline"])
@pytest.mark.parametrize("bad,link", [(set(), frozenset()), ({"n2"}, frozenset()), (set(), frozenset({"n0", "n1"}))])
def test_replaying_the_recorded_results_reaches_the_same_rounds_and_diagnosis(name: str, bad: set[str], link: frozenset[str]) -> None:
    rounds, diagnosis, recorded = play(name, bad, link)
    first = {g.name: g.nodes for g in rounds[0].groups}
    options = Options(max_group_size=len(NODES))
    for cut in range(len(recorded) + 1):
        again = replay(name, NODES, round_topology(first), options, recorded[:cut])
        assert list(again.rounds) == rounds[:cut]
        assert again.next == (rounds[cut] if cut < len(rounds) else diagnosis)


def test_the_adaptive_replay_names_the_slow_node_and_the_bad_link() -> None:
    _, slow, _ = play("adaptive", {"n2"})
    assert slow.failed and set(slow.faulty_nodes) == {"n2"}
    _, link, _ = play("adaptive", set(), frozenset({"n0", "n1"}))
    assert link.failed and not link.faulty_nodes
    assert [(f.side_a, f.side_b) for f in link.infrastructure_faults] == [(("n0",), ("n1",))]


def test_round_topology_rebuilds_the_baseline_screening_groups_in_order() -> None:
    first = {f"screen-{i}": (f"m{i:02d}a", f"m{i:02d}b") for i in range(12)}
    nodes = sorted(n for members in first.values() for n in members)
    again = replay("baseline", nodes, round_topology(first), Options(), [])
    assert {g.name: g.nodes for g in again.next.groups} == first  # type: ignore[union-attr]


def test_a_missing_group_counts_as_failed_and_a_late_round_is_refused() -> None:
    rounds, _, recorded = play("adaptive", set())
    first = {g.name: g.nodes for g in rounds[0].groups}
    topology = round_topology(first)
    options = Options(max_group_size=len(NODES))
    partial = replay("adaptive", NODES, topology, options, [{k: v for k, v in recorded[0].items() if k != "local-3"}])
    assert isinstance(partial.next, Round) and partial.next.stage == "confirm"
    assert [g.nodes for g in partial.next.groups] == [("n3",)]
    with pytest.raises(ValueError, match="after the diagnosis"):
        replay("adaptive", NODES, topology, options, [*recorded, recorded[-1]])


def test_replay_workflow_reads_the_planner_nodes_and_options_from_the_workflow() -> None:
    rounds, diagnosis, recorded = play("adaptive", {"n1"})
    first = {g.name: list(g.nodes) for g in rounds[0].groups}
    again = replay_workflow(workflow(num_nodes=4), first, recorded)
    assert again.diagnosis == diagnosis
