"""``evidence compare`` on recorded runs: per-node and per-group changes, the OLD side's own noise, node churn."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.evidence import EvidenceError
from nvcre.runtime.evidence.assemble import assemble
from nvcre.runtime.evidence.bundle import write_bundle
from nvcre.runtime.evidence.compare import NOISE_CAP, compare, load_side
from nvcre.runtime.evidence.compare_render import render_json, render_markdown, render_text
from tests.evidencekit import cases

REPO = Path(__file__).resolve().parents[3]


def bandwidth_jobs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((d for d in docs if d["kind"] == "BandwidthMeasurement"), key=lambda d: d["spec"]["jobRef"]["name"])


def scale_bandwidth(docs: list[dict[str, Any]], index: int, factor: float) -> list[dict[str, Any]]:
    """A copy of ``docs`` whose ``index``-th bandwidth measurement reads ``factor`` times the original."""
    docs = copy.deepcopy(docs)
    for row in bandwidth_jobs(docs)[index]["status"]["results"]:
        for key in ("algBW", "busBW"):
            row[key] = f"{float(row[key]) * factor:.2f}"
    return docs


def scale_goodput(docs: list[dict[str, Any]], index: int, factor: float) -> list[dict[str, Any]]:
    docs = copy.deepcopy(docs)
    found = sorted((d for d in docs if d["kind"] == "GoodputMeasurement"), key=lambda d: d["metadata"]["name"])
    found[index]["status"]["result"] = f"{float(found[index]['status']['result']) * factor:.4f}"
    return docs


def group_nodes(docs: list[dict[str, Any]], measurement: dict[str, Any]) -> list[str]:
    job = next(d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == measurement["spec"]["jobRef"]["name"])
    workflow = next(
        d for d in docs if d["kind"] == "Workflow" and d["metadata"]["name"] == job["metadata"]["labels"]["nvcre.nvidia.com/workflow"]
    )
    group = job["metadata"]["labels"]["nvcre.nvidia.com/group"]
    return sorted(next(g["nodes"] for g in workflow["status"]["orchestration"]["groups"] if g["name"] == group))


def bundle(tmp_path: Path, name: str, docs: list[dict[str, Any]]) -> Path:
    target = tmp_path / name
    write_bundle(assemble(*cases.build(docs)), target)
    return target


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return cases.documents("passed")


def test_the_same_run_has_no_regression(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    old = bundle(tmp_path, "old", docs)
    result = compare(load_side(old), load_side(old))
    assert result.regressed_nodes == ()
    assert result.nodes and all(r.change == 0 for r in result.nodes)
    metrics = {r.metric for r in result.nodes}
    assert metrics == {"busBandwidthGBps", "goodput"}
    assert "No node regressed." in render_text(result)


def test_a_slower_group_names_its_nodes_and_no_others(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    slow = bandwidth_jobs(docs)[1]
    members = group_nodes(docs, slow)
    old, new = bundle(tmp_path, "old", docs), bundle(tmp_path, "new", scale_bandwidth(docs, 1, 0.7))
    result = compare(load_side(old), load_side(new))
    assert result.regressed_nodes == tuple(members)
    (group,) = [r for r in result.groups if r.regressed]
    assert group.subject == ",".join(members) and group.change == pytest.approx(-0.3, abs=0.01)
    data = json.loads(render_json(result))
    assert data["regressedNodes"] == members
    assert all(not r["regressed"] for r in data["nodes"] if r["subject"] not in members)
    text = render_text(result)
    assert f"Regressed nodes: {', '.join(members)}" in text and "REGRESSED" in text
    markdown = render_markdown(result)
    assert "| **REGRESSED** |" in markdown and markdown.startswith("## Evidence comparison")


def test_a_drop_inside_the_tolerance_is_not_a_regression(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    old, new = bundle(tmp_path, "old", docs), bundle(tmp_path, "new", scale_bandwidth(docs, 0, 0.97))
    result = compare(load_side(old), load_side(new))
    assert result.regressed_nodes == ()
    strict = compare(load_side(old), load_side(new), tolerance=0.01)
    assert strict.regressed_nodes == tuple(group_nodes(docs, bandwidth_jobs(docs)[0]))


def test_lower_goodput_is_a_regression(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    old, new = bundle(tmp_path, "old", docs), bundle(tmp_path, "new", scale_goodput(docs, 0, 0.8))
    result = compare(load_side(old), load_side(new))
    regressed = [r for r in result.nodes if r.regressed]
    assert regressed and {r.metric for r in regressed} == {"goodput"}
    assert len(result.regressed_nodes) == 2


def test_old_repeats_that_disagree_widen_only_their_own_group_and_only_up_to_the_cap(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    repeats = tmp_path / "repeats"
    repeats.mkdir()
    bundle(repeats, "a", scale_bandwidth(docs, 1, 1.12))
    bundle(repeats, "b", scale_bandwidth(docs, 1, 0.88))
    members = group_nodes(docs, bandwidth_jobs(docs)[1])
    within = bundle(tmp_path, "within", scale_bandwidth(docs, 1, 0.86))
    single = compare(load_side(repeats / "a"), load_side(within))
    assert single.regressed_nodes, "one baseline: a 23 % drop regresses"
    noisy = compare(load_side(repeats), load_side(within))
    assert len(load_side(repeats).paths) == 2
    assert noisy.regressed_nodes == (), "two baselines 24 % apart and the drop stays above the old floor"
    (group,) = [r for r in noisy.groups if r.subject == ",".join(members) and r.metric == "busBandwidthGBps"]
    assert group.old_spread == pytest.approx(0.12, abs=0.005) and group.unstable_baseline
    assert group.tolerance == pytest.approx(0.05 + 2 * NOISE_CAP), "the noise term is capped"
    others = [r for r in noisy.groups if r.subject != group.subject and r.metric == "busBandwidthGBps"]
    assert others and all(r.tolerance == pytest.approx(0.05) for r in others), "no other group's bar moved"
    assert "Unstable baseline: group " + group.subject in render_text(noisy)
    below = bundle(tmp_path, "below", scale_bandwidth(docs, 1, 0.8))
    assert compare(load_side(repeats), load_side(below)).regressed_nodes == tuple(members), "below the old floor regresses"


def test_nodes_that_changed_appeared_or_went_are_listed_not_compared(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    nodes = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "Node")
    changed = copy.deepcopy(docs)
    for doc in changed:
        if doc["kind"] == "Node" and doc["metadata"]["name"] == nodes[0]:
            doc["metadata"]["labels"]["nvidia.com/cuda.driver-version.major"] = "590"
        if doc["kind"] == "Node" and doc["metadata"]["name"] == nodes[1]:
            doc["metadata"]["name"] = "replacement-node"
    old, new = bundle(tmp_path, "old", docs), bundle(tmp_path, "new", scale_bandwidth(changed, 0, 0.5))
    result = compare(load_side(old), load_side(new))
    assert result.changed == ((nodes[0], ("driver 580 -> 590",)),)
    assert result.disappeared == (nodes[1],)
    compared = {r.subject for r in result.nodes}
    assert nodes[0] not in compared and nodes[1] not in compared
    text = render_text(result)
    assert f"Changed (not compared): {nodes[0]}: driver 580 -> 590" in text
    assert f"Disappeared (not compared): {nodes[1]}" in text


def test_bad_sides_are_invalid_input(tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    with pytest.raises(EvidenceError, match="no such bundle or directory"):
        load_side(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvidenceError, match="neither a bundle nor a directory of bundles"):
        load_side(tmp_path / "empty")
    target = bundle(tmp_path, "edited", docs)
    (target / "report.json").write_text("{}")
    with pytest.raises(EvidenceError, match="report.json: sha256"):
        load_side(target)
