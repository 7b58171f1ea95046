"""Pass: render a WorkloadRun into its one Workflow manifest.

The framework's template (``catalog/_lib/workloadrun/<framework>.yaml.j2``) lays out the
Workflow ``spec``; this module decides the pieces that combine built-in and user input, so the
templates only place them:

* the worker pod: the built-in volumes (``dshm`` at ``/dev/shm`` always, ``config-volume`` at
  ``/config`` with ``spec.config``, ``checkpoint`` at ``/checkpoint`` with ``spec.checkpoint``,
  and on MPI the mount of Kubeflow's SSH key volume) first, then ``spec.volumes``,
  ``spec.volumeMounts`` and ``spec.initContainers`` as written;
* the MPI launcher: its SSH key mounts, plus ``/config`` read-only when ``spec.config`` is set;
* the worker container's resources: ``spec.resources``, plus ``nvidia.com/gpu`` = gpusPerNode
  in limits and requests unless ``spec.resources`` already sets it;
* dependency names: ``<workflow>-runtime``, ``<workflow>-config`` (inline config), ``<workflow>-pvc``;
* the validation plugin that judges ``spec.thresholds``.

``builtin_volumes`` is also what the build check compares user volumes against, so the names
and paths it reserves are exactly the ones rendered. The Workflow is named after the
WorkloadRun and labelled with it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

from ..diagnostics import CompileError, Diagnostic, warning
from ..naming import truncate_name
from ..templating import template_set
from ..unit import Context, Unit
from ..vocabulary import API_VERSION, LABEL_NVCRE_WORKLOAD_RUN, LABEL_WORKLOADRUN
from ..workflow_paths import keyed
from .instantiate_catalog import MANAGED_BY, template_values

__all__ = [
    "instantiate_workloadrun",
    "BuiltinVolume",
    "builtin_volumes",
    "resource_names",
    "worker_resources",
    "config_file_text",
    "validation_plugin",
    "framework_of",
    "WORKER_CONTAINER",
    "GPU_RESOURCE",
    "BANDWIDTH_METRICS",
    "GOODPUT_METRICS",
    "MAX_LABEL_VALUE",
]

MAX_LABEL_VALUE = 63
WORKER_CONTAINER = "node"
GPU_RESOURCE = "nvidia.com/gpu"
FRAMEWORKS = ("mpi", "torch", "exec")

#: threshold metrics and the measurement that produces them
BANDWIDTH_METRICS = frozenset({"busBandwidthGBps", "algBandwidthGBps"})
GOODPUT_METRICS = frozenset({"goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec"})
PLUGINS = {"bandwidth": "nccl-tests", "goodput": "nemo-training"}

SSH_RAW_PATH = "/tmp/mpi-ssh-raw"
SSH_DIR = "/root/.ssh"


@dataclass(frozen=True)
class BuiltinVolume:
    """A volume the rendered worker pod owns; ``mount_path`` is None when workers do not mount it."""

    name: str
    mount_path: str | None
    what: str


def framework_of(spec: Mapping[str, Any]) -> str:
    """``mpi``, ``torch`` or ``exec``: the one framework the (validated) spec sets."""
    framework = spec.get("framework") or {}
    return next(name for name in FRAMEWORKS if framework.get(name) is not None)


def builtin_volumes(spec: Mapping[str, Any], framework: str) -> tuple[BuiltinVolume, ...]:
    """The worker pod's own volumes: names and paths a WorkloadRun may not reuse."""
    volumes = [
        BuiltinVolume("dshm", "/dev/shm", "shared memory at /dev/shm"),
        BuiltinVolume("config-volume", "/config", "spec.config at /config"),
    ]
    if spec.get("checkpoint"):
        volumes.append(BuiltinVolume("checkpoint", "/checkpoint", "spec.checkpoint storage at /checkpoint"))
    if framework == "mpi":
        volumes.append(BuiltinVolume("mpi-ssh-auth", SSH_RAW_PATH, "the MPI SSH keys Kubeflow Trainer mounts at /tmp/mpi-ssh-raw"))
        volumes.append(BuiltinVolume("mpi-hostfile", None, "the MPI hostfile Kubeflow Trainer mounts"))
    return tuple(volumes)


