"""A diverged training run's goodput is no measurement: the category's and the domain's
training figures leave it out, and keep the step time and TFLOP/s its finite steps gave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nvcre.runtime.judge.verdict import certification_verdict
from tests.goldenharness import GOLDEN

DIVERGED = {"type": "Diverged", "status": "True", "reason": "TrainingLossNotFinite", "message": "loss nan from iteration 80"}


def _objects() -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    text = Path(GOLDEN / "report" / "training-restarted-passed" / "objects.yaml").read_text(encoding="utf-8")
    for doc in yaml.safe_load_all(text):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _training(kinds: dict[str, list[dict[str, Any]]]) -> tuple[Any, Any]:
    verdict = certification_verdict(kinds["Certification"][0], kinds["Workflow"], kinds["Job"], kinds["GoodputMeasurement"])
    (category,) = [c for c in verdict.categories if c.training is not None]
    return category.training, category.domain_training


def test_a_healthy_run_keeps_its_goodput() -> None:
    training, domains = _training(_objects())
    assert training.goodput is not None and training.goodput > 0
    assert all(d.metrics.goodput is not None for d in domains)


def test_a_diverged_run_has_no_goodput_but_keeps_its_step_time_and_tflops() -> None:
    kinds = _objects()
    healthy, _ = _training(kinds)
    (measurement,) = kinds["GoodputMeasurement"]
    measurement["status"]["conditions"] = [*measurement["status"].get("conditions", []), DIVERGED]
    training, domains = _training(kinds)
    assert training.goodput is None
    assert (training.tflops_per_gpu, training.step_time_seconds) == (healthy.tflops_per_gpu, healthy.step_time_seconds)
    assert domains and all(d.metrics.goodput is None for d in domains)
