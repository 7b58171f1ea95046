"""Validator: the build rules a WorkloadRun spec must meet before it can become a Workflow.

The API schema accepts each field on its own; these rules are about how the fields combine
with what the renderer adds. Each failure is an error at the field the user would change, and
the pass never changes the unit:

* ``BuildFailed``: a volume or mount reuses a built-in volume name or mount path (``dshm``,
  ``/dev/shm``, ``config-volume``, ``/config``, ``checkpoint`` with ``spec.checkpoint``, and on
  MPI ``mpi-ssh-auth`` and ``mpi-hostfile``), or an init container takes the worker
  container's name ``node``; the message names the entry (``workloadrun/mpi``) and the path.
* user volumes, mounts and init containers are unique, and every mount names a volume the
  worker pod has;
* ``spec.config.inline`` keys are valid ConfigMap keys (each becomes a file under ``/config``);
* thresholds need the measurement that produces their metrics, and one plugin must judge all
  of them;
* MPI: the command line is Open MPI's (other implementations are refused), and ``spec.env``
  cannot be forwarded when the binary's own arguments hold ``-x``: ``-x`` pairs are found by
  scanning the whole command line, so the variables would land among the binary's arguments.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Mapping

from ..diagnostics import Diagnostic, error
from ..mpi_args import FORWARD_FLAG
from ..unit import Context, Unit
from ..workflow_paths import keyed
from .instantiate_workloadrun import (
    BANDWIDTH_METRICS,
    GOODPUT_METRICS,
    WORKER_CONTAINER,
    builtin_volumes,
    validation_plugin,
)

__all__ = ["check_workloadrun", "CONFIG_KEY"]

CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MAX_CONFIG_KEY = 253
BUILD_FAILED = "BuildFailed"


def check_workloadrun(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    spec = ctx.spec
    problems = _builtin_reuse(spec, ctx)
    problems += _user_pod_parts(spec, ctx)
    problems += _config_keys(spec)
    problems += _thresholds(spec)
    if ctx.entry.variant == "mpi":
        problems += _mpi(spec, ctx)
    return unit, problems


def _normal_path(path: Any) -> Any:
    return posixpath.normpath(path) if isinstance(path, str) and path.startswith("/") else path


def _builtin_reuse(spec: Mapping[str, Any], ctx: Context) -> list[Diagnostic]:
    builtins = builtin_volumes(spec, ctx.entry.variant)
    by_name = {b.name: b for b in builtins}
    by_path = {b.mount_path: b for b in builtins if b.mount_path}
    key = ctx.entry.key
    problems: list[Diagnostic] = []

    def name_clash(path: str, name: Any) -> None:
        if name in by_name:
            b = by_name[name]
            problems.append(
                error(
                    BUILD_FAILED,
                    path,
                    f"{key}: {path}: {name!r} is the name of a built-in volume ({b.what}); choose another name",
                )
            )

    for index, volume in enumerate(spec.get("volumes") or []):
        name_clash(f"spec.volumes[{index}].name", volume.get("name"))
    for index, mount in enumerate(spec.get("volumeMounts") or []):
        name_clash(f"spec.volumeMounts[{index}].name", mount.get("name"))
        where = f"spec.volumeMounts[{index}].mountPath"
        b = by_path.get(_normal_path(mount.get("mountPath")))
        if b is not None:
            problems.append(
                error(
                    BUILD_FAILED,
                    where,
                    f"{key}: {where}: {mount.get('mountPath')!r} is where the built-in volume {b.name!r} "
                    f"({b.what}) is mounted; mount it somewhere else",
                )
            )
    for index, init in enumerate(spec.get("initContainers") or []):
        where = f"spec.initContainers[{index}].name"
        if init.get("name") == WORKER_CONTAINER:
            problems.append(
                error(
                    BUILD_FAILED,
                    where,
                    f"{key}: {where}: {WORKER_CONTAINER!r} is the name of the worker container; choose another name",
                )
            )
    return problems


def _duplicates(items: list[Any], field: str, base: str, what: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    first: dict[Any, int] = {}
    for index, item in enumerate(items):
        value = _normal_path(item.get(field)) if isinstance(item, dict) else None
        if value is None:
            continue
        if value in first:
            problems.append(
                error(
                    "DuplicateName" if field == "name" else "DuplicateMountPath",
                    f"{base}[{index}].{field}",
                    f"{what} {item.get(field)!r} is already used by {base}[{first[value]}]",
                )
            )
        else:
            first[value] = index
    return problems


def _user_pod_parts(spec: Mapping[str, Any], ctx: Context) -> list[Diagnostic]:
    volumes = list(spec.get("volumes") or [])
    mounts = list(spec.get("volumeMounts") or [])
    inits = list(spec.get("initContainers") or [])
    problems = _duplicates(volumes, "name", "spec.volumes", "volume name")
    problems += _duplicates(mounts, "mountPath", "spec.volumeMounts", "mount path")
    problems += _duplicates(inits, "name", "spec.initContainers", "init container name")

    user_volumes = {v.get("name") for v in volumes}
    # Init containers may also read the built-in volumes the pod really has.
    pod_volumes = user_volumes | {"dshm"}
    if spec.get("config"):
        pod_volumes.add("config-volume")
    if spec.get("checkpoint"):
        pod_volumes.add("checkpoint")
    for index, mount in enumerate(mounts):
        name = mount.get("name")
        if name not in user_volumes and not any(b.name == name for b in builtin_volumes(spec, ctx.entry.variant)):
            problems.append(
                error(
                    "UndefinedVolumeMount",
                    f"spec.volumeMounts[{index}].name",
                    f"volume {name!r} is not in spec.volumes",
                )
            )
    for index, init in enumerate(inits):
        for m, mount in enumerate(init.get("volumeMounts") or []):
            name = mount.get("name") if isinstance(mount, dict) else None
            if name not in pod_volumes:
                problems.append(
                    error(
                        "UndefinedVolumeMount",
                        f"spec.initContainers[{index}].volumeMounts[{m}].name",
                        f"volume {name!r} is neither in spec.volumes nor one of the worker pod's own volumes",
                    )
                )
    return problems


def _config_keys(spec: Mapping[str, Any]) -> list[Diagnostic]:
    inline = (spec.get("config") or {}).get("inline")
    if not isinstance(inline, dict):
        return []
    problems: list[Diagnostic] = []
    for name in inline:
        if not CONFIG_KEY.match(name) or len(name) > MAX_CONFIG_KEY or name in (".", ".."):
            problems.append(
                error(
                    "ConfigKeyInvalid",
                    keyed("spec.config.inline", name),
                    f"{name!r} cannot name a file under /config: use at most {MAX_CONFIG_KEY} letters, digits, "
                    "'-', '_' or '.' (and not '.' or '..')",
                )
            )
    return problems


def _thresholds(spec: Mapping[str, Any]) -> list[Diagnostic]:
    thresholds = spec.get("thresholds") or {}
    if not thresholds:
        return []
    problems: list[Diagnostic] = []
    for metric in sorted(thresholds):
        needs = "bandwidthMeasurement" if metric in BANDWIDTH_METRICS else "goodputMeasurement" if metric in GOODPUT_METRICS else None
        if needs is not None and not spec.get(needs):
            problems.append(
                error(
                    "ThresholdWithoutMeasurement",
                    keyed("spec.thresholds", metric),
                    f"threshold {metric} is judged on a measurement, but spec.{needs} is not set",
                )
            )
    if not problems and validation_plugin(thresholds) is None:
        problems.append(
            error(
                "ThresholdsMixed",
                "spec.thresholds",
                "thresholds mix bandwidth metrics ("
                + ", ".join(sorted(BANDWIDTH_METRICS))
                + ") and goodput metrics ("
                + ", ".join(sorted(GOODPUT_METRICS))
                + "); one validation plugin judges a run, so keep one kind",
            )
        )
    return problems


def _mpi(spec: Mapping[str, Any], ctx: Context) -> list[Diagnostic]:
    mpi = spec["framework"]["mpi"]
    problems: list[Diagnostic] = []
    implementation = mpi.get("mpiImplementation") or "OpenMPI"
    if implementation != "OpenMPI":
        problems.append(
            error(
                "MPIImplementationUnsupported",
                "spec.framework.mpi.mpiImplementation",
                f"{ctx.entry.key}: the launcher runs an Open MPI command line (--allow-run-as-root, --mca, -x), "
                f"so mpiImplementation {implementation!r} is not supported; use OpenMPI",
            )
        )
    # Refused whether or not spec.env is set: platform overlays forward variables too.
    for index, arg in enumerate(mpi.get("args") or []):
        if arg == FORWARD_FLAG:
            problems.append(
                error(
                    "MPIEnvAmbiguous",
                    f"spec.framework.mpi.args[{index}]",
                    f"{ctx.entry.key}: the binary's arguments hold {FORWARD_FLAG}, and mpirun's {FORWARD_FLAG} "
                    "pairs are found by scanning the whole command line, so variables forwarded to the ranks "
                    "(spec.env and the platform's NCCL settings) would land among the binary's arguments; "
                    "spell that argument another way",
                )
            )
            break
    return problems