def resource_names(source_name: str) -> dict[str, str]:
    """The Workflow name and the names of the objects it ships, all derived from it."""
    workflow = truncate_name(source_name)
    return {
        "workflow": workflow,
        "app": workflow,
        "runtime": f"{workflow}-runtime",
        "config": f"{workflow}-config",
        "pvc": f"{workflow}-pvc",
    }


def _quantity(value: Any) -> Any:
    """Quantities as strings (``8`` -> ``"8"``), the form the API server prints them in."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def worker_resources(resources: Mapping[str, Any] | None, gpus: int) -> dict[str, Any]:
    """``spec.resources`` with ``nvidia.com/gpu`` = ``gpus`` added unless it names the GPU itself."""
    user = dict(resources or {})
    sets_gpu = any(GPU_RESOURCE in (user.get(kind) or {}) for kind in ("limits", "requests"))
    out: dict[str, Any] = {}
    for kind in ("limits", "requests"):
        values = {name: _quantity(value) for name, value in (user.get(kind) or {}).items()}
        if not sets_gpu:
            values[GPU_RESOURCE] = str(gpus)
        if values:
            out[kind] = values
    if user.get("claims"):
        out["claims"] = copy.deepcopy(list(user["claims"]))
    return out


def config_file_text(value: Any) -> str:
    """One ``spec.config.inline`` value as the text of its file under ``/config``.

    Strings are written as they are; numbers and booleans as their YAML text; lists and maps as
    canonical JSON (sorted keys), so the same input always gives the same bytes.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def validation_plugin(thresholds: Mapping[str, Any]) -> str | None:
    """``nccl-tests`` for bandwidth metrics, ``nemo-training`` for goodput ones; None when mixed."""
    keys = set(thresholds)
    if keys and keys <= BANDWIDTH_METRICS:
        return PLUGINS["bandwidth"]
    if keys and keys <= GOODPUT_METRICS:
        return PLUGINS["goodput"]
    return None


def _framework_values(spec: Mapping[str, Any], framework: str) -> dict[str, Any]:
    """The framework block with every optional field present, so templates need no guards."""
    given = dict(spec["framework"][framework])
    if framework == "mpi":
        return {
            "binary": given["binary"],
            "mpirunPath": given["mpirunPath"],
            "mpiImplementation": given.get("mpiImplementation") or "OpenMPI",
            "mpiArgs": list(given.get("mpiArgs") or []),
            "args": list(given.get("args") or []),
        }
    if framework == "torch":
        return {"script": given.get("script"), "module": given.get("module"), "args": list(given.get("args") or [])}
    return {"command": list(given["command"]), "args": list(given.get("args") or [])}


