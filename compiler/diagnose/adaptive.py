"""Our diagnose planner: attributable evidence first, confirmation before blame, then the paths.

1. ``local-screen``: every node runs alone, with SHM and P2P off so NCCL's traffic crosses the
   node's own NICs (the loopback the catalog's ``nccl-loopback`` uses). A failure there belongs to
   that node and nobody else, so one round of N node-units isolates every node-local fault — where
   group screening needs several rounds of bisection.
2. ``confirm``: a node that failed is run alone again. It is blamed only after ``confirmations``
   strong failures; a node that fails once and then passes is re-tested (an intermittent fault
   shows again; measurement noise does not) and is otherwise reported unresolved, never blamed.
   The re-runs are counted from the node's first failure: ``retests`` of them after a near miss,
   at least ``_SHOW_AGAIN`` after a strong failure (enough for a node failing ``FLAKY_P`` of its
   runs to show again with 95 % probability).
3. ``path-screen``: when no node is at fault, all nodes run together (up to the workload's largest
   group), so every pair of nodes shares a group once: a bad link between two nodes — invisible to
   any test that holds only one of its ends — now fails the round.
4. ``link-search``: the failing set is halved; a half that fails holds the link; when both halves
   pass the link crosses them and mixed groups (A1+B1, A2+B2, then A1+B2, A2+B1) narrow both sides
   at once, until each side is one node.
5. ``link-confirm``: the two ends run as a pair until ``confirmations`` failures of that pair
   name the link as an infrastructure fault with both ends; a search group of exactly those two
   nodes that failed counts as one. A candidate that passes is dropped.

When node faults are confirmed the path screen is skipped (repair the nodes first; a link search
over a broken node would chase it); the diagnosis says so. ``screen_cycles`` > 1 repeats steps 1
and 3 while nothing is found, for intermittent faults.

With a :class:`~.model.Prior` (the failed run that led to the diagnose), the nodes of its failed
groups are suspects: each runs alone until it has had ``prior.exposures`` single-node runs, so a
flaky node gets several chances to show; and the path screen starts from the failed groups
themselves, each searched on its own, so links in different groups are separated from the start.
Only when those groups pass does the full path screen run.

What a threshold means here. The category's threshold is written for its workload, a group of
nodes, so it judges only the multi-node rounds. A single-node screen is judged against its peers:
a run that measured a bandwidth fails below ``PEER_PASS`` of the median of its screen, and counts
towards blame below ``_NEAR_MISS`` of it; a run with no bandwidth (a crash) fails outright. In the
multi-node rounds a group that missed the threshold while it measured like the nodes' own screens
(at least ``_NEAR_MISS`` of their median) holds no path fault: it counts as a pass. When every group of a path screen
misses the threshold that way, nothing is searched and no node is blamed: the diagnosis says that
no group reaches the threshold although every node measures like its peers (the threshold is
beyond this fabric, or the fabric is slow everywhere).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from .model import Diagnosis, GroupResult, InfrastructureFault, Options, Planner, Round, RoundGroup

#: the planner, and the building blocks the path-first planner (:mod:`.pathfirst`) shares
__all__ = [
    "PLANNER",
    "AdaptiveState",
    "LinkSearch",
    "advance",
    "link_key",
    "measured_like_peers",
    "path_faults",
    "record_local",
    "search_round",
    "split_in_halves",
    "start",
    "threshold_unmet_diagnosis",
    "to_confirm",
    "topology_order",
]


@dataclass(frozen=True)
class LinkSearch:
    """One open question of the link search: a set holding a link, or two sides a link crosses."""

    inside: tuple[str, ...] = ()
    side_a: tuple[str, ...] = ()
    side_b: tuple[str, ...] = ()
    #: for a crossing: 0 = try A1+B1 / A2+B2 next, 1 = try A1+B2 / A2+B1 next
    phase: int = 0


@dataclass(frozen=True)
class AdaptiveState:
    nodes: tuple[str, ...]
    order: tuple[str, ...]
    options: Options
    stage: str = "local-screen"
    cycle: int = 1
    fails: Mapping[str, int] = field(default_factory=dict)
    #: failures far below the cluster's bandwidth (or crashes): unlike a near-miss, noise does not make these
    strong: Mapping[str, int] = field(default_factory=dict)
    tests: Mapping[str, int] = field(default_factory=dict)
    #: node -> its single-node run count when it first failed: re-runs are counted from there
    first_fail: Mapping[str, int] = field(default_factory=dict)
    #: the median bus bandwidth of passing single-node runs: what "normal" measures here
    reference_bw: float | None = None
    blamed: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    searches: tuple[LinkSearch, ...] = ()
    candidates: tuple[tuple[str, str], ...] = ()
    link_fails: Mapping[tuple[str, str], int] = field(default_factory=dict)
    links: tuple[tuple[str, str], ...] = ()
    #: group name -> nodes, for the round in flight
    pending: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: for link-search rounds: group name -> (search index, role)
    roles: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    #: 0: no path screened yet; 1: the prior's failed groups screened; 2: the full path screen run
    path_phase: int = 0
    #: the links the last re-check screens were planned for, and how many re-check rounds have run
    recheck_links: tuple[tuple[str, str], ...] = ()
    recheck: int = 0
    rechecks_run: int = 0


def link_key(a: str, b: str) -> tuple[str, str]:
    """A link's key, whichever end comes first."""
    return (a, b) if a <= b else (b, a)


