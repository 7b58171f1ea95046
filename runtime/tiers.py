"""The table of reconcile tiers: what each reconciles, what wakes it, what it reads, who builds it.

One row per tier, and the one place that names them. A row says, in controller-runtime's
builder words, which resource the tier reconciles (``For``, with the filter its own events pass),
which resources it owns (:class:`~.watches.Owns`: their events wake it through their controller
reference), which other resources wake it (:class:`~.watches.Watch`, with a pure map function
from :mod:`.watches`), which caches it reads without being woken by them, and how its reconcile
function is built. The controller derives everything tier-shaped from this table alone: the work
queues and their workers, one informer per resource the rows name, one event handler per
resource that routes each event through every row watching it, the keys queued when leadership
starts, and the reconcilers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from nvcre.compiler.vocabulary import LABEL_JOB

from .judge.pods import JOBSET_NAME_LABEL
from .kube.informers import Indexer, pod_node
from .kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    CERTIFICATIONS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    LOGPROFILES,
    NODES,
    PODS,
    RESOURCE_SLICES,
    TRAINJOBS,
    WORKFLOWS,
    WORKLOADRUNS,
    Resource,
)
from .reconcile.certification import CertificationReconciler
from .reconcile.context import Context, Result
from .reconcile.job import JobReconciler
from .reconcile.measurement import MeasurementReconciler
from .reconcile.workflow import WorkflowReconciler
from .reconcile.workloadrun import WorkloadRunReconciler
from .watches import (
    Filter,
    Owns,
    Watch,
    always,
    job_of_measurement,
    jobs_of_pod,
    jobs_on_node,
    measurement_of,
    more_than_status,
    node_changed,
    own_key,
    owner_may_care,
    pod_changed,
    pod_phase_changed,
    waiting_runs,
)

__all__ = [
    "CACHES",
    "TABLE",
    "TIERS",
    "Cache",
    "Reconcile",
    "Route",
    "Shared",
    "Tier",
    "informed",
    "reconcilers",
    "routes",
    "tier_named",
]

Reconcile = Callable[[str, str], Result]
T = TypeVar("T")


class Shared:
    """The reconcilers that serve more than one row, made once per context: the Workflow tier
    reads the Job tier's verdicts through the Job reconciler, and both measurement tiers share
    one reconciler (one log cursor per Job)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._made: dict[Callable[[Context], Any], Any] = {}

    def one(self, make: Callable[[Context], T]) -> T:
        if make not in self._made:
            self._made[make] = make(self.ctx)
        made: T = self._made[make]
        return made


@dataclass(frozen=True)
class Tier:
    """One reconciler and what wakes it.

    ``resource``: the objects whose keys it reconciles (``For``); ``own_events``: which events of
    those queue them. ``owns``: resources whose events wake the object of this tier that controls
    them. ``watches``: other resources whose events map to keys of this tier. ``reads``: caches
    the tier reads beyond those (never a reason to wake it). ``object_series``: the tier keeps
    per-object metric series (reconciles counted per object, dropped when the object goes).
    """

    name: str
    resource: Resource
    build: Callable[[Shared], Reconcile]
    own_events: Filter = always
    owns: tuple[Owns, ...] = ()
    watches: tuple[Watch, ...] = ()
    reads: tuple[Resource, ...] = ()
    object_series: bool = False

    def own(self) -> Watch:
        return Watch(self.resource, own_key, self.own_events)


@dataclass(frozen=True)
class Cache:
    """How one resource's informer cache is built where a plain store is not enough."""

    #: labels the store files objects by, per namespace (``Store.by_label``)
    labels: tuple[str, ...] = ()
    #: named indexes across namespaces (``Store.by_index``)
    indexers: tuple[tuple[str, Indexer], ...] = ()
    #: a cluster may not serve it; then the cache stays empty
    optional: bool = False


def _certifications(shared: Shared) -> Reconcile:
    return CertificationReconciler(shared.ctx).reconcile


def _workloadruns(shared: Shared) -> Reconcile:
    return WorkloadRunReconciler(shared.ctx).reconcile


def _workflows(shared: Shared) -> Reconcile:
    return WorkflowReconciler(shared.ctx, shared.one(JobReconciler)).reconcile


def _jobs(shared: Shared) -> Reconcile:
    return shared.one(JobReconciler).reconcile


def _bandwidth(shared: Shared) -> Reconcile:
    return shared.one(MeasurementReconciler).reconcile_bandwidth


def _goodput(shared: Shared) -> Reconcile:
    return shared.one(MeasurementReconciler).reconcile_goodput


