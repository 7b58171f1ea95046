"""Put the user's ``imagePullSecrets`` on every pod the workload runs.

Every replicated job of the runtime the TrainJob runs gets the secrets on its pod spec: the
node pods, and for MPI entries the launcher too, which pulls the same image. Secrets already
there stay first; the user's follow in the order given, each name once. No secrets leaves the
unit untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..datacopy import plain_copy
from ..diagnostics import Diagnostic, error
from ..unit import Context, Unit
from ..workflow_paths import find_runtime, option_path, replicated_jobs

__all__ = ["inject_pull_secrets", "merge_secret_refs"]


def inject_pull_secrets(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    secrets = unit.options.get("imagePullSecrets")
    if not secrets:
        return unit, []
    where = option_path(ctx, "imagePullSecrets")
    if not isinstance(secrets, list):
        return unit, [
            error(
                "ImagePullSecretInvalid",
                where,
                f"imagePullSecrets must be a list of {{name}}, got {type(secrets).__name__}",
            )
        ]
    problems = [
        error("ImagePullSecretInvalid", f"{where}[{index}].name", "every image pull secret needs a non-empty name")
        for index, secret in enumerate(secrets)
        if not isinstance(secret, dict) or not isinstance(secret.get("name"), str) or not secret["name"]
    ]
    if problems:
        return unit, problems
    if unit.workflow is None:
        return unit, []
    workflow = plain_copy(dict(unit.workflow))
    runtime = find_runtime(workflow).runtime
    for job in replicated_jobs(runtime) if runtime is not None else []:
        pod_spec = job.pod_spec(create=True)
        if pod_spec is not None:
            pod_spec["imagePullSecrets"] = merge_secret_refs(pod_spec.get("imagePullSecrets") or [], secrets)
    return replace(unit, workflow=workflow), []


def merge_secret_refs(existing: list[Any], added: list[dict[str, Any]]) -> list[Any]:
    """``existing`` in its order, then each added name not yet present, in the order given."""
    merged = list(existing)
    seen = {ref.get("name") for ref in merged if isinstance(ref, dict)}
    for ref in added:
        if ref["name"] not in seen:
            seen.add(ref["name"])
            merged.append({"name": ref["name"]})
    return merged
