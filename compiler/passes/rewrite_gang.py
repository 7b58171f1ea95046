"""Opt the workload's pods into a gang-aware scheduler (``spec.gangScheduler``).

For the TrainingRuntime the TrainJob runs, every replicated job's pod template gets the
scheduler name (a catalog ``default-scheduler`` included), and the queue label goes on both the
Job template and the pod template. A different value already on the queue label key is an
error, never overwritten. The resolved intent is recorded as ``spec.gangScheduler``.

KAI Scheduler admits a gang only when all its sub-groups exist, so the MPI launcher cannot wait
for the workers through JobSet (``dependsOn``, ``startupPolicy``): both are dropped and the
barrier moves into the launcher pod as an init container, ``wait-for-workers``, that opens a
real SSH session to each worker in turn, bounded by an overall deadline. Any other scheduler
changes nothing but the scheduler name, the labels and ``spec.gangScheduler``.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from ..datacopy import plain_copy
from ..diagnostics import Diagnostic, error
from ..unit import Context, GangSpec, Unit
from ..workflow_paths import (
    ROOT,
    Located,
    ReplicatedJob,
    dig,
    find_runtime,
    keyed,
    replicated_jobs,
    trainer,
)

__all__ = [
    "rewrite_gang",
    "WAIT_FOR_WORKERS",
    "WAIT_FOR_WORKERS_SCRIPT",
    "WAIT_DEADLINE_SECONDS",
    "WAIT_INTERVAL_SECONDS",
]

WAIT_FOR_WORKERS = "wait-for-workers"
FIX_SSH_PERMISSIONS = "fix-ssh-permissions"
WAIT_DEADLINE_SECONDS = 600
WAIT_INTERVAL_SECONDS = 5
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
DEFAULT_SSH_DIR = "/root/.ssh"

# Fixed text: every value it needs arrives in an environment variable, nothing is spliced in.
# JobSet names worker pods <jobset>-<replicatedJob>-<jobIndex>-<podIndex> under the subdomain
# <jobset> (or the runtime's network.subdomain); workers run as job 0 of their replicated job.
WAIT_FOR_WORKERS_SCRIPT = """\
set -u
if [ -z "${JOBSET_NAME:-}" ]; then
  echo "wait-for-workers: the pod has no jobset.sigs.k8s.io/jobset-name label, so the workers cannot be named" >&2
  exit 1
fi
subdomain="${WORKER_SUBDOMAIN:-$JOBSET_NAME}"
deadline=$(( $(date +%s) + WAIT_DEADLINE_SECONDS ))
index=0
while [ "$index" -lt "$WORKER_COUNT" ]; do
  host="$JOBSET_NAME-$WORKER_JOB-0-$index.$subdomain"
  until err=$(ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=5 \\
      -o ServerAliveInterval=5 -o ServerAliveCountMax=2 "$host" true </dev/null 2>&1 >/dev/null); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "wait-for-workers: worker $host did not answer an SSH session" \\
        "within ${WAIT_DEADLINE_SECONDS}s (last error: $err)" >&2
      exit 1
    fi
    sleep "$WAIT_INTERVAL_SECONDS"
  done
  echo "wait-for-workers: $host answered"
  index=$((index + 1))
