"""``nvcre_goodput_measurement_failed``: a training run that cannot be trusted, on ``/metrics``.

The diverged GoodputMeasurement is the one the measurement tier writes for a Megatron-LM log
whose loss turns NaN half-way (the same offline seam as the divergence tests); the gauges are
read from the ``/metrics`` text the controller serves over those cache contents.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.kube.informers import Store
from nvcre.runtime.metrics.gauges import FAMILIES, CacheObjects, samples
from nvcre.runtime.metrics.registry import ControllerMetrics
from nvcre.runtime.reconcile import measurement as measurement_module
from tests.runtime.reconcile.test_measurement_divergence_reads import _finish, _line
from tests.runtime.reconcile.test_measurement_sampling import _reconcile, _setup

FAMILY = "nvcre_goodput_measurement_failed"
REASON = "TrainingLossNotFinite"
PLURALS = ("certifications", "workloadruns", "workflows", "jobs", "bandwidthmeasurements", "goodputmeasurements", "nodes")


def _scrape(**items: list[dict[str, Any]]) -> list[tuple[dict[str, str], float]]:
    stores: dict[str, Store] = {}
    for plural in PLURALS:
        stores[plural] = Store()
        stores[plural].replace(items.get(plural, []))
    text = generate_latest(ControllerMetrics(stores, lambda: True).registry).decode()
    found = {f.name: f for f in text_string_to_metric_families(text)}
    family = found.get(FAMILY)
    return [] if family is None else [(dict(s.labels), float(s.value)) for s in family.samples]


def _diverged(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The GoodputMeasurement the measurement tier leaves after a run whose loss went NaN."""
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    healthy = [_line(s, 10 * s, "2.500000E+00") for s in range(1, 8)]
    diverged = [_line(s, 10 * s, "NAN", 10) for s in range(8, 12)]
    cluster.text = "".join(healthy + diverged)
    _finish(cluster, ctx, 13)
    cluster.now = 14.0
    _reconcile(cluster, ctx, reconciler)
    return cluster.goodput()


def _job(workflow: str) -> dict[str, Any]:
    return {"kind": "Job", "metadata": {"name": "j", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": workflow}}}


def test_the_family_is_served() -> None:
    assert FAMILY in FAMILIES


def test_a_diverged_run_shows_its_reason_under_the_jobs_workflow(monkeypatch: pytest.MonkeyPatch) -> None:
    measurement = _diverged(monkeypatch)
    assert measurement["status"]["result"], "the goodput of the finite steps is kept"
    found = _scrape(jobs=[_job("wf-train")], goodputmeasurements=[measurement])
    assert found == [({"namespace": "ns", "measurement": "j-goodput", "job": "j", "workflow": "wf-train", "reason": REASON}, 1.0)]


def test_it_stays_while_the_measurement_exists_even_once_the_job_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    measurement = _diverged(monkeypatch)
    measurement["metadata"].setdefault("labels", {})["nvcre.nvidia.com/workflow"] = "wf-own"
    found = _scrape(goodputmeasurements=[measurement])
    assert [(labels["workflow"], labels["reason"], value) for labels, value in found] == [("wf-own", REASON, 1.0)]
    assert _scrape() == []  # deleted: gone


def test_a_cached_measurement_listed_without_its_kind_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    measurement = {k: v for k, v in _diverged(monkeypatch).items() if k != "kind"}
    found = [s for s in samples([], CacheObjects(goodputs=[measurement])) if s.name == FAMILY]
    assert [(s.label_map["measurement"], s.label_map["reason"]) for s in found] == [("j-goodput", REASON)]


def test_a_finite_run_and_an_unknown_reason_give_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    measurement = _diverged(monkeypatch)
    healthy = {**measurement, "status": {**measurement["status"], "conditions": []}}
    healthy["status"]["conditions"] = [c for c in measurement["status"]["conditions"] if c["type"] != "Diverged"]
    odd = {**measurement, "status": {**measurement["status"]}}
    odd["status"]["conditions"] = [
        {**c, "reason": "SomethingElse"} if c["type"] == "Diverged" else c for c in measurement["status"]["conditions"]
    ]
    assert _scrape(goodputmeasurements=[healthy]) == []
    assert _scrape(goodputmeasurements=[odd]) == []
