"""The runtime's one door into the compiler: every object the controller creates comes out of here.

Reconcilers never assemble a manifest; they call these functions, which hand the question to
the pure compiler (render for Certifications and WorkloadRuns, plan and expand for the second
lowering) and return its answer unchanged. Keeping the calls in one module makes "the runtime
builds no manifest" a property one can check by reading a single file.

The reconcile tiers reach the compiler through this module and the shared vocabulary only
(a layer rule). So the few other compiler answers a tier needs come through here too, each
named for its use: whether the catalog holds a category and which nodes a target selects (the
Certification tier, before it creates anything), the access reviews of a run namespace (the
Workflow tier's namespace gate) and the Go duration text of the API's duration fields (the
Job, Workflow and measurement tiers read timeouts and intervals, and print them in messages).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.durations import duration_limit, format_duration, parse_duration
from nvcre.compiler.facts import ClusterFacts, facts_from_documents
from nvcre.compiler.nodelists import read_failed, read_succeeded
from nvcre.compiler.plan import PlanError
from nvcre.compiler.plan.model import PLAN_ERROR_REASONS

if TYPE_CHECKING:  # the planner's types, for the signatures; the modules load on first use
    from nvcre.compiler.diagnose.session import Replay
    from nvcre.compiler.plan.model import Plan, PlannedGroup

__all__ = [
    "CompileError",
    "PlanError",
    "access_reviews",
    "builtin_logprofiles",
    "catalog_has",
    "cluster_facts",
    "diagnose_replay",
    "diagnose_stage",
    "duration_limit",
    "expand_certification",
    "expand_job",
    "expand_job_dependencies",
    "expand_node_results",
    "expand_workflow_dependencies",
    "expand_workload",
    "expand_workloadrun",
    "failure_of",
    "format_duration",
    "parse_duration",
    "plan_workflow",
    "RENDER_EVENTS",
    "render_events",
    "planned_group",
    "stored_plan",
    "stored_failed_nodes",
    "stored_succeeded_nodes",
    "target_nodes",
]


def cluster_facts(nodes: Iterable[Mapping[str, Any]], resource_slices: Iterable[Mapping[str, Any]] = ()) -> ClusterFacts:
    """The compiler's view of the cluster, built from what the informers hold."""
    # Informer items carry their apiVersion and kind, as every object the API server lists does.
    return facts_from_documents([*nodes, *resource_slices], source="cluster")


def catalog_has(domain: str | None, variant: str | None) -> bool:
    """Whether the shipped catalog holds the category ``domain/variant``: a Certification naming
    one it does not hold fails before anything is created."""
    from nvcre.compiler.catalog import load_catalog  # read once per process (the loader caches it)

    return domain is not None and variant is not None and load_catalog().lookup(domain, variant) is not None


