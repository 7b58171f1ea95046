"""Checkpoint restarts from the Job and its GoodputMeasurement through the verdict to both reports."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from nvcre.runtime.judge.model import RestartVerdict
from nvcre.runtime.judge.verdict import certification_verdict
from nvcre.runtime.report import format as fmt
from nvcre.runtime.report import json as json_report
from nvcre.runtime.report import text
from nvcre.runtime.report.cells import width
from tests.goldenharness import GOLDEN

CASE = "training-restarted-passed"
JOB = "gpu-cert-training-nemotron5-8b-job"


def _objects(case: str = CASE) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(Path(GOLDEN / "report" / case / "objects.yaml").read_text(encoding="utf-8")):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _verdict(kinds: dict[str, list[dict[str, Any]]]) -> Any:
    return certification_verdict(
        kinds["Certification"][0],
        kinds["Workflow"],
        kinds.get("Job", []),
        kinds.get("GoodputMeasurement", []) + kinds.get("BandwidthMeasurement", []),
        kinds.get("ConfigMap", []),
    )


def _group(kinds: dict[str, list[dict[str, Any]]]) -> Any:
    return _verdict(kinds).categories[0].groups[0]


def _box_lines(rendered: str) -> list[str]:
    return [line for line in rendered.splitlines() if line and line[0] in "╔║╚┌│├└"]


def test_the_verdict_carries_restarts_used_allowed_and_the_measured_times() -> None:
    assert _group(_objects()).restarts == RestartVerdict(
        count=1, maximum=3, interruptions=1, lost_work_seconds=8.4, reschedule_seconds=21.0, resume_seconds=14.2
    )


def test_a_job_that_never_restarted_has_no_restart_record() -> None:
    kinds = _objects()
    for value in (0, None, "1", True, -2):
        changed = copy.deepcopy(kinds)
        job_status = changed["Job"][0]["status"]
        job_status.pop("restartCount")
        if value is not None:
            job_status["restartCount"] = value
        group = _group(changed)
        assert group.restarts is None, value
        assert "Restarted from checkpoint" not in text.render(_verdict(changed))
        assert "restartedGroups" not in json_report.dumps(_verdict(changed))


def test_without_a_measurement_only_the_counts_are_known() -> None:
    kinds = _objects()
    kinds.pop("GoodputMeasurement")
    kinds["Job"][0]["spec"]["checkpoint"].pop("maxRestarts")
    assert _group(kinds).restarts == RestartVerdict(count=1, maximum=0)
    rendered = text.render(_verdict(kinds))
    assert "│  ↻ Restarted from checkpoint 1/0" + " " * 31 + "│" in rendered.splitlines()
    group = json_report.to_dict(_verdict(kinds))["categories"][0]["restartedGroups"][0]
    assert group["restartCount"] == 1 and group["maxRestarts"] == 0 and group["interruptionCount"] == 0
    assert not {"lostWorkTimeSec", "rescheduleTimeSec", "resumeTimeSec"} & set(group)


def test_unreadable_times_are_left_out_and_zero_is_kept() -> None:
    kinds = _objects()
    status = kinds["GoodputMeasurement"][0]["status"]
    status.update(lostWorkTimeSec="0.00", rescheduleTimeSec="NaN", resumeTimeSec="-3")
    restarts = _group(kinds).restarts
    assert restarts is not None
    assert (restarts.lost_work_seconds, restarts.reschedule_seconds, restarts.resume_seconds) == (0.0, None, None)
    assert "↻ Restarted from checkpoint 1/3 (lost 0.0s)" in text.render(_verdict(kinds))


def test_a_long_detail_goes_to_its_own_line_within_the_box() -> None:
    rendered = text.render(_verdict(_objects("training-restarting")))
    lines = rendered.splitlines()
    head = next(i for i, line in enumerate(lines) if "↻ Restarted from checkpoint 1/2" in line)
    assert lines[head + 1] == "│    (lost 1m 4s, reschedule 3m 12s)" + " " * 29 + "│"
    assert all(width(line) == 66 for line in _box_lines(rendered))


def test_several_groups_name_the_group_that_restarted() -> None:
    kinds = _objects()
    workflow = kinds["Workflow"][0]
    first = workflow["status"]["orchestration"]["groups"][0]
    second = copy.deepcopy(first)
    second.update(name="group-1-with-a-rather-long-name-for-a-group", nodes=["gpu-09", "gpu-10"])
    second["jobRef"]["name"] = f"{JOB}-2"
    workflow["status"]["orchestration"]["groups"].append(second)
    other = copy.deepcopy(kinds["Job"][0])
    other["metadata"].update(name=f"{JOB}-2", annotations={"nvcre.nvidia.com/group-nodes": "gpu-09,gpu-10"})
    other["metadata"]["labels"]["nvcre.nvidia.com/group"] = second["name"]
    other["status"]["restartCount"] = 2
    kinds["Job"].append(other)
    rendered = text.render(_verdict(kinds))
    assert "│  ↻ group-0 restarted from checkpoint 1/3 (lost 8.4s, reschedule 21.0s)" not in rendered  # 71 cells
    assert "│  ↻ group-0 restarted from checkpoint 1/3" + " " * 23 + "│" in rendered.splitlines()
    assert "│  ↻ group-1-with-a-rather-long-... restarted from checkpoint 2/3│" in rendered.splitlines()
    assert all(width(line) == 66 for line in _box_lines(rendered))
    restarted = json_report.to_dict(_verdict(kinds))["categories"][0]["restartedGroups"]
    assert [(g["name"], g["job"], g["restartCount"]) for g in restarted] == [("group-0", JOB, 1), (second["name"], f"{JOB}-2", 2)]
    assert "lostWorkTimeSec" not in restarted[1], "the second Job has no measurement of its own"


def test_a_failed_group_that_spent_its_restarts_says_so_in_both_reports() -> None:
    kinds = _objects()
    job = kinds["Job"][0]
    job["spec"]["checkpoint"]["maxRestarts"] = 1
    for cond in job["status"]["conditions"]:
        cond["status"] = "True" if cond["type"] == "Failed" else "False"
        if cond["type"] == "Failed":
            cond.update(reason="WorkloadStalled", message="Workload stalled: no training step for 5m0s")
    group = kinds["Workflow"][0]["status"]["orchestration"]["groups"][0]
    group["phase"] = "Failed"
    kinds["Certification"][0]["status"]["categoryStatuses"][0]["status"] = "Failed"
    report = json_report.to_dict(_verdict(kinds))
    failed = report["categories"][0]["failedGroups"][0]
    assert (failed["restartCount"], failed["maxRestarts"], failed["lostWorkTimeSec"]) == (1, 1, 8.4)
    assert report["categories"][0]["restartedGroups"][0]["phase"] == "Failed"
    assert "↻ Restarted from checkpoint 1/1 (lost 8.4s, reschedule 21.0s)" in text.render(_verdict(kinds))


def test_restart_formats() -> None:
    assert [fmt.restart_seconds(v) for v in (0.0, 8.44, 59.96, 64.0, 3725.0)] == ["0.0s", "8.4s", "60.0s", "1m 4s", "1h 2m"]
    assert fmt.seconds(21.004) == 21.0 and fmt.seconds(-1.0) == 0.0


def test_the_bandwidth_by_group_entry_carries_the_restarts_too() -> None:
    kinds = _objects("failed-threshold-two-groups")
    kinds["Job"][0]["status"]["restartCount"] = 1
    category = json_report.to_dict(_verdict(kinds))["categories"][0]
    restarted = [g for g in category["groupBandwidth"] if "restartCount" in g]
    assert [(g["group"], g["restartCount"], g["maxRestarts"]) for g in restarted] == [(category["restartedGroups"][0]["name"], 1, 0)]
    assert "lostWorkTimeSec" not in restarted[0], "a bandwidth category has no goodput measurement"
