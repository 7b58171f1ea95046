#!/usr/bin/env python3
"""A CPU stand-in for ``torchrun``: starts the local worker processes of one node of a job.

It takes torchrun's static-rendezvous options (``--nnodes``, ``--nproc-per-node``,
``--node-rank``, ``--master-addr``, ``--master-port``, ``--max-restarts 0``), each also read from
the ``PET_<NAME>`` environment variable as torchrun reads it (the Kubeflow Trainer's torch policy
sets ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``, ``PET_MASTER_ADDR`` and
``PET_MASTER_PORT``), then runs ``python3 SCRIPT ARGS`` (``python3 -m MODULE ARGS`` with
``-m``) once per local rank, with the variables a torch worker reads: ``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``. No PyTorch is involved: the script does its
own rendezvous at the master address. When a worker fails, the others are stopped and the
launcher exits 1 naming the failed rank and its exit code; SIGTERM and SIGINT are passed on.
Anything else is refused with exit 2 and a usage line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

USAGE = (
    "usage: torchrun [--nnodes N] [--nproc-per-node N] [--node-rank R] [--master-addr HOST] "
    "[--master-port PORT] [--max-restarts 0] [-m] SCRIPT|MODULE [ARGS...]  (CPU stand-in, static rendezvous only)"
)
OPTIONS = ("nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port", "max_restarts", "rdzv_backend")
DEFAULTS = {
    "nnodes": "1",
    "nproc_per_node": "1",
    "node_rank": "0",
    "master_addr": "127.0.0.1",
    "master_port": "29500",
    "max_restarts": "0",
    "rdzv_backend": "static",
}
STOP_GRACE = 10.0


class UsageError(Exception):
    """A command line or environment the stand-in cannot run."""


def _option_name(flag: str) -> str | None:
    name = flag[2:].replace("-", "_") if flag.startswith("--") else ""
    return name if name in OPTIONS else None


def parse(argv: list[str], environ: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(options, the script and its arguments); options fall back to ``PET_<NAME>``, then defaults."""
    given: dict[str, str] = {}
    rest = list(argv)
    module = False
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("-m", "--module"):
            module = True
            continue
        value: str | None = None
        if "=" in flag:
            flag, value = flag.split("=", 1)
        name = _option_name(flag)
        if name is None:
            raise UsageError(f"unsupported option {flag!r}")
        if value is None:
            if not rest:
                raise UsageError(f"{flag} needs a value")
            value = rest.pop(0)
        given[name] = value
    if not rest:
        raise UsageError("no training script given")
    options = {name: given.get(name, environ.get(f"PET_{name.upper()}", DEFAULTS[name])) for name in OPTIONS}
    return options, ["-m", *rest] if module else rest


def _count(options: dict[str, str], name: str, low: int) -> int:
    text = options[name]
    if not text.isdigit() or int(text) < low:
        raise UsageError(f"--{name.replace('_', '-')} must be a whole number of at least {low}, not {text!r}")
    return int(text)


def worker_environments(options: dict[str, str], environ: dict[str, str]) -> list[dict[str, str]]:
    """The environment of each local worker, in local-rank order."""
    nnodes = _count(options, "nnodes", 1)
    nproc = _count(options, "nproc_per_node", 1)
    node_rank = _count(options, "node_rank", 0)
    _count(options, "master_port", 1)
    if node_rank >= nnodes:
        raise UsageError(f"--node-rank {node_rank} is outside --nnodes {nnodes}")
    if options["max_restarts"] != "0":
        raise UsageError("only --max-restarts 0 is supported (a failed worker fails the launch)")
    if options["rdzv_backend"] != "static":
        raise UsageError("only the static rendezvous (--master-addr/--master-port) is supported")
    shared = {
        **environ,
        "WORLD_SIZE": str(nnodes * nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": str(node_rank),
        "GROUP_WORLD_SIZE": str(nnodes),
        "MASTER_ADDR": options["master_addr"],
        "MASTER_PORT": options["master_port"],
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "OMP_NUM_THREADS": environ.get("OMP_NUM_THREADS", "1"),
        "PYTHONUNBUFFERED": "1",
    }
    return [{**shared, "RANK": str(node_rank * nproc + local), "LOCAL_RANK": str(local)} for local in range(nproc)]


def _stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    deadline = time.monotonic() + STOP_GRACE
    for worker in workers:
        try:
            worker.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def supervise(workers: list[subprocess.Popen[bytes]], first_rank: int) -> int:
    """Wait for every worker; the first failure stops the rest. The launcher's exit status.

    Every worker seen failed in the poll that found the first failure is reported, not just the
    lowest local rank: a killed worker's peer fails within the same poll, and naming only the peer
    would hide the signal that started it (torchrun's own summary lists every failure too)."""
    while True:
        codes = [worker.poll() for worker in workers]
        failed = [(local, code) for local, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            _stop(workers)
            for local, code in failed:
                print(
                    f"torchrun: worker rank {first_rank + local} (local rank {local}) failed with exit code {code}",
                    file=sys.stderr,
                    flush=True,
                )
            return 1
        if all(code == 0 for code in codes):
            return 0
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    environ = dict(os.environ)
    try:
        options, command = parse(argv, environ)
        environments = worker_environments(options, environ)
    except UsageError as exc:
        print(f"torchrun: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    workers: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        for environment in environments:
            workers.append(subprocess.Popen([sys.executable, *command], env=environment))
    except OSError as exc:
        _stop(workers)
        print(f"torchrun: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 1
    return supervise(workers, int(environments[0]["RANK"]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
