#!/usr/bin/python3
"""A CPU stand-in for the nccl-tests programs (all_reduce_perf and its siblings), for test clusters
whose nodes have no GPU: the collective named by the program's name runs for real on host memory
through MPI (mpi4py, NumPy buffers; Open MPI carries it over TCP between pods), is timed, checked
element by element, and reported in nccl-tests' table layout so log readers built for nccl-tests
read it unchanged. The header says plainly that no GPU and no NCCL were involved.

Started by mpirun, one process per rank, under any of the names ``<collective>_perf`` or
``<collective>_perf_mpi``. Flags follow nccl-tests: ``-b/-e`` smallest and largest size in bytes
(K, M, G suffixes), ``-f`` step factor or ``-i`` step bytes, ``-n`` timed iterations, ``-w`` warm-up
iterations, ``-m`` collectives per timed iteration, ``-N`` cycles over the sizes, ``-c`` check,
``-o`` reduction, ``-d`` data type, ``-r`` root, ``-a`` how rank times combine, ``-g`` devices;
``-t`` (one thread), ``-z``, ``-G``, ``-p``, ``-C`` are accepted for compatibility.

Devices: under mpirun every rank stands for one GPU (``-g 1``). Started alone with ``-g N`` (a
single-node loopback run, one process driving N GPUs), the stand-in starts N ranks of itself on
this host with a local ``mpirun`` and each rank stands for one of the N devices, so the collective
still runs between N processes (through shared memory) and is measured.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

USAGE = "usage: {prog} [-b minbytes] [-e maxbytes] [-f stepfactor | -i stepbytes] [-n iters] [-w warmup] [-m agg] [-N cycles] [-c 0|1] [-o op] [-d type] [-r root] [-a 0-3]"
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")
DTYPES = {
    "int8": "int8",
    "char": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "float": "float32",
    "float32": "float32",
    "double": "float64",
    "float64": "float64",
}
OPS = ("sum", "prod", "min", "max", "avg")
#: set by the stand-in for the ranks it starts itself to stand for ``-g N`` devices
DEVICES_ENV = "NVCRE_STANDIN_DEVICES"
_VALUED = {"-b", "-e", "-f", "-i", "-n", "-w", "-m", "-N", "-c", "-o", "-d", "-r", "-a", "-g", "-t", "-z", "-G", "-p", "-C"}
_LONG = {
    "--minbytes": "-b",
    "--maxbytes": "-e",
    "--stepfactor": "-f",
    "--stepbytes": "-i",
    "--iters": "-n",
    "--warmup_iters": "-w",
    "--agg_iters": "-m",
    "--run_cycles": "-N",
    "--check": "-c",
    "--op": "-o",
    "--datatype": "-d",
    "--root": "-r",
    "--average": "-a",
    "--ngpus": "-g",
    "--nthreads": "-t",
    "--blocking": "-z",
    "--cudagraph": "-G",
    "--parallel_init": "-p",
    "--report_cputime": "-C",
}


class UsageError(Exception):
    """A flag or value this stand-in cannot honour."""


@dataclass
class Options:
    min_bytes: int = 32 << 20
    max_bytes: int = 32 << 20
    step_factor: int = 1
    step_bytes: int = 1 << 20
    iters: int = 20
    warmup: int = 1
    agg: int = 1
    cycles: int = 1
    check: bool = True
    op: str = "sum"
    dtype: str = "float"
    root: int = 0
    average: int = 1
    devices: int = 1


def parse_size(text: str) -> int:
    """nccl-tests sizes: an integer with an optional K, M or G (powers of 1024)."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise UsageError(f"invalid size {text!r}")
    return int(digits) * scale


