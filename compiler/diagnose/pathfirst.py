"""A path-first diagnose planner: one group of every node first, single-node runs only where it failed.

The adaptive planner (:mod:`.adaptive`) starts by running every node alone and only then screens
the paths, so a healthy cluster costs it two rounds and 2N node-units. This planner turns the
order round:

1. ``path-screen``: every node in one group (up to the workload's largest group). On a healthy
   cluster that is the whole run: one round, N node-units.
2. ``local-screen``: only the nodes of a group that failed run alone (NIC loopback), judged
   against their peers exactly as the adaptive planner judges them; a node is blamed only after
   ``confirmations`` strong failures alone, never on a group's evidence (``confirm``).
   A group that failed without measuring anything (a crash) points at a node, so its nodes also
   get repeated single-node runs, as suspects of a prior do.
3. ``link-search`` / ``link-confirm``: a failed group whose nodes all run normally alone, and
   which measured far below them, holds a bad link. Every such group is searched in the same
   rounds; a crossing is narrowed on both sides in every round (:mod:`.pathfirst_search`); the
   nodes a search round leaves idle run beside it as one more path group (``path-rest-<i>``), so
   a second link among them joins the search at once instead of waiting for the re-check; the
   pair confirmation and the re-check after named links are the adaptive planner's.

With a :class:`~.model.Prior`, the nodes of its failed groups run alone in the first round, beside
one path group of all the other nodes, and keep running alone until each has had
``prior.exposures`` single-node runs; these runs share rounds with any link search. Once a node
is confirmed the run ends (the failure that led to the diagnose is explained; links are searched
after repair). When the suspects show nothing, their paths are screened with everyone's.

The evidence rules (peer reference, near miss, confirmation window), the planning of each search
round, the pair confirmation and the re-check are the adaptive planner's, used through its
functions; this module decides what runs when, and :mod:`.pathfirst_search` how a search moves on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from . import adaptive, pathfirst_search
from .model import Diagnosis, GroupResult, InfrastructureFault, Options, Planner, Round, RoundGroup

__all__ = ["NAME", "PLANNER", "advance", "start"]

NAME = "pathfirst"

#: single-node runs each node of a path group that crashed gets (a prior's default)
CRASH_EXPOSURES = 6

#: (group name, nodes) of one group of the round in flight
_Group = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class _State:
    #: node evidence (single-node records, the peer reference, blame): the adaptive planner's record
    evidence: adaptive.AdaptiveState
    #: the link search in progress or finished (the adaptive planner's machinery), if any
    links: adaptive.AdaptiveState | None = None
    #: the link search's round in flight, or its conclusion once it has one
    link_step: Round | Diagnosis | None = None
    #: open crossing searches that share one link (see :mod:`.pathfirst_search`)
    unions: pathfirst_search.Unions = field(default_factory=dict)
    #: the single-node groups, the path-screen groups and the rest groups of the round in flight
    local: tuple[_Group, ...] = ()
    paths: tuple[_Group, ...] = ()
    rest: tuple[_Group, ...] = ()
    #: node sets a rest group ran without failing: they hold no bad link
    clean: tuple[frozenset[str], ...] = ()
    #: rest groups that failed far below their peers, waiting to join the link search
    deferred: tuple[tuple[str, ...], ...] = ()
    #: failed path groups waiting for their nodes' single-node verdicts: (nodes, bus bandwidth)
    failed_paths: tuple[tuple[tuple[str, ...], float | None], ...] = ()
    #: every group of the last path screen failed (the ending "no group reaches the threshold")
    all_failed: bool = False
    #: nodes owed repeated single-node runs, and how many each should have
    suspects: tuple[str, ...] = ()
    exposures: int = 0
    #: every pair of nodes has shared a group (False while a prior's suspects are screened alone)
    covered: bool = True
    #: path screens run so far, and how many the run may spend
    screens: int = 0
    max_screens: int = 1


def _chunks(nodes: Sequence[str], options: Options, prefix: str) -> list[RoundGroup]:
    size = max(options.max_group_size, 2)
    return [RoundGroup(f"{prefix}-{i}", tuple(sorted(nodes[s : s + size]))) for i, s in enumerate(range(0, len(nodes), size))]


def start(nodes: Sequence[str], topology: Mapping[str, str] | None, options: Options) -> tuple[_State, Round]:
    """One path screen of every node; with a prior, its suspects alone beside the others' path group."""
    ordered = tuple(sorted(set(nodes)))
    order = adaptive.topology_order(ordered, topology)
    # The adaptive record is used for its evidence and its search only: its prior path screen never
    # runs here (path_phase 2), nor do its screening cycles (see _start_search).
    evidence = adaptive.AdaptiveState(ordered, order, options, path_phase=2)
    suspects = options.prior.suspects(ordered) if options.prior else ()
    state = _State(
        evidence,
        suspects=suspects,
        exposures=options.prior.exposures if options.prior else 0,
        covered=not suspects,
        max_screens=max(options.screen_cycles, 1) + (1 if suspects else 0),
    )
    others = [n for n in order if n not in set(suspects)]
    if len(others) < 2:  # nobody to share a path with: every node alone
        alone = tuple(ordered)
        return _round(replace(state, covered=True, suspects=tuple(ordered), exposures=max(state.exposures, 1)), alone, [])
    return _round(state, suspects, _chunks(others, options, "path"))


