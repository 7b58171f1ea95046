"""A compact, reviewable projection of rendered Workflows: what a platform overlay can change.

For each Workflow: its name and category, the applied overlays, the trainer (image, command, args
with forwarded variables, env), orchestration topology, and per replicated job of the runtime:
tolerations, resource claims, annotations, and per container its image, env, resources,
security context and mounts; plus every dependency's kind and name. Scripts and unchanging
boilerplate are left out so a reviewer reads only what differs between platforms.
"""

from __future__ import annotations

import json
from typing import Any


def _env(env: list[dict] | None) -> list[str] | None:
    if not env:
        return None
    return [f"{e['name']}={e['value']}" if "value" in e else f"{e['name']} (from {sorted(e.get('valueFrom', {}))[0]})" for e in env]


def _container(container: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"image": container.get("image")}
    for key, value in (
        ("env", _env(container.get("env"))),
        ("resources", container.get("resources")),
        ("securityContext", container.get("securityContext")),
        ("volumeMounts", sorted(f"{m['name']}:{m['mountPath']}" for m in container.get("volumeMounts") or []) or None),
        ("restartPolicy", container.get("restartPolicy")),
    ):
        if value:
            out[key] = value
    return out


def _job(job: dict) -> dict[str, Any]:
    pod = job["template"]["spec"]["template"]
    spec = pod.get("spec", {})
    out: dict[str, Any] = {}
    for key, value in (
        ("annotations", (pod.get("metadata") or {}).get("annotations")),
        ("schedulerName", spec.get("schedulerName")),
        ("tolerations", spec.get("tolerations")),
        ("resourceClaims", spec.get("resourceClaims")),
        ("hostNetwork", spec.get("hostNetwork")),
        ("volumes", sorted(v["name"] for v in spec.get("volumes") or []) or None),
    ):
        if value:
            out[key] = value
    out["containers"] = {c["name"]: _container(c) for c in spec.get("containers") or []}
    inits = {c["name"]: _container(c) for c in spec.get("initContainers") or []}
    if inits:
        out["initContainers"] = inits
    return out


def project(workflow: dict) -> dict[str, Any]:
    spec = workflow["spec"]
    labels = workflow["metadata"]["labels"]
    trainer = spec["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]
    out: dict[str, Any] = {
        "name": workflow["metadata"]["name"],
        "category": f"{labels['nvcre.nvidia.com/category-domain']}/{labels['nvcre.nvidia.com/category-variant']}",
        "overlays": json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"]),
        "trainer": {k: trainer[k] for k in ("image", "command", "args", "numNodes", "numProcPerNode") if k in trainer},
        "dependencies": [f"{d['kind']}/{d['metadata']['name']}" for d in spec.get("dependencies") or []],
    }
    if trainer.get("env"):
        out["trainer"]["env"] = _env(trainer["env"])
    topology = {k: v for k, v in spec.get("orchestration", {}).items() if k in ("topology", "diagnose")}
    if topology:
        out["orchestration"] = topology
    for dep in spec.get("dependencies") or []:
        if dep["kind"] == "TrainingRuntime":
            out["runtime"] = {job["name"]: _job(job) for job in dep["spec"]["template"]["spec"]["replicatedJobs"]}
    return out
