"""Both diagnose planners conclude under any sequence of outcomes, and replay it exactly.

The outcomes here are not drawn from a fault model: every group of every round passes, fails,
or cannot be read as a seeded random source decides (all passing, all failing, or a mix, with or
without bandwidth figures). Whatever comes back, each round must run at least one group on
distinct nodes of the run, the run must end with a diagnosis within a bound on rounds, and the
controller's replay of the same outcomes (``session.replay``) must give the same rounds and the
same diagnosis. 10,000 sequences run in a few seconds, so this stays in the fast lane.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from nvcre.compiler.diagnose import Diagnosis, GroupResult, Options, Prior, PriorGroup, Round, planner
from nvcre.compiler.diagnose.session import Outcome, replay

SEQUENCES = 10_000
#: no run of these sizes may take more rounds than this
MAX_ROUNDS = 120
MODES = ("all-pass", "all-fail", "mixed", "mixed-bw", "unreadable")


@dataclass(frozen=True)
class Case:
    planner: str
    nodes: tuple[str, ...]
    topology: dict[str, str] | None
    options: Options
    mode: str
    seed: int


def _case(seed: int) -> Case:
    rng = random.Random(seed)
    count = rng.randint(1, 24)
    nodes = tuple(f"n{i:02d}" for i in range(count))
    topology = None
    if rng.random() < 0.5:
        domains = rng.randint(1, 5)
        topology = {node: f"d{rng.randrange(domains)}" for node in nodes}
    options = Options(
        min_group_size=rng.randint(1, 3),
        mnnvl=rng.random() < 0.3,
        confirmations=rng.randint(1, 3),
        retests=rng.randint(1, 6),
        screen_cycles=rng.randint(1, 3),
        expect_fault=rng.random() < 0.3,
        max_group_size=rng.choice([2, 3, 8, 4096]),
        prior=_prior(rng, nodes) if rng.random() < 0.5 else None,
    )
    return Case(rng.choice(["adaptive", "baseline"]), nodes, topology, options, MODES[seed % len(MODES)], seed)


def _prior(rng: random.Random, nodes: tuple[str, ...]) -> Prior:
    """A failed run's groups: random sizes, random verdicts, sometimes naming nodes not in this run."""
    pool = [*nodes, "gone-0", "gone-1"]
    rng.shuffle(pool)
    groups, at = [], 0
    while at < len(pool):
        size = rng.randint(1, 6)
        groups.append(PriorGroup(tuple(pool[at : at + size]), rng.random() < 0.5))
        at += size
    return Prior(tuple(groups), exposures=rng.randint(1, 6))


def _outcome(rng: random.Random, mode: str) -> Outcome:
    if mode == "all-pass":
        return Outcome(True, 100.0)
    if mode == "all-fail":
        return Outcome(False, rng.choice([None, 11.0]))
    if mode == "unreadable":
        return Outcome(False, None, evaluable=False) if rng.random() < 0.5 else Outcome(rng.random() < 0.5, None)
    bw = rng.uniform(1.0, 120.0) if mode == "mixed-bw" else None
    return Outcome(rng.random() < 0.6, bw)


def _play(case: Case) -> tuple[list[Round], list[dict[str, Outcome]], Diagnosis]:
    rng = random.Random(case.seed * 7919 + 1)
    chosen = planner(case.planner)
    state, step = chosen.start(case.nodes, case.topology, case.options)
    rounds: list[Round] = []
    recorded: list[dict[str, Outcome]] = []
    while isinstance(step, Round):
        assert len(rounds) < MAX_ROUNDS, f"{case}: no diagnosis after {MAX_ROUNDS} rounds"
        assert step.groups, f"{case}: round {len(rounds) + 1} ({step.stage}) has no group"
        used: set[str] = set()
        for group in step.groups:
            assert group.nodes, f"{case}: group {group.name} has no node"
            assert set(group.nodes) <= set(case.nodes), f"{case}: group {group.name} runs outside the run"
            assert not used & set(group.nodes), f"{case}: a node is in two groups of one round"
            used |= set(group.nodes)
        outcomes = {group.name: _outcome(rng, case.mode) for group in step.groups}
        rounds.append(step)
        recorded.append(outcomes)
        results = [GroupResult(g.name, g.nodes, o.passed, o.bus_bw, o.evaluable) for g in step.groups for o in [outcomes[g.name]]]
        state, step = chosen.advance(state, results)
    return rounds, recorded, step


def _check(case: Case) -> Diagnosis:
    rounds, recorded, diagnosis = _play(case)
    assert set(diagnosis.faulty_nodes) <= set(case.nodes)
    again = replay(case.planner, case.nodes, case.topology, case.options, recorded)
    assert list(again.rounds) == rounds, f"{case}: the replay planned other rounds"
    assert again.diagnosis == diagnosis, f"{case}: the replay reached another diagnosis"
    return diagnosis


# About 5 s: 10,000 outcome sequences, each replayed; the full lane (make test) runs it.
@pytest.mark.slow
def test_every_outcome_sequence_ends_in_a_diagnosis_that_replays() -> None:
    for seed in range(SEQUENCES):
        _check(_case(seed))


@pytest.mark.parametrize("name", ["adaptive", "baseline"])
def test_every_group_passing_clears_every_node(name: str) -> None:
    nodes = tuple(f"n{i}" for i in range(6))
    diagnosis = _check(Case(name, nodes, None, Options(), "all-pass", 1))
    assert not diagnosis.failed and not diagnosis.faulty_nodes


@pytest.mark.parametrize("name", ["adaptive", "baseline"])
def test_every_group_failing_still_concludes_as_failed(name: str) -> None:
    nodes = tuple(f"n{i}" for i in range(6))
    diagnosis = _check(Case(name, nodes, None, Options(), "all-fail", 2))
    assert diagnosis.failed


def test_a_run_with_no_node_concludes_at_once() -> None:
    for name in ("adaptive", "baseline"):
        outcome = replay(name, (), None, Options(), [])
        assert outcome.diagnosis is not None and outcome.diagnosis.failed
        assert "no node" in outcome.diagnosis.message
