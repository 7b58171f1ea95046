"""Turn a rendered Workflow into the objects a test submits to the simulated cluster.

A category Workflow carries its TrainingRuntime as a dependency and a TrainJob
template in ``spec.jobTemplate.spec.workload.trainJob``. Until the nvcre controller
does it, tests use these helpers to create the runtime and a TrainJob from them,
with the few knobs a scenario needs (node count, a fast-failing launcher, a forced
exit code). Pure functions: they return new dicts and never change their input.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .simstages import EXIT_CODE

TRAINER_API = "trainer.kubeflow.org/v1alpha1"


class RenderShapeError(ValueError):
    """The Workflow lacks the TrainingRuntime or the TrainJob template."""


def runtime_of(
    workflow: Mapping[str, Any],
    *,
    namespace: str,
    backoff_limit: int | None = None,
    replicated_job: str | None = None,
) -> dict[str, Any]:
    """The Workflow's TrainingRuntime dependency, namespaced.

    ``backoff_limit`` sets the Jobs' ``backoffLimit`` (only ``replicated_job``'s when
    given): 0 makes a failing launcher fail its JobSet at once instead of retrying.
    """
    for dep in (workflow.get("spec") or {}).get("dependencies") or []:
        if dep.get("kind") == "TrainingRuntime":
            runtime = copy.deepcopy(dict(dep))
            runtime["metadata"] = {**runtime.get("metadata", {}), "namespace": namespace}
            if backoff_limit is not None:
                for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
                    if replicated_job is not None and rj.get("name") != replicated_job:
                        continue
                    rj.setdefault("template", {}).setdefault("spec", {})["backoffLimit"] = backoff_limit
            return runtime
    raise RenderShapeError("spec.dependencies has no TrainingRuntime")


def trainjob_of(
    workflow: Mapping[str, Any],
    name: str,
    *,
    namespace: str,
    num_nodes: int | None = None,
    launcher_exit_code: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A TrainJob from the Workflow's job template (``numNodes`` overridable)."""
    try:
        template = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]
    except (KeyError, TypeError):
        raise RenderShapeError("spec.jobTemplate.spec.workload.trainJob is missing") from None
    spec = copy.deepcopy(dict(template))
    if num_nodes is not None:
        spec.setdefault("trainer", {})["numNodes"] = num_nodes
    if launcher_exit_code is not None:
        spec.setdefault("runtimePatches", []).append(
            {
                "manager": "sim.nvcre.io/test",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "launcher",
                                    "template": {"spec": {"template": {"metadata": {"annotations": {EXIT_CODE: str(launcher_exit_code)}}}}},
                                }
                            ]
                        }
                    }
                },
            }
        )
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
    }
