"""The ``dcgmi diag`` stand-in of the workload image, with no cluster: it reports every GPU of the
node from the device plugin's environment and the mock GPU state, in the JSON form nvcre's DCGM
reader takes; an unhealthy GPU fails the hardware tests and the exit status; bad input is a usage
message and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DCGMI = REPO / "images" / "workload" / "dcgmi_cpu.py"
IDS = [f"GPU-1c658bd1-0000-4000-8000-{index:012d}" for index in range(8)]
RENDERED = ["diag", "--host", "nvidia-dcgm.gpu-operator.svc:5555", "--run", "4", "--json", "--verbose",
            "-p", "targeted_power.test_duration=1200s"]  # fmt: skip


def _run(tmp_path: Path, visible: list[str], unhealthy: list[str], args: list[str] = RENDERED) -> subprocess.CompletedProcess[str]:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"unhealthy": unhealthy}) + "\n")
    environ = {"NVIDIA_VISIBLE_DEVICES": ",".join(visible), "NVCRE_GPU_STATE": str(state), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(DCGMI), *args], env=environ, capture_output=True, text=True, timeout=30, check=False)


def test_a_healthy_node_passes_every_test_of_the_level_on_every_gpu(tmp_path: Path) -> None:
    from nvcre.runtime.measure.dcgm import parse_dcgm

    done = _run(tmp_path, IDS[:4], [])
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert "no GPU and no DCGM" in document["DCGM Diagnostic"]["runtime_environment"]
    parsed = parse_dcgm(done.stdout)
    assert parsed.overall == "Pass" and parsed.passed
    assert {t.name for t in parsed.tests} >= {"software", "pcie", "memory", "diagnostic", "targeted_stress", "memory_bandwidth"}
    [memory] = [c["tests"] for c in document["DCGM Diagnostic"]["test_categories"] if c["category"] == "Hardware"]
    assert [r["gpu_id"] for r in memory[0]["results"]] == ["0", "1", "2", "3"]


def test_an_unhealthy_gpu_of_the_node_fails_the_hardware_tests_naming_it_and_exits_1(tmp_path: Path) -> None:
    from nvcre.runtime.measure.dcgm import parse_dcgm

    done = _run(tmp_path, IDS[1:5], [IDS[0]])  # the plugin never hands out the unhealthy GPU 0; DCGM still sees it
    assert done.returncode == 1, done.stderr
    parsed = parse_dcgm(done.stdout)
    assert parsed.overall == "Fail" and not parsed.passed
    failed = {t.name: t.failed_gpus for t in parsed.tests if t.status == "Fail"}
    assert failed and all(gpus == ("0",) for gpus in failed.values())
    assert {"software", "pcie"}.isdisjoint(failed)  # deployment and integration tests still pass
    assert any("unhealthy in the node's mock GPU state" in m for t in parsed.tests for m in t.messages)
    level1 = _run(tmp_path, IDS[1:5], [IDS[0]], ["diag", "-r", "1", "--json"])
    assert level1.returncode == 0  # level 1 runs no hardware test


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats"], "only the diag subcommand"),
        (["diag", "--json"], "-r <level> is required"),
        (["diag", "-r", "9", "--json"], "-r must be a level from 1 to 4"),
        (["diag", "-r", "1"], "--json form only"),
        (["diag", "-r", "1", "--json", "--bogus"], "unknown option '--bogus'"),
    ],
)
def test_bad_input_is_a_usage_message_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = _run(tmp_path, IDS[:1], [], args)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and "usage: dcgmi diag" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_or_broken_state_file_is_reported_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("[1, 2]")
    environ = {"NVIDIA_VISIBLE_DEVICES": IDS[0], "NVCRE_GPU_STATE": str(tmp_path / "state.json")}
    done = subprocess.run([sys.executable, str(DCGMI), *RENDERED], env=environ, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "is not a JSON object" in done.stderr and "Traceback" not in done.stderr
    environ["NVCRE_GPU_STATE"] = str(tmp_path / "absent.json")
    done = subprocess.run([sys.executable, str(DCGMI), *RENDERED], env=environ, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "cannot read the mock GPU state" in done.stderr
