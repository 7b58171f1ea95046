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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import nvcrectl, started

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

#: the stack's resident memory (control plane, controllers, nodes, pods) must stay below this
MEMORY_CEILING = 4 << 30
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
      gpusPerNode: 2
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


@dataclass
class Environment:
    """The shared environment, what the host looked like before it, and its memory sampler."""

    cluster: Any
    host_before: dict[str, Any]
    sampler: Any
    pids: set[int] = field(default_factory=set)


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest) -> Iterator[Environment]:
    """Two real h100 nodes with the workload image, JobSet, the Trainer and the nvcre controller."""
    from nvcre.testing.realnodes import footprint

    with started(request, nodes=2) as (cluster, before):
        environment = Environment(cluster, before, footprint.PeakSampler(cluster))
        with environment.sampler:
            yield environment


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
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    """``certification run --wait`` of ``document`` (by default the all-reduce Certification above
    with these options and ``extra`` ones); returns (the run, its results file, its namespace)."""
    cert, results = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    options = {"nodes_per_job": nodes_per_job, "max_bytes": max_bytes, "iterations": iterations}
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
            while not self._stop.is_set() and self.launcher_created is None:
                pods = [p for p in core.list_pod_for_all_namespaces().items if p.metadata.namespace.startswith(self._prefix)]
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


def test_the_stack_stays_within_its_memory_and_stops_leaving_the_host_as_found(env: Environment) -> None:
    from nvcre.testing.realnodes import cgroups, footprint, hoststate

    cluster = env.cluster
    assert {"jobset-controller", "trainer-controller-manager", "nvcre-controller"} <= set(cluster.pids)
    pids = footprint.stack_pids(cluster)
    env.sampler.__exit__(None, None, None)
    assert 0 < env.sampler.peak < MEMORY_CEILING, env.sampler.peak
    cluster.stop()
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert cgroups.pids(cluster.cgroup_top) == set()
    assert hoststate.differences(env.host_before, hoststate.snapshot()) == []
