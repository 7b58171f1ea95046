"""Resource coordinates: which URL path serves a kind, and the kinds the controller knows.

A :class:`Resource` names group, version, plural and scope. Well-known kinds are listed here;
any other ``apiVersion``/``kind`` (a dependency written in a Workflow) is resolved once through
API discovery by the client and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from nvcre.compiler.vocabulary import GROUP, VERSION

__all__ = [
    "BANDWIDTH_MEASUREMENTS",
    "BATCH_JOBS",
    "CERTIFICATIONS",
    "CONFIGMAPS",
    "EVENTS",
    "EVENTS_V1",
    "GOODPUT_MEASUREMENTS",
    "JOBS",
    "JOBSETS",
    "LEASES",
    "LOGPROFILES",
    "NODES",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "RESOURCE_SLICES",
    "TRAINJOBS",
    "WELL_KNOWN",
    "WORKFLOWS",
    "WORKLOADRUNS",
    "Resource",
    "split_api_version",
]


@dataclass(frozen=True)
class Resource:
    """Where the API server serves one kind."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection, or of one object (and a subresource of it)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` -> ``("apps", "v1")``; ``"v1"`` -> ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _nvcre(plural: str, kind: str, namespaced: bool = True) -> Resource:
    return Resource(GROUP, VERSION, plural, kind, namespaced)


CERTIFICATIONS = _nvcre("certifications", "Certification")
WORKLOADRUNS = _nvcre("workloadruns", "WorkloadRun")
WORKFLOWS = _nvcre("workflows", "Workflow")
JOBS = _nvcre("jobs", "Job")
BANDWIDTH_MEASUREMENTS = _nvcre("bandwidthmeasurements", "BandwidthMeasurement")
GOODPUT_MEASUREMENTS = _nvcre("goodputmeasurements", "GoodputMeasurement")
LOGPROFILES = _nvcre("logprofiles", "LogProfile", namespaced=False)
TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
EVENTS = Resource("", "v1", "events", "Event")
#: the Events API the controller writes through; the same objects read back as core/v1 ``EVENTS``
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")

WELL_KNOWN: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r
    for r in (
        CERTIFICATIONS,
        WORKLOADRUNS,
        WORKFLOWS,
        JOBS,
        BANDWIDTH_MEASUREMENTS,
        GOODPUT_MEASUREMENTS,
        LOGPROFILES,
        TRAINJOBS,
        JOBSETS,
        BATCH_JOBS,
        PODS,
        NODES,
        CONFIGMAPS,
        EVENTS,
        LEASES,
        RESOURCE_SLICES,
        PERSISTENT_VOLUMES,
        PERSISTENT_VOLUME_CLAIMS,
        Resource("", "v1", "services", "Service"),
        Resource("", "v1", "secrets", "Secret"),
        Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    )
}