def _round(
    state: _State, alone: Sequence[str], paths: Sequence[RoundGroup], link_round: Round | None = None, rest: Sequence[RoundGroup] = ()
) -> tuple[_State, Round]:
    """A round of ``link_round``'s groups, the rest groups beside them, the path groups and single-node runs of ``alone``."""
    index = {n: i for i, n in enumerate(state.evidence.nodes)}
    tests = state.evidence.tests
    local = [RoundGroup(f"{'confirm' if tests.get(n) else 'local'}-{index[n]}", (n,), loopback=True) for n in alone]
    groups = [*(link_round.groups if link_round else ()), *rest, *paths, *local]
    if paths:
        state = replace(state, screens=state.screens + 1)
        stage, message = "path-screen", f"Screening the paths between {sum(len(g.nodes) for g in paths)} nodes in {len(paths)} group(s)"
    elif link_round is not None:
        stage, message = link_round.stage, link_round.message
    else:
        stage = "local-screen" if any(not tests.get(n) for n in alone) else "confirm"
        message = f"Running {len(local)} node(s) alone"
    if rest:
        message += f"; the paths of {sum(len(g.nodes) for g in rest)} idle node(s) beside it"
    if link_round is not None and local:
        message += f"; {len(local)} node(s) alone beside it"
    elif paths and local:
        message += f", {len(local)} suspect node(s) alone beside them"
    state = replace(
        state,
        local=tuple((g.name, g.nodes) for g in local),
        paths=tuple((g.name, g.nodes) for g in paths),
        rest=tuple((g.name, g.nodes) for g in rest),
    )
    return state, Round(stage, tuple(groups), message)


def _rest_groups(state: _State, link_round: Round, alone: Sequence[str]) -> list[RoundGroup]:
    """The nodes a link-search round leaves idle, as path groups: a second link among them shows now.

    Only nodes that ran alone without failing take part, never a node of an open search nor an end
    of a suspected or named link (the group would fail on it again), and a set already seen
    passing is not run again.
    """
    links = state.links
    if links is None or link_round.stage != "link-search":
        return []
    evidence = state.evidence
    taken = {n for g in link_round.groups for n in g.nodes} | set(alone)
    taken |= {n for pair in (*links.candidates, *links.links) for n in pair}
    taken |= {n for search in links.searches for n in (*search.inside, *search.side_a, *search.side_b)}
    idle = [n for n in evidence.order if n not in taken and evidence.tests.get(n) and not evidence.fails.get(n)]
    if len(idle) < 2 or any(set(idle) <= seen for seen in state.clean):
        return []
    return _chunks(idle, evidence.options, "path-rest")


def _fold_local(state: _State, results: Sequence[GroupResult], outcome: Mapping[str, bool]) -> _State:
    """Single-node runs into the node evidence (the first of them set the peer reference)."""
    if not state.local:
        return state
    names = {name for name, _ in state.local}
    evidence = replace(state.evidence, stage="local-screen" if state.evidence.reference_bw is None else "confirm", pending=state.local)
    evidence = adaptive.record_local(evidence, outcome, [r for r in results if r.name in names])
    trial, blamed, unresolved = adaptive.to_confirm(evidence)
    evidence = replace(
        evidence,
        blamed=tuple(sorted({*evidence.blamed, *blamed})),
        unresolved=tuple(sorted({*evidence.unresolved, *unresolved})),
    )
    return replace(state, evidence=evidence, local=())


