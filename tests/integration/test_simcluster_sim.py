"""The simulated GPU cluster runs the project's rendered workloads end to end.

Each test adds its own GPU nodes (removed afterwards), creates the TrainingRuntime
and a TrainJob from a golden render, and watches the real Trainer, JobSet, Job
controller and scheduler drive pods that kwok runs and the workload player ends.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.testing.simfaults import XID_CONDITION
from tests.integration.integration_helpers import eventually
from tests.simobjects import runtime_of, trainjob_of

pytestmark = [pytest.mark.integration, pytest.mark.sim]

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden" / "render"
DATA = Path(__file__).resolve().parent / "data"
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
LAUNCHER = "jobset.sigs.k8s.io/replicatedjob-name=launcher"


def _profile_regex(name: str, pattern: str) -> re.Pattern[str]:
    doc = yaml.safe_load((ROOT / "catalog" / "logprofiles" / f"{name}.yaml").read_text())
    return re.compile(doc["spec"]["patterns"][pattern]["regex"])


BANDWIDTH_ROW = _profile_regex("nccl-bandwidth", "bandwidthResult")
TRAINING_STEP = _profile_regex("megatron-training", "trainingStep")


def golden_workflow(case: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((GOLDEN / case / "expected.yaml").read_text()) if d]
    return next(d for d in docs if d.get("kind") == "Workflow")


def submit(api_client, namespace: str, workflow: dict[str, Any], name: str, *, nodes: int,
           fast_fail: bool = False) -> None:  # fmt: skip
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    runtime = runtime_of(
        workflow,
        namespace=namespace,
        backoff_limit=0 if fast_fail else None,
        replicated_job="launcher" if fast_fail else None,
    )
    try:
        custom.create_namespaced_custom_object(*TRAINER, namespace, "trainingruntimes", runtime)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    create_trainjob(custom, namespace, trainjob_of(workflow, name, namespace=namespace, num_nodes=nodes))


def create_trainjob(custom, namespace: str, body: dict[str, Any]) -> None:
    """Create a TrainJob, retrying while the Trainer's webhook has not seen its new runtime yet.

    The validating webhook looks the runtime up in the controller's cache, so right after
    the runtime is created it can still answer 403 "not found" for a moment.
    """
    import time

    from kubernetes import client

    deadline = time.monotonic() + 15
    while True:
        try:
            custom.create_namespaced_custom_object(*TRAINER, namespace, "trainjobs", body)
            return
        except client.ApiException as exc:
            if exc.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def trainjob_condition(api_client, namespace: str, name: str) -> str | None:
    """ "Complete" or "Failed" once the TrainJob has finished, else None."""
    from kubernetes import client

    job = client.CustomObjectsApi(api_client).get_namespaced_custom_object(*TRAINER, namespace, "trainjobs", name)
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def wait_finished(api_client, namespace: str, name: str, timeout: float = 90) -> str:
    return eventually(
        lambda: trainjob_condition(api_client, namespace, name),
        timeout=timeout,
        what=f"TrainJob {name} to finish",
    )


def launcher_log(api_client, namespace: str, trainjob: str) -> str:
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    pods = core.list_namespaced_pod(namespace, label_selector=f"{LAUNCHER},jobset.sigs.k8s.io/jobset-name={trainjob}").items
    assert pods, f"no launcher pod of {trainjob}"
    return core.read_namespaced_pod_log(pods[0].metadata.name, namespace, container="node")


def bus_bandwidths(log: str) -> list[float]:
    values = []
    for line in log.splitlines():
        match = BANDWIDTH_ROW.match(line)
        if match:
            values.append(float(match.group("busBW")))
    return values


def test_mpi_all_reduce_completes_and_its_log_is_read_through_the_api(simcluster, sim_namespace):
    nodes = simcluster.add_nodes(profile="b200", count=2, prefix=f"{sim_namespace}-b200")
    workflow = golden_workflow("onprem-b200-all-reduce")
    with simcluster.api_client() as api_client:
        submit(api_client, sim_namespace, workflow, "ar", nodes=2)
        assert wait_finished(api_client, sim_namespace, "ar") == "Complete"
        log = launcher_log(api_client, sim_namespace, "ar")
    assert "# Collective test starting: all_reduce_perf_mpi" in log
    assert "#       size         count      type   redop    root     time   algbw   busbw" in log
    # -b 8 -e 16G -f 2: 32 sizes, each a row the nccl-bandwidth LogProfile reads
    values = bus_bandwidths(log)
    assert len(values) == 32
    assert 0.95 * 390 < max(values) < 1.02 * 390
    rank_nodes = set(re.findall(r"^#  Rank +\d+ Group +0 Pid +\d+ on +(\S+) ", log, re.M))
    assert rank_nodes == set(nodes)
    assert "via NET/IB/" in log and "# Out of bounds values : 0 OK" in log
    assert re.search(r"^# Avg bus bandwidth    : [\d.]+ $", log, re.M)


def test_nccl_crash_fails_the_trainjob_and_names_the_node(simcluster, sim_namespace):
    nodes = simcluster.add_nodes(profile="b200", count=2, prefix=f"{sim_namespace}-b200")
    simcluster.set_fault(nodes[1], "nccl-crash")
    workflow = golden_workflow("onprem-b200-all-reduce")
    with simcluster.api_client() as api_client:
        submit(api_client, sim_namespace, workflow, "crash", nodes=2, fast_fail=True)
        assert wait_finished(api_client, sim_namespace, "crash") == "Failed"
        log = launcher_log(api_client, sim_namespace, "crash")
    assert f"{nodes[1]}: Test NCCL failure" in log
    assert not bus_bandwidths(log)


def test_slow_link_lowers_bus_bandwidth_in_its_group_only(simcluster, sim_namespace):
    nodes = simcluster.add_nodes(profile="b200", count=4, prefix=f"{sim_namespace}-b200")
    slow = nodes[2]
    simcluster.set_fault(slow, "slow-link:0.5")
    workflow = golden_workflow("onprem-b200-all-reduce")
    peaks: dict[bool, float] = {}
    with simcluster.api_client() as api_client:
        for name in ("g1", "g2"):
            submit(api_client, sim_namespace, workflow, name, nodes=2)
        for name in ("g1", "g2"):
            assert wait_finished(api_client, sim_namespace, name) == "Complete"
            log = launcher_log(api_client, sim_namespace, name)
            has_slow = f" on {slow} " in log
            peaks[has_slow] = max(bus_bandwidths(log))
    assert set(peaks) == {True, False}, "the slow node should be in exactly one group"
    assert peaks[False] > 0.95 * 390
    assert 0.45 * 390 < peaks[True] < 0.52 * 390


def test_xid_adds_the_health_condition_and_cordons_the_node_mid_run(simcluster, sim_namespace):
    from kubernetes import client

    nodes = simcluster.add_nodes(profile="b200", count=2, prefix=f"{sim_namespace}-b200")
    simcluster.set_fault(nodes[0], "xid")
    workflow = golden_workflow("onprem-b200-all-reduce")
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        before = core.read_node(nodes[0])
        assert not before.spec.unschedulable
        submit(api_client, sim_namespace, workflow, "xid", nodes=2)

        def health_condition():
            node = core.read_node(nodes[0])
            found = [c for c in node.status.conditions or [] if c.type == XID_CONDITION]
            return (node, found[0]) if found and node.spec.unschedulable else None

        node, condition = eventually(health_condition, timeout=60, what="the Xid condition and cordon")
        assert condition.status == "False" and "Xid" in condition.message
        assert trainjob_condition(api_client, sim_namespace, "xid") is None  # still running
        assert not core.read_node(nodes[1]).spec.unschedulable


def test_no_capacity_leaves_pods_unschedulable_with_the_scheduler_message(simcluster, sim_namespace):
    from kubernetes import client

    nodes = simcluster.add_nodes(profile="b200", count=2, prefix=f"{sim_namespace}-b200")
    simcluster.set_fault(nodes[1], "no-capacity")
    workflow = golden_workflow("onprem-b200-all-reduce")
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        submit(api_client, sim_namespace, workflow, "nocap", nodes=2)

        def unschedulable():
            for pod in core.list_namespaced_pod(sim_namespace).items:
                for c in pod.status.conditions or []:
                    if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                        return c.message
            return None

        message = eventually(unschedulable, timeout=60, what="an Unschedulable worker pod")
    assert "Insufficient nvidia.com/gpu" in message


def test_torch_trainjob_completes(simcluster, sim_namespace):
    from kubernetes import client

    simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-h100")
    runtime = yaml.safe_load((DATA / "trainingruntime.yaml").read_text())
    pod_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    trainjob = yaml.safe_load((DATA / "trainjob.yaml").read_text())
    with simcluster.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        custom.create_namespaced_custom_object(*TRAINER, sim_namespace, "trainingruntimes", runtime)
        create_trainjob(custom, sim_namespace, trainjob)
        assert wait_finished(api_client, sim_namespace, "torch-smoke") == "Complete"
        pods = client.CoreV1Api(api_client).list_namespaced_pod(sim_namespace).items
    assert len(pods) == 2 and {p.status.phase for p in pods} == {"Succeeded"}


def test_megatron_training_logs_iteration_lines_the_logprofile_reads(simcluster, sim_namespace):
    from kubernetes import client

    simcluster.add_nodes(profile="b300", count=2, prefix=f"{sim_namespace}-b300")
    workflow = golden_workflow("onprem-b300-nemotron5-8b")
    with simcluster.api_client() as api_client:
        submit(api_client, sim_namespace, workflow, "train", nodes=2)
        assert wait_finished(api_client, sim_namespace, "train") == "Complete"
        core = client.CoreV1Api(api_client)
        pods = sorted(
            core.list_namespaced_pod(sim_namespace).items,
            key=lambda p: int((p.metadata.annotations or {}).get("batch.kubernetes.io/job-completion-index", "0")),
        )
        logs = [core.read_namespaced_pod_log(p.metadata.name, sim_namespace, container="node") for p in pods]
    assert "using world size: 16" in logs[0]
    steps = [m for m in map(TRAINING_STEP.search, logs[-1].splitlines()) if m]
    assert len(steps) == 20
    assert [int(m.group("iteration")) for m in steps] == list(range(10, 201, 10))
    assert json.dumps(sorted(p.status.phase for p in pods)) == '["Succeeded", "Succeeded"]'


def test_single_node_loopback_reports_the_nvlink_bandwidth(simcluster, sim_namespace):
    from kubernetes import client

    (node,) = simcluster.add_nodes(profile="h100", count=1, prefix=f"{sim_namespace}-h100")
    workflow = golden_workflow("nccl-loopback-onprem-h100")
    with simcluster.api_client() as api_client:
        submit(api_client, sim_namespace, workflow, "loop", nodes=1)
        assert wait_finished(api_client, sim_namespace, "loop") == "Complete"
        core = client.CoreV1Api(api_client)
        (pod,) = core.list_namespaced_pod(sim_namespace).items
        log = core.read_namespaced_pod_log(pod.metadata.name, sim_namespace, container="node")
    assert "# nThread 1 nGpus 8 minBytes 8 maxBytes 17179869184" in log
    assert len(re.findall(rf"^#  Rank +\d+ Group +0 Pid +\d+ on +{node} device", log, re.M)) == 8
    assert 0.95 * 480 < max(bus_bandwidths(log)) < 1.02 * 480


def test_dcgm_diag_prints_json_and_an_xid_fails_it(simcluster, sim_namespace):
    from kubernetes import client

    good, bad = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-h100")
    simcluster.set_fault(bad, "xid")
    workflow = golden_workflow("dcgm-level4-onprem-h100")
    results = {}
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        runtime = runtime_of(workflow, namespace=sim_namespace, backoff_limit=0)
        custom.create_namespaced_custom_object(*TRAINER, sim_namespace, "trainingruntimes", runtime)
        for node in (good, bad):  # one diag pinned to each node
            job = trainjob_of(workflow, f"diag-{node[-1]}", namespace=sim_namespace)
            pin = {"template": {"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": node}}}}}}
            job["spec"].setdefault("runtimePatches", []).append(
                {
                    "manager": "sim.nvcre.io/test",
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node", **pin}]}}},
                }
            )
            create_trainjob(custom, sim_namespace, job)
        for node in (good, bad):
            name = f"diag-{node[-1]}"
            state = wait_finished(api_client, sim_namespace, name)
            (pod,) = core.list_namespaced_pod(sim_namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}").items
            assert pod.spec.node_name == node
            report = json.loads(core.read_namespaced_pod_log(pod.metadata.name, sim_namespace, container="node"))
            statuses = {(t["name"], r["entity_id"]): r["status"]
                        for c in report["DCGM Diagnostic"]["test_categories"] for t in c["tests"]
                        for r in t["results"]}  # fmt: skip
            results[node] = (state, statuses)
    assert results[good][0] == "Complete" and set(results[good][1].values()) == {"Pass"}
    assert results[bad][0] == "Failed" and results[bad][1][("diagnostic", 3)] == "Fail"


def test_dra_nodes_publish_resource_slices_without_a_product_label(simcluster, sim_namespace):
    from kubernetes import client

    (node,) = simcluster.add_nodes(profile="gb200-dra", count=1, prefix=f"{sim_namespace}-dra")
    with simcluster.api_client() as api_client:
        found = client.CustomObjectsApi(api_client).list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", field_selector=f"spec.nodeName={node}"
        )["items"]
        labels = client.CoreV1Api(api_client).read_node(node).metadata.labels
    # the GPU driver's slice, and (GB200: multi-node NVLink) the compute-domain driver's IMEX channel
    by_driver = {s["spec"]["driver"]: s for s in found}
    assert sorted(by_driver) == ["compute-domain.nvidia.com", "gpu.nvidia.com"]
    assert len(by_driver["gpu.nvidia.com"]["spec"]["devices"]) == 4
    assert [d["name"] for d in by_driver["compute-domain.nvidia.com"]["spec"]["devices"]] == ["channel-0"]
    assert "nvidia.com/gpu.product" not in labels


def test_hang_keeps_the_launcher_running_with_a_partial_log(simcluster, sim_namespace):
    import time

    from kubernetes import client

    nodes = simcluster.add_nodes(profile="b200", count=2, prefix=f"{sim_namespace}-b200")
    simcluster.set_fault(nodes[0], "hang")
    workflow = golden_workflow("onprem-b200-all-reduce")
    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        submit(api_client, sim_namespace, workflow, "stuck", nodes=2)

        def launcher_rows():
            pods = core.list_namespaced_pod(sim_namespace, label_selector=LAUNCHER).items
            if not pods or pods[0].status.phase != "Running":
                return None
            try:
                log = core.read_namespaced_pod_log(pods[0].metadata.name, sim_namespace, container="node")
            except client.ApiException as exc:
                if exc.status == 400:  # "no logs found": Running, but nothing written yet (slow on a loaded machine)
                    return None
                raise
            return bus_bandwidths(log)

        eventually(launcher_rows, timeout=60, what="the launcher to print size rows")
        time.sleep(8)  # a healthy run of this size finishes in about 4 s
        log = launcher_log(api_client, sim_namespace, "stuck")
        (pod,) = core.list_namespaced_pod(sim_namespace, label_selector=LAUNCHER).items
        assert pod.status.phase == "Running"
        assert trainjob_condition(api_client, sim_namespace, "stuck") is None
    assert 0 < len(bus_bandwidths(log)) < 32
    assert "# Avg bus bandwidth" not in log
