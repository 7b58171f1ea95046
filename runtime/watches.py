"""What wakes a tier: watch declarations, their event filters and their pure map functions.

A tier's row in :mod:`.tiers` declares, as controller-runtime's builder does, the resource it
reconciles (``For``), the resources whose objects it controls (:class:`Owns`: an event of one wakes
the owner named by its controller reference, a moment later so a burst costs one visit), and any
other resource whose events concern it (:class:`Watch`: a map function from the event to keys).
Everything here is pure: a filter reads only the event; a map function reads the event and,
through a :data:`Lookup`, the informer caches, and returns ``(namespace, name)`` keys. Queueing
them is the controller's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from nvcre.compiler.vocabulary import LABEL_JOB

from .judge.pods import JOBSET_NAME_LABEL
from .kube.informers import Store
from .kube.resources import PODS, Resource

__all__ = [
    "OWNER_BATCH_SECONDS",
    "WORKLOAD_SUFFIX",
    "Event",
    "Filter",
    "Key",
    "Lookup",
    "MapFn",
    "Owns",
    "Watch",
    "always",
    "cached_keys",
    "controlled_by",
    "job_of_measurement",
    "jobs_of_pod",
    "jobs_on_node",
    "measurement_of",
    "more_than_status",
    "node_changed",
    "own_key",
    "owner_may_care",
    "pod_changed",
    "pod_phase_changed",
    "status_only_change",
    "waiting_runs",
]

#: An owner (Workflow, Certification...) is woken this long after an event of an object it owns,
#: so a burst of child events (250 Jobs changing state) costs one owner reconcile, not one each.
#: Owners poll on their own every ``poll_interval``; a second is small next to that.
OWNER_BATCH_SECONDS = 1.0
#: A Job's JobSet (and TrainJob) is named ``<job>-workload``; the MPI launcher pod carries only that.
WORKLOAD_SUFFIX = "-workload"

Key = tuple[str, str]
#: The informer cache of a resource, or None when the controller holds none.
Lookup = Callable[[Resource], "Store | None"]

_VOLATILE_META = ("resourceVersion", "managedFields")


class Event(NamedTuple):
    """One informer event: ADDED, MODIFIED or DELETED, the object, and the version it replaced."""

    type: str
    obj: Mapping[str, Any]
    old: Mapping[str, Any] | None = None


Filter = Callable[[Event], bool]
MapFn = Callable[[Event, Lookup], "list[Key]"]


def always(event: Event) -> bool:
    return True


@dataclass(frozen=True)
class Watch:
    """Events of ``resource`` that pass ``when`` wake the keys ``keys`` maps them to, queued
    after ``delay`` seconds (0: at once)."""

    resource: Resource
    keys: MapFn
    when: Filter = always
    delay: float = 0.0


@dataclass(frozen=True)
class Owns:
    """Events of ``resource`` that pass ``when`` wake the object of the declaring tier that
    controls them (its ``controller: true`` owner reference), after :data:`OWNER_BATCH_SECONDS`."""

    resource: Resource
    when: Filter = always

    def watch(self, owner_kind: str) -> Watch:
        return Watch(self.resource, controlled_by(owner_kind), self.when, OWNER_BATCH_SECONDS)


# ------------------------------------------------------------------ reading objects


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> Key:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _status(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("status") or {}


def _without_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in obj.items() if key != "status"}
    out["metadata"] = {key: value for key, value in _meta(obj).items() if key not in _VOLATILE_META}
    return out


def _node_view(node: Mapping[str, Any] | None) -> Any:
    """The parts of a Node whose change can matter to a run (not heartbeats)."""
    if not node:
        return None
    spec = node.get("spec") or {}
    status = _status(node)
    conditions = sorted((c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or [])
    return (_meta(node).get("labels"), spec.get("taints"), spec.get("unschedulable"), conditions, status.get("allocatable"))


def _pod_view(pod: Mapping[str, Any]) -> Any:
    """The parts of a Pod a Job reconcile reads: labels, node, deletion, status (not annotations)."""
    meta = _meta(pod)
    return (meta.get("labels"), (pod.get("spec") or {}).get("nodeName"), meta.get("deletionTimestamp"), pod.get("status"))


def _pod_jobs(pod: Mapping[str, Any]) -> list[Key]:
    """The Jobs a pod belongs to: the one its ``nvcre.nvidia.com/job`` label names, and the one
    whose JobSet (``<job>-workload``) made it; sorted by name."""
    meta = _meta(pod)
    labels = meta.get("labels") or {}
    jobs = {str(labels[LABEL_JOB])} if labels.get(LABEL_JOB) else set()
    jobset = str(labels.get(JOBSET_NAME_LABEL) or "")
    if jobset.endswith(WORKLOAD_SUFFIX):
        jobs.add(jobset[: -len(WORKLOAD_SUFFIX)])
    namespace = str(meta.get("namespace") or "")
    return [(namespace, job) for job in sorted(jobs)]


# ------------------------------------------------------------------ filters


def status_only_change(event: Event) -> bool:
    """An update that changed nothing but the status (and the resourceVersion)."""
    if event.type != "MODIFIED" or event.old is None:
        return False
    return _without_status(event.obj) == _without_status(event.old)


def more_than_status(event: Event) -> bool:
    """Anything but an update of the status alone.

    A Workflow's status is written only by its own reconciler, which always asks to come back
    (``requeue_after``) unless the Workflow is finished; the event of that write would only make
    it GET the Workflow again at once. Spec, label, finalizer and deletion changes still count.
    """
    return not status_only_change(event)


def owner_may_care(event: Event) -> bool:
    """Whether a Job event can change what its Workflow decides: anything but an update that
    left the status and the deletion mark alone (a finalizer added, a label written)."""
    if event.type != "MODIFIED" or event.old is None:
        return True
    deletion = _meta(event.obj).get("deletionTimestamp") != _meta(event.old).get("deletionTimestamp")
    return event.obj.get("status") != event.old.get("status") or deletion


def pod_changed(event: Event) -> bool:
    """Anything but an update that left what a Job reconcile reads of the pod alone."""
    return not (event.type == "MODIFIED" and event.old is not None and _pod_view(event.old) == _pod_view(event.obj))


def pod_phase_changed(event: Event) -> bool:
    """A pod that appeared, or whose phase moved (started, ended): what a waiting measurement
    waits for, since its log is the pod's."""
    # a phase that moved is a status that changed, so :func:`pod_changed` holds whenever this does
    return event.old is None or _status(event.old).get("phase") != _status(event.obj).get("phase")


