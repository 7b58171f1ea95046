"""The value every compiler pass reads and returns, and the inputs every pass may consult.

A render lowers one category of a Certification (or one WorkloadRun) through a list of passes.
Each pass is a pure function ``(unit, ctx) -> (unit, diagnostics)``:

* ``Unit`` is the document being lowered. It starts as the category request, gains resolved
  options, then a Workflow manifest, and collects provenance on the way. Passes return a new
  Unit (``dataclasses.replace``) and never mutate the one they were given.
* ``Context`` holds the inputs that do not change while a unit is lowered: the Certification
  spec, the category's position, the catalog entry, the cluster facts as detected or supplied,
  and the overlay set. Nothing in it reads a clock, a random source or a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

__all__ = ["EntryInfo", "ClusterView", "GangSpec", "Context", "Unit"]


class EntryInfo(NamedTuple):
    """What the passes need to know about a catalog entry (the catalog holds the rest)."""

    domain: str
    variant: str
    #: how ranks start: ``mpi`` (launcher + sshd workers, env reaches ranks through ``-x``),
    #: ``torch`` (torchrun; env is trainer env), ``single`` (one process per node; trainer env)
    launch: str
    #: names of replicated jobs that run the workload on GPU nodes (pull secrets, tolerations...)
    node_jobs: tuple[str, ...] = ("node",)
    #: replicated job that runs mpirun, for MPI entries
    launcher_job: str | None = None

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"

    @property
    def forwards_env_with_mpi(self) -> bool:
        return self.launch == "mpi"


@dataclass(frozen=True)
class ClusterView:
    """The cluster facts a render depends on, each already decided (detected, supplied or defaulted)."""

    platform: str
    gpu_arch: str
    gpu_products: tuple[str, ...] = ()
    target_nodes: tuple[str, ...] = ()
    #: per fact name: {"value": ..., "source": "detected" | "supplied" | "defaulted"}
    provenance: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: platform specific detections (GKE networks, TCPXO profile, allocatable NIC resources...)
    extras: Mapping[str, Any] = field(default_factory=dict)
    #: the cluster facts and target Node objects, for per-category checks (None offline)
    facts: Any = field(default=None, repr=False, compare=False)
    nodes: tuple[Mapping[str, Any], ...] = field(default=(), repr=False, compare=False)


class GangSpec(NamedTuple):
    """``spec.gangScheduler`` with its defaults filled in."""

    scheduler_name: str
    queue: str = "default-queue"
    queue_label_key: str = "kai.scheduler/queue"

    @property
    def is_kai(self) -> bool:
        return self.scheduler_name == "kai-scheduler"

    def as_dict(self) -> dict[str, str]:
        return {"schedulerName": self.scheduler_name, "queue": self.queue, "queueLabelKey": self.queue_label_key}


@dataclass(frozen=True)
class Context:
    """Inputs shared by every pass for one unit."""

    #: kind of the source object: ``Certification`` or ``WorkloadRun``
    source_kind: str
    source_name: str
    #: the validated spec of the source object, in wire form (camelCase keys)
    spec: Mapping[str, Any]
    entry: EntryInfo
    cluster: ClusterView
    #: field path of the category in the source (``spec.categories[2]``) or ``spec``
    path: str
    category_index: int = 0
    gang: GangSpec | None = None
    #: the loaded catalog (``nvcre.compiler.catalog.Catalog``); entries, templates and GPU defaults
    catalog: Any = None
    #: the loaded overlay set (``nvcre.compiler.overlays.OverlaySet``)
    overlays: Any = None
    #: annotations of the source a diagnose Workflow carries on (the planner and the prior)
    diagnose_annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Unit:
    """The document being lowered: options first, then the Workflow manifest."""

    #: the category as written (``domain``, ``variant``, ``options``)
    category: Mapping[str, Any]
    #: resolved options in wire form; filled by the option and defaults passes
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the Workflow manifest, once the catalog entry has been instantiated
    workflow: Mapping[str, Any] | None = None
    #: ordered records of decisions that changed the output (applied overlays, defaults used...)
    provenance: tuple[Mapping[str, Any], ...] = ()

    def with_provenance(self, *records: Mapping[str, Any]) -> "Unit":
        from dataclasses import replace

        return replace(self, provenance=self.provenance + tuple(records))
