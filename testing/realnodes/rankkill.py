"""The ``killed-rank`` faults of the real-node environment: a watcher that sends SIGKILL to the
workload ranks it sees start in one of a node's pods.

``killed-rank`` kills every one, not just the first, for as long as the fault is on: the
workloads' launchers are retried (``restartPolicy: OnFailure``, the catalog's ``backoffLimit``),
and a rank that dies on the node each time it starts is the fault a certification must catch,
as the simulated cluster's ``nccl-crash`` is. ``killed-rank-once`` kills only the ranks of the
first attempt it sees (those found by the first look that finds any; one dead rank ends the
attempt) and then stops watching: a transient fault the kubelet's in-place retry survives, so
the run passes, and the report says which attempt failed.

A rank is a process of the nccl-tests CPU stand-in (any ``*_perf`` or ``*_perf_mpi`` name, run by
``mpirun`` through the worker's sshd and ``orted``) or a training worker (``pretrain_gpt.py``,
started by ``torchrun``). The launchers themselves (``mpirun``, ``orted``, ``torchrun``) are left
alone: what dies is one rank in the middle of its collective, as when a GPU process is killed on
real hardware. The watcher finds the node's pod processes through the kubelet's ``cgroupRoot``
(one cgroup hierarchy is enough: the kubelet makes the same tree in each) and polls every few
hundredths of a second, which the stand-ins' start-up (MPI or process-group set-up, well over a
tenth of a second) always outlasts.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import cgroups

#: scripts whose processes are ranks (the interpreter's first non-option argument, or the program)
RANK_SCRIPTS = ("pretrain_gpt.py",)
RANK_SUFFIXES = ("_perf", "_perf_mpi")
POLL_SECONDS = 0.02
#: the longest a cmdline read may be (a rank's arguments are far shorter)
_CMDLINE_LIMIT = 16 << 10


def rank_name(argv: list[str]) -> str | None:
    """The rank program ``argv`` runs (``all_reduce_perf``, ``pretrain_gpt.py``), or None when it
    runs none (a launcher, a shell, sshd...)."""
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program.startswith("python"):
        scripts = [arg for arg in argv[1:] if not arg.startswith("-")]
        if not scripts:
            return None
        program = os.path.basename(scripts[0])
    if program in RANK_SCRIPTS or program.endswith(RANK_SUFFIXES):
        return program
    return None


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(_CMDLINE_LIMIT)
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


@dataclass(frozen=True)
class Killed:
    """A rank the watcher struck: its process id and what it ran."""

    pid: int
    program: str


def send_sigkill(pid: int, program: str) -> bool:
    """The ``killed-rank`` blow: SIGKILL to the rank; False when it had already gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


#: what the watcher does to each rank it finds (pid, program); True when it struck
RankAction = Callable[[int, str], bool]


class RankKiller:
    """Watches ``pods_cgroup`` (relative to the cgroup mounts) and strikes each rank there until
    stopped; with ``once``, only the ranks of the first look that finds any, then it stops.

    The blow is ``act``: SIGKILL by default, or another way of ending a rank such as the
    memory squeeze of :mod:`.oomkill`, after which the kernel's OOM killer does the killing."""

    def __init__(self, pods_cgroup: str, *, once: bool = False, act: RankAction = send_sigkill) -> None:
        self._directory = _one_hierarchy(pods_cgroup)
        self.once = once
        self._act = act
        self._stop = threading.Event()
        #: the ranks killed so far, in order (appended by the watcher thread only)
        self.killed: list[Killed] = []
        self._thread = threading.Thread(target=self._watch, name=f"killed-rank {pods_cgroup}", daemon=True)

    def start(self) -> RankKiller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        done: set[int] = set()
        while not self._stop.is_set():
            for pid in sorted(cgroups.pids_under(self._directory) - done):
                program = rank_name(_argv(pid))
                if program is None:
                    continue
                done.add(pid)
                if self._act(pid, program):
                    self.killed.append(Killed(pid, program))
            if self.once and self.killed:
                return  # the first attempt is dead; its retry runs untouched
            self._stop.wait(POLL_SECONDS)


def _one_hierarchy(relative: str) -> Path:
    """The node's pod cgroup in one hierarchy (the kubelet and runc mirror it in each): the pids or
    memory controller's where mounted, which every container process joins, else the first."""
    mounts = cgroups.hierarchies()
    mount = cgroups.controller_mount("pids", mounts) or cgroups.controller_mount("memory", mounts) or mounts[0]
    return mount / relative.strip("/")
