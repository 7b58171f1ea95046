"""The real API server, with nvcre's CRDs, admits the NVCRE objects ``validate()`` now admits.

Each document is created with ``dryRun=All`` and strict field validation on a kube-apiserver
holding the committed CRDs (the test control plane), and checked with ``validate()`` too: a Go
duration as NVCRE's ``metav1.Duration`` fields take it (``1.5h``, ``250µs``), a Job without
``nodeHealthMonitor.cel``, a free ``when.topology.mode``, object metadata in a Job template and
another ``mpiImplementation`` are admitted by both; a negative duration is refused by both at
the same field.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import validate

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "api"


def _load(path: Path) -> dict[str, Any]:
    data = dict(yaml.safe_load(path.read_text(encoding="utf-8")))
    data.pop("status", None)
    data["metadata"] = {"name": "admitted"}
    return data


def _documents() -> dict[str, dict[str, Any]]:
    workflow = _load(FIXTURES / "workflow-overrides.yaml")
    spec = workflow["spec"]
    spec["orchestration"]["execution"]["timeoutPerJob"] = "1.5h"
    spec["validation"]["performance"]["measurementTimeout"] = "2.5m"
    spec["jobTemplate"]["spec"]["goodputMeasurement"]["sampleInterval"] = "250µs"
    spec["jobTemplate"]["metadata"].update({"name": "ignored", "namespace": "elsewhere"})
    spec["overrides"][1]["when"]["topology"]["mode"] = "multi-pod"
    job = _load(FIXTURES / "job-with-status.yaml")
    job["spec"]["nodeHealthMonitor"] = {}
    job["spec"]["measurementTimeout"] = "90.5s"
    run = _load(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml")
    run["spec"]["orchestration"]["timeoutPerJob"] = "1.5h"
    run["spec"]["framework"]["mpi"]["mpiImplementation"] = "MPICH"
    return {"workflow": workflow, "job": job, "workloadrun": run}


@pytest.mark.parametrize("which", ["workflow", "job", "workloadrun"])
def test_the_server_and_validate_admit_what_nvcre_admits(server_refusal: Callable[[dict[str, Any]], set[str]], which: str) -> None:
    doc = _documents()[which]
    assert [d.render() for d in validate(doc) if d.is_error] == []
    assert server_refusal(copy.deepcopy(doc)) == set()


def test_the_server_and_validate_refuse_a_negative_duration_at_the_field(server_refusal: Callable[[dict[str, Any]], set[str]]) -> None:
    doc = _documents()["workflow"]
    doc["spec"]["orchestration"]["execution"]["timeoutPerJob"] = "-1h"
    path = "spec.orchestration.execution.timeoutPerJob"
    assert {d.path for d in validate(doc) if d.is_error} == {path}
    assert server_refusal(copy.deepcopy(doc)) == {path}