def _int(flag: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag} wants an integer, not {text!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{flag} must be between {low} and {high}, not {value}")
    return value


def _apply(opts: Options, flag: str, value: str) -> None:  # noqa: C901 - one branch per flag
    if flag == "-b":
        opts.min_bytes = parse_size(value)
    elif flag == "-e":
        opts.max_bytes = parse_size(value)
    elif flag == "-f":
        opts.step_factor = _int(flag, value, 1, 1 << 20)
    elif flag == "-i":
        opts.step_bytes, opts.step_factor = parse_size(value), 1
    elif flag == "-n":
        opts.iters = _int(flag, value, 1, 1 << 20)
    elif flag == "-w":
        opts.warmup = _int(flag, value, 0, 1 << 20)
    elif flag == "-m":
        opts.agg = _int(flag, value, 1, 1 << 10)
    elif flag == "-N":
        opts.cycles = _int(flag, value, 1, 1 << 20)  # 0 (forever) has no place in a test run
    elif flag == "-c":
        opts.check = _int(flag, value, 0, 1 << 20) != 0
    elif flag == "-o":
        if value not in OPS:
            raise UsageError(f"-o must be one of {', '.join(OPS)}, not {value!r}")
        opts.op = value
    elif flag == "-d":
        if value not in DTYPES:
            raise UsageError(f"-d must be one of {', '.join(DTYPES)}, not {value!r}")
        opts.dtype = value
    elif flag == "-r":
        opts.root = _int(flag, value, 0, 1 << 20)
    elif flag == "-a":
        opts.average = _int(flag, value, 0, 3)
    elif flag == "-g":
        opts.devices = _int(flag, value, 1, 64)
    elif flag == "-t" and _int(flag, value, 1, 1 << 10) != 1:
        raise UsageError(f"{flag} {value}: the CPU stand-in drives one thread per rank")


def parse_args(argv: list[str]) -> Options:
    opts = Options()
    index = 0
    while index < len(argv):
        arg = argv[index]
        flag, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        flag = _LONG.get(flag, flag)
        if flag not in _VALUED:
            raise UsageError(f"unknown option {arg!r}")
        if inline:
            value = inline
        elif index + 1 < len(argv):
            index += 1
            value = argv[index]
        else:
            raise UsageError(f"{arg} needs a value")
        _apply(opts, flag, value)
        index += 1
    if opts.min_bytes > opts.max_bytes:
        raise UsageError(f"minbytes {opts.min_bytes} is larger than maxbytes {opts.max_bytes}")
    return opts


def sizes(opts: Options) -> list[int]:
    """The swept sizes in bytes, as nccl-tests steps them (factor when above 1, else bytes)."""
    out, size = [], opts.min_bytes
    while size <= opts.max_bytes:
        out.append(size)
        following = size * opts.step_factor if opts.step_factor > 1 else size + opts.step_bytes
        if following <= size:
            break
        size = following
    return out


def collective_of(program: str) -> str:
    name = os.path.basename(program).removesuffix("_mpi").removesuffix("_perf")
    if name not in COLLECTIVES:
        raise UsageError(f"{os.path.basename(program)}: no collective of that name (known: {', '.join(COLLECTIVES)})")
    return name


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor: what each rank's link carries relative to the algorithm bandwidth."""
    if collective == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


def element_count(collective: str, size: int, item: int, ranks: int) -> int:
    """Elements the row's size stands for; collectives that split across ranks round down to a multiple."""
    count = size // item
    return count if collective in ("all_reduce", "broadcast") else count // ranks * ranks


def format_time(us: float) -> str:
    return f"{us:8.2f}" if us < 1e5 else f"{us:8.0f}"


def format_half(us: float, algbw: float, busbw: float, wrong: int | None) -> str:
    cell = "N/A" if wrong is None else str(wrong)
    return f" {format_time(us)} {algbw:7.2f} {busbw:7.2f} {cell:>6}"


def header_lines() -> list[str]:
    return [
        "#",
        f"#{'out-of-place':>62}{'in-place':>34}",
        f"#{'size':>12}{'count':>14}{'type':>10}{'redop':>8}{'root':>8}"
        f"{'time':>9}{'algbw':>8}{'busbw':>8}{'#wrong':>7}{'time':>9}{'algbw':>8}{'busbw':>8}{'#wrong':>7}",
        f"#{'(B)':>12}{'(elements)':>14}{'':>26}{'(us)':>9}{'(GB/s)':>8}{'(GB/s)':>8}{'':>7}{'(us)':>9}{'(GB/s)':>8}{'(GB/s)':>8}",
    ]


def row_prefix(size: int, count: int, dtype: str, redop: str, root: int) -> str:
    return f"{size:13d}{count:14d}{dtype:>10}{redop:>8}{root:>8}"


def trailer_lines(wrong_total: int, busbws: list[float]) -> list[str]:
    average = sum(busbws) / len(busbws) if busbws else 0.0
    return [
        f"# Out of bounds values : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}",
        f"# Avg bus bandwidth    : {average:.6g} ",
        "#",
    ]


class Runner:
    """The collectives of one program over MPI_COMM_WORLD, on NumPy buffers."""

    def __init__(self, collective: str, opts: Options) -> None:
        import numpy as np
        from mpi4py import MPI

        self.np, self.mpi, self.comm = np, MPI, MPI.COMM_WORLD
        self.collective, self.opts = collective, opts
        self.rank, self.ranks = self.comm.Get_rank(), self.comm.Get_size()
        self.dtype = np.dtype(DTYPES[opts.dtype])
        if collective == "broadcast" and opts.root >= self.ranks:
            raise UsageError(f"-r {opts.root}: there are only {self.ranks} ranks")
        self.mpi_op = {"sum": MPI.SUM, "avg": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[opts.op]

    def values(self, rank: int, count: int) -> Any:
        """Rank ``rank``'s input: small integers, so every reduction is exact in every type."""
        index = self.np.arange(count, dtype=self.np.int64)
        if self.opts.op == "prod":
            return (1 + (index + rank) % 2).astype(self.dtype)
        return (1 + (index + rank) % 5 + rank % 3).astype(self.dtype)

    def reduced(self, count: int) -> Any:
        np = self.np
        stack = np.stack([self.values(r, count) for r in range(self.ranks)])
        if self.opts.op in ("sum", "avg"):
            total = np.add.reduce(stack, axis=0, dtype=self.dtype)
            return (total / self.ranks).astype(self.dtype) if self.opts.op == "avg" else total
        return {"prod": np.multiply, "min": np.minimum, "max": np.maximum}[self.opts.op].reduce(stack, axis=0, dtype=self.dtype)

    def buffers(self, count: int, in_place: bool) -> tuple[Any, Any]:
        """(send, recv) filled as the collective starts: ``send`` is None for an in-place call."""
        np, n, rank = self.np, self.ranks, self.rank
        part = count // n
        mine = self.values(rank, count)
        if self.collective == "all_gather":
            chunk = self.values(rank, part)
            recv = np.zeros(count, self.dtype)
            if in_place:
                recv[rank * part : (rank + 1) * part] = chunk
                return None, recv
            return chunk, recv
        if self.collective == "broadcast":
            source = self.values(self.opts.root, count)
            return None, (source.copy() if rank == self.opts.root else np.zeros(count, self.dtype))
        if in_place:
            return None, mine.copy()
        return mine, np.zeros(part if self.collective == "reduce_scatter" else count, self.dtype)

    def expected(self, count: int) -> Any:
        """What this rank must hold once the collective is done."""
        np, n, rank = self.np, self.ranks, self.rank
        part = count // n
        if self.collective == "all_reduce":
            return self.reduced(count)
        if self.collective == "reduce_scatter":
            return self.reduced(count)[rank * part : (rank + 1) * part]
        if self.collective == "all_gather":
            return np.concatenate([self.values(r, part) for r in range(n)])
        if self.collective == "alltoall":
            return np.concatenate([self.values(r, count)[rank * part : (rank + 1) * part] for r in range(n)])
        return self.values(self.opts.root, count)

    def collect(self, send: Any, recv: Any) -> None:
        """The MPI call itself (``send`` None: in place)."""
        comm, source = self.comm, self.mpi.IN_PLACE if send is None else send
        if self.collective == "all_reduce":
            comm.Allreduce(source, recv, op=self.mpi_op)
        elif self.collective == "reduce_scatter":
            comm.Reduce_scatter_block(source, recv, op=self.mpi_op)
        elif self.collective == "all_gather":
            comm.Allgather(source, recv)
        elif self.collective == "alltoall":
            comm.Alltoall(source, recv)
        else:
            comm.Bcast(recv, root=self.opts.root)

    def timed(self, count: int, in_place: bool) -> float:
        """Seconds one collective takes, combined across ranks as ``-a`` says."""
        send, recv = self.buffers(count, in_place)
        for _ in range(self.opts.warmup):
            self.collect(send, recv)
        self.comm.Barrier()
        start = time.perf_counter()
        for _ in range(self.opts.iters * self.opts.agg):
            self.collect(send, recv)
        mine = (time.perf_counter() - start) / (self.opts.iters * self.opts.agg)
        if self.opts.average == 0:
            return float(self.comm.bcast(mine, root=0))
        op = {1: self.mpi.SUM, 2: self.mpi.MIN, 3: self.mpi.MAX}[self.opts.average]
        combined = float(self.comm.allreduce(mine, op=op))
        return combined / self.ranks if self.opts.average == 1 else combined

    def wrong(self, count: int, in_place: bool) -> int:
        """Elements that came out wrong, summed over all ranks: one fresh run, checked in full."""
        np = self.np
        send, recv = self.buffers(count, in_place)
        self.collect(send, recv)
        got = recv[: count // self.ranks] if in_place and self.collective == "reduce_scatter" else recv
        if self.opts.op == "avg" and self.collective in ("all_reduce", "reduce_scatter"):
            got = (got / self.ranks).astype(self.dtype)
        expected = self.expected(count)
        if self.dtype.kind == "f":
            bad = int(np.count_nonzero(~np.isclose(got, expected, rtol=1e-5, atol=0.0)))
        else:
            bad = int(np.count_nonzero(got != expected))
        return int(self.comm.allreduce(bad, op=self.mpi.SUM))


def local_launch(program: str, args: list[str], opts: Options, environ: dict[str, str]) -> list[str] | None:
    """The local ``mpirun`` line that stands ``-g N`` devices up as N ranks, or None to run as is.

    Under mpirun (``OMPI_COMM_WORLD_SIZE`` set) a rank drives one device, unless it is one of the
    ranks this stand-in started itself for the same ``-g``."""
    if opts.devices == 1:
        return None
    if "OMPI_COMM_WORLD_SIZE" in environ:
        if environ.get(DEVICES_ENV) == str(opts.devices) and environ["OMPI_COMM_WORLD_SIZE"] == str(opts.devices):
            return None
        raise UsageError(f"-g {opts.devices}: under mpirun the CPU stand-in drives one device per rank (start one rank per GPU)")
    mpirun = shutil.which("mpirun", path=environ.get("PATH"))
    if mpirun is None:
        raise UsageError(f"-g {opts.devices}: no mpirun on PATH to start one rank per device")
    return [mpirun, "--allow-run-as-root", "-np", str(opts.devices), "--oversubscribe", "--bind-to", "none",
            "-x", DEVICES_ENV, program, *args]  # fmt: skip


def _say(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def _info(rank: int) -> None:
    """NCCL-style INFO lines (when NCCL_DEBUG asks for them) naming the network the bytes used."""
    if os.environ.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE"):
        return
    local = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    tag = f"{socket.gethostname()}:{os.getpid()}:{os.getpid()} [{local}]"
    _say(
        [
            f"{tag} NCCL INFO cpu stand-in rank {rank}: no NCCL library and no GPU; collectives go through MPI on host memory",
            f"{tag} NCCL INFO Using network Socket",
        ]
    )


def _devices(runner: Runner) -> list[str]:
    """Rank 0 gathers who runs where and lists them like nccl-tests' "Using devices" block."""
    me = (runner.rank, os.getpid(), socket.gethostname())
    everyone = runner.comm.gather(me, root=0)
    if runner.rank != 0:
        return []
    own = DEVICES_ENV in os.environ  # ranks standing for the devices of one process: rank r is device r
    return ["#", "# Using devices"] + [
        f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10} device {r if own else 0:2d} [cpu] host memory" for r, pid, host in everyone
    ]


def benchmark(collective: str, opts: Options) -> int:
    """Run the sweep; rank 0 prints the table. Exit status 1 when a result was wrong."""
    runner = Runner(collective, opts)
    _info(runner.rank)
    item = runner.dtype.itemsize
    redop = opts.op if collective in ("all_reduce", "reduce_scatter") else "none"
    root = opts.root if collective == "broadcast" else -1
    factor = bus_factor(collective, runner.ranks)
    lead = [
        "# nccl-tests CPU stand-in (nvcre): collectives on host memory through MPI over TCP; no GPU and no NCCL were used",
        f"# nThread 1 nGpus {opts.devices} minBytes {opts.min_bytes} maxBytes {opts.max_bytes} step: "
        + (f"{opts.step_factor}(factor)" if opts.step_factor > 1 else f"{opts.step_bytes}(bytes)")
        + f" warmup iters: {opts.warmup} iters: {opts.iters} agg iters: {opts.agg} validation: {int(opts.check)} graph: 0",
    ]
    devices = _devices(runner)
    if runner.rank == 0:
        _say(lead + devices + header_lines())
    wrong_total, busbws = 0, []
    for _ in range(opts.cycles):
        for size in sizes(opts):
            count = element_count(collective, size, item, runner.ranks)
            line = row_prefix(count * item, count, opts.dtype, redop, root)
            for in_place in (False, True):
                seconds = runner.timed(count, in_place)
                wrong = runner.wrong(count, in_place) if opts.check else None
                algbw = count * item / seconds / 1e9 if seconds > 0 else 0.0
                busbws.append(algbw * factor)
                wrong_total += wrong or 0
                line += format_half(seconds * 1e6, algbw, algbw * factor, wrong)
            if runner.rank == 0:
                _say([line])
    if runner.rank == 0:
        _say(trailer_lines(wrong_total, busbws))
    return 1 if wrong_total else 0


def main(argv: list[str]) -> int:
    prog = os.path.basename(argv[0])
    try:
        collective = collective_of(argv[0])
        opts = parse_args(argv[1:])
        launch = local_launch(argv[0], argv[1:], opts, dict(os.environ))
        if launch is not None:
            sys.stdout.flush()
            os.execve(launch[0], launch, {**os.environ, DEVICES_ENV: str(opts.devices)})  # noqa: S606 - a fixed argv, no shell
        return benchmark(collective, opts)
    except UsageError as exc:
        print(f"{prog}: {exc}\n{USAGE.format(prog=prog)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
