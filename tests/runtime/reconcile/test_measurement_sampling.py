"""A training run that keeps making steps while its log grows large is never taken for a stalled one.

The reliability audit's reproducer, offline: a Megatron step every second, 2 MB/s of NCCL INFO
chatter, a 10 s sample interval, ``stallMultiplier: 3``. The pod log is generated as it grows,
one kubelet timestamp per line, and served as ``pods/log`` serves it (from the ``sinceTime``
second, cut to ``limitBytes``). A fake clock charges every read the time the audit measured
waiting on the API server for it on the simulated cluster (32.1 s for 205 MB; parsing is not
charged), and stall detection is asked, as the Job tier asks it, in the middle of every read and
after every sample.

Reading the whole log at every sample, the reads outgrow the stall budget (about 21 s) near
130 MB and the healthy run is failed ``WorkloadStalled``; sampling only what is new, it never is.
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import pytest

from nvcre.compiler.vocabulary import ANNOTATION_GOODPUT_SAMPLING, LABEL_JOB
from nvcre.runtime import compile as compiler
from nvcre.runtime.clock import Clock, format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge.pods import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from nvcre.runtime.judge.stall import stall_message
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import GOODPUT_MEASUREMENTS, JOBS, LOGPROFILES, PODS
from nvcre.runtime.reconcile import measurement as measurement_module
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.runtime.reconcile.measurement import MeasurementReconciler

T0 = datetime(2026, 12, 6, 4, 12, tzinfo=UTC)
CHATTER = "NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/IPC/read comm 0x55d1 nRanks 16 localRanks 8 localRank 0 MNNVL 0 " + "x" * 57
LINES_PER_SECOND = 10_000  # 200-byte lines: 2 MB/s
#: what the audit measured waiting on the API server and kubelet: 32.1 s for a 205 MB log
SECONDS_PER_BYTE = 32.1 / 205e6
JOB_SPEC = {"stallMultiplier": 3}
INTERVAL = 10.0


@lru_cache(maxsize=8)
def _second(second: int) -> str:
    """Everything logged in ``second``: chatter with a Megatron step line in the middle."""
    when = T0 + timedelta(seconds=second)
    head = when.strftime("%Y-%m-%dT%H:%M:%S")
    lines = [f"{head}.{n * 100_000:09d}Z {CHATTER}\n" for n in range(LINES_PER_SECOND)]
    step = (
        f"{head}.{LINES_PER_SECOND // 2 * 100_000 + 1:09d}Z [{when:%Y-%m-%d %H:%M:%S}.500000] iteration {10 * (second + 1):8d}/  100000 | "
        "consumed samples: 32 | elapsed time per iteration (ms): 18.5 | throughput per GPU (TFLOP/s/GPU): 520.0 | "
        "learning rate: 3.000000E-04 | global batch size:    32 | lm loss: 1.100000E+01 | loss scale: 1.0 |\n"
    )
    lines.insert(LINES_PER_SECOND // 2 + 1, step)
    assert len(lines[0]) == 200
    return "".join(lines)


class Cluster:
    """The API seam over a fake clock: objects, a growing pod log, and stall checks during reads."""

    def __init__(self) -> None:
        self.now = 0.0  # seconds since T0
        #: when set, the log is this text (else the generated one, as far as the clock has got)
        self.text: str | None = None
        self.refuse = False
        self.reads: list[str | None] = []
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.bytes_read = 0
        self.stalls: list[tuple[float, str]] = []
        self.events: list[str] = []

    def wall(self) -> datetime:
        return T0 + timedelta(seconds=self.now)

    def goodput(self) -> dict[str, Any]:
        return self.objects[(GOODPUT_MEASUREMENTS.plural, "ns", "j-goodput")]

    def check_stall(self) -> None:
        job_status = {"workloadStartTime": format_time(T0)}
        message = stall_message(JOB_SPEC, job_status, self.goodput().get("status") or {}, self.wall(), INTERVAL)
        if message is not None:
            self.stalls.append((self.now, message))

    def pod_log(self, name, namespace, *, container=None, timestamps=False, tail_lines=None, limit_bytes=None, since_time=None):
        from nvcre.runtime.kube.errors import ApiError

        self.reads.append(since_time)
        if self.refuse:
            raise ApiError(500, "InternalError", "the kubelet is unreachable")
        if self.text is not None:
            lines = self.text.splitlines(keepends=True)
            kept = [line for line in lines if since_time is None or line[:19] + "Z" >= since_time]
            return "".join(kept).encode()[:limit_bytes].decode("utf-8", "replace")
        first = 0 if since_time is None else int((datetime.fromisoformat(since_time.replace("Z", "+00:00")) - T0).total_seconds())
        parts, size, second = [], 0, first
        # every complete second so far, then the part of this second already logged
        while second <= int(self.now) and (limit_bytes is None or size < limit_bytes):
            block = _second(second)
            if second == int(self.now):
                block = block[: int(len(block) * (self.now - second))]
                block = block[: block.rfind("\n") + 1]
            parts.append(block)
            size += len(block)
            second += 1
        text = "".join(parts)[:limit_bytes]
        self.bytes_read += len(text)
        # the read costs time, and the Job tier looks at the stall clock meanwhile
        self.now += len(text) * SECONDS_PER_BYTE
        self.check_stall()
        return text

    def write_status(self, resource, obj, mutate):
        key = (resource.plural, obj["metadata"]["namespace"], obj["metadata"]["name"])
        current = self.objects[key]
        new = mutate(copy.deepcopy(current.get("status") or {}), current)
        if new is None or new == current.get("status"):
            return None
        self.objects[key] = {**current, "status": new}
        return copy.deepcopy(self.objects[key])

    def merge_patch(self, resource, name, namespace, patch):
        key = (resource.plural, namespace, name)
        current = copy.deepcopy(self.objects[key])
        annotations = {**(current["metadata"].get("annotations") or {}), **patch["metadata"]["annotations"]}
        current["metadata"]["annotations"] = {k: v for k, v in annotations.items() if v is not None}
        self.objects[key] = current
        return copy.deepcopy(current)

    def emit_event(self, involved, *, type, reason, message, component):
        self.events.append(f"{type} {reason}: {message}")


def _setup() -> tuple[Cluster, Context, MeasurementReconciler]:
    cluster = Cluster()
    stamp = format_time(T0)
    job = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "uj"},
        "spec": dict(JOB_SPEC),
        "status": cond.set_lifecycle({"workloadRef": {"name": "j-workload"}}, cond.IN_PROGRESS, "WorkloadRunning", "running", stamp),
    }
    measurement = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "GoodputMeasurement",
        "metadata": {"name": "j-goodput", "namespace": "ns"},
        "spec": {"jobRef": {"name": "j"}, "logProfileRef": "megatron-training", "sampleInterval": "10s"},
    }
    pod = {
        "metadata": {
            "name": "j-workload-node-0-0",
            "namespace": "ns",
            "uid": "pod-1",
            "labels": {JOBSET_NAME_LABEL: "j-workload", REPLICATED_JOB_LABEL: "node"},
        },
        "spec": {"containers": [{"name": "node"}]},
        "status": {"phase": "Running", "startTime": stamp},
    }
    profile = next(p for p in compiler.builtin_logprofiles() if p["metadata"]["name"] == "megatron-training")
    stores = {
        JOBS.plural: Store(),
        GOODPUT_MEASUREMENTS.plural: Store(),
        LOGPROFILES.plural: Store(),
        PODS.plural: Store(indexed_labels=(LABEL_JOB, JOBSET_NAME_LABEL)),
    }
    stores[JOBS.plural].put(job)
    stores[GOODPUT_MEASUREMENTS.plural].put(measurement)
    stores[LOGPROFILES.plural].put(profile)
    stores[PODS.plural].put(pod)
    cluster.objects[(GOODPUT_MEASUREMENTS.plural, "ns", "j-goodput")] = copy.deepcopy(measurement)
    clock = Clock()
    clock.now = cluster.wall  # type: ignore[method-assign]
    ctx = Context(kube=cluster, stores=stores, clock=clock, settings=Settings(poll_interval=15.0))  # type: ignore[arg-type]
    return cluster, ctx, MeasurementReconciler(ctx)


@pytest.mark.slow
def test_a_progressing_run_with_a_fast_growing_log_is_never_failed_stalled(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    samples = 0
    while cluster.now < 90.0:
        # the reconciler runs on what the cache holds, refreshed as a watch would refresh it
        ctx.stores[GOODPUT_MEASUREMENTS.plural].put(copy.deepcopy(cluster.goodput()))
        before = cluster.bytes_read
        result = reconciler.reconcile_goodput("ns", "j-goodput")
        samples += cluster.bytes_read > before
        cluster.check_stall()
        assert not cluster.stalls, f"a progressing run was taken for a stalled one at {cluster.stalls[0][0]:.0f} s"
        cluster.now += max(result.requeue_after or 0.0, 0.1)
    log_bytes = sum(len(_second(s)) for s in range(int(cluster.now)))
    status = cluster.goodput()["status"]
    assert log_bytes > 180e6 and samples >= 8
    # each byte is read about once (a sample reads its cursor's second again), not once a sample
    assert cluster.bytes_read < 1.1 * log_bytes
    # the last step seen is at most a sample behind the log, and the reads kept up
    seen = datetime.fromisoformat(status["lastStepTimestamp"].replace("Z", "+00:00"))
    assert (cluster.wall() - seen).total_seconds() < 2 * INTERVAL
    assert (cond.condition(status, "LogRead") or {}).get("reason") == "CaughtUp"
    assert not cluster.events


def test_a_sample_still_reading_does_not_move_the_stall_clock() -> None:
    """The stall clock stops where the last finished sample looked, however long the next one takes."""
    read_at = T0 + timedelta(seconds=100)
    goodput = {
        "lastStepTimestamp": format_time(read_at - timedelta(seconds=1)),
        "avgStepTimeSec": "0.0185",
        "logInterval": 10,
        "startTime": format_time(T0),
        "conditions": [
            {
                "type": "LogRead",
                "status": "True",
                "reason": "CaughtUp",
                "message": f"Log read through {format_time(read_at)}; step 1000 is the last seen",
                "lastTransitionTime": format_time(T0),
            }
        ],
    }
    job_status = {"workloadStartTime": format_time(T0)}
    assert stall_message(JOB_SPEC, job_status, goodput, read_at + timedelta(minutes=30), INTERVAL) is None
    # once a sample has looked 21 s past the last step and found none, the run is stalled
    later = {
        **goodput,
        "conditions": [{**goodput["conditions"][0], "message": f"Log read through {format_time(read_at + timedelta(seconds=21))}; x"}],
    }
    assert stall_message(JOB_SPEC, job_status, later, read_at + timedelta(seconds=21), INTERVAL) is not None


def _training_text() -> str:
    from nvcre.testing import simlogs

    run = simlogs.TrainingRun(world_size=16, iterations=300, seconds=60.0, checkpoint_every=50)
    lines = simlogs.training_log(run, T0)
    return "".join(simlogs.cri_line(T0 + timedelta(seconds=line.offset), line).replace(" stdout F ", " ", 1) for line in lines)


def _reconcile(cluster: Cluster, ctx: Context, reconciler: MeasurementReconciler) -> None:
    ctx.stores[GOODPUT_MEASUREMENTS.plural].put(copy.deepcopy(cluster.goodput()))
    reconciler.reconcile_goodput("ns", "j-goodput")


def test_a_restarted_controller_goes_on_from_the_annotation_and_the_final_read_is_a_whole_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.runtime.measure.goodput_state import GoodputTail
    from nvcre.runtime.reconcile import goodput_reads
    from nvcre.runtime.reconcile.measurement_kinds import GoodputKind

    monkeypatch.setattr(goodput_reads, "PERSIST_SECONDS", 0.0)
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    whole = _training_text()
    lines = whole.splitlines(keepends=True)
    for part in (len(lines) // 3, 2 * len(lines) // 3):
        cluster.text = "".join(lines[:part])
        cluster.now += INTERVAL
        _reconcile(cluster, ctx, reconciler)
    tail = GoodputTail.from_json(cluster.goodput()["metadata"]["annotations"][ANNOTATION_GOODPUT_SAMPLING])
    assert tail is not None and tail.cursor.stamp is not None and tail.state.steps > 0
    # the controller restarts: a new reconciler, nothing in memory, the annotation on the object
    reconciler = MeasurementReconciler(ctx)
    cluster.text = whole
    cluster.reads.clear()
    cluster.now += INTERVAL
    _reconcile(cluster, ctx, reconciler)
    assert cluster.reads == [tail.cursor.since_time()], "it went on from the annotation's cursor"
    # the Job ends: the final read goes on from there too, and gives what one read of the whole log gives
    done = format_time(T0 + timedelta(seconds=61))
    job = ctx.stores[JOBS.plural].get("j", "ns")
    job["status"] = cond.set_lifecycle(job["status"], cond.SUCCEEDED, "WorkloadCompleted", "done", done)
    ctx.stores[JOBS.plural].put(job)
    cluster.reads.clear()
    _reconcile(cluster, ctx, reconciler)
    assert cluster.reads and None not in cluster.reads
    status = cluster.goodput()["status"]
    assert (cond.condition(status, "Complete") or {}).get("message") == "Final read of the complete log"
    profile = ctx.stores[LOGPROFILES.plural].get("megatron-training", None)
    expected = GoodputKind().fields(profile["spec"], whole, done, {}, lambda: cluster.wall())
    assert expected and {k: status.get(k) for k in expected} == expected
    assert ANNOTATION_GOODPUT_SAMPLING not in (cluster.goodput()["metadata"].get("annotations") or {})


def test_an_unreadable_log_is_reported_once_and_holds_the_stall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, ctx, reconciler = _setup()
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    cluster.text = "".join(_training_text().splitlines(keepends=True)[:40])
    cluster.now = 10.0
    _reconcile(cluster, ctx, reconciler)
    read_through = cond.condition(cluster.goodput()["status"], "LogRead")
    assert read_through is not None and read_through["reason"] == "CaughtUp"
    cluster.refuse = True
    for _ in range(5):
        cluster.now += INTERVAL
        _reconcile(cluster, ctx, reconciler)
    status = cluster.goodput()["status"]
    unreadable = cond.condition(status, "LogRead") or {}
    assert (unreadable.get("status"), unreadable.get("reason")) == ("False", "LogNotReadable")
    assert unreadable["message"].startswith(read_through["message"].split(";", 1)[0])  # the same moment, held
    assert [e.split(":", 1)[0] for e in cluster.events] == ["Warning LogNotReadable"]
    job_status = {"workloadStartTime": format_time(T0)}
    assert stall_message(JOB_SPEC, job_status, status, cluster.wall() + timedelta(hours=1), INTERVAL) is None
    cluster.refuse = False
    cluster.now += INTERVAL
    _reconcile(cluster, ctx, reconciler)
    assert (cond.condition(cluster.goodput()["status"], "LogRead") or {}).get("reason") == "CaughtUp"


def test_a_sample_that_cannot_reach_the_end_says_it_is_behind_and_reads_on_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.runtime.reconcile import goodput_reads

    monkeypatch.setattr(goodput_reads, "SAMPLE_WINDOWS", 2)
    monkeypatch.setattr(measurement_module, "SAMPLE_WINDOWS", 2)
    cluster, ctx, reconciler = _setup()
    ctx.settings = dataclasses.replace(ctx.settings, max_log_read_bytes=4096)
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: cluster.now)
    cluster.text = _training_text()
    cluster.now = 10.0
    ctx.stores[GOODPUT_MEASUREMENTS.plural].put(copy.deepcopy(cluster.goodput()))
    result = reconciler.reconcile_goodput("ns", "j-goodput")
    behind = cond.condition(cluster.goodput()["status"], "LogRead") or {}
    assert (behind.get("status"), behind.get("reason")) == ("False", "FallingBehind")
    assert "no node is blamed" in behind["message"] and result.requeue_after is not None and result.requeue_after < 1.0
    assert [e.split(":", 1)[0] for e in cluster.events] == ["Warning FallingBehind"]
    for _ in range(200):
        _reconcile(cluster, ctx, reconciler)
        if (cond.condition(cluster.goodput()["status"], "LogRead") or {}).get("reason") == "CaughtUp":
            break
    status = cluster.goodput()["status"]
    assert (cond.condition(status, "LogRead") or {}).get("reason") == "CaughtUp"
    assert status["highestStep"] == 300
