"""`setup init`/`status`/`reset` on a cluster without the Prometheus Operator: its kinds are skipped with a note, never an error."""

from __future__ import annotations

from nvcre.compiler.install import render_install
from nvcre.runtime.ops.install import lifecycle
from nvcre.testing.fakekube import MemoryKube

MONITORING = "monitoring.coreos.com"


def test_the_operators_kinds_are_skipped_with_a_note() -> None:
    objects = render_install([{"crds": {"install": False}, "logProfiles": {"install": False}}]).objects
    kube = MemoryKube(unserved_groups={MONITORING})
    said: list[str] = []
    applied = lifecycle.apply_install(kube, objects, say=said.append)
    assert applied == len(objects) - 2
    assert {call.options["body"]["kind"] for call in kube.calls if call.verb == "apply"} >= {"Deployment", "Service", "ClusterRole"}
    assert not [call for call in kube.calls if call.group == MONITORING], "no call reaches an API the cluster does not serve"
    notes = [line for line in said if line.startswith("Skipped")]
    assert len(notes) == 2
    assert "ServiceMonitor nvcre/nvcre-metrics-monitor" in notes[0] and "metrics.serviceMonitor.enabled=false" in notes[0]
    assert "PrometheusRule nvcre/nvcre-alerts" in notes[1] and "metrics.prometheusRule.enabled=false" in notes[1]

    served, unserved = lifecycle.split_unserved(kube, objects)
    assert [o["kind"] for o in unserved] == ["ServiceMonitor", "PrometheusRule"] and len(served) == len(objects) - 2
