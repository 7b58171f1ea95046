"""Read what planning and diagnose need out of a Workflow as the API server returns it (a plain dict).

The accessors check the shape of every field they read and raise :class:`CompileError` with the
field path when something is not what the Workflow API allows, so a hand-written Workflow with a
typo fails with a clear message instead of a ``KeyError``.

It sits below both :mod:`nvcre.compiler.plan` and :mod:`nvcre.compiler.diagnose`, which read it,
so neither package has to import the other to learn what a Workflow asks for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from .diagnostics import CompileError, error
from .facts import parse_quantity

__all__ = ["GPU_RESOURCE", "UNSCHEDULABLE_TAINT", "Placement", "WorkflowSpecView", "read_workflow", "workload_gpus_per_node"]

Placement = Literal["Pinned", "Unpinned"]

GPU_RESOURCE = "nvidia.com/gpu"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class WorkflowSpecView:
    """The planning-relevant parts of one Workflow, already checked."""

    name: str
    target: Mapping[str, Any]
    placement: Placement
    #: ``trainer.numNodes`` of the job template; 0 when unset
    requested_nodes_per_job: int
    topology_key: str
    strict_domain: bool
    diagnose: Mapping[str, Any] | None
    iterations: int
    gpus_per_node: int
    mnnvl_enabled: bool

    @property
    def selects_cordoned(self) -> bool:
        """The target opts cordoned nodes in (and so clears the default health monitor)."""
        return any(sel.get("key") == UNSCHEDULABLE_TAINT for sel in self.target.get("taintSelectors") or [])


def _bad(path: str, message: str) -> CompileError:
    return CompileError([error("InvalidWorkflow", path, message)])


def _mapping(parent: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        if required:
            raise _bad(path, "required")
        return {}
    if not isinstance(value, Mapping):
        raise _bad(path, f"expected a mapping, found {type(value).__name__}")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, f"expected an integer, found {value!r}")
    return value


def read_workflow(workflow: Mapping[str, Any]) -> WorkflowSpecView:
    """Check and read a Workflow dict; raise CompileError naming the first malformed field."""
    if not isinstance(workflow, Mapping):
        raise _bad("", f"expected a Workflow object, found {type(workflow).__name__}")
    if workflow.get("kind") not in (None, "Workflow"):
        raise _bad("kind", f"expected a Workflow, got {workflow.get('kind')!r}")
    metadata = _mapping(workflow, "metadata", "metadata", required=True)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise _bad("metadata.name", "a Workflow needs a name")
    spec = _mapping(workflow, "spec", "spec", required=True)
    overrides = spec.get("overrides")
    if overrides is not None and (not isinstance(overrides, list) or not all(isinstance(o, Mapping) for o in overrides)):
        raise _bad("spec.overrides", "expected a list of overrides")
    orchestration = _mapping(spec, "orchestration", "spec.orchestration")
    target = _mapping(orchestration, "target", "spec.orchestration.target")
    job_spec = _mapping(_mapping(spec, "jobTemplate", "spec.jobTemplate", required=True), "spec", "spec.jobTemplate.spec", required=True)
    workload = _mapping(job_spec, "workload", "spec.jobTemplate.spec.workload", required=True)
    train_job = _mapping(workload, "trainJob", "spec.jobTemplate.spec.workload.trainJob", required=True)
    trainer = _mapping(train_job, "trainer", "spec.jobTemplate.spec.workload.trainJob.trainer")
    num_nodes = trainer.get("numNodes")
    requested = 0 if num_nodes is None else _int(num_nodes, "spec.jobTemplate.spec.workload.trainJob.trainer.numNodes")

    placement_value = orchestration.get("placement") or "Pinned"
    if placement_value not in ("Pinned", "Unpinned"):
        raise _bad("spec.orchestration.placement", f"must be Pinned or Unpinned, got {placement_value!r}")
    placement: Placement = "Unpinned" if placement_value == "Unpinned" else "Pinned"

    topology = _mapping(orchestration, "topology", "spec.orchestration.topology")
    topology_key = topology.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise _bad("spec.orchestration.topology.topologyKey", "expected a label key")
    diagnose = orchestration.get("diagnose")
    if diagnose is not None and not isinstance(diagnose, Mapping):
        raise _bad("spec.orchestration.diagnose", "expected a mapping")
    iterations_value = orchestration.get("iterations")
    iterations = 1 if iterations_value is None else max(_int(iterations_value, "spec.orchestration.iterations"), 1)

    return WorkflowSpecView(
        name=name,
        target=target,
        placement=placement,
        requested_nodes_per_job=requested,
        topology_key=topology_key,
        strict_domain=bool(topology.get("strictDomain")),
        diagnose=diagnose,
        iterations=iterations,
        gpus_per_node=workload_gpus_per_node(job_spec, spec.get("dependencies") or []),
        mnnvl_enabled=_mnnvl_enabled(trainer),
    )


def _resource_maps(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every ``requests``/``limits``/``resourcesPerNode`` style mapping anywhere under ``value``."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in ("requests", "limits") and isinstance(item, Mapping):
                yield item
            yield from _resource_maps(item)
    elif isinstance(value, list):
        for item in value:
            yield from _resource_maps(item)


def workload_gpus_per_node(job_spec: Mapping[str, Any], dependencies: Any) -> int:
    """The largest whole ``nvidia.com/gpu`` request or limit in the job template and dependencies."""
    best = Fraction(0)
    for resources in (*_resource_maps(job_spec), *_resource_maps(dependencies)):
        raw = resources.get(GPU_RESOURCE)
        if raw is None:
            continue
        try:
            amount = parse_quantity(raw)
        except ValueError:
            continue
        best = max(best, amount)
    return int(best)


def _mnnvl_enabled(trainer: Mapping[str, Any]) -> bool:
    """``NCCL_MNNVL_ENABLE`` forwarded or set to anything but 0 in the trainer's args or env."""
    args = [a for a in trainer.get("args") or [] if isinstance(a, str)]
    for arg in args:
        if arg.startswith("NCCL_MNNVL_ENABLE="):
            return arg.split("=", 1)[1] != "0"
    for item in trainer.get("env") or []:
        if isinstance(item, Mapping) and item.get("name") == "NCCL_MNNVL_ENABLE":
            return str(item.get("value", "")) != "0"
    return False
