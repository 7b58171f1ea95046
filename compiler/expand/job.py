"""``expand_job``: the nvcre Job for one planned group and iteration, built by named pure passes.

Passes, in order:

1. ``instantiate_job``: name (``<wf>-job`` for a single group and iteration outside diagnose,
   else ``<wf>-<group>-iter-<n>``, at most 35 characters), namespace, labels, the
   ``group-nodes`` annotation (Pinned), the controller reference to the Workflow, and the spec
   copied from the Job template;
2. ``rename_job_references``: references to job-scoped dependencies point at this Job's copies;
3. ``pin_placement``: ``numNodes`` = the group size (Pinned), node affinity and tolerations on every
   replicated job through the controller's runtime patch;
4. ``default_health_monitor``: ``node.spec.unschedulable == true`` unless the template has one;
   removed when the target opts cordoned nodes in;
5. ``copy_thresholds``: ``validation.performance`` thresholds and measurement timeout (a diagnose
   round's single-node screen takes the timeout only: the planner judges it against its peers);
6. ``isolate_diagnose_group``: a diagnose round's loopback group runs with ``NCCL_SHM_DISABLE=1``
   and ``NCCL_P2P_DISABLE=1`` (NCCL's traffic leaves through the node's own NICs), a no-NVLink
   group with ``NCCL_MNNVL_ENABLE=0``: as ``-x NAME=VALUE`` launcher arguments under MPI (an
   existing pair for the name is rewritten), as trainer ``env`` otherwise;
7. ``check_job`` (validator): the name is a DNS-1123 label, a checkpoint names a dependency PVC.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..diagnostics import CompileError, Diagnostic, error
from ..pipeline import Pass
from ..plan.model import Plan, PlannedGroup
from ..unit import Context, Unit
from ..vocabulary import ANNOTATION_GROUP_NODES, API_VERSION, JOB_FINALIZER, LABEL_GROUP, LABEL_WORKFLOW
from .context import ExpandContext, effective_workflow, expand_context, run_expansion
from .dependencies import (
    job_dependency_set,
    rename_job_spec,
    workflow_dependencies,
)
from .meta import (
    MAX_JOB_NAME_LEN,
    managed_labels,
    name_of,
    owner_reference,
    short_name,
    workflow_namespace,
)
from .placement import (
    add_controller_patch,
    is_mpi,
    node_affinity,
    replicated_job_names,
    tolerations,
)

__all__ = ["DEFAULT_HEALTH_EXPRESSION", "JOB_PASSES", "expand_job", "job_name"]

DEFAULT_HEALTH_EXPRESSION = "node.spec.unschedulable == true"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def job_name(workflow_name: str, plan: Plan, group: PlannedGroup, iteration: int) -> str:
    """The Job's name: ``<wf>-job`` when it is the only Job of the run, else ``<wf>-<group>-iter-<n>``."""
    if plan.diagnose is None and plan.iterations <= 1 and plan.total_groups <= 1:
        return short_name(f"{workflow_name}-job", MAX_JOB_NAME_LEN)
    return short_name(f"{workflow_name}-{group.name}-iter-{iteration}", MAX_JOB_NAME_LEN)


def _ctx(ctx: Context) -> ExpandContext:
    if not isinstance(ctx, ExpandContext):
        raise TypeError(f"expansion passes run with an ExpandContext, got {type(ctx).__name__}")
    return ctx


def _job(unit: Unit) -> dict[str, Any]:
    """A private copy of the Job built so far (``instantiate_job`` runs first)."""
    return copy.deepcopy(dict(unit.workflow or {}))


def _train_job(spec: dict[str, Any]) -> dict[str, Any]:
    train_job: dict[str, Any] = spec["workload"]["trainJob"]
    return train_job


