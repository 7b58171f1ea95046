"""What ``/proc`` says about a process the benchmarks started: a memory field, its CPU time.

Shared by the benchmark scripts (each runs with this folder first on ``sys.path``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds", "proc_status_kib"]


def proc_status_kib(pid: int, field_name: str) -> int | None:
    """A ``/proc/<pid>/status`` memory field (``VmHWM``, ``VmRSS``) in KiB, None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU a process has used (``/proc/<pid>/stat``), None when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
