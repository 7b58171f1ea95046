"""Partition node names into job groups: by name order, by topology domain, or for screening.

Pure functions over node names and labels. Every strategy sorts its input first, so the groups
depend only on the set of nodes, and every node lands in at least one group:

* :func:`partition_by_name`: chunks of ``nodes_per_job`` in name order (``group-<i>``); leftover
  nodes form ``group-<F>-overflow``, filled up to the job size with nodes borrowed from the end of
  the last full group. Fewer nodes than one job: a single partial ``group-0``.
* :func:`partition_by_topology`: with ``strict_domain`` one group per domain at its natural size;
  otherwise full groups packed into as few domains as possible (at most
  ``ceil(nodes_per_job / largest domain)`` per group; the first group may span more when it
  cannot be filled otherwise, so no group is ever larger than the job), then overflow groups for
  the nodes left untested, re-using tested nodes of the same domains to reach the job size.
* :func:`screening_groups`: the first round of ``diagnose``: one group per domain, or disjoint
  chunks of ``max(ceil(sqrt(N)), 2)`` nodes without a topology key.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from .model import PlannedGroup

__all__ = ["UNKNOWN_DOMAIN", "PartitionFailure", "partition_by_name", "partition_by_topology", "screening_groups"]

UNKNOWN_DOMAIN = "unknown"


class PartitionFailure(ValueError):
    """The nodes cannot be partitioned as asked (a node lacks the topology label)."""


def _group(
    name: str, nodes: Sequence[str], domains: Sequence[str] = (), labels: Mapping[str, str] | None = None, *, overflow: bool = False
) -> PlannedGroup:
    ordered_domains = tuple(sorted(set(domains)))
    counts: dict[str, int] = {}
    if labels is not None and len(ordered_domains) > 1:
        counts = dict(sorted(Counter(labels[n] for n in nodes).items()))
    return PlannedGroup(name=name, nodes=tuple(sorted(nodes)), domains=ordered_domains, domain_node_counts=counts, overflow=overflow)


def partition_by_name(nodes: Sequence[str], nodes_per_job: int) -> tuple[PlannedGroup, ...]:
    """Chunk ``nodes`` in name order; see the module docstring for the overflow rule."""
    if nodes_per_job < 1:
        raise PartitionFailure(f"nodesPerJob must be >= 1, got {nodes_per_job}")
    names = sorted(nodes)
    if not names:
        raise PartitionFailure("no nodes provided")
    full = len(names) // nodes_per_job
    groups = [_group(f"group-{i}", names[i * nodes_per_job : (i + 1) * nodes_per_job]) for i in range(full)]
    left = names[full * nodes_per_job :]
    if left:
        if full == 0:
            groups.append(_group("group-0", names))
        else:
            borrowed = list(groups[-1].nodes[len(groups[-1].nodes) - (nodes_per_job - len(left)) :])
            groups.append(_group(f"group-{full}-overflow", left + borrowed, overflow=True))
    return tuple(groups)


def _domains_of(names: Sequence[str], labels: Mapping[str, Mapping[str, str]], key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        value = labels.get(name, {}).get(key, "")
        if not value:
            raise PartitionFailure(f'node "{name}" missing topology label "{key}"')
        out[name] = value
    return out


def partition_by_topology(
    nodes: Sequence[str],
    labels: Mapping[str, Mapping[str, str]],
    nodes_per_job: int,
    topology_key: str,
    *,
    strict_domain: bool = False,
) -> tuple[PlannedGroup, ...]:
    """Group ``nodes`` by the ``topology_key`` label; see the module docstring."""
    if nodes_per_job < 1:
        raise PartitionFailure(f"nodesPerJob must be >= 1, got {nodes_per_job}")
    names = sorted(nodes)
    if not names:
        raise PartitionFailure("no nodes provided")
    domain_of = _domains_of(names, labels, topology_key)
    members: dict[str, list[str]] = {}
    for name in names:
        members.setdefault(domain_of[name], []).append(name)
    # Largest domains first, then by name: the order every later choice starts from.
    domains = sorted(members, key=lambda d: (-len(members[d]), d))

    if strict_domain:
        return tuple(_group(f"group-{i}", members[d], [d]) for i, d in enumerate(domains))

    pools = {d: list(members[d]) for d in domains}
    per_group = -(-nodes_per_job // len(members[domains[0]]))
    groups: list[PlannedGroup] = []
    while True:
        available = sorted((d for d in domains if pools[d]), key=lambda d: (-len(pools[d]), d))
        unassigned = sum(len(pools[d]) for d in available)
        if unassigned < nodes_per_job or unassigned == 0:
            break
        limit = per_group
        if sum(len(pools[d]) for d in available[:limit]) < nodes_per_job:
            if groups:
                break
            # Not even the first group fits the domain limit: span as few more domains as it takes
            # rather than run one group larger than the job size.
            while sum(len(pools[d]) for d in available[:limit]) < nodes_per_job:
                limit += 1
        taken: list[str] = []
        used: list[str] = []
        for d in available[:limit]:
            need = nodes_per_job - len(taken)
            if need <= 0:
                break
            taken += pools[d][:need]
            pools[d] = pools[d][need:]
            used.append(d)
        groups.append(_group(f"group-{len(groups)}", taken, used, domain_of))

    untested = [n for d in domains for n in pools[d]]
    if not untested:
        return tuple(groups)
    if not groups:
        return (_group("group-0", untested, [domain_of[n] for n in untested], domain_of),)
    return tuple(groups) + _overflow_groups(domains, members, set(untested), nodes_per_job, len(groups), domain_of)


def _overflow_groups(
    domains: Sequence[str],
    members: Mapping[str, Sequence[str]],
    untested: set[str],
    nodes_per_job: int,
    first_index: int,
    domain_of: Mapping[str, str],
) -> tuple[PlannedGroup, ...]:
    # Each domain offers its untested nodes first, then the ones full groups already used.
    racks = [(d, [n for n in members[d] if n in untested] + [n for n in members[d] if n not in untested]) for d in domains]
    out: list[PlannedGroup] = []
    while untested:
        racks.sort(key=lambda r: (-sum(1 for n in r[1] if n in untested), -len(r[1]), r[0]))
        taken: list[str] = []
        used: list[str] = []
        for index, (domain, pool) in enumerate(racks):
            if len(taken) >= nodes_per_job:
                break
            if not pool:
                continue
            take = pool[: nodes_per_job - len(taken)]
            racks[index] = (domain, pool[len(take) :])
            taken += take
            used.append(domain)
        if not taken:
            break
        untested.difference_update(taken)
        out.append(_group(f"group-{first_index + len(out)}-overflow", taken, used, domain_of, overflow=True))
    return tuple(out)


def screening_groups(nodes: Sequence[str], labels: Mapping[str, Mapping[str, str]], topology_key: str) -> tuple[PlannedGroup, ...]:
    """The first ``diagnose`` round: ``screen-<i>`` per domain, or per ``max(ceil(sqrt N), 2)`` chunk."""
    names = sorted(nodes)
    if not names:
        raise PartitionFailure("no nodes provided")
    if topology_key:
        members: dict[str, list[str]] = {}
        for name in names:
            members.setdefault(labels.get(name, {}).get(topology_key) or UNKNOWN_DOMAIN, []).append(name)
        return tuple(_group(f"screen-{i}", members[d], [d]) for i, d in enumerate(sorted(members)))
    size = max(math.ceil(math.sqrt(len(names))), 2)
    return tuple(_group(f"screen-{i}", names[start : start + size]) for i, start in enumerate(range(0, len(names), size)))
