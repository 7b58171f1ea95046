"""A training run that keeps making steps while its log grows past 240 MB PASSES, blaming no node.

The shipped controller (``python -m nvcre.runtime``, its own process, the shipped timings: a
10 s goodput sample interval and ``stallMultiplier: 3`` from the catalog) certifies a Nemotron
training category on two simulated H100 nodes. The workload player makes the run last
``SECONDS`` with a Megatron step report every second and writes ``BYTES_PER_SECOND`` of NCCL
INFO chatter beside it, a kubelet timestamp on every line, as a container runtime writes it. The
log passes the size at which reading the whole log at every sample outgrew the stall budget
(about 90 MB on the simulated cluster) by far; the run must PASS with no node blamed, the
measurement having read the complete log, and the controller's memory must stay far below its
limit. ``benchmarks/fault_campaign.py`` runs the same with a 1 GiB log.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, EVENTS, GOODPUT_MEASUREMENTS, JOBS
from nvcre.testing.processes import free_port
from nvcre.testing.simplayer import LOG_BYTES_ENV, TRAINING_SECONDS_ENV
from tests.integration.integration_helpers import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
SECONDS = 125
BYTES_PER_SECOND = 2_000_000
MEMORY_LIMIT_MIB = 512


class ShippedController:
    """``python -m nvcre.runtime`` watching one namespace, its peak RSS sampled every second."""

    def __init__(self, kubeconfig: Path, namespace: str, log_path: Path) -> None:
        self.health_port = free_port()
        args = [
            sys.executable,
            "-m",
            "nvcre.runtime",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            namespace,
            "--no-leader-elect",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--log-level",
            "info",
        ]
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=REPO)
        self.peak_rss_kib = 0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(1.0) and self.proc.poll() is None:
            try:
                status = Path(f"/proc/{self.proc.pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss_kib = max(self.peak_rss_kib, int(line.split()[1]))

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2.0) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        self._stop.set()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def shipped_controller(simcluster, sim_namespace, tmp_path) -> Iterator[ShippedController]:
    controller = ShippedController(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log")
    try:
        eventually(controller.healthy, timeout=60, what="the controller to answer /healthz")
        yield controller
    finally:
        controller.stop()


def _certification(namespace: str, nodes: list[str]) -> dict[str, Any]:
    env = [{"name": TRAINING_SECONDS_ENV, "value": str(SECONDS)}, {"name": LOG_BYTES_ENV, "value": str(BYTES_PER_SECOND)}]
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "big-log", "namespace": namespace},
        "spec": {
            # The simulated GPU nodes carry the GPU taint; the training entries do not tolerate it.
            "target": {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
            "timeoutPerJob": "20m",
            "categories": [{"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "env": env}}],
        },
    }


def test_a_progressing_run_with_a_big_log_passes_and_blames_no_node(simcluster, sim_namespace, kube, shipped_controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-big")
    started = time.monotonic()
    kube.create(_certification(sim_namespace, nodes))

    def finished() -> dict[str, Any] | None:
        status = kube.get(CERTIFICATIONS, "big-log", sim_namespace).get("status") or {}
        return status if cond.lifecycle(status) in (cond.SUCCEEDED, cond.FAILED) else None

    status = eventually(finished, timeout=SECONDS + 600, what="the Certification to finish")
    took = time.monotonic() - started
    logs = sorted((simcluster.workdir / "podlogs" / sim_namespace).glob("*.log"), key=lambda p: p.stat().st_size)
    biggest = logs[-1].stat().st_size if logs else 0
    (job,) = kube.list(JOBS, sim_namespace).items
    name = f"{job['metadata']['name']}-goodput"

    def measured() -> dict[str, Any] | None:
        found = kube.get(GOODPUT_MEASUREMENTS, name, sim_namespace)
        return found if cond.is_true(found.get("status"), "Complete") else None

    # without a goodput threshold the verdict does not wait for the measurement's final read
    goodput = eventually(measured, timeout=600, what="the GoodputMeasurement's final read")
    final_read = time.monotonic() - started - took
    events = [(e.get("reason"), e.get("message")) for e in kube.list(EVENTS, sim_namespace).items if e.get("type") == "Warning"]
    story = f"after {took:.0f} s, log {biggest / 1e6:.0f} MB: job {job.get('status')}\ngoodput {goodput.get('status')}\nwarnings {events}"

    assert cond.lifecycle(status) == cond.SUCCEEDED, story
    assert not job["status"].get("failedNodes"), story
    assert biggest > 240e6, f"the log the measurement read is {biggest / 1e6:.0f} MB"
    measured = goodput["status"]
    complete = cond.condition(measured, "Complete") or {}
    assert (complete.get("reason"), complete.get("message")) == ("JobSucceeded", "Final read of the complete log"), story
    # one step report a second, ten iterations each: every one of them was read
    assert measured["highestStep"] == SECONDS * 10, story
    assert 0.5 < float(measured["result"]) <= 1.0, story
    assert "goodput-sampling" not in str((goodput["metadata"].get("annotations") or {}).keys()), "the sampling state goes once final"
    assert shipped_controller.peak_rss_kib / 1024 < MEMORY_LIMIT_MIB / 2, f"peak RSS {shipped_controller.peak_rss_kib / 1024:.0f} MiB"
    behind = sum(reason == "FallingBehind" for reason, _ in events)
    print(
        f"big log: {biggest / 1e6:.0f} MB, verdict after {took:.0f} s, final read done {final_read:.0f} s later, "
        f"FallingBehind warnings {behind}, controller peak RSS {shipped_controller.peak_rss_kib / 1024:.0f} MiB"
    )
