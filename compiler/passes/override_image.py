"""Replace the workload image with the user's ``image`` option.

The option (category value winning over the global one, already resolved) replaces
``trainer.image`` and, in every replicated job of the runtime the TrainJob runs, the primary
container's image. Init containers that ran the primary's image before the override follow it
(``fix-ssh-permissions``, ``megatron-clone``, ``wait-for-workers``); init containers with an
image of their own (GCP's ``tcpxo-daemon``) and any further containers keep theirs. No image
set leaves the unit untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..datacopy import plain_copy
from ..diagnostics import Diagnostic
from ..unit import Context, Unit
from ..workflow_paths import find_runtime, replicated_jobs, trainer

__all__ = ["override_image"]


def override_image(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    image = unit.options.get("image")
    if not image or unit.workflow is None:
        return unit, []
    workflow = plain_copy(dict(unit.workflow))
    spec = trainer(workflow)
    if spec is not None:
        spec.value["image"] = image
    runtime = find_runtime(workflow).runtime
    for job in replicated_jobs(runtime) if runtime is not None else []:
        _override_pod(job.pod_spec(), image)
    return replace(unit, workflow=workflow), []


def _override_pod(pod_spec: dict[str, Any] | None, image: str) -> None:
    if not pod_spec or not pod_spec.get("containers"):
        return
    primary = pod_spec["containers"][0]
    if not isinstance(primary, dict):
        return
    before = primary.get("image")
    primary["image"] = image
    if before is None:
        return
    for init in pod_spec.get("initContainers") or []:
        if isinstance(init, dict) and init.get("image") == before:
            init["image"] = image
