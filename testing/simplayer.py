"""The workload player: decides what each simulated pod prints and how it ends.

A thread in the harness process watches pods on the simulated nodes. When a pod
owned by a Job is Running and not decided yet, the player looks at what it runs
(:mod:`nvcre.testing.simworkloads`) and at the faults of the nodes of its group
(every pod of the same JobSet / TrainJob), then

1. creates a kwok ``Logs`` object named like the pod, pointing at a log file;
2. appends the simulated output to that file in CRI format, each line when it is
   due, so the log grows while the pod runs;
3. annotates the pod (``sim.nvcre.io/decided``, ``exit-code``, ``duration``) so
   kwok's completion stage ends it; a hanging pod is never annotated.

A training pod can be asked for a long, chatty run through two variables of the simulated
cluster's own, set like any workload variable (the category's ``env``):
``NVCRE_SIM_TRAINING_SECONDS`` (the run's wall time, one Megatron step report a second) and
``NVCRE_SIM_LOG_BYTES_PER_SECOND`` (``NCCL_DEBUG=INFO``-style chatter on the pod that logs the
steps, a kubelet timestamp on every line, written as it is due, never held in memory whole).

MPI workers are only given an sshd log: they stay Running until the launcher ends
and JobSet removes them. Numbers come from the node profile's nominal bandwidth
times the link quality of the group's slowest node, with a seeded jitter.

The player remembers two things between workloads, and hands them to the pure
:func:`decide` as a :class:`PlayerMemory`: per checkpoint claim (the PVC mounted as the
training workspace) the last iteration a run saved there, so a later attempt that mounts
the same claim with ``ENABLE_CHECKPOINT=true`` logs Megatron's load lines and resumes
after it; and per ``crash-once`` node the workload attempt that took the crash, so only
that attempt (every pod of it, and the Job's own pod retries) crashes.
"""

from __future__ import annotations

import heapq
import json
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

from . import simlogs
from .simfaults import NO_FAULT, Fault, group_quality
from .simlogs import LogLine, NcclOutcome, Rank
from .simprofiles import GPU_RESOURCE, Profile
from .simstages import DECIDED, DURATION, EXIT_CODE
from .simworkloads import (
    JOBSET_NAME_LABEL,
    JOBSET_UID_LABEL,
    RESTART_ATTEMPT_LABEL,
    TRAINJOB_NAME_LABEL,
    Workload,
    WorkloadError,
    classify,
    completion_index,
    group_key,
    is_mpi,
    replicated_job,
)

KWOK_GROUP = "kwok.x-k8s.io"
KWOK_VERSION = "v1alpha1"
XID_DELAY_SECONDS = 1.0
#: a training run's wall time in seconds (one step report a second), when set on the pod
TRAINING_SECONDS_ENV = "NVCRE_SIM_TRAINING_SECONDS"
#: bytes of chatter a second on the pod that logs the steps, when set on the pod
LOG_BYTES_ENV = "NVCRE_SIM_LOG_BYTES_PER_SECOND"
#: the longest a chatter pass of the log writer waits (its lines are written when due)
CHATTER_PASS_SECONDS = 0.2
# Each watch window ends after this long (it bounds how long stop() waits); the next one goes
# on from the last version seen.
WATCH_SECONDS = 5
CRASH_EXIT_CODE = 1
#: elements a ``corrupt-data`` fault gets wrong in each affected row (a real report showed 237,858)
CORRUPTED_ELEMENTS = 237858
#: the names the catalog gives a worker's claim on its ComputeDomain's IMEX channel
CHANNEL_CLAIMS = ("compute-domain", "compute-domain-channel")


class ClusterView(Protocol):
    """What the player needs to know about the cluster it plays for."""

    def profile_of(self, node: str) -> Profile | None: ...

    def fault_of(self, node: str) -> Fault: ...

    def trigger_xid(self, node: str) -> None: ...


