"""The diagnose planners: NVCRE's baseline reproduces its documented rounds; ours isolates faster and names links."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.compiler.diagnose import Diagnosis, GroupResult, Options, Round, planner

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from diagnose_sim import Scenario, make_scenario, simulate  # noqa: E402

BASELINE = planner("baseline")
ADAPTIVE = planner("adaptive")
NODES = tuple(f"node-{i:04d}" for i in range(64))


def test_unknown_planner_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown diagnose planner"):
        planner("magic")


def test_baseline_healthy_64_is_two_rounds_nine_jobs() -> None:
    out = simulate(BASELINE, Scenario(NODES, noise=0.0), Options(), seed=1)
    assert (out.rounds, out.jobs, out.node_units, out.minutes) == (2, 9, 72, 10.0)
    assert [r.stage for r in out.history] == ["intra-screening", "inter-screening"]
    assert [g.name for g in out.history[0].groups] == [f"screen-{i}" for i in range(8)]
    assert out.history[1].groups[0].name == "inter-domain"
    assert out.diagnosis is not None and out.diagnosis.message == "All screening passed, no faults detected"


def test_baseline_one_bad_node_follows_the_documented_stages() -> None:
    out = simulate(BASELINE, Scenario(NODES, crash=frozenset({"node-0037"}), noise=0.0), Options(), seed=1)
    assert [r.stage for r in out.history] == ["intra-screening", "inter-screening", "bisection", "bisection", "confirmation"]
    assert (out.rounds, out.jobs, out.node_units, out.minutes) == (5, 15, 87, 65.0)
    assert [g.name for g in out.history[2].groups] == ["bisect-2-0a", "bisect-2-0b"]
    confirm = out.history[4].groups
    assert [g.name for g in confirm] == ["confirm-0", "confirm-1"]
    assert all(len(g.nodes) == 2 for g in confirm)
    assert out.diagnosis is not None
    assert out.diagnosis.message == "Diagnosis complete: 1 faulty nodes confirmed"
    assert set(out.diagnosis.faulty_nodes) == {"node-0037"}


def test_baseline_no_nvl_rescreen_only_with_mnnvl() -> None:
    out = simulate(BASELINE, Scenario(NODES[:16], noise=0.0), Options(mnnvl=True), seed=1)
    assert [r.stage for r in out.history][:2] == ["intra-screening", "intra-screening-no-nvl"]
    assert all(g.no_nvl for g in out.history[1].groups)
    assert out.history[1].groups[0].name.startswith("screen-no-nvl-")


def test_baseline_screens_by_topology_domain() -> None:
    topology = {n: f"rack-{i // 16}" for i, n in enumerate(NODES)}
    state, first = BASELINE.start(NODES, topology, Options())
    assert [len(g.nodes) for g in first.groups] == [16, 16, 16, 16]


def test_adaptive_isolates_one_and_two_bad_nodes_in_two_rounds() -> None:
    for bad in ({"node-0037"}, {"node-0003", "node-0050"}):
        out = simulate(ADAPTIVE, Scenario(NODES, slow=frozenset(bad), noise=0.0), Options(), seed=3)
        assert out.rounds == 2
        assert out.node_units == 64 + len(bad)
        assert out.minutes == 30.0
        assert out.diagnosis is not None and set(out.diagnosis.faulty_nodes) == bad
        assert out.history[0].groups[0].loopback


def test_adaptive_names_a_bad_link_by_both_ends_and_blames_no_node() -> None:
    link = frozenset({"node-0005", "node-0040"})
    out = simulate(ADAPTIVE, Scenario(NODES, links=frozenset({link}), noise=0.0), Options(), seed=5)
    assert out.diagnosis is not None and out.diagnosis.failed
    assert not out.diagnosis.faulty_nodes
    (fault,) = out.diagnosis.infrastructure_faults
    assert {fault.side_a[0], fault.side_b[0]} == link
    assert out.diagnosis.message == "Diagnosis complete: 1 infrastructure faults detected"


def test_adaptive_healthy_cluster_passes_with_every_path_screened() -> None:
    out = simulate(ADAPTIVE, Scenario(NODES, noise=0.0), Options(), seed=1)
    assert [r.stage for r in out.history] == ["local-screen", "path-screen"]
    assert out.history[1].groups[0].nodes == NODES
    assert out.diagnosis is not None and not out.diagnosis.failed


def test_adaptive_never_blames_a_node_for_one_noisy_failure() -> None:
    # One forced failure, then passes: the node is re-tested and never blamed.
    state, first = ADAPTIVE.start(NODES[:4], None, Options())
    results = [GroupResult(g.name, g.nodes, g.nodes != ("node-0001",)) for g in first.groups]
    state, step = ADAPTIVE.advance(state, results)
    assert isinstance(step, Round) and step.stage == "confirm" and step.groups[0].nodes == ("node-0001",)
    while isinstance(step, Round) and step.stage == "confirm":
        state, step = ADAPTIVE.advance(state, [GroupResult(g.name, g.nodes, True) for g in step.groups])
    while isinstance(step, Round):
        state, step = ADAPTIVE.advance(state, [GroupResult(g.name, g.nodes, True) for g in step.groups])
    assert isinstance(step, Diagnosis)
    assert not step.faulty_nodes and step.unresolved == ("node-0001",)


def test_no_healthy_node_is_blamed_under_noise() -> None:
    # (NVCRE's baseline confirms a suspect with one run beside a reference, so noise can blame a
    # healthy node; the benchmark counts how often.)
    name = "adaptive"
    blamed = 0
    for seed in range(300):
        rng = random.Random(seed)
        kind = ("none", "crash", "slow", "link")[seed % 4]
        scenario = make_scenario(32, kind, 0 if kind == "none" else 1, rng, noise=0.08)
        blamed += simulate(planner(name), scenario, Options(), seed).false_positives
    assert blamed == 0


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=40),
    kind=st.sampled_from(["none", "crash", "slow", "flaky", "link"]),
    k=st.integers(min_value=0, max_value=3),
    seed=st.integers(min_value=0, max_value=10_000),
    topo=st.sampled_from([0, 4, 7]),
    which=st.sampled_from(["baseline", "adaptive"]),
)
def test_planners_always_conclude_with_disjoint_groups(n: int, kind: str, k: int, seed: int, topo: int, which: str) -> None:
    rng = random.Random(seed)
    k = 0 if kind == "none" else min(k, n // 2 if kind == "link" else n)
    if kind == "link" and n < 2:
        k = 0
    scenario = make_scenario(n, kind, k, rng, topology_size=topo)
    out = simulate(planner(which), scenario, Options(), seed)  # raises on a node in two groups or no conclusion
    assert out.diagnosis is not None
    assert out.blamed <= set(scenario.nodes)
    for step in out.history:
        for group in step.groups:
            assert group.nodes and len(set(group.nodes)) == len(group.nodes)


def _play(state, step, measure):
    """Advance the adaptive planner until it concludes; ``measure(group) -> GroupResult``."""
    rounds = [step]
    while isinstance(step, Round):
        state, step = ADAPTIVE.advance(state, [measure(g) for g in step.groups])
        rounds.append(step)
    return rounds


def test_adaptive_judges_single_node_screens_by_their_peers_not_the_workload_threshold() -> None:
    # Every run "failed" the all-reduce's absolute threshold, at the same bandwidth: nobody is slow
    # alone, and every group misses it alike, so the diagnosis says so and blames no node.
    state, first = ADAPTIVE.start(NODES[:4], None, Options())
    rounds = _play(state, first, lambda g: GroupResult(g.name, g.nodes, False, 11.0))
    diagnosis = rounds[-1]
    assert [r.stage for r in rounds[:-1]] == ["local-screen", "path-screen"]
    assert isinstance(diagnosis, Diagnosis) and diagnosis.failed and diagnosis.threshold_unmet
    assert not diagnosis.faulty_nodes and diagnosis.healthy_nodes == NODES[:4]
    assert diagnosis.message.startswith("Diagnosis complete: no group reaches the threshold")


def test_adaptive_names_a_node_slow_against_its_peers_even_when_its_run_passed() -> None:
    # Single-node screens carry no threshold, so every run "passes"; the slow one measures a tenth.
    state, first = ADAPTIVE.start(NODES[:4], None, Options())

    def measure(g):
        return GroupResult(g.name, g.nodes, True, 1.1 if "node-0002" in g.nodes else 11.0)

    diagnosis = _play(state, first, measure)[-1]
    assert isinstance(diagnosis, Diagnosis) and set(diagnosis.faulty_nodes) == {"node-0002"}
    assert not diagnosis.threshold_unmet


def test_adaptive_searches_a_group_far_below_its_peers_but_not_one_that_only_missed_the_threshold() -> None:
    state, first = ADAPTIVE.start(NODES[:4], None, Options())
    state, step = ADAPTIVE.advance(state, [GroupResult(g.name, g.nodes, True, 11.0) for g in first.groups])
    assert isinstance(step, Round) and step.stage == "path-screen"
    _, near = ADAPTIVE.advance(state, [GroupResult(g.name, g.nodes, False, 9.0) for g in step.groups])
    assert isinstance(near, Diagnosis) and near.threshold_unmet
    _, far = ADAPTIVE.advance(state, [GroupResult(g.name, g.nodes, False, 1.0) for g in step.groups])
    assert isinstance(far, Round) and far.stage == "link-search"
