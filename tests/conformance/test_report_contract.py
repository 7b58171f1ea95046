"""The report JSON and text keep NVCRE's contract: field names and types, Cliques, domains, Diagnosis.

The schema (``nvcre-report.schema.json`` beside this file) is written from NVCRE's report types:
every field a script written for NVCRE reads, with its JSON type; extra fields are allowed, as
nvcre adds some. Every golden report validates against it, and the topology views (``cliques[]``,
``domains[]`` and their text sections) are checked on a small topology-aware run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent.parent / "golden" / "report"
SCHEMA = json.loads((HERE / "nvcre-report.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if (p / "expected.json").is_file()))
def test_every_golden_report_reads_as_nvcres(case: str) -> None:
    report = json.loads((GOLDEN / case / "expected.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)


def test_the_schema_refuses_a_renamed_or_retyped_field() -> None:
    report = json.loads((GOLDEN / "passed" / "expected.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, SCHEMA)
    for broken in (
        {**report, "totalNodes": "4"},
        {k: v for k, v in report.items() if k != "failedNodes"},
        {**report, "categories": [{**report["categories"][0], "status": "InProgress"}]},
        {**report, "categories": [{**report["categories"][0], "diagnose": {"stage": "complete", "rounds": 1}}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SCHEMA)


def _group(name: str, nodes: list[str], domains: list[str], phase: str = "Succeeded", **extra: Any) -> dict[str, Any]:
    return {"name": name, "nodes": nodes, "domains": domains, "phase": phase, "jobRef": {"name": f"job-{name}"}, **extra}


def _topology_run(groups: list[dict[str, Any]], failed: list[dict[str, str]], kind: str = "BandwidthMeasurement") -> Any:
    workflow = {
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ns", "labels": {"nvcre.nvidia.com/certification": "c"}},
        "spec": {"orchestration": {"topology": {"key": "nvidia.com/gpu.clique", "strictDomain": True}}},
        "status": {
            "orchestration": {"groups": groups, "totalGroups": len(groups), "nodesPerJob": 2},
            "conditions": [{"type": "Failed" if failed else "Succeeded", "status": "True", "reason": "x", "message": "m"}],
        },
    }
    cert = {
        "kind": "Certification",
        "metadata": {"name": "c", "namespace": "ns"},
        "status": {
            "conditions": [{"type": "Failed" if failed else "Succeeded", "status": "True"}],
            "categoryStatuses": [
                {
                    "domain": "communication",
                    "variant": "nccl-all-reduce",
                    "status": "Failed" if failed else "Succeeded",
                    "workflowRef": {"name": "wf"},
                }
            ],
        },
    }
    measurements = []
    for i, group in enumerate(groups):
        status: dict[str, Any]
        if kind == "BandwidthMeasurement":
            status = {
                "results": [{"sizeBytes": 1 << 30, "algBW": "100.00", "busBW": f"{180 + i}.00", "samples": 1}],
                "conditions": [{"type": "Complete", "status": "True"}],
            }
        else:
            status = {"result": f"0.9{i}", "avgTFLOPSPerGPU": "500.0", "avgStepTimeSec": "2.50"}
        measurements.append(
            {
                "kind": kind,
                "metadata": {"name": f"m{i}", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
                "spec": {"jobRef": {"name": group["jobRef"]["name"]}},
                "status": status,
            }
        )
    return certification_verdict(cert, [workflow], [], measurements, {"wf": failed})


def test_cliques_count_validated_nodes_per_domain_and_replace_bandwidth_by_group() -> None:
    groups = [
        _group("g0", ["a1", "a2"], ["clique-a"]),
        _group("g1", ["b1", "b2"], ["clique-b"], phase="Failed"),
        _group("g2", ["c1", "c2", "d1"], ["clique-c", "clique-d"], domainNodeCounts={"clique-c": 2, "clique-d": 1}),
    ]
    verdict = _topology_run(
        groups, [{"name": "b2", "reason": "WorkloadFailed", "message": "x"}, {"name": "d1", "reason": "ThresholdViolation", "message": "y"}]
    )
    report = json_report.to_dict(verdict)["categories"][0]
    assert report["cliques"] == [
        {"name": "clique-a", "total": 2, "validated": 2, "passed": True},
        {"name": "clique-b", "total": 2, "validated": 1, "passed": False},
        {"name": "clique-c", "total": 2, "validated": 1, "passed": False},  # a spanning group's failed node counts in its first domain
        {"name": "clique-d", "total": 1, "validated": 1, "passed": True},
    ]
    lines = [line.strip("│ ").rstrip() for line in text.render(verdict).splitlines()]
    start = lines.index("Cliques:")
    assert lines[start + 1 : start + 8] == [
        "✓  clique-a  2/2 nodes",
        "180.0 GB/s",
        "✗  clique-b  1/2 nodes",
        "181.0 GB/s",
        "✗  clique-c  1/2 nodes",
        "182.0 GB/s",
        "✓  clique-d  1/1 nodes",
    ]
    assert "Bandwidth by group:" not in lines, "NVCRE shows the group bandwidth inside Cliques"


def test_a_run_without_topology_has_no_cliques() -> None:
    verdict = _topology_run([_group("g0", ["a1", "a2"], ["clique-a"])], [])
    workflowless = json_report.to_dict(verdict)["categories"][0]
    assert workflowless["cliques"]
    plain = certification_verdict(
        {
            "kind": "Certification",
            "metadata": {"name": "c"},
            "status": {"categoryStatuses": [{"domain": "d", "variant": "v", "status": "Succeeded"}]},
        }
    )
    assert "cliques" not in json_report.to_dict(plain)["categories"][0]


def test_training_metrics_per_domain_in_json_and_in_sub_boxes() -> None:
    groups = [_group("g0", ["a1", "a2"], ["clique-a"]), _group("g1", ["b1", "b2"], ["clique-b"])]
    verdict = _topology_run(groups, [], kind="GoodputMeasurement")
    # the per-domain boxes show when no Cliques section does: drop the topology spec
    category = verdict.categories[0]
    assert json_report.to_dict(verdict)["categories"][0]["domains"] == [
        {"name": "clique-a", "nodeCount": 2, "goodput": "0.90 (90%)", "tflops": "500.0", "stepTime": "2.50s"},
        {"name": "clique-b", "nodeCount": 2, "goodput": "0.91 (91%)", "tflops": "500.0", "stepTime": "2.50s"},
    ]
    from dataclasses import replace

    from nvcre.runtime.judge.model import CertificationVerdict

    boxed = replace(verdict, categories=(replace(category, cliques=()),))
    assert isinstance(boxed, CertificationVerdict)
    rendered = text.render(boxed)
    lines = rendered.splitlines()
    top = next(i for i, line in enumerate(lines) if "┌ clique-a (2 nodes) " in line)
    assert lines[top : top + 5] == [
        "│  ┌ clique-a (2 nodes) ───────────────────────────────────────┐ │",
        "│  │  Avg Runtime Goodput:  0.90 (90%)                         │ │",
        "│  │  Avg TFLOPs/GPU:  500.0                                   │ │",
        "│  │  Avg Step Time:  2.50s                                    │ │",
        "│  └───────────────────────────────────────────────────────────┘ │",
    ]
    assert all(len(line) == 66 for line in lines if line.startswith("│"))