def _config(spec: Mapping[str, Any], names: Mapping[str, str]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(ConfigMap to ship or None, the config-volume or None)."""
    config = spec.get("config") or {}
    if config.get("inline") is not None:
        data = {key: config_file_text(value) for key, value in config["inline"].items()}
        volume = {"name": "config-volume", "configMap": {"name": names["config"]}}
        return {"name": names["config"], "data": data}, volume
    if config.get("configMapRef"):
        return None, {"name": "config-volume", "configMap": {"name": config["configMapRef"]["name"]}}
    return None, None


def _pod_parts(spec: Mapping[str, Any], framework: str, names: Mapping[str, str]) -> dict[str, Any]:
    """Worker and launcher volumes and mounts: built-ins first, then the user's, in order."""
    _, config_volume = _config(spec, names)
    config_mount = {"name": "config-volume", "mountPath": "/config", "readOnly": True}
    worker_mounts: list[dict[str, Any]] = []
    worker_volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if framework == "mpi":
        worker_mounts.append({"name": "mpi-ssh-auth", "mountPath": SSH_RAW_PATH, "readOnly": True})
    worker_mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    if config_volume is not None:
        worker_mounts.append(dict(config_mount))
        worker_volumes.append(config_volume)
    if spec.get("checkpoint"):
        worker_mounts.append({"name": "checkpoint", "mountPath": "/checkpoint"})
        worker_volumes.append({"name": "checkpoint", "persistentVolumeClaim": {"claimName": names["pvc"]}})
    worker_mounts += copy.deepcopy(list(spec.get("volumeMounts") or []))
    worker_volumes += copy.deepcopy(list(spec.get("volumes") or []))

    ssh_mounts = [
        {"name": "mpi-ssh-auth", "mountPath": SSH_RAW_PATH, "readOnly": True},
        {"name": "ssh-keys", "mountPath": SSH_DIR},
    ]
    launcher_mounts = [*ssh_mounts] + ([dict(config_mount)] if config_volume is not None else [])
    launcher_volumes = [{"name": "ssh-keys", "emptyDir": {}}] + ([copy.deepcopy(config_volume)] if config_volume else [])
    return {
        "worker": {
            "mounts": worker_mounts,
            "volumes": worker_volumes,
            "initContainers": copy.deepcopy(list(spec.get("initContainers") or [])),
        },
        "launcher": {"mounts": launcher_mounts, "volumes": launcher_volumes, "sshMounts": ssh_mounts},
    }


def _gpu_mismatch(spec: Mapping[str, Any], gpus: int, ctx: Context) -> list[Diagnostic]:
    resources = spec.get("resources") or {}
    for kind in ("limits", "requests"):
        value = (resources.get(kind) or {}).get(GPU_RESOURCE)
        if value is not None and str(_quantity(value)) != str(gpus):
            return [
                warning(
                    "GPUCountMismatch",
                    keyed(f"spec.resources.{kind}", GPU_RESOURCE),
                    f"{ctx.entry.key}: the worker requests {value} {GPU_RESOURCE} but gpusPerNode is {gpus}; "
                    f"numProcPerNode follows gpusPerNode, so set both to the same count",
                )
            ]
    return []


def workloadrun_values(unit: Unit, ctx: Context) -> dict[str, Any]:
    """Everything a WorkloadRun template may read, by name (the catalog's values included)."""
    spec = ctx.spec
    framework = ctx.entry.variant
    names = resource_names(ctx.source_name)
    config_map, _ = _config(spec, names)
    checkpoint = None
    if unit.options.get("enableCheckpoint"):
        checkpoint = {
            "pvcName": names["pvc"],
            "storageSize": unit.options["storageSize"],
            "storageClassName": unit.options.get("storageClassName"),
            "maxRestarts": unit.options.get("maxRestarts"),
        }
    thresholds = unit.options.get("thresholds") or {}
    values = template_values(unit, ctx)
    values.update(
        names=names,
        image=spec["image"],
        run=_framework_values(spec, framework),
        resources=worker_resources(spec.get("resources"), int(unit.options["gpusPerNode"])),
        config_map=config_map,
        checkpoint=checkpoint,
        measurements={key: copy.deepcopy(spec[key]) for key in ("goodputMeasurement", "bandwidthMeasurement") if spec.get(key)},
        validation_plugin=validation_plugin(thresholds) if thresholds else None,
        overrides=copy.deepcopy(list(spec.get("overrides") or [])),
        **_pod_parts(spec, framework, names),
    )
    return values


def instantiate_workloadrun(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    entry = ctx.catalog.lookup(ctx.entry.domain, ctx.entry.variant)
    templates = template_set(str(ctx.catalog.root), str(ctx.overlays.root))
    values = workloadrun_values(unit, ctx)
    try:
        spec = templates.render_yaml(entry.template, values, ctx.path)
    except CompileError as exc:
        return unit, exc.diagnostics
    metadata = {
        "name": values["names"]["workflow"],
        "labels": {
            "app.kubernetes.io/managed-by": MANAGED_BY,
            LABEL_WORKLOADRUN: truncate_name(ctx.source_name, MAX_LABEL_VALUE),
            LABEL_NVCRE_WORKLOAD_RUN: truncate_name(ctx.source_name, MAX_LABEL_VALUE),
        },
    }
    workflow = {"apiVersion": API_VERSION, "kind": "Workflow", "metadata": metadata, "spec": spec}
    diags = _gpu_mismatch(ctx.spec, int(unit.options["gpusPerNode"]), ctx)
    return replace(unit, workflow=workflow).with_provenance({"decision": "framework", "value": entry.key}), diags
