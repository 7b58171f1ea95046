"""NVCRE's diagnose algorithm, as its documentation and controller describe it, as a pure planner.

Stages, in order: ``intra-screening`` (one group per topology domain, else disjoint chunks of
``max(ceil(sqrt N), 2)`` nodes in name order), ``intra-screening-no-nvl`` (only when the workload
runs with multi-node NVLink: the same domains with it off), ``inter-screening`` (one healthy
representative per screening group), ``bisection`` (failed groups halved in name order down to
``minGroupSize``), ``cross-boundary`` (when both halves of a failed group pass: mixed probes that
narrow the boundary) and ``confirmation`` (each suspect beside a rotating healthy reference).
Group names and messages are NVCRE's. This is the yardstick :mod:`.adaptive` is measured against.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .model import Diagnosis, GroupResult, InfrastructureFault, Options, Planner, Round, RoundGroup

__all__ = ["PLANNER", "advance", "start"]

_MAX_PROBE_ROUNDS = 4


@dataclass(frozen=True)
class _Probe:
    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    probe_round: int = 0


@dataclass(frozen=True)
class _State:
    nodes: tuple[str, ...]
    options: Options
    stage: str
    round: int
    domains: tuple[tuple[str, tuple[str, ...]], ...]
    healthy: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()
    no_nvl_suspects: tuple[str, ...] = ()
    failed_domains: tuple[str, ...] = ()
    to_split: tuple[tuple[str, ...], ...] = ()
    probes: tuple[_Probe, ...] = ()
    faults: tuple[InfrastructureFault, ...] = ()
    confirmed: tuple[str, ...] = ()
    #: the round in flight: group name -> (nodes, sibling key for both-halves-pass)
    pending: tuple[tuple[str, tuple[str, ...], str], ...] = ()


def _sorted(nodes: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(set(nodes)))


def _add(existing: Sequence[str], more: Sequence[str]) -> tuple[str, ...]:
    return _sorted([*existing, *more])


def _minus(existing: Sequence[str], less: Sequence[str]) -> tuple[str, ...]:
    drop = set(less)
    return tuple(n for n in existing if n not in drop)


def _domains(nodes: tuple[str, ...], topology: Mapping[str, str] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if topology:
        by: dict[str, list[str]] = {}
        for node in nodes:
            by.setdefault(topology.get(node) or "unknown", []).append(node)
        return tuple((domain, tuple(members)) for domain, members in sorted(by.items()))
    size = max(math.ceil(math.sqrt(len(nodes))), 2)
    return tuple((f"chunk-{i}", nodes[start : start + size]) for i, start in enumerate(range(0, len(nodes), size)))


def _round(state: _State, stage: str, groups: Sequence[tuple[str, tuple[str, ...], str, bool]], message: str) -> tuple[_State, Round]:
    pending = tuple((name, nodes, key) for name, nodes, key, _ in groups)
    new = replace(state, stage=stage, round=state.round + 1, pending=pending)
    return new, Round(stage, tuple(RoundGroup(name, nodes, no_nvl=no_nvl) for name, nodes, _, no_nvl in groups), message)


def start(nodes: Sequence[str], topology: Mapping[str, str] | None, options: Options) -> tuple[_State, Round]:
    """The intra-domain screening round."""
    ordered = _sorted(nodes)
    domains = _domains(ordered, topology)
    state = _State(ordered, options, "intra-screening", 0, domains)
    groups = [(f"screen-{i}", members, domain, False) for i, (domain, members) in enumerate(domains)]
    return _round(state, "intra-screening", groups, f"Screening {len(ordered)} nodes in {len(groups)} groups")


def _results(state: _State, results: Sequence[GroupResult]) -> dict[str, bool]:
    by_name = {r.name: r.passed and r.evaluable for r in results}
    return {name: by_name.get(name, False) for name, _, _ in state.pending}


def _bisect_round(state: _State) -> tuple[_State, Round]:
    groups = []
    for i, group in enumerate(state.to_split):
        members = _sorted(group)
        if len(members) <= state.options.min_group_size:
            groups.append((f"bisect-{state.round}-{i}", members, f"whole-{i}", False))
            continue
        half = len(members) // 2
        groups.append((f"bisect-{state.round}-{i}a", members[:half], f"pair-{i}", False))
        groups.append((f"bisect-{state.round}-{i}b", members[half:], f"pair-{i}", False))
    state = replace(state, to_split=())
    return _round(state, "bisection", groups, f"Bisecting {len(state.to_split) or len(groups)} failed group(s)")


def _probe_groups(state: _State) -> list[tuple[str, tuple[str, ...], str, bool]]:
    groups = []
    for i, probe in enumerate(state.probes):
        a, b = probe.side_a, probe.side_b
        mix0 = (*a[: max(len(a) // 2, 1)], *b[: max(len(b) // 2, 1)])
        mix1 = (*a[max(len(a) // 2, 1) :], *b[max(len(b) // 2, 1) :])
        groups.append((f"cross-{i}-mix0", _sorted(mix0), f"probe-{i}", False))
        if len(mix1) >= 2:
            groups.append((f"cross-{i}-mix1", _sorted(mix1), f"probe-{i}", False))
    return groups


def _faults_found(state: _State) -> Diagnosis:
    """The ending when no node is left to confirm but infrastructure faults were found."""
    return Diagnosis(
        True,
        f"Diagnosis complete: {len(state.faults)} infrastructure faults detected",
        infrastructure_faults=state.faults,
        healthy_nodes=state.healthy,
    )


def _confirm(state: _State) -> tuple[_State, Round | Diagnosis]:
    suspects = _minus(state.suspects, state.healthy)
    if not suspects:
        if state.faults:
            return state, _faults_found(state)
        return state, Diagnosis(False, "All suspects cleared, no faults confirmed", healthy_nodes=state.healthy)
    if not state.healthy:
        message = f"No healthy reference node; {len(suspects)} suspects marked failed"
        return state, Diagnosis(True, message, faulty_nodes={n: message for n in suspects}, infrastructure_faults=state.faults)
    # References rotate so confirmations run in parallel; with more suspects than healthy nodes
    # the controller runs the groups that would share a reference one after another.
    batch = suspects[: len(state.healthy)]
    groups = []
    for i, suspect in enumerate(batch):
        reference = state.healthy[i % len(state.healthy)]
        groups.append((f"confirm-{i}", (suspect, reference), suspect, suspect in state.no_nvl_suspects))
    return _round(
        replace(state, suspects=suspects), "confirmation", groups, f"Confirming {len(batch)} suspect(s) against healthy references"
    )


def _after_bisection_or_probes(state: _State) -> tuple[_State, Round | Diagnosis]:
    if state.probes:
        return _round(state, "cross-boundary", _probe_groups(state), f"Probing {len(state.probes)} boundary(ies)")
    if state.to_split:
        return _bisect_round(state)
    if not state.suspects:
        if state.faults:
            return state, _faults_found(state)
        return state, Diagnosis(False, "Bisection complete: all groups passed", healthy_nodes=state.healthy)
    return _confirm(state)


def _after_screening(state: _State, outcome: Mapping[str, bool], stage: str) -> tuple[_State, Round | Diagnosis]:
    """The intra-domain screens (with or without multi-node NVLink) are in: re-screen, bisect or go on."""
    healthy, suspects, no_nvl, failed_domains = (
        list(state.healthy),
        list(state.suspects),
        list(state.no_nvl_suspects),
        list(state.failed_domains),
    )
    for name, nodes, domain in state.pending:
        if outcome[name]:
            if stage == "intra-screening":
                healthy.extend(nodes)
        else:
            suspects.extend(nodes)
            failed_domains.append(domain)
            if stage == "intra-screening-no-nvl":
                no_nvl.extend(nodes)
                healthy = list(_minus(healthy, nodes))
    state = replace(
        state,
        healthy=_sorted(healthy),
        suspects=_sorted(suspects),
        no_nvl_suspects=_sorted(no_nvl),
        failed_domains=tuple(dict.fromkeys(failed_domains)),
        pending=(),
    )
    if stage == "intra-screening" and state.options.mnnvl:
        groups = [(f"screen-no-nvl-{domain}", members, domain, True) for domain, members in state.domains]
        return _round(state, "intra-screening-no-nvl", groups, "Re-screening with multi-node NVLink off")
    failed = [members for domain, members in state.domains if domain in state.failed_domains]
    reps = [next(n for n in members if n in state.healthy) for _, members in state.domains if any(n in state.healthy for n in members)]
    if len(reps) < 2:
        if not state.suspects:
            return state, Diagnosis(False, "All domains healthy, no faults detected", healthy_nodes=state.healthy)
        state = replace(state, to_split=tuple(_sorted(m) for m in failed))
        return _bisect_round(state)
    state = replace(state, to_split=tuple(_sorted(m) for m in failed))
    return _round(
        state,
        "inter-screening",
        [("inter-domain", _sorted(reps), "inter", False)],
        f"Screening {len(reps)} domain representatives together",
    )


def _after_inter_screening(state: _State, outcome: Mapping[str, bool]) -> tuple[_State, Round | Diagnosis]:
    """The domain representatives ran together: conclude healthy, or bisect what failed."""
    ((name, nodes, _),) = state.pending
    to_split = list(state.to_split)
    suspects = list(state.suspects)
    if not outcome[name]:
        to_split.append(nodes)
        suspects.extend(nodes)
    state = replace(state, to_split=tuple(to_split), suspects=_sorted(suspects), pending=())
    if not state.to_split:
        return state, Diagnosis(False, "All screening passed, no faults detected", healthy_nodes=state.healthy)
    return _bisect_round(state)


def _after_bisection(state: _State, outcome: Mapping[str, bool]) -> tuple[_State, Round | Diagnosis]:
    """A bisection round is in: split further, probe across the halves, or confirm."""
    healthy, suspects, to_split = list(state.healthy), list(state.suspects), list(state.to_split)
    probes = list(state.probes)
    siblings: dict[str, list[tuple[str, tuple[str, ...], bool]]] = {}
    for name, nodes, key in state.pending:
        siblings.setdefault(key, []).append((name, nodes, outcome[name]))
    for key, members in siblings.items():
        if key.startswith("pair-") and len(members) == 2 and all(passed for _, _, passed in members):
            a, b = members[0][1], members[1][1]
            healthy = list(_minus(healthy, (*a, *b)))
            probes.append(_Probe(a, b))
            continue
        for _, nodes, passed in members:
            if passed:
                healthy.extend(nodes)
                suspects = list(_minus(suspects, nodes))
            elif len(nodes) <= state.options.min_group_size:
                suspects.extend(nodes)
            else:
                to_split.append(nodes)
    state = replace(state, healthy=_sorted(healthy), suspects=_sorted(suspects), to_split=tuple(to_split), probes=tuple(probes), pending=())
    return _after_bisection_or_probes(state)


def _after_cross_boundary(state: _State, outcome: Mapping[str, bool]) -> tuple[_State, Round | Diagnosis]:
    """The cross-boundary probes are in: bisect again, confirm, or conclude."""
    healthy, faults, probes = list(state.healthy), list(state.faults), []
    for i, probe in enumerate(state.probes):
        mix0 = outcome.get(f"cross-{i}-mix0", True)
        mix1 = outcome.get(f"cross-{i}-mix1", True)
        a, b = probe.side_a, probe.side_b
        if mix0 and mix1:
            healthy.extend((*a, *b))
            continue
        if not mix0 and not mix1:
            faults.append(InfrastructureFault(a, b, "cross-boundary"))
            continue
        cut_a, cut_b = max(len(a) // 2, 1), max(len(b) // 2, 1)
        na, nb = (a[:cut_a], b[:cut_b]) if not mix0 else (a[cut_a:], b[cut_b:])
        nxt = _Probe(tuple(na), tuple(nb), probe.probe_round + 1)
        if nxt.probe_round > _MAX_PROBE_ROUNDS or (len(na) <= 2 and len(nb) <= 2):
            faults.append(InfrastructureFault(nxt.side_a, nxt.side_b, "cross-boundary"))
        else:
            probes.append(nxt)
    state = replace(state, healthy=_sorted(healthy), faults=tuple(faults), probes=tuple(probes), pending=())
    if state.probes:
        return _after_bisection_or_probes(state)
    if state.to_split:
        return _bisect_round(state)
    if state.suspects and _minus(state.suspects, state.healthy):
        return _confirm(state)
    if state.faults:
        return state, _faults_found(state)
    return state, Diagnosis(False, "Cross-boundary probing complete: no faults confirmed", healthy_nodes=state.healthy)


def _after_confirmation(state: _State, outcome: Mapping[str, bool]) -> tuple[_State, Round | Diagnosis]:
    """The suspects ran beside healthy references: blame, confirm the rest, or clear them."""
    healthy, confirmed = list(state.healthy), list(state.confirmed)
    for name, _nodes, suspect in state.pending:
        if outcome[name]:
            healthy.append(suspect)
        else:
            confirmed.append(suspect)
    tried = {suspect for _, _, suspect in state.pending}
    state = replace(
        state,
        healthy=_sorted(healthy),
        confirmed=_sorted(confirmed),
        suspects=tuple(s for s in state.suspects if s not in tried),
        pending=(),
    )
    if _minus(state.suspects, state.healthy):
        return _confirm(state)
    if not state.confirmed:
        if state.faults:
            return state, _faults_found(state)
        return state, Diagnosis(False, "All suspects cleared, no faults confirmed", healthy_nodes=state.healthy)
    message = f"Diagnosis complete: {len(state.confirmed)} faulty nodes confirmed"
    return state, Diagnosis(
        True,
        message,
        faulty_nodes={n: message for n in state.confirmed},
        infrastructure_faults=state.faults,
        healthy_nodes=state.healthy,
    )


def advance(state: _State, results: Sequence[GroupResult]) -> tuple[_State, Round | Diagnosis]:
    """Fold a round's results into the state and plan the next round, or conclude."""
    outcome = _results(state, results)
    stage = state.stage
    if stage in ("intra-screening", "intra-screening-no-nvl"):
        return _after_screening(state, outcome, stage)
    if stage == "inter-screening":
        return _after_inter_screening(state, outcome)
    if stage == "bisection":
        return _after_bisection(state, outcome)
    if stage == "cross-boundary":
        return _after_cross_boundary(state, outcome)
    if stage == "confirmation":
        return _after_confirmation(state, outcome)
    raise ValueError(f"unknown diagnose stage {stage!r}")


PLANNER = Planner("baseline", start, advance)
