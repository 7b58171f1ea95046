"""Shared test kit for the diagnose planners: a simulated world a planner is run against, round by
round, until it concludes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nvcre.compiler.diagnose import Diagnosis, GroupResult, Options, Round, planner

NODES = tuple(f"n{i:02d}" for i in range(16))
#: whether a group of these nodes passes its run
World = Callable[[Sequence[str]], bool]


def run_adaptive(options: Options, world: World, nodes: Sequence[str] = NODES) -> tuple[list[Round], Diagnosis]:
    """Every round the adaptive planner asks for, judged by ``world``, and its conclusion."""
    adaptive = planner("adaptive")
    state, step = adaptive.start(nodes, None, options)
    rounds: list[Round] = []
    while isinstance(step, Round):
        assert len(rounds) < 120, "the diagnose did not conclude"
        rounds.append(step)
        results = []
        for group in step.groups:
            passed = world(group.nodes)
            results.append(GroupResult(group.name, group.nodes, passed, 100.0 if passed else None))
        state, step = adaptive.advance(state, results)
    return rounds, step


def crashes_on(node: str, failing_runs: set[int]) -> World:
    """``node`` crashes on these of its runs (1-based; every group it is in counts) and passes the others."""
    runs = {"count": 0}

    def world(nodes: Sequence[str]) -> bool:
        if node not in nodes:
            return True
        runs["count"] += 1
        return runs["count"] not in failing_runs

    return world