def _fold_paths(state: _State, results: Sequence[GroupResult], outcome: Mapping[str, bool]) -> _State:
    """Path-screen groups: a failed one waits for its nodes' single-node runs; a crash makes them suspects."""
    if not state.paths:
        return state
    by_name = {r.name: r for r in results}
    failed = list(state.failed_paths)
    suspects = list(state.suspects)
    for name, nodes in state.paths:
        if outcome[name]:
            continue
        got = by_name.get(name)
        bw = got.bus_bw if got is not None and got.evaluable else None
        failed.append((nodes, bw))
        if bw is None:
            suspects.extend(n for n in nodes if n not in suspects)
    every = all(not outcome[name] for name, _ in state.paths)
    return replace(
        state,
        paths=(),
        failed_paths=tuple(failed),
        all_failed=every,
        suspects=tuple(suspects),
        exposures=max(state.exposures, CRASH_EXPOSURES) if len(suspects) > len(state.suspects) else state.exposures,
    )


def _fold_links(state: _State, results: Sequence[GroupResult], outcome: Mapping[str, bool]) -> _State:
    """The link search's own groups go to its machinery; a rest group far below its peers joins the search."""
    if state.links is None or not isinstance(state.link_step, Round):
        return state
    by_name = {r.name: r for r in results}
    clean, deferred = list(state.clean), list(state.deferred)
    for name, nodes in state.rest:
        if outcome[name]:
            clean.append(frozenset(nodes))
        elif not adaptive.measured_like_peers(state.evidence, by_name.get(name)):
            deferred.append(nodes)
    names = {g.name for g in state.link_step.groups}
    mine = [r for r in results if r.name in names]
    unions: pathfirst_search.Unions = {}
    if state.links.stage == "link-search":
        judged = adaptive.path_faults(state.links, mine, outcome)
        links, unions = pathfirst_search.next_searches(state.links, state.unions, judged)
        fresh = tuple(adaptive.LinkSearch(inside=nodes) for nodes in deferred)
        links, step = adaptive.search_round(replace(links, searches=(*links.searches, *fresh)))
        deferred = []
    else:
        links, step = adaptive.advance(state.links, mine)
    if deferred and (isinstance(step, Diagnosis) or step.stage == "link-search"):
        # re-plan the search's next round with the new sets in it (the same groups for the open ones)
        fresh = tuple(adaptive.LinkSearch(inside=nodes) for nodes in deferred)
        links = replace(links, searches=(*links.searches, *fresh), pending=(), roles={}, stage="link-search")
        links, step = adaptive.search_round(links)
        deferred = []
    elif isinstance(step, Round) and step.stage == "path-screen":
        deferred = []  # the re-check screens every path but those of named links' ends: it holds them
    return replace(state, links=links, link_step=step, unions=unions, rest=(), clean=tuple(clean), deferred=tuple(deferred))


def advance(state: _State, results: Sequence[GroupResult]) -> tuple[_State, Round | Diagnosis]:
    """Fold a round's results into the evidence and plan the next round, or conclude."""
    outcome = {r.name: r.passed and r.evaluable for r in results}
    for name, _ in (*state.local, *state.paths, *state.rest):
        outcome.setdefault(name, False)
    state = _fold_links(state, results, outcome)
    state = _fold_local(state, results, outcome)
    state = _fold_paths(state, results, outcome)
    return _plan(state)


def _owed(state: _State) -> tuple[list[str], list[str], bool]:
    """(nodes that must run alone now, suspects still owed exposures, whether a node is on trial)."""
    evidence = state.evidence
    trial, _, _ = adaptive.to_confirm(evidence)
    unscreened = {n for nodes, _ in state.failed_paths for n in nodes if not evidence.tests.get(n)}
    now = [n for n in evidence.nodes if n in unscreened or n in set(trial)]
    settled = {*evidence.blamed, *evidence.unresolved}
    owed = [
        n
        for n in state.suspects
        if n not in settled and not evidence.fails.get(n) and evidence.tests.get(n, 0) < state.exposures and n not in unscreened
    ]
    return now, owed, bool(trial)


