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


def _read(path: str | Path) -> str | None:
    """A small kernel file, read up to ``_READ_LIMIT``; None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(_READ_LIMIT)
    except OSError:
        return None


def _counters(path: Path) -> dict[str, int]:
    """The ``name value`` lines of a memory cgroup file (``memory.stat``, ``memory.oom_control``)."""
    found: dict[str, int] = {}
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found


def memory_cgroup(pid: int, mount: Path | None = None) -> Path | None:
    """The directory of ``pid``'s memory cgroup (cgroup v1), or None when it has none or is gone.
    ``mount`` is the memory hierarchy's mount point, looked up when not given."""
    text = _read(f"/proc/{pid}/cgroup")
    mount = mount or cgroups.controller_mount("memory")
    if text is None or mount is None:
        return None
    for line in text.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            return mount / path.strip("/")
    return None


def resident_bytes(directory: Path) -> int:
    """The anonymous memory the cgroup holds, its children included (``total_rss``), from
    ``memory.stat``; 0 when it cannot be read."""
    counters = _counters(directory / "memory.stat")
    return counters.get("total_rss", counters.get("rss", 0))


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
        self._mount = cgroups.controller_mount("memory")
        self._lock = threading.Lock()
        self._originals: dict[Path, int] = {}
        self.caps: dict[Path, int] = {}
        #: the highest ``oom_kill`` count read from each capped container (kept once it is gone)
        self._kills: dict[Path, int] = {}

    def __call__(self, pid: int, program: str) -> bool:
        directory = memory_cgroup(pid, self._mount) if self._mount is not None else None
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
            count = _counters(directory / "memory.oom_control").get("oom_kill")
            if count is not None:
                self._kills[directory] = max(self._kills.get(directory, 0), count)
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
