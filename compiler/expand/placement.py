"""Where a Job's pods may run: the required node affinity and the tolerations, as runtime patches.

A TrainJob has no pod template of its own, so placement reaches the pods through a
``runtimePatches`` entry owned by the vocabulary's ``CONTROLLER_MANAGER``, applied to every
replicated job of the runtime (workers and launcher alike):

* required node affinity with one term (terms OR, expressions AND): ``kubernetes.io/hostname In
  <group nodes>`` (Pinned; Unpinned only when the target lists nodeNames), each target
  nodeSelector pair as ``In [value]`` (keys sorted), the target's matchExpressions, and
  ``nvidia.com/gpu.product In <products discovery kept>``; exact duplicates are dropped;
* one toleration per taint selector (``Equal`` with the value, ``Exists`` without; the effect when
  given); without taint selectors, a Pinned MPI workload (it has a ``launcher``) tolerates every
  taint, since its nodes were chosen by name.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..merge import merge
from ..vocabulary import CONTROLLER_MANAGER

__all__ = [
    "GPU_PRODUCT_LABEL",
    "HOSTNAME_LABEL",
    "add_controller_patch",
    "node_affinity",
    "replicated_job_names",
    "tolerations",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
LAUNCHER = "launcher"


def node_affinity(hostnames: Sequence[str], target: Mapping[str, Any], products: Sequence[str]) -> dict[str, Any] | None:
    """The pod affinity, or ``None`` when nothing constrains the nodes."""
    requirements: list[dict[str, Any]] = []
    if hostnames:
        requirements.append({"key": HOSTNAME_LABEL, "operator": "In", "values": list(hostnames)})
    selector = target.get("nodeSelector") or {}
    for key in sorted(selector):
        requirements.append({"key": key, "operator": "In", "values": [selector[key]]})
    for expression in target.get("matchExpressions") or []:
        requirement = {"key": expression["key"], "operator": expression["operator"]}
        if expression.get("values"):
            requirement["values"] = list(expression["values"])
        requirements.append(requirement)
    wanted = sorted({p for p in products if p})
    if wanted:
        requirements.append({"key": GPU_PRODUCT_LABEL, "operator": "In", "values": wanted})
    unique: list[dict[str, Any]] = []
    seen: set[str] = set()
    for requirement in requirements:
        key = json.dumps(requirement, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(requirement)
    if not unique:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": unique}]}}}


def tolerations(target: Mapping[str, Any], *, pinned: bool, mpi: bool) -> list[dict[str, Any]]:
    selectors = target.get("taintSelectors") or []
    out: list[dict[str, Any]] = []
    for selector in selectors:
        item: dict[str, Any] = {"key": selector["key"]}
        if selector.get("value"):
            item.update(operator="Equal", value=selector["value"])
        else:
            item["operator"] = "Exists"
        if selector.get("effect"):
            item["effect"] = selector["effect"]
        out.append(item)
    if not selectors and pinned and mpi:
        out.append({"operator": "Exists"})
    return out


def replicated_job_names(train_job: Mapping[str, Any], dependencies: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The replicated jobs of the runtime the TrainJob refers to.

    Read from the TrainingRuntime among the dependencies when it is there; otherwise from the
    TrainJob's own runtime patches; ``node`` when neither says.
    """
    ref = train_job.get("runtimeRef") or {}
    wanted = str(ref.get("name") or "")
    runtimes = [d for d in dependencies if d.get("kind") == ref.get("kind")]
    # The runtime itself, else the one a per-Job copy (``<name>-<suffix>``) was made from.
    exact = [d for d in runtimes if (d.get("metadata") or {}).get("name") == wanted]
    copied = [d for d in runtimes if wanted.startswith(f"{(d.get('metadata') or {}).get('name')}-")]
    for dep in exact + copied:
        jobs = (((dep.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
        names = tuple(j["name"] for j in jobs if isinstance(j, Mapping) and j.get("name"))
        if names:
            return names
    found: list[str] = []
    for patch in train_job.get("runtimePatches") or []:
        for job in (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs") or []:
            if job.get("name") and job["name"] not in found:
                found.append(job["name"])
    return tuple(found) or ("node",)


def is_mpi(names: Sequence[str]) -> bool:
    return LAUNCHER in names


def add_controller_patch(train_job: Mapping[str, Any], per_job: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of ``train_job`` with ``per_job`` (replicated job -> pod template patch) merged into our patch entry."""
    out = copy.deepcopy(dict(train_job))
    patch = {
        "manager": CONTROLLER_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": name, "template": {"spec": {"template": copy.deepcopy(dict(pod))}}} for name, pod in per_job.items()
                    ]
                }
            }
        },
    }
    entries = list(out.get("runtimePatches") or [])
    for index, entry in enumerate(entries):
        if isinstance(entry, Mapping) and entry.get("manager") == CONTROLLER_MANAGER:
            entries[index] = merge(entry, patch)
            break
    else:
        entries.append(patch)
    out["runtimePatches"] = entries
    return out