def node_changed(event: Event) -> bool:
    """A Node that appeared, or whose labels, taints, ``unschedulable``, condition statuses or
    allocatable changed; heartbeats and deletions are not."""
    if event.type == "DELETED":
        return False
    return not (event.type == "MODIFIED" and _node_view(event.old) == _node_view(event.obj))


# ------------------------------------------------------------------ map functions


def own_key(event: Event, lookup: Lookup) -> list[Key]:
    """The object itself."""
    return [_key(event.obj)]


def controlled_by(kind: str) -> MapFn:
    """The owner of kind ``kind`` that controls the object, in the object's namespace."""

    def owner(event: Event, lookup: Lookup) -> list[Key]:
        namespace = _key(event.obj)[0]
        refs = _meta(event.obj).get("ownerReferences") or []
        return [(namespace, str(ref["name"])) for ref in refs if str(ref.get("kind")) == kind and ref.get("controller") and ref.get("name")]

    return owner


def jobs_of_pod(event: Event, lookup: Lookup) -> list[Key]:
    """The Jobs of a pod (see :func:`_pod_jobs`)."""
    return _pod_jobs(event.obj)


def job_of_measurement(event: Event, lookup: Lookup) -> list[Key]:
    """The Job a measurement's ``spec.jobRef`` names."""
    name = str(((event.obj.get("spec") or {}).get("jobRef") or {}).get("name") or "")
    return [(_key(event.obj)[0], name)] if name else []


def jobs_on_node(event: Event, lookup: Lookup) -> list[Key]:
    """The Jobs of every cached pod bound to the Node, pod by pod."""
    pods = lookup(PODS)
    if pods is None:
        return []
    node = str(_meta(event.obj).get("name") or "")
    if "node" in pods.indexers:
        on_node = pods.by_index("node", node)
    else:
        on_node = [pod for pod in pods.list() if (pod.get("spec") or {}).get("nodeName") == node]
    return [key for pod in on_node for key in _pod_jobs(pod)]


def measurement_of(resource: Resource, suffix: str, jobs: MapFn) -> MapFn:
    """The measurement ``<job>-<suffix>`` of each Job ``jobs`` gives, when it is cached. One not
    cached yet is queued by its own ADDED event; queueing it here as well would only make its
    reconciler confirm the miss with a live GET."""

    def measurements(event: Event, lookup: Lookup) -> list[Key]:
        store = lookup(resource)
        if store is None:
            return []
        keys = ((namespace, f"{job}-{suffix}") for namespace, job in jobs(event, lookup))
        return [(namespace, name) for namespace, name in keys if store.get(name, namespace) is not None]

    return measurements


def waiting_runs(resource: Resource) -> MapFn:
    """The cached runs of ``resource`` that have not started yet (no category status and no
    Workflow): a Node that changes may be the one they wait for."""

    def waiting(event: Event, lookup: Lookup) -> list[Key]:
        store = lookup(resource)
        if store is None:
            return []
        return [_key(run) for run in store.list() if not _status(run).get("categoryStatuses") and not _status(run).get("workflowRef")]

    return waiting


def cached_keys(resource: Resource, lookup: Lookup) -> list[Key]:
    """Every cached object of ``resource``: what a tier is handed when this replica starts leading."""
    store = lookup(resource)
    return [] if store is None else [_key(obj) for obj in store.list()]
