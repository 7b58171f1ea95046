"""Diagnose groups lowered to Jobs: a loopback group keeps NCCL on the node's NICs, a no-NVLink group turns MNNVL off."""

from __future__ import annotations

import copy
from typing import Any

from nvcre.compiler.expand import expand_job
from nvcre.compiler.plan import PlannedGroup
from tests.compiler.expand.test_job import plan, workflow


def trainer(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["workload"]["trainJob"]["trainer"]


def mpi_workflow(args: list[str]) -> dict[str, Any]:
    """A runtime with a launcher: variables reach the ranks through mpirun's ``-x``."""
    wf = workflow()
    wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"].update({"command": ["/usr/local/mpi/bin/mpirun"], "args": args})
    return wf


def torch_workflow() -> dict[str, Any]:
    """A runtime without a launcher: variables are the trainer's env."""
    wf = workflow()
    replicated = wf["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"]
    replicated[:] = [r for r in replicated if r["name"] != "launcher"]
    return wf


def test_an_ordinary_group_is_untouched() -> None:
    group = PlannedGroup("group-0", ("n1", "n2"))
    job = expand_job(torch_workflow(), plan(group), group, 1, check_purity=True)
    assert "env" not in trainer(job)
    job = expand_job(mpi_workflow(["-x", "A=1", "prog"]), plan(group), group, 1, check_purity=True)
    assert trainer(job)["args"] == ["-x", "A=1", "prog"]


def test_a_loopback_group_gets_shm_and_p2p_off_as_trainer_env() -> None:
    group = PlannedGroup("local-0", ("n1",), loopback=True)
    wf = torch_workflow()
    wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["env"] = [
        {"name": "NCCL_P2P_DISABLE", "value": "0"},
        {"name": "KEEP", "value": "1"},
    ]
    before = copy.deepcopy(wf)
    job = expand_job(wf, plan(group), group, 2, check_purity=True)
    assert trainer(job)["env"] == [
        {"name": "NCCL_P2P_DISABLE", "value": "1"},
        {"name": "KEEP", "value": "1"},
        {"name": "NCCL_SHM_DISABLE", "value": "1"},
    ]
    assert trainer(job)["numNodes"] == 1
    assert wf == before


def test_under_mpi_the_variables_are_forwarded_with_x_and_existing_pairs_rewritten() -> None:
    args = ["-N", "8", "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_MNNVL_ENABLE=1", "/usr/local/bin/all_reduce_perf_mpi", "-b", "8"]
    group = PlannedGroup("screen-no-nvl-a", ("n1", "n2"), no_nvl=True)
    job = expand_job(mpi_workflow(args), plan(group), group, 1, check_purity=True)
    assert trainer(job)["args"] == [
        "-N",
        "8",
        "-x",
        "NCCL_DEBUG=INFO",
        "-x",
        "NCCL_MNNVL_ENABLE=0",
        "/usr/local/bin/all_reduce_perf_mpi",
        "-b",
        "8",
    ]
    loop = PlannedGroup("local-0", ("n1",), loopback=True)
    job = expand_job(mpi_workflow(args), plan(loop), loop, 1, check_purity=True)
    assert trainer(job)["args"] == [
        "-N",
        "8",
        "-x",
        "NCCL_DEBUG=INFO",
        "-x",
        "NCCL_MNNVL_ENABLE=1",
        "-x",
        "NCCL_SHM_DISABLE=1",
        "-x",
        "NCCL_P2P_DISABLE=1",
        "/usr/local/bin/all_reduce_perf_mpi",
        "-b",
        "8",
    ]


def test_without_any_x_pair_the_variables_lead_the_launcher_arguments() -> None:
    loop = PlannedGroup("local-1", ("n2",), loopback=True)
    job = expand_job(mpi_workflow(["/usr/local/bin/all_reduce_perf_mpi"]), plan(loop), loop, 1)
    assert trainer(job)["args"] == ["-x", "NCCL_SHM_DISABLE=1", "-x", "NCCL_P2P_DISABLE=1", "/usr/local/bin/all_reduce_perf_mpi"]


def test_a_single_node_screen_takes_no_threshold_written_for_the_workload() -> None:
    wf = torch_workflow()
    wf["spec"]["validation"] = {
        "performance": {"thresholds": {"thresholds": {"busBandwidthGBps": "value >= 100"}}, "measurementTimeout": "7m"}
    }
    loop = PlannedGroup("local-0", ("n1",), loopback=True)
    job = expand_job(wf, plan(loop), loop, 1, check_purity=True)
    assert "thresholds" not in job["spec"] and job["spec"]["measurementTimeout"] == "7m"
    group = PlannedGroup("path-0", ("n1", "n2"))
    job = expand_job(wf, plan(group), group, 2, check_purity=True)
    assert job["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 100"}
