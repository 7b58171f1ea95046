"""Container logs of the simulated workloads: nccl-tests, Megatron training, DCGM diag.

Every generator is pure and deterministic given its seed. It returns a list of
:class:`LogLine` (an offset in seconds from the start of the container and the
text), so the player can append each line to the log file when it is due and the
log grows while the pod runs, as a real one does. :func:`cri_line` formats a line
the way the container runtime stores it (``<RFC3339Nano> stdout F <text>``), which
is what kwok hands to the API server's ``pods/log`` path.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

NCCL_TESTS_VERSION = "2.17.8"
NCCL_VERSION = "2.29.2+cuda13.1"


@dataclass(frozen=True)
class LogLine:
    """One line of output, ``offset`` seconds after the container started."""

    offset: float
    text: str
    stream: str = "stdout"


def cri_line(when: datetime, line: LogLine) -> str:
    """``line`` in CRI log format, stamped at ``when`` (UTC, nanosecond field)."""
    stamp = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    return f"{stamp} {line.stream} F {line.text}\n"


def seeded(seed: str) -> random.Random:
    """A random generator fixed by ``seed`` (stable across runs and Python versions)."""
    return random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


# ------------------------------------------------------------------ nccl-tests


@dataclass(frozen=True)
class NcclRun:
    """What an nccl-tests invocation asks for and where it runs."""

    binary: str  # e.g. all_reduce_perf_mpi
    min_bytes: int = 8
    max_bytes: int = 128 * 1024 * 1024
    step_factor: int = 2
    step_bytes: int = 0  # -i, used when step_factor is 0
    iters: int = 20
    warmup: int = 1
    agg_iters: int = 1
    gpus_per_process: int = 1  # -g
    datatype: str = "float"
    op: str = "sum"
    root: int = 0


@dataclass(frozen=True)
class Rank:
    """One rank of the run: the node it is on and its device."""

    node: str
    device: int
    pid: int
    gpu_name: str


@dataclass(frozen=True)
class NcclOutcome:
    """How the simulated run behaves."""

    bus_bandwidth_gbps: float  # peak bus bandwidth of the largest messages
    transport: str  # "IB" or "Socket"
    mnnvl: bool = False  # the ranks share one multi-node NVLink domain (a ComputeDomain's IMEX channel)
    crash_node: str | None = None  # a rank on this node dies with an NCCL error
    seconds: float = 3.0  # wall time of the size sweep
    hang_at: float | None = None  # stop printing after this fraction of the sweep
    wrong_elements: int = 0  # elements a corrupted collective gets wrong in each row from the middle size on
    seed: str = "nccl"
    extra_lines: tuple[str, ...] = field(default=())


_ELEMENT_BYTES = {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4,
                  "uint32": 4, "double": 8, "int64": 8, "uint64": 8}  # fmt: skip


def collective_of(binary: str) -> str:
    """``all_reduce`` from ``all_reduce_perf_mpi`` or ``/path/all_reduce_perf``."""
    name = binary.rsplit("/", 1)[-1]
    return name.split("_perf", 1)[0]


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' algorithm-to-bus bandwidth factor for ``ranks`` ranks."""
    n = max(ranks, 1)
    if collective == "all_reduce":
        return 2 * (n - 1) / n if n > 1 else 1.0
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n if n > 1 else 1.0
    return 1.0


def sizes(run: NcclRun) -> list[int]:
    """The message sizes of the sweep, as nccl-tests steps them."""
    out: list[int] = []
    size = max(run.min_bytes, 1)
    while size <= run.max_bytes and len(out) < 64:
        out.append(size)
        if run.step_factor > 1:
            size *= run.step_factor
        elif run.step_bytes > 0:
            size += run.step_bytes
        else:
            break
    return out or [run.max_bytes]


def _time_field(us: float) -> str:
    if us < 10000:
        return f"{us:7.2f}"
    if us < 100000:
        return f"{us:7.1f}"
    return f"{us:7.0f}"


def nccl_table_row(size: int, count: int, dtype: str, redop: str, root: int,
                   cells: Sequence[tuple[float, float, float]], wrong: int = 0) -> str:  # fmt: skip
    """One row of the size table: out-of-place then in-place ``(time_us, algbw, busbw)``, each
    with ``wrong`` elements that failed the check."""
    row = f"{size:12d}  {count:12d}  {dtype:>8s}  {redop:>6s}  {root:6d}"
    for time_us, alg, bus in cells:
        row += f"  {_time_field(time_us)}  {alg:6.2f}  {bus:6.2f}  {wrong:6d}"
    return row


