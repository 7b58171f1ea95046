"""`setup init`/`status`/`reset` on a cluster without the Prometheus Operator: its kinds are skipped with a note, never an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.install import render_install
from nvcre.runtime.kube.errors import ApiNotServed, NotFound
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.ops import install


class ClusterWithoutMonitoring:
    """Serves every API except monitoring.coreos.com; holds what was applied."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def resource_for(self, api_version: str, kind: str) -> Resource:
        group, _, version = api_version.rpartition("/")
        if group == "monitoring.coreos.com":
            raise ApiNotServed(404, "NotFound", f"the server does not serve the API {api_version} (kind {kind})")
        return Resource(group, version, kind.lower() + "s", kind, namespaced=True)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if resource.group == "monitoring.coreos.com":
            raise AssertionError("no call reaches an API the cluster does not serve")
        for obj in self.applied:
            if obj["kind"] == resource.kind and obj["metadata"]["name"] == name:
                if obj["kind"] == "CustomResourceDefinition":
                    return {**obj, "status": {"conditions": [{"type": "Established", "status": "True"}]}}
                return obj
        raise NotFound(404, "NotFound", name)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        assert not str(obj["apiVersion"]).startswith("monitoring.coreos.com/")
        self.applied.append(dict(obj))
        return dict(obj)

    def delete(self, resource: Resource, name: str, namespace: str | None = None, **_: Any) -> None:
        assert resource.group != "monitoring.coreos.com"
        self.deleted.append(f"{resource.kind}/{name}")


def test_the_operators_kinds_are_skipped_with_a_note() -> None:
    objects = render_install([{"crds": {"install": False}, "logProfiles": {"install": False}}]).objects
    kube = ClusterWithoutMonitoring()
    said: list[str] = []
    applied = install.apply_install(kube, objects, say=said.append)  # type: ignore[arg-type]
    assert applied == len(objects) - 2
    assert {o["kind"] for o in kube.applied} >= {"Deployment", "Service", "ClusterRole"}
    notes = [line for line in said if line.startswith("Skipped")]
    assert len(notes) == 2
    assert "ServiceMonitor nvcre/nvcre-metrics-monitor" in notes[0] and "metrics.serviceMonitor.enabled=false" in notes[0]
    assert "PrometheusRule nvcre/nvcre-alerts" in notes[1] and "metrics.prometheusRule.enabled=false" in notes[1]

    served, unserved = install.split_unserved(kube, objects)  # type: ignore[arg-type]
    assert [o["kind"] for o in unserved] == ["ServiceMonitor", "PrometheusRule"] and len(served) == len(objects) - 2