def split_in_halves(nodes: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    half = len(nodes) // 2
    return tuple(nodes[:half]), tuple(nodes[half:])


def topology_order(nodes: tuple[str, ...], topology: Mapping[str, str] | None) -> tuple[str, ...]:
    if not topology:
        return nodes
    return tuple(sorted(nodes, key=lambda n: (topology.get(n) or "~", n)))


def _emit(
    state: AdaptiveState, stage: str, groups: Sequence[RoundGroup], message: str, roles: Mapping[str, tuple[int, str]] | None = None
) -> tuple[AdaptiveState, Round]:
    pending = tuple((g.name, g.nodes) for g in groups)
    return replace(state, stage=stage, pending=pending, roles=dict(roles or {})), Round(stage, tuple(groups), message)


def _local_round(state: AdaptiveState, nodes: Sequence[str], stage: str, message: str) -> tuple[AdaptiveState, Round]:
    index = {n: i for i, n in enumerate(state.nodes)}
    prefix = "local" if stage == "local-screen" else "confirm"
    groups = [RoundGroup(f"{prefix}-{index[n]}", (n,), loopback=True) for n in nodes]
    return _emit(state, stage, groups, message)


def start(nodes: Sequence[str], topology: Mapping[str, str] | None, options: Options) -> tuple[AdaptiveState, Round]:
    """Every node alone, at once."""
    ordered = tuple(sorted(set(nodes)))
    state = AdaptiveState(ordered, topology_order(ordered, topology), options)
    return _local_round(state, ordered, "local-screen", f"Screening {len(ordered)} nodes one by one (NIC loopback)")


#: a failed run measuring at least this share of the reference bandwidth is a near miss
_NEAR_MISS = 0.6
#: a single-node run passes at this share of its screen's median bandwidth
PEER_PASS = 0.8


def _passed(results: Sequence[GroupResult]) -> dict[str, bool]:
    return {r.name: r.passed and r.evaluable for r in results}


def measured_like_peers(state: AdaptiveState, result: GroupResult | None) -> bool:
    """A multi-node group that measured at least a near miss of the nodes' own screens."""
    reference = state.reference_bw
    return bool(result and result.evaluable and result.bus_bw is not None and reference and result.bus_bw >= _NEAR_MISS * reference)


def path_faults(state: AdaptiveState, results: Sequence[GroupResult], outcome: Mapping[str, bool]) -> dict[str, bool]:
    """A multi-node round's outcome with threshold misses that measured like the peers counted as
    passes: they hold no path fault."""
    by_name = {r.name: r for r in results}
    out = dict(outcome)
    for name, _ in state.pending:
        if not outcome.get(name, False) and measured_like_peers(state, by_name.get(name)):
            out[name] = True
    return out


def _local_outcome(
    state: AdaptiveState, results: Sequence[GroupResult], outcome: Mapping[str, bool]
) -> tuple[dict[str, bool], float | None]:
    """A single-node round judged against its peers: (name -> passed, the reference bandwidth).

    The first local screen sets the reference, the median of every bandwidth it measured; a run
    with a bandwidth passes at ``PEER_PASS`` of it (its own verdict, the category's threshold
    meant for the whole workload, does not count); a run without one keeps its verdict.
    """
    reference = state.reference_bw
    if state.stage == "local-screen" and state.cycle == 1 and reference is None:
        reference = _median([r.bus_bw for r in results if r.evaluable and r.bus_bw is not None])
    out = dict(outcome)
    for r in results:
        if r.evaluable and r.bus_bw is not None and reference:
            out[r.name] = r.bus_bw >= PEER_PASS * reference
    return out, reference


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def record_local(state: AdaptiveState, outcome: Mapping[str, bool], results: Sequence[GroupResult]) -> AdaptiveState:
    fails, strong, tests, first_fail = dict(state.fails), dict(state.strong), dict(state.tests), dict(state.first_fail)
    bandwidth = {r.name: r.bus_bw for r in results}
    outcome, reference = _local_outcome(state, results, outcome)
    for name, (node,) in state.pending:
        tests[node] = tests.get(node, 0) + 1
        if not outcome.get(name, False):
            fails[node] = fails.get(node, 0) + 1
            first_fail.setdefault(node, tests[node])
            bw = bandwidth.get(name)
            if bw is None or reference is None or bw < _NEAR_MISS * reference:
                strong[node] = strong.get(node, 0) + 1
    return replace(state, fails=fails, strong=strong, tests=tests, first_fail=first_fail, reference_bw=reference, pending=())


#: the intermittent fault the confirmation window is sized for: a node failing this share of its runs
FLAKY_P = 0.3
#: re-runs after a strong failure before a node is left unresolved: 1 - (1 - FLAKY_P) ** 9 = 96 %
_SHOW_AGAIN = 9


def to_confirm(state: AdaptiveState) -> tuple[list[str], list[str], list[str]]:
    """(still on trial, newly blamed, unresolved) among nodes that ever failed alone."""
    trial, blamed, unresolved = [], [], []
    for node in state.nodes:
        failures = state.fails.get(node, 0)
        if not failures or node in state.blamed or node in state.unresolved:
            continue
        # Failures far below normal bandwidth (or crashes) are what faults produce: `confirmations`
        # of them blame. Near misses (a failed run within 40 % of normal) are what measurement noise
        # produces: they never blame on their own — the node is re-run, two passes clear it, and a
        # node still undecided after `retests` re-runs is reported as unresolved with its record.
        # The re-runs are counted from the node's first failure, not from its first run: a prior
        # suspect that showed on its fifth exposure gets the same chance to show again as one that
        # showed on its first. After a strong failure the node is re-run until it fails again or
        # until a node failing FLAKY_P of its runs would have shown again with 95 % probability.
        strong = state.strong.get(node, 0)
        tests = state.tests.get(node, 0)
        reruns = tests - state.first_fail.get(node, 1)
        window = max(state.options.retests, _SHOW_AGAIN if strong else 0, 1)
        conf = state.options.confirmations
        if strong >= conf:
            blamed.append(node)
        elif (strong == 0 and tests - failures >= 2) or reruns >= window:
            unresolved.append(node)
        else:
            trial.append(node)
    return trial, blamed, unresolved


def _underexposed(state: AdaptiveState) -> list[str]:
    """Prior suspects, never failed alone, with fewer single-node runs than the prior asks for."""
    prior = state.options.prior
    if prior is None:
        return []
    return [n for n in prior.suspects(state.nodes) if not state.fails.get(n, 0) and state.tests.get(n, 0) < prior.exposures]


def _prior_path_screen(state: AdaptiveState) -> tuple[AdaptiveState, Round] | None:
    """The prior's failed multi-node groups, restricted to this run's nodes, as the first path screen."""
    prior = state.options.prior
    if prior is None or state.path_phase:
        return None
    members, used = set(state.nodes), set[str]()
    groups: list[RoundGroup] = []
    for group in prior.groups:
        nodes = tuple(sorted({n for n in group.nodes if n in members} - used))
        if group.passed or len(nodes) < 2:
            continue
        used.update(nodes)
        groups.append(RoundGroup(f"prior-{len(groups)}", nodes))
    if not groups:
        return None
    message = f"Screening the paths of the failed run's {len(groups)} failed group(s)"
    return _emit(replace(state, path_phase=1), "path-screen", groups, message)


def healthy_nodes(state: AdaptiveState) -> tuple[str, ...]:
    """The nodes a diagnosis calls healthy: neither blamed nor left unresolved (a node is one of
    the three, so the counts the report gives add up to the nodes diagnosed)."""
    return tuple(n for n in state.nodes if n not in state.blamed and n not in state.unresolved)


def _finish_nodes(state: AdaptiveState) -> tuple[AdaptiveState, Round | Diagnosis]:
    """After local evidence is settled: blame, or go on to the paths, or screen again."""
    if state.blamed:
        message = f"Diagnosis complete: {len(state.blamed)} faulty nodes confirmed"
        reasons = {n: f"{message}; failed {state.fails[n]} of {state.tests[n]} single-node runs" for n in state.blamed}
        return state, Diagnosis(
            True,
            message + "; path screen skipped until they are repaired",
            faulty_nodes=reasons,
            healthy_nodes=healthy_nodes(state),
            unresolved=state.unresolved,
        )
    return _prior_path_screen(state) or _path_screen(state)


def _path_screen(state: AdaptiveState) -> tuple[AdaptiveState, Round]:
    size = max(state.options.max_group_size, 2)
    order = state.order
    groups = [RoundGroup(f"path-{i}", tuple(sorted(order[s : s + size]))) for i, s in enumerate(range(0, len(order), size))]
    state = replace(state, path_phase=2)
    return _emit(state, "path-screen", groups, f"Screening the paths between {len(order)} nodes in {len(groups)} group(s)")


def _clean_bill(state: AdaptiveState) -> tuple[AdaptiveState, Round | Diagnosis]:
    if state.path_phase == 1 and not state.links:
        return _path_screen(state)  # the failed run's groups hold no link: screen every path
    if state.cycle < state.options.screen_cycles:
        state = replace(state, cycle=state.cycle + 1)
        return _local_round(state, state.nodes, "local-screen", f"Screening cycle {state.cycle}")
    if state.links:
        return _after_links(state)
    return state, Diagnosis(
        False, "All nodes and paths passed, no faults detected", healthy_nodes=healthy_nodes(state), unresolved=state.unresolved
    )


def threshold_unmet_diagnosis(state: AdaptiveState) -> tuple[AdaptiveState, Diagnosis]:
    reference = f"{state.reference_bw:.1f} GB/s" if state.reference_bw else "their peers"
    message = (
        f"Diagnosis complete: no group reaches the threshold although every node measures like its peers "
        f"(median {reference} alone): the threshold is beyond this fabric, or the fabric is slow everywhere; "
        "no node is blamed"
    )
    return state, Diagnosis(True, message, healthy_nodes=healthy_nodes(state), unresolved=state.unresolved, threshold_unmet=True)


#: re-check rounds a run may spend looking for further links once some are named
_MAX_RECHECKS = 8


def _after_links(state: AdaptiveState) -> tuple[AdaptiveState, Round | Diagnosis]:
    """Once links are named, screen the paths again with one end of every named link left out.

    A search that found one link stops at it; another link whose ends the search split is never
    searched again. Two re-check rounds (all nodes but the first ends, then all but the second
    ends) hold no named link, so a failure there is a further link, searched as before.
    """
    if state.recheck_links != state.links:
        state = replace(state, recheck_links=state.links, recheck=0)
    while state.recheck < 2 and state.rechecks_run < _MAX_RECHECKS:
        side = state.recheck
        left_out = {link[1 - side] for link in state.links}
        nodes = tuple(n for n in state.order if n not in left_out)
        state = replace(state, recheck=side + 1)
        if len(nodes) < 2:
            continue
        size = max(state.options.max_group_size, 2)
        groups = [RoundGroup(f"recheck-{i}", tuple(sorted(nodes[s : s + size]))) for i, s in enumerate(range(0, len(nodes), size))]
        state = replace(state, rechecks_run=state.rechecks_run + 1)
        message = f"Re-screening the paths of {len(nodes)} nodes without one end of each of {len(state.links)} named link(s)"
        return _emit(state, "path-screen", groups, message)
    return _links_found(state)


def _links_found(state: AdaptiveState) -> tuple[AdaptiveState, Diagnosis]:
    faults = tuple(
        InfrastructureFault((a,), (b,), "link-confirm", f"the path between {a} and {b} fails only when both run together")
        for a, b in state.links
    )
    return state, Diagnosis(
        True,
        f"Diagnosis complete: {len(faults)} infrastructure faults detected",
        infrastructure_faults=faults,
        healthy_nodes=healthy_nodes(state),
        unresolved=state.unresolved,
    )


def search_round(state: AdaptiveState) -> tuple[AdaptiveState, Round | Diagnosis]:
    """Plan one round over every open search; settled searches become link candidates."""
    groups: list[RoundGroup] = []
    roles: dict[str, tuple[int, str]] = {}
    candidates = list(state.candidates)
    searches: list[LinkSearch] = []
    for search in state.searches:
        if search.inside and len(search.inside) == 2:
            candidates.append((search.inside[0], search.inside[1]))
            continue
        if not search.inside and len(search.side_a) == 1 and len(search.side_b) == 1:
            candidates.append((search.side_a[0], search.side_b[0]))
            continue
        searches.append(search)
    for i, search in enumerate(searches):
        if search.inside:
            a, b = split_in_halves(search.inside)
            for role, members in (("a", a), ("b", b)):
                if len(members) >= 2:
                    name = f"link-{len(groups)}"
                    groups.append(RoundGroup(name, tuple(sorted(members))))
                    roles[name] = (i, role)
            continue
        a1, a2 = split_in_halves(search.side_a) if len(search.side_a) > 1 else (search.side_a, ())
        b1, b2 = split_in_halves(search.side_b) if len(search.side_b) > 1 else (search.side_b, ())
        pairs = (("x11", a1, b1), ("x22", a2, b2)) if search.phase == 0 else (("x12", a1, b2), ("x21", a2, b1))
        for role, left, right in pairs:
            if left and right:
                name = f"link-{len(groups)}"
                groups.append(RoundGroup(name, tuple(sorted((*left, *right)))))
                roles[name] = (i, role)
    state = replace(state, searches=tuple(searches), candidates=tuple(dict.fromkeys(candidates)))
    if groups:
        return _emit(state, "link-search", groups, f"Narrowing {len(searches)} failing path set(s)", roles)
    return _confirm_links(state)


def _confirm_links(state: AdaptiveState) -> tuple[AdaptiveState, Round | Diagnosis]:
    groups: list[RoundGroup] = []
    busy: set[str] = set()
    for a, b in state.candidates:
        if a in busy or b in busy:
            continue
        busy.update((a, b))
        groups.append(RoundGroup(f"pair-{len(groups)}", (a, b)))
    if not groups:
        return _clean_bill(state)
    return _emit(state, "link-confirm", groups, f"Confirming {len(groups)} suspected link(s)")


def _advance_search(state: AdaptiveState, outcome: Mapping[str, bool]) -> tuple[AdaptiveState, Round | Diagnosis]:
    failed_roles: dict[int, set[str]] = {}
    for name, (index, role) in state.roles.items():
        if not outcome.get(name, False):
            failed_roles.setdefault(index, set()).add(role)
    nxt: list[LinkSearch] = []
    for i, search in enumerate(state.searches):
        failed = failed_roles.get(i, set())
        if search.inside:
            a, b = split_in_halves(search.inside)
            if "a" in failed:
                nxt.append(LinkSearch(inside=a))
            if "b" in failed:
                nxt.append(LinkSearch(inside=b))
            if not failed:
                nxt.append(LinkSearch(side_a=a, side_b=b))
            continue
        a1, a2 = split_in_halves(search.side_a) if len(search.side_a) > 1 else (search.side_a, ())
        b1, b2 = split_in_halves(search.side_b) if len(search.side_b) > 1 else (search.side_b, ())
        parts = {"x11": (a1, b1), "x22": (a2, b2), "x12": (a1, b2), "x21": (a2, b1)}
        if failed:
            nxt.extend(LinkSearch(side_a=parts[r][0], side_b=parts[r][1]) for r in sorted(failed))
        elif search.phase == 0:
            nxt.append(replace(search, phase=1))
        # phase 1 with nothing failing: the fault did not show again; drop this search
    # A failing group of exactly two nodes was a test of that pair: it counts as the first of the
    # link's confirmations, so link-confirm runs the pair once more instead of twice.
    link_fails = dict(state.link_fails)
    for name, nodes in state.pending:
        if len(nodes) == 2 and name in state.roles and not outcome.get(name, False):
            key = link_key(nodes[0], nodes[1])
            link_fails[key] = link_fails.get(key, 0) + 1
    state = replace(state, searches=tuple(nxt), link_fails=link_fails, pending=(), roles={})
    return search_round(state)


def advance(state: AdaptiveState, results: Sequence[GroupResult]) -> tuple[AdaptiveState, Round | Diagnosis]:
    """Fold a round's results into the evidence and plan the next round, or conclude."""
    outcome = _passed(results)
    for name, _ in state.pending:
        outcome.setdefault(name, False)

    if state.stage in ("local-screen", "confirm"):
        state = record_local(state, outcome, results)
        trial, blamed, unresolved = to_confirm(state)
        state = replace(state, blamed=tuple(sorted({*state.blamed, *blamed})), unresolved=tuple(sorted({*state.unresolved, *unresolved})))
        if trial:
            return _local_round(state, trial, "confirm", f"Re-running {len(trial)} node(s) that failed on their own")
        exposed = _underexposed(state)
        if exposed:
            return _local_round(state, exposed, "confirm", f"Re-running {len(exposed)} node(s) of the failed run's groups alone")
        return _finish_nodes(state)

    if state.stage == "path-screen":
        judged = path_faults(state, results, outcome)
        if state.pending and all(not outcome[name] and judged[name] for name, _ in state.pending):
            return threshold_unmet_diagnosis(replace(state, pending=()))
        failing = [nodes for name, nodes in state.pending if not judged[name]]
        state = replace(state, pending=())
        if not failing:
            return _clean_bill(state)
        state = replace(state, searches=tuple(LinkSearch(inside=tuple(nodes)) for nodes in failing))
        return search_round(state)

    if state.stage == "link-search":
        return _advance_search(state, path_faults(state, results, outcome))

    if state.stage == "link-confirm":
        outcome = path_faults(state, results, outcome)
        link_fails, links = dict(state.link_fails), list(state.links)
        verdicts = {(nodes[0], nodes[1]): outcome[name] for name, nodes in state.pending}
        remaining = []
        for key in state.candidates:
            if key not in verdicts:
                remaining.append(key)  # shared a node with another candidate: its turn comes next
            elif verdicts[key]:
                continue  # the pair passed: the search followed noise or an intermittent fault
            else:
                pair = link_key(*key)
                link_fails[pair] = link_fails.get(pair, 0) + 1
                (links if link_fails[pair] >= state.options.confirmations else remaining).append(key)
        state = replace(state, link_fails=link_fails, links=tuple(dict.fromkeys(links)), candidates=tuple(remaining), pending=())
        if state.candidates:
            return _confirm_links(state)
        if state.links:
            return _after_links(state)
        return _clean_bill(state)

    raise ValueError(f"unknown diagnose stage {state.stage!r}")


PLANNER = Planner("adaptive", start, advance)
