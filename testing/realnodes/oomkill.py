"""The ``oom-kill`` fault of the real-node environment: a container in which a workload rank starts
on the node has its memory capped just above what it holds at that moment.

The rank then grows (its interpreter's imports, MPI's set-up, the collective's buffers, a
training worker's model) past the cap, and the kernel's OOM killer ends the largest process in
the container, which is the rank: a job that outgrows its pod's memory, with the real kernel
path and the real aftermath (the cgroup's ``oom_kill`` count, the kernel's log); the launcher
sees one of its ranks die on signal 9.

The rendered pods set no memory limit, and a cgroup v1 limit cannot be set below what the cgroup
holds in memory that cannot be reclaimed (the write fails with ``EBUSY``), so the cap is put on
when a rank is first seen, at its own resident size plus a margin its start-up always outgrows.
A cap is only ever lowered while the fault is on; ``none`` puts every cap this fault set back to
the limit the container had before (containers that have ended are skipped).
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from . import cgroups

#: room left above a container's resident memory when a rank is first seen there; the stand-ins'
#: ranks take several times this while they start (an interpreter with NumPy and MPI)
MARGIN_BYTES = 8 << 20
_LIMIT = "memory.limit_in_bytes"
#: the longest /proc/PID/cgroup or memory.stat this reads (both are a few hundred bytes)
_READ_LIMIT = 64 << 10


def memory_cgroup(pid: int) -> Path | None:
    """The directory of ``pid``'s memory cgroup (cgroup v1), or None when it has none or is gone."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read(_READ_LIMIT).splitlines()
    except OSError:
        return None
    mounts = [m for m in cgroups.hierarchies() if "memory" in m.name.split(",")]
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(",") and mounts:
            return mounts[0] / path.strip("/")
    return None


def resident_bytes(directory: Path) -> int:
    """The anonymous memory the cgroup holds, its children included (``total_rss``), from
    ``memory.stat``; 0 when it cannot be read."""
    try:
        with open(directory / "memory.stat", encoding="utf-8") as fh:
            text = fh.read(_READ_LIMIT)
    except OSError:
        return 0
    fields = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    value = fields.get("total_rss", fields.get("rss", "0")).strip()
    return int(value) if value.isdigit() else 0


def _read_limit(directory: Path) -> int | None:
    try:
        return int((directory / _LIMIT).read_text().strip())
    except (OSError, ValueError):
        return None


class MemorySqueeze:
    """The fault's blow (a :data:`~.rankkill.RankAction`): cap the memory of the rank's container.

    ``caps`` holds what each container was capped to; ``undo`` restores the limits it replaced."""

    def __init__(self, margin: int = MARGIN_BYTES) -> None:
        self.margin = margin
        self._lock = threading.Lock()
        self._originals: dict[Path, int] = {}
        self.caps: dict[Path, int] = {}
        #: the highest ``oom_kill`` count read from each capped container (kept once it is gone)
        self._kills: dict[Path, int] = {}

    def __call__(self, pid: int, program: str) -> bool:
        directory = memory_cgroup(pid)
        limit = None if directory is None else _read_limit(directory)
        if directory is None or limit is None:
            return False
        cap = resident_bytes(directory) + self.margin
        if cap >= limit:
            return directory in self.caps  # capped already, by this fault
        with self._lock:
            self._originals.setdefault(directory, limit)
        try:
            (directory / _LIMIT).write_text(str(cap))
        except OSError:
            return False  # more is held than can be given back (EBUSY), or the container ended
        self.caps[directory] = cap
        return True

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer has ended in the capped containers so far,
        from their ``memory.oom_control``; a container that has since gone keeps the count last
        read from it, so call this while the workload runs to see the kills of short-lived ones."""
        for directory in list(self.caps):
            try:
                text = (directory / "memory.oom_control").read_text()
            except OSError:
                continue
            fields = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
            count = fields.get("oom_kill", "0").strip()
            if count.isdigit():
                self._kills[directory] = max(self._kills.get(directory, 0), int(count))
        return sum(self._kills.values())

    def undo(self) -> list[Path]:
        """Put back the limits this fault replaced; returns the containers it restored."""
        restored = []
        with self._lock:
            originals, self._originals = self._originals, {}
        for directory, limit in originals.items():
            with contextlib.suppress(OSError):
                (directory / _LIMIT).write_text(str(limit))
                restored.append(directory)
        return restored