# Long: writes NCCL's output in the order NCCL prints it (banner, ranks, table, summary); splitting it would scatter that order.
def nccl_log(run: NcclRun, ranks: Sequence[Rank], outcome: NcclOutcome) -> list[LogLine]:
    """The launcher (or single-node) output of an nccl-tests run, nccl-tests shaped."""
    rng = seeded(outcome.seed)
    collective = collective_of(run.binary)
    name = run.binary.rsplit("/", 1)[-1]
    n = len(ranks)
    nodes = list(dict.fromkeys(r.node for r in ranks))
    factor = bus_factor(collective, n)
    lines: list[str] = [
        f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers=22902 nccl-library=22902",
        f"# Collective test starting: {name}",
        f"# nThread 1 nGpus {run.gpus_per_process} minBytes {run.min_bytes} maxBytes {run.max_bytes} "
        + (f"step: {run.step_factor}(factor)" if run.step_factor > 1 else f"step: {run.step_bytes}(bytes)")
        + f" warmup iters: {run.warmup} iters: {run.iters} agg iters: {run.agg_iters} validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for index, rank in enumerate(ranks):
        lines.append(
            f"#  Rank {index:2d} Group  0 Pid {rank.pid:6d} on {rank.node:>10s} device {rank.device:2d} "
            f"[0000:{0x18 + 0x10 * rank.device:02x}:00] {rank.gpu_name}"
        )
    lines.extend(_nccl_init(ranks, nodes, outcome.transport, mnnvl=outcome.mnnvl))
    timeline: list[LogLine] = [LogLine(0.05 * i / max(len(lines), 1), t) for i, t in enumerate(lines)]

    if outcome.crash_node is not None:
        crashed = next((r for r in ranks if r.node == outcome.crash_node), ranks[0])
        prefix = f"{crashed.node}:{crashed.pid}:{crashed.pid} [{crashed.device}]"
        transport = "NET/IB" if outcome.transport == "IB" else "NET/Socket"
        crash = [
            f"{prefix} NCCL WARN {transport} : Got completion from peer 10.0.0.2<41337> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2",
            f"{prefix} NCCL INFO transport/net.cc:1212 -> 6",
            f"{crashed.node}: Test NCCL failure common.cu:1049 'remote process exited or there was a network error / '",
            f" .. {crashed.node} pid {crashed.pid}: Test failure common.cu:891",
            "--------------------------------------------------------------------------",
            "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.",
            "--------------------------------------------------------------------------",
            "--------------------------------------------------------------------------",
            f"mpirun detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:",
            "",
            f"  Process name: [[4242,1],{ranks.index(crashed)}]",
            f"  Exit code:    3",
            "--------------------------------------------------------------------------",
        ]
        start = timeline[-1].offset
        timeline.extend(LogLine(start + 0.3 + 0.01 * i, t) for i, t in enumerate(crash))
        return timeline

    timeline.extend(LogLine(timeline[-1].offset + 0.01 * (i + 1), t) for i, t in enumerate(_nccl_table_header()))
    steps = sizes(run)
    latency_us = 28.0 if len(nodes) > 1 else 9.0
    peak_alg = outcome.bus_bandwidth_gbps / factor  # GB/s == bytes per ns
    bus_values: list[float] = []
    wrong_total = 0
    start = timeline[-1].offset + 0.05
    per_row = outcome.seconds / max(len(steps), 1)
    elements = _ELEMENT_BYTES.get(run.datatype, 4)
    redop = run.op if collective in ("all_reduce", "reduce_scatter", "reduce") else "none"
    root = run.root if collective in ("broadcast", "reduce") else -1
    for index, size in enumerate(steps):
        offset = start + per_row * (index + 1)
        if outcome.hang_at is not None and index >= int(len(steps) * outcome.hang_at):
            return timeline
        cells = []
        for _ in range(2):
            jitter = 1.0 + rng.uniform(-0.015, 0.015)
            time_us = (latency_us + size / (peak_alg * 1e3)) * jitter
            alg = size / time_us / 1e3
            bus = alg * factor
            bus_values.append(bus)
            cells.append((time_us, alg, bus))
        count = size // elements
        if collective in ("all_gather", "reduce_scatter", "alltoall"):
            count = max(count // max(n, 1), 0)
        wrong = min(outcome.wrong_elements, count) if index >= len(steps) // 2 else 0
        wrong_total += 2 * wrong
        row = nccl_table_row(size, count, run.datatype, redop, root, cells, wrong)
        timeline.append(LogLine(offset, row))
    avg = sum(bus_values) / len(bus_values) if bus_values else 0.0
    end = timeline[-1].offset
    tail = [
        *(
            f"{r.node}:{r.pid}:{r.pid} [{r.device}] NCCL INFO comm 0x{0x5555569A0000 + i * 0x2940:x} rank {i} nranks {n} cudaDev {r.device} busId {0x18 + 0x10 * r.device:x}0 - Destroy COMPLETE"
            for i, r in enumerate(ranks[:2])
        ),
        f"# Out of bounds values : {wrong_total} FAILED" if wrong_total else "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {_g6(avg)} ",
        "#",
        f"# Collective test concluded: {name}",
        "#",
        "",
        *outcome.extra_lines,
    ]
    timeline.extend(LogLine(end + 0.01 * (i + 1), t) for i, t in enumerate(tail))
    return timeline


def _g6(value: float) -> str:
    """Six significant digits, as nccl-tests prints the average (``%g``)."""
    return f"{value:.6g}"


def _nccl_table_header() -> list[str]:
    return [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    ]


def _nccl_init(ranks: Sequence[Rank], nodes: Sequence[str], transport: str, *, mnnvl: bool = False) -> list[str]:
    """NCCL INFO lines of communicator set-up (first rank per node), naming the network.

    With ``mnnvl`` every rank is in one NVLink clique: NCCL reports ``MNNVL 1`` and one node,
    and its channels run over ``P2P/MNNVL`` instead of the network."""
    out: list[str] = []
    seen: set[str] = set()
    n = len(ranks)
    for index, rank in enumerate(ranks):
        if rank.node in seen:
            continue
        seen.add(rank.node)
        p = f"{rank.node}:{rank.pid}:{rank.pid} [{rank.device}]"
        ip = f"10.0.{nodes.index(rank.node) // 250}.{nodes.index(rank.node) % 250 + 1}"
        out.append(f"{p} NCCL INFO Bootstrap: Using eth0:{ip}<0>")
        out.append(f"{p} NCCL INFO NCCL version {NCCL_VERSION}")
        if transport == "IB":
            hcas = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(4))
            out.append(f"{p} NCCL INFO NET/IB : Using {hcas} [RO]; OOB eth0:{ip}<0>")
            out.append(f"{p} NCCL INFO Initialized NET plugin IB")
        elif transport == "Libfabric":
            out.append(f"{p} NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.3")
            out.append(f"{p} NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)")
            out.append(f"{p} NCCL INFO Initialized NET plugin Libfabric")
        else:
            out.append(f"{p} NCCL INFO NET/IB : No device found.")
            out.append(f"{p} NCCL INFO NET/Socket : Using [0]eth0:{ip}<0>")
            out.append(f"{p} NCCL INFO Initialized NET plugin Socket")
        out.append(f"{p} NCCL INFO Using network {transport}")
        if mnnvl:
            clique = 0x7F00 + len(nodes)
            out.append(f"{p} NCCL INFO MNNVL busId 0x1801000 fabric UUID 5e1e0000.0 cliqueId 0x{clique:x} state 3 healthMask 0x0")
            out.append(f"{p} NCCL INFO MNNVL 1 cliqueId {clique:x} cliqueSize {n} cliqueRank {index} nvlDomainSize {n}")
            out.append(
                f"{p} NCCL INFO comm 0x{0x5555569A0000 + index * 0x2940:x} rank {index} nRanks {n} nNodes 1 "
                f"localRanks {n} localRank {index} MNNVL 1"
            )
        out.append(
            f"{p} NCCL INFO [Rank {index}] ncclCommInitRankConfig comm 0x{0x5555569A0000 + index * 0x2940:x} "
            f"rank {index} nranks {n} cudaDev {rank.device} nvmlDev {rank.device} - Init START"
        )
    if len(nodes) > 1:
        first = ranks[0]
        peer = next(i for i, r in enumerate(ranks) if r.node != first.node)
        p = f"{first.node}:{first.pid}:{first.pid} [{first.device}]"
        for channel in range(2):
            if mnnvl:
                out.append(f"{p} NCCL INFO Channel {channel:02d}/0 : 0[0] -> {peer}[0] via P2P/MNNVL")
                continue
            out.append(f"{p} NCCL INFO Channel {channel:02d}/0 : {peer}[0] -> 0[0] [receive] via NET/{transport}/{channel}")
            out.append(f"{p} NCCL INFO Channel {channel:02d}/0 : 0[0] -> {peer}[0] [send] via NET/{transport}/{channel}")
        out.append(f"{p} NCCL INFO Connected all rings, use ring PXN 0 GDR 1")
    for index, rank in enumerate(ranks[:1]):
        out.append(
            f"{rank.node}:{rank.pid}:{rank.pid} [{rank.device}] NCCL INFO ncclCommInitRankConfig comm "
            f"0x{0x5555569A0000 + index * 0x2940:x} rank {index} nranks {n} cudaDev {rank.device} "
            f"nvmlDev {rank.device} - Init COMPLETE"
        )
    return out


# ----------------------------------------------------------------- chatter

#: a line NCCL prints at ``NCCL_DEBUG=INFO`` (200 bytes in CRI format with its timestamp)
NCCL_INFO_LINE = (
    "node-0:1234:1234 [0] NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/IPC/read comm 0x55d1a3 nRanks 16 "
    "localRanks 8 localRank 0 MNNVL 0 xxxxxxxxxxxxxxxxxxxxxxxxx"
)


@dataclass(frozen=True)
class Chatter:
    """Output a workload prints steadily besides its own lines (``NCCL_DEBUG=INFO``-style), each
    line stamped when it is printed, as a container runtime stamps it: ``bytes_per_second`` of
    log (CRI format) from ``start`` to ``end`` seconds after the container started."""

    start: float
    end: float
    bytes_per_second: int
    text: str = NCCL_INFO_LINE

    @property
    def lines_per_second(self) -> float:
        return self.bytes_per_second / len(cri_line(datetime(2026, 1, 1, tzinfo=timezone.utc), LogLine(0.0, self.text)))

    def lines(self, started: datetime, since: float, until: float) -> list[tuple[float, str]]:
        """(offset, CRI line) of the lines printed in ``[since, until)`` seconds after the start."""
        rate = self.lines_per_second
        low, high = max(since, self.start), min(until, self.end)
        if rate <= 0 or high <= low:
            return []
        first = math.ceil((low - self.start) * rate)
        last = math.ceil((high - self.start) * rate)
        zero = started.timestamp()
        tail = f"000Z stdout F {self.text}\n"
        out: list[tuple[float, str]] = []
        head_second, head = -1, ""
        for index in range(first, last):
            offset = self.start + index / rate
            micros = round((zero + offset) * 1_000_000)
            second, micro = divmod(micros, 1_000_000)
            if second != head_second:
                head_second, head = second, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
            out.append((offset, f"{head}{micro:06d}{tail}"))
        return out


# -------------------------------------------------------------------- Megatron


@dataclass(frozen=True)
class TrainingRun:
    """A simulated Megatron-LM run as seen by one pod.

    ``checkpoint_every`` is Megatron's ``--save-interval`` (0: no ``--save``, nothing is
    written). ``resume_from`` is the iteration an earlier attempt checkpointed: the run logs
    Megatron's load lines and continues after it, so a resumed run logs fewer iterations.
    """

    world_size: int
    iterations: int = 200
    log_interval: int = 10
    seconds: float = 4.0  # wall time of a whole run from iteration 0
    tflops_per_gpu: float = 520.0
    first_pod: bool = True  # prints the start-of-training lines
    last_pod: bool = True  # prints the iteration lines
    checkpoint_every: int = 100
    checkpoint_dir: str = "/checkpoints/megatron"
    resume_from: int = 0
    crash_node: str | None = None  # an NCCL error stops the run on this node
    hang_at: float | None = None
    #: the run diverges after this fraction of its reports: the loss prints NAN from then on
    diverge_at: float | None = None
    seed: str = "train"


def _megatron_stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def _resume_lines(run: TrainingRun, offset: float) -> list[LogLine]:
    """What Megatron prints when ``--load`` finds a checkpoint (rank 0 only)."""
    path = run.checkpoint_dir
    return [
        LogLine(offset, f"Loading checkpoint from {path}"),
        LogLine(offset + 0.01, f" loading distributed checkpoint from {path} at iteration {run.resume_from}"),
        LogLine(
            offset + 0.02,
            f"  successfully loaded checkpoint from {path} [ t 1/1, p 1/1 ] at iteration {run.resume_from}",
        ),
    ]


def checkpoint_saves(lines: Sequence[LogLine]) -> list[tuple[int, float]]:
    """(iteration, offset) of every checkpoint save ``lines`` complete, in order."""
    found: list[tuple[int, float]] = []
    for line in lines:
        match = _SCHEDULED.search(line.text)
        if match:
            found.append((int(match.group(1)), line.offset))
    return found


_SCHEDULED = re.compile(r"scheduled an async checkpoint save at iteration\s+(\d+)")


# Long: writes a training log in the order the workload prints it (start, steps, checkpoints, end).
def training_log(run: TrainingRun, started: datetime) -> list[LogLine]:
    """Megatron iteration, checkpoint and start-up lines in the ``megatron-training`` format."""
    rng = seeded(run.seed)
    tp = 4 if run.world_size % 4 == 0 else 1
    dp = max(run.world_size // tp, 1)
    lines: list[LogLine] = [
        LogLine(0.0, "[rank0]: > initializing torch distributed ..."),
    ]
    if run.first_pod:
        lines.append(
            LogLine(
                0.05,
                f"using world size: {run.world_size}, data-parallel size: {dp}, context-parallel size: 1, "
                f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {tp}, "
                "pipeline-model-parallel size: 1",
            )
        )
        lines.append(LogLine(0.1, "> building GPTDataset datasets ..."))
    warm = 0.2
    start = min(max(run.resume_from, 0), run.iterations)
    if start and run.first_pod:
        lines.extend(_resume_lines(run, 0.12))
    # Every report takes the same wall time; a resumed run has fewer of them left.
    total_reports = max(run.iterations // run.log_interval, 1)
    interval = max(run.seconds - warm - 0.1, 0.1) / total_reports
    first_report = start // run.log_interval + 1
    reports = range(first_report, total_reports + 1)
    step_ms = interval * 1000 / run.log_interval
    crash_after = first_report - 1 + max(len(reports) // 2, 0)
    hang_after = first_report - 1 + len(reports) * (run.hang_at if run.hang_at is not None else 1.0)
    diverge_after = first_report - 1 + len(reports) * (run.diverge_at if run.diverge_at is not None else 1.0)
    nan_iterations = 0
    end = warm
    for report in reports:
        offset = warm + interval * (report - first_report + 1)
        end = offset
        iteration = report * run.log_interval
        if run.hang_at is not None and report > hang_after:
            return lines
        if run.crash_node is not None and report > crash_after:
            lines.append(
                LogLine(
                    offset,
                    f"[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:2171, remote process exited or there was a network error, NCCL version {NCCL_VERSION}",
                )
            )
            lines.append(
                LogLine(
                    offset + 0.01,
                    f"[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely. Last error: NET/IB : Got completion from peer on {run.crash_node} with status=12",
                )
            )
            return lines
        if not run.last_pod:
            continue
        when = started + timedelta(seconds=offset)
        tflops = run.tflops_per_gpu * (1.0 + rng.uniform(-0.02, 0.02))
        loss = 11.0 * math.exp(-iteration / 120.0) + 2.0 + rng.uniform(-0.05, 0.05)
        if report > diverge_after:
            # a diverged run: Megatron formats the NaN average with {:.6E}, which prints NAN, and
            # counts the interval's iterations as nan iterations
            loss, nan_iterations = math.nan, run.log_interval
        else:
            nan_iterations = 0
        lines.append(
            LogLine(
                offset,
                f"[{_megatron_stamp(when)}] iteration {iteration:8d}/{run.iterations:8d} | "
                f"consumed samples: {iteration * dp * 8:10d} | elapsed time per iteration (ms): {step_ms:.1f} | "
                f"throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: 3.000000E-04 | "
                f"global batch size: {dp * 8:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                f"grad norm: {'nan' if nan_iterations else '1.012'} | number of skipped iterations:   0 | "
                f"number of nan iterations: {nan_iterations:3d} |",
            )
        )
        if run.checkpoint_every and iteration % run.checkpoint_every == 0:
            lines.append(
                LogLine(
                    offset + 0.005,
                    f"[{_megatron_stamp(when)}] saving checkpoint at iteration {iteration:7d} to {run.checkpoint_dir} in torch_dist format",
                )
            )
            done = when + timedelta(milliseconds=5)
            lines.append(
                LogLine(
                    offset + 0.01,
                    f"[{_megatron_stamp(done)}] scheduled an async checkpoint save at iteration {iteration:7d} to {run.checkpoint_dir}",
                )
            )
    finish = end + 0.05
    lines.append(LogLine(finish, "[after training is done] datetime: " + _megatron_stamp(started + timedelta(seconds=finish + 0.05))))
    return lines


# ------------------------------------------------------------------------ DCGM

DCGM_TESTS = (
    ("Deployment", ("software",)),
    ("Integration", ("pcie",)),
    ("Hardware", ("memory", "diagnostic", "nvbandwidth")),
    ("Stress", ("targeted_stress", "targeted_power", "memory_bandwidth", "memtest", "pulse_test")),
)


@dataclass(frozen=True)
class DcgmRun:
    """A simulated ``dcgmi diag`` on one node."""

    node: str
    gpus: int
    gpu_name: str
    level: int = 4
    json_output: bool = True
    failing_gpu: int | None = None  # an Xid on this GPU fails the hardware tests
    seconds: float = 3.0
    hang: bool = False


def dcgm_log(run: DcgmRun) -> list[LogLine]:
    """``dcgmi diag`` output (JSON with ``--json``, else the text table)."""
    if run.hang:
        return [LogLine(0.1, "Running level %d diagnostic. This may take several minutes..." % run.level)]
    categories: list[dict[str, Any]] = []
    for category, tests in DCGM_TESTS:
        entries: list[dict[str, Any]] = []
        for test in tests:
            results: list[dict[str, Any]] = []
            for gpu in range(run.gpus):
                failed = run.failing_gpu == gpu and category in ("Hardware", "Stress")
                result: dict[str, object] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu,
                                             "status": "Fail" if failed else "Pass"}  # fmt: skip
                if failed:
                    result["warnings"] = [{"error_category": 3, "error_id": 95, "error_severity": 2,
                                           "warning": f"GPU {gpu} had XID 79 (GPU has fallen off the bus) during the test"}]  # fmt: skip
                results.append(result)
            status = "Fail" if any(r["status"] == "Fail" for r in results) else "Pass"
            entries.append({"name": test, "results": results, "test_summary": {"status": status}})
        categories.append({"category": category, "tests": entries})
    document = {
        "DCGM Diagnostic": {
            "test_categories": categories,
            "entity_groups": [
                {
                    "entity_group": "GPU",
                    "entity_group_id": 1,
                    "entities": [
                        {
                            "entity_id": g,
                            "serial_num": f"SIM{int(hashlib.sha256(f'{run.node}/{g}'.encode()).hexdigest()[:8], 16):010d}",
                            "sku": run.gpu_name,
                        }
                        for g in range(run.gpus)
                    ],
                }
            ],  # fmt: skip
        },
        "metadata": {"DCGM version": "4.5.2", "Driver version detected": "580.95.05", "Hostname": run.node},
    }
    step = run.seconds / 3
    if run.json_output:
        text = json.dumps(document, indent=4, sort_keys=False)
        return [LogLine(step * 2 + 0.001 * i, line) for i, line in enumerate(text.splitlines())]
    out = ["Successfully ran diagnostic for group.",
           "+---------------------------+------------------------------------------------+",
           "| Diagnostic                | Result                                         |",
           "+===========================+================================================+"]  # fmt: skip
    for cat in categories:
        out.append(f"|-----  {cat['category']:<20s}+------------------------------------------------|")
        for entry in cat["tests"]:
            out.append(f"| {entry['name']:<25s} | {entry['test_summary']['status']:<46s} |")
    out.append("+---------------------------+------------------------------------------------+")
    return [LogLine(step * 2 + 0.001 * i, line) for i, line in enumerate(out)]


def dcgm_failed(run: DcgmRun) -> bool:
    """Whether the diag reports a failure (and exits non-zero)."""
    return run.failing_gpu is not None


def sshd_log() -> list[LogLine]:
    """What an MPI worker prints while it only serves SSH."""
    return [LogLine(0.0, "Server listening on 0.0.0.0 port 22."), LogLine(0.001, "Server listening on :: port 22.")]


def generic_log(command: Sequence[str]) -> list[LogLine]:
    """A container the player does not recognise: it starts and exits cleanly."""
    shown = " ".join(command)[:200]
    return [LogLine(0.0, f"simulated container started: {shown}"), LogLine(0.5, "simulated container finished")]
