"""The simulated cluster's pure parts, offline: profiles, faults, workload recognition,
log shapes and the player's decisions (no processes are started here)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.detect.dra import product_label_value
from nvcre.compiler.detect.gpu_arch import parse_product as architecture_of_product
from nvcre.testing import simlogs
from nvcre.testing.simfaults import FaultError, parse_assignment, parse_fault
from nvcre.testing.simplayer import decide
from nvcre.testing.simprofiles import (
    PROFILE_NAMES,
    ProfileError,
    check_platform,
    node_object,
    profile,
    provider_id,
    resource_slice,
)
from nvcre.testing.simworkloads import WorkloadError, classify, parse_size
from tests.simobjects import RenderShapeError, runtime_of, trainjob_of

ROOT = Path(__file__).resolve().parents[2]
BANDWIDTH = re.compile(
    yaml.safe_load((ROOT / "catalog/logprofiles/nccl-bandwidth.yaml").read_text())["spec"]["patterns"]["bandwidthResult"]["regex"]
)
TRANSPORT = re.compile(
    yaml.safe_load((ROOT / "catalog/logprofiles/nccl-bandwidth.yaml").read_text())["spec"]["patterns"]["networkTransport"]["regex"]
)
TRAINING = re.compile(
    yaml.safe_load((ROOT / "catalog/logprofiles/megatron-training.yaml").read_text())["spec"]["patterns"]["trainingStep"]["regex"]
)


# ------------------------------------------------------------------ profiles


@pytest.mark.parametrize("name", ["h100", "h200", "b200", "b300", "gb200", "gb300"])
def test_profile_product_label_detects_back_to_its_architecture(name: str) -> None:
    node = node_object(f"{name}-0", profile(name), "", 0)
    labels = node["metadata"]["labels"]
    assert architecture_of_product(labels["nvidia.com/gpu.product"]) == name
    assert labels["nvidia.com/gpu.present"] == "true"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == labels["nvidia.com/gpu.count"]
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]


def test_gb_parts_are_arm64_with_cliques_and_the_arm64_taint_on_prem_only() -> None:
    onprem = node_object("gb-0", profile("gb300"), "onprem", 0)
    aws = node_object("gb-0", profile("gb200"), "aws", 0)
    assert onprem["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert onprem["metadata"]["labels"]["nvidia.com/gpu.clique"].endswith(".0")
    assert any(t["key"] == "kubernetes.io/arch" for t in onprem["spec"]["taints"])
    assert not any(t["key"] == "kubernetes.io/arch" for t in aws["spec"]["taints"])
    # 18 trays per NVL72 rack: the 19th node starts the next clique
    assert node_object("gb-18", profile("gb200"), "", 18)["metadata"]["labels"]["nvidia.com/gpu.clique"].endswith(".1")


@pytest.mark.parametrize(
    ("platform", "prefix"),
    [("aws", "aws:///"), ("gcp", "gce://"), ("azure", "azure:///"), ("oci", "ocid1."), ("nscale", "nscale://")],
)
def test_platform_picks_the_provider_id(platform: str, prefix: str) -> None:
    assert provider_id(platform, "n1").startswith(prefix)
    assert node_object("n1", profile("h100"), platform, 0)["spec"]["providerID"].startswith(prefix)


def test_on_prem_nodes_have_no_provider_id_and_bad_platforms_are_refused() -> None:
    assert "providerID" not in node_object("n1", profile("h100"), "", 0)["spec"]
    assert check_platform("onprem") == ""
    with pytest.raises(ProfileError, match="unknown platform 'mars'"):
        check_platform("mars")
    with pytest.raises(ProfileError, match="unknown node profile 'a10'"):
        profile("a10")


def test_dra_profile_publishes_resource_slices_and_no_product_label() -> None:
    prof = profile("gb200-dra")
    node = node_object("d-0", prof, "", 0)
    assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]
    slice_ = resource_slice("d-0", prof)
    assert slice_["spec"]["driver"] == "gpu.nvidia.com" and slice_["spec"]["nodeName"] == "d-0"
    assert len(slice_["spec"]["devices"]) == 4
    name = slice_["spec"]["devices"][0]["attributes"]["productName"]["string"]
    assert product_label_value(name) == "NVIDIA-GB200"
    assert set(PROFILE_NAMES) >= {"h100", "gb300", "h100-dra"}


# -------------------------------------------------------------------- faults


def test_fault_specs_parse_and_bad_ones_say_why() -> None:
    assert parse_fault("slow-link").factor == 0.1
    assert parse_fault("slow-link:0.5").link_quality == 0.5
    assert str(parse_fault("slow-link:0.25")) == "slow-link:0.25"
    assert parse_assignment("gpu-1=xid") == ("gpu-1", parse_fault("xid"))
    for bad, message in (
        ("gpu-1", "NODE=KIND"),
        ("gpu-1=melt", "unknown fault"),
        ("gpu-1=slow-link:2", r"\(0, 1\]"),
        ("gpu-1=slow-link:x", "must be a number"),
        ("gpu-1=hang:3", "takes no argument"),
    ):
        with pytest.raises(FaultError, match=message):
            parse_assignment(bad)


# ------------------------------------------------------------ workloads


def _pod(command: list[str], args: list[str], *, mpi: bool = False, rj: str = "node", name: str = "p",
         node: str = "n0", index: int = 0, requests: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [{"name": "node", "command": command, "args": args, "resources": {"limits": requests or {}}}],
    }
    if mpi:
        spec["volumes"] = [{"name": "mpi-ssh-auth", "secret": {"secretName": "x"}}]
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "labels": {"jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/replicatedjob-name": rj},
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
            "ownerReferences": [{"kind": "Job", "name": "j"}],
        },
        "spec": spec,
        "status": {"phase": "Running"},
    }


MPIRUN = ["timeout", "3600", "/usr/local/mpi/bin/mpirun"]
MPI_ARGS = ["-N", "8", "-x", "NCCL_DEBUG=INFO", "/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "1G", "-f", "2"]


def test_classify_recognises_each_workload_kind() -> None:
    launcher = classify(_pod(MPIRUN, MPI_ARGS, mpi=True, rj="launcher"))
    assert launcher.kind == "nccl-mpi" and launcher.nccl is not None
    assert (launcher.nccl.min_bytes, launcher.nccl.max_bytes, launcher.nccl.step_factor) == (8, 1 << 30, 2)
    assert classify(_pod(["sh", "-c"], ["exec /usr/sbin/sshd -De"], mpi=True)).kind == "mpi-worker"
    loop = classify(_pod(["/opt/nccl-tests/build/all_reduce_perf"], ["-b", "8", "-e", "16G", "-g", "8"]))
    assert loop.kind == "nccl-loopback" and loop.nccl is not None and loop.nccl.gpus_per_process == 8
    assert classify(_pod(["/bin/bash"], ["/config/train.sh"])).kind == "training"
    dcgm = classify(_pod(["dcgmi"], ["diag", "--run", "4", "--json"]))
    assert (dcgm.kind, dcgm.dcgm_level, dcgm.dcgm_json) == ("dcgm", 4, True)
    assert classify(_pod(["sleep"], ["1"])).kind == "generic"


def test_nccl_sizes_parse_and_a_bad_one_is_an_error() -> None:
    assert parse_size("16G") == 16 << 30 and parse_size("512M") == 512 << 20 and parse_size("8") == 8
    with pytest.raises(WorkloadError, match="not an nccl-tests size"):
        classify(_pod(MPIRUN, ["/usr/local/bin/all_reduce_perf_mpi", "-b", "lots"], mpi=True, rj="launcher"))


# ------------------------------------------------------------------ logs


def _ranks(nodes: list[str], per_node: int = 2) -> list[simlogs.Rank]:
    return [simlogs.Rank(n, d, 100 + d, "NVIDIA B200") for n in nodes for d in range(per_node)]


def test_nccl_log_has_the_real_shape_and_the_profile_reads_every_row() -> None:
    run = simlogs.NcclRun("all_reduce_perf_mpi", min_bytes=8, max_bytes=1 << 30, step_factor=2)
    lines = [line.text for line in simlogs.nccl_log(run, _ranks(["a", "b"]), simlogs.NcclOutcome(390.0, "IB"))]
    text = "\n".join(lines)
    rows = [BANDWIDTH.match(line) for line in lines]
    rows = [r for r in rows if r]
    assert len(rows) == 28  # 8 B .. 1 GiB, factor 2
    assert 0.97 * 390 < max(float(r.group("busBW")) for r in rows) < 1.02 * 390
    assert re.search(r"^#  Rank  0 Group  0 Pid +100 on +a device  0 ", text, re.M)
    assert {m.group("transport") for m in map(TRANSPORT.search, lines) if m} == {"IB"}
    assert "# Out of bounds values : 0 OK" in lines
    avg = next(line for line in lines if line.startswith("# Avg bus bandwidth"))
    assert re.fullmatch(r"# Avg bus bandwidth    : [\d.]+ ", avg)
    # the exact column layout of nccl-tests: 12-wide size, then 2-space-separated fields
    row = next(line for line in lines if line.lstrip().startswith("1048576 "))
    layout = r" {5}1048576 {8}262144 {5}float {5}sum {6}-1( {2}[ \d.]{7} {2}[ \d.]{6} {2}[ \d.]{6} {7}0){2}"
    assert re.fullmatch(layout, row)


def test_nccl_log_is_deterministic_per_seed_and_scales_with_link_quality() -> None:
    run = simlogs.NcclRun("all_reduce_perf_mpi", max_bytes=1 << 28)
    one = simlogs.nccl_log(run, _ranks(["a", "b"]), simlogs.NcclOutcome(400.0, "Socket", seed="s"))
    two = simlogs.nccl_log(run, _ranks(["a", "b"]), simlogs.NcclOutcome(400.0, "Socket", seed="s"))
    slow = simlogs.nccl_log(run, _ranks(["a", "b"]), simlogs.NcclOutcome(40.0, "Socket", seed="s"))
    assert one == two

    def peak(lines: list[simlogs.LogLine]) -> float:
        return max(float(m.group("busBW")) for m in (BANDWIDTH.match(x.text) for x in lines) if m)

    assert 0.09 < peak(slow) / peak(one) < 0.11


def test_nccl_crash_names_the_node_and_prints_no_rows() -> None:
    run = simlogs.NcclRun("all_reduce_perf_mpi")
    lines = simlogs.nccl_log(run, _ranks(["a", "b"]), simlogs.NcclOutcome(390.0, "IB", crash_node="b"))
    texts = [line.text for line in lines]
    assert "b: Test NCCL failure common.cu:1049 'remote process exited or there was a network error / '" in texts
    assert not any(BANDWIDTH.match(t) for t in texts)


def test_training_log_matches_the_megatron_profile() -> None:
    started = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)
    lines = simlogs.training_log(simlogs.TrainingRun(world_size=16), started)
    steps = [m for m in (TRAINING.search(line.text) for line in lines) if m]
    assert [int(m.group("iteration")) for m in steps] == list(range(10, 201, 10))
    assert all(float(m.group("tflops")) > 500 for m in steps)
    assert any("using world size: 16" in line.text for line in lines)
    assert sum("saving checkpoint at iteration" in line.text for line in lines) == 2


def test_cri_lines_carry_an_rfc3339_nano_timestamp_and_the_stream() -> None:
    when = datetime(2026, 12, 2, 15, 1, 33, 123456, tzinfo=timezone.utc)
    assert simlogs.cri_line(when, simlogs.LogLine(0, "hello")) == "2026-12-02T15:01:33.123456000Z stdout F hello\n"


def test_dcgm_json_reports_the_xid_gpu_as_failed() -> None:
    import json

    ok = simlogs.DcgmRun("n", 8, "NVIDIA H100 80GB HBM3")
    bad = simlogs.DcgmRun("n", 8, "NVIDIA H100 80GB HBM3", failing_gpu=3)
    assert not simlogs.dcgm_failed(ok) and simlogs.dcgm_failed(bad)
    doc = json.loads("\n".join(line.text for line in simlogs.dcgm_log(bad)))
    statuses = {(t["name"], r["entity_id"]): r["status"]
                for c in doc["DCGM Diagnostic"]["test_categories"] for t in c["tests"] for r in t["results"]}  # fmt: skip
    assert statuses[("diagnostic", 3)] == "Fail" and statuses[("diagnostic", 2)] == "Pass"


# ------------------------------------------------------------- decisions


class View:
    def __init__(self, faults: dict[str, str]) -> None:
        self.faults = {n: parse_fault(k) for n, k in faults.items()}

    def profile_of(self, node: str):
        return profile("b200")

    def fault_of(self, node: str):
        return self.faults.get(node, parse_fault("none"))

    def trigger_xid(self, node: str) -> None:  # pragma: no cover - not called by decide
        raise AssertionError


def _group(faults: dict[str, str], preset: str | None = None):
    launcher = _pod(MPIRUN, MPI_ARGS, mpi=True, rj="launcher", name="launcher", node="n0",
                    requests={"cpu": "2"})  # fmt: skip
    if preset is not None:
        launcher["metadata"]["annotations"]["sim.nvcre.io/exit-code"] = preset
    workers = [
        _pod(["sh"], [], mpi=True, name=f"w{i}", node=f"n{i}", index=i, requests={"nvidia.com/gpu": "8", "rdma/ib": "8"}) for i in range(2)
    ]
    pods = [launcher, *workers]
    decision = decide(launcher, classify(launcher), pods, View(faults), seed="t", started=datetime.now(timezone.utc))
    return decision


def test_decisions_follow_the_group_faults() -> None:
    healthy = _group({})
    assert healthy.exit_code == 0 and healthy.seconds > 0
    assert any("via NET/IB/" in line.text for line in healthy.lines)
    crash = _group({"n1": "nccl-crash"})
    assert crash.exit_code == 1 and any("n1: Test NCCL failure" in line.text for line in crash.lines)
    assert _group({"n0": "hang"}).exit_code is None
    xid = _group({"n1": "xid"})
    assert xid.exit_code is None and xid.xid_nodes == ("n1",)
    assert _group({}, preset="3").exit_code == 3


# ---------------------------------------------------------------- render


def test_runtime_and_trainjob_come_from_a_rendered_workflow() -> None:
    docs = yaml.safe_load_all((ROOT / "golden/render/onprem-b200-all-reduce/expected.yaml").read_text())
    workflow = next(d for d in docs if d and d.get("kind") == "Workflow")
    runtime = runtime_of(workflow, namespace="ns", backoff_limit=0, replicated_job="launcher")
    limits = {rj["name"]: rj["template"]["spec"].get("backoffLimit") for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    assert limits == {"node": None, "launcher": 0} and runtime["metadata"]["namespace"] == "ns"
    job = trainjob_of(workflow, "t", namespace="ns", num_nodes=2, launcher_exit_code=3)
    assert job["spec"]["trainer"]["numNodes"] == 2
    assert job["spec"]["runtimePatches"][-1]["manager"] == "sim.nvcre.io/test"
    assert workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["numNodes"] == 1  # untouched
    with pytest.raises(RenderShapeError, match="no TrainingRuntime"):
        runtime_of({"spec": {}}, namespace="ns")


def test_mpi_processes_per_node_come_from_mpirun_not_from_nccl_tests_flags() -> None:
    from nvcre.testing.simplayer import procs_per_node

    assert procs_per_node([*MPIRUN, *MPI_ARGS, "-N", "10"], 4) == 8
    assert procs_per_node([*MPIRUN, "/usr/local/bin/all_reduce_perf_mpi", "-N", "10"], 4) == 4


def test_the_simulated_dra_driver_reports_each_joined_node_and_keeps_it():
    from nvcre.testing.simdomains import channel_slice, claim_template, compute_domain_crd, domain_status

    crd = compute_domain_crd()
    assert crd["metadata"]["name"] == "computedomains.resource.nvidia.com"
    assert crd["spec"]["versions"][0]["name"] == "v1beta1"
    domain = {
        "metadata": {"name": "cd", "namespace": "ns", "uid": "u-1"},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "x-channel"}}},
    }
    template = claim_template(domain)
    assert template is not None and template["metadata"]["name"] == "x-channel"
    params = template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    assert params["domainID"] == "u-1" and params["allocationMode"] == "Single"
    assert channel_slice("gb-0", profile("gb200"))["spec"]["devices"][0]["attributes"]["type"] == {"string": "channel"}

    def pod(node: str, claim: str = "x-channel") -> dict:
        return {
            "metadata": {"namespace": "ns"},
            "spec": {"nodeName": node, "resourceClaims": [{"name": "c", "resourceClaimTemplateName": claim}]},
        }

    nodes = {n: {"metadata": {"labels": {"nvidia.com/gpu.clique": "c.0"}}} for n in ("gb-0", "gb-1")}
    half = domain_status(domain, [pod("gb-0"), pod("gb-1", "other")], nodes, lambda n: False)
    assert half["status"] == "NotReady" and [n["name"] for n in half["nodes"]] == ["gb-0"]
    whole = domain_status(domain, [pod("gb-0"), pod("gb-1")], nodes, lambda n: False)
    assert whole["status"] == "Ready" and [n["index"] for n in whole["nodes"]] == [0, 1]
    kept = domain_status({**domain, "status": whole}, [], nodes, lambda n: n == "gb-1")
    assert kept["status"] == "NotReady" and [n["status"] for n in kept["nodes"]] == ["Ready", "NotReady"]
