"""The simulated cluster's ``corrupt-data`` fault prints what a corrupted collective prints, and
the real parser reads it as corrupted: non-zero ``#wrong`` from the middle size on, ``Out of bounds
values : N FAILED`` at the end, the rows still there."""

from __future__ import annotations

from pathlib import Path

import yaml

from nvcre.runtime.measure import nccl
from nvcre.testing import simlogs
from nvcre.testing.simfaults import parse_fault

PROFILE = yaml.safe_load((Path(__file__).resolve().parents[2] / "catalog/logprofiles/nccl-bandwidth.yaml").read_text())["spec"]


def _log(wrong: int) -> list[str]:
    run = simlogs.NcclRun(binary="all_reduce_perf_mpi", min_bytes=1024, max_bytes=1024 * 1024)
    ranks = [simlogs.Rank(node, device, 400 + device, "NVIDIA H100 80GB HBM3") for node in ("a", "b") for device in range(2)]
    outcome = simlogs.NcclOutcome(bus_bandwidth_gbps=400.0, transport="IB", wrong_elements=wrong, seed="t")
    return [line.text for line in simlogs.nccl_log(run, ranks, outcome)]


def test_the_fault_is_a_known_kind() -> None:
    assert parse_fault("corrupt-data").kind == "corrupt-data"


def test_a_corrupted_run_is_read_as_corrupted_whatever_its_bandwidth() -> None:
    lines = _log(237858)
    assert any(line.startswith("# Out of bounds values :") and line.endswith("FAILED") for line in lines)
    parsed = nccl.parse_bandwidth(lines, PROFILE)
    assert parsed.results, "the rows stay visible"
    fields = nccl.status_fields(parsed)
    assert fields["failure"]["reason"] == "CollectiveDataCorrupted"
    assert fields["results"]


def test_a_healthy_run_has_no_failure() -> None:
    lines = _log(0)
    assert "# Out of bounds values : 0 OK" in lines
    assert "failure" not in nccl.status_fields(nccl.parse_bandwidth(lines, PROFILE))
