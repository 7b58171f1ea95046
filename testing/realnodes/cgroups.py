"""The environment's cgroup tree: made in every mounted hierarchy (cgroup v1 controllers and the
cgroup2 tree) under one top directory, and at the end emptied (every process in it killed) and
removed bottom-up, so the host's hierarchies are left as they were.

Each node's runtime (its namespace holder, containerd, the shims, the kubelet and its device
plugin) runs in ``<top>/<node>.runtime``; the kubelet's ``cgroupRoot`` is ``<top>/<node>``, where
it makes the pods' cgroups. Killing everything under ``<top>`` therefore stops every process the
node started, containers included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from ..errors import ControlPlaneError

CGROUP_ROOT = Path("/sys/fs/cgroup")
_CPUSET_FILES = ("cpuset.cpus", "cpuset.mems")


class CgroupError(ControlPlaneError):
    """The cgroup tree could not be made or removed."""


def hierarchies() -> list[Path]:
    """Mount points of the cgroup hierarchies under /sys/fs/cgroup (v1 controllers and cgroup2)."""
    found: list[Path] = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            dash = fields.index("-")
            fstype, mount_point = fields[dash + 1], Path(fields[4])
            if fstype in ("cgroup", "cgroup2") and (mount_point == CGROUP_ROOT or CGROUP_ROOT in mount_point.parents):
                found.append(mount_point)
    return sorted(set(found))


def controller_mount(controller: str, mounts: list[Path] | None = None) -> Path | None:
    """The cgroup v1 hierarchy ``controller`` (``memory``, ``pids``...) is mounted at, or None."""
    for mount in hierarchies() if mounts is None else mounts:
        if controller in mount.name.split(","):
            return mount
    return None


def is_v1() -> bool:
    """Whether the kubelet will see cgroup v1 (controllers mounted one per hierarchy)."""
    return any(h != CGROUP_ROOT and h.name != "unified" for h in hierarchies())


def make(relative: str) -> list[Path]:
    """Create ``relative`` (e.g. ``nvcre-ab12/node-0``) in every hierarchy; return its directories.

    cpuset directories get their parent's CPUs and memory nodes, which v1 requires before a task
    may join."""
    parts = [p for p in relative.strip("/").split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise CgroupError(f"bad cgroup path {relative!r}")
    made = []
    for hierarchy in hierarchies():
        current = hierarchy
        for part in parts:
            parent, current = current, current / part
            if not current.is_dir():
                current.mkdir()
                for name in _CPUSET_FILES:
                    source = parent / name
                    if source.is_file() and (current / name).is_file() and not (current / name).read_text().strip():
                        (current / name).write_text(source.read_text().strip() or "\n")
        made.append(current)
    return made


def procs_files(relative: str) -> list[Path]:
    """``cgroup.procs`` of ``relative`` in every hierarchy (to join it)."""
    return [h / relative.strip("/") / "cgroup.procs" for h in hierarchies()]


def _pids(directory: Path) -> set[int]:
    pids: set[int] = set()
    for procs in directory.rglob("cgroup.procs"):
        try:
            pids.update(int(p) for p in procs.read_text().split())
        except (OSError, ValueError):
            continue
    return pids


def pids_under(directory: Path) -> set[int]:
    """Every process in the cgroup ``directory`` of one hierarchy, at any depth (none if it is gone)."""
    return _pids(directory) if directory.is_dir() else set()


def pids(top: str) -> set[int]:
    """Every process in ``top`` (any hierarchy, any depth)."""
    found: set[int] = set()
    for hierarchy in hierarchies():
        found |= pids_under(hierarchy / top.strip("/"))
    return found


def kill_all(top: str, timeout: float = 20.0) -> None:
    """SIGKILL every process in ``top`` until none is left (new ones may appear while it runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = pids(top) - {os.getpid()}
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    raise CgroupError(f"processes still in cgroup {top} after {timeout:.0f}s: {sorted(pids(top))}")


def remove(top: str, timeout: float = 20.0) -> list[str]:
    """Kill every process under ``top`` and remove its directories bottom-up in every hierarchy.

    Returns the directories that could not be removed (empty when all went)."""
    kill_all(top, timeout)
    deadline = time.monotonic() + timeout
    left: list[str] = []
    while True:
        left = []
        for hierarchy in hierarchies():
            directory = hierarchy / top.strip("/")
            if not directory.is_dir():
                continue
            for sub in sorted((d for d in directory.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
                try:
                    sub.rmdir()
                except OSError:
                    left.append(str(sub))
            try:
                directory.rmdir()
            except OSError:
                left.append(str(directory))
        if not left or time.monotonic() > deadline:
            return left
        kill_all(top, max(1.0, deadline - time.monotonic()))
        time.sleep(0.2)
