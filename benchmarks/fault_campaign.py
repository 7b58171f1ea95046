#!/usr/bin/env python3
"""Fault injection on the controller as it ships, on the simulated GPU cluster.

The controller runs as its own process, ``python -m nvcre.runtime``, with the flags the install
gives it (leader election, INFO logging, probes on a port) and the shipped timings, except two
bounds shortened so a run ends in minutes: ``--compute-domain-timeout 2m`` and
``--never-schedulable-timeout 2m``. One Certification per scenario runs in a namespace of its own
on nodes of its own; each scenario injects a node fault, a controller fault or a hostile log, and
is judged on:

- the verdict (PASSED/FAILED) and the nodes blamed, against what the fault must give;
- time to verdict (creation to the Certification's terminal condition);
- the controller process: peak RSS (VmHWM) against the Deployment's 512 Mi limit, ``/healthz``
  answered within 1 s at every 3 s sample (the liveness probe), and exits other than the ones the
  campaign caused (a restart under a Deployment).

Two scenarios grow a pod log large while the controller watches, each line with its own kubelet
timestamp as a container runtime writes it: ``huge-log`` appends ``--log-mib`` of chatter to a
hung loopback pod's log at ``--log-mib-per-second``, then a 40 KB line of repeated Megatron step
prefixes (the shape that froze a backtracking engine); ``big-training-log`` is a training run
that makes a step every second for as long as it takes to log ``--training-log-mib`` of NCCL
INFO chatter beside them (the simulated cluster's ``NVCRE_SIM_*`` variables). The table's last
column says what the measurement read: its final-read message (the complete log, or how far it
got), the steps it saw and the size of the largest pod log.

Two scenarios put another tenant beside a healthy run: ``costly-threshold`` applies, in a
namespace of its own, the audit's two Certifications whose thresholds are six nested
comprehensions (about 135 s per evaluation without a bound), and the healthy run must still
PASS in its usual time; ``foreign-volume`` runs, beside it, a Workflow with one more dependency,
a claim naming another namespace's Released volume kept on Retain, and deletes it when it ends:
the volume must still be there, on Retain, unstamped. Their rows say what happened to the other
tenant's objects; a foreign object changed is a wrong row.

Prints a Markdown table and the totals in the reliability audit's terms.

    python benchmarks/fault_campaign.py [--only NAME ...] [--log-mib 300] [--training-log-mib 1024]

Needs the simulated cluster's binaries (``python -m nvcre.testing.gobuild.build --sim``). Everything
it starts is stopped when it ends, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MEMORY_LIMIT_MIB = 512
#: a 40 KB line of Megatron step prefixes: a backtracking engine spends minutes on it
REDOS_LINE = "[2026-12-03 17:00:00] iteration 1/ 1 | elapsed time per iteration (ms): 1 | throughput per GPU (TFLOP/s/GPU): 1 |" * 360


@dataclass(frozen=True)
class Scenario:
    name: str
    fault: str  # what is injected
    variant: str  # <domain>/<variant>
    domain: str = "communication"
    profile: str = "h100"
    nodes: int = 2
    node_fault: str = ""  # a simulated fault on the first node (the last for imex-down)
    #: kill-controller | kill-controller-3x | delete-trainjob | pause-apiserver | huge-log | big-training-log |
    #: costly-tenant | foreign-volume
    action: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    expect: str = "PASSED"
    #: indices of the nodes that must be blamed (exactly these)
    blamed: tuple[int, ...] = ()


SCENARIOS = (
    Scenario("healthy", "none", "nccl-all-reduce"),
    Scenario("nccl-crash", "NCCL error on node 0, every attempt", "nccl-loopback", node_fault="nccl-crash", expect="FAILED", blamed=(0,)),
    # kwok ends a crashed pod Failed (it cannot restart a container in place), and the Job
    # controller's replacement pod belongs to the same crashing attempt, so the node fails twice
    # the same way and the repeat rule ends the run (NVCRE would end it at the Job's backoffLimit):
    # the node is blamed, and only that node.
    Scenario(
        "crash-once", "NCCL error on node 0, first attempt only", "nccl-loopback", node_fault="crash-once", expect="FAILED", blamed=(0,)
    ),
    Scenario(
        "hang",
        "workload on node 0 never ends",
        "nccl-loopback",
        node_fault="hang",
        options={"timeoutPerJob": "2m"},
        expect="FAILED",
        blamed=(0,),
    ),
    Scenario("xid", "Xid 79 and cordon on node 0 while it runs", "nccl-loopback", node_fault="xid", expect="FAILED", blamed=(0,)),
    Scenario(
        "slow-link",
        "node 0 at a tenth of its bandwidth",
        "nccl-loopback",
        node_fault="slow-link",
        options={"thresholds": {"busBandwidthGBps": "value >= 100"}},
        expect="FAILED",
        blamed=(0,),
    ),
    # A cordoned target node is left out, not blamed, and the verdict says not every target was
    # certified.
    Scenario("cordon", "node 0 cordoned before the run", "nccl-loopback", node_fault="cordon", expect="INCOMPLETE"),
    # A node advertising 0 GPUs is kept, as NVCRE keeps it (a restarting device plugin advertises
    # none for a moment); its pods can never schedule, so the Job fails after the scheduling grace
    # (300 s) with the scheduler's message, blaming no node.
    Scenario("no-capacity", "node 0 reports 0 allocatable GPUs", "nccl-loopback", node_fault="no-capacity", expect="FAILED"),
    Scenario(
        "imex-down",
        "gb200: node 1's IMEX daemon never joins",
        "nccl-all-reduce",
        profile="gb200",
        node_fault="imex-down",
        expect="FAILED",
        blamed=(1,),
    ),
    Scenario(
        "kill-controller",
        "controller SIGKILLed while the Job runs, then restarted",
        "nccl-all-reduce",
        node_fault="",
        action="kill-controller",
    ),
    Scenario(
        "kill-controller-3x",
        "controller SIGKILLed three times, 3 s apart, while node 0 hangs",
        "nccl-loopback",
        node_fault="hang",
        action="kill-controller-3x",
        options={"timeoutPerJob": "1m"},
        expect="FAILED",
        blamed=(0,),
    ),
    # A TrainJob deleted by hand is no fault of the nodes: the Job fails and blames none.
    Scenario(
        "delete-trainjob",
        "the running TrainJob deleted by hand",
        "nccl-all-reduce",
        node_fault="hang",
        action="delete-trainjob",
        options={"timeoutPerJob": "5m"},
        expect="FAILED",
    ),
    Scenario("pause-apiserver", "kube-apiserver stopped (SIGSTOP) for 8 s while the Job runs", "nccl-all-reduce", action="pause-apiserver"),
    # The hung pod's log grows by --log-mib, a timestamp on every line, then ends with the ReDoS
    # line: the final read must get through all of it (its message says so) and the hang is
    # still the only finding.
    Scenario(
        "huge-log",
        "a hung pod logs {log_mib} MiB, a timestamp a line, then a 40 KB ReDoS line",
        "nccl-loopback",
        node_fault="hang",
        action="huge-log",
        options={"timeoutPerJob": "{huge_log_timeout}"},
        expect="FAILED",
        blamed=(0,),
    ),
    # Another tenant's Certifications with thresholds of six nested comprehensions: they must be
    # refused (costed) without holding the workers the healthy run needs.
    Scenario("costly-threshold", "another tenant's two thresholds of six nested comprehensions", "nccl-all-reduce", action="costly-tenant"),
    # Beside a healthy run, a Workflow whose extra claim names another namespace's Released volume.
    Scenario("foreign-volume", "a Workflow's claim names another namespace's Retain volume", "nccl-loopback", action="foreign-volume"),
    # A healthy training run with NCCL_DEBUG=INFO-like chatter: a step every second while its
    # log grows to --training-log-mib. Reading the whole log at every sample failed such a run
    # WorkloadStalled near 90 MB and blamed both nodes.
    Scenario(
        "big-training-log",
        "a progressing training run logs {training_log_mib} MiB, a timestamp a line",
        "nemotron5-8b",
        domain="training",
        action="big-training-log",
        options={"nodesPerJob": 2, "timeoutPerJob": "1h"},
    ),
)


class Controller:
    """The controller process, its probes and its memory, sampled every 3 s."""

    def __init__(self, kubeconfig: Path, log_path: Path) -> None:
        self.kubeconfig, self.log_path = kubeconfig, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = 0
        self.peak_rss_kib = 0
        self.probe_failures = 0
        self.probes = 0
        self.slowest_probe = 0.0
        self.unexpected_exits = 0
        self.exit_codes: list[int] = []
        self.expected_kill = False
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        from nvcre.testing.processes import free_port

        self.health_port = free_port()
        args = [
            sys.executable,
            "-m",
            "nvcre.runtime",
            "--kubeconfig",
            str(self.kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{free_port()}",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--leader-elect",
            "--lease-namespace",
            "default",
            "--log-level",
            "info",
            "--compute-domain-timeout",
            "2m",
            "--never-schedulable-timeout",
            "2m",
        ]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=REPO)
        log.close()
        self._wait_healthy()
        if not self._sampler.is_alive():
            self._sampler.start()

    def _wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._probe()[0]:
                return
            time.sleep(0.3)
        raise RuntimeError("the controller never answered /healthz")

    def _probe(self) -> tuple[bool, float]:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=1.0) as response:
                ok = response.status == 200
        except OSError:
            ok = False
        return ok, time.monotonic() - started

    def _sample(self) -> None:
        while not self._stop.wait(3.0):
            proc = self.proc
            if proc is None:
                continue
            if proc.poll() is not None:
                if not self.expected_kill and proc is self.proc:
                    self.unexpected_exits += 1
                    self.exit_codes.append(proc.returncode)
                    self.start()
                continue
            # a process that exits between poll() and the read has no status to sample: skip it
            with contextlib.suppress(OSError, StopIteration, ValueError):
                status = Path(f"/proc/{proc.pid}/status").read_text()
                hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
                self.peak_rss_kib = max(self.peak_rss_kib, hwm)
            if self.expected_kill:
                continue  # the campaign is restarting it: not a probe failure
            ok, seconds = self._probe()
            self.probes += 1
            self.slowest_probe = max(self.slowest_probe, seconds)
            if not ok or seconds > 1.0:
                self.probe_failures += 1

    def kill_and_restart(self) -> None:
        assert self.proc is not None
        self.expected_kill = True  # the sampler leaves a process the campaign killed alone
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.start()
        self.expected_kill = False

    def stop(self) -> None:
        self._stop.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _certification(namespace: str, name: str, nodes: list[str], scenario: Scenario, sizes: Sizes) -> dict[str, Any]:
    category: dict[str, Any] = {"domain": scenario.domain, "variant": scenario.variant}
    if scenario.options:
        category["options"] = {k: v.format(**sizes.names()) if isinstance(v, str) else v for k, v in scenario.options.items()}
    target: dict[str, Any] = {"nodeNames": nodes}
    if scenario.action == "big-training-log":
        from nvcre.testing.simplayer import LOG_BYTES_ENV, TRAINING_SECONDS_ENV

        seconds = max(10, round(sizes.training_log_mib / sizes.mib_per_second))
        rate = round(sizes.training_log_mib * 1024 * 1024 / seconds)
        category["options"]["env"] = [{"name": TRAINING_SECONDS_ENV, "value": str(seconds)}, {"name": LOG_BYTES_ENV, "value": str(rate)}]
    if scenario.domain == "training":
        # The simulated GPU nodes carry the GPU taint; the training entries do not tolerate it.
        target["taintSelectors"] = [{"key": "nvidia.com/gpu"}]
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"target": target, "categories": [category]},
    }


@dataclass(frozen=True)
class Sizes:
    """How big the log scenarios grow their logs, and how fast."""

    log_mib: int = 300
    training_log_mib: int = 1024
    mib_per_second: float = 4.0

    @property
    def huge_log_seconds(self) -> float:
        return self.log_mib / self.mib_per_second

    def names(self) -> dict[str, Any]:
        # the hung pod's Job outlives the append by two minutes, so its final read sees it all
        timeout = f"{int(self.huge_log_seconds) + 120}s"
        return {"log_mib": self.log_mib, "training_log_mib": self.training_log_mib, "huge_log_timeout": timeout}


#: the audit's costly threshold: six levels of ``[0..9].all(...)``, 209 characters
_DIGITS = "[0,1,2,3,4,5,6,7,8,9]"
COSTLY = "value >= 0.0 && " + "".join(f"{_DIGITS}.all(x{i}, " for i in range(6)) + "true" + ")" * 6
_STARTS_AT_ONCE = ("costly-tenant", "foreign-volume")


class OtherTenant:
    """The objects of another tenant a scenario puts beside the healthy run, and what became of them."""

    def __init__(self, kube: Any, cluster: Any, scenario: Scenario, namespace: str, nodes: list[str]) -> None:
        self.kube, self.cluster, self.scenario, self.nodes = kube, cluster, scenario, nodes
        self.namespace = f"{namespace}-other"
        self.volume = f"{namespace}-foreign-pv"
        self.folder = cluster.workdir / f"{namespace}-foreign-data"

    def start(self) -> None:
        kube = self.kube
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        if self.scenario.action == "costly-tenant":
            for name in ("cost1", "cost2"):
                category = {
                    "domain": "communication",
                    "variant": "nccl-all-reduce",
                    "options": {"nodesPerJob": 2, "thresholds": {"busBandwidthGBps": COSTLY}},
                }
                kube.create(
                    {
                        "apiVersion": "nvcre.nvidia.com/v1alpha1",
                        "kind": "Certification",
                        "metadata": {"name": name, "namespace": self.namespace},
                        "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "categories": [category]},
                    }
                )
        elif self.scenario.action == "foreign-volume":
            self._foreign_volume()

    def _foreign_volume(self) -> None:
        from nvcre.runtime import compile as compiler
        from nvcre.runtime.kube.resources import NODES
        from nvcre.runtime.reconcile.reclaim import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

        kube = self.kube
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "db.txt").write_text("precious\n")
        claim_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": ""}
        volume_spec = {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {"path": str(self.folder)},
        }
        kube.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": self.volume}, "spec": volume_spec})
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": self.namespace}}
        kube.create({**claim, "spec": {**claim_spec, "volumeName": self.volume}})
        _until(lambda: _phase(kube, PERSISTENT_VOLUMES, self.volume) == "Bound", 60)
        kube.delete(PERSISTENT_VOLUME_CLAIMS, "data", self.namespace)
        _until(lambda: _phase(kube, PERSISTENT_VOLUMES, self.volume) == "Released", 60)
        # the grabbing Workflow: a rendered loopback run with one more dependency, a claim naming that volume
        cert = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Certification",
            "metadata": {"name": "grab", "namespace": self.scenario_namespace, "uid": "00000000-0000-0000-0000-000000000000"},
            "spec": {"target": {"nodeNames": self.nodes}, "categories": [{"domain": "communication", "variant": "nccl-loopback"}]},
        }
        workflow = compiler.expand_certification(cert, compiler.cluster_facts(kube.list(NODES).items))[0]
        workflow["metadata"] = {"name": "grab", "namespace": self.scenario_namespace}
        grab = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "grab"},
            "spec": {**claim_spec, "volumeName": self.volume},
        }
        workflow["spec"]["dependencies"] = [*workflow["spec"]["dependencies"], grab]
        kube.create(workflow)

    @property
    def scenario_namespace(self) -> str:
        return self.namespace.removesuffix("-other")

    def finish(self) -> tuple[str, bool]:
        """(what became of the other tenant's objects, whether that is right)."""
        from nvcre.runtime.judge import conditions as cond
        from nvcre.runtime.kube.resources import CERTIFICATIONS, WORKFLOWS

        kube = self.kube
        if self.scenario.action == "costly-tenant":
            seen = []
            for name in ("cost1", "cost2"):
                status = kube.get(CERTIFICATIONS, name, self.namespace).get("status") or {}
                reason = next((c.get("reason") for c in status.get("conditions") or [] if c.get("type") == "Failed"), "")
                seen.append(f"{name} {cond.lifecycle(status) or 'no status'} {reason}".strip())
            # right: neither passed; refused (Failed) is what the costing must give
            return "; ".join(seen), all(cond.FAILED in s for s in seen)
        from nvcre.compiler.vocabulary import ANNOTATION_WORKFLOW_UID
        from nvcre.runtime.reconcile.reclaim import PERSISTENT_VOLUMES

        _until(
            lambda: (
                cond.lifecycle((_read(kube, WORKFLOWS, "grab", self.scenario_namespace) or {}).get("status"))
                in (cond.SUCCEEDED, cond.FAILED)
            ),
            300,
        )
        kube.delete(WORKFLOWS, "grab", self.scenario_namespace)
        _until(lambda: _read(kube, WORKFLOWS, "grab", self.scenario_namespace) is None, 120)
        time.sleep(5)  # what a reclaim would do, it does on the Workflow's deletion
        volume = _read(kube, PERSISTENT_VOLUMES, self.volume)
        if volume is None:
            return f"{self.volume} DELETED", False
        policy = volume["spec"].get("persistentVolumeReclaimPolicy")
        stamped = ANNOTATION_WORKFLOW_UID in (volume["metadata"].get("annotations") or {})
        data = (self.folder / "db.txt").read_text() == "precious\n"
        text = f"{self.volume}: {policy}, {'stamped' if stamped else 'unstamped'}, data {'intact' if data else 'CHANGED'}"
        return text, policy == "Retain" and not stamped and data

    def close(self) -> None:
        from nvcre.runtime.kube.errors import ApiError
        from nvcre.runtime.kube.resources import Resource
        from nvcre.runtime.reconcile.reclaim import PERSISTENT_VOLUMES

        namespaces = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
        for resource, name in ((PERSISTENT_VOLUMES, self.volume), (namespaces, self.namespace)):
            with contextlib.suppress(ApiError):
                self.kube.delete(resource, name)


def _read(kube: Any, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    from nvcre.runtime.kube.errors import NotFound

    try:
        return dict(kube.get(resource, name, namespace))
    except NotFound:
        return None


def _phase(kube: Any, resource: Any, name: str) -> str:
    return str(((_read(kube, resource, name) or {}).get("status") or {}).get("phase") or "")


def _until(check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s")
        time.sleep(1.0)


def _report(kubeconfig: Path, name: str, namespace: str) -> dict[str, Any]:
    nvcrectl = Path(sys.executable).with_name("nvcrectl")
    out = subprocess.run(
        [str(nvcrectl), "certification", "report", name, "-n", namespace, "-o", "json"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return json.loads(out.stdout) if out.stdout.strip() else {"result": f"report failed: {out.stderr.strip()}"}


def _append_log(path: Path, mib: int, mib_per_second: float) -> None:
    """Grow a pod's log file by ``mib`` MiB of NCCL INFO chatter at ``mib_per_second``, every line
    stamped when it is written (CRI format, as a container runtime writes it), then a ReDoS line."""
    from nvcre.testing import simlogs

    total = mib * 1024 * 1024
    chatter = simlogs.Chatter(0.0, total / (mib_per_second * 1024 * 1024), round(mib_per_second * 1024 * 1024))
    started = datetime.now(UTC)
    upto = 0.0
    while upto < chatter.end:
        time.sleep(0.25)
        now = min(time.time() - started.timestamp(), chatter.end)
        text = "".join(line for _, line in chatter.lines(started, upto, now))
        with path.open("a") as log:
            log.write(text)
        upto = now
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    with path.open("a") as log:
        log.write(f"{stamp}000Z stdout F {REDOS_LINE}\n")


def _wait_measurements(kube: Any, namespace: str, timeout: float) -> float | None:
    """Seconds until every measurement in ``namespace`` is complete (None: not within ``timeout``)."""
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        items = [m for r in (BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS) for m in kube.list(r, namespace).items]
        if all(cond.is_true(m.get("status"), "Complete") for m in items):
            return time.monotonic() - started
        time.sleep(2.0)
    return None


def _measured(kube: Any, namespace: str, podlogs: Path) -> str:
    """What the measurements read: their final-read message, the steps seen, the largest pod log."""
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS

    parts = []
    for resource in (BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS):
        for item in kube.list(resource, namespace).items:
            status = item.get("status") or {}
            complete = cond.condition(status, "Complete") or {}
            text = str(complete.get("message") or "not complete")
            if status.get("highestStep"):
                text += f"; {status['highestStep']} steps"
            parts.append(text)
    sizes = [p.stat().st_size for p in podlogs.glob("*.log")] if podlogs.is_dir() else []
    if sizes:
        parts.append(f"largest pod log {max(sizes) / 1024 / 1024:.0f} MiB")
    return "; ".join(parts)


def run(scenario: Scenario, cluster: Any, kube: Any, controller: Controller, kubeconfig: Path, sizes: Sizes) -> dict[str, Any]:
    from nvcre.runtime.judge import conditions as cond
    from nvcre.runtime.kube.resources import CERTIFICATIONS, JOBS, PODS

    namespace = f"fc-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    nodes = cluster.add_nodes(profile=scenario.profile, count=scenario.nodes, prefix=f"{namespace}-{scenario.profile}")
    if scenario.node_fault:
        target = nodes[-1] if scenario.node_fault == "imex-down" else nodes[0]
        cluster.set_fault(target, scenario.node_fault)
    name = f"campaign-{scenario.name}"
    other = OtherTenant(kube, cluster, scenario, namespace, nodes) if scenario.action in _STARTS_AT_ONCE else None
    started = time.monotonic()
    if other is not None:
        other.start()
    kube.create(_certification(namespace, name, nodes, scenario, sizes))
    acted = other is not None
    verdict_at = None
    appender: threading.Thread | None = None
    while time.monotonic() - started < 900 + sizes.huge_log_seconds + sizes.training_log_mib / sizes.mib_per_second:
        status = kube.get(CERTIFICATIONS, name, namespace).get("status") or {}
        if cond.lifecycle(status) in (cond.SUCCEEDED, cond.FAILED):
            verdict_at = time.monotonic()
            break
        if not acted and scenario.action:
            running = [p for p in kube.list(PODS, namespace).items if (p.get("status") or {}).get("phase") == "Running"]
            if running:
                if scenario.action == "kill-controller":
                    controller.kill_and_restart()
                elif scenario.action == "kill-controller-3x":
                    for _ in range(3):
                        controller.kill_and_restart()
                        time.sleep(3)
                elif scenario.action == "delete-trainjob":
                    from nvcre.runtime.kube.resources import TRAINJOBS

                    for trainjob in kube.list(TRAINJOBS, namespace).items:
                        kube.delete(TRAINJOBS, trainjob["metadata"]["name"], namespace)
                elif scenario.action == "pause-apiserver":
                    pid = cluster.pids["kube-apiserver"]
                    os.kill(pid, signal.SIGSTOP)
                    try:
                        time.sleep(8)
                    finally:
                        os.kill(pid, signal.SIGCONT)
                elif scenario.action == "huge-log":
                    pod = running[0]["metadata"]["name"]
                    path = cluster.workdir / "podlogs" / namespace / f"{pod}.log"
                    appender = threading.Thread(target=_append_log, args=(path, sizes.log_mib, sizes.mib_per_second), daemon=True)
                    appender.start()
                acted = True
        time.sleep(1.0)
    if appender is not None:
        appender.join()
    # a verdict without a threshold does not wait for a measurement's final read: wait for it
    # here (at most 10 minutes), so the row says what the final read covered
    measured_after = _wait_measurements(kube, namespace, 600.0)
    report = _report(kubeconfig, name, namespace)
    blamed = sorted(report.get("failedNodes") or [])
    expected = sorted(nodes[i] for i in scenario.blamed)
    jobs = len(kube.list(JOBS, namespace).items)
    row = {
        "scenario": scenario.name,
        "fault": scenario.fault.format(**sizes.names()),
        "expected": scenario.expect,
        "result": report.get("result"),
        "blamed": blamed,
        "expected_blamed": expected,
        "healthy_blamed": len(set(blamed) - set(expected)),
        "seconds": round(verdict_at - started) if verdict_at else None,
        "jobs": jobs,
        "reason": next((c.get("failureReason") for c in report.get("categories") or [] if c.get("failureReason")), ""),
        "measured": _measured(kube, namespace, cluster.workdir / "podlogs" / namespace),
        "measurements_complete_after_verdict_s": round(measured_after) if measured_after is not None else None,
        "controller_peak_rss_mib": round(controller.peak_rss_kib / 1024),
    }
    row["ok"] = row["result"] == scenario.expect and blamed == expected
    if other is not None:
        try:
            row["other_tenant"], right = other.finish()
        finally:
            other.close()
        row["ok"] = row["ok"] and right
        row["foreign_changed"] = 0 if right else 1
    kube.delete(CERTIFICATIONS, name, namespace)
    cluster.set_fault(nodes[0], "none")
    if scenario.node_fault == "imex-down":
        cluster.set_fault(nodes[-1], "none")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", nargs="*", default=None, help="scenario names to run")
    parser.add_argument("--log-mib", type=int, default=300, help="size of the huge-log scenario's injected log")
    parser.add_argument("--training-log-mib", type=int, default=1024, help="size of the big-training-log scenario's log")
    parser.add_argument("--log-mib-per-second", type=float, default=4.0, help="how fast the two log scenarios grow their logs")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    chosen = [s for s in SCENARIOS if args.only is None or s.name in args.only]

    from nvcre.runtime.kube.client import ApiServerClient
    from nvcre.testing.simcluster import SimCluster

    rows = []
    with tempfile.TemporaryDirectory(prefix="nvcre-faults-") as tmp, SimCluster() as cluster:
        kube = ApiServerClient.from_kubeconfig(str(cluster.kubeconfig))
        controller = Controller(cluster.kubeconfig, Path(tmp) / "controller.log")
        try:
            controller.start()
            for scenario in chosen:
                sizes = Sizes(args.log_mib, args.training_log_mib, args.log_mib_per_second)
                row = run(scenario, cluster, kube, controller, cluster.kubeconfig, sizes)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        finally:
            controller.stop()
            kube.close()
        errors = sum(1 for line in (Path(tmp) / "controller.log").read_text(errors="replace").splitlines() if '"level": "error"' in line)
    print("| scenario | fault | expected | result | nodes blamed | time to verdict | verdict right | what was read |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        blamed = ", ".join(b.rsplit("-", 2)[-2] + "-" + b.rsplit("-", 1)[-1] for b in r["blamed"]) or "none"
        seconds = f"{r['seconds']} s" if r["seconds"] is not None else "no verdict"
        print(
            f"| {r['scenario']} | {r['fault']} | {r['expected']} | {r['result']} | {blamed} | {seconds} | "
            f"{'yes' if r['ok'] else '**no**'} | {r.get('other_tenant') or r['measured'] or '-'} |"
        )
    wrong = sum(1 for r in rows if not r["ok"])
    print()
    print(
        f"- scenarios: {len(rows)}; wrong verdicts or blame: {wrong}; healthy nodes blamed: {sum(r['healthy_blamed'] for r in rows)}; "
        f"foreign objects changed: {sum(r.get('foreign_changed', 0) for r in rows)}"
    )
    print(
        f"- controller: peak RSS {controller.peak_rss_kib / 1024:.0f} MiB (limit {MEMORY_LIMIT_MIB} Mi); "
        f"/healthz {controller.probes} samples, {controller.probe_failures} failed or over 1 s "
        f"(slowest {controller.slowest_probe:.2f} s); unexpected exits (restarts) {controller.unexpected_exits} "
        f"{controller.exit_codes or ''}; "
        f"ERROR log lines {errors}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "peak_rss_mib": controller.peak_rss_kib / 1024,
                    "probe_failures": controller.probe_failures,
                    "restarts": controller.unexpected_exits,
                },
                indent=2,
            )
        )
    bad = wrong or controller.unexpected_exits or controller.probe_failures or controller.peak_rss_kib > MEMORY_LIMIT_MIB * 1024
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
