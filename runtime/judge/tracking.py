"""Workflow ``status.nodeResults`` and ``status.domainResults``, kept when ``validation.performance.tracking`` asks.

NVCRE's Workflow status has room for a result per node (``tracking.perNode``) and per topology
domain (``tracking.perDomain``). Both are derived from the groups the status already holds, the
current iteration's and every finished one's (``iterationHistory``), so they can never disagree
with the groups:

* a node's ``status`` is ``Failed`` once any group holding it failed, else ``Running`` while one
  is pending or running, else ``Passed``; ``group`` and ``domain`` are those of its latest group;
  ``iterations[]`` has one entry per iteration it ran in (``iterationNumber``, ``status``);
* a domain's ``nodeCount`` is the number of nodes seen in it and its ``status`` is the worst of
  its nodes' (``Failed`` over ``Running`` over ``Passed``).

The TFLOPs, duration and memory fields NVCRE's types declare are left out: no measurement gives
them per node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["with_tracking"]

_ORDER = {"Passed": 0, "Running": 1, "Failed": 2}


def _tracking(wf: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((((wf.get("spec") or {}).get("validation") or {}).get("performance") or {}).get("tracking")) or {}


def _node_status(phase: Any) -> str:
    if phase == "Succeeded":
        return "Passed"
    if phase == "Failed":
        return "Failed"
    return "Running"


def _rounds(orchestration: Mapping[str, Any]) -> list[tuple[int, Sequence[Mapping[str, Any]]]]:
    """(iteration, groups) of every finished iteration and of the current one, in order."""
    nodes_of = {str(g.get("name")): list(g.get("nodes") or ()) for g in orchestration.get("groups") or ()}
    domains_of = {str(g.get("name")): list(g.get("domains") or ()) for g in orchestration.get("groups") or ()}
    rounds: list[tuple[int, Sequence[Mapping[str, Any]]]] = []
    for record in sorted(orchestration.get("iterationHistory") or (), key=lambda h: int(h.get("iteration") or 0)):
        groups = [
            {**g, "nodes": nodes_of.get(str(g.get("name")), []), "domains": domains_of.get(str(g.get("name")), [])}
            for g in record.get("groups") or ()
        ]
        rounds.append((int(record.get("iteration") or 0), groups))
    current = int(orchestration.get("currentIteration") or 1)
    if all(number != current for number, _ in rounds):
        rounds.append((current, list(orchestration.get("groups") or ())))
    return rounds


def with_tracking(wf: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """``status`` with ``nodeResults``/``domainResults`` as the Workflow's tracking asks (unchanged otherwise)."""
    tracking = _tracking(wf)
    per_node, per_domain = bool(tracking.get("perNode")), bool(tracking.get("perDomain"))
    orchestration = status.get("orchestration") or {}
    if not (per_node or per_domain) or not orchestration.get("groups"):
        return status
    nodes: dict[str, dict[str, Any]] = {}
    for iteration, groups in _rounds(orchestration):
        for group in groups:
            state = _node_status(group.get("phase"))
            domain = next(iter(group.get("domains") or ()), "")
            for node in group.get("nodes") or ():
                entry = nodes.setdefault(str(node), {"iterations": []})
                entry["group"] = str(group.get("name") or "")
                if domain:
                    entry["domain"] = str(domain)
                previous = entry.get("status", "Passed")
                entry["status"] = state if _ORDER[state] >= _ORDER[previous] or previous == "Running" else previous
                entry["iterations"].append({"iterationNumber": iteration, "status": state})
    out = dict(status)
    if per_node:
        out["nodeResults"] = {name: nodes[name] for name in sorted(nodes)}
    if per_domain:
        domains: dict[str, dict[str, Any]] = {}
        for entry in nodes.values():
            if not entry.get("domain"):
                continue
            result = domains.setdefault(entry["domain"], {"nodeCount": 0, "status": "Passed"})
            result["nodeCount"] += 1
            if _ORDER[entry["status"]] > _ORDER[result["status"]]:
                result["status"] = entry["status"]
        out["domainResults"] = {name: domains[name] for name in sorted(domains)}
    return out
