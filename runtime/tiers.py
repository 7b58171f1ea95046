"""The table of reconcile tiers: what each watches, how its events become keys, who builds it.

One row per tier. The controller derives everything tier-shaped from this table: the work
queues and their workers, the informer handler of each tier's resource, the owner kind whose
children's events wake a tier, and the keys queued when leadership starts. What crosses tiers
(a Job's event waking its measurements, a measurement's waking its Job, a Node's waking the
Jobs on it) stays in the controller's handlers, next to the informers that see those events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    CERTIFICATIONS,
    GOODPUT_MEASUREMENTS,
    JOBS,
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

__all__ = ["Tier", "TABLE", "TIERS", "KIND_TIER", "Reconcile", "build_reconcilers", "owner_may_care", "status_only_change"]

Reconcile = Callable[[str, str], Result]

_VOLATILE_META = ("resourceVersion", "managedFields")


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def _without_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in obj.items() if key != "status"}
    out["metadata"] = {key: value for key, value in _meta(obj).items() if key not in _VOLATILE_META}
    return out


def status_only_change(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """An update that changed nothing but the status (and the resourceVersion).

    A Workflow's status is written only by its own reconciler, which always asks to come back
    (``requeue_after``) unless the Workflow is finished; the event of that write would only
    make it GET the Workflow again at once. Spec, label, finalizer and deletion changes still
    queue it.
    """
    if event_type != "MODIFIED" or old is None:
        return False
    return _without_status(obj) == _without_status(old)


def owner_may_care(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether a Job event can change what its Workflow decides: anything but an update that
    left the status and the deletion mark alone (a finalizer added, a label written)."""
    if event_type != "MODIFIED" or old is None:
        return True
    return obj.get("status") != old.get("status") or _meta(obj).get("deletionTimestamp") != _meta(old).get("deletionTimestamp")


def _always(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    return True


def _never(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    return False


@dataclass(frozen=True)
class Tier:
    """One reconciler and how events reach it.

    ``resource``: the objects whose keys it reconciles (its informer's events queue them).
    ``owner_kind``: events of objects this kind controls wake the tier, batched.
    ``skip_event``: events of its own resource that need no reconcile (its own status writes).
    ``wakes_owner``: which of its resource's events wake the owner of the object.
    """

    name: str
    resource: Resource
    owner_kind: str = ""
    skip_event: Callable[[str, Mapping[str, Any], Mapping[str, Any] | None], bool] = _never
    wakes_owner: Callable[[str, Mapping[str, Any], Mapping[str, Any] | None], bool] = _always


TABLE: tuple[Tier, ...] = (
    Tier("certification", CERTIFICATIONS, owner_kind="Certification"),
    Tier("workloadrun", WORKLOADRUNS, owner_kind="WorkloadRun"),
    Tier("workflow", WORKFLOWS, owner_kind="Workflow", skip_event=status_only_change),
    Tier("job", JOBS, owner_kind="Job", wakes_owner=owner_may_care),
    Tier("bandwidth", BANDWIDTH_MEASUREMENTS),
    Tier("goodput", GOODPUT_MEASUREMENTS),
)
TIERS: tuple[str, ...] = tuple(tier.name for tier in TABLE)
KIND_TIER: dict[str, str] = {tier.owner_kind: tier.name for tier in TABLE if tier.owner_kind}


def build_reconcilers(ctx: Context) -> dict[str, Reconcile]:
    """Each tier's reconcile function over one shared context.

    The Workflow tier reads the Job tier's verdicts through the Job reconciler it is given, and
    both measurement tiers share one reconciler (one log cursor per Job).
    """
    jobs = JobReconciler(ctx)
    measurements = MeasurementReconciler(ctx)
    built: dict[str, Reconcile] = {
        "certification": CertificationReconciler(ctx).reconcile,
        "workloadrun": WorkloadRunReconciler(ctx).reconcile,
        "workflow": WorkflowReconciler(ctx, jobs).reconcile,
        "job": jobs.reconcile,
        "bandwidth": measurements.reconcile_bandwidth,
        "goodput": measurements.reconcile_goodput,
    }
    missing = set(TIERS) ^ set(built)
    if missing:  # the table and the wiring must name the same tiers
        raise RuntimeError(f"tiers without a reconciler, or reconcilers without a tier: {sorted(missing)}")
    return built