@dataclass(frozen=True)
class PlayerMemory:
    """What earlier workloads left behind, as :func:`decide` needs it.

    ``checkpoints``: ``<namespace>/<claim>`` -> the last iteration saved there (saves that are
    already done when the pod starts); ``crash_once``: node -> the attempt that took its
    ``crash-once`` fault.
    """

    checkpoints: Mapping[str, int] = field(default_factory=dict)
    crash_once: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """The outcome the player chose for one pod."""

    lines: tuple[LogLine, ...]
    exit_code: int | None  # None: the pod hangs and is never finished
    seconds: float
    xid_nodes: tuple[str, ...] = ()
    #: the checkpoint claim the run saves to and its saves: (iteration, offset in seconds)
    checkpoint_claim: str | None = None
    saves: tuple[tuple[int, float], ...] = ()
    #: the iteration a checkpointing run resumed after (0: it started from scratch)
    resumed_from: int = 0
    #: crash-once nodes whose crash this attempt takes
    crash_once_taken: tuple[str, ...] = ()
    attempt: str = ""
    #: steady output besides ``lines`` (generated as it is due)
    chatter: simlogs.Chatter | None = None


class LogWriter(threading.Thread):
    """Appends scheduled lines to log files when they are due (one thread for all pods)."""

    def __init__(self) -> None:
        super().__init__(name="sim-log-writer", daemon=True)
        self._heap: list[tuple[float, int, Path, str]] = []
        # chatter streams: path, wall time of the container start, its start, the chatter, and
        # the offset written up to
        self._streams: list[tuple[Path, float, datetime, simlogs.Chatter, float]] = []
        self._counter = 0
        self._cond = threading.Condition()
        self._stopped = False

    def schedule(self, path: Path, start_wall: float, started: datetime, lines: Sequence[LogLine]) -> None:
        with self._cond:
            for line in lines:
                self._counter += 1
                stamp = started + timedelta(seconds=line.offset)
                heapq.heappush(self._heap, (start_wall + line.offset, self._counter, path, simlogs.cri_line(stamp, line)))
            self._cond.notify()

    def stream(self, path: Path, start_wall: float, started: datetime, chatter: simlogs.Chatter) -> None:
        """Write ``chatter`` to ``path`` as it is due, in time order with the scheduled lines."""
        with self._cond:
            self._streams.append((path, start_wall, started, chatter, chatter.start))
            self._cond.notify()

    def run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and not self._streams and (not self._heap or self._heap[0][0] > time.time()):
                    timeout = None if not self._heap else max(self._heap[0][0] - time.time(), 0)
                    self._cond.wait(timeout if timeout is None else min(timeout, 1.0))
                if self._stopped:
                    return
                if self._streams and (not self._heap or self._heap[0][0] > time.time()):
                    self._cond.wait(CHATTER_PASS_SECONDS)
                due: dict[Path, list[tuple[float, str]]] = {}
                now = time.time()
                while self._heap and self._heap[0][0] <= now:
                    wall, _, path, text = heapq.heappop(self._heap)
                    due.setdefault(path, []).append((wall, text))
                streams = self._streams
                self._streams = [(p, w, s, c, max(upto, now - w)) for p, w, s, c, upto in streams if now - w < c.end]
            for path, start_wall, started, chatter, upto in streams:
                lines = chatter.lines(started, upto, now - start_wall)
                due.setdefault(path, []).extend((start_wall + offset, text) for offset, text in lines)
            for path, items in due.items():
                items.sort(key=lambda item: item[0])  # stable: scheduled lines keep their order
                with path.open("a", encoding="utf-8") as fh:
                    fh.write("".join(text for _, text in items))

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self.join(timeout=5)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claims_channel(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` claims a ComputeDomain's IMEX channel (the claim names the catalog gives it)."""
    claims = (pod.get("spec") or {}).get("resourceClaims") or []
    return any(c.get("name") in CHANNEL_CLAIMS for c in claims)


def _owned_by_job(pod: Mapping[str, Any]) -> bool:
    return any(o.get("kind") == "Job" for o in _meta(pod).get("ownerReferences") or [])


def _requests(pod: Mapping[str, Any], resource: str) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(resource)
        if value is not None and str(value).isdigit():
            total += int(value)
    return total


def network_of(pods: Sequence[Mapping[str, Any]]) -> str:
    """The NCCL network the pods' NIC requests give: IB, Libfabric (EFA) or Socket."""
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            resources = container.get("resources") or {}
            names = {*(resources.get("limits") or {}), *(resources.get("requests") or {})}
            if "vpc.amazonaws.com/efa" in names:
                return "Libfabric"
            if any(n.startswith("rdma/") or n == "nvidia.com/mlnxnics" for n in names):
                return "IB"
    return "Socket"


def procs_per_node(argv: Sequence[str], default: int) -> int:
    """mpirun's processes per node (``-N`` / ``--npernode`` before the program)."""
    program = next((i for i, w in enumerate(argv) if "_perf" in w.rsplit("/", 1)[-1]), len(argv))
    launcher = list(argv[:program])
    for flag in ("-N", "--npernode", "-npernode"):
        if flag in launcher:
            index = launcher.index(flag)
            if index + 1 < len(launcher) and launcher[index + 1].isdigit():
                return int(launcher[index + 1])
    return default


def attempt_key(pod: Mapping[str, Any]) -> str:
    """One workload attempt: the JobSet (by uid: a recreated TrainJob keeps its name) and its
    restart attempt."""
    labels = _meta(pod).get("labels") or {}
    namespace, name = group_key(pod)
    uid = labels.get(JOBSET_UID_LABEL) or labels.get("batch.kubernetes.io/controller-uid") or ""
    return f"{namespace}/{name}/{uid}/{labels.get(RESTART_ATTEMPT_LABEL, '0')}"


def _main_container(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or []
    return containers[0] if containers else {}


def _env(pod: Mapping[str, Any]) -> dict[str, str]:
    return {str(e.get("name")): str(e.get("value") or "") for e in _main_container(pod).get("env") or [] if "value" in e}


def checkpoint_claim(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(``<namespace>/<claim>``, checkpoint directory) when the run saves checkpoints.

    Like train.sh: only with ``ENABLE_CHECKPOINT=true``, into ``<workspace>/checkpoints``, where
    the workspace is the PVC-backed volume mounted in the main container.
    """
    if _env(pod).get("ENABLE_CHECKPOINT") != "true":
        return None
    claims = {
        str(v.get("name")): str((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
        for v in (pod.get("spec") or {}).get("volumes") or []
        if v.get("persistentVolumeClaim")
    }
    for mount in _main_container(pod).get("volumeMounts") or []:
        claim = claims.get(str(mount.get("name")))
        if claim:
            path = str(mount.get("mountPath") or "/mnt/workspace").rstrip("/")
            return f"{_meta(pod).get('namespace')}/{claim}", f"{path}/checkpoints"
    return None


def save_interval(pod: Mapping[str, Any], default: int = 100) -> int:
    value = _env(pod).get("SAVE_INTERVAL", "")
    return int(value) if value.isdigit() and int(value) > 0 else default


# Long: one outcome per workload kind, each reading the same fault and profile view; kept together so the rules of the simulated cluster read in one place.
def decide(
    pod: Mapping[str, Any],
    workload: Workload,
    group: Sequence[Mapping[str, Any]],
    view: ClusterView,
    *,
    seed: str,
    started: datetime,
    memory: PlayerMemory | None = None,
) -> Decision:
    """The outcome of ``pod`` (pure given the view and the memory): log lines, exit code and duration."""
    memory = memory or PlayerMemory()
    meta = _meta(pod)
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    workers = [p for p in group if replicated_job(p) != "launcher"] if is_mpi(pod) else list(group)
    workers.sort(key=lambda p: (completion_index(p), _meta(p).get("name", "")))
    nodes = list(dict.fromkeys(str((p.get("spec") or {}).get("nodeName") or "") for p in workers))
    nodes = [n for n in nodes if n] or [node]
    if workload.kind in ("nccl-loopback", "dcgm"):
        nodes = [node]  # single-node programs: only this node's faults matter
    faults = {n: view.fault_of(n) for n in nodes}
    profiles = [view.profile_of(n) for n in nodes]
    prof = next((p for p in profiles if p is not None), None) or view.profile_of(node)
    preset = (meta.get("annotations") or {}).get(EXIT_CODE)
    preset_code = int(preset) if preset is not None and str(preset).lstrip("-").isdigit() else None
    hangs = ("hang", "xid", "imex-down") if any(claims_channel(p) for p in [pod, *workers]) else ("hang", "xid")
    hang = [n for n, f in faults.items() if f.kind in hangs]
    attempt = attempt_key(pod)
    once = tuple(n for n, f in faults.items() if f.kind == "crash-once" and memory.crash_once.get(n, attempt) == attempt)
    crash = next((n for n, f in faults.items() if f.kind == "nccl-crash" or n in once), None)
    xid_nodes = tuple(n for n, f in faults.items() if f.kind == "xid")
    quality = group_quality(faults)
    pod_seed = f"{seed}/{meta.get('namespace')}/{group_key(pod)[1]}/{meta.get('name')}"
    extra: dict[str, Any] = {}

    if workload.kind == "nccl-mpi" or workload.kind == "nccl-loopback":
        assert workload.nccl is not None
        gpus = prof.gpus if prof else 8
        if workload.kind == "nccl-mpi":
            ppn = procs_per_node(workload.argv, gpus)
            ranks = [Rank(n, d, 400 + 10 * i + d, _gpu_name(view, n)) for i, n in enumerate(nodes) for d in range(ppn)]
            transport = network_of(workers)
            nominal = prof.bus_bandwidth_gbps if prof else 100.0
        else:
            ppn = max(workload.nccl.gpus_per_process, 1)
            ranks = [Rank(node, d, 1, _gpu_name(view, node)) for d in range(ppn)]
            transport = "Socket"
            nominal = prof.loopback_bus_bandwidth_gbps if prof else 100.0
        # Ranks that all hold their ComputeDomain's channel talk over multi-node NVLink (the
        # compiler keeps a GB group inside one clique); anything else crosses the network.
        # NCCL_P2P_DISABLE=1 (a diagnose loopback) or NCCL_MNNVL_ENABLE=0 keep NCCL off NVLink.
        settings = {**_env(pod), **dict(a.partition("=")[::2] for a in workload.argv if "=" in a)}
        nvlink_off = settings.get("NCCL_P2P_DISABLE") == "1" or settings.get("NCCL_MNNVL_ENABLE") == "0"
        mnnvl = (
            workload.kind == "nccl-mpi"
            and bool(prof and prof.nvlink_domains)
            and not nvlink_off
            and all(claims_channel(p) for p in workers)
        )
        if transport == "Socket" and workload.kind == "nccl-mpi" and not mnnvl:
            nominal = min(nominal, 11.0)  # a 100 GbE-class TCP path
        outcome = NcclOutcome(
            bus_bandwidth_gbps=nominal * quality,
            transport=transport,
            mnnvl=mnnvl,
            crash_node=crash,
            hang_at=0.5 if hang else None,
            wrong_elements=CORRUPTED_ELEMENTS if any(f.kind == "corrupt-data" for f in faults.values()) else 0,
            seed=pod_seed,
        )
        lines = simlogs.nccl_log(workload.nccl, ranks, outcome)
        code: int | None = CRASH_EXIT_CODE if crash else 0
    elif workload.kind == "training":
        index = completion_index(pod)
        # The world the Trainer declared (PET_NNODES): a peer pod may not be listed yet when
        # this one starts, and counting only listed pods would make no pod the last rank.
        declared = _env(pod).get("PET_NNODES", "")
        size = max(len(workers), int(declared) if declared.isdigit() else 0, 1)
        ppn = _requests(pod, GPU_RESOURCE) or (prof.gpus if prof else 8)
        claim = checkpoint_claim(pod)
        env = _env(pod)
        long_run = _positive(env.get(TRAINING_SECONDS_ENV, ""))
        shape: dict[str, Any] = {"seconds": long_run, "iterations": max(int(long_run) * 10, 10)} if long_run else {}
        run = simlogs.TrainingRun(
            world_size=size * ppn,
            first_pod=index == 0,
            last_pod=index == size - 1,
            checkpoint_every=save_interval(pod) if claim else 0,
            checkpoint_dir=claim[1] if claim else simlogs.TrainingRun.checkpoint_dir,
            resume_from=memory.checkpoints.get(claim[0], 0) if claim else 0,
            crash_node=crash,
            hang_at=0.5 if hang else None,
            diverge_at=0.5 if any(f.kind == "nan-loss" for f in faults.values()) else None,
            tflops_per_gpu=520.0 * quality,
            seed=pod_seed,
            **shape,
        )
        lines = simlogs.training_log(run, started)
        code = CRASH_EXIT_CODE if crash else 0
        chatter_rate = int(_positive(env.get(LOG_BYTES_ENV, "")))
        if chatter_rate and run.last_pod and lines:
            extra["chatter"] = simlogs.Chatter(0.0, max(line.offset for line in lines), chatter_rate)
        if claim:
            saves = tuple(simlogs.checkpoint_saves(lines))
            extra.update(checkpoint_claim=claim[0], saves=saves, resumed_from=run.resume_from)
    elif workload.kind == "dcgm":
        fault = faults.get(node, NO_FAULT)
        run_dcgm = simlogs.DcgmRun(
            node=node,
            gpus=prof.gpus if prof else 8,
            gpu_name=_gpu_name(view, node),
            level=workload.dcgm_level,
            json_output=workload.dcgm_json,
            failing_gpu=3 if fault.kind in ("xid", "nccl-crash") or node in once else None,
            hang=fault.kind == "hang",
        )
        lines = simlogs.dcgm_log(run_dcgm)
        hang = ["hang"] if fault.kind == "hang" else []
        code = 1 if simlogs.dcgm_failed(run_dcgm) else 0
        xid_nodes = (node,) if fault.kind == "xid" else ()
        if fault.kind == "xid":
            hang = []  # the diag reports the Xid and exits
    else:
        lines = simlogs.generic_log(workload.argv)
        code = 0
        hang = [n for n in hang if faults.get(n, NO_FAULT).kind == "hang"]
    if hang:
        code = None
    if preset_code is not None and code is not None:
        code = preset_code
    seconds = (max((line.offset for line in lines), default=0.0) + 0.3) if lines else 0.5
    decision = Decision(tuple(lines), code, round(seconds, 3), xid_nodes, attempt=attempt)
    if once and workload.kind in ("nccl-mpi", "nccl-loopback", "training", "dcgm"):
        decision = replace(decision, crash_once_taken=tuple(n for n in once if n not in memory.crash_once))
    if workload.kind == "training" and extra:
        decision = replace(decision, **extra)
    return decision


def _positive(text: str) -> float:
    """A positive number from a variable's text, else 0."""
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if 0 < value < float("inf") else 0.0


def _gpu_name(view: ClusterView, node: str) -> str:
    prof = view.profile_of(node)
    return prof.dra_name if prof else "NVIDIA GPU"


class Player:
    """Watches pods and plays their workloads (see the module docstring)."""

    def __init__(
        self,
        api_client_factory: Callable[[], Any],
        view: ClusterView,
        log_dir: Path,
        *,
        seed: str = "nvcre-sim",
        is_sim_node: Callable[[str], bool],
    ) -> None:
        self._factory = api_client_factory
        self._view = view
        self.log_dir = log_dir
        self.seed = seed
        self._is_sim_node = is_sim_node
        self._stop = threading.Event()
        self._handled: set[str] = set()
        self._writer = LogWriter()
        self._thread = threading.Thread(target=self._run, name="sim-player", daemon=True)
        self._timers: list[threading.Timer] = []
        self.errors: list[str] = []
        self.decisions: dict[str, Decision] = {}
        self._memory_lock = threading.Lock()
        # <namespace>/<claim> -> [(wall time the save completes, iteration)]
        self._saves: dict[str, list[tuple[float, int]]] = {}
        # node -> the attempt that took its crash-once fault
        self._crash_once: dict[str, str] = {}

    def memory(self, nodes: Sequence[str], now: float | None = None) -> PlayerMemory:
        """What :func:`decide` may know at wall time ``now``: saves already completed, and the
        crash-once nodes of ``nodes`` already taken (a node whose fault changed is forgotten)."""
        moment = time.time() if now is None else now
        with self._memory_lock:
            for node in nodes:
                if self._view.fault_of(node).kind != "crash-once":
                    self._crash_once.pop(node, None)
            checkpoints = {}
            for claim, saves in self._saves.items():
                done = [iteration for due, iteration in saves if due <= moment]
                if done:
                    checkpoints[claim] = max(done)
            return PlayerMemory(checkpoints=checkpoints, crash_once=dict(self._crash_once))

    def remember(self, decision: Decision, start_wall: float) -> None:
        """Keep what ``decision`` leaves behind for later workloads."""
        with self._memory_lock:
            for node in decision.crash_once_taken:
                self._crash_once.setdefault(node, decision.attempt)
            if decision.checkpoint_claim and decision.saves:
                self._saves.setdefault(decision.checkpoint_claim, []).extend(
                    (start_wall + offset, iteration) for iteration, offset in decision.saves
                )

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._writer.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        self._thread.join(timeout=WATCH_SECONDS + 5)
        self._writer.stop()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # ------------------------------------------------------------------ loop

    def _run(self) -> None:
        from kubernetes import client, watch

        with self._factory() as api_client:
            core = client.CoreV1Api(api_client)
            custom = client.CustomObjectsApi(api_client)
            version: str | None = None
            while not self._stop.is_set():
                try:
                    if version is None:
                        version = self._relist(core, custom)
                    version = self._watch(watch.Watch(), core, custom, version)  # type: ignore[no-untyped-call]
                except client.ApiException as exc:
                    if self._stop.is_set():
                        return
                    if exc.status != 410:  # 410: the version left the watch window; relist
                        self.errors.append(f"{type(exc).__name__}: {exc}")
                        self._stop.wait(0.5)
                    version = None
                except Exception as exc:  # keep playing: record and relist
                    if self._stop.is_set():
                        return
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    version = None
                    self._stop.wait(0.5)

    def _relist(self, core: Any, custom: Any) -> str:
        """Consider every pod there is; the version to watch from."""
        listed: Any = core.list_pod_for_all_namespaces(_preload_content=False)
        body = json.loads(listed.data)
        for pod in body.get("items") or []:
            self._consider(core, custom, pod)
        return str(body["metadata"]["resourceVersion"])

    def _watch(self, stream: Any, core: Any, custom: Any, version: str) -> str:
        """One watch window from ``version``; the version the next window goes on from.

        Windows are short (they bound how long :meth:`stop` waits) but chained: only an expired
        version (410) costs a relist of every pod.
        """
        for event in stream.stream(
            core.list_pod_for_all_namespaces,
            resource_version=version,
            timeout_seconds=WATCH_SECONDS,
            allow_watch_bookmarks=True,
            deserialize=False,
        ):
            if self._stop.is_set():
                stream.stop()
                break
            obj = event.get("object") or {}
            version = str(_meta(obj).get("resourceVersion") or version)
            if event.get("type") in ("ADDED", "MODIFIED"):
                self._consider(core, custom, obj)
        return version

    def _consider(self, core: Any, custom: Any, pod: Mapping[str, Any]) -> None:
        meta = _meta(pod)
        uid = str(meta.get("uid", ""))
        if not uid or uid in self._handled or meta.get("deletionTimestamp"):
            return
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node or not self._is_sim_node(node) or not _owned_by_job(pod):
            return
        if DECIDED in (meta.get("annotations") or {}):
            self._handled.add(uid)
            return
        self._handled.add(uid)
        if claims_channel(pod) and self._view.fault_of(node).kind == "imex-down":
            return  # its channel is never prepared: on a node the container would never start
        try:
            self._play(core, custom, pod)
        except Exception:  # one bad pod must not stop the player
            self.errors.append(f"{meta.get('namespace')}/{meta.get('name')}: {traceback.format_exc()}")

    def _group(self, core: Any, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        labels = _meta(pod).get("labels") or {}
        namespace = str(_meta(pod).get("namespace"))
        for key in (JOBSET_NAME_LABEL, TRAINJOB_NAME_LABEL):
            if key in labels:
                raw: Any = core.list_namespaced_pod(namespace, label_selector=f"{key}={labels[key]}", _preload_content=False)
                items = json.loads(raw.data).get("items") or []
                return [p for p in items if not _meta(p).get("deletionTimestamp")]
        return [dict(pod)]

    def _play(self, core: Any, custom: Any, pod: Mapping[str, Any]) -> None:
        meta = _meta(pod)
        namespace, name = str(meta["namespace"]), str(meta["name"])
        path = self.log_dir / namespace / f"{name}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        try:
            workload = classify(pod)
        except WorkloadError as exc:
            # The program would reject its own arguments: print why and exit 2.
            lines: tuple[LogLine, ...] = (LogLine(0.0, f"error: {exc}", "stderr"),)
            self._create_logs(custom, namespace, name, containers, path)
            self._schedule(path, lines)
            self._annotate(core, namespace, name, 2, 0.5)
            return
        self._create_logs(custom, namespace, name, containers, path)
        if workload.kind == "mpi-worker":
            self._schedule(path, tuple(simlogs.sshd_log()))
            return
        if workload.kind == "nccl-mpi":
            group = self._wait_for_workers(core, pod)
        else:
            group = self._group(core, pod)
        started = datetime.now(timezone.utc)
        nodes = [str((p.get("spec") or {}).get("nodeName") or "") for p in group]
        memory = self.memory([n for n in nodes if n], started.timestamp())
        decision = decide(pod, workload, group, self._view, seed=self.seed, started=started, memory=memory)
        self.remember(decision, started.timestamp())
        self.decisions[f"{namespace}/{name}"] = decision
        self._schedule(path, decision.lines, started)
        if decision.chatter is not None:
            self._writer.stream(path, started.timestamp(), started, decision.chatter)
        for node in decision.xid_nodes:
            timer = threading.Timer(XID_DELAY_SECONDS, self._view.trigger_xid, args=(node,))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
        if decision.exit_code is not None:
            self._annotate(core, namespace, name, decision.exit_code, decision.seconds)

    def _wait_for_workers(self, core: Any, pod: Mapping[str, Any], timeout: float = 10.0) -> list[dict[str, Any]]:
        """The launcher's group once every worker pod is bound to a node."""
        deadline = time.monotonic() + timeout
        group = self._group(core, pod)
        while time.monotonic() < deadline and not self._stop.is_set():
            workers = [p for p in group if replicated_job(p) != "launcher"]
            if workers and all((p.get("spec") or {}).get("nodeName") for p in workers):
                break
            self._stop.wait(0.2)
            group = self._group(core, pod)
        return group

    def _schedule(self, path: Path, lines: Sequence[LogLine], started: datetime | None = None) -> None:
        started = started or datetime.now(timezone.utc)
        self._writer.schedule(path, started.timestamp(), started, lines)

    def _create_logs(self, custom: Any, namespace: str, name: str, containers: list[str], path: Path) -> None:
        from kubernetes.client import ApiException

        body = {
            "apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}",
            "kind": "Logs",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"logs": [{"containers": containers, "logsFile": str(path)}]},
        }
        try:
            custom.create_namespaced_custom_object(KWOK_GROUP, KWOK_VERSION, namespace, "logs", body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def _annotate(self, core: Any, namespace: str, name: str, code: int, seconds: float) -> None:
        from kubernetes.client import ApiException

        patch = {
            "metadata": {
                "annotations": {
                    DECIDED: "true",
                    EXIT_CODE: str(code),
                    DURATION: f"{int(seconds * 1000)}ms",
                }
            }
        }
        try:
            core.patch_namespaced_pod(name, namespace, patch)
        except ApiException as exc:
            if exc.status != 404:  # deleted meanwhile: nothing left to finish
                raise
