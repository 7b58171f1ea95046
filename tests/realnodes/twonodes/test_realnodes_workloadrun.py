"""WorkloadRuns carried out end to end on two real nodes, with JobSet, the Kubeflow Trainer and the
nvcre controller (``python -m nvcre.runtime``, as it ships) beside the real kubelets, submitted with
``nvcrectl workloadrun run --wait`` as a user submits them.

An ``mpi`` WorkloadRun runs the workload image's nccl-tests stand-in under the rendered ``mpirun``
line; it Succeeds, and the launcher's log shows ranks in both nodes' worker pods. A ``torch``
WorkloadRun renders ``torchrun``: on the workload image (its ``torchrun`` stand-in starting the
Megatron-LM stand-in, which trains over TCP between the two pods) it Succeeds; on an image without
``torchrun`` (the environment's busybox image), once its pods are placed, the run ends Failed on
the container's start error, not at its timeout; without a taint selector its pods are never
placed (only a Pinned MPI workload tolerates the GPU taint by itself) and it ends Failed at its
``timeoutPerJob``. The last test stops the environment and checks
that every process is gone and the host is as it was."""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import Environment, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

IMAGE = "nvcr.io/nvidia/pytorch:26.01-py3"
MPI_RUN = f"""\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: WorkloadRun
metadata:
  name: mpi-all-reduce
spec:
  image: {IMAGE}
  numNodes: 2
  gpusPerNode: 2
  framework:
    mpi:
      binary: /usr/local/bin/all_reduce_perf_mpi
      mpirunPath: /usr/local/mpi/bin/mpirun
      args: ["-b", "1K", "-e", "64K", "-f", "4", "-n", "3", "-w", "1"]
  orchestration:
    timeoutPerJob: 4m
"""
TORCH_RUN = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: WorkloadRun
metadata:
  name: torch-smoke
spec:
  image: {image}
  numNodes: 2
  gpusPerNode: 2
  framework:
    torch:
      script: /opt/megatron-lm/pretrain_gpt.py
      args: ["--train-iters", "20", "--log-interval", "10", "--hidden-size", "1024", "--ffn-hidden-size", "4096"]
  orchestration:
    timeoutPerJob: {timeout}
{target}"""
#: the GPU nodes' taint, which only a Pinned MPI workload tolerates without being told
GPU_TAINT_TARGET = """\
  target:
    taintSelectors:
    - key: nvidia.com/gpu
      effect: NoSchedule
"""


def run_workload(env: Environment, tmp_path: Path, name: str, document: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``workloadrun run --wait`` of ``document`` in a namespace of its own; returns the run and its
    results file."""
    from kubernetes import client

    with env.cluster.api_client() as api_client:
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": name}})
    spec, results = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    spec.write_text(document)
    run = nvcrectl(
        env.cluster, "workloadrun", "run", str(spec), "-n", name, "--grant-run-access", "--wait", "--timeout", "6m",
        "--results-file", str(results),
    )  # fmt: skip
    assert f"created in namespace {name}" in run.stderr, run.stderr[-3000:]
    assert results.is_file(), (run.returncode, run.stderr[-3000:])
    return run, json.loads(results.read_text())


@dataclass
class PodSeen:
    """What a watcher saw of one pod: its node, why it was not scheduled, and the message of the last
    start of its container that failed."""

    node: str = ""
    unschedulable: str = ""
    start_error: str = ""


class Pods:
    """Records, while a run goes on, what became of each pod of one namespace (JobSet removes the
    worker pods once the run has ended, and the controller removes the failed ones)."""

    def __init__(self, cluster: Any, namespace: str) -> None:
        self._cluster, self._namespace = cluster, namespace
        self._stop = threading.Event()
        self.seen: dict[str, PodSeen] = {}
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from kubernetes import client

        with self._cluster.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            while not self._stop.is_set():
                for pod in core.list_namespaced_pod(self._namespace).items:
                    self._record(pod)
                self._stop.wait(0.5)

    def _record(self, pod: Any) -> None:
        seen = self.seen.setdefault(pod.metadata.name, PodSeen())
        seen.node = pod.spec.node_name or seen.node
        for condition in pod.status.conditions or []:
            if condition.type == "PodScheduled" and condition.reason == "Unschedulable":
                seen.unschedulable = condition.message or condition.reason
        for container in pod.status.container_statuses or []:
            for state in (container.state, container.last_state):
                ended = state.terminated if state is not None else None
                if ended is not None and ended.reason == "StartError":
                    seen.start_error = ended.message or ""

    def __enter__(self) -> "Pods":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _pods(cluster: Any, namespace: str) -> list[Any]:
    from kubernetes import client

    with cluster.api_client() as api_client:
        return list(client.CoreV1Api(api_client).list_namespaced_pod(namespace).items)


def _log(cluster: Any, namespace: str, pod: str) -> str:
    from kubernetes import client

    with cluster.api_client() as api_client:
        return str(client.CoreV1Api(api_client).read_namespaced_pod_log(pod, namespace, container="node"))


def _status(env: Environment, name: str, namespace: str) -> dict[str, Any]:
    """``workloadrun status -o json``, as a user asks for it."""
    status = nvcrectl(env.cluster, "workloadrun", "status", name, "-n", namespace, "-o", "json", timeout=60)
    assert status.returncode == 0, status.stderr
    answer: dict[str, Any] = json.loads(status.stdout)
    return answer


