"""A Certification carried out end to end on two real nodes: JobSet, the Kubeflow Trainer and the
nvcre controller (``python -m nvcre.runtime``, as it ships) run beside the real kubelets, and
``nvcrectl certification run`` is used as a platform engineer would use it.

The ``communication/nccl-all-reduce`` category PASSES with the bus bandwidth its report gives
taken from the CPU stand-in's real MPI run over TCP between the two nodes' pods; a threshold the
stand-in cannot meet makes it FAIL with ``ThresholdViolation`` naming the group's nodes. There is
no gang scheduler here: the launcher is held back by the rendered JobSet ``dependsOn`` (the
workers Ready by their real ssh readiness probe), which the first test checks. The last test stops
the environment and checks that every process is gone and the host is as it was."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import Environment, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {name}
spec:
  target:
    nodeSelector:
      nvidia.com/gpu.present: "true"
  categories:
  - domain: communication
    variant: nccl-all-reduce
    options:
      nodesPerJob: {nodes_per_job}
      gpusPerNode: {gpus_per_node}
      maxBytes: {max_bytes}
      numIterations: {iterations}
      numCycles: 1
{extra}"""

LOOPBACK = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {name}
spec:
  target:
    nodeNames: [{node}]
  categories:
  - domain: communication
    variant: nccl-loopback-nvswitch
    options:
      gpusPerNode: 2
      maxBytes: 1M
      numIterations: 5
      numCycles: 1