def target_nodes(facts: ClusterFacts, target: Mapping[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """The nodes a Certification's ``spec.target`` selects on these facts (none for a malformed
    target): the Certification tier waits, within the discovery window, while there are none."""
    from nvcre.compiler.detect.target import select_target_nodes

    nodes, _, _ = select_target_nodes(facts, target)
    return nodes


def access_reviews(namespace: str) -> list[dict[str, Any]]:
    """The SelfSubjectAccessReviews that tell whether the controller may write in ``namespace``,
    one per resource of the run role: the Workflow tier's namespace gate asks them through
    ``kube.access.NamespaceAccess`` before it creates anything there."""
    from nvcre.compiler.install.rbac import access_reviews as reviews  # the install family loads on first use

    return reviews(namespace)


def _expand_module() -> ModuleType:
    # loaded on first use: the planner and expanders are heavy, and a CLI command that never
    # reaches them should not pay for them
    from nvcre.compiler import expand

    return expand


def failure_of(exc: CompileError, default: str = "WorkflowValidationFailed") -> tuple[str, str]:
    """(reason, message) for a build error: a sizing/discovery problem keeps its own reason
    (``PartitionError``...), anything else is ``default``; the message names every error."""
    errors = exc.errors or exc.diagnostics
    codes = [d.code for d in errors]
    reason = codes[0] if codes and codes[0] in PLAN_ERROR_REASONS else default
    return reason, str(exc)


def plan_workflow(workflow: Mapping[str, Any], facts: ClusterFacts) -> Plan:
    from nvcre.compiler.plan import plan_workflow as plan

    return plan(workflow, facts)


def planned_group(group: Mapping[str, Any], *, loopback: bool = False, no_nvl: bool = False) -> PlannedGroup:
    """The planner's group record for one ``status.orchestration.groups[]`` entry.

    ``loopback``/``no_nvl`` come from the diagnose round the group belongs to (the status schema
    has no place for them; the round is rebuilt by :func:`diagnose_replay`).
    """
    from nvcre.compiler.plan.model import PlannedGroup as Group

    return Group(
        name=str(group["name"]),
        nodes=tuple(group.get("nodes") or ()),
        domains=tuple(group.get("domains") or ()),
        domain_node_counts=dict(group.get("domainNodeCounts") or {}),
        overflow=bool(group.get("overflow")),
        loopback=loopback,
        no_nvl=no_nvl,
    )


def diagnose_replay(
    workflow: Mapping[str, Any],
    first_round: Mapping[str, Sequence[str]],
    finished: Sequence[Mapping[str, tuple[bool, float | None, bool]]],
) -> Replay:
    """The diagnose rounds played so far and what comes next (a Round or the Diagnosis).

    ``finished`` holds one mapping per finished round: group name -> (passed, bus bandwidth,
    evaluable). Raises CompileError for an unknown planner, ValueError for an impossible history.
    """
    from nvcre.compiler.diagnose import session

    outcomes = [{name: session.Outcome(*value) for name, value in round_.items()} for round_ in finished]
    return session.replay_workflow(workflow, first_round, outcomes)


def diagnose_stage(stage: str) -> str:
    """The NVCRE stage name ``status.orchestration.diagnose.stage`` reports a planner stage under."""
    from nvcre.compiler.diagnose import session

    return session.status_stage(stage)


def stored_plan(workflow: Mapping[str, Any], facts: ClusterFacts, *, cordoned_opt_in: bool, iterations: int) -> Plan:
    """The plan Jobs are expanded from once the groups are in ``status``.

    The groups and job size are the stored ones (they were decided once); the rest (GPU
    products for the affinity, the health-monitor rule) comes from planning again on today's
    facts, or, when that is no longer possible, from what the status recorded.
    """
    from nvcre.compiler import plan

    status = (workflow.get("status") or {}).get("orchestration") or {}
    groups = tuple(planned_group(g) for g in status.get("groups") or ())
    nodes_per_job = int(status.get("nodesPerJob") or 0)
    try:
        fresh = plan.plan_workflow(workflow, facts)
        return dataclasses.replace(fresh, groups=groups, nodes_per_job=nodes_per_job)
    except (plan.PlanError, CompileError):
        return plan.Plan(
            groups=groups,
            nodes_per_job=nodes_per_job,
            target_nodes=tuple(sorted({n for g in groups for n in g.nodes})),
            excluded_nodes=tuple(status.get("excludedNodes") or ()),
            exclusion_reason=str(status.get("exclusionReason") or ""),
            placement=status.get("placement") or "Pinned",
            gpu_products=tuple(status.get("gpuProducts") or ()),
            health_monitor_cleared=cordoned_opt_in,
            events=(),
            message="",
            platform=str(status.get("detectedPlatform") or ""),
            gpu_architecture=str(status.get("detectedGPUArchitecture") or ""),
            iterations=iterations,
        )


def expand_certification(certification: Mapping[str, Any], facts: ClusterFacts, notes: list[Any] | None = None) -> list[dict[str, Any]]:
    return list(_expand_module().expand_certification(certification, facts, notes=notes))


def expand_workloadrun(workloadrun: Mapping[str, Any], facts: ClusterFacts, notes: list[Any] | None = None) -> dict[str, Any]:
    return dict(_expand_module().expand_workloadrun(workloadrun, facts, notes=notes))


#: render notes NVCRE's controllers turn into Events on the Certification / WorkloadRun, and their type
RENDER_EVENTS = {
    "GPUArchitectureDefaults": "Warning",
    "NICResourceDetection": "Normal",
    "GKENetworkDetection": "Warning",
    "TCPXOPluginDetection": "Warning",
}


def render_events(notes: Sequence[Any]) -> list[tuple[str, str, str]]:
    """(type, reason, message) of each render note that becomes an Event, with the text the CLI
    prints: the NIC detection's outcome (a Normal Event either way) and the fallbacks NVCRE warns
    about (a GPU architecture without defaults, GKE networks or the TCPXO plugin not detected)."""
    out: list[tuple[str, str, str]] = []
    for note in notes:
        code = str(getattr(note, "code", ""))
        if code in RENDER_EVENTS and (RENDER_EVENTS[code] == "Normal" or getattr(note, "severity", "") != "info"):
            event = (RENDER_EVENTS[code], code, str(getattr(note, "message", "")))
            if event not in out:
                out.append(event)
    return out


def expand_workflow_dependencies(workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(_expand_module().expand_workflow_dependencies(workflow))


def expand_job(workflow: Mapping[str, Any], plan: Plan, group: PlannedGroup, iteration: int) -> dict[str, Any]:
    return dict(_expand_module().expand_job(workflow, plan, group, iteration))


def expand_job_dependencies(
    workflow: Mapping[str, Any], plan: Plan, group: PlannedGroup, iteration: int, job: Mapping[str, Any]
) -> list[dict[str, Any]]:
    return list(_expand_module().expand_job_dependencies(workflow, plan, group, iteration, job))


def expand_workload(job: Mapping[str, Any], workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(_expand_module().expand_workload(job, workflow))


def expand_node_results(workflow: Mapping[str, Any], succeeded: Sequence[str], failed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return list(_expand_module().expand_node_results(workflow, succeeded, failed))


def stored_succeeded_nodes(configmap: Mapping[str, Any] | None) -> list[str]:
    """The names a succeeded-nodes ConfigMap holds ([] when absent or unreadable)."""
    return sorted(set(read_succeeded(configmap)))


def stored_failed_nodes(configmap: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The entries a failed-nodes ConfigMap holds ([] when absent or unreadable)."""
    return read_failed(configmap)


def builtin_logprofiles() -> list[dict[str, Any]]:
    from nvcre.compiler.logprofiles import builtin_logprofiles as profiles

    return list(profiles())