def test_an_mpi_workloadrun_succeeds_with_ranks_on_both_nodes(env: Environment, tmp_path: Path) -> None:
    with Pods(env.cluster, "wlr-mpi") as pods:
        run, results = run_workload(env, tmp_path, "wlr-mpi", MPI_RUN)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert "[watch] WorkloadRun succeeded." in run.stderr and "Result:       PASSED" in run.stdout
    assert (results["result"], results["failedNodes"], results["totalNodes"]) == ("PASSED", [], 2)
    assert _status(env, "mpi-all-reduce", "wlr-mpi")["phase"] == "Succeeded"

    # The launcher ran the rendered mpirun line, once, to the end.
    [launcher] = [p for p in _pods(env.cluster, "wlr-mpi") if "-launcher-" in p.metadata.name]
    [container] = launcher.spec.containers
    assert container.command == ["/usr/local/mpi/bin/mpirun"] and container.image == IMAGE
    assert container.args[:2] == ["-N", "2"] and "/usr/local/bin/all_reduce_perf_mpi" in container.args
    assert launcher.status.phase == "Succeeded"
    assert [s.restart_count for s in launcher.status.container_statuses] == [0]  # mpirun's first attempt did it

    # Four ranks (-N 2 on each of two workers) ran the collective and checked its result.
    log = _log(env.cluster, "wlr-mpi", launcher.metadata.name)
    assert "nccl-tests CPU stand-in" in log and "# Out of bounds values : 0 OK" in log, log
    assert log.count("NCCL INFO Using network Socket") == 4, log
    hosts = [line.split(" on ", 1)[1].split()[0] for line in log.splitlines() if line.startswith("#  Rank ")]
    assert len(hosts) == 4 and len(set(hosts)) == 2 and all("-node-0-" in host for host in hosts), log
    # Each rank's host is a worker pod's hostname (its name without the random suffix): one per node.
    nodes = {seen.node for host in hosts for pod, seen in pods.seen.items() if pod.rsplit("-", 1)[0] == host}
    assert nodes == set(env.cluster.node_names), (hosts, pods.seen)


def test_a_torch_workloadrun_succeeds_with_torchruns_workers_training_over_both_nodes(env: Environment, tmp_path: Path) -> None:
    document = TORCH_RUN.format(image=IMAGE, timeout="4m", target=GPU_TAINT_TARGET)
    run, results = run_workload(env, tmp_path, "wlr-torch-ok", document)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert "[watch] WorkloadRun succeeded." in run.stderr and "Result:       PASSED" in run.stdout
    assert (results["result"], results["failedNodes"], results["totalNodes"]) == ("PASSED", [], 2)
    assert _status(env, "torch-smoke", "wlr-torch-ok")["phase"] == "Succeeded"
    # torchrun started two workers per pod; four data-parallel ranks met over TCP and trained.
    logs = {p.spec.node_name: _log(env.cluster, "wlr-torch-ok", p.metadata.name) for p in _pods(env.cluster, "wlr-torch-ok")}
    assert sorted(logs) == sorted(env.cluster.node_names), logs
    text = "\n".join(logs.values())
    assert "using world size: 4, data-parallel size: 4," in text and text.count("] iteration ") == 2, text[-3000:]


def test_a_torch_workloadrun_whose_image_lacks_torchrun_fails_with_the_start_error(env: Environment, tmp_path: Path) -> None:
    assert env.cluster.test_image is not None
    document = TORCH_RUN.format(image=env.cluster.test_image.reference, timeout="3m", target=GPU_TAINT_TARGET)
    with Pods(env.cluster, "wlr-torch") as pods:
        run, results = run_workload(env, tmp_path, "wlr-torch", document)
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr[-3000:])
    assert "[watch] WorkloadRun failed." in run.stderr and "Result:       FAILED" in run.stdout

    # The pods were placed (the GPU taint tolerated) and runc could not start the rendered command.
    errors = {seen.start_error for seen in pods.seen.values()}
    assert any('exec: "torchrun": executable file not found in $PATH' in error for error in errors), pods.seen
    assert all(not seen.unschedulable for seen in pods.seen.values()), pods.seen

    # The verdict names the start failure on the nodes, long before timeoutPerJob.
    assert results["result"] == "FAILED"
    details = sorted((d["name"], d["reason"]) for d in results["failedNodeDetails"])
    assert details == [(node, "WorkloadFailed") for node in sorted(env.cluster.node_names)], results
    [category] = results["categories"]
    [group] = category["failedGroups"]
    assert "exit code 128 (StartError)" in group["reason"] and "timeoutPerJob" not in group["reason"], group
    assert (group["failureLog"]["reason"], group["failureLog"]["exitCode"]) == ("StartError", 128), group
    assert "torchrun" in group["failureLog"]["tail"], "the runtime's reason reaches the report"
    assert _status(env, "torch-smoke", "wlr-torch")["phase"] == "Failed"


def test_a_torch_workloadrun_not_told_to_tolerate_the_gpu_taint_fails_at_its_timeout(env: Environment, tmp_path: Path) -> None:
    document = TORCH_RUN.format(image=IMAGE, timeout="20s", target="")
    with Pods(env.cluster, "wlr-untolerated") as pods:
        run, results = run_workload(env, tmp_path, "wlr-untolerated", document)
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr[-3000:])
    # Only a Pinned MPI workload tolerates every taint by itself; these pods never left Pending.
    assert pods.seen and all("untolerated taint" in seen.unschedulable and not seen.node for seen in pods.seen.values()), pods.seen
    assert results["result"] == "FAILED"
    [category] = results["categories"]
    [group] = category["failedGroups"]
    assert group["reason"] == "Job exceeded timeoutPerJob while its pods were unschedulable", group
    assert sorted(group["nodes"]) == sorted(env.cluster.node_names)
    assert _status(env, "torch-smoke", "wlr-untolerated")["phase"] == "Failed"
