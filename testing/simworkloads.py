"""Recognise what a pod of a TrainJob runs, from its containers' command and args.

Pure functions over the pod dict as the API server returns it. The result tells the
workload player which simulated program to play: an MPI nccl-tests launcher, an MPI
worker that only serves SSH, a single-node nccl-tests loopback, Megatron training
(``train.sh``), a DCGM diagnostic, or anything else (which just exits 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .simlogs import NcclRun

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
MPI_SSH_VOLUME = "mpi-ssh-auth"

KINDS = ("nccl-mpi", "mpi-worker", "nccl-loopback", "training", "dcgm", "generic")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)(?:i?B?)?$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


class WorkloadError(ValueError):
    """The pod's command line cannot be understood (for example a bad nccl-tests size)."""


@dataclass(frozen=True)
class Workload:
    """What one pod runs."""

    kind: str  # one of KINDS
    argv: tuple[str, ...]
    nccl: NcclRun | None = None
    dcgm_level: int = 4
    dcgm_json: bool = False


def parse_size(text: str) -> int:
    """An nccl-tests size argument (``8``, ``16G``, ``512M``) in bytes."""
    match = _SIZE.match(text.strip())
    if not match:
        raise WorkloadError(f"not an nccl-tests size: {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def container_argv(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """command + args of the pod's first (main) container, split on shell whitespace."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return ()
    main = containers[0]
    words: list[str] = []
    for part in [*(main.get("command") or []), *(main.get("args") or [])]:
        words.extend(str(part).split())
    return tuple(words)


def _nccl_binary(argv: Sequence[str]) -> int | None:
    for index, word in enumerate(argv):
        name = word.rsplit("/", 1)[-1]
        if re.fullmatch(r"[a-z_]+_perf(_mpi)?", name):
            return index
    return None


def parse_nccl(argv: Sequence[str], binary_index: int) -> NcclRun:
    """The nccl-tests options after the binary (``-b -e -f -i -n -w -g -d -o -r``)."""
    binary = argv[binary_index].rsplit("/", 1)[-1]
    options: dict[str, str] = {}
    rest = list(argv[binary_index + 1 :])
    long_names = {"--minbytes": "-b", "--maxbytes": "-e", "--stepfactor": "-f", "--stepbytes": "-i",
                  "--iters": "-n", "--warmup_iters": "-w", "--ngpus": "-g", "--datatype": "-d",
                  "--op": "-o", "--root": "-r", "--agg_iters": "-m"}  # fmt: skip
    i = 0
    while i < len(rest):
        word = rest[i]
        key = long_names.get(word.split("=", 1)[0], word)
        if "=" in word and word.startswith("--"):
            options[key] = word.split("=", 1)[1]
            i += 1
            continue
        if key.startswith("-") and len(key) == 2 and i + 1 < len(rest):
            options[key] = rest[i + 1]
            i += 2
            continue
        i += 1
    try:
        return NcclRun(
            binary=binary,
            min_bytes=parse_size(options.get("-b", "8")),
            max_bytes=parse_size(options.get("-e", "128M")),
            step_factor=int(options.get("-f", "2")),
            step_bytes=parse_size(options.get("-i", "0")) if "-i" in options else 0,
            iters=int(options.get("-n", "20")),
            warmup=int(options.get("-w", "1")),
            agg_iters=int(options.get("-m", "1")),
            gpus_per_process=int(options.get("-g", "1")),
            datatype=options.get("-d", "float"),
            op=options.get("-o", "sum"),
            root=int(options.get("-r", "0")),
        )
    except ValueError as exc:
        raise WorkloadError(f"cannot read the nccl-tests options of {binary}: {exc}") from exc


def is_mpi(pod: Mapping[str, Any]) -> bool:
    """Whether the pod belongs to an MPI runtime (the Trainer mounts the SSH auth volume)."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return any(v.get("name") == MPI_SSH_VOLUME for v in volumes)


def replicated_job(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(REPLICATED_JOB_LABEL, ""))


def classify(pod: Mapping[str, Any]) -> Workload:
    """What ``pod`` runs (see the module docstring)."""
    argv = container_argv(pod)
    mpi = is_mpi(pod)
    nccl_at = _nccl_binary(argv)
    if mpi and replicated_job(pod) != "launcher":
        return Workload("mpi-worker", argv)
    if nccl_at is not None:
        run = parse_nccl(argv, nccl_at)
        # The *_mpi binary also runs alone (one process, all local GPUs): only an MPI
        # runtime or an mpirun in front of it makes it a multi-node run.
        multi = mpi or any(w.rsplit("/", 1)[-1] in ("mpirun", "mpiexec") for w in argv[:nccl_at])
        return Workload("nccl-mpi" if multi else "nccl-loopback", argv, nccl=run)
    names = [w.rsplit("/", 1)[-1] for w in argv]
    if "dcgmi" in names and "diag" in argv:
        level = 1
        for flag in ("--run", "-r"):
            if flag in argv and argv.index(flag) + 1 < len(argv):
                value = argv[argv.index(flag) + 1]
                level = int(value) if value.isdigit() else 4
        return Workload("dcgm", argv, dcgm_level=level, dcgm_json="--json" in argv or "-j" in argv)
    if any(n in ("train.sh", "pretrain_gpt.py", "pretrain_mamba.py") or n.startswith("torchrun") for n in names):
        return Workload("training", argv)
    return Workload("generic", argv)


def group_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, JobSet or TrainJob name) shared by every pod of one workload."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = labels.get(JOBSET_NAME_LABEL) or labels.get(TRAINJOB_NAME_LABEL) or meta.get("name", "")
    return str(meta.get("namespace", "")), str(name)


def completion_index(pod: Mapping[str, Any]) -> int:
    meta = pod.get("metadata") or {}
    for source in (meta.get("labels") or {}, meta.get("annotations") or {}):
        value = source.get(COMPLETION_INDEX)
        if value is not None and str(value).isdigit():
            return int(value)
    return 0