def _plan(state: _State) -> tuple[_State, Round | Diagnosis]:
    """What runs next: the link search's round with single-node runs beside it, or the next stage."""
    while True:
        now, owed, on_trial = _owed(state)
        if state.evidence.blamed and not now:
            return state, _blame(state)
        if state.failed_paths and not {n for nodes, _ in state.failed_paths for n in nodes} & {*now, *owed}:
            started = _start_search(state)
            if isinstance(started, tuple):
                return started
            state = started
            continue
        # exposures wait while a node is on trial: once it is confirmed it explains the failure
        wanted = {*now, *([] if on_trial else owed)}
        alone = [n for n in state.evidence.nodes if n in wanted]
        link_round = state.link_step if isinstance(state.link_step, Round) else None
        busy = {n for g in link_round.groups for n in g.nodes} if link_round else set()
        alone = [n for n in alone if n not in busy]
        if link_round is not None:
            return _round(state, alone, [], link_round, _rest_groups(state, link_round, alone))
        if alone:
            return _round(state, alone, [])
        step = _next_stage(state)
        if step is None:
            return state, _conclusion(state)
        return step


def _next_stage(state: _State) -> tuple[_State, Round] | None:
    """Nothing is owed a run and no search is open: screen the paths (again), or conclude (None)."""
    if isinstance(state.link_step, Diagnosis) and state.links is not None and state.links.links:
        return None  # the search's re-check rounds screened every path without the named links
    order = state.evidence.order
    if len(order) >= 2 and (not state.covered or (state.screens < state.max_screens and not _found(state))):
        state = replace(state, covered=True, link_step=None, links=None)
        return _round(state, [], _chunks(order, state.evidence.options, "path"))
    return None


def _found(state: _State) -> bool:
    return bool(state.evidence.blamed or state.evidence.unresolved or (state.links is not None and state.links.links))


def _start_search(state: _State) -> _State | tuple[_State, Diagnosis]:
    """Failed path groups whose nodes all ran alone: like their peers they passed; otherwise search them."""
    evidence = state.evidence
    pending = [(nodes, bw) for nodes, bw in state.failed_paths]
    like_peers = [adaptive.measured_like_peers(evidence, GroupResult("path", nodes, False, bw)) for nodes, bw in pending]
    if state.all_failed and pending and all(like_peers):
        state = replace(state, failed_paths=())
        return state, adaptive.threshold_unmet_diagnosis(evidence)[1]
    searches = tuple(adaptive.LinkSearch(inside=nodes) for (nodes, _), ok in zip(pending, like_peers) if not ok)
    state = replace(state, failed_paths=(), all_failed=False)
    if not searches:
        return state
    # the search ends in the adaptive planner's clean bill: its screening cycles are spent already
    links = replace(evidence, searches=searches, pending=(), roles={}, stage="link-search", cycle=max(evidence.options.screen_cycles, 1))
    links, step = adaptive.search_round(links)
    return replace(state, links=links, link_step=step)


def _named(state: _State) -> tuple[InfrastructureFault, ...]:
    if state.links is None:
        return ()
    return tuple(
        InfrastructureFault((a,), (b,), "link-confirm", f"the path between {a} and {b} fails only when both run together")
        for a, b in state.links.links
    )


def _blame(state: _State) -> Diagnosis:
    evidence = state.evidence
    message = f"Diagnosis complete: {len(evidence.blamed)} faulty nodes confirmed"
    reasons = {n: f"{message}; failed {evidence.fails[n]} of {evidence.tests[n]} single-node runs" for n in evidence.blamed}
    return Diagnosis(
        True,
        message + "; path search stopped until they are repaired",
        faulty_nodes=reasons,
        infrastructure_faults=_named(state),
        healthy_nodes=adaptive.healthy_nodes(evidence),
        unresolved=evidence.unresolved,
    )


def _conclusion(state: _State) -> Diagnosis:
    evidence = state.evidence
    faults = _named(state)
    healthy = adaptive.healthy_nodes(evidence)
    if faults:
        message = f"Diagnosis complete: {len(faults)} infrastructure faults detected"
        return Diagnosis(True, message, infrastructure_faults=faults, healthy_nodes=healthy, unresolved=evidence.unresolved)
    message = "All nodes and paths passed, no faults detected"
    return Diagnosis(False, message, healthy_nodes=healthy, unresolved=evidence.unresolved)


PLANNER = Planner(NAME, start, advance)
