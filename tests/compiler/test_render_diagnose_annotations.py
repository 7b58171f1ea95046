"""A Certification's diagnose planner and prior reach its diagnose Workflows, and nothing else."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from nvcre.compiler.diagnose.session import options_for
from nvcre.compiler.render import render_certification
from nvcre.compiler.vocabulary import ANNOTATION_DIAGNOSE_PLANNER, ANNOTATION_DIAGNOSE_PRIOR

CASE = Path(__file__).resolve().parents[2] / "golden" / "render" / "all-reduce-diagnose" / "certification.yaml"
PRIOR = json.dumps({"groups": [{"nodes": ["n1", "n2"], "passed": False}, {"nodes": ["n3", "n4"], "passed": True}]})


def _render(document: dict[str, Any]) -> list[dict[str, Any]]:
    return render_certification(document, platform="onprem", gpu_arch="h100").workflows


def _annotated(scale: str = "diagnose") -> dict[str, Any]:
    document = yaml.safe_load(CASE.read_text(encoding="utf-8"))
    document["metadata"]["annotations"] = {ANNOTATION_DIAGNOSE_PLANNER: "baseline", ANNOTATION_DIAGNOSE_PRIOR: PRIOR, "other": "x"}
    document["spec"]["categories"][0]["options"]["testScale"] = scale
    return document


def test_the_planner_and_the_prior_reach_the_diagnose_workflow() -> None:
    (workflow,) = _render(_annotated())
    annotations = workflow["metadata"]["annotations"]
    assert annotations[ANNOTATION_DIAGNOSE_PLANNER] == "baseline"
    assert annotations[ANNOTATION_DIAGNOSE_PRIOR] == PRIOR
    assert "other" not in annotations
    prior = options_for(workflow, 4, mnnvl=False).prior
    assert prior is not None  # the planner reads what the Certification gave


def test_a_run_that_is_not_a_diagnose_carries_neither() -> None:
    (workflow,) = _render(_annotated("full-scale"))
    annotations = workflow["metadata"].get("annotations") or {}
    assert ANNOTATION_DIAGNOSE_PLANNER not in annotations and ANNOTATION_DIAGNOSE_PRIOR not in annotations


def test_without_the_annotations_the_render_is_unchanged() -> None:
    plain = yaml.safe_load(CASE.read_text(encoding="utf-8"))
    other = copy.deepcopy(plain)
    other["metadata"]["annotations"] = {"unrelated": "y"}
    assert _render(plain) == _render(other)