def instantiate_job(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    plan, group = x.need_plan()
    workflow = x.workflow
    workflow_name = name_of(workflow, "Workflow")
    template = (workflow.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    labels = managed_labels({**dict(template_meta.get("labels") or {}), LABEL_WORKFLOW: workflow_name, LABEL_GROUP: group.name})
    annotations = dict(template_meta.get("annotations") or {})
    if plan.placement == "Pinned" and group.nodes:
        annotations[ANNOTATION_GROUP_NODES] = ",".join(sorted(set(group.nodes)))
    metadata: dict[str, Any] = {
        "name": job_name(workflow_name, plan, group, x.iteration),
        "namespace": workflow_namespace(workflow),
        "labels": labels,
        "ownerReferences": [owner_reference(workflow, "Workflow")],
        "finalizers": [JOB_FINALIZER],  # set at creation, so the Job tier orders its teardown from the start
    }
    if annotations:
        metadata["annotations"] = annotations
    job = {"apiVersion": API_VERSION, "kind": "Job", "metadata": metadata, "spec": copy.deepcopy(dict(template["spec"]))}
    return replace(unit, workflow=job), []


def rename_job_references(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    plan, group = x.need_plan()
    _, renames = job_dependency_set(x.workflow, plan.total_groups, plan.iterations, group.name, x.iteration)
    if not renames:
        return unit, []
    job = _job(unit)
    job["spec"] = rename_job_spec(job["spec"], renames)
    return replace(unit, workflow=job), []


def pin_placement(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    plan, group = x.need_plan()
    job = _job(unit)
    train_job = _train_job(job["spec"])
    pinned = plan.placement == "Pinned"
    target = ((x.workflow.get("spec") or {}).get("orchestration") or {}).get("target") or {}
    if pinned:
        train_job.setdefault("trainer", {})["numNodes"] = len(group.nodes)
        hostnames: tuple[str, ...] = group.nodes
    else:
        hostnames = tuple(target.get("nodeNames") or ())
    names = replicated_job_names(train_job, workflow_dependencies(x.workflow))
    pod_spec: dict[str, Any] = {}
    affinity = node_affinity(hostnames, target, plan.gpu_products)
    if affinity is not None:
        pod_spec["affinity"] = affinity
    tolerate = tolerations(target, pinned=pinned, mpi=is_mpi(names))
    if tolerate:
        pod_spec["tolerations"] = tolerate
    if pod_spec:
        job["spec"]["workload"]["trainJob"] = add_controller_patch(train_job, {n: {"spec": pod_spec} for n in names})
    return replace(unit, workflow=job), []


def default_health_monitor(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    plan, _ = _ctx(ctx).need_plan()
    job = _job(unit)
    if plan.health_monitor_cleared:
        if "nodeHealthMonitor" not in job["spec"]:
            return unit, []
        job["spec"].pop("nodeHealthMonitor")
    elif job["spec"].get("nodeHealthMonitor"):
        return unit, []
    else:
        job["spec"]["nodeHealthMonitor"] = {"cel": {"expression": DEFAULT_HEALTH_EXPRESSION}}
    return replace(unit, workflow=job), []


def copy_thresholds(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    performance = (((_ctx(ctx).workflow.get("spec") or {}).get("validation") or {}).get("performance")) or {}
    thresholds = (performance.get("thresholds") or {}).get("thresholds")
    group = _ctx(ctx).group
    if group is not None and group.loopback:
        thresholds = None  # a single-node screen is judged against its peers, not the workload's threshold
    timeout = performance.get("measurementTimeout")
    if not thresholds and not timeout:
        return unit, []
    job = _job(unit)
    if thresholds:
        job["spec"]["thresholds"] = copy.deepcopy(dict(thresholds))
    if timeout:
        job["spec"]["measurementTimeout"] = timeout
    return replace(unit, workflow=job), []


def isolation_env(group: PlannedGroup) -> dict[str, str]:
    """The NCCL variables a diagnose group runs with (empty for an ordinary group)."""
    env: dict[str, str] = {}
    if group.loopback:
        env.update({"NCCL_SHM_DISABLE": "1", "NCCL_P2P_DISABLE": "1"})
    if group.no_nvl:
        env["NCCL_MNNVL_ENABLE"] = "0"
    return env


def _with_mpi_env(args: list[Any], env: Mapping[str, str]) -> list[Any]:
    out = list(args)
    last_pair = -1
    for i in range(len(out) - 1):
        if out[i] == "-x" and isinstance(out[i + 1], str):
            last_pair = i + 1
            name = out[i + 1].partition("=")[0]
            if name in env:
                out[i + 1] = f"{name}={env[name]}"
    present = {str(out[i + 1]).partition("=")[0] for i in range(len(out) - 1) if out[i] == "-x"}
    extra: list[Any] = []
    for name, value in env.items():
        if name not in present:
            extra += ["-x", f"{name}={value}"]
    at = last_pair + 1 if last_pair >= 0 else 0
    return [*out[:at], *extra, *out[at:]]


def _with_trainer_env(entries: list[Any], env: Mapping[str, str]) -> list[Any]:
    out = [dict(e) if isinstance(e, Mapping) and e.get("name") in env else e for e in entries]
    present = set()
    for entry in out:
        if isinstance(entry, dict) and entry.get("name") in env:
            entry.pop("valueFrom", None)
            entry["value"] = env[entry["name"]]
            present.add(entry["name"])
    return out + [{"name": n, "value": v} for n, v in env.items() if n not in present]


def isolate_diagnose_group(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    _, group = x.need_plan()
    env = isolation_env(group)
    if not env:
        return unit, []
    job = _job(unit)
    trainer = _train_job(job["spec"]).setdefault("trainer", {})
    if x.entry.launch == "mpi":
        trainer["args"] = _with_mpi_env(list(trainer.get("args") or []), env)
    else:
        trainer["env"] = _with_trainer_env(list(trainer.get("env") or []), env)
    return replace(unit, workflow=job), []


def check_job(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    x = _ctx(ctx)
    plan, group = x.need_plan()
    job = unit.workflow or {}
    problems: list[Diagnostic] = []
    name = (job.get("metadata") or {}).get("name", "")
    if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name) or len(name) > MAX_JOB_NAME_LEN:
        problems.append(
            error("InvalidJobName", "metadata.name", f"{name!r} is not a DNS-1123 label of at most {MAX_JOB_NAME_LEN} characters")
        )
    checkpoint = (job.get("spec") or {}).get("checkpoint") or {}
    pvc = checkpoint.get("pvcName")
    if pvc:
        _, renames = job_dependency_set(x.workflow, plan.total_groups, plan.iterations, group.name, x.iteration)
        available = {
            renames.get(n, n)
            for n in (
                (d.get("metadata") or {}).get("name") for d in workflow_dependencies(x.workflow) if d.get("kind") == "PersistentVolumeClaim"
            )
            if n
        }
        if pvc not in available:
            problems.append(
                error(
                    "CheckpointPVCMissing", "spec.jobTemplate.spec.checkpoint.pvcName", f"Checkpoint requires PVC {pvc!r} in dependencies"
                )
            )
    return unit, problems


JOB_PASSES: tuple[Pass, ...] = (
    Pass("instantiate_job", instantiate_job),
    Pass("rename_job_references", rename_job_references),
    Pass("pin_placement", pin_placement),
    Pass("default_health_monitor", default_health_monitor),
    Pass("copy_thresholds", copy_thresholds),
    Pass("isolate_diagnose_group", isolate_diagnose_group),
    Pass("check_job", check_job, validator=True),
)


def expand_job(
    workflow: Mapping[str, Any], plan: Plan, group: PlannedGroup, iteration: int, *, check_purity: bool = False
) -> dict[str, Any]:
    """The Job for ``group`` in ``iteration`` (1-based); raises CompileError on a malformed Workflow."""
    if iteration < 1:
        raise ValueError(f"iterations count from 1, got {iteration}")
    workflow = effective_workflow(workflow, plan)
    template = (workflow.get("spec") or {}).get("jobTemplate") if isinstance(workflow, Mapping) else None
    spec = template.get("spec") if isinstance(template, Mapping) else None
    train_job = ((spec or {}).get("workload") or {}).get("trainJob") if isinstance(spec, Mapping) else None
    if not isinstance(train_job, Mapping):
        raise CompileError([error("InvalidWorkflow", "spec.jobTemplate.spec.workload.trainJob", "required")])
    launch = "mpi" if is_mpi(replicated_job_names(train_job, workflow_dependencies(workflow))) else "single"
    ctx = expand_context(workflow, launch=launch, plan=plan, group=group, iteration=iteration)
    return run_expansion(JOB_PASSES, ctx, check_purity=check_purity)
