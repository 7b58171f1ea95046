"""The TrainingRuntime and TrainJob a simulated-cluster test submits by hand, from a rendered Workflow.

The sim cluster's own tests (``tests/integration/test_simcluster_sim.py`` and its offline twin) drive
JobSet, the Trainer and the workload player directly, without the nvcre controller. They take
the TrainingRuntime a category Workflow carries among its dependencies and the TrainJob template
in ``spec.jobTemplate.spec.workload.trainJob``, and turn a few knobs a scenario needs: the node
count, a launcher that fails at once instead of retrying, a forced exit code. Pure functions:
the Workflow passed in is never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nvcre.testing.simstages import EXIT_CODE

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
#: the field manager named on the runtime patch that forces an exit code
PATCH_MANAGER = "sim.nvcre.io/test"


class RenderShapeError(ValueError):
    """The Workflow has no TrainingRuntime dependency or no TrainJob template."""


def runtime_of(
    workflow: Mapping[str, Any],
    *,
    namespace: str,
    backoff_limit: int | None = None,
    replicated_job: str | None = None,
) -> dict[str, Any]:
    """The Workflow's TrainingRuntime, placed in ``namespace``.

    With ``backoff_limit`` every replicated Job (or only ``replicated_job``) gets that
    ``backoffLimit``: 0 lets a failing launcher fail its JobSet at once, where the Job controller
    would otherwise retry with back-off for minutes.
    """
    runtimes = [d for d in (workflow.get("spec") or {}).get("dependencies") or [] if d.get("kind") == "TrainingRuntime"]
    if not runtimes:
        raise RenderShapeError("spec.dependencies has no TrainingRuntime")
    runtime = copy.deepcopy(dict(runtimes[0]))
    runtime["metadata"] = {**(runtime.get("metadata") or {}), "namespace": namespace}
    if backoff_limit is None:
        return runtime
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        if replicated_job is None or job.get("name") == replicated_job:
            job.setdefault("template", {}).setdefault("spec", {})["backoffLimit"] = backoff_limit
    return runtime


def _exit_code_patch(code: int) -> dict[str, Any]:
    """A runtime patch that stamps the launcher's pods with the exit code the player must give them."""
    pod_template = {"metadata": {"annotations": {EXIT_CODE: str(code)}}}
    launcher = {"name": "launcher", "template": {"spec": {"template": pod_template}}}
    return {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [launcher]}}}}


def trainjob_of(
    workflow: Mapping[str, Any],
    name: str,
    *,
    namespace: str,
    num_nodes: int | None = None,
    launcher_exit_code: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A TrainJob named ``name`` from the Workflow's template, with ``numNodes`` and the launcher's
    exit code overridable."""
    template = (((workflow.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}).get("workload") or {}
    if not isinstance(template.get("trainJob"), Mapping):
        raise RenderShapeError("spec.jobTemplate.spec.workload.trainJob is missing")
    spec = copy.deepcopy(dict(template["trainJob"]))
    if num_nodes is not None:
        spec.setdefault("trainer", {})["numNodes"] = num_nodes
    if launcher_exit_code is not None:
        spec.setdefault("runtimePatches", []).append(_exit_code_patch(launcher_exit_code))
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    return {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": metadata, "spec": spec}
