"""Gauge samples projected from the verdict model."""

from __future__ import annotations

from pathlib import Path

import yaml

from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.metrics.gauges import samples
from tests.goldenharness import GOLDEN


def _verdict(case: str):
    kinds: dict[str, list[dict]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return certification_verdict(
        kinds["Certification"][0], kinds.get("Workflow", []), kinds.get("Job", []), kinds.get("BandwidthMeasurement", [])
    )


def _current(found, name: str, **labels: str) -> str:
    hits = [s for s in found if s.name == name and all(s.label_map.get(k) == v for k, v in labels.items())]
    assert len(hits) == 3 and sum(s.value for s in hits) == 1.0
    return next(s.label_map["status"] for s in hits if s.value == 1.0)


def test_status_gauges_one_hot_per_object() -> None:
    found = samples([_verdict("timed-out")])
    assert _current(found, "nvcre_certification_status", certification="gpu-cert") == "failed"
    assert _current(found, "nvcre_workflow_status", workflow="gpu-cert-diagnostics-dcgm-level4", certification="gpu-cert") == "failed"
    assert _current(found, "nvcre_job_status", job="gpu-cert-diagnostics-dcgm-level4-node-a-iter-1") == "failed"
    assert _current(found, "nvcre_job_status", job="gpu-cert-diagnostics-dcgm-level4-node-b-iter-1") == "succeeded"


def test_nccl_gauges_only_while_the_measurement_runs() -> None:
    running = [s for s in samples([_verdict("in-progress-iterations")]) if s.name.startswith("nvcre_nccl_")]
    assert {s.name for s in running} == {"nvcre_nccl_algbw_gbs", "nvcre_nccl_busbw_gbs"}
    busbw = {s.label_map["message_size_bytes"]: s.value for s in running if s.name == "nvcre_nccl_busbw_gbs"}
    assert busbw == {"8": 0.0, "1073741824": 826.91}
    labels = running[0].label_map
    assert labels["workflow"] == "gpu-cert-communication-nccl-all-reduce" and labels["nccl_test"] == "all_reduce"
    assert not [s for s in samples([_verdict("passed")]) if s.name.startswith("nvcre_nccl_")]


def test_objects_without_a_true_lifecycle_condition_are_left_out() -> None:
    verdict = certification_verdict({"metadata": {"name": "c", "namespace": "ns"}, "spec": {"categories": []}})
    assert samples([verdict]) == []


def _served(case: str):
    """The ``/metrics`` text for a golden case's objects, and the status collector that made it."""
    from prometheus_client import CollectorRegistry, generate_latest

    from nvcre.runtime.kube.informers import Store
    from nvcre.runtime.metrics.registry import StatusCollector

    plurals = {"Certification": "certifications", "Workflow": "workflows", "Job": "jobs", "BandwidthMeasurement": "bandwidthmeasurements"}
    stores: dict[str, Store] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        if doc["kind"] in plurals:
            stores.setdefault(plurals[doc["kind"]], Store()).put(doc)
    registry = CollectorRegistry()
    collector = StatusCollector(stores, lambda: True)
    registry.register(collector)
    return generate_latest(registry).decode(), collector


def test_the_served_gauges_are_the_samples_and_are_made_while_written() -> None:
    from nvcre.runtime.metrics.registry import verdicts

    body, collector = _served("in-progress-iterations")
    served = {line for line in body.splitlines() if not line.startswith("#")}
    expected = {
        "{}{{{}}} {}".format(s.name, ",".join(f'{k}="{v}"' for k, v in s.labels), s.value) for s in samples(verdicts(collector.stores))
    }
    assert served == expected and any(line.startswith("nvcre_nccl_busbw_gbs{") for line in served)
    assert body.count("# TYPE nvcre_nccl_busbw_gbs gauge") == 1
    family = next(f for f in collector.collect() if f.name == "nvcre_nccl_busbw_gbs")
    assert not isinstance(family.samples, list), "the samples are a stream, not a list held in memory"
    assert "nvcre_nccl_" not in _served("passed")[0]
