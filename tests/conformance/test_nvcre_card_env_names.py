"""The category card prints the names of the environment variables a run set, never their values.

NVCRE v0.8.0 release notes (docs/release-notes in github.com/NVIDIA/cluster-readiness-engine,
"Workload environment on a Certification"): ``spec.env`` and ``spec.categories[].options.env``
merge per name, and "the resolved variable names, never their values, print on the category
card". A value may be a credential, so it reaches neither the text nor the JSON report.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text

CASE = Path(__file__).resolve().parent.parent.parent / "golden" / "report" / "failed-threshold-two-groups"
SECRET = "s3cr3t-token-value"


def _objects() -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all((CASE / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _reports(certification: dict[str, Any], kinds: dict[str, list[dict[str, Any]]]) -> tuple[str, str]:
    measurements = kinds.get("BandwidthMeasurement", []) + kinds.get("GoodputMeasurement", [])
    verdict = certification_verdict(
        certification, kinds.get("Workflow", []), kinds.get("Job", []), measurements, kinds.get("ConfigMap", [])
    )
    return text.render(verdict), json_report.dumps(verdict)


def test_the_global_and_category_names_are_on_the_card_and_no_value_is() -> None:
    kinds = _objects()
    certification = copy.deepcopy(kinds["Certification"][0])
    certification["spec"]["env"].append({"name": "WANDB_API_KEY", "value": SECRET})
    certification["spec"]["categories"][0]["options"]["env"] = [
        {"name": "NCCL_IB_HCA", "value": "mlx5_0,mlx5_1"},  # the category replaces the global value by name
        {"name": "NCCL_ALGO", "value": "Ring"},
    ]
    rendered, document = _reports(certification, kinds)
    card = [line.strip("│ ").rstrip() for line in rendered.splitlines()]
    env = [line for line in card if line.startswith("Env:")]
    assert env == ["Env:       NCCL_ALGO, NCCL_DEBUG, NCCL_IB_HCA, WANDB_API_KEY"]
    for value in (SECRET, "mlx5_0", "secret-looking-value", "Ring"):
        assert value not in rendered and value not in document


def test_a_run_that_sets_no_variables_has_no_env_line() -> None:
    kinds = _objects()
    certification = copy.deepcopy(kinds["Certification"][0])
    del certification["spec"]["env"]
    rendered, _ = _reports(certification, kinds)
    assert "Env:" not in rendered