"""


def run_certification(
    env: Environment,
    tmp_path: Path,
    name: str,
    extra: str = "",
    document: str = "",
    *,
    nodes_per_job: int = 2,
    max_bytes: str = "1M",
    iterations: int = 5,
    gpus_per_node: int = 2,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    """``certification run --wait`` of ``document`` (by default the all-reduce Certification above
    with these options and ``extra`` ones); returns (the run, its results file, its namespace)."""
    cert, results = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    options = {"nodes_per_job": nodes_per_job, "max_bytes": max_bytes, "iterations": iterations, "gpus_per_node": gpus_per_node}
    cert.write_text(document or CERTIFICATION.format(name=name, extra=extra, **options))
    run = nvcrectl(
        env.cluster, "certification", "run", "--cert-file", str(cert), "--grant-run-access", "--wait", "--timeout", "5m",
        "--results-file", str(results),
    )  # fmt: skip
    created = re.search(r"created in namespace (\S+?)\.?$", run.stderr, re.MULTILINE)
    assert created is not None, run.stderr
    assert results.is_file(), (run.returncode, run.stderr[-3000:])
    return run, json.loads(results.read_text()), created.group(1)


class LaunchOrder:
    """Watches one namespace while a run goes on: when the launcher pod was created, and when the
    worker pods present at that moment had turned Ready (their Ready condition's time)."""

    def __init__(self, cluster: Any, namespace_prefix: str) -> None:
        self._cluster, self._prefix = cluster, namespace_prefix
        self._stop = threading.Event()
        self.launcher_created: str | None = None
        self.workers_ready: dict[str, str | None] = {}
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from kubernetes import client

        with self._cluster.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            earlier = {n.metadata.name for n in core.list_namespace().items}  # runs of other tests of the shared environment
            while not self._stop.is_set() and self.launcher_created is None:
                pods = [
                    p
                    for p in core.list_pod_for_all_namespaces().items
                    if p.metadata.namespace.startswith(self._prefix) and p.metadata.namespace not in earlier
                ]
                launchers = [p for p in pods if "-launcher-" in p.metadata.name]
                if launchers:
                    self.launcher_created = launchers[0].metadata.creation_timestamp.isoformat()
                    for pod in pods:
                        if "-node-" in pod.metadata.name:
                            ready = [c for c in pod.status.conditions or [] if c.type == "Ready" and c.status == "True"]
                            self.workers_ready[pod.metadata.name] = ready[0].last_transition_time.isoformat() if ready else None
                self._stop.wait(0.3)

    def __enter__(self) -> "LaunchOrder":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _pod_log(cluster: Any, namespace: str, role: str) -> str:
    """The log of the run's one pod whose name holds ``role`` (``-launcher-``, ``-node-``), which ran once."""
    from kubernetes import client

    core = client.CoreV1Api(cluster.api_client())
    [pod] = [p for p in core.list_namespaced_pod(namespace).items if role in p.metadata.name]
    assert [s.restart_count for s in pod.status.container_statuses] == [0]  # the first attempt did it
    return str(core.read_namespaced_pod_log(pod.metadata.name, namespace, container="node"))


def _row_busbw(log: str, size: int) -> float:
    """The out-of-place bus bandwidth the stand-in printed for ``size`` (the column nvcre's LogProfiles read)."""
    [cells] = [line.split() for line in log.splitlines() if line.split()[:1] == [str(size)]]
    return float(cells[7])


def test_a_healthy_all_reduce_certification_passes_with_the_busbw_of_the_standins_real_run(env: Environment, tmp_path: Path) -> None:
    with LaunchOrder(env.cluster, "nvcrectl-") as order:
        run, results, namespace = run_certification(env, tmp_path, "healthy")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "[watch] Certification succeeded." in run.stderr and "Result:       PASSED" in run.stdout
    assert (results["result"], results["failedNodes"], results["totalNodes"]) == ("PASSED", [], 2)
    [category] = results["categories"]
    assert (category["status"], category["nodesPerJob"], category["transport"]) == ("Succeeded", 2, ["Socket"])
    [row] = category["bandwidth"]
    assert row["size"] == "1 MB" and row["samples"] == 1

    # No gang scheduler: the launcher was created only once both workers passed their ssh readiness probe.
    assert order.launcher_created is not None and len(order.workers_ready) == 2, (order.launcher_created, order.workers_ready)
    assert all(ready is not None and ready <= order.launcher_created for ready in order.workers_ready.values()), order.workers_ready

    # The reported bus bandwidth is the one the stand-in measured and printed in the launcher's log.
    log = _pod_log(env.cluster, namespace, "-launcher-")  # mpirun's first attempt found every worker
    assert "nccl-tests CPU stand-in" in log and "# Out of bounds values : 0 OK" in log
    hosts = {line.split(" on ", 1)[1].split()[0] for line in log.splitlines() if line.startswith("#  Rank ")}
    assert len(hosts) == 2 and all("-node-0-" in host for host in hosts), log  # ranks in both workers
    reported = float(row["busBW"].removesuffix(" GB/s"))
    assert reported > 0 and reported == _row_busbw(log, 1 << 20), (row, log)


def test_an_nvlink_loopback_certification_passes_on_one_node_from_the_standins_local_ranks(env: Environment, tmp_path: Path) -> None:
    node = env.cluster.node_names[0]
    run, results, namespace = run_certification(env, tmp_path, "loopback", document=LOOPBACK.format(name="loopback", node=node))
    assert run.returncode == 0, run.stderr[-3000:]
    assert (results["result"], results["totalNodes"], results["failedNodes"]) == ("PASSED", 1, [])
    [category] = results["categories"]
    assert (category["variant"], category["status"]) == ("nccl-loopback-nvswitch", "Succeeded")
    [row] = category["bandwidth"]
    # One process given two GPUs (-g 2) ran as two local ranks of the stand-in, one per device.
    log = _pod_log(env.cluster, namespace, "-node-")
    assert "nGpus 2 " in log and "# Out of bounds values : 0 OK" in log
    assert sorted(line.split(" device ")[1].split()[0] for line in log.splitlines() if line.startswith("#  Rank ")) == ["0", "1"]
    reported = float(row["busBW"].removesuffix(" GB/s"))
    assert row["size"] == "1 MB" and reported > 0 and reported == _row_busbw(log, 1 << 20), (row, log)


def test_a_threshold_the_standin_cannot_meet_fails_with_threshold_violation_naming_the_groups_nodes(
    env: Environment, tmp_path: Path
) -> None:
    extra = '      thresholds:\n        busBandwidthGBps: "value >= 1000"\n'
    run, results, _ = run_certification(env, tmp_path, "unmeetable", extra)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "[watch] Certification failed." in run.stderr and "Result:       FAILED" in run.stdout
    assert results["result"] == "FAILED"
    # One group of two nodes ran the collective: a group below the floor fails both of its nodes.
    assert sorted((d["name"], d["reason"]) for d in results["failedNodeDetails"]) == [
        (node, "ThresholdViolation") for node in sorted(env.cluster.node_names)
    ]
    [category] = results["categories"]
    assert category["status"] == "Failed" and float(category["bandwidth"][0]["busBW"].removesuffix(" GB/s")) > 0


def test_a_killed_rank_fails_its_nodes_group_with_workload_failed_as_the_simulated_crash_does(env: Environment, tmp_path: Path) -> None:
    """SIGKILL to every stand-in rank that starts on one node (the ``killed-rank`` fault): mpirun
    sees a rank die and fails, on each retry of the launcher too, so that node's group fails
    ``WorkloadFailed`` and only that node is blamed, the other node's group passing: what the
    simulated cluster's ``nccl-crash`` gives (tests/integration/test_runtime_sim.py, one node per
    group there too)."""
    victim, healthy = env.cluster.node_names
    env.cluster.set_fault(victim, "killed-rank")
    killer = env.cluster.rank_killers[victim]
    try:
        # one node per group, and runs long enough (4 MiB, 20 iterations) that no rank ends unseen
        run, results, _ = run_certification(env, tmp_path, "killed-rank", nodes_per_job=1, max_bytes="4M", iterations=20)
    finally:
        env.cluster.set_fault(victim, "none")
    assert killer.killed and {k.program for k in killer.killed} == {"all_reduce_perf_mpi"}, killer.killed  # as the catalog renders it
    assert victim not in env.cluster.rank_killers
    assert run.returncode == 1, run.stderr[-3000:]
    assert results["result"] == "FAILED"
    assert [(d["name"], d["reason"]) for d in results["failedNodeDetails"]] == [(victim, "WorkloadFailed")]
    assert healthy not in results["failedNodes"]
    [category] = results["categories"]
    [group] = category["failedGroups"]
    excerpt = group["failureLog"]
    assert excerpt["exitCode"] != 0 and "signal 9" in excerpt["tail"], excerpt


def test_an_oom_killed_rank_fails_its_nodes_group_with_workload_failed_and_the_kernel_did_the_killing(
    env: Environment, tmp_path: Path
) -> None:
    """The ``oom-kill`` fault caps the memory of each container a rank starts in on one node, just
    above what it holds then: the rank outgrows it and the kernel's OOM killer ends it, on each
    retry of the launcher too. The node's group fails ``WorkloadFailed``, that node alone blamed,
    as for a killed rank; the kernel's own count of OOM kills in the capped containers says who
    killed it."""
    victim, healthy = env.cluster.node_names
    env.cluster.set_fault(victim, "oom-kill")
    squeeze, watcher = env.cluster.memory_squeezes[victim], env.cluster.rank_killers[victim]
    done = threading.Event()

    def count_kills() -> None:  # the capped containers go with their pods: read while they live
        while not done.wait(0.25):
            squeeze.oom_kills()

    counting = threading.Thread(target=count_kills, daemon=True)
    counting.start()
    try:
        run, results, _ = run_certification(env, tmp_path, "oom-kill", nodes_per_job=1, max_bytes="4M", iterations=20)
    finally:
        done.set()
        counting.join(timeout=10)
        env.cluster.set_fault(victim, "none")
    assert watcher.killed and {k.program for k in watcher.killed} == {"all_reduce_perf_mpi"}, watcher.killed
    assert victim not in env.cluster.memory_squeezes and victim not in env.cluster.rank_killers
    assert run.returncode == 1, run.stderr[-3000:]
    assert results["result"] == "FAILED"
    assert [(d["name"], d["reason"]) for d in results["failedNodeDetails"]] == [(victim, "WorkloadFailed")]
    assert healthy not in results["failedNodes"]
    assert squeeze.oom_kills() >= 1, squeeze.caps  # the kernel ended the ranks, not a kill() of ours
    [category] = results["categories"]
    [group] = category["failedGroups"]
    assert group["failureLog"]["exitCode"] != 0, group["failureLog"]


class FreezeOnStart:
    """Freezes ``node``'s kubelet (the ``stopped-kubelet`` fault) as soon as a pod of a new run is
    running there, then waits for the run's Job there to be failed by the controller and resumes
    the kubelet (``none``), as an operator restarting it would, so the failed Job's pods can go."""

    def __init__(self, cluster: Any, node: str) -> None:
        self._cluster, self.node = cluster, node
        self._stop = threading.Event()
        self.frozen_pod: str | None = None
        self.not_ready_seen = False
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from kubernetes import client

        with self._cluster.api_client() as api_client:
            core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
            earlier = {n.metadata.name for n in core.list_namespace().items}
            while not self._stop.is_set() and self.frozen_pod is None:
                for pod in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.node}").items:
                    if (
                        pod.metadata.namespace.startswith("nvcrectl-")
                        and pod.metadata.namespace not in earlier
                        and pod.status.phase == "Running"
                    ):
                        self._cluster.set_fault(self.node, "stopped-kubelet")
                        self.frozen_pod = pod.metadata.name
                        break
                self._stop.wait(0.2)
            while not self._stop.is_set() and not self._hardware_failed(custom):
                self._stop.wait(1.0)
            # the kubelet is still frozen here: the node must still be NotReady
            ready = [c for c in core.read_node(self.node).status.conditions or [] if c.type == "Ready"]
            self.not_ready_seen = bool(ready) and ready[0].status != "True"
            self._cluster.set_fault(self.node, "none")

    def _hardware_failed(self, custom: Any) -> bool:
        jobs = custom.list_cluster_custom_object("nvcre.nvidia.com", "v1alpha1", "jobs").get("items") or []
        for job in jobs:
            for condition in (job.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "HardwareFailed" and condition.get("status") == "True":
                    return True
        return False

    def __enter__(self) -> "FreezeOnStart":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._cluster.set_fault(self.node, "none")  # however the run ended


def test_a_node_whose_kubelet_stops_mid_run_is_blamed_as_a_hardware_failure_and_the_other_group_passes(
    env: Environment, tmp_path: Path
) -> None:
    """The victim's kubelet is frozen as soon as a pod of the run runs there: no status, no lease,
    and the node controller marks it NotReady after its grace period (16 s here). Its containers
    go on, but nothing they do reaches the API. nvcre's readiness rule fails the Job holding the
    node with ``HardwareFailureDetected`` in the node controller's words, and no other node is
    blamed."""
    victim, healthy = env.cluster.node_names
    with FreezeOnStart(env.cluster, victim) as freeze:
        run, results, _ = run_certification(env, tmp_path, "not-ready", nodes_per_job=1, max_bytes="4M", iterations=20)
    assert freeze.frozen_pod is not None and freeze.not_ready_seen, (freeze.frozen_pod, freeze.not_ready_seen)
    assert "stopped-kubelet" not in str(env.cluster.faults.get(victim, ""))
    assert run.returncode == 1, run.stderr[-3000:]
    assert results["result"] == "FAILED"
    assert [(d["name"], d["reason"]) for d in results["failedNodeDetails"]] == [(victim, "HardwareFailureDetected")]
    assert "Kubelet stopped posting node status." in results["failedNodeDetails"][0]["message"]
    assert healthy not in results["failedNodes"]


def test_a_dropped_path_between_the_two_nodes_fails_the_group_holding_both_blaming_both(env: Environment, tmp_path: Path) -> None:
    """``dropped-path`` between the two nodes, one group of both: mpirun's ssh to the worker on the
    far side of the cut never connects, so the group's Job runs out of its ``timeoutPerJob`` and
    both nodes are blamed: a certification cannot tell which end of a cut path is at fault (the
    simulated ``bad-link`` is the same fabric fault, slowed rather than cut, and fails the group
    holding both on its threshold); telling them apart is diagnose's work."""
    node, peer = env.cluster.node_names
    env.cluster.set_fault(node, f"dropped-path:{peer}")
    try:
        # one rank per node: the diagnose of this run inherits its options, and its single-node
        # screens judge each node's bandwidth against the other's. The CPU stand-in on two shared
        # cores measures a node alone anywhere from 1.5 to 4.7 GB/s from run to run (16 MiB, 20
        # iterations), so a healthy node fell below 60 % of its peer twice in ten runs and was
        # blamed, as the planner blames a node that fails that often. A single rank moves nothing
        # (bus bandwidth 0 in every screen, so no peer judgement); what is left is what this test
        # is about: every node passes alone and the pair fails, which is a cut path
        run, results, namespace = run_certification(env, tmp_path, "dropped-path", "      timeoutPerJob: 60s\n", gpus_per_node=1)
    finally:
        env.cluster.set_fault(node, "none")
    assert run.returncode == 1, run.stderr[-3000:]
    assert results["result"] == "FAILED"
    assert sorted(d["name"] for d in results["failedNodeDetails"]) == sorted(env.cluster.node_names), results["failedNodeDetails"]
    print(f"dropped path: {json.dumps(results['failedNodeDetails'])}")
    DROPPED.update(name="dropped-path", namespace=namespace)


#: the failed run of the dropped-path test, which the diagnose test starts from
DROPPED: dict[str, str] = {}


def test_diagnose_of_the_dropped_path_run_names_the_cut_as_a_bad_link_and_blames_neither_node(env: Environment, tmp_path: Path) -> None:
    """``nvcrectl certification diagnose`` of that failed run, with the path still cut: each node
    passes alone (the cut is between them), the pair's group runs out of its time again, and the
    diagnosis names the link between the two nodes as an infrastructure fault, blaming neither."""
    assert DROPPED, "the failed run of the dropped-path test is needed"
    node, peer = env.cluster.node_names
    printed = nvcrectl(env.cluster, "certification", "diagnose", DROPPED["name"], "-n", DROPPED["namespace"], timeout=120)
    assert printed.returncode == 0, printed.stderr
    document = tmp_path / "dropped-path-diagnose.yaml"
    document.write_text(printed.stdout)
    results_file = tmp_path / "dropped-path-diagnose.json"
    env.cluster.set_fault(node, f"dropped-path:{peer}")
    try:
        done = nvcrectl(
            env.cluster, "certification", "run", "--cert-file", str(document), "--grant-run-access", "--wait", "--timeout", "14m",
            "--results-file", str(results_file), timeout=900,
        )  # fmt: skip
    finally:
        env.cluster.set_fault(node, "none")
    assert results_file.is_file(), (done.returncode, done.stderr[-3000:])
    [category] = json.loads(results_file.read_text())["categories"]
    diagnosis = category.get("diagnose") or {}
    print(f"dropped-path diagnose: {json.dumps(category.get('diagnosis'))}")
    # each run's nodes, bus bandwidth and verdict: what the planner judged, for a failure's reader
    print(
        f"dropped-path diagnose runs: {json.dumps([(t.get('nodes'), t.get('busBW'), t.get('passed')) for t in diagnosis.get('tests') or []])}"
    )
    links = [sorted({*f.get("groupA", []), *f.get("groupB", [])}) for f in diagnosis.get("infrastructureFaults") or []]
    assert links == [sorted((node, peer))], (done.returncode, category)
    assert not diagnosis.get("confirmedFaulty"), category
