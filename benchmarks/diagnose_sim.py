"""An offline model of a diagnose run: seeded faults, group jobs, rounds, and what they cost.

The model, stated once so both planners are judged by the same rules:

* every group of a round runs at once; a node is in at most one group per round;
* a group fails when it holds a node-local fault (slow or crash; a flaky node fails each job it is
  in with probability ``p``) or holds both ends of a bad link; a node-local fault shows in a
  single-node group too (the loopback run sends traffic through the node's own NICs), a link only
  in a group that holds both its ends;
* a passing group measures ``nominal x (1 + noise)`` bus bandwidth, a slow one ``slow_factor`` of it;
  the verdict is bandwidth >= ``threshold x nominal``; noise can fail a healthy group;
* a passing job takes ``pass_minutes``; a failing one runs to the ``fail_minutes`` diagnose timeout;
  a round lasts as long as its longest job;
* node-units are the sum of group sizes over every job; the floor is N (every node tested once).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from nvcre.compiler.diagnose import Diagnosis, GroupResult, Options, Planner, Round

__all__ = ["Outcome", "Scenario", "make_scenario", "run_group", "simulate"]


@dataclass(frozen=True)
class Scenario:
    """A cluster and its faults."""

    nodes: tuple[str, ...]
    slow: frozenset[str] = frozenset()
    crash: frozenset[str] = frozenset()
    flaky: frozenset[str] = frozenset()
    links: frozenset[frozenset[str]] = frozenset()
    topology: dict[str, str] | None = None
    flaky_p: float = 0.3
    noise: float = 0.05
    threshold: float = 0.8
    slow_factor: float = 0.1
    pass_minutes: float = 5.0
    fail_minutes: float = 15.0

    @property
    def bad_nodes(self) -> frozenset[str]:
        return self.slow | self.crash | self.flaky


@dataclass
class Outcome:
    """What one simulated diagnose cost and concluded."""

    rounds: int = 0
    jobs: int = 0
    node_units: int = 0
    minutes: float = 0.0
    diagnosis: Diagnosis | None = None
    blamed: frozenset[str] = frozenset()
    false_positives: int = 0
    false_negatives: int = 0
    links_exact: int = 0
    links_total: int = 0
    history: list[Round] = field(default_factory=list)


def make_scenario(n: int, kind: str, k: int, rng: random.Random, *, noise: float = 0.05, topology_size: int = 0) -> Scenario:
    """``k`` faults of ``kind`` (slow, crash, flaky, link, or none) among ``n`` nodes."""
    nodes = tuple(f"node-{i:04d}" for i in range(n))
    topology = {node: f"rack-{i // topology_size}" for i, node in enumerate(nodes)} if topology_size else None
    if kind == "link":
        links: set[frozenset[str]] = set()
        while len(links) < k:
            a, b = rng.sample(nodes, 2)
            links.add(frozenset((a, b)))
        return Scenario(nodes, links=frozenset(links), topology=topology, noise=noise)
    picked = frozenset(rng.sample(nodes, k)) if k else frozenset()
    return Scenario(
        nodes,
        slow=picked if kind == "slow" else frozenset(),
        crash=picked if kind == "crash" else frozenset(),
        flaky=picked if kind == "flaky" else frozenset(),
        topology=topology,
        noise=noise,
    )


def run_group(scenario: Scenario, nodes: Sequence[str], rng: random.Random) -> tuple[bool, float | None]:
    """One job on ``nodes``: (passed, bus bandwidth or None for a crash)."""
    members = set(nodes)
    if members & scenario.crash:
        return False, None
    if any(rng.random() < scenario.flaky_p for _ in members & scenario.flaky):
        return False, None
    quality = 1.0
    if members & scenario.slow or any(link <= members for link in scenario.links):
        quality = scenario.slow_factor
    bandwidth = quality * (1.0 + rng.gauss(0.0, scenario.noise))
    return bandwidth >= scenario.threshold, round(bandwidth, 4)


def simulate(planner: Planner, scenario: Scenario, options: Options, seed: int, *, max_rounds: int = 200) -> Outcome:
    """Run ``planner`` against ``scenario`` until it concludes (or ``max_rounds``)."""
    rng = random.Random(seed)
    out = Outcome()
    state, step = planner.start(scenario.nodes, scenario.topology, options)
    while isinstance(step, Round) and out.rounds < max_rounds:
        seen: set[str] = set()
        results = []
        longest = 0.0
        for group in step.groups:
            if seen & set(group.nodes):
                raise AssertionError(f"{planner.name}: a node is in two groups of one round: {group.name}")
            seen.update(group.nodes)
            passed, bandwidth = run_group(scenario, group.nodes, rng)
            results.append(GroupResult(group.name, group.nodes, passed, bandwidth))
            longest = max(longest, scenario.pass_minutes if passed else scenario.fail_minutes)
            out.jobs += 1
            out.node_units += len(group.nodes)
        out.rounds += 1
        out.minutes += longest
        out.history.append(step)
        state, step = planner.advance(state, results)
    if not isinstance(step, Diagnosis):
        raise AssertionError(f"{planner.name} did not conclude within {max_rounds} rounds")
    out.diagnosis = step
    out.blamed = frozenset(step.faulty_nodes)
    out.false_positives = len(out.blamed - scenario.bad_nodes)
    out.false_negatives = len(scenario.bad_nodes - out.blamed)
    named = {frozenset((f.side_a[0], f.side_b[0])) for f in step.infrastructure_faults if len(f.side_a) == 1 and len(f.side_b) == 1}
    out.links_total = len(scenario.links)
    out.links_exact = len(named & scenario.links)
    return out
