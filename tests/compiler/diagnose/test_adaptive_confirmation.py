"""How the adaptive planner confirms: a node's re-runs, and a link's pair runs.

A node that failed strongly once (a crash, or far below its peers) is re-run until it fails again
or until a node failing 30 % of its runs would have shown again with 95 % probability; re-runs are
counted from its first failure, so a prior suspect that first showed late in its exposures gets
that whole window too. A link search group of exactly two nodes that failed was a test of that
pair: it counts as the first confirmation, and the pair runs once more.
"""

from __future__ import annotations

from collections.abc import Sequence

from nvcre.compiler.diagnose import Diagnosis, GroupResult, Options, Prior, PriorGroup, Round, planner
from tests.diagnosekit import NODES, crashes_on, run_adaptive


def _solo_runs(rounds: Sequence[Round], node: str) -> int:
    return sum(1 for r in rounds for g in r.groups if g.nodes == (node,))


def test_a_prior_suspect_that_showed_late_gets_the_full_window_to_show_again() -> None:
    # The fifth exposure fails, then six passes, then a crash on the seventh re-run: a node failing
    # 30 % of its runs does that. Counting re-runs from the node's first run left it two re-runs.
    prior = Prior(tuple(PriorGroup(tuple(NODES[i : i + 4]), i != 4) for i in range(0, 16, 4)))
    rounds, diagnosis = run_adaptive(Options(prior=prior), crashes_on("n05", {5, 12}))
    assert set(diagnosis.faulty_nodes) == {"n05"}
    assert _solo_runs(rounds, "n05") == 12


def test_one_crash_then_passes_is_re_run_nine_times_and_left_unresolved() -> None:
    rounds, diagnosis = run_adaptive(Options(), crashes_on("n03", {1}))
    assert not diagnosis.faulty_nodes and diagnosis.unresolved == ("n03",)
    assert _solo_runs(rounds, "n03") == 1 + 9


def test_a_second_crash_within_the_window_blames_and_a_near_miss_keeps_the_retest_count() -> None:
    _, diagnosis = run_adaptive(Options(), crashes_on("n03", {1, 10}))
    assert set(diagnosis.faulty_nodes) == {"n03"}
    # Near misses (within 40 % of the peers) are what noise produces: two passes clear the node,
    # and the window stays `retests`, not the longer one for strong failures.
    adaptive = planner("adaptive")
    state, step = adaptive.start(NODES[:4], None, Options(retests=3))
    solo = 0
    while isinstance(step, Round):
        results = []
        for g in step.groups:
            solo += g.nodes == ("n01",)
            near = g.nodes == ("n01",) and step.stage in ("local-screen", "confirm")
            results.append(GroupResult(g.name, g.nodes, not near, 70.0 if near else 100.0))
        state, step = adaptive.advance(state, results)
    assert isinstance(step, Diagnosis) and not step.faulty_nodes and step.unresolved == ("n01",)
    assert solo == 1 + 3


def test_a_pair_that_failed_in_the_search_is_confirmed_by_one_more_pair_run() -> None:
    link = ("n00", "n01")
    rounds, diagnosis = run_adaptive(Options(), lambda nodes: not set(link) <= set(nodes), NODES[:4])
    assert [(f.side_a[0], f.side_b[0]) for f in diagnosis.infrastructure_faults] == [link]
    assert [r.stage for r in rounds[:4]] == ["local-screen", "path-screen", "link-search", "link-confirm"]
    assert [g.nodes for g in rounds[2].groups][0] == link, "the search's first half is the pair itself"
    assert sum(r.stage == "link-confirm" for r in rounds) == 1


def test_a_pair_that_failed_only_in_the_search_is_not_named() -> None:
    link = ("n00", "n01")
    searched = {"failed": False}

    def world(nodes: Sequence[str]) -> bool:
        # the pair fails in the path screen and as the search's half, then passes on its own
        if tuple(nodes) == link:
            if searched["failed"]:
                return True
            searched["failed"] = True
            return False
        return not set(link) <= set(nodes)

    rounds, diagnosis = run_adaptive(Options(), world, NODES[:4])
    assert not diagnosis.infrastructure_faults and not diagnosis.faulty_nodes
    assert sum(r.stage == "link-confirm" for r in rounds) == 1


def test_a_node_left_unresolved_is_not_also_counted_healthy_whatever_the_conclusion() -> None:
    # n03 crashes once and passes its nine re-runs (unresolved); the run then ends on a named
    # link, and, without the link, with every path passing: in both conclusions the healthy
    # nodes leave n03 out, so healthy, faulty and unresolved add up to the nodes diagnosed
    link = ("n00", "n01")
    crash = crashes_on("n03", {1})
    for world in (lambda nodes: crash(nodes) and not set(link) <= set(nodes), crashes_on("n03", {1})):
        _, diagnosis = run_adaptive(Options(), world, NODES[:6])
        assert diagnosis.unresolved == ("n03",)
        assert "n03" not in diagnosis.healthy_nodes
        assert len(diagnosis.healthy_nodes) + len(diagnosis.faulty_nodes) + len(diagnosis.unresolved) == 6
