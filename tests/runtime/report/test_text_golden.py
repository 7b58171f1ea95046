"""Golden reports: golden/report/<case>/objects.yaml (the objects as the API server returns them)
-> expected.txt (the 66-column text report) and expected.json (the JSON report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.runtime.judge.model import CertificationVerdict
from nvcre.runtime.judge.verdict import certification_verdict, workloadrun_verdict
from nvcre.runtime.measure.profile import parse_rfc3339
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text
from nvcre.runtime.report.cells import width
from tests.goldenharness import cases, check

CASES = cases("report")


def build(case: Path) -> CertificationVerdict:
    docs: list[dict[str, Any]] = list(yaml.safe_load_all((case / "objects.yaml").read_text(encoding="utf-8")))
    settings = yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8")) if (case / "case.yaml").exists() else {}
    now = parse_rfc3339(settings["now"]) if settings.get("now") else None
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        kinds.setdefault(doc["kind"], []).append(doc)
    measurements = kinds.get("BandwidthMeasurement", []) + kinds.get("GoodputMeasurement", [])
    if "WorkloadRun" in kinds:
        workflows = kinds.get("Workflow", [])
        return workloadrun_verdict(
            kinds["WorkloadRun"][0],
            workflows[0] if workflows else None,
            kinds.get("Job", []),
            measurements,
            kinds.get("ConfigMap"),
            now=now,
        )
    return certification_verdict(
        kinds["Certification"][0], kinds.get("Workflow", []), kinds.get("Job", []), measurements, kinds.get("ConfigMap", []), now=now
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_text_report(case: Path, update_golden: bool) -> None:
    check(case / "expected.txt", text.render(build(case)), update_golden)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_json_report(case: Path, update_golden: bool) -> None:
    check(case / "expected.json", json_report.dumps(build(case)), update_golden, json.loads)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_box_line_is_66_cells(case: Path) -> None:
    rendered = text.render(build(case))
    box = [line for line in rendered.splitlines() if line and line[0] in "╔║╚┌│├└"]
    assert box, "no box lines"
    for line in box:
        assert width(line) == 66, repr(line)
    assert "\x1b" not in rendered and "\u202e" not in rendered