def _measurement_tier(name: str, resource: Resource, build: Callable[[Shared], Reconcile]) -> Tier:
    """A measurement ``<job>-<name>``: woken by its Job's events, and by a pod of its Job that
    starts or ends (its log is what the measurement reads)."""
    return Tier(
        name,
        resource,
        build,
        watches=(
            Watch(JOBS, measurement_of(resource, name, own_key)),
            Watch(PODS, measurement_of(resource, name, jobs_of_pod), pod_phase_changed),
        ),
        reads=(LOGPROFILES,),
    )


TABLE: tuple[Tier, ...] = (
    Tier(
        "certification",
        CERTIFICATIONS,
        _certifications,
        owns=(Owns(WORKFLOWS),),
        watches=(Watch(NODES, waiting_runs(CERTIFICATIONS), node_changed),),
        reads=(RESOURCE_SLICES,),
    ),
    Tier(
        "workloadrun",
        WORKLOADRUNS,
        _workloadruns,
        owns=(Owns(WORKFLOWS),),
        watches=(Watch(NODES, waiting_runs(WORKLOADRUNS), node_changed),),
        reads=(RESOURCE_SLICES,),
    ),
    Tier(
        "workflow",
        WORKFLOWS,
        _workflows,
        own_events=more_than_status,
        # its Jobs; the measurements it owns outside diagnose; TrainJobs among its dependencies
        owns=(Owns(JOBS, owner_may_care), Owns(BANDWIDTH_MEASUREMENTS), Owns(GOODPUT_MEASUREMENTS), Owns(TRAINJOBS)),
        reads=(PODS, NODES, RESOURCE_SLICES),
    ),
    Tier(
        "job",
        JOBS,
        _jobs,
        owns=(Owns(TRAINJOBS), Owns(BANDWIDTH_MEASUREMENTS), Owns(GOODPUT_MEASUREMENTS)),
        watches=(
            Watch(BANDWIDTH_MEASUREMENTS, job_of_measurement),
            Watch(GOODPUT_MEASUREMENTS, job_of_measurement),
            Watch(PODS, jobs_of_pod, pod_changed),
            Watch(NODES, jobs_on_node, node_changed),
        ),
        reads=(WORKFLOWS,),
        object_series=True,
    ),
    _measurement_tier("bandwidth", BANDWIDTH_MEASUREMENTS, _bandwidth),
    _measurement_tier("goodput", GOODPUT_MEASUREMENTS, _goodput),
)
TIERS: tuple[str, ...] = tuple(tier.name for tier in TABLE)

#: Pods are filed by the labels that name their Job (the tiers' pod lookups) and by node (the
#: Node watch); ResourceSlices exist only where the cluster serves DRA.
CACHES: Mapping[str, Cache] = {
    PODS.plural: Cache(labels=(LABEL_JOB, JOBSET_NAME_LABEL), indexers=(("node", pod_node),)),
    RESOURCE_SLICES.plural: Cache(optional=True),
}


@dataclass(frozen=True)
class Route:
    """One way an event of a resource reaches a tier."""

    tier: str
    watch: Watch


def tier_named(name: str, table: tuple[Tier, ...] = TABLE) -> Tier:
    return next(tier for tier in table if tier.name == name)


def routes(table: tuple[Tier, ...] = TABLE) -> dict[str, tuple[Route, ...]]:
    """Per resource plural, the routes of its events: every row's ``For`` first, then every
    ``Owns``, then every ``Watch``, rows in table order. So an object is queued before its owner
    is woken, and both before what it wakes across tiers."""
    out: dict[str, list[Route]] = {}
    phases: tuple[Callable[[Tier], tuple[Watch, ...]], ...] = (
        lambda tier: (tier.own(),),
        lambda tier: tuple(owned.watch(tier.resource.kind) for owned in tier.owns),
        lambda tier: tier.watches,
    )
    for phase in phases:
        for tier in table:
            for watch in phase(tier):
                out.setdefault(watch.resource.plural, []).append(Route(tier.name, watch))
    return {plural: tuple(found) for plural, found in out.items()}


def informed(table: tuple[Tier, ...] = TABLE) -> tuple[Resource, ...]:
    """Every resource the rows name, once: what the controller keeps an informer of."""
    found: dict[str, Resource] = {}
    for tier in table:
        found.setdefault(tier.resource.plural, tier.resource)
    for tier in table:
        named = (*(owned.resource for owned in tier.owns), *(watch.resource for watch in tier.watches), *tier.reads)
        for resource in named:
            found.setdefault(resource.plural, resource)
    return tuple(found.values())


def reconcilers(ctx: Context, table: tuple[Tier, ...] = TABLE) -> dict[str, Reconcile]:
    """Each row's reconcile function, built over one shared context."""
    shared = Shared(ctx)
    return {tier.name: tier.build(shared) for tier in table}
