"""The reason a Workflow fails with when it cannot be planned for a cause in its own annotations.

A diagnose prior or planner annotation the compiler refuses (``InvalidDiagnosePrior``,
``InvalidDiagnosePlanner``) is a fault of the Workflow as written, not of its overrides: the
Workflow fails ``WorkflowValidationFailed`` with the field path inside the annotation, never
``OverrideError: Failed to apply overrides: ...``. A real override failure keeps
``OverrideError``.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR
from nvcre.runtime import compile as compiler
from nvcre.runtime.clock import Clock
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.runtime.reconcile.workflow import WorkflowReconciler


class _Clock(Clock):
    def now(self) -> datetime:
        return datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class _Kube:
    def emit_event(self, involved: Any, *, type: str, reason: str, message: str, component: str) -> None:
        """Events are not what these tests look at: the Workflow's status is."""


def _node(name: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def _workflow(annotations: dict[str, str], overrides: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ns", "uid": "0123456789abcdef", "annotations": annotations},
        "spec": {
            "jobTemplate": {"spec": {"workload": {"trainJob": {"trainer": {"numNodes": 1}}}}},
            "orchestration": {"diagnose": {"minGroupSize": 2}},
            "overrides": overrides or [],
        },
    }


def _partition(wf: dict[str, Any]) -> tuple[str, str]:
    ctx = Context(kube=_Kube(), stores={"nodes": Store(), "resourceslices": Store()}, clock=_Clock())  # type: ignore[arg-type]
    reconciler = WorkflowReconciler(ctx, JobReconciler(ctx))
    facts = compiler.cluster_facts([_node(f"n{i}") for i in range(4)], [])
    written: list[dict[str, Any]] = []
    reconciler.facts = lambda: facts  # type: ignore[method-assign]
    reconciler._write = lambda _wf, status: written.append(copy.deepcopy(status))  # type: ignore[method-assign]
    reconciler._partition(wf, {})
    assert cond.lifecycle(written[-1]) == cond.FAILED
    failed = cond.condition(written[-1], cond.FAILED)
    return failed["reason"], failed["message"]


@pytest.mark.parametrize(
    ("annotations", "path", "code"),
    [
        ({ANNOTATION_DIAGNOSE_PRIOR: "[[["}, f"metadata.annotations[{ANNOTATION_DIAGNOSE_PRIOR}]", "InvalidDiagnosePrior"),
        ({ANNOTATION_DIAGNOSE_PLANNER: "quickest"}, f"metadata.annotations[{ANNOTATION_DIAGNOSE_PLANNER}]", "InvalidDiagnosePlanner"),
    ],
)
def test_a_refused_diagnose_annotation_is_a_validation_failure(annotations: dict[str, str], path: str, code: str) -> None:
    reason, message = _partition(_workflow(annotations))
    assert reason == "WorkflowValidationFailed"
    assert message.startswith(path) and code in message
    assert "Failed to apply overrides" not in message


def test_an_override_that_cannot_apply_keeps_override_error() -> None:
    broken = {"when": {"platform": {"notIn": ["none"]}}, "jobTemplatePatch": [{"op": "remove", "path": "/spec/nothing/here"}]}
    reason, message = _partition(_workflow({}, [broken]))
    assert reason == "OverrideError" and message.startswith("Failed to apply overrides: ")