done
echo "wait-for-workers: all $WORKER_COUNT workers answered"
"""


def rewrite_gang(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    gang = ctx.gang
    if gang is None:
        return unit, []
    if unit.workflow is None:
        return unit, [error("WorkflowMissing", ROOT, "gangScheduler is configured but no Workflow was rendered")]
    workflow = plain_copy(dict(unit.workflow))
    lookup = find_runtime(workflow)
    if lookup.runtime is None:
        return unit, [error("GangRuntimeNotFound", lookup.problem_path, f"gangScheduler is configured but {lookup.problem}")]

    jobs = replicated_jobs(lookup.runtime)
    problems = [problem for job in jobs for problem in _schedule(job, gang)]
    if not problems and gang.is_kai:
        problems = _move_barrier_into_launcher(workflow, lookup.runtime, jobs, ctx)
    if problems:
        return unit, problems
    workflow.setdefault("spec", {})["gangScheduler"] = gang.as_dict()
    return replace(unit, workflow=workflow), []


def _schedule(job: ReplicatedJob, gang: GangSpec) -> list[Diagnostic]:
    """Scheduler name on the pod spec; queue label on the Job template and the pod template."""
    pod_spec = job.pod_spec(create=True)
    if pod_spec is None:
        return [error("GangRuntimeInvalid", job.pod_spec_path, f"replicated job {job.name!r} has no pod template to schedule")]
    pod_spec["schedulerName"] = gang.scheduler_name
    problems: list[Diagnostic] = []
    for labels, path in (
        (job.job_labels(create=True), job.job_labels_path),
        (job.pod_labels(create=True), job.pod_labels_path),
    ):
        if not isinstance(labels, dict):
            problems.append(error("GangRuntimeInvalid", path, "labels must be a map"))
        elif gang.queue_label_key in labels and labels[gang.queue_label_key] != gang.queue:
            have = labels[gang.queue_label_key]
            problems.append(
                error(
                    "GangQueueLabelConflict",
                    keyed(path, gang.queue_label_key),
                    f'conflicting label value "{have}", expected "{gang.queue}"',
                )
            )
        else:
            labels[gang.queue_label_key] = gang.queue
    return problems


# Long: one rewrite with a precondition check per piece it moves; each error names the missing piece.
def _move_barrier_into_launcher(workflow: dict[str, Any], runtime: Located, jobs: list[ReplicatedJob], ctx: Context) -> list[Diagnostic]:
    jobset_spec = dig(runtime.value, ("spec", "template", "spec"))
    if isinstance(jobset_spec, dict):
        jobset_spec.pop("startupPolicy", None)
    if not ctx.entry.launcher_job:
        return []
    by_name = {job.name: job for job in jobs}
    jobs_path = runtime.path + ("spec", "template", "spec", "replicatedJobs")
    launcher = by_name.get(ctx.entry.launcher_job)
    worker_job = ctx.entry.node_jobs[0] if ctx.entry.node_jobs else ""
    if launcher is None or worker_job not in by_name:
        missing = ctx.entry.launcher_job if launcher is None else worker_job
        return [
            error(
                "GangRuntimeInvalid",
                jobs_path,
                f"{ctx.entry.key}: KAI Scheduler needs the launcher to wait for its workers, "
                f"but the runtime has no replicated job {missing!r}",
            )
        ]
    launcher.job.pop("dependsOn", None)

    count = _worker_count(workflow, runtime)
    if count is None:
        return [
            error(
                "GangWorkerCountUnknown",
                ROOT + ("spec", "jobTemplate", "spec", "workload", "trainJob", "trainer", "numNodes"),
                f"{ctx.entry.key}: the launcher must wait for every worker, but trainer.numNodes is not a positive integer",
            )
        ]
    pod_spec = launcher.pod_spec(create=True)
    if pod_spec is None:  # a step of the path is not a mapping
        return [error("GangRuntimeInvalid", launcher.pod_spec_path, f"{ctx.entry.key}: the launcher's pod template is not a mapping")]
    primary = (pod_spec.get("containers") or [None])[0]
    if not isinstance(primary, dict) or not primary.get("image"):
        return [
            error(
                "GangRuntimeInvalid",
                launcher.pod_spec_path + ("containers",),
                f"{ctx.entry.key}: the launcher has no container image to wait with",
            )
        ]
    mounts = _ssh_mounts(primary, runtime)
    if not mounts:
        return [
            error(
                "GangRuntimeInvalid",
                launcher.pod_spec_path + ("containers", 0, "volumeMounts"),
                f"{ctx.entry.key}: the launcher mounts no SSH directory, so it cannot check that workers answer SSH",
            )
        ]
    barrier = _barrier(primary, mounts, worker_job, count, dig(runtime.value, ("spec", "template", "spec", "network", "subdomain")))
    inits = [init for init in pod_spec.get("initContainers") or [] if not (isinstance(init, dict) and init.get("name") == WAIT_FOR_WORKERS)]
    after = next(
        (i + 1 for i, init in enumerate(inits) if isinstance(init, dict) and init.get("name") == FIX_SSH_PERMISSIONS),
        len(inits),
    )
    inits.insert(after, barrier)
    pod_spec["initContainers"] = inits
    return []


def _worker_count(workflow: dict[str, Any], runtime: Located) -> int | None:
    """Kubeflow runs ``trainer.numNodes`` nodes, else the runtime's ``mlPolicy.numNodes``."""
    spec = trainer(workflow)
    for value in (spec.value.get("numNodes") if spec else None, dig(runtime.value, ("spec", "mlPolicy", "numNodes"))):
        if value is None:
            continue
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    return None


def _ssh_mounts(primary: dict[str, Any], runtime: Located) -> list[dict[str, Any]]:
    """The launcher container's mounts of the SSH key directories (raw keys and ``~/.ssh``)."""
    ssh_dirs = {DEFAULT_SSH_DIR, dig(runtime.value, ("spec", "mlPolicy", "mpi", "sshAuthMountPath")) or DEFAULT_SSH_DIR}
    return [
        copy.deepcopy(mount)
        for mount in primary.get("volumeMounts") or []
        if isinstance(mount, dict) and mount.get("mountPath") in ssh_dirs
    ]


def _barrier(primary: dict[str, Any], mounts: list[dict[str, Any]], worker_job: str, count: int, subdomain: Any) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        {"name": "JOBSET_NAME", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOBSET_NAME_LABEL}']"}}},
        {"name": "WORKER_JOB", "value": worker_job},
        {"name": "WORKER_COUNT", "value": str(count)},
        {"name": "WAIT_DEADLINE_SECONDS", "value": str(WAIT_DEADLINE_SECONDS)},
        {"name": "WAIT_INTERVAL_SECONDS", "value": str(WAIT_INTERVAL_SECONDS)},
    ]
    if isinstance(subdomain, str) and subdomain:
        env.append({"name": "WORKER_SUBDOMAIN", "value": subdomain})
    container: dict[str, Any] = {
        "name": WAIT_FOR_WORKERS,
        "image": primary["image"],
        "command": ["sh", "-c"],
        "args": [WAIT_FOR_WORKERS_SCRIPT],
        "env": env,
        "volumeMounts": mounts,
    }
    if primary.get("imagePullPolicy"):
        container["imagePullPolicy"] = primary["imagePullPolicy"]
    return container
